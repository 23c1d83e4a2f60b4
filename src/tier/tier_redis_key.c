/*
 * tier_redis_key.c — the Redis tier's key names, slice layout and value
 * format (tier_redis_key.h, which has the format and the measurements
 * behind the slice sizes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tier/tier_redis_key.h"
#include "util/util_assert.h"
#include "util/util_crc.h"
#include "util/util_crypto.h"
#include "util/util_error.h"

static const char slice_magic[4] = { 'B', 'C', 'R', 'S' };
static const char meta_magic[4] = { 'B', 'C', 'R', 'M' };

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- layout ------------------------------------------------------------ */

/* jemalloc's size classes from 4 KiB up: in [2^k, 2^(k+1)) every multiple
 * of 2^(k-2). The largest class <= v, and the smallest >= v. */
static uint32_t
class_floor(uint32_t v)
{
	uint32_t step = (uint32_t)1 << (31 - __builtin_clz(v) - 2);

	return v & ~(step - 1);
}

static uint32_t
class_ceil(uint32_t v)
{
	uint32_t step;

	if ((v & (v - 1)) == 0)
		return v;
	step = (uint32_t)1 << (31 - __builtin_clz(v - 1) - 2);
	return (v + step - 1) & ~(step - 1);
}

/* The slices of a chunk of len bytes whose values have hdr_len-byte
 * headers (len >= 1, hdr_len <= BC_REDIS_KEY_HDR_MAX). */
static void
layout(bc_tier_redis_chunk_t *c, uint32_t hdr_len, uint32_t len)
{
	uint32_t over = hdr_len + BC_REDIS_KEY_SLACK, rem;

	c->hdr_len = hdr_len;
	c->len = len;
	c->full = BC_REDIS_KEY_CLASS - over;
	c->nfull = len / c->full;
	c->ntail = 0;
	rem = len - c->nfull * c->full;
	while (rem > 0) {
		uint32_t v = rem + over, cut = rem;

		if (v > BC_REDIS_KEY_TAIL_MIN && class_ceil(v) - v > v / 32)
			cut = class_floor(v) - over;
		BC_CHECK(c->ntail < BC_REDIS_KEY_TAILS_MAX && cut > 0);
		c->tail[c->ntail++] = cut;
		rem -= cut;
	}
	c->nslices = c->nfull + c->ntail;
}

static bool
strings_ok(size_t bl, size_t kl, size_t el)
{
	return bl >= 1 && bl <= BC_REDIS_KEY_BUCKET_MAX && kl >= 1 &&
	    kl <= BC_REDIS_KEY_OBJKEY_MAX && el >= 1 &&
	    el <= BC_REDIS_KEY_ETAG_MAX;
}

/* Appends a length-prefixed string to the hash input at *p. */
static uint8_t *
id_put(uint8_t *p, const char *s, size_t n)
{
	put16(p, (uint16_t)n);
	memcpy(p + 2, s, n);
	return p + 2 + n;
}

/* The first 128 bits of SHA-256(what) in hex into id. What a chunk's id
 * hashes: "bc:c" and a NUL, then bucket, key and ETag, each as a 2-byte
 * length and its bytes, then the unit in 8 bytes; a metadata key's:
 * "bc:m" and a NUL, then bucket and key the same way (integers
 * little-endian). */
static void
id_hex(const uint8_t *what, size_t n, char id[BC_REDIS_KEY_ID_HEX + 1])
{
	uint8_t md[BC_SHA256_LEN];

	bc_sha256(what, n, md);
	bc_hex(md, BC_REDIS_KEY_ID_HEX / 2, id);
}

int
bc_tier_redis_key_chunk_init(bc_tier_redis_chunk_t *c,
    const bc_chunk_key_t *k, uint64_t unit, uint64_t len)
{
	uint8_t in[16 + BC_REDIS_KEY_HDR_MAX], *p = in;
	size_t bl = strlen(k->bucket), kl = strlen(k->key);
	size_t el = strlen(k->etag);

	memset(c, 0, sizeof(*c));
	if (!strings_ok(bl, kl, el) || unit == 0 ||
	    unit > BC_REDIS_KEY_UNIT_MAX || len == 0 || len > unit)
		return BC_EINVAL;
	c->bucket = k->bucket;
	c->key = k->key;
	c->etag = k->etag;
	c->index = k->index;
	c->unit = unit;
	memcpy(p, "bc:c\0", 5);
	p = id_put(p + 5, k->bucket, bl);
	p = id_put(p, k->key, kl);
	p = id_put(p, k->etag, el);
	put64(p, unit);
	id_hex(in, (size_t)(p + 8 - in), c->id);
	layout(c, (uint32_t)(BC_REDIS_KEY_HDR_FIXED + bl + kl + el),
	    (uint32_t)len);
	return 0;
}

