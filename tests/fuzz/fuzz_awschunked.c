/*
 * fuzz_awschunked.c — the aws-chunked decoder and re-signer
 * (s3/s3_awschunked.h) driven as the gateway drives it: feed, take the
 * output, consume it in pieces, finish.
 *
 * Input: four bytes of parameters, then the client's body.
 *   byte 0  flags: bit 0 re-sign for an upstream (else decode only,
 *           NULL upstream context, as for file://); bit 1 fix the chunk
 *           signatures first (a pass that finds each well-formed
 *           "hex;chunk-signature=<64>\r\n" and writes the right chained
 *           signature in, so the decoder gets past verification); bits
 *           2-3 are kept for the trailer modes (see below); bits 4-5
 *           declare the payload's length (x-amz-decoded-content-length,
 *           written and parsed back): 0 none, 1 the bytes of the
 *           well-formed chunks that pass finds, 2 one less, 3 one more
 *   byte 1  max_chunk: n * 64 bytes, 0 meaning 16 MiB (the file backend's)
 *   byte 2  bytes fed per call (0: all that is left)
 *   byte 3  output bytes consumed per call (0: all)
 * The client context is the S3 example's (seed 4f232c43...); the upstream
 * one another key and seed.
 *
 * Trailer modes: STREAMING-UNSIGNED-PAYLOAD-TRAILER and
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER do not exist in the decoder
 * yet (issue 9 adds them). When they do, flag bits 2-3 select the mode
 * given to the decoder (0: signed chunks, no trailer, as now; 1: unsigned
 * with trailer; 2: signed with trailer) and the seeds with a trailer go
 * into the corpus; until then those bits are ignored.
 *
 * Checks: the decoder always makes progress; once it finished cleanly,
 * the re-signed output is exactly as long as the input, the decoded
 * output as long as bc_awschunked_decoded_len, and that as long as the
 * declared length; whatever re-signed output it emitted (complete or not)
 * verifies under the upstream's chain: nothing unverified, nothing
 * mis-signed is ever sent; and a body refused for its declared length
 * never emitted its final chunk.
 */
#include "fuzz.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_sigv4.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"

#define INPUT_MAX (64 * 1024)
#define SIG_EXT   ";chunk-signature="
#define CLIENT_SEED "4f232c4386841ef735655705268965c4" \
	"4a0e4690baa4adea153f7db9fa80a0a9"
#define UP_SEED     "b1aa3a8c4b44d1a7b29e4c5e1a48b20f" \
	"d4f4ac83c5d2b3b8e81ad1c9b30b2c61"

static bc_sigv4_ctx_t
ctx_make(const char *secret, const char *seed)
{
	bc_sigv4_ctx_t c;

	memset(&c, 0, sizeof(c));
	bc_sigv4_signing_key(secret, "20130524", "us-east-1", "s3", c.key);
	strcpy(c.amz_date, "20130524T000000Z");
	strcpy(c.scope, "20130524/us-east-1/s3/aws4_request");
	strcpy(c.signature, seed);
	return c;
}

/* Finds the well-formed chunks from the start of body up to the first
 * that is not (or the final one) and returns their payload bytes; with
 * fix, writes the right chained signature into each. */
static uint64_t
scan_chunks(const bc_sigv4_ctx_t *c, char *body, size_t n, bool fix)
{
	char prev[65], sig[65];
	uint64_t total = 0;
	size_t p = 0;

	memcpy(prev, c->signature, sizeof(prev));
	while (p < n) {
		size_t i = p, size = 0, data;

		while (i < n && i - p < 16 && bc_hexval(body[i]) >= 0)
			size = size * 16 + (size_t)bc_hexval(body[i++]);
		if (i == p || n - i < sizeof(SIG_EXT) - 1 + 64 + 2 ||
		    memcmp(body + i, SIG_EXT, sizeof(SIG_EXT) - 1) != 0)
			break;
		i += sizeof(SIG_EXT) - 1;
		data = i + 64 + 2;
		if (size > n - data)
			break;
		total += size;
		if (fix) {
			bc_sigv4_chunk_signature(c, prev, body + data, size,
			    sig);
			memcpy(body + i, sig, 64);
			memcpy(prev, sig, sizeof(prev));
		}
		if (size == 0)
			break;
		p = data + size + 2;
	}
	return total;
}

