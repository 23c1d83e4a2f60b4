/*
 * s3_request.c — parse a raw S3 request target into bucket, key, query and
 * operation (see s3_request.h). Pure; bounded by BC_S3_MAX_*.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/util_crypto.h"
#include "s3/s3_request.h"

static const char *const op_names[] = {
#define BC_S3OP(name) #name,
#include "s3/s3_ops.tbl"
#undef BC_S3OP
};

const char *
bc_s3op_name(bc_s3op_t op)
{
	return op < BC_S3OP__COUNT ? op_names[op] : "Unknown";
}

bool
bc_s3op_writes_object(bc_s3op_t op)
{
	switch (op) {
	case BC_S3OP_PutObject:
	case BC_S3OP_CopyObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_DeleteObjects:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_ObjectSubresource:
	case BC_S3OP_DeleteBucket:
		return true;
	default:
		return false;
	}
}

void
bc_s3_req_init(bc_s3_req_t *r)
{
	static _Atomic unsigned long long seq;
	unsigned long long n;

	memset(r, 0, sizeof(*r));
	/* Unique per process and start: time in the high bits, a counter in
	 * the low ones. Not a secret; only a handle for logs. */
	n = ((unsigned long long)time(NULL) << 24) ^
	    ((unsigned long long)getpid() << 44) ^
	    atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
	snprintf(r->request_id, sizeof(r->request_id), "%016llX", n);
	r->op = BC_S3OP_Unknown;
}

void
bc_s3_req_fini(bc_s3_req_t *r)
{
	free(r->raw_path);
	free(r->raw_query);
	free(r->path);
	free(r->bucket);
	free(r->key);
	bc_kv_fini(&r->query);
	bc_kv_fini(&r->headers);
	r->raw_path = r->raw_query = r->path = r->bucket = r->key = NULL;
}

char *
bc_s3_pct_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1);
	size_t o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n) {
				free(out);
				return NULL;
			}
			hi = bc_hexval(s[i + 1]);
			lo = bc_hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(out);
				return NULL;
			}
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else if (s[i] == '\0') {
			free(out);
			return NULL;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return out;
}

static bc_s3err_t
parse_query(bc_s3_req_t *r)
{
	const char *p = r->raw_query;

	while (*p != '\0') {
		const char *amp = strchr(p, '&');
		const char *end = amp != NULL ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		char *name, *value;
		int rv;

		if (end == p) {
			p = amp + 1;
			continue;
		}
		if (r->query.n >= BC_S3_MAX_QUERY)
			return BC_S3E_InvalidArgument;
		name = bc_s3_pct_decode(p, (size_t)((eq != NULL ? eq : end) -
		    p));
		value = eq != NULL ? bc_s3_pct_decode(eq + 1,
		    (size_t)(end - eq - 1)) : strdup("");
		rv = name != NULL && value != NULL ?
		    bc_kv_add(&r->query, name, value) : -1;
		free(name);
		free(value);
		if (rv < 0)
			return BC_S3E_InvalidArgument;
		p = amp != NULL ? amp + 1 : end;
	}
	return BC_S3E_NONE;
}

/* Host without port, lower-cased into buf; "" when absent or too long. */
static void
host_name(const bc_s3_req_t *r, char *buf, size_t len)
{
	const char *h = bc_kv_get(&r->headers, "Host");
	size_t n = 0;

	buf[0] = '\0';
	if (h == NULL)
		return;
	if (h[0] == '[') {             /* IPv6 literal: never a bucket */
		return;
	}
	while (h[n] != '\0' && h[n] != ':' && n + 1 < len) {
		char c = h[n];

		buf[n] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		n++;
	}
	buf[n] = '\0';
}

bool
bc_s3_bucket_name_ok(const char *b)
{
	size_t n = strlen(b);

	if (n == 0)
		return true;
	if (n > BC_S3_MAX_BUCKET || b[0] == '_' || strcmp(b, ".") == 0 ||
	    strcmp(b, "..") == 0)
		return false;
	for (; *b != '\0'; b++)
		if (!((*b >= 'a' && *b <= 'z') || (*b >= 'A' && *b <= 'Z') ||
		    (*b >= '0' && *b <= '9') || *b == '.' || *b == '-' ||
		    *b == '_'))
			return false;
	return true;
}

