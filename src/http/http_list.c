/*
 * http_list.c — bc_handler_list: ListObjects and ListObjectsV2 through
 * the list cache (cache_list.h). The front end has authorized the
 * listing (its prefix against the client key's grant, http_authz.c)
 * before this handler runs.
 *
 * A listing the cache keeps is answered from it (x-bucketcache: hit),
 * zero-copy, the entry held until the response is sent. Otherwise it is
 * relayed as the proxy relays it (x-bucketcache: miss), the answer
 * streamed to the client as it comes and copied on the way (up to the
 * largest answer the cache keeps); a whole 200 answer is then kept. A
 * listing the cache cannot take (another parameter or header, a body),
 * or whose bucket and prefix it does not cache, is handed to the proxy
 * handler unchanged.
 *
 * Threads: handler ops and the content reader run on MHD workers; the
 * exchange wakes the connection through bc_http_resume_cb.
 */
#include <stdlib.h>
#include <string.h>

#include "cache/cache_list.h"
#include "http/http_proxy.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "stats/stats.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define READER_BLOCK (64 * 1024)

typedef struct list_s {
	bc_list_key_t          k;
	const bc_list_entry_t *hit;      /* a reference; NULL: a miss */
	bc_exchange_t         *x;
	bool                   body_ended;
	int                    status;
	const bc_kvlist_t     *uh;       /* the origin's headers (x's) */
	uint64_t               gen;      /* bc_cache_list_gen at the ask */
	uint64_t               size;     /* Content-Length, or unknown */
	uint64_t               read;     /* body bytes read so far */
	bc_buf_t               capture;  /* the answer, while it fits */
	bool                   overflow;
} list_t;

static bool
has_body(const bc_http_req_t *r)
{
	return (r->content_length != UINT64_MAX && r->content_length > 0) ||
	    bc_kv_get(&r->s3.headers, "Transfer-Encoding") != NULL;
}

static bc_s3err_t
list_start(bc_http_req_t *r)
{
	bc_cache_list_t *lc = r->srv->lists;
	bc_relay_t rl;
	bc_s3err_t e = BC_S3E_NONE;
	list_t *l;
	int rv;

	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return BC_S3E_InternalError;
	rv = has_body(r) ? BC_ENOTSUP : bc_cache_list_key(lc, &r->s3,
	    r->upstream_unsigned, &l->k);
	if (rv < 0) {
		free(l);
		if (rv == BC_ENOTSUP)
			BC_STATS_INC(list_cache_bypass);
		r->handler = &bc_handler_proxy;   /* as any other call */
		return r->handler->start(r);
	}
	r->hdata = l;
	l->hit = bc_cache_list_get(lc, &l->k);
	if (l->hit != NULL) {
		BC_STATS_INC(list_cache_hits);
		return BC_S3E_NONE;
	}
	BC_STATS_INC(list_cache_misses);
	bc_buf_init(&l->capture, bc_cache_list_max_entry(lc));
	l->gen = bc_cache_list_gen(lc);
	bc_proxy_relay_init(r, &rl);
	l->x = bc_origin_relay(r->srv->origin, &rl, &e);
	return l->x != NULL ? BC_S3E_NONE : e;
}

static bc_s3err_t
list_body(bc_http_req_t *r, const char *data, size_t *len)
{
	(void)r;
	(void)data;
	*len = 0;   /* none: has_body went to the proxy */
	return BC_S3E_NONE;
}

/* Frees a hit's reference with its response (MHD's free callback). */
typedef struct hold_s {
	bc_cache_list_t       *lc;
	const bc_list_entry_t *e;
} hold_t;

static void
hold_free(void *arg)
{
	hold_t *h = arg;

	bc_cache_list_release(h->lc, h->e);
	free(h);
}

static bc_s3err_t
answer_hit(bc_http_req_t *r, list_t *l)
{
	struct MHD_Response *resp;
	hold_t *h = malloc(sizeof(*h));

	if (h == NULL)
		return BC_S3E_InternalError;
	h->lc = r->srv->lists;
	h->e = l->hit;
	resp = MHD_create_response_from_buffer_with_free_callback_cls(
	    l->hit->len, (void *)l->hit->body, hold_free, h);
	if (resp == NULL) {
		free(h);
		return BC_S3E_InternalError;
	}
	l->hit = NULL;   /* the response holds it now */
	bc_proxy_copy_headers(resp, &h->e->headers);
	MHD_add_response_header(resp, "x-bucketcache", "hit");
	r->bytes_out = h->e->len;
	return bc_http_respond(r, 200, resp) < 0 ? BC_S3E_InternalError :
	    BC_S3E_NONE;
}

