/*
 * test_s3_awschunked.c — aws-chunked verification and re-signing with the
 * S3 reference example "Transfer Payload in Multiple Chunks" (66560 bytes
 * of 'a' in 64 KiB chunks, seed 4f232c43...): chunk signatures, decoded
 * and re-signed output, every way of splitting the input, tampering,
 * oversize chunks, truncation, trailing garbage and malformed framing;
 * the declared payload length (x-amz-decoded-content-length): parsing,
 * exact / too long / too short, whole and split, framed and not.
 * The trailer modes: AWS's signed-trailer example (seed 106e2a8a..., CRC32C
 * trailer, trailer signature d81f82fc...) from its request to its body,
 * re-signed and verifiable upstream; the bodies and one whole request the
 * newest @aws-sdk/client-s3 sent (STREAMING-UNSIGNED-PAYLOAD-TRAILER, every
 * checksum), decoded and passed on byte for byte, split every way; wrong
 * checksums (BadDigest), trailer signatures, trailers naming another
 * checksum, missing CRLFs, wrong declared lengths: the body's end never
 * goes out.
 */
#include <criterion/criterion.h>

#include "../bc_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_auth.h"
#include "s3/s3_awschunked.h"
#include "util/util_crypto.h"

#define T_S3DOC    1369353600   /* 20130524T000000Z */
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SEED       "4f232c4386841ef735655705268965c4" \
	"4a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1       "ad80c730a21e5b8d04586a2213dd63b9" \
	"a0e99e0e2307b0ade35a65485a288648"
#define SIG2       "0055627c9e194cb4542bae2aa5492e3c" \
	"1575bbb81b612b7d234b86a503ef5497"
#define SIG3       "b6c6ea8a5354eaf15b3cb7646744f427" \
	"5b71ea724fed81ceb9323e279d449df9"
#define PAYLOAD    66560
#define BODY_LEN   66824           /* the example's Content-Length */

static const char *
secret_of(void *ctx, const char *access_key)
{
	(void)ctx;
	return strcmp(access_key, "AKIAIOSFODNN7EXAMPLE") == 0 ?
	    DOC_SECRET : NULL;
}

static bc_sigv4_ctx_t
client_ctx(void)
{
	bc_sigv4_ctx_t c;

	memset(&c, 0, sizeof(c));
	bc_sigv4_signing_key(DOC_SECRET, "20130524", "us-east-1", "s3",
	    c.key);
	strcpy(c.amz_date, "20130524T000000Z");
	strcpy(c.scope, "20130524/us-east-1/s3/aws4_request");
	strcpy(c.signature, SEED);
	return c;
}

/* The example body: 65536 'a', 1024 'a', final chunk. */
static char *
example_body(size_t *len)
{
	bc_buf_t b = BC_BUF_INIT;
	char *a = malloc(65536);

	cr_assert_not_null(a);
	memset(a, 'a', 65536);
	bc_buf_puts(&b, "10000;chunk-signature=" SIG1 "\r\n");
	bc_buf_append(&b, a, 65536);
	bc_buf_puts(&b, "\r\n400;chunk-signature=" SIG2 "\r\n");
	bc_buf_append(&b, a, 1024);
	bc_buf_puts(&b, "\r\n0;chunk-signature=" SIG3 "\r\n\r\n");
	free(a);
	*len = b.len;
	return bc_buf_steal(&b);
}

/* Takes all pending output, at most step bytes per consume. */
static size_t
drain(bc_awschunked_t *d, bc_buf_t *out, size_t step)
{
	size_t total = 0;

	for (;;) {
		const char *p;
		size_t n = bc_awschunked_output(d, &p);

		if (n == 0)
			return total;
		if (n > step)
			n = step;
		cr_assert_eq(bc_buf_append(out, p, n), 0);
		bc_awschunked_consume(d, n);
		total += n;
	}
}

/*
 * Feeds body in pieces of steps[] bytes (cycled), draining output as the
 * gateway would; returns the first error, else bc_awschunked_finish().
 */
static bc_s3err_t
run(bc_awschunked_t *d, const char *body, size_t len, const size_t *steps,
    size_t nsteps, bc_buf_t *out)
{
	size_t off = 0, k = 0;
	bc_s3err_t err = BC_S3E_NONE;

	while (off < len) {
		size_t n = steps[k++ % nsteps];

		if (n > len - off)
			n = len - off;
		while (n > 0) {
			ssize_t r = bc_awschunked_feed(d, body + off, n, &err);

			if (r < 0)
				return err;
			off += (size_t)r;
			n -= (size_t)r;
			if (drain(d, out, 977) == 0)
				cr_assert_gt(r, 0, "no progress at %zu", off);
		}
	}
	drain(d, out, (size_t)-1);
	return bc_awschunked_finish(d);
}

static const size_t all_at_once[] = { (size_t)-1 };

LTest(awschunked, chunk_signatures)
{
	bc_sigv4_ctx_t c = client_ctx();
	char *a = malloc(65536), sig[65];

	memset(a, 'a', 65536);
	bc_sigv4_chunk_signature(&c, SEED, a, 65536, sig);
	cr_expect_str_eq(sig, SIG1);
	bc_sigv4_chunk_signature(&c, SIG1, a, 1024, sig);
	cr_expect_str_eq(sig, SIG2);
	bc_sigv4_chunk_signature(&c, SIG2, "", 0, sig);
	cr_expect_str_eq(sig, SIG3);
	free(a);
}

LTest(awschunked, decode_example)
{
	bc_sigv4_ctx_t c = client_ctx();
	bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 65536);
	bc_buf_t out = BC_BUF_INIT;
	size_t len;
	char *body = example_body(&len);

	cr_assert_eq(len, BODY_LEN);
	cr_assert_eq(run(d, body, len, all_at_once, 1, &out), BC_S3E_NONE);
	cr_expect(bc_awschunked_done(d));
	cr_expect_eq(bc_awschunked_decoded_len(d), PAYLOAD);
	cr_assert_eq(out.len, PAYLOAD);
	cr_expect_eq(strspn(out.data, "a"), PAYLOAD);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	free(body);
}

