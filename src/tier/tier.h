/*
 * tier.h — a cache tier (memory, disk, Redis) behind one ops table, and
 * the base every tier shares: its ops, name, private data, counters and
 * health.
 *
 * Contract (docs/design.md, "Tier ops"): open, a look-up, put (takes its own
 * reference), del, close, capacity and usage; lower tiers that survive a
 * restart (disk, Redis) also keep object metadata (meta_put/meta_get). A SYNC tier (memory)
 * answers lookup() at once, under the caller's lock. The other tiers
 * answer get() asynchronously: get() returns 0 and its callback fires
 * later on the loop thread, never before get() returned, or get() returns
 * a negative code and the callback never fires (libuv's rule). Their put
 * and del are queued and best-effort (tier_chain.h). A tier that fails
 * (Redis down, disk full) is marked down, skipped, counted and retried
 * with backoff; it never fails a client request another tier or the
 * origin can serve. Tiers are thread-safe: every op may be called from
 * any thread. Each tier orders its entries with its own policy instance
 * (policy.h), handing it the caller's context on every event.
 *
 * The base (struct bc_tier_s) is public so that the chain, stats/ and
 * scale/ read every tier the same way; a tier's own state hangs off priv.
 * Its counters and health are atomics: read them with atomic_load, one
 * field at a time (a reader may see two fields from different instants).
 */
#ifndef BC_TIER_H
#define BC_TIER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk/chunk.h"
#include "policy/policy.h"
#include "loop/loop.h"
#include "util/util_error.h"

typedef struct bc_tier_s bc_tier_t;
typedef struct bc_tier_ops_s bc_tier_ops_t;
typedef struct bc_tier_get_s bc_tier_get_t;
typedef struct bc_tier_meta_get_s bc_tier_meta_get_t;

#define BC_TIER_SYNC 1u   /* answers lookup() at once (memory) */

/*
 * Counters every tier keeps, one X line each (name, what it counts) so
 * that stats/ can list them per tier. The tier counts what happens in its
 * own ops (hits to errors); the chain counts what it decides for the
 * tier (skips, queue_drops); bc_tier_mark_down() counts downs.
 */
#define BC_TIER_STATS(X)                                                   \
	X(hits,           "look-ups and gets that found the chunk")        \
	X(misses,         "look-ups and gets that did not")                \
	X(bytes_read,     "chunk bytes those hits returned")               \
	X(writes,         "puts that stored a chunk")                      \
	X(bytes_written,  "bytes those puts stored (as usage counts them)")\
	X(rejects,        "puts refused: not admitted or too big")         \
	X(write_failures, "puts that failed (I/O, connection, memory)")    \
	X(deletes,        "chunks dropped by del, del_object, replacement")\
	X(evictions,      "chunks evicted to make room")                   \
	X(corrupt,        "chunks found damaged on read and dropped")      \
	X(errors,         "gets that failed (not misses)")                 \
	X(skips,          "requests not sent to the tier: it was down")    \
	X(queue_drops,    "queued puts and deletes dropped: queue full")   \
	X(downs,          "transitions from up to down")

typedef struct bc_tier_stats_s {
#define BC_TIER_STAT_FIELD(name, help) _Atomic uint64_t name;
	BC_TIER_STATS(BC_TIER_STAT_FIELD)
#undef BC_TIER_STAT_FIELD
} bc_tier_stats_t;

typedef enum bc_tier_state_e {
	BC_TIER_UP = 0,
	BC_TIER_DOWN = 1,
} bc_tier_state_t;

/* Retry backoff of a down tier: BC_TIER_RETRY_MIN_NS after the first
 * failure, doubling with each failed retry, at most BC_TIER_RETRY_MAX_NS. */
#define BC_TIER_RETRY_MIN_NS (1000000000ull)        /* 1 s */
#define BC_TIER_RETRY_MAX_NS (60ull * 1000000000ull) /* 1 min */

typedef struct bc_tier_health_s {
	_Atomic int      state;          /* bc_tier_state_t */
	_Atomic uint64_t down_since_ns;  /* monotonic; valid while DOWN */
	_Atomic uint64_t failures;       /* consecutive, since last up */
	_Atomic uint64_t retry_at_ns;    /* a DOWN tier's next retry */
	_Atomic int      last_err;       /* BC_E* of the last failure */
} bc_tier_health_t;

struct bc_tier_s {
	const bc_tier_ops_t *ops;
	const char          *name;     /* opts.name, or ops->name */
	void                *priv;     /* the tier's own state */
	bc_tier_stats_t      stats;
	bc_tier_health_t     health;
};

