/*
 * tier_disk_read.c — the disk tier's get and meta_get (tier_disk.h): the
 * index is asked under t->lock (a hit is the policy's on_hit), the file
 * read on the loop's work pool, the callback made from the work's after()
 * on the loop thread.
 *
 * A chunk hit keeps its file open in the chunk (fd, fd_off: the body) for
 * sendfile, and its bytes in data; its fetch_us is what the read took (a
 * policy's cost when the chunk is promoted). An entry whose write is in flight is
 * answered with a copy of the chunk (or blob) the write holds. A damaged
 * file (tier_disk_file.c's checks, or a header naming another key) is
 * removed unless a newer entry names its path, counted in stats.corrupt,
 * and answered as a miss; a file gone from under its entry drops the entry
 * (a miss). While the start-up scan runs, a key the index lacks is read
 * from the file its hash names and indexed, unless deleted meanwhile
 * (tombstones, del_object filters, which also hide bare chunks); a bare
 * chunk read gets its object from the header just checked.
 *
 * Reads are counted in t->reading until after their callback returned.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define COUNT(t, field, n) BC_TIER_COUNT(&(t)->base, field, n)

typedef struct read_s {
	bc_disk_t          *t;
	bc_tier_get_t      *req;       /* a chunk's get (or open_file's:
					  NULL), or */
	bc_tier_meta_get_t *mreq;      /* a metadata get */
	uint64_t            hash, gen; /* the entry read (gen 0: none) */
	bool                direct;    /* not indexed: the scan runs */
	bool                bare;      /* indexed, its header not read */
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

	if (r->mreq == NULL) {   /* a chunk's get or open_file */
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
	pthread_mutex_lock(bc_disk_stripe(t, r->hash));
	pthread_mutex_lock(&t->lock);
	e = do_entry_read(t, r);
	if (e != NULL)
		bc_disk_do_remove(t, e, NULL);
	stale = !bc_disk_do_indexed(t, kind, r->hash);
	pthread_mutex_unlock(&t->lock);
	if (damaged && stale)
		unlinkat(t->dirfd, path, 0);
	pthread_mutex_unlock(bc_disk_stripe(t, r->hash));
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
	bc_disk_obj_t       *o;
	bool                 ok = true, indexed;

	pthread_mutex_lock(&t->lock);
	if (bc_disk_do_filtered(t, h->bucket, h->key) ||
	    (kind == BC_DISK_CHUNK &&
	    bc_htab_first(&t->tombs, r->hash) != NULL)) {
		ok = false;
		goto out;
	}
	if (kind == BC_DISK_CHUNK) {
		indexed = bc_disk_do_chunk(t, r->hash) != NULL;
	} else {
		o = bc_disk_do_obj(t, r->hash, h->bucket, h->key);
		indexed = o != NULL && o->meta != NULL;
	}
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

/* A bare chunk r read (its header now checked): gets its object, unless
 * that object was deleted since (then removed). Returns false when it
 * must not be served. */
static bool
attach_read(bc_disk_t *t, read_t *r)
{
	const bc_disk_hdr_t *h = &r->f.h;
	bc_disk_entry_t     *e;
	bool                 ok = true;

	pthread_mutex_lock(&t->lock);
	e = bc_disk_do_chunk(t, r->hash);
	if (e != NULL && e->gen == r->gen && e->obj == NULL) {
		ok = !bc_disk_do_filtered(t, h->bucket, h->key);
		if (ok)
			(void)bc_disk_do_attach(t, e, h->bucket, h->key,
			    h->index);
		else
			bc_disk_do_remove(t, e, NULL);
	}
	pthread_mutex_unlock(&t->lock);
	if (!ok)
		bc_disk_unlink_unindexed(t, BC_DISK_CHUNK, r->hash);
	return ok;
}

/* Counts a chunk read's outcome rv (0 with len bytes, a miss, an error). */
static void
count_read(bc_disk_t *t, int rv, uint64_t len)
{
	if (rv == 0) {
		COUNT(t, hits, 1);
		COUNT(t, bytes_read, len);
	} else if (rv == BC_ENOENT) {
		COUNT(t, misses, 1);
	} else {
		COUNT(t, errors, 1);
	}
}

/* A chunk of k holding a copy of src's bytes, or NULL. */
static bc_chunk_t *
copy_chunk(const bc_chunk_t *src, const bc_chunk_key_t *k)
{
	size_t      map;
	uint8_t    *d = bc_chunk_data_alloc(src->len, &map);
	bc_chunk_t *c;

	if (d == NULL)
		return NULL;
	memcpy(d, src->data, src->len);
	c = bc_chunk_new_data(k, d, src->len, map);
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

static int64_t
mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Lock held: records that the file of r's entry (if still r's) is the
 * one with st's identity, checked whole. */
static void
do_mark_checked(bc_disk_t *t, const read_t *r, const struct stat *st)
{
	bc_disk_entry_t *e = do_entry_read(t, r);

	if (e == NULL)
		return;
	e->vino = (uint64_t)st->st_ino;
	e->vsize = (uint64_t)st->st_size;
	e->vmtime_ns = mtime_ns(st);
}

static void
get_work(void *arg)
{
	read_t               *r = arg;
	bc_disk_t            *t = r->t;
	const bc_chunk_key_t *k = r->req->key;
	char                  path[BC_DISK_PATH_MAX];
	uint64_t              t0 = bc_mono_ns();
	struct stat           st;
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
	if (rv == 0 && ((r->direct && !found_direct(t, r, BC_DISK_CHUNK)) ||
	    (r->bare && !attach_read(t, r)))) {
		bc_disk_file_fini(&r->f);
		rv = BC_ENOENT;
		goto out;
	}
	if (rv == 0) {
		r->c = bc_chunk_new_data(k, r->f.body, r->f.h.body_len,
		    r->f.body_map);
		r->f.body = NULL;
		if (r->c == NULL) {
			bc_disk_file_fini(&r->f);
			rv = BC_ENOMEM;
			goto out;
		}
		if (!r->direct && fstat(r->f.fd, &st) == 0) {
			pthread_mutex_lock(&t->lock);
			do_mark_checked(t, r, &st);
			pthread_mutex_unlock(&t->lock);
		}
		r->c->fd = r->f.fd;
		r->c->fd_off = r->f.h.hdr_len;
		r->c->fetch_us = (bc_mono_ns() - t0) / 1000u;
		r->f.fd = -1;
	} else if (rv == BC_ENOENT || rv == BC_EPROTO) {
		read_failed(t, r, BC_DISK_CHUNK, rv == BC_EPROTO);
		rv = BC_ENOENT;
	}
out:
	count_read(t, rv, rv == 0 ? r->c->len : 0);
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
	bc_disk_job_done(t, &t->reading);
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
		bc_disk_job_done(t, &t->reading);
	}
	return rv;
}

