/*
 * fuzz_admin.c — the admin and jobs endpoints (http/http_admin.c) as a
 * remote client reaches them: the real server, started once in this
 * process and composed as src/main.c composes the daemon, with the jobs
 * registry, the prefetcher and scale/ (fuzz_server.h), and
 *
 *   --upstream file://ROOT --listen 127.0.0.1:PORT
 *   --client-key FULL:fullsecret:bkt --client-key LIM:limsecret:bkt/train/
 *   --admin-token TOK --anonymous --threads 1 --log-level error
 *   --mem-size 64MiB
 *
 * where ROOT holds the bucket "bkt": train/0001.bin .. train/0004.bin,
 * val/0001.bin, a.txt and dir/b.bin.
 *
 * Input: one or more requests, separated by a line "~~~~" (the LF before
 * it ends the previous request's body), at most MAX_REQUESTS, sent one
 * after the other on connections of their own, so one input can post a
 * plan and then read, list, replace or end its job as another client.
 * Each is a first byte of flags, then the request in text form:
 *
 *   METHOD TARGET            (TARGET: the path and query, as sent)
 *   Name: value              (header lines)
 *   ...
 *                            (an empty line)
 *   body                     (the rest, any bytes)
 *
 * Lines end in LF (a CR before it is dropped); the blanks after ':' are
 * skipped; a line without ':' is a header with an empty value; at most
 * FUZZ_MAX_HEADERS header lines. Without a request line (no space in the
 * first line) nothing is sent. The flags say how the harness sends it,
 * the ways remote clients reach the gateway:
 *
 *   bit 0     relayed: adds "X-Forwarded-For: 203.0.113.7", so the
 *             client is not local (a loopback client without it is, and
 *             skips authentication)
 *   bits 1-2  credentials: 0 none but the input's own; 1 SigV4 in the
 *             Authorization header (bc_sigv4_sign, at the current time);
 *             2 SigV4 presigned: X-Amz-Algorithm, -Credential, -Date,
 *             -Expires (300), -SignedHeaders (host) and -Signature
 *             appended to the query; 3 the admin token
 *   bit 3     the key LIM (else FULL); with the token: sent as
 *             "Authorization: Bearer TOK" (else x-bucketcache-admin-token)
 *   bit 4     the payload hash signed is UNSIGNED-PAYLOAD (else the
 *             body's real SHA-256: the x-amz-content-sha256 header, or a
 *             presigned X-Amz-Content-Sha256 parameter); an
 *             x-amz-content-sha256 header in the input is signed as given
 *             (a wrong digest, a STREAMING-* mode); with the token: a
 *             wrong token
 *   bit 5     the body is gzipped (the plan format takes gzip)
 *   bit 6     the body is sent chunked (Transfer-Encoding: chunked, 700
 *             bytes a chunk), else with Content-Length
 *   bit 7     raw framing: the input's Host, Content-Length,
 *             Transfer-Encoding and Connection headers go as given and the
 *             body as is (it may be short, long, or a second request);
 *             otherwise the harness drops those, sends "Host:
 *             127.0.0.1:PORT" first, frames the body itself and asks for
 *             "Connection: close"
 *
 * A signature is computed over the request as the server parses it (the
 * target through bc_s3_req_parse, the headers as sent), so a well-formed
 * input gets past verification into the plan builder, the jobs registry
 * and the handlers; the fuzzer still reaches every refusal.
 *
 * State: each input meets the same state. After its last request, every
 * job is deleted (and scale/ told to forget it), and an input that may
 * have written (a method other than GET or HEAD, or "PUT", "POST" or
 * "DELETE" anywhere in a raw-framed request) resets ROOT to the fixture
 * and drops the bucket from the cache. Fills a plan's prefetch started may still land afterwards:
 * the cache's content is only about the same from input to input.
 *
 * Bounds: inputs over INPUT_MAX bytes are skipped; a framed request waits
 * up to ANSWER_MS for its answer to begin, a raw one FIRST_BYTE_MS (it
 * may never be complete), then FUZZ_READ_IDLE_MS of silence ends it.
 * With FUZZ_ADMIN_VERBOSE set in the environment each request's head and
 * the answer's status line go to stderr (to check seeds).
 *
 * Checks: what the sanitizers see, the server's threads included; and
 * that a framed request the harness signed is never refused with
 * SignatureDoesNotMatch (the signer and the server's verifier agree on
 * what was sent, as fuzz_sigv4 checks without the wire).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem, strcasestr */
#endif
#include <strings.h>
#include <time.h>

#include <zlib.h>

