/*
 * test_tier_disk.c — what the disk tier (tier/tier_disk.c) does beyond the
 * conformance suite: a restart keeps chunks and metadata (and a hit
 * carries its file for sendfile); damaged files (a flipped byte, a short
 * file, a bad header) are dropped, counted and missed; stale temp files
 * go at the scan; a get while the scan runs reads the file directly, and
 * deletes made meanwhile hold; capacity counts 4 KiB blocks and evicts
 * files; del_object removes files; the files always match the index; a
 * missing, non-directory, read-only or busy DIR fails open with a
 * message. On small tmpfs mounts (skipped where mount is not permitted):
 * the free-space cap (a --disk-size beyond the filesystem bounds the tier
 * by what the filesystem holds: it evicts, stays up and reports the cap;
 * others taking space lower it, an ENOSPC they cause evicts, freed space
 * lifts it, by hand and by the timer); an ENOSPC eviction cannot help
 * (nothing to evict, inodes out) marks the tier down.
 *
 * Each test has its own temp directory (removed after) and loop. The
 * scan is held where a test needs it running by FIFOs named like chunk
 * files: each scan thread blocks opening one until the test opens it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "tier/tier_disk.h"
#include "tier/tier_disk_int.h"
#include "tier/tier_stats.h"
#include "tier/tier_chain.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

#define STAT(t, f) atomic_load(&(t)->stats.f)

static const bc_policy_ctx_t demand = { 1000, "job", "bkt", false };

/* ---- fixture ------------------------------------------------------------ */

typedef struct fix_s {
	bc_loop_t *loop;
	char       dir[64];
	bool       mounted;
} fix_t;

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

/* What a test made, for the suite's fini to remove when an assertion
 * ended the test before its teardown. */
static char left_dir[64];
static bool left_mounted;

