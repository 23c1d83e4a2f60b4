/*
 * test_stats.c — counters, requests by operation, the latency histogram
 * and its quantiles, JSON (checked by Python's json module) and the
 * Prometheus text format (checked line by line and as UTF-8), concurrent
 * updates, per-bucket counters, and hostile names (escaping, no slot).
 * Criterion runs each test in its own process, so the globals start at 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_request.h"
#include "stats/stats.h"
#include "util/util_error.h"

/* Test() whose body is followed by check_leaks(). */
#define PYTHON "/usr/bin/python3"

/* Feeds doc to python -c script; returns its exit status (0: passed).
 * quiet: drop Python's stderr (for checks expected to fail). */
static int
python_run(const char *doc, const char *script, bool quiet)
{
	char cmd[4096];
	FILE *p;
	int st;

	if (access(PYTHON, X_OK) != 0)
		cr_skip_test("%s not found", PYTHON);
	snprintf(cmd, sizeof(cmd), "%s -c '%s'%s", PYTHON, script,
	    quiet ? " 2>/dev/null" : "");
	p = popen(cmd, "w");
	cr_assert_not_null(p);
	fputs(doc, p);
	st = pclose(p);
	return st;
}

static int
python_check(const char *doc, const char *script)
{
	return python_run(doc, script, false);
}

/* One request as http/ counts it: the op and its S3 name. */
static void
count_request(bc_s3op_t op, unsigned status, uint64_t in, uint64_t out)
{
	bc_stats_request(op, bc_s3op_name(op), status, in, out);
}

LTest(stats, counters_and_gauges)
{
	bc_stats_reset();
	BC_STATS_INC(auth_failures);
	BC_STATS_ADD(upstream_bytes_in, 1000);
	BC_STATS_ADD(upstream_bytes_in, 24);
	BC_STATS_INC(connections);
	BC_STATS_INC(connections);
	BC_STATS_DEC(connections);
	cr_assert_eq(bc_stats_get(BC_STAT_auth_failures), 1);
	cr_assert_eq(bc_stats_get(BC_STAT_upstream_bytes_in), 1024);
	cr_assert_eq(bc_stats_get(BC_STAT_connections), 1);
	cr_assert_eq(bc_stats_get(BC_STAT_requests), 0);
	cr_assert_eq(bc_stats_get(BC_STAT__COUNT), 0);   /* out of range */
	bc_stats_reset();
	cr_assert_eq(bc_stats_get(BC_STAT_upstream_bytes_in), 0);
	cr_assert_eq(bc_stats_get(BC_STAT_connections), 0);
}

LTest(stats, request_counts_by_op_and_class)
{
	bc_stats_reset();
	count_request(BC_S3OP_GetObject, 200, 0, 100);
	count_request(BC_S3OP_GetObject, 206, 0, 50);
	count_request(BC_S3OP_GetObject, 304, 0, 0);
	count_request(BC_S3OP_GetObject, 404, 0, 300);
	count_request(BC_S3OP_PutObject, 503, 4096, 200);
	count_request(BC_S3OP_PutObject, 100, 1, 0);       /* < 300: 2xx */
	count_request(BC_S3OP_PutObject, 999, 0, 0);       /* >= 500: 5xx */
	count_request((bc_s3op_t)1000, 200, 0, 0);         /* -> Unknown */
	cr_assert_eq(bc_stats_get(BC_STAT_requests), 8);
	cr_assert_eq(bc_stats_get(BC_STAT_bytes_in), 4097);
	cr_assert_eq(bc_stats_get(BC_STAT_bytes_out), 650);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_GetObject, 200), 2);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_GetObject, 399), 1);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_GetObject, 404), 1);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_GetObject, 500), 0);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_PutObject, 500), 2);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_PutObject, 200), 1);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_Unknown, 200), 1);
	cr_assert_eq(bc_stats_get_op(BC_S3OP_HeadObject, 200), 0);
}

LTest(stats, latency_buckets_bounds_are_inclusive)
{
	bc_stats_snap_t s;

	bc_stats_reset();
	bc_stats_upstream_latency(0);          /* le 0.001 */
	bc_stats_upstream_latency(1000);       /* le 0.001 (inclusive) */
	bc_stats_upstream_latency(1001);       /* le 0.0025 */
	bc_stats_upstream_latency(10000000);   /* le 10 */
	bc_stats_upstream_latency(10000001);   /* +Inf */
	bc_stats_snapshot(&s);
	cr_assert_eq(s.lat[0], 2);
	cr_assert_eq(s.lat[1], 1);
	cr_assert_eq(s.lat[BC_STATS_NLAT - 2], 1);
	cr_assert_eq(s.lat[BC_STATS_NLAT - 1], 1);
	cr_assert_eq(s.lat_count, 5);
	cr_assert_eq(s.lat_sum_usec, 20002002);
}

LTest(stats, quantiles_interpolate)
{
	bc_stats_snap_t s;
	double q;

	bc_stats_reset();
	bc_stats_snapshot(&s);
	cr_assert_float_eq(bc_stats_lat_quantile(&s, 0.5), 0.0, 1e-12);
	/* 100 observations in (2.5ms, 5ms]: p50 interpolates to 3.75ms */
	for (int i = 0; i < 100; i++)
		bc_stats_upstream_latency(3000);
	bc_stats_snapshot(&s);
	q = bc_stats_lat_quantile(&s, 0.5);
	cr_assert_float_eq(q, 0.00375, 1e-9, "p50 %f", q);
	q = bc_stats_lat_quantile(&s, 1.0);
	cr_assert_float_eq(q, 0.005, 1e-9, "p100 %f", q);
	/* add 100 in (0.5s, 1s]: p99 lies in that bucket, p25 in the first */
	for (int i = 0; i < 100; i++)
		bc_stats_upstream_latency(700000);
	bc_stats_snapshot(&s);
	q = bc_stats_lat_quantile(&s, 0.99);
	cr_assert(q > 0.5 && q <= 1.0, "p99 %f", q);
	cr_assert_float_eq(q, 0.5 + 0.5 * 98.0 / 100.0, 1e-9, "p99 %f", q);
	q = bc_stats_lat_quantile(&s, 0.25);
	cr_assert(q > 0.0025 && q <= 0.005, "p25 %f", q);
	/* everything past 10s: the largest finite bound */
	bc_stats_reset();
	bc_stats_upstream_latency(60000000);
	bc_stats_snapshot(&s);
	cr_assert_float_eq(bc_stats_lat_quantile(&s, 0.5), 10.0, 1e-9);
}

