/*
 * policy_pin.c — admit until full, then keep (docs/design.md, "Policy ops").
 *
 * The policy counts the sizes of the nodes it holds (on_insert adds,
 * on_remove subtracts) against the capacity it was made with
 * (set_capacity changes it). admit() is true while the node fits: once
 * full, new entries are refused and the entries held stay, so each epoch
 * of a shuffled dataset hits the same fraction c of it, the optimum. What
 * the tier removes (invalidated, expired, deleted, replaced) makes room
 * for the next admitted entry. Hits change nothing.
 *
 * Every held entry is pinned. The tier still asks for a victim when it
 * has less room than the policy counts (bytes it holds outside the
 * policy: metadata, dropped chunks still referenced; a smaller capacity):
 * then the most recently inserted entry that is not skipped goes first,
 * so the set held longest stays. One list, newest at the head; every op
 * is O(1) but choose_victim, which walks past skipped nodes. Called with
 * the owning tier's lock held (policy.h). Context and targets are ignored.
 */
#include <stdlib.h>

#include "policy/policy.h"
#include "util/util_assert.h"

struct bc_policy_s {
	bc_list_t list;       /* head: newest, the first victim */
	uint64_t  capacity;
	uint64_t  bytes;      /* sizes of the nodes on list */
};

static bc_policy_t *
pin_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	bc_list_init(&p->list);
	p->capacity = o != NULL ? o->capacity : UINT64_MAX;
	return p;
}

static void
pin_free(bc_policy_t *p)
{
	free(p);
}

static bool
pin_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	return n->size <= p->capacity && p->bytes <= p->capacity - n->size;
}

static bool
linked(const bc_policy_node_t *n)
{
	return n->link.next != NULL && n->link.next != &n->link;
}

static void
pin_on_insert(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	BC_CHECK(!linked(n));
	bc_list_insert_head(&p->list, &n->link);
	p->bytes += n->size;
}

static void
pin_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)ctx;
	BC_CHECK(linked(n));
}

static void
pin_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	BC_CHECK(linked(n) && p->bytes >= n->size);
	bc_list_remove(&n->link);
	p->bytes -= n->size;
}

static bc_policy_node_t *
pin_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	bc_list_t        *l;
	bc_policy_node_t *n;

	BC_LIST_FOREACH(l, &p->list) {
		n = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (skip == NULL || !skip(arg, n))
			return n;
	}
	return NULL;
}

static void
pin_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
}

static void
pin_set_capacity(bc_policy_t *p, uint64_t bytes)
{
	p->capacity = bytes;
}

const bc_policy_ops_t bc_policy_pin = {
	.name = "pin",
	.new = pin_new,
	.free = pin_free,
	.admit = pin_admit,
	.on_insert = pin_on_insert,
	.on_hit = pin_on_hit,
	.on_remove = pin_on_remove,
	.choose_victim = pin_choose_victim,
	.set_target = pin_set_target,
	.set_capacity = pin_set_capacity,
};
