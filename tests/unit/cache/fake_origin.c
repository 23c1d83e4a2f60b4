/*
 * fake_origin.c — the in-process origin of the unit tests (see
 * fake_origin.h).
 *
 * Locking: fo->mu guards the objects, knobs, log and every exchange's
 * fields. Callbacks and wakes run with it released (a cache calls fetch()
 * with its own lock held and takes that lock in its callbacks: the order
 * is cache lock, then fo->mu), bracketed by in_cb so that release() can
 * wait them out.
 *
 * An exchange is a small state machine driven by steps on the loop
 * thread (bc_loop_call): ASK (held while the gate is closed; then
 * answered) → BODY (one piece per step; held at its body hold while the
 * body gate is closed) → ended. References: the starter's (until
 * release), the machine's (until it ended) and one per pending step; the
 * exchange is freed when none is left.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fake_origin.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define DEFAULT_PIECE 4096
#define DEFAULT_LM    "Wed, 21 Oct 2015 07:28:00 GMT"

typedef struct fobj_s {
	struct fobj_s *next;
	char          *bucket, *key;
	char          *version;     /* NULL: the current version */
	uint8_t       *data;
	size_t         size;
	char           etag[132];
	char           last_modified[64];
	bc_kvlist_t    meta;
} fobj_t;

typedef enum fx_state_e { FX_ASK, FX_BODY } fx_state_t;

typedef struct fx_s {
	bc_exchange_t   base;            /* first */
	fake_origin_t  *fo;
	struct fx_s    *lprev, *lnext;   /* fo->live, until freed */
	struct fx_s    *pnext;           /* fo->parked */
	int             refs;
	fx_state_t      state;
	bool            released, ended, parked, body_parked, past_hold;
	bool            quiet;           /* counted out of fo->active */
	bool            in_cb;
	pthread_t       cb_thread;
	int             abort_err;
	fake_req_t      req;
	/* push */
	bc_exchange_headers_fn on_headers;
	bc_exchange_data_fn    on_data;
	bc_exchange_done_fn    on_done;
	void           *arg;
	size_t          collect_max;
	uint8_t        *sink;
	size_t          cap;
	uint8_t        *coll;
	size_t          ncoll;
	/* pull */
	bc_exchange_wake_fn wake;
	void           *wake_arg;
	bool            want_wake;
	size_t          rd;
	/* the answer */
	int             head_rv;         /* BC_EAGAIN until the headers */
	int             err;             /* once ended */
	int             status;
	bc_kvlist_t     h;
	uint8_t        *body;
	size_t          len;             /* body bytes to send */
	size_t          sent;
	size_t          cut, hold, piece;
	int             cut_err;
	uint64_t        t0, t1;
} fx_t;

struct fake_origin_s {
	bc_origin_t      base;           /* first */
	bc_loop_t       *loop;
	pthread_mutex_t  mu;
	pthread_cond_t   cv;
	fobj_t          *objs;
	fx_t            *live;
	fx_t            *parked;
	unsigned         nx;             /* exchanges not freed */
	unsigned         active;         /* exchanges not yet quiet */
	fake_req_t      *log;
	unsigned         nlog, log_cap;
	/* knobs */
	bool             knob[FAKE_DENY_UNSIGNED + 1];
	unsigned         fail_n;
	int              fail_status, fail_err;
	unsigned         refuse_n;
	size_t           cut;
	int              cut_err;
	size_t           piece;
	bool             gate;
	unsigned         held;
	size_t           hold_body;
	bool             body_gate;
	unsigned         body_held;
	/* relays: answered by relay_fn (NULL: refused) */
	fake_relay_fn    relay_fn;
	void            *relay_arg;
	unsigned         nrelays;
};

static void step(bc_loop_t *l, void *arg);

/* ---- helpers ------------------------------------------------------------ */

static void
deadline_in(struct timespec *ts, unsigned ms)
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
copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src != NULL ? src : "");
}

/* version NULL or "": the current version. */
static fobj_t *
obj_find(fake_origin_t *fo, const char *bucket, const char *key,
    const char *version)
{
	if (version != NULL && version[0] == '\0')
		version = NULL;
	for (fobj_t *o = fo->objs; o != NULL; o = o->next)
		if (strcmp(o->bucket, bucket) == 0 &&
		    strcmp(o->key, key) == 0 && (version == NULL ?
		    o->version == NULL : o->version != NULL &&
		    strcmp(o->version, version) == 0))
			return o;
	return NULL;
}

