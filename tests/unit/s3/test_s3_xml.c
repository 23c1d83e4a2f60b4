/*
 * test_s3_xml.c — XML request bodies (s3_xml.h): character data and
 * entities, DeleteObjects and CompleteMultipartUpload, with hostile input:
 * unterminated elements, bad entities, the object and part limits, part
 * numbers and ETag lengths at and past their bounds, every truncation and
 * byte-level mutations of a valid body (none may crash or leak).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_xml.h"
#include "util/util_buf.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- character data ---------------------------------------------------- */

LTest(s3_xml, text)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "plain", "plain" },
		{ "", "" },
		{ "a&amp;b&lt;c&gt;d&quot;e&apos;f", "a&b<c>d\"e'f" },
		{ "&#38;&#x26;&#X26;", "&&&" },
		{ "&#65;&#x42;&#X43;&#x4a;", "ABCJ" },
		{ "&#233;", "\xc3\xa9" },
		{ "&#x20AC;", "\xe2\x82\xac" },
		{ "&#x1F600;", "\xf0\x9f\x98\x80" },
		{ "&#x10FFFF;", "\xf4\x8f\xbf\xbf" },
		{ "&#1114111;", "\xf4\x8f\xbf\xbf" },
		{ "&#10;&#13;&#9;", "\n\r\t" },
		{ "&#000000065;", "A" },          /* 12 bytes: the longest */
		{ "a&amp;amp;", "a&amp;" },       /* decoded once */
		{ "a>b c\"d'e", "a>b c\"d'e" },  /* legal raw */
		{ "\xc3\xa9 \t\n", "\xc3\xa9 \t\n" },
	};
	static const char *const bad[] = {
		"a&b", "&amp", "&unknown;", "&AMP;", "&Lt;", "& amp;", "&amp ;",
		"&;", "&#;", "&#x;", "&#X;", "&#0;", "&#x0;", "&#00;",
		"&#xD800;", "&#xDFFF;", "&#55296;", "&#x110000;", "&#1114112;",
		"&#99999999999;", "&#xFFFFFFFF1;", "&#12a;", "&#-1;", "&#x-1;",
		"&#xg;", "&# 65;", "&#65 ;", "&#0000000065;", "a<b", "<",
		"&#x41", "&", "&lt", "&#x26;&",
	};

	for (size_t i = 0; i < N(ok); i++) {
		char *s = bc_s3_xml_text(ok[i].in, strlen(ok[i].in));

		cr_assert_not_null(s, "'%s'", ok[i].in);
		cr_expect_str_eq(s, ok[i].out, "'%s'", ok[i].in);
		cr_expect_leq(strlen(s), strlen(ok[i].in), "'%s'", ok[i].in);
		free(s);
	}
	for (size_t i = 0; i < N(bad); i++)
		cr_expect_null(bc_s3_xml_text(bad[i], strlen(bad[i])),
		    "'%s'", bad[i]);
	/* only n bytes are read */
	{
		char *s = bc_s3_xml_text("ab&amp;", 2);

		cr_assert_not_null(s);
		cr_expect_str_eq(s, "ab");
		free(s);
	}
	/* an entity cut by n is unterminated */
	cr_expect_null(bc_s3_xml_text("&amp;", 4));
	/* a NUL byte inside the text */
	cr_expect_null(bc_s3_xml_text("a\0b", 3));
}

/* ---- DeleteObjects ----------------------------------------------------- */

static bc_s3err_t
parse_delete(const char *xml, char ***keys, size_t *n, bool *quiet)
{
	return bc_s3_xml_parse_delete(xml, strlen(xml), keys, n, quiet);
}

static void
free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

