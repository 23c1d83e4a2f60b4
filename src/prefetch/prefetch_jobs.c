/*
 * prefetch_jobs.c — the jobs registry (prefetch_jobs.h).
 *
 * One mutex guards everything: the id hash, the array of all jobs (for
 * scans), each job's plans, cursor and counters, and job refcounts. A job
 * is freed when it is unlinked (deleted, evicted, registry freed) and no
 * bc_jobs_get reference remains. Each change of a job's plan position is
 * mirrored into its per-job stats' gauges (stats.h) under the lock, so
 * the mirrors land in the order of the changes (the stats' lock is taken
 * after this one, never before). The builders' charge (build_bytes) is
 * an atomic apart from the lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch/prefetch_jobs.h"
#include "s3/s3_hints.h"
#include "s3/s3_request.h"
#include "stats/stats.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_htab.h"
#include "util/util_list.h"
#include "util/util_time.h"

struct bc_job_s {
	bc_jobs_t  *jobs;
	bc_hnode_t  hnode;      /* in jobs->table, by id */
	size_t      idx;        /* in jobs->all while live */
	unsigned    refs;       /* bc_jobs_get references */
	bool        live;
	char        id[BC_S3_HINT_JOB_MAX + 1];
	char        bucket[BC_S3_MAX_BUCKET + 1];
	char        owner[BC_JOBS_OWNER_MAX + 1];   /* "": the operator */
	bc_plan_t  *plan[BC_JOBS_EPOCHS];
	uint32_t    epoch[BC_JOBS_EPOCHS];
	unsigned    n;
	/* Progress in plan[0]: cursor is one past the furthest position
	 * read; low the first position not read; done a bit per position
	 * read (NULL before the first read, or out of memory: then low
	 * follows cursor). A loader with several workers reads several
	 * stretches of the plan at once, so positions between low and
	 * cursor may still be due. */
	uint32_t    cursor;
	uint32_t    low;
	uint64_t   *done;
	/* cursor - low, its recent peak (decaying by 1/1024 a read): how far
	 * apart the workers read, kept across epochs */
	uint32_t    span;
	uint64_t    reads, out_of_order, out_of_plan;
	uint64_t    last_ns;
	size_t      bytes;
};

struct bc_jobs_s {
	pthread_mutex_t mu;
	bc_htab_t       table;         /* bc_job_t.hnode */
	bc_job_t      **all;
	size_t          count;
	size_t          max_jobs;
	size_t          max_bytes;
	size_t          share_jobs;    /* a keyed owner's bounds */
	size_t          share_bytes;
	size_t          bytes;
	_Atomic int64_t build_bytes;   /* held by plan builders */
	bc_policy_oracle_t oracle;   /* over this registry (bc_jobs_oracle) */
	/* count, readable without mu: a gateway with no planned job pays
	 * no lock per request (record, get, next uses) */
	_Atomic size_t  live;
};

static uint64_t oracle_next_use(void *arg, uint64_t key, uint64_t now);
static bool oracle_known(void *arg);

bc_jobs_t *
bc_jobs_new(size_t max_jobs, size_t max_bytes, size_t owners)
{
	bc_jobs_t *j = calloc(1, sizeof(*j));
	size_t size = 16;

	if (j == NULL)
		return NULL;
	j->max_jobs = max_jobs > 0 ? max_jobs : BC_JOBS_DEFAULT_MAX_JOBS;
	j->max_bytes = max_bytes > 0 ? max_bytes : BC_JOBS_DEFAULT_MAX_BYTES;
	if (owners == 0)
		owners = 1;
	j->share_jobs = j->max_jobs / owners > 0 ? j->max_jobs / owners : 1;
	j->share_bytes = j->max_bytes / owners;
	while (size < j->max_jobs * 2)
		size *= 2;
	j->all = calloc(j->max_jobs, sizeof(*j->all));
	if (bc_htab_init(&j->table, size, true) < 0 || j->all == NULL ||
	    pthread_mutex_init(&j->mu, NULL) != 0) {
		bc_htab_fini(&j->table);
		free(j->all);
		free(j);
		return NULL;
	}
	j->oracle.next_use = oracle_next_use;
	j->oracle.known = oracle_known;
	j->oracle.arg = j;
	return j;
}

