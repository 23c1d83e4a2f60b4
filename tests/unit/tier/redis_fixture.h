/*
 * redis_fixture.h — real redis-server processes for the Redis tests: a
 * standalone server, or a cluster of masters made with
 * `redis-cli --cluster create`, each on a free loopback port in a temp
 * directory of its own (--save '' --appendonly no).
 *
 * One test process owns its servers: they die with it (PR_SET_PDEATHSIG)
 * and redis_fixture_cleanup() — the suite's .fini, so that it runs when
 * an assertion ends a test — kills them and removes their directories.
 * Functions assert (Criterion) on failure. Not thread-safe: the test's
 * main thread calls them.
 *
 * For tests of code on the loop: redis_fixture_on_loop runs a function
 * there and waits for it; a redis_res_t records a command's callback
 * (redis_res_cb) under the fixture's lock, and RF_WAIT_FOR waits on that
 * lock's condition for an expression to hold (asserting after 20 s).
 */
#ifndef BC_TEST_REDIS_FIXTURE_H
#define BC_TEST_REDIS_FIXTURE_H

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "loop/loop.h"
#include "tier/tier.h"

typedef struct redis_node_s {
	pid_t pid;         /* 0 while not running */
	bool  paused;      /* SIGSTOPped */
	int   port;
	bool  cluster;
	char  dir[64];
	char  pass[64];    /* --requirepass, "" for none */
	char  id[48];      /* cluster node id ("" standalone) */
} redis_node_t;

/* Whether redis-server and redis-cli are installed (skip otherwise). */
bool redis_fixture_have(void);

/* Starts a standalone server (requirepass pass when not NULL) and waits
 * until it answers PING. */
redis_node_t *redis_fixture_start(const char *pass);

/* Starts n cluster-enabled servers, makes them a cluster of n masters
 * (no replicas) and waits until it is settled (below).
 * nodes[i] are set, in the order of their slot ranges. */
void redis_fixture_cluster(int n, redis_node_t **nodes);

/* Kills the server (SIGKILL) and waits for it. */
void redis_fixture_kill(redis_node_t *node);
/* Starts a killed server again on its port and directory (a cluster node
 * keeps its nodes.conf) and waits until it answers. */
void redis_fixture_restart(redis_node_t *node);
/* SIGSTOP / SIGCONT. */
void redis_fixture_pause(redis_node_t *node);
void redis_fixture_resume(redis_node_t *node);

/* Runs one command on a new blocking connection to node (AUTH first when
 * it has a password); returns the reply, the caller's to
 * freeReplyObject. Asserts the connection works. */
redisReply *redis_fixture_cmd(redis_node_t *node, const char *fmt, ...);
redisReply *redis_fixture_vcmd(redis_node_t *node, const char *fmt,
    va_list ap);
/* The same with argv (binary-safe). */
redisReply *redis_fixture_cmdv(redis_node_t *node, int argc,
    const char **argv, const size_t *lens);

/* Waits until every node of the cluster reports cluster_state:ok and all
 * name the same owners for the slots (CLUSTER NODES). */
void redis_fixture_cluster_wait_ok(redis_node_t **nodes, int n);

/* Kills every server this process started and removes the directories. */
void redis_fixture_cleanup(void);

/* ---- on the loop ------------------------------------------------------ */

/* Runs fn(arg) on loop's thread and returns once it returned. */
void redis_fixture_on_loop(bc_loop_t *loop, void (*fn)(void *), void *arg);

/* Waits until the Redis tier t (tier_redis.h), opened on loop, has come
 * up the first time and its loop has finished that transition (the
 * tier's on_state: its mark_up); asserts after 20 s. The tier connects in
 * the background, so a test that sets its health by hand starts after
 * this: a connect that completes later marks the tier up under it
 * (conformance::health_transitions, in a loaded run). */
void redis_fixture_tier_wait_up(bc_tier_t *t, bc_loop_t *loop);

void redis_fixture_lock(void);
void redis_fixture_unlock(void);
/* Wakes RF_WAIT_FOR waiters; call with the lock held. */
void redis_fixture_broadcast(void);
/* With the lock held: waits for a broadcast; false once deadline_ms
 * (monotonic, redis_fixture_deadline) passed. */
bool redis_fixture_wait(long long deadline_ms);
long long redis_fixture_deadline(void);

/* Waits until expr (read under the lock) holds; asserts after 20 s. */
#define RF_WAIT_FOR(expr) do {                                          \
	long long rf_dl_ = redis_fixture_deadline();                    \
	bool      rf_ok_ = true;                                        \
	redis_fixture_lock();                                           \
	while (!(expr) && rf_ok_)                                       \
		rf_ok_ = redis_fixture_wait(rf_dl_);                    \
	rf_ok_ = (expr);                                                \
	redis_fixture_unlock();                                         \
	cr_assert(rf_ok_, "timed out waiting for %s", #expr);           \
} while (0)

/* A command's answer, copied from its callback. */
typedef struct redis_res_s {
	int       fired;     /* times the callback fired */
	int       status;
	int       type;      /* REDIS_REPLY_*, 0 when status < 0 */
	long long integer;
	char     *str;       /* string, status or error (malloc'd) */
	size_t    len;
	size_t    elements;
} redis_res_t;

/* A bc_tier_redis_conn_cb / cluster callback recording into arg (a
 * redis_res_t *), under the lock, then broadcasting. */
void redis_res_cb(void *arg, int status, const redisReply *reply);
/* Waits until r fired; frees what r holds. */
void redis_res_wait(redis_res_t *r);
void redis_res_clear(redis_res_t *r);

#endif
