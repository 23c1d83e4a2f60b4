/*
 * test_cache_math.c — chunk arithmetic (cache_math.h), table-driven: chunk
 * counts, offsets and lengths at chunk boundaries (first and last byte of
 * a chunk, exactly one chunk, sizes that are multiples of the chunk size,
 * size 0 and 1, chunk size 1), huge sizes near 2^63 and 2^64 (results
 * saturate, never wrap), the first-chunk guess for every Range form
 * (a-b, a-, -n, none) and the span of resolved ranges, checked against
 * bc_range_resolve() and a brute-force walk over small objects.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "cache/cache_math.h"
#include "s3/s3_range.h"

#define KiB  1024ull
#define MiB  (1024ull * 1024)
#define P63  (UINT64_C(1) << 63)
#define U32M ((uint64_t)UINT32_MAX)

/* ---- bc_chunk_count ---------------------------------------------------- */

typedef struct {
	uint64_t size, cs;
	uint32_t count;
} count_case_t;

static const count_case_t count_cases[] = {
	{ 0,              1024, 0 },          /* empty: no chunk */
	{ 0,              1,    0 },
	{ 1,              1024, 1 },
	{ 1,              1,    1 },
	{ 1023,           1024, 1 },
	{ 1024,           1024, 1 },          /* exactly one chunk */
	{ 1025,           1024, 2 },
	{ 2047,           1024, 2 },
	{ 2048,           1024, 2 },          /* a multiple */
	{ 2049,           1024, 3 },
	{ 10 * 1024,      1024, 10 },
	{ 10 * 1024 + 1,  1024, 11 },
	{ 7,              1,    7 },          /* chunk size 1 */
	{ 8 * MiB,        8 * MiB, 1 },
	{ 8 * MiB + 1,    8 * MiB, 2 },
	{ 5 * 1024 * 1024 * MiB, 8 * MiB, 655360 },   /* 5 TiB, S3's max */
	{ U32M,           1,    UINT32_MAX },       /* the last that fits */
	{ U32M + 1,       1,    UINT32_MAX },       /* saturates, no wrap */
	{ U32M * 8 * MiB, 8 * MiB, UINT32_MAX },
	{ U32M * 8 * MiB + 1, 8 * MiB, UINT32_MAX },  /* 2^32 chunks */
	{ P63,            8 * MiB, UINT32_MAX },    /* 2^40 chunks: wraps to 0 */
	{ P63 - 1,        8 * MiB, UINT32_MAX },
	{ P63,            P63,  1 },
	{ P63 + 1,        P63,  2 },
	{ UINT64_MAX,     1,    UINT32_MAX },       /* no overflow in + 1 */
	{ UINT64_MAX,     UINT64_MAX, 1 },
	{ UINT64_MAX - 1, UINT64_MAX, 1 },
	{ UINT64_MAX,     P63,  2 },
	{ 1,              UINT64_MAX, 1 },
};

LTest(math, count_table)
{
	for (size_t i = 0; i < sizeof(count_cases) / sizeof(count_cases[0]);
	    i++) {
		const count_case_t *t = &count_cases[i];

		cr_expect_eq(bc_chunk_count(t->size, t->cs), t->count,
		    "row %zu: count(%" PRIu64 ", %" PRIu64 ") = %" PRIu32
		    ", want %" PRIu32, i, t->size, t->cs,
		    bc_chunk_count(t->size, t->cs), t->count);
	}
}

/* ---- bc_chunk_of / bc_chunk_start ---------------------------------------- */

typedef struct {
	uint64_t off, cs;
	uint32_t chunk;
} of_case_t;

static const of_case_t of_cases[] = {
	{ 0,          1024, 0 },
	{ 1,          1024, 0 },
	{ 1023,       1024, 0 },     /* last byte of chunk 0 */
	{ 1024,       1024, 1 },     /* first byte of chunk 1 */
	{ 2047,       1024, 1 },
	{ 2048,       1024, 2 },
	{ 0,          1,    0 },
	{ 1,          1,    1 },
	{ 12345,      1,    12345 },
	{ 8 * MiB - 1, 8 * MiB, 0 },
	{ 8 * MiB,    8 * MiB, 1 },
	{ U32M,       1,    UINT32_MAX },
	{ U32M + 1,   1,    UINT32_MAX },   /* saturates */
	{ UINT64_MAX, 1,    UINT32_MAX },
	{ U32M * 8 * MiB,     8 * MiB, UINT32_MAX },
	{ U32M * 8 * MiB - 1, 8 * MiB, UINT32_MAX - 1 },
	{ P63 - 1,    8 * MiB, UINT32_MAX },  /* 2^40 - 1: saturates */
	{ P63 - 1,    P63,  0 },
	{ P63,        P63,  1 },
	{ UINT64_MAX, P63,  1 },
	{ UINT64_MAX, UINT64_MAX, 1 },
	{ UINT64_MAX - 1, UINT64_MAX, 0 },
};

