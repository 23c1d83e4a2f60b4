/*
 * creds_parse.c — the credential services' answers (see creds_parse.h):
 * a bounded JSON reader for flat documents whose wanted members are
 * strings, an exact-tag XML scanner for STS, the IMDS role list.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "creds/creds_parse.h"
#include "s3/s3_date.h"
#include "s3/s3_xml.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define MAX_DEPTH 32
#define MAX_SHOWN 160   /* bytes of a service's message echoed in err */

/* ---- JSON ---------------------------------------------------------------- */

typedef struct jcur_s {
	const char *p;
	const char *end;
	int         depth;
} jcur_t;

/* A wanted member: its name and, once read, its decoded string value. */
typedef struct jfield_s {
	const char *name;
	char       *val;
	bool        seen;       /* present, whatever its type */
	bool        not_string;
} jfield_t;

static void
jws(jcur_t *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
	    *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool
jlit(jcur_t *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return false;
	c->p += n;
	return true;
}

static int
hex4(const char *p, const char *end, unsigned *out)
{
	uint64_t v = 0;

	if (end - p < 4 || bc_parse_u64(p, 4, 16, 0xffff, &v) < 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static size_t
put_utf8(unsigned cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * A string at c->p ('"'). With out (NULL: only checked), its decoded
 * text: *out a new NUL-terminated string of at most max bytes (longer:
 * BC_E2BIG). Returns 0, BC_EPROTO (malformed), BC_E2BIG, BC_ENOMEM.
 */
static int
jstring(jcur_t *c, char **out, size_t max)
{
	const char *s;
	char *o = NULL;
	size_t n = 0;

	if (c->p >= c->end || *c->p != '"')
		return BC_EPROTO;
	s = ++c->p;
	/* find the end first: the decoded text is never longer */
	while (c->p < c->end && *c->p != '"') {
		if ((unsigned char)*c->p < 0x20)
			return BC_EPROTO;
		if (*c->p == '\\') {
			c->p++;
			if (c->p >= c->end)
				return BC_EPROTO;
		}
		c->p++;
	}
	if (c->p >= c->end)
		return BC_EPROTO;
	if (out != NULL) {
		if ((size_t)(c->p - s) > 6 * max + 6)
			return BC_E2BIG;
		o = malloc((size_t)(c->p - s) + 1);
		if (o == NULL)
			return BC_ENOMEM;
	}
	for (const char *p = s; p < c->p; p++) {
		unsigned cp;
		char tmp[4];
		size_t k;

		if (*p != '\\') {
			if (o != NULL)
				o[n] = *p;
			n++;
			continue;
		}
		p++;
		switch (*p) {
		case '"': case '\\': case '/':
			tmp[0] = *p; k = 1; break;
		case 'b': tmp[0] = '\b'; k = 1; break;
		case 'f': tmp[0] = '\f'; k = 1; break;
		case 'n': tmp[0] = '\n'; k = 1; break;
		case 'r': tmp[0] = '\r'; k = 1; break;
		case 't': tmp[0] = '\t'; k = 1; break;
		case 'u':
			if (hex4(p + 1, c->p, &cp) < 0)
				goto bad;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00) {
				unsigned lo;

				if (c->p - p < 7 || p[1] != '\\' ||
				    p[2] != 'u' || hex4(p + 3, c->p, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					goto bad;
				p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				goto bad;
			}
			if (cp == 0)
				goto bad;
			k = put_utf8(cp, tmp);
			break;
		default:
			goto bad;
		}
		if (o != NULL)
			memcpy(o + n, tmp, k);
		n += k;
	}
	c->p++;   /* the closing quote */
	if (o != NULL) {
		if (n > max) {
			free(o);
			return BC_E2BIG;
		}
		o[n] = '\0';
		*out = o;
	}
	return 0;
bad:
	free(o);
	return BC_EPROTO;
}

static int jvalue(jcur_t *c);

/* An object or array at c->p, skipped. */
static int
jcontainer(jcur_t *c)
{
	char close = *c->p == '{' ? '}' : ']';
	bool obj = close == '}', first = true;
	int rv;

	if (++c->depth > MAX_DEPTH)
		return BC_EPROTO;
	c->p++;
	for (;;) {
		jws(c);
		if (c->p < c->end && *c->p == close && first) {
			c->p++;
			break;
		}
		if (obj) {
			rv = jstring(c, NULL, 0);
			if (rv < 0)
				return rv;
			jws(c);
			if (c->p >= c->end || *c->p != ':')
				return BC_EPROTO;
			c->p++;
		}
		rv = jvalue(c);
		if (rv < 0)
			return rv;
		jws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			first = false;
			continue;
		}
		if (c->p < c->end && *c->p == close) {
			c->p++;
			break;
		}
		return BC_EPROTO;
	}
	c->depth--;
	return 0;
}

static int
jnumber(jcur_t *c)
{
	const char *p = c->p;

	if (p < c->end && *p == '-')
		p++;
	if (p >= c->end || !isdigit((unsigned char)*p))
		return BC_EPROTO;
	if (*p == '0')
		p++;
	else
		while (p < c->end && isdigit((unsigned char)*p))
			p++;
	if (p < c->end && *p == '.') {
		p++;
		if (p >= c->end || !isdigit((unsigned char)*p))
			return BC_EPROTO;
		while (p < c->end && isdigit((unsigned char)*p))
			p++;
	}
	if (p < c->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < c->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= c->end || !isdigit((unsigned char)*p))
			return BC_EPROTO;
		while (p < c->end && isdigit((unsigned char)*p))
			p++;
	}
	c->p = p;
	return 0;
}

/* Any value at c->p, skipped. */
static int
jvalue(jcur_t *c)
{
	jws(c);
	if (c->p >= c->end)
		return BC_EPROTO;
	switch (*c->p) {
	case '"':
		return jstring(c, NULL, 0);
	case '{':
	case '[':
		return jcontainer(c);
	case 't':
		return jlit(c, "true") ? 0 : BC_EPROTO;
	case 'f':
		return jlit(c, "false") ? 0 : BC_EPROTO;
	case 'n':
		return jlit(c, "null") ? 0 : BC_EPROTO;
	default:
		return jnumber(c);
	}
}

/*
 * A whole document that is one object: the string values of the members
 * named in f[0..n) (compared exactly) are decoded into f[i].val; other
 * members are checked and skipped. Returns 0, BC_EPROTO, BC_E2BIG (a
 * wanted string over max), BC_ENOMEM; on failure the values read so far
 * stay in f (the caller frees them).
 */
static int
json_fields(const char *body, size_t len, jfield_t *f, size_t n, size_t max)
{
	jcur_t c = { body, body + len, 0 };
	bool first = true;
	int rv;

	jws(&c);
	if (c.p >= c.end || *c.p != '{')
		return BC_EPROTO;
	c.p++;
	c.depth = 1;
	for (;;) {
		char *key = NULL;
		jfield_t *hit = NULL;

		jws(&c);
		if (first && c.p < c.end && *c.p == '}') {
			c.p++;
			break;
		}
		rv = jstring(&c, &key, 256);
		if (rv == BC_E2BIG) {
			/* a long name is nobody we want */
			rv = jstring(&c, NULL, 0);
		}
		if (rv < 0)
			return rv;
		for (size_t i = 0; key != NULL && i < n; i++)
			if (strcmp(key, f[i].name) == 0)
				hit = &f[i];
		free(key);
		jws(&c);
		if (c.p >= c.end || *c.p != ':')
			return BC_EPROTO;
		c.p++;
		jws(&c);
		if (hit != NULL && hit->seen)
			return BC_EPROTO;   /* given twice: which one? */
		if (hit != NULL)
			hit->seen = true;
		if (hit != NULL && c.p < c.end && *c.p == '"')
			rv = jstring(&c, &hit->val, max);
		else {
			if (hit != NULL)
				hit->not_string = true;
			rv = jvalue(&c);
		}
		if (rv < 0)
			return rv;
		jws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			first = false;
			continue;
		}
		if (c.p < c.end && *c.p == '}') {
			c.p++;
			break;
		}
		return BC_EPROTO;
	}
	jws(&c);
	return c.p == c.end ? 0 : BC_EPROTO;
}

/* Copies at most MAX_SHOWN bytes of s for a message: printable ASCII,
 * anything else as '?'. */
static void
shown(char *out, size_t outlen, const char *s, size_t n)
{
	size_t k = 0;

	if (outlen == 0)
		return;
	for (size_t i = 0; i < n && i < MAX_SHOWN && k + 1 < outlen; i++)
		out[k++] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	out[k] = '\0';
}

/* A fetched pair's access key id: AWS's are 16-128 of [A-Za-z0-9] (and
 * ASIA... for temporary ones, not required here). */
static int
fetched_key_ok(const char *ak, char *err, size_t errlen)
{
	size_t n = strlen(ak);
	bool ok = n >= 16 && n <= BC_CREDS_MAX_ACCESS_KEY;

	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)ak[i]) && ak[i] < 0x7f;
	if (!ok)
		bc_errf(err, errlen, "AccessKeyId is not 16-%d letters and "
		    "digits", BC_CREDS_MAX_ACCESS_KEY);
	return ok ? 0 : BC_EINVAL;
}

