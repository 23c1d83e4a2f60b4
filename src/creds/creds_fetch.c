/*
 * creds_fetch.c — the IMDSv2, ECS container and STS web identity calls
 * (see creds_fetch.h), over libcurl easy handles made per call.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "creds/creds_fetch.h"
#include "creds/creds_parse.h"
#include "util/util_error.h"
#include "util/util_log.h"

#define IMDS_TOKEN_TTL   21600            /* seconds asked for */
#define IMDS_TOKEN_SLACK (60 * 1000)      /* renewed this long before */
#define ECS_TIMEOUT_MS   2000
#define ECS_ATTEMPTS     3
#define STS_TIMEOUT_MS   10000
#define STS_CONNECT_MS   5000
#define STS_ATTEMPTS     3
#define MAX_WEB_TOKEN    20000            /* STS's WebIdentityToken bound */

struct bc_creds_fetcher_s {
	const bc_config_creds_t *cc;
	atomic_bool aborted;
	char       *imds_token;               /* NULL: none yet */
	int64_t     imds_token_until;         /* Unix ms */
};

/* One HTTP call's answer. */
typedef struct answer_s {
	long     status;
	bc_buf_t body;        /* limited to BC_CREDS_MAX_ANSWER */
	bool     too_big;
} answer_t;

bc_creds_fetcher_t *
bc_creds_fetcher_new(const bc_config_creds_t *cc)
{
	bc_creds_fetcher_t *f = calloc(1, sizeof(*f));

	if (f != NULL)
		f->cc = cc;
	return f;
}

static void
drop_imds_token(bc_creds_fetcher_t *f)
{
	if (f->imds_token != NULL) {
		memset(f->imds_token, 0, strlen(f->imds_token));
		free(f->imds_token);
	}
	f->imds_token = NULL;
	f->imds_token_until = 0;
}

void
bc_creds_fetcher_free(bc_creds_fetcher_t *f)
{
	if (f == NULL)
		return;
	drop_imds_token(f);
	free(f);
}

void
bc_creds_fetcher_abort(void *fv)
{
	bc_creds_fetcher_t *f = fv;

	atomic_store(&f->aborted, true);
}

int
bc_creds_form_escape(bc_buf_t *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0';
	    p++) {
		int rv;

		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' ||
		    *p == '~') {
			rv = bc_buf_putc(out, (char)*p);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			rv = bc_buf_append(out, e, 3);
		}
		if (rv < 0)
			return BC_ENOMEM;
	}
	return 0;
}

/* ---- one HTTP call ------------------------------------------------------- */

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	answer_t *a = arg;

	if (bc_buf_append(&a->body, p, size * n) < 0) {
		a->too_big = true;
		return 0;   /* aborts the transfer */
	}
	return size * n;
}

static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	bc_creds_fetcher_t *f = arg;

	(void)dt; (void)dn; (void)ut; (void)un;
	return atomic_load(&f->aborted) ? 1 : 0;
}

/*
 * method url (headers: NULL-ended "Name: value" lines; body: NULL for
 * none) within timeout_ms (connect within connect_ms). Returns 0 with
 * a->status and a->body (the caller finis it), or a negative code with
 * err saying why (transport failure, answer too big, aborted).
 */
