/*
 * tier_redis_conn.c — one Redis connection: hiredis's async context on a
 * uv_poll_t (the "link", one per connect attempt) and one uv_timer_t per
 * connection (backoff while DOWN, the connect deadline while CONNECTING,
 * the oldest command's deadline while UP).
 *
 * Our lists are the authority on commands: c->queue (not written yet)
 * and c->wire (written, in order; hiredis answers them in that order).
 * A command leaves its list when its callback fires (answer() sets cb to
 * NULL); a written one is freed only when hiredis calls on_reply for it,
 * with its reply or with NULL while the context is freed — which hiredis
 * does for every command it took. So failing a link is: fail every
 * command on our lists, then free the context (or let hiredis, when it
 * found the failure): late replies have no callback left to reach.
 *
 * Who notices a lost link: us (a timeout, a poll error, AUTH refused,
 * close: link_drop, which frees the context), or hiredis (EOF, a read or
 * write error, connect refused: it frees the context itself and tells us
 * through on_connect, on_reply(NULL) or the cleanup hook, whichever comes
 * first: link_lost). Whenever c->link is set, its context is live and
 * accepts commands. hiredis frees a context asked to from inside one of
 * its callbacks only after that callback returns, so nothing here frees
 * one while hiredis runs on it; the link struct itself lives until its
 * poll handle's close callback, after the cleanup hook.
 *
 * A host given as a name is looked up on libuv's pool (uv_getaddrinfo),
 * never on the loop thread, which the origin's transfers share: a slow
 * DNS server must not stall them. At most one lookup per connection runs
 * at a time. The connect deadline bounds the lookup, then (anew) the
 * connect and handshake: a lookup slower than that fails the attempt
 * (commands waiting fail, DOWN), but goes on, and its answer serves the
 * next attempt.
 *
 * c's memory goes when it is CLOSED and its handles (the timer, links
 * still closing, a lookup still running) are closed. Loop thread only,
 * but for the atomics.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/socket.h>

#include <hiredis/async.h>
#include <hiredis/sds.h>
#include <uv.h>

#include "tier/tier_redis_conn.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_list.h"
#include "util/util_log.h"
#include "util/util_time.h"

typedef struct link_s {
	uv_poll_t             poll;
	bc_tier_redis_conn_t *conn;
	redisAsyncContext    *ac;      /* NULL once hiredis freed it */
	int                   events;  /* UV_READABLE | UV_WRITABLE polled */
	bool                  freeing; /* the context is being freed */
} link_t;

/* A lookup of c->host, running on libuv's pool. */
typedef struct lookup_s {
	uv_getaddrinfo_t      req;
	bc_tier_redis_conn_t *conn;
} lookup_t;

typedef struct cmd_s {
	bc_list_t              link;   /* c->queue or c->wire */
	bc_tier_redis_conn_t  *conn;
	bc_tier_redis_conn_cb  cb;     /* NULL once it fired */
	void                  *arg;
	/* The command, in the protocol: its parts in order (iov_base
	 * borrowed, or own), until written to hiredis. */
	struct iovec           iov[BC_TIER_REDIS_CONN_IOV_MAX];
	int                    niov;
	char                  *own;    /* iov[0] when ours (submit), or NULL */
	unsigned               flags;
	uint64_t               sent_ns;
} cmd_t;

struct bc_tier_redis_conn_s {
	bc_loop_t                  *loop;
	uv_timer_t                  timer;
	char                       *host, *user, *pass;
	int                         port, db;
	uint64_t                    connect_timeout_ms, command_timeout_ms;
	uint64_t                    backoff_min_ms, backoff_max_ms;
	uint32_t                    max_outstanding, max_queued;
	bc_tier_redis_conn_state_cb on_state;
	void                       *state_arg;

	link_t                     *link;      /* the live link, or NULL */
	bc_list_t                   queue, wire;
	uint32_t                    nqueued, nwire;
	int                         handshake; /* AUTH/SELECT/PING answers
	                                        * awaited */
	uint64_t                    backoff_ms;
	uint64_t                    failures;  /* since last UP */
	int                         handles;   /* open: timer, closing links,
	                                        * a running lookup */
	bool                        numeric;   /* host is an IP address */
	lookup_t                   *lookup;    /* running, or NULL */
	bool                        awaiting;  /* this attempt waits for it */
	bool                        have_addr; /* addr: a lookup's answer no
	                                        * attempt used yet */
	char                        addr[INET6_ADDRSTRLEN];
	_Atomic int                 state;
	bc_tier_redis_conn_stats_t  stats;
	bc_tier_redis_conn_stats_t *totals;    /* o->totals, may be NULL */
};

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

