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
 * Responses and suspend/resume, which the handlers call, are in
 * http_respond.c.
 *
 * Drain: s->draining is set before the daemon is quiesced, so a request
 * begun on a connection accepted before is refused (503, close) rather
 * than served; s->inflight counts requests from on_uri to their
 * completion, and the last one to end while draining writes s->idle_fd
 * (the flag and the count are sequentially consistent atomics, so either
 * that write happens or bc_server_drain's caller sees 0).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "http/http_authz.h"
#include "http/http_head.h"
#include "http/http_log.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_verdicts.h"
#include "stats/stats.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"
#include "util/util_num.h"

/* stats/ counts ops by index, op 0 the catch-all (stats.h) */
_Static_assert(BC_S3OP_Unknown == 0 && BC_S3OP__COUNT <= BC_STATS_NOPS,
    "S3 ops fit the stats' op table");

#define MHD_CONN_MEMORY (32 * 1024)   /* MHD zeroes it per request */
#define FDS_SPARE       256           /* descriptors kept for the upstream,
					 files and logs */
#define MS_PER_NS       1000000u
#define VERDICTS        4096   /* presigned-URL verdicts kept (at most
				  4096 x 4 KiB keys) */

/*
 * libmicrohttpd before 1.0 (Debian 12 has 0.9.75) cannot be made to refuse
 * bare-LF line ends, folded header lines or a NUL inside the request
 * target: it accepts them silently. Those are checked here from where its
 * parser left the request head (mhd_head_layout_ok); 1.0 refuses them
 * itself at client discipline level 1.
 */
#if MHD_VERSION >= 0x01000000
#define BC_MHD_STRICT 1
#else
#define BC_MHD_STRICT 0
#endif


/* ---- request life ------------------------------------------------------ */

/* The connection's deadline record (NULL when it has none). */
static bc_conn_t *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code)
{
	bc_server_t *s = cls;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_ctx = ci != NULL ?
		    bc_conns_open(&s->conns, ci->connect_fd) : NULL;
	} else {
		bc_conns_close(&s->conns, *socket_ctx);
		*socket_ctx = NULL;
	}
}

/* Called once the request line is in, before MHD parses the query. */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	bc_server_t *s = cls;
	bc_http_req_t *r;

	if (uri == NULL)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->conn = c;
	r->srv = s;
	r->cn = conn_of(c);
	r->content_length = UINT64_MAX;
	r->start_ns = bc_mono_ns();
	pthread_mutex_init(&r->wait_mu, NULL);
	bc_s3_req_init(&r->s3);
	r->raw_uri = strdup(uri);
#if !BC_MHD_STRICT
	/* MHD 0.9.75 parses the query into its per-connection pool next;
	 * when the pool runs out (a few hundred parameters) it neither
	 * answers nor ends the request, and this state leaks. The gateway
	 * parses the query itself from raw_uri (bounded), so MHD gets none:
	 * the query in its buffer, which it owns but no longer reads, is cut
	 * after the '?'. */
	{
		char *q = strchr(uri, '?');

		if (q != NULL)
			q[1] = '\0';
	}
#endif
	bc_conn_request_line(&s->conns, r->cn);
	BC_STATS_INC(connections);
	atomic_fetch_add(&s->inflight, 1);
	return r;
}

static void
req_free(bc_http_req_t *r)
{
	bc_server_t *s = r->srv;

	bc_s3_req_fini(&r->s3);
	free(r->raw_uri);
	pthread_mutex_destroy(&r->wait_mu);
	free(r);
	BC_STATS_DEC(connections);
	if (atomic_fetch_sub(&s->inflight, 1) == 1 &&
	    atomic_load(&s->draining))
		(void)eventfd_write(s->idle_fd, 1);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
    enum MHD_RequestTerminationCode toe)
{
	bc_server_t *s = cls;
	bc_http_req_t *r = *req_cls;
	bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;

