/*
 * test_tier_redis_key.c — the Redis tier's keys, slice layout and values
 * (tier/tier_redis_key.h): key names are short, bounded, binary-safe,
 * what the header documents, distinct per version, chunk size, chunk and
 * slice, and spread over Redis Cluster's slots; every layout covers its
 * chunk with slices whose values fill jemalloc's classes (checked against
 * an independent model of them for every length up to 2 MiB and a sweep
 * beyond); ranges map to the slices a brute force finds; values round-trip,
 * and parsing refuses every truncation, extension, single-byte change and
 * hostile length, reading only the bytes it is given (exact-size buffers,
 * so ASan sees any overread); a sound value of another version is a miss.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_checksum.h"
#include "tier/tier_redis_key.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"

TestSuite(redis_key);

#define MIB (1024u * 1024u)

static const bc_chunk_key_t K = { "bucket", "train/x.jpg", "\"0123\"", 3 };

/* jemalloc's size class for n bytes (n > 16): the smallest multiple of a
 * quarter of the power of two below n, at least n. */
static uint64_t
jemalloc_class(uint64_t n)
{
	uint64_t p = 16;

	while (p * 2 < n)
		p *= 2;
	return (n + p / 4 - 1) / (p / 4) * (p / 4);
}

/* What Redis allocates for a value of n bytes (measured: 10 more). */
static uint64_t
redis_alloc(uint64_t n)
{
	return jemalloc_class(n + 10);
}

/* A copy of n bytes in a buffer of exactly n bytes (ASan: no slack). */
static uint8_t *
exact(const void *p, size_t n)
{
	uint8_t *b = malloc(n > 0 ? n : 1);

	cr_assert_not_null(b);
	memcpy(b, p, n);
	return b;
}

/* Redis Cluster's slot of a key: CRC16/XMODEM of the whole name (these
 * names have no hash tag) modulo 16384. */
static unsigned
slot_of(const char *k)
{
	uint16_t crc = 0;

	for (; *k != '\0'; k++) {
		crc ^= (uint16_t)((uint8_t)*k << 8);
		for (int i = 0; i < 8; i++)
			crc = (uint16_t)(crc & 0x8000 ? crc << 1 ^ 0x1021 :
			    crc << 1);
	}
	return crc % 16384;
}

static void
init_ok(bc_tier_redis_chunk_t *c, const bc_chunk_key_t *k, uint64_t unit,
    uint64_t len)
{
	cr_assert_eq(bc_tier_redis_key_chunk_init(c, k, unit, len), 0,
	    "unit %llu len %llu", (unsigned long long)unit,
	    (unsigned long long)len);
}

/* ---- key names ---------------------------------------------------------- */

/* The id is what the header says: SHA-256 over the version, length-
 * prefixed, its first 16 bytes in hex. */
LTest(redis_key, slice_key_is_the_documented_hash)
{
	uint8_t in[256], md[BC_SHA256_LEN], *p = in;
	char want[80], hex[65], name[BC_REDIS_KEY_NAME_MAX];
	const char *parts[] = { K.bucket, K.key, K.etag };
	bc_tier_redis_chunk_t c;
	uint64_t unit = 8 * MIB;

	memcpy(p, "bc:c\0", 5);
	p += 5;
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(parts[i]);

		*p++ = (uint8_t)n;
		*p++ = (uint8_t)(n >> 8);
		memcpy(p, parts[i], n);
		p += n;
	}
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(unit >> (8 * i));
	bc_sha256(in, (size_t)(p - in), md);
	bc_hex(md, 16, hex);
	init_ok(&c, &K, unit, unit);
	cr_assert_str_eq(c.id, hex);
	snprintf(want, sizeof(want), "bc:c:%s:3:7", hex);
	cr_assert_eq(bc_tier_redis_key_slice(&c, 7, name), strlen(want));
	cr_assert_str_eq(name, want);
	/* the metadata key: "bc:m", bucket and key */
	p = in;
	memcpy(p, "bc:m\0", 5);
	p += 5;
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(parts[i]);

		*p++ = (uint8_t)n;
		*p++ = 0;
		memcpy(p, parts[i], n);
		p += n;
	}
	bc_sha256(in, (size_t)(p - in), md);
	bc_hex(md, 16, hex);
	snprintf(want, sizeof(want), "bc:m:%s", hex);
	cr_assert_eq(bc_tier_redis_key_meta(K.bucket, K.key, name),
	    (int)strlen(want));
	cr_assert_str_eq(name, want);
}