#include "fuzz.h"
#include "fuzz_server.h"
#include "s3/s3_sigv4.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"

#define INPUT_MAX     65536
#define MAX_REQUESTS  8
#define SEPARATOR     "\n~~~~\n"
#define ANSWER_MS     1000
#define FIRST_BYTE_MS 10
#define CHUNK         700
#define REGION        "us-east-1"
#define RELAY_ADDR    "203.0.113.7"
#define TOKEN         "TOK"

enum {
	F_RELAYED  = 1 << 0,
	F_AUTH     = 3 << 1,
	F_LIM      = 1 << 3,
	F_UNSIGNED = 1 << 4,
	F_GZIP     = 1 << 5,
	F_CHUNKED  = 1 << 6,
	F_RAW      = 1 << 7,
};

enum { AUTH_NONE, AUTH_HEADER, AUTH_QUERY, AUTH_TOKEN };

static const char *const args[] = {
	"--client-key", "FULL:fullsecret:bkt",
	"--client-key", "LIM:limsecret:bkt/train/",
	"--admin-token", TOKEN, "--anonymous", "--threads", "1",
	"--log-level", "error", "--mem-size", "64MiB", NULL };

static const fuzz_file_t files[] = {
	{ "bkt/a.txt", "hello, world\n", 13 },
	{ "bkt/dir/b.bin", NULL, 1000 },
	{ "bkt/train/0001.bin", NULL, 4096 },
	{ "bkt/train/0002.bin", NULL, 70000 },
	{ "bkt/train/0003.bin", NULL, 10 },
	{ "bkt/train/0004.bin", NULL, 1 },
	{ "bkt/val/0001.bin", NULL, 5000 },
};

static const fuzz_server_opts_t server = {
	.name = "fuzz_admin",
	.args = args,
	.files = files,
	.nfiles = sizeof(files) / sizeof(*files),
	.bucket = "bkt",
	.jobs = true,
};

/* The input, split. Strings are the harness's copies. */
typedef struct input_s {
	unsigned    flags;
	char       *method;
	char       *target;
	bc_kvlist_t headers;
	const uint8_t *body;
	size_t      nbody;
} input_t;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_server_start(&server);
	return 0;
}

/* The framing headers the harness writes itself unless F_RAW. */
static bool
framing_header(const char *name)
{
	static const char *const names[] = { "Host", "Content-Length",
	    "Transfer-Encoding", "Connection", NULL };

	for (int i = 0; names[i] != NULL; i++)
		if (strcasecmp(name, names[i]) == 0)
			return true;
	return false;
}

/* Splits data (the text after the flags) into in; false when there is
 * no request line. in->method and in->target are set either way (NULL or
 * the caller's to free). */
static bool
split(input_t *in, const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	const uint8_t *nl = memchr(p, '\n', size);
	size_t n = (size_t)((nl != NULL ? nl : end) - p), nh = 0;
	char *line = fuzz_strndup(p, n), *sp;
	bool ok = false;

	if (n > 0 && line[n - 1] == '\r')
		line[n - 1] = '\0';
	sp = strchr(line, ' ');
	if (sp == NULL)
		goto out;
	*sp = '\0';
	in->method = fuzz_strndup(line, strlen(line));
	in->target = fuzz_strndup(sp + 1, strlen(sp + 1));
	ok = true;
	p = nl != NULL ? nl + 1 : end;
	while (p < end) {
		char *h, *colon;

		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl != NULL ? nl : end) - p);
		h = fuzz_strndup(p, n);
		p = nl != NULL ? nl + 1 : end;
		n = strlen(h);
		if (n > 0 && h[n - 1] == '\r')
			h[--n] = '\0';
		if (n == 0) {
			free(h);
			break;   /* the body follows */
		}
		if (nh++ < FUZZ_MAX_HEADERS) {
			colon = strchr(h, ':');
			if (colon != NULL) {
				*colon++ = '\0';
				colon += strspn(colon, " \t");
			}
			if ((in->flags & F_RAW) || !framing_header(h))
				FUZZ_CHECK(bc_kv_add(&in->headers, h,
				    colon != NULL ? colon : "") == 0);
		}
		free(h);
	}
	in->body = p;
	in->nbody = (size_t)(end - p);
out:
	free(line);
	return ok;
}

