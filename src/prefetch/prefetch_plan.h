/*
 * prefetch_plan.h — a plan: one job's key order for one epoch of one
 * bucket (docs/design.md "Plans"), stored compactly and immutable once built.
 *
 * Body format: one key per line, as stored in S3 (not percent-encoded);
 * a CR before LF is dropped, empty lines are skipped; every key must pass
 * bc_s3_hint_key_ok (1..1024 bytes, no NUL, no "." or ".." segment), so a
 * key holding CR or LF cannot be planned. A body starting with the gzip
 * magic (1f 8b) is gunzipped first. A key may appear more than once
 * (sampling with replacement).
 *
 * Bounds: BC_PLAN_MAX_KEYS keys and BC_PLAN_MAX_BYTES bytes of (gunzipped)
 * body; at least one key.
 *
 * Memory: one arena of the keys' bytes (each NUL-terminated), a uint32
 * offset per key, a uint32 "next occurrence of the same key" per key, and
 * an open-addressing table of uint32 first positions at load <= 1/2:
 * about key length + 1 + 8 + 8..16 bytes a key (bc_plan_memory).
 *
 * Threads: a builder belongs to one thread. A built plan is immutable:
 * any thread may read it while it holds a reference; refs are atomic.
 */
#ifndef BC_PREFETCH_PLAN_H
#define BC_PREFETCH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_PLAN_MAX_KEYS   (4u << 20)      /* 4,194,304 keys */
#define BC_PLAN_MAX_BYTES  (256u << 20)    /* body bytes, after gunzip */
#define BC_PLAN_NONE       UINT32_MAX      /* "no position" */

typedef struct bc_plan_s bc_plan_t;
typedef struct bc_plan_builder_s bc_plan_builder_t;

/* A new, empty builder; NULL when out of memory. */
bc_plan_builder_t *bc_plan_builder_new(void);
/*
 * Feeds the next n bytes of the body (any split). Returns 0, BC_EINVAL
 * (malformed: a bad key, a corrupt gzip stream), BC_E2BIG (over a bound)
 * or BC_ENOMEM, with a one-line reason in err; after an error the builder
 * only accepts bc_plan_builder_free.
 */
int bc_plan_builder_feed(bc_plan_builder_t *b, const void *data, size_t n,
    char *err, size_t errlen);
/*
 * Ends the body: on 0, *out is a new plan (one reference, the caller's).
 * BC_EINVAL for an empty plan or a truncated gzip stream; as feed
 * otherwise. The builder is spent either way: free it.
 */
int bc_plan_builder_finish(bc_plan_builder_t *b, bc_plan_t **out,
    char *err, size_t errlen);
void bc_plan_builder_free(bc_plan_builder_t *b);
/* Bytes b holds on the heap now (its keys, their offsets, the gunzip
 * buffer), itself included: what a plan being received costs. */
size_t bc_plan_builder_memory(const bc_plan_builder_t *b);

/* The three calls above on a whole body. */
int bc_plan_parse(const void *body, size_t n, bc_plan_t **out, char *err,
    size_t errlen);

void bc_plan_ref(bc_plan_t *p);
/* Drops a reference; the last one frees the plan. NULL: no-op. */
void bc_plan_unref(bc_plan_t *p);

/* Number of keys (positions), >= 1. */
uint32_t bc_plan_len(const bc_plan_t *p);
/* The key at position i < len: NUL-terminated, lives as long as p;
 * *len (when not NULL) its length. */
const char *bc_plan_key(const bc_plan_t *p, uint32_t i, size_t *len);
/* The first position >= from holding key (len bytes), or BC_PLAN_NONE.
 * Cost: one hash probe plus a walk over the key's earlier occurrences. */
uint32_t bc_plan_find(const bc_plan_t *p, const char *key, size_t len,
    uint32_t from);
/* Bytes the plan holds on the heap, itself included. */
size_t bc_plan_memory(const bc_plan_t *p);

/*
 * Indexes p's keys by the policy's name for their first chunk,
 * bc_policy_key_hash(bucket, key, 0) (policy.h), so the planned policy's
 * oracle can ask for a chunk's next use (bc_plan_find_hash). Call it before
 * p is shared; a second call does nothing. 4 bytes a slot, two slots a
 * key. Returns 0 or BC_ENOMEM (p then has no such index).
 */
int      bc_plan_index_hashes(bc_plan_t *p, const char *bucket);
/* The first position >= from whose key's first-chunk name is h, or
 * BC_PLAN_NONE (also when p has no such index). */
uint32_t bc_plan_find_hash(const bc_plan_t *p, uint64_t h, uint32_t from);

#endif
