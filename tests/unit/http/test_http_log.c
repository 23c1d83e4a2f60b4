/*
 * test_http_log.c — the access log's line (bc_http_log_format): every
 * field, null for absent ones, RFC 3339 time with milliseconds, strings
 * escaped whatever bytes they hold (quotes, backslashes, control
 * characters, invalid UTF-8) so that the line is one valid JSON object,
 * keys cut at 1024 bytes and other strings at 256 (truncated: true), and
 * the line within BC_HTTP_LOG_LINE_MAX; bc_http_log_outcome.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_log.h"
#include "util/util_buf.h"
#include "util/util_error.h"

#define PYTHON "/usr/bin/python3"

/* Feeds line to a Python check (json.loads of it as d); 0: passed. */
static int
json_check(const char *line, const char *script)
{
	char cmd[4096];
	FILE *p;

	if (access(PYTHON, X_OK) != 0)
		cr_skip_test("%s not found", PYTHON);
	snprintf(cmd, sizeof(cmd), "%s -c 'import json,sys\n"
	    "raw = sys.stdin.buffer.read()\n"
	    "assert raw.endswith(b\"\\n\") and raw.count(b\"\\n\") == 1, raw\n"
	    "d = json.loads(raw.decode(\"utf-8\"))\n%s'", PYTHON, script);
	p = popen(cmd, "w");
	cr_assert_not_null(p);
	fputs(line, p);
	return pclose(p);
}

static bc_http_log_rec_t
rec_base(void)
{
	bc_http_log_rec_t r;

	memset(&r, 0, sizeof(r));
	r.time = 1764377064.785;   /* 2025-11-29T00:44:24.785Z */
	r.remote = "127.0.0.1";
	r.method = "GET";
	r.op = "GetObject";
	r.bucket = "demo";
	r.key = "images/img 1.bin";
	r.cache = "hit";
	r.job = "train-1";
	r.request_id = "01A64B8378000000";
	r.status = 200;
	r.bytes = 4096;
	r.bytes_in = 0;
	r.duration = 0.0125;
	return r;
}

LTest(http_log, every_field)
{
	bc_http_log_rec_t r = rec_base();
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_http_log_format(&b, &r), 0);
	cr_assert_str_eq(bc_buf_str(&b), "{\"time\":\"2025-11-29T00:44:24.785Z\","
	    "\"remote\":\"127.0.0.1\",\"method\":\"GET\",\"op\":\"GetObject\","
	    "\"bucket\":\"demo\",\"key\":\"images/img 1.bin\",\"status\":200,"
	    "\"bytes\":4096,\"bytes_in\":0,\"duration\":0.012500,"
	    "\"cache\":\"hit\",\"job\":\"train-1\","
	    "\"request_id\":\"01A64B8378000000\"}\n");
	cr_assert_eq(json_check(bc_buf_str(&b),
	    "assert d[\"status\"] == 200 and d[\"cache\"] == \"hit\", d\n"), 0);
	bc_buf_fini(&b);
}

LTest(http_log, nulls_and_aborted)
{
	bc_http_log_rec_t r = rec_base();
	bc_buf_t b = BC_BUF_INIT;

	r.cache = NULL;
	r.job = NULL;
	r.status = 499;
	r.aborted = true;
	cr_assert_eq(bc_http_log_format(&b, &r), 0);
	cr_assert_eq(json_check(bc_buf_str(&b),
	    "assert d[\"cache\"] is None and d[\"job\"] is None, d\n"
	    "assert d[\"aborted\"] is True and d[\"status\"] == 499, d\n"
	    "assert \"truncated\" not in d, d\n"), 0, "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
}

/* Whatever bytes a key or a job holds, the line is one JSON object. */
LTest(http_log, hostile_strings_are_escaped)
{
	bc_http_log_rec_t r = rec_base();
	bc_buf_t b = BC_BUF_INIT;

	r.key = "a\"b\\c\x01\n\r\td\xff\xfe\xc3\xa9";   /* ... é */
	r.job = "j\"}\n{";
	r.bucket = "\x7f";
	cr_assert_eq(bc_http_log_format(&b, &r), 0);
	cr_assert_null(strchr(bc_buf_str(&b), '\r'));
	cr_assert_eq(json_check(bc_buf_str(&b),
	    "assert d[\"key\"] == \"a\\\"b\\\\c\\x01\\n\\r\\td\\ufffd\\ufffd\\u00e9\", ascii(d[\"key\"])\n"
	    "assert d[\"job\"] == \"j\\\"}\\n{\", d\n"
	    "assert d[\"bucket\"] == \"\\x7f\", d\n"), 0, "%s",
	    bc_buf_str(&b));
	bc_buf_fini(&b);
}

/* Keys are cut at 1024 bytes, other strings at 256, and the line says
 * so; the worst line (every byte escaped as \ufffd) fits the bound. */
LTest(http_log, bounded)
{
	bc_http_log_rec_t r = rec_base();
	bc_buf_t b = BC_BUF_INIT;
	char key[4000], job[1000];

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	r.key = key;
	cr_assert_eq(bc_http_log_format(&b, &r), 0);
	cr_assert_eq(json_check(bc_buf_str(&b),
	    "assert d[\"key\"] == \"k\" * 1024, len(d[\"key\"])\n"
	    "assert d[\"truncated\"] is True, d\n"), 0);
	bc_buf_reset(&b);
	memset(key, '\xff', sizeof(key) - 1);
	memset(job, '\x01', sizeof(job) - 1);
	job[sizeof(job) - 1] = '\0';
	r.job = job;
	r.bucket = job;
	r.remote = job;
	r.method = job;
	r.op = job;
	r.cache = job;
	r.request_id = job;
	cr_assert_eq(bc_http_log_format(&b, &r), 0);
	cr_assert_leq(b.len, BC_HTTP_LOG_LINE_MAX);
	cr_assert_eq(json_check(bc_buf_str(&b),
	    "assert d[\"key\"] == \"\\ufffd\" * 1024, len(d[\"key\"])\n"
	    "assert d[\"job\"] == \"\\x01\" * 256, len(d[\"job\"])\n"
	    "assert d[\"truncated\"] is True, d\n"), 0);
	bc_buf_fini(&b);
}

LTest(http_log, outcome_names)
{
	cr_assert_str_eq(bc_http_log_outcome("hit"), "hit");
	cr_assert_str_eq(bc_http_log_outcome("miss"), "miss");
	cr_assert_str_eq(bc_http_log_outcome("partial"), "partial");
	cr_assert_null(bc_http_log_outcome("HIT"));
	cr_assert_null(bc_http_log_outcome(""));
	cr_assert_null(bc_http_log_outcome(NULL));
}
