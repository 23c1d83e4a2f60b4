/*
 * tier_disk.c — the disk tier's ops (tier_disk.h): what changes the index
 * (put, meta_put, del, del_object, capacity), open and close; the file
 * work they start runs on the work pool (tier_disk_write.c), and so do
 * get and meta_get (tier_disk_read.c).
 *
 * Every op changes the index (tier_disk_index.c) under t->lock and never
 * waits on the disk:
 * - put/meta_put add an entry whose job is the write (the job holds the
 *   chunk, or a copy of the blob, until written); a replaced entry's file
 *   is overwritten by the new one's rename.
 * - del, del_object and evictions drop entries at once and queue unlinks.
 *   While the start-up scan runs, del leaves a tombstone and del_object a
 *   filter, so files it has not reached yet stay deleted.
 *
 * Counters: writes counts puts accepted (their files are written later);
 * write_failures those whose write then failed. Metadata ops count only
 * write_failures, corrupt and errors. close waits for the jobs in flight
 * (t->writing, t->reading); bc_tier_disk_flush for t->writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_hash.h"

#define COUNT(t, field, n) BC_TIER_COUNT(&(t)->base, field, n)

/* ---- puts --------------------------------------------------------------- */

static int
disk_put(bc_tier_t *bt, bc_chunk_t *c, const bc_policy_ctx_t *ctx)
{
	bc_disk_t         *t = bc_disk_of(bt);
	const char        *bucket = c->id;
	const char        *key = bucket + strlen(bucket) + 1;
	const char        *etag = key + strlen(key) + 1;
	size_t             hl = bc_disk_hdr_len(bucket, key, etag);
	uint64_t           size = bc_disk_blocks(hl + c->len);
	bc_disk_unlinks_t  u = { 0 };
	bc_disk_entry_t   *e, *old;
	bc_disk_write_t   *w;
	int                rv;

	if (hl > BC_DISK_HDR_MAX) {
		COUNT(t, rejects, 1);
		return BC_E2BIG;
	}
	e = calloc(1, sizeof(*e));
	w = calloc(1, sizeof(*w));
	if (e == NULL || w == NULL) {
		free(e);
		free(w);
		COUNT(t, write_failures, 1);
		return BC_ENOMEM;
	}
	e->kind = BC_DISK_CHUNK;
	e->hash = c->hash;
	e->index = c->index;
	e->pol.size = size;
	e->pol.fetch_us = c->fetch_us;
	e->pol.key = bc_policy_key_hash(bucket, key, c->index);
	w->t = t;
	w->kind = BC_DISK_CHUNK;
	w->hash = c->hash;
	w->c = c;
	w->body = c->data;
	w->len = c->len;
	w->size = size;
	w->h = (bc_disk_hdr_t){ .kind = BC_DISK_CHUNK, .index = c->index,
	    .bucket = bucket, .key = key, .etag = etag };
	pthread_mutex_lock(&t->lock);
	if (size > t->capacity || !t->pol_ops->admit(t->pol, &e->pol, ctx)) {
		rv = BC_E2BIG;
		goto reject;
	}
	old = bc_disk_do_chunk(t, c->hash);
	if (old != NULL) {
		/* the new file replaces the old one at the same path */
		bc_disk_do_remove(t, old, NULL);
		COUNT(t, deletes, 1);
	}
	rv = bc_disk_do_evict(t, size, &u);
	if (rv < 0) {
		if (old != NULL)
			bc_disk_victim(&u, BC_DISK_CHUNK, c->hash);
		goto reject;
	}
	e->job = w;
	rv = bc_disk_do_add(t, e, bucket, key, ctx);
	if (rv < 0) {
		pthread_mutex_unlock(&t->lock);
		COUNT(t, write_failures, 1);
		goto fail;
	}
	bc_chunk_ref(c);
	t->writing++;
	COUNT(t, writes, 1);
	COUNT(t, bytes_written, size);
	pthread_mutex_unlock(&t->lock);
	w->unlink_first = u;
	return bc_disk_write_start(t, w);
reject:
	pthread_mutex_unlock(&t->lock);
	COUNT(t, rejects, 1);
fail:
	bc_disk_unlink_later(t, &u);
	free(e);
	free(w);
	return rv;
}

