/*
 * http_server.c — the libmicrohttpd front end (see http_server.h).
 *
 * Request life: MHD's URI-log callback allocates the bc_http_req_t with
 * the raw request target; the access handler's first call parses,
 * authenticates and starts the route's handler; later calls pass upload
 * data to handler->body(); the last call (no data) runs handler->finish()
 * until a response is queued; MHD's completion callback runs
 * handler->done() and frees the request. Responses are queued on the
 * second call or later, except errors on requests with a body (the rest
 * of the body is then not read): queuing on the first call would make MHD
 * close every connection.
 *
 * Suspend/resume handshake: r->wait_mu guards r->suspended and
 * r->wake_pending, so a resume that races ahead of a wait is never lost
 * and MHD_resume_connection() is called only on a suspended connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "stats/stats.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_xfer.h"
#include "util/util_error.h"
#include "util/util_log.h"

#define MHD_CONN_MEMORY (32 * 1024)   /* MHD zeroes it per request */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- responses --------------------------------------------------------- */

int
bc_http_respond(bc_http_req_t *r, unsigned int status,
    struct MHD_Response *resp)
{
	enum MHD_Result ok;

	if (resp == NULL)
		return BC_ENOMEM;
	if (MHD_get_response_header(resp, "x-amz-request-id") == NULL)
		MHD_add_response_header(resp, "x-amz-request-id",
		    r->s3.request_id);
	if (MHD_get_response_header(resp, "Server") == NULL)
		MHD_add_response_header(resp, "Server", "bucketcache");
	ok = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ok != MHD_YES)
		return BC_EIO;
	r->status = (int)status;
	return 0;
}

int
bc_http_respond_buf(bc_http_req_t *r, unsigned int status,
    const char *content_type, bc_buf_t *body)
{
	size_t len = body->len;
	char *p = bc_buf_steal(body);
	struct MHD_Response *resp;

	if (p == NULL)
		return BC_ENOMEM;
	resp = MHD_create_response_from_buffer(len, p, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(p);
		return BC_ENOMEM;
	}
	if (content_type != NULL)
		MHD_add_response_header(resp, "Content-Type", content_type);
	r->bytes_out = len;
	return bc_http_respond(r, status, resp);
}

int
bc_http_respond_error(bc_http_req_t *r, bc_s3err_t e, const char *msg)
{
	bc_buf_t body = BC_BUF_INIT;
	const char *resource = r->s3.path != NULL ? r->s3.path : r->raw_uri;
	int rv;

	if (e == BC_S3E_NotModified) {   /* 304 carries no body */
		struct MHD_Response *resp = MHD_create_response_from_buffer(0,
		    (void *)"", MHD_RESPMEM_PERSISTENT);

		return bc_http_respond(r, 304, resp);
	}
	rv = bc_s3err_xml(&body, e, msg, resource, r->s3.request_id);
	if (rv < 0) {
		bc_buf_fini(&body);
		return rv;
	}
	if (bc_s3err_status(e) >= 500)
		BC_DEBUG("%s %s -> %d %s", r->s3.method, r->raw_uri,
		    bc_s3err_status(e), bc_s3err_code(e));
	return bc_http_respond_buf(r, (unsigned)bc_s3err_status(e),
	    "application/xml", &body);
}

/* ---- suspend/resume ---------------------------------------------------- */

void
bc_http_wait(bc_http_req_t *r)
{
	pthread_mutex_lock(&r->wait_mu);
	if (r->wake_pending) {
		r->wake_pending = false;
	} else {
		r->suspended = true;
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&r->wait_mu);
}

void
bc_http_resume(bc_http_req_t *r)
{
	bool resume = false;

	pthread_mutex_lock(&r->wait_mu);
	if (r->suspended) {
		r->suspended = false;
		resume = true;
	} else {
		r->wake_pending = true;
	}
	pthread_mutex_unlock(&r->wait_mu);
	/* Still suspended until this call, so it cannot have completed. */
	if (resume)
		MHD_resume_connection(r->conn);
}

void
bc_http_resume_cb(void *r)
{
	bc_http_resume(r);
}

/* ---- request life ------------------------------------------------------ */

static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	bc_server_t *s = cls;
	bc_http_req_t *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->conn = c;
	r->srv = s;
	r->content_length = UINT64_MAX;
	r->start_ns = now_ns();
	pthread_mutex_init(&r->wait_mu, NULL);
	bc_s3_req_init(&r->s3);
	r->raw_uri = strdup(uri);
	BC_STATS_INC(connections);
	return r;
}

static void
req_free(bc_http_req_t *r)
{
	bc_s3_req_fini(&r->s3);
	free(r->raw_uri);
	pthread_mutex_destroy(&r->wait_mu);
	free(r);
	BC_STATS_DEC(connections);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
    enum MHD_RequestTerminationCode toe)
{
	bc_http_req_t *r = *req_cls;
	bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;

