/*
 * test_http_head.c — the request head checks (http_head.h), every rule
 * both ways: the request target's bytes, field names (RFC 9110 tokens),
 * field values (no control byte but HTAB), one Host, one well-formed
 * Content-Length, Transfer-Encoding not with Content-Length, and only
 * "chunked" as a coding. Fields and targets are read only within their
 * lengths (each sits in a buffer of exactly its size: ASan sees a read
 * past it).
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_head.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MAXF 8

/* A head: up to MAXF "Name", "value" pairs (NULL name ends it); lengths
 * are strlen unless *_len is set (to hold NUL bytes). */
typedef struct {
	const char *name, *value;
	size_t      name_len, value_len;
} field_in_t;

typedef struct {
	const char *target;
	size_t      target_len;    /* 0: strlen */
	field_in_t  f[MAXF];
} head_t;

/* Runs the check with every byte in a malloc'd buffer of its own size. */
static bc_s3err_t
check(const head_t *h, const char **why)
{
	bc_http_field_t f[MAXF];
	char *bufs[2 * MAXF + 1];
	size_t n = 0, nb = 0, tl;
	bc_s3err_t e;

	tl = h->target_len != 0 ? h->target_len : strlen(h->target);
	bufs[nb] = malloc(tl > 0 ? tl : 1);
	cr_assert_not_null(bufs[nb]);
	memcpy(bufs[nb], h->target, tl);
	nb++;
	for (; n < MAXF && h->f[n].name != NULL; n++) {
		const field_in_t *in = &h->f[n];
		size_t nl = in->name_len != 0 ? in->name_len : strlen(in->name);
		size_t vl = in->value_len != 0 ? in->value_len :
		    strlen(in->value);

		bufs[nb] = malloc(nl > 0 ? nl : 1);
		bufs[nb + 1] = malloc(vl > 0 ? vl : 1);
		cr_assert(bufs[nb] != NULL && bufs[nb + 1] != NULL);
		memcpy(bufs[nb], in->name, nl);
		memcpy(bufs[nb + 1], in->value, vl);
		f[n].name = bufs[nb];
		f[n].name_len = nl;
		f[n].value = bufs[nb + 1];
		f[n].value_len = vl;
		nb += 2;
	}
	e = bc_http_head_check(bufs[0], tl, f, n, why);
	for (size_t i = 0; i < nb; i++)
		free(bufs[i]);
	return e;
}

#define HOST { "Host", "localhost:9000", 0, 0 }

LTest(http_head, valid_heads)
{
	static const head_t ok[] = {
		{ "/", 0, { HOST } },
		{ "/bkt/key.txt?versionId=1&x-id=GetObject", 0, { HOST } },
		{ "/bkt/%00%20%7F", 0, { HOST } },             /* escapes */
		{ "/bkt/\xc3\xa9\xff\x80", 0, { HOST } },      /* non-ASCII */
		{ "/a", 0, { { NULL, NULL, 0, 0 } } },         /* no Host */
		{ "/a", 0, { HOST, { "Content-Length", "0", 0, 0 } } },
		{ "/a", 0, { HOST, { "content-length", "12345", 0, 0 } } },
		{ "/a", 0, { HOST, { "Content-Length",
		    "9999999999999999999", 0, 0 } } },       /* 19 digits */
		{ "/a", 0, { HOST, { "Content-Length", "0000000000000000001",
		    0, 0 } } },
		{ "/a", 0, { HOST, { "Transfer-Encoding", "chunked", 0, 0 } } },
		{ "/a", 0, { HOST, { "transfer-encoding", "CHUNKED", 0, 0 } } },
		{ "/a", 0, { HOST, { "Transfer-Encoding", " \tchunked\t ", 0,
		    0 } } },
		/* every tchar in a name */
		{ "/a", 0, { HOST, { "!#$%&'*+-.^_`|~09azAZ", "v", 0, 0 } } },
		/* values: HTAB, space, VCHAR, obs-text, empty */
		{ "/a", 0, { HOST, { "X-A", "a\tb c~!", 0, 0 } } },
		{ "/a", 0, { HOST, { "X-A", "\x80\xff\xc3\xa9", 0, 0 } } },
		{ "/a", 0, { HOST, { "X-A", "", 0, 0 } } },
		/* many fields, each rule's header once */
		{ "/a", 0, { HOST, { "Content-Length", "5", 0, 0 },
		    { "X-Amz-Date", "20130524T000000Z", 0, 0 },
		    { "Authorization", "AWS4-HMAC-SHA256 Credential=a/b, "
		    "SignedHeaders=host, Signature=0", 0, 0 },
		    { "x-amz-meta-a", "1", 0, 0 },
		    { "x-amz-meta-a", "2", 0, 0 } } },       /* repeats ok */
	};

	for (size_t i = 0; i < N(ok); i++) {
		const char *why = "untouched";

		cr_expect_eq(check(&ok[i], &why), BC_S3E_NONE, "case %zu (%s)",
		    i, ok[i].target);
		cr_expect_str_eq(why, "untouched", "case %zu", i);
	}
}

