/* http_probe.c — GET /_bucketcache/health as a client (see .h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http/http_probe.h"
#include "util/util_error.h"

#define BODY_MAX 128   /* of the answer, kept for msg */

typedef struct {
	char   text[BODY_MAX + 1];
	size_t len;
} body_t;

int
bc_http_probe_url(const char *listen, const char *path, char *url,
    size_t urllen)
{
	const char *host, *port;
	size_t hl;
	bool v6 = false;
	char *end;
	long p;
	int n;

	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		if (rb == NULL || rb[1] != ':')
			return BC_EINVAL;
		host = listen + 1;
		hl = (size_t)(rb - host);
		port = rb + 2;
		v6 = true;
	} else {
		const char *colon = strrchr(listen, ':');

		if (colon == NULL || memchr(listen, ':',
		    (size_t)(colon - listen)) != NULL)
			return BC_EINVAL;   /* IPv6 needs its brackets */
		host = listen;
		hl = (size_t)(colon - listen);
		port = colon + 1;
	}
	if (port[0] < '0' || port[0] > '9')
		return BC_EINVAL;
	p = strtol(port, &end, 10);
	if (*end != '\0' || p < 1 || p > 65535)
		return BC_EINVAL;
	if (v6 && (hl == 0 || (hl == 2 && memcmp(host, "::", 2) == 0)))
		n = snprintf(url, urllen, "http://[::1]:%ld%s", p, path);
	else if (v6)
		n = snprintf(url, urllen, "http://[%.*s]:%ld%s", (int)hl,
		    host, p, path);
	else if (hl == 0 || (hl == 1 && host[0] == '*') ||
	    (hl == 7 && memcmp(host, "0.0.0.0", 7) == 0) ||
	    (hl == 9 && memcmp(host, "localhost", 9) == 0))
		n = snprintf(url, urllen, "http://127.0.0.1:%ld%s", p, path);
	else
		n = snprintf(url, urllen, "http://%.*s:%ld%s", (int)hl, host,
		    p, path);
	if (n < 0 || (size_t)n >= urllen)
		return BC_ERANGE;
	return 0;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	body_t *b = arg;
	size_t n = size * nmemb, room = BODY_MAX - b->len;

	memcpy(b->text + b->len, data, n < room ? n : room);
	b->len += n < room ? n : room;
	return n;
}

int
bc_http_probe(const char *listen, const char *path, long timeout_ms,
    char *msg, size_t msglen)
{
	char url[512];
	char cerr[CURL_ERROR_SIZE] = "";
	body_t body;
	CURL *h = NULL;
	CURLcode cc;
	long status = 0;
	int rv;

	memset(&body, 0, sizeof(body));
	rv = bc_http_probe_url(listen, path, url, sizeof(url));
	if (rv < 0) {
		bc_errf(msg, msglen, "--listen '%.64s' is not ADDRESS:PORT",
		    listen);
		goto fail;
	}
	h = curl_easy_init();
	if (h == NULL) {
		rv = BC_ENOMEM;
		bc_errf(msg, msglen, "%s: out of memory", url);
		goto fail;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");   /* HTTP_PROXY is not ours */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "bucketcache-probe");
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		rv = BC_EIO;
		bc_errf(msg, msglen, "%s: %s", url, cerr[0] != '\0' ? cerr :
		    curl_easy_strerror(cc));
		goto fail;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	body.text[body.len] = '\0';
	body.text[strcspn(body.text, "\r\n")] = '\0';
	for (char *c = body.text; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	bc_errf(msg, msglen, "%s: %ld %s", url, status, body.text);
	rv = status == 200 ? 0 : BC_EIO;
fail:
	if (h != NULL)
		curl_easy_cleanup(h);
	return rv;
}
