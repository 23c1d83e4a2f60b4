/*
 * upstream_loop.h — the upstream event loop: one thread running libuv,
 * which drives a libcurl multi handle (curl's multi-socket API on uv_poll
 * and uv_timer, as in curl's docs/examples/multi-uv.c).
 *
 * Threads: bc_loop_call() is the only entry point safe from any thread;
 * everything it runs, and every curl callback, runs on the loop thread.
 * Ownership: the loop owns the multi handle and its socket watchers; easy
 * handles belong to whoever added them (upstream_xfer.c), which removes
 * them before freeing.
 */
#ifndef BC_UPSTREAM_LOOP_H
#define BC_UPSTREAM_LOOP_H

#include <curl/curl.h>
#include <uv.h>

typedef struct bc_loop_s bc_loop_t;

/* Called on the loop thread when an easy handle added by its owner
 * finishes (CURLMSG_DONE). The owner removes and frees the handle. */
typedef void (*bc_loop_done_fn)(CURL *easy, CURLcode result);

typedef void (*bc_loop_fn)(bc_loop_t *loop, void *arg);

/* Creates the loop (not yet running). done is called for every finished
 * transfer. Returns NULL when out of memory or libuv/curl fail. */
bc_loop_t *bc_loop_new(bc_loop_done_fn done);
/* Starts the loop thread. Returns 0 or a negative BC_E* code. */
int  bc_loop_start(bc_loop_t *l);
/*
 * Runs fn(l, arg) on the loop thread, in call order. Thread-safe.
 * Returns 0, or BC_ECANCELED once the loop is stopping (fn never runs
 * then: the caller still owns arg), or BC_ENOMEM.
 */
int  bc_loop_call(bc_loop_t *l, bc_loop_fn fn, void *arg);
/* Runs stop_fn(l, arg) on the loop thread (to cancel transfers), refuses
 * further calls, waits until every handle is closed and joins the
 * thread. */
void bc_loop_stop(bc_loop_t *l, bc_loop_fn stop_fn, void *arg);
void bc_loop_free(bc_loop_t *l);   /* after stop; NULL is a no-op */

/* Loop thread only. */
CURLM     *bc_loop_multi(bc_loop_t *l);
uv_loop_t *bc_loop_uv(bc_loop_t *l);

#endif
