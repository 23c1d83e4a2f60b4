/*
 * prefetch_jobs.c — the jobs registry (prefetch_jobs.h).
 *
 * One mutex guards everything: the id hash, the array of all jobs (for
 * scans), each job's plans, cursor and counters, and job refcounts. A job
 * is freed when it is unlinked (deleted, evicted, registry freed) and no
 * bc_jobs_get reference remains. Each change of a job's plan position is
 * mirrored into its per-job stats' gauges (stats.h) under the lock, so
 * the mirrors land in the order of the changes (the stats' lock is taken
 * after this one, never before).
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch/prefetch_jobs.h"
#include "s3/s3_hints.h"
#include "s3/s3_request.h"
#include "stats/stats.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_time.h"

struct bc_job_s {
	bc_jobs_t  *jobs;
	bc_job_t   *hnext;
	size_t      idx;        /* in jobs->all while live */
	unsigned    refs;       /* bc_jobs_get references */
	bool        live;
	char        id[BC_S3_HINT_JOB_MAX + 1];
	char        bucket[BC_S3_MAX_BUCKET + 1];
	bc_plan_t  *plan[BC_JOBS_EPOCHS];
	uint32_t    epoch[BC_JOBS_EPOCHS];
	unsigned    n;
	uint32_t    cursor;
	uint64_t    reads, out_of_order, out_of_plan;
	uint64_t    last_ns;
	size_t      bytes;
};

struct bc_jobs_s {
	pthread_mutex_t mu;
	bc_job_t      **table;
	size_t          mask;
	bc_job_t      **all;
	size_t          count;
	size_t          max_jobs;
	size_t          max_bytes;
	size_t          bytes;
	bc_policy_oracle_t oracle;   /* over this registry (bc_jobs_oracle) */
	/* count, readable without mu: a gateway with no planned job pays
	 * no lock per request (record, get, next uses) */
	_Atomic size_t  live;
};

static uint64_t oracle_next_use(void *arg, uint64_t key, uint64_t now);
static bool oracle_known(void *arg);

bc_jobs_t *
bc_jobs_new(size_t max_jobs, size_t max_bytes)
{
	bc_jobs_t *j = calloc(1, sizeof(*j));
	size_t size = 16;

	if (j == NULL)
		return NULL;
	j->max_jobs = max_jobs > 0 ? max_jobs : BC_JOBS_DEFAULT_MAX_JOBS;
	j->max_bytes = max_bytes > 0 ? max_bytes : BC_JOBS_DEFAULT_MAX_BYTES;
	while (size < j->max_jobs * 2)
		size *= 2;
	j->mask = size - 1;
	j->table = calloc(size, sizeof(*j->table));
	j->all = calloc(j->max_jobs, sizeof(*j->all));
	if (j->table == NULL || j->all == NULL ||
	    pthread_mutex_init(&j->mu, NULL) != 0) {
		free(j->table);
		free(j->all);
		free(j);
		return NULL;
	}
	j->oracle.next_use = oracle_next_use;
	j->oracle.known = oracle_known;
	j->oracle.arg = j;
	return j;
}

static size_t
slot_of(const bc_jobs_t *jobs, const char *id)
{
	return (size_t)bc_hash(BC_HASH_INIT, id, strlen(id)) & jobs->mask;
}

static bc_job_t *
do_find(bc_jobs_t *jobs, const char *id)
{
	bc_job_t *j = jobs->table[slot_of(jobs, id)];

	while (j != NULL && strcmp(j->id, id) != 0)
		j = j->hnext;
	return j;
}

/* drops the plan at index i of the job's plans */
static void
do_drop_plan(bc_job_t *job, unsigned i)
{
	size_t b = bc_plan_memory(job->plan[i]);

	assert(i < job->n);
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
		job->cursor = 0;
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
	free(job);
}

static void
do_unlink(bc_jobs_t *jobs, bc_job_t *job)
{
	bc_job_t **pp = &jobs->table[slot_of(jobs, job->id)];

	while (*pp != job)
		pp = &(*pp)->hnext;
	*pp = job->hnext;
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
		assert(jobs->all[0]->refs == 0);
		do_unlink(jobs, jobs->all[0]);
	}
	pthread_mutex_destroy(&jobs->mu);
	free(jobs->table);
	free(jobs->all);
	free(jobs);
}

/* evicts jobs idle the longest, never keep, until a new job fits (when
 * new_job) and need more bytes do; false when they cannot */
static bool
do_make_room(bc_jobs_t *jobs, const bc_job_t *keep, bool new_job,
    size_t need)
{
	while ((new_job && jobs->count >= jobs->max_jobs) ||
	    jobs->bytes + need > jobs->max_bytes) {
		bc_job_t *victim = NULL;

		for (size_t i = 0; i < jobs->count; i++) {
			bc_job_t *j = jobs->all[i];

			if (j != keep && (victim == NULL ||
			    j->last_ns < victim->last_ns))
				victim = j;
		}
		if (victim == NULL)
			return false;
		do_unlink(jobs, victim);
	}
	return true;
}

/* moves to the next epoch while the current plan is read through */
static void
do_roll(bc_job_t *job)
{
	while (job->n > 1 && job->cursor >= bc_plan_len(job->plan[0]))
		do_drop_plan(job, 0);
}