	if (r == NULL)
		return;
	if (r->handler != NULL && r->handler->done != NULL)
		r->handler->done(r, ok);
	if (r->started) {
		bc_stats_request(r->s3.op, bc_s3op_name(r->s3.op),
		    r->status > 0 ? (unsigned)r->status : 499, r->bytes_in,
		    ok ? r->bytes_out : 0);
		/* Only authorized requests name a bucket in the stats: a
		 * rejected one may carry any name (an unsigned one counts
		 * when the upstream let it through). */
		if (r->authorized && r->s3.bucket[0] != '\0' &&
		    (!r->upstream_unsigned || (r->status > 0 &&
		    r->status < 400)))
			bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_requests, 1);
	}
	bc_http_log_request(s->access_log, r, ok);
	BC_DEBUG("%s %s -> %d (%.3f ms)%s", r->s3.method,
	    r->raw_uri != NULL ? r->raw_uri : "?", r->status,
	    (double)(bc_mono_ns() - r->start_ns) / 1e6, ok ? "" : " aborted");
	bc_conn_request_done(&s->conns, r->cn);
	*req_cls = NULL;
	req_free(r);
}

/* The header fields as MHD holds them, in arrival order: pointers into
 * its read buffer (valid during the access handler's first call). */
typedef struct fields_s {
	bc_http_field_t *v;
	size_t           n, cap;
	bool             oom;
} fields_t;

static enum MHD_Result
collect_field(void *cls, enum MHD_ValueKind kind, const char *key,
    size_t key_size, const char *value, size_t value_size)
{
	fields_t *h = cls;

	if (h->n == h->cap) {
		size_t cap = h->cap > 0 ? h->cap * 2 : 32;
		bc_http_field_t *v = realloc(h->v, cap * sizeof(*v));

		if (v == NULL) {
			h->oom = true;
			return MHD_NO;
		}
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = (bc_http_field_t){ key, key_size,
	    value != NULL ? value : "", value != NULL ? value_size : 0 };
	return MHD_YES;
}

#if !BC_MHD_STRICT
/*
 * MHD 0.9.75 parses the head in place: each line's CR LF becomes two NUL
 * bytes (a bare LF one), the ':' after a name one NUL, and the request
 * line's separators NULs. So the head was exactly "line CR LF" * n + CR LF,
 * with no folded line, iff the request target runs to one byte before the
 * version, the first field starts two bytes past the version's end, each
 * field's name is followed by NUL and blanks up to its value, and each
 * value by two NULs and then the next field or a final two NULs (the empty
 * line). A folded line moves its field out of that sequence; a bare LF
 * shortens a gap; a NUL in the target ends it early. (The last line cannot
 * be told from a bare-LF empty line before a body that starts with NUL.)
 */
static bool
mhd_head_layout_ok(const char *url, size_t url_len, const char *version,
    const fields_t *h)
{
	size_t vlen = strlen(version);
	const char *p;

	if (version != url + url_len + 1 || vlen == 0)
		return false;
	p = version + vlen;
	for (size_t i = 0; i < h->n; i++) {
		const bc_http_field_t *f = &h->v[i];
		const char *q;

		if (p[0] != '\0' || p[1] != '\0' || f->name != p + 2)
			return false;
		q = f->name + f->name_len;
		if (*q != '\0')
			return false;
		for (q++; q < f->value; q++)
			if (*q != ' ' && *q != '\t')
				return false;
		if (q != f->value)
			return false;
		p = f->value + f->value_len;
	}
	return p[0] == '\0' && p[1] == '\0' && p[2] == '\0' && p[3] == '\0';
}
#endif

/* Framing and syntax checks of the head, before anything reads it; also
 * copies the fields into r->s3.headers. */
static bc_s3err_t
check_head(bc_http_req_t *r, const char *url, const char *version)
{
	fields_t h = { NULL, 0, 0, false };
	size_t ulen = strlen(r->raw_uri);
	const char *why = NULL;
	bc_s3err_t e = BC_S3E_NONE;

	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_field,
	    &h);
	if (h.oom) {
		e = BC_S3E_InternalError;
		goto out;
	}
#if !BC_MHD_STRICT
	if (!mhd_head_layout_ok(url, ulen, version, &h)) {
		why = "bare LF, folded header line or NUL in the request line";
		e = BC_S3E_BadRequest;
		goto out;
	}
#endif
	e = bc_http_head_check(r->raw_uri, ulen, h.v, h.n, &why);
	if (e != BC_S3E_NONE)
		goto out;
	for (size_t i = 0; i < h.n; i++)
		if (bc_kv_addn(&r->s3.headers, h.v[i].name, h.v[i].name_len,
		    h.v[i].value, h.v[i].value_len) < 0) {
			e = BC_S3E_InternalError;
			goto out;
		}
	if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 &&
	    bc_kv_get(&r->s3.headers, "Host") == NULL) {
		why = "an HTTP/1.1 request without Host";   /* RFC 9112 3.2 */
		e = BC_S3E_BadRequest;
	}
