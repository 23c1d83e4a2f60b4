/*
 * http_warm_cli.h — `bucketcache warm`: the client side of a running
 * gateway's warm-up endpoint (http_warm.c), for a person or a job's
 * start-up script:
 *
 *   bucketcache warm s3://BUCKET[/PREFIX] [--endpoint URL] [--tier T]
 *       [--detach] [--admin-token TOKEN] [--interval SECONDS]
 *
 * It POSTs /_bucketcache/v1/warm?bucket=B&prefix=P[&tier=T] to the
 * gateway (--endpoint, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL,
 * else http://127.0.0.1:8080), then GETs its progress every --interval
 * (1 s) and draws a progress bar on stderr until the warm-up ends; with
 * --detach it prints the warm-up as started and returns (one of the same
 * prefix running already: it follows that one, or with --detach exits 1
 * with the gateway's 409). The call carries
 * the admin token (--admin-token, else BUCKETCACHE_ADMIN_TOKEN) when one
 * is given; otherwise it is signed with SigV4 when AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY are set (a client key warms what it may read),
 * and goes as it is (a local client is the operator) when they are not.
 * Interrupting the watch leaves the warm-up running.
 *
 * Exit status: 0 when the warm-up ended done with no object failed (or
 * was started, with --detach); 1 when it failed, was cancelled, an object
 * failed, or the gateway refused or could not be reached (its S3 error
 * code and message on stderr); 2 on bad arguments.
 *
 * Main thread, blocking; it owns curl's global state for its run.
 */
#ifndef BC_HTTP_WARM_CLI_H
#define BC_HTTP_WARM_CLI_H

#include <stddef.h>

/* Runs the subcommand; argv[0] is "warm". Returns the exit status. */
int bc_http_warm_cli(int argc, char **argv);

/*
 * "s3://BUCKET[/PREFIX]": the bucket (a valid name, into bucket, blen
 * bytes) and the prefix (may be "", a pointer into s). Returns 0, or
 * BC_EINVAL. Pure.
 */
int bc_http_warm_cli_target(const char *s, char *bucket, size_t blen,
    const char **prefix);

#endif
