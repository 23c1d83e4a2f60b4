/*
 * test_cache.c — the cache core (cache.h) over an in-process origin
 * (fake_origin.h): single-flight fills, failures without negative
 * caching, object changes between chunk fetches, invalidation during a
 * fill, the metadata TTL and revalidation, stale-while-revalidate, empty
 * objects, chunk references across eviction, waiter life, streaming
 * fills, read-ahead, passthrough reads, one read of a range (cache_read.h:
 * memory or a stream), unsigned requests, and object
 * metadata kept in the lower tiers (asked before the origin, by age;
 * learned and revalidated metadata queued for them; a restart over the
 * disk tier).
 *
 * Each test runs a real loop (loop/loop.h), the fake origin on it
 * (answers as S3 does, its callbacks on the loop thread, bodies in
 * pieces) and a cache in front of it, and drives the cache the way
 * http_object.c does: bc_cache_object, bc_cache_meta with a waiter,
 * bc_cache_chunk. No HTTP server, no curl transfer: the S3 origin's own
 * request building, retries and time limits are tested in
 * tests/unit/upstream/ (test_upstream_s3.c, test_upstream_xfer.c). The
 * origin logs every fetch (its bc_fetch_t: method, range, condition,
 * signed or not, class) and has knobs: fail the next N fetches with a
 * status or a transport error, hold fetches at a gate until released or
 * aborted (to create concurrency deterministically), change or delete an
 * object, ignore Range or If-Match, cut a body short, send a body's first
 * bytes and hold the rest at a second gate (streaming fills).
 *
 * Ordering is made with the gates, condition variables and the origin's
 * "every exchange has ended" wait only; timeouts are failure guards (and
 * the TTL tests wait for the TTL to pass). Every test checks for leaks at
 * its end (LTest, bc_test.h) after tearing everything down.
 * Threads: wake functions run on the loop thread with the cache lock
 * held, so they only signal. Assertions run on the test's thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"
#include "fake_origin.h"
#include "../tier/tier_async.h"

#include "cache/cache.h"
#include "cache/cache_math.h"
#include "cache/cache_metablob.h"
#include "cache/cache_read.h"
#include "config/config.h"
#include "s3/s3_cond.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "tier/tier_disk.h"
#include "upstream/upstream.h"
#include "loop/loop.h"
#include "util/util_error.h"

#define GUARD_MS     15000      /* a wait this long means a hang */
#define CS           1024       /* chunk size of most tests */
#define BUCKET       "bkt"
#define KEY          "obj"
#define LAST_MOD     "Wed, 21 Oct 2015 07:28:00 GMT"
#define LAST_MOD_T   1445412480

static void
abs_deadline(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void
cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* ---- the cache under test ----------------------------------------------- */

typedef struct env_opts_s {
	uint64_t chunk_size;
	uint64_t mem_size;
	uint64_t meta_ttl;          /* ms */
	uint64_t meta_stale;        /* ms; 0: revalidations are waited for */
	unsigned retries;           /* the config's (an origin's business) */
} env_opts_t;

typedef struct env_s {
	bc_config_t       cfg;
	bc_loop_t        *loop;
	fake_origin_t    *fo;
	bc_cache_t       *c;
} env_t;

static env_t E;

static uint8_t obj_a[3000];      /* 3 chunks: 1024 + 1024 + 952 */
static uint8_t obj_b[3000];      /* the same size, other bytes */

static void
fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 8)) & 0xff);
}

static void
suite_init(void)
{
	fill_pattern(obj_a, sizeof(obj_a), 1);
	fill_pattern(obj_b, sizeof(obj_b), 2);
}

TestSuite(cache, .init = suite_init, .timeout = 90);

/* ---- the origin's side ---------------------------------------------------- */

/* Creates or replaces bucket/key with the metadata every test object
 * has (Last-Modified LAST_MOD, a Content-Type, x-amz-meta-color). */
static void
org_put(const char *bucket, const char *key, const uint8_t *data,
    size_t size, const char *etag)
{
	bc_kvlist_t meta = BC_KVLIST_INIT;

	cr_assert_eq(bc_kv_add(&meta, "Content-Type", "application/x-test"),
	    0);
	cr_assert_eq(bc_kv_add(&meta, "x-amz-meta-color", "blue"), 0);
	fake_origin_put(E.fo, bucket, key, data, size, etag, LAST_MOD, &meta);
	bc_kv_fini(&meta);
}

/* The next n fetches fail: with status, or (status 0) a transport
 * failure before any header (BC_EIO). */
static void
org_fail(unsigned n, int status)
{
	fake_origin_fail(E.fo, n, status, 0);
}

static void
org_gate(bool closed)
{
	fake_origin_gate(E.fo, closed);
}

/* Waits until n fetches are held at the gate; false after GUARD_MS. */
static bool
org_wait_held(unsigned n)
{
	return fake_origin_wait_held(E.fo, n, GUARD_MS);
}

/* Waits until every exchange has ended and its callbacks returned. */
static bool
org_wait_quiet(void)
{
	return fake_origin_wait_quiet(E.fo, GUARD_MS);
}

static unsigned
org_count(const char *method, const char *range)
{
	return fake_origin_count(E.fo, method, range);
}

/* The last fetch the origin received. */
static fake_req_t
org_last(void)
{
	fake_req_t q;
	unsigned n = fake_origin_nlog(E.fo);

	cr_assert_gt(n, 0);
	cr_assert(fake_origin_log(E.fo, n - 1, &q));
	return q;
}

/* The last fetch with method and range; it must exist. */
static fake_req_t
org_find(const char *method, const char *range)
{
	unsigned n = fake_origin_nlog(E.fo);
	fake_req_t q;

	while (n-- > 0) {
		cr_assert(fake_origin_log(E.fo, n, &q));
		if (strcmp(q.method, method) == 0 &&
		    strcmp(q.range, range) == 0)
			return q;
	}
	cr_assert_fail("no %s %s was fetched", method, range);
	return q;
}

/* Fetches received, unsigned ones only when unsigned_only. */
static unsigned
org_count_auth(bool unsigned_only)
{
	unsigned n = fake_origin_nlog(E.fo), k = 0;
	fake_req_t q;

	for (unsigned i = 0; i < n; i++) {
		cr_assert(fake_origin_log(E.fo, i, &q));
		if (!unsigned_only || q.anon)
			k++;
	}
	return k;
}

static void
env_start_opts(const env_opts_t *o)
{
	bc_cache_opts_t co;

	memset(&E, 0, sizeof(E));
	cr_assert_eq(bc_config_init(&E.cfg), 0);
	E.cfg.chunk_size = o->chunk_size != 0 ? o->chunk_size : CS;
	E.cfg.mem_size = o->mem_size != 0 ? o->mem_size : 16 * 1024 * 1024;
	E.cfg.meta_ttl = o->meta_ttl;
	E.cfg.meta_stale = o->meta_stale;
	E.cfg.retries = o->retries;
	E.loop = bc_loop_new(NULL);
	cr_assert_not_null(E.loop);
	cr_assert_eq(bc_loop_start(E.loop), 0);
	E.fo = fake_origin_new(E.loop);
	cr_assert_not_null(E.fo);
	memset(&co, 0, sizeof(co));
	co.cfg = &E.cfg;
	co.origin = fake_origin_base(E.fo);
	co.loop = E.loop;
	cr_assert_eq(bc_cache_new(&co, &E.c), 0);
	org_put(BUCKET, KEY, obj_a, sizeof(obj_a), "\"etag-a\"");
}

static void
env_start(void)
{
	env_opts_t o;

	memset(&o, 0, sizeof(o));
	env_start_opts(&o);
}

/* Stops the loop as main.c does: the origin's cancel_all ends what is
 * still in flight (the cache's fills end, canceled). */
static void
env_stop_loop(void)
{
	bc_loop_stop(E.loop, fake_origin_stop_fn, E.fo);
}

static void
env_stop(void)
{
	org_gate(false);
	env_stop_loop();
	bc_cache_free(E.c);
	cr_assert_eq(fake_origin_exchanges(E.fo), 0, "an exchange was never "
	    "released");
	bc_origin_free(fake_origin_base(E.fo));
	bc_loop_free(E.loop);
	bc_config_fini(&E.cfg);
	memset(&E, 0, sizeof(E));
}

/* ---- waiters ------------------------------------------------------------- */

typedef struct tw_s {
	bc_waiter_t     w;
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	unsigned        wakes;    /* wake() calls */
	unsigned        seen;     /* wakes taken by tw_wait */
} tw_t;

static void
tw_wake(void *arg)
{
	tw_t *t = arg;

	pthread_mutex_lock(&t->mu);
	t->wakes++;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void
tw_init(tw_t *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	cond_init_mono(&t->cv);
	bc_waiter_init(&t->w, tw_wake, t);
}

static void
tw_fini(tw_t *t)
{
	bc_waiter_fini(E.c, &t->w);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
}

static unsigned
tw_wakes(tw_t *t)
{
	unsigned n;

	pthread_mutex_lock(&t->mu);
	n = t->wakes;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Waits for the next wake (false after GUARD_MS, no assertion: may run
 * on any thread). */
static bool
tw_wait_nocheck(tw_t *t)
{
	struct timespec dl;
	bool ok;

	abs_deadline(&dl, GUARD_MS);
	pthread_mutex_lock(&t->mu);
	while (t->wakes == t->seen) {
		if (pthread_cond_timedwait(&t->cv, &t->mu, &dl) == ETIMEDOUT)
			break;
	}
	ok = t->wakes > t->seen;
	if (ok)
		t->seen++;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

/* Waits for the next wake and returns the outcome. */
static bc_wait_result_t
tw_wait(tw_t *t)
{
	bc_wait_result_t r;

	cr_assert(tw_wait_nocheck(t), "a waiter was never woken");
	r = bc_waiter_result(E.c, &t->w);
	cr_assert_neq(r, BC_WAIT_PENDING, "woken, yet still pending");
	return r;
}

static const char *
res_name(bc_wait_result_t r)
{
	static const char *const n[] = { "PENDING", "CHUNK", "RECHECK",
	    "RESTART", "UPSTREAM", "FAILED" };

	return (unsigned)r < 6 ? n[r] : "?";
}

/* ---- driving the cache like http_object.c ------------------------------ */

static uint64_t
st_get(bc_stat_t id)
{
	return bc_stats_get(id);
}

/* Asserts that ch is chunk i of data (size bytes). */
static void
check_chunk(const bc_chunk_t *ch, uint32_t i, const uint8_t *data,
    size_t size, uint64_t cs)
{
	uint64_t want = bc_chunk_len(i, size, cs);

	cr_assert_not_null(ch);
	cr_assert_eq(ch->index, i, "chunk %u delivered for %u", ch->index, i);
	cr_assert_eq(ch->len, want, "chunk %u: %zu bytes, want %" PRIu64, i,
	    ch->len, want);
	cr_assert(memcmp(ch->data, data + bc_chunk_start(i, cs), ch->len) ==
	    0, "chunk %u: wrong bytes", i);
}

/*
 * Gets o's metadata as obj_finish() does: asks, waits on EAGAIN, asks
 * again on RECHECK. A chunk delivered with it goes to *first (when not
 * NULL; dropped otherwise). Returns the last bc_cache_meta() code, or the
 * terminal wait result (as a positive value) when the wait ended with
 * UPSTREAM, FAILED or RESTART; *w keeps that outcome.
 */
static int
get_meta(bc_object_t *o, uint32_t hint, tw_t *t, bc_objmeta_t *meta,
    bool *cached, bc_chunk_t **first)
{
	for (int round = 0; round < 10; round++) {
		int rv = bc_cache_meta(E.c, o, hint, &t->w, meta, cached);
		bc_wait_result_t r;

		if (rv != BC_EAGAIN)
			return rv;
		r = tw_wait(t);
		if (r == BC_WAIT_CHUNK) {
			if (first != NULL && *first == NULL)
				*first = t->w.chunk;
			else
				bc_chunk_unref(t->w.chunk);
			t->w.chunk = NULL;
		} else if (r != BC_WAIT_RECHECK) {
			return (int)r;
		}
		bc_waiter_reset(&t->w);
	}
	cr_assert_fail("bc_cache_meta never settled");
	return BC_EIO;
}

/* Gets chunk i (hit or fetched). Returns 0 with *out, or the terminal
 * wait result (positive) or a negative bc_cache_chunk() code. */
/* The file the last chunk get_chunk waited for was read from (a disk
 * tier's, for sendfile: the waiter's), or -1; and where it starts. */
static int      got_fd = -1;
static uint64_t got_fd_off;

static int
get_chunk(bc_object_t *o, const char *etag, uint32_t i, tw_t *t,
    bc_chunk_t **out)
{
	int rv = bc_cache_chunk(E.c, o, etag, i, true, &t->w, out);
	bc_wait_result_t r;

	if (rv != BC_EAGAIN)
		return rv;
	r = tw_wait(t);
	if (r != BC_WAIT_CHUNK)
		return (int)r;
	*out = t->w.chunk;
	t->w.chunk = NULL;
	if (got_fd >= 0)
		close(got_fd);
	got_fd = t->w.fd;       /* the file a lower tier read it from */
	got_fd_off = t->w.fd_off;
	t->w.fd = -1;
	bc_waiter_reset(&t->w);
	return 0;
}

/* Metadata of (BUCKET, KEY) with chunk 0 fetched and released. */
static bc_object_t *
warm_object(bc_objmeta_t *meta)
{
	bc_object_t *o = bc_cache_object(E.c, BUCKET, KEY);
	bc_chunk_t *first = NULL;
	bool cached = true;
	tw_t t;

	cr_assert_not_null(o);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	tw_fini(&t);
	return o;
}

/* ---- single-flight --------------------------------------------------------- */

#define NWAITERS 10

typedef struct worker_s {
	pthread_t         th;
	bool              meta;      /* bc_cache_meta; else bc_cache_chunk */
	uint32_t          index;
	const char       *etag;
	tw_t              t;
	bc_object_t      *o;
	int               rv;        /* of the first call */
	bool              woken;
	bc_wait_result_t  res;
	bc_chunk_t       *chunk;
	/* registration handshake */
	pthread_mutex_t  *mu;
	pthread_cond_t   *cv;
	unsigned         *registered;
} worker_t;

static void *
worker_main(void *arg)
{
	worker_t *k = arg;
	bc_objmeta_t meta;
	bool cached;

	k->o = bc_cache_object(E.c, BUCKET, KEY);
	if (k->o == NULL) {
		k->rv = BC_ENOMEM;
	} else if (k->meta) {
		k->rv = bc_cache_meta(E.c, k->o, k->index, &k->t.w, &meta,
		    &cached);
		if (k->rv == 0)
			bc_objmeta_fini(&meta);
	} else {
		k->rv = bc_cache_chunk(E.c, k->o, k->etag, k->index, true,
		    &k->t.w, &k->chunk);
	}
	pthread_mutex_lock(k->mu);
	(*k->registered)++;
	pthread_cond_broadcast(k->cv);
	pthread_mutex_unlock(k->mu);
	if (k->rv != BC_EAGAIN)
		return NULL;
	k->woken = tw_wait_nocheck(&k->t);
	if (k->woken) {
		k->res = bc_waiter_result(E.c, &k->t.w);
		k->chunk = k->t.w.chunk;
		k->t.w.chunk = NULL;
	}
	return NULL;
}

/*
 * Runs NWAITERS threads that ask at once for chunk index (through
 * bc_cache_meta when meta, else bc_cache_chunk) while the origin holds
 * the one request; releases it once every thread has registered, and
 * checks every thread got chunk index with the same bytes.
 */
static void
run_coalesced(bool meta, uint32_t index, const char *etag)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	unsigned registered = 0;
	worker_t w[NWAITERS];
	struct timespec dl;
	uint64_t coalesced0 = st_get(BC_STAT_cache_coalesced_waits);
	uint64_t fills0 = st_get(BC_STAT_cache_fills);
	unsigned gets0 = org_count("GET", NULL);
	char range[64];

	cond_init_mono(&cv);
	org_gate(true);
	for (int i = 0; i < NWAITERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].meta = meta;
		w[i].index = index;
		w[i].etag = etag;
		w[i].mu = &mu;
		w[i].cv = &cv;
		w[i].registered = &registered;
		tw_init(&w[i].t);
		cr_assert_eq(pthread_create(&w[i].th, NULL, worker_main, &w[i]),
		    0);
	}
	abs_deadline(&dl, GUARD_MS);
	pthread_mutex_lock(&mu);
	while (registered < NWAITERS &&
	    pthread_cond_timedwait(&cv, &mu, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&mu);
	cr_assert_eq(registered, NWAITERS, "not every thread registered");
	cr_assert(org_wait_held(1), "the fill never reached the "
	    "origin");
	/* everyone is waiting on the one held request */
	cr_assert_eq(org_count("GET", NULL), gets0 + 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0 + 1);
	org_gate(false);
	for (int i = 0; i < NWAITERS; i++)
		pthread_join(w[i].th, NULL);

	snprintf(range, sizeof(range), "bytes=%u-%u", index * CS,
	    index * CS + CS - 1);
	cr_assert_eq(org_count("GET", NULL), gets0 + 1,
	    "%u GETs for one chunk", org_count("GET", NULL) - gets0);
	cr_assert_eq(org_count("GET", range), 1);
	cr_assert_eq(org_count("HEAD", NULL), 0);
	for (int i = 0; i < NWAITERS; i++) {
		cr_assert_eq(w[i].rv, BC_EAGAIN, "thread %d: %s", i,
		    bc_strerror(w[i].rv));
		cr_assert(w[i].woken, "thread %d never woken", i);
		cr_assert_eq(w[i].res, BC_WAIT_CHUNK, "thread %d: %s", i,
		    res_name(w[i].res));
		check_chunk(w[i].chunk, index, obj_a, sizeof(obj_a), CS);
		cr_assert_eq(w[i].chunk, w[0].chunk, "one chunk for all");
		cr_assert_eq(tw_wakes(&w[i].t), 1, "thread %d woken %u times",
		    i, tw_wakes(&w[i].t));
	}
	cr_assert_eq(st_get(BC_STAT_cache_coalesced_waits) - coalesced0,
	    NWAITERS - 1, "coalesced waits: %" PRIu64,
	    st_get(BC_STAT_cache_coalesced_waits) - coalesced0);
	cr_assert_eq(bc_stats_bucket_get(BUCKET,
	    BC_BSTAT_cache_coalesced_waits), NWAITERS - 1);
	for (int i = 0; i < NWAITERS; i++) {
		bc_chunk_unref(w[i].chunk);
		tw_fini(&w[i].t);
		bc_object_unref(E.c, w[i].o);
	}
	pthread_cond_destroy(&cv);
}

/* Ten requests for the first chunk of a cold object: one ranged GET. */
LTest(cache, coalesced_first_fill)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached = false;
	tw_t t;

	env_start();
	run_coalesced(true, 1, NULL);
	/* the metadata came with it */
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &t.w, &meta, &cached), 0);
	cr_assert(cached);
	cr_assert_eq(meta.size, sizeof(obj_a));
	cr_assert_str_eq(meta.etag, "\"etag-a\"");
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	cr_assert_eq(org_count(NULL, NULL), 1);
	env_stop();
}

