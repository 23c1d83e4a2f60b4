/*
 * test_config.c — config/: every TYPE's parser (good and bad values),
 * precedence (defaults < file < environment < flags), LIST replacement,
 * the config file's syntax and FILE:LINE errors, --help, the credentials
 * file (config_creds.c), upstream credentials from env and profiles,
 * client keys and their allow lists, upstream URL and file:// resolution,
 * listen validation, the Redis tier's URLs and options.
 *
 * config.c is included (not only linked) so the static type parsers can
 * be tested directly: the table has no SIZE option yet. The binary then
 * takes every bc_config_* symbol from this file and none from the
 * library's config.o.
 */
#include "config/config.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "config/config_creds.h"
#include "util/util_log.h"

static char tmp[256];     /* a fresh directory per test */

static void
setup(void)
{
	strcpy(tmp, "/tmp/bc_test_config_XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void
teardown(void)
{
	char cmd[300];

	if (tmp[0] != '\0' && strncmp(tmp, "/tmp/bc_test_config_", 20) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", tmp);
	}
}

TestSuite(config, .init = setup, .fini = teardown);
TestSuite(creds, .init = setup, .fini = teardown);
TestSuite(finish, .init = setup, .fini = teardown);
TestSuite(keys, .init = setup, .fini = teardown);
TestSuite(creds_source, .init = setup, .fini = teardown);

/* Writes content to tmp/name; path gets the full name. */
static void
write_file(const char *name, const char *content, char *path, size_t plen)
{
	FILE *fp;

	snprintf(path, plen, "%s/%s", tmp, name);
	fp = fopen(path, "w");
	cr_assert_not_null(fp, "%s", path);
	fputs(content, fp);
	fclose(fp);
}

#define ARGS(...) ((const char *[]){ "bucketcache", __VA_ARGS__, NULL })
#define NOARGS    ((const char *[]){ "bucketcache", NULL })
#define ENV(...)  ((const char *[]){ __VA_ARGS__, NULL })
#define NOENV     ((const char *[]){ NULL })

static char err[512];

/* init + load; returns bc_config_load's result (err holds the message). */
static int
load(bc_config_t *c, const char **argv, const char **env)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	cr_assert_eq(bc_config_init(c), 0);
	err[0] = '\0';
	return bc_config_load(c, argc, (char **)argv, (char **)env, err,
	    sizeof(err));
}

/* load that must fail with exactly msg; frees c. */
static void
load_fails(const char **argv, const char **env, const char *msg)
{
	bc_config_t c;

	cr_assert_eq(load(&c, argv, env), -1, "expected: %s", msg);
	cr_assert_str_eq(err, msg);
	bc_config_fini(&c);
}

/* load that must fail with a message containing each of a and b. */
static void
load_fails_with(const char **argv, const char **env, const char *a,
    const char *b)
{
	bc_config_t c;

	cr_assert_eq(load(&c, argv, env), -1, "expected: %s", a);
	cr_assert_not_null(strstr(err, a), "'%s' lacks '%s'", err, a);
	if (b != NULL)
		cr_assert_not_null(strstr(err, b), "'%s' lacks '%s'", err, b);
	cr_assert_null(strchr(err, '\n'), "more than one line: %s", err);
	bc_config_fini(&c);
}

/* ---- defaults and the type parsers -------------------------------------- */

LTest(config, defaults)
{
	bc_config_t c;

	cr_assert_eq(bc_config_init(&c), 0);
	cr_assert_str_eq(c.listen, "127.0.0.1:8080");
	cr_assert_str_eq(c.upstream, "file://./buckets");
	cr_assert_str_eq(c.region, "us-east-1");
	cr_assert_str_eq(c.upstream_addressing, "path");
	cr_assert_not_null(c.domain);
	cr_assert_str_eq(c.domain, "");
	cr_assert_str_eq(c.config_file, "");
	cr_assert_eq(c.client_keys.n, 0);
	cr_assert_eq(c.anonymous, false);
	cr_assert_eq(c.threads, 0);
	cr_assert_eq(c.max_connections, 4096);
	cr_assert_eq(c.connect_timeout, 5000);
	cr_assert_eq(c.upstream_timeout, 60000);
	cr_assert_eq(c.retries, 3);
	cr_assert_eq(c.log_level, BC_LOG_INFO);
	cr_assert_eq(c.help, false);
	cr_assert_null(c.keys);
	bc_config_fini(&c);
	bc_config_fini(&c);     /* fini leaves a zeroed struct: again is safe */
	bc_config_fini(NULL);
}

LTest(config, every_default_parses)
{
	bc_config_t c;
	char why[WHY_LEN];

	memset(&c, 0, sizeof(c));
	for (size_t i = 0; i < NOPTS; i++) {
		if (opts[i].type == OPT_LIST && opts[i].def[0] == '\0')
			continue;
		cr_assert_eq(types[opts[i].type].parse(field(&c, &opts[i]),
		    opts[i].def, why, sizeof(why)), 0, "%s: %s", opts[i].name,
		    why);
	}
	bc_config_fini(&c);
}

typedef struct {
	const char *in;
	int         rv;
	uint64_t    want;
} num_case_t;

LTest(config, parse_size)
{
	static const num_case_t cases[] = {
		{ "0", 0, 0 }, { "512", 0, 512 }, { "512B", 0, 512 },
		{ "64K", 0, 65536 }, { "64k", 0, 65536 }, { "64KB", 0, 65536 },
		{ "64KiB", 0, 65536 }, { "8M", 0, 8388608 },
		{ "8MiB", 0, 8388608 }, { "2G", 0, 2147483648ULL },
		{ "1T", 0, 1099511627776ULL }, { "1tb", 0, 1099511627776ULL },
		{ "16777215T", 0, 16777215ULL << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16777216T", BC_ERANGE, 0 },
		{ "18446744073709551616", BC_ERANGE, 0 },
		{ "99999999999999999999999", BC_ERANGE, 0 },
		{ "", BC_EINVAL, 0 }, { "K", BC_EINVAL, 0 },
		{ "-1", BC_EINVAL, 0 }, { "+1", BC_EINVAL, 0 },
		{ "1.5G", BC_EINVAL, 0 }, { "8X", BC_EINVAL, 0 },
		{ "8Mi", BC_EINVAL, 0 }, { "8MBB", BC_EINVAL, 0 },
		{ "8 M", BC_EINVAL, 0 }, { " 8M", BC_EINVAL, 0 },
		{ "8M ", BC_EINVAL, 0 }, { "0x10", BC_EINVAL, 0 },
		{ "1iB", BC_EINVAL, 0 },
	};
	char why[WHY_LEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rv = parse_size(&v, cases[i].in, why, sizeof(why));

		cr_assert_eq(rv, cases[i].rv, "'%s': rv %d", cases[i].in, rv);
		if (rv == 0)
			cr_assert_eq(v, cases[i].want, "'%s': %llu",
			    cases[i].in, (unsigned long long)v);
		else
			cr_assert_eq(v, 12345, "'%s' changed the value",
			    cases[i].in);
	}
	cr_assert_eq(parse_size(&(uint64_t){0}, "8X", why, sizeof(why)),
	    BC_EINVAL);
	cr_assert_str_eq(why, "'8X' is not a size (like 512, 64K, 8M, 2G, 1T)");
	parse_size(&(uint64_t){0}, "16777216T", why, sizeof(why));
	cr_assert_str_eq(why, "'16777216T' is too large");
}

LTest(config, parse_ms)
{
	static const num_case_t cases[] = {
		{ "0", 0, 0 }, { "250ms", 0, 250 }, { "5s", 0, 5000 },
		{ "2m", 0, 120000 }, { "7", 0, 7000 }, { "0ms", 0, 0 },
		{ "18446744073709551615ms", 0, UINT64_MAX },
		{ "18446744073709551s", 0, 18446744073709551000ULL },
		{ "18446744073709552s", BC_ERANGE, 0 },
		{ "307445734561825861m", BC_ERANGE, 0 },
		{ "", BC_EINVAL, 0 }, { "ms", BC_EINVAL, 0 },
		{ "5h", 0, 18000000 }, { "0h", 0, 0 },
		{ "5124095576030432h", BC_ERANGE, 0 },
		{ "5d", BC_EINVAL, 0 }, { "5S", BC_EINVAL, 0 },
		{ "-5s", BC_EINVAL, 0 }, { "1.5s", BC_EINVAL, 0 },
		{ "5 s", BC_EINVAL, 0 }, { "5sec", BC_EINVAL, 0 },
		{ "5mss", BC_EINVAL, 0 },
	};
	char why[WHY_LEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 999;
		int rv = parse_ms(&v, cases[i].in, why, sizeof(why));

		cr_assert_eq(rv, cases[i].rv, "'%s': rv %d", cases[i].in, rv);
		cr_assert_eq(v, rv == 0 ? cases[i].want : 999, "'%s': %llu",
		    cases[i].in, (unsigned long long)v);
	}
}

LTest(config, parse_uint)
{
	static const num_case_t cases[] = {
		{ "0", 0, 0 }, { "8", 0, 8 }, { "007", 0, 7 },
		{ "4294967295", 0, 4294967295ULL },
		{ "4294967296", BC_ERANGE, 0 },
		{ "99999999999999999999", BC_ERANGE, 0 },
		{ "", BC_EINVAL, 0 }, { "abc", BC_EINVAL, 0 },
		{ "-1", BC_EINVAL, 0 }, { "+1", BC_EINVAL, 0 },
		{ "1x", BC_EINVAL, 0 }, { " 1", BC_EINVAL, 0 },
		{ "1 ", BC_EINVAL, 0 }, { "1K", BC_EINVAL, 0 },
	};
	char why[WHY_LEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned v = 77;
		int rv = parse_uint(&v, cases[i].in, why, sizeof(why));

		cr_assert_eq(rv, cases[i].rv, "'%s': rv %d", cases[i].in, rv);
		cr_assert_eq(v, rv == 0 ? cases[i].want : 77, "'%s'",
		    cases[i].in);
	}
}

LTest(config, parse_bool_and_level)
{
	static const char *const yes[] = { "yes", "YES", "true", "True",
	    "on", "1" };
	static const char *const no[] = { "no", "No", "false", "off", "0" };
	static const char *const bad[] = { "", "y", "2", "yess", "nope",
	    " yes" };
	char why[WHY_LEN];
	bool b;
	int l;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = false;
		cr_assert_eq(parse_bool(&b, yes[i], why, sizeof(why)), 0);
		cr_assert(b, "%s", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		b = true;
		cr_assert_eq(parse_bool(&b, no[i], why, sizeof(why)), 0);
		cr_assert(!b, "%s", no[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse_bool(&b, bad[i], why, sizeof(why)),
		    BC_EINVAL, "'%s'", bad[i]);
	cr_assert_eq(parse_level(&l, "debug", why, sizeof(why)), 0);
	cr_assert_eq(l, BC_LOG_DEBUG);
	cr_assert_eq(parse_level(&l, "error", why, sizeof(why)), 0);
	cr_assert_eq(l, BC_LOG_ERROR);
	cr_assert_eq(parse_level(&l, "verbose", why, sizeof(why)), BC_EINVAL);
	cr_assert_str_eq(why, "'verbose' is not error, warn, info or debug");
	cr_assert_eq(l, BC_LOG_ERROR);
}

/* ---- flags ---------------------------------------------------------------- */

LTest(config, flags_both_forms_and_every_type)
{
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--threads", "8", "--retries=5",
	    "--connect-timeout", "250ms", "--upstream-timeout=2m",
	    "--log-level", "debug", "--anonymous", "--region=eu-west-1",
	    "--domain", "s3.local", "--max-connections=1",
	    "--admin-token", "t0k"), NOENV), 0, "%s", err);
	cr_assert_eq(c.threads, 8);
	cr_assert_eq(c.retries, 5);
	cr_assert_eq(c.connect_timeout, 250);
	cr_assert_eq(c.upstream_timeout, 120000);
	cr_assert_eq(c.log_level, BC_LOG_DEBUG);
	cr_assert_eq(c.anonymous, true);
	cr_assert_str_eq(c.region, "eu-west-1");
	cr_assert_str_eq(c.domain, "s3.local");
	cr_assert_eq(c.max_connections, 1);
	cr_assert_str_eq(c.admin_token, "t0k");
	bc_config_fini(&c);
}

LTest(config, bool_flag_forms)
{
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--anonymous", "--no-anonymous"), NOENV),
	    0);
	cr_assert_eq(c.anonymous, false);
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--anonymous=yes"), NOENV), 0);
	cr_assert_eq(c.anonymous, true);
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--anonymous=off"), NOENV), 0);
	cr_assert_eq(c.anonymous, false);
	bc_config_fini(&c);
	/* a bare BOOL flag does not take the next argument */
	load_fails(ARGS("--anonymous", "no"), NOENV,
	    "unexpected argument 'no'");
	load_fails(ARGS("--anonymous=maybe"), NOENV,
	    "--anonymous: 'maybe' is not yes or no");
	load_fails(ARGS("--no-anonymous=yes"), NOENV,
	    "unknown option '--no-anonymous'");
	load_fails(ARGS("--no-threads"), NOENV, "unknown option '--no-threads'");
}