int
bc_jobs_put_plan(bc_jobs_t *jobs, const char *id, const char *bucket,
    const uint32_t *epoch, bc_plan_t *plan, uint32_t *epoch_out)
{
	size_t pbytes, need;
	bc_job_t *job;
	uint32_t e;
	unsigned at;
	bool replace = false, rebucket;
	int rv = 0;

	if (!bc_s3_hint_job_ok(id, strlen(id)) || bucket[0] == '\0' ||
	    !bc_s3_bucket_name_ok(bucket)) {
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
	if (!do_make_room(jobs, job, job == NULL, need)) {
		rv = BC_ENOSPC;
		goto out;
	}
	if (job == NULL) {
		size_t s = slot_of(jobs, id);

		job = calloc(1, sizeof(*job));
		if (job == NULL) {
			rv = BC_ENOMEM;
			goto out;
		}
		job->jobs = jobs;
		job->live = true;
		strcpy(job->id, id);
		strcpy(job->bucket, bucket);
		job->hnext = jobs->table[s];
		jobs->table[s] = job;
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
bc_jobs_delete(bc_jobs_t *jobs, const char *id)
{
	bc_job_t *job;
	int rv = BC_ENOENT;

	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL) {
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
	p = bc_plan_find(job->plan[0], key, len, job->cursor);
	if (p != BC_PLAN_NONE && p - job->cursor < BC_JOBS_LOOKAHEAD) {
		job->cursor = p + 1;
		do_roll(job);
		return;
	}
	/* behind the cursor in this epoch, or early in the next: whichever
	 * is nearer to the cursor */
	b = bc_plan_find(job->plan[0], key, len, 0);
	if (job->n > 1 && cur_len - job->cursor < BC_JOBS_LOOKAHEAD) {
		q = bc_plan_find(job->plan[1], key, len, 0);
		if (q != BC_PLAN_NONE && (uint64_t)(cur_len - job->cursor) + q <
		    BC_JOBS_LOOKAHEAD && (b >= job->cursor ||
		    (uint64_t)(cur_len - job->cursor) + q < job->cursor - b)) {
			do_drop_plan(job, 0);
			job->cursor = q + 1;
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

bool
bc_jobs_record(bc_jobs_t *jobs, const char *id, const char *bucket,
    const char *key, const uint32_t *epoch)
{
	bc_job_t *job;

	if (atomic_load(&jobs->live) == 0)
		return false;
	pthread_mutex_lock(&jobs->mu);
	job = do_find(jobs, id);
	if (job != NULL) {
		job->last_ns = bc_mono_ns();
		do_record(job, bucket, key, epoch);
		do_mirror(job);
	}
	pthread_mutex_unlock(&jobs->mu);
	return job != NULL;
}

uint64_t
bc_jobs_next_use(bc_jobs_t *jobs, const char *bucket, const char *key)
{
	size_t len = strlen(key);
	uint64_t best = BC_JOBS_NEVER;

	pthread_mutex_lock(&jobs->mu);
	for (size_t j = 0; j < jobs->count; j++) {
		const bc_job_t *job = jobs->all[j];
		uint64_t base = 0;

		if (strcmp(job->bucket, bucket) != 0)
			continue;
		for (unsigned i = 0; i < job->n && base < best; i++) {
			uint32_t from = i == 0 ? job->cursor : 0;
			uint32_t p = bc_plan_find(job->plan[i], key, len, from);

			if (p != BC_PLAN_NONE) {
				if (base + (p - from) < best)
					best = base + (p - from);
				break;
			}
			if (bc_plan_len(job->plan[i]) > from)
				base += bc_plan_len(job->plan[i]) - from;
		}
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
		const bc_job_t *job = jobs->all[j];
		uint64_t base = 0;

		for (unsigned i = 0; i < job->n && base < best; i++) {
			uint32_t from = i == 0 ? job->cursor : 0;
			uint32_t p = bc_plan_find_hash(job->plan[i], h, from);

			if (p != BC_PLAN_NONE) {
				if (base + (p - from) < best)
					best = base + (p - from);
				break;
			}
			if (bc_plan_len(job->plan[i]) > from)
				base += bc_plan_len(job->plan[i]) - from;
		}
	}
	pthread_mutex_unlock(&jobs->mu);
	return best;
}

/* The oracle's next use: the distance in plan positions from the nearest
 * cursor, as that many BC_JOBS_KEY_NS past now. */
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
	if (job->refs == 0)
		abort();
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

size_t
bc_jobs_window(bc_job_t *job, size_t n, bc_job_key_t *out, char *bucket)
{
	size_t k = 0;

	pthread_mutex_lock(&job->jobs->mu);
	if (bucket != NULL)
		strcpy(bucket, job->bucket);
	for (unsigned i = 0; job->live && i < job->n && k < n; i++) {
		uint32_t len = bc_plan_len(job->plan[i]);

		for (uint32_t p = i == 0 ? job->cursor : 0; p < len && k < n;
		    p++) {
			bc_plan_ref(job->plan[i]);
			out[k].plan = job->plan[i];
			out[k].key = bc_plan_key(job->plan[i], p, &out[k].len);
			out[k].epoch = job->epoch[i];
			out[k].pos = p;
			k++;
		}
	}
	pthread_mutex_unlock(&job->jobs->mu);
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
	if (job->n > 0) {
		info->epoch = job->epoch[0];
		info->plan_len = bc_plan_len(job->plan[0]);
	}
	info->cursor = job->cursor;
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
	    "\"epoch\": %u, \"cursor\": %u, \"plan_keys\": %u, "
	    "\"epochs\": [", in->id, in->bucket, in->epoch, in->cursor,
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
bc_jobs_json(bc_jobs_t *jobs, const char *id, bc_buf_t *out)
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
