/*
 * test_tier_chain.c — tier/tier_chain.c over a memory tier and the
 * test-only asynchronous tier (tier_async.h) as the lower tiers: probes
 * in order, first hit wins, called back on the loop and never before the
 * probe returned; a failing or down tier skipped, counted, retried after
 * its backoff and never failing the probe; puts and deletes reaching the
 * lower tiers through the queue, its bound and the drops counted; promote,
 * set_capacity, find, the places a tier may take, and a stopped loop.
 *
 * Time: a probe's clock is the later of its context's now_ns and the
 * monotonic clock, so the tests give contexts far in the future and step
 * them past a backoff instead of sleeping.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "tier/tier_chain.h"
#include "tier_async.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define SEC 1000000000ull
#define MIN_WAIT BC_TIER_RETRY_MIN_NS

#define STAT(t, f) atomic_load(&(t)->stats.f)

/* ---- fixture ------------------------------------------------------------ */

typedef struct fix_s {
	bc_loop_t       *loop;
	pthread_t        loop_thread;
	bc_tier_chain_t *ch;
	bc_tier_t       *mem, *a, *b;
	uint64_t         now;       /* a context time far ahead of the clock */
} fix_t;

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

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

/* Returns once everything queued on the loop before it ran. */
static pthread_t
loop_barrier(bc_loop_t *loop)
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
open_async(fix_t *f, const char *name, uint64_t cap)
{
	bc_tier_opts_t o = { .capacity = cap, .loop = f->loop, .name = name };
	bc_tier_t     *t = NULL;

	cr_assert_eq(bc_tier_async.open(&o, &t), 0);
	return t;
}

/* memory (mem_cap bytes) on top of `lower` asynchronous tiers "a", "b". */
static void
setup(fix_t *f, uint64_t mem_cap, int lower)
{
	bc_tier_opts_t o = { .capacity = mem_cap, .loop = NULL };

	memset(f, 0, sizeof(*f));
	f->loop = bc_loop_new(no_xfers);
	cr_assert_not_null(f->loop);
	cr_assert_eq(bc_loop_start(f->loop), 0);
	f->loop_thread = loop_barrier(f->loop);
	f->ch = bc_tier_chain_new(f->loop);
	cr_assert_not_null(f->ch);
	cr_assert_eq(bc_tier_chain_open(f->ch, &bc_tier_mem, &o), 0);
	f->mem = bc_tier_chain_top(f->ch);
	if (lower >= 1) {
		f->a = open_async(f, "a", 4 * MiB);
		cr_assert_eq(bc_tier_chain_add(f->ch, f->a), 0);
	}
	if (lower >= 2) {
		f->b = open_async(f, "b", 4 * MiB);
		cr_assert_eq(bc_tier_chain_add(f->ch, f->b), 0);
	}
	f->now = bc_mono_ns() + 1000 * SEC;
}

static void
teardown(fix_t *f)
{
	bc_tier_chain_free(f->ch);
	bc_loop_stop(f->loop, NULL, NULL);
	bc_loop_free(f->loop);
}

static bc_tier_async_ctl_t *
ctl(bc_tier_t *t)
{
	return bc_tier_async_ctl(t);
}

/* A chunk of len bytes, every one `fillc`. */
static bc_chunk_t *
mk(const char *key, uint32_t index, size_t len, uint8_t fillc)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", index };
	uint8_t       *d = malloc(len > 0 ? len : 1);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	memset(d, fillc, len);
	c = bc_chunk_new(&k, d, len);
	cr_assert_not_null(c);
	return c;
}

static bc_policy_ctx_t
ctx_at(uint64_t now)
{
	bc_policy_ctx_t ctx = { now, "job", "bkt", false };

	return ctx;
}

/* Puts a new chunk straight into tier t (not through the chain). */
static void
put_into(bc_tier_t *t, const char *key, size_t len, uint8_t fillc)
{
	bc_chunk_t     *c = mk(key, 0, len, fillc);
	bc_policy_ctx_t ctx = ctx_at(1);

	cr_assert_eq(t->ops->put(t, c, &ctx), 0);
	bc_chunk_unref(c);
}

/* ---- probing ---------------------------------------------------------- */

typedef struct pw_s {
	bc_tier_probe_t req;
	fix_t          *f;
	bc_chunk_key_t  k;
	bc_policy_ctx_t ctx;
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            returned, done, early, off_loop;
	int             rv, status, calls;
	bc_chunk_t     *c;
	size_t          from;
} pw_t;

