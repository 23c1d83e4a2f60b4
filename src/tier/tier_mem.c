/*
 * tier_mem.c — the memory tier (bc_tier_mem, see tier.h): an entry per
 * chunk held (the chunk, its link in the one hash table, util_htab.h, and
 * its policy node) under one mutex, ordered by a policy. The entry is the
 * tier's record of the chunk; the chunk knows nothing of it, and its
 * charge includes it (BC_CHUNK_HOLDER_BYTES, checked below).
 *
 * Threads: every op takes t->lock; a hit is a lookup, the policy's on_hit
 * and a ref, without allocation. Entries leave the table under the lock
 * and are freed, with the tier's reference to their chunk, outside it (a
 * "deferred" list through the policy node's link, which is ours once the
 * policy forgot the entry).
 *
 * Accounting: capacity bounds usage = acct->bytes + *external_bytes, where
 * acct->bytes is the charge (bc_chunk_charge) of every chunk in the table
 * plus of every chunk the tier dropped (del, replace, close) while others
 * still referenced it: memory stays in use until the last holder lets go.
 * Such a chunk keeps on_free = mem_on_free and tier_data = acct, and
 * mem_on_free subtracts its charge on whatever thread frees it. acct is
 * refcounted (the tier and every chunk carrying mem_on_free hold one), so
 * that may happen after close(). A chunk the tier drops as its only holder
 * has its charge subtracted at once under the lock and on_free cleared.
 * acct->bytes only grows inside put(), under the lock, after room was
 * made, so usage <= capacity holds at every instant (external_bytes
 * growing on its own aside, and a set_capacity() below what chunks in
 * use hold: usage then stays above until they are released, and puts
 * are refused meanwhile).
 *
 * Eviction skips chunks with refs > 1 (evicting them frees nothing now).
 * put() first asks the policy, with a skip callback that only sums, whether
 * enough evictable bytes exist; only then does it evict, so a put that
 * cannot fit changes nothing.
 *
 * Before admit the tier sets the node's size (the charge), fetch_us and
 * key (bc_policy_key_hash of the chunk's bucket, key and index); the
 * policy gets opts.oracle at open and every set_capacity().
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tier/tier.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_htab.h"
#include "util/util_list.h"

#define MIN_BUCKETS 64

struct bc_tier_mem_acct_s {
	_Atomic uint64_t bytes;
	atomic_int       refs;
};

/* The tier's record of one chunk it holds: made by put, freed (and the
 * tier's reference to c dropped) once it has left the table. */
typedef struct entry_s {
	bc_hnode_t       hn;       /* in mem_t.table, under c->hash */
	bc_policy_node_t pol;
	bc_chunk_t      *c;
} entry_t;

/* An entry is one malloc block: its size and glibc's header. */
_Static_assert(sizeof(entry_t) + 16 <= BC_CHUNK_HOLDER_BYTES,
    "the memory tier's entry must fit the holder bytes a chunk's charge "
    "counts (chunk.h)");

typedef struct mem_s {
	bc_tier_t              base;         /* priv: this */
	pthread_mutex_t        lock;
	uint64_t               capacity;
	_Atomic uint64_t      *external;     /* may be NULL */
	const bc_policy_ops_t *pol_ops;
	bc_policy_t           *pol;          /* lock */
	bc_tier_mem_acct_t    *acct;
	bc_htab_t              table;        /* lock: entries */
	uint64_t               held_bytes;   /* lock */
} mem_t;

/* Counters live in the base (tier.h); the memory tier changes them under
 * its lock only, so a snapshot taken under the lock is consistent. */
#define COUNT(t, field, n) BC_TIER_COUNT(&(t)->base, field, n)
#define STAT(t, field)     atomic_load(&(t)->base.stats.field)

static mem_t *
mem_of(bc_tier_t *bt)
{
	BC_CHECK(bt->ops == &bc_tier_mem);
	return bt->priv;
}

/* ---- accounting ---------------------------------------------------- */