/* Ten requests for a missing chunk of a known object: one ranged GET. */
LTest(cache, coalesced_chunk_fill)
{
	bc_objmeta_t meta;
	bc_object_t *o;

	env_start();
	o = warm_object(&meta);
	run_coalesced(false, 2, meta.etag);
	{
		fake_req_t q = org_last();

		cr_assert_str_eq(q.if_match, "\"etag-a\"",
		    "a chunk fill must be conditional on the known version");
		cr_assert_str_eq(q.bucket, BUCKET);
		cr_assert_str_eq(q.key, KEY);
		cr_assert_eq(q.cls, BC_ORIGIN_DEMAND);
	}
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- cold object, hint, hit path ----------------------------------------- */

/* bc_cache_meta with hint k: one GET of chunk k, the right metadata, and
 * the waiter gets chunk k, which is then stored. */
LTest(cache, cold_object_hint_chunk)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached = true;
	time_t lm;
	tw_t t;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_not_null(o);
	tw_init(&t);
	cr_assert_eq(bc_cache_meta(E.c, o, 2, &t.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&t), BC_WAIT_CHUNK, "%s",
	    res_name(bc_waiter_result(E.c, &t.w)));
	first = t.w.chunk;
	t.w.chunk = NULL;
	check_chunk(first, 2, obj_a, sizeof(obj_a), CS);
	bc_waiter_reset(&t.w);
	cr_assert_eq(org_count(NULL, NULL), 1);
	cr_assert_eq(org_count("GET", "bytes=2048-3071"), 1);
	cr_assert_str_eq(org_last().if_match, "",
	    "the first fill cannot know the ETag");

	cr_assert_eq(bc_cache_meta(E.c, o, 2, &t.w, &meta, &cached), 0);
	cr_assert(cached);
	cr_assert_eq(meta.size, 3000);
	cr_assert_str_eq(meta.etag, "\"etag-a\"");
	cr_assert_eq(meta.last_modified, (time_t)LAST_MOD_T);
	cr_assert_str_eq(bc_kv_get(&meta.headers, "ETag"), "\"etag-a\"");
	cr_assert_str_eq(bc_kv_get(&meta.headers, "Content-Type"),
	    "application/x-test");
	cr_assert_str_eq(bc_kv_get(&meta.headers, "x-amz-meta-color"), "blue");
	cr_assert_not_null(bc_kv_get(&meta.headers, "Last-Modified"));
	cr_assert_eq(bc_http_date_parse(bc_kv_get(&meta.headers,
	    "Last-Modified"), &lm), 0);
	cr_assert_null(bc_kv_get(&meta.headers, "Content-Range"),
	    "per-response headers are not replayed");
	cr_assert_null(bc_kv_get(&meta.headers, "Content-Length"));
	cr_assert_null(bc_kv_get(&meta.headers, "x-amz-request-id"));
	cr_assert_null(bc_kv_get(&meta.headers, "x-amz-id-2"));
	cr_assert_null(bc_kv_get(&meta.headers, "Date"));
	cr_assert_null(bc_kv_get(&meta.headers, "Server"));
	cr_assert_null(bc_kv_get(&meta.headers, "Accept-Ranges"));
	cr_assert_eq(org_last().cls, BC_ORIGIN_DEMAND);
	cr_assert(org_last().push, "a fill is a push exchange");
	bc_objmeta_fini(&meta);

	/* chunk 2 was stored: a hit, no request */
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 2, false, NULL, &ch),
	    0);
	cr_assert_eq(ch, first, "the stored chunk is the delivered one");
	bc_chunk_unref(ch);
	cr_assert_eq(org_count(NULL, NULL), 1);
	bc_chunk_unref(first);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A fetched chunk is a hit: bc_cache_chunk returns 0 with a reference
 * and nothing goes upstream; a miss without fetch starts nothing. */
LTest(cache, hit_makes_no_request)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *a = NULL, *b = NULL;
	uint64_t fills;
	unsigned n, w0;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &a), 0);
	check_chunk(a, 1, obj_a, sizeof(obj_a), CS);
	n = org_count(NULL, NULL);
	cr_assert_eq(n, 2);
	fills = st_get(BC_STAT_cache_fills);

	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t.w, &b), 0);
	cr_assert_eq(b, a);
	cr_assert_geq(atomic_load(&b->refs), 3, "tier + two holders");
	check_chunk(b, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	b = NULL;
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &b), 0);
	check_chunk(b, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	b = NULL;
	w0 = tw_wakes(&t);
	cr_assert_eq(bc_waiter_result(E.c, &t.w), BC_WAIT_PENDING);
	cr_assert_null(t.w.list, "a hit registers no waiter");

	/* a miss without fetch: EAGAIN, no fill, nothing registered */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 2, false, &t.w, &b),
	    BC_EAGAIN);
	cr_assert_null(b);
	cr_assert_null(t.w.list);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills);
	cr_assert_eq(org_count(NULL, NULL), n);
	cr_assert_eq(tw_wakes(&t), w0, "a hit or a miss without fetch woke");

	/* a readahead (fetch, no waiter) fills it once; the next request
	 * joins that fill */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 2, true, NULL, &b),
	    BC_EAGAIN);
	cr_assert_eq(org_find("GET", "bytes=2048-3071").cls,
	    BC_ORIGIN_PREFETCH, "a fill nobody waits on is a prefetch");
	cr_assert_eq(get_chunk(o, meta.etag, 2, &t, &b), 0);
	check_chunk(b, 2, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	cr_assert_eq(org_count("GET", "bytes=2048-3071"), 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills + 1);

	bc_chunk_unref(a);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A chunk memory lost but a lower tier holds comes from that tier: the
 * fill asks the chain's lower tiers before the origin, which never hears
 * of it, and the chunk is promoted back into memory. What the origin
 * brings is queued for the lower tiers; a lower tier that fails only
 * sends the fill on to the origin. */
LTest(cache, fills_from_a_lower_tier)
{
	bc_tier_opts_t to = { .capacity = 1024 * 1024, .name = "lower" };
	bc_tier_async_ctl_t *ctl;
	bc_tier_t *lower, *top;
	bc_chunk_key_t k;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *a = NULL, *b = NULL;
	unsigned gets;
	tw_t t;

	env_start();
	to.loop = E.loop;
	cr_assert_eq(bc_tier_async.open(&to, &lower), 0);
	cr_assert_eq(bc_tier_chain_add(bc_cache_tiers(E.c), lower), 0);
	ctl = bc_tier_async_ctl(lower);
	top = bc_tier_chain_top(bc_cache_tiers(E.c));
	o = warm_object(&meta);
	tw_init(&t);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &a), 0);
	check_chunk(a, 1, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(atomic_load(&ctl->gets), 1, "chunk 1 asked the lower "
	    "tier first");
	bc_tier_chain_flush(bc_cache_tiers(E.c));
	cr_assert_eq(atomic_load(&ctl->puts), 2, "chunks 0 and 1 were "
	    "queued for the lower tier");
	gets = org_count("GET", NULL);

	/* memory loses chunk 1: the lower tier answers, not the origin */
	k = (bc_chunk_key_t){ BUCKET, KEY, meta.etag, 1 };
	cr_assert_eq(top->ops->del(top, &k), 0);
	bc_chunk_unref(a);
	a = NULL;
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &b), 0);
	check_chunk(b, 1, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count("GET", NULL), gets, "the origin was asked");
	cr_assert_eq(atomic_load(&ctl->gets), 2);
	bc_chunk_unref(b);
	b = NULL;
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &b),
	    0, "the lower tier's chunk was not promoted into memory");
	check_chunk(b, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	b = NULL;

	/* a failing lower tier: the fill goes on to the origin */
	cr_assert_eq(top->ops->del(top, &k), 0);
	atomic_store(&ctl->get_status, BC_EIO);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &b), 0);
	check_chunk(b, 1, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count("GET", NULL), gets + 1);
	bc_chunk_unref(b);

	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Counter k of job's per-job stats (0: not tracked). */
static uint64_t
jst(const char *job, bc_jstat_t k)
{
	uint64_t v[BC_JSTAT__COUNT] = { 0 };
	double rate;

	return bc_stats_job_get(job, v, &rate) ? v[k] : 0;
}

/* The prefetcher's entry point by name: a cold object gets its first
 * fill (metadata and chunk 0), a known one its chunks, all of class
 * prefetch; what a client then reads counts as used, what is dropped
 * unread as wasted, and a client that finds its chunk's prefetch still
 * running counts as late (and that chunk is not a prefetch any more) —
 * in total, and for the job each prefetch was for. */
LTest(cache, prefetch_by_key_counts_used_wasted_and_late)
{
	bc_stats_job_id_t jp = bc_stats_job_id("job-p");
	bc_stats_job_id_t jq = bc_stats_job_id("job-q");
	uint64_t issued = st_get(BC_STAT_prefetch_issued);
	uint64_t used = st_get(BC_STAT_prefetch_used);
	uint64_t wasted = st_get(BC_STAT_prefetch_wasted);
	uint64_t late = st_get(BC_STAT_prefetch_late);
	uint64_t bytes = st_get(BC_STAT_prefetch_bytes);
	uint64_t unread = st_get(BC_STAT_prefetch_unread_bytes);
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *ch = NULL;
	bool cached = false;
	tw_t t;

	env_start();
	cr_assert_eq(bc_cache_prefetch_key(E.c, BUCKET, KEY, 0, 3, false, jp),
	    1);
	cr_assert(org_wait_quiet());
	cr_assert_eq(org_find("GET", "bytes=0-1023").cls, BC_ORIGIN_PREFETCH);
	cr_assert_eq(bc_cache_prefetch_key(E.c, BUCKET, KEY, 0, 3, false, jp),
	    2, "chunk 0 is in memory: chunks 1 and 2 are fetched");
	cr_assert(org_wait_quiet());
	cr_assert_eq(bc_cache_prefetch_key(E.c, BUCKET, KEY, 0, 3, false, jq),
	    0);
	cr_assert_eq(org_count("GET", NULL), 3);
	cr_assert_eq(st_get(BC_STAT_prefetch_issued) - issued, 3);
	cr_assert_eq(st_get(BC_STAT_prefetch_bytes) - bytes, sizeof(obj_a));
	cr_assert_eq(st_get(BC_STAT_prefetch_unread_bytes) - unread,
	    sizeof(obj_a));
	cr_assert_eq(jst("job-p", BC_JSTAT_prefetch_issued), 3);
	cr_assert_eq(jst("job-p", BC_JSTAT_prefetch_bytes), sizeof(obj_a));
	cr_assert_eq(jst("job-q", BC_JSTAT_prefetch_issued), 0,
	    "nothing left to fetch for job-q");

	/* a client reads the object's metadata and chunk 1 */
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 1, &t, &meta, &cached, NULL), 0);
	cr_assert(cached);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(ch);
	ch = NULL;
	cr_assert_eq(st_get(BC_STAT_prefetch_used) - used, 1);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	bc_chunk_unref(ch);
	ch = NULL;
	cr_assert_eq(st_get(BC_STAT_prefetch_used) - used, 1,
	    "a second read is no second use");
	cr_assert_eq(jst("job-p", BC_JSTAT_prefetch_used), 1);

	/* dropped unread: chunks 0 and 2 are wasted */
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, KEY, NULL), 1);
	cr_assert_eq(st_get(BC_STAT_prefetch_wasted) - wasted, 2);
	cr_assert_eq(st_get(BC_STAT_prefetch_unread_bytes), unread);
	cr_assert_eq(jst("job-p", BC_JSTAT_prefetch_wasted), 2);
	cr_assert_eq(jst("job-q", BC_JSTAT_prefetch_used) +
	    jst("job-q", BC_JSTAT_prefetch_wasted), 0);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);

	/* late: a client joins a prefetch still in flight */
	org_put(BUCKET, KEY, obj_b, sizeof(obj_b), "\"etag-b\"");
	o = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
	org_gate(true);
	cr_assert_eq(bc_cache_prefetch_key(E.c, BUCKET, KEY, 1, 1, false, jq),
	    1);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t.w, &ch),
	    BC_EAGAIN);
	cr_assert_eq(st_get(BC_STAT_prefetch_late) - late, 1);
	cr_assert_eq(jst("job-q", BC_JSTAT_prefetch_issued), 1);
	cr_assert_eq(jst("job-q", BC_JSTAT_prefetch_late), 1);
	cr_assert_eq(jst("job-p", BC_JSTAT_prefetch_late), 0);
	org_gate(false);
	cr_assert_eq(tw_wait(&t), BC_WAIT_CHUNK);
	check_chunk(t.w.chunk, 1, obj_b, sizeof(obj_b), CS);
	cr_assert_eq(atomic_load(&t.w.chunk->prefetched), 0,
	    "a chunk a client waited for is no prefetch");
	bc_chunk_unref(t.w.chunk);
	t.w.chunk = NULL;
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Read-ahead (the HTTP handler's, now the cache's): prefetches of the
 * next n chunks (the reader's window), none past the last asked for, none
 * for chunks in memory; a reader then joins or hits them. */
LTest(cache, read_ahead_prefetches_the_next_chunks)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *b = NULL;
	unsigned fills;
	tw_t t;

	env_start();
	o = warm_object(&meta);   /* chunk 0 */
	tw_init(&t);
	fills = (unsigned)st_get(BC_STAT_cache_fills);
	bc_cache_read_ahead(E.c, o, meta.etag, 0, 2, 1, false,
	    bc_stats_job_id("reader"));
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &b), 0);
	check_chunk(b, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	b = NULL;
	cr_assert_eq(org_count("GET", "bytes=1024-2047"), 1);
	cr_assert_eq(org_count("GET", "bytes=2048-3071"), 0,
	    "one chunk ahead only");
	cr_assert_eq(org_find("GET", "bytes=1024-2047").cls,
	    BC_ORIGIN_PREFETCH);
	cr_assert_str_eq(org_find("GET", "bytes=1024-2047").if_match,
	    "\"etag-a\"");
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills + 1);
	cr_assert_eq(jst("reader", BC_JSTAT_prefetch_issued), 1);
	cr_assert_eq(jst("reader", BC_JSTAT_prefetch_used) +
	    jst("reader", BC_JSTAT_prefetch_late), 1,
	    "the reader found it fetched, or joined its fetch");
	/* more allowed: only the chunk not in memory is fetched, and none
	 * past the last asked for */
	bc_cache_read_ahead(E.c, o, meta.etag, 0, 2, 5, false,
	    BC_STATS_JOB_NONE);
	cr_assert_eq(get_chunk(o, meta.etag, 2, &t, &b), 0);
	check_chunk(b, 2, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(b);
	cr_assert_eq(org_count("GET", "bytes=1024-2047"), 1);
	cr_assert_eq(org_count("GET", "bytes=2048-3071"), 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills + 2);
	bc_cache_read_ahead(E.c, o, meta.etag, 2, 2, 5, false,
	    BC_STATS_JOB_NONE);
	bc_cache_read_ahead(E.c, o, meta.etag, 0, 2, 5, false,
	    BC_STATS_JOB_NONE);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills + 2, "all in memory");
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A chunk asked for with an ETag that is not the object's is never a
 * fetch of another version: BC_ECANCELED, no request. */
LTest(cache, chunk_with_stale_etag_is_canceled)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	unsigned n;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	n = org_count(NULL, NULL);
	tw_init(&t);
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"other\"", 1, true, &t.w, &ch),
	    BC_ECANCELED);
	cr_assert_null(ch);
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"other\"", 0, true, &t.w, &ch),
	    BC_ECANCELED, "chunk 0 of another version is not a hit");
	cr_assert_null(t.w.list);
	cr_assert_eq(org_count(NULL, NULL), n);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* HEAD's hint: one HEAD, no GET; size from Content-Length. */
LTest(cache, meta_only_uses_head)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached = true;
	tw_t t;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, BC_CACHE_META_ONLY, &t, &meta, &cached,
	    &first), 0);
	cr_assert_null(first);
	cr_assert_eq(meta.size, 3000);
	cr_assert_str_eq(meta.etag, "\"etag-a\"");
	cr_assert_str_eq(bc_kv_get(&meta.headers, "x-amz-meta-color"), "blue");
	cr_assert_eq(org_count("HEAD", NULL), 1);
	cr_assert_eq(org_count("GET", NULL), 0);
	cr_assert_str_eq(org_last().if_none_match, "");
	/* chunks come later, each with If-Match */
	cr_assert_eq(get_chunk(o, meta.etag, 0, &t, &ch), 0);
	check_chunk(ch, 0, obj_a, sizeof(obj_a), CS);
	cr_assert_str_eq(org_last().if_match, "\"etag-a\"");
	bc_chunk_unref(ch);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- failures ------------------------------------------------------------ */

/* A 500 (retries 0) ends every waiter — the fill's, a joiner's and a
 * metadata waiter with another hint — with UPSTREAM 500 and the body;
 * nothing is remembered: the next request fetches and succeeds. */
LTest(cache, upstream_500_ends_all_then_retry_succeeds)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t[3];
	uint64_t failures0 = st_get(BC_STAT_cache_fill_failures);

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	org_fail(1, 500);
	org_gate(true);
	for (int i = 0; i < 3; i++)
		tw_init(&t[i]);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &t[2].w, &meta, &cached),
	    BC_EAGAIN);
	org_gate(false);
	for (int i = 0; i < 3; i++) {
		bc_wait_result_t r = tw_wait(&t[i]);

		cr_assert_eq(r, BC_WAIT_UPSTREAM, "waiter %d: %s", i,
		    res_name(r));
		cr_assert_eq(t[i].w.up_status, 500);
		cr_assert_null(t[i].w.chunk);
		cr_assert_not_null(strstr(bc_buf_str(&t[i].w.up_body),
		    "<Code>InternalError</Code>"), "waiter %d: body '%s'", i,
		    bc_buf_str(&t[i].w.up_body));
		cr_assert_eq(tw_wakes(&t[i]), 1);
	}
	cr_assert_eq(org_count(NULL, NULL), 1);
	cr_assert_eq(st_get(BC_STAT_cache_fill_failures), failures0 + 1);

	/* no negative caching */
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(get_meta(o, 0, &t[0], &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(meta.size, 3000);
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 2);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	for (int i = 0; i < 3; i++)
		tw_fini(&t[i]);
	bc_object_unref(E.c, o);
	env_stop();
}

