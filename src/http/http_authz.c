/*
 * http_authz.c — client key authorization per S3 operation (see
 * http_authz.h).
 */
#include <stdlib.h>
#include <string.h>

#include "http/http_authz.h"

/* A listing (ListObjects, V2, ListObjectVersions, ListMultipartUploads)
 * k may make: below its prefix ("" when absent), and below every prefix
 * when the query repeats it (an upstream may read any of them). */
static bool
listing_allowed(const bc_client_key_t *k, const bc_s3_req_t *r)
{
	bool any = false;

	for (size_t i = 0; i < r->query.n; i++) {
		if (strcmp(r->query.v[i].name, "prefix") != 0)
			continue;
		any = true;
		if (!bc_config_key_allows(k, r->bucket, r->query.v[i].value))
			return false;
	}
	return any || bc_config_key_allows(k, r->bucket, "");
}

/* true when the query names the one sub-resource name, besides
 * parameters that only authenticate. */
static bool
only_query(const bc_s3_req_t *r, const char *name)
{
	bool found = false;

	for (size_t i = 0; i < r->query.n; i++) {
		if (strcmp(r->query.v[i].name, name) == 0)
			found = true;
		else if (!bc_s3_param_is_neutral(r->query.v[i].name))
			return false;
	}
	return found;
}

static bc_s3err_t
allow_if(bool ok)
{
	return ok ? BC_S3E_NONE : BC_S3E_AccessDenied;
}

static bc_s3err_t
copy_source_allowed(const bc_client_key_t *k, const bc_s3_req_t *r)
{
	char *bucket, *key;
	bc_s3err_t e;

	e = bc_s3_copy_source_parse(bc_kv_get(&r->headers,
	    "x-amz-copy-source"), &bucket, &key);
	if (e != BC_S3E_NONE)
		return e;
	e = allow_if(bc_config_key_allows(k, bucket, key));
	free(bucket);
	free(key);
	return e;
}

bc_s3err_t
bc_http_authz(const bc_client_key_t *k, const bc_s3_req_t *r)
{
	bool get = strcmp(r->method, "GET") == 0;
	bc_s3err_t e;

	if (k == NULL)
		return BC_S3E_AccessDenied;
	if (k->allow == NULL)
		return BC_S3E_NONE;
	switch (r->op) {
	case BC_S3OP_ListBuckets:
		return BC_S3E_AccessDenied;
	case BC_S3OP_ListObjects:
	case BC_S3OP_ListObjectsV2:
	case BC_S3OP_ListMultipartUploads:
		return allow_if(listing_allowed(k, r));
	case BC_S3OP_HeadBucket:
	case BC_S3OP_DeleteObjects:
		return allow_if(bc_config_key_in_bucket(k, r->bucket));
	case BC_S3OP_BucketSubresource:
		if (get && only_query(r, "location"))
			return allow_if(bc_config_key_in_bucket(k, r->bucket));
		if (get && bc_kv_get_exact(&r->query, "versions") != NULL)
			return allow_if(listing_allowed(k, r));
		return allow_if(bc_config_key_has_bucket(k, r->bucket));
	case BC_S3OP_CopyObject:
	case BC_S3OP_UploadPartCopy:
		e = allow_if(bc_config_key_allows(k, r->bucket, r->key));
		return e != BC_S3E_NONE ? e : copy_source_allowed(k, r);
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
	case BC_S3OP_PutObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_CreateMultipartUpload:
	case BC_S3OP_UploadPart:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_AbortMultipartUpload:
	case BC_S3OP_ListParts:
	case BC_S3OP_ObjectSubresource:
		return allow_if(bc_config_key_allows(k, r->bucket, r->key));
	default:   /* CreateBucket, DeleteBucket, Unknown */
		return allow_if(bc_config_key_has_bucket(k, r->bucket));
	}
}

bool
bc_http_authz_limited(const bc_client_key_t *k, const char *bucket)
{
	return !bc_config_key_has_bucket(k, bucket);
}