typedef struct bc_tier_opts_s {
	uint64_t                capacity;   /* bytes, overhead included */
	const bc_policy_ops_t  *policy;     /* eviction/admission; NULL: lru */
	/* What the jobs' plans say, for the policy (policy.h; borrowed, it
	 * must outlive the tier); NULL: none. */
	const bc_policy_oracle_t *oracle;
	/* Bytes the cache holds outside this tier (metadata) that count
	 * against the same capacity; may be NULL. */
	_Atomic uint64_t       *external_bytes;
	/* The loop non-SYNC tiers call back on (SYNC tiers ignore it). */
	bc_loop_t              *loop;
	/* The tier's name in logs and stats (borrowed: it must outlive the
	 * tier); NULL: ops->name. */
	const char             *name;
	/* The directory a disk tier keeps its files in (borrowed for open:
	 * the tier copies it); other tiers ignore it. */
	const char             *dir;
} bc_tier_opts_t;

/*
 * The callback of get(): on the loop thread, once per get() that
 * returned 0. status 0: c is the chunk, a reference the callback owns;
 * BC_ENOENT: a miss; another negative code: the tier failed (c NULL).
 * req is the caller's again from the call on (it may free it).
 */
typedef void (*bc_tier_get_cb)(bc_tier_get_t *req, int status,
    bc_chunk_t *c);

/* A get request: caller-owned, it must stay valid from get() until its
 * callback (or get()'s error return). */
struct bc_tier_get_s {
	void                  *data;   /* the caller's; tiers never touch it */
	/* Set by get(); the tier's until the callback. */
	bc_tier_t             *tier;
	const bc_chunk_key_t  *key;
	const bc_policy_ctx_t *ctx;
	/* The chunk's length when the caller knows it (the object's size is
	 * known), 0 when not: a tier that stores no length index may use it
	 * to ask for exactly the chunk's bytes; a chunk found of another
	 * length is a miss. Set by the caller before get(). */
	uint64_t               len_hint;
	bc_tier_get_cb         cb;
	void                  *priv;   /* the tier's per-request state */
	bc_tier_get_t         *next;   /* the tier's, to queue requests */
};

/*
 * A chunk's file, for sendfile without reading it into memory
 * (open_file). The callback: on the loop thread, once per open_file()
 * that returned 0. status 0: req->fd is open on the file (the
 * callback's to close), the chunk's bytes are req->len bytes from
 * req->off, checked as a get checks them; BC_ENOENT: a miss; another
 * negative code: the tier failed (fd -1). req is the caller's again from
 * the call on.
 */
typedef struct bc_tier_file_s bc_tier_file_t;
typedef void (*bc_tier_file_cb)(bc_tier_file_t *req, int status);

/* An open_file request: caller-owned, valid from open_file() until its
 * callback (or open_file()'s error return). */
struct bc_tier_file_s {
	void                  *data;   /* the caller's; tiers never touch it */
	/* The answer, valid in the callback with status 0. */
	int                    fd;
	uint64_t               off, len;
	/* Set by open_file(); the tier's until the callback. */
	bc_tier_t             *tier;
	bc_tier_file_cb        cb;
};

/*
 * Object metadata a tier keeps for a restart (meta_put/meta_get): an
 * opaque blob the cache serialises; tiers never look inside. The callback
 * of meta_get: on the loop thread, once per meta_get() that returned 0.
 * status 0: blob/len are (bucket, key)'s, valid during the callback only
 * (the tier's; copy what is kept); BC_ENOENT: none (blob NULL, len 0);
 * another negative code: the tier failed. req is the caller's again from
 * the call on.
 */
typedef void (*bc_tier_meta_cb)(bc_tier_meta_get_t *req, int status,
    const void *blob, size_t len);

/* A meta_get request: caller-owned, valid from meta_get() until its
 * callback (or meta_get()'s error return). */
struct bc_tier_meta_get_s {
	void               *data;   /* the caller's; tiers never touch it */
	/* Set by meta_get(); the tier's until the callback. */
	bc_tier_t          *tier;
	const char         *bucket, *key;
	bc_tier_meta_cb     cb;
	void               *priv;   /* the tier's per-request state */
};

