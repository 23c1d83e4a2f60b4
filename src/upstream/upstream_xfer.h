/*
 * upstream_xfer.h — one upstream HTTP exchange whose request body and
 * response body stream through bounded buffers between a client thread
 * (an MHD worker) and the loop thread (libcurl).
 *
 * Flow control: both buffers are bounded (BC_XFER_BUF bytes). When the
 * response buffer is full, curl is paused; when the request buffer is
 * empty, curl's read is paused; each is unpaused when the other side makes
 * room or data. When a client-side call answers "not now" (BC_EAGAIN), the
 * xfer calls wake(wake_arg) exactly once later, when that changes. wake
 * runs with the xfer's lock held, on any thread: it must only signal (e.g.
 * resume an MHD connection), never call back into the xfer.
 *
 * Retries: a request without a body is retried with jittered exponential
 * backoff on 500/503 answers, on connect/transport failures and on an
 * attempt that timed out (stall_timeout_ms, ttfb_timeout_ms), up to the
 * configured count, as long as nothing was handed to the client yet.
 *
 * Time limits (ttfb_timeout_ms and deadline_ms are enforced on the loop
 * thread with a libuv timer; 0 disables either):
 *   connect_timeout_ms  per attempt, to set up the connection (curl);
 *   ttfb_timeout_ms     per attempt, from the moment the request is wholly
 *                       sent (a request with a body: its last byte was
 *                       handed to curl; a bodiless one: the attempt's
 *                       start, connect included) until the answer's status
 *                       line arrives; past it the attempt fails and is
 *                       retried as above;
 *   deadline_ms         for the whole exchange, from its start (a request
 *                       with a body: from the end of its body, since the
 *                       client's upload speed is not the upstream's fault)
 *                       until the final answer's headers are in, all
 *                       attempts and backoff waits included; no attempt
 *                       starts past it (nor a retry whose backoff would
 *                       reach it: the exchange fails at once instead), and
 *                       the running one is failed;
 *   stall_timeout_ms    no byte moved for this long (curl's low-speed
 *                       limit), also while the body streams.
 * Once the final response headers are in, neither ttfb_timeout_ms nor
 * deadline_ms applies any more (a big body may stream for long). An
 * exchange ended by any of them fails with BC_ETIMEDOUT (counted in the
 * upstream_errors and upstream_timeouts stats).
 *
 * Ownership: refcounted. bc_xfer_new() returns one reference (the
 * client's); the loop holds its own while the transfer runs. The client
 * must call bc_xfer_detach() (no more wakes; cancels if unfinished) and
 * then bc_xfer_unref().
 */
#ifndef BC_UPSTREAM_XFER_H
#define BC_UPSTREAM_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "loop/loop.h"
#include "util/util_kv.h"

#define BC_XFER_BUF        (256 * 1024)
#define BC_XFER_MAX_HEADERS 128
#define BC_XFER_NO_BODY    UINT64_MAX
#define BC_XFER_UNKNOWN_LEN (UINT64_MAX - 1)   /* a body sent chunked */

typedef struct bc_xfer_s bc_xfer_t;
typedef void (*bc_xfer_wake_fn)(void *arg);
/* Collect mode: called once on the loop thread when the exchange is over
 * (x's lock not held); read the outcome with bc_xfer_headers() and
 * bc_xfer_take_body(). */
typedef void (*bc_xfer_done_fn)(bc_xfer_t *x, void *arg);
/* Collect mode: called once on the loop thread when the final response
 * headers are in, before any body byte; it may call bc_xfer_set_sink(). */
typedef void (*bc_xfer_headers_fn)(bc_xfer_t *x, void *arg, int status,
    const bc_kvlist_t *headers);
/* Sink mode: called on the loop thread after body bytes were written into
 * the sink; total is how many it holds now. */
typedef void (*bc_xfer_data_fn)(void *arg, size_t total);

