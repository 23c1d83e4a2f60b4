/*
 * stats.c — process-wide counters (stats_table.h), requests by S3
 * operation and status class, the upstream latency histogram, and their
 * JSON and Prometheus renderings (see stats.h).
 *
 * Every value is a relaxed C11 atomic: updates from any thread, no lock.
 * Renderers work from one bc_stats_snap_t so a document is self-consistent
 * where it matters (the histogram's _count is the sum of its buckets).
 * Each family renders in its own section function; a new family (per
 * bucket, per job) adds one for JSON and one for Prometheus. Every name
 * is escaped as it is rendered (put_json_str, put_label), so whatever
 * bytes a name holds, /stats stays valid JSON and /metrics valid UTF-8
 * exposition text; the per-bucket table takes only valid bucket names.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"     /* autoconf's: PACKAGE_VERSION */
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stats/stats.h"
#include "util/util_time.h"
#include "util/util_error.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

enum stat_kind { COUNTER, GAUGE };

static const struct {
	const char    *name;
	enum stat_kind kind;
	const char    *help;
} stats[] = {
#define BC_STAT(name, kind, help) { #name, kind, help },
#include "stats/stats_table.h"
#undef BC_STAT
};

static const char *const class_names[BC_STATS_NCLASS] = {
	"2xx", "3xx", "4xx", "5xx"
};

const uint64_t bc_stats_lat_bounds_usec[BC_STATS_NLAT - 1] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000
};

/* The bounds as Prometheus "le" labels, +Inf last. */
static const char *const lat_le[BC_STATS_NLAT] = {
	"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
	"0.5", "1", "2.5", "5", "10", "+Inf"
};

_Atomic uint64_t bc_stats_counters[BC_STAT__COUNT];
static _Atomic uint64_t by_op[BC_STATS_NOPS][BC_STATS_NCLASS];
/* each op's name, from its first count (static strings) */
static const char *_Atomic op_names[BC_STATS_NOPS];
static _Atomic uint64_t lat[BC_STATS_NLAT];
static _Atomic uint64_t lat_sum_usec;
static _Atomic int64_t  start_ns;     /* CLOCK_MONOTONIC; 0: not started */

/*
 * Per-bucket counters: a fixed table of slots. A slot's name is written
 * once, under bucket_mu, before its `used` flag is released; readers scan
 * used slots without a lock. Slots are never freed: once all are taken
 * (the first BC_STATS_MAX_BUCKETS names seen), other names count in slot
 * BC_STATS_MAX_BUCKETS, "_other", as do names that are not valid bucket
 * names (slot_name_ok).
 */
static const struct {
	const char *name;
	const char *help;
} bstats[BC_BSTAT__COUNT] = {
#define BC_BSTAT(n, h) { #n, h },
#include "stats/stats_table.h"
#undef BC_BSTAT
};

typedef struct bucket_slot_s {
	_Atomic int      used;
	char             name[64];
	_Atomic uint64_t v[BC_BSTAT__COUNT];
} bucket_slot_t;

static bucket_slot_t    bucket_slots[BC_STATS_MAX_BUCKETS + 1];
static pthread_mutex_t  bucket_mu = PTHREAD_MUTEX_INITIALIZER;

/* A name that may have a slot: a valid bucket name (never "" nor
 * "_other", which starts with '_') short enough for it. Anything else
 * reaching the stats (a name no request could be authorized for) shares
 * "_other". */
static bool
slot_name_ok(const char *b)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_";
	size_t n = b != NULL ? strlen(b) : 0;

	/* S3's bucket alphabet (s3_request.c, bc_s3_bucket_name_ok) */
	return n > 0 && n < sizeof(((bucket_slot_t *)0)->name) &&
	    b[0] != '_' && strspn(b, chars) == n && strcmp(b, ".") != 0 &&
	    strcmp(b, "..") != 0;
}

static bucket_slot_t *
bucket_slot(const char *bucket)
{
	bucket_slot_t *s;
	unsigned i;

	if (!slot_name_ok(bucket))
		return &bucket_slots[BC_STATS_MAX_BUCKETS];
	for (i = 0; i < BC_STATS_MAX_BUCKETS; i++) {
		s = &bucket_slots[i];
		if (!atomic_load_explicit(&s->used, memory_order_acquire))
			break;
		if (strcmp(s->name, bucket) == 0)
			return s;
	}
	if (i == BC_STATS_MAX_BUCKETS)   /* full for good: no lock needed */
		return &bucket_slots[BC_STATS_MAX_BUCKETS];
	pthread_mutex_lock(&bucket_mu);
	for (i = 0; i < BC_STATS_MAX_BUCKETS; i++) {
		s = &bucket_slots[i];
		if (!atomic_load_explicit(&s->used, memory_order_acquire)) {
			snprintf(s->name, sizeof(s->name), "%s", bucket);
			atomic_store_explicit(&s->used, 1,
			    memory_order_release);
			break;
		}
		if (strcmp(s->name, bucket) == 0)
			break;
	}
	pthread_mutex_unlock(&bucket_mu);
	return i < BC_STATS_MAX_BUCKETS ? &bucket_slots[i] :
	    &bucket_slots[BC_STATS_MAX_BUCKETS];
}

