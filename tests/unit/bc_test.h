/*
 * bc_test.h — what every bucketcache unit test includes after Criterion.
 *
 * LTest(suite, name, ...) is Criterion's Test() with a leak check at the
 * end of the body: under ASan, LeakSanitizer's report at the exit of
 * Criterion's worker process does not change a test's result (nor does
 * an assertion in .fini), so each test checks for leaks itself. Without
 * ASan the check is a no-op.
 */
#ifndef BC_TEST_H
#define BC_TEST_H

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define BC_HAVE_LSAN 1
#endif

static inline void
bc_test_check_leaks(void)
{
#ifdef BC_HAVE_LSAN
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,
	    "memory leaked (see LeakSanitizer's report above)");
#endif
}

#define LTest(suite, name, ...)                                         \
	static void suite##_##name##_body(void);                        \
	Test(suite, name, ##__VA_ARGS__)                                \
	{                                                               \
		suite##_##name##_body();                                \
		bc_test_check_leaks();                                  \
	}                                                               \
	static void suite##_##name##_body(void)

#endif
