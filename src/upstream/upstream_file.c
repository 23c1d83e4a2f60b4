/*
 * upstream_file.c — the file origin (upstream_file.h): a local directory
 * behind the origin interface (upstream.h). This file holds the origin,
 * its exchanges, request bodies and answers; the operations live in
 * upstream_file_store.c, _list.c and _mpu.c (upstream_file_int.h).
 *
 * A relay is synchronous, on the caller's thread: relay() checks the
 * bucket and key, opens the bucket directory and, for uploads, a temp
 * file; write() streams the body into it (through an aws-chunked decoder
 * when the client sent one, hashing as it goes); write_end() checks the
 * body, does the operation and makes the answer; release() closes what is
 * open and removes a temp file that was not committed.
 *
 * A fetch is the GetObject / HeadObject of the same code, its request
 * built from bc_fetch_t. Pull mode answers in fetch(). Push mode queues
 * the work on the loop (bc_loop_call): it answers there, calls on_headers,
 * reads the body into the sink or collects it, calls on_data and on_done.
 *
 * Push exchanges are refcounted (the starter's reference and the queued
 * call's). A queued exchange sits on the origin's queue (o->mu) until the
 * loop runs it, cancel_all() ends it or release() takes it off. x->mu
 * guards released/running: callbacks run only while running is set by the
 * loop thread and released is clear; release() from another thread waits
 * until running clears, so no callback fires after it returns. Lock order:
 * never o->mu and x->mu together.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_request.h"
#include "upstream/upstream.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_file_int.h"
#include "loop/loop.h"
#include "util/util_assert.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"
#include "util/util_time.h"

#define DELETE_XML_MAX   (1u << 20)
#define COMPLETE_XML_MAX (4u << 20)
#define DISCARD_MAX      (1u << 20)      /* bodies of ops that take none */
#define MAX_AWS_CHUNK    (16u << 20)
#define PUSH_BLOCK       (1u << 20)      /* body bytes per on_data */

typedef struct fx_s fx_t;

typedef struct file_origin_s {
	bc_origin_t     base;       /* first: the ops see this */
	int             root_fd;
	bc_loop_t      *loop;       /* push fetches; NULL: refused */
	pthread_mutex_t mu;         /* guards queue and every x->queued */
	fx_t           *queue;      /* push fetches the loop has not run */
} file_origin_t;

struct fx_s {
	bc_exchange_t   base;       /* first */
	file_origin_t  *o;
	bc_file_req_t   r;          /* the request, and its answer */
	bc_file_ctx_t   c;
	bc_s3_req_t     own;        /* a fetch's request */
	bc_s3_auth_t    own_auth;   /* a fetch's: anonymous */
	bool            is_fetch;
	bool            head;       /* the answer carries no body */
	bool            push;
	bool            ended;      /* write_end went through */
	uint64_t        pos;        /* body bytes read */
	uint64_t        t0, t1;     /* start, end of the body (mono ns) */
	/* guarded by mu */
	bool            answered;   /* headers() has the answer */
	bool            body_done;
	int             err;        /* 0, or why the exchange failed */
	bc_s3err_t      body_err;   /* a request body that failed */
	/* push mode */
	bc_exchange_headers_fn on_headers;
	bc_exchange_data_fn    on_data;
	bc_exchange_done_fn    on_done;
	void           *arg;
	size_t          collect_max;
	uint8_t        *sink;
	size_t          sink_cap;
	uint8_t        *collected;
	size_t          collected_len;
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	atomic_int      refs;
	bool            released;
	bool            running;    /* the loop thread runs its callbacks */
	pthread_t       runner;
	bool            queued;     /* on o->queue (o->mu) */
	fx_t           *prev, *next;
};

static const bc_s3_auth_t anonymous_auth;

/* ---- answers ----------------------------------------------------------- */

static void
ans_init(bc_file_ans_t *a)
{
	memset(a, 0, sizeof(*a));
	a->fd = -1;
}

static void
ans_fini(bc_file_ans_t *a)
{
	bc_kv_fini(&a->h);
	bc_buf_fini(&a->body);
	bc_file_close(&a->fd);
}

/* Drops whatever answer was begun. */
static void
ans_reset(bc_file_req_t *r)
{
	ans_fini(&r->ans);
	ans_init(&r->ans);
}

void
bc_file_answer_header(bc_file_req_t *r, const char *name, const char *value)
{
	if (strpbrk(value, "\r\n") != NULL)
		return;
	if (bc_kv_add(&r->ans.h, name, value) < 0)
		r->ans.oom = true;
}

void
bc_file_answer_etag(bc_file_req_t *r, const char *etag)
{
	char q[BC_FILE_ETAG_LEN + 2];

	snprintf(q, sizeof(q), "\"%s\"", etag);
	bc_file_answer_header(r, "ETag", q);
}

bc_s3err_t
bc_file_answer_empty(bc_file_req_t *r, int status, const char *hname,
    const char *hval)
{
	ans_reset(r);
	r->ans.status = status;
	if (hname != NULL)
		bc_file_answer_header(r, hname, hval);
	return r->ans.oom ? BC_S3E_InternalError : BC_S3E_NONE;
}

bc_s3err_t
bc_file_answer_xml(bc_file_req_t *r, bc_buf_t *body)
{
	ans_reset(r);
	r->ans.status = 200;
	r->ans.body = *body;
	memset(body, 0, sizeof(*body));
	bc_file_answer_header(r, "Content-Type", "application/xml");
	return r->ans.oom ? BC_S3E_InternalError : BC_S3E_NONE;
}

