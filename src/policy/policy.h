/*
 * policy.h — eviction and admission policies behind one ops table.
 *
 * A tier owns one policy instance and calls it with the tier's lock held
 * (so a policy needs no locking of its own). The policy orders the tier's
 * entries through a bc_policy_node_t each entry embeds; it never frees,
 * stores or fetches anything (docs/design.md, "Policy ops"). A tier maps a
 * node back to its entry with BC_POLICY_ENTRY.
 *
 * Every event but on_remove carries a context: when it happens, which job
 * and dataset it is for, and whether it is a prefetch rather than a
 * client's demand. Policies that do not care ignore it (lru uses none).
 */
#ifndef BC_POLICY_H
#define BC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/util_hash.h"
#include "util/util_list.h"

typedef struct bc_policy_s bc_policy_t;
typedef struct bc_policy_node_s bc_policy_node_t;
typedef struct bc_policy_ops_s bc_policy_ops_t;

/* Embedded in each tier entry. The tier sets size, fetch_us and key
 * before admit/on_insert and leaves the rest to the policy: link, word,
 * aux and idx are the policy's while the node is inserted (between
 * on_insert and on_remove) and the tier's own otherwise (a zeroed link
 * is fine before on_insert). A policy that keeps nodes on a list leaves
 * link self-linked after on_remove (bc_list_remove). One exception: a
 * tier may insert a node with key 0 (not known yet: the disk tier's files
 * indexed before their headers are read) and set key once, later, while
 * it is inserted; policies read key afresh at each event and keep no
 * structure ordered by the key of an entry no plan knows. */
struct bc_policy_node_s {
	bc_list_t         link;
	uint64_t          word;       /* the policy's (a score, a stamp) */
	uint64_t          aux;        /* the policy's (a sequence, flags) */
	size_t            idx;        /* the policy's (a heap position) */
	uint64_t          size;       /* bytes the entry holds */
	uint64_t          fetch_us;   /* what fetching it cost */
	uint64_t          key;        /* bc_policy_key_hash() of the entry */
	uint16_t          share;      /* the share layer's (its dataset) */
};

/* The hash that names a chunk to policies and plans: FNV-1a (util_hash.h)
 * over bucket's bytes and its NUL, key's bytes and its NUL, then index as
 * 4 bytes little-endian. The ETag is not part of it: a plan names objects,
 * not versions. Whoever knows a plan's (bucket, key, chunk index) computes
 * the same value the tier stores in bc_policy_node_t.key. */
static inline uint64_t
bc_policy_key_hash(const char *bucket, const char *key, uint32_t index)
{
	unsigned char ix[4] = { (unsigned char)index,
	    (unsigned char)(index >> 8), (unsigned char)(index >> 16),
	    (unsigned char)(index >> 24) };
	uint64_t h = bc_hash(BC_HASH_INIT, bucket, strlen(bucket) + 1);

	h = bc_hash(h, key, strlen(key) + 1);
	return bc_hash(h, ix, sizeof(ix));
}

/* The entry of type T whose member M is node n. */
#define BC_POLICY_ENTRY(n, T, M) BC_CONTAINER_OF(n, T, M)

/* What an event is about. Strings are borrowed for the call only. */
typedef struct bc_policy_ctx_s {
	uint64_t    now_ns;     /* monotonic (bc_mono_ns) */
	const char *job;        /* the job asking; NULL: none known */
	const char *dataset;    /* the dataset (its bucket); NULL: unknown */
	bool        prefetch;   /* a prefetch, not a client's read */
} bc_policy_ctx_t;

/* Bytes of a dataset's name, NUL included. */
#define BC_POLICY_DATASET_MAX 128
/*
 * The dataset a key belongs to (bc_policy_ctx_t.dataset): writes
 * "bucket/" and the first depth '/'-terminated parts of key into out (cut
 * to outlen - 1 bytes; outlen > 0). "b/dsA/" for key "dsA/img/k1.bin" at
 * depth 1; "b/" for a key with no '/'.
 */
void bc_policy_dataset_name(const char *bucket, const char *key,
    unsigned depth, char *out, size_t outlen);

