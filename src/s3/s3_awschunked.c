/*
 * s3_awschunked.c — streaming verifier and re-signer for aws-chunked
 * (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) bodies (see s3_awschunked.h).
 *
 * A state machine over the client's bytes: chunk header line (bounded),
 * data (buffered whole, at most max_chunk), CRLF. A chunk is verified
 * against the client's signature chain once complete, then framed into
 * the output buffer with the same size text and the upstream's chained
 * signature (same length), so output length == input length. With a
 * declared payload length, a chunk announced past it fails before its
 * data is read, and the final chunk is checked before it is framed, so
 * a wrong declaration never lets the output end. Errors are sticky. Not
 * thread-safe; one instance per request.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_awschunked.h"
#include "util/util_crypto.h"

#define SIG_EXT     ";chunk-signature="
#define SIG_EXT_LEN (sizeof(SIG_EXT) - 1)
#define MAX_HEX     16
/* hex size + extension + signature + CRLF, with room for nothing else */
#define MAX_LINE    (MAX_HEX + SIG_EXT_LEN + 64 + 2)

typedef enum state_e {
	ST_LINE,    /* reading "hex;chunk-signature=sig\r\n" */
	ST_DATA,    /* reading the chunk's bytes */
	ST_CRLF,    /* reading the CRLF after them */
	ST_DONE,    /* final chunk verified */
	ST_ERROR,
} state_t;

struct bc_awschunked_s {
	bc_sigv4_ctx_t client;
	bc_sigv4_ctx_t upstream;
	bool           framed;          /* false: emit the payload alone */
	size_t         max_chunk;
	state_t        st;
	bc_s3err_t     err;

	char           line[MAX_LINE];
	size_t         line_len;
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

	char          *buf;             /* frame: line + data + CRLF */
	size_t         cap;
	size_t         data_off;        /* where the data starts in buf */
	size_t         out_off;         /* pending output: [out_off, out_end) */
	size_t         out_end;
};

bc_awschunked_t *
bc_awschunked_new(const bc_sigv4_ctx_t *client,
    const bc_sigv4_ctx_t *upstream, size_t max_chunk)
{
	bc_awschunked_t *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->client = *client;
	if (upstream != NULL) {
		d->upstream = *upstream;
		d->framed = true;
		memcpy(d->prev_up, upstream->signature, sizeof(d->prev_up));
		d->prev_up[64] = '\0';
	}
	memcpy(d->prev_client, client->signature, sizeof(d->prev_client));
	d->prev_client[64] = '\0';
	d->max_chunk = max_chunk;
	d->st = ST_LINE;
	return d;
}

bc_s3err_t
bc_awschunked_parse_decoded_len(const char *value, uint64_t *len)
{
	uint64_t n = 0;
	size_t i;

	if (value == NULL)
		return BC_S3E_MissingContentLength;
	for (i = 0; value[i] >= '0' && value[i] <= '9'; i++) {
		unsigned dig = (unsigned)(value[i] - '0');

		if (i >= 20 || n > (UINT64_MAX - dig) / 10)
			return BC_S3E_InvalidArgument;
		n = n * 10 + dig;
	}
	if (i == 0 || value[i] != '\0')
		return BC_S3E_InvalidArgument;
	*len = n;
	return BC_S3E_NONE;
}

void
bc_awschunked_set_decoded_len(bc_awschunked_t *d, uint64_t len)
{
	assert(d->decoded == 0 && d->st == ST_LINE);   /* before any chunk */
	d->has_declared = true;
	d->declared = len;
}

