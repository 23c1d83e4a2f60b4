/*
 * cache.h — the cache core: object metadata with a TTL, chunk lookups
 * through the tiers, and single-flight upstream fills.
 *
 * An object is one (bucket, key) the cache knows; it carries the metadata
 * of the version it last saw (size, ETag, headers) and the fills under way
 * for it. Chunk bytes live in the tiers (memory, then the lower tiers
 * added to bc_cache_tiers: disk, ...), keyed by (bucket, key, ETag,
 * index): a new version never meets an old one's chunks. Metadata learned
 * or revalidated at the origin is also queued, with the wall-clock time
 * of its validation, for the lower tiers that keep metadata
 * (cache_metablob.h), so that a restarted gateway finds it there.
 *
 * Single-flight: one upstream fetch per missing chunk (and one per object
 * for metadata) however many requests want it; the others register a
 * bc_waiter_t and are woken, each with its own outcome (a chunk
 * reference, or what went wrong), when the fetch ends. A failed fetch
 * wakes all its waiters with the failure; the next request retries.
 *
 * Consistency: bc_cache_invalidate() unlists the object (new requests
 * build a fresh one) and drops its chunks from the tiers; fills of an
 * unlisted object still serve their waiters but are never stored. A
 * chunk whose ETag differs from the object's (the object changed between
 * fetches) is never served with it: waiters get BC_WAIT_RESTART.
 *
 * Versions: a read of one version of a key (GET/HEAD ?versionId=V) has
 * an entry of its own, keyed (bucket, key, V): the cache key of a version
 * is the object's key plus its version id (the current version's entry
 * has none). It is fetched with versionId=V and, a version never
 * changing in S3, is never revalidated. Its chunks are named by ETag like
 * any (bucket, key, ETag, index): a version whose ETag is the current
 * one's shares its chunks. Invalidating a key drops its current entry
 * and every version entry of it (a write through the gateway drops a
 * version only when it deleted it, but telling the cases apart is not
 * worth it: a version read again is one fetch).
 *
 * Unsigned requests (a client without credentials, the gateway without
 * --anonymous: the upstream decides what such a client may read) are
 * waiters with anon set. The fills they start go upstream unsigned. An
 * object is served to them only while it carries a recent "an unsigned
 * fetch of this version succeeded" mark (public_at, set by any unsigned
 * fill the upstream answered with the object); a signed fill never sets
 * it. Without the mark, bc_cache_meta() first makes an unsigned check
 * (a one-byte If-Match GET) and passes the upstream's refusal on. An
 * upstream error answered to a fill is handed only to waiters signed as
 * the fill was; the others look again (BC_WAIT_RECHECK) and start their
 * own.
 *
 * Threads and locks: every function is thread-safe. The cache lock is
 * taken before a tier's; waiters are woken with the cache lock held, so a
 * wake function must only signal.
 */
#ifndef BC_CACHE_H
#define BC_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "chunk/chunk.h"
#include "config/config.h"
#include "s3/s3_sigv4.h"
#include "stats/stats.h"
#include "tier/tier.h"
#include "tier/tier_chain.h"
#include "upstream/upstream.h"
#include "loop/loop.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

typedef struct bc_cache_s  bc_cache_t;
typedef struct bc_object_s bc_object_t;

typedef enum bc_wait_result_e {
	BC_WAIT_PENDING = 0,
	BC_WAIT_CHUNK,      /* w->chunk holds a reference for the waiter */
	BC_WAIT_RECHECK,    /* metadata changed state: ask again */
	BC_WAIT_RESTART,    /* the object changed or was invalidated */
	BC_WAIT_UPSTREAM,   /* the upstream answered an error: pass it on */
	BC_WAIT_FAILED,     /* transport failure: w->err */
	BC_WAIT_FILE,       /* w->fd: the chunk's file (bc_cache_chunk_file) */
} bc_wait_result_t;

typedef struct bc_waiter_s {
	struct bc_waiter_s *next;
	void              (*wake)(void *arg);
	void               *arg;
	/* Outcome, written under the cache lock before wake(). */
	bc_wait_result_t    result;
	bc_chunk_t         *chunk;
	int                 err;          /* BC_E*, for BC_WAIT_FAILED */
	int                 up_status;    /* for BC_WAIT_UPSTREAM */
	bc_buf_t            up_body;      /* owned by the waiter */
	/* Set by the owner: take a chunk while it is still filling
	 * (BC_WAIT_CHUNK as soon as the upstream's headers are in). */
	bool                partial_ok;
	/* Set by the owner: an unsigned request (see the top). */
	bool                anon;
	/* Outcome too: what it waited for came from a lower tier (disk),
	 * not the origin (a chunk, or the metadata it rechecks for). */
	bool                tier_hit;
	/* With a tier hit of a chunk read from a file (a disk tier): that
	 * file, open (the waiter's; bc_waiter_reset/fini close it; take it
	 * by setting -1), and where the chunk's bytes start in it, for
	 * sendfile. -1 otherwise. A chunk kept in memory holds no file. */
	int                 fd;
	uint64_t            fd_off;
	uint64_t            fd_len;       /* BC_WAIT_FILE: the chunk's bytes */
	/* cache-internal */
	void               *list;         /* where it is registered */
	bool                counted;      /* a coalesced wait was counted */
} bc_waiter_t;

