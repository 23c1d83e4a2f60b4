/*
 * s3_sigv2.c — AWS Signature Version 2 for S3 (HMAC-SHA1): the string to
 * sign and the verifier for "Authorization: AWS AKID:sig" and the
 * AWSAccessKeyId/Expires/Signature query form (see s3_auth.h).
 *
 * Matches botocore's HmacV1Auth / HmacV1QueryAuth, which boto3 1.26 still
 * uses to presign URLs. Pure and thread-safe; bounded by the request's
 * own limits (BC_S3_MAX_URI, header count).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_auth.h"
#include "s3/s3_date.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define MSG_DATE "AWS authentication requires a valid Date or x-amz-date " \
	"header"
#define MSG_QUERY "Query-string authentication requires the Signature, " \
	"Expires and AWSAccessKeyId parameters"

/* Query parameters that name an S3 sub-resource and so are part of the
 * canonical resource (S3's list and botocore's QSAOfInterest). */
static const char *const subresources[] = {
	"accelerate", "acl", "analytics", "cors", "defaultObjectAcl",
	"delete", "inventory", "lifecycle", "location", "logging", "metrics",
	"notification", "object-lock", "partNumber", "policy", "replication",
	"requestPayment", "response-cache-control",
	"response-content-disposition", "response-content-encoding",
	"response-content-language", "response-content-type",
	"response-expires", "restore", "select", "select-type",
	"storageClass", "tagging", "torrent", "uploadId", "uploads",
	"versionId", "versioning", "versions", "website",
};

static bool
is_subresource(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(subresources) / sizeof(*subresources);
	    i++)
		if (strlen(subresources[i]) == n &&
		    memcmp(subresources[i], name, n) == 0)
			return true;
	return false;
}

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Appends v without leading and trailing whitespace. */
static int
put_stripped(bc_buf_t *out, const char *v)
{
	size_t n;

	while (is_ws(*v))
		v++;
	n = strlen(v);
	while (n > 0 && is_ws(v[n - 1]))
		n--;
	return bc_buf_append(out, v, n);
}

typedef struct amz_s {
	char       *name;      /* lower-cased copy */
	const char *value;
	size_t      seq;
	bool        from_query;
} amz_t;

