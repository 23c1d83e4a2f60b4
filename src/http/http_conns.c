/*
 * http_conns.c — client connection deadlines (see http_conns.h).
 *
 * Each connection's state and times are atomics written by its worker
 * thread and read by the sweeper; only the list is under the lock. A
 * state's deadline is computed by the sweeper from the time the state
 * began, so a state change is two relaxed stores.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "http/http_conns.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define SWEEP_NS      (250u * 1000 * 1000)   /* sweeper period */
#define SHED_GRACE_NS (1000u * 1000 * 1000)  /* idle or head this long:
						  shed under pressure */

typedef enum conn_state_e {
	CONN_IDLE = 0,   /* no request under way */
	CONN_HEAD,       /* request line in, headers coming */
	CONN_BODY,       /* reading an upload */
	CONN_ACTIVE,     /* being answered: no deadline here */
} conn_state_t;

struct bc_conn_s {
	bc_conn_t       *prev, *next;     /* t->mu */
	int              fd;
	bool             closing;         /* t->mu: shut down already */
	_Atomic int      state;           /* conn_state_t */
	_Atomic uint64_t since_ns;        /* state (or body period) began */
	_Atomic uint64_t period_bytes;    /* body bytes this period */
	_Atomic bool     held;            /* the gateway makes it wait */
	unsigned         unread_sweeps;   /* t->mu: sweeps in a row that saw
					     unread bytes in IDLE or HEAD */
	uint64_t         unread_since;    /* t->mu: since_ns they saw */
};


static void
set_state(bc_conn_t *c, conn_state_t s)
{
	atomic_store_explicit(&c->period_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&c->since_ns, bc_mono_ns(), memory_order_relaxed);
	atomic_store_explicit(&c->state, (int)s, memory_order_release);
}

/* ---- the sweeper -------------------------------------------------------- */

/* t->mu held. */
static void
close_conn(bc_conns_t *t, bc_conn_t *c, _Atomic uint64_t *why)
{
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
	atomic_fetch_add_explicit(why, 1, memory_order_relaxed);
}

/* true when the client closed its side and everything it sent was read.
 * libmicrohttpd 0.9.75 under epoll (edge-triggered) can miss such an end
 * of an upload: a read shorter than its buffer marks the socket drained
 * and no new edge comes for a FIN that arrived before that read, so the
 * connection would wait for the body deadline. Shutting it down raises
 * an edge MHD sees. MSG_PEEK takes nothing from MHD. */