/*
 * What the jobs' plans say about the future (src/prefetch/ provides one).
 * next_use(arg, key, now) returns when the chunk named key
 * (bc_policy_key_hash) is next read by any job after now, on the clock of
 * bc_policy_ctx_t.now_ns (a plan position turned into an expected time),
 * or UINT64_MAX when no plan says. It is called with the owning tier's
 * lock held, so it must be quick (a hash lookup) and must not call into
 * the tier. known(arg) says whether any plan exists at all (auto uses
 * planned only then); it may be NULL (then: whenever next_use knew one).
 */
typedef struct bc_policy_oracle_s {
	uint64_t (*next_use)(void *arg, uint64_t key, uint64_t now);
	bool     (*known)(void *arg);
	void     *arg;
} bc_policy_oracle_t;

typedef struct bc_policy_opts_s {
	uint64_t capacity;      /* the owning tier's bytes */
	/* Borrowed (it must outlive the policy); NULL: no plans. */
	const bc_policy_oracle_t *oracle;
	/* bc_policy_share only: the policy it wraps (NULL: lru). */
	const bc_policy_ops_t *base;
} bc_policy_opts_t;

struct bc_policy_ops_s {
	const char   *name;
	/* NULL: out of memory. o may be NULL (defaults). */
	bc_policy_t *(*new)(const bc_policy_opts_t *o);
	void         (*free)(bc_policy_t *p);    /* NULL is a no-op */
	/* Whether n's entry should be kept at all. */
	bool         (*admit)(bc_policy_t *p, const bc_policy_node_t *n,
	    const bc_policy_ctx_t *ctx);
	void         (*on_insert)(bc_policy_t *p, bc_policy_node_t *n,
	    const bc_policy_ctx_t *ctx);
	void         (*on_hit)(bc_policy_t *p, bc_policy_node_t *n,
	    const bc_policy_ctx_t *ctx);
	void         (*on_remove)(bc_policy_t *p, bc_policy_node_t *n);
	/* The next node to evict for which skip(arg, n) is false (the tier
	 * skips entries it cannot evict now), or NULL when none. */
	bc_policy_node_t *(*choose_victim)(bc_policy_t *p,
	    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg);
	/* The share of the tier dataset should keep (bytes; 0: no target).
	 * For policies that share a tier among datasets; others ignore it. */
	void         (*set_target)(bc_policy_t *p, const char *dataset,
	    uint64_t bytes);
	/* The owning tier's capacity changed to bytes (the tier calls it
	 * before evicting to the new bound). NULL: the policy does not use
	 * the capacity. Policies that admit by fullness (pin, planned, auto)
	 * count the sizes of their inserted nodes against it. */
	void         (*set_capacity)(bc_policy_t *p, uint64_t bytes);
};

extern const bc_policy_ops_t bc_policy_lru;
extern const bc_policy_ops_t bc_policy_pin;
extern const bc_policy_ops_t bc_policy_cost;
extern const bc_policy_ops_t bc_policy_planned;
extern const bc_policy_ops_t bc_policy_auto;

/*
 * The share layer (policy_share.c): opts.base ordered as it orders
 * itself, plus per-dataset shares (set_target) for scale/. Each inserted
 * node counts against its dataset (ctx->dataset; NULL: one "unknown"
 * dataset; at most BC_POLICY_SHARE_MAX datasets, later ones share the
 * last slot). A dataset with a target whose nodes would exceed it admits
 * a node only when it holds as many bytes to give up, and its own nodes
 * are the victims; a dataset below its target takes its room from the
 * datasets over theirs first (in the base's order), then as the base
 * would. Without targets it is the base unchanged. Not in
 * bc_policy_find: the memory tier wraps its policy in it.
 */
#define BC_POLICY_SHARE_MAX 64
extern const bc_policy_ops_t bc_policy_share;
/* The bytes the share layer p counts for dataset (0: none known). */
uint64_t bc_policy_share_used(bc_policy_t *p, const char *dataset);

/* For policy_auto.c: the planned policy, with the entries no plan knows
 * ordered by fallback (a policy of its own over just those) instead of
 * pin. admit_unknown: when full, such an entry is admitted (another one
 * no plan knows goes) rather than refused. NULL: out of memory. */
bc_policy_t *bc_policy_planned_new_over(const bc_policy_opts_t *o,
    const bc_policy_ops_t *fallback, bool admit_unknown);

/* The policy named name ("lru", "pin", ...), or NULL. */
const bc_policy_ops_t *bc_policy_find(const char *name);
/* The names bc_policy_find knows, comma-separated (for messages). */
const char *bc_policy_names(void);

#endif
