/*
 * upstream_loop.c — libuv loop thread driving a curl multi handle.
 *
 * Cross-thread calls are queued under a mutex and drained by a uv_async_t.
 * curl's socket callback maps each socket to a uv_poll_t (freed in its
 * close callback); its timer callback drives one uv_timer_t. See
 * upstream_loop.h for the threading contract.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "upstream/upstream_loop.h"
#include "util/util_error.h"
#include "util/util_log.h"

typedef struct call_s {
	bc_loop_fn     fn;
	void          *arg;
	struct call_s *next;
} call_t;

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
	pthread_mutex_t  mu;          /* guards calls, stopping */
	call_t          *head, *tail;
	bool             stopping;
};

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
	call_t *c, *next;

	pthread_mutex_lock(&l->mu);
	c = l->head;
	l->head = l->tail = NULL;
	pthread_mutex_unlock(&l->mu);
	for (; c != NULL; c = next) {
		next = c->next;
		c->fn(l, c->arg);
		free(c);
	}
}

static void *
loop_main(void *arg)
{
	bc_loop_t *l = arg;

	uv_run(&l->uv, UV_RUN_DEFAULT);
	return NULL;
}

bc_loop_t *
bc_loop_new(bc_loop_done_fn done)
{
	bc_loop_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->done = done;
	pthread_mutex_init(&l->mu, NULL);
	if (uv_loop_init(&l->uv) != 0) {
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

static int
enqueue(bc_loop_t *l, bc_loop_fn fn, void *arg, bool last)
{
	call_t *c = malloc(sizeof(*c));

	if (c == NULL)
		return BC_ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->next = NULL;
	pthread_mutex_lock(&l->mu);
	if (l->stopping) {
		pthread_mutex_unlock(&l->mu);
		free(c);
		return BC_ECANCELED;
	}
	if (last)
		l->stopping = true;
	if (l->tail != NULL)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	pthread_mutex_unlock(&l->mu);
	uv_async_send(&l->async);
	return 0;
}

int
bc_loop_call(bc_loop_t *l, bc_loop_fn fn, void *arg)
{
	return enqueue(l, fn, arg, false);
}

typedef struct stop_s {
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
	stop_t *st = arg;

	if (st->fn != NULL)
		st->fn(l, st->arg);
	/* The watchers are about to be freed: curl must not report on its
	 * cached connections' sockets any more (curl_multi_cleanup closes
	 * them later). */
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, noop_socket_cb);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, noop_timer_cb);
	/* Transfers are gone; closing every handle lets uv_run return. */
	uv_walk(&l->uv, close_walk, NULL);
}

void
bc_loop_stop(bc_loop_t *l, bc_loop_fn stop_fn, void *arg)
{
	stop_t st = { stop_fn, arg };

	if (l == NULL || !l->running)
		return;
	if (enqueue(l, do_stop, &st, true) < 0)
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
		uv_walk(&l->uv, close_walk, NULL);
		uv_run(&l->uv, UV_RUN_DEFAULT);
	}
	curl_multi_cleanup(l->multi);
	uv_loop_close(&l->uv);
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
