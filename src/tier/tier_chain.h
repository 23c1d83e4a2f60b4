/*
 * tier_chain.h — the ordered tiers the cache walks: the top (memory, a
 * SYNC tier) first, then the lower tiers (disk, Redis) in the order a
 * miss asks them.
 *
 * Callbacks: a probe made on the loop thread is called back after it
 * returned. One made from another thread is called back on the loop,
 * which may be before the call has returned to its thread: a caller that
 * writes its own state after the call holds a lock the callback takes
 * (the cache's mu) across both.
 *
 * Reads: bc_tier_chain_lookup() asks the top at once (under the caller's
 * lock). On a miss, bc_tier_chain_probe() asks the lower tiers in order,
 * on the loop thread: a tier that is down and not yet due for a retry is
 * skipped (stats.skips); a tier that fails is marked down and the probe
 * goes on to the next; the first hit wins. A probe never fails because a
 * tier failed: it ends with a chunk or BC_ENOENT, and the caller fills
 * from the origin. After a hit the caller promotes the chunk through the
 * normal put (bc_tier_chain_promote: the top and the tiers above the one
 * that answered).
 *
 * Metadata: lower tiers that keep object metadata (meta_put/meta_get)
 * get it queued like puts; bc_tier_chain_meta_probe() asks them like a
 * probe asks for chunks.
 *
 * Writes: the top's put, del and del_object run at once and their result
 * is returned. The lower tiers' are queued, one entry per tier, and run
 * in order on the loop thread, best-effort: a full queue drops the entry
 * (stats.queue_drops of its tier, and bc_tier_chain_drops), a tier down
 * when its entry is queued or run is skipped (stats.skips), a failure
 * marks the tier down. Queued puts hold a chunk reference (memory stays
 * charged until they ran), bounded by the queue's length. Chunk keys
 * carry the ETag, so a chunk's delete that comes late, or is dropped, can
 * never let a tier serve stale bytes: a new version of an object has
 * other keys, and the cache asks only for the version its metadata names.
 * Object metadata is keyed by (bucket, key) alone, though, and names the
 * ETag whose chunks are read: an object's delete (del_object: writes
 * through the gateway, invalidations) is therefore never dropped for a
 * full queue, and runs on a down tier too (a disk tier drops index
 * entries without writing); only running out of memory, or the loop
 * stopping, loses one.
 *
 * Threads: tiers are added before the chain is used; after that every
 * function is thread-safe unless it says otherwise. The chain owns the
 * tiers added to it and closes them in _free. Lock order: the caller's
 * (cache) lock, then the chain's queue lock or a tier's lock, never both.
 */
#ifndef BC_TIER_CHAIN_H
#define BC_TIER_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "tier/tier.h"
#include "loop/loop.h"

typedef struct bc_tier_chain_s bc_tier_chain_t;
typedef struct bc_tier_probe_s bc_tier_probe_t;
typedef struct bc_tier_meta_probe_s bc_tier_meta_probe_t;

#define BC_TIER_CHAIN_MAX       8      /* tiers in one chain */
#define BC_TIER_CHAIN_QUEUE_MAX 1024   /* default bound of queued entries */

/*
 * The callback of a probe, on the loop thread, once per probe that
 * returned 0. status 0: c is the chunk (a reference the callback owns)
 * and from the index of the tier that had it; BC_ENOENT: no lower tier
 * had it (c NULL, from 0). req is the caller's again from the call on.
 */
typedef void (*bc_tier_probe_cb)(bc_tier_probe_t *req, int status,
    bc_chunk_t *c, size_t from);

/* A probe: caller-owned, valid from bc_tier_chain_probe() until its
 * callback. The key and context are copied into it. */
struct bc_tier_probe_s {
	void             *data;     /* the caller's; the chain never touches it */
	/* The chain's, from the probe until the callback. */
	bc_tier_chain_t  *chain;
	bc_tier_probe_cb  cb;
	size_t            next;     /* the next tier to ask */
	size_t            asked;    /* the tier get is waiting on */
	bc_chunk_key_t    key;      /* copies, in strs */
	uint64_t          len_hint; /* the caller's: the get's (tier.h) */
	bc_policy_ctx_t   ctx;
	char             *strs;
	bc_tier_get_t     get;
};

/*
 * The callback of a metadata probe, on the loop thread, once per probe
 * that returned 0. status 0: blob/len are the metadata (valid during the
 * callback only) from the tier at index from; BC_ENOENT: no lower tier
 * had any (blob NULL, from 0). req is the caller's again from the call on.
 */
typedef void (*bc_tier_meta_probe_cb)(bc_tier_meta_probe_t *req, int status,
    const void *blob, size_t len, size_t from);

/* A metadata probe: caller-owned, valid from bc_tier_chain_meta_probe()
 * until its callback. bucket and key are copied into it. */
struct bc_tier_meta_probe_s {
	void                 *data;   /* the caller's */
	/* The chain's, from the probe until the callback. */
	bc_tier_chain_t      *chain;
	bc_tier_meta_probe_cb cb;
	size_t                next, asked;
	const char           *bucket, *key;   /* copies, in strs */
	char                 *strs;
	bc_tier_meta_get_t    get;
};

/* An empty chain whose queued work and probes run on loop (NULL: a chain
 * with a SYNC top only). NULL when out of memory. */
bc_tier_chain_t *bc_tier_chain_new(bc_loop_t *loop);
/* Waits until the queued work ran (bc_tier_chain_flush), then closes the
 * tiers, lowest first. No probe may be in flight. NULL is a no-op. */