LTest(stats, json_parses_and_holds_the_values)
{
	bc_buf_t b = BC_BUF_INIT;

	bc_stats_reset();
	bc_stats_start();
	count_request(BC_S3OP_GetObject, 200, 0, 1000);
	count_request(BC_S3OP_GetObject, 404, 0, 200);
	count_request(BC_S3OP_ListObjectsV2, 200, 0, 77);
	BC_STATS_INC(upstream_requests);
	BC_STATS_DEC(connections);             /* a gauge may show -1 */
	bc_stats_upstream_latency(3000);
	bc_stats_upstream_latency(3000);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b),
	    "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "c = d[\"counters\"]\n"
	    "assert isinstance(d[\"version\"], str) and d[\"version\"]\n"
	    "assert d[\"uptime_seconds\"] >= 0\n"
	    "assert c[\"requests\"] == 3, c\n"
	    "assert c[\"bytes_out\"] == 1277, c\n"
	    "assert c[\"upstream_requests\"] == 1, c\n"
	    "assert c[\"connections\"] == -1, c\n"
	    "assert set(c) >= {\"requests\", \"bytes_in\", \"bytes_out\", "
	    "\"auth_failures\", \"upstream_requests\", \"upstream_errors\", "
	    "\"upstream_retries\", \"upstream_bytes_in\", "
	    "\"upstream_bytes_out\", \"connections\"}, c\n"
	    "ops = d[\"requests_by_op\"]\n"
	    "assert set(ops) == {\"GetObject\", \"ListObjectsV2\"}, ops\n"
	    "assert ops[\"GetObject\"] == {\"2xx\": 1, \"3xx\": 0, "
	    "\"4xx\": 1, \"5xx\": 0}, ops\n"
	    "l = d[\"upstream_latency\"]\n"
	    "assert l[\"count\"] == 2, l\n"
	    "assert abs(l[\"sum_seconds\"] - 0.006) < 1e-9, l\n"
	    "assert 0.0025 < l[\"p50_seconds\"] <= 0.005, l\n"
	    "assert 0.0025 < l[\"p99_seconds\"] <= 0.005, l\n"), 0,
	    "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
}

LTest(stats, json_empty_parses)
{
	bc_buf_t b = BC_BUF_INIT;

	bc_stats_reset();
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b),
	    "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "assert d[\"requests_by_op\"] == {}\n"
	    "assert d[\"upstream_latency\"][\"count\"] == 0\n"
	    "assert d[\"upstream_latency\"][\"p99_seconds\"] == 0\n"), 0,
	    "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
}

LTest(stats, json_python_check_can_fail)
{
	/* The checker itself must reject a broken document. */
	cr_assert_neq(python_run("{\"a\": 1,}",
	    "import json,sys; json.load(sys.stdin)", true), 0);
}

LTest(stats, json_respects_buffer_limit)
{
	bc_buf_t b;

	bc_buf_init(&b, 64);
	cr_assert_eq(bc_stats_json(&b), BC_E2BIG);
	bc_buf_fini(&b);
	bc_buf_init(&b, 64);
	cr_assert_eq(bc_stats_prometheus(&b), BC_E2BIG);
	bc_buf_fini(&b);
}

static const char *
find_line(const char *doc, const char *prefix)
{
	const char *p = doc;
	size_t n = strlen(prefix);

	while (p != NULL && *p != '\0') {
		if (strncmp(p, prefix, n) == 0)
			return p + n;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return NULL;
}

static double
sample_f(const char *doc, const char *series)
{
	char prefix[256];
	const char *v;

	snprintf(prefix, sizeof(prefix), "%s ", series);
	v = find_line(doc, prefix);
	cr_assert_not_null(v, "no sample %s in\n%s", series, doc);
	return strtod(v, NULL);
}

static unsigned long long
sample(const char *doc, const char *series)
{
	char prefix[256];
	const char *v;

	snprintf(prefix, sizeof(prefix), "%s ", series);
	v = find_line(doc, prefix);
	cr_assert_not_null(v, "no sample %s in\n%s", series, doc);
	return strtoull(v, NULL, 10);
}

/*
 * Checks doc line by line against the Prometheus text format 0.0.4 (label
 * values may escape only '\\', '"' and newline), that every sample follows
 * the TYPE of its family, and that the whole is valid UTF-8 (Python's
 * strict decoder). Returns the number of samples.
 */
static size_t
check_prometheus(const char *text)
{
	static const char sample_re[] =
	    "^[a-zA-Z_:][a-zA-Z0-9_:]*"
	    "(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
	    "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\")*\\})?"
	    " (-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?|[-+]Inf|NaN)$";
	static const char comment_re[] =
	    "^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* [^\n]+$";
	regex_t rs, rc;
	char *doc, *line, *save = NULL;
	char typed[256][128];
	size_t ntyped = 0, nsamples = 0;

	cr_assert_eq(regcomp(&rs, sample_re, REG_EXTENDED | REG_NOSUB), 0);
	cr_assert_eq(regcomp(&rc, comment_re, REG_EXTENDED | REG_NOSUB), 0);
	cr_assert(text[0] != '\0' && text[strlen(text) - 1] == '\n');
	cr_assert_eq(strstr(text, "\n\n"), NULL, "an empty line");
	doc = strdup(text);
	for (line = strtok_r(doc, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#') {
			cr_assert_eq(regexec(&rc, line, 0, NULL, 0), 0,
			    "bad comment line: %s", line);
			if (strncmp(line, "# TYPE ", 7) == 0) {
				cr_assert_lt(ntyped, 256);
				sscanf(line + 7, "%127s", typed[ntyped++]);
			}
			continue;
		}
		cr_assert_eq(regexec(&rs, line, 0, NULL, 0), 0,
		    "bad sample line: %s", line);
		cr_assert(strncmp(line, "bucketcache_", 12) == 0 ||
		    strncmp(line, "process_", 8) == 0, "%s", line);
		/* Prometheus sets "job" itself (the scrape job): ours is
		 * bc_job */
		cr_assert_null(strstr(line, "{job="), "%s", line);
		cr_assert_null(strstr(line, ",job="), "%s", line);
		/* every sample belongs to the family typed just before it */
		cr_assert_gt(ntyped, 0);
		cr_assert_eq(strncmp(line, typed[ntyped - 1],
		    strlen(typed[ntyped - 1])), 0, "%s after TYPE %s", line,
		    typed[ntyped - 1]);
		nsamples++;
	}
	regfree(&rs);
	regfree(&rc);
	free(doc);
	cr_assert_eq(python_check(text, "import sys\n"
	    "sys.stdin.buffer.read().decode(\"utf-8\")\n"), 0,
	    "not valid UTF-8:\n%s", text);
	return nsamples;
}

LTest(stats, prometheus_lines_are_well_formed)
{
	bc_buf_t b = BC_BUF_INIT;

	bc_stats_reset();
	bc_stats_start();
	count_request(BC_S3OP_GetObject, 200, 10, 1000);
	count_request(BC_S3OP_HeadObject, 403, 0, 0);
	BC_STATS_ADD(upstream_bytes_in, 5000);
	bc_stats_upstream_latency(42000);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	cr_assert_gt(check_prometheus(bc_buf_str(&b)), 20);
	/* counters end in _total, gauges do not */
	cr_assert_eq(sample(bc_buf_str(&b), "bucketcache_requests_total"), 2);
	cr_assert_eq(sample(bc_buf_str(&b), "bucketcache_bytes_out_total"),
	    1000);
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_upstream_bytes_in_total"), 5000);
	cr_assert_eq(sample(bc_buf_str(&b), "bucketcache_connections"), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "# TYPE bucketcache_connections gauge\n"));
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "# TYPE bucketcache_requests_total counter\n"));
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_s3_requests_total{op=\"GetObject\",status=\"2xx\"}"),
	    1);
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_s3_requests_total{op=\"HeadObject\",status=\"4xx\"}"),
	    1);
	cr_assert_null(strstr(bc_buf_str(&b), "op=\"PutObject\""));
	bc_buf_fini(&b);
}

