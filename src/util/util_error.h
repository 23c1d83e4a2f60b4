/*
 * util_error.h — bucketcache's error numbers.
 *
 * Functions return 0 (or a count) on success and a negative BC_E* code on
 * failure; bc_strerror() names a code. The codes are negated errno values
 * where one fits, so a system call's -errno passes through unchanged.
 */
#ifndef BC_UTIL_ERROR_H
#define BC_UTIL_ERROR_H

#include <errno.h>
#include <stddef.h>

#define BC_ENOMEM    (-ENOMEM)
#define BC_EINVAL    (-EINVAL)
#define BC_ENOENT    (-ENOENT)
#define BC_EEXIST    (-EEXIST)
#define BC_EIO       (-EIO)
#define BC_ERANGE    (-ERANGE)
#define BC_E2BIG     (-E2BIG)
#define BC_EAGAIN    (-EAGAIN)
#define BC_ECANCELED (-ECANCELED)
#define BC_ETIMEDOUT (-ETIMEDOUT)
#define BC_EACCES    (-EACCES)
#define BC_EPROTO    (-EPROTO)
#define BC_EINPROGRESS (-EINPROGRESS)
#define BC_ENOSPC    (-ENOSPC)
#define BC_ENOTSUP   (-ENOTSUP)
#define BC_EPIPE     (-EPIPE)
#define BC_ENOTCONN  (-ENOTCONN)
#define BC_ECONNREFUSED (-ECONNREFUSED)
#define BC_ECONNRESET (-ECONNRESET)
#define BC_EKEYEXPIRED (-EKEYEXPIRED)   /* upstream credentials expired */

/* Returns a static description of a BC_E* (or -errno) code. */
const char *bc_strerror(int code);

/* Formats a one-line error into the caller's buffer err (errlen bytes,
 * redis anet.h style); err NULL or errlen 0: does nothing. */
void bc_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