static int
http_call(bc_creds_fetcher_t *f, const char *method, const char *url,
    const char *const *headers, const char *body, long timeout_ms,
    long connect_ms, bool proxy, answer_t *a, char *err, size_t errlen)
{
	struct curl_slist *hl = NULL, *nl;
	char cerr[CURL_ERROR_SIZE] = "";
	CURL *h;
	CURLcode cc;
	int rv = 0;

	a->status = 0;
	a->too_big = false;
	bc_buf_init(&a->body, BC_CREDS_MAX_ANSWER);
	if (atomic_load(&f->aborted)) {
		bc_errf(err, errlen, "stopping");
		return BC_ECANCELED;
	}
	h = curl_easy_init();
	if (h == NULL)
		goto nomem;
	for (; headers != NULL && *headers != NULL; headers++) {
		nl = curl_slist_append(hl, *headers);
		if (nl == NULL)
			goto nomem;
		hl = nl;
	}
	/* curl adds "Expect: 100-continue" to POSTs; STS needs none */
	nl = curl_slist_append(hl, "Expect:");
	if (nl == NULL)
		goto nomem;
	hl = nl;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "bucketcache");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, f);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	if (!proxy)
		curl_easy_setopt(h, CURLOPT_PROXY, "");
	if (body != NULL) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	}
	cc = curl_easy_perform(h);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
	} else if (a->too_big) {
		bc_errf(err, errlen, "answer over %d bytes",
		    BC_CREDS_MAX_ANSWER);
		rv = BC_EPROTO;
	} else if (cc == CURLE_ABORTED_BY_CALLBACK) {
		bc_errf(err, errlen, "stopping");
		rv = BC_ECANCELED;
	} else {
		bc_errf(err, errlen, "%s", cerr[0] != '\0' ? cerr :
		    curl_easy_strerror(cc));
		rv = cc == CURLE_OPERATION_TIMEDOUT ? BC_ETIMEDOUT : BC_EIO;
	}
	goto out;
nomem:
	bc_errf(err, errlen, "out of memory");
	rv = BC_ENOMEM;
out:
	if (rv < 0)
		bc_buf_fini(&a->body);
	curl_slist_free_all(hl);
	if (h != NULL)
		curl_easy_cleanup(h);
	return rv;
}

/* http_call up to attempts times while it fails in transport or the
 * answer is a 5xx. */
static int
http_retry(bc_creds_fetcher_t *f, unsigned attempts, const char *method,
    const char *url, const char *const *headers, const char *body,
    long timeout_ms, long connect_ms, bool proxy, answer_t *a, char *err,
    size_t errlen)
{
	int rv = BC_EIO;

	for (unsigned i = 0; i < attempts; i++) {
		rv = http_call(f, method, url, headers, body, timeout_ms,
		    connect_ms, proxy, a, err, errlen);
		if (rv == BC_ECANCELED || rv == BC_ENOMEM)
			return rv;
		if (rv == 0 && a->status < 500)
			return 0;
		if (rv == 0 && i + 1 < attempts)
			bc_buf_fini(&a->body);
		if (i + 1 < attempts)
			BC_DEBUG("credentials: %s %s: %s, trying again", method,
			    url, rv < 0 ? err : "5xx");
	}
	return rv;   /* the last answer (a 5xx) or failure */
}

/* ---- files read at each call --------------------------------------------- */

/* The file's contents, trailing blanks and line ends dropped: 1..max
 * bytes of printable ASCII. Returns a new string, or NULL with err. */
static char *
read_token_file(const char *path, size_t max, const char *what, char *err,
    size_t errlen)
{
	char *buf = malloc(max + 2);
	ssize_t n;
	size_t len = 0;
	int fd;

	if (buf == NULL) {
		bc_errf(err, errlen, "out of memory");
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		bc_errf(err, errlen, "%s %.200s: %s", what, path,
		    strerror(errno));
		free(buf);
		return NULL;
	}
	while (len <= max) {
		n = read(fd, buf + len, max + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > max) {
		bc_errf(err, errlen, "%s %.200s: over %zu bytes", what, path,
		    max);
		goto bad;
	}
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	if (len == 0) {
		bc_errf(err, errlen, "%s %.200s is empty", what, path);
		goto bad;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] < ' ' || buf[i] >= 0x7f) {
			bc_errf(err, errlen, "%s %.200s: not one line of "
			    "printable text", what, path);
			goto bad;
		}
	return buf;
bad:
	memset(buf, 0, len);
	free(buf);
	return NULL;
}

/* ---- imds ---------------------------------------------------------------- */