LTest(stats, prometheus_histogram_is_cumulative)
{
	static const char *const le[] = { "0.001", "0.0025", "0.005", "0.01",
	    "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
	    "+Inf" };
	static const uint64_t obs[] = { 500, 800, 2000, 4000, 4000, 30000,
	    200000, 3000000, 20000000 };
	bc_buf_t b = BC_BUF_INIT;
	unsigned long long prev = 0, v, total_usec = 0;
	char series[128];
	const char *sum;

	bc_stats_reset();
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
		bc_stats_upstream_latency(obs[i]);
		total_usec += obs[i];
	}
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "# TYPE bucketcache_upstream_latency_seconds histogram\n"));
	for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
		snprintf(series, sizeof(series),
		    "bucketcache_upstream_latency_seconds_bucket{le=\"%s\"}",
		    le[i]);
		v = sample(bc_buf_str(&b), series);
		cr_assert_geq(v, prev, "%s not cumulative", series);
		prev = v;
	}
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_upstream_latency_seconds_bucket{le=\"0.001\"}"), 2);
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_upstream_latency_seconds_bucket{le=\"0.005\"}"), 5);
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_upstream_latency_seconds_bucket{le=\"10\"}"), 8);
	cr_assert_eq(prev, 9);    /* +Inf holds everything */
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_upstream_latency_seconds_count"), 9);
	sum = find_line(bc_buf_str(&b),
	    "bucketcache_upstream_latency_seconds_sum ");
	cr_assert_not_null(sum);
	cr_assert_float_eq(strtod(sum, NULL), (double)total_usec / 1e6, 1e-6);
	bc_buf_fini(&b);
}

#define NTHREADS 4
#define NITER    200000

static void *
hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < NITER; i++) {
		BC_STATS_INC(upstream_requests);
		BC_STATS_ADD(upstream_bytes_out, 3);
		BC_STATS_INC(connections);
		count_request(BC_S3OP_GetObject, 200, 1, 2);
		bc_stats_upstream_latency((uint64_t)(i % 7) * 1000);
		BC_STATS_DEC(connections);
	}
	return NULL;
}