LTest(math, chunk_of_table)
{
	for (size_t i = 0; i < sizeof(of_cases) / sizeof(of_cases[0]); i++) {
		const of_case_t *t = &of_cases[i];

		cr_expect_eq(bc_chunk_of(t->off, t->cs), t->chunk,
		    "row %zu: chunk_of(%" PRIu64 ", %" PRIu64 ") = %" PRIu32
		    ", want %" PRIu32, i, t->off, t->cs,
		    bc_chunk_of(t->off, t->cs), t->chunk);
	}
}

typedef struct {
	uint32_t i;
	uint64_t cs, start;
} start_case_t;

static const start_case_t start_cases[] = {
	{ 0,          1024,    0 },
	{ 1,          1024,    1024 },
	{ 3,          1024,    3072 },
	{ 0,          1,       0 },
	{ 7,          1,       7 },
	{ UINT32_MAX, 1,       U32M },
	{ UINT32_MAX, 8 * MiB, U32M * 8 * MiB },   /* no 32-bit overflow */
	{ 1,          P63,     P63 },
	{ 1,          UINT64_MAX, UINT64_MAX },
	{ 2,          UINT64_MAX / 2, UINT64_MAX - 1 },
};

LTest(math, chunk_start_table)
{
	for (size_t i = 0; i < sizeof(start_cases) / sizeof(start_cases[0]);
	    i++) {
		const start_case_t *t = &start_cases[i];

		cr_expect_eq(bc_chunk_start(t->i, t->cs), t->start,
		    "row %zu: start(%" PRIu32 ", %" PRIu64 ") = %" PRIu64
		    ", want %" PRIu64, i, t->i, t->cs,
		    bc_chunk_start(t->i, t->cs), t->start);
	}
}

/* ---- bc_chunk_len ------------------------------------------------------ */

typedef struct {
	uint32_t i;
	uint64_t size, cs, len;
} len_case_t;

static const len_case_t len_cases[] = {
	{ 0, 0,    1024, 0 },         /* empty object: no chunk 0 */
	{ 1, 0,    1024, 0 },
	{ 0, 1,    1024, 1 },
	{ 1, 1,    1024, 0 },
	{ 0, 1023, 1024, 1023 },
	{ 0, 1024, 1024, 1024 },      /* exactly one chunk */
	{ 1, 1024, 1024, 0 },
	{ 0, 1025, 1024, 1024 },
	{ 1, 1025, 1024, 1 },         /* one byte in the last chunk */
	{ 2, 1025, 1024, 0 },
	{ 1, 2048, 1024, 1024 },      /* a multiple: the last is full */
	{ 2, 2048, 1024, 0 },
	{ 2, 3000, 1024, 952 },
	{ 3, 3000, 1024, 0 },
	{ 0, 1,    1,    1 },         /* chunk size 1 */
	{ 4, 5,    1,    1 },
	{ 5, 5,    1,    0 },
	{ UINT32_MAX, UINT64_MAX, 1, 1 },
	{ UINT32_MAX, U32M, 1, 0 },
	{ UINT32_MAX, U32M + 1, 1, 1 },
	{ 0, P63,  8 * MiB, 8 * MiB },
	{ UINT32_MAX, P63, 8 * MiB, 8 * MiB },   /* start < 2^63 */
	{ UINT32_MAX, U32M * 8 * MiB + 5, 8 * MiB, 5 },
	{ UINT32_MAX, U32M * 8 * MiB, 8 * MiB, 0 },
	{ 0, UINT64_MAX, P63, P63 },
	{ 1, UINT64_MAX, P63, P63 - 1 },
	{ 2, UINT64_MAX, P63, 0 },                /* i * cs overflows */
	{ UINT32_MAX, UINT64_MAX, P63, 0 },
	{ 0, UINT64_MAX, UINT64_MAX, UINT64_MAX },
	{ 1, UINT64_MAX, UINT64_MAX, 0 },
	{ 3, UINT64_MAX, UINT64_MAX / 2, 0 },     /* 3 * (2^63 - 1) wraps */
	{ 2, UINT64_MAX, UINT64_MAX / 2, 1 },
	{ 1, 10,   UINT64_MAX, 0 },
};

