/*
 * policy_share.c — per-dataset shares over any policy (policy.h,
 * bc_policy_share). The layer keeps a slot per dataset (name, bytes of
 * its inserted nodes, target) and the node's slot in node->share; every
 * event goes on to the base policy, and choose_victim steers the base's
 * walk with a skip of its own. Which dataset a victim is chosen for is
 * the one admit() last saw (the tier asks for victims between admit and
 * on_insert, under its lock); victims asked outside of that (a
 * reservation) come from datasets over their targets first.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "util/util_hash.h"

#define NAME_MAX_LEN 128
#define NO_SLOT      UINT16_MAX

typedef struct slot_s {
	char     name[NAME_MAX_LEN];
	uint64_t nh;
	uint64_t used;
	uint64_t target;   /* 0: none */
} slot_t;

struct bc_policy_s {
	const bc_policy_ops_t *ops;
	bc_policy_t           *base;
	slot_t                 slots[BC_POLICY_SHARE_MAX];
	unsigned               nslots;
	unsigned               ntargets;   /* slots with a target */
	uint16_t               cur;        /* admitted last; NO_SLOT */
	uint64_t               cur_size;   /* its node's size */
};

static uint16_t
slot_of(bc_policy_t *p, const char *dataset)
{
	const char *name = dataset != NULL ? dataset : "";
	uint64_t h = bc_hash(BC_HASH_INIT, name, strlen(name));
	slot_t *s;

	for (unsigned i = 0; i < p->nslots; i++)
		if (p->slots[i].nh == h &&
		    strncmp(p->slots[i].name, name, NAME_MAX_LEN - 1) == 0)
			return (uint16_t)i;
	if (p->nslots == BC_POLICY_SHARE_MAX)
		return BC_POLICY_SHARE_MAX - 1;
	s = &p->slots[p->nslots];
	memset(s, 0, sizeof(*s));
	strncpy(s->name, name, NAME_MAX_LEN - 1);
	s->nh = h;
	return (uint16_t)p->nslots++;
}

static bool
over(const slot_t *s, uint64_t add)
{
	return s->target > 0 && s->used + add > s->target;
}

static bc_policy_t *
share_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->ops = o != NULL && o->base != NULL ? o->base : &bc_policy_lru;
	p->base = p->ops->new(o);
	if (p->base == NULL) {
		free(p);
		return NULL;
	}
	p->cur = NO_SLOT;
	return p;
}

static void
share_free(bc_policy_t *p)
{
	if (p == NULL)
		return;
	p->ops->free(p->base);
	free(p);
}

static bool
any_over(const bc_policy_t *p)
{
	for (unsigned i = 0; i < p->nslots; i++)
		if (over(&p->slots[i], 0))
			return true;
	return false;
}

static bool
share_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	slot_t *s;

	if (p->ntargets == 0) {
		p->cur = NO_SLOT;
		return p->ops->admit(p->base, n, ctx);
	}
	p->cur = slot_of(p, ctx != NULL ? ctx->dataset : NULL);
	p->cur_size = n->size;
	s = &p->slots[p->cur];
	if (over(s, n->size))   /* room from its own, or none */
		return s->used >= n->size && p->ops->admit(p->base, n, ctx);
	/* below its share: others over theirs give way, whatever the base
	 * (pin: full) says */
	return p->ops->admit(p->base, n, ctx) || any_over(p);
}

static void
share_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	uint16_t i = slot_of(p, ctx != NULL ? ctx->dataset : NULL);

	n->share = i;
	p->slots[i].used += n->size;
	p->cur = NO_SLOT;
	p->ops->on_insert(p->base, n, ctx);
}

static void
share_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	p->ops->on_hit(p->base, n, ctx);
}

static void
share_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	if (n->share < p->nslots) {
		slot_t *s = &p->slots[n->share];

		s->used = s->used >= n->size ? s->used - n->size : 0;
	}
	p->ops->on_remove(p->base, n);
}

/* The walk's filter: only nodes of one slot, or of slots over their
 * targets; then the tier's own skip. */
struct steer {
	bc_policy_t *p;
	int          only;      /* a slot, or -1: the slots over theirs */
	bool       (*skip)(void *arg, const bc_policy_node_t *n);
	void        *arg;
};

static bool
steer_skip(void *arg, const bc_policy_node_t *n)
{
	struct steer *st = arg;

	if (st->only >= 0 ? n->share != st->only :
	    n->share >= st->p->nslots || !over(&st->p->slots[n->share], 0))
		return true;
	return st->skip != NULL && st->skip(st->arg, n);
}

static bc_policy_node_t *
share_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	struct steer st = { p, -1, skip, arg };
	bc_policy_node_t *v;

	if (p->ntargets == 0)
		return p->ops->choose_victim(p->base, skip, arg);
	if (p->cur != NO_SLOT && over(&p->slots[p->cur], p->cur_size)) {
		st.only = p->cur;
		return p->ops->choose_victim(p->base, steer_skip, &st);
	}
	if (any_over(p)) {
		v = p->ops->choose_victim(p->base, steer_skip, &st);
		if (v != NULL)
			return v;
	}
	return p->ops->choose_victim(p->base, skip, arg);
}

static void
share_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	slot_t *s = &p->slots[slot_of(p, dataset)];

	if (s->target > 0)
		p->ntargets--;
	s->target = bytes;
	if (bytes > 0)
		p->ntargets++;
	p->ops->set_target(p->base, dataset, bytes);
}

static void
share_set_capacity(bc_policy_t *p, uint64_t bytes)
{
	if (p->ops->set_capacity != NULL)
		p->ops->set_capacity(p->base, bytes);
}

uint64_t
bc_policy_share_used(bc_policy_t *p, const char *dataset)
{
	const char *name = dataset != NULL ? dataset : "";

	for (unsigned i = 0; i < p->nslots; i++)
		if (strncmp(p->slots[i].name, name, NAME_MAX_LEN - 1) == 0)
			return p->slots[i].used;
	return 0;
}

const bc_policy_ops_t bc_policy_share = {
	.name = "share",
	.new = share_new,
	.free = share_free,
	.admit = share_admit,
	.on_insert = share_on_insert,
	.on_hit = share_on_hit,
	.on_remove = share_on_remove,
	.choose_victim = share_choose_victim,
	.set_target = share_set_target,
	.set_capacity = share_set_capacity,
};