size_t
bc_tier_redis_key_slice(const bc_tier_redis_chunk_t *c, uint32_t i,
    char out[BC_REDIS_KEY_NAME_MAX])
{
	int n;

	BC_CHECK(i < c->nslices);
	n = snprintf(out, BC_REDIS_KEY_NAME_MAX, "bc:c:%s:%" PRIu32 ":%"
	    PRIu32, c->id, c->index, i);
	BC_CHECK(n > 0 && n < BC_REDIS_KEY_NAME_MAX);
	return (size_t)n;
}

int
bc_tier_redis_key_meta(const char *bucket, const char *key,
    char out[BC_REDIS_KEY_NAME_MAX])
{
	uint8_t in[16 + BC_REDIS_KEY_HDR_MAX], *p = in;
	size_t bl = strlen(bucket), kl = strlen(key);
	char id[BC_REDIS_KEY_ID_HEX + 1];

	if (!strings_ok(bl, kl, 1))
		return BC_EINVAL;
	memcpy(p, "bc:m\0", 5);
	p = id_put(p + 5, bucket, bl);
	p = id_put(p, key, kl);
	id_hex(in, (size_t)(p - in), id);
	return snprintf(out, BC_REDIS_KEY_NAME_MAX, "bc:m:%s", id);
}

void
bc_tier_redis_key_span(const bc_tier_redis_chunk_t *c, uint32_t i,
    uint32_t *off, uint32_t *len)
{
	uint32_t o;

	BC_CHECK(i < c->nslices);
	if (i < c->nfull) {
		*off = i * c->full;
		*len = c->full;
		return;
	}
	o = c->nfull * c->full;
	for (uint32_t t = 0; t < i - c->nfull; t++)
		o += c->tail[t];
	*off = o;
	*len = c->tail[i - c->nfull];
}

/* The slice holding byte pos (< c->len). */
static uint32_t
slice_of(const bc_tier_redis_chunk_t *c, uint64_t pos)
{
	uint64_t o = (uint64_t)c->nfull * c->full;
	uint32_t t = 0;

	if (pos < o)
		return (uint32_t)(pos / c->full);
	while (t + 1 < c->ntail && pos >= o + c->tail[t])
		o += c->tail[t++];
	return c->nfull + t;
}

int
bc_tier_redis_key_range(const bc_tier_redis_chunk_t *c, uint64_t off,
    uint64_t len, uint32_t *first, uint32_t *n)
{
	uint32_t last;

	if (len == 0 || off >= c->len || len > c->len - off)
		return BC_ERANGE;
	*first = slice_of(c, off);
	last = slice_of(c, off + len - 1);
	*n = last - *first + 1;
	return 0;
}

size_t
bc_tier_redis_key_value_len(const bc_tier_redis_chunk_t *c, uint32_t i)
{
	uint32_t off, len;

	bc_tier_redis_key_span(c, i, &off, &len);
	return (size_t)c->hdr_len + len;
}

/* ---- slice values ---------------------------------------------------- */

void
bc_tier_redis_key_slice_hdr(const bc_tier_redis_chunk_t *c, uint32_t i,
    const void *payload, uint8_t *out)
{
	size_t bl = strlen(c->bucket), kl = strlen(c->key);
	size_t el = strlen(c->etag);
	uint8_t *s = out + BC_REDIS_KEY_HDR_FIXED - 4;
	uint32_t off, len;

	bc_tier_redis_key_span(c, i, &off, &len);
	memcpy(out, slice_magic, 4);
	put16(out + 4, BC_REDIS_KEY_VERSION);
	put16(out + 6, (uint16_t)c->hdr_len);
	put64(out + 8, c->unit);
	put32(out + 16, c->index);
	put32(out + 20, c->len);
	put32(out + 24, i);
	put32(out + 28, c->nslices);
	put32(out + 32, bc_crc32c(0, payload, len));
	put16(out + 36, (uint16_t)bl);
	put16(out + 38, (uint16_t)kl);
	put16(out + 40, (uint16_t)el);
	put16(out + 42, 0);
	memcpy(s, c->bucket, bl);
	memcpy(s + bl, c->key, kl);
	memcpy(s + bl + kl, c->etag, el);
	put32(out + c->hdr_len - 4, bc_crc32c(0, out, c->hdr_len - 4));
}

