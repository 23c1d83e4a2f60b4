/*
 * util_buf.h — a growable byte buffer, always NUL-terminated.
 *
 * Ownership: the buffer owns data; bc_buf_fini() frees it and leaves an
 * empty buffer that can be reused. A buffer initialised with a limit never
 * grows past it: appends that would return BC_E2BIG and leave it unchanged.
 * Not thread-safe.
 */
#ifndef BC_UTIL_BUF_H
#define BC_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct bc_buf_s {
	char  *data;   /* NULL or len bytes plus a NUL */
	size_t len;
	size_t cap;
	size_t limit;  /* 0: no limit */
} bc_buf_t;

#define BC_BUF_INIT { NULL, 0, 0, 0 }

void bc_buf_init(bc_buf_t *b, size_t limit);
void bc_buf_fini(bc_buf_t *b);
void bc_buf_reset(bc_buf_t *b);             /* len = 0, keeps memory */
int  bc_buf_reserve(bc_buf_t *b, size_t extra);
int  bc_buf_append(bc_buf_t *b, const void *p, size_t n);
int  bc_buf_puts(bc_buf_t *b, const char *s);
int  bc_buf_putc(bc_buf_t *b, char c);
int  bc_buf_printf(bc_buf_t *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int  bc_buf_vprintf(bc_buf_t *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Appends s with the five XML special characters escaped, and each byte
 * that is not part of valid UTF-8 as U+FFFD (the output is UTF-8 text
 * whatever s holds). */
int  bc_buf_put_xml(bc_buf_t *b, const char *s);

/* Length of the well-formed UTF-8 sequence s starts with (1-4), or 0 (RFC
 * 3629: no overlong forms, surrogates or code points past U+10FFFF). s is
 * NUL-terminated, so a cut sequence stops at the NUL. */
size_t bc_utf8_len(const unsigned char *s);
/* Returns data (or "" when empty); the buffer keeps ownership. */
const char *bc_buf_str(const bc_buf_t *b);
/* Hands data to the caller (free() it) and empties the buffer. */
char *bc_buf_steal(bc_buf_t *b);

/* Narrows the span of *n bytes at *s (need not be NUL-terminated) past
 * its leading and trailing white space (isspace). */
void bc_span_trim(const char **s, size_t *n);

#endif