/* S3's <Error> document for e (msg: NULL for the table's), with one
 * extra header when hname is not NULL. */
static bc_s3err_t
error_doc(bc_file_req_t *r, bc_s3err_t e, const char *msg,
    const char *hname, const char *hval)
{
	const char *res = r->s3->path != NULL ? r->s3->path : "";

	if (e == BC_S3E_NotModified)   /* 304 carries no body */
		return bc_file_answer_empty(r, 304, hname, hval);
	ans_reset(r);
	if (bc_s3err_xml(&r->ans.body, e, msg, res, r->s3->request_id) < 0) {
		ans_reset(r);
		return e;
	}
	r->ans.status = bc_s3err_status(e);
	if (r->ans.status >= 500)
		BC_DEBUG("file origin: %s %s -> %d %s", r->s3->method, res,
		    r->ans.status, bc_s3err_code(e));
	bc_file_answer_header(r, "Content-Type", "application/xml");
	if (hname != NULL)
		bc_file_answer_header(r, hname, hval);
	return r->ans.oom ? e : BC_S3E_NONE;
}

bc_s3err_t
bc_file_fail(bc_file_req_t *r, bc_s3err_t e, const char *msg)
{
	return error_doc(r, e, msg, NULL, NULL);
}

bc_s3err_t
bc_file_fail_hdr(bc_file_req_t *r, bc_s3err_t e, const char *hname,
    const char *hval)
{
	return error_doc(r, e, NULL, hname, hval);
}

/* ---- request bodies ---------------------------------------------------- */

static bc_s3err_t
sink_data(bc_file_ctx_t *c, const char *p, size_t n)
{
	int rv;

	if (n > c->limit - c->n)
		return c->too_large;
	c->n += n;
	if (c->md5 != NULL)
		bc_md5_update(c->md5, p, n);
	if (c->ck.alg != BC_CKSUM_NONE)
		bc_checksum_update(&c->ck, p, n);
	switch (c->sink) {
	case BC_FILE_SINK_FILE:
		rv = bc_file_write_all(c->fd, p, n);
		if (rv < 0) {
			BC_WARN("file backend: write: %s", strerror(-rv));
			return bc_file_errno_s3(rv, BC_S3E_InternalError);
		}
		return BC_S3E_NONE;
	case BC_FILE_SINK_XML:
		return bc_buf_append(&c->xml, p, n) < 0 ?
		    BC_S3E_InternalError : BC_S3E_NONE;
	default:
		return BC_S3E_NONE;
	}
}

/* Takes what the aws-chunked decoder has ready into the sink. */
static bc_s3err_t
drain_verified(bc_file_ctx_t *c)
{
	const char *p;
	size_t n;
	bc_s3err_t e;

	while ((n = bc_awschunked_output(c->verify, &p)) > 0) {
		e = sink_data(c, p, n);
		if (e != BC_S3E_NONE)
			return e;
		bc_awschunked_consume(c->verify, n);
	}
	return BC_S3E_NONE;
}

/* Takes n body bytes at data. */
static bc_s3err_t
body_feed(bc_file_ctx_t *c, const char *data, size_t n)
{
	if (c->sha != NULL)
		bc_sha256_update(c->sha, data, n);
	if (c->verify != NULL) {
		while (n > 0) {
			bc_s3err_t e = BC_S3E_NONE;
			ssize_t took = bc_awschunked_feed(c->verify, data, n,
			    &e);
			const char *p;
			size_t k;
			bool moved = took > 0;

			if (took < 0)
				return e != BC_S3E_NONE ? e :
				    BC_S3E_IncompleteBody;
			data += took;
			n -= (size_t)took;
			while ((k = bc_awschunked_output(c->verify, &p)) > 0) {
				e = sink_data(c, p, k);
				if (e != BC_S3E_NONE)
					return e;
				bc_awschunked_consume(c->verify, k);
				moved = true;
			}
			if (!moved)
				return BC_S3E_InternalError;
		}
		return BC_S3E_NONE;
	}
	return sink_data(c, data, n);
}

/* The checksum of the body: the one an x-amz-checksum-* header sent must
 * match (BadDigest); the trailer's was checked by the decoder. Leaves
 * the value to keep in ck_alg / ck_value. */
static bc_s3err_t
check_checksum(bc_file_ctx_t *c)
{
	const char *tv = c->verify != NULL ?
	    bc_awschunked_checksum(c->verify) : NULL;

	if (c->ck.alg != BC_CKSUM_NONE) {
		c->ck_alg = c->ck.alg;
		bc_checksum_final(&c->ck, c->ck_value);
		bc_checksum_fini(&c->ck);
		if (c->ck_want != NULL && strcmp(c->ck_value, c->ck_want) != 0)
			return BC_S3E_BadDigest;
	}
	if (tv != NULL) {
		c->ck_alg = c->trailer_alg;
		snprintf(c->ck_value, sizeof(c->ck_value), "%s", tv);
	}
	return BC_S3E_NONE;
}

/* Checks the whole body against its length, the V4 payload hash,
 * Content-MD5 and a checksum (check_checksum); keeps its MD5 in
 * c->body_md5. */
