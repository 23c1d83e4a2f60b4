/*
 * fuzz_awschunked.c — the aws-chunked decoder and re-encoder
 * (s3/s3_awschunked.h) driven as the gateway drives it: feed, take the
 * output, consume it in pieces, finish.
 *
 * Input: four bytes of parameters, then the client's body.
 *   byte 0  flags: bit 0 re-encode for an upstream (else decode only, as
 *           for file://); bit 1 fix the body first (a pass that finds
 *           each well-formed chunk line — "hex;chunk-signature=<64>\r\n",
 *           or "hex\r\n" in the unsigned mode — and writes the right
 *           chained signature in, and after the final chunk writes the
 *           right checksum into a well-formed checksum line and the
 *           right signature into a trailer-signature line, so the decoder
 *           gets past verification); bits 2-3 the mode: 0
 *           STREAMING-AWS4-HMAC-SHA256-PAYLOAD, 1 STREAMING-UNSIGNED-
 *           PAYLOAD-TRAILER, 2 STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER,
 *           3 the unsigned trailer mode announcing another checksum than
 *           the body's; bits 4-5 declare the payload's length
 *           (x-amz-decoded-content-length, written and parsed back): 0
 *           none, 1 the bytes of the well-formed chunks that pass finds,
 *           2 one less, 3 one more
 *   byte 1  max_chunk: n * 64 bytes, 0 meaning 16 MiB (the file backend's)
 *   byte 2  bytes fed per call (0: all that is left)
 *   byte 3  output bytes consumed per call (0: all)
 * The announced checksum (x-amz-trailer) is the one the body's first
 * "x-amz-checksum-ALG" names (CRC32 when none). The client context is the
 * S3 example's (seed 4f232c43...); the upstream one another key and seed.
 *
 * The same body also goes through the framing-only mode (an anonymous
 * upload): it always makes progress, and a body it took whole decoded to
 * fewer bytes than were sent.
 *
 * Checks: the decoder always makes progress; once it finished cleanly,
 * the re-encoded output is exactly as long as the input, the decoded
 * output as long as bc_awschunked_decoded_len, and that as long as the
 * declared length, and a trailer mode has its checksum; the unsigned
 * mode's re-encoded output is the input, byte for byte; whatever
 * re-encoded output it emitted (complete or not) verifies under the
 * upstream's chain (nothing unverified, nothing mis-signed is sent), and
 * when it is a complete body, the client's body up to the same length
 * was a complete, valid one: a body refused for its checksum, a
 * signature or its declared length never reaches its end upstream.
 */
#include "fuzz.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_sigv4.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"

#define INPUT_MAX (64 * 1024)
#define SIG_EXT   ";chunk-signature="
#define TSIG      "x-amz-trailer-signature:"
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

/* The checksum the body's first "x-amz-checksum-ALG" names, else CRC32. */
static bc_checksum_alg_t
body_alg(const char *body, size_t n)
{
	static const char pfx[] = "x-amz-checksum-";

	for (size_t i = 0; i + sizeof(pfx) - 1 < n; i++) {
		char name[32];
		size_t k = 0;

		if (memcmp(body + i, pfx, sizeof(pfx) - 1) != 0)
			continue;
		while (i + k < n && k < sizeof(name) - 1 && body[i + k] != ':')
			name[k] = body[i + k], k++;
		name[k] = '\0';
		if (bc_checksum_from_header(name) != BC_CKSUM_NONE)
			return bc_checksum_from_header(name);
	}
	return BC_CKSUM_CRC32;
}

/* After the final chunk at body + p: with fix, the right checksum into a
 * well-formed "x-amz-checksum-ALG:VALUE\r\n" line and the right signature
 * into the "x-amz-trailer-signature:<64>\r\n" line after it. */