struct bc_tier_ops_s {
	const char *name;
	unsigned    flags;   /* BC_TIER_SYNC */
	/* Returns 0 and *out, or a negative BC_E* code. */
	int      (*open)(const bc_tier_opts_t *o, bc_tier_t **out);
	/* SYNC tiers: k's chunk as a new reference the caller owns, or NULL;
	 * a hit is the policy's on_hit with ctx. */
	bc_chunk_t *(*lookup)(bc_tier_t *t, const bc_chunk_key_t *k,
	    const bc_policy_ctx_t *ctx);
	/*
	 * Non-SYNC tiers: looks k up for ctx. Returns 0, and cb(req, ...)
	 * fires later on the loop thread (never before get returns); or
	 * returns a negative BC_E* code (BC_ENOENT: a miss known at once)
	 * and cb never fires. k, its strings and ctx must stay valid until
	 * cb; a hit is the policy's on_hit with ctx.
	 */
	int      (*get)(bc_tier_t *t, bc_tier_get_t *req,
	    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
	    bc_tier_get_cb cb);
	/* Offers c (the tier takes its own reference or copies the bytes
	 * when it keeps it), for ctx. Returns 0 when kept (an asynchronous
	 * tier: accepted), BC_E2BIG when the policy did not admit it or it
	 * cannot fit, another negative code on failure. May evict. */
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
	/* Sets the capacity (for scale/) and evicts, in the policy's order,
	 * down to it. Returns 0 when usage fits the new bound, BC_E2BIG when
	 * chunks still in use elsewhere keep it above (the bound is set all
	 * the same; puts are refused until usage fits again). */
	int      (*set_capacity)(bc_tier_t *t, uint64_t bytes);
	/* Bytes actually held, overhead included; chunks evicted but still
	 * referenced by a response count until freed. */
	uint64_t (*usage)(bc_tier_t *t);
	uint64_t (*evictions)(bc_tier_t *t);
	/* The tier's own view of its health (a lost connection), or NULL
	 * when it has none beyond what its base records. */
	bc_tier_state_t (*health)(bc_tier_t *t);
	/*
	 * Optional (NULL: the tier keeps no object metadata). Stores blob
	 * (len bytes, copied before it returns) as (bucket, key)'s metadata,
	 * replacing what it had. Like put for a lower tier: queued and
	 * best-effort; returns 0 when accepted, BC_E2BIG when not admitted
	 * or too big, another negative code on failure. Dropped with the
	 * object's chunks by del_object.
	 */
	int      (*meta_put)(bc_tier_t *t, const char *bucket, const char *key,
	    const void *blob, size_t len);
	/*
	 * Optional, with meta_put. Looks (bucket, key)'s metadata up.
	 * Returns 0, and cb(req, ...) fires later on the loop thread (never
	 * before meta_get returns); or returns a negative code (BC_ENOENT: a
	 * miss known at once) and cb never fires. bucket and key must stay
	 * valid until cb.
	 */
	int      (*meta_get)(bc_tier_t *t, bc_tier_meta_get_t *req,
	    const char *bucket, const char *key, bc_tier_meta_cb cb);
	/*
	 * Optional (NULL: the tier keeps no files). Opens k's file for a
	 * response sent from it (sendfile). Returns 0, and cb(req, ...)
	 * fires later on the loop thread (never before open_file returns);
	 * 1 when it answered at once, req's answer set and cb never fires (a
	 * file it checked before, opened without reading it: an open and an
	 * fstat on the calling thread, as a server sending files does);
	 * or a negative code and cb never fires: BC_ENOENT, a miss known at
	 * once; BC_ENOTSUP, the chunk cannot be answered as a file now
	 * (being written, or not indexed yet: get() answers it). k's
	 * strings and ctx need to stay valid only during the call. A hit is
	 * the policy's on_hit with ctx.
	 */
	int      (*open_file)(bc_tier_t *t, bc_tier_file_t *req,
	    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
	    bc_tier_file_cb cb);
	/* Drops its references; no other op may run on t during or after
	 * it, no get may be in flight. */
	void     (*close)(bc_tier_t *t);
	/*
	 * Optional (NULL: cannot tell). Whether the tier holds k now, as its
	 * own index says, without reading it, ranking it (no policy event)
	 * or counting it: for warm-ups (prefetch_warm.h), which skip what a
	 * tier has. Advisory: a shared tier may have lost it since (Redis
	 * evicts by itself). Any thread; k is read during the call only.
	 */
	bool     (*has)(bc_tier_t *t, const bc_chunk_key_t *k);
};

/* ---- the base (tier.c) ---------------------------------------------- */

/* Readies t's base for ops (opts name, NULL: ops->name) and priv, with
 * zero counters and the tier up. For a tier's open(). */
void bc_tier_init(bc_tier_t *t, const bc_tier_ops_t *ops, const char *name,
    void *priv);
/* Adds n to one of t's counters (BC_TIER_STATS). */
#define BC_TIER_COUNT(t, field, n) \
	atomic_fetch_add_explicit(&(t)->stats.field, (n), memory_order_relaxed)

