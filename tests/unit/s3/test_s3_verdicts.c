/*
 * test_s3_verdicts.c — s3/s3_verdicts.c: the presigned-URL verdict cache,
 * on the S3 API reference's presigned example (examplebucket, 20130524):
 * a verified URL is accepted again from the cache; any byte of the target
 * or of a signed header that differs, a time outside the URL's window, a
 * cleared cache, misses; refusals and header-signed requests are never
 * stored.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_verdicts.h"

#define T_S3DOC     1369353600   /* 20130524T000000Z */
#define DOC_AKID    "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define PRESIGN_SIG \
	"aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
#define PRESIGN_Q(sig) \
	"/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" \
	"&X-Amz-Credential=" DOC_AKID "%2F20130524%2Fus-east-1%2Fs3" \
	"%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400" \
	"&X-Amz-SignedHeaders=host&X-Amz-Signature=" sig

static int secret_calls;

static const char *
secret(void *ctx, const char *ak)
{
	secret_calls++;
	return strcmp(ak, DOC_AKID) == 0 ? DOC_SECRET : NULL;
}

/* Verifies target with Host host through v at now. */
static bc_s3err_t
check(bc_s3_verdicts_t *v, const char *target, const char *host, time_t now,
    bc_s3_auth_t *a)
{
	bc_s3_req_t r;
	bc_s3err_t e;

	bc_s3_req_init(&r);
	cr_assert_eq(bc_kv_add(&r.headers, "Host", host), 0);
	cr_assert_eq(bc_s3_req_parse(&r, "GET", target, "s3.amazonaws.com"),
	    BC_S3E_NONE);
	memset(a, 0, sizeof(*a));
	e = bc_s3_verdicts_verify(v, &r, now, secret, NULL, false, a, NULL);
	bc_s3_req_fini(&r);
	return e;
}

#define HOST "examplebucket.s3.amazonaws.com"

LTest(s3_verdicts, remembers_a_verified_url)
{
	bc_s3_verdicts_t *v = bc_s3_verdicts_new(16);
	uint64_t hits, stores;
	bc_s3_auth_t a, b;

	cr_assert_not_null(v);
	secret_calls = 0;
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC, &a),
	    BC_S3E_NONE);
	cr_assert_eq(secret_calls, 1);
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC + 60, &b),
	    BC_S3E_NONE);
	cr_assert_eq(secret_calls, 1, "the second was not verified again");
	cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "the same verdict");
	cr_assert_eq(b.kind, BC_S3AUTH_V4_QUERY);
	cr_assert_str_eq(b.access_key, DOC_AKID);
	bc_s3_verdicts_counts(v, &hits, &stores);
	cr_assert_eq(hits, 1);
	cr_assert_eq(stores, 1);
	/* cleared: verified again */
	bc_s3_verdicts_clear(v);
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC, &b),
	    BC_S3E_NONE);
	cr_assert_eq(secret_calls, 2);
	bc_s3_verdicts_free(v);
}

LTest(s3_verdicts, window_holds_for_hits)
{
	bc_s3_verdicts_t *v = bc_s3_verdicts_new(16);
	bc_s3_auth_t a;

	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC, &a),
	    BC_S3E_NONE);
	/* past X-Amz-Expires, and before the allowed skew: refused, even
	 * though a verdict is cached */
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC + 86401,
	    &a), BC_S3E_AccessDenied);
	cr_assert_str_eq(a.message, "Request has expired");
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC - 901,
	    &a), BC_S3E_AccessDenied);
	/* the edges are the verifier's */
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC + 86400,
	    &a), BC_S3E_NONE);
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC - 900,
	    &a), BC_S3E_NONE);
	bc_s3_verdicts_free(v);
}

LTest(s3_verdicts, any_other_byte_misses)
{
	bc_s3_verdicts_t *v = bc_s3_verdicts_new(16);
	uint64_t hits, stores;
	bc_s3_auth_t a;

	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC, &a),
	    BC_S3E_NONE);
	/* the signed Host differs: verified, and it does not match */
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG),
	    "examplebucket.s3.amazonaws.co", T_S3DOC, &a),
	    BC_S3E_SignatureDoesNotMatch);
	/* one signature digit, a parameter added */
	cr_assert_eq(check(v, PRESIGN_Q(
	    "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d405"),
	    HOST, T_S3DOC, &a), BC_S3E_SignatureDoesNotMatch);
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG) "&x=1", HOST, T_S3DOC,
	    &a), BC_S3E_SignatureDoesNotMatch);
	/* refusals are recomputed every time, never stored */
	cr_assert_eq(check(v, PRESIGN_Q(PRESIGN_SIG) "&x=1", HOST, T_S3DOC,
	    &a), BC_S3E_SignatureDoesNotMatch);
	bc_s3_verdicts_counts(v, &hits, &stores);
	cr_assert_eq(hits, 0);
	cr_assert_eq(stores, 1);
	bc_s3_verdicts_free(v);
}

/* A header-signed request is never cached (its date changes with every
 * request); without a cache, verification is the plain verifier's. */
LTest(s3_verdicts, only_presigned)
{
	bc_s3_verdicts_t *v = bc_s3_verdicts_new(16);
	uint64_t hits, stores;
	bc_s3_auth_t a;

	cr_assert_eq(check(v, "/test.txt", HOST, T_S3DOC, &a),
	    BC_S3E_AccessDenied);   /* unsigned, anonymous not allowed */
	cr_assert_eq(check(NULL, PRESIGN_Q(PRESIGN_SIG), HOST, T_S3DOC, &a),
	    BC_S3E_NONE);
	bc_s3_verdicts_counts(v, &hits, &stores);
	cr_assert_eq(hits + stores, 0);
	bc_s3_verdicts_free(v);
	bc_s3_verdicts_free(NULL);
}
