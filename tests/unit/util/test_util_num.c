/*
 * test_util_num.c — util/util_num.c, the one number parser, table-driven:
 * decimal and hex, the bound (at it, one past it, UINT64_MAX and past it),
 * what is refused (empty, signs, blanks, "0x", a digit of the other base,
 * bytes after the digits), prefixes stopping at the first non-digit and
 * at n, ports; and the asserts' abort (util/util_assert.h).
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define NO UINT64_C(0xdeadbeef)   /* *out when it must stay untouched */

LTest(num, parse_table)
{
	static const struct {
		const char *s;
		int         base;
		uint64_t    max;
		int         rv;
		uint64_t    v;
	} t[] = {
		{ "0", 10, UINT64_MAX, 0, 0 },
		{ "007", 10, UINT64_MAX, 0, 7 },
		{ "1234567890", 10, UINT64_MAX, 0, 1234567890 },
		{ "18446744073709551615", 10, UINT64_MAX, 0, UINT64_MAX },
		{ "18446744073709551616", 10, UINT64_MAX, BC_ERANGE, NO },
		{ "99999999999999999999999", 10, UINT64_MAX, BC_ERANGE, NO },
		{ "65535", 10, 65535, 0, 65535 },
		{ "65536", 10, 65535, BC_ERANGE, NO },
		{ "10", 10, 9, BC_ERANGE, NO },
		{ "9", 10, 9, 0, 9 },
		{ "1", 10, 0, BC_ERANGE, NO },
		{ "0", 10, 0, 0, 0 },
		{ "", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "-1", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "+1", 10, UINT64_MAX, BC_EINVAL, NO },
		{ " 1", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "1 ", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "1\t", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "1x", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "1.5", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "a", 10, UINT64_MAX, BC_EINVAL, NO },
		{ "0x10", 16, UINT64_MAX, BC_EINVAL, NO },
		{ "ff", 16, UINT64_MAX, 0, 255 },
		{ "FF", 16, UINT64_MAX, 0, 255 },
		{ "aBcDeF", 16, UINT64_MAX, 0, 0xabcdef },
		{ "ffffffffffffffff", 16, UINT64_MAX, 0, UINT64_MAX },
		{ "10000000000000000", 16, UINT64_MAX, BC_ERANGE, NO },
		{ "0000000000000000000001", 16, UINT64_MAX, 0, 1 },
		{ "g", 16, UINT64_MAX, BC_EINVAL, NO },
		{ "-a", 16, UINT64_MAX, BC_EINVAL, NO },
		{ "400", 16, 0x3ff, BC_ERANGE, NO },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = NO;
		int rv = bc_parse_u64(t[i].s, strlen(t[i].s), t[i].base,
		    t[i].max, &v);

		cr_expect_eq(rv, t[i].rv, "'%s' base %d: rv %d", t[i].s,
		    t[i].base, rv);
		cr_expect_eq(v, t[i].v, "'%s' base %d: %llu", t[i].s,
		    t[i].base, (unsigned long long)v);
		v = NO;
		cr_expect_eq(bc_parse_u64_str(t[i].s, t[i].base, t[i].max, &v),
		    t[i].rv, "'%s' (str)", t[i].s);
		cr_expect_eq(v, t[i].v);
	}
	cr_expect_eq(bc_parse_u64_str(NULL, 10, 1, NULL), BC_EINVAL);
}

LTest(num, prefix_table)
{
	static const struct {
		const char *s;
		size_t      n;
		int         base;
		uint64_t    max;
		ssize_t     rv;
		uint64_t    v;
	} t[] = {
		{ "42MiB", 5, 10, UINT64_MAX, 2, 42 },
		{ "M42", 3, 10, UINT64_MAX, 0, NO },
		{ "4242", 2, 10, UINT64_MAX, 2, 42 },     /* bounded by n */
		{ "", 0, 10, UINT64_MAX, 0, NO },
		{ "1f;chunk-signature=", 19, 16, UINT64_MAX, 2, 31 },
		{ "1f;", 3, 10, UINT64_MAX, 1, 1 },
		{ "184467440737095516160", 21, 10, UINT64_MAX, BC_ERANGE, NO },
		{ "300s", 4, 10, 299, BC_ERANGE, NO },
		{ "299s", 4, 10, 299, 3, 299 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = NO;
		ssize_t rv = bc_parse_u64_prefix(t[i].s, t[i].n, t[i].base,
		    t[i].max, &v);

		cr_expect_eq(rv, t[i].rv, "'%s': rv %zd", t[i].s, rv);
		cr_expect_eq(v, t[i].v, "'%s': %llu", t[i].s,
		    (unsigned long long)v);
	}
}

LTest(num, ports)
{
	static const struct { const char *s; int rv; uint16_t v; } t[] = {
		{ "1", 0, 1 }, { "80", 0, 80 }, { "65535", 0, 65535 },
		{ "0", BC_EINVAL, 7 }, { "65536", BC_EINVAL, 7 },
		{ "", BC_EINVAL, 7 }, { "-80", BC_EINVAL, 7 },
		{ "80 ", BC_EINVAL, 7 }, { "0x50", BC_EINVAL, 7 },
		{ "99999999999999999999999", BC_EINVAL, 7 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint16_t v = 7;

		cr_expect_eq(bc_parse_port(t[i].s, strlen(t[i].s), &v),
		    t[i].rv, "'%s'", t[i].s);
		cr_expect_eq(v, t[i].v, "'%s': %u", t[i].s, v);
	}
}

static int zero_val;

Test(assert, check_aborts, .signal = SIGABRT)
{
	BC_CHECK(zero_val == 1);
}

Test(assert, an_aborts_on_null, .signal = SIGABRT)
{
	const char *volatile p = NULL;

	BC_AN(p);
}

Test(assert, az_aborts_on_nonzero, .signal = SIGABRT)
{
	BC_AZ(zero_val + 1);
}

LTest(assert, true_passes)
{
	BC_CHECK(zero_val == 0);
	BC_AN(&zero_val);
	BC_AZ(zero_val);
}
