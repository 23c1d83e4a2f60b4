/*
 * http_proxy.c — bc_handler_proxy: relays a client's S3 request to the
 * origin (upstream.h: the S3 origin re-signs it, the file origin answers
 * from its directory), streaming the body both ways, and returns the
 * origin's status, headers and body as they came. A body the origin
 * offers as a file range goes out with sendfile.
 *
 * Threads: handler ops and the content reader run on MHD workers; the
 * exchange wakes the connection through bc_http_resume_cb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "http/http_proxy.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_xml.h"
#include "stats/stats.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define READER_BLOCK   (64 * 1024)

#define MAX_DELETE_BODY (2 * 1024 * 1024)

typedef struct proxy_s {
	bc_exchange_t   *x;
	bool             body_ended;
	bool             discard_body;   /* the origin answered already */
	bc_buf_t         delete_body;    /* DeleteObjects: the keys to drop */
	bool             delete_overflow;
} proxy_t;

/* Upstream response headers not copied: MHD writes its own framing. */
static const char *const dropped_response_headers[] = {
	"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
	"Date", "Proxy-Connection", "Trailer", "Upgrade", NULL
};

static bool
in_list(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcasecmp(name, *list) == 0)
			return true;
	return false;
}

void
bc_proxy_relay_init(bc_http_req_t *r, bc_relay_t *rl)
{
	memset(rl, 0, sizeof(*rl));
	rl->s3 = &r->s3;
	rl->auth = &r->auth;
	rl->client_key = r->client_key;
	rl->unsigned_ = r->upstream_unsigned;
	rl->content_length = r->content_length;
	rl->chunked_te = r->content_length == UINT64_MAX &&
	    bc_kv_get(&r->s3.headers, "Transfer-Encoding") != NULL;
	rl->region = r->srv->cfg->region;
	rl->wake = bc_http_resume_cb;
	rl->wake_arg = r;
}

void
bc_proxy_copy_headers(struct MHD_Response *resp, const bc_kvlist_t *uh)
{
	for (size_t i = 0; i < uh->n; i++) {
		if (in_list(dropped_response_headers, uh->v[i].name))
			continue;
		bc_http_add_header(resp, uh->v[i].name, uh->v[i].value);
	}
}

static bc_s3err_t
proxy_start(bc_http_req_t *r)
{
	bc_relay_t rl;
	proxy_t *p;
	bc_s3err_t e;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return BC_S3E_InternalError;
	r->hdata = p;
	bc_buf_init(&p->delete_body, MAX_DELETE_BODY);
	if (r->auth.streaming)
		p->delete_overflow = true;   /* keys not readable: drop all */
	bc_proxy_relay_init(r, &rl);
	p->x = bc_origin_relay(r->srv->origin, &rl, &e);
	return p->x != NULL ? BC_S3E_NONE : e;
}

static bc_s3err_t
proxy_body(bc_http_req_t *r, const char *data, size_t *len)
{
	proxy_t *p = r->hdata;
	bc_s3err_t e = BC_S3E_NONE;
	ssize_t n;

	if (p->discard_body) {
		*len = 0;
		return BC_S3E_NONE;
	}
	n = bc_exchange_write(p->x, data, *len, &e);
	if (n == BC_EPIPE) {            /* the origin answered already */
		p->discard_body = true;
		*len = 0;
		return BC_S3E_NONE;
	}
	if (n < 0)
		return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
	if (n > 0 && r->s3.op == BC_S3OP_DeleteObjects &&
	    r->srv->cache != NULL && !p->delete_overflow &&
	    bc_buf_append(&p->delete_body, data, (size_t)n) < 0)
		p->delete_overflow = true;
	*len -= (size_t)n;
	/* Suspend only with input left: one that took all it was given and
	 * suspended hung under libmicrohttpd 0.9.75 when clients send each
	 * aws-chunked piece as its own HTTP chunk (the JS SDK). */
	if (*len > 0)
		bc_http_wait(r);
	return BC_S3E_NONE;
}

