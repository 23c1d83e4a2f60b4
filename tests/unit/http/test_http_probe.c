/*
 * test_http_probe.c — bc_http_probe_url on --listen as config/ parses it
 * (bc_config_listen_parse: the forms, wildcards as loopback, bad
 * addresses) and bc_http_probe against a one-connection
 * server in a thread: 200 (0), 503, a server that accepts and never
 * answers (the deadline), and a port nobody listens on.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "../bc_test.h"

#include "http/http_probe.h"
#include "util/util_error.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

LTest(probe, url_forms)
{
	static const struct { const char *listen, *url; } ok[] = {
		{ "127.0.0.1:8080", "http://127.0.0.1:8080/h" },
		{ "0.0.0.0:9000",   "http://127.0.0.1:9000/h" },
		{ "*:9000",         "http://127.0.0.1:9000/h" },
		{ ":9000",          "http://127.0.0.1:9000/h" },
		{ "localhost:1",    "http://127.0.0.1:1/h" },
		{ "10.1.2.3:65535", "http://10.1.2.3:65535/h" },
		{ "[::]:8080",      "http://[::1]:8080/h" },
		{ "[]:8080",        "http://[::1]:8080/h" },
		{ "[::1]:8080",     "http://[::1]:8080/h" },
		{ "[fd00::5]:80",   "http://[fd00::5]:80/h" },
	};
	static const char *const bad[] = {
		"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0",
		"127.0.0.1:65536", "127.0.0.1:80x", "127.0.0.1:-1",
		"127.0.0.1: 80", "::1:8080", "[::1]8080", "[::1", "h:+80",
	};
	char url[64], err[128];
	bc_listen_addr_t la;

	for (size_t i = 0; i < N(ok); i++) {
		cr_assert_eq(bc_config_listen_parse(ok[i].listen, &la, err,
		    sizeof(err)), 0, "%s: %s", ok[i].listen, err);
		cr_assert_eq(bc_http_probe_url(&la, "/h", url, sizeof(url)), 0,
		    "%s", ok[i].listen);
		cr_assert_str_eq(url, ok[i].url);
	}
	for (size_t i = 0; i < N(bad); i++) {
		cr_assert_eq(bc_config_listen_parse(bad[i], &la, err,
		    sizeof(err)), BC_EINVAL, "'%s' taken", bad[i]);
		cr_assert_not_null(strstr(err, "not ADDRESS:PORT"), "%s", err);
	}
	cr_assert_eq(bc_config_listen_parse("127.0.0.1:8080", &la, err,
	    sizeof(err)), 0);
	cr_assert_eq(bc_http_probe_url(&la, "/h", url, 20), BC_ERANGE);
}

/* A server for one connection: answers it with `reply` (NULL: reads the
 * request and answers nothing until the client goes). */
typedef struct {
	int         fd;
	const char *reply;
} server_t;

static void *
serve_one(void *arg)
{
	server_t *s = arg;
	char buf[1024];
	int c = accept(s->fd, NULL, NULL);

	if (c < 0)
		return NULL;
	(void)read(c, buf, sizeof(buf));
	if (s->reply != NULL)
		(void)write(c, s->reply, strlen(s->reply));
	else
		while (read(c, buf, sizeof(buf)) > 0)
			;
	close(c);
	return NULL;
}

/* A loopback socket on a free port, listening when listening is true;
 * its "127.0.0.1:PORT" in addr. */
static int
loopback_socket(bool listening, char *addr, size_t len)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (listening)
		cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(addr, len, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
	return fd;
}

/* bc_http_probe on listen as config/ parses it. */
static int
probe_at(const char *listen, long timeout_ms, char *msg, size_t len)
{
	bc_listen_addr_t la;

	cr_assert_eq(bc_config_listen_parse(listen, &la, msg, len), 0, "%s",
	    msg);
	return bc_http_probe(&la, "/_bucketcache/health", timeout_ms, msg,
	    len);
}

static int
probe_against(const char *reply, long timeout_ms, char *msg, size_t len)
{
	server_t s = { -1, reply };
	char addr[32];
	pthread_t t;
	int rv;

	s.fd = loopback_socket(true, addr, sizeof(addr));
	cr_assert_eq(pthread_create(&t, NULL, serve_one, &s), 0);
	rv = probe_at(addr, timeout_ms, msg, len);
	pthread_join(t, NULL);
	close(s.fd);
	return rv;
}

LTest(probe, answers)
{
	char msg[256];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	cr_assert_eq(probe_against("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	    "Connection: close\r\n\r\nok\n", 2000, msg, sizeof(msg)), 0, "%s",
	    msg);
	cr_assert_not_null(strstr(msg, "/_bucketcache/health: 200 ok"), "%s",
	    msg);
	cr_assert_eq(probe_against("HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Length: 9\r\nConnection: close\r\n\r\ndraining\n", 2000,
	    msg, sizeof(msg)), BC_EIO);
	cr_assert_not_null(strstr(msg, ": 503 draining"), "%s", msg);
	/* wedged: accepted, never answered */
	cr_assert_eq(probe_against(NULL, 300, msg, sizeof(msg)), BC_EIO);
	cr_assert_not_null(strstr(msg, "timed out"), "%s", msg);
	curl_global_cleanup();
}

LTest(probe, nobody_there)
{
	char addr[32], msg[256];
	int fd;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	fd = loopback_socket(false, addr, sizeof(addr));   /* bound, refused */
	cr_assert_eq(probe_at(addr, 2000, msg, sizeof(msg)), BC_EIO);
	cr_assert_not_null(strstr(msg, addr), "%s", msg);
	close(fd);
	curl_global_cleanup();
}