static void
setup(fix_t *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/bc_disk_test.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	memcpy(left_dir, f->dir, sizeof(left_dir));
	f->loop = bc_loop_new(no_xfers);
	cr_assert_not_null(f->loop);
	cr_assert_eq(bc_loop_start(f->loop), 0);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void
remove_dir(const char *dir, bool mounted)
{
	if (mounted)
		umount2(dir, MNT_DETACH);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
teardown(fix_t *f)
{
	bc_loop_stop(f->loop, NULL, NULL);
	bc_loop_free(f->loop);
	remove_dir(f->dir, f->mounted);
	left_dir[0] = '\0';
	left_mounted = false;
}

static void
leftovers(void)
{
	if (left_dir[0] != '\0')
		remove_dir(left_dir, left_mounted);
}

TestSuite(disk, .fini = leftovers);

static bc_tier_t *
open_cap(fix_t *f, uint64_t cap)
{
	bc_tier_opts_t o = { .capacity = cap, .loop = f->loop, .dir = f->dir };
	bc_tier_t     *t = NULL;
	char           err[256] = "";

	cr_assert_eq(bc_tier_disk_open(&o, &t, err, sizeof(err)), 0, "%s",
	    err);
	return t;
}

static bc_tier_t *
open_scanned(fix_t *f, uint64_t cap)
{
	bc_tier_t *t = open_cap(f, cap);

	bc_tier_disk_wait_scan(t);
	return t;
}

static bc_tier_disk_info_t
info(bc_tier_t *t)
{
	bc_tier_disk_info_t i;

	bc_tier_disk_info(t, &i);
	return i;
}

/* ---- chunks ------------------------------------------------------------- */

static uint8_t
byte_of(const char *key, uint32_t index, size_t i)
{
	unsigned s = index * 131u + (unsigned)i * 7u;

	for (; *key != '\0'; key++)
		s = s * 31u + (unsigned char)*key;
	return (uint8_t)s;
}

static bc_chunk_t *
mk(const char *key, const char *etag, uint32_t index, size_t len)
{
	bc_chunk_key_t k = { "bkt", key, etag, index };
	uint8_t       *d = malloc(len > 0 ? len : 1);
	bc_chunk_t    *c;

	cr_assert_not_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = byte_of(key, index, i);
	c = bc_chunk_new(&k, d, len);
	cr_assert_not_null(c);
	return c;
}

static void
put(bc_tier_t *t, const char *key, const char *etag, uint32_t index,
    size_t len)
{
	bc_chunk_t *c = mk(key, etag, index, len);

	cr_assert_eq(bc_tier_disk.put(t, c, &demand), 0, "put %s", key);
	bc_chunk_unref(c);
}

static bool
intact(const bc_chunk_t *c, const char *key, uint32_t index, size_t len)
{
	if (c->len != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (c->data[i] != byte_of(key, index, i))
			return false;
	return true;
}

struct wait {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
	int             status;
	bc_chunk_t     *c;
	char            blob[256];
	size_t          len;
};

static void
on_get(bc_tier_get_t *req, int status, bc_chunk_t *c)
{
	struct wait *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->status = status;
	w->c = c;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
await(struct wait *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

/* The tier's chunk (a reference) or NULL for a miss; fails on errors. */
static bc_chunk_t *
get(bc_tier_t *t, const char *key, const char *etag, uint32_t index)
{
	bc_chunk_key_t k = { "bkt", key, etag, index };
	struct wait    w = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, 0, NULL, "", 0 };
	bc_tier_get_t  req = { .data = &w };
	int            rv = bc_tier_disk.get(t, &req, &k, &demand, on_get);

	if (rv == BC_ENOENT)
		return NULL;
	cr_assert_eq(rv, 0, "get: %s", bc_strerror(rv));
	await(&w);
	cr_assert(w.status == 0 || w.status == BC_ENOENT, "get: %s",
	    bc_strerror(w.status));
	return w.c;
}

static bool
has(bc_tier_t *t, const char *key, const char *etag, uint32_t index)
{
	bc_chunk_t *c = get(t, key, etag, index);

	bc_chunk_unref(c);
	return c != NULL;
}

static void
on_meta(bc_tier_meta_get_t *req, int status, const void *blob, size_t len)
{
	struct wait *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->status = status;
	if (status == 0) {
		cr_assert_lt(len, sizeof(w->blob));
		memcpy(w->blob, blob, len);
		w->blob[len] = '\0';
		w->len = len;
	}
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* (bkt, key)'s metadata as a string in out, or false for none. */
static bool
meta(bc_tier_t *t, const char *key, char *out)
{
	struct wait        w = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, 0, NULL, "", 0 };
	bc_tier_meta_get_t req = { .data = &w };
	int rv = bc_tier_disk.meta_get(t, &req, "bkt", key, on_meta);

	if (rv == BC_ENOENT)
		return false;
	cr_assert_eq(rv, 0);
	await(&w);
	cr_assert(w.status == 0 || w.status == BC_ENOENT);
	if (w.status == 0)
		strcpy(out, w.blob);
	return w.status == 0;
}

static void
meta_put(bc_tier_t *t, const char *key, const char *blob)
{
	cr_assert_eq(bc_tier_disk.meta_put(t, "bkt", key, blob, strlen(blob)),
	    0);
}

/* ---- files -------------------------------------------------------------- */

/* DIR/<path of (kind, hash)> into buf. */
static void
file_of(const fix_t *f, uint8_t kind, uint64_t hash, char *buf, size_t n)
{
	char rel[BC_DISK_PATH_MAX];

	bc_disk_path(rel, kind, hash, NULL, 0);
	snprintf(buf, n, "%s/%s", f->dir, rel);
}

static void
chunk_file(const fix_t *f, const char *key, const char *etag,
    uint32_t index, char *buf, size_t n)
{
	file_of(f, BC_DISK_CHUNK, bc_chunk_key_hash(&(bc_chunk_key_t){ "bkt",
	    key, etag, index }), buf, n);
}

static size_t counted;

static int
count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)st;
	(void)ftw;
	if (flag == FTW_F)
		counted++;
	return 0;
}

/* Files under DIR/<sub> ("c" or "o"). */
static size_t
files_in(const fix_t *f, const char *sub)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", f->dir, sub);
	counted = 0;
	nftw(path, count_one, 16, FTW_PHYS);
	return counted;
}

static bool
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Holds (kind, hash)'s stripe lock: the tier's writes and unlinks of that
 * path wait at it, so they run in whatever order the pool picks. */
static pthread_mutex_t *
stripe_of(bc_tier_t *t, uint64_t hash)
{
	bc_disk_t *d = t->priv;

	return &d->stripes[hash % BC_DISK_STRIPES];
}

/* ---- restart ------------------------------------------------------------ */

LTest(disk, a_restart_keeps_chunks_and_metadata)
{
	fix_t               f;
	bc_tier_t          *t;
	bc_chunk_t         *c;
	bc_tier_disk_info_t before, after;
	uint8_t            *back;
	char                m[256];

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "a", "\"1\"", 0, 1000);
	put(t, "a", "\"1\"", 1, 300 * KiB);
	put(t, "empty", "\"2\"", 0, 0);
	meta_put(t, "a", "size=301000;etag=\"1\"");
	meta_put(t, "empty", "size=0");
	/* served from the pending writes too */
	cr_assert(has(t, "a", "\"1\"", 1));
	cr_assert(meta(t, "a", m));
	cr_assert_str_eq(m, "size=301000;etag=\"1\"");
	meta_put(t, "a", "size=301000;etag=\"1\";v2");
	bc_tier_disk_flush(t);
	before = info(t);
	cr_assert_eq(before.chunks, 3);
	cr_assert_eq(before.metas, 2);
	cr_assert_eq(files_in(&f, "c"), 3);
	cr_assert_eq(files_in(&f, "o"), 2);
	bc_tier_disk.close(t);

	t = open_scanned(&f, 64 * MiB);
	after = info(t);
	cr_assert_eq(after.chunks, 3);
	cr_assert_eq(after.metas, 2);
	cr_assert_eq(after.usage, before.usage, "the same files, counted alike");
	cr_assert_eq(after.scan_files, 5);
	c = get(t, "a", "\"1\"", 1);
	cr_assert_not_null(c);
	cr_assert(intact(c, "a", 1, 300 * KiB));
	/* the file travels with the chunk, for sendfile */
	cr_assert_geq(c->fd, 0);
	back = malloc(c->len);
	cr_assert_eq(pread(c->fd, back, c->len, (off_t)c->fd_off),
	    (ssize_t)c->len);
	cr_assert_eq(memcmp(back, c->data, c->len), 0);
	free(back);
	bc_chunk_unref(c);
	c = get(t, "empty", "\"2\"", 0);
	cr_assert_not_null(c);
	cr_assert_eq(c->len, 0);
	bc_chunk_unref(c);
	cr_assert(has(t, "a", "\"1\"", 0));
	cr_assert_not(has(t, "a", "\"other\"", 0), "another ETag misses");
	cr_assert(meta(t, "a", m));
	cr_assert_str_eq(m, "size=301000;etag=\"1\";v2", "the last meta_put");
	cr_assert(meta(t, "empty", m));
	cr_assert_str_eq(m, "size=0");
	cr_assert_not(meta(t, "nope", m));
	cr_assert_eq(STAT(t, hits), 3);
	cr_assert_eq(STAT(t, corrupt), 0);
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- damaged files ------------------------------------------------------- */

static void
flip_byte(const char *path, off_t at)
{
	int     fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	cr_assert_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

LTest(disk, damaged_files_are_dropped_counted_and_missed)
{
	fix_t      f;
	bc_tier_t *t;
	char       p0[256], p1[256], p2[256], pm[256], m[256];
	struct stat st;

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "k", "\"e\"", 0, 50 * KiB);
	put(t, "k", "\"e\"", 1, 50 * KiB);
	put(t, "k", "\"e\"", 2, 50 * KiB);
	meta_put(t, "k", "meta");
	bc_tier_disk_flush(t);
	chunk_file(&f, "k", "\"e\"", 0, p0, sizeof(p0));
	chunk_file(&f, "k", "\"e\"", 1, p1, sizeof(p1));
	chunk_file(&f, "k", "\"e\"", 2, p2, sizeof(p2));
	file_of(&f, BC_DISK_META, bc_disk_obj_hash("bkt", "k"), pm, sizeof(pm));
	/* a flipped body byte */
	cr_assert_eq(stat(p0, &st), 0);
	flip_byte(p0, st.st_size - 100);
	cr_assert_not(has(t, "k", "\"e\"", 0), "never served");
	cr_assert_eq(STAT(t, corrupt), 1);
	cr_assert_not(exists(p0), "removed");
	cr_assert_eq(info(t).chunks, 2, "and out of the index");
	/* a truncated (torn) file */
	cr_assert_eq(truncate(p1, 20 * KiB), 0);
	cr_assert_not(has(t, "k", "\"e\"", 1));
	cr_assert_eq(STAT(t, corrupt), 2);
	cr_assert_not(exists(p1));
	/* damaged metadata */
	flip_byte(pm, 40);
	cr_assert_not(meta(t, "k", m));
	cr_assert_eq(STAT(t, corrupt), 3);
	cr_assert_not(exists(pm));
	/* a file gone behind the tier's back: a miss, not corruption */
	cr_assert_eq(unlink(p2), 0);
	cr_assert_not(has(t, "k", "\"e\"", 2));
	cr_assert_eq(STAT(t, corrupt), 3);
	cr_assert_eq(info(t).chunks, 0);
	cr_assert_eq(info(t).usage, 0, "nothing left is counted");
	cr_assert_eq(STAT(t, misses), 3);
	cr_assert_eq(STAT(t, errors), 0);
	/* a refill is written and served again */
	put(t, "k", "\"e\"", 0, 50 * KiB);
	bc_tier_disk_flush(t);
	cr_assert(has(t, "k", "\"e\"", 0));
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- open_file: hits sent from their files ------------------------------- */

struct fwait {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
	int             status;
};

static void
on_file(bc_tier_file_t *req, int status)
{
	struct fwait *w = req->data;

	pthread_mutex_lock(&w->mu);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* open_file of (key, etag, index): its status (0 with req's answer; 1
 * when it answered at once is returned as 1); *async says which. */
static int
open_file(bc_tier_t *t, const char *key, const char *etag, uint32_t index,
    bc_tier_file_t *req, bool *async)
{
	bc_chunk_key_t k = { "bkt", key, etag, index };
	struct fwait   w = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, false, 0 };
	int            rv;

	memset(req, 0, sizeof(*req));
	req->data = &w;
	rv = bc_tier_disk.open_file(t, req, &k, &demand, on_file);
	*async = rv == 0;
	if (rv != 0)
		return rv;
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	return w.status;
}

/* Whether req's file holds chunk (key, index) of len bytes; closes it. */
static bool
file_intact(bc_tier_file_t *req, const char *key, uint32_t index, size_t len)
{
	uint8_t *buf = malloc(len + 1);
	bool     ok;

	cr_assert_not_null(buf);
	ok = req->fd >= 0 && req->len == len &&
	    pread(req->fd, buf, len + 1, (off_t)req->off) == (ssize_t)len;
	for (size_t i = 0; ok && i < len; i++)
		ok = buf[i] == byte_of(key, index, i);
	free(buf);
	if (req->fd >= 0)
		close(req->fd);
	req->fd = -1;
	return ok;
}

/* Waits until the coarse clock file times come from has passed path's
 * mtime, so that a write now gives it another one. */
static void
past_mtime(const char *path)
{
	struct stat     st;
	struct timespec now;

	cr_assert_eq(stat(path, &st), 0);
	do {
		struct timespec d = { 0, 1000000 };

		nanosleep(&d, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
	} while (now.tv_sec < st.st_mtim.tv_sec ||
	    (now.tv_sec == st.st_mtim.tv_sec &&
	    now.tv_nsec <= st.st_mtim.tv_nsec));
}

LTest(disk, open_file_checks_once_then_sends_unchanged_files)
{
	fix_t          f;
	bc_tier_t     *t;
	bc_tier_file_t req;
	char           p0[256], p1[256];
	struct stat    st;
	bool           async;

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "k", "\"e\"", 0, 50 * KiB);
	put(t, "k", "\"e\"", 1, 70 * KiB);
	bc_tier_disk_flush(t);
	chunk_file(&f, "k", "\"e\"", 0, p0, sizeof(p0));
	chunk_file(&f, "k", "\"e\"", 1, p1, sizeof(p1));
	/* the first open checks the whole file, on the work pool */
	cr_assert_eq(open_file(t, "k", "\"e\"", 0, &req, &async), 0);
	cr_assert(async, "a file not checked yet is read whole first");
	cr_assert(file_intact(&req, "k", 0, 50 * KiB));
	/* then it is opened at once, without reading it */
	cr_assert_eq(open_file(t, "k", "\"e\"", 0, &req, &async), 1);
	cr_assert_not(async);
	cr_assert(file_intact(&req, "k", 0, 50 * KiB));
	cr_assert_eq(STAT(t, hits), 2);
	/* a get checks a file whole too: open_file trusts it after */
	cr_assert(has(t, "k", "\"e\"", 1));
	cr_assert_eq(open_file(t, "k", "\"e\"", 1, &req, &async), 1);
	cr_assert(file_intact(&req, "k", 1, 70 * KiB));
	/* a byte flipped in place gives the file another mtime: it is
	 * checked again, found damaged, dropped and missed */
	past_mtime(p0);
	cr_assert_eq(stat(p0, &st), 0);
	flip_byte(p0, st.st_size - 10);
	cr_assert_eq(open_file(t, "k", "\"e\"", 0, &req, &async), BC_ENOENT);
	cr_assert(async);
	cr_assert_eq(req.fd, -1);
	cr_assert_eq(STAT(t, corrupt), 1);
	cr_assert_not(exists(p0), "removed");
	cr_assert_eq(open_file(t, "k", "\"e\"", 0, &req, &async), BC_ENOENT,
	    "and out of the index");
	cr_assert_not(async);
	/* a chunk written again is a new file (another inode): checked */
	put(t, "k", "\"e\"", 1, 70 * KiB);
	bc_tier_disk_flush(t);
	cr_assert_eq(open_file(t, "k", "\"e\"", 1, &req, &async), 0);
	cr_assert(async);
	cr_assert(file_intact(&req, "k", 1, 70 * KiB));
	/* a chunk being written (its rename held back by its stripe lock)
	 * is left to get(), which copies it */
	{
		bc_chunk_key_t   k = { "bkt", "k", "\"e\"", 2 };
		pthread_mutex_t *mu = stripe_of(t, bc_chunk_key_hash(&k));

		pthread_mutex_lock(mu);
		put(t, "k", "\"e\"", 2, 10 * KiB);
		memset(&req, 0, sizeof(req));
		cr_assert_eq(bc_tier_disk.open_file(t, &req, &k, &demand,
		    on_file), BC_ENOTSUP);
		pthread_mutex_unlock(mu);
	}
	bc_tier_disk_flush(t);
	cr_assert_eq(STAT(t, errors), 0);
	bc_tier_disk.close(t);
	teardown(&f);
}

LTest(disk, the_scan_drops_damaged_headers_and_short_files)
{
	fix_t      f;
	bc_tier_t *t;
	char       p0[256], p1[256];

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "k", "\"e\"", 0, 10 * KiB);
	put(t, "k", "\"e\"", 1, 10 * KiB);
	put(t, "k", "\"e\"", 2, 10 * KiB);
	bc_tier_disk_flush(t);
	bc_tier_disk.close(t);
	chunk_file(&f, "k", "\"e\"", 0, p0, sizeof(p0));
	chunk_file(&f, "k", "\"e\"", 1, p1, sizeof(p1));
	flip_byte(p0, 34);                 /* in the bucket name */
	cr_assert_eq(truncate(p1, 5000), 0);
	t = open_scanned(&f, 64 * MiB);
	cr_assert_eq(info(t).chunks, 1);
	cr_assert_eq(STAT(t, corrupt), 2);
	cr_assert_eq(info(t).scan_removed, 2);
	cr_assert_not(exists(p0));
	cr_assert_not(exists(p1));
	cr_assert(has(t, "k", "\"e\"", 2));
	bc_tier_disk.close(t);
	teardown(&f);
}

LTest(disk, stale_temp_files_go_at_the_scan)
{
	fix_t      f;
	bc_tier_t *t;
	char       p[256], tmp[300], other[300], pm[256], mtmp[300];
	int        fd;

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "k", "\"e\"", 0, 1000);
	meta_put(t, "k", "meta");
	bc_tier_disk_flush(t);
	bc_tier_disk.close(t);
	/* writes cut short by a crash (a chunk's and a metadata file's),
	 * and a file that is not the tier's */
	chunk_file(&f, "k", "\"e\"", 0, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.0badf00d-2a.tmp", p);
	snprintf(other, sizeof(other), "%s.notes", p);
	fd = open(tmp, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "partial", 7), 7);
	close(fd);
	fd = open(other, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	file_of(&f, BC_DISK_META, bc_disk_obj_hash("bkt", "k"), pm, sizeof(pm));
	snprintf(mtmp, sizeof(mtmp), "%s.0badf00d-2b.tmp", pm);
	fd = open(mtmp, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	t = open_scanned(&f, 64 * MiB);
	cr_assert_not(exists(tmp), "the stale temp file is gone");
	cr_assert_not(exists(mtmp), "the stale metadata temp file is gone");
	cr_assert(exists(other), "what is not the tier's stays");
	cr_assert(exists(p));
	cr_assert(exists(pm));
	cr_assert_eq(info(t).scan_removed, 2);
	cr_assert_eq(info(t).chunks, 1);
	cr_assert_eq(STAT(t, corrupt), 0);
	cr_assert(has(t, "k", "\"e\"", 0));
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- the scan running ---------------------------------------------------- */

/* Holds the scan's threads as they start a phase (bc_disk_scan_gate). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  gate_cv = PTHREAD_COND_INITIALIZER;
static int             gate_held;      /* the phase held; 0: none */
static int             gate_reached;   /* threads waiting at it */

static void
gate(bc_disk_t *t, int phase)
{
	(void)t;
	pthread_mutex_lock(&gate_mu);
	if (phase == gate_held) {
		gate_reached++;
		pthread_cond_broadcast(&gate_cv);
		while (gate_held == phase)
			pthread_cond_wait(&gate_cv, &gate_mu);
	}
	pthread_mutex_unlock(&gate_mu);
}

static void
gate_hold(int phase)
{
	pthread_mutex_lock(&gate_mu);
	gate_held = phase;
	gate_reached = 0;
	pthread_mutex_unlock(&gate_mu);
	bc_disk_scan_gate = gate;
}

/* Waits until a scan thread is held (for phase 2: phase 1 ended). */
static void
gate_wait(void)
{
	pthread_mutex_lock(&gate_mu);
	while (gate_reached == 0)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static void
gate_release(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_held = 0;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

LTest(disk, a_get_while_the_scan_runs_reads_the_file, .timeout = 60)
{
	fix_t      f;
	bc_tier_t *t;
	char       p2[256], p3[256], m[256];
	bc_chunk_t *c;
	pthread_mutex_t *s2;
	int         rv[2];
	bool        held[3];

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "found", "\"e\"", 0, 20 * KiB);
	put(t, "deleted", "\"e\"", 0, 20 * KiB);
	put(t, "dropped", "\"e\"", 0, 20 * KiB);
	meta_put(t, "found", "m1");
	bc_tier_disk_flush(t);
	bc_tier_disk.close(t);
	chunk_file(&f, "deleted", "\"e\"", 0, p2, sizeof(p2));
	chunk_file(&f, "dropped", "\"e\"", 0, p3, sizeof(p3));

	gate_hold(1);
	t = open_cap(&f, 64 * MiB);
	gate_wait();
	cr_assert(info(t).scanning);
	cr_assert_eq(info(t).chunks, 0, "the scan holds");
	/* hits from the first second: the file its key names */
	c = get(t, "found", "\"e\"", 0);
	cr_assert_not_null(c);
	cr_assert(intact(c, "found", 0, 20 * KiB));
	bc_chunk_unref(c);
	cr_assert(meta(t, "found", m));
	cr_assert_str_eq(m, "m1");
	cr_assert_eq(info(t).chunks, 1, "indexed by the read");
	cr_assert_eq(info(t).metas, 1);
	cr_assert_not(has(t, "never", "\"e\"", 0));
	/* deletes of files the scan has not reached hold, even while the
	 * files are still there (their unlinks held at the stripe lock) */
	s2 = stripe_of(t, bc_chunk_key_hash(&(bc_chunk_key_t){ "bkt",
	    "deleted", "\"e\"", 0 }));
	pthread_mutex_lock(s2);
	rv[0] = bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", "deleted",
	    "\"e\"", 0 });
	rv[1] = (int)bc_tier_disk.del_object(t, "bkt", "dropped", NULL);
	held[0] = exists(p2);
	held[1] = has(t, "deleted", "\"e\"", 0);
	held[2] = has(t, "dropped", "\"e\"", 0);
	pthread_mutex_unlock(s2);
	cr_assert_eq(rv[0], BC_ENOENT, "not indexed yet");
	cr_assert_eq(rv[1], 0);
	cr_assert(held[0], "the file still there");
	cr_assert_not(held[1], "deleted: not served");
	cr_assert_not(held[2], "dropped: not served");
	cr_assert(info(t).scanning, "all that while the scan ran");
	gate_release();
	bc_tier_disk_wait_scan(t);
	bc_tier_disk_flush(t);
	cr_assert_not(has(t, "deleted", "\"e\"", 0));
	cr_assert_not(has(t, "dropped", "\"e\"", 0));
	cr_assert_not(exists(p2), "the del removed the file");
	cr_assert_not(exists(p3), "the del_object removed the file");
	cr_assert_eq(info(t).chunks, 1);
	cr_assert(has(t, "found", "\"e\"", 0));
	cr_assert_eq(STAT(t, corrupt), 0);
	bc_tier_disk.close(t);
	teardown(&f);
}

LTest(disk, chunks_serve_before_their_headers_are_read, .timeout = 60)
{
	fix_t      f;
	bc_tier_t *t;
	char       m[256], p[256];
	bc_chunk_t *c;
	bc_tier_disk_info_t in;

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "a", "\"e\"", 0, 9000);
	put(t, "b", "\"e\"", 0, 9000);
	put(t, "c", "\"e\"", 0, 9000);
	put(t, "c", "\"e\"", 1, 9000);
	meta_put(t, "a", "ma");
	bc_tier_disk_flush(t);
	in = info(t);
	bc_tier_disk.close(t);
	chunk_file(&f, "c", "\"e\"", 1, p, sizeof(p));

	gate_hold(2);
	t = open_cap(&f, 64 * MiB);
	gate_wait();
	/* phase 1 ended: every chunk indexed by name and size, no header
	 * read, no metadata yet */
	cr_assert(info(t).indexed);
	cr_assert(info(t).scanning);
	cr_assert_gt(info(t).index_ns, 0);
	cr_assert_eq(info(t).chunks, 4);
	cr_assert_eq(info(t).metas, 0);
	cr_assert_eq(info(t).usage, in.usage - 4 * KiB, "all but the meta");
	c = get(t, "a", "\"e\"", 0);
	cr_assert_not_null(c, "served from the index");
	cr_assert(intact(c, "a", 0, 9000));
	cr_assert_geq(c->fd, 0);
	bc_chunk_unref(c);
	cr_assert(meta(t, "a", m), "metadata read directly");
	cr_assert_str_eq(m, "ma");
	cr_assert_eq(bc_tier_disk.del_object(t, "bkt", "a", NULL), 1,
	    "the read gave \"a\" its object");
	put(t, "a", "\"e\"", 0, 9000);
	/* a del finds a bare chunk by its hash; a del_object cannot see bare
	 * chunks yet, so they hide now and go when their headers are read */
	cr_assert_eq(bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", "b",
	    "\"e\"", 0 }), 0);
	cr_assert_not(has(t, "b", "\"e\"", 0));
	cr_assert_eq(bc_tier_disk.del_object(t, "bkt", "c", NULL), 0);
	cr_assert_not(has(t, "c", "\"e\"", 0));
	cr_assert_not(has(t, "c", "\"e\"", 1));
	gate_release();
	bc_tier_disk_wait_scan(t);
	bc_tier_disk_flush(t);
	cr_assert_not(exists(p));
	cr_assert_eq(info(t).chunks, 1);
	cr_assert_eq(info(t).metas, 0, "dropped with \"a\"");
	cr_assert_eq(files_in(&f, "c"), 1);
	cr_assert_eq(files_in(&f, "o"), 0);
	cr_assert(has(t, "a", "\"e\"", 0), "put again");
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- capacity ------------------------------------------------------------ */

