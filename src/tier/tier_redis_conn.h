/*
 * tier_redis_conn.h — one asynchronous connection to one Redis node, on
 * the loop (hiredis's async API driven by our own uv_poll_t/uv_timer_t
 * glue: Debian's hiredis 0.14 libuv adapter drops poll errors and has no
 * timeouts).
 *
 * Threads: every function but bc_tier_redis_conn_state() and
 * bc_tier_redis_conn_stats() runs on the loop thread only; callers on
 * other threads hop with bc_loop_call. Callbacks fire on the loop thread.
 *
 * Life of a connection: DOWN → CONNECTING (a host name's lookup, off the
 * loop thread, within connect_timeout_ms: one slower fails the attempt
 * but goes on, and serves the next; then TCP connect, AUTH and SELECT
 * when configured, and a PING, all within connect_timeout_ms:
 * a server that accepts connections but does not answer is not UP) → UP.
 * Any failure (refused, reset or closed by the server, a poll error, a
 * protocol error, AUTH/SELECT/PING refused, a connect or command timeout) drops
 * the link: every pending command's callback fires once with the failure's
 * code, the connection goes DOWN and tries again after a backoff
 * (backoff_min_ms doubling to backoff_max_ms; back to the minimum once
 * UP). A command that timed out is never answered later: its link is
 * gone before its callback runs.
 *
 * Commands: sent in submission order; at most max_outstanding are on the
 * wire (sent, reply not read yet: Redis holds unread replies in its
 * output buffers, which count against maxmemory), the rest wait in our
 * queue of at most max_queued. A command's timeout runs from the moment
 * it is written, not while it waits in the queue.
 *
 * While DOWN, submit refuses commands (BC_ENOTCONN): callers fail fast
 * instead of waiting out the backoff. While CONNECTING, they queue.
 *
 * The connection must be closed (bc_tier_redis_conn_close) before its
 * loop stops closing handles: at the latest from bc_loop_stop's stop_fn.
 * hiredis writes with write(2): the process must ignore SIGPIPE.
 */
#ifndef BC_TIER_REDIS_CONN_H
#define BC_TIER_REDIS_CONN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "loop/loop.h"

typedef struct bc_tier_redis_conn_s bc_tier_redis_conn_t;

typedef enum bc_tier_redis_conn_state_e {
	BC_TIER_REDIS_CONN_DOWN = 0,        /* waiting to reconnect */
	BC_TIER_REDIS_CONN_CONNECTING = 1,  /* connect, AUTH, SELECT */
	BC_TIER_REDIS_CONN_UP = 2,
	BC_TIER_REDIS_CONN_CLOSED = 3,
} bc_tier_redis_conn_state_t;

/* Called on the loop thread when the connection goes UP, and when it goes
 * DOWN (after each failed attempt too); not for CONNECTING or CLOSED. It
 * may submit; it must not close c. */
typedef void (*bc_tier_redis_conn_state_cb)(bc_tier_redis_conn_t *c,
    bc_tier_redis_conn_state_t state, void *arg);

typedef struct bc_tier_redis_conn_opts_s {
	const char *host;              /* an address or name (copied); a name
	                                * is looked up on libuv's pool, for
	                                * every connect attempt */
	int         port;
	const char *user;              /* AUTH user pass; NULL: AUTH pass */
	const char *pass;              /* NULL: no AUTH */
	int         db;                /* SELECT db when > 0 */
	uint64_t    connect_timeout_ms;  /* 0: 1000 */
	uint64_t    command_timeout_ms;  /* 0: 1000 */
	uint32_t    max_outstanding;     /* 0: 64 */
	uint32_t    max_queued;          /* 0: 4096 */
	uint64_t    backoff_min_ms;      /* 0: 100 */
	uint64_t    backoff_max_ms;      /* 0: 5000 */
	bc_tier_redis_conn_state_cb on_state;   /* may be NULL */
	void       *state_arg;
	/* Counters every count also goes to (the connections of one
	 * client summed; outstanding_peak and rtt_recent_ns over them all);
	 * may be NULL; must outlive the connection. */
	struct bc_tier_redis_conn_stats_s *totals;
} bc_tier_redis_conn_opts_t;

/*
 * Counters, one X line each (name, what it counts). Failures are counted
 * once per dropped link, by kind; fails counts the commands they failed.
 */
#define BC_TIER_REDIS_CONN_STATS(X)                                         \
	X(commands,        "commands accepted by submit")                     \
	X(replies,         "commands answered (error replies included)")      \
	X(error_replies,   "answers that were Redis error replies")           \
	X(fails,           "commands failed without an answer")               \
	X(rejects,         "submits refused: queue full or connection down")  \
	X(connects,        "connections that came UP")                        \
	X(reconnects,      "connect attempts after a failure")                \
	X(err_refused,     "links lost: connection refused")                  \
	X(err_reset,       "links lost: reset or closed by the server")       \
	X(err_poll,        "links lost: the poll reported an error")          \
	X(err_timeout,     "links lost: a command timed out")                 \
	X(err_connect_timeout, "links lost: lookup/connect/AUTH/SELECT too slow") \
	X(err_lookup,      "links lost: the host name did not resolve")       \
	X(err_auth,        "links lost: AUTH or SELECT refused")              \
	X(err_protocol,    "links lost: a reply hiredis could not parse")     \
	X(err_other,       "links lost: any other failure")                   \
	X(rtt_ns_sum,      "round-trip time of answered commands, summed")    \
	X(rtt_count,       "answered commands in rtt_ns_sum")                 \
	X(outstanding_peak, "most commands on the wire at once")

