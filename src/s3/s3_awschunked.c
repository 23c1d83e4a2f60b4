/*
 * s3_awschunked.c — streaming verifier and re-encoder for aws-chunked
 * bodies in their three modes (see s3_awschunked.h).
 *
 * A state machine over the client's bytes: chunk header line (bounded),
 * data, CRLF; after the final (zero-size) chunk, in the trailer modes,
 * the trailer lines (bounded) up to an empty one. A signed chunk's data
 * is buffered whole and verified against the client's signature chain
 * once complete, then framed into the output buffer with the same size
 * text and the upstream's chained signature (same length). Unsigned data
 * is handed out in blocks of STREAM_BLOCK as it comes. The final chunk of
 * a trailer mode is verified when its line is read but held back, with
 * the trailer, until the trailer (its signature, the checksum over the
 * decoded payload) checked out. With a declared payload length, a chunk
 * announced past it fails before its data is read, and the final chunk
 * is checked before anything of the end is framed, so a wrong declaration
 * never lets the output end. Errors are sticky. Not thread-safe; one
 * instance per request.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_awschunked.h"
#include "util/util_assert.h"
#include "util/util_crypto.h"
#include "util/util_num.h"

#define SIG_EXT      ";chunk-signature="
#define SIG_EXT_LEN  (sizeof(SIG_EXT) - 1)
#define TSIG_NAME    "x-amz-trailer-signature"
#define TSIG_LEN     (sizeof(TSIG_NAME) - 1)
#define TRAILER_ALGO "AWS4-HMAC-SHA256-TRAILER"
#define MAX_HEX      16
/* hex size + extension + signature + CRLF, with room for nothing else */
#define MAX_LINE     (MAX_HEX + SIG_EXT_LEN + 64 + 2)
/* one trailer line, CRLF included: the longest legal one is the trailer
 * signature's (23 + 1 + 64 + 2) */
#define MAX_TLINE    128
/* framing only: the extensions of one chunk line, and the trailer */
#define MAX_EXT      1024
#define MAX_SKIPPED_TRAILER (16 * 1024)
/* unsigned data handed out per step */
#define STREAM_BLOCK (64 * 1024)
/* the body's end, framed: final chunk line, checksum line, signature
 * line, CRLF */
#define END_MAX      (MAX_LINE + 2 * MAX_TLINE + 2)

typedef enum state_e {
	ST_LINE,    /* reading a chunk's header line */
	ST_DATA,    /* reading the chunk's bytes */
	ST_CRLF,    /* reading the CRLF after them */
	ST_TRAILER, /* reading trailer lines */
	ST_DONE,    /* the end verified */
	ST_ERROR,
} state_t;

struct bc_awschunked_s {
	bc_awschunked_mode_t mode;
	bool           signed_chunks;   /* not the unsigned mode */
	bc_sigv4_ctx_t client;
	bc_sigv4_ctx_t upstream;
	bool           framed;          /* false: emit the payload alone */
	size_t         max_chunk;
	state_t        st;
	bc_s3err_t     err;

	char           line[MAX_LINE];
	size_t         line_len;
	bool           in_ext;          /* framing only: skipping ";..." */
	size_t         skipped;         /* framing only: bytes skipped (this
					   line's extensions; the trailer) */
	size_t         hex_len;         /* digits of the size, as sent */
	char           sig[65];         /* the chunk's claimed signature */
	char           prev_client[65];
	char           prev_up[65];

	size_t         size;            /* current chunk's payload bytes */
	size_t         got;
	size_t         crlf_got;
	uint64_t       decoded;
	bool           has_declared;    /* the payload's length is known */
	uint64_t       declared;

	/* trailer modes */
	bc_checksum_alg_t alg;
	bc_checksum_t  ck;              /* over the decoded payload */
	char           tline[MAX_TLINE];
	size_t         tline_len;
	char           cline[MAX_TLINE];   /* the checksum line, as sent */
	size_t         cline_len;
	size_t         cname_len;          /* its name's length */
	char           tsig[65];           /* the trailer signature sent */
	char           tsig_name[TSIG_LEN + 1];   /* its name, as sent */
	bool           have_tsig;
	char           verified[BC_CKSUM_B64_MAX];

