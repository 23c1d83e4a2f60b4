/*
 * http_proxy.h — what the proxy handler (http_proxy.c) shares with the
 * handlers that forward a request they changed (http_delete.c).
 *
 * Threads: MHD worker threads, like the handlers.
 */
#ifndef BC_HTTP_PROXY_H
#define BC_HTTP_PROXY_H

#include "http/http_req.h"
#include "s3/s3_sigv4.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

/*
 * The upstream request for r, re-signed with the gateway's credentials:
 * its URL (r's query minus the client's authentication parameters) and
 * headers (r's minus the hop-by-hop and signing ones, minus drop — a
 * NULL-terminated list, may be NULL — plus add, may be NULL), signed with
 * payload_hash; *ctx gets the signature's context (aws-chunked re-signing
 * chains from it). An r->upstream_unsigned request is not signed (no
 * Authorization, X-Amz-Date or token; *ctx zeroed): the upstream decides.
 * Returns BC_S3E_NONE or InternalError.
 */
bc_s3err_t bc_proxy_request(bc_http_req_t *r, const char *payload_hash,
    const char *const *drop, const bc_kvlist_t *add, bc_buf_t *url,
    bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx);

/* Copies an upstream answer's headers onto resp, but the framing ones
 * MHD writes itself. */
void bc_proxy_copy_headers(struct MHD_Response *resp, const bc_kvlist_t *uh);

#endif