static void
fix_trailer(const bc_sigv4_ctx_t *c, bool sig, const char *prev,
    bc_checksum_alg_t alg, const char *payload, size_t plen, char *body,
    size_t n, size_t p)
{
	const char *name = bc_checksum_header(alg);
	size_t nl = strlen(name), vl = bc_checksum_b64_len(alg), q;
	char value[BC_CKSUM_B64_MAX], hash[65], s[65];
	bc_buf_t sts = BC_BUF_INIT, canon = BC_BUF_INIT;
	uint8_t mac[32];

	if (n - p < nl + 1 + vl + 2 || memcmp(body + p, name, nl) != 0 ||
	    body[p + nl] != ':' || memcmp(body + p + nl + 1 + vl, "\r\n", 2))
		return;
	bc_checksum_b64(alg, payload, plen, value);
	memcpy(body + p + nl + 1, value, vl);
	q = p + nl + 1 + vl + 2;
	if (!sig || n - q < strlen(TSIG) + 64 + 2 ||
	    memcmp(body + q, TSIG, strlen(TSIG)) != 0)
		return;
	FUZZ_CHECK(bc_buf_append(&canon, body + p, nl + 1 + vl) == 0 &&
	    bc_buf_puts(&canon, "\n") == 0);
	bc_sha256_hex(canon.data, canon.len, hash);
	FUZZ_CHECK(bc_buf_printf(&sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n"
	    "%s\n%s", c->amz_date, c->scope, prev, hash) == 0);
	bc_hmac_sha256(c->key, 32, sts.data, sts.len, mac);
	bc_hex(mac, 32, s);
	memcpy(body + q + strlen(TSIG), s, 64);
	bc_buf_fini(&sts);
	bc_buf_fini(&canon);
}

/* Finds the well-formed chunks from the start of body up to the first
 * that is not (or the final one) and returns their payload bytes; with
 * fix, writes the right chained signature into each and fixes the
 * trailer (fix_trailer). */
