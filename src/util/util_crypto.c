/*
 * util_crypto.c — SHA-256, HMAC, MD5, hex and base64 over libcrypto.
 *
 * OpenSSL 3 looks a digest up (a "fetch": locks and hash tables) each
 * time one is named implicitly, and its one-shot HMAC and digest calls
 * set up whole contexts per call: together most of what a request's
 * signature check cost. So the digests are fetched once per process,
 * one-shot hashes reuse a context per thread (freed when the thread
 * ends), and HMAC is built from two digests (RFC 2104).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "util/util_assert.h"
#include "util/util_crypto.h"

#define HMAC_BLOCK 64   /* SHA-256's and SHA-1's block */

struct bc_sha256_s {
	EVP_MD_CTX *ctx;
};

struct bc_md5ctx_s {
	EVP_MD_CTX *ctx;
};

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_MD        *md_sha256, *md_sha1, *md_md5;
static pthread_key_t  ctx_key;

static void
free_thread_ctx(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void
fetch_digests(void)
{
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	/* libcrypto without its default provider */
	BC_AN(md_sha256);
	BC_AN(md_sha1);
	BC_AN(md_md5);
	BC_AZ(pthread_key_create(&ctx_key, free_thread_ctx));
}

const EVP_MD *
bc_digest_sha256(void)
{
	pthread_once(&fetch_once, fetch_digests);
	return md_sha256;
}

const EVP_MD *
bc_digest_sha1(void)
{
	pthread_once(&fetch_once, fetch_digests);
	return md_sha1;
}

static const EVP_MD *
md5_md(void)
{
	pthread_once(&fetch_once, fetch_digests);
	return md_md5;
}

/* Digest of a then b (b may be empty) into out, on this thread's
 * context. */
static void
digest2(const EVP_MD *md, const void *a, size_t an, const void *b,
    size_t bn, uint8_t *out)
{
	EVP_MD_CTX *ctx = pthread_getspecific(ctx_key);
	unsigned int len;

	if (ctx == NULL) {
		ctx = EVP_MD_CTX_new();
		/* out of memory at a thread's first hash */
		BC_AN(ctx);
		BC_AZ(pthread_setspecific(ctx_key, ctx));
	}
	/* cannot fail with a fetched digest */
	BC_CHECK(EVP_DigestInit_ex2(ctx, md, NULL) == 1);
	BC_CHECK(EVP_DigestUpdate(ctx, a, an) == 1);
	BC_CHECK(bn == 0 || EVP_DigestUpdate(ctx, b, bn) == 1);
	BC_CHECK(EVP_DigestFinal_ex(ctx, out, &len) == 1);
}

/* RFC 2104 HMAC with md (block HMAC_BLOCK, output mdlen bytes). */
static void
hmac(const EVP_MD *md, size_t mdlen, const void *key, size_t klen,
    const void *p, size_t n, uint8_t *out)
{
	uint8_t k[HMAC_BLOCK] = { 0 }, pad[HMAC_BLOCK], inner[EVP_MAX_MD_SIZE];

	if (klen > HMAC_BLOCK)
		digest2(md, key, klen, NULL, 0, k);
	else
		memcpy(k, key, klen);
	for (size_t i = 0; i < HMAC_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	digest2(md, pad, sizeof(pad), p, n, inner);
	for (size_t i = 0; i < HMAC_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	digest2(md, pad, sizeof(pad), inner, mdlen, out);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
}

void
bc_sha256(const void *p, size_t n, uint8_t out[BC_SHA256_LEN])
{
	digest2(bc_digest_sha256(), p, n, NULL, 0, out);
}

void
bc_sha256_hex(const void *p, size_t n, char out[65])
{
	uint8_t d[BC_SHA256_LEN];

	bc_sha256(p, n, d);
	bc_hex(d, sizeof(d), out);
}

void
bc_hmac_sha256(const void *key, size_t klen, const void *p, size_t n,
    uint8_t out[BC_SHA256_LEN])
{
	hmac(bc_digest_sha256(), BC_SHA256_LEN, key, klen, p, n, out);
}

void
bc_hmac_sha1(const void *key, size_t klen, const void *p, size_t n,
    uint8_t out[BC_SHA1_LEN])
{
	hmac(bc_digest_sha1(), BC_SHA1_LEN, key, klen, p, n, out);
}

void
bc_md5(const void *p, size_t n, uint8_t out[BC_MD5_LEN])
{
	digest2(md5_md(), p, n, NULL, 0, out);
}

bc_sha256_t *
bc_sha256_new(void)
{
	bc_sha256_t *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex2(h->ctx, bc_digest_sha256(),
	    NULL) != 1) {
		bc_sha256_free(h);
		return NULL;
	}
	return h;
}

void
bc_sha256_update(bc_sha256_t *h, const void *p, size_t n)
{
	EVP_DigestUpdate(h->ctx, p, n);
}

void
bc_sha256_final(bc_sha256_t *h, uint8_t out[BC_SHA256_LEN])
{
	unsigned int len = BC_SHA256_LEN;

	EVP_DigestFinal_ex(h->ctx, out, &len);
}

void
bc_sha256_free(bc_sha256_t *h)
{
	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

bc_md5ctx_t *
bc_md5_new(void)
{
	bc_md5ctx_t *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex2(h->ctx, md5_md(),
	    NULL) != 1) {
		bc_md5_free(h);
		return NULL;
	}
	return h;
}

void
bc_md5_update(bc_md5ctx_t *h, const void *p, size_t n)
{
	EVP_DigestUpdate(h->ctx, p, n);
}

void
bc_md5_final(bc_md5ctx_t *h, uint8_t out[BC_MD5_LEN])
{
	unsigned int len = BC_MD5_LEN;

	EVP_DigestFinal_ex(h->ctx, out, &len);
}

void
bc_md5_free(bc_md5ctx_t *h)
{
	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int
bc_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void
bc_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int
bc_base64(const uint8_t *p, size_t n, char *out, size_t outlen)
{
	size_t need = 4 * ((n + 2) / 3) + 1;

	if (outlen < need)
		return -1;
	return EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}

int
bc_streq_ct(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}
