/*
 * http_drain.h — the graceful drain's state machine: what a stop signal
 * does, when the drain ends, and how long the process may wait for it.
 *
 *   SERVING --signal--> DRAINING --no response in flight-----> DONE (IDLE)
 *      |                    |------drain timeout passed------> DONE (TIMEOUT)
 *      |                    `------another signal------------> DONE (SIGNAL)
 *      `--signal, drain timeout 0----------------------------> DONE (OFF)
 *
 * Pure: it reads no clock and touches no server; main.c feeds it the
 * signals, the time (CLOCK_MONOTONIC ns) and the number of responses in
 * flight, and does what the state says (bc_server_drain, bc_server_stop,
 * an immediate exit after a second signal). Not thread-safe: one caller.
 */
#ifndef BC_HTTP_DRAIN_H
#define BC_HTTP_DRAIN_H

#include <stdint.h>

typedef enum bc_drain_state_e {
	BC_DRAIN_SERVING,    /* no stop asked yet */
	BC_DRAIN_DRAINING,   /* stop asked: responses in flight finish */
	BC_DRAIN_DONE,       /* stop now (see bc_drain_end_t for why) */
} bc_drain_state_t;

typedef enum bc_drain_end_e {
	BC_DRAIN_END_NONE,      /* not done */
	BC_DRAIN_END_OFF,       /* drain timeout 0: no drain at all */
	BC_DRAIN_END_IDLE,      /* the last response in flight ended */
	BC_DRAIN_END_TIMEOUT,   /* the drain timeout passed: the rest are cut */
	BC_DRAIN_END_SIGNAL,    /* a second signal: exit at once */
} bc_drain_end_t;

typedef struct bc_drain_s {
	bc_drain_state_t state;
	bc_drain_end_t   end;
	uint64_t         timeout_ns;    /* 0: no drain */
	uint64_t         start_ns;      /* when the first signal came */
	uint64_t         deadline_ns;   /* start_ns + timeout_ns */
	uint64_t         end_ns;        /* when it became DONE */
} bc_drain_t;

/* SERVING, with a drain of at most timeout_ns (0: none). */
void bc_drain_init(bc_drain_t *d, uint64_t timeout_ns);
/* A stop signal at now_ns: SERVING goes DRAINING (DONE/OFF with no
 * timeout), DRAINING goes DONE/SIGNAL; DONE stays as it is. Returns the
 * new state. */
bc_drain_state_t bc_drain_signal(bc_drain_t *d, uint64_t now_ns);
/* While DRAINING: DONE/IDLE when inflight is 0, else DONE/TIMEOUT once
 * now_ns reaches the deadline. Other states are left as they are.
 * Returns the new state. */
bc_drain_state_t bc_drain_check(bc_drain_t *d, uint64_t now_ns,
    uint64_t inflight);
/* While DRAINING: nanoseconds from now_ns to the deadline (0 once it
 * passed); otherwise 0. */
uint64_t bc_drain_left_ns(const bc_drain_t *d, uint64_t now_ns);
/* "idle", "timeout", ... for logs. */
const char *bc_drain_end_name(bc_drain_end_t end);

#endif
