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

/* ---- DeleteObjects filtered by key (bc_s3_xml_filter_delete) ------------ */

/* keep() for the tests: refuses keys starting with the prefix in arg,
 * and records every key it saw. */
typedef struct {
	const char *refuse;      /* prefix to refuse; NULL: keep all */
	char        seen[4096];  /* keys seen, '|'-separated */
	size_t      calls;
} keep_ctx_t;

static bool
keep_fn(void *arg, const char *key)
{
	keep_ctx_t *c = arg;
	size_t n = strlen(c->seen);

	c->calls++;
	snprintf(c->seen + n, sizeof(c->seen) - n, "%s%s", n > 0 ? "|" : "",
	    key);
	return c->refuse == NULL ||
	    strncmp(key, c->refuse, strlen(c->refuse)) != 0;
}

/* Filters xml (strlen) refusing keys that start with refuse; the output
 * in *out (caller finis), refused keys joined by '|' into joined. */
static bc_s3err_t
filter(const char *xml, const char *refuse, bc_buf_t *out, char *joined,
    size_t jlen, size_t *nrefused, size_t *nkept, keep_ctx_t *ctx)
{
	char **refused = (char **)1;
	bc_s3err_t e;

	memset(ctx, 0, sizeof(*ctx));
	ctx->refuse = refuse;
	bc_buf_init(out, 0);
	*nrefused = *nkept = 7;
	e = bc_s3_xml_filter_delete(xml, strlen(xml), keep_fn, ctx, out,
	    &refused, nrefused, nkept);
	joined[0] = '\0';
	if (e != BC_S3E_NONE) {
		cr_expect_null(refused, "'%s'", xml);
		cr_expect_eq(*nrefused, 0, "'%s'", xml);
		cr_expect_eq(*nkept, 0, "'%s'", xml);
		return e;
	}
	for (size_t i = 0; i < *nrefused; i++) {
		size_t n = strlen(joined);

		snprintf(joined + n, jlen - n, "%s%s", i > 0 ? "|" : "",
		    refused[i]);
	}
	free_keys(refused, *nrefused);
	return e;
}

static const char filter_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Quiet>true</Quiet>\n"
    "  <Object><Key>allowed/a.txt</Key><VersionId>v1</VersionId></Object>\n"
    "  <Object>\n    <Key>secret/top.txt</Key>\n  </Object>\n"
    "\t<Object><Key>allowed/b&amp;c&#x3C;d</Key></Object>\r\n"
    "  <Object><VersionId>v3</VersionId><Key>secret/&lt;x&gt;</Key>"
    "</Object>\n"
    "  <Object><Key>allowed/last</Key><VersionId>null</VersionId></Object>\n"
    "</Delete>\n";

