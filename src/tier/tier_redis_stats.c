/*
 * tier_redis_stats.c — the Redis tier's own section of /stats and
 * /metrics (tier_redis.h): its client's counters, summed over its
 * connections, and the cluster layer's. The per-tier row (tier="redis":
 * hits, writes, up, ...) is tier_stats.c's, like every tier's.
 *
 * JSON: "redis": {"mode": "cluster", "size_source": "maxmemory"
 *   (or "redis-size", "asking", "unknown"), "maxmemory": N,
 *   "rtt_us_recent": 180,
 *   "rtt_us_mean": 210, "connections": {"commands": ..., ...},
 *   "cluster": {"moved": ..., ...}}.
 * Prometheus: bucketcache_redis_<counter>_total per connection counter
 * (the link failures as bucketcache_redis_link_failures_total{kind=...}),
 * bucketcache_redis_cluster_<counter>_total, the round trip as a summary
 * (bucketcache_redis_rtt_seconds_sum, _count) and a gauge of the recent
 * one, and bucketcache_redis_mode.
 */
#include <stdatomic.h>
#include <string.h>

#include "tier/tier_redis.h"

#define LOAD(p) atomic_load_explicit(&(p), memory_order_relaxed)

static const char *
mode_name(bc_tier_redis_cluster_mode_t m)
{
	switch (m) {
	case BC_TIER_REDIS_CLUSTER_STANDALONE:
		return "standalone";
	case BC_TIER_REDIS_CLUSTER_CLUSTER:
		return "cluster";
	default:
		return "unknown";
	}
}

static const char *
size_name(bc_tier_redis_size_t s)
{
	switch (s) {
	case BC_TIER_REDIS_SIZE_GIVEN:
		return "redis-size";
	case BC_TIER_REDIS_SIZE_ASKING:
		return "asking";
	case BC_TIER_REDIS_SIZE_MAXMEMORY:
		return "maxmemory";
	default:
		return "unknown";
	}
}

/* Mean of the summed round trips, microseconds (0 before any). */
static unsigned long long
rtt_mean_us(const bc_tier_redis_conn_stats_t *c)
{
	uint64_t n = LOAD(c->rtt_count);

	return n > 0 ? (unsigned long long)(LOAD(c->rtt_ns_sum) / n / 1000) :
	    0;
}

int
bc_tier_redis_stats_json(void *t, bc_buf_t *out)
{
	bc_tier_redis_counters_t k;
	const char              *sep = "";
	int                      rv;

	bc_tier_redis_counters(t, &k);
	rv = bc_buf_printf(out, "{\"mode\": \"%s\", \"size_source\": \"%s\", "
	    "\"maxmemory\": %llu, \"rtt_us_recent\": %llu, "
	    "\"rtt_us_mean\": %llu,\n    \"connections\": {",
	    mode_name(k.mode), size_name(k.size_source),
	    (unsigned long long)k.maxmemory,
	    (unsigned long long)(LOAD(k.conn->rtt_recent_ns) / 1000),
	    rtt_mean_us(k.conn));
#define CONN_JSON(name, help)                                              \
	if (rv == 0)                                                       \
		rv = bc_buf_printf(out, "%s\"%s\": %llu", sep, #name,      \
		    (unsigned long long)LOAD(k.conn->name));               \
	sep = ", ";
	BC_TIER_REDIS_CONN_STATS(CONN_JSON)
#undef CONN_JSON
	if (rv == 0)
		rv = bc_buf_puts(out, "},\n    \"cluster\": {");
	sep = "";
#define CLUSTER_JSON(name, help)                                           \
	if (rv == 0)                                                       \
		rv = bc_buf_printf(out, "%s\"%s\": %llu", sep, #name,      \
		    (unsigned long long)LOAD(k.cluster->name));            \
	sep = ", ";
	BC_TIER_REDIS_CLUSTER_STATS(CLUSTER_JSON)
#undef CLUSTER_JSON
	if (rv == 0)
		rv = bc_buf_puts(out, "}}");
	return rv;
}

