/*
 * test_policy_lru.c — policy/: the LRU policy's order (insert, hit,
 * remove at head/middle/tail), choose_victim's skip callback, a random
 * sequence checked against an array model, and bc_policy_find().
 *
 * Entries of the test embed a bc_policy_node_t, as a tier's entries do;
 * no chunk is involved (a policy knows none).
 *
 * Cases are tables of ops on entries named by one letter: "+a" inserts a,
 * "*a" hits it, "-a" removes it. The policy is then drained: victims
 * (skipping the letters in skip) must come out in the expected order, and
 * what the skip left must come out in rest's order when nothing is
 * skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "policy/policy.h"

/* Under ASan, a leak fails the test (see tests/unit/config/test_config.c:
 * LeakSanitizer's report at the worker's exit does not change the
 * result), so every test body ends with a recoverable leak check. */
#define NLETTERS 26

typedef struct ent_s {
	char             key[8];
	bc_policy_node_t node;
} ent_t;

static const bc_policy_ctx_t ctx0 = { 1, "job", "bkt", false };

static ent_t *
mk(const char *key, uint32_t index)
{
	ent_t *e = calloc(1, sizeof(*e));

	cr_assert_not_null(e);
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->node.size = 100 + index;
	return e;
}

/* The key of the entry n is in. */
static const char *
keyof(const bc_policy_node_t *n)
{
	return BC_POLICY_ENTRY(n, ent_t, node)->key;
}

static bool
skip_letters(void *arg, const bc_policy_node_t *n)
{
	return strchr(arg, keyof(n)[0]) != NULL;
}

/* Drains p into out (letters, in victim order), skipping skip's letters. */
static void
drain(const bc_policy_ops_t *ops, bc_policy_t *p, const char *skip,
    char *out)
{
	bc_policy_node_t *v;
	size_t            n = 0;

	for (;;) {
		v = ops->choose_victim(p, skip_letters, (void *)skip);
		if (v == NULL)
			break;
		cr_assert_lt(n, NLETTERS, "more victims than chunks");
		out[n++] = keyof(v)[0];
		ops->on_remove(p, v);
		cr_assert_eq(v->link.prev, &v->link, "removed: self-linked");
		cr_assert_eq(v->link.next, &v->link, "removed: self-linked");
	}
	out[n] = '\0';
}

struct lru_case {
	const char *name;
	const char *ops;
	const char *skip;
	const char *victims;
	const char *rest;
};

static const struct lru_case cases[] = {
	{ "empty",             "",                "",   "",     "" },
	{ "insert order",      "+a +b +c",        "",   "abc",  "" },
	{ "hit moves to head", "+a +b +c *a",     "",   "bca",  "" },
	{ "hit the head",      "+a +b +c *c",     "",   "abc",  "" },
	{ "hit the middle",    "+a +b +c *b",     "",   "acb",  "" },
	{ "hits in a row",     "+a +b +c *a *b",  "",   "cab",  "" },
	{ "hit twice",         "+a +b *a *a",     "",   "ba",   "" },
	{ "remove middle",     "+a +b +c -b",     "",   "ac",   "" },
	{ "remove head",       "+a +b +c -c",     "",   "ab",   "" },
	{ "remove tail",       "+a +b +c -a",     "",   "bc",   "" },
	{ "remove the only",   "+a -a",           "",   "",     "" },
	{ "remove all",        "+a +b +c -a -c -b", "", "",     "" },
	{ "insert after remove", "+a +b -a +a",   "",   "ba",   "" },
	{ "insert after empty", "+a -a +b +c",    "",   "bc",   "" },
	{ "hit after remove",  "+a +b +c -c *a",  "",   "ba",   "" },
	{ "skip middle",       "+a +b +c *a",     "b",  "ca",   "b" },
	{ "skip tail",         "+a +b +c",        "a",  "bc",   "a" },
	{ "skip head and tail", "+a +b +c +d",    "ad", "bc",   "ad" },
	{ "skip everything",   "+a +b",           "ab", "",     "ab" },
	{ "skip absent",       "+a +b",           "z",  "ab",   "" },
};

