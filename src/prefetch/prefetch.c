/*
 * prefetch.c — the prefetcher (see prefetch.h for the contract).
 *
 * Each job keeps its wanted keys as an array of owned strings (its list)
 * and a count of those already handed to the cache (issued: the list's
 * head, kept until read so a prefetch is not started twice). A job's
 * rate and mean object size are its per-job stats' (stats.h), read under
 * the lock (the stats' lock is taken after it, never before).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch/prefetch.h"
#include "prefetch/prefetch_jobs.h"
#include "stats/stats.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_htab.h"
#include "util/util_time.h"

typedef struct job_s {
	char      *id;
	char      *bucket;
	bool       anon;
	char     **keys;       /* the list, owned */
	size_t     nkeys;
	size_t     issued;     /* keys[0..issued) were handed to the cache */
	size_t     due;        /* keys[0..due) are due now (want's due) */
	uint64_t   last_ns;    /* last want/read */
	uint64_t   want_ns;    /* last want */
} job_t;

struct bc_prefetch_s {
	bc_prefetch_opts_t o;
	pthread_mutex_t    mu;
	job_t              jobs[BC_PREFETCH_MAX_JOBS];
	size_t             njobs;
	_Atomic size_t     live;   /* njobs, read without mu */
	_Atomic uint64_t   budget; /* o.budget_bytes, as scale/ moves it */
	bc_loop_timer_t   *timer;
};

static void
job_clear_keys(job_t *j)
{
	for (size_t i = 0; i < j->nkeys; i++)
		free(j->keys[i]);
	free(j->keys);
	j->keys = NULL;
	j->nkeys = j->issued = j->due = 0;
}

static void
job_fini(job_t *j)
{
	job_clear_keys(j);
	free(j->id);
	free(j->bucket);
	memset(j, 0, sizeof(*j));
}

/* p->mu held: job id, made (dropping the least recently active job when
 * full) when make. NULL when absent (or out of memory). */
static job_t *
job_find(bc_prefetch_t *p, const char *id, bool make, uint64_t now)
{
	size_t oldest = 0;
	job_t *j;

	for (size_t i = 0; i < p->njobs; i++) {
		if (strcmp(p->jobs[i].id, id) == 0)
			return &p->jobs[i];
		if (p->jobs[i].last_ns < p->jobs[oldest].last_ns)
			oldest = i;
	}
	if (!make)
		return NULL;
	if (p->njobs < BC_PREFETCH_MAX_JOBS) {
		j = &p->jobs[p->njobs++];
		atomic_store(&p->live, p->njobs);
	} else {
		j = &p->jobs[oldest];
		job_fini(j);
	}
	j->id = strdup(id);
	if (j->id == NULL) {
		*j = p->jobs[--p->njobs];
		memset(&p->jobs[p->njobs], 0, sizeof(job_t));
		atomic_store(&p->live, p->njobs);
		return NULL;
	}
	j->last_ns = now;
	return j;
}

/* p->mu held: j's window in keys (see prefetch.h). */
static size_t
job_window(const bc_prefetch_t *p, const job_t *j)
{
	uint64_t lat_us = bc_cache_fetch_us(p->o.cache);
	uint64_t v[BC_JSTAT__COUNT];
	double rate = 0, bytes, keys = 0;

	if (lat_us == 0)
		lat_us = p->o.latency_us;
	if (bc_stats_job_get(j->id, v, &rate) && v[BC_JSTAT_requests] > 0 &&
	    v[BC_JSTAT_bytes] > 0) {
		bytes = rate * (double)lat_us / 1e6 * 2.0;
		keys = bytes / ((double)v[BC_JSTAT_bytes] /
		    (double)v[BC_JSTAT_requests]);
	}
	if (keys < BC_PREFETCH_MIN_WINDOW)
		keys = BC_PREFETCH_MIN_WINDOW;
	if (keys > BC_PREFETCH_MAX_KEYS)
		keys = BC_PREFETCH_MAX_KEYS;
	return (size_t)keys;
}

/*
 * p->mu held: moves to the head of keys (n, soonest first) those that
 * j's list handed to the cache already (its issued head), keeping the
 * order within both parts, and returns how many they are: a new list is
 * not issued again. Out of memory: nothing moves, 0.
 */