static void
on_probe(bc_tier_probe_t *req, int status, bc_chunk_t *c, size_t from)
{
	pw_t *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->calls++;
	w->early = !w->returned;
	w->off_loop = !pthread_equal(pthread_self(), w->f->loop_thread);
	w->status = status;
	w->c = c;
	w->from = from;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
issue(pw_t *w)
{
	int rv;

	w->req.data = w;
	rv = bc_tier_chain_probe(w->f->ch, &w->req, &w->k, &w->ctx, on_probe);
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
 * Probes for (bkt, key, "e", 0) at now from this thread (or the loop's)
 * and waits. Returns the callback's status, or the probe's error (after
 * checking no callback follows); *c gets the chunk, *from the tier.
 */
static int
probe(fix_t *f, const char *key, uint64_t now, bool on_loop, bc_chunk_t **c,
    size_t *from)
{
	pw_t w = { .f = f, .k = { "bkt", key, "\"e\"", 0 }, .ctx = ctx_at(now),
	    .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

	if (on_loop)
		cr_assert_eq(bc_loop_call(f->loop, issue_on_loop, &w), 0);
	else
		issue(&w);
	pthread_mutex_lock(&w.mu);
	while (!w.done || !w.returned)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	*c = NULL;
	*from = 0;
	if (w.rv < 0) {
		if (w.rv != BC_ECANCELED)
			loop_barrier(f->loop);
		cr_assert_eq(w.calls, 0, "a callback after an error return");
		return w.rv;
	}
	cr_assert_eq(w.rv, 0);
	/* only a probe made on the loop can be early: from this thread the
	 * loop may call back before issue() saw the return (tier_chain.h) */
	if (on_loop)
		cr_assert_not(w.early, "called back before the probe returned");
	cr_assert_not(w.off_loop, "called back off the loop thread");
	cr_assert(w.status == 0 || w.status == BC_ENOENT,
	    "a probe ends with a chunk or a miss, not %d", w.status);
	cr_assert_eq(w.status == 0, w.c != NULL);
	if (w.c != NULL)
		cr_assert(bc_chunk_matches(w.c, &w.k));
	*c = w.c;
	*from = w.from;
	return w.status;
}

/* The probe's outcome as the index of the tier that had key (0: none),
 * checking the bytes are fillc's. */
static size_t
found_in(fix_t *f, const char *key, uint64_t now, int fillc)
{
	bc_chunk_t *c;
	size_t      from;
	int         st = probe(f, key, now, false, &c, &from);

	if (st == BC_ENOENT)
		return 0;
	cr_assert_eq(st, 0);
	if (fillc >= 0)
		for (size_t i = 0; i < c->len; i++)
			cr_assert_eq(c->data[i], (uint8_t)fillc, "whose bytes");
	bc_chunk_unref(c);
	return from;
}

LTest(chain, probe_asks_in_order_first_hit_wins)
{
	fix_t f;

	setup(&f, 1 * MiB, 2);
	put_into(f.a, "both", 1000, 'a');
	put_into(f.b, "both", 1000, 'b');
	put_into(f.b, "lower", 2000, 'b');
	cr_assert_eq(found_in(&f, "both", f.now, 'a'), 1, "a comes first");
	cr_assert_eq(atomic_load(&ctl(f.b)->gets), 0, "b was not asked");
	cr_assert_eq(found_in(&f, "lower", f.now, 'b'), 2);
	cr_assert_eq(STAT(f.a, misses), 1);
	cr_assert_eq(STAT(f.b, hits), 1);
	cr_assert_eq(found_in(&f, "none", f.now, -1), 0, "a miss everywhere");
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 3);
	cr_assert_eq(atomic_load(&ctl(f.b)->gets), 2);
	/* a probe only reads: memory got nothing */
	cr_assert_null(bc_tier_chain_lookup(f.ch, &(bc_chunk_key_t){ "bkt",
	    "lower", "\"e\"", 0 }, &(bc_policy_ctx_t){ 0 }));
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_UP);
	teardown(&f);
}

LTest(chain, probe_calls_back_on_the_loop_never_before_returning)
{
	fix_t       f;
	bc_chunk_t *c;
	size_t      from;

	setup(&f, 1 * MiB, 1);
	put_into(f.a, "k", 100, 'a');
	/* made on the loop thread itself: a callback from inside the probe
	 * would come before it returned */
	cr_assert_eq(probe(&f, "k", f.now, true, &c, &from), 0);
	cr_assert_eq(from, 1);
	bc_chunk_unref(c);
	cr_assert_eq(probe(&f, "nope", f.now, true, &c, &from), BC_ENOENT);
	teardown(&f);
}

LTest(chain, no_lower_tier_is_a_miss_at_once)
{
	fix_t       f;
	bc_chunk_t *c;
	size_t      from;

	setup(&f, 1 * MiB, 0);
	cr_assert_eq(probe(&f, "k", f.now, false, &c, &from), BC_ENOENT);
	teardown(&f);
}

LTest(chain, failing_tier_is_skipped_then_retried_after_backoff)
{
	fix_t f;

	setup(&f, 1 * MiB, 2);
	put_into(f.b, "k", 100, 'b');
	atomic_store(&ctl(f.a)->get_status, BC_EIO);
	/* a fails: marked down, the probe goes on to b */
	cr_assert_eq(found_in(&f, "k", f.now, 'b'), 2);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(STAT(f.a, downs), 1);
	cr_assert_eq(STAT(f.a, errors), 1);
	cr_assert_eq(atomic_load(&f.a->health.last_err), BC_EIO);
	atomic_store(&ctl(f.a)->get_status, 0);
	/* down: skipped (counted), not asked, until the backoff passed */
	cr_assert_eq(found_in(&f, "k", f.now, 'b'), 2);
	cr_assert_eq(found_in(&f, "k", f.now + MIN_WAIT - 1, 'b'), 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 1);
	cr_assert_eq(STAT(f.a, skips), 2);
	/* the retry: a is asked again, answers (a miss), and is up */
	cr_assert_eq(found_in(&f, "k", f.now + MIN_WAIT, 'b'), 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 2);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_UP);
	cr_assert_eq(atomic_load(&f.a->health.failures), 0);
	cr_assert_eq(STAT(f.a, downs), 1);
	cr_assert_eq(found_in(&f, "k", f.now + MIN_WAIT, 'b'), 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 3, "asked as usual");
	teardown(&f);
}

LTest(chain, failed_retry_waits_longer)
{
	fix_t f;

	setup(&f, 1 * MiB, 1);
	atomic_store(&ctl(f.a)->get_status, BC_ETIMEDOUT);
	cr_assert_eq(found_in(&f, "k", f.now, -1), 0);
	cr_assert_eq(found_in(&f, "k", f.now + MIN_WAIT, -1), 0);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 2, "one retry");
	cr_assert_eq(atomic_load(&f.a->health.failures), 2);
	/* twice the wait from the failed retry */
	cr_assert_eq(found_in(&f, "k", f.now + 3 * MIN_WAIT - 1, -1), 0);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 2);
	atomic_store(&ctl(f.a)->get_status, 0);
	cr_assert_eq(found_in(&f, "k", f.now + 3 * MIN_WAIT, -1), 0);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 3);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_UP);
	teardown(&f);
}

