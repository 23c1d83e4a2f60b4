/*
 * s3_awschunked.h — verify an aws-chunked upload body as it streams, and
 * re-encode it for the upstream. Three modes (x-amz-content-sha256):
 *
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD          signed chunks
 *     "hex;chunk-signature=SIG\r\n" data "\r\n" ... "0;chunk-signature=
 *     SIG\r\n\r\n"
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER          unsigned chunks, checksum
 *     "hex\r\n" data "\r\n" ... "0\r\n" "x-amz-checksum-ALG:B64\r\n" "\r\n"
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER  signed chunks, checksum,
 *                                               signed trailer
 *     signed chunks ... "0;chunk-signature=SIG\r\n"
 *     "x-amz-checksum-ALG:B64\r\n" "x-amz-trailer-signature:SIG\r\n" "\r\n"
 *
 * A signed chunk is buffered whole (at most max_chunk bytes) and its
 * signature checked against the chain seeded by the client's request
 * signature. The trailer signature's string to sign is
 * "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope "\n" <final chunk's
 * signature> "\n" hex(sha256("x-amz-checksum-alg:B64\n")) — the trailer
 * lines before the signature, each "name:value\n" with the name in lower
 * case (AWS's documented example and the SDKs agree). Unsigned chunks
 * stream through without buffering (no size limit but the declared
 * length). In the trailer modes the checksum (the one x-amz-trailer
 * announced, and only it) is computed over the decoded payload and
 * compared with the trailer's.
 *
 * A fourth mode, framing only, decodes what an anonymous request sends
 * under any other STREAMING-* value (the signed ones with no key to check
 * them, SigV4a's): unsigned chunks whose extensions (";name=value", at
 * most 1024 bytes a line) are skipped, and trailer lines (at most 16 KiB
 * in all, each ending in CRLF) skipped unread; nothing is verified, the
 * decoded length is checked only when declared (set_decoded_len), and
 * the output is the decoded payload.
 *
 * Output, for an upstream: the same mode, framed as the client framed it
 * (same sizes; signed chunks and the trailer signature chained from the
 * upstream request's signature, same lengths), so it is exactly as long
 * as the input. Without an upstream: the decoded payload.
 * Nothing unverified is emitted: a signed chunk only once its signature
 * matched, and the end of the body (the final chunk, the trailer, its
 * signature) only once everything matched — so a body that fails never
 * reaches a complete form upstream. Unsigned data streams out before the
 * checksum is known: the upstream then never gets the body's end.
 *
 * Errors (sticky; feed returns -1):
 *   SignatureDoesNotMatch  a chunk's or the trailer's signature is wrong
 *   BadDigest              the trailer's checksum does not match the data
 *   IncompleteBody         the payload is longer or shorter than declared
 *                          (x-amz-decoded-content-length), or (finish) the
 *                          body ended before its end
 *   InvalidRequest         the trailer's value is not that checksum's form
 *                          (base64 of its length), as S3 answers a
 *                          malformed x-amz-checksum-* header
 *   InvalidArgument        malformed framing: chunk line, CRLF, bytes
 *                          after the end
 *   MalformedTrailerError  a malformed trailer, as S3 answers it: a line
 *                          not "name:value", another name than the
 *                          announced checksum (or any checksum when
 *                          x-amz-trailer announced none), a repeated or
 *                          missing checksum line, a trailer signature in
 *                          the unsigned mode, a trailer in the mode
 *                          without one, a trailer over its bound
 *   SignatureDoesNotMatch  also: the signed trailer mode without
 *                          x-amz-trailer-signature
 *   EntityTooLarge         a signed chunk over max_chunk
 * Not thread-safe; one per request.
 */
#ifndef BC_S3_AWSCHUNKED_H
#define BC_S3_AWSCHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "s3/s3_checksum.h"
#include "s3/s3_error.h"
#include "s3/s3_sigv4.h"

#define BC_SIGV4_STREAMING_TRAILER \
	"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define BC_SIGV4_STREAMING_UNSIGNED_TRAILER \
	"STREAMING-UNSIGNED-PAYLOAD-TRAILER"

