/*
 * test_http_authz.c — client key authorization (http_authz.h): a table of
 * real requests (parsed by bc_s3_req_parse from their targets and
 * headers) × keys without a list, with a whole bucket (written "bkt" and
 * "bkt/"), with one prefix, with several prefixes and buckets, and with
 * another bucket only; and the x-amz-copy-source parser
 * (bc_s3_copy_source_parse) the rule depends on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "config/config.h"
#include "http/http_authz.h"
#include "s3/s3_request.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Writable strings: bc_client_key_t holds char *. */
static char e_bkt[] = "bkt", e_bkt_slash[] = "bkt/";
static char e_allowed[] = "bkt/allowed/", e_allowed2[] = "bkt/allowed/";
static char e_pub[] = "bkt/pub/", e_other[] = "other", e_other2[] = "other";
static char n_u[] = "U", n_b[] = "B", n_s[] = "S", n_p[] = "P", n_m[] = "M";
static char n_o[] = "O", secret[] = "s";

static char *allow_bucket[] = { e_bkt };
static char *allow_bucket_slash[] = { e_bkt_slash };
static char *allow_prefix[] = { e_allowed };
static char *allow_several[] = { e_allowed2, e_pub, e_other };
static char *allow_other[] = { e_other2 };

/* The columns of the table, in order. */
static const bc_client_key_t keys[] = {
	{ n_u, secret, NULL, 0 },                       /* unlimited */
	{ n_b, secret, allow_bucket, 1 },               /* all of bkt */
	{ n_s, secret, allow_bucket_slash, 1 },         /* "bkt/": all too */
	{ n_p, secret, allow_prefix, 1 },               /* bkt/allowed/ */
	{ n_m, secret, allow_several, 3 },              /* several */
	{ n_o, secret, allow_other, 1 },                /* other bucket */
};

typedef struct {
	const char *method;
	const char *uri;
	const char *copy_source;   /* x-amz-copy-source, or NULL */
	bc_s3op_t   op;            /* what the request parses as */
	const char *want;          /* per key: Y allowed, D AccessDenied,
				      I InvalidArgument */
} authz_case_t;

#define C(m, u, op, w)      { m, u, NULL, BC_S3OP_##op, w }
#define CS(m, u, s, op, w)  { m, u, s, BC_S3OP_##op, w }

