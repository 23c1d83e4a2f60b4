/*
 * s3_request.h — the S3 request model: what a client asked for, parsed
 * from the raw request target, Host and headers.
 *
 * A bc_s3_req_t owns copies of everything it holds; bc_s3_req_fini()
 * frees them. Parsing is pure and bounded (see BC_S3_MAX_*): hostile input
 * yields an S3 error code, never a crash. Not thread-safe per request;
 * different requests may be parsed concurrently.
 */
#ifndef BC_S3_REQUEST_H
#define BC_S3_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "s3/s3_error.h"
#include "util/util_kv.h"

#define BC_S3_MAX_URI      16384  /* bytes of raw request target */
#define BC_S3_MAX_KEY      1024   /* bytes of decoded key (S3's limit) */
#define BC_S3_MAX_BUCKET   255
#define BC_S3_MAX_QUERY    256    /* query parameters */
#define BC_S3_ADMIN_PREFIX "/_bucketcache/"

typedef enum bc_s3op_e {
#define BC_S3OP(name) BC_S3OP_##name,
#include "s3/s3_ops.tbl"
#undef BC_S3OP
	BC_S3OP__COUNT
} bc_s3op_t;

typedef struct bc_s3_req_s {
	char        method[16];    /* "GET", ... */
	bc_s3op_t   op;
	char       *raw_path;      /* as received, percent-encoded, no query */
	char       *raw_query;     /* as received after '?', "" when none */
	bc_kvlist_t query;         /* decoded; a bare "uploads" has value "" */
	bc_kvlist_t headers;       /* as received, in order */
	char       *path;          /* decoded raw_path (may contain any byte but NUL) */
	char       *bucket;        /* decoded; "" for service-level requests */
	char       *key;           /* decoded; "" for bucket-level requests */
	bool        virtual_host;  /* bucket came from Host */
	char        request_id[17];/* 16 upper-case hex digits */
} bc_s3_req_t;

void bc_s3_req_init(bc_s3_req_t *r);
void bc_s3_req_fini(bc_s3_req_t *r);

/*
 * Parses the request target (raw_uri: path and optional "?query", exactly
 * as received) and classifies the operation. headers must already be in
 * r->headers (Host is read from them). domain, when not NULL or "", enables
 * virtual-hosted style: Host "b.<domain>[:port]" names bucket b.
 * Returns BC_S3E_NONE, or the S3 error to answer (InvalidURI-like problems
 * map to InvalidArgument/InvalidBucketName/KeyTooLongError).
 */
bc_s3err_t bc_s3_req_parse(bc_s3_req_t *r, const char *method,
    const char *raw_uri, const char *domain);

/* Percent-decodes n bytes of s into a new string ('+' stays '+').
 * Returns NULL on malformed escapes, an encoded NUL, or no memory. */
char *bc_s3_pct_decode(const char *s, size_t n);

/* true when key has a "." or ".." segment. S3 stores such keys as they
 * are, but an upstream that normalises paths would serve another key
 * under that name, escaping a client's prefix allow list and the cache's
 * invalidation; the gateway refuses them (docs/decisions.md). */
bool bc_s3_key_has_dot_segment(const char *key);

/* true for query parameters that authenticate or tag a request without
 * naming a sub-resource (X-Amz-*, x-id, SigV2's). */
bool bc_s3_param_is_neutral(const char *name);

/* S3's legacy bucket names: 1-255 of [A-Za-z0-9._-], not "." or "..",
 * not starting with '_' (reserved for /_bucketcache/). "" (the service)
 * passes. */
bool bc_s3_bucket_name_ok(const char *b);

/*
 * x-amz-copy-source ("[/]bucket/key[?versionId=V]", percent-encoded):
 * the decoded bucket and key, new strings the caller frees. Returns
 * BC_S3E_NONE, or InvalidArgument when either part is missing or
 * malformed, the bucket name is not valid, the key is too long or has a
 * "." or ".." segment (as for request paths), or another query follows.
 */
bc_s3err_t bc_s3_copy_source_parse(const char *v, char **bucket,
    char **key);

/* "GetObject" */
const char *bc_s3op_name(bc_s3op_t op);
/* true for operations that change what GET returns (invalidate the key) */
bool bc_s3op_writes_object(bc_s3op_t op);

#endif