void
bc_stats_bucket_add(const char *bucket, bc_bstat_t id, uint64_t n)
{
	atomic_fetch_add_explicit(&bucket_slot(bucket)->v[id], n,
	    memory_order_relaxed);
}

uint64_t
bc_stats_bucket_get(const char *bucket, bc_bstat_t id)
{
	return atomic_load_explicit(&bucket_slot(bucket)->v[id],
	    memory_order_relaxed);
}

/*
 * Per-tier values: read through the function the composition root set,
 * under tiers_mu (so that bc_stats_set_tiers(NULL, NULL) returns once no
 * renderer uses the old one).
 */
static const struct {
	const char    *name;
	enum stat_kind kind;
	const char    *help;
} tstats[] = {
#define BC_TSTAT(name, kind, help) { #name, kind, help },
#include "stats/stats_table.h"
#undef BC_TSTAT
};

static pthread_mutex_t   tiers_mu = PTHREAD_MUTEX_INITIALIZER;
static bc_stats_tiers_fn tiers_fn;     /* tiers_mu */
static void             *tiers_arg;    /* tiers_mu */

void
bc_stats_set_tiers(bc_stats_tiers_fn fn, void *arg)
{
	pthread_mutex_lock(&tiers_mu);
	tiers_fn = fn;
	tiers_arg = arg;
	pthread_mutex_unlock(&tiers_mu);
}

size_t
bc_stats_tiers(bc_stats_tier_t *rows, size_t max)
{
	size_t n = 0;

	if (max > BC_STATS_MAX_TIERS)
		max = BC_STATS_MAX_TIERS;
	pthread_mutex_lock(&tiers_mu);
	if (tiers_fn != NULL)
		n = tiers_fn(tiers_arg, rows, max);
	pthread_mutex_unlock(&tiers_mu);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		rows[i].name[BC_STATS_TIER_NAME - 1] = '\0';
	return n;
}

/*
 * Per-job counters: the BC_STATS_MAX_JOBS most recently active jobs,
 * under jobs_mu (one short critical section per object read).
 */
static const struct {
	const char    *name;
	enum stat_kind kind;
	const char    *help;
} jstats[] = {
#define BC_JSTAT(name, kind, help) { #name, kind, help },
#include "stats/stats_table.h"
#undef BC_JSTAT
};

typedef struct job_slot_s {
	char     name[BC_STATS_JOB_MAX + 1];
	uint32_t gen;           /* which job holds the slot (handles) */
	uint64_t v[BC_JSTAT__COUNT];
	uint64_t last_ns;       /* last add */
	uint64_t rate_at_ns;    /* start of bytes_since */
	uint64_t bytes_since;
	double   rate;          /* bytes/s, smoothed */
} job_slot_t;

#define JOB_RATE_TICK_NS (100ull * 1000000)    /* folds at most this often */
#define JOB_RATE_TAU_NS  (2000ull * 1000000)

/* A handle is the slot's generation above JOB_ID_BITS bits of its
 * index; generations count from 1 (0 is no handle) and never repeat in a
 * process's life short of 2^26 new jobs. */
#define JOB_ID_BITS 6
#define JOB_GEN_MAX ((1u << (32 - JOB_ID_BITS)) - 1)
_Static_assert(BC_STATS_MAX_JOBS <= (1u << JOB_ID_BITS),
    "a job slot's index fits a handle");

static job_slot_t       jobs[BC_STATS_MAX_JOBS];
static unsigned         njobs;
static uint32_t         job_gen;      /* the last generation given */
static pthread_mutex_t  jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t (*_Atomic job_clock)(void) = bc_mono_ns;

void
bc_stats_set_clock(uint64_t (*now_ns)(void))
{
	atomic_store(&job_clock, now_ns != NULL ? now_ns : bc_mono_ns);
}

static uint64_t
job_now(void)
{
	return atomic_load(&job_clock)();
}

/* jobs_mu held: folds the bytes j was sent since the last fold into its
 * rate, once JOB_RATE_TICK_NS passed (an idle interval folds as 0). */
static void
job_fold(job_slot_t *j, uint64_t now)
{
	uint64_t dt;
	double inst, w;

	if (now < j->rate_at_ns || now - j->rate_at_ns < JOB_RATE_TICK_NS)
		return;
	dt = now - j->rate_at_ns;
	inst = (double)j->bytes_since * 1e9 / (double)dt;
	w = (double)dt / (double)(dt + JOB_RATE_TAU_NS);
	j->rate = j->rate == 0 ? inst : j->rate + w * (inst - j->rate);
	j->bytes_since = 0;
	j->rate_at_ns = now;
}