static const authz_case_t cases[] = {
	/*                                                     U B S P M O */
	/* the service: an unlimited key only */
	C("GET", "/", ListBuckets,                            "YDDDDD"),
	C("HEAD", "/", Unknown,                               "YDDDDD"),
	/* bucket-level writes and configuration: the whole bucket */
	C("PUT", "/bkt", CreateBucket,                        "YYYDDD"),
	C("DELETE", "/bkt", DeleteBucket,                     "YYYDDD"),
	C("DELETE", "/other", DeleteBucket,                   "YDDDYY"),
	C("PUT", "/bkt?cors", BucketSubresource,              "YYYDDD"),
	C("GET", "/bkt?cors", BucketSubresource,              "YYYDDD"),
	C("DELETE", "/bkt?cors", BucketSubresource,           "YYYDDD"),
	C("GET", "/bkt?acl", BucketSubresource,               "YYYDDD"),
	C("PUT", "/bkt?policy", BucketSubresource,            "YYYDDD"),
	C("GET", "/bkt?versioning", BucketSubresource,        "YYYDDD"),
	C("PUT", "/bkt?location", BucketSubresource,          "YYYDDD"),
	C("POST", "/bkt", Unknown,                            "YYYDDD"),
	/* any part of the bucket */
	C("HEAD", "/bkt", HeadBucket,                         "YYYYYD"),
	C("HEAD", "/bkt?prefix=secret%2F", HeadBucket,        "YYYYYD"),
	C("GET", "/bkt?location", BucketSubresource,          "YYYYYD"),
	C("GET", "/bkt?location=", BucketSubresource,         "YYYYYD"),
	C("GET", "/bkt?location&x-id=GetBucketLocation", BucketSubresource,
							      "YYYYYD"),
	C("GET", "/bkt?location&cors", BucketSubresource,     "YYYDDD"),
	/* a repeated prefix: every one must be inside the list */
	C("GET", "/bkt?prefix=allowed%2F&prefix=secret%2F", ListObjects,
							      "YYYDDD"),
	C("GET", "/bkt?prefix=allowed%2Fa&prefix=allowed%2Fb", ListObjects,
							      "YYYYYD"),
	C("HEAD", "/other", HeadBucket,                       "YDDDYY"),
	C("POST", "/bkt?delete", DeleteObjects,               "YYYYYD"),
	C("POST", "/other?delete", DeleteObjects,             "YDDDYY"),
	/* listings: the prefix must be inside the list */
	C("GET", "/bkt", ListObjects,                         "YYYDDD"),
	C("GET", "/bkt/", ListObjects,                        "YYYDDD"),
	C("GET", "/bkt?prefix=", ListObjects,                 "YYYDDD"),
	C("GET", "/bkt?prefix=allowed%2F", ListObjects,       "YYYYYD"),
	C("GET", "/bkt?prefix=allowed/", ListObjects,         "YYYYYD"),
	C("GET", "/bkt?prefix=allowed%2Fsub&delimiter=%2F", ListObjects,
							      "YYYYYD"),
	C("GET", "/bkt?prefix=allowed", ListObjects,          "YYYDDD"),
	C("GET", "/bkt?prefix=allow", ListObjects,            "YYYDDD"),
	C("GET", "/bkt?prefix=secret%2F", ListObjects,        "YYYDDD"),
	C("GET", "/bkt?prefix=pub%2Fx", ListObjects,          "YYYDYD"),
	C("GET", "/bkt?prefix=Allowed%2F", ListObjects,       "YYYDDD"),
	C("GET", "/bkt?delimiter=%2F", ListObjects,           "YYYDDD"),
	C("GET", "/bkt?list-type=2", ListObjectsV2,           "YYYDDD"),
	C("GET", "/bkt?list-type=2&prefix=allowed%2F", ListObjectsV2,
							      "YYYYYD"),
	C("GET", "/bkt?list-type=2&prefix=secret%2F&start-after=allowed%2F",
	    ListObjectsV2,                                    "YYYDDD"),
	C("GET", "/bkt?list-type=2&prefix=allow", ListObjectsV2,
							      "YYYDDD"),
	C("GET", "/other?list-type=2", ListObjectsV2,         "YDDDYY"),
	C("GET", "/other?list-type=2&prefix=allowed%2F", ListObjectsV2,
							      "YDDDYY"),
	C("GET", "/bkt?uploads", ListMultipartUploads,        "YYYDDD"),
	C("GET", "/bkt?uploads&prefix=allowed%2F", ListMultipartUploads,
							      "YYYYYD"),
	C("GET", "/bkt?versions", BucketSubresource,          "YYYDDD"),
	C("GET", "/bkt?versions&prefix=allowed%2F", BucketSubresource,
							      "YYYYYD"),
	C("GET", "/bkt?versions&prefix=secret%2F", BucketSubresource,
							      "YYYDDD"),
	/* objects: the key must be inside the list */
	C("GET", "/bkt/allowed/a.txt", GetObject,             "YYYYYD"),
	C("GET", "/bkt/allowed%2Fa.txt", GetObject,           "YYYYYD"),
	C("GET", "/bkt/allowed/", GetObject,                  "YYYYYD"),
	C("GET", "/bkt/allowed", GetObject,                   "YYYDDD"),
	C("GET", "/bkt/allowedx/a", GetObject,                "YYYDDD"),
	C("GET", "/bkt/secret/top.txt", GetObject,            "YYYDDD"),
	C("GET", "/bkt/pub/p", GetObject,                     "YYYDYD"),
	C("GET", "/bkt/%61llowed/a.txt", GetObject,           "YYYYYD"),
	C("HEAD", "/bkt/allowed/a.txt", HeadObject,           "YYYYYD"),
	C("HEAD", "/bkt/secret/top.txt", HeadObject,          "YYYDDD"),
	C("PUT", "/bkt/allowed/a.txt", PutObject,             "YYYYYD"),
	C("PUT", "/bkt/secret/evil", PutObject,               "YYYDDD"),
	C("DELETE", "/bkt/allowed/a.txt", DeleteObject,       "YYYYYD"),
	C("DELETE", "/bkt/secret/top.txt", DeleteObject,      "YYYDDD"),
	C("GET", "/other/x.txt", GetObject,                   "YDDDYY"),
	C("PUT", "/other/x.txt", PutObject,                   "YDDDYY"),
	C("GET", "/bkt2/allowed/a", GetObject,                "YDDDDD"),
	C("GET", "/bk/allowed/a", GetObject,                  "YDDDDD"),
	C("POST", "/bkt/allowed/mp?uploads", CreateMultipartUpload,
							      "YYYYYD"),
	C("POST", "/bkt/secret/mp?uploads", CreateMultipartUpload,
							      "YYYDDD"),
	C("PUT", "/bkt/allowed/mp?partNumber=1&uploadId=u", UploadPart,
							      "YYYYYD"),
	C("PUT", "/bkt/secret/mp?partNumber=1&uploadId=u", UploadPart,
							      "YYYDDD"),
	C("POST", "/bkt/allowed/mp?uploadId=u", CompleteMultipartUpload,
							      "YYYYYD"),
	C("POST", "/bkt/secret/mp?uploadId=u", CompleteMultipartUpload,
							      "YYYDDD"),
	C("DELETE", "/bkt/secret/mp?uploadId=u", AbortMultipartUpload,
							      "YYYDDD"),
	C("GET", "/bkt/secret/mp?uploadId=u", ListParts,      "YYYDDD"),
	C("GET", "/bkt/allowed/mp?uploadId=u", ListParts,     "YYYYYD"),
	C("PUT", "/bkt/secret/a?tagging", ObjectSubresource,  "YYYDDD"),
	C("GET", "/bkt/allowed/a?acl", ObjectSubresource,     "YYYYYD"),
	C("POST", "/bkt/allowed/a", Unknown,                  "YYYDDD"),
	/* copies: the destination and the source */
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/a.txt", CopyObject,
							      "YYYYYD"),
	CS("PUT", "/bkt/allowed/c", "/bkt/allowed/a.txt", CopyObject,
							      "YYYYYD"),
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/a.txt?versionId=3",
	    CopyObject,                                       "YYYYYD"),
	CS("PUT", "/bkt/allowed/c", "bkt/secret/top.txt", CopyObject,
							      "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "/bkt/secret/top.txt", CopyObject,
							      "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "bkt/secret%2Ftop.txt", CopyObject,
							      "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "bkt/%73ecret/top.txt", CopyObject,
							      "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "bkt/secret/top.txt?versionId=null",
	    CopyObject,                                       "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "bkt/allowe", CopyObject, "YYYDDD"),
	CS("PUT", "/bkt/allowed/c", "bkt/pub/p", CopyObject,  "YYYDYD"),
	CS("PUT", "/bkt/allowed/c", "other/x.txt", CopyObject,
							      "YDDDYD"),
	CS("PUT", "/other/c", "bkt/allowed/a.txt", CopyObject,
							      "YDDDYD"),
	CS("PUT", "/other/c", "bkt/secret/top.txt", CopyObject,
							      "YDDDDD"),
	CS("PUT", "/bkt/secret/c", "bkt/allowed/a.txt", CopyObject,
							      "YYYDDD"),
	/* a malformed source is InvalidArgument once the destination
	 * passes (an unlimited key is not checked: the upstream decides) */
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/../secret/top.txt",
	    CopyObject,                                       "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/%2E%2E/secret/top.txt",
	    CopyObject,                                       "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/./a.txt", CopyObject,
							      "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt%2Fallowed/a.txt", CopyObject,
							      "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt", CopyObject,        "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt/", CopyObject,       "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "", CopyObject,           "YIIIID"),
	CS("PUT", "/bkt/allowed/c", "bkt/allowed/a?acl", CopyObject,
							      "YIIIID"),
	CS("PUT", "/bkt/secret/c", "bkt/allowed/../x", CopyObject,
							      "YIIDDD"),
	/* UploadPartCopy */
	CS("PUT", "/bkt/allowed/mp?partNumber=1&uploadId=u",
	    "bkt/allowed/a.txt", UploadPartCopy,              "YYYYYD"),
	CS("PUT", "/bkt/allowed/mp?partNumber=1&uploadId=u",
	    "bkt/secret/top.txt", UploadPartCopy,             "YYYDDD"),
	CS("PUT", "/bkt/allowed/mp?partNumber=1&uploadId=u",
	    "other/x.txt", UploadPartCopy,                    "YDDDYD"),
	CS("PUT", "/bkt/allowed/mp?partNumber=1&uploadId=u",
	    "bkt/allowed/../secret/top.txt", UploadPartCopy,  "YIIIID"),
};

