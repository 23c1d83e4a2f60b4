/*
 * http_proxy.h — what the proxy handler (http_proxy.c) shares with the
 * handlers that relay a request they changed (http_delete.c).
 *
 * Threads: MHD worker threads, like the handlers.
 */
#ifndef BC_HTTP_PROXY_H
#define BC_HTTP_PROXY_H

#include "http/http_req.h"
#include "upstream/upstream.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

/* A relay of r as it came (upstream.h): its request, how it was signed,
 * its body's framing; wakes resume r. The caller may add the fields of a
 * rewritten body. */
void bc_proxy_relay_init(bc_http_req_t *r, bc_relay_t *rl);

/* Copies an upstream answer's headers onto resp, but the framing ones
 * MHD writes itself. */
void bc_proxy_copy_headers(struct MHD_Response *resp, const bc_kvlist_t *uh);

#endif
