/* util_buf.c — growable NUL-terminated byte buffer (see util_buf.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util_buf.h"
#include "util/util_error.h"

void
bc_buf_init(bc_buf_t *b, size_t limit)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->limit = limit;
}

void
bc_buf_fini(bc_buf_t *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
bc_buf_reset(bc_buf_t *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

int
bc_buf_reserve(bc_buf_t *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > (size_t)-1 / 2 - b->len)
		return BC_E2BIG;
	need = b->len + extra + 1;
	if (b->limit != 0 && need > b->limit + 1)
		return BC_E2BIG;
	if (need <= b->cap)
		return 0;
	cap = b->cap < 64 ? 64 : b->cap;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return BC_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int
bc_buf_append(bc_buf_t *b, const void *p, size_t n)
{
	int rv = bc_buf_reserve(b, n);

	if (rv < 0)
		return rv;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
bc_buf_puts(bc_buf_t *b, const char *s)
{
	return bc_buf_append(b, s, strlen(s));
}

int
bc_buf_putc(bc_buf_t *b, char c)
{
	return bc_buf_append(b, &c, 1);
}

int
bc_buf_vprintf(bc_buf_t *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rv;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return BC_EINVAL;
	rv = bc_buf_reserve(b, (size_t)n);
	if (rv < 0)
		return rv;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
bc_buf_printf(bc_buf_t *b, const char *fmt, ...)
{
	va_list ap;
	int rv;

	va_start(ap, fmt);
	rv = bc_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rv;
}

size_t
bc_utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;           /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;           /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;           /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;           /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

int
bc_buf_put_xml(bc_buf_t *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int rv = 0;

	while (*p != '\0' && rv == 0) {
		size_t n = bc_utf8_len(p);

		switch (*p) {
		case '&':  rv = bc_buf_puts(b, "&amp;"); break;
		case '<':  rv = bc_buf_puts(b, "&lt;"); break;
		case '>':  rv = bc_buf_puts(b, "&gt;"); break;
		case '"':  rv = bc_buf_puts(b, "&quot;"); break;
		case '\'': rv = bc_buf_puts(b, "&apos;"); break;
		default:
			if (n == 0)   /* not UTF-8: U+FFFD */
				rv = bc_buf_puts(b, "\xef\xbf\xbd");
			else
				rv = bc_buf_append(b, p, n);
			break;
		}
		p += n > 0 ? n : 1;
	}
	return rv;
}

const char *
bc_buf_str(const bc_buf_t *b)
{
	return b->data != NULL ? b->data : "";
}

char *
bc_buf_steal(bc_buf_t *b)
{
	char *p = b->data;

	if (p == NULL)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void
bc_span_trim(const char **s, size_t *n)
{
	while (*n > 0 && isspace((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}
