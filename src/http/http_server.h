/*
 * http_server.h — the S3 front end: a libmicrohttpd daemon (thread pool,
 * epoll) that parses each request, authenticates it, and hands it to the
 * handler for its route (admin, cached object reads, or the proxy that relays to the origin).
 *
 * Start/drain/stop from the main thread only. The server reads the
 * finished config; it does not own it or the loop.
 *
 * The drain (bc_server_drain; main.c decides when, http_drain.h): the
 * listening socket stops listening, so new connections are refused;
 * open connections stay, and what arrives on them is answered with
 * "Connection: close": GET/HEAD of /_bucketcache/health (200), /ready
 * (503), /stats and /metrics as usual, anything else 503
 * ServiceUnavailable (S3 XML) with Retry-After. Responses already under
 * way go on until they end or bc_server_stop cuts them.
 */
#ifndef BC_HTTP_SERVER_H
#define BC_HTTP_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "http/http_conns.h"
#include "http/http_req.h"
#include "s3/s3_sigv4.h"
#include "loop/loop.h"
#include "upstream/upstream.h"

struct bc_server_s {
	const bc_config_t  *cfg;
	struct MHD_Daemon  *mhd;
	bc_loop_t          *loop;     /* main's */
	bc_origin_t        *origin;   /* S3 or file:// (main's) */
	struct bc_cache_s  *cache;   /* NULL when not caching (main's) */
	struct bc_jobs_s   *jobs;    /* training jobs and plans; NULL: no
					jobs API (main's) */
	struct bc_prefetch_s *prefetch;  /* NULL: no prefetching (main's) */
	struct bc_scale_s  *scale;   /* rates and sizes; NULL (main's) */
	struct bc_warm_s   *warm;    /* warm-ups; NULL: none (main's) */
	struct bc_cache_list_s *lists;  /* the list cache; NULL (main's) */
	bc_conns_t          conns;           /* connection deadlines */
	struct sockaddr_storage wake_addr;   /* the listening address, as a
						client reaches it (conns' wake) */
	socklen_t           wake_len;
	/* presigned-URL verdicts; client keys are fixed for the server's
	 * life, so it is never cleared (s3_verdicts.h) */
	struct bc_s3_verdicts_s *verdicts;
	/* the drain */
	_Atomic bool        draining;
	_Atomic uint64_t    inflight;  /* requests from their line to their
					  end (MHD's completion) */
	int                 idle_fd;   /* eventfd: written whenever inflight
					  reaches 0 while draining */
	int                 listen_fd; /* once quiesced: shut down, closed
					  after MHD stops (-1 before) */
	struct bc_http_log_s *access_log;  /* --access-log; NULL: off */
};

/* What main builds (main.c) and the server serves; all main's, and all
 * must outlive the server. */
typedef struct bc_server_parts_s {
	bc_loop_t            *loop;      /* where the origin's exchanges run */
	bc_origin_t          *origin;    /* S3 or file:// */
	struct bc_cache_s    *cache;     /* NULL: not caching */
	struct bc_jobs_s     *jobs;      /* whose cursors GETs move; NULL */
	struct bc_prefetch_s *prefetch;  /* fed by hints and plans; NULL */
	struct bc_scale_s    *scale;     /* told reads, waits, plans; NULL */
	struct bc_warm_s     *warm;      /* warm-ups; NULL */
	struct bc_cache_list_s *lists;   /* cached listings; NULL */
} bc_server_parts_t;

/* Starts serving cfg->listen what p names. Returns 0, or -1 with err
 * set. */
int  bc_server_start(bc_server_t *s, const bc_config_t *cfg,
    const bc_server_parts_t *p, char *err, size_t errlen);
/* Starts the drain (see above); a second call does nothing. Returns a
 * descriptor (the server's) that polls readable each time no request is
 * in flight any more; read 8 bytes to clear it. */
int  bc_server_drain(bc_server_t *s);
/* true from bc_server_drain on (any thread). */
bool bc_server_draining(const bc_server_t *s);
/* Requests in flight: from their request line until answered or given
 * up (any thread). */
uint64_t bc_server_inflight(const bc_server_t *s);
/* Client connections open (any thread). */
unsigned bc_server_connections(bc_server_t *s);
/* Stops accepting (unless drained), stops the loop (cancelling the
 * origin's exchanges, which resumes every waiting connection), ends
 * every connection (cutting responses still under way), frees the
 * daemon. */
void bc_server_stop(bc_server_t *s);

#endif
