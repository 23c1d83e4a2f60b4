/*
 * fuzz_metablob.c — the object metadata blob lower tiers keep
 * (cache/cache_metablob.h), which comes back from a disk.
 *
 * Input: the blob. Checks the decoder's promises: it accepts or refuses
 * (BC_EPROTO) the whole; what it accepts has an ETag of 1..131 bytes and
 * at most BC_METABLOB_HEADERS_MAX headers whose names are tokens and
 * whose values carry no CR, LF or NUL; and it encodes back to the very
 * bytes given (one blob, one encoding).
 */
#include "fuzz.h"
#include "cache/cache_metablob.h"
#include "util/util_error.h"

static bool
tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' &&
	    strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bc_objmeta_t m;
	bc_buf_t b = BC_BUF_INIT;
	uint64_t validated = 0;
	int rv;

	rv = bc_cache_metablob_decode(data, size, &m, &validated);
	FUZZ_CHECK(rv == 0 || rv == BC_EPROTO);
	if (rv != 0) {
		FUZZ_CHECK(m.headers.n == 0);
		return 0;
	}
	FUZZ_CHECK(strlen(m.etag) >= 1 && strlen(m.etag) < sizeof(m.etag));
	FUZZ_CHECK(strpbrk(m.etag, "\r\n") == NULL);
	FUZZ_CHECK(m.headers.n <= BC_METABLOB_HEADERS_MAX);
	for (size_t i = 0; i < m.headers.n; i++) {
		const char *n = m.headers.v[i].name;

		FUZZ_CHECK(n[0] != '\0' &&
		    strlen(n) <= BC_METABLOB_NAME_MAX);
		for (; *n != '\0'; n++)
			FUZZ_CHECK(tchar((unsigned char)*n));
		FUZZ_CHECK(strpbrk(m.headers.v[i].value, "\r\n") == NULL);
		FUZZ_CHECK(strlen(m.headers.v[i].value) <=
		    BC_METABLOB_VALUE_MAX);
	}
	FUZZ_CHECK(bc_cache_metablob_encode(&b, &m, validated) == 0);
	FUZZ_CHECK(b.len == size && memcmp(b.data, data, size) == 0);
	bc_buf_fini(&b);
	bc_objmeta_fini(&m);
	return 0;
}