LTest(chain, failing_tiers_never_fail_the_probe)
{
	fix_t       f;
	bc_chunk_t *c;
	size_t      from;

	setup(&f, 1 * MiB, 2);
	put_into(f.b, "k", 100, 'b');
	/* a fails at once (get returns an error), b calls back one */
	atomic_store(&ctl(f.a)->get_rv, BC_EIO);
	atomic_store(&ctl(f.b)->get_status, BC_ECANCELED);
	cr_assert_eq(found_in(&f, "k", f.now, -1), 0, "a miss, no error");
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(bc_tier_health(f.b), BC_TIER_DOWN);
	/* every lower tier down: a miss known at once, each skip counted */
	cr_assert_eq(probe(&f, "k", f.now, false, &c, &from), BC_ENOENT);
	cr_assert_eq(STAT(f.a, skips), 1);
	cr_assert_eq(STAT(f.b, skips), 1);
	/* a down, b back: b serves */
	atomic_store(&ctl(f.b)->get_status, 0);
	cr_assert_eq(found_in(&f, "k", f.now + MIN_WAIT, 'b'), 2);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN, "its retry failed");
	cr_assert_eq(bc_tier_health(f.b), BC_TIER_UP);
	teardown(&f);
}

LTest(chain, a_tier_reporting_down_is_skipped)
{
	fix_t f;

	setup(&f, 1 * MiB, 2);
	put_into(f.a, "k", 100, 'a');
	put_into(f.b, "k", 100, 'b');
	atomic_store(&ctl(f.a)->health, BC_TIER_DOWN);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(found_in(&f, "k", f.now, 'b'), 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->gets), 0);
	cr_assert_eq(STAT(f.a, skips), 1);
	atomic_store(&ctl(f.a)->health, BC_TIER_UP);
	cr_assert_eq(found_in(&f, "k", f.now, 'a'), 1);
	teardown(&f);
}

