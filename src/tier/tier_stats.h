/*
 * tier_stats.h — the per-tier stats rows (stats.h, BC_TSTAT) of a tier
 * chain: what /stats and /metrics show for each tier.
 *
 * main.c hands bc_tier_stats_rows and the cache's chain to
 * bc_stats_set_tiers(); stats/ then calls it when it renders. Every tier
 * gives its base counters (tier.h), health, usage and capacity; the
 * memory tier its chunk count, the disk tier its index and scan state
 * (bc_tier_disk_info) and its configured capacity (configured_bytes;
 * capacity_bytes is the bound in force, capped by free space). Thread-safe, as the chain's readers are.
 */
#ifndef BC_TIER_STATS_H
#define BC_TIER_STATS_H

#include <stddef.h>

#include "stats/stats.h"

/* Fills at most max rows for the tiers of chain (a bc_tier_chain_t *),
 * top first; returns how many (a bc_stats_tiers_fn). */
size_t bc_tier_stats_rows(void *chain, bc_stats_tier_t *rows, size_t max);

#endif
