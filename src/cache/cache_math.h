/*
 * cache_math.h — which chunks a byte range touches. Pure.
 *
 * Chunk i of an object covers bytes [i*cs, min((i+1)*cs, size) - 1]. An
 * empty object has no chunks. Every function is overflow-safe for sizes
 * up to 2^63 and chunk sizes from 1 byte.
 */
#ifndef BC_CACHE_MATH_H
#define BC_CACHE_MATH_H

#include <stdint.h>

#include "s3/s3_range.h"

/* Number of chunks of an object of size bytes. */
uint32_t bc_chunk_count(uint64_t size, uint64_t cs);
/* Chunk holding byte off. */
uint32_t bc_chunk_of(uint64_t off, uint64_t cs);
/* First byte of chunk i. */
uint64_t bc_chunk_start(uint32_t i, uint64_t cs);
/* Length of chunk i of an object of size bytes (0 past the end). */
uint64_t bc_chunk_len(uint32_t i, uint64_t size, uint64_t cs);
/* The chunk to fetch first when the size is not known yet: the chunk of
 * the range's first byte, or chunk 0 for no range and suffix ranges. */
uint32_t bc_chunk_first_guess(const bc_range_spec_t *spec, bool has_range,
    uint64_t cs);
/* Chunks [*c0, *c1] that the resolved range r touches. */
void     bc_chunk_span(const bc_range_t *r, uint64_t cs, uint32_t *c0,
    uint32_t *c1);

#endif
