/*
 * upstream_xfer.c — a streamed upstream exchange (see upstream_xfer.h).
 *
 * Locking: x->mu guards everything both sides touch (buffers, flags,
 * response headers). Fields marked "loop" are touched by the loop thread
 * only. Lock order: x->mu, then whatever wake() takes; curl is never
 * called with x->mu held, since curl_easy_pause() may re-enter the
 * callbacks.
 *
 * Timers: x->timer is the backoff wait between attempts and, while an
 * attempt runs, its time limit: the earlier of the attempt's TTFB limit
 * (until its status line) and the exchange's deadline (until the final
 * headers). The two uses never overlap, so one handle (one close) does.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stats/stats.h"
#include "upstream/upstream_xfer.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"
#include "util/util_num.h"

#define RETRY_BASE_MS 100
#define RETRY_MAX_MS  2000
#define MAX_HEADER_BYTES (64 * 1024)

typedef struct ring_s {
	char  *buf;
	size_t cap, head, len;
} ring_t;

struct bc_xfer_s {
	pthread_mutex_t  mu;
	atomic_int       refs;
	bc_loop_t       *loop;

	/* immutable after start */
	char             method[16];
	char            *url;
	struct curl_slist *slist;
	uint64_t         body_len;
	unsigned         retries;
	uint64_t         connect_timeout_ms, stall_timeout_ms;
	uint64_t         ttfb_timeout_ms, deadline_ms;
	size_t           collect_max;
	bc_xfer_done_fn  on_done;
	void            *done_arg;
	bc_xfer_headers_fn on_headers;
	bc_xfer_data_fn  on_data;
	uint8_t         *sink;           /* loop: sink mode buffer */
	size_t           sink_cap, sink_len;

	/* loop */
	CURL            *easy;
	uv_timer_t       timer;
	unsigned         attempt;
	int              cur_status;
	size_t           header_bytes;
	bool             discarding;     /* retrying: drop this answer */
	uint64_t         attempt_ns;
	uint64_t         sent;           /* body bytes handed to curl */
	bool             req_sent;       /* the attempt's request is all out */
	bool             answering;      /* the attempt's status line came */
	bool             limits_off;     /* final headers: no TTFB, deadline */
	bool             limit_is_deadline;  /* what x->timer stands for */
	uint64_t         ttfb_at_ns;     /* answer must begin by; 0: none */
	uint64_t         deadline_at_ns; /* final headers by; 0: none (yet) */
	struct bc_xfer_s *prev, *next;   /* running exchanges */

	/* shared, under mu */
	ring_t           req, resp;
	bc_buf_t         body;           /* collect mode */
	uint64_t         elapsed_us;
	bool             req_end, read_paused, write_paused, unpause_queued;
	int              status;
	bc_kvlist_t      hdrs;
	bool             hdrs_done, body_done, cancelled;
	int              err;
	bool             client_waiting;
	bc_xfer_wake_fn  wake;
	void            *wake_arg;
};

static bc_xfer_t *running;   /* loop thread only */

/* ---- bounded ring buffers ---------------------------------------------- */

static size_t
ring_space(const ring_t *r)
{
	return BC_XFER_BUF - r->len;
}

static size_t
ring_put(ring_t *r, const void *p, size_t n)
{
	size_t tail, first;

	if (r->buf == NULL) {
		r->buf = malloc(BC_XFER_BUF);
		if (r->buf == NULL)
			return 0;
		r->cap = BC_XFER_BUF;
	}
	if (n > ring_space(r))
		n = ring_space(r);
	tail = (r->head + r->len) % r->cap;
	first = r->cap - tail < n ? r->cap - tail : n;
	memcpy(r->buf + tail, p, first);
	memcpy(r->buf, (const char *)p + first, n - first);
	r->len += n;
	return n;
}

static size_t
ring_get(ring_t *r, void *p, size_t n)
{
	size_t first;

	if (n > r->len)
		n = r->len;
	if (n == 0)
		return 0;
	first = r->cap - r->head < n ? r->cap - r->head : n;
	memcpy(p, r->buf + r->head, first);
	memcpy((char *)p + first, r->buf, n - first);
	r->head = (r->head + n) % r->cap;
	r->len -= n;
	return n;
}

