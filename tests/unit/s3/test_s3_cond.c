/* test_s3_cond.c — conditional requests and HTTP dates (s3_cond.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_cond.h"
#include "util/util_error.h"

#define ETAG  "\"d41d8cd98f00b204e9800998ecf8427e\""
#define OTHER "\"00000000000000000000000000000000\""
/* Sun, 06 Nov 1994 08:49:37 GMT */
#define LM    ((time_t)784111777)
#define D_EQ     "Sun, 06 Nov 1994 08:49:37 GMT"
#define D_BEFORE "Sun, 06 Nov 1994 08:49:36 GMT"
#define D_AFTER  "Sun, 06 Nov 1994 08:49:38 GMT"

#define N  BC_S3E_NONE
#define PF BC_S3E_PreconditionFailed
#define NM BC_S3E_NotModified

typedef struct {
	const char    *im, *inm, *ims, *ius;
	bc_cond_mode_t mode;
	bc_s3err_t     want;
} cond_case_t;

static const cond_case_t cases[] = {
	/* nothing */
	{ NULL, NULL, NULL, NULL, BC_COND_READ, N },
	/* If-Match alone */
	{ ETAG, NULL, NULL, NULL, BC_COND_READ, N },
	{ OTHER, NULL, NULL, NULL, BC_COND_READ, PF },
	{ "*", NULL, NULL, NULL, BC_COND_READ, N },
	{ OTHER ", " ETAG, NULL, NULL, NULL, BC_COND_READ, N },
	{ "d41d8cd98f00b204e9800998ecf8427e", NULL, NULL, NULL,
	    BC_COND_READ, N },                       /* bare, as S3 takes */
	{ "W/" ETAG, NULL, NULL, NULL, BC_COND_READ, PF }, /* strong cmp */
	{ "", NULL, NULL, NULL, BC_COND_READ, PF },
	{ OTHER, NULL, NULL, NULL, BC_COND_WRITE, PF },
	/* If-Unmodified-Since alone */
	{ NULL, NULL, NULL, D_EQ, BC_COND_READ, N },
	{ NULL, NULL, NULL, D_AFTER, BC_COND_READ, N },
	{ NULL, NULL, NULL, D_BEFORE, BC_COND_READ, PF },
	{ NULL, NULL, NULL, "garbage", BC_COND_READ, N },   /* ignored */
	/* If-Match true + If-Unmodified-Since false: S3 answers 200 */
	{ ETAG, NULL, NULL, D_BEFORE, BC_COND_READ, N },
	/* If-Match false + If-Unmodified-Since true: 412 */
	{ OTHER, NULL, NULL, D_AFTER, BC_COND_READ, PF },
	/* If-None-Match alone */
	{ NULL, ETAG, NULL, NULL, BC_COND_READ, NM },
	{ NULL, OTHER, NULL, NULL, BC_COND_READ, N },
	{ NULL, "*", NULL, NULL, BC_COND_READ, NM },
	{ NULL, "W/" ETAG, NULL, NULL, BC_COND_READ, NM },  /* weak cmp */
	{ NULL, OTHER ",W/" ETAG, NULL, NULL, BC_COND_READ, NM },
	{ NULL, ETAG, NULL, NULL, BC_COND_WRITE, PF },
	{ NULL, "*", NULL, NULL, BC_COND_WRITE, PF },
	{ NULL, OTHER, NULL, NULL, BC_COND_WRITE, N },
	/* If-Modified-Since alone */
	{ NULL, NULL, D_EQ, NULL, BC_COND_READ, NM },
	{ NULL, NULL, D_AFTER, NULL, BC_COND_READ, NM },
	{ NULL, NULL, D_BEFORE, NULL, BC_COND_READ, N },
	{ NULL, NULL, "Sun, 32 Nov 1994 08:49:37 GMT", NULL, BC_COND_READ, N },
	{ NULL, NULL, D_EQ, NULL, BC_COND_WRITE, N },      /* reads only */
	/* If-None-Match false (matches) + If-Modified-Since true: 304 */
	{ NULL, ETAG, D_BEFORE, NULL, BC_COND_READ, NM },
	/* If-None-Match true (no match) + If-Modified-Since false: the
	 * date is not looked at when If-None-Match is present */
	{ NULL, OTHER, D_AFTER, NULL, BC_COND_READ, N },
	{ NULL, OTHER, D_BEFORE, NULL, BC_COND_READ, N },
	/* If-Match failure wins over If-None-Match */
	{ OTHER, ETAG, NULL, NULL, BC_COND_READ, PF },
	{ ETAG, ETAG, NULL, NULL, BC_COND_READ, NM },
	{ ETAG, OTHER, NULL, NULL, BC_COND_READ, N },
	/* If-Unmodified-Since failure wins over 304 */
	{ NULL, ETAG, NULL, D_BEFORE, BC_COND_READ, PF },
	{ NULL, NULL, D_AFTER, D_BEFORE, BC_COND_READ, PF },
	{ NULL, NULL, D_AFTER, D_AFTER, BC_COND_READ, NM },
	/* all four */
	{ ETAG, OTHER, D_AFTER, D_BEFORE, BC_COND_READ, N },
	{ ETAG, ETAG, D_BEFORE, D_BEFORE, BC_COND_READ, NM },
	/* copy-source family: 412 everywhere, If-Modified-Since checked */
	{ OTHER, NULL, NULL, NULL, BC_COND_COPY, PF },
	{ NULL, ETAG, NULL, NULL, BC_COND_COPY, PF },
	{ NULL, NULL, D_EQ, NULL, BC_COND_COPY, PF },
	{ NULL, NULL, D_BEFORE, NULL, BC_COND_COPY, N },
	{ ETAG, NULL, NULL, D_BEFORE, BC_COND_COPY, N },
	{ NULL, OTHER, D_AFTER, NULL, BC_COND_COPY, N },
	/* other date forms */
	{ NULL, NULL, "Sunday, 06-Nov-94 08:49:37 GMT", NULL, BC_COND_READ,
	    NM },
	{ NULL, NULL, "Sunday, 06-Nov-94 08:49:36 GMT", NULL, BC_COND_READ,
	    N },
	{ NULL, NULL, "Sun Nov  6 08:49:37 1994", NULL, BC_COND_READ, NM },
	{ NULL, NULL, "Sun Nov  6 08:49:36 1994", NULL, BC_COND_READ, N },
	{ NULL, NULL, NULL, "Sun Nov  6 08:49:36 1994", BC_COND_READ, PF },
	{ NULL, NULL, NULL, "Sunday, 06-Nov-94 08:49:36 GMT", BC_COND_READ,
	    PF },
	/* malformed dates are ignored */
	{ NULL, NULL, "", NULL, BC_COND_READ, N },
	{ NULL, NULL, NULL, "", BC_COND_READ, N },
	{ NULL, NULL, "1994-11-06T08:49:37Z", NULL, BC_COND_READ, N },
	{ NULL, NULL, NULL, "Sun, 06 Nov 1994 25:49:37 GMT", BC_COND_READ, N },
	{ NULL, NULL, NULL, "Sun, 06 Nov 1994 08:49:37 PST", BC_COND_READ, N },
};

