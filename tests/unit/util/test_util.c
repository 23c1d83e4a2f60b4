/*
 * test_util.c — src/util: buffer limits, printf and XML escaping; the
 * name/value list; hashes against published known answers (FIPS 180-2,
 * RFC 1321, RFC 4231, RFC 2202), base64 (RFC 4648); errors and log levels.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_kv.h"
#include "util/util_hash.h"
#include "util/util_log.h"
#include "util/util_num.h"

/* Test() whose body is followed by check_leaks(). */
/* ---- bc_buf ------------------------------------------------------------- */

/* bc_span_trim narrows a span (not NUL-terminated) on both sides and
 * leaves the bytes alone. */
LTest(buf, span_trim)
{
	static const struct { const char *in; size_t n; const char *out; } c[] = {
		{ "", 0, "" }, { "   ", 3, "" }, { " \t\r\nab c\n ", 10, "ab c" },
		{ "abc", 3, "abc" }, { "  x", 3, "x" }, { "x  ", 3, "x" },
		{ " a b zzz", 5, "a b" },   /* the span stops before "zzz" */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *s = c[i].in;
		size_t n = c[i].n;

		bc_span_trim(&s, &n);
		cr_assert_eq(n, strlen(c[i].out), "case %zu", i);
		cr_assert_eq(memcmp(s, c[i].out, n), 0, "case %zu", i);
		cr_assert(s >= c[i].in && s + n <= c[i].in + c[i].n);
	}
}

LTest(buf, empty_is_empty_string)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_str_eq(bc_buf_str(&b), "");
	cr_assert_eq(b.len, 0);
	bc_buf_fini(&b);
	bc_buf_fini(&b);          /* twice is harmless */
}

LTest(buf, append_grows_and_terminates)
{
	bc_buf_t b;
	char big[10000];

	bc_buf_init(&b, 0);
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 10; i++)
		cr_assert_eq(bc_buf_append(&b, big, sizeof(big)), 0);
	cr_assert_eq(b.len, 100000);
	cr_assert_eq(b.data[b.len], '\0');
	cr_assert_eq(strlen(b.data), 100000);
	cr_assert_eq(bc_buf_putc(&b, 'y'), 0);
	cr_assert_eq(b.data[100000], 'y');
	bc_buf_fini(&b);
}

LTest(buf, append_binary_with_nul)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_buf_append(&b, "a\0b", 3), 0);
	cr_assert_eq(b.len, 3);
	cr_assert_eq(memcmp(b.data, "a\0b", 4), 0);
	bc_buf_fini(&b);
}

LTest(buf, limit_refuses_and_leaves_unchanged)
{
	bc_buf_t b;

	bc_buf_init(&b, 8);
	cr_assert_eq(bc_buf_puts(&b, "12345"), 0);
	cr_assert_eq(bc_buf_puts(&b, "6789"), BC_E2BIG);
	cr_assert_str_eq(bc_buf_str(&b), "12345");
	cr_assert_eq(bc_buf_puts(&b, "678"), 0);       /* exactly 8 */
	cr_assert_str_eq(bc_buf_str(&b), "12345678");
	cr_assert_eq(bc_buf_putc(&b, '9'), BC_E2BIG);
	cr_assert_eq(bc_buf_printf(&b, "%d", 1), BC_E2BIG);
	cr_assert_eq(b.len, 8);
	bc_buf_fini(&b);
}

LTest(buf, limit_applies_to_printf)
{
	bc_buf_t b;

	bc_buf_init(&b, 10);
	cr_assert_eq(bc_buf_printf(&b, "%s-%d", "abcdefgh", 42), BC_E2BIG);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(bc_buf_printf(&b, "%s-%d", "abcdef", 42), 0);
	cr_assert_str_eq(bc_buf_str(&b), "abcdef-42");
	bc_buf_fini(&b);
}

LTest(buf, reserve_overflow_is_refused)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_buf_reserve(&b, SIZE_MAX), BC_E2BIG);
	cr_assert_eq(bc_buf_reserve(&b, SIZE_MAX / 2 + 1), BC_E2BIG);
	cr_assert_eq(b.len, 0);
	bc_buf_fini(&b);
}