/* ---- references and wakes ---------------------------------------------- */

static void
xfer_ref(bc_xfer_t *x)
{
	atomic_fetch_add_explicit(&x->refs, 1, memory_order_relaxed);
}

void
bc_xfer_unref(bc_xfer_t *x)
{
	int old;

	if (x == NULL)
		return;
	old = atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel);
	BC_CHECK(old > 0);
	if (old > 1)
		return;
	free(x->req.buf);
	free(x->resp.buf);
	bc_buf_fini(&x->body);
	bc_kv_fini(&x->hdrs);
	curl_slist_free_all(x->slist);
	free(x->url);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

/* x->mu held. */
static void
do_wake(bc_xfer_t *x)
{
	if (x->client_waiting && x->wake != NULL) {
		x->client_waiting = false;
		x->wake(x->wake_arg);
	}
}

static void
unpause_cb(bc_loop_t *loop, void *arg)
{
	bc_xfer_t *x = arg;

	pthread_mutex_lock(&x->mu);
	x->unpause_queued = false;
	pthread_mutex_unlock(&x->mu);
	if (x->easy != NULL)
		curl_easy_pause(x->easy, CURLPAUSE_CONT);
	bc_xfer_unref(x);
}

/* x->mu held: asks the loop to let curl move again. */
static void
do_unpause(bc_xfer_t *x)
{
	if (x->unpause_queued || x->body_done)
		return;
	xfer_ref(x);
	if (bc_loop_call(x->loop, unpause_cb, x) < 0) {
		atomic_fetch_sub_explicit(&x->refs, 1, memory_order_relaxed);
		return;
	}
	x->unpause_queued = true;
}

/* ---- time limits (loop thread) ----------------------------------------- */

static void on_limit(uv_timer_t *t);

/* Whole milliseconds from now until at_ns, rounded up; 0 when past. */
static uint64_t
ms_until(uint64_t at_ns, uint64_t now_ns)
{
	return at_ns > now_ns ? (at_ns - now_ns + 999999) / 1000000 : 0;
}

/* While an attempt runs: points x->timer at the earlier of the attempt's
 * TTFB limit (until its status line) and the exchange's deadline (until
 * the final headers), or stops it when neither applies. */
static void
arm_limit(bc_xfer_t *x)
{
	uint64_t at = 0;
	bool deadline = false;

	if (!x->limits_off) {
		if (x->ttfb_at_ns != 0 && !x->answering)
			at = x->ttfb_at_ns;
		if (x->deadline_at_ns != 0 && (at == 0 ||
		    x->deadline_at_ns <= at)) {
			at = x->deadline_at_ns;
			deadline = true;
		}
	}
	if (at == 0) {
		uv_timer_stop(&x->timer);
		return;
	}
	x->limit_is_deadline = deadline;
	/* timers count from the loop's cached time: bring it to now */
	uv_update_time(bc_loop_uv(x->loop));
	uv_timer_start(&x->timer, on_limit, ms_until(at, bc_mono_ns()), 0);
}

/* The attempt's request is wholly sent: its TTFB clock starts, and so
 * does the exchange's deadline if it has not yet (a request with a body
 * starts it at the end of the body). */
static void
request_sent(bc_xfer_t *x)
{
	uint64_t now = bc_mono_ns();

	if (x->req_sent)
		return;
	x->req_sent = true;
	if (x->ttfb_timeout_ms > 0)
		x->ttfb_at_ns = now + x->ttfb_timeout_ms * 1000000;
	if (x->deadline_ms > 0 && x->deadline_at_ns == 0)
		x->deadline_at_ns = now + x->deadline_ms * 1000000;
	arm_limit(x);
}

/* ---- curl callbacks (loop thread) -------------------------------------- */

static bool
retry_allowed(const bc_xfer_t *x)
{
	return x->body_len == BC_XFER_NO_BODY && x->attempt < x->retries &&
	    !x->cancelled;
}

