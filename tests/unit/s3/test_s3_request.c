/* test_s3_request.c — the S3 request model (s3_request.h): path-style and
 * virtual-hosted addressing, operation classification, decoding, bounds. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_request.h"

/* Parses method + uri with Host host (NULL: none) and, when hname is not
 * NULL, one more header. The caller finis r. */
static bc_s3err_t
parse(bc_s3_req_t *r, const char *method, const char *uri, const char *host,
    const char *domain, const char *hname, const char *hvalue)
{
	bc_s3_req_init(r);
	if (host != NULL)
		cr_assert_eq(bc_kv_add(&r->headers, "Host", host), 0);
	if (hname != NULL)
		cr_assert_eq(bc_kv_add(&r->headers, hname, hvalue), 0);
	return bc_s3_req_parse(r, method, uri, domain);
}

typedef struct {
	const char *method;
	const char *uri;
	const char *copy_source;   /* x-amz-copy-source, or NULL */
	bc_s3op_t   op;
} op_case_t;

#define OP(m, u, op) { m, u, NULL, BC_S3OP_##op }
#define OPC(m, u, op) { m, u, "/src/k", BC_S3OP_##op }

static const op_case_t op_cases[] = {
	/* service */
	OP("GET", "/", ListBuckets),
	OP("HEAD", "/", Unknown),
	OP("PUT", "/", Unknown),
	OP("POST", "/", Unknown),
	OP("DELETE", "/", Unknown),
	/* admin */
	OP("GET", "/_bucketcache/stats", Admin),
	OP("PUT", "/_bucketcache/v1/jobs/j1/plan", Admin),
	OP("GET", "/_bucketcache/metrics?x=1", Admin),
	/* bucket level */
	OP("PUT", "/b", CreateBucket),
	OP("PUT", "/b/", CreateBucket),
	OP("DELETE", "/b", DeleteBucket),
	OP("HEAD", "/b", HeadBucket),
	OP("GET", "/b", ListObjects),
	OP("GET", "/b/", ListObjects),
	OP("GET", "/b?prefix=a&delimiter=%2F&marker=m&max-keys=5"
	    "&encoding-type=url", ListObjects),
	OP("GET", "/b?list-type=2", ListObjectsV2),
	OP("GET", "/b?list-type=2&prefix=a&continuation-token=x"
	    "&start-after=s&fetch-owner=true", ListObjectsV2),
	OP("GET", "/b?uploads", ListMultipartUploads),
	OP("GET", "/b?uploads&prefix=x", ListMultipartUploads),
	OP("GET", "/b?acl", BucketSubresource),
	OP("GET", "/b?location", BucketSubresource),
	OP("GET", "/b?versioning", BucketSubresource),
	OP("PUT", "/b?policy", BucketSubresource),
	OP("DELETE", "/b?cors", BucketSubresource),
	OP("GET", "/b?versions", BucketSubresource),
	OP("HEAD", "/b?prefix=a", HeadBucket),
	/* presign and x-id parameters name no sub-resource */
	OP("GET", "/b?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0",
	    ListObjects),
	OP("GET", "/b?AWSAccessKeyId=a&Expires=1&Signature=s", ListObjects),
	OP("HEAD", "/b?X-Amz-Date=20130524T000000Z", HeadBucket),
	OP("GET", "/b?x-id=ListObjects", ListObjects),
	OP("POST", "/b?delete", DeleteObjects),
	OP("POST", "/b?delete=", DeleteObjects),
	OP("POST", "/b", Unknown),
	OP("PATCH", "/b", Unknown),
	/* object level */
	OP("GET", "/b/k", GetObject),
	OP("GET", "/b/dir/sub/k.bin", GetObject),
	OP("GET", "/b/k?versionId=null", GetObject),
	OP("GET", "/b/k?partNumber=1", GetObject),
	OP("GET", "/b/k?response-content-type=text%2Fplain", GetObject),
	OP("GET", "/b/k?x-id=GetObject", GetObject),
	OP("GET", "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a"
	    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
	    "&X-Amz-SignedHeaders=host&X-Amz-Signature=abc", GetObject),
	OP("GET", "/b/k?AWSAccessKeyId=a&Expires=1&Signature=s", GetObject),
	OP("HEAD", "/b/k", HeadObject),
	OP("HEAD", "/b/k?partNumber=2", HeadObject),
	OP("PUT", "/b/k", PutObject),
	OP("PUT", "/b/k?x-id=PutObject", PutObject),
	OPC("PUT", "/b/k", CopyObject),
	OP("DELETE", "/b/k", DeleteObject),
	OP("DELETE", "/b/k?versionId=null", DeleteObject),
	OP("POST", "/b/k?uploads", CreateMultipartUpload),
	OP("POST", "/b/k?uploads=", CreateMultipartUpload),
	OP("PUT", "/b/k?partNumber=1&uploadId=u", UploadPart),
	OPC("PUT", "/b/k?partNumber=1&uploadId=u", UploadPartCopy),
	OP("POST", "/b/k?uploadId=u", CompleteMultipartUpload),
	OP("DELETE", "/b/k?uploadId=u", AbortMultipartUpload),
	OP("GET", "/b/k?uploadId=u", ListParts),
	OP("HEAD", "/b/k?uploadId=u", Unknown),
	OP("GET", "/b/k?acl", ObjectSubresource),
	OP("PUT", "/b/k?tagging", ObjectSubresource),
	OP("DELETE", "/b/k?tagging", ObjectSubresource),
	OP("POST", "/b/k?restore", ObjectSubresource),
	OP("PUT", "/b/k?partNumber=1", ObjectSubresource),
	OP("GET", "/b/k?torrent", ObjectSubresource),
	OP("POST", "/b/k", Unknown),
	OP("OPTIONS", "/b/k", Unknown),
};

