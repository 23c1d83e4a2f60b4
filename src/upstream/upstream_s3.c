/*
 * upstream_s3.c — the S3 origin (see upstream_s3.h and upstream.h): its
 * address, credentials and request building, and its exchanges over
 * upstream_xfer.c, relayed aws-chunked bodies verified and re-signed on
 * the way (s3_awschunked.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "s3/s3_awschunked.h"
#include "stats/stats.h"
#include "upstream/upstream_s3.h"
#include "upstream/upstream_xfer.h"
#include "util/util_error.h"
#include "util/util_log.h"

int
bc_s3_origin_init(bc_s3_origin_t *o, const bc_config_t *cfg,
    bc_creds_t *creds, char *err, size_t errlen)
{
	const char *url = cfg->upstream, *p = strstr(url, "://"), *end;

	memset(o, 0, sizeof(*o));
	if (p == NULL)
		goto bad;
	p += 3;
	end = strchr(p, '/');
	if (end == NULL)
		end = p + strlen(p);
	if (end == p)
		goto bad;
	o->scheme_host = strndup(url, (size_t)(end - url));
	o->host = strndup(p, (size_t)(end - p));
	if (o->scheme_host == NULL || o->host == NULL) {
		bc_s3_origin_fini(o);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	o->ep.scheme_host = o->scheme_host;
	o->ep.host = o->host;
	o->ep.virtual_style = strcmp(cfg->upstream_addressing, "virtual") == 0;
	o->creds = creds;
	o->region = cfg->region;
	return 0;
bad:
	snprintf(err, errlen, "--upstream: '%s' is not a URL", url);
	return -1;
}

void
bc_s3_origin_fini(bc_s3_origin_t *o)
{
	free(o->scheme_host);
	free(o->host);
	memset(o, 0, sizeof(*o));
}

int
bc_s3_origin_request(const bc_s3_origin_t *o, const char *method,
    const char *bucket, const char *key, bool bucket_slash,
    const bc_kvlist_t *query, const char *payload_hash, bool unsigned_,
    bc_buf_t *url, bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx)
{
	bc_buf_t host = BC_BUF_INIT, path = BC_BUF_INIT;
	bc_creds_snap_t *snap = NULL;
	bc_sigv4_creds_t sc;
	int rv, why = 0;

	if (!unsigned_ && o->creds != NULL) {
		/* one snapshot for the whole signature: never a key of one
		 * pair with the secret of the next */
		snap = bc_creds_get(o->creds, &why);
		if (snap == NULL)
			return why < 0 ? why : BC_EKEYEXPIRED;
	}
	rv = bc_upstream_target(&o->ep, bucket, key, bucket_slash, query, url,
	    &host, &path);
	if (rv == 0 && bc_kv_add(hdrs, "Host", bc_buf_str(&host)) < 0)
		rv = BC_ENOMEM;
	if (rv == 0 && snap == NULL) {
		if (ctx != NULL)
			memset(ctx, 0, sizeof(*ctx));
	} else if (rv == 0) {
		sc.access_key = snap->access_key;
		sc.secret_key = snap->secret_key;
		sc.session_token = snap->session_token;
		sc.region = o->region;
		sc.service = "s3";
		if (bc_sigv4_sign(hdrs, method, bc_buf_str(&path), query,
		    payload_hash, &sc, time(NULL), ctx) < 0)
			rv = BC_ENOMEM;
	}
	bc_creds_snap_unref(snap);
	bc_buf_fini(&host);
	bc_buf_fini(&path);
	return rv < 0 ? BC_ENOMEM : 0;
}

/* ---- the origin (upstream.h) ------------------------------------------- */

#define MAX_AWS_CHUNK  (16 * 1024 * 1024)

typedef struct s3_origin_s {
	bc_origin_t        base;       /* first: the ops see this */
	bc_s3_origin_t     s3;
	const bc_config_t *cfg;
	bc_loop_t         *loop;
} s3_origin_t;

/* One exchange: an xfer, and for a relayed aws-chunked body the verifier
 * that re-signs it on the way. */
