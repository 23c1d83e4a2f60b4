/*
 * test_policy.c — policy/: pin, cost, planned and auto, each on entries
 * of the test that embed a bc_policy_node_t (no tier, no chunk): what
 * they admit, the order of their victims, skip, capacity changes, and for
 * planned/auto an oracle the test controls (a next use per entry).
 * Entries are letters; every entry is 100 bytes unless a test says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "policy/policy.h"

#define NL 26

typedef struct ent_s {
	char             letter;
	bc_policy_node_t node;
} ent_t;

static ent_t ents[NL];

static bc_policy_ctx_t
at(uint64_t ns)
{
	return (bc_policy_ctx_t){ ns, "job", "bkt", false };
}

static bc_policy_node_t *
N_(char l)
{
	ent_t *e = &ents[l - 'a'];

	if (e->letter == 0) {
		e->letter = l;
		e->node.size = 100;
		e->node.fetch_us = 1000;
		e->node.key = (uint64_t)(l - 'a') + 1;
	}
	return &e->node;
}

static char
L(const bc_policy_node_t *n)
{
	return n == NULL ? '-' : BC_POLICY_ENTRY(n, ent_t, node)->letter;
}

static bool
skip_letters(void *arg, const bc_policy_node_t *n)
{
	return arg != NULL && strchr(arg, L(n)) != NULL;
}

static char
victim(const bc_policy_ops_t *ops, bc_policy_t *p, const char *skip)
{
	return L(ops->choose_victim(p, skip_letters, (void *)skip));
}

static void
ins(const bc_policy_ops_t *ops, bc_policy_t *p, char l, uint64_t ns)
{
	bc_policy_ctx_t c = at(ns);

	cr_assert(ops->admit(p, N_(l), &c), "%c not admitted", l);
	ops->on_insert(p, N_(l), &c);
}

static void
hit(const bc_policy_ops_t *ops, bc_policy_t *p, char l, uint64_t ns)
{
	bc_policy_ctx_t c = at(ns);

	ops->on_hit(p, N_(l), &c);
}

static bool
admits(const bc_policy_ops_t *ops, bc_policy_t *p, char l, uint64_t ns)
{
	bc_policy_ctx_t c = at(ns);

	return ops->admit(p, N_(l), &c);
}

/* Removes everything the policy holds, in victim order: the letters. */
static void
drain(const bc_policy_ops_t *ops, bc_policy_t *p, char *out)
{
	bc_policy_node_t *v;
	size_t            n = 0;

	while ((v = ops->choose_victim(p, NULL, NULL)) != NULL) {
		cr_assert_lt(n, NL);
		out[n++] = L(v);
		ops->on_remove(p, v);
	}
	out[n] = '\0';
	memset(ents, 0, sizeof(ents));
}

/* ---- the oracle ---------------------------------------------------- */

static uint64_t next[NL + 1];     /* by key; 0: unknown */
static int      asked;

static uint64_t
next_use(void *arg, uint64_t key, uint64_t now)
{
	(void)arg;
	(void)now;
	asked++;
	cr_assert(key >= 1 && key <= NL);
	return next[key] == 0 ? UINT64_MAX : next[key];
}

static const bc_policy_oracle_t oracle = { next_use, NULL, NULL };

static void
plan(char l, uint64_t when)
{
	next[l - 'a' + 1] = when;
}

static void
reset_plans(void)
{
	memset(next, 0, sizeof(next));
}

/* ---- pin ----------------------------------------------------------- */

LTest(pin, admits_until_full_then_keeps)
{
	bc_policy_opts_t o = { .capacity = 300 };
	const bc_policy_ops_t *ops = &bc_policy_pin;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	cr_assert_not_null(p);
	ins(ops, p, 'a', 1);
	ins(ops, p, 'b', 2);
	ins(ops, p, 'c', 3);
	cr_expect_not(admits(ops, p, 'd', 4), "full: refused");
	hit(ops, p, 'a', 5);
	ops->on_remove(p, N_('b'));
	cr_expect(admits(ops, p, 'd', 6), "a removal makes room");
	ins(ops, p, 'd', 6);
	cr_expect_not(admits(ops, p, 'e', 7));
	cr_expect_eq(victim(ops, p, NULL), 'd', "newest first");
	cr_expect_eq(victim(ops, p, "d"), 'c');
	cr_expect_eq(victim(ops, p, "acd"), '-');
	ops->set_capacity(p, 200);
	ops->on_remove(p, N_('d'));
	cr_expect_not(admits(ops, p, 'e', 8), "capacity lowered");
	ops->set_capacity(p, 1000);
	cr_expect(admits(ops, p, 'e', 8), "capacity raised");
	N_('z')->size = 2000;
	cr_expect_not(admits(ops, p, 'z', 9), "bigger than the capacity");
	drain(ops, p, out);
	cr_expect_str_eq(out, "ca");
	ops->free(p);
	ops->free(NULL);
}

