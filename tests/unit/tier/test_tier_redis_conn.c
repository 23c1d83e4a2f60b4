/*
 * test_tier_redis_conn.c — one Redis connection on the loop
 * (tier/tier_redis_conn.c) against a real redis-server
 * (redis_fixture.h): binary SET/GET of 1 MiB and the kinds of reply;
 * commands in parts (a borrowed 1 MiB value in the middle);
 * AUTH and SELECT, and a refused AUTH; many commands at once through a
 * small outstanding bound (all answered, in order, never more on the
 * wire than the bound) and a full queue refusing submits; a command
 * timeout against a SIGSTOPped server (fires BC_ETIMEDOUT once, the
 * connection comes back, the late reply reaches no one); a killed server
 * (pending commands fail once, the connection reconnects when it is back);
 * a refused connect; a connect timeout (a listener that accepts and
 * never answers the handshake's PING: not UP); a host name looked up off
 * the loop, and closed while its lookup runs; close with commands
 * pending, also from inside a callback.
 *
 * Everything touching the connection runs on the loop thread
 * (redis_fixture_on_loop); the test thread waits on callbacks.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "redis_fixture.h"
#include "tier/tier_redis_conn.h"
#include "util/util_error.h"

#define STAT(c, f) atomic_load(&bc_tier_redis_conn_stats(c)->f)

typedef struct fix_s {
	bc_loop_t                *loop;
	redis_node_t             *node;
	bc_tier_redis_conn_t     *conn;
	bc_tier_redis_conn_opts_t opts;
	int                       ups, downs;   /* under the fixture lock */
} fix_t;

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