LTest(s3_cond, table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const cond_case_t *k = &cases[i];
		bc_cond_t c = { k->im, k->inm, k->ims, k->ius };
		bc_s3err_t got = bc_cond_eval(&c, k->mode, ETAG, LM);

		cr_expect_eq(got, k->want, "case %zu: got %s, want %s", i,
		    bc_s3err_code(got), bc_s3err_code(k->want));
	}
}

LTest(s3_cond, unquoted_object_etag)
{
	bc_cond_t c = { ETAG, NULL, NULL, NULL };

	cr_expect_eq(bc_cond_eval(&c, BC_COND_READ,
	    "d41d8cd98f00b204e9800998ecf8427e", LM), BC_S3E_NONE);
	c.if_match = OTHER;
	cr_expect_eq(bc_cond_eval(&c, BC_COND_READ,
	    "d41d8cd98f00b204e9800998ecf8427e", LM), PF);
}

typedef struct {
	const char *list;
	bool        weak;
	bool        want;
} etag_case_t;

LTest(s3_cond, etag_lists)
{
	static const etag_case_t ec[] = {
		{ "\"abc\"", false, true },
		{ "abc", false, true },
		{ " \"abc\" ", false, true },
		{ "\"x\",\"abc\"", false, true },
		{ "\"x\" , \"abc\"", false, true },
		{ "\"x\", abc", false, true },
		{ ",,\"abc\",,", false, true },
		{ "*", false, true },
		{ " * ", true, true },
		{ "\"x\", *", false, true },
		{ "W/\"abc\"", false, false },
		{ "W/\"abc\"", true, true },
		{ "w/\"abc\"", true, false },   /* W/ is case-sensitive */
		{ "\"abcd\"", false, false },
		{ "\"ab\"", false, false },
		{ "\"ABC\"", false, false },
		{ "\"abc", false, false },     /* unterminated: malformed */
		{ "\"x\" \"abc\"", false, false }, /* missing comma */
		{ "a\"bc", false, false },
		{ "**", false, false },
		{ "", false, false },
		{ ",", false, false },
		{ "\"\"", false, false },
	};

	for (size_t i = 0; i < sizeof(ec) / sizeof(ec[0]); i++)
		cr_expect_eq(bc_cond_etag_match(ec[i].list, "\"abc\"",
		    ec[i].weak), ec[i].want, "case %zu '%s'", i, ec[i].list);
	cr_expect(!bc_cond_etag_match(NULL, "\"abc\"", true));
	/* a multipart ETag */
	cr_expect(bc_cond_etag_match("\"abc-12\"", "\"abc-12\"", false));
}

