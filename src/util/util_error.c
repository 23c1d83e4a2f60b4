/* util_error.c — names for BC_E* codes (negated errno values). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/util_error.h"

const char *
bc_strerror(int code)
{
	if (code == 0)
		return "success";
	if (code > 0)
		return "unknown error";
	return strerror(-code);
}

void
bc_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
