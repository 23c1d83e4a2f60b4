/* http_warm_cli.c — `bucketcache warm` (see http_warm_cli.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "http/http_warm_cli.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "util/util_buf.h"
#include "util/util_error.h"

#define BODY_MAX    (256 * 1024)   /* an answer, at most */
#define TIMEOUT_MS  10000L
#define BAR_WIDTH   30
#define DEFAULT_ENDPOINT "http://127.0.0.1:8080"

typedef struct cli_s {
	const char *endpoint, *tier, *token;
	char        bucket[BC_S3_MAX_BUCKET + 1];
	const char *prefix;
	bool        detach;
	double      interval;
	const char *ak, *sk, *session, *region;
	bool        tty;
	double      printed;      /* when a line last went out (no tty) */
} cli_t;

#define LINE_EVERY 5.0   /* seconds between progress lines, no tty */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
usage(FILE *fp)
{
	fprintf(fp, "Usage: bucketcache warm s3://BUCKET[/PREFIX] "
	    "[--endpoint URL] [--tier memory|disk|redis]\n"
	    "           [--detach] [--admin-token TOKEN] "
	    "[--interval SECONDS]\n"
	    "Lists the prefix at the gateway's origin and brings it into a "
	    "cache tier (the\nfirst lower tier by default), showing progress "
	    "until done (--detach: return\nonce started). The gateway is "
	    "--endpoint, else AWS_ENDPOINT_URL_S3, else\nAWS_ENDPOINT_URL, "
	    "else " DEFAULT_ENDPOINT ". The call carries --admin-token (or\n"
	    "BUCKETCACHE_ADMIN_TOKEN), else is signed with AWS_ACCESS_KEY_ID "
	    "and\nAWS_SECRET_ACCESS_KEY when set.\n");
}

int
bc_http_warm_cli_target(const char *s, char *bucket, size_t blen,
    const char **prefix)
{
	const char *b, *slash;
	size_t n;

	if (s == NULL || strncmp(s, "s3://", 5) != 0)
		return BC_EINVAL;
	b = s + 5;
	slash = strchr(b, '/');
	n = slash != NULL ? (size_t)(slash - b) : strlen(b);
	if (n == 0 || n >= blen)
		return BC_EINVAL;
	memcpy(bucket, b, n);
	bucket[n] = '\0';
	if (!bc_s3_bucket_name_ok(bucket))
		return BC_EINVAL;
	*prefix = slash != NULL ? slash + 1 : "";
	if (strlen(*prefix) > BC_S3_MAX_KEY)
		return BC_EINVAL;
	return 0;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	bc_buf_t *b = arg;
	size_t n = size * nmemb;

	if (bc_buf_append(b, data, n) < 0)
		return 0;   /* too big: the transfer fails */
	return n;
}

/* One call to the gateway: method on /_bucketcache/v1/warm with the
 * target's query. Returns the HTTP status (0: no answer, msg says why),
 * the body in body. */
static long
call(const cli_t *c, const char *method, bc_buf_t *body, char *msg,
    size_t msglen)
{
	bc_buf_t url = BC_BUF_INIT, auth = BC_BUF_INIT, sig = BC_BUF_INIT;
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	long status = 0;
	size_t el = strlen(c->endpoint);
	CURL *h;
	CURLcode cc;

	bc_buf_reset(body);
	while (el > 0 && c->endpoint[el - 1] == '/')
		el--;
	if (bc_buf_append(&url, c->endpoint, el) < 0 ||
	    bc_buf_puts(&url, "/_bucketcache/v1/warm?bucket=") < 0 ||
	    bc_sigv4_uri_encode(&url, c->bucket, false) < 0 ||
	    bc_buf_puts(&url, "&prefix=") < 0 ||
	    bc_sigv4_uri_encode(&url, c->prefix, false) < 0 ||
	    (c->tier != NULL && (bc_buf_puts(&url, "&tier=") < 0 ||
	    bc_sigv4_uri_encode(&url, c->tier, false) < 0))) {
		snprintf(msg, msglen, "out of memory");
		goto out;
	}
	h = curl_easy_init();
	if (h == NULL) {
		snprintf(msg, msglen, "out of memory");
		goto out;
	}
	if (c->token != NULL) {
		bc_buf_printf(&auth, "x-bucketcache-admin-token: %s", c->token);
		hdrs = curl_slist_append(hdrs, bc_buf_str(&auth));
	} else if (c->ak != NULL && c->sk != NULL) {
		bc_buf_printf(&sig, "aws:amz:%s:s3", c->region);
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, bc_buf_str(&sig));
		curl_easy_setopt(h, CURLOPT_USERNAME, c->ak);
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->sk);
		if (c->session != NULL) {
			bc_buf_printf(&auth, "x-amz-security-token: %s",
			    c->session);
			hdrs = curl_slist_append(hdrs, bc_buf_str(&auth));
		}
	}
	curl_easy_setopt(h, CURLOPT_URL, bc_buf_str(&url));
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "bucketcache-warm");
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK)
		snprintf(msg, msglen, "%s: %s", bc_buf_str(&url),
		    cerr[0] != '\0' ? cerr : curl_easy_strerror(cc));
	else
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
out:
	curl_slist_free_all(hdrs);
	bc_buf_fini(&url);
	bc_buf_fini(&auth);
	bc_buf_fini(&sig);
	return status;
}

