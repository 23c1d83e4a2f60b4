/*
 * test_tier_mem.c — tier/tier_mem.c, and the chunk it stores
 * (chunk/chunk.c): key hash and id, charge, refcounting and its
 * abort below zero; the memory tier's hits and misses, its byte bound
 * with many small and few large chunks and external bytes, put() that
 * cannot fit changing nothing, chunks dropped (evicted, deleted,
 * replaced, closed) while the test holds them staying readable and
 * counted until unref'd, del/del_object, table growth, and four threads
 * at once.
 *
 * Under ASan every test also fails on a leak (check_leaks), and reading
 * a dropped chunk's bytes proves it was not freed early.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "chunk/chunk.h"
#include "tier/tier.h"
#include "util/util_error.h"

/* Under ASan, a leak fails the test (see tests/unit/config/test_config.c:
 * LeakSanitizer's report at the worker's exit does not change the
 * result), so every test body ends with a recoverable leak check. */
#define KiB 1024u
#define MiB (1024u * 1024u)

static const bc_tier_ops_t *const T = &bc_tier_mem;
static const bc_policy_ctx_t ctx0 = { 1, NULL, "b", false };

/* ---- helpers ------------------------------------------------------- */

static uint8_t
seed_of(const char *key, uint32_t index)
{
	unsigned s = index * 131u;

	for (; *key != '\0'; key++)
		s = s * 31u + (unsigned char)*key;
	return (uint8_t)s;
}

static void
fill(uint8_t *d, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		d[i] = (uint8_t)(seed + i * 7u);
}

/* Whether c's bytes are the pattern mkc() wrote. */
static bool
intact(const bc_chunk_t *c, const char *key)
{
	uint8_t seed = seed_of(key, c->index);

	for (size_t i = 0; i < c->len; i++)
		if (c->data[i] != (uint8_t)(seed + i * 7u))
			return false;
	return true;
}

static bc_chunk_t *
mkc(const char *bucket, const char *key, const char *etag, uint32_t index,
    size_t len)
{
	bc_chunk_key_t k = { bucket, key, etag, index };
	uint8_t       *d = malloc(len == 0 ? 1 : len);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	fill(d, len, seed_of(key, index));
	c = bc_chunk_new(&k, d, len);
	cr_assert_not_null(c);
	return c;
}

static bc_tier_t *
opn(uint64_t capacity, _Atomic uint64_t *ext, const bc_policy_ops_t *pol)
{
	bc_tier_opts_t o = { .capacity = capacity, .policy = pol,
	    .external_bytes = ext };
	bc_tier_t     *t = NULL;

	cr_assert_eq(T->open(&o, &t), 0);
	cr_assert_not_null(t);
	return t;
}

/* Puts a new chunk and drops the test's reference: the tier's is then
 * the only one. Returns put's result. */
static int
put_new(bc_tier_t *t, const char *bucket, const char *key, const char *etag,
    uint32_t index, size_t len)
{
	bc_chunk_t *c = mkc(bucket, key, etag, index, len);
	int         rv = T->put(t, c, &ctx0);

	bc_chunk_unref(c);
	return rv;
}

/* Looks up; returns the chunk with a reference the caller drops, or
 * NULL. */
static bc_chunk_t *
get(bc_tier_t *t, const char *bucket, const char *key, const char *etag,
    uint32_t index)
{
	bc_chunk_key_t k = { bucket, key, etag, index };
	bc_chunk_t    *c;

	cr_assert(T->flags & BC_TIER_SYNC);
	c = T->lookup(t, &k, &ctx0);
	if (c != NULL) {
		cr_assert(bc_chunk_matches(c, &k), "hit on another key");
		cr_assert(intact(c, key), "bytes of %s changed", key);
	}
	return c;
}

/* Whether the tier holds the chunk (without keeping a reference). */
static bool
has(bc_tier_t *t, const char *bucket, const char *key, const char *etag,
    uint32_t index)
{
	bc_chunk_t *c = get(t, bucket, key, etag, index);

	bc_chunk_unref(c);
	return c != NULL;
}

static int
del(bc_tier_t *t, const char *bucket, const char *key, const char *etag,
    uint32_t index)
{
	bc_chunk_key_t k = { bucket, key, etag, index };

	return T->del(t, &k);
}

static size_t
charge_of(size_t len, const char *bucket, const char *key, const char *etag)
{
	return len + sizeof(bc_chunk_t) + strlen(bucket) + strlen(key) +
	    strlen(etag) + 3 + BC_CHUNK_ALLOC_OVERHEAD +
	    BC_CHUNK_HOLDER_BYTES;
}

static bc_tier_mem_stats_t
stats(bc_tier_t *t)
{
	bc_tier_mem_stats_t s;

	memset(&s, 0xa5, sizeof(s));
	bc_tier_mem_stats(t, &s);
	return s;
}

/* ---- chunk --------------------------------------------------------- */

LTest(chunk, new_copies_key)
{
	char           b[] = "bkt", k[] = "dir/key", e[] = "\"abc\"";
	bc_chunk_key_t key = { b, k, e, 3 };
	uint8_t       *d = malloc(5);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	memcpy(d, "hello", 5);
	c = bc_chunk_new(&key, d, 5);
	cr_assert_not_null(c);
	memset(b, 'X', 3);     /* the chunk has its own copy */
	memset(k, 'X', 7);
	cr_assert_eq(c->id_len, sizeof("bkt\0dir/key\0\"abc\"\0") - 1);
	cr_assert_eq(memcmp(c->id, "bkt\0dir/key\0\"abc\"\0", c->id_len), 0);
	cr_assert_eq(c->index, 3);
	cr_assert_eq(c->data, d);
	cr_assert_eq(c->len, 5);
	cr_assert_eq(atomic_load(&c->refs), 1);
	cr_assert_null(c->on_free);
	cr_assert_null(c->tier_data);
	bc_chunk_key_t same = { "bkt", "dir/key", "\"abc\"", 3 };
	cr_assert(bc_chunk_matches(c, &same));
	cr_assert_eq(c->hash, bc_chunk_key_hash(&same));
	cr_assert_eq(bc_chunk_charge(c),
	    5 + sizeof(bc_chunk_t) + c->id_len + BC_CHUNK_ALLOC_OVERHEAD +
	    BC_CHUNK_HOLDER_BYTES);
	bc_chunk_unref(c);
	bc_chunk_unref(NULL);
}

