/*
 * loop.c — libuv loop thread driving a curl multi handle, timers
 * and a work pool.
 *
 * Cross-thread calls are queued (a bc_list_t of call_t under mu) and
 * drained by a uv_async_t. A call node is malloc'd for bc_loop_call and
 * embedded in the work, timer or stop request otherwise, so only
 * bc_loop_call can fail for memory once its caller's struct exists.
 * curl's socket callback maps each socket to a uv_poll_t (freed in its
 * close callback); its timer callback drives one uv_timer_t.
 *
 * A timer is started, and closed when freed from another thread, by a
 * queued call; its uv_timer_t exists only on the loop thread. Its memory
 * is refcounted under mu: the owner holds one reference until
 * bc_loop_timer_free, the loop one from creation until the handle's close
 * callback (or until the start call finds it already cancelled), and a
 * queued close call one. cancelled and running (under mu, with cv) let a
 * free from another thread wait out a run in progress. See
 * loop.h for the threading contract.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "loop/loop.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_list.h"
#include "util/util_log.h"

typedef struct call_s {
	bc_loop_fn fn;
	void      *arg;
	bc_list_t  link;        /* in l->calls, then in a drained batch */
	bool       heap;        /* freed once run (bc_loop_call's own) */
} call_t;

struct bc_loop_timer_s {
	bc_loop_t  *loop;
	bc_loop_fn  fn;
	void       *arg;
	uint64_t    period_ms;
	call_t      start, close;
	uv_timer_t  uv;         /* loop thread, once started */
	bc_list_t   link;       /* l->timers while started and not closing */
	bool        started, closing;        /* loop thread */
	bool        cancelled, running;      /* l->mu */
	int         refs;                    /* l->mu */
};

typedef struct work_s {
	call_t          start;
	uv_work_t       req;
	bc_loop_t      *loop;
	bc_loop_work_fn work;
	bc_loop_fn      after;
	void           *arg;
} work_t;

typedef struct sock_s {
	uv_poll_t     poll;
	curl_socket_t fd;
	bc_loop_t    *loop;
} sock_t;

struct bc_loop_s {
	uv_loop_t        uv;
	uv_async_t       async;
	uv_timer_t       timer;
	CURLM           *multi;
	bc_loop_done_fn  done;
	pthread_t        thread;
	bool             running;
	bc_list_t        timers;      /* loop thread: open timers */
	pthread_mutex_t  mu;          /* guards calls, stopping, timer state */
	pthread_cond_t   cv;          /* a cancelled timer's run ended */
	bc_list_t        calls;
	bool             stopping;
};

/* The loop whose thread this is (also set while bc_loop_free runs a
 * never-started loop on its caller's thread). */
static _Thread_local bc_loop_t *current;

static void
check_multi_info(bc_loop_t *l)
{
	CURLMsg *msg;
	int pending;

	while ((msg = curl_multi_info_read(l->multi, &pending)) != NULL) {
		if (msg->msg == CURLMSG_DONE)
			l->done(msg->easy_handle, msg->data.result);
	}
}

static void
on_poll(uv_poll_t *h, int status, int events)
{
	sock_t *s = h->data;
	int flags = 0, running;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(s->loop->multi, s->fd, flags, &running);
	check_multi_info(s->loop);
}

static void
on_timeout(uv_timer_t *t)
{
	bc_loop_t *l = t->data;
	int running;

	curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi_info(l);
}

static void
on_sock_closed(uv_handle_t *h)
{
	free(h->data);
}

static int
socket_cb(CURL *easy, curl_socket_t fd, int action, void *userp,
    void *socketp)
{
	bc_loop_t *l = userp;
	sock_t *s = socketp;
	int events = 0;

	if (action == CURL_POLL_REMOVE) {
		if (s != NULL) {
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, on_sock_closed);
			curl_multi_assign(l->multi, fd, NULL);
		}
		return 0;
	}
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return -1;
		s->fd = fd;
		s->loop = l;
		if (uv_poll_init_socket(&l->uv, &s->poll, fd) != 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		curl_multi_assign(l->multi, fd, s);
	}
	if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	uv_poll_start(&s->poll, events, on_poll);
	return 0;
}

