/*
 * s3_auth.c — authenticate a client request (see s3_auth.h): picks the
 * scheme (SigV4 header, SigV4 presigned query, SigV2 via s3_sigv2.c, or
 * anonymous) and verifies SigV4 with the canonicalizer of s3_sigv4.c.
 *
 * Pure and thread-safe: all state is on the stack or in buffers freed
 * before returning; secrets come from the caller's lookup function.
 * Every parser here is bounded and answers hostile input with the S3
 * error a real S3 would send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_auth.h"
#include "s3/s3_date.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define ALGORITHM          "AWS4-HMAC-SHA256"
#define MAX_AUTHZ          4096   /* bytes of a V4 Authorization header */
#define MAX_SIGNED_HEADERS 2048
#define MAX_REGION         63
#define MAX_EXPIRES        604800 /* presigned URLs: one week */

#define MSG_DATE "AWS authentication requires a valid Date or x-amz-date " \
	"header"
#define MSG_CRED "The authorization header is malformed; the Credential " \
	"is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/" \
	"aws4_request\"."
#define MSG_QPARAMS "Query-string authentication version 4 requires the " \
	"X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, " \
	"X-Amz-SignedHeaders, and X-Amz-Expires parameters."

/* The parts of a V4 Authorization header or presigned query. */
typedef struct v4parts_s {
	char access_key[129];
	char date8[9];
	char region[MAX_REGION + 1];
	char signed_headers[MAX_SIGNED_HEADERS + 1];
	char signature[65];
} v4parts_t;

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

static bool
is_sha256_hex(const char *s)
{
	return strlen(s) == 64 && is_lower_hex(s, 64);
}

/* "AKID/20130524/us-east-1/s3/aws4_request" (n bytes at s). */
static bool
parse_credential(const char *s, size_t n, v4parts_t *v)
{
	const char *part[5];
	size_t len[5], k = 0, start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '/')
			continue;
		if (k == 5)
			return false;
		part[k] = s + start;
		len[k] = i - start;
		k++;
		start = i + 1;
	}
	if (k != 5)
		return false;
	if (len[0] == 0 || len[0] >= sizeof(v->access_key))
		return false;
	for (size_t i = 0; i < len[0]; i++)
		if ((unsigned char)part[0][i] <= ' ' ||
		    (unsigned char)part[0][i] >= 127)
			return false;
	if (len[1] != 8)
		return false;
	for (size_t i = 0; i < 8; i++)
		if (!is_digit(part[1][i]))
			return false;
	if (len[2] == 0 || len[2] > MAX_REGION)
		return false;
	for (size_t i = 0; i < len[2]; i++) {
		char c = part[2][i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !is_digit(c) && c != '-' && c != '_')
			return false;
	}
	if (len[3] != 2 || memcmp(part[3], "s3", 2) != 0)
		return false;
	if (len[4] != 12 || memcmp(part[4], "aws4_request", 12) != 0)
		return false;
	memcpy(v->access_key, part[0], len[0]);
	v->access_key[len[0]] = '\0';
	memcpy(v->date8, part[1], 8);
	v->date8[8] = '\0';
	memcpy(v->region, part[2], len[2]);
	v->region[len[2]] = '\0';
	return true;
}

static bool
is_tchar_lower(char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c) ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Lower-case header names separated by single ';', one of them "host". */
static bool
parse_signed_headers(const char *s, size_t n, v4parts_t *v)
{
	bool host = false;
	size_t start = 0;

	if (n == 0 || n > MAX_SIGNED_HEADERS)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ';') {
			if (!is_tchar_lower(s[i]))
				return false;
			continue;
		}
		if (i == start)
			return false;
		if (i - start == 4 && memcmp(s + start, "host", 4) == 0)
			host = true;
		start = i + 1;
	}
	if (!host)
		return false;
	memcpy(v->signed_headers, s, n);
	v->signed_headers[n] = '\0';
	return true;
}