/* Metadata of one object version, as the upstream described it. */
typedef struct bc_objmeta_s {
	uint64_t    size;
	char        etag[132];
	time_t      last_modified;
	bc_kvlist_t headers;     /* response headers to replay (ETag,
				    Last-Modified, Content-Type, x-amz-meta-*,
				    Cache-Control, ...) */
} bc_objmeta_t;

typedef struct bc_cache_opts_s {
	const bc_config_t      *cfg;      /* chunk_size, mem_size, meta_ttl,
					     meta_stale, retries, timeouts,
					     upstream */
	bc_origin_t            *origin;   /* where fills come from */
	bc_loop_t              *loop;     /* lower tiers' probes and writes */
	/* next uses from jobs' plans, for the planned and auto policies
	 * (prefetch_jobs.h: bc_jobs_oracle); NULL: none */
	const bc_policy_oracle_t *oracle;
	/* cached listings, dropped with what bc_cache_invalidate drops
	 * (cache_list.h); NULL: none */
	struct bc_cache_list_s   *lists;
} bc_cache_opts_t;

/* Returns 0 and *out, or a negative BC_E* code. */
int  bc_cache_new(const bc_cache_opts_t *o, bc_cache_t **out);
void bc_cache_free(bc_cache_t *c);   /* NULL is a no-op; no fill running */
/* The tiers the cache walks, memory on top: add the lower tiers (disk,
 * Redis; tier_chain.h) before the cache serves. A chunk fill asks them in
 * order before the origin; what the origin brings is queued for them. */
bc_tier_chain_t *bc_cache_tiers(bc_cache_t *c);

void bc_waiter_init(bc_waiter_t *w, void (*wake)(void *), void *arg);
/* Unregisters w if registered, drops a chunk it holds, frees its body. */
void bc_waiter_fini(bc_cache_t *c, bc_waiter_t *w);
/* Readies w for the next wait (keeps wake/arg). w must not be
 * registered; a chunk it held must have been taken. */
void bc_waiter_reset(bc_waiter_t *w);
/* The outcome, read under the cache lock. */
bc_wait_result_t bc_waiter_result(bc_cache_t *c, bc_waiter_t *w);

/* The object for (bucket, key), listed, with a reference for the caller
 * (bc_object_unref). NULL when out of memory. */
bc_object_t *bc_cache_object(bc_cache_t *c, const char *bucket,
    const char *key);
/* The same for version of key (versionId, "Versions" above); version
 * NULL is the current version (bc_cache_object). */
bc_object_t *bc_cache_object_version(bc_cache_t *c, const char *bucket,
    const char *key, const char *version);
void         bc_object_unref(bc_cache_t *c, bc_object_t *o);

#define BC_CACHE_META_ONLY UINT32_MAX   /* bc_cache_meta hint for HEAD */

/*
 * Makes sure o's metadata is known and fresh enough. Returns 0 with *meta
 * filled (a copy the caller finis; *was_cached tells whether it came from
 * the cache), or BC_EAGAIN after registering w (a fetch is under way: the
 * first chunk's ranged GET, chunk hint, or a HEAD when hint is
 * BC_CACHE_META_ONLY, or a revalidation), or a negative code. A first
 * fetch also fills chunk hint; its waiter may end with BC_WAIT_CHUNK for
 * that chunk.
 * Freshness: within meta-ttl of its last validation the metadata is
 * returned; within meta-stale after that it is returned too and
 * revalidated in the background (by a HEAD If-None-Match, or by the
 * If-Match GET of chunk hint when that chunk is not cached); past both,
 * w waits for a revalidation. A validation is a revalidation's 304 or an
 * accepted chunk fetch of the same ETag. An object under an --immutable
 * prefix (bc_config_immutable) is fresh for as long as its metadata is
 * held, its unsigned-fetch mark too: never revalidated.
 * Lower tiers: when the cache holds no metadata for o, the lower tiers
 * that keep metadata are asked first (once while o is listed; w waits,
 * and is told BC_WAIT_RECHECK with tier_hit set when one had it). Their
 * metadata is as old as its validation says (wall clock): fresh, stale
 * or due for a revalidation by the rule above. Chunks then come through
 * bc_cache_chunk (which asks the lower tiers too), never by a first
 * fill. A miss, or a damaged blob, goes on to the origin as above.
 * Unsigned (w->anon): the same, and the object's unsigned-fetch mark must
 * be as fresh (fresh within meta-ttl, served and rechecked in the
 * background within meta-stale after it); else w waits for an unsigned
 * check, which ends with BC_WAIT_UPSTREAM when the upstream refuses.
 */