bool
bc_s3_key_has_dot_segment(const char *key)
{
	const char *p = key;

	for (;;) {
		const char *end = strchr(p, '/');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' &&
		    p[1] == '.'))
			return true;
		if (end == NULL)
			return false;
		p = end + 1;
	}
}

bc_s3err_t
bc_s3_copy_source_parse(const char *v, char **bucket, char **key)
{
	const char *q, *slash;
	size_t n;
	bc_s3err_t e = BC_S3E_InvalidArgument;

	*bucket = *key = NULL;
	if (v == NULL)
		return e;
	if (v[0] == '/')
		v++;
	q = strchr(v, '?');
	n = q != NULL ? (size_t)(q - v) : strlen(v);
	if (n > BC_S3_MAX_URI)
		return e;
	slash = memchr(v, '/', n);
	if (slash == NULL || slash == v || (size_t)(slash - v) + 1 == n)
		return e;
	if (q != NULL && (strncmp(q + 1, "versionId=", 10) != 0 ||
	    strchr(q, '&') != NULL))
		return e;
	*bucket = bc_s3_pct_decode(v, (size_t)(slash - v));
	*key = bc_s3_pct_decode(slash + 1, n - (size_t)(slash - v) - 1);
	if (*bucket == NULL || *key == NULL || !bc_s3_bucket_name_ok(*bucket) ||
	    (*bucket)[0] == '\0' || strlen(*key) > BC_S3_MAX_KEY ||
	    bc_s3_key_has_dot_segment(*key))
		goto fail;
	return BC_S3E_NONE;
fail:
	free(*bucket);
	free(*key);
	*bucket = *key = NULL;
	return e;
}

bool
bc_s3_param_is_neutral(const char *n)
{
	return strncmp(n, "X-Amz-", 6) == 0 || strcmp(n, "x-id") == 0 ||
	    strcmp(n, "AWSAccessKeyId") == 0 || strcmp(n, "Expires") == 0 ||
	    strcmp(n, "Signature") == 0;
}

static bool
has_q(const bc_s3_req_t *r, const char *name)
{
	return bc_kv_get_exact(&r->query, name) != NULL;
}

static bc_s3op_t
classify(const bc_s3_req_t *r)
{
	const char *m = r->method;
	bool get = strcmp(m, "GET") == 0, head = strcmp(m, "HEAD") == 0;
	bool put = strcmp(m, "PUT") == 0, post = strcmp(m, "POST") == 0;
	bool del = strcmp(m, "DELETE") == 0;

	if (strncmp(r->path, BC_S3_ADMIN_PREFIX,
	    strlen(BC_S3_ADMIN_PREFIX)) == 0 && !r->virtual_host)
		return BC_S3OP_Admin;
	if (r->bucket[0] == '\0')
		return get ? BC_S3OP_ListBuckets : BC_S3OP_Unknown;
	if (r->key[0] == '\0') {
		if (post && has_q(r, "delete"))
			return BC_S3OP_DeleteObjects;
		if (get && has_q(r, "uploads"))
			return BC_S3OP_ListMultipartUploads;
		if (get && has_q(r, "list-type"))
			return BC_S3OP_ListObjectsV2;
		if (r->query.n > 0) {
			bool only_listing = true;
			static const char *const listing[] = { "prefix",
			    "delimiter", "marker", "max-keys",
			    "encoding-type", NULL };

			for (size_t i = 0; i < r->query.n && only_listing;
			    i++) {
				bool found = false;

				for (int j = 0; listing[j] != NULL; j++)
					if (strcmp(r->query.v[i].name,
					    listing[j]) == 0)
						found = true;
				only_listing = found ||
				    bc_s3_param_is_neutral(r->query.v[i].name);
			}
			if (!((get || head) && only_listing))
				return BC_S3OP_BucketSubresource;
		}
		if (get)
			return BC_S3OP_ListObjects;
		if (head)
			return BC_S3OP_HeadBucket;
		if (put)
			return BC_S3OP_CreateBucket;
		if (del)
			return BC_S3OP_DeleteBucket;
		return BC_S3OP_Unknown;
	}
	if (has_q(r, "uploadId")) {
		if (put)
			return bc_kv_get(&r->headers, "x-amz-copy-source") !=
			    NULL ? BC_S3OP_UploadPartCopy : BC_S3OP_UploadPart;
		if (post)
			return BC_S3OP_CompleteMultipartUpload;
		if (del)
			return BC_S3OP_AbortMultipartUpload;
		if (get)
			return BC_S3OP_ListParts;
		return BC_S3OP_Unknown;
	}
	if (post && has_q(r, "uploads"))
		return BC_S3OP_CreateMultipartUpload;
	for (size_t i = 0; i < r->query.n; i++) {
		const char *n = r->query.v[i].name;

		/* GET options that do not name a sub-resource */
		if (bc_s3_param_is_neutral(n) || strcmp(n, "versionId") == 0)
			continue;
		if ((get || head) && (strcmp(n, "partNumber") == 0 ||
		    strncmp(n, "response-", 9) == 0))
			continue;
		return BC_S3OP_ObjectSubresource;
	}
	if (get)
		return BC_S3OP_GetObject;
	if (head)
		return BC_S3OP_HeadObject;
	if (put)
		return bc_kv_get(&r->headers, "x-amz-copy-source") != NULL ?
		    BC_S3OP_CopyObject : BC_S3OP_PutObject;
	if (del)
		return BC_S3OP_DeleteObject;
	return BC_S3OP_Unknown;
}

