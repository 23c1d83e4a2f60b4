/*
 * scale.c — the scale/ module (scale.h): the tick that turns estimates
 * into the memory bound and the datasets' shares, its decisions, and the
 * views of both (/_bucketcache/v1/scale, the stats section).
 *
 * The tick runs on the loop thread only; what it found is copied into
 * the module's "last" view under s->mu, which the renderers read.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prefetch/prefetch.h"
#include "scale/scale.h"
#include "scale/scale_est.h"
#include "scale/scale_mem.h"
#include "scale/scale_rule.h"
#include "stats/stats.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define NS_PER_MS   1000000ull
#define STEP_MIN    ((uint64_t)64 << 20)

typedef struct decision_s {
	double   time;            /* unix seconds */
	uint64_t from, to;
	char     reason[200];
} decision_t;

/* What the tick remembers of a dataset from one tick to the next (by
 * name): its epochs and activity then, whether a share is set, and its
 * last whole epoch as its jobs read it. */
typedef struct ds_mem_s {
	char     name[BC_SCALE_NAME_MAX];
	uint32_t epochs;
	bool     active, shared;
	uint64_t end_ns, end_bytes;  /* the last epoch end; its jobs' bytes */
	double   epoch_s;            /* the last whole epoch: seconds */
	double   epoch_rate;         /* its jobs' bytes/s over it */
	double   shortfall;          /* 1 - epoch_rate / their R, >= 0 */
} ds_mem_t;

/* A dataset as the last tick saw it. */
typedef struct ds_view_s {
	bc_scale_dataset_t d;
	bc_scale_need_t    n;
	unsigned           jobs;
	uint64_t           bytes;  /* sent to its active jobs, in all */
	uint64_t           held;   /* bytes of it in memory (shares) */
	ds_mem_t           m;
} ds_view_t;

typedef struct job_view_s {
	bc_scale_job_t j;
	bool           active;
	double         idle_s;
} job_view_t;

struct bc_scale_s {
	bc_scale_opts_t    o;
	const bc_config_t *cfg;
	bc_scale_est_t    *est;
	bc_loop_timer_t   *timer;
	bool               auto_mode;
	uint64_t           min, max, step;
	const char        *max_source;
	uint64_t           idle_ns;
	/* the tick's own memory (loop thread) */
	bc_scale_job_t    *jobs_buf;
	/* previous tick: epochs and activity per dataset, active jobs */
	ds_mem_t           prev_ds[BC_SCALE_MAX_DATASETS];
	size_t             nprev_ds;
	struct { char id[BC_SCALE_NAME_MAX]; } prev_jobs[BC_SCALE_MAX_JOBS];
	size_t             nprev_jobs;
	/* the last view (mu) */
	pthread_mutex_t    mu;
	uint64_t           target, limit, held, window;
	const char        *pending;     /* why the bound waits, or NULL */
	bc_scale_origin_t  origin;
	ds_view_t          ds[BC_SCALE_MAX_DATASETS];
	size_t             nds;
	job_view_t         jobs[BC_SCALE_MAX_JOBS];
	size_t             njobs;
	decision_t         dec[BC_SCALE_DECISIONS];
	size_t             ndec;        /* in all; the ring holds the last */
};

static uint64_t
now_of(const bc_scale_t *s)
{
	return s->o.now_ns != NULL ? s->o.now_ns() : bc_mono_ns();
}

static double
unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
on_timer(bc_loop_t *l, void *arg)
{
	(void)l;
	bc_scale_tick(arg);
}

static int scale_json_section(void *arg, bc_buf_t *out);
static int scale_prom_section(void *arg, bc_buf_t *out);