int
bc_tier_redis_key_slice_encode(bc_buf_t *out, const bc_tier_redis_chunk_t *c,
    uint32_t i, const void *data)
{
	uint8_t hdr[BC_REDIS_KEY_HDR_MAX];
	uint32_t off, len;
	size_t at = out->len;
	int rv;

	bc_tier_redis_key_span(c, i, &off, &len);
	bc_tier_redis_key_slice_hdr(c, i, (const uint8_t *)data + off, hdr);
	rv = bc_buf_reserve(out, (size_t)c->hdr_len + len);
	if (rv == 0)
		rv = bc_buf_append(out, hdr, c->hdr_len);
	if (rv == 0)
		rv = bc_buf_append(out, (const uint8_t *)data + off, len);
	if (rv < 0 && out->data != NULL) {
		out->len = at;
		out->data[at] = '\0';
	}
	return rv;
}

/* The strings at p (bl, kl, el bytes, all inside the value) hold no NUL. */
static bool
no_nul(const uint8_t *p, size_t n)
{
	return memchr(p, '\0', n) == NULL;
}

int
bc_tier_redis_key_slice_parse(const void *v, size_t n,
    bc_tier_redis_slice_t *s)
{
	const uint8_t *b = v;
	bc_tier_redis_chunk_t c;
	size_t hl, bl, kl, el;
	uint32_t off, len;

	memset(s, 0, sizeof(*s));
	if (n < 8 || memcmp(b, slice_magic, 4) != 0)
		return BC_EPROTO;
	if (get16(b + 4) != BC_REDIS_KEY_VERSION)
		return BC_ENOTSUP;
	if (n < BC_REDIS_KEY_HDR_FIXED)
		return BC_EPROTO;
	hl = get16(b + 6);
	bl = get16(b + 36);
	kl = get16(b + 38);
	el = get16(b + 40);
	if (!strings_ok(bl, kl, el) || get16(b + 42) != 0 ||
	    hl != BC_REDIS_KEY_HDR_FIXED + bl + kl + el || hl > n ||
	    get32(b + hl - 4) != bc_crc32c(0, b, hl - 4) ||
	    !no_nul(b + BC_REDIS_KEY_HDR_FIXED - 4, bl + kl + el))
		return BC_EPROTO;
	s->unit = get64(b + 8);
	s->index = get32(b + 16);
	s->len = get32(b + 20);
	s->slice = get32(b + 24);
	s->nslices = get32(b + 28);
	if (s->unit == 0 || s->unit > BC_REDIS_KEY_UNIT_MAX || s->len == 0 ||
	    s->len > s->unit)
		return BC_EPROTO;
	layout(&c, (uint32_t)hl, s->len);
	if (s->nslices != c.nslices || s->slice >= c.nslices)
		return BC_EPROTO;
	bc_tier_redis_key_span(&c, s->slice, &off, &len);
	if (n - hl != len || get32(b + 32) != bc_crc32c(0, b + hl, len))
		return BC_EPROTO;
	s->bucket = (const char *)b + BC_REDIS_KEY_HDR_FIXED - 4;
	s->key = s->bucket + bl;
	s->etag = s->key + kl;
	s->bucket_len = bl;
	s->key_len = kl;
	s->etag_len = el;
	s->payload = b + hl;
	s->payload_len = len;
	return 0;
}

/* The n bytes at p are the NUL-terminated string str. */
static bool
same_str(const char *p, size_t n, const char *str)
{
	return strlen(str) == n && memcmp(p, str, n) == 0;
}