LTest(s3_cond, etag_list_bounded)
{
	static char big[20000];

	memset(big, ',', sizeof(big) - 1);
	memcpy(big + sizeof(big) - 8, "\"abc\"", 5);
	big[sizeof(big) - 3] = '\0';
	cr_expect(!bc_cond_etag_match(big, "\"abc\"", true));
	cr_expect(bc_cond_etag_match(big + sizeof(big) - 5000, "\"abc\"",
	    true));
}

LTest(s3_cond, from_headers)
{
	bc_kvlist_t h = BC_KVLIST_INIT;
	bc_cond_t c;

	cr_assert_eq(bc_kv_add(&h, "if-match", "\"a\""), 0);
	cr_assert_eq(bc_kv_add(&h, "IF-NONE-MATCH", "\"b\""), 0);
	cr_assert_eq(bc_kv_add(&h, "If-Modified-Since", D_EQ), 0);
	cr_assert_eq(bc_kv_add(&h, "x-amz-copy-source-if-unmodified-since",
	    D_AFTER), 0);
	bc_cond_from_headers(&c, &h);
	cr_expect_str_eq(c.if_match, "\"a\"");
	cr_expect_str_eq(c.if_none_match, "\"b\"");
	cr_expect_str_eq(c.if_modified_since, D_EQ);
	cr_expect_null(c.if_unmodified_since);
	cr_expect(bc_cond_any(&c));
	bc_cond_from_copy_headers(&c, &h);
	cr_expect_null(c.if_match);
	cr_expect_null(c.if_none_match);
	cr_expect_null(c.if_modified_since);
	cr_expect_str_eq(c.if_unmodified_since, D_AFTER);
	cr_expect(bc_cond_any(&c));
	c.if_unmodified_since = NULL;
	cr_expect(!bc_cond_any(&c));
	bc_kv_fini(&h);
}

typedef struct {
	const char *s;
	int         rv;
	time_t      t;
} date_case_t;

