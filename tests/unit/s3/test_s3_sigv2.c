/*
 * test_s3_sigv2.c — SigV2 string to sign and verifier against what
 * botocore 1.29 (Debian's boto3 1.26) produces: presigned URLs from
 * generate_presigned_url (HmacV1QueryAuth, its default for presigning)
 * and HmacV1Auth headers, path-style and virtual-hosted, with 'now'
 * fixed at 1700000000 (Tue, 14 Nov 2023 22:13:20 GMT) and the key pair
 * S3RVER/S3RVER, endpoint http://127.0.0.1:9.
 */
#include <criterion/criterion.h>

#include "../bc_test.h"
#include <stdlib.h>
#include <string.h>

#include "s3/s3_auth.h"

#define NOW  1700000000
#define DATE "Tue, 14 Nov 2023 22:13:20 GMT"

static const char *
secret_of(void *ctx, const char *access_key)
{
	const char *s = ctx != NULL ? ctx : "S3RVER";

	return strcmp(access_key, "S3RVER") == 0 ? s : NULL;
}

typedef struct hdr_s {
	const char *name;
	const char *value;
} hdr_t;

static void
req_build(bc_s3_req_t *r, const char *method, const char *target,
    const char *host, const hdr_t *h, const char *domain)
{
	bc_s3_req_init(r);
	cr_assert_eq(bc_kv_add(&r->headers, "Host", host), 0);
	for (size_t i = 0; h != NULL && h[i].name != NULL; i++)
		cr_assert_eq(bc_kv_add(&r->headers, h[i].name, h[i].value), 0);
	cr_assert_eq(bc_s3_req_parse(r, method, target, domain), BC_S3E_NONE,
	    "%s %s", method, target);
}

#define PATH_HOST "127.0.0.1:9"
#define VHOST     "bucket.s3.example.test:9"
#define DOMAIN    "s3.example.test"

static const hdr_t put_headers[] = {
	{ "Content-Type", "application/octet-stream" },
	{ "x-amz-meta-Color", "blue" },
	{ "x-amz-meta-shape", "round" },
	{ "x-amz-acl", "private" },
	{ "User-Agent", "Boto3/1.26.27 Python/3.11.2 Botocore/1.29.27" },
	{ "Content-MD5", "XUFAKrxLKna5cZ2REBfFkg==" },
	{ "Expect", "100-continue" },
	{ "Date", DATE },
	{ "Authorization", "AWS S3RVER:f15FKZ2u5duHZ2yLTL01MHSlLVE=" },
	{ "Content-Length", "5" },
	{ NULL, NULL },
};

#define GET_HEADERS(sig) { { "Date", DATE }, \
	{ "Authorization", "AWS S3RVER:" sig }, { NULL, NULL } }

static const hdr_t acl_headers[] = GET_HEADERS("5vewYhb9J3qXOgzbCWx2MCRa0eY=");
static const hdr_t list_headers[] =
    GET_HEADERS("0iwZMF460IDvxM3OuCQa63aU67A=");
static const hdr_t resp_headers[] =
    GET_HEADERS("XcS5dJjKVTVQT4cckkHbkNaBNnQ=");

#define RESP_Q "?response-content-disposition=attachment%3B%20filename" \
	"%3D%22x%20y%22&versionId=3%2FL4kqtJl"
#define RESP_STS "GET\n\n\n" DATE "\n/bucket/a%20b/c?response-content-" \
	"disposition=attachment; filename=\"x y\"&versionId=3/L4kqtJl"
#define PUT_STS "PUT\nXUFAKrxLKna5cZ2REBfFkg==\napplication/octet-stream\n" \
	DATE "\nx-amz-acl:private\nx-amz-meta-color:blue\n" \
	"x-amz-meta-shape:round\n/bucket/dir/file%20name.bin"
#define PRESIGN1 "?AWSAccessKeyId=S3RVER&Signature=" \
	"DlgEIbu2hXqurTmooNNBrbhKcvk%3D&Expires=1700003600"
#define PRESIGN2 "?response-content-type=text%2Fplain&versionId=v1" \
	"&AWSAccessKeyId=S3RVER&Signature=peZ88bTnC2z0JrhG9jl4nf5dHWU%3D" \
	"&Expires=1700000600"