/* The whole path: verify the seed request, then its body. */
LTest(awschunked, from_verified_request)
{
	static const struct {
		const char *name, *value;
	} h[] = {
		{ "Host", "s3.amazonaws.com" },
		{ "x-amz-date", "20130524T000000Z" },
		{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
		{ "Authorization", "AWS4-HMAC-SHA256 Credential="
		    "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		    "SignedHeaders=content-encoding;content-length;host;"
		    "x-amz-content-sha256;x-amz-date;"
		    "x-amz-decoded-content-length;x-amz-storage-class,"
		    "Signature=" SEED },
		{ "x-amz-content-sha256", BC_SIGV4_STREAMING },
		{ "Content-Encoding", "aws-chunked" },
		{ "x-amz-decoded-content-length", "66560" },
		{ "Content-Length", "66824" },
	};
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_awschunked_t *d;
	bc_buf_t out = BC_BUF_INIT;
	size_t len;
	char *body = example_body(&len);

	bc_s3_req_init(&r);
	for (size_t i = 0; i < sizeof(h) / sizeof(*h); i++)
		bc_kv_add(&r.headers, h[i].name, h[i].value);
	cr_assert_eq(bc_s3_req_parse(&r, "PUT",
	    "/examplebucket/chunkObject.txt", NULL), BC_S3E_NONE);
	cr_assert_eq(bc_s3_auth_verify(&r, T_S3DOC, secret_of, NULL, false,
	    &a), BC_S3E_NONE);
	cr_assert(a.streaming);
	d = bc_awschunked_new(&a.v4, NULL, 1 << 20);
	cr_assert_not_null(d);
	cr_expect_eq(run(d, body, len, all_at_once, 1, &out), BC_S3E_NONE);
	cr_expect_eq(out.len, PAYLOAD);
	bc_awschunked_free(d);
	bc_s3_req_fini(&r);
	bc_buf_fini(&out);
	free(body);
}

/* The upstream's context: what bc_sigv4_sign returns for the forwarded
 * request, under another key, region and date. */
static bc_sigv4_ctx_t
upstream_ctx(void)
{
	const bc_sigv4_creds_t creds = { "UPSTREAMKEY", "upstream/secret",
	    NULL, "eu-west-1", "s3" };
	bc_kvlist_t h = BC_KVLIST_INIT;
	bc_sigv4_ctx_t u;

	bc_kv_add(&h, "Host", "bucket.s3.eu-west-1.amazonaws.com");
	bc_kv_add(&h, "Content-Encoding", "aws-chunked");
	bc_kv_add(&h, "x-amz-decoded-content-length", "66560");
	cr_assert_eq(bc_sigv4_sign(&h, "PUT", "/chunkObject.txt", NULL,
	    BC_SIGV4_STREAMING, &creds, 1795243152, &u), 0);
	bc_kv_fini(&h);
	return u;
}

LTest(awschunked, resign_is_verifiable_upstream)
{
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	bc_awschunked_t *d = bc_awschunked_new(&c, &u, 65536), *v;
	bc_buf_t out = BC_BUF_INIT, plain = BC_BUF_INIT;
	size_t len;
	char *body = example_body(&len);
	char *a = malloc(65536), sig[65];

	cr_assert_eq(run(d, body, len, all_at_once, 1, &out), BC_S3E_NONE);
	cr_expect(bc_awschunked_done(d));
	/* same framing, same length, new signatures */
	cr_assert_eq(out.len, len);
	cr_expect_eq(memcmp(out.data, "10000;chunk-signature=", 22), 0);
	cr_expect_neq(memcmp(out.data + 22, SIG1, 64), 0);
	memset(a, 'a', 65536);
	bc_sigv4_chunk_signature(&u, u.signature, a, 65536, sig);
	cr_expect_eq(memcmp(out.data + 22, sig, 64), 0);
	/* a verifier holding the upstream's key accepts it */
	v = bc_awschunked_new(&u, NULL, 65536);
	cr_expect_eq(run(v, out.data, out.len, all_at_once, 1, &plain),
	    BC_S3E_NONE);
	cr_expect_eq(plain.len, PAYLOAD);
	cr_expect_eq(strspn(plain.data, "a"), PAYLOAD);
	/* ... and one holding the client's does not */
	bc_awschunked_free(v);
	bc_buf_reset(&plain);
	v = bc_awschunked_new(&c, NULL, 65536);
	cr_expect_eq(run(v, out.data, out.len, all_at_once, 1, &plain),
	    BC_S3E_SignatureDoesNotMatch);
	cr_expect_eq(plain.len, 0);
	bc_awschunked_free(v);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	bc_buf_fini(&plain);
	free(body);
	free(a);
}

/* Byte by byte and odd splits give the same output as one piece. */
LTest(awschunked, splits)
{
	static const size_t one[] = { 1 };
	static const size_t odd[] = { 7, 13, 1, 4093, 2, 65537, 3, 88 };
	static const size_t edges[] = { 87, 1, 65536, 1, 1, 86, 1025, 2 };
	static const size_t *const plans[] = { one, odd, edges };
	static const size_t nplan[] = { 1, 8, 8 };
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	bc_buf_t ref = BC_BUF_INIT;
	size_t len;
	char *body = example_body(&len);
	bc_awschunked_t *d = bc_awschunked_new(&c, &u, 65536);

	cr_assert_eq(run(d, body, len, all_at_once, 1, &ref), BC_S3E_NONE);
	bc_awschunked_free(d);
	for (size_t i = 0; i < 3; i++) {
		bc_buf_t out = BC_BUF_INIT;

		d = bc_awschunked_new(&c, &u, 65536);
		cr_expect_eq(run(d, body, len, plans[i], nplan[i], &out),
		    BC_S3E_NONE, "plan %zu", i);
		cr_expect_eq(out.len, ref.len, "plan %zu", i);
		cr_expect_eq(memcmp(out.data, ref.data, ref.len), 0,
		    "plan %zu", i);
		cr_expect_eq(bc_awschunked_decoded_len(d), PAYLOAD);
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
	bc_buf_fini(&ref);
	free(body);
}

/* One changed byte anywhere fails, and nothing of the chunk it is in
 * (or any later one) is ever emitted. */
LTest(awschunked, tamper)
{
	static const struct {
		size_t     at;        /* byte to change */
		size_t     emitted;   /* output bytes before the error */
		bc_s3err_t e;         /* BC_S3E__COUNT: any error */
	} t[] = {
		{ 0, 0, BC_S3E__COUNT },     /* size "00000": framing breaks */
		{ 4, 0, BC_S3E__COUNT },     /* size "10001" */
		{ 24, 0, BC_S3E_SignatureDoesNotMatch },     /* signature */
		{ 30, 0, BC_S3E_InvalidArgument },   /* 'a' -> '`': not hex */
		{ 88, 0, BC_S3E_SignatureDoesNotMatch },     /* first byte */
		{ 88 + 65535, 0, BC_S3E_SignatureDoesNotMatch },
		{ 88 + 65536, 0, BC_S3E_InvalidArgument },   /* CR */
		{ 88 + 65538 + 86 + 1000, 88 + 65538,
		    BC_S3E_SignatureDoesNotMatch },
		{ BODY_LEN - 5, 88 + 65538 + 86 + 1026,
		    BC_S3E_SignatureDoesNotMatch },
		{ BODY_LEN - 1, 88 + 65538 + 86 + 1026,
		    BC_S3E_InvalidArgument },
	};
	static const size_t one[] = { 1 };
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	size_t len;
	char *body = example_body(&len);

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		for (int byte = 0; byte < 2; byte++) {
			bc_awschunked_t *d = bc_awschunked_new(&c, &u, 1 << 20);
			bc_buf_t out = BC_BUF_INIT;
			bc_s3err_t e, again;
			char x;

			body[t[i].at] ^= 0x01;
			e = byte ? run(d, body, len, one, 1, &out) :
			    run(d, body, len, all_at_once, 1, &out);
			body[t[i].at] ^= 0x01;
			if (t[i].e == BC_S3E__COUNT)
				cr_expect_neq(e, BC_S3E_NONE, "case %zu", i);
			else
				cr_expect_eq(e, t[i].e, "case %zu: %s", i,
				    bc_s3err_code(e));
			cr_expect_eq(out.len, t[i].emitted, "case %zu", i);
			cr_expect_not(bc_awschunked_done(d));
			/* sticky */
			cr_expect_eq(bc_awschunked_feed(d, &x, 1, &again), -1);
			cr_expect_eq(again, e);
			cr_expect_eq(bc_awschunked_finish(d), e);
			bc_awschunked_free(d);
			bc_buf_fini(&out);
		}
	}
	free(body);
}

/* Chunks replayed or reordered break the chain. */
LTest(awschunked, reorder)
{
	bc_sigv4_ctx_t c = client_ctx();
	bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 1 << 20);
	bc_buf_t out = BC_BUF_INIT;
	const char *body = "0;chunk-signature=" SIG3 "\r\n\r\n";

	cr_expect_eq(run(d, body, strlen(body), all_at_once, 1, &out),
	    BC_S3E_SignatureDoesNotMatch);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
}

LTest(awschunked, limits_and_framing)
{
	static const struct {
		const char *body;
		size_t      max;
		bc_s3err_t  e;
	} t[] = {
		/* the first chunk (64 KiB) is over a 64 KiB - 1 limit */
		{ "10000;chunk-signature=" SIG1 "\r\n", 65535,
		    BC_S3E_EntityTooLarge },
		{ "ffffffffffffffff;chunk-signature=" SIG1 "\r\n", (size_t)-1,
		    BC_S3E_EntityTooLarge },
		{ "10000000000000000;chunk-signature=" SIG1 "\r\n", (size_t)-1,
		    BC_S3E_InvalidArgument },
		{ "zz;chunk-signature=" SIG1 "\r\n", 65536,
		    BC_S3E_InvalidArgument },
		{ ";chunk-signature=" SIG1 "\r\n", 65536,
		    BC_S3E_InvalidArgument },
		{ "10000\r\n", 65536, BC_S3E_InvalidArgument },
		{ "10000;chunk-signature=" SIG1 "\n", 65536,
		    BC_S3E_InvalidArgument },
		{ "10000;chunk-signature=" SIG1 "x\r\n", 65536,
		    BC_S3E_InvalidArgument },
		{ "10000;chunk-signature=AD80C730A21E5B8D04586A2213DD63B9"
		    "A0E99E0E2307B0ADE35A65485A288648\r\n", 65536,
		    BC_S3E_InvalidArgument },
		{ "10000;chunk-signature=" SIG1 ";x=y\r\n", 65536,
		    BC_S3E_InvalidArgument },
		{ "10000;chunk-signaturf=" SIG1 "\r\n", 65536,
		    BC_S3E_InvalidArgument },
		/* a header line that never ends */
		{ "1000000000000000000000000000000000000000000000000000000000"
		  "00000000000000000000000000000000000000000000000000000000",
		    65536, BC_S3E_InvalidArgument },
		/* a trailer in the mode without one */
		{ "0;chunk-signature=" SIG1 "\r\nxx", 65536,
		    BC_S3E_MalformedTrailerError },
		/* truncated: not an error until the body ends */
		{ "10000;chunk-signature=" SIG1 "\r\naaaa", 65536,
		    BC_S3E_IncompleteBody },
		{ "10000;chunk-sig", 65536, BC_S3E_IncompleteBody },
		{ "", 65536, BC_S3E_IncompleteBody },
	};
	bc_sigv4_ctx_t c = client_ctx();

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_awschunked_t *d = bc_awschunked_new(&c, NULL, t[i].max);
		bc_buf_t out = BC_BUF_INIT;
		bc_s3err_t e;

		e = run(d, t[i].body, strlen(t[i].body), all_at_once, 1, &out);
		cr_expect_eq(e, t[i].e, "case %zu: %s", i, bc_s3err_code(e));
		cr_expect_eq(out.len, 0, "case %zu", i);
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
}