LTest(buf, printf_appends)
{
	bc_buf_t b = BC_BUF_INIT;
	char long_s[500];

	memset(long_s, 'z', sizeof(long_s) - 1);
	long_s[sizeof(long_s) - 1] = '\0';
	cr_assert_eq(bc_buf_puts(&b, "n="), 0);
	cr_assert_eq(bc_buf_printf(&b, "%d,%s,%05.1f", -7, "x", 2.5), 0);
	cr_assert_str_eq(bc_buf_str(&b), "n=-7,x,002.5");
	cr_assert_eq(bc_buf_printf(&b, "%s", long_s), 0);
	cr_assert_eq(b.len, 12 + 499);
	bc_buf_fini(&b);
}

LTest(buf, reset_keeps_memory_and_steal_hands_over)
{
	bc_buf_t b = BC_BUF_INIT;
	char *p;

	cr_assert_eq(bc_buf_puts(&b, "hello"), 0);
	bc_buf_reset(&b);
	cr_assert_str_eq(bc_buf_str(&b), "");
	cr_assert_neq(b.data, NULL);
	cr_assert_eq(bc_buf_puts(&b, "abc"), 0);
	p = bc_buf_steal(&b);
	cr_assert_str_eq(p, "abc");
	cr_assert_eq(b.data, NULL);
	cr_assert_eq(b.len, 0);
	free(p);
	p = bc_buf_steal(&b);     /* empty: an empty string, not NULL */
	cr_assert_str_eq(p, "");
	free(p);
}

LTest(buf, xml_escapes_the_five)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_buf_put_xml(&b, "a<b>&\"c'd"), 0);
	cr_assert_str_eq(bc_buf_str(&b),
	    "a&lt;b&gt;&amp;&quot;c&apos;d");
	bc_buf_reset(&b);
	cr_assert_eq(bc_buf_put_xml(&b, "plain/key.txt"), 0);
	cr_assert_str_eq(bc_buf_str(&b), "plain/key.txt");
	bc_buf_fini(&b);
}

/* Text that is not UTF-8 never reaches an XML document as it is (an S3
 * error's <Resource> echoes a decoded path: "/%EB%FF/x"). */
