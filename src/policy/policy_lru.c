/*
 * policy_lru.c — least recently used eviction, admit everything.
 *
 * An intrusive doubly-linked list through the nodes' prev/next, most
 * recently inserted or hit at the head; victims come from the tail. Every
 * op is O(1) except choose_victim, which walks past skipped nodes. Called
 * with the owning tier's lock held (policy.h); the list holds no
 * references: the tier removes an entry (on_remove) before dropping it.
 * Context and targets are ignored: recency is all it knows.
 */
#include <assert.h>
#include <stdlib.h>

#include "policy/policy.h"

struct bc_policy_s {
	bc_policy_node_t *head;       /* most recent */
	bc_policy_node_t *tail;       /* least recent: the next victim */
	size_t            n;
};

static bc_policy_t *
lru_new(const bc_policy_opts_t *o)
{
	(void)o;
	return calloc(1, sizeof(bc_policy_t));
}

static void
lru_free(bc_policy_t *p)
{
	free(p);
}

static bool
lru_admit(bc_policy_t *p, const bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)p;
	(void)n;
	(void)ctx;
	return true;
}

static void
push_head(bc_policy_t *p, bc_policy_node_t *n)
{
	n->prev = NULL;
	n->next = p->head;
	if (p->head != NULL)
		p->head->prev = n;
	else
		p->tail = n;
	p->head = n;
}

static void
unlink_node(bc_policy_t *p, bc_policy_node_t *n)
{
	if (n->prev != NULL)
		n->prev->next = n->next;
	else
		p->head = n->next;
	if (n->next != NULL)
		n->next->prev = n->prev;
	else
		p->tail = n->prev;
	n->prev = NULL;
	n->next = NULL;
}

static void
lru_on_insert(bc_policy_t *p, bc_policy_node_t *n,
    const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	push_head(p, n);
	p->n++;
}

static void
lru_on_hit(bc_policy_t *p, bc_policy_node_t *n, const bc_policy_ctx_t *ctx)
{
	(void)ctx;
	assert(p->n > 0);
	if (p->head == n)
		return;
	unlink_node(p, n);
	push_head(p, n);
}

static void
lru_on_remove(bc_policy_t *p, bc_policy_node_t *n)
{
	assert(p->n > 0);
	assert(n->prev != NULL || p->head == n);
	unlink_node(p, n);
	p->n--;
}

static bc_policy_node_t *
lru_choose_victim(bc_policy_t *p,
    bool (*skip)(void *arg, const bc_policy_node_t *n), void *arg)
{
	for (bc_policy_node_t *n = p->tail; n != NULL; n = n->prev)
		if (skip == NULL || !skip(arg, n))
			return n;
	return NULL;
}

static void
lru_set_target(bc_policy_t *p, const char *dataset, uint64_t bytes)
{
	(void)p;
	(void)dataset;
	(void)bytes;
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
	.set_target = lru_set_target,
};