LTest(redis_key, names_are_bounded_and_binary_safe)
{
	static char bucket[BC_REDIS_KEY_BUCKET_MAX + 2];
	static char key[BC_REDIS_KEY_OBJKEY_MAX + 2];
	static char etag[BC_REDIS_KEY_ETAG_MAX + 2];
	char name[BC_REDIS_KEY_NAME_MAX];
	bc_tier_redis_chunk_t c;
	bc_chunk_key_t k;

	memset(bucket, 'b', BC_REDIS_KEY_BUCKET_MAX);
	for (size_t i = 0; i < BC_REDIS_KEY_OBJKEY_MAX; i++)
		key[i] = (char)(1 + i % 255);      /* every byte but NUL */
	memset(etag, 'e', BC_REDIS_KEY_ETAG_MAX);
	k = (bc_chunk_key_t){ bucket, key, etag, UINT32_MAX };
	init_ok(&c, &k, BC_REDIS_KEY_UNIT_MAX, BC_REDIS_KEY_UNIT_MAX);
	cr_assert_eq(c.hdr_len, BC_REDIS_KEY_HDR_MAX);
	cr_assert_gt(c.nslices, 1024);
	bc_tier_redis_key_slice(&c, c.nslices - 1, name);
	cr_assert_lt(strlen(name), BC_REDIS_KEY_NAME_MAX);
	cr_assert_eq(strspn(name, "bc:0123456789abcdef"), strlen(name),
	    "%s", name);
	cr_assert_gt(bc_tier_redis_key_meta(bucket, key, name), 0);
	/* one byte past each bound, or empty, or a bad unit or length */
	bucket[BC_REDIS_KEY_BUCKET_MAX] = 'b';
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &k, MIB, MIB),
	    BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_meta(bucket, key, name), BC_EINVAL);
	bucket[BC_REDIS_KEY_BUCKET_MAX] = '\0';
	key[BC_REDIS_KEY_OBJKEY_MAX] = 'k';
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &k, MIB, MIB),
	    BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_meta(bucket, key, name), BC_EINVAL);
	key[BC_REDIS_KEY_OBJKEY_MAX] = '\0';
	etag[BC_REDIS_KEY_ETAG_MAX] = 'e';
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &k, MIB, MIB),
	    BC_EINVAL);
	etag[BC_REDIS_KEY_ETAG_MAX] = '\0';
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &(bc_chunk_key_t){ "",
	    "k", "e", 0 }, MIB, MIB), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &(bc_chunk_key_t){ "b",
	    "", "e", 0 }, MIB, MIB), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &(bc_chunk_key_t){ "b",
	    "k", "", 0 }, MIB, MIB), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_meta("", "k", name), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_meta("b", "", name), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &K, 0, 1), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &K,
	    BC_REDIS_KEY_UNIT_MAX + 1ull, 1), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &K, MIB, 0), BC_EINVAL);
	cr_assert_eq(bc_tier_redis_key_chunk_init(&c, &K, MIB, MIB + 1),
	    BC_EINVAL);
}

/* Bucket, key, ETag and unit each change the id (and the boundaries
 * between them count: "ab"+"c" is not "a"+"bc"); index and slice change
 * the name. */
LTest(redis_key, names_differ_per_version_chunk_and_slice)
{
	static const bc_chunk_key_t ks[] = {
		{ "bucket", "train/x.jpg", "\"0123\"", 3 },
		{ "bucket2", "train/x.jpg", "\"0123\"", 3 },
		{ "bucket", "train/x.jpG", "\"0123\"", 3 },
		{ "bucket", "train/x.jpg", "\"0124\"", 3 },
		{ "bucke", "ttrain/x.jpg", "\"0123\"", 3 },
		{ "bucket", "train/x.jp", "g\"0123\"", 3 },
	};
	char names[8][BC_REDIS_KEY_NAME_MAX], a[BC_REDIS_KEY_NAME_MAX];
	char b[BC_REDIS_KEY_NAME_MAX];
	bc_tier_redis_chunk_t c;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		init_ok(&c, &ks[i], 8 * MIB, 8 * MIB);
		bc_tier_redis_key_slice(&c, 0, names[n++]);
	}
	init_ok(&c, &K, 4 * MIB, 4 * MIB);     /* another --chunk-size */
	bc_tier_redis_key_slice(&c, 0, names[n++]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			cr_assert_str_neq(names[i], names[j]);
	/* the same version, set up twice: the same names */
	init_ok(&c, &K, 8 * MIB, 8 * MIB);
	bc_tier_redis_key_slice(&c, 0, a);
	cr_assert_str_eq(a, names[0]);
	bc_tier_redis_key_slice(&c, 1, b);
	cr_assert_str_neq(a, b);
	init_ok(&c, &(bc_chunk_key_t){ K.bucket, K.key, K.etag, 4 }, 8 * MIB,
	    8 * MIB);
	bc_tier_redis_key_slice(&c, 0, b);
	cr_assert_str_neq(a, b);
	/* metadata: per (bucket, key), not per ETag */
	cr_assert_gt(bc_tier_redis_key_meta("bucket", "train/x.jpg", a), 0);
	cr_assert_gt(bc_tier_redis_key_meta("bucke", "ttrain/x.jpg", b), 0);
	cr_assert_str_neq(a, b);
	cr_assert_eq(strncmp(a, "bc:m:", 5), 0);
}

