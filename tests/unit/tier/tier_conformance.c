/*
 * tier_conformance.c — the tier conformance suite (tier_conformance.h):
 * what any tier (memory, once per policy, and the test-only asynchronous
 * tier now; disk and Redis later) must do, through its ops and the tier
 * base only, whatever policy orders it. Linked with one file per tier
 * that defines bc_conformance.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "chunk/chunk.h"
#include "tier_conformance.h"
#include "util/util_error.h"
#include "util/util_list.h"
#include "util/util_time.h"

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

/* ---- the loop a test's tier calls back on ------------------------------- */

static bc_loop_t *loop;
static pthread_t  loop_thread;
static int        tiers_open;

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

/* A barrier: returns once everything queued on the loop before it ran. */
struct barrier {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
	pthread_t       thread;
};

static void
barrier_fn(bc_loop_t *l, void *arg)
{
	struct barrier *b = arg;

	(void)l;
	pthread_mutex_lock(&b->mu);
	b->thread = pthread_self();
	b->done = true;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static pthread_t
loop_barrier(void)
{
	struct barrier b = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, pthread_self() };

	cr_assert_eq(bc_loop_call(loop, barrier_fn, &b), 0);
	pthread_mutex_lock(&b.mu);
	while (!b.done)
		pthread_cond_wait(&b.cv, &b.mu);
	pthread_mutex_unlock(&b.mu);
	return b.thread;
}

static bc_tier_t *
open_tier(uint64_t capacity, const bc_policy_ops_t *pol)
{
	if (tiers_open++ == 0) {
		loop = bc_loop_new(no_xfers);
		cr_assert_not_null(loop);
		cr_assert_eq(bc_loop_start(loop), 0);
		loop_thread = loop_barrier();
	}
	return C->open(capacity, pol != NULL ? pol : C->policy, loop);
}

static void
close_tier(bc_tier_t *t)
{
	loop_barrier();   /* no callback of t's still queued */
	C->close(t);
	if (--tiers_open == 0) {
		bc_loop_stop(loop, NULL, NULL);
		bc_loop_free(loop);
		loop = NULL;
	}
}

/* ---- get, through lookup() or get() ------------------------------------- */

struct wait_get {
	bc_tier_get_t          req;
	bc_tier_t             *t;
	const bc_chunk_key_t  *k;
	const bc_policy_ctx_t *ctx;
	pthread_mutex_t        mu;
	pthread_cond_t         cv;
	bool                   returned, done;
	int                    rv, status, calls;
	bool                   early, off_loop;
	bc_chunk_t            *c;
};