/* Takes the pending output into out, step bytes per consume. */
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
		FUZZ_CHECK(bc_buf_append(out, p, n) == 0);
		bc_awschunked_consume(d, n);
		total += n;
	}
}

/* Feeds body in pieces of step bytes, draining as it goes. Returns the
 * first error, else bc_awschunked_finish(); *fed gets the bytes taken. */
static bc_s3err_t
run(bc_awschunked_t *d, const char *body, size_t len, size_t step,
    size_t out_step, bc_buf_t *out, size_t *fed)
{
	bc_s3err_t err = BC_S3E_NONE;
	size_t off = 0;

	while (off < len) {
		size_t n = len - off < step ? len - off : step;

		while (n > 0) {
			ssize_t r = bc_awschunked_feed(d, body + off, n, &err);

			if (r < 0) {
				*fed = off;
				drain(d, out, out_step);
				return err;
			}
			FUZZ_CHECK((size_t)r <= n);
			off += (size_t)r;
			n -= (size_t)r;
			if (drain(d, out, out_step) == 0)
				FUZZ_CHECK(r > 0);   /* progress */
		}
	}
	*fed = off;
	drain(d, out, out_step);
	return bc_awschunked_finish(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bc_sigv4_ctx_t client, up;
	bc_awschunked_t *d = NULL, *check = NULL;
	bc_buf_t out = BC_BUF_INIT, again = BC_BUF_INIT;
	size_t max_chunk, step, out_step, len, fed, fed2;
	uint64_t total, declared = 0, parsed = 0;
	unsigned declare;
	bool framed;
	char *body;
	bc_s3err_t e, e2;

	if (size < 4 || size > INPUT_MAX)
		return 0;
	framed = data[0] & 1;
	max_chunk = data[1] != 0 ? (size_t)data[1] * 64 : (size_t)16 << 20;
	step = data[2] != 0 ? data[2] : (size_t)-1;
	out_step = data[3] != 0 ? data[3] : (size_t)-1;
	len = size - 4;
	body = malloc(len > 0 ? len : 1);
	FUZZ_CHECK(body != NULL);
	memcpy(body, data + 4, len);

	client = ctx_make("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	    CLIENT_SEED);
	up = ctx_make("S3RVER", UP_SEED);
	total = scan_chunks(&client, body, len, data[0] & 2);
	d = bc_awschunked_new(&client, framed ? &up : NULL, max_chunk);
	FUZZ_CHECK(d != NULL);
	declare = (data[0] >> 4) & 3;
	if (declare != 0) {
		char text[24];

		declared = declare == 1 ? total : declare == 3 ? total + 1 :
		    total > 0 ? total - 1 : 0;
		snprintf(text, sizeof(text), "%llu",
		    (unsigned long long)declared);
		FUZZ_CHECK(bc_awschunked_parse_decoded_len(text, &parsed) ==
		    BC_S3E_NONE && parsed == declared);
		bc_awschunked_set_decoded_len(d, declared);
	}
	e = run(d, body, len, step, out_step, &out, &fed);
	if (e == BC_S3E_NONE) {
		FUZZ_CHECK(bc_awschunked_done(d));
		FUZZ_CHECK(fed == len);
		FUZZ_CHECK(out.len == (framed ? len :
		    (size_t)bc_awschunked_decoded_len(d)));
		if (declare != 0)
			FUZZ_CHECK(bc_awschunked_decoded_len(d) == declared);
	}
	if (framed) {
		/* what went upstream verifies under the upstream's chain */
		check = bc_awschunked_new(&up, NULL, (size_t)16 << 20);
		FUZZ_CHECK(check != NULL);
		e2 = run(check, bc_buf_str(&out), out.len, (size_t)-1,
		    (size_t)-1, &again, &fed2);
		FUZZ_CHECK(e2 == BC_S3E_NONE || e2 == BC_S3E_IncompleteBody);
		FUZZ_CHECK(e != BC_S3E_NONE || e2 == BC_S3E_NONE);
		if (declare != 0 && e == BC_S3E_IncompleteBody)
			FUZZ_CHECK(e2 != BC_S3E_NONE);
		FUZZ_CHECK(bc_awschunked_decoded_len(check) ==
		    bc_awschunked_decoded_len(d));
	}
	bc_awschunked_free(check);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	bc_buf_fini(&again);
	free(body);
	return 0;
}
