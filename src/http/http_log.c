/*
 * http_log.c — the access log (http_log.h): a line per request, built in
 * a bounded buffer and written with one write(2) under the log's mutex.
 * The server owns the log; MHD's completion callback calls
 * bc_http_log_request on whichever worker thread ends the request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/http_log.h"
#include "http/http_server.h"
#include "prefetch/prefetch_jobs.h"
#include "s3/s3_hints.h"
#include "stats/stats.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define KEY_MAX   1024   /* bytes of a key kept (S3's longest key) */
#define FIELD_MAX 256    /* bytes of any other string kept */
/* The worst line: every kept byte escaped in 6 (\ufffd), a key and 8
 * other strings, and the numbers and names around them. */
_Static_assert(KEY_MAX * 6 + 8 * FIELD_MAX * 6 + 512 <= BC_HTTP_LOG_LINE_MAX,
    "the longest line fits BC_HTTP_LOG_LINE_MAX");

struct bc_http_log_s {
	pthread_mutex_t mu;
	int             fd;
	bool            own_fd;   /* a file we opened (not stderr) */
};

int
bc_http_log_open(const bc_config_t *cfg, bc_http_log_t **out, char *err,
    size_t errlen)
{
	bc_http_log_t *l;
	int fd = STDERR_FILENO;

	*out = NULL;
	if (strcmp(cfg->access_log, "json") != 0)
		return 0;
	if (cfg->access_log_file[0] != '\0') {
		fd = open(cfg->access_log_file, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC | O_NOCTTY, 0640);
		if (fd < 0) {
			snprintf(err, errlen, "--access-log-file %.200s: %s",
			    cfg->access_log_file, strerror(errno));
			return -1;
		}
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		if (fd != STDERR_FILENO)
			close(fd);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&l->mu, NULL);
	l->fd = fd;
	l->own_fd = fd != STDERR_FILENO;
	*out = l;
	return 0;
}

