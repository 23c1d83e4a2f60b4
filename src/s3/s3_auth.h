/*
 * s3_auth.h — authenticate a client request: SigV4 (Authorization header
 * or presigned X-Amz-* query), SigV2 (header or query), or anonymous.
 *
 * Pure and thread-safe; secrets come from a lookup callback so the
 * keyring stays in config/. Every failure maps to the S3 error a real S3
 * answers: InvalidAccessKeyId, SignatureDoesNotMatch,
 * RequestTimeTooSkewed (more than 15 minutes off), AccessDenied (expired
 * presigned URL or anonymous not allowed), AuthorizationHeaderMalformed,
 * AuthorizationQueryParametersError.
 */
#ifndef BC_S3_AUTH_H
#define BC_S3_AUTH_H

#include <stdbool.h>
#include <time.h>

#include "s3/s3_awschunked.h"
#include "s3/s3_error.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"

#define BC_S3_MAX_SKEW 900   /* seconds */

typedef enum bc_s3auth_kind_e {
	BC_S3AUTH_NONE = 0,      /* anonymous */
	BC_S3AUTH_V2,
	BC_S3AUTH_V2_QUERY,
	BC_S3AUTH_V4,
	BC_S3AUTH_V4_QUERY,
} bc_s3auth_kind_t;

/* Returns the secret for access_key, or NULL when unknown. Must be
 * thread-safe; the pointer stays valid for the daemon's life. */
typedef const char *(*bc_s3_secret_fn)(void *ctx, const char *access_key);

typedef struct bc_s3_auth_s {
	bc_s3auth_kind_t kind;
	char             access_key[129];
	/* V4: x-amz-content-sha256 as signed (hex, UNSIGNED-PAYLOAD or one
	 * of the three STREAMING-* modes of s3_awschunked.h); presigned:
	 * UNSIGNED-PAYLOAD unless the query names one; anonymous:
	 * STREAMING-UNSIGNED-PAYLOAD-TRAILER when sent, else ""; V2: "". */
	char             payload_hash[80];
	/* an aws-chunked body, in stream_mode: signed chunks (V4 only, the
	 * chain seeded by v4.signature) or the unsigned trailer mode (V4 or
	 * anonymous) */
	bool             streaming;
	bc_awschunked_mode_t stream_mode;
	bc_sigv4_ctx_t   v4;          /* V4 only: to verify chunk signatures */
	/* On failure: S3's more precise message for the error ("Request has
	 * expired"), static; NULL means the table's message. */
	const char      *message;
} bc_s3_auth_t;

/*
 * Verifies r (parsed, headers filled) at time now. When the request
 * carries no credentials: BC_S3E_NONE with kind NONE if allow_anonymous,
 * else AccessDenied. On success fills *out. x-amz-content-sha256 may name
 * any of the three aws-chunked modes; another STREAMING-* value (SigV4a's
 * ECDSA modes) is NotImplemented.
 */
bc_s3err_t bc_s3_auth_verify(const bc_s3_req_t *r, time_t now,
    bc_s3_secret_fn secret, void *ctx, bool allow_anonymous,
    bc_s3_auth_t *out);

/* SigV2 string to sign for r (exposed for tests): method, Content-MD5,
 * Content-Type, Date (or expires for the query form), canonical x-amz-*
 * headers and the canonical resource with S3's sub-resources. */
int bc_s3_sigv2_string_to_sign(bc_buf_t *out, const bc_s3_req_t *r,
    const char *date_or_expires);

/* SigV2 verification (s3_sigv2.c), called by bc_s3_auth_verify for
 * "Authorization: AWS ..." or the AWSAccessKeyId/Signature/Expires query;
 * same contract as bc_s3_auth_verify. */
bc_s3err_t bc_s3_sigv2_verify(const bc_s3_req_t *r, time_t now,
    bc_s3_secret_fn secret, void *ctx, bc_s3_auth_t *out);

#endif