static void
acct_unref(bc_tier_mem_acct_t *a)
{
	int old = atomic_fetch_sub(&a->refs, 1);

	BC_CHECK(old > 0);
	if (old == 1)
		free(a);
}

/* on_free of every chunk the tier accounts for: runs on the thread that
 * drops the last reference, possibly after close(). */
static void
mem_on_free(bc_chunk_t *c)
{
	bc_tier_mem_acct_t *a = c->tier_data;

	atomic_fetch_sub(&a->bytes, bc_chunk_charge(c));
	acct_unref(a);
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t
ext_bytes(const mem_t *t)
{
	return t->external == NULL ? 0 : atomic_load(t->external);
}

bc_tier_mem_acct_t *
bc_tier_mem_acct_ref(bc_tier_t *bt)
{
	mem_t *t = mem_of(bt);

	atomic_fetch_add(&t->acct->refs, 1);
	return t->acct;
}

uint64_t
bc_tier_mem_acct_bytes(const bc_tier_mem_acct_t *a)
{
	return atomic_load(&a->bytes);
}

void
bc_tier_mem_acct_unref(bc_tier_mem_acct_t *a)
{
	if (a != NULL)
		acct_unref(a);
}

/* ---- entries (lock held) ------------------------------------------ */

static entry_t *
entry_of(const bc_policy_node_t *n)
{
	return BC_POLICY_ENTRY(n, entry_t, pol);
}

static bc_chunk_t *
chunk_of(const bc_policy_node_t *n)
{
	return entry_of(n)->c;
}

static bool
same_id(const bc_chunk_t *a, const bc_chunk_t *b)
{
	return a->index == b->index && a->id_len == b->id_len &&
	    memcmp(a->id, b->id, a->id_len) == 0;
}

static entry_t *
find_key(const mem_t *t, uint64_t h, const bc_chunk_key_t *k)
{
	bc_hnode_t *n;

	for (n = bc_htab_first(&t->table, h); n != NULL; n = bc_htab_next(n)) {
		entry_t *e = BC_CONTAINER_OF(n, entry_t, hn);

		if (bc_chunk_matches(e->c, k))
			return e;
	}
	return NULL;
}

/* The entry of the chunk with c's id (c itself, or an older copy). */
static entry_t *
find_chunk(const mem_t *t, const bc_chunk_t *c)
{
	bc_hnode_t *n;

	for (n = bc_htab_first(&t->table, c->hash); n != NULL;
	    n = bc_htab_next(n)) {
		entry_t *e = BC_CONTAINER_OF(n, entry_t, hn);

		if (same_id(e->c, c))
			return e;
	}
	return NULL;
}

/* Takes e out of the table, the policy and the accounting, and puts it
 * on deferred (freed, and the tier's reference to its chunk dropped,
 * after unlocking). A chunk others still hold stays charged until its
 * on_free; one only the tier held is uncharged at once. */
static void
drop(mem_t *t, entry_t *e, bc_list_t *deferred)
{
	bc_chunk_t *c = e->c;
	size_t      ch = bc_chunk_charge(c);

	bc_htab_remove(&t->table, &e->hn);
	t->pol_ops->on_remove(t->pol, &e->pol);
	t->held_bytes -= ch;
	if (atomic_load(&c->refs) == 1) {
		/* No one else can reach c: the tier's lookups are locked. */
		c->on_free = NULL;
		c->tier_data = NULL;
		atomic_fetch_sub(&t->acct->bytes, ch);
		acct_unref(t->acct);
	}
	bc_list_insert_head(deferred, &e->pol.link);
}

static void
free_deferred(bc_list_t *deferred)
{
	bc_list_t *l, *tmp;

	BC_LIST_FOREACH_SAFE(l, tmp, deferred) {
		entry_t *e = entry_of(BC_CONTAINER_OF(l, bc_policy_node_t,
		    link));

		bc_list_remove(l);
		bc_chunk_unref(e->c);
		free(e);
	}
}

/* ---- ops ----------------------------------------------------------- */

static int
mem_open(const bc_tier_opts_t *o, bc_tier_t **out)
{
	mem_t     *t = NULL;
	bool       locked = false;
	int        rv = 0;

	if (o == NULL || out == NULL)
		return BC_EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		rv = BC_ENOMEM;
		goto fail;
	}
	bc_tier_init(&t->base, &bc_tier_mem, o->name, t);
	t->capacity = o->capacity;
	t->external = o->external_bytes;
	t->pol_ops = &bc_policy_share;   /* over o->policy: shares (scale/) */
	if (pthread_mutex_init(&t->lock, NULL) != 0) {
		rv = BC_ENOMEM;
		goto fail;
	}
	locked = true;
	t->pol = t->pol_ops->new(&(bc_policy_opts_t){ .capacity =
	    o->capacity, .oracle = o->oracle, .base = o->policy != NULL ?
	    o->policy : &bc_policy_lru });
	t->acct = calloc(1, sizeof(*t->acct));
	if (t->pol == NULL || t->acct == NULL ||
	    bc_htab_init(&t->table, MIN_BUCKETS, false) < 0) {
		rv = BC_ENOMEM;
		goto fail;
	}
	atomic_init(&t->acct->bytes, 0);
	atomic_init(&t->acct->refs, 1);
	*out = &t->base;
	return 0;
fail:
	if (t != NULL) {
		t->pol_ops->free(t->pol);
		free(t->acct);
		bc_htab_fini(&t->table);
		if (locked)
			pthread_mutex_destroy(&t->lock);
		free(t);
	}
	return rv;
}