/* The same for a chunk fill of a known object (503, two waiters). */
LTest(cache, upstream_503_on_chunk_then_retry_succeeds)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	tw_t t[2];

	env_start();
	o = warm_object(&meta);
	tw_init(&t[0]);
	tw_init(&t[1]);
	org_fail(1, 503);
	org_gate(true);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t[0].w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t[1].w, &ch),
	    BC_EAGAIN);
	org_gate(false);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tw_wait(&t[i]), BC_WAIT_UPSTREAM);
		cr_assert_eq(t[i].w.up_status, 503);
		cr_assert_not_null(strstr(bc_buf_str(&t[i].w.up_body),
		    "SlowDown"));
	}
	cr_assert_eq(org_count("GET", "bytes=1024-2047"), 1);
	/* the object is still good: the next read fetches chunk 1 again */
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t[0], &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count("GET", "bytes=1024-2047"), 2);
	bc_chunk_unref(ch);
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Retrying belongs to the origin (the S3 origin retries a 503 inside its
 * exchange: test_upstream_xfer.c): the cache adds no retry of its own,
 * whatever --retries says. A fill is one fetch; its 503 is the waiter's
 * answer, and the next request fetches again. */
LTest(cache, cache_adds_no_retry_of_its_own)
{
	env_opts_t eo = { .retries = 3 };
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	org_fail(1, 503);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first),
	    BC_WAIT_UPSTREAM);
	cr_assert_eq(t.w.up_status, 503);
	cr_assert_null(first);
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 1);
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 2);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A transport failure, no answer at all: every waiter ends
 * FAILED with BC_EIO; the next request succeeds. */
LTest(cache, transport_failure_then_recovers)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t[2];

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	org_fail(1, 0);
	org_gate(true);
	tw_init(&t[0]);
	tw_init(&t[1]);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	org_gate(false);
	for (int i = 0; i < 2; i++) {
		bc_wait_result_t r = tw_wait(&t[i]);

		cr_assert_eq(r, BC_WAIT_FAILED, "waiter %d: %s", i,
		    res_name(r));
		cr_assert_eq(t[i].w.err, BC_EIO, "waiter %d: %s", i,
		    bc_strerror(t[i].w.err));
		cr_assert_null(t[i].w.chunk);
	}
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(get_meta(o, 0, &t[0], &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An origin that cannot be reached (a transport failure before any
 * answer, as a closed port gives): FAILED each time, and each request
 * tries again (a new fill), never a remembered failure. */
LTest(cache, unreachable_origin_fails_every_time)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached;
	uint64_t fills0;
	tw_t t;

	env_start();
	org_fail(100, 0);
	fills0 = st_get(BC_STAT_cache_fills);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached),
		    BC_EAGAIN, "round %d", round);
		cr_assert_eq(tw_wait(&t), BC_WAIT_FAILED);
		cr_assert_eq(t.w.err, BC_EIO, "%s", bc_strerror(t.w.err));
		bc_waiter_reset(&t.w);
	}
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0 + 2);
	cr_assert_eq(org_count(NULL, NULL), 2);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An origin that cannot start an exchange (fetch() returns NULL: out of
 * memory, the loop stopping): bc_cache_meta and bc_cache_chunk say
 * BC_EIO at once, register nothing and remember nothing; the next
 * request fills. */
LTest(cache, origin_refusing_to_start_fails_at_once)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached;
	uint64_t fills0;
	tw_t t;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	fills0 = st_get(BC_STAT_cache_fills);
	fake_origin_refuse(E.fo, 1);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), BC_EIO);
	cr_assert_null(t.w.list, "registered on a fill that never started");
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	bc_waiter_reset(&t.w);
	fake_origin_refuse(E.fo, 1);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t.w, &ch),
	    BC_EIO);
	cr_assert_null(ch);
	cr_assert_null(t.w.list);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EAGAIN, "a fill that never started is still listed");
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count(NULL, NULL), 2);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An origin that times out before answering (the S3 origin's TTFB limit
 * or deadline, test_upstream_xfer.c): FAILED with BC_ETIMEDOUT (504
 * GatewayTimeout for the client, http_object.c), for the fill's waiter
 * and a joiner; the next request fills. */
LTest(cache, origin_timeout_before_headers_fails_the_fill)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t[2];

	env_start();
	org_gate(true);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t[0]);
	tw_init(&t[1]);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	fake_origin_abort_held(E.fo, BC_ETIMEDOUT);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tw_wait(&t[i]), BC_WAIT_FAILED);
		cr_assert_eq(t[i].w.err, BC_ETIMEDOUT, "%s",
		    bc_strerror(t[i].w.err));
	}
	org_gate(false);
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(get_meta(o, 0, &t[0], &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An origin that stalls mid-body and times out (the S3 origin's stall
 * limit): the accepted chunk fill fails with BC_ETIMEDOUT for its
 * waiter, nothing is stored, and the next read fetches again. */
LTest(cache, origin_timeout_mid_body_fails_the_fill)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	fake_origin_hold_body(E.fo, 500);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t.w, &ch),
	    BC_EAGAIN);
	cr_assert(fake_origin_wait_body_held(E.fo, 1, GUARD_MS));
	cr_assert_eq(tw_wakes(&t), 0);
	fake_origin_abort_held(E.fo, BC_ETIMEDOUT);
	cr_assert_eq(tw_wait(&t), BC_WAIT_FAILED);
	cr_assert_eq(t.w.err, BC_ETIMEDOUT, "%s", bc_strerror(t.w.err));
	cr_assert_null(t.w.chunk);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EAGAIN, "a timed-out fill's chunk was stored");
	fake_origin_hold_body(E.fo, 0);
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count("GET", "bytes=1024-2047"), 2);
	bc_chunk_unref(ch);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* 404 on a cold object: UPSTREAM 404 with S3's body, for GET and HEAD;
 * a joiner gets its own copy of the body. */
LTest(cache, not_found_passes_404_and_body)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached;
	tw_t t[2];

	env_start();
	o = bc_cache_object(E.c, BUCKET, "missing");
	tw_init(&t[0]);
	tw_init(&t[1]);
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	org_gate(false);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tw_wait(&t[i]), BC_WAIT_UPSTREAM);
		cr_assert_eq(t[i].w.up_status, 404);
		cr_assert_not_null(strstr(bc_buf_str(&t[i].w.up_body),
		    "<Code>NoSuchKey</Code>"), "body '%s'",
		    bc_buf_str(&t[i].w.up_body));
	}
	cr_assert_neq(t[0].w.up_body.data, t[1].w.up_body.data);
	cr_assert_eq(org_count("GET", NULL), 1);

	/* HEAD: 404 without a body */
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(bc_cache_meta(E.c, o, BC_CACHE_META_ONLY, &t[0].w, &meta,
	    &cached), BC_EAGAIN);
	cr_assert_eq(tw_wait(&t[0]), BC_WAIT_UPSTREAM);
	cr_assert_eq(t[0].w.up_status, 404);
	cr_assert_eq(t[0].w.up_body.len, 0);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	/* and the object appears: found at once */
	org_put(BUCKET, "missing", obj_b, 100, "\"etag-m\"");
	bc_waiter_reset(&t[0].w);
	{
		bc_chunk_t *first = NULL;

		cr_assert_eq(get_meta(o, 0, &t[0], &meta, &cached, &first), 0);
		check_chunk(first, 0, obj_b, 100, CS);
		bc_chunk_unref(first);
		cr_assert_eq(meta.size, 100);
		bc_objmeta_fini(&meta);
	}
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A 206 shorter than the chunk it claims: FAILED (BC_EPROTO), nothing
 * stored. */
LTest(cache, short_chunk_fails)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	fake_origin_set(E.fo, FAKE_SHORT_BODY, true);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), BC_WAIT_FAILED);
	cr_assert_eq(t.w.err, BC_EPROTO);
	cr_assert_null(t.w.chunk);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EAGAIN, "a short chunk was stored");
	fake_origin_set(E.fo, FAKE_SHORT_BODY, false);
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(ch);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A first answer without an ETag cannot be cached: FAILED (BC_EPROTO). */
LTest(cache, missing_etag_fails)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached;
	tw_t t;

	env_start();
	fake_origin_set(E.fo, FAKE_NO_ETAG, true);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&t), BC_WAIT_FAILED);
	cr_assert_eq(t.w.err, BC_EPROTO);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An upstream that ignores Range and answers 200 for an object that fits
 * one chunk: that answer is the whole object. */
LTest(cache, ignored_range_small_object)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t;

	env_start();
	org_put(BUCKET, "small", obj_b, 700, "\"etag-s\"");
	fake_origin_set(E.fo, FAKE_IGNORE_RANGE, true);
	o = bc_cache_object(E.c, BUCKET, "small");
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_b, 700, CS);
	cr_assert_eq(meta.size, 700);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An upstream that ignores Range and answers 200 with more than a chunk:
 * the fill must fail, never take the cut-off body for the object. */
LTest(cache, ignored_range_large_object_fails)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	int rv;
	tw_t t;

	env_start();
	fake_origin_set(E.fo, FAKE_IGNORE_RANGE, true);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	rv = get_meta(o, 0, &t, &meta, &cached, &first);
	if (rv == 0) {
		cr_log_error("meta size %" PRIu64 ", chunk 0 of %zu bytes",
		    meta.size, first != NULL ? first->len : 0);
		bc_objmeta_fini(&meta);
	}
	bc_chunk_unref(first);
	cr_assert_eq(rv, BC_WAIT_FAILED, "a 3000-byte object answered with "
	    "200 was cached cut off at the chunk size (get_meta: %d)", rv);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A 206 whose transfer breaks midway: FAILED, nothing stored. */
LTest(cache, truncated_206_fails)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t t;

	env_start();
	fake_origin_cut(E.fo, 300, 0);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
	    BC_WAIT_FAILED);
	cr_assert_null(t.w.chunk);
	tw_fini(&t);
	/* not stored: a miss (or, metadata unknown, a restart) */
	cr_assert_neq(bc_cache_chunk(E.c, o, "\"etag-a\"", 0, false, NULL,
	    &ch), 0, "a cut-off chunk was stored");
	cr_assert_null(ch);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An upstream that ignores Range answers 200 for a 700-byte object and
 * the transfer breaks after 300 bytes: the fill must fail, never cache
 * 300 bytes as the whole object. */
LTest(cache, truncated_200_fails)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	int rv;
	tw_t t;

	env_start();
	org_put(BUCKET, "small", obj_b, 700, "\"etag-s\"");
	fake_origin_set(E.fo, FAKE_IGNORE_RANGE, true);
	fake_origin_cut(E.fo, 300, 0);
	o = bc_cache_object(E.c, BUCKET, "small");
	tw_init(&t);
	rv = get_meta(o, 0, &t, &meta, &cached, &first);
	if (rv == 0) {
		cr_log_error("meta size %" PRIu64 ", chunk 0 of %zu bytes",
		    meta.size, first != NULL ? first->len : 0);
		bc_objmeta_fini(&meta);
	}
	bc_chunk_unref(first);
	cr_assert_eq(rv, BC_WAIT_FAILED, "a 700-byte answer cut at 300 bytes "
	    "was cached as the object (get_meta: %d)", rv);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A HEAD answer without Content-Length does not say the size: the fill
 * must fail rather than take the object for empty. */
LTest(cache, head_without_length_fails)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached;
	int rv;
	tw_t t;

	env_start();
	fake_origin_set(E.fo, FAKE_HEAD_NO_LENGTH, true);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	rv = get_meta(o, BC_CACHE_META_ONLY, &t, &meta, &cached, NULL);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	if (rv == 0) {
		cr_log_error("meta size %" PRIu64, meta.size);
		bc_objmeta_fini(&meta);
	}
	cr_assert_eq(rv, BC_WAIT_FAILED, "a 3000-byte object whose HEAD "
	    "had no Content-Length was taken for empty (get_meta: %d)", rv);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- the object changes -------------------------------------------------- */

/* Changed between chunk fetches: the If-Match fill of chunk 1 gets 412;
 * its waiters (and a joiner) end RESTART with no chunk, the object is
 * unlisted with its chunks, and a new lookup learns the new version. */
static void
changed_between_chunks(bool origin_ignores_if_match)
{
	bc_objmeta_t meta, meta2;
	bc_object_t *o, *o2;
	bc_chunk_t *ch = NULL, *first = NULL;
	bool cached;
	tw_t t[2];

	env_start();
	o = warm_object(&meta);
	org_put(BUCKET, KEY, obj_b, sizeof(obj_b), "\"etag-b\"");
	fake_origin_set(E.fo, FAKE_IGNORE_IF_MATCH, origin_ignores_if_match);
	tw_init(&t[0]);
	tw_init(&t[1]);
	org_gate(true);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t[0].w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t[1].w, &ch),
	    BC_EAGAIN);
	org_gate(false);
	for (int i = 0; i < 2; i++) {
		bc_wait_result_t r = tw_wait(&t[i]);

		cr_assert_eq(r, BC_WAIT_RESTART, "waiter %d: %s", i,
		    res_name(r));
		cr_assert_null(t[i].w.chunk, "a chunk of the new version "
		    "under the old ETag");
	}
	cr_assert_str_eq(org_last().if_match, "\"etag-a\"");
	/* the old object is gone, chunk 0 with it */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch),
	    BC_ECANCELED);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta2, &cached),
	    BC_ECANCELED);
	o2 = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_neq(o2, o, "the changed object is still listed");
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(get_meta(o2, 1, &t[0], &meta2, &cached, &first), 0);
	cr_assert_str_eq(meta2.etag, "\"etag-b\"");
	check_chunk(first, 1, obj_b, sizeof(obj_b), CS);
	bc_chunk_unref(first);
	cr_assert_eq(bc_cache_chunk(E.c, o2, meta.etag, 0, false, NULL, &ch),
	    BC_ECANCELED, "the old version's chunk 0 still served");
	bc_objmeta_fini(&meta2);
	bc_objmeta_fini(&meta);
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

LTest(cache, etag_change_between_chunks_412)
{
	changed_between_chunks(false);
}

/* An upstream that ignores If-Match answers 206 with the new ETag: the
 * same RESTART, never the new bytes. */
LTest(cache, etag_change_between_chunks_if_match_ignored)
{
	changed_between_chunks(true);
}

/* ---- invalidation ---------------------------------------------------------- */

/* Invalidated while a chunk fill is held: its waiter still gets the
 * chunk, but the chunk is not stored, and the object's other chunks are
 * dropped too. */
LTest(cache, invalidate_during_chunk_fill)
{
	bc_objmeta_t meta, meta2;
	bc_object_t *o, *o2;
	bc_chunk_t *ch = NULL;
	bool cached;
	uint64_t inv0 = st_get(BC_STAT_cache_invalidations);
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	org_gate(true);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &t.w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, KEY, NULL), 1);
	cr_assert_eq(st_get(BC_STAT_cache_invalidations), inv0 + 1);
	cr_assert_eq(tw_wakes(&t), 0, "a chunk waiter is not restarted");
	org_gate(false);
	cr_assert_eq(tw_wait(&t), BC_WAIT_CHUNK);
	check_chunk(t.w.chunk, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(t.w.chunk);
	t.w.chunk = NULL;
	bc_waiter_reset(&t.w);

	/* the old object is unlisted */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_ECANCELED);
	cr_assert_null(ch);
	/* a new one learns the same version by HEAD, and finds neither
	 * chunk 0 (dropped) nor chunk 1 (never stored) */
	o2 = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_neq(o2, o);
	cr_assert_eq(get_meta(o2, BC_CACHE_META_ONLY, &t, &meta2, &cached,
	    NULL), 0);
	cr_assert_str_eq(meta2.etag, meta.etag);
	cr_assert_eq(bc_cache_chunk(E.c, o2, meta2.etag, 1, false, NULL, &ch),
	    BC_EAGAIN, "the invalidated fill's chunk was stored");
	cr_assert_eq(bc_cache_chunk(E.c, o2, meta2.etag, 0, false, NULL, &ch),
	    BC_EAGAIN, "chunk 0 survived the invalidation");
	bc_objmeta_fini(&meta2);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Invalidated during the first fill: a metadata waiter with another hint
 * restarts at once; the fill's own waiter still gets its chunk, which is
 * not stored. */
LTest(cache, invalidate_during_first_fill)
{
	bc_objmeta_t meta;
	bc_object_t *o, *o2;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t t[2];

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t[0]);
	tw_init(&t[1]);
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 2, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, KEY, NULL), 1);
	cr_assert_eq(tw_wait(&t[1]), BC_WAIT_RESTART);
	cr_assert_eq(tw_wakes(&t[0]), 0);
	org_gate(false);
	cr_assert_eq(tw_wait(&t[0]), BC_WAIT_CHUNK);
	check_chunk(t[0].w.chunk, 0, obj_a, sizeof(obj_a), CS);
	bc_waiter_reset(&t[1].w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[1].w, &meta, &cached),
	    BC_ECANCELED);
	o2 = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_neq(o2, o);
	bc_waiter_reset(&t[1].w);
	cr_assert_eq(get_meta(o2, BC_CACHE_META_ONLY, &t[1], &meta, &cached,
	    NULL), 0);
	cr_assert_eq(bc_cache_chunk(E.c, o2, meta.etag, 0, false, NULL, &ch),
	    BC_EAGAIN, "an unlisted object's fill was stored");
	bc_objmeta_fini(&meta);
	tw_fini(&t[0]);     /* drops the chunk it still holds */
	tw_fini(&t[1]);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A prefix invalidation drops the keys under it and nothing else. */
