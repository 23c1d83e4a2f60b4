/*
 * policy_lru.c — least recently used eviction, admit everything.
 *
 * One bc_list_t through the nodes' links, most recently inserted or hit
 * at the head; victims come from the tail. Every op is O(1) except
 * choose_victim, which walks past skipped nodes. Called
 * with the owning tier's lock held (policy.h); the list holds no
 * references: the tier removes an entry (on_remove) before dropping it.
 * Context and targets are ignored: recency is all it knows.
 */
#include <stdlib.h>

#include "policy/policy.h"
#include "util/util_assert.h"

struct bc_policy_s {
	bc_list_t lru;        /* head: most recent; tail: the next victim */
	size_t    n;
};

static bc_policy_t *
lru_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	(void)o;
	if (p != NULL)
		bc_list_init(&p->lru);
	return p;
}

static void
lru_free(bc_policy_t *p)
{
	free(p);
}

static bool
lru_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)n;
	(void)ctx;
	return true;
}

/* Whether n is on a list (inserted and not yet removed). */
static bool
linked(const bc_policy_node_t *n)
{
	return n->link.next != NULL && n->link.next != &n->link;
}

static void
lru_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	BC_CHECK(!linked(n));
	bc_list_insert_head(&p->lru, &n->link);
	p->n++;
}

static void
lru_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	BC_CHECK(p->n > 0 && linked(n));
	if (bc_list_first(&p->lru) == &n->link)
		return;
	bc_list_remove(&n->link);
	bc_list_insert_head(&p->lru, &n->link);
}

static void
lru_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	BC_CHECK(p->n > 0 && linked(n));
	bc_list_remove(&n->link);
	p->n--;
}

static bc_policy_node_t *
lru_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	bc_list_t        *l;
	bc_policy_node_t *n;

	BC_LIST_FOREACH_REVERSE(l, &p->lru) {
		n = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (skip == NULL || !skip(arg, n))
			return n;
	}
	return NULL;
}

static void
lru_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
}

const bc_policy_ops_t bc_policy_lru = {
	.name = "lru",
	.new = lru_new,
	.free = lru_free,
	.admit = lru_admit,
	.on_insert = lru_on_insert,
	.on_hit = lru_on_hit,
	.on_remove = lru_on_remove,
	.choose_victim = lru_choose_victim,
	.set_target = lru_set_target,
};
