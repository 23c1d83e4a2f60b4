/*
 * test_util_htab.c — util/util_htab.c, the one hash table: members found
 * by hash and key through growth (from one bucket), several members under
 * one hash (colliding keys), removal while walking (every member, and the
 * members of one hash), a fixed table that never grows, and removal of a
 * member not in the table aborting.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "util/util_htab.h"
#include "util/util_list.h"

#define N 5000

typedef struct item_s {
	bc_hnode_t hn;
	char       key[16];
	int        seen;
} item_t;

static uint64_t
key_hash(const char *k)
{
	return bc_hash(BC_HASH_INIT, k, strlen(k));
}

static item_t *
find(const bc_htab_t *t, const char *k, uint64_t h)
{
	for (bc_hnode_t *n = bc_htab_first(t, h); n != NULL;
	    n = bc_htab_next(n)) {
		item_t *it = BC_CONTAINER_OF(n, item_t, hn);

		if (strcmp(it->key, k) == 0)
			return it;
	}
	return NULL;
}

LTest(htab, grows_and_finds)
{
	static item_t it[N];
	bc_htab_t t;
	bc_hnode_t *n, *tmp;
	size_t i, count = 0;

	cr_assert_eq(bc_htab_init(&t, 1, false), 0);
	for (i = 0; i < N; i++) {
		snprintf(it[i].key, sizeof(it[i].key), "k%zu", i);
		it[i].seen = 0;
		bc_htab_insert(&t, &it[i].hn, key_hash(it[i].key));
		cr_assert_eq(t.n, i + 1);
	}
	cr_expect_geq(t.nb, N / 2, "%zu buckets for %d", t.nb, N);
	cr_expect_eq(t.nb & (t.nb - 1), 0);
	for (i = 0; i < N; i++)
		cr_expect_eq(find(&t, it[i].key, key_hash(it[i].key)), &it[i]);
	cr_expect_null(find(&t, "absent", key_hash("absent")));
	BC_HTAB_FOREACH(&t, i, n, tmp) {
		BC_CONTAINER_OF(n, item_t, hn)->seen++;
		count++;
	}
	cr_expect_eq(count, N);
	for (i = 0; i < N; i++)
		cr_expect_eq(it[i].seen, 1, "%s", it[i].key);
	/* remove the odd ones while walking */
	BC_HTAB_FOREACH(&t, i, n, tmp) {
		item_t *x = BC_CONTAINER_OF(n, item_t, hn);

		if (atoi(x->key + 1) % 2 == 1)
			bc_htab_remove(&t, n);
	}
	cr_expect_eq(t.n, N / 2);
	for (i = 0; i < N; i++)
		cr_expect_eq(find(&t, it[i].key, key_hash(it[i].key)) != NULL,
		    i % 2 == 0, "%s", it[i].key);
	bc_htab_fini(&t);
	bc_htab_fini(&t);   /* twice is harmless */
}

LTest(htab, one_hash_many_members)
{
	item_t it[8];
	bc_htab_t t;
	bc_hnode_t *n, *tmp;
	unsigned seen = 0;

	cr_assert_eq(bc_htab_init(&t, 4, true), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(it[i].key, sizeof(it[i].key), "c%d", i);
		/* 0-3 share hash 7; 4-7 hash 7 + 4: the same bucket */
		bc_htab_insert(&t, &it[i].hn, i < 4 ? 7 : 11);
	}
	cr_expect_eq(t.nb, 4, "a fixed table does not grow");
	for (int i = 0; i < 8; i++)
		cr_expect_eq(find(&t, it[i].key, i < 4 ? 7 : 11), &it[i]);
	cr_expect_null(find(&t, "c5", 7));   /* right key, wrong hash */
	BC_HTAB_FOREACH_HASH(&t, 7, n, tmp) {
		item_t *x = BC_CONTAINER_OF(n, item_t, hn);

		seen |= 1u << (x->key[1] - '0');
		bc_htab_remove(&t, n);
	}
	cr_expect_eq(seen, 0x0f);
	cr_expect_eq(t.n, 4);
	cr_expect_null(bc_htab_first(&t, 7));
	for (int i = 4; i < 8; i++)
		cr_expect_eq(find(&t, it[i].key, 11), &it[i]);
	bc_htab_fini(&t);
}

Test(htab, remove_absent_aborts, .signal = SIGABRT)
{
	item_t a, b;
	bc_htab_t t;

	cr_assert_eq(bc_htab_init(&t, 8, false), 0);
	bc_htab_insert(&t, &a.hn, 1);
	b.hn.hash = 1;
	b.hn.next = NULL;
	bc_htab_remove(&t, &b.hn);
}