/* Our own JSON (http_warm.c): the number after "name": , or 0. */
static double
json_num(const bc_buf_t *b, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", name);
	p = strstr(bc_buf_str(b), pat);
	return p != NULL ? strtod(p + strlen(pat), NULL) : 0;
}

/* The string after "name": into out (n bytes), printable ASCII only;
 * "" when absent or null. */
static void
json_str(const bc_buf_t *b, const char *name, char *out, size_t n)
{
	char pat[64];
	const char *p;
	size_t i = 0;

	out[0] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\": \"", name);
	p = strstr(bc_buf_str(b), pat);
	if (p == NULL)
		return;
	for (p += strlen(pat); *p != '\0' && *p != '"' && i + 1 < n; p++)
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			out[i++] = *p;
	out[i] = '\0';
}

/* An S3 <Error>'s element text into out. */
static void
xml_text(const bc_buf_t *b, const char *name, char *out, size_t n)
{
	char open[40], close_[40];
	const char *s, *e;
	size_t i = 0;

	out[0] = '\0';
	snprintf(open, sizeof(open), "<%s>", name);
	snprintf(close_, sizeof(close_), "</%s>", name);
	s = strstr(bc_buf_str(b), open);
	if (s == NULL)
		return;
	s += strlen(open);
	e = strstr(s, close_);
	for (; e != NULL && s < e && i + 1 < n; s++)
		if (*s >= 0x20 && *s < 0x7f)
			out[i++] = *s;
	out[i] = '\0';
}

static void
human(double v, char *out, size_t n)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, n, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

/* One line of progress: a bar, bytes, rate, ETA, objects; redrawn in
 * place on a terminal, else a line every LINE_EVERY seconds and the
 * last. */
static void
progress(cli_t *c, const bc_buf_t *b, bool last)
{
	double eligible = json_num(b, "bytes_listed") -
	    json_num(b, "bytes_skipped");
	double done = json_num(b, "bytes_done");
	double frac = eligible > 0 ? done / eligible : 0;
	double eta = json_num(b, "eta_seconds");
	char d[32], t[32], rate[32], bar[BAR_WIDTH + 1];
	int fill = (int)(frac * BAR_WIDTH + 0.5);

	if (!c->tty && !last && now_s() - c->printed < LINE_EVERY)
		return;
	c->printed = now_s();
	if (fill > BAR_WIDTH)
		fill = BAR_WIDTH;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = '\0';
	human(done, d, sizeof(d));
	human(eligible, t, sizeof(t));
	human(json_num(b, "rate_bytes_per_second"), rate, sizeof(rate));
	fprintf(stderr, "%s[%s] %3.0f%% %s/%s%s %s/s ETA %.0fs objects "
	    "%.0f/%.0f failed %.0f%s", c->tty ? "\r" : "", bar, frac * 100,
	    d, t, strstr(bc_buf_str(b), "\"listing_done\": true") != NULL ?
	    "" : "+", rate, eta, json_num(b, "objects_done"),
	    json_num(b, "objects_listed") - json_num(b, "objects_skipped"),
	    json_num(b, "objects_failed"), c->tty && !last ? "  " : "\n");
	fflush(stderr);
}

static void
summary(const cli_t *c, const bc_buf_t *b, const char *state)
{
	char done[32], err[256], tier[32];

	human(json_num(b, "bytes_done"), done, sizeof(done));
	json_str(b, "error", err, sizeof(err));
	json_str(b, "tier", tier, sizeof(tier));
	printf("warm s3://%s/%s: %s: %.0f objects (%s) in the %s tier: "
	    "%.0f warmed, %.0f cached before; %.0f failed, %.0f skipped, "
	    "%.0f without room; %.1f s%s%s\n", c->bucket, c->prefix, state,
	    json_num(b, "objects_done"), done, tier, json_num(b,
	    "objects_warmed"),
	    json_num(b, "objects_cached"), json_num(b, "objects_failed"),
	    json_num(b, "objects_skipped"), json_num(b, "objects_no_room"),
	    json_num(b, "elapsed_seconds"), err[0] != '\0' ? ": " : "", err);
}