static void
on_state(bc_tier_redis_conn_t *c, bc_tier_redis_conn_state_t s, void *arg)
{
	fix_t *f = arg;

	(void)c;
	redis_fixture_lock();
	if (s == BC_TIER_REDIS_CONN_UP)
		f->ups++;
	else
		f->downs++;
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

static void
leftovers(void)
{
	redis_fixture_cleanup();
}

TestSuite(redis_conn, .fini = leftovers);

static void
do_open(void *arg)
{
	fix_t *f = arg;

	cr_assert_eq(bc_tier_redis_conn_new(f->loop, &f->opts, &f->conn), 0);
}

static void
do_close(void *arg)
{
	fix_t *f = arg;

	bc_tier_redis_conn_close(f->conn);
	f->conn = NULL;
}

/* ---- submitting from the loop ----------------------------------------- */

#define MAXARG 8

typedef struct sub_s {
	fix_t       *f;
	int          argc;
	const char  *argv[MAXARG];
	size_t       lens[MAXARG];
	redis_res_t *res;
	int          rv;
} sub_t;

static void
do_submit(void *arg)
{
	sub_t *s = arg;

	s->rv = bc_tier_redis_conn_submit(s->f->conn, s->argc, s->argv,
	    s->lens, redis_res_cb, s->res);
}

/* A loop, a server (password pass unless NULL; none when port > 0: the
 * connection goes to that port) and opts for a connection to it. */
static void
setup(fix_t *f, const char *pass, int port)
{
	if (!redis_fixture_have())
		cr_skip_test("redis-server not installed");
	signal(SIGPIPE, SIG_IGN);
	memset(f, 0, sizeof(*f));
	f->loop = bc_loop_new(no_xfers);
	cr_assert_not_null(f->loop);
	cr_assert_eq(bc_loop_start(f->loop), 0);
	if (port == 0) {
		f->node = redis_fixture_start(pass);
		port = f->node->port;
	}
	f->opts.host = "127.0.0.1";
	f->opts.port = port;
	f->opts.on_state = on_state;
	f->opts.state_arg = f;
}

static void
open_conn(fix_t *f)
{
	redis_fixture_on_loop(f->loop, do_open, f);
}

static void
do_open_ping(void *arg)
{
	sub_t *s = arg;

	do_open(s->f);
	do_submit(s);
}

/* Opens the connection and submits PING in the same loop turn, while
 * the connection is CONNECTING: it waits for the connect. */
static void
open_ping(fix_t *f, redis_res_t *res)
{
	sub_t s = { .f = f, .res = res, .argc = 1, .argv = { "PING" },
	    .lens = { 4 } };

	redis_fixture_on_loop(f->loop, do_open_ping, &s);
	cr_assert_eq(s.rv, 0, "submit: %s", bc_strerror(s.rv));
}

static void
open_up(fix_t *f)
{
	open_conn(f);
	RF_WAIT_FOR(f->ups >= 1);
}

static void
teardown(fix_t *f)
{
	if (f->conn != NULL)
		redis_fixture_on_loop(f->loop, do_close, f);
	bc_loop_stop(f->loop, NULL, NULL);
	bc_loop_free(f->loop);
	redis_fixture_cleanup();
}

/* Submits the NULL-terminated strings as a command; returns submit's
 * code. */
static int
submit(fix_t *f, redis_res_t *res, const char *a0, ...)
{
	sub_t       s = { .f = f, .res = res };
	const char *a;
	va_list     ap;

	va_start(ap, a0);
	for (a = a0; a != NULL; a = va_arg(ap, const char *)) {
		cr_assert_lt(s.argc, MAXARG);
		s.argv[s.argc] = a;
		s.lens[s.argc++] = strlen(a);
	}
	va_end(ap);
	redis_fixture_on_loop(f->loop, do_submit, &s);
	return s.rv;
}

/* Submits and waits for the answer. */
static void
run(fix_t *f, redis_res_t *res, const char *a0, ...)
{
	sub_t       s = { .f = f, .res = res };
	const char *a;
	va_list     ap;

	redis_res_clear(res);
	va_start(ap, a0);
	for (a = a0; a != NULL; a = va_arg(ap, const char *)) {
		cr_assert_lt(s.argc, MAXARG);
		s.argv[s.argc] = a;
		s.lens[s.argc++] = strlen(a);
	}
	va_end(ap);
	redis_fixture_on_loop(f->loop, do_submit, &s);
	cr_assert_eq(s.rv, 0, "submit: %s", bc_strerror(s.rv));
	redis_res_wait(res);
}

/* ---- tests ------------------------------------------------------------- */

LTest(redis_conn, binary_values_and_replies)
{
	fix_t       f;
	redis_res_t r = { 0 };
	sub_t       s;
	size_t      n = 1024 * 1024;
	char       *val = malloc(n);

	setup(&f, NULL, 0);
	open_up(&f);
	for (size_t i = 0; i < n; i++)
		val[i] = (char)(i * 7 + i / 251);
	memcpy(val, "a\0b\r\n$3\r\n", 9);
	s = (sub_t){ .f = &f, .res = &r, .argc = 3,
	    .argv = { "SET", "bin\0key", val }, .lens = { 3, 7, n } };
	redis_fixture_on_loop(f.loop, do_submit, &s);
	cr_assert_eq(s.rv, 0);
	redis_res_wait(&r);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.type, REDIS_REPLY_STATUS);
	cr_assert_str_eq(r.str, "OK");
	redis_res_clear(&r);
	s = (sub_t){ .f = &f, .res = &r, .argc = 2,
	    .argv = { "GET", "bin\0key" }, .lens = { 3, 7 } };
	redis_fixture_on_loop(f.loop, do_submit, &s);
	redis_res_wait(&r);
	cr_assert_eq(r.type, REDIS_REPLY_STRING);
	cr_assert_eq(r.len, n);
	cr_assert(memcmp(r.str, val, n) == 0, "value differs");

	run(&f, &r, "GET", "missing", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.type, REDIS_REPLY_NIL);
	run(&f, &r, "INCRBY", "n", "41", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_INTEGER);
	cr_assert_eq(r.integer, 41);
	run(&f, &r, "LPUSH", "n", "x", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.type, REDIS_REPLY_ERROR);
	cr_assert(strncmp(r.str, "WRONGTYPE", 9) == 0, "%s", r.str);
	run(&f, &r, "MGET", "n", "missing", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_ARRAY);
	cr_assert_eq(r.elements, 2);

	cr_assert_eq(STAT(f.conn, commands), 6);
	cr_assert_eq(STAT(f.conn, replies), 6);
	cr_assert_eq(STAT(f.conn, error_replies), 1);
	cr_assert_eq(STAT(f.conn, rtt_count), 6);
	cr_assert_gt(STAT(f.conn, rtt_ns_sum), 0);
	cr_assert_eq(STAT(f.conn, connects), 1);
	cr_assert_eq(STAT(f.conn, fails), 0);
	cr_assert_eq(bc_tier_redis_conn_state(f.conn), BC_TIER_REDIS_CONN_UP);
	redis_res_clear(&r);
	free(val);
	teardown(&f);
}