static bc_s3err_t
check_body(const bc_file_req_t *r, bc_file_ctx_t *c)
{
	const char *cmd5 = bc_kv_get(&r->s3->headers, "Content-MD5");
	bc_s3err_t e;

	if (c->verify != NULL) {
		e = drain_verified(c);
		if (e == BC_S3E_NONE)
			e = bc_awschunked_finish(c->verify);
		if (e != BC_S3E_NONE)
			return e;
	}
	if (c->verify == NULL &&
	    r->content_length != UINT64_MAX && c->n != r->content_length)
		return BC_S3E_IncompleteBody;
	if (c->expect != UINT64_MAX && c->n != c->expect)
		return BC_S3E_IncompleteBody;
	if (c->sha != NULL) {
		uint8_t d[BC_SHA256_LEN];
		char hex[65];

		bc_sha256_final(c->sha, d);
		bc_sha256_free(c->sha);
		c->sha = NULL;
		bc_hex(d, sizeof(d), hex);
		if (strcasecmp(hex, r->auth->payload_hash) != 0)
			return BC_S3E_XAmzContentSHA256Mismatch;
	}
	if (c->md5 != NULL) {
		bc_md5_final(c->md5, c->body_md5);
		bc_md5_free(c->md5);
		c->md5 = NULL;
		if (cmd5 != NULL) {
			char b64[32];

			if (bc_base64(c->body_md5, BC_MD5_LEN, b64,
			    sizeof(b64)) < 0 || strcmp(b64, cmd5) != 0)
				return BC_S3E_BadDigest;
		}
	}
	return check_checksum(c);
}

/* ---- operations -------------------------------------------------------- */

static bool
is_object_op(bc_s3op_t op)
{
	switch (op) {
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
	case BC_S3OP_PutObject:
	case BC_S3OP_CopyObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_CreateMultipartUpload:
	case BC_S3OP_UploadPart:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_AbortMultipartUpload:
		return true;
	default:
		return false;
	}
}

static bool
has_checked_body(bc_s3op_t op)
{
	return op == BC_S3OP_PutObject || op == BC_S3OP_UploadPart ||
	    op == BC_S3OP_CompleteMultipartUpload ||
	    op == BC_S3OP_DeleteObjects;
}

static bool
is_location_query(const bc_file_req_t *r)
{
	return r->s3->op == BC_S3OP_BucketSubresource &&
	    strcmp(r->s3->method, "GET") == 0 && r->s3->query.n == 1 &&
	    strcmp(r->s3->query.v[0].name, "location") == 0;
}

/*
 * The checksum the body is hashed with: an x-amz-checksum-* header's on
 * the bodies it describes (PutObject, UploadPart, DeleteObjects; a
 * CompleteMultipartUpload's names the object, not its XML, and is not
 * checked here), to compare; else for a PutObject S3's default, CRC64NVME,
 * to keep. Not when the aws-chunked trailer brings one.
 */
static bc_s3err_t
setup_checksum(const bc_file_req_t *r, bc_file_ctx_t *c)
{
	bc_checksum_alg_t alg = BC_CKSUM_NONE;
	bc_s3op_t op = r->s3->op;
	bc_s3err_t e;

	if (op != BC_S3OP_PutObject && op != BC_S3OP_UploadPart &&
	    op != BC_S3OP_DeleteObjects)
		return BC_S3E_NONE;
	e = bc_checksum_from_headers(&r->s3->headers, &alg, &c->ck_want);
	if (e != BC_S3E_NONE)
		return e;
	if (alg == BC_CKSUM_NONE && op == BC_S3OP_PutObject &&
	    c->trailer_alg == BC_CKSUM_NONE)
		alg = BC_CKSUM_CRC64NVME;
	if (alg != BC_CKSUM_NONE && bc_checksum_init(&c->ck, alg) < 0)
		return BC_S3E_InternalError;
	return BC_S3E_NONE;
}

/* Sets up how the body is read. */
static bc_s3err_t
setup_body(const bc_file_req_t *r, bc_file_ctx_t *c)
{
	const char *sha = bc_kv_get(&r->s3->headers, "x-amz-content-sha256");
	const char *dlen = bc_kv_get(&r->s3->headers,
	    "x-amz-decoded-content-length");
	const char *cmd5 = bc_kv_get(&r->s3->headers, "Content-MD5");
	bc_s3op_t op = r->s3->op;
	bc_s3err_t e;

	c->expect = UINT64_MAX;
	if (r->auth->streaming) {
		/* signed chunks, or the unsigned trailer mode: decoded and
		 * verified (chunk and trailer signatures, checksum trailer,
		 * the declared length, required) */
		e = bc_awschunked_from_headers(&r->s3->headers,
		    r->auth->stream_mode, &r->auth->v4, false, NULL,
		    MAX_AWS_CHUNK, &c->verify);
		if (e != BC_S3E_NONE)
			return e;
		if (bc_awschunked_parse_decoded_len(dlen, &c->expect) !=
		    BC_S3E_NONE)
			return BC_S3E_InternalError;   /* parsed just above */
		if (r->auth->stream_mode != BC_AWSCHUNKED_SIGNED &&
		    bc_kv_get(&r->s3->headers, "x-amz-trailer") != NULL)
			c->trailer_alg = bc_checksum_from_header(bc_kv_get(
			    &r->s3->headers, "x-amz-trailer"));
	} else if (r->auth->kind == BC_S3AUTH_NONE && sha != NULL &&
	    strncmp(sha, "STREAMING-", 10) == 0) {
		/* anonymous, in a mode authentication does not take up (the
		 * signed ones with no key, SigV4a's): framing only, the
		 * decoded length optional */
		bc_awschunked_opts_t o = { .mode = BC_AWSCHUNKED_FRAMING };

		if (dlen != NULL && bc_awschunked_parse_decoded_len(dlen,
		    &c->expect) != BC_S3E_NONE)
			return BC_S3E_InvalidArgument;
		c->verify = bc_awschunked_new_opts(&o);
		if (c->verify == NULL)
			return BC_S3E_InternalError;
		if (dlen != NULL)
			bc_awschunked_set_decoded_len(c->verify, c->expect);
	} else {
		c->expect = r->content_length;
	}
	if (r->auth->kind == BC_S3AUTH_V4 &&
	    strlen(r->auth->payload_hash) == 64) {
		c->sha = bc_sha256_new();
		if (c->sha == NULL)
			return BC_S3E_InternalError;
	}
	if (cmd5 != NULL) {
		size_t n = strlen(cmd5);

		if (n != 24 || cmd5[22] != '=' || cmd5[23] != '=' ||
		    strspn(cmd5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
		    "rstuvwxyz0123456789+/") != 22)
			return BC_S3E_InvalidDigest;
	}
	switch (op) {
	case BC_S3OP_PutObject:
	case BC_S3OP_UploadPart:
		c->sink = BC_FILE_SINK_FILE;
		c->limit = BC_FILE_MAX_OBJECT;
		c->too_large = BC_S3E_EntityTooLarge;
		break;
	case BC_S3OP_DeleteObjects:
		c->sink = BC_FILE_SINK_XML;
		c->limit = DELETE_XML_MAX;
		c->too_large = BC_S3E_MalformedXML;
		break;
	case BC_S3OP_CompleteMultipartUpload:
		c->sink = BC_FILE_SINK_XML;
		c->limit = COMPLETE_XML_MAX;
		c->too_large = BC_S3E_MalformedXML;
		break;
	default:
		c->sink = BC_FILE_SINK_DISCARD;
		c->limit = DISCARD_MAX;
		c->too_large = BC_S3E_InvalidRequest;
		break;
	}
	if (c->expect != UINT64_MAX && c->expect > c->limit)
		return c->too_large;
	if (c->sink != BC_FILE_SINK_DISCARD) {
		c->md5 = bc_md5_new();
		if (c->md5 == NULL)
			return BC_S3E_InternalError;
	}
	return setup_checksum(r, c);
}

