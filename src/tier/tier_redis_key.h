/*
 * tier_redis_key.h — how the Redis tier lays chunks out in Redis: key
 * names, slices sized for Redis's allocator, and the value format. Pure
 * functions over caller memory, thread-safe.
 *
 * Keys. A chunk is stored in slices, each under its own key
 *
 *   bc:c:<id>:<index>:<slice>     e.g. bc:c:6f1c...e2:3:0
 *
 * where <id> is 32 hex digits (the first 128 bits of a SHA-256) of the
 * object version as a gateway cuts it: (bucket, key, ETag, chunk size).
 * Keys are short and bounded (BC_REDIS_KEY_NAME_MAX) whatever the S3 key
 * holds, and a gateway with another --chunk-size names other keys. The
 * names hold no '{', so Redis Cluster hashes each whole name: the slices
 * of one chunk, and the chunks of one object, spread over the slots.
 * An object's metadata (the cache's blob, tier.h meta_put) is one value
 * under bc:m:<id of (bucket, key)>. SHA-256 rather than a fast hash: a
 * client cannot steer two objects onto one key; and were two versions to
 * share one, every value also names its own in full (below), so the
 * reader takes the other's value for a miss, never for its bytes.
 *
 * Slices. Redis stores a string value in one allocation from jemalloc,
 * whose size classes go in steps of a quarter of a power of two (1 MiB,
 * 1.25, 1.5, 1.75, 2, 2.5 MiB, ...), and the value needs 10 bytes more
 * than its length (its sds header and NUL). MEMORY USAGE on this
 * machine's Redis 7.0.15 (jemalloc 5.3.0), key "kk":
 *
 *   value length          MEMORY USAGE
 *   8 MiB                 10,485,808   (the 10 MiB class: 25% lost)
 *   8 MiB - 10             8,388,656   (the 8 MiB class)
 *   8 MiB - 64             8,388,656
 *   4 MiB                  5,242,928
 *   4 MiB - 10 (or - 64)   4,194,352
 *   2 MiB                  2,621,488
 *   2 MiB - 10 (or - 64)   2,097,200
 *   1 MiB                  1,310,768
 *   1 MiB - 9              1,310,768
 *   1 MiB - 10 (or - 64)   1,048,624
 *   100,071                  114,736   (a 100,000-byte chunk in one value)
 *   96 KiB - 64               98,352   (its first slice)
 *   1,978                      2,096   (and its second)
 *
 * (48 bytes above the class are the key and its entry; 88 with a key
 * name of this format's length.) So a value fills a class C when it is at
 * most C - 10 bytes long; this format keeps BC_REDIS_KEY_SLACK (64) bytes
 * under. A full slice's value is BC_REDIS_KEY_CLASS (1 MiB) - 64 bytes: a
 * header (naming the version in full: 48 bytes plus bucket, key and ETag)
 * and as much payload as fits. 1 MiB rather than 8: a range read fetches
 * at most a MiB more than it needs, a chunk's slices are fetched from
 * several cluster nodes at once, and no single value makes Redis (one
 * thread) or a slot migration stall on megabytes; the key per MiB costs
 * ~100 bytes (0.01%). What is left of a chunk after its full slices is
 * cut the same way: while the rest would round up past its class by more
 * than 1/32, a slice filling the largest class below it (minus 64) is
 * cut off (at most 6 such, down to BC_REDIS_KEY_TAIL_MIN). An 8 MiB chunk
 * is eight full slices and one of 8 x (header + 64) bytes; a 100 KB
 * object is a 96 KiB class and a 2 KiB one, where one value would take
 * 112 KiB. Redis's
 * used_memory grows by 1.0004 times the bytes of 8 MiB chunks stored so,
 * against 1.25 as one value each (tests/bench/bench_redis_memory).
 *
 * Values, integers little-endian. A slice:
 *    0  4  magic "BCRS"
 *    4  2  version (1)
 *    6  2  header length H
 *    8  8  chunk size the object is cut in (the unit)
 *   16  4  chunk index
 *   20  4  chunk length
 *   24  4  slice index
 *   28  4  slice count
 *   32  4  crc32c of the payload
 *   36  2  bucket length, 38 2 key length, 40 2 ETag length
 *   42  2  zero
 *   44     bucket, key, ETag (no NUL)
 *  H-4  4  crc32c of bytes [0, H-4)
 *    H     payload: the slice's bytes of the chunk
 * Object metadata:
 *    0  4  magic "BCRM"
 *    4  2  version (1)
 *    6  2  header length H
 *    8  4  blob length L, 12 4 crc32c of the blob
 *   16  2  bucket length, 18 2 key length
 *   20     bucket, key
 *  H-4  4  crc32c of bytes [0, H-4)
 *    H  L  blob
 * Decoding trusts nothing (Redis is shared, and anyone can SET a bc: key):
 * it reads only the bytes it is given, and takes a value only when every
 * length adds up, both crcs hold, the payload is exactly what the slice's
 * place in its chunk says, and the value names the very version (or
 * object) the key was read for.
 *
 * A reader that does not know a chunk's length (a get has only its key)
 * may set the chunk up with the unit as its length: full slices sit at the
 * same offsets whatever the length, and slice 0's header (parse) tells
 * the true length to set it up again with.
 */