static int
disk_meta_put(bc_tier_t *bt, const char *bucket, const char *key,
    const void *blob, size_t len)
{
	bc_disk_t         *t = bc_disk_of(bt);
	size_t             bl = strlen(bucket), kl = strlen(key);
	size_t             hl = bc_disk_hdr_len(bucket, key, "");
	uint64_t           size = bc_disk_blocks(hl + len);
	uint64_t           hash = bc_disk_obj_hash(bucket, key);
	bc_policy_ctx_t    ctx = bc_disk_ctx(bucket);
	bc_disk_unlinks_t  u = { 0 };
	bc_disk_entry_t   *e;
	bc_disk_obj_t     *o;
	bc_disk_write_t   *w;
	char              *p;
	int                rv;

	if (hl > BC_DISK_HDR_MAX)
		return BC_E2BIG;
	e = calloc(1, sizeof(*e));
	w = calloc(1, sizeof(*w) + bl + kl + 2 + len);
	if (e == NULL || w == NULL) {
		free(e);
		free(w);
		COUNT(t, write_failures, 1);
		return BC_ENOMEM;
	}
	p = w->strs;
	memcpy(p, bucket, bl + 1);
	memcpy(p + bl + 1, key, kl + 1);
	if (len > 0)
		memcpy(p + bl + kl + 2, blob, len);
	w->t = t;
	w->kind = BC_DISK_META;
	w->hash = hash;
	w->body = p + bl + kl + 2;
	w->len = len;
	w->size = size;
	w->h = (bc_disk_hdr_t){ .kind = BC_DISK_META, .bucket = p,
	    .key = p + bl + 1, .etag = "" };
	e->kind = BC_DISK_META;
	e->hash = hash;
	e->pol.size = size;
	e->pol.key = bc_policy_key_hash(bucket, key, UINT32_MAX);
	pthread_mutex_lock(&t->lock);
	if (size > t->capacity || !t->pol_ops->admit(t->pol, &e->pol, &ctx)) {
		rv = BC_E2BIG;
		goto fail;
	}
	o = bc_disk_do_obj(t, hash, bucket, key);
	if (o != NULL && o->meta != NULL)   /* replaced at the same path */
		bc_disk_do_remove(t, o->meta, NULL);
	rv = bc_disk_do_evict(t, size, &u);
	if (rv < 0) {
		bc_disk_victim(&u, BC_DISK_META, hash);
		goto fail;
	}
	e->job = w;
	rv = bc_disk_do_add(t, e, bucket, key, &ctx);
	if (rv < 0) {
		COUNT(t, write_failures, 1);
		goto fail;
	}
	t->writing++;
	pthread_mutex_unlock(&t->lock);
	w->unlink_first = u;
	return bc_disk_write_start(t, w);
fail:
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	free(e);
	free(w);
	return rv;
}

/* The index names k's file (a chunk being written counts: it is served
 * from memory until then). Files the start-up scan has not indexed yet
 * are not known. */
static bool
disk_has(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	bc_disk_t *t = bc_disk_of(bt);
	bool       found;

	pthread_mutex_lock(&t->lock);
	found = bc_disk_do_chunk(t, bc_chunk_key_hash(k)) != NULL;
	pthread_mutex_unlock(&t->lock);
	return found;
}

/* ---- deletes ----------------------------------------------------------- */

static int
disk_del(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	bc_disk_t         *t = bc_disk_of(bt);
	uint64_t           hash = bc_chunk_key_hash(k);
	bc_disk_unlinks_t  u = { 0 };
	bc_disk_entry_t   *e;

	pthread_mutex_lock(&t->lock);
	e = bc_disk_do_chunk(t, hash);
	if (e != NULL) {
		bc_disk_do_remove(t, e, &u);
		COUNT(t, deletes, 1);
	}
	if (t->scanning) {
		/* its file may be there, not indexed yet */
		if (e == NULL)
			bc_disk_victim(&u, BC_DISK_CHUNK, hash);
		if (bc_htab_first(&t->tombs, hash) == NULL) {
			bc_disk_tomb_t *tb = malloc(sizeof(*tb));

			/* out of memory: the scan may index it again, and
			 * its header check finds it gone or stale */
			if (tb != NULL)
				bc_htab_insert(&t->tombs, &tb->hn, hash);
		}
	}
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return e != NULL ? 0 : BC_ENOENT;
}

