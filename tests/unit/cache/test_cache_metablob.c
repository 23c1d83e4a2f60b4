/*
 * test_cache_metablob.c — the metadata blob lower tiers keep
 * (cache/cache_metablob.h): a round trip keeps every field; encoding
 * refuses what decoding would; decoding refuses every truncation, a
 * trailing byte, other versions and hostile lengths and contents, and
 * whatever a damaged blob decodes to is still safe to replay.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "cache/cache.h"
#include "cache/cache_metablob.h"
#include "util/util_buf.h"
#include "util/util_error.h"
#include "util/util_kv.h"

TestSuite(metablob);

#define VALIDATED 1767225600123ull   /* 2026-01-01T00:00:00.123Z */

static void
meta_make(bc_objmeta_t *m)
{
	memset(m, 0, sizeof(*m));
	m->size = 9ull * 1024 * 1024 * 1024 + 5;
	snprintf(m->etag, sizeof(m->etag), "\"0123456789abcdef-3\"");
	m->last_modified = 1445412480;
	cr_assert_eq(bc_kv_add(&m->headers, "ETag", m->etag), 0);
	cr_assert_eq(bc_kv_add(&m->headers, "Last-Modified",
	    "Wed, 21 Oct 2015 07:28:00 GMT"), 0);
	cr_assert_eq(bc_kv_add(&m->headers, "Content-Type",
	    "application/x-test; charset=\"utf-8\""), 0);
	cr_assert_eq(bc_kv_add(&m->headers, "x-amz-meta-note",
	    "tab\there, \xc3\xa9t\xc3\xa9"), 0);
	cr_assert_eq(bc_kv_add(&m->headers, "x-amz-meta-empty", ""), 0);
}

static void
encode(const bc_objmeta_t *m, bc_buf_t *b)
{
	bc_buf_init(b, 0);
	cr_assert_eq(bc_cache_metablob_encode(b, m, VALIDATED), 0);
}

static int
decode(const void *p, size_t n, bc_objmeta_t *m, uint64_t *v)
{
	return bc_cache_metablob_decode(p, n, m, v);
}

static void
assert_same(const bc_objmeta_t *a, const bc_objmeta_t *b)
{
	cr_assert_eq(a->size, b->size);
	cr_assert_str_eq(a->etag, b->etag);
	cr_assert_eq(a->last_modified, b->last_modified);
	cr_assert_eq(a->headers.n, b->headers.n);
	for (size_t i = 0; i < a->headers.n; i++) {
		cr_assert_str_eq(a->headers.v[i].name, b->headers.v[i].name);
		cr_assert_str_eq(a->headers.v[i].value,
		    b->headers.v[i].value);
	}
}

LTest(metablob, round_trip_keeps_every_field)
{
	bc_objmeta_t m, d;
	uint64_t v = 0;
	bc_buf_t b;

	meta_make(&m);
	encode(&m, &b);
	cr_assert_eq(decode(b.data, b.len, &d, &v), 0);
	cr_assert_eq(v, VALIDATED);
	assert_same(&m, &d);
	bc_objmeta_fini(&d);

	/* no headers, a date before the epoch, an empty object */
	bc_objmeta_fini(&m);
	memset(&m, 0, sizeof(m));
	snprintf(m.etag, sizeof(m.etag), "W/\"x\"");
	m.last_modified = -86400;
	bc_buf_reset(&b);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 0), 0);
	cr_assert_eq(decode(b.data, b.len, &d, &v), 0);
	cr_assert_eq(v, 0);
	assert_same(&m, &d);
	bc_objmeta_fini(&d);

	/* appended to what the buffer held */
	bc_buf_reset(&b);
	cr_assert_eq(bc_buf_puts(&b, "xyz"), 0);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 7), 0);
	cr_assert_eq(memcmp(b.data, "xyz", 3), 0);
	cr_assert_eq(decode(b.data + 3, b.len - 3, &d, &v), 0);
	cr_assert_eq(v, 7);
	bc_objmeta_fini(&d);
	bc_buf_fini(&b);
}

/* What decoding would refuse is not encoded, and the buffer is left as
 * it was. */