LTest(stats, concurrent_increments_sum_exactly)
{
	pthread_t t[NTHREADS];
	bc_stats_snap_t s;

	bc_stats_reset();
	for (int i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	bc_stats_snapshot(&s);
	cr_assert_eq(s.v[BC_STAT_upstream_requests],
	    (uint64_t)NTHREADS * NITER);
	cr_assert_eq(s.v[BC_STAT_upstream_bytes_out],
	    (uint64_t)NTHREADS * NITER * 3);
	cr_assert_eq(s.v[BC_STAT_connections], 0);
	cr_assert_eq(s.v[BC_STAT_requests], (uint64_t)NTHREADS * NITER);
	cr_assert_eq(s.v[BC_STAT_bytes_in], (uint64_t)NTHREADS * NITER);
	cr_assert_eq(s.v[BC_STAT_bytes_out], (uint64_t)NTHREADS * NITER * 2);
	cr_assert_eq(s.by_op[BC_S3OP_GetObject][0],
	    (uint64_t)NTHREADS * NITER);
	cr_assert_eq(s.lat_count, (uint64_t)NTHREADS * NITER);
}

LTest(stats, uptime_counts_from_start)
{
	bc_stats_snap_t s;

	bc_stats_snapshot(&s);
	cr_assert_eq(s.uptime_seconds, 0);
	bc_stats_start();
	bc_stats_snapshot(&s);
	cr_assert_lt(s.uptime_seconds, 2);
}

LTest(stats, per_bucket_counters_and_overflow)
{
	bc_buf_t b = BC_BUF_INIT;
	char name[32];

	bc_stats_reset();
	bc_stats_bucket_add("alpha", BC_BSTAT_cache_hits, 3);
	bc_stats_bucket_add("alpha", BC_BSTAT_cache_hits, 2);
	bc_stats_bucket_add("beta", BC_BSTAT_cache_bytes_memory, 100);
	cr_expect_eq(bc_stats_bucket_get("alpha", BC_BSTAT_cache_hits), 5);
	cr_expect_eq(bc_stats_bucket_get("beta", BC_BSTAT_cache_hits), 0);
	cr_expect_eq(bc_stats_bucket_get("beta", BC_BSTAT_cache_bytes_memory),
	    100);
	/* the table holds BC_STATS_MAX_BUCKETS names; the rest share _other */
	for (int i = 0; i < BC_STATS_MAX_BUCKETS + 10; i++) {
		snprintf(name, sizeof(name), "bucket-%03d", i);
		bc_stats_bucket_add(name, BC_BSTAT_requests, 1);
	}
	cr_expect_eq(bc_stats_bucket_get("alpha", BC_BSTAT_cache_hits), 5);
	cr_expect_eq(bc_stats_bucket_get("bucket-000", BC_BSTAT_requests), 1);
	cr_expect_eq(bc_stats_bucket_get("bucket-999", BC_BSTAT_requests),
	    bc_stats_bucket_get("_other-anything", BC_BSTAT_requests));
	cr_expect_geq(bc_stats_bucket_get("bucket-999", BC_BSTAT_requests), 10);

	cr_assert_eq(bc_stats_json(&b), 0);
	cr_expect_eq(python_check(bc_buf_str(&b),
	    "import json,sys; d=json.load(sys.stdin)[\"buckets\"]; "
	    "assert d[\"alpha\"][\"cache_hits\"] == 5, d; "
	    "assert d[\"beta\"][\"cache_bytes_memory\"] == 100; "
	    "assert d[\"_other\"][\"requests\"] >= 10"), 0);
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	cr_expect_not_null(strstr(bc_buf_str(&b),
	    "bucketcache_bucket_cache_hits_total{bucket=\"alpha\"} 5\n"));
	bc_buf_fini(&b);
}

/* ---- hostile names ---------------------------------------------------- */

#define REPL "\xef\xbf\xbd"   /* U+FFFD in UTF-8 */

/* Exactly how names are escaped: JSON string rules, Prometheus label
 * rules, and U+FFFD for every byte that is not part of valid UTF-8. */
LTest(stats, escaping_of_hostile_names)
{
	static const struct {
		const char *in, *json, *prom;
	} t[] = {
		{ "", "\"\"", "\"\"" },
		{ "plain-name.1", "\"plain-name.1\"", "\"plain-name.1\"" },
		{ "a\"b", "\"a\\\"b\"", "\"a\\\"b\"" },
		{ "a\\b", "\"a\\\\b\"", "\"a\\\\b\"" },
		{ "a\nb", "\"a\\u000ab\"", "\"a\\nb\"" },
		{ "\r\t\x01\x1f\x7f", "\"\\u000d\\u0009\\u0001\\u001f\\u007f\"",
		    "\"" REPL REPL REPL REPL REPL "\"" },
		{ "} 1\n# x", "\"} 1\\u000a# x\"", "\"} 1\\n# x\"" },
		/* the finding's GET /%EB%FF/x */
		{ "\xeb\xff", "\"\\ufffd\\ufffd\"", "\"" REPL REPL "\"" },
		{ "\x80", "\"\\ufffd\"", "\"" REPL "\"" },
		{ "\xff\xfe", "\"\\ufffd\\ufffd\"", "\"" REPL REPL "\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"", "\"" REPL REPL "\"" },
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"",
		    "\"" REPL REPL REPL "\"" },                /* overlong */
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"",
		    "\"" REPL REPL REPL "\"" },                /* surrogate */
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
		    "\"" REPL REPL REPL REPL "\"" },           /* > U+10FFFF */
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"", "\"" REPL REPL "\"" },
		{ "x\xe2\x82\"", "\"x\\ufffd\\ufffd\\\"\"",
		    "\"x" REPL REPL "\\\"\"" },                /* cut, then " */
		/* valid UTF-8 passes as it is */
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"", "\"caf\xc3\xa9\"" },
		{ "\xe2\x82\xac", "\"\xe2\x82\xac\"", "\"\xe2\x82\xac\"" },
		{ "\xed\x9f\xbf", "\"\xed\x9f\xbf\"", "\"\xed\x9f\xbf\"" },
		{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"",
		    "\"\xf0\x9f\x98\x80\"" },
		{ "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"",
		    "\"\xf4\x8f\xbf\xbf\"" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bc_buf_t j = BC_BUF_INIT, p = BC_BUF_INIT;

		cr_assert_eq(bc_stats_json_string(&j, t[i].in), 0);
		cr_assert_eq(bc_stats_prom_label(&p, t[i].in), 0);
		cr_expect_str_eq(bc_buf_str(&j), t[i].json, "case %zu", i);
		cr_expect_str_eq(bc_buf_str(&p), t[i].prom, "case %zu", i);
		bc_buf_fini(&j);
		bc_buf_fini(&p);
	}
}

/* Every byte, alone and after a lead byte, and random byte strings:
 * each escaped name is a JSON string Python's strict decoder reads, and
 * each label value is valid UTF-8 with only the format's escapes. */
LTest(stats, escaping_any_bytes_is_valid)
{
	bc_buf_t j = BC_BUF_INIT, p = BC_BUF_INIT;
	uint32_t seed = 0x9e3779b9;
	char s[16];

	bc_buf_puts(&j, "[");
	bc_buf_puts(&p, "# TYPE bucketcache_x counter\n");
	for (int round = 0; round < 256 * 3 + 2000; round++) {
		size_t n;

		if (round < 256 * 3) {
			int b = round % 256, k = round / 256;

			if (b == 0)
				b = 'z';
			n = 0;
			if (k == 1)
				s[n++] = '\xe2';     /* lead of a 3-byte one */
			if (k == 2)
				s[n++] = '\xf0';     /* lead of a 4-byte one */
			s[n++] = (char)b;
		} else {
			n = 1 + (seed >> 7) % (sizeof(s) - 1);
			for (size_t i = 0; i < n; i++) {
				seed ^= seed << 13;
				seed ^= seed >> 17;
				seed ^= seed << 5;
				s[i] = (char)(1 + seed % 255);
			}
		}
		s[n] = '\0';
		bc_buf_puts(&j, round > 0 ? "," : "");
		cr_assert_eq(bc_stats_json_string(&j, s), 0);
		bc_buf_puts(&p, "bucketcache_x{a=");
		cr_assert_eq(bc_stats_prom_label(&p, s), 0);
		bc_buf_puts(&p, "} 1\n");
	}
	bc_buf_puts(&j, "]");
	cr_expect_eq(python_check(bc_buf_str(&j), "import json,sys\n"
	    "d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))\n"
	    "assert len(d) == 256 * 3 + 2000, len(d)\n"
	    "assert d[ord(\"a\")] == \"a\"\n"
	    "assert d[256 + 0x80] == \"\\ufffd\" * 2\n"
	    "assert d[0x22] == chr(0x22) and d[0x5c] == chr(0x5c)\n"
	    "assert d[10] == chr(10) and d[0x7f] == chr(0x7f)\n"
	    "assert d[0xeb] == \"\\ufffd\"\n"), 0);
	check_prometheus(bc_buf_str(&p));
	bc_buf_fini(&j);
	bc_buf_fini(&p);
}

