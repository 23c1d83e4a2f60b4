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
bc_http_probe_url(const bc_listen_addr_t *la, const char *path, char *url,
    size_t urllen)
{
	int n = snprintf(url, urllen, "http://%s:%u%s", la->url_host,
	    (unsigned)la->port, path);

	return n < 0 || (size_t)n >= urllen ? BC_ERANGE : 0;
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
bc_http_probe(const bc_listen_addr_t *la, const char *path, long timeout_ms,
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
	rv = bc_http_probe_url(la, path, url, sizeof(url));
	if (rv < 0) {
		bc_errf(msg, msglen, "--listen '%.64s': the URL is too long",
		    la->url_host);
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