/*
 * Records a failure (err, a BC_E* code) of t at now_ns (monotonic): the
 * next retry comes after the backoff for its consecutive failures. On the
 * up → down transition only, logs a warning and counts stats.downs.
 * Thread-safe, like the two below.
 */
void bc_tier_mark_down(bc_tier_t *t, int err, uint64_t now_ns);
/* Records that t answered: a down tier comes up (logged), the failure
 * count restarts. */
void bc_tier_mark_up(bc_tier_t *t, uint64_t now_ns);
/*
 * Whether a request should go to t at now_ns: true when it is up; false
 * when its health op says down; for a down tier, true once its retry
 * time came — that caller makes the retry probe, and the retry time moves
 * on by the current backoff so that one caller per period probes (the
 * caller then reports mark_up or mark_down).
 */
bool bc_tier_usable(bc_tier_t *t, uint64_t now_ns);
/* DOWN when t's base or its health op says so. */
bc_tier_state_t bc_tier_health(bc_tier_t *t);
/* The backoff after failures consecutive failures (>= 1). */
uint64_t bc_tier_backoff_ns(uint64_t failures);

/* Generic op calls, for readers that only hold a bc_tier_t. */
static inline uint64_t
bc_tier_usage(bc_tier_t *t)
{
	return t->ops->usage(t);
}

static inline uint64_t
bc_tier_capacity(bc_tier_t *t)
{
	return t->ops->capacity(t);
}

static inline uint64_t
bc_tier_evictions(bc_tier_t *t)
{
	return t->ops->evictions(t);
}

/* t's has op: 1 when it holds k, 0 when not, BC_ENOTSUP when it cannot
 * tell. */
static inline int
bc_tier_has(bc_tier_t *t, const bc_chunk_key_t *k)
{
	if (t->ops->has == NULL)
		return BC_ENOTSUP;
	return t->ops->has(t, k) ? 1 : 0;
}

/* ---- the memory tier (tier_mem.c) ------------------------------------ */

extern const bc_tier_ops_t bc_tier_mem;

/*
 * Memory tier extras (tier_mem.c); t must come from bc_tier_mem.open.
 * The memory tier's put() returns 0 for a chunk it already holds, takes
 * back (counted once) a chunk it dropped while others still held it, and
 * returns BC_EEXIST for a chunk another memory tier still accounts for:
 * a chunk belongs to at most one memory tier at a time. opts.policy NULL
 * means LRU. close() must not run concurrently with other ops. It has no
 * get and no health op (it cannot go down); its counters are the base's,
 * changed under its lock, which bc_tier_mem_stats() reads as one.
 */
typedef struct bc_tier_mem_stats_s {
	uint64_t capacity;
	uint64_t usage;       /* bytes + external: what put() keeps in bound */
	uint64_t bytes;       /* charges of held chunks plus of dropped ones
	                       * still referenced elsewhere */
	uint64_t held_bytes;  /* charges of the chunks in the table */
	uint64_t chunks;      /* chunks in the table */
	uint64_t hits, misses;
	uint64_t inserts;     /* puts that kept a chunk (replacements too):
	                       * stats.writes */
	uint64_t evictions;   /* chunks the policy chose to make room */
	uint64_t rejected;    /* puts that returned BC_E2BIG: stats.rejects */
	uint64_t deleted;     /* chunks dropped by del, del_object, replace:
	                       * stats.deletes */
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
/*
 * The same for a chunk a prefetch is about to bring, named key
 * (bc_policy_key_hash) for the policy, asked with ctx: refused (BC_E2BIG,
 * nothing evicted) when the policy would not admit the chunk now, or when
 * room could be made only by evicting prefetched chunks no client read
 * yet (docs/design.md "Prefetch": a prefetch never evicts a chunk needed
 * sooner, nor another prefetch's unread chunk). Demand fills
 * (bc_tier_mem_reserve) may evict those.
 */
int  bc_tier_mem_reserve_prefetch(bc_tier_t *t, uint64_t bytes, uint64_t key,
    const bc_policy_ctx_t *ctx);

/* Sets dataset's share of the memory tier t (its policy's set_target,
 * through the share layer every memory tier's policy is wrapped in:
 * policy.h, bc_policy_share); 0: no share. Takes effect at the next
 * puts (nothing is evicted now). */
void bc_tier_mem_set_target(bc_tier_t *t, const char *dataset,
    uint64_t bytes);
/* The bytes of dataset's chunks the memory tier t holds, as its shares
 * count them. */
uint64_t bc_tier_mem_share_used(bc_tier_t *t, const char *dataset);

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
