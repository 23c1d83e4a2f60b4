/*
 * util_crypto.h — the hashes S3 needs, over OpenSSL's libcrypto.
 *
 * Pure functions, thread-safe. Hex output is lowercase and NUL-terminated
 * (a SHA-256 hex needs 65 bytes, an MD5 hex 33).
 */
#ifndef BC_UTIL_CRYPTO_H
#define BC_UTIL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/types.h>

#define BC_SHA256_LEN 32
#define BC_SHA1_LEN   20
#define BC_MD5_LEN    16

typedef struct bc_sha256_s bc_sha256_t;   /* incremental SHA-256 */

void bc_sha256(const void *p, size_t n, uint8_t out[BC_SHA256_LEN]);
void bc_sha256_hex(const void *p, size_t n, char out[65]);
void bc_hmac_sha256(const void *key, size_t klen, const void *p, size_t n,
    uint8_t out[BC_SHA256_LEN]);
void bc_hmac_sha1(const void *key, size_t klen, const void *p, size_t n,
    uint8_t out[BC_SHA1_LEN]);
void bc_md5(const void *p, size_t n, uint8_t out[BC_MD5_LEN]);

/*
 * Incremental hashing. Ownership (docs/design.md "Turn-3 contracts"): the
 * caller of _new owns the context and is the only one who frees it, with
 * _free, on every path; _final writes the digest and never frees (after
 * it the context takes no more updates, only _free). _new returns NULL
 * on allocation failure; _free(NULL) is a no-op.
 */
bc_sha256_t *bc_sha256_new(void);
void bc_sha256_update(bc_sha256_t *h, const void *p, size_t n);
void bc_sha256_final(bc_sha256_t *h, uint8_t out[BC_SHA256_LEN]);
void bc_sha256_free(bc_sha256_t *h);

typedef struct bc_md5ctx_s bc_md5ctx_t;   /* incremental MD5 (ETags); owned
						    as bc_sha256_t is */
bc_md5ctx_t *bc_md5_new(void);
void bc_md5_update(bc_md5ctx_t *h, const void *p, size_t n);
void bc_md5_final(bc_md5ctx_t *h, uint8_t out[BC_MD5_LEN]);
void bc_md5_free(bc_md5ctx_t *h);

/* The value of hex digit c, or -1. */
int  bc_hexval(char c);
/* Writes 2n lowercase hex digits and a NUL to out. */
void bc_hex(const uint8_t *p, size_t n, char *out);
/* Base64 (standard alphabet, padded) of p into out; returns the length
 * written (without NUL) or -1 when outlen is too small. */
int  bc_base64(const uint8_t *p, size_t n, char *out, size_t outlen);
/* Constant-time comparison of two NUL-terminated strings; 1 when equal. */
int  bc_streq_ct(const char *a, const char *b);

/* The digest algorithms, fetched once for the process (OpenSSL 3: a
 * fetch per use is slow), for callers streaming their own contexts. */
const EVP_MD *bc_digest_sha256(void);
const EVP_MD *bc_digest_sha1(void);

#endif
