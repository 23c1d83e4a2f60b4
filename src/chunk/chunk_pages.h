/*
 * chunk_pages.h — anonymous mappings for chunk data, recycled.
 *
 * A chunk's data from BC_CHUNK_MAP_MIN bytes on is a mapping of its own
 * (chunk.h). A fresh mapping costs a page fault per page, the kernel's
 * zeroing of each page and, under a hypervisor that takes freed memory
 * back, the host's fault too: filling a fresh 256 KiB chunk measured 230
 * us of the loop thread here, against 3 us for a recycled one. So a freed
 * mapping waits in a small pool for the next chunk, which takes it whole,
 * trims its tail (munmap) or grows it (mremap; only the new tail is
 * fresh).
 *
 * The pool holds at most BC_CHUNK_PAGES_MAX bytes in BC_CHUNK_PAGES_SLOTS
 * mappings, and no more than its owner's bound (bc_chunk_pages_set_max:
 * the cache keeps it at an eighth of the memory bound, so a bound lowered
 * by --mem-size auto lowers RSS too); a mapping that does not fit is
 * returned to the kernel. Its
 * bytes are resident but belong to no chunk: they are outside every
 * cache bound (cache_bytes_held) and counted in the gauge
 * chunk_pool_bytes. Thread-safe (one mutex, held for a few pointer moves;
 * the syscalls run outside it).
 */
#ifndef BC_CHUNK_PAGES_H
#define BC_CHUNK_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_CHUNK_PAGES_MAX   (16u * 1024 * 1024)
#define BC_CHUNK_PAGES_SLOTS 64
/* Mappings of this many bytes or more ask for transparent huge pages. */
#define BC_CHUNK_PAGES_HUGE  (2u * 1024 * 1024)

/* A readable, writable private mapping of len bytes (len a multiple of
 * the page size), recycled when the pool has one; with populate, every
 * page is resident on return (recycled pages are). NULL when out of
 * memory. */
uint8_t *bc_chunk_pages_get(size_t len, bool populate);
/* Gives p (len bytes, from bc_chunk_pages_get) back: pooled, or
 * unmapped. NULL is a no-op. */
void     bc_chunk_pages_put(uint8_t *p, size_t len);
/* The pool holds at most min(bytes, BC_CHUNK_PAGES_MAX) from now on;
 * what it holds beyond that is returned to the kernel at once. */
void     bc_chunk_pages_set_max(size_t bytes);
/* Returns every pooled mapping to the kernel (at exit, and for tests). */
void     bc_chunk_pages_drain(void);
/* Bytes and mappings in the pool now. */
size_t   bc_chunk_pages_pooled(size_t *count);

#endif
