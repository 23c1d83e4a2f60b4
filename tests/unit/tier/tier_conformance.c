/*
 * tier_conformance.c — the tier conformance suite (tier_conformance.h):
 * what any tier (memory now; disk and Redis later) must do, through its
 * ops only. Linked with one file per tier that defines bc_conformance.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "cache/cache_chunk.h"
#include "tier_conformance.h"
#include "util/util_error.h"
#include "util/util_list.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

#define C (&bc_conformance)

static const bc_policy_ctx_t demand = { 1000, "job-a", "bkt", false };

/* ---- helpers ---------------------------------------------------------- */

static uint8_t
byte_of(const char *key, uint32_t index, size_t i)
{
	unsigned s = index * 131u + (unsigned)i * 7u;

	for (; *key != '\0'; key++)
		s = s * 31u + (unsigned char)*key;
	return (uint8_t)s;
}

/* A chunk of len bytes whose content derives from (key, index). */
static bc_chunk_t *
mk(const char *bucket, const char *key, const char *etag, uint32_t index,
    size_t len)
{
	bc_chunk_key_t k = { bucket, key, etag, index };
	uint8_t       *d = malloc(len > 0 ? len : 1);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = byte_of(key, index, i);
	c = bc_chunk_new(&k, d, len);
	cr_assert_not_null(c);
	return c;
}

static bool
intact(const bc_chunk_t *c, const char *key, uint32_t index, size_t len)
{
	if (c->len != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (c->data[i] != byte_of(key, index, i))
			return false;
	return true;
}

/* The tier's chunk for k (a reference the caller drops), or NULL. */
static bc_chunk_t *
conformance_get(bc_tier_t *t, const char *bucket, const char *key,
    const char *etag, uint32_t index, const bc_policy_ctx_t *ctx)
{
	bc_chunk_key_t k = { bucket, key, etag, index };
	bc_chunk_t    *c;

	cr_assert(C->ops->flags & BC_TIER_SYNC,
	    "%s: only SYNC tiers are driven yet", C->ops->name);
	c = C->ops->lookup(t, &k, ctx);
	if (c != NULL)
		cr_assert(bc_chunk_matches(c, &k), "a hit on another key");
	return c;
}

static bool
has(bc_tier_t *t, const char *bucket, const char *key, const char *etag,
    uint32_t index)
{
	bc_chunk_t *c = conformance_get(t, bucket, key, etag, index, &demand);

	bc_chunk_unref(c);
	return c != NULL;
}

/* Puts a new chunk and drops the test's reference. */
static int
put_new(bc_tier_t *t, const char *key, uint32_t index, size_t len,
    const bc_policy_ctx_t *ctx)
{
	bc_chunk_t *c = mk("bkt", key, "\"e\"", index, len);
	int         rv = C->ops->put(t, c, ctx);

	bc_chunk_unref(c);
	return rv;
}

/* ---- get, put, del ------------------------------------------------------ */

LTest(conformance, put_get_del)
{
	bc_tier_t  *t = C->open(4 * MiB, NULL);
	bc_chunk_t *c;

	cr_assert_eq(put_new(t, "a", 0, 1000, &demand), 0);
	cr_assert_eq(put_new(t, "a", 1, 2000, &demand), 0);
	cr_assert_eq(put_new(t, "b", 0, 0, &demand), 0);   /* empty is fine */
	c = conformance_get(t, "bkt", "a", "\"e\"", 1, &demand);
	cr_assert_not_null(c);
	cr_assert(intact(c, "a", 1, 2000), "bytes changed");
	bc_chunk_unref(c);
	c = conformance_get(t, "bkt", "b", "\"e\"", 0, &demand);
	cr_assert_not_null(c);
	cr_assert_eq(c->len, 0);
	bc_chunk_unref(c);
	/* misses: another ETag, index, key, bucket */
	cr_assert_not(has(t, "bkt", "a", "\"f\"", 0));
	cr_assert_not(has(t, "bkt", "a", "\"e\"", 2));
	cr_assert_not(has(t, "bkt", "c", "\"e\"", 0));
	cr_assert_not(has(t, "bk", "a", "\"e\"", 0));
	cr_assert_gt(C->ops->usage(t), 3000);
	/* del */
	cr_assert_eq(C->ops->del(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    0 }), 0);
	cr_assert_not(has(t, "bkt", "a", "\"e\"", 0));
	cr_assert(has(t, "bkt", "a", "\"e\"", 1));
	cr_assert_eq(C->ops->del(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    0 }), BC_ENOENT);
	/* a put of the same key replaces */
	cr_assert_eq(put_new(t, "a", 1, 500, &demand), 0);
	c = conformance_get(t, "bkt", "a", "\"e\"", 1, &demand);
	cr_assert_not_null(c);
	cr_assert(intact(c, "a", 1, 500));
	bc_chunk_unref(c);
	C->close(t);
}