LTest(s3_xml, delete)
{
	char **keys;
	size_t n;
	bool quiet;

	cr_assert_eq(parse_delete("<?xml version=\"1.0\"?>\n<Delete xmlns="
	    "\"http://s3.amazonaws.com/doc/2006-03-01/\"><Object><Key>a/b"
	    "</Key></Object>\n  <Object><Key>x&amp;y &lt;z&gt;</Key>"
	    "<VersionId>null</VersionId></Object></Delete>", &keys, &n,
	    &quiet), BC_S3E_NONE);
	cr_expect_eq(n, 2);
	cr_expect(!quiet);
	cr_expect_str_eq(keys[0], "a/b");
	cr_expect_str_eq(keys[1], "x&y <z>");
	free_keys(keys, n);

	cr_assert_eq(parse_delete("<Delete><Quiet> true </Quiet><Object>"
	    "<Key>k</Key></Object></Delete>", &keys, &n, &quiet),
	    BC_S3E_NONE);
	cr_expect(quiet);
	cr_expect_eq(n, 1);
	free_keys(keys, n);

	cr_assert_eq(parse_delete("<Delete><Quiet>TRUE</Quiet><Object>"
	    "<Key>k</Key></Object></Delete>", &keys, &n, &quiet),
	    BC_S3E_NONE);
	cr_expect(quiet);
	free_keys(keys, n);

	cr_assert_eq(parse_delete("<Delete><Quiet>yes</Quiet><Object>"
	    "<Key>k</Key></Object></Delete>", &keys, &n, &quiet),
	    BC_S3E_NONE);
	cr_expect(!quiet);
	free_keys(keys, n);

	/* an empty key parses: the caller reports it per key */
	cr_assert_eq(parse_delete("<Delete><Quiet>false</Quiet><Object>"
	    "<Key></Key></Object></Delete>", &keys, &n, &quiet),
	    BC_S3E_NONE);
	cr_expect(!quiet);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(keys[0], "");
	free_keys(keys, n);

	/* key text is not trimmed */
	cr_assert_eq(parse_delete("<Delete><Object><Key> k </Key></Object>"
	    "</Delete>", &keys, &n, &quiet), BC_S3E_NONE);
	cr_expect_str_eq(keys[0], " k ");
	free_keys(keys, n);
}

LTest(s3_xml, delete_entities)
{
	char **keys;
	size_t n;
	bool quiet;

	cr_assert_eq(parse_delete("<Delete><Object><Key>a&amp;b</Key>"
	    "</Object><Object><Key>&lt;x&gt;</Key></Object><Object>"
	    "<Key>c&#38;d</Key></Object><Object><Key>e&#x26;f</Key></Object>"
	    "<Object><Key>&quot;&apos;&#xE9;</Key></Object></Delete>", &keys,
	    &n, &quiet), BC_S3E_NONE);
	cr_assert_eq(n, 5);
	cr_expect_str_eq(keys[0], "a&b");
	cr_expect_str_eq(keys[1], "<x>");
	cr_expect_str_eq(keys[2], "c&d");
	cr_expect_str_eq(keys[3], "e&f");
	cr_expect_str_eq(keys[4], "\"'\xc3\xa9");
	free_keys(keys, n);

	{
		static const char *const bad[] = {
			"a&b", "&foo;", "&#0;", "&#xD800;", "&#x110000;",
			"&amp", "a<b", "&#x;",
		};

		for (size_t i = 0; i < N(bad); i++) {
			char xml[128];

			snprintf(xml, sizeof(xml), "<Delete><Object><Key>ok"
			    "</Key></Object><Object><Key>%s</Key></Object>"
			    "</Delete>", bad[i]);
			cr_expect_eq(parse_delete(xml, &keys, &n, &quiet),
			    BC_S3E_MalformedXML, "%s", bad[i]);
			cr_expect_null(keys);
			cr_expect_eq(n, 0);
		}
	}
}

