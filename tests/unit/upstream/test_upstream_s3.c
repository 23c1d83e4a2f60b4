/*
 * test_upstream_s3.c — upstream/upstream_s3: the S3 origin's set-up from
 * the config (bad --upstream refused) and its request building: URL and
 * Host per addressing style, signed (Authorization over the payload hash,
 * date, token) or unsigned (nothing of the credentials), the signing
 * context handed back.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "config/config.h"
#include "upstream/upstream_s3.h"

static void
cfg_for(bc_config_t *c, const char *upstream, const char *addressing,
    const char *token)
{
	cr_assert_eq(bc_config_init(c), 0);
	free(c->upstream);
	free(c->upstream_addressing);
	free(c->access_key);
	free(c->secret_key);
	c->upstream = strdup(upstream);
	c->upstream_addressing = strdup(addressing);
	c->access_key = strdup("AKIDEXAMPLE");
	c->secret_key = strdup("secret");
	if (token != NULL) {
		free(c->session_token);
		c->session_token = strdup(token);
	}
}

LTest(s3_origin, bad_upstream_is_refused)
{
	static const char *const bad[] = { "127.0.0.1:9000", "http://",
	    "http:///bucket", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		bc_config_t c;
		bc_s3_origin_t o;
		char err[200];

		cfg_for(&c, bad[i], "path", NULL);
		cr_expect_eq(bc_s3_origin_init(&o, &c, err, sizeof(err)), -1,
		    "%s", bad[i]);
		cr_expect_not_null(strstr(err, "--upstream: '"), "%s", err);
		bc_s3_origin_fini(&o);
		bc_config_fini(&c);
	}
}

LTest(s3_origin, path_style_signed)
{
	bc_config_t c;
	bc_s3_origin_t o;
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t h = BC_KVLIST_INIT, q = BC_KVLIST_INIT;
	bc_sigv4_ctx_t ctx;
	char err[200];
	const char *a;

	cfg_for(&c, "http://s3.example:9000/ignored", "path", "TOKEN");
	cr_assert_eq(bc_s3_origin_init(&o, &c, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_str_eq(o.scheme_host, "http://s3.example:9000");
	cr_assert_str_eq(o.host, "s3.example:9000");
	bc_kv_add(&h, "Range", "bytes=0-9");
	bc_kv_add(&q, "partNumber", "2");
	cr_assert_eq(bc_s3_origin_request(&o, "GET", "bkt", "a b/c", false,
	    &q, "UNSIGNED-PAYLOAD", false, &url, &h, &ctx), 0);
	cr_expect_str_eq(bc_buf_str(&url),
	    "http://s3.example:9000/bkt/a%20b/c?partNumber=2");
	cr_expect_str_eq(bc_kv_get(&h, "Host"), "s3.example:9000");
	cr_expect_str_eq(bc_kv_get(&h, "x-amz-content-sha256"),
	    "UNSIGNED-PAYLOAD");
	cr_expect_str_eq(bc_kv_get(&h, "x-amz-security-token"), "TOKEN");
	cr_expect_not_null(bc_kv_get(&h, "X-Amz-Date"));
	a = bc_kv_get(&h, "Authorization");
	cr_assert_not_null(a);
	cr_expect_not_null(strstr(a, "Credential=AKIDEXAMPLE/"), "%s", a);
	cr_expect_not_null(strstr(a, "/us-east-1/s3/aws4_request"), "%s", a);
	/* what bc_sigv4_sign signs: Host and the x-amz-* headers */
	cr_expect_not_null(strstr(a, "SignedHeaders=host;x-amz-content-sha256;"
	    "x-amz-date;x-amz-security-token,"), "%s", a);
	cr_expect_eq(strlen(ctx.signature), 64, "the context carries it");
	cr_expect_not_null(strstr(a, ctx.signature));
	bc_buf_fini(&url);
	bc_kv_fini(&h);
	bc_kv_fini(&q);
	bc_s3_origin_fini(&o);
	bc_s3_origin_fini(&o);   /* twice is harmless */
	bc_config_fini(&c);
}

LTest(s3_origin, virtual_style_unsigned)
{
	bc_config_t c;
	bc_s3_origin_t o;
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t h = BC_KVLIST_INIT;
	bc_sigv4_ctx_t ctx;
	char err[200];

	cfg_for(&c, "https://s3.example", "virtual", "TOKEN");
	cr_assert_eq(bc_s3_origin_init(&o, &c, err, sizeof(err)), 0, "%s",
	    err);
	memset(&ctx, 0xaa, sizeof(ctx));
	cr_assert_eq(bc_s3_origin_request(&o, "HEAD", "bkt", "k", false, NULL,
	    "UNSIGNED-PAYLOAD", true, &url, &h, &ctx), 0);
	cr_expect_str_eq(bc_buf_str(&url), "https://bkt.s3.example/k");
	cr_expect_str_eq(bc_kv_get(&h, "Host"), "bkt.s3.example");
	/* nothing of the credentials */
	cr_expect_null(bc_kv_get(&h, "Authorization"));
	cr_expect_null(bc_kv_get(&h, "X-Amz-Date"));
	cr_expect_null(bc_kv_get(&h, "x-amz-security-token"));
	cr_expect_null(bc_kv_get(&h, "x-amz-content-sha256"));
	cr_expect_eq(ctx.signature[0], '\0', "the context is zeroed");
	bc_buf_fini(&url);
	bc_kv_fini(&h);
	bc_s3_origin_fini(&o);
	bc_config_fini(&c);
}
