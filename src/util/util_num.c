/*
 * util_num.c — decimal numbers (see util_num.h).
 */
#include <string.h>

#include "util/util_error.h"
#include "util/util_num.h"

ssize_t
bc_u64_prefix(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return BC_ERANGE;
		v = v * 10 + d;
	}
	if (i > 0)
		*out = v;
	return (ssize_t)i;
}

bool
bc_u64_parse(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || bc_u64_prefix(s, n, &v) != (ssize_t)n)
		return false;
	*out = v;
	return true;
}

bool
bc_u64_parse_str(const char *s, uint64_t *out)
{
	return s != NULL && bc_u64_parse(s, strlen(s), out);
}
