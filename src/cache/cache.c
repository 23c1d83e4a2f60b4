/*
 * cache.c — object metadata, chunk lookups and single-flight fills (see
 * cache.h for the contract).
 *
 * Locking: c->mu guards the object table, every object's fields, fills
 * and waiter lists. Tier calls are made with c->mu held (cache lock before
 * tier lock). Fill completions run on the upstream loop thread and take
 * c->mu; exchanges are started with c->mu held (their callbacks run on
 * the loop thread, never before the start returned: upstream.h).
 *
 * Objects: listed in a chained hash table and an LRU list while the cache
 * knows them. Their metadata counts against the memory bound (the memory
 * tier's external_bytes); when it exceeds an eighth of the bound, the
 * least recently used idle objects are dropped (their chunks stay in the
 * tier, keyed by ETag, and are found again once the metadata is).
 * References: the table holds one while listed, each caller and each fill
 * one more; the object is freed when unlisted and the last one goes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/cache.h"
#include "cache/cache_math.h"
#include "s3/s3_cond.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "upstream/upstream_target.h"
#include "upstream/upstream.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_hash.h"
#include "util/util_num.h"
#include "util/util_time.h"

#define TABLE_MIN     4096
#define OBJ_OVERHEAD  (sizeof(bc_object_t) + 64)

typedef enum fill_kind_e {
	FILL_FIRST,        /* chunk + metadata (object not known yet) */
	FILL_CHUNK,        /* one chunk of a known version */
	FILL_HEAD,         /* metadata only (empty objects) */
	FILL_REVALIDATE,   /* HEAD If-None-Match after meta-ttl */
	FILL_PUBLIC,       /* unsigned one-byte If-Match GET: may an unsigned
			      request read this version? */
} fill_kind_t;

typedef struct fill_s {
	struct fill_s *next;        /* in o->fills */
	bc_cache_t    *c;
	bc_object_t   *o;           /* reference held */
	fill_kind_t    kind;
	bool           anon;        /* sent unsigned, for an unsigned request */
	bool           prefetch;    /* no client has waited on it (yet) */
	uint32_t       index;
	char           etag[132];   /* the version expected */
	bc_waiter_t   *waiters;
	bool           joined;      /* a waiter has registered before */
	bool           accepted;    /* its headers named the chunk asked for */
	bool           recheck;     /* stored as another chunk than asked */
	bc_chunk_t    *chunk;       /* filling from the headers on (a ref) */
	size_t         woke_at;     /* bytes filled at the last progress wake */
	size_t         charge;      /* bytes of chunk in c->outside_bytes */
	bc_exchange_t *x;
} fill_t;

#define PROGRESS_WAKE (64 * 1024)   /* bytes between progress wakes */
#define PUBLIC_BODY   (64 * 1024)   /* an unsigned check's answer (one
				       byte, or an error) */

struct bc_object_s {
	bc_object_t  *hnext;                /* hash chain */
	bc_object_t  *lru_prev, *lru_next;  /* most recent at head */
	int           refs;
	bool          listed;
	uint64_t      hash;
	char         *bucket, *key;
	bool          meta_valid;
	bc_objmeta_t  meta;
	uint64_t      meta_at_ns;
	size_t        charge;               /* bytes in c->meta_bytes */
	fill_t       *meta_fill;            /* FIRST, HEAD or REVALIDATE */
	bc_waiter_t  *meta_waiters;
	/* When an unsigned fetch of this version last succeeded (0: never
	 * since its metadata was learned): the only thing that lets an
	 * unsigned request be served from the cache. */
	uint64_t      public_at_ns;
	fill_t       *public_fill;          /* the unsigned check running */
	fill_t       *fills;                /* every fill, meta_fill too */
};

struct bc_cache_s {
	pthread_mutex_t        mu;
	bc_object_t          **table;
	size_t                 nbuckets, nobjects;
	bc_object_t           *lru_head, *lru_tail;
	bc_tier_chain_t       *tiers;
	bc_tier_t             *mem;           /* the top of tiers */
	_Atomic uint64_t       meta_bytes;    /* object metadata */
	/* Bytes held outside the memory tier that count against its bound:
	 * metadata plus chunks being filled (the tier's external_bytes). */
	_Atomic uint64_t       outside_bytes;
	uint64_t               cs, mem_size, meta_ttl_ns, meta_stale_ns;
	bc_cache_opts_t        o;
};

/* The policy context of an event on o's chunks. No jobs are known yet:
 * the dataset is the bucket. */
static bc_policy_ctx_t
policy_ctx(const bc_object_t *o, bool prefetch)
{
	bc_policy_ctx_t ctx = { bc_mono_ns(), NULL, o->bucket, prefetch };

	return ctx;
}

/* Response headers never replayed from the cached metadata: per-response
 * framing, per-request identifiers, and what the gateway adds itself. */
static const char *const unreplayed_headers[] = {
	"Content-Length", "Content-Range", "Date", "Connection",
	"Keep-Alive", "Transfer-Encoding", "x-amz-request-id", "x-amz-id-2",
	"Server", "Accept-Ranges", "x-amz-mp-parts-count", NULL
};


static uint64_t
obj_hash(const char *bucket, const char *key)
{
	uint64_t h = bc_hash(BC_HASH_INIT, bucket, strlen(bucket));

	h = bc_hash(h, "\xff", 1);   /* no bucket name holds it */
	return bc_hash(h, key, strlen(key));
}

/* ---- waiters ----------------------------------------------------------- */