LTest(awschunked, truncated_and_trailing)
{
	bc_sigv4_ctx_t c = client_ctx();
	size_t len;
	char *body = example_body(&len);
	static const size_t cut[] = { 1, 2, 3, 50, 1026, 2000, 66000 };

	for (size_t i = 0; i < sizeof(cut) / sizeof(*cut); i++) {
		bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 65536);
		bc_buf_t out = BC_BUF_INIT;

		cr_expect_eq(run(d, body, len - cut[i], all_at_once, 1, &out),
		    BC_S3E_IncompleteBody, "cut %zu", cut[i]);
		cr_expect_not(bc_awschunked_done(d));
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
	for (size_t extra = 1; extra <= 3; extra++) {
		bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 65536);
		bc_buf_t out = BC_BUF_INIT, b = BC_BUF_INIT;

		bc_buf_append(&b, body, len);
		bc_buf_append(&b, "\r\n0;", extra);
		cr_expect_eq(run(d, b.data, b.len, all_at_once, 1, &out),
		    BC_S3E_InvalidArgument, "extra %zu", extra);
		bc_awschunked_free(d);
		bc_buf_fini(&out);
		bc_buf_fini(&b);
	}
	free(body);
}

/* Output must be taken before more input is accepted. */
LTest(awschunked, backpressure)
{
	bc_sigv4_ctx_t c = client_ctx();
	bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 65536);
	bc_s3err_t err = BC_S3E_NONE;
	size_t len;
	char *body = example_body(&len);
	const char *p;
	ssize_t n;

	cr_assert_eq(bc_awschunked_output(d, &p), 0);
	n = bc_awschunked_feed(d, body, len, &err);
	cr_assert_eq(n, 88 + 65538, "stops after the first chunk");
	cr_assert_eq(bc_awschunked_output(d, &p), 65536);
	cr_expect_eq(bc_awschunked_feed(d, body + n, len - (size_t)n, &err),
	    0);
	bc_awschunked_consume(d, 100000);   /* clamped */
	cr_assert_eq(bc_awschunked_output(d, &p), 0);
	cr_expect_gt(bc_awschunked_feed(d, body + n, len - (size_t)n, &err),
	    0);
	bc_awschunked_free(d);
	bc_awschunked_free(NULL);
	free(body);
}

static uint32_t
xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Random garbage and random mutations of a valid body, fed in random
 * pieces: only errors or IncompleteBody, never a crash, never output
 * for a chunk that did not verify (run under ASan/UBSan too). */
LTest(awschunked, fuzz)
{
	static const char alphabet[] = "0123456789abcdefABCDEF;=\r\nchunk-"
	    "signature=x ";
	bc_sigv4_ctx_t c = client_ctx();
	uint32_t seed = 0x2545f491;
	size_t len;
	char *body = example_body(&len);
	char *buf = malloc(len);

	for (int round = 0; round < 300; round++) {
		bc_awschunked_t *d = bc_awschunked_new(&c, NULL, 1 << 17);
		bc_buf_t out = BC_BUF_INIT;
		size_t steps[4], n;
		bc_s3err_t e;

		for (size_t k = 0; k < 4; k++)
			steps[k] = 1 + xorshift(&seed) % 5000;
		if (round % 2 == 0) {
			n = 1 + xorshift(&seed) % 300;
			for (size_t i = 0; i < n; i++)
				buf[i] = alphabet[xorshift(&seed) %
				    (sizeof(alphabet) - 1)];
		} else {
			n = len;
			memcpy(buf, body, len);
			for (int k = 0; k < 3; k++)
				buf[xorshift(&seed) % len] =
				    (char)xorshift(&seed);
		}
		e = run(d, buf, n, steps, 4, &out);
		if (e == BC_S3E_NONE) {
			/* a mutation may land on a byte that is re-set to
			 * itself; then the output is the real payload */
			cr_expect_eq(out.len, PAYLOAD);
			cr_expect_eq(strspn(out.data, "a"), PAYLOAD);
		}
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
	free(buf);
	free(body);
}

/* ---- the declared payload length (x-amz-decoded-content-length) ---------- */

LTest(awschunked, parse_decoded_len)
{
	static const struct {
		const char *v;
		bc_s3err_t  e;
		uint64_t    n;
	} t[] = {
		{ "0", BC_S3E_NONE, 0 },
		{ "66560", BC_S3E_NONE, 66560 },
		{ "007", BC_S3E_NONE, 7 },
		{ "18446744073709551615", BC_S3E_NONE, UINT64_MAX },
		{ NULL, BC_S3E_MissingContentLength, 0 },
		{ "", BC_S3E_InvalidArgument, 0 },
		{ "18446744073709551616", BC_S3E_InvalidArgument, 0 },
		{ "99999999999999999999", BC_S3E_InvalidArgument, 0 },
		{ "000000000000000000001", BC_S3E_InvalidArgument, 0 },
		{ "-1", BC_S3E_InvalidArgument, 0 },
		{ "+1", BC_S3E_InvalidArgument, 0 },
		{ " 1", BC_S3E_InvalidArgument, 0 },
		{ "1 ", BC_S3E_InvalidArgument, 0 },
		{ "0x10", BC_S3E_InvalidArgument, 0 },
		{ "12x", BC_S3E_InvalidArgument, 0 },
		{ "1,2", BC_S3E_InvalidArgument, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		uint64_t n = 12345;
		bc_s3err_t e = bc_awschunked_parse_decoded_len(t[i].v, &n);

		cr_expect_eq(e, t[i].e, "case %zu (%s): %s", i,
		    t[i].v != NULL ? t[i].v : "NULL", bc_s3err_code(e));
		cr_expect_eq(n, t[i].e == BC_S3E_NONE ? t[i].n : 12345,
		    "case %zu", i);
	}
}

static const size_t one_byte[] = { 1 };
static const size_t odd_split[] = { 7, 13, 1, 4093, 2, 65537, 3, 88 };
static const size_t edge_split[] = { 87, 1, 65536, 1, 1, 86, 1025, 2 };

/* The example body under a declared length, whole and in pieces, framed
 * (proxy) and not (decoded payload alone). */
LTest(awschunked, declared_length)
{
	static const struct {
		uint64_t   declared;
		bc_s3err_t e;
		size_t     framed;     /* output bytes before the end/error */
		size_t     plain;
	} t[] = {
		/* exact: the whole body */
		{ PAYLOAD, BC_S3E_NONE, BODY_LEN, PAYLOAD },
		/* one byte more: every data chunk, never the final one */
		{ PAYLOAD + 1, BC_S3E_IncompleteBody, BODY_LEN - 86, PAYLOAD },
		{ UINT64_MAX, BC_S3E_IncompleteBody, BODY_LEN - 86, PAYLOAD },
		/* one byte less: the second chunk would pass it */
		{ PAYLOAD - 1, BC_S3E_IncompleteBody, 88 + 65538, 65536 },
		{ 65536, BC_S3E_IncompleteBody, 88 + 65538, 65536 },
		/* the first chunk is already too long */
		{ 65535, BC_S3E_IncompleteBody, 0, 0 },
		{ 0, BC_S3E_IncompleteBody, 0, 0 },
	};
	static const size_t *const plans[] = { all_at_once, one_byte,
	    odd_split, edge_split };
	static const size_t nplan[] = { 1, 1, 8, 8 };
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	size_t len;
	char *body = example_body(&len);

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		for (size_t p = 0; p < 4; p++) {
			for (int framed = 0; framed < 2; framed++) {
				bc_awschunked_t *d = bc_awschunked_new(&c,
				    framed ? &u : NULL, 65536);
				bc_buf_t out = BC_BUF_INIT;
				bc_s3err_t e, again;
				char x = '0';

				bc_awschunked_set_decoded_len(d,
				    t[i].declared);
				e = run(d, body, len, plans[p], nplan[p], &out);
				cr_expect_eq(e, t[i].e, "case %zu plan %zu "
				    "framed %d: %s", i, p, framed,
				    bc_s3err_code(e));
				cr_expect_eq(out.len, framed ? t[i].framed :
				    t[i].plain, "case %zu plan %zu framed %d: "
				    "%zu bytes out", i, p, framed, out.len);
				cr_expect_eq(bc_awschunked_done(d),
				    t[i].e == BC_S3E_NONE, "case %zu", i);
				if (t[i].e != BC_S3E_NONE) {
					/* sticky, and nothing more comes out */
					cr_expect_eq(bc_awschunked_feed(d, &x,
					    1, &again), -1);
					cr_expect_eq(again, t[i].e);
					cr_expect_eq(drain(d, &out, 1000), 0);
				} else if (!framed) {
					cr_expect_eq(strspn(out.data, "a"),
					    PAYLOAD);
				}
				bc_awschunked_free(d);
				bc_buf_fini(&out);
			}
		}
	}
	free(body);
}

/* A chunk past the declared length fails on its header line, before any
 * of its data is read. */
LTest(awschunked, declared_length_fails_at_once)
{
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	bc_awschunked_t *d = bc_awschunked_new(&c, &u, 65536);
	bc_buf_t out = BC_BUF_INIT;
	bc_s3err_t e = BC_S3E_NONE;
	size_t len, line2 = 88 + 65538 + 86;   /* through chunk 2's line */
	char *body = example_body(&len);
	ssize_t n;

	bc_awschunked_set_decoded_len(d, PAYLOAD - 1);
	n = bc_awschunked_feed(d, body, line2 - 1, &e);
	cr_assert_eq(n, 88 + 65538);
	cr_assert_eq(drain(d, &out, (size_t)-1), 88 + 65538);
	n = bc_awschunked_feed(d, body + 88 + 65538, 85, &e);
	cr_assert_eq(n, 85, "chunk 2's line is not complete yet");
	n = bc_awschunked_feed(d, body + line2 - 1, 1, &e);
	cr_expect_eq(n, -1, "its last byte ends the line: refused");
	cr_expect_eq(e, BC_S3E_IncompleteBody);
	cr_expect_eq(drain(d, &out, (size_t)-1), 0);
	cr_expect_eq(bc_awschunked_decoded_len(d), 65536);
	cr_expect_eq(bc_awschunked_finish(d), BC_S3E_IncompleteBody);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	free(body);
}

/* An empty payload: the final chunk alone, declared 0 (or not). */
LTest(awschunked, declared_length_empty_payload)
{
	bc_sigv4_ctx_t c = client_ctx(), u = upstream_ctx();
	char sig[65], body[128];
	static const struct {
		bool       declare;
		uint64_t   declared;
		bc_s3err_t e;
	} t[] = {
		{ true, 0, BC_S3E_NONE },
		{ false, 0, BC_S3E_NONE },
		{ true, 1, BC_S3E_IncompleteBody },
	};

	bc_sigv4_chunk_signature(&c, SEED, "", 0, sig);
	snprintf(body, sizeof(body), "0;chunk-signature=%s\r\n\r\n", sig);
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_awschunked_t *d = bc_awschunked_new(&c, &u, 65536);
		bc_buf_t out = BC_BUF_INIT;
		bc_s3err_t e;

		if (t[i].declare)
			bc_awschunked_set_decoded_len(d, t[i].declared);
		e = run(d, body, strlen(body), all_at_once, 1, &out);
		cr_expect_eq(e, t[i].e, "case %zu: %s", i, bc_s3err_code(e));
		cr_expect_eq(out.len, t[i].e == BC_S3E_NONE ? 86 : 0,
		    "case %zu", i);
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
}

/* ---- the trailer modes ---------------------------------------------------- */

/* AWS's "PUT Object with trailing headers" example: the same 66560 'a' in
 * the same chunks, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, seed
 * 106e2a8a..., CRC32C trailer, its signature d81f82fc... */
#define TSEED      "106e2a8a18243abcf37539882f36619c" \
	"00e2dfc72633413f02d3b74544bfeb8e"
#define TSIG1      "b474d8862b1487a5145d686f57f013e5" \
	"4db672cee1c953b3010fb58501ef5aa2"
#define TSIG2      "1c1344b170168f8e65b41376b44b20fe" \
	"354e373826ccbbe2c1d40a8cae51e5c7"
#define TSIG3      "2ca2aba2005185cf7159c6277faf8379" \
	"5951dd77a3a99e6e65d5c9f85863f992"
#define TTRAILER   "x-amz-checksum-crc32c:sOO8/Q=="
#define TTSIG      "d81f82fc3505edab99d459891051a732" \
	"e8730629a2e4a59689829ca17fe2e435"
#define TBODY_LEN  66946   /* its Content-Length */

static bc_sigv4_ctx_t
trailer_ctx(void)
{
	bc_sigv4_ctx_t c = client_ctx();

	strcpy(c.signature, TSEED);
	return c;
}

static char *
trailer_example_body(size_t *len)
{
	bc_buf_t b = BC_BUF_INIT;
	char *a = malloc(65536);

	cr_assert_not_null(a);
	memset(a, 'a', 65536);
	bc_buf_puts(&b, "10000;chunk-signature=" TSIG1 "\r\n");
	bc_buf_append(&b, a, 65536);
	bc_buf_puts(&b, "\r\n400;chunk-signature=" TSIG2 "\r\n");
	bc_buf_append(&b, a, 1024);
	bc_buf_puts(&b, "\r\n0;chunk-signature=" TSIG3 "\r\n"
	    TTRAILER "\r\nx-amz-trailer-signature:" TTSIG "\r\n\r\n");
	free(a);
	*len = b.len;
	return bc_buf_steal(&b);
}

static bc_awschunked_t *
new_mode(bc_awschunked_mode_t mode, const bc_sigv4_ctx_t *c,
    const bc_sigv4_ctx_t *u, bool framed, bc_checksum_alg_t alg)
{
	bc_awschunked_opts_t o;
	bc_awschunked_t *d;

	memset(&o, 0, sizeof(o));
	o.mode = mode;
	o.client = c;
	o.framed = framed;
	o.upstream = u;
	o.max_chunk = 1 << 20;
	o.trailer = alg;
	d = bc_awschunked_new_opts(&o);
	cr_assert_not_null(d);
	return d;
}

/* The trailer signature computed here, apart from the decoder's code:
 * HMAC(key, "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope "\n" prev "\n"
 * hex(sha256(lines))). */
static void
trailer_sig(const bc_sigv4_ctx_t *c, const char *prev, const char *lines,
    char sig[65])
{
	char hash[65], sts[512];
	uint8_t mac[32];

	bc_sha256_hex(lines, strlen(lines), hash);
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s",
	    c->amz_date, c->scope, prev, hash);
	bc_hmac_sha256(c->key, 32, sts, strlen(sts), mac);
	bc_hex(mac, 32, sig);
}