/* No hash tag: the slices of one chunk, and the chunks of one object,
 * land on many of Redis Cluster's slots. */
LTest(redis_key, slices_spread_over_cluster_slots)
{
	static uint8_t seen[16384];
	char name[BC_REDIS_KEY_NAME_MAX];
	bc_tier_redis_chunk_t c;
	unsigned distinct = 0, total = 0, lo = 16384, hi = 0;

	init_ok(&c, &K, 8 * MIB, 8 * MIB);
	cr_assert_eq(c.nslices, 9);
	for (uint32_t i = 0; i < c.nslices; i++) {
		bc_tier_redis_key_slice(&c, i, name);
		cr_assert_null(strpbrk(name, "{}"), "%s", name);
		distinct += !seen[slot_of(name)]++;
	}
	cr_assert_geq(distinct, 8, "9 slices on %u slots", distinct);
	/* 64 chunks of one object, 576 names: (close to) every one its own
	 * slot, over the whole slot range */
	memset(seen, 0, sizeof(seen));
	distinct = 0;
	for (uint32_t ci = 0; ci < 64; ci++) {
		bc_chunk_key_t k = K;

		k.index = ci;
		init_ok(&c, &k, 8 * MIB, 8 * MIB);
		for (uint32_t i = 0; i < c.nslices; i++, total++) {
			unsigned slot;

			bc_tier_redis_key_slice(&c, i, name);
			slot = slot_of(name);
			distinct += !seen[slot]++;
			lo = slot < lo ? slot : lo;
			hi = slot > hi ? slot : hi;
		}
	}
	cr_assert_geq(distinct, total * 9 / 10, "%u names on %u slots",
	    total, distinct);
	cr_assert(lo < 1024 && hi >= 16384 - 1024, "slots %u..%u", lo, hi);
}

/* ---- layout ------------------------------------------------------------- */

/* Every invariant of c's layout (len bytes, unit): spans tile the chunk;
 * full slices' values are a class less 64 bytes, cut tails' too, the last
 * tail wastes at most 1/32 of its class (or is small); Redis's allocation
 * for all the values stays within 1/32 (plus a page) of the bytes. */
static void
check_layout(const bc_tier_redis_chunk_t *c)
{
	uint64_t alloc = 0, off = 0;

	cr_assert_eq(c->nslices, c->nfull + c->ntail);
	cr_assert_leq(c->ntail, 6, "len %u: %u tails", c->len, c->ntail);
	cr_assert_eq(c->full + c->hdr_len + BC_REDIS_KEY_SLACK,
	    BC_REDIS_KEY_CLASS);
	for (uint32_t i = 0; i < c->nslices; i++) {
		uint32_t so, sl;
		uint64_t v = bc_tier_redis_key_value_len(c, i);

		bc_tier_redis_key_span(c, i, &so, &sl);
		cr_assert_eq(so, off, "len %u slice %u", c->len, i);
		cr_assert_gt(sl, 0);
		cr_assert_eq(v, (uint64_t)c->hdr_len + sl);
		cr_assert_leq(v + BC_REDIS_KEY_SLACK, BC_REDIS_KEY_CLASS);
		if (i + 1 < c->nslices)
			cr_assert_eq(jemalloc_class(v + BC_REDIS_KEY_SLACK),
			    v + BC_REDIS_KEY_SLACK, "len %u slice %u: %llu",
			    c->len, i, (unsigned long long)v);
		if (i + 1 < c->nslices)
			cr_assert_eq(redis_alloc(v), v + BC_REDIS_KEY_SLACK);
		else if (jemalloc_class(v + BC_REDIS_KEY_SLACK) ==
		    v + BC_REDIS_KEY_SLACK)
			cr_assert_leq(redis_alloc(v), v + BC_REDIS_KEY_SLACK);
		else
			cr_assert(i + 1 == c->nslices && (v +
			    BC_REDIS_KEY_SLACK <= BC_REDIS_KEY_TAIL_MIN ||
			    jemalloc_class(v + BC_REDIS_KEY_SLACK) - v -
			    BC_REDIS_KEY_SLACK <= (v + BC_REDIS_KEY_SLACK) /
			    32), "len %u slice %u: %llu", c->len, i,
			    (unsigned long long)v);
		alloc += redis_alloc(v);
		off += sl;
	}
	cr_assert_eq(off, c->len);
	cr_assert_leq(alloc, c->len + c->len / 32 + (uint64_t)c->nslices *
	    (c->hdr_len + BC_REDIS_KEY_SLACK) + 4096, "len %u: %llu", c->len,
	    (unsigned long long)alloc);
}