void
bc_http_log_close(bc_http_log_t *l)
{
	if (l == NULL)
		return;
	if (l->own_fd)
		close(l->fd);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

const char *
bc_http_log_outcome(const char *v)
{
	static const char *const names[] = { "hit", "miss", "partial" };

	for (size_t i = 0; v != NULL && i < sizeof(names) / sizeof(*names);
	    i++)
		if (strcmp(v, names[i]) == 0)
			return names[i];
	return NULL;
}

/* s as a JSON string, cut to max bytes (*cut set when it was), or null. */
static int
put_str(bc_buf_t *out, const char *s, size_t max, bool *cut)
{
	char tmp[KEY_MAX + 1];
	size_t n;

	if (s == NULL)
		return bc_buf_puts(out, "null");
	n = strnlen(s, max + 1);
	if (n > max) {
		n = max;
		*cut = true;
	}
	memcpy(tmp, s, n);   /* a sequence cut short becomes \ufffd */
	tmp[n] = '\0';
	return bc_stats_json_string(out, tmp);
}

int
bc_http_log_format(bc_buf_t *out, const bc_http_log_rec_t *rec)
{
	struct {
		const char *name, *v;
		size_t      max;
	} strs[] = {
		{ "remote", rec->remote, FIELD_MAX },
		{ "method", rec->method, FIELD_MAX },
		{ "op", rec->op, FIELD_MAX },
		{ "bucket", rec->bucket, FIELD_MAX },
		{ "key", rec->key, KEY_MAX },
	};
	char ts[40];
	time_t sec = (time_t)rec->time;
	int ms = (int)((rec->time - (double)sec) * 1000);
	bool cut = false;
	struct tm tm;
	int rv;

	if (ms < 0 || ms > 999)
		ms = 0;
	gmtime_r(&sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	rv = bc_buf_printf(out, "{\"time\":\"%s.%03dZ\"", ts, ms);
	for (size_t i = 0; rv == 0 && i < sizeof(strs) / sizeof(*strs); i++) {
		rv = bc_buf_printf(out, ",\"%s\":", strs[i].name);
		if (rv == 0)
			rv = put_str(out, strs[i].v, strs[i].max, &cut);
	}
	if (rv == 0)
		rv = bc_buf_printf(out, ",\"status\":%d,\"bytes\":%llu,"
		    "\"bytes_in\":%llu,\"duration\":%.6f,\"cache\":",
		    rec->status, (unsigned long long)rec->bytes,
		    (unsigned long long)rec->bytes_in,
		    rec->duration > 0 ? rec->duration : 0.0);
	if (rv == 0)
		rv = put_str(out, rec->cache, FIELD_MAX, &cut);
	if (rv == 0)
		rv = bc_buf_puts(out, ",\"job\":");
	if (rv == 0)
		rv = put_str(out, rec->job, FIELD_MAX, &cut);
	if (rv == 0)
		rv = bc_buf_puts(out, ",\"request_id\":");
	if (rv == 0)
		rv = put_str(out, rec->request_id, FIELD_MAX, &cut);
	if (rv == 0 && rec->aborted)
		rv = bc_buf_puts(out, ",\"aborted\":true");
	if (rv == 0 && cut)
		rv = bc_buf_puts(out, ",\"truncated\":true");
	if (rv == 0)
		rv = bc_buf_puts(out, "}\n");
	return rv;
}

/* The job an object read counts toward, as http_object.c's job_hints
 * names it: its x-bucketcache-job hint when valid and the client may use
 * it, else the access key it was signed with, else "anonymous". NULL for
 * requests that are not object reads through the cache. */
static const char *
job_of(const bc_http_req_t *r)
{
	const char *who = r->client_key != NULL ? r->auth.access_key : NULL;
	const char *h;

	if (r->handler != &bc_handler_object)
		return NULL;
	h = bc_kv_get(&r->s3.headers, BC_S3_HINT_JOB);
	if (h != NULL && bc_s3_hint_job_ok(h, strlen(h)) &&
	    (r->srv->jobs == NULL || bc_jobs_may_use(r->srv->jobs, h, who)))
		return h;
	return r->auth.kind != BC_S3AUTH_NONE ? r->auth.access_key :
	    "anonymous";
}

/* The client's address as text into buf ("" when unknown). */
static void
remote_of(const bc_http_req_t *r, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;

	buf[0] = '\0';
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)
		    sa)->sin_addr, buf, (socklen_t)len);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)
		    (const void *)sa)->sin6_addr, buf, (socklen_t)len);
}

void
bc_http_log_request(bc_http_log_t *l, const bc_http_req_t *r, bool ok)
{
	char remote[INET6_ADDRSTRLEN];
	bc_http_log_rec_t rec;
	struct timespec now;
	bc_buf_t line;
	size_t off = 0;

	if (l == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	remote_of(r, remote, sizeof(remote));
	memset(&rec, 0, sizeof(rec));
	rec.time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
	rec.remote = remote;
	rec.method = r->s3.method;
	rec.op = bc_s3op_name(r->s3.op);
	rec.bucket = r->s3.bucket != NULL ? r->s3.bucket : "";
	rec.key = r->s3.key != NULL ? r->s3.key : "";
	rec.cache = r->cache_outcome;
	rec.job = job_of(r);
	rec.request_id = r->s3.request_id;
	rec.status = r->status > 0 ? r->status : 499;
	rec.bytes = ok ? r->bytes_out : 0;
	rec.bytes_in = r->bytes_in;
	rec.duration = (double)(bc_mono_ns() - r->start_ns) / 1e9;
	rec.aborted = !ok;
	bc_buf_init(&line, BC_HTTP_LOG_LINE_MAX);
	if (bc_http_log_format(&line, &rec) < 0) {
		BC_STATS_INC(access_log_dropped);
		bc_buf_fini(&line);
		return;
	}
	pthread_mutex_lock(&l->mu);
	while (off < line.len) {
		ssize_t n = write(l->fd, line.data + off, line.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	pthread_mutex_unlock(&l->mu);
	if (off < line.len)
		BC_STATS_INC(access_log_dropped);
	else
		BC_STATS_INC(access_log_lines);
	bc_buf_fini(&line);
}