/* Adds n to c's counter f, and to the same counter of c->totals. */
static void
count_at(bc_tier_redis_conn_t *c, _Atomic uint64_t *f, uint64_t n)
{
	size_t off = (size_t)((char *)f - (char *)&c->stats);

	BC_CHECK(off < sizeof(c->stats));
	atomic_fetch_add_explicit(f, n, memory_order_relaxed);
	if (c->totals != NULL)
		atomic_fetch_add_explicit((_Atomic uint64_t *)(void *)
		    ((char *)c->totals + off), n, memory_order_relaxed);
}

#define COUNT(c, f, n) count_at((c), &(c)->stats.f, (n))

/* Folds one round trip into c's recent RTT and its totals'. */
static void
rtt_note(bc_tier_redis_conn_t *c, uint64_t ns)
{
	bc_tier_redis_conn_stats_t *s[2] = { &c->stats, c->totals };

	COUNT(c, rtt_ns_sum, ns);
	COUNT(c, rtt_count, 1);
	for (int i = 0; i < 2 && s[i] != NULL; i++) {
		uint64_t v = atomic_load_explicit(&s[i]->rtt_recent_ns,
		    memory_order_relaxed);

		v = v == 0 ? ns : v - v / 16 + ns / 16;
		atomic_store_explicit(&s[i]->rtt_recent_ns, v,
		    memory_order_relaxed);
	}
}

static void on_timer(uv_timer_t *t);
static void on_poll(uv_poll_t *h, int status, int events);

static bc_tier_redis_conn_state_t
state_of(const bc_tier_redis_conn_t *c)
{
	return atomic_load_explicit(&c->state, memory_order_relaxed);
}

static void
set_state(bc_tier_redis_conn_t *c, bc_tier_redis_conn_state_t s)
{
	atomic_store_explicit(&c->state, s, memory_order_relaxed);
}

static void
maybe_free(bc_tier_redis_conn_t *c)
{
	if (state_of(c) != BC_TIER_REDIS_CONN_CLOSED || c->handles > 0)
		return;
	free(c->host);
	free(c->user);
	free(c->pass);
	free(c);
}

static void
on_timer_closed(uv_handle_t *h)
{
	bc_tier_redis_conn_t *c = h->data;

	c->handles--;
	maybe_free(c);
}

static void
on_link_closed(uv_handle_t *h)
{
	link_t               *l = h->data;
	bc_tier_redis_conn_t *c = l->conn;

	free(l);
	c->handles--;
	maybe_free(c);
}

/* The BC_E* code of the failure recorded in a hiredis context. hiredis
 * keeps an I/O error only as strerror() text, so it is matched back. */
static int
code_of(const redisContext *rc)
{
	static const int known[] = { ECONNREFUSED, ECONNRESET, EPIPE,
	    ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, ECONNABORTED, ENOMEM };
	size_t i;

	switch (rc->err) {
	case REDIS_ERR_EOF:
		return BC_ECONNRESET;
	case REDIS_ERR_PROTOCOL:
		return BC_EPROTO;
	case REDIS_ERR_OOM:
		return BC_ENOMEM;
	case REDIS_ERR_IO:
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			if (strstr(rc->errstr, strerror(known[i])) != NULL)
				return -known[i];
		}
		return BC_EIO;
	default:
		return BC_EIO;
	}
}

/* The counter a link lost with code counts in. */
static _Atomic uint64_t *
kind_of(bc_tier_redis_conn_t *c, int code)
{
	switch (code) {
	case BC_ECONNREFUSED:
		return &c->stats.err_refused;
	case BC_ECONNRESET:
	case BC_EPIPE:
	case -ECONNABORTED:
		return &c->stats.err_reset;
	case BC_EPROTO:
		return &c->stats.err_protocol;
	default:
		return &c->stats.err_other;
	}
}

/* Fires cmd's callback (status, reply) and takes it off its list. A
 * written command stays allocated for hiredis's on_reply to free. */
static void
answer(cmd_t *cmd, int status, const redisReply *reply)
{
	bc_tier_redis_conn_t *c = cmd->conn;
	bc_tier_redis_conn_cb cb = cmd->cb;
	void                 *arg = cmd->arg;
	bool                  written = cmd->sent_ns != 0;

	bc_list_remove(&cmd->link);
	cmd->cb = NULL;
	if (written) {
		c->nwire--;
	} else {
		c->nqueued--;
		if (cmd->own != NULL)
			redisFreeCommand(cmd->own);
		free(cmd);
	}
	if (status < 0)
		COUNT(c, fails, 1);
	cb(arg, status, reply);
}

