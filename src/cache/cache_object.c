/*
 * cache_object.c — the object table, metadata, invalidation and the
 * cache's life
 * (cache_int.h has the locking and reference rules).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cache/cache_int.h"
#include "chunk/chunk_pages.h"
#include "cache/cache_list.h"
#include "cache/cache_math.h"
#include "cache/cache_metablob.h"
#include "policy/policy.h"
#include "s3/s3_cond.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "upstream/upstream.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_log.h"
#include "util/util_num.h"
#include "util/util_time.h"

/* Of bucket and key only: a key's version entries share its chain, so
 * invalidating the key finds them all. */
static uint64_t
obj_hash(const char *bucket, const char *key)
{
	uint64_t h = bc_hash(BC_HASH_INIT, bucket, strlen(bucket));

	h = bc_hash(h, "\xff", 1);   /* no bucket name holds it */
	return bc_hash(h, key, strlen(key));
}

/* ---- objects ----------------------------------------------------------- */

void
bc_objmeta_fini(bc_objmeta_t *m)
{
	bc_kv_fini(&m->headers);
}

int
bc_objmeta_copy(bc_objmeta_t *dst, const bc_objmeta_t *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->size = src->size;
	memcpy(dst->etag, src->etag, sizeof(dst->etag));
	dst->last_modified = src->last_modified;
	for (size_t i = 0; i < src->headers.n; i++)
		if (bc_kv_add(&dst->headers, src->headers.v[i].name,
		    src->headers.v[i].value) < 0) {
			bc_objmeta_fini(dst);
			return BC_ENOMEM;
		}
	return 0;
}

/* ---- metadata in the lower tiers ---------------------------------------- */

/* A validation time ahead of this clock by more than this is not
 * believed (cache_int.h, bc_object_do_restore). */
#define CLOCK_SKEW_MS 1000u

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec < 0 ? 0 : (uint64_t)ts.tv_sec * 1000u +
	    (uint64_t)ts.tv_nsec / 1000000u;
}

void
bc_object_do_persist(bc_cache_t *c, bc_object_t *o, bool learned)
{
	bc_buf_t b = BC_BUF_INIT;

	/* the lower tiers keep one metadata per key: the current version's */
	if (!o->listed || !o->meta_valid || o->version != NULL ||
	    bc_tier_chain_count(c->tiers) < 2)
		return;
	if (!learned && o->meta_saved && (c->meta_ttl_ns == 0 ||
	    o->meta_at_ns - o->meta_saved_ns < c->meta_ttl_ns / 4))
		return;
	if (bc_cache_metablob_encode(&b, &o->meta, wall_ms()) < 0) {
		BC_DEBUG("%s/%s: metadata not kept in the lower tiers (past "
		    "the blob's bounds)", o->bucket, o->key);
	} else {
		bc_tier_chain_meta_put(c->tiers, o->bucket, o->key, b.data,
		    b.len);
		o->meta_saved = true;
		o->meta_saved_ns = o->meta_at_ns;
		BC_STATS_INC(cache_meta_lower_puts);
	}
	bc_buf_fini(&b);
}

int
bc_object_do_restore(bc_cache_t *c, bc_object_t *o, const void *blob,
    size_t len)
{
	uint64_t validated, now = wall_ms(), age_ns;
	uint64_t old = c->meta_ttl_ns + c->meta_stale_ns;
	bc_objmeta_t m;

	if (bc_cache_metablob_decode(blob, len, &m, &validated) < 0 ||
	    m.size / c->cs >= UINT32_MAX) {
		bc_objmeta_fini(&m);
		BC_STATS_INC(cache_meta_lower_corrupt);
		BC_INFO("%s/%s: the lower tier's metadata is damaged; asking "
		    "the origin", o->bucket, o->key);
		return BC_EPROTO;
	}
	if (validated > now + CLOCK_SKEW_MS ||
	    (now > validated && (now - validated) >= old / 1000000u + 1))
		age_ns = old;   /* from the future, or past meta-stale */
	else
		age_ns = now > validated ? (now - validated) * 1000000u : 0;
	bc_objmeta_fini(&o->meta);
	o->meta = m;
	o->meta_valid = true;
	o->public_at_ns = 0;   /* unsigned reads are checked again */
	/* monotonic time runs from boot: an age past it wraps, and
	 * bc_mono_ns() - meta_at_ns still gives it back */
	o->meta_at_ns = bc_mono_ns() - age_ns;
	o->meta_saved = true;
	o->meta_saved_ns = o->meta_at_ns;
	bc_object_do_recharge(c, o);
	BC_STATS_INC(cache_meta_lower_hits);
	return 0;
}