	char          *buf;             /* frame: line + data + CRLF */
	size_t         cap;
	size_t         data_off;        /* where the data starts in buf */
	size_t         out_off;         /* pending output: [out_off, out_end) */
	size_t         out_end;
};

static const char *const mode_names[] = {
	[BC_AWSCHUNKED_SIGNED] = BC_SIGV4_STREAMING,
	[BC_AWSCHUNKED_UNSIGNED_TRAILER] = BC_SIGV4_STREAMING_UNSIGNED_TRAILER,
	[BC_AWSCHUNKED_SIGNED_TRAILER] = BC_SIGV4_STREAMING_TRAILER,
};

bool
bc_awschunked_mode_parse(const char *content_sha256,
    bc_awschunked_mode_t *mode)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(*mode_names); i++)
		/* framing only has no name of its own */
		if (content_sha256 != NULL &&
		    strcmp(content_sha256, mode_names[i]) == 0) {
			*mode = (bc_awschunked_mode_t)i;
			return true;
		}
	return false;
}

const char *
bc_awschunked_mode_name(bc_awschunked_mode_t mode)
{
	BC_CHECK((size_t)mode < sizeof(mode_names) / sizeof(*mode_names));
	return mode_names[mode];
}

bc_s3err_t
bc_awschunked_parse_trailer(const char *value, bc_checksum_alg_t *alg)
{
	bc_checksum_alg_t a;

	if (value == NULL) {
		*alg = BC_CKSUM_NONE;   /* no trailer announced */
		return BC_S3E_NONE;
	}
	a = bc_checksum_from_header(value);
	if (a == BC_CKSUM_NONE)
		return BC_S3E_InvalidRequest;
	*alg = a;
	return BC_S3E_NONE;
}

bc_awschunked_t *
bc_awschunked_new_opts(const bc_awschunked_opts_t *o)
{
	bool trailer = o->mode == BC_AWSCHUNKED_UNSIGNED_TRAILER ||
	    o->mode == BC_AWSCHUNKED_SIGNED_TRAILER;
	bool sig = o->mode == BC_AWSCHUNKED_SIGNED ||
	    o->mode == BC_AWSCHUNKED_SIGNED_TRAILER;
	bc_awschunked_t *d;

	if ((unsigned)o->mode > BC_AWSCHUNKED_FRAMING ||
	    (sig && o->client == NULL) ||
	    (sig && o->framed && o->upstream == NULL) ||
	    (!trailer && o->trailer != BC_CKSUM_NONE) ||
	    (o->mode == BC_AWSCHUNKED_FRAMING && o->framed))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->mode = o->mode;
	d->signed_chunks = sig;
	d->framed = o->framed;
	d->max_chunk = o->max_chunk;
	d->alg = o->trailer;
	if (sig) {
		d->client = *o->client;
		memcpy(d->prev_client, o->client->signature,
		    sizeof(d->prev_client));
		d->prev_client[64] = '\0';
		if (o->framed) {
			d->upstream = *o->upstream;
			memcpy(d->prev_up, o->upstream->signature,
			    sizeof(d->prev_up));
			d->prev_up[64] = '\0';
		}
	}
	if (o->trailer != BC_CKSUM_NONE &&
	    bc_checksum_init(&d->ck, o->trailer) < 0) {
		bc_awschunked_free(d);
		return NULL;
	}
	d->st = ST_LINE;
	return d;
}

bc_awschunked_t *
bc_awschunked_new(const bc_sigv4_ctx_t *client,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk)
{
	bc_awschunked_opts_t o;

	memset(&o, 0, sizeof(o));
	o.mode = BC_AWSCHUNKED_SIGNED;
	o.client = client;
	o.framed = upstream != NULL;
	o.upstream = upstream;
	o.max_chunk = max_chunk;
	return bc_awschunked_new_opts(&o);
}