static bc_chunk_t *
mem_lookup(bc_tier_t *bt, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx)
{
	mem_t      *t = mem_of(bt);
	uint64_t    h = bc_chunk_key_hash(k);
	bc_chunk_t *c = NULL;
	entry_t    *e;

	pthread_mutex_lock(&t->lock);
	e = find_key(t, h, k);
	if (e != NULL) {
		c = e->c;
		bc_chunk_ref(c);
		t->pol_ops->on_hit(t->pol, &e->pol, ctx);
		COUNT(t, hits, 1);
		COUNT(t, bytes_read, c->len);
	} else {
		COUNT(t, misses, 1);
	}
	pthread_mutex_unlock(&t->lock);
	return c;
}

static bool
mem_has(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	mem_t *t = mem_of(bt);
	bool   found;

	pthread_mutex_lock(&t->lock);
	found = find_key(t, bc_chunk_key_hash(k), k) != NULL;
	pthread_mutex_unlock(&t->lock);
	return found;
}

static bool
busy(const bc_chunk_t *c)
{
	return atomic_load(&c->refs) > 1;
}

static bool
busy_skip(void *arg, const bc_policy_node_t *n)
{
	(void)arg;
	return busy(chunk_of(n));
}

/* A chunk a prefetch brought that no client read yet: a prefetch's
 * reservation does not evict it (its bytes are the prefetch budget's,
 * and evicting it would waste a prefetch for another). */
static bool
unread_prefetch(const bc_chunk_t *c)
{
	return atomic_load_explicit(&((bc_chunk_t *)c)->prefetched,
	    memory_order_relaxed) != 0;
}

static bool
busy_or_unread_skip(void *arg, const bc_policy_node_t *n)
{
	(void)arg;
	return busy(chunk_of(n)) || unread_prefetch(chunk_of(n));
}

/* The dry run: sums what evicting would free, in the policy's order,
 * and stops the walk (returns false) once that reaches need. */
struct dry {
	const bc_chunk_t *old;     /* being replaced: accounted apart */
	uint64_t          need, sum;
	bool              keep_unread;   /* skip unread prefetched chunks */
};

static bool
dry_skip(void *arg, const bc_policy_node_t *n)
{
	struct dry *d = arg;
	const bc_chunk_t *c = chunk_of(n);

	if (c == d->old || busy(c) || (d->keep_unread && unread_prefetch(c)))
		return true;
	d->sum += bc_chunk_charge(c);
	return d->sum < d->need;
}