/* Lock held: drops o's chunks (returns how many) and metadata; o is gone
 * after. */
static size_t
do_drop_obj(bc_disk_t *t, bc_disk_obj_t *o, bc_disk_unlinks_t *u)
{
	bc_disk_entry_t *meta = o->meta;
	size_t           n = 0;
	bc_list_t       *l;

	BC_LIST_FOREACH(l, &o->chunks)
		n++;
	for (size_t i = 0; i < n; i++)
		bc_disk_do_remove(t, BC_CONTAINER_OF(bc_list_first(&o->chunks),
		    bc_disk_entry_t, olink), u);
	if (meta != NULL)
		bc_disk_do_remove(t, meta, u);
	return n;
}

/* Lock held: remembers a del_object for the scan. */
static void
do_add_filter(bc_disk_t *t, const char *bucket, const char *key,
    const char *prefix)
{
	const char       *s = key != NULL ? key : prefix;
	size_t            bl = strlen(bucket), sl = strlen(s);
	bc_disk_filter_t *f = malloc(sizeof(*f) + bl + sl + 2);

	if (f == NULL)
		return;
	memcpy(f->strs, bucket, bl + 1);
	memcpy(f->strs + bl + 1, s, sl + 1);
	f->bucket = f->strs;
	f->key = key != NULL ? f->strs + bl + 1 : NULL;
	f->prefix = key != NULL ? NULL : f->strs + bl + 1;
	f->next = t->filters;
	t->filters = f;
}

static size_t
disk_del_object(bc_tier_t *bt, const char *bucket, const char *key,
    const char *prefix)
{
	bc_disk_t         *t = bc_disk_of(bt);
	bc_disk_unlinks_t  u = { 0 };
	size_t             n = 0, blen = strlen(bucket), plen, i = 0;
	bc_disk_obj_t     *o;

	if (prefix == NULL)
		prefix = "";
	plen = strlen(prefix);
	pthread_mutex_lock(&t->lock);
	if (key != NULL) {
		uint64_t h = bc_disk_obj_hash(bucket, key);

		o = bc_disk_do_obj(t, h, bucket, key);
		if (o != NULL)
			n = do_drop_obj(t, o, &u);
		if (t->scanning)
			bc_disk_victim(&u, BC_DISK_META, h);
	} else {
		bc_hnode_t *hn, *next;

		/* a drop takes out o alone: the walk goes on from next */
		BC_HTAB_FOREACH(&t->objs, i, hn, next) {
			o = BC_CONTAINER_OF(hn, bc_disk_obj_t, hn);
			if (o->blen == blen &&
			    memcmp(o->name, bucket, blen) == 0 &&
			    strncmp(o->name + blen + 1, prefix, plen) == 0)
				n += do_drop_obj(t, o, &u);
		}
	}
	if (t->scanning)
		do_add_filter(t, bucket, key, prefix);
	COUNT(t, deletes, n);
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return n;
}

/* ---- capacity ---------------------------------------------------------- */

static uint64_t
disk_capacity(bc_tier_t *bt)
{
	bc_disk_t *t = bc_disk_of(bt);
	uint64_t   v;

	pthread_mutex_lock(&t->lock);
	v = t->capacity;
	pthread_mutex_unlock(&t->lock);
	return v;
}

static int
disk_set_capacity(bc_tier_t *bt, uint64_t bytes)
{
	bc_disk_t         *t = bc_disk_of(bt);
	bc_disk_unlinks_t  u = { 0 };
	int                rv;

	pthread_mutex_lock(&t->lock);
	t->configured = bytes;
	rv = bc_disk_do_apply_capacity(t, &u);
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return rv;
}

static uint64_t
disk_usage(bc_tier_t *bt)
{
	bc_disk_t *t = bc_disk_of(bt);
	uint64_t   v;

	pthread_mutex_lock(&t->lock);
	v = t->usage;
	pthread_mutex_unlock(&t->lock);
	return v;
}

static uint64_t
disk_evictions(bc_tier_t *bt)
{
	return atomic_load(&bt->stats.evictions);
}