static bc_s3err_t
want_err(char w)
{
	return w == 'Y' ? BC_S3E_NONE : w == 'I' ? BC_S3E_InvalidArgument :
	    BC_S3E_AccessDenied;
}

LTest(http_authz, table)
{
	for (size_t i = 0; i < N(cases); i++) {
		const authz_case_t *c = &cases[i];
		bc_s3_req_t r;
		bc_s3err_t e;

		cr_assert_eq(strlen(c->want), N(keys), "case %zu", i);
		bc_s3_req_init(&r);
		cr_assert_eq(bc_kv_add(&r.headers, "Host", "localhost:9000"),
		    0);
		if (c->copy_source != NULL)
			cr_assert_eq(bc_kv_add(&r.headers, "X-Amz-Copy-Source",
			    c->copy_source), 0);
		e = bc_s3_req_parse(&r, c->method, c->uri, NULL);
		cr_assert_eq(e, BC_S3E_NONE, "%s %s: %s", c->method, c->uri,
		    bc_s3err_code(e));
		cr_expect_eq(r.op, c->op, "%s %s: op %s, want %s", c->method,
		    c->uri, bc_s3op_name(r.op), bc_s3op_name(c->op));
		for (size_t k = 0; k < N(keys); k++) {
			bc_s3err_t got = bc_http_authz(&keys[k], &r);

			cr_expect_eq(got, want_err(c->want[k]),
			    "%s %s [copy %s] key %s: got %s, want %c",
			    c->method, c->uri, c->copy_source != NULL ?
			    c->copy_source : "-", keys[k].access_key,
			    got == BC_S3E_NONE ? "allowed" :
			    bc_s3err_code(got), c->want[k]);
		}
		/* no key: nothing */
		cr_expect_eq(bc_http_authz(NULL, &r), BC_S3E_AccessDenied,
		    "%s %s with no key", c->method, c->uri);
		bc_s3_req_fini(&r);
	}
}

