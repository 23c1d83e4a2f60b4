/*
 * http_file_shim.c — TRANSITIONAL, branch h-file only: bc_handler_file
 * and bc_upstream_file_init/fini over the file origin's relay exchange,
 * so that http_server.c and the fuzz target build and run until the
 * proxy handler relays to any origin. Delete at merge, with the two
 * declarations in upstream_file.h.
 *
 * One process-wide origin (no loop: no push fetches). Handler ops run on
 * MHD workers; the file origin's relay is synchronous, so nothing waits.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http/http_req.h"
#include "http/http_server.h"
#include "upstream/upstream.h"
#include "upstream/upstream_file.h"
#include "util/util_num.h"

static bc_origin_t *file_origin;

int
bc_upstream_file_init(const char *root, char *err, size_t errlen)
{
	bc_origin_t *o;

	if (bc_file_origin_new(root, NULL, &o, err, errlen) < 0)
		return -1;
	bc_origin_free(file_origin);
	file_origin = o;
	return 0;
}

void
bc_upstream_file_fini(void)
{
	bc_origin_free(file_origin);
	file_origin = NULL;
}

static ssize_t
never_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	(void)buf;
	(void)max;
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static bc_s3err_t
shim_start(bc_http_req_t *r)
{
	bc_relay_t rl;
	bc_s3err_t e = BC_S3E_InternalError;

	if (file_origin == NULL)
		return BC_S3E_InternalError;
	memset(&rl, 0, sizeof(rl));
	rl.s3 = &r->s3;
	rl.auth = &r->auth;
	rl.client_key = r->client_key;
	rl.content_length = r->content_length;
	rl.region = r->srv != NULL && r->srv->cfg != NULL ?
	    r->srv->cfg->region : NULL;
	r->hdata = bc_origin_relay(file_origin, &rl, &e);
	return r->hdata != NULL ? BC_S3E_NONE : e;
}

static bc_s3err_t
shim_body(bc_http_req_t *r, const char *data, size_t *len)
{
	bc_s3err_t e = BC_S3E_NONE;
	ssize_t n = bc_exchange_write(r->hdata, data, *len, &e);

	if (n < 0)
		return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
	*len -= (size_t)n;
	return BC_S3E_NONE;
}

static bc_s3err_t
shim_finish(bc_http_req_t *r)
{
	bc_exchange_t *x = r->hdata;
	const bc_kvlist_t *h;
	struct MHD_Response *resp;
	bc_s3err_t e = BC_S3E_NONE;
	uint64_t size = 0, off, len;
	int status, fd;

	if (bc_exchange_write_end(x, &e) < 0)
		return e != BC_S3E_NONE ? e : BC_S3E_InternalError;
	if (bc_exchange_headers(x, &status, &h) < 0)
		return BC_S3E_InternalError;
	(void)bc_u64_parse_str(bc_kv_get(h, "Content-Length"), &size);
	if (strcmp(r->s3.method, "HEAD") == 0) {
		resp = MHD_create_response_from_callback(size, 4096,
		    never_read, NULL, NULL);
	} else if (bc_exchange_body_fd(x, &fd, &off, &len) == 0) {
		resp = MHD_create_response_from_fd_at_offset64(len, fd,
		    (int64_t)off);
		if (resp == NULL)
			close(fd);
		r->bytes_out = len;
	} else {
		char *p = size > 0 ? malloc((size_t)size) : NULL;
		size_t got = 0;
		ssize_t n = 1;

		if (size > 0 && p == NULL)
			return BC_S3E_InternalError;
		while (got < size && n > 0) {
			n = bc_exchange_read(x, p + got, (size_t)size - got);
			if (n > 0)
				got += (size_t)n;
		}
		resp = MHD_create_response_from_buffer(got, p != NULL ? p :
		    (void *)"", p != NULL ? MHD_RESPMEM_MUST_FREE :
		    MHD_RESPMEM_PERSISTENT);
		if (resp == NULL)
			free(p);
		r->bytes_out = got;
	}
	if (resp == NULL)
		return BC_S3E_InternalError;
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].name, "Content-Length") != 0)
			bc_http_add_header(resp, h->v[i].name, h->v[i].value);
	return bc_http_respond(r, (unsigned)status, resp) == 0 ?
	    BC_S3E_NONE : BC_S3E_InternalError;
}

static void
shim_done(bc_http_req_t *r, bool ok)
{
	(void)ok;
	bc_exchange_release(r->hdata);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_file = {
	.name = "file",
	.start = shim_start,
	.body = shim_body,
	.finish = shim_finish,
	.done = shim_done,
};