static void
run_case(const struct lru_case *tc)
{
	const bc_policy_ops_t *ops = &bc_policy_lru;
	bc_policy_t           *p = ops->new(NULL);
	ent_t                 *ch[NLETTERS] = { 0 };
	char                   got[NLETTERS + 1];
	const char            *s;

	cr_assert_not_null(p);
	for (s = tc->ops; *s != '\0'; s++) {
		char op, l;

		if (*s == ' ')
			continue;
		op = s[0];
		l = s[1];
		cr_assert(l >= 'a' && l <= 'z', "%s: bad op", tc->name);
		s++;
		if (op == '+') {
			char key[2] = { l, '\0' };

			if (ch[l - 'a'] == NULL)
				ch[l - 'a'] = mk(key, 0);
			cr_assert(ops->admit(p, &ch[l - 'a']->node, &ctx0));
			ops->on_insert(p, &ch[l - 'a']->node, &ctx0);
		} else if (op == '*') {
			ops->on_hit(p, &ch[l - 'a']->node, &ctx0);
		} else {
			ops->on_remove(p, &ch[l - 'a']->node);
		}
	}
	drain(ops, p, tc->skip, got);
	cr_expect_str_eq(got, tc->victims, "%s: victims %s, want %s",
	    tc->name, got, tc->victims);
	drain(ops, p, "", got);
	cr_expect_str_eq(got, tc->rest, "%s: rest %s, want %s", tc->name,
	    got, tc->rest);
	ops->free(p);
	for (int i = 0; i < NLETTERS; i++)
		free(ch[i]);
}

