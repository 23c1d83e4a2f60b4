/*
 * http_respond.c — what handlers call on a request: queue a response
 * (bc_http_respond and its buffer and S3-error forms, adding
 * x-amz-request-id and Server) and wait for / wake a suspended
 * connection (bc_http_wait, bc_http_resume). Declared in http_req.h; kept
 * apart from http_server.c so the handlers the server routes to do not
 * call back into it.
 *
 * Suspend/resume handshake: r->wait_mu guards r->suspended and
 * r->wake_pending, so a resume that races ahead of a wait is never lost
 * and MHD_resume_connection() is called only on a suspended connection.
 */
#include <pthread.h>
#include <stdlib.h>

#include "http/http_log.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_error.h"
#include "util/util_error.h"
#include "util/util_log.h"

/* Seconds a client refused during the drain is told to wait. */
#define BC_DRAIN_RETRY_AFTER "1"

/* ---- responses --------------------------------------------------------- */

int
bc_http_respond(bc_http_req_t *r, unsigned int status,
    struct MHD_Response *resp)
{
	enum MHD_Result ok;

	if (resp == NULL)
		return BC_ENOMEM;
	if (MHD_get_response_header(resp, "x-amz-request-id") == NULL)
		MHD_add_response_header(resp, "x-amz-request-id",
		    r->s3.request_id);
	if (MHD_get_response_header(resp, "Server") == NULL)
		MHD_add_response_header(resp, "Server", "bucketcache");
	/* Draining: every answer ends its connection; a refusal says when
	 * to come back (another gateway, or this one restarted). */
	if (r->close_after || bc_server_draining(r->srv))
		MHD_add_response_header(resp, "Connection", "close");
	if (status == 503 && bc_server_draining(r->srv) &&
	    MHD_get_response_header(resp, "Retry-After") == NULL)
		MHD_add_response_header(resp, "Retry-After",
		    BC_DRAIN_RETRY_AFTER);
	r->cache_outcome = bc_http_log_outcome(MHD_get_response_header(resp,
	    "x-bucketcache"));
	ok = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ok != MHD_YES)
		return BC_EIO;
	r->status = (int)status;
	return 0;
}

enum MHD_Result
bc_http_add_header(struct MHD_Response *resp, const char *name,
    const char *value)
{
	return MHD_add_response_header(resp, name, value[0] != '\0' ? value :
	    " ");
}

int
bc_http_respond_buf(bc_http_req_t *r, unsigned int status,
    const char *content_type, bc_buf_t *body)
{
	size_t len = body->len;
	char *p = bc_buf_steal(body);
	struct MHD_Response *resp;

	if (p == NULL)
		return BC_ENOMEM;
	resp = MHD_create_response_from_buffer(len, p, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(p);
		return BC_ENOMEM;
	}
	if (content_type != NULL)
		MHD_add_response_header(resp, "Content-Type", content_type);
	r->bytes_out = len;
	return bc_http_respond(r, status, resp);
}

int
bc_http_respond_error(bc_http_req_t *r, bc_s3err_t e, const char *msg)
{
	bc_buf_t body = BC_BUF_INIT;
	const char *resource = r->s3.path != NULL ? r->s3.path : r->raw_uri;
	int rv;

	if (e == BC_S3E_NotModified) {   /* 304 carries no body */
		struct MHD_Response *resp = MHD_create_response_from_buffer(0,
		    (void *)"", MHD_RESPMEM_PERSISTENT);

		return bc_http_respond(r, 304, resp);
	}
	rv = bc_s3err_xml(&body, e, msg, resource, r->s3.request_id);
	if (rv < 0) {
		bc_buf_fini(&body);
		return rv;
	}
	if (bc_s3err_status(e) >= 500)
		BC_DEBUG("%s %s -> %d %s", r->s3.method, r->raw_uri,
		    bc_s3err_status(e), bc_s3err_code(e));
	return bc_http_respond_buf(r, (unsigned)bc_s3err_status(e),
	    "application/xml", &body);
}

/* ---- suspend/resume ---------------------------------------------------- */

void
bc_http_wait(bc_http_req_t *r)
{
	pthread_mutex_lock(&r->wait_mu);
	if (r->wake_pending) {
		r->wake_pending = false;
		r->wake_taken = true;   /* on_access calls the op again */
	} else if (!r->suspended) {   /* never twice: MHD would lose it */
		r->suspended = true;
		bc_conn_held(&r->srv->conns, r->cn, true);
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&r->wait_mu);
}

void
bc_http_resume(bc_http_req_t *r)
{
	bool resume = false;

	pthread_mutex_lock(&r->wait_mu);
	if (r->suspended) {
		r->suspended = false;
		resume = true;
		bc_conn_held(&r->srv->conns, r->cn, false);
	} else {
		r->wake_pending = true;
	}
	pthread_mutex_unlock(&r->wait_mu);
	/* Still suspended until this call, so it cannot have completed. */
	if (resume)
		MHD_resume_connection(r->conn);
}

void
bc_http_resume_cb(void *r)
{
	bc_http_resume(r);
}