LTest(conformance, del_object_and_prefix)
{
	bc_tier_t *t = C->open(4 * MiB, NULL);
	static const struct {
		const char *bucket, *key, *etag;
		uint32_t    index;
	} objs[] = {
		{ "bkt", "obj", "\"1\"", 0 }, { "bkt", "obj", "\"1\"", 1 },
		{ "bkt", "obj", "\"2\"", 0 }, { "bkt", "obj2", "\"1\"", 0 },
		{ "bkt", "data/a", "\"1\"", 0 }, { "bkt", "data/b", "\"1\"", 3 },
		{ "bkt", "datb", "\"1\"", 0 }, { "other", "data/a", "\"1\"", 0 },
	};

	for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++) {
		bc_chunk_t *c = mk(objs[i].bucket, objs[i].key, objs[i].etag,
		    objs[i].index, 100);

		cr_assert_eq(C->ops->put(t, c, &demand), 0);
		bc_chunk_unref(c);
	}
	/* every chunk of one object, whatever its ETag */
	cr_assert_eq(C->ops->del_object(t, "bkt", "obj", NULL), 3);
	cr_assert_not(has(t, "bkt", "obj", "\"2\"", 0));
	cr_assert(has(t, "bkt", "obj2", "\"1\"", 0));
	/* every object under a prefix of one bucket */
	cr_assert_eq(C->ops->del_object(t, "bkt", NULL, "data/"), 2);
	cr_assert(has(t, "bkt", "datb", "\"1\"", 0));
	cr_assert(has(t, "other", "data/a", "\"1\"", 0));
	cr_assert_eq(C->ops->del_object(t, "bkt", NULL, ""), 2);
	cr_assert(has(t, "other", "data/a", "\"1\"", 0));
	C->close(t);
}

/* ---- the capacity bound --------------------------------------------- */

LTest(conformance, capacity_bound)
{
	uint64_t    cap = 1 * MiB;
	bc_tier_t  *t = C->open(cap, NULL);

	cr_assert_eq(C->ops->capacity(t), cap);
	for (uint32_t i = 0; i < 64; i++) {
		cr_assert_eq(put_new(t, "k", i, 64 * KiB, &demand), 0,
		    "put %u", i);
		cr_assert_leq(C->ops->usage(t), cap, "after put %u", i);
		cr_assert(has(t, "bkt", "k", "\"e\"", i), "the newest, %u", i);
	}
	cr_assert_gt(C->ops->evictions(t), 0);
	cr_assert_not(has(t, "bkt", "k", "\"e\"", 0));
	/* bigger than the whole tier: refused, nothing changed */
	cr_assert_eq(put_new(t, "huge", 0, cap + 1, &demand), BC_E2BIG);
	cr_assert_not(has(t, "bkt", "huge", "\"e\"", 0));
	cr_assert(has(t, "bkt", "k", "\"e\"", 63));
	C->close(t);
}

/* ---- eviction in the policy's order ----------------------------------- */

/* Most recently inserted first: the reverse of what a tier would do on
 * its own, so the test tells whose order was followed. */
struct bc_policy_s {
	bc_list_t         nodes;         /* most recent first */
	int               inserts, hits, removes;
	bc_policy_ctx_t   last;          /* of the last insert or hit */
	char              dataset[16], job[16];
	uint64_t          last_size;
};

static bc_policy_t *
mru_new(const bc_policy_opts_t *o)
{
	bc_policy_t *p = calloc(1, sizeof(*p));

	(void)o;
	if (p != NULL)
		bc_list_init(&p->nodes);
	return p;
}

