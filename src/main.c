/*
 * main.c — the bucketcache daemon, and the one place its parts are
 * composed: options, signals, start/stop order.
 *
 * Start: config (exit 2 on any bad option), curl, the upstream
 * credentials (a fetched source's first key pair, then its refresh
 * thread; exit 1 when none can be had), the loop thread, the
 * origin (S3, or file:// for a local directory), the jobs registry, the
 * cache over the origin (unless --no-cache) with its tiers: memory, and
 * with --disk-dir the disk tier appended to the cache's chain (a missing,
 * non-directory or read-only directory: exit 2; libuv's work pool, which
 * does its I/O, sized to 16 threads unless UV_THREADPOOL_SIZE says
 * otherwise), handed to stats/ for the per-tier stats (and before it the
 * list cache, with --list-ttl or --immutable); the prefetcher; the
 * warm-ups' registry;
 * scale/ (its timer sizes memory with --mem-size auto);
 * then the HTTP front end, handed what it serves. A stop signal (SIGINT,
 * SIGTERM) starts the drain (http_drain.h): the front end stops
 * accepting, /ready answers 503, and main waits until no response is in
 * flight or --drain-timeout passes; a second signal then exits at once
 * (_exit(0), no teardown: the disk tier's files are written under temp
 * names and renamed, so nothing on disk is left half-written under a
 * real name). Then the stop, in reverse: the origin's exchanges are
 * cancelled and the loop joined (the prefetcher's timer with it), the
 * daemon stopped; then the prefetcher, the warm-ups, the tier stats, the
 * cache (its queued tier work runs, then the disk tier closes after its
 * writes), the list cache, the jobs, the origin, the credentials (their
 * thread stopped) and the loop go.
 * Exit status 0 on a stop by signal (drained, cut by --drain-timeout, or
 * a second signal), 1 when start-up fails, 2 on bad options (and a disk
 * directory the tier cannot use).
 *
 * Signals: SIGINT and SIGTERM are blocked before any thread starts, so
 * every thread inherits the mask and only main takes them, in
 * sigsuspend/ppoll; after the drain main unblocks them with a handler
 * that exits at once.
 * --probe[=NAME] starts nothing: it asks a running gateway for
 * /_bucketcache/health (or NAME) (http_probe.h) and exits 0 (200) or 1.
 * `bucketcache warm s3://B/P ...` starts nothing either: it is a client
 * of a running gateway's warm-up endpoint (http_warm_cli.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* ppoll */
#endif
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"   /* autoconf: PACKAGE_VERSION */

#include "config/config.h"
#include "cache/cache.h"
#include "cache/cache_list.h"
#include "http/http_drain.h"
#include "creds/creds.h"
#include "http/http_probe.h"
#include "http/http_server.h"
#include "http/http_warm_cli.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch_jobs.h"
#include "prefetch/prefetch_warm.h"
#include "policy/policy.h"
#include "scale/scale.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "tier/tier_disk.h"
#include "tier/tier_redis.h"
#include "tier/tier_stats.h"
#include "upstream/upstream.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_s3.h"
#include "upstream/upstream_xfer.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

extern char **environ;

/* libuv's pool size with a disk tier, unless UV_THREADPOOL_SIZE is set. */
#define BC_DISK_POOL_THREADS "16"

static volatile sig_atomic_t stop_signal;
/* The Redis tier, whose client the loop's stop_fn frees (the chain closes
 * the tier later, with the cache); NULL: none. */
static bc_tier_t *redis_tier;

static void
on_signal(int sig)
{
	stop_signal = sig;
}

/* After the drain, while the process stops: another signal ends it at
 * once (async-signal-safe: write and _exit only). */
static void
on_signal_exit(int sig)
{
	static const char msg[] =
	    "bucketcache: another stop signal: exiting at once\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(0);
}

static const char *
plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/*
 * Serves until a stop signal, then drains (see the top of this file):
 * returns when the normal stop should run; exits the process (0) at once
 * on a second signal. Runs with SIGINT and SIGTERM blocked; old is the
 * mask to wait with (they unblocked).
 */
