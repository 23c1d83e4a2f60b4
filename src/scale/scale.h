/*
 * scale.h — scale/: sizes the memory tier from how fast jobs consume data
 * (docs/design.md "Scale"; --mem-size auto).
 *
 * Every --scale-interval, on the loop thread, it folds the estimators
 * (scale_est.h: R per job, B and latency of the origin, D per dataset),
 * computes the target and the datasets' shares (scale_rule.h) and, with
 * --mem-size auto, puts in force the bound (bc_cache_set_mem_size): the
 * target plus 1/32 for the memory tier's overhead plus the bytes no
 * eviction can free now (metadata, chunks being filled or read after
 * being dropped). The bound grows at once (by at most a quarter of
 * mem-max, 64 MiB at least, per interval) and shrinks only when an epoch
 * of a dataset ended or a job or dataset went idle (no read for
 * --idle-release); freed chunk memory goes back to the system (chunk
 * buffers are their own mappings; malloc_trim runs on the work pool
 * after a shrink). When the needs do not fit under mem-max, each dataset
 * gets its share (bc_cache_set_share) in decreasing rate per byte;
 * otherwise no dataset has one. With a fixed --mem-size the same
 * estimates and target are computed and shown, and nothing is changed.
 *
 * Threads: the event calls (wait, read, plan, forget) come from MHD
 * workers and take the estimators' lock; the tick runs on the loop;
 * bc_scale_json and the stats section read the last tick's results
 * under the module's lock.
 */
#ifndef BC_SCALE_H
#define BC_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "config/config.h"
#include "loop/loop.h"
#include "util/util_buf.h"

typedef struct bc_scale_s bc_scale_t;
struct bc_prefetch_s;

#define BC_SCALE_DECISIONS 32   /* kept for /v1/scale */

typedef struct bc_scale_opts_s {
	const bc_config_t    *cfg;       /* mem_*, idle_release,
					    scale_interval, dataset_depth,
					    chunk_size, prefetch_memory */
	bc_loop_t            *loop;      /* the tick's timer; NULL: none
					    (tests call bc_scale_tick) */
	bc_cache_t           *cache;     /* NULL: estimates only */
	/* its byte budget follows the bound (auto, without
	 * --prefetch-memory); NULL: none */
	struct bc_prefetch_s *prefetch;
	uint64_t            (*now_ns)(void);   /* NULL: bc_mono_ns */
	/* the origin's totals as bc_cache_origin_totals gives them (tests'
	 * stand-in); NULL: the cache's */
	void                (*origin_totals)(uint64_t *bytes,
	    uint64_t *busy_ns, uint64_t *ttfb_ns, uint64_t *ttfb_n);
	/* mem-max when cfg's is 0 and the default cannot be read; and
	 * tests' stand-ins for the cgroup and RAM (0: read them) */
	uint64_t              cgroup_limit, ram;
} bc_scale_opts_t;

/* Starts scale/ (its timer when o->loop). NULL: out of memory or the
 * loop stopping. */
bc_scale_t *bc_scale_new(const bc_scale_opts_t *o);
/* Stops the timer (call before or after the loop stops) and frees.
 * NULL: no-op. */
void bc_scale_free(bc_scale_t *s);

/* Events from the front end (scale_est.h); s NULL: no-ops. */
void bc_scale_wait(bc_scale_t *s, const char *job, bool begin);
void bc_scale_read(bc_scale_t *s, const char *job, uint64_t lane,
    uint64_t waited, const char *bucket, const char *key, uint64_t size,
    uint64_t first, uint64_t last, uint64_t sent);
void bc_scale_plan(bc_scale_t *s, const char *job, const char *bucket,
    const char *first_key, uint64_t nkeys);
void bc_scale_forget(bc_scale_t *s, const char *job);

/* One tick: fold, compute, apply (what the timer runs). */
void bc_scale_tick(bc_scale_t *s);

/* The bound in force and the last target. */
uint64_t bc_scale_limit(bc_scale_t *s);
uint64_t bc_scale_target(bc_scale_t *s);

/*
 * Appends GET /_bucketcache/v1/scale's JSON: {"mode", "target_bytes",
 * "limit_bytes", "held_bytes", "min_bytes", "max_bytes", "max_source",
 * "idle_release_seconds", "window_bytes", "pending", "origin": {...},
 * "datasets": [...], "jobs": [...], "decisions": [...]} (docs/cache.md, "Self-
 * sizing memory"). Returns 0 or a negative code from the buffer.
 */
int bc_scale_json(bc_scale_t *s, bc_buf_t *out);
/* Appends the per-dataset and per-job gauges in Prometheus text. */
int bc_scale_prometheus(bc_scale_t *s, bc_buf_t *out);

#endif
