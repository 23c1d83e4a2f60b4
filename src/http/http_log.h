/*
 * http_log.h — the access log (--access-log json): one line per request
 * the front end answered or gave up on, a JSON object with
 *
 *   time        the request's end, UTC, RFC 3339 with milliseconds
 *   remote      the client's address (the socket's peer; relays' headers
 *               are not believed)
 *   method, op  the HTTP method and the S3 operation (GetObject, ...)
 *   bucket, key as the request named them ("" when none)
 *   status      the status answered (499: none, the client went first)
 *   bytes       response body bytes, bytes_in upload bytes
 *   duration    seconds from the request line to the end
 *   cache       hit, miss or partial for reads through the cache; null
 *   job         the job an object read counts toward (the
 *               x-bucketcache-job hint it may use, else its access key,
 *               else "anonymous"; http_object.c's rule); null for others
 *   request_id  the x-amz-request-id answered
 *   aborted     present (true) when the response did not complete
 *   truncated   present (true) when a field was cut to its bound
 *
 * to stderr or --access-log-file (opened O_APPEND: logrotate's
 * copytruncate is safe). Bounded: strings are cut (key at 1024 bytes,
 * others at 256), escaped (control characters as \u00XX, bytes that are
 * not UTF-8 as \ufffd), so a line is valid JSON and at most
 * BC_HTTP_LOG_LINE_MAX bytes. Lines are written whole, one write each,
 * under a mutex: MHD workers log concurrently. A failed write drops the
 * line (counted: access_log_dropped).
 */
#ifndef BC_HTTP_LOG_H
#define BC_HTTP_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "http/http_req.h"
#include "util/util_buf.h"

#define BC_HTTP_LOG_LINE_MAX 20480   /* > the worst line: http_log.c */

typedef struct bc_http_log_s bc_http_log_t;

/* One request's fields (strings may be NULL: null in the JSON). */
typedef struct bc_http_log_rec_s {
	double      time;        /* seconds since the Unix epoch */
	const char *remote, *method, *op, *bucket, *key, *cache, *job;
	const char *request_id;
	int         status;
	uint64_t    bytes, bytes_in;
	double      duration;    /* seconds */
	bool        aborted;
} bc_http_log_rec_t;

/* Opens the log cfg asks for: *out is NULL when --access-log is off.
 * Returns 0, or -1 with err set (a file that cannot be opened). */
int  bc_http_log_open(const bc_config_t *cfg, bc_http_log_t **out,
    char *err, size_t errlen);
/* Closes the file (not stderr). NULL is a no-op. No line may be being
 * written (the server has stopped). */
void bc_http_log_close(bc_http_log_t *l);
/* Writes r's line (ok: the response completed). Any thread; NULL l does
 * nothing. */
void bc_http_log_request(bc_http_log_t *l, const bc_http_req_t *r, bool ok);
/* The line for rec, newline included, appended to out. Pure. Returns 0,
 * or BC_ENOMEM / BC_E2BIG from the buffer. */
int  bc_http_log_format(bc_buf_t *out, const bc_http_log_rec_t *rec);
/* "hit", "miss", "partial" for an x-bucketcache response header value
 * (static strings), else NULL. */
const char *bc_http_log_outcome(const char *xbucketcache);

#endif
