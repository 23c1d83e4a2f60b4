/*
 * fuzz_sigv2.c — SigV2 verification through bc_s3_auth_verify
 * (s3/s3_auth.h): "Authorization: AWS AK:sig" and the
 * AWSAccessKeyId/Expires/Signature query, with a fixed clock and keyring.
 *
 * Input: one byte of flags, then a request in the text form of fuzz.h.
 *   bits 0-1  the clock: 1700000000 (botocore's examples), +600, +3600,
 *             20130524T000000Z
 *   bit 2     virtual-hosted style (--domain s3.example.test)
 *   bit 3     sign first, as a client would, from
 *             bc_s3_sigv2_string_to_sign: the query form (a Signature
 *             parameter and no Authorization) gets its Signature set with
 *             the secret of its AWSAccessKeyId; any other request gets
 *             "Authorization: AWS S3RVER:sig" over its Date or x-amz-date
 * Checks: a request this target signed never fails with
 * SignatureDoesNotMatch, and a verified one names a known key.
 */
#include <time.h>

#include "fuzz.h"
#include "s3/s3_auth.h"
#include "util/util_crypto.h"

#define INPUT_MAX 8192

static const char *
secret_of(void *ctx, const char *access_key)
{
	(void)ctx;
	if (strcmp(access_key, "S3RVER") == 0)
		return "S3RVER";
	if (strcmp(access_key, "AKIAIOSFODNN7EXAMPLE") == 0)
		return "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	return NULL;
}

/* base64(HMAC-SHA1(secret, string to sign of r over date)) into b64[40]. */
static bool
signature(const bc_s3_req_t *r, const char *secret, const char *date,
    char b64[40])
{
	bc_buf_t sts = BC_BUF_INIT;
	uint8_t mac[BC_SHA1_LEN];
	bool ok = false;

	if (bc_s3_sigv2_string_to_sign(&sts, r, date) < 0)
		goto out;
	bc_hmac_sha1(secret, strlen(secret), sts.data, sts.len, mac);
	ok = bc_base64(mac, sizeof(mac), b64, 40) >= 0;
out:
	bc_buf_fini(&sts);
	return ok;
}

static bool
sign(bc_s3_req_t *r)
{
	const char *ak = bc_kv_get_exact(&r->query, "AWSAccessKeyId");
	const char *exp = bc_kv_get_exact(&r->query, "Expires");
	const char *amz, *date, *secret;
	char b64[40], authz[64];

	if (bc_kv_get(&r->headers, "Authorization") == NULL &&
	    bc_kv_get_exact(&r->query, "Signature") != NULL) {
		secret = ak != NULL ? secret_of(NULL, ak) : NULL;
		if (secret == NULL || exp == NULL ||
		    !signature(r, secret, exp, b64))
			return false;
		for (size_t i = 0; i < r->query.n; i++) {
			if (strcmp(r->query.v[i].name, "Signature") != 0)
				continue;
			free(r->query.v[i].value);
			r->query.v[i].value = fuzz_strndup(b64, strlen(b64));
		}
		return true;
	}
	/* the header form; Authorization is not in the string to sign, but
	 * its presence decides the form, so it is set first */
	FUZZ_CHECK(bc_kv_set(&r->headers, "Authorization", "AWS S3RVER:x") ==
	    0);
	amz = bc_kv_get(&r->headers, "x-amz-date");
	date = bc_kv_get(&r->headers, "Date");
	if (!signature(r, "S3RVER", amz != NULL ? "" : date != NULL ? date :
	    "", b64))
		return false;
	snprintf(authz, sizeof(authz), "AWS S3RVER:%s", b64);
	FUZZ_CHECK(bc_kv_set(&r->headers, "Authorization", authz) == 0);
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const time_t clocks[4] = { 1700000000, 1700000600, 1700003600,
	    1369353600 };
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_buf_t sts = BC_BUF_INIT;
	bc_s3err_t e;
	unsigned flags;
	bool signed_here = false;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	flags = data[0];
	e = fuzz_req_parse(&r, data + 1, size - 1, flags & 4 ?
	    "s3.example.test" : NULL);
	if (e != BC_S3E_NONE)
		goto out;
	(void)bc_s3_sigv2_string_to_sign(&sts, &r, "1700000000");
	if (flags & 8)
		signed_here = sign(&r);
	e = bc_s3_auth_verify(&r, clocks[flags & 3], secret_of, NULL, false,
	    &a);
	if (signed_here)
		FUZZ_CHECK(e != BC_S3E_SignatureDoesNotMatch);
	if (e == BC_S3E_NONE) {
		FUZZ_CHECK(a.kind != BC_S3AUTH_NONE);
		FUZZ_CHECK(secret_of(NULL, a.access_key) != NULL);
	}
out:
	bc_buf_fini(&sts);
	bc_s3_req_fini(&r);
	return 0;
}