typedef struct iov_sub_s {
	fix_t        *f;
	struct iovec  iov[3];
	int           niov;
	redis_res_t  *res;
	int           rv;
} iov_sub_t;

static void
do_submit_iov(void *arg)
{
	iov_sub_t *s = arg;

	s->rv = bc_tier_redis_conn_submit_iov(s->f->conn, s->iov, s->niov, 0,
	    redis_res_cb, s->res);
}

/* A command in parts: joined on the wire (a 1 MiB value borrowed in the
 * middle, several such commands queued behind the output buffer's
 * bound); a first part that does not name the command is refused. */
LTest(redis_conn, commands_in_parts)
{
	fix_t       f;
	redis_res_t r[6] = { { 0 } };
	iov_sub_t   s;
	size_t      n = 1024 * 1024;
	char       *val = malloc(n), head[5][64];   /* borrowed until answered */

	setup(&f, NULL, 0);
	open_up(&f);
	for (size_t i = 0; i < n; i++)
		val[i] = (char)(i * 13 + i / 509);
	for (int k = 0; k < 5; k++) {
		int hn = snprintf(head[k], sizeof(head[k]),
		    "*3\r\n$3\r\nSET\r\n$2\r\nk%d\r\n$%zu\r\n", k, n);

		s = (iov_sub_t){ .f = &f, .res = &r[k], .niov = 3, .iov = {
		    { head[k], (size_t)hn }, { val, n }, { (void *)"\r\n", 2 } } };
		redis_fixture_on_loop(f.loop, do_submit_iov, &s);
		cr_assert_eq(s.rv, 0, "%s", bc_strerror(s.rv));
	}
	for (int k = 0; k < 5; k++) {
		redis_res_wait(&r[k]);
		cr_assert_eq(r[k].type, REDIS_REPLY_STATUS, "%d: %s", k,
		    r[k].str);
	}
	for (int k = 0; k < 5; k++) {
		char key[4] = { 'k', (char)('0' + k), 0, 0 };

		run(&f, &r[5], "GET", key, NULL);
		cr_assert_eq(r[5].type, REDIS_REPLY_STRING, "%s", key);
		cr_assert_eq(r[5].len, n);
		cr_assert(memcmp(r[5].str, val, n) == 0, "%s differs", key);
	}
	cr_assert_geq(STAT(f.conn, commands), 10);
	s = (iov_sub_t){ .f = &f, .res = &r[5], .niov = 2, .iov = {
	    { (void *)"hello", 5 }, { (void *)"\r\n", 2 } } };
	redis_fixture_on_loop(f.loop, do_submit_iov, &s);
	cr_assert_eq(s.rv, BC_EINVAL);
	for (int k = 0; k < 6; k++)
		redis_res_clear(&r[k]);
	free(val);
	teardown(&f);
}

LTest(redis_conn, auth_and_select)
{
	fix_t       f;
	redis_res_t r = { 0 };
	redisReply *rep;

	setup(&f, "s3cret", 0);
	f.opts.pass = "s3cret";
	f.opts.db = 3;
	open_up(&f);
	run(&f, &r, "SET", "in3", "v", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_STATUS);
	rep = redis_fixture_cmd(f.node, "INFO keyspace");
	cr_assert(strstr(rep->str, "db3:keys=1") != NULL, "%s", rep->str);
	cr_assert(strstr(rep->str, "db0:") == NULL, "%s", rep->str);
	freeReplyObject(rep);
	/* ACL user form: AUTH default s3cret */
	redis_fixture_on_loop(f.loop, do_close, &f);
	f.opts.user = "default";
	f.ups = 0;
	open_up(&f);
	run(&f, &r, "GET", "in3", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_STRING);
	cr_assert_str_eq(r.str, "v");
	redis_fixture_on_loop(f.loop, do_close, &f);

	/* a wrong password: the command waiting for the handshake fails */
	f.opts.user = NULL;
	f.opts.pass = "wrong";
	f.opts.backoff_min_ms = 60000;
	redis_res_clear(&r);
	open_ping(&f, &r);
	redis_res_wait(&r);
	cr_assert_eq(r.status, BC_EACCES, "%s", bc_strerror(r.status));
	cr_assert_eq(r.fired, 1);
	cr_assert_eq(STAT(f.conn, err_auth), 1);
	cr_assert_eq(bc_tier_redis_conn_state(f.conn),
	    BC_TIER_REDIS_CONN_DOWN);
	cr_assert_eq(submit(&f, &r, "PING", NULL), BC_ENOTCONN);
	cr_assert_eq(STAT(f.conn, rejects), 1);
	redis_res_clear(&r);
	teardown(&f);
}