/* ---- writes ------------------------------------------------------------- */

static bool
mem_has(fix_t *f, const char *key)
{
	bc_policy_ctx_t ctx = ctx_at(1);
	bc_chunk_t *c = bc_tier_chain_lookup(f->ch, &(bc_chunk_key_t){ "bkt",
	    key, "\"e\"", 0 }, &ctx);

	bc_chunk_unref(c);
	return c != NULL;
}

/* Whether lower tier t holds key, asked through its own get. */
static bool
lower_has(fix_t *f, bc_tier_t *t, const char *key)
{
	size_t i = (size_t)bc_tier_chain_find(f->ch, t->name);
	size_t from;

	/* found_in() asks from the top down: switch the others off */
	for (size_t j = 1; j < bc_tier_chain_count(f->ch); j++)
		if (j != i)
			atomic_store(&ctl(bc_tier_chain_at(f->ch, j))->health,
			    BC_TIER_DOWN);
	from = found_in(f, key, f->now, -1);
	for (size_t j = 1; j < bc_tier_chain_count(f->ch); j++)
		atomic_store(&ctl(bc_tier_chain_at(f->ch, j))->health,
		    BC_TIER_UP);
	return from == i;
}

LTest(chain, put_reaches_the_lower_tiers_through_the_queue)
{
	fix_t           f;
	bc_chunk_t     *c = mk("k", 0, 5000, 'x');
	bc_chunk_t     *big = mk("big", 0, 600 * KiB, 'y');
	bc_policy_ctx_t ctx;

	setup(&f, 512 * KiB, 2);
	ctx = ctx_at(f.now);
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
	cr_assert(mem_has(&f, "k"), "memory at once");
	/* memory refuses what it cannot hold; the lower tiers still get it */
	cr_assert_eq(bc_tier_chain_put(f.ch, big, &ctx), BC_E2BIG);
	bc_chunk_unref(c);
	bc_chunk_unref(big);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(bc_tier_chain_queued(f.ch), 0);
	cr_assert_eq(atomic_load(&ctl(f.a)->puts), 2);
	cr_assert_eq(atomic_load(&ctl(f.b)->puts), 2);
	cr_assert(lower_has(&f, f.a, "k"));
	cr_assert(lower_has(&f, f.b, "k"));
	cr_assert(lower_has(&f, f.b, "big"));
	cr_assert_not(mem_has(&f, "big"));
	cr_assert_eq(bc_tier_chain_drops(f.ch), 0);
	teardown(&f);
}

LTest(chain, deletes_reach_the_lower_tiers_through_the_queue)
{
	fix_t           f;
	bc_policy_ctx_t ctx;

	setup(&f, 1 * MiB, 2);
	ctx = ctx_at(f.now);
	for (int i = 0; i < 3; i++) {
		static const char *const keys[] = { "obj", "dir/x", "keep" };
		bc_chunk_t *c = mk(keys[i], 0, 100, 'z');

		cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
		bc_chunk_unref(c);
	}
	bc_tier_chain_flush(f.ch);
	cr_assert(lower_has(&f, f.a, "obj"));
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", "obj", NULL), 1);
	cr_assert_not(mem_has(&f, "obj"), "memory at once");
	cr_assert_eq(bc_tier_chain_del(f.ch, &(bc_chunk_key_t){ "bkt",
	    "dir/x", "\"e\"", 0 }), 0);
	cr_assert_not(mem_has(&f, "dir/x"));
	bc_tier_chain_flush(f.ch);
	cr_assert_not(lower_has(&f, f.a, "obj"));
	cr_assert_not(lower_has(&f, f.b, "obj"));
	cr_assert_not(lower_has(&f, f.a, "dir/x"));
	cr_assert_not(lower_has(&f, f.b, "dir/x"));
	cr_assert(lower_has(&f, f.b, "keep"));
	cr_assert_eq(STAT(f.a, deletes), 2);
	/* a prefix */
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", NULL, "ke"), 1);
	bc_tier_chain_flush(f.ch);
	cr_assert_not(lower_has(&f, f.b, "keep"));
	teardown(&f);
}

