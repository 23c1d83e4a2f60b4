/*
 * tier_redis_cluster.h — a Redis client over one or more seed addresses
 * that works with a standalone Redis and with Redis Cluster alike, on
 * the loop (connections are tier_redis_conn.h's, one per node, made when
 * a command first goes to the node).
 *
 * The slot map comes from a node's CLUSTER SHARDS (Redis 7.0+), or
 * CLUSTER SLOTS where SHARDS is unknown; "cluster support disabled" means
 * a standalone server, which then takes every command. Until the first
 * answer, commands go to the first seed (a cluster node redirects them).
 * A command goes to the master of its key's slot (CRC16 mod 16384 with
 * hash tags, as in the Redis Cluster spec). Answers the layer handles
 * itself: MOVED (re-sent to the named node, whose slot the map takes at
 * once; a full refresh follows, at most one per refresh_min_ms), ASK
 * (ASKING then the command, once, on the named node; the map unchanged),
 * TRYAGAIN and CLUSTERDOWN (re-sent after retry_delay_ms, at most
 * max_retries times). A command redirected more than max_redirects times,
 * or still told TRYAGAIN/CLUSTERDOWN after its retries, gets that last
 * error reply as its answer (counted in redirect_limit).
 *
 * Order: commands on one slot run in the order submitted, redirections
 * included: a command submitted while an earlier one on its slot is
 * being redirected or retried, or is on the wire to another node than
 * the map now names, is held until the slot has none on the wire.
 *
 * Health: up when the map is known and no connection to a master (the
 * standalone server) is DOWN; a master's connection going DOWN also asks
 * for a refresh (a failover moves slots). Nodes that leave the map keep
 * their connections until free.
 *
 * Threads: loop thread only, but bc_tier_redis_cluster_up() and the
 * counters (atomics). Callbacks fire on the loop thread.
 */
#ifndef BC_TIER_REDIS_CLUSTER_H
#define BC_TIER_REDIS_CLUSTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tier/tier_redis_conn.h"
#include "loop/loop.h"

#define BC_TIER_REDIS_CLUSTER_SLOTS 16384

typedef struct bc_tier_redis_cluster_s bc_tier_redis_cluster_t;

typedef enum bc_tier_redis_cluster_mode_e {
	BC_TIER_REDIS_CLUSTER_UNKNOWN = 0,     /* no map yet */
	BC_TIER_REDIS_CLUSTER_STANDALONE = 1,
	BC_TIER_REDIS_CLUSTER_CLUSTER = 2,
} bc_tier_redis_cluster_mode_t;

/* Called on the loop thread when health changes. It may submit; it must
 * not free the cluster. */
typedef void (*bc_tier_redis_cluster_state_cb)(bc_tier_redis_cluster_t *cl,
    bool up, void *arg);

typedef struct bc_tier_redis_cluster_opts_s {
	const char *const *seeds;     /* "host:port" each ("[v6]:port") */
	size_t             nseeds;
	/* Each node connection's options (user, pass, timeouts, bounds,
	 * backoff); host, port and on_state are ignored. db must be 0 for
	 * a cluster (SELECT is refused there). */
	bc_tier_redis_conn_opts_t conn;
	uint32_t    max_redirects;    /* 0: 5 */
	uint32_t    max_retries;      /* TRYAGAIN/CLUSTERDOWN; 0: 3 */
	uint64_t    retry_delay_ms;   /* 0: 50 */
	uint64_t    refresh_min_ms;   /* 0: 1000 */
	bc_tier_redis_cluster_state_cb on_state;  /* may be NULL */
	void       *state_arg;
	/* Where the counters go (so they outlive the client); NULL: the
	 * client's own. */
	struct bc_tier_redis_cluster_stats_s *stats;
} bc_tier_redis_cluster_opts_t;

#define BC_TIER_REDIS_CLUSTER_STATS(X)                                      \
	X(requests,       "commands accepted by submit")                      \
	X(answers,        "commands answered (error replies included)")       \
	X(failures,       "commands failed without an answer")                \
	X(rejects,        "submits refused (connection down, queue full)")    \
	X(moved,          "MOVED answers followed")                           \
	X(ask,            "ASK answers followed")                             \
	X(tryagain,       "TRYAGAIN/CLUSTERDOWN answers retried")             \
	X(held,           "commands held back to keep their slot's order")    \
	X(redirect_limit, "commands answered with an unresolved redirection") \
	X(refreshes,      "slot maps loaded")                                 \
	X(refresh_errors, "slot map requests that failed")