LTest(redis_key, layout_of_an_8mib_chunk)
{
	bc_tier_redis_chunk_t c;
	uint32_t off, len;

	init_ok(&c, &K, 8 * MIB, 8 * MIB);
	cr_assert_eq(c.hdr_len, 48 + 6 + 11 + 6);
	cr_assert_eq(c.full, MIB - 64 - c.hdr_len);
	cr_assert_eq(c.nfull, 8);
	cr_assert_eq(c.ntail, 1);
	bc_tier_redis_key_span(&c, 8, &off, &len);
	cr_assert_eq(off, 8 * c.full);
	cr_assert_eq(len, 8 * (64 + c.hdr_len));
	cr_assert_eq(bc_tier_redis_key_value_len(&c, 0), MIB - 64);
	cr_assert_eq(redis_alloc(MIB - 64), MIB);
	check_layout(&c);
}

/* A 100,000-byte object: one value would take 112 KiB; two take a 96 KiB
 * and a 2 KiB class. */
LTest(redis_key, layout_of_a_small_object)
{
	bc_tier_redis_chunk_t c;
	uint32_t off, len;

	init_ok(&c, &K, 8 * MIB, 100000);
	cr_assert_eq(redis_alloc(100000 + c.hdr_len), 112 * 1024);
	cr_assert_eq(c.nfull, 0);
	cr_assert_eq(c.nslices, 2);
	cr_assert_eq(bc_tier_redis_key_value_len(&c, 0), 96 * 1024 - 64);
	bc_tier_redis_key_span(&c, 1, &off, &len);
	cr_assert_eq(redis_alloc(len + c.hdr_len), 2048);
	check_layout(&c);
}

/* Every length up to 256 KiB and every 7th up to 2 MiB, with the shortest
 * and the longest header, and a sweep up to 1 GiB. */
LTest(redis_key, layout_every_length)
{
	static char key[BC_REDIS_KEY_OBJKEY_MAX + 1];
	static char bucket[BC_REDIS_KEY_BUCKET_MAX + 1];
	static char etag[BC_REDIS_KEY_ETAG_MAX + 1];
	const bc_chunk_key_t *ks[2];
	bc_tier_redis_chunk_t c;
	bc_chunk_key_t big;

	memset(key, 'k', BC_REDIS_KEY_OBJKEY_MAX);
	memset(bucket, 'b', BC_REDIS_KEY_BUCKET_MAX);
	memset(etag, 'e', BC_REDIS_KEY_ETAG_MAX);
	big = (bc_chunk_key_t){ bucket, key, etag, 0 };
	ks[0] = &(bc_chunk_key_t){ "b", "k", "e", 0 };
	ks[1] = &big;
	for (int h = 0; h < 2; h++) {
		for (uint64_t len = 1; len <= 2 * MIB;
		    len += len < 256 * 1024 ? 1 : 7) {
			init_ok(&c, ks[h], 2 * MIB, len);
			check_layout(&c);
		}
		for (uint64_t len = 2 * MIB; len <= BC_REDIS_KEY_UNIT_MAX;
		    len = len * 9 / 8 + 4093) {
			init_ok(&c, ks[h], BC_REDIS_KEY_UNIT_MAX, len);
			check_layout(&c);
		}
		init_ok(&c, ks[h], BC_REDIS_KEY_UNIT_MAX,
		    BC_REDIS_KEY_UNIT_MAX);
		check_layout(&c);
	}
}

/* The layout depends on the length and the header only: a reader that
 * takes the unit for the length finds the full slices where they are. */