static size_t
header_cb(char *buf, size_t size, size_t n, void *ud)
{
	bc_xfer_t *x = ud;
	size_t len = size * n, nl;
	const char *colon, *v, *end;
	bool final = false;

	x->header_bytes += len;
	if (x->header_bytes > MAX_HEADER_BYTES)
		return 0;
	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0 && !x->answering) {
		x->answering = true;    /* the TTFB limit is met */
		arm_limit(x);
	}
	pthread_mutex_lock(&x->mu);
	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		const char *sp = memchr(buf, ' ', len);
		uint64_t st = 0;

		if (sp == NULL || bc_parse_u64_prefix(sp + 1,
		    len - (size_t)(sp + 1 - buf), 10, 999, &st) != 3)
			st = 0;
		x->cur_status = (int)st;
		bc_kv_fini(&x->hdrs);
		bc_buf_reset(&x->body);
		x->discarding = false;
	} else if (len <= 2) {
		if (x->cur_status >= 200) {
			if ((x->cur_status == 500 || x->cur_status == 503) &&
			    retry_allowed(x)) {
				x->discarding = true;
			} else {
				x->status = x->cur_status;
				x->hdrs_done = true;
				final = true;
				bc_stats_upstream_latency((bc_mono_ns() -
				    x->attempt_ns) / 1000);
				do_wake(x);
			}
		}
	} else if (x->cur_status >= 200) {
		colon = memchr(buf, ':', len);
		end = buf + len;
		while (end > buf && (end[-1] == '\r' || end[-1] == '\n' ||
		    end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (colon != NULL && colon < end) {
			if (x->hdrs.n >= BC_XFER_MAX_HEADERS) {
				pthread_mutex_unlock(&x->mu);
				return 0;
			}
			v = colon + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			nl = (size_t)(colon - buf);
			bc_kv_addn(&x->hdrs, buf, nl, v, (size_t)(end - v));
		}
	}
	pthread_mutex_unlock(&x->mu);
	if (final) {            /* the body may take as long as it takes */
		x->limits_off = true;
		uv_timer_stop(&x->timer);
	}
	/* the headers no longer change: the callback reads them unlocked */
	if (final && x->on_headers != NULL)
		x->on_headers(x, x->done_arg, x->status, &x->hdrs);
	return len;
}

static size_t
write_cb(char *p, size_t size, size_t n, void *ud)
{
	bc_xfer_t *x = ud;
	size_t len = size * n;

	if (x->discarding)
		return len;
	pthread_mutex_lock(&x->mu);
	if (x->cancelled) {
		pthread_mutex_unlock(&x->mu);
		return 0;
	}
	if (x->sink != NULL) {      /* bounded by the caller's buffer */
		if (len > x->sink_cap - x->sink_len) {
			x->err = BC_E2BIG;
			pthread_mutex_unlock(&x->mu);
			return 0;
		}
		memcpy(x->sink + x->sink_len, p, len);
		x->sink_len += len;
		pthread_mutex_unlock(&x->mu);
		BC_STATS_ADD(upstream_bytes_in, len);
		if (x->on_data != NULL)
			x->on_data(x->done_arg, x->sink_len);
		return len;
	}
	if (x->collect_max > 0) {   /* bounded by the buffer's limit */
		int rv = bc_buf_append(&x->body, p, len);

		if (rv < 0)
			x->err = rv;
		pthread_mutex_unlock(&x->mu);
		if (rv < 0)
			return 0;
		BC_STATS_ADD(upstream_bytes_in, len);
		return len;
	}
	if (ring_space(&x->resp) < len) {
		x->write_paused = true;
		pthread_mutex_unlock(&x->mu);
		return CURL_WRITEFUNC_PAUSE;
	}
	if (ring_put(&x->resp, p, len) != len) {   /* out of memory */
		pthread_mutex_unlock(&x->mu);
		return 0;
	}
	do_wake(x);
	pthread_mutex_unlock(&x->mu);
	BC_STATS_ADD(upstream_bytes_in, len);
	return len;
}

static size_t
read_cb(char *p, size_t size, size_t n, void *ud)
{
	bc_xfer_t *x = ud;
	size_t got;

	pthread_mutex_lock(&x->mu);
	if (x->cancelled) {
		pthread_mutex_unlock(&x->mu);
		return CURL_READFUNC_ABORT;
	}
	got = ring_get(&x->req, p, size * n);
	if (got > 0) {
		do_wake(x);
		pthread_mutex_unlock(&x->mu);
		BC_STATS_ADD(upstream_bytes_out, got);
		x->sent += got;
		if (x->sent >= x->body_len)   /* the last byte is curl's */
			request_sent(x);
		return got;
	}
	if (x->req_end) {
		pthread_mutex_unlock(&x->mu);
		request_sent(x);
		return 0;
	}
	x->read_paused = true;
	pthread_mutex_unlock(&x->mu);
	return CURL_READFUNC_PAUSE;
}

/* ---- attempts (loop thread) -------------------------------------------- */

static void
on_timer_closed(uv_handle_t *h)
{
	bc_xfer_unref(h->data);
}

/* The loop is done with x: unlink it and drop the loop's reference. */
static void
finish(bc_xfer_t *x)
{
	if (x->prev != NULL)
		x->prev->next = x->next;
	else if (running == x)
		running = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
	uv_close((uv_handle_t *)&x->timer, on_timer_closed);
}

/* Marks x over with err (0: success) and wakes the client. */
static void
end(bc_xfer_t *x, int err)
{
	pthread_mutex_lock(&x->mu);
	x->body_done = true;
	if (x->err == 0)
		x->err = err;
	x->elapsed_us = (bc_mono_ns() - x->attempt_ns) / 1000;
	x->client_waiting = true;   /* wake even if nobody asked yet */
	do_wake(x);
	pthread_mutex_unlock(&x->mu);
	if (x->on_done != NULL)
		x->on_done(x, x->done_arg);
	finish(x);
}

static int
start_attempt(bc_xfer_t *x)
{
	CURL *e = curl_easy_init();
	long stall_s = (long)((x->stall_timeout_ms + 999) / 1000);

	if (e == NULL)
		return BC_ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, x->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	/* fewer, larger reads and write callbacks than curl's 16 KiB;
	 * under malloc's mmap threshold since it is allocated per handle */
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 60L * 1024);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->slist);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)x->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall_s > 0 ? stall_s : 1);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (strcmp(x->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(x->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		if (x->body_len == BC_XFER_NO_BODY || x->body_len == 0) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)0);
		} else {
			/* -1 (unknown): curl sends the body chunked */
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			    x->body_len == BC_XFER_UNKNOWN_LEN ? (curl_off_t)-1 :
			    (curl_off_t)x->body_len);
			curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
			curl_easy_setopt(e, CURLOPT_READDATA, x);
		}
	} else if (x->body_len != BC_XFER_NO_BODY) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
		    x->body_len == BC_XFER_UNKNOWN_LEN ? (curl_off_t)-1 :
		    (curl_off_t)x->body_len);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
		curl_easy_setopt(e, CURLOPT_READDATA, x);
		if (strcmp(x->method, "PUT") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->method);
	} else if (strcmp(x->method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->method);
	}
	x->easy = e;
	x->cur_status = 0;
	x->header_bytes = 0;
	x->discarding = false;
	x->sent = 0;
	x->req_sent = false;
	x->answering = false;
	x->ttfb_at_ns = 0;
	x->attempt_ns = bc_mono_ns();
	BC_STATS_INC(upstream_requests);
	if (curl_multi_add_handle(bc_loop_multi(x->loop), e) != CURLM_OK) {
		x->easy = NULL;
		curl_easy_cleanup(e);
		return BC_EIO;
	}
	/* curl does not say when a bodiless request is out: from now (on
	 * the first attempt, the exchange's deadline starts too) */
	if (x->body_len == BC_XFER_NO_BODY || x->body_len == 0)
		request_sent(x);
	return 0;
}