static ssize_t
proxy_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	bc_http_req_t *r = cls;
	proxy_t *p = r->hdata;
	ssize_t n = bc_exchange_read(p->x, buf, max);

	if (n > 0)
		return n;
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == BC_EAGAIN) {
		bc_http_wait(r);
		return 0;
	}
	BC_WARN("%s %s: origin failed mid-body: %s", r->s3.method,
	    r->raw_uri, bc_strerror((int)n));
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* Drops what a write through the gateway may have changed. */
static void
invalidate(bc_http_req_t *r, proxy_t *p)
{
	bc_cache_t *c = r->srv->cache;
	char **keys = NULL;
	size_t n = 0;
	bool quiet;

	switch (r->s3.op) {
	case BC_S3OP_DeleteBucket:
		bc_cache_invalidate(c, r->s3.bucket, NULL, "");
		return;
	case BC_S3OP_DeleteObjects:
		if (p->delete_overflow || bc_s3_xml_parse_delete(
		    bc_buf_str(&p->delete_body), p->delete_body.len, &keys, &n,
		    &quiet) != BC_S3E_NONE) {
			bc_cache_invalidate(c, r->s3.bucket, NULL, "");
			return;
		}
		for (size_t i = 0; i < n; i++) {
			bc_cache_invalidate(c, r->s3.bucket, keys[i], NULL);
			free(keys[i]);
		}
		free(keys);
		return;
	default:
		bc_cache_invalidate(c, r->s3.bucket, r->s3.key, NULL);
		return;
	}
}

static uint64_t
header_u64(const bc_kvlist_t *h, const char *name)
{
	uint64_t n;

	return bc_u64_parse_str(bc_kv_get(h, name), &n) ? n :
	    MHD_SIZE_UNKNOWN;
}

/* The origin's answer as an MHD response: its body read through
 * proxy_reader, or sent from the file range the origin offers. */
static struct MHD_Response *
proxy_response(bc_http_req_t *r, proxy_t *p, int status,
    const bc_kvlist_t *uh)
{
	bool head = strcmp(r->s3.method, "HEAD") == 0;
	uint64_t size = header_u64(uh, "Content-Length"), off, len;
	int fd;

	if (head && size != MHD_SIZE_UNKNOWN)
		/* MHD sends a HEAD response's size as its Content-Length and
		 * never reads its body. */
		return MHD_create_response_from_callback(size, READER_BLOCK,
		    proxy_reader, r, NULL);
	if (head || status == 204 || status == 304 || status < 200)
		return MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
	r->bytes_out = size != MHD_SIZE_UNKNOWN ? size : 0;
	if (bc_exchange_body_fd(p->x, &fd, &off, &len) == 0) {
		struct MHD_Response *resp;

		r->bytes_out = len;
		/* MHD closes fd with the response */
		resp = MHD_create_response_from_fd_at_offset64(len, fd,
		    (int64_t)off);
		if (resp == NULL)
			close(fd);
		return resp;
	}
	return MHD_create_response_from_callback(size, READER_BLOCK,
	    proxy_reader, r, NULL);
}

static bc_s3err_t
proxy_finish(bc_http_req_t *r)
{
	proxy_t *p = r->hdata;
	const bc_kvlist_t *uh;
	struct MHD_Response *resp;
	bc_s3err_t e = BC_S3E_NONE;
	int status, rv;

	if (!p->body_ended) {
		rv = bc_exchange_write_end(p->x, &e);
		if (rv == BC_EAGAIN) {
			bc_http_wait(r);
			return BC_S3E_NONE;
		}
		if (rv < 0)
			return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
		p->body_ended = true;
	}
	rv = bc_exchange_headers(p->x, &status, &uh);
	if (rv == BC_EAGAIN) {
		bc_http_wait(r);
		return BC_S3E_NONE;
	}
	/* Whatever the answer, a write may have happened: drop the cached
	 * copy before the client hears back (read-after-write). Not after
	 * an unsigned request the origin refused (4xx: nothing written),
	 * or any client could empty the cache. */
	if (r->srv->cache != NULL && bc_s3op_writes_object(r->s3.op) &&
	    !(r->upstream_unsigned && rv == 0 && status >= 400 &&
	    status < 500))
		invalidate(r, p);
	if (rv == BC_ETIMEDOUT)
		return BC_S3E_GatewayTimeout;
	if (rv < 0)
		return BC_S3E_BadGateway;
	resp = proxy_response(r, p, status, uh);
	if (resp == NULL)
		return BC_S3E_InternalError;
	bc_proxy_copy_headers(resp, uh);
	if (bc_http_respond(r, (unsigned)status, resp) < 0)
		return BC_S3E_InternalError;
	return BC_S3E_NONE;
}

static void
proxy_done(bc_http_req_t *r, bool ok)
{
	proxy_t *p = r->hdata;

	(void)ok;
	if (p == NULL)
		return;
	bc_exchange_release(p->x);
	bc_buf_fini(&p->delete_body);
	free(p);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_proxy = {
	.name = "proxy",
	.start = proxy_start,
	.body = proxy_body,
	.finish = proxy_finish,
	.done = proxy_done,
};
