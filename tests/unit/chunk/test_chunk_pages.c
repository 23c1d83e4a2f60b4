/*
 * test_chunk_pages.c — chunk/chunk_pages.c: a freed mapping is taken
 * again (the same pages, counted in chunk_pool_reused), best fit first,
 * trimmed when bigger and grown when smaller (its bytes kept, the new
 * tail writable); the pool stays within BC_CHUNK_PAGES_MAX bytes and
 * BC_CHUNK_PAGES_SLOTS mappings and its owner's bound (lowering it
 * trims the pool at once), its gauge says what it holds, and drain
 * empties it. Chunks made by bc_chunk_new_filling() recycle
 * through it.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "chunk/chunk.h"
#include "chunk/chunk_pages.h"
#include "stats/stats.h"

static size_t page;

static void
setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	bc_chunk_pages_set_max(BC_CHUNK_PAGES_MAX);
	bc_chunk_pages_drain();
}

TestSuite(chunk_pages, .init = setup, .fini = bc_chunk_pages_drain);

Test(chunk_pages, a_freed_mapping_is_taken_again)
{
	uint64_t reused = bc_stats_get(BC_STAT_chunk_pool_reused);
	uint8_t *a = bc_chunk_pages_get(64 * page, true), *b;
	size_t n;

	cr_assert_not_null(a);
	memset(a, 0xa5, 64 * page);
	bc_chunk_pages_put(a, 64 * page);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 64 * page);
	cr_assert_eq(n, 1);
	cr_assert_eq(bc_stats_get(BC_STAT_chunk_pool_bytes), 64 * page);
	b = bc_chunk_pages_get(64 * page, true);
	cr_assert_eq(b, a, "the same pages come back");
	cr_assert_eq(bc_stats_get(BC_STAT_chunk_pool_reused), reused + 1);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 0);
	cr_assert_eq(bc_stats_get(BC_STAT_chunk_pool_bytes), 0);
	bc_chunk_pages_put(b, 64 * page);
}

Test(chunk_pages, best_fit_then_trim_or_grow)
{
	uint8_t *s = bc_chunk_pages_get(16 * page, false);
	uint8_t *m = bc_chunk_pages_get(32 * page, false);
	uint8_t *l = bc_chunk_pages_get(128 * page, false), *got;
	size_t n;

	cr_assert(s != NULL && m != NULL && l != NULL);
	bc_chunk_pages_put(l, 128 * page);
	bc_chunk_pages_put(s, 16 * page);
	bc_chunk_pages_put(m, 32 * page);
	/* 20 pages: the smallest that holds them is m, trimmed to 20 */
	got = bc_chunk_pages_get(20 * page, false);
	cr_assert_eq(got, m);
	memset(got, 1, 20 * page);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 144 * page);
	cr_assert_eq(n, 2);
	bc_chunk_pages_put(got, 20 * page);
	/* 200 pages: none holds them; the largest (l) grows, its bytes
	 * kept */
	l = bc_chunk_pages_get(128 * page, false);
	memset(l, 0x5a, 128 * page);
	bc_chunk_pages_put(l, 128 * page);
	got = bc_chunk_pages_get(200 * page, true);
	cr_assert_not_null(got);
	for (size_t i = 0; i < 128 * page; i += page)
		cr_assert_eq(got[i], 0x5a);
	memset(got + 128 * page, 2, 72 * page);   /* the new tail writes */
	bc_chunk_pages_put(got, 200 * page);
}

Test(chunk_pages, bounded_in_bytes_and_slots)
{
	size_t big = BC_CHUNK_PAGES_MAX / 2 + page, n;
	uint8_t *a = bc_chunk_pages_get(big, false);
	uint8_t *b = bc_chunk_pages_get(big, false);
	uint8_t *v[BC_CHUNK_PAGES_SLOTS + 8];

	cr_assert(a != NULL && b != NULL);
	bc_chunk_pages_put(a, big);
	bc_chunk_pages_put(b, big);   /* past the byte bound: unmapped */
	cr_assert_eq(bc_chunk_pages_pooled(&n), big);
	cr_assert_eq(n, 1);
	bc_chunk_pages_drain();
	cr_assert_eq(bc_chunk_pages_pooled(&n), 0);
	for (size_t i = 0; i < BC_CHUNK_PAGES_SLOTS + 8; i++) {
		v[i] = bc_chunk_pages_get(page, false);
		cr_assert_not_null(v[i]);
	}
	for (size_t i = 0; i < BC_CHUNK_PAGES_SLOTS + 8; i++)
		bc_chunk_pages_put(v[i], page);
	cr_assert_eq(bc_chunk_pages_pooled(&n), BC_CHUNK_PAGES_SLOTS * page);
	cr_assert_eq(n, BC_CHUNK_PAGES_SLOTS);
	bc_chunk_pages_put(NULL, page);   /* a no-op */
}

Test(chunk_pages, chunks_recycle_through_the_pool)
{
	bc_chunk_key_t k = { "b", "k", "\"e\"", 0 };
	bc_chunk_t *c = bc_chunk_new_filling(&k, 256 * 1024);
	uint8_t *data;
	size_t n;

	cr_assert_not_null(c);
	cr_assert_gt(c->map_len, 0, "a mapping of its own");
	data = c->data;
	bc_chunk_unref(c);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 256 * 1024);
	c = bc_chunk_new_filling(&k, 256 * 1024);
	cr_assert_eq(c->data, data);
	bc_chunk_unref(c);
	/* small chunks are malloc'd: never pooled */
	bc_chunk_pages_drain();
	c = bc_chunk_new_filling(&k, 1000);
	cr_assert_eq(c->map_len, 0);
	bc_chunk_unref(c);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 0);
}

Test(chunk_pages, a_lower_bound_trims_the_pool)
{
	uint8_t *v[8];
	size_t n;

	for (int i = 0; i < 8; i++)
		v[i] = bc_chunk_pages_get(16 * page, false);
	for (int i = 0; i < 8; i++)
		bc_chunk_pages_put(v[i], 16 * page);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 128 * page);
	bc_chunk_pages_set_max(40 * page);   /* at most two fit now */
	cr_assert_eq(bc_chunk_pages_pooled(&n), 32 * page);
	cr_assert_eq(n, 2);
	cr_assert_eq(bc_stats_get(BC_STAT_chunk_pool_bytes), 32 * page);
	v[0] = bc_chunk_pages_get(16 * page, false);
	v[1] = bc_chunk_pages_get(16 * page, false);
	v[2] = bc_chunk_pages_get(16 * page, false);
	for (int i = 0; i < 3; i++)
		bc_chunk_pages_put(v[i], 16 * page);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 32 * page, "puts keep to it");
	bc_chunk_pages_set_max(0);
	cr_assert_eq(bc_chunk_pages_pooled(&n), 0);
	bc_chunk_pages_set_max(BC_CHUNK_PAGES_MAX);
}
