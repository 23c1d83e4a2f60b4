/*
 * stats.h — bucketcache's process-wide counters, rendered as JSON
 * (/_bucketcache/stats) and Prometheus text (/_bucketcache/metrics).
 *
 * Three families:
 *   - plain counters and gauges, one line each in stats_table.h;
 *   - client requests by operation x status class (the caller's ops:
 *     http/ counts S3's, s3_ops.tbl; stats knows no S3);
 *   - an upstream latency histogram (fixed buckets, seconds);
 *   - per bucket, per job and per tier families (stats_table.h).
 * (Per-bucket and per-job stats come later as further families: a small
 * fixed-size table of names -> counters, rendered by its own section in
 * stats.c after requests_by_op, with a bucket="..." label.)
 *
 * Thread-safety: every update is one relaxed C11 atomic operation, so any
 * thread may update at any time without locks. Readers (snapshot, JSON,
 * Prometheus) read each value atomically but not all at once: a reading
 * taken during updates may be off by the updates in flight, never torn.
 */
#ifndef BC_STATS_H
#define BC_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util_buf.h"

typedef enum bc_stat_e {
#define BC_STAT(name, type, help) BC_STAT_##name,
#include "stats/stats_table.h"
#undef BC_STAT
	BC_STAT__COUNT
} bc_stat_t;

/* Status classes counted per operation: 2xx, 3xx, 4xx, 5xx. */
#define BC_STATS_NCLASS 4
/* Upstream latency buckets: 13 finite upper bounds and +Inf. */
#define BC_STATS_NLAT   14

/* The counter values; use the macros below, not this array. */
extern _Atomic uint64_t bc_stats_counters[BC_STAT__COUNT];

/* Adds n to counter name (a bare stats_table.h name: BC_STATS_ADD(bytes_out,
 * n)). Gauges go down with BC_STATS_DEC; every DEC must match an INC. */