#ifndef BC_TIER_REDIS_KEY_H
#define BC_TIER_REDIS_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk/chunk.h"
#include "util/util_buf.h"

#define BC_REDIS_KEY_VERSION    1
#define BC_REDIS_KEY_CLASS      (1024u * 1024u)  /* a full slice's class */
#define BC_REDIS_KEY_SLACK      64     /* a value's bytes below its class */
#define BC_REDIS_KEY_TAIL_MIN   4096   /* a tail this small is not cut */
#define BC_REDIS_KEY_TAILS_MAX  8      /* slices after the full ones */
#define BC_REDIS_KEY_UNIT_MAX   (1u << 30)   /* chunk sizes (--chunk-size) */
#define BC_REDIS_KEY_BUCKET_MAX 255
#define BC_REDIS_KEY_OBJKEY_MAX 1024
#define BC_REDIS_KEY_ETAG_MAX   255
#define BC_REDIS_KEY_HDR_FIXED  48     /* a slice header without strings */
#define BC_REDIS_KEY_HDR_MAX    (BC_REDIS_KEY_HDR_FIXED + \
	BC_REDIS_KEY_BUCKET_MAX + BC_REDIS_KEY_OBJKEY_MAX + \
	BC_REDIS_KEY_ETAG_MAX)
#define BC_REDIS_KEY_META_FIXED 24     /* a metadata header without strings */
#define BC_REDIS_KEY_BLOB_MAX   (64u * 1024u)    /* a metadata blob */
#define BC_REDIS_KEY_ID_HEX     32
#define BC_REDIS_KEY_NAME_MAX   64     /* a key name and its NUL */

/*
 * One chunk of one object version as the tier stores it: its identity
 * (borrowed from the caller's bc_chunk_key_t, which must outlive it), the
 * header length of its slice values and where its slices lie. Filled by
 * bc_tier_redis_key_chunk_init; plain data, read by the functions below.
 */
typedef struct bc_tier_redis_chunk_s {
	const char *bucket, *key, *etag;
	uint32_t    index;
	uint64_t    unit;        /* the chunk size the object is cut in */
	uint32_t    len;         /* this chunk's bytes */
	uint32_t    hdr_len;     /* of each slice value */
	uint32_t    full;        /* payload bytes of a full slice */
	uint32_t    nfull;       /* full slices, first */
	uint32_t    ntail;       /* then these, tail[0..ntail) bytes each */
	uint32_t    tail[BC_REDIS_KEY_TAILS_MAX];
	uint32_t    nslices;
	char        id[BC_REDIS_KEY_ID_HEX + 1];
} bc_tier_redis_chunk_t;

/* A slice value as parse found it; the pointers are into the value. */
typedef struct bc_tier_redis_slice_s {
	const char    *bucket, *key, *etag;   /* not NUL-terminated */
	size_t         bucket_len, key_len, etag_len;
	uint64_t       unit;
	uint32_t       index, len;            /* the chunk's */
	uint32_t       slice, nslices;
	const uint8_t *payload;
	size_t         payload_len;
} bc_tier_redis_slice_t;

/* A metadata value as parse found it; the pointers are into the value. */
typedef struct bc_tier_redis_meta_s {
	const char    *bucket, *key;          /* not NUL-terminated */
	size_t         bucket_len, key_len;
	const uint8_t *blob;
	size_t         blob_len;
} bc_tier_redis_meta_t;

/*
 * Sets c up for chunk k, len bytes long, of an object cut in chunks of
 * unit bytes. Returns 0; BC_EINVAL when bucket, key or ETag is empty or
 * past its bound (BC_REDIS_KEY_*_MAX), unit is 0 or past
 * BC_REDIS_KEY_UNIT_MAX, or len is 0 or more than unit.
 */