static size_t
carry_issued(const job_t *j, char **keys, size_t n)
{
	size_t k = 0, m = 0;
	bc_htab_t set = { 0 };       /* the issued keys: nodes[i] is keys[i] */
	bc_hnode_t *nodes;
	char **rest;

	if (j->issued == 0 || n == 0)
		return 0;
	nodes = malloc(j->issued * sizeof(*nodes));
	rest = malloc(n * sizeof(*rest));
	if (nodes == NULL || rest == NULL ||
	    bc_htab_init(&set, 2 * j->issued, true) < 0) {
		free(nodes);
		free(rest);
		return 0;
	}
	for (size_t i = 0; i < j->issued; i++)
		bc_htab_insert(&set, &nodes[i], bc_hash(BC_HASH_INIT,
		    j->keys[i], strlen(j->keys[i])));
	for (size_t i = 0; i < n; i++) {
		uint64_t h = bc_hash(BC_HASH_INIT, keys[i], strlen(keys[i]));
		bc_hnode_t *x = bc_htab_first(&set, h);

		while (x != NULL && strcmp(j->keys[x - nodes], keys[i]) != 0)
			x = bc_htab_next(x);
		if (x != NULL)
			keys[k++] = keys[i];
		else
			rest[m++] = keys[i];
	}
	memcpy(keys + k, rest, m * sizeof(*rest));
	bc_htab_fini(&set);
	free(nodes);
	free(rest);
	return k;
}

bool
bc_prefetch_want_due(bc_prefetch_t *p, const char *job)
{
	uint64_t now = bc_mono_ns();
	bool due = true;
	job_t *j;

	pthread_mutex_lock(&p->mu);
	j = job_find(p, job, false, now);
	if (j != NULL && now - j->want_ns < BC_PREFETCH_TICK_MS * 1000000ull)
		due = false;
	pthread_mutex_unlock(&p->mu);
	return due;
}

void
bc_prefetch_want(bc_prefetch_t *p, const char *job, const char *bucket,
    const char *const *keys, size_t n, size_t due, bool anon)
{
	uint64_t now = bc_mono_ns();
	size_t issued;
	char **copy;
	job_t *j;

	if (n > BC_PREFETCH_MAX_KEYS)
		n = BC_PREFETCH_MAX_KEYS;
	copy = calloc(n > 0 ? n : 1, sizeof(*copy));
	if (copy == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(keys[i]);
		if (copy[i] == NULL) {
			n = i;
			break;
		}
	}
	pthread_mutex_lock(&p->mu);
	j = job_find(p, job, true, now);
	if (j != NULL && (j->bucket == NULL || strcmp(j->bucket, bucket))) {
		free(j->bucket);
		j->bucket = strdup(bucket);
	}
	if (j == NULL || j->bucket == NULL) {
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < n; i++)
			free(copy[i]);
		free(copy);
		return;
	}
	issued = carry_issued(j, copy, n);
	job_clear_keys(j);
	j->keys = copy;
	j->nkeys = n;
	j->issued = issued;
	j->due = due < n ? due : n;
	j->anon = anon;
	j->last_ns = j->want_ns = now;
	pthread_mutex_unlock(&p->mu);
}