LTest(s3_request, classify_every_op)
{
	bool seen[BC_S3OP__COUNT] = { false };

	for (size_t i = 0; i < sizeof(op_cases) / sizeof(op_cases[0]); i++) {
		const op_case_t *c = &op_cases[i];
		bc_s3_req_t r;
		bc_s3err_t e;

		e = parse(&r, c->method, c->uri, "localhost:8080", NULL,
		    c->copy_source != NULL ? "x-amz-copy-source" : NULL,
		    c->copy_source);
		cr_expect_eq(e, BC_S3E_NONE, "%s %s: %s", c->method, c->uri,
		    bc_s3err_code(e));
		cr_expect_eq(r.op, c->op, "%s %s: op %s, want %s", c->method,
		    c->uri, bc_s3op_name(r.op), bc_s3op_name(c->op));
		seen[c->op] = true;
		bc_s3_req_fini(&r);
	}
	for (int op = 0; op < BC_S3OP__COUNT; op++)
		cr_expect(seen[op], "no case for %s", bc_s3op_name(op));
}

LTest(s3_request, op_names)
{
	cr_expect_str_eq(bc_s3op_name(BC_S3OP_Unknown), "Unknown");
	cr_expect_str_eq(bc_s3op_name(BC_S3OP_GetObject), "GetObject");
	cr_expect_str_eq(bc_s3op_name(BC_S3OP_ObjectSubresource),
	    "ObjectSubresource");
	cr_expect_str_eq(bc_s3op_name(BC_S3OP__COUNT), "Unknown");
	for (int op = 0; op < BC_S3OP__COUNT; op++)
		cr_expect(bc_s3op_name(op)[0] != '\0');
}

LTest(s3_request, writes_object)
{
	static const bc_s3op_t writes[] = { BC_S3OP_PutObject,
	    BC_S3OP_CopyObject, BC_S3OP_DeleteObject, BC_S3OP_DeleteObjects,
	    BC_S3OP_CompleteMultipartUpload, BC_S3OP_ObjectSubresource,
	    BC_S3OP_DeleteBucket };

	for (int op = 0; op < BC_S3OP__COUNT; op++) {
		bool want = false;

		for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
			if (writes[i] == (bc_s3op_t)op)
				want = true;
		cr_expect_eq(bc_s3op_writes_object(op), want, "%s",
		    bc_s3op_name(op));
	}
}