/* ---- many at once ------------------------------------------------------- */

#define MANY 2000

typedef struct many_s {
	fix_t       *f;
	redis_res_t  res[MANY];
	int          rv[MANY];
	int          n;
} many_t;

static void
do_many_incr(void *arg)
{
	many_t     *m = arg;
	const char *argv[] = { "INCR", "counter" };
	size_t      lens[] = { 4, 7 };

	for (int i = 0; i < m->n; i++)
		m->rv[i] = bc_tier_redis_conn_submit(m->f->conn, 2, argv, lens,
		    redis_res_cb, &m->res[i]);
}

LTest(redis_conn, outstanding_bound)
{
	fix_t   f;
	many_t *m = calloc(1, sizeof(*m));
	int     done;

	setup(&f, NULL, 0);
	f.opts.max_outstanding = 4;
	f.opts.max_queued = MANY;
	open_up(&f);
	m->f = &f;
	m->n = MANY;
	redis_fixture_on_loop(f.loop, do_many_incr, m);
	for (int i = 0; i < MANY; i++)
		cr_assert_eq(m->rv[i], 0);
	RF_WAIT_FOR(m->res[MANY - 1].fired > 0);
	done = 0;
	for (int i = 0; i < MANY; i++) {
		cr_assert_eq(m->res[i].fired, 1);
		cr_assert_eq(m->res[i].status, 0);
		cr_assert_eq(m->res[i].integer, i + 1, "answers out of order");
		done++;
	}
	cr_assert_eq(done, MANY);
	cr_assert_leq(STAT(f.conn, outstanding_peak), 4);
	cr_assert_geq(STAT(f.conn, outstanding_peak), 2, "no pipelining");
	cr_assert_eq(STAT(f.conn, replies), MANY);
	for (int i = 0; i < MANY; i++)
		redis_res_clear(&m->res[i]);
	free(m);
	teardown(&f);
}

LTest(redis_conn, queue_full)
{
	fix_t   f;
	many_t *m = calloc(1, sizeof(*m));
	int     ok = 0;

	setup(&f, NULL, 0);
	f.opts.max_outstanding = 1;
	f.opts.max_queued = 3;
	open_up(&f);
	m->f = &f;
	m->n = 10;
	redis_fixture_on_loop(f.loop, do_many_incr, m);
	for (int i = 0; i < 10; i++) {
		if (i < 4)
			cr_assert_eq(m->rv[i], 0, "%d: %d", i, m->rv[i]);
		else
			cr_assert_eq(m->rv[i], BC_EAGAIN, "%d: %d", i, m->rv[i]);
	}
	RF_WAIT_FOR(m->res[3].fired > 0);
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(m->res[i].fired, i < 4 ? 1 : 0);
		ok += m->res[i].fired;
	}
	cr_assert_eq(ok, 4);
	cr_assert_eq(m->res[3].integer, 4);
	cr_assert_eq(STAT(f.conn, rejects), 6);
	cr_assert_eq(STAT(f.conn, commands), 4);
	for (int i = 0; i < 10; i++)
		redis_res_clear(&m->res[i]);
	free(m);
	teardown(&f);
}

/* ---- failures ------------------------------------------------------------ */