LTest(cache, invalidate_prefix)
{
	bc_object_t *a, *b;
	bc_objmeta_t ma, mb;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached;
	tw_t t;

	env_start();
	org_put(BUCKET, "dir/a", obj_a, 500, "\"etag-da\"");
	org_put(BUCKET, "other", obj_b, 500, "\"etag-o\"");
	tw_init(&t);
	a = bc_cache_object(E.c, BUCKET, "dir/a");
	b = bc_cache_object(E.c, BUCKET, "other");
	cr_assert_eq(get_meta(a, 0, &t, &ma, &cached, &first), 0);
	bc_chunk_unref(first);
	first = NULL;
	cr_assert_eq(get_meta(b, 0, &t, &mb, &cached, &first), 0);
	bc_chunk_unref(first);
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, NULL, "dir/"), 1);
	cr_assert_eq(bc_cache_chunk(E.c, a, ma.etag, 0, false, NULL, &ch),
	    BC_ECANCELED);
	cr_assert_eq(bc_cache_chunk(E.c, b, mb.etag, 0, false, NULL, &ch), 0);
	check_chunk(ch, 0, obj_b, 500, CS);
	bc_chunk_unref(ch);
	bc_objmeta_fini(&ma);
	bc_objmeta_fini(&mb);
	tw_fini(&t);
	bc_object_unref(E.c, a);
	bc_object_unref(E.c, b);
	env_stop();
}

/* ---- metadata TTL ---------------------------------------------------------- */

#define TTL_MS 300

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The first lookup of o: learns its metadata and chunk 0, drops both
 * copies (the cache keeps them). */
static void
prime(bc_object_t *o, tw_t *t)
{
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;

	cr_assert_eq(get_meta(o, 0, t, &meta, &cached, &first), 0);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	bc_waiter_reset(&t->w);
}

/* o, a new lookup of KEY after it became obj_b's first 2000 bytes with
 * ETag "etag-b": it learns that version, bytes included. */
static void
expect_version_b(bc_object_t *o, tw_t *t)
{
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;

	bc_waiter_reset(&t->w);
	cr_assert_eq(get_meta(o, 0, t, &meta, &cached, &first), 0);
	cr_assert_str_eq(meta.etag, "\"etag-b\"");
	cr_assert_eq(meta.size, 2000);
	check_chunk(first, 0, obj_b, 2000, CS);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
}

/* After meta_ttl, bc_cache_meta revalidates with one HEAD If-None-Match
 * (a second asker joins it); 304 makes the metadata fresh again and the
 * chunks stay. */
LTest(cache, meta_ttl_revalidates_304)
{
	env_opts_t eo = { .meta_ttl = TTL_MS };
	bc_objmeta_t meta, m2;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *first = NULL;
	bool cached = false;
	uint64_t reval0 = st_get(BC_STAT_cache_revalidations);
	tw_t t[2];

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t[0]);
	tw_init(&t[1]);
	cr_assert_eq(get_meta(o, 0, &t[0], &meta, &cached, &first), 0);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached), 0,
	    "fresh within the TTL");
	cr_assert(cached);
	bc_objmeta_fini(&meta);

	sleep_ms(TTL_MS + 50);
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &meta, &cached),
	    BC_EAGAIN, "stale metadata served");
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &t[1].w, &meta, &cached),
	    BC_EAGAIN);
	{
		fake_req_t q = org_last();

		cr_assert_str_eq(q.method, "HEAD");
		cr_assert_str_eq(q.if_none_match, "\"etag-a\"");
	}
	/* the chunks stay usable while it runs */
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 0, false, NULL, &ch),
	    0);
	bc_chunk_unref(ch);
	org_gate(false);
	cr_assert_eq(tw_wait(&t[0]), BC_WAIT_RECHECK);
	cr_assert_eq(tw_wait(&t[1]), BC_WAIT_RECHECK);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	cr_assert_eq(st_get(BC_STAT_cache_revalidations), reval0 + 1);
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t[0].w, &m2, &cached), 0);
	cr_assert(cached);
	cr_assert_eq(m2.size, 3000);
	cr_assert_str_eq(m2.etag, "\"etag-a\"");
	bc_objmeta_fini(&m2);
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 0, false, NULL, &ch),
	    0);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count("GET", NULL), 1);
	tw_fini(&t[0]);
	tw_fini(&t[1]);
	bc_object_unref(E.c, o);
	env_stop();
}

/* After meta_ttl the object changed: the revalidation's 200 with another
 * ETag restarts the waiter; the object is dropped with its chunks and a
 * new lookup learns the new version. */
LTest(cache, meta_ttl_revalidation_sees_change)
{
	env_opts_t eo = { .meta_ttl = TTL_MS };
	bc_objmeta_t meta;
	bc_object_t *o, *o2;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	bc_chunk_unref(first);
	first = NULL;
	bc_objmeta_fini(&meta);
	org_put(BUCKET, KEY, obj_b, 2000, "\"etag-b\"");
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&t), BC_WAIT_RESTART);
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 0, false, NULL, &ch),
	    BC_ECANCELED);
	o2 = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_neq(o2, o);
	expect_version_b(o2, &t);
	tw_fini(&t);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* After meta_ttl the object is gone: RESTART, then a 404. */
LTest(cache, meta_ttl_revalidation_sees_delete)
{
	env_opts_t eo = { .meta_ttl = TTL_MS };
	bc_objmeta_t meta;
	bc_object_t *o, *o2;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	org_put(BUCKET, "gone", obj_a, 10, "\"etag-g\"");
	o = bc_cache_object(E.c, BUCKET, "gone");
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	cr_assert(fake_origin_del(E.fo, BUCKET, "gone"));
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
	    BC_WAIT_RESTART);
	o2 = bc_cache_object(E.c, BUCKET, "gone");
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_meta(o2, 0, &t, &meta, &cached, NULL),
	    BC_WAIT_UPSTREAM);
	cr_assert_eq(t.w.up_status, 404);
	tw_fini(&t);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- empty objects and ranges past the end ------------------------------- */

/* Size 0: the first fill's ranged GET gets 416, a HEAD follows, and the
 * metadata says size 0 (no chunk). */
LTest(cache, empty_object_416_then_head)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached = true;
	tw_t t;

	env_start();
	org_put(BUCKET, "empty", NULL, 0, "\"etag-e\"");
	o = bc_cache_object(E.c, BUCKET, "empty");
	tw_init(&t);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&t), BC_WAIT_RECHECK);
	cr_assert_null(t.w.chunk);
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	cr_assert_null(first);
	cr_assert(cached);
	cr_assert_eq(meta.size, 0);
	cr_assert_str_eq(meta.etag, "\"etag-e\"");
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 1);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	cr_assert_eq(org_count(NULL, NULL), 2);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A hint past the end of a non-empty object (bytes=5000- of 3000): 416,
 * then a HEAD that learns the size; no chunk is made up. */
LTest(cache, hint_past_end_learns_size)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t t;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 4, &t, &meta, &cached, &first), 0);
	cr_assert_null(first);
	cr_assert_eq(meta.size, 3000);
	cr_assert_eq(org_count("GET", "bytes=4096-5119"), 1);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- references and waiters ---------------------------------------------- */

/*
 * Chunk references under memory pressure (mem_size holds about two
 * chunks). The memory tier never evicts a chunk someone holds (that frees
 * nothing); it evicts others instead. A held chunk the tier drops anyway
 * (invalidation) stays readable until its last holder lets go. Once
 * released, an idle chunk is evicted like any other.
 */
LTest(cache, held_chunk_survives_pressure_and_drop)
{
	env_opts_t eo = { .mem_size = 4096 };
	static uint8_t big[8 * CS];
	bc_object_t *o, *o2;
	bc_objmeta_t meta, m2;
	bc_chunk_t *held = NULL, *ch = NULL;
	uint64_t ev;
	bool cached;
	tw_t t;

	fill_pattern(big, sizeof(big), 3);
	env_start_opts(&eo);
	org_put(BUCKET, "big", big, sizeof(big), "\"etag-big\"");
	o = bc_cache_object(E.c, BUCKET, "big");
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &held), 0);
	check_chunk(held, 0, big, sizeof(big), CS);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch), 0,
	    "chunk 0 was not stored (mem_size too small for the test?)");
	bc_chunk_unref(ch);

	/* pressure: chunks 1..7 pass through; held chunk 0 is skipped */
	for (uint32_t i = 1; i < 8; i++) {
		cr_assert_eq(get_chunk(o, meta.etag, i, &t, &ch), 0);
		check_chunk(ch, i, big, sizeof(big), CS);
		bc_chunk_unref(ch);
	}
	ev = bc_cache_evictions(E.c);
	cr_assert_geq(ev, 5, "evictions %" PRIu64, ev);
	cr_assert_leq(bc_cache_bytes_held(E.c), 4096, "held %" PRIu64,
	    bc_cache_bytes_held(E.c));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch), 0,
	    "a held chunk was evicted");
	cr_assert_eq(ch, held);
	bc_chunk_unref(ch);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EAGAIN, "chunk 1 should have been evicted");

	/* dropped from the tier while held: still ours, intact (ASan sees a
	 * use after free), and the last reference */
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, "big", NULL), 1);
	check_chunk(held, 0, big, sizeof(big), CS);
	cr_assert_eq(atomic_load(&held->refs), 1);
	o2 = bc_cache_object(E.c, BUCKET, "big");
	cr_assert_eq(get_meta(o2, 2, &t, &m2, &cached, NULL), 0);
	cr_assert_eq(bc_cache_chunk(E.c, o2, m2.etag, 0, false, NULL, &ch),
	    BC_EAGAIN, "an invalidated chunk is still served");
	check_chunk(held, 0, big, sizeof(big), CS);
	bc_chunk_unref(held);
	held = NULL;

	/* released chunks are evicted: chunk 0 fetched, let go, pushed out */
	cr_assert_eq(get_chunk(o2, m2.etag, 0, &t, &ch), 0);
	bc_chunk_unref(ch);
	ev = bc_cache_evictions(E.c);
	for (uint32_t i = 3; i < 6; i++) {
		cr_assert_eq(get_chunk(o2, m2.etag, i, &t, &ch), 0);
		bc_chunk_unref(ch);
	}
	cr_assert_gt(bc_cache_evictions(E.c), ev);
	cr_assert_eq(bc_cache_chunk(E.c, o2, m2.etag, 0, false, NULL, &ch),
	    BC_EAGAIN, "the least recent idle chunk was not evicted");
	bc_objmeta_fini(&m2);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- reservations (issue 25): what a fill of unknown size reserves ------- */

#define RCS (1024 * 1024)   /* a chunk size far above the objects' */

/* Starts n cold first fills of objects "cold-0".."cold-(n-1)" (put at the
 * origin first, size bytes each) with the origin's gate closed, and waits
 * until all n are held there. */
static void
start_cold_fills(unsigned n, size_t size, const uint8_t *data,
    bc_object_t **o, tw_t *t)
{
	org_gate(true);
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		bc_objmeta_t meta;
		bool cached;

		snprintf(key, sizeof(key), "cold-%u", i);
		org_put(BUCKET, key, data, size, "\"etag-cold\"");
		o[i] = bc_cache_object(E.c, BUCKET, key);
		tw_init(&t[i]);
		cr_assert_eq(bc_cache_meta(E.c, o[i], 0, &t[i].w, &meta,
		    &cached), BC_EAGAIN);
	}
	cr_assert(org_wait_held(n), "the %u first fills did not start", n);
}

/*
 * 8 and 32 cold readers at once, a cache full of idle objects: a first
 * fill does not know its object's size, yet reserves about what first
 * chunks have been (not a chunk), so the fills evict about what they will
 * hold. Before, each reserved a whole chunk: 8 x 1 MiB took the whole
 * 4 MiB cache (the training epoch of issue 25 lost its hits that way).
 */
static void
cold_readers(unsigned n)
{
	env_opts_t eo = { .chunk_size = RCS, .mem_size = 4 * RCS };
	static uint8_t small[16 * 1024];
	bc_object_t *o[32];
	tw_t t[32];
	uint64_t ev0, held0;

	fill_pattern(small, sizeof(small), 9);
	env_start_opts(&eo);
	/* 180 idle objects of 16 KiB: ~3 MiB of the 4 */
	for (unsigned i = 0; i < 180; i++) {
		char key[32];
		bc_object_t *w;
		bc_objmeta_t meta;
		bc_chunk_t *first = NULL;
		bool cached;
		tw_t tw;

		snprintf(key, sizeof(key), "idle-%u", i);
		org_put(BUCKET, key, small, sizeof(small), "\"etag-idle\"");
		w = bc_cache_object(E.c, BUCKET, key);
		tw_init(&tw);
		cr_assert_eq(get_meta(w, 0, &tw, &meta, &cached, &first), 0);
		bc_chunk_unref(first);
		bc_objmeta_fini(&meta);
		tw_fini(&tw);
		bc_object_unref(E.c, w);
	}
	ev0 = bc_cache_evictions(E.c);
	held0 = bc_cache_bytes_held(E.c);
	start_cold_fills(n, sizeof(small), small, o, t);
	/* what n fills of unknown size hold now, reserved: under a chunk
	 * all together (each about a recent first chunk, 16 KiB) */
	cr_assert_lt(bc_cache_bytes_held(E.c), held0 + RCS,
	    "%u cold fills reserved %" PRIu64 " bytes", n,
	    bc_cache_bytes_held(E.c) - held0);
	cr_assert_leq(bc_cache_evictions(E.c) - ev0, n + 4,
	    "%u cold fills evicted %" PRIu64 " idle objects", n,
	    bc_cache_evictions(E.c) - ev0);
	org_gate(false);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(tw_wait(&t[i]), BC_WAIT_CHUNK);
		check_chunk(t[i].w.chunk, 0, small, sizeof(small), RCS);
		bc_chunk_unref(t[i].w.chunk);
		t[i].w.chunk = NULL;
	}
	cr_assert(org_wait_quiet());
	cr_assert_leq(bc_cache_bytes_held(E.c), 4 * RCS);
	cr_assert_leq(bc_cache_evictions(E.c) - ev0, n + 4,
	    "storing %u objects of 16 KiB evicted %" PRIu64, n,
	    bc_cache_evictions(E.c) - ev0);
	for (unsigned i = 0; i < n; i++) {
		tw_fini(&t[i]);
		bc_object_unref(E.c, o[i]);
	}
	env_stop();
}

LTest(cache, cold_fill_of_unknown_size_reserves_less_than_a_chunk_8)
{
	cold_readers(8);
}

LTest(cache, cold_fill_of_unknown_size_reserves_less_than_a_chunk_32)
{
	cold_readers(32);
}

/* An object bigger than the guess: its fill reserves the guess, then,
 * the headers giving the size, the rest; the chunk is whole and stored,
 * memory within its bound throughout. */
LTest(cache, first_fill_trues_its_reservation_up)
{
	env_opts_t eo = { .chunk_size = RCS, .mem_size = 4 * RCS };
	static uint8_t big[RCS + RCS / 2];
	bc_object_t *o[1];
	tw_t t[1];
	bc_chunk_t *ch = NULL;
	uint64_t held0;

	fill_pattern(big, sizeof(big), 4);
	env_start_opts(&eo);
	held0 = bc_cache_bytes_held(E.c);
	start_cold_fills(1, sizeof(big), big, o, t);
	cr_assert_lt(bc_cache_bytes_held(E.c) - held0, RCS / 8,
	    "reserved %" PRIu64 " before the headers",
	    bc_cache_bytes_held(E.c) - held0);
	org_gate(false);
	cr_assert_eq(tw_wait(&t[0]), BC_WAIT_CHUNK);
	check_chunk(t[0].w.chunk, 0, big, sizeof(big), RCS);
	cr_assert_geq(bc_cache_bytes_held(E.c) - held0, RCS,
	    "the chunk is charged whole");
	bc_chunk_unref(t[0].w.chunk);
	t[0].w.chunk = NULL;
	cr_assert(org_wait_quiet());
	cr_assert_eq(bc_cache_chunk(E.c, o[0], "\"etag-cold\"", 0, false, NULL,
	    &ch), 0, "the chunk was stored");
	bc_chunk_unref(ch);
	cr_assert_leq(bc_cache_bytes_held(E.c), 4 * RCS);
	tw_fini(&t[0]);
	bc_object_unref(E.c, o[0]);
	env_stop();
}

/* No room for the rest once the headers give the size (the memory held
 * by readers): the fill keeps nothing, its reader looks again, knows the
 * object now and is told to read around the cache (BC_ENOSPC); memory
 * stays within its bound; cache_fill_no_room counts it. */
LTest(cache, first_fill_without_room_for_its_chunk_keeps_nothing)
{
	env_opts_t eo = { .chunk_size = RCS, .mem_size = RCS + RCS / 2 };
	static uint8_t big[RCS];
	bc_object_t *held_o, *o[1];
	bc_objmeta_t meta;
	bc_chunk_t *held = NULL, *ch = NULL;
	uint64_t nr0 = st_get(BC_STAT_cache_fill_no_room);
	bool cached;
	tw_t th, t[1];

	fill_pattern(big, sizeof(big), 5);
	env_start_opts(&eo);
	org_put(BUCKET, "held", big, sizeof(big), "\"etag-held\"");
	held_o = bc_cache_object(E.c, BUCKET, "held");
	tw_init(&th);
	cr_assert_eq(get_meta(held_o, 0, &th, &meta, &cached, &held), 0);
	bc_objmeta_fini(&meta);
	cr_assert_not_null(held, "a reader holds a whole chunk");
	start_cold_fills(1, sizeof(big), big, o, t);
	org_gate(false);
	cr_assert_eq(tw_wait(&t[0]), BC_WAIT_RECHECK, "%s",
	    res_name(bc_waiter_result(E.c, &t[0].w)));
	bc_waiter_reset(&t[0].w);
	cr_assert_eq(st_get(BC_STAT_cache_fill_no_room) - nr0, 1);
	cr_assert_eq(bc_cache_meta(E.c, o[0], 0, &t[0].w, &meta, &cached), 0,
	    "the metadata came with the headers");
	cr_assert_eq(meta.size, sizeof(big));
	cr_assert_eq(bc_cache_chunk(E.c, o[0], meta.etag, 0, true, &t[0].w,
	    &ch), BC_ENOSPC, "read around the cache");
	bc_objmeta_fini(&meta);
	cr_assert(org_wait_quiet());
	cr_assert_leq(bc_cache_bytes_held(E.c), RCS + RCS / 2);
	check_chunk(held, 0, big, sizeof(big), RCS);
	bc_chunk_unref(held);
	tw_fini(&th);
	tw_fini(&t[0]);
	bc_object_unref(E.c, o[0]);
	bc_object_unref(E.c, held_o);
	env_stop();
}

/* bc_waiter_fini on a registered waiter unregisters it: the fill's end
 * wakes the others but never it. Both lists: a fill's and the
 * object's metadata waiters. */