/* An expiration as the services write it, to Unix ms. */
static int
expiration_ms(const char *s, int64_t *out)
{
	time_t t;

	if (bc_iso8601_parse(s, &t) < 0)
		return BC_EPROTO;
	*out = (int64_t)t * 1000;
	return 0;
}

int
bc_creds_parse_json(const char *body, size_t len, bc_creds_snap_t **out,
    char *err, size_t errlen)
{
	enum { AK, SK, TOK, EXP, CODE, ECODE, EMSG, MSG, NF };
	jfield_t f[NF] = {
		[AK] = { "AccessKeyId", NULL, false, false },
		[SK] = { "SecretAccessKey", NULL, false, false },
		[TOK] = { "Token", NULL, false, false },
		[EXP] = { "Expiration", NULL, false, false },
		[CODE] = { "Code", NULL, false, false },
		[ECODE] = { "code", NULL, false, false },
		[EMSG] = { "message", NULL, false, false },
		[MSG] = { "Message", NULL, false, false },
	};
	char a[MAX_SHOWN + 1], b[MAX_SHOWN + 1];
	int64_t exp = 0;
	int rv;

	*out = NULL;
	if (len > BC_CREDS_MAX_ANSWER) {
		bc_errf(err, errlen, "answer of %zu bytes (at most %d)", len,
		    BC_CREDS_MAX_ANSWER);
		return BC_EPROTO;
	}
	rv = json_fields(body, len, f, NF, BC_CREDS_MAX_SESSION);
	if (rv == BC_ENOMEM) {
		bc_errf(err, errlen, "out of memory");
		goto out;
	}
	if (rv < 0) {
		bc_errf(err, errlen, "%s", rv == BC_E2BIG ? "a credential "
		    "field is too long" : "the answer is not a JSON object");
		rv = BC_EPROTO;
		goto out;
	}
	if (f[CODE].val != NULL && strcmp(f[CODE].val, "Success") != 0) {
		shown(a, sizeof(a), f[CODE].val, strlen(f[CODE].val));
		shown(b, sizeof(b), f[MSG].val != NULL ? f[MSG].val : "",
		    f[MSG].val != NULL ? strlen(f[MSG].val) : 0);
		bc_errf(err, errlen, "the service answered Code \"%s\"%s%s", a,
		    b[0] != '\0' ? ": " : "", b);
		rv = BC_EACCES;
		goto out;
	}
	if (f[AK].val == NULL && (f[ECODE].val != NULL ||
	    f[EMSG].val != NULL)) {
		shown(a, sizeof(a), f[ECODE].val != NULL ? f[ECODE].val : "?",
		    f[ECODE].val != NULL ? strlen(f[ECODE].val) : 1);
		shown(b, sizeof(b), f[EMSG].val != NULL ? f[EMSG].val : "",
		    f[EMSG].val != NULL ? strlen(f[EMSG].val) : 0);
		bc_errf(err, errlen, "the service answered an error: %s%s%s",
		    a, b[0] != '\0' ? ": " : "", b);
		rv = BC_EACCES;
		goto out;
	}
	for (int i = AK; i <= EXP; i++) {
		if (i == TOK && !f[i].not_string)
			continue;
		if (f[i].val == NULL) {
			bc_errf(err, errlen, "the answer has no %s string",
			    f[i].name);
			rv = BC_EPROTO;
			goto out;
		}
	}
	if (expiration_ms(f[EXP].val, &exp) < 0) {
		shown(a, sizeof(a), f[EXP].val, strlen(f[EXP].val));
		bc_errf(err, errlen, "Expiration '%s' is not an ISO 8601 time",
		    a);
		rv = BC_EPROTO;
		goto out;
	}
	rv = fetched_key_ok(f[AK].val, err, errlen);
	if (rv == 0)
		rv = bc_creds_snap_new(f[AK].val, f[SK].val, f[TOK].val, exp,
		    out, err, errlen);
out:
	for (int i = 0; i < NF; i++) {
		if (f[i].val != NULL)
			memset(f[i].val, 0, strlen(f[i].val));
		free(f[i].val);
	}
	return rv;
}

