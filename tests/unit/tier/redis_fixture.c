/*
 * redis_fixture.c — starts and stops redis-server processes for tests
 * (redis_fixture.h). Readiness has no event to wait on: a server is ready
 * when it answers PING, a cluster when every node says cluster_state:ok
 * and all of them name the same owners for the slots;
 * both are polled with a deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "redis_fixture.h"
#include "tier/tier_redis.h"

#define MAX_NODES 8
#define READY_MS  10000

static redis_node_t nodes[MAX_NODES];
static int          nnodes;

static bool
on_path(const char *prog)
{
	char  path[4096], *p, *save = NULL, *dir;
	char  buf[4200];
	const char *env = getenv("PATH");

	if (env == NULL)
		return false;
	snprintf(path, sizeof(path), "%s", env);
	for (p = path; (dir = strtok_r(p, ":", &save)) != NULL; p = NULL) {
		snprintf(buf, sizeof(buf), "%s/%s", dir, prog);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

bool
redis_fixture_have(void)
{
	return on_path("redis-server") && on_path("redis-cli");
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static bool
port_free(int port)
{
	struct sockaddr_in a;
	int                fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* A loopback port free now (and port + 10000, a cluster's bus port). */
static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t          len = sizeof(a);
	int                fd, port;

	for (int tries = 0; tries < 100; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
		port = ntohs(a.sin_port);
		close(fd);
		if (port <= 55000 && port_free(port + 10000))
			return port;
	}
	cr_assert_fail("no free port pair");
	return -1;
}

static void
spawn(redis_node_t *n)
{
	char  port[16], log[128], conf[128];
	const char *argv[32];
	int   argc = 0, fd;
	pid_t pid;

	snprintf(port, sizeof(port), "%d", n->port);
	snprintf(log, sizeof(log), "%s/redis.log", n->dir);
	snprintf(conf, sizeof(conf), "%s/nodes.conf", n->dir);
	argv[argc++] = "redis-server";
	argv[argc++] = "--port";
	argv[argc++] = port;
	argv[argc++] = "--bind";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--save";
	argv[argc++] = "";
	argv[argc++] = "--appendonly";
	argv[argc++] = "no";
	argv[argc++] = "--dir";
	argv[argc++] = n->dir;
	argv[argc++] = "--logfile";
	argv[argc++] = log;
	argv[argc++] = "--daemonize";
	argv[argc++] = "no";
	argv[argc++] = "--enable-debug-command";
	argv[argc++] = "yes";
	if (n->pass[0] != '\0') {
		argv[argc++] = "--requirepass";
		argv[argc++] = n->pass;
	}
	if (n->cluster) {
		argv[argc++] = "--cluster-enabled";
		argv[argc++] = "yes";
		argv[argc++] = "--cluster-config-file";
		argv[argc++] = conf;
		argv[argc++] = "--cluster-node-timeout";
		argv[argc++] = "3000";
	}
	argv[argc] = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp("redis-server", (char *const *)argv);
		_exit(127);
	}
	n->pid = pid;
	n->paused = false;
}

static redisContext *
connect_node(const redis_node_t *n)
{
	struct timeval tv = { 1, 0 };
	redisContext  *rc = redisConnectWithTimeout("127.0.0.1", n->port, tv);
	redisReply    *r;

	if (rc == NULL || rc->err) {
		redisFree(rc);
		return NULL;
	}
	redisSetTimeout(rc, tv);
	if (n->pass[0] != '\0') {
		r = redisCommand(rc, "AUTH %s", n->pass);
		if (r == NULL || r->type == REDIS_REPLY_ERROR) {
			if (r != NULL)
				freeReplyObject(r);
			redisFree(rc);
			return NULL;
		}
		freeReplyObject(r);
	}
	return rc;
}

/* Waits until n answers PING. Returns false when the process exited. */
static bool
wait_ready(redis_node_t *n)
{
	long long    deadline = now_ms() + READY_MS;
	redisContext *rc;
	redisReply   *r;
	int          status;

	while (now_ms() < deadline) {
		if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
			n->pid = 0;
			return false;
		}
		rc = connect_node(n);
		if (rc != NULL) {
			r = redisCommand(rc, "PING");
			redisFree(rc);
			if (r != NULL) {
				bool ok = r->type == REDIS_REPLY_STATUS;

				freeReplyObject(r);
				if (ok)
					return true;
			}
		}
		nap_ms(10);
	}
	cr_assert_fail("redis-server on port %d not ready", n->port);
	return false;
}

static redis_node_t *
start_node(bool cluster, const char *pass)
{
	redis_node_t *n;

	cr_assert_lt(nnodes, MAX_NODES);
	n = &nodes[nnodes++];
	memset(n, 0, sizeof(*n));
	n->cluster = cluster;
	if (pass != NULL)
		snprintf(n->pass, sizeof(n->pass), "%s", pass);
	snprintf(n->dir, sizeof(n->dir), "/tmp/bc_redis_test.XXXXXX");
	cr_assert_not_null(mkdtemp(n->dir));
	/* Another process may take the port between our check and the
	 * server's bind: then the server exits and we try another. */
	for (int tries = 0; tries < 5; tries++) {
		n->port = free_port();
		spawn(n);
		if (wait_ready(n))
			return n;
	}
	cr_assert_fail("redis-server does not start");
	return NULL;
}