static void
serve_until_stopped(bc_server_t *srv, const bc_config_t *cfg,
    const sigset_t *old)
{
	bc_drain_t d;
	struct pollfd pfd;
	uint64_t now, left, n;
	unsigned nconn;
	int sig;

	bc_drain_init(&d, cfg->drain_timeout * 1000000u);
	while (stop_signal == 0)
		sigsuspend(old);
	sig = stop_signal;
	stop_signal = 0;
	if (bc_drain_signal(&d, bc_mono_ns()) == BC_DRAIN_DONE) {
		BC_INFO("signal %d: stopping (no drain: --drain-timeout 0)",
		    sig);
		return;
	}
	pfd.fd = bc_server_drain(srv);
	pfd.events = POLLIN;
	n = bc_server_inflight(srv);
	nconn = bc_server_connections(srv);
	BC_INFO("signal %d: draining: new connections refused; %u "
	    "connection%s open, %llu response%s in flight; up to %.1f s",
	    sig, nconn, plural(nconn), (unsigned long long)n, plural(n),
	    (double)cfg->drain_timeout / 1e3);
	for (;;) {
		now = bc_mono_ns();
		if (bc_drain_check(&d, now, bc_server_inflight(srv)) !=
		    BC_DRAIN_DRAINING)
			break;
		left = bc_drain_left_ns(&d, now);
		{
			struct timespec ts = { (time_t)(left / 1000000000u),
			    (long)(left % 1000000000u) };

			if (ppoll(&pfd, 1, &ts, old) > 0) {
				uint64_t v;

				(void)!read(pfd.fd, &v, sizeof(v));
			}
		}
		if (stop_signal != 0) {
			sig = stop_signal;
			stop_signal = 0;
			(void)bc_drain_signal(&d, bc_mono_ns());
		}
	}
	n = bc_server_inflight(srv);
	switch (d.end) {
	case BC_DRAIN_END_IDLE:
		BC_INFO("drain: done in %.2f s: no response in flight",
		    (double)(d.end_ns - d.start_ns) / 1e9);
		break;
	case BC_DRAIN_END_TIMEOUT:
		BC_WARN("drain: --drain-timeout (%.1f s) passed with %llu "
		    "response%s in flight: cut", (double)cfg->drain_timeout /
		    1e3, (unsigned long long)n, plural(n));
		break;
	case BC_DRAIN_END_SIGNAL:
		BC_WARN("drain: signal %d again after %.2f s: exiting at once, "
		    "%llu response%s in flight cut", sig,
		    (double)(d.end_ns - d.start_ns) / 1e9,
		    (unsigned long long)n, plural(n));
		_exit(0);
	default:
		break;
	}
}

/*
 * Opens the disk tier over cfg's --disk-dir and appends it to the cache's
 * chain, ordered by the memory tier's policy (and the jobs' plans).
 * Responses to disk hits hold the chunk's file open until sent
 * (sendfile); the open-file limit is raised to its hard limit. Returns 0; 2 with
 * the tier's reason on stderr when the directory cannot be used; 1 on
 * another failure.
 */
