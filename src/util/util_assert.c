/*
 * util_assert.c — the failure of an invariant (see util_assert.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/util_assert.h"

void
bc_assert_fail(const char *file, int line, const char *func, const char *expr)
{
	fprintf(stderr, "%s:%d: %s: assertion '%s' failed\n", file, line,
	    func, expr);
	fflush(stderr);
	abort();
}
