/*
 * test_upstream_xfer.c — the time limits of an upstream exchange
 * (upstream_xfer.h): the per-attempt TTFB limit (it fails an attempt,
 * which a bodiless request retries), the exchange's deadline over all
 * attempts and backoff waits (no attempt starts past it, the running one
 * fails, 5xx answers do not stretch it), both disarmed once the final
 * headers are in (a slow body is not cut), both counted from the end of a
 * request body, and 0 disabling them; and a request body of unknown
 * length (BC_XFER_UNKNOWN_LEN) sent chunked. And how an exchange ends
 * otherwise: a 5xx retried, a failure after the headers not retried, an
 * unreachable upstream (BC_EIO), the stall limit, the collect bound
 * (BC_E2BIG) and cancel_all (BC_ECANCELED).
 *
 * The upstream is a tiny HTTP/1.1 server on 127.0.0.1 (a port the kernel
 * picks) run by one thread with poll(): it reads each request (head and
 * Content-Length or chunked body), and answers the n-th request it
 * received as the n-th step of its script says (the last step repeats):
 * after ttfb_ms, or never; its body all at once or in pieces gap_ms
 * apart. It logs when each request was wholly in (and the last one's
 * body). The exchanges run on a real upstream loop
 * (libuv + libcurl) in collect mode; the test thread waits for on_done.
 * Timings are loose where jitter or a slow (sanitized) build may shift
 * them, and exact where the code guarantees it (e.g. attempt counts).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "stats/stats.h"
#include "loop/loop.h"
#include "upstream/upstream_xfer.h"
#include "util/util_error.h"
#include "util/util_kv.h"

#define GUARD_MS   15000    /* a wait this long means a hang */
#define MAX_CONNS  32
#define MAX_STEPS  8
#define MAX_LOG    64
#define NEVER      (-1)

/* ---- the scripted upstream --------------------------------------------- */

typedef struct step_s {
	int      ttfb_ms;       /* after the request is in; NEVER: silence */
	unsigned status;
	size_t   body_len;
	unsigned pieces;        /* the body in this many writes (0: one) */
	unsigned gap_ms;        /* between them */
	size_t   cut;           /* >0: close after this many body bytes */
} step_t;

typedef struct conn_s {
	int      fd;            /* -1: free slot */
	char     in[16384];
	size_t   in_len;
	bool     answering;     /* a request is in; step says how to answer */
	step_t   step;
	uint64_t req_ms;        /* when it was wholly in */
	unsigned pieces_sent;
} conn_t;

typedef struct srv_s {
	int             lfd;
	uint16_t        port;
	pthread_t       th;
	atomic_bool     stop;
	pthread_mutex_t mu;     /* guards steps, nsteps, nreq, req_at */
	step_t          steps[MAX_STEPS];
	unsigned        nsteps;
	unsigned        nreq;
	uint64_t        req_at[MAX_LOG];   /* ms, monotonic */
	bool            last_chunked;      /* the last request's body came
					      with Transfer-Encoding: chunked */
	char            last_body[256];    /* its body, decoded (NUL-ended) */
	conn_t          conns[MAX_CONNS];  /* server thread only */
} srv_t;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void
conn_close(conn_t *c)
{
	close(c->fd);
	c->fd = -1;
	c->in_len = 0;
	c->answering = false;
}

static bool
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* A chunked body at p (n bytes) decoded into out (cap bytes, NUL-ended):
 * returns the bytes it spans, 0 when not all in yet, or -1 when malformed
 * or too big. No trailers. */
static ssize_t
dechunk(const char *p, size_t n, char *out, size_t cap)
{
	size_t at = 0, o = 0;

	for (;;) {
		const char *nl = memchr(p + at, '\n', n - at);
		unsigned long k;
		char *e;

		if (nl == NULL)
			return 0;
		k = strtoul(p + at, &e, 16);
		if (e == p + at)
			return -1;
		at = (size_t)(nl - p) + 1;
		if (k == 0)
			return n - at >= 2 ? (ssize_t)(at + 2) : 0;
		if (n - at < k + 2)
			return 0;
		if (o + k >= cap)
			return -1;
		memcpy(out + o, p + at, k);
		o += k;
		out[o] = '\0';
		at += k + 2;
	}
}

/* A whole request in c->in? Takes it (keeps what follows) and starts its
 * answer. */