	if (r == NULL)
		return;
	if (r->handler != NULL && r->handler->done != NULL)
		r->handler->done(r, ok);
	if (r->started) {
		bc_stats_request(r->s3.op, r->status > 0 ? (unsigned)r->status :
		    499, r->bytes_in, ok ? r->bytes_out : 0);
		if (r->s3.bucket != NULL && r->s3.bucket[0] != '\0' &&
		    r->s3.op != BC_S3OP_Admin)
			bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_requests, 1);
	}
	BC_DEBUG("%s %s -> %d (%.3f ms)%s", r->s3.method,
	    r->raw_uri != NULL ? r->raw_uri : "?", r->status,
	    (double)(now_ns() - r->start_ns) / 1e6, ok ? "" : " aborted");
	*req_cls = NULL;
	req_free(r);
}

static enum MHD_Result
collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	bc_kvlist_t *h = cls;

	if (bc_kv_add(h, key, value != NULL ? value : "") < 0)
		return MHD_NO;
	return MHD_YES;
}

static bool
client_is_loopback(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;

	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		    in6->sin6_addr.s6_addr[12] == 127);
	}
	return false;
}

/* Parses Content-Length; BC_S3E_NONE when absent (UINT64_MAX) or valid. */
static bc_s3err_t
parse_content_length(bc_http_req_t *r)
{
	const char *v = bc_kv_get(&r->s3.headers, "Content-Length");
	uint64_t n = 0;

	if (v == NULL)
		return BC_S3E_NONE;
	if (*v == '\0')
		return BC_S3E_InvalidArgument;
	for (; *v != '\0'; v++) {
		if (*v < '0' || *v > '9' || n > (UINT64_MAX - 9) / 10)
			return BC_S3E_InvalidArgument;
		n = n * 10 + (uint64_t)(*v - '0');
	}
	r->content_length = n;
	return BC_S3E_NONE;
}

static bool
has_body(const bc_http_req_t *r)
{
	return (r->content_length != UINT64_MAX && r->content_length > 0) ||
	    bc_kv_get(&r->s3.headers, "Transfer-Encoding") != NULL;
}

/* First call: parse, authenticate, authorize, start the handler. Returns
 * the error to answer, or BC_S3E_NONE. */
static bc_s3err_t
begin(bc_server_t *s, bc_http_req_t *r, const char *method)
{
	const bc_config_t *cfg = s->cfg;
	const bc_client_key_t *key;
	bc_s3err_t e;

	r->is_loopback = client_is_loopback(r->conn);
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_header,
	    &r->s3.headers);
	if (r->raw_uri == NULL)
		return BC_S3E_InternalError;
	e = parse_content_length(r);
	if (e != BC_S3E_NONE)
		return e;
	e = bc_s3_req_parse(&r->s3, method, r->raw_uri,
	    cfg->domain[0] != '\0' ? cfg->domain : NULL);
	if (e != BC_S3E_NONE)
		return e;
	if (r->s3.op == BC_S3OP_Admin) {
		r->handler = &bc_handler_admin;
		return r->handler->start(r);
	}
	e = bc_s3_auth_verify(&r->s3, time(NULL), bc_config_secret,
	    (void *)cfg, cfg->anonymous, &r->auth);
	if (e != BC_S3E_NONE) {
		BC_STATS_INC(auth_failures);
		BC_DEBUG("auth %s %s: %s", method, r->raw_uri,
		    bc_s3err_code(e));
		r->pending_msg = r->auth.message;
		return e;
	}
	if (r->auth.kind != BC_S3AUTH_NONE) {
		key = bc_config_key(cfg, r->auth.access_key);
		if (key == NULL || !bc_config_key_allows(key, r->s3.bucket,
		    r->s3.key)) {
			BC_STATS_INC(auth_failures);
			return BC_S3E_AccessDenied;
		}
	}
	if (r->s3.op == BC_S3OP_PutObject && r->content_length == UINT64_MAX)
		return BC_S3E_MissingContentLength;
	r->handler = bc_object_cacheable(r) ? &bc_handler_object : s->backend;
	return r->handler->start(r);
}

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **req_cls)
{
	bc_server_t *s = cls;
	bc_http_req_t *r = *req_cls;
	bc_s3err_t e;

	if (r == NULL)
		return MHD_NO;
	if (!r->started) {
		r->started = true;
		r->pending_err = begin(s, r, method);
		if (r->pending_err != BC_S3E_NONE && has_body(r))
			bc_http_respond_error(r, r->pending_err, r->pending_msg);
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t len = *upload_data_size;

		if (r->pending_err != BC_S3E_NONE || r->status != 0) {
			*upload_data_size = 0;   /* discard */
			if (r->status == 0)
				bc_http_respond_error(r, r->pending_err, r->pending_msg);
			return MHD_YES;
		}
		e = r->handler->body(r, upload_data, &len);
		r->bytes_in += *upload_data_size - len;
		*upload_data_size = len;
		if (e == BC_S3E_SignatureDoesNotMatch)   /* aws-chunked */
			BC_STATS_INC(auth_failures);
		if (e != BC_S3E_NONE) {
			r->pending_err = e;
			*upload_data_size = 0;
			bc_http_respond_error(r, e, NULL);
		}
		return MHD_YES;
	}
	if (r->status != 0)
		return MHD_YES;
	if (r->pending_err != BC_S3E_NONE) {
		bc_http_respond_error(r, r->pending_err, r->pending_msg);
		return MHD_YES;
	}
	e = r->handler->finish(r);
	if (e != BC_S3E_NONE && r->status == 0)
		bc_http_respond_error(r, e, NULL);
	return MHD_YES;
}