/* The gzip of p[0..n) into out. */
static void
gzip(const uint8_t *p, size_t n, bc_buf_t *out)
{
	z_stream z;
	uLong cap;

	memset(&z, 0, sizeof(z));
	FUZZ_CHECK(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
	    16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	cap = deflateBound(&z, (uLong)n) + 32;
	FUZZ_CHECK(bc_buf_reserve(out, cap) == 0);
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)out->data;
	z.avail_out = (uInt)cap;
	FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
	out->len = cap - z.avail_out;
	out->data[out->len] = '\0';
	deflateEnd(&z);
}

static void
key_of(unsigned flags, const char **ak, const char **sk)
{
	*ak = flags & F_LIM ? "LIM" : "FULL";
	*sk = flags & F_LIM ? "limsecret" : "fullsecret";
}

/* The payload hash to sign: the input's own x-amz-content-sha256, else
 * UNSIGNED-PAYLOAD or the body's SHA-256 (hex into hex[65]). */
static const char *
payload_hash(const input_t *in, const bc_buf_t *body, char hex[65])
{
	const char *given = bc_kv_get(&in->headers, "x-amz-content-sha256");

	if (given != NULL)
		return given;
	if (in->flags & F_UNSIGNED)
		return BC_SIGV4_UNSIGNED;
	bc_sha256_hex(body->data != NULL ? body->data : "", body->len, hex);
	return hex;
}

/* r: the request as the server will parse it (init'ed, headers as
 * sent). false when it does not parse (then it is sent unsigned). */
static bool
parse_as_server(bc_s3_req_t *r, const input_t *in, const char *target)
{
	bc_s3_req_init(r);
	for (size_t i = 0; i < in->headers.n; i++)
		FUZZ_CHECK(bc_kv_add(&r->headers, in->headers.v[i].name,
		    in->headers.v[i].value) == 0);
	return bc_s3_req_parse(r, in->method, target, NULL) == BC_S3E_NONE;
}

/* Signs in's headers (SigV4, Authorization header) at now; false when
 * the request does not parse or the signer refuses it. */
static bool
sign_header(input_t *in, const bc_buf_t *body, time_t now)
{
	bc_sigv4_creds_t creds = { NULL, NULL, NULL, REGION, "s3" };
	char hex[65];
	const char *ph = payload_hash(in, body, hex);
	bc_s3_req_t r;
	bool ok = false;

	key_of(in->flags, &creds.access_key, &creds.secret_key);
	if (parse_as_server(&r, in, in->target) &&
	    bc_sigv4_sign(&r.headers, r.method, r.path, &r.query, ph, &creds,
	    now, NULL) == 0) {
		bc_kv_fini(&in->headers);
		in->headers = r.headers;   /* taken over */
		memset(&r.headers, 0, sizeof(r.headers));
		ok = true;
	}
	bc_s3_req_fini(&r);
	return ok;
}

/* Presigns in's target at now: appends the X-Amz-* parameters, the
 * signature last (when the request parses and has a Host to sign: then
 * true). */
static bool
presign(input_t *in, const bc_buf_t *body, time_t now)
{
	const char *ak, *sk, *sep;
	char amz_date[17], date8[9], scope[96], hex[65], sig[65];
	bc_buf_t target = BC_BUF_INIT, creq = BC_BUF_INIT;
	bc_sigv4_input_t si;
	bc_s3_req_t r;
	uint8_t key[32];
	size_t tl = strlen(in->target);
	bool ok = false;

	key_of(in->flags, &ak, &sk);
	bc_sigv4_amz_date(now, amz_date);
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	snprintf(scope, sizeof(scope), "%s/" REGION "/s3/aws4_request", date8);
	sep = strchr(in->target, '?') == NULL ? "?" : tl > 0 &&
	    (in->target[tl - 1] == '?' || in->target[tl - 1] == '&') ? "" :
	    "&";
	FUZZ_CHECK(bc_buf_printf(&target, "%s%sX-Amz-Algorithm="
	    "AWS4-HMAC-SHA256&X-Amz-Credential=%s%%2F%s%%2F" REGION
	    "%%2Fs3%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=300"
	    "&X-Amz-SignedHeaders=host", in->target, sep, ak, date8,
	    amz_date) == 0);
	if (!(in->flags & F_UNSIGNED)) {
		bc_sha256_hex(body->data != NULL ? body->data : "", body->len,
		    hex);
		FUZZ_CHECK(bc_buf_printf(&target, "&X-Amz-Content-Sha256=%s",
		    hex) == 0);
	}
	if (parse_as_server(&r, in, bc_buf_str(&target))) {
		const char *ph = bc_kv_get_exact(&r.query,
		    "X-Amz-Content-Sha256");

		memset(&si, 0, sizeof(si));
		si.method = r.method;
		si.path = r.path;
		si.query = &r.query;
		si.headers = &r.headers;
		si.signed_headers = "host";
		si.payload_hash = ph != NULL ? ph : BC_SIGV4_UNSIGNED;
		si.skip_query = "X-Amz-Signature";
		if (bc_sigv4_canonical_request(&creq, &si) == 0) {
			bc_sigv4_signing_key(sk, date8, REGION, "s3", key);
			bc_sigv4_signature(bc_buf_str(&creq), amz_date, scope,
			    key, sig);
			FUZZ_CHECK(bc_buf_printf(&target,
			    "&X-Amz-Signature=%s", sig) == 0);
			ok = true;
		}
	}
	bc_s3_req_fini(&r);
	free(in->target);
	in->target = bc_buf_steal(&target);
	FUZZ_CHECK(in->target != NULL);
	bc_buf_fini(&creq);
	return ok;
}