/* Starts the next attempt, or ends x when cancelled or when it cannot. */
static void
attempt_or_end(bc_xfer_t *x)
{
	int rv;

	if (x->cancelled) {
		end(x, BC_ECANCELED);
		return;
	}
	rv = start_attempt(x);
	if (rv < 0)
		end(x, rv);
}

static void end_timed_out(bc_xfer_t *x, const char *why);

static void
on_retry(uv_timer_t *t)
{
	bc_xfer_t *x = t->data;
	bool cancelled;

	pthread_mutex_lock(&x->mu);
	cancelled = x->cancelled;
	pthread_mutex_unlock(&x->mu);
	/* a busy loop may run this late: no attempt past the deadline */
	if (!cancelled && x->deadline_at_ns != 0 &&
	    bc_mono_ns() >= x->deadline_at_ns)
		end_timed_out(x, "no answer within upstream-deadline");
	else
		attempt_or_end(x);
}

static bool
transport_retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

/* Schedules the next attempt after a jittered exponential backoff.
 * Returns false, scheduling nothing, when the exchange's deadline would
 * pass before that attempt could start. */
static bool
retry_later(bc_xfer_t *x, const char *why)
{
	uint64_t ms = RETRY_BASE_MS << (x->attempt < 5 ? x->attempt : 5);

	if (ms > RETRY_MAX_MS)
		ms = RETRY_MAX_MS;
	ms = ms / 2 + (uint64_t)random() % (ms / 2 + 1);  /* jitter */
	if (x->deadline_at_ns != 0 &&
	    ms_until(x->deadline_at_ns, bc_mono_ns()) <= ms)
		return false;
	x->attempt++;
	BC_STATS_INC(upstream_retries);
	BC_DEBUG("upstream %s %s: retry %u in %llu ms (%s)", x->method,
	    x->url, x->attempt, (unsigned long long)ms, why);
	uv_timer_start(&x->timer, on_retry, ms, 0);
	return true;
}

