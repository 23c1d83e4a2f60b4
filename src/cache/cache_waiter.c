/*
 * cache_waiter.c — waiters: registration, results, wake-ups
 * (cache_int.h has the locking and reference rules).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

#include "cache/cache_int.h"
#include "cache/cache_math.h"
#include "s3/s3_cond.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_log.h"
#include "util/util_num.h"
#include "util/util_time.h"

/* ---- waiters ----------------------------------------------------------- */

void
bc_waiter_init(bc_waiter_t *w, void (*wake)(void *), void *arg)
{
	memset(w, 0, sizeof(*w));
	w->wake = wake;
	w->arg = arg;
	w->fd = -1;
	bc_buf_init(&w->up_body, 0);
}

void
bc_waiter_reset(bc_waiter_t *w)
{
	w->next = NULL;
	w->result = BC_WAIT_PENDING;
	w->chunk = NULL;
	w->err = 0;
	w->up_status = 0;
	w->tier_hit = false;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->list = NULL;
	bc_buf_reset(&w->up_body);
}

/* c->mu held: removes w from the list *head. */
static void
waiter_unlink(bc_waiter_t **head, bc_waiter_t *w)
{
	for (bc_waiter_t **pp = head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->next = NULL;
	w->list = NULL;
}

void
bc_waiter_fini(bc_cache_t *c, bc_waiter_t *w)
{
	pthread_mutex_lock(&c->mu);
	if (w->list != NULL)
		waiter_unlink(w->list, w);
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(w->chunk);
	w->chunk = NULL;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	bc_buf_fini(&w->up_body);
}

bc_wait_result_t
bc_waiter_result(bc_cache_t *c, bc_waiter_t *w)
{
	bc_wait_result_t r;

	pthread_mutex_lock(&c->mu);
	r = w->result;
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* c->mu held: registers w on *head; coalesced when w joins a fetch
 * another request is already waiting on. */
void
bc_waiter_add(bc_object_t *o, bc_waiter_t **head, bc_waiter_t *w,
    bool coalesced)
{
	w->result = BC_WAIT_PENDING;
	w->next = *head;
	*head = w;
	w->list = head;
	if (coalesced && !w->counted) {
		w->counted = true;
		BC_STATS_INC(cache_coalesced_waits);
		bc_stats_bucket_add(o->bucket, BC_BSTAT_cache_coalesced_waits,
		    1);
	}
}

/* c->mu held: ends every waiter on *head with result (and a chunk
 * reference each, or an upstream error copy each), then wakes it. */
void
bc_waiters_end(bc_waiter_t **head, bc_wait_result_t result, bc_chunk_t *chunk,
    int err, int up_status, const uint8_t *up_body, size_t up_len)
{
	bc_waiter_t *w = *head, *next;

	*head = NULL;
	for (; w != NULL; w = next) {
		next = w->next;
		w->next = NULL;
		w->list = NULL;
		w->result = result;
		if (result == BC_WAIT_CHUNK) {
			bc_chunk_ref(chunk);
			w->chunk = chunk;
		}
		w->err = err;
		w->up_status = up_status;
		if (up_body != NULL)
			bc_buf_append(&w->up_body, up_body, up_len);
		w->wake(w->arg);
	}
}

/* c->mu held: ends every waiter on *head after a fill signed (anon false)
 * or unsigned (anon true) got an upstream error: the waiters of the same
 * kind get it (BC_WAIT_UPSTREAM), the others look again (BC_WAIT_RECHECK):
 * a refusal of an unsigned request says nothing about a signed one, and
 * the reverse. */
void
bc_waiters_end_upstream(bc_waiter_t **head, bool anon, int up_status,
    const uint8_t *up_body, size_t up_len)
{
	bc_waiter_t *same = NULL, *other = NULL, *w = *head, *next;

	*head = NULL;
	for (; w != NULL; w = next) {
		next = w->next;
		if (w->anon == anon) {
			w->next = same;
			same = w;
		} else {
			w->next = other;
			other = w;
		}
	}
	bc_waiters_end(&same, BC_WAIT_UPSTREAM, NULL, 0, up_status, up_body,
	    up_len);
	bc_waiters_end(&other, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
}

/* c->mu held: hands ch (a reference each) to the waiters on *head that
 * take filling chunks, and leaves the others registered. */
void
bc_waiters_give_partial(bc_waiter_t **head, bc_chunk_t *ch)
{
	bc_waiter_t **pp = head, *w;

	while ((w = *pp) != NULL) {
		if (!w->partial_ok) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->next = NULL;
		w->list = NULL;
		w->result = BC_WAIT_CHUNK;
		bc_chunk_ref(ch);
		w->chunk = ch;
		w->wake(w->arg);
	}
}