LTest(redis_key, full_slices_do_not_depend_on_the_length)
{
	bc_tier_redis_chunk_t a, b;
	uint32_t ao, al, bo, bl;

	init_ok(&a, &K, 8 * MIB, 8 * MIB);
	init_ok(&b, &K, 8 * MIB, 3 * MIB + 12345);
	cr_assert_eq(b.nfull, 3);
	for (uint32_t i = 0; i < b.nfull; i++) {
		bc_tier_redis_key_span(&a, i, &ao, &al);
		bc_tier_redis_key_span(&b, i, &bo, &bl);
		cr_assert(ao == bo && al == bl);
	}
}

LTest(redis_key, ranges_map_to_the_slices_that_hold_them)
{
	static const uint64_t lens[] = { 1, 4096, 100000, MIB, 8 * MIB,
	    5 * MIB + 806352 };
	bc_tier_redis_chunk_t c;
	uint32_t first, n;

	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		uint64_t L = lens[li], step = L / 97 + 1;

		init_ok(&c, &K, 8 * MIB, L);
		for (uint64_t off = 0; off < L; off += step) {
			for (uint64_t len = 1; off + len <= L;
			    len = len * 3 + step) {
				uint32_t want0 = UINT32_MAX, want1 = 0;

				for (uint32_t i = 0; i < c.nslices; i++) {
					uint32_t so, sl;

					bc_tier_redis_key_span(&c, i, &so,
					    &sl);
					if (so < off + len && off < so + sl) {
						if (want0 == UINT32_MAX)
							want0 = i;
						want1 = i;
					}
				}
				cr_assert_eq(bc_tier_redis_key_range(&c, off,
				    len, &first, &n), 0);
				cr_assert(first == want0 &&
				    n == want1 - want0 + 1, "L %llu [%llu, "
				    "+%llu): %u+%u, want %u..%u",
				    (unsigned long long)L,
				    (unsigned long long)off,
				    (unsigned long long)len, first, n, want0,
				    want1);
			}
		}
		/* every slice boundary, from both sides */
		for (uint32_t i = 0; i < c.nslices; i++) {
			uint32_t so, sl;

			bc_tier_redis_key_span(&c, i, &so, &sl);
			cr_assert_eq(bc_tier_redis_key_range(&c, so, 1, &first,
			    &n), 0);
			cr_assert(first == i && n == 1, "L %llu slice %u",
			    (unsigned long long)L, i);
			cr_assert_eq(bc_tier_redis_key_range(&c, so, sl, &first,
			    &n), 0);
			cr_assert(first == i && n == 1);
			cr_assert_eq(bc_tier_redis_key_range(&c, so + sl - 1, 1,
			    &first, &n), 0);
			cr_assert(first == i && n == 1);
			if (i == 0)
				continue;
			cr_assert_eq(bc_tier_redis_key_range(&c, so - 1, 2,
			    &first, &n), 0);
			cr_assert(first == i - 1 && n == 2);
		}
		cr_assert_eq(bc_tier_redis_key_range(&c, 0, L, &first, &n), 0);
		cr_assert(first == 0 && n == c.nslices);
		cr_assert_eq(bc_tier_redis_key_range(&c, L - 1, 1, &first, &n),
		    0);
		cr_assert_eq(first, c.nslices - 1);
		cr_assert_eq(bc_tier_redis_key_range(&c, 0, 0, &first, &n),
		    BC_ERANGE);
		cr_assert_eq(bc_tier_redis_key_range(&c, L, 1, &first, &n),
		    BC_ERANGE);
		cr_assert_eq(bc_tier_redis_key_range(&c, 0, L + 1, &first, &n),
		    BC_ERANGE);
		cr_assert_eq(bc_tier_redis_key_range(&c, 1, UINT64_MAX, &first,
		    &n), BC_ERANGE);
	}
}

/* ---- slice values ------------------------------------------------------- */

static uint8_t *
chunk_bytes(size_t n, unsigned seed)
{
	uint8_t *d = malloc(n);

	cr_assert_not_null(d);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
	return d;
}

