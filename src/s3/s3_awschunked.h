/*
 * s3_awschunked.h — verify an aws-chunked (STREAMING-AWS4-HMAC-SHA256-
 * PAYLOAD) upload body as it streams, and re-sign it for the upstream.
 *
 * Each client chunk ("hex-size;chunk-signature=sig\r\n" data "\r\n") is
 * buffered whole (at most max_chunk bytes), its signature checked against
 * the chain seeded by the client's request signature, and then emitted
 * with the same size and a signature chained from the upstream request's
 * signature: the output has exactly the client's Content-Length. Nothing
 * unverified is ever emitted, and when the payload's declared length
 * (x-amz-decoded-content-length) is known, neither is a chunk that takes
 * the payload past it nor a final chunk that ends it short of it: the
 * output then never holds a complete body. Not thread-safe; one per
 * request.
 */
#ifndef BC_S3_AWSCHUNKED_H
#define BC_S3_AWSCHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "s3/s3_error.h"
#include "s3/s3_sigv4.h"

typedef struct bc_awschunked_s bc_awschunked_t;

/* client: the verified client's context (seed = its request signature);
 * upstream: the context bc_sigv4_sign() returned for the upstream request,
 * or NULL to emit the decoded payload alone (no chunk framing), e.g. for
 * a file:// upstream. Both are copied. Returns NULL when out of memory. */
bc_awschunked_t *bc_awschunked_new(const bc_sigv4_ctx_t *client,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk);
void bc_awschunked_free(bc_awschunked_t *d);   /* NULL is a no-op */

/* Parses an x-amz-decoded-content-length value (NULL: the header is
 * missing) into *len: BC_S3E_NONE, MissingContentLength when missing,
 * InvalidArgument unless 1-20 decimal digits that fit in 64 bits. */
bc_s3err_t bc_awschunked_parse_decoded_len(const char *value, uint64_t *len);
/* Declares the payload's length (the signed x-amz-decoded-content-length);
 * call before the first feed. Then a chunk whose size takes the payload
 * past len fails as soon as its header line is read, and a final chunk
 * reached with fewer than len bytes fails; both with IncompleteBody and
 * nothing of that chunk emitted. Without this call no length is checked. */
void bc_awschunked_set_decoded_len(bc_awschunked_t *d, uint64_t len);

/* Takes up to len bytes of the client's body; returns bytes taken (0 when
 * output is still pending: take it first) or -1 with *err set
 * (SignatureDoesNotMatch, IncompleteBody, InvalidArgument,
 * EntityTooLarge for a chunk over max_chunk). */
ssize_t bc_awschunked_feed(bc_awschunked_t *d, const char *in, size_t len,
    bc_s3err_t *err);
/* Verified, re-signed bytes ready to send: returns their count and points
 * *p at them; bc_awschunked_consume() marks n of them sent. */
size_t bc_awschunked_output(bc_awschunked_t *d, const char **p);
void   bc_awschunked_consume(bc_awschunked_t *d, size_t n);
/* true once the final zero-length chunk was verified and emitted */
bool   bc_awschunked_done(const bc_awschunked_t *d);
/* Call when the client's body ended: BC_S3E_NONE when the final chunk
 * was verified, the sticky error of a failed feed, else IncompleteBody. */
bc_s3err_t bc_awschunked_finish(const bc_awschunked_t *d);
/* Payload bytes verified so far. */
uint64_t bc_awschunked_decoded_len(const bc_awschunked_t *d);

#endif
