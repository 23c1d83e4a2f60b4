/*
 * test_cache_window.c — a sequential reader's read window
 * (cache_window.h): 2, 4, 8, 16 chunks ahead while the reader waits, no
 * further than max; back down after chunks it did not wait for, never
 * below the start; a jump starts over; 0 means no read-ahead.
 */
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "cache/cache_window.h"

LTest(window, grows_while_the_reader_waits)
{
	static const unsigned want[] = { 2, 4, 8, 16, 16, 16 };
	bc_read_window_t w;

	bc_read_window_init(&w, 2, 16);
	for (uint32_t i = 0; i < 6; i++)
		cr_assert_eq(bc_read_window_step(&w, i, true), want[i],
		    "chunk %u", i);
}

LTest(window, shrinks_when_the_reader_is_slower)
{
	bc_read_window_t w;
	uint32_t i;

	bc_read_window_init(&w, 2, 16);
	bc_read_window_step(&w, 0, true);
	for (i = 1; i <= 3; i++)
		bc_read_window_step(&w, i, true);
	cr_assert_eq(w.n, 16);
	/* chunks fetched together arrive together: a few done in a row
	 * say nothing */
	for (; i < 4 + 15; i++)
		cr_assert_eq(bc_read_window_step(&w, i, false), 16,
		    "chunk %u", i);
	cr_assert_eq(bc_read_window_step(&w, i++, true), 16, "a wait");
	for (uint32_t k = 0; k < 15; k++)
		bc_read_window_step(&w, i++, false);
	cr_assert_eq(bc_read_window_step(&w, i++, false), 8,
	    "16 in a row without a wait: halved");
	for (uint32_t k = 0; k < 7; k++)
		cr_assert_eq(bc_read_window_step(&w, i++, false), 8);
	cr_assert_eq(bc_read_window_step(&w, i++, false), 4);
	for (uint32_t k = 0; k < 3; k++)
		bc_read_window_step(&w, i++, false);
	cr_assert_eq(bc_read_window_step(&w, i++, false), 2);
	for (uint32_t k = 0; k < 6; k++)
		cr_assert_eq(bc_read_window_step(&w, i++, false), 2,
		    "never below start");
	cr_assert_eq(bc_read_window_step(&w, i++, true), 4, "a wait: up again");
}

LTest(window, a_jump_starts_over)
{
	bc_read_window_t w;

	bc_read_window_init(&w, 2, 16);
	bc_read_window_step(&w, 0, true);
	bc_read_window_step(&w, 1, true);
	cr_assert_eq(bc_read_window_step(&w, 2, true), 8);
	cr_assert_eq(bc_read_window_step(&w, 7, true), 2, "a jump ahead");
	cr_assert_eq(bc_read_window_step(&w, 8, true), 4);
	cr_assert_eq(bc_read_window_step(&w, 3, true), 2, "a jump back");
}

LTest(window, bounds)
{
	bc_read_window_t w;

	bc_read_window_init(&w, 0, 16);
	for (uint32_t i = 0; i < 5; i++)
		cr_assert_eq(bc_read_window_step(&w, i, true), 0,
		    "start 0: no read-ahead");
	bc_read_window_init(&w, 3, 1);
	cr_assert_eq(w.max, 3, "max below start is start");
	cr_assert_eq(bc_read_window_step(&w, 0, true), 3);
	cr_assert_eq(bc_read_window_step(&w, 1, true), 3);
	bc_read_window_init(&w, 3, 10);
	bc_read_window_step(&w, 0, true);
	cr_assert_eq(bc_read_window_step(&w, 1, true), 6);
	cr_assert_eq(bc_read_window_step(&w, 2, true), 10, "capped at max");
	bc_read_window_init(&w, 2, 16);
	cr_assert_eq(bc_read_window_step(&w, UINT32_MAX - 1, true), 2);
	cr_assert_eq(bc_read_window_step(&w, 0, true), 2,
	    "after the last index, chunk 0 is a jump");
}

LTest(window, a_stall_inside_a_chunk_grows_it_once_per_step)
{
	bc_read_window_t w;
	const uint64_t step = BC_READ_WINDOW_STALL_STEP;

	bc_read_window_init(&w, 2, 16);
	cr_assert_eq(bc_read_window_stall(&w, 0, 0), 0, "no chunk entered yet");
	cr_assert_eq(bc_read_window_step(&w, 0, true), 2);
	cr_assert_eq(bc_read_window_stall(&w, 0, 0), 4, "the reader waits in 0");
	cr_assert_eq(bc_read_window_stall(&w, 0, 4096), 0,
	    "waits at bytes close by: once");
	cr_assert_eq(bc_read_window_stall(&w, 0, step - 1), 0);
	cr_assert_eq(bc_read_window_stall(&w, 0, step), 8,
	    "a step further into the chunk, still waiting: again");
	cr_assert_eq(bc_read_window_stall(&w, 0, step + 65536), 0);
	cr_assert_eq(bc_read_window_step(&w, 1, true), 16);
	cr_assert_eq(bc_read_window_stall(&w, 5, 0), 0, "not the chunk it reads");
	cr_assert_eq(bc_read_window_stall(&w, 1, 0), 0, "at max: nothing more");
	cr_assert_eq(bc_read_window_step(&w, 2, true), 16);
	cr_assert_eq(bc_read_window_stall(&w, 2, 3 * step), 0);
}

LTest(window, a_starved_first_chunk_has_the_whole_window_after_3_steps)
{
	bc_read_window_t w;
	unsigned got[8] = { 0 }, k = 0;

	bc_read_window_init(&w, 2, 16);
	cr_assert_eq(bc_read_window_step(&w, 0, true), 2);
	/* the reader waits every 64 KiB through an 8 MiB first chunk */
	for (uint64_t at = 0; at < 8 * BC_READ_WINDOW_STALL_STEP; at += 65536) {
		unsigned more = bc_read_window_stall(&w, 0, at);

		if (more > 0 && k < 8)
			got[k++] = more;
	}
	cr_assert_eq(k, 3, "grew %u times", k);
	cr_assert(got[0] == 4 && got[1] == 8 && got[2] == 16);
	cr_assert_eq(w.n, 16);
}