LTest(config, flag_errors_are_one_line_naming_option_and_value)
{
	load_fails(ARGS("--threads", "abc"), NOENV,
	    "--threads: 'abc' is not a number");
	load_fails(ARGS("--threads=-1"), NOENV,
	    "--threads: '-1' is not a number");
	load_fails(ARGS("--retries", "4294967296"), NOENV,
	    "--retries: '4294967296' is too large (max 4294967295)");
	load_fails(ARGS("--connect-timeout", "5d"), NOENV,
	    "--connect-timeout: '5d' is not a duration (like 250ms, 5s, 2m, "
	    "1h; a bare number is seconds)");
	load_fails(ARGS("--log-level", "loud"), NOENV,
	    "--log-level: 'loud' is not error, warn, info or debug");
	load_fails(ARGS("--bogus", "1"), NOENV, "unknown option '--bogus'");
	load_fails(ARGS("--bogus=1"), NOENV, "unknown option '--bogus'");
	load_fails(ARGS("-x"), NOENV, "unknown option '-x'");
	load_fails(ARGS("positional"), NOENV,
	    "unexpected argument 'positional'");
	load_fails(ARGS("--threads", "1", "extra"), NOENV,
	    "unexpected argument 'extra'");
	load_fails(ARGS("--"), NOENV, "unexpected argument '--'");
	load_fails(ARGS("-"), NOENV, "unexpected argument '-'");
	load_fails(ARGS("--threads"), NOENV, "--threads: missing value");
	load_fails_with(ARGS("--threads",
	    "1234567890123456789012345678901234567890123456789012345678901234"
	    "5678901234567890"), NOENV, "--threads: '12345678901234567890",
	    "is too large");
}

LTest(config, flag_value_may_look_like_a_flag)
{
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--admin-token", "--help"), NOENV), 0);
	cr_assert_str_eq(c.admin_token, "--help");
	cr_assert_eq(c.help, false);
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--domain=", "--region", "-h"), NOENV), 0);
	cr_assert_str_eq(c.domain, "");
	cr_assert_str_eq(c.region, "-h");
	cr_assert_eq(c.help, false);
	bc_config_fini(&c);
}

LTest(config, help_and_version_win)
{
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--help"), NOENV), 0);
	cr_assert(c.help);
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("-h"), NOENV), 0);
	cr_assert(c.help);
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--version"), NOENV), 0);
	cr_assert(c.version);
	cr_assert(!c.help);
	bc_config_fini(&c);
	/* even with bad flags, a missing config file or bad env around */
	cr_assert_eq(load(&c, ARGS("--bogus", "--threads=x", "--config",
	    "/nonexistent/bc.conf", "-h"), ENV("BUCKETCACHE_THREADS=zz")), 0);
	cr_assert(c.help);
	bc_config_fini(&c);
}

/* --probe loads everything (the file, the environment, the other flags):
 * the probe asks the address the gateway these options configure
 * listens on. */
LTest(config, probe_reads_every_source)
{
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--probe"),
	    ENV("BUCKETCACHE_LISTEN=0.0.0.0:9123")), 0, "%s", err);
	cr_assert_str_eq(c.probe, "health");
	cr_assert_str_eq(c.listen, "0.0.0.0:9123");
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--listen", "127.0.0.1:7000",
	    "--probe=ready", "--log-level", "warn"),
	    ENV("BUCKETCACHE_LISTEN=0.0.0.0:9123")), 0, "%s", err);
	cr_assert_str_eq(c.probe, "ready");
	cr_assert_str_eq(c.listen, "127.0.0.1:7000");
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--admin-token", "--probe"), NOENV), 0);
	cr_assert_str_eq(c.probe, "");
	cr_assert_str_eq(c.admin_token, "--probe");
	bc_config_fini(&c);
	/* a name of lower-case letters only, shorter than the field */
	static const char *const bad[] = { "--probe=", "--probe=../x",
	    "--probe=Ready", "--probe=health?x", "--probe=abcdefghijklmnop" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(&c, ARGS(bad[i]), NOENV), -1, "%s", bad[i]);
		cr_assert_not_null(strstr(err, "--probe"), "%s", err);
		bc_config_fini(&c);
	}
}

/* ---- environment ---------------------------------------------------------- */

LTest(config, env_names_and_values)
{
	bc_config_t c;

	cr_assert_eq(load(&c, NOARGS, ENV("PATH=/bin",
	    "BUCKETCACHE_UPSTREAM_ADDRESSING=virtual",
	    "BUCKETCACHE_LOG_LEVEL=warn", "BUCKETCACHE_ANONYMOUS=true",
	    "BUCKETCACHE_MAX_CONNECTIONS=10", "BUCKETCACHE_UNKNOWN_THING=1",
	    "BUCKETCACHE_THREADSX=9", "BUCKETCACHE_DOMAIN=")), 0, "%s", err);
	cr_assert_str_eq(c.upstream_addressing, "virtual");
	cr_assert_eq(c.log_level, BC_LOG_WARN);
	cr_assert_eq(c.anonymous, true);
	cr_assert_eq(c.max_connections, 10);
	cr_assert_eq(c.threads, 0);
	cr_assert_str_eq(c.domain, "");
	bc_config_fini(&c);
	load_fails(NOARGS, ENV("BUCKETCACHE_THREADS=abc"),
	    "BUCKETCACHE_THREADS: 'abc' is not a number");
	load_fails(NOARGS, ENV("BUCKETCACHE_CONNECT_TIMEOUT=1w"),
	    "BUCKETCACHE_CONNECT_TIMEOUT: '1w' is not a duration (like 250ms, "
	    "5s, 2m, 1h; a bare number is seconds)");
}

LTest(config, env_name_generation)
{
	char name[128];

	for (size_t i = 0; i < NOPTS; i++) {
		env_name(&opts[i], name, sizeof(name));
		cr_assert_eq(strncmp(name, "BUCKETCACHE_", 12), 0);
		for (const char *p = name; *p != '\0'; p++)
			cr_assert((*p >= 'A' && *p <= 'Z') || *p == '_' ||
			    (*p >= '0' && *p <= '9'), "%s", name);
	}
	env_name(opt_find("upstream-timeout", 16), name, sizeof(name));
	cr_assert_str_eq(name, "BUCKETCACHE_UPSTREAM_TIMEOUT");
}

/* ---- config file ---------------------------------------------------------- */

LTest(config, file_syntax)
{
	bc_config_t c;
	char path[512], arg[600];

	write_file("bc.conf",
	    "# a comment\n"
	    "\n"
	    "   # indented comment\n"
	    "threads 6\n"
	    "\tretries\t  2  \n"
	    "region = ap-south-1\n"
	    "log-level=debug\n"
	    "admin-token \"with spaces # not a comment\"\n"
	    "domain \"\"\n"
	    "anonymous\n"
	    "upstream-timeout 90s\r\n"
	    "client-key AK1:SK1:b1\n"
	    "client-key AK2:SK2\n", path, sizeof(path));
	snprintf(arg, sizeof(arg), "--config=%s", path);
	cr_assert_eq(load(&c, ARGS(arg), NOENV), 0, "%s", err);
	cr_assert_eq(c.threads, 6);
	cr_assert_eq(c.retries, 2);
	cr_assert_str_eq(c.region, "ap-south-1");
	cr_assert_eq(c.log_level, BC_LOG_DEBUG);
	cr_assert_str_eq(c.admin_token, "with spaces # not a comment");
	cr_assert_str_eq(c.domain, "");
	cr_assert_eq(c.anonymous, true);
	cr_assert_eq(c.upstream_timeout, 90000);
	cr_assert_eq(c.client_keys.n, 2);
	cr_assert_str_eq(c.client_keys.v[0], "AK1:SK1:b1");
	cr_assert_str_eq(c.client_keys.v[1], "AK2:SK2");
	cr_assert_str_eq(c.config_file, path);
	bc_config_fini(&c);
}

LTest(config, file_errors_name_file_and_line)
{
	char path[512], arg[600], want[800];

	write_file("unknown.conf", "threads 1\n# x\nbogus 3\n", path,
	    sizeof(path));
	snprintf(arg, sizeof(arg), "--config=%s", path);
	snprintf(want, sizeof(want), "%s:3: unknown option 'bogus'", path);
	load_fails(ARGS(arg), NOENV, want);

	write_file("bad.conf", "\nthreads abc\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s:2: threads: 'abc' is not a number",
	    path);
	load_fails(ARGS("--config", path), NOENV, want);

	write_file("nested.conf", "config /etc/other.conf\n", path,
	    sizeof(path));
	snprintf(want, sizeof(want), "%s:1: 'config' cannot be set in a "
	    "config file", path);
	load_fails(ARGS("--config", path), NOENV, want);

	write_file("quote.conf", "region \"eu\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s:1: region: unterminated quote", path);
	load_fails(ARGS("--config", path), NOENV, want);

	write_file("quote2.conf", "region \"\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s:1: region: unterminated quote", path);
	load_fails(ARGS("--config", path), NOENV, want);

	write_file("empty.conf", "listen\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s:1: listen: missing value", path);
	load_fails(ARGS("--config", path), NOENV, want);

	write_file("bool.conf", "anonymous perhaps\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s:1: anonymous: 'perhaps' is not yes "
	    "or no", path);
	load_fails(ARGS("--config", path), NOENV, want);

	snprintf(path, sizeof(path), "%s/missing.conf", tmp);
	snprintf(want, sizeof(want), "--config: %s: No such file or directory",
	    path);
	load_fails(ARGS("--config", path), NOENV, want);
}

LTest(config, file_line_too_long)
{
	char path[512], want[800], *big;
	size_t n = MAX_LINE + 100;

	big = malloc(n + 16);
	cr_assert_not_null(big);
	memcpy(big, "admin-token ", 12);
	memset(big + 12, 'x', n - 12);
	strcpy(big + n, "\n");
	write_file("long.conf", big, path, sizeof(path));
	free(big);
	snprintf(want, sizeof(want), "%s:1: line longer than %d bytes", path,
	    MAX_LINE);
	load_fails(ARGS("--config", path), NOENV, want);
}

/* bc_config_load_text: the file parser on a buffer (not NUL-terminated),
 * errors naming the given name; a LIST it sets replaces the one held. */