/* f->imds_token, fetched when missing or about to lapse. */
static int
imds_token(bc_creds_fetcher_t *f, char *err, size_t errlen)
{
	const bc_config_creds_t *cc = f->cc;
	const char *hdrs[] = { "X-aws-ec2-metadata-token-ttl-seconds: "
	    "21600", NULL };
	char url[BC_CREDS_MAX_URL + 64], why[256];
	answer_t a;
	int64_t now = bc_creds_now_ms();
	int rv;

	if (f->imds_token != NULL && now < f->imds_token_until)
		return 0;
	drop_imds_token(f);
	snprintf(url, sizeof(url), "%s/latest/api/token", cc->imds_url);
	rv = http_retry(f, cc->imds_attempts, "PUT", url, hdrs, NULL,
	    (long)cc->imds_timeout_ms, (long)cc->imds_timeout_ms, false, &a,
	    why, sizeof(why));
	if (rv < 0) {
		bc_errf(err, errlen, "instance metadata service %s: token: %s",
		    cc->imds_url, why);
		return rv;
	}
	if (a.status != 200) {
		bc_errf(err, errlen, "instance metadata service %s: token: "
		    "HTTP %ld%s", cc->imds_url, a.status, a.status == 403 ?
		    " (IMDS disabled, or a PUT through a proxy)" : "");
		bc_buf_fini(&a.body);
		return BC_EACCES;
	}
	if (a.body.len == 0 || a.body.len > BC_CREDS_MAX_TOKEN) {
		bc_buf_fini(&a.body);
		goto bad;
	}
	for (size_t i = 0; i < a.body.len; i++)
		if (a.body.data[i] <= ' ' || a.body.data[i] >= 0x7f) {
			bc_buf_fini(&a.body);
			goto bad;
		}
	f->imds_token = bc_buf_steal(&a.body);
	f->imds_token_until = now + (int64_t)IMDS_TOKEN_TTL * 1000 -
	    IMDS_TOKEN_SLACK;
	return 0;
bad:
	bc_errf(err, errlen, "instance metadata service %s: token: not a "
	    "token", cc->imds_url);
	return BC_EPROTO;
}

/* GET path with the token into a (200 only). BC_EAGAIN on a 401 (the
 * token was refused: it is dropped). */
static int
imds_get(bc_creds_fetcher_t *f, const char *path, answer_t *a,
    const char *step, char *err, size_t errlen)
{
	const bc_config_creds_t *cc = f->cc;
	char url[BC_CREDS_MAX_URL + 256], why[256];
	const char *hdrs[2] = { NULL, NULL };
	bc_buf_t th = BC_BUF_INIT;
	int rv;

	snprintf(url, sizeof(url), "%s%s", cc->imds_url, path);
	if (bc_buf_printf(&th, "X-aws-ec2-metadata-token: %s",
	    f->imds_token) < 0) {
		bc_errf(err, errlen, "out of memory");
		return BC_ENOMEM;
	}
	hdrs[0] = bc_buf_str(&th);
	rv = http_retry(f, cc->imds_attempts, "GET", url, hdrs, NULL,
	    (long)cc->imds_timeout_ms, (long)cc->imds_timeout_ms, false, a,
	    why, sizeof(why));
	memset(th.data, 0, th.len);
	bc_buf_fini(&th);
	if (rv < 0) {
		bc_errf(err, errlen, "instance metadata service %s: %s: %s",
		    cc->imds_url, step, why);
		return rv;
	}
	if (a->status == 401) {
		bc_buf_fini(&a->body);
		drop_imds_token(f);
		bc_errf(err, errlen, "instance metadata service %s: %s: the "
		    "token was refused (401)", cc->imds_url, step);
		return BC_EAGAIN;
	}
	if (a->status != 200) {
		bc_errf(err, errlen, "instance metadata service %s: %s: HTTP "
		    "%ld%s", cc->imds_url, step, a->status, a->status == 404 ?
		    " (no IAM role attached to the instance?)" : "");
		bc_buf_fini(&a->body);
		return BC_EACCES;
	}
	return 0;
}