LTest(metablob, encode_refuses_what_decode_would)
{
	static const char *const bad_names[] = { "", "a b", "x:y", "\xc3\xa9",
	    "a\tb", NULL };
	static const char *const bad_values[] = { "a\r\nSet-Cookie: x",
	    "a\nb", "a\rb", "\x01", "\x7f", NULL };
	bc_objmeta_t m;
	char big[BC_METABLOB_VALUE_MAX + 2];
	bc_buf_t b;

	bc_buf_init(&b, 0);
	cr_assert_eq(bc_buf_puts(&b, "keep"), 0);
	for (int i = 0; bad_names[i] != NULL; i++) {
		meta_make(&m);
		cr_assert_eq(bc_kv_add(&m.headers, bad_names[i], "v"), 0);
		cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG,
		    "name [%s]", bad_names[i]);
		bc_objmeta_fini(&m);
	}
	for (int i = 0; bad_values[i] != NULL; i++) {
		meta_make(&m);
		cr_assert_eq(bc_kv_add(&m.headers, "x-amz-meta-v",
		    bad_values[i]), 0);
		cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
		bc_objmeta_fini(&m);
	}
	meta_make(&m);
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(bc_kv_add(&m.headers, "x-amz-meta-big", big), 0);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
	bc_objmeta_fini(&m);
	meta_make(&m);
	for (int i = (int)m.headers.n; i <= BC_METABLOB_HEADERS_MAX; i++)
		cr_assert_eq(bc_kv_add(&m.headers, "x-amz-meta-n", "1"), 0);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
	bc_objmeta_fini(&m);
	/* 8 values of 8 KiB: each fits, the whole does not */
	meta_make(&m);
	big[BC_METABLOB_VALUE_MAX] = '\0';
	for (int i = 0; i < 8; i++)
		cr_assert_eq(bc_kv_add(&m.headers, "x-amz-meta-big", big), 0);
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
	bc_objmeta_fini(&m);
	meta_make(&m);
	m.etag[0] = '\0';
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
	m.etag[0] = '\n';
	cr_assert_eq(bc_cache_metablob_encode(&b, &m, 1), BC_E2BIG);
	bc_objmeta_fini(&m);
	cr_assert_eq(b.len, 4);
	cr_assert_str_eq(b.data, "keep");
	bc_buf_fini(&b);
}

LTest(metablob, every_truncation_and_a_trailing_byte_are_refused)
{
	bc_objmeta_t m, d;
	uint64_t v = 42;
	uint8_t *copy;
	bc_buf_t b;

	meta_make(&m);
	encode(&m, &b);
	for (size_t n = 0; n < b.len; n++) {
		/* a copy of exactly n bytes, so ASan sees any over-read */
		copy = malloc(n > 0 ? n : 1);
		cr_assert_not_null(copy);
		memcpy(copy, b.data, n);
		cr_assert_eq(decode(copy, n, &d, &v), BC_EPROTO,
		    "%zu of %zu bytes decoded", n, b.len);
		cr_assert_eq(d.headers.n, 0);
		cr_assert_eq(v, 42, "a refused blob set validated_ms");
		free(copy);
	}
	copy = malloc(b.len + 1);
	cr_assert_not_null(copy);
	memcpy(copy, b.data, b.len);
	copy[b.len] = 0;
	cr_assert_eq(decode(copy, b.len + 1, &d, &v), BC_EPROTO);
	free(copy);
	cr_assert_eq(decode(NULL, 0, &d, &v), BC_EPROTO);
	bc_objmeta_fini(&m);
	bc_buf_fini(&b);
}

/* Writes a blob field by field, lengths as given (hostile ones too). */
typedef struct raw_s {
	uint8_t p[BC_METABLOB_MAX + 64];
	size_t  n;
} raw_t;

static void
raw_int(raw_t *r, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		r->p[r->n++] = (uint8_t)(v >> (8 * i));
}

static void
raw_bytes(raw_t *r, const void *p, size_t n)
{
	memcpy(r->p + r->n, p, n);
	r->n += n;
}

/* A header with len as its length field and s as its bytes. */
static void
raw_str(raw_t *r, uint64_t len, const char *s)
{
	raw_int(r, len, 2);
	raw_bytes(r, s, strlen(s));
}

static void
raw_head(raw_t *r, uint8_t version, uint8_t flags, uint64_t nh,
    const char *etag)
{
	r->n = 0;
	raw_bytes(r, "BCOM", 4);
	raw_int(r, version, 1);
	raw_int(r, flags, 1);
	raw_int(r, nh, 2);
	raw_int(r, 3000, 8);
	raw_int(r, 1445412480, 8);
	raw_int(r, VALIDATED, 8);
	raw_str(r, strlen(etag), etag);
}

static void
refused(const raw_t *r, const char *why)
{
	bc_objmeta_t d;
	uint64_t v;

	cr_assert_eq(decode(r->p, r->n, &d, &v), BC_EPROTO, "%s", why);
	cr_assert_eq(d.headers.n, 0);
}

