/*
 * cache_warm.c — the cache's side of warm-ups (prefetch_warm.h): an
 * object's metadata and chunks brought into a named tier of the chain,
 * each fill carrying the warm-up's waiter, so that it hears when the fill
 * ended as a client would (cache.h; cache_int.h has the locking rules).
 *
 * Into memory (tier 0) a warm-up's fills are prefetches the memory
 * policy must admit (bc_tier_mem_reserve_prefetch: declined when the
 * policy would not keep the chunk); into a lower tier they are transit
 * fills (bc_fill_do_start_lower: written to the lower tiers only, never
 * held in memory). Either way they are of class prefetch (they yield to
 * clients' fills) and go out signed with the gateway's credentials. A
 * warm-up waits on them, so they are not counted as unread prefetches.
 */
#include <pthread.h>
#include <string.h>

#include "cache/cache_int.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "util/util_error.h"

/* The chain's tier at index tier, or NULL. */
static bc_tier_t *
warm_tier(bc_cache_t *c, size_t tier)
{
	return tier < bc_tier_chain_count(c->tiers) ?
	    bc_tier_chain_at(c->tiers, tier) : NULL;
}

int
bc_cache_warm_has(bc_cache_t *c, size_t tier, const bc_chunk_key_t *k)
{
	bc_tier_t *t = warm_tier(c, tier);

	return t != NULL ? bc_tier_has(t, k) : BC_EINVAL;
}

/* c->mu held: starts a warm-up's fill of kind for o (chunk index) into
 * tier. 0 and *out, BC_ENOSPC (no room now), or BC_EIO. */
static int
warm_fill(bc_cache_t *c, bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, size_t tier, bc_fill_t **out)
{
	int rv = tier == 0 ? bc_fill_do_start(c, o, kind, index, false,
	    BC_ORIGIN_PREFETCH, out) : bc_fill_do_start_lower(c, o, kind,
	    index, out);

	if (rv < 0)
		return rv == BC_ENOSPC ? BC_ENOSPC : BC_EIO;
	(*out)->prefetch = false;   /* the warm-up waits on it */
	return 0;
}

int
bc_cache_warm_meta(bc_cache_t *c, bc_object_t *o, size_t tier,
    bc_waiter_t *w, bc_objmeta_t *meta)
{
	bc_fill_t *f;
	int rv;

	if (warm_tier(c, tier) == NULL)
		return BC_EINVAL;
	pthread_mutex_lock(&c->mu);
	if (!o->listed) {
		rv = BC_ECANCELED;
		goto out;
	}
	if (o->meta_valid) {
		rv = bc_objmeta_copy(meta, &o->meta);
		goto out;
	}
	if (o->meta_fill == NULL && !o->meta_probed)
		(void)bc_fill_do_probe_meta(c, o, 0, false,
		    BC_ORIGIN_PREFETCH, BC_STATS_JOB_NONE);
	if (o->meta_fill != NULL) {
		/* told BC_WAIT_RECHECK once the metadata is known, or the
		 * failure of the fill that sought it */
		bc_waiter_add(o, &o->meta_waiters, w, false);
		o->meta_fill->joined = true;
		rv = BC_EAGAIN;
		goto out;
	}
	rv = warm_fill(c, o, BC_FILL_FIRST, 0, tier, &f);
	if (rv < 0)
		goto out;
	o->meta_fill = f;
	bc_waiter_add(o, &f->waiters, w, false);
	f->joined = true;
	rv = BC_EAGAIN;
out:
	pthread_mutex_unlock(&c->mu);
	return rv;
}

int
bc_cache_warm_chunk(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, size_t tier, bc_waiter_t *w)
{
	bc_chunk_key_t k = { o->bucket, o->key, etag, i };
	bc_tier_t *t = warm_tier(c, tier);
	bc_chunk_t *ch = NULL;
	bc_fill_t *f;
	int rv;

	if (t == NULL)
		return BC_EINVAL;
	if (bc_tier_has(t, &k) == 1)
		return 1;
	pthread_mutex_lock(&c->mu);
	if (!o->listed || !o->meta_valid || strcmp(o->meta.etag, etag) != 0) {
		rv = BC_ECANCELED;
		goto out;
	}
	if (tier > 0 && bc_tier_has(c->mem, &k) == 1) {
		bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, false);

		/* memory has it: copied down, no origin request */
		ch = bc_tier_chain_lookup(c->tiers, &k, &ctx);
		if (ch != NULL) {
			bc_tier_chain_put_lower(c->tiers, ch, &ctx);
			rv = 0;
			goto out;
		}
	}
	f = bc_object_do_chunk_fill(o, etag, i);
	if (f == NULL) {
		rv = warm_fill(c, o, BC_FILL_CHUNK, i, tier, &f);
		if (rv < 0)
			goto out;
	}
	f->prefetch = false;
	bc_waiter_add(o, &f->waiters, w, false);
	f->joined = true;
	rv = BC_EAGAIN;
out:
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(ch);
	return rv;
}
