/*
 * http_head.h — the request head checks the HTTP front end makes before
 * anything else looks at a request: the message framing and field syntax
 * rules of RFC 9112/9110 that a tolerant parser lets through and that a
 * proxy in front of the gateway may read differently (request smuggling).
 *
 * Pure and bounded: the fields are only read. Thread-safe.
 */
#ifndef BC_HTTP_HEAD_H
#define BC_HTTP_HEAD_H

#include <stddef.h>

#include "s3/s3_error.h"

/* One header field as received; name and value need not be terminated. */
typedef struct bc_http_field_s {
	const char *name;
	size_t      name_len;
	const char *value;
	size_t      value_len;
} bc_http_field_t;

/*
 * Checks the request target (target_len bytes, the whole of it as it was
 * on the request line) and the header fields. Returns BC_S3E_NONE, or:
 *   BadRequest      a target byte that is a control character, space or
 *                   NUL; a field name that is not an RFC 9110 token; a
 *                   value with a control character other than HTAB; a
 *                   second Host, Content-Length, Authorization,
 *                   Content-MD5 or x-amz- header that frames, signs or
 *                   names what the request reads (x-amz-date,
 *                   -content-sha256, -decoded-content-length,
 *                   -security-token, -copy-source, -copy-source-range,
 *                   -trailer); a Content-Length that is not 1-19 digits;
 *                   Transfer-Encoding together with Content-Length;
 *   NotImplemented  a Transfer-Encoding other than "chunked" (the body's
 *                   end cannot be known: the connection must close).
 * *why (when not NULL) is set to a static phrase naming the rule broken.
 */
bc_s3err_t bc_http_head_check(const char *target, size_t target_len,
    const bc_http_field_t *f, size_t n, const char **why);

#endif