static void
lru_unlink(bc_cache_t *c, bc_object_t *o)
{
	if (o->lru_prev != NULL)
		o->lru_prev->lru_next = o->lru_next;
	else
		c->lru_head = o->lru_next;
	if (o->lru_next != NULL)
		o->lru_next->lru_prev = o->lru_prev;
	else
		c->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
}

static void
lru_push(bc_cache_t *c, bc_object_t *o)
{
	o->lru_prev = NULL;
	o->lru_next = c->lru_head;
	if (c->lru_head != NULL)
		c->lru_head->lru_prev = o;
	c->lru_head = o;
	if (c->lru_tail == NULL)
		c->lru_tail = o;
}

/* c->mu held: recomputes o's metadata charge. */
void
bc_object_do_recharge(bc_cache_t *c, bc_object_t *o)
{
	size_t n = OBJ_OVERHEAD + strlen(o->bucket) + strlen(o->key) + 2 +
	    BC_POLICY_DATASET_MAX + (o->version != NULL ? strlen(o->version) + 1 :
	    0);

	for (size_t i = 0; i < o->meta.headers.n; i++)
		n += strlen(o->meta.headers.v[i].name) +
		    strlen(o->meta.headers.v[i].value) + 2 + 32;
	atomic_fetch_sub(&c->meta_bytes, o->charge);
	atomic_fetch_add(&c->meta_bytes, n);
	atomic_fetch_sub(&c->outside_bytes, o->charge);
	atomic_fetch_add(&c->outside_bytes, n);
	o->charge = n;
}

static void
obj_free(bc_cache_t *c, bc_object_t *o)
{
	atomic_fetch_sub(&c->meta_bytes, o->charge);
	atomic_fetch_sub(&c->outside_bytes, o->charge);
	bc_objmeta_fini(&o->meta);
	free(o->bucket);
	free(o->dataset);
	free(o->key);
	free(o->version);
	free(o);
}

/* c->mu held. */
void
bc_object_do_unref(bc_cache_t *c, bc_object_t *o)
{
	BC_CHECK(o->refs > 0);
	if (--o->refs == 0) {
		BC_CHECK(!o->listed);   /* the table holds a reference */
		obj_free(c, o);
	}
}