typedef struct bc_tier_redis_conn_stats_s {
#define BC_TIER_REDIS_CONN_STAT_FIELD(name, help) _Atomic uint64_t name;
	BC_TIER_REDIS_CONN_STATS(BC_TIER_REDIS_CONN_STAT_FIELD)
#undef BC_TIER_REDIS_CONN_STAT_FIELD
	/* Not a counter: recent round trip, a moving average over about the
	 * last 16 answers (each moves it 1/16 of the way). */
	_Atomic uint64_t rtt_recent_ns;
} bc_tier_redis_conn_stats_t;

/*
 * A command's callback: on the loop thread, exactly once per submit that
 * returned 0, never from inside submit. status 0: reply is Redis's answer
 * (an error reply too: REDIS_REPLY_ERROR), valid only during the call.
 * status < 0 (reply NULL): BC_ETIMEDOUT (this command timed out),
 * BC_ECANCELED (closed), or the code of the failure that dropped the link
 * (BC_ECONNREFUSED, BC_ECONNRESET, BC_EACCES for AUTH/SELECT refused,
 * BC_EPROTO, another -errno).
 */
typedef void (*bc_tier_redis_conn_cb)(void *arg, int status,
    const redisReply *reply);

/* Flags of bc_tier_redis_conn_submit_fmt. */
#define BC_TIER_REDIS_CONN_ASKING 1u  /* send ASKING just before it */

/*
 * Creates a connection to o->host:o->port on loop and starts connecting
 * (from the loop, not inside this call). Loop thread only. Returns 0 and
 * *out (state CONNECTING), or BC_EINVAL (no host, bad port) or
 * BC_ENOMEM. o's strings are copied.
 */
int bc_tier_redis_conn_new(bc_loop_t *loop,
    const bc_tier_redis_conn_opts_t *o, bc_tier_redis_conn_t **out);

/*
 * Sends argv[0..argc) (binary-safe: argvlen[i] bytes each; copied before
 * it returns). Loop thread only. Returns 0, and cb(arg, ...) fires later
 * exactly once; or a negative code and cb never fires: BC_ENOTCONN (the
 * connection is DOWN), BC_EAGAIN (the queue is full), BC_ECANCELED
 * (closed), BC_EINVAL, BC_ENOMEM.
 */
int bc_tier_redis_conn_submit(bc_tier_redis_conn_t *c, int argc,
    const char **argv, const size_t *argvlen, bc_tier_redis_conn_cb cb,
    void *arg);

/*
 * The same for a command already in Redis's protocol (len bytes at cmd,
 * e.g. from redisFormatSdsCommandArgv), which is borrowed: it must stay
 * valid and unchanged until cb fires. flags: BC_TIER_REDIS_CONN_ASKING
 * sends ASKING right before the command on the same link (the pair
 * counts as one command; ASKING's answer is not reported).
 */
int bc_tier_redis_conn_submit_fmt(bc_tier_redis_conn_t *c, const char *cmd,
    size_t len, unsigned flags, bc_tier_redis_conn_cb cb, void *arg);

/*
 * The same for a command in parts (at most BC_TIER_REDIS_CONN_IOV_MAX,
 * their bytes borrowed until cb fires; the array itself is copied),
 * joined only when written: a value in the middle is copied once, into
 * hiredis's output buffer. The first part must hold the command's
 * '*' count and its name (hiredis reads it), else BC_EINVAL.
 */
#define BC_TIER_REDIS_CONN_IOV_MAX 4
struct iovec;
int bc_tier_redis_conn_submit_iov(bc_tier_redis_conn_t *c,
    const struct iovec *iov, int niov, unsigned flags,
    bc_tier_redis_conn_cb cb, void *arg);

/*
 * Closes c: every pending command's callback fires with BC_ECANCELED
 * before it returns, the link is dropped, and c's memory goes once its
 * handles are closed. c must not be used after; NULL is a no-op. Loop
 * thread only; it may be called from a command's callback.
 */
void bc_tier_redis_conn_close(bc_tier_redis_conn_t *c);

/* Thread-safe: the state now, and c's counters (read each field with
 * atomic_load). c must be open. */
bc_tier_redis_conn_state_t bc_tier_redis_conn_state(
    const bc_tier_redis_conn_t *c);
const bc_tier_redis_conn_stats_t *bc_tier_redis_conn_stats(
    const bc_tier_redis_conn_t *c);

#endif