LTest(math, chunk_len_table)
{
	for (size_t i = 0; i < sizeof(len_cases) / sizeof(len_cases[0]); i++) {
		const len_case_t *t = &len_cases[i];

		cr_expect_eq(bc_chunk_len(t->i, t->size, t->cs), t->len,
		    "row %zu: len(%" PRIu32 ", %" PRIu64 ", %" PRIu64 ") = %"
		    PRIu64 ", want %" PRIu64, i, t->i, t->size, t->cs,
		    bc_chunk_len(t->i, t->size, t->cs), t->len);
	}
}

/* ---- properties over many small objects --------------------------------- */

/* Chunks tile the object: every byte is in exactly the chunk chunk_of
 * names, starts and lengths agree, count is the number of non-empty
 * chunks, and the chunk past the last is empty. */
LTest(math, chunks_tile_small_objects)
{
	static const uint64_t css[] = { 1, 2, 3, 7, 8, 16, 1000, 1024 };

	for (size_t k = 0; k < sizeof(css) / sizeof(css[0]); k++) {
		uint64_t cs = css[k];

		for (uint64_t size = 0; size <= 3 * cs + 2 && size <= 600;
		    size++) {
			uint32_t n = bc_chunk_count(size, cs);
			uint64_t sum = 0;

			for (uint32_t i = 0; i < n; i++) {
				uint64_t len = bc_chunk_len(i, size, cs);
				uint64_t st = bc_chunk_start(i, cs);

				cr_assert_gt(len, 0, "cs %" PRIu64 " size %"
				    PRIu64 " chunk %" PRIu32 " empty", cs,
				    size, i);
				cr_assert_leq(len, cs);
				cr_assert_eq(st, sum, "cs %" PRIu64 " size %"
				    PRIu64 " chunk %" PRIu32 " starts at %"
				    PRIu64 ", want %" PRIu64, cs, size, i,
				    st, sum);
				cr_assert_eq(bc_chunk_of(st, cs), i);
				cr_assert_eq(bc_chunk_of(st + len - 1, cs), i);
				if (i + 1 < n)
					cr_assert_eq(len, cs, "only the last "
					    "chunk may be short");
				sum += len;
			}
			cr_assert_eq(sum, size, "cs %" PRIu64 " size %" PRIu64
			    ": chunks hold %" PRIu64 " bytes", cs, size, sum);
			cr_assert_eq(bc_chunk_len(n, size, cs), 0);
			for (uint64_t off = 0; off < size; off++) {
				uint32_t c = bc_chunk_of(off, cs);

				cr_assert_lt(c, n);
				cr_assert_leq(bc_chunk_start(c, cs), off);
				cr_assert_lt(off, bc_chunk_start(c, cs) +
				    bc_chunk_len(c, size, cs));
			}
		}
	}
}

/* Near the top of the range: the last chunk's start plus its length is
 * the size, with no wrap, for objects near 2^63 and 2^64 whose chunk
 * count fits 32 bits (the count of larger ones saturates: count_table). */
LTest(math, huge_objects_last_chunk)
{
	static const struct { uint64_t size, cs; } v[] = {
		{ P63,              P63 / 4 },
		{ P63 + 12345,      P63 / 4 },
		{ UINT64_MAX,       P63 / 2 },
		{ UINT64_MAX,       UINT64_MAX / 3 },
		{ UINT64_MAX - 1,   UINT64_MAX / 3 },
		{ U32M * 8 * MiB, 8 * MiB },   /* 2^32 - 1 chunks: all fit */
		{ U32M * 8 * MiB - 1, 8 * MiB },
		{ 5 * 1024 * 1024 * MiB + 17, 8 * MiB },
	};

	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		uint64_t size = v[k].size, cs = v[k].cs;
		uint32_t n = bc_chunk_count(size, cs);
		uint32_t last = bc_chunk_of(size - 1, cs);
		uint64_t st = bc_chunk_start(last, cs);
		uint64_t len = bc_chunk_len(last, size, cs);

		cr_assert_eq(last + 1, n, "row %zu: last chunk %" PRIu32
		    ", count %" PRIu32, k, last, n);
		cr_assert_gt(len, 0, "row %zu", k);
		cr_assert_leq(st, size - 1, "row %zu", k);
		cr_assert_eq(size - st, len, "row %zu: start %" PRIu64
		    " len %" PRIu64, k, st, len);
		cr_assert_eq(bc_chunk_len(n, size, cs), 0, "row %zu", k);
	}
}