static uint64_t
id_hash(const char *id)
{
	return bc_hash(BC_HASH_INIT, id, strlen(id));
}

static bc_job_t *
do_find(bc_jobs_t *jobs, const char *id)
{
	for (bc_hnode_t *n = bc_htab_first(&jobs->table, id_hash(id));
	    n != NULL; n = bc_htab_next(n)) {
		bc_job_t *j = BC_CONTAINER_OF(n, bc_job_t, hnode);

		if (strcmp(j->id, id) == 0)
			return j;
	}
	return NULL;
}

/* forgets the progress in plan[0] (a new current plan) */
static void
do_progress_reset(bc_job_t *job)
{
	free(job->done);
	job->done = NULL;
	job->cursor = job->low = 0;
}

/* whether position p of plan[0] was read */
static bool
is_done(const bc_job_t *job, uint32_t p)
{
	if (job->done == NULL)
		return p < job->low;
	return (job->done[p / 64] >> (p % 64)) & 1u;
}

/* position p of plan[0] was read: marks it, moves cursor and low */
static void
do_mark_read(bc_job_t *job, uint32_t p)
{
	uint32_t len = bc_plan_len(job->plan[0]);

	if (job->done == NULL && job->low < len) {
		job->done = calloc(((size_t)len + 63) / 64, sizeof(uint64_t));
		for (uint32_t q = 0; job->done != NULL && q < job->low; q++)
			job->done[q / 64] |= 1ull << (q % 64);
	}
	if (job->done != NULL)
		job->done[p / 64] |= 1ull << (p % 64);
	if (p >= job->cursor)
		job->cursor = p + 1;
	if (job->done == NULL) {
		job->low = job->cursor;
		return;
	}
	/* stragglers further behind than a read may skip are given up */
	if (job->cursor > BC_JOBS_LOOKAHEAD &&
	    job->low < job->cursor - BC_JOBS_LOOKAHEAD)
		job->low = job->cursor - BC_JOBS_LOOKAHEAD;
	while (job->low < len && is_done(job, job->low))
		job->low++;
	job->span -= job->span >> 10;
	if (job->span < job->cursor - job->low)
		job->span = job->cursor - job->low;
}

/* The first position of plan[0] at or after low, below limit, that holds
 * key (by name when key, else by hash h) and was not read, or
 * BC_PLAN_NONE. */
static uint32_t
find_unread(const bc_job_t *job, const char *key, size_t len, uint64_t h,
    uint64_t limit)
{
	uint32_t p = job->low;

	for (;;) {
		p = key != NULL ? bc_plan_find(job->plan[0], key, len, p) :
		    bc_plan_find_hash(job->plan[0], h, p);
		if (p == BC_PLAN_NONE || p >= limit)
			return BC_PLAN_NONE;
		if (!is_done(job, p))
			return p;
		p++;
	}
}

/*
 * How many reads of its stretch come before position p of plan[0] (not
 * read): p less the first unread position after the last read one below
 * it (not below low); for p >= cursor, p - cursor. Workers read
 * stretches at once, each from its own next position: that is when p is
 * due, roughly, in reads of one worker.
 */
static uint32_t
stretch_distance(const bc_job_t *job, uint32_t p)
{
	uint32_t w;
	uint64_t m;
	uint32_t q;

	if (p >= job->cursor)
		return p - job->cursor;
	if (job->done == NULL || p <= job->low)
		return p - job->low;
	w = p / 64;
	m = job->done[w] & ((1ull << (p % 64)) - 1);
	while (m == 0) {
		if ((uint64_t)w * 64 <= job->low)
			return p - job->low;
		m = job->done[--w];
	}
	q = w * 64 + 63 - (uint32_t)__builtin_clzll(m);
	return q < job->low ? p - job->low : p - q - 1;
}