redis_node_t *
redis_fixture_start(const char *pass)
{
	return start_node(false, pass);
}

redisReply *
redis_fixture_cmdv(redis_node_t *node, int argc, const char **argv,
    const size_t *lens)
{
	redisContext *rc = connect_node(node);
	redisReply   *r;

	cr_assert_not_null(rc, "cannot connect to port %d", node->port);
	r = redisCommandArgv(rc, argc, argv, lens);
	cr_assert_not_null(r, "port %d: %s", node->port, rc->errstr);
	redisFree(rc);
	return r;
}

redisReply *
redis_fixture_vcmd(redis_node_t *node, const char *fmt, va_list ap)
{
	redisContext *rc = connect_node(node);
	redisReply   *r;

	cr_assert_not_null(rc, "cannot connect to port %d", node->port);
	r = redisvCommand(rc, fmt, ap);
	cr_assert_not_null(r, "port %d: %s", node->port, rc->errstr);
	redisFree(rc);
	return r;
}

redisReply *
redis_fixture_cmd(redis_node_t *node, const char *fmt, ...)
{
	redisReply *r;
	va_list     ap;

	va_start(ap, fmt);
	r = redis_fixture_vcmd(node, fmt, ap);
	va_end(ap);
	return r;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
cluster_ok(redis_node_t *n)
{
	redisContext *rc = connect_node(n);
	redisReply   *r;
	bool          ok = false;

	if (rc == NULL)
		return false;
	r = redisCommand(rc, "CLUSTER INFO");
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		ok = strstr(r->str, "cluster_state:ok") != NULL;
	if (r != NULL)
		freeReplyObject(r);
	redisFree(rc);
	return ok;
}

/* n's view of who serves which slots: its CLUSTER NODES lines cut to
 * "id slots...", sorted, joined (malloc'd; NULL when it cannot say). */
static char *
slot_view(redis_node_t *n)
{
	redisContext *rc = connect_node(n);
	redisReply   *r;
	char         *lines[64], *out = NULL, *save = NULL, *line;
	size_t        nl = 0, len = 1;

	if (rc == NULL)
		return NULL;
	r = redisCommand(rc, "CLUSTER NODES");
	if (r != NULL && r->type == REDIS_REPLY_STRING) {
		for (line = strtok_r(r->str, "\n", &save); line != NULL &&
		    nl < 64; line = strtok_r(NULL, "\n", &save)) {
			char *f = line;

			/* id addr flags master ping pong epoch link slots... */
			for (int k = 0; k < 8 && f != NULL; k++)
				f = strchr(f + 1, ' ');
			if (f == NULL)
				continue;   /* no slots */
			memmove(strchr(line, ' '), f, strlen(f) + 1);
			lines[nl++] = line;
			len += strlen(line) + 1;
		}
		qsort(lines, nl, sizeof(*lines), cmp_str);
		out = calloc(1, len);
		for (size_t i = 0; out != NULL && i < nl; i++) {
			strcat(out, lines[i]);
			strcat(out, "\n");
		}
	}
	if (r != NULL)
		freeReplyObject(r);
	redisFree(rc);
	return out;
}

/* Whether every node says cluster_state:ok and all give the same slot
 * owners (a fresh cluster's nodes learn each other's slots by gossip;
 * until they agree, a client sees MOVED back and forth). */
static bool
cluster_settled(redis_node_t **ns, int n)
{
	char *first = NULL, *v;
	bool  ok = true;

	for (int i = 0; i < n && ok; i++) {
		ok = cluster_ok(ns[i]);
		if (!ok)
			break;
		v = slot_view(ns[i]);
		if (v == NULL)
			ok = false;
		else if (first == NULL)
			first = v;
		else {
			ok = strcmp(first, v) == 0;
			free(v);
		}
	}
	free(first);
	return ok;
}

void
redis_fixture_cluster_wait_ok(redis_node_t **ns, int n)
{
	long long deadline = now_ms() + 20000;

	while (!cluster_settled(ns, n)) {
		cr_assert_lt(now_ms(), deadline,
		    "cluster_state not ok, or nodes disagree on slots");
		nap_ms(20);
	}
}

static void
run_wait(const char *const *argv)
{
	pid_t pid = fork();
	int   status, fd;

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "%s failed (status %d)", argv[0], status);
}

