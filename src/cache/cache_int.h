/*
 * cache_int.h — what the cache's files share (not for other modules):
 * the object, fill and cache structs and the calls between
 * cache.c (lookups: metadata, chunks, prefetch, passthrough),
 * cache_object.c (the object table, metadata, invalidation, life),
 * cache_fill.c (single-flight fills from the origin) and
 * cache_waiter.c (who waits on what). The tiers are reached through the
 * tier chain (src/tier/tier_chain.h).
 *
 * Locking: c->mu guards the object table, every object's fields, fills
 * and waiter lists. Tier calls are made with c->mu held (cache lock before
 * tier lock). Fill completions run on the loop thread and take c->mu;
 * exchanges are started with c->mu held (their callbacks run on the loop
 * thread, never before the start returned: upstream.h). A function named
 * bc_*_do_* expects c->mu held.
 *
 * Objects: listed in a chained hash table and an LRU list while the cache
 * knows them. Their metadata counts against the memory bound (the memory
 * tier's external_bytes); when it exceeds an eighth of the bound, the
 * least recently used idle objects are dropped (their chunks stay in the
 * tier, keyed by ETag, and are found again once the metadata is).
 * References: the table holds one while listed, each caller and each fill
 * one more; the object is freed when unlisted and the last one goes.
 */
#ifndef BC_CACHE_INT_H
#define BC_CACHE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "cache/cache_math.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "upstream/upstream.h"
#include "util/util_htab.h"
#include "util/util_list.h"
#include "util/util_time.h"

#define TABLE_MIN     4096
#define OBJ_OVERHEAD  (sizeof(bc_object_t) + 64)

typedef enum bc_fill_kind_e {
	BC_FILL_FIRST,        /* chunk + metadata (object not known yet) */
	BC_FILL_CHUNK,        /* one chunk of a known version */
	BC_FILL_HEAD,         /* metadata only (empty objects) */
	BC_FILL_REVALIDATE,   /* HEAD If-None-Match after meta-ttl */
	BC_FILL_PUBLIC,       /* unsigned one-byte If-Match GET: may an unsigned
			      request read this version? */
	BC_FILL_META_PROBE,   /* metadata asked of the lower tiers before the
			      origin (no exchange; its waiters are the
			      object's meta_waiters) */
} bc_fill_kind_t;

typedef struct bc_fill_s {
	struct bc_fill_s *next;        /* in o->fills */
	bc_cache_t    *c;
	bc_object_t   *o;           /* reference held */
	bc_fill_kind_t    kind;
	bool           anon;        /* sent unsigned, for an unsigned request */
	bool           prefetch;    /* no client has waited on it (yet) */
	bc_stats_job_id_t job;      /* the job a prefetch is for (stats.h) */
	uint32_t       index;
	char           etag[132];   /* the version expected */
	bc_waiter_t   *waiters;
	bool           joined;      /* a waiter has registered before */
	bool           accepted;    /* its headers named the chunk asked for */
	bool           recheck;     /* stored as another chunk than asked */
	bc_chunk_t    *chunk;       /* filling from the headers on (a ref) */
	size_t         woke_at;     /* bytes filled at the last progress wake */
	size_t         charge;      /* bytes of chunk in c->outside_bytes
				       (transit: in c->transit_bytes) */
	/* Memory had no room: the chunk goes to the lower tiers only, its
	 * bytes held outside the memory bound (cache_fill.c, fill_reserve). */
	bool           transit;
	/* A first fill whose chunk, its size known at the headers, found no
	 * room beyond what it had reserved: it keeps nothing, and its
	 * waiters look again (then read around the cache). */
	bool           no_room;
	bc_exchange_t *x;           /* NULL while the lower tiers are asked */
	/* A chunk fill asks the lower tiers first (probe) and starts its
	 * exchange only when none has the chunk. */
	bc_origin_class_t cls;
	bool           probing;
	bc_tier_probe_t probe;
	uint64_t       sent_ns;     /* its exchange started; 0: none */
	bool           flowing;     /* its body is coming (c->org_running) */
	size_t         counted;     /* bytes counted in c->org_bytes */
	bc_tier_meta_probe_t mprobe;   /* BC_FILL_META_PROBE's */
} bc_fill_t;

#define PROGRESS_WAKE (64 * 1024)   /* bytes between progress wakes */
#define PUBLIC_BODY   (64 * 1024)   /* an unsigned check's answer (one
				       byte, or an error) */