static const struct {
	const char  *name;
	const char  *method;
	const char  *target;
	bool         vhost;
	const hdr_t *headers;
	const char  *date;   /* date line; NULL: no string-to-sign check */
	const char  *sts;
	bc_s3auth_kind_t kind;
} botocore[] = {
	{ "put_object", "PUT", "/bucket/dir/file%20name.bin", false,
	    put_headers, DATE, PUT_STS, BC_S3AUTH_V2 },
	{ "put_object vhost", "PUT", "/dir/file%20name.bin", true,
	    put_headers, DATE, PUT_STS, BC_S3AUTH_V2 },
	/* botocore signs its auth path: "/bucket/k?acl" + "?acl" */
	{ "get_object_acl", "GET", "/bucket/k?acl", false, acl_headers,
	    NULL, NULL, BC_S3AUTH_V2 },
	{ "get_object_acl vhost", "GET", "/k?acl", true, acl_headers,
	    NULL, NULL, BC_S3AUTH_V2 },
	/* ... and "/bucket/" for a bare bucket */
	{ "list_objects", "GET",
	    "/bucket?prefix=p%2F&delimiter=%2F&encoding-type=url", false,
	    list_headers, NULL, NULL, BC_S3AUTH_V2 },
	{ "list_objects vhost", "GET",
	    "/?prefix=p%2F&delimiter=%2F&encoding-type=url", true,
	    list_headers, DATE, "GET\n\n\n" DATE "\n/bucket/", BC_S3AUTH_V2 },
	{ "get_object response-*", "GET", "/bucket/a%20b/c" RESP_Q, false,
	    resp_headers, DATE, RESP_STS, BC_S3AUTH_V2 },
	{ "get_object response-* vhost", "GET", "/a%20b/c" RESP_Q, true,
	    resp_headers, DATE, RESP_STS, BC_S3AUTH_V2 },
	{ "presigned get_object", "GET", "/bucket/dir/my%20key%2Bx.txt"
	    PRESIGN1, false, NULL, "1700003600",
	    "GET\n\n\n1700003600\n/bucket/dir/my%20key%2Bx.txt",
	    BC_S3AUTH_V2_QUERY },
	{ "presigned get_object vhost", "GET", "/dir/my%20key%2Bx.txt"
	    PRESIGN1, true, NULL, "1700003600",
	    "GET\n\n\n1700003600\n/bucket/dir/my%20key%2Bx.txt",
	    BC_S3AUTH_V2_QUERY },
	{ "presigned with sub-resources", "GET", "/bucket/a.txt" PRESIGN2,
	    false, NULL, "1700000600", "GET\n\n\n1700000600\n/bucket/a.txt"
	    "?response-content-type=text/plain&versionId=v1",
	    BC_S3AUTH_V2_QUERY },
	{ "presigned with sub-resources vhost", "GET", "/a.txt" PRESIGN2,
	    true, NULL, "1700000600", "GET\n\n\n1700000600\n/bucket/a.txt"
	    "?response-content-type=text/plain&versionId=v1",
	    BC_S3AUTH_V2_QUERY },
	/* session token: botocore moves x-amz-security-token to the URL */
	{ "presigned with token", "GET", "/bucket/k?AWSAccessKeyId=S3RVER"
	    "&Signature=qQiYKmTcHK2KoS9OpLAb6LTKgI0%3D&x-amz-security-token="
	    "TOKEN%2F%2B%3Dx&Expires=1700000060", false, NULL, "1700000060",
	    "GET\n\n\n1700000060\nx-amz-security-token:TOKEN/+=x\n/bucket/k",
	    BC_S3AUTH_V2_QUERY },
	/* a '+' in the signature, percent-encoded and raw */
	{ "presigned plus", "GET", "/bucket/plus?AWSAccessKeyId=S3RVER"
	    "&Signature=Foolos37LDT%2BZxMKSIXS1I9p3VA%3D&Expires=1700000001",
	    false, NULL, NULL, NULL, BC_S3AUTH_V2_QUERY },
	{ "presigned raw plus", "GET", "/bucket/plus?AWSAccessKeyId=S3RVER"
	    "&Signature=Foolos37LDT+ZxMKSIXS1I9p3VA=&Expires=1700000001",
	    false, NULL, NULL, NULL, BC_S3AUTH_V2_QUERY },
};

