/*
 * scale_rule.c — the target and shares of --mem-size auto (scale_rule.h).
 */
#include <stdlib.h>

#include "scale/scale_rule.h"

static uint64_t
need_of(const bc_scale_rule_t *r, bc_scale_need_t *d)
{
	double frac, c;

	d->rate_per_byte = d->size > 0 ? d->rate / (double)d->size : 0;
	d->window = d->rate > 0 ? (uint64_t)(d->rate * r->latency_s *
	    BC_SCALE_WINDOW_K) : 0;
	if (!d->active || d->size == 0)
		return 0;
	if (d->rate <= 0 || r->bandwidth <= 0)
		frac = 1.0;
	else
		frac = 1.0 - r->bandwidth / d->rate;
	if (frac <= 0)
		return 0;   /* the origin keeps up: no cache needed */
	c = (double)d->size * frac;
	return (uint64_t)c + d->window;
}

/* Sorts indexes by rate per byte, highest first (stable). */
static void
order_by_value(const bc_scale_need_t *d, size_t *ix, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && d[ix[k]].rate_per_byte >
		    d[ix[k - 1]].rate_per_byte; k--) {
			size_t t = ix[k];

			ix[k] = ix[k - 1];
			ix[k - 1] = t;
		}
}

uint64_t
bc_scale_rule(const bc_scale_rule_t *r, bc_scale_need_t *d, size_t n)
{
	uint64_t total = 0, left, target;
	size_t *ix;

	for (size_t i = 0; i < n; i++) {
		d[i].need = need_of(r, &d[i]);
		d[i].share = d[i].need;
		total += d[i].need;
	}
	if (total > r->max && n > 0) {
		ix = malloc(n * sizeof(*ix));
		left = r->max;
		if (ix != NULL) {
			order_by_value(d, ix, n);
			for (size_t k = 0; k < n; k++) {
				bc_scale_need_t *x = &d[ix[k]];

				x->share = x->need < left ? x->need : left;
				left -= x->share;
			}
			free(ix);
		} else {   /* no memory to sort: in proportion */
			for (size_t i = 0; i < n; i++)
				d[i].share = (uint64_t)((double)d[i].need *
				    (double)r->max / (double)total);
		}
		total = r->max;
	}
	target = total < r->min ? r->min : total > r->max ? r->max : total;
	return target < r->floor ? r->floor : target;
}

uint64_t
bc_scale_step(uint64_t cur, uint64_t target, uint64_t step, bool epoch_end,
    bool idle, bc_scale_why_t *why)
{
	if (target > cur) {
		*why = BC_SCALE_GROW;
		if (step > 0 && target - cur > step)
			return cur + step;
		return target;
	}
	if (target == cur) {
		*why = BC_SCALE_HOLD;
		return cur;
	}
	if (idle) {
		*why = BC_SCALE_SHRINK_IDLE;
		return target;
	}
	if (epoch_end) {
		*why = BC_SCALE_SHRINK_EPOCH;
		return target;
	}
	*why = BC_SCALE_WAIT;
	return cur;
}
