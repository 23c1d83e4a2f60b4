/*
 * tier_disk_scan.c — the disk tier's start-up scan (tier_disk_int.h):
 * rebuilds the index from the files under DIR while the tier serves.
 *
 * Two phases, so that hits come early: reading a header costs an open, a
 * read and a close per file, three times a stat's cost.
 * 1. Sizes: the chunk directories are listed and every chunk file stat'ed;
 *    it joins the index bare (no object, policy key 0: policy.h allows
 *    the key later), so gets, usage and eviction work when this ends
 *    (info.indexed). Temp files of other instances (a crash mid-write) go.
 * 2. Headers: every bare chunk's header is read and checked (magic, crc,
 *    size, the name it hashes to); a sound one gives the entry its object
 *    and policy key, a damaged one is removed and counted (stats.corrupt).
 *    The metadata files are read and indexed. Bodies are checked on read.
 * Files the running tier decided about meanwhile are left to it: an entry
 * exists (skipped), a tombstone or del_object filter says deleted
 * (removed). Entries join the policy in scan order: the files that were
 * on disk before are evicted in that (random) order until hits reorder
 * them, after anything put since.
 *
 * Threads: BC_DISK_SCAN_THREADS threads of its own (the work pool keeps
 * serving gets) take units from an atomic counter: 256 chunk top
 * directories for phase 1, then 256 chunk and 256 metadata top
 * directories for phase 2, which waits until phase 1 ended everywhere.
 * At the end of phase 1 the files beyond the capacity are evicted
 * (removed on the work pool, counted in t->writing so that
 * bc_tier_disk_flush waits for them); at the end of the scan too (removed
 * by the last scan thread), and then the first reading of free space caps
 * the capacity (tier_disk_space.c), before the scan is marked over: the
 * first moment usage counts every file. bc_disk_scan_stop (close) stops the
 * threads between files and joins them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define TOPS      256
#define P1_UNITS  TOPS           /* c/00..c/ff: sizes */
#define ALL_UNITS (3 * TOPS)     /* then c/ and o/ again: headers */

void (*bc_disk_scan_gate)(bc_disk_t *t, int phase);

/* What one leaf directory yields, handled together under one lock. */
typedef struct item_s {
	uint64_t         hash, gen, size;
	bc_disk_entry_t *e;        /* made before locking */
	uint32_t         index;
	size_t           name;     /* bucket\0key\0 in the arena */
	int              rv;       /* phase 2: the header read */
} item_t;

typedef struct batch_s {
	item_t *v;
	size_t  n, cap;
	char   *arena;
	size_t  used, size;
} batch_t;

static bool
stopping(bc_disk_t *t)
{
	return atomic_load_explicit(&t->scan_stop, memory_order_relaxed);
}

static item_t *
batch_push(batch_t *b, uint64_t hash)
{
	if (b->n == b->cap) {
		size_t  cap = b->cap > 0 ? b->cap * 2 : 256;
		item_t *v = realloc(b->v, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		b->v = v;
		b->cap = cap;
	}
	memset(&b->v[b->n], 0, sizeof(b->v[b->n]));
	b->v[b->n].hash = hash;
	return &b->v[b->n++];
}

/* Copies h's bucket and key into the arena for it. */
static bool
batch_name(batch_t *b, item_t *it, const bc_disk_hdr_t *h)
{
	size_t bl = strlen(h->bucket), kl = strlen(h->key);

	if (b->used + bl + kl + 2 > b->size) {
		size_t size = (b->size > 0 ? b->size * 2 : 4096) + bl + kl + 2;
		char  *a = realloc(b->arena, size);

		if (a == NULL)
			return false;
		b->arena = a;
		b->size = size;
	}
	memcpy(b->arena + b->used, h->bucket, bl + 1);
	memcpy(b->arena + b->used + bl + 1, h->key, kl + 1);
	it->name = b->used;
	b->used += bl + kl + 2;
	return true;
}

static void
batch_clear(batch_t *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].e);
	b->n = 0;
	b->used = 0;
}

/* Lists leaf d's names: our files (16 hex digits under their prefix)
 * into b; stale temp files are removed when clean (once per leaf: phase
 * 1 for chunks, phase 2 for metadata). */