/* Lock held: true when evicting chunks no one else holds (old, being
 * replaced, aside; unread prefetched chunks too when keep_unread) can
 * bring usage + add within room. */
static bool
room_possible(mem_t *t, uint64_t add, uint64_t room,
    const bc_chunk_t *old, bool keep_unread)
{
	uint64_t have = sat_add(atomic_load(&t->acct->bytes), ext_bytes(t));
	struct dry d;

	if (sat_add(have, add) <= room)
		return true;
	d.old = old;
	d.need = sat_add(have, add) - room;
	d.sum = 0;
	d.keep_unread = keep_unread;
	return t->pol_ops->choose_victim(t->pol, dry_skip, &d) != NULL;
}

/* Lock held: evicts, in the policy's order (never an unread prefetched
 * chunk when keep_unread), until usage + add fits the capacity. Returns
 * 0, or BC_E2BIG when the policy contradicted the dry run (room_possible)
 * that must precede. */
static int
evict_to_fit(mem_t *t, uint64_t add, bool keep_unread, bc_list_t *deferred)
{
	bc_policy_node_t *v;

	while (sat_add(sat_add(atomic_load(&t->acct->bytes), ext_bytes(t)),
	    add) > t->capacity) {
		v = t->pol_ops->choose_victim(t->pol, keep_unread ?
		    busy_or_unread_skip : busy_skip, NULL);
		if (v == NULL)
			return BC_E2BIG;
		drop(t, entry_of(v), deferred);
		COUNT(t, evictions, 1);
	}
	return 0;
}

static int
mem_put(bc_tier_t *bt, bc_chunk_t *c, const bc_policy_ctx_t *ctx)
{
	mem_t      *t = mem_of(bt);
	entry_t    *e = calloc(1, sizeof(*e)), *olde;
	bc_chunk_t *old = NULL;
	bc_list_t   deferred;
	uint64_t    ch = bc_chunk_charge(c), add, room;
	bool        ours;
	int         rv = 0;

	if (e == NULL)
		return BC_ENOMEM;
	e->c = c;
	bc_list_init(&deferred);
	pthread_mutex_lock(&t->lock);
	olde = find_chunk(t, c);
	if (olde != NULL)
		old = olde->c;
	if (old == c)
		goto out;
	/* Dropped by this tier while others held it: still charged here. */
	ours = c->on_free == mem_on_free && c->tier_data == t->acct;
	if (c->on_free != NULL && !ours) {
		rv = BC_EEXIST;
		goto out;
	}
	e->pol.size = ch;
	e->pol.fetch_us = c->fetch_us;
	e->pol.key = bc_policy_key_hash(c->id, c->id + strlen(c->id) + 1,
	    c->index);
	if (ch > t->capacity || !t->pol_ops->admit(t->pol, &e->pol, ctx)) {
		rv = BC_E2BIG;
		goto reject;
	}
	add = ours ? 0 : ch;
	room = t->capacity;
	if (old != NULL && atomic_load(&old->refs) == 1)
		room = sat_add(room, bc_chunk_charge(old));
	if (!room_possible(t, add, room, old, false)) {
		rv = BC_E2BIG;
		goto reject;
	}
	if (old != NULL) {
		drop(t, olde, &deferred);
		COUNT(t, deletes, 1);
	}
	rv = evict_to_fit(t, add, false, &deferred);
	if (rv < 0)
		goto reject;
	bc_htab_insert(&t->table, &e->hn, c->hash);
	bc_chunk_ref(c);
	if (!ours) {
		atomic_fetch_add(&t->acct->refs, 1);
		c->tier_data = t->acct;
		c->on_free = mem_on_free;
		atomic_fetch_add(&t->acct->bytes, ch);
	}
	t->held_bytes += ch;
	COUNT(t, writes, 1);
	COUNT(t, bytes_written, ch);
	t->pol_ops->on_insert(t->pol, &e->pol, ctx);
	e = NULL;   /* the table's */
	goto out;
reject:
	COUNT(t, rejects, 1);
out:
	pthread_mutex_unlock(&t->lock);
	free(e);
	free_deferred(&deferred);
	return rv;
}

