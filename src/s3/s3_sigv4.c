/*
 * s3_sigv4.c — AWS Signature Version 4 for S3 (see s3_sigv4.h): URI
 * encoding, the canonical request, the signing key chain, request and
 * aws-chunked chunk signatures, and the upstream signer.
 *
 * Pure and thread-safe: no state beyond the caller's buffers. The one
 * canonicalizer here is used both for signing and, through s3_auth.c,
 * for verifying clients.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_date.h"
#include "s3/s3_sigv4.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define ALGORITHM   "AWS4-HMAC-SHA256"
#define SMALL_QUERY 16   /* query parameters sorted without malloc */

static bool
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

int
bc_sigv4_uri_encode(bc_buf_t *out, const char *s, bool keep_slash)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *w;
	int rv;

	/* room for the worst case, then written in place (this runs for
	 * every query parameter of every signed request) */
	if (n > ((size_t)-1 / 2) / 3)
		return BC_E2BIG;
	rv = bc_buf_reserve(out, 3 * n);
	if (rv < 0)
		return rv;
	w = out->data + out->len;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0';
	    p++) {
		if (unreserved(*p) || (*p == '/' && keep_slash)) {
			*w++ = (char)*p;
		} else {
			*w++ = '%';
			*w++ = digits[*p >> 4];
			*w++ = digits[*p & 15];
		}
	}
	*w = '\0';
	out->len = (size_t)(w - out->data);
	return 0;
}

typedef struct qpair_s {
	const char *name;
	const char *value;
} qpair_t;

static int
qpair_cmp(const void *a, const void *b)
{
	const qpair_t *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : strcmp(x->value, y->value);
}

int
bc_sigv4_canonical_query(bc_buf_t *out, const bc_kvlist_t *q,
    const char *skip)
{
	bc_buf_t enc = BC_BUF_INIT;
	size_t soffs[2 * SMALL_QUERY], *offs = soffs;
	qpair_t spairs[SMALL_QUERY], *pairs = spairs;
	size_t n = 0;
	int rv = 0;

	if (q->n == 0)
		return 0;
	if (q->n > SMALL_QUERY) {   /* most queries fit on the stack */
		offs = calloc(q->n, 2 * sizeof(*offs));
		pairs = calloc(q->n, sizeof(*pairs));
		if (offs == NULL || pairs == NULL) {
			rv = BC_ENOMEM;
			goto fail;
		}
	}
	/* Encode every name and value, NUL-separated, into one buffer;
	 * record offsets (the buffer moves while it grows). */
	for (size_t i = 0; i < q->n && rv == 0; i++) {
		if (skip != NULL && strcmp(q->v[i].name, skip) == 0)
			continue;
		offs[2 * n] = enc.len;
		rv = bc_sigv4_uri_encode(&enc, q->v[i].name, false);
		if (rv == 0)
			rv = bc_buf_putc(&enc, '\0');
		offs[2 * n + 1] = enc.len;
		if (rv == 0)
			rv = bc_sigv4_uri_encode(&enc, q->v[i].value, false);
		if (rv == 0)
			rv = bc_buf_putc(&enc, '\0');
		n++;
	}
	if (rv < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		pairs[i].name = enc.data + offs[2 * i];
		pairs[i].value = enc.data + offs[2 * i + 1];
	}
	qsort(pairs, n, sizeof(*pairs), qpair_cmp);
	for (size_t i = 0; i < n && rv == 0; i++) {
		if (i > 0)
			rv = bc_buf_putc(out, '&');
		if (rv == 0)
			rv = bc_buf_puts(out, pairs[i].name);
		if (rv == 0)
			rv = bc_buf_putc(out, '=');
		if (rv == 0)
			rv = bc_buf_puts(out, pairs[i].value);
	}
fail:
	if (offs != soffs)
		free(offs);
	if (pairs != spairs)
		free(pairs);
	bc_buf_fini(&enc);
	return rv;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Appends v with leading/trailing whitespace removed and inner runs of
 * whitespace folded to one space (AWS "Trimall"). */
static int
put_trimmed(bc_buf_t *out, const char *v)
{
	int rv = 0;

	while (is_space(*v))
		v++;
	while (*v != '\0' && rv == 0) {
		size_t n = strcspn(v, " \t");   /* a run of non-blanks */

		rv = bc_buf_append(out, v, n);
		v += n;
		while (is_space(*v))
			v++;
		if (rv == 0 && *v != '\0')
			rv = bc_buf_putc(out, ' ');
	}
	return rv;
}

/* Appends "name:v1,v2\n" for every header called name (n bytes). */
static int
put_header(bc_buf_t *out, const bc_kvlist_t *h, const char *name, size_t n)
{
	bool found = false;
	int rv;

	rv = bc_buf_append(out, name, n);
	if (rv == 0)
		rv = bc_buf_putc(out, ':');
	for (size_t i = 0; i < h->n && rv == 0; i++) {
		if (strlen(h->v[i].name) != n ||
		    strncasecmp(h->v[i].name, name, n) != 0)
			continue;
		if (found)
			rv = bc_buf_putc(out, ',');
		if (rv == 0)
			rv = put_trimmed(out, h->v[i].value);
		found = true;
	}
	if (rv == 0 && !found)
		rv = BC_EINVAL;
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	return rv;
}

int
bc_sigv4_canonical_request(bc_buf_t *out, const bc_sigv4_input_t *in)
{
	const char *p;
	int rv;

	rv = bc_buf_puts(out, in->method);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0 && in->canonical_uri != NULL)
		rv = bc_buf_puts(out, in->canonical_uri);
	else if (rv == 0 && in->path[0] == '\0')
		rv = bc_buf_putc(out, '/');
	else if (rv == 0)
		rv = bc_sigv4_uri_encode(out, in->path, true);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0 && in->canonical_query != NULL)
		rv = bc_buf_puts(out, in->canonical_query);
	else if (rv == 0 && in->query != NULL)
		rv = bc_sigv4_canonical_query(out, in->query, in->skip_query);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');

	/* "a;b;c": every name non-empty, no leading/trailing ';' */
	p = in->signed_headers;
	while (rv == 0) {
		size_t n = strcspn(p, ";");

		if (n == 0) {
			rv = BC_EINVAL;
			break;
		}
		rv = put_header(out, in->headers, p, n);
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0)
		rv = bc_buf_puts(out, in->signed_headers);
	if (rv == 0)
		rv = bc_buf_putc(out, '\n');
	if (rv == 0)
		rv = bc_buf_puts(out, in->payload_hash);
	return rv;
}