bc_scale_t *
bc_scale_new(const bc_scale_opts_t *o)
{
	bc_scale_t *s = calloc(1, sizeof(*s));
	const bc_config_t *cfg = o->cfg;
	bc_scale_est_opts_t eo = { cfg->chunk_size, cfg->dataset_depth, 0 };

	if (s == NULL)
		return NULL;
	s->o = *o;
	s->cfg = cfg;
	pthread_mutex_init(&s->mu, NULL);
	s->est = bc_scale_est_new(&eo);
	s->jobs_buf = calloc(BC_SCALE_MAX_JOBS, sizeof(*s->jobs_buf));
	if (s->est == NULL || s->jobs_buf == NULL)
		goto fail;
	s->auto_mode = cfg->mem_auto && o->cache != NULL;
	s->idle_ns = cfg->idle_release * NS_PER_MS;
	if (!cfg->mem_auto) {
		s->min = s->max = cfg->mem_size;
		s->max_source = "fixed";
	} else if (cfg->mem_max > 0) {
		s->min = cfg->mem_min;
		s->max = cfg->mem_max;
		s->max_source = "flag";
	} else {
		uint64_t cg = o->cgroup_limit > 0 ? o->cgroup_limit :
		    bc_scale_cgroup_limit("/sys/fs/cgroup", "/proc/self/cgroup");
		uint64_t ram = o->ram > 0 ? o->ram :
		    bc_scale_ram("/proc/meminfo");

		s->min = cfg->mem_min;
		s->max = bc_scale_default_max(cg, ram, &s->max_source);
		if (s->max < s->min) {
			BC_WARN("--mem-size auto: the default mem-max (%llu "
			    "MiB, %s) is below --mem-min: mem-max is mem-min",
			    (unsigned long long)(s->max >> 20), s->max_source);
			s->max = s->min;
		}
	}
	s->step = s->max / 4 > STEP_MIN ? s->max / 4 : STEP_MIN;
	s->limit = o->cache != NULL ? bc_cache_bytes_limit(o->cache) :
	    cfg->mem_size;
	s->target = s->limit;
	if (s->auto_mode)
		BC_INFO("memory: auto, %llu MiB to %llu MiB (%s)",
		    (unsigned long long)(s->min >> 20),
		    (unsigned long long)(s->max >> 20), s->max_source);
	if (o->loop != NULL) {
		s->timer = bc_loop_timer_new(o->loop, cfg->scale_interval,
		    on_timer, s);
		if (s->timer == NULL)
			goto fail;
	}
	if (bc_stats_set_section("scale", scale_json_section,
	    scale_prom_section, s) < 0)
		goto fail;
	BC_STATS_SET(scale_target_bytes, s->target);
	return s;
fail:
	bc_scale_free(s);
	return NULL;
}

