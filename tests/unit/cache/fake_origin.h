/*
 * fake_origin.h — an in-process origin (upstream.h) for unit tests: it
 * keeps objects in memory and answers fetches the way S3 answers GET and
 * HEAD, with no HTTP server and no curl.
 *
 * Relays are refused unless a test answers them (fake_origin_on_relay).
 *
 * Versions: an object may have versions besides its current one
 * (fake_origin_put_version); a fetch with bc_fetch_t.version reads that
 * version (404 when there is none), one without reads the current one.
 *
 * Answers: 200 (whole object) or 206 with Content-Range and
 * Content-Length for a Range; 304 when If-None-Match names the object's
 * ETag; 412 PreconditionFailed when If-Match does not; 404 NoSuchKey; 416
 * InvalidRange with "Content-Range: bytes *\/SIZE" for a range past the
 * end; HEAD with Content-Length and no body; error bodies are S3's XML
 * (none for HEAD). Object answers carry ETag, Last-Modified, the object's
 * metadata headers, Accept-Ranges, and per-response headers (Date,
 * x-amz-request-id, x-amz-id-2) a cache must not replay.
 *
 * Threads: every callback and wake runs on the loop thread given to
 * fake_origin_new(), never before fetch() returned (the step that answers
 * takes the origin's lock, which fetch() holds until it returns). A body
 * arrives in pieces (fake_origin_piece(), one loop turn each), so a push
 * exchange gets several on_data calls. Callbacks run without the origin's
 * lock; release() from another thread waits for a callback in progress to
 * return, and no callback or wake fires after it. cancel_all() ends every
 * exchange in flight with error() == BC_ECANCELED (push: on_done). Every
 * knob and query is thread-safe.
 *
 * Ownership: fake_origin_new() returns the origin; bc_origin_free() on
 * fake_origin_base() (after the loop stopped) frees it. Every exchange
 * must have been released by then (abort() otherwise: the caller leaked
 * one).
 */
#ifndef BC_TEST_FAKE_ORIGIN_H
#define BC_TEST_FAKE_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upstream/upstream.h"
#include "loop/loop.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

typedef struct fake_origin_s fake_origin_t;

/* One fetch as the origin received it (from its bc_fetch_t). */
typedef struct fake_req_s {
	char              method[8];       /* "GET" or "HEAD" */
	char              bucket[64];
	char              key[128];
	char              version[64];     /* versionId; "": the current one */
	char              range[64];       /* "bytes=a-b" as S3 would get it;
					      "" without a Range */
	uint64_t          first, last;     /* bc_fetch_t's */
	char              if_match[136];   /* "" when not sent */
	char              if_none_match[136];
	bool              anon;            /* sent as an unsigned client's */
	bc_origin_class_t cls;
	bool              push;            /* on_done set; else pull mode */
} fake_req_t;

/* Knobs that change how every later answer is made (off at start). */
typedef enum fake_knob_e {
	FAKE_IGNORE_RANGE,      /* answer 200 with the whole object */
	FAKE_IGNORE_IF_MATCH,   /* never 412 */
	FAKE_SHORT_BODY,        /* a 206 one byte short (Content-Length
				   says so; Content-Range claims the range) */
	FAKE_NO_ETAG,           /* answers without ETag */
	FAKE_HEAD_NO_LENGTH,    /* HEAD 200 without Content-Length */
	FAKE_DENY_UNSIGNED,     /* unsigned fetches: 403 AccessDenied */
} fake_knob_t;

/* The origin, its exchanges on loop (running, or started before the
 * first fetch). NULL when out of memory. */
fake_origin_t *fake_origin_new(bc_loop_t *loop);
bc_origin_t   *fake_origin_base(fake_origin_t *fo);
/* For bc_loop_stop(): runs the origin's cancel_all (arg: the
 * fake_origin_t). */
void fake_origin_stop_fn(bc_loop_t *loop, void *arg);

/* Creates or replaces bucket/key: size bytes at data (copied), etag
 * (quoted, as S3 sends it), last_modified (an HTTP date, or NULL for a
 * fixed one) and meta (Content-Type, x-amz-meta-*, ...; may be NULL),
 * all copied. */
