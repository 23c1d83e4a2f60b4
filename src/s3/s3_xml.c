/* s3_xml.c — DeleteObjects and CompleteMultipartUpload bodies, listing
 * pages, XML character data (see s3_xml.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_xml.h"
#include "util/util_buf.h"
#include "util/util_num.h"

#define ENTITY_MAX 12   /* bytes of a reference, '&' and ';' included */
#define TAG_MAX    40   /* "</" name ">" + NUL */

/* Writes cp (at most 0x10FFFF) as UTF-8; returns the bytes written. */
static int
put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

char *
bc_s3_xml_text(const char *s, size_t n)
{
	char *out = malloc(n + 1);
	size_t o = 0, i = 0;

	if (out == NULL)
		return NULL;
	while (i < n) {
		const char *semi;
		size_t el;

		if (s[i] == '<' || s[i] == '\0')
			goto bad;
		if (s[i] != '&') {
			out[o++] = s[i++];
			continue;
		}
		semi = memchr(s + i, ';', n - i < ENTITY_MAX ? n - i :
		    ENTITY_MAX);
		if (semi == NULL)
			goto bad;
		el = (size_t)(semi - s - i - 1);   /* between '&' and ';' */
		if (el == 3 && memcmp(s + i + 1, "amp", 3) == 0)
			out[o++] = '&';
		else if (el == 2 && memcmp(s + i + 1, "lt", 2) == 0)
			out[o++] = '<';
		else if (el == 2 && memcmp(s + i + 1, "gt", 2) == 0)
			out[o++] = '>';
		else if (el == 4 && memcmp(s + i + 1, "quot", 4) == 0)
			out[o++] = '"';
		else if (el == 4 && memcmp(s + i + 1, "apos", 4) == 0)
			out[o++] = '\'';
		else if (el >= 2 && s[i + 1] == '#') {
			bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
			size_t j = i + (hex ? 3 : 2);
			uint64_t cp = 0;

			if (bc_parse_u64(s + j, (size_t)(semi - s) - j,
			    hex ? 16 : 10, 0x10FFFF, &cp) < 0)
				goto bad;
			if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
				goto bad;
			/* a reference never expands past its own length:
			 * "&#x10FFFF;" is 10 bytes, its UTF-8 is 4 */
			o += (size_t)put_utf8(out + o, cp);
		} else {
			goto bad;
		}
		i = (size_t)(semi - s) + 1;
	}
	out[o] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* Finds the next <name>...</name> in [*p, end): 1 (inner span set, *p
 * past the end tag), 0 (none), -1 (start tag without end tag). */
static int
xml_elem(const char **p, const char *end, const char *name,
    const char **in, size_t *inlen)
{
	char open[TAG_MAX], close_[TAG_MAX];
	int ol = snprintf(open, sizeof(open), "<%s>", name);
	int cl = snprintf(close_, sizeof(close_), "</%s>", name);
	const char *s, *t;

	s = memmem(*p, (size_t)(end - *p), open, (size_t)ol);
	if (s == NULL)
		return 0;
	s += ol;
	t = memmem(s, (size_t)(end - s), close_, (size_t)cl);
	if (t == NULL)
		return -1;
	*in = s;
	*inlen = (size_t)(t - s);
	*p = t + cl;
	return 1;
}

bc_s3err_t
bc_s3_xml_parse_delete(const char *xml, size_t len, char ***keys,
    size_t *nkeys, bool *quiet)
{
	const char *p = xml, *q = xml, *end = xml + len, *in;
	size_t inlen, n = 0;
	char **v = NULL;
	bc_s3err_t e = BC_S3E_MalformedXML;
	int found;

	*keys = NULL;
	*nkeys = 0;
	*quiet = false;
	if (memmem(xml, len, "<Delete", 7) == NULL)
		goto out;
	if (xml_elem(&q, end, "Quiet", &in, &inlen) == 1) {
		bc_span_trim(&in, &inlen);
		*quiet = inlen == 4 && strncasecmp(in, "true", 4) == 0;
	}
	v = calloc(BC_S3_DELETE_MAX_KEYS, sizeof(*v));
	if (v == NULL) {
		e = BC_S3E_InternalError;
		goto out;
	}
	for (;;) {
		const char *kp, *ks;
		size_t kl;

		found = xml_elem(&p, end, "Object", &in, &inlen);
		if (found != 1)
			break;
		kp = in;
		if (n == BC_S3_DELETE_MAX_KEYS ||
		    xml_elem(&kp, in + inlen, "Key", &ks, &kl) != 1)
			goto out;
		v[n] = bc_s3_xml_text(ks, kl);
		if (v[n] == NULL)
			goto out;
		n++;
	}
	if (found < 0 || n == 0)
		goto out;
	*keys = v;
	*nkeys = n;
	v = NULL;
	n = 0;
	e = BC_S3E_NONE;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return e;
}

/* The elements of S3's <Delete>, below the root: where each may stand. */
static const struct {
	const char *name;
	bool        in_object;   /* a child of <Object>, else of <Delete> */
} delete_elems[] = {
	{ "Object", false }, { "Quiet", false }, { "Key", true },
	{ "VersionId", true }, { "ETag", true }, { "LastModifiedTime", true },
	{ "Size", true },
};

/* The delete_elems index of the tag at p (after '<', n bytes left):
 * "Name>" or "/Name>" exactly (*close set for the latter), or -1. */
static int
delete_tag(const char *p, size_t n, bool *close)
{
	*close = n > 0 && p[0] == '/';
	if (*close) {
		p++;
		n--;
	}
	for (int i = 0; i < (int)(sizeof(delete_elems) /
	    sizeof(delete_elems[0])); i++) {
		size_t l = strlen(delete_elems[i].name);

		if (n > l && memcmp(p, delete_elems[i].name, l) == 0 &&
		    p[l] == '>')
			return i;
	}
	return -1;
}

/*
 * true when the markup of a <Delete> body is what the scanner reads
 * exactly: an optional prolog first, one root start tag ("<Delete" then
 * '>' or a blank), then only the exact tags of delete_elems, properly
 * nested (an <Object> in the root, the others in an <Object>, no element
 * inside those), one <Key> in each <Object>, and "</Delete>" last. A
 * body the scanner could read otherwise than S3's XML parser (a comment,
 * CDATA, a tag with blanks, attributes or a prefix, a second <Key>, a
 * stray or nested element) is refused rather than filtered: a key hidden
 * in it would slip past the filter.
 */
static bool
delete_markup_exact(const char *xml, size_t len)
{
	const char *p = xml, *end = xml + len;
	int open = -1;            /* the leaf element open, or -1 */
	bool root = false, done = false, object = false, key = false;

	while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
		size_t n = (size_t)(end - p) - 1;
		bool close;
		int t;

		p++;
		if (done)
			return false;     /* markup after the root */
		if (p - 1 == xml && n >= 5 && memcmp(p, "?xml ", 5) == 0)
			continue;
		if (!root) {
			if (n < 7 || memcmp(p, "Delete", 6) != 0 ||
			    (p[6] != '>' && p[6] != ' '))
				return false;
			root = true;
			continue;
		}
		if (n >= 8 && memcmp(p, "/Delete>", 8) == 0) {
			if (object || open >= 0)
				return false;
			done = true;
			continue;
		}
		t = delete_tag(p, n, &close);
		if (t < 0)
			return false;
		if (close) {
			if (t == 0) {             /* </Object> */
				if (!object || open >= 0 || !key)
					return false;
				object = false;
			} else if (open != t) {
				return false;
			} else {
				open = -1;
			}
		} else if (open >= 0 || delete_elems[t].in_object != object ||
		    (t == 0 && object)) {
			return false;
		} else if (t == 0) {              /* <Object> */
			object = true;
			key = false;
		} else {
			if (t == 2 && key)        /* a second <Key> */
				return false;
			key = key || t == 2;
			open = t;
		}
	}
	return root && !object && open < 0;
}

