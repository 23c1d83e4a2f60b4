/*
 * tier_disk_scan.c — the disk tier's start-up scan (tier_disk_int.h):
 * rebuilds the index from the files under DIR while the tier serves.
 *
 * Threads: BC_DISK_SCAN_THREADS threads of its own (the work pool keeps
 * serving gets meanwhile) take the 512 top directories (c/00..c/ff,
 * o/00..o/ff) in turn from an atomic counter. Each lists the directories
 * below, and in each of those reads every file's header (one pread: a
 * header fits in 4 KiB; bodies are checked when read), then indexes that
 * directory's files under one lock. Files a put, del or del_object of the
 * running tier already decided about are left to it: an entry exists
 * (skipped), a tombstone or filter says deleted (removed). A file whose
 * header is damaged, of the wrong size or naming another hash is removed
 * and counted (stats.corrupt); temp files of other instances (a crash
 * mid-write) are removed. Entries join the policy in scan order, so the
 * files that were on disk before are evicted in that order (random) until
 * hits reorder them.
 *
 * The last thread to finish ends the scan: it evicts down to the capacity
 * (the files beyond it are removed), clears the scanning state and wakes
 * bc_tier_disk_wait_scan(). bc_disk_scan_stop (close) stops the threads
 * between files and joins them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define BC_DISK_SCAN_THREADS 4
#define TOPS                 512

typedef struct found_s {
	bc_disk_entry_t *e;       /* made before locking */
	size_t           name;    /* bucket\0key\0 in the arena */
} found_t;

/* One leaf directory's sound files, indexed together. */
typedef struct batch_s {
	found_t *v;
	size_t   n, cap;
	char    *arena;
	size_t   used, size;
} batch_t;

static bool
batch_add(batch_t *b, uint8_t kind, uint64_t hash, const bc_disk_file_t *f)
{
	size_t bl = strlen(f->h.bucket), kl = strlen(f->h.key);
	bc_disk_entry_t *e;

	if (b->n == b->cap) {
		size_t   cap = b->cap > 0 ? b->cap * 2 : 64;
		found_t *v = realloc(b->v, cap * sizeof(*v));

		if (v == NULL)
			return false;
		b->v = v;
		b->cap = cap;
	}
	if (b->used + bl + kl + 2 > b->size) {
		size_t size = (b->size > 0 ? b->size * 2 : 4096) + bl + kl + 2;
		char  *a = realloc(b->arena, size);

		if (a == NULL)
			return false;
		b->arena = a;
		b->size = size;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return false;
	e->kind = kind;
	e->hash = hash;
	e->index = f->h.index;
	e->pol.size = bc_disk_blocks(f->fsize);
	e->pol.key = bc_policy_key_hash(f->h.bucket, f->h.key,
	    kind == BC_DISK_CHUNK ? f->h.index : UINT32_MAX);
	memcpy(b->arena + b->used, f->h.bucket, bl + 1);
	memcpy(b->arena + b->used + bl + 1, f->h.key, kl + 1);
	b->v[b->n].e = e;
	b->v[b->n].name = b->used;
	b->used += bl + kl + 2;
	b->n++;
	return true;
}

/* Indexes b's files (but those the running tier decided about) and
 * empties b. */
static void
batch_flush(bc_disk_t *t, batch_t *b)
{
	bc_disk_unlinks_t u = { 0 };
	bc_policy_ctx_t   ctx = bc_disk_ctx(NULL);
	uint64_t          added = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < b->n; i++) {
		bc_disk_entry_t *e = b->v[i].e;
		const char      *bucket = b->arena + b->v[i].name;
		const char      *key = bucket + strlen(bucket) + 1;
		bc_disk_obj_t   *o;
		bool             known;

		if (e->kind == BC_DISK_CHUNK) {
			known = bc_disk_do_chunk(t, e->hash) != NULL ||
			    bc_disk_tab_find(&t->tombs, e->hash,
			    BC_DISK_NONE) != BC_DISK_NONE;
		} else {
			o = bc_disk_do_obj(t, e->hash, bucket, key);
			known = o != NULL && o->meta != NULL;
		}
		if (!known && bc_disk_do_filtered(t, bucket, key)) {
			bc_disk_victim(&u, e->kind, e->hash);
			known = true;
		}
		ctx.dataset = bucket;
		if (known || bc_disk_do_add(t, e, bucket, key, &ctx) < 0) {
			free(e);
			continue;
		}
		added++;
	}
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_add(&t->scan_files, added);
	for (size_t i = 0; i < u.n; i++)
		bc_disk_unlink_unindexed(t, u.v[i].kind, u.v[i].hash);
	free(u.v);
	b->n = 0;
	b->used = 0;
}

