/*
 * policy.h — eviction and admission policies behind one ops table.
 *
 * A tier owns one policy instance and calls it with the tier's lock held
 * (so a policy needs no locking of its own). The policy orders the
 * tier's chunks; it never frees them. Inputs: chunk size, fetch cost
 * (c->fetch_us) and, for later policies, job and dataset.
 */
#ifndef BC_POLICY_H
#define BC_POLICY_H

#include <stdbool.h>

#include "cache/cache_chunk.h"

typedef struct bc_policy_s bc_policy_t;

typedef struct bc_policy_ops_s {
	const char   *name;
	bc_policy_t *(*new)(void);               /* NULL: out of memory */
	void         (*free)(bc_policy_t *p);    /* NULL is a no-op */
	/* Whether c should be cached at all. */
	bool         (*admit)(bc_policy_t *p, const bc_chunk_t *c);
	void         (*on_insert)(bc_policy_t *p, bc_chunk_t *c);
	void         (*on_hit)(bc_policy_t *p, bc_chunk_t *c);
	void         (*on_remove)(bc_policy_t *p, bc_chunk_t *c);
	/* The next chunk to evict for which skip(arg, c) is false (the tier
	 * skips chunks it cannot evict now), or NULL when none. */
	bc_chunk_t  *(*choose_victim)(bc_policy_t *p,
	    bool (*skip)(void *arg, const bc_chunk_t *c), void *arg);
} bc_policy_ops_t;

extern const bc_policy_ops_t bc_policy_lru;

/* The policy named name ("lru"), or NULL. */
const bc_policy_ops_t *bc_policy_find(const char *name);

#endif