static int
timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	bc_loop_t *l = userp;

	if (timeout_ms < 0)
		uv_timer_stop(&l->timer);
	else
		uv_timer_start(&l->timer, on_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

static void
on_async(uv_async_t *a)
{
	bc_loop_t *l = a->data;
	bc_list_t  batch, *n, *tmp;
	call_t    *c;
	bc_loop_fn fn;
	void      *arg;

	bc_list_init(&batch);
	pthread_mutex_lock(&l->mu);
	bc_list_splice_tail(&batch, &l->calls);
	pthread_mutex_unlock(&l->mu);
	BC_LIST_FOREACH_SAFE(n, tmp, &batch) {
		c = BC_CONTAINER_OF(n, call_t, link);
		bc_list_remove(n);
		fn = c->fn;
		arg = c->arg;
		if (c->heap)
			free(c);
		fn(l, arg);
	}
}

static void *
loop_main(void *arg)
{
	bc_loop_t *l = arg;

	current = l;
	uv_run(&l->uv, UV_RUN_DEFAULT);
	current = NULL;
	return NULL;
}

bc_loop_t *
bc_loop_new(bc_loop_done_fn done)
{
	bc_loop_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->done = done;
	bc_list_init(&l->calls);
	bc_list_init(&l->timers);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (uv_loop_init(&l->uv) != 0) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	uv_async_init(&l->uv, &l->async, on_async);
	l->async.data = l;
	uv_timer_init(&l->uv, &l->timer);
	l->timer.data = l;
	l->multi = curl_multi_init();
	if (l->multi == NULL) {
		uv_close((uv_handle_t *)&l->async, NULL);
		uv_close((uv_handle_t *)&l->timer, NULL);
		uv_run(&l->uv, UV_RUN_DEFAULT);
		uv_loop_close(&l->uv);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, 512L);
	return l;
}

int
bc_loop_start(bc_loop_t *l)
{
	if (pthread_create(&l->thread, NULL, loop_main, l) != 0)
		return BC_EAGAIN;
	l->running = true;
	return 0;
}

/* Queues c (its fn and arg set); last marks the loop stopping. Returns 0,
 * or BC_ECANCELED once the loop is stopping (c untouched). */
static int
enqueue(bc_loop_t *l, call_t *c, bool last)
{
	pthread_mutex_lock(&l->mu);
	if (l->stopping) {
		pthread_mutex_unlock(&l->mu);
		return BC_ECANCELED;
	}
	if (last)
		l->stopping = true;
	bc_list_insert_tail(&l->calls, &c->link);
	/* Under mu: the stop, and with it the async's close and the loop's
	 * free, cannot overtake this call's wake-up. */
	uv_async_send(&l->async);
	pthread_mutex_unlock(&l->mu);
	return 0;
}

int
bc_loop_call(bc_loop_t *l, bc_loop_fn fn, void *arg)
{
	call_t *c = malloc(sizeof(*c));
	int     rv;

	if (c == NULL)
		return BC_ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->heap = true;
	rv = enqueue(l, c, false);
	if (rv < 0)
		free(c);
	return rv;
}

/* ---- work pool ----------------------------------------------------- */

static void
on_work(uv_work_t *req)
{
	work_t *w = req->data;

	w->work(w->arg);
}

static void
on_work_done(uv_work_t *req, int status)
{
	work_t    *w = req->data;
	bc_loop_t *l = w->loop;
	bc_loop_fn after = w->after;
	void      *arg = w->arg;

	BC_CHECK(status == 0);    /* nothing cancels */
	(void)status;
	free(w);
	if (after != NULL)
		after(l, arg);
}

static void
work_start(bc_loop_t *l, void *arg)
{
	work_t *w = arg;
	int     rv;

	rv = uv_queue_work(&l->uv, &w->req, on_work, on_work_done);
	BC_CHECK(rv == 0);        /* fails only for a NULL work_cb */
	(void)rv;
}

int
bc_loop_work(bc_loop_t *l, bc_loop_work_fn work, bc_loop_fn after,
    void *arg)
{
	work_t *w;
	int     rv;

	if (work == NULL)
		return BC_EINVAL;
	w = malloc(sizeof(*w));
	if (w == NULL)
		return BC_ENOMEM;
	w->start.fn = work_start;
	w->start.arg = w;
	w->start.heap = false;
	w->req.data = w;
	w->loop = l;
	w->work = work;
	w->after = after;
	w->arg = arg;
	rv = enqueue(l, &w->start, false);
	if (rv < 0)
		free(w);
	return rv;
}

/* ---- timers -------------------------------------------------------- */

static void
timer_unref(bc_loop_timer_t *t)
{
	bc_loop_t *l = t->loop;
	int        refs;

	pthread_mutex_lock(&l->mu);
	refs = --t->refs;
	pthread_mutex_unlock(&l->mu);
	BC_CHECK(refs >= 0);
	if (refs == 0)
		free(t);
}

static void
on_timer_closed(uv_handle_t *h)
{
	timer_unref(h->data);
}

/* Loop thread: closes t's handle unless it is closing or never was. */
static void
timer_close(bc_loop_timer_t *t)
{
	if (!t->started || t->closing)
		return;
	t->closing = true;
	bc_list_remove(&t->link);
	uv_timer_stop(&t->uv);
	uv_close((uv_handle_t *)&t->uv, on_timer_closed);
}

static void
on_tick(uv_timer_t *h)
{
	bc_loop_timer_t *t = h->data;
	bc_loop_t       *l = t->loop;
	bool             cancelled;

	pthread_mutex_lock(&l->mu);
	cancelled = t->cancelled;
	t->running = !cancelled;
	pthread_mutex_unlock(&l->mu);
	if (cancelled) {
		timer_close(t);
		return;
	}
	t->fn(l, t->arg);
	/* t is alive: its handle, closed or not, holds a reference until
	 * on_timer_closed, which runs after this returns. */
	pthread_mutex_lock(&l->mu);
	t->running = false;
	if (t->cancelled)
		pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static void
timer_start(bc_loop_t *l, void *arg)
{
	bc_loop_timer_t *t = arg;
	bool             cancelled;

	pthread_mutex_lock(&l->mu);
	cancelled = t->cancelled;
	pthread_mutex_unlock(&l->mu);
	if (cancelled) {
		timer_unref(t);         /* the handle's, never made */
		return;
	}
	uv_timer_init(&l->uv, &t->uv);
	t->uv.data = t;
	t->started = true;
	bc_list_insert_tail(&l->timers, &t->link);
	uv_timer_start(&t->uv, on_tick, t->period_ms, t->period_ms);
}

static void
timer_close_call(bc_loop_t *l, void *arg)
{
	bc_loop_timer_t *t = arg;

	(void)l;
	timer_close(t);
	timer_unref(t);             /* the close call's */
}

bc_loop_timer_t *
bc_loop_timer_new(bc_loop_t *l, uint64_t period_ms, bc_loop_fn fn,
    void *arg)
{
	bc_loop_timer_t *t;

	if (period_ms == 0 || fn == NULL)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->loop = l;
	t->fn = fn;
	t->arg = arg;
	t->period_ms = period_ms;
	t->refs = 2;                /* the owner's and the handle's */
	bc_list_init(&t->link);
	t->start.fn = timer_start;
	t->start.arg = t;
	t->close.fn = timer_close_call;
	t->close.arg = t;
	if (enqueue(l, &t->start, false) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

void
bc_loop_timer_free(bc_loop_timer_t *t)
{
	bc_loop_t *l;

	if (t == NULL)
		return;
	l = t->loop;
	pthread_mutex_lock(&l->mu);
	t->cancelled = true;
	if (current == l) {
		pthread_mutex_unlock(&l->mu);
		/* Not started yet: timer_start, queued, drops the handle's
		 * reference when it finds t cancelled. */
		timer_close(t);
		timer_unref(t);
		return;
	}
	while (t->running)
		pthread_cond_wait(&l->cv, &l->mu);
	t->refs++;                  /* the close call's */
	pthread_mutex_unlock(&l->mu);
	/* Refused once the loop stops, which closes every timer itself. */
	if (enqueue(l, &t->close, false) < 0)
		timer_unref(t);
	timer_unref(t);
}

/* ---- stop ---------------------------------------------------------- */

typedef struct stop_s {
	call_t     call;
	bc_loop_fn fn;
	void      *arg;
} stop_t;

static void
close_walk(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, h->type == UV_POLL ? on_sock_closed : NULL);
}

static int
noop_socket_cb(CURL *easy, curl_socket_t fd, int action, void *userp,
    void *socketp)
{
	return 0;
}

static int
noop_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	return 0;
}

static void
do_stop(bc_loop_t *l, void *arg)
{
	stop_t    *st = arg;
	bc_list_t *n, *tmp;

	if (st->fn != NULL)
		st->fn(l, st->arg);
	BC_LIST_FOREACH_SAFE(n, tmp, &l->timers)
		timer_close(BC_CONTAINER_OF(n, bc_loop_timer_t, link));
	/* The watchers are about to be freed: curl must not report on its
	 * cached connections' sockets any more (curl_multi_cleanup closes
	 * them later). */
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, noop_socket_cb);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, noop_timer_cb);
	/* Transfers are gone; closing every handle lets uv_run return once
	 * the work pool has no accepted work left (libuv's own async that
	 * reports finished work is internal: uv_walk skips it). */
	uv_walk(&l->uv, close_walk, NULL);
}

