/*
 * tier_disk_write.c — the disk tier's writes and unlinks, on the loop's
 * work pool (tier_disk_int.h).
 *
 * A write (bc_disk_write_start) makes its temp file without any lock,
 * then, under the path's stripe lock, renames it into place only if its
 * entry still names it (entry->job is the write) and marks the entry on
 * disk; a write whose entry was dropped or replaced meanwhile removes its
 * temp file instead. A write that fails drops its entry (and a stale file
 * at the path no entry names), counts write_failures and marks the tier
 * down, unless it failed with ENOSPC that the filesystem's free space
 * explains while the tier holds files to evict: then the free-space cap,
 * read again, makes later puts evict down to what the filesystem holds
 * (tier_disk_space.c), and the tier stays up. An unlink removes a path under its stripe lock only while no
 * entry names it, so a late unlink never removes a newer file.
 *
 * A write first unlinks the files evicted to make its room
 * (w->unlink_first), so its bytes never race their removal.
 *
 * Jobs are counted in t->writing from before they are handed to the pool
 * until their last touch of t, which close and bc_tier_disk_flush wait on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define COUNT(t, field, n) BC_TIER_COUNT(&(t)->base, field, n)

void
bc_disk_job_done(bc_disk_t *t, size_t *counter)
{
	pthread_mutex_lock(&t->lock);
	(*counter)--;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

/* ---- unlinks ----------------------------------------------------------- */

typedef struct unlink_job_s {
	bc_disk_t         *t;
	bc_disk_unlinks_t  u;
} unlink_job_t;

bool
bc_disk_unlink_unindexed(bc_disk_t *t, uint8_t kind, uint64_t hash)
{
	char path[BC_DISK_PATH_MAX];
	bool indexed, gone = false;

	bc_disk_path(path, kind, hash, NULL, 0);
	pthread_mutex_lock(bc_disk_stripe(t, hash));
	pthread_mutex_lock(&t->lock);
	indexed = bc_disk_do_indexed(t, kind, hash);
	pthread_mutex_unlock(&t->lock);
	if (!indexed)
		gone = unlinkat(t->dirfd, path, 0) == 0;
	pthread_mutex_unlock(bc_disk_stripe(t, hash));
	return gone;
}

static void
unlink_work(void *arg)
{
	unlink_job_t *j = arg;
	bc_disk_t    *t = j->t;

	for (size_t i = 0; i < j->u.n; i++)
		bc_disk_unlink_unindexed(t, j->u.v[i].kind, j->u.v[i].hash);
	free(j->u.v);
	free(j);
	bc_disk_job_done(t, &t->writing);
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
		bc_disk_job_done(t, &t->writing);
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
	for (bc_hnode_t *n = bc_htab_first(&t->objs, w->hash); n != NULL;
	    n = bc_htab_next(n)) {
		e = BC_CONTAINER_OF(n, bc_disk_obj_t, hn)->meta;
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

	for (size_t i = 0; i < w->unlink_first.n; i++)
		bc_disk_unlink_unindexed(t, w->unlink_first.v[i].kind,
		    w->unlink_first.v[i].hash);
	free(w->unlink_first.v);
	memset(&w->unlink_first, 0, sizeof(w->unlink_first));
	bc_disk_path(tmp, w->kind, w->hash, t->token,
	    atomic_fetch_add(&t->seq, 1));
	bc_disk_path(path, w->kind, w->hash, NULL, 0);
	rv = bc_disk_write_tmp(t->dirfd, tmp, &w->h, w->body, w->len);
	pthread_mutex_lock(bc_disk_stripe(t, w->hash));
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
	if (e != NULL) {
		e->job = NULL;
		t->unwritten -= e->pol.size;
	}
	pthread_mutex_unlock(&t->lock);
out:
	pthread_mutex_unlock(bc_disk_stripe(t, w->hash));
	if (rv < 0) {
		COUNT(t, write_failures, 1);
		if (rv != BC_ENOSPC || !bc_disk_space_enospc(t, w))
			bc_tier_mark_down(&t->base, rv, bc_mono_ns());
	}
	free(w);
	bc_chunk_unref(c);
	bc_disk_job_done(t, &t->writing);
}

/* Hands w (its entry added, t->writing counted) to the pool. On failure
 * (the loop stopping) undoes both and returns the error. */
int
bc_disk_write_start(bc_disk_t *t, bc_disk_write_t *w)
{
	bc_disk_entry_t *e;
	int              rv = bc_loop_work(t->loop, write_work, NULL, w);

	if (rv == 0)
		return 0;
	bc_disk_unlink_later(t, &w->unlink_first);
	pthread_mutex_lock(&t->lock);
	e = do_entry_of(t, w);
	if (e != NULL)
		bc_disk_do_remove(t, e, NULL);
	pthread_mutex_unlock(&t->lock);
	COUNT(t, write_failures, 1);
	bc_chunk_unref(w->c);
	free(w);
	bc_disk_job_done(t, &t->writing);
	return rv;
}
