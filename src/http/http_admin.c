/*
 * http_admin.c — bc_handler_admin: the /_bucketcache/ endpoints.
 *
 *   GET /_bucketcache/health   200 "ok"
 *   GET /_bucketcache/stats    JSON counters (stats.h)
 *   GET /_bucketcache/metrics  Prometheus text exposition
 *   DELETE /_bucketcache/v1/cache?bucket=B[&prefix=P | &key=K]
 *                              drops cached objects; {"invalidated": n}
 *
 * Bucket names cannot start with '_', so these paths never shadow S3.
 * /health needs no credentials. Everything else needs a local client (on
 * loopback, and not relayed by a proxy: see http_server.c) or the admin
 * token (--admin-token) as "x-bucketcache-admin-token: TOKEN" or
 * "Authorization: Bearer TOKEN" (what Prometheus sends); stats and
 * metrics, which name buckets, are open to all with --public-stats.
 * Otherwise 403 AccessDenied.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cache/cache.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "stats/stats.h"
#include "util/util_crypto.h"

static bool
admin_allowed(const bc_http_req_t *r)
{
	const char *token = r->srv->cfg->admin_token;
	const char *given = bc_kv_get(&r->s3.headers,
	    "x-bucketcache-admin-token");
	const char *auth = bc_kv_get(&r->s3.headers, "Authorization");

	if (r->is_local)
		return true;
	if (token[0] == '\0')
		return false;
	if (given == NULL && auth != NULL && strncasecmp(auth, "Bearer ",
	    7) == 0)
		given = auth + 7;
	return given != NULL && bc_streq_ct(token, given);
}

static bool
stats_allowed(const bc_http_req_t *r)
{
	return r->srv->cfg->public_stats || admin_allowed(r);
}

/* DELETE /_bucketcache/v1/cache */
static bc_s3err_t
invalidate(bc_http_req_t *r)
{
	const char *bucket = bc_kv_get_exact(&r->s3.query, "bucket");
	const char *prefix = bc_kv_get_exact(&r->s3.query, "prefix");
	const char *key = bc_kv_get_exact(&r->s3.query, "key");
	bc_buf_t body = BC_BUF_INIT;
	size_t n = 0;

	if (!admin_allowed(r))
		return BC_S3E_AccessDenied;
	if (bucket == NULL || bucket[0] == '\0' ||
	    !bc_s3_bucket_name_ok(bucket) || (prefix != NULL && key != NULL))
		return BC_S3E_InvalidArgument;
	if (r->srv->cache != NULL)
		n = bc_cache_invalidate(r->srv->cache, bucket, key,
		    key != NULL ? NULL : prefix != NULL ? prefix : "");
	bc_buf_printf(&body, "{\"invalidated\": %zu}\n", n);
	return bc_http_respond_buf(r, 200, "application/json", &body) < 0 ?
	    BC_S3E_InternalError : BC_S3E_NONE;
}

static bc_s3err_t
admin_start(bc_http_req_t *r)
{
	return BC_S3E_NONE;
}

static bc_s3err_t
admin_body(bc_http_req_t *r, const char *data, size_t *len)
{
	*len = 0;   /* no admin call takes a body yet */
	return BC_S3E_NONE;
}

static bc_s3err_t
admin_finish(bc_http_req_t *r)
{
	const char *path = r->s3.path + strlen(BC_S3_ADMIN_PREFIX);
	bool get = strcmp(r->s3.method, "GET") == 0 ||
	    strcmp(r->s3.method, "HEAD") == 0;
	bc_buf_t body = BC_BUF_INIT;
	int rv;

	if (strcmp(path, "health") == 0 && get) {
		bc_buf_puts(&body, "ok\n");
		rv = bc_http_respond_buf(r, 200, "text/plain", &body);
	} else if ((strcmp(path, "stats") == 0 ||
	    strcmp(path, "metrics") == 0) && get && !stats_allowed(r)) {
		return BC_S3E_AccessDenied;
	} else if (strcmp(path, "stats") == 0 && get) {
		bc_stats_json(&body);
		rv = bc_http_respond_buf(r, 200, "application/json", &body);
	} else if (strcmp(path, "metrics") == 0 && get) {
		bc_stats_prometheus(&body);
		rv = bc_http_respond_buf(r, 200,
		    "text/plain; version=0.0.4", &body);
	} else if (strcmp(path, "v1/cache") == 0 &&
	    strcmp(r->s3.method, "DELETE") == 0) {
		return invalidate(r);
	} else if (strcmp(path, "v1/cache") == 0 ||
	    strcmp(path, "health") == 0 ||
	    strcmp(path, "stats") == 0 || strcmp(path, "metrics") == 0) {
		return BC_S3E_MethodNotAllowed;
	} else {
		return BC_S3E_NoSuchKey;
	}
	return rv < 0 ? BC_S3E_InternalError : BC_S3E_NONE;
}

const bc_handler_t bc_handler_admin = {
	.name = "admin",
	.start = admin_start,
	.body = admin_body,
	.finish = admin_finish,
	.done = NULL,
};