LTest(config, load_text)
{
	static const char text[] = "threads 3\n# c\nregion \"eu-west-1\"\r\n"
	    "client-key T1:S1\nclient-key T2:S2\nretries 9 trailing";
	bc_config_t c;

	cr_assert_eq(load(&c, ARGS("--client-key", "F:S"), NOENV), 0);
	/* the last line cut before " trailing": no terminator needed */
	cr_assert_eq(bc_config_load_text(&c, text, sizeof(text) - 1 - 9,
	    "mem", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.threads, 3);
	cr_assert_str_eq(c.region, "eu-west-1");
	cr_assert_eq(c.retries, 9);
	cr_assert_eq(c.client_keys.n, 2);
	cr_assert_str_eq(c.client_keys.v[0], "T1:S1");
	cr_assert_eq(bc_config_load_text(&c, "", 0, "mem", err, sizeof(err)),
	    0);
	cr_assert_eq(bc_config_load_text(&c, "threads 1\nbogus 2\n", 18,
	    "mem", err, sizeof(err)), -1);
	cr_assert_str_eq(err, "mem:2: unknown option 'bogus'");
	cr_assert_eq(bc_config_load_text(&c, "threads x", 9, "mem", err,
	    sizeof(err)), -1);
	cr_assert_str_eq(err, "mem:1: threads: 'x' is not a number");
	bc_config_fini(&c);
}

LTest(config, file_found_through_env)
{
	bc_config_t c;
	char path[512], envv[600];

	write_file("env.conf", "threads 11\n", path, sizeof(path));
	snprintf(envv, sizeof(envv), "BUCKETCACHE_CONFIG=%s", path);
	cr_assert_eq(load(&c, NOARGS, ENV(envv)), 0, "%s", err);
	cr_assert_eq(c.threads, 11);
	cr_assert_str_eq(c.config_file, path);
	bc_config_fini(&c);
	load_fails(NOARGS, ENV("BUCKETCACHE_CONFIG=/nonexistent/x.conf"),
	    "BUCKETCACHE_CONFIG: /nonexistent/x.conf: No such file or "
	    "directory");
}

/* ---- precedence ------------------------------------------------------------ */

LTest(config, precedence_file_env_flags)
{
	bc_config_t c;
	char path[512];

	write_file("p.conf", "threads 2\nretries 7\nregion file-region\n",
	    path, sizeof(path));
	cr_assert_eq(load(&c, ARGS("--config", path, "--threads", "4"),
	    ENV("BUCKETCACHE_THREADS=3", "BUCKETCACHE_RETRIES=8")), 0, "%s",
	    err);
	cr_assert_eq(c.threads, 4);                    /* flag */
	cr_assert_eq(c.retries, 8);                    /* env over file */
	cr_assert_str_eq(c.region, "file-region");     /* file over default */
	bc_config_fini(&c);
	cr_assert_eq(load(&c, ARGS("--config", path),
	    ENV("BUCKETCACHE_THREADS=3")), 0, "%s", err);
	cr_assert_eq(c.threads, 3);
	cr_assert_eq(c.retries, 7);
	bc_config_fini(&c);
	/* the flag comes after the file even when written before --config */
	cr_assert_eq(load(&c, ARGS("--threads=9", "--config", path), NOENV),
	    0, "%s", err);
	cr_assert_eq(c.threads, 9);
	bc_config_fini(&c);
}

LTest(config, list_replacement_across_sources)
{
	bc_config_t c;
	char path[512];

	write_file("l.conf", "client-key F1:S1\nclient-key F2:S2\n", path,
	    sizeof(path));
	/* file alone: both lines */
	cr_assert_eq(load(&c, ARGS("--config", path), NOENV), 0);
	cr_assert_eq(c.client_keys.n, 2);
	bc_config_fini(&c);
	/* env replaces the file's list; blank-separated entries */
	cr_assert_eq(load(&c, ARGS("--config", path),
	    ENV("BUCKETCACHE_CLIENT_KEY= E1:S1  E2:S2:b\tE3:S3 ")), 0);
	cr_assert_eq(c.client_keys.n, 3);
	cr_assert_str_eq(c.client_keys.v[0], "E1:S1");
	cr_assert_str_eq(c.client_keys.v[1], "E2:S2:b");
	cr_assert_str_eq(c.client_keys.v[2], "E3:S3");
	bc_config_fini(&c);
	/* flags replace both, and repeated flags accumulate */
	cr_assert_eq(load(&c, ARGS("--config", path, "--client-key", "G1:S1",
	    "--client-key=G2:S2"), ENV("BUCKETCACHE_CLIENT_KEY=E1:S1")), 0);
	cr_assert_eq(c.client_keys.n, 2);
	cr_assert_str_eq(c.client_keys.v[0], "G1:S1");
	cr_assert_str_eq(c.client_keys.v[1], "G2:S2");
	bc_config_fini(&c);
	/* an empty env value clears the file's list */
	cr_assert_eq(load(&c, ARGS("--config", path),
	    ENV("BUCKETCACHE_CLIENT_KEY=")), 0);
	cr_assert_eq(c.client_keys.n, 0);
	bc_config_fini(&c);
}

/* ---- --help ---------------------------------------------------------------- */

LTest(config, help_lists_every_option)
{
	char *text = NULL, *norm, flag[128];
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	cr_assert_not_null(fp);
	bc_config_usage(fp, "bucketcache");
	fclose(fp);
	for (char *p = text, *nl; *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		cr_assert_not_null(nl);
		cr_assert_leq(nl - p, 79, "line too wide: %.*s", (int)(nl - p),
		    p);
	}
	/* words may wrap: compare with every blank run as one space */
	norm = malloc(len + 1);
	cr_assert_not_null(norm);
	for (size_t i = 0, j = 0; i <= len; i++) {
		bool blank = text[i] == ' ' || text[i] == '\n';

		if (blank && j > 0 && norm[j - 1] == ' ')
			continue;
		norm[j++] = blank ? ' ' : text[i];
	}
	free(text);
	text = norm;
	cr_assert_not_null(strstr(text, "Usage: bucketcache"));
	for (size_t i = 0; i < NOPTS; i++) {
		snprintf(flag, sizeof(flag), " --%s", opts[i].name);
		cr_assert_not_null(strstr(text, flag), "no %s in help", flag);
		if (opts[i].def[0] != '\0') {
			snprintf(flag, sizeof(flag), "(default: %s)",
			    opts[i].def);
			cr_assert_not_null(strstr(text, flag), "no %s", flag);
		}
	}
	cr_assert_not_null(strstr(text, "--no-anonymous"));
	cr_assert_not_null(strstr(text, "--threads N"));
	cr_assert_not_null(strstr(text, "--connect-timeout TIME"));
	cr_assert_not_null(strstr(text, "BUCKETCACHE_"));
	cr_assert_not_null(strstr(text, "BUCKETCACHE_NAME"));
	cr_assert_not_null(strstr(text, "--config file"));
	cr_assert_not_null(strstr(text, "-h, --help"));
	cr_assert_not_null(strstr(text, "--version"));
	cr_assert_not_null(strstr(text, "AWS_ACCESS_KEY_ID"));
	free(text);
}

/* ---- credentials file ------------------------------------------------------ */

static const char creds_text[] =
    "# leading comment\n"
    "; another\n"
    "[default]\n"
    "aws_access_key_id = AKDEFAULT\n"
    "aws_secret_access_key = secret/default+x\n"
    "\n"
    "[ prod ]\n"
    "AWS_ACCESS_KEY_ID=AKPROD\n"
    "aws_secret_access_key:secretprod\n"
    "aws_session_token = tok==\n"
    "s3 =\n"
    "    max_concurrent_requests = 20\n"
    "    aws_access_key_id = NOTTHIS\n"
    "\n"
    "[nosecret]\n"
    "aws_access_key_id = AKONLY\n"
    "[profile named]\n"
    "aws_access_key_id = AKNAMED\n"
    "aws_secret_access_key = SKNAMED\n"
    "aws_access_key_id = AKNAMED2\n";

LTest(creds, profiles_comments_and_nesting)
{
	bc_config_keypair_t cr = { NULL, NULL, NULL };
	char path[512], msg[256];

	write_file("credentials", creds_text, path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), 0, "%s", msg);
	cr_assert_str_eq(cr.access_key, "AKDEFAULT");
	cr_assert_str_eq(cr.secret_key, "secret/default+x");
	cr_assert_null(cr.session_token);
	cr_assert_eq(bc_config_creds_load_file(path, "prod", &cr, msg, sizeof(msg)),
	    0, "%s", msg);
	cr_assert_str_eq(cr.access_key, "AKPROD");
	cr_assert_str_eq(cr.secret_key, "secretprod");
	cr_assert_str_eq(cr.session_token, "tok==");
	cr_assert_eq(bc_config_creds_load_file(path, "profile named", &cr, msg,
	    sizeof(msg)), 0, "%s", msg);
	cr_assert_str_eq(cr.access_key, "AKNAMED2");     /* last wins */
	cr_assert_null(cr.session_token);
	bc_config_keypair_fini(&cr);
	bc_config_keypair_fini(&cr);
	bc_config_keypair_fini(NULL);
}

LTest(creds, missing_profile_file_and_keys)
{
	bc_config_keypair_t cr = { NULL, NULL, NULL };
	char path[512], msg[512], want[600];

	write_file("credentials", creds_text, path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "nope", &cr, msg, sizeof(msg)),
	    BC_ENOENT);
	snprintf(want, sizeof(want), "%s: no profile 'nope'", path);
	cr_assert_str_eq(msg, want);
	cr_assert_eq(bc_config_creds_load_file(path, "named", &cr, msg, sizeof(msg)),
	    BC_ENOENT);
	cr_assert_eq(bc_config_creds_load_file(path, "nosecret", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	snprintf(want, sizeof(want), "%s: profile 'nosecret' has no "
	    "aws_secret_access_key", path);
	cr_assert_str_eq(msg, want);
	cr_assert_null(cr.access_key);
	snprintf(path, sizeof(path), "%s/none", tmp);
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_ENOENT);
	/* a directory opens but cannot be read */
	cr_assert_eq(bc_config_creds_load_file(tmp, "default", &cr, msg, sizeof(msg)),
	    BC_EIO);
	cr_assert_null(cr.access_key);
}

LTest(creds, failure_keeps_earlier_credentials)
{
	bc_config_keypair_t cr = { NULL, NULL, NULL };
	char path[512];

	write_file("credentials", creds_text, path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, NULL, 0), 0);
	cr_assert_eq(bc_config_creds_load_file(path, "nope", &cr, NULL, 0),
	    BC_ENOENT);
	cr_assert_str_eq(cr.access_key, "AKDEFAULT");
	bc_config_keypair_fini(&cr);
}