/* jobs_mu held: job's slot, made when make (evicting the least recently
 * active). NULL when absent. */
static job_slot_t *
job_slot(const char *job, bool make, uint64_t now)
{
	char name[BC_STATS_JOB_MAX + 1];
	unsigned oldest = 0;
	job_slot_t *j;

	snprintf(name, sizeof(name), "%s", job != NULL ? job : "anonymous");
	for (unsigned i = 0; i < njobs; i++) {
		if (strcmp(jobs[i].name, name) == 0)
			return &jobs[i];
		if (jobs[i].last_ns < jobs[oldest].last_ns)
			oldest = i;
	}
	if (!make)
		return NULL;
	j = njobs < BC_STATS_MAX_JOBS ? &jobs[njobs++] : &jobs[oldest];
	memset(j, 0, sizeof(*j));
	memcpy(j->name, name, sizeof(name));
	j->rate_at_ns = j->last_ns = now;
	job_gen = job_gen == JOB_GEN_MAX ? 1 : job_gen + 1;
	j->gen = job_gen;
	return j;
}

bc_stats_job_id_t
bc_stats_job_id(const char *job)
{
	bc_stats_job_id_t id;
	job_slot_t *j;

	pthread_mutex_lock(&jobs_mu);
	j = job_slot(job, true, job_now());
	id = j->gen << JOB_ID_BITS | (uint32_t)(j - jobs);
	pthread_mutex_unlock(&jobs_mu);
	return id;
}

void
bc_stats_job_id_add(bc_stats_job_id_t id, bc_jstat_t k, uint64_t n)
{
	unsigned i = id & ((1u << JOB_ID_BITS) - 1);

	if (id == BC_STATS_JOB_NONE || (unsigned)k >= BC_JSTAT__COUNT)
		return;
	pthread_mutex_lock(&jobs_mu);
	if (i < njobs && jobs[i].gen == id >> JOB_ID_BITS &&
	    jstats[k].kind == COUNTER)
		jobs[i].v[k] += n;
	pthread_mutex_unlock(&jobs_mu);
}

void
bc_stats_job_add(const char *job, const uint64_t d[BC_JSTAT__COUNT])
{
	uint64_t now = job_now();
	job_slot_t *j;

	pthread_mutex_lock(&jobs_mu);
	j = job_slot(job, true, now);
	for (unsigned k = 0; k < BC_JSTAT__COUNT; k++)
		if (jstats[k].kind == COUNTER)
			j->v[k] += d[k];
	j->last_ns = now;
	j->bytes_since += d[BC_JSTAT_bytes];
	job_fold(j, now);
	pthread_mutex_unlock(&jobs_mu);
}

void
bc_stats_job_set(const char *job, const uint64_t v[BC_JSTAT__COUNT])
{
	bool any = false;
	job_slot_t *j;

	for (unsigned k = 0; k < BC_JSTAT__COUNT; k++)
		any = any || (jstats[k].kind == GAUGE && v[k] != 0);
	pthread_mutex_lock(&jobs_mu);
	j = job_slot(job, any, job_now());
	for (unsigned k = 0; j != NULL && k < BC_JSTAT__COUNT; k++)
		if (jstats[k].kind == GAUGE)
			j->v[k] = v[k];
	pthread_mutex_unlock(&jobs_mu);
}

bool
bc_stats_job_get(const char *job, uint64_t out[BC_JSTAT__COUNT],
    double *rate)
{
	uint64_t now = job_now();
	job_slot_t *j;

	pthread_mutex_lock(&jobs_mu);
	j = job_slot(job, false, 0);
	if (j != NULL) {
		job_fold(j, now);
		memcpy(out, j->v, sizeof(j->v));
		*rate = j->rate;
	}
	pthread_mutex_unlock(&jobs_mu);
	return j != NULL;
}

static const char *
slot_name(const bucket_slot_t *s)
{
	return s == &bucket_slots[BC_STATS_MAX_BUCKETS] ? "_other" : s->name;
}

static bool
slot_shown(const bucket_slot_t *s)
{
	if (s != &bucket_slots[BC_STATS_MAX_BUCKETS])
		return atomic_load_explicit(&s->used, memory_order_acquire);
	for (unsigned j = 0; j < BC_BSTAT__COUNT; j++)
		if (atomic_load_explicit(&s->v[j], memory_order_relaxed) != 0)
			return true;
	return false;
}

