/*
 * tier_stats.c — the per-tier stats rows of a tier chain (tier_stats.h).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tier/tier.h"
#include "tier/tier_chain.h"
#include "tier/tier_disk.h"
#include "tier/tier_redis.h"
#include "tier/tier_stats.h"

/* Every counter a tier keeps has its line in the stats table. */
#define BC_TIER_STAT_CHECK(name, help) \
	_Static_assert(BC_TSTAT_##name >= 0, #name " is a BC_TSTAT");
BC_TIER_STATS(BC_TIER_STAT_CHECK)
#undef BC_TIER_STAT_CHECK

static void
row_of(bc_tier_chain_t *ch, size_t i, bc_stats_tier_t *row)
{
	bc_tier_t *t = bc_tier_chain_at(ch, i);
	uint64_t *v = row->v;

	memset(row, 0, sizeof(*row));
	snprintf(row->name, sizeof(row->name), "%s", t->name);
#define BC_TIER_STAT_READ(name, help) \
	v[BC_TSTAT_##name] = atomic_load(&t->stats.name);
	BC_TIER_STATS(BC_TIER_STAT_READ)
#undef BC_TIER_STAT_READ
	v[BC_TSTAT_up] = bc_tier_health(t) == BC_TIER_UP;
	v[BC_TSTAT_usage_bytes] = bc_tier_usage(t);
	v[BC_TSTAT_capacity_bytes] = bc_tier_capacity(t);
	v[BC_TSTAT_configured_bytes] = v[BC_TSTAT_capacity_bytes];
	v[BC_TSTAT_evictions] = bc_tier_evictions(t);
	if (i > 0)
		v[BC_TSTAT_queued] = bc_tier_chain_queued(ch);
	if (t->ops == &bc_tier_mem) {
		bc_tier_mem_stats_t ms;

		bc_tier_mem_stats(t, &ms);
		v[BC_TSTAT_chunks] = ms.chunks;
	} else if (t->ops == &bc_tier_disk) {
		bc_tier_disk_info_t di;

		bc_tier_disk_info(t, &di);
		v[BC_TSTAT_chunks] = di.chunks;
		v[BC_TSTAT_metas] = di.metas;
		v[BC_TSTAT_capacity_bytes] = di.capacity;
		v[BC_TSTAT_configured_bytes] = di.configured;
		v[BC_TSTAT_writing] = di.writing;
		v[BC_TSTAT_scanning] = di.scanning;
		v[BC_TSTAT_scan_files] = di.scan_files;
		v[BC_TSTAT_scan_removed] = di.scan_removed;
		v[BC_TSTAT_scan_ms] = di.scan_ns / 1000000u;
	} else if (t->ops == &bc_tier_redis) {
		bc_tier_redis_counters_t rc;

		bc_tier_redis_counters(t, &rc);
		v[BC_TSTAT_chunks] = rc.chunks;
	}
}

size_t
bc_tier_stats_rows(void *chain, bc_stats_tier_t *rows, size_t max)
{
	bc_tier_chain_t *ch = chain;
	size_t n = bc_tier_chain_count(ch);

	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		row_of(ch, i, &rows[i]);
	return n;
}