static bool
parse_signature(const char *s, size_t n, v4parts_t *v)
{
	if (n != 64 || !is_lower_hex(s, n))
		return false;
	memcpy(v->signature, s, 64);
	v->signature[64] = '\0';
	return true;
}

/*
 * "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..."
 * (components in any order, each once, optional spaces around them).
 */
static bool
parse_v4_header(const char *h, v4parts_t *v)
{
	bool have_c = false, have_h = false, have_s = false;
	const char *p;

	if (strlen(h) > MAX_AUTHZ || strncmp(h, ALGORITHM " ",
	    strlen(ALGORITHM) + 1) != 0)
		return false;
	p = h + strlen(ALGORITHM);
	while (*p == ' ')
		p++;
	while (*p != '\0') {
		const char *end = p + strcspn(p, ",");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *val;
		size_t klen, vlen;
		bool ok;

		if (eq == NULL)
			return false;
		klen = (size_t)(eq - p);
		while (klen > 0 && p[klen - 1] == ' ')
			klen--;
		val = eq + 1;
		while (val < end && *val == ' ')
			val++;
		vlen = (size_t)(end - val);
		while (vlen > 0 && val[vlen - 1] == ' ')
			vlen--;
		if (klen == 10 && memcmp(p, "Credential", 10) == 0) {
			ok = !have_c && parse_credential(val, vlen, v);
			have_c = true;
		} else if (klen == 13 && memcmp(p, "SignedHeaders", 13) == 0) {
			ok = !have_h && parse_signed_headers(val, vlen, v);
			have_h = true;
		} else if (klen == 9 && memcmp(p, "Signature", 9) == 0) {
			ok = !have_s && parse_signature(val, vlen, v);
			have_s = true;
		} else {
			ok = false;
		}
		if (!ok)
			return false;
		p = end;
		if (*p == ',') {
			p++;
			while (*p == ' ')
				p++;
			if (*p == '\0')
				return false;
		}
	}
	return have_c && have_h && have_s;
}

/* The request's time: X-Amz-Date, else Date; amz gets its ISO form. */
static bc_s3err_t
request_date(const bc_s3_req_t *r, char amz[17], time_t *t,
    bc_s3_auth_t *out)
{
	const char *x = bc_kv_get(&r->headers, "x-amz-date");
	const char *d = bc_kv_get(&r->headers, "Date");

	if (x != NULL) {
		if (bc_sigv4_parse_amz_date(x, t) < 0)
			goto fail;
		memcpy(amz, x, 17);
		return BC_S3E_NONE;
	}
	if (d == NULL || bc_http_date_parse(d, t) < 0)
		goto fail;
	bc_sigv4_amz_date(*t, amz);
	return BC_S3E_NONE;
fail:
	out->message = MSG_DATE;
	return BC_S3E_AccessDenied;
}

/* true when name (any case) is one of the ';'-separated lower-case list */
static bool
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (*list != '\0') {
		size_t l = strcspn(list, ";");

		if (l == n && strncasecmp(list, name, n) == 0)
			return true;
		list += l;
		if (*list == ';')
			list++;
	}
	return false;
}

/* S3 refuses x-amz-* headers that the signature does not cover: they
 * would pass upstream unauthenticated. */
static bool
amz_headers_signed(const bc_s3_req_t *r, const char *signed_headers)
{
	for (size_t i = 0; i < r->headers.n; i++) {
		const char *nm = r->headers.v[i].name;

		if (strncasecmp(nm, "x-amz-", 6) == 0 &&
		    !in_list(signed_headers, nm))
			return false;
	}
	return true;
}

static bool
has_body(const bc_s3_req_t *r)
{
	const char *cl = bc_kv_get(&r->headers, "Content-Length");

	return bc_kv_get(&r->headers, "Transfer-Encoding") != NULL ||
	    (cl != NULL && strspn(cl, "0") != strlen(cl));
}

