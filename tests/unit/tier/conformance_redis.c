/*
 * conformance_redis.c — the Redis tier under the tier conformance suite
 * (tier_conformance.h): tests/unit/tier/test_tier_conformance_redis. Each
 * tier gets its own fresh standalone redis-server (redis_fixture.h),
 * killed after close; the chunk size is 8 MiB.
 */
#include <stdio.h>

#include <criterion/criterion.h>

#include "redis_fixture.h"
#include "tier/tier_redis.h"
#include "tier_conformance.h"

#define MAX_OPEN 4

static struct {
	bc_tier_t    *t;
	redis_node_t *node;
} open_tiers[MAX_OPEN];
static int nopen;

static bc_tier_t *
redis_open(uint64_t capacity, const bc_policy_ops_t *pol, bc_loop_t *loop)
{
	bc_tier_opts_t       o = { .capacity = capacity, .policy = pol,
	    .loop = loop };
	/* generous deadlines: the suite checks the tier's contract, not
	 * Redis's speed, and a command timed out on a loaded machine (many
	 * redis-servers and tests on 2 cores) drops its connection and the
	 * DEL of an eviction with it (failed once in a CI run) */
	bc_tier_redis_opts_t ro = { .nseeds = 1, .chunk_size = 8u << 20,
	    .ttl_ms = 600000, .timeout_ms = 10000,
	    .connect_timeout_ms = 10000 };
	bc_tier_t           *t = NULL;
	char                 seed[32], err[256] = "";
	const char          *seeds[1] = { seed };
	int                  i;

	if (!redis_fixture_have())
		cr_skip_test("redis-server not installed");
	for (i = 0; i < MAX_OPEN && open_tiers[i].t != NULL; i++)
		;
	cr_assert_lt(i, MAX_OPEN);
	open_tiers[i].node = redis_fixture_start(NULL);
	snprintf(seed, sizeof(seed), "127.0.0.1:%d", open_tiers[i].node->port);
	ro.seeds = seeds;
	cr_assert_eq(bc_tier_redis_open(&o, &ro, &t, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_not_null(t);
	redis_fixture_tier_wait_up(t, loop);
	open_tiers[i].t = t;
	nopen++;
	return t;
}

static void
redis_close(bc_tier_t *t)
{
	for (int i = 0; i < MAX_OPEN; i++) {
		if (open_tiers[i].t != t)
			continue;
		bc_tier_redis.close(t);
		redis_fixture_kill(open_tiers[i].node);
		open_tiers[i].t = NULL;
		if (--nopen == 0)
			redis_fixture_cleanup();
		return;
	}
	cr_assert_fail("closing a tier this file did not open");
}

const bc_conformance_t bc_conformance = {
	.ops = &bc_tier_redis,
	.open = redis_open,
	.close = redis_close,
};