/* Ends x, which ran out of time (why says which limit). */
static void
end_timed_out(bc_xfer_t *x, const char *why)
{
	BC_STATS_INC(upstream_errors);
	BC_STATS_INC(upstream_timeouts);
	BC_WARN("upstream %s %s: %s (attempt %u)", x->method, x->url, why,
	    x->attempt + 1);
	end(x, BC_ETIMEDOUT);
}

/* x->timer while an attempt runs: its TTFB limit or the deadline passed.
 * The attempt is dropped; a retryable request whose deadline leaves room
 * tries again. */
static void
on_limit(uv_timer_t *t)
{
	bc_xfer_t *x = t->data;
	bool cancelled, retry;

	BC_CHECK(x->easy != NULL);
	curl_multi_remove_handle(bc_loop_multi(x->loop), x->easy);
	curl_easy_cleanup(x->easy);
	x->easy = NULL;
	pthread_mutex_lock(&x->mu);
	cancelled = x->cancelled;
	retry = !x->limit_is_deadline && retry_allowed(x);
	pthread_mutex_unlock(&x->mu);
	if (cancelled)
		end(x, BC_ECANCELED);
	else if (!retry)
		end_timed_out(x, x->limit_is_deadline ?
		    "no answer within upstream-deadline" :
		    "no answer within upstream-ttfb-timeout");
	else if (!retry_later(x, "no answer within upstream-ttfb-timeout"))
		end_timed_out(x, "no time left within upstream-deadline for a "
		    "retry");
}

static void
on_done(CURL *easy, CURLcode rc)
{
	bc_xfer_t *x = NULL;
	bool retry, cancelled;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	curl_multi_remove_handle(bc_loop_multi(x->loop), easy);
	curl_easy_cleanup(easy);
	x->easy = NULL;
	uv_timer_stop(&x->timer);   /* the attempt's time limit */

	pthread_mutex_lock(&x->mu);
	cancelled = x->cancelled;
	retry = !cancelled && (x->discarding || (rc != CURLE_OK &&
	    !x->hdrs_done && transport_retryable(rc) && retry_allowed(x)));
	pthread_mutex_unlock(&x->mu);
	if (retry) {
		if (retry_later(x, rc == CURLE_OK ? "5xx" :
		    curl_easy_strerror(rc)))
			return;
		end_timed_out(x, "no time left within upstream-deadline for a "
		    "retry");
		return;
	}
	if (rc != CURLE_OK && !cancelled) {
		BC_STATS_INC(upstream_errors);
		if (rc == CURLE_OPERATION_TIMEDOUT)
			BC_STATS_INC(upstream_timeouts);
		BC_WARN("upstream %s %s: %s", x->method, x->url,
		    curl_easy_strerror(rc));
	}
	end(x, rc == CURLE_OK ? 0 : rc == CURLE_OPERATION_TIMEDOUT ?
	    BC_ETIMEDOUT : cancelled ? BC_ECANCELED : BC_EIO);
}