LTest(sigv2_botocore, string_to_sign_and_verify)
{
	static char other[] = "other";

	for (size_t i = 0; i < sizeof(botocore) / sizeof(*botocore); i++) {
		bc_s3_req_t r;
		bc_s3_auth_t a;
		bc_s3err_t e;

		req_build(&r, botocore[i].method, botocore[i].target,
		    botocore[i].vhost ? VHOST : PATH_HOST,
		    botocore[i].headers, botocore[i].vhost ? DOMAIN : NULL);
		cr_assert_eq(r.virtual_host, botocore[i].vhost);
		if (botocore[i].sts != NULL) {
			bc_buf_t b = BC_BUF_INIT;

			cr_assert_eq(bc_s3_sigv2_string_to_sign(&b, &r,
			    botocore[i].date), 0);
			cr_expect_str_eq(bc_buf_str(&b), botocore[i].sts,
			    "%s", botocore[i].name);
			bc_buf_fini(&b);
		}
		e = bc_s3_auth_verify(&r, NOW, secret_of, NULL, false, &a);
		cr_expect_eq(e, BC_S3E_NONE, "%s: %s", botocore[i].name,
		    bc_s3err_code(e));
		cr_expect_eq(a.kind, botocore[i].kind, "%s",
		    botocore[i].name);
		cr_expect_str_eq(a.access_key, "S3RVER");
		cr_expect_str_eq(a.payload_hash, "");
		cr_expect_not(a.streaming);
		/* another secret for the same key never verifies */
		e = bc_s3_auth_verify(&r, NOW, secret_of, other, false, &a);
		cr_expect_eq(e, BC_S3E_SignatureDoesNotMatch, "%s",
		    botocore[i].name);
		bc_s3_req_fini(&r);
	}
}

/* The presigned URL exactly as generate_presigned_url printed it. */
LTest(sigv2_botocore, presigned_url_expiry)
{
	static const struct {
		time_t     now;
		bc_s3err_t e;
	} t[] = {
		{ NOW, BC_S3E_NONE },
		{ NOW - 86400, BC_S3E_NONE },
		{ 1700003600, BC_S3E_NONE },
		{ 1700003601, BC_S3E_AccessDenied },
		{ NOW + 86400, BC_S3E_AccessDenied },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_s3_req_t r;
		bc_s3_auth_t a;

		req_build(&r, "GET", "/bucket/dir/my%20key%2Bx.txt" PRESIGN1,
		    PATH_HOST, NULL, NULL);
		cr_expect_eq(bc_s3_auth_verify(&r, t[i].now, secret_of, NULL,
		    false, &a), t[i].e, "case %zu", i);
		if (t[i].e == BC_S3E_AccessDenied)
			cr_expect_str_eq(a.message, "Request has expired");
		bc_s3_req_fini(&r);
	}
}