LTest(disk, capacity_counts_blocks_and_evicts_files)
{
	fix_t      f;
	bc_tier_t *t;
	char       key[16];

	setup(&f);
	t = open_scanned(&f, 40 * KiB);
	/* 1000 bytes and a header: one 4 KiB block each */
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(t, key, "\"e\"", 0, 1000);
		cr_assert_eq(info(t).usage, (uint64_t)(i < 10 ? i + 1 : 10) *
		    4 * KiB);
	}
	cr_assert_eq(STAT(t, evictions), 2);
	cr_assert_not(has(t, "k0", "\"e\"", 0), "lru: the oldest went");
	cr_assert_not(has(t, "k1", "\"e\"", 0));
	cr_assert(has(t, "k11", "\"e\"", 0));
	bc_tier_disk_flush(t);
	cr_assert_eq(files_in(&f, "c"), 10, "evicted files are removed");
	/* a body of 4096 bytes needs a second block for its header */
	put(t, "big", "\"e\"", 0, 4096);
	cr_assert_eq(info(t).usage, 40 * KiB);
	cr_assert_eq(STAT(t, evictions), 4);
	/* metadata counts too */
	meta_put(t, "k11", "m");
	cr_assert_eq(STAT(t, evictions), 5);
	cr_assert_eq(info(t).usage, 40 * KiB);
	/* set_capacity evicts down */
	cr_assert_eq(bc_tier_disk.set_capacity(t, 16 * KiB), 0);
	cr_assert_eq(bc_tier_disk.capacity(t), 16 * KiB);
	cr_assert_leq(info(t).usage, 16 * KiB);
	bc_tier_disk_flush(t);
	cr_assert_eq(files_in(&f, "c") + files_in(&f, "o"),
	    info(t).chunks + info(t).metas);
	cr_assert_eq(info(t).usage, (uint64_t)(files_in(&f, "c") +
	    files_in(&f, "o") + 1) * 4 * KiB, "big has 2 blocks");
	/* a smaller capacity at a restart: the scan evicts the rest */
	bc_tier_disk.close(t);
	t = open_scanned(&f, 8 * KiB);
	cr_assert_leq(info(t).usage, 8 * KiB);
	cr_assert_gt(STAT(t, evictions), 0);
	bc_tier_disk_flush(t);
	cr_assert_eq(files_in(&f, "c") + files_in(&f, "o"),
	    info(t).chunks + info(t).metas, "%zu+%zu files, %lu+%lu entries",
	    files_in(&f, "c"), files_in(&f, "o"),
	    (unsigned long)info(t).chunks, (unsigned long)info(t).metas);
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- deletes ------------------------------------------------------------- */