void
bc_awschunked_free(bc_awschunked_t *d)
{
	if (d == NULL)
		return;
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

/* Parses the complete line (ending in CRLF) into size and sig. */
static bc_s3err_t
parse_line(bc_awschunked_t *d)
{
	const char *l = d->line;
	size_t n = d->line_len, i = 0;
	uint64_t size = 0;

	if (n < 2 || l[n - 2] != '\r' || l[n - 1] != '\n')
		return BC_S3E_InvalidArgument;
	n -= 2;
	while (i < n && bc_hexval(l[i]) >= 0) {
		size = size * 16 + (uint64_t)bc_hexval(l[i]);
		i++;
		if (i > MAX_HEX)
			return BC_S3E_InvalidArgument;
	}
	if (i == 0)
		return BC_S3E_InvalidArgument;
	d->hex_len = i;
	if (n - i != SIG_EXT_LEN + 64 ||
	    memcmp(l + i, SIG_EXT, SIG_EXT_LEN) != 0)
		return BC_S3E_InvalidArgument;
	for (size_t k = i + SIG_EXT_LEN; k < n; k++)
		if (!((l[k] >= '0' && l[k] <= '9') ||
		    (l[k] >= 'a' && l[k] <= 'f')))
			return BC_S3E_InvalidArgument;
	if (size > d->max_chunk || size > SIZE_MAX - MAX_LINE - 2)
		return BC_S3E_EntityTooLarge;
	/* past the declared length: fail now, before buffering the data */
	if (d->has_declared && size > d->declared - d->decoded)
		return BC_S3E_IncompleteBody;
	memcpy(d->sig, l + i + SIG_EXT_LEN, 64);
	d->sig[64] = '\0';
	d->size = (size_t)size;
	return BC_S3E_NONE;
}

/* Makes room for the frame of the chunk just announced. */
static bc_s3err_t
start_chunk(bc_awschunked_t *d)
{
	size_t need = d->line_len + d->size + 2;

	if (need > d->cap) {
		char *b = realloc(d->buf, need);

		if (b == NULL)
			return BC_S3E_InternalError;
		d->buf = b;
		d->cap = need;
	}
	d->data_off = d->line_len;
	d->got = 0;
	d->crlf_got = 0;
	d->st = d->size > 0 ? ST_DATA : ST_CRLF;
	return BC_S3E_NONE;
}

/* The chunk is complete: verify, then frame it for output. */
static bc_s3err_t
end_chunk(bc_awschunked_t *d)
{
	const char *data = d->buf + d->data_off;
	char hash[65], want[65];

	bc_sha256_hex(data, d->size, hash);
	bc_sigv4_chunk_signature_hex(&d->client, d->prev_client, hash, want);
	if (!bc_streq_ct(want, d->sig))
		return BC_S3E_SignatureDoesNotMatch;
	memcpy(d->prev_client, d->sig, sizeof(d->prev_client));
	d->decoded += d->size;
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
		d->out_off = 0;
		d->out_end = d->data_off + d->size + 2;
	} else {
		d->out_off = d->data_off;
		d->out_end = d->data_off + d->size;
	}
	d->line_len = 0;
	d->st = d->size == 0 ? ST_DONE : ST_LINE;
	return BC_S3E_NONE;
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
			if (d->line_len == sizeof(d->line))
				return set_error(d, BC_S3E_InvalidArgument,
				    err);
			d->line[d->line_len++] = in[used++];
			if (d->line[d->line_len - 1] != '\n')
				break;
			e = parse_line(d);
			if (e == BC_S3E_NONE)
				e = start_chunk(d);
			if (e != BC_S3E_NONE)
				return set_error(d, e, err);
			break;
		case ST_DATA: {
			size_t n = d->size - d->got;

			if (n > len - used)
				n = len - used;
			memcpy(d->buf + d->data_off + d->got, in + used, n);
			d->got += n;
			used += n;
			if (d->got == d->size)
				d->st = ST_CRLF;
			break;
		}
		case ST_CRLF:
			if (in[used++] != "\r\n"[d->crlf_got])
				return set_error(d, BC_S3E_InvalidArgument,
				    err);
			d->crlf_got++;
			if (d->crlf_got < 2)
				break;
			e = end_chunk(d);
			if (e != BC_S3E_NONE)
				return set_error(d, e, err);
			/* hand out the chunk before reading on */
			return (ssize_t)used;
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
