/*
 * prefetch_warm.h — warm-ups: a bucket's prefix listed at the origin and
 * brought into one tier of the cache in the background (docs/design.md,
 * "Turn-3 contracts": "Warm-up is a job like a plan: listed keys, bounded
 * concurrency, progress and cancel, into a named tier, under the caller's
 * grant").
 *
 * A warm-up lists bucket/prefix with ListObjectsV2 through the origin
 * (signed with the gateway's credentials), one page of at most
 * BC_WARM_PAGE_KEYS keys at a time: the listing streams, a page (at most
 * BC_WARM_PAGE_MAX bytes of XML) is read, parsed and its keys taken
 * before the next page is asked for, so a warm-up never holds more than
 * one page. Each listed key is
 *   - skipped when it does not start with the prefix (an origin's answer
 *     is not trusted), is not a key the gateway serves (too long, a "."
 *     or ".." segment), or is outside the grant of the client key that
 *     started the warm-up;
 *   - counted no_room when it would take the objects the warm-up holds
 *     in the tier past its budget: a lower tier's capacity at the start;
 *     memory's room at the start less an eighth of its capacity
 *     (metadata and overhead count against memory's bound too); with a
 *     cost per object of its bytes plus a 4 KiB block per chunk and one
 *     for its metadata; a smaller object after it may still fit; every
 *     object once memory's policy declines its fills with none of the
 *     warm-up's running: a warm-up fills a tier within its bound, it
 *     does not churn it;
 *   - otherwise brought into the tier (cache.h, bc_cache_warm_*): its
 *     metadata (from a lower tier that keeps it, else a first fill that
 *     brings chunk 0 too), then every chunk the tier lacks; memory copies
 *     are copied down, lower tiers are asked before the origin. Counted
 *     cached when the tier had every chunk, warmed when the warm-up
 *     brought some, failed when a fill failed (or the object changed
 *     twice while warmed).
 * At most opts.concurrency fills of a warm-up run at once (they are of
 * class prefetch: they yield to clients' fills), and none while the lower
 * tiers' write queue is half full. A warm-up into a lower tier that goes
 * down ends failed (its writes would be skipped).
 *
 * Registry: BC_WARM_MAX_RUNNING warm-ups run at once, one per (bucket,
 * prefix); BC_WARM_MAX_KEPT are kept to be read, finished ones dropped
 * oldest first. A warm-up belongs to whoever started it: a client key's
 * access key, or the operator (owner NULL).
 *
 * Threads: every call is thread-safe. The work runs on the loop thread,
 * on a timer (BC_WARM_TICK_MS) that runs while a warm-up does; the
 * registry's lock is taken before the cache's, never after.
 */
#ifndef BC_PREFETCH_WARM_H
#define BC_PREFETCH_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "config/config.h"
#include "upstream/upstream.h"
#include "loop/loop.h"
#include "util/util_buf.h"

#define BC_WARM_MAX_RUNNING 4
#define BC_WARM_MAX_KEPT    16
#define BC_WARM_TICK_MS     10
#define BC_WARM_PAGE_KEYS   1000
#define BC_WARM_PAGE_MAX    (4u << 20)

typedef struct bc_warm_s bc_warm_t;

typedef struct bc_warm_opts_s {
	bc_cache_t  *cache;
	bc_origin_t *origin;      /* where listings go */
	bc_loop_t   *loop;
	const char  *region;      /* the relay's (GetBucketLocation &c.) */
	uint64_t     chunk_size;  /* the cache's */
	unsigned     concurrency; /* fills of one warm-up at once (>= 1) */
} bc_warm_opts_t;

/* A warm-up to start. */
typedef struct bc_warm_req_s {
	const char            *bucket;  /* a valid bucket name */
	const char            *prefix;  /* "" for the whole bucket */
	const char            *tier;    /* "memory", "disk", "redis"; NULL:
					   the first lower tier, else memory */
	const bc_client_key_t *key;     /* the owner's grant; NULL: the
					   operator (all keys) */
	const char            *owner;   /* key's access key; NULL: operator */
} bc_warm_req_t;

/* The registry. NULL when out of memory. */
bc_warm_t *bc_warm_new(const bc_warm_opts_t *o);
/* Ends every warm-up and frees the registry; after the loop stopped (no
 * tick runs) and before the cache and origin go. NULL is a no-op. */
void bc_warm_free(bc_warm_t *w);

/*
 * Starts a warm-up of r and appends its progress (JSON, as bc_warm_get)
 * to out. Returns 0; BC_EINVAL with err set (errlen bytes) for a tier the
 * cache does not have; BC_EEXIST when one for the same bucket and prefix
 * is running; BC_ENOSPC when BC_WARM_MAX_RUNNING are; BC_ENOMEM; or
 * BC_ECANCELED when the loop is stopping. A finished one for the same
 * bucket and prefix is replaced.
 */
int  bc_warm_start(bc_warm_t *w, const bc_warm_req_t *r, bc_buf_t *out,
    char *err, size_t errlen);
/*
 * Appends the progress of bucket/prefix's warm-up to out: {"bucket",
 * "prefix", "tier", "owner", "state" (running, done, failed, canceled),
 * "listing_done", "pages", "objects_listed", "bytes_listed",
 * "objects_done", "bytes_done" (in the tier now: cached + warmed),
 * "objects_cached", "bytes_cached" (there before), "objects_warmed",
 * "bytes_warmed", "bytes_fetched" (chunk bytes it brought),
 * "objects_failed", "bytes_failed", "objects_skipped", "bytes_skipped",
 * "objects_no_room", "bytes_no_room", "in_flight", "budget_bytes",
 * "elapsed_seconds",
 * "rate_bytes_per_second" (bytes_fetched over the elapsed time),
 * "eta_seconds" (what is listed and not done at that rate; null when
 * unknown), "cached_fraction" (bytes_done over the bytes listed and not
 * skipped), "error"}. owner NULL: the operator, who reads any; else only
 * owner's. Returns 0, BC_ENOENT (none), BC_EACCES (another owner's).
 */
int  bc_warm_get(bc_warm_t *w, const char *bucket, const char *prefix,
    const char *owner, bc_buf_t *out);
/* Appends {"warmups": [...]}: every warm-up kept (owner NULL), or
 * owner's. Returns 0. */
int  bc_warm_list(bc_warm_t *w, const char *owner, bc_buf_t *out);
/* Cancels bucket/prefix's warm-up (fills running finish for the cache;
 * nothing new starts) and appends its progress. Returns as bc_warm_get. */
int  bc_warm_cancel(bc_warm_t *w, const char *bucket, const char *prefix,
    const char *owner, bc_buf_t *out);
/* Runs one tick now (tests; the timer calls it). Loop thread, or any
 * thread while the loop runs no tick (tests without a loop). */
void bc_warm_tick(bc_warm_t *w);
/* Warm-ups running now. */
unsigned bc_warm_running(bc_warm_t *w);

#endif