static int
fetch_imds_once(bc_creds_fetcher_t *f, bc_creds_snap_t **out, char *err,
    size_t errlen)
{
	static const char base[] =
	    "/latest/meta-data/iam/security-credentials/";
	char role[BC_CREDS_MAX_ROLE + 1], path[sizeof(base) + sizeof(role)];
	char why[256];
	answer_t a;
	int rv;

	rv = imds_token(f, err, errlen);
	if (rv < 0)
		return rv;
	rv = imds_get(f, base, &a, "role", err, errlen);
	if (rv < 0)
		return rv;
	rv = bc_creds_parse_role(a.body.data, a.body.len, role, sizeof(role),
	    why, sizeof(why));
	bc_buf_fini(&a.body);
	if (rv < 0) {
		bc_errf(err, errlen, "instance metadata service %s: role: %s",
		    f->cc->imds_url, why);
		return rv;
	}
	snprintf(path, sizeof(path), "%s%s", base, role);
	rv = imds_get(f, path, &a, "credentials", err, errlen);
	if (rv < 0)
		return rv;
	rv = bc_creds_parse_json(a.body.data, a.body.len, out, why,
	    sizeof(why));
	memset(a.body.data, 0, a.body.len);
	bc_buf_fini(&a.body);
	if (rv < 0)
		bc_errf(err, errlen, "instance metadata service %s: role %s: "
		    "%s", f->cc->imds_url, role, why);
	return rv;
}

static int
fetch_imds(bc_creds_fetcher_t *f, bc_creds_snap_t **out, char *err,
    size_t errlen)
{
	int rv = fetch_imds_once(f, out, err, errlen);

	if (rv == BC_EAGAIN)   /* a refused token: one more, with a new one */
		rv = fetch_imds_once(f, out, err, errlen);
	return rv == BC_EAGAIN ? BC_EACCES : rv;
}

/* ---- ecs ----------------------------------------------------------------- */