/* Fails every command, written ones first (in order), then the queue.
 * A callback may close c: the rest then get BC_ECANCELED from close. */
static void
fail_all(bc_tier_redis_conn_t *c, int code)
{
	bc_list_t *n;

	while ((n = bc_list_first(&c->wire)) != NULL)
		answer(BC_CONTAINER_OF(n, cmd_t, link), code, NULL);
	while ((n = bc_list_first(&c->queue)) != NULL)
		answer(BC_CONTAINER_OF(n, cmd_t, link), code, NULL);
}

/*
 * The live link is gone (its context freed, or about to be, by whoever
 * calls this): counts kind, goes DOWN with the next backoff armed, fails
 * every command with code, then tells on_state. c may be closed by a
 * callback on the way.
 */
static void
link_lost(bc_tier_redis_conn_t *c, int code, _Atomic uint64_t *kind)
{
	uint64_t delay = c->backoff_ms;

	c->link = NULL;
	c->handshake = 0;
	c->failures++;
	count_at(c, kind, 1);
	set_state(c, BC_TIER_REDIS_CONN_DOWN);
	c->backoff_ms = c->backoff_ms * 2 < c->backoff_max_ms ?
	    c->backoff_ms * 2 : c->backoff_max_ms;
	uv_timer_start(&c->timer, on_timer, delay, 0);
	if (c->failures == 1)
		BC_WARN("redis %s:%d: connection lost: %s", c->host, c->port,
		    bc_strerror(code));
	fail_all(c, code);
	if (state_of(c) == BC_TIER_REDIS_CONN_DOWN && c->on_state != NULL)
		c->on_state(c, BC_TIER_REDIS_CONN_DOWN, c->state_arg);
}

/* Ends the live link on our side: link_lost, then frees its context
 * (when hiredis runs a callback of it, right after that returns). */
static void
link_drop(bc_tier_redis_conn_t *c, int code, _Atomic uint64_t *kind)
{
	link_t *l = c->link;

	l->freeing = true;
	link_lost(c, code, kind);
	if (l->ac != NULL)
		redisAsyncFree(l->ac);
}

/* Arms the timer for the oldest written command's deadline, or stops it
 * when none is written. UP only. */
static void
arm_command_timer(bc_tier_redis_conn_t *c)
{
	bc_list_t *n = bc_list_first(&c->wire);
	uint64_t   deadline, now, ms;

	if (n == NULL) {
		uv_timer_stop(&c->timer);
		return;
	}
	deadline = BC_CONTAINER_OF(n, cmd_t, link)->sent_ns +
	    c->command_timeout_ms * 1000000u;
	now = bc_mono_ns();
	ms = deadline > now ? (deadline - now + 999999u) / 1000000u : 0;
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv);

/* Writes cmd (on no list) to the live link's context: hiredis copies it
 * into its output buffer and takes on_reply(cmd). */
static void
write_cmd(bc_tier_redis_conn_t *c, cmd_t *cmd)
{
	redisAsyncContext *ac = c->link->ac;
	bool               first = bc_list_empty(&c->wire);
	uint64_t           peak;
	size_t             extra = 0;
	int                rv;

	/* A live link's context takes commands: REDIS_OK. */
	if (cmd->flags & BC_TIER_REDIS_CONN_ASKING) {
		rv = redisAsyncFormattedCommand(ac, NULL, NULL, asking_cmd,
		    sizeof(asking_cmd) - 1);
		BC_CHECK(rv == REDIS_OK);
	}
	/* The first part, which names the command, registers on_reply; the
	 * rest go straight to the output buffer after it (hiredis does not
	 * look at a command's bytes past its name), copied once. Out of
	 * memory here is fatal, as in hiredis's own appends. */
	for (int i = 1; i < cmd->niov; i++)
		extra += cmd->iov[i].iov_len;
	if (extra > 0) {
		sds room = sdsMakeRoomFor(ac->c.obuf, cmd->iov[0].iov_len +
		    extra);

		BC_AN(room);
		ac->c.obuf = room;
	}
	rv = redisAsyncFormattedCommand(ac, on_reply, cmd, cmd->iov[0].iov_base,
	    cmd->iov[0].iov_len);
	BC_CHECK(rv == REDIS_OK);
	(void)rv;
	for (int i = 1; i < cmd->niov; i++)
		ac->c.obuf = sdscatlen(ac->c.obuf, cmd->iov[i].iov_base,
		    cmd->iov[i].iov_len);   /* room made: no allocation */
	if (cmd->own != NULL)
		redisFreeCommand(cmd->own);
	cmd->own = NULL;
	cmd->niov = 0;
	cmd->sent_ns = bc_mono_ns();
	bc_list_insert_tail(&c->wire, &cmd->link);
	c->nwire++;
	peak = atomic_load_explicit(&c->stats.outstanding_peak,
	    memory_order_relaxed);
	if (c->nwire > peak)
		atomic_store_explicit(&c->stats.outstanding_peak, c->nwire,
		    memory_order_relaxed);
	if (c->totals != NULL && c->nwire > atomic_load_explicit(
	    &c->totals->outstanding_peak, memory_order_relaxed))
		atomic_store_explicit(&c->totals->outstanding_peak, c->nwire,
		    memory_order_relaxed);
	if (first)
		arm_command_timer(c);
}