static int
amz_cmp(const void *a, const void *b)
{
	const amz_t *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
amz_add(amz_t *a, size_t *n, const char *name, const char *value,
    bool from_query)
{
	char *lc;

	if (strncasecmp(name, "x-amz-", 6) != 0)
		return 0;
	lc = strdup(name);
	if (lc == NULL)
		return BC_ENOMEM;
	for (char *c = lc; *c != '\0'; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c + 32);
	a[*n].name = lc;
	a[*n].value = value;
	a[*n].seq = *n;
	a[*n].from_query = from_query;
	(*n)++;
	return 0;
}

/*
 * Appends "name:v1,v2\n" for every x-amz-* name, sorted. In the query
 * form, x-amz-* parameters count as headers (botocore moves them into the
 * URL); a name present in both uses the query's values.
 */
static int
put_amz_headers(bc_buf_t *out, const bc_s3_req_t *r, bool qform)
{
	size_t cap = r->headers.n + (qform ? r->query.n : 0), n = 0;
	amz_t *a;
	int rv = 0;

	if (cap == 0)
		return 0;
	a = calloc(cap, sizeof(*a));
	if (a == NULL)
		return BC_ENOMEM;
	for (size_t i = 0; i < r->headers.n && rv == 0; i++)
		rv = amz_add(a, &n, r->headers.v[i].name,
		    r->headers.v[i].value, false);
	for (size_t i = 0; qform && i < r->query.n && rv == 0; i++)
		rv = amz_add(a, &n, r->query.v[i].name, r->query.v[i].value,
		    true);
	if (rv < 0)
		goto fail;
	qsort(a, n, sizeof(*a), amz_cmp);
	for (size_t i = 0; i < n && rv == 0;) {
		size_t j = i;
		bool any_q = false, first = true;

		while (j < n && strcmp(a[j].name, a[i].name) == 0)
			any_q |= a[j++].from_query;
		rv = bc_buf_puts(out, a[i].name);
		if (rv == 0)
			rv = bc_buf_putc(out, ':');
		for (size_t k = i; k < j && rv == 0; k++) {
			if (a[k].from_query != any_q)
				continue;
			if (!first)
				rv = bc_buf_putc(out, ',');
			if (rv == 0)
				rv = put_stripped(out, a[k].value);
			first = false;
		}
		if (rv == 0)
			rv = bc_buf_putc(out, '\n');
		i = j;
	}
fail:
	for (size_t i = 0; i < n; i++)
		free(a[i].name);
	free(a);
	return rv;
}

typedef struct sub_s {
	char  *name;
	char  *value;    /* decoded; NULL when the parameter had no '=' */
	size_t seq;
} sub_t;

static int
sub_cmp(const void *a, const void *b)
{
	const sub_t *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Appends "?name[=value]&..." for the sub-resources in the raw query, as
 * botocore does: names compared as sent, values decoded, stable sort by
 * name. */
static int
put_subresources(bc_buf_t *out, const char *raw_query)
{
	size_t cap = 1, n = 0;
	const char *p;
	sub_t *s;
	int rv = 0;

	for (p = raw_query; *p != '\0'; p++)
		cap += *p == '&';
	s = calloc(cap, sizeof(*s));
	if (s == NULL)
		return BC_ENOMEM;
	for (p = raw_query; *p != '\0' && rv == 0;) {
		size_t len = strcspn(p, "&");
		const char *eq = memchr(p, '=', len);
		size_t nlen = eq != NULL ? (size_t)(eq - p) : len;

		if (n < cap && is_subresource(p, nlen)) {
			s[n].name = strndup(p, nlen);
			s[n].value = eq != NULL ? bc_s3_pct_decode(eq + 1,
			    len - nlen - 1) : NULL;
			s[n].seq = n;
			n++;
			if (s[n - 1].name == NULL ||
			    (eq != NULL && s[n - 1].value == NULL))
				rv = BC_EINVAL;
		}
		p += len;
		if (*p == '&')
			p++;
	}
	if (rv < 0)
		goto fail;
	qsort(s, n, sizeof(*s), sub_cmp);
	for (size_t i = 0; i < n && rv == 0; i++) {
		rv = bc_buf_putc(out, i == 0 ? '?' : '&');
		if (rv == 0)
			rv = bc_buf_puts(out, s[i].name);
		if (rv == 0 && s[i].value != NULL)
			rv = bc_buf_putc(out, '=');
		if (rv == 0 && s[i].value != NULL)
			rv = bc_buf_puts(out, s[i].value);
	}
fail:
	for (size_t i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].value);
	}
	free(s);
	return rv;
}

static bool
query_form(const bc_s3_req_t *r)
{
	return bc_kv_get(&r->headers, "Authorization") == NULL &&
	    bc_kv_get_exact(&r->query, "Signature") != NULL;
}

/* Content-MD5 / Content-Type: the header, or (query form) the parameter
 * botocore put in the URL instead. */
static int
put_std(bc_buf_t *out, const bc_s3_req_t *r, const char *name, bool qform)
{
	const char *v = bc_kv_get(&r->headers, name);
	int rv = 0;

	if (v == NULL && qform)
		v = bc_kv_get(&r->query, name);
	if (v != NULL)
		rv = put_stripped(out, v);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	return rv;
}

/*
 * How the canonical resource's path part is written. S3's rule is the
 * path as sent, with "/bucket" in front for virtual-hosted requests
 * (RES_PLAIN). botocore signs from its "auth path" instead, which adds a
 * '/' after a bare bucket (RES_SLASH) and, for operations whose URI
 * template carries a query ("/{Bucket}/{Key+}?acl"), repeats that first
 * query item (RES_STATIC_QUERY). The verifier accepts any of them: they
 * all describe the same request.
 */