/* The finding: a name no request could be authorized for (bytes that are
 * not UTF-8, quotes, newlines, "_other", too long) gets no slot of its
 * own, so junk cannot fill the table, and /stats and /metrics stay valid. */
LTest(stats, hostile_bucket_names_get_no_slot)
{
	static const char *const junk[] = {
		"\xeb\xff", "a\"b", "a\\b", "a\nb", "a\rb", "a\x01", "a\x7f",
		"caf\xc3\xa9", "a b", "a/b", "a{b}", "a=b", "_other", "_x", ".",
		"..", "", "\x80\x81\x82",
		"a1234567890123456789012345678901"
		    "23456789012345678901234567890123",     /* 64 bytes */
	};
	const char *const ok63 =
	    "a12345678901234567890123456789012345678901234567890123456789012";
	bc_buf_t b = BC_BUF_INIT;
	char name[32];

	bc_stats_reset();
	cr_assert_eq(strlen(ok63), 63);
	for (size_t i = 0; i < sizeof(junk) / sizeof(*junk); i++)
		bc_stats_bucket_add(junk[i], BC_BSTAT_requests, 1);
	bc_stats_bucket_add(NULL, BC_BSTAT_requests, 1);
	/* 70 more junk names, as in the finding */
	for (int i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "junk\xff%02d", i);
		bc_stats_bucket_add(name, BC_BSTAT_requests, 1);
	}
	cr_expect_eq(bc_stats_bucket_get("_other", BC_BSTAT_requests),
	    sizeof(junk) / sizeof(*junk) + 1 + 70);
	/* the table is still empty: real buckets get their own slots */
	bc_stats_bucket_add(ok63, BC_BSTAT_requests, 2);
	bc_stats_bucket_add("Legacy_Bucket.name-1", BC_BSTAT_cache_hits, 3);
	for (int i = 0; i < BC_STATS_MAX_BUCKETS - 2; i++) {
		snprintf(name, sizeof(name), "real-%02d", i);
		bc_stats_bucket_add(name, BC_BSTAT_requests, 1);
	}
	cr_expect_eq(bc_stats_bucket_get(ok63, BC_BSTAT_requests), 2);
	cr_expect_eq(bc_stats_bucket_get("real-61", BC_BSTAT_requests), 1);
	/* now full: the next real one shares _other */
	bc_stats_bucket_add("one-too-many", BC_BSTAT_requests, 1);
	cr_expect_eq(bc_stats_bucket_get("one-too-many", BC_BSTAT_requests),
	    sizeof(junk) / sizeof(*junk) + 1 + 70 + 1);

	cr_assert_eq(bc_stats_json(&b), 0);
	cr_expect_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))\n"
	    "k = d[\"buckets\"]\n"
	    "assert len(k) == 65, sorted(k)\n"
	    "assert all(n == \"_other\" or n[0].isalnum() for n in k), k\n"
	    "assert k[\"_other\"][\"requests\"] == 91, k[\"_other\"]\n"
	    "assert k[\"Legacy_Bucket.name-1\"][\"cache_hits\"] == 3\n"), 0,
	    "%s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	check_prometheus(bc_buf_str(&b));
	cr_expect_not_null(strstr(bc_buf_str(&b),
	    "bucketcache_bucket_requests_total{bucket=\"_other\"} 91\n"));
	bc_buf_fini(&b);
}

/* The per-job stats' clock, driven by the tests. */
#define MS 1000000ull
static _Atomic uint64_t test_now = 1000 * MS;

static uint64_t
test_clock(void)
{
	return atomic_load(&test_now);
}

/* A job's rate: bytes per second over intervals of at least 100 ms,
 * smoothed with a 2 s time constant, folded by adds and reads alike, so
 * an idle job's rate decays; reads within 100 ms of a fold change
 * nothing. */
LTest(stats, job_rate_runs_on_the_clock)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 }, v[BC_JSTAT__COUNT];
	double rate = -1, r1;

	bc_stats_reset();
	bc_stats_set_clock(test_clock);
	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = 10000;
	bc_stats_job_add("j", d);                 /* t0: the slot starts */
	atomic_fetch_add(&test_now, 50 * MS);
	bc_stats_job_add("j", d);                 /* under 100 ms: no fold */
	cr_assert(bc_stats_job_get("j", v, &rate));
	cr_assert_eq(rate, 0, "nothing folded yet: %f", rate);
	atomic_fetch_add(&test_now, 50 * MS);
	bc_stats_job_add("j", d);                 /* 30,000 B in 100 ms */
	cr_assert(bc_stats_job_get("j", v, &rate));
	cr_assert_float_eq(rate, 300000.0, 1e-6, "first fold: %f", rate);
	/* 200 ms more at 100,000 B/s: smoothed, w = 0.2 / 2.2 */
	atomic_fetch_add(&test_now, 200 * MS);
	d[BC_JSTAT_bytes] = 20000;
	bc_stats_job_add("j", d);
	cr_assert(bc_stats_job_get("j", v, &r1));
	cr_assert_float_eq(r1, 300000.0 + 0.2 / 2.2 * (100000.0 - 300000.0),
	    1e-6, "%f", r1);
	cr_assert_eq(v[BC_JSTAT_bytes], 50000);
	cr_assert_eq(v[BC_JSTAT_requests], 4);
	/* idle 2 s: a read folds the empty interval, w = 2 / 4 */
	atomic_fetch_add(&test_now, 2000 * MS);
	cr_assert(bc_stats_job_get("j", v, &rate));
	cr_assert_float_eq(rate, r1 / 2, 1e-6, "idle: %f", rate);
	/* a clock that went back folds nothing */
	atomic_fetch_sub(&test_now, 1000 * MS);
	cr_assert(bc_stats_job_get("j", v, &r1));
	cr_assert_eq(r1, rate);
	bc_stats_set_clock(NULL);
}

/* A handle counts for its job without the name while the job keeps its
 * slot; once pushed out (a new job took the slot), adds through it are
 * dropped, and the new job's counters stay its own. The prefetch counters
 * render with the others. */
