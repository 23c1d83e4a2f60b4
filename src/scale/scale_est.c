/*
 * scale_est.c — the consumption-rate, origin-bandwidth and dataset-size
 * estimators (scale_est.h). One mutex guards everything; jobs and
 * datasets live in fixed arrays found by a hash of the name (a linear
 * scan of hashes: at most 256 and 64 slots).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "scale/scale_est.h"
#include "util/util_hash.h"

#define NS             1e9
#define GAP_MIN_NS     (2ull * 1000000000ull)   /* reading, after a read */
#define SET_MIN        1024u
#define OBJ_FLAG       0x80000000u    /* entry of an object's first chunk */
#define MIN_FREE_S     0.05           /* R needs this much free time */

typedef struct ent_s {
	uint64_t h;       /* 0: empty (a hash of 0 is stored as 1) */
	uint32_t seq;     /* the dataset's read count at the last touch */
	uint32_t bytes;   /* the chunk's length | OBJ_FLAG */
	uint32_t epoch;   /* the dataset's epoch at the last touch */
} ent_t;

typedef struct ds_s {
	bool      used;
	uint64_t  nh;                 /* hash of name */
	char      name[BC_SCALE_NAME_MAX];
	ent_t    *set;
	uint32_t  cap, n;             /* slots, entries */
	unsigned  level;              /* sample: 1 in 2^level hashes */
	uint64_t  s_bytes, s_objs;    /* sums over the entries */
	uint32_t  seq, since_mark;
	uint32_t  epochs;
	uint64_t  last_epoch_ns, last_read_ns;
	uint64_t  plan_keys;
} ds_t;

/* One connection of a job: a loader worker, whose reads come one after
 * another; its rate is a worker's. */
typedef struct lane_s {
	uint64_t  id;                     /* 0: unused */
	uint64_t  last_read_ns;
	double    gap_mean_ns;
	uint64_t  active_acc, wait_acc, bytes_acc;
	double    s_bytes, s_free;
} lane_t;

typedef struct job_s {
	bool      used;
	uint64_t  nh;
	char      id[BC_SCALE_NAME_MAX];
	char      dataset[BC_SCALE_NAME_MAX];
	unsigned  waiting;
	uint64_t  wait_since;
	uint64_t  wait_read;              /* waited since the last read */
	/* this fold's: reading time (between reads), its waits, bytes */
	uint64_t  active_acc, wait_acc, bytes_acc;
	uint64_t  last_read_ns, touched_ns;
	double    gap_mean_ns;            /* between reads, waits aside */
	double    s_bytes, s_free, s_active, s_wait;
	uint64_t  bytes, reads, ds_reads;
	lane_t    lanes[BC_SCALE_LANES];
} job_t;

struct bc_scale_est_s {
	pthread_mutex_t mu;
	uint64_t        cs;
	unsigned        depth;
	double          tau_ns;
	job_t           jobs[BC_SCALE_MAX_JOBS];
	ds_t            ds[BC_SCALE_MAX_DATASETS];
	/* the origin */
	uint64_t        o_bytes, o_busy, o_ttfb, o_cnt;   /* totals seen */
	uint64_t        d_bytes, d_busy, d_ttfb, d_cnt;   /* not folded */
	double          s_obytes, s_obusy, s_ottfb, s_ocnt;
	uint64_t        fill_bytes;
};

static uint64_t
name_hash(const char *s)
{
	return bc_hash(BC_HASH_INIT, s, strlen(s));
}

/* a dataset's name (bc_policy_dataset_name) fits a name here */
_Static_assert(BC_POLICY_DATASET_MAX <= BC_SCALE_NAME_MAX,
    "dataset names fit BC_SCALE_NAME_MAX");