int    bc_tier_redis_key_chunk_init(bc_tier_redis_chunk_t *c,
    const bc_chunk_key_t *k, uint64_t unit, uint64_t len);

/* Slice i's key name into out (NUL-terminated); returns its length.
 * i < c->nslices. */
size_t bc_tier_redis_key_slice(const bc_tier_redis_chunk_t *c, uint32_t i,
    char out[BC_REDIS_KEY_NAME_MAX]);
/* (bucket, key)'s metadata key name into out; returns its length, or
 * BC_EINVAL when bucket or key is empty or past its bound. */
int    bc_tier_redis_key_meta(const char *bucket, const char *key,
    char out[BC_REDIS_KEY_NAME_MAX]);

/* Slice i's bytes of the chunk: *len from *off. i < c->nslices. */
void   bc_tier_redis_key_span(const bc_tier_redis_chunk_t *c, uint32_t i,
    uint32_t *off, uint32_t *len);
/* The slices holding bytes [off, off + len) of the chunk: *n from
 * *first. Returns 0, or BC_ERANGE when the range is empty or runs past
 * the chunk's end. */
int    bc_tier_redis_key_range(const bc_tier_redis_chunk_t *c, uint64_t off,
    uint64_t len, uint32_t *first, uint32_t *n);
/* Slice i's value length: c->hdr_len and its payload. */
size_t bc_tier_redis_key_value_len(const bc_tier_redis_chunk_t *c,
    uint32_t i);

/* Writes slice i's header (c->hdr_len bytes) into out, for payload (its
 * span of the chunk's bytes), so the caller may send both without
 * copying the payload. */
void   bc_tier_redis_key_slice_hdr(const bc_tier_redis_chunk_t *c,
    uint32_t i, const void *payload, uint8_t *out);
/* Appends slice i's whole value to out: the header and its span of data
 * (the chunk's c->len bytes). Returns 0, BC_ENOMEM or BC_E2BIG (past
 * out's limit; nothing appended). */
int    bc_tier_redis_key_slice_encode(bc_buf_t *out,
    const bc_tier_redis_chunk_t *c, uint32_t i, const void *data);

/*
 * Parses a slice value read back (n bytes at v) into *s. Returns 0 when
 * it is one sound value of this format: magic, lengths within bounds that
 * add up to n, no NUL in the strings, a slice of the layout its chunk's
 * length gives with exactly that slice's payload length, both crcs;
 * BC_ENOTSUP for a sound magic with another version (a gateway of another
 * release); BC_EPROTO otherwise. Reads nothing outside v[0..n).
 */
int    bc_tier_redis_key_slice_parse(const void *v, size_t n,
    bc_tier_redis_slice_t *s);
/*
 * Checks that the value read from slice i's key (n bytes at v) is slice i
 * of c. Returns 0 and *payload (into v: the slice's span of the chunk);
 * BC_ENOENT for a sound value naming another version, chunk size, chunk,
 * length or slice, or of another format version (a miss); BC_EPROTO when
 * it is damaged.
 */
int    bc_tier_redis_key_slice_check(const bc_tier_redis_chunk_t *c,
    uint32_t i, const void *v, size_t n, const uint8_t **payload);

/* Appends (bucket, key)'s metadata value, for blob (len bytes), to out.
 * Returns 0; BC_EINVAL when bucket or key is empty or past its bound;
 * BC_E2BIG when len is past BC_REDIS_KEY_BLOB_MAX or out's limit
 * (nothing appended); BC_ENOMEM. */
int    bc_tier_redis_key_meta_encode(bc_buf_t *out, const char *bucket,
    const char *key, const void *blob, size_t len);
/* Parses a metadata value read back, as slice_parse does a slice's:
 * 0, BC_ENOTSUP or BC_EPROTO. */
int    bc_tier_redis_key_meta_parse(const void *v, size_t n,
    bc_tier_redis_meta_t *m);
/* Checks that the value read from (bucket, key)'s metadata key is
 * theirs: 0 and *blob, *len (into v); BC_ENOENT for another object's or
 * another format version's; BC_EPROTO when damaged. */
int    bc_tier_redis_key_meta_check(const char *bucket, const char *key,
    const void *v, size_t n, const uint8_t **blob, size_t *len);

#endif