struct mismatch_case {
	const char    *name;
	bc_chunk_key_t k;
};

/* Each differs from ("ab", "c", "\"e\"", 1) in one way; none matches and
 * every hash differs (the NULs keep "ab"+"c" apart from "a"+"bc"). */
static const struct mismatch_case mismatches[] = {
	{ "bucket",          { "ax", "c", "\"e\"", 1 } },
	{ "key",             { "ab", "d", "\"e\"", 1 } },
	{ "etag",            { "ab", "c", "\"f\"", 1 } },
	{ "etag unquoted",   { "ab", "c", "e", 1 } },
	{ "index",           { "ab", "c", "\"e\"", 2 } },
	{ "index high bits", { "ab", "c", "\"e\"", 1u | (1u << 24) } },
	{ "shift b/k",       { "a", "bc", "\"e\"", 1 } },
	{ "shift k/e",       { "ab", "c\"", "e\"", 1 } },
	{ "bucket prefix",   { "a", "c", "\"e\"", 1 } },
	{ "key longer",      { "ab", "cc", "\"e\"", 1 } },
	{ "empty key",       { "ab", "", "\"e\"", 1 } },
};

LTest(chunk, matches_and_hash_table)
{
	bc_chunk_key_t base = { "ab", "c", "\"e\"", 1 };
	bc_chunk_t    *c = bc_chunk_new(&base, NULL, 0);
	size_t         n = sizeof(mismatches) / sizeof(mismatches[0]);

	cr_assert_not_null(c);
	cr_assert(bc_chunk_matches(c, &base));
	for (size_t i = 0; i < n; i++) {
		const bc_chunk_key_t *k = &mismatches[i].k;
		bc_chunk_t           *o = bc_chunk_new(k, NULL, 0);

		cr_assert_not_null(o);
		cr_expect_not(bc_chunk_matches(c, k), "%s matched",
		    mismatches[i].name);
		cr_expect_neq(bc_chunk_key_hash(k), c->hash, "%s: same hash",
		    mismatches[i].name);
		cr_expect_eq(o->hash, bc_chunk_key_hash(k), "%s",
		    mismatches[i].name);
		for (size_t j = 0; j < i; j++)
			cr_expect_neq(bc_chunk_key_hash(k),
			    bc_chunk_key_hash(&mismatches[j].k), "%s vs %s",
			    mismatches[i].name, mismatches[j].name);
		bc_chunk_unref(o);
	}
	bc_chunk_unref(c);
}

/* A table indexes with the hash's low bits: 4096 similar keys must land
 * in about as many distinct slots of 4096 as random values would
 * (4096 * (1 - 1/e) = 2589). FNV-1a without the final mix fails this
 * badly for indices. */
LTest(chunk, hash_low_bits_spread)
{
	static bool used[4096];
	int         distinct = 0, distinct_idx = 0;
	char        key[32];

	memset(used, 0, sizeof(used));
	for (int i = 0; i < 4096; i++) {
		snprintf(key, sizeof(key), "train/%06d.jpg", i);
		bc_chunk_key_t k = { "data", key, "\"e\"", 0 };
		uint64_t h = bc_chunk_key_hash(&k) & 4095;

		distinct += !used[h];
		used[h] = true;
	}
	memset(used, 0, sizeof(used));
	for (uint32_t i = 0; i < 4096; i++) {
		bc_chunk_key_t k = { "data", "big.tar", "\"e\"", i };
		uint64_t h = bc_chunk_key_hash(&k) & 4095;

		distinct_idx += !used[h];
		used[h] = true;
	}
	cr_expect_gt(distinct, 2450, "keys: %d distinct slots", distinct);
	cr_expect_gt(distinct_idx, 2450, "indices: %d distinct slots",
	    distinct_idx);
}

static int freed_calls;
static int freed_ok;

static void
count_free(bc_chunk_t *c)
{
	freed_calls++;
	/* Called before the free: the bytes are still there. */
	freed_ok = c->len == 4 && memcmp(c->data, "abcd", 4) == 0;
}

LTest(chunk, refs_and_on_free)
{
	bc_chunk_key_t k = { "b", "k", "\"e\"", 0 };
	uint8_t       *d = malloc(4);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	memcpy(d, "abcd", 4);
	c = bc_chunk_new(&k, d, 4);
	cr_assert_not_null(c);
	c->on_free = count_free;
	freed_calls = 0;
	bc_chunk_ref(c);
	bc_chunk_ref(c);
	cr_assert_eq(atomic_load(&c->refs), 3);
	bc_chunk_unref(c);
	bc_chunk_unref(c);
	cr_assert_eq(freed_calls, 0);
	bc_chunk_unref(c);
	cr_assert_eq(freed_calls, 1);
	cr_assert(freed_ok);
}

/* bc_chunk_new_filling: small data is malloc'd, BC_CHUNK_MAP_MIN and up is
 * a page-rounded mapping of its own (populated up to
 * BC_CHUNK_POPULATE_MAX) that the charge counts whole; every byte is
 * writable, the chunk starts FILLING with nothing filled, and a memory
 * tier accounts the mapping until the last reference goes. */
LTest(chunk, new_filling_sizes)
{
	static const size_t lens[] = {
		0, 1, BC_CHUNK_MAP_MIN - 1, BC_CHUNK_MAP_MIN,
		BC_CHUNK_MAP_MIN + 1, BC_CHUNK_POPULATE_MAX,
		BC_CHUNK_POPULATE_MAX + 4097, 8u << 20,
	};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		bc_chunk_key_t k = { "b", "k", "\"e\"", (uint32_t)i };
		size_t len = lens[i];
		bc_chunk_t *c = bc_chunk_new_filling(&k, len);

		cr_assert_not_null(c, "len %zu", len);
		cr_assert_eq(c->len, len);
		cr_assert_eq(bc_chunk_state(c), BC_CHUNK_FILLING);
		cr_assert_eq(bc_chunk_avail(c), 0);
		if (len >= BC_CHUNK_MAP_MIN) {
			cr_assert_eq(c->map_len % page, 0, "len %zu", len);
			cr_assert(c->map_len >= len && c->map_len < len + page);
			cr_assert_eq(bc_chunk_charge(c), c->map_len +
			    sizeof(*c) + c->id_len + BC_CHUNK_ALLOC_OVERHEAD +
			    BC_CHUNK_HOLDER_BYTES);
		} else {
			cr_assert_eq(c->map_len, 0, "len %zu", len);
			cr_assert_eq(bc_chunk_charge(c), len + sizeof(*c) +
			    c->id_len + BC_CHUNK_ALLOC_OVERHEAD +
			    BC_CHUNK_HOLDER_BYTES);
		}
		if (len > 0) {
			memset(c->data, 0xa5, len);
			cr_assert_eq(c->data[len - 1], 0xa5);
		}
		bc_chunk_fill(c, len);
		bc_chunk_end(c, BC_CHUNK_COMPLETE);
		cr_assert_eq(bc_chunk_avail(c), len);
		bc_chunk_unref(c);
	}
}