LTest(redis_conn, command_timeout)
{
	fix_t       f;
	redis_res_t r = { 0 }, p = { 0 };

	setup(&f, NULL, 0);
	f.opts.command_timeout_ms = 200;
	open_up(&f);
	run(&f, &r, "SET", "k", "v", NULL);
	redis_res_clear(&r);
	redis_fixture_pause(f.node);
	cr_assert_eq(submit(&f, &r, "GET", "k", NULL), 0);
	redis_res_wait(&r);
	cr_assert_eq(r.status, BC_ETIMEDOUT, "%s", bc_strerror(r.status));
	cr_assert_eq(STAT(f.conn, err_timeout), 1);
	RF_WAIT_FOR(f.downs >= 1);
	redis_fixture_resume(f.node);
	/* the server answers the GET on the dropped link, into nothing */
	RF_WAIT_FOR(f.ups >= 2);
	run(&f, &p, "GET", "k", NULL);
	cr_assert_eq(p.status, 0);
	cr_assert_str_eq(p.str, "v");
	run(&f, &p, "PING", NULL);
	cr_assert_eq(p.status, 0);
	redis_fixture_lock();
	cr_assert_eq(r.fired, 1, "the timed-out command fired again");
	redis_fixture_unlock();
	cr_assert_geq(STAT(f.conn, reconnects), 1);
	cr_assert_eq(STAT(f.conn, fails), 1);
	redis_res_clear(&r);
	redis_res_clear(&p);
	teardown(&f);
}

LTest(redis_conn, server_killed_and_back)
{
	fix_t       f;
	redis_res_t r[5] = { { 0 } }, p = { 0 };

	setup(&f, NULL, 0);
	f.opts.command_timeout_ms = 30000;
	f.opts.backoff_max_ms = 200;
	open_up(&f);
	redis_fixture_pause(f.node);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(submit(&f, &r[i], "GET", "k", NULL), 0);
	redis_fixture_kill(f.node);
	RF_WAIT_FOR(r[4].fired > 0);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(r[i].fired, 1);
		cr_assert_eq(r[i].status, BC_ECONNRESET, "%s",
		    bc_strerror(r[i].status));
	}
	cr_assert_eq(STAT(f.conn, err_reset), 1);
	RF_WAIT_FOR(f.downs >= 2);   /* reconnects refused meanwhile */
	cr_assert_geq(STAT(f.conn, err_refused), 1);
	redis_fixture_restart(f.node);
	RF_WAIT_FOR(f.ups >= 2);
	run(&f, &p, "PING", NULL);
	cr_assert_eq(p.status, 0);
	cr_assert_str_eq(p.str, "PONG");
	cr_assert_geq(STAT(f.conn, reconnects), 2);
	cr_assert_eq(STAT(f.conn, connects), 2);
	cr_assert_eq(STAT(f.conn, fails), 5);
	for (int i = 0; i < 5; i++)
		redis_res_clear(&r[i]);
	redis_res_clear(&p);
	teardown(&f);
}

