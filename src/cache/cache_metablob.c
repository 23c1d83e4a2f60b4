/*
 * cache_metablob.c — the metadata blob lower tiers keep (cache_metablob.h).
 *
 * Layout, integers little-endian:
 *
 *   off  len  field
 *    0    4   magic "BCOM"
 *    4    1   version (BC_METABLOB_VERSION)
 *    5    1   flags: 0 (anything else is another format)
 *    6    2   number of headers (<= BC_METABLOB_HEADERS_MAX)
 *    8    8   object size
 *   16    8   Last-Modified, signed seconds since the epoch (0: none)
 *   24    8   validated at, milliseconds since the epoch (wall clock)
 *   32    2   ETag length (1..sizeof(etag) - 1), then the ETag
 *   then, per header: 2 name length (1..BC_METABLOB_NAME_MAX), the name,
 *                     2 value length (0..BC_METABLOB_VALUE_MAX), the value
 *
 * and nothing after the last header; the whole at most BC_METABLOB_MAX.
 * Strings carry no NUL. The ETag and values carry no control character
 * but HTAB (CR or LF would let a damaged blob split a response header);
 * names are HTTP tokens.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_metablob.h"
#include "util/util_error.h"
#include "util/util_kv.h"

#define MAGIC     "BCOM"
#define FIXED_LEN 34   /* bytes before the ETag */

/* ---- checks shared by both directions ------------------------------------ */