LTest(sigv2_botocore, x_amz_date)
{
	/* AWS: with x-amz-date the Date line is empty; botocore still puts
	 * its Date there. Both verify. */
	static const struct {
		hdr_t      h[4];
		bc_s3err_t e;
	} t[] = {
		{ { { "x-amz-date", DATE }, { "Authorization",
		    "AWS S3RVER:WhPa6TqXvmTJDTzZc9K3zBvHaX4=" } },
		    BC_S3E_NONE },
		{ { { "x-amz-date", DATE }, { "Date", DATE }, { "Authorization",
		    "AWS S3RVER:LLEwZ7IgDbSXz2uOCn1J3GVe0j4=" } },
		    BC_S3E_NONE },
		{ { { "x-amz-date", DATE }, { "Date", DATE }, { "Authorization",
		    "AWS S3RVER:WhPa6TqXvmTJDTzZc9K3zBvHaX4=" } },
		    BC_S3E_NONE },
		/* without Date the botocore form cannot be rebuilt */
		{ { { "x-amz-date", DATE }, { "Authorization",
		    "AWS S3RVER:LLEwZ7IgDbSXz2uOCn1J3GVe0j4=" } },
		    BC_S3E_SignatureDoesNotMatch },
		{ { { "x-amz-date", "yesterday" }, { "Authorization",
		    "AWS S3RVER:WhPa6TqXvmTJDTzZc9K3zBvHaX4=" } },
		    BC_S3E_AccessDenied },
		{ { { "Authorization",
		    "AWS S3RVER:WhPa6TqXvmTJDTzZc9K3zBvHaX4=" } },
		    BC_S3E_AccessDenied },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_s3_req_t r;
		bc_s3_auth_t a;
		bc_s3err_t e;

		req_build(&r, "DELETE", "/bucket/k", PATH_HOST, t[i].h, NULL);
		e = bc_s3_auth_verify(&r, NOW, secret_of, NULL, false, &a);
		cr_expect_eq(e, t[i].e, "case %zu: %s", i, bc_s3err_code(e));
		bc_s3_req_fini(&r);
	}
}

/* botocore HmacV1Auth: repeated x-amz-* joined with ',', names
 * lower-cased and sorted, values stripped (inner spaces kept),
 * sub-resources sorted with decoded values. */
LTest(sigv2_botocore, canonical_amz_headers)
{
	static const hdr_t h[] = {
		{ "Content-Type", "text/plain" },
		{ "X-Amz-A", "1" },
		{ "x-amz-meta-b", "one" },
		{ "x-amz-meta-b", "two" },
		{ "X-AMZ-Z", "  z  z " },
		{ "Date", DATE },
		{ "Authorization", "AWS S3RVER:r7wRSaBhQ4EnUdCuhwDtPA/urLc=" },
		{ NULL, NULL },
	};
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_buf_t b = BC_BUF_INIT;

	req_build(&r, "PUT", "/bucket/k?uploadId=abc%2F&partNumber=2",
	    PATH_HOST, h, NULL);
	cr_assert_eq(bc_s3_sigv2_string_to_sign(&b, &r, DATE), 0);
	cr_expect_str_eq(bc_buf_str(&b), "PUT\n\ntext/plain\n" DATE "\n"
	    "x-amz-a:1\nx-amz-meta-b:one,two\nx-amz-z:z  z\n"
	    "/bucket/k?partNumber=2&uploadId=abc/");
	cr_expect_eq(bc_s3_auth_verify(&r, NOW, secret_of, NULL, false, &a),
	    BC_S3E_NONE);
	bc_buf_fini(&b);
	bc_s3_req_fini(&r);
}

/* botocore puts x-amz-* into the presigned URL; a client that also
 * sends the same header must not make it count twice. */
LTest(sigv2_botocore, query_and_header_amz)
{
	static const hdr_t h[] = {
		{ "x-amz-security-token", "TOKEN/+=x" },
		{ NULL, NULL },
	};
	bc_s3_req_t r;
	bc_s3_auth_t a;

	req_build(&r, "GET", "/bucket/k?AWSAccessKeyId=S3RVER"
	    "&Signature=qQiYKmTcHK2KoS9OpLAb6LTKgI0%3D&x-amz-security-token="
	    "TOKEN%2F%2B%3Dx&Expires=1700000060", PATH_HOST, h, NULL);
	cr_expect_eq(bc_s3_auth_verify(&r, NOW, secret_of, NULL, false, &a),
	    BC_S3E_NONE);
	bc_s3_req_fini(&r);
}