bc_s3err_t
bc_s3_req_parse(bc_s3_req_t *r, const char *method, const char *raw_uri,
    const char *domain)
{
	const char *q, *p;
	char host[256];
	size_t dlen, hlen, plen;
	bc_s3err_t e;

	if (strlen(method) >= sizeof(r->method) || raw_uri[0] != '/' ||
	    strlen(raw_uri) > BC_S3_MAX_URI)
		return BC_S3E_InvalidRequest;
	strcpy(r->method, method);
	q = strchr(raw_uri, '?');
	plen = q != NULL ? (size_t)(q - raw_uri) : strlen(raw_uri);
	r->raw_path = strndup(raw_uri, plen);
	r->raw_query = strdup(q != NULL ? q + 1 : "");
	if (r->raw_path == NULL || r->raw_query == NULL)
		return BC_S3E_InternalError;
	e = parse_query(r);
	if (e != BC_S3E_NONE)
		return e;
	r->path = bc_s3_pct_decode(r->raw_path, plen);
	if (r->path == NULL)
		return BC_S3E_InvalidArgument;

	host_name(r, host, sizeof(host));
	hlen = strlen(host);
	dlen = domain != NULL ? strlen(domain) : 0;
	if (dlen > 0 && hlen > dlen + 1 && host[hlen - dlen - 1] == '.' &&
	    strcasecmp(host + hlen - dlen, domain) == 0) {
		r->virtual_host = true;
		r->bucket = strndup(host, hlen - dlen - 1);
		r->key = strdup(r->path + 1);
	} else {
		/* Split before decoding: an encoded '/' belongs to its part. */
		const char *raw = r->raw_path + 1;

		p = strchr(raw, '/');
		if (p == NULL) {
			r->bucket = bc_s3_pct_decode(raw, strlen(raw));
			r->key = strdup("");
		} else {
			r->bucket = bc_s3_pct_decode(raw, (size_t)(p - raw));
			r->key = bc_s3_pct_decode(p + 1, strlen(p + 1));
		}
		if (r->bucket == NULL || r->key == NULL)
			return BC_S3E_InvalidArgument;
	}
	if (r->bucket == NULL || r->key == NULL)
		return BC_S3E_InternalError;
	r->op = classify(r);
	if (r->op == BC_S3OP_Admin)
		return BC_S3E_NONE;
	if (!bc_s3_bucket_name_ok(r->bucket) || (r->bucket[0] == '\0' &&
	    r->key[0] != '\0'))
		return BC_S3E_InvalidBucketName;
	if (strlen(r->key) > BC_S3_MAX_KEY)
		return BC_S3E_KeyTooLongError;
	if (bc_s3_key_has_dot_segment(r->key))
		return BC_S3E_InvalidArgument;
	return BC_S3E_NONE;
}