typedef enum bc_awschunked_mode_e {
	BC_AWSCHUNKED_SIGNED = 0,        /* ...-PAYLOAD */
	BC_AWSCHUNKED_UNSIGNED_TRAILER,  /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
	BC_AWSCHUNKED_SIGNED_TRAILER,    /* ...-PAYLOAD-TRAILER */
	BC_AWSCHUNKED_FRAMING,           /* any other STREAMING-*, anonymous:
					    framing only (no name) */
} bc_awschunked_mode_t;

typedef struct bc_awschunked_s bc_awschunked_t;

typedef struct bc_awschunked_opts_s {
	bc_awschunked_mode_t mode;
	/* signed modes: the verified client's context (seed = its request
	 * signature); ignored in the unsigned mode */
	const bc_sigv4_ctx_t *client;
	/* framed output for an upstream (else the decoded payload); the
	 * signed modes need upstream: the context bc_sigv4_sign() returned
	 * for the upstream request */
	bool                  framed;
	const bc_sigv4_ctx_t *upstream;
	size_t                max_chunk;   /* signed chunks */
	/* trailer modes: the checksum x-amz-trailer announced (NONE: none
	 * announced, and the trailer must hold no checksum) */
	bc_checksum_alg_t     trailer;
} bc_awschunked_opts_t;

/* Contexts are copied. Returns NULL when out of memory or o is
 * inconsistent (a signed mode without client, or framed without
 * upstream; a mode without trailer given a checksum; framing only with
 * framed output or a checksum). */
bc_awschunked_t *bc_awschunked_new_opts(const bc_awschunked_opts_t *o);
/* The STREAMING-AWS4-HMAC-SHA256-PAYLOAD mode: upstream NULL emits the
 * decoded payload alone (no framing), e.g. for a file:// upstream. */
bc_awschunked_t *bc_awschunked_new(const bc_sigv4_ctx_t *client,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk);
void bc_awschunked_free(bc_awschunked_t *d);   /* NULL is a no-op */
/* The decoder for a request in mode with headers h: the trailer's
 * checksum from x-amz-trailer (trailer modes), the declared length from
 * x-amz-decoded-content-length (required), the rest as in opts. Returns
 * BC_S3E_NONE and *out, or the error of bc_awschunked_parse_trailer /
 * _parse_decoded_len, or InternalError. */
bc_s3err_t bc_awschunked_from_headers(const bc_kvlist_t *h,
    bc_awschunked_mode_t mode, const bc_sigv4_ctx_t *client, bool framed,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk, bc_awschunked_t **out);

/* The mode an x-amz-content-sha256 value names: true and *mode set for
 * the three STREAMING-* values above, false for anything else. */
bool bc_awschunked_mode_parse(const char *content_sha256,
    bc_awschunked_mode_t *mode);
/* The x-amz-content-sha256 value of mode (not BC_AWSCHUNKED_FRAMING,
 * which has none). Static. */
const char *bc_awschunked_mode_name(bc_awschunked_mode_t mode);
/* The checksum an x-amz-trailer value (NULL: missing, *alg = NONE)
 * announces into *alg: BC_S3E_NONE, or InvalidRequest when not one
 * x-amz-checksum-* header S3 knows (crc32, crc32c, crc64nvme, sha1,
 * sha256). */
bc_s3err_t bc_awschunked_parse_trailer(const char *value,
    bc_checksum_alg_t *alg);

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
 * output is still pending: take it first) or -1 with *err set (see the
 * list above). */
ssize_t bc_awschunked_feed(bc_awschunked_t *d, const char *in, size_t len,
    bc_s3err_t *err);
/* Verified, re-encoded bytes ready to send: returns their count and
 * points *p at them; bc_awschunked_consume() marks n of them sent. */
size_t bc_awschunked_output(bc_awschunked_t *d, const char **p);
void   bc_awschunked_consume(bc_awschunked_t *d, size_t n);
/* true once the body's end was verified and all output taken */
bool   bc_awschunked_done(const bc_awschunked_t *d);
/* Call when the client's body ended: BC_S3E_NONE when its end was
 * verified, the sticky error of a failed feed, else IncompleteBody. */
bc_s3err_t bc_awschunked_finish(const bc_awschunked_t *d);
/* Payload bytes taken so far (verified, in the signed modes). */
uint64_t bc_awschunked_decoded_len(const bc_awschunked_t *d);
/* Trailer modes with a checksum, once the end was verified: the
 * checksum's base64 value (valid while d lives); else NULL. */
const char *bc_awschunked_checksum(const bc_awschunked_t *d);

#endif
