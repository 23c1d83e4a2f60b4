/*
 * test_fake_origin.c — the test double the cache's tests stand on
 * (fake_origin.h) keeps the origin contract of upstream.h: S3's answers
 * (200, 206, 304, 412, 404, 416, HEAD), push callbacks on the loop thread
 * only after fetch() returned, bodies in pieces into the sink or
 * collected within collect_max, pull reads with wakes, release() waiting
 * out a callback in progress and silencing the rest, cancel_all ending
 * everything with BC_ECANCELED, held fetches aborted with a transport
 * error.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "../bc_test.h"
#include "fake_origin.h"

#include "upstream/upstream.h"
#include "loop/loop.h"
#include "util/util_error.h"

#define GUARD_MS 15000

static bc_loop_t     *loop;
static fake_origin_t *fo;

static const uint8_t ten[] = "0123456789";

static void
start(void)
{
	bc_kvlist_t meta = BC_KVLIST_INIT;

	loop = bc_loop_new(NULL);
	cr_assert_not_null(loop);
	cr_assert_eq(bc_loop_start(loop), 0);
	fo = fake_origin_new(loop);
	cr_assert_not_null(fo);
	cr_assert_eq(bc_kv_add(&meta, "Content-Type", "text/plain"), 0);
	fake_origin_put(fo, "b", "k", ten, 10, "\"e1\"", NULL, &meta);
	bc_kv_fini(&meta);
}

static void
stop(void)
{
	fake_origin_gate(fo, false);
	bc_loop_stop(loop, fake_origin_stop_fn, fo);
	cr_assert_eq(fake_origin_exchanges(fo), 0);
	bc_origin_free(fake_origin_base(fo));
	bc_loop_free(loop);
	fo = NULL;
	loop = NULL;
}

static void
deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += GUARD_MS / 1000;
}

/* ---- push mode ------------------------------------------------------------- */

typedef struct push_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            returned;      /* fetch() returned (under mu) */
	bool            early;         /* a callback before that */
	bool            off_loop;      /* a callback on the test's thread */
	pthread_t       test_thread;
	int             status;
	unsigned        ndata;
	size_t          totals[16];
	bool            done;
	uint8_t        *sink;          /* given from on_headers when set */
	size_t          cap;
} push_t;

static void
push_init(push_t *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->test_thread = pthread_self();
}