/* drops the plan at index i of the job's plans */
static void
do_drop_plan(bc_job_t *job, unsigned i)
{
	size_t b = bc_plan_memory(job->plan[i]);

	BC_CHECK(i < job->n);
	job->bytes -= b;
	if (job->live)
		job->jobs->bytes -= b;
	bc_plan_unref(job->plan[i]);
	memmove(job->plan + i, job->plan + i + 1,
	    (job->n - i - 1) * sizeof(*job->plan));
	memmove(job->epoch + i, job->epoch + i + 1,
	    (job->n - i - 1) * sizeof(*job->epoch));
	job->n--;
	if (i == 0)
		do_progress_reset(job);
}

/* the job's epoch, cursor and plan length into its per-job stats (all 0
 * once it ended) */
static void
do_mirror(const bc_job_t *job)
{
	uint64_t v[BC_JSTAT__COUNT] = { 0 };

	if (job->live && job->n > 0) {
		v[BC_JSTAT_epoch] = job->epoch[0];
		v[BC_JSTAT_cursor] = job->cursor;
		v[BC_JSTAT_plan_keys] = bc_plan_len(job->plan[0]);
	}
	bc_stats_job_set(job->id, v);
}

static void
job_free(bc_job_t *job)
{
	for (unsigned i = 0; i < job->n; i++)
		bc_plan_unref(job->plan[i]);
	free(job->done);
	free(job);
}

static void
do_unlink(bc_jobs_t *jobs, bc_job_t *job)
{
	BC_CHECK(job->live && jobs->count > 0 && jobs->all[job->idx] == job);
	BC_CHECK(jobs->bytes >= job->bytes);
	bc_htab_remove(&jobs->table, &job->hnode);
	jobs->all[job->idx] = jobs->all[--jobs->count];
	jobs->all[job->idx]->idx = job->idx;
	atomic_store(&jobs->live, jobs->count);
	jobs->bytes -= job->bytes;
	job->live = false;
	do_mirror(job);
	if (job->refs == 0)
		job_free(job);
}

void
bc_jobs_free(bc_jobs_t *jobs)
{
	if (jobs == NULL)
		return;
	while (jobs->count > 0) {
		BC_CHECK(jobs->all[0]->refs == 0);
		do_unlink(jobs, jobs->all[0]);
	}
	pthread_mutex_destroy(&jobs->mu);
	bc_htab_fini(&jobs->table);
	free(jobs->all);
	free(jobs);
}

/* owner's jobs and the bytes of their plans */
static void
do_owner_use(const bc_jobs_t *jobs, const char *owner, size_t *count,
    size_t *bytes)
{
	*count = *bytes = 0;
	for (size_t i = 0; i < jobs->count; i++)
		if (strcmp(jobs->all[i]->owner, owner) == 0) {
			(*count)++;
			*bytes += jobs->all[i]->bytes;
		}
}

/* the job idle the longest, never keep; only owner's unless owner is the
 * operator (""); NULL when none */
static bc_job_t *
do_victim(const bc_jobs_t *jobs, const bc_job_t *keep, const char *owner)
{
	bc_job_t *victim = NULL;

	for (size_t i = 0; i < jobs->count; i++) {
		bc_job_t *j = jobs->all[i];

		if (j != keep && (owner[0] == '\0' ||
		    strcmp(j->owner, owner) == 0) && (victim == NULL ||
		    j->last_ns < victim->last_ns))
			victim = j;
	}
	return victim;
}

/* evicts jobs idle the longest, never keep, and for a keyed owner only
 * its own (prefetch_jobs.h "Owners"), until a new job fits (when
 * new_job) and need more bytes do, within the bounds and the owner's
 * share; false when they cannot */
