/*
 * tier_disk_index.c — the disk tier's in-memory index (tier_disk_int.h):
 * chunk entries by name hash, objects by (bucket, key) with their chunks
 * (any ETag; bare chunks, whose headers the scan has not read, belong to
 * none yet) and metadata entry, the usage they add up to and the policy
 * that orders them. Every bc_disk_do_* runs with t->lock held; nothing
 * here touches a file.
 *
 * Tables: util_htab (chained; the entry or object embeds its node).
 * Chunk entries are told apart by hash alone (a 64-bit collision makes
 * two chunks share a file name; the header check on read turns that into
 * a miss). Objects compare their names.
 */
#include <stdlib.h>
#include <string.h>

#include "tier/tier_disk_int.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define MIN_SLOTS 64

/* ---- entries and objects ---------------------------------------------- */

bc_policy_ctx_t
bc_disk_ctx(const char *bucket)
{
	bc_policy_ctx_t ctx = { bc_mono_ns(), NULL, bucket, false };

	return ctx;
}

bc_disk_entry_t *
bc_disk_do_chunk(bc_disk_t *t, uint64_t hash)
{
	bc_hnode_t *n = bc_htab_first(&t->chunks, hash);

	return n == NULL ? NULL : BC_CONTAINER_OF(n, bc_disk_entry_t, hn);
}

bc_disk_obj_t *
bc_disk_do_obj(bc_disk_t *t, uint64_t hash, const char *bucket,
    const char *key)
{
	for (bc_hnode_t *n = bc_htab_first(&t->objs, hash); n != NULL;
	    n = bc_htab_next(n)) {
		bc_disk_obj_t *o = BC_CONTAINER_OF(n, bc_disk_obj_t, hn);

		if (strcmp(o->name, bucket) == 0 &&
		    strcmp(o->name + o->blen + 1, key) == 0)
			return o;
	}
	return NULL;
}

bool
bc_disk_do_indexed(bc_disk_t *t, uint8_t kind, uint64_t hash)
{
	if (kind == BC_DISK_CHUNK)
		return bc_disk_do_chunk(t, hash) != NULL;
	for (bc_hnode_t *n = bc_htab_first(&t->objs, hash); n != NULL;
	    n = bc_htab_next(n))
		if (BC_CONTAINER_OF(n, bc_disk_obj_t, hn)->meta != NULL)
			return true;
	return false;
}

static bc_disk_obj_t *
obj_get(bc_disk_t *t, const char *bucket, const char *key)
{
	uint64_t       h = bc_disk_obj_hash(bucket, key);
	bc_disk_obj_t *o = bc_disk_do_obj(t, h, bucket, key);
	size_t         bl, kl;

	if (o != NULL)
		return o;
	bl = strlen(bucket);
	kl = strlen(key);
	o = malloc(sizeof(*o) + bl + kl + 2);
	if (o == NULL)
		return NULL;
	o->hash = h;
	bc_list_init(&o->chunks);
	o->meta = NULL;
	o->blen = bl;
	memcpy(o->name, bucket, bl + 1);
	memcpy(o->name + bl + 1, key, kl + 1);
	bc_htab_insert(&t->objs, &o->hn, h);
	return o;
}

static void
obj_put(bc_disk_t *t, bc_disk_obj_t *o)
{
	if (o->meta != NULL || !bc_list_empty(&o->chunks))
		return;
	bc_htab_remove(&t->objs, &o->hn);
	free(o);
}

