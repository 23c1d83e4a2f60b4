/*
 * fuzz_sigv4.c — SigV4 verification through bc_s3_auth_verify
 * (s3/s3_auth.h): the Authorization header and the presigned X-Amz-*
 * query, with a fixed clock and a fixed keyring; and the signer
 * (bc_sigv4_sign) on the same requests.
 *
 * Input: one byte of flags, then a request in the text form of fuzz.h.
 *   bits 0-1  the clock: 20130524T000100Z (the S3 examples, +60 s),
 *             20150830T123600Z (aws-sig-v4-test-suite), 20261121T063912Z,
 *             20130524T000000Z
 *   bit 2     virtual-hosted style (--domain s3.amazonaws.com)
 *   bit 3     anonymous requests allowed
 *   bit 4     sign first: a request with an X-Amz-Algorithm, -Credential
 *             or -Signature parameter gets its X-Amz-Signature computed
 *             from its own parameters (as a presigning client would);
 *             any other is signed by bc_sigv4_sign with the key of bit 6
 *   bit 5     bc_sigv4_sign's payload hash: UNSIGNED-PAYLOAD, else the
 *             streaming mode when bit 7 is set, else the empty SHA-256
 *   bit 6     bc_sigv4_sign's key: the S3 examples' key, else one whose
 *             secret is 300 bytes (past the per-thread key cache)
 *   bit 7     see bit 5; also a session token for bc_sigv4_sign
 * Checks: a request this target signed never fails with
 * SignatureDoesNotMatch (signer and verifier must agree), a verified
 * request carries what s3_auth.h promises, and every x-amz-date that
 * parses formats back to itself.
 */
#include <time.h>

#include "fuzz.h"
#include "s3/s3_auth.h"
#include "s3/s3_date.h"
#include "s3/s3_sigv4.h"

#define INPUT_MAX 8192

#define DOC_AKID   "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define LONG_AKID  "LONGSECRET"

static char long_secret[301];

