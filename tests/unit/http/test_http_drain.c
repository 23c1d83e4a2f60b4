/*
 * test_http_drain.c — the graceful drain's state machine (http_drain.h),
 * driven with synthetic times and in-flight counts.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_drain.h"

#define S 1000000000ull

LTest(drain, serving_until_a_signal)
{
	bc_drain_t d;

	bc_drain_init(&d, 25 * S);
	cr_assert_eq(d.state, BC_DRAIN_SERVING);
	/* nothing but a signal starts it: idle or busy, early or late */
	cr_assert_eq(bc_drain_check(&d, 1 * S, 0), BC_DRAIN_SERVING);
	cr_assert_eq(bc_drain_check(&d, 100 * S, 7), BC_DRAIN_SERVING);
	cr_assert_eq(bc_drain_left_ns(&d, 1 * S), 0);
	cr_assert_eq(d.end, BC_DRAIN_END_NONE);
}

LTest(drain, timeout_zero_means_no_drain)
{
	bc_drain_t d;

	bc_drain_init(&d, 0);
	cr_assert_eq(bc_drain_signal(&d, 5 * S), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_OFF);
	cr_assert_str_eq(bc_drain_end_name(d.end), "off");
}

LTest(drain, ends_when_the_last_response_ends)
{
	bc_drain_t d;

	bc_drain_init(&d, 25 * S);
	cr_assert_eq(bc_drain_signal(&d, 10 * S), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_left_ns(&d, 10 * S), 25 * S);
	cr_assert_eq(bc_drain_check(&d, 11 * S, 3), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_left_ns(&d, 11 * S), 24 * S);
	cr_assert_eq(bc_drain_check(&d, 12 * S, 1), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_check(&d, 13 * S, 0), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_IDLE);
	cr_assert_eq(d.end_ns - d.start_ns, 3 * S);
	/* done stays done: later counts, times and signals change nothing */
	cr_assert_eq(bc_drain_check(&d, 14 * S, 5), BC_DRAIN_DONE);
	cr_assert_eq(bc_drain_signal(&d, 15 * S), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_IDLE);
	cr_assert_eq(d.end_ns, 13 * S);
	cr_assert_eq(bc_drain_left_ns(&d, 14 * S), 0);
}

LTest(drain, idle_at_the_signal_ends_at_the_first_check)
{
	bc_drain_t d;

	bc_drain_init(&d, 25 * S);
	cr_assert_eq(bc_drain_signal(&d, 10 * S), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_check(&d, 10 * S, 0), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_IDLE);
}

LTest(drain, the_timeout_cuts)
{
	bc_drain_t d;

	bc_drain_init(&d, 2 * S);
	cr_assert_eq(bc_drain_signal(&d, 10 * S), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_check(&d, 12 * S - 1, 1), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_left_ns(&d, 12 * S - 1), 1);
	cr_assert_eq(bc_drain_check(&d, 12 * S, 1), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_TIMEOUT);
	cr_assert_str_eq(bc_drain_end_name(d.end), "timeout");
}

LTest(drain, the_last_response_ending_at_the_deadline_is_idle)
{
	bc_drain_t d;

	bc_drain_init(&d, 2 * S);
	(void)bc_drain_signal(&d, 10 * S);
	cr_assert_eq(bc_drain_check(&d, 13 * S, 0), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_IDLE);
}

LTest(drain, a_second_signal_ends_it_at_once)
{
	bc_drain_t d;

	bc_drain_init(&d, 25 * S);
	(void)bc_drain_signal(&d, 10 * S);
	cr_assert_eq(bc_drain_check(&d, 11 * S, 4), BC_DRAIN_DRAINING);
	cr_assert_eq(bc_drain_signal(&d, 11 * S), BC_DRAIN_DONE);
	cr_assert_eq(d.end, BC_DRAIN_END_SIGNAL);
	cr_assert_eq(d.end_ns, 11 * S);
	cr_assert_str_eq(bc_drain_end_name(d.end), "signal");
}

LTest(drain, a_huge_timeout_does_not_wrap)
{
	bc_drain_t d;

	bc_drain_init(&d, UINT64_MAX - 5);
	cr_assert_eq(bc_drain_signal(&d, 10 * S), BC_DRAIN_DRAINING);
	cr_assert_eq(d.deadline_ns, UINT64_MAX);
	cr_assert_eq(bc_drain_check(&d, 1000 * S, 1), BC_DRAIN_DRAINING);
}
