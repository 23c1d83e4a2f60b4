/* util_crypto.c — SHA-256, HMAC, MD5, hex and base64 over libcrypto. */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util/util_crypto.h"

struct bc_sha256_s {
	EVP_MD_CTX *ctx;
};

struct bc_md5ctx_s {
	EVP_MD_CTX *ctx;
};

void
bc_sha256(const void *p, size_t n, uint8_t out[BC_SHA256_LEN])
{
	unsigned int len = BC_SHA256_LEN;

	EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
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
	unsigned int len = BC_SHA256_LEN;

	HMAC(EVP_sha256(), key, (int)klen, p, n, out, &len);
}

void
bc_hmac_sha1(const void *key, size_t klen, const void *p, size_t n,
    uint8_t out[BC_SHA1_LEN])
{
	unsigned int len = BC_SHA1_LEN;

	HMAC(EVP_sha1(), key, (int)klen, p, n, out, &len);
}

void
bc_md5(const void *p, size_t n, uint8_t out[BC_MD5_LEN])
{
	unsigned int len = BC_MD5_LEN;

	EVP_Digest(p, n, out, &len, EVP_md5(), NULL);
}

bc_sha256_t *
bc_sha256_new(void)
{
	bc_sha256_t *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(),
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
	bc_sha256_free(h);
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
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_md5(),
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
	bc_md5_free(h);
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
