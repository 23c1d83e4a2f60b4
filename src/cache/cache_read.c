/*
 * cache_read.c — bc_cache_read: how one read of an object's range goes
 * out (cache_read.h). Built on the cache's lookups (bc_cache_chunk,
 * bc_cache_chunk_file); it takes no lock of its own. The order, for a
 * range whose chunks a first fill did not bring:
 *   1. a file a file ask brought (a wake) is sent when it holds the
 *      chunk's bytes, even when the chunk's promotion got it into memory
 *      meanwhile;
 *   2. every chunk in memory: a zero-copy answer (a hit);
 *   3. none there, one chunk, lower tiers: the disk tier is asked for its
 *      file, once (a hit);
 *   4. one chunk memory lacks, lower tiers: its fill is asked for first,
 *      at most BC_READ_CHUNK_WAITS times; the chunk it brought is a hit
 *      when a lower tier had it (sent from its file when a disk tier read
 *      it), a miss when the origin's fill brings it;
 *   5. anything else streams.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_int.h"
#include "cache/cache_math.h"
#include "cache/cache_read.h"
#include "util/util_assert.h"
#include "util/util_error.h"

void
bc_cache_read_init(bc_read_t *rd, bc_cache_t *c, bc_object_t *o,
    bc_waiter_t *w, uint32_t max_held)
{
	memset(rd, 0, sizeof(*rd));
	rd->c = c;
	rd->o = o;
	rd->w = w;
	rd->cs = c->cs;
	rd->max_held = max_held;
	rd->fd = -1;
}

static void
drop_fd(bc_read_t *rd)
{
	if (rd->fd >= 0)
		close(rd->fd);
	rd->fd = -1;
}

void
bc_cache_read_fini(bc_read_t *rd)
{
	drop_fd(rd);
	bc_chunk_unref(rd->chunk);
	rd->chunk = NULL;
}

void
bc_cache_read_restart(bc_read_t *rd, bc_object_t *o)
{
	bc_chunk_unref(rd->chunk);
	rd->chunk = NULL;
	rd->chunk_tier = rd->chunk_mem = false;
	rd->chunk_waits = 0;
	rd->o = o;
}

void
bc_cache_read_span(bc_read_t *rd, const char *etag, uint64_t size,
    const bc_range_t *range)
{
	rd->etag = etag;
	rd->size = size;
	rd->range = *range;
	bc_chunk_span(range, rd->cs, &rd->c0, &rd->c1);
}

/* Takes w's file (the waiter's: reset would close it). */
static void
take_fd(bc_read_t *rd)
{
	drop_fd(rd);
	rd->fd = rd->w->fd;
	rd->fd_off = rd->w->fd_off;
	rd->w->fd = -1;
}

void
bc_cache_read_take(bc_read_t *rd, bc_wait_result_t res)
{
	bc_waiter_t *w = rd->w;

	if (res == BC_WAIT_CHUNK) {
		bc_chunk_unref(rd->chunk);
		rd->chunk = w->chunk;
		rd->chunk_tier = w->tier_hit;
		rd->chunk_mem = false;
		w->chunk = NULL;
		take_fd(rd);
	} else if (res == BC_WAIT_FILE) {
		take_fd(rd);
		rd->fd_len = w->fd_len;
		rd->file_ready = true;
	}
}

bc_chunk_t *
bc_cache_read_take_chunk(bc_read_t *rd)
{
	bc_chunk_t *ch = rd->chunk;

	rd->chunk = NULL;
	return ch;
}

int
bc_cache_read_chunk(bc_read_t *rd, uint32_t i, bc_chunk_t **out,
    bc_read_from_t *from)
{
	BC_AN(rd->etag);
	if (rd->chunk != NULL && rd->chunk->index == i) {
		*from = rd->chunk_mem ? BC_FROM_MEM : rd->chunk_tier ?
		    BC_FROM_TIER : BC_FROM_UPSTREAM;
		*out = bc_cache_read_take_chunk(rd);
		return 0;
	}
	*from = BC_FROM_MEM;
	return bc_cache_chunk(rd->c, rd->o, rd->etag, i, true, rd->w, out);
}

/* Where the range starts in chunk c0. */
static uint64_t
from_c0(const bc_read_t *rd)
{
	return rd->range.first - bc_chunk_start(rd->c0, rd->cs);
}

/* Whether the file a file ask brought holds the range (all of chunk
 * c0's bytes). */
static bool
file_usable(const bc_read_t *rd)
{
	return rd->fd >= 0 &&
	    from_c0(rd) + bc_range_length(&rd->range) <= rd->fd_len &&
	    rd->fd_len == bc_chunk_len(rd->c0, rd->size, rd->cs);
}

