/*
 * fuzz_server.c — the in-process gateway the TCP fuzz targets drive
 * (fuzz_server.h): its composition, the fixture directory, and one
 * exchange per input.
 *
 * State is the process's: one server, built on the first
 * fuzz_server_start and torn down by an atexit handler. Each try to
 * listen (a free port can be taken before the server binds it) loads its
 * own config; the parts are built with the first and keep reading it
 * (the tries differ only in --listen), so no config is freed under them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
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
#include "fuzz_server.h"
#include "config/config.h"
#include "http/http_server.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch_warm.h"
#include "stats/stats.h"
#include "tier/tier_stats.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_xfer.h"
#include "util/util_log.h"

#define TRIES    5
#define MAX_ARGS 64

static const fuzz_server_opts_t *opts;
static char root[64];
static bc_config_t cfgs[TRIES];
static int ncfgs;
static bc_server_t srv;
static bc_loop_t *loop;
static bc_origin_t *origin;
static bc_cache_t *cache;
static bc_jobs_t *jobs;
static bc_prefetch_t *prefetch;
static bc_scale_t *scale;
static bc_warm_t *warm;
static bool started;
static int port;
static struct sockaddr_in addr;

/* Makes every directory on root/rel's path (not its last name). */
static void
make_dirs(const char *rel)
{
	char path[256];

	FUZZ_CHECK(snprintf(path, sizeof(path), "%s/%s", root, rel) <
	    (int)sizeof(path));
	for (char *s = path + strlen(root) + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
}

static void
put_file(const fuzz_file_t *f)
{
	char path[256];
	unsigned char pattern[4096];
	size_t off = 0;
	int fd;

	make_dirs(f->path);
	snprintf(path, sizeof(path), "%s/%s", root, f->path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0);
	if (f->data != NULL) {
		FUZZ_CHECK(write(fd, f->data, f->len) == (ssize_t)f->len);
	} else {
		for (size_t i = 0; i < sizeof(pattern); i++)
			pattern[i] = (unsigned char)(i * 7);
		while (off < f->len) {
			size_t n = f->len - off < sizeof(pattern) ?
			    f->len - off : sizeof(pattern);

			FUZZ_CHECK(write(fd, pattern, n) == (ssize_t)n);
			off += n;
		}
	}
	close(fd);
}

static void
fixture(void)
{
	for (size_t i = 0; i < opts->nfiles; i++)
		put_file(&opts->files[i]);
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

void
fuzz_server_reset(void)
{
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	fixture();
	if (cache != NULL && opts->bucket != NULL)
		bc_cache_invalidate(cache, opts->bucket, NULL, "");
}

/* As main.c's stop, in its order. */
static void
stop(void)
{
	if (started) {
		bc_server_stop(&srv);   /* stops the loop, ending fills */
		bc_scale_free(scale);
		bc_prefetch_free(prefetch);
		bc_warm_free(warm);
		bc_stats_set_tiers(NULL, NULL);
		bc_cache_free(cache);
		bc_jobs_free(jobs);
		bc_origin_free(origin);
		bc_loop_free(loop);
		curl_global_cleanup();
		started = false;
	}
	for (int i = 0; i < ncfgs; i++)
		bc_config_fini(&cfgs[i]);
	ncfgs = 0;
	if (root[0] != '\0') {
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		rmdir(root);
		root[0] = '\0';
	}
}

/* A port nobody listens on now (the server binds it just after). */
static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), p;

	FUZZ_CHECK(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FUZZ_CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	FUZZ_CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	p = ntohs(a.sin_port);
	close(fd);
	return p;
}

/* The parts main.c builds between the origin and the server, over the
 * first config. */
static void
compose(const bc_config_t *cfg)
{
	char err[512];
	bc_cache_opts_t co;

	loop = bc_xfer_loop_new();
	FUZZ_CHECK(loop != NULL && bc_loop_start(loop) == 0);
	FUZZ_CHECK(bc_file_origin_new(root, loop, &origin, err,
	    sizeof(err)) == 0);
	if (opts->jobs) {
		jobs = bc_jobs_new(BC_JOBS_DEFAULT_MAX_JOBS,
		    BC_JOBS_DEFAULT_MAX_BYTES, cfg->nkeys);
		FUZZ_CHECK(jobs != NULL);
	}
	memset(&co, 0, sizeof(co));
	co.cfg = cfg;
	co.origin = origin;
	co.loop = loop;
	co.oracle = jobs != NULL ? bc_jobs_oracle(jobs) : NULL;
	FUZZ_CHECK(bc_cache_new(&co, &cache) == 0);
	if (!opts->jobs)
		return;
	bc_stats_set_tiers(bc_tier_stats_rows, bc_cache_tiers(cache));
	if (cfg->prefetch_concurrency > 0) {
		bc_prefetch_opts_t po = { cache, loop,
		    cfg->prefetch_memory > 0 ? cfg->prefetch_memory :
		    cfg->mem_size / 4, cfg->prefetch_concurrency, 0 };

		prefetch = bc_prefetch_new(&po);
		FUZZ_CHECK(prefetch != NULL);
	}
	{
		bc_scale_opts_t so = { .cfg = cfg, .loop = loop,
		    .cache = cache, .prefetch = prefetch };

		scale = bc_scale_new(&so);
		FUZZ_CHECK(scale != NULL);
	}
	{
		bc_warm_opts_t wo = { cache, origin, loop, cfg->region,
		    cfg->chunk_size, cfg->warm_concurrency };

		warm = bc_warm_new(&wo);
		FUZZ_CHECK(warm != NULL);
	}
}

void
fuzz_server_start(const fuzz_server_opts_t *o)
{
	char up[96], listen[32], err[512] = "";
	char *args[MAX_ARGS], *env[] = { NULL };
	int argc = 0;

	if (started)
		return;
	opts = o;
	snprintf(root, sizeof(root), "%s/bc-%s-XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", o->name);
	FUZZ_CHECK(mkdtemp(root) != NULL);
	atexit(stop);
	fixture();
	snprintf(up, sizeof(up), "file://%s", root);
	args[argc++] = (char *)"bucketcache";
	args[argc++] = (char *)"--upstream";
	args[argc++] = up;
	args[argc++] = (char *)"--listen";
	args[argc++] = listen;
	for (size_t i = 0; o->args[i] != NULL; i++) {
		FUZZ_CHECK(argc < MAX_ARGS - 1);
		args[argc++] = (char *)o->args[i];
	}
	args[argc] = NULL;
	/* as src/main.c: curl (and with it OpenSSL) is set up on the main
	 * thread before any worker starts */
	signal(SIGPIPE, SIG_IGN);
	bc_stats_start();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	while (ncfgs < TRIES && !started) {
		bc_config_t *cfg = &cfgs[ncfgs++];

		port = free_port();
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		FUZZ_CHECK(bc_config_init(cfg) == 0);
		if (bc_config_load(cfg, argc, args, env, err,
		    sizeof(err)) < 0 ||
		    bc_config_finish(cfg, env, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", o->name, err);
			abort();
		}
		bc_log_level = cfg->log_level;
		if (loop == NULL)
			compose(cfg);
		if (bc_server_start(&srv, cfg, &(bc_server_parts_t){ loop,
		    origin, cache, jobs, prefetch, scale, warm, NULL }, err,
		    sizeof(err)) == 0)
			started = true;
	}
	if (!started) {
		fprintf(stderr, "%s: %s\n", o->name, err);
		abort();
	}
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)port);
}