static bool
do_make_room(bc_jobs_t *jobs, const bc_job_t *keep, const char *owner,
    bool new_job, size_t need)
{
	if (need > jobs->max_bytes ||
	    (owner[0] != '\0' && need > jobs->share_bytes))
		return false;   /* would not fit even alone: evict nothing */
	for (;;) {
		size_t count = 0, bytes = 0;
		bc_job_t *victim;

		if (owner[0] != '\0')
			do_owner_use(jobs, owner, &count, &bytes);
		if (!(new_job && jobs->count >= jobs->max_jobs) &&
		    jobs->bytes + need <= jobs->max_bytes &&
		    (owner[0] == '\0' || (!(new_job &&
		    count >= jobs->share_jobs) &&
		    bytes + need <= jobs->share_bytes)))
			return true;
		victim = do_victim(jobs, keep, owner);
		if (victim == NULL)
			return false;
		do_unlink(jobs, victim);
	}
}

/* moves to the next epoch while the current plan is read through */
static void
do_roll(bc_job_t *job)
{
	while (job->n > 1 && job->low >= bc_plan_len(job->plan[0]))
		do_drop_plan(job, 0);
}

int
bc_jobs_put_plan(bc_jobs_t *jobs, const char *id, const char *owner,
    const char *bucket, const uint32_t *epoch, bc_plan_t *plan,
    uint32_t *epoch_out)
{
	size_t pbytes, need;
	bc_job_t *job;
	uint32_t e;
	unsigned at;
	bool replace = false, rebucket;
	int rv = 0;

	if (owner == NULL)
		owner = "";
	if (!bc_s3_hint_job_ok(id, strlen(id)) || bucket[0] == '\0' ||
	    !bc_s3_bucket_name_ok(bucket) ||
	    strlen(owner) > BC_JOBS_OWNER_MAX) {
		bc_plan_unref(plan);
		return BC_EINVAL;
	}
	/* the planned policy names chunks by hash: index the plan by them
	 * (out of memory, the plan still serves cursors and the prefetcher) */
	(void)bc_plan_index_hashes(plan, bucket);
	pbytes = need = bc_plan_memory(plan);
	if (pbytes > jobs->max_bytes) {
		bc_plan_unref(plan);
		return BC_ENOSPC;
	}
	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	/* the operator may plan any job; a key only its own */
	if (job != NULL && owner[0] != '\0' &&
	    strcmp(job->owner, owner) != 0) {
		rv = BC_EACCES;
		goto out;
	}
	rebucket = job != NULL && strcmp(job->bucket, bucket) != 0;
	if (job != NULL && !rebucket && job->n > 0) {
		if (epoch != NULL)
			e = *epoch;
		else if (job->epoch[job->n - 1] == UINT32_MAX)
			rv = BC_EINVAL;
		else
			e = job->epoch[job->n - 1] + 1;
	} else {
		e = epoch != NULL ? *epoch : 0;
	}
	if (rv < 0)
		goto out;
	at = 0;
	if (job != NULL && !rebucket && job->n > 0) {
		if (e < job->epoch[0]) {
			rv = BC_EINVAL;
			goto out;
		}
		for (at = 0; at < job->n && job->epoch[at] < e; at++)
			;
		replace = at < job->n && job->epoch[at] == e;
		if (!replace && job->n == BC_JOBS_EPOCHS) {
			rv = BC_E2BIG;
			goto out;
		}
		if (replace)
			need = pbytes > bc_plan_memory(job->plan[at]) ? pbytes -
			    bc_plan_memory(job->plan[at]) : 0;
	} else if (rebucket) {
		need = pbytes > job->bytes ? pbytes - job->bytes : 0;
	}
	if (!do_make_room(jobs, job, job != NULL ? job->owner : owner,
	    job == NULL, need)) {
		rv = BC_ENOSPC;
		goto out;
	}
	if (job == NULL) {
		job = calloc(1, sizeof(*job));
		if (job == NULL) {
			rv = BC_ENOMEM;
			goto out;
		}
		job->jobs = jobs;
		job->live = true;
		strcpy(job->id, id);
		strcpy(job->bucket, bucket);
		strcpy(job->owner, owner);
		bc_htab_insert(&jobs->table, &job->hnode, id_hash(id));
		job->idx = jobs->count;
		jobs->all[jobs->count++] = job;
		atomic_store(&jobs->live, jobs->count);
	} else if (rebucket) {
		while (job->n > 0)
			do_drop_plan(job, job->n - 1);
		strcpy(job->bucket, bucket);
	}
	if (replace)
		do_drop_plan(job, at);
	memmove(job->plan + at + 1, job->plan + at,
	    (job->n - at) * sizeof(*job->plan));
	memmove(job->epoch + at + 1, job->epoch + at,
	    (job->n - at) * sizeof(*job->epoch));
	job->plan[at] = plan;
	job->epoch[at] = e;
	job->n++;
	plan = NULL;
	job->bytes += pbytes;
	jobs->bytes += pbytes;
	job->last_ns = bc_mono_ns();
	do_roll(job);
	do_mirror(job);
	if (epoch_out != NULL)
		*epoch_out = e;
out:
	pthread_mutex_unlock(&jobs->mu);
	bc_plan_unref(plan);
	return rv;
}