LTest(tier, mapped_chunk_accounted)
{
	bc_chunk_key_t k = { "b", "k", "\"e\"", 0 };
	bc_tier_t *t = opn(64u << 20, NULL, NULL);
	bc_chunk_t *c = bc_chunk_new_filling(&k, BC_CHUNK_MAP_MIN * 2 + 1);
	bc_tier_mem_stats_t st;

	cr_assert_not_null(c);
	cr_assert_gt(c->map_len, c->len);
	bc_chunk_fill(c, c->len);
	bc_chunk_end(c, BC_CHUNK_COMPLETE);
	cr_assert_eq(T->put(t, c, &ctx0), 0);
	bc_tier_mem_stats(t, &st);
	cr_assert_eq(st.bytes, bc_chunk_charge(c));
	cr_assert_eq(T->del(t, &k), 0);
	bc_tier_mem_stats(t, &st);
	cr_assert_eq(st.bytes, bc_chunk_charge(c), "still held by us");
	bc_chunk_unref(c);
	bc_tier_mem_stats(t, &st);
	cr_assert_eq(st.bytes, 0);
	T->close(t);
}

/* The count is forced to zero without freeing, so the abort is the
 * refcount check's and not ASan's. */
LTest(chunk, unref_below_zero_aborts, .signal = SIGABRT)
{
	bc_chunk_t *c = mkc("b", "k", "\"e\"", 0, 16);

	atomic_store(&c->refs, 0);
	bc_chunk_unref(c);
}

LTest(chunk, ref_of_dead_chunk_aborts, .signal = SIGABRT)
{
	bc_chunk_t *c = mkc("b", "k", "\"e\"", 0, 16);

	atomic_store(&c->refs, 0);
	bc_chunk_ref(c);
}

/* The same check through the tier: the count is zeroed under the
 * tier's reference (as if someone dropped one they did not own), so the
 * tier's unref at close aborts. */
LTest(chunk, tier_unref_below_zero_aborts, .signal = SIGABRT)
{
	bc_tier_t  *t = opn(1 * MiB, NULL, NULL);
	bc_chunk_t *c = mkc("b", "k", "\"e\"", 0, 16);

	cr_assert_eq(T->put(t, c, &ctx0), 0);
	atomic_store(&c->refs, 0);
	T->close(t);
}

/* ---- tier: basics -------------------------------------------------- */

LTest(tier, open_args)
{
	bc_tier_opts_t o = { .capacity = 1 * MiB };
	bc_tier_t     *t = NULL;

	cr_assert_eq(T->open(NULL, &t), BC_EINVAL);
	cr_assert_eq(T->open(&o, NULL), BC_EINVAL);
	cr_assert_eq(T->open(&o, &t), 0);   /* NULL policy: LRU */
	cr_assert_eq(T->capacity(t), 1 * MiB);
	cr_assert_eq(T->usage(t), 0);
	cr_assert_eq(T->evictions(t), 0);
	cr_assert_str_eq(T->name, "memory");
	T->close(t);
	T->close(NULL);
}

LTest(tier, get_hit_and_miss)
{
	bc_tier_t          *t = opn(1 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t         *c = mkc("b", "k", "\"e\"", 2, 100);
	bc_chunk_t         *g;
	bc_tier_mem_stats_t s;

	cr_assert_eq(T->put(t, c, &ctx0), 0);
	cr_assert_eq(atomic_load(&c->refs), 2, "the tier keeps its own ref");
	g = get(t, "b", "k", "\"e\"", 2);
	cr_assert_eq(g, c);
	cr_assert_eq(atomic_load(&c->refs), 3, "a hit returns a new ref");
	bc_chunk_unref(g);
	bc_chunk_unref(c);
	cr_assert_eq(atomic_load(&c->refs), 1);
	cr_assert_null(get(t, "b", "k", "\"e\"", 1));
	cr_assert_null(get(t, "b", "k", "\"f\"", 2));
	cr_assert_null(get(t, "b", "kk", "\"e\"", 2));
	cr_assert_null(get(t, "c", "k", "\"e\"", 2));
	cr_assert_eq(T->usage(t), charge_of(100, "b", "k", "\"e\""));
	s = stats(t);
	cr_assert_eq(s.hits, 1);
	cr_assert_eq(s.misses, 4);
	cr_assert_eq(s.inserts, 1);
	cr_assert_eq(s.chunks, 1);
	cr_assert_eq(s.held_bytes, s.bytes);
	cr_assert_eq(s.usage, s.bytes);
	cr_assert_eq(s.capacity, 1 * MiB);
	T->close(t);
}

/* ---- tier: the byte bound ----------------------------------------- */

/* 10,000 x 1 KiB into 1 MiB: the bound holds after every put, the tier
 * fills up to it (no over-eviction), keeps exactly the newest chunks,
 * and its usage is the sum of what it holds. */
LTest(tier, many_small)
{
	const int           n = 10000;
	const uint64_t      cap = 1 * MiB;
	bc_tier_t          *t = opn(cap, NULL, &bc_policy_lru);
	size_t              one = charge_of(KiB, "b", "k00000", "\"e\"");
	uint64_t            fit = cap / one, sum = 0, held = 0;
	char                key[16];
	bc_tier_mem_stats_t s;

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%05d", i);
		cr_assert_eq(put_new(t, "b", key, "\"e\"", 0, KiB), 0);
		cr_assert_leq(T->usage(t), cap, "over capacity after put %d",
		    i);
	}
	for (int i = 0; i < n; i++) {
		bc_chunk_t *c;

		snprintf(key, sizeof(key), "k%05d", i);
		c = get(t, "b", key, "\"e\"", 0);
		if (c == NULL)
			continue;
		cr_assert_geq((uint64_t)i, n - fit, "old chunk %d kept", i);
		held++;
		sum += bc_chunk_charge(c);
		bc_chunk_unref(c);
	}
	cr_assert_eq(held, fit, "held %lu, fit %lu", (unsigned long)held,
	    (unsigned long)fit);
	cr_assert_eq(T->usage(t), sum);
	cr_assert_eq(T->evictions(t), n - held);
	s = stats(t);
	cr_assert_eq(s.chunks, held);
	cr_assert_eq(s.held_bytes, sum);
	cr_assert_eq(s.evictions, n - held);
	cr_assert_eq(s.inserts, (uint64_t)n);
	T->close(t);
}

