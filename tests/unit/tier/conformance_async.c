/*
 * conformance_async.c — the test-only asynchronous tier (tier_async.h)
 * under the tier conformance suite (tier_conformance.h):
 * tests/unit/tier/test_tier_conformance_async. It proves the suite's
 * asynchronous path before the disk and Redis tiers take it.
 */
#include <criterion/criterion.h>

#include "tier_async.h"
#include "tier_conformance.h"

static bc_tier_t *
async_open(uint64_t capacity, const bc_policy_ops_t *pol, bc_loop_t *loop)
{
	bc_tier_opts_t o = { .capacity = capacity, .policy = pol,
	    .loop = loop };
	bc_tier_t     *t = NULL;

	cr_assert_eq(bc_tier_async.open(&o, &t), 0);
	cr_assert_not_null(t);
	return t;
}

static void
async_close(bc_tier_t *t)
{
	bc_tier_async.close(t);
}

const bc_conformance_t bc_conformance = {
	.ops = &bc_tier_async,
	.open = async_open,
	.close = async_close,
};