LTest(cache, waiter_fini_unregisters)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t a, b, c, d;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&a);
	tw_init(&b);
	tw_init(&c);
	tw_init(&d);
	org_gate(true);
	/* a starts the first fill; b joins it; c waits for metadata */
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &a.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &b.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &c.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_not_null(a.w.list);
	bc_waiter_fini(E.c, &a.w);     /* the fill's first waiter */
	bc_waiter_fini(E.c, &c.w);     /* a metadata waiter */
	cr_assert_null(a.w.list);
	cr_assert_null(c.w.list);
	org_gate(false);
	cr_assert_eq(tw_wait(&b), BC_WAIT_CHUNK);
	/* waiters_end ran under the cache lock: it is over once we hold
	 * it (bc_waiter_result takes it) */
	(void)bc_waiter_result(E.c, &b.w);
	cr_assert_eq(tw_wakes(&a), 0, "a finished waiter was woken");
	cr_assert_eq(tw_wakes(&c), 0, "a finished waiter was woken");
	cr_assert_null(a.w.chunk);

	/* a chunk fill: d registers, is finished, the fill ends unseen */
	org_gate(true);
	bc_chunk_unref(b.w.chunk);
	b.w.chunk = NULL;
	bc_waiter_reset(&b.w);
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 1, true, &d.w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 1, true, &b.w, &ch),
	    BC_EAGAIN);
	bc_waiter_fini(E.c, &d.w);
	org_gate(false);
	cr_assert_eq(tw_wait(&b), BC_WAIT_CHUNK);
	(void)bc_waiter_result(E.c, &b.w);
	cr_assert_eq(tw_wakes(&d), 0);

	/* fini of a woken waiter that still holds its chunk drops it
	 * (LeakSanitizer checks) */
	pthread_cond_destroy(&a.cv);
	pthread_mutex_destroy(&a.mu);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&d.cv);
	pthread_mutex_destroy(&d.mu);
	tw_fini(&b);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Stopping the loop with a fill held upstream ends its waiters (FAILED,
 * canceled) and frees everything. */
LTest(cache, stop_with_fill_in_flight)
{
	bc_object_t *o;
	bc_objmeta_t meta;
	bool cached;
	tw_t t;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	env_stop_loop();
	cr_assert_eq(tw_wait(&t), BC_WAIT_FAILED);
	cr_assert_eq(t.w.err, BC_ECANCELED, "%s", bc_strerror(t.w.err));
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- streaming fills ---------------------------------------------------- */

/*
 * A fill's chunk exists from the upstream's headers on and fills in place;
 * waiters with partial_ok get it then (BC_WAIT_CHUNK, state FILLING) and
 * read on with bc_cache_chunk_wait(). These tests use a bigger chunk so a
 * body can be held at the origin after exactly SHOLD bytes: one progress
 * step (the cache wakes readers every 64 KiB of progress and at the end;
 * docs/cache.md, cache.c PROGRESS_WAKE), so a reader reaches the hold through
 * wakes alone and nothing arrives past it until the test releases the
 * body.
 */
#define SCS     (256 * 1024)            /* chunk size */
#define SHOLD   (64 * 1024)             /* where a held body stops */
#define SSIZE   (SCS + 200 * 1024)      /* chunk 0 whole, chunk 1 200 KiB */
#define SKEY    "stream"
#define SRANGE1 "bytes=262144-524287"   /* chunk 1's fill */
#define SLEN1   ((size_t)(SSIZE - SCS))

static uint8_t sobj[SSIZE];

/* The environment with chunk size SCS (eo may be NULL) and SKEY stored. */
static void
stream_env_start(env_opts_t *eo)
{
	env_opts_t o;

	if (eo == NULL) {
		memset(&o, 0, sizeof(o));
		eo = &o;
	}
	eo->chunk_size = SCS;
	fill_pattern(sobj, sizeof(sobj), 5);
	env_start_opts(eo);
	org_put(BUCKET, SKEY, sobj, sizeof(sobj), "\"etag-st\"");
}

/* A waiter that takes chunks while they fill. */
static void
stw_init(tw_t *t)
{
	tw_init(t);
	t->w.partial_ok = true;
}

/* SKEY's metadata, with chunk 0 fetched whole and released. */
static bc_object_t *
stream_warm(bc_objmeta_t *meta)
{
	bc_object_t *o = bc_cache_object(E.c, BUCKET, SKEY);
	bc_chunk_t *first = NULL;
	bool cached = true;
	tw_t t;

	cr_assert_not_null(o);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, meta, &cached, &first), 0);
	check_chunk(first, 0, sobj, sizeof(sobj), SCS);
	cr_assert_eq(bc_chunk_state(first), BC_CHUNK_COMPLETE);
	bc_chunk_unref(first);
	tw_fini(&t);
	return o;
}

/* The next wake of t must hand it a chunk; takes it (t is reset). */
static bc_chunk_t *
take_partial(tw_t *t)
{
	bc_wait_result_t r = tw_wait(t);
	bc_chunk_t *ch;

	cr_assert_eq(r, BC_WAIT_CHUNK, "%s", res_name(r));
	ch = t->w.chunk;
	cr_assert_not_null(ch);
	t->w.chunk = NULL;
	bc_waiter_reset(&t->w);
	return ch;
}

/*
 * Reads ch as http_object.c does: from have on until until bytes, with
 * bc_cache_chunk_wait() and t for more, checking every new byte against
 * want (the chunk's expected bytes). Every wake on the way must be
 * RECHECK and carry no chunk. Returns the bytes read (until), or the
 * negative code bc_cache_chunk_wait() ended with.
 */
static ssize_t
stream_read(tw_t *t, bc_chunk_t *ch, size_t have, size_t until,
    const uint8_t *want)
{
	for (int round = 0; round < 10000 && have < until; round++) {
		ssize_t got = bc_cache_chunk_wait(E.c, ch, have, &t->w);
		bc_wait_result_t r;

		if (got < 0)
			return got;
		if (got == 0) {
			cr_assert_not_null(t->w.list, "0, yet not registered");
			r = tw_wait(t);
			cr_assert_eq(r, BC_WAIT_RECHECK, "%s", res_name(r));
			cr_assert_null(t->w.chunk);
			bc_waiter_reset(&t->w);
			continue;
		}
		cr_assert_null(t->w.list, "bytes returned, yet registered");
		cr_assert_gt((size_t)got, have, "%zd bytes, had %zu", got,
		    have);
		cr_assert_leq((size_t)got, ch->len);
		cr_assert(memcmp(ch->data + have, want + have,
		    (size_t)got - have) == 0, "wrong bytes in [%zu, %zd)",
		    have, got);
		have = (size_t)got;
	}
	cr_assert_eq(have, until, "never got there");
	return (ssize_t)have;
}

/* Reads the held first part of ch (SHOLD bytes) through progress wakes
 * alone, while the origin holds the rest. */
static void
read_first_part(tw_t *t, bc_chunk_t *ch, const uint8_t *want)
{
	cr_assert_eq(stream_read(t, ch, 0, SHOLD, want), SHOLD);
	cr_assert(fake_origin_wait_body_held(E.fo, 1, GUARD_MS),
	    "the body is not held");
	cr_assert_eq(bc_chunk_avail(ch), SHOLD, "%zu bytes past a hold at %d",
	    bc_chunk_avail(ch), SHOLD);
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FILLING);
}

/* Waits with t until ch's fill is over; it must have completed. */
static void
wait_complete(tw_t *t, bc_chunk_t *ch)
{
	for (int round = 0; round < 100; round++) {
		ssize_t got = bc_cache_chunk_wait(E.c, ch, ch->len, &t->w);

		if (got == 0) {
			cr_assert_eq(tw_wait(t), BC_WAIT_RECHECK);
			bc_waiter_reset(&t->w);
			continue;
		}
		cr_assert_eq(got, (ssize_t)ch->len, "%zd", got);
		cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_COMPLETE);
		cr_assert_null(t->w.list);
		return;
	}
	cr_assert_fail("the fill never ended");
}

/*
 * A reader with partial_ok gets chunk 1 while its body is held at the
 * origin (FILLING, avail < len), reads the first part through progress
 * wakes, waits, and after the release reads every byte; the chunk ends
 * COMPLETE with the upstream's bytes. A waiter without partial_ok on the
 * same fill is woken once, at the end, with the same (complete) chunk,
 * which is stored: one upstream request in all.
 */
LTest(cache, stream_partial_reader_reads_while_filling)
{
	const uint8_t *want = sobj + SCS;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *hit = NULL;
	tw_t a, b;

	stream_env_start(NULL);
	o = stream_warm(&meta);
	stw_init(&a);
	tw_init(&b);
	fake_origin_hold_body(E.fo, SHOLD);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert_null(ch);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &b.w, &ch),
	    BC_EAGAIN, "a waiter without partial_ok took a filling chunk");
	cr_assert_null(ch);

	ch = take_partial(&a);
	cr_assert_eq(ch->index, 1);
	cr_assert_eq(ch->len, SLEN1);
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FILLING);
	cr_assert_lt(bc_chunk_avail(ch), SLEN1);
	read_first_part(&a, ch, want);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &a.w), 0,
	    "no more bytes, yet no wait");
	cr_assert_not_null(a.w.list);
	cr_assert_eq(bc_waiter_result(E.c, &a.w), BC_WAIT_PENDING);
	/* nothing moves while the body is held */
	cr_assert_eq(fake_origin_body_held(E.fo), 1);
	cr_assert_eq(tw_wakes(&b), 0, "a waiter without partial_ok woke "
	    "before its chunk was complete");
	cr_assert_eq(bc_waiter_result(E.c, &b.w), BC_WAIT_PENDING);
	cr_assert_null(b.w.chunk);
	cr_assert_eq(org_count("GET", SRANGE1), 1);

	fake_origin_release_body(E.fo);
	cr_assert_eq(tw_wait(&a), BC_WAIT_RECHECK);
	bc_waiter_reset(&a.w);
	cr_assert_eq(stream_read(&a, ch, SHOLD, SLEN1, want),
	    (ssize_t)SLEN1);

	/* the other waiter: once, at the end, the same complete chunk */
	cr_assert_eq(tw_wait(&b), BC_WAIT_CHUNK, "%s",
	    res_name(bc_waiter_result(E.c, &b.w)));
	cr_assert_eq(b.w.chunk, ch, "one fill, two chunk objects");
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_COMPLETE);
	cr_assert_eq(bc_chunk_avail(ch), SLEN1);
	check_chunk(ch, 1, sobj, sizeof(sobj), SCS);
	cr_assert_eq(tw_wakes(&b), 1);
	/* complete: no wait, every byte */
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SLEN1, &a.w),
	    (ssize_t)SLEN1);
	cr_assert_null(a.w.list);

	/* stored: a hit on the same chunk, no request */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &hit),
	    0, "the completed chunk was not stored");
	cr_assert_eq(hit, ch);
	bc_chunk_unref(hit);
	cr_assert_eq(org_count("GET", SRANGE1), 1);
	cr_assert_eq(org_count(NULL, NULL), 2);
	bc_chunk_unref(ch);
	tw_fini(&a);
	tw_fini(&b);     /* drops the chunk b still holds */
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/*
 * Requests joining a fill. Before its headers: a lookup without fetch
 * says BC_EINPROGRESS (and registers nothing), a partial_ok waiter
 * registers and gets the chunk with the first. After them: a partial_ok
 * request gets the same filling chunk at once (0, not registered), a
 * lookup without fetch still says BC_EINPROGRESS, a waiter without
 * partial_ok registers. One upstream request; afterwards a hit.
 */
LTest(cache, stream_join_fill_in_progress)
{
	const uint8_t *want = sobj + SCS;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *cha, *chc, *che = NULL;
	uint64_t fills0, coal0;
	tw_t a, c, d, e;

	stream_env_start(NULL);
	o = stream_warm(&meta);
	fills0 = st_get(BC_STAT_cache_fills);
	coal0 = st_get(BC_STAT_cache_coalesced_waits);
	stw_init(&a);
	stw_init(&c);
	tw_init(&d);
	stw_init(&e);
	org_gate(true);          /* no headers yet */
	fake_origin_hold_body(E.fo, SHOLD);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EINPROGRESS, "a chunk being fetched is not a plain miss");
	cr_assert_null(ch);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, &c.w, &ch),
	    BC_EINPROGRESS);
	cr_assert_null(c.w.list, "a lookup without fetch registered");
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 2, false, NULL, &ch),
	    BC_EAGAIN, "no fetch of chunk 2 runs");
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &c.w, &ch),
	    BC_EAGAIN, "no chunk before the headers");
	cr_assert_null(ch);
	org_gate(false);
	cha = take_partial(&a);
	chc = take_partial(&c);
	cr_assert_eq(chc, cha);

	/* the headers are in, the body is held */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &e.w, &che), 0,
	    "a partial_ok request did not join the streaming fill");
	cr_assert_eq(che, cha, "joined another chunk object");
	cr_assert_null(e.w.list);
	cr_assert_eq(tw_wakes(&e), 0);
	cr_assert_eq(bc_chunk_state(che), BC_CHUNK_FILLING);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EINPROGRESS);
	cr_assert_null(ch);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &d.w, &ch),
	    BC_EAGAIN, "a waiter without partial_ok took a filling chunk");
	cr_assert_null(ch);
	cr_assert_eq(org_count("GET", SRANGE1), 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0 + 1);
	cr_assert_eq(st_get(BC_STAT_cache_coalesced_waits) - coal0, 3,
	    "coalesced waits %" PRIu64 " (c, e and d joined a's fill)",
	    st_get(BC_STAT_cache_coalesced_waits) - coal0);

	read_first_part(&e, che, want);
	fake_origin_release_body(E.fo);
	cr_assert_eq(stream_read(&e, che, SHOLD, SLEN1, want),
	    (ssize_t)SLEN1);
	cr_assert_eq(tw_wait(&d), BC_WAIT_CHUNK);
	cr_assert_eq(d.w.chunk, cha);
	cr_assert_eq(bc_chunk_state(cha), BC_CHUNK_COMPLETE);
	check_chunk(cha, 1, sobj, sizeof(sobj), SCS);
	cr_assert_eq(tw_wakes(&a), 1);
	cr_assert_eq(tw_wakes(&c), 1);

	/* over: a hit, the same chunk */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    0);
	cr_assert_eq(ch, cha);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count("GET", SRANGE1), 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0 + 1);
	bc_chunk_unref(cha);
	bc_chunk_unref(chc);
	bc_chunk_unref(che);
	tw_fini(&a);
	tw_fini(&c);
	tw_fini(&d);
	tw_fini(&e);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/*
 * A body cut off midway (after the held first part and some more): the
 * partial reader gets every byte that came, then BC_EIO; the chunk ends
 * FAILED; a waiter without partial_ok ends FAILED; the fetch is not
 * retried (retries 2: bytes were handed out); nothing is stored: the next
 * lookup is a miss and fetches again. The failed chunk stays readable
 * for its holder.
 */
LTest(cache, stream_cut_body_fails_reader_and_stores_nothing)
{
	env_opts_t eo = { .retries = 2 };
	const uint8_t *want = sobj + SCS;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *ch2 = NULL;
	uint64_t failures0;
	size_t avail;
	tw_t a, b;

	stream_env_start(&eo);
	o = stream_warm(&meta);
	failures0 = st_get(BC_STAT_cache_fill_failures);
	stw_init(&a);
	tw_init(&b);
	fake_origin_hold_body(E.fo, SHOLD);
	fake_origin_cut(E.fo, SHOLD + 30000, 0);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &b.w, &ch),
	    BC_EAGAIN);
	ch = take_partial(&a);
	read_first_part(&a, ch, want);
	fake_origin_release_body(E.fo);
	cr_assert_eq(stream_read(&a, ch, SHOLD, SLEN1, want), BC_EIO,
	    "a reader of a cut-off fill was not told");
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FAILED);
	avail = bc_chunk_avail(ch);
	cr_assert_geq(avail, SHOLD);
	cr_assert_leq(avail, SHOLD + 30000);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, avail, &a.w), BC_EIO);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, 0, &a.w), (ssize_t)avail,
	    "the bytes that came stay readable");
	cr_assert_null(a.w.list);
	cr_assert(memcmp(ch->data, want, avail) == 0);

	cr_assert_eq(tw_wait(&b), BC_WAIT_FAILED, "%s",
	    res_name(bc_waiter_result(E.c, &b.w)));
	cr_assert_eq(b.w.err, BC_EIO, "%s", bc_strerror(b.w.err));
	cr_assert_null(b.w.chunk);
	cr_assert_eq(st_get(BC_STAT_cache_fill_failures), failures0 + 1);
	cr_assert_eq(org_count("GET", SRANGE1), 1,
	    "a fill that handed out bytes was retried");

	/* not stored, no fetch running: a plain miss */
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch2),
	    BC_EAGAIN, "a cut-off chunk was stored");
	cr_assert_null(ch2);
	fake_origin_hold_body(E.fo, 0);
	fake_origin_cut(E.fo, 0, 0);
	bc_waiter_reset(&b.w);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &b, &ch2), 0);
	cr_assert_neq(ch2, ch);
	check_chunk(ch2, 1, sobj, sizeof(sobj), SCS);
	cr_assert_eq(bc_chunk_state(ch2), BC_CHUNK_COMPLETE);
	cr_assert_eq(org_count("GET", SRANGE1), 2);
	bc_chunk_unref(ch2);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch2),
	    0);
	cr_assert_eq(bc_chunk_state(ch2), BC_CHUNK_COMPLETE);
	bc_chunk_unref(ch2);
	/* the failed one is still ours, intact */
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FAILED);
	cr_assert(memcmp(ch->data, want, avail) == 0);
	bc_chunk_unref(ch);
	tw_fini(&a);
	tw_fini(&b);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/*
 * The first fill of a cold object with a partial_ok metadata waiter: the
 * headers bring the metadata and, in the same wake, the filling chunk 0
 * (one wake, CHUNK). While it fills, the metadata is cached and a lookup
 * without fetch says BC_EINPROGRESS; once complete it is stored (a hit)
 * with only the reader ever holding it meanwhile. One request in all.
 */
