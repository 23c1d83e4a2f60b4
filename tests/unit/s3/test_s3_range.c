/* test_s3_range.c — Range header parsing and resolution (s3_range.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_range.h"
#include "util/util_error.h"

typedef struct {
	const char       *hdr;
	uint64_t          size;
	bc_range_result_t res;
	uint64_t          first, last;
} range_case_t;

static const range_case_t cases[] = {
	/* absent or ignored: whole object */
	{ NULL,                 100, BC_RANGE_NONE, 0, 0 },
	{ "",                   100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=",             100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=-",            100, BC_RANGE_NONE, 0, 0 },
	{ "bytes",              100, BC_RANGE_NONE, 0, 0 },
	{ "bytes 0-5",          100, BC_RANGE_NONE, 0, 0 },
	{ "items=0-5",          100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=5",            100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=a-b",          100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=0x1-5",        100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=+1-5",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=-1-5",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=1--5",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=1-5x",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=1 -5",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=1- 5",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=5-1",          100, BC_RANGE_NONE, 0, 0 },   /* last < first */
	{ "bytes=500-100",      100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=0-1,3-4",      100, BC_RANGE_NONE, 0, 0 },   /* multi-range */
	{ "bytes=0-1, 3-4",     100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=-5,0-1",       100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=0-1,",         100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=--5",          100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=-5-",          100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=0-5\r\n",      100, BC_RANGE_NONE, 0, 0 },
	/* first-last */
	{ "bytes=0-0",          100, BC_RANGE_OK, 0, 0 },
	{ "bytes=0-9",          100, BC_RANGE_OK, 0, 9 },
	{ "bytes=10-19",        100, BC_RANGE_OK, 10, 19 },
	{ "bytes=99-99",        100, BC_RANGE_OK, 99, 99 },
	{ "bytes=0-99",         100, BC_RANGE_OK, 0, 99 },
	{ "bytes=0-100",        100, BC_RANGE_OK, 0, 99 },    /* clamped */
	{ "bytes=50-1000",      100, BC_RANGE_OK, 50, 99 },
	{ "bytes=5-5",          100, BC_RANGE_OK, 5, 5 },
	{ "BYTES=1-2",          100, BC_RANGE_OK, 1, 2 },     /* unit: any case */
	{ "Bytes=1-2",          100, BC_RANGE_OK, 1, 2 },
	{ "  bytes=1-2  ",      100, BC_RANGE_OK, 1, 2 },     /* OWS around */
	{ "bytes= 1-2",         100, BC_RANGE_OK, 1, 2 },
	{ "bytes=\t1-2\t",      100, BC_RANGE_OK, 1, 2 },
	{ "bytes=0001-0002",    100, BC_RANGE_OK, 1, 2 },
	{ "bytes=100-200",      100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=100-100",      100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=101-",         100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	/* first- */
	{ "bytes=0-",           100, BC_RANGE_OK, 0, 99 },
	{ "bytes=99-",          100, BC_RANGE_OK, 99, 99 },
	{ "bytes=100-",         100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=0-",           1,   BC_RANGE_OK, 0, 0 },
	/* suffix */
	{ "bytes=-1",           100, BC_RANGE_OK, 99, 99 },
	{ "bytes=-10",          100, BC_RANGE_OK, 90, 99 },
	{ "bytes=-100",         100, BC_RANGE_OK, 0, 99 },
	{ "bytes=-101",         100, BC_RANGE_OK, 0, 99 },    /* whole */
	{ "bytes=-0",           100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-000",         100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-1",           1,   BC_RANGE_OK, 0, 0 },
	/* empty object: every valid range is unsatisfiable */
	{ "bytes=0-",           0,   BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=0-0",          0,   BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-1",           0,   BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-0",           0,   BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=5-1",          0,   BC_RANGE_NONE, 0, 0 },
	/* huge numbers: saturate, exact order check */
	{ "bytes=0-18446744073709551615", 100, BC_RANGE_OK, 0, 99 },
	{ "bytes=0-18446744073709551616", 100, BC_RANGE_OK, 0, 99 },
	{ "bytes=0-99999999999999999999999999999999", 100, BC_RANGE_OK, 0, 99 },
	{ "bytes=18446744073709551616-", 100, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=99999999999999999999999-99999999999999999999999", 100,
	    BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=99999999999999999999999-99999999999999999999998", 100,
	    BC_RANGE_NONE, 0, 0 },
	{ "bytes=99999999999999999999999-100", 100, BC_RANGE_NONE, 0, 0 },
	{ "bytes=-99999999999999999999999", 100, BC_RANGE_OK, 0, 99 },
	{ "bytes=18446744073709551614-18446744073709551614", UINT64_MAX,
	    BC_RANGE_OK, UINT64_MAX - 1, UINT64_MAX - 1 },
	{ "bytes=0-", UINT64_MAX, BC_RANGE_OK, 0, UINT64_MAX - 1 },
	{ "bytes=-5", UINT64_MAX, BC_RANGE_OK, UINT64_MAX - 5,
	    UINT64_MAX - 1 },
};

LTest(s3_range, table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const range_case_t *c = &cases[i];
		bc_range_t r = { 12345, 54321 };
		bc_range_result_t res = bc_range_parse(c->hdr, c->size, &r);

		cr_expect_eq(res, c->res, "case %zu '%s' size %" PRIu64
		    ": result %d, want %d", i, c->hdr ? c->hdr : "(null)",
		    c->size, (int)res, (int)c->res);
		if (res == BC_RANGE_OK && c->res == BC_RANGE_OK) {
			cr_expect_eq(r.first, c->first, "case %zu first %"
			    PRIu64, i, r.first);
			cr_expect_eq(r.last, c->last, "case %zu last %" PRIu64,
			    i, r.last);
			cr_expect_lt(r.last, c->size);
		} else {
			/* *out untouched unless OK */
			cr_expect_eq(r.first, 12345, "case %zu", i);
			cr_expect_eq(r.last, 54321, "case %zu", i);
		}
	}
}

LTest(s3_range, spec_without_size)
{
	bc_range_spec_t s;

	cr_assert(bc_range_parse_spec("bytes=8388608-16777215", &s));
	cr_expect(!s.suffix);
	cr_expect_eq(s.first, 8388608);
	cr_expect_eq(s.last, 16777215);

	cr_assert(bc_range_parse_spec("bytes=7-", &s));
	cr_expect(!s.suffix);
	cr_expect_eq(s.first, 7);
	cr_expect_eq(s.last, UINT64_MAX);

	cr_assert(bc_range_parse_spec("bytes=-42", &s));
	cr_expect(s.suffix);
	cr_expect_eq(s.last, 42);

	cr_assert(bc_range_parse_spec("bytes=0-99999999999999999999", &s));
	cr_expect_eq(s.last, UINT64_MAX);

	cr_expect(!bc_range_parse_spec(NULL, &s));
	cr_expect(!bc_range_parse_spec("bytes=3-2", &s));
	cr_expect(!bc_range_parse_spec("bytes=0-1,2-3", &s));
}

LTest(s3_range, resolve_matches_parse)
{
	static const char *const hdrs[] = { "bytes=0-", "bytes=3-7",
	    "bytes=-3", "bytes=9-", "bytes=10-", "bytes=-0", "bytes=2-100" };

	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		for (uint64_t size = 0; size < 12; size++) {
			bc_range_spec_t s;
			bc_range_t a = { 0, 0 }, b = { 0, 0 };
			bc_range_result_t ra, rb;

			cr_assert(bc_range_parse_spec(hdrs[i], &s));
			ra = bc_range_resolve(&s, size, &a);
			rb = bc_range_parse(hdrs[i], size, &b);
			cr_expect_eq(ra, rb, "%s size %" PRIu64, hdrs[i], size);
			cr_expect_neq(ra, BC_RANGE_NONE);
			if (ra == BC_RANGE_OK) {
				cr_expect_eq(a.first, b.first);
				cr_expect_eq(a.last, b.last);
				cr_expect_leq(a.first, a.last);
				cr_expect_lt(a.last, size);
			}
		}
	}
}

LTest(s3_range, overlong_header_ignored)
{
	char hdr[BC_RANGE_MAX_HEADER + 32];
	bc_range_t r;

	memset(hdr, ' ', sizeof(hdr));
	memcpy(hdr + sizeof(hdr) - 12, "bytes=0-10", 10);
	hdr[sizeof(hdr) - 2] = '\0';
	cr_expect_eq(bc_range_parse(hdr, 100, &r), BC_RANGE_NONE);
	/* the same header within the bound is honoured */
	cr_expect_eq(bc_range_parse(hdr + 40, 100, &r), BC_RANGE_OK);
	cr_expect_eq(r.last, 10);
}

LTest(s3_range, length)
{
	bc_range_t r = { 10, 19 };

	cr_expect_eq(bc_range_length(&r), 10);
	r.first = 0;
	r.last = UINT64_MAX - 1;
	cr_expect_eq(bc_range_length(&r), UINT64_MAX);
}

LTest(s3_range, content_range)
{
	char out[BC_RANGE_CR_LEN];
	bc_range_t r = { 0, 99 };
	bc_range_t big = { UINT64_MAX - 1, UINT64_MAX - 1 };

	cr_assert_eq(bc_range_content_range(out, sizeof(out), &r, 100), 0);
	cr_expect_str_eq(out, "bytes 0-99/100");
	cr_assert_eq(bc_range_content_range(out, sizeof(out), NULL, 100), 0);
	cr_expect_str_eq(out, "bytes */100");
	cr_assert_eq(bc_range_content_range(out, sizeof(out), NULL, 0), 0);
	cr_expect_str_eq(out, "bytes */0");
	cr_assert_eq(bc_range_content_range(out, sizeof(out), &big,
	    UINT64_MAX), 0);
	cr_expect_str_eq(out, "bytes 18446744073709551614-"
	    "18446744073709551614/18446744073709551615");
	cr_expect_eq(bc_range_content_range(out, 8, &r, 100), BC_E2BIG);
	cr_expect_str_eq(out, "");
}