int
bc_jobs_delete(bc_jobs_t *jobs, const char *id, const char *owner)
{
	bc_job_t *job;
	int rv = BC_ENOENT;

	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL && owner != NULL && strcmp(job->owner, owner) != 0) {
		rv = BC_EACCES;
	} else if (job != NULL) {
		do_unlink(jobs, job);
		rv = 0;
	}
	pthread_mutex_unlock(&jobs->mu);
	return rv;
}

static void
do_record(bc_job_t *job, const char *bucket, const char *key,
    const uint32_t *epoch)
{
	size_t len = strlen(key);
	uint32_t p, q, b, cur_len;

	job->reads++;
	if (job->n == 0 || strcmp(job->bucket, bucket) != 0) {
		job->out_of_plan++;
		return;
	}
	if (epoch != NULL && *epoch > job->epoch[0]) {
		unsigned i;

		for (i = 1; i < job->n && job->epoch[i] != *epoch; i++)
			;
		if (i < job->n)
			for (unsigned d = i; d > 0; d--)
				do_drop_plan(job, 0);
	}
	cur_len = bc_plan_len(job->plan[0]);
	p = find_unread(job, key, len, 0,
	    (uint64_t)job->cursor + BC_JOBS_LOOKAHEAD);
	if (p != BC_PLAN_NONE) {
		do_mark_read(job, p);
		do_roll(job);
		return;
	}
	/* read before in this epoch (a retry), or early in the next while
	 * keys of this one stay unread: whichever is nearer */
	b = bc_plan_find(job->plan[0], key, len, 0);
	if (job->n > 1 && cur_len - job->low < BC_JOBS_LOOKAHEAD) {
		q = bc_plan_find(job->plan[1], key, len, 0);
		if (q != BC_PLAN_NONE && (uint64_t)(cur_len - job->low) + q <
		    BC_JOBS_LOOKAHEAD && (b >= job->cursor ||
		    (uint64_t)(cur_len - job->low) + q < job->cursor - b)) {
			do_drop_plan(job, 0);
			do_mark_read(job, q);
			do_roll(job);
			return;
		}
	}
	if (b != BC_PLAN_NONE) {
		job->out_of_order++;
		return;
	}
	for (unsigned i = 1; i < job->n; i++)
		if (bc_plan_find(job->plan[i], key, len, 0) != BC_PLAN_NONE) {
			job->out_of_order++;
			return;
		}
	job->out_of_plan++;
}

/* who (NULL: unsigned) may read as job (prefetch_jobs.h "Owners") */
static bool
may_use(const bc_job_t *job, const char *who)
{
	return job->owner[0] == '\0' || (who != NULL &&
	    strcmp(job->owner, who) == 0);
}

bool
bc_jobs_may_use(bc_jobs_t *jobs, const char *id, const char *who)
{
	bc_job_t *job;
	bool ok;

	if (atomic_load(&jobs->live) == 0)
		return true;
	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	ok = job == NULL || may_use(job, who);
	pthread_mutex_unlock(&jobs->mu);
	return ok;
}