/* ---- bc_chunk_first_guess ------------------------------------------------ */

typedef struct {
	const char *hdr;      /* NULL: no Range header */
	uint64_t    cs;
	uint32_t    guess;
} guess_case_t;

static const guess_case_t guess_cases[] = {
	{ NULL,                   1024, 0 },
	{ "bytes=0-0",            1024, 0 },
	{ "bytes=0-99999",        1024, 0 },
	{ "bytes=1023-1023",      1024, 0 },    /* last byte of chunk 0 */
	{ "bytes=1024-1024",      1024, 1 },    /* first byte of chunk 1 */
	{ "bytes=1024-",          1024, 1 },
	{ "bytes=5000-",          1024, 4 },
	{ "bytes=5000-5000",      1,    5000 },
	{ "bytes=0-",             1024, 0 },
	{ "bytes=-1",             1024, 0 },    /* suffix: size unknown */
	{ "bytes=-5000",          1024, 0 },
	{ "bytes=-0",             1024, 0 },
	{ "bytes=8388608-",       8 * MiB, 1 },
	{ "bytes=8388607-8388608", 8 * MiB, 0 },
	{ "bytes=9223372036854775807-", 8 * MiB, UINT32_MAX },  /* 2^63-1 */
	{ "bytes=18446744073709551615-", 1, UINT32_MAX },
	{ "bytes=99999999999999999999999-", 8 * MiB, UINT32_MAX },
	{ "bytes=36028797010575360-", 8 * MiB, UINT32_MAX },    /* (2^32-1)*8Mi */
	{ "bytes=36028797010575359-", 8 * MiB, UINT32_MAX - 1 },
};

LTest(math, first_guess_every_range_form)
{
	for (size_t i = 0; i < sizeof(guess_cases) / sizeof(guess_cases[0]);
	    i++) {
		const guess_case_t *t = &guess_cases[i];
		bc_range_spec_t spec;
		bool has = false;

		memset(&spec, 0, sizeof(spec));
		if (t->hdr != NULL) {
			has = bc_range_parse_spec(t->hdr, &spec);
			cr_assert(has, "row %zu: %s did not parse", i, t->hdr);
		}
		cr_expect_eq(bc_chunk_first_guess(&spec, has, t->cs), t->guess,
		    "row %zu (%s): guess %" PRIu32 ", want %" PRIu32, i,
		    t->hdr != NULL ? t->hdr : "none",
		    bc_chunk_first_guess(&spec, has, t->cs), t->guess);
	}
}

/* has_range false wins over whatever the spec holds. */
LTest(math, first_guess_ignores_spec_without_range)
{
	bc_range_spec_t spec = { false, 5000, 6000 };

	cr_assert_eq(bc_chunk_first_guess(&spec, false, 1024), 0);
	cr_assert_eq(bc_chunk_first_guess(&spec, true, 1024), 4);
	spec.suffix = true;
	cr_assert_eq(bc_chunk_first_guess(&spec, true, 1024), 0);
}

/* ---- bc_chunk_span ------------------------------------------------------- */

typedef struct {
	uint64_t first, last, cs;
	uint32_t c0, c1;
} span_case_t;