/* What must hold before the body: the operation is one the store does,
 * the bucket (open) and key are valid; an upload's temp file is open. */
static bc_s3err_t
req_start(const bc_file_req_t *r, bc_file_ctx_t *c)
{
	bc_s3op_t op = r->s3->op;
	bc_s3err_t e;

	switch (op) {
	case BC_S3OP_ListBuckets:
		break;
	case BC_S3OP_CreateBucket:
		if (!bc_file_bucket_ok(r->s3->bucket, true))
			return BC_S3E_InvalidBucketName;
		break;
	case BC_S3OP_DeleteBucket:
	case BC_S3OP_HeadBucket:
	case BC_S3OP_ListObjects:
	case BC_S3OP_ListObjectsV2:
	case BC_S3OP_DeleteObjects:
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
	case BC_S3OP_PutObject:
	case BC_S3OP_CopyObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_CreateMultipartUpload:
	case BC_S3OP_UploadPart:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_AbortMultipartUpload:
		break;
	case BC_S3OP_BucketSubresource:
		if (is_location_query(r))
			break;
		return BC_S3E_NotImplemented;
	default:
		return BC_S3E_NotImplemented;
	}
	if (op != BC_S3OP_ListBuckets && op != BC_S3OP_CreateBucket) {
		if (!bc_file_bucket_ok(r->s3->bucket, false))
			return BC_S3E_InvalidBucketName;
		c->bfd = bc_file_open_bucket(r->root_fd, r->s3->bucket);
		if (c->bfd < 0)
			return bc_file_errno_s3(c->bfd, BC_S3E_NoSuchBucket);
	}
	if (is_object_op(op)) {
		size_t kl = strlen(r->s3->key);

		e = bc_file_key_check(r->s3->key);
		if (e == BC_S3E_InvalidArgument && kl > 0 &&
		    r->s3->key[kl - 1] == '/') {
			/* "dir/" is never an object here */
			if (op == BC_S3OP_GetObject || op == BC_S3OP_HeadObject)
				return BC_S3E_NoSuchKey;
			if (op == BC_S3OP_DeleteObject) {
				c->noop = true;
				e = BC_S3E_NONE;
			}
		}
		if (e != BC_S3E_NONE)
			return e;
	}
	e = setup_body(r, c);
	if (e != BC_S3E_NONE)
		return e;
	if (op == BC_S3OP_PutObject || op == BC_S3OP_CopyObject ||
	    op == BC_S3OP_CreateMultipartUpload) {
		e = bc_file_collect_headers(r, &c->hdrs);
		if (e != BC_S3E_NONE)
			return e;
	}
	if (op == BC_S3OP_PutObject)
		return bc_file_tmp_open_bucket(c, "put");
	if (op == BC_S3OP_UploadPart) {
		const char *pn = bc_kv_get_exact(&r->s3->query, "partNumber");
		uint64_t v;
		int dfd;

		if (pn == NULL || !bc_u64_parse_str(pn, &v) || v < 1 ||
		    v > BC_S3_MAX_PARTS)
			return BC_S3E_InvalidArgument;
		c->part = (unsigned)v;
		c->updfd = bc_file_open_upload(r, c, NULL, &e);
		if (c->updfd < 0)
			return e;
		dfd = fcntl(c->updfd, F_DUPFD_CLOEXEC, 0);
		if (dfd < 0)
			return BC_S3E_InternalError;
		return bc_file_tmp_open(c, dfd, "part");
	}
	return BC_S3E_NONE;
}

/* Does the operation (the body, if any, checked): BC_S3E_NONE when it
 * answered, else the error to answer. */