LTest(buf, xml_replaces_what_is_not_utf8)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_buf_put_xml(&b, "/\xeb\xff/x"), 0);
	cr_assert_str_eq(bc_buf_str(&b), "/\xef\xbf\xbd\xef\xbf\xbd/x");
	bc_buf_reset(&b);
	/* valid multi-byte text passes; overlong, surrogate, cut: replaced */
	cr_assert_eq(bc_buf_put_xml(&b, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
	    0);
	cr_assert_str_eq(bc_buf_str(&b),
	    "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	bc_buf_reset(&b);
	cr_assert_eq(bc_buf_put_xml(&b, "\xc0\xaf|\xed\xa0\x80|\xe2\x82"), 0);
	cr_assert_eq(bc_utf8_len((const unsigned char *)"\xc0\xaf"), 0);
	cr_assert_eq(bc_utf8_len((const unsigned char *)"\xed\xa0\x80"), 0);
	cr_assert_eq(bc_utf8_len((const unsigned char *)"\xf4\x90\x80\x80"), 0);
	cr_assert_eq(bc_utf8_len((const unsigned char *)"\xe2\x82"), 0);
	cr_assert_eq(bc_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
	cr_assert_null(strchr(bc_buf_str(&b), '\xc0'));
	cr_assert_null(strchr(bc_buf_str(&b), '\xed'));
	bc_buf_fini(&b);
}

LTest(buf, xml_respects_limit)
{
	bc_buf_t b;

	bc_buf_init(&b, 6);
	cr_assert_eq(bc_buf_put_xml(&b, "<<"), BC_E2BIG);
	cr_assert_leq(b.len, 6);
	bc_buf_fini(&b);
}

/* ---- bc_kv -------------------------------------------------------------- */

LTest(kv, add_get_order_and_case)
{
	bc_kvlist_t l = BC_KVLIST_INIT;

	cr_assert_eq(bc_kv_add(&l, "Host", "a"), 0);
	cr_assert_eq(bc_kv_add(&l, "X-Amz-Date", "b"), 0);
	cr_assert_eq(bc_kv_add(&l, "host", "c"), 0);
	cr_assert_eq(l.n, 3);
	cr_assert_str_eq(l.v[0].name, "Host");
	cr_assert_str_eq(l.v[2].value, "c");
	cr_assert_str_eq(bc_kv_get(&l, "HOST"), "a");      /* first wins */
	cr_assert_str_eq(bc_kv_get(&l, "x-amz-date"), "b");
	cr_assert_null(bc_kv_get_exact(&l, "x-amz-date"));
	cr_assert_str_eq(bc_kv_get_exact(&l, "host"), "c");
	cr_assert_null(bc_kv_get(&l, "missing"));
	bc_kv_fini(&l);
	cr_assert_eq(l.n, 0);
	cr_assert_null(l.v);
}

LTest(kv, addn_copies_exact_lengths)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	char name[] = "prefixXYZ", value[] = "v1v2";

	cr_assert_eq(bc_kv_addn(&l, name, 6, value, 2), 0);
	name[0] = 'Q';
	cr_assert_str_eq(l.v[0].name, "prefix");
	cr_assert_str_eq(l.v[0].value, "v1");
	cr_assert_eq(bc_kv_addn(&l, "uploads", 7, "", 0), 0);
	cr_assert_str_eq(bc_kv_get_exact(&l, "uploads"), "");
	bc_kv_fini(&l);
}

LTest(kv, set_replaces_all_and_del_removes_all)
{
	bc_kvlist_t l = BC_KVLIST_INIT;

	cr_assert_eq(bc_kv_add(&l, "a", "1"), 0);
	cr_assert_eq(bc_kv_add(&l, "B", "2"), 0);
	cr_assert_eq(bc_kv_add(&l, "A", "3"), 0);
	cr_assert_eq(bc_kv_set(&l, "a", "9"), 0);
	cr_assert_eq(l.n, 2);
	cr_assert_str_eq(bc_kv_get(&l, "A"), "9");
	cr_assert_str_eq(l.v[0].name, "B");
	bc_kv_del(&l, "b");
	cr_assert_eq(l.n, 1);
	cr_assert_null(bc_kv_get(&l, "B"));
	bc_kv_del(&l, "nothing");
	cr_assert_eq(l.n, 1);
	bc_kv_fini(&l);
}

LTest(kv, many_entries_grow)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	char name[16];

	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		cr_assert_eq(bc_kv_add(&l, name, name), 0);
	}
	cr_assert_eq(l.n, 1000);
	cr_assert_str_eq(bc_kv_get(&l, "k999"), "k999");
	cr_assert_str_eq(bc_kv_get(&l, "k0"), "k0");
	bc_kv_fini(&l);
}

/* ---- crypto known answers ------------------------------------------------ */

static void
hex_of(const uint8_t *p, size_t n, char *out)
{
	bc_hex(p, n, out);
}

typedef struct {
	const char *in;
	const char *hex;
} kat_t;

LTest(crypto, sha256_fips180)
{
	static const kat_t v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char out[65];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		bc_sha256_hex(v[i].in, strlen(v[i].in), out);
		cr_assert_str_eq(out, v[i].hex, "sha256(%s)", v[i].in);
	}
}

LTest(crypto, sha256_incremental_million_a)
{
	bc_sha256_t *h = bc_sha256_new();
	uint8_t d[BC_SHA256_LEN];
	char chunk[1000], out[65];

	cr_assert_not_null(h);
	memset(chunk, 'a', sizeof(chunk));
	for (int i = 0; i < 1000; i++)
		bc_sha256_update(h, chunk, sizeof(chunk));
	bc_sha256_final(h, d);            /* does not free h */
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out,
	    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	bc_sha256_free(h);                /* the owner frees, once */
	bc_sha256_free(NULL);
}

/* The digest contexts' one ownership rule (util_crypto.h): _final never
 * frees, the owner's _free does. Under ASan, a _final that freed makes
 * the _free below a double free (the plan PUT crash of issue 24). */