static bool
tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static bool
name_ok(const char *s, size_t n)
{
	if (n == 0 || n > BC_METABLOB_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\0' || !tchar((unsigned char)s[i]))
			return false;
	return true;
}

/* A header value or an ETag: no NUL, CR, LF or other control character
 * but HTAB. */
static bool
text_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

static bool
etag_ok(const char *s, size_t n)
{
	return n > 0 && n < sizeof(((bc_objmeta_t *)0)->etag) && text_ok(s, n);
}

/* ---- encoding ------------------------------------------------------------ */

static void
put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int
put_int(bc_buf_t *out, uint64_t v, unsigned n)
{
	uint8_t b[8];

	put_le(b, v, n);
	return bc_buf_append(out, b, n);
}

static int
put_str(bc_buf_t *out, const char *s, size_t n)
{
	int rv = put_int(out, n, 2);

	return rv < 0 ? rv : bc_buf_append(out, s, n);
}

int
bc_cache_metablob_encode(bc_buf_t *out, const bc_objmeta_t *m,
    uint64_t validated_ms)
{
	const bc_kvlist_t *h = &m->headers;
	size_t start = out->len, total, elen = strlen(m->etag);
	uint8_t fixed[FIXED_LEN];
	int rv;

	if (h->n > BC_METABLOB_HEADERS_MAX || !etag_ok(m->etag, elen))
		return BC_E2BIG;
	total = FIXED_LEN + elen;
	for (size_t i = 0; i < h->n; i++) {
		size_t nl = strlen(h->v[i].name), vl = strlen(h->v[i].value);

		if (!name_ok(h->v[i].name, nl) || vl > BC_METABLOB_VALUE_MAX ||
		    !text_ok(h->v[i].value, vl))
			return BC_E2BIG;
		total += 4 + nl + vl;
	}
	if (total > BC_METABLOB_MAX)
		return BC_E2BIG;
	memcpy(fixed, MAGIC, 4);
	fixed[4] = BC_METABLOB_VERSION;
	fixed[5] = 0;
	put_le(fixed + 6, h->n, 2);
	put_le(fixed + 8, m->size, 8);
	put_le(fixed + 16, (uint64_t)(int64_t)m->last_modified, 8);
	put_le(fixed + 24, validated_ms, 8);
	put_le(fixed + 32, elen, 2);
	rv = bc_buf_reserve(out, total);
	if (rv == 0)
		rv = bc_buf_append(out, fixed, sizeof(fixed));
	if (rv == 0)
		rv = bc_buf_append(out, m->etag, elen);
	for (size_t i = 0; i < h->n && rv == 0; i++) {
		rv = put_str(out, h->v[i].name, strlen(h->v[i].name));
		if (rv == 0)
			rv = put_str(out, h->v[i].value,
			    strlen(h->v[i].value));
	}
	if (rv < 0) {
		out->len = start;   /* nothing appended */
		if (out->data != NULL)
			out->data[start] = '\0';
		return rv == BC_E2BIG ? BC_E2BIG : BC_ENOMEM;
	}
	return 0;
}

/* ---- decoding ------------------------------------------------------------ */

/* A reader over the blob: every take checks what is left. */
struct rd {
	const uint8_t *p;
	size_t         left;
};

static bool
take(struct rd *r, size_t n, const uint8_t **out)
{
	if (n > r->left)
		return false;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static bool
take_int(struct rd *r, unsigned n, uint64_t *v)
{
	const uint8_t *p;

	if (!take(r, n, &p))
		return false;
	*v = 0;
	for (unsigned i = 0; i < n; i++)
		*v |= (uint64_t)p[i] << (8 * i);
	return true;
}

/* A length-prefixed string of at most max bytes. */
static bool
take_str(struct rd *r, size_t max, const char **s, size_t *n)
{
	const uint8_t *p;
	uint64_t len;

	if (!take_int(r, 2, &len) || len > max || !take(r, (size_t)len, &p))
		return false;
	*s = (const char *)p;
	*n = (size_t)len;
	return true;
}

/* Decodes len bytes at blob, which are followed by a NUL (the strings in
 * it are copied with bc_kv_addn, whose strndup must find one in bounds:
 * glibc's never reads past the length, a checker's may). */
static int
decode(const uint8_t *blob, size_t len, bc_objmeta_t *m,
    uint64_t *validated_ms)
{
	struct rd r = { blob, len };
	const uint8_t *p = NULL;
	uint64_t nh = 0, size = 0, lm = 0, vms = 0, elen = 0;
	int rv = BC_EPROTO;

	(void)take(&r, 4, &p);
	if (memcmp(p, MAGIC, 4) != 0)
		return BC_EPROTO;
	(void)take(&r, 1, &p);
	if (p[0] != BC_METABLOB_VERSION)
		return BC_EPROTO;
	(void)take(&r, 1, &p);
	if (p[0] != 0)
		return BC_EPROTO;
	(void)take_int(&r, 2, &nh);
	(void)take_int(&r, 8, &size);
	(void)take_int(&r, 8, &lm);
	(void)take_int(&r, 8, &vms);
	(void)take_int(&r, 2, &elen);
	if (nh > BC_METABLOB_HEADERS_MAX || !take(&r, (size_t)elen, &p) ||
	    !etag_ok((const char *)p, (size_t)elen))
		return BC_EPROTO;
	memcpy(m->etag, p, (size_t)elen);
	m->etag[elen] = '\0';
	m->size = size;
	m->last_modified = (time_t)(int64_t)lm;
	for (uint64_t i = 0; i < nh; i++) {
		const char *name, *value;
		size_t nl, vl;

		if (!take_str(&r, BC_METABLOB_NAME_MAX, &name, &nl) ||
		    !name_ok(name, nl) ||
		    !take_str(&r, BC_METABLOB_VALUE_MAX, &value, &vl) ||
		    !text_ok(value, vl))
			goto fail;
		if (bc_kv_addn(&m->headers, name, nl, value, vl) < 0) {
			rv = BC_ENOMEM;
			goto fail;
		}
	}
	if (r.left != 0)
		goto fail;
	*validated_ms = vms;
	return 0;
fail:
	bc_objmeta_fini(m);
	memset(m, 0, sizeof(*m));
	return rv;
}

int
bc_cache_metablob_decode(const void *blob, size_t len, bc_objmeta_t *m,
    uint64_t *validated_ms)
{
	uint8_t *copy;
	int rv;

	memset(m, 0, sizeof(*m));
	if (blob == NULL || len < FIXED_LEN || len > BC_METABLOB_MAX)
		return BC_EPROTO;
	copy = malloc(len + 1);
	if (copy == NULL)
		return BC_ENOMEM;
	memcpy(copy, blob, len);
	copy[len] = '\0';
	rv = decode(copy, len, m, validated_ms);
	free(copy);
	return rv;
}
