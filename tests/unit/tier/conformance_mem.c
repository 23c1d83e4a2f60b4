/*
 * conformance_mem.c — the memory tier under the tier conformance suite
 * (tier_conformance.h): tests/unit/tier/test_tier_conformance_mem.
 */
#include <criterion/criterion.h>

#include "tier_conformance.h"

static bc_tier_t *
mem_open(uint64_t capacity, const bc_policy_ops_t *pol, bc_loop_t *loop)
{
	bc_tier_opts_t o = { .capacity = capacity, .policy = pol,
	    .loop = loop };
	bc_tier_t     *t = NULL;

	cr_assert_eq(bc_tier_mem.open(&o, &t), 0);
	cr_assert_not_null(t);
	return t;
}

static void
mem_close(bc_tier_t *t)
{
	bc_tier_mem.close(t);
}

const bc_conformance_t bc_conformance = {
	.ops = &bc_tier_mem,
	.open = mem_open,
	.close = mem_close,
};
