/*
 * tier_async.h — a test-only asynchronous tier (not in src/): chunk bytes
 * copied into its own entries, in memory, ordered by a policy, answering
 * get() through bc_loop_call() as a disk or Redis tier would. It proves
 * the conformance suite's asynchronous path and stands for the lower
 * tiers in the chain's tests, with faults the tests switch on.
 *
 * It keeps object metadata too (meta_put/meta_get: a list of blobs, not
 * bounded by the capacity; del_object drops them with the chunks).
 *
 * A hit returns a new chunk made from the stored copy (never the chunk
 * that was put), so it may go into a memory tier. Thread-safe; opts.loop
 * is required.
 */
#ifndef BC_TEST_TIER_ASYNC_H
#define BC_TEST_TIER_ASYNC_H

#include <stdatomic.h>
#include <stdint.h>

#include "tier/tier.h"

extern const bc_tier_ops_t bc_tier_async;

/* What a test switches and reads; all zero at open. */
typedef struct bc_tier_async_ctl_s {
	_Atomic int      get_rv;       /* nonzero: get(), meta_get() return it */
	_Atomic int      get_status;   /* nonzero: their callbacks get it */
	_Atomic int      put_rv;       /* nonzero: put(), meta_put() return it */
	_Atomic int      health;       /* the health op's answer */
	_Atomic uint64_t gets, puts, dels;   /* calls received */
	_Atomic uint64_t meta_gets, meta_puts;
} bc_tier_async_ctl_t;

/* t's controls; t must come from bc_tier_async.open. */
bc_tier_async_ctl_t *bc_tier_async_ctl(bc_tier_t *t);

#endif
