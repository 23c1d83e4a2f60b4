/*
 * tier_disk.c — the disk tier's ops (tier_disk.h) and its file jobs.
 *
 * Every op changes the index (tier_disk_index.c) under t->lock and hands
 * the file work to the loop's work pool (bc_loop_work), so no op waits on
 * the disk:
 * - put/meta_put add an entry whose job is the write: the job holds the
 *   chunk (or a copy of the blob), writes a temp file, and renames it into
 *   place if the entry still names it (tier_disk_int.h has the rule);
 *   until then a get copies the bytes from the job. A write that fails
 *   drops its entry, counts write_failures and marks the tier down.
 * - del, del_object and evictions drop entries at once and queue unlinks,
 *   which remove a file only while no entry names it.
 * - get/meta_get read on the pool (a hit keeps the file open in the chunk
 *   for sendfile) and call back from the work's after(), on the loop
 *   thread. A damaged file is removed and counted (stats.corrupt) and the
 *   answer is a miss; a file gone from under its entry drops the entry.
 *   While the start-up scan runs, a key not indexed yet is read from the
 *   file its hash names; what the caller deleted meanwhile (tombstones,
 *   del_object filters) stays deleted.
 *
 * Counters: writes counts puts accepted (their files are written later);
 * write_failures those whose write then failed. Metadata ops count only
 * write_failures, corrupt and errors. writing/reading count jobs in
 * flight: close waits for both, bc_tier_disk_flush for writing.
 */
#include <assert.h>
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
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define COUNT(t, field, n) BC_TIER_COUNT(&(t)->base, field, n)

static bc_disk_t *
disk_of(bc_tier_t *bt)
{
	assert(bt->ops == &bc_tier_disk);
	return bt->priv;
}

static pthread_mutex_t *
stripe(bc_disk_t *t, uint64_t hash)
{
	return &t->stripes[hash % BC_DISK_STRIPES];
}