out:
	if (e == BC_S3E_BadRequest || e == BC_S3E_NotImplemented) {
		/* the message's end is in doubt: answer, then close */
		r->close_after = true;
		BC_DEBUG("%s: malformed head: %s", r->raw_uri, why);
	}
	free(h.v);
	return e;
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

/* Local: from loopback, and not relayed there by a proxy (a request that
 * names another client is that client's). */
static bool
client_is_local(const bc_http_req_t *r)
{
	static const char *const relayed[] = { "Forwarded",
	    "X-Forwarded-For", "X-Real-IP", NULL };

	if (!client_is_loopback(r->conn))
		return false;
	for (int i = 0; relayed[i] != NULL; i++)
		if (bc_kv_get(&r->s3.headers, relayed[i]) != NULL)
			return false;
	return true;
}

/* Content-Length (syntax already checked); UINT64_MAX when absent. */
static bc_s3err_t
parse_content_length(bc_http_req_t *r)
{
	const char *v = bc_kv_get(&r->s3.headers, "Content-Length");
	uint64_t n = 0;

	if (v == NULL)
		return BC_S3E_NONE;
	if (bc_parse_u64_str(v, 10, UINT64_MAX - 1, &n) < 0)
		return BC_S3E_BadRequest;
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
begin(bc_server_t *s, bc_http_req_t *r, const char *method, const char *url,
    const char *version)
{
	const bc_config_t *cfg = s->cfg;
	const bc_client_key_t *key;
	bool cached;
	bc_s3err_t e;

	if (r->raw_uri == NULL)
		return BC_S3E_InternalError;
	e = check_head(r, url, version);
	if (e != BC_S3E_NONE)
		return e;
	r->is_local = client_is_local(r);
	e = parse_content_length(r);
	if (e != BC_S3E_NONE)
		return e;
	e = bc_s3_req_parse(&r->s3, method, r->raw_uri,
	    cfg->domain[0] != '\0' ? cfg->domain : NULL);
	if (e != BC_S3E_NONE)
		return e;
	/* Draining: probes and stats are answered, the rest is refused
	 * before any work (every answer then closes its connection). */
	if (bc_server_draining(s) && !(r->s3.op == BC_S3OP_Admin &&
	    bc_admin_while_draining(r))) {
		r->close_after = true;
		BC_STATS_INC(drain_refused);
		return BC_S3E_ServiceUnavailable;
	}
	if (r->s3.op == BC_S3OP_Admin) {
		r->handler = &bc_handler_admin;
		return r->handler->start(r);
	}
	/* A request without credentials: with --anonymous it uses the
	 * gateway's; without, it goes upstream unsigned and the upstream
	 * decides, as S3 does for public objects. The file:// store has no
	 * access rules to ask: there it is 403 AccessDenied. */
	e = bc_s3_verdicts_verify(s->verdicts, &r->s3, time(NULL),
	    bc_config_secret, (void *)cfg,
	    cfg->anonymous || !cfg->upstream_is_file, &r->auth,
	    &cached);
	if (cached)
		BC_STATS_INC(auth_cached);
	if (e == BC_S3E_NONE && r->auth.kind == BC_S3AUTH_NONE &&
	    !cfg->anonymous)
		r->upstream_unsigned = true;
	if (e != BC_S3E_NONE) {
		BC_STATS_INC(auth_failures);
		BC_DEBUG("auth %s %s: %s", method, r->raw_uri,
		    bc_s3err_code(e));
		r->pending_msg = r->auth.message;
		return e;
	}
	if (r->auth.kind != BC_S3AUTH_NONE) {
		key = bc_config_key(cfg, r->auth.access_key);
		e = bc_http_authz(key, &r->s3);
		if (e != BC_S3E_NONE) {
			BC_STATS_INC(auth_failures);
			return e;
		}
		r->client_key = key;
	}
	r->authorized = true;
	/* A PUT without a length is 411, as on S3; a chunked one is streamed
	 * on and its upstream decides (S3 answers 411 there too) */
	if (r->s3.op == BC_S3OP_PutObject && !has_body(r) &&
	    r->content_length == UINT64_MAX)
		return BC_S3E_MissingContentLength;
	if (bc_object_cacheable(r))
		r->handler = &bc_handler_object;
	else if (r->s3.op == BC_S3OP_DeleteObjects && r->client_key != NULL &&
	    !cfg->upstream_is_file &&   /* the file origin checks keys */
	    bc_http_authz_limited(r->client_key, r->s3.bucket))
		r->handler = &bc_handler_delete;   /* key by key */
	else if (s->lists != NULL && (r->s3.op == BC_S3OP_ListObjects ||
	    r->s3.op == BC_S3OP_ListObjectsV2))
		r->handler = &bc_handler_list;     /* or the proxy's */
	else
		r->handler = &bc_handler_proxy;
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
		r->pending_err = begin(s, r, method, url, version);
		bc_conn_request_head(&s->conns, r->cn,
		    r->pending_err == BC_S3E_NONE && has_body(r));
		/* An error is answered at once when a body follows (it is
		 * then skipped) or the connection closes after it anyway;
		 * otherwise on the next call, so the connection stays. */
		if (r->pending_err != BC_S3E_NONE && (has_body(r) ||
		    r->close_after))
			bc_http_respond_error(r, r->pending_err, r->pending_msg);
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t len = *upload_data_size;
		bool suspended;

		/* libmicrohttpd 0.9 decodes a chunked upload chunk by chunk
		 * and calls again with the next one even when the handler
		 * just suspended the connection: take nothing then (it keeps
		 * the bytes for after the resume); suspending twice would
		 * lose the connection. */
		pthread_mutex_lock(&r->wait_mu);
		suspended = r->suspended;
		pthread_mutex_unlock(&r->wait_mu);
		if (suspended)
			return MHD_YES;
		if (r->pending_err != BC_S3E_NONE || r->status != 0) {
			bc_conn_body_bytes(&s->conns, r->cn, len);
			*upload_data_size = 0;   /* discard */
			if (r->status == 0)
				bc_http_respond_error(r, r->pending_err, r->pending_msg);
			return MHD_YES;
		}
		/* Again while the handler left bytes and did not suspend (a
		 * wake came before it could wait: it can go on now). MHD
		 * calls a handler that left bytes unread and is not suspended
		 * only when new bytes arrive, which may never happen: its
		 * buffer may be full, or the client done sending. */
		do {
			r->wake_taken = false;
			e = r->handler->body(r, upload_data +
			    (*upload_data_size - len), &len);
		} while (e == BC_S3E_NONE && len > 0 && r->wake_taken &&
		    r->status == 0);
		bc_conn_body_bytes(&s->conns, r->cn, *upload_data_size - len);
		r->bytes_in += *upload_data_size - len;
		*upload_data_size = len;
		if (e == BC_S3E_SignatureDoesNotMatch)   /* aws-chunked */
			BC_STATS_INC(auth_failures);
		if (e != BC_S3E_NONE) {
			r->pending_err = e;
			*upload_data_size = 0;
			bc_http_respond_error(r, e, r->pending_msg);
		}
		return MHD_YES;
	}
	if (!r->body_ended) {
		r->body_ended = true;
		bc_conn_body_end(&s->conns, r->cn);
	}
	if (r->status != 0)
		return MHD_YES;
	if (r->pending_err != BC_S3E_NONE) {
		bc_http_respond_error(r, r->pending_err, r->pending_msg);
		return MHD_YES;
	}
	/* again while it neither answered nor suspended (see above) */
	do {
		r->wake_taken = false;
		e = r->handler->finish(r);
	} while (e == BC_S3E_NONE && r->status == 0 && r->wake_taken);
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

/*
 * The sweeper's wake (http_conns.h, "stalled"): a connection to our own
 * listening socket, closed at once. The listening socket is in every MHD
 * worker's epoll set (level-triggered), so each worker's wait returns and
 * it handles the connections it had already marked ready; one worker
 * accepts the connection and sees it end. Nothing is sent, so no request
 * is logged or counted. Sweeper thread.
 */
static void
wake_workers(void *arg)
{
	bc_server_t *s = arg;
	int fd;

	fd = socket(s->wake_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* on loopback the handshake completes within connect(2) */
	(void)connect(fd, (struct sockaddr *)&s->wake_addr, s->wake_len);
	close(fd);
}

/* The address wake_workers connects to: the daemon's listening address,
 * the wildcard replaced by loopback. Returns 0 or -1. */
static int
wake_init(bc_server_t *s)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd,
	    MHD_DAEMON_INFO_LISTEN_FD);
	struct sockaddr_in *in = (struct sockaddr_in *)&s->wake_addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&s->wake_addr;

	if (di == NULL)
		return -1;
	s->wake_len = sizeof(s->wake_addr);
	if (getsockname(di->listen_fd, (struct sockaddr *)&s->wake_addr,
	    &s->wake_len) < 0)
		return -1;
	if (s->wake_addr.ss_family == AF_INET &&
	    in->sin_addr.s_addr == htonl(INADDR_ANY))
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (s->wake_addr.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
		in6->sin6_addr = in6addr_loopback;
	return 0;
}

/* The connections the process can really hold: raises the soft descriptor
 * limit to the hard one and keeps FDS_SPARE descriptors for the rest. */
static unsigned
connection_limit(unsigned want)
{
	struct rlimit rl;
	rlim_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return want;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > FDS_SPARE +
	    (rlim_t)want)
		return want;
	room = rl.rlim_cur > FDS_SPARE * 2 ? rl.rlim_cur - FDS_SPARE :
	    rl.rlim_cur / 2;
	BC_WARN("--max-connections %u: the descriptor limit (%llu) allows "
	    "%llu", want, (unsigned long long)rl.rlim_cur,
	    (unsigned long long)room);
	return (unsigned)room;
}