typedef struct s3_exchange_s {
	bc_exchange_t          base;    /* first */
	bc_xfer_t             *x;
	bc_awschunked_t       *chunked;
	bool                   discard;    /* the upstream answered already */
	bool                   ended;      /* write_end went through */
	bc_exchange_headers_fn on_headers;
	bc_exchange_data_fn    on_data;
	bc_exchange_done_fn    on_done;
	void                  *arg;
} s3_exchange_t;

/* Client headers never forwarded: hop-by-hop ones, and those the gateway
 * sets itself when it re-signs. */
static const char *const dropped_request_headers[] = {
	"Host", "Connection", "Keep-Alive", "Proxy-Connection",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding",
	"Upgrade", "Expect", "Authorization", "X-Amz-Date",
	"X-Amz-Content-SHA256", "X-Amz-Security-Token", "Content-Length",
	"Date", "x-bucketcache-job", "x-bucketcache-next",
	"x-bucketcache-pattern", "x-bucketcache-epoch", NULL
};

static bool
in_list(const char *const *list, const char *name)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcasecmp(name, *list) == 0)
			return true;
	return false;
}

/* Query parameters that only authenticated the client. */
static bool
is_auth_param(const bc_s3_auth_t *a, const char *name)
{
	static const char *const v4[] = { "X-Amz-Algorithm",
	    "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	    "X-Amz-SignedHeaders", "X-Amz-Signature",
	    "X-Amz-Security-Token", NULL };
	static const char *const v2[] = { "AWSAccessKeyId", "Signature",
	    "Expires", NULL };
	const char *const *list = a->kind == BC_S3AUTH_V4_QUERY ? v4 :
	    a->kind == BC_S3AUTH_V2_QUERY ? v2 : NULL;

	for (; list != NULL && *list != NULL; list++)
		if (strcmp(name, *list) == 0)
			return true;
	return false;
}

/*
 * The payload hash to sign a relayed request with: a client's hex
 * payload hash is forwarded (the upstream then checks the body against
 * it); UNSIGNED-PAYLOAD stays unsigned; aws-chunked goes on in the
 * client's mode; SigV2 and anonymous clients' bodies go UNSIGNED.
 */
static const char *
relay_payload_hash(const bc_relay_t *r, bool body)
{
	if (r->body_sha256 != NULL)
		return r->body_sha256;
	if ((r->auth->kind == BC_S3AUTH_V4 || r->auth->streaming) &&
	    r->auth->payload_hash[0] != '\0')
		return r->auth->payload_hash;
	return body ? BC_SIGV4_UNSIGNED : BC_SIGV4_EMPTY_SHA256;
}

/* Fills url and hdrs for relaying r, signed with payload_hash (ctx: the
 * signing context aws-chunked chains from). Returns 0 or BC_ENOMEM. */
static int
relay_request(const s3_origin_t *so, const bc_relay_t *r,
    const char *payload_hash, bc_buf_t *url, bc_kvlist_t *hdrs,
    bc_sigv4_ctx_t *ctx)
{
	const bc_s3_req_t *q = r->s3;
	bool slash = q->key[0] == '\0' && !q->virtual_host &&
	    q->path[strlen(q->path) - 1] == '/';
	bc_kvlist_t query = BC_KVLIST_INIT;
	int rv = BC_ENOMEM;

	for (size_t i = 0; i < q->query.n; i++)
		if (!is_auth_param(r->auth, q->query.v[i].name) &&
		    bc_kv_add(&query, q->query.v[i].name,
		    q->query.v[i].value) < 0)
			goto out;
	for (size_t i = 0; i < q->headers.n; i++) {
		const bc_kv_t *h = &q->headers.v[i];

		if (in_list(dropped_request_headers, h->name) ||
		    in_list(r->drop_headers, h->name))
			continue;
		if (bc_kv_add(hdrs, h->name, h->value) < 0)
			goto out;
	}
	for (size_t i = 0; r->add_headers != NULL && i < r->add_headers->n;
	    i++)
		if (bc_kv_add(hdrs, r->add_headers->v[i].name,
		    r->add_headers->v[i].value) < 0)
			goto out;
	/* an unsigned client's request goes unsigned (the upstream decides);
	 * an aws-chunked body still says how it is framed */
	if (r->unsigned_ && r->auth->streaming &&
	    bc_kv_add(hdrs, "x-amz-content-sha256", payload_hash) < 0)
		goto out;
	rv = bc_s3_origin_request(&so->s3, q->method, q->bucket, q->key,
	    slash, &query, payload_hash, r->unsigned_, url, hdrs, ctx);
out:
	bc_kv_fini(&query);
	return rv == BC_EKEYEXPIRED ? rv : rv < 0 ? BC_ENOMEM : 0;
}

