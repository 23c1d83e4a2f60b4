/*
 * http_admin.c — bc_handler_admin: the /_bucketcache/ endpoints.
 *
 *   GET /_bucketcache/health   200 "ok"
 *   GET /_bucketcache/stats    JSON counters (stats.h)
 *   GET /_bucketcache/metrics  Prometheus text exposition
 *
 * Read-only endpoints need no credentials (bucket names cannot start with
 * '_', so these paths never shadow S3). State-changing endpoints, added
 * later, require the admin token or a loopback client (bc_admin_allowed).
 */
#include <string.h>

#include "http/http_req.h"
#include "http/http_server.h"
#include "stats/stats.h"

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
	} else if (strcmp(path, "stats") == 0 && get) {
		bc_stats_json(&body);
		rv = bc_http_respond_buf(r, 200, "application/json", &body);
	} else if (strcmp(path, "metrics") == 0 && get) {
		bc_stats_prometheus(&body);
		rv = bc_http_respond_buf(r, 200,
		    "text/plain; version=0.0.4", &body);
	} else if (strcmp(path, "health") == 0 ||
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
