/*
 * upstream.h — the origin interface: where the bytes the cache does not
 * hold come from, and where every request the gateway does not answer
 * itself goes. Two origins implement it: the S3 origin (upstream_s3.c:
 * curl multi on the loop, addressing, SigV4 re-signing, retries) and the
 * file origin (upstream_file*.c: a local directory). The cache fronts
 * either; the proxy handler relays to either.
 *
 * An origin starts exchanges. An exchange is one request: a status and
 * headers, then a body read into a sink; a request body streams in.
 * Two ways to start one:
 *   fetch — the cache's GET (of a byte range) or HEAD of one object,
 *           signed with the gateway's credentials (or sent anonymously);
 *   relay — a client's request passed on as it came (any S3 operation),
 *           its body verified as it streams.
 * Two ways to be told of progress:
 *   push  — (fetch with on_done set) on_headers, on_data and on_done run
 *           on the loop thread, never before the call that started the
 *           exchange returned; the body lands in the sink set_sink() gave
 *           (from on_headers) or, without one, is collected up to
 *           collect_max bytes (take_body);
 *   pull  — (relay, or fetch without on_done) the caller polls headers()
 *           and read(); when they return BC_EAGAIN, wake(wake_arg) is
 *           called later, from any thread, once there is progress.
 *
 * Ownership: the starter holds one reference and gives it up with
 * bc_exchange_release(), after which no callback or wake fires. An
 * exchange never outlives its origin; origins outlive every exchange
 * (main.c stops the loop, cancelling exchanges, before freeing them).
 * Nothing here knows of caching or of the HTTP server.
 */
#ifndef BC_UPSTREAM_H
#define BC_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "s3/s3_auth.h"
#include "s3/s3_error.h"
#include "s3/s3_request.h"
#include "util/util_error.h"
#include "util/util_kv.h"

typedef struct bc_exchange_s bc_exchange_t;
typedef struct bc_origin_s bc_origin_t;

typedef enum bc_origin_class_e {
	BC_ORIGIN_DEMAND = 0,     /* a client waits for it */
	BC_ORIGIN_PREFETCH,       /* nobody waits yet: yields to demand */
} bc_origin_class_t;

typedef void (*bc_exchange_wake_fn)(void *arg);
typedef void (*bc_exchange_headers_fn)(bc_exchange_t *x, void *arg,
    int status, const bc_kvlist_t *h);
typedef void (*bc_exchange_data_fn)(void *arg, size_t total);
typedef void (*bc_exchange_done_fn)(bc_exchange_t *x, void *arg);

#define BC_FETCH_WHOLE UINT64_MAX   /* bc_fetch_t.first: no Range */

/* The cache's request: strings are copied before fetch() returns. */
typedef struct bc_fetch_s {
	const char        *bucket;
	const char        *key;
	/* a version of key (GET/HEAD ?versionId=), or NULL: the current
	 * one. Only S3 origins get one: the file origin has no versions
	 * (http_object.c never caches a versioned read over it). */
	const char        *version;
	bool               head;        /* HEAD, else GET */
	uint64_t           first, last; /* bytes first..last, or first ==
					   BC_FETCH_WHOLE */
	const char        *cond;        /* "If-Match", "If-None-Match" or
					   NULL; with etag (quoted) */
	const char        *etag;
	bool               anon;        /* as an unsigned client would */
	bc_origin_class_t  cls;
	/* push mode: on_done set (on_headers, on_data may be NULL) */
	size_t             collect_max; /* body bytes kept without a sink;
					   more fails the exchange */
	bc_exchange_headers_fn on_headers;
	bc_exchange_data_fn    on_data;
	bc_exchange_done_fn    on_done;
	void              *arg;
	/* pull mode */
	bc_exchange_wake_fn wake;
	void              *wake_arg;
} bc_fetch_t;

/* A client's request to relay. Everything pointed to must live until the
 * exchange is released. */
typedef struct bc_relay_s {
	const bc_s3_req_t      *s3;          /* method, bucket, key, query,
						headers as received */
	const bc_s3_auth_t     *auth;        /* how it was signed: payload
						hash, aws-chunked mode */
	const bc_client_key_t  *client_key;  /* who signed; NULL: unsigned */
	bool                    unsigned_;   /* send it unsigned: the origin
						decides (S3 origin) */
	uint64_t                content_length;  /* UINT64_MAX: none */
	bool                    chunked_te;  /* Transfer-Encoding: chunked */
	const char             *region;      /* for GetBucketLocation &c. */
	/* The gateway rewrote the body (a DeleteObjects filtered key by
	 * key): its hex SHA-256, sent plain; NULL: the client's body. */
	const char             *body_sha256;
	const bc_kvlist_t      *add_headers;   /* sent too; may be NULL */
	const char *const      *drop_headers;  /* client headers not sent;
						  NULL-ended; may be NULL */
	bc_exchange_wake_fn     wake;
	void                   *wake_arg;
} bc_relay_t;