static int
listener(int *port)
{
	struct sockaddr_in a;
	socklen_t          len = sizeof(a);
	int                fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

LTest(redis_conn, connect_refused)
{
	fix_t       f;
	redis_res_t r = { 0 };
	int         port, fd = listener(&port);   /* bound, not listening */

	setup(&f, NULL, port);
	f.opts.backoff_min_ms = 60000;
	redis_res_clear(&r);
	open_ping(&f, &r);
	redis_res_wait(&r);
	cr_assert_eq(r.status, BC_ECONNREFUSED, "%s", bc_strerror(r.status));
	RF_WAIT_FOR(f.downs >= 1);
	cr_assert_eq(STAT(f.conn, err_refused), 1);
	cr_assert_eq(submit(&f, &r, "PING", NULL), BC_ENOTCONN);
	cr_assert_eq(r.fired, 1);
	close(fd);
	redis_res_clear(&r);
	teardown(&f);
}

LTest(redis_conn, connect_timeout)
{
	fix_t       f;
	redis_res_t r = { 0 };
	int         port, fd = listener(&port);

	cr_assert_eq(listen(fd, 8), 0);     /* accepts, never answers */
	setup(&f, NULL, port);              /* no AUTH: the PING waits */
	f.opts.connect_timeout_ms = 200;
	f.opts.backoff_min_ms = 60000;
	redis_res_clear(&r);
	open_ping(&f, &r);
	redis_res_wait(&r);
	cr_assert_eq(r.status, BC_ETIMEDOUT, "%s", bc_strerror(r.status));
	cr_assert_eq(STAT(f.conn, err_connect_timeout), 1);
	cr_assert_eq(STAT(f.conn, connects), 0);
	close(fd);
	redis_res_clear(&r);
	teardown(&f);
}

/* ---- a host name ------------------------------------------------------- */

/* "localhost" comes from /etc/hosts (no DNS server asked): the lookup runs
 * on libuv's pool and the connection goes to its answer. (A slow DNS
 * server is tests/integration/test_redis_lookup.sh's.) */
LTest(redis_conn, host_name_looked_up)
{
	fix_t       f;
	redis_res_t r = { 0 };

	setup(&f, NULL, 0);
	f.opts.host = "localhost";
	open_ping(&f, &r);
	redis_res_wait(&r);
	cr_assert_eq(r.status, 0, "%s", bc_strerror(r.status));
	cr_assert_eq(r.type, REDIS_REPLY_STATUS);
	cr_assert_str_eq(r.str, "PONG");
	cr_assert_eq(STAT(f.conn, connects), 1);
	cr_assert_eq(STAT(f.conn, err_lookup), 0);
	redis_res_clear(&r);
	teardown(&f);
}

static void
do_open_ping_close(void *arg)
{
	sub_t *s = arg;

	do_open_ping(s);
	do_close(s->f);
}

/* Closed before its lookup started, and closed with one running: the
 * command waiting is cancelled, nothing leaks (LeakSanitizer), the loop
 * stops. */
LTest(redis_conn, close_while_looking_up)
{
	fix_t       f;
	redis_res_t r = { 0 };
	sub_t       s = { .f = &f, .res = &r, .argc = 1, .argv = { "PING" },
	    .lens = { 4 } };

	setup(&f, NULL, 0);
	f.opts.host = "localhost";
	redis_fixture_on_loop(f.loop, do_open_ping_close, &s);
	cr_assert_eq(r.fired, 1);
	cr_assert_eq(r.status, BC_ECANCELED);
	redis_res_clear(&r);
	for (int i = 0; i < 20; i++) {
		open_ping(&f, &r);
		usleep(200 * (unsigned)i);   /* the lookup started, or not */
		redis_fixture_on_loop(f.loop, do_close, &f);
		cr_assert_eq(r.fired, 1);
		redis_res_clear(&r);
	}
	teardown(&f);
}

/* ---- close ----------------------------------------------------------------- */

LTest(redis_conn, close_cancels_pending)
{
	fix_t       f;
	redis_res_t r[3] = { { 0 } };

	setup(&f, NULL, 0);
	open_up(&f);
	redis_fixture_pause(f.node);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(submit(&f, &r[i], "GET", "k", NULL), 0);
	redis_fixture_on_loop(f.loop, do_close, &f);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(r[i].fired, 1);   /* before close returned */
		cr_assert_eq(r[i].status, BC_ECANCELED);
	}
	redis_fixture_resume(f.node);
	for (int i = 0; i < 3; i++)
		redis_res_clear(&r[i]);
	teardown(&f);
}

typedef struct closer_s {
	fix_t       *f;
	redis_res_t  res[3];
	int          first_status;
	int          fired;
} closer_t;

static void
close_from_cb(void *arg, int status, const redisReply *reply)
{
	closer_t             *c = arg;
	bc_tier_redis_conn_t *conn = c->f->conn;

	(void)reply;
	c->first_status = status;
	c->fired++;
	c->f->conn = NULL;
	/* The others' callbacks fire in there: the test may free c. */
	bc_tier_redis_conn_close(conn);
}

static void
do_three(void *arg)
{
	closer_t   *c = arg;
	const char *argv[] = { "PING" };
	size_t      lens[] = { 4 };

	cr_assert_eq(bc_tier_redis_conn_submit(c->f->conn, 1, argv, lens,
	    close_from_cb, c), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(bc_tier_redis_conn_submit(c->f->conn, 1, argv,
		    lens, redis_res_cb, &c->res[i]), 0);
}

LTest(redis_conn, close_from_callback)
{
	fix_t     f;
	closer_t *c = calloc(1, sizeof(*c));

	setup(&f, NULL, 0);
	open_up(&f);
	c->f = &f;
	redis_fixture_on_loop(f.loop, do_three, c);
	RF_WAIT_FOR(c->res[2].fired > 0);
	cr_assert_eq(c->fired, 1);
	cr_assert_eq(c->first_status, 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(c->res[i].fired, 1);
		cr_assert_eq(c->res[i].status, BC_ECANCELED);
		redis_res_clear(&c->res[i]);
	}
	free(c);
	teardown(&f);
}
