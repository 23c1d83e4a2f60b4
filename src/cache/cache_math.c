/* cache_math.c — chunk arithmetic for byte ranges (see cache_math.h). */
#include <stdbool.h>

#include "cache/cache_math.h"

uint32_t
bc_chunk_count(uint64_t size, uint64_t cs)
{
	uint64_t n = size / cs + (size % cs != 0);

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t
bc_chunk_of(uint64_t off, uint64_t cs)
{
	uint64_t n = off / cs;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint64_t
bc_chunk_start(uint32_t i, uint64_t cs)
{
	return (uint64_t)i * cs;
}

uint64_t
bc_chunk_len(uint32_t i, uint64_t size, uint64_t cs)
{
	uint64_t start;

	if (cs != 0 && (uint64_t)i > UINT64_MAX / cs)
		return 0;
	start = (uint64_t)i * cs;
	if (start >= size)
		return 0;
	return size - start < cs ? size - start : cs;
}

uint32_t
bc_chunk_first_guess(const bc_range_spec_t *spec, bool has_range,
    uint64_t cs)
{
	if (!has_range || spec->suffix)
		return 0;
	return bc_chunk_of(spec->first, cs);
}

void
bc_chunk_span(const bc_range_t *r, uint64_t cs, uint32_t *c0, uint32_t *c1)
{
	*c0 = bc_chunk_of(r->first, cs);
	*c1 = bc_chunk_of(r->last, cs);
}