int
bc_tier_redis_key_slice_check(const bc_tier_redis_chunk_t *c, uint32_t i,
    const void *v, size_t n, const uint8_t **payload)
{
	bc_tier_redis_slice_t s;
	int rv;

	*payload = NULL;
	rv = bc_tier_redis_key_slice_parse(v, n, &s);
	if (rv == BC_ENOTSUP)
		return BC_ENOENT;
	if (rv < 0)
		return rv;
	if (s.unit != c->unit || s.index != c->index || s.len != c->len ||
	    s.slice != i || !same_str(s.bucket, s.bucket_len, c->bucket) ||
	    !same_str(s.key, s.key_len, c->key) ||
	    !same_str(s.etag, s.etag_len, c->etag))
		return BC_ENOENT;
	*payload = s.payload;
	return 0;
}

/* ---- metadata values ---------------------------------------------------- */

int
bc_tier_redis_key_meta_encode(bc_buf_t *out, const char *bucket,
    const char *key, const void *blob, size_t len)
{
	uint8_t hdr[BC_REDIS_KEY_META_FIXED + BC_REDIS_KEY_BUCKET_MAX +
	    BC_REDIS_KEY_OBJKEY_MAX];
	size_t bl = strlen(bucket), kl = strlen(key), hl, at = out->len;
	int rv;

	if (!strings_ok(bl, kl, 1))
		return BC_EINVAL;
	if (len > BC_REDIS_KEY_BLOB_MAX)
		return BC_E2BIG;
	hl = BC_REDIS_KEY_META_FIXED + bl + kl;
	memcpy(hdr, meta_magic, 4);
	put16(hdr + 4, BC_REDIS_KEY_VERSION);
	put16(hdr + 6, (uint16_t)hl);
	put32(hdr + 8, (uint32_t)len);
	put32(hdr + 12, bc_crc32c(0, blob, len));
	put16(hdr + 16, (uint16_t)bl);
	put16(hdr + 18, (uint16_t)kl);
	memcpy(hdr + 20, bucket, bl);
	memcpy(hdr + 20 + bl, key, kl);
	put32(hdr + hl - 4, bc_crc32c(0, hdr, hl - 4));
	rv = bc_buf_reserve(out, hl + len);
	if (rv == 0)
		rv = bc_buf_append(out, hdr, hl);
	if (rv == 0)
		rv = bc_buf_append(out, blob, len);
	if (rv < 0 && out->data != NULL) {
		out->len = at;
		out->data[at] = '\0';
	}
	return rv;
}

int
bc_tier_redis_key_meta_parse(const void *v, size_t n,
    bc_tier_redis_meta_t *m)
{
	const uint8_t *b = v;
	size_t hl, bl, kl, len;

	memset(m, 0, sizeof(*m));
	if (n < 8 || memcmp(b, meta_magic, 4) != 0)
		return BC_EPROTO;
	if (get16(b + 4) != BC_REDIS_KEY_VERSION)
		return BC_ENOTSUP;
	if (n < BC_REDIS_KEY_META_FIXED)
		return BC_EPROTO;
	hl = get16(b + 6);
	len = get32(b + 8);
	bl = get16(b + 16);
	kl = get16(b + 18);
	if (!strings_ok(bl, kl, 1) || hl != BC_REDIS_KEY_META_FIXED + bl + kl ||
	    hl > n || len > BC_REDIS_KEY_BLOB_MAX || n - hl != len ||
	    get32(b + hl - 4) != bc_crc32c(0, b, hl - 4) ||
	    !no_nul(b + 20, bl + kl) ||
	    get32(b + 12) != bc_crc32c(0, b + hl, len))
		return BC_EPROTO;
	m->bucket = (const char *)b + 20;
	m->key = m->bucket + bl;
	m->bucket_len = bl;
	m->key_len = kl;
	m->blob = b + hl;
	m->blob_len = len;
	return 0;
}

int
bc_tier_redis_key_meta_check(const char *bucket, const char *key,
    const void *v, size_t n, const uint8_t **blob, size_t *len)
{
	bc_tier_redis_meta_t m;
	int rv;

	*blob = NULL;
	*len = 0;
	rv = bc_tier_redis_key_meta_parse(v, n, &m);
	if (rv == BC_ENOTSUP)
		return BC_ENOENT;
	if (rv < 0)
		return rv;
	if (!same_str(m.bucket, m.bucket_len, bucket) ||
	    !same_str(m.key, m.key_len, key))
		return BC_ENOENT;
	*blob = m.blob;
	*len = m.blob_len;
	return 0;
}