static void
mru_free(bc_policy_t *p)
{
	free(p);
}

static void
remember(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	p->last = *ctx;
	snprintf(p->dataset, sizeof(p->dataset), "%s",
	    ctx->dataset != NULL ? ctx->dataset : "(null)");
	snprintf(p->job, sizeof(p->job), "%s",
	    ctx->job != NULL ? ctx->job : "(null)");
	p->last_size = n->size;
}

static bool
mru_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)n;
	(void)ctx;
	return true;
}

static void
mru_on_insert(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	bc_list_insert_head(&p->nodes, &n->link);
	p->inserts++;
	remember(p, n, ctx);
}

static void
mru_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	p->hits++;
	remember(p, n, ctx);
}

static void
mru_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	bc_list_remove(&n->link);
	p->removes++;
}

static bc_policy_node_t *
mru_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	bc_list_t        *l;
	bc_policy_node_t *n;

	BC_LIST_FOREACH(l, &p->nodes) {
		n = BC_CONTAINER_OF(l, bc_policy_node_t, link);
		if (skip == NULL || !skip(arg, n))
			return n;
	}
	return NULL;
}

static void
mru_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
}

static const bc_policy_ops_t mru = {
	.name = "test-mru",
	.new = mru_new,
	.free = mru_free,
	.admit = mru_admit,
	.on_insert = mru_on_insert,
	.on_hit = mru_on_hit,
	.on_remove = mru_on_remove,
	.choose_victim = mru_choose_victim,
	.set_target = mru_set_target,
};

/* Puts chunks of 64 KiB into a tier that holds 4 of them but not 5. */
static bc_tier_t *
four_of(const bc_policy_ops_t *pol)
{
	bc_tier_t *t = C->open(5 * 64 * KiB, pol);

	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(put_new(t, "k", i, 64 * KiB, &demand), 0);
	cr_assert_eq(C->ops->evictions(t), 0, "4 chunks must fit");
	cr_assert_eq(put_new(t, "k", 4, 64 * KiB, &demand), 0);
	cr_assert_gt(C->ops->evictions(t), 0, "5 chunks must not fit");
	return t;
}

LTest(conformance, eviction_follows_the_policy)
{
	bc_tier_t *t = four_of(&bc_policy_lru);

	/* lru: the first in went */
	cr_assert_not(has(t, "bkt", "k", "\"e\"", 0));
	cr_assert(has(t, "bkt", "k", "\"e\"", 3));
	cr_assert(has(t, "bkt", "k", "\"e\"", 4));
	C->close(t);
	t = four_of(&mru);
	/* mru: the last one in before the fifth went, the first stayed */
	cr_assert(has(t, "bkt", "k", "\"e\"", 0));
	cr_assert_not(has(t, "bkt", "k", "\"e\"", 3));
	cr_assert(has(t, "bkt", "k", "\"e\"", 4));
	C->close(t);
}

/* The policy sees what the caller gave: a tier keeps its policy
 * instance private, so the instance is caught as it is made. */
static bc_policy_t *rec_last;

static bc_policy_t *
rec_new(const bc_policy_opts_t *o)
{
	rec_last = mru_new(o);
	return rec_last;
}

static void
rec_free(bc_policy_t *p)
{
	(void)p;   /* kept for the checks; freed by the test */
}

LTest(conformance, context_reaches_the_policy)
{
	bc_policy_ops_t  rec = mru;
	bc_policy_ctx_t  pre = { 2000, "job-b", "data", true };
	bc_tier_t       *t;
	bc_chunk_t      *c;

	rec.new = rec_new;
	rec.free = rec_free;
	t = C->open(4 * MiB, &rec);
	cr_assert_eq(put_new(t, "a", 0, 1000, &pre), 0);
	cr_assert_eq(rec_last->inserts, 1);
	cr_assert_eq(rec_last->last.now_ns, 2000);
	cr_assert_str_eq(rec_last->job, "job-b");
	cr_assert_str_eq(rec_last->dataset, "data");
	cr_assert(rec_last->last.prefetch);
	cr_assert_geq(rec_last->last_size, 1000, "the node's size is set");
	c = conformance_get(t, "bkt", "a", "\"e\"", 0, &demand);
	cr_assert_not_null(c);
	bc_chunk_unref(c);
	cr_assert_eq(rec_last->hits, 1);
	cr_assert_eq(rec_last->last.now_ns, 1000);
	cr_assert_str_eq(rec_last->job, "job-a");
	cr_assert_str_eq(rec_last->dataset, "bkt");
	cr_assert_not(rec_last->last.prefetch);
	cr_assert_not(has(t, "bkt", "nope", "\"e\"", 0));
	cr_assert_eq(rec_last->hits, 1, "a miss is no hit");
	C->close(t);
	cr_assert_eq(rec_last->removes, 1, "close removed what it held");
	free(rec_last);
	rec_last = NULL;
}

