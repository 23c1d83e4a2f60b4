/*
 * http_authz.h — what a client key may do: the S3 operation of a request
 * mapped onto the keys it reads or writes, each checked against the key's
 * bucket/prefix allow list (config.h).
 *
 * Rule: every object key a request reads or writes — its own key, the
 * copy source of CopyObject and UploadPartCopy, a listing's prefix — must
 * be inside the allow list; bucket-level writes and bucket configuration
 * need the whole bucket; HeadBucket and GetBucketLocation need any part
 * of it; ListBuckets needs a key without a list. The keys of a
 * DeleteObjects body are checked one by one as the body is read
 * (bc_http_authz_key); the request itself needs any part of the bucket.
 *
 * Pure; thread-safe.
 */
#ifndef BC_HTTP_AUTHZ_H
#define BC_HTTP_AUTHZ_H

#include <stdbool.h>

#include "config/config.h"
#include "s3/s3_request.h"

/* BC_S3E_NONE when k may make request r, AccessDenied when not, or
 * InvalidArgument for a malformed copy source. k NULL: nothing allowed. */
bc_s3err_t bc_http_authz(const bc_client_key_t *k, const bc_s3_req_t *r);

/* true when k limits the keys it may use in bucket (so a DeleteObjects
 * body needs checking key by key). */
bool bc_http_authz_limited(const bc_client_key_t *k, const char *bucket);

#endif