static int
fetch_ecs(bc_creds_fetcher_t *f, bc_creds_snap_t **out, char *err,
    size_t errlen)
{
	const bc_config_creds_t *cc = f->cc;
	const char *hdrs[2] = { NULL, NULL };
	bc_buf_t ah = BC_BUF_INIT;
	char *tok = NULL, why[256];
	answer_t a;
	int rv;

	if (cc->ecs_token_file != NULL) {
		tok = read_token_file(cc->ecs_token_file, BC_CREDS_MAX_TOKEN,
		    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", err, errlen);
		if (tok == NULL)
			return BC_EINVAL;
	}
	if (tok != NULL || cc->ecs_token != NULL) {
		if (bc_buf_printf(&ah, "Authorization: %s", tok != NULL ? tok :
		    cc->ecs_token) < 0) {
			rv = BC_ENOMEM;
			bc_errf(err, errlen, "out of memory");
			goto out;
		}
		hdrs[0] = bc_buf_str(&ah);
	}
	rv = http_retry(f, ECS_ATTEMPTS, "GET", cc->ecs_url, hdrs, NULL,
	    ECS_TIMEOUT_MS, ECS_TIMEOUT_MS, false, &a, why, sizeof(why));
	if (rv < 0) {
		bc_errf(err, errlen, "container credentials %s: %s",
		    cc->ecs_url, why);
		goto out;
	}
	rv = bc_creds_parse_json(a.body.data, a.body.len, out, why,
	    sizeof(why));
	if (a.status != 200) {
		if (rv == 0) {
			bc_creds_snap_unref(*out);
			*out = NULL;
		}
		bc_errf(err, errlen, "container credentials %s: HTTP %ld%s%s",
		    cc->ecs_url, a.status, rv == BC_EACCES ? ": " : "",
		    rv == BC_EACCES ? why : "");
		rv = BC_EACCES;
	} else if (rv < 0) {
		bc_errf(err, errlen, "container credentials %s: %s",
		    cc->ecs_url, why);
	}
	memset(a.body.data, 0, a.body.len);
	bc_buf_fini(&a.body);
out:
	if (ah.data != NULL)
		memset(ah.data, 0, ah.len);
	bc_buf_fini(&ah);
	if (tok != NULL) {
		memset(tok, 0, strlen(tok));
		free(tok);
	}
	return rv;
}

/* ---- web identity (STS) -------------------------------------------------- */

static int
fetch_sts(bc_creds_fetcher_t *f, bc_creds_snap_t **out, char *err,
    size_t errlen)
{
	const bc_config_creds_t *cc = f->cc;
	static const char *const hdrs[] = {
	    "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
	    "Accept: text/xml", NULL };
	bc_buf_t body = BC_BUF_INIT, url = BC_BUF_INIT;
	char name[64], *tok, why[256];
	answer_t a;
	int rv = 0;

	tok = read_token_file(cc->token_file, MAX_WEB_TOKEN,
	    "AWS_WEB_IDENTITY_TOKEN_FILE", err, errlen);
	if (tok == NULL)
		return BC_EINVAL;
	if (cc->session_name != NULL)
		snprintf(name, sizeof(name), "%s", cc->session_name);
	else
		snprintf(name, sizeof(name), "bucketcache-%lld",
		    (long long)(bc_creds_now_ms() / 1000));
	if (bc_buf_puts(&body, "Action=AssumeRoleWithWebIdentity"
	    "&Version=2011-06-15&RoleArn=") < 0 ||
	    bc_creds_form_escape(&body, cc->role_arn) < 0 ||
	    bc_buf_puts(&body, "&RoleSessionName=") < 0 ||
	    bc_creds_form_escape(&body, name) < 0 ||
	    bc_buf_puts(&body, "&WebIdentityToken=") < 0 ||
	    bc_creds_form_escape(&body, tok) < 0 ||
	    bc_buf_printf(&url, "%s/", cc->sts_url) < 0) {
		rv = BC_ENOMEM;
		bc_errf(err, errlen, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < STS_ATTEMPTS; i++) {
		rv = http_retry(f, 1, "POST", bc_buf_str(&url), hdrs,
		    bc_buf_str(&body), STS_TIMEOUT_MS, STS_CONNECT_MS, true,
		    &a, why, sizeof(why));
		if (rv < 0) {
			bc_errf(err, errlen, "STS %s: %s", cc->sts_url, why);
			if (rv == BC_ECANCELED || rv == BC_ENOMEM)
				break;
			continue;
		}
		rv = bc_creds_parse_sts(a.body.data, a.body.len, out, why,
		    sizeof(why));
		if (rv == 0 && a.status != 200) {
			bc_creds_snap_unref(*out);
			*out = NULL;
			rv = BC_EPROTO;
			snprintf(why, sizeof(why), "credentials with HTTP %ld",
			    a.status);
		}
		if (rv < 0)
			bc_errf(err, errlen, "STS %s (role %.200s): HTTP %ld: "
			    "%s", cc->sts_url, cc->role_arn, a.status, why);
		memset(a.body.data, 0, a.body.len);
		bc_buf_fini(&a.body);
		if (rv == 0 || !(a.status >= 500 ||
		    strstr(why, "IDPCommunicationError") != NULL))
			break;
	}
out:
	if (body.data != NULL)
		memset(body.data, 0, body.len);
	bc_buf_fini(&body);
	bc_buf_fini(&url);
	memset(tok, 0, strlen(tok));
	free(tok);
	return rv;
}

int
bc_creds_fetcher_fetch(void *fv, bc_creds_snap_t **out, char *err,
    size_t errlen)
{
	bc_creds_fetcher_t *f = fv;

	*out = NULL;
	switch (f->cc->source) {
	case BC_CREDS_IMDS:
		return fetch_imds(f, out, err, errlen);
	case BC_CREDS_ECS:
		return fetch_ecs(f, out, err, errlen);
	case BC_CREDS_WEB_IDENTITY:
		return fetch_sts(f, out, err, errlen);
	default:
		bc_errf(err, errlen, "%s credentials are not fetched",
		    bc_creds_source_name(f->cc->source));
		return BC_EINVAL;
	}
}