LTest(disk, del_object_removes_the_files)
{
	fix_t      f;
	bc_tier_t *t;
	char       m[256];

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	put(t, "obj", "\"1\"", 0, 5000);
	put(t, "obj", "\"1\"", 1, 5000);
	put(t, "obj", "\"2\"", 0, 5000);
	meta_put(t, "obj", "m");
	put(t, "dir/a", "\"1\"", 0, 100);
	put(t, "dir/b", "\"1\"", 0, 100);
	meta_put(t, "dir/b", "m");
	put(t, "keep", "\"1\"", 0, 100);
	meta_put(t, "keep", "m");
	bc_tier_disk_flush(t);
	cr_assert_eq(files_in(&f, "c"), 6);
	cr_assert_eq(files_in(&f, "o"), 3);
	cr_assert_eq(bc_tier_disk.del_object(t, "bkt", "obj", NULL), 3);
	cr_assert_not(meta(t, "obj", m), "the metadata went with it");
	cr_assert_eq(bc_tier_disk.del_object(t, "bkt", NULL, "dir/"), 2);
	cr_assert_not(meta(t, "dir/b", m));
	cr_assert_eq(bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", "keep",
	    "\"1\"", 0 }), 0);
	cr_assert(meta(t, "keep", m), "a chunk's del leaves the metadata");
	bc_tier_disk_flush(t);
	cr_assert_eq(files_in(&f, "c"), 0);
	cr_assert_eq(files_in(&f, "o"), 1);
	cr_assert_eq(STAT(t, deletes), 6);
	cr_assert_eq(info(t).usage, 4 * KiB);
	bc_tier_disk.close(t);
	/* after a restart too */
	t = open_scanned(&f, 64 * MiB);
	cr_assert_eq(info(t).chunks, 0);
	cr_assert_eq(info(t).metas, 1);
	bc_tier_disk.close(t);
	teardown(&f);
}