/* ---- cost ---------------------------------------------------------- */

#define S 1000000000ULL

LTest(cost, cheap_old_and_unreferenced_go_first)
{
	const bc_policy_ops_t *ops = &bc_policy_cost;
	bc_policy_t *p = ops->new(NULL);
	char out[NL + 1];

	cr_assert_not_null(p);
	/* Same time: the cheaper goes first. */
	N_('a')->fetch_us = 1000;
	N_('b')->fetch_us = 10;
	ins(ops, p, 'a', 0);
	ins(ops, p, 'b', 0);
	cr_expect_eq(victim(ops, p, NULL), 'b');
	cr_expect_eq(victim(ops, p, "b"), 'a', "skip");
	drain(ops, p, out);
	cr_expect_str_eq(out, "ba");
	ops->free(p);
	p = ops->new(NULL);        /* its clock never goes back */
	/* Same cost: the older goes first; a hit makes it younger. */
	ins(ops, p, 'a', 0);
	ins(ops, p, 'b', S);
	cr_expect_eq(victim(ops, p, NULL), 'a');
	hit(ops, p, 'a', 2 * S);
	cr_expect_eq(victim(ops, p, NULL), 'b');
	drain(ops, p, out);
	cr_expect_str_eq(out, "ba");
	ops->free(p);
	p = ops->new(NULL);
	/* Cost against age: 100/4 decayed one second (6.25) beats a fresh
	 * 1/4; 4/4 decayed two seconds (0.0625) loses to it. */
	N_('a')->fetch_us = 100;
	N_('b')->fetch_us = 1;
	ins(ops, p, 'a', 0);
	ins(ops, p, 'b', S);
	cr_expect_eq(victim(ops, p, NULL), 'b');
	drain(ops, p, out);
	ops->free(p);
	p = ops->new(NULL);
	N_('a')->fetch_us = 4;
	N_('b')->fetch_us = 1;
	ins(ops, p, 'a', 0);
	ins(ops, p, 'b', 2 * S);
	cr_expect_eq(victim(ops, p, NULL), 'a');
	/* Repeated references add up: c, hit twice, outlives a fresh d of
	 * the same cost. */
	ins(ops, p, 'c', 2 * S);
	hit(ops, p, 'c', 2 * S);
	hit(ops, p, 'c', 2 * S);
	ins(ops, p, 'd', 2 * S);
	drain(ops, p, out);
	cr_expect_str_eq(out, "abdc");
	ops->free(p);
	ops->free(NULL);
}

/* ---- planned ------------------------------------------------------- */

LTest(planned, furthest_next_use_first_unknown_before)
{
	bc_policy_opts_t o = { .capacity = 400, .oracle = &oracle };
	const bc_policy_ops_t *ops = &bc_policy_planned;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	cr_assert_not_null(p);
	reset_plans();
	plan('a', 50);
	plan('b', 20);
	plan('c', 90);
	ins(ops, p, 'a', 1);
	ins(ops, p, 'b', 2);
	ins(ops, p, 'c', 3);
	cr_expect_eq(victim(ops, p, NULL), 'c');
	ins(ops, p, 'd', 4);            /* no plan knows d */
	cr_expect_eq(victim(ops, p, NULL), 'd', "unknown first");
	cr_expect_eq(victim(ops, p, "d"), 'c');
	/* Full: a known next use before the furthest known is admitted
	 * (d, unknown, would go); an unknown one is not (pin). */
	plan('e', 30);
	cr_expect(admits(ops, p, 'e', 5));
	cr_expect_not(admits(ops, p, 'f', 5));
	/* A hit moves the next use on: b is next read at 95. */
	plan('b', 95);
	hit(ops, p, 'b', 20);
	cr_expect_eq(victim(ops, p, "d"), 'b');
	/* d becomes known: a full admit re-asks the next unknown victims. */
	plan('d', 10);
	plan('e', 99);
	cr_expect_not(admits(ops, p, 'e', 21), "e later than all held");
	cr_expect_eq(victim(ops, p, NULL), 'b', "d moved to the heap");
	/* A stale top (b's plan gone: now unknown) is re-asked too. */
	plan('b', 0);
	cr_expect_not(admits(ops, p, 'f', 22));
	cr_expect_eq(victim(ops, p, NULL), 'b', "b no longer known");
	drain(ops, p, out);
	cr_expect_str_eq(out, "bcad");
	ops->free(p);
	ops->free(NULL);
}