static void
conn_take_request(srv_t *s, conn_t *c)
{
	char *end, *cl;
	size_t head, body = 0, total;
	char dec[256] = "";
	bool chunked;
	unsigned n;

	if (c->answering || c->in_len == 0)
		return;
	c->in[c->in_len < sizeof(c->in) ? c->in_len : sizeof(c->in) - 1] = 0;
	end = strstr(c->in, "\r\n\r\n");
	if (end == NULL)
		return;
	head = (size_t)(end - c->in) + 4;
	cl = strstr(c->in, "\r\nContent-Length:");   /* curl's spelling */
	if (cl != NULL && cl < end)
		body = strtoul(cl + 17, NULL, 10);
	cl = strstr(c->in, "\r\nTransfer-Encoding: chunked\r\n");
	chunked = cl != NULL && cl < end;
	if (chunked) {
		ssize_t k = dechunk(c->in + head, c->in_len - head, dec,
		    sizeof(dec));

		if (k < 0) {
			conn_close(c);
			return;
		}
		if (k == 0)
			return;
		body = (size_t)k;
	} else if (body < sizeof(dec) && c->in_len >= head + body) {
		memcpy(dec, c->in + head, body);
		dec[body] = '\0';
	}
	total = head + body;
	if (total >= sizeof(c->in)) {   /* not this test's kind of request */
		conn_close(c);
		return;
	}
	if (c->in_len < total)
		return;
	memmove(c->in, c->in + total, c->in_len - total);
	c->in_len -= total;
	pthread_mutex_lock(&s->mu);
	n = s->nreq < s->nsteps ? s->nreq : s->nsteps - 1;
	c->step = s->steps[n];
	if (s->nreq < MAX_LOG)
		s->req_at[s->nreq] = now_ms();
	s->nreq++;
	s->last_chunked = chunked;
	memcpy(s->last_body, dec, sizeof(dec));
	pthread_mutex_unlock(&s->mu);
	c->req_ms = now_ms();
	c->pieces_sent = 0;
	c->answering = true;
}

/* Sends whatever of c's answer is due. */
static void
conn_answer(conn_t *c)
{
	const step_t *st = &c->step;
	unsigned pieces = st->pieces > 0 ? st->pieces : 1;
	uint64_t t = now_ms();
	char buf[8192];

	if (!c->answering || st->ttfb_ms == NEVER)
		return;
	while (c->pieces_sent < pieces &&
	    t >= c->req_ms + (uint64_t)st->ttfb_ms +
	    (uint64_t)c->pieces_sent * st->gap_ms) {
		size_t from = st->body_len * c->pieces_sent / pieces;
		size_t to = st->body_len * (c->pieces_sent + 1) / pieces;

		if (c->pieces_sent == 0) {
			int hl = snprintf(buf, sizeof(buf),
			    "HTTP/1.1 %u X\r\nContent-Length: %zu\r\n"
			    "ETag: \"e\"\r\n\r\n", st->status, st->body_len);

			if (!send_all(c->fd, buf, (size_t)hl)) {
				conn_close(c);
				return;
			}
		}
		if (to - from > sizeof(buf)) {   /* a script too big */
			conn_close(c);
			return;
		}
		for (size_t i = from; i < to; i++)
			buf[i - from] = (char)('a' + i % 26);
		if (st->cut > 0 && to > st->cut)
			to = from < st->cut ? st->cut : from;
		if (!send_all(c->fd, buf, to - from) ||
		    (st->cut > 0 && to == st->cut)) {
			conn_close(c);
			return;
		}
		c->pieces_sent++;
	}
	if (c->pieces_sent == pieces)
		c->answering = false;   /* keep-alive: the next request */
}