LTest(redis_key, slice_values_round_trip)
{
	static const uint64_t lens[] = { 1, 100000, 8 * MIB };
	bc_tier_redis_slice_t s;
	bc_tier_redis_chunk_t c;
	const uint8_t *payload;
	bc_buf_t b = BC_BUF_INIT;

	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		uint8_t *data = chunk_bytes(lens[li], (unsigned)li);

		init_ok(&c, &K, 8 * MIB, lens[li]);
		for (uint32_t i = 0; i < c.nslices; i++) {
			uint8_t hdr[BC_REDIS_KEY_HDR_MAX], *v;
			uint32_t off, len;

			bc_buf_reset(&b);
			cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, i,
			    data), 0);
			cr_assert_eq(b.len, bc_tier_redis_key_value_len(&c,
			    i));
			bc_tier_redis_key_span(&c, i, &off, &len);
			bc_tier_redis_key_slice_hdr(&c, i, data + off, hdr);
			cr_assert_eq(memcmp(b.data, hdr, c.hdr_len), 0);
			v = exact(b.data, b.len);
			cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len,
			    &s), 0);
			cr_assert_eq(s.bucket_len, 6);
			cr_assert_eq(memcmp(s.bucket, "bucket", 6), 0);
			cr_assert_eq(memcmp(s.key, K.key, s.key_len), 0);
			cr_assert_eq(memcmp(s.etag, K.etag, s.etag_len), 0);
			cr_assert(s.unit == 8 * MIB && s.index == 3 &&
			    s.len == lens[li] && s.slice == i &&
			    s.nslices == c.nslices);
			cr_assert_eq(s.payload_len, len);
			cr_assert_eq(bc_tier_redis_key_slice_check(&c, i, v,
			    b.len, &payload), 0);
			cr_assert_eq(payload, v + c.hdr_len);
			cr_assert_eq(memcmp(payload, data + off, len), 0);
			free(v);
		}
		free(data);
	}
	bc_buf_fini(&b);
}

/* A sound value that names anything else is a miss, never bytes. */
LTest(redis_key, other_versions_are_misses)
{
	bc_tier_redis_chunk_t c, other;
	bc_tier_redis_slice_t s;
	const uint8_t *payload;
	bc_buf_t b = BC_BUF_INIT;
	uint8_t *data = chunk_bytes(8 * MIB, 1), *v;
	const bc_chunk_key_t others[] = {
		{ "bucket2", K.key, K.etag, 3 },
		{ K.bucket, "train/y.jpg", K.etag, 3 },
		{ K.bucket, K.key, "\"0124\"", 3 },
		{ K.bucket, K.key, K.etag, 4 },
	};

	init_ok(&c, &K, 8 * MIB, 8 * MIB);
	cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, 0, data), 0);
	v = exact(b.data, b.len);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		init_ok(&other, &others[i], 8 * MIB, 8 * MIB);
		cr_assert_eq(bc_tier_redis_key_slice_check(&other, 0, v, b.len,
		    &payload), BC_ENOENT, "%zu", i);
		cr_assert_null(payload);
	}
	/* another unit (--chunk-size), another slice of the same chunk */
	init_ok(&other, &K, 16 * MIB, 8 * MIB);
	cr_assert_eq(bc_tier_redis_key_slice_check(&other, 0, v, b.len,
	    &payload), BC_ENOENT);
	cr_assert_eq(bc_tier_redis_key_slice_check(&c, 1, v, b.len, &payload),
	    BC_ENOENT);
	free(v);
	/* the last chunk (shorter) read by one who assumed the unit: a miss;
	 * slice 0 tells the length to set up again with */
	init_ok(&c, &K, 8 * MIB, 3 * MIB + 5);
	bc_buf_reset(&b);
	cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, 0, data), 0);
	v = exact(b.data, b.len);
	init_ok(&other, &K, 8 * MIB, 8 * MIB);
	cr_assert_eq(bc_tier_redis_key_slice_check(&other, 0, v, b.len,
	    &payload), BC_ENOENT);
	cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s), 0);
	cr_assert_eq(s.len, 3 * MIB + 5);
	init_ok(&other, &K, 8 * MIB, s.len);
	cr_assert_eq(bc_tier_redis_key_slice_check(&other, 0, v, b.len,
	    &payload), 0);
	free(v);
	/* another format version: ENOTSUP from parse, a miss from check */
	v = exact(b.data, b.len);
	v[4] = 2;
	cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s), BC_ENOTSUP);
	cr_assert_eq(bc_tier_redis_key_slice_check(&c, 0, v, b.len, &payload),
	    BC_ENOENT);
	free(v);
	free(data);
	bc_buf_fini(&b);
}

/* Every truncation, a byte more, and every single-byte change of a small
 * value (a whole small chunk: one slice) is refused. */
