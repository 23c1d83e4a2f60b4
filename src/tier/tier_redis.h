/*
 * tier_redis.h — the Redis tier (docs/design.md, "Redis tier"): chunks
 * stored in Redis (standalone or Cluster) in slices (tier_redis_key.h), each with a
 * TTL, through the cluster client (tier_redis_cluster.h) on the loop.
 *
 * What it counts as its own. Redis is shared (several gateways read and
 * write one keyspace) and evicts by its own maxmemory policy and the TTL,
 * so the tier cannot know what Redis holds. It accounts for what this
 * gateway wrote: an index of the chunks it put, each charged its values'
 * bytes plus BC_TIER_REDIS_KEY_COST per slice key, dropped when its TTL
 * runs out, when deleted, or when the policy evicts it (then its slices
 * are deleted from Redis). usage() is that sum, kept within the capacity
 * (--redis-size). A get still asks Redis for any chunk, so what other
 * gateways wrote is found too; an indexed chunk's hit is the policy's
 * on_hit. Chunks of zero bytes are not stored in Redis (the key format
 * has no empty chunk): they live in the index only.
 *
 * Ops. get, put, del, del_object, meta_put and meta_get may be called
 * from any thread; the Redis commands are sent from the loop thread
 * (bc_loop_call), in call order, so a get after a put or del on the same
 * thread sees it. get: the chunk's slices by GET, in parallel; when the
 * index does not know the chunk's length, the request's len_hint (a
 * slice of another length is then a miss); with neither, the slices of
 * a chunk of the unit's length (full slices sit at the same keys and
 * offsets whatever the length), then slice 0's header tells the length
 * and any slice the chunk's own layout adds is asked for; a missing slice is a miss, a
 * damaged one is counted corrupt and a miss. put and meta_put: SET ... PX
 * ttl, queued and best-effort: put returns 0 when accepted, a failed SET
 * is counted (write_failures) and its chunk leaves the index; past
 * BC_TIER_REDIS_PUT_PENDING_MIN (or 8 chunks) of values not answered yet,
 * put refuses (BC_E2BIG). del: DEL of
 * the chunk's slices (slice 0 only for a chunk the index does not know:
 * without it every get is a miss); returns 0 when the index held it.
 * del_object: the index's matching chunks as del does, and the object's
 * metadata key (not for a prefix: stale metadata expires by its TTL).
 * Chunks are per version (their keys carry the ETag), so one never
 * serves stale bytes.
 *
 * Capacity: --redis-size, or, without it, 15/16 of the server's
 * maxmemory as CONFIG GET tells it when the client comes up (a cluster:
 * the node asked times the masters; the rest is for Redis's own
 * overhead); a server that refuses CONFIG (managed Redis often does) or
 * has no maxmemory leaves it at 0: nothing is written, reads go on, and
 * the log says to set --redis-size.
 *
 * Health: a command failing without an answer (timeout, connection
 * lost) or the client going down marks the tier down (bc_tier_mark_down);
 * an answer marks it up. The health op says DOWN while the client, once
 * up, is down.
 *
 * open and close hop to the loop thread and wait there (close runs at
 * once on it); the loop must be running. The Redis client must be freed
 * before the loop stops closing handles: by close, or by
 * bc_tier_redis_stop when the tier is closed later (by the cache, after
 * the loop). No get or meta_get may be in flight at close.
 */
#ifndef BC_TIER_REDIS_H
#define BC_TIER_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "tier/tier.h"
#include "tier/tier_redis_cluster.h"
#include "util/util_buf.h"

/* What one slice key costs Redis beyond its value (key name, dict entry,
 * expiry; measured in tier_redis_key.h). */
#define BC_TIER_REDIS_KEY_COST 96

/* Puts hold copies of their values until Redis answered them: past
 * max(this, 8 chunks) of such bytes a put is refused (BC_E2BIG, counted
 * in rejects), so a slow Redis costs copies not written, never memory. */
