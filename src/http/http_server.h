/*
 * http_server.h — the S3 front end: a libmicrohttpd daemon (thread pool,
 * epoll) that parses each request, authenticates it, and hands it to the
 * handler for its route (admin, file backend or upstream proxy).
 *
 * Start/stop from the main thread only. The server reads the finished
 * config; it does not own it or the loop.
 */
#ifndef BC_HTTP_SERVER_H
#define BC_HTTP_SERVER_H

#include <stddef.h>

#include "config/config.h"
#include "http/http_conns.h"
#include "http/http_req.h"
#include "s3/s3_sigv4.h"
#include "upstream/upstream_loop.h"
#include "upstream/upstream_s3.h"

struct bc_server_s {
	const bc_config_t  *cfg;
	struct MHD_Daemon  *mhd;
	bc_loop_t          *loop;     /* NULL with a file:// upstream */
	const struct bc_handler_s *backend;
	/* an http(s) upstream: address, credentials, request building;
	 * NULL with file:// (main's) */
	const bc_s3_origin_t *origin;
	struct bc_cache_s  *cache;   /* NULL when not caching (main's) */
	bc_conns_t          conns;           /* connection deadlines */
	/* presigned-URL verdicts; client keys are fixed for the server's
	 * life, so it is never cleared (s3_verdicts.h) */
	struct bc_s3_verdicts_s *verdicts;
};

/* Starts serving cfg->listen what main built (main.c): an http(s)
 * upstream through origin on loop, fronted by cache (NULL: not caching),
 * or the file:// store (origin and loop NULL). They must outlive the
 * server. Returns 0, or -1 with err set. */
int  bc_server_start(bc_server_t *s, const bc_config_t *cfg, bc_loop_t *loop,
    const bc_s3_origin_t *origin, struct bc_cache_s *cache, char *err,
    size_t errlen);
/* Stops accepting, ends every connection, frees the daemon. */
void bc_server_stop(bc_server_t *s);

#endif