LTest(redis_key, damaged_slice_values_are_refused)
{
	bc_tier_redis_chunk_t c;
	bc_tier_redis_slice_t s;
	const uint8_t *payload;
	bc_buf_t b = BC_BUF_INIT;
	uint8_t *data = chunk_bytes(300, 7), *v;

	init_ok(&c, &K, 8 * MIB, 300);
	cr_assert_eq(c.nslices, 1);
	cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, 0, data), 0);
	for (size_t n = 0; n < b.len; n++) {
		v = exact(b.data, n);
		cr_assert_eq(bc_tier_redis_key_slice_parse(v, n, &s),
		    BC_EPROTO, "cut at %zu", n);
		cr_assert_eq(bc_tier_redis_key_slice_check(&c, 0, v, n,
		    &payload), BC_EPROTO);
		free(v);
	}
	cr_assert_eq(bc_buf_putc(&b, 'x'), 0);
	v = exact(b.data, b.len);
	cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s), BC_EPROTO);
	free(v);
	b.len--;
	for (size_t i = 0; i < b.len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int rv;

			v = exact(b.data, b.len);
			v[i] ^= (uint8_t)(1u << bit);
			rv = bc_tier_redis_key_slice_parse(v, b.len, &s);
			if (i == 4 || i == 5)
				cr_assert_eq(rv, BC_ENOTSUP);
			else
				cr_assert_eq(rv, BC_EPROTO, "byte %zu bit %d",
				    i, bit);
			cr_assert_neq(bc_tier_redis_key_slice_check(&c, 0, v,
			    b.len, &payload), 0);
			free(v);
		}
	}
	free(data);
	bc_buf_fini(&b);
}

/* Hand-made values whose fields lie, with their crcs made right: lengths
 * past the value, strings with NUL, a slice count or index the layout
 * does not give, a length past the unit. */
static void
fix_crcs(uint8_t *v, size_t n)
{
	size_t hl = (size_t)(v[6] | v[7] << 8);
	uint32_t crc;

	if (hl < 4 || hl > n)
		return;
	crc = bc_crc32c(0, v, hl - 4);
	for (int i = 0; i < 4; i++)
		v[hl - 4 + i] = (uint8_t)(crc >> (8 * i));
}

LTest(redis_key, hostile_slice_fields_are_refused)
{
	bc_tier_redis_chunk_t c;
	bc_tier_redis_slice_t s;
	bc_buf_t b = BC_BUF_INIT;
	uint8_t *data = chunk_bytes(300, 9), *v;
	struct { size_t at; unsigned width; uint64_t val; } lies[] = {
		{ 6, 2, 0xffff },          /* header length */
		{ 6, 2, 47 },
		{ 36, 2, 0 },              /* bucket length */
		{ 36, 2, 7 },
		{ 38, 2, 1025 },           /* key length */
		{ 40, 2, 0xffff },         /* ETag length */
		{ 42, 2, 1 },              /* the zero */
		{ 8, 8, 0 },               /* unit */
		{ 8, 8, (1ull << 30) + 1 },
		{ 8, 8, 299 },             /* unit below the length */
		{ 20, 4, 0 },              /* chunk length */
		{ 20, 4, 301 },
		{ 24, 4, 1 },              /* slice index */
		{ 28, 4, 2 },              /* slice count */
		{ 28, 4, 0 },
		{ 44, 1, 0 },              /* a NUL in the bucket */
	};

	init_ok(&c, &K, 8 * MIB, 300);
	cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, 0, data), 0);
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		v = exact(b.data, b.len);
		for (unsigned j = 0; j < lies[i].width; j++)
			v[lies[i].at + j] = (uint8_t)(lies[i].val >> (8 * j));
		fix_crcs(v, b.len);
		cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s),
		    BC_EPROTO, "lie %zu", i);
		free(v);
	}
	/* the same with only the header crc right: the payload crc */
	v = exact(b.data, b.len);
	v[b.len - 1] ^= 1;
	fix_crcs(v, b.len);
	cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s), BC_EPROTO);
	free(v);
	/* and an untouched copy still parses (fix_crcs is right) */
	v = exact(b.data, b.len);
	fix_crcs(v, b.len);
	cr_assert_eq(bc_tier_redis_key_slice_parse(v, b.len, &s), 0);
	free(v);
	/* values that are not ours at all */
	cr_assert_eq(bc_tier_redis_key_slice_parse("", 0, &s), BC_EPROTO);
	cr_assert_eq(bc_tier_redis_key_slice_parse("BCRS", 4, &s), BC_EPROTO);
	cr_assert_eq(bc_tier_redis_key_slice_parse("BCRS\x01", 5, &s),
	    BC_EPROTO);
	cr_assert_eq(bc_tier_redis_key_slice_parse("BCRS\x01\x00\x00\x00", 8,
	    &s), BC_EPROTO);
	cr_assert_eq(bc_tier_redis_key_slice_parse("BCRM\x01\x00\x00\x00", 8,
	    &s), BC_EPROTO);
	cr_assert_eq(bc_tier_redis_key_slice_parse("hello world", 11, &s),
	    BC_EPROTO);
	free(data);
	bc_buf_fini(&b);
}

