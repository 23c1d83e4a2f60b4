/*
 * policy_auto.c — the default: planned (policy_planned.c) where plans
 * exist, and for the entries no plan knows a segmented LRU that fills
 * first (docs/decisions.md has the simulator's numbers).
 *
 * The segmented LRU: a protected segment of PROTECTED_PCT % of the
 * capacity and a probationary one for the rest. While the protected
 * segment has room, new entries go there (fill first: on shuffled epochs
 * the first entries stay, as with pin, and each epoch hits about
 * PROTECTED_PCT % of c); once it is full they go to probation. A hit in
 * probation promotes the entry to protected, whose least recently used
 * entries are demoted to probation's head to make room; victims come from
 * probation's tail, then protected's head (its newest: when the tier
 * needs room beyond the shares, for metadata and fills, the first-filled
 * set stays, as with pin). An entry read once per epoch is
 * seldom hit while on probation, so epochs do not churn the protected
 * set; an entry read often is, so skewed workloads keep their hot set as
 * LRU would. Admission takes everything (planned decides for entries
 * plans know). aux says the segment (1: protected). Every op is O(1) but
 * choose_victim, which walks past skipped nodes, and a promotion, which
 * demotes as many entries as it needs room for.
 *
 * Called with the owning tier's lock held (policy.h).
 */
#include <stdlib.h>

#include "policy/policy.h"
#include "util/util_assert.h"

#define PROTECTED_PCT 99

struct bc_policy_s {
	bc_list_t prot, prob;        /* head: most recent */
	uint64_t  capacity;
	uint64_t  prot_bytes;
};

static uint64_t
prot_cap(const bc_policy_t *p)
{
	return p->capacity / 100 * PROTECTED_PCT;
}

static bc_policy_t *
slru_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	bc_list_init(&p->prot);
	bc_list_init(&p->prob);
	p->capacity = o != NULL ? o->capacity : UINT64_MAX;
	return p;
}

static void
slru_free(bc_policy_t *p)
{
	free(p);
}

static bool
slru_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)n;
	(void)ctx;
	return true;
}

static void
slru_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	if (p->prot_bytes + n->size <= prot_cap(p)) {
		n->aux = 1;
		p->prot_bytes += n->size;
		bc_list_insert_head(&p->prot, &n->link);
	} else {
		n->aux = 0;
		bc_list_insert_head(&p->prob, &n->link);
	}
}

static void
slru_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	bc_list_t        *l;
	bc_policy_node_t *d;

	(void)ctx;
	bc_list_remove(&n->link);
	bc_list_insert_head(&p->prot, &n->link);
	if (n->aux == 1)
		return;
	n->aux = 1;
	p->prot_bytes += n->size;
	while (p->prot_bytes > prot_cap(p)) {
		l = bc_list_last(&p->prot);
		d = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (d == n)
			break;
		bc_list_remove(l);
		bc_list_insert_head(&p->prob, l);
		d->aux = 0;
		p->prot_bytes -= d->size;
	}
}

static void
slru_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	if (n->aux == 1) {
		BC_CHECK(p->prot_bytes >= n->size);
		p->prot_bytes -= n->size;
	}
	bc_list_remove(&n->link);
}

static bc_policy_node_t *
slru_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	bc_list_t        *l;
	bc_policy_node_t *n;

	BC_LIST_FOREACH_REVERSE(l, &p->prob) {
		n = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (skip == NULL || !skip(arg, n))
			return n;
	}
	/* the tier needs room the segments' shares did not leave (bytes it
	 * holds outside the policy: metadata, chunks being filled): the
	 * protected segment gives up its newest entries, as pin does, so
	 * the first-filled set stays */
	BC_LIST_FOREACH(l, &p->prot) {
		n = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (skip == NULL || !skip(arg, n))
			return n;
	}
	return NULL;
}

static void
slru_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
}

static void
slru_set_capacity(bc_policy_t *p, uint64_t bytes)
{
	p->capacity = bytes;
}

static const bc_policy_ops_t slru = {
	.name = "slru",
	.new = slru_new,
	.free = slru_free,
	.admit = slru_admit,
	.on_insert = slru_on_insert,
	.on_hit = slru_on_hit,
	.on_remove = slru_on_remove,
	.choose_victim = slru_choose_victim,
	.set_target = slru_set_target,
	.set_capacity = slru_set_capacity,
};

static bc_policy_t *
auto_new(const bc_policy_opts_t *o)
{
	return bc_policy_planned_new_over(o, &slru, true);
}

static void
auto_free(bc_policy_t *p)
{
	bc_policy_planned.free(p);
}

static bool
auto_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	return bc_policy_planned.admit(p, n, ctx);
}

static void
auto_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	bc_policy_planned.on_insert(p, n, ctx);
}

static void
auto_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	bc_policy_planned.on_hit(p, n, ctx);
}

static void
auto_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	bc_policy_planned.on_remove(p, n);
}

static bc_policy_node_t *
auto_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	return bc_policy_planned.choose_victim(p, skip, arg);
}

static void
auto_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	bc_policy_planned.set_target(p, dataset, bytes);
}

static void
auto_set_capacity(bc_policy_t *p, uint64_t bytes)
{
	bc_policy_planned.set_capacity(p, bytes);
}

const bc_policy_ops_t bc_policy_auto = {
	.name = "auto",
	.new = auto_new,
	.free = auto_free,
	.admit = auto_admit,
	.on_insert = auto_on_insert,
	.on_hit = auto_on_hit,
	.on_remove = auto_on_remove,
	.choose_victim = auto_choose_victim,
	.set_target = auto_set_target,
	.set_capacity = auto_set_capacity,
};