int
bc_jobs_build_charge(bc_jobs_t *jobs, int64_t delta)
{
	int64_t had;

	if (delta <= 0) {
		had = atomic_fetch_add(&jobs->build_bytes, delta);
		BC_CHECK(had + delta >= 0);
		return 0;
	}
	had = atomic_load(&jobs->build_bytes);
	do {
		if (had + delta > (int64_t)jobs->max_bytes)
			return BC_ENOSPC;
	} while (!atomic_compare_exchange_weak(&jobs->build_bytes, &had,
	    had + delta));
	return 0;
}

bool
bc_jobs_record(bc_jobs_t *jobs, const char *id, const char *who,
    const char *bucket, const char *key, const uint32_t *epoch)
{
	bc_job_t *job;

	if (atomic_load(&jobs->live) == 0)
		return false;
	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL && !may_use(job, who))
		job = NULL;
	if (job != NULL) {
		job->last_ns = bc_mono_ns();
		do_record(job, bucket, key, epoch);
		do_mirror(job);
	}
	pthread_mutex_unlock(&jobs->mu);
	return job != NULL;
}

/* The job's next use of key (by name when key, else by hash h), in
 * reads: the stretch distance in its current plan, else the distance
 * into a later plan after the rest of the current one (from the cursor,
 * as the window counts); BC_JOBS_NEVER when no plan holds it. */
static uint64_t
do_next_use(const bc_job_t *job, const char *key, size_t len, uint64_t h)
{
	uint64_t base;
	uint32_t p;

	if (job->n == 0)
		return BC_JOBS_NEVER;
	p = find_unread(job, key, len, h, UINT64_MAX);
	if (p != BC_PLAN_NONE)
		return stretch_distance(job, p);
	base = bc_plan_len(job->plan[0]) - job->cursor;
	for (unsigned i = 1; i < job->n; i++) {
		p = key != NULL ? bc_plan_find(job->plan[i], key, len, 0) :
		    bc_plan_find_hash(job->plan[i], h, 0);
		if (p != BC_PLAN_NONE)
			return base + p;
		base += bc_plan_len(job->plan[i]);
	}
	return BC_JOBS_NEVER;
}

uint64_t
bc_jobs_next_use(bc_jobs_t *jobs, const char *bucket, const char *key)
{
	size_t len = strlen(key);
	uint64_t best = BC_JOBS_NEVER;

	pthread_mutex_lock(&jobs->mu);
	for (size_t j = 0; j < jobs->count; j++) {
		const bc_job_t *job = jobs->all[j];
		uint64_t d;

		if (strcmp(job->bucket, bucket) != 0)
			continue;
		d = do_next_use(job, key, len, 0);
		if (d < best)
			best = d;
	}
	pthread_mutex_unlock(&jobs->mu);
	return best;
}

uint64_t
bc_jobs_next_use_hash(bc_jobs_t *jobs, uint64_t h)
{
	uint64_t best = BC_JOBS_NEVER;

	if (atomic_load(&jobs->live) == 0)
		return best;
	pthread_mutex_lock(&jobs->mu);
	for (size_t j = 0; j < jobs->count; j++) {
		uint64_t d = do_next_use(jobs->all[j], NULL, 0, h);

		if (d < best)
			best = d;
	}
	pthread_mutex_unlock(&jobs->mu);
	return best;
}

/* The oracle's next use: the nearest job's next use in reads
 * (do_next_use), as that many BC_JOBS_KEY_NS past now. */
static uint64_t
oracle_next_use(void *arg, uint64_t key, uint64_t now)
{
	uint64_t d = bc_jobs_next_use_hash(arg, key);

	return d == BC_JOBS_NEVER ? UINT64_MAX : now + d * BC_JOBS_KEY_NS;
}

static bool
oracle_known(void *arg)
{
	bc_jobs_t *jobs = arg;

	return atomic_load(&jobs->live) > 0;
}

const bc_policy_oracle_t *
bc_jobs_oracle(bc_jobs_t *jobs)
{
	return &jobs->oracle;
}