LTest(crypto, final_leaves_the_context_to_its_owner)
{
	bc_sha256_t *s = bc_sha256_new();
	bc_md5ctx_t *m = bc_md5_new();
	uint8_t ds[BC_SHA256_LEN], dm[BC_MD5_LEN];
	char out[65];

	cr_assert_not_null(s);
	cr_assert_not_null(m);
	bc_sha256_update(s, "abc", 3);
	bc_md5_update(m, "abc", 3);
	bc_sha256_final(s, ds);
	bc_md5_final(m, dm);
	hex_of(ds, sizeof(ds), out);
	cr_assert_str_eq(out,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of(dm, sizeof(dm), out);
	cr_assert_str_eq(out, "900150983cd24fb0d6963f7d28e17f72");
	bc_sha256_free(s);
	bc_md5_free(m);
}

LTest(crypto, md5_rfc1321)
{
	static const kat_t v[] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
	};
	uint8_t d[BC_MD5_LEN];
	char out[33];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		bc_md5(v[i].in, strlen(v[i].in), d);
		hex_of(d, sizeof(d), out);
		cr_assert_str_eq(out, v[i].hex, "md5(%s)", v[i].in);
	}
}

LTest(crypto, md5_incremental_matches_oneshot)
{
	bc_md5ctx_t *h = bc_md5_new();
	uint8_t d[BC_MD5_LEN];
	char out[33];

	cr_assert_not_null(h);
	bc_md5_update(h, "message ", 8);
	bc_md5_update(h, "digest", 6);
	bc_md5_final(h, d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out, "f96b697d7cb7938d525a2f31aaf161d0");
	bc_md5_free(h);
	bc_md5_free(NULL);
}

