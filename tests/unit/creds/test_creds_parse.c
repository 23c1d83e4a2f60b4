/*
 * test_creds_parse.c — creds/creds_parse: the ECS/IMDS JSON answers, the
 * STS AssumeRoleWithWebIdentity XML answer and its errors, the IMDS role
 * list, and the ISO 8601 expirations they carry (s3/s3_date); documents
 * as the services send them, then hostile ones (bad syntax, deep nesting,
 * duplicates, header-breaking values, oversize), each a clear error and
 * never a secret in the message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "creds/creds_parse.h"
#include "s3/s3_date.h"
#include "util/util_error.h"

/* 2017-05-17T15:09:54Z */
#define EXP_MS 1495033794000LL

static char err[512];

static int
json(const char *doc, bc_creds_snap_t **s)
{
	err[0] = '\0';
	return bc_creds_parse_json(doc, strlen(doc), s, err, sizeof(err));
}

static int
sts(const char *doc, bc_creds_snap_t **s)
{
	err[0] = '\0';
	return bc_creds_parse_sts(doc, strlen(doc), s, err, sizeof(err));
}

/* ---- ISO 8601 ------------------------------------------------------------- */

LTest(iso8601, forms_the_services_write)
{
	static const struct { const char *s; time_t t; } ok[] = {
		{ "2017-05-17T15:09:54Z", 1495033794 },
		{ "2017-05-17T15:09:54.000Z", 1495033794 },
		{ "2017-05-17T15:09:54.123456789Z", 1495033794 },
		{ "2017-05-17t15:09:54z", 1495033794 },
		{ "2017-05-17T17:09:54+02:00", 1495033794 },
		{ "2017-05-17T10:39:54-0430", 1495033794 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "2024-02-29T23:59:60Z", 1709251199 },
	};
	static const char *const bad[] = { "", "2017-05-17", "2017-05-17T15:09Z",
	    "2017-05-17T15:09:54", "2017-05-17 15:09:54Z", " 2017-05-17T15:09:54Z",
	    "2017-05-17T15:09:54Z ", "2017-13-17T15:09:54Z", "2017-02-30T15:09:54Z",
	    "2017-05-17T24:09:54Z", "2017-05-17T15:09:54.Z", "2017-05-17T15:09:54+2",
	    "2017-05-17T15:09:54+24:00", "2017-05-17T15:09:54.1234567890Z",
	    "20170517T150954Z", "2017-5-17T15:09:54Z", "+2017-05-17T15:09:54Z",
	    "2017-05-17T15:09:54+02:00:00" };
	time_t t;

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		cr_expect_eq(bc_iso8601_parse(ok[i].s, &t), 0, "%s", ok[i].s);
		cr_expect_eq(t, ok[i].t, "%s: %lld", ok[i].s, (long long)t);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		cr_expect_eq(bc_iso8601_parse(bad[i], &t), BC_EINVAL, "%s",
		    bad[i]);
	cr_expect_eq(bc_iso8601_parse(NULL, &t), BC_EINVAL);
}

/* ---- JSON: ECS and IMDS --------------------------------------------------- */

