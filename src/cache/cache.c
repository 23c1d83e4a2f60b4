/*
 * cache.c — lookups: metadata, chunks, prefetch and read-ahead, passthrough
 * (cache_int.h has the locking and reference rules).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/cache_int.h"
#include "cache/cache_math.h"
#include "s3/s3_cond.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_log.h"
#include "util/util_num.h"
#include "util/util_time.h"

/* ---- lookups ----------------------------------------------------------- */

/* c->mu held: f, just started as a prefetch for job, is counted for it. */
static void
prefetch_started(bc_fill_t *f, bc_stats_job_id_t job)
{
	f->job = job;
	bc_stats_job_id_add(job, BC_JSTAT_prefetch_issued, 1);
}

/* c->mu held: a client's read joins f, a prefetch still running. */
static void
prefetch_late(const bc_fill_t *f)
{
	BC_STATS_INC(prefetch_late);
	bc_stats_job_id_add(f->job, BC_JSTAT_prefetch_late, 1);
}

/* c->mu held: whether chunk hint of o's version is in memory (a request
 * for it that is not makes a fill, which validates on its way). */
static bool
hint_cached(bc_cache_t *c, bc_object_t *o, uint32_t hint)
{
	bc_chunk_key_t k = { o->bucket, o->key, o->meta.etag, hint };
	bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, false);
	bc_chunk_t *ch;

	if (hint == BC_CACHE_META_ONLY ||
	    bc_chunk_start(hint, c->cs) >= o->meta.size)
		return true;
	ch = bc_tier_chain_lookup(c->tiers, &k, &ctx);
	if (ch == NULL)
		return false;
	bc_chunk_unref(ch);
	return true;
}

/*
 * c->mu held: o's metadata is past meta-ttl but within meta-stale, and is
 * served as it is. Starts a background revalidation (no waiter, unsigned
 * for an unsigned request: it then renews the unsigned-fetch mark too)
 * unless one runs, or the request's first chunk (hint) must come from
 * upstream: that fetch carries If-Match, and its accept refreshes the
 * metadata in the same round trip (fill_accept); with lower tiers the
 * chunk may come from one of them, so the HEAD goes all the same. A
 * failed revalidation leaves the metadata stale; the next request tries
 * again, and past meta-stale requests wait for one.
 */
static void
stale_revalidate(bc_cache_t *c, bc_object_t *o, uint32_t hint, bool anon)
{
	if (o->meta_fill != NULL || (!hint_cached(c, o, hint) &&
	    bc_tier_chain_count(c->tiers) < 2))
		return;
	(void)bc_fill_do_start(c, o, BC_FILL_REVALIDATE, 0, anon,
	    BC_ORIGIN_DEMAND, &o->meta_fill);
}

typedef enum mark_e { MARK_NONE, MARK_STALE, MARK_FRESH } mark_t;

/* c->mu held: how recent o's unsigned-fetch mark is, by the metadata's
 * rule: fresh within meta-ttl, stale (served, rechecked in the
 * background) within meta-stale after that; an immutable object's is
 * fresh while it is set (docs/decisions.md: --immutable). */
static mark_t
public_mark(const bc_cache_t *c, const bc_object_t *o)
{
	uint64_t age;

	if (o->public_at_ns == 0)
		return MARK_NONE;
	if (o->immutable)
		return MARK_FRESH;
	age = bc_mono_ns() - o->public_at_ns;
	if (c->meta_ttl_ns == 0 || age < c->meta_ttl_ns)
		return MARK_FRESH;
	return age - c->meta_ttl_ns < c->meta_stale_ns ? MARK_STALE :
	    MARK_NONE;
}

/* c->mu held: w (unsigned) waits for the unsigned check of o, started
 * unless one runs. Returns BC_EAGAIN, or BC_EIO when it cannot start.
 * Not counted as a coalesced wait: nothing is known to be readable yet. */