LTest(s3_xml, delete_malformed)
{
	static const char *const bad[] = {
		"",
		"garbage",
		"<Delete></Delete>",
		"<Delete/>",
		"<Delete><Quiet>true</Quiet></Delete>",
		"<Object><Key>k</Key></Object>",
		"<delete><Object><Key>k</Key></Object></delete>",
		/* unterminated elements */
		"<Delete><Object><Key>k</Key>",
		"<Delete><Object><Key>k</Key></Delete>",
		"<Delete><Object><Key>k</Object></Delete>",
		"<Delete><Object><Key>k",
		"<Delete><Object>",
		"<Delete><Object><Key>a</Key></Object><Object><Key>b</Key>",
		/* an <Object> without a <Key>, or a <Key> outside it */
		"<Delete><Object></Object></Delete>",
		"<Delete><Object><VersionId>1</VersionId></Object></Delete>",
		"<Delete><Object></Object><Key>k</Key></Delete>",
		"<Delete><Object><Key a=\"1\">k</Key></Object></Delete>",
		"<Delete><Object><key>k</key></Object></Delete>",
		/* the first <Object> fine, the second not */
		"<Delete><Object><Key>k</Key></Object><Object></Object>"
		    "</Delete>",
	};
	char **keys = (char **)1;
	size_t n = 7;
	bool quiet = true;

	for (size_t i = 0; i < N(bad); i++) {
		cr_expect_eq(parse_delete(bad[i], &keys, &n, &quiet),
		    BC_S3E_MalformedXML, "'%s'", bad[i]);
		cr_expect_null(keys, "'%s'", bad[i]);
		cr_expect_eq(n, 0, "'%s'", bad[i]);
	}
	/* a NUL byte in a key */
	{
		static const char x[] = "<Delete><Object><Key>a\0b</Key>"
		    "</Object></Delete>";

		cr_expect_eq(bc_s3_xml_parse_delete(x, sizeof(x) - 1, &keys,
		    &n, &quiet), BC_S3E_MalformedXML);
	}
	/* len bounds the scan: an end tag past len is not seen */
	{
		static const char x[] = "<Delete><Object><Key>k</Key>"
		    "</Object></Delete>";
		size_t cut = sizeof(x) - 1 - strlen("></Delete>");

		cr_expect_eq(bc_s3_xml_parse_delete(x, cut, &keys, &n,
		    &quiet), BC_S3E_MalformedXML);
		cr_expect_eq(bc_s3_xml_parse_delete(x, cut + 1, &keys, &n,
		    &quiet), BC_S3E_NONE);
		free_keys(keys, n);
	}
}

LTest(s3_xml, delete_lenient)
{
	char **keys;
	size_t n;
	bool quiet;

	/* the root's end tag is not required */
	cr_assert_eq(parse_delete("<Delete><Object><Key>k</Key></Object>",
	    &keys, &n, &quiet), BC_S3E_NONE);
	cr_expect_eq(n, 1);
	free_keys(keys, n);
	/* an unterminated <Quiet> is ignored */
	cr_assert_eq(parse_delete("<Delete><Quiet>true<Object><Key>k</Key>"
	    "</Object></Delete>", &keys, &n, &quiet), BC_S3E_NONE);
	cr_expect(!quiet);
	free_keys(keys, n);
	/* the first <Key> of an <Object> wins */
	cr_assert_eq(parse_delete("<Delete><Object><Key>a</Key><Key>b</Key>"
	    "</Object></Delete>", &keys, &n, &quiet), BC_S3E_NONE);
	cr_expect_eq(n, 1);
	cr_expect_str_eq(keys[0], "a");
	free_keys(keys, n);
}

LTest(s3_xml, delete_limit)
{
	char **keys;
	size_t n;
	bool quiet;
	bc_buf_t b = BC_BUF_INIT;

	/* 1000 objects pass, 1001 or many more do not */
	cr_assert_eq(bc_buf_puts(&b, "<Delete>"), 0);
	for (int i = 0; i < BC_S3_DELETE_MAX_KEYS; i++)
		cr_assert_eq(bc_buf_printf(&b,
		    "<Object><Key>k%d</Key></Object>", i), 0);
	cr_assert_eq(bc_s3_xml_parse_delete(b.data, b.len, &keys, &n,
	    &quiet), BC_S3E_NONE);
	cr_expect_eq(n, 1000);
	cr_expect_str_eq(keys[0], "k0");
	cr_expect_str_eq(keys[999], "k999");
	free_keys(keys, n);
	cr_assert_eq(bc_buf_puts(&b, "<Object><Key>more</Key></Object>"), 0);
	cr_expect_eq(bc_s3_xml_parse_delete(b.data, b.len, &keys, &n, &quiet),
	    BC_S3E_MalformedXML);
	cr_expect_null(keys);
	cr_expect_eq(n, 0);
	for (int i = 0; i < 5000; i++)
		cr_assert_eq(bc_buf_puts(&b, "<Object><Key>x</Key></Object>"),
		    0);
	cr_assert_eq(bc_buf_puts(&b, "</Delete>"), 0);
	cr_expect_eq(bc_s3_xml_parse_delete(b.data, b.len, &keys, &n, &quiet),
	    BC_S3E_MalformedXML);
	bc_buf_fini(&b);
}

/* ---- CompleteMultipartUpload ------------------------------------------- */