static uint64_t
ld(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static void
add(_Atomic uint64_t *p, uint64_t n)
{
	atomic_fetch_add_explicit(p, n, memory_order_relaxed);
}


static unsigned
status_class(unsigned status)
{
	if (status < 300)
		return 0;
	if (status < 400)
		return 1;
	if (status < 500)
		return 2;
	return 3;
}

void
bc_stats_start(void)
{
	int64_t now = (int64_t)bc_mono_ns();

	atomic_store_explicit(&start_ns, now > 0 ? now : 1,
	    memory_order_relaxed);
}

void
bc_stats_request(unsigned op, const char *op_name, unsigned status,
    uint64_t bytes_in, uint64_t bytes_out)
{
	if (op >= BC_STATS_NOPS)
		op = 0;
	else if (op_name != NULL && atomic_load_explicit(&op_names[op],
	    memory_order_relaxed) == NULL)
		atomic_store_explicit(&op_names[op], op_name,
		    memory_order_relaxed);
	BC_STATS_INC(requests);
	BC_STATS_ADD(bytes_in, bytes_in);
	BC_STATS_ADD(bytes_out, bytes_out);
	add(&by_op[op][status_class(status)], 1);
}

void
bc_stats_upstream_latency(uint64_t usec)
{
	unsigned i = 0;

	while (i < BC_STATS_NLAT - 1 && usec > bc_stats_lat_bounds_usec[i])
		i++;
	add(&lat[i], 1);
	add(&lat_sum_usec, usec);
}

uint64_t
bc_stats_get(bc_stat_t id)
{
	return (unsigned)id < BC_STAT__COUNT ? ld(&bc_stats_counters[id]) : 0;
}

uint64_t
bc_stats_get_op(unsigned op, unsigned status)
{
	if (op >= BC_STATS_NOPS)
		return 0;
	return ld(&by_op[op][status_class(status)]);
}

void
bc_stats_snapshot(bc_stats_snap_t *s)
{
	int64_t t0 = atomic_load_explicit(&start_ns, memory_order_relaxed);

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < BC_STAT__COUNT; i++)
		s->v[i] = ld(&bc_stats_counters[i]);
	for (unsigned i = 0; i < BC_STATS_NOPS; i++)
		for (unsigned j = 0; j < BC_STATS_NCLASS; j++)
			s->by_op[i][j] = ld(&by_op[i][j]);
	for (unsigned i = 0; i < BC_STATS_NLAT; i++) {
		s->lat[i] = ld(&lat[i]);
		s->lat_count += s->lat[i];
	}
	s->lat_sum_usec = ld(&lat_sum_usec);
	if (t0 != 0)
		s->uptime_seconds = (uint64_t)((int64_t)bc_mono_ns() - t0) / 1000000000;
}

void
bc_stats_reset(void)
{
	for (unsigned i = 0; i < BC_STAT__COUNT; i++)
		atomic_store_explicit(&bc_stats_counters[i], 0,
		    memory_order_relaxed);
	for (unsigned i = 0; i < BC_STATS_NOPS; i++)
		for (unsigned j = 0; j < BC_STATS_NCLASS; j++)
			atomic_store_explicit(&by_op[i][j], 0,
			    memory_order_relaxed);
	for (unsigned i = 0; i < BC_STATS_NLAT; i++)
		atomic_store_explicit(&lat[i], 0, memory_order_relaxed);
	atomic_store_explicit(&lat_sum_usec, 0, memory_order_relaxed);
	for (unsigned i = 0; i <= BC_STATS_MAX_BUCKETS; i++)
		for (unsigned j = 0; j < BC_BSTAT__COUNT; j++)
			atomic_store_explicit(&bucket_slots[i].v[j], 0,
			    memory_order_relaxed);
	pthread_mutex_lock(&jobs_mu);
	njobs = 0;
	memset(jobs, 0, sizeof(jobs));
	pthread_mutex_unlock(&jobs_mu);
}

double
bc_stats_lat_quantile(const bc_stats_snap_t *s, double q)
{
	double rank, cum = 0, lo = 0, hi;

	if (s->lat_count == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)s->lat_count;
	for (unsigned i = 0; i < BC_STATS_NLAT; i++) {
		double n = (double)s->lat[i];

		if (i == BC_STATS_NLAT - 1)
			return lo;   /* in +Inf: the largest finite bound */
		hi = (double)bc_stats_lat_bounds_usec[i] / 1e6;
		if (n > 0 && cum + n >= rank)
			return lo + (hi - lo) * (rank - cum) / n;
		cum += n;
		lo = hi;
	}
	return lo;
}

/* ---- rendering ---------------------------------------------------------- */

/* A buffer whose first failure sticks, so sections need no checks. */
struct out {
	bc_buf_t *b;
	int       rv;
};

static void
put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put_bytes(struct out *o, const void *p, size_t n)
{
	if (o->rv < 0)
		return;
	o->rv = bc_buf_append(o->b, p, n);
}

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->rv < 0)
		return;
	va_start(ap, fmt);
	o->rv = bc_buf_vprintf(o->b, fmt, ap);
	va_end(ap);
}

/* U+FFFD REPLACEMENT CHARACTER in UTF-8 */
#define REPLACEMENT "\xef\xbf\xbd"

/* s as a JSON string (quotes included): '"' and '\\' escaped, control
 * characters and DEL as \u00XX, each byte that is not part of valid
 * UTF-8 as \ufffd; the result is valid JSON whatever s holds. */