LTest(s3_xml, filter_keep_all_is_identity)
{
	keep_ctx_t ctx;
	bc_buf_t out;
	char joined[1024];
	size_t nr, nk;

	cr_assert_eq(filter(filter_doc, NULL, &out, joined, sizeof(joined),
	    &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_eq(out.len, strlen(filter_doc));
	cr_expect(out.len == strlen(filter_doc) &&
	    memcmp(out.data, filter_doc, out.len) == 0,
	    "output differs:\n%.*s", (int)out.len, bc_buf_str(&out));
	cr_expect_eq(nr, 0);
	cr_expect_eq(nk, 5);
	/* keep() sees decoded keys, in document order */
	cr_expect_eq(ctx.calls, 5);
	cr_expect_str_eq(ctx.seen, "allowed/a.txt|secret/top.txt|"
	    "allowed/b&c<d|secret/<x>|allowed/last");
	bc_buf_fini(&out);
}

LTest(s3_xml, filter_removes_only_refused)
{
	static const char want[] =
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
	    "  <Quiet>true</Quiet>\n"
	    "  <Object><Key>allowed/a.txt</Key><VersionId>v1</VersionId>"
	    "</Object>\n"
	    "  \n"
	    "\t<Object><Key>allowed/b&amp;c&#x3C;d</Key></Object>\r\n"
	    "  \n"
	    "  <Object><Key>allowed/last</Key><VersionId>null</VersionId>"
	    "</Object>\n"
	    "</Delete>\n";
	keep_ctx_t ctx;
	bc_buf_t out;
	char joined[1024];
	size_t nr, nk;
	char **keys;
	size_t n;
	bool quiet;

	cr_assert_eq(filter(filter_doc, "secret/", &out, joined,
	    sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_str_eq(bc_buf_str(&out), want);
	cr_expect_eq(nr, 2);
	cr_expect_eq(nk, 3);
	cr_expect_str_eq(joined, "secret/top.txt|secret/<x>");
	/* what goes upstream parses to the kept keys, Quiet intact */
	cr_assert_eq(bc_s3_xml_parse_delete(out.data, out.len, &keys, &n,
	    &quiet), BC_S3E_NONE);
	cr_expect_eq(n, 3);
	cr_expect(quiet);
	cr_expect_str_eq(keys[1], "allowed/b&c<d");
	free_keys(keys, n);
	bc_buf_fini(&out);

	/* the first and the last object */
	cr_assert_eq(filter("<Delete><Object><Key>x1</Key></Object><Object>"
	    "<Key>k</Key></Object><Object><Key>x2</Key></Object></Delete>",
	    "x", &out, joined, sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_str_eq(bc_buf_str(&out),
	    "<Delete><Object><Key>k</Key></Object></Delete>");
	cr_expect_str_eq(joined, "x1|x2");
	bc_buf_fini(&out);

	/* all refused: the rest of the document stays, nothing kept */
	cr_assert_eq(filter("<Delete><Quiet>false</Quiet><Object><Key>x1</Key>"
	    "</Object><Object><Key>x2</Key></Object></Delete>", "x", &out,
	    joined, sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_str_eq(bc_buf_str(&out),
	    "<Delete><Quiet>false</Quiet></Delete>");
	cr_expect_eq(nr, 2);
	cr_expect_eq(nk, 0);
	bc_buf_fini(&out);

	/* the same key twice: each occurrence on its own */
	cr_assert_eq(filter("<Delete><Object><Key>x</Key></Object><Object>"
	    "<Key>x</Key></Object><Object><Key>y</Key></Object></Delete>",
	    "x", &out, joined, sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_str_eq(joined, "x|x");
	cr_expect_eq(nk, 1);
	bc_buf_fini(&out);

	/* an empty key is passed to keep() like any other */
	cr_assert_eq(filter("<Delete><Object><Key></Key></Object></Delete>",
	    "", &out, joined, sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_expect_eq(nr, 1);
	cr_expect_eq(ctx.calls, 1);
	bc_buf_fini(&out);

	/* the end tag of the root is not required (as for parsing) */
	cr_assert_eq(filter("<Delete><Object><Key>x</Key></Object><Object>"
	    "<Key>y</Key></Object>", "x", &out, joined, sizeof(joined), &nr,
	    &nk, &ctx), BC_S3E_NONE);
	cr_expect_str_eq(bc_buf_str(&out), "<Delete><Object><Key>y</Key>"
	    "</Object>");
	bc_buf_fini(&out);
}

/* Every body bc_s3_xml_parse_delete refuses, filter refuses the same way,
 * whatever keep() says. */
LTest(s3_xml, filter_malformed)
{
	static const char *const bad[] = {
		"", "garbage", "<Delete></Delete>", "<Delete/>",
		"<Delete><Quiet>true</Quiet></Delete>",
		"<Object><Key>k</Key></Object>",
		"<delete><Object><Key>k</Key></Object></delete>",
		"<Delete><Object><Key>k</Key>",
		"<Delete><Object><Key>k</Key></Delete>",
		"<Delete><Object><Key>k</Object></Delete>",
		"<Delete><Object><Key>k", "<Delete><Object>",
		"<Delete><Object><Key>a</Key></Object><Object><Key>b</Key>",
		"<Delete><Object></Object></Delete>",
		"<Delete><Object><VersionId>1</VersionId></Object></Delete>",
		"<Delete><Object></Object><Key>k</Key></Delete>",
		"<Delete><Object><Key a=\"1\">k</Key></Object></Delete>",
		"<Delete><Object><Key>k</Key></Object><Object></Object>"
		    "</Delete>",
		/* bad key text, in a kept and in a refused object */
		"<Delete><Object><Key>a&b</Key></Object></Delete>",
		"<Delete><Object><Key>x&b</Key></Object></Delete>",
		"<Delete><Object><Key>k</Key></Object><Object><Key>&#0;</Key>"
		    "</Object></Delete>",
		"<Delete><Object><Key>x&#xD800;</Key></Object></Delete>",
		"<Delete><Object><Key>x<y</Key></Object></Delete>",
		"<Delete><Object><Key><![CDATA[x]]></Key></Object></Delete>",
		/* a refused object first, a malformed one after */
		"<Delete><Object><Key>x</Key></Object><Object><Key>k</Key>"
		    "</Delete>",
	};
	static const char *const refuse[] = { NULL, "x", "" };
	keep_ctx_t ctx;
	bc_buf_t out;
	char joined[256];
	size_t nr, nk;

	for (size_t i = 0; i < N(bad); i++) {
		char **keys;
		size_t n;
		bool quiet;

		cr_expect_eq(bc_s3_xml_parse_delete(bad[i], strlen(bad[i]),
		    &keys, &n, &quiet), BC_S3E_MalformedXML, "'%s'", bad[i]);
		for (size_t r = 0; r < N(refuse); r++) {
			cr_expect_eq(filter(bad[i], refuse[r], &out, joined,
			    sizeof(joined), &nr, &nk, &ctx),
			    BC_S3E_MalformedXML, "'%s' refusing %s", bad[i],
			    refuse[r] != NULL ? refuse[r] : "none");
			bc_buf_fini(&out);
		}
	}
}

LTest(s3_xml, filter_limit)
{
	keep_ctx_t ctx;
	bc_buf_t b = BC_BUF_INIT, out;
	char **refused;
	size_t nr, nk;

	/* 1000 objects pass, half refused */
	cr_assert_eq(bc_buf_puts(&b, "<Delete>"), 0);
	for (int i = 0; i < BC_S3_DELETE_MAX_KEYS; i++)
		cr_assert_eq(bc_buf_printf(&b, "<Object><Key>%s%d</Key>"
		    "</Object>", i % 2 ? "x" : "k", i), 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.refuse = "x";
	bc_buf_init(&out, 0);
	cr_assert_eq(bc_s3_xml_filter_delete(b.data, b.len, keep_fn, &ctx,
	    &out, &refused, &nr, &nk), BC_S3E_NONE);
	cr_expect_eq(nr, 500);
	cr_expect_eq(nk, 500);
	cr_expect_str_eq(refused[0], "x1");
	cr_expect_str_eq(refused[499], "x999");
	free_keys(refused, nr);
	bc_buf_fini(&out);
	/* 1001: MalformedXML, refused or kept alike, nothing leaks */
	for (int all = 0; all < 2; all++) {
		bc_buf_t c = BC_BUF_INIT;

		cr_assert_eq(bc_buf_append(&c, b.data, b.len), 0);
		cr_assert_eq(bc_buf_puts(&c, all ? "<Object><Key>x</Key>"
		    "</Object>" : "<Object><Key>k</Key></Object>"), 0);
		memset(&ctx, 0, sizeof(ctx));
		ctx.refuse = all ? "" : "x";
		bc_buf_init(&out, 0);
		cr_expect_eq(bc_s3_xml_filter_delete(c.data, c.len, keep_fn,
		    &ctx, &out, &refused, &nr, &nk), BC_S3E_MalformedXML);
		cr_expect_null(refused);
		cr_expect_eq(nr, 0);
		bc_buf_fini(&out);
		bc_buf_fini(&c);
	}
	bc_buf_fini(&b);
}

/* Every prefix and byte mutation of a valid body: filter agrees with the
 * parser (same error, or MalformedXML for markup it does not read
 * exactly; same keys kept plus refused), keeping all copies
 * the body unchanged, and never crashes or leaks. */
static void
filter_agrees(const char *xml, size_t len)
{
	char **keys = NULL, **refused = NULL;
	size_t n = 0, nr, nk;
	bool quiet;
	bc_s3err_t pe, fe;
	bc_buf_t out;
	keep_ctx_t ctx;

	pe = bc_s3_xml_parse_delete(xml, len, &keys, &n, &quiet);
	free_keys(keys, n);
	memset(&ctx, 0, sizeof(ctx));
	bc_buf_init(&out, 0);
	fe = bc_s3_xml_filter_delete(xml, len, keep_fn, &ctx, &out, &refused,
	    &nr, &nk);
	/* the filter may only be stricter: it refuses markup it does not
	 * read exactly (a mutated tag) that the lenient parser skips */
	cr_assert(fe == pe || (fe == BC_S3E_MalformedXML &&
	    pe == BC_S3E_NONE), "filter %d, parser %d", (int)fe, (int)pe);
	if (fe == BC_S3E_NONE) {
		cr_assert_eq(nr + nk, n);
		cr_assert_eq(out.len, len);
		cr_assert_eq(memcmp(out.data, xml, len), 0);
	}
	free_keys(refused, nr);
	bc_buf_fini(&out);
	/* refusing every other key */
	memset(&ctx, 0, sizeof(ctx));
	ctx.refuse = "a";
	bc_buf_init(&out, 0);
	fe = bc_s3_xml_filter_delete(xml, len, keep_fn, &ctx, &out, &refused,
	    &nr, &nk);
	/* the filter may only be stricter: it refuses markup it does not
	 * read exactly (a mutated tag) that the lenient parser skips */
	cr_assert(fe == pe || (fe == BC_S3E_MalformedXML &&
	    pe == BC_S3E_NONE), "filter %d, parser %d", (int)fe, (int)pe);
	if (fe == BC_S3E_NONE) {
		cr_assert_eq(nr + nk, n);
		cr_assert_leq(out.len, len);
		free_keys(refused, nr);
	}
	bc_buf_fini(&out);
}

/* Markup the scanner does not read exactly could hide a key from it that
 * S3's XML parser reads: such bodies are refused whole. */
LTest(s3_xml, filter_refuses_inexact_markup)
{
	static const char *const bad[] = {
	    "<Delete><Object><Key>allowed/a</Key></Object>"
	    "<Object ><Key>secret/h1</Key></Object ></Delete>",
	    "<Delete><Object><!--<Key>allowed/a</Key>--><Key>secret/h2</Key>"
	    "</Object></Delete>",
	    "<Delete><Object><Key >secret/h3</Key ><Key>allowed/a</Key>"
	    "</Object></Delete>",
	    "<Delete><s3:Object><s3:Key>secret/h4</s3:Key></s3:Object>"
	    "<Object><Key>allowed/a</Key></Object></Delete>",
	    "<Delete><Object><Key><![CDATA[secret/h5]]></Key></Object>"
	    "</Delete>",
	    "<Delete><Object\n><Key>secret/h6</Key></Object></Delete>",
	    " <?xml version=\"1.0\"?><Delete><Object><Key>a</Key></Object>"
	    "</Delete>",
	};
	char joined[256];
	size_t nr, nk;
	keep_ctx_t ctx;
	bc_buf_t out;

	for (size_t i = 0; i < N(bad); i++) {
		cr_expect_eq(filter(bad[i], "secret/", &out, joined,
		    sizeof(joined), &nr, &nk, &ctx), BC_S3E_MalformedXML,
		    "'%s'", bad[i]);
		bc_buf_fini(&out);
	}
	/* what SDKs send passes */
	cr_assert_eq(filter("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	    "<Object><Key>secret/x</Key><VersionId>v</VersionId></Object>"
	    "<Object><Key>a</Key><ETag>\"e\"</ETag></Object>"
	    "<Quiet>false</Quiet></Delete>", "secret/", &out, joined,
	    sizeof(joined), &nr, &nk, &ctx), BC_S3E_NONE);
	cr_assert_str_eq(joined, "secret/x");
	bc_buf_fini(&out);
}

LTest(s3_xml, filter_hostile_bodies)
{
	static const char *const docs[] = { delete_doc, filter_doc };
	static const char subst[] = { '<', '>', '&', ';', '/', '#', '\0',
		'"', ' ', 'x', '\xff' };

	for (size_t d = 0; d < N(docs); d++) {
		size_t len = strlen(docs[d]);
		char *buf = malloc(len);

		cr_assert_not_null(buf);
		for (size_t l = 0; l <= len; l++) {
			char *cut = malloc(l > 0 ? l : 1);

			cr_assert_not_null(cut);
			memcpy(cut, docs[d], l);
			filter_agrees(cut, l);
			free(cut);
		}
		for (size_t i = 0; i < len; i++)
			for (size_t s = 0; s < N(subst); s++) {
				memcpy(buf, docs[d], len);
				buf[i] = subst[s];
				filter_agrees(buf, len);
			}
		free(buf);
	}
}

/* ---- per-key errors of a DeleteResult ---------------------------------- */

LTest(s3_xml, key_error)
{
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_s3_xml_key_error(&b, "a&b<c>\"d'e", BC_S3E_AccessDenied),
	    0);
	cr_expect_str_eq(bc_buf_str(&b), "<Error><Key>a&amp;b&lt;c&gt;&quot;d"
	    "&apos;e</Key><Code>AccessDenied</Code><Message>Access Denied"
	    "</Message></Error>");
	bc_buf_fini(&b);
	/* the escaped key decodes back to itself */
	cr_assert_eq(bc_s3_xml_key_error(&b, "k/\xc3\xa9&", BC_S3E_NoSuchKey),
	    0);
	{
		const char *s = strstr(bc_buf_str(&b), "<Key>") + 5;
		const char *e = strstr(s, "</Key>");
		char *k = bc_s3_xml_text(s, (size_t)(e - s));

		cr_assert_not_null(k);
		cr_expect_str_eq(k, "k/\xc3\xa9&");
		free(k);
	}
	cr_expect(strstr(bc_buf_str(&b), "<Code>NoSuchKey</Code>") != NULL);
	bc_buf_fini(&b);
}

static const char result_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Deleted><Key>allowed/a</Key></Deleted></DeleteResult>\n";

LTest(s3_xml, delete_result_errors)
{
	char k1[] = "secret/top.txt", k2[] = "s/<&>";
	char *keys[] = { k1, k2 };
	bc_buf_t out = BC_BUF_INIT;

	cr_assert_eq(bc_s3_xml_delete_result_errors(result_doc,
	    strlen(result_doc), keys, 2, BC_S3E_AccessDenied, &out), 0);
	cr_expect_str_eq(bc_buf_str(&out),
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	    "<Deleted><Key>allowed/a</Key></Deleted>"
	    "<Error><Key>secret/top.txt</Key><Code>AccessDenied</Code>"
	    "<Message>Access Denied</Message></Error>"
	    "<Error><Key>s/&lt;&amp;&gt;</Key><Code>AccessDenied</Code>"
	    "<Message>Access Denied</Message></Error>"
	    "</DeleteResult>\n");
	bc_buf_fini(&out);

	/* no keys: unchanged */
	cr_assert_eq(bc_s3_xml_delete_result_errors(result_doc,
	    strlen(result_doc), keys, 0, BC_S3E_AccessDenied, &out), 0);
	cr_expect_str_eq(bc_buf_str(&out), result_doc);
	bc_buf_fini(&out);

	/* an empty result (what the gateway answers when no key is left) */
	{
		static const char empty[] = "<DeleteResult></DeleteResult>";

		cr_assert_eq(bc_s3_xml_delete_result_errors(empty,
		    strlen(empty), keys, 1, BC_S3E_AccessDenied, &out), 0);
		cr_expect_str_eq(bc_buf_str(&out), "<DeleteResult><Error><Key>"
		    "secret/top.txt</Key><Code>AccessDenied</Code><Message>"
		    "Access Denied</Message></Error></DeleteResult>");
		bc_buf_fini(&out);
	}
	/* inserted before the LAST end tag */
	{
		static const char two[] = "<DeleteResult><Deleted><Key>a</Key>"
		    "</Deleted></DeleteResult><!-- x --></DeleteResult>";

		cr_assert_eq(bc_s3_xml_delete_result_errors(two, strlen(two),
		    keys, 1, BC_S3E_AccessDenied, &out), 0);
		cr_expect_str_eq(bc_buf_str(&out), "<DeleteResult><Deleted><Key>"
		    "a</Key></Deleted></DeleteResult><!-- x --><Error><Key>"
		    "secret/top.txt</Key><Code>AccessDenied</Code><Message>"
		    "Access Denied</Message></Error></DeleteResult>");
		bc_buf_fini(&out);
	}
	/* only len bytes are read: a tag past len is not seen */
	{
		size_t cut = strlen(result_doc) - strlen("</DeleteResult>\n");

		cr_assert_eq(bc_s3_xml_delete_result_errors(result_doc, cut,
		    keys, 1, BC_S3E_AccessDenied, &out), 0);
		cr_expect_eq(out.len, cut);
		cr_expect_eq(memcmp(out.data, result_doc, cut), 0);
		bc_buf_fini(&out);
	}
}

LTest(s3_xml, delete_result_errors_passes_errors_through)
{
	static const char *const docs[] = {
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
		    "AccessDenied</Code><Message>Access Denied</Message>"
		    "<RequestId>1</RequestId></Error>",
		"<Error><Code>InternalError</Code></Error>",
		"",
		"not xml at all \xff",
		"<DeleteResult>",                 /* no end tag */
		"</DeleteResul",
	};
	char k1[] = "secret/top.txt";
	char *keys[] = { k1 };
	bc_buf_t out = BC_BUF_INIT;

	for (size_t i = 0; i < N(docs); i++) {
		size_t len = strlen(docs[i]);

		cr_assert_eq(bc_s3_xml_delete_result_errors(docs[i], len, keys,
		    1, BC_S3E_AccessDenied, &out), 0);
		cr_expect_eq(out.len, len, "'%s'", docs[i]);
		cr_expect(len == 0 || memcmp(out.data, docs[i], len) == 0,
		    "'%s'", docs[i]);
		bc_buf_fini(&out);
	}
	/* a body with a NUL byte before its end tag is still searched whole */
	{
		static const char x[] = "<DeleteResult>\0</DeleteResult>";

		cr_assert_eq(bc_s3_xml_delete_result_errors(x, sizeof(x) - 1,
		    keys, 1, BC_S3E_AccessDenied, &out), 0);
		cr_expect_gt(out.len, sizeof(x) - 1);
		cr_expect_eq(memcmp(out.data + out.len - 15, "</DeleteResult>",
		    15), 0);
		bc_buf_fini(&out);
	}
}

/* ---- listings (warm-ups read them from the origin) -------------------- */

LTest(s3_xml, list_pages)
{
	static const char v2[] =
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	    "<Name>b</Name><Prefix>ds/</Prefix><KeyCount>3</KeyCount>"
	    "<MaxKeys>3</MaxKeys><IsTruncated> true </IsTruncated>"
	    "<Contents><Key>ds/a</Key><LastModified>2024-01-01T00:00:00Z"
	    "</LastModified><ETag>&quot;x&quot;</ETag><Size>0</Size>"
	    "<StorageClass>STANDARD</StorageClass></Contents>"
	    "<Contents><Size>\n18446744073709551615 </Size><Key>ds/b&amp;c"
	    "&#x263A;</Key></Contents>"
	    "<CommonPrefixes><Prefix>ds/sub/</Prefix></CommonPrefixes>"
	    "<Contents><Key>ds/&lt;d&gt;</Key><Size>7</Size></Contents>"
	    "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="
	    "&amp;x</NextContinuationToken></ListBucketResult>";
	static const char v1[] =
	    "<ListBucketResult><IsTruncated>true</IsTruncated>"
	    "<NextMarker>ds/z</NextMarker><Contents><Key>ds/y</Key>"
	    "<Size>1</Size></Contents></ListBucketResult>";
	bc_s3_list_t l;

	cr_assert_eq(bc_s3_xml_parse_list(v2, sizeof(v2) - 1, &l),
	    BC_S3E_NONE);
	cr_assert_eq(l.n, 3);
	cr_assert_str_eq(l.v[0].key, "ds/a");
	cr_assert_eq(l.v[0].size, 0);
	cr_assert_str_eq(l.v[1].key, "ds/b&c\xe2\x98\xba");
	cr_assert_eq(l.v[1].size, UINT64_MAX);
	cr_assert_str_eq(l.v[2].key, "ds/<d>");
	cr_assert(l.truncated);
	cr_assert_str_eq(l.next,
	    "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&x");
	bc_s3_xml_list_fini(&l);
	bc_s3_xml_list_fini(&l);   /* empty: a no-op */
	bc_s3_xml_list_fini(NULL);
	cr_assert_eq(bc_s3_xml_parse_list(v1, sizeof(v1) - 1, &l),
	    BC_S3E_NONE);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.next, "ds/z", "V1's NextMarker");
	bc_s3_xml_list_fini(&l);
	/* an empty page, not truncated */
	cr_assert_eq(bc_s3_xml_parse_list("<ListBucketResult/>", 19, &l),
	    BC_S3E_NONE);
	cr_assert(l.n == 0 && !l.truncated && l.next == NULL && l.v == NULL);
}

LTest(s3_xml, list_refuses_what_it_cannot_read)
{
	static const char *const bad[] = {
		"",
		"<Error><Code>AccessDenied</Code></Error>",
		"<ListBucketResult><Contents><Key>a</Key></Contents>",
		"<ListBucketResult><Contents><Size>1</Size></Contents>",
		"<ListBucketResult><Contents><Key></Key><Size>1</Size>"
		    "</Contents>",
		"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size>"
		    "</Contents>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1x</Size>"
		    "</Contents>",
		"<ListBucketResult><Contents><Key>a</Key><Size>"
		    "18446744073709551616</Size></Contents>",
		"<ListBucketResult><Contents><Key>a</Key><Size>"
		    "000000000000000000001</Size></Contents>",
		"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size>"
		    "</Contents>",
		"<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size>"
		    "</Contents>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>",
		"<ListBucketResult><NextContinuationToken>a&bad;"
		    "</NextContinuationToken>",
		"<ListBucketResult><NextContinuationToken>a",
	};
	bc_s3_list_t l;
	bc_buf_t b = BC_BUF_INIT;

	for (size_t i = 0; i < N(bad); i++) {
		cr_assert_eq(bc_s3_xml_parse_list(bad[i], strlen(bad[i]), &l),
		    BC_S3E_MalformedXML, "%s", bad[i]);
		cr_assert(l.n == 0 && l.v == NULL && l.next == NULL);
	}
	/* a token past its bound */
	bc_buf_puts(&b, "<ListBucketResult><NextContinuationToken>");
	for (int i = 0; i <= BC_S3_LIST_TOKEN_MAX; i++)
		bc_buf_putc(&b, 't');
	bc_buf_puts(&b, "</NextContinuationToken></ListBucketResult>");
	cr_assert_eq(bc_s3_xml_parse_list(b.data, b.len, &l),
	    BC_S3E_MalformedXML);
	/* BC_S3_LIST_MAX_KEYS entries, then one more */
	bc_buf_reset(&b);
	bc_buf_puts(&b, "<ListBucketResult>");
	for (int i = 0; i < BC_S3_LIST_MAX_KEYS; i++)
		bc_buf_printf(&b, "<Contents><Key>k%d</Key><Size>%d</Size>"
		    "</Contents>", i, i);
	cr_assert_eq(bc_s3_xml_parse_list(b.data, b.len, &l), BC_S3E_NONE);
	cr_assert_eq(l.n, BC_S3_LIST_MAX_KEYS);
	cr_assert_str_eq(l.v[999].key, "k999");
	bc_s3_xml_list_fini(&l);
	bc_buf_puts(&b, "<Contents><Key>more</Key><Size>1</Size></Contents>");
	cr_assert_eq(bc_s3_xml_parse_list(b.data, b.len, &l),
	    BC_S3E_MalformedXML);
	bc_buf_fini(&b);
}

/* Every truncation of a valid page parses or is refused, never crashes
 * or leaks. */
LTest(s3_xml, list_truncations)
{
	static const char page[] =
	    "<ListBucketResult><IsTruncated>true</IsTruncated>"
	    "<Contents><Key>a&amp;b</Key><Size>12</Size></Contents>"
	    "<Contents><Key>c</Key><Size>3</Size></Contents>"
	    "<NextContinuationToken>t&lt;1</NextContinuationToken>"
	    "</ListBucketResult>";
	bc_s3_list_t l;

	for (size_t n = 0; n < sizeof(page) - 1; n++) {
		char *cut = malloc(n + 1);

		cr_assert_not_null(cut);
		memcpy(cut, page, n);   /* not NUL-terminated past n */
		if (bc_s3_xml_parse_list(cut, n, &l) == BC_S3E_NONE) {
			cr_assert_leq(l.n, 2);
			bc_s3_xml_list_fini(&l);
		}
		free(cut);
	}
}