/* Two threads put, replace and delete while writes are in flight; once
 * they are done the files are exactly the index's, and each holds the
 * bytes of the last put. */
struct churn {
	bc_tier_t *t;
	unsigned   seed;
};

static void *
churn(void *arg)
{
	struct churn *w = arg;
	char          key[16];

	for (int i = 0; i < 1500; i++) {
		int      r = rand_r(&w->seed) % 10;
		uint32_t idx = (uint32_t)(rand_r(&w->seed) % 2);

		snprintf(key, sizeof(key), "k%d", rand_r(&w->seed) % 20);
		if (r < 6) {
			bc_chunk_t *c = mk(key, "\"e\"", idx, 3000 +
			    (size_t)idx * 100);

			bc_tier_disk.put(w->t, c, &demand);
			bc_chunk_unref(c);
		} else if (r < 9) {
			bc_tier_disk.del(w->t, &(bc_chunk_key_t){ "bkt", key,
			    "\"e\"", idx });
		} else {
			bc_tier_disk.del_object(w->t, "bkt", key, NULL);
		}
	}
	return NULL;
}

LTest(disk, the_files_match_the_index_after_churn)
{
	fix_t        f;
	bc_tier_t   *t;
	pthread_t    th[2];
	struct churn w[2];
	size_t       n = 0, chunks;
	char         key[16];

	setup(&f);
	t = open_scanned(&f, 64 * KiB);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct churn){ t, (unsigned)i * 7919u + 3 };
		cr_assert_eq(pthread_create(&th[i], NULL, churn, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	bc_tier_disk_flush(t);
	chunks = info(t).chunks;
	cr_assert_eq(files_in(&f, "c"), chunks);
	cr_assert_leq(info(t).usage, 64 * KiB);
	for (int i = 0; i < 20; i++)
		for (uint32_t idx = 0; idx < 2; idx++) {
			bc_chunk_t *c;

			snprintf(key, sizeof(key), "k%d", i);
			c = get(t, key, "\"e\"", idx);
			if (c == NULL)
				continue;
			n++;
			cr_assert_geq(c->fd, 0, "read from its file");
			cr_assert(intact(c, key, idx, 3000 + idx * 100));
			bc_chunk_unref(c);
		}
	cr_assert_eq(n, chunks, "every indexed chunk read from its file");
	cr_assert_eq(info(t).chunks, chunks);
	cr_assert_eq(STAT(t, corrupt), 0);
	cr_assert_eq(STAT(t, write_failures), 0);
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ---- open ---------------------------------------------------------------- */

static int
open_err(const char *dir, bc_loop_t *loop, char *err, size_t n)
{
	bc_tier_opts_t o = { .capacity = MiB, .loop = loop, .dir = dir };
	bc_tier_t     *t = NULL;
	int            rv = bc_tier_disk_open(&o, &t, err, n);

	if (rv == 0)
		bc_tier_disk.close(t);
	return rv;
}

LTest(disk, open_fails_on_a_bad_dir_with_a_message)
{
	fix_t      f;
	char       path[128], err[256];
	bc_tier_t *t;
	int        fd;

	setup(&f);
	snprintf(path, sizeof(path), "%s/missing", f.dir);
	cr_assert_eq(open_err(path, f.loop, err, sizeof(err)), BC_ENOENT);
	cr_assert_not_null(strstr(err, path), "%s", err);
	cr_assert_not_null(strstr(err, "no such directory"), "%s", err);
	snprintf(path, sizeof(path), "%s/file", f.dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	close(fd);
	cr_assert_eq(open_err(path, f.loop, err, sizeof(err)), BC_EINVAL);
	cr_assert_not_null(strstr(err, "not a directory"), "%s", err);
	cr_assert_eq(open_err("", f.loop, err, sizeof(err)), BC_EINVAL);
	cr_assert_eq(bc_tier_disk.open(&(bc_tier_opts_t){ .capacity = MiB,
	    .dir = f.dir }, &t), BC_EINVAL, "no loop");
	/* one process per directory */
	t = open_cap(&f, MiB);
	cr_assert_eq(open_err(f.dir, f.loop, err, sizeof(err)), BC_EAGAIN);
	cr_assert_not_null(strstr(err, "in use"), "%s", err);
	bc_tier_disk.close(t);
	cr_assert_eq(open_err(f.dir, f.loop, err, sizeof(err)), 0,
	    "free again after close");
	teardown(&f);
}

LTest(disk, open_fails_on_a_read_only_dir)
{
	fix_t f;
	char  err[256];

	setup(&f);
	if (geteuid() == 0) {
		/* root writes through permissions: a read-only mount */
		if (mount("tmpfs", f.dir, "tmpfs", MS_RDONLY, "size=1m") < 0) {
			teardown(&f);
			cr_skip_test("mount not permitted: %s", strerror(errno));
		}
		f.mounted = left_mounted = true;
	} else {
		cr_assert_eq(chmod(f.dir, 0555), 0);
	}
	cr_assert_eq(open_err(f.dir, f.loop, err, sizeof(err)), BC_EACCES);
	cr_assert_not_null(strstr(err, "not writable"), "%s", err);
	cr_assert_not_null(strstr(err, f.dir), "%s", err);
	if (!f.mounted)
		chmod(f.dir, 0755);
	teardown(&f);
}

/* ---- faults -------------------------------------------------------------- */

/* put() without asserting (for sections holding a lock). */
static int
try_put(bc_tier_t *t, const char *key, size_t len)
{
	bc_chunk_t *c = mk(key, "\"e\"", 0, len);
	int         rv = bc_tier_disk.put(t, c, &demand);

	bc_chunk_unref(c);
	return rv;
}

/* Mounts a tmpfs of opts on f's dir, or skips the test (not root). */
static void
mount_tmpfs(fix_t *f, const char *opts)
{
	if (mount("tmpfs", f->dir, "tmpfs", 0, opts) < 0) {
		teardown(f);
		cr_skip_test("mount not permitted: %s", strerror(errno));
	}
	f->mounted = left_mounted = true;
}

/* Others fill the filesystem: a file under DIR (not the tier's) written
 * until ENOSPC, or up to max bytes. */
static void
fill(const fix_t *f, const char *name, uint64_t max)
{
	static uint8_t block[64 * KiB];
	char           path[128];
	uint64_t       n = 0;
	int            fd;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	cr_assert_geq(fd, 0);
	while (n < max) {
		size_t  len = max - n < sizeof(block) ? max - n : sizeof(block);
		ssize_t w = write(fd, block, len);

		if (w <= 0) {
			cr_assert(w < 0 && errno == ENOSPC, "%s",
			    strerror(errno));
			break;
		}
		n += (uint64_t)w;
	}
	close(fd);
}

static void
unfill(const fix_t *f, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	cr_assert_eq(unlink(path), 0);
}

/* The bytes of f's filesystem in use, by anyone. */
static uint64_t
fs_used(const fix_t *f)
{
	struct statvfs sv;

	cr_assert_eq(statvfs(f->dir, &sv), 0);
	return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

/* A chunk file of 256 KiB of body: 260 KiB on disk. */
#define BODY  (256 * KiB)
#define FILE_ (260 * KiB)

LTest(disk, enospc_with_nothing_to_evict_marks_the_tier_down)
{
	fix_t      f;
	bc_tier_t *t;
	char       key[16];

	setup(&f);
	mount_tmpfs(&f, "size=1m");
	bc_disk_space_period_ms = 3600 * 1000;
	t = open_scanned(&f, 64 * MiB);
	cr_assert_eq(bc_tier_capacity(t), MiB - bc_disk_reserve(MiB),
	    "capped to the filesystem at open");
	/* others take every byte: the tier holds nothing it could evict */
	fill(&f, "others", UINT64_MAX);
	put(t, "k0", "\"e\"", 0, BODY);
	bc_tier_disk_flush(t);
	cr_assert_eq(STAT(t, write_failures), 1);
	cr_assert_eq(bc_tier_health(t), BC_TIER_DOWN);
	cr_assert_eq(STAT(t, downs), 1, "counted once");
	cr_assert_eq(atomic_load(&t->health.last_err), BC_ENOSPC);
	cr_assert_eq(info(t).chunks, 0);
	cr_assert_eq(files_in(&f, "c"), 0, "no partial files");
	/* the cap read after the failure: no room, puts are refused */
	cr_assert_eq(bc_tier_capacity(t), 0);
	cr_assert_eq(try_put(t, "k1", BODY), BC_E2BIG);
	/* room again: the next reading lifts the cap */
	unfill(&f, "others");
	cr_assert_eq(bc_tier_disk_check_space(t), 0);
	cr_assert_eq(bc_tier_capacity(t), MiB - bc_disk_reserve(MiB));
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(t, key, "\"e\"", 0, BODY);   /* 2 MiB in all */
		/* one at a time: the unlinks of what a put evicts run
		 * before the next write (a burst on a filesystem this small
		 * can meet ENOSPC while they wait on the pool) */
		bc_tier_disk_flush(t);
	}
	cr_assert_eq(STAT(t, write_failures), 1, "no more failures");
	cr_assert_gt(STAT(t, evictions), 0);
	cr_assert(has(t, "k7", "\"e\"", 0));
	bc_tier_disk.close(t);
	teardown(&f);
}

/* ENOSPC with bytes free (inodes ran out): eviction cannot help, so the
 * tier goes down as for EIO and the cap stays. */
LTest(disk, enospc_with_bytes_free_marks_the_tier_down)
{
	fix_t      f;
	bc_tier_t *t;
	char       key[16];
	uint64_t   cap;

	setup(&f);
	mount_tmpfs(&f, "size=8m,nr_inodes=16");
	bc_disk_space_period_ms = 3600 * 1000;
	t = open_scanned(&f, 64 * MiB);
	cap = bc_tier_capacity(t);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(t, key, "\"e\"", 0, 4 * KiB);
	}
	bc_tier_disk_flush(t);
	cr_assert_gt(STAT(t, write_failures), 0);
	cr_assert_eq(bc_tier_health(t), BC_TIER_DOWN);
	cr_assert_eq(STAT(t, downs), 1, "counted once");
	cr_assert_eq(atomic_load(&t->health.last_err), BC_ENOSPC);
	cr_assert_eq(STAT(t, evictions), 0, "nothing evicted for it");
	cr_assert_geq(bc_tier_capacity(t), cap - 8 * 4 * KiB);
	cr_assert_eq(info(t).chunks + STAT(t, write_failures), 8);
	cr_assert_eq(files_in(&f, "c"), info(t).chunks, "no partial files");
	bc_tier_disk.close(t);
	teardown(&f);
}

/* Issue 12: --disk-size larger than the filesystem. The tier bounds
 * itself by what the filesystem holds, evicts, stays up, and says so in
 * its stats. */
LTest(disk, a_small_filesystem_caps_the_capacity, .timeout = 60)
{
	fix_t            f;
	bc_tier_chain_t *ch;
	bc_tier_t       *t;
	bc_stats_tier_t  rows[2];
	char             key[16];
	uint64_t         cap = 8 * MiB - bc_disk_reserve(8 * MiB);
	size_t           n = 0;

	setup(&f);
	mount_tmpfs(&f, "size=8m");
	bc_disk_space_period_ms = 3600 * 1000;
	ch = bc_tier_chain_new(f.loop);
	cr_assert_not_null(ch);
	cr_assert_eq(bc_tier_chain_open(ch, &bc_tier_mem,
	    &(bc_tier_opts_t){ .capacity = MiB }), 0);
	t = open_scanned(&f, 64 * MiB);
	cr_assert_eq(bc_tier_chain_add(ch, t), 0);
	cr_assert_eq(bc_disk_reserve(8 * MiB), 512 * KiB);
	cr_assert_eq(bc_tier_capacity(t), cap, "capped at open");
	cr_assert_eq(info(t).configured, 64 * MiB);
	cr_assert_eq(bc_tier_stats_rows(ch, rows, 2), 2);
	cr_assert_eq(rows[1].v[BC_TSTAT_capacity_bytes], cap);
	cr_assert_eq(rows[1].v[BC_TSTAT_configured_bytes], 64 * MiB);
	cr_assert_eq(rows[0].v[BC_TSTAT_configured_bytes], MiB);
	/* 12 MiB, one put at a time: every write fits, the oldest go */
	for (int i = 0; i < 48; i++) {
		snprintf(key, sizeof(key), "s%d", i);
		put(t, key, "\"e\"", 0, BODY);
		bc_tier_disk_flush(t);
		cr_assert_leq(info(t).usage, cap, "put %d", i);
		cr_assert_leq(fs_used(&f), 8 * MiB - 256 * KiB, "put %d", i);
	}
	cr_assert_eq(STAT(t, write_failures), 0);
	cr_assert_eq(STAT(t, downs), 0);
	cr_assert_eq(bc_tier_health(t), BC_TIER_UP);
	cr_assert_eq(STAT(t, evictions), 48 - info(t).chunks);
	cr_assert_eq(info(t).chunks, cap / FILE_);
	for (int i = 48 - (int)(cap / FILE_); i < 48; i++) {
		bc_chunk_t *c;

		snprintf(key, sizeof(key), "s%d", i);
		c = get(t, key, "\"e\"", 0);
		cr_assert_not_null(c, "the newest chunks stay: %s", key);
		cr_assert(intact(c, key, 0, BODY), "%s", key);
		bc_chunk_unref(c);
	}
	/* 12 MiB more at once: writes overlap evictions whose unlinks have
	 * not run yet; the tier still never goes down */
	for (int i = 0; i < 48; i++) {
		snprintf(key, sizeof(key), "b%d", i);
		put(t, key, "\"e\"", 0, BODY);
	}
	bc_tier_disk_flush(t);
	cr_assert_eq(STAT(t, downs), 0, "no flap");
	cr_assert_eq(bc_tier_health(t), BC_TIER_UP);
	cr_assert_leq(info(t).usage, bc_tier_capacity(t));
	cr_assert_leq(bc_tier_capacity(t), cap);
	cr_assert_gt(STAT(t, evictions), 48);
	for (int i = 0; i < 48; i++) {
		bc_chunk_t *c;

		snprintf(key, sizeof(key), "b%d", i);
		c = get(t, key, "\"e\"", 0);
		if (c == NULL)
			continue;
		cr_assert(intact(c, key, 0, BODY), "%s", key);
		bc_chunk_unref(c);
		n++;
	}
	cr_assert_eq(n, info(t).chunks, "every chunk held is a new one");
	cr_assert_eq(files_in(&f, "c"), n);
	cr_assert_geq(n + STAT(t, write_failures), cap / FILE_ - 1);
	bc_tier_chain_free(ch);
	teardown(&f);
}

/* Others take and give back space: the cap follows, an ENOSPC they cause
 * evicts instead of marking the tier down, and the tier grows back to
 * its configured size. */
LTest(disk, the_cap_follows_free_space, .timeout = 60)
{
	fix_t      f;
	bc_tier_t *t;
	char       key[16];
	uint64_t   cap, ev;

	setup(&f);
	mount_tmpfs(&f, "size=8m");
	bc_disk_space_period_ms = 3600 * 1000;
	t = open_scanned(&f, 6 * MiB);
	cr_assert_eq(bc_tier_capacity(t), 6 * MiB, "fits: not capped");
	fill(&f, "others", 4 * MiB);
	cr_assert_eq(bc_tier_disk_check_space(t), 0);
	cap = 4 * MiB - bc_disk_reserve(8 * MiB);
	cr_assert_eq(bc_tier_capacity(t), cap);
	cr_assert_eq(info(t).configured, 6 * MiB);
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(t, key, "\"e\"", 0, BODY);
		bc_tier_disk_flush(t);
	}
	cr_assert_eq(info(t).chunks, cap / FILE_);
	cr_assert_eq(STAT(t, write_failures), 0);
	/* room for one more under the cap; others take it, and the rest,
	 * behind the tier's back: the next write fails, the cap is read
	 * again, the tier evicts and stays up */
	cr_assert_eq(bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", "k19",
	    "\"e\"", 0 }), 0);
	bc_tier_disk_flush(t);
	fill(&f, "more", UINT64_MAX);
	ev = STAT(t, evictions);
	put(t, "x0", "\"e\"", 0, BODY);
	bc_tier_disk_flush(t);
	cr_assert_eq(STAT(t, write_failures), 1);
	cr_assert_eq(STAT(t, downs), 0);
	cr_assert_eq(bc_tier_health(t), BC_TIER_UP);
	cr_assert_lt(bc_tier_capacity(t), cap - FILE_);
	cr_assert_gt(STAT(t, evictions), ev);
	cr_assert_not(has(t, "x0", "\"e\"", 0));
	put(t, "x1", "\"e\"", 0, BODY);
	bc_tier_disk_flush(t);
	cr_assert_eq(STAT(t, write_failures), 1, "the next write fits");
	cr_assert(has(t, "x1", "\"e\"", 0));
	cr_assert_leq(info(t).usage, bc_tier_capacity(t));
	/* the space comes back: the periodic reading finds it */
	unfill(&f, "others");
	unfill(&f, "more");
	bc_tier_disk.close(t);
	bc_disk_space_period_ms = 20;
	t = open_scanned(&f, 6 * MiB);
	cr_assert_eq(bc_tier_capacity(t), 6 * MiB);
	fill(&f, "others", 4 * MiB);
	/* until the reading after the fill (one taken while it ran finds
	 * more room) */
	for (int i = 0; i < 500 && bc_tier_capacity(t) != cap; i++)
		usleep(10 * 1000);
	cr_assert_eq(bc_tier_capacity(t), cap,
	    "capped by the timer");
	unfill(&f, "others");
	for (int i = 0; i < 500 && bc_tier_capacity(t) < 6 * MiB; i++)
		usleep(10 * 1000);
	cr_assert_eq(bc_tier_capacity(t), 6 * MiB, "grown back");
	bc_tier_disk.close(t);
	teardown(&f);
}