void
bc_xfer_opts_init(bc_xfer_opts_t *o, const bc_config_t *cfg)
{
	memset(o, 0, sizeof(*o));
	o->retries = cfg->retries;
	o->connect_timeout_ms = cfg->connect_timeout;
	o->stall_timeout_ms = cfg->upstream_timeout;
	o->ttfb_timeout_ms = cfg->upstream_ttfb_timeout;
	o->deadline_ms = cfg->upstream_deadline;
}

bc_loop_t *
bc_xfer_loop_new(void)
{
	return bc_loop_new(on_done);
}

static void
start_cb(bc_loop_t *loop, void *arg)
{
	bc_xfer_t *x = arg;   /* carries the loop's reference */

	uv_timer_init(bc_loop_uv(loop), &x->timer);
	x->timer.data = x;
	x->next = running;
	if (running != NULL)
		running->prev = x;
	running = x;
	attempt_or_end(x);
}

static void
cancel_one(bc_xfer_t *x)
{
	if (x->easy != NULL) {
		curl_multi_remove_handle(bc_loop_multi(x->loop), x->easy);
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
		end(x, BC_ECANCELED);
	} else if (uv_is_active((uv_handle_t *)&x->timer)) {
		uv_timer_stop(&x->timer);
		end(x, BC_ECANCELED);
	}
}

static void
cancel_cb(bc_loop_t *loop, void *arg)
{
	bc_xfer_t *x = arg;

	cancel_one(x);
	bc_xfer_unref(x);
}

void
bc_xfer_cancel_all(bc_loop_t *loop, void *unused)
{
	while (running != NULL) {
		bc_xfer_t *x = running;

		pthread_mutex_lock(&x->mu);
		x->cancelled = true;
		pthread_mutex_unlock(&x->mu);
		cancel_one(x);
		if (running == x)   /* neither running nor waiting to retry */
			end(x, BC_ECANCELED);
	}
}

/* ---- client side ------------------------------------------------------- */

static struct curl_slist *
build_slist(const bc_kvlist_t *h)
{
	struct curl_slist *sl = NULL, *t;
	bc_buf_t line;
	bool has_ctype = false;

	bc_buf_init(&line, 0);
	for (size_t i = 0; i < h->n; i++) {
		bc_buf_reset(&line);
		if (h->v[i].value[0] == '\0')
			bc_buf_printf(&line, "%s;", h->v[i].name);
		else
			bc_buf_printf(&line, "%s: %s", h->v[i].name,
			    h->v[i].value);
		if (strcasecmp(h->v[i].name, "Content-Type") == 0)
			has_ctype = true;
		t = curl_slist_append(sl, bc_buf_str(&line));
		if (t == NULL)
			goto fail;
		sl = t;
	}
	/* curl's own defaults would change what the client asked for */
	t = curl_slist_append(sl, "Expect:");
	if (t == NULL)
		goto fail;
	sl = t;
	if (!has_ctype) {
		t = curl_slist_append(sl, "Content-Type:");
		if (t == NULL)
			goto fail;
		sl = t;
	}
	bc_buf_fini(&line);
	return sl;
fail:
	bc_buf_fini(&line);
	curl_slist_free_all(sl);
	return NULL;
}

bc_xfer_t *
bc_xfer_start(bc_loop_t *loop, const bc_xfer_opts_t *o,
    bc_xfer_wake_fn wake, void *wake_arg)
{
	bc_xfer_t *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return NULL;
	pthread_mutex_init(&x->mu, NULL);
	atomic_init(&x->refs, 2);   /* the client's and the loop's */
	x->loop = loop;
	snprintf(x->method, sizeof(x->method), "%s", o->method);
	x->url = strdup(o->url);
	x->slist = build_slist(o->headers);
	x->body_len = o->body_len;
	x->retries = o->retries;
	x->connect_timeout_ms = o->connect_timeout_ms;
	x->stall_timeout_ms = o->stall_timeout_ms;
	x->ttfb_timeout_ms = o->ttfb_timeout_ms;
	x->deadline_ms = o->deadline_ms;
	x->wake = wake;
	x->wake_arg = wake_arg;
	x->collect_max = o->collect_max;
	x->on_done = o->on_done;
	x->done_arg = o->done_arg;
	x->on_headers = o->on_headers;
	x->on_data = o->on_data;
	bc_buf_init(&x->body, o->collect_max);
	if (x->url == NULL || x->slist == NULL ||
	    bc_loop_call(loop, start_cb, x) < 0) {
		atomic_store(&x->refs, 1);
		bc_xfer_unref(x);
		return NULL;
	}
	return x;
}