typedef enum res_e {
	RES_PLAIN,
	RES_SLASH,
	RES_STATIC_QUERY,
} res_t;

static int
string_to_sign(bc_buf_t *out, const bc_s3_req_t *r,
    const char *date_or_expires, res_t res)
{
	bool qform = query_form(r);
	int rv;

	rv = bc_buf_puts(out, r->method);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0)
		rv = put_std(out, r, "Content-MD5", qform);
	if (rv == 0)
		rv = put_std(out, r, "Content-Type", qform);
	if (rv == 0)
		rv = bc_buf_puts(out, date_or_expires);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0)
		rv = put_amz_headers(out, r, qform);
	if (rv == 0 && r->virtual_host) {
		rv = bc_buf_putc(out, '/');
		if (rv == 0)
			rv = bc_buf_puts(out, r->bucket);
	}
	if (rv == 0)
		rv = bc_buf_puts(out, r->raw_path);
	if (rv == 0 && res == RES_SLASH)
		rv = bc_buf_putc(out, '/');
	if (rv == 0 && res == RES_STATIC_QUERY) {
		rv = bc_buf_putc(out, '?');
		if (rv == 0)
			rv = bc_buf_append(out, r->raw_query,
			    strcspn(r->raw_query, "&"));
	}
	if (rv == 0)
		rv = put_subresources(out, r->raw_query);
	return rv;
}

int
bc_s3_sigv2_string_to_sign(bc_buf_t *out, const bc_s3_req_t *r,
    const char *date_or_expires)
{
	return string_to_sign(out, r, date_or_expires, RES_PLAIN);
}

/* Whether resource form res differs from RES_PLAIN for r. */
static bool
res_applies(const bc_s3_req_t *r, res_t res)
{
	size_t n = strlen(r->raw_path);

	switch (res) {
	case RES_PLAIN:
		return true;
	case RES_SLASH:
		return r->key[0] == '\0' && n > 0 && r->raw_path[n - 1] != '/';
	case RES_STATIC_QUERY:
		return strcspn(r->raw_query, "&") > 0;
	}
	return false;
}

/* base64(HMAC-SHA1(secret, string to sign)) compared in constant time,
 * for each resource form that applies; BC_S3E_NONE on a match. */
static bc_s3err_t
check(const bc_s3_req_t *r, const char *date, const char *secret,
    const char *sig)
{
	static const res_t forms[] = { RES_PLAIN, RES_SLASH,
	    RES_STATIC_QUERY };
	bc_buf_t sts = BC_BUF_INIT;
	uint8_t mac[BC_SHA1_LEN];
	char b64[40];
	bc_s3err_t e = BC_S3E_SignatureDoesNotMatch;
	int rv;

	for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
		if (!res_applies(r, forms[i]))
			continue;
		bc_buf_reset(&sts);
		rv = string_to_sign(&sts, r, date, forms[i]);
		if (rv == BC_ENOMEM) {
			e = BC_S3E_InternalError;
			goto fail;
		}
		if (rv < 0)
			goto fail;
		bc_hmac_sha1(secret, strlen(secret), sts.data, sts.len, mac);
		if (bc_base64(mac, sizeof(mac), b64, sizeof(b64)) < 0)
			goto fail;
		if (bc_streq_ct(b64, sig)) {
			e = BC_S3E_NONE;
			goto fail;
		}
	}
fail:
	bc_buf_fini(&sts);
	return e;
}