LTest(metablob, hostile_blobs_are_refused)
{
	static raw_t r;
	bc_objmeta_t d;
	uint64_t v;

	/* the baseline decodes */
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "name");
	raw_str(&r, 5, "value");
	cr_assert_eq(decode(r.p, r.n, &d, &v), 0);
	cr_assert_str_eq(d.headers.v[0].value, "value");
	bc_objmeta_fini(&d);

	r.p[0] = 'b';
	refused(&r, "magic");
	raw_head(&r, 2, 0, 0, "\"e\"");
	refused(&r, "a later version");
	raw_head(&r, 0, 0, 0, "\"e\"");
	refused(&r, "version 0");
	raw_head(&r, 1, 1, 0, "\"e\"");
	refused(&r, "flags");
	raw_head(&r, 1, 0, 0, "");
	refused(&r, "an empty ETag");
	raw_head(&r, 1, 0, 0, "\"a\r\nb\"");
	refused(&r, "CR LF in the ETag");

	/* an ETag length past what the struct holds, and past the blob */
	r.n = 0;
	raw_head(&r, 1, 0, 0, "");
	r.n -= 2;
	raw_int(&r, 132, 2);
	for (int i = 0; i < 132; i++)
		raw_int(&r, 'e', 1);
	refused(&r, "a 132-byte ETag");
	raw_head(&r, 1, 0, 0, "");
	r.n -= 2;
	raw_int(&r, 0xffff, 2);
	raw_bytes(&r, "\"e\"", 3);
	refused(&r, "an ETag length past the end");

	/* header counts and lengths */
	raw_head(&r, 1, 0, 2, "\"e\"");
	raw_str(&r, 4, "name");
	raw_str(&r, 5, "value");
	refused(&r, "a header count past the headers");
	raw_head(&r, 1, 0, 0, "\"e\"");
	raw_str(&r, 4, "name");
	raw_str(&r, 5, "value");
	refused(&r, "headers past the count");
	raw_head(&r, 1, 0, BC_METABLOB_HEADERS_MAX + 1, "\"e\"");
	for (int i = 0; i <= BC_METABLOB_HEADERS_MAX; i++) {
		raw_str(&r, 1, "n");
		raw_str(&r, 1, "v");
	}
	refused(&r, "too many headers");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 0xffff, "name");
	refused(&r, "a name length past the end");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "name");
	raw_str(&r, 0xffff, "value");
	refused(&r, "a value length past the end");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 0, "");
	raw_str(&r, 1, "v");
	refused(&r, "an empty name");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "na e");
	raw_str(&r, 1, "v");
	refused(&r, "a space in a name");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_int(&r, 3, 2);
	raw_bytes(&r, "a\0b", 3);
	raw_str(&r, 1, "v");
	refused(&r, "a NUL in a name");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "name");
	raw_str(&r, 21, "x\r\nSet-Cookie: evil=1");
	refused(&r, "CR LF in a value");
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "name");
	raw_int(&r, 3, 2);
	raw_bytes(&r, "a\0b", 3);
	refused(&r, "a NUL in a value");

	/* a value of BC_METABLOB_VALUE_MAX + 1 bytes */
	raw_head(&r, 1, 0, 1, "\"e\"");
	raw_str(&r, 4, "name");
	raw_int(&r, BC_METABLOB_VALUE_MAX + 1, 2);
	memset(r.p + r.n, 'v', BC_METABLOB_VALUE_MAX + 1);
	r.n += BC_METABLOB_VALUE_MAX + 1;
	refused(&r, "a value past its bound");

	/* a blob past BC_METABLOB_MAX, whatever it holds */
	raw_head(&r, 1, 0, 0, "\"e\"");
	memset(r.p + r.n, 0, BC_METABLOB_MAX + 1 - r.n);
	r.n = BC_METABLOB_MAX + 1;
	refused(&r, "a blob past its bound");
}

/* Whatever a damaged blob decodes to is safe to replay: every byte of a
 * valid blob changed to every value decodes or is refused, and what
 * decodes keeps the rules (run under ASan for over-reads). */
LTest(metablob, damaged_blobs_decode_safely_or_not_at_all)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x0a, 0x0d, 0x20, 0x7f,
	    0x80, 0xff };
	bc_objmeta_t m, d;
	unsigned decoded = 0, refusals = 0;
	uint64_t v;
	uint8_t *copy;
	bc_buf_t b;

	meta_make(&m);
	encode(&m, &b);
	copy = malloc(b.len);
	cr_assert_not_null(copy);
	for (size_t i = 0; i < b.len; i++) {
		for (size_t k = 0; k < sizeof(vals); k++) {
			int rv;

			memcpy(copy, b.data, b.len);
			copy[i] = vals[k];
			rv = decode(copy, b.len, &d, &v);
			cr_assert(rv == 0 || rv == BC_EPROTO);
			if (rv != 0) {
				refusals++;
				continue;
			}
			decoded++;
			cr_assert_gt(strlen(d.etag), 0);
			cr_assert_null(strpbrk(d.etag, "\r\n"));
			for (size_t j = 0; j < d.headers.n; j++) {
				cr_assert_gt(strlen(d.headers.v[j].name), 0);
				cr_assert_null(strpbrk(d.headers.v[j].name,
				    " :\r\n\t"));
				cr_assert_null(strpbrk(d.headers.v[j].value,
				    "\r\n"));
			}
			bc_objmeta_fini(&d);
		}
	}
	cr_assert_gt(decoded, 0);
	cr_assert_gt(refusals, 0);
	free(copy);
	bc_objmeta_fini(&m);
	bc_buf_fini(&b);
}