static int
parse_args(cli_t *c, int argc, char **argv)
{
	const char *target = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;

		if (strcmp(a, "--detach") == 0) {
			c->detach = true;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(a, "--endpoint") == 0)
			dst = &c->endpoint;
		else if (strcmp(a, "--tier") == 0)
			dst = &c->tier;
		else if (strcmp(a, "--admin-token") == 0)
			dst = &c->token;
		if (dst != NULL || strcmp(a, "--interval") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "bucketcache warm: %s needs a "
				    "value\n", a);
				return BC_EINVAL;
			}
			if (dst != NULL) {
				*dst = argv[++i];
				continue;
			}
			c->interval = strtod(argv[++i], NULL);
			if (!(c->interval >= 0.05 && c->interval <= 3600)) {
				fprintf(stderr, "bucketcache warm: --interval "
				    "must be 0.05 to 3600 seconds\n");
				return BC_EINVAL;
			}
			continue;
		}
		if (a[0] == '-' || target != NULL) {
			fprintf(stderr, "bucketcache warm: unexpected "
			    "argument '%.64s'\n", a);
			return BC_EINVAL;
		}
		target = a;
	}
	if (bc_http_warm_cli_target(target, c->bucket, sizeof(c->bucket),
	    &c->prefix) < 0) {
		fprintf(stderr, "bucketcache warm: want s3://BUCKET[/PREFIX]"
		    "%s%.200s\n", target != NULL ? ", not " : "",
		    target != NULL ? target : "");
		return BC_EINVAL;
	}
	if (strncmp(c->endpoint, "http://", 7) != 0 &&
	    strncmp(c->endpoint, "https://", 8) != 0) {
		fprintf(stderr, "bucketcache warm: --endpoint must be an "
		    "http(s):// URL\n");
		return BC_EINVAL;
	}
	return 0;
}

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* A refusal or no answer: the reason on stderr. */
static int
refused(long status, const bc_buf_t *b, const char *msg)
{
	char code[64], text[256];

	if (status == 0) {
		fprintf(stderr, "bucketcache warm: %s\n", msg);
		return 1;
	}
	xml_text(b, "Code", code, sizeof(code));
	xml_text(b, "Message", text, sizeof(text));
	fprintf(stderr, "bucketcache warm: the gateway answered %ld%s%s%s%s\n",
	    status, code[0] != '\0' ? " " : "", code, text[0] != '\0' ?
	    ": " : "", text);
	return 1;
}

int
bc_http_warm_cli(int argc, char **argv)
{
	cli_t c;
	bc_buf_t body;
	char msg[512] = "", state[32];
	long status;
	int rv = 1;

	memset(&c, 0, sizeof(c));
	c.interval = 1.0;
	c.endpoint = env("AWS_ENDPOINT_URL_S3");
	if (c.endpoint == NULL)
		c.endpoint = env("AWS_ENDPOINT_URL");
	if (c.endpoint == NULL)
		c.endpoint = DEFAULT_ENDPOINT;
	c.token = env("BUCKETCACHE_ADMIN_TOKEN");
	if (parse_args(&c, argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	c.ak = env("AWS_ACCESS_KEY_ID");
	c.sk = env("AWS_SECRET_ACCESS_KEY");
	c.session = env("AWS_SESSION_TOKEN");
	c.region = env("AWS_REGION");
	if (c.region == NULL)
		c.region = env("AWS_DEFAULT_REGION");
	if (c.region == NULL)
		c.region = "us-east-1";
	c.tty = isatty(2) == 1;
	bc_buf_init(&body, BODY_MAX);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	status = call(&c, "POST", &body, msg, sizeof(msg));
	if (status == 409 && !c.detach) {
		/* one of this prefix runs: watch it */
		fprintf(stderr, "bucketcache warm: s3://%s/%s is being warmed "
		    "already; following it\n", c.bucket, c.prefix);
		status = call(&c, "GET", &body, msg, sizeof(msg));
		if (status == 200)
			status = 202;
	}
	if (status != 202) {
		rv = refused(status, &body, msg);
		goto out;
	}
	if (c.detach) {
		printf("warm s3://%s/%s: started; follow it with: curl "
		    "'%s/_bucketcache/v1/warm?bucket=%s&prefix=...'\n",
		    c.bucket, c.prefix, c.endpoint, c.bucket);
		rv = 0;
		goto out;
	}
	for (;;) {
		struct timespec ts;

		json_str(&body, "state", state, sizeof(state));
		if (strcmp(state, "running") != 0)
			break;
		progress(&c, &body, false);
		ts.tv_sec = (time_t)c.interval;
		ts.tv_nsec = (long)((c.interval - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
		status = call(&c, "GET", &body, msg, sizeof(msg));
		if (status != 200) {
			if (c.tty)
				fputc('\n', stderr);
			rv = refused(status, &body, msg);
			goto out;
		}
	}
	progress(&c, &body, true);
	summary(&c, &body, state);
	rv = strcmp(state, "done") == 0 &&
	    json_num(&body, "objects_failed") == 0 ? 0 : 1;
out:
	bc_buf_fini(&body);
	curl_global_cleanup();
	return rv;
}
