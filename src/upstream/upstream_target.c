/* upstream_target.c — upstream URL, Host and signed path (see .h). */
#include <string.h>

#include "s3/s3_sigv4.h"
#include "upstream/upstream_target.h"
#include "util/util_error.h"

int
bc_upstream_target(const bc_upstream_ep_t *ep, const char *bucket,
    const char *key, bool bucket_slash, const bc_kvlist_t *query,
    bc_buf_t *url, bc_buf_t *host, bc_buf_t *path)
{
	bool virtual = ep->virtual_style && bucket[0] != '\0';
	const char *scheme_end = strstr(ep->scheme_host, "://");
	int rv = 0;

	if (scheme_end == NULL)
		return BC_EINVAL;
	if (virtual) {
		rv |= bc_buf_printf(path, "/%s", key);
		rv |= bc_buf_printf(host, "%s.%s", bucket, ep->host);
		rv |= bc_buf_printf(url, "%.*s://%s",
		    (int)(scheme_end - ep->scheme_host), ep->scheme_host,
		    bc_buf_str(host));
	} else {
		if (bucket[0] == '\0')
			rv |= bc_buf_puts(path, "/");
		else if (key[0] == '\0')
			rv |= bc_buf_printf(path, "/%s%s", bucket,
			    bucket_slash ? "/" : "");
		else
			rv |= bc_buf_printf(path, "/%s/%s", bucket, key);
		rv |= bc_buf_puts(host, ep->host);
		rv |= bc_buf_puts(url, ep->scheme_host);
	}
	rv |= bc_sigv4_uri_encode(url, bc_buf_str(path), true);
	if (query != NULL && query->n > 0) {
		rv |= bc_buf_putc(url, '?');
		rv |= bc_sigv4_canonical_query(url, query, NULL);
	}
	return rv < 0 ? BC_ENOMEM : 0;
}