LTest(planned, without_plans_is_pin)
{
	bc_policy_opts_t o = { .capacity = 300 };
	const bc_policy_ops_t *ops = &bc_policy_planned;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	cr_assert_not_null(p);
	ins(ops, p, 'a', 1);
	ins(ops, p, 'b', 2);
	ins(ops, p, 'c', 3);
	cr_expect_not(admits(ops, p, 'd', 4));
	hit(ops, p, 'a', 5);
	ops->set_capacity(p, 400);
	cr_expect(admits(ops, p, 'd', 6));
	drain(ops, p, out);
	cr_expect_str_eq(out, "cba");
	ops->free(p);
}

/* ---- auto ---------------------------------------------------------- */

LTest(auto_, fill_first_segmented_lru_without_plans)
{
	/* protected: 99 % of 1000 = 990 bytes, nine entries */
	bc_policy_opts_t o = { .capacity = 1000 };
	const bc_policy_ops_t *ops = &bc_policy_auto;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	cr_assert_not_null(p);
	for (char l = 'a'; l <= 'j'; l++)
		ins(ops, p, l, 1);
	cr_expect_eq(victim(ops, p, NULL), 'j', "the tenth is on probation");
	cr_expect(admits(ops, p, 'k', 2), "full: admits, probation pays");
	hit(ops, p, 'a', 3);
	cr_expect_eq(victim(ops, p, NULL), 'j', "hits in protected: no change");
	hit(ops, p, 'j', 4);            /* promoted; b (protected LRU) demoted */
	cr_expect_eq(victim(ops, p, NULL), 'b');
	cr_expect_eq(victim(ops, p, "b"), 'j',
	    "then protected's newest (as pin: the first-filled stay)");
	drain(ops, p, out);
	cr_expect_str_eq(out, "bjaihgfedc");
	ops->free(p);
}

LTest(auto_, plans_rank_what_they_know)
{
	bc_policy_opts_t o = { .capacity = 1000, .oracle = &oracle };
	const bc_policy_ops_t *ops = &bc_policy_auto;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	cr_assert_not_null(p);
	reset_plans();
	plan('a', 10);
	plan('b', 30);
	ins(ops, p, 'a', 1);
	ins(ops, p, 'b', 1);
	ins(ops, p, 'c', 1);
	ins(ops, p, 'd', 1);
	cr_expect_eq(victim(ops, p, NULL), 'd',
	    "unknowns first, newest first (pin order, all protected)");
	hit(ops, p, 'c', 2);
	cr_expect_eq(victim(ops, p, NULL), 'c', "c is the most recent now");
	drain(ops, p, out);
	cr_expect_str_eq(out, "cdba");
	ops->free(p);
}

LTest(policy, find_all)
{
	static const bc_policy_ops_t *const all[] = { &bc_policy_lru,
	    &bc_policy_pin, &bc_policy_cost, &bc_policy_planned,
	    &bc_policy_auto };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cr_expect_eq(bc_policy_find(all[i]->name), all[i]);
	cr_expect_eq(bc_policy_key_hash("b", "k", 1),
	    bc_policy_key_hash("b", "k", 1));
	cr_expect_neq(bc_policy_key_hash("b", "k", 1),
	    bc_policy_key_hash("b", "k", 2));
	cr_expect_neq(bc_policy_key_hash("bk", "", 0),
	    bc_policy_key_hash("b", "k", 0), "the NULs separate");
	cr_expect_eq(bc_policy_key_hash("", "", 0),
	    bc_hash(bc_hash(BC_HASH_INIT, "\0\0", 2), "\0\0\0\0", 4));
}

/* ---- the share layer ------------------------------------------------ */

static void
ins_ds(const bc_policy_ops_t *ops, bc_policy_t *p, char l, const char *ds)
{
	bc_policy_ctx_t c = { 1, "job", ds, false };

	cr_assert(ops->admit(p, N_(l), &c), "%c not admitted", l);
	ops->on_insert(p, N_(l), &c);
}

static bool
admits_ds(const bc_policy_ops_t *ops, bc_policy_t *p, char l,
    const char *ds)
{
	bc_policy_ctx_t c = { 1, "job", ds, false };

	return ops->admit(p, N_(l), &c);
}

LTest(share, without_targets_is_the_base_unchanged)
{
	bc_policy_opts_t o = { .capacity = 300, .base = &bc_policy_pin };
	const bc_policy_ops_t *ops = &bc_policy_share;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	ins_ds(ops, p, 'a', "b/x/");
	ins_ds(ops, p, 'b', "b/y/");
	ins_ds(ops, p, 'c', "b/x/");
	cr_assert_not(admits_ds(ops, p, 'd', "b/y/"), "pin is full");
	cr_assert_eq(victim(ops, p, NULL), 'c', "pin's newest first");
	cr_assert_eq(bc_policy_share_used(p, "b/x/"), 200);
	cr_assert_eq(bc_policy_share_used(p, "b/y/"), 100);
	drain(ops, p, out);
	cr_assert_str_eq(out, "cba");
	ops->free(p);
}

