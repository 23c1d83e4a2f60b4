/*
 * upstream_s3.h — the S3 origin: where the bucket is (from --upstream and
 * --upstream-addressing), the gateway's credentials, and the one place
 * that builds an upstream request — URL, Host, and the SigV4 signature
 * over it — for the proxy and for cache fills alike.
 *
 * bc_s3_origin_new() makes it an origin (upstream.h) whose exchanges run
 * over upstream_xfer.c on the loop. Relayed requests: a client's hex
 * payload hash is forwarded (the upstream checks the body against it);
 * UNSIGNED-PAYLOAD stays unsigned; an aws-chunked body goes on in the
 * client's mode and framing, verified as it streams: signed chunks and
 * trailer re-signed, the checksum trailer verified and passed on as sent.
 * SigV2 and anonymous clients' bodies go UNSIGNED. Unsigned clients
 * without --anonymous are relayed unsigned: the upstream decides.
 * Set up once at start; read-only afterwards, so any thread may use it
 * (the credentials provider hands each signature a consistent snapshot
 * of the key pair, creds.h).
 */
#ifndef BC_UPSTREAM_S3_H
#define BC_UPSTREAM_S3_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "creds/creds.h"
#include "s3/s3_sigv4.h"
#include "upstream/upstream.h"
#include "loop/loop.h"
#include "upstream/upstream_target.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

typedef struct bc_s3_origin_s {
	char             *scheme_host;   /* "http://h:p", owned */
	char             *host;          /* "h:p", owned */
	bc_upstream_ep_t  ep;            /* addressing over the two above */
	bc_creds_t       *creds;         /* borrowed; NULL: no credentials
					    (--credentials none), every
					    request goes unsigned */
	const char       *region;        /* borrowed from the config */
} bc_s3_origin_t;

/* From cfg (upstream, upstream_addressing, region) and the credentials
 * provider creds (may be NULL: requests go unsigned): 0, or -1 with err
 * naming the bad option. cfg and creds must outlive o. */
int  bc_s3_origin_init(bc_s3_origin_t *o, const bc_config_t *cfg,
    bc_creds_t *creds, char *err, size_t errlen);
void bc_s3_origin_fini(bc_s3_origin_t *o);   /* zeroed is a no-op */

/*
 * The upstream request for method on bucket/key (bucket "" is the
 * service; key "" the bucket, with a trailing '/' when bucket_slash),
 * query (may be NULL) in canonical order: appends its URL to url, and to
 * hdrs (which holds the headers to send already) Host, then — unless
 * unsigned_ or o has no credentials — X-Amz-Date, x-amz-content-sha256 =
 * payload_hash, a token and Authorization, signed with one snapshot of
 * the provider's key pair. ctx (may be NULL) gets the signing context
 * (aws-chunked bodies chain their signatures from it); unsigned, it is
 * zeroed. Returns 0, BC_EKEYEXPIRED (the credentials expired and no
 * refresh has succeeded: nothing may be sent), or BC_ENOMEM.
 */
int bc_s3_origin_request(const bc_s3_origin_t *o, const char *method,
    const char *bucket, const char *key, bool bucket_slash,
    const bc_kvlist_t *query, const char *payload_hash, bool unsigned_,
    bc_buf_t *url, bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx);

/* The S3 origin for cfg, signing with creds (NULL: unsigned; both must
 * outlive it), its exchanges on loop (bc_xfer_loop_new's). Returns 0 and
 * *out (bc_origin_free), or -1 with err naming the bad option. Its ready
 * op says BC_EKEYEXPIRED while the credentials are expired. */
int bc_s3_origin_new(const bc_config_t *cfg, bc_creds_t *creds,
    bc_loop_t *loop, bc_origin_t **out, char *err, size_t errlen);
/* o's request builder when o is an S3 origin, else NULL. */
const bc_s3_origin_t *bc_s3_origin_of(const bc_origin_t *o);

#endif
