/* util_time.c — see util_time.h. */
#include <time.h>

#include "util/util_time.h"

uint64_t
bc_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