LTest(disk, late_writes_and_unlinks_never_undo_a_newer_one, .timeout = 60)
{
	fix_t      f;
	bc_tier_t *t;
	char       key[16];
	bc_chunk_t *c;
	int         rv[3];

	setup(&f);
	t = open_scanned(&f, 64 * MiB);
	for (int i = 0; i < 40; i++) {
		uint64_t         h;
		pthread_mutex_t *s;

		snprintf(key, sizeof(key), "r%d", i);
		h = bc_chunk_key_hash(&(bc_chunk_key_t){ "bkt", key, "\"e\"",
		    0 });
		s = stripe_of(t, h);
		pthread_mutex_lock(s);
		/* a write, an unlink and a newer write of one path, all in
		 * flight at once; the newer write has other bytes */
		rv[0] = try_put(t, key, 1000);
		rv[1] = bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", key,
		    "\"e\"", 0 });
		rv[2] = try_put(t, key, 2000 + (size_t)i);
		pthread_mutex_unlock(s);
		cr_assert(rv[0] == 0 && rv[1] == 0 && rv[2] == 0);
		bc_tier_disk_flush(t);
		c = get(t, key, "\"e\"", 0);
		cr_assert_not_null(c, "round %d: the newest put's file", i);
		cr_assert_geq(c->fd, 0);
		cr_assert(intact(c, key, 0, 2000 + (size_t)i),
		    "round %d: the newest put's bytes", i);
		bc_chunk_unref(c);
		/* an unlink leaves a file an entry names */
		cr_assert_not(bc_disk_unlink_unindexed(t->priv, BC_DISK_CHUNK, h));
		cr_assert_eq(files_in(&f, "c"), (size_t)i + 1);
		/* a write dropped while in flight leaves no file */
		snprintf(key, sizeof(key), "d%d", i);
		h = bc_chunk_key_hash(&(bc_chunk_key_t){ "bkt", key, "\"e\"",
		    0 });
		s = stripe_of(t, h);
		pthread_mutex_lock(s);
		rv[0] = try_put(t, key, 1000);
		rv[1] = bc_tier_disk.del(t, &(bc_chunk_key_t){ "bkt", key,
		    "\"e\"", 0 });
		pthread_mutex_unlock(s);
		cr_assert(rv[0] == 0 && rv[1] == 0);
		bc_tier_disk_flush(t);
		cr_assert_eq(files_in(&f, "c"), (size_t)i + 1, "round %d", i);
	}
	cr_assert_eq(info(t).chunks, 40);
	cr_assert_eq(STAT(t, corrupt), 0);
	bc_tier_disk.close(t);
	teardown(&f);
}
