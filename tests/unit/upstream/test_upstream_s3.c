/*
 * test_upstream_s3.c — upstream/upstream_s3: the S3 origin's set-up from
 * the config (bad --upstream refused) and its request building: URL and
 * Host per addressing style, signed (Authorization over the payload hash,
 * date, token) or unsigned (nothing of the credentials), the signing
 * context handed back; and the fetches its origin sends (Range, the
 * conditional headers, a version, signed or not) to a capturing HTTP
 * server.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "config/config.h"
#include "creds/creds.h"
#include "upstream/upstream.h"
#include "upstream/upstream_s3.h"
#include "upstream/upstream_xfer.h"

/* The provider cfg_for() makes for the config's key pair. */
static bc_creds_t *creds;

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
	creds = bc_creds_new_static(c->access_key, c->secret_key,
	    c->session_token);
	cr_assert_not_null(creds);
}

static void
cfg_fini(bc_config_t *c)
{
	bc_config_fini(c);
	bc_creds_free(creds);
	creds = NULL;
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
		cr_expect_eq(bc_s3_origin_init(&o, &c, creds, err, sizeof(err)), -1,
		    "%s", bad[i]);
		cr_expect_not_null(strstr(err, "--upstream: '"), "%s", err);
		bc_s3_origin_fini(&o);
		cfg_fini(&c);
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
	cr_assert_eq(bc_s3_origin_init(&o, &c, creds, err, sizeof(err)), 0, "%s",
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
	cfg_fini(&c);
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
	cr_assert_eq(bc_s3_origin_init(&o, &c, creds, err, sizeof(err)), 0, "%s",
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
	cfg_fini(&c);
}

/* A fetcher of test pairs: AKIDROTATE0000000N / secretN / tokenN,
 * expiring life_ms after they are made; fail makes it fail. */
typedef struct rot_s {
	int     n;
	int64_t life_ms;
	bool    fail;
} rot_t;

static int
rot_fetch(void *arg, bc_creds_snap_t **out, char *err, size_t errlen)
{
	rot_t *r = arg;
	char ak[32], sk[32], tok[32];

	if (r->fail) {
		snprintf(err, errlen, "told to fail");
		return BC_EIO;
	}
	r->n++;
	snprintf(ak, sizeof(ak), "AKIDROTATE%08d", r->n);
	snprintf(sk, sizeof(sk), "secret%d", r->n);
	snprintf(tok, sizeof(tok), "token%d", r->n);
	return bc_creds_snap_new(ak, sk, tok, bc_creds_now_ms() + r->life_ms,
	    out, err, errlen);
}

/* Signing takes the provider's pair of the moment; once it expired with
 * no refresh, nothing is signed (BC_EKEYEXPIRED) and the origin's ready
 * op says so; no credentials at all (none) sends requests unsigned. */
LTest(s3_origin, rotating_and_expired_credentials)
{
	bc_config_t c;
	bc_s3_origin_t o;
	bc_buf_t url = BC_BUF_INIT;
	bc_kvlist_t h = BC_KVLIST_INIT;
	bc_creds_t *rc = NULL;
	rot_t r = { 0, 300, false };
	char err[200];
	const char *a;

	cfg_for(&c, "http://s3.example", "path", NULL);
	cr_assert_eq(bc_creds_new_fetcher(BC_CREDS_IMDS, rot_fetch, &r, &rc,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bc_s3_origin_init(&o, &c, rc, err, sizeof(err)), 0);
	cr_assert_eq(bc_s3_origin_request(&o, "GET", "b", "k", false, NULL,
	    "UNSIGNED-PAYLOAD", false, &url, &h, NULL), 0);
	a = bc_kv_get(&h, "Authorization");
	cr_assert_not_null(a);
	cr_expect_not_null(strstr(a, "Credential=AKIDROTATE00000001/"), "%s",
	    a);
	cr_expect_str_eq(bc_kv_get(&h, "x-amz-security-token"), "token1");
	bc_buf_fini(&url);
	bc_kv_fini(&h);
	/* not started: no refresh, so it expires */
	usleep(400 * 1000);
	cr_expect_eq(bc_s3_origin_request(&o, "GET", "b", "k", false, NULL,
	    "UNSIGNED-PAYLOAD", false, &url, &h, NULL), BC_EKEYEXPIRED);
	cr_expect_null(bc_kv_get(&h, "Authorization"));
	/* an unsigned request needs no credentials */
	bc_kv_fini(&h);
	bc_buf_fini(&url);
	cr_expect_eq(bc_s3_origin_request(&o, "GET", "b", "k", false, NULL,
	    "UNSIGNED-PAYLOAD", true, &url, &h, NULL), 0);
	bc_kv_fini(&h);
	bc_buf_fini(&url);
	bc_s3_origin_fini(&o);
	/* no credentials: unsigned whatever is asked */
	cr_assert_eq(bc_s3_origin_init(&o, &c, NULL, err, sizeof(err)), 0);
	cr_expect_eq(bc_s3_origin_request(&o, "GET", "b", "k", false, NULL,
	    "UNSIGNED-PAYLOAD", false, &url, &h, NULL), 0);
	cr_expect_null(bc_kv_get(&h, "Authorization"));
	cr_expect_null(bc_kv_get(&h, "x-amz-security-token"));
	bc_kv_fini(&h);
	bc_buf_fini(&url);
	bc_s3_origin_fini(&o);
	bc_creds_free(rc);
	cfg_fini(&c);
}

/* ---- the S3 origin's fetches on the wire --------------------------------- */

/*
 * A one-request-per-connection HTTP server on 127.0.0.1 that keeps each
 * request's head and answers HEAD with 200 (Content-Length 10) and GET
 * with 206 "abcd" (bytes 0-3/10), both with ETag "e".
 */
#define CAP_MAX 4

typedef struct cap_s {
	int             lfd;
	uint16_t        port;
	pthread_t       th;
	atomic_bool     stop;
	pthread_mutex_t mu;
	char            heads[CAP_MAX][4096];   /* lower-cased */
	unsigned        n;
} cap_t;

static void
cap_serve(cap_t *s, int fd)
{
	static const char head_ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 10"
	    "\r\nETag: \"e\"\r\nConnection: close\r\n\r\n";
	static const char get_ok[] = "HTTP/1.1 206 Partial Content\r\n"
	    "Content-Length: 4\r\nContent-Range: bytes 0-3/10\r\n"
	    "ETag: \"e\"\r\nConnection: close\r\n\r\nabcd";
	char in[4096];
	size_t len = 0;
	const char *out;

	while (len < sizeof(in) - 1) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t r;

		if (poll(&pf, 1, 5000) <= 0)
			return;
		r = recv(fd, in + len, sizeof(in) - 1 - len, 0);
		if (r <= 0)
			return;
		len += (size_t)r;
		in[len] = '\0';
		if (strstr(in, "\r\n\r\n") != NULL)
			break;
	}
	for (size_t i = 0; i < len; i++)
		in[i] = (char)tolower((unsigned char)in[i]);
	pthread_mutex_lock(&s->mu);
	if (s->n < CAP_MAX)
		memcpy(s->heads[s->n++], in, len + 1);
	pthread_mutex_unlock(&s->mu);
	out = strncmp(in, "head ", 5) == 0 ? head_ok : get_ok;
	(void)send(fd, out, strlen(out), MSG_NOSIGNAL);
}

static void *
cap_main(void *arg)
{
	cap_t *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd pf = { s->lfd, POLLIN, 0 };
		int fd;

		if (poll(&pf, 1, 20) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		cap_serve(s, fd);
		close(fd);
	}
	return NULL;
}

static void
cap_start(cap_t *s)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(s->lfd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(s->lfd, 8), 0);
	cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
	s->port = ntohs(sa.sin_port);
	atomic_init(&s->stop, false);
	cr_assert_eq(pthread_create(&s->th, NULL, cap_main, s), 0);
}

static void
cap_stop(cap_t *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
}

/* A copy of request i's head (lower-cased). */
static void
cap_head(cap_t *s, unsigned i, char *out, size_t cap)
{
	pthread_mutex_lock(&s->mu);
	cr_assert_lt(i, s->n, "request %u never came", i);
	snprintf(out, cap, "%s", s->heads[i]);
	pthread_mutex_unlock(&s->mu);
}

static void
stop_origin(bc_loop_t *l, void *arg)
{
	bc_origin_t *o = arg;

	(void)l;
	o->ops->cancel_all(o);
}

typedef struct done_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
} done_t;

