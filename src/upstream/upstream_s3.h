/*
 * upstream_s3.h — the S3 origin: where the bucket is (from --upstream and
 * --upstream-addressing), the gateway's credentials, and the one place
 * that builds an upstream request — URL, Host, and the SigV4 signature
 * over it — for the proxy and for cache fills alike.
 *
 * (The exchange itself is upstream_xfer.h; the origin interface that
 * fronts both this and the file:// store comes next, DESIGN.md.)
 * Set up once at start; read-only afterwards, so any thread may use it.
 */
#ifndef BC_UPSTREAM_S3_H
#define BC_UPSTREAM_S3_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "s3/s3_sigv4.h"
#include "upstream/upstream_target.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

typedef struct bc_s3_origin_s {
	char             *scheme_host;   /* "http://h:p", owned */
	char             *host;          /* "h:p", owned */
	bc_upstream_ep_t  ep;            /* addressing over the two above */
	bc_sigv4_creds_t  creds;         /* borrowed from the config */
} bc_s3_origin_t;

/* From cfg (upstream, upstream_addressing, credentials, region): 0, or -1
 * with err naming the bad option. cfg must outlive o. */
int  bc_s3_origin_init(bc_s3_origin_t *o, const bc_config_t *cfg, char *err,
    size_t errlen);
void bc_s3_origin_fini(bc_s3_origin_t *o);   /* zeroed is a no-op */

/*
 * The upstream request for method on bucket/key (bucket "" is the
 * service; key "" the bucket, with a trailing '/' when bucket_slash),
 * query (may be NULL) in canonical order: appends its URL to url, and to
 * hdrs (which holds the headers to send already) Host, then — unless
 * unsigned_ — X-Amz-Date, x-amz-content-sha256 = payload_hash, a token
 * and Authorization. ctx (may be NULL) gets the signing context (aws-
 * chunked bodies chain their signatures from it); unsigned, it is zeroed.
 * Returns 0 or BC_ENOMEM.
 */
int bc_s3_origin_request(const bc_s3_origin_t *o, const char *method,
    const char *bucket, const char *key, bool bucket_slash,
    const bc_kvlist_t *query, const char *payload_hash, bool unsigned_,
    bc_buf_t *url, bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx);

#endif