/* The end of a miss's answer: a whole 200 is kept. */
static void
keep(bc_http_req_t *r, list_t *l)
{
	if (l->status != 200 || l->overflow)
		return;
	(void)bc_cache_list_put(r->srv->lists, &l->k, r->s3.bucket, l->gen,
	    l->uh, l->capture.data != NULL ? l->capture.data : "",
	    l->capture.len);
	l->overflow = true;   /* once */
}

static ssize_t
list_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	bc_http_req_t *r = cls;
	list_t *l = r->hdata;
	ssize_t n = bc_exchange_read(l->x, buf, max);

	(void)pos;
	if (n > 0) {
		if (!l->overflow && bc_buf_append(&l->capture, buf,
		    (size_t)n) < 0)
			l->overflow = true;   /* too big to keep */
		l->read += (uint64_t)n;
		/* MHD asks no more once Content-Length bytes went */
		if (l->size != MHD_SIZE_UNKNOWN && l->read >= l->size)
			keep(r, l);
		return n;
	}
	if (n == 0) {
		keep(r, l);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (n == BC_EAGAIN) {
		bc_http_wait(r);
		return 0;
	}
	BC_WARN("%s %s: origin failed mid-body: %s", r->s3.method,
	    r->raw_uri, bc_strerror((int)n));
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static uint64_t
header_u64(const bc_kvlist_t *h, const char *name)
{
	uint64_t n;

	return bc_u64_parse_str(bc_kv_get(h, name), &n) ? n :
	    MHD_SIZE_UNKNOWN;
}

static bc_s3err_t
list_finish(bc_http_req_t *r)
{
	list_t *l = r->hdata;
	struct MHD_Response *resp;
	bc_s3err_t e = BC_S3E_NONE;
	uint64_t size;
	int rv;

	if (l->hit != NULL)
		return answer_hit(r, l);
	if (!l->body_ended) {
		rv = bc_exchange_write_end(l->x, &e);
		if (rv == BC_EAGAIN) {
			bc_http_wait(r);
			return BC_S3E_NONE;
		}
		if (rv < 0)
			return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
		l->body_ended = true;
	}
	rv = bc_exchange_headers(l->x, &l->status, &l->uh);
	if (rv == BC_EAGAIN) {
		bc_http_wait(r);
		return BC_S3E_NONE;
	}
	if (rv == BC_ETIMEDOUT)
		return BC_S3E_GatewayTimeout;
	if (rv < 0)
		return BC_S3E_BadGateway;
	size = l->size = header_u64(l->uh, "Content-Length");
	if (l->status != 200 || (size != MHD_SIZE_UNKNOWN &&
	    size > bc_cache_list_max_entry(r->srv->lists)))
		l->overflow = true;   /* nothing to keep */
	r->bytes_out = size != MHD_SIZE_UNKNOWN ? size : 0;
	resp = MHD_create_response_from_callback(size, READER_BLOCK,
	    list_reader, r, NULL);
	if (resp == NULL)
		return BC_S3E_InternalError;
	bc_proxy_copy_headers(resp, l->uh);
	MHD_add_response_header(resp, "x-bucketcache", "miss");
	if (bc_http_respond(r, (unsigned)l->status, resp) < 0)
		return BC_S3E_InternalError;
	return BC_S3E_NONE;
}

static void
list_done(bc_http_req_t *r, bool ok)
{
	list_t *l = r->hdata;

	(void)ok;
	if (l == NULL)
		return;
	bc_cache_list_release(r->srv->lists, l->hit);
	bc_exchange_release(l->x);
	bc_buf_fini(&l->capture);
	bc_cache_list_key_fini(&l->k);
	free(l);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_list = {
	.name = "list",
	.start = list_start,
	.body = list_body,
	.finish = list_finish,
	.done = list_done,
};