LTest(s3_cond, date_parse)
{
	static const date_case_t dc[] = {
		{ "Sun, 06 Nov 1994 08:49:37 GMT", 0, 784111777 },
		{ "Sunday, 06-Nov-94 08:49:37 GMT", 0, 784111777 },
		{ "Sun Nov  6 08:49:37 1994", 0, 784111777 },
		{ "Sun Nov 16 08:49:37 1994", 0, 784111777 + 10 * 86400 },
		{ "  Sun, 06 Nov 1994 08:49:37 GMT  ", 0, 784111777 },
		{ "sun, 06 nov 1994 08:49:37 gmt", 0, 784111777 },
		{ "Sun, 6 Nov 1994 08:49:37 GMT", 0, 784111777 },
		{ "Sun, 06 Nov 1994 08:49:37 UTC", 0, 784111777 },
		{ "Thu, 01 Jan 1970 00:00:00 GMT", 0, 0 },
		{ "Wed, 31 Dec 1969 23:59:59 GMT", 0, -1 },
		{ "Tue, 19 Jan 2038 03:14:08 GMT", 0, 2147483648LL },
		{ "Thu, 29 Feb 2024 12:00:00 GMT", 0, 1709208000 },
		{ "Fri, 31 Dec 9999 23:59:59 GMT", 0, 253402300799LL },
		{ "Sat, 01 Jan 2000 00:00:00 GMT", 0, 946684800 },
		{ "Saturday, 01-Jan-00 00:00:00 GMT", 0, 946684800 },
		{ "Thursday, 01-Jan-70 00:00:00 GMT", 0, 0 },
		{ "Wednesday, 31-Dec-69 00:00:00 GMT", 0, 3155673600LL },
		{ "Sun, 06 Nov 1994 08:49:60 GMT", 0, 784111799 },
		/* rejected */
		{ "", BC_EINVAL, 0 },
		{ "garbage", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:49:37", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:49:37 GMT x", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 94 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 8:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:49 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Foo 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 November 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 00 Nov 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 31 Nov 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Thu, 29 Feb 2023 12:00:00 GMT", BC_EINVAL, 0 },
		{ "Thu, 29 Feb 1900 12:00:00 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 24:00:00 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:60:00 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:49:61 GMT", BC_EINVAL, 0 },
		/* UTC as an offset, no weekday, SigV4's form: the one parser
		 * takes what Date and x-amz-date carry too (s3_date.h) */
		{ "Sun, 06 Nov 1994 08:49:37 +0000", 0, 784111777 },
		{ "Sun, 06 Nov 1994 08:49:37 -0000", 0, 784111777 },
		{ "06 Nov 1994 08:49:37 GMT", 0, 784111777 },
		{ "19941106T084937Z", 0, 784111777 },
		{ "Sun, 06 Nov 1994 08:49:37 +0100", BC_EINVAL, 0 },
		{ "19941106T084937", BC_EINVAL, 0 },
		{ "19941306T084937Z", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 0000 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 19945 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun,06 Nov 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sunday, 06-Nov-1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sunday, 6-Nov-94 08:49:37 GMT", BC_EINVAL, 0 },
		{ "Sun Nov 6 08:49:37 1994", BC_EINVAL, 0 },
		{ "Sun Nov  6 08:49:37 94", BC_EINVAL, 0 },
		{ "Sun Nov  6 08:49:37 1994 GMT", BC_EINVAL, 0 },
		{ "Sundae, 06 Nov 1994 08:49:37 GMT", BC_EINVAL, 0 },
		{ "1994-11-06T08:49:37Z", BC_EINVAL, 0 },
		{ "Sun, 06 Nov 1994 08:49:37 GMT\0junk", 0, 784111777 },
	};

	for (size_t i = 0; i < sizeof(dc) / sizeof(dc[0]); i++) {
		time_t t = 42;
		int rv = bc_http_date_parse(dc[i].s, &t);

		cr_expect_eq(rv, dc[i].rv, "case %zu '%s': rv %d", i, dc[i].s,
		    rv);
		if (dc[i].rv == 0)
			cr_expect_eq((long long)t, (long long)dc[i].t,
			    "case %zu '%s': %lld", i, dc[i].s, (long long)t);
		else
			cr_expect_eq(t, 42, "case %zu: *t written", i);
	}
	cr_expect_eq(bc_http_date_parse(NULL, NULL), BC_EINVAL);
}

LTest(s3_cond, date_format)
{
	char out[BC_HTTP_DATE_LEN];
	char iso[25];

	bc_http_date(784111777, out);
	cr_expect_str_eq(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	bc_http_date(0, out);
	cr_expect_str_eq(out, "Thu, 01 Jan 1970 00:00:00 GMT");
	bc_http_date(-1, out);
	cr_expect_str_eq(out, "Wed, 31 Dec 1969 23:59:59 GMT");
	bc_http_date(1709208000, out);
	cr_expect_str_eq(out, "Thu, 29 Feb 2024 12:00:00 GMT");
	bc_http_date((time_t)253402300799LL, out);
	cr_expect_str_eq(out, "Fri, 31 Dec 9999 23:59:59 GMT");
	bc_http_date((time_t)999999999999999LL, out);   /* clamped */
	cr_expect_str_eq(out, "Fri, 31 Dec 9999 23:59:59 GMT");
	bc_http_date((time_t)-999999999999999LL, out);
	cr_expect_str_eq(out, "Sat, 01 Jan 0000 00:00:00 GMT");
	bc_iso8601_date(784111777, iso);
	cr_expect_str_eq(iso, "1994-11-06T08:49:37.000Z");
	bc_iso8601_date(0, iso);
	cr_expect_str_eq(iso, "1970-01-01T00:00:00.000Z");
}

/* Format and parse agree with gmtime_r over a wide span of times. */
LTest(s3_cond, date_roundtrip)
{
	for (long long v = -2208988800LL; v < 4102444800LL;
	    v += 86400LL * 37 + 3671) {
		char out[BC_HTTP_DATE_LEN], ref[64];
		time_t t = (time_t)v, back = 0;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(ref, sizeof(ref), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		bc_http_date(t, out);
		cr_assert_str_eq(out, ref, "t=%lld", v);
		cr_assert_eq(bc_http_date_parse(out, &back), 0);
		cr_assert_eq((long long)back, v);
	}
}