void fake_origin_put(fake_origin_t *fo, const char *bucket, const char *key,
    const uint8_t *data, size_t size, const char *etag,
    const char *last_modified, const bc_kvlist_t *meta);
/* Creates or replaces version of bucket/key (not the current one): size
 * bytes at data and etag, the fixed Last-Modified, no metadata. */
void fake_origin_put_version(fake_origin_t *fo, const char *bucket,
    const char *key, const char *version, const uint8_t *data, size_t size,
    const char *etag);
/* Removes bucket/key (its current version); false when there was none. */
bool fake_origin_del(fake_origin_t *fo, const char *bucket,
    const char *key);

void fake_origin_set(fake_origin_t *fo, fake_knob_t knob, bool on);
/* The next n answers: status with S3's XML error (503 SlowDown, 500
 * InternalError, 404 NoSuchKey, 403 AccessDenied, 412
 * PreconditionFailed, else InternalError), or with status 0 a transport
 * failure before any header: headers() and error() say err (BC_EIO when
 * 0). */
void fake_origin_fail(fake_origin_t *fo, unsigned n, int status, int err);
/* The next n fetch() calls return NULL (the origin cannot start them):
 * nothing is logged, no callback fires. */
void fake_origin_refuse(fake_origin_t *fo, unsigned n);
/* Bodies answered from now on end after `after` bytes (0: never) with
 * err (BC_EIO when 0), their Content-Length saying the whole. */
void fake_origin_cut(fake_origin_t *fo, size_t after, int err);
/* Bodies answered from now on come in pieces of n bytes (default 4096). */
void fake_origin_piece(fake_origin_t *fo, size_t n);

/* While closed, fetches wait before their answer (held). Opening lets
 * them go on. */
void     fake_origin_gate(fake_origin_t *fo, bool closed);
/* Waits until n fetches are held at the gate; false after ms. */
bool     fake_origin_wait_held(fake_origin_t *fo, unsigned n, unsigned ms);
/* GET bodies answered from now on stop after `at` bytes (0: never; not
 * when at is the whole body or more) while the body gate is closed (it
 * is closed by this call when at > 0); each passes its hold once. */
void     fake_origin_hold_body(fake_origin_t *fo, size_t at);
void     fake_origin_release_body(fake_origin_t *fo);
bool     fake_origin_wait_body_held(fake_origin_t *fo, unsigned n,
    unsigned ms);
unsigned fake_origin_body_held(fake_origin_t *fo);
/* Ends every fetch held at either gate with the transport failure err:
 * before the headers (headers() says err) or mid-body (error() says
 * err), as a timeout or a broken connection would. */
void     fake_origin_abort_held(fake_origin_t *fo, int err);
/* Waits until every exchange started has ended and its last callback or
 * wake returned (released ones count as ended); false after ms. */
bool     fake_origin_wait_quiet(fake_origin_t *fo, unsigned ms);

/* The log of fetches received, oldest first. */
unsigned fake_origin_nlog(fake_origin_t *fo);
/* Entry i; false when there is none. */
bool     fake_origin_log(fake_origin_t *fo, unsigned i, fake_req_t *out);
/* Fetches logged with method (NULL: any) and range (NULL: any, "":
 * none). */
unsigned fake_origin_count(fake_origin_t *fo, const char *method,
    const char *range);
/* Exchanges not yet freed (released and ended). */
unsigned fake_origin_exchanges(fake_origin_t *fo);

/* Relays (a client's request passed on, any operation): fn(arg, r,
 * &status, body) makes each one's whole answer when it starts (pull
 * mode: headers and body readable once write_end() was called, as the
 * file origin answers; never a wake; Content-Type application/xml); a
 * request body is dropped. fn NULL (the default):
 * relays are refused with NotImplemented. fn runs on the caller's
 * thread. Relays answered so far: fake_origin_relays. */
typedef void (*fake_relay_fn)(void *arg, const bc_relay_t *r, int *status,
    bc_buf_t *body);
void     fake_origin_on_relay(fake_origin_t *fo, fake_relay_fn fn, void *arg);
unsigned fake_origin_relays(fake_origin_t *fo);

#endif