int
bc_server_start(bc_server_t *s, const bc_config_t *cfg,
    const bc_server_parts_t *p, char *err, size_t errlen)
{
	const struct sockaddr_storage *ss;
	bc_conns_limits_t limits;
	unsigned threads = cfg->threads;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_USE_TURBO;
	bool conns = false;

	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->idle_fd = -1;
	atomic_init(&s->draining, false);
	atomic_init(&s->inflight, 0);
	s->cfg = cfg;
	s->loop = p->loop;
	s->origin = p->origin;
	s->cache = p->cache;
	s->jobs = p->jobs;
	s->prefetch = p->prefetch;
	s->scale = p->scale;
	s->warm = p->warm;
	s->lists = p->lists;
	ss = &cfg->listen_addr.ss;
	if (ss->ss_family == AF_UNSPEC) {
		snprintf(err, errlen, "--listen: '%.64s' is not an IP address",
		    cfg->listen);
		return -1;
	}
	if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->origin == NULL || s->loop == NULL) {
		snprintf(err, errlen, "the server needs an origin and a loop");
		return -1;
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 1;
	}
	limits.max = connection_limit(cfg->max_connections);
	limits.reserve = limits.max / 16 > 8 ? limits.max / 16 : 8;
	limits.idle_ns = cfg->client_timeout * MS_PER_NS;
	limits.head_ns = cfg->header_timeout * MS_PER_NS;
	limits.body_ns = cfg->body_timeout * MS_PER_NS;
	s->idle_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->idle_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	if (bc_http_log_open(cfg, &s->access_log, err, errlen) < 0)
		goto fail;
	s->verdicts = bc_s3_verdicts_new(VERDICTS);
	if (s->verdicts == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (bc_conns_start(&s->conns, &limits) < 0) {
		snprintf(err, errlen, "cannot start the connection sweeper");
		goto fail;
	}
	conns = true;
	if (bc_log_level >= BC_LOG_DEBUG)
		flags |= MHD_USE_ERROR_LOG;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s,
	    MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
	    MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_LIMIT, limits.max,
	    /* inactivity: seconds, rounded up; 0 turns it off */
	    MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)((cfg->client_timeout + 999) / 1000),
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_CONN_MEMORY,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape_nothing, NULL,
#if BC_MHD_STRICT
	    MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1,
