/*
 * chunk.h — the cache unit: one chunk of one object version,
 * identified by (bucket, key, ETag, index), holding its bytes.
 *
 * Refcounting: bc_chunk_new() returns one reference. Every holder (a tier,
 * a response being sent, a waiter) owns one; bc_chunk_unref() frees the
 * chunk and its data when the last one goes, and calls the chunk's
 * on_free hook first (tiers use it to account bytes actually freed).
 * A count going below zero aborts. data and len never change after
 * bc_chunk_new(), so any holder may read them without a lock.
 *
 * A chunk a disk tier returned may also carry an open file holding the
 * same bytes (fd, from fd_off on), for responses sent with sendfile; the
 * chunk owns it and closes it when freed. Every constructor sets fd to -1
 * (none); fd and fd_off, like data, are set before the chunk is shared
 * and never change after, but for one step: the cache, holding the only
 * reference, hands the file to the waiting responses (bc_waiter_t.fd)
 * and closes it before the chunk is shared or kept in memory.
 *
 * Filling: a chunk made by bc_chunk_new_filling() is handed out while its
 * bytes still arrive. `filled` (release/acquire) says how many of data's
 * first bytes are final; `state` ends COMPLETE or FAILED. Only complete
 * chunks go into tiers; readers of a filling chunk read at most `filled`
 * bytes and wait (cache.h, bc_cache_chunk_wait) for more.
 *
 * Layers (tests/check_layers.sh): chunk/ sits below tier/ and cache/ and
 * includes only util/ and stats/. Its state is the key (id, hash, index);
 * refs, with the release hook of the one holder that charges the chunk
 * (on_free and tier_data: the memory tier, or the cache for a chunk in
 * transit); the bytes (data, len, map_len, fd, fd_off); the fill state
 * (filled, state, and fill_waiters: the readers waiting for more, a list
 * whose type and lock are the cache's); and what its fill learned, which
 * every later holder reads: fetch_us (a policy input), prefetched and
 * prefetch_job (who brought it, until a client reads it). What one holder
 * keeps about a chunk it holds lives with that holder: the memory tier's
 * table link and policy node are its entry's (tier_mem.c).
 */
#ifndef BC_CHUNK_H
#define BC_CHUNK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/stats.h"

typedef struct bc_chunk_key_s {
	const char *bucket;
	const char *key;
	const char *etag;      /* as S3 sends it, quotes included */
	uint32_t    index;
} bc_chunk_key_t;

typedef struct bc_chunk_s bc_chunk_t;
struct bc_waiter_s;

typedef enum bc_chunk_state_e {
	BC_CHUNK_FILLING = 0,
	BC_CHUNK_COMPLETE = 1,
	BC_CHUNK_FAILED = -1,
} bc_chunk_state_t;
typedef void (*bc_chunk_free_fn)(bc_chunk_t *c);

struct bc_chunk_s {
	atomic_int       refs;
	uint8_t         *data;        /* owned; len bytes */
	size_t           len;
	size_t           map_len;     /* data is its own mapping of map_len
				       * bytes; 0: data is malloc'd */
	uint64_t         hash;        /* of the key, bc_chunk_key_hash() */
	char            *id;          /* "bucket\0key\0etag\0", owned */
	size_t           id_len;
	uint32_t         index;
	uint64_t         fetch_us;    /* what fetching it cost (policy input) */
	int              fd;          /* -1, or a file holding data: owned */
	uint64_t         fd_off;      /* where data starts in fd */
	/* 1 while the chunk was brought by a prefetch and no client has
	 * read it (bc_chunk_mark_prefetched / bc_chunk_take_prefetched);
	 * dropped with it still set, it counts as prefetch_wasted. */
	atomic_int       prefetched;
	/* the job that prefetch was for (its per-job prefetch counters):
	 * stored before prefetched is set, loaded after it is taken */
	_Atomic bc_stats_job_id_t prefetch_job;
	bc_chunk_free_fn on_free;     /* NULL, or set once by the owning tier */
	void            *tier_data;   /* the owning tier's per-chunk state */
	/* Filling (see above); fill_waiters is the cache's, under its lock. */
	_Atomic size_t      filled;
	_Atomic int         state;
	struct bc_waiter_s *fill_waiters;
};

/* Creates a chunk for k that takes ownership of data (malloc'd, len
 * bytes). Returns NULL when out of memory (data is then freed). */