/* ---- XML (STS) ----------------------------------------------------------- */

/* The text between the first exact "<tag>" in [p, end) and the "</tag>"
 * after it; NULL when either is missing. */
static const char *
xml_elem(const char *p, const char *end, const char *tag, size_t *n)
{
	char open[64], close[64];
	size_t ol, cl;
	const char *s, *e;

	ol = (size_t)snprintf(open, sizeof(open), "<%s>", tag);
	cl = (size_t)snprintf(close, sizeof(close), "</%s>", tag);
	s = memmem(p, (size_t)(end - p), open, ol);
	if (s == NULL)
		return NULL;
	s += ol;
	e = memmem(s, (size_t)(end - s), close, cl);
	if (e == NULL)
		return NULL;
	*n = (size_t)(e - s);
	return s;
}

/* An element's decoded, trimmed text (free it), or NULL. */
static char *
xml_text(const char *p, const char *end, const char *tag)
{
	size_t n;
	const char *s = xml_elem(p, end, tag, &n);

	if (s == NULL)
		return NULL;
	bc_span_trim(&s, &n);
	return bc_s3_xml_text(s, n);
}

/* The first start tag of the document: its name after '<' up to a blank,
 * '>' or '/', past an XML declaration and comments. */
static bool
xml_root_is(const char *p, const char *end, const char *name)
{
	size_t n = strlen(name);

	for (;;) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (end - p >= 2 && p[0] == '<' && (p[1] == '?' ||
		    p[1] == '!')) {
			const char *gt = memchr(p, '>', (size_t)(end - p));

			if (gt == NULL)
				return false;
			p = gt + 1;
			continue;
		}
		break;
	}
	return (size_t)(end - p) > n + 1 && p[0] == '<' &&
	    memcmp(p + 1, name, n) == 0 && (p[n + 1] == '>' ||
	    p[n + 1] == ' ' || p[n + 1] == '\t' || p[n + 1] == '\n' ||
	    p[n + 1] == '\r' || p[n + 1] == '/');
}

