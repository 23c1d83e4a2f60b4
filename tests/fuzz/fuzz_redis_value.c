/*
 * fuzz_redis_value.c — the Redis tier's values (tier/tier_redis_key.h),
 * which come back from a Redis anyone may write to.
 *
 * Input: a value, parsed both as a slice and as object metadata. Checks
 * the parsers' promises: each accepts, refuses (BC_EPROTO) or names
 * another format version (BC_ENOTSUP); what a slice parse accepts sets up
 * a chunk of the identity it names, whose check takes the value, and
 * whose header for that payload is the value's own (one value, one
 * encoding); the same for metadata. Then the input's first bytes pick a
 * chunk (string lengths, length, a range): its slices tile it, each value
 * fits under a full slice's class, and the range maps to exactly the
 * slices a scan of the spans finds.
 */
#include "fuzz.h"
#include "tier/tier_redis_key.h"
#include "util/util_buf.h"
#include "util/util_error.h"

#define INPUT_MAX (2 * BC_REDIS_KEY_CLASS)

static void
check_slice(const uint8_t *data, size_t size)
{
	uint8_t hdr[BC_REDIS_KEY_HDR_MAX];
	bc_tier_redis_slice_t s;
	bc_tier_redis_chunk_t c;
	const uint8_t *payload;
	char *bucket, *key, *etag;
	int rv;

	rv = bc_tier_redis_key_slice_parse(data, size, &s);
	FUZZ_CHECK(rv == 0 || rv == BC_EPROTO || rv == BC_ENOTSUP);
	if (rv != 0)
		return;
	bucket = fuzz_strndup(s.bucket, s.bucket_len);
	key = fuzz_strndup(s.key, s.key_len);
	etag = fuzz_strndup(s.etag, s.etag_len);
	FUZZ_CHECK(bc_tier_redis_key_chunk_init(&c, &(bc_chunk_key_t){ bucket,
	    key, etag, s.index }, s.unit, s.len) == 0);
	FUZZ_CHECK(c.nslices == s.nslices && s.slice < c.nslices);
	FUZZ_CHECK(c.hdr_len + s.payload_len == size);
	FUZZ_CHECK(bc_tier_redis_key_slice_check(&c, s.slice, data, size,
	    &payload) == 0);
	FUZZ_CHECK(payload == data + c.hdr_len);
	bc_tier_redis_key_slice_hdr(&c, s.slice, payload, hdr);
	FUZZ_CHECK(memcmp(hdr, data, c.hdr_len) == 0);
	free(bucket);
	free(key);
	free(etag);
}

static void
check_meta(const uint8_t *data, size_t size)
{
	bc_tier_redis_meta_t m;
	bc_buf_t b = BC_BUF_INIT;
	const uint8_t *blob;
	char *bucket, *key;
	size_t len;
	int rv;

	rv = bc_tier_redis_key_meta_parse(data, size, &m);
	FUZZ_CHECK(rv == 0 || rv == BC_EPROTO || rv == BC_ENOTSUP);
	if (rv != 0)
		return;
	bucket = fuzz_strndup(m.bucket, m.bucket_len);
	key = fuzz_strndup(m.key, m.key_len);
	FUZZ_CHECK(bc_tier_redis_key_meta_check(bucket, key, data, size,
	    &blob, &len) == 0);
	FUZZ_CHECK(blob == m.blob && len == m.blob_len);
	FUZZ_CHECK(bc_tier_redis_key_meta_encode(&b, bucket, key, blob,
	    len) == 0);
	FUZZ_CHECK(b.len == size && memcmp(b.data, data, size) == 0);
	bc_buf_fini(&b);
	free(bucket);
	free(key);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static void
check_layout(const uint8_t *data, size_t size)
{
	static char bucket[BC_REDIS_KEY_BUCKET_MAX + 1];
	static char key[BC_REDIS_KEY_OBJKEY_MAX + 1];
	static char etag[BC_REDIS_KEY_ETAG_MAX + 1];
	bc_tier_redis_chunk_t c;
	uint32_t len, first, n, want0 = UINT32_MAX, want1 = 0;
	uint64_t off, rlen, at = 0;
	size_t bl, kl, el;

	if (size < 16)
		return;
	bl = 1 + data[0] % BC_REDIS_KEY_BUCKET_MAX;
	kl = 1 + (size_t)(data[1] | data[2] << 8) % BC_REDIS_KEY_OBJKEY_MAX;
	el = 1 + data[3] % BC_REDIS_KEY_ETAG_MAX;
	memset(bucket, 'b', bl);
	bucket[bl] = '\0';
	memset(key, 'k', kl);
	key[kl] = '\0';
	memset(etag, 'e', el);
	etag[el] = '\0';
	len = 1 + get32(data + 4) % BC_REDIS_KEY_UNIT_MAX;
	off = get32(data + 8) % len;
	rlen = 1 + get32(data + 12) % (len - off);
	FUZZ_CHECK(bc_tier_redis_key_chunk_init(&c, &(bc_chunk_key_t){
	    bucket, key, etag, 0 }, BC_REDIS_KEY_UNIT_MAX, len) == 0);
	FUZZ_CHECK(c.nslices >= 1 && c.ntail <= BC_REDIS_KEY_TAILS_MAX);
	for (uint32_t i = 0; i < c.nslices; i++) {
		uint32_t so, sl;

		bc_tier_redis_key_span(&c, i, &so, &sl);
		FUZZ_CHECK(so == at && sl > 0);
		FUZZ_CHECK(bc_tier_redis_key_value_len(&c, i) +
		    BC_REDIS_KEY_SLACK <= BC_REDIS_KEY_CLASS);
		if (so < off + rlen && off < (uint64_t)so + sl) {
			if (want0 == UINT32_MAX)
				want0 = i;
			want1 = i;
		}
		at += sl;
	}
	FUZZ_CHECK(at == len);
	FUZZ_CHECK(bc_tier_redis_key_range(&c, off, rlen, &first, &n) == 0);
	FUZZ_CHECK(first == want0 && n == want1 - want0 + 1);
	FUZZ_CHECK(bc_tier_redis_key_range(&c, off, len - off + 1, &first,
	    &n) == BC_ERANGE);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	check_slice(data, size);
	check_meta(data, size);
	check_layout(data, size);
	return 0;
}
