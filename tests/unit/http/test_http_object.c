/*
 * test_http_object.c — the object request's states (http_object.h): one
 * name and one kind per state from the one table (http_object_steps.h),
 * the names distinct, the kinds as the driver needs them, and which
 * states have answered with the object.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_object.h"

LTest(objreq, names_distinct)
{
	for (int i = 0; i < BC_OBJREQ__COUNT; i++) {
		const char *a = bc_objreq_state_name((bc_objreq_state_t)i);

		cr_assert_not_null(a);
		cr_assert_neq(strcmp(a, "?"), 0, "state %d unnamed", i);
		for (int j = 0; j < i; j++)
			cr_assert_neq(strcmp(a, bc_objreq_state_name(
			    (bc_objreq_state_t)j)), 0, "%s twice", a);
	}
	cr_assert_str_eq(bc_objreq_state_name(BC_OBJREQ_META), "meta");
	cr_assert_str_eq(bc_objreq_state_name(BC_OBJREQ_WAIT_LOOKUP),
	    "wait_lookup");
	cr_assert_str_eq(bc_objreq_state_name(BC_OBJREQ__COUNT), "?");
	cr_assert_str_eq(bc_objreq_state_name((bc_objreq_state_t)-1), "?");
}

LTest(objreq, kinds)
{
	/* a request starts in a state whose step runs */
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_META), BC_OBJREQ_RUN);
	/* each suspension resumes through a step */
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_WAIT_META),
	    BC_OBJREQ_WAIT);
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_WAIT_LOOKUP),
	    BC_OBJREQ_WAIT);
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_READ_WAIT),
	    BC_OBJREQ_WAIT);
	/* the ends park the driver */
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_DELIVERED),
	    BC_OBJREQ_END);
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_SENT), BC_OBJREQ_END);
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ_ERROR), BC_OBJREQ_END);
	cr_assert_eq(bc_objreq_state_kind(BC_OBJREQ__COUNT), BC_OBJREQ_END);
}

LTest(objreq, answered)
{
	int n = 0;

	for (int i = 0; i < BC_OBJREQ__COUNT; i++)
		if (bc_objreq_state_answered((bc_objreq_state_t)i)) {
			n++;
			/* nothing is answered before DELIVER has run */
			cr_assert_neq(bc_objreq_state_kind(
			    (bc_objreq_state_t)i), BC_OBJREQ_RUN, "%s",
			    bc_objreq_state_name((bc_objreq_state_t)i));
		}
	cr_assert_eq(n, 4);
	cr_assert(bc_objreq_state_answered(BC_OBJREQ_READ_WAIT));
	cr_assert_not(bc_objreq_state_answered(BC_OBJREQ_SENT));
	cr_assert_not(bc_objreq_state_answered(BC_OBJREQ_WAIT_LOOKUP));
}
