/*
 * fuzz_range.c — the Range header (s3/s3_range.h): parsed, resolved
 * against object sizes and written back as Content-Range.
 *
 * Input: the header value (up to the first NUL or the end). The sizes are
 * fixed edge cases plus the length of the input and, when the input holds
 * a NUL, the decimal number after it. Checks the header's promises: a
 * resolved range lies inside the object, bc_range_parse agrees with
 * bc_range_parse_spec + bc_range_resolve, and Content-Range fits in
 * BC_RANGE_CR_LEN bytes.
 */
#include <inttypes.h>

#include "fuzz.h"
#include "s3/s3_range.h"

#define INPUT_MAX 1024

static void
check_size(const char *hdr, uint64_t size)
{
	bc_range_spec_t spec;
	bc_range_t r, r2;
	bc_range_result_t res, res2;
	char cr[BC_RANGE_CR_LEN];
	bool ok;

	memset(&r, 0, sizeof(r));
	res = bc_range_parse(hdr, size, &r);
	ok = bc_range_parse_spec(hdr, &spec);
	FUZZ_CHECK(ok == (res != BC_RANGE_NONE));
	if (ok) {
		FUZZ_CHECK(spec.suffix || spec.first <= spec.last);
		res2 = bc_range_resolve(&spec, size, &r2);
		FUZZ_CHECK(res2 == res);
		FUZZ_CHECK(res2 != BC_RANGE_NONE);
		if (res2 == BC_RANGE_OK)
			FUZZ_CHECK(r2.first == r.first && r2.last == r.last);
	}
	if (res == BC_RANGE_OK) {
		FUZZ_CHECK(r.first <= r.last);
		FUZZ_CHECK(r.last < size);
		FUZZ_CHECK(bc_range_length(&r) >= 1);
		FUZZ_CHECK(bc_range_length(&r) <= size);
		FUZZ_CHECK(bc_range_content_range(cr, sizeof(cr), &r,
		    size) == 0);
		if (spec.suffix) {
			FUZZ_CHECK(r.last == size - 1);
			FUZZ_CHECK(bc_range_length(&r) == (spec.last < size ?
			    spec.last : size));
		} else {
			FUZZ_CHECK(r.first == spec.first);
			FUZZ_CHECK(r.last == (spec.last < size ? spec.last :
			    size - 1));
		}
	}
	FUZZ_CHECK(bc_range_content_range(cr, sizeof(cr), NULL, size) == 0);
	/* too small a buffer is an error, never an overflow */
	(void)bc_range_content_range(cr, 8, res == BC_RANGE_OK ? &r : NULL,
	    size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t sizes[] = { 0, 1, 2, 9, 10, 11, 1000,
	    UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX };
	char *hdr;
	size_t hlen;

	if (size > INPUT_MAX)
		return 0;
	hdr = fuzz_strndup(data, size);
	hlen = strlen(hdr);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
		check_size(hdr, sizes[i]);
	check_size(hdr, (uint64_t)size);
	if (hlen < size) {
		char *end;
		uint64_t v = strtoull(hdr + hlen + 1, &end, 10);

		check_size(hdr, v);
	}
	free(hdr);
	return 0;
}
