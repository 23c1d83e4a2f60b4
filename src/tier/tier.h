/*
 * tier.h — a cache tier (memory, disk, Redis) behind one ops table.
 *
 * Contract (DESIGN.md, "Tier ops"): open, a look-up, put (takes its own
 * reference), del, close, plus capacity and usage. A SYNC tier (memory)
 * answers lookup() at once; the other tiers' asynchronous get comes with
 * them. A tier that fails (Redis down, disk full) reports an error to the
 * caller, which skips it; it never fails a client request another tier or
 * the upstream can serve. Tiers are thread-safe: every op may be called
 * from any thread. Each tier orders its entries with its own policy
 * instance (policy.h), handing it the caller's context on every event.
 */
#ifndef BC_TIER_H
#define BC_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache_chunk.h"
#include "policy/policy.h"

typedef struct bc_tier_s bc_tier_t;

#define BC_TIER_SYNC 1u   /* answers lookup() at once (memory) */

typedef struct bc_tier_opts_s {
	uint64_t                capacity;   /* bytes, overhead included */
	const bc_policy_ops_t  *policy;     /* eviction/admission; NULL: lru */
	/* Bytes the cache holds outside this tier (metadata) that count
	 * against the same capacity; may be NULL. */
	_Atomic uint64_t       *external_bytes;
} bc_tier_opts_t;

typedef struct bc_tier_ops_s {
	const char *name;
	unsigned    flags;   /* BC_TIER_SYNC */
	/* Returns 0 and *out, or a negative BC_E* code. */
	int      (*open)(const bc_tier_opts_t *o, bc_tier_t **out);
	/* SYNC tiers: k's chunk as a new reference the caller owns, or NULL;
	 * a hit is the policy's on_hit with ctx. */
	bc_chunk_t *(*lookup)(bc_tier_t *t, const bc_chunk_key_t *k,
	    const bc_policy_ctx_t *ctx);
	/* Offers c (the tier takes its own reference when it keeps it),
	 * for ctx. Returns 0 when kept, BC_E2BIG when the policy did not
	 * admit it or it cannot fit, another negative code on failure. May
	 * evict. */
	int      (*put)(bc_tier_t *t, bc_chunk_t *c,
	    const bc_policy_ctx_t *ctx);
	/* Drops k if present. Returns 0 or BC_ENOENT. */
	int      (*del)(bc_tier_t *t, const bc_chunk_key_t *k);
	/* Drops every chunk of (bucket, key) — any ETag — or, when key is
	 * NULL, every chunk of bucket whose key starts with prefix. Returns
	 * the number of chunks dropped. */
	size_t   (*del_object)(bc_tier_t *t, const char *bucket,
	    const char *key, const char *prefix);
	uint64_t (*capacity)(bc_tier_t *t);
	/* Bytes actually held, overhead included; chunks evicted but still
	 * referenced by a response count until freed. */
	uint64_t (*usage)(bc_tier_t *t);
	uint64_t (*evictions)(bc_tier_t *t);
	void     (*close)(bc_tier_t *t);   /* drops its references */
} bc_tier_ops_t;

extern const bc_tier_ops_t bc_tier_mem;

/*
 * Memory tier extras (tier_mem.c); t must come from bc_tier_mem.open.
 * The memory tier's put() returns 0 for a chunk it already holds, takes
 * back (counted once) a chunk it dropped while others still held it, and
 * returns BC_EEXIST for a chunk another memory tier still accounts for:
 * a chunk belongs to at most one memory tier at a time. opts.policy NULL
 * means LRU. close() must not run concurrently with other ops.
 */
typedef struct bc_tier_mem_stats_s {
	uint64_t capacity;
	uint64_t usage;       /* bytes + external: what put() keeps in bound */
	uint64_t bytes;       /* charges of held chunks plus of dropped ones
	                       * still referenced elsewhere */
	uint64_t held_bytes;  /* charges of the chunks in the table */
	uint64_t chunks;      /* chunks in the table */
	uint64_t hits, misses;
	uint64_t inserts;     /* puts that kept a chunk (replacements too) */
	uint64_t evictions;   /* chunks the policy chose to make room */
	uint64_t rejected;    /* puts that returned BC_E2BIG */
	uint64_t deleted;     /* chunks dropped by del, del_object, replace */
} bc_tier_mem_stats_t;

/*
 * Makes room for bytes that are about to be held outside the table (a
 * chunk being filled) and adds them to opts.external_bytes (which must
 * not be NULL), so the bound covers them from now on: evicts chunks no
 * one else holds, in the policy's order, until usage + bytes fits the
 * capacity. Returns 0, or BC_E2BIG, changing nothing, when the chunks in
 * use leave too little room. The caller subtracts the bytes from
 * external_bytes when it no longer holds them.
 */
int  bc_tier_mem_reserve(bc_tier_t *t, uint64_t bytes);

/* Fills *out with one consistent snapshot (taken under t's lock). */
void bc_tier_mem_stats(bc_tier_t *t, bc_tier_mem_stats_t *out);

/* t's byte account (stats.bytes). It outlives t for as long as chunks t
 * dropped are still referenced, so it can show those bytes going to zero
 * after close. bc_tier_mem_acct_ref() returns a new reference the caller
 * releases with bc_tier_mem_acct_unref() (NULL is a no-op). */
typedef struct bc_tier_mem_acct_s bc_tier_mem_acct_t;
bc_tier_mem_acct_t *bc_tier_mem_acct_ref(bc_tier_t *t);
uint64_t            bc_tier_mem_acct_bytes(const bc_tier_mem_acct_t *a);
void                bc_tier_mem_acct_unref(bc_tier_mem_acct_t *a);

#endif