void
bc_prefetch_read(bc_prefetch_t *p, const char *job, const char *bucket,
    const char *key)
{
	uint64_t now;
	job_t *j;

	if (atomic_load(&p->live) == 0)   /* no job wants anything */
		return;
	now = bc_mono_ns();
	pthread_mutex_lock(&p->mu);
	j = job_find(p, job, false, now);
	if (j != NULL) {
		j->last_ns = now;
		/* the key leaves the list (and those the job skipped
		 * before it, within the window already issued) */
		if (j->bucket != NULL && strcmp(j->bucket, bucket) == 0) {
			for (size_t i = 0; i < j->nkeys && i <= j->issued;
			    i++) {
				if (strcmp(j->keys[i], key) != 0)
					continue;
				for (size_t k = 0; k <= i; k++)
					free(j->keys[k]);
				memmove(j->keys, j->keys + i + 1,
				    (j->nkeys - i - 1) * sizeof(*j->keys));
				j->nkeys -= i + 1;
				j->due = j->due > i ? j->due - i - 1 : 0;
				j->issued = j->issued > i ? j->issued - i - 1 :
				    0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&p->mu);
}

size_t
bc_prefetch_window(bc_prefetch_t *p, const char *job)
{
	size_t w = 0;
	job_t *j;

	pthread_mutex_lock(&p->mu);
	j = job_find(p, job, false, 0);
	if (j != NULL)
		w = job_window(p, j);
	pthread_mutex_unlock(&p->mu);
	return w;
}

/* The budgets allow one more prefetch now. */
static bool
budget_left(const bc_prefetch_t *p)
{
	return bc_cache_fills_running(p->o.cache, BC_ORIGIN_PREFETCH) <
	    p->o.concurrency &&
	    bc_cache_fills_running(p->o.cache, BC_ORIGIN_DEMAND) <
	    BC_PREFETCH_DEMAND_YIELD &&
	    bc_stats_get(BC_STAT_prefetch_unread_bytes) <
	    atomic_load(&((bc_prefetch_t *)p)->budget);
}

void
bc_prefetch_set_budget(bc_prefetch_t *p, uint64_t bytes)
{
	if (p != NULL)
		atomic_store(&p->budget, bytes);
}

/* Takes key back into job ji's unissued keys when it is still the last
 * one issued (a read or a new list may have moved on meanwhile). */
static void
job_unissue(bc_prefetch_t *p, size_t ji, const char *key)
{
	job_t *j;

	pthread_mutex_lock(&p->mu);
	if (ji < p->njobs) {
		j = &p->jobs[ji];
		if (j->issued > 0 && strcmp(j->keys[j->issued - 1], key) == 0)
			j->issued--;
	}
	pthread_mutex_unlock(&p->mu);
}

unsigned
bc_prefetch_tick(bc_prefetch_t *p)
{
	unsigned started = 0;

	for (size_t ji = 0; budget_left(p);) {
		char *bucket = NULL, *key = NULL;
		bc_stats_job_id_t sj = BC_STATS_JOB_NONE;
		bool anon = false;
		job_t *j;
		int rv;

		/* the next key of job ji within its window, copied out */
		pthread_mutex_lock(&p->mu);
		if (ji >= p->njobs) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		j = &p->jobs[ji];
		if (j->issued < j->nkeys &&
		    j->issued < j->due + job_window(p, j)) {
			bucket = strdup(j->bucket);
			key = strdup(j->keys[j->issued]);
			anon = j->anon;
			sj = bc_stats_job_id(j->id);
			j->issued++;
		} else {
			ji++;   /* this job's window is full: the next job */
		}
		pthread_mutex_unlock(&p->mu);
		if (key != NULL && bucket != NULL) {
			rv = bc_cache_prefetch_key(p->o.cache, bucket, key, 0,
			    UINT32_MAX, anon, sj);
			if (rv > 0)
				started++;
			if (rv == BC_ENOSPC) {
				/* declined or no room now: the key is asked
				 * again next tick, after it nothing this tick */
				job_unissue(p, ji, key);
				ji++;
			}
		}
		free(bucket);
		free(key);
	}
	return started;
}

static void
on_tick(bc_loop_t *l, void *arg)
{
	(void)l;
	(void)bc_prefetch_tick(arg);
}

bc_prefetch_t *
bc_prefetch_new(const bc_prefetch_opts_t *o)
{
	bc_prefetch_t *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->o = *o;
	atomic_init(&p->budget, o->budget_bytes);
	if (p->o.latency_us == 0)
		p->o.latency_us = 20000;
	pthread_mutex_init(&p->mu, NULL);
	if (o->loop != NULL && o->concurrency > 0) {
		p->timer = bc_loop_timer_new(o->loop, BC_PREFETCH_TICK_MS,
		    on_tick, p);
		if (p->timer == NULL) {
			pthread_mutex_destroy(&p->mu);
			free(p);
			return NULL;
		}
	}
	return p;
}

void
bc_prefetch_free(bc_prefetch_t *p)
{
	if (p == NULL)
		return;
	bc_loop_timer_free(p->timer);
	for (size_t i = 0; i < p->njobs; i++)
		job_fini(&p->jobs[i]);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

size_t
bc_prefetch_feed_plan(bc_prefetch_t *p, bc_jobs_t *jobs, const char *job,
    const char *bucket, size_t min_window, bc_prefetch_keep_fn keep,
    void *keep_arg, bool anon)
{
	bc_job_key_t *keys = NULL;
	const char **names = NULL;
	char pbucket[256];
	size_t w, n = 0, k = 0;
	bc_job_t *j = bc_jobs_get(jobs, job);

	if (j == NULL)
		return 0;
	w = bc_prefetch_window(p, job);
	if (w < min_window)
		w = min_window;
	if (w < BC_PREFETCH_MIN_WINDOW)
		w = BC_PREFETCH_MIN_WINDOW;
	keys = malloc(BC_PREFETCH_FEED_MAX * sizeof(*keys));
	names = malloc(BC_PREFETCH_FEED_MAX * sizeof(*names));
	if (keys != NULL && names != NULL) {
		n = bc_jobs_window(j, w, BC_PREFETCH_FEED_MAX, keys, pbucket,
		    NULL);
		for (size_t i = 0; i < n; i++)
			if (keep == NULL || keep(keep_arg, pbucket, keys[i].key))
				names[k++] = keys[i].key;
		/* the plan's window is sized already: all of it is due */
		if (k > 0 && (bucket == NULL || strcmp(bucket, pbucket) == 0))
			bc_prefetch_want(p, job, pbucket, names, k, k, anon);
		else
			k = 0;
		bc_jobs_window_release(keys, n);
	}
	free(keys);
	free(names);
	bc_job_unref(j);
	return k;
}
