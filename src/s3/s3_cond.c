/* s3_cond.c — conditional request evaluation and HTTP dates (see s3_cond.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_cond.h"
#include "util/util_error.h"

#define MAX_LIST 8192   /* longest ETag list looked at */


void
bc_cond_from_headers(bc_cond_t *c, const bc_kvlist_t *h)
{
	c->if_match = bc_kv_get(h, "If-Match");
	c->if_none_match = bc_kv_get(h, "If-None-Match");
	c->if_modified_since = bc_kv_get(h, "If-Modified-Since");
	c->if_unmodified_since = bc_kv_get(h, "If-Unmodified-Since");
}

void
bc_cond_from_copy_headers(bc_cond_t *c, const bc_kvlist_t *h)
{
	c->if_match = bc_kv_get(h, "x-amz-copy-source-if-match");
	c->if_none_match = bc_kv_get(h, "x-amz-copy-source-if-none-match");
	c->if_modified_since = bc_kv_get(h,
	    "x-amz-copy-source-if-modified-since");
	c->if_unmodified_since = bc_kv_get(h,
	    "x-amz-copy-source-if-unmodified-since");
}

bool
bc_cond_any(const bc_cond_t *c)
{
	return c->if_match != NULL || c->if_none_match != NULL ||
	    c->if_modified_since != NULL || c->if_unmodified_since != NULL;
}

static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* etag without its surrounding quotes: start and length. */
static void
strip_quotes(const char *etag, const char **s, size_t *n)
{
	size_t len = strlen(etag);

	if (len >= 2 && etag[0] == '"' && etag[len - 1] == '"') {
		*s = etag + 1;
		*n = len - 2;
	} else {
		*s = etag;
		*n = len;
	}
}

bool
bc_cond_etag_match(const char *list, const char *etag, bool weak)
{
	const char *p = list, *end, *es;
	size_t en, len;

	if (list == NULL || etag == NULL)
		return false;
	len = strnlen(list, MAX_LIST + 1);
	if (len > MAX_LIST)
		return false;
	end = list + len;
	strip_quotes(etag, &es, &en);
	for (;;) {
		const char *ts;
		size_t tn;
		bool is_weak = false;

		while (p < end && (is_ows(*p) || *p == ','))
			p++;
		if (p == end)
			return false;
		if (*p == '*') {
			p++;
			while (p < end && is_ows(*p))
				p++;
			if (p < end && *p != ',')
				return false;
			return true;
		}
		if (end - p >= 2 && p[0] == 'W' && p[1] == '/') {
			is_weak = true;
			p += 2;
		}
		if (p < end && *p == '"') {
			const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));

			if (q == NULL)
				return false;   /* unterminated: malformed */
			ts = p + 1;
			tn = (size_t)(q - ts);
			p = q + 1;
			while (p < end && is_ows(*p))
				p++;
			if (p < end && *p != ',')
				return false;
		} else {
			/* bare token, as S3 accepts: up to the next comma */
			const char *q = memchr(p, ',', (size_t)(end - p));

			ts = p;
			p = q != NULL ? q : end;
			tn = (size_t)(p - ts);
			while (tn > 0 && is_ows(ts[tn - 1]))
				tn--;
			if (tn == 0 || memchr(ts, '"', tn) != NULL)
				return false;
		}
		if ((weak || !is_weak) && tn == en && memcmp(ts, es, en) == 0)
			return true;
	}
}

bc_s3err_t
bc_cond_eval(const bc_cond_t *c, bc_cond_mode_t mode, const char *etag,
    time_t last_modified)
{
	time_t t;

	if (c->if_match != NULL) {
		if (!bc_cond_etag_match(c->if_match, etag, false))
			return BC_S3E_PreconditionFailed;
	} else if (c->if_unmodified_since != NULL &&
	    bc_http_date_parse(c->if_unmodified_since, &t) == 0 &&
	    last_modified > t) {
		return BC_S3E_PreconditionFailed;
	}
	if (c->if_none_match != NULL) {
		if (bc_cond_etag_match(c->if_none_match, etag, true))
			return mode == BC_COND_READ ? BC_S3E_NotModified :
			    BC_S3E_PreconditionFailed;
	} else if (mode != BC_COND_WRITE && c->if_modified_since != NULL &&
	    bc_http_date_parse(c->if_modified_since, &t) == 0 &&
	    last_modified <= t) {
		return mode == BC_COND_READ ? BC_S3E_NotModified :
		    BC_S3E_PreconditionFailed;
	}
	return BC_S3E_NONE;
}