static uint64_t
scan_chunks(const bc_sigv4_ctx_t *c, bc_awschunked_mode_t mode,
    bc_checksum_alg_t alg, char *body, size_t n, bool fix)
{
	bool sig = mode != BC_AWSCHUNKED_UNSIGNED_TRAILER;
	size_t ext = sig ? sizeof(SIG_EXT) - 1 + 64 : 0;
	bc_buf_t payload = BC_BUF_INIT;
	char prev[65], s[65];
	uint64_t total = 0;
	size_t p = 0;

	memcpy(prev, c->signature, sizeof(prev));
	while (p < n) {
		size_t i = p, size = 0, data;

		while (i < n && i - p < 16 && bc_hexval(body[i]) >= 0)
			size = size * 16 + (size_t)bc_hexval(body[i++]);
		if (i == p || n - i < ext + 2 || (sig &&
		    memcmp(body + i, SIG_EXT, sizeof(SIG_EXT) - 1) != 0) ||
		    memcmp(body + i + ext, "\r\n", 2) != 0)
			break;
		data = i + ext + 2;
		if (size > n - data)
			break;
		total += size;
		if (fix && sig) {
			bc_sigv4_chunk_signature(c, prev, body + data, size, s);
			memcpy(body + i + sizeof(SIG_EXT) - 1, s, 64);
			memcpy(prev, s, sizeof(prev));
		}
		if (size == 0) {
			if (fix && mode != BC_AWSCHUNKED_SIGNED)
				fix_trailer(c, sig, prev, alg, payload.data !=
				    NULL ? payload.data : "", payload.len, body,
				    n, data);
			break;
		}
		FUZZ_CHECK(bc_buf_append(&payload, body + data, size) == 0);
		p = data + size + 2;
	}
	bc_buf_fini(&payload);
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

/* A decoder in mode; framed: re-encoding with up (signed modes). */
static bc_awschunked_t *
decoder(bc_awschunked_mode_t mode, const bc_sigv4_ctx_t *client,
    bool framed, const bc_sigv4_ctx_t *up, size_t max_chunk,
    bc_checksum_alg_t alg)
{
	bc_awschunked_opts_t o;
	bc_awschunked_t *d;

	memset(&o, 0, sizeof(o));
	o.mode = mode;
	o.client = client;
	o.framed = framed;
	o.upstream = up;
	o.max_chunk = max_chunk;
	o.trailer = mode != BC_AWSCHUNKED_SIGNED ? alg : BC_CKSUM_NONE;
	d = bc_awschunked_new_opts(&o);
	FUZZ_CHECK(d != NULL);
	return d;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bc_sigv4_ctx_t client, up;
	bc_awschunked_t *d = NULL, *check = NULL, *again_d = NULL;
	bc_buf_t out = BC_BUF_INIT, again = BC_BUF_INIT;
	size_t max_chunk, step, out_step, len, fed, fed2, fed3;
	uint64_t total, declared = 0, parsed = 0;
	unsigned declare, m;
	bc_awschunked_mode_t mode;
	bc_checksum_alg_t alg, announced;
	bool framed, sig;
	char *body;
	bc_s3err_t e, e2;

	if (size < 4 || size > INPUT_MAX)
		return 0;
	framed = data[0] & 1;
	m = (data[0] >> 2) & 3;
	mode = m == 3 ? BC_AWSCHUNKED_UNSIGNED_TRAILER :
	    (bc_awschunked_mode_t)m;
	sig = mode != BC_AWSCHUNKED_UNSIGNED_TRAILER;
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
	alg = body_alg(body, len);
	announced = m == 3 ? (bc_checksum_alg_t)(alg % (BC_CKSUM_COUNT - 1) +
	    1) : alg;
	total = scan_chunks(&client, mode, alg, body, len, data[0] & 2);
	d = decoder(mode, &client, framed, &up, max_chunk, announced);
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
#ifdef FUZZ_VERBOSE   /* what a seed reaches: -DFUZZ_VERBOSE */
	fprintf(stderr, "mode %u framed %d: %s, %zu of %zu bytes, %zu out\n",
	    m, framed, e == BC_S3E_NONE ? "ok" : bc_s3err_code(e), fed, len,
	    out.len);
#endif
	if (e == BC_S3E_NONE) {
		FUZZ_CHECK(bc_awschunked_done(d));
		FUZZ_CHECK(fed == len);
		FUZZ_CHECK(out.len == (framed ? len :
		    (size_t)bc_awschunked_decoded_len(d)));
		if (declare != 0)
			FUZZ_CHECK(bc_awschunked_decoded_len(d) == declared);
		FUZZ_CHECK((bc_awschunked_checksum(d) != NULL) ==
		    (mode != BC_AWSCHUNKED_SIGNED));
	} else {
		FUZZ_CHECK(bc_awschunked_checksum(d) == NULL);
	}
	if (framed && !sig)   /* passed on as sent */
		FUZZ_CHECK(out.len <= len && memcmp(out.data != NULL ?
		    out.data : "", body, out.len) == 0);
	if (framed) {
		/* what went upstream verifies under the upstream's chain */
		check = decoder(mode, &up, false, NULL, (size_t)16 << 20,
		    announced);
		e2 = run(check, bc_buf_str(&out), out.len, (size_t)-1,
		    (size_t)-1, &again, &fed2);
		FUZZ_CHECK(e2 == BC_S3E_NONE || e2 == BC_S3E_IncompleteBody);
		FUZZ_CHECK(e != BC_S3E_NONE || e2 == BC_S3E_NONE);
		FUZZ_CHECK(bc_awschunked_decoded_len(check) ==
		    bc_awschunked_decoded_len(d));
		if (e2 == BC_S3E_NONE) {
			/* a complete body went up: the client's was one, and
			 * valid, as far as it reached */
			bc_buf_reset(&again);
			again_d = decoder(mode, &client, false, NULL,
			    max_chunk, announced);
			if (declare != 0)
				bc_awschunked_set_decoded_len(again_d,
				    declared);
			FUZZ_CHECK(run(again_d, body, out.len,
			    (size_t)-1, (size_t)-1, &again, &fed3) ==
			    BC_S3E_NONE);
		}
	}
	/* the same body, framing only (an anonymous upload): it always
	 * makes progress, and a body it takes whole decodes to no more
	 * than was sent */
	{
		bc_awschunked_opts_t fo = { .mode = BC_AWSCHUNKED_FRAMING };
		bc_awschunked_t *f = bc_awschunked_new_opts(&fo);
		bc_buf_t fout = BC_BUF_INIT;
		size_t ffed;

		FUZZ_CHECK(f != NULL);
		if (run(f, body, len, step, out_step, &fout, &ffed) ==
		    BC_S3E_NONE) {
			FUZZ_CHECK(bc_awschunked_done(f) && ffed == len);
			FUZZ_CHECK(fout.len < len || len == 0);
			FUZZ_CHECK(fout.len == bc_awschunked_decoded_len(f));
		}
		bc_buf_fini(&fout);
		bc_awschunked_free(f);
	}
	bc_awschunked_free(again_d);
	bc_awschunked_free(check);
	bc_awschunked_free(d);
	bc_buf_fini(&out);
	bc_buf_fini(&again);
	free(body);
	return 0;
}