LTest(cache, stream_first_fill_completes_and_is_stored)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch, *hit = NULL;
	bool cached = true;
	tw_t a, m;

	stream_env_start(NULL);
	o = bc_cache_object(E.c, BUCKET, SKEY);
	stw_init(&a);
	tw_init(&m);
	fake_origin_hold_body(E.fo, SHOLD);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &a.w, &meta, &cached),
	    BC_EAGAIN);
	ch = take_partial(&a);
	cr_assert_eq(tw_wakes(&a), 1);
	cr_assert_eq(ch->index, 0);
	cr_assert_eq(ch->len, SCS);
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FILLING);

	cr_assert_eq(bc_cache_meta(E.c, o, 0, &m.w, &meta, &cached), 0,
	    "the headers are in, yet no metadata");
	cr_assert(cached);
	cr_assert_eq(meta.size, SSIZE);
	cr_assert_str_eq(meta.etag, "\"etag-st\"");
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &hit),
	    BC_EINPROGRESS);
	cr_assert_null(hit);

	read_first_part(&a, ch, sobj);
	fake_origin_release_body(E.fo);
	cr_assert_eq(stream_read(&a, ch, SHOLD, SCS, sobj), SCS);
	wait_complete(&a, ch);
	check_chunk(ch, 0, sobj, sizeof(sobj), SCS);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &hit),
	    0, "a complete chunk was not stored");
	cr_assert_eq(hit, ch);
	bc_chunk_unref(hit);
	cr_assert_eq(org_count(NULL, NULL), 1);
	cr_assert_eq(org_count("GET", "bytes=0-262143"), 1);
	bc_chunk_unref(ch);
	bc_objmeta_fini(&meta);
	tw_fini(&a);
	tw_fini(&m);
	bc_object_unref(E.c, o);
	env_stop();
}

/*
 * A small chunk (no progress step inside it) fetched by a partial_ok
 * waiter alone: whatever it sees at first, a reader waiting on it is
 * woken at the end, reads every byte, and the chunk is stored.
 */
LTest(cache, stream_small_chunk_partial_only_is_stored)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *hit = NULL;
	tw_t a;

	env_start();
	o = warm_object(&meta);
	stw_init(&a);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 2, true, &a.w, &ch),
	    BC_EAGAIN);
	ch = take_partial(&a);
	cr_assert_eq(ch->index, 2);
	cr_assert_eq(ch->len, sizeof(obj_a) - 2 * CS);
	cr_assert_eq(stream_read(&a, ch, 0, ch->len, obj_a + 2 * CS),
	    (ssize_t)ch->len);
	wait_complete(&a, ch);
	check_chunk(ch, 2, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 2, false, NULL, &hit),
	    0, "a complete chunk was not stored");
	cr_assert_eq(hit, ch);
	bc_chunk_unref(hit);
	cr_assert_eq(org_count("GET", "bytes=2048-3071"), 1);
	bc_chunk_unref(ch);
	tw_fini(&a);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/*
 * bc_waiter_fini on waiters registered by bc_cache_chunk_wait (at the
 * head, in the middle and at the tail of the chunk's list) unregisters
 * them: the fill's progress and end wake the others but never them. Two
 * of them are freed before the fill goes on (ASan sees any touch). A
 * partial_ok waiter woken with a chunk it never took: its fini drops the
 * reference (LeakSanitizer).
 */
LTest(cache, stream_waiter_fini_unregisters_chunk_wait)
{
	const uint8_t *want = sobj + SCS;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	tw_t a, k, y, q;
	tw_t *x = malloc(sizeof(*x)), *z = malloc(sizeof(*z));

	cr_assert(x != NULL && z != NULL);
	stream_env_start(NULL);
	o = stream_warm(&meta);
	stw_init(&a);
	stw_init(&q);
	stw_init(&k);
	stw_init(&y);
	stw_init(x);
	stw_init(z);
	org_gate(true);
	fake_origin_hold_body(E.fo, SHOLD);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert(org_wait_held(1));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &q.w, &ch),
	    BC_EAGAIN);
	org_gate(false);
	ch = take_partial(&a);
	read_first_part(&a, ch, want);
	cr_assert_eq(tw_wait(&q), BC_WAIT_CHUNK);
	cr_assert_eq(q.w.chunk, ch);     /* q keeps it: its fini drops it */

	/* registered in order x, k, y, z: the list is z, y, k, x */
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &x->w), 0);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &k.w), 0);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &y.w), 0);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &z->w), 0);
	cr_assert(x->w.list != NULL && k.w.list != NULL && y.w.list != NULL &&
	    z->w.list != NULL);
	bc_waiter_fini(E.c, &z->w);       /* head */
	bc_waiter_fini(E.c, &k.w);        /* middle */
	bc_waiter_fini(E.c, &x->w);       /* tail */
	cr_assert_null(z->w.list);
	cr_assert_null(k.w.list);
	cr_assert_null(x->w.list);
	cr_assert_not_null(y.w.list, "a neighbour was unregistered too");
	cr_assert_eq(tw_wakes(x) + tw_wakes(&k) + tw_wakes(z), 0);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	pthread_cond_destroy(&z->cv);
	pthread_mutex_destroy(&z->mu);
	memset(x, 0xa5, sizeof(*x));
	memset(z, 0xa5, sizeof(*z));
	free(x);
	free(z);

	fake_origin_release_body(E.fo);
	cr_assert_eq(tw_wait(&y), BC_WAIT_RECHECK, "a registered neighbour "
	    "was not woken");
	cr_assert_eq(stream_read(&a, ch, SHOLD, SLEN1, want),
	    (ssize_t)SLEN1);
	wait_complete(&a, ch);
	/* the fill is over (its last wake ran under the cache lock) */
	cr_assert_eq(tw_wakes(&k), 0, "an unregistered waiter was woken");
	cr_assert_eq(tw_wakes(&y), 1);
	cr_assert_null(y.w.list);
	pthread_cond_destroy(&k.cv);
	pthread_mutex_destroy(&k.mu);
	bc_chunk_unref(ch);
	tw_fini(&a);
	tw_fini(&y);
	tw_fini(&q);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Stopping the loop while a streaming fill's body is held: the waiting
 * reader is woken and told BC_EIO, a waiter without partial_ok ends
 * FAILED (canceled), nothing is stored. */
LTest(cache, stream_stop_while_filling)
{
	const uint8_t *want = sobj + SCS;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL, *hit = NULL;
	tw_t a, b;

	stream_env_start(NULL);
	o = stream_warm(&meta);
	stw_init(&a);
	tw_init(&b);
	fake_origin_hold_body(E.fo, SHOLD);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &b.w, &ch),
	    BC_EAGAIN);
	ch = take_partial(&a);
	read_first_part(&a, ch, want);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &a.w), 0);
	env_stop_loop();
	cr_assert_eq(tw_wait(&a), BC_WAIT_RECHECK);
	bc_waiter_reset(&a.w);
	cr_assert_eq(bc_cache_chunk_wait(E.c, ch, SHOLD, &a.w), BC_EIO);
	cr_assert_null(a.w.list);
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_FAILED);
	cr_assert_eq(tw_wait(&b), BC_WAIT_FAILED);
	cr_assert_eq(b.w.err, BC_ECANCELED, "%s", bc_strerror(b.w.err));
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &hit),
	    BC_EAGAIN, "a canceled fill's chunk was stored");
	cr_assert_null(hit);
	bc_chunk_unref(ch);
	tw_fini(&a);
	tw_fini(&b);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A partial_ok waiter on a fill whose answer is an error gets the error,
 * never a chunk. */
LTest(cache, stream_partial_waiter_gets_upstream_error)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	tw_t a;

	env_start();
	o = warm_object(&meta);
	stw_init(&a);
	org_fail(1, 503);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, true, &a.w, &ch),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&a), BC_WAIT_UPSTREAM, "%s",
	    res_name(bc_waiter_result(E.c, &a.w)));
	cr_assert_eq(a.w.up_status, 503);
	cr_assert_null(a.w.chunk);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 1, false, NULL, &ch),
	    BC_EAGAIN);
	tw_fini(&a);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An upstream that ignores Range answers a first fill for chunk 1 of a
 * 700-byte object with the whole object: that is chunk 0, so a partial_ok
 * waiter for chunk 1 must not be handed it as it fills; it is told to
 * look again, and chunk 0 is stored. */
LTest(cache, stream_ignored_range_partial_waiter_rechecks)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t a;

	env_start();
	org_put(BUCKET, "small", obj_b, 700, "\"etag-s\"");
	fake_origin_set(E.fo, FAKE_IGNORE_RANGE, true);
	o = bc_cache_object(E.c, BUCKET, "small");
	stw_init(&a);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &a.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(tw_wait(&a), BC_WAIT_RECHECK, "%s",
	    res_name(bc_waiter_result(E.c, &a.w)));
	cr_assert_null(a.w.chunk, "chunk %u handed out for chunk 1",
	    a.w.chunk != NULL ? a.w.chunk->index : 0);
	bc_waiter_reset(&a.w);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &a.w, &meta, &cached), 0);
	cr_assert_eq(meta.size, 700);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch),
	    0);
	check_chunk(ch, 0, obj_b, 700, CS);
	cr_assert_eq(bc_chunk_state(ch), BC_CHUNK_COMPLETE);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count(NULL, NULL), 1);
	bc_objmeta_fini(&meta);
	tw_fini(&a);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- meta-stale: stale-while-revalidate ----------------------------------- */

/* Whether bc_cache_meta answers o's metadata as fresh (not stale). */
static bool
is_fresh(bc_object_t *o, tw_t *t)
{
	uint64_t stale0 = st_get(BC_STAT_cache_stale_served);
	bc_objmeta_t m;
	bool cached = false;
	int rv = bc_cache_meta(E.c, o, BC_CACHE_META_ONLY, &t->w, &m,
	    &cached);

	cr_assert_eq(rv, 0, "stale metadata is never waited for");
	bc_objmeta_fini(&m);
	return st_get(BC_STAT_cache_stale_served) == stale0;
}

/* Past meta-ttl but within meta-stale, the metadata is served at once and
 * one HEAD If-None-Match goes out in the background (however many ask);
 * its 304 makes the metadata fresh again. */
LTest(cache, meta_stale_serves_and_revalidates_in_background)
{
	env_opts_t eo = { .meta_ttl = TTL_MS, .meta_stale = 60000 };
	uint64_t stale0, reval0;
	bc_objmeta_t meta;
	bc_object_t *o;
	bool cached = false;
	tw_t t;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	prime(o, &t);
	sleep_ms(TTL_MS + 50);

	stale0 = st_get(BC_STAT_cache_stale_served);
	reval0 = st_get(BC_STAT_cache_revalidations);
	org_gate(true);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0,
		    "stale metadata is served without waiting");
		cr_assert(cached);
		cr_assert_str_eq(meta.etag, "\"etag-a\"");
		bc_objmeta_fini(&meta);
	}
	cr_assert_eq(st_get(BC_STAT_cache_stale_served), stale0 + 3);
	cr_assert(org_wait_held(1));
	{
		fake_req_t q = org_last();

		cr_assert_str_eq(q.method, "HEAD");
		cr_assert_str_eq(q.if_none_match, "\"etag-a\"");
	}
	cr_assert(!is_fresh(o, &t), "fresh before the revalidation's answer");
	org_gate(false);
	cr_assert(org_wait_quiet(), "the revalidation never ended");
	cr_assert(is_fresh(o, &t), "the 304 did not make it fresh");
	cr_assert_eq(st_get(BC_STAT_cache_revalidations), reval0 + 1);
	cr_assert_eq(org_count("HEAD", NULL), 1);
	cr_assert_eq(org_count("GET", NULL), 1, "the chunk stayed");
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* The background revalidation finds a new version: the stale answer went
 * out, then the object is dropped with its chunks and the next lookup
 * learns the new version. */
LTest(cache, meta_stale_background_sees_change)
{
	env_opts_t eo = { .meta_ttl = TTL_MS, .meta_stale = 60000 };
	bc_objmeta_t meta;
	bc_object_t *o, *o2 = NULL;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	prime(o, &t);
	org_put(BUCKET, KEY, obj_b, 2000, "\"etag-b\"");
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0);
	cr_assert_str_eq(meta.etag, "\"etag-a\"", "the stale answer");
	bc_objmeta_fini(&meta);
	cr_assert(org_wait_quiet(), "the revalidation never ended");
	o2 = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_neq(o2, o, "the changed object was not dropped");
	cr_assert_eq(bc_cache_chunk(E.c, o, "\"etag-a\"", 0, false, NULL, &ch),
	    BC_ECANCELED);
	expect_version_b(o2, &t);
	tw_fini(&t);
	bc_object_unref(E.c, o2);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Stale metadata whose request needs an uncached chunk sends no HEAD: the
 * chunk's If-Match GET is the revalidation, and its accept makes the
 * metadata fresh in the same round trip. */
LTest(cache, meta_stale_chunk_fetch_revalidates)
{
	env_opts_t eo = { .meta_ttl = TTL_MS, .meta_stale = 60000 };
	uint64_t stale0;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	prime(o, &t);
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(bc_cache_meta(E.c, o, 1, &t.w, &meta, &cached), 0);
	bc_objmeta_fini(&meta);
	cr_assert_eq(get_chunk(o, "\"etag-a\"", 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, 3000, CS);
	bc_chunk_unref(ch);
	{
		fake_req_t q = org_last();

		cr_assert_str_eq(q.method, "GET");
		cr_assert_str_eq(q.if_match, "\"etag-a\"");
	}
	stale0 = st_get(BC_STAT_cache_stale_served);
	bc_waiter_reset(&t.w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0);
	bc_objmeta_fini(&meta);
	cr_assert_eq(st_get(BC_STAT_cache_stale_served), stale0,
	    "fresh again after the chunk fetch");
	cr_assert_eq(org_count("HEAD", NULL), 0);
	cr_assert_eq(org_count("GET", NULL), 2);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Past meta-ttl + meta-stale the request waits for the revalidation, as
 * with meta-stale 0; a failing upstream then fails it (no stale answer
 * past the window), while inside the window it was still served. */
LTest(cache, meta_stale_window_ends)
{
	env_opts_t eo = { .meta_ttl = TTL_MS, .meta_stale = TTL_MS,
	    .retries = 0 };
	bc_objmeta_t meta;
	bc_object_t *o;
	bool cached;
	tw_t t;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	prime(o, &t);
	org_fail(100, 503);
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0,
	    "served stale while the upstream fails");
	bc_objmeta_fini(&meta);
	sleep_ms(TTL_MS + 50);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
	    BC_WAIT_UPSTREAM, "past the window the failure shows");
	cr_assert_eq(t.w.up_status, 503);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- unsigned requests (the upstream decides) ---------------------------- */

/* An unsigned request's fills go unsigned, and what they read is then
 * served to later unsigned requests (and signed ones) from the cache. */
LTest(cache, unsigned_fill_serves_unsigned)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *first = NULL, *ch = NULL;
	bool cached = true;
	tw_t t, s;
	unsigned n;

	env_start();
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	tw_init(&s);
	t.w.anon = true;
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	cr_assert_eq(org_count_auth(false), 1);
	cr_assert_eq(org_count_auth(true), 1,
	    "the unsigned request's fill went signed");
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &ch), 0);
	check_chunk(ch, 1, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count_auth(true), 2,
	    "the chunk fill for an unsigned request went signed");
	bc_objmeta_fini(&meta);
	/* served from the cache: to unsigned and to signed requests */
	n = org_count_auth(false);
	bc_waiter_reset(&t.w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0);
	cr_assert(cached);
	bc_objmeta_fini(&meta);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &s.w, &meta, &cached), 0);
	bc_objmeta_fini(&meta);
	cr_assert_eq(org_count_auth(false), n, "a cached read went "
	    "upstream");
	tw_fini(&s);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A signed fill does not make an object readable by unsigned requests:
 * each one makes an unsigned check (a one-byte If-Match GET), and the
 * upstream's refusal is handed on as it came; signed requests are still
 * served from the cache. */
LTest(cache, signed_fill_is_not_public)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bool cached;
	tw_t t, s;
	fake_req_t q;
	unsigned n;

	env_start();
	fake_origin_set(E.fo, FAKE_DENY_UNSIGNED, true);
	o = warm_object(&meta);
	bc_objmeta_fini(&meta);
	tw_init(&t);
	tw_init(&s);
	t.w.anon = true;
	for (int round = 0; round < 2; round++) {
		n = org_count_auth(true);
		bc_waiter_reset(&t.w);
		cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
		    BC_WAIT_UPSTREAM, "round %d: an unsigned request was "
		    "served a signed fill's copy", round);
		cr_assert_eq(t.w.up_status, 403);
		cr_assert_not_null(strstr(bc_buf_str(&t.w.up_body),
		    "<Code>AccessDenied</Code>"), "the upstream's body");
		cr_assert_eq(org_count_auth(true), n + 1,
		    "round %d: one unsigned check, no refusal cached", round);
		q = org_last();
		cr_assert_str_eq(q.method, "GET");
		cr_assert_str_eq(q.range, "bytes=0-0");
		cr_assert_str_eq(q.if_match, "\"etag-a\"");
		cr_assert(q.anon);
	}
	n = org_count_auth(false);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &s.w, &meta, &cached), 0,
	    "the signed request is still served");
	cr_assert(cached);
	bc_objmeta_fini(&meta);
	cr_assert_eq(org_count_auth(false), n);
	tw_fini(&s);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An object a signed request cached is served to unsigned ones after one
 * unsigned check the upstream allowed, and from then on without one. */
LTest(cache, public_check_marks_the_object)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bool cached;
	tw_t t;
	unsigned n;

	env_start();
	o = warm_object(&meta);
	bc_objmeta_fini(&meta);
	tw_init(&t);
	t.w.anon = true;
	n = org_count_auth(false);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
	bc_objmeta_fini(&meta);
	cr_assert_eq(org_count_auth(false), n + 1);
	cr_assert_eq(org_count_auth(true), 1, "the check was signed");
	cr_assert_str_eq(org_last().range, "bytes=0-0");
	bc_waiter_reset(&t.w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0,
	    "checked: served at once");
	cr_assert(cached);
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch),
	    0, "chunk 0 is a hit");
	bc_chunk_unref(ch);
	bc_objmeta_fini(&meta);
	cr_assert_eq(org_count_auth(false), n + 1);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* One fill, two kinds of waiters: an unsigned first fill refused by the
 * upstream hands the refusal to the unsigned request only; the signed one
 * that joined it looks again and fills signed. And the reverse: a signed
 * fill's upstream error is not an unsigned request's answer. */
