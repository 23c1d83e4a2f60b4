/*
 * util_heap.h — a binary min-heap of caller's items (void *) over a
 * growable array, ordered by the caller's less().
 *
 * An item that must be removed or re-keyed while inside (a timer
 * cancelled, a score changed) learns its position through set_index: the
 * heap calls set_index(item, i) whenever the item lands in slot i (push,
 * and every move), and set_index(item, BC_HEAP_NONE) when it leaves (pop,
 * remove). Keep that index in the item and hand it to bc_heap_remove or
 * bc_heap_update: both are O(log n).
 *
 * The heap owns only its array; items stay the caller's. No locking: the
 * owner serialises access. less() and set_index() must not call back into
 * the heap.
 */
#ifndef BC_UTIL_HEAP_H
#define BC_UTIL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_HEAP_NONE SIZE_MAX     /* the index of an item in no heap */

/* Whether a must come out before b (a strict weak order). */
typedef bool (*bc_heap_less_fn)(const void *a, const void *b);
/* Tells item it is now at idx (BC_HEAP_NONE: no longer in the heap). */
typedef void (*bc_heap_index_fn)(void *item, size_t idx);

typedef struct bc_heap_s {
	void           **items;       /* items[0] is the least */
	size_t           len, cap;
	bc_heap_less_fn  less;
	bc_heap_index_fn set_index;   /* may be NULL */
} bc_heap_t;

/* An empty heap; allocates nothing. set_index may be NULL. */
void   bc_heap_init(bc_heap_t *h, bc_heap_less_fn less,
    bc_heap_index_fn set_index);
/* Frees the array (not the items, which set_index is not told about);
 * h is then empty and may be used again. */
void   bc_heap_fini(bc_heap_t *h);
/* Adds item. Returns 0, or BC_ENOMEM and then h is unchanged. */
int    bc_heap_push(bc_heap_t *h, void *item);
/* Grows the array to hold at least n items, so that pushes up to n
 * cannot fail. Returns 0, or BC_ENOMEM and then h is unchanged. */
int    bc_heap_reserve(bc_heap_t *h, size_t n);
/* The least item, left in place; NULL when empty. */
void  *bc_heap_peek(const bc_heap_t *h);
/* Takes out and returns the least item; NULL when empty. */
void  *bc_heap_pop(bc_heap_t *h);
/* Takes out and returns the item at idx (< bc_heap_len). */
void  *bc_heap_remove(bc_heap_t *h, size_t idx);
/* Restores the order after the key of the item at idx (< bc_heap_len)
 * changed, up or down. */
void   bc_heap_update(bc_heap_t *h, size_t idx);
size_t bc_heap_len(const bc_heap_t *h);

#endif