/* Holds the loop thread until opened. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            entered, open;
};

static void
gate_fn(bc_loop_t *l, void *arg)
{
	struct gate *g = arg;

	(void)l;
	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_close(bc_loop_t *loop, struct gate *g)
{
	cr_assert_eq(bc_loop_call(loop, gate_fn, g), 0);
	pthread_mutex_lock(&g->mu);
	while (!g->entered)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

LTest(chain, the_queue_is_bounded_and_drops_are_counted)
{
	fix_t           f;
	struct gate     g = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, false };
	bc_policy_ctx_t ctx;
	const char     *keys[] = { "k0", "k1", "k2" };

	setup(&f, 1 * MiB, 2);
	ctx = ctx_at(f.now);
	bc_tier_chain_set_queue_max(f.ch, 3);
	gate_close(f.loop, &g);
	for (int i = 0; i < 3; i++) {
		bc_chunk_t *c = mk(keys[i], 0, 100, 'q');

		cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
		bc_chunk_unref(c);
	}
	/* 6 entries (3 puts x 2 tiers) for 3 places: k0 for a and b, k1
	 * for a only */
	cr_assert_eq(bc_tier_chain_queued(f.ch), 3);
	cr_assert_eq(bc_tier_chain_drops(f.ch), 3);
	cr_assert_eq(STAT(f.a, queue_drops), 1);
	cr_assert_eq(STAT(f.b, queue_drops), 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->puts), 0, "nothing ran yet");
	for (int i = 0; i < 3; i++)
		cr_assert(mem_has(&f, keys[i]), "memory never waits");
	gate_open(&g);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->puts), 2);
	cr_assert_eq(atomic_load(&ctl(f.b)->puts), 1);
	cr_assert(lower_has(&f, f.a, "k1"));
	cr_assert_not(lower_has(&f, f.b, "k1"));
	cr_assert_not(lower_has(&f, f.a, "k2"));
	teardown(&f);
}

LTest(chain, a_failed_put_marks_the_tier_down_and_later_writes_skip_it)
{
	fix_t           f;
	bc_policy_ctx_t ctx;
	bc_chunk_t     *c;

	setup(&f, 1 * MiB, 2);
	ctx = ctx_at(f.now);
	atomic_store(&ctl(f.a)->put_rv, BC_ENOSPC);
	c = mk("k0", 0, 100, 'p');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
	bc_chunk_unref(c);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(STAT(f.a, write_failures), 1);
	cr_assert_eq(atomic_load(&f.a->health.last_err), BC_ENOSPC);
	c = mk("k1", 0, 100, 'p');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
	bc_chunk_unref(c);
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", "k0", NULL), 1);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->puts), 1, "skipped while down");
	cr_assert_eq(atomic_load(&ctl(f.a)->dels), 1, "an object's delete "
	    "reaches a down tier");
	cr_assert_eq(STAT(f.a, skips), 1);
	cr_assert_eq(atomic_load(&ctl(f.b)->puts), 2, "b got both");
	cr_assert_eq(atomic_load(&ctl(f.b)->dels), 1);
	teardown(&f);
}

LTest(chain, promote_fills_only_the_tiers_above)
{
	fix_t           f;
	bc_chunk_t     *c;
	size_t          from;
	bc_policy_ctx_t ctx;

	setup(&f, 1 * MiB, 2);
	ctx = ctx_at(f.now);
	put_into(f.b, "k", 3000, 'b');
	cr_assert_eq(probe(&f, "k", f.now, false, &c, &from), 0);
	cr_assert_eq(from, 2);
	cr_assert_eq(bc_tier_chain_promote(f.ch, c, &ctx, from), 0);
	bc_chunk_unref(c);
	cr_assert(mem_has(&f, "k"));
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->puts), 1);
	cr_assert_eq(atomic_load(&ctl(f.b)->puts), 1, "only the test's put");
	cr_assert_eq(found_in(&f, "k", f.now, 'b'), 1, "now in a");
	teardown(&f);
}

/* ---- the list ---------------------------------------------------------- */