int
bc_disk_do_add(bc_disk_t *t, bc_disk_entry_t *e, const char *bucket,
    const char *key, const bc_policy_ctx_t *ctx)
{
	bc_disk_obj_t *o = NULL;

	if (bucket != NULL) {
		o = obj_get(t, bucket, key);
		if (o == NULL)
			return BC_ENOMEM;
	}
	if (e->kind == BC_DISK_CHUNK) {
		BC_CHECK(bc_disk_do_chunk(t, e->hash) == NULL);
		bc_htab_insert(&t->chunks, &e->hn, e->hash);
		if (o != NULL)
			bc_list_insert_head(&o->chunks, &e->olink);
		t->nchunks++;
	} else {
		BC_CHECK(o != NULL);
		BC_CHECK(o->meta == NULL);
		o->meta = e;
		t->nmetas++;
	}
	e->obj = o;
	e->gen = ++t->gen;
	t->usage += e->pol.size;
	if (e->job != NULL)
		t->unwritten += e->pol.size;
	t->pol_ops->on_insert(t->pol, &e->pol, ctx);
	return 0;
}

int
bc_disk_do_attach(bc_disk_t *t, bc_disk_entry_t *e, const char *bucket,
    const char *key, uint32_t index)
{
	bc_disk_obj_t *o;

	BC_CHECK(e->kind == BC_DISK_CHUNK && e->obj == NULL);
	o = obj_get(t, bucket, key);
	if (o == NULL)
		return BC_ENOMEM;
	bc_list_insert_head(&o->chunks, &e->olink);
	e->obj = o;
	e->index = index;
	e->pol.key = bc_policy_key_hash(bucket, key, index);
	return 0;
}

void
bc_disk_victim(bc_disk_unlinks_t *u, uint8_t kind, uint64_t hash)
{
	if (u->n == u->cap) {
		size_t cap = u->cap > 0 ? u->cap * 2 : 8;
		struct bc_disk_victim_s *v = realloc(u->v, cap * sizeof(*v));

		if (v == NULL)
			return;
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n].kind = kind;
	u->v[u->n].hash = hash;
	u->n++;
}

void
bc_disk_do_remove(bc_disk_t *t, bc_disk_entry_t *e, bc_disk_unlinks_t *u)
{
	bc_disk_obj_t *o = e->obj;

	if (e->kind == BC_DISK_CHUNK) {
		bc_htab_remove(&t->chunks, &e->hn);
		if (o != NULL)
			bc_list_remove(&e->olink);
		t->nchunks--;
	} else {
		o->meta = NULL;
		t->nmetas--;
	}
	if (o != NULL)
		obj_put(t, o);
	t->pol_ops->on_remove(t->pol, &e->pol);
	t->usage -= e->pol.size;
	if (e->job != NULL)
		t->unwritten -= e->pol.size;
	if (u != NULL)
		bc_disk_victim(u, e->kind, e->hash);
	free(e);
}

int
bc_disk_do_evict(bc_disk_t *t, uint64_t add, bc_disk_unlinks_t *u)
{
	bc_policy_node_t *v;

	while (t->usage + add > t->capacity) {
		v = t->pol_ops->choose_victim(t->pol, NULL, NULL);
		if (v == NULL)
			return BC_E2BIG;
		bc_disk_do_remove(t, BC_POLICY_ENTRY(v, bc_disk_entry_t, pol),
		    u);
		BC_TIER_COUNT(&t->base, evictions, 1);
	}
	return 0;
}

int
bc_disk_do_apply_capacity(bc_disk_t *t, bc_disk_unlinks_t *u)
{
	uint64_t cap = t->configured < t->fs_cap ? t->configured : t->fs_cap;

	if (cap != t->capacity) {
		t->capacity = cap;
		if (t->pol_ops->set_capacity != NULL)
			t->pol_ops->set_capacity(t->pol, cap);
	}
	return bc_disk_do_evict(t, 0, u);
}

bool
bc_disk_do_filtered(bc_disk_t *t, const char *bucket, const char *key)
{
	for (bc_disk_filter_t *f = t->filters; f != NULL; f = f->next) {
		if (strcmp(f->bucket, bucket) != 0)
			continue;
		if (f->key != NULL ? strcmp(f->key, key) == 0 :
		    strncmp(key, f->prefix, strlen(f->prefix)) == 0)
			return true;
	}
	return false;
}