bc_s3err_t
bc_s3_xml_filter_delete(const char *xml, size_t len,
    bool (*keep)(void *arg, const char *key), void *arg, bc_buf_t *out,
    char ***refused, size_t *nrefused, size_t *nkept)
{
	const char *p = xml, *copied = xml, *end = xml + len, *in;
	size_t inlen, nr = 0, nk = 0;
	char **v = NULL, *key = NULL;
	bc_s3err_t e = BC_S3E_MalformedXML;
	int found;

	*refused = NULL;
	*nrefused = *nkept = 0;
	if (memmem(xml, len, "<Delete", 7) == NULL ||
	    !delete_markup_exact(xml, len))
		goto out;
	v = calloc(BC_S3_DELETE_MAX_KEYS, sizeof(*v));
	if (v == NULL) {
		e = BC_S3E_InternalError;
		goto out;
	}
	for (;;) {
		const char *start, *kp, *ks;
		size_t kl;

		found = xml_elem(&p, end, "Object", &in, &inlen);
		if (found != 1)
			break;
		start = in - strlen("<Object>");
		kp = in;
		if (nr + nk == BC_S3_DELETE_MAX_KEYS ||
		    xml_elem(&kp, in + inlen, "Key", &ks, &kl) != 1)
			goto out;
		key = bc_s3_xml_text(ks, kl);
		if (key == NULL)
			goto out;
		if (keep(arg, key)) {
			nk++;
			free(key);
		} else {
			/* copy up to this <Object>, skip through its end */
			if (bc_buf_append(out, copied,
			    (size_t)(start - copied)) < 0) {
				e = BC_S3E_InternalError;
				goto out;
			}
			copied = p;
			v[nr++] = key;
		}
		key = NULL;
	}
	if (found < 0 || nr + nk == 0)
		goto out;
	if (bc_buf_append(out, copied, (size_t)(end - copied)) < 0) {
		e = BC_S3E_InternalError;
		goto out;
	}
	*refused = v;
	*nrefused = nr;
	*nkept = nk;
	v = NULL;
	nr = 0;
	e = BC_S3E_NONE;
out:
	free(key);
	for (size_t i = 0; i < nr; i++)
		free(v[i]);
	free(v);
	return e;
}