static void
xchg_headers_cb(bc_xfer_t *x, void *arg, int status, const bc_kvlist_t *h)
{
	s3_exchange_t *e = arg;

	(void)x;
	if (e->on_headers != NULL)
		e->on_headers(&e->base, e->arg, status, h);
}

static void
xchg_data_cb(void *arg, size_t total)
{
	s3_exchange_t *e = arg;

	if (e->on_data != NULL)
		e->on_data(e->arg, total);
}

/* on_done may release the exchange: nothing touches e after it. */
static void
xchg_done_cb(bc_xfer_t *x, void *arg)
{
	s3_exchange_t *e = arg;

	(void)x;
	e->on_done(&e->base, e->arg);
}

/* Moves verified aws-chunked output into the xfer. Returns false when the
 * xfer is full (its wake follows). */
static bool
drain_chunked(s3_exchange_t *e)
{
	const char *out;
	size_t n;
	ssize_t w;

	while ((n = bc_awschunked_output(e->chunked, &out)) > 0) {
		w = bc_xfer_write(e->x, out, n);
		if (w < 0) {
			e->discard = true;
			return true;
		}
		bc_awschunked_consume(e->chunked, (size_t)w);
		if ((size_t)w < n)
			return false;
	}
	return true;
}

static ssize_t
xchg_write(bc_exchange_t *x, const void *p, size_t n, bc_s3err_t *err)
{
	s3_exchange_t *e = (s3_exchange_t *)x;
	const char *data = p;
	size_t taken = 0;
	ssize_t k;

	*err = BC_S3E_NONE;
	if (e->discard)
		return BC_EPIPE;
	if (e->chunked == NULL) {
		k = bc_xfer_write(e->x, p, n);
		if (k < 0) {
			e->discard = true;
			return BC_EPIPE;
		}
		return k;
	}
	for (;;) {
		if (!drain_chunked(e))
			return (ssize_t)taken;
		if (e->discard)
			return BC_EPIPE;
		if (taken == n)
			return (ssize_t)taken;
		k = bc_awschunked_feed(e->chunked, data + taken, n - taken,
		    err);
		if (k < 0) {
			/* the body is bad: cancel now, so the upstream never
			 * gets the rest of it */
			bc_xfer_detach(e->x);
			return BC_EPROTO;
		}
		taken += (size_t)k;
	}
}

static int
xchg_write_end(bc_exchange_t *x, bc_s3err_t *err)
{
	s3_exchange_t *e = (s3_exchange_t *)x;

	*err = BC_S3E_NONE;
	if (e->ended)
		return 0;
	if (e->chunked != NULL && !e->discard) {
		if (!drain_chunked(e))
			return BC_EAGAIN;
		if (!e->discard) {
			*err = bc_awschunked_finish(e->chunked);
			if (*err != BC_S3E_NONE)
				return BC_EPROTO;
		}
	}
	e->ended = true;
	bc_xfer_write_end(e->x);
	return 0;
}

static int
xchg_headers(bc_exchange_t *x, int *status, const bc_kvlist_t **h)
{
	return bc_xfer_headers(((s3_exchange_t *)x)->x, status, h);
}

static ssize_t
xchg_read(bc_exchange_t *x, void *buf, size_t max)
{
	return bc_xfer_read(((s3_exchange_t *)x)->x, buf, max);
}

static void
xchg_set_sink(bc_exchange_t *x, uint8_t *buf, size_t cap)
{
	bc_xfer_set_sink(((s3_exchange_t *)x)->x, buf, cap);
}

