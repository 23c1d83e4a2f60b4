/*
 * util_htab.c — the one hash table (see util_htab.h).
 */
#include <stdlib.h>

#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_htab.h"

int
bc_htab_init(bc_htab_t *t, size_t nbuckets, bool fixed)
{
	size_t nb = 1;

	while (nb < nbuckets)
		nb *= 2;
	t->b = calloc(nb, sizeof(*t->b));
	t->nb = nb;
	t->n = 0;
	t->fixed = fixed;
	return t->b != NULL ? 0 : BC_ENOMEM;
}

void
bc_htab_fini(bc_htab_t *t)
{
	free(t->b);
	t->b = NULL;
	t->nb = 0;
	t->n = 0;
}

static void
grow(bc_htab_t *t)
{
	size_t nb = t->nb * 2;
	bc_hnode_t **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return;   /* longer chains; still correct */
	for (size_t i = 0; i < t->nb; i++) {
		bc_hnode_t *n = t->b[i], *next;

		for (; n != NULL; n = next) {
			next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
}

void
bc_htab_insert(bc_htab_t *t, bc_hnode_t *n, uint64_t h)
{
	BC_AN(t->b);
	if (!t->fixed && t->n >= t->nb * 2)
		grow(t);
	n->hash = h;
	n->next = t->b[h & (t->nb - 1)];
	t->b[h & (t->nb - 1)] = n;
	t->n++;
}

void
bc_htab_remove(bc_htab_t *t, bc_hnode_t *n)
{
	bc_hnode_t **pp = &t->b[n->hash & (t->nb - 1)];

	while (*pp != n) {
		BC_AN(*pp);   /* n is in t */
		pp = &(*pp)->next;
	}
	*pp = n->next;
	n->next = NULL;
	BC_CHECK(t->n > 0);
	t->n--;
}