LTest(chain, find_count_at_and_set_capacity)
{
	fix_t f;

	setup(&f, 1 * MiB, 2);
	cr_assert_eq(bc_tier_chain_count(f.ch), 3);
	cr_assert_eq(bc_tier_chain_at(f.ch, 0), f.mem);
	cr_assert_eq(bc_tier_chain_at(f.ch, 2), f.b);
	cr_assert_eq(bc_tier_chain_find(f.ch, "memory"), 0);
	cr_assert_eq(bc_tier_chain_find(f.ch, "a"), 1);
	cr_assert_eq(bc_tier_chain_find(f.ch, "b"), 2);
	cr_assert_eq(bc_tier_chain_find(f.ch, "c"), BC_ENOENT);
	for (int i = 0; i < 8; i++) {
		char key[8];

		key[0] = 'k';
		key[1] = (char)('0' + i);
		key[2] = '\0';
		put_into(f.a, key, 64 * KiB, 'a');
	}
	cr_assert_eq(bc_tier_chain_set_capacity(f.ch, 1, 200 * KiB), 0);
	cr_assert_eq(bc_tier_capacity(f.a), 200 * KiB);
	cr_assert_leq(bc_tier_usage(f.a), 200 * KiB);
	cr_assert_gt(bc_tier_evictions(f.a), 0);
	cr_assert_eq(bc_tier_chain_set_capacity(f.ch, 0, 2 * MiB), 0);
	cr_assert_eq(bc_tier_capacity(f.mem), 2 * MiB);
	cr_assert_eq(bc_tier_chain_set_capacity(f.ch, 3, 1), BC_EINVAL);
	teardown(&f);
}

LTest(chain, tiers_take_their_places)
{
	fix_t           f;
	bc_tier_chain_t *bare;
	bc_tier_t      *x, *m = NULL;
	bc_tier_opts_t  o = { .capacity = 1 * MiB };

	setup(&f, 1 * MiB, 0);
	x = open_async(&f, "x", 1 * MiB);
	cr_assert_eq(bc_tier_mem.open(&o, &m), 0);
	/* the top must be SYNC */
	bare = bc_tier_chain_new(f.loop);
	cr_assert_eq(bc_tier_chain_add(bare, x), BC_EINVAL);
	cr_assert_null(bc_tier_chain_top(bare));
	bc_tier_chain_free(bare);
	/* below the top a tier must get */
	cr_assert_eq(bc_tier_chain_add(f.ch, m), BC_EINVAL);
	/* and the chain needs a loop for it */
	bare = bc_tier_chain_new(NULL);
	cr_assert_eq(bc_tier_chain_add(bare, m), 0);
	cr_assert_eq(bc_tier_chain_add(bare, x), BC_EINVAL);
	bc_tier_chain_free(bare);   /* closes m */
	/* at most BC_TIER_CHAIN_MAX */
	for (size_t i = 1; i < BC_TIER_CHAIN_MAX; i++)
		cr_assert_eq(bc_tier_chain_add(f.ch, open_async(&f, "n",
		    1 * MiB)), 0);
	cr_assert_eq(bc_tier_chain_add(f.ch, x), BC_E2BIG);
	bc_tier_async.close(x);
	teardown(&f);
}

LTest(chain, a_stopped_loop_refuses_probes_and_drops_writes)
{
	fix_t           f;
	bc_chunk_t     *c;
	size_t          from;
	bc_policy_ctx_t ctx;

	setup(&f, 1 * MiB, 1);
	ctx = ctx_at(f.now);
	bc_loop_stop(f.loop, NULL, NULL);
	cr_assert_eq(probe(&f, "k", f.now, false, &c, &from), BC_ECANCELED);
	c = mk("k", 0, 100, 's');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
	bc_chunk_unref(c);
	cr_assert(mem_has(&f, "k"));
	cr_assert_eq(bc_tier_chain_drops(f.ch), 1);
	cr_assert_eq(STAT(f.a, queue_drops), 1);
	cr_assert_eq(bc_tier_chain_queued(f.ch), 0);
	teardown(&f);   /* free does not wait for a loop that is gone */
}

/* ---- object metadata ---------------------------------------------------- */

typedef struct mw_s {
	bc_tier_meta_probe_t req;
	fix_t               *f;
	pthread_mutex_t      mu;
	pthread_cond_t       cv;
	bool                 returned, done, early, off_loop;
	int                  rv, status, calls;
	char                 blob[64];
	size_t               len, from;
} mw_t;