static void
put_json_str(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	put(o, "\"");
	while (*p != '\0') {
		size_t n = bc_utf8_len(p);

		if (n == 0) {
			put(o, "\\ufffd");
			n = 1;
		} else if (n > 1) {
			put_bytes(o, p, n);
		} else if (*p == '"' || *p == '\\') {
			put(o, "\\%c", *p);
		} else if (*p < 0x20 || *p == 0x7f) {
			put(o, "\\u%04x", *p);
		} else {
			put_bytes(o, p, 1);
		}
		p += n;
	}
	put(o, "\"");
}

/* s as a Prometheus label value (quotes included): '\\', '"' and newline
 * escaped as the text format wants; other control characters, DEL and
 * each byte that is not part of valid UTF-8 become U+FFFD, so the line
 * stays one valid UTF-8 line whatever s holds. */
static void
put_label(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	put(o, "\"");
	while (*p != '\0') {
		size_t n = bc_utf8_len(p);

		if (n == 0) {
			put(o, REPLACEMENT);
			n = 1;
		} else if (n > 1) {
			put_bytes(o, p, n);
		} else if (*p == '"' || *p == '\\') {
			put(o, "\\%c", *p);
		} else if (*p == '\n') {
			put(o, "\\n");
		} else if (*p < 0x20 || *p == 0x7f) {
			put(o, REPLACEMENT);
		} else {
			put_bytes(o, p, 1);
		}
		p += n;
	}
	put(o, "\"");
}

int
bc_stats_json_string(bc_buf_t *b, const char *s)
{
	struct out o = { b, 0 };

	put_json_str(&o, s);
	return o.rv;
}

int
bc_stats_prom_label(bc_buf_t *b, const char *s)
{
	struct out o = { b, 0 };

	put_label(&o, s);
	return o.rv;
}

static const char *
op_name(unsigned op)
{
	const char *n = atomic_load_explicit(&op_names[op],
	    memory_order_relaxed);

	return n != NULL ? n : "Unknown";
}

static bool
op_used(const bc_stats_snap_t *s, unsigned op)
{
	for (unsigned j = 0; j < BC_STATS_NCLASS; j++)
		if (s->by_op[op][j] != 0)
			return true;
	return false;
}

static void
json_counters(struct out *o, const bc_stats_snap_t *s)
{
	put(o, "  \"counters\": {");
	for (unsigned i = 0; i < BC_STAT__COUNT; i++) {
		put(o, "%s\n    ", i > 0 ? "," : "");
		put_json_str(o, stats[i].name);
		if (stats[i].kind == GAUGE)
			put(o, ": %lld", (long long)(int64_t)s->v[i]);
		else
			put(o, ": %llu", (unsigned long long)s->v[i]);
	}
	put(o, "\n  },\n");
}

static void
json_by_op(struct out *o, const bc_stats_snap_t *s)
{
	bool first = true;

	put(o, "  \"requests_by_op\": {");
	for (unsigned i = 0; i < BC_STATS_NOPS; i++) {
		if (!op_used(s, i))
			continue;
		put(o, "%s\n    ", first ? "" : ",");
		first = false;
		put_json_str(o, op_name(i));
		put(o, ": {");
		for (unsigned j = 0; j < BC_STATS_NCLASS; j++)
			put(o, "%s\"%s\": %llu", j > 0 ? ", " : "",
			    class_names[j], (unsigned long long)s->by_op[i][j]);
		put(o, "}");
	}
	put(o, "%s},\n", first ? "" : "\n  ");
}

static void
json_buckets(struct out *o)
{
	bool first = true;

	put(o, "  \"buckets\": {");
	for (unsigned i = 0; i <= BC_STATS_MAX_BUCKETS; i++) {
		bucket_slot_t *b = &bucket_slots[i];

		if (!slot_shown(b))
			continue;
		put(o, "%s\n    ", first ? "" : ",");
		first = false;
		put_json_str(o, slot_name(b));
		put(o, ": {");
		for (unsigned j = 0; j < BC_BSTAT__COUNT; j++)
			put(o, "%s\"%s\": %llu", j > 0 ? ", " : "",
			    bstats[j].name, (unsigned long long)
			    atomic_load_explicit(&b->v[j],
			    memory_order_relaxed));
		put(o, "}");
	}
	put(o, "%s},\n", first ? "" : "\n  ");
}

/* One job's counters (and gauges, when gauges) and rate as JSON
 * members (no braces). */
static void
put_job_members(struct out *o, const uint64_t v[BC_JSTAT__COUNT],
    double rate, bool gauges)
{
	for (unsigned k = 0; k < BC_JSTAT__COUNT; k++)
		if (gauges || jstats[k].kind == COUNTER)
			put(o, "\"%s\": %llu, ", jstats[k].name,
			    (unsigned long long)v[k]);
	put(o, "\"rate_bytes_per_second\": %.0f", rate);
}