LTest(awschunked_trailer, aws_example_signatures)
{
	bc_sigv4_ctx_t c = trailer_ctx();
	char *a = malloc(65536), sig[65];

	memset(a, 'a', 65536);
	bc_sigv4_chunk_signature(&c, TSEED, a, 65536, sig);
	cr_expect_str_eq(sig, TSIG1);
	bc_sigv4_chunk_signature(&c, TSIG1, a, 1024, sig);
	cr_expect_str_eq(sig, TSIG2);
	bc_sigv4_chunk_signature(&c, TSIG2, "", 0, sig);
	cr_expect_str_eq(sig, TSIG3);
	trailer_sig(&c, TSIG3, TTRAILER "\n", sig);
	cr_expect_str_eq(sig, TTSIG);
	free(a);
}

/* The whole path on AWS's example: its seed request verifies, then its
 * body decodes, the CRC32C checked. */
LTest(awschunked_trailer, aws_example_from_verified_request)
{
	static const struct {
		const char *name, *value;
	} h[] = {
		{ "Host", "s3.amazonaws.com" },
		{ "x-amz-date", "20130524T000000Z" },
		{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
		{ "Authorization", "AWS4-HMAC-SHA256 Credential="
		    "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		    "SignedHeaders=content-encoding;host;"
		    "x-amz-content-sha256;x-amz-date;"
		    "x-amz-decoded-content-length;x-amz-storage-class;"
		    "x-amz-trailer,Signature=" TSEED },
		{ "x-amz-content-sha256", BC_SIGV4_STREAMING_TRAILER },
		{ "Content-Encoding", "aws-chunked" },
		{ "x-amz-decoded-content-length", "66560" },
		{ "x-amz-trailer", "x-amz-checksum-crc32c" },
		{ "Content-Length", "66946" },
	};
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_awschunked_t *d;
	bc_buf_t out = BC_BUF_INIT;
	size_t len;
	char *body = trailer_example_body(&len);

	cr_assert_eq(len, TBODY_LEN);
	bc_s3_req_init(&r);
	for (size_t i = 0; i < sizeof(h) / sizeof(*h); i++)
		bc_kv_add(&r.headers, h[i].name, h[i].value);
	cr_assert_eq(bc_s3_req_parse(&r, "PUT",
	    "/examplebucket/chunkObject.txt", NULL), BC_S3E_NONE);
	cr_assert_eq(bc_s3_auth_verify(&r, T_S3DOC, secret_of, NULL, false,
	    &a), BC_S3E_NONE);
	cr_assert(a.streaming);
	cr_assert_eq(a.stream_mode, BC_AWSCHUNKED_SIGNED_TRAILER);
	cr_assert_str_eq(a.v4.signature, TSEED);
	cr_assert_eq(bc_awschunked_from_headers(&r.headers, a.stream_mode,
	    &a.v4, false, NULL, 1 << 20, &d), BC_S3E_NONE);
	cr_expect_eq(run(d, body, len, all_at_once, 1, &out), BC_S3E_NONE);
	cr_expect(bc_awschunked_done(d));
	cr_expect_eq(out.len, PAYLOAD);
	cr_expect_eq(strspn(out.data, "a"), PAYLOAD);
	cr_expect_str_eq(bc_awschunked_checksum(d), "sOO8/Q==");
	bc_awschunked_free(d);
	bc_s3_req_fini(&r);
	bc_buf_fini(&out);
	free(body);
}

/* Re-signed for the upstream: same length, same trailer line, new chunk
 * and trailer signatures that verify under the upstream's chain (and not
 * the client's); every split gives the same bytes. */
LTest(awschunked_trailer, signed_resign)
{
	static const size_t *const plans[] = { all_at_once, one_byte,
	    odd_split, edge_split };
	static const size_t nplan[] = { 1, 1, 8, 8 };
	bc_sigv4_ctx_t c = trailer_ctx(), u = upstream_ctx();
	bc_buf_t ref = BC_BUF_INIT, plain = BC_BUF_INIT;
	size_t len;
	char *body = trailer_example_body(&len);
	bc_awschunked_t *d, *v;
	char sig[65], usig[65], want[128];
	const char *tail;

	d = new_mode(BC_AWSCHUNKED_SIGNED_TRAILER, &c, &u, true,
	    BC_CKSUM_CRC32C);
	cr_assert_eq(run(d, body, len, all_at_once, 1, &ref), BC_S3E_NONE);
	cr_expect(bc_awschunked_done(d));
	bc_awschunked_free(d);
	cr_assert_eq(ref.len, len);
	/* the end: final chunk and trailer signature chained upstream */
	bc_sigv4_chunk_signature(&u, u.signature, body + 88, 65536, sig);
	cr_expect_eq(memcmp(ref.data + 22, sig, 64), 0);
	bc_sigv4_chunk_signature(&u, sig, body + 88, 1024, sig);
	bc_sigv4_chunk_signature(&u, sig, "", 0, sig);
	trailer_sig(&u, sig, TTRAILER "\n", usig);
	snprintf(want, sizeof(want), "0;chunk-signature=%s\r\n", sig);
	tail = ref.data + 88 + 65538 + 86 + 1026;
	cr_expect_eq(memcmp(tail, want, strlen(want)), 0);
	tail += strlen(want);
	snprintf(want, sizeof(want), TTRAILER "\r\nx-amz-trailer-signature:"
	    "%s\r\n\r\n", usig);
	cr_expect_eq(strlen(tail), strlen(want));
	cr_expect_eq(memcmp(tail, want, strlen(want)), 0);
	/* a verifier with the upstream's key takes it, the client's not */
	v = new_mode(BC_AWSCHUNKED_SIGNED_TRAILER, &u, NULL, false,
	    BC_CKSUM_CRC32C);
	cr_expect_eq(run(v, ref.data, ref.len, all_at_once, 1, &plain),
	    BC_S3E_NONE);
	cr_expect_eq(plain.len, PAYLOAD);
	bc_awschunked_free(v);
	v = new_mode(BC_AWSCHUNKED_SIGNED_TRAILER, &c, NULL, false,
	    BC_CKSUM_CRC32C);
	cr_expect_eq(run(v, ref.data, ref.len, all_at_once, 1, &plain),
	    BC_S3E_SignatureDoesNotMatch);
	bc_awschunked_free(v);
	for (size_t p = 0; p < 4; p++) {
		bc_buf_t out = BC_BUF_INIT;

		d = new_mode(BC_AWSCHUNKED_SIGNED_TRAILER, &c, &u, true,
		    BC_CKSUM_CRC32C);
		bc_awschunked_set_decoded_len(d, PAYLOAD);
		cr_expect_eq(run(d, body, len, plans[p], nplan[p], &out),
		    BC_S3E_NONE, "plan %zu", p);
		cr_expect_eq(out.len, ref.len, "plan %zu", p);
		cr_expect_eq(memcmp(out.data, ref.data, ref.len), 0,
		    "plan %zu", p);
		bc_awschunked_free(d);
		bc_buf_fini(&out);
	}
	bc_buf_fini(&ref);
	bc_buf_fini(&plain);
	free(body);
}

/* A signed-trailer body of data (one chunk, or none when n is 0) with
 * trailer lines (each "name:value\r\n"); the trailer signature is over
 * sig_lines ("name:value\n" each), or given. */
static char *
signed_trailer_body(const bc_sigv4_ctx_t *c, const char *data, size_t n,
    const char *lines, const char *sig_lines, const char *tsig,
    size_t *len)
{
	bc_buf_t b = BC_BUF_INIT;
	char s1[65], s0[65], st[65];
	const char *prev = c->signature;

	if (n > 0) {
		bc_sigv4_chunk_signature(c, prev, data, n, s1);
		bc_buf_printf(&b, "%zx;chunk-signature=%s\r\n", n, s1);
		bc_buf_append(&b, data, n);
		bc_buf_puts(&b, "\r\n");
		prev = s1;
	}
	bc_sigv4_chunk_signature(c, prev, "", 0, s0);
	bc_buf_printf(&b, "0;chunk-signature=%s\r\n%s", s0, lines);
	if (sig_lines != NULL) {
		trailer_sig(c, s0, sig_lines, st);
		tsig = st;
	}
	if (tsig != NULL)
		bc_buf_printf(&b, "x-amz-trailer-signature:%s\r\n", tsig);
	bc_buf_puts(&b, "\r\n");
	*len = b.len;
	return bc_buf_steal(&b);
}

LTest(awschunked_trailer, signed_errors)
{
	static const struct {
		const char *lines, *sig_lines, *tsig;
		bc_s3err_t  e;
	} t[] = {
		{ "x-amz-checksum-crc32:i9aeUg==\r\n",
		    "x-amz-checksum-crc32:i9aeUg==\n", NULL, BC_S3E_NONE },
		/* names in any case; the signature over the lower-case */
		{ "X-Amz-Checksum-CRC32:i9aeUg==\r\n",
		    "x-amz-checksum-crc32:i9aeUg==\n", NULL, BC_S3E_NONE },
		/* the checksum wrong, its line signed */
		{ "x-amz-checksum-crc32:AAAAAA==\r\n",
		    "x-amz-checksum-crc32:AAAAAA==\n", NULL, BC_S3E_BadDigest },
		/* the signature over other bytes */
		{ "x-amz-checksum-crc32:i9aeUg==\r\n",
		    "x-amz-checksum-crc32:i9aeUg==", NULL,
		    BC_S3E_SignatureDoesNotMatch },
		{ "x-amz-checksum-crc32:i9aeUg==\r\n",
		    "x-amz-checksum-crc32:i9aeUg==\r\n", NULL,
		    BC_S3E_SignatureDoesNotMatch },
		{ "x-amz-checksum-crc32:i9aeUg==\r\n", NULL,
		    "0000000000000000000000000000000000000000000000000000000000"
		    "000000", BC_S3E_SignatureDoesNotMatch },
		/* no signature, or a malformed one */
		{ "x-amz-checksum-crc32:i9aeUg==\r\n", NULL, NULL,
		    BC_S3E_SignatureDoesNotMatch },
		{ "x-amz-checksum-crc32:i9aeUg==\r\n", NULL, "abc",
		    BC_S3E_SignatureDoesNotMatch },
		/* another checksum than announced, or none */
		{ "x-amz-checksum-crc32c:crUfeA==\r\n",
		    "x-amz-checksum-crc32c:crUfeA==\n", NULL,
		    BC_S3E_MalformedTrailerError },
		{ "", "", NULL, BC_S3E_MalformedTrailerError },
		/* twice; another header too */
		{ "x-amz-checksum-crc32:i9aeUg==\r\nx-amz-checksum-crc32:"
		    "i9aeUg==\r\n", "x-amz-checksum-crc32:i9aeUg==\n"
		    "x-amz-checksum-crc32:i9aeUg==\n", NULL,
		    BC_S3E_MalformedTrailerError },
		{ "x-amz-checksum-crc32:i9aeUg==\r\nx-amz-meta-a:b\r\n",
		    "x-amz-checksum-crc32:i9aeUg==\nx-amz-meta-a:b\n", NULL,
		    BC_S3E_MalformedTrailerError },
		/* not "name:value" */
		{ "x-amz-checksum-crc32: i9aeUg==\r\n",
		    "x-amz-checksum-crc32: i9aeUg==\n", NULL,
		    BC_S3E_MalformedTrailerError },
		{ "x-amz-checksum-crc32\r\n", "x-amz-checksum-crc32\n", NULL,
		    BC_S3E_MalformedTrailerError },
		{ "x-amz-checksum-crc32:i9aeUg==\n",
		    "x-amz-checksum-crc32:i9aeUg==\n", NULL,
		    BC_S3E_MalformedTrailerError },
		/* not a CRC32's form */
		{ "x-amz-checksum-crc32:i9aeUg=\r\n",
		    "x-amz-checksum-crc32:i9aeUg=\n", NULL,
		    BC_S3E_InvalidRequest },
		{ "x-amz-checksum-crc32:OOJZ0D8xKts=\r\n",
		    "x-amz-checksum-crc32:OOJZ0D8xKts=\n", NULL,
		    BC_S3E_InvalidRequest },
	};
	bc_sigv4_ctx_t c = trailer_ctx(), u = upstream_ctx();

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		for (int framed = 0; framed < 2; framed++) {
			size_t len;
			char *body = signed_trailer_body(&c, "Hello world", 11,
			    t[i].lines, t[i].sig_lines, t[i].tsig, &len);
			bc_awschunked_t *d = new_mode(
			    BC_AWSCHUNKED_SIGNED_TRAILER, &c, &u, framed,
			    BC_CKSUM_CRC32);
			bc_buf_t out = BC_BUF_INIT;
			bc_s3err_t e;

			bc_awschunked_set_decoded_len(d, 11);
			e = run(d, body, len, one_byte, 1, &out);
			cr_expect_eq(e, t[i].e, "case %zu framed %d: %s", i,
			    framed, bc_s3err_code(e));
			/* the data chunk went; its end only when all held */
			cr_expect_eq(out.len, t[i].e != BC_S3E_NONE ?
			    (framed ? 84 + 13 : 11) : framed ? len : 11,
			    "case %zu framed %d: %zu", i, framed, out.len);
			cr_expect_eq(bc_awschunked_checksum(d) != NULL,
			    t[i].e == BC_S3E_NONE);
			bc_awschunked_free(d);
			bc_buf_fini(&out);
			free(body);
		}
	}
}