static void
on_meta_probe(bc_tier_meta_probe_t *req, int status, const void *blob,
    size_t len, size_t from)
{
	mw_t *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->calls++;
	w->early = !w->returned;
	w->off_loop = !pthread_equal(pthread_self(), w->f->loop_thread);
	w->status = status;
	w->len = len;
	if (blob != NULL && len < sizeof(w->blob))
		memcpy(w->blob, blob, len);
	w->from = from;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
meta_issue(mw_t *w, const char *key)
{
	int rv;

	w->req.data = w;
	rv = bc_tier_chain_meta_probe(w->f->ch, &w->req, "bkt", key,
	    on_meta_probe);
	pthread_mutex_lock(&w->mu);
	w->rv = rv;
	w->returned = true;
	if (rv < 0)
		w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

struct meta_on_loop {
	mw_t       *w;
	const char *key;
};

static void
meta_issue_on_loop(bc_loop_t *l, void *arg)
{
	struct meta_on_loop *m = arg;

	(void)l;
	meta_issue(m->w, m->key);
}

/*
 * Probes (bkt, key)'s metadata (from the loop thread when on_loop) and
 * waits. Returns the callback's status or the probe's error; the blob
 * (as a string) goes to out, the tier's index to *from.
 */
static int
meta_probe(fix_t *f, const char *key, bool on_loop, char *out, size_t *from)
{
	mw_t w = { .f = f, .mu = PTHREAD_MUTEX_INITIALIZER,
	    .cv = PTHREAD_COND_INITIALIZER };
	struct meta_on_loop m = { &w, key };

	if (on_loop)
		cr_assert_eq(bc_loop_call(f->loop, meta_issue_on_loop, &m), 0);
	else
		meta_issue(&w, key);
	pthread_mutex_lock(&w.mu);
	while (!w.done || !w.returned)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	*from = 0;
	out[0] = '\0';
	if (w.rv < 0) {
		loop_barrier(f->loop);
		cr_assert_eq(w.calls, 0, "a callback after an error return");
		return w.rv;
	}
	cr_assert_not(w.early, "called back before the probe returned");
	cr_assert_not(w.off_loop, "called back off the loop thread");
	cr_assert(w.status == 0 || w.status == BC_ENOENT, "%d", w.status);
	if (w.status == 0) {
		memcpy(out, w.blob, w.len);
		out[w.len] = '\0';
		*from = w.from;
	}
	return w.status;
}

LTest(chain, meta_put_is_queued_and_the_probe_takes_the_first_hit)
{
	fix_t  f;
	char   blob[64];
	size_t from;

	setup(&f, 1 * MiB, 2);
	bc_tier_chain_meta_put(f.ch, "bkt", "obj", "v1", 2);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->meta_puts), 1);
	cr_assert_eq(atomic_load(&ctl(f.b)->meta_puts), 1);
	cr_assert_eq(meta_probe(&f, "obj", false, blob, &from), 0);
	cr_assert_str_eq(blob, "v1");
	cr_assert_eq(from, 1, "a comes first");
	cr_assert_eq(atomic_load(&ctl(f.b)->meta_gets), 0, "b not asked");
	/* only b has it: a misses, b answers */
	cr_assert_eq(f.b->ops->meta_put(f.b, "bkt", "deep", "v2", 2), 0);
	cr_assert_eq(meta_probe(&f, "deep", true, blob, &from), 0);
	cr_assert_str_eq(blob, "v2");
	cr_assert_eq(from, 2);
	/* a later put replaces */
	bc_tier_chain_meta_put(f.ch, "bkt", "obj", "v3!", 3);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(meta_probe(&f, "obj", false, blob, &from), 0);
	cr_assert_str_eq(blob, "v3!");
	/* nowhere */
	cr_assert_eq(meta_probe(&f, "none", false, blob, &from), BC_ENOENT);
	cr_assert_eq(atomic_load(&ctl(f.a)->meta_gets), 4);
	cr_assert_eq(atomic_load(&ctl(f.b)->meta_gets), 2);
	/* del_object drops metadata with the chunks */
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", "obj", NULL), 0);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(meta_probe(&f, "obj", false, blob, &from), BC_ENOENT);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_UP);
	teardown(&f);
}

LTest(chain, meta_probe_marks_a_failing_tier_down_and_goes_on)
{
	fix_t  f;
	char   blob[64];
	size_t from;

	setup(&f, 1 * MiB, 2);
	cr_assert_eq(f.a->ops->meta_put(f.a, "bkt", "k", "aa", 2), 0);
	cr_assert_eq(f.b->ops->meta_put(f.b, "bkt", "k", "bb", 2), 0);
	/* a's callback fails: down, b answers */
	atomic_store(&ctl(f.a)->get_status, BC_EIO);
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), 0);
	cr_assert_eq(from, 2);
	cr_assert_str_eq(blob, "bb");
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(STAT(f.a, downs), 1);
	/* down and not due: skipped without being asked */
	atomic_store(&ctl(f.a)->get_status, 0);
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), 0);
	cr_assert_eq(from, 2);
	cr_assert_eq(atomic_load(&ctl(f.a)->meta_gets), 1);
	cr_assert_eq(STAT(f.a, skips), 1);
	/* b's meta_get fails at once: down too; nothing left is a miss known
	 * at once, and no callback follows */
	atomic_store(&ctl(f.b)->get_rv, BC_ETIMEDOUT);
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), BC_ENOENT);
	cr_assert_eq(bc_tier_health(f.b), BC_TIER_DOWN);
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), BC_ENOENT,
	    "every tier down: a miss at once");
	teardown(&f);
}

