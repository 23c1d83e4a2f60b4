/*
 * fuzz_server.h — the real gateway for the fuzz targets that drive it over
 * TCP (fuzz_http_request, fuzz_admin): started once in the target's
 * process, composed as src/main.c composes the daemon, in front of a
 * file:// origin whose directory holds the target's fixture; and one
 * exchange per input on a fresh connection.
 *
 * Composition: the loop, the file origin, the cache (memory tier, its
 * stats rows handed to stats/) and then, when opts->jobs, the jobs
 * registry (bc_jobs_new with main's bounds, its oracle given to the
 * cache), the prefetcher, scale/ and the warm-ups' registry, with main's
 * options; then the
 * server, listening on 127.0.0.1 on a free port, with
 *
 *   bucketcache --upstream file://ROOT --listen 127.0.0.1:PORT ARGS...
 *
 * where ROOT is a fresh directory (under /dev/shm when writable) and ARGS
 * opts->args. Everything is stopped and freed at exit, in main's reverse
 * order, and ROOT removed.
 *
 * Threads: every call from the target's thread (libFuzzer's, or replay's
 * main). Everything aborts (FUZZ_CHECK) when the harness itself fails:
 * nothing here reports an error to its caller.
 */
#ifndef BC_FUZZ_SERVER_H
#define BC_FUZZ_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "cache/cache.h"
#include "prefetch/prefetch_jobs.h"
#include "scale/scale.h"

/* A file of the fixture: path under ROOT ("bkt/a.txt"), and its bytes:
 * data, or len bytes of a fixed pattern when data is NULL. Directories on
 * the path are made. */
typedef struct fuzz_file_s {
	const char *path;
	const char *data;
	size_t      len;
} fuzz_file_t;

typedef struct fuzz_server_opts_s {
	const char        *name;      /* the target's, for messages */
	const char *const *args;      /* options after --upstream and
					 --listen, NULL-terminated */
	const fuzz_file_t *files;     /* the fixture, nfiles of them */
	size_t             nfiles;
	const char        *bucket;    /* whose cache fuzz_server_reset drops */
	bool               jobs;      /* with jobs, prefetcher, scale/ and
					 warm-ups */
} fuzz_server_opts_t;

/* Starts the server (the first call only; later calls do nothing). The
 * options are kept: they must live as long as the process. */
void fuzz_server_start(const fuzz_server_opts_t *o);

/* The parts, as the server holds them (NULL without opts->jobs). */
bc_cache_t *fuzz_server_cache(void);
bc_jobs_t  *fuzz_server_jobs(void);
bc_scale_t *fuzz_server_scale(void);
/* The server's port (network byte order aside: a plain number). */
int fuzz_server_port(void);

/* ROOT back to the fixture alone, and the bucket's cached objects
 * dropped (they changed behind the gateway's back). */
void fuzz_server_reset(void);

/*
 * One exchange: connects to the server from the next of 62500 loopback
 * addresses (127.1.1.1 up: the client ends first, so each address keeps
 * its ports in TIME_WAIT a while), writes data[0..size) (stopping early
 * when the server closes), waits up to first_byte_ms for the answer to
 * begin, shuts the connection for writing and reads until the server
 * closes it or is silent for FUZZ_READ_IDLE_MS. MHD 0.9.75 (epoll,
 * edge-triggered) can miss an end of input that arrives together with a
 * request's last bytes and then keeps the connection until a deadline:
 * hence the wait before the shutdown.
 *
 * The first cap - 1 bytes of the answer go to answer (NUL-terminated;
 * answer may be NULL when cap is 0). Returns the bytes the answer had.
 */
#define FUZZ_READ_IDLE_MS 2000
size_t fuzz_server_exchange(const void *data, size_t size, int first_byte_ms,
    char *answer, size_t cap);

#endif
