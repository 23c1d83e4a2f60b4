/* util_error.c — names for BC_E* codes (negated errno values). */
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