static uint8_t *
xchg_take_body(bc_exchange_t *x, size_t *len)
{
	return bc_xfer_take_body(((s3_exchange_t *)x)->x, len);
}

static int
xchg_error(bc_exchange_t *x)
{
	return bc_xfer_error(((s3_exchange_t *)x)->x);
}

static uint64_t
xchg_elapsed_us(const bc_exchange_t *x)
{
	return bc_xfer_elapsed_us(((const s3_exchange_t *)x)->x);
}

static void
xchg_release(bc_exchange_t *x)
{
	s3_exchange_t *e = (s3_exchange_t *)x;

	bc_xfer_detach(e->x);
	bc_xfer_unref(e->x);
	bc_awschunked_free(e->chunked);
	free(e);
}

static const bc_exchange_ops_t s3_exchange_ops = {
	.write = xchg_write,
	.write_end = xchg_write_end,
	.headers = xchg_headers,
	.read = xchg_read,
	.body_fd = NULL,
	.set_sink = xchg_set_sink,
	.take_body = xchg_take_body,
	.error = xchg_error,
	.elapsed_us = xchg_elapsed_us,
	.release = xchg_release,
};

static s3_exchange_t *
xchg_new(void)
{
	s3_exchange_t *e = calloc(1, sizeof(*e));

	if (e != NULL)
		e->base.ops = &s3_exchange_ops;
	return e;
}

static bc_exchange_t *
s3_fetch(bc_origin_t *o, const bc_fetch_t *f)
{
	s3_origin_t *so = (s3_origin_t *)o;
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t hdrs = BC_KVLIST_INIT;
	const char *method = f->head ? "HEAD" : "GET";
	bc_kvlist_t query = BC_KVLIST_INIT;
	s3_exchange_t *e = xchg_new();
	bc_xfer_opts_t xo;
	char range[64];
	int rv = 0;

	if (e == NULL)
		return NULL;
	if (f->version != NULL)
		rv |= bc_kv_add(&query, "versionId", f->version);
	if (!f->head && f->first != BC_FETCH_WHOLE) {
		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64,
		    f->first, f->last);
		rv |= bc_kv_add(&hdrs, "Range", range);
	}
	if (f->cond != NULL)
		rv |= bc_kv_add(&hdrs, f->cond, f->etag);
	if (rv == 0)
		rv = bc_s3_origin_request(&so->s3, method, f->bucket, f->key,
		    false, f->version != NULL ? &query : NULL,
		    BC_SIGV4_EMPTY_SHA256, f->anon, &url, &hdrs, NULL);
	bc_kv_fini(&query);
	if (rv < 0)
		goto fail;
	bc_xfer_opts_init(&xo, so->cfg);
	xo.method = method;
	xo.url = bc_buf_str(&url);
	xo.headers = &hdrs;
	xo.body_len = BC_XFER_NO_BODY;
	if (f->on_done != NULL) {
		e->on_headers = f->on_headers;
		e->on_data = f->on_data;
		e->on_done = f->on_done;
		e->arg = f->arg;
		xo.collect_max = f->collect_max > 0 ? f->collect_max : 1;
		xo.on_done = xchg_done_cb;
		xo.on_headers = xchg_headers_cb;
		xo.on_data = xchg_data_cb;
		xo.done_arg = e;
	}
	e->x = bc_xfer_start(so->loop, &xo, f->wake, f->wake_arg);
	if (e->x == NULL)
		goto fail;
	bc_buf_fini(&url);
	bc_kv_fini(&hdrs);
	return &e->base;
fail:
	bc_buf_fini(&url);
	bc_kv_fini(&hdrs);
	free(e);
	return NULL;
}