static bc_s3err_t
parse_complete(const char *xml, bc_s3_part_t **p, size_t *n)
{
	return bc_s3_xml_parse_complete(xml, strlen(xml), p, n);
}

/* One part with number and ETag text as written. */
static bc_s3err_t
one_part(const char *num, const char *etag, bc_s3_part_t **p, size_t *n)
{
	bc_buf_t b = BC_BUF_INIT;
	bc_s3err_t e;

	cr_assert_eq(bc_buf_printf(&b, "<CompleteMultipartUpload><Part>"
	    "<PartNumber>%s</PartNumber><ETag>%s</ETag></Part>"
	    "</CompleteMultipartUpload>", num, etag), 0);
	e = bc_s3_xml_parse_complete(b.data, b.len, p, n);
	bc_buf_fini(&b);
	return e;
}

LTest(s3_xml, complete)
{
	bc_s3_part_t *p;
	size_t n;

	cr_assert_eq(parse_complete("<CompleteMultipartUpload xmlns=\"x\">"
	    "<Part><ETag>&quot;aa&quot;</ETag><PartNumber>1</PartNumber>"
	    "</Part>\n<Part><PartNumber> 3 </PartNumber><ETag>\"bb\"</ETag>"
	    "<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>"
	    "<Part><PartNumber>10000</PartNumber><ETag>cc-2</ETag></Part>"
	    "</CompleteMultipartUpload>", &p, &n), BC_S3E_NONE);
	cr_assert_eq(n, 3);
	cr_expect_eq(p[0].number, 1);
	cr_expect_str_eq(p[0].etag, "aa");
	cr_expect_eq(p[1].number, 3);
	cr_expect_str_eq(p[1].etag, "bb");
	cr_expect_eq(p[2].number, 10000);
	cr_expect_str_eq(p[2].etag, "cc-2");
	free(p);

	/* ETag: trimmed, one pair of quotes dropped, entities decoded */
	cr_assert_eq(one_part("2", " \"e&#x26;f\" ", &p, &n), BC_S3E_NONE);
	cr_expect_str_eq(p[0].etag, "e&f");
	free(p);
	cr_assert_eq(one_part("2", "\"\"x\"\"", &p, &n), BC_S3E_NONE);
	cr_expect_str_eq(p[0].etag, "\"x\"");
	free(p);
	cr_assert_eq(one_part("2", "\"", &p, &n), BC_S3E_NONE);
	cr_expect_str_eq(p[0].etag, "\"");
	free(p);
	cr_assert_eq(one_part("2", "", &p, &n), BC_S3E_NONE);
	cr_expect_str_eq(p[0].etag, "");
	free(p);
	/* leading zeros, up to 7 digits */
	cr_assert_eq(one_part("0000009", "e", &p, &n), BC_S3E_NONE);
	cr_expect_eq(p[0].number, 9);
	free(p);
}

LTest(s3_xml, complete_part_numbers)
{
	static const char *const bad[] = {
		"0", "10001", "99999", "9999999", "00000001", "-1", "+1",
		"1.0", "0x1", "abc", "1a", "a1", "1 2", "", " ", "&#49;",
		"99999999999999999999",
	};
	bc_s3_part_t *p = (bc_s3_part_t *)1;
	size_t n = 7;

	for (size_t i = 0; i < N(bad); i++) {
		cr_expect_eq(one_part(bad[i], "e", &p, &n),
		    BC_S3E_InvalidArgument, "'%s'", bad[i]);
		cr_expect_null(p);
		cr_expect_eq(n, 0);
	}
	/* a NUL byte in the number */
	{
		static const char x[] = "<CompleteMultipartUpload><Part>"
		    "<PartNumber>1\0</PartNumber><ETag>e</ETag></Part>"
		    "</CompleteMultipartUpload>";

		cr_expect_eq(bc_s3_xml_parse_complete(x, sizeof(x) - 1, &p,
		    &n), BC_S3E_InvalidArgument);
	}
}