static size_t
unescape_nothing(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

/* ---- start/stop -------------------------------------------------------- */

static int
parse_listen(const char *listen, struct sockaddr_storage *ss, char *err,
    size_t errlen)
{
	char host[256];
	const char *colon;
	size_t hl;
	long port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		if (rb == NULL || rb[1] != ':')
			goto bad;
		hl = (size_t)(rb - listen - 1);
		colon = rb + 1;
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, listen + 1, hl);
	} else {
		colon = strrchr(listen, ':');
		if (colon == NULL)
			goto bad;
		hl = (size_t)(colon - listen);
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, listen, hl);
	}
	host[hl] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		goto bad;
	if (hl == 0 || strcmp(host, "*") == 0)
		strcpy(host, "0.0.0.0");
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	{
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
			in->sin_family = AF_INET;
			in->sin_port = htons((uint16_t)port);
			return 0;
		}
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons((uint16_t)port);
			return 0;
		}
	}
bad:
	snprintf(err, errlen, "--listen: '%s' is not ADDRESS:PORT", listen);
	return -1;
}

/* Splits the upstream URL into "scheme://host[:port]" and "host[:port]". */
static int
parse_upstream(bc_server_t *s, const char *url, char *err, size_t errlen)
{
	const char *p = strstr(url, "://");
	const char *end;

	if (p == NULL)
		goto bad;
	p += 3;
	end = strchr(p, '/');
	if (end == NULL)
		end = p + strlen(p);
	if (end == p)
		goto bad;
	s->up_scheme_host = strndup(url, (size_t)(end - url));
	s->up_host = strndup(p, (size_t)(end - p));
	if (s->up_scheme_host == NULL || s->up_host == NULL)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "--upstream: '%s' is not a URL", url);
	return -1;
}

int
bc_server_start(bc_server_t *s, const bc_config_t *cfg, bc_loop_t *loop,
    char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned threads = cfg->threads;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_USE_TURBO;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->loop = loop;
	if (parse_listen(cfg->listen, &ss, err, errlen) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (cfg->upstream_is_file) {
		s->backend = &bc_handler_file;
		if (bc_upstream_file_init(cfg->upstream_dir, err, errlen) < 0)
			return -1;
	} else {
		s->backend = &bc_handler_proxy;
		if (parse_upstream(s, cfg->upstream, err, errlen) < 0)
			return -1;
		s->creds.access_key = cfg->access_key;
		s->creds.secret_key = cfg->secret_key;
		s->creds.session_token = cfg->session_token;
		s->creds.region = cfg->region;
		s->creds.service = "s3";
		s->ep.scheme_host = s->up_scheme_host;
		s->ep.host = s->up_host;
		s->ep.virtual_style = strcmp(cfg->upstream_addressing,
		    "virtual") == 0;
		if (cfg->cache) {
			bc_cache_opts_t co = { cfg, loop, &s->creds,
			    s->up_scheme_host, s->up_host };
			int rv = bc_cache_new(&co, &s->cache);

			if (rv < 0) {
				snprintf(err, errlen, "cache: %s",
				    bc_strerror(rv));
				return -1;
			}
		}
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 1;
	}
	if (bc_log_level >= BC_LOG_DEBUG)
		flags |= MHD_USE_ERROR_LOG;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
	    MHD_OPTION_CONNECTION_TIMEOUT, 300u,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_CONN_MEMORY,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape_nothing, NULL,
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
	    MHD_OPTION_END);
	if (s->mhd == NULL) {
		snprintf(err, errlen, "--listen: cannot serve on %s: %s",
		    cfg->listen, strerror(errno));
		return -1;
	}
	return 0;
}

void
bc_server_stop(bc_server_t *s)
{
	if (s->mhd != NULL) {
		MHD_socket fd = MHD_quiesce_daemon(s->mhd);

		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	}
	/* Cancelling transfers wakes (resumes) every waiting connection;
	 * MHD must not be stopped with suspended ones. */
	if (s->loop != NULL)
		bc_loop_stop(s->loop, bc_xfer_cancel_all, NULL);
	if (s->mhd != NULL)
		MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
	bc_cache_free(s->cache);
	s->cache = NULL;
	free(s->up_scheme_host);
	free(s->up_host);
	s->up_scheme_host = s->up_host = NULL;
}
