/*
 * fuzz_s3_request.c — bc_s3_req_parse (s3/s3_request.h) on a request in
 * the text form of fuzz.h ("METHOD TARGET" then header lines), parsed
 * path-style (no --domain) and virtual-hosted style (--domain
 * s3.example.test), and bc_s3_pct_decode on the raw target; the headers
 * x-amz-copy-source (bc_s3_copy_source_parse) and
 * x-amz-decoded-content-length (bc_awschunked_parse_decoded_len).
 *
 * Checks what the header promises of a parse that succeeds: a bucket
 * and key were decoded, the key is at most BC_S3_MAX_KEY bytes, a key
 * implies a bucket, the operation is a known one; a copy source names a
 * valid bucket and a key; a decoded length is the decimal it was.
 */
#include "fuzz.h"
#include "s3/s3_awschunked.h"

#define INPUT_MAX 8192

static const char *const domains[] = { NULL, "s3.example.test" };

/* x-amz-copy-source and x-amz-decoded-content-length, parsed as the
 * handlers parse them. */
static void
check_headers(const bc_s3_req_t *r)
{
	const char *cs = bc_kv_get(&r->headers, "x-amz-copy-source");
	const char *dl = bc_kv_get(&r->headers,
	    "x-amz-decoded-content-length");
	char *bucket, *key;
	uint64_t len;

	if (bc_s3_copy_source_parse(cs, &bucket, &key) == BC_S3E_NONE) {
		FUZZ_CHECK(bucket != NULL && key != NULL);
		FUZZ_CHECK(bucket[0] != '\0' && key[0] != '\0');
		FUZZ_CHECK(bc_s3_bucket_name_ok(bucket));
		FUZZ_CHECK(strlen(key) <= BC_S3_MAX_KEY);
	} else {
		FUZZ_CHECK(bucket == NULL && key == NULL);
	}
	free(bucket);
	free(key);
	if (bc_awschunked_parse_decoded_len(dl, &len) == BC_S3E_NONE) {
		FUZZ_CHECK(dl != NULL && dl[0] != '\0');
		FUZZ_CHECK(strspn(dl, "0123456789") == strlen(dl));
		FUZZ_CHECK(strtoull(dl, NULL, 10) == len);
	}
}

static void
check(const bc_s3_req_t *r, bc_s3err_t e)
{
	check_headers(r);
	if (e != BC_S3E_NONE)
		return;
	FUZZ_CHECK(r->op < BC_S3OP__COUNT);
	FUZZ_CHECK(bc_s3op_name(r->op) != NULL);
	(void)bc_s3op_writes_object(r->op);
	FUZZ_CHECK(r->raw_path != NULL && r->raw_query != NULL);
	FUZZ_CHECK(r->path != NULL && r->bucket != NULL && r->key != NULL);
	if (r->op == BC_S3OP_Admin)
		return;
	FUZZ_CHECK(strlen(r->key) <= BC_S3_MAX_KEY);
	FUZZ_CHECK(strlen(r->bucket) <= BC_S3_MAX_BUCKET);
	FUZZ_CHECK(r->key[0] == '\0' || r->bucket[0] != '\0');
	FUZZ_CHECK(r->query.n <= BC_S3_MAX_QUERY);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw;

	if (size > INPUT_MAX)
		return 0;
	for (size_t i = 0; i < sizeof(domains) / sizeof(*domains); i++) {
		bc_s3_req_t r;
		bc_s3err_t e;

		e = fuzz_req_parse(&r, data, size, domains[i]);
		check(&r, e);
		bc_s3_req_fini(&r);
	}
	raw = fuzz_strndup(data, size);
	free(bc_s3_pct_decode(raw, strlen(raw)));
	free(raw);
	return 0;
}
