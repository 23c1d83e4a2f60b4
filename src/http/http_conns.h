/*
 * http_conns.h — the front end's table of client connections, and the
 * deadlines that close connections holding a slot without progress:
 *
 *   idle      a connection with no request under way (new, or kept alive
 *             after one) must start a request line within idle_ns;
 *   head      once its request line is in, the headers must follow within
 *             head_ns (slow senders, "slowloris", cannot hold slots);
 *   body      while the gateway reads an upload, every period of body_ns
 *             must bring BC_CONNS_BODY_MIN bytes or the body's end (the
 *             period restarts after each such amount, and after the
 *             gateway itself made the client wait);
 *   headroom  when more than max - reserve connections are open, those
 *             idle for over a second, then those whose head has been
 *             coming for over a second, are closed at once, oldest
 *             first, so new clients (health probes among them) find a
 *             slot; a connection just accepted is never shed.
 *   stalled   a connection with no request under way, or whose head is
 *             coming, that holds unread bytes at two sweeps in a row
 *             (its state unchanged) was missed by the HTTP server's event
 *             loop: the sweeper calls the wake callback (bc_conns_set_wake)
 *             once for that sweep, which must make every HTTP worker look
 *             at its connections again. libmicrohttpd (0.9.75, and its
 *             master to date) under epoll: a worker whose epoll_wait
 *             returned MAX_EVENTS (128) events waits again, with the
 *             timeout it computed before them (up to --client-timeout),
 *             before it handles any of them; 128 requests arriving
 *             together on one worker were answered only when another
 *             event came. So a missed request waits at most about two
 *             sweep periods (0.5 s), never the client timeout.
 * A connection with a request being answered has no deadline here: the
 * HTTP server's own inactivity timeout (--client-timeout) drops clients
 * that stop reading, and the gateway never times out a client it made
 * wait.
 *
 * Closing means shutdown(2) of the socket: the HTTP server sees the
 * connection end and cleans up as for any client that went away. The
 * table lock orders that against the server's close: a connection leaves
 * the table (bc_conns_close) before its socket is closed, so a sweep never
 * shuts down a reused descriptor.
 *
 * Threads: bc_conns_open/close and the state calls come from HTTP worker
 * threads, bc_conns_sweep from the sweeper thread (bc_conns_start). State
 * calls only store atomics; open, close and sweep take the table lock.
 */
#ifndef BC_HTTP_CONNS_H
#define BC_HTTP_CONNS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BC_CONNS_BODY_MIN (64 * 1024)   /* bytes per body period */

typedef struct bc_conn_s bc_conn_t;

typedef struct bc_conns_limits_s {
	uint64_t idle_ns;
	uint64_t head_ns;
	uint64_t body_ns;
	unsigned max;        /* connections the server accepts */
	unsigned reserve;    /* kept free by closing idle ones */
} bc_conns_limits_t;

typedef struct bc_conns_s {
	bc_conns_limits_t limits;
	pthread_mutex_t   mu;
	pthread_cond_t    cv;        /* wakes the sweeper: stop, or pressure */
	bc_conn_t        *head;      /* mu */
	unsigned          n;         /* mu */
	bool              stopping;  /* mu */
	bool              running;
	pthread_t         thread;
	/* counters, for stats and tests */
	_Atomic uint64_t  closed_idle, closed_head, closed_body, shed;
	_Atomic uint64_t  closed_gone;   /* uploads whose client left */
	_Atomic uint64_t  woken;         /* sweeps that found a stall */
	void            (*wake)(void *arg);   /* mu; NULL: none */
	void             *wake_arg;           /* mu */
} bc_conns_t;

/* Starts the sweeper thread. Returns 0 or a negative BC_E* code. */
int  bc_conns_start(bc_conns_t *t, const bc_conns_limits_t *limits);
/* Joins the sweeper (connections left are the server's to close). */
void bc_conns_stop(bc_conns_t *t);
/* Sets what the sweeper calls, from its thread and without the table
 * lock, when it finds a stalled connection (see "stalled" above); NULL
 * turns it off. */
void bc_conns_set_wake(bc_conns_t *t, void (*wake)(void *arg), void *arg);

/* A new connection on socket fd: listed, idle. NULL when out of memory
 * (the connection then has no deadlines). */
bc_conn_t *bc_conns_open(bc_conns_t *t, int fd);
/* The connection ends: unlisted and freed (NULL is a no-op). Must run
 * before its socket is closed. */
void bc_conns_close(bc_conns_t *t, bc_conn_t *c);
/* Connections listed now (open, with a record). */
unsigned bc_conns_count(bc_conns_t *t);

/* State changes of c (NULL is a no-op), from its HTTP worker thread. */
void bc_conn_request_line(bc_conns_t *t, bc_conn_t *c);   /* head: on */
/* head: in; with body, the body deadline runs until bc_conn_body_end */
void bc_conn_request_head(bc_conns_t *t, bc_conn_t *c, bool body);
void bc_conn_body_bytes(bc_conns_t *t, bc_conn_t *c, uint64_t n);
void bc_conn_body_end(bc_conns_t *t, bc_conn_t *c);
/* The gateway makes c wait (true) or lets it go on (false). */
void bc_conn_held(bc_conns_t *t, bc_conn_t *c, bool held);
void bc_conn_request_done(bc_conns_t *t, bc_conn_t *c);   /* idle again */

/* Closes the connections past a deadline and sheds for headroom; returns
 * how many it closed. now_ns: CLOCK_MONOTONIC. (The sweeper calls it;
 * exported for tests.) */
unsigned bc_conns_sweep(bc_conns_t *t, uint64_t now_ns);

#endif