static void
copy_name(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (n >= BC_SCALE_NAME_MAX)
		n = BC_SCALE_NAME_MAX - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

bc_scale_est_t *
bc_scale_est_new(const bc_scale_est_opts_t *o)
{
	bc_scale_est_t *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	pthread_mutex_init(&e->mu, NULL);
	e->cs = o->chunk_size > 0 ? o->chunk_size : 1;
	e->depth = o->depth;
	e->tau_ns = o->tau_ns > 0 ? (double)o->tau_ns : 10.0 * NS;
	return e;
}

void
bc_scale_est_free(bc_scale_est_t *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < BC_SCALE_MAX_DATASETS; i++)
		free(e->ds[i].set);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* ---- jobs and datasets by name (e->mu held) ---------------------------- */

static job_t *
job_find(bc_scale_est_t *e, const char *id, bool make, uint64_t now)
{
	uint64_t h = name_hash(id);
	job_t *free_slot = NULL, *oldest = NULL;

	for (size_t i = 0; i < BC_SCALE_MAX_JOBS; i++) {
		job_t *j = &e->jobs[i];

		if (!j->used) {
			if (free_slot == NULL)
				free_slot = j;
			continue;
		}
		if (j->nh == h && strcmp(j->id, id) == 0)
			return j;
		if (j->waiting == 0 && (oldest == NULL ||
		    j->touched_ns < oldest->touched_ns))
			oldest = j;
	}
	if (!make)
		return NULL;
	if (free_slot == NULL)
		free_slot = oldest;
	if (free_slot == NULL)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->nh = h;
	copy_name(free_slot->id, id);
	free_slot->touched_ns = now;
	return free_slot;
}

static ds_t *
ds_find(bc_scale_est_t *e, const char *name, bool make, uint64_t now)
{
	uint64_t h = name_hash(name);
	ds_t *free_slot = NULL, *oldest = NULL;

	for (size_t i = 0; i < BC_SCALE_MAX_DATASETS; i++) {
		ds_t *d = &e->ds[i];

		if (!d->used) {
			if (free_slot == NULL)
				free_slot = d;
			continue;
		}
		if (d->nh == h && strcmp(d->name, name) == 0)
			return d;
		if (oldest == NULL || d->last_read_ns < oldest->last_read_ns)
			oldest = d;
	}
	if (!make)
		return NULL;
	if (free_slot == NULL)
		free_slot = oldest;
	free(free_slot->set);
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->nh = h;
	copy_name(free_slot->name, name);
	free_slot->last_read_ns = now;
	return free_slot;
}

/* ---- a dataset's chunk set -------------------------------------------- */

static bool
sampled(const ds_t *d, uint64_t h)
{
	return d->level == 0 || (h >> (64 - d->level)) == 0;
}

static ent_t *
set_slot(ent_t *set, uint32_t cap, uint64_t h)
{
	uint32_t i = (uint32_t)(h ^ (h >> 29)) & (cap - 1);

	while (set[i].h != 0 && set[i].h != h)
		i = (i + 1) & (cap - 1);
	return &set[i];
}

/* Rebuilds d's set with cap slots, keeping the sampled entries. false:
 * no memory (the set is unchanged). */
static bool
set_rebuild(ds_t *d, uint32_t cap)
{
	ent_t *set = calloc(cap, sizeof(*set));

	if (set == NULL)
		return false;
	d->n = 0;
	d->s_bytes = d->s_objs = 0;
	for (uint32_t i = 0; d->set != NULL && i < d->cap; i++) {
		const ent_t *x = &d->set[i];

		if (x->h == 0 || !sampled(d, x->h))
			continue;
		*set_slot(set, cap, x->h) = *x;
		d->n++;
		d->s_bytes += x->bytes & ~OBJ_FLAG;
		d->s_objs += (x->bytes & OBJ_FLAG) != 0;
	}
	free(d->set);
	d->set = set;
	d->cap = cap;
	return true;
}

/* Room for one more entry: grows the set, or halves the sample. */
static bool
set_room(ds_t *d)
{
	if (d->set != NULL && (d->n + 1) * 2 <= d->cap)
		return true;
	if (d->cap < BC_SCALE_SET_MAX)
		return set_rebuild(d, d->cap == 0 ? SET_MIN : d->cap * 2);
	d->level++;
	return set_rebuild(d, d->cap);
}

/* The repeat distance, in other reads between two of one chunk: an
 * eighth of the chunks from 128 on, else 16, at most half of them, at
 * least 1. */
static uint32_t
repeat_distance(uint32_t n)
{
	uint32_t k = n >= 128 ? n / 8 : 16;

	if (k > n / 2)
		k = n / 2;
	return k > 0 ? k : 1;
}

/* d's chunk h (len bytes; first: an object's chunk 0) was read. */
static void
ds_touch(ds_t *d, uint64_t h, uint32_t len, bool first, uint64_t now)
{
	ent_t *x;

	if (h == 0)
		h = 1;
	if (!sampled(d, h))
		return;
	if (d->set != NULL) {
		x = set_slot(d->set, d->cap, h);
		if (x->h == h) {
			if (x->epoch == d->epochs &&
			    d->seq - x->seq - 1 >= repeat_distance(d->n) &&
			    d->since_mark >= d->n / 2) {
				d->epochs++;
				d->since_mark = 0;
				d->last_epoch_ns = now;
			}
			x->epoch = d->epochs;
			x->seq = d->seq++;
			d->since_mark++;
			return;
		}
	}
	if (!set_room(d) || !sampled(d, h))
		return;
	x = set_slot(d->set, d->cap, h);
	x->h = h;
	x->epoch = d->epochs;
	x->seq = d->seq++;
	x->bytes = len | (first ? OBJ_FLAG : 0);
	d->n++;
	d->since_mark++;
	d->s_bytes += len;
	d->s_objs += first;
}

/* ---- events ------------------------------------------------------------ */

/* A read's span since the previous one of the same reader (job or
 * lane), w of it waited: true when it counts (not an idle gap), with
 * the reader's mean span updated. */
static bool
span_counts(uint64_t span, uint64_t w, double *gap_mean_ns)
{
	uint64_t gap = (uint64_t)(4.0 * *gap_mean_ns);

	if (gap < GAP_MIN_NS)
		gap = GAP_MIN_NS;
	if (span - w > gap)
		return false;
	*gap_mean_ns = *gap_mean_ns == 0 ? (double)(span - w) :
	    0.9 * *gap_mean_ns + 0.1 * (double)(span - w);
	return true;
}

/* job's lane id (made, or the least recently read one replaced). */
static lane_t *
lane_find(job_t *j, uint64_t id)
{
	lane_t *old = &j->lanes[0];

	for (size_t i = 0; i < BC_SCALE_LANES; i++) {
		if (j->lanes[i].id == id)
			return &j->lanes[i];
		if (j->lanes[i].last_read_ns < old->last_read_ns)
			old = &j->lanes[i];
	}
	memset(old, 0, sizeof(*old));
	old->id = id;
	return old;
}

/* A read of sent bytes by lane id of j, at now, after waiting waited. */
static void
lane_read(job_t *j, uint64_t id, uint64_t sent, uint64_t waited,
    uint64_t now)
{
	lane_t *l;

	if (id == 0)
		return;
	l = lane_find(j, id);
	if (l->last_read_ns != 0 && now > l->last_read_ns) {
		uint64_t span = now - l->last_read_ns;
		uint64_t w = waited < span ? waited : span;

		if (span_counts(span, w, &l->gap_mean_ns)) {
			l->active_acc += span;
			l->wait_acc += w;
			l->bytes_acc += sent;
		}
	}
	l->last_read_ns = now;
}

void
bc_scale_est_wait(bc_scale_est_t *e, const char *job, bool begin,
    uint64_t now)
{
	job_t *j;

	pthread_mutex_lock(&e->mu);
	j = job_find(e, job != NULL ? job : "anonymous", begin, now);
	if (j == NULL)
		goto out;
	if (begin) {
		if (j->waiting++ == 0)
			j->wait_since = now;
	} else if (j->waiting > 0 && --j->waiting == 0) {
		j->wait_read += now - j->wait_since;
	}
	j->touched_ns = now;
out:
	pthread_mutex_unlock(&e->mu);
}

void
bc_scale_est_read(bc_scale_est_t *e, const char *job, uint64_t lane,
    uint64_t waited, const char *bucket, const char *key, uint64_t size,
    uint64_t first, uint64_t last, uint64_t sent, uint64_t now)
{
	char name[BC_SCALE_NAME_MAX];
	job_t *j;
	ds_t *d;

	bc_policy_dataset_name(bucket, key, e->depth, name, sizeof(name));
	pthread_mutex_lock(&e->mu);
	j = job_find(e, job != NULL ? job : "anonymous", true, now);
	if (j == NULL)
		goto out;
	j->touched_ns = now;
	j->bytes += sent;
	j->reads++;
	if (first > last || size == 0)
		goto out;
	/* the time since the previous read is this read's (the first
	 * read, or one after an idle gap, has none: its bytes count for
	 * nothing) */
	lane_read(j, lane, sent, waited, now);
	if (j->last_read_ns != 0 && now > j->last_read_ns) {
		uint64_t span = now - j->last_read_ns, w = j->wait_read;

		if (j->waiting > 0)
			w += now - j->wait_since;
		if (w > span)
			w = span;
		if (span_counts(span, w, &j->gap_mean_ns)) {
			j->active_acc += span;
			j->wait_acc += w;
			j->bytes_acc += sent;
		}
	}
	j->wait_read = 0;
	if (j->waiting > 0)
		j->wait_since = now;
	j->last_read_ns = now;
	if (strcmp(j->dataset, name) != 0) {
		copy_name(j->dataset, name);
		j->ds_reads = 0;
	}
	d = ds_find(e, name, true, now);
	d->last_read_ns = now;
	if (last >= size)
		last = size - 1;
	for (uint64_t i = first / e->cs; i <= last / e->cs; i++) {
		uint64_t len = size - i * e->cs;

		if (len > e->cs)
			len = e->cs;
		ds_touch(d, bc_policy_key_hash(bucket, key, (uint32_t)i),
		    (uint32_t)len, i == 0, now);
		j->ds_reads++;
	}
out:
	pthread_mutex_unlock(&e->mu);
}

void
bc_scale_est_plan(bc_scale_est_t *e, const char *job, const char *bucket,
    const char *first_key, uint64_t nkeys, uint64_t now)
{
	char name[BC_SCALE_NAME_MAX];
	job_t *j;
	ds_t *d;

	bc_policy_dataset_name(bucket, first_key, e->depth, name,
	    sizeof(name));
	pthread_mutex_lock(&e->mu);
	d = ds_find(e, name, true, now);
	if (nkeys > d->plan_keys)
		d->plan_keys = nkeys;
	j = job_find(e, job, true, now);
	if (j != NULL && strcmp(j->dataset, name) != 0) {
		copy_name(j->dataset, name);
		j->ds_reads = 0;
	}
	pthread_mutex_unlock(&e->mu);
}

void
bc_scale_est_forget(bc_scale_est_t *e, const char *job)
{
	job_t *j;

	pthread_mutex_lock(&e->mu);
	j = job_find(e, job, false, 0);
	if (j != NULL && j->waiting == 0)
		j->used = false;
	pthread_mutex_unlock(&e->mu);
}

void
bc_scale_est_origin_totals(bc_scale_est_t *e, uint64_t bytes,
    uint64_t busy_ns, uint64_t ttfb_ns, uint64_t ttfb_count)
{
	pthread_mutex_lock(&e->mu);
	/* totals only grow; a smaller one (a new source) restarts */
	e->d_bytes += bytes >= e->o_bytes ? bytes - e->o_bytes : 0;
	e->d_busy += busy_ns >= e->o_busy ? busy_ns - e->o_busy : 0;
	e->d_ttfb += ttfb_ns >= e->o_ttfb ? ttfb_ns - e->o_ttfb : 0;
	e->d_cnt += ttfb_count >= e->o_cnt ? ttfb_count - e->o_cnt : 0;
	e->o_bytes = bytes;
	e->o_busy = busy_ns;
	e->o_ttfb = ttfb_ns;
	e->o_cnt = ttfb_count;
	pthread_mutex_unlock(&e->mu);
}

/* ---- folding ----------------------------------------------------------- */

/* Folds the reads since the previous fold into the job's sums, each
 * older one weighted down by its reading time (exp(-t/tau)). */
static void
job_fold(bc_scale_est_t *e, job_t *j)
{
	double a = exp(-(double)j->active_acc / e->tau_ns);

	for (size_t i = 0; i < BC_SCALE_LANES; i++) {
		lane_t *l = &j->lanes[i];
		double la = exp(-(double)l->active_acc / e->tau_ns);

		if (l->id == 0)
			continue;
		l->s_bytes = l->s_bytes * la + (double)l->bytes_acc;
		l->s_free = l->s_free * la +
		    (double)(l->active_acc - l->wait_acc) / NS;
		l->bytes_acc = l->active_acc = l->wait_acc = 0;
	}

	j->s_bytes = j->s_bytes * a + (double)j->bytes_acc;
	j->s_free = j->s_free * a +
	    (double)(j->active_acc - j->wait_acc) / NS;
	j->s_active = j->s_active * a + (double)j->active_acc / NS;
	j->s_wait = j->s_wait * a + (double)j->wait_acc / NS;
	j->bytes_acc = j->active_acc = j->wait_acc = 0;
}

void
bc_scale_est_fold(bc_scale_est_t *e, uint64_t now)
{
	(void)now;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < BC_SCALE_MAX_JOBS; i++)
		if (e->jobs[i].used)
			job_fold(e, &e->jobs[i]);
	if (e->d_busy > 0 || e->d_bytes > 0) {
		double a = exp(-(double)e->d_busy / e->tau_ns);

		e->s_obytes = e->s_obytes * a + (double)e->d_bytes;
		e->s_obusy = e->s_obusy * a + (double)e->d_busy / NS;
	}
	if (e->d_cnt > 0) {
		double a = exp(-(double)e->d_cnt / 32.0);

		e->s_ottfb = e->s_ottfb * a + (double)e->d_ttfb / NS;
		e->s_ocnt = e->s_ocnt * a + (double)e->d_cnt;
	}
	e->fill_bytes += e->d_bytes;
	e->d_bytes = e->d_busy = e->d_ttfb = e->d_cnt = 0;
	pthread_mutex_unlock(&e->mu);
}