static void
on_got(bc_tier_get_t *req, int status, bc_chunk_t *c)
{
	struct wait_get *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->calls++;
	w->early = !w->returned;
	w->off_loop = !pthread_equal(pthread_self(), loop_thread);
	w->status = status;
	w->c = c;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
issue(struct wait_get *w)
{
	int rv = C->ops->get(w->t, &w->req, w->k, w->ctx, on_got);

	pthread_mutex_lock(&w->mu);
	w->rv = rv;
	w->returned = true;
	if (rv < 0)
		w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
issue_on_loop(bc_loop_t *l, void *arg)
{
	(void)l;
	issue(arg);
}

/*
 * get() of k, made on the loop thread (on_loop) or on this one, waited
 * for. Returns the chunk or NULL, and in *why NULL or what broke the
 * contract (so that worker threads need not assert). From another thread
 * than the loop, a callback before get() returned cannot be told from a
 * prompt one; it shows as a callback on the wrong thread instead.
 */
static bc_chunk_t *
get_async(bc_tier_t *t, const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bool on_loop, const char **why)
{
	struct wait_get w = { .t = t, .k = k, .ctx = ctx,
	    .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

	*why = NULL;
	w.req.data = &w;
	if (on_loop) {
		if (bc_loop_call(loop, issue_on_loop, &w) < 0) {
			*why = "bc_loop_call failed";
			return NULL;
		}
	} else {
		issue(&w);
	}
	pthread_mutex_lock(&w.mu);
	while (!w.done || !w.returned)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	if (w.rv < 0) {
		loop_barrier();   /* a stray callback would have fired */
		if (w.calls != 0)
			*why = "the callback fired after get() returned an error";
		else if (w.rv != BC_ENOENT)
			*why = "get() failed";
		return NULL;
	}
	if (on_loop && w.early)
		*why = "the callback fired before get() returned";
	else if (w.off_loop)
		*why = "the callback fired off the loop thread";
	else if (w.status == 0 && w.c == NULL)
		*why = "a hit without a chunk";
	else if (w.status != 0 && w.c != NULL)
		*why = "a chunk with an error";
	else if (w.status != 0 && w.status != BC_ENOENT)
		*why = "the callback reported an error";
	else if (w.c != NULL && !bc_chunk_matches(w.c, k))
		*why = "a hit on another key";
	return w.c;
}

/* The tier's chunk for k (a reference the caller drops), or NULL. */
static bc_chunk_t *
conformance_get(bc_tier_t *t, const char *bucket, const char *key,
    const char *etag, uint32_t index, const bc_policy_ctx_t *ctx)
{
	bc_chunk_key_t k = { bucket, key, etag, index };
	bc_chunk_t    *c;
	const char    *why;

	if (!(C->ops->flags & BC_TIER_SYNC)) {
		c = get_async(t, &k, ctx, true, &why);
		cr_assert_null(why, "%s: %s", C->ops->name, why);
		return c;
	}
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
	bc_tier_t  *t = open_tier(4 * MiB, NULL);
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
	close_tier(t);
}

/* The optional has() op (warm-ups): what the tier's index holds, with
 * no policy event or counter. */
LTest(conformance, has_says_what_the_tier_holds)
{
	bc_tier_t *t;
	uint64_t hits, misses;

	if (C->ops->has == NULL)
		return;   /* the tier cannot tell: allowed */
	t = open_tier(4 * MiB, NULL);
	cr_assert_eq(put_new(t, "a", 0, 1000, &demand), 0);
	cr_assert_eq(put_new(t, "a", 1, 10, &demand), 0);
	hits = atomic_load(&t->stats.hits);
	misses = atomic_load(&t->stats.misses);
	cr_assert(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"", 0 }));
	cr_assert(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"", 1 }));
	cr_assert_not(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"f\"",
	    0 }), "another ETag");
	cr_assert_not(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    2 }), "another index");
	cr_assert_not(C->ops->has(t, &(bc_chunk_key_t){ "bk", "a", "\"e\"",
	    0 }), "another bucket");
	cr_assert_eq(atomic_load(&t->stats.hits), hits, "not counted");
	cr_assert_eq(atomic_load(&t->stats.misses), misses, "not counted");
	cr_assert_eq(C->ops->del(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    0 }), 0);
	cr_assert_not(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    0 }), "deleted");
	(void)C->ops->del_object(t, "bkt", "a", NULL);
	cr_assert_not(C->ops->has(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    1 }), "its object deleted");
	close_tier(t);
}

LTest(conformance, del_object_and_prefix)
{
	bc_tier_t *t = open_tier(4 * MiB, NULL);
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
	close_tier(t);
}

/* ---- the capacity bound --------------------------------------------- */

/* Whether chunk ("k", i) is in t, for i < n, into held; returns how many. */
static unsigned
census(bc_tier_t *t, uint32_t n, bool *held)
{
	unsigned count = 0;

	for (uint32_t i = 0; i < n; i++) {
		held[i] = has(t, "bkt", "k", "\"e\"", i);
		count += held[i];
	}
	return count;
}

/* 64 chunks of 64 KiB do not fit 1 MiB: usage never passes the bound,
 * and whether room is made (eviction) or the newcomer refused (BC_E2BIG)
 * is the policy's choice; a chunk kept is there at once, a chunk refused
 * is not, and every kept chunk that went was evicted. */