int  bc_cache_meta(bc_cache_t *c, bc_object_t *o, uint32_t hint,
    bc_waiter_t *w, bc_objmeta_t *meta, bool *was_cached);
void bc_objmeta_fini(bc_objmeta_t *m);

/*
 * Chunk i of o (metadata known, ETag etag). Returns 0 and a reference in
 * *out on a hit (or, for a waiter with partial_ok, a chunk still being
 * filled); without fetch, BC_EINPROGRESS when another request's fetch of
 * it runs; BC_EAGAIN when it is not in memory: with fetch, a fetch
 * runs (one is started unless one already is) and w, when not NULL, is
 * registered on it; BC_ENOSPC when none runs and memory has no room for
 * one (chunks that responses hold fill the bound: read it with
 * bc_cache_passthrough); BC_ECANCELED when o is no longer the current
 * version (restart); or another negative code. *out is NULL unless 0 is
 * returned.
 */
int  bc_cache_chunk(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bool fetch, bc_waiter_t *w, bc_chunk_t **out);

/* Starts a fetch of chunk i of o's version etag unless it is in memory or
 * being fetched (readahead), unsigned when anon, for job (stats.h: its
 * per-job prefetch counters; BC_STATS_JOB_NONE: none). Returns 0, or a
 * negative code as bc_cache_chunk() (BC_ENOSPC: no room). */
int  bc_cache_prefetch(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bool anon, bc_stats_job_id_t job);
/*
 * The prefetcher's entry point by name: fills, with no waiter and of
 * class prefetch, for chunks first..first+n-1 of bucket/key (those the
 * object has), unsigned when anon, for job (as bc_cache_prefetch). An
 * object whose metadata the cache does not hold gets its first fill
 * (metadata and chunk first) instead; its other chunks follow on a later
 * call. Chunks in memory are skipped, fills already running are joined.
 * Returns how many chunks are being filled for the call (0: all in
 * memory), or a negative code.
 */
int  bc_cache_prefetch_key(bc_cache_t *c, const char *bucket,
    const char *key, uint32_t first, uint32_t n, bool anon,
    bc_stats_job_id_t job);
/* Fills running now that were started as prefetches / for clients. */
unsigned bc_cache_fills_running(bc_cache_t *c, bc_origin_class_t cls);
/* The origin's time per chunk fill, smoothed; 0 before the first. */
uint64_t bc_cache_fetch_us(bc_cache_t *c);
/*
 * A sequential reader of o's version etag entered chunk from: starts
 * prefetches of the n chunks after it (its read window, cache_window.h),
 * none past last, unsigned when anon, for job as bc_cache_prefetch; it
 * stops early once the bytes prefetched and not yet read reach the
 * prefetch budget (--prefetch-memory; 0: a quarter of the memory bound).
 * Chunks in memory or being fetched cost nothing. Failures are left to
 * the reads that come.
 */
void bc_cache_read_ahead(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t from, uint32_t last, unsigned n, bool anon,
    bc_stats_job_id_t job);

/*
 * Bytes first..last of o's version etag straight from the upstream, kept
 * nowhere: what a reader does when bc_cache_chunk() answers BC_ENOSPC
 * (memory is full of chunks that responses still hold). A ranged GET with
 * If-Match, in pull mode (upstream.h: read it with bc_exchange_headers
 * and bc_exchange_read; release it when done), unsigned when anon.
 * NULL when it cannot start.
 */
bc_exchange_t *bc_cache_passthrough(bc_cache_t *c, bc_object_t *o,
    const char *etag, uint64_t first, uint64_t last, bool anon,
    bc_exchange_wake_fn wake, void *arg);

/*
 * Asks the lower tier that keeps files (the disk tier) for chunk i of o
 * (version etag) as a file, to send it with sendfile without reading it
 * into memory; for a chunk memory lacks (the caller looked) and no fill
 * brings. Returns 0 when the tier opened it at once: w->fd, w->fd_off,
 * w->fd_len and w->tier_hit set as below, nothing registered. Returns
 * BC_EAGAIN after registering w: woken with
 * BC_WAIT_FILE (w->fd open on the file, the waiter's; the chunk's
 * w->fd_len bytes start at w->fd_off; w->tier_hit set) or BC_WAIT_RECHECK
 * (no file: ask bc_cache_chunk). Returns BC_ENOTSUP when no file is to be
 * had now (no such tier, it is down, a fill of the chunk runs, the file
 * is being written or not indexed yet) and BC_ECANCELED when o changed.
 * A hit may start the chunk's promotion to memory (cache_file.c).
 */