LTest(creds, malformed_lines)
{
	bc_config_keypair_t cr = { NULL, NULL, NULL };
	char path[512], msg[512], want[600], *big;

	write_file("c1", "[default]\naws_access_key_id AK\n", path,
	    sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	snprintf(want, sizeof(want), "%s:2: expected 'name = value'", path);
	cr_assert_str_eq(msg, want);
	write_file("c2", "\n\n[default\n", path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	snprintf(want, sizeof(want), "%s:3: malformed section header", path);
	cr_assert_str_eq(msg, want);
	write_file("c3", "[default] junk\n", path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	big = malloc(BC_CREDS_MAX_LINE + 64);
	cr_assert_not_null(big);
	memset(big, 'a', BC_CREDS_MAX_LINE + 10);
	strcpy(big + BC_CREDS_MAX_LINE + 10, "=b\n");
	write_file("c4", big, path, sizeof(path));
	free(big);
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	snprintf(want, sizeof(want), "%s:1: line longer than %d bytes", path,
	    BC_CREDS_MAX_LINE);
	cr_assert_str_eq(msg, want);
	cr_assert_null(cr.access_key);
	/* secrets never appear in messages */
	write_file("c5", "[default]\naws_secret_access_key = TOPSECRET\n",
	    path, sizeof(path));
	cr_assert_eq(bc_config_creds_load_file(path, "default", &cr, msg,
	    sizeof(msg)), BC_EINVAL);
	cr_assert_null(strstr(msg, "TOPSECRET"));
}

/* ---- finish: upstream, credentials, client keys ---------------------------- */

/* load + finish; returns finish's result (or load's -1). */
static int
finish(bc_config_t *c, const char **argv, const char **env)
{
	int rv = load(c, argv, env);

	if (rv < 0)
		return rv;
	return bc_config_finish(c, (char **)env, err, sizeof(err));
}

static void
finish_fails(const char **argv, const char **env, const char *msg)
{
	bc_config_t c;

	cr_assert_eq(finish(&c, argv, env), -1, "expected: %s", msg);
	cr_assert_str_eq(err, msg);
	bc_config_fini(&c);
}

#define ENVKEYS "AWS_ACCESS_KEY_ID=AKENV", "AWS_SECRET_ACCESS_KEY=SKENV"

LTest(finish, file_upstream_resolves_to_absolute_dir)
{
	bc_config_t c;
	char up[600], real[PATH_MAX], sub[PATH_MAX + 16], cwd[PATH_MAX];

	cr_assert_not_null(realpath(tmp, real));
	snprintf(up, sizeof(up), "file://%s/", tmp);
	cr_assert_eq(finish(&c, ARGS("--upstream", up), NOENV), 0, "%s", err);
	cr_assert(c.upstream_is_file);
	cr_assert_str_eq(c.upstream_dir, real);
	cr_assert_null(c.access_key);
	cr_assert_eq(c.nkeys, 0);       /* no creds, no client keys */
	bc_config_fini(&c);
	/* relative: resolved against the cwd */
	snprintf(sub, sizeof(sub), "%s/buckets", tmp);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(tmp), 0);
	cr_assert_eq(finish(&c, NOARGS, NOENV), 0, "%s", err);  /* default */
	snprintf(sub, sizeof(sub), "%s/buckets", real);
	cr_assert_str_eq(c.upstream_dir, sub);
	bc_config_fini(&c);
	cr_assert_eq(chdir(cwd), 0);
}

LTest(finish, file_upstream_errors)
{
	char up[600], want[800], path[512];

	finish_fails(ARGS("--upstream", "file:///nonexistent-bc-dir"), NOENV,
	    "--upstream: file:///nonexistent-bc-dir: No such file or "
	    "directory");
	write_file("plain", "x", path, sizeof(path));
	snprintf(up, sizeof(up), "file://%s", path);
	snprintf(want, sizeof(want), "--upstream: %s: Not a directory", up);
	finish_fails(ARGS("--upstream", up), NOENV, want);
	finish_fails(ARGS("--upstream", "file://"), NOENV,
	    "--upstream: 'file://': no directory");
}

LTest(finish, http_upstream_forms)
{
	static const char *const good[][2] = {
		{ "http://minio:9000/", "http://minio:9000" },
		{ "https://s3.amazonaws.com", "https://s3.amazonaws.com" },
		{ "http://127.0.0.1:9000//", "http://127.0.0.1:9000" },
		{ "http://[::1]:9000", "http://[::1]:9000" },
		{ "https://host/base/", "https://host/base" },
		{ "HTTP://Host_1.example", "HTTP://Host_1.example" },
	};
	bc_config_t c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(finish(&c, ARGS("--upstream", good[i][0]),
		    ENV(ENVKEYS)), 0, "%s: %s", good[i][0], err);
		cr_assert_str_eq(c.upstream, good[i][1]);
		cr_assert(!c.upstream_is_file);
		cr_assert_null(c.upstream_dir);
		bc_config_fini(&c);
	}
}

LTest(finish, http_upstream_errors)
{
	finish_fails(ARGS("--upstream", "ftp://host"), ENV(ENVKEYS),
	    "--upstream: 'ftp://host' must start with http://, https:// or "
	    "file://");
	finish_fails(ARGS("--upstream", "minio:9000"), ENV(ENVKEYS),
	    "--upstream: 'minio:9000' must start with http://, https:// or "
	    "file://");
	finish_fails(ARGS("--upstream", "http://"), ENV(ENVKEYS),
	    "--upstream: 'http://' has no host");
	finish_fails(ARGS("--upstream", "http:///path"), ENV(ENVKEYS),
	    "--upstream: 'http:///path' has no host");
	finish_fails(ARGS("--upstream", "http://h/?x=1"), ENV(ENVKEYS),
	    "--upstream: 'http://h/?x=1': no query or fragment allowed");
	finish_fails(ARGS("--upstream", "http://h#f"), ENV(ENVKEYS),
	    "--upstream: 'http://h#f': no query or fragment allowed");
	finish_fails(ARGS("--upstream", "http://u:p@h"), ENV(ENVKEYS),
	    "--upstream: no user:password@ in the URL (credentials come from "
	    "the environment or a profile)");
	finish_fails(ARGS("--upstream", "http://h:0"), ENV(ENVKEYS),
	    "--upstream: 'http://h:0': port must be 1-65535");
	finish_fails(ARGS("--upstream", "http://h:65536"), ENV(ENVKEYS),
	    "--upstream: 'http://h:65536': port must be 1-65535");
	finish_fails(ARGS("--upstream", "http://h:"), ENV(ENVKEYS),
	    "--upstream: 'http://h:': port must be 1-65535");
	finish_fails(ARGS("--upstream", "http://h x"), ENV(ENVKEYS),
	    "--upstream: 'http://h x': contains a blank or control character");
	finish_fails(ARGS("--upstream", "http://[::1"), ENV(ENVKEYS),
	    "--upstream: 'http://[::1': bad IPv6 address");
	/* http(s) needs credentials: the chain ends at the instance
	 * metadata service, whose rotating keys clients cannot sign with */
	finish_fails(ARGS("--upstream", "http://h"), ENV("HOME=/nonexistent"),
	    "--upstream: http://h needs credentials: set AWS_ACCESS_KEY_ID and "
	    "AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials "
	    "(--profile); or, to use the instance metadata service's "
	    "(--credentials imds), whose keys rotate, give --client-key or "
	    "--anonymous: clients cannot sign with them");
	finish_fails(ARGS("--upstream", "http://h"), ENV("HOME=/nonexistent",
	    "AWS_EC2_METADATA_DISABLED=TRUE"),
	    "--upstream: http://h needs credentials: set AWS_ACCESS_KEY_ID and "
	    "AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials "
	    "(--profile), or web identity or container credentials "
	    "(AWS_EC2_METADATA_DISABLED rules out the instance metadata "
	    "service)");
}

LTest(finish, listen_validation)
{
	static const char *const good[] = { "127.0.0.1:8080", "[::1]:8080",
	    "0.0.0.0:1", "localhost:65535", "[::]:80", "my-host.local:443" };
	static const char *const bad[][2] = {
		{ "8080", "'8080': no port (want HOST:PORT)" },
		{ "host:", "'host:': port must be 1-65535" },
		{ "host:0", "'host:0': port must be 1-65535" },
		{ "host:65536", "'host:65536': port must be 1-65535" },
		{ "host:99999999999999999999", "port must be 1-65535" },
		{ "host:80a", "'host:80a': port must be 1-65535" },
		{ "::1:8080", "'::1:8080': no host" },
		{ "[::1]8080", "'[::1]8080': junk after ']'" },
		{ "[zz]:80", "'[zz]:80': bad IPv6 address" },
		{ ":80", "':80': no host" },
		{ "a b:80", "bad character in host" },
		{ "", "no host" },
		{ "[::1]", "'[::1]': no port (want HOST:PORT)" },
	};
	char up[600], arg[600];
	bc_config_t c;

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(arg, sizeof(arg), "--listen=%s", good[i]);
		cr_assert_eq(finish(&c, ARGS(up, arg), NOENV), 0, "%s: %s",
		    good[i], err);
		bc_config_fini(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(arg, sizeof(arg), "--listen=%s", bad[i][0]);
		cr_assert_eq(finish(&c, ARGS(up, arg), NOENV), -1, "%s",
		    bad[i][0]);
		cr_assert_eq(strncmp(err, "--listen: ", 10), 0, "%s", err);
		cr_assert_not_null(strstr(err, bad[i][1]), "%s: %s",
		    bad[i][0], err);
		bc_config_fini(&c);
	}
}

LTest(finish, other_checks)
{
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	finish_fails(ARGS(up, "--upstream-addressing", "vhost"), NOENV,
	    "--upstream-addressing: 'vhost' is not path or virtual");
	finish_fails(ARGS(up, "--policy", "pins"), NOENV,
	    "--policy: 'pins' is not a policy (lru, pin, cost, planned, "
	    "auto)");
	finish_fails(ARGS(up, "--policy", "LRU"), NOENV,
	    "--policy: 'LRU' is not a policy (lru, pin, cost, planned, "
	    "auto)");
	finish_fails(ARGS(up, "--region="), NOENV,
	    "--region: '' is not a region name");
	finish_fails(ARGS(up, "--region=us east"), NOENV,
	    "--region: 'us east' is not a region name");
	finish_fails(ARGS(up, "--domain=a/b"), NOENV,
	    "--domain: 'a/b' is not a host name");
	finish_fails(ARGS(up, "--max-connections=0"), NOENV,
	    "--max-connections: must be at least 1");
}

/* The disk tier takes both options or neither, and room for one chunk;
 * the directory itself is checked when the tier opens (main.c). */
LTest(finish, disk_tier_options)
{
	const char *env[] = { "BUCKETCACHE_DISK_DIR=/var/cache/bc",
	    "BUCKETCACHE_DISK_SIZE=2G", NULL };
	bc_config_t c;
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	finish_fails(ARGS(up, "--disk-dir", tmp), NOENV,
	    "--disk-dir: needs --disk-size (the disk tier's bound, e.g. "
	    "100G)");
	finish_fails(ARGS(up, "--disk-size", "1G"), NOENV,
	    "--disk-size: needs --disk-dir (the directory the disk tier "
	    "keeps its files in)");
	finish_fails(ARGS(up, "--disk-dir", tmp, "--disk-size", "8M"), NOENV,
	    "--disk-size: 8388608 is too small for one chunk (--chunk-size "
	    "8388608, and 12288 bytes of file header and metadata)");
	cr_assert_eq(finish(&c, ARGS(up, "--disk-dir", tmp, "--disk-size",
	    "1G"), NOENV), 0, "%s", err);
	cr_assert_str_eq(c.disk_dir, tmp);
	cr_assert_eq(c.disk_size, 1ull << 30);
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up, "--chunk-size", "64K", "--disk-size",
	    "1M"), env), 0, "%s", err);
	cr_assert_str_eq(c.disk_dir, "/var/cache/bc");
	cr_assert_eq(c.disk_size, 1ull << 20, "the flag wins over the env");
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up), NOENV), 0, "%s", err);
	cr_assert_str_eq(c.disk_dir, "");
	cr_assert_eq(c.disk_size, 0, "no disk tier by default");
	bc_config_fini(&c);
}

/* ---- the Redis tier's options ------------------------------------------- */

/* One URL that parses: what it must give. */
typedef struct {
	const char *url;
	const char *host;
	unsigned    port;
	const char *user, *pass;    /* NULL: none */
	unsigned    db;
} redis_good_t;