bc_chunk_t *bc_chunk_new(const bc_chunk_key_t *k, uint8_t *data, size_t len);
/* A chunk for k of len bytes with its own data, that starts FILLING with
 * nothing filled: its owner writes data and publishes progress with
 * bc_chunk_fill(). Data of BC_CHUNK_MAP_MIN bytes or more is a mapping of
 * its own, recycled or returned to the kernel when the chunk is freed
 * (chunk_pages.h; from 2 MiB in transparent huge pages); up to
 * BC_CHUNK_POPULATE_MAX it is faulted in at once (one syscall instead of
 * a fault per page while the bytes arrive), bigger ones fault in as they
 * fill (populating megabytes up front would delay the first byte by
 * milliseconds). NULL when out of memory. */
bc_chunk_t *bc_chunk_new_filling(const bc_chunk_key_t *k, size_t len);
/* Data for a chunk of len bytes, to be written whole at once: from
 * BC_CHUNK_MAP_MIN bytes a mapping of its own, faulted in by the call
 * (*map_len its length; so RSS follows the chunks held, whatever malloc
 * does with its heap), else malloc'd (*map_len 0). NULL when out of
 * memory. */
uint8_t    *bc_chunk_data_alloc(size_t len, size_t *map_len);
void        bc_chunk_data_free(uint8_t *data, size_t map_len);
/* As bc_chunk_new(), for data from bc_chunk_data_alloc() (freed when the
 * chunk cannot be made). A complete chunk. */
bc_chunk_t *bc_chunk_new_data(const bc_chunk_key_t *k, uint8_t *data,
    size_t len, size_t map_len);
/* Publishes that data's first n bytes are final. */
void        bc_chunk_fill(bc_chunk_t *c, size_t n);
/* Ends filling: COMPLETE (every byte filled) or FAILED. */
void        bc_chunk_end(bc_chunk_t *c, bc_chunk_state_t state);
/* Bytes readable now, and the state (acquire). */
size_t      bc_chunk_avail(const bc_chunk_t *c);
bc_chunk_state_t bc_chunk_state(const bc_chunk_t *c);
/* A prefetch for job (BC_STATS_JOB_NONE: none known) brought c: counted
 * in prefetch_bytes (in total and the job's) and, until a client reads
 * it, in the prefetch_unread_bytes gauge. Once per chunk. */
void        bc_chunk_mark_prefetched(bc_chunk_t *c, bc_stats_job_id_t job);
/* A client reads c: true (and prefetch_used counted, in total and for
 * the job it was prefetched for) the first time for a prefetched chunk.
 * Dropped unread, it counts as prefetch_wasted the same way. */
bool        bc_chunk_take_prefetched(bc_chunk_t *c);
void        bc_chunk_ref(bc_chunk_t *c);
void        bc_chunk_unref(bc_chunk_t *c);           /* NULL is a no-op */

/* What bc_chunk_charge() adds for the allocator: a chunk is two malloc
 * blocks (the struct with its id, and data), each costing about 16 bytes
 * of header and rounding in glibc. Large data blocks are mmap'd and round
 * up to a page instead (under 4 KiB per block, 0.05% of an 8 MiB chunk),
 * which this estimate does not count. */
#define BC_CHUNK_ALLOC_OVERHEAD (2 * 16)
/* What the holder that keeps a chunk spends on its record of it, charged
 * with the chunk so a bound counts it: the memory tier's entry (its table
 * link, its policy node and the chunk pointer, one malloc block) checks
 * at compile time that it fits (tier_mem.c). */
#define BC_CHUNK_HOLDER_BYTES   128
#define BC_CHUNK_MAP_MIN        (64 * 1024)
#define BC_CHUNK_POPULATE_MAX   (512 * 1024)

/* Bytes the chunk costs in memory: its data (len, or map_len when it is
 * a mapping) + sizeof(bc_chunk_t) + id_len + BC_CHUNK_ALLOC_OVERHEAD +
 * BC_CHUNK_HOLDER_BYTES. What a memory bound counts. */
size_t      bc_chunk_charge(const bc_chunk_t *c);
/* What a chunk of len bytes with an id of id_len bytes, made by
 * bc_chunk_new_filling(), will be charged. */
size_t      bc_chunk_charge_for(size_t len, size_t id_len);

uint64_t    bc_chunk_key_hash(const bc_chunk_key_t *k);
/* true when c is the chunk k names. */
int         bc_chunk_matches(const bc_chunk_t *c, const bc_chunk_key_t *k);

#endif
