/*
 * s3_checksum.h — the checksums S3 keeps beside an object (x-amz-checksum-*
 * headers and aws-chunked trailers), computed incrementally.
 *
 * CRC32 (CRC-32/ISO-HDLC, zlib's), CRC32C (Castagnoli), CRC64NVME
 * (reflected, polynomial 0xAD93D23594C93659, init and xorout all ones),
 * SHA1 and SHA256. A value is written as S3 writes it: the base64 of the
 * big-endian digest ("AAAAAA==" for the CRC32 of nothing).
 *
 * Thread-safe: the CRC tables and the libcrypto digests are set up once
 * per process (on first use); a bc_checksum_t belongs to one thread at a
 * time.
 */
#ifndef BC_S3_CHECKSUM_H
#define BC_S3_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_error.h"
#include "util/util_crc.h"    /* bc_crc32, bc_crc32c, bc_crc64nvme */
#include "util/util_kv.h"

typedef enum bc_checksum_alg_e {
	BC_CKSUM_NONE = 0,
	BC_CKSUM_CRC32,
	BC_CKSUM_CRC32C,
	BC_CKSUM_CRC64NVME,
	BC_CKSUM_SHA1,
	BC_CKSUM_SHA256,
} bc_checksum_alg_t;

#define BC_CKSUM_COUNT   6    /* algorithms, NONE included */
#define BC_CKSUM_B64_MAX 45   /* base64 of a SHA-256 (44) and a NUL */

typedef struct bc_checksum_s {
	bc_checksum_alg_t alg;
	uint64_t          crc;   /* CRCs: the running value */
	void             *md;    /* SHA1/SHA256: an EVP_MD_CTX */
} bc_checksum_t;

/* Starts a checksum of alg (not NONE). Returns 0, or BC_ENOMEM (c is then
 * safe to _fini). */
int  bc_checksum_init(bc_checksum_t *c, bc_checksum_alg_t alg);
void bc_checksum_update(bc_checksum_t *c, const void *p, size_t n);
/* Writes the base64 value (NUL-terminated) into out and returns its
 * length; call once, then _fini. */
size_t bc_checksum_final(bc_checksum_t *c, char out[BC_CKSUM_B64_MAX]);
/* Releases c; a zeroed or finished c is fine. */
void bc_checksum_fini(bc_checksum_t *c);

/* One-shot: the base64 value of alg over n bytes at p. Returns its length
 * or BC_ENOMEM. */
int  bc_checksum_b64(bc_checksum_alg_t alg, const void *p, size_t n,
    char out[BC_CKSUM_B64_MAX]);

/* The algorithm a header names ("x-amz-checksum-crc32", any case), or
 * NONE. */
bc_checksum_alg_t bc_checksum_from_header(const char *name);
/* The algorithm an x-amz-sdk-checksum-algorithm or x-amz-checksum-
 * algorithm value names ("CRC32", ..., any case), or NONE. */
bc_checksum_alg_t bc_checksum_from_name(const char *value);
/* "x-amz-checksum-crc32", ...; "" for NONE. Static. */
const char *bc_checksum_header(bc_checksum_alg_t alg);
/* "CRC32", ...; "" for NONE. Static. */
const char *bc_checksum_name(bc_checksum_alg_t alg);
/* Length of alg's base64 value (8, 8, 12, 28, 44; 0 for NONE). */
size_t bc_checksum_b64_len(bc_checksum_alg_t alg);
/* true when value (n bytes) has the form of alg's base64 value: its
 * length, the base64 alphabet, the padding in place. */
bool bc_checksum_value_ok(bc_checksum_alg_t alg, const char *value,
    size_t n);

/* The one x-amz-checksum-<alg> header (a value, not -algorithm, -mode or
 * -type) among h: BC_S3E_NONE with *alg NONE when there is none, or with
 * *alg and *value (in h) set; InvalidRequest when there are several or
 * its value is not that checksum's form (S3's answers). */
bc_s3err_t bc_checksum_from_headers(const bc_kvlist_t *h,
    bc_checksum_alg_t *alg, const char **value);

#endif