/*
 * Writes queued commands while the link is UP and the bounds allow: at
 * most max_outstanding on the wire, and no more while hiredis's output
 * buffer holds OBUF_MAX bytes not yet written. hiredis moves what a
 * partial write left to the buffer's front (sdsrange): with 64 slices of
 * 1 MiB in it, each write of a few hundred KiB moved tens of MiB, which
 * made writing behind to Redis cost more CPU than the fill itself.
 */
#define OBUF_MAX (256u * 1024)

static void
pump(bc_tier_redis_conn_t *c)
{
	bc_list_t *n;

	while (c->link != NULL && state_of(c) == BC_TIER_REDIS_CONN_UP &&
	    c->nwire < c->max_outstanding &&
	    sdslen(c->link->ac->c.obuf) < OBUF_MAX &&
	    (n = bc_list_first(&c->queue)) != NULL) {
		bc_list_remove(n);
		c->nqueued--;
		write_cmd(c, BC_CONTAINER_OF(n, cmd_t, link));
	}
}

static void
on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	cmd_t                *cmd = priv;
	link_t               *l = ac->ev.data;
	bc_tier_redis_conn_t *c = cmd->conn;
	const redisReply     *reply = r;
	int                   code;

	if (reply == NULL) {
		/* The context is being freed. If hiredis found the failure,
		 * this is the first we hear of it. */
		if (c->link == l) {
			l->freeing = true;
			code = code_of(&ac->c);
			link_lost(c, code, kind_of(c, code));
		}
		BC_CHECK(cmd->cb == NULL);
		free(cmd);
		return;
	}
	/* An answered command's link is gone: no reply reaches it. */
	BC_CHECK(cmd->cb != NULL);
	COUNT(c, replies, 1);
	rtt_note(c, bc_mono_ns() - cmd->sent_ns);
	if (reply->type == REDIS_REPLY_ERROR)
		COUNT(c, error_replies, 1);
	answer(cmd, 0, reply);
	free(cmd);
	if (c->link == l) {
		pump(c);
		arm_command_timer(c);
	}
}

static void
go_up(bc_tier_redis_conn_t *c)
{
	if (c->failures > 0)
		BC_INFO("redis %s:%d: connected again", c->host, c->port);
	c->failures = 0;
	c->backoff_ms = c->backoff_min_ms;
	set_state(c, BC_TIER_REDIS_CONN_UP);
	COUNT(c, connects, 1);
	uv_timer_stop(&c->timer);
	pump(c);
	if (c->on_state != NULL)
		c->on_state(c, BC_TIER_REDIS_CONN_UP, c->state_arg);
}

static void
on_handshake(redisAsyncContext *ac, void *r, void *priv)
{
	link_t               *l = priv;
	bc_tier_redis_conn_t *c = l->conn;
	const redisReply     *reply = r;

	(void)ac;
	if (reply == NULL || c->link != l)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		BC_WARN("redis %s:%d: AUTH/SELECT refused: %s", c->host,
		    c->port, reply->str);
		link_drop(c, BC_EACCES, &c->stats.err_auth);
		return;
	}
	if (--c->handshake == 0)
		go_up(c);
}

/* The handshake's last answer: a server that accepts connections but
 * does not answer (stopped, hung) never makes the connection UP. */
static void
on_ping(redisAsyncContext *ac, void *r, void *priv)
{
	link_t               *l = priv;
	bc_tier_redis_conn_t *c = l->conn;
	const redisReply     *reply = r;
	bool                  noauth;

	(void)ac;
	if (reply == NULL || c->link != l)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		noauth = strncmp(reply->str, "NOAUTH", 6) == 0;
		BC_WARN("redis %s:%d: PING refused: %s", c->host, c->port,
		    reply->str);
		link_drop(c, noauth ? BC_EACCES : BC_EIO, noauth ?
		    &c->stats.err_auth : &c->stats.err_other);
		return;
	}
	if (--c->handshake == 0)
		go_up(c);
}