/* Checks a payload hash mode; 0 when usable. */
static bc_s3err_t
check_payload_hash(const char *ph, bc_s3_auth_t *out)
{
	bc_awschunked_mode_t mode;

	if (is_sha256_hex(ph) || strcmp(ph, BC_SIGV4_UNSIGNED) == 0 ||
	    bc_awschunked_mode_parse(ph, &mode))
		return BC_S3E_NONE;
	if (strncmp(ph, "STREAMING-", 10) == 0) {
		out->message = "This x-amz-content-sha256 streaming mode is "
		    "not implemented by this gateway.";
		return BC_S3E_NotImplemented;
	}
	out->message = "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
	    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-"
	    "PAYLOAD-TRAILER, STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid "
	    "sha256 value.";
	return BC_S3E_InvalidArgument;
}

/*
 * Computes the signature of r under v and compares it with v->signature
 * in constant time. Header auth also accepts the request target signed
 * exactly as sent (raw path and query), which some clients do.
 */
static bc_s3err_t
v4_check(const bc_s3_req_t *r, const v4parts_t *v, const char *amz_date,
    const char *payload_hash, bool presigned, const char *secret,
    bc_s3_auth_t *out)
{
	bc_buf_t creq = BC_BUF_INIT, raw = BC_BUF_INIT;
	bc_sigv4_input_t in;
	bc_sigv4_ctx_t c;
	bc_s3err_t e = BC_S3E_NONE;
	bool ok;
	int rv;

	memset(&c, 0, sizeof(c));
	snprintf(c.scope, sizeof(c.scope), "%s/%s/s3/aws4_request", v->date8,
	    v->region);
	memcpy(c.amz_date, amz_date, sizeof(c.amz_date));
	bc_sigv4_signing_key(secret, v->date8, v->region, "s3", c.key);

	memset(&in, 0, sizeof(in));
	in.method = r->method;
	in.path = r->path;
	in.query = &r->query;
	in.headers = &r->headers;
	in.signed_headers = v->signed_headers;
	in.payload_hash = payload_hash;
	in.skip_query = presigned ? "X-Amz-Signature" : NULL;
	rv = bc_sigv4_canonical_request(&creq, &in);
	if (rv == BC_EINVAL) {
		/* a signed header is missing: it cannot have been signed */
		e = BC_S3E_SignatureDoesNotMatch;
		goto fail;
	} else if (rv < 0) {
		e = BC_S3E_InternalError;
		goto fail;
	}
	bc_sigv4_signature(bc_buf_str(&creq), c.amz_date, c.scope, c.key,
	    c.signature);
	ok = bc_streq_ct(c.signature, v->signature);
	if (!ok && !presigned) {
		in.canonical_uri = r->raw_path[0] != '\0' ? r->raw_path : "/";
		in.canonical_query = r->raw_query;
		rv = bc_sigv4_canonical_request(&raw, &in);
		if (rv == 0 && strcmp(bc_buf_str(&raw),
		    bc_buf_str(&creq)) != 0) {
			bc_sigv4_signature(bc_buf_str(&raw), c.amz_date,
			    c.scope, c.key, c.signature);
			ok = bc_streq_ct(c.signature, v->signature);
		}
	}
	if (!ok) {
		e = BC_S3E_SignatureDoesNotMatch;
		goto fail;
	}
	out->v4 = c;
	snprintf(out->access_key, sizeof(out->access_key), "%s",
	    v->access_key);
	snprintf(out->payload_hash, sizeof(out->payload_hash), "%s",
	    payload_hash);
	out->streaming = bc_awschunked_mode_parse(payload_hash,
	    &out->stream_mode);
	out->kind = presigned ? BC_S3AUTH_V4_QUERY : BC_S3AUTH_V4;
fail:
	bc_buf_fini(&creq);
	bc_buf_fini(&raw);
	memset(&c, 0, sizeof(c));
	return e;
}

static long long
time_distance(time_t a, time_t b)
{
	long long d = (long long)a - (long long)b;

	return d < 0 ? -d : d;
}