static void
hmac_str(const uint8_t *key, size_t klen, const char *s, uint8_t out[32])
{
	bc_hmac_sha256(key, klen, s, strlen(s), out);
}

/*
 * Per-thread cache of derived signing keys: a key changes once a day per
 * (secret, region, service), and deriving one costs four HMACs, more than
 * the rest of a signature. Entries hold what they were derived from
 * (secrets up to KEYCACHE_SECRET bytes; longer ones are never cached) and
 * are reused round-robin. Thread-local: no lock, nothing to free.
 */
#define KEYCACHE_N      4
#define KEYCACHE_SECRET 128

typedef struct keycache_s {
	char    secret[KEYCACHE_SECRET + 1];
	char    date8[9];
	char    region[64];
	char    service[16];
	uint8_t key[32];
	bool    used;
} keycache_t;

static _Thread_local keycache_t keycache[KEYCACHE_N];
static _Thread_local unsigned   keycache_next;

static void
derive_signing_key(const char *secret, const char *date8, const char *region,
    const char *service, uint8_t key[32])
{
	char stack[4 + 256];
	char *k = stack;
	size_t slen = strlen(secret);
	uint8_t a[32], b[32];

	if (slen > sizeof(stack) - 4) {
		k = malloc(slen + 4);
		if (k == NULL) {
			/* fails closed: no client can match a zero key by
			 * chance, and an upstream will reject it */
			memset(key, 0, 32);
			return;
		}
	}
	memcpy(k, "AWS4", 4);
	memcpy(k + 4, secret, slen);
	hmac_str((const uint8_t *)k, slen + 4, date8, a);
	hmac_str(a, sizeof(a), region, b);
	hmac_str(b, sizeof(b), service, a);
	hmac_str(a, sizeof(a), "aws4_request", key);
	if (k != stack)
		free(k);
	memset(stack, 0, sizeof(stack));
}

