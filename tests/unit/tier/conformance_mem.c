/*
 * conformance_mem.c — the memory tier under the tier conformance suite
 * (tier_conformance.h), ordered by the policy CONFORMANCE_POLICY names
 * (lru, pin, cost, planned, auto; with no plans, as a gateway without
 * any): tests/unit/tier/test_tier_conformance_mem_POLICY, one program per
 * policy (Makefile.am).
 */
#include <criterion/criterion.h>

#include "tier_conformance.h"

#ifndef CONFORMANCE_POLICY
#define CONFORMANCE_POLICY lru
#endif
#define POLICY_OPS(name)  POLICY_OPS_(name)
#define POLICY_OPS_(name) bc_policy_##name

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
	.policy = &POLICY_OPS(CONFORMANCE_POLICY),
	.open = mem_open,
	.close = mem_close,
};