/* Without x-amz-trailer a trailer mode takes a body whose trailer holds
 * no checksum (the signed one still signed), and refuses one that does. */
LTest(awschunked_trailer, no_checksum_announced)
{
	static const char plain[] = "b\r\nHello world\r\n0\r\n\r\n";
	static const char with[] = "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-crc32:i9aeUg==\r\n\r\n";
	bc_sigv4_ctx_t c = trailer_ctx(), u = upstream_ctx();

	for (int framed = 0; framed < 2; framed++) {
		struct {
			bc_awschunked_mode_t mode;
			char *body;
			size_t len;
			bc_s3err_t e;
		} t[4];
		t[0].mode = t[1].mode = BC_AWSCHUNKED_UNSIGNED_TRAILER;
		t[0].body = strdup(plain);
		t[0].len = strlen(plain);
		t[0].e = BC_S3E_NONE;
		t[1].body = strdup(with);
		t[1].len = strlen(with);
		t[1].e = BC_S3E_MalformedTrailerError;
		t[2].mode = t[3].mode = BC_AWSCHUNKED_SIGNED_TRAILER;
		t[2].body = signed_trailer_body(&c, "Hello world", 11, "", "",
		    NULL, &t[2].len);
		t[2].e = BC_S3E_NONE;
		t[3].body = signed_trailer_body(&c, "Hello world", 11,
		    "x-amz-checksum-crc32:i9aeUg==\r\n",
		    "x-amz-checksum-crc32:i9aeUg==\n", NULL, &t[3].len);
		t[3].e = BC_S3E_MalformedTrailerError;
		for (size_t i = 0; i < 4; i++) {
			bc_awschunked_t *d = new_mode(t[i].mode, &c, &u,
			    framed, BC_CKSUM_NONE);
			bc_buf_t out = BC_BUF_INIT;
			bc_s3err_t e;

			cr_assert_not_null(d);
			bc_awschunked_set_decoded_len(d, 11);
			e = run(d, t[i].body, t[i].len, one_byte, 1, &out);
			cr_expect_eq(e, t[i].e, "case %zu framed %d: %s", i,
			    framed, bc_s3err_code(e));
			if (e == BC_S3E_NONE)
				cr_expect_eq(out.len, framed ? t[i].len : 11,
				    "case %zu framed %d: %zu", i, framed,
				    out.len);
			cr_expect_null(bc_awschunked_checksum(d));
			bc_awschunked_free(d);
			bc_buf_fini(&out);
			free(t[i].body);
		}
	}
}