int
bc_disk_get(bc_tier_t *bt, bc_tier_get_t *req, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx, bc_tier_get_cb cb)
{
	bc_disk_t       *t = bc_disk_of(bt);
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
	if (e != NULL && e->obj == NULL &&
	    bc_disk_do_filtered(t, k->bucket, k->key)) {
		/* bare, of an object deleted since: the scan removes it */
		e = NULL;
	}
	if (e == NULL) {
		if (!t->scanning || bc_htab_first(&t->tombs, hash) != NULL ||
		    bc_disk_do_filtered(t, k->bucket, k->key)) {
			pthread_mutex_unlock(&t->lock);
			free(r);
			COUNT(t, misses, 1);
			return BC_ENOENT;
		}
		r->direct = true;
	} else {
		t->pol_ops->on_hit(t->pol, &e->pol, ctx);
		if (e->obj != NULL && e->obj->meta != NULL)
			t->pol_ops->on_hit(t->pol, &e->obj->meta->pol, ctx);
		r->gen = e->gen;
		r->bare = e->obj == NULL;
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

/* ---- open_file: a chunk's file for sendfile --------------------------- */

typedef struct open_s {
	bc_disk_t      *t;
	bc_tier_file_t *req;
	char           *strs;       /* the key's bucket, key, ETag */
	read_t          r;          /* the entry (hash, gen); a full read */
} open_t;

/* The identity of a file as a full check found it (vsize 0: none). */
typedef struct checked_s {
	uint64_t vino, vsize;
	int64_t  vmtime_ns;
} checked_t;

/* Opens the file of chunk hash when it is the one its last full check
 * found (id), with hdr header bytes: req's answer, 0; or BC_EAGAIN (it
 * is not: check it whole). No lock held. */
static int
open_checked(bc_disk_t *t, uint64_t hash, const checked_t *id, uint64_t hdr,
    bc_tier_file_t *req)
{
	char        path[BC_DISK_PATH_MAX];
	struct stat st;
	int         fd;

	bc_disk_path(path, BC_DISK_CHUNK, hash, NULL, 0);
	fd = bc_disk_open_read(t->dirfd, path);
	if (fd < 0)
		return BC_EAGAIN;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == id->vino &&
	    (uint64_t)st.st_size == id->vsize &&
	    mtime_ns(&st) == id->vmtime_ns && id->vsize > hdr) {
		req->fd = fd;
		req->off = hdr;
		req->len = id->vsize - hdr;
		return 0;
	}
	close(fd);
	return BC_EAGAIN;
}

/*
 * A file whose inode, size and mtime are the ones its last full check
 * found is sent as it is; any other is read whole and checked (header,
 * name, body crc) as get_work does, and a damaged one is dropped and
 * answered as a miss. The rename that puts a new file in place gives it
 * a new inode, and a write in place changes its mtime: neither is sent
 * unchecked.
 */
static void
open_work(void *arg)
{
	open_t              *op = arg;
	bc_disk_t           *t = op->t;
	read_t              *r = &op->r;
	bc_tier_file_t      *req = op->req;
	const char          *bucket = op->strs;
	const char          *key = bucket + strlen(bucket) + 1;
	const char          *etag = key + strlen(key) + 1;
	bc_chunk_key_t       k = { bucket, key, etag, r->f.h.index };
	char                 path[BC_DISK_PATH_MAX];
	struct stat          st;
	int                  rv;

	bc_disk_path(path, BC_DISK_CHUNK, r->hash, NULL, 0);
	rv = bc_disk_read(t->dirfd, path, BC_DISK_CHUNK, r->hash, true, true,
	    &r->f);
	if (rv == 0 && !names_key(&r->f.h, &k)) {
		bc_disk_file_fini(&r->f);
		rv = BC_EPROTO;
	}
	if (rv == 0 && fstat(r->f.fd, &st) < 0) {
		rv = -errno;
		bc_disk_file_fini(&r->f);
	}
	if (rv == 0) {
		pthread_mutex_lock(&t->lock);
		do_mark_checked(t, r, &st);
		pthread_mutex_unlock(&t->lock);
		bc_chunk_data_free(r->f.body, r->f.body_map);
		r->f.body = NULL;
		req->fd = r->f.fd;
		req->off = r->f.h.hdr_len;
		req->len = r->f.h.body_len;
		r->f.fd = -1;
	} else if (rv == BC_ENOENT || rv == BC_EPROTO) {
		read_failed(t, r, BC_DISK_CHUNK, rv == BC_EPROTO);
		rv = BC_ENOENT;
	}
	count_read(t, rv, rv == 0 ? req->len : 0);
	r->status = rv;
}

static void
open_after(bc_loop_t *l, void *arg)
{
	open_t         *op = arg;
	bc_disk_t      *t = op->t;
	bc_tier_file_t *req = op->req;

	(void)l;
	req->cb(req, op->r.status);
	free(op);
	bc_disk_job_done(t, &t->reading);
}

int
bc_disk_open_file(bc_tier_t *bt, bc_tier_file_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_file_cb cb)
{
	bc_disk_t       *t = bc_disk_of(bt);
	uint64_t         hash = bc_chunk_key_hash(k);
	size_t           bl = strlen(k->bucket) + 1, kl = strlen(k->key) + 1;
	size_t           el = strlen(k->etag) + 1;
	bc_disk_entry_t *e;
	checked_t        id;
	uint64_t         gen;
	open_t          *op;
	int              rv;

	req->fd = -1;
	req->off = req->len = 0;
	pthread_mutex_lock(&t->lock);
	e = bc_disk_do_chunk(t, hash);
	if (e == NULL && !t->scanning) {
		pthread_mutex_unlock(&t->lock);
		COUNT(t, misses, 1);
		return BC_ENOENT;
	}
	if (e == NULL || e->obj == NULL || e->job != NULL) {
		/* not indexed yet, bare, or being written: get() answers */
		pthread_mutex_unlock(&t->lock);
		return BC_ENOTSUP;
	}
	t->pol_ops->on_hit(t->pol, &e->pol, ctx);
	if (e->obj->meta != NULL)
		t->pol_ops->on_hit(t->pol, &e->obj->meta->pol, ctx);
	id = (checked_t){ e->vino, e->vsize, e->vmtime_ns };
	gen = e->gen;
	pthread_mutex_unlock(&t->lock);
	if (id.vsize != 0 && open_checked(t, hash, &id,
	    bc_disk_hdr_len(k->bucket, k->key, k->etag), req) == 0) {
		count_read(t, 0, req->len);
		return 1;   /* checked before: opened here */
	}
	op = malloc(sizeof(*op) + bl + kl + el);
	if (op == NULL) {
		COUNT(t, errors, 1);
		return BC_ENOMEM;
	}
	/* f's buffers are written before they are read */
	memset(op, 0, offsetof(open_t, r) + offsetof(read_t, f));
	op->strs = (char *)(op + 1);
	op->t = t;
	op->req = req;
	op->r.t = t;
	op->r.hash = hash;
	op->r.gen = gen;
	op->r.f.fd = -1;
	op->r.f.h.index = k->index;
	memcpy(op->strs, k->bucket, bl);
	memcpy(op->strs + bl, k->key, kl);
	memcpy(op->strs + bl + kl, k->etag, el);
	req->tier = bt;
	req->cb = cb;
	pthread_mutex_lock(&t->lock);
	t->reading++;
	pthread_mutex_unlock(&t->lock);
	rv = bc_loop_work(t->loop, open_work, open_after, op);
	if (rv < 0) {
		free(op);
		bc_disk_job_done(t, &t->reading);
	}
	return rv;
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
	bc_disk_job_done(t, &t->reading);
}

int
bc_disk_meta_get(bc_tier_t *bt, bc_tier_meta_get_t *req, const char *bucket,
    const char *key, bc_tier_meta_cb cb)
{
	bc_disk_t       *t = bc_disk_of(bt);
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
