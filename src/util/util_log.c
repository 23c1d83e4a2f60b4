/* util_log.c — leveled logging to stderr (see util_log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/util_log.h"

int bc_log_level = BC_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int
bc_log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

void
bc_log(int level, const char *fmt, ...)
{
	char line[1024], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ldZ bucketcache %s: %s\n", ts,
	    now.tv_nsec / 1000000, level_names[level < 0 ? 0 :
	    level > 3 ? 3 : level], line);
}