/* The final chunk's signature is checked when its line is read. */
LTest(awschunked_trailer, signed_final_chunk)
{
	bc_sigv4_ctx_t c = trailer_ctx();
	size_t len;
	char *body = trailer_example_body(&len);
	bc_awschunked_t *d;
	bc_buf_t out = BC_BUF_INIT;
	size_t at = 88 + 65538 + 86 + 1026 + 18;   /* its signature: 2c.. */

	body[at] ^= 1;
	d = new_mode(BC_AWSCHUNKED_SIGNED_TRAILER, &c, NULL, false,
	    BC_CKSUM_CRC32C);
	cr_expect_eq(run(d, body, len, all_at_once, 1, &out),
	    BC_S3E_SignatureDoesNotMatch);
	cr_expect_eq(out.len, PAYLOAD);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	/* and the legacy mode does not take a trailer body */
	body[at] ^= 1;
	d = bc_awschunked_new(&c, NULL, 1 << 20);
	cr_expect_eq(run(d, body, len, all_at_once, 1, &out),
	    BC_S3E_MalformedTrailerError);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	free(body);
}

/* What @aws-sdk/client-s3 3.1172 (npm's newest, 2026) sent for a streamed
 * PutObject of "Hello world" (and of "Hello ", "world", "!" as three
 * stream pieces, and of an empty stream), captured on the wire:
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER in HTTP chunked transfer coding. */
static const struct {
	bc_checksum_alg_t alg;
	const char       *body;
	const char       *payload;
	const char       *value;
} js_bodies[] = {
	{ BC_CKSUM_CRC32, "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-crc32:i9aeUg==\r\n\r\n", "Hello world",
	    "i9aeUg==" },
	{ BC_CKSUM_CRC32C, "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-crc32c:crUfeA==\r\n\r\n", "Hello world",
	    "crUfeA==" },
	{ BC_CKSUM_CRC64NVME, "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-crc64nvme:OOJZ0D8xKts=\r\n\r\n", "Hello world",
	    "OOJZ0D8xKts=" },
	{ BC_CKSUM_SHA1, "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-sha1:e1AsOh9IyGCa4hLN+2Od7jlnP14=\r\n\r\n",
	    "Hello world", "e1AsOh9IyGCa4hLN+2Od7jlnP14=" },
	{ BC_CKSUM_SHA256, "b\r\nHello world\r\n0\r\n"
	    "x-amz-checksum-sha256:ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw="
	    "\r\n\r\n", "Hello world",
	    "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw=" },
	{ BC_CKSUM_CRC32, "6\r\nHello \r\n5\r\nworld\r\n1\r\n!\r\n0\r\n"
	    "x-amz-checksum-crc32:G4UZlQ==\r\n\r\n", "Hello world!",
	    "G4UZlQ==" },
	{ BC_CKSUM_CRC32, "0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", "",
	    "AAAAAA==" },
};

/* Decoded and framed (byte-identical), whole and byte by byte. */
LTest(awschunked_trailer, unsigned_js_sdk_bodies)
{
	static const size_t *const plans[] = { all_at_once, one_byte,
	    odd_split };
	static const size_t nplan[] = { 1, 1, 8 };

	for (size_t i = 0; i < sizeof(js_bodies) / sizeof(*js_bodies); i++) {
		for (size_t p = 0; p < 3; p++) {
			for (int framed = 0; framed < 2; framed++) {
				const char *body = js_bodies[i].body;
				const char *want = framed ? body :
				    js_bodies[i].payload;
				bc_awschunked_t *d = new_mode(
				    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, NULL,
				    framed, js_bodies[i].alg);
				bc_buf_t out = BC_BUF_INIT;

				bc_awschunked_set_decoded_len(d,
				    strlen(js_bodies[i].payload));
				cr_expect_eq(run(d, body, strlen(body),
				    plans[p], nplan[p], &out), BC_S3E_NONE,
				    "body %zu plan %zu", i, p);
				cr_expect(bc_awschunked_done(d));
				cr_expect_eq(out.len, strlen(want));
				cr_expect_eq(memcmp(bc_buf_str(&out), want,
				    strlen(want)), 0, "body %zu", i);
				cr_expect_str_eq(bc_awschunked_checksum(d),
				    js_bodies[i].value);
				cr_expect_eq(bc_awschunked_decoded_len(d),
				    strlen(js_bodies[i].payload));
				bc_awschunked_free(d);
				bc_buf_fini(&out);
			}
		}
	}
}

/* The whole path on the SDK's request: its signature (headers only, the
 * body unsigned) verifies, the mode is known, the body decodes. */