bc_s3err_t
bc_awschunked_from_headers(const bc_kvlist_t *h, bc_awschunked_mode_t mode,
    const bc_sigv4_ctx_t *client, bool framed,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk, bc_awschunked_t **out)
{
	bc_awschunked_opts_t o;
	uint64_t dlen;
	bc_s3err_t e;

	*out = NULL;
	memset(&o, 0, sizeof(o));
	o.mode = mode;
	o.client = client;
	o.framed = framed;
	o.upstream = upstream;
	o.max_chunk = max_chunk;
	if (mode != BC_AWSCHUNKED_SIGNED) {
		e = bc_awschunked_parse_trailer(bc_kv_get(h, "x-amz-trailer"),
		    &o.trailer);
		if (e != BC_S3E_NONE)
			return e;
	}
	e = bc_awschunked_parse_decoded_len(bc_kv_get(h,
	    "x-amz-decoded-content-length"), &dlen);
	if (e != BC_S3E_NONE)
		return e;
	*out = bc_awschunked_new_opts(&o);
	if (*out == NULL)
		return BC_S3E_InternalError;
	bc_awschunked_set_decoded_len(*out, dlen);
	return BC_S3E_NONE;
}

bc_s3err_t
bc_awschunked_parse_decoded_len(const char *value, uint64_t *len)
{
	if (value == NULL)
		return BC_S3E_MissingContentLength;
	if (strlen(value) > 20 || !bc_u64_parse_str(value, len))
		return BC_S3E_InvalidArgument;
	return BC_S3E_NONE;
}

void
bc_awschunked_set_decoded_len(bc_awschunked_t *d, uint64_t len)
{
	BC_CHECK(d->decoded == 0 && d->st == ST_LINE);   /* before any chunk */
	d->has_declared = true;
	d->declared = len;
}

void
bc_awschunked_free(bc_awschunked_t *d)
{
	if (d == NULL)
		return;
	bc_checksum_fini(&d->ck);
	free(d->buf);
	memset(d, 0, sizeof(*d));   /* keys */
	free(d);
}

/* Makes e sticky and returns -1 for bc_awschunked_feed. */
static ssize_t
set_error(bc_awschunked_t *d, bc_s3err_t e, bc_s3err_t *err)
{
	d->st = ST_ERROR;
	d->err = e;
	d->out_off = d->out_end = 0;
	*err = e;
	return -1;
}

static bc_s3err_t
ensure_cap(bc_awschunked_t *d, size_t need)
{
	char *b;

	if (need <= d->cap)
		return BC_S3E_NONE;
	b = realloc(d->buf, need);
	if (b == NULL)
		return BC_S3E_InternalError;
	d->buf = b;
	d->cap = need;
	return BC_S3E_NONE;
}

static bool
is_lower_hex(const char *s, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!((s[k] >= '0' && s[k] <= '9') ||
		    (s[k] >= 'a' && s[k] <= 'f')))
			return false;
	return true;
}

/* Parses the complete line (ending in CRLF) into size and sig. */
static bc_s3err_t
parse_line(bc_awschunked_t *d)
{
	const char *l = d->line;
	size_t n = d->line_len, i;
	uint64_t size = 0;
	ssize_t k;

	if (n < 2 || l[n - 2] != '\r' || l[n - 1] != '\n')
		return BC_S3E_InvalidArgument;
	n -= 2;
	k = bc_parse_u64_prefix(l, n < MAX_HEX + 1 ? n : MAX_HEX + 1, 16,
	    UINT64_MAX, &size);
	if (k <= 0 || k > MAX_HEX)
		return BC_S3E_InvalidArgument;
	i = (size_t)k;
	d->hex_len = i;
	if (d->signed_chunks) {
		if (n - i != SIG_EXT_LEN + 64 ||
		    memcmp(l + i, SIG_EXT, SIG_EXT_LEN) != 0 ||
		    !is_lower_hex(l + i + SIG_EXT_LEN, 64))
			return BC_S3E_InvalidArgument;
		if (size > d->max_chunk || size > SIZE_MAX - MAX_LINE - 2)
			return BC_S3E_EntityTooLarge;
		memcpy(d->sig, l + i + SIG_EXT_LEN, 64);
		d->sig[64] = '\0';
	} else if (i != n) {
		return BC_S3E_InvalidArgument;   /* no extensions here */
	} else if ((uint64_t)(size_t)size != size) {
		return BC_S3E_EntityTooLarge;
	}
	/* past the declared length: fail now, before taking the data */
	if (d->has_declared && size > d->declared - d->decoded)
		return BC_S3E_IncompleteBody;
	d->size = (size_t)size;
	return BC_S3E_NONE;
}