typedef struct bc_exchange_ops_s {
	/* Request body in. Returns the bytes taken (0: none now, wake
	 * follows), BC_EPIPE when the origin answered already (drop the
	 * rest of the body, then read the answer), or another negative code
	 * with *e the S3 error to answer (a body that failed verification:
	 * the exchange is cancelled). */
	ssize_t  (*write)(bc_exchange_t *x, const void *p, size_t n,
	    bc_s3err_t *e);
	/* The body ended (or there was none). Returns 0, BC_EAGAIN (call
	 * again after a wake), or a negative code with *e set. */
	int      (*write_end)(bc_exchange_t *x, bc_s3err_t *e);
	/* 0 with *status and *h (valid until release), BC_EAGAIN (pull:
	 * wake follows), BC_ETIMEDOUT, or another negative code (transport
	 * failure, cancelled). */
	int      (*headers)(bc_exchange_t *x, int *status,
	    const bc_kvlist_t **h);
	/* Pull mode body: bytes read, 0 at its end, BC_EAGAIN (wake
	 * follows), or a negative code (it failed mid-body). */
	ssize_t  (*read)(bc_exchange_t *x, void *buf, size_t max);
	/* Optional (NULL: not offered). After headers: the whole body as a
	 * file range the caller now owns (it closes fd), for sendfile; the
	 * exchange then has no body to read. 0, or BC_ENOTSUP. */
	int      (*body_fd)(bc_exchange_t *x, int *fd, uint64_t *off,
	    uint64_t *len);
	/* Push mode, from on_headers: the body goes into buf (cap bytes);
	 * more than cap fails the exchange. */
	void     (*set_sink)(bc_exchange_t *x, uint8_t *buf, size_t cap);
	/* Push mode: the collected body (caller frees), or NULL. */
	uint8_t *(*take_body)(bc_exchange_t *x, size_t *len);
	/* After on_done: 0 when the whole body came, else why not. */
	int      (*error)(bc_exchange_t *x);
	/* Time from start to the end of the body. */
	uint64_t (*elapsed_us)(const bc_exchange_t *x);
	/* Gives up the starter's reference: cancels what is in flight; no
	 * callback or wake fires after it returns. NULL is a no-op. */
	void     (*release)(bc_exchange_t *x);
} bc_exchange_ops_t;

struct bc_exchange_s {
	const bc_exchange_ops_t *ops;
};

typedef struct bc_origin_ops_s {
	const char *name;            /* "s3", "file" */
	/* Starts f. Returns the exchange, or NULL (out of memory, the loop
	 * stopping): then no callback fires. */
	bc_exchange_t *(*fetch)(bc_origin_t *o, const bc_fetch_t *f);
	/* Starts relaying r. Returns the exchange, or NULL with *e the S3
	 * error to answer (nothing fires). */
	bc_exchange_t *(*relay)(bc_origin_t *o, const bc_relay_t *r,
	    bc_s3err_t *e);
	/* Loop thread, while the loop stops: ends every exchange in flight
	 * (push exchanges get on_done with BC_ECANCELED). */
	void (*cancel_all)(bc_origin_t *o);
	/* Optional (NULL: always 0). Any thread: 0 when signed exchanges
	 * can start, else why not — BC_EKEYEXPIRED: the S3 origin's
	 * credentials expired and no refresh has succeeded (a fetch then
	 * returns NULL, a relay UpstreamCredentialsExpired). */
	int  (*ready)(bc_origin_t *o);
	void (*free)(bc_origin_t *o);   /* after the loop stopped */
} bc_origin_ops_t;

/* Every origin starts with this base (counters live in stats/). */
struct bc_origin_s {
	const bc_origin_ops_t *ops;
};

static inline bc_exchange_t *
bc_origin_fetch(bc_origin_t *o, const bc_fetch_t *f)
{
	return o->ops->fetch(o, f);
}

static inline bc_exchange_t *
bc_origin_relay(bc_origin_t *o, const bc_relay_t *r, bc_s3err_t *e)
{
	return o->ops->relay(o, r, e);
}

static inline int
bc_origin_ready(bc_origin_t *o)
{
	return o->ops->ready != NULL ? o->ops->ready(o) : 0;
}

static inline void
bc_origin_free(bc_origin_t *o)
{
	if (o != NULL)
		o->ops->free(o);
}

static inline ssize_t
bc_exchange_write(bc_exchange_t *x, const void *p, size_t n, bc_s3err_t *e)
{
	return x->ops->write(x, p, n, e);
}

static inline int
bc_exchange_write_end(bc_exchange_t *x, bc_s3err_t *e)
{
	return x->ops->write_end(x, e);
}

static inline int
bc_exchange_headers(bc_exchange_t *x, int *status, const bc_kvlist_t **h)
{
	return x->ops->headers(x, status, h);
}

static inline ssize_t
bc_exchange_read(bc_exchange_t *x, void *buf, size_t max)
{
	return x->ops->read(x, buf, max);
}

static inline int
bc_exchange_body_fd(bc_exchange_t *x, int *fd, uint64_t *off, uint64_t *len)
{
	return x->ops->body_fd != NULL ? x->ops->body_fd(x, fd, off, len) :
	    BC_ENOTSUP;
}

static inline void
bc_exchange_set_sink(bc_exchange_t *x, uint8_t *buf, size_t cap)
{
	x->ops->set_sink(x, buf, cap);
}

static inline uint8_t *
bc_exchange_take_body(bc_exchange_t *x, size_t *len)
{
	return x->ops->take_body(x, len);
}

static inline int
bc_exchange_error(bc_exchange_t *x)
{
	return x->ops->error(x);
}

static inline uint64_t
bc_exchange_elapsed_us(const bc_exchange_t *x)
{
	return x->ops->elapsed_us(x);
}

static inline void
bc_exchange_release(bc_exchange_t *x)
{
	if (x != NULL)
		x->ops->release(x);
}

#endif