LTest(s3_request, path_style)
{
	bc_s3_req_t r;

	cr_assert_eq(parse(&r, "GET", "/my-bucket/a/b%20c/d.txt?x-id=1",
	    "s3.local:9000", NULL, NULL, NULL), BC_S3E_NONE);
	cr_expect_str_eq(r.method, "GET");
	cr_expect_str_eq(r.raw_path, "/my-bucket/a/b%20c/d.txt");
	cr_expect_str_eq(r.raw_query, "x-id=1");
	cr_expect_str_eq(r.path, "/my-bucket/a/b c/d.txt");
	cr_expect_str_eq(r.bucket, "my-bucket");
	cr_expect_str_eq(r.key, "a/b c/d.txt");
	cr_expect(!r.virtual_host);
	cr_expect_eq(r.op, BC_S3OP_GetObject);
	bc_s3_req_fini(&r);

	/* a key may hold empty segments, dots inside names and a trailing
	 * slash; "." and ".." segments are refused (see has_dot_segment) */
	cr_assert_eq(parse(&r, "GET", "/b/a//..x/.b/", "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	cr_expect_str_eq(r.bucket, "b");
	cr_expect_str_eq(r.key, "a//..x/.b/");
	bc_s3_req_fini(&r);

	/* '+' stays '+' in a path */
	cr_assert_eq(parse(&r, "GET", "/b/a+b", "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	cr_expect_str_eq(r.key, "a+b");
	bc_s3_req_fini(&r);

	/* a domain that does not match Host leaves path style on */
	cr_assert_eq(parse(&r, "GET", "/b/k", "b.other.com", "example.com",
	    NULL, NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	cr_expect_str_eq(r.bucket, "b");
	cr_expect_str_eq(r.key, "k");
	bc_s3_req_fini(&r);

	/* no Host at all */
	cr_assert_eq(parse(&r, "GET", "/b/k", NULL, "example.com", NULL,
	    NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	cr_expect_str_eq(r.bucket, "b");
	bc_s3_req_fini(&r);
}

LTest(s3_request, virtual_hosted)
{
	bc_s3_req_t r;

	cr_assert_eq(parse(&r, "GET", "/dir/k.txt", "my-bucket.example.com",
	    "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect(r.virtual_host);
	cr_expect_str_eq(r.bucket, "my-bucket");
	cr_expect_str_eq(r.key, "dir/k.txt");
	cr_expect_eq(r.op, BC_S3OP_GetObject);
	bc_s3_req_fini(&r);

	/* port and case in Host */
	cr_assert_eq(parse(&r, "HEAD", "/", "My.Bucket.Example.COM:8080",
	    "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect(r.virtual_host);
	cr_expect_str_eq(r.bucket, "my.bucket");
	cr_expect_str_eq(r.key, "");
	cr_expect_eq(r.op, BC_S3OP_HeadBucket);
	bc_s3_req_fini(&r);

	/* list on a virtual host */
	cr_assert_eq(parse(&r, "GET", "/?list-type=2&prefix=a%2Fb",
	    "data.example.com", "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect_eq(r.op, BC_S3OP_ListObjectsV2);
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "prefix"), "a/b");
	bc_s3_req_fini(&r);

	/* the bare domain is path style */
	cr_assert_eq(parse(&r, "GET", "/b/k", "example.com:8080",
	    "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	cr_expect_str_eq(r.bucket, "b");
	bc_s3_req_fini(&r);

	/* a suffix that is not a label boundary is path style */
	cr_assert_eq(parse(&r, "GET", "/b/k", "xexample.com",
	    "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	cr_expect_str_eq(r.bucket, "b");
	bc_s3_req_fini(&r);

	/* IPv6 literal Host is never a bucket */
	cr_assert_eq(parse(&r, "GET", "/b/k", "[::1]:8080", "example.com",
	    NULL, NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	bc_s3_req_fini(&r);

	/* an empty domain disables virtual hosts */
	cr_assert_eq(parse(&r, "GET", "/b/k", "x.example.com", "", NULL,
	    NULL), BC_S3E_NONE);
	cr_expect(!r.virtual_host);
	cr_expect_str_eq(r.bucket, "b");
	bc_s3_req_fini(&r);

	/* admin paths are not admin on a bucket's virtual host */
	cr_assert_eq(parse(&r, "GET", "/_bucketcache/stats",
	    "b.example.com", "example.com", NULL, NULL), BC_S3E_NONE);
	cr_expect_neq(r.op, BC_S3OP_Admin);
	cr_expect_str_eq(r.bucket, "b");
	cr_expect_str_eq(r.key, "_bucketcache/stats");
	bc_s3_req_fini(&r);

	/* a Host bucket that starts with '_' is refused */
	cr_expect_eq(parse(&r, "GET", "/k", "_x.example.com",
	    "example.com", NULL, NULL), BC_S3E_InvalidBucketName);
	bc_s3_req_fini(&r);
}

LTest(s3_request, query_decoding)
{
	bc_s3_req_t r;

	cr_assert_eq(parse(&r, "GET",
	    "/b?list-type=2&prefix=a%20b%2Fc&delimiter=%2F&&max-keys=10"
	    "&empty=&bare", "h", NULL, NULL, NULL), BC_S3E_NONE);
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "prefix"), "a b/c");
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "delimiter"), "/");
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "max-keys"), "10");
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "empty"), "");
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "bare"), "");
	cr_expect_null(bc_kv_get_exact(&r.query, "Prefix"));
	cr_expect_eq(r.query.n, 6);
	bc_s3_req_fini(&r);

	/* a value may hold '=' */
	cr_assert_eq(parse(&r, "GET", "/b/k?X-Amz-Signature=a=b", "h", NULL,
	    NULL, NULL), BC_S3E_NONE);
	cr_expect_str_eq(bc_kv_get_exact(&r.query, "X-Amz-Signature"), "a=b");
	bc_s3_req_fini(&r);
}

typedef struct {
	const char *uri;
	bc_s3err_t  want;
} bad_case_t;

LTest(s3_request, malformed)
{
	static const bad_case_t bad[] = {
		{ "/b/%", BC_S3E_InvalidArgument },
		{ "/b/k%", BC_S3E_InvalidArgument },
		{ "/b/k%4", BC_S3E_InvalidArgument },
		{ "/b/k%G0", BC_S3E_InvalidArgument },
		{ "/b/k%0G", BC_S3E_InvalidArgument },
		{ "/b/k%%41", BC_S3E_InvalidArgument },
		{ "/b/k%00", BC_S3E_InvalidArgument },
		{ "/b/a%00b", BC_S3E_InvalidArgument },
		{ "/%00/k", BC_S3E_InvalidArgument },
		{ "/b/k?prefix=%", BC_S3E_InvalidArgument },
		{ "/b/k?prefix=%00", BC_S3E_InvalidArgument },
		{ "/b/k?%zz=1", BC_S3E_InvalidArgument },
		{ "/b/k?a=%2", BC_S3E_InvalidArgument },
		{ "b/k", BC_S3E_InvalidRequest },
		{ "", BC_S3E_InvalidRequest },
		{ "http://h/b/k", BC_S3E_InvalidRequest },
		{ "*", BC_S3E_InvalidRequest },
		{ "/_bad/k", BC_S3E_InvalidBucketName },
		{ "//k", BC_S3E_InvalidBucketName },
		{ "/b/a/../x", BC_S3E_InvalidArgument },
		{ "/b/%2e%2e/x", BC_S3E_InvalidArgument },
		{ "/b/..", BC_S3E_InvalidArgument },
		{ "/b/./a", BC_S3E_InvalidArgument },
		{ "/b/a/.", BC_S3E_InvalidArgument },
		{ "/../k", BC_S3E_InvalidBucketName },
		{ "/%2E%2E/k", BC_S3E_InvalidBucketName },
		{ "/./k", BC_S3E_InvalidBucketName },
		{ "/a%2Fb/k", BC_S3E_InvalidBucketName },
		{ "/a%20b/k", BC_S3E_InvalidBucketName },
		{ "/a%0Ab/k", BC_S3E_InvalidBucketName },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bc_s3_req_t r;
		bc_s3err_t e = parse(&r, "GET", bad[i].uri, "h", NULL, NULL,
		    NULL);

		cr_expect_eq(e, bad[i].want, "'%s': %s, want %s", bad[i].uri,
		    bc_s3err_code(e), bc_s3err_code(bad[i].want));
		bc_s3_req_fini(&r);
	}
}

LTest(s3_request, escapes_decode)
{
	bc_s3_req_t r;

	cr_assert_eq(parse(&r, "GET", "/b/%e2%82%AC%2F%3f%25", "h", NULL,
	    NULL, NULL), BC_S3E_NONE);
	cr_expect_str_eq(r.key, "\xe2\x82\xac/?%");
	bc_s3_req_fini(&r);

	/* a high byte other than NUL is allowed */
	cr_assert_eq(parse(&r, "GET", "/b/%01%ff", "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	cr_expect_str_eq(r.key, "\x01\xff");
	bc_s3_req_fini(&r);
}

LTest(s3_request, pct_decode)
{
	char *s;

	s = bc_s3_pct_decode("a%20b+c", 7);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "a b+c");
	free(s);
	/* only n bytes are read */
	s = bc_s3_pct_decode("abc%41", 3);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "abc");
	free(s);
	s = bc_s3_pct_decode("%41", 3);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "A");
	free(s);
	s = bc_s3_pct_decode("", 0);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "");
	free(s);
	/* an escape cut by n is malformed */
	cr_expect_null(bc_s3_pct_decode("ab%41", 4));
	cr_expect_null(bc_s3_pct_decode("%0", 2));
	cr_expect_null(bc_s3_pct_decode("%00", 3));
	cr_expect_null(bc_s3_pct_decode("a\0b", 3));
}

LTest(s3_request, key_length_bound)
{
	char uri[BC_S3_MAX_KEY + 64];
	bc_s3_req_t r;

	strcpy(uri, "/b/");
	memset(uri + 3, 'k', BC_S3_MAX_KEY);
	uri[3 + BC_S3_MAX_KEY] = '\0';
	cr_expect_eq(parse(&r, "PUT", uri, "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	cr_expect_eq(strlen(r.key), BC_S3_MAX_KEY);
	bc_s3_req_fini(&r);

	uri[3 + BC_S3_MAX_KEY] = 'k';
	uri[4 + BC_S3_MAX_KEY] = '\0';
	cr_expect_eq(parse(&r, "PUT", uri, "h", NULL, NULL, NULL),
	    BC_S3E_KeyTooLongError);
	bc_s3_req_fini(&r);
}

LTest(s3_request, encoded_key_length_counts_decoded_bytes)
{
	/* 1024 decoded bytes written as 3072 encoded ones are fine */
	bc_buf_t b = BC_BUF_INIT;
	bc_s3_req_t r;

	cr_assert_eq(bc_buf_puts(&b, "/b/"), 0);
	for (int i = 0; i < BC_S3_MAX_KEY; i++)
		cr_assert_eq(bc_buf_puts(&b, "%41"), 0);
	cr_expect_eq(parse(&r, "GET", bc_buf_str(&b), "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	bc_s3_req_fini(&r);
	cr_assert_eq(bc_buf_puts(&b, "%41"), 0);
	cr_expect_eq(parse(&r, "GET", bc_buf_str(&b), "h", NULL, NULL, NULL),
	    BC_S3E_KeyTooLongError);
	bc_s3_req_fini(&r);
	bc_buf_fini(&b);
}

LTest(s3_request, uri_and_bucket_bounds)
{
	char *uri = malloc(BC_S3_MAX_URI + 16);
	char bucket[BC_S3_MAX_BUCKET + 8];
	bc_s3_req_t r;

	cr_assert_not_null(uri);
	/* request target over BC_S3_MAX_URI */
	uri[0] = '/';
	memset(uri + 1, 'a', BC_S3_MAX_URI);
	uri[BC_S3_MAX_URI + 1] = '\0';
	cr_expect_eq(parse(&r, "GET", uri, "h", NULL, NULL, NULL),
	    BC_S3E_InvalidRequest);
	bc_s3_req_fini(&r);
	free(uri);

	/* bucket over BC_S3_MAX_BUCKET */
	bucket[0] = '/';
	memset(bucket + 1, 'b', BC_S3_MAX_BUCKET + 1);
	bucket[BC_S3_MAX_BUCKET + 2] = '\0';
	cr_expect_eq(parse(&r, "GET", bucket, "h", NULL, NULL, NULL),
	    BC_S3E_InvalidBucketName);
	bc_s3_req_fini(&r);
	bucket[BC_S3_MAX_BUCKET + 1] = '\0';
	cr_expect_eq(parse(&r, "GET", bucket, "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	bc_s3_req_fini(&r);
}

LTest(s3_request, query_count_bound)
{
	bc_buf_t b = BC_BUF_INIT;
	bc_s3_req_t r;

	cr_assert_eq(bc_buf_puts(&b, "/b/k?"), 0);
	for (int i = 0; i < BC_S3_MAX_QUERY; i++)
		cr_assert_eq(bc_buf_printf(&b, "X-Amz-p%d=1&", i), 0);
	cr_expect_eq(parse(&r, "GET", bc_buf_str(&b), "h", NULL, NULL, NULL),
	    BC_S3E_NONE);
	cr_expect_eq(r.query.n, BC_S3_MAX_QUERY);
	bc_s3_req_fini(&r);
	cr_assert_eq(bc_buf_puts(&b, "one=more"), 0);
	cr_expect_eq(parse(&r, "GET", bc_buf_str(&b), "h", NULL, NULL, NULL),
	    BC_S3E_InvalidArgument);
	bc_s3_req_fini(&r);
	bc_buf_fini(&b);
}

LTest(s3_request, method_bound)
{
	bc_s3_req_t r;

	cr_expect_eq(parse(&r, "AVERYLONGMETHODNAME", "/b/k", "h", NULL, NULL,
	    NULL), BC_S3E_InvalidRequest);
	bc_s3_req_fini(&r);
}

LTest(s3_request, request_id)
{
	bc_s3_req_t a, b;

	bc_s3_req_init(&a);
	bc_s3_req_init(&b);
	cr_expect_eq(strlen(a.request_id), 16);
	for (int i = 0; i < 16; i++)
		cr_expect(strchr("0123456789ABCDEF", a.request_id[i]) != NULL);
	cr_expect_str_neq(a.request_id, b.request_id);
	cr_expect_eq(a.op, BC_S3OP_Unknown);
	bc_s3_req_fini(&a);
	bc_s3_req_fini(&b);
	/* fini twice is harmless */
	bc_s3_req_fini(&a);
}
