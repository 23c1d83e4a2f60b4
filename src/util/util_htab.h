/*
 * util_htab.h — the one hash table: intrusive and chained, with the hash
 * function of util_hash.h. A member embeds a bc_hnode_t (its chain link
 * and its 64-bit hash) and keeps its own key; a lookup walks the nodes of
 * one hash (bc_htab_first / bc_htab_next) and the caller compares keys,
 * so no lookup allocates. Buckets are a power of two; an insert that
 * takes the table past two members a bucket doubles them (the only
 * allocation; when it fails the chains grow longer, still correct).
 *
 * No locking: the owner serialises access (its lock guards the table).
 */
#ifndef BC_UTIL_HTAB_H
#define BC_UTIL_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util_hash.h"

typedef struct bc_hnode_s bc_hnode_t;

struct bc_hnode_s {
	bc_hnode_t *next;      /* chain */
	uint64_t    hash;
};

typedef struct bc_htab_s {
	bc_hnode_t **b;        /* nb chains */
	size_t       nb;       /* a power of two */
	size_t       n;        /* members */
	bool         fixed;    /* never grows */
} bc_htab_t;

/* An empty table of nbuckets (rounded up to a power of two, at least 1)
 * chains; fixed: it never grows. Returns 0 or BC_ENOMEM. */
int  bc_htab_init(bc_htab_t *t, size_t nbuckets, bool fixed);
/* Frees the chains (not the members). A zeroed table is a no-op. */
void bc_htab_fini(bc_htab_t *t);

/* Links n in under hash h (n is not in any table). */
void bc_htab_insert(bc_htab_t *t, bc_hnode_t *n, uint64_t h);
/* Unlinks n, which is in t (aborts otherwise). */
void bc_htab_remove(bc_htab_t *t, bc_hnode_t *n);

/* The first member with hash h, or NULL. */
static inline bc_hnode_t *
bc_htab_first(const bc_htab_t *t, uint64_t h)
{
	bc_hnode_t *n = t->b[h & (t->nb - 1)];

	while (n != NULL && n->hash != h)
		n = n->next;
	return n;
}

/* The member after n with n's hash, or NULL. */
static inline bc_hnode_t *
bc_htab_next(const bc_hnode_t *n)
{
	bc_hnode_t *m = n->next;

	while (m != NULL && m->hash != n->hash)
		m = m->next;
	return m;
}

/* Every member, in no order; safe against removing the current one:
 *   bc_hnode_t *n, *tmp; size_t i;
 *   BC_HTAB_FOREACH(t, i, n, tmp) { ... } */
#define BC_HTAB_FOREACH(t, i, n, tmp)                                   \
	for ((i) = 0; (i) < (t)->nb; (i)++)                             \
		for ((n) = (t)->b[i];                                   \
		    (n) != NULL && ((tmp) = (n)->next, 1); (n) = (tmp))

/* Members with hash h, safe against removing the current one. */
#define BC_HTAB_FOREACH_HASH(t, h, n, tmp)                              \
	for ((n) = bc_htab_first((t), (h));                             \
	    (n) != NULL && ((tmp) = bc_htab_next(n), 1); (n) = (tmp))

#endif