LTest(awschunked_trailer, js_sdk_request_verifies)
{
	static const struct {
		const char *name, *value;
	} h[] = {
		{ "x-amz-sdk-checksum-algorithm", "CRC32" },
		{ "content-type", "application/octet-stream" },
		{ "content-encoding", "aws-chunked" },
		{ "transfer-encoding", "chunked" },
		{ "x-amz-decoded-content-length", "12" },
		{ "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER" },
		{ "x-amz-trailer", "x-amz-checksum-crc32" },
		{ "x-amz-user-agent", "aws-sdk-js/3.1172.0" },
		{ "user-agent", "aws-sdk-js/3.1172.0 ua/2.1 "
		    "os/linux#6.18.44-fc-v782 lang/js md/nodejs#20.20.2 "
		    "api/s3#3.1172.0 m/N,Z,b,U,E,e" },
		{ "host", "127.0.0.1:18777" },
		{ "amz-sdk-invocation-id",
		    "e3a6d9df-7005-4bbb-ba9d-d45f9efbe52a" },
		{ "amz-sdk-request", "attempt=1; max=3" },
		{ "x-amz-date", "20261123T221340Z" },
		{ "authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7"
		    "EXAMPLE/20261123/us-east-1/s3/aws4_request, SignedHeaders="
		    "amz-sdk-invocation-id;amz-sdk-request;content-encoding;"
		    "content-type;host;x-amz-content-sha256;x-amz-date;"
		    "x-amz-decoded-content-length;x-amz-sdk-checksum-algorithm;"
		    "x-amz-trailer;x-amz-user-agent, Signature=6b7a92ef5e2247bf"
		    "6bb752811dae9d015e93ca04b15454373f4057cf07254d1e" },
	};
	bc_s3_req_t r;
	bc_s3_auth_t a;
	bc_awschunked_t *d;
	bc_buf_t out = BC_BUF_INIT;
	const char *body = js_bodies[5].body;

	bc_s3_req_init(&r);
	for (size_t i = 0; i < sizeof(h) / sizeof(*h); i++)
		bc_kv_add(&r.headers, h[i].name, h[i].value);
	cr_assert_eq(bc_s3_req_parse(&r, "PUT", "/b/k?x-id=PutObject", NULL),
	    BC_S3E_NONE);
	cr_assert_eq(bc_s3_auth_verify(&r, 1795472020, secret_of, NULL,
	    false, &a), BC_S3E_NONE);
	cr_assert_eq(a.kind, BC_S3AUTH_V4);
	cr_assert(a.streaming);
	cr_assert_eq(a.stream_mode, BC_AWSCHUNKED_UNSIGNED_TRAILER);
	cr_assert_eq(bc_awschunked_from_headers(&r.headers, a.stream_mode,
	    &a.v4, false, NULL, 1 << 20, &d), BC_S3E_NONE);
	cr_expect_eq(run(d, body, strlen(body), all_at_once, 1, &out),
	    BC_S3E_NONE);
	cr_expect_eq(out.len, 12);
	cr_expect_eq(memcmp(out.data, "Hello world!", 12), 0);
	bc_awschunked_free(d);
	/* anonymous, with the same body mode: no signature, same decoder */
	bc_s3_req_fini(&r);
	bc_s3_req_init(&r);
	for (size_t i = 0; i + 1 < sizeof(h) / sizeof(*h); i++)
		bc_kv_add(&r.headers, h[i].name, h[i].value);
	cr_assert_eq(bc_s3_req_parse(&r, "PUT", "/b/k", NULL), BC_S3E_NONE);
	cr_assert_eq(bc_s3_auth_verify(&r, 1795472020, secret_of, NULL,
	    true, &a), BC_S3E_NONE);
	cr_expect_eq(a.kind, BC_S3AUTH_NONE);
	cr_expect(a.streaming);
	cr_expect_eq(a.stream_mode, BC_AWSCHUNKED_UNSIGNED_TRAILER);
	cr_expect_str_eq(a.payload_hash, BC_SIGV4_STREAMING_UNSIGNED_TRAILER);
	bc_s3_req_fini(&r);
	bc_buf_fini(&out);
}

/* Unsigned bodies gone wrong: the data may have gone out, the end never
 * does. */
LTest(awschunked_trailer, unsigned_errors)
{
	static const struct {
		const char *body;
		uint64_t    declared;
		bc_s3err_t  e;
		size_t      framed;   /* output bytes */
	} t[] = {
		/* wrong checksum */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:AAAAAA=="
		    "\r\n\r\n", 11, BC_S3E_BadDigest, 16 },
		/* another algorithm's trailer */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32c:crUfeA=="
		    "\r\n\r\n", 11, BC_S3E_MalformedTrailerError, 16 },
		/* no trailer; a signature in the unsigned mode */
		{ "b\r\nHello world\r\n0\r\n\r\n", 11,
		    BC_S3E_MalformedTrailerError, 16 },
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732"
		    "e8730629a2e4a59689829ca17fe2e435\r\n\r\n", 11,
		    BC_S3E_MalformedTrailerError, 16 },
		/* the final CRLF missing, or half of it */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n",
		    11, BC_S3E_IncompleteBody, 16 },
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "\r", 11, BC_S3E_IncompleteBody, 16 },
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "\n", 11, BC_S3E_MalformedTrailerError, 16 },
		/* bytes after the end */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "\r\nx", 11, BC_S3E_InvalidArgument, 52 },
		/* decoded length wrong: longer, shorter */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "\r\n", 12, BC_S3E_IncompleteBody, 16 },
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n"
		    "\r\n", 10, BC_S3E_IncompleteBody, 0 },
		/* chunk lines: extensions, signatures, no hex, bare LF */
		{ "b;x=y\r\nHello world\r\n0\r\n", 11, BC_S3E_InvalidArgument,
		    0 },
		{ "b;chunk-signature=d81f82fc3505edab99d459891051a732e8730629a2"
		    "e4a59689829ca17fe2e435\r\n", 11, BC_S3E_InvalidArgument,
		    0 },
		{ "\r\nHello world", 11, BC_S3E_InvalidArgument, 0 },
		{ "b\nHello world", 11, BC_S3E_InvalidArgument, 0 },
		/* data not followed by CRLF */
		{ "b\r\nHello worldX\r\n", 11, BC_S3E_InvalidArgument, 14 },
		/* malformed value */
		{ "b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg\r\n"
		    "\r\n", 11, BC_S3E_InvalidRequest, 16 },
		/* a trailer line that never ends */
		{ "0\r\nx-amz-checksum-crc32:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0,
		    BC_S3E_MalformedTrailerError, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		for (int framed = 0; framed < 2; framed++) {
			bc_awschunked_t *d = new_mode(
			    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, NULL, framed,
			    BC_CKSUM_CRC32);
			bc_buf_t out = BC_BUF_INIT;
			bc_s3err_t e, again;
			char x = '0';

			bc_awschunked_set_decoded_len(d, t[i].declared);
			e = run(d, t[i].body, strlen(t[i].body), one_byte, 1,
			    &out);
			cr_expect_eq(e, t[i].e, "case %zu framed %d: %s", i,
			    framed, bc_s3err_code(e));
			if (framed)
				cr_expect_eq(out.len, t[i].framed,
				    "case %zu: %zu", i, out.len);
			/* never the final chunk: not "0\r\n" at a line start */
			cr_expect(out.len < 3 || memcmp(out.data + out.len - 3,
			    "0\r\n", 3) != 0 || t[i].e == BC_S3E_NONE);
			cr_expect_null(bc_awschunked_checksum(d), "case %zu",
			    i);
			if (t[i].e != BC_S3E_IncompleteBody ||
			    bc_awschunked_feed(d, &x, 0, &again) != 0) {
				cr_expect_eq(bc_awschunked_feed(d, &x, 1,
				    &again), -1);
				cr_expect_eq(again, e);
			}
			bc_awschunked_free(d);
			bc_buf_fini(&out);
		}
	}
}

/* Unsigned data streams through in blocks: a chunk far over max_chunk
 * and bigger than any buffer. */
LTest(awschunked_trailer, unsigned_large_chunk)
{
	size_t n = 1000000, len;
	char *data = malloc(n), crc[BC_CKSUM_B64_MAX];
	bc_buf_t b = BC_BUF_INIT, out = BC_BUF_INIT;
	bc_awschunked_opts_t o;
	bc_awschunked_t *d;
	static const size_t steps[] = { 100000, 3, 70000 };

	cr_assert_not_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i * 13);
	bc_checksum_b64(BC_CKSUM_SHA256, data, n, crc);
	bc_buf_printf(&b, "%zx\r\n", n);
	bc_buf_append(&b, data, n);
	bc_buf_printf(&b, "\r\n0\r\nx-amz-checksum-sha256:%s\r\n\r\n", crc);
	len = b.len;
	memset(&o, 0, sizeof(o));
	o.mode = BC_AWSCHUNKED_UNSIGNED_TRAILER;
	o.framed = true;
	o.max_chunk = 1024;
	o.trailer = BC_CKSUM_SHA256;
	d = bc_awschunked_new_opts(&o);
	cr_assert_not_null(d);
	cr_expect_eq(run(d, b.data, len, steps, 3, &out), BC_S3E_NONE);
	cr_expect_eq(out.len, len);
	cr_expect_eq(memcmp(out.data, b.data, len), 0);
	bc_awschunked_free(d);
	free(data);
	bc_buf_fini(&b);
	bc_buf_fini(&out);
}

