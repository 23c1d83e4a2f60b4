/*
 * upstream_s3.c — the S3 origin's address, credentials and request
 * building (see upstream_s3.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "upstream/upstream_s3.h"
#include "util/util_error.h"

int
bc_s3_origin_init(bc_s3_origin_t *o, const bc_config_t *cfg, char *err,
    size_t errlen)
{
	const char *url = cfg->upstream, *p = strstr(url, "://"), *end;

	memset(o, 0, sizeof(*o));
	if (p == NULL)
		goto bad;
	p += 3;
	end = strchr(p, '/');
	if (end == NULL)
		end = p + strlen(p);
	if (end == p)
		goto bad;
	o->scheme_host = strndup(url, (size_t)(end - url));
	o->host = strndup(p, (size_t)(end - p));
	if (o->scheme_host == NULL || o->host == NULL) {
		bc_s3_origin_fini(o);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	o->ep.scheme_host = o->scheme_host;
	o->ep.host = o->host;
	o->ep.virtual_style = strcmp(cfg->upstream_addressing, "virtual") == 0;
	o->creds.access_key = cfg->access_key;
	o->creds.secret_key = cfg->secret_key;
	o->creds.session_token = cfg->session_token;
	o->creds.region = cfg->region;
	o->creds.service = "s3";
	return 0;
bad:
	snprintf(err, errlen, "--upstream: '%s' is not a URL", url);
	return -1;
}

void
bc_s3_origin_fini(bc_s3_origin_t *o)
{
	free(o->scheme_host);
	free(o->host);
	memset(o, 0, sizeof(*o));
}

int
bc_s3_origin_request(const bc_s3_origin_t *o, const char *method,
    const char *bucket, const char *key, bool bucket_slash,
    const bc_kvlist_t *query, const char *payload_hash, bool unsigned_,
    bc_buf_t *url, bc_kvlist_t *hdrs, bc_sigv4_ctx_t *ctx)
{
	bc_buf_t host = BC_BUF_INIT, path = BC_BUF_INIT;
	int rv;

	rv = bc_upstream_target(&o->ep, bucket, key, bucket_slash, query, url,
	    &host, &path);
	if (rv == 0 && bc_kv_add(hdrs, "Host", bc_buf_str(&host)) < 0)
		rv = BC_ENOMEM;
	if (rv == 0 && unsigned_) {
		if (ctx != NULL)
			memset(ctx, 0, sizeof(*ctx));
	} else if (rv == 0 && bc_sigv4_sign(hdrs, method, bc_buf_str(&path),
	    query, payload_hash, &o->creds, time(NULL), ctx) < 0) {
		rv = BC_ENOMEM;
	}
	bc_buf_fini(&host);
	bc_buf_fini(&path);
	return rv < 0 ? BC_ENOMEM : 0;
}