LTest(redis_key, encode_respects_the_buffer_limit)
{
	bc_tier_redis_chunk_t c;
	bc_buf_t b;
	uint8_t *data = chunk_bytes(100, 3);

	init_ok(&c, &K, 8 * MIB, 100);
	bc_buf_init(&b, 64);
	cr_assert_eq(bc_buf_puts(&b, "abc"), 0);
	cr_assert_eq(bc_tier_redis_key_slice_encode(&b, &c, 0, data),
	    BC_E2BIG);
	cr_assert_eq(b.len, 3);
	cr_assert_str_eq(b.data, "abc");
	cr_assert_eq(bc_tier_redis_key_meta_encode(&b, "b", "k", data, 100),
	    BC_E2BIG);
	cr_assert_eq(b.len, 3);
	bc_buf_fini(&b);
	free(data);
}

/* ---- metadata values ---------------------------------------------------- */

LTest(redis_key, meta_values_round_trip_and_refuse_damage)
{
	static uint8_t blob[BC_REDIS_KEY_BLOB_MAX + 1];
	bc_tier_redis_meta_t m;
	const uint8_t *got;
	size_t len;
	bc_buf_t b = BC_BUF_INIT;
	uint8_t *v;

	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7);
	for (size_t n = 0; n <= BC_REDIS_KEY_BLOB_MAX;
	    n = n == 0 ? 1 : n * 16) {
		bc_buf_reset(&b);
		cr_assert_eq(bc_tier_redis_key_meta_encode(&b, K.bucket, K.key,
		    blob, n), 0);
		cr_assert_eq(b.len, 24 + 6 + 11 + n);
		v = exact(b.data, b.len);
		cr_assert_eq(bc_tier_redis_key_meta_parse(v, b.len, &m), 0);
		cr_assert(m.bucket_len == 6 && m.key_len == 11 &&
		    m.blob_len == n);
		cr_assert_eq(bc_tier_redis_key_meta_check(K.bucket, K.key, v,
		    b.len, &got, &len), 0);
		cr_assert(got == v + 24 + 17 && len == n);
		cr_assert_eq(memcmp(got, blob, n), 0);
		cr_assert_eq(bc_tier_redis_key_meta_check(K.bucket, "train/y",
		    v, b.len, &got, &len), BC_ENOENT);
		cr_assert_null(got);
		cr_assert_eq(bc_tier_redis_key_meta_check("bucke",
		    "ttrain/x.jpg", v, b.len, &got, &len), BC_ENOENT);
		free(v);
	}
	cr_assert_eq(bc_tier_redis_key_meta_encode(&b, K.bucket, K.key, blob,
	    BC_REDIS_KEY_BLOB_MAX + 1), BC_E2BIG);
	cr_assert_eq(bc_tier_redis_key_meta_encode(&b, "", K.key, blob, 1),
	    BC_EINVAL);
	/* damage: every cut, a byte more, every single-bit change */
	bc_buf_reset(&b);
	cr_assert_eq(bc_tier_redis_key_meta_encode(&b, K.bucket, K.key, blob,
	    40), 0);
	for (size_t n = 0; n < b.len; n++) {
		v = exact(b.data, n);
		cr_assert_eq(bc_tier_redis_key_meta_parse(v, n, &m), BC_EPROTO);
		free(v);
	}
	for (size_t i = 0; i < b.len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			v = exact(b.data, b.len);
			v[i] ^= (uint8_t)(1u << bit);
			cr_assert_eq(bc_tier_redis_key_meta_parse(v, b.len, &m),
			    i == 4 || i == 5 ? BC_ENOTSUP : BC_EPROTO,
			    "byte %zu bit %d", i, bit);
			cr_assert_neq(bc_tier_redis_key_meta_check(K.bucket,
			    K.key, v, b.len, &got, &len), 0);
			free(v);
		}
	}
	cr_assert_eq(bc_buf_putc(&b, 0), 0);
	v = exact(b.data, b.len);
	cr_assert_eq(bc_tier_redis_key_meta_parse(v, b.len, &m), BC_EPROTO);
	free(v);
	/* a slice value is not metadata, nor the other way round */
	cr_assert_eq(bc_tier_redis_key_meta_parse("BCRS\x01\x00", 6, &m),
	    BC_EPROTO);
	bc_buf_fini(&b);
}