static bc_exchange_t *
s3_relay(bc_origin_t *o, const bc_relay_t *r, bc_s3err_t *err)
{
	s3_origin_t *so = (s3_origin_t *)o;
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t hdrs = BC_KVLIST_INIT;
	/* Transfer-Encoding: chunked (the only one the front end lets in):
	 * a body of unknown length, streamed on chunked; the upstream
	 * decides whether it takes it (S3: 411 for PutObject) */
	bool body = r->chunked_te || (r->content_length != UINT64_MAX &&
	    r->content_length > 0);
	s3_exchange_t *e = xchg_new();
	bc_sigv4_ctx_t ctx;
	bc_xfer_opts_t xo;

	int rv;

	*err = BC_S3E_InternalError;
	if (e == NULL)
		return NULL;
	if (so->s3.creds == NULL && !r->unsigned_ && r->auth->streaming &&
	    r->auth->stream_mode != BC_AWSCHUNKED_UNSIGNED_TRAILER) {
		/* no key to re-sign its chunks with (--credentials none) */
		BC_WARN("upstream %s %s/%s: a signed aws-chunked body cannot "
		    "go upstream without credentials", r->s3->method,
		    r->s3->bucket, r->s3->key);
		*err = BC_S3E_NotImplemented;
		goto fail;
	}
	rv = relay_request(so, r, relay_payload_hash(r, body), &url, &hdrs,
	    &ctx);
	if (rv < 0) {
		if (rv == BC_EKEYEXPIRED)
			*err = BC_S3E_UpstreamCredentialsExpired;
		goto fail;
	}
	if (r->auth->streaming && r->body_sha256 == NULL) {
		/* verified and re-encoded as it streams, the declared length
		 * and checksum checked on the way */
		*err = bc_awschunked_from_headers(&r->s3->headers,
		    r->auth->stream_mode, &r->auth->v4, true, &ctx,
		    MAX_AWS_CHUNK, &e->chunked);
		if (*err != BC_S3E_NONE)
			goto fail;
	}
	bc_xfer_opts_init(&xo, so->cfg);
	xo.method = r->s3->method;
	xo.url = bc_buf_str(&url);
	xo.headers = &hdrs;
	xo.body_len = r->chunked_te ? BC_XFER_UNKNOWN_LEN : body ?
	    r->content_length : BC_XFER_NO_BODY;
	BC_DEBUG("upstream %s %s", xo.method, xo.url);
	e->x = bc_xfer_start(so->loop, &xo, r->wake, r->wake_arg);
	if (e->x == NULL) {
		*err = BC_S3E_ServiceUnavailable;
		goto fail;
	}
	*err = BC_S3E_NONE;
	bc_buf_fini(&url);
	bc_kv_fini(&hdrs);
	return &e->base;
fail:
	bc_buf_fini(&url);
	bc_kv_fini(&hdrs);
	bc_awschunked_free(e->chunked);
	free(e);
	return NULL;
}

static void
s3_cancel_all(bc_origin_t *o)
{
	bc_xfer_cancel_all(((s3_origin_t *)o)->loop, NULL);
}

static void
s3_free(bc_origin_t *o)
{
	s3_origin_t *so = (s3_origin_t *)o;

	bc_s3_origin_fini(&so->s3);
	free(so);
}

static int
s3_ready(bc_origin_t *o)
{
	s3_origin_t *so = (s3_origin_t *)o;

	return so->s3.creds != NULL ? bc_creds_ready(so->s3.creds) : 0;
}

static const bc_origin_ops_t s3_origin_ops = {
	.name = "s3",
	.fetch = s3_fetch,
	.relay = s3_relay,
	.cancel_all = s3_cancel_all,
	.ready = s3_ready,
	.free = s3_free,
};

int
bc_s3_origin_new(const bc_config_t *cfg, bc_creds_t *creds, bc_loop_t *loop,
    bc_origin_t **out, char *err, size_t errlen)
{
	s3_origin_t *so = calloc(1, sizeof(*so));

	*out = NULL;
	if (so == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (bc_s3_origin_init(&so->s3, cfg, creds, err, errlen) < 0) {
		free(so);
		return -1;
	}
	so->base.ops = &s3_origin_ops;
	so->cfg = cfg;
	so->loop = loop;
	*out = &so->base;
	return 0;
}

const bc_s3_origin_t *
bc_s3_origin_of(const bc_origin_t *o)
{
	return o != NULL && o->ops == &s3_origin_ops ?
	    &((const s3_origin_t *)o)->s3 : NULL;
}