LTest(cache, refusals_go_to_their_own_kind)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *first = NULL;
	bool cached;
	tw_t a, s;

	env_start();
	fake_origin_set(E.fo, FAKE_DENY_UNSIGNED, true);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&a);
	tw_init(&s);
	a.w.anon = true;
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &a.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &s.w, &meta, &cached),
	    BC_EAGAIN, "the signed request joins the unsigned fill");
	cr_assert(org_wait_held(1));
	org_gate(false);
	cr_assert_eq(tw_wait(&a), BC_WAIT_UPSTREAM);
	cr_assert_eq(a.w.up_status, 403);
	cr_assert_eq(tw_wait(&s), BC_WAIT_RECHECK, "the signed request got "
	    "the unsigned one's refusal");
	bc_waiter_reset(&s.w);
	cr_assert_eq(get_meta(o, 0, &s, &meta, &cached, &first), 0);
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	cr_assert(!org_last().anon);
	bc_object_unref(E.c, o);

	/* the reverse, on a fresh object: the signed fill fails (404) */
	fake_origin_set(E.fo, FAKE_DENY_UNSIGNED, false);
	bc_cache_invalidate(E.c, BUCKET, KEY, NULL);
	o = bc_cache_object(E.c, BUCKET, KEY);
	bc_waiter_reset(&a.w);
	bc_waiter_reset(&s.w);
	org_fail(1, 404);
	org_gate(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &s.w, &meta, &cached),
	    BC_EAGAIN);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &a.w, &meta, &cached),
	    BC_EAGAIN, "the unsigned request waits on the signed fill");
	cr_assert(org_wait_held(1));
	org_gate(false);
	cr_assert_eq(tw_wait(&s), BC_WAIT_UPSTREAM);
	cr_assert_eq(s.w.up_status, 404);
	cr_assert_eq(tw_wait(&a), BC_WAIT_RECHECK);
	bc_waiter_reset(&a.w);
	first = NULL;
	cr_assert_eq(get_meta(o, 0, &a, &meta, &cached, &first), 0,
	    "the unsigned request fills for itself");
	check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(first);
	bc_objmeta_fini(&meta);
	cr_assert(org_last().anon);
	tw_fini(&s);
	tw_fini(&a);
	bc_object_unref(E.c, o);
	env_stop();
}

/* The unsigned-fetch mark ages like the metadata: past meta-ttl it is
 * served and rechecked in the background (unsigned); once the upstream
 * refuses that recheck, unsigned requests wait for a check and get the
 * refusal, while signed ones are still served. */
LTest(cache, public_mark_ages)
{
	env_opts_t eo = { .meta_ttl = TTL_MS, .meta_stale = 60000 };
	bc_objmeta_t meta;
	bc_object_t *o;
	bool cached;
	tw_t t, s;
	unsigned n;

	env_start_opts(&eo);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	tw_init(&s);
	t.w.anon = true;
	prime(o, &t);
	fake_origin_set(E.fo, FAKE_DENY_UNSIGNED, true);
	sleep_ms(TTL_MS + 50);
	n = org_count_auth(true);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0,
	    "a stale mark is served");
	bc_objmeta_fini(&meta);
	/* the background recheck: unsigned, refused */
	cr_assert_eq(org_count_auth(true), n + 1);
	cr_assert(org_last().anon);
	cr_assert(org_wait_quiet(), "the recheck never ended");
	bc_waiter_reset(&t.w);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
	    BC_WAIT_UPSTREAM, "the refused mark still served");
	cr_assert_eq(t.w.up_status, 403);
	cr_assert_eq(get_meta(o, 0, &s, &meta, &cached, NULL), 0,
	    "a signed request is still served");
	bc_objmeta_fini(&meta);
	tw_fini(&s);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- passthrough reads (pull mode) ------------------------------------ */

/*
 * Reads x to its end as http_object.c reads a passthrough: headers, then
 * the body into buf (cap bytes, more than it can hold), waiting with t
 * whenever the exchange says BC_EAGAIN. Returns the body's length with
 * *status and *h, or the negative code the exchange ended with.
 */
static ssize_t
pull_all(bc_exchange_t *x, tw_t *t, int *status, const bc_kvlist_t **h,
    uint8_t *buf, size_t cap)
{
	size_t have = 0;
	int rv = BC_EAGAIN;

	for (int i = 0; i < 10000 && rv == BC_EAGAIN; i++) {
		rv = bc_exchange_headers(x, status, h);
		if (rv == BC_EAGAIN)
			cr_assert(tw_wait_nocheck(t), "never woken for headers");
	}
	if (rv < 0)
		return rv;
	for (int i = 0; i < 100000; i++) {
		ssize_t n = bc_exchange_read(x, buf + have, cap - have);

		if (n == BC_EAGAIN) {
			cr_assert(tw_wait_nocheck(t), "never woken for more");
			continue;
		}
		if (n < 0)
			return n;
		if (n == 0)
			return (ssize_t)have;
		have += (size_t)n;
		cr_assert_lt(have, cap, "more body than expected");
	}
	cr_assert_fail("the body never ended");
	return BC_EIO;
}

/* A passthrough read is a ranged GET with If-Match, in pull mode, kept
 * nowhere; for an unsigned request it is sent unsigned. */
LTest(cache, unsigned_passthrough)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_exchange_t *x;
	bc_chunk_t *ch = NULL;
	const bc_kvlist_t *h;
	uint8_t buf[64];
	uint64_t pt0 = st_get(BC_STAT_cache_passthrough);
	uint64_t fills0;
	fake_req_t q;
	int status = 0;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	fills0 = st_get(BC_STAT_cache_fills);
	x = bc_cache_passthrough(E.c, o, meta.etag, 10, 20, true, tw_wake, &t);
	cr_assert_not_null(x);
	cr_assert_eq(pull_all(x, &t, &status, &h, buf, sizeof(buf)), 11);
	cr_assert_eq(status, 206);
	cr_assert_str_eq(bc_kv_get(h, "Content-Range"), "bytes 10-20/3000");
	cr_assert(memcmp(buf, obj_a + 10, 11) == 0, "wrong bytes");
	cr_assert_eq(bc_exchange_error(x), 0);
	bc_exchange_release(x);
	q = org_last();
	cr_assert_str_eq(q.method, "GET");
	cr_assert_str_eq(q.range, "bytes=10-20");
	cr_assert_str_eq(q.if_match, "\"etag-a\"");
	cr_assert(q.anon, "an unsigned request's passthrough went signed");
	cr_assert(!q.push, "a passthrough is read in pull mode");
	cr_assert_eq(st_get(BC_STAT_cache_passthrough), pt0 + 1);
	cr_assert_eq(st_get(BC_STAT_cache_fills), fills0, "it is no fill");
	cr_assert_eq(bc_cache_chunk(E.c, o, meta.etag, 0, false, NULL, &ch), 0,
	    "chunk 0 is still a hit");
	bc_chunk_unref(ch);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A passthrough of a version the origin no longer has: its If-Match gets
 * S3's 412, passed to the reader as it came (signed this time). */
LTest(cache, passthrough_of_a_replaced_version_gets_412)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_exchange_t *x;
	const bc_kvlist_t *h;
	uint8_t buf[1024];
	int status = 0;
	ssize_t n;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	org_put(BUCKET, KEY, obj_b, sizeof(obj_b), "\"etag-b\"");
	x = bc_cache_passthrough(E.c, o, meta.etag, 0, 2999, false, tw_wake,
	    &t);
	cr_assert_not_null(x);
	n = pull_all(x, &t, &status, &h, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_eq(status, 412);
	cr_assert_not_null(strstr((const char *)buf,
	    "<Code>PreconditionFailed</Code>"), "%s", buf);
	cr_assert(!org_last().anon);
	bc_exchange_release(x);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A reader that gives up a passthrough mid-body (its client went away):
 * after bc_exchange_release no wake fires, and the exchange is gone. */
LTest(cache, passthrough_released_mid_body)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_exchange_t *x;
	const bc_kvlist_t *h;
	uint8_t buf[3000];
	int status = 0;
	ssize_t n;
	unsigned w;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	fake_origin_piece(E.fo, 100);
	fake_origin_hold_body(E.fo, 1000);
	x = bc_cache_passthrough(E.c, o, meta.etag, 0, 2999, false, tw_wake,
	    &t);
	cr_assert_not_null(x);
	while (bc_exchange_headers(x, &status, &h) == BC_EAGAIN)
		cr_assert(tw_wait_nocheck(&t));
	cr_assert_eq(status, 206);
	cr_assert(fake_origin_wait_body_held(E.fo, 1, GUARD_MS));
	n = bc_exchange_read(x, buf, sizeof(buf));
	cr_assert_eq(n, 1000, "%zd", n);
	cr_assert(memcmp(buf, obj_a, 1000) == 0);
	cr_assert_eq(bc_exchange_read(x, buf, sizeof(buf)), BC_EAGAIN);
	bc_exchange_release(x);
	w = tw_wakes(&t);
	fake_origin_release_body(E.fo);
	cr_assert(org_wait_quiet());
	cr_assert_eq(fake_origin_exchanges(E.fo), 0);
	cr_assert_eq(tw_wakes(&t), w, "woken after the release");
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* ---- object metadata in the lower tiers --------------------------------- */

/* An asynchronous lower tier (tier_async.h: it keeps metadata) appended
 * to E's chain; its controls in *ctl. */
static bc_tier_t *
lower_add(bc_tier_async_ctl_t **ctl)
{
	bc_tier_opts_t to = { .capacity = 1024 * 1024, .name = "lower",
	    .loop = E.loop };
	bc_tier_t *lower;

	cr_assert_eq(bc_tier_async.open(&to, &lower), 0);
	cr_assert_eq(bc_tier_chain_add(bc_cache_tiers(E.c), lower), 0);
	*ctl = bc_tier_async_ctl(lower);
	return lower;
}

static uint64_t
wall_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Puts into lower, as a restarted gateway's disk would hold it, the
 * metadata of (BUCKET, KEY) = obj_a under etag, validated age_ms ago
 * (negative: ahead of the clock). */
static void
lower_plant_meta(bc_tier_t *lower, const char *etag, int64_t age_ms)
{
	bc_objmeta_t m;
	bc_buf_t b;

	memset(&m, 0, sizeof(m));
	m.size = sizeof(obj_a);
	snprintf(m.etag, sizeof(m.etag), "%s", etag);
	m.last_modified = LAST_MOD_T;
	cr_assert_eq(bc_kv_add(&m.headers, "ETag", etag), 0);
	cr_assert_eq(bc_kv_add(&m.headers, "Last-Modified", LAST_MOD), 0);
	cr_assert_eq(bc_kv_add(&m.headers, "Content-Type",
	    "application/x-test"), 0);
	cr_assert_eq(bc_kv_add(&m.headers, "x-amz-meta-color", "blue"), 0);
	bc_buf_init(&b, 0);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, (uint64_t)(
	    (int64_t)wall_ms_now() - age_ms)), 0);
	cr_assert_eq(lower->ops->meta_put(lower, BUCKET, KEY, b.data, b.len),
	    0);
	bc_buf_fini(&b);
	bc_objmeta_fini(&m);
}

/* The metadata as the origin describes obj_a (a fresh first fill's). */
static void
check_meta_a(const bc_objmeta_t *m)
{
	cr_assert_eq(m->size, sizeof(obj_a));
	cr_assert_str_eq(m->etag, "\"etag-a\"");
	cr_assert_eq(m->last_modified, LAST_MOD_T);
	cr_assert_str_eq(bc_kv_get(&m->headers, "Content-Type"),
	    "application/x-test");
	cr_assert_str_eq(bc_kv_get(&m->headers, "x-amz-meta-color"), "blue");
	cr_assert_null(bc_kv_get(&m->headers, "x-amz-request-id"),
	    "a per-response header was kept");
}

/* Asks for (BUCKET, KEY)'s metadata once and waits for the lower tiers'
 * answer: returns the wait's outcome, with w->tier_hit as it came. */
static bc_wait_result_t
meta_wait_once(bc_object_t *o, tw_t *t)
{
	bc_objmeta_t m;
	bool cached;

	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t->w, &m, &cached), BC_EAGAIN,
	    "the lower tiers were not asked first");
	return tw_wait(t);
}

/* A restarted cache finds the metadata and chunks the last one learned
 * in the disk tier's directory: no origin request at all, the same
 * metadata (headers too), and chunks that carry their file for sendfile. */
LTest(cache, a_restarted_cache_reads_metadata_and_chunks_from_disk)
{
	char dir[] = "/tmp/bc-test-cache-disk.XXXXXX", cmd[128];
	bc_tier_opts_t to = { .capacity = 64 * 1024 * 1024, .name = "disk" };
	uint64_t hits = st_get(BC_STAT_cache_meta_lower_hits);
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch;
	bc_tier_t *disk;
	bool cached = false;
	tw_t t;

	cr_assert_not_null(mkdtemp(dir));
	to.dir = dir;
	for (int run = 0; run < 2; run++) {
		env_start();
		to.loop = E.loop;
		cr_assert_eq(bc_tier_disk_open(&to, &disk, NULL, 0), 0);
		cr_assert_eq(bc_tier_chain_add(bc_cache_tiers(E.c), disk), 0);
		o = bc_cache_object(E.c, BUCKET, KEY);
		tw_init(&t);
		cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
		check_meta_a(&meta);
		for (uint32_t i = 0; i < 3; i++) {
			ch = NULL;
			cr_assert_eq(get_chunk(o, meta.etag, i, &t, &ch), 0);
			check_chunk(ch, i, obj_a, sizeof(obj_a), CS);
			if (run == 1) {
				/* the waiter got the file; the chunk, kept in
				 * memory, holds none */
				cr_assert_geq(got_fd, 0, "chunk %u: no file", i);
				cr_assert_eq(ch->fd, -1, "chunk %u: a file", i);
				cr_assert_eq(pread(got_fd, cmd, 16, (off_t)
				    got_fd_off), 16);
				cr_assert(memcmp(cmd, obj_a + i * CS, 16) == 0);
				close(got_fd);
				got_fd = -1;
			}
			bc_chunk_unref(ch);
		}
		if (run == 0) {
			cr_assert_eq(org_count(NULL, NULL), 3,
			    "the first run fetches metadata and 3 chunks in "
			    "3 GETs");
			bc_tier_chain_flush(bc_cache_tiers(E.c));
			bc_tier_disk_flush(disk);
		} else {
			cr_assert_eq(org_count(NULL, NULL), 0, "the restarted "
			    "cache asked the origin");
			cr_assert_eq(st_get(BC_STAT_cache_meta_lower_hits),
			    hits + 1);
		}
		bc_objmeta_fini(&meta);
		tw_fini(&t);
		bc_object_unref(E.c, o);
		env_stop();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Metadata a lower tier validated within meta-ttl is fresh: served with
 * no origin request (the waiter says it came from a tier), and chunk 0
 * comes through the chunk path (from the origin here: the tier holds no
 * chunk) with If-Match, never as a first fill. */
LTest(cache, fresh_lower_tier_metadata_needs_no_origin_request)
{
	env_opts_t eo = { .meta_ttl = 60000, .meta_stale = 60000 };
	uint64_t puts = st_get(BC_STAT_cache_meta_lower_puts);
	bc_tier_async_ctl_t *ctl;
	bc_tier_t *lower;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bool cached = false;
	tw_t t;

	env_start_opts(&eo);
	lower = lower_add(&ctl);
	lower_plant_meta(lower, "\"etag-a\"", 1000);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(meta_wait_once(o, &t), BC_WAIT_RECHECK);
	cr_assert(t.w.tier_hit, "the waiter was not told of the tier's hit");
	bc_waiter_reset(&t.w);
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta, &cached), 0);
	cr_assert(cached);
	check_meta_a(&meta);
	cr_assert_eq(org_count(NULL, NULL), 0);
	cr_assert_eq(atomic_load(&ctl->meta_gets), 1);
	cr_assert_eq(get_chunk(o, meta.etag, 0, &t, &ch), 0);
	check_chunk(ch, 0, obj_a, sizeof(obj_a), CS);
	cr_assert_eq(org_count(NULL, NULL), 1);
	cr_assert_str_eq(org_last().if_match, "\"etag-a\"",
	    "chunk 0 came by a first fill");
	cr_assert_eq(st_get(BC_STAT_cache_meta_lower_puts), puts,
	    "a validation within a quarter of meta-ttl was queued again");
	bc_chunk_unref(ch);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* Past meta-ttl, the tier's metadata is stale: served at once and
 * revalidated in the background, and that validation goes back to the
 * tier; past meta-stale too (or validated "in the future": a clock that
 * jumped), it is revalidated before it is served. */
LTest(cache, old_lower_tier_metadata_is_revalidated)
{
	static const int64_t ages[] = { 1500, 3600 * 1000, -3600 * 1000 };
	env_opts_t eo = { .meta_ttl = 1000, .meta_stale = 60000 };

	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		uint64_t stale0 = st_get(BC_STAT_cache_stale_served);
		bc_tier_async_ctl_t *ctl;
		bc_tier_t *lower;
		bc_objmeta_t meta;
		bc_object_t *o;
		bool cached = false;
		tw_t t;

		env_start_opts(&eo);
		lower = lower_add(&ctl);
		lower_plant_meta(lower, "\"etag-a\"", ages[i]);
		o = bc_cache_object(E.c, BUCKET, KEY);
		tw_init(&t);
		if (i == 0)
			org_gate(true);
		cr_assert_eq(meta_wait_once(o, &t), BC_WAIT_RECHECK);
		bc_waiter_reset(&t.w);
		if (i == 0) {
			cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &meta,
			    &cached), 0, "stale metadata was waited for");
			cr_assert_eq(st_get(BC_STAT_cache_stale_served),
			    stale0 + 1);
			cr_assert(org_wait_held(1));
			org_gate(false);
			cr_assert(org_wait_quiet());
		} else {
			cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL),
			    0);
			cr_assert_eq(st_get(BC_STAT_cache_stale_served),
			    stale0, "age %" PRId64 " ms: served stale",
			    ages[i]);
		}
		check_meta_a(&meta);
		cr_assert_eq(org_count("HEAD", NULL), 1, "age %" PRId64
		    " ms: no revalidation", ages[i]);
		cr_assert_str_eq(org_find("HEAD", "").if_none_match,
		    "\"etag-a\"");
		cr_assert_eq(org_count("GET", NULL), 0);
		bc_tier_chain_flush(bc_cache_tiers(E.c));
		cr_assert_eq(atomic_load(&ctl->meta_puts), 2, "age %" PRId64
		    " ms: the revalidation was not queued for the tier",
		    ages[i]);
		bc_objmeta_fini(&meta);
		tw_fini(&t);
		bc_object_unref(E.c, o);
		env_stop();
	}
}

/* No metadata in the tier, or a damaged blob: the origin's first fill,
 * whose metadata then goes to the tier (replacing the damaged one). */