LTest(conformance, capacity_bound)
{
	uint64_t    cap = 1 * MiB;
	bc_tier_t  *t = open_tier(cap, NULL);
	bool        held[64], after[64];
	unsigned    kept = 0, present;

	cr_assert_eq(C->ops->capacity(t), cap);
	for (uint32_t i = 0; i < 64; i++) {
		int rv = put_new(t, "k", i, 64 * KiB, &demand);

		cr_assert(rv == 0 || rv == BC_E2BIG, "put %u: %d", i, rv);
		cr_assert(rv == 0 || i > 0, "an empty tier takes what fits");
		cr_assert_leq(C->ops->usage(t), cap, "after put %u", i);
		cr_assert_eq(has(t, "bkt", "k", "\"e\"", i), rv == 0,
		    "put %u answered %d", i, rv);
		kept += rv == 0;
	}
	present = census(t, 64, held);
	cr_assert_lt(present, 64, "64 chunks of 64 KiB in 1 MiB");
	cr_assert_eq(C->ops->evictions(t), kept - present,
	    "%u kept, %u there: the others were evicted", kept, present);
	/* bigger than the whole tier: refused, nothing changed */
	cr_assert_eq(put_new(t, "huge", 0, cap + 1, &demand), BC_E2BIG);
	cr_assert_not(has(t, "bkt", "huge", "\"e\"", 0));
	cr_assert_eq(census(t, 64, after), present);
	cr_assert(memcmp(held, after, sizeof(held)) == 0);
	close_tier(t);
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
	bc_tier_t *t = open_tier(5 * 64 * KiB, pol);

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
	close_tier(t);
	t = four_of(&mru);
	/* mru: the last one in before the fifth went, the first stayed */
	cr_assert(has(t, "bkt", "k", "\"e\"", 0));
	cr_assert_not(has(t, "bkt", "k", "\"e\"", 3));
	cr_assert(has(t, "bkt", "k", "\"e\"", 4));
	close_tier(t);
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
	t = open_tier(4 * MiB, &rec);
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
	close_tier(t);
	cr_assert_eq(rec_last->removes, 1, "close removed what it held");
	free(rec_last);
	rec_last = NULL;
}

/* ---- references held across eviction ----------------------------------- */

LTest(conformance, held_chunks_stay_intact)
{
	uint64_t    cap = 512 * KiB;
	bc_tier_t  *t = open_tier(cap, NULL);
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
	close_tier(t);
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

/* A get from a worker thread (get() made on it, for non-SYNC tiers),
 * counting what breaks the contract instead of asserting. */
static bc_chunk_t *
worker_get(bc_tier_t *t, const char *key, uint32_t idx, _Atomic int *bad)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", idx };
	bc_chunk_t    *c;
	const char    *why = NULL;

	if (C->ops->flags & BC_TIER_SYNC)
		c = C->ops->lookup(t, &k, &demand);
	else
		c = get_async(t, &k, &demand, false, &why);
	if (why != NULL || (c != NULL && !bc_chunk_matches(c, &k)))
		atomic_fetch_add(bad, 1);
	return c;
}

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
			c = worker_get(w->t, key, idx, w->bad);
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
	bc_tier_t    *t = open_tier(cap, NULL);
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
	close_tier(t);
}

/* ---- the ops table ------------------------------------------------------- */

LTest(conformance, ops_are_complete)
{
	const bc_tier_ops_t *o = C->ops;
	bc_tier_t           *t;

	cr_assert_not_null(o->name);
	cr_assert(o->open && o->put && o->del && o->del_object &&
	    o->capacity && o->set_capacity && o->usage && o->evictions &&
	    o->close, "%s: an op every tier has is missing", o->name);
	if (o->flags & BC_TIER_SYNC)
		cr_assert_not_null(o->lookup, "a SYNC tier looks up");
	else
		cr_assert_not_null(o->get, "a non-SYNC tier gets");
	t = open_tier(1 * MiB, NULL);
	cr_assert_eq(t->ops, o);
	cr_assert_str_eq(t->name, o->name, "the base is initialised");
	cr_assert_not_null(t->priv);
	cr_assert_eq(bc_tier_health(t), BC_TIER_UP, "a new tier is up");
	close_tier(t);
}

/* ---- the counters every tier keeps ------------------------------------- */

#define STAT(t, f) atomic_load(&(t)->stats.f)

