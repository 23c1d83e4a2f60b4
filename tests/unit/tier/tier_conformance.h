/*
 * tier_conformance.h — the suite every tier must pass (tier_conformance.c).
 *
 * A tier's test program is tier_conformance.c plus one small file that
 * defines bc_conformance: how to open a fresh, empty tier of a capacity,
 * ordered by a given policy, and how to close it and remove what it made
 * (files, Redis keys); and the policy the tier runs the suite with (one
 * program per policy). The suite asserts the tier's contract (tier.h),
 * which holds under any policy: a put may be refused (BC_E2BIG) when the
 * policy does not admit, and what goes when room is made is the policy's
 * choice; the order itself is checked with policies the suite brings. Everything else goes through the tier's ops only:
 * get/put/del, del_object, the capacity bound, eviction in the policy's
 * order, chunks still referenced while evicted, the policy's context
 * passed on, concurrent use from several threads.
 *
 * Look-ups go through conformance_get(): lookup() for a SYNC tier; for
 * the others get(), made on the loop thread (as the chain makes it), or
 * from the caller's thread in the concurrent test, waiting for the
 * callback and checking that it fired once, on the loop thread, never
 * before get() returned, and never after get() returned an error.
 *
 * Each test runs a loop (loop/loop.h) while a tier is open and hands
 * it to open(); SYNC tiers ignore it.
 */
#ifndef BC_TIER_CONFORMANCE_H
#define BC_TIER_CONFORMANCE_H

#include <stdint.h>

#include "policy/policy.h"
#include "tier/tier.h"
#include "loop/loop.h"

typedef struct bc_conformance_s {
	const bc_tier_ops_t *ops;
	/* The policy a test that asks for none gets (NULL: the tier's own
	 * default). */
	const bc_policy_ops_t *policy;
	/* A fresh, empty tier of capacity bytes ordered by pol, calling
	 * back on loop; asserts (Criterion) on failure. A tier that connects
	 * in the background is returned up, with nothing of its own left to
	 * change its health (the health test sets it by hand). */
	bc_tier_t *(*open)(uint64_t capacity, const bc_policy_ops_t *pol,
	    bc_loop_t *loop);
	/* Closes t and removes what open made. */
	void       (*close)(bc_tier_t *t);
} bc_conformance_t;

/* Defined by each tier's conformance file. */
extern const bc_conformance_t bc_conformance;

#endif