LTest(finish, redis_urls_parse)
{
	static const redis_good_t good[] = {
		{ "redis://cache", "cache", 6379, NULL, NULL, 0 },
		{ "redis://127.0.0.1:7000", "127.0.0.1", 7000, NULL, NULL, 0 },
		{ "REDIS://Cache-1.example:1/", "Cache-1.example", 1, NULL,
		    NULL, 0 },
		{ "redis://h:65535/15", "h", 65535, NULL, NULL, 15 },
		{ "redis://h/2147483647", "h", 6379, NULL, NULL, 2147483647u },
		{ "redis://[::1]", "::1", 6379, NULL, NULL, 0 },
		{ "redis://[::1]:6380/3", "::1", 6380, NULL, NULL, 3 },
		{ "redis://[2001:db8::7]:7001", "2001:db8::7", 7001, NULL, NULL,
		    0 },
		{ "redis://:s3cret@h", "h", 6379, NULL, "s3cret", 0 },
		{ "redis://bc:pw@h:7000/1", "h", 7000, "bc", "pw", 1 },
		/* percent-decoded; raw '@', ':' and '/' in the password */
		{ "redis://b%63:p%40ss%2Fw%3a@h", "h", 6379, "bc", "p@ss/w:",
		    0 },
		{ "redis://u:a@b:c/d@[::1]:9/4", "::1", 9, "u", "a@b:c/d", 4 },
		{ "redis://u:%C3%A9%ff@h", "h", 6379, "u", "\xc3\xa9\xff", 0 },
	};
	bc_redis_addr_t a;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const redis_good_t *g = &good[i];

		err[0] = '\0';
		cr_assert_eq(bc_config_redis_parse(g->url, &a, err,
		    sizeof(err)), 0, "%s: %s", g->url, err);
		cr_assert_str_eq(a.host, g->host, "%s", g->url);
		cr_assert_eq(a.port, g->port, "%s", g->url);
		cr_assert_eq(a.db, g->db, "%s", g->url);
		if (g->user == NULL)
			cr_assert_null(a.user, "%s", g->url);
		else
			cr_assert_str_eq(a.user, g->user, "%s", g->url);
		if (g->pass == NULL)
			cr_assert_null(a.pass, "%s", g->url);
		else
			cr_assert_str_eq(a.pass, g->pass, "%s", g->url);
		bc_config_redis_fini(&a);
	}
	bc_config_redis_fini(NULL);
}

LTest(finish, redis_url_errors)
{
	static const char *const bad[][2] = {
		{ "rediss://h:6380", "rediss://: TLS needs hiredis >= 1.0; "
		    "Debian 12's 0.14 has none" },
		{ "REDISS://:pw@h", "rediss://: TLS needs hiredis >= 1.0; "
		    "Debian 12's 0.14 has none" },
		{ "http://h:6379", "'http://h:6379' must start with redis:// "
		    "(redis://[[user]:pass@]host[:port][/db])" },
		{ "h:6379", "'h:6379' must start with redis:// "
		    "(redis://[[user]:pass@]host[:port][/db])" },
		{ "unix:///run/redis.sock", "'unix:///run/redis.sock' must "
		    "start with redis:// (redis://[[user]:pass@]host[:port]"
		    "[/db])" },
		{ "", "'' must start with redis:// "
		    "(redis://[[user]:pass@]host[:port][/db])" },
		{ "redis://", "'redis://': no host" },
		{ "redis:///0", "'redis:///0': no host" },
		{ "redis://:7000", "'redis://:7000': no host" },
		{ "redis://h:0", "'redis://h:0': port must be 1-65535" },
		{ "redis://h:65536", "'redis://h:65536': port must be "
		    "1-65535" },
		{ "redis://h:", "'redis://h:': port must be 1-65535" },
		{ "redis://h:63x", "'redis://h:63x': port must be 1-65535" },
		{ "redis://h:99999999999999999999999",
		    "'redis://h:99999999999999999999999': port must be "
		    "1-65535" },
		{ "redis://h/x", "'redis://h/x': the database (after the '/') "
		    "must be a number from 0 to 2147483647" },
		{ "redis://h/-1", "'redis://h/-1': the database (after the "
		    "'/') must be a number from 0 to 2147483647" },
		{ "redis://h/2147483648", "'redis://h/2147483648': the "
		    "database (after the '/') must be a number from 0 to "
		    "2147483647" },
		{ "redis://h/0/", "'redis://h/0/': the database (after the "
		    "'/') must be a number from 0 to 2147483647" },
		{ "redis://h/0?x=1", "'redis://h/0?x=1': no query or "
		    "fragment allowed" },
		{ "redis://h#f", "'redis://h#f': no query or fragment "
		    "allowed" },
		{ "redis://[::1", "'redis://[::1': bad IPv6 address" },
		{ "redis://[zz]:1", "'redis://[zz]:1': bad IPv6 address" },
		{ "redis://[::1]6379", "'redis://[::1]6379': junk after ']'" },
		{ "redis://::1:6379", "'redis://::1:6379': no host" },
		{ "redis://h!x", "'redis://h!x': bad character in host (IPv6 "
		    "addresses go in [brackets])" },
		{ "redis://h x", "'redis://h x': contains a blank or control "
		    "character" },
		{ "redis://h\n", "'redis://h?': contains a blank or control "
		    "character" },
		{ "\nredis:\v://u:p@h", "'?redis:?://***@h': contains a blank "
		    "or control character" },
		{ "redis://user@h", "'redis://***@h': a user needs a password "
		    "(redis://user:pass@host)" },
		{ "redis://@h", "'redis://***@h': nothing before '@' (want "
		    "redis://[[user]:pass@]host)" },
		{ "redis://u:@h", "'redis://***@h': empty password" },
		{ "redis://:@h", "'redis://***@h': empty password" },
		{ "redis://u:p%4@h", "'redis://***@h': bad percent-encoding "
		    "in the user or password" },
		{ "redis://u:p%zz@h", "'redis://***@h': bad percent-encoding "
		    "in the user or password" },
		{ "redis://u:p%00x@h", "'redis://***@h': bad percent-encoding "
		    "in the user or password" },
		{ "redis://u%2:p@h", "'redis://***@h': bad percent-encoding "
		    "in the user or password" },
		{ "redis://u:pw@h:0", "'redis://***@h:0': port must be "
		    "1-65535" },
		{ "u:pw@h", "'***@h' must start with redis:// "
		    "(redis://[[user]:pass@]host[:port][/db])" },
	};
	bc_redis_addr_t a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(bc_config_redis_parse(bad[i][0], &a, err,
		    sizeof(err)), BC_EINVAL, "%s", bad[i][0]);
		cr_assert_str_eq(err, bad[i][1], "%s", bad[i][0]);
		cr_assert_null(a.host);
		cr_assert_null(a.user);
		cr_assert_null(a.pass);
		bc_config_redis_fini(&a);
	}
}

LTest(finish, redis_url_bounds)
{
	char url[BC_REDIS_URL_MAX + 16], want[200];
	bc_redis_addr_t a;

	/* a host of 255 bytes is fine, 256 is not */
	memset(url, 0, sizeof(url));
	strcpy(url, "redis://");
	memset(url + 8, 'h', 255);
	cr_assert_eq(bc_config_redis_parse(url, &a, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(strlen(a.host), 255);
	bc_config_redis_fini(&a);
	url[8 + 255] = 'h';
	cr_assert_eq(bc_config_redis_parse(url, &a, err, sizeof(err)),
	    BC_EINVAL);
	snprintf(want, sizeof(want), "'%.64s': host name longer than 255 "
	    "bytes", url);
	cr_assert_str_eq(err, want);
	/* a URL of BC_REDIS_URL_MAX bytes is fine (a long password) */
	memset(url, 0, sizeof(url));
	strcpy(url, "redis://:");
	memset(url + 9, 'p', BC_REDIS_URL_MAX - 9 - 2);
	strcat(url, "@h");
	cr_assert_eq(strlen(url), BC_REDIS_URL_MAX);
	cr_assert_eq(bc_config_redis_parse(url, &a, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(strlen(a.pass), BC_REDIS_URL_MAX - 11);
	bc_config_redis_fini(&a);
	strcat(url, "x");
	cr_assert_eq(bc_config_redis_parse(url, &a, err, sizeof(err)),
	    BC_EINVAL);
	cr_assert_str_eq(err, "'redis://***@hx': longer than 2048 bytes");
}

LTest(finish, redis_options)
{
	const char *env[] = { "BUCKETCACHE_REDIS=redis://a:7000 "
	    "redis://b:7001  redis://[::1]:7002", "BUCKETCACHE_REDIS_SIZE=4G",
	    NULL };
	bc_config_t c;
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	/* defaults: no Redis tier */
	cr_assert_eq(finish(&c, ARGS(up), NOENV), 0, "%s", err);
	cr_assert_eq(c.redis.n, 0);
	cr_assert_null(c.redis_addrs);
	cr_assert_eq(c.nredis_addrs, 0);
	cr_assert_eq(c.redis_size, 0);
	cr_assert_eq(c.redis_ttl, 24ull * 3600 * 1000);
	cr_assert_eq(c.redis_timeout, 2000);
	cr_assert_eq(c.redis_connect_timeout, 1000);
	bc_config_fini(&c);
	/* one server */
	cr_assert_eq(finish(&c, ARGS(up, "--redis", "redis://:pw@r1:6380/2",
	    "--redis-size", "10G", "--redis-ttl", "1h", "--redis-timeout",
	    "500ms", "--redis-connect-timeout", "250ms"), NOENV), 0, "%s",
	    err);
	cr_assert_eq(c.nredis_addrs, 1);
	cr_assert_str_eq(c.redis_addrs[0].host, "r1");
	cr_assert_eq(c.redis_addrs[0].port, 6380);
	cr_assert_str_eq(c.redis_addrs[0].pass, "pw");
	cr_assert_eq(c.redis_addrs[0].db, 2);
	cr_assert_eq(c.redis_size, 10ull << 30);
	cr_assert_eq(c.redis_ttl, 3600000);
	cr_assert_eq(c.redis_timeout, 500);
	cr_assert_eq(c.redis_connect_timeout, 250);
	/* finish again (derived fields are rebuilt, not leaked) */
	cr_assert_eq(bc_config_finish(&c, (char **)NOENV, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(c.nredis_addrs, 1);
	bc_config_fini(&c);
	/* cluster seeds, repeated flags or blank-separated in the env */
	cr_assert_eq(finish(&c, ARGS(up, "--redis", "redis://s1:7000",
	    "--redis=redis://s2:7001/0", "--redis-size", "1G"), NOENV), 0,
	    "%s", err);
	cr_assert_eq(c.nredis_addrs, 2);
	cr_assert_str_eq(c.redis_addrs[0].host, "s1");
	cr_assert_eq(c.redis_addrs[1].port, 7001);
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up), env), 0, "%s", err);
	cr_assert_eq(c.nredis_addrs, 3);
	cr_assert_str_eq(c.redis_addrs[2].host, "::1");
	cr_assert_eq(c.redis_addrs[2].port, 7002);
	cr_assert_eq(c.redis_size, 4ull << 30);
	bc_config_fini(&c);
	/* flags replace the environment's list */
	cr_assert_eq(finish(&c, ARGS(up, "--redis", "redis://f"), env), 0,
	    "%s", err);
	cr_assert_eq(c.nredis_addrs, 1);
	cr_assert_str_eq(c.redis_addrs[0].host, "f");
	bc_config_fini(&c);
}

LTest(finish, redis_option_errors)
{
	bc_config_t c;
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	/* no --redis-size: the tier asks the server's maxmemory */
	cr_assert_eq(finish(&c, ARGS(up, "--redis", "redis://h"), NOENV), 0,
	    "%s", err);
	cr_assert_eq(c.redis_size, 0);
	cr_assert_eq(c.nredis_addrs, 1);
	bc_config_fini(&c);
	finish_fails(ARGS(up, "--redis-size", "1G"), NOENV,
	    "--redis-size: needs --redis (the Redis server: "
	    "redis://host[:port])");
	finish_fails(ARGS(up, "--redis", "redis://h", "--redis-size", "1M"),
	    NOENV, "--redis-size: 1048576 is less than one chunk "
	    "(--chunk-size 8388608)");
	finish_fails(ARGS(up, "--redis", "rediss://h", "--redis-size", "1G"),
	    NOENV, "--redis: rediss://: TLS needs hiredis >= 1.0; Debian 12's "
	    "0.14 has none");
	finish_fails(ARGS(up, "--redis", "redis://a", "--redis",
	    "redis://b:7000/1", "--redis-size", "1G"), NOENV,
	    "--redis: database 1 with several seeds: Redis Cluster has "
	    "database 0 only");
	finish_fails(ARGS(up, "--redis", "redis://a", "--redis", "redis:/b",
	    "--redis-size", "1G"), NOENV, "--redis: 'redis:/b' must start "
	    "with redis:// (redis://[[user]:pass@]host[:port][/db])");
	finish_fails(ARGS(up, "--redis-ttl", "0"), NOENV,
	    "--redis-ttl: must be at least 1s");
	finish_fails(ARGS(up, "--redis-ttl", "999ms"), NOENV,
	    "--redis-ttl: must be at least 1s");
	finish_fails(ARGS(up, "--redis-timeout", "0"), NOENV,
	    "--redis-timeout: must be at least 1ms");
	finish_fails(ARGS(up, "--redis-connect-timeout", "0ms"), NOENV,
	    "--redis-connect-timeout: must be at least 1ms");
	load_fails(ARGS("--redis-ttl", "1d"), NOENV,
	    "--redis-ttl: '1d' is not a duration (like 250ms, 5s, 2m, 1h; a "
	    "bare number is seconds)");
	load_fails(ARGS("--redis-size", "lots"), NOENV,
	    "--redis-size: 'lots' is not a size (like 512, 64K, 8M, 2G, 1T)");
}

/* Neither the user nor the password of a --redis URL is ever shown. */
LTest(finish, redis_errors_never_show_credentials)
{
	static const char *const bad[] = {
		"redis://TOPUSER:TOPSECRET@h:0",
		"redis://TOPUSER:TOPSECRET@",
		"redis://TOPUSER:TOPSECRET@h/x",
		"redis://TOPUSER:TOPSECRET@h?x",
		"redis://TOPUSER:TOPSECRET%zz@h",
		"redis://TOPUSER:TOPSECRET@[::1",
		"rediss://TOPUSER:TOPSECRET@h",
		"http://TOPUSER:TOPSECRET@h",
		"TOPUSER:TOPSECRET@h",
		"redis://TOPUSER:TOPSECRET@h x",
		"redis://TOPUSER:TOP SECRET@h",
	};
	char up[600], arg[300];
	bc_config_t c;

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(arg, sizeof(arg), "--redis=%s", bad[i]);
		cr_assert_eq(finish(&c, ARGS(up, arg, "--redis-size=1G"),
		    NOENV), -1, "%s", bad[i]);
		cr_assert_eq(strncmp(err, "--redis: ", 9), 0, "%s", err);
		cr_assert_null(strstr(err, "TOPSECRET"), "%s", err);
		cr_assert_null(strstr(err, "TOPUSER"), "%s", err);
		cr_assert_null(strchr(err, '\n'));
		bc_config_fini(&c);
	}
}

LTest(finish, env_credentials_and_default_key)
{
	bc_config_t c;
	const bc_client_key_t *k;

	cr_assert_eq(finish(&c, ARGS("--upstream", "http://h:9000"),
	    ENV(ENVKEYS, "AWS_SESSION_TOKEN=TOKEN")), 0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKENV");
	cr_assert_str_eq(c.secret_key, "SKENV");
	cr_assert_str_eq(c.session_token, "TOKEN");
	cr_assert_eq(c.nkeys, 1);
	k = bc_config_key(&c, "AKENV");
	cr_assert_not_null(k);
	cr_assert_str_eq(k->secret_key, "SKENV");
	cr_assert_null(k->allow);
	cr_assert(bc_config_key_allows(k, "any", "thing"));
	cr_assert(bc_config_key_allows(k, "", ""));
	cr_assert_str_eq(bc_config_secret(&c, "AKENV"), "SKENV");
	cr_assert_null(bc_config_secret(&c, "OTHER"));
	cr_assert_null(bc_config_secret(&c, NULL));
	/* finish twice re-derives without leaking */
	cr_assert_eq(bc_config_finish(&c, (char **)ENV(ENVKEYS), err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_null(c.session_token);
	bc_config_fini(&c);
	finish_fails(ARGS("--upstream", "http://h"),
	    ENV("AWS_ACCESS_KEY_ID=AK"),
	    "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
	finish_fails(ARGS("--upstream", "http://h"),
	    ENV("AWS_SECRET_ACCESS_KEY=SK", "AWS_ACCESS_KEY_ID="),
	    "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
}

LTest(finish, profile_credentials)
{
	bc_config_t c;
	char path[512], home[600], file[600], awsdir[600], cpath[700];

	write_file("credentials", creds_text, path, sizeof(path));
	snprintf(file, sizeof(file), "AWS_SHARED_CREDENTIALS_FILE=%s", path);
	/* default profile through AWS_SHARED_CREDENTIALS_FILE */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"),
	    ENV(file, "HOME=/nonexistent")), 0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKDEFAULT");
	cr_assert_null(c.session_token);
	bc_config_fini(&c);
	/* AWS_PROFILE */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"),
	    ENV(file, "AWS_PROFILE=prod")), 0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKPROD");
	cr_assert_str_eq(c.session_token, "tok==");
	bc_config_fini(&c);
	/* env keys win over AWS_PROFILE ... */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"),
	    ENV(file, "AWS_PROFILE=prod", ENVKEYS)), 0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKENV");
	bc_config_fini(&c);
	/* ... but an explicit --profile wins over env keys (as aws-cli) */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h", "--profile",
	    "prod"), ENV(file, "AWS_PROFILE=default", ENVKEYS)), 0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKPROD");
	bc_config_fini(&c);
	/* $HOME/.aws/credentials */
	snprintf(awsdir, sizeof(awsdir), "%s/.aws", tmp);
	cr_assert_eq(mkdir(awsdir, 0700), 0);
	snprintf(cpath, sizeof(cpath), "%s/credentials", awsdir);
	cr_assert_eq(rename(path, cpath), 0);
	snprintf(home, sizeof(home), "HOME=%s", tmp);
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"), ENV(home)),
	    0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKDEFAULT");
	bc_config_fini(&c);
	/* "~/" in AWS_SHARED_CREDENTIALS_FILE */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h", "--profile",
	    "prod"), ENV(home, "AWS_SHARED_CREDENTIALS_FILE=~/.aws/credentials")),
	    0, "%s", err);
	cr_assert_str_eq(c.access_key, "AKPROD");
	bc_config_fini(&c);
}