/* 3 MiB chunks into 8 MiB: at most two at any time, the newest two. */
LTest(tier, few_large)
{
	bc_tier_t *t = opn(8 * MiB, NULL, &bc_policy_lru);
	char       key[16];

	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "L%d", i);
		cr_assert_eq(put_new(t, "b", key, "\"e\"", 0, 3 * MiB), 0);
		cr_assert_leq(stats(t).chunks, 2);
		cr_assert_leq(T->usage(t), 8 * MiB);
	}
	cr_assert_not(has(t, "b", "L0", "\"e\"", 0));
	cr_assert_not(has(t, "b", "L1", "\"e\"", 0));
	cr_assert_not(has(t, "b", "L2", "\"e\"", 0));
	cr_assert(has(t, "b", "L3", "\"e\"", 0));
	cr_assert(has(t, "b", "L4", "\"e\"", 0));
	cr_assert_eq(T->usage(t), 2 * charge_of(3 * MiB, "b", "L0", "\"e\""));
	cr_assert_eq(T->evictions(t), 3);
	T->close(t);
}

/* A hit protects a chunk from the next eviction (LRU through the tier). */
LTest(tier, hit_changes_victim)
{
	bc_tier_t *t = opn(8 * MiB, NULL, &bc_policy_lru);

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert_eq(put_new(t, "b", "C", "\"e\"", 0, 3 * MiB), 0);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert(has(t, "b", "C", "\"e\"", 0));
	T->close(t);
}

struct big_case {
	const char *name;
	uint64_t    capacity;
	size_t      len;
};

/* Chunks whose charge exceeds the capacity, by a little or a lot. */
static const struct big_case bigs[] = {
	{ "data = capacity",     1 * MiB, 1 * MiB },
	{ "charge = cap + 1",    4096,    4096 + 1 -
	    (sizeof(bc_chunk_t) + 1 + 1 + 3 + 3 + BC_CHUNK_ALLOC_OVERHEAD +
	    BC_CHUNK_HOLDER_BYTES) },
	{ "3x capacity",         1 * MiB, 3 * MiB },
	{ "zero capacity",       0,       0 },
};

LTest(tier, bigger_than_capacity)
{
	for (size_t i = 0; i < sizeof(bigs) / sizeof(bigs[0]); i++) {
		const struct big_case *bc = &bigs[i];
		bc_tier_t  *t = opn(bc->capacity, NULL, &bc_policy_lru);
		bc_chunk_t *c = mkc("b", "B", "\"e\"", 0, bc->len);
		uint64_t    before;

		if (bc->capacity >= KiB)
			cr_assert_eq(put_new(t, "b", "s", "\"e\"", 0, 10), 0);
		before = T->usage(t);
		cr_assert_eq(T->put(t, c, &ctx0), BC_E2BIG, "%s", bc->name);
		cr_assert_eq(atomic_load(&c->refs), 1, "%s: ref kept",
		    bc->name);
		cr_assert_null(c->on_free, "%s", bc->name);
		cr_assert_eq(T->usage(t), before, "%s", bc->name);
		cr_assert_eq(T->evictions(t), 0, "%s", bc->name);
		cr_assert_eq(stats(t).rejected, 1, "%s", bc->name);
		if (bc->capacity >= KiB)
			cr_assert(has(t, "b", "s", "\"e\"", 0), "%s",
			    bc->name);
		cr_assert_not(has(t, "b", "B", "\"e\"", 0), "%s", bc->name);
		bc_chunk_unref(c);
		T->close(t);
	}
}

/* A charge of exactly the capacity fits (into an empty tier). */
LTest(tier, exactly_capacity_fits)
{
	size_t     len = 4096;
	bc_tier_t *t = opn(charge_of(len, "b", "k", "\"e\""), NULL, NULL);

	cr_assert_eq(put_new(t, "b", "k", "\"e\"", 0, len), 0);
	cr_assert_eq(T->usage(t), T->capacity(t));
	cr_assert_eq(put_new(t, "b", "k2", "\"e\"", 0, len - 1), 0);
	cr_assert_not(has(t, "b", "k", "\"e\"", 0));
	cr_assert_eq(T->evictions(t), 1);
	T->close(t);
}

/* When chunks in use keep a put from fitting, nothing is evicted. */
LTest(tier, no_partial_eviction)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a, *c = mkc("b", "C", "\"e\"", 0, 6 * MiB);
	uint64_t    before;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 1 * MiB), 0);
	a = get(t, "b", "A", "\"e\"", 0);      /* in use: not evictable */
	cr_assert_not_null(a);
	before = T->usage(t);
	/* Only B (1 MiB) could go; C needs 2 MiB more. */
	cr_assert_eq(T->put(t, c, &ctx0), BC_E2BIG);
	cr_assert_eq(T->usage(t), before);
	cr_assert_eq(T->evictions(t), 0);
	cr_assert(has(t, "b", "B", "\"e\"", 0));
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert_eq(atomic_load(&c->refs), 1);
	/* A released: A and B both go (B was the least recent). */
	bc_chunk_unref(a);
	cr_assert_eq(T->put(t, c, &ctx0), 0);
	cr_assert_eq(T->evictions(t), 2);
	cr_assert_not(has(t, "b", "A", "\"e\"", 0));
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert_eq(T->usage(t), bc_chunk_charge(c));
	bc_chunk_unref(c);
	T->close(t);
}

