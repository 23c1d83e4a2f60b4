/*
 * upstream_target.h — where an S3 request goes upstream: URL, Host and the
 * decoded path that SigV4 signs, for path-style or virtual-hosted
 * addressing. Pure; used by the proxy and by cache fills so both address
 * and sign the upstream the same way.
 */
#ifndef BC_UPSTREAM_TARGET_H
#define BC_UPSTREAM_TARGET_H

#include <stdbool.h>

#include "util/util_buf.h"
#include "util/util_kv.h"

typedef struct bc_upstream_ep_s {
	const char *scheme_host;   /* "http://h:p" */
	const char *host;          /* "h:p" */
	bool        virtual_style; /* bucket.h:p/key rather than h:p/bucket/key */
} bc_upstream_ep_t;

/*
 * Appends to url the full URL (canonical query from query, which may be
 * NULL), to host the Host header value, and to path the decoded path that
 * is signed. bucket "" addresses the service; key "" the bucket (with a
 * trailing '/' when bucket_slash). Returns 0 or BC_ENOMEM.
 */
int bc_upstream_target(const bc_upstream_ep_t *ep, const char *bucket,
    const char *key, bool bucket_slash, const bc_kvlist_t *query,
    bc_buf_t *url, bc_buf_t *host, bc_buf_t *path);

#endif