LTest(finish, profile_errors)
{
	char path[512], file[600], up[600], want[800];
	bc_config_t c;

	write_file("credentials", creds_text, path, sizeof(path));
	snprintf(file, sizeof(file), "AWS_SHARED_CREDENTIALS_FILE=%s", path);
	snprintf(want, sizeof(want), "upstream credentials: %s: no profile "
	    "'nope'", path);
	finish_fails(ARGS("--upstream", "https://h", "--profile", "nope"),
	    ENV(file), want);
	finish_fails(ARGS("--upstream", "https://h"),
	    ENV(file, "AWS_PROFILE=nope"), want);
	snprintf(want, sizeof(want), "upstream credentials: %s: profile "
	    "'nosecret' has no aws_secret_access_key", path);
	finish_fails(ARGS("--upstream", "https://h", "--profile=nosecret"),
	    ENV(file), want);
	finish_fails(ARGS("--upstream", "https://h", "--profile=x"), NOENV,
	    "profile 'x': no credentials file (HOME is not set)");
	finish_fails(ARGS("--upstream", "https://h", "--profile=x"),
	    ENV("AWS_SHARED_CREDENTIALS_FILE=/nonexistent/creds"),
	    "upstream credentials: /nonexistent/creds: No such file or "
	    "directory");
	/* implicit default: a missing file or profile just means none */
	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	cr_assert_eq(finish(&c, ARGS(up),
	    ENV("AWS_SHARED_CREDENTIALS_FILE=/nonexistent/creds")), 0, "%s",
	    err);
	cr_assert_null(c.access_key);
	bc_config_fini(&c);
	write_file("other", "[other]\naws_access_key_id=a\n"
	    "aws_secret_access_key=b\n", path, sizeof(path));
	snprintf(file, sizeof(file), "AWS_SHARED_CREDENTIALS_FILE=%s", path);
	cr_assert_eq(finish(&c, ARGS(up), ENV(file)), 0, "%s", err);
	cr_assert_null(c.access_key);
	bc_config_fini(&c);
}

/* ---- fetched credential sources ------------------------------------------ */

#define NOIMDS "AWS_EC2_METADATA_DISABLED=true", "HOME=/nonexistent"
#define WI "AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/token", \
	"AWS_ROLE_ARN=arn:aws:iam::123456789012:role/r"

LTest(creds_source, the_chain_order)
{
	bc_config_t c;
	char path[512], file[600];

	/* env first, even with everything else set */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"), ENV(ENVKEYS,
	    WI, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/x")), 0, "%s",
	    err);
	cr_assert_eq(c.creds.source, BC_CREDS_ENV);
	cr_assert(c.creds.chained);
	cr_assert_str_eq(c.access_key, "AKENV");
	cr_assert_eq(c.nkeys, 1, "clients sign with the static pair");
	bc_config_fini(&c);
	/* then web identity, before a profile */
	write_file("credentials", "[default]\naws_access_key_id=AKP\n"
	    "aws_secret_access_key=SKP\n", path, sizeof(path));
	snprintf(file, sizeof(file), "AWS_SHARED_CREDENTIALS_FILE=%s", path);
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--anonymous"), ENV(WI, file, "AWS_REGION=eu-west-1")), 0, "%s",
	    err);
	cr_assert_eq(c.creds.source, BC_CREDS_WEB_IDENTITY);
	cr_assert_null(c.access_key);
	cr_assert_eq(c.nkeys, 0);
	cr_assert_str_eq(c.creds.role_arn,
	    "arn:aws:iam::123456789012:role/r");
	cr_assert_str_eq(c.creds.token_file, "/var/run/token");
	cr_assert_null(c.creds.session_name);
	cr_assert_str_eq(c.creds.sts_url, "https://sts.eu-west-1.amazonaws.com");
	bc_config_fini(&c);
	/* then the profile, before container credentials */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h"), ENV(file,
	    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/x")), 0, "%s", err);
	cr_assert_eq(c.creds.source, BC_CREDS_PROFILE);
	cr_assert_str_eq(c.access_key, "AKP");
	bc_config_fini(&c);
	/* then ECS, before IMDS */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--client-key", "CK:cs"), ENV("HOME=/nonexistent",
	    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/x?y")), 0, "%s", err);
	cr_assert_eq(c.creds.source, BC_CREDS_ECS);
	cr_assert_str_eq(c.creds.ecs_url, "http://169.254.170.2/v2/x?y");
	cr_assert_null(c.creds.ecs_token);
	bc_config_fini(&c);
	/* then IMDS */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--anonymous"), ENV("HOME=/nonexistent")), 0, "%s", err);
	cr_assert_eq(c.creds.source, BC_CREDS_IMDS);
	cr_assert_str_eq(c.creds.imds_url, "http://169.254.169.254");
	cr_assert_eq(c.creds.imds_timeout_ms, 1000);
	cr_assert_eq(c.creds.imds_attempts, 3);
	bc_config_fini(&c);
	/* file:// looks no further than the profile */
	{
		char up[600];

		snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
		cr_assert_eq(finish(&c, ARGS(up), ENV("HOME=/nonexistent",
		    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/x")), 0, "%s",
		    err);
		cr_assert_eq(c.creds.source, BC_CREDS_NONE);
		bc_config_fini(&c);
		finish_fails(ARGS(up, "--credentials", "imds"), NOENV,
		    "--credentials imds: the file:// upstream signs nothing");
	}
}

LTest(creds_source, named_sources)
{
	bc_config_t c;

	/* a named source is the only one looked at */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "imds", "--anonymous"), ENV(ENVKEYS,
	    "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:8111/",
	    "AWS_METADATA_SERVICE_TIMEOUT=2",
	    "AWS_METADATA_SERVICE_NUM_ATTEMPTS=5")), 0, "%s", err);
	cr_assert_eq(c.creds.source, BC_CREDS_IMDS);
	cr_assert(!c.creds.chained);
	cr_assert_null(c.access_key, "the env pair is not read");
	cr_assert_str_eq(c.creds.imds_url, "http://127.0.0.1:8111");
	cr_assert_eq(c.creds.imds_timeout_ms, 2000);
	cr_assert_eq(c.creds.imds_attempts, 5);
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "imds", "--anonymous"), ENV(
	    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6")), 0, "%s", err);
	cr_assert_str_eq(c.creds.imds_url, "http://[fd00:ec2::254]");
	bc_config_fini(&c);
	/* none: nothing, and requests go unsigned */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "none"), ENV(ENVKEYS)), 0, "%s", err);
	cr_assert_eq(c.creds.source, BC_CREDS_NONE);
	cr_assert_null(c.access_key);
	cr_assert_eq(c.nkeys, 0);
	bc_config_fini(&c);
	/* web identity: the session name, an STS override, the region */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "web-identity", "--client-key", "CK:cs",
	    "--region", "cn-north-1"), ENV(WI,
	    "AWS_ROLE_SESSION_NAME=job-7@x.y")), 0, "%s", err);
	cr_assert_str_eq(c.creds.session_name, "job-7@x.y");
	cr_assert_str_eq(c.creds.sts_url,
	    "https://sts.cn-north-1.amazonaws.com.cn");
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "web-identity", "--anonymous"), ENV(WI,
	    "AWS_DEFAULT_REGION=ap-south-1",
	    "AWS_ENDPOINT_URL_STS=http://127.0.0.1:9000/sts//")), 0, "%s",
	    err);
	cr_assert_str_eq(c.creds.sts_url, "http://127.0.0.1:9000/sts");
	bc_config_fini(&c);
	/* ECS full URI with its token (file wins) */
	cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
	    "--credentials", "ecs", "--anonymous"), ENV(
	    "AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1:51679/creds",
	    "AWS_CONTAINER_AUTHORIZATION_TOKEN=tok",
	    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=/var/run/t")), 0, "%s",
	    err);
	cr_assert_str_eq(c.creds.ecs_url, "http://127.0.0.1:51679/creds");
	cr_assert_null(c.creds.ecs_token);
	cr_assert_str_eq(c.creds.ecs_token_file, "/var/run/t");
	bc_config_fini(&c);
	static const char *const full_ok[] = { "http://169.254.170.23/v1/c",
	    "http://[fd00:ec2::23]/v1/c", "http://localhost:80/",
	    "https://creds.example.com/x", "http://[::1]:9/x",
	    "http://127.1.2.3/" };
	for (size_t i = 0; i < sizeof(full_ok) / sizeof(*full_ok); i++) {
		char v[200];

		snprintf(v, sizeof(v), "AWS_CONTAINER_CREDENTIALS_FULL_URI=%s",
		    full_ok[i]);
		cr_assert_eq(finish(&c, ARGS("--upstream", "https://h",
		    "--anonymous"), ENV(NOIMDS, v,
		    "AWS_CONTAINER_AUTHORIZATION_TOKEN=tok")), 0, "%s: %s",
		    full_ok[i], err);
		cr_assert_eq(c.creds.source, BC_CREDS_ECS);
		cr_assert_str_eq(c.creds.ecs_token, "tok");
		bc_config_fini(&c);
	}
}