LTest(awschunked_trailer, modes_and_headers)
{
	bc_awschunked_mode_t m = BC_AWSCHUNKED_SIGNED_TRAILER;
	bc_checksum_alg_t alg = BC_CKSUM_NONE;
	bc_kvlist_t h = BC_KVLIST_INIT;
	bc_sigv4_ctx_t c = client_ctx();
	bc_awschunked_opts_t o;
	bc_awschunked_t *d = NULL;

	cr_expect(bc_awschunked_mode_parse(BC_SIGV4_STREAMING, &m));
	cr_expect_eq(m, BC_AWSCHUNKED_SIGNED);
	cr_expect(bc_awschunked_mode_parse(
	    "STREAMING-UNSIGNED-PAYLOAD-TRAILER", &m));
	cr_expect_eq(m, BC_AWSCHUNKED_UNSIGNED_TRAILER);
	cr_expect(bc_awschunked_mode_parse(
	    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", &m));
	cr_expect_eq(m, BC_AWSCHUNKED_SIGNED_TRAILER);
	cr_expect_not(bc_awschunked_mode_parse(
	    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", &m));
	cr_expect_not(bc_awschunked_mode_parse("UNSIGNED-PAYLOAD", &m));
	cr_expect_not(bc_awschunked_mode_parse(NULL, &m));
	cr_expect_str_eq(bc_awschunked_mode_name(
	    BC_AWSCHUNKED_UNSIGNED_TRAILER), "STREAMING-UNSIGNED-PAYLOAD-"
	    "TRAILER");
	cr_expect_eq(bc_awschunked_parse_trailer("x-amz-checksum-crc64nvme",
	    &alg), BC_S3E_NONE);
	cr_expect_eq(alg, BC_CKSUM_CRC64NVME);
	cr_expect_eq(bc_awschunked_parse_trailer(NULL, &alg), BC_S3E_NONE);
	cr_expect_eq(alg, BC_CKSUM_NONE);   /* none announced */
	cr_expect_eq(bc_awschunked_parse_trailer("x-amz-checksum-md5", &alg),
	    BC_S3E_InvalidRequest);
	cr_expect_eq(bc_awschunked_parse_trailer("x-amz-checksum-crc32,"
	    "x-amz-checksum-crc32c", &alg), BC_S3E_InvalidRequest);
	/* from headers: the length required, x-amz-trailer optional (valid
	 * if given) */
	cr_expect_eq(bc_awschunked_from_headers(&h,
	    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, false, NULL, 1024, &d),
	    BC_S3E_MissingContentLength);
	bc_kv_add(&h, "X-Amz-Trailer", "x-amz-checksum-md5");
	cr_expect_eq(bc_awschunked_from_headers(&h,
	    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, false, NULL, 1024, &d),
	    BC_S3E_InvalidRequest);
	bc_kv_set(&h, "X-Amz-Trailer", "x-amz-checksum-sha1");
	cr_expect_eq(bc_awschunked_from_headers(&h,
	    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, false, NULL, 1024, &d),
	    BC_S3E_MissingContentLength);
	bc_kv_add(&h, "x-amz-decoded-content-length", "x");
	cr_expect_eq(bc_awschunked_from_headers(&h,
	    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, false, NULL, 1024, &d),
	    BC_S3E_InvalidArgument);
	cr_expect_null(d);
	bc_kv_set(&h, "x-amz-decoded-content-length", "0");
	cr_expect_eq(bc_awschunked_from_headers(&h,
	    BC_AWSCHUNKED_UNSIGNED_TRAILER, NULL, false, NULL, 1024, &d),
	    BC_S3E_NONE);
	cr_expect_not_null(d);
	bc_awschunked_free(d);
	bc_kv_fini(&h);
	/* inconsistent options */
	memset(&o, 0, sizeof(o));
	o.mode = BC_AWSCHUNKED_SIGNED_TRAILER;
	o.trailer = BC_CKSUM_CRC32;
	cr_expect_null(bc_awschunked_new_opts(&o));       /* no client */
	o.client = &c;
	o.framed = true;
	cr_expect_null(bc_awschunked_new_opts(&o));       /* no upstream */
	o.framed = false;
	o.trailer = BC_CKSUM_NONE;   /* none announced: fine */
	bc_awschunked_free(bc_awschunked_new_opts(&o));
	o.mode = BC_AWSCHUNKED_SIGNED;
	o.trailer = BC_CKSUM_CRC32;
	cr_expect_null(bc_awschunked_new_opts(&o));       /* one too many */
}

/* ---- framing only (an anonymous STREAMING-* body) ------------------------ */

/* Framing only: extensions and trailer lines skipped, the payload out,
 * in one piece or byte by byte; what breaks the framing fails. */
LTest(awschunked_framing, decodes_and_refuses)
{
	static const struct {
		const char *body;
		bc_s3err_t  e;
		const char *out;
	} t[] = {
		{ "5\r\nhello\r\n0\r\n\r\n", BC_S3E_NONE, "hello" },
		{ "5;chunk-signature=abc\r\nhello\r\n"
		  "1;x=y;z\r\n!\r\n0;chunk-signature=def\r\n"
		  "x-amz-checksum-crc32:AAAAAA==\r\n"
		  "x-amz-trailer-signature:0123\r\n\r\n", BC_S3E_NONE,
		  "hello!" },
		{ "A\r\n0123456789\r\n0\r\n\r\n", BC_S3E_NONE, "0123456789" },
		{ "0\r\n\r\n", BC_S3E_NONE, "" },
		{ "5\r\nhello\r\n0\r\n", BC_S3E_IncompleteBody, NULL },
		{ "5\r\nhello\r\n", BC_S3E_IncompleteBody, NULL },
		{ "5\nhello\r\n0\r\n\r\n", BC_S3E_InvalidArgument, NULL },
		{ "5;ext\nhello\r\n0\r\n\r\n", BC_S3E_InvalidArgument, NULL },
		{ "x\r\nhello\r\n0\r\n\r\n", BC_S3E_InvalidArgument, NULL },
		{ "5\r\nhelloXY0\r\n\r\n", BC_S3E_InvalidArgument, NULL },
		{ "0\r\nbad\n\r\n", BC_S3E_MalformedTrailerError, NULL },
		{ "0\r\n\r\nmore", BC_S3E_InvalidArgument, NULL },
		{ "11111111111111111\r\n", BC_S3E_InvalidArgument, NULL },
	};
	static const size_t one[] = { 1 };
	bc_awschunked_opts_t o = { .mode = BC_AWSCHUNKED_FRAMING };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			bc_awschunked_t *d = bc_awschunked_new_opts(&o);
			bc_buf_t out = BC_BUF_INIT;
			bc_s3err_t e;

			cr_assert_not_null(d);
			e = run(d, t[i].body, strlen(t[i].body),
			    bytewise ? one : all_at_once, 1, &out);
			cr_expect_eq(e, t[i].e, "case %zu%s: %s", i,
			    bytewise ? " bytewise" : "", bc_s3err_code(e));
			if (t[i].out != NULL && e == BC_S3E_NONE)
				cr_expect_str_eq(bc_buf_str(&out), t[i].out,
				    "case %zu", i);
			bc_buf_fini(&out);
			bc_awschunked_free(d);
		}
	}
}

/* Framing only: a long extension or trailer is refused past its bound;
 * a declared length is held to; framed output is refused. */
LTest(awschunked_framing, bounds)
{
	bc_awschunked_opts_t o = { .mode = BC_AWSCHUNKED_FRAMING };
	bc_awschunked_t *d;
	bc_buf_t body = BC_BUF_INIT, out = BC_BUF_INIT;

	cr_assert_eq(bc_buf_puts(&body, "1;"), 0);
	for (int i = 0; i < 1100; i++)
		cr_assert_eq(bc_buf_putc(&body, 'e'), 0);
	cr_assert_eq(bc_buf_puts(&body, "\r\n!\r\n0\r\n\r\n"), 0);
	d = bc_awschunked_new_opts(&o);
	cr_expect_eq(run(d, body.data, body.len, all_at_once, 1, &out),
	    BC_S3E_InvalidArgument);
	bc_awschunked_free(d);

	bc_buf_reset(&body);
	bc_buf_reset(&out);
	cr_assert_eq(bc_buf_puts(&body, "1\r\n!\r\n0\r\n"), 0);
	for (int i = 0; i < 2000; i++)
		cr_assert_eq(bc_buf_puts(&body, "x-a:bcdefgh\r\n"), 0);
	cr_assert_eq(bc_buf_puts(&body, "\r\n"), 0);
	d = bc_awschunked_new_opts(&o);
	cr_expect_eq(run(d, body.data, body.len, all_at_once, 1, &out),
	    BC_S3E_MalformedTrailerError);
	bc_awschunked_free(d);

	bc_buf_reset(&out);
	d = bc_awschunked_new_opts(&o);
	bc_awschunked_set_decoded_len(d, 4);
	cr_expect_eq(run(d, "5\r\nhello\r\n0\r\n\r\n", 15, all_at_once, 1,
	    &out), BC_S3E_IncompleteBody);
	bc_awschunked_free(d);

	o.framed = true;
	cr_expect_null(bc_awschunked_new_opts(&o));
	bc_buf_fini(&body);
	bc_buf_fini(&out);
}