/* ---- snapshots --------------------------------------------------------- */

static void
ds_snap(const ds_t *d, bc_scale_dataset_t *out)
{
	uint64_t objs = d->s_objs << d->level;

	memset(out, 0, sizeof(*out));
	copy_name(out->name, d->name);
	out->distinct = d->s_bytes << d->level;
	out->chunks = (uint64_t)d->n << d->level;
	out->plan_keys = d->plan_keys;
	out->epochs = d->epochs;
	out->last_epoch_ns = d->last_epoch_ns;
	out->last_read_ns = d->last_read_ns;
	out->size = out->distinct;
	out->source = BC_SCALE_D_READING;
	if (d->epochs > 0) {
		out->source = BC_SCALE_D_EPOCH;
	} else if (d->plan_keys > 0 && objs > 0) {
		double per = (double)out->distinct / (double)objs;
		uint64_t p = (uint64_t)(per * (double)d->plan_keys);

		out->source = BC_SCALE_D_PLAN;
		if (p > out->size)
			out->size = p;
	}
}

size_t
bc_scale_est_datasets(bc_scale_est_t *e, bc_scale_dataset_t *out,
    size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < BC_SCALE_MAX_DATASETS && n < max; i++)
		if (e->ds[i].used)
			ds_snap(&e->ds[i], &out[n++]);
	pthread_mutex_unlock(&e->mu);
	/* most recently read first */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 &&
		    out[k].last_read_ns > out[k - 1].last_read_ns; k--) {
			bc_scale_dataset_t t = out[k];

			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return n;
}