static void
fetch_done(bc_exchange_t *x, void *arg)
{
	done_t *d = arg;

	(void)x;
	pthread_mutex_lock(&d->mu);
	d->done = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
}

/* Runs f (push mode) on o to its end; returns the exchange. */
static bc_exchange_t *
fetch_run(bc_origin_t *o, bc_fetch_t *f)
{
	done_t d = { .done = false };
	struct timespec dl;
	bc_exchange_t *x;

	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.cv, NULL);
	f->collect_max = 1 << 16;
	f->on_done = fetch_done;
	f->arg = &d;
	x = bc_origin_fetch(o, f);
	cr_assert_not_null(x);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 15;
	pthread_mutex_lock(&d.mu);
	while (!d.done && pthread_cond_timedwait(&d.cv, &d.mu, &dl) == 0)
		;
	pthread_mutex_unlock(&d.mu);
	cr_assert(d.done, "the fetch never ended");
	pthread_cond_destroy(&d.cv);
	pthread_mutex_destroy(&d.mu);
	return x;
}

/* bc_s3_origin_new's fetch: the cache's ranged, conditional GET goes out
 * signed with Range and If-Match; its HEAD with If-None-Match and no
 * Range; an unsigned one carries nothing of the credentials. The answer
 * comes back through the exchange (status, headers, collected body). */
