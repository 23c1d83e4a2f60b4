/*
 * util_list.h — an intrusive doubly-linked circular list (as in the Linux
 * kernel's list.h and libuv's queue.h).
 *
 * A list is a bc_list_t head; each member embeds a bc_list_t and is mapped
 * back to its struct with BC_CONTAINER_OF. The head of an empty list
 * points at itself, and so does a node bc_list_remove took out: removing
 * such a node again is harmless. A zeroed bc_list_t is neither: call
 * bc_list_init on a head before use (a node is set by insertion).
 *
 * No locking, no allocation: the owner of the list serialises access.
 */
#ifndef BC_UTIL_LIST_H
#define BC_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bc_list_s bc_list_t;

struct bc_list_s {
	bc_list_t *prev, *next;
};

/* The struct of type T whose member M is at ptr. */
#define BC_CONTAINER_OF(ptr, T, M) \
	((T *)(void *)((char *)(ptr) - offsetof(T, M)))

/* Makes l an empty list (or a node linked to nothing). */
static inline void
bc_list_init(bc_list_t *l)
{
	l->prev = l;
	l->next = l;
}

static inline bool
bc_list_empty(const bc_list_t *l)
{
	return l->next == l;
}

/* Puts n, which must be on no list, first in l. */
static inline void
bc_list_insert_head(bc_list_t *l, bc_list_t *n)
{
	n->prev = l;
	n->next = l->next;
	l->next->prev = n;
	l->next = n;
}

/* Puts n, which must be on no list, last in l. */
static inline void
bc_list_insert_tail(bc_list_t *l, bc_list_t *n)
{
	n->next = l;
	n->prev = l->prev;
	l->prev->next = n;
	l->prev = n;
}

/* Takes n out of its list and leaves it linked to itself. */
static inline void
bc_list_remove(bc_list_t *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	bc_list_init(n);
}

/* Moves every node of other, in order, to the end of l; other is left
 * empty. */
static inline void
bc_list_splice_tail(bc_list_t *l, bc_list_t *other)
{
	if (bc_list_empty(other))
		return;
	other->next->prev = l->prev;
	l->prev->next = other->next;
	other->prev->next = l;
	l->prev = other->prev;
	bc_list_init(other);
}

/* The first node of l, or NULL when l is empty. */
static inline bc_list_t *
bc_list_first(const bc_list_t *l)
{
	return bc_list_empty(l) ? NULL : l->next;
}

/* The last node of l, or NULL when l is empty. */
static inline bc_list_t *
bc_list_last(const bc_list_t *l)
{
	return bc_list_empty(l) ? NULL : l->prev;
}

/* Walks l head to tail with node (a bc_list_t *). The body must not
 * remove node: use BC_LIST_FOREACH_SAFE for that. */
#define BC_LIST_FOREACH(node, l) \
	for ((node) = (l)->next; (node) != (l); (node) = (node)->next)

/* Walks l tail to head; the body must not remove node. */
#define BC_LIST_FOREACH_REVERSE(node, l) \
	for ((node) = (l)->prev; (node) != (l); (node) = (node)->prev)

/* Walks l head to tail; the body may remove node (and only node). */
#define BC_LIST_FOREACH_SAFE(node, tmp, l)                              \
	for ((node) = (l)->next, (tmp) = (node)->next; (node) != (l);   \
	    (node) = (tmp), (tmp) = (node)->next)

#endif
