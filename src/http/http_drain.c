/*
 * http_drain.c — the graceful drain's state machine (see http_drain.h).
 * Pure: no clock, no I/O, no locks.
 */
#include <stddef.h>

#include "http/http_drain.h"
#include "util/util_assert.h"

void
bc_drain_init(bc_drain_t *d, uint64_t timeout_ns)
{
	d->state = BC_DRAIN_SERVING;
	d->end = BC_DRAIN_END_NONE;
	d->timeout_ns = timeout_ns;
	d->start_ns = d->deadline_ns = d->end_ns = 0;
}

static bc_drain_state_t
done(bc_drain_t *d, bc_drain_end_t end, uint64_t now_ns)
{
	d->state = BC_DRAIN_DONE;
	d->end = end;
	d->end_ns = now_ns;
	return d->state;
}

bc_drain_state_t
bc_drain_signal(bc_drain_t *d, uint64_t now_ns)
{
	switch (d->state) {
	case BC_DRAIN_SERVING:
		d->start_ns = now_ns;
		if (d->timeout_ns == 0)
			return done(d, BC_DRAIN_END_OFF, now_ns);
		d->deadline_ns = now_ns + d->timeout_ns < now_ns ? UINT64_MAX :
		    now_ns + d->timeout_ns;
		d->state = BC_DRAIN_DRAINING;
		return d->state;
	case BC_DRAIN_DRAINING:
		return done(d, BC_DRAIN_END_SIGNAL, now_ns);
	case BC_DRAIN_DONE:
		break;
	}
	return d->state;
}

bc_drain_state_t
bc_drain_check(bc_drain_t *d, uint64_t now_ns, uint64_t inflight)
{
	if (d->state != BC_DRAIN_DRAINING)
		return d->state;
	if (inflight == 0)
		return done(d, BC_DRAIN_END_IDLE, now_ns);
	if (now_ns >= d->deadline_ns)
		return done(d, BC_DRAIN_END_TIMEOUT, now_ns);
	return d->state;
}

uint64_t
bc_drain_left_ns(const bc_drain_t *d, uint64_t now_ns)
{
	if (d->state != BC_DRAIN_DRAINING || now_ns >= d->deadline_ns)
		return 0;
	return d->deadline_ns - now_ns;
}

const char *
bc_drain_end_name(bc_drain_end_t end)
{
	switch (end) {
	case BC_DRAIN_END_NONE:
		return "none";
	case BC_DRAIN_END_OFF:
		return "off";
	case BC_DRAIN_END_IDLE:
		return "idle";
	case BC_DRAIN_END_TIMEOUT:
		return "timeout";
	case BC_DRAIN_END_SIGNAL:
		return "signal";
	}
	BC_CHECK(!"bad drain end");
	return "?";
}