int bc_cache_chunk_file(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bc_waiter_t *w);

/*
 * For a chunk that may still be filling: returns the bytes readable now
 * when more than have, 0 after registering w (woken, BC_WAIT_RECHECK, when
 * more arrive or the fill ends), or BC_EIO when the fill failed.
 */
ssize_t bc_cache_chunk_wait(bc_cache_t *c, bc_chunk_t *ch, size_t have,
    bc_waiter_t *w);

/* ---- warm-ups (prefetch_warm.h; cache_warm.c) ----
 * A warm-up brings objects into one tier of the chain, by its index
 * (bc_tier_chain_find: 0 is memory). Into memory its fills are
 * prefetches the memory policy must admit; into a lower tier they are
 * written to the lower tiers only (transit fills, never kept in memory,
 * within the transit budget). Either way of class prefetch, signed, and
 * waited on by the warm-up's waiter w (its wake must only signal). */

/* Whether tier holds chunk k now (tier.h, has): 1, 0, BC_ENOTSUP (the
 * tier cannot tell), BC_EINVAL (no such tier). Any thread. */
int  bc_cache_warm_has(bc_cache_t *c, size_t tier, const bc_chunk_key_t *k);
/*
 * o's metadata for a warm-up into tier: 0 with *meta (a copy the caller
 * finis: what the cache holds, fresh or not; the chunk fills that follow
 * carry If-Match), or BC_EAGAIN after registering w: the lower tiers are
 * asked first, then a first fill brings chunk 0 with it; w ends with
 * BC_WAIT_CHUNK (chunk 0: w->chunk, the caller's reference), or
 * BC_WAIT_RECHECK (ask again), or the fill's failure. BC_ENOSPC: no fill
 * can start now (memory: the policy declines; lower: the transit budget
 * is full, or there is no lower tier); BC_ECANCELED: o was dropped;
 * BC_EINVAL: no such tier; BC_EIO.
 */
int  bc_cache_warm_meta(bc_cache_t *c, bc_object_t *o, size_t tier,
    bc_waiter_t *w, bc_objmeta_t *meta);
/*
 * Chunk i of o's version etag into tier: 1 when the tier has it already
 * (nothing done); 0 when memory had it and it was queued for the lower
 * tiers (tier > 0; no origin request); BC_EAGAIN after registering w on
 * the fill bringing it (a lower tier is asked before the origin), which
 * ends w with BC_WAIT_CHUNK (stored: in memory if its policy admitted it,
 * queued for the lower tiers) or a failure (BC_WAIT_RESTART: the object
 * changed); BC_ENOSPC, BC_ECANCELED (o is no longer that version),
 * BC_EINVAL, BC_EIO as above.
 */
int  bc_cache_warm_chunk(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, size_t tier, bc_waiter_t *w);

/* Drops (bucket, key) with every version entry of it, or with key NULL
 * every key of bucket starting with prefix (versions too), and the cached
 * listings that could show them (opts.lists). Returns the number of
 * objects unlisted. */
size_t bc_cache_invalidate(bc_cache_t *c, const char *bucket,
    const char *key, const char *prefix);

/* Tier figures for stats. */
uint64_t bc_cache_bytes_held(bc_cache_t *c);
uint64_t bc_cache_bytes_limit(bc_cache_t *c);
uint64_t bc_cache_evictions(bc_cache_t *c);

/* ---- for scale/ (--mem-size auto) ---- */

/* Puts bytes in force as the memory bound (the memory tier's
 * set_capacity: evicts down to it now, in the policy's order; what
 * chunks in use keep above it goes when they are released), the
 * metadata and transit budgets following it. Returns 0, or BC_E2BIG
 * while chunks in use keep usage above the new bound. */
int      bc_cache_set_mem_size(bc_cache_t *c, uint64_t bytes);
/* Bytes the memory bound counts that no eviction can free now: chunks
 * being filled or dropped while still read, and object metadata. */
uint64_t bc_cache_mem_floor(bc_cache_t *c);
/* dataset's share of memory (bc_tier_mem_set_target; 0: none), and the
 * bytes of its chunks memory holds. Datasets are named as
 * bc_policy_dataset_name names them at the configured depth. */
void     bc_cache_set_share(bc_cache_t *c, const char *dataset,
    uint64_t bytes);
uint64_t bc_cache_share_used(bc_cache_t *c, const char *dataset);
/* The origin's chunk fills since the start: bytes brought, time (ns)
 * with at least one body coming (from accepted headers to the fill's
 * end), and the sum (ns) and count of times from a request to its
 * answer's headers. */
void     bc_cache_origin_totals(bc_cache_t *c, uint64_t *bytes,
    uint64_t *busy_ns, uint64_t *ttfb_ns, uint64_t *ttfb_n);

#endif