void
bc_sigv4_signing_key(const char *secret, const char *date8,
    const char *region, const char *service, uint8_t key[32])
{
	keycache_t *e;

	if (strlen(secret) > KEYCACHE_SECRET || strlen(date8) != 8 ||
	    strlen(region) >= sizeof(e->region) ||
	    strlen(service) >= sizeof(e->service)) {
		derive_signing_key(secret, date8, region, service, key);
		return;
	}
	for (unsigned i = 0; i < KEYCACHE_N; i++) {
		e = &keycache[i];
		if (e->used && strcmp(e->date8, date8) == 0 &&
		    strcmp(e->region, region) == 0 &&
		    strcmp(e->service, service) == 0 &&
		    strcmp(e->secret, secret) == 0) {
			memcpy(key, e->key, 32);
			return;
		}
	}
	e = &keycache[keycache_next++ % KEYCACHE_N];
	derive_signing_key(secret, date8, region, service, e->key);
	strcpy(e->secret, secret);
	strcpy(e->date8, date8);
	strcpy(e->region, region);
	strcpy(e->service, service);
	e->used = true;
	memcpy(key, e->key, 32);
}

void
bc_sigv4_amz_date(time_t t, char out[17])
{
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || tm.tm_year < 70 ||
	    tm.tm_year > 9999 - 1900 ||
	    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		memcpy(out, "19700101T000000Z", 17);
}

int
bc_sigv4_parse_amz_date(const char *s, time_t *t)
{
	return bc_amz_date_parse(s, t);
}

void
bc_sigv4_signature(const char *creq, const char *amz_date,
    const char *scope, const uint8_t key[32], char sig[65])
{
	char hash[65], sts[sizeof(ALGORITHM) + 17 + 128 + 65 + 4];
	size_t dl = strlen(amz_date), sl = strlen(scope), n;
	uint8_t mac[32];

	if (dl > 16 || sl > 127) {
		/* longer than any valid one: a signature nobody can match */
		memset(sig, '0', 64);
		sig[64] = '\0';
		sig[0] = 'x';
		return;
	}
	bc_sha256_hex(creq, strlen(creq), hash);
	/* ALGORITHM "\n" amz_date "\n" scope "\n" hash */
	n = sizeof(ALGORITHM) - 1;
	memcpy(sts, ALGORITHM "\n", n + 1);
	memcpy(sts + n + 1, amz_date, dl);
	n += 1 + dl;
	sts[n++] = '\n';
	memcpy(sts + n, scope, sl);
	n += sl;
	sts[n++] = '\n';
	memcpy(sts + n, hash, 64);
	n += 64;
	bc_hmac_sha256(key, 32, sts, n, mac);
	bc_hex(mac, sizeof(mac), sig);
}

void
bc_sigv4_chunk_signature_hex(const bc_sigv4_ctx_t *ctx, const char *prev,
    const char *data_sha256, char sig[65])
{
	char sts[512];
	uint8_t mac[32];
	int n;

	n = snprintf(sts, sizeof(sts), ALGORITHM "-PAYLOAD\n%s\n%s\n%s\n"
	    BC_SIGV4_EMPTY_SHA256 "\n%s", ctx->amz_date, ctx->scope, prev,
	    data_sha256);
	if (n < 0 || (size_t)n >= sizeof(sts)) {
		memset(sig, '0', 64);
		sig[64] = '\0';
		sig[0] = 'x';
		return;
	}
	bc_hmac_sha256(ctx->key, sizeof(ctx->key), sts, (size_t)n, mac);
	bc_hex(mac, sizeof(mac), sig);
}