static int
public_wait(bc_cache_t *c, bc_object_t *o, bc_waiter_t *w)
{
	if (o->public_fill == NULL &&
	    bc_fill_do_start(c, o, BC_FILL_PUBLIC, 0, true, BC_ORIGIN_DEMAND,
	    &o->public_fill) < 0)
		return BC_EIO;
	bc_waiter_add(o, &o->public_fill->waiters, w, false);
	o->public_fill->joined = true;
	return BC_EAGAIN;
}

/*
 * c->mu held: o's metadata is fresh (or stale: stale set) and w is
 * unsigned. Returns 0 when the cached copy may be served to it (starting
 * a background recheck when the mark is stale), or what public_wait()
 * returns.
 */
static int
public_allow(bc_cache_t *c, bc_object_t *o, uint32_t hint, bool stale,
    bc_waiter_t *w)
{
	mark_t m = public_mark(c, o);

	if (m == MARK_NONE)
		return public_wait(c, o, w);
	if (stale)   /* an unsigned revalidation renews both */
		stale_revalidate(c, o, hint, true);
	else if (m == MARK_STALE && o->public_fill == NULL &&
	    hint_cached(c, o, hint))
		(void)bc_fill_do_start(c, o, BC_FILL_PUBLIC, 0, true,
		    BC_ORIGIN_DEMAND, &o->public_fill);
	return 0;
}

int
bc_cache_meta(bc_cache_t *c, bc_object_t *o, uint32_t hint, bc_waiter_t *w,
    bc_objmeta_t *meta, bool *was_cached)
{
	bc_fill_t *mf;
	int rv;

	pthread_mutex_lock(&c->mu);
	if (!o->listed) {
		rv = BC_ECANCELED;
		goto out;
	}
	if (o->meta_valid) {
		uint64_t age = bc_mono_ns() - o->meta_at_ns;
		/* a version never changes, nor does an object under
		 * --immutable: never revalidated */
		bool fresh = o->immutable || o->version != NULL ||
		    c->meta_ttl_ns == 0 || age < c->meta_ttl_ns;

		if (fresh || age - c->meta_ttl_ns < c->meta_stale_ns) {
			if (w->anon) {
				rv = public_allow(c, o, hint, !fresh, w);
				if (rv != 0)
					goto out;
			} else if (!fresh) {
				stale_revalidate(c, o, hint, false);
			}
			if (!fresh)
				BC_STATS_INC(cache_stale_served);
			*was_cached = true;
			rv = bc_objmeta_copy(meta, &o->meta);
			goto out;
		}
	}
	mf = o->meta_fill;
	if (mf != NULL) {
		/* a first fill of the same chunk serves w too, unless w is
		 * unsigned and the fill is not: w then waits for its outcome
		 * and checks for itself */
		if (mf->kind == BC_FILL_FIRST && mf->index == hint &&
		    (mf->anon || !w->anon)) {
			if (mf->prefetch)
				prefetch_late(mf);
			mf->prefetch = false;   /* its chunk goes to w */
			bc_waiter_add(o, &mf->waiters, w, true);
		} else {
			bc_waiter_add(o, &o->meta_waiters, w, true);
		}
		mf->joined = true;
		rv = BC_EAGAIN;
		goto out;
	}
	if (!o->meta_valid && !o->meta_probed &&
	    bc_fill_do_probe_meta(c, o, hint, w->anon, BC_ORIGIN_DEMAND,
	    BC_STATS_JOB_NONE) == 0) {
		bc_waiter_add(o, &o->meta_waiters, w, false);
		o->meta_fill->joined = true;
		rv = BC_EAGAIN;
		goto out;
	}
	rv = bc_fill_do_start(c, o, o->meta_valid ? BC_FILL_REVALIDATE :
	    hint == BC_CACHE_META_ONLY ? BC_FILL_HEAD : BC_FILL_FIRST, hint,
	    w->anon, BC_ORIGIN_DEMAND, &o->meta_fill);
	if (rv == BC_ENOSPC)   /* no room for the chunk: metadata only */
		rv = bc_fill_do_start(c, o, BC_FILL_HEAD, 0, w->anon,
		    BC_ORIGIN_DEMAND, &o->meta_fill);
	if (rv < 0) {
		rv = BC_EIO;
		goto out;
	}
	bc_waiter_add(o, o->meta_fill->kind != BC_FILL_REVALIDATE ?
	    &o->meta_fill->waiters : &o->meta_waiters, w, false);
	o->meta_fill->joined = true;
	rv = BC_EAGAIN;
out:
	pthread_mutex_unlock(&c->mu);
	return rv;
}