static void
on_connect(const redisAsyncContext *ac, int status)
{
	link_t               *l = ac->ev.data;
	bc_tier_redis_conn_t *c = l->conn;
	int                   code;

	if (c->link != l)
		return;
	if (status != REDIS_OK) {
		/* hiredis frees the context when this returns. */
		l->freeing = true;
		code = code_of(&ac->c);
		link_lost(c, code, kind_of(c, code));
		return;
	}
	if (c->handshake == 0)
		go_up(c);
}

/* ---- hiredis's event hooks, on the link's uv_poll_t ----------------- */

static void
poll_set(link_t *l, int events)
{
	if (events == l->events)
		return;
	l->events = events;
	if (events == 0)
		uv_poll_stop(&l->poll);
	else
		uv_poll_start(&l->poll, events, on_poll);
}

static void
ev_add_read(void *p)
{
	link_t *l = p;

	poll_set(l, l->events | UV_READABLE);
}

static void
ev_del_read(void *p)
{
	link_t *l = p;

	poll_set(l, l->events & ~UV_READABLE);
}

static void
ev_add_write(void *p)
{
	link_t *l = p;

	poll_set(l, l->events | UV_WRITABLE);
}

static void
ev_del_write(void *p)
{
	link_t *l = p;

	poll_set(l, l->events & ~UV_WRITABLE);
}

/* hiredis is about to close the socket and free the context. */
static void
ev_cleanup(void *p)
{
	link_t               *l = p;
	bc_tier_redis_conn_t *c = l->conn;
	int                   code;

	if (c->link == l) {
		l->freeing = true;
		code = code_of(&l->ac->c);
		link_lost(c, code, kind_of(c, code));
	}
	uv_poll_stop(&l->poll);
	uv_close((uv_handle_t *)&l->poll, on_link_closed);
	l->ac = NULL;
}

/* libuv reports a socket error (POLLERR: a refused connect, a reset) as
 * a poll error, which the socket's SO_ERROR names. */
static void
poll_failed(bc_tier_redis_conn_t *c, link_t *l)
{
	int       err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(l->ac->c.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
	    err != 0)
		link_drop(c, -err, kind_of(c, -err));
	else
		link_drop(c, BC_EIO, &c->stats.err_poll);
}

#define READS_PER_POLL 64

static void
on_poll(uv_poll_t *h, int status, int events)
{
	link_t               *l = h->data;
	bc_tier_redis_conn_t *c = l->conn;

	if (l->ac == NULL || c->link != l)
		return;
	if (status < 0) {
		poll_failed(c, l);
		return;
	}
	/* hiredis reads 16 KiB a call: read on while the socket has bytes
	 * (a slice is 64 reads), not one poll round each */
	for (int i = 0; (events & UV_READABLE) && i < READS_PER_POLL; i++) {
		int avail = 0;

		redisAsyncHandleRead(l->ac);
		if (l->ac == NULL || c->link != l)
			return;
		if (ioctl(l->ac->c.fd, FIONREAD, &avail) < 0 || avail <= 0)
			break;
	}
	if ((events & UV_WRITABLE) && l->ac != NULL && c->link == l) {
		redisAsyncHandleWrite(l->ac);
		if (l->ac != NULL && c->link == l)
			pump(c);   /* the output buffer drained */
	}
}

/* ---- connecting ------------------------------------------------------ */

static void
handshake_send(bc_tier_redis_conn_t *c, link_t *l)
{
	const char *argv[3];
	size_t      lens[3];
	char        db[16];
	int         argc = 0;

	if (c->pass != NULL) {
		argv[argc++] = "AUTH";
		if (c->user != NULL)
			argv[argc++] = c->user;
		argv[argc++] = c->pass;
		for (int i = 0; i < argc; i++)
			lens[i] = strlen(argv[i]);
		redisAsyncCommandArgv(l->ac, on_handshake, l, argc, argv, lens);
		c->handshake++;
	}
	if (c->db > 0) {
		snprintf(db, sizeof(db), "%d", c->db);
		argv[0] = "SELECT";
		argv[1] = db;
		lens[0] = 6;
		lens[1] = strlen(db);
		redisAsyncCommandArgv(l->ac, on_handshake, l, 2, argv, lens);
		c->handshake++;
	}
	argv[0] = "PING";
	lens[0] = 4;
	redisAsyncCommandArgv(l->ac, on_ping, l, 1, argv, lens);
	c->handshake++;
}