/* A chunk in use is skipped: the next least recent one goes instead. */
LTest(tier, in_use_not_evicted)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	a = get(t, "b", "A", "\"e\"", 0);
	cr_assert_eq(put_new(t, "b", "C", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "D", "\"e\"", 0, 3 * MiB), 0);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert_not(has(t, "b", "C", "\"e\"", 0));
	cr_assert(has(t, "b", "D", "\"e\"", 0));
	cr_assert_leq(T->usage(t), 8 * MiB);
	bc_chunk_unref(a);
	T->close(t);
}

/* Bytes held outside the tier count against the same capacity. */
LTest(tier, external_bytes)
{
	_Atomic uint64_t ext = 4 * MiB;
	bc_tier_t       *t = opn(8 * MiB, &ext, &bc_policy_lru);
	size_t           one = charge_of(3 * MiB, "b", "E0", "\"e\"");
	char             key[16];

	cr_assert_eq(T->usage(t), 4 * MiB);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "E%d", i);
		cr_assert_eq(put_new(t, "b", key, "\"e\"", 0, 3 * MiB), 0);
		cr_assert_eq(stats(t).chunks, 1, "only one fits beside 4 MiB");
		cr_assert_leq(T->usage(t), 8 * MiB);
	}
	cr_assert_eq(T->usage(t), 4 * MiB + one);
	cr_assert_eq(stats(t).bytes, one);
	/* More outside than the whole capacity: nothing fits, and a put
	 * that cannot succeed evicts nothing. */
	atomic_store(&ext, 9 * MiB);
	cr_assert_eq(put_new(t, "b", "small", "\"e\"", 0, 10), BC_E2BIG);
	cr_assert(has(t, "b", "E2", "\"e\"", 0));
	cr_assert_eq(T->evictions(t), 2);
	/* 7 MiB outside: the 3 MiB chunk goes to make room for a small one. */
	atomic_store(&ext, 7 * MiB);
	cr_assert_eq(put_new(t, "b", "small", "\"e\"", 0, 10), 0);
	cr_assert_not(has(t, "b", "E2", "\"e\"", 0));
	atomic_store(&ext, 0);
	cr_assert_eq(put_new(t, "b", "X", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "Y", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(stats(t).chunks, 3);
	T->close(t);
}

/* Reserving room for a chunk being filled evicts idle chunks only, and
 * refuses, evicting nothing, when the chunks in use leave too little. */
LTest(tier, reserve_for_fills)
{
	_Atomic uint64_t ext = 0;
	bc_tier_t       *t = opn(8 * MiB, &ext, &bc_policy_lru);
	bc_chunk_t      *a, *b;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	/* room without evicting */
	cr_assert_eq(bc_tier_mem_reserve(t, 1 * MiB), 0);
	cr_assert_eq(atomic_load(&ext), 1 * MiB);
	cr_assert_eq(T->evictions(t), 0);
	/* room by evicting the idle A */
	cr_assert_eq(bc_tier_mem_reserve(t, 3 * MiB), 0);
	cr_assert_eq(atomic_load(&ext), 4 * MiB);
	cr_assert_not(has(t, "b", "A", "\"e\"", 0));
	cr_assert_leq(T->usage(t), 8 * MiB);
	/* B held by a reader: nothing can be evicted, nothing is */
	b = get(t, "b", "B", "\"e\"", 0);
	cr_assert_eq(bc_tier_mem_reserve(t, 2 * MiB), BC_E2BIG);
	cr_assert_eq(atomic_load(&ext), 4 * MiB);
	cr_assert(has(t, "b", "B", "\"e\"", 0));
	cr_assert_eq(stats(t).evictions, 1);
	/* more than the capacity never fits */
	bc_chunk_unref(b);
	cr_assert_eq(bc_tier_mem_reserve(t, 9 * MiB), BC_E2BIG);
	/* the reader let go: B may go now */
	cr_assert_eq(bc_tier_mem_reserve(t, 2 * MiB), 0);
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert_eq(atomic_load(&ext), 6 * MiB);
	/* a chunk others hold, dropped, still counts: no room past it */
	atomic_store(&ext, 0);
	cr_assert_eq(put_new(t, "b", "C", "\"e\"", 0, 6 * MiB), 0);
	a = get(t, "b", "C", "\"e\"", 0);
	cr_assert_eq(T->del(t, &(bc_chunk_key_t){ "b", "C", "\"e\"", 0 }), 0);
	cr_assert_eq(bc_tier_mem_reserve(t, 3 * MiB), BC_E2BIG);
	bc_chunk_unref(a);
	cr_assert_eq(bc_tier_mem_reserve(t, 3 * MiB), 0);
	T->close(t);
}

/* A prefetch's reservation never evicts a prefetched chunk no client
 * read yet (a demand fill's may), and is declined, evicting nothing,
 * when the policy would not keep the chunk. */
LTest(tier, reserve_for_prefetches)
{
	_Atomic uint64_t ext = 0;
	bc_tier_t       *t = opn(8 * MiB, &ext, &bc_policy_lru);
	bc_policy_ctx_t  pctx = { 2, NULL, "b", true };
	bc_chunk_t      *a = mkc("b", "A", "\"e\"", 0, 3 * MiB);
	uint64_t         kx = bc_policy_key_hash("b", "X", 0);

	bc_chunk_mark_prefetched(a, BC_STATS_JOB_NONE);
	cr_assert_eq(T->put(t, a, &pctx), 0);
	bc_chunk_unref(a);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	/* A is the LRU victim, but unread: B goes */
	cr_assert_eq(bc_tier_mem_reserve_prefetch(t, 3 * MiB, kx, &pctx), 0);
	cr_assert_eq(atomic_load(&ext), 3 * MiB);
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	/* only A could make room: declined, nothing evicted */
	cr_assert_eq(bc_tier_mem_reserve_prefetch(t, 3 * MiB, kx, &pctx),
	    BC_E2BIG);
	cr_assert_eq(atomic_load(&ext), 3 * MiB);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	/* a demand fill may evict it */
	cr_assert_eq(bc_tier_mem_reserve(t, 3 * MiB), 0);
	cr_assert_not(has(t, "b", "A", "\"e\"", 0));
	T->close(t);

	/* pin keeps what it holds once full: a prefetch is declined */
	atomic_store(&ext, 0);
	t = opn(8 * MiB, &ext, &bc_policy_pin);
	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(bc_tier_mem_reserve_prefetch(t, 1 * MiB, kx, &pctx), 0,
	    "room without evicting: admitted");
	cr_assert_eq(bc_tier_mem_reserve_prefetch(t, 3 * MiB, kx, &pctx),
	    BC_E2BIG);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert(has(t, "b", "B", "\"e\"", 0));
	cr_assert_eq(atomic_load(&ext), 1 * MiB);
	T->close(t);
}

/* ---- tier: references outliving the tier's ------------------------- */

LTest(tier, deleted_while_held)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	size_t      one = charge_of(1 * MiB, "b", "A", "\"e\"");
	bc_chunk_t *a;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 1 * MiB), 0);
	a = get(t, "b", "A", "\"e\"", 0);
	cr_assert_eq(del(t, "b", "A", "\"e\"", 0), 0);
	cr_assert_eq(del(t, "b", "A", "\"e\"", 0), BC_ENOENT);
	cr_assert_not(has(t, "b", "A", "\"e\"", 0));
	cr_assert(intact(a, "A"), "bytes of a dropped chunk");
	cr_assert_eq(T->usage(t), one, "still counted while held");
	cr_assert_eq(stats(t).held_bytes, 0);
	cr_assert_eq(stats(t).chunks, 0);
	bc_chunk_unref(a);
	cr_assert_eq(T->usage(t), 0);
	cr_assert_eq(stats(t).deleted, 1);
	T->close(t);
}