static bc_s3err_t
run_op(bc_file_req_t *r, bc_file_ctx_t *c)
{
	switch (r->s3->op) {
	case BC_S3OP_ListBuckets:
		return bc_file_op_list_buckets(r);
	case BC_S3OP_CreateBucket:
		return bc_file_op_create_bucket(r);
	case BC_S3OP_DeleteBucket:
		return bc_file_op_delete_bucket(r, c);
	case BC_S3OP_HeadBucket:
		return bc_file_op_head_bucket(r);
	case BC_S3OP_BucketSubresource:
		return bc_file_op_bucket_location(r);
	case BC_S3OP_ListObjects:
		return bc_file_op_list_objects(r, c, false);
	case BC_S3OP_ListObjectsV2:
		return bc_file_op_list_objects(r, c, true);
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
		return bc_file_op_get_object(r, c);
	case BC_S3OP_PutObject:
		return bc_file_op_put_object(r, c);
	case BC_S3OP_CopyObject:
		return bc_file_op_copy_object(r, c);
	case BC_S3OP_DeleteObject:
		if (c->noop)
			return bc_file_answer_empty(r, 204, NULL, NULL);
		return bc_file_op_delete_object(r, c);
	case BC_S3OP_DeleteObjects:
		return bc_file_op_delete_objects(r, c);
	case BC_S3OP_CreateMultipartUpload:
		return bc_file_op_create_mpu(r, c);
	case BC_S3OP_UploadPart:
		return bc_file_op_upload_part(r, c);
	case BC_S3OP_CompleteMultipartUpload:
		return bc_file_op_complete_mpu(r, c);
	case BC_S3OP_AbortMultipartUpload:
		return bc_file_op_abort_mpu(r, c);
	default:
		return BC_S3E_NotImplemented;
	}
}

static void
ctx_init(bc_file_ctx_t *c)
{
	memset(c, 0, sizeof(*c));
	c->bfd = c->fd = c->tmpdirfd = c->updfd = -1;
}

/* Closes what the request holds; removes an uncommitted temp file. */
static void
ctx_fini(bc_file_ctx_t *c)
{
	if (c->tmp_live && c->tmpdirfd >= 0)
		unlinkat(c->tmpdirfd, c->tmpname, 0);
	bc_file_close(&c->fd);
	bc_file_close(&c->tmpdirfd);
	bc_file_close(&c->updfd);
	bc_file_close(&c->bfd);
	if (c->md5 != NULL)
		bc_md5_free(c->md5);
	if (c->sha != NULL)
		bc_sha256_free(c->sha);
	bc_checksum_fini(&c->ck);
	bc_awschunked_free(c->verify);
	bc_buf_fini(&c->xml);
	bc_kv_fini(&c->hdrs);
	memset(c, 0, sizeof(*c));
	c->bfd = c->fd = c->tmpdirfd = c->updfd = -1;
}

/* ---- exchanges --------------------------------------------------------- */

static const bc_exchange_ops_t file_exchange_ops;

static fx_t *
fx_new(file_origin_t *o)
{
	fx_t *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return NULL;
	x->base.ops = &file_exchange_ops;
	x->o = o;
	ans_init(&x->r.ans);
	ctx_init(&x->c);
	x->r.root_fd = o->root_fd;
	x->r.content_length = UINT64_MAX;
	x->r.region = "us-east-1";
	x->t0 = bc_mono_ns();
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	atomic_init(&x->refs, 1);
	return x;
}