void bc_tier_chain_free(bc_tier_chain_t *ch);
/*
 * Appends t, which the chain owns from then on. Not thread-safe: before
 * the chain is used. Returns 0; BC_EINVAL when t cannot take that place
 * (the first tier must be SYNC with lookup; the others need get, and the
 * chain a loop); BC_E2BIG past BC_TIER_CHAIN_MAX tiers. On an error the
 * caller still owns t.
 */
int  bc_tier_chain_add(bc_tier_chain_t *ch, bc_tier_t *t);
/* Opens a tier of ops with o and appends it. Returns 0, or open's or
 * add's error (nothing then stays open). */
int  bc_tier_chain_open(bc_tier_chain_t *ch, const bc_tier_ops_t *ops,
    const bc_tier_opts_t *o);
/* Bounds the queued lower-tier entries (default BC_TIER_CHAIN_QUEUE_MAX;
 * at least 1). */
void bc_tier_chain_set_queue_max(bc_tier_chain_t *ch, size_t n);

/* The tiers, for stats and scale/: count, the i-th (i < count), the top
 * (NULL while empty), and the index of the one named name or BC_ENOENT. */
size_t     bc_tier_chain_count(const bc_tier_chain_t *ch);
bc_tier_t *bc_tier_chain_at(const bc_tier_chain_t *ch, size_t i);
bc_tier_t *bc_tier_chain_top(const bc_tier_chain_t *ch);
int        bc_tier_chain_find(const bc_tier_chain_t *ch, const char *name);

/* The top's lookup: k's chunk as a reference the caller owns, or NULL. */
bc_chunk_t *bc_tier_chain_lookup(bc_tier_chain_t *ch, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx);
/*
 * Asks the lower tiers for k, for ctx (see the top). Returns 0, and
 * cb(req, ...) fires later on the loop thread, never from inside this
 * call; or returns a negative code and cb never fires: BC_ENOENT when no lower
 * tier can be asked now (none, or all down: a miss known at once),
 * BC_ENOMEM, or bc_loop_call's BC_ECANCELED once the loop stops. k, ctx
 * and their strings are borrowed for the call only. A probe's clock is
 * the later of ctx->now_ns and bc_mono_ns().
 */
int  bc_tier_chain_probe(bc_tier_chain_t *ch, bc_tier_probe_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_probe_cb cb);

/* Puts c into the top at once (its result is returned: 0, BC_E2BIG when
 * not admitted, ...) and queues it for every lower tier, whatever the
 * top did. c must be complete; the caller keeps its reference. */
int  bc_tier_chain_put(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx);
/* The same for a chunk a probe found in tier from: the top at once, the
 * tiers between queued; from itself and the tiers below untouched. */
int  bc_tier_chain_promote(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx, size_t from);
/* Drops k from the top at once (0 or BC_ENOENT) and queues its drop from
 * the lower tiers. */
int  bc_tier_chain_del(bc_tier_chain_t *ch, const bc_chunk_key_t *k);
/* The tiers' del_object (tier.h): the top at once (returns the number of
 * chunks it dropped), the lower tiers queued, past the queue's bound and
 * whether they are up or down (see the top). */
size_t bc_tier_chain_del_object(bc_tier_chain_t *ch, const char *bucket,
    const char *key, const char *prefix);
/* Queues blob (len bytes, copied) as (bucket, key)'s metadata for every
 * lower tier that has meta_put (tier.h): best-effort like a put (a full
 * queue drops it, a down tier skips it, a failure marks the tier down). */
void bc_tier_chain_meta_put(bc_tier_chain_t *ch, const char *bucket,
    const char *key, const void *blob, size_t len);
/*
 * Asks the lower tiers that have meta_get, in order, for (bucket, key)'s
 * metadata, as bc_tier_chain_probe() asks for chunks: a down tier not yet
 * due for a retry is skipped (stats.skips), a failing one is marked down
 * and the probe goes on, the first hit wins; the clock is bc_mono_ns().
 * Returns 0 and cb fires later on the loop thread (never from inside
 * this call), or a negative code and cb never fires: BC_ENOENT when no such
 * tier can be asked now, BC_ENOMEM, BC_ECANCELED once the loop stops.
 * bucket and key are borrowed for the call only.
 */
int  bc_tier_chain_meta_probe(bc_tier_chain_t *ch, bc_tier_meta_probe_t *req,
    const char *bucket, const char *key, bc_tier_meta_probe_cb cb);
/* Tier i's set_capacity (tier.h), at once. BC_EINVAL for no such tier
 * or one without set_capacity. */
int  bc_tier_chain_set_capacity(bc_tier_chain_t *ch, size_t i,
    uint64_t bytes);

/* Waits until the queue is empty and none of its entries runs (entries
 * queued meanwhile are waited for too). Not on the loop thread; the loop
 * must be running. */
void     bc_tier_chain_flush(bc_tier_chain_t *ch);
/* Entries queued now, and dropped since the chain was made. */
size_t   bc_tier_chain_queued(bc_tier_chain_t *ch);
uint64_t bc_tier_chain_drops(bc_tier_chain_t *ch);

/* Queues c's put for every lower tier, not the top: a chunk memory had
 * no room for (the cache's transit fills). */
void bc_tier_chain_put_lower(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx);

/*
 * Asks the first lower tier that keeps files (ops->open_file: the disk
 * tier), if it is up, for k's file (tier.h, bc_tier_file_t): returns 0
 * and cb fires later on the loop thread, or a negative code and cb never
 * fires (BC_ENOTSUP: no such tier, it is down, or it cannot answer this
 * chunk as a file now; BC_ENOENT: it lacks the chunk). Any thread; k and
 * ctx are read during the call only. A tier that is down is left to the
 * probes, which retry it.
 */
int bc_tier_chain_open_file(bc_tier_chain_t *ch, bc_tier_file_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_file_cb cb);

#endif