LTest(crypto, hmac_sha256_rfc4231)
{
	uint8_t key[131], d[BC_SHA256_LEN];
	const char *data;
	char out[65];

	memset(key, 0x0b, 20);          /* test case 1 */
	bc_hmac_sha256(key, 20, "Hi There", 8, d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out,
	    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

	data = "what do ya want for nothing?";   /* test case 2 */
	bc_hmac_sha256("Jefe", 4, data, strlen(data), d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out,
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

	memset(key, 0xaa, sizeof(key));   /* test case 6: key > block */
	data = "Test Using Larger Than Block-Size Key - Hash Key First";
	bc_hmac_sha256(key, sizeof(key), data, strlen(data), d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out,
	    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

LTest(crypto, hmac_sha1_rfc2202)
{
	uint8_t key[20], d[BC_SHA1_LEN];
	const char *data = "what do ya want for nothing?";
	char out[41];

	memset(key, 0x0b, sizeof(key));
	bc_hmac_sha1(key, sizeof(key), "Hi There", 8, d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out, "b617318655057264e28bc0b6fb378c8ef146be00");
	bc_hmac_sha1("Jefe", 4, data, strlen(data), d);
	hex_of(d, sizeof(d), out);
	cr_assert_str_eq(out, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
}

LTest(crypto, hex_lowercase)
{
	static const uint8_t p[] = { 0x00, 0x0f, 0xa5, 0xff };
	char out[9];

	bc_hex(p, sizeof(p), out);
	cr_assert_str_eq(out, "000fa5ff");
	bc_hex(p, 0, out);
	cr_assert_str_eq(out, "");
}

LTest(crypto, base64_rfc4648)
{
	static const kat_t v[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	char out[16];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int n = bc_base64((const uint8_t *)v[i].in, strlen(v[i].in),
		    out, sizeof(out));

		cr_assert_eq(n, (int)strlen(v[i].hex), "base64(%s)", v[i].in);
		cr_assert_str_eq(out, v[i].hex, "base64(%s)", v[i].in);
	}
}

LTest(crypto, base64_md5_content_md5_and_short_buffer)
{
	uint8_t d[BC_MD5_LEN];
	char out[25];

	/* Content-MD5 of "" as S3 computes it. */
	bc_md5("", 0, d);
	cr_assert_eq(bc_base64(d, sizeof(d), out, sizeof(out)), 24);
	cr_assert_str_eq(out, "1B2M2Y8AsgTpgAmY7PhCfg==");
	cr_assert_eq(bc_base64(d, sizeof(d), out, 24), -1);  /* no room for NUL */
	cr_assert_eq(bc_base64((const uint8_t *)"foo", 3, out, 4), -1);
	cr_assert_eq(bc_base64((const uint8_t *)"foo", 3, out, 5), 4);
}

LTest(crypto, streq_ct)
{
	cr_assert_eq(bc_streq_ct("abc", "abc"), 1);
	cr_assert_eq(bc_streq_ct("", ""), 1);
	cr_assert_eq(bc_streq_ct("abc", "abd"), 0);
	cr_assert_eq(bc_streq_ct("abc", "ab"), 0);
	cr_assert_eq(bc_streq_ct("ab", "abc"), 0);
	cr_assert_eq(bc_streq_ct("", "a"), 0);
}

/* ---- errors and log levels ---------------------------------------------- */

LTest(error, strerror_names_codes)
{
	cr_assert_str_eq(bc_strerror(0), "success");
	cr_assert_str_eq(bc_strerror(BC_ENOMEM), strerror(ENOMEM));
	cr_assert_str_eq(bc_strerror(BC_ENOENT), strerror(ENOENT));
	cr_assert_str_eq(bc_strerror(5), "unknown error");
	cr_assert_lt(BC_EINVAL, 0);
	cr_assert_lt(BC_E2BIG, 0);
}

LTest(log, level_parse)
{
	cr_assert_eq(bc_log_level_parse("error"), BC_LOG_ERROR);
	cr_assert_eq(bc_log_level_parse("warn"), BC_LOG_WARN);
	cr_assert_eq(bc_log_level_parse("info"), BC_LOG_INFO);
	cr_assert_eq(bc_log_level_parse("debug"), BC_LOG_DEBUG);
	cr_assert_eq(bc_log_level_parse("DEBUG"), -1);
	cr_assert_eq(bc_log_level_parse(""), -1);
	cr_assert_eq(bc_log_level_parse("verbose"), -1);
}

LTest(num, parse_whole_numbers)
{
	static const struct {
		const char *s;
		bool        ok;
		uint64_t    v;
	} t[] = {
		{ "0", true, 0 }, { "7", true, 7 }, { "0012", true, 12 },
		{ "18446744073709551615", true, UINT64_MAX },
		{ "18446744073709551616", false, 0 },
		{ "99999999999999999999", false, 0 },
		{ "", false, 0 }, { "-1", false, 0 }, { "+1", false, 0 },
		{ " 1", false, 0 }, { "1 ", false, 0 }, { "0x10", false, 0 },
		{ "1,2", false, 0 }, { "12x", false, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		uint64_t v = 42;

		cr_expect_eq(bc_u64_parse_str(t[i].s, &v), t[i].ok, "%s",
		    t[i].s);
		cr_expect_eq(v, t[i].ok ? t[i].v : 42, "%s: untouched", t[i].s);
	}
	cr_expect_not(bc_u64_parse_str(NULL, NULL));
}

LTest(num, spans_and_prefixes)
{
	uint64_t v = 0;

	cr_expect(bc_u64_parse("123456", 3, &v));   /* a span, not to NUL */
	cr_expect_eq(v, 123);
	cr_expect_not(bc_u64_parse("12", 0, &v));
	cr_expect_eq(bc_u64_prefix("42MiB", 5, &v), 2);
	cr_expect_eq(v, 42);
	v = 9;
	cr_expect_eq(bc_u64_prefix("M42", 3, &v), 0);
	cr_expect_eq(v, 9, "untouched without digits");
	cr_expect_eq(bc_u64_prefix("4242", 2, &v), 2);   /* bounded by n */
	cr_expect_eq(v, 42);
	cr_expect_eq(bc_u64_prefix("184467440737095516160", 21, &v),
	    BC_ERANGE);
}

LTest(hash, fnv1a_vectors)
{
	/* FNV-1a 64 test vectors (Fowler, Noll, Vo) */
	cr_expect_eq(bc_hash(BC_HASH_INIT, "", 0), 0xcbf29ce484222325ULL);
	cr_expect_eq(bc_hash(BC_HASH_INIT, "a", 1), 0xaf63dc4c8601ec8cULL);
	cr_expect_eq(bc_hash(BC_HASH_INIT, "foobar", 6),
	    0x85944171f73967e8ULL);
	/* extending is hashing the concatenation */
	cr_expect_eq(bc_hash(bc_hash(BC_HASH_INIT, "foo", 3), "bar", 3),
	    0x85944171f73967e8ULL);
}
