/*
 * fuzz_cond.c — conditional headers (s3/s3_cond.h): ETag lists, HTTP
 * dates, and their evaluation in the three modes.
 *
 * Input: one byte of flags, then LF-separated fields: If-Match,
 * If-None-Match, If-Modified-Since, If-Unmodified-Since, the object's
 * ETag and its Last-Modified (decimal seconds). Flag bit i (0-3) makes
 * header i present (an absent one is NULL even when its field has text).
 * Each is evaluated as request headers and as x-amz-copy-source-if-*.
 * Checks: every parsed date formats and parses back to itself, and the
 * evaluation returns one of its three answers.
 */
#include <time.h>

#include "fuzz.h"
#include "s3/s3_cond.h"

#define INPUT_MAX 2048
#define NFIELDS   6

static const char *const names[4] = { "If-Match", "If-None-Match",
    "If-Modified-Since", "If-Unmodified-Since" };
static const char *const copy_names[4] = { "x-amz-copy-source-if-match",
    "x-amz-copy-source-if-none-match",
    "x-amz-copy-source-if-modified-since",
    "x-amz-copy-source-if-unmodified-since" };

static void
check_date(const char *s)
{
	char buf[BC_HTTP_DATE_LEN], iso[25];
	time_t t, t2;

	if (bc_http_date_parse(s, &t) < 0)
		return;
	bc_http_date(t, buf);
	FUZZ_CHECK(bc_http_date_parse(buf, &t2) == 0);
	FUZZ_CHECK(t2 == t);
	bc_iso8601_date(t, iso);
	FUZZ_CHECK(strlen(iso) == 24);
}

static void
eval_all(const bc_cond_t *c, const char *etag, time_t lm)
{
	static const bc_cond_mode_t modes[] = { BC_COND_READ, BC_COND_WRITE,
	    BC_COND_COPY };

	for (size_t m = 0; m < 3; m++) {
		bc_s3err_t e = bc_cond_eval(c, modes[m], etag, lm);

		FUZZ_CHECK(e == BC_S3E_NONE || e == BC_S3E_PreconditionFailed ||
		    (e == BC_S3E_NotModified && modes[m] == BC_COND_READ));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const time_t fixed[] = { 0, 784111776, 784111777, 784111778,
	    -1, (time_t)253402300799LL, (time_t)INT32_MAX };
	const char *f[NFIELDS] = { "", "", "", "", "", "" };
	bc_kvlist_t h = BC_KVLIST_INIT, ch = BC_KVLIST_INIT;
	bc_cond_t c, hc, cc;
	char *text, *p, buf[BC_HTTP_DATE_LEN];
	time_t lm;
	unsigned flags;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	flags = data[0];
	text = fuzz_strndup(data + 1, size - 1);
	p = text;
	for (size_t i = 0; i < NFIELDS && p != NULL; i++) {
		char *nl = strchr(p, '\n');

		if (nl != NULL)
			*nl++ = '\0';
		f[i] = p;
		p = nl;
	}
	c.if_match = flags & 1 ? f[0] : NULL;
	c.if_none_match = flags & 2 ? f[1] : NULL;
	c.if_modified_since = flags & 4 ? f[2] : NULL;
	c.if_unmodified_since = flags & 8 ? f[3] : NULL;
	for (size_t i = 0; i < 4; i++) {
		if (!(flags & (1u << i)))
			continue;
		FUZZ_CHECK(bc_kv_add(&h, names[i], f[i]) == 0);
		FUZZ_CHECK(bc_kv_add(&ch, copy_names[i], f[i]) == 0);
	}
	bc_cond_from_headers(&hc, &h);
	bc_cond_from_copy_headers(&cc, &ch);
	FUZZ_CHECK(bc_cond_any(&hc) == ((flags & 15) != 0));
	FUZZ_CHECK(bc_cond_any(&cc) == bc_cond_any(&hc));

	lm = (time_t)strtoll(f[5], NULL, 10);
	eval_all(&c, f[4], lm);
	eval_all(&hc, f[4], lm);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		eval_all(&cc, f[4], fixed[i]);
	for (size_t i = 0; i < 2; i++) {
		(void)bc_cond_etag_match(f[i], f[4], false);
		(void)bc_cond_etag_match(f[i], f[4], true);
	}
	for (size_t i = 0; i < NFIELDS; i++)
		check_date(f[i]);
	bc_http_date(lm, buf);
	check_date(buf);
	bc_kv_fini(&h);
	bc_kv_fini(&ch);
	free(text);
	return 0;
}