static void
push_fini(push_t *p)
{
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

/* Under p->mu: notes a callback's thread and timing. */
static void
push_check(push_t *p)
{
	if (!p->returned)
		p->early = true;
	if (pthread_equal(pthread_self(), p->test_thread))
		p->off_loop = true;
}

static void
on_headers(bc_exchange_t *x, void *arg, int status, const bc_kvlist_t *h)
{
	push_t *p = arg;

	(void)h;
	pthread_mutex_lock(&p->mu);
	push_check(p);
	p->status = status;
	if (p->sink != NULL)
		bc_exchange_set_sink(x, p->sink, p->cap);
	pthread_mutex_unlock(&p->mu);
}

static void
on_data(void *arg, size_t total)
{
	push_t *p = arg;

	pthread_mutex_lock(&p->mu);
	push_check(p);
	if (p->ndata < 16)
		p->totals[p->ndata] = total;
	p->ndata++;
	pthread_mutex_unlock(&p->mu);
}

static void
on_done(bc_exchange_t *x, void *arg)
{
	push_t *p = arg;

	(void)x;
	pthread_mutex_lock(&p->mu);
	push_check(p);
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Starts a push fetch of b/key; the test's lock is held across fetch()
 * (a callback before it returned would wait for it, then see early). */
static bc_exchange_t *
push_start(push_t *p, const char *key, bool head, uint64_t first,
    uint64_t last, const char *cond, const char *etag, size_t collect_max)
{
	bc_fetch_t f;
	bc_exchange_t *x;

	memset(&f, 0, sizeof(f));
	f.bucket = "b";
	f.key = key;
	f.head = head;
	f.first = first;
	f.last = last;
	f.cond = cond;
	f.etag = etag;
	f.collect_max = collect_max;
	f.on_headers = on_headers;
	f.on_data = on_data;
	f.on_done = on_done;
	f.arg = p;
	pthread_mutex_lock(&p->mu);
	x = bc_origin_fetch(fake_origin_base(fo), &f);
	p->returned = true;
	pthread_mutex_unlock(&p->mu);
	cr_assert_not_null(x);
	return x;
}

static void
push_wait(push_t *p)
{
	struct timespec dl;

	deadline(&dl);
	pthread_mutex_lock(&p->mu);
	while (!p->done && pthread_cond_timedwait(&p->cv, &p->mu, &dl) == 0)
		;
	pthread_mutex_unlock(&p->mu);
	cr_assert(p->done, "on_done never came");
	cr_assert(!p->early, "a callback before fetch() returned");
	cr_assert(!p->off_loop, "a callback on the caller's thread");
}

/* Fetches b/key to its end (collected); returns the status, the body
 * (NUL-ended, in body) and the exchange's outcome in *err. */
static int
get(const char *key, bool head, uint64_t first, uint64_t last,
    const char *cond, const char *etag, char *body, size_t cap,
    const bc_kvlist_t **hp, bc_exchange_t **xp)
{
	push_t p;
	bc_exchange_t *x;
	const bc_kvlist_t *h;
	int status = 0;
	uint8_t *b;
	size_t len = 0;

	push_init(&p);
	x = push_start(&p, key, head, first, last, cond, etag, 1 << 16);
	push_wait(&p);
	cr_assert_eq(bc_exchange_error(x), 0);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_assert_eq(status, p.status);
	b = bc_exchange_take_body(x, &len);
	cr_assert_lt(len, cap);
	if (len > 0)
		memcpy(body, b, len);
	body[len] = '\0';
	free(b);
	push_fini(&p);
	*hp = h;
	*xp = x;
	return status;
}

TestSuite(fake_origin, .timeout = 60);

LTest(fake_origin, answers_like_s3)
{
	const bc_kvlist_t *h;
	bc_exchange_t *x;
	char body[1024];

	start();
	cr_assert_eq(get("k", false, 2, 5, NULL, NULL, body, sizeof(body), &h,
	    &x), 206);
	cr_assert_str_eq(body, "2345");
	cr_assert_str_eq(bc_kv_get(h, "Content-Range"), "bytes 2-5/10");
	cr_assert_str_eq(bc_kv_get(h, "Content-Length"), "4");
	cr_assert_str_eq(bc_kv_get(h, "ETag"), "\"e1\"");
	cr_assert_str_eq(bc_kv_get(h, "Content-Type"), "text/plain");
	cr_assert_not_null(bc_kv_get(h, "Last-Modified"));
	bc_exchange_release(x);

	cr_assert_eq(get("k", false, 8, 1023, "If-Match", "\"e1\"", body,
	    sizeof(body), &h, &x), 206);
	cr_assert_str_eq(body, "89");
	cr_assert_str_eq(bc_kv_get(h, "Content-Range"), "bytes 8-9/10");
	bc_exchange_release(x);

	cr_assert_eq(get("k", false, BC_FETCH_WHOLE, 0, NULL, NULL, body,
	    sizeof(body), &h, &x), 200);
	cr_assert_str_eq(body, "0123456789");
	cr_assert_str_eq(bc_kv_get(h, "Content-Length"), "10");
	cr_assert_null(bc_kv_get(h, "Content-Range"));
	bc_exchange_release(x);

	cr_assert_eq(get("k", false, 0, 3, "If-Match", "\"other\"", body,
	    sizeof(body), &h, &x), 412);
	cr_assert_not_null(strstr(body, "<Code>PreconditionFailed</Code>"));
	bc_exchange_release(x);

	cr_assert_eq(get("k", true, BC_FETCH_WHOLE, 0, "If-None-Match",
	    "\"e1\"", body, sizeof(body), &h, &x), 304);
	cr_assert_str_eq(body, "");
	cr_assert_str_eq(bc_kv_get(h, "ETag"), "\"e1\"");
	bc_exchange_release(x);

	cr_assert_eq(get("k", false, 10, 20, NULL, NULL, body, sizeof(body),
	    &h, &x), 416);
	cr_assert_str_eq(bc_kv_get(h, "Content-Range"), "bytes */10");
	cr_assert_not_null(strstr(body, "<Code>InvalidRange</Code>"));
	bc_exchange_release(x);

	cr_assert_eq(get("nope", false, 0, 3, NULL, NULL, body, sizeof(body),
	    &h, &x), 404);
	cr_assert_not_null(strstr(body, "<Code>NoSuchKey</Code>"));
	bc_exchange_release(x);

	cr_assert_eq(get("k", true, BC_FETCH_WHOLE, 0, NULL, NULL, body,
	    sizeof(body), &h, &x), 200);
	cr_assert_str_eq(body, "", "a HEAD has no body");
	cr_assert_str_eq(bc_kv_get(h, "Content-Length"), "10");
	bc_exchange_release(x);

	cr_assert_eq(get("nope", true, BC_FETCH_WHOLE, 0, NULL, NULL, body,
	    sizeof(body), &h, &x), 404);
	cr_assert_str_eq(body, "");
	bc_exchange_release(x);
	cr_assert_eq(fake_origin_count(fo, "GET", "bytes=2-5"), 1);
	cr_assert_eq(fake_origin_count(fo, "HEAD", ""), 3);
	cr_assert_eq(fake_origin_count(fo, NULL, NULL), 9);
	stop();
}

/* A body in pieces: several on_data calls into the sink, each after the
 * bytes landed; more than the sink or collect_max fails with BC_E2BIG. */
LTest(fake_origin, body_in_pieces)
{
	uint8_t sink[10];
	bc_exchange_t *x;
	push_t p;

	start();
	fake_origin_piece(fo, 3);
	push_init(&p);
	p.sink = sink;
	p.cap = sizeof(sink);
	x = push_start(&p, "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 1);
	push_wait(&p);
	cr_assert_eq(bc_exchange_error(x), 0);
	cr_assert_eq(p.ndata, 4);
	cr_assert_eq(p.totals[0], 3);
	cr_assert_eq(p.totals[1], 6);
	cr_assert_eq(p.totals[2], 9);
	cr_assert_eq(p.totals[3], 10);
	cr_assert(memcmp(sink, ten, 10) == 0);
	bc_exchange_release(x);
	push_fini(&p);

	push_init(&p);
	p.sink = sink;
	p.cap = 5;
	x = push_start(&p, "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 1);
	push_wait(&p);
	cr_assert_eq(bc_exchange_error(x), BC_E2BIG);
	bc_exchange_release(x);
	push_fini(&p);

	push_init(&p);
	x = push_start(&p, "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4);
	push_wait(&p);
	cr_assert_eq(bc_exchange_error(x), BC_E2BIG);
	cr_assert_eq(p.ndata, 0, "on_data without a sink");
	bc_exchange_release(x);
	push_fini(&p);
	stop();
}

/* ---- release during a callback --------------------------------------------- */

typedef struct blk_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            in_cb, go, cb_returned, releasing;
	unsigned        calls;         /* callbacks begun */
	bc_exchange_t  *x;
	unsigned        calls_at_release;
	bool            cb_returned_at_release;
	uint8_t         sink[10];
} blk_t;

static void
blk_headers(bc_exchange_t *x, void *arg, int status, const bc_kvlist_t *h)
{
	blk_t *b = arg;

	(void)status;
	(void)h;
	bc_exchange_set_sink(x, b->sink, sizeof(b->sink));
	pthread_mutex_lock(&b->mu);
	b->calls++;
	pthread_mutex_unlock(&b->mu);
}

/* The first call blocks until the test says go. */
static void
blk_data(void *arg, size_t total)
{
	blk_t *b = arg;
	bool first;

	(void)total;
	pthread_mutex_lock(&b->mu);
	first = b->calls++ == 1;
	if (first) {
		b->in_cb = true;
		pthread_cond_broadcast(&b->cv);
		while (!b->go)
			pthread_cond_wait(&b->cv, &b->mu);
		b->cb_returned = true;
	}
	pthread_mutex_unlock(&b->mu);
}

static void
blk_done(bc_exchange_t *x, void *arg)
{
	blk_t *b = arg;

	(void)x;
	pthread_mutex_lock(&b->mu);
	b->calls++;
	pthread_mutex_unlock(&b->mu);
}

static void *
blk_release(void *arg)
{
	blk_t *b = arg;

	pthread_mutex_lock(&b->mu);
	b->releasing = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	bc_exchange_release(b->x);
	pthread_mutex_lock(&b->mu);
	b->calls_at_release = b->calls;
	b->cb_returned_at_release = b->cb_returned;
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* release() from another thread while on_data runs: it returns only after
 * that callback did, and nothing fires after it (no more on_data, no
 * on_done). */
LTest(fake_origin, release_waits_out_a_callback_and_silences_the_rest)
{
	struct timespec dl;
	pthread_t th;
	bc_fetch_t f;
	blk_t b;

	start();
	fake_origin_piece(fo, 2);
	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	memset(&f, 0, sizeof(f));
	f.bucket = "b";
	f.key = "k";
	f.first = BC_FETCH_WHOLE;
	f.collect_max = 1;
	f.on_headers = blk_headers;
	f.on_data = blk_data;
	f.on_done = blk_done;
	f.arg = &b;
	b.x = bc_origin_fetch(fake_origin_base(fo), &f);
	cr_assert_not_null(b.x);
	deadline(&dl);
	pthread_mutex_lock(&b.mu);
	while (!b.in_cb && pthread_cond_timedwait(&b.cv, &b.mu, &dl) == 0)
		;
	cr_assert(b.in_cb, "on_data never came");
	pthread_mutex_unlock(&b.mu);
	cr_assert_eq(pthread_create(&th, NULL, blk_release, &b), 0);
	pthread_mutex_lock(&b.mu);
	while (!b.releasing)
		pthread_cond_wait(&b.cv, &b.mu);
	pthread_mutex_unlock(&b.mu);
	/* room for a release() that does not wait to return (the check
	 * below), none needed by one that does */
	nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
	pthread_mutex_lock(&b.mu);
	b.go = true;
	pthread_cond_broadcast(&b.cv);
	pthread_mutex_unlock(&b.mu);
	pthread_join(th, NULL);
	cr_assert(b.cb_returned_at_release, "release() returned while a "
	    "callback ran");
	cr_assert(fake_origin_wait_quiet(fo, GUARD_MS));
	cr_assert_eq(b.calls, b.calls_at_release, "a callback after release");
	/* the loop thread drops its own reference just after its last
	 * callback returned: give it that moment */
	for (int i = 0; i < GUARD_MS && fake_origin_exchanges(fo) != 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000L }, NULL);
	cr_assert_eq(fake_origin_exchanges(fo), 0);
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	stop();
}

/* ---- pull mode, cancel_all, aborts ----------------------------------------- */

typedef struct wk_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	unsigned        wakes, seen;
} wk_t;

static void
wk_wake(void *arg)
{
	wk_t *w = arg;

	pthread_mutex_lock(&w->mu);
	w->wakes++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
wk_wait(wk_t *w)
{
	struct timespec dl;

	deadline(&dl);
	pthread_mutex_lock(&w->mu);
	while (w->wakes == w->seen &&
	    pthread_cond_timedwait(&w->cv, &w->mu, &dl) == 0)
		;
	cr_assert_gt(w->wakes, w->seen, "never woken");
	w->seen++;
	pthread_mutex_unlock(&w->mu);
}

static bc_exchange_t *
pull_start(wk_t *w, uint64_t first, uint64_t last)
{
	bc_fetch_t f;
	bc_exchange_t *x;

	memset(&f, 0, sizeof(f));
	f.bucket = "b";
	f.key = "k";
	f.first = first;
	f.last = last;
	f.wake = wk_wake;
	f.wake_arg = w;
	x = bc_origin_fetch(fake_origin_base(fo), &f);
	cr_assert_not_null(x);
	return x;
}

/* Pull: headers() and read() say BC_EAGAIN, then a wake follows; a body
 * held at the body gate reads up to the hold, then on after release; 0 at
 * its end. */
LTest(fake_origin, pull_reads_with_wakes)
{
	wk_t w = { .wakes = 0 };
	const bc_kvlist_t *h;
	bc_exchange_t *x;
	uint8_t buf[16];
	size_t have = 0;
	int status = 0;
	ssize_t n;

	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	start();
	fake_origin_piece(fo, 3);
	fake_origin_hold_body(fo, 6);
	fake_origin_gate(fo, true);
	x = pull_start(&w, 0, 9);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), BC_EAGAIN);
	cr_assert(fake_origin_wait_held(fo, 1, GUARD_MS));
	fake_origin_gate(fo, false);
	wk_wait(&w);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_assert_eq(status, 206);
	cr_assert(fake_origin_wait_body_held(fo, 1, GUARD_MS));
	while (have < 6) {
		n = bc_exchange_read(x, buf + have, sizeof(buf) - have);
		cr_assert_gt(n, 0, "%zd", n);
		have += (size_t)n;
	}
	cr_assert_eq(have, 6, "read past the hold");
	cr_assert_eq(bc_exchange_read(x, buf + have, sizeof(buf) - have),
	    BC_EAGAIN);
	fake_origin_release_body(fo);
	for (;;) {
		n = bc_exchange_read(x, buf + have, sizeof(buf) - have);
		if (n == BC_EAGAIN) {
			wk_wait(&w);
			continue;
		}
		cr_assert_geq(n, 0, "%zd", n);
		if (n == 0)
			break;
		have += (size_t)n;
	}
	cr_assert_eq(have, 10);
	cr_assert(memcmp(buf, ten, 10) == 0);
	cr_assert_eq(bc_exchange_error(x), 0);
	bc_exchange_release(x);
	stop();
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
}

/* cancel_all (the loop stopping) ends a held push exchange (on_done,
 * BC_ECANCELED, no headers) and a pull one mid-body (a wake; the bytes
 * that came, then BC_ECANCELED). */
LTest(fake_origin, cancel_all_ends_everything)
{
	wk_t w = { .wakes = 0 };
	const bc_kvlist_t *h;
	bc_exchange_t *a, *b;
	uint8_t buf[16];
	int status = 0;
	push_t p;

	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	start();
	fake_origin_hold_body(fo, 4);
	b = pull_start(&w, BC_FETCH_WHOLE, 0);
	cr_assert(fake_origin_wait_body_held(fo, 1, GUARD_MS));
	cr_assert_eq(bc_exchange_read(b, buf, sizeof(buf)), 4);
	cr_assert_eq(bc_exchange_read(b, buf, sizeof(buf)), BC_EAGAIN);
	fake_origin_gate(fo, true);
	push_init(&p);
	a = push_start(&p, "k", false, 0, 3, NULL, NULL, 16);
	cr_assert(fake_origin_wait_held(fo, 1, GUARD_MS));
	bc_loop_stop(loop, fake_origin_stop_fn, fo);
	push_wait(&p);
	cr_assert_eq(bc_exchange_headers(a, &status, &h), BC_ECANCELED);
	cr_assert_eq(bc_exchange_error(a), BC_ECANCELED);
	wk_wait(&w);
	cr_assert_eq(bc_exchange_read(b, buf, sizeof(buf)), BC_ECANCELED);
	cr_assert_eq(bc_exchange_error(b), BC_ECANCELED);
	bc_exchange_release(a);
	bc_exchange_release(b);
	push_fini(&p);
	stop();
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
}

/* Held fetches aborted with a transport error: before the headers, the
 * headers say it; mid-body, error() does. */
LTest(fake_origin, abort_held)
{
	const bc_kvlist_t *h;
	bc_exchange_t *a, *b;
	int status = 0;
	push_t p, q;

	start();
	fake_origin_gate(fo, true);
	push_init(&p);
	a = push_start(&p, "k", false, 0, 9, NULL, NULL, 16);
	cr_assert(fake_origin_wait_held(fo, 1, GUARD_MS));
	fake_origin_abort_held(fo, BC_ETIMEDOUT);
	push_wait(&p);
	cr_assert_eq(bc_exchange_headers(a, &status, &h), BC_ETIMEDOUT);
	cr_assert_eq(bc_exchange_error(a), BC_ETIMEDOUT);
	fake_origin_gate(fo, false);
	fake_origin_hold_body(fo, 4);
	push_init(&q);
	b = push_start(&q, "k", false, 0, 9, NULL, NULL, 16);
	cr_assert(fake_origin_wait_body_held(fo, 1, GUARD_MS));
	fake_origin_abort_held(fo, BC_EIO);
	push_wait(&q);
	cr_assert_eq(bc_exchange_headers(b, &status, &h), 0);
	cr_assert_eq(status, 206);
	cr_assert_eq(bc_exchange_error(b), BC_EIO);
	free(bc_exchange_take_body(b, &(size_t){ 0 }));
	bc_exchange_release(a);
	bc_exchange_release(b);
	push_fini(&p);
	push_fini(&q);
	stop();
}
