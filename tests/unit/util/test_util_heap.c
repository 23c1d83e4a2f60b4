/*
 * test_util_heap.c — util/util_heap.c: empty heap, order on a random
 * sequence of pushes and pops checked against a sorted reference
 * (duplicates included), removal by the index set_index reported,
 * re-keying with bc_heap_update (up and down), growth past the first
 * array, and the index bookkeeping (every item's index names its slot;
 * BC_HEAP_NONE once out).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "util/util_error.h"
#include "util/util_heap.h"

#define N 2000

typedef struct item_s {
	int    key;
	size_t idx;
} item_t;

static bool
less(const void *a, const void *b)
{
	return ((const item_t *)a)->key < ((const item_t *)b)->key;
}

static void
set_index(void *item, size_t idx)
{
	((item_t *)item)->idx = idx;
}

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The heap property and the index of every item. */
static void
check_heap(const bc_heap_t *h)
{
	for (size_t i = 0; i < bc_heap_len(h); i++) {
		const item_t *it = h->items[i];

		cr_assert_eq(it->idx, i, "item in slot %zu says %zu", i, it->idx);
		if (i > 0)
			cr_assert_not(less(it, h->items[(i - 1) / 2]),
			    "slot %zu is less than its parent", i);
	}
}

/* Sorted reference: remove one occurrence of key. */
static void
ref_del(int *ref, size_t *n, int key)
{
	for (size_t i = 0; i < *n; i++)
		if (ref[i] == key) {
			memmove(&ref[i], &ref[i + 1],
			    (*n - i - 1) * sizeof(*ref));
			(*n)--;
			return;
		}
	cr_assert_fail("key %d not in the reference", key);
}

static void
ref_add(int *ref, size_t *n, int key)
{
	ref[(*n)++] = key;
	qsort(ref, *n, sizeof(*ref), cmp_int);
}

LTest(heap, empty)
{
	bc_heap_t h;

	bc_heap_init(&h, less, NULL);
	cr_assert_eq(bc_heap_len(&h), 0);
	cr_assert_null(bc_heap_peek(&h));
	cr_assert_null(bc_heap_pop(&h));
	bc_heap_fini(&h);
	bc_heap_fini(&h);       /* twice is harmless */
}

/* Without set_index: pushes all, pops all in order. */
LTest(heap, heapsort_without_index)
{
	static item_t it[N];
	static int ref[N];
	bc_heap_t h;

	srand(1);
	bc_heap_init(&h, less, NULL);
	for (size_t i = 0; i < N; i++) {
		it[i].key = rand() % 500;      /* many duplicates */
		ref[i] = it[i].key;
		cr_assert_eq(bc_heap_push(&h, &it[i]), 0);
	}
	qsort(ref, N, sizeof(*ref), cmp_int);
	for (size_t i = 0; i < N; i++) {
		item_t *p = bc_heap_peek(&h);

		cr_assert_eq(bc_heap_pop(&h), p);
		cr_assert_eq(p->key, ref[i], "pop %zu", i);
	}
	cr_assert_eq(bc_heap_len(&h), 0);
	cr_assert_null(bc_heap_pop(&h));
	bc_heap_fini(&h);
}

/* Random pushes, pops, removals by index and re-keys against a sorted
 * array. */