static void
stop_init(stop_t *st, bc_loop_fn fn, void *arg)
{
	st->call.fn = do_stop;
	st->call.arg = st;
	st->call.heap = false;
	st->fn = fn;
	st->arg = arg;
}

void
bc_loop_stop(bc_loop_t *l, bc_loop_fn stop_fn, void *arg)
{
	stop_t st;

	if (l == NULL || !l->running)
		return;
	stop_init(&st, stop_fn, arg);
	if (enqueue(l, &st.call, true) < 0)
		return;
	pthread_join(l->thread, NULL);
	l->running = false;
}

void
bc_loop_free(bc_loop_t *l)
{
	if (l == NULL)
		return;
	if (l->running)
		bc_loop_stop(l, NULL, NULL);
	if (!l->stopping) {
		/* Never started: what was queued runs here, then the stop. */
		bc_loop_t *was = current;
		stop_t     st;

		stop_init(&st, NULL, NULL);
		enqueue(l, &st.call, true);
		current = l;
		uv_run(&l->uv, UV_RUN_DEFAULT);
		current = was;
	}
	curl_multi_cleanup(l->multi);
	uv_loop_close(&l->uv);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

CURLM *
bc_loop_multi(bc_loop_t *l)
{
	return l->multi;
}

uv_loop_t *
bc_loop_uv(bc_loop_t *l)
{
	return &l->uv;
}