LTest(creds_source, errors)
{
	finish_fails(ARGS("--upstream", "https://h", "--credentials", "iam"),
	    NOENV, "--credentials: 'iam' is not auto, env, web-identity, "
	    "profile, ecs, imds or none");
	finish_fails(ARGS("--upstream", "https://h", "--credentials", "env"),
	    ENV(WI), "--credentials env: AWS_ACCESS_KEY_ID and "
	    "AWS_SECRET_ACCESS_KEY are not set");
	finish_fails(ARGS("--upstream", "https://h", "--credentials",
	    "web-identity"), NOENV, "--credentials web-identity: "
	    "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not set");
	finish_fails(ARGS("--upstream", "https://h", "--credentials", "ecs"),
	    NOENV, "--credentials ecs: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI "
	    "and AWS_CONTAINER_CREDENTIALS_FULL_URI are not set");
	finish_fails(ARGS("--upstream", "https://h", "--credentials", "imds"),
	    ENV(NOIMDS), "--credentials imds: AWS_EC2_METADATA_DISABLED is "
	    "true");
	/* rotating keys need client keys or anonymous clients */
	finish_fails(ARGS("--upstream", "https://h"), ENV(WI),
	    "--credentials: the web-identity source's keys rotate, so "
	    "clients cannot sign with the gateway's key pair: give "
	    "--client-key (keys clients sign with) or --anonymous (unsigned "
	    "clients use the gateway's credentials)");
	finish_fails(ARGS("--upstream", "https://h", "--credentials", "imds"),
	    NOENV, "--credentials: the imds source's keys rotate, so "
	    "clients cannot sign with the gateway's key pair: give "
	    "--client-key (keys clients sign with) or --anonymous (unsigned "
	    "clients use the gateway's credentials)");
	/* half settings and bad values */
	finish_fails(ARGS("--upstream", "https://h"),
	    ENV("AWS_ROLE_ARN=arn:aws:iam::1:role/r"), "AWS_ROLE_ARN is set "
	    "but AWS_WEB_IDENTITY_TOKEN_FILE is not (web identity needs "
	    "both)");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_WEB_IDENTITY_TOKEN_FILE=/t", "AWS_ROLE_ARN=role/r"),
	    "AWS_ROLE_ARN: 'role/r' is not a role ARN "
	    "(arn:PARTITION:iam::ACCOUNT:role/NAME)");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV(WI, "AWS_ROLE_SESSION_NAME=a b"), "AWS_ROLE_SESSION_NAME: "
	    "'a b' must be 2-64 of A-Z a-z 0-9 _+=,.@-");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV(WI, "AWS_ENDPOINT_URL_STS=ftp://x"), "AWS_ENDPOINT_URL_STS: "
	    "'ftp://x' is not an http(s)://host[:port][/path] URL");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV(WI, "AWS_REGION=Bad Region"), "web identity: region 'Bad "
	    "Region' (AWS_REGION, AWS_DEFAULT_REGION or --region) cannot name "
	    "an STS endpoint");
	static const char *const full_bad[] = { "http://evil.example/creds",
	    "http://169.254.169.254/", "file:///etc/passwd", "http://u@127.0.0.1/",
	    "http://127.0.0.1:0/", "http://128.0.0.1/", "http://127.0.0.1.nip.io/",
	    "" };
	for (size_t i = 0; i + 1 < sizeof(full_bad) / sizeof(*full_bad); i++) {
		char v[200], want[400];

		snprintf(v, sizeof(v), "AWS_CONTAINER_CREDENTIALS_FULL_URI=%s",
		    full_bad[i]);
		snprintf(want, sizeof(want), "AWS_CONTAINER_CREDENTIALS_FULL_URI: "
		    "'%s' must be https://..., or http:// to a loopback host, "
		    "169.254.170.2, 169.254.170.23 or [fd00:ec2::23]",
		    full_bad[i]);
		finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
		    ENV(NOIMDS, v), want);
	}
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=v2/x"),
	    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: 'v2/x' must be a path "
	    "starting with '/'");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1/",
	    "AWS_CONTAINER_AUTHORIZATION_TOKEN=a\r\nX-Evil: 1"),
	    "AWS_CONTAINER_AUTHORIZATION_TOKEN: more than 16384 bytes, or a "
	    "CR or LF");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_EC2_METADATA_SERVICE_ENDPOINT=http://h/latest"),
	    "AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://h/latest' is not an "
	    "http(s)://host[:port] URL");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv5"),
	    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: 'IPv5' must be IPv4 or "
	    "IPv6");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_METADATA_SERVICE_TIMEOUT=0"),
	    "AWS_METADATA_SERVICE_TIMEOUT: '0' must be 1-60");
	finish_fails(ARGS("--upstream", "https://h", "--anonymous"),
	    ENV("AWS_METADATA_SERVICE_NUM_ATTEMPTS=99999999999999999999"),
	    "AWS_METADATA_SERVICE_NUM_ATTEMPTS: '99999999999999999999' must "
	    "be 1-10");
}

/* ---- client keys ------------------------------------------------------------ */

LTest(keys, parse_and_allow)
{
	bc_config_t c;
	const bc_client_key_t *a, *b, *d;
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	cr_assert_eq(finish(&c, ARGS(up,
	    "--client-key", "reader:rs3cr3t+/=:datasets/imagenet/,models",
	    "--client-key", "admin_1-x:adm",
	    "--client-key", "one:s:b1/p1,b1/p2,b2/"), ENV(ENVKEYS)), 0, "%s",
	    err);
	cr_assert_eq(c.nkeys, 3);      /* given keys replace the default */
	cr_assert_null(bc_config_key(&c, "AKENV"));
	a = bc_config_key(&c, "reader");
	b = bc_config_key(&c, "admin_1-x");
	d = bc_config_key(&c, "one");
	cr_assert(a != NULL && b != NULL && d != NULL);
	cr_assert_str_eq(a->secret_key, "rs3cr3t+/=");
	cr_assert_eq(a->nallow, 2);
	cr_assert_str_eq(a->allow[0], "datasets/imagenet/");
	cr_assert_str_eq(a->allow[1], "models");
	cr_assert_null(b->allow);
	cr_assert_str_eq(bc_config_secret(&c, "admin_1-x"), "adm");
	cr_assert_null(bc_config_secret(&c, "ADMIN_1-X"));

	/* "bucket/prefix": keys under the prefix only */
	cr_assert(bc_config_key_allows(a, "datasets", "imagenet/train/0.jpg"));
	cr_assert(!bc_config_key_allows(a, "datasets", "imagenet"));
	cr_assert(!bc_config_key_allows(a, "datasets", "coco/x"));
	/* the empty key (a listing without prefix) is not under it */
	cr_assert(!bc_config_key_allows(a, "datasets", ""));
	cr_assert(!bc_config_key_allows(a, "datasets", NULL));
	/* a prefix grants part of the bucket, not the bucket */
	cr_assert(bc_config_key_in_bucket(a, "datasets"));
	cr_assert(!bc_config_key_has_bucket(a, "datasets"));
	/* "bucket": everything in it */
	cr_assert(bc_config_key_allows(a, "models", "any/key"));
	cr_assert(bc_config_key_allows(a, "models", ""));
	cr_assert(bc_config_key_has_bucket(a, "models"));
	cr_assert(!bc_config_key_in_bucket(a, "model"));
	cr_assert(!bc_config_key_has_bucket(a, ""));
	cr_assert(!bc_config_key_in_bucket(NULL, "models"));
	/* other buckets, bucket-name prefixes, service level: no */
	cr_assert(!bc_config_key_allows(a, "model", "any"));
	cr_assert(!bc_config_key_allows(a, "modelsx", "any"));
	cr_assert(!bc_config_key_allows(a, "datasets2", "imagenet/x"));
	cr_assert(!bc_config_key_allows(a, "", ""));
	cr_assert(!bc_config_key_allows(a, NULL, NULL));
	cr_assert(!bc_config_key_allows(NULL, "models", "x"));
	/* no allow list: everything */
	cr_assert(bc_config_key_allows(b, "whatever", "k"));
	cr_assert(bc_config_key_allows(b, "", ""));
	/* several prefixes of one bucket; "b2/" is all of b2 */
	cr_assert(bc_config_key_allows(d, "b1", "p1x"));
	cr_assert(bc_config_key_allows(d, "b1", "p2/y"));
	cr_assert(!bc_config_key_allows(d, "b1", "p3"));
	cr_assert(bc_config_key_allows(d, "b2", "anything"));
	cr_assert(bc_config_key_has_bucket(d, "b2"));
	cr_assert(!bc_config_key_has_bucket(d, "b1"));
	cr_assert(bc_config_key_has_bucket(b, "whatever"));
	bc_config_fini(&c);
}