static bc_s3err_t
verify_v4_header(const bc_s3_req_t *r, const char *authz, time_t now,
    bc_s3_secret_fn secret, void *ctx, bc_s3_auth_t *out)
{
	v4parts_t v;
	char amz[17];
	const char *ph, *key;
	time_t t;
	bc_s3err_t e;

	memset(&v, 0, sizeof(v));
	if (!parse_v4_header(authz, &v)) {
		out->message = MSG_CRED;
		return BC_S3E_AuthorizationHeaderMalformed;
	}
	e = request_date(r, amz, &t, out);
	if (e != BC_S3E_NONE)
		return e;
	if (memcmp(v.date8, amz, 8) != 0) {
		out->message = "The authorization header is malformed; "
		    "Invalid credential date. Date is not the same as "
		    "X-Amz-Date.";
		return BC_S3E_AuthorizationHeaderMalformed;
	}
	key = secret(ctx, v.access_key);
	if (key == NULL)
		return BC_S3E_InvalidAccessKeyId;
	if (time_distance(now, t) > BC_S3_MAX_SKEW)
		return BC_S3E_RequestTimeTooSkewed;
	ph = bc_kv_get(&r->headers, "x-amz-content-sha256");
	if (ph == NULL) {
		if (has_body(r)) {
			out->message = "Missing required header for this "
			    "request: x-amz-content-sha256";
			return BC_S3E_InvalidRequest;
		}
		ph = BC_SIGV4_EMPTY_SHA256;
	}
	e = check_payload_hash(ph, out);
	if (e != BC_S3E_NONE)
		return e;
	if (!amz_headers_signed(r, v.signed_headers)) {
		out->message = "There were headers present in the request "
		    "which were not signed";
		return BC_S3E_AccessDenied;
	}
	return v4_check(r, &v, amz, ph, false, key, out);
}

static bc_s3err_t
query_error(bc_s3_auth_t *out, const char *msg)
{
	out->message = msg;
	return BC_S3E_AuthorizationQueryParametersError;
}