LTest(json, imds_answer)
{
	bc_creds_snap_t *s = NULL;

	cr_assert_eq(json("{\n  \"Code\" : \"Success\",\n"
	    "  \"LastUpdated\" : \"2012-04-26T16:39:16Z\",\n"
	    "  \"Type\" : \"AWS-HMAC\",\n"
	    "  \"AccessKeyId\" : \"ASIAIOSFODNN7EXAMPLE\",\n"
	    "  \"SecretAccessKey\" : \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\",\n"
	    "  \"Token\" : \"IQoJb3JpZ2luX2VjEJ//////////wEaCXVzLWVhc3QtMSJH==\",\n"
	    "  \"Expiration\" : \"2017-05-17T15:09:54Z\"\n}\n", &s), 0, "%s",
	    err);
	cr_assert_not_null(s);
	cr_expect_str_eq(s->access_key, "ASIAIOSFODNN7EXAMPLE");
	cr_expect_str_eq(s->secret_key,
	    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	cr_expect_str_eq(s->session_token,
	    "IQoJb3JpZ2luX2VjEJ//////////wEaCXVzLWVhc3QtMSJH==");
	cr_expect_eq(s->expiration_ms, EXP_MS);
	bc_creds_snap_unref(s);
}

LTest(json, ecs_answer_any_order_unknown_members_skipped)
{
	bc_creds_snap_t *s = NULL;

	/* ECS / EKS Pod Identity add members; order is free; escapes */
	cr_assert_eq(json("{\"RoleArn\":\"arn:aws:iam::1:role/x\","
	    "\"Expiration\":\"2017-05-17T15:09:54.000Z\","
	    "\"Nested\":{\"a\":[1,-2.5e+3,true,false,null,{\"b\":\"c\"}],"
	    "\"d\":{}},\"Empty\":[],"
	    "\"AccountId\":\"123456789012\",\"Token\":\"t\\/tok\\u0065n\","
	    "\"SecretAccessKey\":\"s\\\"e\\\\c\","
	    "\"AccessKeyId\":\"\\u0041SIAIOSFODNN7EXAMPLE\"}", &s), 0, "%s",
	    err);
	cr_expect_str_eq(s->access_key, "ASIAIOSFODNN7EXAMPLE");
	cr_expect_str_eq(s->secret_key, "s\"e\\c");
	cr_expect_str_eq(s->session_token, "t/token");
	cr_expect_eq(s->expiration_ms, EXP_MS);
	bc_creds_snap_unref(s);
	/* a token is not required */
	cr_assert_eq(json("{\"AccessKeyId\":\"AKIAIOSFODNN7EXAMPLE\","
	    "\"SecretAccessKey\":\"x\",\"Expiration\":"
	    "\"2017-05-17T15:09:54Z\"}", &s), 0, "%s", err);
	cr_expect_null(s->session_token);
	bc_creds_snap_unref(s);
}

LTest(json, service_errors)
{
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;

	cr_expect_eq(json("{\"Code\":\"AssumeRoleUnauthorizedAccess\","
	    "\"Message\":\"EC2 cannot assume the role x.\","
	    "\"LastUpdated\":\"2012-04-26T16:39:16Z\"}", &s), BC_EACCES);
	cr_expect_null(s);
	cr_expect_str_eq(err, "the service answered Code "
	    "\"AssumeRoleUnauthorizedAccess\": EC2 cannot assume the role x.");
	cr_expect_eq(json("{\"code\":\"InvalidToken\",\"message\":\"Invalid "
	    "authorization token\"}", &s), BC_EACCES);
	cr_expect_str_eq(err, "the service answered an error: InvalidToken: "
	    "Invalid authorization token");
	/* a message is shown bounded and printable */
	cr_expect_eq(json("{\"code\":\"X\",\"message\":\"a\\nb\\u00e9\"}",
	    &s), BC_EACCES);
	cr_expect_str_eq(err, "the service answered an error: X: a?b??");
}

LTest(json, hostile_documents)
{
	static const char *const bad[] = {
		"", " ", "[]", "\"x\"", "null", "{", "}", "{\"a\"}", "{\"a\":}",
		"{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}", "{} {}", "{}x",
		"{\"a\":tru}", "{\"a\":nul}", "{\"a\":01}", "{\"a\":1.}",
		"{\"a\":-}", "{\"a\":1e}", "{\"a\":.5}", "{\"a\":+1}",
		"{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
		"{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00x\"}",
		"{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"tab\there\"}",
		"{\"a\":[1,2}", "{\"a\":{\"b\" 1}}", "{'a':1}", "{a:1}",
		"{\"AccessKeyId\":\"\\u0000AKIAIOSFODNN7EXAMPLE\"}",
		/* wanted members missing or of the wrong type */
		"{}", "{\"AccessKeyId\":1,\"SecretAccessKey\":\"s\","
		"\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		"{\"AccessKeyId\":\"AKIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"s\"}",
		"{\"AccessKeyId\":\"AKIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"s\",\"Token\":null,\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		"{\"AccessKeyId\":\"AKIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"s\",\"Expiration\":\"tomorrow\"}",
		/* given twice: which one would S3 see? */
		"{\"AccessKeyId\":\"AKIAIOSFODNN7EXAMPLE\",\"AccessKeyId\":"
		"\"AKIAIOSFODNN7EXAMPLF\",\"SecretAccessKey\":\"s\","
		"\"Expiration\":\"2017-05-17T15:09:54Z\"}",
	};
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;
	char deep[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_expect_eq(json(bad[i], &s), BC_EPROTO, "%s", bad[i]);
		cr_expect_null(s);
		cr_expect_neq(err[0], '\0', "%s", bad[i]);
	}
	/* nesting: 31 levels inside the document are fine, 33 are not */
	snprintf(deep, sizeof(deep), "{\"x\":%.31s1%.31s}",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
	cr_expect_eq(json(deep, &s), BC_EPROTO);
	cr_expect_str_eq(err, "the answer has no AccessKeyId string",
	    "parsed, only the keys are missing");
	snprintf(deep, sizeof(deep), "{\"x\":%.33s1%.33s}",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
	cr_expect_eq(json(deep, &s), BC_EPROTO);
	cr_expect_str_eq(err, "the answer is not a JSON object");
}

LTest(json, values_that_would_break_headers)
{
	static const char *const bad[] = {
		/* a token with CR LF: header injection */
		"{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"TOPSECRET\",\"Token\":\"a\\r\\nX-Evil: 1\",\"Expiration\":"
		"\"2017-05-17T15:09:54Z\"}",
		/* a blank in the secret */
		"{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"TOP SECRET\",\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		/* non-ASCII in the token */
		"{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"TOPSECRET\",\"Token\":\"t\\u00e9\",\"Expiration\":"
		"\"2017-05-17T15:09:54Z\"}",
		/* access key ids: too short, not alphanumeric, too long */
		"{\"AccessKeyId\":\"ASIA\",\"SecretAccessKey\":\"TOPSECRET\","
		"\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		"{\"AccessKeyId\":\"ASIAIOSFODNN7/XAMPLE\",\"SecretAccessKey\":"
		"\"TOPSECRET\",\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		"{\"AccessKeyId\":\"" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAA\",\"SecretAccessKey\":\"TOPSECRET\","
		"\"Expiration\":\"2017-05-17T15:09:54Z\"}",
		/* an empty secret */
		"{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\",\"SecretAccessKey\":"
		"\"\",\"Expiration\":\"2017-05-17T15:09:54Z\"}",
	};
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_expect_eq(json(bad[i], &s), BC_EINVAL, "%zu: %s", i, err);
		cr_expect_null(s);
		cr_expect_null(strstr(err, "TOPSECRET"), "%s", err);
		cr_expect_null(strstr(err, "Evil"), "%s", err);
	}
}

LTest(json, size_bounds)
{
	size_t n = BC_CREDS_MAX_ANSWER + 1;
	char *big = malloc(n + 1), *tok;
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;
	int len;

	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	big[n] = '\0';
	cr_expect_eq(bc_creds_parse_json(big, n, &s, err, sizeof(err)),
	    BC_EPROTO);
	cr_expect_str_eq(err, "answer of 65537 bytes (at most 65536)");
	cr_expect_eq(bc_creds_parse_json(big, n - 1, &s, err, sizeof(err)),
	    BC_EPROTO, "not bounded by size: by syntax");
	/* a token just over its bound */
	tok = malloc(BC_CREDS_MAX_SESSION + 2);
	memset(tok, 'T', BC_CREDS_MAX_SESSION + 1);
	tok[BC_CREDS_MAX_SESSION + 1] = '\0';
	len = snprintf(big, n, "{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\","
	    "\"SecretAccessKey\":\"s\",\"Token\":\"%s\",\"Expiration\":"
	    "\"2017-05-17T15:09:54Z\"}", tok);
	cr_expect_eq(bc_creds_parse_json(big, (size_t)len, &s, err,
	    sizeof(err)), BC_EPROTO);
	cr_expect_str_eq(err, "a credential field is too long");
	/* at it: fine */
	tok[BC_CREDS_MAX_SESSION] = '\0';
	len = snprintf(big, n, "{\"AccessKeyId\":\"ASIAIOSFODNN7EXAMPLE\","
	    "\"SecretAccessKey\":\"s\",\"Token\":\"%s\",\"Expiration\":"
	    "\"2017-05-17T15:09:54Z\"}", tok);
	cr_expect_eq(bc_creds_parse_json(big, (size_t)len, &s, err,
	    sizeof(err)), 0, "%s", err);
	cr_expect_eq(strlen(s->session_token), BC_CREDS_MAX_SESSION);
	bc_creds_snap_unref(s);
	/* the length given is all that is read: no NUL needed */
	memcpy(big, "{}xxxx", 6);
	cr_expect_eq(bc_creds_parse_json(big, 2, &s, err, sizeof(err)),
	    BC_EPROTO);
	cr_expect_str_eq(err, "the answer has no AccessKeyId string");
	free(tok);
	free(big);
}

/* ---- XML: STS ------------------------------------------------------------- */

static const char sts_ok[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<AssumeRoleWithWebIdentityResponse "
    "xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
    "  <AssumeRoleWithWebIdentityResult>\n"
    "    <SubjectFromWebIdentityToken>amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A"
    "</SubjectFromWebIdentityToken>\n"
    "    <Audience>client.5498841531868486423.1548@apps.example.com</Audience>\n"
    "    <AssumedRoleUser>\n"
    "      <Arn>arn:aws:sts::123456789012:assumed-role/FederatedWebIdentityRole"
    "/app1</Arn>\n"
    "      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:app1</AssumedRoleId>\n"
    "    </AssumedRoleUser>\n"
    "    <Credentials>\n"
    "      <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE"
    "</SessionToken>\n"
    "      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY&amp;x"
    "</SecretAccessKey>\n"
    "      <Expiration>2017-05-17T15:09:54Z</Expiration>\n"
    "      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>\n"
    "    </Credentials>\n"
    "    <SourceIdentity>SourceIdentityValue</SourceIdentity>\n"
    "    <Provider>www.amazon.com</Provider>\n"
    "  </AssumeRoleWithWebIdentityResult>\n"
    "  <ResponseMetadata>\n"
    "    <RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId>\n"
    "  </ResponseMetadata>\n"
    "</AssumeRoleWithWebIdentityResponse>\n";

LTest(sts, answer_from_the_docs)
{
	bc_creds_snap_t *s = NULL;

	cr_assert_eq(sts(sts_ok, &s), 0, "%s", err);
	cr_expect_str_eq(s->access_key, "ASgeIAIOSFODNN7EXAMPLE");
	cr_expect_str_eq(s->secret_key,
	    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY&x");
	cr_expect_str_eq(s->session_token,
	    "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE");
	cr_expect_eq(s->expiration_ms, EXP_MS);
	bc_creds_snap_unref(s);
}

LTest(sts, error_response)
{
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;

	cr_expect_eq(sts("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/"
	    "2011-06-15/\">\n  <Error>\n    <Type>Sender</Type>\n"
	    "    <Code>InvalidIdentityToken</Code>\n"
	    "    <Message>Incorrect token audience &amp; more</Message>\n"
	    "  </Error>\n  <RequestId>x</RequestId>\n</ErrorResponse>\n", &s),
	    BC_EACCES);
	cr_expect_null(s);
	cr_expect_str_eq(err, "STS answered InvalidIdentityToken: Incorrect "
	    "token audience & more");
	cr_expect_eq(sts("<?xml version=\"1.0\"?><ErrorResponse><Error>"
	    "</Error></ErrorResponse>", &s), BC_EACCES);
	cr_expect_str_eq(err, "STS answered ?");
}

LTest(sts, hostile_documents)
{
	static const struct { const char *doc; const char *why; } bad[] = {
		{ "", "the answer is not an AssumeRoleWithWebIdentityResponse" },
		{ "<html>502</html>", "the answer is not an "
		    "AssumeRoleWithWebIdentityResponse" },
		{ "<AssumeRoleWithWebIdentityResponseX>", "the answer is not "
		    "an AssumeRoleWithWebIdentityResponse" },
		{ "<AssumeRoleWithWebIdentityResponse>", "the answer has no "
		    "<Credentials>" },
		{ "<AssumeRoleWithWebIdentityResponse><Credentials>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>",
		    "the answer has no <Credentials>" },
		{ "<AssumeRoleWithWebIdentityResponse><Credentials>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
		    "<SecretAccessKey>s</SecretAccessKey><Expiration>"
		    "2017-05-17T15:09:54Z</Expiration></Credentials>",
		    "the answer's <Credentials> has no well-formed "
		    "<SessionToken>" },
		{ "<AssumeRoleWithWebIdentityResponse><Credentials>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
		    "<SecretAccessKey><![CDATA[s]]></SecretAccessKey>"
		    "<SessionToken>t</SessionToken><Expiration>"
		    "2017-05-17T15:09:54Z</Expiration></Credentials>",
		    "the answer's <Credentials> has no well-formed "
		    "<SecretAccessKey>" },
		{ "<AssumeRoleWithWebIdentityResponse><Credentials>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
		    "<SecretAccessKey>s&bogus;</SecretAccessKey>"
		    "<SessionToken>t</SessionToken><Expiration>"
		    "2017-05-17T15:09:54Z</Expiration></Credentials>",
		    "the answer's <Credentials> has no well-formed "
		    "<SecretAccessKey>" },
		{ "<AssumeRoleWithWebIdentityResponse><Credentials>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
		    "<SecretAccessKey>s</SecretAccessKey>"
		    "<SessionToken>t</SessionToken><Expiration>"
		    "soon</Expiration></Credentials>",
		    "Expiration 'soon' is not an ISO 8601 time" },
		/* the members must be inside <Credentials> */
		{ "<AssumeRoleWithWebIdentityResponse>"
		    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId><Credentials>"
		    "<SecretAccessKey>s</SecretAccessKey>"
		    "<SessionToken>t</SessionToken><Expiration>"
		    "2017-05-17T15:09:54Z</Expiration></Credentials>",
		    "the answer's <Credentials> has no well-formed "
		    "<AccessKeyId>" },
	};
	bc_creds_snap_t *s = (bc_creds_snap_t *)1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_expect_eq(sts(bad[i].doc, &s), BC_EPROTO, "%zu", i);
		cr_expect_null(s);
		cr_expect_str_eq(err, bad[i].why, "%zu", i);
	}
	/* a token that would break the header */
	cr_expect_eq(sts("<AssumeRoleWithWebIdentityResponse><Credentials>"
	    "<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
	    "<SecretAccessKey>TOPSECRET</SecretAccessKey>"
	    "<SessionToken>a&#13;&#10;X-Evil: 1</SessionToken><Expiration>"
	    "2017-05-17T15:09:54Z</Expiration></Credentials>", &s), BC_EINVAL);
	cr_expect_null(strstr(err, "TOPSECRET"));
}

/* ---- the IMDS role list --------------------------------------------------- */

LTest(role, first_line)
{
	char role[BC_CREDS_MAX_ROLE + 1], long_[300];

	cr_expect_eq(bc_creds_parse_role("my-role_1+=,.@\n", 15, role,
	    sizeof(role), err, sizeof(err)), 0);
	cr_expect_str_eq(role, "my-role_1+=,.@");
	cr_expect_eq(bc_creds_parse_role("a\nb\n", 4, role, sizeof(role), err,
	    sizeof(err)), 0);
	cr_expect_str_eq(role, "a");
	cr_expect_eq(bc_creds_parse_role(" \n", 2, role, sizeof(role), err,
	    sizeof(err)), BC_ENOENT);
	cr_expect_str_eq(err, "no IAM role is attached to the instance");
	cr_expect_eq(bc_creds_parse_role("a b", 3, role, sizeof(role), err,
	    sizeof(err)), BC_EPROTO);
	cr_expect_eq(bc_creds_parse_role("../x", 4, role, sizeof(role), err,
	    sizeof(err)), BC_EPROTO, "a role name never holds a '/'");
	/* NUL bytes are not a name (strchr would find the terminator) */
	cr_expect_eq(bc_creds_parse_role("\0\0\nrole", 7, role, sizeof(role),
	    err, sizeof(err)), BC_EPROTO);
	memset(long_, 'r', sizeof(long_));
	cr_expect_eq(bc_creds_parse_role(long_, 129, role, sizeof(role), err,
	    sizeof(err)), BC_EPROTO);
	cr_expect_eq(bc_creds_parse_role(long_, 128, role, sizeof(role), err,
	    sizeof(err)), 0);
}