static bc_s3err_t
verify_header(const bc_s3_req_t *r, const char *authz, time_t now,
    bc_s3_secret_fn secret, void *ctx, bc_s3_auth_t *out)
{
	const char *amz = bc_kv_get(&r->headers, "x-amz-date");
	const char *date = bc_kv_get(&r->headers, "Date");
	const char *p = authz + 4, *colon, *key;
	char sig[65];
	size_t aklen, slen;
	long long skew;
	time_t t;
	bc_s3err_t e;

	while (*p == ' ')
		p++;
	colon = strchr(p, ':');
	aklen = colon != NULL ? (size_t)(colon - p) : 0;
	slen = colon != NULL ? strlen(colon + 1) : 0;
	while (slen > 0 && colon[slen] == ' ')
		slen--;
	if (aklen == 0 || aklen >= sizeof(out->access_key) || slen == 0 ||
	    slen >= sizeof(sig) || memchr(p, ' ', aklen) != NULL) {
		out->message = "AWS authorization header is invalid.  "
		    "Expected AwsAccessKeyId:signature";
		return BC_S3E_AccessDenied;
	}
	memcpy(out->access_key, p, aklen);
	out->access_key[aklen] = '\0';
	memcpy(sig, colon + 1, slen);
	sig[slen] = '\0';

	if ((amz != NULL ? bc_http_date_parse(amz, &t) :
	    date != NULL ? bc_http_date_parse(date, &t) : BC_EINVAL) < 0) {
		out->message = MSG_DATE;
		return BC_S3E_AccessDenied;
	}
	key = secret(ctx, out->access_key);
	if (key == NULL)
		return BC_S3E_InvalidAccessKeyId;
	skew = (long long)now - (long long)t;
	if (skew > BC_S3_MAX_SKEW || skew < -BC_S3_MAX_SKEW)
		return BC_S3E_RequestTimeTooSkewed;
	/* With x-amz-date the Date line is empty; some clients still put
	 * their Date header there. */
	e = check(r, amz != NULL ? "" : date, key, sig);
	if (e == BC_S3E_SignatureDoesNotMatch && amz != NULL && date != NULL)
		e = check(r, date, key, sig);
	if (e != BC_S3E_NONE)
		return e;
	out->kind = BC_S3AUTH_V2;
	return BC_S3E_NONE;
}

static bc_s3err_t
verify_query(const bc_s3_req_t *r, time_t now, bc_s3_secret_fn secret,
    void *ctx, bc_s3_auth_t *out)
{
	const char *ak = bc_kv_get_exact(&r->query, "AWSAccessKeyId");
	const char *sig = bc_kv_get_exact(&r->query, "Signature");
	const char *exp = bc_kv_get_exact(&r->query, "Expires");
	const char *key;
	char s[65];
	uint64_t expires;
	bc_s3err_t e;

	if (ak == NULL || sig == NULL || exp == NULL || ak[0] == '\0' ||
	    strlen(ak) >= sizeof(out->access_key) || sig[0] == '\0' ||
	    strlen(sig) >= sizeof(s)) {
		out->message = MSG_QUERY;
		return BC_S3E_AccessDenied;
	}
	if (bc_parse_u64_str(exp, 10, INT64_MAX, &expires) < 0) {
		out->message = "Invalid date (should be seconds since epoch)";
		return BC_S3E_AccessDenied;
	}
	strcpy(out->access_key, ak);
	key = secret(ctx, ak);
	if (key == NULL)
		return BC_S3E_InvalidAccessKeyId;
	if ((long long)now > (long long)expires) {
		out->message = "Request has expired";
		return BC_S3E_AccessDenied;
	}
	/* a '+' the client left unencoded may have become a space */
	strcpy(s, sig);
	for (char *c = s; *c != '\0'; c++)
		if (*c == ' ')
			*c = '+';
	e = check(r, exp, key, s);
	if (e != BC_S3E_NONE)
		return e;
	out->kind = BC_S3AUTH_V2_QUERY;
	return BC_S3E_NONE;
}

bc_s3err_t
bc_s3_sigv2_verify(const bc_s3_req_t *r, time_t now, bc_s3_secret_fn secret,
    void *ctx, bc_s3_auth_t *out)
{
	const char *authz = bc_kv_get(&r->headers, "Authorization");
	bc_s3err_t e;

	e = authz != NULL ? verify_header(r, authz, now, secret, ctx, out) :
	    verify_query(r, now, secret, ctx, out);
	out->payload_hash[0] = '\0';
	if (e != BC_S3E_NONE) {
		out->kind = BC_S3AUTH_NONE;
		out->access_key[0] = '\0';
	}
	return e;
}
