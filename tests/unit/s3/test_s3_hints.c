/* test_s3_hints.c — x-bucketcache-* hint headers (s3_hints.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_hints.h"
#include "s3/s3_request.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

static void
parse1(bc_s3_hints_t *h, const char *name, const char *value)
{
	bc_kvlist_t l = BC_KVLIST_INIT;

	cr_assert_eq(bc_kv_add(&l, name, value), 0);
	bc_s3_hints_init(h);
	cr_assert_eq(bc_s3_hints_parse(h, &l), 0);
	bc_kv_fini(&l);
}

LTest(s3_hints, none)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	bc_s3_hints_t h;

	bc_kv_add(&l, "Host", "x");
	bc_kv_add(&l, "x-bucketcache-admin-token", "t");
	bc_s3_hints_init(&h);
	cr_assert_eq(bc_s3_hints_parse(&h, &l), 0);
	cr_assert_str_eq(h.job, "");
	cr_assert_eq(h.n_next, 0);
	cr_assert_eq(h.pattern, BC_S3_PATTERN_NONE);
	cr_assert(!h.has_epoch);
	cr_assert_eq(h.malformed, 0);
	bc_s3_hints_fini(&h);
	bc_kv_fini(&l);
}

LTest(s3_hints, all_four)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	bc_s3_hints_t h;

	bc_kv_add(&l, "X-Bucketcache-Job", "train-7.a_b:c@d+e=f~");
	bc_kv_add(&l, "x-bucketcache-next", "a/b, c%20d ,e%2Cf,%E2%82%AC");
	bc_kv_add(&l, "x-bucketcache-pattern", "Shuffle");
	bc_kv_add(&l, "x-bucketcache-epoch", "4294967295");
	bc_s3_hints_init(&h);
	cr_assert_eq(bc_s3_hints_parse(&h, &l), 0);
	cr_assert_str_eq(h.job, "train-7.a_b:c@d+e=f~");
	cr_assert_eq(h.n_next, 4);
	cr_assert_str_eq(h.next[0], "a/b");
	cr_assert_str_eq(h.next[1], "c d");
	cr_assert_str_eq(h.next[2], "e,f");
	cr_assert_str_eq(h.next[3], "\xe2\x82\xac");
	cr_assert_eq(h.pattern, BC_S3_PATTERN_SHUFFLE);
	cr_assert(h.has_epoch);
	cr_assert_eq(h.epoch, 4294967295u);
	cr_assert_eq(h.malformed, 0);
	bc_s3_hints_fini(&h);
	cr_assert_null(h.next);
	bc_kv_fini(&l);
}

LTest(s3_hints, patterns)
{
	static const struct { const char *v; bc_s3_pattern_t p; } c[] = {
		{ "sequential", BC_S3_PATTERN_SEQUENTIAL },
		{ "shuffle", BC_S3_PATTERN_SHUFFLE },
		{ "RANDOM", BC_S3_PATTERN_RANDOM },
		{ "once", BC_S3_PATTERN_ONCE },
		{ "", BC_S3_PATTERN_NONE },
		{ "seq", BC_S3_PATTERN_NONE },
		{ "once ", BC_S3_PATTERN_NONE },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		bc_s3_hints_t h;

		parse1(&h, "x-bucketcache-pattern", c[i].v);
		cr_assert_eq(h.pattern, c[i].p, "%s", c[i].v);
		cr_assert_eq(h.malformed, c[i].p == BC_S3_PATTERN_NONE, "%s",
		    c[i].v);
		if (c[i].p != BC_S3_PATTERN_NONE)
			cr_assert_eq(strcasecmp(bc_s3_pattern_name(h.pattern),
			    c[i].v), 0);
		bc_s3_hints_fini(&h);
	}
}

LTest(s3_hints, malformed_values)
{
	static const struct { const char *name, *v; } c[] = {
		{ "x-bucketcache-job", "" },
		{ "x-bucketcache-job", "a b" },
		{ "x-bucketcache-job", "a/b" },
		{ "x-bucketcache-job", "a\"b" },
		{ "x-bucketcache-job", "\xc3\xa9" },
		{ "x-bucketcache-epoch", "" },
		{ "x-bucketcache-epoch", "-1" },
		{ "x-bucketcache-epoch", "+1" },
		{ "x-bucketcache-epoch", " 1" },
		{ "x-bucketcache-epoch", "0x10" },
		{ "x-bucketcache-epoch", "4294967296" },
		{ "x-bucketcache-epoch", "99999999999999999999999" },
		{ "x-bucketcache-next", "" },
		{ "x-bucketcache-next", "a,,b" },
		{ "x-bucketcache-next", "a," },
		{ "x-bucketcache-next", ",a" },
		{ "x-bucketcache-next", " , " },
		{ "x-bucketcache-next", "a,%zz" },
		{ "x-bucketcache-next", "a,%4" },
		{ "x-bucketcache-next", "a,b%" },
		{ "x-bucketcache-next", "a%00b" },
		{ "x-bucketcache-next", "a/./b" },
		{ "x-bucketcache-next", "a/%2E%2E/b" },
		{ "x-bucketcache-next", ".." },
		{ "x-bucketcache-next", "ok,./x" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		bc_s3_hints_t h;

		parse1(&h, c[i].name, c[i].v);
		cr_assert_eq(h.malformed, 1, "%s: '%s'", c[i].name, c[i].v);
		cr_assert_str_eq(h.job, "");
		cr_assert_eq(h.n_next, 0);
		cr_assert_null(h.next);
		cr_assert(!h.has_epoch);
		bc_s3_hints_fini(&h);
	}
}

LTest(s3_hints, malformed_one_others_parsed)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	bc_s3_hints_t h;

	bc_kv_add(&l, "x-bucketcache-job", "bad id");
	bc_kv_add(&l, "x-bucketcache-next", "k1,k2");
	bc_kv_add(&l, "x-bucketcache-pattern", "zigzag");
	bc_kv_add(&l, "x-bucketcache-epoch", "3");
	bc_s3_hints_init(&h);
	cr_assert_eq(bc_s3_hints_parse(&h, &l), 0);
	cr_assert_eq(h.malformed, 2);
	cr_assert_str_eq(h.job, "");
	cr_assert_eq(h.n_next, 2);
	cr_assert_eq(h.epoch, 3);
	bc_s3_hints_fini(&h);
	bc_kv_fini(&l);
}

LTest(s3_hints, repeated_header_first_wins)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	bc_s3_hints_t h;

	bc_kv_add(&l, "x-bucketcache-job", "first");
	bc_kv_add(&l, "X-BUCKETCACHE-JOB", "second");
	bc_kv_add(&l, "x-bucketcache-next", "a");
	bc_kv_add(&l, "x-bucketcache-next", "b");
	bc_s3_hints_init(&h);
	cr_assert_eq(bc_s3_hints_parse(&h, &l), 0);
	cr_assert_str_eq(h.job, "first");
	cr_assert_eq(h.n_next, 1);
	cr_assert_str_eq(h.next[0], "a");
	cr_assert_eq(h.malformed, 2);
	bc_s3_hints_fini(&h);
	bc_kv_fini(&l);
}

LTest(s3_hints, job_length_bound)
{
	char id[BC_S3_HINT_JOB_MAX + 2];
	bc_s3_hints_t h;

	memset(id, 'j', sizeof(id) - 1);
	id[BC_S3_HINT_JOB_MAX] = '\0';
	parse1(&h, "x-bucketcache-job", id);
	cr_assert_eq(h.malformed, 0);
	cr_assert_eq(strlen(h.job), BC_S3_HINT_JOB_MAX);
	bc_s3_hints_fini(&h);
	id[BC_S3_HINT_JOB_MAX] = 'j';
	id[BC_S3_HINT_JOB_MAX + 1] = '\0';
	parse1(&h, "x-bucketcache-job", id);
	cr_assert_eq(h.malformed, 1);
	cr_assert_str_eq(h.job, "");
	bc_s3_hints_fini(&h);
}

static char *
keys_header(size_t n, size_t keylen)
{
	bc_buf_t b = BC_BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		char k[32];

		snprintf(k, sizeof(k), "%s%06zu", i > 0 ? "," : "", i);
		bc_buf_puts(&b, k);
		for (size_t j = 6; j < keylen; j++)
			bc_buf_putc(&b, 'x');
	}
	return bc_buf_steal(&b);
}

LTest(s3_hints, next_key_count_bound)
{
	char *v = keys_header(BC_S3_HINT_NEXT_MAX, 6);
	bc_s3_hints_t h;

	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 0);
	cr_assert_eq(h.n_next, BC_S3_HINT_NEXT_MAX);
	cr_assert_str_eq(h.next[999], "000999");
	bc_s3_hints_fini(&h);
	free(v);
	v = keys_header(BC_S3_HINT_NEXT_MAX + 1, 6);
	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 1);
	cr_assert_eq(h.n_next, 0);
	bc_s3_hints_fini(&h);
	free(v);
}

LTest(s3_hints, next_byte_bound)
{
	/* 100 keys of 655 bytes: 65,599 bytes, over 64 KiB */
	char *v = keys_header(100, 655);
	bc_s3_hints_t h;

	cr_assert_gt(strlen(v), BC_S3_HINT_HEADER_MAX);
	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 1);
	cr_assert_eq(h.n_next, 0);
	bc_s3_hints_fini(&h);
	free(v);
	v = keys_header(100, 650);
	cr_assert_leq(strlen(v), BC_S3_HINT_HEADER_MAX);
	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 0);
	cr_assert_eq(h.n_next, 100);
	bc_s3_hints_fini(&h);
	free(v);
}