/* The request as it goes on the wire, into out. */
static void
render(const input_t *in, const bc_buf_t *body, bc_buf_t *out)
{
	FUZZ_CHECK(bc_buf_printf(out, "%s %s HTTP/1.1\r\n", in->method,
	    in->target) == 0);
	for (size_t i = 0; i < in->headers.n; i++)
		FUZZ_CHECK(bc_buf_printf(out, "%s: %s\r\n",
		    in->headers.v[i].name, in->headers.v[i].value) == 0);
	if (in->flags & F_RAW) {
		FUZZ_CHECK(bc_buf_puts(out, "\r\n") == 0);
		FUZZ_CHECK(bc_buf_append(out, body->data, body->len) == 0);
		return;
	}
	if (in->flags & F_CHUNKED)
		FUZZ_CHECK(bc_buf_puts(out, "Transfer-Encoding: chunked\r\n") ==
		    0);
	else
		FUZZ_CHECK(bc_buf_printf(out, "Content-Length: %zu\r\n",
		    body->len) == 0);
	FUZZ_CHECK(bc_buf_puts(out, "Connection: close\r\n\r\n") == 0);
	if (!(in->flags & F_CHUNKED)) {
		FUZZ_CHECK(bc_buf_append(out, body->data, body->len) == 0);
		return;
	}
	for (size_t off = 0; off < body->len; off += CHUNK) {
		size_t n = body->len - off < CHUNK ? body->len - off : CHUNK;

		FUZZ_CHECK(bc_buf_printf(out, "%zx\r\n", n) == 0);
		FUZZ_CHECK(bc_buf_append(out, body->data + off, n) == 0);
		FUZZ_CHECK(bc_buf_puts(out, "\r\n") == 0);
	}
	FUZZ_CHECK(bc_buf_puts(out, "0\r\n\r\n") == 0);
}

/* Deletes every job (the operator's call) and has scale/ forget it. */
static void
end_jobs(void)
{
	bc_jobs_t *jobs = fuzz_server_jobs();
	bc_buf_t list = BC_BUF_INIT;
	const char *p;

	if (bc_jobs_count(jobs) == 0)
		return;
	FUZZ_CHECK(bc_jobs_json(jobs, NULL, NULL, &list) == 0);
	/* ids are [A-Za-z0-9._~:@+=-] (bc_s3_hint_job_ok): no escapes */
	for (p = strstr(bc_buf_str(&list), "{\"id\": \""); p != NULL;
	    p = strstr(p, "{\"id\": \"")) {
		const char *id = p + 8, *q = strchr(id, '"');
		char *s;

		FUZZ_CHECK(q != NULL);
		s = fuzz_strndup(id, (size_t)(q - id));
		(void)bc_jobs_delete(jobs, s, NULL);
		bc_scale_forget(fuzz_server_scale(), s);
		free(s);
		p = q;
	}
	bc_buf_fini(&list);
	FUZZ_CHECK(bc_jobs_count(jobs) == 0);
}

static bool
writes(const input_t *in, const uint8_t *data, size_t size)
{
	if (strcmp(in->method, "GET") != 0 && strcmp(in->method, "HEAD") != 0)
		return true;
	return (in->flags & F_RAW) && (memmem(data, size, "PUT", 3) != NULL ||
	    memmem(data, size, "POST", 4) != NULL ||
	    memmem(data, size, "DELETE", 6) != NULL);
}