#endif
	    MHD_OPTION_END);
	if (s->mhd == NULL) {
		snprintf(err, errlen, "--listen: cannot serve on %s: %s",
		    cfg->listen, strerror(errno));
		goto fail;
	}
	if (wake_init(s) == 0)
		bc_conns_set_wake(&s->conns, wake_workers, s);
	else
		BC_WARN("no listening address to wake the HTTP workers with");
	return 0;
fail:
	if (conns)
		bc_conns_stop(&s->conns);
	bc_s3_verdicts_free(s->verdicts);
	s->verdicts = NULL;
	bc_http_log_close(s->access_log);
	s->access_log = NULL;
	if (s->idle_fd >= 0)
		close(s->idle_fd);
	s->idle_fd = -1;
	return -1;
}

/*
 * Stops accepting: the daemon no longer polls its listening socket, and
 * the socket is shut down, which on Linux ends its listening (connections
 * waiting in its backlog are reset, new ones refused; MHD does the same
 * at its own stop). MHD asks that the descriptor be closed only after
 * MHD_stop_daemon (a worker thread may still hold it): bc_server_stop
 * closes it.
 */
static void
stop_accepting(bc_server_t *s)
{
	MHD_socket fd;

	if (s->mhd == NULL || s->listen_fd >= 0)
		return;
	bc_conns_set_wake(&s->conns, NULL, NULL);   /* nothing to reach */
	fd = MHD_quiesce_daemon(s->mhd);
	if (fd == MHD_INVALID_SOCKET) {
		BC_WARN("cannot stop accepting connections (quiesce)");
		return;
	}
	if (shutdown(fd, SHUT_RDWR) < 0)
		BC_WARN("shutdown of the listening socket: %s",
		    strerror(errno));
	s->listen_fd = fd;
}

