/* s3_range.c — single byte-range Range headers, S3 style (see s3_range.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_range.h"
#include "util/util_error.h"
#include "util/util_num.h"

/* A run of decimal digits: where it starts, its length, its value
 * saturated at UINT64_MAX. */
typedef struct num_s {
	const char *s;
	size_t      n;
	uint64_t    v;
} num_t;

static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Reads digits from *p; false when there is none. */
static bool
read_num(const char **p, const char *end, num_t *out)
{
	const char *s = *p;

	out->s = s;
	out->v = 0;
	while (s < end && *s >= '0' && *s <= '9')
		s++;
	out->n = (size_t)(s - out->s);
	/* past UINT64_MAX: saturated (num_cmp compares the digits) */
	if (out->n > 0 && bc_parse_u64(out->s, out->n, 10, UINT64_MAX,
	    &out->v) < 0)
		out->v = UINT64_MAX;
	*p = s;
	return out->n > 0;
}

/* Exact comparison of two digit runs of any length: <0, 0, >0. */
static int
num_cmp(const num_t *a, const num_t *b)
{
	const char *as = a->s, *bs = b->s;
	size_t an = a->n, bn = b->n;

	while (an > 1 && *as == '0') {
		as++;
		an--;
	}
	while (bn > 1 && *bs == '0') {
		bs++;
		bn--;
	}
	if (an != bn)
		return an < bn ? -1 : 1;
	return memcmp(as, bs, an);
}

bool
bc_range_parse_spec(const char *hdr, bc_range_spec_t *out)
{
	const char *p, *end;
	num_t a, b;
	size_t len;

	if (hdr == NULL)
		return false;
	len = strnlen(hdr, BC_RANGE_MAX_HEADER + 1);
	if (len > BC_RANGE_MAX_HEADER)
		return false;
	p = hdr;
	end = hdr + len;
	while (p < end && is_ows(*p))
		p++;
	while (end > p && is_ows(end[-1]))
		end--;
	if ((size_t)(end - p) < 6 || strncasecmp(p, "bytes=", 6) != 0)
		return false;
	p += 6;
	while (p < end && is_ows(*p))
		p++;
	if (p < end && *p == '-') {
		/* suffix-byte-range-spec */
		p++;
		if (!read_num(&p, end, &b) || p != end)
			return false;
		out->suffix = true;
		out->first = 0;
		out->last = b.v;
		return true;
	}
	if (!read_num(&p, end, &a) || p == end || *p != '-')
		return false;
	p++;
	if (p == end) {
		out->suffix = false;
		out->first = a.v;
		out->last = UINT64_MAX;
		return true;
	}
	if (!read_num(&p, end, &b) || p != end)
		return false;
	if (num_cmp(&b, &a) < 0)
		return false;   /* last < first: invalid, ignored */
	out->suffix = false;
	out->first = a.v;
	out->last = b.v;
	return true;
}

bc_range_result_t
bc_range_resolve(const bc_range_spec_t *spec, uint64_t size,
    bc_range_t *out)
{
	if (size == 0)
		return BC_RANGE_UNSATISFIABLE;
	if (spec->suffix) {
		if (spec->last == 0)
			return BC_RANGE_UNSATISFIABLE;
		out->first = spec->last >= size ? 0 : size - spec->last;
		out->last = size - 1;
		return BC_RANGE_OK;
	}
	if (spec->first >= size)
		return BC_RANGE_UNSATISFIABLE;
	out->first = spec->first;
	out->last = spec->last >= size ? size - 1 : spec->last;
	return BC_RANGE_OK;
}

bc_range_result_t
bc_range_parse(const char *hdr, uint64_t size, bc_range_t *out)
{
	bc_range_spec_t spec;
	bc_range_t r;
	bc_range_result_t res;

	if (!bc_range_parse_spec(hdr, &spec))
		return BC_RANGE_NONE;
	res = bc_range_resolve(&spec, size, &r);
	if (res == BC_RANGE_OK)
		*out = r;
	return res;
}

uint64_t
bc_range_length(const bc_range_t *r)
{
	return r->last - r->first + 1;
}

int
bc_range_content_range(char *out, size_t len, const bc_range_t *r,
    uint64_t size)
{
	int n;

	if (r != NULL)
		n = snprintf(out, len, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
		    r->first, r->last, size);
	else
		n = snprintf(out, len, "bytes */%" PRIu64, size);
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			out[0] = '\0';
		return BC_E2BIG;
	}
	return 0;
}