/* A dropped chunk still in use counts against the bound: room for a new
 * chunk comes from evicting others. */
LTest(tier, dropped_chunk_counts_in_bound)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	size_t      one = charge_of(3 * MiB, "b", "A", "\"e\"");
	bc_chunk_t *a;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	a = get(t, "b", "A", "\"e\"", 0);
	cr_assert_eq(del(t, "b", "A", "\"e\"", 0), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "C", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_not(has(t, "b", "B", "\"e\"", 0));
	cr_assert(has(t, "b", "C", "\"e\"", 0));
	cr_assert_eq(T->usage(t), 2 * one);
	/* D takes C's place: A's bytes are not the tier's to free. */
	cr_assert_eq(put_new(t, "b", "D", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_not(has(t, "b", "C", "\"e\"", 0));
	cr_assert(has(t, "b", "D", "\"e\"", 0));
	cr_assert_leq(T->usage(t), 8 * MiB);
	bc_chunk_unref(a);
	cr_assert_eq(T->usage(t), one);
	T->close(t);
}

LTest(tier, replaced_while_held)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a1 = mkc("b", "A", "\"e\"", 0, 1 * MiB);
	bc_chunk_t *a2 = mkc("b", "A", "\"e\"", 0, 2 * MiB);
	bc_chunk_t *a3 = mkc("b", "A", "\"e\"", 0, 100);
	bc_chunk_t *g;

	cr_assert_eq(T->put(t, a1, &ctx0), 0);
	cr_assert_eq(T->put(t, a2, &ctx0), 0);       /* a1 still held by the test */
	g = get(t, "b", "A", "\"e\"", 0);
	cr_assert_eq(g, a2);
	bc_chunk_unref(g);
	cr_assert_eq(stats(t).chunks, 1);
	cr_assert_eq(T->usage(t), bc_chunk_charge(a1) + bc_chunk_charge(a2));
	cr_assert(intact(a1, "A"));
	bc_chunk_unref(a1);
	cr_assert_eq(T->usage(t), bc_chunk_charge(a2));
	/* The tier held the last reference to a2: freed and uncounted at
	 * once. */
	bc_chunk_unref(a2);
	cr_assert_eq(T->put(t, a3, &ctx0), 0);
	cr_assert_eq(T->usage(t), bc_chunk_charge(a3));
	cr_assert_eq(T->evictions(t), 0, "a replacement is no eviction");
	cr_assert_eq(stats(t).deleted, 2);
	bc_chunk_unref(a3);
	T->close(t);
}

/* Replacing a chunk makes room from the old one's bytes when the tier
 * held it alone, and no other chunk is evicted. */
LTest(tier, replace_uses_old_room)
{
	bc_tier_t *t = opn(8 * MiB, NULL, &bc_policy_lru);

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 3 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 4 * MiB), 0);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	cr_assert(has(t, "b", "B", "\"e\"", 0));
	cr_assert_eq(T->evictions(t), 0);
	T->close(t);
}

LTest(tier, closed_while_held)
{
	bc_tier_t          *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_tier_mem_acct_t *acct = bc_tier_mem_acct_ref(t);
	bc_chunk_t         *a, *b;

	cr_assert_eq(put_new(t, "b", "A", "\"e\"", 0, 1 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "B", "\"e\"", 0, 2 * MiB), 0);
	cr_assert_eq(put_new(t, "b", "C", "\"e\"", 0, 3 * MiB), 0);
	a = get(t, "b", "A", "\"e\"", 0);
	b = get(t, "b", "B", "\"e\"", 0);
	T->close(t);
	cr_assert_eq(bc_tier_mem_acct_bytes(acct),
	    bc_chunk_charge(a) + bc_chunk_charge(b));
	cr_assert(intact(a, "A"));
	cr_assert(intact(b, "B"));
	bc_chunk_unref(a);
	cr_assert_eq(bc_tier_mem_acct_bytes(acct), bc_chunk_charge(b));
	bc_chunk_unref(b);
	cr_assert_eq(bc_tier_mem_acct_bytes(acct), 0);
	bc_tier_mem_acct_unref(acct);
	bc_tier_mem_acct_unref(NULL);
}

/* A chunk dropped while held can go back into the same tier; it is
 * counted once. */