typedef struct {
	head_t      h;
	bc_s3err_t  want;
	const char *why;   /* a word the reason must contain */
} bad_t;

LTest(http_head, refused_heads)
{
	static const bad_t bad[] = {
		/* the target */
		{ { "/a b", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\tb", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\rb", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\nb", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\x01", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\x1f", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/a\x7f", 0, { HOST } }, BC_S3E_BadRequest, "target" },
		{ { "/bkt/a.txt\0junk", 15, { HOST } }, BC_S3E_BadRequest,
		    "target" },
		{ { "\0", 1, { HOST } }, BC_S3E_BadRequest, "target" },
		/* names */
		{ { "/a", 0, { HOST, { "Host ", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { " X", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X:Y", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X(Y)", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X\"", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X/Y", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X\tY", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X\xc3\xa9", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X\0Y", "x", 3, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		{ { "/a", 0, { HOST, { "X{", "x", 0, 0 } } },
		    BC_S3E_BadRequest, "name" },
		/* values */
		{ { "/a", 0, { HOST, { "X-A", "a\rb", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { HOST, { "X-A", "a\nb", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { HOST, { "X-A", "a\0b", 0, 3 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { HOST, { "X-A", "\x01", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { HOST, { "X-A", "a\x7f", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { HOST, { "X-A", "a\x1b[0m", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		{ { "/a", 0, { { "Host", "a\r\nX-Evil: 1", 0, 0 } } },
		    BC_S3E_BadRequest, "value" },
		/* Host */
		{ { "/a", 0, { HOST, HOST } }, BC_S3E_BadRequest, "twice" },
		{ { "/a", 0, { HOST, { "host", "other", 0, 0 } } },
		    BC_S3E_BadRequest, "twice" },
		{ { "/a", 0, { HOST, { "HOST", "localhost:9000", 0, 0 } } },
		    BC_S3E_BadRequest, "twice" },
		/* Content-Length */
		{ { "/a", 0, { HOST, { "Content-Length", "5", 0, 0 },
		    { "Content-Length", "6", 0, 0 } } }, BC_S3E_BadRequest,
		    "twice" },
		{ { "/a", 0, { HOST, { "Content-Length", "5", 0, 0 },
		    { "content-length", "5", 0, 0 } } }, BC_S3E_BadRequest,
		    "twice" },
		{ { "/a", 0, { HOST, { "Content-Length", "", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "-1", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "+1", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "1 ", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "5, 5", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "0x10", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "1e3", 0, 0 } } },
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length",
		    "10000000000000000000", 0, 0 } } },     /* 20 digits */
		    BC_S3E_BadRequest, "Content-Length" },
		{ { "/a", 0, { HOST, { "Content-Length", "1\0", 0, 2 } } },
		    BC_S3E_BadRequest, "value" },
		/* Transfer-Encoding with Content-Length, either order */
		{ { "/a", 0, { HOST, { "Content-Length", "5", 0, 0 },
		    { "Transfer-Encoding", "chunked", 0, 0 } } },
		    BC_S3E_BadRequest, "Transfer-Encoding" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunked", 0, 0 },
		    { "Content-Length", "5", 0, 0 } } },
		    BC_S3E_BadRequest, "Transfer-Encoding" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "gzip", 0, 0 },
		    { "Content-Length", "5", 0, 0 } } },
		    BC_S3E_BadRequest, "Transfer-Encoding" },
		/* codings other than chunked */
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "gzip", 0, 0 } } },
		    BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "gzip, chunked",
		    0, 0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunked, gzip",
		    0, 0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunked,chunked",
		    0, 0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "identity", 0,
		    0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "", 0, 0 } } },
		    BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunke", 0,
		    0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunkedx", 0,
		    0 } } }, BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "chunked", 0, 0 },
		    { "Transfer-Encoding", "chunked", 0, 0 } } },
		    BC_S3E_NotImplemented, "chunked" },
		{ { "/a", 0, { HOST, { "Transfer-Encoding", "gzip", 0, 0 },
		    { "transfer-encoding", "chunked", 0, 0 } } },
		    BC_S3E_NotImplemented, "chunked" },
	};

	for (size_t i = 0; i < N(bad); i++) {
		const char *why = NULL;

		cr_expect_eq(check(&bad[i].h, &why), bad[i].want,
		    "case %zu (%s): want %s", i, bad[i].h.target,
		    bc_s3err_code(bad[i].want));
		cr_expect_not_null(why, "case %zu: no reason", i);
		if (why != NULL)
			cr_expect(strstr(why, bad[i].why) != NULL,
			    "case %zu: reason '%s' does not name %s", i, why,
			    bad[i].why);
		/* why may be NULL */
		cr_expect_eq(check(&bad[i].h, NULL), bad[i].want,
		    "case %zu without why", i);
	}
}

