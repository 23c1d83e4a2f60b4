/*
 * test_scale_rule.c — scale_rule.h: needs, shares and the target against
 * hand-computed cases, and the step that moves the bound.
 */
#include <criterion/criterion.h>

#include "../bc_test.h"

#include "scale/scale_rule.h"

#define MiB ((uint64_t)1 << 20)

static bc_scale_rule_t
rule(double bw, double lat, uint64_t min, uint64_t max)
{
	return (bc_scale_rule_t){ bw, lat, min, max, 0 };
}

LTest(rule, one_dataset_needs_d_times_one_minus_b_over_r)
{
	bc_scale_rule_t r = rule(6.0 * MiB, 0, 8 * MiB, 512 * MiB);
	bc_scale_need_t d = { .size = 48 * MiB, .rate = 12.0 * MiB,
	    .active = true };

	cr_assert_eq(bc_scale_rule(&r, &d, 1), 24 * MiB);
	cr_assert_eq(d.need, 24 * MiB);
	cr_assert_eq(d.share, 24 * MiB);
	cr_assert_float_eq(d.rate_per_byte, 0.25, 1e-9);
}

LTest(rule, the_window_is_rate_times_latency_times_k)
{
	bc_scale_rule_t r = rule(50e6, 0.010, 0, UINT64_MAX);
	bc_scale_need_t d = { .size = 1000000000, .rate = 100e6,
	    .active = true };

	/* 1e9 * (1 - 0.5) + 100e6 * 0.010 * 2 */
	cr_assert_eq(bc_scale_rule(&r, &d, 1), 500000000 + 2000000);
	cr_assert_eq(d.window, 2000000);
}

LTest(rule, an_origin_that_keeps_up_needs_nothing_but_min)
{
	bc_scale_rule_t r = rule(20.0 * MiB, 0, 8 * MiB, 512 * MiB);
	bc_scale_need_t d = { .size = 48 * MiB, .rate = 12.0 * MiB,
	    .active = true };

	cr_assert_eq(bc_scale_rule(&r, &d, 1), 8 * MiB);
	cr_assert_eq(d.need, 0);
}

LTest(rule, unknown_rate_or_bandwidth_needs_the_whole_dataset)
{
	bc_scale_rule_t r = rule(0, 0, 0, 512 * MiB);
	bc_scale_need_t d[2] = {
		{ .size = 40 * MiB, .rate = 12.0 * MiB, .active = true },
		{ .size = 30 * MiB, .rate = 0, .active = true },
	};

	cr_assert_eq(bc_scale_rule(&r, d, 2), 70 * MiB);
}

LTest(rule, idle_datasets_need_nothing_and_shared_ones_count_once)
{
	bc_scale_rule_t r = rule(6.0 * MiB, 0, 0, 512 * MiB);
	/* one dataset, two jobs at 6 MiB/s each: R = 12, D counted once */
	bc_scale_need_t d[2] = {
		{ .size = 48 * MiB, .rate = 12.0 * MiB, .active = true },
		{ .size = 100 * MiB, .rate = 50.0 * MiB, .active = false },
	};

	cr_assert_eq(bc_scale_rule(&r, d, 2), 24 * MiB);
	cr_assert_eq(d[1].need, 0);
}

LTest(rule, short_memory_goes_by_rate_per_byte)
{
	/* A: 32 MiB at 12 MiB/s, B: 32 MiB at 4 MiB/s, origin 2 MiB/s:
	 * needs 32*(1-2/12) = 26.67 and 32*(1-2/4) = 16; max 40 */
	bc_scale_rule_t r = rule(2.0 * MiB, 0, 8 * MiB, 40 * MiB);
	bc_scale_need_t d[2] = {
		{ .size = 32 * MiB, .rate = 4.0 * MiB, .active = true },
		{ .size = 32 * MiB, .rate = 12.0 * MiB, .active = true },
	};
	uint64_t need_a = (uint64_t)(32.0 * MiB * (1.0 - 2.0 / 12.0));

	cr_assert_eq(bc_scale_rule(&r, d, 2), 40 * MiB);
	cr_assert_eq(d[1].need, need_a);
	cr_assert_eq(d[1].share, need_a, "the faster per byte first, whole");
	cr_assert_eq(d[0].need, 16 * MiB);
	cr_assert_eq(d[0].share, 40 * MiB - need_a, "the slower: the rest");
	cr_assert_gt(d[1].rate_per_byte, d[0].rate_per_byte);
}

LTest(rule, three_datasets_the_last_gets_nothing)
{
	bc_scale_rule_t r = rule(1.0 * MiB, 0, 0, 30 * MiB);
	bc_scale_need_t d[3] = {
		{ .size = 20 * MiB, .rate = 2.0 * MiB, .active = true },  /* .1 */
		{ .size = 10 * MiB, .rate = 10.0 * MiB, .active = true }, /* 1 */
		{ .size = 40 * MiB, .rate = 8.0 * MiB, .active = true },  /* .2 */
	};

	cr_assert_eq(bc_scale_rule(&r, d, 3), 30 * MiB);
	cr_assert_eq(d[1].share, 9 * MiB);
	cr_assert_eq(d[2].share, 21 * MiB);
	cr_assert_eq(d[0].share, 0);
}

LTest(rule, never_below_the_bytes_in_use)
{
	bc_scale_rule_t r = rule(20.0 * MiB, 0, 8 * MiB, 512 * MiB);
	bc_scale_need_t d = { .size = 48 * MiB, .rate = 12.0 * MiB,
	    .active = true };

	r.floor = 100 * MiB;
	cr_assert_eq(bc_scale_rule(&r, &d, 1), 100 * MiB);
}

LTest(step, grows_at_once_by_a_bounded_step)
{
	bc_scale_why_t why;

	cr_assert_eq(bc_scale_step(100, 300, 0, false, false, &why), 300);
	cr_assert_eq(why, BC_SCALE_GROW);
	cr_assert_eq(bc_scale_step(100, 300, 50, false, false, &why), 150);
	cr_assert_eq(bc_scale_step(100, 100, 50, true, true, &why), 100);
	cr_assert_eq(why, BC_SCALE_HOLD);
}

LTest(step, shrinks_only_at_epoch_ends_or_idle)
{
	bc_scale_why_t why;

	cr_assert_eq(bc_scale_step(300, 100, 0, false, false, &why), 300);
	cr_assert_eq(why, BC_SCALE_WAIT);
	cr_assert_eq(bc_scale_step(300, 100, 0, true, false, &why), 100);
	cr_assert_eq(why, BC_SCALE_SHRINK_EPOCH);
	cr_assert_eq(bc_scale_step(300, 100, 0, false, true, &why), 100);
	cr_assert_eq(why, BC_SCALE_SHRINK_IDLE);
}