LTest(share, a_dataset_over_its_share_gives_up_its_own)
{
	bc_policy_opts_t o = { .capacity = 400, .base = &bc_policy_lru };
	const bc_policy_ops_t *ops = &bc_policy_share;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	ops->set_target(p, "b/x/", 200);
	ops->set_target(p, "b/y/", 200);
	ins_ds(ops, p, 'a', "b/x/");
	ins_ds(ops, p, 'b', "b/x/");
	ins_ds(ops, p, 'c', "b/y/");
	/* x holds its 200: a third of x must evict x's own (a, the LRU) */
	cr_assert(admits_ds(ops, p, 'd', "b/x/"));
	cr_assert_eq(victim(ops, p, NULL), 'a');
	cr_assert_eq(victim(ops, p, "a"), 'b', "x's own, never y's c");
	cr_assert_eq(victim(ops, p, "ab"), '-');
	ops->on_remove(p, N_('a'));
	ins_ds(ops, p, 'd', "b/x/");
	cr_assert_eq(bc_policy_share_used(p, "b/x/"), 200);
	/* a dataset with a share of nothing to give admits nothing */
	ops->set_target(p, "b/z/", 1);
	cr_assert_not(admits_ds(ops, p, 'e', "b/z/"));
	drain(ops, p, out);
	ops->free(p);
}

LTest(share, below_its_share_a_dataset_takes_from_those_over)
{
	bc_policy_opts_t o = { .capacity = 400, .base = &bc_policy_pin };
	const bc_policy_ops_t *ops = &bc_policy_share;
	bc_policy_t *p = ops->new(&o);
	char out[NL + 1];

	/* y filled memory before shares were set */
	ins_ds(ops, p, 'a', "b/y/");
	ins_ds(ops, p, 'b', "b/y/");
	ins_ds(ops, p, 'c', "b/y/");
	ins_ds(ops, p, 'd', "b/x/");
	ops->set_target(p, "b/x/", 300);
	ops->set_target(p, "b/y/", 100);
	/* pin is full, but x is below its share and y over: y gives way,
	 * in pin's order (its newest first) */
	cr_assert(admits_ds(ops, p, 'e', "b/x/"));
	cr_assert_eq(victim(ops, p, NULL), 'c');
	ops->on_remove(p, N_('c'));
	ins_ds(ops, p, 'e', "b/x/");
	cr_assert(admits_ds(ops, p, 'f', "b/x/"));
	cr_assert_eq(victim(ops, p, NULL), 'b');
	ops->on_remove(p, N_('b'));
	ins_ds(ops, p, 'f', "b/x/");
	cr_assert_eq(bc_policy_share_used(p, "b/x/"), 300);
	cr_assert_eq(bc_policy_share_used(p, "b/y/"), 100);
	/* y at its share may only replace its own, which pin keeps */
	cr_assert_not(admits_ds(ops, p, 'g', "b/y/"));
	/* clearing the targets gives the base back */
	ops->set_target(p, "b/x/", 0);
	ops->set_target(p, "b/y/", 0);
	cr_assert_not(admits_ds(ops, p, 'g', "b/x/"), "pin is full");
	drain(ops, p, out);
	ops->free(p);
}

LTest(dataset, datasets_are_the_bucket_and_the_first_parts)
{
	char out[BC_POLICY_DATASET_MAX];

	bc_policy_dataset_name("b", "dsA/img/k1.bin", 1, out, sizeof(out));
	cr_assert_str_eq(out, "b/dsA/");
	bc_policy_dataset_name("b", "dsA/img/k1.bin", 2, out, sizeof(out));
	cr_assert_str_eq(out, "b/dsA/img/");
	bc_policy_dataset_name("b", "dsA/img/k1.bin", 5, out, sizeof(out));
	cr_assert_str_eq(out, "b/dsA/img/");
	bc_policy_dataset_name("b", "k1.bin", 1, out, sizeof(out));
	cr_assert_str_eq(out, "b/");
	bc_policy_dataset_name("b", "dsA/img/k1.bin", 0, out, sizeof(out));
	cr_assert_str_eq(out, "b/");
	bc_policy_dataset_name("bucket", "abcdef/x", 1, out, 8);
	cr_assert_str_eq(out, "bucket/");
}
