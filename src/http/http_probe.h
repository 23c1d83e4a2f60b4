/*
 * http_probe.h — the client side of GET /_bucketcache/health (or
 * /ready): what `bucketcache --probe[=ready]` (a container's HEALTHCHECK,
 * docker/healthcheck; a Kubernetes exec probe) runs against the gateway
 * its options configure, on that gateway's own --listen address.
 *
 * Main thread, blocking; bc_http_probe() needs curl_global_init().
 */
#ifndef BC_HTTP_PROBE_H
#define BC_HTTP_PROBE_H

#include <stddef.h>

#include "config/config.h"

#define BC_PROBE_PREFIX     "/_bucketcache/"   /* + health, ready */
#define BC_PROBE_TIMEOUT_MS 2000L   /* connect and answer, in all */

/*
 * Writes into url (urllen bytes) the URL a client on this host uses to
 * reach path on a server listening on la (--listen as config/ parsed it,
 * bc_config_listen_parse: a wildcard address is the loopback of its
 * family, localhost 127.0.0.1). Returns 0, or BC_ERANGE when url is too
 * small. Pure.
 */
int bc_http_probe_url(const bc_listen_addr_t *la, const char *path,
    char *url, size_t urllen);

/*
 * GETs path from the server at listen (bc_http_probe_url), no proxy,
 * within timeout_ms. Returns 0 when it answers 200; otherwise a negative
 * code (BC_ERANGE: a URL too long; BC_EIO: no answer or another status).
 * Either way msg (msglen bytes) gets one line: the URL and the status
 * with the body's first line, or why there was none.
 */
int bc_http_probe(const bc_listen_addr_t *la, const char *path,
    long timeout_ms, char *msg, size_t msglen);

#endif
