/*
 * test_s3_checksum.c — S3's checksums: the CRC catalogue's check values
 * ("123456789"), the AWS SDKs' own test vectors ("", "abc", "Hello
 * world", as aws-sdk-js-v3's flexible-checksums tests have them), values
 * the newest @aws-sdk/client-s3 sent for a known body, the AWS chunked-
 * upload example's CRC32C; incremental equals one-shot at every split;
 * the hardware CRC32C equals the table; names, headers and value forms.
 */
#include <criterion/criterion.h>

#include "../bc_test.h"
#include <stdlib.h>
#include <string.h>

#include "s3/s3_checksum.h"

LTest(checksum, check_values)
{
	const char *s = "123456789";

	cr_expect_eq(bc_crc32(0, s, 9), 0xCBF43926u);
	cr_expect_eq(bc_crc32c(0, s, 9), 0xE3069283u);
	cr_expect_eq(bc_crc32c_sw(0, s, 9), 0xE3069283u);
	cr_expect_eq(bc_crc64nvme(0, s, 9), 0xAE8B14860A799888ull);
	cr_expect_eq(bc_crc32(0, "", 0), 0);
	cr_expect_eq(bc_crc64nvme(0, "", 0), 0);
}

static const struct {
	bc_checksum_alg_t alg;
	const char       *in;
	const char       *b64;
} sdk_vectors[] = {
	{ BC_CKSUM_CRC32, "", "AAAAAA==" },
	{ BC_CKSUM_CRC32, "abc", "NSRBwg==" },
	{ BC_CKSUM_CRC32, "Hello world", "i9aeUg==" },
	{ BC_CKSUM_CRC32C, "", "AAAAAA==" },
	{ BC_CKSUM_CRC32C, "abc", "Nks/tw==" },
	{ BC_CKSUM_CRC32C, "Hello world", "crUfeA==" },
	{ BC_CKSUM_CRC64NVME, "", "AAAAAAAAAAA=" },
	{ BC_CKSUM_CRC64NVME, "abc", "BeXKuz/B+us=" },
	{ BC_CKSUM_CRC64NVME, "Hello world", "OOJZ0D8xKts=" },
	{ BC_CKSUM_SHA1, "", "2jmj7l5rSw0yVb/vlWAYkK/YBwk=" },
	{ BC_CKSUM_SHA1, "abc", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=" },
	{ BC_CKSUM_SHA1, "Hello world", "e1AsOh9IyGCa4hLN+2Od7jlnP14=" },
	{ BC_CKSUM_SHA256, "", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" },
	{ BC_CKSUM_SHA256, "abc",
	    "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=" },
	{ BC_CKSUM_SHA256, "Hello world",
	    "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw=" },
};

LTest(checksum, sdk_vectors)
{
	for (size_t i = 0; i < sizeof(sdk_vectors) / sizeof(*sdk_vectors);
	    i++) {
		char out[BC_CKSUM_B64_MAX];
		int n = bc_checksum_b64(sdk_vectors[i].alg, sdk_vectors[i].in,
		    strlen(sdk_vectors[i].in), out);

		cr_expect_eq((size_t)n, strlen(sdk_vectors[i].b64));
		cr_expect_str_eq(out, sdk_vectors[i].b64, "%s(\"%s\")",
		    bc_checksum_name(sdk_vectors[i].alg), sdk_vectors[i].in);
		cr_expect(bc_checksum_value_ok(sdk_vectors[i].alg, out,
		    strlen(out)));
	}
}

/* The body the JS SDK test uploads: byte i is (7i + 3) mod 256. */
static char *
sdk_body(size_t n)
{
	char *b = malloc(n);

	cr_assert_not_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (char)((i * 7 + 3) & 255);
	return b;
}

/* What @aws-sdk/client-s3 3.1172 sent in x-amz-checksum-* trailers (and,
 * for 1000 bytes, header) for that body, captured on the wire. */
LTest(checksum, js_sdk_wire_values)
{
	static const struct {
		bc_checksum_alg_t alg;
		size_t n;
		const char *b64;
	} v[] = {
		{ BC_CKSUM_CRC32, 100000, "9zDKqA==" },
		{ BC_CKSUM_CRC32C, 100000, "lvMdxg==" },
		{ BC_CKSUM_CRC64NVME, 100000, "FaqxJz+t8QE=" },
		{ BC_CKSUM_SHA1, 100000, "OG0AFGNBqj3Gd4twHn6xZZEVh/U=" },
		{ BC_CKSUM_SHA256, 100000,
		    "2WuralXuMmuiBt1KhabpXhQ2DX+rv0SPA+aJwkOCt9A=" },
		{ BC_CKSUM_CRC32, 1000, "F7wqRg==" },
		{ BC_CKSUM_CRC32, 0, "AAAAAA==" },
	};
	char *body = sdk_body(100000);

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		char out[BC_CKSUM_B64_MAX];

		cr_assert_gt(bc_checksum_b64(v[i].alg, body, v[i].n, out), 0);
		cr_expect_str_eq(out, v[i].b64, "%s of %zu bytes",
		    bc_checksum_name(v[i].alg), v[i].n);
	}
	free(body);
}

/* The trailer of AWS's "PUT Object with trailing headers" example. */
LTest(checksum, aws_example_crc32c)
{
	char *a = malloc(66560), out[BC_CKSUM_B64_MAX];

	cr_assert_not_null(a);
	memset(a, 'a', 66560);
	cr_assert_eq(bc_checksum_b64(BC_CKSUM_CRC32C, a, 66560, out), 8);
	cr_expect_str_eq(out, "sOO8/Q==");
	free(a);
}

/* Any split of the input gives the one-shot value, for every algorithm
 * and every alignment (the CRC loops handle heads and tails apart). */
LTest(checksum, incremental_every_split)
{
	size_t n = 300;
	char *body = sdk_body(n + 8);

	for (int alg = 1; alg < BC_CKSUM_COUNT; alg++) {
		for (size_t off = 0; off < 8; off++) {
			char want[BC_CKSUM_B64_MAX];

			cr_assert_gt(bc_checksum_b64((bc_checksum_alg_t)alg,
			    body + off, n, want), 0);
			for (size_t cut = 0; cut <= n; cut++) {
				bc_checksum_t c;
				char got[BC_CKSUM_B64_MAX];

				cr_assert_eq(bc_checksum_init(&c,
				    (bc_checksum_alg_t)alg), 0);
				bc_checksum_update(&c, body + off, cut);
				bc_checksum_update(&c, body + off + cut,
				    n - cut);
				bc_checksum_final(&c, got);
				bc_checksum_fini(&c);
				cr_assert_str_eq(got, want, "%s off %zu cut %zu",
				    bc_checksum_name((bc_checksum_alg_t)alg),
				    off, cut);
			}
		}
	}
	/* byte by byte */
	for (int alg = 1; alg < BC_CKSUM_COUNT; alg++) {
		bc_checksum_t c;
		char got[BC_CKSUM_B64_MAX], want[BC_CKSUM_B64_MAX];

		bc_checksum_b64((bc_checksum_alg_t)alg, body, n, want);
		cr_assert_eq(bc_checksum_init(&c, (bc_checksum_alg_t)alg), 0);
		for (size_t i = 0; i < n; i++)
			bc_checksum_update(&c, body + i, 1);
		bc_checksum_final(&c, got);
		bc_checksum_fini(&c);
		cr_expect_str_eq(got, want);
	}
	free(body);
}

LTest(checksum, hardware_crc32c_matches_table)
{
	size_t n = 70001;
	char *body = sdk_body(n);

	for (size_t len = 0; len < 200; len++)
		for (size_t off = 0; off < 9; off++)
			cr_assert_eq(bc_crc32c(0, body + off, len),
			    bc_crc32c_sw(0, body + off, len), "len %zu", len);
	cr_expect_eq(bc_crc32c(0, body, n), bc_crc32c_sw(0, body, n));
	cr_expect_eq(bc_crc32c(bc_crc32c(0, body, 1234), body + 1234,
	    n - 1234), bc_crc32c_sw(0, body, n));
	free(body);
}

LTest(checksum, names)
{
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-crc32"),
	    BC_CKSUM_CRC32);
	cr_expect_eq(bc_checksum_from_header("X-Amz-Checksum-CRC32C"),
	    BC_CKSUM_CRC32C);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-crc64nvme"),
	    BC_CKSUM_CRC64NVME);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-sha1"),
	    BC_CKSUM_SHA1);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-sha256"),
	    BC_CKSUM_SHA256);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-md5"),
	    BC_CKSUM_NONE);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-"),
	    BC_CKSUM_NONE);
	cr_expect_eq(bc_checksum_from_header("x-amz-checksum-crc32 "),
	    BC_CKSUM_NONE);
	cr_expect_eq(bc_checksum_from_header(""), BC_CKSUM_NONE);
	cr_expect_eq(bc_checksum_from_name("CRC32"), BC_CKSUM_CRC32);
	cr_expect_eq(bc_checksum_from_name("crc32c"), BC_CKSUM_CRC32C);
	cr_expect_eq(bc_checksum_from_name("CRC64NVME"), BC_CKSUM_CRC64NVME);
	cr_expect_eq(bc_checksum_from_name("SHA1"), BC_CKSUM_SHA1);
	cr_expect_eq(bc_checksum_from_name("SHA256"), BC_CKSUM_SHA256);
	cr_expect_eq(bc_checksum_from_name("SHA-256"), BC_CKSUM_NONE);
	cr_expect_eq(bc_checksum_from_name(""), BC_CKSUM_NONE);
	for (int alg = 1; alg < BC_CKSUM_COUNT; alg++) {
		cr_expect_eq(bc_checksum_from_header(bc_checksum_header(
		    (bc_checksum_alg_t)alg)), alg);
		cr_expect_eq(bc_checksum_from_name(bc_checksum_name(
		    (bc_checksum_alg_t)alg)), alg);
	}
	cr_expect_str_eq(bc_checksum_header(BC_CKSUM_NONE), "");
	cr_expect_eq(bc_checksum_b64_len(BC_CKSUM_CRC32), 8);
	cr_expect_eq(bc_checksum_b64_len(BC_CKSUM_CRC64NVME), 12);
	cr_expect_eq(bc_checksum_b64_len(BC_CKSUM_SHA1), 28);
	cr_expect_eq(bc_checksum_b64_len(BC_CKSUM_SHA256), 44);
}

LTest(checksum, value_forms)
{
	cr_expect(bc_checksum_value_ok(BC_CKSUM_CRC32, "9zDKqA==", 8));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_CRC32, "9zDKqA=", 7));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_CRC32, "9zDKqAA=", 8));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_CRC32, "9zDK*A==", 8));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_CRC64NVME, "9zDKqA==",
	    8));
	cr_expect(bc_checksum_value_ok(BC_CKSUM_CRC64NVME, "FaqxJz+t8QE=",
	    12));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_CRC64NVME,
	    "FaqxJz+t8QE==", 13));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_NONE, "", 0));
	cr_expect_not(bc_checksum_value_ok(BC_CKSUM_SHA1,
	    "OG0AFGNBqj3Gd4twHn6xZZEVh/U", 27));
}
