/*
 * tier.c — the base every tier shares (tier.h): counters and health with
 * a capped exponential retry backoff.
 *
 * Threads: everything here is lock-free on atomics. Two transitions
 * racing (a failure reported while another request reports an answer)
 * end in one of the two states; only the transition that flips the state
 * logs and counts it.
 */
#include <inttypes.h>
#include <string.h>

#include "tier/tier.h"
#include "util/util_error.h"
#include "util/util_log.h"

void
bc_tier_init(bc_tier_t *t, const bc_tier_ops_t *ops, const char *name,
    void *priv)
{
	memset(t, 0, sizeof(*t));
	t->ops = ops;
	t->name = name != NULL ? name : ops->name;
	t->priv = priv;
#define INIT_STAT(field, help) atomic_init(&t->stats.field, 0);
	BC_TIER_STATS(INIT_STAT)
#undef INIT_STAT
	atomic_init(&t->health.state, BC_TIER_UP);
	atomic_init(&t->health.down_since_ns, 0);
	atomic_init(&t->health.failures, 0);
	atomic_init(&t->health.retry_at_ns, 0);
	atomic_init(&t->health.last_err, 0);
}

uint64_t
bc_tier_backoff_ns(uint64_t failures)
{
	uint64_t b = BC_TIER_RETRY_MIN_NS;

	for (uint64_t i = 1; i < failures && b < BC_TIER_RETRY_MAX_NS; i++)
		b *= 2;
	return b < BC_TIER_RETRY_MAX_NS ? b : BC_TIER_RETRY_MAX_NS;
}

void
bc_tier_mark_down(bc_tier_t *t, int err, uint64_t now_ns)
{
	uint64_t f = atomic_fetch_add(&t->health.failures, 1) + 1;
	uint64_t wait = bc_tier_backoff_ns(f);
	int      up = BC_TIER_UP;

	atomic_store(&t->health.last_err, err);
	atomic_store(&t->health.retry_at_ns, now_ns + wait);
	if (!atomic_compare_exchange_strong(&t->health.state, &up,
	    BC_TIER_DOWN))
		return;
	atomic_store(&t->health.down_since_ns, now_ns);
	BC_TIER_COUNT(t, downs, 1);
	BC_WARN("tier %s: down (%s); retrying in %" PRIu64 " ms", t->name,
	    bc_strerror(err), wait / 1000000u);
}

void
bc_tier_mark_up(bc_tier_t *t, uint64_t now_ns)
{
	int      down = BC_TIER_DOWN;
	uint64_t since;

	if (atomic_load(&t->health.state) == BC_TIER_UP &&
	    atomic_load(&t->health.failures) == 0)
		return;
	atomic_store(&t->health.failures, 0);
	if (!atomic_compare_exchange_strong(&t->health.state, &down,
	    BC_TIER_UP))
		return;
	since = atomic_load(&t->health.down_since_ns);
	BC_INFO("tier %s: up again after %" PRIu64 " ms", t->name,
	    now_ns > since ? (now_ns - since) / 1000000u : 0);
}

bool
bc_tier_usable(bc_tier_t *t, uint64_t now_ns)
{
	uint64_t at;

	if (t->ops->health != NULL && t->ops->health(t) == BC_TIER_DOWN)
		return false;
	if (atomic_load(&t->health.state) == BC_TIER_UP)
		return true;
	at = atomic_load(&t->health.retry_at_ns);
	if (now_ns < at)
		return false;
	return atomic_compare_exchange_strong(&t->health.retry_at_ns, &at,
	    now_ns + bc_tier_backoff_ns(atomic_load(&t->health.failures)));
}

bc_tier_state_t
bc_tier_health(bc_tier_t *t)
{
	if (atomic_load(&t->health.state) == BC_TIER_DOWN)
		return BC_TIER_DOWN;
	if (t->ops->health != NULL)
		return t->ops->health(t);
	return BC_TIER_UP;
}