/* Queues bytes [off, end) of buf as the output. */
static void
emit(bc_awschunked_t *d, size_t off, size_t end)
{
	d->out_off = off;
	d->out_end = end;
}

/* The final chunk's line was read: in the trailer modes the trailer
 * follows. Checks the payload's length, verifies a signed final chunk
 * (its upstream signature is chained now, its frame held back). */
static bc_s3err_t
final_chunk(bc_awschunked_t *d)
{
	if (d->has_declared && d->decoded != d->declared)
		return BC_S3E_IncompleteBody;
	if (d->signed_chunks) {
		char want[65];

		bc_sigv4_chunk_signature_hex(&d->client, d->prev_client,
		    BC_SIGV4_EMPTY_SHA256, want);
		if (!bc_streq_ct(want, d->sig))
			return BC_S3E_SignatureDoesNotMatch;
		memcpy(d->prev_client, d->sig, sizeof(d->prev_client));
		if (d->framed)
			bc_sigv4_chunk_signature_hex(&d->upstream, d->prev_up,
			    BC_SIGV4_EMPTY_SHA256, d->prev_up);
	}
	d->tline_len = 0;
	d->st = ST_TRAILER;
	return BC_S3E_NONE;
}

/* The chunk's line was read: make room, or go to the trailer. */
static bc_s3err_t
start_chunk(bc_awschunked_t *d)
{
	bc_s3err_t e;

	d->got = 0;
	d->crlf_got = 0;
	if (d->size == 0 && d->mode != BC_AWSCHUNKED_SIGNED)
		return final_chunk(d);
	if (d->signed_chunks) {
		e = ensure_cap(d, d->line_len + d->size + 2);
		if (e != BC_S3E_NONE)
			return e;
		d->data_off = d->line_len;
		d->st = d->size > 0 ? ST_DATA : ST_CRLF;
		return BC_S3E_NONE;
	}
	e = ensure_cap(d, STREAM_BLOCK > MAX_LINE ? STREAM_BLOCK : MAX_LINE);
	if (e != BC_S3E_NONE)
		return e;
	d->st = ST_DATA;
	if (d->framed) {
		/* the line as sent goes first */
		memcpy(d->buf, d->line, d->line_len);
		emit(d, 0, d->line_len);
	}
	return BC_S3E_NONE;
}

/* Unsigned data: takes up to n bytes at p into the output; returns how
 * many it took. */
static size_t
take_unsigned(bc_awschunked_t *d, const char *p, size_t n)
{
	if (n > STREAM_BLOCK)
		n = STREAM_BLOCK;
	memcpy(d->buf, p, n);
	bc_checksum_update(&d->ck, p, n);
	d->got += n;
	d->decoded += n;
	if (d->got == d->size)
		d->st = ST_CRLF;
	emit(d, 0, n);
	return n;
}

/* A chunk's CRLF was read: verify a signed chunk, then frame it for
 * output; an unsigned one only needs its CRLF passed on. */
static bc_s3err_t
end_chunk(bc_awschunked_t *d)
{
	const char *data = d->buf + d->data_off;
	char hash[65], want[65];

	d->line_len = 0;
	d->st = ST_LINE;
	if (!d->signed_chunks) {
		if (d->framed) {
			memcpy(d->buf, "\r\n", 2);
			emit(d, 0, 2);
		}
		return BC_S3E_NONE;
	}
	bc_sha256_hex(data, d->size, hash);
	bc_sigv4_chunk_signature_hex(&d->client, d->prev_client, hash, want);
	if (!bc_streq_ct(want, d->sig))
		return BC_S3E_SignatureDoesNotMatch;
	memcpy(d->prev_client, d->sig, sizeof(d->prev_client));
	d->decoded += d->size;
	if (d->mode == BC_AWSCHUNKED_SIGNED_TRAILER)
		bc_checksum_update(&d->ck, data, d->size);
	/* the final chunk ends the body only at the declared length */
	if (d->size == 0 && d->has_declared && d->decoded != d->declared)
		return BC_S3E_IncompleteBody;
	if (d->framed) {
		char *p = d->buf;

		bc_sigv4_chunk_signature_hex(&d->upstream, d->prev_up, hash,
		    d->prev_up);
		/* same size text as the client's: same frame length */
		memcpy(p, d->line, d->hex_len);
		p += d->hex_len;
		memcpy(p, SIG_EXT, SIG_EXT_LEN);
		p += SIG_EXT_LEN;
		memcpy(p, d->prev_up, 64);
		p += 64;
		memcpy(p, "\r\n", 2);
		memcpy(d->buf + d->data_off + d->size, "\r\n", 2);
		emit(d, 0, d->data_off + d->size + 2);
	} else {
		emit(d, d->data_off, d->data_off + d->size);
	}
	if (d->size == 0)
		d->st = ST_DONE;
	return BC_S3E_NONE;
}