int
bc_stats_job_json(bc_buf_t *b, const char *job)
{
	uint64_t v[BC_JSTAT__COUNT] = { 0 };
	struct out o = { b, 0 };
	double rate = 0;

	(void)bc_stats_job_get(job, v, &rate);
	put_job_members(&o, v, rate, false);
	return o.rv;
}

static void
json_jobs(struct out *o)
{
	uint64_t now = job_now();
	bool first = true;

	pthread_mutex_lock(&jobs_mu);
	put(o, "  \"jobs\": {");
	for (unsigned i = 0; i < njobs; i++) {
		job_slot_t *j = &jobs[i];

		job_fold(j, now);
		put(o, "%s\n    ", first ? "" : ",");
		first = false;
		put_json_str(o, j->name);
		put(o, ": {");
		put_job_members(o, j->v, j->rate, true);
		put(o, "}");
	}
	put(o, "%s},\n", first ? "" : "\n  ");
	pthread_mutex_unlock(&jobs_mu);
}

static void
json_tiers(struct out *o)
{
	bc_stats_tier_t rows[BC_STATS_MAX_TIERS];
	size_t n = bc_stats_tiers(rows, BC_STATS_MAX_TIERS);

	put(o, "  \"tiers\": {");
	for (size_t i = 0; i < n; i++) {
		put(o, "%s\n    ", i > 0 ? "," : "");
		put_json_str(o, rows[i].name);
		put(o, ": {");
		for (unsigned k = 0; k < BC_TSTAT__COUNT; k++)
			put(o, "%s\"%s\": %llu", k > 0 ? ", " : "",
			    tstats[k].name, (unsigned long long)rows[i].v[k]);
		put(o, "}");
	}
	put(o, "%s},\n", n > 0 ? "\n  " : "");
}

/* The modules' sections (bc_stats_set_section), in the order first set,
 * under section_mu. */
#define MAX_SECTIONS 4
static pthread_mutex_t section_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char                name[32];
	bc_stats_section_fn json, prom;
	void               *arg;
} sections[MAX_SECTIONS];

int
bc_stats_set_section(const char *name, bc_stats_section_fn json,
    bc_stats_section_fn prom, void *arg)
{
	int i, free_at = -1, rv = 0;

	if (name == NULL || strlen(name) >= sizeof(sections[0].name))
		return BC_EINVAL;
	pthread_mutex_lock(&section_mu);
	for (i = 0; i < MAX_SECTIONS; i++) {
		if (strcmp(sections[i].name, name) == 0)
			break;
		if (free_at < 0 && sections[i].name[0] == '\0')
			free_at = i;
	}
	if (i == MAX_SECTIONS)
		i = json != NULL || prom != NULL ? free_at : -1;
	if (i >= 0) {
		if (json == NULL && prom == NULL) {
			memset(&sections[i], 0, sizeof(sections[i]));
		} else {
			snprintf(sections[i].name, sizeof(sections[i].name),
			    "%s", name);
			sections[i].json = json;
			sections[i].prom = prom;
			sections[i].arg = arg;
		}
	} else if (json != NULL || prom != NULL) {
		rv = BC_ENOMEM;
	}
	pthread_mutex_unlock(&section_mu);
	return rv;
}

static void
json_section(struct out *o)
{
	pthread_mutex_lock(&section_mu);
	for (int i = 0; i < MAX_SECTIONS && o->rv == 0; i++) {
		if (sections[i].json == NULL)
			continue;
		put(o, "  ,\"%s\": ", sections[i].name);
		if (o->rv == 0)
			o->rv = sections[i].json(sections[i].arg, o->b);
		put(o, "\n");
	}
	pthread_mutex_unlock(&section_mu);
}

static void
prom_section(struct out *o)
{
	pthread_mutex_lock(&section_mu);
	for (int i = 0; i < MAX_SECTIONS && o->rv == 0; i++) {
		if (sections[i].prom != NULL)
			o->rv = sections[i].prom(sections[i].arg, o->b);
	}
	pthread_mutex_unlock(&section_mu);
}

static void
json_latency(struct out *o, const bc_stats_snap_t *s)
{
	put(o, "  \"upstream_latency\": {\n"
	    "    \"count\": %llu,\n"
	    "    \"sum_seconds\": %.6f,\n"
	    "    \"p50_seconds\": %.6f,\n"
	    "    \"p99_seconds\": %.6f\n"
	    "  }\n",
	    (unsigned long long)s->lat_count, (double)s->lat_sum_usec / 1e6,
	    bc_stats_lat_quantile(s, 0.5), bc_stats_lat_quantile(s, 0.99));
}