#define BC_STATS_ADD(name, n)                                            \
	((void)atomic_fetch_add_explicit(&bc_stats_counters[BC_STAT_##name], \
	    (uint64_t)(n), memory_order_relaxed))
#define BC_STATS_INC(name) BC_STATS_ADD(name, 1)
#define BC_STATS_SUB(name, n)                                            \
	((void)atomic_fetch_sub_explicit(&bc_stats_counters[BC_STAT_##name], \
	    (uint64_t)(n), memory_order_relaxed))
#define BC_STATS_DEC(name)                                               \
	((void)atomic_fetch_sub_explicit(&bc_stats_counters[BC_STAT_##name], \
	    (uint64_t)1, memory_order_relaxed))

/* Per-bucket counters (stats_table.h, BC_BSTAT). */
typedef enum bc_bstat_e {
#define BC_BSTAT(name, help) BC_BSTAT_##name,
#include "stats/stats_table.h"
#undef BC_BSTAT
	BC_BSTAT__COUNT
} bc_bstat_t;

#define BC_STATS_MAX_BUCKETS 64

/* Adds n to bucket's counter id. Lock-free once the bucket has a slot;
 * the first BC_STATS_MAX_BUCKETS names get one for the process's life,
 * later ones count as "_other", and so do names (NULL included) that are
 * not valid bucket names or longer than 63 bytes: only [A-Za-z0-9._-],
 * not starting with '_', not "." or "..". */
void bc_stats_bucket_add(const char *bucket, bc_bstat_t id, uint64_t n);
uint64_t bc_stats_bucket_get(const char *bucket, bc_bstat_t id);

/* Per-job counters and gauges (stats_table.h, BC_JSTAT). */
typedef enum bc_jstat_e {
#define BC_JSTAT(name, kind, help) BC_JSTAT_##name,
#include "stats/stats_table.h"
#undef BC_JSTAT
	BC_JSTAT__COUNT
} bc_jstat_t;

#define BC_STATS_MAX_JOBS 64
#define BC_STATS_JOB_MAX  63   /* bytes of a job name kept */

/*
 * A job's consumption rate is the bytes its reads were sent per second,
 * smoothed over ~2 s: the bytes added since the last fold are folded in
 * at most every 100 ms, by an add or a read (get, the renderers), so an
 * idle job's rate decays. The rate and the mean object size
 * (bytes / requests) are what the prefetcher sizes a job's window by.
 */
/* Adds d (one delta per BC_JSTAT; gauges' are ignored) to job's counters
 * and its bytes to its rate. The least recently active of
 * BC_STATS_MAX_JOBS jobs makes room for a new one. A name longer than
 * BC_STATS_JOB_MAX bytes is cut; NULL is "anonymous". Takes a lock
 * (short). */
void bc_stats_job_add(const char *job, const uint64_t d[BC_JSTAT__COUNT]);
/* Sets job's gauges (the GAUGE lines: the jobs registry's epoch, cursor
 * and plan_keys, mirrored) to v's entries; counters' are ignored. Makes
 * the job's slot as bc_stats_job_add does, unless every gauge is 0 (an
 * untracked job that ended is not tracked for it). */
void bc_stats_job_set(const char *job, const uint64_t v[BC_JSTAT__COUNT]);
/* job's counters, gauges and rate (as of now) into out/rate: false when
 * not tracked. */
bool bc_stats_job_get(const char *job, uint64_t out[BC_JSTAT__COUNT],
    double *rate);
/*
 * A handle on a job's counters, to count for it later without its name:
 * a prefetched chunk remembers the job it was brought for. It names the
 * job's slot for as long as the job keeps it; once the slot went to
 * another job (the job was pushed out), adds through it are dropped.
 */
typedef uint32_t bc_stats_job_id_t;
#define BC_STATS_JOB_NONE ((bc_stats_job_id_t)0)
/* job's handle, its slot made (as by bc_stats_job_add) when it has none.
 * Takes the lock. */
bc_stats_job_id_t bc_stats_job_id(const char *job);
/* Adds n to counter k of the job id names; BC_STATS_JOB_NONE or a
 * handle whose job is gone: nothing. Takes the lock. */
void bc_stats_job_id_add(bc_stats_job_id_t id, bc_jstat_t k, uint64_t n);
/* Appends job's counters (not its gauges: the jobs registry renders
 * those itself) and rate as the members of a JSON object, without
 * braces: "requests": n, ..., "rate_bytes_per_second": r (zeros when the
 * job is not tracked). Returns 0, or BC_ENOMEM / BC_E2BIG from the
 * buffer. */
int bc_stats_job_json(bc_buf_t *out, const char *job);
/* The clock per-job rates are measured with, monotonic nanoseconds (tests
 * drive time with it); NULL: bc_mono_ns. */
void bc_stats_set_clock(uint64_t (*now_ns)(void));

/* Per-tier values (stats_table.h, BC_TSTAT). stats/ knows no tier: the
 * composition root hands it a function that reads them (tier_stats.h). */
typedef enum bc_tstat_e {
#define BC_TSTAT(name, kind, help) BC_TSTAT_##name,
#include "stats/stats_table.h"
#undef BC_TSTAT
	BC_TSTAT__COUNT
} bc_tstat_t;

#define BC_STATS_MAX_TIERS 8
#define BC_STATS_TIER_NAME 32   /* bytes of a tier's name, NUL included */

typedef struct bc_stats_tier_s {
	char     name[BC_STATS_TIER_NAME];
	uint64_t v[BC_TSTAT__COUNT];
} bc_stats_tier_t;

/* Fills at most max rows, one per tier, and returns how many. */
typedef size_t (*bc_stats_tiers_fn)(void *arg, bc_stats_tier_t *rows,
    size_t max);
/* What /stats and /metrics read the tiers with (fn NULL: no tiers).
 * Returns once no renderer calls the previous fn any more, so its arg may
 * go after bc_stats_set_tiers(NULL, NULL). Thread-safe. */
void   bc_stats_set_tiers(bc_stats_tiers_fn fn, void *arg);
/* The rows as a renderer reads them (at most BC_STATS_MAX_TIERS). */
size_t bc_stats_tiers(bc_stats_tier_t *rows, size_t max);

/*
 * A module's own section (scale/, the Redis tier): json appends a JSON
 * value, rendered as the member name of /stats's object; prom appends
 * Prometheus lines (with their # HELP and # TYPE) at the end of /metrics.
 * Each returns 0 or a negative code (the document is then discarded).
 * Setting a name again replaces its fns; NULL fns remove the section.
 * At most 4 sections, rendered in the order first set. Returns 0, or
 * BC_EINVAL (name NULL or of 32 bytes or more), BC_ENOMEM (4 already).
 * Returns once no renderer calls the previous fns any more, so their arg
 * may go after bc_stats_set_section(name, NULL, NULL, NULL).
 */
typedef int (*bc_stats_section_fn)(void *arg, bc_buf_t *out);
int bc_stats_set_section(const char *name, bc_stats_section_fn json,
    bc_stats_section_fn prom, void *arg);

/* Sets gauge name to v (for gauges mirrored from another module). */
#define BC_STATS_SET(name, v)                                            \
	atomic_store_explicit(&bc_stats_counters[BC_STAT_##name],        \
	    (uint64_t)(v), memory_order_relaxed)

/* Upper bounds of the finite latency buckets, in microseconds. */
extern const uint64_t bc_stats_lat_bounds_usec[BC_STATS_NLAT - 1];

/* Request operations counted apart (op 0 .. BC_STATS_NOPS - 1); op 0 is
 * the catch-all ("Unknown", as s3_ops.tbl's first line). */
#define BC_STATS_NOPS 32

/* A copy of every value, for tests and the renderers. */
typedef struct bc_stats_snap_s {
	uint64_t v[BC_STAT__COUNT];          /* gauges: read as int64_t */
	uint64_t by_op[BC_STATS_NOPS][BC_STATS_NCLASS];
	uint64_t lat[BC_STATS_NLAT];         /* per bucket, not cumulative */
	uint64_t lat_count;                  /* sum of lat[] */
	uint64_t lat_sum_usec;
	uint64_t uptime_seconds;             /* 0 before bc_stats_start() */
} bc_stats_snap_t;

/* Records the start time that uptime_seconds counts from. */
void bc_stats_start(void);

/* One answered client request: bumps requests, bytes_in, bytes_out and
 * the (op, status class) pair; a status below 300 counts as 2xx, one of
 * 500 or above as 5xx. op_name (static, e.g. bc_s3op_name(op)) is what
 * the renderers call op; the first name counted for an op stays. An op
 * of BC_STATS_NOPS or more counts as op 0, named "Unknown". */
void bc_stats_request(unsigned op, const char *op_name, unsigned status,
    uint64_t bytes_in, uint64_t bytes_out);

/* One upstream request's latency (first request byte to last response
 * byte), in microseconds. */
void bc_stats_upstream_latency(uint64_t usec);

/* The current value of one counter (a gauge as its two's complement). */
uint64_t bc_stats_get(bc_stat_t id);
/* Requests counted for op in status's class (e.g. 404 -> 4xx). */
uint64_t bc_stats_get_op(unsigned op, unsigned status);
void bc_stats_snapshot(bc_stats_snap_t *s);

/* Estimates quantile q (0..1) of the latency in seconds from the
 * histogram, interpolating linearly inside a bucket (as Prometheus'
 * histogram_quantile does); 0 when empty, the largest finite bound when
 * the quantile falls in +Inf. */
double bc_stats_lat_quantile(const bc_stats_snap_t *s, double q);

/* Appends the stats as one JSON object (see stats.c) / as Prometheus
 * text exposition format 0.0.4. Return 0, or BC_ENOMEM / BC_E2BIG from
 * the buffer (out then holds a truncated document: discard it). */
int  bc_stats_json(bc_buf_t *out);
int  bc_stats_prometheus(bc_buf_t *out);

/* Append s, quotes included, as a JSON string / a Prometheus label value,
 * escaped so the document stays valid whatever bytes s holds (invalid
 * UTF-8 becomes U+FFFD; see stats.c). Return 0, or BC_ENOMEM / BC_E2BIG
 * from the buffer. The renderers use them for every name. */
int  bc_stats_json_string(bc_buf_t *out, const char *s);
int  bc_stats_prom_label(bc_buf_t *out, const char *s);

/*
 * The process's own figures, as Prometheus client libraries export them
 * (process_cpu_seconds_total, process_resident_memory_bytes, ...), read
 * from /proc (stats_process.c): /proc/self/stat, /proc/stat's btime,
 * /proc/self/fd and RLIMIT_NOFILE.
 */
typedef struct bc_stats_proc_s {
	double   cpu_seconds;    /* user + system */
	uint64_t vsize_bytes;
	uint64_t rss_bytes;
	double   start_time;     /* seconds since the Unix epoch */
	uint64_t open_fds;
	uint64_t max_fds;        /* the soft limit */
} bc_stats_proc_t;

#define BC_STATS_PROC_STAT   1u   /* cpu_seconds, vsize_bytes, rss_bytes */
#define BC_STATS_PROC_START  2u   /* start_time */
#define BC_STATS_PROC_FDS    4u   /* open_fds */
#define BC_STATS_PROC_MAXFDS 8u   /* max_fds */

/* Reads the figures of this process into *p; returns the BC_STATS_PROC_*
 * bits of those it could read (0: no /proc). Any thread. */
unsigned bc_stats_proc_read(bc_stats_proc_t *p);
/* Parses the text of a /proc/PID/stat (whose command name, in
 * parentheses, may hold spaces and parentheses: the fields after the last
 * ')' count) with the clock ticks per second, the page size and the boot
 * time (btime, seconds since the epoch): cpu_seconds, vsize_bytes,
 * rss_bytes and start_time. Returns 0, or BC_EINVAL when text is not one. */
int bc_stats_proc_parse_stat(const char *text, long ticks, long page,
    double btime, bc_stats_proc_t *p);

/* Zeroes every counter, gauge and histogram (tests). */
void bc_stats_reset(void);

#endif
