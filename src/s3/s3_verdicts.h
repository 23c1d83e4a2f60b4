/*
 * s3_verdicts.h — a small bounded cache of presigned-URL verdicts.
 *
 * A training job that reads a dataset through presigned URLs asks for the
 * same URLs epoch after epoch; verifying one (canonical request, SHA-256,
 * HMAC) costs more than serving a cached 4 KiB object. A presigned SigV4
 * request whose method, request target (path and query as received, the
 * signature and credential included) and signed headers' values are byte
 * for byte those of one verified before, and whose validity window (from
 * X-Amz-Date minus the allowed skew to X-Amz-Date plus X-Amz-Expires)
 * holds now, gets the same verdict without the work: verification is a
 * function of exactly those bytes, the time, and the secret its access
 * key names.
 *
 * Only successes are kept (a refusal is never cached: it is always
 * recomputed); entries are compared on their whole key, never on a hash
 * alone; the table is direct-mapped and bounded (entries x
 * BC_S3_VERDICT_MAX_KEY bytes at most); bc_s3_verdicts_clear() empties it
 * when client keys change. Thread-safe (striped locks).
 */
#ifndef BC_S3_VERDICTS_H
#define BC_S3_VERDICTS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "s3/s3_auth.h"

#define BC_S3_VERDICT_MAX_KEY 4096   /* longer requests are not cached */

typedef struct bc_s3_verdicts_s bc_s3_verdicts_t;

/* A table of entries slots (rounded up to a power of two); NULL when out
 * of memory. */
bc_s3_verdicts_t *bc_s3_verdicts_new(size_t entries);
void bc_s3_verdicts_free(bc_s3_verdicts_t *v);   /* NULL is a no-op */
void bc_s3_verdicts_clear(bc_s3_verdicts_t *v);

/*
 * bc_s3_auth_verify() through the cache v (NULL: no cache): a presigned
 * SigV4 request seen and accepted before, within its window, is accepted
 * again from the cache; any other request is verified, and a presigned
 * one that passes is remembered. Same contract as bc_s3_auth_verify();
 * *cached (may be NULL) tells whether the verdict came from the cache.
 */
bc_s3err_t bc_s3_verdicts_verify(bc_s3_verdicts_t *v, const bc_s3_req_t *r,
    time_t now, bc_s3_secret_fn secret, void *ctx, bool allow_anonymous,
    bc_s3_auth_t *out, bool *cached);

/* Hits and stores so far (for stats and tests). */
void bc_s3_verdicts_counts(bc_s3_verdicts_t *v, uint64_t *hits,
    uint64_t *stores);

#endif
