/*
 * http_delete.c — bc_handler_delete: DeleteObjects signed by a client key
 * limited to prefixes of the bucket (http_authz.h), forwarded to the
 * upstream with only the keys the client key may delete.
 *
 * The body (a <Delete>, at most MAX_BODY bytes; an aws-chunked one is
 * verified and decoded first) is read whole and checked against what the
 * client signed (its payload hash, Content-MD5) before anything is sent.
 * The <Object>s of keys outside the allow list are cut from it
 * (bc_s3_xml_filter_delete keeps everything else, VersionIds included),
 * and the rest goes upstream with a Content-MD5 and payload hash of its
 * own. S3's answer, a <DeleteResult>, is collected and the refused keys
 * are added to it as <Error>s with code AccessDenied, as S3 reports keys
 * a policy denies. With no key left, the gateway answers that result
 * itself and sends nothing. Cached copies of the keys sent are dropped
 * before the client hears back.
 *
 * Threads: handler ops on MHD workers; the exchange wakes the connection
 * through bc_http_resume_cb.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/cache.h"
#include "http/http_authz.h"
#include "http/http_proxy.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_xml.h"
#include "upstream/upstream.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_log.h"

#define MAX_BODY      (2 * 1024 * 1024)   /* 1000 keys of 1 KiB, escaped */
#define MAX_RESULT    (8 * 1024 * 1024)
#define MAX_AWS_CHUNK (2 * 1024 * 1024)

#define XML_RESULT_EMPTY "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" \
	"<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" \
	"</DeleteResult>"

typedef enum stage_e { READING, SENDING, ANSWER, COLLECTING } stage_t;

typedef struct delreq_s {
	stage_t          stage;
	bc_awschunked_t *chunked;    /* an aws-chunked body is decoded here */
	bc_buf_t         body;       /* the client's <Delete> */
	bc_buf_t         out;        /* what goes upstream */
	char           **refused;
	size_t           nrefused;
	size_t           sent;       /* bytes of out written upstream */
	bc_exchange_t   *x;
	bc_buf_t         result;     /* the upstream's answer */
	int              status;
	const bc_kvlist_t *uh;       /* its headers (in x) */
} delreq_t;

/* Headers that described the client's body, not the one sent. */
static const char *const body_headers[] = {
	"Content-MD5", "Content-Encoding", "x-amz-decoded-content-length",
	"x-amz-trailer", "x-amz-sdk-checksum-algorithm",
	"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
	"x-amz-checksum-crc64nvme", "x-amz-checksum-sha1",
	"x-amz-checksum-sha256", NULL
};

/* A key under the allow list, without a "." or ".." segment (an
 * upstream that normalises paths would delete another key). */
static bool
key_allowed(void *arg, const char *key)
{
	const bc_http_req_t *r = arg;

	return !bc_s3_key_has_dot_segment(key) &&
	    bc_config_key_allows(r->client_key, r->s3.bucket, key);
}

static bc_s3err_t
del_start(bc_http_req_t *r)
{
	delreq_t *d = calloc(1, sizeof(*d));
	bc_s3err_t e;

	if (d == NULL)
		return BC_S3E_InternalError;
	r->hdata = d;
	bc_buf_init(&d->body, MAX_BODY);
	bc_buf_init(&d->out, MAX_BODY);
	bc_buf_init(&d->result, MAX_RESULT);
	if (r->auth.streaming) {
		/* any of the three modes, decoded (checksum trailer checked) */
		e = bc_awschunked_from_headers(&r->s3.headers,
		    r->auth.stream_mode, &r->auth.v4, false, NULL,
		    MAX_AWS_CHUNK, &d->chunked);
		if (e != BC_S3E_NONE)
			return e;
	}
	return BC_S3E_NONE;
}

/* Moves decoded aws-chunked output into the body. */
static bc_s3err_t
drain_decoded(delreq_t *d)
{
	const char *p;
	size_t n;

	while ((n = bc_awschunked_output(d->chunked, &p)) > 0) {
		if (bc_buf_append(&d->body, p, n) < 0)
			return BC_S3E_MalformedXML;   /* over MAX_BODY */
		bc_awschunked_consume(d->chunked, n);
	}
	return BC_S3E_NONE;
}

