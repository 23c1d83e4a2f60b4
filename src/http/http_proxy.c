/*
 * http_proxy.c — bc_handler_proxy: forwards a client's S3 request to the
 * upstream, re-signed with the gateway's credentials, streaming the body
 * both ways through an upstream exchange (upstream_xfer.h), and returns
 * the upstream's status, headers and body as they came.
 *
 * Payload signing upstream: a client's hex payload hash is forwarded (the
 * upstream then checks the body against it); UNSIGNED-PAYLOAD stays
 * unsigned; an aws-chunked body goes on in the client's mode and framing
 * (s3_awschunked.h), verified as it streams: signed chunks and trailer
 * re-signed, the checksum trailer verified and passed on as sent, so the
 * bucket checks and stores the checksum S3 would; its length is the
 * client's (none, chunked, when the client sent it chunked). SigV2 and
 * anonymous clients' bodies go UNSIGNED, but an anonymous one in the
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER mode goes in that mode.
 * Unsigned clients without --anonymous are forwarded unsigned (no
 * Authorization, X-Amz-Date or token): the upstream decides.
 *
 * Threads: handler ops and the content reader run on MHD workers; the
 * exchange wakes the connection through bc_http_resume_cb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http/http_proxy.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_sigv4.h"
#include "s3/s3_xml.h"
#include "stats/stats.h"
#include "cache/cache.h"
#include "upstream/upstream_s3.h"
#include "upstream/upstream_xfer.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define READER_BLOCK   (64 * 1024)
#define MAX_AWS_CHUNK  (16 * 1024 * 1024)

#define MAX_DELETE_BODY (2 * 1024 * 1024)

typedef struct proxy_s {
	bc_xfer_t       *x;
	bc_awschunked_t *chunked;
	bool             body_ended;
	bool             discard_body;   /* upstream already answered */
	bc_buf_t         delete_body;    /* DeleteObjects: the keys to drop */
	bool             delete_overflow;
} proxy_t;

/* Client headers never forwarded: hop-by-hop ones, and those the gateway
 * sets itself when it re-signs. */
static const char *const dropped_request_headers[] = {
	"Host", "Connection", "Keep-Alive", "Proxy-Connection",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding",
	"Upgrade", "Expect", "Authorization", "X-Amz-Date",
	"X-Amz-Content-SHA256", "X-Amz-Security-Token", "Content-Length",
	"Date", NULL
};

/* Upstream response headers not copied: MHD writes its own framing. */
static const char *const dropped_response_headers[] = {
	"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
	"Date", "Proxy-Connection", "Trailer", "Upgrade", NULL
};

/* Query parameters that only authenticated the client. */
static bool
is_auth_param(const bc_http_req_t *r, const char *name)
{
	static const char *const v4[] = { "X-Amz-Algorithm",
	    "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	    "X-Amz-SignedHeaders", "X-Amz-Signature",
	    "X-Amz-Security-Token", NULL };
	static const char *const v2[] = { "AWSAccessKeyId", "Signature",
	    "Expires", NULL };
	const char *const *list = r->auth.kind == BC_S3AUTH_V4_QUERY ? v4 :
	    r->auth.kind == BC_S3AUTH_V2_QUERY ? v2 : NULL;

	for (; list != NULL && *list != NULL; list++)
		if (strcmp(name, *list) == 0)
			return true;
	return false;
}

static bool
in_list(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcasecmp(name, *list) == 0)
			return true;
	return false;
}

/* The payload hash to sign upstream with, per the comment at the top. */
static const char *
upstream_payload_hash(const bc_http_req_t *r, bool body)
{
	if ((r->auth.kind == BC_S3AUTH_V4 || r->auth.streaming) &&
	    r->auth.payload_hash[0] != '\0')
		return r->auth.payload_hash;
	return body ? BC_SIGV4_UNSIGNED : BC_SIGV4_EMPTY_SHA256;
}