/* Starts the TCP connect to addr (an IP address: hiredis looks it up
 * without asking a DNS server) and the handshake. CONNECTING, the
 * connect deadline armed. */
static void
connect_to(bc_tier_redis_conn_t *c, const char *addr)
{
	redisAsyncContext *ac;
	link_t            *l;
	int                code;

	ac = redisAsyncConnect(addr, c->port);
	if (ac == NULL) {
		link_lost(c, BC_ENOMEM, &c->stats.err_other);
		return;
	}
	if (ac->err != 0) {
		code = code_of(&ac->c);
		redisAsyncFree(ac);
		link_lost(c, code, kind_of(c, code));
		return;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL || uv_poll_init_socket(bc_loop_uv(c->loop), &l->poll,
	    ac->c.fd) != 0) {
		free(l);
		redisAsyncFree(ac);
		link_lost(c, BC_ENOMEM, &c->stats.err_other);
		return;
	}
	l->poll.data = l;
	l->conn = c;
	l->ac = ac;
	c->handles++;
	ac->ev.data = l;
	ac->ev.addRead = ev_add_read;
	ac->ev.delRead = ev_del_read;
	ac->ev.addWrite = ev_add_write;
	ac->ev.delWrite = ev_del_write;
	ac->ev.cleanup = ev_cleanup;
	/* Keep the read buffer between replies: hiredis frees one of more
	 * than 16 KiB whenever it empties, so every slice (~1 MiB) cost a
	 * fresh mapping, its page faults and an munmap. It is bounded by the
	 * largest reply (a slice and its header). */
	ac->c.reader->maxbuf = 0;
	c->link = l;
	redisAsyncSetConnectCallback(ac, on_connect);
	handshake_send(c, l);
}

/* res's first IPv4 address, else its first IPv6 one (hiredis's own
 * preference), into out; false when it has neither. */
static bool
first_addr(const struct addrinfo *res, char out[INET6_ADDRSTRLEN])
{
	const struct addrinfo *pick = NULL;

	for (; res != NULL; res = res->ai_next) {
		if (res->ai_family == AF_INET) {
			pick = res;
			break;
		}
		if (res->ai_family == AF_INET6 && pick == NULL)
			pick = res;
	}
	return pick != NULL &&
	    uv_ip_name(pick->ai_addr, out, INET6_ADDRSTRLEN) == 0;
}

/* A lookup ended (status 0, or a UV_EAI_* code; UV_EAI_CANCELED after
 * close). Its answer goes to the attempt waiting for it, or is kept for
 * the next one. */
static void
on_lookup(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	lookup_t             *lk = req->data;
	bc_tier_redis_conn_t *c = lk->conn;
	bool                  found;

	found = status == 0 && first_addr(res, c->addr);
	uv_freeaddrinfo(res);
	free(lk);
	c->lookup = NULL;
	c->handles--;
	if (state_of(c) == BC_TIER_REDIS_CONN_CLOSED) {
		maybe_free(c);
		return;
	}
	if (!c->awaiting) {   /* that attempt timed out; the next uses it */
		c->have_addr = found;
		return;
	}
	c->awaiting = false;
	if (!found) {
		if (c->failures == 0)
			BC_WARN("redis %s:%d: cannot look the name up: %s",
			    c->host, c->port, status == 0 ?
			    "no IPv4 or IPv6 address" : uv_strerror(status));
		link_lost(c, -EHOSTUNREACH, &c->stats.err_lookup);
		return;
	}
	/* the connect and handshake get a whole deadline of their own */
	uv_timer_start(&c->timer, on_timer, c->connect_timeout_ms, 0);
	connect_to(c, c->addr);
}

/* Starts the lookup of c->host; this attempt waits for it. */
static void
lookup_start(bc_tier_redis_conn_t *c)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM };
	lookup_t       *lk = calloc(1, sizeof(*lk));

	if (lk == NULL) {
		link_lost(c, BC_ENOMEM, &c->stats.err_other);
		return;
	}
	lk->conn = c;
	lk->req.data = lk;
	if (uv_getaddrinfo(bc_loop_uv(c->loop), &lk->req, on_lookup, c->host,
	    NULL, &hints) != 0) {
		free(lk);
		link_lost(c, BC_ENOMEM, &c->stats.err_other);
		return;
	}
	c->lookup = lk;
	c->handles++;
	c->awaiting = true;
}

/* One connect attempt: at once to an address, else after the name's
 * lookup (one still running from an attempt that timed out, or new). */
