/*
 * tier_async.c — the test-only asynchronous tier (tier_async.h): a list
 * of entries under one mutex, each a copy of a chunk's id and bytes with
 * its own policy node; get() answers on the loop thread.
 *
 * Nothing here is referenced from outside while the lock is released
 * (hits copy the bytes), so eviction never has to skip an entry and a
 * put that fits the capacity always finds room.
 */
#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tier_async.h"
#include "util/util_error.h"

typedef struct entry_s {
	struct entry_s  *next;
	bc_policy_node_t pol;
	char            *id;          /* "bucket\0key\0etag\0" */
	size_t           id_len;
	uint32_t         index;
	uint8_t         *data;
	size_t           len;
} entry_t;

typedef struct meta_s {
	struct meta_s *next;
	char          *bucket, *key;
	uint8_t       *blob;
	size_t         len;
} meta_t;

typedef struct async_s {
	bc_tier_t              base;
	bc_tier_async_ctl_t    ctl;
	bc_loop_t             *loop;
	pthread_mutex_t        lock;
	uint64_t               capacity, usage;   /* lock */
	const bc_policy_ops_t *pol_ops;
	bc_policy_t           *pol;               /* lock */
	entry_t               *head;              /* lock */
	meta_t                *metas;             /* lock */
} async_t;

static async_t *
async_of(bc_tier_t *bt)
{
	assert(bt->ops == &bc_tier_async);
	return bt->priv;
}

bc_tier_async_ctl_t *
bc_tier_async_ctl(bc_tier_t *bt)
{
	return &async_of(bt)->ctl;
}

static uint64_t
charge(const entry_t *e)
{
	return sizeof(*e) + e->id_len + e->len;
}

static bool
same_key(const entry_t *e, const bc_chunk_key_t *k)
{
	const char *p = e->id;

	if (e->index != k->index || strcmp(p, k->bucket) != 0)
		return false;
	p += strlen(p) + 1;
	if (strcmp(p, k->key) != 0)
		return false;
	p += strlen(p) + 1;
	return strcmp(p, k->etag) == 0;
}

static bool
same_id(const entry_t *e, const bc_chunk_t *c)
{
	return e->index == c->index && e->id_len == c->id_len &&
	    memcmp(e->id, c->id, c->id_len) == 0;
}

/* Lock held: unlinks e (from *pp), tells the policy, frees it. */
static void
remove_entry(async_t *a, entry_t **pp)
{
	entry_t *e = *pp;

	*pp = e->next;
	a->pol_ops->on_remove(a->pol, &e->pol);
	a->usage -= charge(e);
	free(e->data);
	free(e->id);
	free(e);
}

static entry_t **
link_of(async_t *a, const entry_t *e)
{
	entry_t **pp = &a->head;

	while (*pp != e)
		pp = &(*pp)->next;
	return pp;
}

/* Lock held: evicts in the policy's order until usage + add fits. */
static void
evict_to_fit(async_t *a, uint64_t add)
{
	bc_policy_node_t *v;

	while (a->usage + add > a->capacity) {
		v = a->pol_ops->choose_victim(a->pol, NULL, NULL);
		if (v == NULL)
			return;
		remove_entry(a, link_of(a, BC_POLICY_ENTRY(v, entry_t, pol)));
		BC_TIER_COUNT(&a->base, evictions, 1);
	}
}

/* ---- ops ---------------------------------------------------------------- */

static int
async_open(const bc_tier_opts_t *o, bc_tier_t **out)
{
	async_t *a;

	if (o == NULL || out == NULL || o->loop == NULL)
		return BC_EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return BC_ENOMEM;
	bc_tier_init(&a->base, &bc_tier_async, o->name, a);
	a->loop = o->loop;
	a->capacity = o->capacity;
	a->pol_ops = o->policy != NULL ? o->policy : &bc_policy_lru;
	a->pol = a->pol_ops->new(&(bc_policy_opts_t){ .capacity =
	    o->capacity });
	if (a->pol == NULL) {
		free(a);
		return BC_ENOMEM;
	}
	atomic_init(&a->ctl.health, BC_TIER_UP);
	pthread_mutex_init(&a->lock, NULL);
	*out = &a->base;
	return 0;
}

static void
answer(bc_loop_t *l, void *arg)
{
	bc_tier_get_t *req = arg;
	async_t       *a = async_of(req->tier);
	bc_chunk_t    *c = NULL;
	int            status = atomic_load(&a->ctl.get_status);

	(void)l;
	if (status != 0) {
		BC_TIER_COUNT(&a->base, errors, 1);
		req->cb(req, status, NULL);
		return;
	}
	pthread_mutex_lock(&a->lock);
	for (entry_t *e = a->head; e != NULL; e = e->next) {
		uint8_t *d;

		if (!same_key(e, req->key))
			continue;
		d = malloc(e->len > 0 ? e->len : 1);
		if (d != NULL) {
			memcpy(d, e->data, e->len);
			c = bc_chunk_new(req->key, d, e->len);
		}
		if (c == NULL) {
			status = BC_ENOMEM;
			break;
		}
		c->fetch_us = e->pol.fetch_us;
		a->pol_ops->on_hit(a->pol, &e->pol, req->ctx);
		BC_TIER_COUNT(&a->base, hits, 1);
		BC_TIER_COUNT(&a->base, bytes_read, e->len);
		break;
	}
	if (c == NULL && status == 0) {
		status = BC_ENOENT;
		BC_TIER_COUNT(&a->base, misses, 1);
	}
	pthread_mutex_unlock(&a->lock);
	req->cb(req, status, c);
}