static bc_s3err_t
del_body(bc_http_req_t *r, const char *data, size_t *len)
{
	delreq_t *d = r->hdata;
	bc_s3err_t e = BC_S3E_NONE;
	ssize_t n;

	if (d->chunked == NULL) {
		if (bc_buf_append(&d->body, data, *len) < 0)
			return BC_S3E_MalformedXML;
		*len = 0;
		return BC_S3E_NONE;
	}
	while (*len > 0) {
		e = drain_decoded(d);
		if (e != BC_S3E_NONE)
			return e;
		n = bc_awschunked_feed(d->chunked, data, *len, &e);
		if (n < 0)
			return e;
		data += n;
		*len -= (size_t)n;
	}
	return drain_decoded(d);
}

/* The body against what the client signed: its payload hash (SigV4 with
 * a hex hash), Content-MD5 and x-amz-checksum-* header (a checksum
 * trailer was checked by the decoder). The upstream checked those when
 * the body went as it came; a changed one is checked here. */
static bc_s3err_t
check_body(bc_http_req_t *r, delreq_t *d)
{
	const char *cmd5 = bc_kv_get(&r->s3.headers, "Content-MD5");
	const char *hash = r->auth.payload_hash;
	const char *cv;
	bc_checksum_alg_t alg;
	uint8_t md5[BC_MD5_LEN];
	char hex[65], b64[BC_CKSUM_B64_MAX];
	bc_s3err_t e;

	if (d->chunked != NULL) {
		e = bc_awschunked_finish(d->chunked);
		if (e != BC_S3E_NONE)
			return e;
	} else if (r->content_length != UINT64_MAX &&
	    d->body.len != r->content_length) {
		return BC_S3E_IncompleteBody;
	}
	if (r->auth.kind == BC_S3AUTH_V4 && strlen(hash) == 64) {
		bc_sha256_hex(bc_buf_str(&d->body), d->body.len, hex);
		if (strcasecmp(hex, hash) != 0)
			return BC_S3E_XAmzContentSHA256Mismatch;
	}
	if (cmd5 != NULL) {
		bc_md5(bc_buf_str(&d->body), d->body.len, md5);
		if (bc_base64(md5, sizeof(md5), b64, sizeof(b64)) < 0 ||
		    strcmp(b64, cmd5) != 0)
			return BC_S3E_BadDigest;
	}
	e = bc_checksum_from_headers(&r->s3.headers, &alg, &cv);
	if (e != BC_S3E_NONE)
		return e;
	if (alg != BC_CKSUM_NONE) {
		if (bc_checksum_b64(alg, bc_buf_str(&d->body), d->body.len,
		    b64) < 0)
			return BC_S3E_InternalError;
		if (strcmp(b64, cv) != 0)
			return BC_S3E_BadDigest;
	}
	return BC_S3E_NONE;
}

/* Answers xml (the upstream's result, or an empty one) with an error
 * for each of the first n refused keys, and the upstream's status and
 * headers when there are some. */
static bc_s3err_t
respond_result(bc_http_req_t *r, delreq_t *d, const char *xml, size_t len,
    size_t n)
{
	bc_buf_t body = BC_BUF_INIT;
	struct MHD_Response *resp;

	if (bc_s3_xml_delete_result_errors(xml, len, d->refused, n,
	    BC_S3E_AccessDenied, &body) < 0) {
		bc_buf_fini(&body);
		return BC_S3E_InternalError;
	}
	r->bytes_out = body.len;   /* steal empties body */
	resp = MHD_create_response_from_buffer(r->bytes_out,
	    bc_buf_steal(&body), MHD_RESPMEM_MUST_FREE);
	if (resp == NULL)
		return BC_S3E_InternalError;
	if (d->uh != NULL)
		bc_proxy_copy_headers(resp, d->uh);
	else
		MHD_add_response_header(resp, "Content-Type",
		    "application/xml");
	return bc_http_respond(r, (unsigned)(d->uh != NULL ? d->status : 200),
	    resp) < 0 ? BC_S3E_InternalError : BC_S3E_NONE;
}