void
redis_fixture_cluster(int n, redis_node_t **out)
{
	const char  *argv[16];
	char         addr[MAX_NODES][32];
	redisReply  *r;
	int          argc = 0;

	cr_assert(n >= 1 && n <= 6);
	argv[argc++] = "redis-cli";
	argv[argc++] = "--cluster";
	argv[argc++] = "create";
	for (int i = 0; i < n; i++) {
		out[i] = start_node(true, NULL);
		snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d",
		    out[i]->port);
		argv[argc++] = addr[i];
	}
	argv[argc++] = "--cluster-yes";
	argv[argc] = NULL;
	run_wait(argv);
	redis_fixture_cluster_wait_ok(out, n);
	for (int i = 0; i < n; i++) {
		r = redis_fixture_cmd(out[i], "CLUSTER MYID");
		cr_assert_eq(r->type, REDIS_REPLY_STRING);
		snprintf(out[i]->id, sizeof(out[i]->id), "%s", r->str);
		freeReplyObject(r);
	}
}

void
redis_fixture_kill(redis_node_t *node)
{
	int status;

	if (node->pid == 0)
		return;
	kill(node->pid, SIGKILL);
	waitpid(node->pid, &status, 0);
	node->pid = 0;
	node->paused = false;
}

void
redis_fixture_restart(redis_node_t *node)
{
	cr_assert_eq(node->pid, 0);
	spawn(node);
	cr_assert(wait_ready(node), "port %d: restart failed", node->port);
}

void
redis_fixture_pause(redis_node_t *node)
{
	cr_assert_eq(kill(node->pid, SIGSTOP), 0);
	node->paused = true;
}

void
redis_fixture_resume(redis_node_t *node)
{
	cr_assert_eq(kill(node->pid, SIGCONT), 0);
	node->paused = false;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void
redis_fixture_cleanup(void)
{
	for (int i = 0; i < nnodes; i++) {
		redis_fixture_kill(&nodes[i]);
		if (nodes[i].dir[0] != '\0')
			nftw(nodes[i].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	nnodes = 0;
}

/* ---- on the loop ------------------------------------------------------ */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  cv;
static pthread_once_t  cv_once = PTHREAD_ONCE_INIT;

static void
cv_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &a);
	pthread_condattr_destroy(&a);
}

void
redis_fixture_lock(void)
{
	pthread_once(&cv_once, cv_init);
	pthread_mutex_lock(&mu);
}

void
redis_fixture_unlock(void)
{
	pthread_mutex_unlock(&mu);
}

void
redis_fixture_broadcast(void)
{
	pthread_cond_broadcast(&cv);
}

long long
redis_fixture_deadline(void)
{
	return now_ms() + 20000;
}

bool
redis_fixture_wait(long long deadline_ms)
{
	struct timespec ts = { deadline_ms / 1000,
	    (deadline_ms % 1000) * 1000000L };

	return pthread_cond_timedwait(&cv, &mu, &ts) != ETIMEDOUT;
}

typedef struct call_s {
	void (*fn)(void *);
	void *arg;
	bool  done;
} call_t;

static void
call_on_loop(bc_loop_t *l, void *arg)
{
	call_t *c = arg;

	(void)l;
	c->fn(c->arg);
	redis_fixture_lock();
	c->done = true;
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

void
redis_fixture_on_loop(bc_loop_t *loop, void (*fn)(void *), void *arg)
{
	call_t c = { fn, arg, false };

	cr_assert_eq(bc_loop_call(loop, call_on_loop, &c), 0);
	RF_WAIT_FOR(c.done);
}

static void
nothing(void *arg)
{
	(void)arg;
}

void
redis_fixture_tier_wait_up(bc_tier_t *t, bc_loop_t *loop)
{
	long long                dl = redis_fixture_deadline();
	bc_tier_redis_counters_t c;
	struct timespec          ms5 = { 0, 5000000 };

	/* the mode is set on the loop thread, in the transition's callback,
	 * before its mark_up: the call on the loop below runs after it */
	for (;;) {
		bc_tier_redis_counters(t, &c);
		if (c.mode != BC_TIER_REDIS_CLUSTER_UNKNOWN)
			break;
		cr_assert_lt(now_ms(), dl,
		    "the Redis tier did not come up in 20 s");
		nanosleep(&ms5, NULL);
	}
	redis_fixture_on_loop(loop, nothing, NULL);
}

void
redis_res_cb(void *arg, int status, const redisReply *reply)
{
	redis_res_t *r = arg;

	redis_fixture_lock();
	r->fired++;
	r->status = status;
	if (reply != NULL) {
		r->type = reply->type;
		r->integer = reply->integer;
		r->elements = reply->elements;
		free(r->str);
		r->str = NULL;
		r->len = 0;
		if (reply->str != NULL) {
			r->str = malloc(reply->len + 1);
			memcpy(r->str, reply->str, reply->len);
			r->str[reply->len] = '\0';
			r->len = reply->len;
		}
	}
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

void
redis_res_wait(redis_res_t *r)
{
	RF_WAIT_FOR(r->fired > 0);
}

void
redis_res_clear(redis_res_t *r)
{
	free(r->str);
	memset(r, 0, sizeof(*r));
}