/*
 * {
 *   "version": "0.1.0",
 *   "uptime_seconds": 12,
 *   "counters": { "requests": 5, ... },
 *   "requests_by_op": { "GetObject": {"2xx": 3, "3xx": 0, "4xx": 1,
 *                       "5xx": 0}, ... },        (ops never seen: omitted)
 *   "buckets": {...}, "jobs": {...},
 *   "tiers": { "memory": {"up": 1, "hits": 5, ...}, "disk": {...} },
 *   "upstream_latency": { "count": 3, "sum_seconds": 0.1,
 *                         "p50_seconds": 0.02, "p99_seconds": 0.05 }
 * }
 */
int
bc_stats_json(bc_buf_t *b)
{
	struct out o = { b, 0 };
	bc_stats_snap_t s;

	bc_stats_snapshot(&s);
	put(&o, "{\n  \"version\": ");
	put_json_str(&o, PACKAGE_VERSION);
	put(&o, ",\n  \"uptime_seconds\": %llu,\n",
	    (unsigned long long)s.uptime_seconds);
	json_counters(&o, &s);
	json_by_op(&o, &s);
	json_buckets(&o);
	json_jobs(&o);
	json_tiers(&o);
	json_latency(&o, &s);
	json_section(&o);
	put(&o, "}\n");
	return o.rv;
}

static void
prom_header(struct out *o, const char *name, const char *type,
    const char *help)
{
	put(o, "# HELP %s ", name);
	for (; *help != '\0'; help++) {   /* the format's HELP escapes */
		if (*help == '\\')
			put(o, "\\\\");
		else if (*help == '\n')
			put(o, "\\n");
		else
			put_bytes(o, help, 1);
	}
	put(o, "\n# TYPE %s %s\n", name, type);
}

/*
 * The Prometheus name of a table entry: prefix, the entry's name, _total
 * for a counter. Prometheus wants base units: an entry counted in
 * microseconds or milliseconds (its name ends in _us or _ms, as the JSON
 * for people keeps it) becomes ..._seconds, and its values are divided
 * by what this returns (1 for the others).
 */
static double
prom_name(char *buf, size_t len, const char *prefix, const char *name,
    bool counter)
{
	size_t n = strlen(name);
	double div = 1;

	if (n > 3 && strcmp(name + n - 3, "_us") == 0)
		div = 1e6;
	else if (n > 3 && strcmp(name + n - 3, "_ms") == 0)
		div = 1e3;
	if (div != 1)
		n -= 3;
	snprintf(buf, len, "%s%.*s%s%s", prefix, (int)n, name,
	    div != 1 ? "_seconds" : "", counter ? "_total" : "");
	return div;
}

/* One sample's value: v (a gauge's as signed) over div. */
static void
put_value(struct out *o, uint64_t v, bool gauge, double div)
{
	if (div != 1)
		put(o, " %.6f\n", (gauge ? (double)(int64_t)v : (double)v) / div);
	else if (gauge)
		put(o, " %lld\n", (long long)(int64_t)v);
	else
		put(o, " %llu\n", (unsigned long long)v);
}

static void
prom_counters(struct out *o, const bc_stats_snap_t *s)
{
	char name[128];

	for (unsigned i = 0; i < BC_STAT__COUNT; i++) {
		bool gauge = stats[i].kind == GAUGE;
		double div = prom_name(name, sizeof(name), "bucketcache_",
		    stats[i].name, !gauge);

		prom_header(o, name, gauge ? "gauge" : "counter",
		    stats[i].help);
		put(o, "%s", name);
		put_value(o, s->v[i], gauge, div);
	}
}

static void
prom_by_op(struct out *o, const bc_stats_snap_t *s)
{
	static const char name[] = "bucketcache_s3_requests_total";

	prom_header(o, name, "counter",
	    "Client requests by S3 operation and status class.");
	for (unsigned i = 0; i < BC_STATS_NOPS; i++) {
		if (!op_used(s, i))
			continue;
		for (unsigned j = 0; j < BC_STATS_NCLASS; j++) {
			put(o, "%s{op=", name);
			put_label(o, op_name(i));
			put(o, ",status=\"%s\"} %llu\n", class_names[j],
			    (unsigned long long)s->by_op[i][j]);
		}
	}
}

static void
prom_latency(struct out *o, const bc_stats_snap_t *s)
{
	static const char name[] = "bucketcache_upstream_latency_seconds";
	uint64_t cum = 0;

	prom_header(o, name, "histogram",
	    "Upstream request latency, first byte sent to last byte received.");
	for (unsigned i = 0; i < BC_STATS_NLAT; i++) {
		cum += s->lat[i];
		put(o, "%s_bucket{le=\"%s\"} %llu\n", name, lat_le[i],
		    (unsigned long long)cum);
	}
	put(o, "%s_sum %.6f\n%s_count %llu\n", name,
	    (double)s->lat_sum_usec / 1e6, name,
	    (unsigned long long)s->lat_count);
}

