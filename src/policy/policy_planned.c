/*
 * policy_planned.c — Belady over every job's plan (docs/design.md, "Policy
 * ops"): evict the entry whose next use in any job's plan is furthest;
 * entries with no known next use go first, in pin order (policy_pin.c:
 * the most recently inserted first). Plans come from the oracle in
 * bc_policy_opts_t (policy.h); without one, every entry is unknown and
 * planned is pin.
 *
 * Entries with a known next use sit in a heap, furthest first (word:
 * the next use, idx: the heap position); the others belong to a fallback
 * policy (pin here; auto, policy_auto.c, brings its own), which owns
 * their link and aux. The policy counts the sizes it holds against the
 * capacity (set_capacity changes it). admit() is true while the entry
 * fits; when full, an entry with a known next use is admitted when an
 * unknown one can go or its next use is sooner than the furthest held
 * (Belady with bypass), an unknown one only when the fallback admits
 * unknowns (pin does not: it keeps what it holds).
 *
 * Re-ranking: next uses move as the jobs' cursors advance and as plans
 * come and go. An entry is re-asked on insert and hit (its next use just
 * moved on) and, lazily, when a full admit is about to make room: up to
 * REFRESH of the fallback's next victims (unknowns that plans now know
 * move to the heap), up to REFRESH times the heap's top (a stale top is
 * re-keyed or moved to the fallback), and SWEEP entries at a hand that
 * walks the heap array (so entries whose stored next use went by are
 * found in time). A full admit thus costs at most 2·REFRESH + SWEEP + 1
 * oracle calls and as many O(log n) heap moves; insert, hit and remove
 * cost one call and O(log n); choose_victim is O(1) from the fallback or
 * the heap's top (a walk of the heap array, not exactly by next use, when
 * the top is skipped). Called with the owning tier's lock held (policy.h).
 */
#include <stdlib.h>

#include "policy/policy.h"
#include "util/util_assert.h"
#include "util/util_heap.h"

#define REFRESH 8
#define SWEEP   2
#define UNKNOWN UINT64_MAX

struct bc_policy_s {
	const bc_policy_oracle_t *oracle;     /* NULL: no plans */
	const bc_policy_ops_t    *fb_ops;     /* order of the unknowns */
	bc_policy_t              *fb;
	size_t                    fb_n;
	bool                      admit_unknown;
	bc_heap_t                 heap;       /* known, furthest first */
	uint64_t                  capacity, bytes;
	uint64_t                  now;        /* the latest ctx->now_ns */
	size_t                    hand;       /* the sweep's heap index */
};

static bool
later(const void *a, const void *b)
{
	const bc_policy_node_t *x = a, *y = b;

	if (x->word != y->word)
		return x->word > y->word;
	return x->key < y->key;
}

static void
set_index(void *item, size_t idx)
{
	((bc_policy_node_t *)item)->idx = idx;
}