/* bc_cache_chunk(), with the kind of fill it starts (anon: unsigned) given
 * apart from w, which may be NULL (a prefetch for job). */
static int
chunk_get(bc_cache_t *c, bc_object_t *o, const char *etag, uint32_t i,
    bool fetch, bool anon, bc_waiter_t *w, bc_stats_job_id_t job,
    bc_chunk_t **out)
{
	bc_chunk_key_t k = { o->bucket, o->key, etag, i };
	bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, w == NULL);
	bc_chunk_t *hit;
	bc_fill_t *f;
	int rv;

	*out = NULL;
	pthread_mutex_lock(&c->mu);
	hit = bc_tier_chain_lookup(c->tiers, &k, &ctx);
	if (hit != NULL) {
		*out = hit;
		rv = 0;
		goto out;
	}
	if (!o->listed || !o->meta_valid || strcmp(o->meta.etag, etag) != 0) {
		rv = BC_ECANCELED;   /* a newer version exists: restart */
		goto out;
	}
	f = bc_object_do_chunk_fill(o, etag, i);
	if (!fetch) {
		rv = f != NULL ? BC_EINPROGRESS : BC_EAGAIN;
		goto out;
	}
	if (f == NULL) {
		/* a prefetch until a waiter comes */
		rv = bc_fill_do_start(c, o, BC_FILL_CHUNK, i, anon, w == NULL ?
		    BC_ORIGIN_PREFETCH : BC_ORIGIN_DEMAND, &f);
		if (rv < 0)
			goto out;
		if (w == NULL)
			prefetch_started(f, job);
	} else if (w != NULL && f->prefetch) {
		prefetch_late(f);   /* it ran for no one yet */
	}
	if (w != NULL)
		f->prefetch = false;
	if (f->chunk != NULL && !f->recheck && w != NULL &&
	    w->partial_ok) {
		bc_chunk_ref(f->chunk);   /* join the fill as it streams */
		*out = f->chunk;
		if (f->joined) {
			BC_STATS_INC(cache_coalesced_waits);
			bc_stats_bucket_add(o->bucket,
			    BC_BSTAT_cache_coalesced_waits, 1);
		}
		f->joined = true;
		rv = 0;
		goto out;
	}
	if (w != NULL) {   /* joining a readahead's fetch is no coalescing */
		bc_waiter_add(o, &f->waiters, w, f->joined);
		f->joined = true;
	}
	rv = BC_EAGAIN;
out:
	pthread_mutex_unlock(&c->mu);
	return rv;
}

int
bc_cache_chunk(bc_cache_t *c, bc_object_t *o, const char *etag, uint32_t i,
    bool fetch, bc_waiter_t *w, bc_chunk_t **out)
{
	/* An unsigned request asks for chunks only after bc_cache_meta()
	 * let it read this version: it may join any fill of them. */
	int rv = chunk_get(c, o, etag, i, fetch, w != NULL && w->anon, w,
	    BC_STATS_JOB_NONE, out);

	if (rv == 0)   /* a client reads it */
		(void)bc_chunk_take_prefetched(*out);
	return rv;
}

int
bc_cache_prefetch(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bool anon, bc_stats_job_id_t job)
{
	bc_chunk_t *ch = NULL;
	int rv = chunk_get(c, o, etag, i, true, anon, NULL, job, &ch);

	bc_chunk_unref(ch);
	return rv == BC_EAGAIN ? 0 : rv;
}

