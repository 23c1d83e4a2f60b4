/*
 * test_s3_awschunked.c — aws-chunked verification and re-signing with the
 * S3 reference example "Transfer Payload in Multiple Chunks" (66560 bytes
 * of 'a' in 64 KiB chunks, seed 4f232c43...): chunk signatures, decoded
 * and re-signed output, every way of splitting the input, tampering,
 * oversize chunks, truncation, trailing garbage and malformed framing;
 * the declared payload length (x-amz-decoded-content-length): parsing,
 * exact / too long / too short, whole and split, framed and not.
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
		{ "0;chunk-signature=" SIG1 "\r\nxx", 65536,
		    BC_S3E_InvalidArgument },
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