/* The trailer signature (hex) of the checksum line under ctx, chained
 * from prev. */
static void
trailer_signature(const bc_awschunked_t *d, const bc_sigv4_ctx_t *ctx,
    const char *prev, char sig[65])
{
	char canon[MAX_TLINE], hash[65];
	bc_buf_t sts = BC_BUF_INIT;
	uint8_t mac[BC_SHA256_LEN];
	size_t n = d->cline_len > 0 ? d->cline_len - 2 : 0;   /* no CRLF */

	/* "name:value\n", the name in lower case */
	for (size_t i = 0; i < n; i++)
		canon[i] = i < d->cname_len ?
		    (char)tolower((unsigned char)d->cline[i]) : d->cline[i];
	canon[n] = '\n';
	bc_sha256_hex(canon, d->cline_len > 0 ? n + 1 : 0, hash);
	/* out of memory for 200 bytes */
	BC_AZ(bc_buf_printf(&sts, TRAILER_ALGO "\n%s\n%s\n%s\n%s",
	    ctx->amz_date, ctx->scope, prev, hash) < 0);
	bc_hmac_sha256(ctx->key, sizeof(ctx->key), sts.data, sts.len, mac);
	bc_hex(mac, sizeof(mac), sig);
	bc_buf_fini(&sts);
}

/* The empty line ended the trailer: check it all, then frame the end. */
static bc_s3err_t
end_trailer(bc_awschunked_t *d)
{
	char sum[BC_CKSUM_B64_MAX], want[65];
	const char *value = d->cline + d->cname_len + 1;
	size_t vlen, o = 0;
	char *p;

	if (d->cline_len == 0 && d->alg != BC_CKSUM_NONE)
		return BC_S3E_MalformedTrailerError;   /* no checksum */
	if (d->mode == BC_AWSCHUNKED_SIGNED_TRAILER) {
		if (!d->have_tsig)
			return BC_S3E_SignatureDoesNotMatch;
		trailer_signature(d, &d->client, d->prev_client, want);
		if (!bc_streq_ct(want, d->tsig))
			return BC_S3E_SignatureDoesNotMatch;
	}
	if (d->alg != BC_CKSUM_NONE) {
		bc_checksum_final(&d->ck, sum);
		vlen = d->cline_len - 2 - d->cname_len - 1;
		if (strlen(sum) != vlen || memcmp(sum, value, vlen) != 0)
			return BC_S3E_BadDigest;
		memcpy(d->verified, sum, sizeof(d->verified));
	}
	d->st = ST_DONE;
	if (!d->framed)
		return BC_S3E_NONE;
	if (ensure_cap(d, END_MAX) != BC_S3E_NONE)
		return BC_S3E_InternalError;
	p = d->buf;
	/* the final chunk, its size text as sent */
	memcpy(p, d->line, d->hex_len);
	o += d->hex_len;
	if (d->signed_chunks) {
		memcpy(p + o, SIG_EXT, SIG_EXT_LEN);
		o += SIG_EXT_LEN;
		memcpy(p + o, d->prev_up, 64);
		o += 64;
	}
	memcpy(p + o, "\r\n", 2);
	o += 2;
	memcpy(p + o, d->cline, d->cline_len);
	o += d->cline_len;
	if (d->signed_chunks) {
		trailer_signature(d, &d->upstream, d->prev_up, want);
		/* the name as sent: same length */
		memcpy(p + o, d->tsig_name, TSIG_LEN);
		o += TSIG_LEN;
		p[o++] = ':';
		memcpy(p + o, want, 64);
		o += 64;
		memcpy(p + o, "\r\n", 2);
		o += 2;
	}
	memcpy(p + o, "\r\n", 2);
	emit(d, 0, o + 2);
	return BC_S3E_NONE;
}