LTest(heap, random_against_sorted_reference)
{
	static item_t it[N];
	static int ref[N];
	item_t *in[N];          /* items now in the heap */
	size_t nin = 0, nref = 0, next = 0;
	bc_heap_t h;

	srand(42);
	bc_heap_init(&h, less, set_index);
	for (int step = 0; step < 20000; step++) {
		int op = rand() % 10;

		if (nin == 0 || (op < 4 && next < N)) {
			if (next == N)
				break;
			item_t *p = &it[next++];

			p->key = rand() % 1000 - 500;
			p->idx = 12345;
			cr_assert_eq(bc_heap_push(&h, p), 0);
			cr_assert_lt(p->idx, bc_heap_len(&h));
			in[nin++] = p;
			ref_add(ref, &nref, p->key);
		} else if (op < 6) {
			item_t *p = bc_heap_pop(&h);

			cr_assert_not_null(p);
			cr_assert_eq(p->key, ref[0], "step %d", step);
			cr_assert_eq(p->idx, BC_HEAP_NONE);
			ref_del(ref, &nref, p->key);
			for (size_t i = 0; i < nin; i++)
				if (in[i] == p) {
					in[i] = in[--nin];
					break;
				}
		} else if (op < 8) {
			size_t k = (size_t)rand() % nin;
			item_t *p = in[k];

			cr_assert_eq(bc_heap_remove(&h, p->idx), p);
			cr_assert_eq(p->idx, BC_HEAP_NONE);
			ref_del(ref, &nref, p->key);
			in[k] = in[--nin];
		} else {
			item_t *p = in[(size_t)rand() % nin];

			ref_del(ref, &nref, p->key);
			p->key = rand() % 1000 - 500;
			ref_add(ref, &nref, p->key);
			bc_heap_update(&h, p->idx);
		}
		cr_assert_eq(bc_heap_len(&h), nref);
		cr_assert_eq(nin, nref);
		if (nref > 0)
			cr_assert_eq(((item_t *)bc_heap_peek(&h))->key, ref[0]);
		if (step % 97 == 0)
			check_heap(&h);
	}
	check_heap(&h);
	while (nref > 0) {
		item_t *p = bc_heap_pop(&h);

		cr_assert_eq(p->key, ref[0]);
		ref_del(ref, &nref, p->key);
	}
	cr_assert_null(bc_heap_pop(&h));
	bc_heap_fini(&h);
}

/* Removal of the last slot, the root and a middle slot by index. */
LTest(heap, remove_by_index)
{
	item_t it[7], *last;
	bc_heap_t h;
	int keys[] = { 5, 3, 8, 1, 9, 2, 7 };

	bc_heap_init(&h, less, set_index);
	for (size_t i = 0; i < 7; i++) {
		it[i].key = keys[i];
		cr_assert_eq(bc_heap_push(&h, &it[i]), 0);
	}
	check_heap(&h);
	last = h.items[h.len - 1];
	cr_assert_neq(last, &it[3]);
	cr_assert_neq(last, &it[4]);
	cr_assert_eq(bc_heap_remove(&h, h.len - 1), last);
	cr_assert_eq(last->idx, BC_HEAP_NONE);
	check_heap(&h);
	cr_assert_eq(bc_heap_remove(&h, it[3].idx), &it[3]);   /* key 1, root */
	check_heap(&h);
	cr_assert_eq(((item_t *)bc_heap_peek(&h))->key, 2);
	cr_assert_eq(bc_heap_remove(&h, it[4].idx), &it[4]);   /* key 9 */
	check_heap(&h);
	cr_assert_eq(it[4].idx, BC_HEAP_NONE);
	while (bc_heap_len(&h) > 0) {
		item_t *p = bc_heap_pop(&h);

		cr_assert_neq(p, &it[3]);
		cr_assert_neq(p, &it[4]);
		cr_assert_neq(p, last);
	}
	bc_heap_fini(&h);
}

/* A key that grows moves down, one that shrinks moves up to the root. */
LTest(heap, update_both_ways)
{
	item_t it[10];
	bc_heap_t h;

	bc_heap_init(&h, less, set_index);
	for (int i = 0; i < 10; i++) {
		it[i].key = i * 10;
		cr_assert_eq(bc_heap_push(&h, &it[i]), 0);
	}
	cr_assert_eq(bc_heap_peek(&h), &it[0]);
	it[0].key = 1000;
	bc_heap_update(&h, it[0].idx);
	check_heap(&h);
	cr_assert_eq(bc_heap_peek(&h), &it[1]);
	it[9].key = -1;
	bc_heap_update(&h, it[9].idx);
	check_heap(&h);
	cr_assert_eq(bc_heap_peek(&h), &it[9]);
	it[5].key = 55;           /* between 50 and 60: stays put */
	bc_heap_update(&h, it[5].idx);
	check_heap(&h);
	int want[] = { -1, 10, 20, 30, 40, 55, 60, 70, 80, 1000 };
	for (size_t i = 0; i < 10; i++)
		cr_assert_eq(((item_t *)bc_heap_pop(&h))->key, want[i]);
	bc_heap_fini(&h);
}
