/*
 * policy_lru.c — least recently used eviction, admit everything.
 *
 * An intrusive doubly-linked list through c->pol_prev/pol_next, most
 * recently inserted or hit at the head; victims come from the tail. Every
 * op is O(1) except choose_victim, which walks past skipped chunks. Called
 * with the owning tier's lock held (policy.h); the list holds no
 * references: the tier removes a chunk (on_remove) before dropping it.
 */
#include <assert.h>
#include <stdlib.h>

#include "policy/policy.h"

struct bc_policy_s {
	bc_chunk_t *head;       /* most recent */
	bc_chunk_t *tail;       /* least recent: the next victim */
	size_t      n;
};

static bc_policy_t *
lru_new(void)
{
	return calloc(1, sizeof(bc_policy_t));
}

static void
lru_free(bc_policy_t *p)
{
	free(p);
}

static bool
lru_admit(bc_policy_t *p, const bc_chunk_t *c)
{
	(void)p;
	(void)c;
	return true;
}

static void
push_head(bc_policy_t *p, bc_chunk_t *c)
{
	c->pol_prev = NULL;
	c->pol_next = p->head;
	if (p->head != NULL)
		p->head->pol_prev = c;
	else
		p->tail = c;
	p->head = c;
}

static void
unlink_chunk(bc_policy_t *p, bc_chunk_t *c)
{
	if (c->pol_prev != NULL)
		c->pol_prev->pol_next = c->pol_next;
	else
		p->head = c->pol_next;
	if (c->pol_next != NULL)
		c->pol_next->pol_prev = c->pol_prev;
	else
		p->tail = c->pol_prev;
	c->pol_prev = NULL;
	c->pol_next = NULL;
}

static void
lru_on_insert(bc_policy_t *p, bc_chunk_t *c)
{
	push_head(p, c);
	p->n++;
}

static void
lru_on_hit(bc_policy_t *p, bc_chunk_t *c)
{
	assert(p->n > 0);
	if (p->head == c)
		return;
	unlink_chunk(p, c);
	push_head(p, c);
}

static void
lru_on_remove(bc_policy_t *p, bc_chunk_t *c)
{
	assert(p->n > 0);
	assert(c->pol_prev != NULL || p->head == c);
	unlink_chunk(p, c);
	p->n--;
}

static bc_chunk_t *
lru_choose_victim(bc_policy_t *p, bool (*skip)(void *arg, const bc_chunk_t *c),
    void *arg)
{
	for (bc_chunk_t *c = p->tail; c != NULL; c = c->pol_prev)
		if (skip == NULL || !skip(arg, c))
			return c;
	return NULL;
}

const bc_policy_ops_t bc_policy_lru = {
	.name = "lru",
	.new = lru_new,
	.free = lru_free,
	.admit = lru_admit,
	.on_insert = lru_on_insert,
	.on_hit = lru_on_hit,
	.on_remove = lru_on_remove,
	.choose_victim = lru_choose_victim,
};
