/*
 * prefetch.h — the prefetcher: brings into the cache, before a job asks,
 * the keys it says it reads next (docs/design.md "Prefetch").
 *
 * Inputs (any thread): bc_prefetch_want() — a job's next keys of a
 * bucket, in order (an x-bucketcache-next hint, a plan's window); each
 * call replaces the job's list. bc_prefetch_read() — the job read a key:
 * it leaves the list. The job's consumption rate and mean object size
 * (bytes / requests) are its per-job stats' (stats.h, bc_stats_job_get:
 * the object handler accounts every read there), the one estimate of
 * them.
 *
 * Work (the loop thread, a timer every BC_PREFETCH_TICK_MS): for each job,
 * the keys of its list within its window are prefetched in order through
 * bc_cache_prefetch_key() (class prefetch, no waiter), while
 *   - prefetch fills running < the concurrency budget
 *     (--prefetch-concurrency),
 *   - client (demand) fills running < BC_PREFETCH_DEMAND_YIELD: a
 *     prefetch never competes with a busy demand path (it yields),
 *   - prefetched bytes no client has read yet (prefetch_unread_bytes)
 *     < the byte budget (--prefetch-memory).
 * A key the cache declines (BC_ENOSPC: the memory policy would not keep
 * it, or only unread prefetches could make room; cache.h) ends the job's
 * turn and is asked again the next tick.
 * The window is the keys due now (bc_prefetch_want) and what the job
 * reads while a fetch takes place, twice: rate × origin latency × 2, in
 * keys of the job's mean object size, at least BC_PREFETCH_MIN_WINDOW
 * keys; at most its list.
 *
 * Jobs: at most BC_PREFETCH_MAX_JOBS (the least recently active one is
 * dropped for a new one); a list holds at most BC_PREFETCH_MAX_KEYS.
 * Threads: one lock guards the jobs; cache calls are made without it.
 */
#ifndef BC_PREFETCH_H
#define BC_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "loop/loop.h"

#define BC_PREFETCH_TICK_MS       20
#define BC_PREFETCH_MAX_JOBS      256
#define BC_PREFETCH_MAX_KEYS      4096
#define BC_PREFETCH_MIN_WINDOW    4
#define BC_PREFETCH_DEMAND_YIELD  32

typedef struct bc_prefetch_s bc_prefetch_t;

typedef struct bc_prefetch_opts_s {
	bc_cache_t *cache;
	bc_loop_t  *loop;
	uint64_t    budget_bytes;   /* unread prefetched bytes, at most */
	unsigned    concurrency;    /* prefetch fills at once (0: none) */
	uint64_t    latency_us;     /* the origin's, until measured */
} bc_prefetch_opts_t;

/* Starts the prefetcher's timer on o->loop. NULL when out of memory or
 * the loop is stopping. */
bc_prefetch_t *bc_prefetch_new(const bc_prefetch_opts_t *o);
/* Stops the timer (before the loop stops or after) and frees it. NULL is
 * a no-op. */
void bc_prefetch_free(bc_prefetch_t *p);
/* Sets the byte budget (unread prefetched bytes, at most) from now on
 * (scale/: a quarter of the memory bound in force). NULL: no-op. */
void bc_prefetch_set_budget(bc_prefetch_t *p, uint64_t bytes);

/* Job job reads keys[0..n) of bucket next, in this order, the first due
 * of them now (a plan's keys behind its cursor: several workers read
 * them at once), so its window counts from keys[due]; unsigned fetches
 * when anon. Replaces its list (keys the old list had issued are not
 * issued again); keys past BC_PREFETCH_MAX_KEYS are dropped. Strings are
 * copied. */
void bc_prefetch_want(bc_prefetch_t *p, const char *job, const char *bucket,
    const char *const *keys, size_t n, size_t due, bool anon);
/* Whether a new list for job is worth making now: false within
 * BC_PREFETCH_TICK_MS of its last bc_prefetch_want (its list is used
 * once a tick), true for a job without a list. */
bool bc_prefetch_want_due(bc_prefetch_t *p, const char *job);
/* Job job was served bucket/key. */
void bc_prefetch_read(bc_prefetch_t *p, const char *job, const char *bucket,
    const char *key);
/* Runs one tick now (tests; the timer calls it). Returns the prefetches
 * it started. Any thread but the cache's lock holders. */
unsigned bc_prefetch_tick(bc_prefetch_t *p);

/* What the job's window is now, in keys (0: unknown job). */
size_t bc_prefetch_window(bc_prefetch_t *p, const char *job);

struct bc_jobs_s;   /* prefetch_jobs.h */

#define BC_PREFETCH_FEED_MAX   1024   /* keys of a plan one feed hands */
/* Keys a plan posted before its job reads is prefetched from at once:
 * a loader's first batches (its workers start together), before any
 * read has given the job a rate. */
#define BC_PREFETCH_PLAN_START 64

/* A key a feed may hand the prefetcher (a client's grant): true keeps. */
typedef bool (*bc_prefetch_keep_fn)(void *arg, const char *bucket,
    const char *key);

/*
 * Hands the prefetcher job's plan window (jobs: prefetch_jobs.h): its
 * keys due behind the cursor and, ahead of it, max(the job's prefetch
 * window, min_window, BC_PREFETCH_MIN_WINDOW) keys; at most
 * BC_PREFETCH_FEED_MAX. Only keys keep accepts (keep NULL: all), and
 * only when the plan's bucket is bucket (NULL: any). Returns the keys
 * handed (0: no such job, or none kept).
 */
size_t bc_prefetch_feed_plan(bc_prefetch_t *p, struct bc_jobs_s *jobs,
    const char *job, const char *bucket, size_t min_window,
    bc_prefetch_keep_fn keep, void *keep_arg, bool anon);

#endif