static const char *
secret_of(void *ctx, const char *access_key)
{
	static const struct {
		const char *ak, *sk;
	} keys[] = {
		{ DOC_AKID, DOC_SECRET },
		{ "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" },
		{ "S3RVER", "S3RVER" },
		{ "AK", "SK" },
	};

	(void)ctx;
	if (strcmp(access_key, LONG_AKID) == 0) {
		if (long_secret[0] == '\0')
			memset(long_secret, 'x', sizeof(long_secret) - 1);
		return long_secret;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (strcmp(keys[i].ak, access_key) == 0)
			return keys[i].sk;
	return NULL;
}

/* Replaces the value of every query parameter named name. */
static void
query_set(bc_kvlist_t *q, const char *name, const char *value)
{
	for (size_t i = 0; i < q->n; i++) {
		if (strcmp(q->v[i].name, name) != 0)
			continue;
		free(q->v[i].value);
		q->v[i].value = fuzz_strndup(value, strlen(value));
	}
}

/*
 * Presigning, as a client does it: the canonical request over the
 * request's own X-Amz-SignedHeaders (without X-Amz-Signature), the scope
 * of its X-Amz-Credential "AK/DATE8/REGION/s3/aws4_request", signed at its
 * X-Amz-Date. Returns false when those parameters make no signature.
 */
static bool
presign(bc_s3_req_t *r)
{
	const char *cred = bc_kv_get_exact(&r->query, "X-Amz-Credential");
	const char *date = bc_kv_get_exact(&r->query, "X-Amz-Date");
	const char *sh = bc_kv_get_exact(&r->query, "X-Amz-SignedHeaders");
	const char *ph = bc_kv_get_exact(&r->query, "X-Amz-Content-Sha256");
	const char *part[5], *secret;
	char ak[129], date8[9], region[64], scope[128], sig[65];
	bc_buf_t creq = BC_BUF_INIT;
	bc_sigv4_input_t in;
	uint8_t key[32];
	size_t len[5], k = 0, start = 0, n;
	bool ok = false;

	if (cred == NULL || date == NULL || sh == NULL ||
	    bc_kv_get_exact(&r->query, "X-Amz-Signature") == NULL)
		return false;
	n = strlen(cred);
	for (size_t i = 0; i <= n && k < 5; i++) {
		if (i < n && cred[i] != '/')
			continue;
		part[k] = cred + start;
		len[k++] = i - start;
		start = i + 1;
	}
	if (k != 5 || start != n + 1 || len[0] >= sizeof(ak) ||
	    len[1] != 8 || len[2] >= sizeof(region))
		return false;
	memcpy(ak, part[0], len[0]);
	ak[len[0]] = '\0';
	memcpy(date8, part[1], 8);
	date8[8] = '\0';
	memcpy(region, part[2], len[2]);
	region[len[2]] = '\0';
	secret = secret_of(NULL, ak);
	if (secret == NULL || strlen(date) != 16)
		return false;
	memset(&in, 0, sizeof(in));
	in.method = r->method;
	in.path = r->path;
	in.query = &r->query;
	in.headers = &r->headers;
	in.signed_headers = sh;
	in.payload_hash = ph != NULL ? ph : BC_SIGV4_UNSIGNED;
	in.skip_query = "X-Amz-Signature";
	if (bc_sigv4_canonical_request(&creq, &in) < 0)
		goto out;
	snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", date8, region);
	bc_sigv4_signing_key(secret, date8, region, "s3", key);
	bc_sigv4_signature(bc_buf_str(&creq), date, scope, key, sig);
	query_set(&r->query, "X-Amz-Signature", sig);
	ok = true;
out:
	bc_buf_fini(&creq);
	return ok;
}

/* bc_sigv4_sign over the request as it is; false when it refuses. */
static bool
sign(bc_s3_req_t *r, unsigned flags, time_t now)
{
	bc_sigv4_creds_t creds = { DOC_AKID, DOC_SECRET, NULL, "us-east-1",
	    "s3" };
	bc_sigv4_ctx_t ctx;
	const char *ph;

	if (!(flags & 64)) {
		creds.access_key = LONG_AKID;
		creds.secret_key = secret_of(NULL, LONG_AKID);
	}
	if (flags & 128)
		creds.session_token = "FQoGZXIvYXdzEJr//////////wEaDOKEN=";
	ph = flags & 32 ? BC_SIGV4_UNSIGNED : flags & 128 ?
	    BC_SIGV4_STREAMING : BC_SIGV4_EMPTY_SHA256;
	if (bc_sigv4_sign(&r->headers, r->method, r->path, &r->query, ph,
	    &creds, now, &ctx) < 0)
		return false;
	FUZZ_CHECK(strlen(ctx.signature) == 64);
	FUZZ_CHECK(strlen(ctx.amz_date) == 16);
	return true;
}

/* A valid x-amz-date (not a leap second, 1970 on) formats back to itself. */
static void
check_amz_date(const char *s)
{
	char out[17];
	time_t t;

	if (s == NULL || bc_sigv4_parse_amz_date(s, &t) < 0)
		return;
	if (memcmp(s, "1970", 4) < 0 || memcmp(s + 13, "60", 2) == 0)
		return;
	bc_sigv4_amz_date(t, out);
	FUZZ_CHECK(strcmp(out, s) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const time_t clocks[4] = { 1369353660, 1440938160, 1795243152,
	    1369353600 };
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_s3err_t e;
	unsigned flags;
	bool signed_here = false;
	time_t now, t;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	flags = data[0];
	now = clocks[flags & 3];
	e = fuzz_req_parse(&r, data + 1, size - 1, flags & 4 ?
	    "s3.amazonaws.com" : NULL);
	if (e != BC_S3E_NONE)
		goto out;
	check_amz_date(bc_kv_get(&r.headers, "x-amz-date"));
	check_amz_date(bc_kv_get_exact(&r.query, "X-Amz-Date"));
	if (bc_kv_get(&r.headers, "Date") != NULL)
		(void)bc_http_date_parse(bc_kv_get(&r.headers, "Date"), &t);
	if (flags & 16) {
		if (bc_kv_get_exact(&r.query, "X-Amz-Algorithm") != NULL ||
		    bc_kv_get_exact(&r.query, "X-Amz-Credential") != NULL ||
		    bc_kv_get_exact(&r.query, "X-Amz-Signature") != NULL)
			signed_here = presign(&r);
		else
			signed_here = sign(&r, flags, now);
	}
	e = bc_s3_auth_verify(&r, now, secret_of, NULL, flags & 8, &a);
	if (signed_here)
		FUZZ_CHECK(e != BC_S3E_SignatureDoesNotMatch);
	if (e != BC_S3E_NONE)
		goto out;
	switch (a.kind) {
	case BC_S3AUTH_NONE:
		FUZZ_CHECK(flags & 8);
		break;
	case BC_S3AUTH_V4:
	case BC_S3AUTH_V4_QUERY:
		FUZZ_CHECK(secret_of(NULL, a.access_key) != NULL);
		FUZZ_CHECK(strlen(a.v4.signature) == 64);
		FUZZ_CHECK(a.streaming == (strcmp(a.payload_hash,
		    BC_SIGV4_STREAMING) == 0));
		break;
	case BC_S3AUTH_V2:
	case BC_S3AUTH_V2_QUERY:
		FUZZ_CHECK(secret_of(NULL, a.access_key) != NULL);
		break;
	}
out:
	bc_s3_req_fini(&r);
	return 0;
}
