/*
 * cache_list.c — the list cache (see cache_list.h for the contract).
 *
 * Entries live in a chained hash table by their canonical key and on an
 * LRU list (most recent at the head), each with a reference the cache
 * holds while it is listed; hits take one more. l->mu guards both and
 * every entry's fields but the answer, which never changes once kept.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/cache_list.h"
#include "stats/stats.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_htab.h"
#include "util/util_list.h"
#include "util/util_time.h"

#define NBUCKETS  4096          /* hash chains (a power of two) */
#define OVERHEAD  128           /* bytes an entry costs beyond its data */

typedef struct entry_s {
	bc_list_entry_t  pub;       /* first: the caller's view */
	bc_hnode_t       hnode;     /* in l->table, by key */
	struct entry_s  *prev, *next;   /* LRU */
	char            *key;       /* canonical, klen bytes */
	size_t           klen;
	char            *bucket, *prefix;
	uint64_t         expires_ns;    /* UINT64_MAX: never */
	size_t           cost;
	int              refs;          /* l->mu */
	bool             listed;
} entry_t;

struct bc_cache_list_s {
	pthread_mutex_t  mu;
	bc_htab_t        table;     /* entry_t.hnode, NBUCKETS chains */
	entry_t         *head, *tail;
	size_t           bytes, max_bytes, max_entry, n;
	uint64_t         ttl_ns;
	const bc_config_t *cfg;
	_Atomic uint64_t gen;
};

/* The query parameters a key holds, in this order; any other one that
 * names something (not bc_s3_param_is_neutral) makes a request
 * uncacheable. */
static const char *const key_params[] = {
	"prefix", "delimiter", "marker", "start-after", "max-keys",
	"continuation-token", "encoding-type", "fetch-owner", NULL
};

/* Request headers that change a listing's answer. */
static const char *const answer_headers[] = {
	"x-amz-request-payer", "x-amz-expected-bucket-owner",
	"x-amz-optional-object-attributes", NULL
};

/* Origin headers not kept: framing, per-request ones, what the gateway
 * adds itself. */
static const char *const dropped_headers[] = {
	"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Date", "x-amz-request-id", "x-amz-id-2", "Server", "Trailer",
	"Upgrade", "Proxy-Connection", NULL
};

static bool
in_list(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcasecmp(*list, name) == 0)
			return true;
	return false;
}

bc_cache_list_t *
bc_cache_list_new(const bc_config_t *cfg)
{
	bc_cache_list_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	if (bc_htab_init(&l->table, NBUCKETS, true) < 0) {
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->mu, NULL);
	l->cfg = cfg;
	l->max_bytes = cfg->list_cache_size;
	l->max_entry = l->max_bytes / 4 < BC_CACHE_LIST_ENTRY_MAX ?
	    l->max_bytes / 4 : BC_CACHE_LIST_ENTRY_MAX;
	l->ttl_ns = cfg->list_ttl * 1000000u;
	atomic_init(&l->gen, 0);
	return l;
}

static void
entry_free(entry_t *e)
{
	bc_kv_fini(&e->pub.headers);
	free((void *)e->pub.body);
	free(e->key);
	free(e->bucket);
	free(e->prefix);
	free(e);
}

/* l->mu held: lets go of a reference. */
static void
do_unref(entry_t *e)
{
	BC_CHECK(e->refs > 0);
	if (--e->refs == 0)
		entry_free(e);
}

