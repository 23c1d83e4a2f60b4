/*
 * util_time.h — the clock the gateway measures durations with.
 *
 * Thread-safe.
 */
#ifndef BC_UTIL_TIME_H
#define BC_UTIL_TIME_H

#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC: for deadlines and durations, never for
 * dates. */
uint64_t bc_mono_ns(void);

#endif