LTest(conformance, stats_count_what_happened)
{
	bc_tier_t  *t = open_tier(1 * MiB, NULL);
	bc_chunk_t *c;
	unsigned    refused = 0;

	cr_assert_eq(put_new(t, "a", 0, 1000, &demand), 0);
	cr_assert_eq(put_new(t, "a", 1, 3000, &demand), 0);
	cr_assert_eq(STAT(t, writes), 2);
	c = conformance_get(t, "bkt", "a", "\"e\"", 1, &demand);
	cr_assert_not_null(c);
	bc_chunk_unref(c);
	cr_assert_not(has(t, "bkt", "nope", "\"e\"", 0));
	cr_assert_eq(STAT(t, hits), 1);
	cr_assert_eq(STAT(t, misses), 1);
	cr_assert_eq(STAT(t, bytes_read), 3000);
	cr_assert_eq(put_new(t, "huge", 0, 2 * MiB, &demand), BC_E2BIG);
	cr_assert_eq(STAT(t, rejects), 1);
	cr_assert_eq(STAT(t, writes), 2, "a refused put is no write");
	cr_assert_eq(C->ops->del(t, &(bc_chunk_key_t){ "bkt", "a", "\"e\"",
	    0 }), 0);
	cr_assert_eq(STAT(t, deletes), 1);
	cr_assert_eq(C->ops->del_object(t, "bkt", "a", NULL), 1);
	cr_assert_eq(STAT(t, deletes), 2);
	/* 24 chunks of 64 KiB do not fit 1 MiB: evicted or refused, as the
	 * policy chooses, and counted either way */
	for (uint32_t i = 0; i < 24; i++) {
		int rv = put_new(t, "k", i, 64 * KiB, &demand);

		cr_assert(rv == 0 || rv == BC_E2BIG, "put %u: %d", i, rv);
		refused += rv != 0;
	}
	cr_assert_gt(STAT(t, evictions) + refused, 0);
	cr_assert_eq(STAT(t, rejects), 1 + refused);
	cr_assert_eq(STAT(t, writes), 2 + 24 - refused);
	cr_assert_eq(STAT(t, evictions), C->ops->evictions(t));
	cr_assert_eq(STAT(t, write_failures), 0);
	cr_assert_eq(STAT(t, errors), 0);
	cr_assert_eq(STAT(t, downs), 0);
	close_tier(t);
}

/* ---- set_capacity ------------------------------------------------------- */

/* Shrinking evicts, in the policy's order (which chunks stay is its
 * choice), down to the new bound and no further; puts keep to it, by
 * eviction or refusal; growing evicts nothing and lets more in. */
LTest(conformance, set_capacity_evicts_down_to_the_bound)
{
	bc_tier_t *t = open_tier(1 * MiB, NULL);
	bool       held[12];
	uint64_t   ev;

	for (uint32_t i = 0; i < 12; i++)
		cr_assert_eq(put_new(t, "k", i, 64 * KiB, &demand), 0,
		    "put %u: every policy takes what fits", i);
	cr_assert_eq(C->ops->evictions(t), 0, "12 chunks of 64 KiB fit");
	cr_assert_gt(C->ops->usage(t), 12 * 64 * KiB);
	cr_assert_eq(C->ops->set_capacity(t, 256 * KiB), 0);
	cr_assert_eq(C->ops->capacity(t), 256 * KiB);
	cr_assert_leq(C->ops->usage(t), 256 * KiB);
	cr_assert_eq(C->ops->evictions(t), 9, "3 fit in 256 KiB, 4 do not");
	cr_assert_eq(census(t, 12, held), 3);
	for (uint32_t i = 0; i < 12; i++) {
		bc_chunk_t *c;

		if (!held[i])
			continue;
		c = conformance_get(t, "bkt", "k", "\"e\"", i, &demand);
		cr_assert_not_null(c);
		cr_assert(intact(c, "k", i, 64 * KiB), "chunk %u changed", i);
		bc_chunk_unref(c);
	}
	/* the new bound holds for puts */
	for (uint32_t i = 12; i < 20; i++) {
		int rv = put_new(t, "k", i, 64 * KiB, &demand);

		cr_assert(rv == 0 || rv == BC_E2BIG, "put %u: %d", i, rv);
		cr_assert_leq(C->ops->usage(t), 256 * KiB);
	}
	cr_assert_eq(put_new(t, "big", 0, 300 * KiB, &demand), BC_E2BIG);
	/* growing evicts nothing and lets more in */
	cr_assert_eq(C->ops->set_capacity(t, 2 * MiB), 0);
	ev = C->ops->evictions(t);
	for (uint32_t i = 20; i < 40; i++)
		cr_assert_eq(put_new(t, "k", i, 64 * KiB, &demand), 0);
	cr_assert_eq(C->ops->evictions(t), ev, "20 fit in 2 MiB");
	cr_assert_eq(put_new(t, "big", 0, 300 * KiB, &demand), 0);
	cr_assert_leq(C->ops->usage(t), 2 * MiB);
	close_tier(t);
}