/* Filters the body and starts the exchange (or answers at once). */
static bc_s3err_t
send_filtered(bc_http_req_t *r, delreq_t *d)
{
	bc_kvlist_t add = BC_KVLIST_INIT;
	uint8_t md5[BC_MD5_LEN];
	char hash[65], b64[32];
	bc_relay_t rl;
	size_t kept;
	bc_s3err_t e;

	e = check_body(r, d);
	if (e != BC_S3E_NONE)
		return e;
	e = bc_s3_xml_filter_delete(bc_buf_str(&d->body), d->body.len,
	    key_allowed, r, &d->out, &d->refused, &d->nrefused, &kept);
	if (e != BC_S3E_NONE)
		return e;
	if (kept == 0)
		return respond_result(r, d, XML_RESULT_EMPTY,
		    strlen(XML_RESULT_EMPTY), d->nrefused);
	bc_sha256_hex(d->out.data, d->out.len, hash);
	bc_md5(d->out.data, d->out.len, md5);
	e = BC_S3E_InternalError;
	if (bc_base64(md5, sizeof(md5), b64, sizeof(b64)) < 0 ||
	    bc_kv_add(&add, "Content-MD5", b64) < 0)
		goto out;
	bc_proxy_relay_init(r, &rl);
	rl.body_sha256 = hash;
	rl.add_headers = &add;
	rl.drop_headers = body_headers;
	rl.content_length = d->out.len;
	rl.chunked_te = false;
	d->x = bc_origin_relay(r->srv->origin, &rl, &e);
	if (d->x != NULL)
		e = BC_S3E_NONE;
	d->stage = SENDING;
out:
	bc_kv_fini(&add);
	return e;
}

/* Drops the cached copies of the keys sent upstream. */
static void
invalidate_sent(bc_http_req_t *r, delreq_t *d)
{
	char **keys = NULL;
	size_t n = 0;
	bool quiet;

	if (r->srv->cache == NULL)
		return;
	if (bc_s3_xml_parse_delete(bc_buf_str(&d->out), d->out.len, &keys, &n,
	    &quiet) != BC_S3E_NONE) {
		bc_cache_invalidate(r->srv->cache, r->s3.bucket, NULL, "");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		bc_cache_invalidate(r->srv->cache, r->s3.bucket, keys[i], NULL);
		free(keys[i]);
	}
	free(keys);
}

static bc_s3err_t
del_finish(bc_http_req_t *r)
{
	delreq_t *d = r->hdata;
	char buf[16384];
	bc_s3err_t e = BC_S3E_NONE;
	ssize_t n;
	int rv;

	switch (d->stage) {
	case READING:
		return send_filtered(r, d);
	case SENDING:
		while (d->sent < d->out.len) {
			n = bc_exchange_write(d->x, d->out.data + d->sent,
			    d->out.len - d->sent, &e);
			if (n < 0)
				break;     /* answered already */
			if (n == 0) {
				bc_http_wait(r);
				return BC_S3E_NONE;
			}
			d->sent += (size_t)n;
		}
		rv = bc_exchange_write_end(d->x, &e);
		if (rv == BC_EAGAIN) {
			bc_http_wait(r);
			return BC_S3E_NONE;
		}
		if (rv < 0)
			return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
		d->stage = ANSWER;
		/* fall through */
	case ANSWER:
		rv = bc_exchange_headers(d->x, &d->status, &d->uh);
		if (rv == BC_EAGAIN) {
			bc_http_wait(r);
			return BC_S3E_NONE;
		}
		invalidate_sent(r, d);   /* whatever the answer */
		if (rv == BC_ETIMEDOUT)
			return BC_S3E_GatewayTimeout;
		if (rv < 0)
			return BC_S3E_BadGateway;
		d->stage = COLLECTING;
		/* fall through */
	case COLLECTING:
		for (;;) {
			n = bc_exchange_read(d->x, buf, sizeof(buf));
			if (n == BC_EAGAIN) {
				bc_http_wait(r);
				return BC_S3E_NONE;
			}
			if (n < 0)
				return BC_S3E_BadGateway;
			if (n == 0)
				break;
			if (bc_buf_append(&d->result, buf, (size_t)n) < 0)
				return BC_S3E_BadGateway;   /* over MAX_RESULT */
		}
		/* an S3 error document is passed on as it came */
		return respond_result(r, d, bc_buf_str(&d->result),
		    d->result.len, d->status == 200 ? d->nrefused : 0);
	}
	return BC_S3E_InternalError;
}

static void
del_done(bc_http_req_t *r, bool ok)
{
	delreq_t *d = r->hdata;

	if (d == NULL)
		return;
	bc_exchange_release(d->x);
	bc_awschunked_free(d->chunked);
	for (size_t i = 0; i < d->nrefused; i++)
		free(d->refused[i]);
	free(d->refused);
	bc_buf_fini(&d->body);
	bc_buf_fini(&d->out);
	bc_buf_fini(&d->result);
	free(d);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_delete = {
	.name = "delete",
	.start = del_start,
	.body = del_body,
	.finish = del_finish,
	.done = del_done,
};