bc_cache_t *
fuzz_server_cache(void)
{
	return cache;
}

bc_jobs_t *
fuzz_server_jobs(void)
{
	return jobs;
}

bc_scale_t *
fuzz_server_scale(void)
{
	return scale;
}

int
fuzz_server_port(void)
{
	return port;
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
		rv = poll(&p, 1, FUZZ_READ_IDLE_MS);
	} while (rv < 0 && errno == EINTR);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return -1;
	errno = err;
	return err == 0 ? 0 : -1;
}

size_t
fuzz_server_exchange(const void *data, size_t size, int first_byte_ms,
    char *answer, size_t cap)
{
	static unsigned conn_seq;
	const uint8_t *bytes = data;
	struct sockaddr_in src;
	char buf[16384];
	struct pollfd p;
	size_t off = 0, got = 0;
	int fd;

	FUZZ_CHECK(started);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(fd >= 0);
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f010000u |
	    ((1 + conn_seq / 250 % 250) << 8) | (1 + conn_seq % 250));
	conn_seq++;
	FUZZ_CHECK(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
	if (connect_server(fd) != 0) {
		fprintf(stderr, "%s: connect: %s\n", opts->name,
		    strerror(errno));
		abort();
	}
	while (off < size) {
		ssize_t n = send(fd, bytes + off, size - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;   /* the server closed early: it may */
		off += (size_t)n;
	}
	/* wait (a while) for the answer to begin, then end the input */
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	while (poll(&p, 1, first_byte_ms) < 0 && errno == EINTR)
		;
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n;
		int ready;

		p.revents = 0;
		ready = poll(&p, 1, FUZZ_READ_IDLE_MS);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			break;   /* silent (see fuzz_server.h) or error */
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (cap > 0 && got < cap - 1) {
			size_t take = (size_t)n < cap - 1 - got ? (size_t)n :
			    cap - 1 - got;

			memcpy(answer + got, buf, take);
			answer[got + take] = '\0';
		}
		got += (size_t)n;
	}
	if (cap > 0 && got == 0)
		answer[0] = '\0';
	close(fd);
	return got;
}