static void *
srv_main(void *arg)
{
	srv_t *s = arg;
	struct pollfd pf[MAX_CONNS + 1];
	conn_t *map[MAX_CONNS + 1];

	while (!atomic_load(&s->stop)) {
		nfds_t n = 0;

		pf[n].fd = s->lfd;
		pf[n].events = POLLIN;
		map[n++] = NULL;
		for (int i = 0; i < MAX_CONNS; i++) {
			if (s->conns[i].fd < 0)
				continue;
			pf[n].fd = s->conns[i].fd;
			pf[n].events = POLLIN;
			map[n++] = &s->conns[i];
		}
		if (poll(pf, n, 5) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			int fd = accept(s->lfd, NULL, NULL);

			for (int i = 0; fd >= 0 && i < MAX_CONNS; i++) {
				if (s->conns[i].fd < 0) {
					s->conns[i].fd = fd;
					fd = -1;
				}
			}
			if (fd >= 0)
				close(fd);     /* out of slots */
		}
		for (nfds_t i = 1; i < n; i++) {
			conn_t *c = map[i];
			ssize_t r;

			if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
				continue;
			r = recv(c->fd, c->in + c->in_len,
			    sizeof(c->in) - 1 - c->in_len, 0);
			if (r <= 0) {
				conn_close(c);
				continue;
			}
			c->in_len += (size_t)r;
		}
		for (int i = 0; i < MAX_CONNS; i++) {
			conn_t *c = &s->conns[i];

			if (c->fd < 0)
				continue;
			conn_take_request(s, c);
			conn_answer(c);
			if (c->fd >= 0)
				conn_take_request(s, c);   /* pipelined */
		}
	}
	return NULL;
}

