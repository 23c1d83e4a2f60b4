/*
 * s3_checksum.c — S3's object checksums (see s3_checksum.h).
 *
 * The CRCs are util_crc.c's (the disk and Redis tiers use CRC32C too).
 * SHA1 and SHA256 are libcrypto digests fetched once per process.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "s3/s3_checksum.h"
#include "util/util_crypto.h"
#include "util/util_error.h"

static const struct {
	const char *header;
	const char *name;
	size_t      b64_len;
} algs[BC_CKSUM_COUNT] = {
	[BC_CKSUM_NONE]      = { "", "", 0 },
	[BC_CKSUM_CRC32]     = { "x-amz-checksum-crc32", "CRC32", 8 },
	[BC_CKSUM_CRC32C]    = { "x-amz-checksum-crc32c", "CRC32C", 8 },
	[BC_CKSUM_CRC64NVME] = { "x-amz-checksum-crc64nvme", "CRC64NVME", 12 },
	[BC_CKSUM_SHA1]      = { "x-amz-checksum-sha1", "SHA1", 28 },
	[BC_CKSUM_SHA256]    = { "x-amz-checksum-sha256", "SHA256", 44 },
};

int
bc_checksum_init(bc_checksum_t *c, bc_checksum_alg_t alg)
{
	const EVP_MD *md;

	memset(c, 0, sizeof(*c));
	c->alg = alg;
	if (alg != BC_CKSUM_SHA1 && alg != BC_CKSUM_SHA256)
		return 0;
	md = alg == BC_CKSUM_SHA1 ? bc_digest_sha1() : bc_digest_sha256();
	c->md = EVP_MD_CTX_new();
	if (c->md == NULL || EVP_DigestInit_ex2(c->md, md, NULL) != 1) {
		bc_checksum_fini(c);
		return BC_ENOMEM;
	}
	return 0;
}

void
bc_checksum_update(bc_checksum_t *c, const void *p, size_t n)
{
	switch (c->alg) {
	case BC_CKSUM_CRC32:
		c->crc = bc_crc32((uint32_t)c->crc, p, n);
		break;
	case BC_CKSUM_CRC32C:
		c->crc = bc_crc32c((uint32_t)c->crc, p, n);
		break;
	case BC_CKSUM_CRC64NVME:
		c->crc = bc_crc64nvme(c->crc, p, n);
		break;
	case BC_CKSUM_SHA1:
	case BC_CKSUM_SHA256:
		if (c->md != NULL)
			EVP_DigestUpdate(c->md, p, n);
		break;
	default:
		break;
	}
}

size_t
bc_checksum_final(bc_checksum_t *c, char out[BC_CKSUM_B64_MAX])
{
	uint8_t d[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int n;

	switch (c->alg) {
	case BC_CKSUM_CRC32:
	case BC_CKSUM_CRC32C:
		len = 4;
		for (unsigned i = 0; i < 4; i++)
			d[i] = (uint8_t)(c->crc >> (24 - 8 * i));
		break;
	case BC_CKSUM_CRC64NVME:
		len = 8;
		for (unsigned i = 0; i < 8; i++)
			d[i] = (uint8_t)(c->crc >> (56 - 8 * i));
		break;
	case BC_CKSUM_SHA1:
	case BC_CKSUM_SHA256:
		if (c->md == NULL || EVP_DigestFinal_ex(c->md, d, &len) != 1)
			len = 0;
		break;
	default:
		break;
	}
	n = bc_base64(d, len, out, BC_CKSUM_B64_MAX);
	if (n < 0)
		n = 0;
	out[n] = '\0';
	return (size_t)n;
}

void
bc_checksum_fini(bc_checksum_t *c)
{
	EVP_MD_CTX_free(c->md);
	memset(c, 0, sizeof(*c));
}

int
bc_checksum_b64(bc_checksum_alg_t alg, const void *p, size_t n,
    char out[BC_CKSUM_B64_MAX])
{
	bc_checksum_t c;
	size_t len;

	if (bc_checksum_init(&c, alg) < 0)
		return BC_ENOMEM;
	bc_checksum_update(&c, p, n);
	len = bc_checksum_final(&c, out);
	bc_checksum_fini(&c);
	return (int)len;
}

bc_checksum_alg_t
bc_checksum_from_header(const char *name)
{
	for (int i = 1; i < BC_CKSUM_COUNT; i++)
		if (strcasecmp(name, algs[i].header) == 0)
			return (bc_checksum_alg_t)i;
	return BC_CKSUM_NONE;
}

bc_checksum_alg_t
bc_checksum_from_name(const char *value)
{
	for (int i = 1; i < BC_CKSUM_COUNT; i++)
		if (strcasecmp(value, algs[i].name) == 0)
			return (bc_checksum_alg_t)i;
	return BC_CKSUM_NONE;
}

const char *
bc_checksum_header(bc_checksum_alg_t alg)
{
	return (unsigned)alg < BC_CKSUM_COUNT ? algs[alg].header : "";
}

const char *
bc_checksum_name(bc_checksum_alg_t alg)
{
	return (unsigned)alg < BC_CKSUM_COUNT ? algs[alg].name : "";
}

size_t
bc_checksum_b64_len(bc_checksum_alg_t alg)
{
	return (unsigned)alg < BC_CKSUM_COUNT ? algs[alg].b64_len : 0;
}

static bool
is_b64(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

bool
bc_checksum_value_ok(bc_checksum_alg_t alg, const char *value, size_t n)
{
	/* padding: 4-byte CRC "xxxxxx==", 8-byte "xxxxxxxxxxx=", SHA-1
	 * (20 bytes) "...=", SHA-256 (32 bytes) "...=" */
	size_t want = bc_checksum_b64_len(alg), pad;

	if (want == 0 || n != want)
		return false;
	pad = alg == BC_CKSUM_CRC32 || alg == BC_CKSUM_CRC32C ? 2 : 1;
	for (size_t i = 0; i < n; i++) {
		if (i >= n - pad) {
			if (value[i] != '=')
				return false;
		} else if (!is_b64(value[i])) {
			return false;
		}
	}
	return true;
}

bc_s3err_t
bc_checksum_from_headers(const bc_kvlist_t *h, bc_checksum_alg_t *alg,
    const char **value)
{
	*alg = BC_CKSUM_NONE;
	*value = NULL;
	for (size_t i = 0; i < h->n; i++) {
		bc_checksum_alg_t a = bc_checksum_from_header(h->v[i].name);

		if (a == BC_CKSUM_NONE)
			continue;
		if (*alg != BC_CKSUM_NONE || !bc_checksum_value_ok(a,
		    h->v[i].value, strlen(h->v[i].value)))
			return BC_S3E_InvalidRequest;
		*alg = a;
		*value = h->v[i].value;
	}
	return BC_S3E_NONE;
}