/* Scans the files of one leaf directory ("c/ab/cd": prefix "abcd"). */
static void
scan_leaf(bc_disk_t *t, DIR *d, uint8_t kind, const char *prefix,
    batch_t *b, bc_disk_file_t *f)
{
	struct dirent *de;
	char           token[BC_DISK_TOKEN_LEN + 1];
	uint64_t       hash;
	int            rv;

	while (!atomic_load_explicit(&t->scan_stop, memory_order_relaxed)) {
		errno = 0;
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] == '.')
			continue;
		if (bc_disk_tmp_name(de->d_name, token)) {
			if (strcmp(token, t->token) != 0 &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0)
				atomic_fetch_add(&t->scan_removed, 1);
			continue;
		}
		if (!bc_disk_name_hash(de->d_name, &hash) ||
		    memcmp(de->d_name, prefix, 4) != 0)
			continue;   /* not ours */
		rv = bc_disk_read(dirfd(d), de->d_name, kind, hash, false,
		    false, f);
		if (rv == BC_EPROTO) {
			BC_TIER_COUNT(&t->base, corrupt, 1);
			if (bc_disk_unlink_unindexed(t, kind, hash))
				atomic_fetch_add(&t->scan_removed, 1);
		} else if (rv == 0 && !batch_add(b, kind, hash, f)) {
			batch_flush(t, b);
			if (!batch_add(b, kind, hash, f))
				BC_WARN("tier %s: scan: out of memory",
				    t->base.name);
		}
	}
	batch_flush(t, b);
}

/* Scans top directory i (kind i / 256, "c/xx" or "o/xx"). */
static void
scan_top(bc_disk_t *t, unsigned i, batch_t *b, bc_disk_file_t *f)
{
	uint8_t        kind = (uint8_t)(i / 256);
	char           path[8], prefix[5];
	struct dirent *de;
	DIR           *top, *leaf;
	int            fd;

	path[0] = kind == BC_DISK_CHUNK ? 'c' : 'o';
	path[1] = '/';
	path[2] = "0123456789abcdef"[(i % 256) >> 4];
	path[3] = "0123456789abcdef"[i % 16];
	path[4] = '\0';
	fd = openat(t->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	top = fdopendir(fd);
	if (top == NULL) {
		close(fd);
		return;
	}
	memcpy(prefix, path + 2, 2);
	while (!atomic_load_explicit(&t->scan_stop, memory_order_relaxed)) {
		de = readdir(top);
		if (de == NULL)
			break;
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		if (fd < 0)
			continue;
		leaf = fdopendir(fd);
		if (leaf == NULL) {
			close(fd);
			continue;
		}
		memcpy(prefix + 2, de->d_name, 2);
		prefix[4] = '\0';
		scan_leaf(t, leaf, kind, prefix, b, f);
		closedir(leaf);
	}
	closedir(top);
}

/* The last scan thread: the scan is over. */
static void
scan_end(bc_disk_t *t, bool stopped)
{
	bc_disk_unlinks_t u = { 0 };
	uint64_t          files = atomic_load(&t->scan_files);
	uint64_t          usage, ns;

	pthread_mutex_lock(&t->lock);
	if (!stopped)
		(void)bc_disk_do_evict(t, 0, &u);
	t->scanning = false;
	while (t->filters != NULL) {
		bc_disk_filter_t *f = t->filters;

		t->filters = f->next;
		free(f);
	}
	t->scan_ns = bc_mono_ns() - t->scan_start;
	ns = t->scan_ns;
	usage = t->usage;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	for (size_t i = 0; i < u.n; i++)
		bc_disk_unlink_unindexed(t, u.v[i].kind, u.v[i].hash);
	free(u.v);
	if (!stopped)
		BC_INFO("tier %s: indexed %" PRIu64 " files (%" PRIu64
		    " MiB) in %" PRIu64 " ms; %zu beyond the capacity removed",
		    t->base.name, files, usage >> 20, ns / 1000000u, u.n);
}

static void *
scan_main(void *arg)
{
	bc_disk_t      *t = arg;
	batch_t         b = { 0 };
	bc_disk_file_t *f = malloc(sizeof(*f));
	unsigned        i;
	bool            last;

	while (f != NULL &&
	    !atomic_load_explicit(&t->scan_stop, memory_order_relaxed)) {
		i = atomic_fetch_add(&t->scan_next, 1);
		if (i >= TOPS)
			break;
		scan_top(t, i, &b, f);
	}
	if (f == NULL)
		BC_WARN("tier %s: scan: out of memory", t->base.name);
	free(f);
	free(b.v);
	free(b.arena);
	pthread_mutex_lock(&t->lock);
	last = --t->scan_live == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		scan_end(t, atomic_load(&t->scan_stop));
	return NULL;
}

int
bc_disk_scan_start(bc_disk_t *t)
{
	size_t n = 0;
	bool   last;
	int    rv = 0;

	t->scan_threads = calloc(BC_DISK_SCAN_THREADS,
	    sizeof(*t->scan_threads));
	if (t->scan_threads == NULL)
		return BC_ENOMEM;
	pthread_mutex_lock(&t->lock);
	t->scanning = true;
	t->scan_start = bc_mono_ns();
	t->scan_live = BC_DISK_SCAN_THREADS;
	pthread_mutex_unlock(&t->lock);
	for (; n < BC_DISK_SCAN_THREADS; n++) {
		rv = -pthread_create(&t->scan_threads[n], NULL, scan_main, t);
		if (rv < 0)
			break;
	}
	pthread_mutex_lock(&t->lock);
	t->nscan = n;
	t->scan_live -= BC_DISK_SCAN_THREADS - n;
	last = n > 0 && t->scan_live == 0;
	if (n == 0)
		t->scanning = false;
	pthread_mutex_unlock(&t->lock);
	if (n == 0)
		return rv;
	if (last)
		scan_end(t, false);   /* the threads made ended already */
	return 0;
}

void
bc_disk_scan_stop(bc_disk_t *t)
{
	atomic_store(&t->scan_stop, true);
	for (size_t i = 0; i < t->nscan; i++)
		pthread_join(t->scan_threads[i], NULL);
	t->nscan = 0;
}