/* Shrinking evicts in the policy's order: lru keeps the newest three,
 * the suite's mru the oldest. */
LTest(conformance, set_capacity_follows_the_policy)
{
	static const struct {
		const bc_policy_ops_t *pol;
		uint32_t               first;   /* of the 3 that stay */
	} cases[] = { { &bc_policy_lru, 9 }, { &mru, 0 } };
	bool held[12];

	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		bc_tier_t *t = open_tier(1 * MiB, cases[c].pol);

		for (uint32_t i = 0; i < 12; i++)
			cr_assert_eq(put_new(t, "k", i, 64 * KiB, &demand), 0);
		cr_assert_eq(C->ops->set_capacity(t, 256 * KiB), 0);
		cr_assert_eq(census(t, 12, held), 3, "%s", cases[c].pol->name);
		for (uint32_t i = 0; i < 12; i++)
			cr_assert_eq(held[i], i >= cases[c].first &&
			    i < cases[c].first + 3, "%s: chunk %u",
			    cases[c].pol->name, i);
		close_tier(t);
	}
}

/* ---- health ------------------------------------------------------------ */

#define SEC 1000000000ull

LTest(conformance, health_transitions)
{
	bc_tier_t *t = open_tier(1 * MiB, NULL);
	uint64_t   now = bc_mono_ns(), min = BC_TIER_RETRY_MIN_NS, at;

	cr_assert_eq(bc_tier_backoff_ns(1), min);
	cr_assert_eq(bc_tier_backoff_ns(2), 2 * min);
	cr_assert_eq(bc_tier_backoff_ns(3), 4 * min);
	cr_assert_eq(bc_tier_backoff_ns(1000), BC_TIER_RETRY_MAX_NS, "capped");
	cr_assert(bc_tier_usable(t, now));
	/* down: skipped until the retry time */
	bc_tier_mark_down(t, BC_EIO, now);
	cr_assert_eq(bc_tier_health(t), BC_TIER_DOWN);
	cr_assert_eq(STAT(t, downs), 1);
	cr_assert_eq(atomic_load(&t->health.last_err), BC_EIO);
	cr_assert_eq(atomic_load(&t->health.down_since_ns), now);
	cr_assert_eq(atomic_load(&t->health.failures), 1);
	cr_assert_not(bc_tier_usable(t, now));
	cr_assert_not(bc_tier_usable(t, now + min - 1));
	/* the retry time came: one caller probes, the next waits again */
	cr_assert(bc_tier_usable(t, now + min));
	cr_assert_not(bc_tier_usable(t, now + min), "one probe per period");
	/* the probe failed: still down (no second transition), longer wait */
	bc_tier_mark_down(t, BC_ETIMEDOUT, now + min);
	cr_assert_eq(STAT(t, downs), 1, "one down per transition");
	cr_assert_eq(atomic_load(&t->health.failures), 2);
	cr_assert_eq(atomic_load(&t->health.down_since_ns), now);
	at = atomic_load(&t->health.retry_at_ns);
	cr_assert_eq(at, now + min + 2 * min);
	cr_assert_not(bc_tier_usable(t, at - 1));
	cr_assert(bc_tier_usable(t, at));
	/* the probe answered: up, failures forgotten */
	bc_tier_mark_up(t, at);
	cr_assert_eq(bc_tier_health(t), BC_TIER_UP);
	cr_assert_eq(atomic_load(&t->health.failures), 0);
	cr_assert(bc_tier_usable(t, at));
	/* the next failure starts from the shortest wait again */
	bc_tier_mark_down(t, BC_EIO, at + SEC);
	cr_assert_eq(STAT(t, downs), 2);
	cr_assert_eq(atomic_load(&t->health.retry_at_ns), at + SEC + min);
	bc_tier_mark_up(t, at + 2 * SEC);
	close_tier(t);
}