static void
prom_buckets(struct out *o)
{
	char name[128];

	for (unsigned j = 0; j < BC_BSTAT__COUNT; j++) {
		snprintf(name, sizeof(name), "bucketcache_bucket_%s_total",
		    bstats[j].name);
		prom_header(o, name, "counter", bstats[j].help);
		for (unsigned i = 0; i <= BC_STATS_MAX_BUCKETS; i++) {
			bucket_slot_t *b = &bucket_slots[i];

			if (!slot_shown(b))
				continue;
			put(o, "%s{bucket=", name);
			put_label(o, slot_name(b));
			put(o, "} %llu\n", (unsigned long long)
			    atomic_load_explicit(&b->v[j],
			    memory_order_relaxed));
		}
	}
}

/* Per job: the label is bc_job, not job, which Prometheus gives every
 * series of a scrape (its scrape job's name). The smoothed rate is the
 * JSON's: Prometheus computes rates from bucketcache_job_bytes_total. */
static void
prom_jobs(struct out *o)
{
	char name[128];

	pthread_mutex_lock(&jobs_mu);
	for (unsigned k = 0; k < BC_JSTAT__COUNT; k++) {
		bool gauge = jstats[k].kind == GAUGE;
		double div = prom_name(name, sizeof(name), "bucketcache_job_",
		    jstats[k].name, !gauge);

		prom_header(o, name, gauge ? "gauge" : "counter",
		    jstats[k].help);
		for (unsigned i = 0; i < njobs; i++) {
			put(o, "%s{bc_job=", name);
			put_label(o, jobs[i].name);
			put(o, "}");
			put_value(o, jobs[i].v[k], false, div);
		}
	}
	pthread_mutex_unlock(&jobs_mu);
}

static void
prom_tiers(struct out *o)
{
	bc_stats_tier_t rows[BC_STATS_MAX_TIERS];
	size_t n = bc_stats_tiers(rows, BC_STATS_MAX_TIERS);
	char name[128];

	if (n == 0)
		return;
	for (unsigned k = 0; k < BC_TSTAT__COUNT; k++) {
		bool gauge = tstats[k].kind == GAUGE;
		double div = prom_name(name, sizeof(name), "bucketcache_tier_",
		    tstats[k].name, !gauge);

		prom_header(o, name, gauge ? "gauge" : "counter",
		    tstats[k].help);
		for (size_t i = 0; i < n; i++) {
			put(o, "%s{tier=", name);
			put_label(o, rows[i].name);
			put(o, "}");
			put_value(o, rows[i].v[k], false, div);
		}
	}
}

/* The process_* metrics every Prometheus client library exports, from
 * /proc/self (stats_process.c); those it cannot read are left out. */
static void
prom_process(struct out *o)
{
	bc_stats_proc_t p;
	unsigned have = bc_stats_proc_read(&p);

	if (have & BC_STATS_PROC_STAT) {
		prom_header(o, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.");
		put(o, "process_cpu_seconds_total %.2f\n", p.cpu_seconds);
		prom_header(o, "process_virtual_memory_bytes", "gauge",
		    "Virtual memory size in bytes.");
		put(o, "process_virtual_memory_bytes %llu\n",
		    (unsigned long long)p.vsize_bytes);
		prom_header(o, "process_resident_memory_bytes", "gauge",
		    "Resident memory size in bytes.");
		put(o, "process_resident_memory_bytes %llu\n",
		    (unsigned long long)p.rss_bytes);
	}
	if (have & BC_STATS_PROC_START) {
		prom_header(o, "process_start_time_seconds", "gauge",
		    "Start time of the process since unix epoch in seconds.");
		put(o, "process_start_time_seconds %.2f\n", p.start_time);
	}
	if (have & BC_STATS_PROC_FDS) {
		prom_header(o, "process_open_fds", "gauge",
		    "Number of open file descriptors.");
		put(o, "process_open_fds %llu\n",
		    (unsigned long long)p.open_fds);
	}
	if (have & BC_STATS_PROC_MAXFDS) {
		prom_header(o, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.");
		put(o, "process_max_fds %llu\n",
		    (unsigned long long)p.max_fds);
	}
}

int
bc_stats_prometheus(bc_buf_t *b)
{
	struct out o = { b, 0 };
	bc_stats_snap_t s;

	bc_stats_snapshot(&s);
	prom_header(&o, "bucketcache_build_info", "gauge",
	    "Always 1; the version label names the build.");
	put(&o, "bucketcache_build_info{version=");
	put_label(&o, PACKAGE_VERSION);
	put(&o, "} 1\n");
	prom_header(&o, "bucketcache_uptime_seconds", "gauge",
	    "Seconds since the gateway started.");
	put(&o, "bucketcache_uptime_seconds %llu\n",
	    (unsigned long long)s.uptime_seconds);
	prom_process(&o);
	prom_counters(&o, &s);
	prom_by_op(&o, &s);
	prom_buckets(&o);
	prom_jobs(&o);
	prom_tiers(&o);
	prom_latency(&o, &s);
	prom_section(&o);
	return o.rv;
}