LTest(s3_xml, complete_etag_length)
{
	char etag[BC_S3_ETAG_LEN + 8];
	bc_s3_part_t *p;
	size_t n;

	/* BC_S3_ETAG_LEN - 1 bytes fit, bare or quoted */
	memset(etag, 'a', BC_S3_ETAG_LEN - 1);
	etag[BC_S3_ETAG_LEN - 1] = '\0';
	cr_assert_eq(one_part("1", etag, &p, &n), BC_S3E_NONE);
	cr_expect_eq(strlen(p[0].etag), BC_S3_ETAG_LEN - 1);
	free(p);
	{
		char q[sizeof(etag) + 2];

		snprintf(q, sizeof(q), "\"%s\"", etag);
		cr_assert_eq(one_part("1", q, &p, &n), BC_S3E_NONE);
		cr_expect_str_eq(p[0].etag, etag);
		free(p);
	}
	/* BC_S3_ETAG_LEN does not */
	memset(etag, 'a', BC_S3_ETAG_LEN);
	etag[BC_S3_ETAG_LEN] = '\0';
	cr_expect_eq(one_part("1", etag, &p, &n), BC_S3E_InvalidPart);
	cr_expect_null(p);
	cr_expect_eq(one_part("1", "0123456789012345678901234567890123456789"
	    "012345678", &p, &n), BC_S3E_InvalidPart);
	/* a bad ETag text is malformed */
	cr_expect_eq(one_part("1", "a&b", &p, &n), BC_S3E_MalformedXML);
	cr_expect_eq(one_part("1", "&#0;", &p, &n), BC_S3E_MalformedXML);
}

LTest(s3_xml, complete_malformed)
{
	static const struct {
		const char *xml;
		bc_s3err_t  want;
	} cases[] = {
		{ "", BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload></CompleteMultipartUpload>",
		    BC_S3E_MalformedXML },
		{ "<Part><PartNumber>1</PartNumber><ETag>a</ETag></Part>",
		    BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload><Part><ETag>a</ETag></Part>"
		    "</CompleteMultipartUpload>", BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
		    "</Part></CompleteMultipartUpload>", BC_S3E_MalformedXML },
		/* unterminated elements */
		{ "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
		    "<ETag>a</ETag>", BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload><Part><PartNumber>1<ETag>a</ETag>"
		    "</Part></CompleteMultipartUpload>", BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
		    "<ETag>a</Part></CompleteMultipartUpload>",
		    BC_S3E_MalformedXML },
		{ "<CompleteMultipartUpload><Part>", BC_S3E_MalformedXML },
		/* a later part unterminated */
		{ "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
		    "<ETag>a</ETag></Part><Part><PartNumber>2</PartNumber>",
		    BC_S3E_MalformedXML },
		/* order */
		{ "<CompleteMultipartUpload>"
		    "<Part><PartNumber>2</PartNumber><ETag>a</ETag></Part>"
		    "<Part><PartNumber>1</PartNumber><ETag>b</ETag></Part>"
		    "</CompleteMultipartUpload>", BC_S3E_InvalidPartOrder },
		{ "<CompleteMultipartUpload>"
		    "<Part><PartNumber>2</PartNumber><ETag>a</ETag></Part>"
		    "<Part><PartNumber>2</PartNumber><ETag>b</ETag></Part>"
		    "</CompleteMultipartUpload>", BC_S3E_InvalidPartOrder },
		/* the first error wins */
		{ "<CompleteMultipartUpload>"
		    "<Part><PartNumber>0</PartNumber><ETag>a&b</ETag></Part>"
		    "</CompleteMultipartUpload>", BC_S3E_InvalidArgument },
	};
	bc_s3_part_t *p;
	size_t n;

	for (size_t i = 0; i < N(cases); i++) {
		cr_expect_eq(parse_complete(cases[i].xml, &p, &n),
		    cases[i].want, "'%s'", cases[i].xml);
		cr_expect_null(p);
		cr_expect_eq(n, 0);
	}
	/* the root's end tag is not required */
	cr_assert_eq(parse_complete("<CompleteMultipartUpload><Part>"
	    "<PartNumber>1</PartNumber><ETag>a</ETag></Part>", &p, &n),
	    BC_S3E_NONE);
	cr_expect_eq(n, 1);
	free(p);
}