LTest(cache, missing_or_damaged_lower_tier_metadata_goes_to_the_origin)
{
	uint64_t miss0 = st_get(BC_STAT_cache_meta_lower_misses);
	uint64_t bad0 = st_get(BC_STAT_cache_meta_lower_corrupt);

	for (int damaged = 0; damaged < 2; damaged++) {
		bc_tier_async_ctl_t *ctl;
		bc_tier_t *lower;
		bc_objmeta_t meta;
		bc_object_t *o;
		bc_chunk_t *first = NULL;
		bool cached = true;
		tw_t t;

		env_start();
		lower = lower_add(&ctl);
		if (damaged)
			cr_assert_eq(lower->ops->meta_put(lower, BUCKET, KEY,
			    "BCOM\x01\x00garbage", 13), 0);
		o = bc_cache_object(E.c, BUCKET, KEY);
		tw_init(&t);
		cr_assert_eq(meta_wait_once(o, &t), BC_WAIT_RECHECK);
		cr_assert(!t.w.tier_hit);
		bc_waiter_reset(&t.w);
		cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, &first), 0);
		check_meta_a(&meta);
		check_chunk(first, 0, obj_a, sizeof(obj_a), CS);
		cr_assert_eq(org_count("GET", "bytes=0-1023"), 1);
		cr_assert_str_eq(org_last().if_match, "", "not a first fill");
		cr_assert_eq(atomic_load(&ctl->meta_gets), 1, "the tier was "
		    "asked again");
		bc_tier_chain_flush(bc_cache_tiers(E.c));
		cr_assert_eq(atomic_load(&ctl->meta_puts), (uint64_t)(1 +
		    damaged));
		bc_chunk_unref(first);
		bc_objmeta_fini(&meta);
		tw_fini(&t);
		bc_object_unref(E.c, o);
		env_stop();
	}
	cr_assert_eq(st_get(BC_STAT_cache_meta_lower_misses), miss0 + 1);
	cr_assert_eq(st_get(BC_STAT_cache_meta_lower_corrupt), bad0 + 1);
}

/* The tier's metadata names a version the origin no longer has: it is
 * served within meta-ttl (as memory's would be), but the first chunk
 * fetch (If-Match) finds the change, drops the object from every tier,
 * and the next lookup learns the new version from the origin, not the
 * tier. */
LTest(cache, lower_tier_metadata_of_a_changed_object_is_dropped)
{
	env_opts_t eo = { .meta_ttl = 60000 };
	bc_tier_async_ctl_t *ctl;
	bc_tier_t *lower;
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bool cached = false;
	tw_t t;

	env_start_opts(&eo);
	lower = lower_add(&ctl);
	lower_plant_meta(lower, "\"etag-old\"", 0);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
	cr_assert_str_eq(meta.etag, "\"etag-old\"");
	cr_assert_eq(get_chunk(o, meta.etag, 0, &t, &ch), BC_WAIT_RESTART);
	bc_objmeta_fini(&meta);
	bc_waiter_reset(&t.w);
	bc_object_unref(E.c, o);
	bc_tier_chain_flush(bc_cache_tiers(E.c));
	o = bc_cache_object(E.c, BUCKET, KEY);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
	check_meta_a(&meta);
	cr_assert_eq(atomic_load(&ctl->meta_gets), 2);
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 2);
	cr_assert_str_eq(org_last().if_match, "", "the new version came by "
	    "the origin's first fill");
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* An invalidation (a write through the gateway, the admin call) drops the
 * tier's metadata too: the next lookup goes to the origin. */
LTest(cache, invalidation_drops_lower_tier_metadata)
{
	bc_tier_async_ctl_t *ctl;
	bc_tier_t *lower;
	bc_objmeta_t meta;
	bc_object_t *o;
	bool cached = false;
	tw_t t;

	env_start();
	lower = lower_add(&ctl);
	lower_plant_meta(lower, "\"etag-a\"", 0);
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, KEY, NULL), 0);
	o = bc_cache_object(E.c, BUCKET, KEY);
	tw_init(&t);
	cr_assert_eq(get_meta(o, 0, &t, &meta, &cached, NULL), 0);
	check_meta_a(&meta);
	cr_assert_eq(org_count("GET", "bytes=0-1023"), 1);
	cr_assert_str_eq(org_last().if_match, "", "the invalidated metadata "
	    "came from the tier");
	cr_assert_eq(atomic_load(&ctl->meta_gets), 1);
	bc_objmeta_fini(&meta);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	env_stop();
}

/* A prefetch of an object the cache does not know asks the tiers first:
 * with their metadata it fetches the chunk asked for (by the chunk path:
 * If-Match, class prefetch), never the origin's first fill. */
LTest(cache, prefetch_of_a_cold_object_asks_the_lower_tiers_first)
{
	bc_tier_async_ctl_t *ctl;
	bc_tier_t *lower;
	fake_req_t q;

	env_start();
	lower = lower_add(&ctl);
	lower_plant_meta(lower, "\"etag-a\"", 0);
	org_gate(true);
	cr_assert_eq(bc_cache_prefetch_key(E.c, BUCKET, KEY, 1, 1, false,
	    BC_STATS_JOB_NONE), 1);
	cr_assert(org_wait_held(1));
	q = org_last();
	cr_assert_str_eq(q.range, "bytes=1024-2047");
	cr_assert_str_eq(q.if_match, "\"etag-a\"");
	cr_assert_eq(q.cls, BC_ORIGIN_PREFETCH);
	org_gate(false);
	cr_assert(org_wait_quiet());
	cr_assert_eq(org_count(NULL, NULL), 1);
	cr_assert_eq(atomic_load(&ctl->meta_gets), 1);
	env_stop();
}

/* ---- versions (cache.h "Versions") ----------------------------------------- */

/* A version of KEY the origin keeps besides its current one (obj_a,
 * "etag-a"): obj_b's 2500 bytes, ETag "etag-v1". */
#define V1       "v1-3HL4kqtJvjVXFYw"
#define V1_SIZE  2500

/* Learns o's metadata (with chunk 0) and returns a copy of it. */
static bc_objmeta_t
learn(bc_object_t *o, tw_t *t, const uint8_t *data, size_t size)
{
	bc_objmeta_t meta;
	bc_chunk_t *first = NULL;
	bool cached;

	bc_waiter_reset(&t->w);
	cr_assert_eq(get_meta(o, 0, t, &meta, &cached, &first), 0);
	check_chunk(first, 0, data, size, CS);
	bc_chunk_unref(first);
	bc_waiter_reset(&t->w);
	return meta;
}

/* The cache key of a version is (bucket, key, version id): one entry per
 * version, apart from the current one's; a version's fetches carry its
 * versionId (and its ETag in If-Match), the current one's none; a
 * version read twice is a hit. */
LTest(cache, a_version_is_an_entry_of_its_own)
{
	bc_object_t *o, *ov, *again;
	bc_objmeta_t m, mv;
	bc_chunk_t *ch = NULL;
	unsigned n;
	fake_req_t q;
	tw_t t;

	env_start();
	fake_origin_put_version(E.fo, BUCKET, KEY, V1, obj_b, V1_SIZE,
	    "\"etag-v1\"");
	tw_init(&t);
	o = bc_cache_object(E.c, BUCKET, KEY);
	ov = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	cr_assert_neq(o, ov, "a version shares the current version's entry");
	again = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	cr_assert_eq(again, ov, "a version's second lookup made a new entry");
	bc_object_unref(E.c, again);
	again = bc_cache_object_version(E.c, BUCKET, KEY, NULL);
	cr_assert_eq(again, o, "version NULL is not the current version");
	bc_object_unref(E.c, again);
	again = bc_cache_object_version(E.c, BUCKET, KEY, "v2");
	cr_assert(again != o && again != ov, "another version, same entry");
	bc_object_unref(E.c, again);

	mv = learn(ov, &t, obj_b, V1_SIZE);
	cr_assert_str_eq(mv.etag, "\"etag-v1\"");
	cr_assert_eq(mv.size, V1_SIZE);
	cr_assert_str_eq(org_last().version, V1);
	m = learn(o, &t, obj_a, sizeof(obj_a));
	cr_assert_str_eq(m.etag, "\"etag-a\"");
	cr_assert_str_eq(org_last().version, "",
	    "the current version was fetched with a versionId");

	cr_assert_eq(get_chunk(ov, mv.etag, 2, &t, &ch), 0);
	check_chunk(ch, 2, obj_b, V1_SIZE, CS);
	bc_chunk_unref(ch);
	q = org_last();
	cr_assert_str_eq(q.version, V1);
	cr_assert_str_eq(q.if_match, "\"etag-v1\"");
	cr_assert_str_eq(q.range, "bytes=2048-3071");
	n = org_count(NULL, NULL);
	cr_assert_eq(get_chunk(ov, mv.etag, 2, &t, &ch), 0);
	check_chunk(ch, 2, obj_b, V1_SIZE, CS);
	bc_chunk_unref(ch);
	cr_assert_eq(get_chunk(o, m.etag, 0, &t, &ch), 0);
	check_chunk(ch, 0, obj_a, sizeof(obj_a), CS);
	bc_chunk_unref(ch);
	cr_assert_eq(org_count(NULL, NULL), n, "a second read went upstream");
	bc_objmeta_fini(&m);
	bc_objmeta_fini(&mv);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	bc_object_unref(E.c, ov);
	env_stop();
}

/* A version never changes: past meta-ttl its metadata is still served
 * without asking the origin, while the current version's is revalidated. */
LTest(cache, a_version_is_never_revalidated)
{
	env_opts_t eo = { .meta_ttl = TTL_MS };
	bc_object_t *o, *ov;
	bc_objmeta_t m;
	bool cached = false;
	unsigned n;
	tw_t t;

	env_start_opts(&eo);
	fake_origin_put_version(E.fo, BUCKET, KEY, V1, obj_b, V1_SIZE,
	    "\"etag-v1\"");
	tw_init(&t);
	o = bc_cache_object(E.c, BUCKET, KEY);
	ov = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	m = learn(ov, &t, obj_b, V1_SIZE);
	bc_objmeta_fini(&m);
	m = learn(o, &t, obj_a, sizeof(obj_a));
	bc_objmeta_fini(&m);
	sleep_ms(TTL_MS + 50);
	n = org_count(NULL, NULL);
	cr_assert_eq(bc_cache_meta(E.c, ov, 0, &t.w, &m, &cached), 0,
	    "a version's metadata was not served past meta-ttl");
	cr_assert(cached);
	cr_assert_str_eq(m.etag, "\"etag-v1\"");
	bc_objmeta_fini(&m);
	cr_assert_eq(org_count(NULL, NULL), n, "a version was revalidated");
	cr_assert_eq(bc_cache_meta(E.c, o, 0, &t.w, &m, &cached), BC_EAGAIN,
	    "the current version was not revalidated past meta-ttl");
	cr_assert_eq(tw_wait(&t), BC_WAIT_RECHECK);
	cr_assert_str_eq(org_last().method, "HEAD");
	cr_assert_str_eq(org_last().version, "");
	tw_fini(&t);
	bc_object_unref(E.c, o);
	bc_object_unref(E.c, ov);
	env_stop();
}

/* Invalidating a key (a write through the gateway, an admin's key=)
 * drops its current entry and every version entry; a prefix drops
 * versions too; another key stays. A version looked up again is fetched
 * again. */
LTest(cache, invalidating_a_key_drops_its_versions)
{
	bc_object_t *o, *ov, *ov2, *other, *fresh;
	bc_objmeta_t m, mv, mo;
	bc_chunk_t *ch = NULL;
	unsigned n;
	tw_t t;

	env_start();
	fake_origin_put_version(E.fo, BUCKET, KEY, V1, obj_b, V1_SIZE,
	    "\"etag-v1\"");
	fake_origin_put_version(E.fo, BUCKET, KEY, "v2", obj_b, 100,
	    "\"etag-v2\"");
	org_put(BUCKET, "other", obj_b, 500, "\"etag-o\"");
	tw_init(&t);
	o = bc_cache_object(E.c, BUCKET, KEY);
	ov = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	ov2 = bc_cache_object_version(E.c, BUCKET, KEY, "v2");
	other = bc_cache_object(E.c, BUCKET, "other");
	m = learn(o, &t, obj_a, sizeof(obj_a));
	mv = learn(ov, &t, obj_b, V1_SIZE);
	bc_objmeta_fini(&mv);
	mv = learn(ov2, &t, obj_b, 100);
	mo = learn(other, &t, obj_b, 500);
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, KEY, NULL), 3,
	    "the key and its two versions");
	cr_assert_eq(bc_cache_chunk(E.c, o, m.etag, 0, false, NULL, &ch),
	    BC_ECANCELED);
	cr_assert_eq(bc_cache_chunk(E.c, ov2, mv.etag, 0, false, NULL, &ch),
	    BC_ECANCELED);
	cr_assert_eq(bc_cache_chunk(E.c, other, mo.etag, 0, false, NULL, &ch),
	    0, "another key was dropped");
	bc_chunk_unref(ch);
	n = org_count(NULL, NULL);
	fresh = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	cr_assert_neq(fresh, ov);
	bc_objmeta_fini(&mv);
	mv = learn(fresh, &t, obj_b, V1_SIZE);
	cr_assert_eq(org_count(NULL, NULL), n + 1);
	cr_assert_str_eq(org_last().version, V1);
	cr_assert_eq(bc_cache_invalidate(E.c, BUCKET, NULL, "ob"), 1,
	    "a prefix did not drop the version entry");
	bc_objmeta_fini(&m);
	bc_objmeta_fini(&mv);
	bc_objmeta_fini(&mo);
	tw_fini(&t);
	bc_object_unref(E.c, o);
	bc_object_unref(E.c, ov);
	bc_object_unref(E.c, ov2);
	bc_object_unref(E.c, other);
	bc_object_unref(E.c, fresh);
	env_stop();
}

/* The lower tiers keep one metadata per key, the current version's: a
 * version's is neither asked of them nor put there (its chunks are, by
 * ETag, like any). */
LTest(cache, a_version_keeps_no_metadata_in_the_lower_tiers)
{
	uint64_t puts = st_get(BC_STAT_cache_meta_lower_puts);
	bc_tier_async_ctl_t *ctl;
	bc_object_t *ov;
	bc_objmeta_t mv;
	tw_t t;

	env_start();
	(void)lower_add(&ctl);
	fake_origin_put_version(E.fo, BUCKET, KEY, V1, obj_b, V1_SIZE,
	    "\"etag-v1\"");
	tw_init(&t);
	ov = bc_cache_object_version(E.c, BUCKET, KEY, V1);
	mv = learn(ov, &t, obj_b, V1_SIZE);
	cr_assert(org_wait_quiet());
	cr_assert_eq(atomic_load(&ctl->meta_gets), 0,
	    "a version's metadata was asked of the lower tiers");
	cr_assert_eq(atomic_load(&ctl->meta_puts), 0);
	cr_assert_eq(st_get(BC_STAT_cache_meta_lower_puts), puts,
	    "a version's metadata was queued for the lower tiers");
	bc_objmeta_fini(&mv);
	tw_fini(&t);
	bc_object_unref(E.c, ov);
	env_stop();
}

/* ---- one read (cache_read.h) ---------------------------------------------- */

/* bc_cache_read over memory alone: a range whose chunks memory holds is a
 * zero-copy answer (every chunk held, a hit); one memory lacks streams,
 * the chunks memory had counted (partial, or a miss), and with no lower
 * tier it asks nothing of the origin (no file, no chunk fill). */
LTest(cache, read_answers_memory_or_stream)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *a = NULL;
	bc_read_t rd;
	bc_range_t rg;
	unsigned n;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	cr_assert_eq(get_chunk(o, meta.etag, 1, &t, &a), 0);
	bc_chunk_unref(a);
	n = org_count(NULL, NULL);
	bc_cache_read_init(&rd, E.c, o, &t.w, 16);

	rg.first = 100;   /* chunks 0 and 1: in memory */
	rg.last = 2000;
	bc_cache_read_span(&rd, meta.etag, sizeof(obj_a), &rg);
	cr_assert_eq(bc_cache_read(&rd), BC_READ_MEM);
	cr_assert_eq(rd.present, 2);
	cr_assert_not_null(rd.held);
	cr_assert_eq(rd.held->n, 2);
	check_chunk(rd.held->v[0], 0, obj_a, sizeof(obj_a), CS);
	check_chunk(rd.held->v[1], 1, obj_a, sizeof(obj_a), CS);
	bc_cache_read_held_free(rd.held);
	rd.held = NULL;

	rg.first = 2048;  /* chunk 2: not in memory, no lower tier */
	rg.last = 2999;
	bc_cache_read_span(&rd, meta.etag, sizeof(obj_a), &rg);
	cr_assert_eq(bc_cache_read(&rd), BC_READ_STREAM);
	cr_assert_eq(rd.present, 0);
	cr_assert_null(rd.held);
	cr_assert_null(rd.chunk);

	rg.first = 1100;  /* chunks 1 and 2: partial */
	bc_cache_read_span(&rd, meta.etag, sizeof(obj_a), &rg);
	cr_assert_eq(bc_cache_read(&rd), BC_READ_STREAM);
	cr_assert_eq(rd.present, 1);
	cr_assert_null(rd.held);
	cr_assert_eq(org_count(NULL, NULL), n, "a read asked the origin");
	cr_assert_null(t.w.list, "a read registered its waiter");

	/* more chunks than a zero-copy answer may hold: it streams */
	rd.max_held = 1;
	rg.first = 0;
	rg.last = 2047;
	bc_cache_read_span(&rd, meta.etag, sizeof(obj_a), &rg);
	cr_assert_eq(bc_cache_read(&rd), BC_READ_STREAM);
	cr_assert_eq(rd.present, 2, "a hit that streams");

	bc_cache_read_fini(&rd);
	tw_fini(&t);
	bc_objmeta_fini(&meta);
	bc_object_unref(E.c, o);
	env_stop();
}

/* The streaming reader's chunk needs the read's span (the version's ETag
 * among it): a read without one aborts, where it once hashed a NULL ETag
 * (CI's fuzz_http_request, a HEAD's answer built before the span). */
LTest(cache, read_chunk_without_span_aborts, .signal = SIGABRT)
{
	bc_objmeta_t meta;
	bc_object_t *o;
	bc_chunk_t *ch = NULL;
	bc_read_from_t from;
	bc_read_t rd;
	tw_t t;

	env_start();
	o = warm_object(&meta);
	tw_init(&t);
	bc_cache_read_init(&rd, E.c, o, &t.w, 16);
	(void)bc_cache_read_chunk(&rd, 0, &ch, &from);
}