LTest(tier, reput_dropped_chunk)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a = mkc("b", "A", "\"e\"", 0, 1 * MiB);
	size_t      one = bc_chunk_charge(a);

	cr_assert_eq(T->put(t, a, &ctx0), 0);
	cr_assert_eq(del(t, "b", "A", "\"e\"", 0), 0);
	cr_assert_eq(T->usage(t), one);
	cr_assert_eq(T->put(t, a, &ctx0), 0);
	cr_assert_eq(T->usage(t), one);
	cr_assert_eq(stats(t).held_bytes, one);
	cr_assert(has(t, "b", "A", "\"e\"", 0));
	bc_chunk_unref(a);
	cr_assert_eq(T->usage(t), one);
	cr_assert_eq(del(t, "b", "A", "\"e\"", 0), 0);
	cr_assert_eq(T->usage(t), 0);
	T->close(t);
}

LTest(tier, put_twice_is_noop)
{
	bc_tier_t  *t = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a = mkc("b", "A", "\"e\"", 0, 1000);

	cr_assert_eq(T->put(t, a, &ctx0), 0);
	cr_assert_eq(T->put(t, a, &ctx0), 0);
	cr_assert_eq(atomic_load(&a->refs), 2);
	cr_assert_eq(T->usage(t), bc_chunk_charge(a));
	cr_assert_eq(stats(t).chunks, 1);
	bc_chunk_unref(a);
	T->close(t);
}

/* A chunk another memory tier accounts for is refused. */
LTest(tier, chunk_of_another_tier)
{
	bc_tier_t  *t1 = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_tier_t  *t2 = opn(8 * MiB, NULL, &bc_policy_lru);
	bc_chunk_t *a = mkc("b", "A", "\"e\"", 0, 1000);

	cr_assert_eq(T->put(t1, a, &ctx0), 0);
	cr_assert_eq(T->put(t2, a, &ctx0), BC_EEXIST);
	cr_assert_eq(del(t1, "b", "A", "\"e\"", 0), 0);
	cr_assert_eq(T->put(t2, a, &ctx0), BC_EEXIST);   /* still t1's bytes */
	cr_assert_eq(T->usage(t2), 0);
	cr_assert_eq(T->usage(t1), bc_chunk_charge(a));
	bc_chunk_unref(a);
	cr_assert_eq(T->usage(t1), 0);
	T->close(t1);
	T->close(t2);
}

/* Admits only entries charged less than a chunk of 1000 bytes named
 * b/small (the test's policy is LRU otherwise): a policy sees the charge
 * the tier set, not the chunk. */
static bool
small_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)ctx;
	cr_assert_gt(n->size, 0);   /* set by the tier before asking */
	return n->size < charge_of(1000, "b", "small", "\"e\"");
}

LTest(tier, policy_refuses)
{
	bc_policy_ops_t pol = bc_policy_lru;
	bc_tier_t      *t;

	pol.name = "small-only";
	pol.admit = small_admit;
	t = opn(8 * MiB, NULL, &pol);
	/* "large": a name as long as "small", so only len differs */
	cr_assert_eq(put_new(t, "b", "large", "\"e\"", 0, 1000), BC_E2BIG);
	cr_assert_eq(put_new(t, "b", "small", "\"e\"", 0, 999), 0);
	cr_assert_not(has(t, "b", "large", "\"e\"", 0));
	cr_assert(has(t, "b", "small", "\"e\"", 0));
	cr_assert_eq(stats(t).rejected, 1);
	T->close(t);
}

/* ---- tier: del_object ---------------------------------------------- */

struct obj {
	const char *bucket, *key, *etag;
	uint32_t    index;
};

static const struct obj objs[] = {
	{ "b",  "obj",        "\"e1\"", 0 },
	{ "b",  "obj",        "\"e1\"", 1 },
	{ "b",  "obj",        "\"e1\"", 2 },
	{ "b",  "obj",        "\"e2\"", 0 },
	{ "b",  "obj",        "\"e2\"", 7 },
	{ "b",  "obj2",       "\"e1\"", 0 },
	{ "b",  "ob",         "\"e1\"", 0 },
	{ "bb", "obj",        "\"e1\"", 0 },
	{ "",   "obj",        "\"e1\"", 0 },
	{ "b",  "data/a",     "\"e\"",  0 },
	{ "b",  "data/b",     "\"e\"",  3 },
	{ "b",  "data/sub/c", "\"e\"",  0 },
	{ "b",  "datb",       "\"e\"",  0 },
	{ "b",  "data",       "\"e\"",  0 },
	{ "b2", "data/x",     "\"e\"",  0 },
};
#define NOBJ (sizeof(objs) / sizeof(objs[0]))

struct delobj_case {
	const char *name;
	const char *bucket, *key, *prefix;
	const char *gone;    /* one char per objs[]: 1 dropped, 0 kept */
};

static const struct delobj_case delobjs[] = {
	{ "key, every ETag and index", "b", "obj", NULL, "111110000000000" },
	{ "key with prefix ignored",  "b", "obj", "zzz", "111110000000000" },
	{ "exact key only",           "b", "ob", NULL,   "000000100000000" },
	{ "other bucket",             "bb", "obj", NULL, "000000010000000" },
	{ "absent key",               "b", "nope", NULL, "000000000000000" },
	{ "absent bucket",            "c", "obj", NULL,  "000000000000000" },
	{ "prefix",                   "b", NULL, "data/", "000000000111000" },
	{ "prefix without slash",     "b", NULL, "data", "000000000111010" },
	{ "prefix ob",                "b", NULL, "ob",   "111111100000000" },
	{ "empty prefix: bucket",     "b", NULL, "",     "111111100111110" },
	{ "NULL prefix: bucket",      "b", NULL, NULL,   "111111100111110" },
	{ "empty bucket name",        "", NULL, NULL,    "000000001000000" },
};