/* Lock held: the reservations' common part (see tier.h). */
static int
do_reserve(mem_t *t, uint64_t bytes, bool keep_unread, bc_list_t *deferred)
{
	int rv;

	if (bytes > t->capacity || !room_possible(t, bytes, t->capacity,
	    NULL, keep_unread))
		return BC_E2BIG;
	rv = evict_to_fit(t, bytes, keep_unread, deferred);
	if (rv == 0)
		atomic_fetch_add(t->external, bytes);
	return rv;
}

int
bc_tier_mem_reserve(bc_tier_t *bt, uint64_t bytes)
{
	mem_t      *t = mem_of(bt);
	bc_list_t   deferred;
	int         rv;

	BC_CHECK(t->external != NULL);
	bc_list_init(&deferred);
	pthread_mutex_lock(&t->lock);
	rv = do_reserve(t, bytes, false, &deferred);
	pthread_mutex_unlock(&t->lock);
	free_deferred(&deferred);
	return rv;
}

int
bc_tier_mem_reserve_prefetch(bc_tier_t *bt, uint64_t bytes, uint64_t key,
    const bc_policy_ctx_t *ctx)
{
	mem_t            *t = mem_of(bt);
	bc_policy_node_t  n;
	bc_list_t         deferred;
	int               rv = BC_E2BIG;

	BC_CHECK(t->external != NULL);
	memset(&n, 0, sizeof(n));
	n.size = bytes;
	n.key = key;
	bc_list_init(&deferred);
	pthread_mutex_lock(&t->lock);
	if (t->pol_ops->admit(t->pol, &n, ctx))
		rv = do_reserve(t, bytes, true, &deferred);
	pthread_mutex_unlock(&t->lock);
	free_deferred(&deferred);
	return rv;
}

static int
mem_del(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	mem_t      *t = mem_of(bt);
	uint64_t    h = bc_chunk_key_hash(k);
	bc_list_t   deferred;
	entry_t    *e;
	int         rv = 0;

	bc_list_init(&deferred);
	pthread_mutex_lock(&t->lock);
	e = find_key(t, h, k);
	if (e == NULL) {
		rv = BC_ENOENT;
	} else {
		drop(t, e, &deferred);
		COUNT(t, deletes, 1);
	}
	pthread_mutex_unlock(&t->lock);
	free_deferred(&deferred);
	return rv;
}

/* Whether c belongs to bucket and is key (key != NULL) or starts with
 * prefix. */
static bool
object_matches(const bc_chunk_t *c, const char *bucket, size_t blen,
    const char *key, const char *prefix, size_t plen)
{
	const char *ck;

	if (strcmp(c->id, bucket) != 0)
		return false;
	ck = c->id + blen + 1;
	if (key != NULL)
		return strcmp(ck, key) == 0;
	return strncmp(ck, prefix, plen) == 0;
}

static size_t
mem_del_object(bc_tier_t *bt, const char *bucket, const char *key,
    const char *prefix)
{
	mem_t      *t = mem_of(bt);
	bc_list_t   deferred;
	bc_hnode_t *hn, *tmp;
	size_t      blen = strlen(bucket), plen, n = 0, i;

	bc_list_init(&deferred);
	if (prefix == NULL)
		prefix = "";
	plen = strlen(prefix);
	pthread_mutex_lock(&t->lock);
	BC_HTAB_FOREACH(&t->table, i, hn, tmp) {
		entry_t *e = BC_CONTAINER_OF(hn, entry_t, hn);

		if (object_matches(e->c, bucket, blen, key, prefix, plen)) {
			drop(t, e, &deferred);
			n++;
		}
	}
	COUNT(t, deletes, n);
	pthread_mutex_unlock(&t->lock);
	free_deferred(&deferred);
	return n;
}