int
bc_s3_xml_key_error(bc_buf_t *b, const char *key, bc_s3err_t e)
{
	int rv = 0;

	rv |= bc_buf_puts(b, "<Error><Key>");
	rv |= bc_buf_put_xml(b, key);
	rv |= bc_buf_puts(b, "</Key><Code>");
	rv |= bc_buf_put_xml(b, bc_s3err_code(e));
	rv |= bc_buf_puts(b, "</Code><Message>");
	rv |= bc_buf_put_xml(b, bc_s3err_message(e));
	rv |= bc_buf_puts(b, "</Message></Error>");
	return rv < 0 ? rv : 0;
}

int
bc_s3_xml_delete_result_errors(const char *xml, size_t len,
    char *const *keys, size_t n, bc_s3err_t e, bc_buf_t *out)
{
	static const char tail[] = "</DeleteResult>";
	const char *at = NULL, *p = xml;
	int rv = 0;

	/* the last end tag: a key's text cannot hold one (its '<' is
	 * escaped) */
	while ((p = memmem(p, len - (size_t)(p - xml), tail,
	    sizeof(tail) - 1)) != NULL) {
		at = p;
		p += sizeof(tail) - 1;
	}
	if (at == NULL)
		return bc_buf_append(out, xml, len);
	rv |= bc_buf_append(out, xml, (size_t)(at - xml));
	for (size_t i = 0; i < n; i++)
		rv |= bc_s3_xml_key_error(out, keys[i], e);
	rv |= bc_buf_append(out, at, len - (size_t)(at - xml));
	return rv < 0 ? rv : 0;
}

/* Reads one <Part> (inner span in, inlen) into *part. */
static bc_s3err_t
parse_part(const char *in, size_t inlen, bc_s3_part_t *part)
{
	const char *q = in, *s, *es;
	size_t sl, el;
	char *etag = NULL;
	uint64_t pn = 0;
	bc_s3err_t e = BC_S3E_MalformedXML;

	if (xml_elem(&q, in + inlen, "PartNumber", &s, &sl) != 1)
		goto out;
	bc_span_trim(&s, &sl);
	/* a decimal without sign, of at most 7 digits */
	if (sl > 7 || !bc_u64_parse(s, sl, &pn) || pn < 1 ||
	    pn > BC_S3_MAX_PARTS) {
		e = BC_S3E_InvalidArgument;
		goto out;
	}
	q = in;
	if (xml_elem(&q, in + inlen, "ETag", &s, &sl) != 1)
		goto out;
	etag = bc_s3_xml_text(s, sl);
	if (etag == NULL)
		goto out;
	es = etag;
	el = strlen(etag);
	bc_span_trim(&es, &el);
	if (el >= 2 && es[0] == '"' && es[el - 1] == '"') {
		es++;
		el -= 2;
	}
	if (el >= BC_S3_ETAG_LEN) {
		e = BC_S3E_InvalidPart;
		goto out;
	}
	memcpy(part->etag, es, el);
	part->etag[el] = '\0';
	part->number = pn;
	e = BC_S3E_NONE;
out:
	free(etag);
	return e;
}