bc_policy_t *
bc_policy_planned_new_over(const bc_policy_opts_t *o,
    const bc_policy_ops_t *fallback, bool admit_unknown)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->oracle = o != NULL ? o->oracle : NULL;
	p->capacity = o != NULL ? o->capacity : UINT64_MAX;
	p->fb_ops = fallback;
	p->admit_unknown = admit_unknown;
	bc_heap_init(&p->heap, later, set_index);
	p->fb = fallback->new(o);
	if (p->fb == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

static bc_policy_t *
planned_new(const bc_policy_opts_t *o)
{
	return bc_policy_planned_new_over(o, &bc_policy_pin, false);
}

static void
planned_free(bc_policy_t *p)
{
	if (p == NULL)
		return;
	p->fb_ops->free(p->fb);
	bc_heap_fini(&p->heap);
	free(p);
}

static void
see(bc_policy_t *p, const bc_policy_ctx_t *ctx)
{
	if (ctx != NULL && ctx->now_ns > p->now)
		p->now = ctx->now_ns;
}

static uint64_t
next_use(const bc_policy_t *p, const bc_policy_node_t *n)
{
	const bc_policy_oracle_t *o = p->oracle;

	if (o == NULL || (o->known != NULL && !o->known(o->arg)))
		return UNKNOWN;
	return o->next_use(o->arg, n->key, p->now);
}

static bool
in_heap(const bc_policy_node_t *n)
{
	return n->idx != BC_HEAP_NONE;
}

/* Puts n, not yet placed, where nu says. The heap has room (admit). */
static void
place(bc_policy_t *p, bc_policy_node_t *n, uint64_t nu,
    const bc_policy_ctx_t *ctx)
{
	int rv;

	if (nu == UNKNOWN) {
		n->idx = BC_HEAP_NONE;
		p->fb_ops->on_insert(p->fb, n, ctx);
		p->fb_n++;
		return;
	}
	n->word = nu;
	rv = bc_heap_push(&p->heap, n);
	BC_CHECK(rv == 0);
	(void)rv;
}

static void
unplace(bc_policy_t *p, bc_policy_node_t *n)
{
	if (in_heap(n)) {
		bc_heap_remove(&p->heap, n->idx);
	} else {
		BC_CHECK(p->fb_n > 0);
		p->fb_ops->on_remove(p->fb, n);
		p->fb_n--;
	}
}

/* Re-asks the oracle about n (placed) and moves it if that changed. */
static void
reconsider(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	uint64_t nu = next_use(p, n);

	if (in_heap(n) && nu != UNKNOWN) {
		if (nu != n->word) {
			n->word = nu;
			bc_heap_update(&p->heap, n->idx);
		}
	} else if (in_heap(n) || nu != UNKNOWN) {
		unplace(p, n);
		place(p, n, nu, ctx);
	}
}

/* The fallback's walk, re-asking each victim candidate: those plans now
 * know are noted (and skipped) to move to the heap after the walk. */
struct walk {
	const bc_policy_t *p;
	bc_policy_node_t  *known[REFRESH];
	size_t             n_known, asked;
};

static bool
walk_skip(void *arg, const bc_policy_node_t *n)
{
	struct walk *w = arg;

	if (w->asked == REFRESH)
		return false;
	w->asked++;
	if (next_use(w->p, n) == UNKNOWN)
		return false;
	w->known[w->n_known++] = (bc_policy_node_t *)n;
	return true;
}

static void
refresh(bc_policy_t *p, const bc_policy_ctx_t *ctx)
{
	struct walk w = { .p = p };
	size_t      len;

	if (p->oracle == NULL)
		return;
	if (p->fb_n > 0) {
		(void)p->fb_ops->choose_victim(p->fb, walk_skip, &w);
		for (size_t i = 0; i < w.n_known; i++)
			reconsider(p, w.known[i], ctx);
	}
	for (int i = 0; i < REFRESH && bc_heap_len(&p->heap) > 0; i++) {
		bc_policy_node_t *top = bc_heap_peek(&p->heap);
		uint64_t          was = top->word;

		reconsider(p, top, ctx);
		if (in_heap(top) && top->word == was)
			break;
	}
	for (int i = 0; i < SWEEP; i++) {
		len = bc_heap_len(&p->heap);
		if (len == 0)
			break;
		if (p->hand >= len)
			p->hand = 0;
		reconsider(p, p->heap.items[p->hand++], ctx);
	}
}

/* Grows the heap to hold every entry plus one, so that placing never
 * fails. */
static bool
reserve(bc_policy_t *p)
{
	return bc_heap_reserve(&p->heap, bc_heap_len(&p->heap) + p->fb_n +
	    1) == 0;
}

static bool
planned_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	bc_policy_node_t *top;
	uint64_t          nu;

	see(p, ctx);
	if (n->size > p->capacity || !reserve(p))
		return false;
	if (p->bytes <= p->capacity - n->size)
		return true;
	refresh(p, ctx);
	nu = next_use(p, n);
	if (nu == UNKNOWN)
		return p->admit_unknown && p->fb_n > 0;
	if (p->fb_n > 0)
		return true;
	top = bc_heap_peek(&p->heap);
	return top != NULL && nu < top->word;
}

static void
planned_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	see(p, ctx);
	p->bytes += n->size;
	place(p, n, next_use(p, n), ctx);
}

static void
planned_on_hit(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	uint64_t nu;

	see(p, ctx);
	nu = next_use(p, n);
	if (!in_heap(n) && nu == UNKNOWN) {
		p->fb_ops->on_hit(p->fb, n, ctx);
		return;
	}
	if (!in_heap(n) || nu == UNKNOWN || nu != n->word) {
		if (in_heap(n) && nu != UNKNOWN) {
			n->word = nu;
			bc_heap_update(&p->heap, n->idx);
		} else {
			unplace(p, n);
			place(p, n, nu, ctx);
		}
	}
}

static void
planned_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	BC_CHECK(p->bytes >= n->size);
	p->bytes -= n->size;
	unplace(p, n);
}

static bc_policy_node_t *
planned_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	bc_policy_node_t *v = NULL;

	if (p->fb_n > 0)
		v = p->fb_ops->choose_victim(p->fb, skip, arg);
	for (size_t i = 0; v == NULL && i < bc_heap_len(&p->heap); i++)
		if (skip == NULL || !skip(arg, p->heap.items[i]))
			v = p->heap.items[i];
	return v;
}

static void
planned_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	p->fb_ops->set_target(p->fb, dataset, bytes);
}

static void
planned_set_capacity(bc_policy_t *p, uint64_t bytes)
{
	p->capacity = bytes;
	if (p->fb_ops->set_capacity != NULL)
		p->fb_ops->set_capacity(p->fb, bytes);
}

const bc_policy_ops_t bc_policy_planned = {
	.name = "planned",
	.new = planned_new,
	.free = planned_free,
	.admit = planned_admit,
	.on_insert = planned_on_insert,
	.on_hit = planned_on_hit,
	.on_remove = planned_on_remove,
	.choose_victim = planned_choose_victim,
	.set_target = planned_set_target,
	.set_capacity = planned_set_capacity,
};
