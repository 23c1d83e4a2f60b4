/*
 * util_heap.c — the binary min-heap of util_heap.h: children of slot i at
 * 2i+1 and 2i+2, the array doubled when full (from MIN_CAP) and kept
 * until bc_heap_fini. Every slot an item moves to is reported through
 * set_index. Not thread-safe (util_heap.h).
 */
#include <stdlib.h>

#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_heap.h"

#define MIN_CAP 16

static void
place(bc_heap_t *h, size_t i, void *item)
{
	h->items[i] = item;
	if (h->set_index != NULL)
		h->set_index(item, i);
}

/* Moves the item at i towards the root while it is less than its
 * parent. Returns where it stopped. */
static size_t
sift_up(bc_heap_t *h, size_t i)
{
	void  *item = h->items[i];
	size_t parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (!h->less(item, h->items[parent]))
			break;
		place(h, i, h->items[parent]);
		i = parent;
	}
	place(h, i, item);
	return i;
}

/* Moves the item at i towards the leaves while a child is less. */
static void
sift_down(bc_heap_t *h, size_t i)
{
	void  *item = h->items[i];
	size_t child;

	for (;;) {
		child = 2 * i + 1;
		if (child >= h->len)
			break;
		if (child + 1 < h->len &&
		    h->less(h->items[child + 1], h->items[child]))
			child++;
		if (!h->less(h->items[child], item))
			break;
		place(h, i, h->items[child]);
		i = child;
	}
	place(h, i, item);
}

void
bc_heap_init(bc_heap_t *h, bc_heap_less_fn less, bc_heap_index_fn set_index)
{
	BC_CHECK(less != NULL);
	h->items = NULL;
	h->len = 0;
	h->cap = 0;
	h->less = less;
	h->set_index = set_index;
}

void
bc_heap_fini(bc_heap_t *h)
{
	free(h->items);
	h->items = NULL;
	h->len = 0;
	h->cap = 0;
}

int
bc_heap_reserve(bc_heap_t *h, size_t n)
{
	void **ni;
	size_t ncap = h->cap == 0 ? MIN_CAP : h->cap;

	if (n <= h->cap)
		return 0;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2 / sizeof(*ni))
			return BC_ENOMEM;
		ncap *= 2;
	}
	ni = realloc(h->items, ncap * sizeof(*ni));
	if (ni == NULL)
		return BC_ENOMEM;
	h->items = ni;
	h->cap = ncap;
	return 0;
}

int
bc_heap_push(bc_heap_t *h, void *item)
{
	void **ni;
	size_t ncap;

	if (h->len == h->cap) {
		ncap = h->cap == 0 ? MIN_CAP : h->cap * 2;
		if (ncap < h->cap || ncap > SIZE_MAX / sizeof(*ni))
			return BC_ENOMEM;
		ni = realloc(h->items, ncap * sizeof(*ni));
		if (ni == NULL)
			return BC_ENOMEM;
		h->items = ni;
		h->cap = ncap;
	}
	h->items[h->len] = item;
	sift_up(h, h->len++);
	return 0;
}

void *
bc_heap_peek(const bc_heap_t *h)
{
	return h->len == 0 ? NULL : h->items[0];
}

void *
bc_heap_pop(bc_heap_t *h)
{
	return h->len == 0 ? NULL : bc_heap_remove(h, 0);
}

void *
bc_heap_remove(bc_heap_t *h, size_t idx)
{
	void *item;

	BC_CHECK(idx < h->len);
	item = h->items[idx];
	h->len--;
	if (idx < h->len) {
		h->items[idx] = h->items[h->len];
		bc_heap_update(h, idx);
	}
	if (h->set_index != NULL)
		h->set_index(item, BC_HEAP_NONE);
	return item;
}

void
bc_heap_update(bc_heap_t *h, size_t idx)
{
	BC_CHECK(idx < h->len);
	if (sift_up(h, idx) == idx)
		sift_down(h, idx);
}

size_t
bc_heap_len(const bc_heap_t *h)
{
	return h->len;
}