bc_s3err_t
bc_s3_xml_parse_complete(const char *xml, size_t len, bc_s3_part_t **parts,
    size_t *nparts)
{
	const char *p = xml, *end = xml + len, *in;
	size_t inlen, n = 0, cap = 0;
	bc_s3_part_t *v = NULL;
	bc_s3err_t e = BC_S3E_MalformedXML;
	int found;

	*parts = NULL;
	*nparts = 0;
	if (memmem(xml, len, "<CompleteMultipartUpload", 24) == NULL)
		goto out;
	for (;;) {
		found = xml_elem(&p, end, "Part", &in, &inlen);
		if (found != 1)
			break;
		if (n == BC_S3_MAX_PARTS)
			goto out;
		if (n == cap) {
			bc_s3_part_t *nv;

			cap = cap == 0 ? 64 : cap * 2;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL) {
				e = BC_S3E_InternalError;
				goto out;
			}
			v = nv;
		}
		e = parse_part(in, inlen, &v[n]);
		if (e != BC_S3E_NONE)
			goto out;
		if (n > 0 && v[n].number <= v[n - 1].number) {
			e = BC_S3E_InvalidPartOrder;
			goto out;
		}
		n++;
		e = BC_S3E_MalformedXML;
	}
	if (found < 0 || n == 0)
		goto out;
	*parts = v;
	*nparts = n;
	v = NULL;
	e = BC_S3E_NONE;
out:
	free(v);
	return e;
}

/* ---- listings ----------------------------------------------------------- */

void
bc_s3_xml_list_fini(bc_s3_list_t *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].key);
	free(l->v);
	free(l->next);
	memset(l, 0, sizeof(*l));
}

/* Reads one <Contents> (inner span in, inlen) into *e. */
static bc_s3err_t
parse_contents(const char *in, size_t inlen, bc_s3_list_entry_t *e)
{
	const char *q = in, *s;
	size_t sl;

	if (xml_elem(&q, in + inlen, "Size", &s, &sl) != 1)
		return BC_S3E_MalformedXML;
	bc_span_trim(&s, &sl);
	if (sl > 20 || !bc_u64_parse(s, sl, &e->size))
		return BC_S3E_MalformedXML;
	q = in;
	if (xml_elem(&q, in + inlen, "Key", &s, &sl) != 1 || sl == 0)
		return BC_S3E_MalformedXML;
	e->key = bc_s3_xml_text(s, sl);
	if (e->key == NULL || e->key[0] == '\0') {
		free(e->key);
		e->key = NULL;
		return BC_S3E_MalformedXML;
	}
	return BC_S3E_NONE;
}

/* The decoded text of the first <name> of [xml, end) into *out (NULL when
 * there is none). */
static bc_s3err_t
list_token(const char *xml, const char *end, const char *name, char **out)
{
	const char *q = xml, *s;
	size_t sl;
	int found = xml_elem(&q, end, name, &s, &sl);

	*out = NULL;
	if (found == 0)
		return BC_S3E_NONE;
	if (found < 0 || sl > BC_S3_LIST_TOKEN_MAX * 6)
		return BC_S3E_MalformedXML;
	*out = bc_s3_xml_text(s, sl);
	if (*out == NULL || strlen(*out) > BC_S3_LIST_TOKEN_MAX) {
		free(*out);
		*out = NULL;
		return BC_S3E_MalformedXML;
	}
	return BC_S3E_NONE;
}

bc_s3err_t
bc_s3_xml_parse_list(const char *xml, size_t len, bc_s3_list_t *out)
{
	const char *p = xml, *q = xml, *end = xml + len, *in;
	size_t inlen;
	bc_s3err_t e = BC_S3E_MalformedXML;
	int found;

	memset(out, 0, sizeof(*out));
	if (memmem(xml, len, "<ListBucketResult", 17) == NULL)
		goto fail;
	if (xml_elem(&q, end, "IsTruncated", &in, &inlen) == 1) {
		bc_span_trim(&in, &inlen);
		out->truncated = inlen == 4 && strncasecmp(in, "true", 4) == 0;
	}
	e = list_token(xml, end, "NextContinuationToken", &out->next);
	if (e == BC_S3E_NONE && out->next == NULL)
		e = list_token(xml, end, "NextMarker", &out->next);
	if (e != BC_S3E_NONE)
		goto fail;
	e = BC_S3E_MalformedXML;
	for (;;) {
		found = xml_elem(&p, end, "Contents", &in, &inlen);
		if (found != 1)
			break;
		if (out->n == BC_S3_LIST_MAX_KEYS) {
			e = BC_S3E_MalformedXML;
			goto fail;
		}
		if (out->v == NULL) {
			out->v = calloc(BC_S3_LIST_MAX_KEYS, sizeof(*out->v));
			if (out->v == NULL) {
				e = BC_S3E_InternalError;
				goto fail;
			}
		}
		e = parse_contents(in, inlen, &out->v[out->n]);
		if (e != BC_S3E_NONE)
			goto fail;
		out->n++;
	}
	if (found < 0) {
		e = BC_S3E_MalformedXML;
		goto fail;
	}
	return BC_S3E_NONE;
fail:
	bc_s3_xml_list_fini(out);
	return e;
}