/* fo->mu held. */
static void
obj_unlink(fake_origin_t *fo, fobj_t *o)
{
	for (fobj_t **pp = &fo->objs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
}

static void
obj_free(fobj_t *o)
{
	free(o->bucket);
	free(o->key);
	free(o->version);
	free(o->data);
	bc_kv_fini(&o->meta);
	free(o);
}

/* S3 compares quoted ETags; "*" matches any. */
static bool
etag_match(const char *cond, const char *etag)
{
	return strcmp(cond, "*") == 0 || strcmp(cond, etag) == 0;
}

/* fo->mu held: frees x when no reference is left. */
static void
fx_unref(fx_t *x)
{
	fake_origin_t *fo = x->fo;

	if (--x->refs > 0)
		return;
	if (x->refs < 0)
		abort();
	if (x->lprev != NULL)
		x->lprev->lnext = x->lnext;
	else
		fo->live = x->lnext;
	if (x->lnext != NULL)
		x->lnext->lprev = x->lprev;
	fo->nx--;
	bc_kv_fini(&x->h);
	free(x->body);
	free(x->coll);
	free(x);
	pthread_cond_broadcast(&fo->cv);
}

/* fo->mu held: x no longer counts as active (fake_origin_wait_quiet). */
static void
fx_quiet(fx_t *x)
{
	if (x->quiet)
		return;
	x->quiet = true;
	x->fo->active--;
	pthread_cond_broadcast(&x->fo->cv);
}

/* fo->mu held: takes x off the parked list. */
static void
fx_unpark(fx_t *x)
{
	fake_origin_t *fo = x->fo;

	if (!x->parked)
		return;
	for (fx_t **pp = &fo->parked; *pp != NULL; pp = &(*pp)->pnext) {
		if (*pp == x) {
			*pp = x->pnext;
			break;
		}
	}
	x->pnext = NULL;
	x->parked = false;
	if (x->body_parked)
		fo->body_held--;
	else
		fo->held--;
	x->body_parked = false;
	pthread_cond_broadcast(&fo->cv);
}

/* fo->mu held: parks x at the gate (body: the body gate). */
static void
fx_park(fx_t *x, bool body)
{
	fake_origin_t *fo = x->fo;

	x->parked = true;
	x->body_parked = body;
	x->pnext = fo->parked;
	fo->parked = x;
	if (body)
		fo->body_held++;
	else
		fo->held++;
	pthread_cond_broadcast(&fo->cv);
}

/* fo->mu held: runs a step of x on the loop. Returns false when the loop
 * is stopping (x stays as it is: cancel_all or the free end it). */
static bool
fx_schedule(fx_t *x)
{
	x->refs++;
	if (bc_loop_call(x->fo->loop, step, x) < 0) {
		x->refs--;
		return false;
	}
	return true;
}

/* fo->mu held, to be followed by cb_end(): x is in a callback. */
static void
cb_begin(fx_t *x)
{
	x->in_cb = true;
	x->cb_thread = pthread_self();
	pthread_mutex_unlock(&x->fo->mu);
}

static void
cb_end(fx_t *x)
{
	pthread_mutex_lock(&x->fo->mu);
	x->in_cb = false;
	pthread_cond_broadcast(&x->fo->cv);
}

/* fo->mu held: a pull reader waits for progress: wake it. */
static void
fx_wake(fx_t *x)
{
	if (x->on_done != NULL || !x->want_wake || x->released ||
	    x->wake == NULL)
		return;
	x->want_wake = false;
	cb_begin(x);
	x->wake(x->wake_arg);
	cb_end(x);
}

/* fo->mu held, loop thread: x ends with err (0: the whole body came). Its
 * machine reference goes; on_done (push) or a wake (pull) tells the
 * starter, unless it released x. The caller holds a reference. */
static void
fx_end(fx_t *x, int err)
{
	if (x->ended)
		return;
	fx_unpark(x);
	x->ended = true;
	x->err = err;
	if (x->head_rv == BC_EAGAIN)
		x->head_rv = err < 0 ? err : BC_EPROTO;
	x->t1 = bc_mono_ns();
	if (!x->released) {
		if (x->on_done != NULL) {
			cb_begin(x);
			x->on_done(&x->base, x->arg);
			cb_end(x);
		} else {
			fx_wake(x);
		}
	}
	fx_quiet(x);
	fx_unref(x);
}

/* ---- answers ------------------------------------------------------------ */

static const char *
error_code(int status)
{
	switch (status) {
	case 503: return "SlowDown";
	case 404: return "NoSuchKey";
	case 403: return "AccessDenied";
	case 412: return "PreconditionFailed";
	case 416: return "InvalidRange";
	default:  return "InternalError";
	}
}

/* fo->mu held: an error answer with S3's XML body (none for HEAD). */
static void
answer_error(fx_t *x, int status)
{
	char buf[512];
	int n;

	x->status = status;
	if (strcmp(x->req.method, "HEAD") == 0)
		return;
	n = snprintf(buf, sizeof(buf), "<?xml version=\"1.0\" encoding="
	    "\"UTF-8\"?>\n<Error><Code>%s</Code><Message>fake</Message>"
	    "<Key>%s</Key><RequestId>FAKE0123</RequestId></Error>",
	    error_code(status), x->req.key);
	x->body = malloc((size_t)n);
	if (x->body == NULL)
		abort();
	memcpy(x->body, buf, (size_t)n);
	x->len = (size_t)n;
	bc_kv_add(&x->h, "Content-Type", "application/xml");
}

/* fo->mu held: x's body is bytes first..first+n-1 of o. */
static void
answer_body(fx_t *x, const fobj_t *o, uint64_t first, size_t n)
{
	x->body = malloc(n + 1);
	if (x->body == NULL)
		abort();
	if (n > 0)
		memcpy(x->body, o->data + first, n);
	x->len = n;
}

/*
 * fo->mu held: makes x's answer as S3 would from the object and knobs.
 * Returns 0, or the transport error to end x with (no answer).
 */
static int
answer(fake_origin_t *fo, fx_t *x)
{
	const fake_req_t *q = &x->req;
	fobj_t *o = obj_find(fo, q->bucket, q->key, q->version);
	bool head = strcmp(q->method, "HEAD") == 0, obj_headers = false;
	bool ranged = q->first != BC_FETCH_WHOLE && !head &&
	    !fo->knob[FAKE_IGNORE_RANGE];
	bool im_fails = q->if_match[0] != '\0' && o != NULL &&
	    !fo->knob[FAKE_IGNORE_IF_MATCH] && !etag_match(q->if_match,
	    o->etag);
	char v[96];

	if (fo->fail_n > 0) {
		fo->fail_n--;
		if (fo->fail_status == 0)
			return fo->fail_err != 0 ? fo->fail_err : BC_EIO;
		answer_error(x, fo->fail_status);
	} else if (fo->knob[FAKE_DENY_UNSIGNED] && q->anon) {
		answer_error(x, 403);
	} else if (o == NULL) {
		answer_error(x, 404);
	} else if (im_fails) {
		answer_error(x, 412);
		obj_headers = true;
	} else if (q->if_none_match[0] != '\0' &&
	    etag_match(q->if_none_match, o->etag)) {
		x->status = 304;
		obj_headers = true;
	} else if (head) {
		x->status = 200;
		obj_headers = true;
		if (!fo->knob[FAKE_HEAD_NO_LENGTH]) {
			snprintf(v, sizeof(v), "%zu", o->size);
			bc_kv_add(&x->h, "Content-Length", v);
		}
	} else if (ranged && q->first >= o->size) {
		answer_error(x, 416);
		snprintf(v, sizeof(v), "bytes */%zu", o->size);
		bc_kv_add(&x->h, "Content-Range", v);
		obj_headers = true;
	} else if (ranged) {
		uint64_t last = q->last >= o->size ? o->size - 1 : q->last;
		size_t n = (size_t)(last - q->first + 1);

		if (fo->knob[FAKE_SHORT_BODY])
			n--;
		x->status = 206;
		answer_body(x, o, q->first, n);
		snprintf(v, sizeof(v), "bytes %" PRIu64 "-%" PRIu64 "/%zu",
		    q->first, last, o->size);
		bc_kv_add(&x->h, "Content-Range", v);
		obj_headers = true;
	} else {
		x->status = 200;
		answer_body(x, o, 0, o->size);
		obj_headers = true;
	}
	if (x->body != NULL && !head) {
		snprintf(v, sizeof(v), "%zu", x->len);
		bc_kv_add(&x->h, "Content-Length", v);
	}
	if (obj_headers) {
		if (!fo->knob[FAKE_NO_ETAG])
			bc_kv_add(&x->h, "ETag", o->etag);
		if (x->status != 412 && x->status != 416)
			bc_kv_add(&x->h, "Last-Modified", o->last_modified);
		if (x->status == 200 || x->status == 206) {
			bc_kv_add(&x->h, "Accept-Ranges", "bytes");
			for (size_t i = 0; i < o->meta.n; i++)
				bc_kv_add(&x->h, o->meta.v[i].name,
				    o->meta.v[i].value);
		}
	}
	bc_kv_add(&x->h, "Date", "Wed, 21 Oct 2015 07:30:00 GMT");
	bc_kv_add(&x->h, "x-amz-request-id", "FAKE0123");
	bc_kv_add(&x->h, "x-amz-id-2", "fake/id2");
	bc_kv_add(&x->h, "Server", "AmazonS3");
	x->piece = fo->piece;
	if (!head && fo->cut > 0 && fo->cut < x->len) {
		x->cut = fo->cut;
		x->cut_err = fo->cut_err != 0 ? fo->cut_err : BC_EIO;
	}
	if (!head && fo->hold_body > 0 && fo->hold_body < x->len)
		x->hold = fo->hold_body;
	return 0;
}

/* ---- the machine (loop thread) ------------------------------------------ */

/* fo->mu held: one piece of x's body, or its end. Returns false when x
 * ended or waits at the body gate. */
static bool
body_piece(fake_origin_t *fo, fx_t *x)
{
	size_t n;

	if (x->sent == x->len) {
		fx_end(x, 0);
		return false;
	}
	if (x->cut > 0 && x->sent == x->cut) {
		fx_end(x, x->cut_err);
		return false;
	}
	if (x->hold > 0 && !x->past_hold && x->sent == x->hold) {
		if (fo->body_gate) {
			fx_park(x, true);
			return false;
		}
		x->past_hold = true;
	}
	n = x->len - x->sent;
	if (n > x->piece)
		n = x->piece;
	if (x->cut > 0 && x->cut - x->sent < n)
		n = x->cut - x->sent;
	if (x->hold > 0 && !x->past_hold && x->hold - x->sent < n)
		n = x->hold - x->sent;
	if (x->on_done == NULL) {            /* pull: readable now */
		x->sent += n;
		fx_wake(x);
		return !x->ended;
	}
	if (x->sink != NULL) {
		if (x->sent + n > x->cap) {
			fx_end(x, BC_E2BIG);
			return false;
		}
		memcpy(x->sink + x->sent, x->body + x->sent, n);
	} else {
		uint8_t *p;

		if (x->ncoll + n > x->collect_max) {
			fx_end(x, BC_E2BIG);
			return false;
		}
		p = realloc(x->coll, x->ncoll + n);
		if (p == NULL)
			abort();
		x->coll = p;
		memcpy(x->coll + x->ncoll, x->body + x->sent, n);
		x->ncoll += n;
	}
	x->sent += n;
	if (x->sink != NULL && x->on_data != NULL && !x->released) {
		size_t total = x->sent;

		cb_begin(x);
		x->on_data(x->arg, total);
		cb_end(x);
	}
	return !x->ended;
}

static void
step(bc_loop_t *l, void *arg)
{
	fx_t *x = arg;
	fake_origin_t *fo = x->fo;
	int rv;

	(void)l;
	pthread_mutex_lock(&fo->mu);
	if (x->ended || x->parked)
		goto out;
	if (x->released) {
		fx_end(x, BC_ECANCELED);
		goto out;
	}
	if (x->abort_err != 0) {
		fx_end(x, x->abort_err);
		goto out;
	}
	if (x->state == FX_ASK) {
		if (fo->gate) {
			fx_park(x, false);
			goto out;
		}
		rv = answer(fo, x);
		if (rv < 0) {
			fx_end(x, rv);
			goto out;
		}
		x->state = FX_BODY;
		x->head_rv = 0;
		if (x->on_headers != NULL && !x->released) {
			cb_begin(x);
			x->on_headers(&x->base, x->arg, x->status, &x->h);
			cb_end(x);
		} else {
			fx_wake(x);
		}
	} else if (!body_piece(fo, x)) {
		goto out;
	}
	if (!x->ended && !fx_schedule(x))
		x->abort_err = BC_ECANCELED;   /* cancel_all ends it */
out:
	fx_unref(x);
	pthread_mutex_unlock(&fo->mu);
}

/* ---- exchange ops -------------------------------------------------------- */

static ssize_t
fx_write(bc_exchange_t *bx, const void *p, size_t n, bc_s3err_t *e)
{
	(void)bx;
	(void)p;
	(void)n;
	*e = BC_S3E_NONE;
	return BC_EPIPE;   /* a fetch has no request body */
}

static int
fx_write_end(bc_exchange_t *bx, bc_s3err_t *e)
{
	(void)bx;
	*e = BC_S3E_NONE;
	return 0;
}

static int
fx_headers(bc_exchange_t *bx, int *status, const bc_kvlist_t **h)
{
	fx_t *x = (fx_t *)bx;
	int rv;

	pthread_mutex_lock(&x->fo->mu);
	rv = x->head_rv;
	if (rv == 0) {
		*status = x->status;
		*h = &x->h;
	} else if (rv == BC_EAGAIN) {
		x->want_wake = true;
	}
	pthread_mutex_unlock(&x->fo->mu);
	return rv;
}

static ssize_t
fx_read(bc_exchange_t *bx, void *buf, size_t max)
{
	fx_t *x = (fx_t *)bx;
	ssize_t rv;

	pthread_mutex_lock(&x->fo->mu);
	if (x->on_done != NULL) {
		rv = BC_EINVAL;   /* push mode has no reads */
	} else if (x->head_rv == 0 && x->rd < x->sent) {
		size_t n = x->sent - x->rd;

		if (n > max)
			n = max;
		memcpy(buf, x->body + x->rd, n);
		x->rd += n;
		rv = (ssize_t)n;
	} else if (x->ended) {
		rv = x->err;
	} else {
		x->want_wake = true;
		rv = BC_EAGAIN;
	}
	pthread_mutex_unlock(&x->fo->mu);
	return rv;
}

static void
fx_set_sink(bc_exchange_t *bx, uint8_t *buf, size_t cap)
{
	fx_t *x = (fx_t *)bx;

	pthread_mutex_lock(&x->fo->mu);
	x->sink = buf;
	x->cap = cap;
	pthread_mutex_unlock(&x->fo->mu);
}

static uint8_t *
fx_take_body(bc_exchange_t *bx, size_t *len)
{
	fx_t *x = (fx_t *)bx;
	uint8_t *p;

	pthread_mutex_lock(&x->fo->mu);
	p = x->coll;
	*len = p != NULL ? x->ncoll : 0;
	x->coll = NULL;
	x->ncoll = 0;
	pthread_mutex_unlock(&x->fo->mu);
	return p;
}

static int
fx_error(bc_exchange_t *bx)
{
	fx_t *x = (fx_t *)bx;
	int rv;

	pthread_mutex_lock(&x->fo->mu);
	rv = x->ended ? x->err : BC_EAGAIN;
	pthread_mutex_unlock(&x->fo->mu);
	return rv;
}

static uint64_t
fx_elapsed_us(const bc_exchange_t *bx)
{
	const fx_t *x = (const fx_t *)bx;
	uint64_t end;

	pthread_mutex_lock(&x->fo->mu);
	end = x->ended ? x->t1 : bc_mono_ns();
	pthread_mutex_unlock(&x->fo->mu);
	return (end - x->t0) / 1000;
}

/* Any thread: no callback or wake fires after it returns. A callback in
 * progress on another thread is waited for; from inside one (the loop
 * thread) it returns at once. An exchange still running ends at once, in
 * silence. */
static void
fx_release(bc_exchange_t *bx)
{
	fx_t *x = (fx_t *)bx;
	fake_origin_t *fo = x->fo;

	pthread_mutex_lock(&fo->mu);
	if (x->released)
		abort();   /* released twice */
	x->released = true;
	while (x->in_cb && !pthread_equal(x->cb_thread, pthread_self()))
		pthread_cond_wait(&fo->cv, &fo->mu);
	if (!x->ended && !x->in_cb) {
		/* nothing fires any more: end it here (any thread) */
		fx_unpark(x);
		x->ended = true;
		x->err = BC_ECANCELED;
		x->t1 = bc_mono_ns();
		fx_quiet(x);
		fx_unref(x);   /* the machine's */
	}
	fx_unref(x);           /* the starter's */
	pthread_mutex_unlock(&fo->mu);
}

static const bc_exchange_ops_t fx_ops = {
	.write = fx_write,
	.write_end = fx_write_end,
	.headers = fx_headers,
	.read = fx_read,
	.body_fd = NULL,
	.set_sink = fx_set_sink,
	.take_body = fx_take_body,
	.error = fx_error,
	.elapsed_us = fx_elapsed_us,
	.release = fx_release,
};

/* ---- origin ops ---------------------------------------------------------- */

static bc_exchange_t *
fo_fetch(bc_origin_t *o, const bc_fetch_t *f)
{
	fake_origin_t *fo = (fake_origin_t *)o;
	fx_t *x;
	fake_req_t *q;

	pthread_mutex_lock(&fo->mu);
	if (fo->refuse_n > 0) {
		fo->refuse_n--;
		pthread_mutex_unlock(&fo->mu);
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		abort();
	x->base.ops = &fx_ops;
	x->fo = fo;
	q = &x->req;
	copy_str(q->method, sizeof(q->method), f->head ? "HEAD" : "GET");
	copy_str(q->bucket, sizeof(q->bucket), f->bucket);
	copy_str(q->key, sizeof(q->key), f->key);
	copy_str(q->version, sizeof(q->version), f->version);
	q->first = f->head ? BC_FETCH_WHOLE : f->first;
	q->last = f->last;
	if (q->first != BC_FETCH_WHOLE && q->last == UINT64_MAX)
		snprintf(q->range, sizeof(q->range), "bytes=%" PRIu64 "-",
		    q->first);
	else if (q->first != BC_FETCH_WHOLE)
		snprintf(q->range, sizeof(q->range), "bytes=%" PRIu64 "-%"
		    PRIu64, q->first, q->last);
	if (f->cond != NULL && strcasecmp(f->cond, "If-Match") == 0)
		copy_str(q->if_match, sizeof(q->if_match), f->etag);
	else if (f->cond != NULL && strcasecmp(f->cond, "If-None-Match") == 0)
		copy_str(q->if_none_match, sizeof(q->if_none_match), f->etag);
	else if (f->cond != NULL)
		abort();   /* a condition S3 fetches do not use */
	q->anon = f->anon;
	q->cls = f->cls;
	q->push = f->on_done != NULL;
	if (q->push) {
		x->on_headers = f->on_headers;
		x->on_data = f->on_data;
		x->on_done = f->on_done;
		x->arg = f->arg;
		x->collect_max = f->collect_max > 0 ? f->collect_max : 1;
	} else {
		x->wake = f->wake;
		x->wake_arg = f->wake_arg;
	}
	x->head_rv = BC_EAGAIN;
	x->t0 = bc_mono_ns();
	x->refs = 2;   /* the starter's and the machine's */
	if (!fx_schedule(x)) {
		pthread_mutex_unlock(&fo->mu);
		free(x);
		return NULL;
	}
	x->lnext = fo->live;
	if (fo->live != NULL)
		fo->live->lprev = x;
	fo->live = x;
	fo->nx++;
	fo->active++;
	if (fo->nlog == fo->log_cap) {
		unsigned cap = fo->log_cap > 0 ? fo->log_cap * 2 : 64;
		fake_req_t *p = realloc(fo->log, cap * sizeof(*p));

		if (p == NULL)
			abort();
		fo->log = p;
		fo->log_cap = cap;
	}
	fo->log[fo->nlog++] = *q;
	pthread_cond_broadcast(&fo->cv);
	/* the step takes fo->mu: nothing fires before this returns */
	pthread_mutex_unlock(&fo->mu);
	return &x->base;
}

/* A relay's exchange: its answer made whole when it started. */
typedef struct rx_s {
	bc_exchange_t base;   /* first */
	int           status;
	bc_kvlist_t   headers;
	bc_buf_t      body;
	size_t        off;
	bool          ended;   /* write_end came: the answer is readable */
} rx_t;

static ssize_t
rx_write(bc_exchange_t *x, const void *p, size_t n, bc_s3err_t *e)
{
	(void)x;
	(void)p;
	(void)e;
	return (ssize_t)n;   /* dropped */
}

static int
rx_write_end(bc_exchange_t *x, bc_s3err_t *e)
{
	(void)e;
	((rx_t *)x)->ended = true;
	return 0;
}

static int
rx_headers(bc_exchange_t *x, int *status, const bc_kvlist_t **h)
{
	rx_t *r = (rx_t *)x;

	if (!r->ended)
		return BC_EAGAIN;   /* as the file origin: no wake follows */
	*status = r->status;
	*h = &r->headers;
	return 0;
}

static ssize_t
rx_read(bc_exchange_t *x, void *buf, size_t max)
{
	rx_t *r = (rx_t *)x;
	size_t n = r->body.len - r->off;

	if (!r->ended)
		return BC_EAGAIN;
	if (n > max)
		n = max;
	memcpy(buf, bc_buf_str(&r->body) + r->off, n);
	r->off += n;
	return (ssize_t)n;
}

static int
rx_error(bc_exchange_t *x)
{
	(void)x;
	return 0;
}

static uint64_t
rx_elapsed_us(const bc_exchange_t *x)
{
	(void)x;
	return 1;
}

static void
rx_release(bc_exchange_t *x)
{
	rx_t *r = (rx_t *)x;

	if (r == NULL)
		return;
	bc_kv_fini(&r->headers);
	bc_buf_fini(&r->body);
	free(r);
}

static const bc_exchange_ops_t rx_ops = {
	.write = rx_write,
	.write_end = rx_write_end,
	.headers = rx_headers,
	.read = rx_read,
	.error = rx_error,
	.elapsed_us = rx_elapsed_us,
	.release = rx_release,
};

static bc_exchange_t *
fo_relay(bc_origin_t *o, const bc_relay_t *rl, bc_s3err_t *e)
{
	fake_origin_t *fo = (fake_origin_t *)o;
	fake_relay_fn fn;
	void *arg;
	rx_t *r;

	pthread_mutex_lock(&fo->mu);
	fn = fo->relay_fn;
	arg = fo->relay_arg;
	if (fn != NULL)
		fo->nrelays++;
	pthread_mutex_unlock(&fo->mu);
	if (fn == NULL) {
		*e = BC_S3E_NotImplemented;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		abort();
	r->base.ops = &rx_ops;
	bc_buf_init(&r->body, 0);
	fn(arg, rl, &r->status, &r->body);
	if (bc_kv_add(&r->headers, "Content-Type", "application/xml") < 0)
		abort();
	*e = BC_S3E_NONE;
	return &r->base;
}

void
fake_origin_on_relay(fake_origin_t *fo, fake_relay_fn fn, void *arg)
{
	pthread_mutex_lock(&fo->mu);
	fo->relay_fn = fn;
	fo->relay_arg = arg;
	pthread_mutex_unlock(&fo->mu);
}

unsigned
fake_origin_relays(fake_origin_t *fo)
{
	unsigned n;

	pthread_mutex_lock(&fo->mu);
	n = fo->nrelays;
	pthread_mutex_unlock(&fo->mu);
	return n;
}

/* Loop thread, while the loop stops. */
static void
fo_cancel_all(bc_origin_t *o)
{
	fake_origin_t *fo = (fake_origin_t *)o;
	fx_t *x;

	pthread_mutex_lock(&fo->mu);
	for (;;) {
		for (x = fo->live; x != NULL && x->ended; x = x->lnext)
			;
		if (x == NULL)
			break;
		x->refs++;   /* across the callbacks */
		fx_end(x, BC_ECANCELED);
		fx_unref(x);
	}
	pthread_mutex_unlock(&fo->mu);
}

static void
fo_free(bc_origin_t *o)
{
	fake_origin_t *fo = (fake_origin_t *)o;
	fobj_t *ob, *next;

	if (fo->live != NULL) {
		fprintf(stderr, "fake_origin: freed with %u exchange(s) "
		    "not released\n", fo->nx);
		abort();
	}
	for (ob = fo->objs; ob != NULL; ob = next) {
		next = ob->next;
		obj_free(ob);
	}
	free(fo->log);
	pthread_cond_destroy(&fo->cv);
	pthread_mutex_destroy(&fo->mu);
	free(fo);
}

static const bc_origin_ops_t fake_origin_ops = {
	.name = "fake",
	.fetch = fo_fetch,
	.relay = fo_relay,
	.cancel_all = fo_cancel_all,
	.free = fo_free,
};

/* ---- the test's side ------------------------------------------------------ */

fake_origin_t *
fake_origin_new(bc_loop_t *loop)
{
	fake_origin_t *fo = calloc(1, sizeof(*fo));
	pthread_condattr_t a;

	if (fo == NULL)
		return NULL;
	fo->base.ops = &fake_origin_ops;
	fo->loop = loop;
	fo->piece = DEFAULT_PIECE;
	pthread_mutex_init(&fo->mu, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&fo->cv, &a);
	pthread_condattr_destroy(&a);
	return fo;
}

bc_origin_t *
fake_origin_base(fake_origin_t *fo)
{
	return &fo->base;
}

void
fake_origin_stop_fn(bc_loop_t *loop, void *arg)
{
	fake_origin_t *fo = arg;

	(void)loop;
	fo->base.ops->cancel_all(&fo->base);
}

/* Creates or replaces version (NULL: the current one) of bucket/key. */
static void
put_object(fake_origin_t *fo, const char *bucket, const char *key,
    const char *version, const uint8_t *data, size_t size, const char *etag,
    const char *last_modified, const bc_kvlist_t *meta)
{
	fobj_t *o = calloc(1, sizeof(*o)), *old;

	if (o == NULL)
		abort();
	o->bucket = strdup(bucket);
	o->key = strdup(key);
	o->version = version != NULL ? strdup(version) : NULL;
	o->data = malloc(size + 1);
	if (o->bucket == NULL || o->key == NULL || o->data == NULL ||
	    (version != NULL && o->version == NULL))
		abort();
	if (size > 0)
		memcpy(o->data, data, size);
	o->size = size;
	copy_str(o->etag, sizeof(o->etag), etag);
	copy_str(o->last_modified, sizeof(o->last_modified),
	    last_modified != NULL ? last_modified : DEFAULT_LM);
	for (size_t i = 0; meta != NULL && i < meta->n; i++)
		if (bc_kv_add(&o->meta, meta->v[i].name, meta->v[i].value) < 0)
			abort();
	pthread_mutex_lock(&fo->mu);
	old = obj_find(fo, bucket, key, version);
	if (old != NULL)
		obj_unlink(fo, old);
	o->next = fo->objs;
	fo->objs = o;
	pthread_mutex_unlock(&fo->mu);
	if (old != NULL)
		obj_free(old);
}

void
fake_origin_put(fake_origin_t *fo, const char *bucket, const char *key,
    const uint8_t *data, size_t size, const char *etag,
    const char *last_modified, const bc_kvlist_t *meta)
{
	put_object(fo, bucket, key, NULL, data, size, etag, last_modified,
	    meta);
}

void
fake_origin_put_version(fake_origin_t *fo, const char *bucket,
    const char *key, const char *version, const uint8_t *data, size_t size,
    const char *etag)
{
	put_object(fo, bucket, key, version, data, size, etag, NULL, NULL);
}

bool
fake_origin_del(fake_origin_t *fo, const char *bucket, const char *key)
{
	fobj_t *o;

	pthread_mutex_lock(&fo->mu);
	o = obj_find(fo, bucket, key, NULL);
	if (o != NULL)
		obj_unlink(fo, o);
	pthread_mutex_unlock(&fo->mu);
	if (o != NULL)
		obj_free(o);
	return o != NULL;
}

void
fake_origin_set(fake_origin_t *fo, fake_knob_t knob, bool on)
{
	pthread_mutex_lock(&fo->mu);
	fo->knob[knob] = on;
	pthread_mutex_unlock(&fo->mu);
}

void
fake_origin_fail(fake_origin_t *fo, unsigned n, int status, int err)
{
	pthread_mutex_lock(&fo->mu);
	fo->fail_n = n;
	fo->fail_status = status;
	fo->fail_err = err;
	pthread_mutex_unlock(&fo->mu);
}

void
fake_origin_refuse(fake_origin_t *fo, unsigned n)
{
	pthread_mutex_lock(&fo->mu);
	fo->refuse_n = n;
	pthread_mutex_unlock(&fo->mu);
}

void
fake_origin_cut(fake_origin_t *fo, size_t after, int err)
{
	pthread_mutex_lock(&fo->mu);
	fo->cut = after;
	fo->cut_err = err;
	pthread_mutex_unlock(&fo->mu);
}

void
fake_origin_piece(fake_origin_t *fo, size_t n)
{
	pthread_mutex_lock(&fo->mu);
	fo->piece = n > 0 ? n : DEFAULT_PIECE;
	pthread_mutex_unlock(&fo->mu);
}

/* fo->mu held: lets the parked exchanges of one gate go on (or end, when
 * aborted). */
static void
unpark_all(fake_origin_t *fo, bool body)
{
	fx_t **pp = &fo->parked, *x;

	while ((x = *pp) != NULL) {
		if (x->body_parked != body) {
			pp = &x->pnext;
			continue;
		}
		fx_unpark(x);
		if (!fx_schedule(x))
			x->abort_err = BC_ECANCELED;   /* cancel_all ends it */
		pp = &fo->parked;
	}
}

void
fake_origin_gate(fake_origin_t *fo, bool closed)
{
	pthread_mutex_lock(&fo->mu);
	fo->gate = closed;
	if (!closed)
		unpark_all(fo, false);
	pthread_mutex_unlock(&fo->mu);
}

/* Waits until *count >= n (fo->mu guards it); false after ms. */
static bool
wait_count(fake_origin_t *fo, const unsigned *count, unsigned n,
    unsigned ms)
{
	struct timespec dl;
	bool ok;

	deadline_in(&dl, ms);
	pthread_mutex_lock(&fo->mu);
	while (*count < n &&
	    pthread_cond_timedwait(&fo->cv, &fo->mu, &dl) == 0)
		;
	ok = *count >= n;
	pthread_mutex_unlock(&fo->mu);
	return ok;
}

bool
fake_origin_wait_held(fake_origin_t *fo, unsigned n, unsigned ms)
{
	return wait_count(fo, &fo->held, n, ms);
}

void
fake_origin_hold_body(fake_origin_t *fo, size_t at)
{
	pthread_mutex_lock(&fo->mu);
	fo->hold_body = at;
	fo->body_gate = at > 0;
	if (at == 0)
		unpark_all(fo, true);
	pthread_mutex_unlock(&fo->mu);
}

void
fake_origin_release_body(fake_origin_t *fo)
{
	pthread_mutex_lock(&fo->mu);
	fo->body_gate = false;
	unpark_all(fo, true);
	pthread_mutex_unlock(&fo->mu);
}

bool
fake_origin_wait_body_held(fake_origin_t *fo, unsigned n, unsigned ms)
{
	return wait_count(fo, &fo->body_held, n, ms);
}

unsigned
fake_origin_body_held(fake_origin_t *fo)
{
	unsigned n;

	pthread_mutex_lock(&fo->mu);
	n = fo->body_held;
	pthread_mutex_unlock(&fo->mu);
	return n;
}

void
fake_origin_abort_held(fake_origin_t *fo, int err)
{
	fx_t *x;

	pthread_mutex_lock(&fo->mu);
	while ((x = fo->parked) != NULL) {
		fx_unpark(x);
		x->abort_err = err;
		(void)fx_schedule(x);   /* else cancel_all ends it */
	}
	pthread_mutex_unlock(&fo->mu);
}

bool
fake_origin_wait_quiet(fake_origin_t *fo, unsigned ms)
{
	struct timespec dl;
	bool ok;

	deadline_in(&dl, ms);
	pthread_mutex_lock(&fo->mu);
	while (fo->active > 0 &&
	    pthread_cond_timedwait(&fo->cv, &fo->mu, &dl) == 0)
		;
	ok = fo->active == 0;
	pthread_mutex_unlock(&fo->mu);
	return ok;
}

unsigned
fake_origin_nlog(fake_origin_t *fo)
{
	unsigned n;

	pthread_mutex_lock(&fo->mu);
	n = fo->nlog;
	pthread_mutex_unlock(&fo->mu);
	return n;
}

bool
fake_origin_log(fake_origin_t *fo, unsigned i, fake_req_t *out)
{
	bool ok;

	pthread_mutex_lock(&fo->mu);
	ok = i < fo->nlog;
	if (ok)
		*out = fo->log[i];
	pthread_mutex_unlock(&fo->mu);
	return ok;
}

unsigned
fake_origin_count(fake_origin_t *fo, const char *method, const char *range)
{
	unsigned n = 0;

	pthread_mutex_lock(&fo->mu);
	for (unsigned i = 0; i < fo->nlog; i++) {
		if (method != NULL && strcmp(fo->log[i].method, method) != 0)
			continue;
		if (range != NULL && strcmp(fo->log[i].range, range) != 0)
			continue;
		n++;
	}
	pthread_mutex_unlock(&fo->mu);
	return n;
}

unsigned
fake_origin_exchanges(fake_origin_t *fo)
{
	unsigned n;

	pthread_mutex_lock(&fo->mu);
	n = fo->nx;
	pthread_mutex_unlock(&fo->mu);
	return n;
}