void
bc_sigv4_chunk_signature(const bc_sigv4_ctx_t *ctx, const char *prev,
    const void *data, size_t n, char sig[65])
{
	char hash[65];

	bc_sha256_hex(data, n, hash);
	bc_sigv4_chunk_signature_hex(ctx, prev, hash, sig);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
signable(const char *name)
{
	return strcasecmp(name, "host") == 0 ||
	    strcasecmp(name, "content-md5") == 0 ||
	    strcasecmp(name, "content-type") == 0 ||
	    strncasecmp(name, "x-amz-", 6) == 0;
}

/* Appends the sorted, de-duplicated, lower-cased names of the headers the
 * signer signs, ';'-separated. */
static int
signed_list(bc_buf_t *out, const bc_kvlist_t *h)
{
	char **names = calloc(h->n + 1, sizeof(*names));
	size_t n = 0;
	int rv = 0;

	if (names == NULL)
		return BC_ENOMEM;
	for (size_t i = 0; i < h->n && rv == 0; i++) {
		const char *nm = h->v[i].name;

		if (!signable(nm))
			continue;
		if (nm[0] == '\0' || nm[strcspn(nm, ";, \t\r\n:")] != '\0') {
			rv = BC_EINVAL;
			break;
		}
		names[n] = strdup(nm);
		if (names[n] == NULL) {
			rv = BC_ENOMEM;
			break;
		}
		for (char *c = names[n]; *c != '\0'; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c + 32);
		n++;
	}
	if (rv == 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n && rv == 0; i++) {
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		if (out->len > 0)
			rv = bc_buf_putc(out, ';');
		if (rv == 0)
			rv = bc_buf_puts(out, names[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rv;
}

int
bc_sigv4_sign(bc_kvlist_t *headers, const char *method, const char *path,
    const bc_kvlist_t *query, const char *payload_hash,
    const bc_sigv4_creds_t *creds, time_t now, bc_sigv4_ctx_t *ctx)
{
	bc_buf_t sh = BC_BUF_INIT, creq = BC_BUF_INIT, auth = BC_BUF_INIT;
	bc_sigv4_ctx_t c;
	bc_sigv4_input_t in;
	char date8[9];
	int rv = 0, n;

	memset(&c, 0, sizeof(c));
	if (bc_kv_get(headers, "Host") == NULL || payload_hash == NULL ||
	    creds == NULL || creds->access_key == NULL ||
	    creds->secret_key == NULL || creds->region == NULL ||
	    creds->service == NULL || method == NULL || path == NULL) {
		rv = BC_EINVAL;
		goto fail;
	}
	bc_sigv4_amz_date(now, c.amz_date);
	n = snprintf(c.scope, sizeof(c.scope), "%.8s/%s/%s/aws4_request",
	    c.amz_date, creds->region, creds->service);
	if (n < 0 || (size_t)n >= sizeof(c.scope)) {
		rv = BC_EINVAL;
		goto fail;
	}
	bc_kv_del(headers, "Authorization");
	rv = bc_kv_set(headers, "x-amz-date", c.amz_date);
	if (rv == 0)
		rv = bc_kv_set(headers, "x-amz-content-sha256", payload_hash);
	if (rv == 0 && creds->session_token != NULL &&
	    creds->session_token[0] != '\0')
		rv = bc_kv_set(headers, "x-amz-security-token",
		    creds->session_token);
	else
		bc_kv_del(headers, "x-amz-security-token");
	if (rv == 0)
		rv = signed_list(&sh, headers);
	if (rv < 0)
		goto fail;

	memset(&in, 0, sizeof(in));
	in.method = method;
	in.path = path;
	in.query = query;
	in.headers = headers;
	in.signed_headers = bc_buf_str(&sh);
	in.payload_hash = payload_hash;
	rv = bc_sigv4_canonical_request(&creq, &in);
	if (rv < 0)
		goto fail;
	memcpy(date8, c.amz_date, 8);
	date8[8] = '\0';
	bc_sigv4_signing_key(creds->secret_key, date8, creds->region,
	    creds->service, c.key);
	bc_sigv4_signature(bc_buf_str(&creq), c.amz_date, c.scope, c.key,
	    c.signature);
	rv = bc_buf_printf(&auth, ALGORITHM " Credential=%s/%s, "
	    "SignedHeaders=%s, Signature=%s", creds->access_key, c.scope,
	    bc_buf_str(&sh), c.signature);
	if (rv == 0)
		rv = bc_kv_set(headers, "Authorization", bc_buf_str(&auth));
	if (rv == 0 && ctx != NULL)
		*ctx = c;
fail:
	bc_buf_fini(&sh);
	bc_buf_fini(&creq);
	bc_buf_fini(&auth);
	memset(&c, 0, sizeof(c));
	return rv;
}
