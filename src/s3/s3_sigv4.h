/*
 * s3_sigv4.h — AWS Signature Version 4 for S3: one canonicalizer used both
 * to sign upstream requests and to verify clients.
 *
 * Pure and thread-safe. Strings passed in are NUL-terminated; output goes
 * into caller buffers. All lengths are bounded; malformed input returns a
 * negative BC_E* code, never crashes.
 */
#ifndef BC_S3_SIGV4_H
#define BC_S3_SIGV4_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util/util_buf.h"
#include "util/util_kv.h"

#define BC_SIGV4_UNSIGNED  "UNSIGNED-PAYLOAD"
#define BC_SIGV4_STREAMING "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define BC_SIGV4_EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Appends s, URI-encoded the S3 way (RFC 3986 unreserved kept; '/' kept
 * when keep_slash; everything else %XX upper-case). */
int bc_sigv4_uri_encode(bc_buf_t *out, const char *s, bool keep_slash);

/* Appends the canonical query string of q: every name and value
 * URI-encoded (slash encoded too), pairs sorted by encoded name then
 * value, joined with '&'. A pair named skip (when not NULL) is left out. */
int bc_sigv4_canonical_query(bc_buf_t *out, const bc_kvlist_t *q,
    const char *skip);

typedef struct bc_sigv4_input_s {
	const char        *method;
	const char        *path;           /* decoded path, e.g. "/b/my key" */
	const bc_kvlist_t *query;          /* decoded parameters */
	const bc_kvlist_t *headers;        /* names in any case */
	const char        *signed_headers; /* "host;x-amz-date", lower-case,
					      ';'-separated, sorted */
	const char        *payload_hash;   /* hex, UNSIGNED-PAYLOAD, ... */
	const char        *skip_query;     /* "X-Amz-Signature" or NULL */
	/* Verbatim overrides (NULL: computed from path / query). A verifier
	 * uses them to accept clients that sign the request target exactly
	 * as sent (curl 7.x: raw path, unsorted raw query). */
	const char        *canonical_uri;
	const char        *canonical_query;
} bc_sigv4_input_t;

/* Appends the canonical request. Header values are trimmed and inner runs
 * of spaces folded; a signed header missing from headers is -EINVAL. The
 * canonical URI is uri_encode(path, keep_slash) — S3 does not normalise
 * or double-encode. */
int bc_sigv4_canonical_request(bc_buf_t *out, const bc_sigv4_input_t *in);

/* kSigning = HMAC chain over "AWS4"+secret, date8 ("20130524"), region,
 * service, "aws4_request". Derived keys are kept in a small per-thread
 * cache (they change once a day). */
void bc_sigv4_signing_key(const char *secret, const char *date8,
    const char *region, const char *service, uint8_t key[32]);

/* Formats t as "20130524T000000Z" into out[17]. */
void bc_sigv4_amz_date(time_t t, char out[17]);
/* Parses "20130524T000000Z"; returns 0 and sets *t, or BC_EINVAL. */
int  bc_sigv4_parse_amz_date(const char *s, time_t *t);

/* Signature (64 hex + NUL) of the canonical request in creq under
 * amz_date, scope ("20130524/us-east-1/s3/aws4_request") and key. */
void bc_sigv4_signature(const char *creq, const char *amz_date,
    const char *scope, const uint8_t key[32], char sig[65]);

typedef struct bc_sigv4_creds_s {
	const char *access_key;
	const char *secret_key;
	const char *session_token;   /* NULL or "" when none */
	const char *region;          /* "us-east-1" */
	const char *service;         /* "s3" */
} bc_sigv4_creds_t;

/* What a signature was made with: enough to sign aws-chunked chunks
 * that follow it. */
typedef struct bc_sigv4_ctx_s {
	uint8_t key[32];
	char    amz_date[17];
	char    scope[128];
	char    signature[65];       /* the seed (request) signature */
} bc_sigv4_ctx_t;

/*
 * Signs an upstream request in place. headers must hold Host; the signer
 * sets x-amz-date, x-amz-content-sha256 (payload_hash), x-amz-security-token
 * (when a token) and Authorization, and signs host, content-md5,
 * content-type and every x-amz-* header present. path is the decoded path
 * the request will be sent to. ctx (may be NULL) receives the signing
 * context. Returns 0 or a negative BC_E* code.
 */
int bc_sigv4_sign(bc_kvlist_t *headers, const char *method,
    const char *path, const bc_kvlist_t *query, const char *payload_hash,
    const bc_sigv4_creds_t *creds, time_t now, bc_sigv4_ctx_t *ctx);

/* Signature of one aws-chunked chunk (hex, 64 + NUL): string to sign
 * "AWS4-HMAC-SHA256-PAYLOAD\n" date "\n" scope "\n" prev "\n"
 * sha256("") "\n" sha256(data). */
void bc_sigv4_chunk_signature(const bc_sigv4_ctx_t *ctx, const char *prev,
    const void *data, size_t n, char sig[65]);
/* The same from the chunk's hex SHA-256 (64 + NUL), already computed. */
void bc_sigv4_chunk_signature_hex(const bc_sigv4_ctx_t *ctx,
    const char *prev, const char *data_sha256, char sig[65]);

#endif