typedef struct bc_tier_redis_cluster_stats_s {
#define BC_TIER_REDIS_CLUSTER_STAT_FIELD(name, help) _Atomic uint64_t name;
	BC_TIER_REDIS_CLUSTER_STATS(BC_TIER_REDIS_CLUSTER_STAT_FIELD)
#undef BC_TIER_REDIS_CLUSTER_STAT_FIELD
} bc_tier_redis_cluster_stats_t;

/* A command's callback: as bc_tier_redis_conn_cb (tier_redis_conn.h),
 * exactly once per submit that returned 0, never from inside submit. */
typedef bc_tier_redis_conn_cb bc_tier_redis_cluster_cb;

/*
 * Creates the client and asks a seed for the slot map (answered later).
 * Loop thread only. Returns 0 and *out, or BC_EINVAL (no seed, a seed
 * that is not host:port; a line in err, errlen bytes, may be NULL) or
 * BC_ENOMEM. o's strings are copied.
 */
int bc_tier_redis_cluster_new(bc_loop_t *loop,
    const bc_tier_redis_cluster_opts_t *o, bc_tier_redis_cluster_t **out,
    char *err, size_t errlen);

/*
 * Sends argv[0..argc) (binary-safe, copied before it returns) to the
 * master of key's slot (key NULL: any node; for a cluster, commands
 * whose keys share one slot only). Returns 0, and cb(arg, ...) fires
 * later exactly once, with the final answer (after redirections) or a
 * failure code (tier_redis_conn.h; BC_ECANCELED at free); or a negative
 * code and cb never fires: BC_ENOTCONN (that node's connection is DOWN),
 * BC_EAGAIN (its queue is full), BC_EINVAL, BC_ENOMEM.
 */
int bc_tier_redis_cluster_submit(bc_tier_redis_cluster_t *cl,
    const void *key, size_t keylen, int argc, const char **argv,
    const size_t *argvlen, bc_tier_redis_cluster_cb cb, void *arg);

/* As bc_tier_redis_cluster_submit, for a command in parts as
 * bc_tier_redis_conn_submit_iov takes them (bytes borrowed until cb
 * fires, redirections included). */
int bc_tier_redis_cluster_submit_iov(bc_tier_redis_cluster_t *cl,
    const void *key, size_t keylen, const struct iovec *iov, int niov,
    bc_tier_redis_cluster_cb cb, void *arg);

/* Closes every connection: every pending command's callback fires with
 * BC_ECANCELED before it returns. Memory goes once the handles are
 * closed. NULL is a no-op. Loop thread only, not from a callback. */
void bc_tier_redis_cluster_free(bc_tier_redis_cluster_t *cl);

/* Thread-safe. */
bool bc_tier_redis_cluster_up(const bc_tier_redis_cluster_t *cl);
bc_tier_redis_cluster_mode_t bc_tier_redis_cluster_mode(
    const bc_tier_redis_cluster_t *cl);
const bc_tier_redis_cluster_stats_t *bc_tier_redis_cluster_stats(
    const bc_tier_redis_cluster_t *cl);

/* One node as the client knows it (bc_tier_redis_cluster_nodes). */
typedef struct bc_tier_redis_cluster_node_s {
	const char *host;          /* the cluster's, valid until free */
	int         port;
	uint32_t    slots;         /* slots the map gives it */
	uint64_t    errors;        /* commands its connection failed */
	/* Its connection (stats, state), NULL when none was needed yet. */
	const bc_tier_redis_conn_t *conn;
} bc_tier_redis_cluster_node_t;

/* Fills out[0..max) with the nodes known (seeds and the map's masters,
 * in the order met) and returns how many there are. Loop thread only. */
size_t bc_tier_redis_cluster_nodes(const bc_tier_redis_cluster_t *cl,
    bc_tier_redis_cluster_node_t *out, size_t max);

/* CRC16/XMODEM (poly 0x1021, init 0) as the Redis Cluster spec's
 * reference: "123456789" gives 0x31C3. */
uint16_t bc_tier_redis_cluster_crc16(const void *buf, size_t len);
/* key's slot: CRC16 mod 16384 of the part between the first '{' and the
 * first '}' after it when that part is not empty, of the whole key
 * otherwise. */
uint16_t bc_tier_redis_cluster_slot(const void *key, size_t len);

#endif