bc_job_t *
bc_jobs_get(bc_jobs_t *jobs, const char *id)
{
	bc_job_t *job;

	if (atomic_load(&jobs->live) == 0)
		return NULL;
	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL)
		job->refs++;
	pthread_mutex_unlock(&jobs->mu);
	return job;
}

void
bc_job_unref(bc_job_t *job)
{
	bc_jobs_t *jobs;
	bool gone;

	if (job == NULL)
		return;
	jobs = job->jobs;
	pthread_mutex_lock(&jobs->mu);
	BC_CHECK(job->refs > 0);
	job->refs--;
	gone = job->refs == 0 && !job->live;
	pthread_mutex_unlock(&jobs->mu);
	if (gone)
		job_free(job);
}

bool
bc_job_live(bc_job_t *job)
{
	bool live;

	pthread_mutex_lock(&job->jobs->mu);
	live = job->live;
	pthread_mutex_unlock(&job->jobs->mu);
	return live;
}

/* One key a window may hand over, before the ordering. */
typedef struct cand_s {
	uint64_t dist;    /* reads before it is due (stretch_distance) */
	uint32_t pos;
	unsigned plan;
} cand_t;

static int
cand_cmp(const void *a, const void *b)
{
	const cand_t *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	if (x->plan != y->plan)
		return x->plan < y->plan ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

size_t
bc_jobs_window(bc_job_t *job, size_t ahead, size_t max, bc_job_key_t *out,
    char *bucket, size_t *behind)
{
	size_t k = 0, due = 0, nc = 0, cap;
	uint64_t base = 0;
	cand_t *c = NULL;

	pthread_mutex_lock(&job->jobs->mu);
	if (bucket != NULL)
		strcpy(bucket, job->bucket);
	if (!job->live || job->n == 0 || max == 0)
		goto out;
	/* the workers' stretches jump the cursor by about their span (also
	 * at an epoch's end, into the next plan) */
	if (ahead < job->span)
		ahead = job->span;
	cap = (size_t)(job->cursor - job->low) + ahead;
	c = malloc(cap * sizeof(*c));
	if (c == NULL)
		goto out;
	/* the keys due (not read, behind the cursor), then ahead ones */
	for (uint32_t p = job->low, run = job->low; p < job->cursor; p++) {
		if (is_done(job, p)) {
			run = p + 1;
			continue;
		}
		c[nc++] = (cand_t){ p - run, p, 0 };
	}
	cap = nc + ahead;
	for (unsigned i = 0; i < job->n && nc < cap; i++) {
		uint32_t len = bc_plan_len(job->plan[i]);
		uint32_t from = i == 0 ? job->cursor : 0;

		for (uint32_t p = from; p < len && nc < cap; p++)
			c[nc++] = (cand_t){ base + (p - from), p, i };
		base += len > from ? len - from : 0;
	}
	/* soonest first: each stretch's next key, then the ones after */
	qsort(c, nc, sizeof(*c), cand_cmp);
	for (size_t i = 0; i < nc && k < max; i++) {
		bc_plan_t *pl = job->plan[c[i].plan];

		bc_plan_ref(pl);
		out[k].plan = pl;
		out[k].key = bc_plan_key(pl, c[i].pos, &out[k].len);
		out[k].epoch = job->epoch[c[i].plan];
		out[k].pos = c[i].pos;
		due += c[i].plan == 0 && c[i].pos < job->cursor;
		k++;
	}
out:
	pthread_mutex_unlock(&job->jobs->mu);
	free(c);
	if (behind != NULL)
		*behind = due;
	return k;
}

void
bc_jobs_window_release(bc_job_key_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bc_plan_unref(keys[i].plan);
		keys[i].plan = NULL;
	}
}

static void
do_info(const bc_job_t *job, bc_job_info_t *info)
{
	memset(info, 0, sizeof(*info));
	strcpy(info->id, job->id);
	strcpy(info->bucket, job->bucket);
	strcpy(info->owner, job->owner);
	if (job->n > 0) {
		info->epoch = job->epoch[0];
		info->plan_len = bc_plan_len(job->plan[0]);
	}
	info->cursor = job->cursor;
	info->low = job->low;
	info->n_epochs = job->n;
	memcpy(info->epochs, job->epoch, job->n * sizeof(*job->epoch));
	info->reads = job->reads;
	info->out_of_order = job->out_of_order;
	info->out_of_plan = job->out_of_plan;
	info->plan_bytes = job->bytes;
}