static bool
peer_closed(int fd)
{
	char b;

	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* true when bytes the client sent wait in the socket, unread */
static bool
unread(int fd)
{
	char b;

	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* t->mu held. true when c has stayed in IDLE or HEAD, with bytes unread,
 * through a whole sweep period (this sweep and the one before). */
static bool
stalled(bc_conn_t *c, int s, uint64_t since, uint64_t age)
{
	if ((s != CONN_IDLE && s != CONN_HEAD) || age <= SWEEP_NS ||
	    !unread(c->fd)) {
		c->unread_sweeps = 0;
		return false;
	}
	if (c->unread_sweeps == 0 || c->unread_since != since) {
		c->unread_sweeps = 1;
		c->unread_since = since;
		return false;
	}
	c->unread_sweeps++;
	return true;
}

unsigned
bc_conns_sweep(bc_conns_t *t, uint64_t now)
{
	const bc_conns_limits_t *l = &t->limits;
	unsigned closed = 0, open = 0;
	bc_conn_t *oldest = NULL;
	bool stall = false;
	void (*wake)(void *) = NULL;
	void *wake_arg = NULL;

	pthread_mutex_lock(&t->mu);
	for (bc_conn_t *c = t->head; c != NULL; c = c->next) {
		int s = atomic_load_explicit(&c->state, memory_order_acquire);
		uint64_t since = atomic_load_explicit(&c->since_ns,
		    memory_order_relaxed);
		uint64_t age = now > since ? now - since : 0;

		oldest = c;
		if (c->closing)
			continue;   /* shut down, not yet closed by the server */
		open++;
		if (atomic_load(&c->held))
			continue;
		if (s == CONN_IDLE && l->idle_ns > 0 && age > l->idle_ns) {
			close_conn(t, c, &t->closed_idle);
			closed++;
		} else if (s == CONN_HEAD && l->head_ns > 0 &&
		    age > l->head_ns) {
			close_conn(t, c, &t->closed_head);
			closed++;
		} else if (s == CONN_BODY && l->body_ns > 0 &&
		    age > l->body_ns) {
			close_conn(t, c, &t->closed_body);
			closed++;
		} else if (s == CONN_BODY && age > SWEEP_NS &&
		    peer_closed(c->fd)) {
			close_conn(t, c, &t->closed_gone);
			closed++;
		} else if (stalled(c, s, since, age)) {
			stall = true;
		}
	}
	/* Headroom: idle connections first, then slow heads; the oldest
	 * first (the newest may be a probe about to send its request). */
	open -= closed;
	for (int pass = 0; pass < 2; pass++) {
		for (bc_conn_t *c = oldest; c != NULL &&
		    open + l->reserve > l->max; c = c->prev) {
			int s = atomic_load_explicit(&c->state,
			    memory_order_acquire);
			uint64_t since = atomic_load_explicit(&c->since_ns,
			    memory_order_relaxed);

			if (c->closing || atomic_load(&c->held))
				continue;
			/* a connection gets SHED_GRACE_NS to send its
			 * request line (a probe just accepted is idle) and
			 * its headers before it may be shed */
			if (now > since + SHED_GRACE_NS && ((pass == 0 &&
			    s == CONN_IDLE) || (pass == 1 &&
			    s == CONN_HEAD))) {
				close_conn(t, c, &t->shed);
				closed++;
				open--;
			}
		}
	}
	if (stall) {
		wake = t->wake;
		wake_arg = t->wake_arg;
		atomic_fetch_add_explicit(&t->woken, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&t->mu);
	if (wake != NULL)
		wake(wake_arg);
	return closed;
}

void
bc_conns_set_wake(bc_conns_t *t, void (*wake)(void *arg), void *arg)
{
	pthread_mutex_lock(&t->mu);
	t->wake = wake;
	t->wake_arg = arg;
	pthread_mutex_unlock(&t->mu);
}

static void *
sweeper(void *arg)
{
	bc_conns_t *t = arg;
	struct timespec ts;

	pthread_mutex_lock(&t->mu);
	while (!t->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SWEEP_NS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->cv, &t->mu, &ts);
		if (t->stopping)
			break;
		pthread_mutex_unlock(&t->mu);
		bc_conns_sweep(t, bc_mono_ns());
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int
bc_conns_start(bc_conns_t *t, const bc_conns_limits_t *limits)
{
	pthread_condattr_t ca;
	int rv;

	t->limits = *limits;
	t->wake = NULL;
	t->wake_arg = NULL;
	t->head = NULL;
	t->n = 0;
	t->stopping = false;
	t->running = false;
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	rv = pthread_create(&t->thread, NULL, sweeper, t);
	if (rv != 0)
		return BC_ENOMEM;
	t->running = true;
	return 0;
}

void
bc_conns_stop(bc_conns_t *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->mu);
	t->stopping = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	t->running = false;
}

/* ---- connections -------------------------------------------------------- */

bc_conn_t *
bc_conns_open(bc_conns_t *t, int fd)
{
	bc_conn_t *c = calloc(1, sizeof(*c));
	bool pressure;

	if (c == NULL)
		return NULL;
	c->fd = fd;
	set_state(c, CONN_IDLE);
	pthread_mutex_lock(&t->mu);
	c->next = t->head;
	if (t->head != NULL)
		t->head->prev = c;
	t->head = c;
	t->n++;
	pressure = t->n + t->limits.reserve > t->limits.max;
	if (pressure)
		pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return c;
}

void
bc_conns_close(bc_conns_t *t, bc_conn_t *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	t->n--;
	pthread_mutex_unlock(&t->mu);
	free(c);
}

unsigned
bc_conns_count(bc_conns_t *t)
{
	unsigned n;

	pthread_mutex_lock(&t->mu);
	n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void
bc_conn_request_line(bc_conns_t *t, bc_conn_t *c)
{
	if (c != NULL)
		set_state(c, CONN_HEAD);
}

void
bc_conn_request_head(bc_conns_t *t, bc_conn_t *c, bool body)
{
	if (c != NULL)
		set_state(c, body ? CONN_BODY : CONN_ACTIVE);
}

void
bc_conn_body_bytes(bc_conns_t *t, bc_conn_t *c, uint64_t n)
{
	uint64_t have;

	if (c == NULL)
		return;
	have = atomic_fetch_add_explicit(&c->period_bytes, n,
	    memory_order_relaxed) + n;
	if (have >= BC_CONNS_BODY_MIN) {   /* a new period begins */
		atomic_store_explicit(&c->period_bytes, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&c->since_ns, bc_mono_ns(),
		    memory_order_relaxed);
	}
}

void
bc_conn_body_end(bc_conns_t *t, bc_conn_t *c)
{
	if (c != NULL && atomic_load(&c->state) == CONN_BODY)
		set_state(c, CONN_ACTIVE);
}

void
bc_conn_held(bc_conns_t *t, bc_conn_t *c, bool held)
{
	if (c == NULL)
		return;
	if (!held && atomic_load(&c->state) == CONN_BODY) {
		/* its period starts again: the wait was the gateway's */
		atomic_store_explicit(&c->period_bytes, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&c->since_ns, bc_mono_ns(),
		    memory_order_relaxed);
	}
	atomic_store(&c->held, held);
}

void
bc_conn_request_done(bc_conns_t *t, bc_conn_t *c)
{
	if (c == NULL)
		return;
	atomic_store(&c->held, false);
	set_state(c, CONN_IDLE);
}