/* R: the sum of the rates of the job's lanes read lately (each a
 * worker), or, when none has one, the job's own. */
static double
job_rate(const job_t *j)
{
	double sum = 0;
	unsigned n = 0;

	for (size_t i = 0; i < BC_SCALE_LANES; i++) {
		const lane_t *l = &j->lanes[i];
		uint64_t gap = (uint64_t)(4.0 * l->gap_mean_ns);

		if (gap < GAP_MIN_NS)
			gap = GAP_MIN_NS;
		if (l->id == 0 || l->s_free < MIN_FREE_S ||
		    l->last_read_ns + gap < j->last_read_ns)
			continue;
		sum += l->s_bytes / l->s_free;
		n++;
	}
	if (n > 0)
		return sum;
	return j->s_free >= MIN_FREE_S ? j->s_bytes / j->s_free : 0;
}

size_t
bc_scale_est_jobs(bc_scale_est_t *e, bc_scale_job_t *out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < BC_SCALE_MAX_JOBS && n < max; i++) {
		const job_t *j = &e->jobs[i];
		bc_scale_job_t *o;
		ds_t *d;

		if (!j->used || j->reads == 0)
			continue;
		o = &out[n++];
		memset(o, 0, sizeof(*o));
		copy_name(o->id, j->id);
		copy_name(o->dataset, j->dataset);
		o->rate = job_rate(j);
		o->throughput = j->s_active > 0 ? j->s_bytes / j->s_active : 0;
		o->wait_fraction = j->s_active > 0 ?
		    j->s_wait / j->s_active : 0;
		o->last_read_ns = j->last_read_ns;
		o->bytes = j->bytes;
		o->reads = j->reads;
		d = j->dataset[0] != '\0' ? ds_find(e, j->dataset, false, 0) :
		    NULL;
		if (d != NULL && d->n > 0)
			o->epochs = (double)j->ds_reads /
			    (double)((uint64_t)d->n << d->level);
	}
	pthread_mutex_unlock(&e->mu);
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 &&
		    out[k].last_read_ns > out[k - 1].last_read_ns; k--) {
			bc_scale_job_t t = out[k];

			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return n;
}

void
bc_scale_est_origin(bc_scale_est_t *e, bc_scale_origin_t *out)
{
	pthread_mutex_lock(&e->mu);
	out->bandwidth = e->s_obusy >= 0.001 ? e->s_obytes / e->s_obusy : 0;
	out->latency_s = e->s_ocnt > 0 ? e->s_ottfb / e->s_ocnt : 0;
	out->fill_bytes = e->fill_bytes;
	pthread_mutex_unlock(&e->mu);
}