/* Only target_len bytes of the target are read: what follows (a NUL,
 * a space) is not part of it. */
LTest(http_head, lengths_bound_the_reads)
{
	static const char t[] = "/bkt/a.txt junk";
	bc_http_field_t f = { "Host", 4, "h\r\n", 1 };

	cr_expect_eq(bc_http_head_check(t, 10, &f, 1, NULL), BC_S3E_NONE);
	cr_expect_eq(bc_http_head_check(t, 11, &f, 1, NULL),
	    BC_S3E_BadRequest);
	f.value_len = 2;
	cr_expect_eq(bc_http_head_check(t, 10, &f, 1, NULL),
	    BC_S3E_BadRequest);
	/* the empty target */
	cr_expect_eq(bc_http_head_check(t, 0, &f, 0, NULL), BC_S3E_BadRequest);
	/* no fields at all */
	cr_expect_eq(bc_http_head_check(t, 1, NULL, 0, NULL), BC_S3E_NONE);
}

/* Every single byte value as the target's byte, a name's and a value's. */
LTest(http_head, every_byte)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";

	for (int c = 0; c < 256; c++) {
		char tb[3] = { '/', (char)c, 'x' };
		char nb[3] = { 'X', (char)c, 'Y' };
		char vb[3] = { 'v', (char)c, 'w' };
		bc_http_field_t f = { nb, 3, "v", 1 };
		bool t_ok = c > 0x20 && c != 0x7f;
		bool n_ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z') || (c != 0 &&
		    strchr(tchar, c) != NULL);
		bool v_ok = c == '\t' || (c >= 0x20 && c != 0x7f);

		cr_expect_eq(bc_http_head_check(tb, 3, NULL, 0, NULL) ==
		    BC_S3E_NONE, t_ok, "target byte 0x%02x", c);
		cr_expect_eq(bc_http_head_check("/", 1, &f, 1, NULL) ==
		    BC_S3E_NONE, n_ok, "name byte 0x%02x", c);
		f.name = "X";
		f.name_len = 1;
		f.value = vb;
		f.value_len = 3;
		cr_expect_eq(bc_http_head_check("/", 1, &f, 1, NULL) ==
		    BC_S3E_NONE, v_ok, "value byte 0x%02x", c);
	}
}

/* The fields that may appear once: once passes, twice (any case, any
 * distance apart, same value or not) is BadRequest; other fields may
 * repeat. */
LTest(http_head, single_fields)
{
	static const char *const once[] = {
		"Host", "Content-Length", "Authorization", "Content-MD5",
		"x-amz-date", "x-amz-content-sha256",
		"x-amz-decoded-content-length", "x-amz-security-token",
		"x-amz-copy-source", "x-amz-copy-source-range",
		"x-amz-trailer",
	};
	static const char *const repeat[] = {
		"x-amz-meta-a", "X-Amz-Meta-A", "Accept", "Cookie",
		"x-amz-copy-source-if-match", "x-amz-copysource", "Hosts",
		"x-amz-date2", "Content-Type", "Range",
	};

	for (size_t i = 0; i < N(once); i++) {
		const char *v = strcmp(once[i], "Content-Length") == 0 ? "5" :
		    "v";
		char upper[64];
		bc_http_field_t f[4] = {
			{ once[i], strlen(once[i]), v, strlen(v) },
			{ "X-Other", 7, "1", 1 },
			{ upper, strlen(once[i]), v, strlen(v) },
			{ "X-Last", 6, "1", 1 },
		};
		const char *why = NULL;

		for (size_t j = 0; once[i][j] != '\0'; j++)
			upper[j] = (char)(once[i][j] >= 'a' &&
			    once[i][j] <= 'z' ? once[i][j] - 32 : once[i][j]);
		upper[strlen(once[i])] = '\0';
		cr_expect_eq(bc_http_head_check("/", 1, f, 2, NULL),
		    BC_S3E_NONE, "%s once", once[i]);
		cr_expect_eq(bc_http_head_check("/", 1, f, 4, &why),
		    BC_S3E_BadRequest, "%s twice", once[i]);
		cr_expect(why != NULL && strstr(why, "twice") != NULL,
		    "%s: %s", once[i], why);
		/* twice with the same spelling and value */
		f[2].name = once[i];
		cr_expect_eq(bc_http_head_check("/", 1, f, 3, NULL),
		    BC_S3E_BadRequest, "%s twice, same", once[i]);
	}
	for (size_t i = 0; i < N(repeat); i++) {
		bc_http_field_t f[3] = {
			{ repeat[i], strlen(repeat[i]), "a", 1 },
			{ repeat[i], strlen(repeat[i]), "b", 1 },
			{ repeat[i], strlen(repeat[i]), "a", 1 },
		};

		cr_expect_eq(bc_http_head_check("/", 1, f, 3, NULL),
		    BC_S3E_NONE, "%s may repeat", repeat[i]);
	}
}
