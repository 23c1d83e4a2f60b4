/*
 * util_log.h — leveled logging to stderr, one line per call.
 *
 * Thread-safe (one fprintf per line). The level is a global set once at
 * start-up by main; messages above it cost one integer comparison.
 */
#ifndef BC_UTIL_LOG_H
#define BC_UTIL_LOG_H

enum bc_log_level {
	BC_LOG_ERROR = 0,
	BC_LOG_WARN  = 1,
	BC_LOG_INFO  = 2,
	BC_LOG_DEBUG = 3,
};

extern int bc_log_level;

/* Parses "error|warn|info|debug"; returns the level or -1. */
int  bc_log_level_parse(const char *s);
void bc_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define BC_LOG(lvl, ...) do {                                   \
	if ((lvl) <= bc_log_level)                              \
		bc_log((lvl), __VA_ARGS__);                     \
} while (0)
#define BC_ERROR(...) BC_LOG(BC_LOG_ERROR, __VA_ARGS__)
#define BC_WARN(...)  BC_LOG(BC_LOG_WARN, __VA_ARGS__)
#define BC_INFO(...)  BC_LOG(BC_LOG_INFO, __VA_ARGS__)
#define BC_DEBUG(...) BC_LOG(BC_LOG_DEBUG, __VA_ARGS__)

#endif
