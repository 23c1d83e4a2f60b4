/*
 * policy.h — eviction and admission policies behind one ops table.
 *
 * A tier owns one policy instance and calls it with the tier's lock held
 * (so a policy needs no locking of its own). The policy orders the tier's
 * entries through a bc_policy_node_t each entry embeds; it never frees,
 * stores or fetches anything (DESIGN.md, "Policy ops"). A tier maps a node
 * back to its entry with BC_POLICY_ENTRY.
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

#include "util/util_list.h"

typedef struct bc_policy_s bc_policy_t;
typedef struct bc_policy_node_s bc_policy_node_t;

/* Embedded in each tier entry. The tier sets size and fetch_us before
 * admit/on_insert and leaves the rest to the policy: link and word are the
 * policy's while the node is inserted (between on_insert and on_remove)
 * and the tier's own otherwise (a zeroed link is fine before on_insert).
 * A policy that keeps nodes on a list leaves link self-linked after
 * on_remove (bc_list_remove). */
struct bc_policy_node_s {
	bc_list_t         link;
	uint64_t          word;       /* the policy's (a score, a stamp) */
	uint64_t          size;       /* bytes the entry holds */
	uint64_t          fetch_us;   /* what fetching it cost */
};

/* The entry of type T whose member M is node n. */
#define BC_POLICY_ENTRY(n, T, M) BC_CONTAINER_OF(n, T, M)

/* What an event is about. Strings are borrowed for the call only. */
typedef struct bc_policy_ctx_s {
	uint64_t    now_ns;     /* monotonic (bc_mono_ns) */
	const char *job;        /* the job asking; NULL: none known */
	const char *dataset;    /* the dataset (its bucket); NULL: unknown */
	bool        prefetch;   /* a prefetch, not a client's read */
} bc_policy_ctx_t;

typedef struct bc_policy_opts_s {
	uint64_t capacity;      /* the owning tier's bytes */
} bc_policy_opts_t;

typedef struct bc_policy_ops_s {
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
} bc_policy_ops_t;

extern const bc_policy_ops_t bc_policy_lru;

/* The policy named name ("lru"), or NULL. */
const bc_policy_ops_t *bc_policy_find(const char *name);
/* The names bc_policy_find knows, comma-separated (for messages). */
const char *bc_policy_names(void);

#endif
