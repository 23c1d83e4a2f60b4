/*
 * util_hash.h — the one hash for in-memory tables: 64-bit FNV-1a. The
 * chained table over it is util_htab.h. Not for anything an attacker
 * must not steer into collisions beyond a longer probe: tables using it
 * compare whole keys.
 */
#ifndef BC_UTIL_HASH_H
#define BC_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define BC_HASH_INIT 0xcbf29ce484222325ULL   /* FNV-1a offset basis */

/* h extended over p[0..n); start from BC_HASH_INIT. */
static inline uint64_t
bc_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

#endif