int
bc_jobs_info(bc_jobs_t *jobs, const char *id, bc_job_info_t *info)
{
	bc_job_t *job;

	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL)
		do_info(job, info);
	pthread_mutex_unlock(&jobs->mu);
	return job != NULL ? 0 : BC_ENOENT;
}

size_t
bc_jobs_count(bc_jobs_t *jobs)
{
	size_t n;

	pthread_mutex_lock(&jobs->mu);
	n = jobs->count;
	pthread_mutex_unlock(&jobs->mu);
	return n;
}

/* ids and bucket names need no JSON escaping: both are checked on entry
 * (bc_s3_hint_job_ok, bc_s3_bucket_name_ok) */
static int
info_json(const bc_job_info_t *in, bc_buf_t *out)
{
	int rv = bc_buf_printf(out, "{\"id\": \"%s\", \"bucket\": \"%s\", "
	    "\"owner\": ", in->id, in->bucket);

	if (rv == 0)   /* an access key may hold anything: escaped */
		rv = in->owner[0] == '\0' ? bc_buf_puts(out, "null") :
		    bc_stats_json_string(out, in->owner);
	if (rv == 0)
		rv = bc_buf_printf(out, ", \"epoch\": %u, \"cursor\": %u, "
		    "\"plan_keys\": %u, \"epochs\": [", in->epoch, in->cursor,
		    in->plan_len);

	for (unsigned i = 0; rv == 0 && i < in->n_epochs; i++)
		rv = bc_buf_printf(out, "%s%u", i > 0 ? ", " : "",
		    in->epochs[i]);
	if (rv == 0)
		rv = bc_buf_printf(out, "], \"reads\": %llu, "
		    "\"out_of_order\": %llu, \"out_of_plan\": %llu, "
		    "\"plan_bytes\": %zu, ",
		    (unsigned long long)in->reads,
		    (unsigned long long)in->out_of_order,
		    (unsigned long long)in->out_of_plan, in->plan_bytes);
	if (rv == 0)
		rv = bc_stats_job_json(out, in->id);
	if (rv == 0)
		rv = bc_buf_putc(out, '}');
	return rv < 0 ? BC_ENOMEM : 0;
}

int
bc_jobs_json(bc_jobs_t *jobs, const char *id, const char *owner,
    bc_buf_t *out)
{
	bc_job_info_t *infos = NULL;
	size_t n = 0;
	int rv = 0;

	if (id != NULL) {
		bc_job_info_t info;

		rv = bc_jobs_info(jobs, id, &info);
		if (rv == 0)
			rv = info_json(&info, out);
		if (rv == 0 && bc_buf_putc(out, '\n') < 0)
			rv = BC_ENOMEM;
		return rv;
	}
	pthread_mutex_lock(&jobs->mu);
	if (jobs->count > 0) {
		infos = malloc(jobs->count * sizeof(*infos));
		if (infos == NULL)
			rv = BC_ENOMEM;
	}
	for (size_t i = 0; rv == 0 && i < jobs->count; i++)
		if (owner == NULL || strcmp(jobs->all[i]->owner, owner) == 0)
			do_info(jobs->all[i], &infos[n++]);
	pthread_mutex_unlock(&jobs->mu);
	if (rv == 0 && bc_buf_puts(out, "{\"jobs\": [") < 0)
		rv = BC_ENOMEM;
	for (size_t i = 0; rv == 0 && i < n; i++) {
		if (i > 0 && bc_buf_puts(out, ", ") < 0)
			rv = BC_ENOMEM;
		if (rv == 0)
			rv = info_json(&infos[i], out);
	}
	if (rv == 0 && bc_buf_puts(out, "]}\n") < 0)
		rv = BC_ENOMEM;
	free(infos);
	return rv;
}