static bool
is_value_char(char c)
{
	return (unsigned char)c > ' ' && (unsigned char)c < 127;
}

/* Framing only: one byte of the trailer, whose lines are skipped; the
 * empty line ends it. tline holds the current line's last byte. */
static bc_s3err_t
skip_trailer(bc_awschunked_t *d, char c)
{
	if (++d->skipped > MAX_SKIPPED_TRAILER)
		return BC_S3E_MalformedTrailerError;
	if (c != '\n') {
		d->tline[0] = c;
		d->tline_len++;
		return BC_S3E_NONE;
	}
	if (d->tline_len == 0 || d->tline[0] != '\r')
		return BC_S3E_MalformedTrailerError;   /* a bare LF */
	if (d->tline_len == 1)
		return end_trailer(d);
	d->tline_len = 0;
	return BC_S3E_NONE;
}

/* One complete trailer line in tline (CRLF included): the checksum, then
 * (signed mode) the signature, then the empty line that ends them. */
static bc_s3err_t
trailer_line(bc_awschunked_t *d)
{
	const char *l = d->tline, *colon;
	size_t n = d->tline_len, nlen;

	if (n < 2 || l[n - 2] != '\r')
		return BC_S3E_MalformedTrailerError;
	n -= 2;
	if (n == 0)
		return end_trailer(d);
	if (d->have_tsig)
		return BC_S3E_MalformedTrailerError;   /* the signature is last */
	colon = memchr(l, ':', n);
	if (colon == NULL || colon == l)
		return BC_S3E_MalformedTrailerError;
	nlen = (size_t)(colon - l);
	for (size_t i = nlen + 1; i < n; i++)
		if (!is_value_char(l[i]))
			return BC_S3E_MalformedTrailerError;
	if (d->alg != BC_CKSUM_NONE &&
	    nlen == strlen(bc_checksum_header(d->alg)) &&
	    strncasecmp(l, bc_checksum_header(d->alg), nlen) == 0) {
		if (d->cline_len > 0)
			return BC_S3E_MalformedTrailerError;   /* repeated */
		if (!bc_checksum_value_ok(d->alg, colon + 1, n - nlen - 1))
			return BC_S3E_InvalidRequest;
		memcpy(d->cline, l, n + 2);
		d->cline_len = n + 2;
		d->cname_len = nlen;
		d->tline_len = 0;
		return BC_S3E_NONE;
	}
	if (nlen == TSIG_LEN && strncasecmp(l, TSIG_NAME, nlen) == 0 &&
	    d->mode == BC_AWSCHUNKED_SIGNED_TRAILER &&
	    (d->cline_len > 0 || d->alg == BC_CKSUM_NONE)) {
		if (n - nlen - 1 != 64 || !is_lower_hex(colon + 1, 64))
			return BC_S3E_SignatureDoesNotMatch;
		memcpy(d->tsig, colon + 1, 64);
		d->tsig[64] = '\0';
		memcpy(d->tsig_name, l, TSIG_LEN);
		d->tsig_name[TSIG_LEN] = '\0';
		d->have_tsig = true;
		d->tline_len = 0;
		return BC_S3E_NONE;
	}
	return BC_S3E_MalformedTrailerError;
}