static void
fx_free(fx_t *x)
{
	ctx_fini(&x->c);
	ans_fini(&x->r.ans);
	if (x->is_fetch)
		bc_s3_req_fini(&x->own);
	free(x->collected);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

static void
fx_unref(fx_t *x)
{
	int left = atomic_fetch_sub_explicit(&x->refs, 1,
	    memory_order_acq_rel) - 1;

	BC_CHECK(left >= 0);
	if (left == 0)
		fx_free(x);
}

/* The operation is done: adds Content-Length (of the body a GET would
 * carry, for HEAD too) and drops a HEAD's body. */
static void
ans_finish(fx_t *x)
{
	bc_file_ans_t *a = &x->r.ans;
	char num[24];

	if (a->status != 204 && a->status != 304) {
		snprintf(num, sizeof(num), "%" PRIu64, a->fd >= 0 ? a->len :
		    (uint64_t)a->body.len);
		bc_file_answer_header(&x->r, "Content-Length", num);
	}
	if (x->head || a->status == 204 || a->status == 304) {
		bc_file_close(&a->fd);
		bc_buf_fini(&a->body);
	}
}

/* Answers the request (its body, if any, taken). Returns 0, BC_EPROTO
 * with *e when the body failed its checks, or BC_ENOMEM (*e
 * InternalError) when no answer could be made. */
static int
answer(fx_t *x, bc_s3err_t *e)
{
	bc_file_req_t *r = &x->r;
	bc_s3err_t se = BC_S3E_NONE;

	*e = BC_S3E_NONE;
	if (x->is_fetch)   /* a relay was started by relay() */
		se = req_start(r, &x->c);
	if (se == BC_S3E_NONE && has_checked_body(r->s3->op)) {
		se = check_body(r, &x->c);
		if (se != BC_S3E_NONE) {
			*e = se;
			return BC_EPROTO;
		}
	}
	if (se == BC_S3E_NONE)
		se = run_op(r, &x->c);
	if (se != BC_S3E_NONE)
		se = bc_file_fail(r, se, NULL);
	if (se != BC_S3E_NONE || r->ans.oom || r->ans.status == 0) {
		ans_reset(r);
		*e = BC_S3E_InternalError;
		return BC_ENOMEM;
	}
	ans_finish(x);
	/* the bucket, upload and temp files are not needed any more */
	ctx_fini(&x->c);
	pthread_mutex_lock(&x->mu);
	x->answered = true;
	if (r->ans.fd < 0 && r->ans.body.len == 0) {
		x->body_done = true;
		x->t1 = bc_mono_ns();
	}
	pthread_mutex_unlock(&x->mu);
	return 0;
}

/* The body was read, or handed over. */
static void
body_end(fx_t *x)
{
	bc_file_close(&x->r.ans.fd);
	pthread_mutex_lock(&x->mu);
	x->body_done = true;
	x->t1 = bc_mono_ns();
	pthread_mutex_unlock(&x->mu);
}

static ssize_t
fx_write(bc_exchange_t *base, const void *p, size_t n, bc_s3err_t *e)
{
	fx_t *x = (fx_t *)base;
	bc_s3err_t be;

	*e = BC_S3E_NONE;
	if (x->body_err != BC_S3E_NONE) {
		*e = x->body_err;
		return BC_EPROTO;
	}
	if (x->is_fetch || x->ended) {
		*e = BC_S3E_InternalError;
		return BC_EINVAL;
	}
	be = body_feed(&x->c, p, n);
	if (be != BC_S3E_NONE) {
		pthread_mutex_lock(&x->mu);
		x->body_err = be;
		x->err = BC_ECANCELED;
		pthread_mutex_unlock(&x->mu);
		*e = be;
		return BC_EPROTO;
	}
	return (ssize_t)n;
}

static int
fx_write_end(bc_exchange_t *base, bc_s3err_t *e)
{
	fx_t *x = (fx_t *)base;
	int rv;

	*e = BC_S3E_NONE;
	if (x->body_err != BC_S3E_NONE) {
		*e = x->body_err;
		return BC_EPROTO;
	}
	if (x->ended || x->is_fetch)
		return 0;
	rv = answer(x, e);
	if (rv < 0) {
		pthread_mutex_lock(&x->mu);
		if (rv == BC_EPROTO)
			x->body_err = *e;
		x->err = rv == BC_EPROTO ? BC_ECANCELED : rv;
		pthread_mutex_unlock(&x->mu);
		return rv;
	}
	x->ended = true;
	return 0;
}

static int
fx_headers(bc_exchange_t *base, int *status, const bc_kvlist_t **h)
{
	fx_t *x = (fx_t *)base;
	int rv;

	pthread_mutex_lock(&x->mu);
	rv = x->answered ? 0 : x->err < 0 ? x->err : BC_EAGAIN;
	pthread_mutex_unlock(&x->mu);
	if (rv == 0) {
		*status = x->r.ans.status;
		*h = &x->r.ans.h;
	}
	return rv;
}

static ssize_t
fx_read(bc_exchange_t *base, void *buf, size_t max)
{
	fx_t *x = (fx_t *)base;
	bc_file_ans_t *a = &x->r.ans;
	bool answered, done;
	int err;
	size_t k;

	pthread_mutex_lock(&x->mu);
	answered = x->answered;
	done = x->body_done;
	err = x->err;
	pthread_mutex_unlock(&x->mu);
	if (!answered)
		return err < 0 ? err : BC_EAGAIN;
	if (done || max == 0 || x->push)
		return 0;
	if (a->fd >= 0) {
		uint64_t left = a->len - x->pos;
		ssize_t n;

		k = left < max ? (size_t)left : max;
		do {
			n = pread(a->fd, buf, k, (off_t)(a->off + x->pos));
		} while (n < 0 && errno == EINTR);
		if (n <= 0) {
			err = n < 0 ? -errno : BC_EIO;   /* EIO: it shrank */
			pthread_mutex_lock(&x->mu);
			x->err = err;
			pthread_mutex_unlock(&x->mu);
			body_end(x);
			return err;
		}
		x->pos += (uint64_t)n;
		if (x->pos == a->len)
			body_end(x);
		return n;
	}
	k = a->body.len - (size_t)x->pos < max ?
	    a->body.len - (size_t)x->pos : max;
	memcpy(buf, a->body.data + x->pos, k);
	x->pos += k;
	if (x->pos == a->body.len)
		body_end(x);
	return (ssize_t)k;
}

static int
fx_body_fd(bc_exchange_t *base, int *fd, uint64_t *off, uint64_t *len)
{
	fx_t *x = (fx_t *)base;
	bc_file_ans_t *a = &x->r.ans;
	bool ok;

	pthread_mutex_lock(&x->mu);
	ok = !x->push && x->answered && !x->body_done && a->fd >= 0 &&
	    x->pos == 0;
	pthread_mutex_unlock(&x->mu);
	if (!ok)
		return BC_ENOTSUP;
	*fd = a->fd;
	*off = a->off;
	*len = a->len;
	a->fd = -1;
	body_end(x);
	return 0;
}

static void
fx_set_sink(bc_exchange_t *base, uint8_t *buf, size_t cap)
{
	fx_t *x = (fx_t *)base;

	x->sink = buf;
	x->sink_cap = cap;
}

static uint8_t *
fx_take_body(bc_exchange_t *base, size_t *len)
{
	fx_t *x = (fx_t *)base;
	uint8_t *p = x->collected;

	*len = p != NULL ? x->collected_len : 0;
	x->collected = NULL;
	x->collected_len = 0;
	return p;
}

static int
fx_error(bc_exchange_t *base)
{
	fx_t *x = (fx_t *)base;
	int rv;

	pthread_mutex_lock(&x->mu);
	rv = x->err < 0 ? x->err : x->body_done ? 0 : BC_EAGAIN;
	pthread_mutex_unlock(&x->mu);
	return rv;
}

static uint64_t
fx_elapsed_us(const bc_exchange_t *base)
{
	fx_t *x = (fx_t *)base;
	uint64_t end;

	pthread_mutex_lock(&x->mu);
	end = x->t1 != 0 ? x->t1 : bc_mono_ns();
	pthread_mutex_unlock(&x->mu);
	return (end - x->t0) / 1000;
}

static void
queue_unlink(file_origin_t *o, fx_t *x)
{
	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		o->queue = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
	x->queued = false;
}

static void
fx_release(bc_exchange_t *base)
{
	fx_t *x = (fx_t *)base;
	file_origin_t *o = x->o;

	if (x->push) {
		pthread_mutex_lock(&x->mu);
		x->released = true;
		while (x->running && !pthread_equal(x->runner, pthread_self()))
			pthread_cond_wait(&x->cv, &x->mu);
		pthread_mutex_unlock(&x->mu);
		pthread_mutex_lock(&o->mu);
		if (x->queued)
			queue_unlink(o, x);
		pthread_mutex_unlock(&o->mu);
	}
	fx_unref(x);
}

static const bc_exchange_ops_t file_exchange_ops = {
	.write = fx_write,
	.write_end = fx_write_end,
	.headers = fx_headers,
	.read = fx_read,
	.body_fd = fx_body_fd,
	.set_sink = fx_set_sink,
	.take_body = fx_take_body,
	.error = fx_error,
	.elapsed_us = fx_elapsed_us,
	.release = fx_release,
};

/* ---- push mode (loop thread) ------------------------------------------- */

/* Claims the callbacks for this thread: false once released. */
static bool
cb_begin(fx_t *x)
{
	bool ok;

	pthread_mutex_lock(&x->mu);
	ok = !x->released;
	if (ok) {
		x->running = true;
		x->runner = pthread_self();
	}
	pthread_mutex_unlock(&x->mu);
	return ok;
}

static void
cb_end(fx_t *x)
{
	pthread_mutex_lock(&x->mu);
	x->running = false;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* false once a callback released x (this thread; others wait in
 * release until cb_end) */
static bool
alive(fx_t *x)
{
	bool ok;

	pthread_mutex_lock(&x->mu);
	ok = !x->released;
	pthread_mutex_unlock(&x->mu);
	return ok;
}

static void
set_outcome(fx_t *x, int err)
{
	pthread_mutex_lock(&x->mu);
	if (err < 0 && x->err == 0)
		x->err = err;
	x->body_done = true;
	if (x->t1 == 0)
		x->t1 = bc_mono_ns();
	pthread_mutex_unlock(&x->mu);
}

/* Copies body bytes from..from+n into dst. Returns 0 or a BC_E* code. */
static int
body_copy(fx_t *x, uint64_t from, uint8_t *dst, size_t n)
{
	bc_file_ans_t *a = &x->r.ans;

	if (a->fd < 0) {
		memcpy(dst, a->body.data + from, n);
		return 0;
	}
	while (n > 0) {
		ssize_t k = pread(a->fd, dst, n, (off_t)(a->off + from));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : BC_EIO;   /* EIO: it shrank */
		dst += k;
		from += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

/* The body into the sink set from on_headers, else collected, with
 * on_data after each block. Returns 0 or why not. */
static int
push_body(fx_t *x)
{
	bc_file_ans_t *a = &x->r.ans;
	uint64_t len = a->fd >= 0 ? a->len : (uint64_t)a->body.len;
	uint64_t got = 0;
	uint8_t *dst;
	int rv = 0;

	if (len == 0)
		return 0;
	if (x->sink != NULL) {
		if (len > x->sink_cap)
			return BC_E2BIG;
		dst = x->sink;
	} else {
		if (len > x->collect_max)
			return BC_E2BIG;
		x->collected = malloc((size_t)len);
		if (x->collected == NULL)
			return BC_ENOMEM;
		dst = x->collected;
	}
	while (got < len && rv == 0) {
		size_t k = len - got < PUSH_BLOCK ? (size_t)(len - got) :
		    PUSH_BLOCK;

		rv = body_copy(x, got, dst + got, k);
		if (rv == 0) {
			got += k;
			if (x->sink == NULL)
				x->collected_len = (size_t)got;
			if (x->on_data != NULL && alive(x))
				x->on_data(x->arg, (size_t)got);
		}
	}
	return rv;
}

static void
push_work(fx_t *x)
{
	bc_s3err_t e;
	int rv = answer(x, &e);

	if (rv == 0 && x->on_headers != NULL && alive(x))
		x->on_headers(&x->base, x->arg, x->r.ans.status,
		    &x->r.ans.h);
	if (rv == 0 && alive(x))
		rv = push_body(x);
	bc_file_close(&x->r.ans.fd);
	set_outcome(x, rv);
	if (alive(x))
		x->on_done(&x->base, x->arg);
}

static void
push_run(bc_loop_t *loop, void *arg)
{
	fx_t *x = arg;
	file_origin_t *o = x->o;
	bool mine;

	(void)loop;
	pthread_mutex_lock(&o->mu);
	mine = x->queued;
	if (mine)
		queue_unlink(o, x);
	pthread_mutex_unlock(&o->mu);
	if (mine && cb_begin(x)) {
		push_work(x);
		cb_end(x);
	}
	fx_unref(x);
}

/* ---- the origin -------------------------------------------------------- */

/* Fills x->own: f as a GetObject / HeadObject with its Range and
 * condition. Returns 0 or BC_ENOMEM. */
static int
fetch_request(fx_t *x, const bc_fetch_t *f)
{
	bc_s3_req_t *q = &x->own;
	const char *bucket = f->bucket != NULL ? f->bucket : "";
	const char *key = f->key != NULL ? f->key : "";
	bc_buf_t path = BC_BUF_INIT;
	char range[64];
	int rv = 0;

	bc_s3_req_init(q);
	snprintf(q->method, sizeof(q->method), "%s", f->head ? "HEAD" :
	    "GET");
	q->op = f->head ? BC_S3OP_HeadObject : BC_S3OP_GetObject;
	q->bucket = strdup(bucket);
	q->key = strdup(key);
	q->raw_query = strdup("");
	if (bc_buf_printf(&path, "/%s/%s", bucket, key) < 0)
		rv = BC_ENOMEM;
	q->path = bc_buf_steal(&path);
	q->raw_path = q->path != NULL ? strdup(q->path) : NULL;
	if (q->bucket == NULL || q->key == NULL || q->raw_query == NULL ||
	    q->path == NULL || q->raw_path == NULL)
		rv = BC_ENOMEM;
	if (rv == 0 && !f->head && f->first != BC_FETCH_WHOLE) {
		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64,
		    f->first, f->last);
		rv = bc_kv_add(&q->headers, "Range", range);
	}
	if (rv == 0 && f->cond != NULL && f->etag != NULL)
		rv = bc_kv_add(&q->headers, f->cond, f->etag);
	return rv < 0 ? BC_ENOMEM : 0;
}

static bc_exchange_t *
file_fetch(bc_origin_t *base, const bc_fetch_t *f)
{
	file_origin_t *o = (file_origin_t *)base;
	fx_t *x = fx_new(o);
	bc_s3err_t e;
	int rv;

	if (x == NULL)
		return NULL;
	x->is_fetch = true;
	x->head = f->head;
	if (fetch_request(x, f) < 0) {
		fx_free(x);
		return NULL;
	}
	x->r.s3 = &x->own;
	x->r.auth = &x->own_auth;
	if (f->on_done == NULL) {
		rv = answer(x, &e);
		if (rv < 0)
			x->err = rv;
		return &x->base;
	}
	x->push = true;
	x->on_headers = f->on_headers;
	x->on_data = f->on_data;
	x->on_done = f->on_done;
	x->arg = f->arg;
	x->collect_max = f->collect_max;
	atomic_store(&x->refs, 2);   /* the starter's, the queued call's */
	pthread_mutex_lock(&o->mu);
	rv = o->loop != NULL ? bc_loop_call(o->loop, push_run, x) :
	    BC_ECANCELED;
	if (rv == 0) {
		x->queued = true;
		x->next = o->queue;
		if (o->queue != NULL)
			o->queue->prev = x;
		o->queue = x;
	}
	pthread_mutex_unlock(&o->mu);
	if (rv < 0) {
		fx_free(x);
		return NULL;
	}
	return &x->base;
}

static bc_exchange_t *
file_relay(bc_origin_t *base, const bc_relay_t *rl, bc_s3err_t *e)
{
	file_origin_t *o = (file_origin_t *)base;
	fx_t *x = fx_new(o);

	*e = BC_S3E_InternalError;
	if (x == NULL)
		return NULL;
	x->r.s3 = rl->s3;
	x->r.auth = rl->auth != NULL ? rl->auth : &anonymous_auth;
	x->r.client_key = rl->client_key;
	x->r.content_length = rl->content_length;
	if (rl->region != NULL)
		x->r.region = rl->region;
	x->head = strcmp(rl->s3->method, "HEAD") == 0;
	*e = req_start(&x->r, &x->c);
	if (*e != BC_S3E_NONE) {
		fx_free(x);
		return NULL;
	}
	return &x->base;
}

static void
file_cancel_all(bc_origin_t *base)
{
	file_origin_t *o = (file_origin_t *)base;
	fx_t *list, *x, *next;

	pthread_mutex_lock(&o->mu);
	list = o->queue;
	for (x = list; x != NULL; x = x->next)
		x->queued = false;
	o->queue = NULL;
	pthread_mutex_unlock(&o->mu);
	/* each still holds the queued call's reference: push_run, later on
	 * this thread, drops it */
	for (x = list; x != NULL; x = next) {
		next = x->next;
		x->prev = x->next = NULL;
		if (!cb_begin(x))
			continue;
		set_outcome(x, BC_ECANCELED);
		if (alive(x))
			x->on_done(&x->base, x->arg);
		cb_end(x);
	}
}

static void
file_free(bc_origin_t *base)
{
	file_origin_t *o = (file_origin_t *)base;

	bc_file_close(&o->root_fd);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static const bc_origin_ops_t file_origin_ops = {
	.name = "file",
	.fetch = file_fetch,
	.relay = file_relay,
	.cancel_all = file_cancel_all,
	.free = file_free,
};

int
bc_file_origin_new(const char *root, bc_loop_t *loop, bc_origin_t **out,
    char *err, size_t errlen)
{
	file_origin_t *o;
	int fd;

	*out = NULL;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "--upstream: cannot open directory "
		    "'%s': %s", root, strerror(errno));
		return -1;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL) {
		close(fd);
		snprintf(err, errlen, "--upstream: out of memory");
		return -1;
	}
	o->base.ops = &file_origin_ops;
	o->root_fd = fd;
	o->loop = loop;
	pthread_mutex_init(&o->mu, NULL);
	*out = &o->base;
	return 0;
}