static void
connect_start(bc_tier_redis_conn_t *c)
{
	set_state(c, BC_TIER_REDIS_CONN_CONNECTING);
	if (c->failures > 0)
		COUNT(c, reconnects, 1);
	uv_timer_start(&c->timer, on_timer, c->connect_timeout_ms, 0);
	if (c->numeric) {
		connect_to(c, c->host);
	} else if (c->have_addr) {
		c->have_addr = false;
		connect_to(c, c->addr);
	} else if (c->lookup != NULL) {
		c->awaiting = true;
	} else {
		lookup_start(c);
	}
}

static void
on_timer(uv_timer_t *t)
{
	bc_tier_redis_conn_t *c = t->data;
	bc_list_t            *n;
	uint64_t              deadline;

	switch (state_of(c)) {
	case BC_TIER_REDIS_CONN_DOWN:
		connect_start(c);
		break;
	case BC_TIER_REDIS_CONN_CONNECTING:
		if (c->awaiting) {                /* the lookup is too slow */
			c->awaiting = false;
			if (c->failures == 0)
				BC_WARN("redis %s:%d: the name's lookup took "
				    "longer than the connect timeout",
				    c->host, c->port);
			link_lost(c, BC_ETIMEDOUT,
			    &c->stats.err_connect_timeout);
		} else if (c->link == NULL)
			connect_start(c);           /* the first attempt */
		else
			link_drop(c, BC_ETIMEDOUT,
			    &c->stats.err_connect_timeout);
		break;
	case BC_TIER_REDIS_CONN_UP:
		n = bc_list_first(&c->wire);
		if (n == NULL)
			break;
		deadline = BC_CONTAINER_OF(n, cmd_t, link)->sent_ns +
		    c->command_timeout_ms * 1000000u;
		if (bc_mono_ns() >= deadline) {
			BC_WARN("redis %s:%d: command timed out after %llu ms",
			    c->host, c->port,
			    (unsigned long long)c->command_timeout_ms);
			link_drop(c, BC_ETIMEDOUT, &c->stats.err_timeout);
		} else {
			arm_command_timer(c);
		}
		break;
	case BC_TIER_REDIS_CONN_CLOSED:
		break;
	}
}

/* ---- the API ----------------------------------------------------------- */

static char *
dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*failed = true;
	return d;
}

int
bc_tier_redis_conn_new(bc_loop_t *loop, const bc_tier_redis_conn_opts_t *o,
    bc_tier_redis_conn_t **out)
{
	bc_tier_redis_conn_t *c;
	bool                  failed = false;

	if (o->host == NULL || o->port <= 0 || o->port > 65535)
		return BC_EINVAL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return BC_ENOMEM;
	c->host = dup_or_null(o->host, &failed);
	c->user = dup_or_null(o->user, &failed);
	c->pass = dup_or_null(o->pass, &failed);
	if (failed) {
		free(c->host);
		free(c->user);
		free(c->pass);
		free(c);
		return BC_ENOMEM;
	}
	c->loop = loop;
	c->port = o->port;
	c->db = o->db;
	c->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms
	    : 1000;
	c->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms
	    : 1000;
	c->max_outstanding = o->max_outstanding ? o->max_outstanding : 64;
	c->max_queued = o->max_queued ? o->max_queued : 4096;
	c->backoff_min_ms = o->backoff_min_ms ? o->backoff_min_ms : 100;
	c->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : 5000;
	if (c->backoff_max_ms < c->backoff_min_ms)
		c->backoff_max_ms = c->backoff_min_ms;
	c->backoff_ms = c->backoff_min_ms;
	{
		unsigned char a[sizeof(struct in6_addr)];

		c->numeric = inet_pton(AF_INET, c->host, a) == 1 ||
		    inet_pton(AF_INET6, c->host, a) == 1;
	}
	c->on_state = o->on_state;
	c->state_arg = o->state_arg;
	c->totals = o->totals;
	bc_list_init(&c->queue);
	bc_list_init(&c->wire);
	set_state(c, BC_TIER_REDIS_CONN_CONNECTING);
	uv_timer_init(bc_loop_uv(loop), &c->timer);
	c->timer.data = c;
	c->handles = 1;
	uv_timer_start(&c->timer, on_timer, 0, 0);
	*out = c;
	return 0;
}