void
bc_scale_free(bc_scale_t *s)
{
	if (s == NULL)
		return;
	bc_loop_timer_free(s->timer);
	bc_stats_set_section("scale", NULL, NULL, NULL);
	bc_scale_est_free(s->est);
	free(s->jobs_buf);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- events -------------------------------------------------------------- */

void
bc_scale_wait(bc_scale_t *s, const char *job, bool begin)
{
	if (s != NULL)
		bc_scale_est_wait(s->est, job, begin, now_of(s));
}

void
bc_scale_read(bc_scale_t *s, const char *job, uint64_t lane,
    uint64_t waited, const char *bucket, const char *key, uint64_t size,
    uint64_t first, uint64_t last, uint64_t sent)
{
	if (s != NULL)
		bc_scale_est_read(s->est, job, lane, waited, bucket, key, size,
		    first, last, sent, now_of(s));
}

void
bc_scale_plan(bc_scale_t *s, const char *job, const char *bucket,
    const char *first_key, uint64_t nkeys)
{
	if (s != NULL)
		bc_scale_est_plan(s->est, job, bucket, first_key, nkeys,
		    now_of(s));
}

void
bc_scale_forget(bc_scale_t *s, const char *job)
{
	if (s != NULL)
		bc_scale_est_forget(s->est, job);
}

/* ---- the tick ------------------------------------------------------------ */

static void
trim_work(void *arg)
{
	(void)arg;
	(void)malloc_trim(0);
}

/* s->mu held: appends a decision. */
static void
do_decide(bc_scale_t *s, uint64_t from, uint64_t to, const char *reason)
{
	decision_t *d = &s->dec[s->ndec++ % BC_SCALE_DECISIONS];

	d->time = unix_now();
	d->from = from;
	d->to = to;
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	BC_INFO("memory: %llu MiB -> %llu MiB: %s",
	    (unsigned long long)(from >> 20), (unsigned long long)(to >> 20),
	    reason);
}

static int
prev_ds_find(const bc_scale_t *s, const char *name)
{
	for (size_t i = 0; i < s->nprev_ds; i++)
		if (strcmp(s->prev_ds[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool
job_active(const bc_scale_t *s, const bc_scale_job_t *j, uint64_t now)
{
	return j->last_read_ns != 0 && now - j->last_read_ns < s->idle_ns;
}

/* Builds the datasets' view (needs in, jobs counted) from estimates. */
static size_t
gather(bc_scale_t *s, uint64_t now, ds_view_t *v, size_t njobs)
{
	bc_scale_dataset_t ds[BC_SCALE_MAX_DATASETS];
	size_t n = bc_scale_est_datasets(s->est, ds, BC_SCALE_MAX_DATASETS);

	for (size_t i = 0; i < n; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].d = ds[i];
		v[i].n.size = ds[i].size;
		v[i].n.active = ds[i].last_read_ns != 0 &&
		    now - ds[i].last_read_ns < s->idle_ns;
		for (size_t k = 0; k < njobs; k++) {
			const bc_scale_job_t *j = &s->jobs_buf[k];

			if (strcmp(j->dataset, ds[i].name) != 0 ||
			    !job_active(s, j, now))
				continue;
			v[i].jobs++;
			v[i].n.rate += j->rate;
			v[i].bytes += j->bytes;
		}
	}
	return n;
}

/* What changed since the previous tick: an epoch ended (*epoch_ds names
 * the dataset; its last whole epoch is measured into v[i].m), a dataset
 * or job went idle (*idle_name). Remembers this tick for the next. */
static void
changes(bc_scale_t *s, ds_view_t *v, size_t n, size_t njobs,
    uint64_t now, const char **epoch_ds, const char **idle_name)
{
	size_t nj = 0;

	*epoch_ds = *idle_name = NULL;
	for (size_t i = 0; i < n; i++) {
		int p = prev_ds_find(s, v[i].d.name);
		ds_mem_t *m = &v[i].m;

		if (p >= 0)
			*m = s->prev_ds[p];
		snprintf(m->name, BC_SCALE_NAME_MAX, "%.127s", v[i].d.name);
		if (p >= 0 && v[i].d.epochs > m->epochs) {
			*epoch_ds = v[i].d.name;
			if (m->end_ns != 0 && now > m->end_ns) {
				m->epoch_s = (double)(now - m->end_ns) / 1e9;
				m->epoch_rate = v[i].bytes > m->end_bytes ?
				    (double)(v[i].bytes - m->end_bytes) /
				    m->epoch_s : 0;
				m->shortfall = v[i].n.rate > 0 &&
				    m->epoch_rate < v[i].n.rate ?
				    1.0 - m->epoch_rate / v[i].n.rate : 0;
			}
			m->end_ns = now;
			m->end_bytes = v[i].bytes;
		}
		if (p >= 0 && m->active && !v[i].n.active)
			*idle_name = v[i].d.name;
		m->epochs = v[i].d.epochs;
		m->active = v[i].n.active;
	}
	for (size_t i = 0; i < s->nprev_jobs && *idle_name == NULL; i++) {
		bool still = false;

		for (size_t k = 0; k < njobs && !still; k++)
			still = job_active(s, &s->jobs_buf[k], now) &&
			    strcmp(s->jobs_buf[k].id, s->prev_jobs[i].id) == 0;
		if (!still)
			*idle_name = s->prev_jobs[i].id;
	}
	s->nprev_ds = n;
	for (size_t i = 0; i < n; i++)
		s->prev_ds[i] = v[i].m;
	for (size_t k = 0; k < njobs; k++)
		if (job_active(s, &s->jobs_buf[k], now))
			snprintf(s->prev_jobs[nj++].id, BC_SCALE_NAME_MAX, "%.127s",
			    s->jobs_buf[k].id);
	s->nprev_jobs = nj;
}

/* Sets the shares when the needs do not fit (constrained), clears those
 * set before otherwise; remembered for the next tick. */
static void
apply_shares(bc_scale_t *s, ds_view_t *v, size_t n, bool constrained)
{
	for (size_t i = 0; i < n; i++) {
		if (constrained)
			bc_cache_set_share(s->o.cache, v[i].d.name,
			    v[i].n.share > 0 ? v[i].n.share : 1);
		else if (v[i].m.shared)
			bc_cache_set_share(s->o.cache, v[i].d.name, 0);
		v[i].m.shared = constrained;
		s->prev_ds[i].shared = constrained;
		v[i].held = bc_cache_share_used(s->o.cache, v[i].d.name);
	}
}

void
bc_scale_tick(bc_scale_t *s)
{
	static ds_view_t v[BC_SCALE_MAX_DATASETS];   /* loop thread only */
	uint64_t now = now_of(s), target, need = 0, window = 0, cur, want;
	uint64_t floor = 0;
	const char *epoch_ds, *idle_name, *pending = NULL;
	bc_scale_rule_t rule;
	bc_scale_origin_t org;
	bc_scale_why_t why = BC_SCALE_HOLD;
	size_t njobs, n;
	char reason[200];

	if (s->o.cache != NULL) {
		uint64_t b, busy, tt, tn;

		if (s->o.origin_totals != NULL)
			s->o.origin_totals(&b, &busy, &tt, &tn);
		else
			bc_cache_origin_totals(s->o.cache, &b, &busy, &tt,
			    &tn);
		bc_scale_est_origin_totals(s->est, b, busy, tt, tn);
		floor = bc_cache_mem_floor(s->o.cache);
	}
	bc_scale_est_fold(s->est, now);
	bc_scale_est_origin(s->est, &org);
	njobs = bc_scale_est_jobs(s->est, s->jobs_buf, BC_SCALE_MAX_JOBS);
	n = gather(s, now, v, njobs);
	rule.bandwidth = org.bandwidth;
	rule.latency_s = org.latency_s;
	rule.min = s->min;
	rule.max = s->max;
	rule.floor = 0;
	{
		bc_scale_need_t needs[BC_SCALE_MAX_DATASETS];

		for (size_t i = 0; i < n; i++)
			needs[i] = v[i].n;
		target = bc_scale_rule(&rule, needs, n);
		for (size_t i = 0; i < n; i++) {
			v[i].n = needs[i];
			need += needs[i].need;
			window += needs[i].active ? needs[i].window : 0;
		}
	}
	changes(s, v, n, njobs, now, &epoch_ds, &idle_name);
	if (s->o.cache != NULL && s->auto_mode)
		apply_shares(s, v, n, need > s->max);
	cur = s->o.cache != NULL ? bc_cache_bytes_limit(s->o.cache) : s->limit;
	/* the chunks' bytes plus the tier's overhead and what cannot be
	 * evicted now; moves smaller than a chunk or 1/64 are not made */
	want = target > s->min ? target + target / 32 + floor : s->min;
	if (want > s->max)
		want = s->max;
	if (want != cur && want != s->min &&
	    (want > cur ? want - cur : cur - want) <
	    (cur / 64 > s->cfg->chunk_size ? cur / 64 : s->cfg->chunk_size))
		want = cur;
	if (s->auto_mode) {
		uint64_t next = bc_scale_step(cur, want, s->step,
		    epoch_ds != NULL, idle_name != NULL, &why);

		if (why == BC_SCALE_WAIT)
			pending = "the target is lower: waiting for an epoch "
			    "end or an idle job";
		if (next != cur) {
			int rv = bc_cache_set_mem_size(s->o.cache, next);

			if (why == BC_SCALE_GROW)
				snprintf(reason, sizeof(reason), "grow: the "
				    "jobs need %llu MiB (B %.1f MiB/s)",
				    (unsigned long long)(target >> 20),
				    org.bandwidth / 1048576.0);
			else if (why == BC_SCALE_SHRINK_IDLE)
				snprintf(reason, sizeof(reason), "shrink: %.100s "
				    "idle for %llu s", idle_name,
				    (unsigned long long)(s->idle_ns /
				    1000000000ull));
			else
				snprintf(reason, sizeof(reason), "shrink at "
				    "the end of an epoch of %.100s", epoch_ds);
			if (rv < 0 && next < cur)
				strncat(reason, " (chunks in use keep memory "
				    "above until they are released)",
				    sizeof(reason) - strlen(reason) - 1);
			pthread_mutex_lock(&s->mu);
			do_decide(s, cur, next, reason);
			pthread_mutex_unlock(&s->mu);
			if (next < cur && s->o.loop != NULL)
				(void)bc_loop_work(s->o.loop, trim_work, NULL,
				    NULL);
			if (s->o.prefetch != NULL &&
			    s->cfg->prefetch_memory == 0)
				bc_prefetch_set_budget(s->o.prefetch, next / 4);
			cur = next;
		}
	}
	BC_STATS_SET(scale_target_bytes, target);
	BC_STATS_SET(scale_origin_bandwidth_bytes_per_second,
	    (uint64_t)org.bandwidth);
	BC_STATS_SET(scale_origin_latency_us,
	    (uint64_t)(org.latency_s * 1e6));
	pthread_mutex_lock(&s->mu);
	s->target = target;
	s->limit = cur;
	s->held = s->o.cache != NULL ? bc_cache_bytes_held(s->o.cache) : 0;
	s->window = window;
	s->pending = pending;
	s->origin = org;
	memcpy(s->ds, v, n * sizeof(v[0]));
	s->nds = n;
	s->njobs = 0;
	for (size_t k = 0; k < njobs; k++) {
		job_view_t *jv = &s->jobs[s->njobs++];

		jv->j = s->jobs_buf[k];
		jv->active = job_active(s, &jv->j, now);
		jv->idle_s = jv->j.last_read_ns != 0 ?
		    (double)(now - jv->j.last_read_ns) / 1e9 : 0;
	}
	pthread_mutex_unlock(&s->mu);
}

uint64_t
bc_scale_limit(bc_scale_t *s)
{
	uint64_t v;

	pthread_mutex_lock(&s->mu);
	v = s->limit;
	pthread_mutex_unlock(&s->mu);
	return v;
}

uint64_t
bc_scale_target(bc_scale_t *s)
{
	uint64_t v;

	pthread_mutex_lock(&s->mu);
	v = s->target;
	pthread_mutex_unlock(&s->mu);
	return v;
}

/* ---- views --------------------------------------------------------------- */

static const char *
source_name(int src)
{
	return src == BC_SCALE_D_EPOCH ? "epoch" : src == BC_SCALE_D_PLAN ?
	    "plan" : "reading";
}

/* s->mu held */
static int
do_json(bc_scale_t *s, bc_buf_t *b)
{
	int rv = 0;

#define P(...) do { if (rv == 0) rv = bc_buf_printf(b, __VA_ARGS__); } \
	while (0)
#define S(str) do { if (rv == 0) rv = bc_stats_json_string(b, str); } \
	while (0)
	P("{\"mode\": \"%s\", \"target_bytes\": %llu, \"limit_bytes\": %llu, "
	    "\"held_bytes\": %llu, \"min_bytes\": %llu, \"max_bytes\": %llu, "
	    "\"max_source\": \"%s\", \"idle_release_seconds\": %.3f, "
	    "\"window_bytes\": %llu, \"pending\": ",
	    s->cfg->mem_auto ? "auto" : "fixed",
	    (unsigned long long)s->target, (unsigned long long)s->limit,
	    (unsigned long long)s->held, (unsigned long long)s->min,
	    (unsigned long long)s->max, s->max_source,
	    (double)s->idle_ns / 1e9, (unsigned long long)s->window);
	if (s->pending != NULL)
		S(s->pending);
	else
		P("null");
	P(",\n \"origin\": {\"bandwidth_bytes_per_second\": %.0f, "
	    "\"latency_seconds\": %.6f, \"fill_bytes\": %llu},\n \"datasets\": [",
	    s->origin.bandwidth, s->origin.latency_s,
	    (unsigned long long)s->origin.fill_bytes);
	for (size_t i = 0; i < s->nds; i++) {
		const ds_view_t *v = &s->ds[i];

		P("%s\n  {\"name\": ", i > 0 ? "," : "");
		S(v->d.name);
		P(", \"size_bytes\": %llu, \"size_source\": \"%s\", "
		    "\"distinct_bytes\": %llu, \"plan_keys\": %llu, "
		    "\"epochs\": %u, \"jobs\": %u, \"active\": %s, "
		    "\"rate_bytes_per_second\": %.0f, \"rate_per_byte\": %.6g, "
		    "\"window_bytes\": %llu, \"need_bytes\": %llu, "
		    "\"share_bytes\": %llu, \"share_set\": %s, "
		    "\"held_bytes\": %llu, \"last_epoch_seconds\": %.3f, "
		    "\"last_epoch_bytes_per_second\": %.0f, "
		    "\"shortfall\": %.4f}",
		    (unsigned long long)v->d.size, source_name(v->d.source),
		    (unsigned long long)v->d.distinct,
		    (unsigned long long)v->d.plan_keys, v->d.epochs, v->jobs,
		    v->n.active ? "true" : "false", v->n.rate,
		    v->n.rate_per_byte, (unsigned long long)v->n.window,
		    (unsigned long long)v->n.need,
		    (unsigned long long)v->n.share,
		    v->m.shared ? "true" : "false",
		    (unsigned long long)v->held, v->m.epoch_s, v->m.epoch_rate,
		    v->m.shortfall);
	}
	P("],\n \"jobs\": [");
	for (size_t i = 0; i < s->njobs; i++) {
		const job_view_t *j = &s->jobs[i];

		P("%s\n  {\"id\": ", i > 0 ? "," : "");
		S(j->j.id);
		P(", \"dataset\": ");
		S(j->j.dataset);
		P(", \"rate_bytes_per_second\": %.0f, "
		    "\"throughput_bytes_per_second\": %.0f, "
		    "\"wait_fraction\": %.4f, \"idle_seconds\": %.3f, "
		    "\"active\": %s, \"epochs\": %.3f, \"reads\": %llu, "
		    "\"bytes\": %llu}",
		    j->j.rate, j->j.throughput, j->j.wait_fraction, j->idle_s,
		    j->active ? "true" : "false", j->j.epochs,
		    (unsigned long long)j->j.reads,
		    (unsigned long long)j->j.bytes);
	}
	P("],\n \"decisions\": [");
	{
		size_t first = s->ndec > BC_SCALE_DECISIONS ?
		    s->ndec - BC_SCALE_DECISIONS : 0;

		for (size_t i = first; i < s->ndec; i++) {
			const decision_t *d = &s->dec[i % BC_SCALE_DECISIONS];

			P("%s\n  {\"time\": %.3f, \"from_bytes\": %llu, "
			    "\"to_bytes\": %llu, \"reason\": ",
			    i > first ? "," : "", d->time,
			    (unsigned long long)d->from,
			    (unsigned long long)d->to);
			S(d->reason);
			P("}");
		}
	}
	P("]}");
#undef P
#undef S
	return rv;
}

int
bc_scale_json(bc_scale_t *s, bc_buf_t *out)
{
	int rv;

	pthread_mutex_lock(&s->mu);
	rv = do_json(s, out);
	pthread_mutex_unlock(&s->mu);
	if (rv == 0)
		rv = bc_buf_puts(out, "\n");
	return rv;
}

static int
scale_json_section(void *arg, bc_buf_t *out)
{
	bc_scale_t *s = arg;
	int rv;

	pthread_mutex_lock(&s->mu);
	rv = do_json(s, out);
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* The # HELP and # TYPE lines of a gauge family. */
static int
prom_family(bc_buf_t *b, const char *name, const char *help)
{
	return bc_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help,
	    name);
}

int
bc_scale_prometheus(bc_scale_t *s, bc_buf_t *b)
{
	static const struct { const char *name, *help; } dsf[] = {
		{ "bucketcache_scale_dataset_size_bytes",
		  "The dataset's size D: distinct chunk bytes read, or from a plan." },
		{ "bucketcache_scale_dataset_rate_bytes_per_second",
		  "The sum of the consumption rates R of the dataset's active jobs." },
		{ "bucketcache_scale_dataset_need_bytes",
		  "Memory the dataset needs not to stall: D*max(0,1-B/R) plus its prefetch window." },
		{ "bucketcache_scale_dataset_share_bytes",
		  "Memory the dataset is given (its need, or less when the needs exceed mem-max)." },
		{ "bucketcache_scale_dataset_shortfall",
		  "1 - the jobs' bytes/s over the dataset's last whole epoch / their R (0: they read at their rate; the first, cold epoch is not measured)." },
	};
	static const struct { const char *name, *help; } jf[] = {
		{ "bucketcache_scale_job_rate_bytes_per_second",
		  "The job's consumption rate R: bytes per second while none of its reads waited on a fill." },
		{ "bucketcache_scale_job_wait_fraction",
		  "The share of the job's reading time during which a read of it waited on a fill." },
	};
	int rv = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t f = 0; f < 5 && rv == 0; f++) {
		rv = prom_family(b, dsf[f].name, dsf[f].help);
		for (size_t i = 0; i < s->nds && rv == 0; i++) {
			const ds_view_t *v = &s->ds[i];
			double val = f == 0 ? (double)v->d.size : f == 1 ?
			    v->n.rate : f == 2 ? (double)v->n.need : f == 3 ?
			    (double)v->n.share : v->m.shortfall;

			rv = bc_buf_printf(b, "%s{dataset=", dsf[f].name);
			if (rv == 0)
				rv = bc_stats_prom_label(b, v->d.name);
			if (rv == 0)
				rv = bc_buf_printf(b, f == 4 ? "} %.4f\n" :
				    "} %.0f\n", val);
		}
	}
	for (size_t f = 0; f < 2 && rv == 0; f++) {
		rv = prom_family(b, jf[f].name, jf[f].help);
		for (size_t i = 0; i < s->njobs && rv == 0; i++) {
			const job_view_t *j = &s->jobs[i];

			rv = bc_buf_printf(b, "%s{bc_job=", jf[f].name);
			if (rv == 0)
				rv = bc_stats_prom_label(b, j->j.id);
			if (rv == 0)
				rv = f == 0 ? bc_buf_printf(b, "} %.0f\n",
				    j->j.rate) : bc_buf_printf(b, "} %.4f\n",
				    j->j.wait_fraction);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return rv;
}

static int
scale_prom_section(void *arg, bc_buf_t *out)
{
	return bc_scale_prometheus(arg, out);
}