static const span_case_t span_cases[] = {
	{ 0,    0,    1024, 0, 0 },
	{ 0,    1023, 1024, 0, 0 },     /* exactly chunk 0 */
	{ 0,    1024, 1024, 0, 1 },     /* one byte into chunk 1 */
	{ 1023, 1024, 1024, 0, 1 },     /* straddles the boundary */
	{ 1024, 2047, 1024, 1, 1 },     /* exactly chunk 1 */
	{ 1024, 1024, 1024, 1, 1 },
	{ 1000, 5000, 1024, 0, 4 },
	{ 2048, 2999, 1024, 2, 2 },     /* inside the short last chunk */
	{ 0,    9,    1,    0, 9 },     /* chunk size 1 */
	{ 5,    5,    1,    5, 5 },
	{ 0,    P63 - 1, 8 * MiB, 0, UINT32_MAX },   /* saturates */
	{ 8 * MiB, 16 * MiB - 1, 8 * MiB, 1, 1 },
	{ 8 * MiB - 1, 8 * MiB, 8 * MiB, 0, 1 },
	{ U32M * 8 * MiB - 1, U32M * 8 * MiB, 8 * MiB, UINT32_MAX - 1,
	  UINT32_MAX },
	{ 0,    UINT64_MAX - 1, UINT64_MAX, 0, 0 },
	{ P63 - 1, P63, P63, 0, 1 },
};

LTest(math, span_table)
{
	for (size_t i = 0; i < sizeof(span_cases) / sizeof(span_cases[0]);
	    i++) {
		const span_case_t *t = &span_cases[i];
		bc_range_t r = { t->first, t->last };
		uint32_t c0 = 12345, c1 = 54321;

		bc_chunk_span(&r, t->cs, &c0, &c1);
		cr_expect(c0 == t->c0 && c1 == t->c1, "row %zu: [%" PRIu64
		    ", %" PRIu64 "] cs %" PRIu64 " -> [%" PRIu32 ", %" PRIu32
		    "], want [%" PRIu32 ", %" PRIu32 "]", i, t->first, t->last,
		    t->cs, c0, c1, t->c0, t->c1);
	}
}

/* Every Range form against real sizes, through bc_range_resolve(): the
 * span covers exactly the chunks holding the range's bytes, and the guess
 * for a-b and a- is the span's first chunk. */
typedef struct {
	const char       *hdr;
	uint64_t          size, cs;
	bc_range_result_t res;
	uint32_t          c0, c1;
} resolved_case_t;