void
bc_tier_disk_info(bc_tier_t *bt, bc_tier_disk_info_t *out)
{
	bc_disk_t *t = bc_disk_of(bt);

	pthread_mutex_lock(&t->lock);
	out->scanning = t->scanning;
	out->indexed = t->indexed;
	out->index_ns = t->index_ns;
	out->scan_ns = t->scan_ns;
	out->chunks = t->nchunks;
	out->metas = t->nmetas;
	out->usage = t->usage;
	out->capacity = t->capacity;
	out->configured = t->configured;
	out->writing = t->writing;
	pthread_mutex_unlock(&t->lock);
	out->scan_files = atomic_load(&t->scan_files);
	out->scan_removed = atomic_load(&t->scan_removed);
}

int
bc_tier_disk_check_space(bc_tier_t *bt)
{
	return bc_disk_space_check(bc_disk_of(bt), NULL);
}

void
bc_tier_disk_wait_scan(bc_tier_t *bt)
{
	bc_disk_t *t = bc_disk_of(bt);

	pthread_mutex_lock(&t->lock);
	while (t->scanning)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

void
bc_tier_disk_flush(bc_tier_t *bt)
{
	bc_disk_t *t = bc_disk_of(bt);

	pthread_mutex_lock(&t->lock);
	while (t->writing > 0)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

/* ---- open and close ---------------------------------------------------- */

static void
make_token(bc_disk_t *t)
{
	struct timespec ts;
	uint64_t        h = BC_HASH_INIT;
	pid_t           pid = getpid();
	void           *self = t;

	clock_gettime(CLOCK_REALTIME, &ts);
	h = bc_hash(h, &pid, sizeof(pid));
	h = bc_hash(h, &ts, sizeof(ts));
	h = bc_hash(h, &self, sizeof(self));
	snprintf(t->token, sizeof(t->token), "%08" PRIx32,
	    (uint32_t)(h ^ h >> 32));
}

/* Checks dir and takes it: the top directories, a write probe, the lock.
 * Returns 0 or a negative code with the reason in err. */
static int
take_dir(bc_disk_t *t, char *err, size_t errlen)
{
	char probe[32];
	int  fd, e;

	t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dirfd < 0) {
		e = errno;
		bc_errf(err, errlen, "disk dir %s: %s", t->dir, strerror(e));
		return -e;
	}
	snprintf(probe, sizeof(probe), ".probe.%s", t->token);
	fd = openat(t->dirfd, probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600);
	if (fd < 0 && errno != ENOSPC && errno != EDQUOT) {
		e = errno;
		bc_errf(err, errlen, "disk dir %s is not writable: %s", t->dir,
		    strerror(e));
		return e == EACCES || e == EROFS || e == EPERM ? BC_EACCES : -e;
	}
	if (fd >= 0) {
		close(fd);
		unlinkat(t->dirfd, probe, 0);
	}
	if ((mkdirat(t->dirfd, "c", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(t->dirfd, "o", 0755) < 0 && errno != EEXIST)) {
		e = errno;
		bc_errf(err, errlen, "disk dir %s: %s", t->dir, strerror(e));
		return -e;
	}
	t->lockfd = openat(t->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC,
	    0644);
	if (t->lockfd < 0) {
		e = errno;
		bc_errf(err, errlen, "disk dir %s: lock: %s", t->dir,
		    strerror(e));
		return -e;
	}
	if (flock(t->lockfd, LOCK_EX | LOCK_NB) < 0) {
		bc_errf(err, errlen, "disk dir %s is in use by another process",
		    t->dir);
		return BC_EAGAIN;
	}
	return 0;
}

static void disk_close(bc_tier_t *bt);

int
bc_tier_disk_open(const bc_tier_opts_t *o, bc_tier_t **out, char *err,
    size_t errlen)
{
	bc_disk_t  *t;
	struct stat st;
	int         rv;

	if (o == NULL || out == NULL || o->loop == NULL || o->dir == NULL ||
	    o->dir[0] == '\0') {
		bc_errf(err, errlen, "disk tier: %s",
		    o != NULL && o->loop == NULL ? "no loop" : "no directory");
		return BC_EINVAL;
	}
	if (stat(o->dir, &st) < 0) {
		rv = -errno;
		bc_errf(err, errlen, "disk dir %s: %s", o->dir,
		    rv == BC_ENOENT ? "no such directory" : strerror(-rv));
		return rv;
	}
	if (!S_ISDIR(st.st_mode)) {
		bc_errf(err, errlen, "disk dir %s is not a directory", o->dir);
		return BC_EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto nomem;
	bc_tier_init(&t->base, &bc_tier_disk, o->name, t);
	t->loop = o->loop;
	t->dirfd = -1;
	t->lockfd = -1;
	t->capacity = o->capacity;
	t->configured = o->capacity;
	t->fs_cap = UINT64_MAX;
	t->pol_ops = o->policy != NULL ? o->policy : &bc_policy_lru;
	for (int i = 0; i < BC_DISK_STRIPES; i++)
		pthread_mutex_init(&t->stripes[i], NULL);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cv, NULL);
	make_token(t);
	t->dir = strdup(o->dir);
	t->pol = t->pol_ops->new(&(bc_policy_opts_t){ .capacity =
	    o->capacity, .oracle = o->oracle });
	if (t->dir == NULL || t->pol == NULL ||
	    bc_htab_init(&t->chunks, 64, false) < 0 ||
	    bc_htab_init(&t->objs, 64, false) < 0 ||
	    bc_htab_init(&t->tombs, 16, false) < 0)
		goto nomem;
	rv = take_dir(t, err, errlen);
	if (rv < 0)
		goto fail;
	rv = bc_disk_scan_start(t);
	if (rv < 0) {
		bc_errf(err, errlen, "disk dir %s: scan: %s", t->dir,
		    bc_strerror(rv));
		goto fail;
	}
	bc_disk_space_start(t);
	*out = &t->base;
	return 0;
nomem:
	rv = BC_ENOMEM;
	bc_errf(err, errlen, "disk tier: out of memory");
fail:
	if (t != NULL)
		disk_close(&t->base);
	return rv;
}

static int
disk_open(const bc_tier_opts_t *o, bc_tier_t **out)
{
	return bc_tier_disk_open(o, out, NULL, 0);
}

/* No op may run on t during or after close; no get may be in flight. */
static void
disk_close(bc_tier_t *bt)
{
	bc_disk_t  *t;
	bc_hnode_t *hn, *next;
	size_t      b;

	if (bt == NULL)
		return;
	t = bc_disk_of(bt);
	bc_disk_scan_stop(t);
	bc_disk_space_stop(t);
	pthread_mutex_lock(&t->lock);
	while (t->writing > 0 || t->reading > 0)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
	BC_HTAB_FOREACH(&t->chunks, b, hn, next) {
		bc_disk_entry_t *e = BC_CONTAINER_OF(hn, bc_disk_entry_t, hn);

		t->pol_ops->on_remove(t->pol, &e->pol);
		free(e);
	}
	BC_HTAB_FOREACH(&t->objs, b, hn, next) {
		bc_disk_obj_t *ob = BC_CONTAINER_OF(hn, bc_disk_obj_t, hn);

		if (ob->meta != NULL) {
			t->pol_ops->on_remove(t->pol, &ob->meta->pol);
			free(ob->meta);
		}
		free(ob);
	}
	while (t->filters != NULL) {
		bc_disk_filter_t *f = t->filters;

		t->filters = f->next;
		free(f);
	}
	BC_HTAB_FOREACH(&t->tombs, b, hn, next)
		free(BC_CONTAINER_OF(hn, bc_disk_tomb_t, hn));
	bc_htab_fini(&t->chunks);
	bc_htab_fini(&t->objs);
	bc_htab_fini(&t->tombs);
	if (t->pol != NULL)
		t->pol_ops->free(t->pol);
	if (t->lockfd >= 0)
		close(t->lockfd);
	if (t->dirfd >= 0)
		close(t->dirfd);
	for (int i = 0; i < BC_DISK_STRIPES; i++)
		pthread_mutex_destroy(&t->stripes[i]);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cv);
	free(t->scan_threads);
	free(t->dir);
	free(t);
}

const bc_tier_ops_t bc_tier_disk = {
	.name = "disk",
	.flags = 0,
	.open = disk_open,
	.get = bc_disk_get,
	.open_file = bc_disk_open_file,
	.put = disk_put,
	.del = disk_del,
	.del_object = disk_del_object,
	.capacity = disk_capacity,
	.set_capacity = disk_set_capacity,
	.usage = disk_usage,
	.evictions = disk_evictions,
	.meta_put = disk_meta_put,
	.meta_get = bc_disk_meta_get,
	.close = disk_close,
	.has = disk_has,
};