/* Every operation has a row, so a new one cannot slip past the rule. */
LTest(http_authz, every_op_covered)
{
	bool seen[BC_S3OP__COUNT] = { false };

	for (size_t i = 0; i < N(cases); i++)
		seen[cases[i].op] = true;
	for (int op = 0; op < BC_S3OP__COUNT; op++)
		if (op != BC_S3OP_Admin)
			cr_expect(seen[op], "no case for %s",
			    bc_s3op_name(op));
}

LTest(http_authz, limited)
{
	static const struct {
		const char *bucket;
		const char *want;   /* per key: L limited, A all */
	} c[] = {
		{ "bkt",   "AAALLL" },
		{ "other", "ALLLAA" },
		{ "bkt2",  "ALLLLL" },
	};

	for (size_t i = 0; i < N(c); i++)
		for (size_t k = 0; k < N(keys); k++)
			cr_expect_eq(bc_http_authz_limited(&keys[k],
			    c[i].bucket), c[i].want[k] == 'L', "%s key %s",
			    c[i].bucket, keys[k].access_key);
}

/* The config predicates the rule is built on, at their edges. */
LTest(http_authz, config_predicates)
{
	const bc_client_key_t *u = &keys[0], *b = &keys[1], *p = &keys[3];
	const bc_client_key_t *m = &keys[4];

	/* the empty key no longer means "allowed" (issue 8) */
	cr_expect(!bc_config_key_allows(p, "bkt", ""));
	cr_expect(!bc_config_key_allows(p, "bkt", NULL));
	cr_expect(!bc_config_key_allows(b, "bkt", NULL));
	cr_expect(bc_config_key_allows(b, "bkt", ""));
	cr_expect(bc_config_key_allows(p, "bkt", "allowed/"));
	cr_expect(!bc_config_key_allows(p, "bkt", "allowed"));
	cr_expect(!bc_config_key_allows(p, "", "allowed/x"));
	cr_expect(!bc_config_key_allows(p, NULL, "allowed/x"));
	cr_expect(!bc_config_key_allows(NULL, "bkt", "allowed/x"));
	cr_expect(bc_config_key_allows(u, "any", ""));
	cr_expect(bc_config_key_allows(m, "other", ""));
	cr_expect(bc_config_key_allows(m, "bkt", "pub/x"));

	cr_expect(bc_config_key_has_bucket(u, "bkt"));
	cr_expect(bc_config_key_has_bucket(b, "bkt"));
	cr_expect(bc_config_key_has_bucket(&keys[2], "bkt"));
	cr_expect(!bc_config_key_has_bucket(p, "bkt"));
	cr_expect(!bc_config_key_has_bucket(m, "bkt"));
	cr_expect(bc_config_key_has_bucket(m, "other"));
	cr_expect(!bc_config_key_has_bucket(b, "bk"));
	cr_expect(!bc_config_key_has_bucket(b, "bkt2"));
	cr_expect(!bc_config_key_has_bucket(NULL, "bkt"));

	cr_expect(bc_config_key_in_bucket(p, "bkt"));
	cr_expect(bc_config_key_in_bucket(m, "bkt"));
	cr_expect(!bc_config_key_in_bucket(p, "other"));
	cr_expect(!bc_config_key_in_bucket(p, "bkt2"));
	cr_expect(!bc_config_key_in_bucket(p, "bk"));
	cr_expect(!bc_config_key_in_bucket(p, ""));
	cr_expect(!bc_config_key_in_bucket(p, NULL));
	cr_expect(!bc_config_key_in_bucket(NULL, "bkt"));
	cr_expect(bc_config_key_in_bucket(u, "anything"));
}