LTest(s3_xml, complete_limit)
{
	bc_s3_part_t *p;
	size_t n;
	bc_buf_t b = BC_BUF_INIT;

	/* 10000 parts pass, 10001 do not */
	cr_assert_eq(bc_buf_puts(&b, "<CompleteMultipartUpload>"), 0);
	for (int i = 1; i <= BC_S3_MAX_PARTS; i++)
		cr_assert_eq(bc_buf_printf(&b, "<Part><PartNumber>%d"
		    "</PartNumber><ETag>e</ETag></Part>", i), 0);
	cr_assert_eq(bc_s3_xml_parse_complete(b.data, b.len, &p, &n),
	    BC_S3E_NONE);
	cr_expect_eq(n, 10000);
	cr_expect_eq(p[9999].number, 10000);
	free(p);
	cr_assert_eq(bc_buf_puts(&b, "<Part><PartNumber>10000</PartNumber>"
	    "<ETag>e</ETag></Part>"), 0);
	cr_expect_eq(bc_s3_xml_parse_complete(b.data, b.len, &p, &n),
	    BC_S3E_MalformedXML);
	cr_expect_null(p);
	bc_buf_fini(&b);
}

/* ---- every truncation and byte mutations of valid bodies --------------- */

static const char delete_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Quiet>true</Quiet>"
    "<Object><Key>a&amp;b/&#x10FFFF;</Key><VersionId>v</VersionId></Object>"
    "<Object><Key>c</Key></Object></Delete>";

static const char complete_doc[] =
    "<CompleteMultipartUpload\n"
    " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Part><PartNumber>1</PartNumber><ETag>&quot;0123abcd&quot;</ETag></Part>"
    "<Part><ETag>\"ef-2\"</ETag><PartNumber> 42 </PartNumber></Part>"
    "</CompleteMultipartUpload>";

/* Parses xml as both bodies: each answers a documented code, and returns
 * a result exactly when it succeeds. */
static void
parse_both(const char *xml, size_t len)
{
	char **keys = NULL;
	size_t n = 0;
	bool quiet;
	bc_s3_part_t *p = NULL;
	bc_s3err_t e;

	e = bc_s3_xml_parse_delete(xml, len, &keys, &n, &quiet);
	cr_assert(e == BC_S3E_NONE || e == BC_S3E_MalformedXML);
	cr_assert_eq(e == BC_S3E_NONE, keys != NULL);
	free_keys(keys, n);
	e = bc_s3_xml_parse_complete(xml, len, &p, &n);
	cr_assert(e == BC_S3E_NONE || e == BC_S3E_MalformedXML ||
	    e == BC_S3E_InvalidArgument || e == BC_S3E_InvalidPart ||
	    e == BC_S3E_InvalidPartOrder);
	cr_assert_eq(e == BC_S3E_NONE, p != NULL);
	free(p);
}

LTest(s3_xml, hostile_bodies)
{
	static const char *const docs[] = { delete_doc, complete_doc };
	static const char subst[] = { '<', '>', '&', ';', '/', '#', '\0',
		'"', ' ', 'x', '\xff' };
	char **keys;
	bc_s3_part_t *p;
	size_t n;
	bool quiet;

	/* the bodies mutated below are valid */
	cr_assert_eq(parse_delete(delete_doc, &keys, &n, &quiet),
	    BC_S3E_NONE);
	cr_expect_eq(n, 2);
	cr_expect(quiet);
	cr_expect_str_eq(keys[0], "a&b/\xf4\x8f\xbf\xbf");
	free_keys(keys, n);
	cr_assert_eq(parse_complete(complete_doc, &p, &n), BC_S3E_NONE);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(p[0].etag, "0123abcd");
	cr_expect_eq(p[1].number, 42);
	cr_expect_str_eq(p[1].etag, "ef-2");
	free(p);

	for (size_t d = 0; d < N(docs); d++) {
		size_t len = strlen(docs[d]);
		char *buf = malloc(len);

		cr_assert_not_null(buf);
		/* every prefix, each in a buffer of its size (ASan sees a
		 * read past len) */
		for (size_t l = 0; l <= len; l++) {
			char *cut = malloc(l > 0 ? l : 1);

			cr_assert_not_null(cut);
			memcpy(cut, docs[d], l);
			parse_both(cut, l);
			free(cut);
		}
		/* every byte replaced by each of subst */
		for (size_t i = 0; i < len; i++)
			for (size_t s = 0; s < N(subst); s++) {
				memcpy(buf, docs[d], len);
				buf[i] = subst[s];
				parse_both(buf, len);
			}
		free(buf);
	}
}