LTest(stats, job_handles_count_for_their_job_only)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 }, v[BC_JSTAT__COUNT];
	bc_stats_job_id_t a, a2, none = BC_STATS_JOB_NONE;
	bc_buf_t b = BC_BUF_INIT;
	char name[32];
	double rate;

	bc_stats_reset();
	bc_stats_set_clock(test_clock);
	a = bc_stats_job_id("job-a");
	cr_assert_neq(a, BC_STATS_JOB_NONE);
	a2 = bc_stats_job_id("job-a");
	cr_assert_eq(a, a2, "one job, one handle");
	bc_stats_job_id_add(a, BC_JSTAT_prefetch_issued, 2);
	bc_stats_job_id_add(a, BC_JSTAT_prefetch_used, 1);
	bc_stats_job_id_add(none, BC_JSTAT_prefetch_used, 1);
	bc_stats_job_id_add(a, BC_JSTAT__COUNT, 1);   /* out of range */
	cr_assert(bc_stats_job_get("job-a", v, &rate));
	cr_assert_eq(v[BC_JSTAT_prefetch_issued], 2);
	cr_assert_eq(v[BC_JSTAT_prefetch_used], 1);
	cr_assert_eq(v[BC_JSTAT_requests], 0);

	cr_assert_eq(bc_stats_job_json(&b, "job-a"), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"prefetch_issued\": 2, "
	    "\"prefetch_bytes\": 0, \"prefetch_used\": 1, "
	    "\"prefetch_wasted\": 0, \"prefetch_late\": 0"), "%s",
	    bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_job_json(&b, "nobody"), 0);
	cr_assert_eq(strncmp(bc_buf_str(&b), "\"requests\": 0, ", 15), 0,
	    "an untracked job renders zeros: %s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "j = json.load(sys.stdin)[\"jobs\"][\"job-a\"]\n"
	    "assert j[\"prefetch_issued\"] == 2, j\n"
	    "assert j[\"prefetch_used\"] == 1, j\n"
	    "assert j[\"prefetch_wasted\"] == 0, j\n"), 0, "%s",
	    bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	check_prometheus(bc_buf_str(&b));
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_job_prefetch_used_total{bc_job=\"job-a\"}"), 1);

	/* BC_STATS_MAX_JOBS newer jobs push job-a out */
	d[BC_JSTAT_requests] = 1;
	for (int i = 0; i < BC_STATS_MAX_JOBS; i++) {
		atomic_fetch_add(&test_now, MS);
		snprintf(name, sizeof(name), "job-%d", i);
		bc_stats_job_add(name, d);
	}
	cr_assert(!bc_stats_job_get("job-a", v, &rate));
	bc_stats_job_id_add(a, BC_JSTAT_prefetch_used, 100);
	for (int i = 0; i < BC_STATS_MAX_JOBS; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		cr_assert(bc_stats_job_get(name, v, &rate));
		cr_assert_eq(v[BC_JSTAT_prefetch_used], 0,
		    "%s got a gone job's count", name);
	}
	/* back again: a new slot, a new handle, counted from 0 */
	atomic_fetch_add(&test_now, MS);
	a2 = bc_stats_job_id("job-a");
	cr_assert_neq(a2, a);
	bc_stats_job_id_add(a, BC_JSTAT_prefetch_used, 100);
	cr_assert(bc_stats_job_get("job-a", v, &rate));
	cr_assert_eq(v[BC_JSTAT_prefetch_used], 0);
	/* a reset forgets every handle */
	bc_stats_reset();
	a = bc_stats_job_id("job-a");
	bc_stats_job_id_add(a2, BC_JSTAT_prefetch_used, 1);
	cr_assert(bc_stats_job_get("job-a", v, &rate));
	cr_assert_eq(v[BC_JSTAT_prefetch_used], 0);
	bc_buf_fini(&b);
	bc_stats_set_clock(NULL);
}

/* Per-job gauges (the plan position the jobs registry mirrors) are set,
 * never added to; /stats shows them with the counters, Prometheus as
 * gauges, and bc_stats_job_json (what /v1/jobs appends to the registry's
 * own fields) leaves them out. */
LTest(stats, job_gauges_are_set_not_added)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 }, g[BC_JSTAT__COUNT] = { 0 };
	uint64_t v[BC_JSTAT__COUNT];
	bc_buf_t b = BC_BUF_INIT;
	double rate;

	bc_stats_reset();
	g[BC_JSTAT_epoch] = 2;
	g[BC_JSTAT_cursor] = 17;
	g[BC_JSTAT_plan_keys] = 100;
	g[BC_JSTAT_requests] = 99;            /* a counter: ignored */
	bc_stats_job_set("train", g);
	g[BC_JSTAT_cursor] = 18;
	bc_stats_job_set("train", g);
	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_cursor] = 1000;            /* a gauge: ignored */
	bc_stats_job_add("train", d);
	bc_stats_job_id_add(bc_stats_job_id("train"), BC_JSTAT_cursor, 5);
	cr_assert(bc_stats_job_get("train", v, &rate));
	cr_assert_eq(v[BC_JSTAT_cursor], 18);
	cr_assert_eq(v[BC_JSTAT_epoch], 2);
	cr_assert_eq(v[BC_JSTAT_plan_keys], 100);
	cr_assert_eq(v[BC_JSTAT_requests], 1);

	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "j = json.load(sys.stdin)[\"jobs\"][\"train\"]\n"
	    "assert (j[\"epoch\"], j[\"cursor\"], j[\"plan_keys\"]) == "
	    "(2, 18, 100), j\n"
	    "assert j[\"requests\"] == 1, j\n"), 0, "%s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_job_json(&b, "train"), 0);
	cr_assert_null(strstr(bc_buf_str(&b), "cursor"), "%s",
	    bc_buf_str(&b));
	cr_assert_null(strstr(bc_buf_str(&b), "epoch"), "%s", bc_buf_str(&b));
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"requests\": 1, "));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	check_prometheus(bc_buf_str(&b));
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "# TYPE bucketcache_job_cursor gauge\n"));
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_job_cursor{bc_job=\"train\"}"), 18);
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_job_plan_keys{bc_job=\"train\"}"), 100);
	cr_assert_null(strstr(bc_buf_str(&b), "bucketcache_job_cursor_total"));
	/* zeros set an untracked job's gauges: no slot for it */
	memset(g, 0, sizeof(g));
	bc_stats_job_set("ended", g);
	cr_assert(!bc_stats_job_get("ended", v, &rate));
	bc_stats_job_set("train", g);
	cr_assert(bc_stats_job_get("train", v, &rate));
	cr_assert_eq(v[BC_JSTAT_cursor], 0, "a tracked one's go to 0");
	bc_buf_fini(&b);
}

/* Per-job counters: summed per job, the most recent BC_STATS_MAX_JOBS
 * kept (the least recently active goes), a rate once time passed; in
 * JSON under "jobs" and in Prometheus with a job label. */
