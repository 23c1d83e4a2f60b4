/*
 * http_req.h — one client request as the HTTP front end hands it to a
 * handler (proxy, object, delete, admin), and the calls a handler uses to
 * answer.
 *
 * Threads: every handler op runs on an MHD worker thread and must not
 * block on the network (local file I/O is allowed). A handler that has to
 * wait calls bc_http_suspend() before returning; whoever makes progress
 * later calls bc_http_resume() from any thread, and MHD calls the handler
 * again. Ownership: the front end owns the bc_http_req_t; it lives from
 * the first handler op until after done() returns.
 */
#ifndef BC_HTTP_REQ_H
#define BC_HTTP_REQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "config/config.h"
#include "s3/s3_auth.h"
#include "s3/s3_request.h"
#include "util/util_buf.h"

typedef struct bc_server_s bc_server_t;
typedef struct bc_http_req_s bc_http_req_t;

typedef struct bc_handler_s {
	const char *name;
	/* Headers parsed and client authenticated. Returns BC_S3E_NONE to go
	 * on, or an error the front end answers at once. */
	bc_s3err_t (*start)(bc_http_req_t *r);
	/* Upload bytes: take what it can and set *len to the bytes it did not
	 * take; when it took none it must have suspended. */
	bc_s3err_t (*body)(bc_http_req_t *r, const char *data, size_t *len);
	/* Upload complete (or none): queue a response, or suspend. Called
	 * again after every resume until a response is queued. */
	bc_s3err_t (*finish)(bc_http_req_t *r);
	/* The exchange is over: ok is false when the client went away or the
	 * response failed. Release everything; no call follows. May be NULL. */
	void (*done)(bc_http_req_t *r, bool ok);
} bc_handler_t;

struct bc_http_req_s {
	struct MHD_Connection *conn;
	bc_server_t          *srv;
	const bc_handler_t   *handler;
	void                 *hdata;        /* the handler's own state */
	bc_s3_req_t           s3;
	bc_s3_auth_t          auth;
	const bc_client_key_t *client_key;  /* who signed; NULL: unsigned */
	/* unsigned, and the gateway runs without --anonymous: the request
	 * goes upstream unsigned and the upstream decides (http_server.c) */
	bool                  upstream_unsigned;
	char                 *raw_uri;      /* as received */
	uint64_t              content_length; /* UINT64_MAX when none */
	uint64_t              bytes_in;     /* upload bytes received */
	uint64_t              bytes_out;    /* body bytes the response holds */
	int                   status;       /* queued status, 0 before */
	const char           *cache_outcome; /* "hit", "miss", "partial"
					       (its x-bucketcache header,
					       static), NULL: not a cached
					       read; for the access log */
	bc_s3err_t            pending_err;  /* answer at the next call */
	const char           *pending_msg;  /* NULL: the table's; else
					       static, or the handler's
					       until done() (a body() that
					       fails may set it) */
	bool                  started;
	bool                  authorized;   /* passed authentication and the
					       key's allow list */
	bool                  is_local;     /* loopback client, no
					       forwarding headers */
	bool                  close_after;  /* framing in doubt: the
					       response closes the
					       connection */
	bool                  body_ended;   /* the last upload call came */
	struct bc_conn_s     *cn;           /* its connection's deadlines */
	uint64_t              start_ns;     /* monotonic */
	/* suspend/resume handshake (http_server.c) */
	pthread_mutex_t       wait_mu;
	bool                  suspended;
	bool                  wake_pending;
	bool                  wake_taken;   /* the last wait found a wake
					       pending and did not suspend */
};

/* Queues resp with status, adding x-amz-request-id and Server (and, while
 * the server drains, "Connection: close", and Retry-After to a 503);
 * takes over the caller's reference to resp. Returns 0 or BC_EIO. */
int bc_http_respond(bc_http_req_t *r, unsigned int status,
    struct MHD_Response *resp);
/* Adds a response header. libmicrohttpd refuses an empty value, which S3
 * sends (an x-amz-meta-* set to ""): that one goes out as a single space,
 * which HTTP parsers strip (RFC 9110 5.5), so clients read "". Returns
 * MHD_YES or MHD_NO (a CR or LF in name or value, or out of memory). */
enum MHD_Result bc_http_add_header(struct MHD_Response *resp,
    const char *name, const char *value);
/* Queues S3's XML <Error> for e (msg: NULL for the table's message). */
int bc_http_respond_error(bc_http_req_t *r, bc_s3err_t e, const char *msg);
/* Queues body (taken over; may be empty) with content_type. */
int bc_http_respond_buf(bc_http_req_t *r, unsigned int status,
    const char *content_type, bc_buf_t *body);

/*
 * bc_http_wait: call from a handler op (or a content reader) that cannot
 * go on until someone calls bc_http_resume(). It suspends the connection,
 * unless a resume already arrived since the last wait, in which case it
 * returns without suspending (the caller just returns; the front end
 * calls the op again at once: libmicrohttpd would not call a body() that
 * left bytes unread, or a finish() that queued nothing, without a
 * suspension or new bytes from the client).
 * bc_http_resume: any thread, any number of times; never blocks. Wakes
 * between two waits are merged.
 */
void bc_http_wait(bc_http_req_t *r);
void bc_http_resume(bc_http_req_t *r);
/* bc_xfer_wake_fn-shaped bc_http_resume. */
void bc_http_resume_cb(void *r);

/* The handlers, each exported by its file. */
extern const bc_handler_t bc_handler_proxy;
extern const bc_handler_t bc_handler_admin;
extern const bc_handler_t bc_handler_object;   /* GET/HEAD via the cache */
extern const bc_handler_t bc_handler_delete;   /* DeleteObjects of a key
						  limited to prefixes */
extern const bc_handler_t bc_handler_list;     /* ListObjects(V2) through
						  the list cache */

/* true when the cache can answer r exactly as S3 would (http_object.c) */
bool bc_object_cacheable(const bc_http_req_t *r);
/* true for the admin calls a draining server still answers: GET or HEAD
 * of health, ready, stats and metrics (http_admin.c) */
bool bc_admin_while_draining(const bc_http_req_t *r);
/* The operator's call: a local client, or the admin token
 * (http_admin.c). */
bool bc_admin_allowed(const bc_http_req_t *r);
/* Verifies a signed admin call's signature as the jobs API does
 * (http_admin.c): BC_S3E_NONE with r->client_key and r->auth set, or the
 * error to answer (AccessDenied when unsigned). */
bc_s3err_t bc_admin_verify_key(bc_http_req_t *r);
/* /_bucketcache/v1/warm (http_warm.c), from the admin handler's
 * finish(). */
bc_s3err_t bc_http_warm(bc_http_req_t *r);

#endif