static void
verbose(const bc_buf_t *req, const char *answer)
{
	const char *end = strstr(bc_buf_str(req), "\r\n\r\n");
	const char *code = strstr(answer, "<Code>");
	size_t n = end != NULL ? (size_t)(end - req->data) : req->len;
	size_t an = strcspn(answer, "\r\n"), nans = 0;

	for (const char *a = strstr(answer, "HTTP/1."); a != NULL;
	    a = strstr(a + 1, "HTTP/1."))
		nans++;
	fprintf(stderr, "---- %zu bytes\n%.*s\n---> (%zu) %.*s %.*s\n",
	    req->len, (int)(n < 4096 ? n : 4096), req->data, nans, (int)an,
	    answer, code != NULL ? (int)strcspn(code, "\n") : 0,
	    code != NULL ? code : "");
}

/* Sends one request (flags byte and text); returns whether it may have
 * written. */
static bool
one_request(const uint8_t *data, size_t size)
{
	static int verbose_on = -1;
	input_t in;
	bc_buf_t body = BC_BUF_INIT, req = BC_BUF_INIT;
	char answer[2048], port_host[32];
	time_t now = time(NULL);
	bool wrote = false, signed_here = false;
	int auth;

	if (verbose_on < 0)
		verbose_on = getenv("FUZZ_ADMIN_VERBOSE") != NULL;
	memset(&in, 0, sizeof(in));
	if (size < 1)
		goto out;
	in.flags = data[0];
	auth = (int)((in.flags & F_AUTH) >> 1);
	if (!split(&in, data + 1, size - 1))
		goto out;
	if (in.flags & F_GZIP)
		gzip(in.body, in.nbody, &body);
	else
		FUZZ_CHECK(bc_buf_append(&body, in.body, in.nbody) == 0);
	if (!(in.flags & F_RAW)) {
		bc_kvlist_t h = BC_KVLIST_INIT;

		snprintf(port_host, sizeof(port_host), "127.0.0.1:%d",
		    fuzz_server_port());
		FUZZ_CHECK(bc_kv_add(&h, "Host", port_host) == 0);
		for (size_t i = 0; i < in.headers.n; i++)
			FUZZ_CHECK(bc_kv_add(&h, in.headers.v[i].name,
			    in.headers.v[i].value) == 0);
		bc_kv_fini(&in.headers);
		in.headers = h;
	}
	if (in.flags & F_RELAYED)
		FUZZ_CHECK(bc_kv_add(&in.headers, "X-Forwarded-For",
		    RELAY_ADDR) == 0);
	if (auth == AUTH_TOKEN) {
		const char *tok = in.flags & F_UNSIGNED ? TOKEN "x" : TOKEN;

		if (in.flags & F_LIM) {
			char bearer[16];

			snprintf(bearer, sizeof(bearer), "Bearer %s", tok);
			FUZZ_CHECK(bc_kv_add(&in.headers, "Authorization",
			    bearer) == 0);
		} else {
			FUZZ_CHECK(bc_kv_add(&in.headers,
			    "x-bucketcache-admin-token", tok) == 0);
		}
	} else if (auth == AUTH_HEADER) {
		signed_here = sign_header(&in, &body, now);
	} else if (auth == AUTH_QUERY) {
		signed_here = presign(&in, &body, now);
	}
	render(&in, &body, &req);
	(void)fuzz_server_exchange(req.data, req.len, in.flags & F_RAW ?
	    FIRST_BYTE_MS : ANSWER_MS, answer, sizeof(answer));
	if (verbose_on)
		verbose(&req, answer);
	/* the harness's signer and the server's verifier agree on the wire */
	if (signed_here && !(in.flags & F_RAW) && strstr(answer,
	    "<Code>SignatureDoesNotMatch</Code>") != NULL) {
		verbose(&req, answer);
		FUZZ_CHECK(!"a request the harness signed was refused with "
		    "SignatureDoesNotMatch");
	}
	wrote = writes(&in, data + 1, size - 1);
out:
	free(in.method);
	free(in.target);
	bc_kv_fini(&in.headers);
	bc_buf_fini(&body);
	bc_buf_fini(&req);
	return wrote;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	bool wrote = false;

	if (size > INPUT_MAX)
		return 0;
	fuzz_server_start(&server);
	for (int i = 0; i < MAX_REQUESTS && p < end; i++) {
		const uint8_t *sep = memmem(p, (size_t)(end - p), SEPARATOR,
		    sizeof(SEPARATOR) - 1);
		const uint8_t *stop = sep != NULL ? sep : end;

		if (one_request(p, (size_t)(stop - p)))
			wrote = true;
		p = sep != NULL ? sep + sizeof(SEPARATOR) - 1 : end;
	}
	end_jobs();
	if (wrote)
		fuzz_server_reset();
	return 0;
}