int
bc_server_drain(bc_server_t *s)
{
	if (!atomic_exchange(&s->draining, true)) {
		BC_STATS_INC(draining);
		stop_accepting(s);
	}
	return s->idle_fd;
}

bool
bc_server_draining(const bc_server_t *s)
{
	return atomic_load(&s->draining);
}

uint64_t
bc_server_inflight(const bc_server_t *s)
{
	return atomic_load(&s->inflight);
}

unsigned
bc_server_connections(bc_server_t *s)
{
	return bc_conns_count(&s->conns);
}

/* Loop thread, as the loop stops: ends the origin's exchanges. */
static void
cancel_exchanges(bc_loop_t *l, void *origin)
{
	bc_origin_t *o = origin;

	(void)l;
	o->ops->cancel_all(o);
}

void
bc_server_stop(bc_server_t *s)
{
	stop_accepting(s);
	/* Cancelling transfers wakes (resumes) every waiting connection;
	 * MHD must not be stopped with suspended ones. */
	if (s->loop != NULL)
		bc_loop_stop(s->loop, cancel_exchanges, s->origin);
	if (s->mhd != NULL)
		MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	if (s->idle_fd >= 0)
		close(s->idle_fd);
	s->idle_fd = -1;
	if (atomic_exchange(&s->draining, false))
		BC_STATS_DEC(draining);
	bc_conns_stop(&s->conns);
	bc_s3_verdicts_free(s->verdicts);
	s->verdicts = NULL;
	bc_http_log_close(s->access_log);   /* MHD stopped: no line in flight */
	s->access_log = NULL;
	s->cache = NULL;     /* main's */
	s->jobs = NULL;      /* main's */
	s->prefetch = NULL;
	s->scale = NULL;
	s->warm = NULL;
	s->lists = NULL;
	s->origin = NULL;
}
