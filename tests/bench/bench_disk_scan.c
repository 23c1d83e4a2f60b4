/*
 * bench_disk_scan.c — how fast the disk tier's start-up scan indexes a
 * directory of chunk files (not part of make check).
 *
 *   make tests/bench/bench_disk_scan
 *   tests/bench/bench_disk_scan -n 1000000 [-s BYTES] [-d DIR] [-k] [-x] [-r N]
 *
 * Creates N chunk files (bucket "bench", keys "obj/<i>", one chunk each,
 * -s body bytes, default 512) in a temp directory under DIR (default
 * /tmp) with the tier's own writer (bc_disk_write_tmp and a rename, on two
 * threads), then opens the disk tier on it and times the scan: open()'s
 * return, progress lines, then the time until every chunk was indexed
 * (phase 1: names and sizes; gets are served from the index from then
 * on) and until every header was read (phase 2), with files/s and the
 * process's resident memory (the index). -r N scans N times (reopening).
 * The directory is removed at the end unless -k; -x scans DIR as it is
 * (made by an earlier -k run) without creating anything. The page cache
 * stays warm (dropping it needs a privilege containers rarely grant).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "tier/tier_disk.h"
#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define WRITERS 2

static char      dir[512];
static int       dirfd_;
static uint64_t  nfiles;
static size_t    body_len = 512;
static uint8_t  *body;
static _Atomic uint64_t made;

static double
secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void *
writer(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	char      key[32], tmp[BC_DISK_PATH_MAX], path[BC_DISK_PATH_MAX];

	for (uint64_t i = me; i < nfiles; i += WRITERS) {
		bc_chunk_key_t k = { "bench", key, "\"etag\"", 0 };
		bc_disk_hdr_t  h = { .kind = BC_DISK_CHUNK, .bucket = "bench",
		    .key = key, .etag = "\"etag\"" };
		uint64_t       hash;
		int            rv;

		snprintf(key, sizeof(key), "obj/%" PRIu64, i);
		hash = bc_chunk_key_hash(&k);
		bc_disk_path(tmp, BC_DISK_CHUNK, hash, "bench000", i);
		bc_disk_path(path, BC_DISK_CHUNK, hash, NULL, 0);
		rv = bc_disk_write_tmp(dirfd_, tmp, &h, body, body_len);
		if (rv == 0 && renameat(dirfd_, tmp, dirfd_, path) < 0)
			rv = -errno;
		if (rv < 0) {
			fprintf(stderr, "write %s: %s\n", path,
			    bc_strerror(rv));
			exit(1);
		}
		atomic_fetch_add(&made, 1);
	}
	return NULL;
}

static void
create(void)
{
	pthread_t th[WRITERS];
	uint64_t  t0 = bc_mono_ns(), last = 0;
	struct timespec pause = { 0, 200 * 1000000L };

	body = malloc(body_len > 0 ? body_len : 1);
	for (size_t i = 0; i < body_len; i++)
		body[i] = (uint8_t)(i * 31u);
	mkdirat(dirfd_, "c", 0755);
	mkdirat(dirfd_, "o", 0755);
	for (uintptr_t i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, writer, (void *)i);
	while (atomic_load(&made) < nfiles) {
		nanosleep(&pause, NULL);   /* a progress display only */
		if (atomic_load(&made) - last >= 100000 ||
		    atomic_load(&made) == nfiles) {
			last = atomic_load(&made);
			printf("create: %" PRIu64 " files, %.1f s\n", last,
			    secs(bc_mono_ns() - t0));
			fflush(stdout);
		}
	}
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	printf("created %" PRIu64 " files of %zu body bytes in %.1f s "
	    "(%.0f files/s)\n", nfiles, body_len, secs(bc_mono_ns() - t0),
	    (double)nfiles / secs(bc_mono_ns() - t0));
	free(body);
}

static long
rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char  line[256];
	long  kib = -1;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kib;
}

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

static void
scan(bc_loop_t *loop)
{
	bc_tier_opts_t      o = { .capacity = UINT64_MAX / 2, .loop = loop,
	    .dir = dir };
	bc_tier_t          *t = NULL;
	bc_tier_disk_info_t in;
	struct timespec     pause = { 0, 250 * 1000000L };
	char                err[256];
	long                rss0 = rss_kib();
	uint64_t            t0 = bc_mono_ns(), topen;
	int                 rv;

	rv = bc_tier_disk_open(&o, &t, err, sizeof(err));
	topen = bc_mono_ns() - t0;
	if (rv < 0) {
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	printf("open returned in %.3f ms\n", (double)topen / 1e6);
	for (;;) {
		bc_tier_disk_info(t, &in);
		if (!in.scanning)
			break;
		printf("scan: %s, %" PRIu64 " chunks indexed, %.2f s\n",
		    in.indexed ? "reading headers" : "indexing", in.chunks,
		    secs(bc_mono_ns() - t0));
		fflush(stdout);
		nanosleep(&pause, NULL);   /* a progress display only */
	}
	bc_tier_disk_wait_scan(t);
	bc_tier_disk_info(t, &in);
	printf("indexed %" PRIu64 " chunk files (%" PRIu64 " MiB on disk) in "
	    "%.3f s: %.0f files/s; headers read by %.3f s (%.0f files/s); "
	    "%" PRIu64 " removed; index RSS +%ld MiB\n", in.chunks,
	    in.usage >> 20, secs(in.index_ns),
	    (double)in.chunks / secs(in.index_ns), secs(in.scan_ns),
	    (double)in.chunks / secs(in.scan_ns), in.scan_removed,
	    (rss_kib() - rss0) / 1024);
	bc_tier_disk.close(t);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int
main(int argc, char **argv)
{
	const char    *parent = "/tmp";
	bool           keep = false, existing = false;
	int            repeat = 1, c;
	bc_loop_t     *loop;
	struct statvfs vfs;

	nfiles = 100000;
	while ((c = getopt(argc, argv, "n:s:d:kxr:")) != -1) {
		switch (c) {
		case 'n': nfiles = strtoull(optarg, NULL, 10); break;
		case 's': body_len = strtoull(optarg, NULL, 10); break;
		case 'd': parent = optarg; break;
		case 'k': keep = true; break;
		case 'x': existing = true; break;
		case 'r': repeat = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n files] [-s body bytes] "
			    "[-d dir] [-k] [-x] [-r scans]\n", argv[0]);
			return 2;
		}
	}
	bc_log_level = BC_LOG_WARN;
	if (existing) {
		snprintf(dir, sizeof(dir), "%s", parent);
	} else {
		uint64_t need = nfiles * (bc_disk_blocks(body_len + 64) + 256);

		if (statvfs(parent, &vfs) == 0 &&
		    (uint64_t)vfs.f_bavail * vfs.f_frsize < need * 2) {
			fprintf(stderr, "%s: needs about %" PRIu64 " MiB free\n",
			    parent, need >> 20);
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s/bc_scan_bench.XXXXXX", parent);
		if (mkdtemp(dir) == NULL) {
			perror(dir);
			return 1;
		}
	}
	printf("dir %s\n", dir);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	if (!existing)
		create();
	loop = bc_loop_new(no_xfers);
	if (loop == NULL || bc_loop_start(loop) < 0)
		return 1;
	for (int i = 0; i < repeat; i++)
		scan(loop);
	bc_loop_stop(loop, NULL, NULL);
	bc_loop_free(loop);
	close(dirfd_);
	if (!keep && !existing) {
		uint64_t t0 = bc_mono_ns();

		nftw(dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
		printf("removed %s in %.1f s\n", dir, secs(bc_mono_ns() - t0));
	}
	return 0;
}
