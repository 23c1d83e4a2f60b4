/*
 * http_head.c — request head checks (see http_head.h).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "http/http_head.h"

#define MAX_CONTENT_LENGTH_DIGITS 19   /* fits in a uint64_t */

/* Fields that may appear once: they frame the body, or say who signed it
 * and what it reads or writes. The gateway reads the first of a name;
 * an upstream given two might read the other. */
typedef struct name_s {
	const char *s;
	size_t      len;
} name_t;

#define NAME(s) { s, sizeof(s) - 1 }

static const name_t single_fields[] = {
	NAME("Host"), NAME("Content-Length"), NAME("Authorization"),
	NAME("Content-MD5"), NAME("x-amz-date"), NAME("x-amz-content-sha256"),
	NAME("x-amz-decoded-content-length"), NAME("x-amz-security-token"),
	NAME("x-amz-copy-source"), NAME("x-amz-copy-source-range"),
	NAME("x-amz-trailer"),
};
#define NSINGLE (sizeof(single_fields) / sizeof(single_fields[0]))

static const name_t content_length = NAME("Content-Length");
static const name_t transfer_encoding = NAME("Transfer-Encoding");

/* RFC 9110 tchar: "!#$%&'*+-.^_`|~", digits and letters. */
static bool
is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return true;
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'':
	case '*': case '+': case '-': case '.': case '^': case '_':
	case '`': case '|': case '~':
		return true;
	default:
		return false;
	}
}

static bool
name_is(const bc_http_field_t *f, const name_t *name)
{
	return f->name_len == name->len &&
	    strncasecmp(f->name, name->s, name->len) == 0;
}

static bool
token_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

/* field-value: VCHAR, obs-text, SP and HTAB; no other control byte. */
static bool
value_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

/* origin-form request target: no control byte, space or NUL (non-ASCII
 * bytes pass: some clients send UTF-8 keys unencoded). */
static bool
target_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

static bool
digits_ok(const char *s, size_t n)
{
	if (n == 0 || n > MAX_CONTENT_LENGTH_DIGITS)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Transfer-Encoding is exactly "chunked", with optional blanks around. */
static bool
te_is_chunked(const char *s, size_t n)
{
	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n == 7 && strncasecmp(s, "chunked", 7) == 0;
}

/* true when f's name is one of single_fields and an earlier field has
 * it too. */
static bool
repeated_single(const bc_http_field_t *f, size_t i)
{
	for (size_t k = 0; k < NSINGLE; k++) {
		if (!name_is(&f[i], &single_fields[k]))
			continue;
		for (size_t j = 0; j < i; j++)
			if (name_is(&f[j], &single_fields[k]))
				return true;
		return false;
	}
	return false;
}

bc_s3err_t
bc_http_head_check(const char *target, size_t target_len,
    const bc_http_field_t *f, size_t n, const char **why)
{
	const char *dummy;
	size_t lengths = 0, codings = 0;
	bool chunked = true;

	if (why == NULL)
		why = &dummy;
	if (!target_ok(target, target_len)) {
		*why = "the request target holds a control character";
		return BC_S3E_BadRequest;
	}
	for (size_t i = 0; i < n; i++) {
		if (!token_ok(f[i].name, f[i].name_len)) {
			*why = "a header name is not a token";
			return BC_S3E_BadRequest;
		}
		if (!value_ok(f[i].value, f[i].value_len)) {
			*why = "a header value holds a control character";
			return BC_S3E_BadRequest;
		}
		if (repeated_single(f, i)) {
			*why = "a header that may appear once appears twice";
			return BC_S3E_BadRequest;
		}
		if (name_is(&f[i], &content_length)) {
			lengths++;
			if (!digits_ok(f[i].value, f[i].value_len)) {
				*why = "Content-Length is not a number";
				return BC_S3E_BadRequest;
			}
		} else if (name_is(&f[i], &transfer_encoding)) {
			codings++;
			chunked = chunked && te_is_chunked(f[i].value,
			    f[i].value_len);
		}
	}
	if (codings > 0 && lengths > 0) {
		*why = "both Transfer-Encoding and Content-Length";
		return BC_S3E_BadRequest;
	}
	if (codings > 1 || !chunked) {
		*why = "a Transfer-Encoding other than chunked";
		return BC_S3E_NotImplemented;
	}
	return BC_S3E_NONE;
}