LTest(lru, table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

/* skip sees candidates from the least recent on, with the caller's arg,
 * and the walk stops at the first one not skipped. */
struct seen {
	char   order[NLETTERS + 1];
	size_t n;
	char   stop;     /* the letter not to skip */
};

static bool
record(void *arg, const bc_policy_node_t *n)
{
	struct seen *s = arg;

	s->order[s->n++] = keyof(n)[0];
	s->order[s->n] = '\0';
	return keyof(n)[0] != s->stop;
}

LTest(lru, skip_walks_from_tail)
{
	const bc_policy_ops_t *ops = &bc_policy_lru;
	bc_policy_t           *p = ops->new(NULL);
	ent_t                 *a = mk("a", 0), *b = mk("b", 0);
	ent_t                 *c = mk("c", 0), *d = mk("d", 0);
	struct seen            s = { .stop = 'b' };

	ops->on_insert(p, &a->node, &ctx0);
	ops->on_insert(p, &b->node, &ctx0);
	ops->on_insert(p, &c->node, &ctx0);
	ops->on_insert(p, &d->node, &ctx0);
	ops->on_hit(p, &a->node, &ctx0);   /* order, oldest first: b c d a */
	cr_assert_eq(ops->choose_victim(p, record, &s), &b->node);
	cr_assert_str_eq(s.order, "b");
	s.n = 0;
	s.stop = 'a';
	cr_assert_eq(ops->choose_victim(p, record, &s), &a->node);
	cr_assert_str_eq(s.order, "bcda");
	s.n = 0;
	s.stop = 'x';
	cr_assert_null(ops->choose_victim(p, record, &s));
	cr_assert_str_eq(s.order, "bcda");
	/* choose_victim only chooses: nothing was removed. */
	s.n = 0;
	s.stop = 'b';
	cr_assert_eq(ops->choose_victim(p, record, &s), &b->node);
	ops->on_remove(p, &a->node);
	ops->on_remove(p, &b->node);
	ops->on_remove(p, &c->node);
	ops->on_remove(p, &d->node);
	cr_assert_null(ops->choose_victim(p, record, &s));
	ops->free(p);
	free(a);
	free(b);
	free(c);
	free(d);
}

/* A random mix of inserts, hits and removes on 64 chunks, checked after
 * every step against an array kept in recency order. */
#define NMODEL 64

static bool
no_skip(void *arg, const bc_policy_node_t *n)
{
	(void)arg;
	(void)n;
	return false;
}

LTest(lru, random_against_model)
{
	const bc_policy_ops_t *ops = &bc_policy_lru;
	bc_policy_t           *p = ops->new(NULL);
	ent_t                 *ch[NMODEL];
	int                    model[NMODEL];    /* [0] least recent */
	bool                   in[NMODEL] = { 0 };
	int                    n = 0;
	unsigned               seed = 12345;

	for (int i = 0; i < NMODEL; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", i);
		ch[i] = mk(key, (uint32_t)i);
	}
	for (int step = 0; step < 20000; step++) {
		int x = rand_r(&seed) % NMODEL, op = rand_r(&seed) % 4;
		int j;

		for (j = 0; j < n && model[j] != x; j++)
			;
		if (!in[x]) {
			ops->on_insert(p, &ch[x]->node, &ctx0);
			model[n++] = x;
			in[x] = true;
		} else if (op == 0) {
			ops->on_remove(p, &ch[x]->node);
			memmove(&model[j], &model[j + 1],
			    (size_t)(n - j - 1) * sizeof(model[0]));
			n--;
			in[x] = false;
		} else if (op == 1 && n > 0) {
			/* evict the victim */
			bc_policy_node_t *v = ops->choose_victim(p, no_skip,
			    NULL);

			cr_assert_eq(v, &ch[model[0]]->node, "step %d", step);
			ops->on_remove(p, v);
			in[model[0]] = false;
			memmove(&model[0], &model[1],
			    (size_t)(n - 1) * sizeof(model[0]));
			n--;
		} else {
			ops->on_hit(p, &ch[x]->node, &ctx0);
			memmove(&model[j], &model[j + 1],
			    (size_t)(n - j - 1) * sizeof(model[0]));
			model[n - 1] = x;
		}
		if (n > 0)
			cr_assert_eq(ops->choose_victim(p, no_skip, NULL),
			    &ch[model[0]]->node, "step %d", step);
		else
			cr_assert_null(ops->choose_victim(p, no_skip, NULL));
	}
	/* The whole order, not just the tail. */
	for (int j = 0; j < n; j++) {
		bc_policy_node_t *v = ops->choose_victim(p, no_skip, NULL);

		cr_assert_eq(v, &ch[model[j]]->node, "position %d", j);
		ops->on_remove(p, v);
	}
	cr_assert_null(ops->choose_victim(p, no_skip, NULL));
	ops->free(p);
	for (int i = 0; i < NMODEL; i++)
		free(ch[i]);
}

LTest(lru, admits_everything_and_ignores_targets)
{
	bc_policy_opts_t o = { .capacity = 1 << 20 };
	bc_policy_t     *p = bc_policy_lru.new(&o);
	ent_t           *a = mk("a", 0), *b = mk("b", 0);
	bc_policy_ctx_t  pre = { 2, NULL, NULL, true };

	cr_assert_not_null(p);
	a->node.size = (uint64_t)1 << 40;   /* far over the capacity */
	cr_assert(bc_policy_lru.admit(p, &a->node, &ctx0));
	cr_assert(bc_policy_lru.admit(p, &b->node, &pre));
	bc_policy_lru.set_target(p, "bkt", 1);
	bc_policy_lru.on_insert(p, &a->node, &ctx0);
	bc_policy_lru.on_insert(p, &b->node, &pre);
	cr_assert_eq(bc_policy_lru.choose_victim(p, no_skip, NULL), &a->node);
	bc_policy_lru.on_remove(p, &a->node);
	bc_policy_lru.on_remove(p, &b->node);
	bc_policy_lru.free(p);
	bc_policy_lru.free(NULL);
	free(a);
	free(b);
}

struct find_case {
	const char            *name;
	const bc_policy_ops_t *want;
};

LTest(policy, find)
{
	static const struct find_case fc[] = {
		{ "lru", &bc_policy_lru },
		{ "LRU", NULL },
		{ "lr", NULL },
		{ "lrux", NULL },
		{ "", NULL },
		{ "pin", &bc_policy_pin },
		{ "pinx", NULL },
	};

	for (size_t i = 0; i < sizeof(fc) / sizeof(fc[0]); i++)
		cr_expect_eq(bc_policy_find(fc[i].name), fc[i].want, "%s",
		    fc[i].name);
	cr_expect_null(bc_policy_find(NULL));
	cr_expect_str_eq(bc_policy_lru.name, "lru");
	cr_expect_str_eq(bc_policy_names(), "lru, pin, cost, planned, auto");
}