bc_s3err_t
bc_proxy_request(bc_http_req_t *r, const char *payload_hash,
    const char *const *drop, const bc_kvlist_t *add, bc_buf_t *url,
    bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx)
{
	const bc_server_t *s = r->srv;
	bool slash = r->s3.key[0] == '\0' && !r->s3.virtual_host &&
	    r->s3.path[strlen(r->s3.path) - 1] == '/';
	bc_kvlist_t query = BC_KVLIST_INIT;
	bc_s3err_t e = BC_S3E_InternalError;

	for (size_t i = 0; i < r->s3.query.n; i++)
		if (!is_auth_param(r, r->s3.query.v[i].name) &&
		    bc_kv_add(&query, r->s3.query.v[i].name,
		    r->s3.query.v[i].value) < 0)
			goto fail;
	for (size_t i = 0; i < r->s3.headers.n; i++) {
		const bc_kv_t *h = &r->s3.headers.v[i];

		if (in_list(dropped_request_headers, h->name) ||
		    (drop != NULL && in_list(drop, h->name)))
			continue;
		if (bc_kv_add(hdrs, h->name, h->value) < 0)
			goto fail;
	}
	for (size_t i = 0; add != NULL && i < add->n; i++)
		if (bc_kv_add(hdrs, add->v[i].name, add->v[i].value) < 0)
			goto fail;
	/* an unsigned client's request goes unsigned (the upstream decides);
	 * an aws-chunked body still says how it is framed */
	if (r->upstream_unsigned && r->auth.streaming &&
	    bc_kv_add(hdrs, "x-amz-content-sha256", payload_hash) < 0)
		goto fail;
	if (bc_s3_origin_request(s->origin, r->s3.method, r->s3.bucket,
	    r->s3.key, slash, &query, payload_hash, r->upstream_unsigned, url,
	    hdrs, ctx) < 0)
		goto fail;
	e = BC_S3E_NONE;
fail:
	bc_kv_fini(&query);
	return e;
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
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t hdrs = BC_KVLIST_INIT;
	/* Transfer-Encoding: chunked (the only one the front end lets in):
	 * a body of unknown length, streamed on chunked; the upstream
	 * decides whether it takes it (S3: 411 for PutObject) */
	bool te = r->content_length == UINT64_MAX &&
	    bc_kv_get(&r->s3.headers, "Transfer-Encoding") != NULL;
	bool body = te || (r->content_length != UINT64_MAX &&
	    r->content_length > 0);
	bc_sigv4_ctx_t ctx;
	bc_xfer_opts_t o;
	proxy_t *p;
	bc_s3err_t e;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return BC_S3E_InternalError;
	r->hdata = p;
	bc_buf_init(&p->delete_body, MAX_DELETE_BODY);
	if (p->chunked != NULL || r->auth.streaming)
		p->delete_overflow = true;   /* keys not readable: drop all */
	e = bc_proxy_request(r, upstream_payload_hash(r, body), NULL, NULL,
	    &url, &hdrs, &ctx);
	if (e != BC_S3E_NONE)
		goto out;
	if (r->auth.streaming) {
		/* verified and re-encoded as it streams, the declared
		 * length and checksum checked on the way */
		e = bc_awschunked_from_headers(&r->s3.headers,
		    r->auth.stream_mode, &r->auth.v4, true, &ctx,
		    MAX_AWS_CHUNK, &p->chunked);
		if (e != BC_S3E_NONE)
			goto out;
	}
	bc_xfer_opts_init(&o, r->srv->cfg);
	o.method = r->s3.method;
	o.url = bc_buf_str(&url);
	o.headers = &hdrs;
	o.body_len = te ? BC_XFER_UNKNOWN_LEN : body ? r->content_length :
	    BC_XFER_NO_BODY;
	BC_DEBUG("upstream %s %s", o.method, o.url);
	p->x = bc_xfer_start(r->srv->loop, &o, bc_http_resume_cb, r);
	if (p->x == NULL)
		e = BC_S3E_ServiceUnavailable;
out:
	bc_buf_fini(&url);
	bc_kv_fini(&hdrs);
	return e;
}

/* Moves verified aws-chunked output into the exchange. Returns false when
 * the exchange is full (wake will follow). */