#define BC_TIER_REDIS_PUT_PENDING_MIN (128u << 20)

typedef struct bc_tier_redis_opts_s {
	const char *const *seeds;      /* "host:port" each ("[v6]:port") */
	size_t             nseeds;
	const char        *user;       /* NULL: AUTH pass */
	const char        *pass;       /* NULL: no AUTH */
	int                db;         /* standalone only */
	uint64_t           chunk_size; /* the cache's chunk size (the unit) */
	uint64_t           ttl_ms;     /* of every value; 0: 24 h */
	uint64_t           timeout_ms;           /* command; 0: 2000 */
	uint64_t           connect_timeout_ms;   /* 0: 1000 */
	/* The capacity (o->capacity, --redis-size) was not given: ask the
	 * server (CONFIG GET maxmemory) each time the client comes up and
	 * take 15/16 of it (times the masters of a cluster); until then, or
	 * when the server refuses CONFIG or has no maxmemory, the capacity
	 * is 0: the tier writes nothing (reads go on), and says why once. */
	bool               size_from_server;
} bc_tier_redis_opts_t;

/* Where the tier's capacity comes from (bc_tier_redis_counters). */
typedef enum bc_tier_redis_size_e {
	BC_TIER_REDIS_SIZE_GIVEN = 0,     /* --redis-size */
	BC_TIER_REDIS_SIZE_ASKING,        /* not known yet */
	BC_TIER_REDIS_SIZE_MAXMEMORY,     /* the server's maxmemory */
	BC_TIER_REDIS_SIZE_UNKNOWN,       /* refused, or no maxmemory */
} bc_tier_redis_size_t;

extern const bc_tier_ops_t bc_tier_redis;

/*
 * Opens a Redis tier: o (capacity, policy, loop, name) and ro. Returns 0
 * and *out, or BC_EINVAL (no loop, no seed, a bad seed, chunk size 0 or
 * past BC_REDIS_KEY_UNIT_MAX; a line in err) or BC_ENOMEM. Connecting
 * goes on in the background: the tier starts up.
 * bc_tier_redis.open refuses (BC_EINVAL): it has no Redis options.
 */
int bc_tier_redis_open(const bc_tier_opts_t *o, const bc_tier_redis_opts_t *ro,
    bc_tier_t **out, char *err, size_t errlen);

/*
 * Frees t's Redis client: every pending command ends (ECANCELED: puts
 * are not counted as failures, gets fail). From then on the tier is DOWN
 * and sends nothing; close still frees the rest. On the loop thread (from
 * bc_loop_stop's stop_fn too) at once; from another thread it hops to
 * the loop, which must be running, and waits. A second call is a no-op.
 */
void bc_tier_redis_stop(bc_tier_t *t);

/* The Redis client's counters: its connections' summed (fault kinds,
 * round trips; tier_redis_conn.h) and the cluster layer's (redirections,
 * held commands; tier_redis_cluster.h), and how many chunks this
 * gateway's index holds. The pointers are t's, valid
 * until close, and read from any thread (atomics). */
typedef struct bc_tier_redis_counters_s {
	bc_tier_redis_cluster_mode_t         mode;
	uint64_t                             chunks;   /* in the index */
	bc_tier_redis_size_t                 size_source;
	uint64_t                             maxmemory; /* as last read; 0 */
	const bc_tier_redis_conn_stats_t    *conn;
	const bc_tier_redis_cluster_stats_t *cluster;
} bc_tier_redis_counters_t;

void bc_tier_redis_counters(bc_tier_t *t, bc_tier_redis_counters_t *out);

/* The "redis" section of /stats and /metrics (stats.h's
 * bc_stats_set_section) for tier t (the arg): the counters above, the
 * recent and mean round trip. */
int bc_tier_redis_stats_json(void *t, bc_buf_t *out);
int bc_tier_redis_stats_prom(void *t, bc_buf_t *out);

#endif