/* ---- x-amz-copy-source ------------------------------------------------- */

LTest(http_authz, copy_source_ok)
{
	static const struct {
		const char *in, *bucket, *key;
	} ok[] = {
		{ "bkt/k", "bkt", "k" },
		{ "/bkt/k", "bkt", "k" },
		{ "bkt/a/b/c.txt", "bkt", "a/b/c.txt" },
		{ "bkt/a%2Fb", "bkt", "a/b" },              /* encoded slash */
		{ "bkt/a%20b+c", "bkt", "a b+c" },          /* '+' stays */
		{ "bkt/%E2%82%AC", "bkt", "\xe2\x82\xac" },
		{ "bkt/k?versionId=abc", "bkt", "k" },
		{ "bkt/k?versionId=", "bkt", "k" },
		{ "bkt/a%3Fb", "bkt", "a?b" },              /* encoded '?' */
		{ "bkt/a..b/.c/..d", "bkt", "a..b/.c/..d" },
		{ "bkt//k", "bkt", "/k" },                  /* empty segment */
		{ "bkt/k/", "bkt", "k/" },
		{ "BKT.x-y_z/k", "BKT.x-y_z", "k" },        /* legacy names */
		{ "%62kt/k", "bkt", "k" },
	};

	for (size_t i = 0; i < N(ok); i++) {
		char *b = (char *)1, *k = (char *)1;

		cr_expect_eq(bc_s3_copy_source_parse(ok[i].in, &b, &k),
		    BC_S3E_NONE, "'%s'", ok[i].in);
		if (b == NULL || k == NULL)
			continue;
		cr_expect_str_eq(b, ok[i].bucket, "'%s'", ok[i].in);
		cr_expect_str_eq(k, ok[i].key, "'%s'", ok[i].in);
		free(b);
		free(k);
	}
}