LTest(stats, job_counters_keep_the_most_recent_jobs)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 }, v[BC_JSTAT__COUNT];
	bc_buf_t b = BC_BUF_INIT;
	char name[32];
	double rate = -1;

	bc_stats_reset();
	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = 1000;
	d[BC_JSTAT_cache_hits] = 1;
	bc_stats_set_clock(test_clock);
	bc_stats_job_add("train-1", d);
	bc_stats_job_add("train-1", d);
	atomic_fetch_add(&test_now, 150 * MS);
	bc_stats_job_add("train-1", d);
	cr_assert(bc_stats_job_get("train-1", v, &rate));
	cr_assert_eq(v[BC_JSTAT_requests], 3);
	cr_assert_eq(v[BC_JSTAT_bytes], 3000);
	cr_assert_float_eq(rate, 3000 / 0.150, 1e-6, "rate %f", rate);
	cr_assert(!bc_stats_job_get("nobody", v, &rate));
	bc_stats_job_add(NULL, d);
	cr_assert(bc_stats_job_get("anonymous", v, &rate));

	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b),
	    "import json,sys\n"
	    "j = json.load(sys.stdin)[\"jobs\"]\n"
	    "assert j[\"train-1\"][\"requests\"] == 3, j\n"
	    "assert j[\"train-1\"][\"cache_hits\"] == 3, j\n"
	    "assert j[\"train-1\"][\"rate_bytes_per_second\"] > 0, j\n"
	    "assert j[\"anonymous\"][\"bytes\"] == 1000, j\n"), 0,
	    "%s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	check_prometheus(bc_buf_str(&b));
	cr_assert_eq(sample(bc_buf_str(&b),
	    "bucketcache_job_requests_total{bc_job=\"train-1\"}"), 3);

	/* 64 newer jobs push train-1 out */
	for (int i = 0; i < BC_STATS_MAX_JOBS; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		bc_stats_job_add(name, d);
	}
	cr_assert(!bc_stats_job_get("train-1", v, &rate));
	cr_assert(bc_stats_job_get("job-63", v, &rate));
	bc_buf_fini(&b);
	bc_stats_set_clock(NULL);
}

/* Two tiers as a chain would give them; the second's name is hostile. */
static size_t
fake_tiers(void *arg, bc_stats_tier_t *rows, size_t max)
{
	unsigned *calls = arg;

	(*calls)++;
	cr_assert_geq(max, 2);
	memset(rows, 0, 2 * sizeof(*rows));
	snprintf(rows[0].name, sizeof(rows[0].name), "memory");
	rows[0].v[BC_TSTAT_up] = 1;
	rows[0].v[BC_TSTAT_hits] = 7;
	rows[0].v[BC_TSTAT_capacity_bytes] = 1 << 20;
	snprintf(rows[1].name, sizeof(rows[1].name), "disk\"\n");
	rows[1].v[BC_TSTAT_corrupt] = 3;
	rows[1].v[BC_TSTAT_scanning] = 1;
	return 2;
}

/* The tiers family: read through the function set, a JSON object per
 * tier and a Prometheus sample per tier with the tier label (counters
 * _total, gauges not); none when no function is set. */
LTest(stats, tiers_are_read_when_rendered)
{
	bc_buf_t b = BC_BUF_INIT;
	unsigned calls = 0;
	const char *t;

	bc_stats_reset();
	bc_stats_set_tiers(fake_tiers, &calls);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(calls, 1);
	cr_assert_eq(python_check(bc_buf_str(&b),
	    "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "t = d[\"tiers\"]\n"
	    "assert list(t) == [\"memory\", \"disk\\\"\\n\"], t\n"
	    "m = t[\"memory\"]\n"
	    "assert m[\"up\"] == 1 and m[\"hits\"] == 7, m\n"
	    "assert m[\"capacity_bytes\"] == 1048576, m\n"
	    "assert t[\"disk\\\"\\n\"][\"corrupt\"] == 3, t\n"
	    "assert set(m) >= {\"hits\", \"misses\", \"bytes_read\", "
	    "\"usage_bytes\", \"evictions\", \"writes\", \"write_failures\", "
	    "\"corrupt\", \"up\", \"scanning\"}, m\n"), 0,
	    "%s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	t = bc_buf_str(&b);
	cr_assert_gt(check_prometheus(t), 20);
	cr_assert_eq(sample(t, "bucketcache_tier_hits_total{tier=\"memory\"}"),
	    7);
	cr_assert_eq(sample(t, "bucketcache_tier_up{tier=\"memory\"}"), 1);
	cr_assert_eq(sample(t,
	    "bucketcache_tier_corrupt_total{tier=\"disk\\\"\\n\"}"), 3);
	cr_assert_not_null(strstr(t, "# TYPE bucketcache_tier_scanning "
	    "gauge\n"));
	bc_stats_set_tiers(NULL, NULL);
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"tiers\": {}"));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	cr_assert_null(strstr(bc_buf_str(&b), "{tier="));
	cr_assert_eq(calls, 2);
	bc_buf_fini(&b);
}

static int
sec_json(void *arg, bc_buf_t *out)
{
	return bc_buf_printf(out, "{\"n\": %d}", *(int *)arg);
}

static int
sec_prom(void *arg, bc_buf_t *out)
{
	return bc_buf_printf(out, "# HELP bucketcache_sec_%d x\n"
	    "# TYPE bucketcache_sec_%d gauge\nbucketcache_sec_%d %d\n",
	    *(int *)arg, *(int *)arg, *(int *)arg, *(int *)arg);
}

/* Modules' sections: several at once, in the order set; set again
 * replaces, NULL fns remove; a fifth is refused. */