static void
lru_unlink(bc_cache_list_t *l, entry_t *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
lru_push(bc_cache_list_t *l, entry_t *e)
{
	e->prev = NULL;
	e->next = l->head;
	if (l->head != NULL)
		l->head->prev = e;
	l->head = e;
	if (l->tail == NULL)
		l->tail = e;
}

/* l->mu held: takes e out of the cache (its holders keep it). */
static void
do_drop(bc_cache_list_t *l, entry_t *e)
{
	BC_CHECK(e->listed && l->n > 0 && l->bytes >= e->cost);
	bc_htab_remove(&l->table, &e->hnode);
	lru_unlink(l, e);
	e->listed = false;
	l->bytes -= e->cost;
	l->n--;
	BC_STATS_SET(list_cache_bytes, l->bytes);
	BC_STATS_SET(list_cache_entries, l->n);
	do_unref(e);
}

void
bc_cache_list_free(bc_cache_list_t *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	while (l->head != NULL)
		do_drop(l, l->head);
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_destroy(&l->mu);
	bc_htab_fini(&l->table);
	free(l);
}

/* Appends a named, length-prefixed field to the key (so no value can be
 * made to look like another field). */
static int
key_field(bc_buf_t *b, const char *name, const char *v)
{
	if (v == NULL)
		return bc_buf_printf(b, "%s-;", name);
	return bc_buf_printf(b, "%s=%zu:", name, strlen(v)) < 0 ||
	    bc_buf_puts(b, v) < 0 || bc_buf_putc(b, ';') < 0 ? BC_ENOMEM : 0;
}

int
bc_cache_list_key(const bc_cache_list_t *l, const bc_s3_req_t *r,
    bool unsigned_, bc_list_key_t *k)
{
	const char *prefix = NULL;
	int rv = BC_ENOMEM;

	memset(k, 0, sizeof(*k));
	if ((r->op != BC_S3OP_ListObjects && r->op != BC_S3OP_ListObjectsV2) ||
	    strcmp(r->method, "GET") != 0)
		return BC_ENOTSUP;
	for (size_t i = 0; i < r->query.n; i++) {
		const char *name = r->query.v[i].name;

		if (strcmp(name, "list-type") == 0 ||
		    bc_s3_param_is_neutral(name))
			continue;
		if (!in_list(key_params, name))
			return BC_ENOTSUP;
		for (size_t j = 0; j < i; j++)
			if (strcmp(r->query.v[j].name, name) == 0)
				return BC_ENOTSUP;   /* repeated */
	}
	for (size_t i = 0; i < r->headers.n; i++)
		if (in_list(answer_headers, r->headers.v[i].name))
			return BC_ENOTSUP;
	prefix = bc_kv_get_exact(&r->query, "prefix");
	if (prefix == NULL)
		prefix = "";
	if (bc_config_immutable(l->cfg, r->bucket, prefix))
		k->ttl_ns = UINT64_MAX;
	else if (l->ttl_ns > 0)
		k->ttl_ns = l->ttl_ns;
	else
		return BC_ENOENT;
	bc_buf_init(&k->key, 0);
	k->prefix = strdup(prefix);
	if (k->prefix == NULL ||
	    bc_buf_printf(&k->key, "v%d;%s;", r->op == BC_S3OP_ListObjectsV2 ?
	    2 : 1, unsigned_ ? "anon" : "signed") < 0 ||
	    key_field(&k->key, "bucket", r->bucket) < 0)
		goto fail;
	for (int i = 0; key_params[i] != NULL; i++)
		if (key_field(&k->key, key_params[i], bc_kv_get_exact(
		    &r->query, key_params[i])) < 0)
			goto fail;
	return 0;
fail:
	bc_cache_list_key_fini(k);
	return rv;
}

void
bc_cache_list_key_fini(bc_list_key_t *k)
{
	bc_buf_fini(&k->key);
	free(k->prefix);
	k->prefix = NULL;
}

static uint64_t
key_hash(const bc_list_key_t *k)
{
	return bc_hash(BC_HASH_INIT, k->key.data, k->key.len);
}

/* l->mu held: the listed entry of k, or NULL. */
static entry_t *
do_find(bc_cache_list_t *l, const bc_list_key_t *k, uint64_t h)
{
	for (bc_hnode_t *n = bc_htab_first(&l->table, h); n != NULL;
	    n = bc_htab_next(n)) {
		entry_t *e = BC_CONTAINER_OF(n, entry_t, hnode);

		if (e->klen == k->key.len &&
		    memcmp(e->key, k->key.data, e->klen) == 0)
			return e;
	}
	return NULL;
}

const bc_list_entry_t *
bc_cache_list_get(bc_cache_list_t *l, const bc_list_key_t *k)
{
	uint64_t h = key_hash(k);
	entry_t *e;

	pthread_mutex_lock(&l->mu);
	e = do_find(l, k, h);
	if (e != NULL && e->expires_ns != UINT64_MAX &&
	    bc_mono_ns() >= e->expires_ns) {
		BC_STATS_INC(list_cache_evictions);
		do_drop(l, e);
		e = NULL;
	}
	if (e != NULL) {
		lru_unlink(l, e);
		lru_push(l, e);
		e->refs++;
	}
	pthread_mutex_unlock(&l->mu);
	return e != NULL ? &e->pub : NULL;
}

void
bc_cache_list_release(bc_cache_list_t *l, const bc_list_entry_t *pub)
{
	if (pub == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	do_unref((entry_t *)(void *)pub);
	pthread_mutex_unlock(&l->mu);
}

uint64_t
bc_cache_list_gen(bc_cache_list_t *l)
{
	return atomic_load(&l->gen);
}

size_t
bc_cache_list_max_entry(const bc_cache_list_t *l)
{
	return l->max_entry;
}

/* A new entry for k holding copies of the answer, or NULL. */
static entry_t *
entry_new(const bc_list_key_t *k, const char *bucket,
    const bc_kvlist_t *headers, const void *body, size_t len)
{
	entry_t *e = calloc(1, sizeof(*e));
	size_t hbytes = 0;
	uint8_t *copy;

	if (e == NULL)
		return NULL;
	copy = malloc(len > 0 ? len : 1);
	e->key = malloc(k->key.len + 1);
	e->bucket = strdup(bucket);
	e->prefix = strdup(k->prefix);
	if (copy == NULL || e->key == NULL || e->bucket == NULL ||
	    e->prefix == NULL)
		goto fail;
	memcpy(copy, body, len);
	e->pub.body = copy;
	copy = NULL;
	e->pub.len = len;
	memcpy(e->key, k->key.data, k->key.len + 1);
	e->klen = k->key.len;
	for (size_t i = 0; headers != NULL && i < headers->n; i++) {
		const bc_kv_t *h = &headers->v[i];

		if (in_list(dropped_headers, h->name))
			continue;
		if (bc_kv_add(&e->pub.headers, h->name, h->value) < 0)
			goto fail;
		hbytes += strlen(h->name) + strlen(h->value) + 32;
	}
	e->cost = sizeof(*e) + OVERHEAD + len + e->klen + hbytes +
	    strlen(bucket) + strlen(k->prefix);
	return e;
fail:
	free(copy);
	entry_free(e);
	return NULL;
}

int
bc_cache_list_put(bc_cache_list_t *l, const bc_list_key_t *k,
    const char *bucket, uint64_t gen, const bc_kvlist_t *headers,
    const void *body, size_t len)
{
	entry_t *e, *old;
	int rv = 0;

	if (len > l->max_entry)
		return BC_E2BIG;
	e = entry_new(k, bucket, headers, body, len);
	if (e == NULL)
		return BC_ENOMEM;
	if (e->cost > l->max_bytes) {
		entry_free(e);
		return BC_E2BIG;
	}
	e->hnode.hash = key_hash(k);
	e->expires_ns = k->ttl_ns == UINT64_MAX ? UINT64_MAX :
	    bc_mono_ns() + k->ttl_ns;
	e->refs = 1;
	pthread_mutex_lock(&l->mu);
	if (atomic_load(&l->gen) != gen) {
		rv = BC_EAGAIN;   /* it may miss a write since */
		goto out;
	}
	old = do_find(l, k, e->hnode.hash);
	if (old != NULL)
		do_drop(l, old);
	while (l->bytes + e->cost > l->max_bytes && l->tail != NULL) {
		BC_STATS_INC(list_cache_evictions);
		do_drop(l, l->tail);
	}
	bc_htab_insert(&l->table, &e->hnode, e->hnode.hash);
	lru_push(l, e);
	e->listed = true;
	l->bytes += e->cost;
	l->n++;
	BC_STATS_INC(list_cache_stores);
	BC_STATS_SET(list_cache_bytes, l->bytes);
	BC_STATS_SET(list_cache_entries, l->n);
	e = NULL;
out:
	pthread_mutex_unlock(&l->mu);
	if (e != NULL)
		entry_free(e);
	return rv;
}

/* Whether a write of key (or, key NULL, anything under prefix) can
 * change e's listing. */
static bool
touches(const entry_t *e, const char *key, const char *prefix)
{
	size_t el = strlen(e->prefix);

	if (key != NULL)
		return strncmp(key, e->prefix, el) == 0;
	return strncmp(e->prefix, prefix, strlen(prefix)) == 0 ||
	    strncmp(prefix, e->prefix, el) == 0;
}

size_t
bc_cache_list_invalidate(bc_cache_list_t *l, const char *bucket,
    const char *key, const char *prefix)
{
	entry_t *e, *next;
	size_t n = 0;

	if (l == NULL)
		return 0;
	if (prefix == NULL)
		prefix = "";
	pthread_mutex_lock(&l->mu);
	atomic_fetch_add(&l->gen, 1);
	for (e = l->head; e != NULL; e = next) {
		next = e->next;
		if (strcmp(e->bucket, bucket) == 0 && touches(e, key, prefix)) {
			do_drop(l, e);
			n++;
		}
	}
	pthread_mutex_unlock(&l->mu);
	BC_STATS_ADD(list_cache_invalidations, n);
	return n;
}