int
bc_creds_parse_sts(const char *body, size_t len, bc_creds_snap_t **out,
    char *err, size_t errlen)
{
	static const char *const names[] = { "AccessKeyId",
	    "SecretAccessKey", "SessionToken", "Expiration" };
	const char *end = body + len, *cr;
	char *v[4] = { NULL, NULL, NULL, NULL };
	char a[MAX_SHOWN + 1], b[MAX_SHOWN + 1];
	size_t crn;
	int64_t exp = 0;
	int rv = BC_EPROTO;

	*out = NULL;
	if (len > BC_CREDS_MAX_ANSWER) {
		bc_errf(err, errlen, "answer of %zu bytes (at most %d)", len,
		    BC_CREDS_MAX_ANSWER);
		return BC_EPROTO;
	}
	if (xml_root_is(body, end, "ErrorResponse")) {
		char *code = xml_text(body, end, "Code");
		char *msg = xml_text(body, end, "Message");

		shown(a, sizeof(a), code != NULL ? code : "?",
		    code != NULL ? strlen(code) : 1);
		shown(b, sizeof(b), msg != NULL ? msg : "",
		    msg != NULL ? strlen(msg) : 0);
		bc_errf(err, errlen, "STS answered %s%s%s", a,
		    b[0] != '\0' ? ": " : "", b);
		free(code);
		free(msg);
		return BC_EACCES;
	}
	if (!xml_root_is(body, end, "AssumeRoleWithWebIdentityResponse")) {
		bc_errf(err, errlen, "the answer is not an "
		    "AssumeRoleWithWebIdentityResponse");
		return BC_EPROTO;
	}
	cr = xml_elem(body, end, "Credentials", &crn);
	if (cr == NULL) {
		bc_errf(err, errlen, "the answer has no <Credentials>");
		return BC_EPROTO;
	}
	for (int i = 0; i < 4; i++) {
		v[i] = xml_text(cr, cr + crn, names[i]);
		if (v[i] == NULL) {
			bc_errf(err, errlen, "the answer's <Credentials> has "
			    "no well-formed <%s>", names[i]);
			goto out;
		}
	}
	if (expiration_ms(v[3], &exp) < 0) {
		shown(a, sizeof(a), v[3], strlen(v[3]));
		bc_errf(err, errlen, "Expiration '%s' is not an ISO 8601 time",
		    a);
		goto out;
	}
	rv = fetched_key_ok(v[0], err, errlen);
	if (rv == 0)
		rv = bc_creds_snap_new(v[0], v[1], v[2], exp, out, err,
		    errlen);
out:
	for (int i = 0; i < 4; i++) {
		if (v[i] != NULL)
			memset(v[i], 0, strlen(v[i]));
		free(v[i]);
	}
	return rv;
}

/* ---- IMDS role list ------------------------------------------------------ */

int
bc_creds_parse_role(const char *body, size_t len, char *out, size_t outlen,
    char *err, size_t errlen)
{
	const char *s = body;
	size_t n;

	if (len > BC_CREDS_MAX_ANSWER) {
		bc_errf(err, errlen, "role list of %zu bytes", len);
		return BC_EPROTO;
	}
	n = len;
	for (size_t i = 0; i < len; i++)
		if (body[i] == '\n') {
			n = i;
			break;
		}
	bc_span_trim(&s, &n);
	if (n == 0) {
		bc_errf(err, errlen, "no IAM role is attached to the instance");
		return BC_ENOENT;
	}
	if (n > BC_CREDS_MAX_ROLE || n >= outlen) {
		bc_errf(err, errlen, "the role name is over %d bytes",
		    BC_CREDS_MAX_ROLE);
		return BC_EPROTO;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && (s[i] == '\0' ||
		    strchr("_+=,.@-", s[i]) == NULL)) {
			bc_errf(err, errlen, "the role list is not a role "
			    "name");
			return BC_EPROTO;
		}
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}