LTest(stats, sections_render_in_order_and_go)
{
	static int v[6] = { 1, 2, 3, 4, 5, 6 };
	static const char *names[5] = { "sa", "sb", "sc", "sd", "se" };
	bc_buf_t b = BC_BUF_INIT;

	bc_stats_reset();
	cr_assert_eq(bc_stats_set_section("sa", sec_json, sec_prom, &v[0]), 0);
	cr_assert_eq(bc_stats_set_section("sb", sec_json, sec_prom, &v[1]), 0);
	cr_assert_eq(bc_stats_set_section("sa", sec_json, sec_prom, &v[5]), 0,
	    "set again: replaced in place");
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "assert d[\"sa\"] == {\"n\": 6}, d\n"
	    "assert d[\"sb\"] == {\"n\": 2}, d\n"
	    "k = list(d)\n"
	    "assert k.index(\"sa\") < k.index(\"sb\"), k\n"), 0, "%s",
	    bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	check_prometheus(bc_buf_str(&b));
	cr_assert_eq(sample(bc_buf_str(&b), "bucketcache_sec_6"), 6);
	cr_assert_eq(sample(bc_buf_str(&b), "bucketcache_sec_2"), 2);
	cr_assert_eq(bc_stats_set_section("sc", sec_json, NULL, &v[2]), 0);
	cr_assert_eq(bc_stats_set_section("sd", sec_json, NULL, &v[3]), 0);
	cr_assert_eq(bc_stats_set_section("se", sec_json, NULL, &v[4]),
	    BC_ENOMEM, "four at most");
	cr_assert_eq(bc_stats_set_section(NULL, sec_json, NULL, &v[4]),
	    BC_EINVAL);
	cr_assert_eq(bc_stats_set_section("sa", NULL, NULL, NULL), 0);
	cr_assert_eq(bc_stats_set_section("se", sec_json, NULL, &v[4]), 0,
	    "a removed one's place is free");
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "assert \"sa\" not in d and d[\"se\"] == {\"n\": 5}, d\n"), 0,
	    "%s",
	    bc_buf_str(&b));
	for (int i = 0; i < 5; i++)
		bc_stats_set_section(names[i], NULL, NULL, NULL);
	bc_buf_reset(&b);
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_null(strstr(bc_buf_str(&b), "\"sb\""));
	bc_buf_fini(&b);
}

/* Prometheus gets base units: entries kept in microseconds or
 * milliseconds (names ending _us, _ms; the JSON keeps them) are rendered
 * as ..._seconds with their values divided; the smoothed per-job rate is
 * not a metric (rate() of bucketcache_job_bytes_total is). */
LTest(stats, prometheus_base_units_and_no_rate_gauges)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 };
	bc_buf_t b = BC_BUF_INIT;
	const char *t;

	bc_stats_reset();
	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = 4096;
	d[BC_JSTAT_wait_us] = 1500000;
	bc_stats_job_add("train", d);
	BC_STATS_SET(scale_origin_latency_us, 2500);
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	t = bc_buf_str(&b);
	check_prometheus(t);
	cr_assert_float_eq(sample_f(t,
	    "bucketcache_job_wait_seconds_total{bc_job=\"train\"}"), 1.5, 1e-9);
	cr_assert_not_null(strstr(t,
	    "# TYPE bucketcache_job_wait_seconds_total counter\n"));
	cr_assert_float_eq(sample_f(t, "bucketcache_scale_origin_latency_seconds"),
	    0.0025, 1e-9);
	cr_assert_eq(sample(t, "bucketcache_job_bytes_total{bc_job=\"train\"}"),
	    4096);
	for (const char *const *u = (const char *const []){ "_us ", "_us{",
	    "_us_total", "_ms ", "_ms{", "_ms_total", NULL }; *u != NULL; u++)
		cr_assert_null(strstr(t, *u), "%s in\n%s", *u, t);
	cr_assert_null(strstr(t, "bucketcache_job_rate_bytes_per_second"));
	bc_buf_reset(&b);
	/* the JSON keeps its names */
	cr_assert_eq(bc_stats_json(&b), 0);
	cr_assert_eq(python_check(bc_buf_str(&b), "import json,sys\n"
	    "d = json.load(sys.stdin)\n"
	    "assert d[\"jobs\"][\"train\"][\"wait_us\"] == 1500000, d\n"
	    "assert d[\"counters\"][\"scale_origin_latency_us\"] == 2500, d\n"),
	    0, "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
}

/* /proc/PID/stat: the command name may hold spaces and ')'; the fields
 * after the last ')' count. */
LTest(stats, proc_stat_parses)
{
	static const char stat[] = "4242 (buck (et) cache) S 1 4242 4242 0 -1 "
	    "4194560 1000 0 0 0 250 130 0 0 20 0 9 0 123400 52428800 1024 "
	    "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0\n";
	bc_stats_proc_t p;

	cr_assert_eq(bc_stats_proc_parse_stat(stat, 100, 4096, 1700000000.0,
	    &p), 0);
	cr_assert_float_eq(p.cpu_seconds, 3.8, 1e-9, "%f", p.cpu_seconds);
	cr_assert_float_eq(p.start_time, 1700000000.0 + 1234.0, 1e-6);
	cr_assert_eq(p.vsize_bytes, 52428800);
	cr_assert_eq(p.rss_bytes, 1024ull * 4096);
	cr_assert_eq(bc_stats_proc_parse_stat("4242 (x) S 1 2", 100, 4096, 0,
	    &p), BC_EINVAL, "cut short");
	cr_assert_eq(bc_stats_proc_parse_stat("no parenthesis", 100, 4096, 0,
	    &p), BC_EINVAL);
	cr_assert_eq(bc_stats_proc_parse_stat(stat, 0, 4096, 0, &p),
	    BC_EINVAL);
}

/* This process's figures, and the process_* families of /metrics. */
LTest(stats, process_metrics)
{
	bc_stats_proc_t p;
	bc_buf_t b = BC_BUF_INIT;
	unsigned have = bc_stats_proc_read(&p);
	double now = (double)time(NULL);
	const char *t;

	cr_assert_eq(have, BC_STATS_PROC_STAT | BC_STATS_PROC_START |
	    BC_STATS_PROC_FDS | BC_STATS_PROC_MAXFDS);
	cr_assert_gt(p.rss_bytes, 0);
	cr_assert_geq(p.vsize_bytes, p.rss_bytes);
	cr_assert(p.start_time > now - 86400 && p.start_time <= now + 2,
	    "start %f, now %f", p.start_time, now);
	cr_assert_geq(p.open_fds, 3);
	cr_assert_geq(p.max_fds, p.open_fds);
	bc_stats_reset();
	cr_assert_eq(bc_stats_prometheus(&b), 0);
	t = bc_buf_str(&b);
	check_prometheus(t);
	cr_assert_not_null(strstr(t,
	    "# TYPE process_cpu_seconds_total counter\n"));
	cr_assert_gt(sample(t, "process_resident_memory_bytes"), 0);
	cr_assert_gt(sample(t, "process_virtual_memory_bytes"), 0);
	cr_assert_gt(sample(t, "process_open_fds"), 2);
	cr_assert_gt(sample(t, "process_max_fds"), 2);
	cr_assert_gt(sample_f(t, "process_start_time_seconds"), now - 86400);
	bc_buf_fini(&b);
}