void
bc_cache_read_held_free(bc_read_held_t *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n; i++)
		bc_chunk_unref(h->v[i]);
	free(h);
}

/* 2: every chunk in memory (rd->held), or NULL (nothing held) with
 * rd->present counting those in memory or being fetched by another
 * request (none fetched for this read: they make a hit, not a miss). */
static bc_read_held_t *
in_memory(bc_read_t *rd)
{
	uint32_t n = rd->c1 - rd->c0 + 1;
	bc_read_held_t *h = malloc(sizeof(*h) + (size_t)n * sizeof(h->v[0]));

	rd->present = 0;
	if (h == NULL)
		return NULL;
	h->n = 0;
	for (uint32_t i = rd->c0; i <= rd->c1; i++) {
		bc_chunk_t *ch = NULL;
		int rv;

		if (rd->chunk != NULL && rd->chunk->index == i) {
			bc_chunk_ref(rd->chunk);   /* fetched for this read: */
			h->v[h->n++] = rd->chunk;  /* not a hit */
			continue;
		}
		rv = bc_cache_chunk(rd->c, rd->o, rd->etag, i, false, NULL,
		    &ch);
		if (rv == BC_EINPROGRESS)
			rd->present++;   /* another request fetches it */
		if (rv < 0)
			continue;
		h->v[h->n++] = ch;
		rd->present++;
	}
	if (h->n == n && rd->chunk == NULL && n <= rd->max_held)
		return h;
	bc_cache_read_held_free(h);   /* fetched now, or not all there */
	return NULL;
}

/* 3: asks the disk tier for chunk c0's file. BC_READ_FILE when it opened
 * it at once and the file holds the range, BC_READ_WAIT, or
 * BC_READ_STREAM when there is none (go on to 4). */
static bc_read_kind_t
ask_file(bc_read_t *rd)
{
	int rv;

	rd->file_asks++;
	rv = bc_cache_chunk_file(rd->c, rd->o, rd->etag, rd->c0, rd->w);
	if (rv == BC_EAGAIN)
		return BC_READ_WAIT;
	if (rv != 0)
		return BC_READ_STREAM;
	take_fd(rd);   /* opened at once */
	rd->fd_len = rd->w->fd_len;
	bc_waiter_reset(rd->w);
	if (!file_usable(rd))
		return BC_READ_STREAM;
	rd->present = 1;
	rd->from = from_c0(rd);
	return BC_READ_FILE;
}

/* 4: the one chunk memory lacks, asked for before answering. */
static bc_read_kind_t
ask_chunk(bc_read_t *rd)
{
	bc_chunk_t *ch = rd->chunk;
	int rv;

	if (ch != NULL) {
		if (rd->chunk_waits == 0 || ch->index != rd->c0)
			return BC_READ_STREAM;   /* a first fill's chunk */
		rd->present = rd->chunk_tier ? 1 : 0;
		rd->from = from_c0(rd);
		if (!rd->chunk_tier || rd->fd < 0 ||
		    bc_chunk_state(ch) != BC_CHUNK_COMPLETE ||
		    rd->from + bc_range_length(&rd->range) > ch->len)
			return BC_READ_STREAM;
		bc_chunk_unref(ch);   /* sent from the file it was read from */
		rd->chunk = NULL;
		return BC_READ_FILE;
	}
	if (rd->c0 != rd->c1 || rd->chunk_waits >= BC_READ_CHUNK_WAITS ||
	    bc_tier_chain_count(bc_cache_tiers(rd->c)) < 2)
		return BC_READ_STREAM;
	rv = bc_cache_chunk(rd->c, rd->o, rd->etag, rd->c0, true, rd->w, &ch);
	if (rv == 0) {   /* the reader takes it from memory */
		rd->chunk = ch;
		rd->chunk_mem = true;
		return BC_READ_STREAM;
	}
	if (rv != BC_EAGAIN)
		return BC_READ_STREAM;
	rd->chunk_waits++;
	return BC_READ_WAIT;
}

bc_read_kind_t
bc_cache_read(bc_read_t *rd)
{
	bc_read_kind_t k;

	rd->held = NULL;
	if (rd->file_ready) {   /* 1 */
		rd->file_ready = false;
		if (file_usable(rd)) {
			rd->present = 1;
			rd->from = from_c0(rd);
			return BC_READ_FILE;
		}
	}
	rd->held = in_memory(rd);   /* 2 */
	if (rd->held != NULL)
		return BC_READ_MEM;
	if (rd->present == 0 && rd->file_asks == 0 && rd->c0 == rd->c1 &&
	    rd->chunk == NULL) {   /* 3 */
		k = ask_file(rd);
		if (k != BC_READ_STREAM)
			return k;
	}
	return ask_chunk(rd);   /* 4, 5 */
}