/* Changing anything signed breaks the signature. */
LTest(sigv2_verify, tampering)
{
	static const struct {
		const char *target;
		const char *name;    /* header to set, or NULL */
		const char *value;
		time_t      now;
		bc_s3err_t  e;
	} t[] = {
		{ "/bucket/dir/file%20name.bin", NULL, NULL, NOW,
		    BC_S3E_NONE },
		{ "/bucket/dir/file%20name.bim", NULL, NULL, NOW,
		    BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin?acl", NULL, NULL, NOW,
		    BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin", "Content-Type", "text/html",
		    NOW, BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin", "x-amz-meta-shape", "square",
		    NOW, BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin", "Content-MD5",
		    "AAAAAAAAAAAAAAAAAAAAAA==", NOW,
		    BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin", "Authorization",
		    "AWS NOBODY:f15FKZ2u5duHZ2yLTL01MHSlLVE=", NOW,
		    BC_S3E_InvalidAccessKeyId },
		{ "/bucket/dir/file%20name.bin", "Authorization",
		    "AWS S3RVER:f15FKZ2u5duHZ2yLTL01MHSlLVE", NOW,
		    BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/dir/file%20name.bin", "Authorization",
		    "AWS S3RVER:", NOW, BC_S3E_AccessDenied },
		{ "/bucket/dir/file%20name.bin", "Authorization",
		    "AWS S3RVER", NOW, BC_S3E_AccessDenied },
		{ "/bucket/dir/file%20name.bin", "Authorization",
		    "AWS :f15FKZ2u5duHZ2yLTL01MHSlLVE=", NOW,
		    BC_S3E_AccessDenied },
		{ "/bucket/dir/file%20name.bin", NULL, NULL, NOW + 16 * 60,
		    BC_S3E_RequestTimeTooSkewed },
		{ "/bucket/dir/file%20name.bin", NULL, NULL, NOW - 16 * 60,
		    BC_S3E_RequestTimeTooSkewed },
		{ "/bucket/dir/file%20name.bin", NULL, NULL, NOW + 14 * 60,
		    BC_S3E_NONE },
		{ "/bucket/dir/file%20name.bin", "Date", "garbage", NOW,
		    BC_S3E_AccessDenied },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_s3_req_t r;
		bc_s3_auth_t a;
		bc_s3err_t e;

		req_build(&r, "PUT", t[i].target, PATH_HOST, put_headers,
		    NULL);
		if (t[i].name != NULL)
			bc_kv_set(&r.headers, t[i].name, t[i].value);
		e = bc_s3_auth_verify(&r, t[i].now, secret_of, NULL, false,
		    &a);
		cr_expect_eq(e, t[i].e, "case %zu: %s", i, bc_s3err_code(e));
		if (e != BC_S3E_NONE)
			cr_expect_eq(a.kind, BC_S3AUTH_NONE);
		bc_s3_req_fini(&r);
	}
}

LTest(sigv2_verify, query_parameters)
{
	static const struct {
		const char *target;
		bc_s3err_t  e;
	} t[] = {
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Expires=1700000060",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?Signature=abc&Expires=1700000060",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Signature=abc",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Signature=abc&Expires=soon",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Signature=abc&Expires=-1",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Signature=abc"
		    "&Expires=99999999999999999999", BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=&Signature=abc&Expires=1700000060",
		    BC_S3E_AccessDenied },
		{ "/bucket/k?AWSAccessKeyId=NOBODY&Signature=abc"
		    "&Expires=1700000060", BC_S3E_InvalidAccessKeyId },
		{ "/bucket/k?AWSAccessKeyId=S3RVER&Signature=abc"
		    "&Expires=1700000060", BC_S3E_SignatureDoesNotMatch },
		/* the token is signed */
		{ "/bucket/k?AWSAccessKeyId=S3RVER"
		    "&Signature=qQiYKmTcHK2KoS9OpLAb6LTKgI0%3D"
		    "&x-amz-security-token=TOKEN%2F%2B%3Dy&Expires=1700000060",
		    BC_S3E_SignatureDoesNotMatch },
		{ "/bucket/k?AWSAccessKeyId=S3RVER"
		    "&Signature=qQiYKmTcHK2KoS9OpLAb6LTKgI0%3D"
		    "&Expires=1700000060", BC_S3E_SignatureDoesNotMatch },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_s3_req_t r;
		bc_s3_auth_t a;
		bc_s3err_t e;

		req_build(&r, "GET", t[i].target, PATH_HOST, NULL, NULL);
		e = bc_s3_auth_verify(&r, NOW, secret_of, NULL, false, &a);
		cr_expect_eq(e, t[i].e, "case %zu: %s", i, bc_s3err_code(e));
		bc_s3_req_fini(&r);
	}
}
