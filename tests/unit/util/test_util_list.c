/*
 * test_util_list.c — util/util_list.h: an empty list, insertion at head
 * and tail, first/last, removal (head, middle, tail; a removed node is
 * self-linked and removing it again changes nothing), walks both ways,
 * removal during BC_LIST_FOREACH_SAFE, splicing, and BC_CONTAINER_OF. Each list is
 * checked whole: both directions agree and every link is mutual.
 */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "util/util_list.h"

typedef struct ent_s {
	char      name;
	int       pad[3];           /* the link is not the first member */
	bc_list_t link;
} ent_t;

static ent_t ents[8];

static void
setup(void)
{
	for (size_t i = 0; i < 8; i++) {
		ents[i].name = (char)('a' + i);
		ents[i].link.prev = ents[i].link.next = NULL;
	}
}

static ent_t *
E(char c)
{
	return &ents[c - 'a'];
}

static char
name_of(const bc_list_t *n)
{
	return BC_CONTAINER_OF(n, ent_t, link)->name;
}

/* Asserts l holds exactly want, head to tail, walked both ways. */
static void
check(const bc_list_t *l, const char *want)
{
	const bc_list_t *n;
	char got[16];
	size_t i = 0;

	for (n = l->next; n != l; n = n->next) {
		cr_assert_lt(i, sizeof(got) - 1, "list does not end");
		cr_assert_eq(n->next->prev, n, "links not mutual at %c",
		    name_of(n));
		got[i++] = name_of(n);
	}
	got[i] = '\0';
	cr_assert_str_eq(got, want);
	for (n = l->prev; n != l; n = n->prev) {
		cr_assert_gt(i, 0);
		cr_assert_eq(name_of(n), want[--i]);
	}
	cr_assert_eq(i, 0);
	cr_assert_eq(bc_list_empty(l), want[0] == '\0');
	if (want[0] == '\0') {
		cr_assert_null(bc_list_first(l));
		cr_assert_null(bc_list_last(l));
	} else {
		cr_assert_eq(bc_list_first(l), l->next);
		cr_assert_eq(bc_list_last(l), l->prev);
		cr_assert_eq(name_of(l->next), want[0]);
		cr_assert_eq(name_of(l->prev), want[strlen(want) - 1]);
	}
}

LTest(list, empty, .init = setup)
{
	bc_list_t l;

	bc_list_init(&l);
	check(&l, "");
	cr_assert_eq(l.next, &l);
	cr_assert_eq(l.prev, &l);
}

LTest(list, insert_head_and_tail, .init = setup)
{
	bc_list_t l;

	bc_list_init(&l);
	bc_list_insert_tail(&l, &E('b')->link);
	check(&l, "b");
	bc_list_insert_head(&l, &E('a')->link);
	check(&l, "ab");
	bc_list_insert_tail(&l, &E('c')->link);
	check(&l, "abc");
	bc_list_insert_head(&l, &E('d')->link);
	check(&l, "dabc");
}

LTest(list, remove_anywhere, .init = setup)
{
	bc_list_t l;

	bc_list_init(&l);
	for (char c = 'a'; c <= 'e'; c++)
		bc_list_insert_tail(&l, &E(c)->link);
	check(&l, "abcde");
	bc_list_remove(&E('c')->link);             /* middle */
	check(&l, "abde");
	cr_assert_eq(E('c')->link.next, &E('c')->link, "self-linked");
	cr_assert_eq(E('c')->link.prev, &E('c')->link, "self-linked");
	bc_list_remove(&E('c')->link);             /* again: no effect */
	check(&l, "abde");
	bc_list_remove(&E('a')->link);             /* head */
	check(&l, "bde");
	bc_list_remove(&E('e')->link);             /* tail */
	check(&l, "bd");
	bc_list_remove(&E('b')->link);
	bc_list_remove(&E('d')->link);
	check(&l, "");
	bc_list_insert_head(&l, &E('c')->link);    /* a removed node is reusable */
	check(&l, "c");
}

LTest(list, foreach_both_ways, .init = setup)
{
	bc_list_t l, *n;
	char got[8];
	size_t i = 0;

	bc_list_init(&l);
	BC_LIST_FOREACH(n, &l)
		cr_assert_fail("empty list walked");
	for (char c = 'a'; c <= 'd'; c++)
		bc_list_insert_tail(&l, &E(c)->link);
	BC_LIST_FOREACH(n, &l)
		got[i++] = name_of(n);
	got[i] = '\0';
	cr_assert_str_eq(got, "abcd");
	i = 0;
	BC_LIST_FOREACH_REVERSE(n, &l)
		got[i++] = name_of(n);
	got[i] = '\0';
	cr_assert_str_eq(got, "dcba");
}

/* Removing the current node, and moving it to another list, while
 * walking: every node is still visited once. */
LTest(list, foreach_safe_removes, .init = setup)
{
	bc_list_t l, other, *n, *tmp;
	char seen[8];
	size_t i = 0;

	bc_list_init(&l);
	bc_list_init(&other);
	for (char c = 'a'; c <= 'f'; c++)
		bc_list_insert_tail(&l, &E(c)->link);
	BC_LIST_FOREACH_SAFE(n, tmp, &l) {
		seen[i++] = name_of(n);
		if (strchr("ace", name_of(n)) != NULL)
			bc_list_remove(n);
		else if (name_of(n) == 'f') {
			bc_list_remove(n);
			bc_list_insert_head(&other, n);
		}
	}
	seen[i] = '\0';
	cr_assert_str_eq(seen, "abcdef");
	check(&l, "bd");
	check(&other, "f");
	BC_LIST_FOREACH_SAFE(n, tmp, &l)
		bc_list_remove(n);
	check(&l, "");
}

LTest(list, splice_tail, .init = setup)
{
	bc_list_t l, other;

	bc_list_init(&l);
	bc_list_init(&other);
	bc_list_splice_tail(&l, &other);           /* empty into empty */
	check(&l, "");
	check(&other, "");
	bc_list_insert_tail(&other, &E('a')->link);
	bc_list_insert_tail(&other, &E('b')->link);
	bc_list_splice_tail(&l, &other);           /* into empty */
	check(&l, "ab");
	check(&other, "");
	bc_list_splice_tail(&l, &other);           /* empty into some */
	check(&l, "ab");
	for (char c = 'c'; c <= 'e'; c++)
		bc_list_insert_tail(&other, &E(c)->link);
	bc_list_splice_tail(&l, &other);
	check(&l, "abcde");
	check(&other, "");
	bc_list_insert_head(&other, &E('f')->link);  /* other is reusable */
	check(&other, "f");
}

LTest(list, container_of)
{
	ent_t e;

	cr_assert_eq(BC_CONTAINER_OF(&e.link, ent_t, link), &e);
	cr_assert_neq(offsetof(ent_t, link), 0);
}