void
bc_object_unref(bc_cache_t *c, bc_object_t *o)
{
	if (o == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	bc_object_do_unref(c, o);
	pthread_mutex_unlock(&c->mu);
}

/* c->mu held: takes o out of the table; waiters for its metadata are
 * told to restart. */
void
bc_object_do_unlist(bc_cache_t *c, bc_object_t *o)
{
	if (!o->listed)
		return;
	BC_CHECK(c->nobjects > 0 && o->refs > 0);   /* the table's ref */
	bc_htab_remove(&c->table, &o->hnode);
	lru_unlink(c, o);
	o->listed = false;
	c->nobjects--;
	BC_STATS_SET(cache_objects, c->nobjects);
	bc_waiters_end(&o->meta_waiters, BC_WAIT_RESTART, NULL, 0, 0, NULL, 0);
	bc_object_do_unref(c, o);
}

/* c->mu held: drops idle objects while metadata exceeds its share. */
static void
trim_objects(bc_cache_t *c)
{
	bc_object_t *o = c->lru_tail, *prev;
	uint64_t limit = atomic_load(&c->mem_size) / 8;

	while (o != NULL && atomic_load(&c->meta_bytes) > limit) {
		prev = o->lru_prev;
		if (o->refs == 1 && o->fills == NULL)
			bc_object_do_unlist(c, o);
		o = prev;
	}
}

/* Whether o is the entry of (bucket, key, version). */
static bool
obj_is(const bc_object_t *o, uint64_t h, const char *bucket,
    const char *key, const char *version)
{
	return o->hnode.hash == h && strcmp(o->key, key) == 0 &&
	    strcmp(o->bucket, bucket) == 0 && (version == NULL ?
	    o->version == NULL : o->version != NULL &&
	    strcmp(o->version, version) == 0);
}

bc_object_t *
bc_cache_object(bc_cache_t *c, const char *bucket, const char *key)
{
	return bc_cache_object_version(c, bucket, key, NULL);
}

bc_object_t *
bc_cache_object_version(bc_cache_t *c, const char *bucket, const char *key,
    const char *version)
{
	uint64_t h = obj_hash(bucket, key);
	bc_object_t *o = NULL;
	bc_hnode_t *n;

	pthread_mutex_lock(&c->mu);
	for (n = bc_htab_first(&c->table, h); n != NULL; n = bc_htab_next(n)) {
		o = BC_CONTAINER_OF(n, bc_object_t, hnode);
		if (obj_is(o, h, bucket, key, version))
			break;
	}
	if (n != NULL) {
		lru_unlink(c, o);
		lru_push(c, o);
		o->refs++;
		pthread_mutex_unlock(&c->mu);
		return o;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		goto fail;
	o->bucket = strdup(bucket);
	o->key = strdup(key);
	o->version = version != NULL ? strdup(version) : NULL;
	o->dataset = malloc(BC_POLICY_DATASET_MAX);
	if (o->bucket == NULL || o->key == NULL || o->dataset == NULL ||
	    (version != NULL && o->version == NULL)) {
		free(o->bucket);
		free(o->key);
		free(o->version);
		free(o->dataset);
		free(o);
		o = NULL;
		goto fail;
	}
	/* a version's metadata is never asked of the lower tiers */
	o->meta_probed = version != NULL;
	bc_policy_dataset_name(bucket, key, c->o.cfg->dataset_depth,
	    o->dataset, BC_POLICY_DATASET_MAX);
	o->immutable = bc_config_immutable(c->o.cfg, bucket, key);
	o->listed = true;
	o->refs = 2;   /* the table's and the caller's */
	bc_htab_insert(&c->table, &o->hnode, h);
	lru_push(c, o);
	c->nobjects++;
	bc_object_do_recharge(c, o);
	trim_objects(c);
	BC_STATS_SET(cache_objects, c->nobjects);
fail:
	pthread_mutex_unlock(&c->mu);
	return o;
}

size_t
bc_cache_invalidate(bc_cache_t *c, const char *bucket, const char *key,
    const char *prefix)
{
	size_t n = 0, plen = prefix != NULL ? strlen(prefix) : 0;

	bc_cache_list_invalidate(c->o.lists, bucket, key, prefix);
	pthread_mutex_lock(&c->mu);
	if (key != NULL) {
		uint64_t h = obj_hash(bucket, key);
		bc_hnode_t *hn, *next;

		/* the key and its versions */
		BC_HTAB_FOREACH_HASH(&c->table, h, hn, next) {
			bc_object_t *o = BC_CONTAINER_OF(hn, bc_object_t,
			    hnode);

			if (strcmp(o->key, key) == 0 &&
			    strcmp(o->bucket, bucket) == 0) {
				bc_object_do_unlist(c, o);
				n++;
			}
		}
		bc_tier_chain_del_object(c->tiers, bucket, key, NULL);
	} else {
		bc_hnode_t *hn, *next;
		size_t b;

		BC_HTAB_FOREACH(&c->table, b, hn, next) {
			bc_object_t *o = BC_CONTAINER_OF(hn, bc_object_t,
			    hnode);

			if (strcmp(o->bucket, bucket) == 0 &&
			    strncmp(o->key, prefix != NULL ? prefix : "",
			    plen) == 0) {
				bc_object_do_unlist(c, o);
				n++;
			}
		}
		bc_tier_chain_del_object(c->tiers, bucket, NULL,
		    prefix != NULL ? prefix : "");
	}
	BC_STATS_ADD(cache_invalidations, n);
	if (n > 0)
		bc_stats_bucket_add(bucket, BC_BSTAT_cache_invalidations, n);
	BC_STATS_SET(cache_bytes_held, bc_tier_usage(c->mem));
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* ---- life -------------------------------------------------------------- */

int
bc_cache_new(const bc_cache_opts_t *o, bc_cache_t **out)
{
	bc_cache_t *c = calloc(1, sizeof(*c));
	bc_tier_opts_t to;
	int rv;

	if (c == NULL)
		return BC_ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	c->o = *o;
	c->cs = o->cfg->chunk_size;
	c->first_guess = c->cs < BC_FIRST_GUESS_INIT ? c->cs :
	    BC_FIRST_GUESS_INIT;
	atomic_init(&c->mem_size, o->cfg->mem_size);
	bc_chunk_pages_set_max((size_t)(o->cfg->mem_size / 8));
	c->meta_ttl_ns = o->cfg->meta_ttl * 1000000u;
	c->meta_stale_ns = o->cfg->meta_stale * 1000000u;
	if (c->cs == 0) {
		rv = BC_EINVAL;
		goto fail;
	}
	rv = bc_htab_init(&c->table, TABLE_MIN, false);
	if (rv < 0)
		goto fail;
	memset(&to, 0, sizeof(to));
	to.capacity = o->cfg->mem_size;
	to.policy = bc_policy_find(o->cfg->policy);   /* checked by config */
	to.external_bytes = &c->outside_bytes;
	to.oracle = o->oracle;
	c->tiers = bc_tier_chain_new(o->loop);
	rv = c->tiers == NULL ? BC_ENOMEM :
	    bc_tier_chain_open(c->tiers, &bc_tier_mem, &to);
	if (rv < 0)
		goto fail;
	c->mem = bc_tier_chain_top(c->tiers);
	BC_STATS_SET(cache_bytes_limit, o->cfg->mem_size);
	*out = c;
	return 0;
fail:
	bc_tier_chain_free(c->tiers);
	bc_htab_fini(&c->table);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return rv;
}

void
bc_cache_free(bc_cache_t *c)
{
	bc_hnode_t *hn, *next;
	size_t b;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	BC_HTAB_FOREACH(&c->table, b, hn, next)
		bc_object_do_unlist(c,
		    BC_CONTAINER_OF(hn, bc_object_t, hnode));
	pthread_mutex_unlock(&c->mu);
	bc_tier_chain_free(c->tiers);
	bc_htab_fini(&c->table);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

bc_tier_chain_t *
bc_cache_tiers(bc_cache_t *c)
{
	return c->tiers;
}

uint64_t
bc_cache_bytes_held(bc_cache_t *c)
{
	return bc_tier_usage(c->mem);
}

uint64_t
bc_cache_bytes_limit(bc_cache_t *c)
{
	return atomic_load(&c->mem_size);
}

int
bc_cache_set_mem_size(bc_cache_t *c, uint64_t bytes)
{
	int rv;

	pthread_mutex_lock(&c->mu);
	atomic_store(&c->mem_size, bytes);
	rv = c->mem->ops->set_capacity(c->mem, bytes);
	trim_objects(c);
	BC_STATS_SET(cache_bytes_limit, bytes);
	BC_STATS_SET(cache_bytes_held, bc_tier_usage(c->mem));
	BC_STATS_SET(cache_evictions, bc_tier_evictions(c->mem));
	BC_STATS_SET(cache_objects, c->nobjects);
	pthread_mutex_unlock(&c->mu);
	/* the recycled pages follow the bound (chunk_pages.h) */
	bc_chunk_pages_set_max((size_t)(bytes / 8));
	return rv;
}

uint64_t
bc_cache_mem_floor(bc_cache_t *c)
{
	bc_tier_mem_stats_t s;

	bc_tier_mem_stats(c->mem, &s);
	return s.usage - s.held_bytes;
}

void
bc_cache_set_share(bc_cache_t *c, const char *dataset, uint64_t bytes)
{
	bc_tier_mem_set_target(c->mem, dataset, bytes);
}

uint64_t
bc_cache_share_used(bc_cache_t *c, const char *dataset)
{
	return bc_tier_mem_share_used(c->mem, dataset);
}

void
bc_cache_origin_totals(bc_cache_t *c, uint64_t *bytes, uint64_t *busy_ns,
    uint64_t *ttfb_ns, uint64_t *ttfb_n)
{
	pthread_mutex_lock(&c->mu);
	*busy_ns = c->org_busy_ns + (c->org_running > 0 ?
	    bc_mono_ns() - c->org_since_ns : 0);
	pthread_mutex_unlock(&c->mu);
	*bytes = atomic_load(&c->org_bytes);
	*ttfb_ns = atomic_load(&c->org_ttfb_ns);
	*ttfb_n = atomic_load(&c->org_ttfb_n);
}

uint64_t
bc_cache_evictions(bc_cache_t *c)
{
	return bc_tier_evictions(c->mem);
}

bc_fill_t *
bc_object_do_chunk_fill(bc_object_t *o, const char *etag, uint32_t i)
{
	for (bc_fill_t *f = o->fills; f != NULL; f = f->next)
		if ((f->kind == BC_FILL_CHUNK || f->kind == BC_FILL_FIRST) &&
		    f->index == i && strcmp(f->etag, etag) == 0)
			return f;
	return NULL;
}