LTest(tier, del_object_table)
{
	for (size_t ci = 0; ci < sizeof(delobjs) / sizeof(delobjs[0]); ci++) {
		const struct delobj_case *dc = &delobjs[ci];
		bc_tier_t *t = opn(8 * MiB, NULL, &bc_policy_lru);
		size_t     want = 0, n;
		uint64_t   left = 0;

		for (size_t i = 0; i < NOBJ; i++)
			cr_assert_eq(put_new(t, objs[i].bucket, objs[i].key,
			    objs[i].etag, objs[i].index, 100), 0);
		for (size_t i = 0; i < NOBJ; i++)
			want += dc->gone[i] == '1';
		n = T->del_object(t, dc->bucket, dc->key, dc->prefix);
		cr_expect_eq(n, want, "%s: dropped %zu, want %zu", dc->name,
		    n, want);
		for (size_t i = 0; i < NOBJ; i++) {
			bool kept = has(t, objs[i].bucket, objs[i].key,
			    objs[i].etag, objs[i].index);

			cr_expect_eq(kept, dc->gone[i] == '0',
			    "%s: %s/%s %s #%u %s", dc->name, objs[i].bucket,
			    objs[i].key, objs[i].etag, objs[i].index,
			    kept ? "kept" : "dropped");
			if (kept)
				left += charge_of(100, objs[i].bucket,
				    objs[i].key, objs[i].etag);
		}
		cr_expect_eq(T->usage(t), left, "%s", dc->name);
		cr_expect_eq(stats(t).deleted, want, "%s", dc->name);
		T->close(t);
	}
}

/* ---- tier: table growth and big deletes ---------------------------- */

LTest(tier, many_keys_and_deletes)
{
	const int  n = 6000;
	bc_tier_t *t = opn(1ull << 40, NULL, &bc_policy_lru);
	char       key[32];
	size_t     dropped;

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/%d", i % 2 ? "q" : "p", i);
		cr_assert_eq(put_new(t, "b", key, "\"e\"", (uint32_t)i % 5,
		    16), 0);
	}
	cr_assert_eq(stats(t).chunks, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/%d", i % 2 ? "q" : "p", i);
		cr_assert(has(t, "b", key, "\"e\"", (uint32_t)i % 5), "%s",
		    key);
	}
	/* Every third by del. */
	for (int i = 0; i < n; i += 3) {
		snprintf(key, sizeof(key), "%s/%d", i % 2 ? "q" : "p", i);
		cr_assert_eq(del(t, "b", key, "\"e\"", (uint32_t)i % 5), 0);
	}
	/* The rest of p/ by prefix: one pass over a table with holes. */
	dropped = T->del_object(t, "b", NULL, "p/");
	cr_assert_eq(dropped, (size_t)(n / 2 - n / 6));
	for (int i = 0; i < n; i++) {
		bool want = i % 2 == 1 && i % 3 != 0;

		snprintf(key, sizeof(key), "%s/%d", i % 2 ? "q" : "p", i);
		cr_assert_eq(has(t, "b", key, "\"e\"", (uint32_t)i % 5), want,
		    "%s", key);
	}
	cr_assert_eq(stats(t).chunks, (uint64_t)(n / 2 - n / 6));
	cr_assert_eq(T->del_object(t, "b", NULL, NULL),
	    (size_t)(n / 2 - n / 6));
	cr_assert_eq(T->usage(t), 0);
	cr_assert_eq(stats(t).chunks, 0);
	T->close(t);
}

/* ---- tier: threads ------------------------------------------------- */

#define NTHREADS 4
#define NKEYS    48
#define NHOLD    2

struct worker {
	bc_tier_t       *t;
	unsigned         seed;
	int              ops;
	_Atomic int     *over;     /* usage seen above capacity */
	_Atomic int     *bad;      /* wrong bytes or key on a hit */
	bc_chunk_t      *hold[NHOLD];   /* still referenced at the end */
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	char           key[16];
	int            h = 0;

	for (int i = 0; i < w->ops; i++) {
		int            r = rand_r(&w->seed) % 100;
		uint32_t       idx = (uint32_t)(rand_r(&w->seed) % 3);
		bc_chunk_key_t k;
		bc_chunk_t    *got;

		snprintf(key, sizeof(key), "k%d", rand_r(&w->seed) % NKEYS);
		k = (bc_chunk_key_t){ "b", key, "\"e\"", idx };
		if (r < 50) {
			got = T->lookup(w->t, &k, &ctx0);
			if (got != NULL) {
				if (!bc_chunk_matches(got, &k) ||
				    !intact(got, key))
					atomic_fetch_add(w->bad, 1);
				/* keep a few in use for a while */
				bc_chunk_unref(w->hold[h]);
				w->hold[h] = got;
				h = (h + 1) % NHOLD;
			}
		} else if (r < 85) {
			size_t      len = 512 + (size_t)(rand_r(&w->seed) %
			    (16 * KiB));
			bc_chunk_t *c = mkc("b", key, "\"e\"", idx, len);
			int         rv = T->put(w->t, c, &ctx0);

			if (rv != 0 && rv != BC_E2BIG)
				atomic_fetch_add(w->bad, 1);
			bc_chunk_unref(c);
		} else if (r < 98) {
			int rv = T->del(w->t, &k);

			if (rv != 0 && rv != BC_ENOENT)
				atomic_fetch_add(w->bad, 1);
		} else {
			T->del_object(w->t, "b", key, NULL);
		}
		if (T->usage(w->t) > T->capacity(w->t))
			atomic_fetch_add(w->over, 1);
	}
	return NULL;
}

LTest(tier, threads)
{
	const uint64_t      cap = 256 * KiB;
	bc_tier_t          *t = opn(cap, NULL, &bc_policy_lru);
	bc_tier_mem_acct_t *acct = bc_tier_mem_acct_ref(t);
	_Atomic int         over = 0, bad = 0;
	struct worker       w[NTHREADS];
	pthread_t           th[NTHREADS];
	bc_tier_mem_stats_t s;

	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].t = t;
		w[i].seed = 1000u + (unsigned)i;
		w[i].ops = 30000;
		w[i].over = &over;
		w[i].bad = &bad;
		cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	cr_assert_eq(atomic_load(&bad), 0);
	cr_assert_eq(atomic_load(&over), 0);
	s = stats(t);
	cr_assert_leq(s.usage, cap);
	cr_assert_gt(s.evictions, 0, "the test should have made it evict");
	cr_assert_gt(s.hits, 0);
	cr_assert_geq(s.bytes, s.held_bytes);
	T->close(t);
	for (int i = 0; i < NTHREADS; i++)
		for (int j = 0; j < NHOLD; j++)
			bc_chunk_unref(w[i].hold[j]);
	cr_assert_eq(bc_tier_mem_acct_bytes(acct), 0);
	bc_tier_mem_acct_unref(acct);
}