static const resolved_case_t resolved_cases[] = {
	/* a-b */
	{ "bytes=0-0",       3000, 1024, BC_RANGE_OK, 0, 0 },
	{ "bytes=0-1023",    3000, 1024, BC_RANGE_OK, 0, 0 },
	{ "bytes=1023-1024", 3000, 1024, BC_RANGE_OK, 0, 1 },
	{ "bytes=1024-2047", 3000, 1024, BC_RANGE_OK, 1, 1 },
	{ "bytes=2048-2999", 3000, 1024, BC_RANGE_OK, 2, 2 },
	{ "bytes=100-99999", 3000, 1024, BC_RANGE_OK, 0, 2 },   /* clamped */
	{ "bytes=2999-5000", 3000, 1024, BC_RANGE_OK, 2, 2 },
	{ "bytes=3000-3000", 3000, 1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=0-0",       0,    1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=0-0",       1,    1024, BC_RANGE_OK, 0, 0 },
	{ "bytes=0-2047",    2048, 1024, BC_RANGE_OK, 0, 1 },
	{ "bytes=0-2048",    2048, 1024, BC_RANGE_OK, 0, 1 },
	{ "bytes=3-5",       10,   1,    BC_RANGE_OK, 3, 5 },
	/* a- */
	{ "bytes=0-",        3000, 1024, BC_RANGE_OK, 0, 2 },
	{ "bytes=1024-",     3000, 1024, BC_RANGE_OK, 1, 2 },
	{ "bytes=2999-",     3000, 1024, BC_RANGE_OK, 2, 2 },
	{ "bytes=3000-",     3000, 1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=1024-",     1024, 1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=1023-",     1024, 1024, BC_RANGE_OK, 0, 0 },
	{ "bytes=0-",        0,    1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=8388608-",  P63, 8 * MiB, BC_RANGE_OK, 1, UINT32_MAX },
	/* -n */
	{ "bytes=-1",        3000, 1024, BC_RANGE_OK, 2, 2 },
	{ "bytes=-952",      3000, 1024, BC_RANGE_OK, 2, 2 },
	{ "bytes=-953",      3000, 1024, BC_RANGE_OK, 1, 2 },
	{ "bytes=-3000",     3000, 1024, BC_RANGE_OK, 0, 2 },
	{ "bytes=-99999",    3000, 1024, BC_RANGE_OK, 0, 2 },   /* whole */
	{ "bytes=-1024",     2048, 1024, BC_RANGE_OK, 1, 1 },
	{ "bytes=-1025",     2048, 1024, BC_RANGE_OK, 0, 1 },
	{ "bytes=-0",        3000, 1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-5",        0,    1024, BC_RANGE_UNSATISFIABLE, 0, 0 },
	{ "bytes=-1",        1,    1,    BC_RANGE_OK, 0, 0 },
	{ "bytes=-1",        UINT64_MAX, 1, BC_RANGE_OK, UINT32_MAX,
	  UINT32_MAX },
	{ "bytes=-8388608",  16 * MiB, 8 * MiB, BC_RANGE_OK, 1, 1 },
};

LTest(math, span_of_resolved_ranges)
{
	for (size_t i = 0;
	    i < sizeof(resolved_cases) / sizeof(resolved_cases[0]); i++) {
		const resolved_case_t *t = &resolved_cases[i];
		bc_range_spec_t spec;
		bc_range_t r;
		bc_range_result_t res;
		uint32_t c0, c1;

		cr_assert(bc_range_parse_spec(t->hdr, &spec), "row %zu", i);
		res = bc_range_resolve(&spec, t->size, &r);
		cr_assert_eq(res, t->res, "row %zu (%s, size %" PRIu64
		    "): result %d, want %d", i, t->hdr, t->size, (int)res,
		    (int)t->res);
		if (res != BC_RANGE_OK)
			continue;
		bc_chunk_span(&r, t->cs, &c0, &c1);
		cr_expect(c0 == t->c0 && c1 == t->c1, "row %zu (%s, size %"
		    PRIu64 "): span [%" PRIu32 ", %" PRIu32 "], want [%"
		    PRIu32 ", %" PRIu32 "]", i, t->hdr, t->size, c0, c1,
		    t->c0, t->c1);
		if (!spec.suffix)
			cr_expect_eq(bc_chunk_first_guess(&spec, true, t->cs),
			    c0, "row %zu: the guess is the first chunk", i);
		else
			cr_expect_eq(bc_chunk_first_guess(&spec, true, t->cs),
			    0, "row %zu: suffix guesses chunk 0", i);
	}
}

/* Brute force: the span of hdr resolved against size is the set of
 * chunks that hold a byte of the range, and those chunks exist. */
static void
check_span(const char *hdr, uint64_t size, uint64_t cs)
{
	uint32_t n = bc_chunk_count(size, cs), c0, c1, lo = UINT32_MAX, hi = 0;
	bc_range_spec_t spec;
	bc_range_t r;

	cr_assert(bc_range_parse_spec(hdr, &spec), "%s", hdr);
	if (bc_range_resolve(&spec, size, &r) != BC_RANGE_OK)
		return;
	bc_chunk_span(&r, cs, &c0, &c1);
	for (uint32_t c = 0; c < n; c++) {
		uint64_t s = bc_chunk_start(c, cs);
		uint64_t e = s + bc_chunk_len(c, size, cs) - 1;

		if (e < r.first || s > r.last)
			continue;
		if (c < lo)
			lo = c;
		hi = c;
	}
	cr_assert(c0 == lo && c1 == hi && c1 < n, "%s size %" PRIu64 " cs %"
	    PRIu64 ": span [%" PRIu32 ", %" PRIu32 "], want [%" PRIu32 ", %"
	    PRIu32 "]", hdr, size, cs, c0, c1, lo, hi);
}

/* Every a-b, a- and -n over small objects and chunk sizes. */
LTest(math, span_brute_force)
{
	static const uint64_t css[] = { 1, 3, 4, 10 };
	char hdr[64];

	for (size_t k = 0; k < sizeof(css) / sizeof(css[0]); k++) {
		for (uint64_t size = 1; size <= 25; size++) {
			for (uint64_t a = 0; a <= size + 1; a++) {
				for (uint64_t b = a; b <= size + 1; b++) {
					snprintf(hdr, sizeof(hdr), "bytes=%"
					    PRIu64 "-%" PRIu64, a, b);
					check_span(hdr, size, css[k]);
				}
				snprintf(hdr, sizeof(hdr), "bytes=%" PRIu64 "-",
				    a);
				check_span(hdr, size, css[k]);
				snprintf(hdr, sizeof(hdr), "bytes=-%" PRIu64, a);
				check_span(hdr, size, css[k]);
			}
		}
	}
}