static uint64_t
mem_capacity(bc_tier_t *bt)
{
	mem_t   *t = mem_of(bt);
	uint64_t cap;

	pthread_mutex_lock(&t->lock);
	cap = t->capacity;
	pthread_mutex_unlock(&t->lock);
	return cap;
}

/* Evicts chunks no one else holds until usage fits; chunks in use keep
 * usage above the new bound until released (room_possible then refuses
 * puts and reservations). */
static int
mem_set_capacity(bc_tier_t *bt, uint64_t bytes)
{
	mem_t      *t = mem_of(bt);
	bc_list_t   deferred;
	int         rv;

	bc_list_init(&deferred);
	pthread_mutex_lock(&t->lock);
	t->capacity = bytes;
	if (t->pol_ops->set_capacity != NULL)
		t->pol_ops->set_capacity(t->pol, bytes);
	rv = evict_to_fit(t, 0, false, &deferred);
	pthread_mutex_unlock(&t->lock);
	free_deferred(&deferred);
	return rv;
}

void
bc_tier_mem_set_target(bc_tier_t *bt, const char *dataset, uint64_t bytes)
{
	mem_t *t = mem_of(bt);

	pthread_mutex_lock(&t->lock);
	t->pol_ops->set_target(t->pol, dataset, bytes);
	pthread_mutex_unlock(&t->lock);
}

uint64_t
bc_tier_mem_share_used(bc_tier_t *bt, const char *dataset)
{
	mem_t *t = mem_of(bt);
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = bc_policy_share_used(t->pol, dataset);
	pthread_mutex_unlock(&t->lock);
	return n;
}

static uint64_t
mem_usage(bc_tier_t *bt)
{
	mem_t *t = mem_of(bt);

	return sat_add(atomic_load(&t->acct->bytes), ext_bytes(t));
}

static uint64_t
mem_evictions(bc_tier_t *bt)
{
	return STAT(mem_of(bt), evictions);
}

void
bc_tier_mem_stats(bc_tier_t *bt, bc_tier_mem_stats_t *out)
{
	mem_t *t = mem_of(bt);

	pthread_mutex_lock(&t->lock);
	out->capacity = t->capacity;
	out->bytes = atomic_load(&t->acct->bytes);
	out->usage = sat_add(out->bytes, ext_bytes(t));
	out->held_bytes = t->held_bytes;
	out->chunks = t->table.n;
	out->hits = STAT(t, hits);
	out->misses = STAT(t, misses);
	out->inserts = STAT(t, writes);
	out->evictions = STAT(t, evictions);
	out->rejected = STAT(t, rejects);
	out->deleted = STAT(t, deletes);
	pthread_mutex_unlock(&t->lock);
}

/* No other op may run on t during or after close. */
static void
mem_close(bc_tier_t *bt)
{
	bc_list_t   deferred;
	bc_hnode_t *hn, *tmp;
	mem_t      *t;
	size_t      i;

	if (bt == NULL)
		return;
	t = mem_of(bt);
	bc_list_init(&deferred);
	BC_HTAB_FOREACH(&t->table, i, hn, tmp)
		drop(t, BC_CONTAINER_OF(hn, entry_t, hn), &deferred);
	free_deferred(&deferred);
	t->pol_ops->free(t->pol);
	bc_htab_fini(&t->table);
	pthread_mutex_destroy(&t->lock);
	acct_unref(t->acct);
	free(t);
}

const bc_tier_ops_t bc_tier_mem = {
	.name = "memory",
	.flags = BC_TIER_SYNC,
	.open = mem_open,
	.lookup = mem_lookup,
	.put = mem_put,
	.del = mem_del,
	.del_object = mem_del_object,
	.capacity = mem_capacity,
	.set_capacity = mem_set_capacity,
	.usage = mem_usage,
	.evictions = mem_evictions,
	.close = mem_close,
	.has = mem_has,
};