LTest(s3_hints, next_key_too_long)
{
	char *v = keys_header(1, BC_S3_MAX_KEY + 1);
	bc_s3_hints_t h;

	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 1);
	bc_s3_hints_fini(&h);
	free(v);
	v = keys_header(1, BC_S3_MAX_KEY);
	parse1(&h, "x-bucketcache-next", v);
	cr_assert_eq(h.malformed, 0);
	cr_assert_eq(strlen(h.next[0]), BC_S3_MAX_KEY);
	bc_s3_hints_fini(&h);
	free(v);
}

Test(s3_hints, key_ok)
{
	cr_assert(bc_s3_hint_key_ok("a", 1));
	cr_assert(bc_s3_hint_key_ok("a/.b/..c", 8));
	cr_assert(bc_s3_hint_key_ok("a//b", 4));
	cr_assert(!bc_s3_hint_key_ok("", 0));
	cr_assert(!bc_s3_hint_key_ok(".", 1));
	cr_assert(!bc_s3_hint_key_ok("a/..", 4));
	cr_assert(!bc_s3_hint_key_ok("./a", 3));
	cr_assert(!bc_s3_hint_key_ok("a\0b", 3));
	/* the span, not the string: "a/.." cut to "a/." is still bad */
	cr_assert(!bc_s3_hint_key_ok("a/..", 3));
	cr_assert(bc_s3_hint_key_ok("a/..", 1));
}

Test(s3_hints, header_names)
{
	cr_assert(bc_s3_hint_header("X-Bucketcache-Next"));
	cr_assert(bc_s3_hint_header("x-bucketcache-epoch"));
	cr_assert(!bc_s3_hint_header("x-bucketcache-admin-token"));
	cr_assert(!bc_s3_hint_header("x-amz-meta-x-bucketcache-job"));
}