struct bc_object_s {
	bc_hnode_t    hnode;                /* in c->table, under the hash
					       of bucket and key (not
					       version) */
	bc_object_t  *lru_prev, *lru_next;  /* most recent at head */
	int           refs;
	bool          listed;
	char         *bucket, *key;
	/* NULL: the key's current version, revalidated by meta-ttl. Else a
	 * version id (GET/HEAD ?versionId=, cache.h "Versions"): its entry
	 * is (bucket, key, version), fetched with that versionId, fresh for
	 * good (a version never changes), its metadata neither asked of nor
	 * kept in the lower tiers (theirs is the current version's). */
	char         *version;
	char         *dataset;   /* bc_policy_dataset_name (policy contexts) */
	bool          meta_valid;
	/* under an --immutable prefix: its metadata, once known, is fresh
	 * until the object is dropped (no revalidation) */
	bool          immutable;
	bc_objmeta_t  meta;
	uint64_t      meta_at_ns;
	size_t        charge;               /* bytes in c->meta_bytes */
	bc_fill_t       *meta_fill;            /* FIRST, HEAD or REVALIDATE */
	bc_waiter_t  *meta_waiters;
	/* When an unsigned fetch of this version last succeeded (0: never
	 * since its metadata was learned): the only thing that lets an
	 * unsigned request be served from the cache. */
	uint64_t      public_at_ns;
	bc_fill_t       *public_fill;          /* the unsigned check running */
	bc_fill_t       *fills;                /* every fill, meta_fill too */
	/* The lower tiers were asked for its metadata (once per listing:
	 * a miss goes to the origin, whose answer is queued for them). */
	bool          meta_probed;
	/* The validation (meta_at_ns) last queued for the lower tiers;
	 * meta_saved false: none. */
	bool          meta_saved;
	uint64_t      meta_saved_ns;
};

struct bc_cache_s {
	pthread_mutex_t        mu;
	bc_htab_t              table;         /* bc_object_t.hnode */
	size_t                 nobjects;
	bc_object_t           *lru_head, *lru_tail;
	bc_tier_chain_t       *tiers;
	bc_tier_t             *mem;           /* the top of tiers */
	_Atomic uint64_t       meta_bytes;    /* object metadata */
	/* Bytes held outside the memory tier that count against its bound:
	 * metadata plus chunks being filled (the tier's external_bytes). */
	_Atomic uint64_t       outside_bytes;
	/* Chunks of transit fills (cache_fill.c), from their reservation
	 * until the last reference goes (their on_free): at most
	 * bc_cache_transit_max(). */
	_Atomic uint64_t       transit_bytes;
	uint64_t               cs, meta_ttl_ns, meta_stale_ns;
	/* the memory bound in force (bc_cache_set_mem_size moves it) */
	_Atomic uint64_t       mem_size;
	/* The origin's chunk fills, for scale/ (bc_cache_origin_totals):
	 * bodies coming and since when (c->mu), time with at least one
	 * coming, bytes they brought, times to their headers. */
	unsigned               org_running;
	uint64_t               org_since_ns, org_busy_ns;
	_Atomic uint64_t       org_bytes, org_ttfb_ns, org_ttfb_n;
	/* fills running, by the class they started with (the prefetcher's
	 * concurrency budget and its yielding to demand read these) */
	_Atomic unsigned       inflight[2];
	/* the origin's time per chunk fill, smoothed (1/8 per fill) */
	_Atomic uint64_t       fetch_us;
	/* What a first fill reserves before the object's size is known
	 * (c->mu): the first chunks seen lately, smoothed (1/8 per fill),
	 * within [BC_FIRST_GUESS_MIN, cs]; BC_FIRST_GUESS_INIT at start.
	 * The headers true it up (cache_fill.c, fill_headers). */
	uint64_t               first_guess;
	bc_cache_opts_t        o;
};

#define BC_FIRST_GUESS_MIN  (4u << 10)
#define BC_FIRST_GUESS_INIT (64u << 10)

/* The transit budget: half of mem_size, at least 8 chunks. */
static inline uint64_t
bc_cache_transit_max(const bc_cache_t *c)
{
	uint64_t m = atomic_load(&c->mem_size);

	return m / 2 > 8 * c->cs ? m / 2 : 8 * c->cs;
}

/* The policy context of an event on o's chunks. No jobs are known yet:
 * the dataset is the bucket. */
static inline bc_policy_ctx_t
bc_cache_policy_ctx(const bc_object_t *o, bool prefetch)
{
	bc_policy_ctx_t ctx = { bc_mono_ns(), NULL, o->dataset, prefetch };

	return ctx;
}

/* c->mu held: whether a lower tier's chunk of len bytes can be o's chunk
 * i at the chunk size in force. A tier filled under another
 * --chunk-size keeps chunks of other lengths (and offsets) under the
 * same names: those are not used (counted, fetched again). Unknown
 * metadata: nothing to check against. */
static inline bool
bc_cache_tier_len_ok(const bc_cache_t *c, const bc_object_t *o, uint32_t i,
    uint64_t len)
{
	if (!o->meta_valid || len == bc_chunk_len(i, o->meta.size, c->cs))
		return true;
	BC_STATS_INC(cache_tier_mismatches);
	return false;
}

/* ---- cache_waiter.c (c->mu held) ---- */

/* Registers w on *head; coalesced when w joins a fetch another request
 * is already waiting on (o: for the stats). */
