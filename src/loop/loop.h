/*
 * loop.h — the event loop: one thread running libuv, which drives
 * a libcurl multi handle (curl's multi-socket API on uv_poll and uv_timer,
 * as in curl's docs/examples/multi-uv.c), periodic timers and a work pool
 * (libuv's thread pool).
 *
 * Threads:
 * - Any thread may call bc_loop_call, bc_loop_work, bc_loop_timer_new and
 *   bc_loop_timer_free (the loop thread too, including from inside the
 *   callbacks they run).
 * - The loop thread runs everything bc_loop_call runs, timer callbacks,
 *   every work's after(), and every curl callback. Only it may touch
 *   bc_loop_multi() and bc_loop_uv().
 * - A work's work() runs on a thread of libuv's pool (shared by every
 *   loop in the process, UV_THREADPOOL_SIZE threads, 4 by default). It
 *   must not touch the loop's handles; it may call the functions above.
 * - bc_loop_new, _start, _stop and _free belong to the loop's owner, on
 *   a thread other than the loop thread.
 *
 * Stopping (bc_loop_stop): from the moment it is called, bc_loop_call and
 * bc_loop_work return BC_ECANCELED and bc_loop_timer_new NULL. What was
 * accepted before still happens, in this order on the loop thread: the
 * calls queued so far, in order; stop_fn; every timer is closed (its fn
 * never runs again; its owner still calls bc_loop_timer_free, before
 * bc_loop_free); every other handle is closed. Then the loop waits for
 * every accepted work: nothing is cancelled, so a work that has not
 * started yet still runs, and its after() runs on the loop thread with the
 * loop stopping (calls and new work refused). bc_loop_stop returns after
 * the last after() returned. A loop freed without having been started
 * goes through the same steps on the freeing thread.
 *
 * Ownership: the loop owns the multi handle and its socket watchers; easy
 * handles belong to whoever added them (upstream_xfer.c), which removes
 * them before freeing.
 */
#ifndef BC_LOOP_H
#define BC_LOOP_H

#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

typedef struct bc_loop_s bc_loop_t;
typedef struct bc_loop_timer_s bc_loop_timer_t;

/* Called on the loop thread when an easy handle added by its owner
 * finishes (CURLMSG_DONE). The owner removes and frees the handle. */
typedef void (*bc_loop_done_fn)(CURL *easy, CURLcode result);

typedef void (*bc_loop_fn)(bc_loop_t *loop, void *arg);
typedef void (*bc_loop_work_fn)(void *arg);

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

/*
 * Runs work(arg) on libuv's thread pool, then after(l, arg) on the loop
 * thread (after may be NULL). Thread-safe; works run concurrently and
 * complete in any order. Returns 0, and then both run exactly once, even
 * when the loop stops in between (see "Stopping" above); or BC_EINVAL
 * (work NULL), BC_ENOMEM, or BC_ECANCELED once the loop is stopping, and
 * then neither ever runs (the caller still owns arg).
 */
int  bc_loop_work(bc_loop_t *l, bc_loop_work_fn work, bc_loop_fn after,
    void *arg);

/*
 * Runs fn(l, arg) on the loop thread every period_ms (> 0), the first
 * time period_ms from now (libuv timer: a late run is not made up for).
 * Thread-safe. Returns the timer, which its owner frees with
 * bc_loop_timer_free, or NULL (period_ms 0, fn NULL, out of memory, or
 * the loop stopping: fn never runs then).
 */
bc_loop_timer_t *bc_loop_timer_new(bc_loop_t *l, uint64_t period_ms,
    bc_loop_fn fn, void *arg);
/*
 * Stops and frees t; NULL is a no-op. Callable from any thread, from
 * inside t's own fn, and after bc_loop_stop (but before bc_loop_free).
 * Once it returns, fn never starts again, and no run of fn is in
 * progress on the loop thread unless the caller is that run: called from
 * another thread while fn runs, it blocks until that run returns (so it
 * must not be called holding anything fn waits for). The handle's memory
 * goes once the loop thread has closed it; arg stays the caller's.
 */
void bc_loop_timer_free(bc_loop_timer_t *t);

/* Runs stop_fn(l, arg) on the loop thread (to cancel transfers), refuses
 * further calls, closes timers and handles, waits for every accepted
 * work's after() and joins the thread (see "Stopping" above). */
void bc_loop_stop(bc_loop_t *l, bc_loop_fn stop_fn, void *arg);
void bc_loop_free(bc_loop_t *l);   /* after stop; NULL is a no-op */

/* Loop thread only. */
CURLM     *bc_loop_multi(bc_loop_t *l);
uv_loop_t *bc_loop_uv(bc_loop_t *l);

#endif