int
bc_cache_prefetch_key(bc_cache_t *c, const char *bucket, const char *key,
    uint32_t first, uint32_t n, bool anon, bc_stats_job_id_t job)
{
	bc_object_t *o = bc_cache_object(c, bucket, key);
	char etag[sizeof(o->meta.etag)];
	uint32_t count;
	int rv = 0;

	if (o == NULL)
		return BC_ENOMEM;
	pthread_mutex_lock(&c->mu);
	if (!o->listed || o->meta_fill != NULL) {
		rv = o->listed ? 1 : 0;   /* its first fill runs */
		pthread_mutex_unlock(&c->mu);
		goto out;
	}
	if (!o->meta_valid && !o->meta_probed &&
	    bc_fill_do_probe_meta(c, o, first, anon, BC_ORIGIN_PREFETCH,
	    job) == 0) {
		pthread_mutex_unlock(&c->mu);
		rv = 1;   /* the lower tiers first; then it goes on */
		goto out;
	}
	if (!o->meta_valid) {
		rv = bc_fill_do_start(c, o, BC_FILL_FIRST, first, anon,
		    BC_ORIGIN_PREFETCH, &o->meta_fill);
		if (rv == 0)
			prefetch_started(o->meta_fill, job);
		pthread_mutex_unlock(&c->mu);
		rv = rv < 0 ? rv : 1;
		goto out;
	}
	memcpy(etag, o->meta.etag, sizeof(etag));
	count = bc_chunk_count(o->meta.size, c->cs);
	pthread_mutex_unlock(&c->mu);
	for (uint32_t i = first; i < count && i - first < n; i++) {
		bc_chunk_t *ch = NULL;
		int r = chunk_get(c, o, etag, i, true, anon, NULL, job, &ch);

		bc_chunk_unref(ch);
		if (r == BC_EAGAIN)
			rv++;
		else if (r < 0 && rv == 0)
			rv = r;
		if (r < 0 && r != BC_EAGAIN)
			break;
	}
out:
	bc_object_unref(c, o);
	return rv;
}

uint64_t
bc_cache_fetch_us(bc_cache_t *c)
{
	return atomic_load(&c->fetch_us);
}

unsigned
bc_cache_fills_running(bc_cache_t *c, bc_origin_class_t cls)
{
	return atomic_load(&c->inflight[cls]);
}

void
bc_cache_read_ahead(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t from, uint32_t last, unsigned n, bool anon,
    bc_stats_job_id_t job)
{
	uint64_t budget = c->o.cfg->prefetch_memory > 0 ?
	    c->o.cfg->prefetch_memory : atomic_load(&c->mem_size) / 4;

	for (uint32_t i = from + 1; i <= last && i > from && n > 0; i++, n--) {
		if (bc_stats_get(BC_STAT_prefetch_unread_bytes) + c->cs >
		    budget && i > from + 1)
			break;   /* the next chunk, at least: it is due now */
		(void)bc_cache_prefetch(c, o, etag, i, anon, job);
	}
}

bc_exchange_t *
bc_cache_passthrough(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint64_t first, uint64_t last, bool anon, bc_exchange_wake_fn wake,
    void *arg)
{
	bc_exchange_t *x;
	bc_fetch_t fo;

	bc_fill_fetch_init(&fo, o, false, first, last, "If-Match", etag, anon);
	fo.wake = wake;
	fo.wake_arg = arg;
	x = bc_origin_fetch(c->o.origin, &fo);
	if (x != NULL)
		BC_STATS_INC(cache_passthrough);
	return x;
}

ssize_t
bc_cache_chunk_wait(bc_cache_t *c, bc_chunk_t *ch, size_t have,
    bc_waiter_t *w)
{
	ssize_t rv;
	size_t avail;

	pthread_mutex_lock(&c->mu);
	avail = bc_chunk_avail(ch);
	if (avail > have)
		rv = (ssize_t)avail;
	else if (bc_chunk_state(ch) == BC_CHUNK_FAILED)
		rv = BC_EIO;
	else if (bc_chunk_state(ch) == BC_CHUNK_COMPLETE)
		rv = (ssize_t)avail;
	else {
		bc_waiter_add(NULL, &ch->fill_waiters, w, false);
		rv = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rv;
}
