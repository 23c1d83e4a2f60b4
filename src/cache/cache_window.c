/*
 * cache_window.c — the read window of one sequential reader
 * (cache_window.h).
 */
#include "cache/cache_window.h"

void
bc_read_window_init(bc_read_window_t *w, unsigned start, unsigned max)
{
	w->start = start;
	w->max = max < start ? start : max;
	w->n = start;
	w->easy = 0;
	w->next = UINT32_MAX;
	w->stalled = UINT32_MAX;
	w->stalled_at = 0;
}

/* doubles n, up to max */
static void
grow(bc_read_window_t *w)
{
	w->n = w->n > w->max / 2 ? w->max : w->n * 2;
	if (w->n == 0)
		w->n = w->start;
}

unsigned
bc_read_window_step(bc_read_window_t *w, uint32_t i, bool waited)
{
	if (i != w->next) {            /* the first chunk, or a jump */
		w->n = w->start;
		w->easy = 0;
	} else if (waited) {
		grow(w);
		w->easy = 0;
	} else if (++w->easy >= (w->n > 2 ? w->n : 2)) {
		w->n = w->n / 2 < w->start ? w->start : w->n / 2;
		w->easy = 0;
	}
	w->next = i + 1;   /* UINT32_MAX + 1 wraps to 0: a jump next */
	return w->n;
}

unsigned
bc_read_window_stall(bc_read_window_t *w, uint32_t i, uint64_t at)
{
	unsigned had = w->n;

	if (i + 1 != w->next || (w->stalled == i &&
	    at < w->stalled_at + BC_READ_WINDOW_STALL_STEP))
		return 0;
	w->stalled = i;
	w->stalled_at = at;
	w->easy = 0;
	grow(w);
	return w->n > had ? w->n : 0;
}