ssize_t
bc_xfer_write(bc_xfer_t *x, const void *p, size_t len)
{
	size_t n;

	pthread_mutex_lock(&x->mu);
	if (x->body_done || x->cancelled) {
		int err = x->err != 0 ? x->err : BC_ECANCELED;

		pthread_mutex_unlock(&x->mu);
		return err;
	}
	n = ring_put(&x->req, p, len);
	if (n < len)
		x->client_waiting = true;
	if (n > 0 && x->read_paused) {
		x->read_paused = false;
		do_unpause(x);
	}
	pthread_mutex_unlock(&x->mu);
	return (ssize_t)n;
}

void
bc_xfer_write_end(bc_xfer_t *x)
{
	pthread_mutex_lock(&x->mu);
	x->req_end = true;
	if (x->read_paused) {
		x->read_paused = false;
		do_unpause(x);
	}
	pthread_mutex_unlock(&x->mu);
}

int
bc_xfer_headers(bc_xfer_t *x, int *status, const bc_kvlist_t **headers)
{
	int rv;

	pthread_mutex_lock(&x->mu);
	if (x->hdrs_done) {
		*status = x->status;
		*headers = &x->hdrs;
		rv = 0;
	} else if (x->body_done) {
		rv = x->err != 0 ? x->err : BC_EIO;
	} else {
		x->client_waiting = true;
		rv = BC_EAGAIN;
	}
	pthread_mutex_unlock(&x->mu);
	return rv;
}

ssize_t
bc_xfer_read(bc_xfer_t *x, void *buf, size_t max)
{
	ssize_t rv;
	size_t n;

	pthread_mutex_lock(&x->mu);
	n = ring_get(&x->resp, buf, max);
	if (n > 0) {
		rv = (ssize_t)n;
		if (x->write_paused && ring_space(&x->resp) >= BC_XFER_BUF / 2) {
			x->write_paused = false;
			do_unpause(x);
		}
	} else if (x->body_done) {
		rv = x->err;
	} else {
		x->client_waiting = true;
		rv = BC_EAGAIN;
	}
	pthread_mutex_unlock(&x->mu);
	return rv;
}

uint8_t *
bc_xfer_take_body(bc_xfer_t *x, size_t *len)
{
	uint8_t *p;

	pthread_mutex_lock(&x->mu);
	*len = x->body.len;
	p = x->body.len > 0 ? (uint8_t *)bc_buf_steal(&x->body) : NULL;
	pthread_mutex_unlock(&x->mu);
	return p;
}

void
bc_xfer_set_sink(bc_xfer_t *x, uint8_t *buf, size_t cap)
{
	pthread_mutex_lock(&x->mu);
	x->sink = buf;
	x->sink_cap = cap;
	x->sink_len = 0;
	pthread_mutex_unlock(&x->mu);
}

int
bc_xfer_error(bc_xfer_t *x)
{
	int rv;

	pthread_mutex_lock(&x->mu);
	rv = x->body_done ? x->err : BC_EAGAIN;
	pthread_mutex_unlock(&x->mu);
	return rv;
}

uint64_t
bc_xfer_elapsed_us(const bc_xfer_t *x)
{
	return x->elapsed_us;
}

void
bc_xfer_detach(bc_xfer_t *x)
{
	pthread_mutex_lock(&x->mu);
	x->wake = NULL;
	x->client_waiting = false;
	if (!x->body_done && !x->cancelled) {
		x->cancelled = true;
		xfer_ref(x);
		if (bc_loop_call(x->loop, cancel_cb, x) < 0)
			atomic_fetch_sub_explicit(&x->refs, 1,
			    memory_order_relaxed);
	}
	pthread_mutex_unlock(&x->mu);
}
