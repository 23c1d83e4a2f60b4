/*
 * policy_cost.c — DLCache's cost-aware LRFU (docs/design.md, "Policy ops"):
 * an entry's score is the sum over its references of
 * (cost / age) · 0.5^(2·age), cost = what fetching it took (fetch_us, at
 * least 1), age in seconds of ctx->now_ns counted from 1 at the reference
 * (a reference is worth cost/4 when made, a quarter of that a second
 * later). The lowest score is evicted; admission takes everything.
 *
 * The decay 0.25^age is kept exactly; the 1/age factor is applied at each
 * reference to the sum so far, over the time since the previous one:
 * V(t) = cost/4 + V(t_prev) · 0.25^Δ / (1 + Δ), Δ = t - t_prev. Between
 * two references an entry's score then only decays by 0.25 a second, so
 * the order of two entries never changes while neither is referenced and
 * a heap stays ordered by the time-free key ln V(t_last) + t_last · ln 4.
 * word holds that key (a double's bits), aux t_last (ns), idx the heap
 * position. insert, hit and remove are O(log n); choose_victim is O(1),
 * or a walk of the heap array (in array order, not exactly by score) when
 * the least entry is skipped. Called with the owning tier's lock held
 * (policy.h); events without a context reuse the last time seen. admit
 * refuses only when the heap cannot grow (out of memory).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "util/util_assert.h"
#include "util/util_heap.h"

struct bc_policy_s {
	bc_heap_t heap;       /* least key first: the next victim */
	uint64_t  last_ns;    /* the latest ctx->now_ns seen */
};

static double
key_of(const bc_policy_node_t *n)
{
	double k;

	memcpy(&k, &n->word, sizeof(k));
	return k;
}

static void
set_key(bc_policy_node_t *n, double k)
{
	memcpy(&n->word, &k, sizeof(k));
}

static bool
less(const void *a, const void *b)
{
	const bc_policy_node_t *x = a, *y = b;

	if (key_of(x) != key_of(y))
		return key_of(x) < key_of(y);
	return x->aux < y->aux;     /* equal scores: the older goes first */
}

static void
set_index(void *item, size_t idx)
{
	((bc_policy_node_t *)item)->idx = idx;
}

static bc_policy_t *
cost_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	(void)o;
	if (p != NULL)
		bc_heap_init(&p->heap, less, set_index);
	return p;
}

static void
cost_free(bc_policy_t *p)
{
	if (p == NULL)
		return;
	bc_heap_fini(&p->heap);
	free(p);
}

/* Everything is admitted, but for memory to track it: admit reserves
 * the heap slot on_insert takes. */
static bool
cost_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)n;
	(void)ctx;
	return bc_heap_reserve(&p->heap, bc_heap_len(&p->heap) + 1) == 0;
}

static uint64_t
now_of(bc_policy_t *p, const bc_policy_ctx_t *ctx)
{
	if (ctx != NULL && ctx->now_ns > p->last_ns)
		p->last_ns = ctx->now_ns;
	return p->last_ns;
}

static double
seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* n referenced at now; prev: it was referenced before (key, aux valid). */
static void
reference(bc_policy_node_t *n, uint64_t now, bool prev)
{
	double cost = n->fetch_us > 0 ? (double)n->fetch_us : 1.0;
	double v = cost / 4, t = seconds(now);

	if (prev) {
		double tp = seconds(n->aux), d = now > n->aux ? t - tp : 0;

		/* V(t_prev) = exp(key - t_prev·ln 4) */
		v += exp(key_of(n) - tp * log(4.0) - d * log(4.0)) / (1 + d);
	}
	set_key(n, log(v) + t * log(4.0));
	n->aux = now;
}

static void
cost_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	int rv;

	reference(n, now_of(p, ctx), false);
	rv = bc_heap_push(&p->heap, n);     /* admit reserved the slot */
	BC_CHECK(rv == 0);
	(void)rv;
}

static void
cost_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	BC_CHECK(n->idx < bc_heap_len(&p->heap));
	reference(n, now_of(p, ctx), true);
	bc_heap_update(&p->heap, n->idx);
}

static void
cost_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	BC_CHECK(n->idx < bc_heap_len(&p->heap));
	bc_heap_remove(&p->heap, n->idx);
}

static bc_policy_node_t *
cost_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	for (size_t i = 0; i < bc_heap_len(&p->heap); i++) {
		bc_policy_node_t *n = p->heap.items[i];

		if (skip == NULL || !skip(arg, n))
			return n;
	}
	return NULL;
}

static void
cost_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
}

const bc_policy_ops_t bc_policy_cost = {
	.name = "cost",
	.new = cost_new,
	.free = cost_free,
	.admit = cost_admit,
	.on_insert = cost_on_insert,
	.on_hit = cost_on_hit,
	.on_remove = cost_on_remove,
	.choose_victim = cost_choose_victim,
	.set_target = cost_set_target,
};
