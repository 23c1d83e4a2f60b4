/*
 * cache_read.h — one read of an object's byte range: bc_cache_read()
 * says how the cache answers it, so that its caller (http_object.c) does
 * not choose among the paths itself:
 *
 *   BC_READ_MEM     every chunk of the range in memory: references to
 *                   them (a zero-copy answer)
 *   BC_READ_FILE    the range lies in one chunk a disk tier has as a
 *                   file: the file, to send with sendfile
 *   BC_READ_WAIT    the waiter is registered: on the disk tier's file, or
 *                   on the one chunk's fill (it asks the lower tiers
 *                   before the origin); take its outcome
 *                   (bc_cache_read_take) and ask again
 *   BC_READ_STREAM  the answer streams: the chunks in order through
 *                   bc_cache_read_chunk, a filling chunk as its bytes
 *                   arrive,
 *                   the rest straight from the upstream when memory has
 *                   no room (BC_ENOSPC: bc_cache_passthrough)
 *
 * A read is the caller's (embedded in its request); one thread at a time
 * uses it. It holds at most one chunk reference and one file between
 * calls; bc_cache_read_fini drops them.
 */
#ifndef BC_CACHE_READ_H
#define BC_CACHE_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"

typedef enum bc_read_kind_e {
	BC_READ_MEM,
	BC_READ_FILE,
	BC_READ_WAIT,
	BC_READ_STREAM,
} bc_read_kind_t;

/* A zero-copy answer's chunks: references, in order. */
typedef struct bc_read_held_s {
	size_t       n;
	bc_chunk_t  *v[];
} bc_read_held_t;

typedef struct bc_read_s {
	/* bc_cache_read_init, bc_cache_read_span */
	bc_cache_t   *c;
	bc_object_t  *o;
	bc_waiter_t  *w;
	uint64_t      cs;            /* chunk size */
	uint32_t      max_held;      /* chunks a BC_READ_MEM answer holds,
					at most (more: it streams) */
	const char   *etag;          /* the version read (the caller's) */
	uint64_t      size;          /* the object's */
	bc_range_t    range;         /* the bytes read, resolved */
	uint32_t      c0, c1;        /* its chunks */
	/* kept across calls */
	bc_chunk_t   *chunk;         /* a chunk a fill delivered (with the
					metadata, or waited for), or one in
					memory when it was asked; the
					streaming reader takes it */
	bool          chunk_tier;    /* it came from a lower tier */
	bool          chunk_mem;     /* it was in memory (or filling for
					another request) */
	int           fd;            /* a disk tier's file (owned), or -1:
					the one chunk's (file_ready), or the
					file chunk was read from */
	uint64_t      fd_off;        /* where the chunk starts in it */
	uint64_t      fd_len;        /* file_ready: the chunk's bytes */
	bool          file_ready;    /* fd is a file a file ask brought */
	unsigned      file_asks;     /* at most 1 */
	unsigned      chunk_waits;   /* at most BC_READ_CHUNK_WAITS */
	/* the answer */
	uint32_t      present;       /* chunks of the range the cache had
					(in memory, being fetched by another
					request, or in the tier that answered):
					all: a hit; none: a miss */
	bc_read_held_t *held;        /* BC_READ_MEM: chunks c0..c1, the
					caller's (bc_cache_read_held_free) */
	uint64_t      from;          /* BC_READ_FILE: the range starts at
					fd_off + from in fd */
} bc_read_t;

/* Waits for the one chunk of a range before answering, at most (a fill
 * that ends in RECHECK is asked again; past this the answer streams). */
#define BC_READ_CHUNK_WAITS 3

/* Readies rd to read o (the caller's reference) with waiter w. */
void bc_cache_read_init(bc_read_t *rd, bc_cache_t *c, bc_object_t *o,
    bc_waiter_t *w, uint32_t max_held);
/* Drops the chunk and the file rd holds. */
void bc_cache_read_fini(bc_read_t *rd);
/* The object changed: rd reads o now, its chunk dropped and its chunk
 * waits counted afresh (a file asked for is not asked again). */
void bc_cache_read_restart(bc_read_t *rd, bc_object_t *o);
/* The range to read (resolved; size > 0) of version etag (the caller's,
 * alive while rd is used). */
void bc_cache_read_span(bc_read_t *rd, const char *etag, uint64_t size,
    const bc_range_t *range);
/* Takes what w brought after a wake ended with res: a chunk
 * (BC_WAIT_CHUNK: w->chunk and a file it was read from) or a file
 * (BC_WAIT_FILE). Other results: nothing. */
void bc_cache_read_take(bc_read_t *rd, bc_wait_result_t res);
/* Drops h's references and frees it; NULL is a no-op. */
void bc_cache_read_held_free(bc_read_held_t *h);
/* The chunk rd holds, handed to the caller (its reference), or NULL. */
bc_chunk_t *bc_cache_read_take_chunk(bc_read_t *rd);

/* Where a streamed chunk came from (bc_cache_read_chunk). */
typedef enum bc_read_from_e {
	BC_FROM_MEM,        /* in memory, or filling for another request */
	BC_FROM_UPSTREAM,   /* a fill this read waited for, from the origin */
	BC_FROM_TIER,       /* a fill this read waited for, from a lower tier */
} bc_read_from_t;

/*
 * BC_READ_STREAM: chunk i of rd's range for the streaming reader, which
 * takes the chunks in order; rd's span is set (bc_cache_read_span: a
 * read without one aborts). Returns 0 with a reference in *out (a
 * filling chunk included: read at most its bc_chunk_avail bytes) and
 * where it came from in *from: the chunk rd holds when it is chunk i
 * (what a wait brought), else the cache's (bc_cache_chunk, a fetch
 * started when memory lacks it). BC_EAGAIN: rd->w is registered on
 * chunk i's fill; take the outcome (bc_cache_read_take) and ask again.
 * BC_ENOSPC: memory has no room for it; read the rest from the upstream
 * (bc_cache_passthrough). BC_ECANCELED: the object changed. Another
 * negative code: the chunk cannot be had.
 */
int bc_cache_read_chunk(bc_read_t *rd, uint32_t i, bc_chunk_t **out,
    bc_read_from_t *from);

/*
 * How rd's range goes out now (the kinds at the top), with rd->present
 * set. BC_READ_MEM: rd->held. BC_READ_FILE: rd->fd at rd->fd_off +
 * rd->from holds the range (the caller takes fd by setting rd->fd to -1;
 * for a chunk read from a disk tier, its reference is dropped). BC_READ_WAIT:
 * rd->w is registered; the caller takes the outcome
 * (bc_cache_read_take), resets w and asks again.
 */
bc_read_kind_t bc_cache_read(bc_read_t *rd);

#endif
