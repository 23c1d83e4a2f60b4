/*
 * fuzz_http_request.c — the request line, headers and body as the gateway
 * parses them: the real server (http/http_server.h), started once in this
 * process the way src/main.c composes the daemon (loop, file origin, the
 * memory cache in front, server), with
 *
 *   --upstream file://ROOT --anonymous --client-key AK:SK
 *   --listen 127.0.0.1:PORT --threads 1 --log-level error
 *
 * where ROOT is a fresh directory holding the bucket "bkt" with the
 * objects "a.txt" and "dir/b.bin", and PORT a free port. Each input is
 * written raw to a new TCP connection, which is then shut for writing and
 * read until the server closes it or sends nothing for READ_IDLE_MS. An
 * input that can change the bucket (it holds "PUT", "POST" or "DELETE")
 * is followed by a reset of ROOT to those two objects and of the cache,
 * so every input meets the same state.
 *
 * MHD 0.9.75 (epoll, edge-triggered) can miss an end of input that
 * arrives together with a request's last bytes, and then keeps the
 * connection until a deadline: so the shutdown waits up to FIRST_BYTE_MS
 * for the answer to begin, and arrives on its own.
 *
 * What is checked is what the sanitizers see, the server's threads
 * included. Nothing here depends on how the server parses: it only
 * drives it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fuzz.h"
#include "config/config.h"
#include "http/http_server.h"
#include "stats/stats.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_xfer.h"
#include "cache/cache.h"
#include "util/util_log.h"

#define INPUT_MAX     16384
#define FIRST_BYTE_MS 10
#define READ_IDLE_MS  2000

static char root[64];
static bc_config_t cfg;
static bc_server_t srv;
static bc_loop_t *loop;
static bc_origin_t *origin;
static bc_cache_t *cache;
static bool started;
static struct sockaddr_in addr;

static void
put_file(const char *rel, const void *p, size_t n)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, p, n) == (ssize_t)n);
	close(fd);
}

static void
make_dir(const char *rel)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* The bucket and its two objects. */
static void
fixture(void)
{
	unsigned char bin[1000];

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 7);
	make_dir("bkt");
	make_dir("bkt/dir");
	put_file("bkt/a.txt", "hello, world\n", 13);
	put_file("bkt/dir/b.bin", bin, sizeof(bin));
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	if (f->level > 0)
		remove(path);   /* the root stays: the server holds its fd */
	return 0;
}

static void
reset(void)
{
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	fixture();
	if (cache != NULL)   /* changed behind the gateway's back */
		bc_cache_invalidate(cache, "bkt", NULL, "");
}

static void
stop(void)
{
	if (started) {
		bc_server_stop(&srv);   /* stops the loop, ending fills */
		bc_cache_free(cache);
		bc_origin_free(origin);
		bc_loop_free(loop);
		bc_config_fini(&cfg);
		curl_global_cleanup();
		started = false;
	}
	if (root[0] != '\0') {
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		rmdir(root);
	}
}

/* A port nobody listens on now (the server binds it just after). */
static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	FUZZ_CHECK(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FUZZ_CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	FUZZ_CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char up[96], listen[32], err[512];
	char *args[] = { (char *)"bucketcache", (char *)"--upstream", up,
	    (char *)"--anonymous", (char *)"--client-key", (char *)"AK:SK",
	    (char *)"--listen", listen, (char *)"--threads", (char *)"1",
	    (char *)"--log-level", (char *)"error", NULL };
	char *env[] = { NULL };
	int port = 0;

	(void)argc;
	(void)argv;
	snprintf(root, sizeof(root), "%s/bc-fuzz-http-XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(root) != NULL);
	atexit(stop);
	fixture();
	snprintf(up, sizeof(up), "file://%s", root);
	/* as src/main.c: curl (and with it OpenSSL) is set up on the main
	 * thread before any worker starts */
	signal(SIGPIPE, SIG_IGN);
	bc_stats_start();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int tries = 0; tries < 5 && !started; tries++) {
		port = free_port();
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		FUZZ_CHECK(bc_config_init(&cfg) == 0);
		if (bc_config_load(&cfg, sizeof(args) / sizeof(*args) - 1,
		    args, env, err, sizeof(err)) < 0 ||
		    bc_config_finish(&cfg, env, err, sizeof(err)) < 0) {
			fprintf(stderr, "fuzz_http_request: %s\n", err);
			abort();
		}
		bc_log_level = cfg.log_level;
		if (loop == NULL) {   /* as main.c composes them */
			bc_cache_opts_t co;

			loop = bc_xfer_loop_new();
			FUZZ_CHECK(loop != NULL && bc_loop_start(loop) == 0);
			FUZZ_CHECK(bc_file_origin_new(root, loop, &origin, err,
			    sizeof(err)) == 0);
			memset(&co, 0, sizeof(co));
			co.cfg = &cfg;
			co.origin = origin;
			co.loop = loop;
			FUZZ_CHECK(bc_cache_new(&co, &cache) == 0);
		}
		if (bc_server_start(&srv, &cfg, &(bc_server_parts_t){ loop,
		    origin, cache, NULL, NULL, NULL, NULL, NULL }, err,
		    sizeof(err)) == 0)
			started = true;
		else
			bc_config_fini(&cfg);
	}
	if (!started) {
		fprintf(stderr, "fuzz_http_request: %s\n", err);
		abort();
	}
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)port);
	return 0;
}

/* connect() to the server, finishing one a signal interrupted (libFuzzer's
 * timer). Returns 0 or -1 with errno set. */
static int
connect_server(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	socklen_t len = sizeof(int);
	int err = 0, rv;

	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
		return 0;
	if (errno != EINTR)
		return -1;
	do {
		rv = poll(&p, 1, READ_IDLE_MS);
	} while (rv < 0 && errno == EINTR);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return -1;
	errno = err;
	return err == 0 ? 0 : -1;
}

static bool
writes(const uint8_t *data, size_t size)
{
	return memmem(data, size, "PUT", 3) != NULL ||
	    memmem(data, size, "POST", 4) != NULL ||
	    memmem(data, size, "DELETE", 6) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned conn_seq;
	struct sockaddr_in src;
	char buf[16384];
	struct pollfd p;
	size_t off = 0;
	int fd;

	if (size > INPUT_MAX)
		return 0;
	if (!started)
		LLVMFuzzerInitialize(NULL, NULL);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(fd >= 0);
	/* The client ends first, so its side waits in TIME_WAIT: each
	 * connection comes from the next of 62500 loopback addresses
	 * (127.1.1.1 up), or a few minutes at this rate would use up the
	 * ephemeral ports of one. */
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f010000u |
	    ((1 + conn_seq / 250 % 250) << 8) | (1 + conn_seq % 250));
	conn_seq++;
	FUZZ_CHECK(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
	if (connect_server(fd) != 0) {
		fprintf(stderr, "fuzz_http_request: connect: %s\n",
		    strerror(errno));
		abort();
	}
	while (off < size) {
		ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;   /* the server closed early: it may */
		off += (size_t)n;
	}
	/* wait (briefly) for the answer to begin, then end the input */
	p.fd = fd;
	p.events = POLLIN;
	(void)poll(&p, 1, FIRST_BYTE_MS);
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n;
		int ready;

		p.revents = 0;
		ready = poll(&p, 1, READ_IDLE_MS);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			break;   /* silent (see the file's comment) or error */
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	close(fd);
	if (writes(data, size))
		reset();
	return 0;
}