/* ---- references held across eviction ----------------------------------- */

LTest(conformance, held_chunks_stay_intact)
{
	uint64_t    cap = 512 * KiB;
	bc_tier_t  *t = C->open(cap, NULL);
	bc_chunk_t *held;
	int         rv;

	cr_assert_eq(put_new(t, "h", 0, 64 * KiB, &demand), 0);
	held = conformance_get(t, "bkt", "h", "\"e\"", 0, &demand);
	cr_assert_not_null(held);
	for (uint32_t i = 0; i < 32; i++) {
		rv = put_new(t, "k", i, 64 * KiB, &demand);
		cr_assert(rv == 0 || rv == BC_E2BIG, "put %u: %d", i, rv);
		cr_assert_leq(C->ops->usage(t), cap, "put %u", i);
	}
	cr_assert(intact(held, "h", 0, 64 * KiB), "a held chunk changed");
	rv = C->ops->del(t, &(bc_chunk_key_t){ "bkt", "h", "\"e\"", 0 });
	cr_assert(rv == 0 || rv == BC_ENOENT, "%d", rv);   /* or evicted */
	cr_assert(intact(held, "h", 0, 64 * KiB), "deleted while held");
	bc_chunk_unref(held);
	C->close(t);
}

/* ---- concurrent use ------------------------------------------------------ */

#define THREADS 4
#define OPS     3000
#define KEYS    48

struct worker {
	bc_tier_t        *t;
	unsigned          seed;
	_Atomic int      *bad;
	uint64_t          cap;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	bc_chunk_t    *hold[4] = { 0 };
	char           key[16];

	for (int i = 0; i < OPS; i++) {
		int      r = rand_r(&w->seed) % 100;
		uint32_t idx = (uint32_t)(rand_r(&w->seed) % 3);
		size_t   len = 1000 + (size_t)idx * 7000;
		bc_chunk_t *c;

		snprintf(key, sizeof(key), "k%d", rand_r(&w->seed) % KEYS);
		if (r < 50) {
			c = conformance_get(w->t, "bkt", key, "\"e\"", idx,
			    &demand);
			if (c != NULL && !intact(c, key, idx, len))
				atomic_fetch_add(w->bad, 1);
			bc_chunk_unref(hold[i % 4]);
			hold[i % 4] = c;
		} else if (r < 90) {
			int rv = put_new(w->t, key, idx, len, &demand);

			if (rv != 0 && rv != BC_E2BIG)
				atomic_fetch_add(w->bad, 1);
		} else {
			int rv = C->ops->del(w->t, &(bc_chunk_key_t){ "bkt",
			    key, "\"e\"", idx });

			if (rv != 0 && rv != BC_ENOENT)
				atomic_fetch_add(w->bad, 1);
		}
		if (C->ops->usage(w->t) > w->cap)
			atomic_fetch_add(w->bad, 1);
	}
	for (int i = 0; i < 4; i++)
		bc_chunk_unref(hold[i]);
	return NULL;
}

LTest(conformance, concurrent_use)
{
	uint64_t      cap = 256 * KiB;
	bc_tier_t    *t = C->open(cap, NULL);
	pthread_t     th[THREADS];
	struct worker w[THREADS];
	_Atomic int   bad = 0;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ t, (unsigned)i * 7919u + 1, &bad,
		    cap };
		cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&bad), 0, "wrong bytes, codes or usage");
	cr_assert_leq(C->ops->usage(t), cap);
	C->close(t);
}