LTest(keys, bad_keys_name_the_access_key_never_the_secret)
{
	static const char *const bad[][2] = {
		{ "nosecret", "--client-key: key 'nosecret': want "
		  "ACCESS:SECRET[:BUCKET[/PREFIX],...]" },
		{ ":XYZZY", "--client-key: access key '' must be 1-128 of "
		  "A-Z a-z 0-9 _ -" },
		{ "bad.key:XYZZY", "--client-key: access key 'bad.key' must "
		  "be 1-128 of A-Z a-z 0-9 _ -" },
		{ "ak:", "--client-key: key 'ak': the secret must be 1-1024 "
		  "bytes without blanks or control characters" },
		{ "ak::b", "--client-key: key 'ak': the secret must be 1-1024 "
		  "bytes without blanks or control characters" },
		{ "ak:XYZ ZY", "--client-key: key 'ak': the secret must be "
		  "1-1024 bytes without blanks or control characters" },
		{ "ak:XYZZY:", "--client-key: key 'ak': allow list entries "
		  "are BUCKET or BUCKET/PREFIX, comma-separated, without "
		  "blanks" },
		{ "ak:XYZZY:b,,c", "--client-key: key 'ak': allow list "
		  "entries are BUCKET or BUCKET/PREFIX, comma-separated, "
		  "without blanks" },
		{ "ak:XYZZY:b,", "--client-key: key 'ak': allow list "
		  "entries are BUCKET or BUCKET/PREFIX, comma-separated, "
		  "without blanks" },
		{ "ak:XYZZY:/p", "--client-key: key 'ak': allow list "
		  "entries are BUCKET or BUCKET/PREFIX, comma-separated, "
		  "without blanks" },
		{ "ak:XYZZY:b:c", "--client-key: key 'ak': allow list "
		  "entries are BUCKET or BUCKET/PREFIX, comma-separated, "
		  "without blanks" },
	};
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		finish_fails(ARGS(up, "--client-key", "ok:fine",
		    "--client-key", bad[i][0]), NOENV, bad[i][1]);
		cr_assert_null(strstr(err, "XYZ"), "%s", err);
	}
}

LTest(keys, access_key_length_and_duplicates)
{
	char up[600], k128[140], k129[140];
	bc_config_t c;

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	memset(k128, 'A', 128);
	strcpy(k128 + 128, ":s");
	memset(k129, 'A', 129);
	strcpy(k129 + 129, ":s");
	cr_assert_eq(finish(&c, ARGS(up, "--client-key", k128), NOENV), 0,
	    "%s", err);
	cr_assert_eq(strlen(c.keys[0].access_key), 128);
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up, "--client-key", k129), NOENV), -1);
	cr_assert_not_null(strstr(err, "must be 1-128"));
	bc_config_fini(&c);
	finish_fails(ARGS(up, "--client-key", "dup:a", "--client-key",
	    "dup:b:bk"), NOENV, "--client-key: key 'dup' given twice");
}

LTest(keys, none_without_credentials_or_keys)
{
	char up[600];
	bc_config_t c;

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	cr_assert_eq(finish(&c, ARGS(up, "--anonymous"), NOENV), 0, "%s",
	    err);
	cr_assert_eq(c.nkeys, 0);
	cr_assert_null(bc_config_key(&c, "x"));
	cr_assert_null(bc_config_secret(&c, "x"));
	bc_config_fini(&c);
	/* keys from the config file with allow lists */
	{
		char path[512], arg[600];

		write_file("k.conf", "client-key \"team:pw:ds/a/,ds/b/\"\n",
		    path, sizeof(path));
		snprintf(arg, sizeof(arg), "--config=%s", path);
		cr_assert_eq(finish(&c, ARGS(up, arg), NOENV), 0, "%s", err);
		cr_assert_eq(c.nkeys, 1);
		cr_assert(bc_config_key_allows(bc_config_key(&c, "team"), "ds",
		    "b/1"));
		cr_assert(!bc_config_key_allows(bc_config_key(&c, "team"),
		    "ds", "c/1"));
		bc_config_fini(&c);
	}
}

/* ---- conf/bucketcache.conf -------------------------------------------------- */

/* The source tree: $BC_SRCDIR (make check), else from __FILE__. */
static void
srcdir(char *out, size_t outlen)
{
	const char *env = getenv("BC_SRCDIR");
	const char *me = __FILE__, *tail = "tests/unit/config/test_config.c";
	size_t n = strlen(me), tn = strlen(tail);

	if (env != NULL && *env != '\0')
		snprintf(out, outlen, "%s", env);
	else if (n >= tn && strcmp(me + n - tn, tail) == 0)
		snprintf(out, outlen, "%.*s.", (int)(n - tn), me);
	else
		snprintf(out, outlen, ".");
}

LTest(config, example_conf_lists_every_option_with_its_default)
{
	char src[PATH_MAX], path[PATH_MAX + 64], out[512], line[1024];
	char up[600], arg[600];
	bc_config_t c, d;
	FILE *in, *fp;

	srcdir(src, sizeof(src));
	snprintf(path, sizeof(path), "%s/conf/bucketcache.conf", src);
	in = fopen(path, "r");
	if (in == NULL)
		cr_skip_test("%s not found (set BC_SRCDIR)", path);
	/* as shipped (all commented): loads */
	cr_assert_eq(load(&c, ARGS("--config", path), NOENV), 0, "%s", err);
	bc_config_fini(&c);
	/* uncommented: every option of the table, each at its default */
	snprintf(out, sizeof(out), "%s/uncommented.conf", tmp);
	fp = fopen(out, "w");
	cr_assert_not_null(fp);
	while (fgets(line, sizeof(line), in) != NULL) {
		size_t n = strcspn(line + 1, " \t\n");

		if (line[0] == '#' && n > 0 && opt_find(line + 1, n) != NULL)
			fputs(line + 1, fp);
		else
			fputs(line, fp);
	}
	fclose(in);
	fclose(fp);
	cr_assert_eq(bc_config_init(&d), 0);
	cr_assert_eq(load(&c, ARGS("--config", out), NOENV), 0, "%s", err);
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		void *a = field(&c, o), *b = field(&d, o);

		if (strcmp(o->name, "config") == 0)
			continue;
		switch (o->type) {
		case OPT_STR:
			cr_assert_str_eq(*(char **)a, *(char **)b, "%s",
			    o->name);
			break;
		case OPT_LIST:
			cr_assert_gt(((bc_strlist_t *)a)->n, 0,
			    "%s: no example line", o->name);
			break;
		case OPT_BOOL:
			cr_assert_eq(*(bool *)a, *(bool *)b, "%s", o->name);
			break;
		case OPT_UINT:
			cr_assert_eq(*(unsigned *)a, *(unsigned *)b, "%s",
			    o->name);
			break;
		case OPT_SIZE:
		case OPT_MEMSIZE:
		case OPT_MS:
			cr_assert_eq(*(uint64_t *)a, *(uint64_t *)b, "%s",
			    o->name);
			break;
		case OPT_LEVEL:
			cr_assert_eq(*(int *)a, *(int *)b, "%s", o->name);
			break;
		}
	}
	bc_config_fini(&c);
	bc_config_fini(&d);
	/* and its client-key examples are valid */
	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	snprintf(arg, sizeof(arg), "--config=%s", out);
	cr_assert_eq(finish(&c, ARGS(arg, up, "--redis-size=1G"), NOENV), 0,
	    "%s", err);
	cr_assert_geq(c.nkeys, 1);
	cr_assert_geq(c.nredis_addrs, 1);
	bc_config_fini(&c);
}

/* ---- --mem-size auto ------------------------------------------------------ */

LTest(finish, mem_size_auto_starts_at_mem_min)
{
	bc_config_t c;
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s/", tmp);
	cr_assert_eq(finish(&c, ARGS(up, "--mem-size", "auto", "--mem-min",
	    "64M", "--mem-max", "2G", "--idle-release", "30s"), NOENV), 0,
	    "%s", err);
	cr_assert(c.mem_auto);
	cr_assert_eq(c.mem_size, (uint64_t)64 << 20);
	cr_assert_eq(c.mem_max, (uint64_t)2 << 30);
	cr_assert_eq(c.idle_release, 30000);
	cr_assert_eq(c.scale_interval, 1000);
	cr_assert_eq(c.dataset_depth, 1);
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up, "--mem-size", "512M"), NOENV), 0);
	cr_assert_not(c.mem_auto);
	cr_assert_eq(c.mem_size, (uint64_t)512 << 20);
	bc_config_fini(&c);
}

LTest(finish, mem_auto_bounds_are_checked)
{
	char up[600];

	snprintf(up, sizeof(up), "--upstream=file://%s/", tmp);
	finish_fails(ARGS(up, "--mem-size", "auto", "--mem-min", "1M"), NOENV,
	    "--mem-min: 1048576 is less than 4 chunks (--chunk-size 8388608)");
	finish_fails(ARGS(up, "--mem-size", "auto", "--mem-max", "100M",
	    "--mem-min", "200M"), NOENV,
	    "--mem-max: 104857600 is less than --mem-min 209715200");
	finish_fails(ARGS(up, "--scale-interval", "10ms"), NOENV,
	    "--scale-interval: must be between 100ms and 1h");
	finish_fails(ARGS(up, "--dataset-depth", "17"), NOENV,
	    "--dataset-depth: 17 is more than 16");
	load_fails_with(ARGS("--mem-size", "autox"), NOENV, "--mem-size",
	    "is not a size");
}

/* ---- --immutable, the list cache, warm-ups (issue 27) ------------------ */

LTest(finish, immutable_prefixes)
{
	char up[600];
	bc_config_t c;

	snprintf(up, sizeof(up), "--upstream=file://%s", tmp);
	cr_assert_eq(finish(&c, ARGS(up, "--immutable", "ds/train/",
	    "--immutable", "whole", "--immutable", "b_x.y-z/p"), NOENV), 0,
	    "%s", err);
	cr_assert_eq(c.immutable.n, 3);
	cr_assert(bc_config_immutable(&c, "ds", "train/a"));
	cr_assert(bc_config_immutable(&c, "ds", "train/"));
	cr_assert(!bc_config_immutable(&c, "ds", "train"),
	    "a listing wider than the entry");
	cr_assert(!bc_config_immutable(&c, "ds", "val/a"));
	cr_assert(!bc_config_immutable(&c, "dsx", "train/a"));
	cr_assert(bc_config_immutable(&c, "whole", ""));
	cr_assert(bc_config_immutable(&c, "whole", "any/key"));
	cr_assert(!bc_config_immutable(&c, "whol", "any/key"));
	cr_assert(bc_config_immutable(&c, "b_x.y-z", "p1"));
	cr_assert(!bc_config_immutable(&c, "", "x"));
	cr_assert(!bc_config_immutable(&c, "ds", NULL));
	bc_config_fini(&c);
	cr_assert_eq(finish(&c, ARGS(up), NOENV), 0, "%s", err);
	cr_assert(!bc_config_immutable(&c, "ds", "train/a"), "none by default");
	cr_assert_eq(c.list_ttl, 0);
	cr_assert_eq(c.list_cache_size, 32u << 20);
	cr_assert_eq(c.warm_concurrency, 8);
	bc_config_fini(&c);
	finish_fails(ARGS(up, "--immutable", "/prefix"), NOENV,
	    "--immutable: '/prefix' is not BUCKET or BUCKET/PREFIX");
	finish_fails(ARGS(up, "--immutable", "_admin"), NOENV,
	    "--immutable: '_admin' is not BUCKET or BUCKET/PREFIX");
	finish_fails(ARGS(up, "--immutable", "b@d/p"), NOENV,
	    "--immutable: 'b@d/p' is not BUCKET or BUCKET/PREFIX");
	finish_fails(ARGS(up, "--immutable", "b/p q"), NOENV,
	    "--immutable: 'b/p q' is not BUCKET or BUCKET/PREFIX");
	finish_fails(ARGS(up, "--warm-concurrency", "0"), NOENV,
	    "--warm-concurrency: 0 is not between 1 and 256");
	finish_fails(ARGS(up, "--warm-concurrency", "257"), NOENV,
	    "--warm-concurrency: 257 is not between 1 and 256");
	finish_fails(ARGS(up, "--list-cache-size", "1K"), NOENV,
	    "--list-cache-size: 1024 is less than 64K");
}
