/*
 * test_http_warm_cli.c — `bucketcache warm`'s target (http_warm_cli.h):
 * s3://BUCKET[/PREFIX] into a valid bucket name and a prefix, anything
 * else refused.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_warm_cli.h"
#include "s3/s3_request.h"
#include "util/util_error.h"

LTest(warm_cli, targets)
{
	static const struct {
		const char *in, *bucket, *prefix;
	} ok[] = {
		{ "s3://b1x", "b1x", "" },
		{ "s3://b1x/", "b1x", "" },
		{ "s3://my-data.set/train/", "my-data.set", "train/" },
		{ "s3://b1x/a b/c?d", "b1x", "a b/c?d" },
	};
	static const char *const bad[] = {
		NULL, "", "b1x/p", "s3:/b1x", "s3://", "s3:///p", "S3://b1x",
		"s3://_bucketcache/p", "s3://b@d/p", "s3://../p",
	};
	char bucket[BC_S3_MAX_BUCKET + 1], longp[BC_S3_MAX_KEY + 16];
	const char *prefix;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(bc_http_warm_cli_target(ok[i].in, bucket,
		    sizeof(bucket), &prefix), 0, "%s", ok[i].in);
		cr_assert_str_eq(bucket, ok[i].bucket);
		cr_assert_str_eq(prefix, ok[i].prefix);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(bc_http_warm_cli_target(bad[i], bucket,
		    sizeof(bucket), &prefix), BC_EINVAL, "%s",
		    bad[i] != NULL ? bad[i] : "NULL");
	/* the bucket must fit its buffer, the prefix S3's key bound */
	cr_assert_eq(bc_http_warm_cli_target("s3://abcdef/p", bucket, 4,
	    &prefix), BC_EINVAL);
	strcpy(longp, "s3://b1x/");
	memset(longp + 9, 'k', BC_S3_MAX_KEY + 1);
	longp[9 + BC_S3_MAX_KEY + 1] = '\0';
	cr_assert_eq(bc_http_warm_cli_target(longp, bucket, sizeof(bucket),
	    &prefix), BC_EINVAL);
	longp[9 + BC_S3_MAX_KEY] = '\0';
	cr_assert_eq(bc_http_warm_cli_target(longp, bucket, sizeof(bucket),
	    &prefix), 0);
}
