/*
 * cache_metablob.h — an object's metadata (bc_objmeta_t) and the wall-clock
 * time it was last validated against the origin, as the opaque blob lower
 * tiers keep across restarts (tier.h, meta_put/meta_get).
 *
 * The format is versioned, bounded and length-prefixed, every integer
 * little-endian (cache_metablob.c has the layout). A blob comes back from
 * a disk or another process, so decoding trusts nothing: a truncated,
 * oversized or otherwise malformed blob, or one of another version, is
 * refused whole, and what decodes is safe to replay as response headers
 * (no CR, LF or NUL in a value, names are HTTP tokens).
 *
 * Pure functions, thread-safe.
 */
#ifndef BC_CACHE_METABLOB_H
#define BC_CACHE_METABLOB_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "util/util_buf.h"

#define BC_METABLOB_VERSION     1
#define BC_METABLOB_MAX         (64 * 1024)  /* bytes of a whole blob */
#define BC_METABLOB_HEADERS_MAX 128          /* replayed headers */
#define BC_METABLOB_NAME_MAX    256          /* bytes of a header name */
#define BC_METABLOB_VALUE_MAX   8192         /* bytes of a header value */

/*
 * Appends m, validated at validated_ms (milliseconds since the Unix epoch,
 * wall clock), to out as one blob. Returns 0; BC_E2BIG when m is past the
 * bounds above or holds what decoding would refuse (nothing appended:
 * such metadata is simply not kept); BC_ENOMEM.
 */
int bc_cache_metablob_encode(bc_buf_t *out, const bc_objmeta_t *m,
    uint64_t validated_ms);

/*
 * Decodes len bytes at blob into *m (zeroed first; the caller finis it
 * with bc_objmeta_fini after a 0) and *validated_ms. Returns 0; BC_EPROTO
 * when the blob is not exactly one well-formed blob of this version within
 * the bounds (m then holds nothing); BC_ENOMEM.
 */
int bc_cache_metablob_decode(const void *blob, size_t len, bc_objmeta_t *m,
    uint64_t *validated_ms);

#endif