ssize_t
bc_awschunked_feed(bc_awschunked_t *d, const char *in, size_t len,
    bc_s3err_t *err)
{
	size_t used = 0;
	bc_s3err_t e;

	if (d->st == ST_ERROR) {
		*err = d->err;
		return -1;
	}
	if (d->out_off < d->out_end)
		return 0;
	while (used < len) {
		switch (d->st) {
		case ST_LINE:
			if (d->mode == BC_AWSCHUNKED_FRAMING &&
			    (d->in_ext || in[used] == ';')) {
				/* framing only: extensions are skipped up to
				 * the line's CR */
				d->in_ext = in[used] != '\r';
				if (in[used] == '\n' ||
				    ++d->skipped > MAX_EXT)
					return set_error(d,
					    BC_S3E_InvalidArgument, err);
				if (d->in_ext) {
					used++;
					break;
				}
			}
			if (d->line_len == sizeof(d->line))
				return set_error(d, BC_S3E_InvalidArgument,
				    err);
			d->line[d->line_len++] = in[used++];
			if (d->line[d->line_len - 1] != '\n')
				break;
			d->skipped = 0;
			e = parse_line(d);
			if (e == BC_S3E_NONE)
				e = start_chunk(d);
			if (e != BC_S3E_NONE)
				return set_error(d, e, err);
			if (d->out_off < d->out_end)
				return (ssize_t)used;
			break;
		case ST_DATA: {
			size_t n = d->size - d->got;

			if (n > len - used)
				n = len - used;
			if (!d->signed_chunks) {
				used += take_unsigned(d, in + used, n);
				return (ssize_t)used;
			}
			memcpy(d->buf + d->data_off + d->got, in + used, n);
			d->got += n;
			used += n;
			if (d->got == d->size)
				d->st = ST_CRLF;
			break;
		}
		case ST_CRLF:
			if (in[used++] != "\r\n"[d->crlf_got])
				/* after the final chunk: a trailer where
				 * this mode has none */
				return set_error(d,
				    d->size == 0 && d->crlf_got == 0 ?
				    BC_S3E_MalformedTrailerError :
				    BC_S3E_InvalidArgument, err);
			d->crlf_got++;
			if (d->crlf_got < 2)
				break;
			e = end_chunk(d);
			if (e != BC_S3E_NONE)
				return set_error(d, e, err);
			/* hand out the chunk before reading on */
			return (ssize_t)used;
		case ST_TRAILER:
			if (d->mode == BC_AWSCHUNKED_FRAMING) {
				e = skip_trailer(d, in[used++]);
				if (e != BC_S3E_NONE)
					return set_error(d, e, err);
				if (d->st == ST_DONE)
					return (ssize_t)used;
				break;
			}
			if (d->tline_len == sizeof(d->tline))
				return set_error(d,
				    BC_S3E_MalformedTrailerError,
				    err);
			d->tline[d->tline_len++] = in[used++];
			if (d->tline[d->tline_len - 1] != '\n')
				break;
			e = trailer_line(d);
			if (e != BC_S3E_NONE)
				return set_error(d, e, err);
			if (d->st == ST_DONE)
				return (ssize_t)used;
			break;
		case ST_DONE:
			d->out_off = d->out_end = 0;
			return set_error(d, BC_S3E_InvalidArgument, err);
		case ST_ERROR:
			*err = d->err;
			return -1;
		}
	}
	return (ssize_t)used;
}

size_t
bc_awschunked_output(bc_awschunked_t *d, const char **p)
{
	if (d->out_off == d->out_end) {
		*p = "";
		return 0;
	}
	*p = d->buf + d->out_off;
	return d->out_end - d->out_off;
}

void
bc_awschunked_consume(bc_awschunked_t *d, size_t n)
{
	if (n > d->out_end - d->out_off)
		n = d->out_end - d->out_off;
	d->out_off += n;
}

bool
bc_awschunked_done(const bc_awschunked_t *d)
{
	return d->st == ST_DONE && d->out_off == d->out_end;
}

bc_s3err_t
bc_awschunked_finish(const bc_awschunked_t *d)
{
	if (d->st == ST_ERROR)
		return d->err;
	return d->st == ST_DONE ? BC_S3E_NONE : BC_S3E_IncompleteBody;
}

uint64_t
bc_awschunked_decoded_len(const bc_awschunked_t *d)
{
	return d->decoded;
}

const char *
bc_awschunked_checksum(const bc_awschunked_t *d)
{
	if (d->st != ST_DONE || d->alg == BC_CKSUM_NONE)
		return NULL;
	return d->verified;
}