/* Whether c takes a command now: 0 or the code submit returns. */
static int
refusal(bc_tier_redis_conn_t *c)
{
	switch (state_of(c)) {
	case BC_TIER_REDIS_CONN_CLOSED:
		return BC_ECANCELED;
	case BC_TIER_REDIS_CONN_DOWN:
		COUNT(c, rejects, 1);
		return BC_ENOTCONN;
	default:
		break;
	}
	if (c->nqueued >= c->max_queued) {
		COUNT(c, rejects, 1);
		return BC_EAGAIN;
	}
	return 0;
}

/* Takes a command in (buf of len bytes; own: buf is ours to free) for
 * cb(arg); refusal() said yes. Writes it at once when nothing waits
 * ahead of it and the bound allows. */
static int
enqueue(bc_tier_redis_conn_t *c, const struct iovec *iov, int niov,
    char *own, unsigned flags, bc_tier_redis_conn_cb cb, void *arg)
{
	cmd_t *cmd = calloc(1, sizeof(*cmd));

	if (cmd == NULL)
		return BC_ENOMEM;
	cmd->conn = c;
	cmd->cb = cb;
	cmd->arg = arg;
	memcpy(cmd->iov, iov, (size_t)niov * sizeof(*iov));
	cmd->niov = niov;
	cmd->own = own;
	cmd->flags = flags;
	bc_list_init(&cmd->link);
	COUNT(c, commands, 1);
	if (state_of(c) == BC_TIER_REDIS_CONN_UP && bc_list_empty(&c->queue) &&
	    c->nwire < c->max_outstanding &&
	    sdslen(c->link->ac->c.obuf) < OBUF_MAX) {
		write_cmd(c, cmd);
	} else {
		bc_list_insert_tail(&c->queue, &cmd->link);
		c->nqueued++;
	}
	return 0;
}

int
bc_tier_redis_conn_submit(bc_tier_redis_conn_t *c, int argc,
    const char **argv, const size_t *argvlen, bc_tier_redis_conn_cb cb,
    void *arg)
{
	char *buf = NULL;
	int   len, rv;

	if (argc <= 0 || argv == NULL || argvlen == NULL || cb == NULL)
		return BC_EINVAL;
	rv = refusal(c);
	if (rv < 0)
		return rv;
	len = redisFormatCommandArgv(&buf, argc, argv, argvlen);
	if (len < 0)
		return BC_ENOMEM;
	rv = enqueue(c, &(struct iovec){ buf, (size_t)len }, 1, buf, 0, cb,
	    arg);
	if (rv < 0)
		redisFreeCommand(buf);
	return rv;
}

int
bc_tier_redis_conn_submit_fmt(bc_tier_redis_conn_t *c, const char *cmd,
    size_t len, unsigned flags, bc_tier_redis_conn_cb cb, void *arg)
{
	return bc_tier_redis_conn_submit_iov(c, &(struct iovec){ (void *)cmd,
	    len }, 1, flags, cb, arg);
}

int
bc_tier_redis_conn_submit_iov(bc_tier_redis_conn_t *c,
    const struct iovec *iov, int niov, unsigned flags,
    bc_tier_redis_conn_cb cb, void *arg)
{
	const char *first;
	int         rv;

	if (iov == NULL || niov < 1 || niov > BC_TIER_REDIS_CONN_IOV_MAX ||
	    cb == NULL)
		return BC_EINVAL;
	first = iov[0].iov_base;
	/* hiredis reads the command's name from the first part */
	if (first == NULL || iov[0].iov_len < 4 || first[0] != '*' ||
	    memchr(first, '$', iov[0].iov_len) == NULL)
		return BC_EINVAL;
	rv = refusal(c);
	if (rv < 0)
		return rv;
	return enqueue(c, iov, niov, NULL, flags, cb, arg);
}

void
bc_tier_redis_conn_close(bc_tier_redis_conn_t *c)
{
	link_t *l;

	if (c == NULL)
		return;
	BC_CHECK(state_of(c) != BC_TIER_REDIS_CONN_CLOSED);
	l = c->link;
	c->link = NULL;
	c->awaiting = false;
	set_state(c, BC_TIER_REDIS_CONN_CLOSED);
	if (c->lookup != NULL)   /* fails unless it has not started yet */
		(void)uv_cancel((uv_req_t *)&c->lookup->req);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
	fail_all(c, BC_ECANCELED);
	if (l != NULL) {
		l->freeing = true;
		if (l->ac != NULL)
			redisAsyncFree(l->ac);
	}
}

bc_tier_redis_conn_state_t
bc_tier_redis_conn_state(const bc_tier_redis_conn_t *c)
{
	return state_of(c);
}

const bc_tier_redis_conn_stats_t *
bc_tier_redis_conn_stats(const bc_tier_redis_conn_t *c)
{
	return &c->stats;
}