static int
disk_tier_start(const bc_config_t *cfg, bc_loop_t *loop, bc_cache_t *cache,
    const bc_policy_oracle_t *oracle)
{
	bc_tier_opts_t to;
	bc_tier_t *disk = NULL;
	struct rlimit rl;
	char err[512] = "";
	int rv;

	memset(&to, 0, sizeof(to));
	to.capacity = cfg->disk_size;
	to.policy = bc_policy_find(cfg->policy);   /* checked by config */
	to.oracle = oracle;
	to.loop = loop;
	to.dir = cfg->disk_dir;
	rv = bc_tier_disk_open(&to, &disk, err, sizeof(err));
	if (rv < 0) {
		fprintf(stderr, "bucketcache: %s\n", err[0] != '\0' ? err :
		    bc_strerror(rv));
		return rv == BC_ENOMEM ? 1 : 2;
	}
	rv = bc_tier_chain_add(bc_cache_tiers(cache), disk);
	if (rv < 0) {
		bc_tier_disk.close(disk);
		fprintf(stderr, "bucketcache: disk tier: %s\n",
		    bc_strerror(rv));
		return 1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	BC_INFO("disk tier: %s, %llu MiB", cfg->disk_dir,
	    (unsigned long long)(cfg->disk_size >> 20));
	return 0;
}

/*
 * Opens the Redis tier over cfg's --redis seeds and appends it to the
 * cache's chain (after the disk tier), ordered by the memory tier's
 * policy (and the jobs' plans); --redis-size bounds what this gateway
 * writes. Every seed shares the first URL's user, password and db.
 * Returns 0; 2 with the tier's reason on stderr when the options cannot
 * be used; 1 on another failure.
 */
static int
redis_tier_start(const bc_config_t *cfg, bc_loop_t *loop, bc_cache_t *cache,
    const bc_policy_oracle_t *oracle)
{
	bc_tier_opts_t to;
	bc_tier_redis_opts_t ro;
	bc_tier_t *t = NULL;
	const bc_redis_addr_t *a = &cfg->redis_addrs[0];
	char **seeds;
	char err[512] = "";
	int rv = 1;

	seeds = calloc(cfg->nredis_addrs, sizeof(*seeds));
	if (seeds == NULL)
		goto out;
	for (size_t i = 0; i < cfg->nredis_addrs; i++) {
		const bc_redis_addr_t *s = &cfg->redis_addrs[i];
		size_t n = strlen(s->host) + 16;

		seeds[i] = malloc(n);
		if (seeds[i] == NULL)
			goto out;
		snprintf(seeds[i], n, strchr(s->host, ':') != NULL ?
		    "[%s]:%u" : "%s:%u", s->host, (unsigned)s->port);
	}
	memset(&to, 0, sizeof(to));
	to.capacity = cfg->redis_size;
	to.policy = bc_policy_find(cfg->policy);   /* checked by config */
	to.oracle = oracle;
	to.loop = loop;
	memset(&ro, 0, sizeof(ro));
	ro.seeds = (const char *const *)seeds;
	ro.nseeds = cfg->nredis_addrs;
	ro.user = a->user;
	ro.pass = a->pass;
	ro.db = (int)a->db;
	ro.chunk_size = cfg->chunk_size;
	ro.ttl_ms = cfg->redis_ttl;
	ro.timeout_ms = cfg->redis_timeout;
	ro.connect_timeout_ms = cfg->redis_connect_timeout;
	ro.size_from_server = cfg->redis_size == 0;
	rv = bc_tier_redis_open(&to, &ro, &t, err, sizeof(err));
	if (rv < 0) {
		fprintf(stderr, "bucketcache: %s\n", err[0] != '\0' ? err :
		    bc_strerror(rv));
		rv = rv == BC_ENOMEM ? 1 : 2;
		goto out;
	}
	rv = bc_tier_chain_add(bc_cache_tiers(cache), t);
	if (rv < 0) {
		bc_tier_redis.close(t);
		fprintf(stderr, "bucketcache: redis tier: %s\n",
		    bc_strerror(rv));
		rv = 1;
		goto out;
	}
	redis_tier = t;
	if (bc_stats_set_section("redis", bc_tier_redis_stats_json,
	    bc_tier_redis_stats_prom, t) < 0)
		BC_WARN("redis tier: no room for its stats section");
	if (cfg->redis_size > 0)
		BC_INFO("redis tier: %zu seed(s), first %s, %llu MiB",
		    cfg->nredis_addrs, seeds[0],
		    (unsigned long long)(cfg->redis_size >> 20));
	else
		BC_INFO("redis tier: %zu seed(s), first %s, size from the "
		    "server's maxmemory", cfg->nredis_addrs, seeds[0]);
	rv = 0;
out:
	for (size_t i = 0; seeds != NULL && i < cfg->nredis_addrs; i++)
		free(seeds[i]);
	free(seeds);
	return rv;
}

/* Loop thread, as the loop stops: ends the origin's exchanges and frees
 * the Redis tier's client (its handles must close before the loop's). */
static void
cancel_exchanges(bc_loop_t *l, void *origin)
{
	bc_origin_t *o = origin;

	(void)l;
	if (o != NULL)
		o->ops->cancel_all(o);
	if (redis_tier != NULL)
		bc_tier_redis_stop(redis_tier);
}

int
main(int argc, char **argv)
{
	bc_config_t cfg;
	bc_server_t srv;
	bc_loop_t *loop = NULL;
	bc_origin_t *origin = NULL;
	bc_creds_t *creds = NULL;
	bc_cache_t *cache = NULL;
	bc_jobs_t *jobs = NULL;
	bc_prefetch_t *prefetch = NULL;
	bc_scale_t *scale = NULL;
	bc_warm_t *warm = NULL;
	bc_cache_list_t *lists = NULL;
	bc_server_parts_t parts;
	char err[512] = "";
	struct sigaction sa;
	sigset_t mask, old;
	int rv = 1;

	if (argc > 1 && strcmp(argv[1], "warm") == 0)
		return bc_http_warm_cli(argc - 1, argv + 1);   /* a client */
	if (bc_config_init(&cfg) < 0) {
		fprintf(stderr, "bucketcache: out of memory\n");
		return 1;
	}
	if (bc_config_load(&cfg, argc, argv, environ, err, sizeof(err)) < 0) {
		fprintf(stderr, "bucketcache: %s\n", err);
		bc_config_fini(&cfg);
		return 2;
	}
	if (cfg.help) {
		bc_config_usage(stdout, argv[0]);
		bc_config_fini(&cfg);
		return 0;
	}
	if (cfg.version) {
		printf("bucketcache %s\n", PACKAGE_VERSION);
		bc_config_fini(&cfg);
		return 0;
	}
	if (cfg.probe[0] != '\0') {
		/* The container health check (docker/healthcheck): the
		 * gateway these options (file, environment, flags) configure,
		 * asked on its --listen address. Nothing else is checked or
		 * started. */
		char path[sizeof(BC_PROBE_PREFIX) + sizeof(cfg.probe)];

		snprintf(path, sizeof(path), BC_PROBE_PREFIX "%s", cfg.probe);
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rv = bc_config_listen_parse(cfg.listen, &cfg.listen_addr, err,
		    sizeof(err)) == 0 && bc_http_probe(&cfg.listen_addr, path,
		    BC_PROBE_TIMEOUT_MS, err, sizeof(err)) == 0 ? 0 : 1;
		fprintf(rv == 0 ? stdout : stderr, "bucketcache: %s\n", err);
		curl_global_cleanup();
		bc_config_fini(&cfg);
		return rv;
	}
	if (bc_config_finish(&cfg, environ, err, sizeof(err)) < 0) {
		fprintf(stderr, "bucketcache: %s\n", err);
		bc_config_fini(&cfg);
		return 2;
	}
	bc_log_level = cfg.log_level;
	/* Before any thread starts: every thread inherits the mask, so the
	 * stop signals reach main only, in its waits. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	/* Chunk data of 64 KiB and up is a mapping of its own
	 * (bc_chunk_data_alloc), returned to the system when freed (past
	 * the 16 MiB the next chunks reuse, chunk_pages.h): from the
	 * heap, evictions left holes and RSS ran ~12% above the bytes cached
	 * (tests/bench soak). Other buffers up to a Redis slice's command or
	 * reply (1 MiB and a header) are short-lived: they come from the heap
	 * and are reused, not mapped, faulted in and unmapped each time (that
	 * cost the Redis tier a third of its read speed, bench_redis.sh). A
	 * fixed threshold also keeps glibc from raising it after frees. */
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	signal(SIGPIPE, SIG_IGN);
	bc_stats_start();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* Disk I/O runs on libuv's pool (4 threads by default, shared with
	 * its getaddrinfo and fs calls); the pool reads this once, when the
	 * first work starts it. A value the user set wins. */
	if (cfg.cache && cfg.disk_dir[0] != '\0')
		(void)setenv("UV_THREADPOOL_SIZE", BC_DISK_POOL_THREADS, 0);

	/* upstream credentials: a fetched source's first pair now (a
	 * failure ends the start), then refreshed on a thread of its own */
	if (!cfg.upstream_is_file) {
		if (bc_creds_new(&cfg, &creds, err, sizeof(err)) < 0) {
			fprintf(stderr, "bucketcache: %s\n", err);
			goto out;
		}
		if (creds != NULL && bc_creds_start(creds) < 0) {
			BC_ERROR("cannot start the credentials refresh");
			goto out;
		}
		if (creds != NULL && bc_stats_set_section("credentials",
		    bc_creds_stats_json, bc_creds_stats_prom, creds) < 0)
			BC_WARN("credentials: no room for their stats section");
	}
	loop = bc_xfer_loop_new();
	if (loop == NULL || bc_loop_start(loop) < 0) {
		BC_ERROR("cannot start the loop");
		goto out;
	}
	if ((cfg.upstream_is_file ? bc_file_origin_new(cfg.upstream_dir, loop,
	    &origin, err, sizeof(err)) : bc_s3_origin_new(&cfg, creds, loop,
	    &origin, err, sizeof(err))) < 0) {
		fprintf(stderr, "bucketcache: %s\n", err);
		rv = 2;
		goto out;
	}
	jobs = bc_jobs_new(BC_JOBS_DEFAULT_MAX_JOBS, BC_JOBS_DEFAULT_MAX_BYTES,
	    cfg.nkeys);
	if (jobs == NULL) {
		fprintf(stderr, "bucketcache: out of memory\n");
		goto out;
	}
	if (cfg.cache && (cfg.list_ttl > 0 || cfg.immutable.n > 0)) {
		lists = bc_cache_list_new(&cfg);
		if (lists == NULL) {
			fprintf(stderr, "bucketcache: out of memory\n");
			goto out;
		}
	}
	if (cfg.cache) {
		bc_cache_opts_t co = { &cfg, origin, loop,
		    bc_jobs_oracle(jobs), lists };
		int e = bc_cache_new(&co, &cache);

		if (e < 0) {
			fprintf(stderr, "bucketcache: cache: %s\n",
			    bc_strerror(e));
			goto out;
		}
		if (cfg.disk_dir[0] != '\0') {
			e = disk_tier_start(&cfg, loop, cache,
			    bc_jobs_oracle(jobs));
			if (e != 0) {
				rv = e;
				goto out;
			}
		}
		if (cfg.nredis_addrs > 0) {
			e = redis_tier_start(&cfg, loop, cache,
			    bc_jobs_oracle(jobs));
			if (e != 0) {
				rv = e;
				goto out;
			}
		}
		bc_stats_set_tiers(bc_tier_stats_rows, bc_cache_tiers(cache));
	} else {
		if (cfg.disk_dir[0] != '\0')
			BC_WARN("--disk-dir %s: ignored with --no-cache",
			    cfg.disk_dir);
		if (cfg.nredis_addrs > 0)
			BC_WARN("--redis: ignored with --no-cache");
	}
	if (cache != NULL && cfg.prefetch_concurrency > 0) {
		bc_prefetch_opts_t po = { cache, loop,
		    cfg.prefetch_memory > 0 ? cfg.prefetch_memory :
		    cfg.mem_size / 4, cfg.prefetch_concurrency, 0 };

		prefetch = bc_prefetch_new(&po);
		if (prefetch == NULL) {
			BC_ERROR("cannot start the prefetcher");
			goto out;
		}
	}
	{
		bc_scale_opts_t so = { .cfg = &cfg, .loop = loop,
		    .cache = cache, .prefetch = prefetch };

		scale = bc_scale_new(&so);
		if (scale == NULL) {
			BC_ERROR("cannot start scale/");
			goto out;
		}
	}
	if (cache != NULL) {
		bc_warm_opts_t wo = { cache, origin, loop, cfg.region,
		    cfg.chunk_size, cfg.warm_concurrency };

		warm = bc_warm_new(&wo);
		if (warm == NULL) {
			BC_ERROR("cannot start the warm-ups' registry");
			goto out;
		}
	}
	parts.loop = loop;
	parts.origin = origin;
	parts.cache = cache;
	parts.jobs = jobs;
	parts.prefetch = prefetch;
	parts.scale = scale;
	parts.warm = warm;
	parts.lists = lists;
	if (bc_server_start(&srv, &cfg, &parts, err, sizeof(err)) < 0) {
		fprintf(stderr, "bucketcache: %s\n", err);
		rv = 2;
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	BC_INFO("serving S3 on http://%s, upstream %s", cfg.listen,
	    cfg.upstream);
	serve_until_stopped(&srv, &cfg, &old);
	sa.sa_handler = on_signal_exit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* The server's stop ends the loop: the Redis client goes first (a
	 * request still waiting on it goes to the origin). */
	if (redis_tier != NULL)
		bc_tier_redis_stop(redis_tier);
	bc_server_stop(&srv);
	rv = 0;
out:
	if (loop != NULL)
		bc_loop_stop(loop, cancel_exchanges, origin);
	bc_scale_free(scale);         /* its timer stopped with the loop */
	bc_prefetch_free(prefetch);   /* its timer stopped with the loop */
	bc_warm_free(warm);           /* its timer too; before the cache */
	bc_stats_set_tiers(NULL, NULL);
	bc_stats_set_section("redis", NULL, NULL, NULL);
	bc_cache_free(cache);   /* no fill runs once the loop stopped */
	bc_cache_list_free(lists);    /* after the cache, which drops from it */
	bc_jobs_free(jobs);     /* no request runs once the server stopped */
	bc_origin_free(origin);
	bc_stats_set_section("credentials", NULL, NULL, NULL);
	bc_creds_free(creds);   /* after the origin, which signs with it */
	bc_loop_free(loop);
	curl_global_cleanup();
	bc_config_fini(&cfg);
	return rv;
}
