/*
 * http_warm.c — /_bucketcache/v1/warm: warm-ups (prefetch_warm.h) over
 * HTTP, reached from the admin handler's finish() (http_admin.c).
 *
 *   POST   /_bucketcache/v1/warm?bucket=B[&prefix=P][&tier=T]
 *          starts warming s3://B/P into tier T (memory, disk, redis; by
 *          default the first lower tier, else memory): 202 and its
 *          progress; 409 OperationAborted while one of B/P runs, 503
 *          SlowDown while BC_WARM_MAX_RUNNING do, 400 InvalidArgument
 *          for a bad bucket, prefix or tier
 *   GET    ...?bucket=B[&prefix=P]   its progress (404 NoSuchKey: none)
 *   GET    /_bucketcache/v1/warm     {"warmups": [...]}
 *   DELETE ...?bucket=B[&prefix=P]   cancels it; 200 and its progress
 *
 * Access, as the jobs API's (http_admin.c): the operator (a local client
 * or the admin token) warms, reads and cancels anything; a signed client
 * (SigV4 or V2, verified as bc_admin_verify_key does) warms only a prefix
 * its key may read (bc_config_key_allows: else 403 AccessDenied, and the
 * listed keys outside its grant are skipped), and reads, lists and
 * cancels only its own warm-ups (403 for another's). Nothing here takes
 * a body: one sent is read and dropped (admin_body).
 */
#include <string.h>

#include "http/http_req.h"
#include "http/http_server.h"
#include "prefetch/prefetch_warm.h"
#include "s3/s3_request.h"
#include "stats/stats.h"
#include "util/util_error.h"

static bc_s3err_t
answer(bc_http_req_t *r, unsigned status, bc_buf_t *body)
{
	bc_buf_putc(body, '\n');
	return bc_http_respond_buf(r, status, "application/json", body) < 0 ?
	    BC_S3E_InternalError : BC_S3E_NONE;
}

static bc_s3err_t
answer_error(bc_http_req_t *r, bc_s3err_t e, const char *msg)
{
	return bc_http_respond_error(r, e, msg) < 0 ? BC_S3E_InternalError :
	    BC_S3E_NONE;
}

/* A registry call's failure as the error to answer. */
static bc_s3err_t
err_of(int rv)
{
	switch (rv) {
	case BC_ENOENT:
		return BC_S3E_NoSuchKey;
	case BC_EACCES:
		BC_STATS_INC(auth_failures);
		return BC_S3E_AccessDenied;
	case BC_EINVAL:
		return BC_S3E_InvalidArgument;
	case BC_EEXIST:
		return BC_S3E_OperationAborted;
	case BC_ENOSPC:
		return BC_S3E_SlowDown;
	case BC_ECANCELED:
		return BC_S3E_ServiceUnavailable;
	default:
		return BC_S3E_InternalError;
	}
}

static bc_s3err_t
warm_start(bc_http_req_t *r, const char *bucket, const char *prefix,
    const char *owner)
{
	bc_warm_req_t q = { bucket, prefix,
	    bc_kv_get_exact(&r->s3.query, "tier"), r->client_key, owner };
	bc_buf_t body = BC_BUF_INIT;
	char err[160] = "";
	int rv;

	if (owner != NULL &&
	    !bc_config_key_allows(r->client_key, bucket, prefix)) {
		BC_STATS_INC(auth_failures);
		return answer_error(r, BC_S3E_AccessDenied, "The prefix is "
		    "outside this access key's grant.");
	}
	rv = bc_warm_start(r->srv->warm, &q, &body, err, sizeof(err));
	if (rv < 0) {
		bc_buf_fini(&body);
		return answer_error(r, err_of(rv), rv == BC_EINVAL ? err :
		    rv == BC_EEXIST ? "A warm-up of this bucket and prefix "
		    "is running." : rv == BC_ENOSPC ? "As many warm-ups as "
		    "the gateway runs at once are running." : NULL);
	}
	return answer(r, 202, &body);
}

bc_s3err_t
bc_http_warm(bc_http_req_t *r)
{
	const char *m = r->s3.method;
	const char *bucket = bc_kv_get_exact(&r->s3.query, "bucket");
	const char *prefix = bc_kv_get_exact(&r->s3.query, "prefix");
	const char *owner = NULL;   /* NULL: the operator */
	bool get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
	bool post = strcmp(m, "POST") == 0, del = strcmp(m, "DELETE") == 0;
	bc_buf_t body = BC_BUF_INIT;
	bc_s3err_t e;
	int rv;

	if (!get && !post && !del)
		return BC_S3E_MethodNotAllowed;
	if (r->srv->warm == NULL)
		return BC_S3E_NotImplemented;
	if (!bc_admin_allowed(r)) {
		e = bc_admin_verify_key(r);
		if (e != BC_S3E_NONE)
			return e;
		owner = r->auth.access_key;
	}
	if (prefix == NULL)
		prefix = "";
	if (bucket == NULL && get) {
		bc_warm_list(r->srv->warm, owner, &body);
		return answer(r, 200, &body);
	}
	if (bucket == NULL || bucket[0] == '\0' ||
	    !bc_s3_bucket_name_ok(bucket) ||
	    strlen(prefix) > BC_S3_MAX_KEY)
		return BC_S3E_InvalidArgument;
	if (post)
		return warm_start(r, bucket, prefix, owner);
	rv = del ? bc_warm_cancel(r->srv->warm, bucket, prefix, owner, &body) :
	    bc_warm_get(r->srv->warm, bucket, prefix, owner, &body);
	if (rv < 0) {
		bc_buf_fini(&body);
		return err_of(rv);
	}
	return answer(r, 200, &body);
}
