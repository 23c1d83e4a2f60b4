/*
 * test_policy_lru.c — policy/: the LRU policy's order (insert, hit,
 * remove at head/middle/tail), choose_victim's skip callback, a random
 * sequence checked against an array model, and bc_policy_find().
 *
 * Cases are tables of ops on chunks named by one letter: "+a" inserts a,
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

#include "cache/cache_chunk.h"
#include "policy/policy.h"

/* Under ASan, a leak fails the test (see tests/unit/config/test_config.c:
 * LeakSanitizer's report at the worker's exit does not change the
 * result), so every test body ends with a recoverable leak check. */
#define NLETTERS 26

static bc_chunk_t *
mk(const char *key, uint32_t index)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", index };
	bc_chunk_t    *c = bc_chunk_new(&k, NULL, 0);

	cr_assert_not_null(c);
	return c;
}

/* The chunk's key (the id's second string). */
static const char *
keyof(const bc_chunk_t *c)
{
	return c->id + strlen(c->id) + 1;
}

static bool
skip_letters(void *arg, const bc_chunk_t *c)
{
	return strchr(arg, keyof(c)[0]) != NULL;
}

/* Drains p into out (letters, in victim order), skipping skip's letters. */
static void
drain(const bc_policy_ops_t *ops, bc_policy_t *p, const char *skip,
    char *out)
{
	bc_chunk_t *v;
	size_t      n = 0;

	for (;;) {
		v = ops->choose_victim(p, skip_letters, (void *)skip);
		if (v == NULL)
			break;
		cr_assert_lt(n, NLETTERS, "more victims than chunks");
		out[n++] = keyof(v)[0];
		ops->on_remove(p, v);
		cr_assert_null(v->pol_prev);
		cr_assert_null(v->pol_next);
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
	bc_policy_t           *p = ops->new();
	bc_chunk_t            *ch[NLETTERS] = { 0 };
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
			cr_assert(ops->admit(p, ch[l - 'a']));
			ops->on_insert(p, ch[l - 'a']);
		} else if (op == '*') {
			ops->on_hit(p, ch[l - 'a']);
		} else {
			ops->on_remove(p, ch[l - 'a']);
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
		bc_chunk_unref(ch[i]);
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
record(void *arg, const bc_chunk_t *c)
{
	struct seen *s = arg;

	s->order[s->n++] = keyof(c)[0];
	s->order[s->n] = '\0';
	return keyof(c)[0] != s->stop;
}

LTest(lru, skip_walks_from_tail)
{
	const bc_policy_ops_t *ops = &bc_policy_lru;
	bc_policy_t           *p = ops->new();
	bc_chunk_t            *a = mk("a", 0), *b = mk("b", 0);
	bc_chunk_t            *c = mk("c", 0), *d = mk("d", 0);
	struct seen            s = { .stop = 'b' };

	ops->on_insert(p, a);
	ops->on_insert(p, b);
	ops->on_insert(p, c);
	ops->on_insert(p, d);
	ops->on_hit(p, a);             /* order, oldest first: b c d a */
	cr_assert_eq(ops->choose_victim(p, record, &s), b);
	cr_assert_str_eq(s.order, "b");
	s.n = 0;
	s.stop = 'a';
	cr_assert_eq(ops->choose_victim(p, record, &s), a);
	cr_assert_str_eq(s.order, "bcda");
	s.n = 0;
	s.stop = 'x';
	cr_assert_null(ops->choose_victim(p, record, &s));
	cr_assert_str_eq(s.order, "bcda");
	/* choose_victim only chooses: nothing was removed. */
	s.n = 0;
	s.stop = 'b';
	cr_assert_eq(ops->choose_victim(p, record, &s), b);
	ops->on_remove(p, a);
	ops->on_remove(p, b);
	ops->on_remove(p, c);
	ops->on_remove(p, d);
	cr_assert_null(ops->choose_victim(p, record, &s));
	ops->free(p);
	bc_chunk_unref(a);
	bc_chunk_unref(b);
	bc_chunk_unref(c);
	bc_chunk_unref(d);
}

/* A random mix of inserts, hits and removes on 64 chunks, checked after
 * every step against an array kept in recency order. */
#define NMODEL 64

static bool
no_skip(void *arg, const bc_chunk_t *c)
{
	(void)arg;
	(void)c;
	return false;
}

LTest(lru, random_against_model)
{
	const bc_policy_ops_t *ops = &bc_policy_lru;
	bc_policy_t           *p = ops->new();
	bc_chunk_t            *ch[NMODEL];
	int                    model[NMODEL];    /* [0] least recent */
	bool                   in[NMODEL] = { 0 };
	int                    n = 0;
	unsigned               seed = 12345;

	for (int i = 0; i < NMODEL; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		ch[i] = mk(key, (uint32_t)i);
	}
	for (int step = 0; step < 20000; step++) {
		int x = rand_r(&seed) % NMODEL, op = rand_r(&seed) % 4;
		int j;

		for (j = 0; j < n && model[j] != x; j++)
			;
		if (!in[x]) {
			ops->on_insert(p, ch[x]);
			model[n++] = x;
			in[x] = true;
		} else if (op == 0) {
			ops->on_remove(p, ch[x]);
			memmove(&model[j], &model[j + 1],
			    (size_t)(n - j - 1) * sizeof(model[0]));
			n--;
			in[x] = false;
		} else if (op == 1 && n > 0) {
			/* evict the victim */
			bc_chunk_t *v = ops->choose_victim(p, no_skip, NULL);

			cr_assert_eq(v, ch[model[0]], "step %d", step);
			ops->on_remove(p, v);
			in[model[0]] = false;
			memmove(&model[0], &model[1],
			    (size_t)(n - 1) * sizeof(model[0]));
			n--;
		} else {
			ops->on_hit(p, ch[x]);
			memmove(&model[j], &model[j + 1],
			    (size_t)(n - j - 1) * sizeof(model[0]));
			model[n - 1] = x;
		}
		if (n > 0)
			cr_assert_eq(ops->choose_victim(p, no_skip, NULL),
			    ch[model[0]], "step %d", step);
		else
			cr_assert_null(ops->choose_victim(p, no_skip, NULL));
	}
	/* The whole order, not just the tail. */
	for (int j = 0; j < n; j++) {
		bc_chunk_t *v = ops->choose_victim(p, no_skip, NULL);

		cr_assert_eq(v, ch[model[j]], "position %d", j);
		ops->on_remove(p, v);
	}
	cr_assert_null(ops->choose_victim(p, no_skip, NULL));
	ops->free(p);
	for (int i = 0; i < NMODEL; i++)
		bc_chunk_unref(ch[i]);
}

LTest(lru, admits_everything)
{
	bc_policy_t *p = bc_policy_lru.new();
	bc_chunk_key_t k = { "b", "k", "\"e\"", 7 };
	uint8_t       *big = malloc(1 << 20);
	bc_chunk_t    *c;

	cr_assert_not_null(big);
	c = bc_chunk_new(&k, big, 1 << 20);
	cr_assert_not_null(c);
	cr_assert(bc_policy_lru.admit(p, c));
	bc_chunk_unref(c);
	bc_policy_lru.free(p);
	bc_policy_lru.free(NULL);
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
		{ "pin", NULL },
	};

	for (size_t i = 0; i < sizeof(fc) / sizeof(fc[0]); i++)
		cr_expect_eq(bc_policy_find(fc[i].name), fc[i].want, "%s",
		    fc[i].name);
	cr_expect_null(bc_policy_find(NULL));
	cr_expect_str_eq(bc_policy_lru.name, "lru");
}