static int
async_get(bc_tier_t *bt, bc_tier_get_t *req, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx, bc_tier_get_cb cb)
{
	async_t *a = async_of(bt);
	int      rv = atomic_load(&a->ctl.get_rv);

	atomic_fetch_add(&a->ctl.gets, 1);
	if (rv != 0) {
		BC_TIER_COUNT(bt, errors, 1);
		return rv;
	}
	req->tier = bt;
	req->key = k;
	req->ctx = ctx;
	req->cb = cb;
	return bc_loop_call(a->loop, answer, req);
}

static int
async_put(bc_tier_t *bt, bc_chunk_t *c, const bc_policy_ctx_t *ctx)
{
	async_t *a = async_of(bt);
	entry_t *e, **pp;
	int      rv = atomic_load(&a->ctl.put_rv);

	atomic_fetch_add(&a->ctl.puts, 1);
	if (rv != 0) {
		BC_TIER_COUNT(bt, write_failures, 1);
		return rv;
	}
	e = calloc(1, sizeof(*e));
	if (e != NULL) {
		e->id = malloc(c->id_len);
		e->data = malloc(c->len > 0 ? c->len : 1);
	}
	if (e == NULL || e->id == NULL || e->data == NULL) {
		if (e != NULL) {
			free(e->id);
			free(e->data);
		}
		free(e);
		BC_TIER_COUNT(bt, write_failures, 1);
		return BC_ENOMEM;
	}
	memcpy(e->id, c->id, c->id_len);
	e->id_len = c->id_len;
	e->index = c->index;
	memcpy(e->data, c->data, c->len);
	e->len = c->len;
	e->pol.size = charge(e);
	e->pol.fetch_us = c->fetch_us;
	pthread_mutex_lock(&a->lock);
	if (charge(e) > a->capacity || !a->pol_ops->admit(a->pol, &e->pol,
	    ctx)) {
		pthread_mutex_unlock(&a->lock);
		BC_TIER_COUNT(bt, rejects, 1);
		free(e->id);
		free(e->data);
		free(e);
		return BC_E2BIG;
	}
	for (pp = &a->head; *pp != NULL; pp = &(*pp)->next)
		if (same_id(*pp, c)) {
			remove_entry(a, pp);
			BC_TIER_COUNT(bt, deletes, 1);
			break;
		}
	evict_to_fit(a, charge(e));
	e->next = a->head;
	a->head = e;
	a->usage += charge(e);
	a->pol_ops->on_insert(a->pol, &e->pol, ctx);
	BC_TIER_COUNT(bt, writes, 1);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static int
async_del(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	async_t *a = async_of(bt);
	int      rv = BC_ENOENT;

	atomic_fetch_add(&a->ctl.dels, 1);
	pthread_mutex_lock(&a->lock);
	for (entry_t **pp = &a->head; *pp != NULL; pp = &(*pp)->next)
		if (same_key(*pp, k)) {
			remove_entry(a, pp);
			BC_TIER_COUNT(bt, deletes, 1);
			rv = 0;
			break;
		}
	pthread_mutex_unlock(&a->lock);
	return rv;
}

static bool
object_matches(const entry_t *e, const char *bucket, const char *key,
    const char *prefix)
{
	const char *k = e->id + strlen(e->id) + 1;

	if (strcmp(e->id, bucket) != 0)
		return false;
	if (key != NULL)
		return strcmp(k, key) == 0;
	return strncmp(k, prefix, strlen(prefix)) == 0;
}

static void
meta_free(meta_t *m)
{
	free(m->bucket);
	free(m->key);
	free(m->blob);
	free(m);
}

/* Lock held: drops the metadata of bucket's objects that are key (key !=
 * NULL) or start with prefix. */
static void
drop_metas(async_t *a, const char *bucket, const char *key,
    const char *prefix)
{
	for (meta_t **pp = &a->metas; *pp != NULL;) {
		meta_t *m = *pp;

		if (strcmp(m->bucket, bucket) == 0 && (key != NULL ?
		    strcmp(m->key, key) == 0 :
		    strncmp(m->key, prefix, strlen(prefix)) == 0)) {
			*pp = m->next;
			meta_free(m);
		} else {
			pp = &m->next;
		}
	}
}

static size_t
async_del_object(bc_tier_t *bt, const char *bucket, const char *key,
    const char *prefix)
{
	async_t  *a = async_of(bt);
	entry_t **pp;
	size_t    n = 0;

	atomic_fetch_add(&a->ctl.dels, 1);
	if (prefix == NULL)
		prefix = "";
	pthread_mutex_lock(&a->lock);
	for (pp = &a->head; *pp != NULL;) {
		if (object_matches(*pp, bucket, key, prefix)) {
			remove_entry(a, pp);
			n++;
		} else {
			pp = &(*pp)->next;
		}
	}
	BC_TIER_COUNT(bt, deletes, n);
	drop_metas(a, bucket, key, prefix);
	pthread_mutex_unlock(&a->lock);
	return n;
}

static int
async_meta_put(bc_tier_t *bt, const char *bucket, const char *key,
    const void *blob, size_t len)
{
	async_t *a = async_of(bt);
	meta_t  *m;
	int      rv = atomic_load(&a->ctl.put_rv);

	atomic_fetch_add(&a->ctl.meta_puts, 1);
	if (rv != 0) {
		BC_TIER_COUNT(bt, write_failures, 1);
		return rv;
	}
	m = calloc(1, sizeof(*m));
	if (m != NULL) {
		m->bucket = strdup(bucket);
		m->key = strdup(key);
		m->blob = malloc(len > 0 ? len : 1);
	}
	if (m == NULL || m->bucket == NULL || m->key == NULL ||
	    m->blob == NULL) {
		if (m != NULL)
			meta_free(m);
		BC_TIER_COUNT(bt, write_failures, 1);
		return BC_ENOMEM;
	}
	memcpy(m->blob, blob, len);
	m->len = len;
	pthread_mutex_lock(&a->lock);
	drop_metas(a, bucket, key, NULL);
	m->next = a->metas;
	a->metas = m;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static void
meta_answer(bc_loop_t *l, void *arg)
{
	bc_tier_meta_get_t *req = arg;
	async_t            *a = async_of(req->tier);
	int                 status = atomic_load(&a->ctl.get_status);
	uint8_t            *copy = NULL;
	size_t              len = 0;

	(void)l;
	if (status != 0) {
		BC_TIER_COUNT(&a->base, errors, 1);
		req->cb(req, status, NULL, 0);
		return;
	}
	status = BC_ENOENT;
	pthread_mutex_lock(&a->lock);
	for (meta_t *m = a->metas; m != NULL; m = m->next) {
		if (strcmp(m->bucket, req->bucket) != 0 ||
		    strcmp(m->key, req->key) != 0)
			continue;
		copy = malloc(m->len > 0 ? m->len : 1);
		status = copy != NULL ? 0 : BC_ENOMEM;
		if (copy != NULL) {
			memcpy(copy, m->blob, m->len);
			len = m->len;
		}
		break;
	}
	pthread_mutex_unlock(&a->lock);
	req->cb(req, status, copy, len);
	free(copy);
}

static int
async_meta_get(bc_tier_t *bt, bc_tier_meta_get_t *req, const char *bucket,
    const char *key, bc_tier_meta_cb cb)
{
	async_t *a = async_of(bt);
	int      rv = atomic_load(&a->ctl.get_rv);

	atomic_fetch_add(&a->ctl.meta_gets, 1);
	if (rv != 0) {
		BC_TIER_COUNT(bt, errors, 1);
		return rv;
	}
	req->tier = bt;
	req->bucket = bucket;
	req->key = key;
	req->cb = cb;
	return bc_loop_call(a->loop, meta_answer, req);
}

static uint64_t
async_capacity(bc_tier_t *bt)
{
	async_t *a = async_of(bt);
	uint64_t v;

	pthread_mutex_lock(&a->lock);
	v = a->capacity;
	pthread_mutex_unlock(&a->lock);
	return v;
}

static int
async_set_capacity(bc_tier_t *bt, uint64_t bytes)
{
	async_t *a = async_of(bt);

	pthread_mutex_lock(&a->lock);
	a->capacity = bytes;
	evict_to_fit(a, 0);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static uint64_t
async_usage(bc_tier_t *bt)
{
	async_t *a = async_of(bt);
	uint64_t v;

	pthread_mutex_lock(&a->lock);
	v = a->usage;
	pthread_mutex_unlock(&a->lock);
	return v;
}

static uint64_t
async_evictions(bc_tier_t *bt)
{
	return atomic_load(&bt->stats.evictions);
}

static bc_tier_state_t
async_health(bc_tier_t *bt)
{
	return atomic_load(&async_of(bt)->ctl.health);
}

static void
async_close(bc_tier_t *bt)
{
	async_t *a;

	if (bt == NULL)
		return;
	a = async_of(bt);
	while (a->head != NULL)
		remove_entry(a, &a->head);
	while (a->metas != NULL) {
		meta_t *m = a->metas;

		a->metas = m->next;
		meta_free(m);
	}
	a->pol_ops->free(a->pol);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

const bc_tier_ops_t bc_tier_async = {
	.name = "async-test",
	.flags = 0,
	.open = async_open,
	.get = async_get,
	.put = async_put,
	.del = async_del,
	.del_object = async_del_object,
	.capacity = async_capacity,
	.set_capacity = async_set_capacity,
	.usage = async_usage,
	.evictions = async_evictions,
	.health = async_health,
	.meta_put = async_meta_put,
	.meta_get = async_meta_get,
	.close = async_close,
};
