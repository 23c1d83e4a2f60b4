/*
 * cache_file.c — chunks answered as a lower tier's file (cache.h,
 * bc_cache_chunk_file): a disk hit sent with sendfile without going
 * through memory, and the promotion of such hits to memory.
 *
 * Promotion: a chunk served from its file is also brought into memory (a
 * fill of its own, which reads the file through the tier's get and puts
 * it in memory under the policy's admission) only while memory has room
 * for it without evicting. Once memory is full, a disk hit stays a file,
 * sent from the page cache, which keeps the hot ones: on a load spread
 * over a set bigger than memory, promoting evicts a chunk as likely to be
 * read as the one brought in, and costs a read of the file for no more
 * hits. (Measured, 128 KiB objects read at random over four times
 * memory: promoting a chunk read again within memory's turnover, the
 * LRU rule, promoted 55 % of the disk hits and halved the req/s; within
 * a quarter of it, 43 %.) Jobs' plans bring their next chunks into memory
 * through prefetches, which ask the disk tier first.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_int.h"
#include "cache/cache_math.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "util/util_error.h"
#include "util/util_time.h"

typedef struct file_op_s {
	bc_cache_t     *c;
	bc_object_t    *o;          /* a reference */
	bc_tier_file_t  req;
	bc_waiter_t    *waiters;    /* the request, until it goes */
	uint32_t        index;
	bool            anon;
	char            etag[sizeof(((bc_objmeta_t *)0)->etag)];
} file_op_t;

/* c->mu held: starts the promotion of o's chunk, served from its file,
 * while memory has room (see the top). */
static void
maybe_promote(bc_cache_t *c, const file_op_t *op)
{
	bc_object_t *o = op->o;
	uint64_t len, cost;
	bc_fill_t *f;

	if (!o->listed || !o->meta_valid || strcmp(o->meta.etag, op->etag) != 0 ||
	    bc_object_do_chunk_fill(o, op->etag, op->index) != NULL)
		return;
	len = bc_chunk_len(op->index, o->meta.size, c->cs);
	cost = bc_chunk_charge_for((size_t)len, strlen(o->bucket) +
	    strlen(o->key) + strlen(op->etag) + 3);
	if (bc_tier_usage(c->mem) + cost > bc_tier_capacity(c->mem))
		return;
	if (bc_fill_do_start(c, o, BC_FILL_CHUNK, op->index, op->anon,
	    BC_ORIGIN_DEMAND, &f) == 0)
		BC_STATS_INC(cache_disk_promotions);
}

/* Loop thread: the tier answered op's open_file. */
static void
file_opened(bc_tier_file_t *req, int status)
{
	file_op_t *op = req->data;
	bc_cache_t *c = op->c;

	pthread_mutex_lock(&c->mu);
	if (status == 0 && !bc_cache_tier_len_ok(c, op->o, op->index,
	    req->len))
		status = BC_ENOENT;   /* its fd is closed below */
	if (status == 0 && op->waiters != NULL) {
		bc_waiter_t *w = op->waiters;

		w->fd = req->fd;
		w->fd_off = req->off;
		w->fd_len = req->len;
		w->tier_hit = true;
		req->fd = -1;
		bc_waiters_end(&op->waiters, BC_WAIT_FILE, NULL, 0, 0, NULL,
		    0);
	} else {
		bc_waiters_end(&op->waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
	}
	if (status == 0)
		maybe_promote(c, op);
	bc_object_do_unref(c, op->o);
	pthread_mutex_unlock(&c->mu);
	if (req->fd >= 0)
		close(req->fd);
	free(op);
}

int
bc_cache_chunk_file(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bc_waiter_t *w)
{
	bc_chunk_key_t k = { o->bucket, o->key, etag, i };
	bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, false);
	file_op_t *op;
	int rv;

	if (bc_tier_chain_count(c->tiers) < 2 ||
	    strlen(etag) >= sizeof(op->etag))
		return BC_ENOTSUP;
	op = calloc(1, sizeof(*op));
	if (op == NULL)
		return BC_ENOTSUP;
	op->c = c;
	op->o = o;
	op->index = i;
	op->anon = w->anon;
	op->req.data = op;
	memcpy(op->etag, etag, strlen(etag) + 1);
	pthread_mutex_lock(&c->mu);
	if (!o->listed || !o->meta_valid || strcmp(o->meta.etag, etag) != 0) {
		pthread_mutex_unlock(&c->mu);
		free(op);
		return BC_ECANCELED;
	}
	if (bc_object_do_chunk_fill(o, etag, i) != NULL) {
		pthread_mutex_unlock(&c->mu);
		free(op);
		return BC_ENOTSUP;   /* join that fill */
	}
	bc_waiter_add(o, &op->waiters, w, false);
	o->refs++;
	pthread_mutex_unlock(&c->mu);
	/* the tier may open the file here: not under the cache's lock */
	rv = bc_tier_chain_open_file(c->tiers, &op->req, &k, &ctx,
	    file_opened);
	if (rv == 0)
		return BC_EAGAIN;   /* file_opened() ends w */
	pthread_mutex_lock(&c->mu);
	op->waiters = NULL;   /* only w, which is still waiting */
	w->list = NULL;
	w->result = BC_WAIT_PENDING;
	if (rv == 1 && !bc_cache_tier_len_ok(c, o, i, op->req.len)) {
		close(op->req.fd);
		rv = BC_ENOENT;
	}
	if (rv == 1) {
		w->fd = op->req.fd;
		w->fd_off = op->req.off;
		w->fd_len = op->req.len;
		w->tier_hit = true;
		maybe_promote(c, op);
	}
	bc_object_do_unref(c, o);
	pthread_mutex_unlock(&c->mu);
	free(op);
	return rv == 1 ? 0 : BC_ENOTSUP;
}
