/*
 * util_num.c — the one number parser (see util_num.h).
 */
#include <string.h>

#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_num.h"

/* The value of digit c in base, or -1. */
static int
digit(char c, int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t
bc_parse_u64_prefix(const char *s, size_t n, int base, uint64_t max,
    uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	int d;

	BC_CHECK(base == 10 || base == 16);
	for (i = 0; i < n; i++) {
		d = digit(s[i], base);
		if (d < 0)
			break;
		if ((uint64_t)d > max ||
		    v > (max - (uint64_t)d) / (uint64_t)base)
			return BC_ERANGE;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (i > 0)
		*out = v;
	return (ssize_t)i;
}

int
bc_parse_u64(const char *s, size_t n, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	ssize_t k;

	if (n == 0)
		return BC_EINVAL;
	k = bc_parse_u64_prefix(s, n, base, max, &v);
	if (k < 0)
		return (int)k;
	if ((size_t)k != n)
		return BC_EINVAL;
	*out = v;
	return 0;
}

int
bc_parse_u64_str(const char *s, int base, uint64_t max, uint64_t *out)
{
	if (s == NULL)
		return BC_EINVAL;
	return bc_parse_u64(s, strlen(s), base, max, out);
}

int
bc_parse_port(const char *s, size_t n, uint16_t *out)
{
	uint64_t v = 0;

	if (bc_parse_u64(s, n, 10, 65535, &v) < 0 || v == 0)
		return BC_EINVAL;
	*out = (uint16_t)v;
	return 0;
}

ssize_t
bc_u64_prefix(const char *s, size_t n, uint64_t *out)
{
	return bc_parse_u64_prefix(s, n, 10, UINT64_MAX, out);
}

bool
bc_u64_parse(const char *s, size_t n, uint64_t *out)
{
	return bc_parse_u64(s, n, 10, UINT64_MAX, out) == 0;
}

bool
bc_u64_parse_str(const char *s, uint64_t *out)
{
	return bc_parse_u64_str(s, 10, UINT64_MAX, out) == 0;
}