static bc_s3err_t
verify_v4_query(const bc_s3_req_t *r, time_t now, bc_s3_secret_fn secret,
    void *ctx, bc_s3_auth_t *out)
{
	const bc_kvlist_t *q = &r->query;
	const char *alg = bc_kv_get_exact(q, "X-Amz-Algorithm");
	const char *cred = bc_kv_get_exact(q, "X-Amz-Credential");
	const char *date = bc_kv_get_exact(q, "X-Amz-Date");
	const char *exp = bc_kv_get_exact(q, "X-Amz-Expires");
	const char *sh = bc_kv_get_exact(q, "X-Amz-SignedHeaders");
	const char *sig = bc_kv_get_exact(q, "X-Amz-Signature");
	const char *ph, *key;
	v4parts_t v;
	uint64_t expires = 0;
	int rv;
	time_t t;
	bc_s3err_t e;

	memset(&v, 0, sizeof(v));
	if (alg == NULL || cred == NULL || date == NULL || exp == NULL ||
	    sh == NULL || sig == NULL)
		return query_error(out, MSG_QPARAMS);
	if (strcmp(alg, ALGORITHM) != 0)
		return query_error(out, "X-Amz-Algorithm only supports "
		    "\"AWS4-HMAC-SHA256\"");
	if (bc_sigv4_parse_amz_date(date, &t) < 0)
		return query_error(out, "X-Amz-Date must be in the ISO8601 "
		    "Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
	rv = bc_parse_u64_str(exp, 10, MAX_EXPIRES, &expires);
	if (rv == BC_EINVAL)
		return query_error(out, "X-Amz-Expires should be a number");
	if (rv < 0)
		return query_error(out, "X-Amz-Expires must be less than a "
		    "week (in seconds) that is 604800");
	if (!parse_credential(cred, strlen(cred), &v))
		return query_error(out, "Error parsing the X-Amz-Credential "
		    "parameter; the Credential is mal-formed; expecting "
		    "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".");
	if (memcmp(v.date8, date, 8) != 0)
		return query_error(out, "Invalid credential date. Date is not "
		    "the same as X-Amz-Date.");
	if (!parse_signed_headers(sh, strlen(sh), &v))
		return query_error(out, "X-Amz-SignedHeaders must be a "
		    "';'-separated list of lower-case header names including "
		    "host");
	if (!parse_signature(sig, strlen(sig), &v))
		return query_error(out, "X-Amz-Signature must be 64 "
		    "lower-case hex digits");
	key = secret(ctx, v.access_key);
	if (key == NULL)
		return BC_S3E_InvalidAccessKeyId;
	if ((long long)t - (long long)now > BC_S3_MAX_SKEW) {
		out->message = "Request is not valid yet";
		return BC_S3E_AccessDenied;
	}
	if ((long long)now - (long long)t > (long long)expires) {
		out->message = "Request has expired";
		return BC_S3E_AccessDenied;
	}
	ph = bc_kv_get_exact(q, "X-Amz-Content-Sha256");
	if (ph == NULL)
		ph = BC_SIGV4_UNSIGNED;
	e = check_payload_hash(ph, out);
	if (e != BC_S3E_NONE)
		return e;
	if (!amz_headers_signed(r, v.signed_headers)) {
		out->message = "There were headers present in the request "
		    "which were not signed";
		return BC_S3E_AccessDenied;
	}
	return v4_check(r, &v, date, ph, true, key, out);
}

static size_t
count_headers(const bc_s3_req_t *r, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < r->headers.n; i++)
		if (strcasecmp(r->headers.v[i].name, name) == 0)
			n++;
	return n;
}

bc_s3err_t
bc_s3_auth_verify(const bc_s3_req_t *r, time_t now, bc_s3_secret_fn secret,
    void *ctx, bool allow_anonymous, bc_s3_auth_t *out)
{
	const char *authz = bc_kv_get(&r->headers, "Authorization");
	const bc_kvlist_t *q = &r->query;
	const char *ph;
	bool q4, q2;

	memset(out, 0, sizeof(*out));
	q4 = bc_kv_get_exact(q, "X-Amz-Algorithm") != NULL ||
	    bc_kv_get_exact(q, "X-Amz-Credential") != NULL ||
	    bc_kv_get_exact(q, "X-Amz-Signature") != NULL;
	q2 = bc_kv_get_exact(q, "AWSAccessKeyId") != NULL ||
	    bc_kv_get_exact(q, "Signature") != NULL;
	if ((authz != NULL && (q4 || q2)) || (q4 && q2) ||
	    count_headers(r, "Authorization") > 1) {
		out->message = "Only one auth mechanism allowed; only the "
		    "X-Amz-Algorithm query parameter, Signature query string "
		    "parameter or the Authorization header should be "
		    "specified";
		return BC_S3E_InvalidArgument;
	}
	if (authz != NULL) {
		if (strncmp(authz, ALGORITHM, strlen(ALGORITHM)) == 0)
			return verify_v4_header(r, authz, now, secret, ctx,
			    out);
		if (strncmp(authz, "AWS ", 4) == 0)
			return bc_s3_sigv2_verify(r, now, secret, ctx, out);
		out->message = "Unsupported Authorization Type";
		return BC_S3E_AccessDenied;
	}
	if (q4)
		return verify_v4_query(r, now, secret, ctx, out);
	if (q2)
		return bc_s3_sigv2_verify(r, now, secret, ctx, out);
	if (!allow_anonymous)
		return BC_S3E_AccessDenied;
	out->kind = BC_S3AUTH_NONE;
	/* the one aws-chunked mode that needs no key: its checksum trailer
	 * is still verified */
	ph = bc_kv_get(&r->headers, "x-amz-content-sha256");
	if (ph != NULL && strcmp(ph, BC_SIGV4_STREAMING_UNSIGNED_TRAILER) ==
	    0) {
		snprintf(out->payload_hash, sizeof(out->payload_hash), "%s",
		    ph);
		out->streaming = true;
		out->stream_mode = BC_AWSCHUNKED_UNSIGNED_TRAILER;
	}
	return BC_S3E_NONE;
}