/* Starts the server; its script is steps[0..n). */
static void
srv_start(srv_t *s, const step_t *steps, unsigned n)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	cr_assert(n > 0 && n <= MAX_STEPS);
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	memcpy(s->steps, steps, n * sizeof(*steps));
	s->nsteps = n;
	for (int i = 0; i < MAX_CONNS; i++)
		s->conns[i].fd = -1;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(s->lfd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(s->lfd, 64), 0);
	cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
	s->port = ntohs(sa.sin_port);
	atomic_init(&s->stop, false);
	cr_assert_eq(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void
srv_stop(srv_t *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	for (int i = 0; i < MAX_CONNS; i++) {
		if (s->conns[i].fd >= 0)
			conn_close(&s->conns[i]);
	}
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
}

static unsigned
srv_nreq(srv_t *s)
{
	unsigned n;

	pthread_mutex_lock(&s->mu);
	n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* ---- exchanges -------------------------------------------------------- */

typedef struct run_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
	uint64_t        done_ms;
} run_t;

typedef struct env_s {
	srv_t       srv;
	bc_loop_t  *loop;
	bc_kvlist_t hdrs;
	char        url[64];
	run_t       run;
	bc_xfer_t  *x;
	uint64_t    start_ms;
} env_t;

static env_t E;

static void
suite_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void
suite_fini(void)
{
	curl_global_cleanup();
}

TestSuite(upstream_xfer, .init = suite_init, .fini = suite_fini,
    .timeout = 60);

static void
on_done(bc_xfer_t *x, void *arg)
{
	run_t *r = arg;

	pthread_mutex_lock(&r->mu);
	r->done = true;
	r->done_ms = now_ms();
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void
env_start(const step_t *steps, unsigned n)
{
	pthread_condattr_t a;

	memset(&E, 0, sizeof(E));
	srv_start(&E.srv, steps, n);
	snprintf(E.url, sizeof(E.url), "http://127.0.0.1:%u/b/k",
	    (unsigned)E.srv.port);
	cr_assert_eq(bc_kv_add(&E.hdrs, "Host", "127.0.0.1"), 0);
	pthread_mutex_init(&E.run.mu, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&E.run.cv, &a);
	pthread_condattr_destroy(&a);
	E.loop = bc_xfer_loop_new();
	cr_assert_not_null(E.loop);
	cr_assert_eq(bc_loop_start(E.loop), 0);
}

static void
env_stop(void)
{
	if (E.x != NULL) {
		bc_xfer_detach(E.x);
		bc_xfer_unref(E.x);
	}
	bc_loop_stop(E.loop, bc_xfer_cancel_all, NULL);
	bc_loop_free(E.loop);
	srv_stop(&E.srv);
	bc_kv_fini(&E.hdrs);
	pthread_cond_destroy(&E.run.cv);
	pthread_mutex_destroy(&E.run.mu);
	memset(&E, 0, sizeof(E));
}

/* Options for an exchange: GET (body_len BC_XFER_NO_BODY) or PUT. */
static void
xfer_opts(bc_xfer_opts_t *op, uint64_t ttfb_ms, uint64_t deadline_ms,
    unsigned retries, uint64_t body_len)
{
	bc_xfer_opts_t o;

	memset(&o, 0, sizeof(o));
	o.method = body_len == BC_XFER_NO_BODY ? "GET" : "PUT";
	o.url = E.url;
	o.headers = &E.hdrs;
	o.body_len = body_len;
	o.retries = retries;
	o.connect_timeout_ms = 5000;
	o.stall_timeout_ms = 30000;
	o.ttfb_timeout_ms = ttfb_ms;
	o.deadline_ms = deadline_ms;
	o.collect_max = 1 << 20;
	o.on_done = on_done;
	o.done_arg = &E.run;
	*op = o;
}

static void
xfer_go(const bc_xfer_opts_t *o)
{
	E.start_ms = now_ms();
	E.x = bc_xfer_start(E.loop, o, NULL, NULL);
	cr_assert_not_null(E.x);
}

/* Starts an exchange: GET (body_len BC_XFER_NO_BODY) or PUT. */
static void
xfer_start(uint64_t ttfb_ms, uint64_t deadline_ms, unsigned retries,
    uint64_t body_len)
{
	bc_xfer_opts_t o;

	xfer_opts(&o, ttfb_ms, deadline_ms, retries, body_len);
	xfer_go(&o);
}

/* Waits for the exchange's end; returns its outcome (bc_xfer_error). */
static int
xfer_wait(void)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += GUARD_MS / 1000;
	pthread_mutex_lock(&E.run.mu);
	while (!E.run.done) {
		if (pthread_cond_timedwait(&E.run.cv, &E.run.mu, &dl) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&E.run.mu);
	cr_assert(E.run.done, "the exchange never ended");
	return bc_xfer_error(E.x);
}

/* ms from the exchange's start (or from t0) to its end */
static uint64_t
took_ms(uint64_t t0)
{
	return E.run.done_ms - (t0 != 0 ? t0 : E.start_ms);
}

/* Asserts the collected body is len bytes of the server's pattern. */
static void
check_body(size_t len)
{
	size_t got = 0;
	uint8_t *b = bc_xfer_take_body(E.x, &got);

	cr_assert_eq(got, len);
	for (size_t i = 0; i < got; i++)
		cr_assert_eq(b[i], (uint8_t)('a' + i % 26), "byte %zu", i);
	free(b);
}

static uint64_t
stat_now(bc_stat_t id)
{
	return bc_stats_get(id);
}

/* ---- TTFB --------------------------------------------------------------- */

/* An upstream that never answers: each attempt ends at the TTFB limit and
 * is retried; after 1 + retries attempts the exchange fails with
 * BC_ETIMEDOUT (counted once as an error and a timeout). */
LTest(upstream_xfer, ttfb_fails_each_attempt_then_the_exchange)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	uint64_t retries0 = stat_now(BC_STAT_upstream_retries);
	uint64_t timeouts0 = stat_now(BC_STAT_upstream_timeouts);
	uint64_t errors0 = stat_now(BC_STAT_upstream_errors);
	uint64_t at[3];
	int err;

	env_start(silent, 1);
	xfer_start(300, 0, 2, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_eq(srv_nreq(&E.srv), 3, "1 + 2 retries");
	/* 3 x 300 ms plus backoffs of 50-100 and 100-200 ms */
	cr_assert_geq(took_ms(0), 1000, "%llu ms", (unsigned long long)took_ms(0));
	cr_assert_lt(took_ms(0), 3000, "%llu ms", (unsigned long long)took_ms(0));
	pthread_mutex_lock(&E.srv.mu);
	memcpy(at, E.srv.req_at, sizeof(at));
	pthread_mutex_unlock(&E.srv.mu);
	for (int i = 1; i < 3; i++)
		cr_assert_geq(at[i] - at[i - 1], 300,
		    "attempt %d started before the previous one's limit", i);
	cr_assert_eq(stat_now(BC_STAT_upstream_retries), retries0 + 2);
	cr_assert_eq(stat_now(BC_STAT_upstream_timeouts), timeouts0 + 1);
	cr_assert_eq(stat_now(BC_STAT_upstream_errors), errors0 + 1);
	env_stop();
}

/* A first attempt that gets no answer, a second that does: the retry
 * succeeds with the whole body. */
LTest(upstream_xfer, ttfb_retry_gets_the_answer)
{
	static const step_t steps[] = {
		{ .ttfb_ms = NEVER },
		{ .ttfb_ms = 0, .status = 200, .body_len = 1000 },
	};
	int status = 0, err;
	const bc_kvlist_t *h;

	env_start(steps, 2);
	xfer_start(300, 5000, 3, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	cr_assert_eq(bc_xfer_headers(E.x, &status, &h), 0);
	cr_assert_eq(status, 200);
	check_body(1000);
	cr_assert_eq(srv_nreq(&E.srv), 2);
	cr_assert_geq(took_ms(0), 300);
	env_stop();
}

/* ---- the deadline ------------------------------------------------------- */

/* Without a TTFB limit the deadline fails the running attempt, and no
 * retry follows. */
LTest(upstream_xfer, deadline_fails_the_running_attempt)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	uint64_t retries0 = stat_now(BC_STAT_upstream_retries);
	int err;

	env_start(silent, 1);
	xfer_start(0, 700, 3, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_geq(took_ms(0), 695, "%llu ms", (unsigned long long)took_ms(0));
	cr_assert_lt(took_ms(0), 1500, "%llu ms", (unsigned long long)took_ms(0));
	sleep_ms(300);   /* no attempt after the end either */
	cr_assert_eq(srv_nreq(&E.srv), 1);
	cr_assert_eq(stat_now(BC_STAT_upstream_retries), retries0);
	env_stop();
}

/* TTFB 300 ms, deadline 1 s, retries plenty: attempts start at 0,
 * 350-400 and 750-900 ms; the third is cut by the deadline at 1 s, and
 * no fourth starts. */
LTest(upstream_xfer, deadline_stops_the_retries)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	uint64_t timeouts0 = stat_now(BC_STAT_upstream_timeouts);
	int err;

	env_start(silent, 1);
	xfer_start(300, 1000, 10, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_geq(took_ms(0), 995, "%llu ms", (unsigned long long)took_ms(0));
	cr_assert_lt(took_ms(0), 1800, "%llu ms", (unsigned long long)took_ms(0));
	sleep_ms(300);
	cr_assert_eq(srv_nreq(&E.srv), 3);
	cr_assert_eq(stat_now(BC_STAT_upstream_timeouts), timeouts0 + 1);
	env_stop();
}

/* An upstream that answers 503 at once, every time: backoffs grow until
 * the next one would reach the deadline, and the exchange then fails
 * with BC_ETIMEDOUT at once, long before its retries run out. */
LTest(upstream_xfer, deadline_bounds_5xx_retries)
{
	static const step_t busy[] = {
		{ .ttfb_ms = 0, .status = 503, .body_len = 10 },
	};
	unsigned n;
	int err;

	env_start(busy, 1);
	xfer_start(0, 800, 30, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_lt(took_ms(0), 1300, "%llu ms", (unsigned long long)took_ms(0));
	sleep_ms(300);
	n = srv_nreq(&E.srv);
	cr_assert(n >= 3 && n <= 7, "%u attempts", n);
	env_stop();
}

/* ---- once the headers are in -------------------------------------------- */

/* Headers at 100 ms, then a body in 5 pieces 250 ms apart (1.1 s): far
 * past both limits, and the exchange still succeeds. */
LTest(upstream_xfer, headers_in_time_disarm_both)
{
	static const step_t slow_body[] = {
		{ .ttfb_ms = 100, .status = 200, .body_len = 5000,
		  .pieces = 5, .gap_ms = 250 },
	};
	int err;

	env_start(slow_body, 1);
	xfer_start(300, 500, 3, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	check_body(5000);
	cr_assert_geq(took_ms(0), 1100);
	cr_assert_eq(srv_nreq(&E.srv), 1);
	env_stop();
}

/* 0 disables both: an answer after 600 ms comes through. */
LTest(upstream_xfer, zero_disables_both)
{
	static const step_t late[] = {
		{ .ttfb_ms = 600, .status = 200, .body_len = 10 },
	};
	int err;

	env_start(late, 1);
	xfer_start(0, 0, 3, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	check_body(10);
	cr_assert_eq(srv_nreq(&E.srv), 1);
	env_stop();
}

/* ---- requests with a body ----------------------------------------------- */

/* The client takes 700 ms to send its body, more than either limit: both
 * count from the body's end, so an answer 100 ms later is in time. */
LTest(upstream_xfer, body_upload_time_does_not_count)
{
	static const step_t ok[] = {
		{ .ttfb_ms = 100, .status = 200, .body_len = 2 },
	};
	int err;

	env_start(ok, 1);
	xfer_start(300, 400, 3, 10);
	cr_assert_eq(bc_xfer_write(E.x, "hello", 5), 5);
	sleep_ms(700);
	cr_assert_eq(bc_xfer_write(E.x, "world", 5), 5);
	bc_xfer_write_end(E.x);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	check_body(2);
	cr_assert_geq(took_ms(0), 800);
	env_stop();
}

/* No answer to a request with a body: it fails at the TTFB limit after
 * the body's end, and is not retried (its body is gone). */
LTest(upstream_xfer, body_request_times_out_without_retry)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	uint64_t t_end;
	int err;

	env_start(silent, 1);
	xfer_start(300, 2000, 3, 10);
	cr_assert_eq(bc_xfer_write(E.x, "hello", 5), 5);
	sleep_ms(500);
	cr_assert_eq(bc_xfer_write(E.x, "world", 5), 5);
	t_end = now_ms();
	bc_xfer_write_end(E.x);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_geq(took_ms(t_end), 295, "%llu ms",
	    (unsigned long long)took_ms(t_end));
	cr_assert_lt(took_ms(t_end), 1000, "%llu ms",
	    (unsigned long long)took_ms(t_end));
	sleep_ms(300);
	cr_assert_eq(srv_nreq(&E.srv), 1);
	env_stop();
}

/* ---- request bodies of unknown length ----------------------------------- */

/* A body of unknown length (BC_XFER_UNKNOWN_LEN: a client's chunked
 * upload) goes upstream chunked, whole, ending at bc_xfer_write_end(). */
LTest(upstream_xfer, unknown_length_body_goes_chunked)
{
	static const step_t ok[] = {
		{ .ttfb_ms = 0, .status = 200, .body_len = 2 },
	};
	int err;

	env_start(ok, 1);
	xfer_start(0, 0, 3, BC_XFER_UNKNOWN_LEN);
	cr_assert_eq(bc_xfer_write(E.x, "hello", 5), 5);
	sleep_ms(100);
	cr_assert_eq(bc_xfer_write(E.x, " chunked ", 9), 9);
	cr_assert_eq(bc_xfer_write(E.x, "world", 5), 5);
	bc_xfer_write_end(E.x);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	check_body(2);
	cr_assert_eq(srv_nreq(&E.srv), 1);
	pthread_mutex_lock(&E.srv.mu);
	cr_assert(E.srv.last_chunked, "sent with a Content-Length");
	cr_assert_str_eq(E.srv.last_body, "hello chunked world");
	pthread_mutex_unlock(&E.srv.mu);
	env_stop();
}

/* An empty body of unknown length is still a chunked PUT (a final chunk
 * only), not a bodiless request. */
LTest(upstream_xfer, unknown_length_empty_body)
{
	static const step_t ok[] = {
		{ .ttfb_ms = 0, .status = 200, .body_len = 0 },
	};
	int err;

	env_start(ok, 1);
	xfer_start(0, 0, 0, BC_XFER_UNKNOWN_LEN);
	bc_xfer_write_end(E.x);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	cr_assert_eq(srv_nreq(&E.srv), 1);
	pthread_mutex_lock(&E.srv.mu);
	cr_assert(E.srv.last_chunked);
	cr_assert_str_eq(E.srv.last_body, "");
	pthread_mutex_unlock(&E.srv.mu);
	env_stop();
}

/* ---- how exchanges end -------------------------------------------------- */

/* A 503 answered at once is retried (nothing was handed over yet); the
 * retry's answer is the exchange's. */
LTest(upstream_xfer, five_xx_is_retried)
{
	static const step_t steps[] = {
		{ .ttfb_ms = 0, .status = 503, .body_len = 10 },
		{ .ttfb_ms = 0, .status = 200, .body_len = 1000 },
	};
	int status = 0, err;
	const bc_kvlist_t *h;

	env_start(steps, 2);
	xfer_start(0, 0, 1, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, 0, "%s", bc_strerror(err));
	cr_assert_eq(bc_xfer_headers(E.x, &status, &h), 0);
	cr_assert_eq(status, 200);
	check_body(1000);
	cr_assert_eq(srv_nreq(&E.srv), 2);
	env_stop();
}

/* The connection breaks after the headers and part of the body: the
 * exchange fails with BC_EIO and is not retried (its headers were handed
 * over), whatever the retries. */
LTest(upstream_xfer, failure_after_headers_is_not_retried)
{
	static const step_t steps[] = {
		{ .ttfb_ms = 0, .status = 200, .body_len = 5000, .pieces = 5,
		  .cut = 1500 },
	};
	int status = 0, err;
	const bc_kvlist_t *h;

	env_start(steps, 1);
	xfer_start(0, 0, 2, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_EIO, "%s", bc_strerror(err));
	cr_assert_eq(bc_xfer_headers(E.x, &status, &h), 0);
	cr_assert_eq(status, 200);
	cr_assert_eq(srv_nreq(&E.srv), 1, "retried after the headers");
	env_stop();
}

/* Nobody listens: BC_EIO, each attempt a connect failure (retried). */
LTest(upstream_xfer, unreachable_upstream_fails_with_eio)
{
	static const step_t ok[] = { { .ttfb_ms = 0, .status = 200 } };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), err;
	uint64_t retries0 = stat_now(BC_STAT_upstream_retries);

	/* a port that was free a moment ago and has no listener */
	cr_assert_geq(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	env_start(ok, 1);
	snprintf(E.url, sizeof(E.url), "http://127.0.0.1:%u/b/k",
	    (unsigned)ntohs(sa.sin_port));
	xfer_start(0, 0, 1, BC_XFER_NO_BODY);
	err = xfer_wait();
	cr_assert_eq(err, BC_EIO, "%s", bc_strerror(err));
	cr_assert_eq(stat_now(BC_STAT_upstream_retries), retries0 + 1);
	cr_assert_eq(srv_nreq(&E.srv), 0);
	env_stop();
}

/* An upstream that takes the request and says nothing, without TTFB or
 * deadline: the stall limit (--upstream-timeout, whole seconds) fails it
 * with BC_ETIMEDOUT. */
LTest(upstream_xfer, stall_limit_fails_a_silent_upstream)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	bc_xfer_opts_t o;
	int err;

	env_start(silent, 1);
	xfer_opts(&o, 0, 0, 0, BC_XFER_NO_BODY);
	o.stall_timeout_ms = 1000;
	xfer_go(&o);
	err = xfer_wait();
	cr_assert_eq(err, BC_ETIMEDOUT, "%s", bc_strerror(err));
	cr_assert_geq(took_ms(0), 900, "%llu ms",
	    (unsigned long long)took_ms(0));
	cr_assert_lt(took_ms(0), 5000, "%llu ms",
	    (unsigned long long)took_ms(0));
	env_stop();
}

/* More body than collect_max: the exchange fails with BC_E2BIG (a cache
 * fill is never buffered past a chunk, whatever the upstream sends). */
LTest(upstream_xfer, collect_max_bounds_the_body)
{
	static const step_t big[] = {
		{ .ttfb_ms = 0, .status = 200, .body_len = 3000 },
	};
	bc_xfer_opts_t o;
	int err;

	env_start(big, 1);
	xfer_opts(&o, 0, 0, 0, BC_XFER_NO_BODY);
	o.collect_max = 1024;
	xfer_go(&o);
	err = xfer_wait();
	cr_assert_eq(err, BC_E2BIG, "%s", bc_strerror(err));
	env_stop();
}

/* Stopping the loop with an exchange waiting for its answer: cancel_all
 * ends it, on_done fires once, BC_ECANCELED. */
LTest(upstream_xfer, cancel_all_ends_a_running_exchange)
{
	static const step_t silent[] = { { .ttfb_ms = NEVER } };
	int err;

	env_start(silent, 1);
	xfer_start(0, 0, 3, BC_XFER_NO_BODY);
	for (int i = 0; i < 500 && srv_nreq(&E.srv) == 0; i++)
		sleep_ms(10);
	cr_assert_eq(srv_nreq(&E.srv), 1);
	bc_loop_stop(E.loop, bc_xfer_cancel_all, NULL);
	err = xfer_wait();
	cr_assert_eq(err, BC_ECANCELED, "%s", bc_strerror(err));
	env_stop();
}
