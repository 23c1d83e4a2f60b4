/*
 * cache_window.h — the read window of one sequential reader of an object:
 * how many chunks past the one it reads should be in flight (docs/cache.md,
 * "Read window"; mountpoint-s3's prefetcher and the AWS CRT's ranged
 * parallel GETs are the models). Pure; one window per reader, owned by
 * it (no locking).
 *
 * The window starts at start chunks (--readahead) and
 *   - doubles, up to max (--readahead-max), each time the reader enters
 *     its next chunk and had to wait for it (the fetches ahead did not
 *     keep up: more of them in parallel would have), and when the
 *     reader waits for the bytes of the chunk it reads (the first chunk
 *     of a cold object, say: one connection brings it, and the reader
 *     could take more): at its first such wait in a chunk, and again at
 *     each wait BC_READ_WINDOW_STALL_STEP bytes or more past the wait
 *     that grew it last (so a reader starved inside a first 8 MiB chunk
 *     has its whole window in flight after 3 MiB, not after the chunk);
 *   - halves, not below start, after a window's worth of chunks in a row
 *     (n, at least two) it did not wait for (the reader is the slower
 *     side: fewer chunks ahead hold less memory and lose nothing; fewer
 *     than n would not say so, since chunks fetched at once arrive
 *     together and a fast reader finds several done, then waits);
 *   - starts over at start when the reader jumps (a chunk that is not
 *     the next one).
 * What the window asks for is further bounded by the caller: the bytes
 * prefetched and not yet read (--prefetch-memory) and the memory
 * policy's admission (cache.h, bc_cache_read_ahead).
 */
#ifndef BC_CACHE_WINDOW_H
#define BC_CACHE_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

typedef struct bc_read_window_s {
	unsigned start, max;   /* bounds, start <= max */
	unsigned n;            /* chunks ahead now */
	unsigned easy;         /* chunks in a row entered without a wait */
	uint32_t stalled;      /* the chunk a stall grew the window in;
				  UINT32_MAX: none */
	uint64_t stalled_at;   /* and the offset in it of that stall */
	uint32_t next;         /* the chunk a sequential reader enters next;
				  UINT32_MAX before the first */
} bc_read_window_t;

/* A new reader's window: start chunks (0: no read-ahead at all), at most
 * max (raised to start when below). */
void     bc_read_window_init(bc_read_window_t *w, unsigned start,
    unsigned max);
/* The reader entered chunk i, after waiting for it when waited. Returns
 * the chunks after i to have in flight now. */
unsigned bc_read_window_step(bc_read_window_t *w, uint32_t i, bool waited);
#define BC_READ_WINDOW_STALL_STEP (1024 * 1024)

/* The reader waits for the bytes at offset at of chunk i, the one it
 * entered last: the window doubles, at the chunk's first such wait and
 * at waits BC_READ_WINDOW_STALL_STEP past the last that grew it. Returns
 * the chunks after i to have in flight now when it grew, else 0
 * (nothing more to ask for). */
unsigned bc_read_window_stall(bc_read_window_t *w, uint32_t i,
    uint64_t at);

#endif