typedef struct bc_xfer_opts_s {
	const char *method;            /* "GET", "PUT", ... */
	const char *url;               /* absolute, already encoded */
	const bc_kvlist_t *headers;    /* sent as given (copied) */
	uint64_t    body_len;          /* BC_XFER_NO_BODY: no request body;
					  BC_XFER_UNKNOWN_LEN: one of unknown
					  length (Transfer-Encoding: chunked)
					  that ends at bc_xfer_write_end() */
	unsigned    retries;           /* extra attempts for bodiless requests */
	uint64_t    connect_timeout_ms;
	uint64_t    stall_timeout_ms;  /* no byte moved for this long: fail */
	uint64_t    ttfb_timeout_ms;   /* per attempt: answer begins within */
	uint64_t    deadline_ms;       /* all attempts: final headers within */
	/* Collect mode (collect_max > 0): the response body is gathered into
	 * one buffer of at most collect_max bytes (more fails the exchange
	 * with BC_E2BIG) and on_done fires at the end; wake is not used. */
	size_t          collect_max;
	bc_xfer_done_fn on_done;
	void           *done_arg;       /* for on_done, on_headers, on_data */
	bc_xfer_headers_fn on_headers;  /* may be NULL */
	bc_xfer_data_fn    on_data;     /* may be NULL */
} bc_xfer_opts_t;

/* Zeroes o and sets what the configuration decides: retries and every
 * time limit (connect, TTFB, deadline, stall). */
void bc_xfer_opts_init(bc_xfer_opts_t *o, const bc_config_t *cfg);

/* Must be called once before any xfer (sets the loop's done callback). */
bc_loop_t *bc_xfer_loop_new(void);

/* Creates and starts an exchange. Returns NULL when out of memory or the
 * loop is stopping; wake never fires then. */
bc_xfer_t *bc_xfer_start(bc_loop_t *loop, const bc_xfer_opts_t *o,
    bc_xfer_wake_fn wake, void *wake_arg);

/* Client side, non-blocking, any thread. */

/* Queues request body bytes: returns how many it took (< len: the buffer
 * is full and wake fires when there is room), or a negative BC_E* when the
 * exchange already failed. */
ssize_t bc_xfer_write(bc_xfer_t *x, const void *p, size_t len);
/* No more request body (call once, after the last write). */
void    bc_xfer_write_end(bc_xfer_t *x);

/* 0 when the response status and headers are in (*status, *headers point
 * into the xfer, valid until unref), BC_EAGAIN when not yet (wake fires),
 * or a negative BC_E*: BC_ETIMEDOUT (upstream timed out), BC_EIO (could
 * not reach or talk to the upstream), BC_ECANCELED. */
int     bc_xfer_headers(bc_xfer_t *x, int *status,
    const bc_kvlist_t **headers);

/* Response body: >0 bytes copied, 0 at the end of the body, BC_EAGAIN
 * when none is buffered yet (wake fires), other negative BC_E* when the
 * transfer failed midway. */
ssize_t bc_xfer_read(bc_xfer_t *x, void *buf, size_t max);

/* Collect mode, from on_headers only: the body goes into buf (cap bytes,
 * owned by the caller, which must keep it alive until on_done) instead of
 * being gathered; more than cap bytes fails the exchange (BC_E2BIG). */
void     bc_xfer_set_sink(bc_xfer_t *x, uint8_t *buf, size_t cap);
/* Collect mode, after on_done: hands over the body (malloc'd, *len bytes;
 * free() it) and leaves the xfer without one. NULL when there is none. */
uint8_t *bc_xfer_take_body(bc_xfer_t *x, size_t *len);
/* How the exchange ended: 0 (the whole body arrived), a negative BC_E*
 * (failed, possibly after the headers), or BC_EAGAIN while running. */
int      bc_xfer_error(bc_xfer_t *x);
/* Microseconds from the last attempt's start to its end (fetch cost). */
uint64_t bc_xfer_elapsed_us(const bc_xfer_t *x);

/* Stops wakes; cancels the transfer when it is still running. */
void    bc_xfer_detach(bc_xfer_t *x);
void    bc_xfer_unref(bc_xfer_t *x);   /* NULL is a no-op */

/* Loop thread (bc_loop_stop's stop_fn): cancels every running exchange. */
void    bc_xfer_cancel_all(bc_loop_t *loop, void *unused);

#endif