void
bc_waiter_init(bc_waiter_t *w, void (*wake)(void *), void *arg)
{
	memset(w, 0, sizeof(*w));
	w->wake = wake;
	w->arg = arg;
	bc_buf_init(&w->up_body, 0);
}

void
bc_waiter_reset(bc_waiter_t *w)
{
	w->next = NULL;
	w->result = BC_WAIT_PENDING;
	w->chunk = NULL;
	w->err = 0;
	w->up_status = 0;
	w->list = NULL;
	bc_buf_reset(&w->up_body);
}

/* c->mu held: removes w from the list *head. */
static void
waiter_unlink(bc_waiter_t **head, bc_waiter_t *w)
{
	for (bc_waiter_t **pp = head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->next = NULL;
	w->list = NULL;
}

void
bc_waiter_fini(bc_cache_t *c, bc_waiter_t *w)
{
	pthread_mutex_lock(&c->mu);
	if (w->list != NULL)
		waiter_unlink(w->list, w);
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(w->chunk);
	w->chunk = NULL;
	bc_buf_fini(&w->up_body);
}

bc_wait_result_t
bc_waiter_result(bc_cache_t *c, bc_waiter_t *w)
{
	bc_wait_result_t r;

	pthread_mutex_lock(&c->mu);
	r = w->result;
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* c->mu held: registers w on *head; coalesced when w joins a fetch
 * another request is already waiting on. */
static void
waiter_add(bc_object_t *o, bc_waiter_t **head, bc_waiter_t *w,
    bool coalesced)
{
	w->result = BC_WAIT_PENDING;
	w->next = *head;
	*head = w;
	w->list = head;
	if (coalesced && !w->counted) {
		w->counted = true;
		BC_STATS_INC(cache_coalesced_waits);
		bc_stats_bucket_add(o->bucket, BC_BSTAT_cache_coalesced_waits,
		    1);
	}
}

/* c->mu held: ends every waiter on *head with result (and a chunk
 * reference each, or an upstream error copy each), then wakes it. */
static void
waiters_end(bc_waiter_t **head, bc_wait_result_t result, bc_chunk_t *chunk,
    int err, int up_status, const uint8_t *up_body, size_t up_len)
{
	bc_waiter_t *w = *head, *next;

	*head = NULL;
	for (; w != NULL; w = next) {
		next = w->next;
		w->next = NULL;
		w->list = NULL;
		w->result = result;
		if (result == BC_WAIT_CHUNK) {
			bc_chunk_ref(chunk);
			w->chunk = chunk;
		}
		w->err = err;
		w->up_status = up_status;
		if (up_body != NULL)
			bc_buf_append(&w->up_body, up_body, up_len);
		w->wake(w->arg);
	}
}

/* c->mu held: ends every waiter on *head after a fill signed (anon false)
 * or unsigned (anon true) got an upstream error: the waiters of the same
 * kind get it (BC_WAIT_UPSTREAM), the others look again (BC_WAIT_RECHECK):
 * a refusal of an unsigned request says nothing about a signed one, and
 * the reverse. */
static void
waiters_end_upstream(bc_waiter_t **head, bool anon, int up_status,
    const uint8_t *up_body, size_t up_len)
{
	bc_waiter_t *same = NULL, *other = NULL, *w = *head, *next;

	*head = NULL;
	for (; w != NULL; w = next) {
		next = w->next;
		if (w->anon == anon) {
			w->next = same;
			same = w;
		} else {
			w->next = other;
			other = w;
		}
	}
	waiters_end(&same, BC_WAIT_UPSTREAM, NULL, 0, up_status, up_body,
	    up_len);
	waiters_end(&other, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
}

/* c->mu held: hands ch (a reference each) to the waiters on *head that
 * take filling chunks, and leaves the others registered. */
static void
waiters_give_partial(bc_waiter_t **head, bc_chunk_t *ch)
{
	bc_waiter_t **pp = head, *w;

	while ((w = *pp) != NULL) {
		if (!w->partial_ok) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->next = NULL;
		w->list = NULL;
		w->result = BC_WAIT_CHUNK;
		bc_chunk_ref(ch);
		w->chunk = ch;
		w->wake(w->arg);
	}
}

/* ---- objects ----------------------------------------------------------- */

void
bc_objmeta_fini(bc_objmeta_t *m)
{
	bc_kv_fini(&m->headers);
}

static int
objmeta_copy(bc_objmeta_t *dst, const bc_objmeta_t *src)
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
static void
obj_recharge(bc_cache_t *c, bc_object_t *o)
{
	size_t n = OBJ_OVERHEAD + strlen(o->bucket) + strlen(o->key) + 2;

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
	free(o->key);
	free(o);
}

/* c->mu held. */
static void
obj_unref_locked(bc_cache_t *c, bc_object_t *o)
{
	if (--o->refs < 0)
		abort();
	if (o->refs == 0) {
		if (o->listed)
			abort();   /* the table holds a reference */
		obj_free(c, o);
	}
}

void
bc_object_unref(bc_cache_t *c, bc_object_t *o)
{
	if (o == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	obj_unref_locked(c, o);
	pthread_mutex_unlock(&c->mu);
}

/* c->mu held: takes o out of the table; waiters for its metadata are
 * told to restart. */
static void
obj_unlist(bc_cache_t *c, bc_object_t *o)
{
	size_t b = o->hash & (c->nbuckets - 1);

	if (!o->listed)
		return;
	for (bc_object_t **pp = &c->table[b]; *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == o) {
			*pp = o->hnext;
			break;
		}
	}
	o->hnext = NULL;
	lru_unlink(c, o);
	o->listed = false;
	c->nobjects--;
	BC_STATS_SET(cache_objects, c->nobjects);
	waiters_end(&o->meta_waiters, BC_WAIT_RESTART, NULL, 0, 0, NULL, 0);
	obj_unref_locked(c, o);
}

static void
table_grow(bc_cache_t *c)
{
	size_t n = c->nbuckets * 2;
	bc_object_t **t = calloc(n, sizeof(*t));

	if (t == NULL)
		return;   /* longer chains; still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		bc_object_t *o = c->table[i], *next;

		for (; o != NULL; o = next) {
			next = o->hnext;
			o->hnext = t[o->hash & (n - 1)];
			t[o->hash & (n - 1)] = o;
		}
	}
	free(c->table);
	c->table = t;
	c->nbuckets = n;
}

/* c->mu held: drops idle objects while metadata exceeds its share. */
static void
trim_objects(bc_cache_t *c)
{
	bc_object_t *o = c->lru_tail, *prev;
	uint64_t limit = c->mem_size / 8;

	while (o != NULL && atomic_load(&c->meta_bytes) > limit) {
		prev = o->lru_prev;
		if (o->refs == 1 && o->fills == NULL)
			obj_unlist(c, o);
		o = prev;
	}
}

bc_object_t *
bc_cache_object(bc_cache_t *c, const char *bucket, const char *key)
{
	uint64_t h = obj_hash(bucket, key);
	bc_object_t *o;

	pthread_mutex_lock(&c->mu);
	for (o = c->table[h & (c->nbuckets - 1)]; o != NULL; o = o->hnext)
		if (o->hash == h && strcmp(o->key, key) == 0 &&
		    strcmp(o->bucket, bucket) == 0)
			break;
	if (o != NULL) {
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
	if (o->bucket == NULL || o->key == NULL) {
		free(o->bucket);
		free(o->key);
		free(o);
		o = NULL;
		goto fail;
	}
	o->hash = h;
	o->listed = true;
	o->refs = 2;   /* the table's and the caller's */
	if (c->nobjects >= c->nbuckets * 2)
		table_grow(c);
	o->hnext = c->table[h & (c->nbuckets - 1)];
	c->table[h & (c->nbuckets - 1)] = o;
	lru_push(c, o);
	c->nobjects++;
	obj_recharge(c, o);
	trim_objects(c);
	BC_STATS_SET(cache_objects, c->nobjects);
fail:
	pthread_mutex_unlock(&c->mu);
	return o;
}

/* ---- fills ------------------------------------------------------------- */

static void fill_done(bc_exchange_t *x, void *arg);
static void fill_headers(bc_exchange_t *x, void *arg, int status,
    const bc_kvlist_t *h);
static void fill_data(void *arg, size_t total);

/* The origin request for o: a HEAD, or a GET of bytes first..last (the
 * whole object when first is BC_FETCH_WHOLE); cond names a conditional
 * header ("If-Match", ...) to send with etag, or is NULL; sent as an
 * unsigned client's when anon. */
static void
fetch_init(bc_fetch_t *f, const bc_object_t *o, bool head, uint64_t first,
    uint64_t last, const char *cond, const char *etag, bool anon)
{
	memset(f, 0, sizeof(*f));
	f->bucket = o->bucket;
	f->key = o->key;
	f->head = head;
	f->first = head ? BC_FETCH_WHOLE : first;
	f->last = last;
	f->cond = cond;
	f->etag = etag;
	f->anon = anon;
	f->cls = BC_ORIGIN_DEMAND;
}

/*
 * c->mu held: what the chunk a fill of kind brings will cost, reserved
 * under the memory bound (bc_tier_mem_reserve: evicts idle chunks). A
 * first fill does not know the object's size yet: it reserves a whole
 * chunk, and fill_headers() trues the charge up. Returns 0 with *charge
 * (0 for fills that bring no chunk), or BC_ENOSPC when the chunks in use
 * leave no room.
 */
static int
fill_reserve(bc_cache_t *c, const bc_object_t *o, fill_kind_t kind,
    uint32_t index, size_t *charge)
{
	size_t id = strlen(o->bucket) + strlen(o->key) + 3;
	uint64_t len;

	*charge = 0;
	if (kind == FILL_FIRST) {
		len = c->cs;
		id += sizeof(o->meta.etag);
	} else if (kind == FILL_CHUNK) {
		len = bc_chunk_len(index, o->meta.size, c->cs);
		id += strlen(o->meta.etag);
	} else {
		return 0;
	}
	if (len == 0)
		return 0;
	if (bc_tier_mem_reserve(c->mem, bc_chunk_charge_for((size_t)len,
	    id)) < 0)
		return BC_ENOSPC;
	*charge = bc_chunk_charge_for((size_t)len, id);
	return 0;
}

/* c->mu held: starts a fill of kind for o, unsigned when anon. Returns 0
 * and *out, BC_ENOSPC when memory has no room for its chunk (nothing
 * started), or BC_EIO when the exchange could not start. */
static int
fill_start_class(bc_cache_t *c, bc_object_t *o, fill_kind_t kind,
    uint32_t index, bool anon, bc_origin_class_t cls, fill_t **out)
{
	bool head = kind == FILL_HEAD || kind == FILL_REVALIDATE;
	uint64_t first = bc_chunk_start(index, c->cs);
	uint64_t last = first + c->cs - 1;
	const char *cond = kind == FILL_CHUNK || kind == FILL_PUBLIC ?
	    "If-Match" : kind == FILL_REVALIDATE ? "If-None-Match" : NULL;
	bc_fetch_t fo;
	fill_t *f;
	int rv;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return BC_EIO;
	f->c = c;
	f->o = o;
	f->kind = kind;
	f->anon = anon;
	f->index = index;
	if (kind == FILL_PUBLIC) {
		/* one byte (a range of an empty object would be 416) */
		first = o->meta.size > 0 ? 0 : BC_FETCH_WHOLE;
		last = 0;
	}
	if (o->meta_valid)
		memcpy(f->etag, o->meta.etag, sizeof(f->etag));
	rv = fill_reserve(c, o, kind, index, &f->charge);
	if (rv < 0) {
		free(f);
		return rv;
	}
	fetch_init(&fo, o, head, first, last, cond, f->etag, anon);
	fo.cls = cls;
	/* an origin that ignores Range must not make us buffer the whole
	 * object: anything beyond a chunk fails the fill (a check keeps
	 * its headers' verdict, fill_done) */
	fo.collect_max = kind == FILL_PUBLIC ? PUBLIC_BODY : c->cs > 0 ?
	    (size_t)c->cs : 1;
	fo.on_done = fill_done;
	fo.on_headers = fill_headers;
	fo.on_data = fill_data;
	fo.arg = f;
	o->refs++;
	f->next = o->fills;
	o->fills = f;
	f->x = bc_origin_fetch(c->o.origin, &fo);
	if (f->x == NULL) {
		o->fills = f->next;
		o->refs--;
		goto fail;
	}
	BC_STATS_INC(cache_fills);
	if (kind == FILL_REVALIDATE)
		BC_STATS_INC(cache_revalidations);
	*out = f;
	return 0;
fail:
	atomic_fetch_sub(&c->outside_bytes, f->charge);
	free(f);
	return BC_EIO;
}

/* c->mu held: fill_start_class for a fill a client waits on. */
static int
fill_start(bc_cache_t *c, bc_object_t *o, fill_kind_t kind, uint32_t index,
    bool anon, fill_t **out)
{
	return fill_start_class(c, o, kind, index, anon, BC_ORIGIN_DEMAND, out);
}

/* c->mu held: unlinks f from its object. */
static void
fill_unlink(bc_object_t *o, fill_t *f)
{
	for (fill_t **pp = &o->fills; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	if (o->meta_fill == f)
		o->meta_fill = NULL;
	if (o->public_fill == f)
		o->public_fill = NULL;
}

/* A whole decimal number, or UINT64_MAX. */
static uint64_t
parse_u64(const char *v)
{
	uint64_t n;

	return bc_u64_parse_str(v, &n) ? n : UINT64_MAX;
}

/* Parses "bytes first-last/total"; returns total, or UINT64_MAX when
 * malformed or when it does not start at first. */
static uint64_t
content_range_total(const char *v, uint64_t first)
{
	const char *slash = v != NULL ? strrchr(v, '/') : NULL;
	char *end;

	if (slash == NULL || strncmp(v, "bytes ", 6) != 0 ||
	    v[6] < '0' || v[6] > '9' || strtoull(v + 6, &end, 10) != first ||
	    *end != '-')
		return UINT64_MAX;
	return parse_u64(slash + 1);
}

/* Sets o's metadata from a 200/206 response's headers. size: the object
 * size. Returns 0 or BC_EPROTO when there is no ETag. */
static int
meta_from_headers(bc_cache_t *c, bc_object_t *o, const bc_kvlist_t *h,
    uint64_t size)
{
	const char *etag = bc_kv_get(h, "ETag");
	const char *lm = bc_kv_get(h, "Last-Modified");
	bc_objmeta_t m;

	if (etag == NULL || strlen(etag) >= sizeof(m.etag))
		return BC_EPROTO;
	memset(&m, 0, sizeof(m));
	m.size = size;
	snprintf(m.etag, sizeof(m.etag), "%s", etag);
	if (lm == NULL || bc_http_date_parse(lm, &m.last_modified) < 0)
		m.last_modified = 0;
	for (size_t i = 0; i < h->n; i++) {
		bool skip = false;

		for (int j = 0; unreplayed_headers[j] != NULL && !skip; j++)
			skip = strcasecmp(h->v[i].name,
			    unreplayed_headers[j]) == 0;
		if (!skip && bc_kv_add(&m.headers, h->v[i].name,
		    h->v[i].value) < 0) {
			bc_objmeta_fini(&m);
			return BC_ENOMEM;
		}
	}
	/* the unsigned-fetch mark is the old version's */
	if (!o->meta_valid || strcmp(o->meta.etag, m.etag) != 0)
		o->public_at_ns = 0;
	bc_objmeta_fini(&o->meta);
	o->meta = m;
	o->meta_valid = true;
	o->meta_at_ns = bc_mono_ns();
	obj_recharge(c, o);
	return 0;
}

/* c->mu held: f failed or found the object changed; ends its waiters
 * (and, unless f was a chunk fill or an unsigned check, the metadata
 * waiters: every other kind is, or was, the object's metadata fill). An
 * upstream error goes to the waiters signed as f was (the others look
 * again); one answered to an unsigned fill also drops the object's
 * unsigned-fetch mark. */
static void
fill_fail(bc_object_t *o, fill_t *f, bc_wait_result_t res, int err,
    int up_status, const uint8_t *body, size_t len)
{
	bool meta = f->kind != FILL_CHUNK && f->kind != FILL_PUBLIC;

	BC_STATS_INC(cache_fill_failures);
	if (res == BC_WAIT_UPSTREAM) {
		if (f->anon)
			o->public_at_ns = 0;
		waiters_end_upstream(&f->waiters, f->anon, up_status, body,
		    len);
		if (meta)
			waiters_end_upstream(&o->meta_waiters, f->anon,
			    up_status, body, len);
		return;
	}
	waiters_end(&f->waiters, res, NULL, err, up_status, body, len);
	if (meta)
		waiters_end(&o->meta_waiters, res, NULL, err, up_status, body,
		    len);
}

/* c->mu held: the object changed under us; drop it and its chunks. */
static void
obj_changed(bc_cache_t *c, bc_object_t *o)
{
	if (o->listed)
		bc_tier_chain_del_object(c->tiers, o->bucket, o->key, NULL);
	obj_unlist(c, o);
}

/*
 * c->mu held: whether a 200/206 answer to the chunk or first fill f is the
 * chunk asked for. Yes: returns 0 with *size the object's size, and (first
 * fill) the object's metadata set. No: -1; fill_done() then says why.
 */
static int
fill_accept(bc_cache_t *c, fill_t *f, int status, const bc_kvlist_t *h,
    uint64_t *size)
{
	bc_object_t *o = f->o;
	const char *etag = bc_kv_get(h, "ETag");

	if (status != 200 && status != 206)
		return -1;
	if (f->kind == FILL_CHUNK && (etag == NULL ||
	    strcmp(etag, f->etag) != 0))
		return -1;   /* another version: never stitched */
	*size = status == 206 ? content_range_total(bc_kv_get(h,
	    "Content-Range"), bc_chunk_start(f->index, c->cs)) :
	    parse_u64(bc_kv_get(h, "Content-Length"));
	if (*size == UINT64_MAX || (status == 200 && *size > c->cs) ||
	    *size / c->cs >= UINT32_MAX)
		return -1;   /* unsized, whole and too big, or uncountable */
	if (f->kind == FILL_CHUNK) {
		if (!o->meta_valid || *size != o->meta.size)
			return -1;
		/* an If-Match GET answered with the same ETag and size:
		 * the metadata is as fresh as a revalidation would make it */
		o->meta_at_ns = bc_mono_ns();
		if (f->anon)
			o->public_at_ns = o->meta_at_ns;
		return 0;
	}
	if (meta_from_headers(c, o, h, *size) < 0)
		return -1;
	if (f->anon)
		o->public_at_ns = o->meta_at_ns;
	memcpy(f->etag, o->meta.etag, sizeof(f->etag));
	waiters_end(&o->meta_waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
	if (status == 200 && f->index != 0) {
		/* the upstream ignored Range: the body is the whole
		 * (one-chunk) object; keep it as chunk 0 and let the
		 * waiters look again (their range may be past it) */
		f->index = 0;
		f->recheck = true;
	}
	return 0;
}

/* Loop thread: the upstream's headers for f are in. An accepted chunk
 * starts filling in place, and waiters that take filling chunks get it
 * now: their clients receive bytes as they arrive. */
static void
fill_headers(bc_exchange_t *x, void *arg, int status, const bc_kvlist_t *h)
{
	fill_t *f = arg;
	bc_cache_t *c = f->c;
	bc_object_t *o = f->o;
	uint64_t size, want;
	bool woke = false;

	if (f->kind != FILL_FIRST && f->kind != FILL_CHUNK)
		return;
	pthread_mutex_lock(&c->mu);
	if (fill_accept(c, f, status, h, &size) < 0)
		goto out;
	f->accepted = true;
	want = bc_chunk_len(f->index, size, c->cs);
	if (want > 0) {
		bc_chunk_key_t k = { o->bucket, o->key, f->etag, f->index };

		f->chunk = bc_chunk_new_filling(&k, (size_t)want);
		if (f->chunk == NULL) {
			f->accepted = false;    /* fill_done fails it */
			goto out;
		}
		bc_exchange_set_sink(x, f->chunk->data, f->chunk->len);
		/* the bound covers chunks being filled: what fill_reserve()
		 * estimated becomes what the chunk costs */
		atomic_fetch_add(&c->outside_bytes, bc_chunk_charge(f->chunk));
		atomic_fetch_sub(&c->outside_bytes, f->charge);
		f->charge = bc_chunk_charge(f->chunk);
		if (!f->recheck && f->waiters != NULL) {
			waiters_give_partial(&f->waiters, f->chunk);
			woke = true;
		}
	}
out:
	pthread_mutex_unlock(&c->mu);
	/* The rest of the chunk keeps this thread busy: let the woken
	 * workers send their response headers first (on a busy machine the
	 * first byte otherwise waits for the whole transfer). */
	if (woke)
		sched_yield();
}

/* Loop thread: total bytes of f's chunk are in. */
static void
fill_data(void *arg, size_t total)
{
	fill_t *f = arg;

	if (f->chunk == NULL)
		return;
	bc_chunk_fill(f->chunk, total);
	if (total - f->woke_at < PROGRESS_WAKE && total != f->chunk->len)
		return;
	f->woke_at = total;
	pthread_mutex_lock(&f->c->mu);
	waiters_end(&f->chunk->fill_waiters, BC_WAIT_RECHECK, NULL, 0, 0,
	    NULL, 0);
	pthread_mutex_unlock(&f->c->mu);
}

/* c->mu held: ends an accepted fill: its chunk is complete (stored and
 * handed out) or failed (readers are cut off). */
static void
fill_finish_accepted(bc_cache_t *c, bc_object_t *o, fill_t *f, int rv)
{
	bc_chunk_t *ch = f->chunk;

	if (rv < 0 || (ch != NULL && bc_chunk_avail(ch) != ch->len)) {
		if (ch != NULL) {
			bc_chunk_end(ch, BC_CHUNK_FAILED);
			waiters_end(&ch->fill_waiters, BC_WAIT_RECHECK, NULL,
			    0, 0, NULL, 0);
		}
		BC_WARN("%s/%s chunk %u: %s", o->bucket, o->key, f->index,
		    rv < 0 ? bc_strerror(rv) : "short body");
		fill_fail(o, f, BC_WAIT_FAILED, rv < 0 ? rv : BC_EPROTO, 0,
		    NULL, 0);
		return;
	}
	if (ch == NULL) {   /* an empty object: nothing to store */
		waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
		return;
	}
	bc_chunk_end(ch, BC_CHUNK_COMPLETE);
	ch->fetch_us = bc_exchange_elapsed_us(f->x);
	waiters_end(&ch->fill_waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
	if (o->listed) {
		bc_policy_ctx_t ctx = policy_ctx(o, f->prefetch);

		bc_tier_chain_put(c->tiers, ch, &ctx);   /* may not admit */
	}
	waiters_end(&f->waiters, f->recheck ? BC_WAIT_RECHECK : BC_WAIT_CHUNK,
	    ch, 0, 0, NULL, 0);
	/* The fill's own reference goes now when the tier or a reader holds
	 * the chunk (else after unlocking, where freeing is cheaper): a
	 * reader that asks for the next chunk at once must find this one
	 * evictable (fill_reserve). */
	if (atomic_load(&ch->refs) > 1) {
		bc_chunk_unref(ch);
		f->chunk = NULL;
	}
}

/*
 * c->mu held: the unsigned check f ended (hrv: how its headers came). The
 * version it asked for, answered: the object may be served to unsigned
 * requests (and its metadata is as fresh as after a revalidation).
 * Another version (412, or another ETag): the object changed. Any other
 * answer is passed on to the waiting unsigned requests as it came; a 404
 * does not drop the object (an upstream may hide from unsigned clients
 * what exists).
 */
static void
public_done(bc_cache_t *c, bc_object_t *o, fill_t *f, int hrv, int status,
    const bc_kvlist_t *h, const uint8_t *body, size_t len)
{
	const char *etag = hrv == 0 ? bc_kv_get(h, "ETag") : NULL;

	if (hrv < 0) {
		fill_fail(o, f, BC_WAIT_FAILED, hrv, 0, NULL, 0);
		return;
	}
	if ((status == 200 || status == 206) && etag != NULL &&
	    strcmp(etag, f->etag) == 0) {
		if (o->meta_valid && strcmp(o->meta.etag, f->etag) == 0) {
			o->meta_at_ns = bc_mono_ns();
			o->public_at_ns = o->meta_at_ns;
		}
		waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
		return;
	}
	if (status == 412 || status == 200 || status == 206) {
		BC_INFO("%s/%s changed upstream; dropping it", o->bucket,
		    o->key);
		obj_changed(c, o);
		fill_fail(o, f, BC_WAIT_RESTART, 0, 0, NULL, 0);
		return;
	}
	fill_fail(o, f, BC_WAIT_UPSTREAM, 0, status, body, len);
}

static void
fill_done(bc_exchange_t *x, void *arg)
{
	fill_t *f = arg;
	bc_cache_t *c = f->c;
	bc_object_t *o = f->o;
	const bc_kvlist_t *h = NULL;
	int status = 0, rv, hrv;
	size_t len = 0;
	uint8_t *body = bc_exchange_take_body(x, &len);
	const char *etag;

	rv = hrv = bc_exchange_headers(x, &status, &h);
	if (rv == 0)   /* headers came; did the whole body? */
		rv = bc_exchange_error(x);
	pthread_mutex_lock(&c->mu);
	fill_unlink(o, f);
	/* from here the tier counts the chunk, or nobody keeps it */
	atomic_fetch_sub(&c->outside_bytes, f->charge);
	f->charge = 0;
	if (f->accepted) {
		fill_finish_accepted(c, o, f, rv);
		goto out;
	}
	if (f->kind == FILL_PUBLIC) {
		public_done(c, o, f, hrv, status, h, body, len);
		goto out;
	}
	if (rv < 0) {
		fill_fail(o, f, BC_WAIT_FAILED, rv, 0, NULL, 0);
		goto out;
	}
	etag = bc_kv_get(h, "ETag");
	switch (f->kind) {
	case FILL_REVALIDATE:
	case FILL_HEAD:
		if (status == 304 && f->kind == FILL_REVALIDATE) {
			o->meta_at_ns = bc_mono_ns();
		} else if (status == 200 && f->kind == FILL_REVALIDATE &&
		    etag != NULL && strcmp(etag, f->etag) == 0) {
			o->meta_at_ns = bc_mono_ns();   /* ignored If-None-Match */
		} else if (status == 200 && f->kind == FILL_HEAD) {
			uint64_t size = parse_u64(bc_kv_get(h,
			    "Content-Length"));

			if (size == UINT64_MAX ||
			    meta_from_headers(c, o, h, size) < 0) {
				fill_fail(o, f, BC_WAIT_FAILED, BC_EPROTO, 0,
				    NULL, 0);
				goto out;
			}
		} else if (f->kind == FILL_REVALIDATE && (status == 200 ||
		    status == 412 || (status == 404 && !f->anon))) {
			/* a new version or gone (an unsigned 404 may only
			 * hide the object: passed on below, kept) */
			obj_changed(c, o);
			waiters_end(&f->waiters, BC_WAIT_RESTART, NULL, 0, 0,
			    NULL, 0);
			goto out;
		} else {
			fill_fail(o, f, BC_WAIT_UPSTREAM, 0, status, body,
			    len);
			goto out;
		}
		if (f->anon)   /* an unsigned request was answered */
			o->public_at_ns = o->meta_at_ns;
		waiters_end(&o->meta_waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
		waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
		goto out;
	case FILL_FIRST:
		if (status == 416) {
			/* an empty object (or a range past its end): learn
			 * its metadata with a HEAD */
			fill_t *hf;

			if (fill_start(c, o, FILL_HEAD, 0, f->anon, &hf) < 0) {
				fill_fail(o, f, BC_WAIT_FAILED, BC_EIO, 0, NULL,
				    0);
				goto out;
			}
			o->meta_fill = hf;
			hf->waiters = f->waiters;
			for (bc_waiter_t *w = hf->waiters; w != NULL;
			    w = w->next)
				w->list = &hf->waiters;
			f->waiters = NULL;
			goto out;
		}
		break;
	case FILL_CHUNK:
		if (status == 412 || ((status == 200 || status == 206) &&
		    (etag == NULL || strcmp(etag, f->etag) != 0))) {
			/* never stitch two versions together */
			BC_INFO("%s/%s changed upstream; dropping it",
			    o->bucket, o->key);
			obj_changed(c, o);
			fill_fail(o, f, BC_WAIT_RESTART, 0, 0, NULL, 0);
			goto out;
		}
		break;
	case FILL_PUBLIC:   /* public_done() above */
		break;
	}
	if (status == 200 || status == 206)   /* not the chunk asked for */
		fill_fail(o, f, BC_WAIT_FAILED, BC_EPROTO, 0, NULL, 0);
	else
		fill_fail(o, f, BC_WAIT_UPSTREAM, 0, status, body, len);
out:
	BC_STATS_SET(cache_bytes_held, bc_tier_usage(c->mem));
	BC_STATS_SET(cache_evictions, bc_tier_evictions(c->mem));
	obj_unref_locked(c, o);
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(f->chunk);
	free(body);
	bc_exchange_release(x);
	free(f);
}

/* ---- lookups ----------------------------------------------------------- */

/* c->mu held: whether chunk hint of o's version is in memory (a request
 * for it that is not makes a fill, which validates on its way). */
static bool
hint_cached(bc_cache_t *c, bc_object_t *o, uint32_t hint)
{
	bc_chunk_key_t k = { o->bucket, o->key, o->meta.etag, hint };
	bc_policy_ctx_t ctx = policy_ctx(o, false);
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
 * metadata in the same round trip (fill_accept). A failed revalidation
 * leaves the metadata stale; the next request tries again, and past
 * meta-stale requests wait for one.
 */
static void
stale_revalidate(bc_cache_t *c, bc_object_t *o, uint32_t hint, bool anon)
{
	if (o->meta_fill != NULL || !hint_cached(c, o, hint))
		return;
	(void)fill_start(c, o, FILL_REVALIDATE, 0, anon, &o->meta_fill);
}

typedef enum mark_e { MARK_NONE, MARK_STALE, MARK_FRESH } mark_t;

/* c->mu held: how recent o's unsigned-fetch mark is, by the metadata's
 * rule: fresh within meta-ttl, stale (served, rechecked in the
 * background) within meta-stale after that. */
static mark_t
public_mark(const bc_cache_t *c, const bc_object_t *o)
{
	uint64_t age;

	if (o->public_at_ns == 0)
		return MARK_NONE;
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
	    fill_start(c, o, FILL_PUBLIC, 0, true, &o->public_fill) < 0)
		return BC_EIO;
	waiter_add(o, &o->public_fill->waiters, w, false);
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
		(void)fill_start(c, o, FILL_PUBLIC, 0, true, &o->public_fill);
	return 0;
}

int
bc_cache_meta(bc_cache_t *c, bc_object_t *o, uint32_t hint, bc_waiter_t *w,
    bc_objmeta_t *meta, bool *was_cached)
{
	fill_t *mf;
	int rv;

	pthread_mutex_lock(&c->mu);
	if (!o->listed) {
		rv = BC_ECANCELED;
		goto out;
	}
	if (o->meta_valid) {
		uint64_t age = bc_mono_ns() - o->meta_at_ns;
		bool fresh = c->meta_ttl_ns == 0 || age < c->meta_ttl_ns;

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
			rv = objmeta_copy(meta, &o->meta);
			goto out;
		}
	}
	mf = o->meta_fill;
	if (mf != NULL) {
		/* a first fill of the same chunk serves w too, unless w is
		 * unsigned and the fill is not: w then waits for its outcome
		 * and checks for itself */
		if (mf->kind == FILL_FIRST && mf->index == hint &&
		    (mf->anon || !w->anon))
			waiter_add(o, &mf->waiters, w, true);
		else
			waiter_add(o, &o->meta_waiters, w, true);
		mf->joined = true;
		rv = BC_EAGAIN;
		goto out;
	}
	rv = fill_start(c, o, o->meta_valid ? FILL_REVALIDATE :
	    hint == BC_CACHE_META_ONLY ? FILL_HEAD : FILL_FIRST, hint, w->anon,
	    &o->meta_fill);
	if (rv == BC_ENOSPC)   /* no room for the chunk: metadata only */
		rv = fill_start(c, o, FILL_HEAD, 0, w->anon, &o->meta_fill);
	if (rv < 0) {
		rv = BC_EIO;
		goto out;
	}
	waiter_add(o, o->meta_fill->kind != FILL_REVALIDATE ?
	    &o->meta_fill->waiters : &o->meta_waiters, w, false);
	o->meta_fill->joined = true;
	rv = BC_EAGAIN;
out:
	pthread_mutex_unlock(&c->mu);
	return rv;
}

/* bc_cache_chunk(), with the kind of fill it starts (anon: unsigned) given
 * apart from w, which may be NULL. */
static int
chunk_get(bc_cache_t *c, bc_object_t *o, const char *etag, uint32_t i,
    bool fetch, bool anon, bc_waiter_t *w, bc_chunk_t **out)
{
	bc_chunk_key_t k = { o->bucket, o->key, etag, i };
	bc_policy_ctx_t ctx = policy_ctx(o, w == NULL);
	bc_chunk_t *hit;
	fill_t *f;
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
	for (f = o->fills; f != NULL; f = f->next)
		if ((f->kind == FILL_CHUNK || f->kind == FILL_FIRST) &&
		    f->index == i && strcmp(f->etag, etag) == 0)
			break;
	if (!fetch) {
		rv = f != NULL ? BC_EINPROGRESS : BC_EAGAIN;
		goto out;
	}
	if (f == NULL) {
		rv = fill_start_class(c, o, FILL_CHUNK, i, anon, w == NULL ?
		    BC_ORIGIN_PREFETCH : BC_ORIGIN_DEMAND, &f);
		if (rv < 0)
			goto out;
		f->prefetch = true;   /* until a waiter comes */
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
		waiter_add(o, &f->waiters, w, f->joined);
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
	return chunk_get(c, o, etag, i, fetch, w != NULL && w->anon, w, out);
}

int
bc_cache_prefetch(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t i, bool anon)
{
	bc_chunk_t *ch = NULL;
	int rv = chunk_get(c, o, etag, i, true, anon, NULL, &ch);

	bc_chunk_unref(ch);
	return rv == BC_EAGAIN ? 0 : rv;
}

void
bc_cache_read_ahead(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint32_t from, uint32_t last, bool anon)
{
	unsigned n = c->o.cfg->readahead;

	for (uint32_t i = from + 1; i <= last && i > from && n > 0; i++, n--)
		(void)bc_cache_prefetch(c, o, etag, i, anon);
}

bc_exchange_t *
bc_cache_passthrough(bc_cache_t *c, bc_object_t *o, const char *etag,
    uint64_t first, uint64_t last, bool anon, bc_exchange_wake_fn wake,
    void *arg)
{
	bc_exchange_t *x;
	bc_fetch_t fo;

	fetch_init(&fo, o, false, first, last, "If-Match", etag, anon);
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
		waiter_add(NULL, &ch->fill_waiters, w, false);
		rv = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rv;
}

size_t
bc_cache_invalidate(bc_cache_t *c, const char *bucket, const char *key,
    const char *prefix)
{
	size_t n = 0, plen = prefix != NULL ? strlen(prefix) : 0;

	pthread_mutex_lock(&c->mu);
	if (key != NULL) {
		uint64_t h = obj_hash(bucket, key);
		bc_object_t *o = c->table[h & (c->nbuckets - 1)];

		for (; o != NULL; o = o->hnext)
			if (o->hash == h && strcmp(o->key, key) == 0 &&
			    strcmp(o->bucket, bucket) == 0)
				break;
		if (o != NULL) {
			obj_unlist(c, o);
			n++;
		}
		bc_tier_chain_del_object(c->tiers, bucket, key, NULL);
	} else {
		for (size_t b = 0; b < c->nbuckets; b++) {
			bc_object_t *o = c->table[b], *next;

			for (; o != NULL; o = next) {
				next = o->hnext;
				if (strcmp(o->bucket, bucket) == 0 &&
				    strncmp(o->key, prefix != NULL ? prefix :
				    "", plen) == 0) {
					obj_unlist(c, o);
					n++;
				}
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
	c->mem_size = o->cfg->mem_size;
	c->meta_ttl_ns = o->cfg->meta_ttl * 1000000u;
	c->meta_stale_ns = o->cfg->meta_stale * 1000000u;
	c->nbuckets = TABLE_MIN;
	c->table = calloc(c->nbuckets, sizeof(*c->table));
	if (c->table == NULL || c->cs == 0) {
		rv = c->cs == 0 ? BC_EINVAL : BC_ENOMEM;
		goto fail;
	}
	memset(&to, 0, sizeof(to));
	to.capacity = c->mem_size;
	to.policy = bc_policy_find(o->cfg->policy);   /* checked by config */
	to.external_bytes = &c->outside_bytes;
	c->tiers = bc_tier_chain_new(o->loop);
	rv = c->tiers == NULL ? BC_ENOMEM :
	    bc_tier_chain_open(c->tiers, &bc_tier_mem, &to);
	if (rv < 0)
		goto fail;
	c->mem = bc_tier_chain_top(c->tiers);
	BC_STATS_SET(cache_bytes_limit, c->mem_size);
	*out = c;
	return 0;
fail:
	bc_tier_chain_free(c->tiers);
	free(c->table);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return rv;
}

void
bc_cache_free(bc_cache_t *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	for (size_t b = 0; b < c->nbuckets; b++) {
		bc_object_t *o = c->table[b], *next;

		for (; o != NULL; o = next) {
			next = o->hnext;
			obj_unlist(c, o);
		}
	}
	pthread_mutex_unlock(&c->mu);
	bc_tier_chain_free(c->tiers);
	free(c->table);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

uint64_t
bc_cache_bytes_held(bc_cache_t *c)
{
	return bc_tier_usage(c->mem);
}

uint64_t
bc_cache_bytes_limit(bc_cache_t *c)
{
	return c->mem_size;
}

uint64_t
bc_cache_evictions(bc_cache_t *c)
{
	return bc_tier_evictions(c->mem);
}