static bool
drain_chunked(proxy_t *p)
{
	const char *out;
	size_t n;
	ssize_t w;

	while ((n = bc_awschunked_output(p->chunked, &out)) > 0) {
		w = bc_xfer_write(p->x, out, n);
		if (w < 0) {
			p->discard_body = true;
			return true;
		}
		bc_awschunked_consume(p->chunked, (size_t)w);
		if ((size_t)w < n)
			return false;
	}
	return true;
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
	if (p->chunked == NULL) {
		n = bc_xfer_write(p->x, data, *len);
		if (n > 0 && r->s3.op == BC_S3OP_DeleteObjects &&
		    r->srv->cache != NULL && !p->delete_overflow &&
		    bc_buf_append(&p->delete_body, data, (size_t)n) < 0)
			p->delete_overflow = true;
		if (n < 0) {            /* upstream answered already */
			p->discard_body = true;
			*len = 0;
			return BC_S3E_NONE;
		}
		*len -= (size_t)n;
		if (*len > 0)
			bc_http_wait(r);
		return BC_S3E_NONE;
	}
	for (;;) {
		if (!drain_chunked(p)) {
			/* Suspend only with input left (as above): one that took
			 * all it was given and suspended hung under
			 * libmicrohttpd 0.9.75 when clients send each
			 * aws-chunked piece as its own HTTP chunk (the JS SDK).
			 * The output left waits for the next call, or finish. */
			if (*len > 0)
				bc_http_wait(r);
			return BC_S3E_NONE;
		}
		if (p->discard_body) {
			*len = 0;
			return BC_S3E_NONE;
		}
		if (*len == 0)
			return BC_S3E_NONE;
		n = bc_awschunked_feed(p->chunked, data, *len, &e);
		if (n < 0) {
			/* the body is bad: cancel the exchange now, so the
			 * upstream never gets the rest of it */
			bc_xfer_detach(p->x);
			return e;
		}
		data += n;
		*len -= (size_t)n;
	}
}

static ssize_t
proxy_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	bc_http_req_t *r = cls;
	proxy_t *p = r->hdata;
	ssize_t n = bc_xfer_read(p->x, buf, max);

	if (n > 0)
		return n;
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == BC_EAGAIN) {
		bc_http_wait(r);
		return 0;
	}
	BC_WARN("%s %s: upstream failed mid-body: %s", r->s3.method,
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

static bc_s3err_t
proxy_finish(bc_http_req_t *r)
{
	proxy_t *p = r->hdata;
	const bc_kvlist_t *uh;
	struct MHD_Response *resp;
	uint64_t size;
	int status, rv;
	bool head;

	if (!p->body_ended) {
		if (p->chunked != NULL && !p->discard_body) {
			if (!drain_chunked(p)) {
				bc_http_wait(r);
				return BC_S3E_NONE;
			}
			if (!p->discard_body) {
				bc_s3err_t e = bc_awschunked_finish(p->chunked);

				if (e != BC_S3E_NONE)
					return e;
			}
		}
		p->body_ended = true;
		bc_xfer_write_end(p->x);
	}
	rv = bc_xfer_headers(p->x, &status, &uh);
	if (rv == BC_EAGAIN) {
		bc_http_wait(r);
		return BC_S3E_NONE;
	}
	/* Whatever the answer, a write may have happened: drop the cached
	 * copy before the client hears back (read-after-write). Not after
	 * an unsigned request the upstream refused (4xx: nothing written),
	 * or any client could empty the cache. */
	if (r->srv->cache != NULL && bc_s3op_writes_object(r->s3.op) &&
	    !(r->upstream_unsigned && rv == 0 && status >= 400 &&
	    status < 500))
		invalidate(r, p);
	if (rv == BC_ETIMEDOUT)
		return BC_S3E_GatewayTimeout;
	if (rv < 0)
		return BC_S3E_BadGateway;

	head = strcmp(r->s3.method, "HEAD") == 0;
	size = header_u64(uh, "Content-Length");
	if (head && size != MHD_SIZE_UNKNOWN) {
		/* MHD sends a HEAD response's size as its Content-Length and
		 * never reads its body. */
		resp = MHD_create_response_from_callback(size, READER_BLOCK,
		    proxy_reader, r, NULL);
	} else if (head || status == 204 || status == 304 || status < 200) {
		resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_callback(size, READER_BLOCK,
		    proxy_reader, r, NULL);
		r->bytes_out = size != MHD_SIZE_UNKNOWN ? size : 0;
	}
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

	if (p == NULL)
		return;
	if (p->x != NULL) {
		bc_xfer_detach(p->x);
		bc_xfer_unref(p->x);
	}
	bc_awschunked_free(p->chunked);
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