LTest(http_authz, copy_source_bad)
{
	static const char *const bad[] = {
		/* a part missing */
		"", "/", "bkt", "/bkt", "bkt/", "/bkt/", "/k", "//bkt/k",
		"bkt?versionId=1", "bkt/?versionId=1",
		/* dot segments, plain and encoded */
		"bkt/..", "bkt/.", "bkt/a/..", "bkt/a/../b", "bkt/./a",
		"bkt/a/./b", "bkt/allowed/../secret/top.txt",
		"bkt/a/%2e%2e/b", "bkt/a/%2E%2E/b", "bkt/%2e/a", "bkt/a/.%2e",
		"bkt/a%2F..%2Fb",
		/* bad buckets */
		"b%2Fx/k", "_bc/k", "_bucketcache/k", "../k", "./k", "b k/k",
		"b%20k/k", "b*k/k", "%ZZ/k", "b%2/k", "b%00/k",
		/* bad keys */
		"bkt/k%00", "bkt/k%0", "bkt/k%G0",
		/* another query */
		"bkt/k?", "bkt/k?x=1", "bkt/k?versionid=1", "bkt/k?versionIdx=1",
		"bkt/k?acl", "bkt/k?versionId=1&x=2",
	};
	char *b, *k;

	for (size_t i = 0; i < N(bad); i++) {
		b = (char *)1;
		k = (char *)1;
		cr_expect_eq(bc_s3_copy_source_parse(bad[i], &b, &k),
		    BC_S3E_InvalidArgument, "'%s'", bad[i]);
		cr_expect_null(b, "'%s'", bad[i]);
		cr_expect_null(k, "'%s'", bad[i]);
	}
	cr_expect_eq(bc_s3_copy_source_parse(NULL, &b, &k),
	    BC_S3E_InvalidArgument);
	cr_expect_null(b);
	cr_expect_null(k);
}

LTest(http_authz, copy_source_bounds)
{
	char *v = malloc(BC_S3_MAX_URI + 64), *b, *k;
	size_t n;

	cr_assert_not_null(v);
	/* a key of BC_S3_MAX_KEY bytes passes, one more does not */
	strcpy(v, "bkt/");
	n = strlen(v);
	memset(v + n, 'a', BC_S3_MAX_KEY);
	v[n + BC_S3_MAX_KEY] = '\0';
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k), BC_S3E_NONE);
	cr_expect_eq(k != NULL ? strlen(k) : 0, BC_S3_MAX_KEY);
	free(b);
	free(k);
	strcat(v, "a");
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k),
	    BC_S3E_InvalidArgument);
	/* encoded: 3 bytes each, the decoded length counts */
	strcpy(v, "bkt/");
	for (size_t i = 0; i < BC_S3_MAX_KEY; i++)
		strcat(v, "%61");
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k), BC_S3E_NONE);
	free(b);
	free(k);
	/* a bucket of 255 bytes passes, 256 do not */
	memset(v, 'b', 255);
	strcpy(v + 255, "/k");
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k), BC_S3E_NONE);
	free(b);
	free(k);
	memset(v, 'b', 256);
	strcpy(v + 256, "/k");
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k),
	    BC_S3E_InvalidArgument);
	/* longer than a request target */
	memset(v, 'a', BC_S3_MAX_URI + 10);
	v[3] = '/';
	v[BC_S3_MAX_URI + 10] = '\0';
	cr_expect_eq(bc_s3_copy_source_parse(v, &b, &k),
	    BC_S3E_InvalidArgument);
	cr_expect_null(b);
	free(v);
}