static void
list_leaf(bc_disk_t *t, DIR *d, const char *prefix, bool sizes, bool clean,
    batch_t *b)
{
	struct dirent *de;
	struct stat    st;
	char           token[BC_DISK_TOKEN_LEN + 1];
	uint64_t       hash;
	item_t        *it;

	while (!stopping(t) && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (bc_disk_tmp_name(de->d_name, token)) {
			if (clean && strcmp(token, t->token) != 0 &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0)
				atomic_fetch_add(&t->scan_removed, 1);
			continue;
		}
		if (!bc_disk_name_hash(de->d_name, &hash) ||
		    memcmp(de->d_name, prefix, 3) != 0 ||
		    (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
			continue;   /* not ours */
		if (sizes) {
			if (fstatat(dirfd(d), de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
		}
		it = batch_push(b, hash);
		if (it == NULL)
			break;
		if (sizes) {
			it->size = bc_disk_blocks((uint64_t)st.st_size);
			it->e = calloc(1, sizeof(*it->e));
			if (it->e == NULL) {
				b->n--;
				break;
			}
		}
	}
}

/* ---- phase 1: sizes ---------------------------------------------------- */

static void
index_batch(bc_disk_t *t, batch_t *b)
{
	bc_policy_ctx_t ctx = bc_disk_ctx(NULL);
	uint64_t        added = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < b->n; i++) {
		item_t          *it = &b->v[i];
		bc_disk_entry_t *e = it->e;

		if (bc_disk_do_chunk(t, it->hash) != NULL ||
		    bc_htab_first(&t->tombs, it->hash) != NULL)
			continue;
		e->kind = BC_DISK_CHUNK;
		e->hash = it->hash;
		e->pol.size = it->size;
		if (bc_disk_do_add(t, e, NULL, NULL, &ctx) == 0) {
			it->e = NULL;
			added++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_add(&t->scan_files, added);
	batch_clear(b);
}

/* ---- phase 2: headers --------------------------------------------------- */

/* Keeps the items whose entries are still bare (remembering their gen). */
static void
keep_bare(bc_disk_t *t, batch_t *b)
{
	size_t n = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < b->n; i++) {
		bc_disk_entry_t *e = bc_disk_do_chunk(t, b->v[i].hash);

		if (e == NULL || e->obj != NULL)
			continue;
		b->v[i].gen = e->gen;
		b->v[n++] = b->v[i];
	}
	pthread_mutex_unlock(&t->lock);
	b->n = n;
}

/* Attaches the bare chunks whose headers were read, drops those whose
 * files were damaged or gone, and removes what was deleted meanwhile. */
static void
attach_batch(bc_disk_t *t, batch_t *b)
{
	bc_disk_unlinks_t u = { 0 };

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < b->n; i++) {
		item_t          *it = &b->v[i];
		bc_disk_entry_t *e = bc_disk_do_chunk(t, it->hash);
		const char      *bucket, *key;

		if (e == NULL || e->gen != it->gen || e->obj != NULL)
			continue;   /* changed since: the tier's now */
		if (it->rv == 0) {
			bucket = b->arena + it->name;
			key = bucket + strlen(bucket) + 1;
			if (!bc_disk_do_filtered(t, bucket, key)) {
				(void)bc_disk_do_attach(t, e, bucket, key,
				    it->index);
				continue;
			}
		}
		bc_disk_do_remove(t, e, it->rv == BC_ENOENT ? NULL : &u);
	}
	pthread_mutex_unlock(&t->lock);
	for (size_t i = 0; i < u.n; i++)
		if (bc_disk_unlink_unindexed(t, u.v[i].kind, u.v[i].hash))
			atomic_fetch_add(&t->scan_removed, 1);
	free(u.v);
	batch_clear(b);
}

static void
read_chunk_headers(bc_disk_t *t, DIR *d, batch_t *b, bc_disk_file_t *f)
{
	char name[17];

	keep_bare(t, b);
	for (size_t i = 0; i < b->n && !stopping(t); i++) {
		item_t *it = &b->v[i];

		snprintf(name, sizeof(name), "%016" PRIx64, it->hash);
		it->rv = bc_disk_read(dirfd(d), name, BC_DISK_CHUNK, it->hash,
		    false, false, f);
		if (it->rv == 0 && !batch_name(b, it, &f->h))
			it->rv = BC_ENOMEM;
		if (it->rv == BC_EPROTO)
			BC_TIER_COUNT(&t->base, corrupt, 1);
		it->index = f->h.index;
		if (it->rv != 0 && it->rv != BC_EPROTO && it->rv != BC_ENOENT)
			it->rv = 1;   /* left bare (an I/O error): kept */
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].rv == 1)
			b->v[i].gen = 0;   /* matches no entry: untouched */
	attach_batch(t, b);
}

/* Indexes the metadata files of a leaf directory. */
static void
read_metas(bc_disk_t *t, DIR *d, batch_t *b, bc_disk_file_t *f)
{
	bc_disk_unlinks_t u = { 0 };
	bc_policy_ctx_t   ctx = bc_disk_ctx(NULL);
	char              name[17];
	uint64_t          added = 0;
	size_t            n = 0;

	for (size_t i = 0; i < b->n && !stopping(t); i++) {
		item_t *it = &b->v[i];
		int     rv;

		snprintf(name, sizeof(name), "%016" PRIx64, it->hash);
		rv = bc_disk_read(dirfd(d), name, BC_DISK_META, it->hash, false,
		    false, f);
		if (rv == BC_EPROTO) {
			BC_TIER_COUNT(&t->base, corrupt, 1);
			bc_disk_victim(&u, BC_DISK_META, it->hash);
		}
		if (rv != 0 || !batch_name(b, it, &f->h))
			continue;
		it->size = bc_disk_blocks(f->fsize);
		it->e = calloc(1, sizeof(*it->e));
		if (it->e != NULL)
			b->v[n++] = *it;
	}
	b->n = n;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < b->n; i++) {
		item_t          *it = &b->v[i];
		const char      *bucket = b->arena + it->name;
		const char      *key = bucket + strlen(bucket) + 1;
		bc_disk_obj_t   *o = bc_disk_do_obj(t, it->hash, bucket, key);
		bc_disk_entry_t *e = it->e;

		if (o != NULL && o->meta != NULL)
			continue;
		if (bc_disk_do_filtered(t, bucket, key)) {
			bc_disk_victim(&u, BC_DISK_META, it->hash);
			continue;
		}
		e->kind = BC_DISK_META;
		e->hash = it->hash;
		e->pol.size = it->size;
		e->pol.key = bc_policy_key_hash(bucket, key, UINT32_MAX);
		ctx.dataset = bucket;
		if (bc_disk_do_add(t, e, bucket, key, &ctx) == 0) {
			it->e = NULL;
			added++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_add(&t->scan_files, added);
	for (size_t i = 0; i < u.n; i++)
		if (bc_disk_unlink_unindexed(t, u.v[i].kind, u.v[i].hash))
			atomic_fetch_add(&t->scan_removed, 1);
	free(u.v);
	batch_clear(b);
}

/* ---- the walk ------------------------------------------------------------ */

/* Runs one unit: phase 1 over c/xx, or phase 2 over c/xx or o/xx. */
static void
scan_unit(bc_disk_t *t, unsigned unit, batch_t *b, bc_disk_file_t *f)
{
	int            phase = unit < P1_UNITS ? 1 : 2;
	unsigned       i = unit % TOPS;
	uint8_t        kind = unit < 2 * TOPS ? BC_DISK_CHUNK : BC_DISK_META;
	char           path[8], prefix[4];
	struct dirent *de;
	DIR           *top, *leaf;
	int            fd;

	snprintf(path, sizeof(path), "%c/%02x",
	    kind == BC_DISK_CHUNK ? 'c' : 'o', i);
	fd = openat(t->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	top = fdopendir(fd);
	if (top == NULL) {
		close(fd);
		return;
	}
	memcpy(prefix, path + 2, 2);
	while (!stopping(t) && (de = readdir(top)) != NULL) {
		if (strlen(de->d_name) != 1 || de->d_name[0] == '.')
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
		prefix[2] = de->d_name[0];
		prefix[3] = '\0';
		list_leaf(t, leaf, prefix, phase == 1, phase == 1 ||
		    kind == BC_DISK_META, b);
		if (phase == 1)
			index_batch(t, b);
		else if (kind == BC_DISK_CHUNK)
			read_chunk_headers(t, leaf, b, f);
		else
			read_metas(t, leaf, b, f);
		closedir(leaf);
	}
	closedir(top);
}

/* Lock held: evicts beyond the capacity into u (phase ends). */
static size_t
do_trim(bc_disk_t *t, bc_disk_unlinks_t *u)
{
	(void)bc_disk_do_evict(t, 0, u);
	return u->n;
}

/* Queues u's unlinks, counted in t->writing from before the lock is
 * dropped (the caller incremented it) so that flush waits for them. */
static void
trim_unlink(bc_disk_t *t, bc_disk_unlinks_t *u)
{
	bc_disk_unlink_later(t, u);
	pthread_mutex_lock(&t->lock);
	t->writing--;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

/* A phase-1 unit ended; the last one ends phase 1. */
static void
p1_done(bc_disk_t *t)
{
	bc_disk_unlinks_t u = { 0 };
	bool              last;

	pthread_mutex_lock(&t->lock);
	last = --t->scan_p1_left == 0;
	if (last) {
		if (!stopping(t))
			do_trim(t, &u);
		t->indexed = true;
		t->index_ns = bc_mono_ns() - t->scan_start;
		t->writing++;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->lock);
	if (last)
		trim_unlink(t, &u);
}

/* The last scan thread: the scan is over. */
static void
scan_end(bc_disk_t *t, bool stopped)
{
	bc_disk_unlinks_t u = { 0 };
	uint64_t          files = atomic_load(&t->scan_files);
	uint64_t          usage, ns, ins;
	size_t            evicted = 0;

	pthread_mutex_lock(&t->lock);
	if (!stopped)
		evicted = do_trim(t, &u);
	pthread_mutex_unlock(&t->lock);
	/* the files trimmed go before free space is read, which would count
	 * them as the tier's otherwise */
	for (size_t i = 0; i < u.n; i++)
		(void)bc_disk_unlink_unindexed(t, u.v[i].kind, u.v[i].hash);
	free(u.v);
	if (!stopped)
		(void)bc_disk_space_check(t, NULL);
	pthread_mutex_lock(&t->lock);
	t->scanning = false;
	while (t->filters != NULL) {
		bc_disk_filter_t *f = t->filters;

		t->filters = f->next;
		free(f);
	}
	t->scan_ns = bc_mono_ns() - t->scan_start;
	ns = t->scan_ns;
	ins = t->index_ns;
	usage = t->usage;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	if (!stopped)
		BC_INFO("tier %s: indexed %" PRIu64 " files (%" PRIu64
		    " MiB) in %" PRIu64 " ms, headers read in %" PRIu64
		    " ms; %zu beyond the capacity evicted", t->base.name,
		    files, usage >> 20, ins / 1000000u, ns / 1000000u,
		    evicted);
}

static void *
scan_main(void *arg)
{
	bc_disk_t      *t = arg;
	batch_t         b = { 0 };
	bc_disk_file_t *f = malloc(sizeof(*f));
	int             phase = 0;
	unsigned        unit;
	bool            last;

	while (f != NULL && !stopping(t)) {
		unit = atomic_fetch_add(&t->scan_next, 1);
		if (unit >= ALL_UNITS)
			break;
		if (unit >= P1_UNITS && phase < 2) {
			pthread_mutex_lock(&t->lock);
			while (!t->indexed && !stopping(t))
				pthread_cond_wait(&t->cv, &t->lock);
			pthread_mutex_unlock(&t->lock);
			if (stopping(t))
				break;
		}
		if ((unit < P1_UNITS ? 1 : 2) != phase) {
			phase = unit < P1_UNITS ? 1 : 2;
			if (bc_disk_scan_gate != NULL)
				bc_disk_scan_gate(t, phase);
		}
		scan_unit(t, unit, &b, f);
		if (unit < P1_UNITS)
			p1_done(t);
	}
	if (f == NULL)
		BC_WARN("tier %s: scan: out of memory", t->base.name);
	batch_clear(&b);
	free(f);
	free(b.v);
	free(b.arena);
	pthread_mutex_lock(&t->lock);
	last = --t->scan_live == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		scan_end(t, stopping(t));
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
	t->scan_p1_left = P1_UNITS;
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
	pthread_mutex_lock(&t->lock);
	pthread_cond_broadcast(&t->cv);   /* threads waiting for phase 1 */
	pthread_mutex_unlock(&t->lock);
	for (size_t i = 0; i < t->nscan; i++)
		pthread_join(t->scan_threads[i], NULL);
	t->nscan = 0;
}