/* A job counted in *counter ended. */
static void
job_done(bc_disk_t *t, size_t *counter)
{
	pthread_mutex_lock(&t->lock);
	(*counter)--;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

/* ---- unlinks ----------------------------------------------------------- */

bool
bc_disk_unlink_unindexed(bc_disk_t *t, uint8_t kind, uint64_t hash)
{
	char path[BC_DISK_PATH_MAX];
	bool indexed, gone = false;

	bc_disk_path(path, kind, hash, NULL, 0);
	pthread_mutex_lock(stripe(t, hash));
	pthread_mutex_lock(&t->lock);
	indexed = bc_disk_do_indexed(t, kind, hash);
	pthread_mutex_unlock(&t->lock);
	if (!indexed)
		gone = unlinkat(t->dirfd, path, 0) == 0;
	pthread_mutex_unlock(stripe(t, hash));
	return gone;
}

typedef struct unlink_job_s {
	bc_disk_t         *t;
	bc_disk_unlinks_t  u;
} unlink_job_t;

static void
unlink_work(void *arg)
{
	unlink_job_t *j = arg;
	bc_disk_t    *t = j->t;

	for (size_t i = 0; i < j->u.n; i++)
		bc_disk_unlink_unindexed(t, j->u.v[i].kind, j->u.v[i].hash);
	free(j->u.v);
	free(j);
	job_done(t, &t->writing);
}

void
bc_disk_unlink_later(bc_disk_t *t, bc_disk_unlinks_t *u)
{
	unlink_job_t *j = NULL;

	if (u->n > 0)
		j = malloc(sizeof(*j));
	if (j == NULL) {
		/* nothing to do, or out of memory: the files stay until the
		 * next scan indexes them again */
		free(u->v);
		memset(u, 0, sizeof(*u));
		return;
	}
	j->t = t;
	j->u = *u;
	memset(u, 0, sizeof(*u));
	pthread_mutex_lock(&t->lock);
	t->writing++;
	pthread_mutex_unlock(&t->lock);
	if (bc_loop_work(t->loop, unlink_work, NULL, j) < 0) {
		free(j->u.v);
		free(j);
		job_done(t, &t->writing);
	}
}

/* ---- writes ------------------------------------------------------------ */

/* Lock held: the entry whose write w is, or NULL when it was dropped or
 * replaced since. */
static bc_disk_entry_t *
do_entry_of(bc_disk_t *t, const bc_disk_write_t *w)
{
	bc_disk_entry_t *e;

	if (w->kind == BC_DISK_CHUNK) {
		e = bc_disk_do_chunk(t, w->hash);
		return e != NULL && e->job == w ? e : NULL;
	}
	for (size_t i = bc_disk_tab_find(&t->objs, w->hash, BC_DISK_NONE);
	    i != BC_DISK_NONE; i = bc_disk_tab_find(&t->objs, w->hash, i)) {
		e = ((bc_disk_obj_t *)t->objs.slots[i].p)->meta;
		if (e != NULL && e->job == w)
			return e;
	}
	return NULL;
}

/* Stripe lock held: w failed; drops its entry (if still there) and the
 * file at path, which no entry names then. */
static void
write_failed(bc_disk_t *t, bc_disk_write_t *w, const char *path)
{
	bc_disk_entry_t *e;
	bool             stale;

	pthread_mutex_lock(&t->lock);
	e = do_entry_of(t, w);
	if (e != NULL)
		bc_disk_do_remove(t, e, NULL);
	stale = !bc_disk_do_indexed(t, w->kind, w->hash);
	pthread_mutex_unlock(&t->lock);
	if (stale)
		unlinkat(t->dirfd, path, 0);
}

static void
write_work(void *arg)
{
	bc_disk_write_t *w = arg;
	bc_disk_t       *t = w->t;
	bc_chunk_t      *c = w->c;
	bc_disk_entry_t *e;
	char             tmp[BC_DISK_PATH_MAX], path[BC_DISK_PATH_MAX];
	int              rv;

	bc_disk_path(tmp, w->kind, w->hash, t->token,
	    atomic_fetch_add(&t->seq, 1));
	bc_disk_path(path, w->kind, w->hash, NULL, 0);
	rv = bc_disk_write_tmp(t->dirfd, tmp, &w->h, w->body, w->len);
	pthread_mutex_lock(stripe(t, w->hash));
	if (rv < 0) {
		write_failed(t, w, path);
		goto out;
	}
	pthread_mutex_lock(&t->lock);
	e = do_entry_of(t, w);
	pthread_mutex_unlock(&t->lock);
	if (e == NULL) {
		unlinkat(t->dirfd, tmp, 0);
		goto out;
	}
	if (renameat(t->dirfd, tmp, t->dirfd, path) < 0) {
		rv = -errno;
		unlinkat(t->dirfd, tmp, 0);
		write_failed(t, w, path);
		goto out;
	}
	pthread_mutex_lock(&t->lock);
	e = do_entry_of(t, w);
	if (e != NULL)
		e->job = NULL;
	pthread_mutex_unlock(&t->lock);
out:
	pthread_mutex_unlock(stripe(t, w->hash));
	if (rv < 0) {
		COUNT(t, write_failures, 1);
		bc_tier_mark_down(&t->base, rv, bc_mono_ns());
	}
	free(w);
	bc_chunk_unref(c);
	job_done(t, &t->writing);
}

/* Hands w (its entry added, t->writing counted) to the pool. On failure
 * (the loop stopping) undoes both and returns the error. */
static int
write_start(bc_disk_t *t, bc_disk_write_t *w)
{
	bc_disk_entry_t *e;
	int              rv = bc_loop_work(t->loop, write_work, NULL, w);

	if (rv == 0)
		return 0;
	pthread_mutex_lock(&t->lock);
	e = do_entry_of(t, w);
	if (e != NULL)
		bc_disk_do_remove(t, e, NULL);
	pthread_mutex_unlock(&t->lock);
	COUNT(t, write_failures, 1);
	bc_chunk_unref(w->c);
	free(w);
	job_done(t, &t->writing);
	return rv;
}

static int
disk_put(bc_tier_t *bt, bc_chunk_t *c, const bc_policy_ctx_t *ctx)
{
	bc_disk_t         *t = disk_of(bt);
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
	if (rv < 0)
		goto reject;
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
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return write_start(t, w);
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
	bc_disk_t         *t = disk_of(bt);
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
	if (o != NULL && o->meta != NULL)
		bc_disk_do_remove(t, o->meta, NULL);
	rv = bc_disk_do_evict(t, size, &u);
	if (rv < 0)
		goto fail;
	e->job = w;
	rv = bc_disk_do_add(t, e, bucket, key, &ctx);
	if (rv < 0) {
		COUNT(t, write_failures, 1);
		goto fail;
	}
	t->writing++;
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return write_start(t, w);
fail:
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	free(e);
	free(w);
	return rv;
}

/* ---- reads ------------------------------------------------------------- */

typedef struct read_s {
	bc_disk_t          *t;
	bc_tier_get_t      *req;       /* a chunk's get, or */
	bc_tier_meta_get_t *mreq;      /* a metadata get */
	uint64_t            hash, gen; /* the entry read (gen 0: none) */
	bool                direct;    /* not indexed: the scan runs */
	bc_chunk_t         *pending;   /* being written: copy it */
	uint8_t            *blob;      /* metadata: the answer's bytes */
	size_t              blob_len;
	int                 status;
	bc_chunk_t         *c;
	bc_disk_file_t      f;
} read_t;

/* Lock held: the entry r read, when it is still the one r saw. */
static bc_disk_entry_t *
do_entry_read(bc_disk_t *t, const read_t *r)
{
	bc_disk_entry_t *e;

	if (r->req != NULL) {
		e = bc_disk_do_chunk(t, r->hash);
	} else {
		bc_disk_obj_t *o = bc_disk_do_obj(t, r->hash, r->mreq->bucket,
		    r->mreq->key);

		e = o != NULL ? o->meta : NULL;
	}
	return e != NULL && e->gen == r->gen && e->job == NULL ? e : NULL;
}

/* The file r read was damaged (or gone, when !damaged): drops its entry
 * and, damaged, the file unless a newer entry names the path. */
static void
read_failed(bc_disk_t *t, read_t *r, uint8_t kind, bool damaged)
{
	char             path[BC_DISK_PATH_MAX];
	bc_disk_entry_t *e;
	bool             stale;

	if (damaged) {
		COUNT(t, corrupt, 1);
		BC_DEBUG("tier %s: dropped a damaged file (%c %016" PRIx64
		    ")", t->base.name, kind == BC_DISK_CHUNK ? 'c' : 'o',
		    r->hash);
	}
	bc_disk_path(path, kind, r->hash, NULL, 0);
	pthread_mutex_lock(stripe(t, r->hash));
	pthread_mutex_lock(&t->lock);
	e = do_entry_read(t, r);
	if (e != NULL)
		bc_disk_do_remove(t, e, NULL);
	stale = !bc_disk_do_indexed(t, kind, r->hash);
	pthread_mutex_unlock(&t->lock);
	if (damaged && stale)
		unlinkat(t->dirfd, path, 0);
	pthread_mutex_unlock(stripe(t, r->hash));
}

/* A file found directly while the scan runs: indexed now unless the
 * caller deleted it meanwhile. Returns false when it must not be served
 * (deleted). */
static bool
found_direct(bc_disk_t *t, read_t *r, uint8_t kind)
{
	const bc_disk_hdr_t *h = &r->f.h;
	bc_disk_unlinks_t    u = { 0 };
	bc_policy_ctx_t      ctx = bc_disk_ctx(h->bucket);
	bc_disk_entry_t     *e;
	bool                 ok = true, indexed;

	pthread_mutex_lock(&t->lock);
	if (bc_disk_do_filtered(t, h->bucket, h->key) ||
	    (kind == BC_DISK_CHUNK && bc_disk_tab_find(&t->tombs, r->hash,
	    BC_DISK_NONE) != BC_DISK_NONE)) {
		ok = false;
		goto out;
	}
	if (kind == BC_DISK_CHUNK)
		indexed = bc_disk_do_chunk(t, r->hash) != NULL;
	else
		indexed = bc_disk_do_obj(t, r->hash, h->bucket, h->key) !=
		    NULL && bc_disk_do_obj(t, r->hash, h->bucket,
		    h->key)->meta != NULL;
	if (indexed)
		goto out;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		goto out;
	e->kind = kind;
	e->hash = r->hash;
	e->index = h->index;
	e->pol.size = bc_disk_blocks(r->f.fsize);
	e->pol.key = bc_policy_key_hash(h->bucket, h->key,
	    kind == BC_DISK_CHUNK ? h->index : UINT32_MAX);
	if (bc_disk_do_add(t, e, h->bucket, h->key, &ctx) < 0) {
		free(e);
		goto out;
	}
	if (!t->scanning)
		(void)bc_disk_do_evict(t, 0, &u);
out:
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	if (!ok)
		bc_disk_unlink_unindexed(t, kind, r->hash);
	return ok;
}

/* A chunk of k holding a copy of src's bytes, or NULL. */
static bc_chunk_t *
copy_chunk(const bc_chunk_t *src, const bc_chunk_key_t *k)
{
	uint8_t    *d = malloc(src->len > 0 ? src->len : 1);
	bc_chunk_t *c;

	if (d == NULL)
		return NULL;
	memcpy(d, src->data, src->len);
	c = bc_chunk_new(k, d, src->len);
	if (c != NULL)
		c->fetch_us = src->fetch_us;
	return c;
}

static bool
names_key(const bc_disk_hdr_t *h, const bc_chunk_key_t *k)
{
	return h->index == k->index && strcmp(h->bucket, k->bucket) == 0 &&
	    strcmp(h->key, k->key) == 0 && strcmp(h->etag, k->etag) == 0;
}

static void
get_work(void *arg)
{
	read_t               *r = arg;
	bc_disk_t            *t = r->t;
	const bc_chunk_key_t *k = r->req->key;
	char                  path[BC_DISK_PATH_MAX];
	int                   rv;

	if (r->pending != NULL) {
		r->c = copy_chunk(r->pending, k);
		rv = r->c != NULL ? 0 : BC_ENOMEM;
		bc_chunk_unref(r->pending);
		r->pending = NULL;
		goto out;
	}
	bc_disk_path(path, BC_DISK_CHUNK, r->hash, NULL, 0);
	rv = bc_disk_read(t->dirfd, path, BC_DISK_CHUNK, r->hash, true, true,
	    &r->f);
	if (rv == 0 && !names_key(&r->f.h, k)) {
		bc_disk_file_fini(&r->f);
		rv = BC_EPROTO;
	}
	if (rv == 0 && r->direct && !found_direct(t, r, BC_DISK_CHUNK)) {
		bc_disk_file_fini(&r->f);
		rv = BC_ENOENT;
		goto out;
	}
	if (rv == 0) {
		r->c = bc_chunk_new(k, r->f.body, r->f.h.body_len);
		r->f.body = NULL;
		if (r->c == NULL) {
			bc_disk_file_fini(&r->f);
			rv = BC_ENOMEM;
			goto out;
		}
		r->c->fd = r->f.fd;
		r->c->fd_off = r->f.h.hdr_len;
		r->f.fd = -1;
	} else if (rv == BC_ENOENT || rv == BC_EPROTO) {
		read_failed(t, r, BC_DISK_CHUNK, rv == BC_EPROTO);
		rv = BC_ENOENT;
	}
out:
	if (rv == 0) {
		COUNT(t, hits, 1);
		COUNT(t, bytes_read, r->c->len);
	} else if (rv == BC_ENOENT) {
		COUNT(t, misses, 1);
	} else {
		COUNT(t, errors, 1);
	}
	r->status = rv;
}

static void
get_after(bc_loop_t *l, void *arg)
{
	read_t        *r = arg;
	bc_disk_t     *t = r->t;
	bc_tier_get_t *req = r->req;

	(void)l;
	req->cb(req, r->status, r->c);
	free(r);
	job_done(t, &t->reading);
}

/* Counts r as reading and hands it to the pool; on failure undoes both. */
static int
read_start(bc_disk_t *t, read_t *r, bc_loop_work_fn work, bc_loop_fn after)
{
	int rv = bc_loop_work(t->loop, work, after, r);

	if (rv < 0) {
		bc_chunk_unref(r->pending);
		free(r->blob);
		free(r);
		job_done(t, &t->reading);
	}
	return rv;
}

static int
disk_get(bc_tier_t *bt, bc_tier_get_t *req, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx, bc_tier_get_cb cb)
{
	bc_disk_t       *t = disk_of(bt);
	uint64_t         hash = bc_chunk_key_hash(k);
	bc_disk_entry_t *e;
	read_t          *r = malloc(sizeof(*r));

	if (r == NULL) {
		COUNT(t, errors, 1);
		return BC_ENOMEM;
	}
	memset(r, 0, offsetof(read_t, f));
	r->t = t;
	r->req = req;
	r->hash = hash;
	r->f.fd = -1;
	pthread_mutex_lock(&t->lock);
	e = bc_disk_do_chunk(t, hash);
	if (e == NULL) {
		if (!t->scanning || bc_disk_tab_find(&t->tombs, hash,
		    BC_DISK_NONE) != BC_DISK_NONE ||
		    bc_disk_do_filtered(t, k->bucket, k->key)) {
			pthread_mutex_unlock(&t->lock);
			free(r);
			COUNT(t, misses, 1);
			return BC_ENOENT;
		}
		r->direct = true;
	} else {
		t->pol_ops->on_hit(t->pol, &e->pol, ctx);
		if (e->obj->meta != NULL)
			t->pol_ops->on_hit(t->pol, &e->obj->meta->pol, ctx);
		r->gen = e->gen;
		if (e->job != NULL) {
			r->pending = e->job->c;
			bc_chunk_ref(r->pending);
		}
	}
	t->reading++;
	pthread_mutex_unlock(&t->lock);
	req->tier = bt;
	req->key = k;
	req->ctx = ctx;
	req->cb = cb;
	return read_start(t, r, get_work, get_after);
}

static void
meta_work(void *arg)
{
	read_t             *r = arg;
	bc_disk_t          *t = r->t;
	bc_tier_meta_get_t *req = r->mreq;
	char                path[BC_DISK_PATH_MAX];
	int                 rv;

	if (r->blob != NULL) {
		r->status = 0;
		return;
	}
	bc_disk_path(path, BC_DISK_META, r->hash, NULL, 0);
	rv = bc_disk_read(t->dirfd, path, BC_DISK_META, r->hash, true, false,
	    &r->f);
	if (rv == 0 && (strcmp(r->f.h.bucket, req->bucket) != 0 ||
	    strcmp(r->f.h.key, req->key) != 0)) {
		bc_disk_file_fini(&r->f);
		rv = BC_EPROTO;
	}
	if (rv == 0 && r->direct && !found_direct(t, r, BC_DISK_META)) {
		bc_disk_file_fini(&r->f);
		rv = BC_ENOENT;
	} else if (rv == 0) {
		r->blob = r->f.body;
		r->blob_len = r->f.h.body_len;
		r->f.body = NULL;
	} else if (rv == BC_ENOENT || rv == BC_EPROTO) {
		read_failed(t, r, BC_DISK_META, rv == BC_EPROTO);
		rv = BC_ENOENT;
	} else {
		COUNT(t, errors, 1);
	}
	r->status = rv;
}

static void
meta_after(bc_loop_t *l, void *arg)
{
	read_t             *r = arg;
	bc_disk_t          *t = r->t;
	bc_tier_meta_get_t *req = r->mreq;

	(void)l;
	if (r->status == 0)
		req->cb(req, 0, r->blob, r->blob_len);
	else
		req->cb(req, r->status, NULL, 0);
	free(r->blob);
	free(r);
	job_done(t, &t->reading);
}

static int
disk_meta_get(bc_tier_t *bt, bc_tier_meta_get_t *req, const char *bucket,
    const char *key, bc_tier_meta_cb cb)
{
	bc_disk_t       *t = disk_of(bt);
	uint64_t         hash = bc_disk_obj_hash(bucket, key);
	bc_policy_ctx_t  ctx = bc_disk_ctx(bucket);
	bc_disk_obj_t   *o;
	bc_disk_entry_t *e;
	read_t          *r = malloc(sizeof(*r));

	if (r == NULL)
		return BC_ENOMEM;
	memset(r, 0, offsetof(read_t, f));
	r->t = t;
	r->mreq = req;
	r->hash = hash;
	r->f.fd = -1;
	req->tier = bt;
	req->bucket = bucket;
	req->key = key;
	req->cb = cb;
	pthread_mutex_lock(&t->lock);
	o = bc_disk_do_obj(t, hash, bucket, key);
	e = o != NULL ? o->meta : NULL;
	if (e == NULL) {
		if (!t->scanning || bc_disk_do_filtered(t, bucket, key)) {
			pthread_mutex_unlock(&t->lock);
			free(r);
			return BC_ENOENT;
		}
		r->direct = true;
	} else {
		t->pol_ops->on_hit(t->pol, &e->pol, &ctx);
		r->gen = e->gen;
		if (e->job != NULL) {
			r->blob_len = e->job->len;
			r->blob = malloc(r->blob_len > 0 ? r->blob_len : 1);
			if (r->blob == NULL) {
				pthread_mutex_unlock(&t->lock);
				free(r);
				return BC_ENOMEM;
			}
			memcpy(r->blob, e->job->body, r->blob_len);
		}
	}
	t->reading++;
	pthread_mutex_unlock(&t->lock);
	return read_start(t, r, meta_work, meta_after);
}

/* ---- deletes ----------------------------------------------------------- */

static int
disk_del(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	bc_disk_t         *t = disk_of(bt);
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
		if (bc_disk_tab_find(&t->tombs, hash, BC_DISK_NONE) ==
		    BC_DISK_NONE)
			(void)bc_disk_tab_add(&t->tombs, hash, &t->tombs);
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
	bc_disk_t         *t = disk_of(bt);
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
		/* a drop only moves objects into slots at or after i, or
		 * from slots already passed: re-reading slot i sees all */
		while (i <= t->objs.mask) {
			o = t->objs.slots[i].p;
			if (o != NULL && o->blen == blen &&
			    memcmp(o->name, bucket, blen) == 0 &&
			    strncmp(o->name + blen + 1, prefix, plen) == 0)
				n += do_drop_obj(t, o, &u);
			else
				i++;
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
	bc_disk_t *t = disk_of(bt);
	uint64_t   v;

	pthread_mutex_lock(&t->lock);
	v = t->capacity;
	pthread_mutex_unlock(&t->lock);
	return v;
}

static int
disk_set_capacity(bc_tier_t *bt, uint64_t bytes)
{
	bc_disk_t         *t = disk_of(bt);
	bc_disk_unlinks_t  u = { 0 };
	int                rv;

	pthread_mutex_lock(&t->lock);
	t->capacity = bytes;
	if (t->pol_ops->set_capacity != NULL)
		t->pol_ops->set_capacity(t->pol, bytes);
	rv = bc_disk_do_evict(t, 0, &u);
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	return rv;
}

static uint64_t
disk_usage(bc_tier_t *bt)
{
	bc_disk_t *t = disk_of(bt);
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
	bc_disk_t *t = disk_of(bt);

	pthread_mutex_lock(&t->lock);
	out->scanning = t->scanning;
	out->scan_ns = t->scan_ns;
	out->chunks = t->nchunks;
	out->metas = t->nmetas;
	out->usage = t->usage;
	out->capacity = t->capacity;
	out->writing = t->writing;
	pthread_mutex_unlock(&t->lock);
	out->scan_files = atomic_load(&t->scan_files);
	out->scan_removed = atomic_load(&t->scan_removed);
}

void
bc_tier_disk_wait_scan(bc_tier_t *bt)
{
	bc_disk_t *t = disk_of(bt);

	pthread_mutex_lock(&t->lock);
	while (t->scanning)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

void
bc_tier_disk_flush(bc_tier_t *bt)
{
	bc_disk_t *t = disk_of(bt);

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
	int  fd;

	t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dirfd < 0) {
		bc_errf(err, errlen, "disk dir %s: %s", t->dir,
		    strerror(errno));
		return errno == EACCES ? BC_EACCES : -errno;
	}
	snprintf(probe, sizeof(probe), ".probe.%s", t->token);
	fd = openat(t->dirfd, probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600);
	if (fd < 0 && errno != ENOSPC && errno != EDQUOT) {
		bc_errf(err, errlen, "disk dir %s is not writable: %s", t->dir,
		    strerror(errno));
		return errno == EACCES || errno == EROFS || errno == EPERM ?
		    BC_EACCES : -errno;
	}
	if (fd >= 0) {
		close(fd);
		unlinkat(t->dirfd, probe, 0);
	}
	if ((mkdirat(t->dirfd, "c", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(t->dirfd, "o", 0755) < 0 && errno != EEXIST)) {
		bc_errf(err, errlen, "disk dir %s: %s", t->dir,
		    strerror(errno));
		return -errno;
	}
	t->lockfd = openat(t->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC,
	    0644);
	if (t->lockfd < 0) {
		bc_errf(err, errlen, "disk dir %s: lock: %s", t->dir,
		    strerror(errno));
		return -errno;
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
		rv = errno == ENOENT ? BC_ENOENT : -errno;
		bc_errf(err, errlen, "disk dir %s: %s", o->dir,
		    errno == ENOENT ? "no such directory" : strerror(errno));
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
	    bc_disk_tab_init(&t->chunks) < 0 ||
	    bc_disk_tab_init(&t->objs) < 0 ||
	    bc_disk_tab_init(&t->tombs) < 0)
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
	bc_disk_t *t;

	if (bt == NULL)
		return;
	t = disk_of(bt);
	bc_disk_scan_stop(t);
	pthread_mutex_lock(&t->lock);
	while (t->writing > 0 || t->reading > 0)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
	for (size_t i = 0; t->objs.slots != NULL && i <= t->objs.mask; i++) {
		bc_disk_obj_t *ob = t->objs.slots[i].p;
		bc_list_t     *l, *tmp;

		if (ob == NULL)
			continue;
		BC_LIST_FOREACH_SAFE(l, tmp, &ob->chunks) {
			bc_disk_entry_t *e = BC_CONTAINER_OF(l,
			    bc_disk_entry_t, olink);

			t->pol_ops->on_remove(t->pol, &e->pol);
			free(e);
		}
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
	bc_disk_tab_fini(&t->chunks);
	bc_disk_tab_fini(&t->objs);
	bc_disk_tab_fini(&t->tombs);
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
	.get = disk_get,
	.put = disk_put,
	.del = disk_del,
	.del_object = disk_del_object,
	.capacity = disk_capacity,
	.set_capacity = disk_set_capacity,
	.usage = disk_usage,
	.evictions = disk_evictions,
	.meta_put = disk_meta_put,
	.meta_get = disk_meta_get,
	.close = disk_close,
};