/* A counter family of one unlabelled line. */
static int
prom_counter(bc_buf_t *out, const char *prefix, const char *name,
    const char *help, uint64_t v)
{
	return bc_buf_printf(out, "# HELP bucketcache_%s%s_total Redis: %s.\n"
	    "# TYPE bucketcache_%s%s_total counter\n"
	    "bucketcache_%s%s_total %llu\n", prefix, name, help, prefix, name,
	    prefix, name, (unsigned long long)v);
}

int
bc_tier_redis_stats_prom(void *t, bc_buf_t *out)
{
	bc_tier_redis_counters_t k;
	int                      rv;

	bc_tier_redis_counters(t, &k);
	rv = bc_buf_printf(out,
	    "# HELP bucketcache_redis_mode What the Redis seeds are: 0 not "
	    "known yet, 1 a standalone server, 2 a Redis Cluster.\n"
	    "# TYPE bucketcache_redis_mode gauge\n"
	    "bucketcache_redis_mode %d\n"
	    "# HELP bucketcache_redis_rtt_seconds Round trip of answered Redis "
	    "commands (written to answered).\n"
	    "# TYPE bucketcache_redis_rtt_seconds summary\n"
	    "bucketcache_redis_rtt_seconds_sum %.6f\n"
	    "bucketcache_redis_rtt_seconds_count %llu\n"
	    "# HELP bucketcache_redis_rtt_recent_seconds Recent round trip of "
	    "a Redis command (moving average over about the last 16).\n"
	    "# TYPE bucketcache_redis_rtt_recent_seconds gauge\n"
	    "bucketcache_redis_rtt_recent_seconds %.6f\n"
	    "# HELP bucketcache_redis_maxmemory_bytes The Redis server's "
	    "maxmemory as last read (0: not read, none, or refused; read only "
	    "without --redis-size).\n"
	    "# TYPE bucketcache_redis_maxmemory_bytes gauge\n"
	    "bucketcache_redis_maxmemory_bytes %llu\n"
	    "# HELP bucketcache_redis_outstanding_peak Most Redis commands on "
	    "the wire at once on one connection.\n"
	    "# TYPE bucketcache_redis_outstanding_peak gauge\n"
	    "bucketcache_redis_outstanding_peak %llu\n"
	    "# HELP bucketcache_redis_link_failures_total Redis connections "
	    "lost, by kind.\n"
	    "# TYPE bucketcache_redis_link_failures_total counter\n",
	    (int)k.mode, (double)LOAD(k.conn->rtt_ns_sum) / 1e9,
	    (unsigned long long)LOAD(k.conn->rtt_count),
	    (double)LOAD(k.conn->rtt_recent_ns) / 1e9,
	    (unsigned long long)k.maxmemory,
	    (unsigned long long)LOAD(k.conn->outstanding_peak));
	/* err_<kind>: one labelled family; the rest: one family each */
#define CONN_PROM(name, help)                                              \
	if (rv == 0 && strncmp(#name, "err_", 4) == 0)                     \
		rv = bc_buf_printf(out, "bucketcache_redis_link_failures_total" \
		    "{kind=\"%s\"} %llu\n", #name + 4,                     \
		    (unsigned long long)LOAD(k.conn->name));
	BC_TIER_REDIS_CONN_STATS(CONN_PROM)
#undef CONN_PROM
#define CONN_PROM(name, help)                                              \
	if (rv == 0 && strncmp(#name, "err_", 4) != 0 &&                   \
	    strncmp(#name, "rtt_", 4) != 0 &&                              \
	    strcmp(#name, "outstanding_peak") != 0)                        \
		rv = prom_counter(out, "redis_", #name, help,              \
		    LOAD(k.conn->name));
	BC_TIER_REDIS_CONN_STATS(CONN_PROM)
#undef CONN_PROM
#define CLUSTER_PROM(name, help)                                           \
	if (rv == 0)                                                       \
		rv = prom_counter(out, "redis_cluster_", #name, help,      \
		    LOAD(k.cluster->name));
	BC_TIER_REDIS_CLUSTER_STATS(CLUSTER_PROM)
#undef CLUSTER_PROM
	return rv;
}