void bc_waiter_add(bc_object_t *o, bc_waiter_t **head, bc_waiter_t *w,
    bool coalesced);
/* Ends every waiter on head with result (and chunk, error, upstream
 * answer as the result needs) and wakes it. */
void bc_waiters_end(bc_waiter_t **head, bc_wait_result_t result,
    bc_chunk_t *chunk, int err, int up_status, const uint8_t *body,
    size_t len);
/* Ends the waiters of head whose signedness is anon with the origin's
 * answer (up_status, body), the others with BC_WAIT_RECHECK. */
void bc_waiters_end_upstream(bc_waiter_t **head, bool anon, int up_status,
    const uint8_t *body, size_t len);
/* Hands ch, still filling, to the waiters that take partial chunks. */
void bc_waiters_give_partial(bc_waiter_t **head, bc_chunk_t *ch);

/* ---- cache_object.c (c->mu held) ---- */

int  bc_objmeta_copy(bc_objmeta_t *dst, const bc_objmeta_t *src);
/* c->mu held: the fill bringing o's chunk i of version etag (a chunk
 * fill or the first fill), or NULL. */
bc_fill_t *bc_object_do_chunk_fill(bc_object_t *o, const char *etag,
    uint32_t i);
/* o's metadata changed size: its charge against the bound follows. */
void bc_object_do_recharge(bc_cache_t *c, bc_object_t *o);
/* Takes o out of the table (its fills go on; waiters restart). */
void bc_object_do_unlist(bc_cache_t *c, bc_object_t *o);
void bc_object_do_unref(bc_cache_t *c, bc_object_t *o);
/*
 * o's metadata was just learned from the origin (learned) or revalidated
 * there (meta_at_ns is now): queues it, with the wall-clock time, for the
 * lower tiers that keep metadata (cache_metablob.h), when o is listed and
 * the chain has lower tiers. A revalidation within a quarter of meta-ttl
 * of the validation last queued is not queued again: the lower tiers'
 * copy is then at most that much older than the truth, so a restarted
 * gateway revalidates at most that much sooner.
 */
void bc_object_do_persist(bc_cache_t *c, bc_object_t *o, bool learned);
/*
 * A lower tier held o's metadata: blob (len bytes). Decodes it and makes
 * it o's, as old as its validation (wall clock) says: fresh within
 * meta-ttl, stale within meta-stale after that, else due for a
 * revalidation before it is served (a time ahead of this clock by more
 * than a second counts as that old too). Returns 0, or BC_EPROTO for a
 * blob that does not decode or names a size past what the cache counts
 * in chunks (counted, o unchanged).
 */
int  bc_object_do_restore(bc_cache_t *c, bc_object_t *o, const void *blob,
    size_t len);

/* ---- cache_fill.c ---- */

/* The origin request for o: a HEAD, or a GET of bytes first..last (the
 * whole object when first is BC_FETCH_WHOLE), with cond ("If-Match", ...)
 * and etag, or cond NULL; unsigned when anon. */
void bc_fill_fetch_init(bc_fetch_t *f, const bc_object_t *o, bool head,
    uint64_t first, uint64_t last, const char *cond, const char *etag,
    bool anon);
/* c->mu held: starts a fill of kind for o (chunk index), of class cls,
 * unsigned when anon. Returns 0 and *out, BC_ENOSPC when memory has no
 * room for its chunk (nothing started), or BC_EIO when the exchange could
 * not start. */
int  bc_fill_do_start(bc_cache_t *c, bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, bool anon, bc_origin_class_t cls, bc_fill_t **out);
/* c->mu held: the same for a warm-up into the lower tiers (cache_warm.c):
 * a chunk or first fill of class prefetch, signed, run as a transit fill
 * whatever room memory has (its chunk written to the lower tiers only,
 * charged to the transit budget, never kept in memory). BC_ENOSPC when
 * there are no lower tiers or the transit budget has no room now. */
int  bc_fill_do_start_lower(bc_cache_t *c, bc_object_t *o,
    bc_fill_kind_t kind, uint32_t index, bc_fill_t **out);
/*
 * c->mu held: o has no metadata and no metadata fill; asks the lower tiers
 * for it (BC_FILL_META_PROBE, which becomes o->meta_fill; o->meta_probed
 * is set whatever comes of it). When the probe ends, on the loop thread,
 * o has the metadata a tier held (bc_object_do_restore), or not, and
 * o->meta_waiters are told to look again (BC_WAIT_RECHECK; those of a hit
 * with tier_hit set). A probe that no client joined and that was made for
 * a prefetch (cls, for job, of chunk hint, unsigned when anon) goes on as
 * bc_cache_prefetch_key would. Returns 0, or a negative code
 * (BC_ENOENT: no lower tier can be asked now) with nothing started.
 */
int  bc_fill_do_probe_meta(bc_cache_t *c, bc_object_t *o, uint32_t hint,
    bool anon, bc_origin_class_t cls, bc_stats_job_id_t job);

#endif