LTest(s3_origin, fetch_sends_range_and_conditions)
{
	bc_config_t c;
	bc_loop_t *loop;
	bc_origin_t *o = NULL;
	bc_exchange_t *x;
	bc_fetch_t f;
	cap_t srv;
	char url[64], err[200], head[4096];
	const bc_kvlist_t *h;
	uint8_t *body;
	size_t len = 0;
	int status = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	cap_start(&srv);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)srv.port);
	cfg_for(&c, url, "path", NULL);
	c.retries = 0;
	loop = bc_xfer_loop_new();
	cr_assert_not_null(loop);
	cr_assert_eq(bc_loop_start(loop), 0);
	cr_assert_eq(bc_s3_origin_new(&c, creds, loop, &o, err, sizeof(err)), 0,
	    "%s", err);

	memset(&f, 0, sizeof(f));
	f.bucket = "bkt";
	f.key = "a b";
	f.first = 0;
	f.last = 1023;
	f.cond = "If-Match";
	f.etag = "\"e\"";
	x = fetch_run(o, &f);
	cr_assert_eq(bc_exchange_error(x), 0);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_assert_eq(status, 206);
	cr_assert_str_eq(bc_kv_get(h, "Content-Range"), "bytes 0-3/10");
	body = bc_exchange_take_body(x, &len);
	cr_assert(len == 4 && memcmp(body, "abcd", 4) == 0);
	free(body);
	bc_exchange_release(x);
	cap_head(&srv, 0, head, sizeof(head));
	cr_expect_eq(strncmp(head, "get /bkt/a%20b http/1.1\r\n", 25), 0, "%s",
	    head);
	cr_expect_not_null(strstr(head, "\r\nrange: bytes=0-1023\r\n"), "%s",
	    head);
	cr_expect_not_null(strstr(head, "\r\nif-match: \"e\"\r\n"), "%s", head);
	cr_expect_null(strstr(head, "if-none-match"), "%s", head);
	cr_expect_not_null(strstr(head, "\r\nauthorization: aws4-hmac-sha256 "
	    "credential=akidexample/"), "%s", head);
	cr_expect_not_null(strstr(head, "\r\nx-amz-date: "), "%s", head);

	memset(&f, 0, sizeof(f));
	f.bucket = "bkt";
	f.key = "a b";
	f.head = true;
	f.first = 0;     /* a HEAD never carries a Range */
	f.last = 1023;
	f.cond = "If-None-Match";
	f.etag = "\"e\"";
	f.anon = true;
	x = fetch_run(o, &f);
	cr_assert_eq(bc_exchange_error(x), 0);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_assert_eq(status, 200);
	cr_assert_str_eq(bc_kv_get(h, "Content-Length"), "10");
	bc_exchange_release(x);
	cap_head(&srv, 1, head, sizeof(head));
	cr_expect_eq(strncmp(head, "head /bkt/a%20b http/1.1\r\n", 26), 0,
	    "%s", head);
	cr_expect_not_null(strstr(head, "\r\nif-none-match: \"e\"\r\n"), "%s",
	    head);
	cr_expect_null(strstr(head, "\r\nrange:"), "%s", head);
	cr_expect_null(strstr(head, "\r\nif-match:"), "%s", head);
	cr_expect_null(strstr(head, "\r\nauthorization:"), "unsigned: %s",
	    head);
	cr_expect_null(strstr(head, "\r\nx-amz-date:"), "unsigned: %s", head);

	/* a version (a cached versioned read, cache.h "Versions"): its
	 * versionId in the query, which the signature covers (RGW checks
	 * that: test_rgw_s3.sh) */
	memset(&f, 0, sizeof(f));
	f.bucket = "bkt";
	f.key = "a b";
	f.version = "3HL4kq.tJv-jVX_F";
	f.first = 0;
	f.last = 1023;
	f.cond = "If-Match";
	f.etag = "\"e\"";
	x = fetch_run(o, &f);
	cr_assert_eq(bc_exchange_error(x), 0);
	bc_exchange_release(x);
	cap_head(&srv, 2, head, sizeof(head));
	{
		static const char line[] = "get /bkt/a%20b?versionid="
		    "3hl4kq.tjv-jvx_f http/1.1\r\n";

		cr_expect_eq(strncmp(head, line, sizeof(line) - 1), 0, "%s",
		    head);
	}
	cr_expect_not_null(strstr(head, "\r\nauthorization: aws4-hmac-sha256 "
	    "credential=akidexample/"), "%s", head);

	bc_loop_stop(loop, stop_origin, o);
	bc_origin_free(o);
	bc_loop_free(loop);
	cap_stop(&srv);
	cfg_fini(&c);
	curl_global_cleanup();
}