LTest(chain, meta_without_lower_tiers_and_while_down)
{
	fix_t           f;
	char            blob[64];
	size_t          from;
	bc_policy_ctx_t ctx;
	bc_chunk_t     *c;

	setup(&f, 1 * MiB, 0);
	bc_tier_chain_meta_put(f.ch, "bkt", "k", "x", 1);   /* no-op */
	cr_assert_eq(bc_tier_chain_queued(f.ch), 0);
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), BC_ENOENT);
	teardown(&f);
	/* a down tier's meta_put is skipped at queue time, counted */
	setup(&f, 1 * MiB, 1);
	ctx = ctx_at(f.now);
	atomic_store(&ctl(f.a)->put_rv, BC_ENOSPC);
	c = mk("k", 0, 10, 'm');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);
	bc_chunk_unref(c);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	bc_tier_chain_meta_put(f.ch, "bkt", "k", "x", 1);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->meta_puts), 0);
	cr_assert_eq(STAT(f.a, skips), 1);
	/* a failed meta_put marks the tier down like a failed put */
	atomic_store(&ctl(f.a)->put_rv, 0);
	bc_tier_mark_up(f.a, bc_mono_ns());
	atomic_store(&ctl(f.a)->put_rv, BC_EIO);
	bc_tier_chain_meta_put(f.ch, "bkt", "k", "x", 1);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->meta_puts), 1);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN);
	cr_assert_eq(atomic_load(&f.a->health.last_err), BC_EIO);
	teardown(&f);
}

/* An object's delete is never lost to a full queue or a down tier: its
 * metadata (keyed by bucket and key, naming the ETag) would otherwise
 * outlive a write through the gateway. */
LTest(chain, an_objects_delete_passes_a_full_queue_and_a_down_tier)
{
	fix_t           f;
	struct gate     g = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, false };
	bc_policy_ctx_t ctx;
	bc_chunk_t     *c;
	char            blob[64];
	size_t          from;

	setup(&f, 1 * MiB, 1);
	ctx = ctx_at(f.now);
	cr_assert_eq(f.a->ops->meta_put(f.a, "bkt", "k", "old", 3), 0);
	bc_tier_chain_set_queue_max(f.ch, 1);
	atomic_store(&ctl(f.a)->put_rv, BC_ENOSPC);
	gate_close(f.loop, &g);
	c = mk("k0", 0, 100, 'p');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);   /* fills it */
	bc_chunk_unref(c);
	c = mk("k1", 0, 100, 'p');
	cr_assert_eq(bc_tier_chain_put(f.ch, c, &ctx), 0);   /* dropped */
	bc_chunk_unref(c);
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", "k", NULL), 0);
	cr_assert_eq(STAT(f.a, queue_drops), 1);
	cr_assert_eq(bc_tier_chain_queued(f.ch), 2, "the delete was dropped");
	gate_open(&g);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(bc_tier_health(f.a), BC_TIER_DOWN, "the put failed");
	cr_assert_eq(atomic_load(&ctl(f.a)->dels), 1);
	atomic_store(&ctl(f.a)->put_rv, 0);
	cr_assert_eq(f.a->ops->meta_put(f.a, "bkt", "k", "old", 3), 0);
	cr_assert_eq(bc_tier_chain_del_object(f.ch, "bkt", "k", NULL), 0);
	bc_tier_chain_flush(f.ch);
	cr_assert_eq(atomic_load(&ctl(f.a)->dels), 2, "not run on a down "
	    "tier");
	cr_assert_eq(STAT(f.a, skips), 0);
	bc_tier_mark_up(f.a, bc_mono_ns());
	cr_assert_eq(meta_probe(&f, "k", false, blob, &from), BC_ENOENT,
	    "the deleted metadata is still there");
	teardown(&f);
}
