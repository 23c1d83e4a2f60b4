/*
 * cache_fill.c — single-flight fills of chunks and metadata from the origin
 * (cache_int.h has the locking and reference rules).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

/* Response headers never replayed from the cached metadata: per-response
 * framing, per-request identifiers, and what the gateway adds itself. */
static const char *const unreplayed_headers[] = {
	"Content-Length", "Content-Range", "Date", "Connection",
	"Keep-Alive", "Transfer-Encoding", "x-amz-request-id", "x-amz-id-2",
	"Server", "Accept-Ranges", "x-amz-mp-parts-count", NULL
};



/* ---- fills ------------------------------------------------------------- */

static void fill_done(bc_exchange_t *x, void *arg);
static void fill_headers(bc_exchange_t *x, void *arg, int status,
    const bc_kvlist_t *h);
static void fill_data(void *arg, size_t total);

/* The origin request for o: a HEAD, or a GET of bytes first..last (the
 * whole object when first is BC_FETCH_WHOLE); cond names a conditional
 * header ("If-Match", ...) to send with etag, or is NULL; sent as an
 * unsigned client's when anon. */
void
bc_fill_fetch_init(bc_fetch_t *f, const bc_object_t *o, bool head,
    uint64_t first, uint64_t last, const char *cond, const char *etag,
    bool anon)
{
	memset(f, 0, sizeof(*f));
	f->bucket = o->bucket;
	f->key = o->key;
	f->version = o->version;
	f->head = head;
	f->first = head ? BC_FETCH_WHOLE : first;
	f->last = last;
	f->cond = cond;
	f->etag = etag;
	f->anon = anon;
	f->cls = BC_ORIGIN_DEMAND;
}

/* c->mu held: cost more bytes reserved under the memory bound for a fill
 * of o's chunk index (bc_tier_mem_reserve: evicts idle chunks; for a
 * prefetch, bc_tier_mem_reserve_prefetch: only when the policy keeps the
 * chunk, never evicting an unread prefetch). 0, or BC_ENOSPC (a
 * prefetch's is counted prefetch_declined). */
static int
reserve_more(bc_cache_t *c, const bc_object_t *o, uint32_t index,
    bc_origin_class_t cls, uint64_t cost)
{
	int rv;

	if (cls == BC_ORIGIN_PREFETCH) {
		bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, true);

		rv = bc_tier_mem_reserve_prefetch(c->mem, cost,
		    bc_policy_key_hash(o->bucket, o->key, index), &ctx);
		if (rv < 0)
			BC_STATS_INC(prefetch_declined);
	} else {
		rv = bc_tier_mem_reserve(c->mem, cost);
	}
	return rv < 0 ? BC_ENOSPC : 0;
}

/*
 * c->mu held: what the chunk a fill of kind brings will cost, reserved
 * under the memory bound (reserve_more). A first fill does not know the
 * object's size yet: it reserves what first chunks have been lately
 * (c->first_guess, never a whole chunk unless they were), and
 * fill_headers() trues the charge up to the chunk's size once the
 * headers give it — so in-flight fills evict about what they will hold,
 * not a chunk each. Returns 0 with *charge (0 for fills that bring no
 * chunk), or BC_ENOSPC when the chunks in use leave no room (a prefetch:
 * or it is declined).
 */
static int
fill_reserve(bc_cache_t *c, const bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, bc_origin_class_t cls, size_t *charge)
{
	size_t id = strlen(o->bucket) + strlen(o->key) + 3;
	uint64_t len, cost;
	int rv;

	*charge = 0;
	if (kind == BC_FILL_FIRST) {
		len = c->first_guess;
		id += sizeof(o->meta.etag);
	} else if (kind == BC_FILL_CHUNK) {
		len = bc_chunk_len(index, o->meta.size, c->cs);
		id += strlen(o->meta.etag);
	} else {
		return 0;
	}
	if (len == 0)
		return 0;
	cost = bc_chunk_charge_for((size_t)len, id);
	rv = reserve_more(c, o, index, cls, cost);
	if (rv < 0)
		return rv;
	*charge = cost;
	return 0;
}

/* c->mu held: a first fill learned its chunk's length: the guess for the
 * next ones moves 1/8 of the way to it. */
static void
first_guess_learn(bc_cache_t *c, uint64_t len)
{
	uint64_t g = c->first_guess - c->first_guess / 8 + len / 8;

	if (g < BC_FIRST_GUESS_MIN)
		g = BC_FIRST_GUESS_MIN;
	c->first_guess = g < c->cs ? g : c->cs;
}

/* c->mu held: f's chunk will cost cost bytes, more than f reserved:
 * reserves the rest (a transit fill, within the transit budget). 0, or
 * BC_ENOSPC when there is no room for it. */
static int
fill_true_up(bc_cache_t *c, bc_fill_t *f, size_t cost)
{
	if (cost <= f->charge)
		return 0;
	if (f->transit) {
		if (atomic_load(&c->transit_bytes) + (cost - f->charge) >
		    bc_cache_transit_max(c))
			return BC_ENOSPC;
		return 0;   /* fill_charge moves it */
	}
	if (reserve_more(c, f->o, f->index, f->cls, cost - f->charge) < 0)
		return BC_ENOSPC;
	f->charge = cost;   /* reserve_more counted the rest outside */
	return 0;
}

/* c->mu held: f's charge moves to n bytes (0: it ends), in the counter
 * it is charged to. */
static void
fill_charge(bc_cache_t *c, bc_fill_t *f, size_t n)
{
	if (f->transit) {
		atomic_fetch_add(&c->transit_bytes, n);
		atomic_fetch_sub(&c->transit_bytes, f->charge);
	} else {
		atomic_fetch_add(&c->outside_bytes, n);
		atomic_fetch_sub(&c->outside_bytes, f->charge);
	}
	f->charge = n;
}

/* on_free of a transit fill's chunk: its bytes leave the transit
 * budget when the last reader and lower-tier write let it go. */
static void
transit_on_free(bc_chunk_t *ch)
{
	bc_cache_t *c = ch->tier_data;

	atomic_fetch_sub(&c->transit_bytes, bc_chunk_charge(ch));
}

/*
 * c->mu held: a demand fill of a chunk memory has no room for (its chunks
 * are all in use), with lower tiers: it runs as a transit fill when the
 * transit budget (bc_cache_transit_max) holds its cost. Its waiters get the
 * chunk as from any fill, and it is written to the lower tiers only, so
 * that a set read through a memory tier too small for the readers still
 * lands on disk. Returns whether f became one (its charge set).
 */
static bool
fill_transit(bc_cache_t *c, const bc_object_t *o, bc_fill_t *f)
{
	size_t id = strlen(o->bucket) + strlen(o->key) + 3 +
	    sizeof(o->meta.etag);
	uint64_t len = f->kind == BC_FILL_FIRST ? c->first_guess :
	    bc_chunk_len(f->index, o->meta.size, c->cs);
	size_t cost = bc_chunk_charge_for((size_t)len, id);

	if (bc_tier_chain_count(c->tiers) < 2 ||
	    atomic_load(&c->transit_bytes) + cost > bc_cache_transit_max(c))
		return false;
	f->transit = true;
	f->charge = 0;
	fill_charge(c, f, cost);
	BC_STATS_INC(cache_transit_fills);
	return true;
}

/* c->mu held: f runs (counted by class) / f is over. */
static void
fill_started(bc_cache_t *c, bc_fill_t *f)
{
	atomic_fetch_add(&c->inflight[f->cls], 1);
	if (f->cls == BC_ORIGIN_PREFETCH)
		BC_STATS_INC(prefetch_issued);
}

static void
fill_ended(bc_cache_t *c, bc_fill_t *f)
{
	atomic_fetch_sub(&c->inflight[f->cls], 1);
}

/* c->mu held: a chunk fill's body starts / stops coming from the
 * origin (the time bodies flow, for bc_cache_origin_totals: the
 * bandwidth, latency aside). */
static void
origin_begin(bc_cache_t *c, bc_fill_t *f)
{
	if (f->flowing)
		return;
	f->flowing = true;
	if (c->org_running++ == 0)
		c->org_since_ns = bc_mono_ns();
}

static void
origin_end(bc_cache_t *c, bc_fill_t *f)
{
	if (!f->flowing)
		return;
	f->flowing = false;
	if (--c->org_running == 0)
		c->org_busy_ns += bc_mono_ns() - c->org_since_ns;
}

/* c->mu held: starts f's exchange with the origin. Returns 0 or BC_EIO
 * (f untouched otherwise). */
static int
fill_fetch(bc_cache_t *c, bc_fill_t *f)
{
	bc_object_t *o = f->o;
	bool head = f->kind == BC_FILL_HEAD || f->kind == BC_FILL_REVALIDATE;
	uint64_t first = bc_chunk_start(f->index, c->cs);
	uint64_t last = first + c->cs - 1;
	const char *cond = f->kind == BC_FILL_CHUNK ||
	    f->kind == BC_FILL_PUBLIC ? "If-Match" :
	    f->kind == BC_FILL_REVALIDATE ? "If-None-Match" : NULL;
	bc_fetch_t fo;

	if (f->kind == BC_FILL_PUBLIC) {
		/* one byte (a range of an empty object would be 416) */
		first = o->meta.size > 0 ? 0 : BC_FETCH_WHOLE;
		last = 0;
	}
	bc_fill_fetch_init(&fo, o, head, first, last, cond, f->etag,
	    f->anon);
	fo.cls = f->cls;
	/* an origin that ignores Range must not make us buffer the whole
	 * object: anything beyond a chunk fails the fill (a check keeps
	 * its headers' verdict, fill_done) */
	fo.collect_max = f->kind == BC_FILL_PUBLIC ? PUBLIC_BODY :
	    c->cs > 0 ? (size_t)c->cs : 1;
	fo.on_done = fill_done;
	fo.on_headers = fill_headers;
	fo.on_data = fill_data;
	fo.arg = f;
	f->x = bc_origin_fetch(c->o.origin, &fo);
	if (f->x == NULL)
		return BC_EIO;
	f->sent_ns = bc_mono_ns();
	BC_STATS_INC(cache_fills);
	if (f->kind == BC_FILL_REVALIDATE)
		BC_STATS_INC(cache_revalidations);
	return 0;
}

static void fill_unlink(bc_object_t *o, bc_fill_t *f);
static void fill_fail(bc_object_t *o, bc_fill_t *f, bc_wait_result_t res,
    int err, int up_status, const uint8_t *body, size_t len);

/*
 * Loop thread: the lower tiers answered f's probe. A hit ends the fill
 * with that chunk (promoted into memory and the tiers above the one that
 * had it, and handed to the waiters); a miss goes on to the origin.
 */
static void
fill_probed(bc_tier_probe_t *req, int status, bc_chunk_t *ch, size_t from)
{
	bc_fill_t *f = req->data;
	bc_cache_t *c = f->c;
	bc_object_t *o = f->o;
	bc_chunk_t *other = NULL;   /* a hit of another chunk size */

	pthread_mutex_lock(&c->mu);
	f->probing = false;
	if (status == 0 && !bc_cache_tier_len_ok(c, o, f->index, ch->len)) {
		other = ch;
		ch = NULL;
		status = BC_ENOENT;
	}
	if (status != 0 && fill_fetch(c, f) == 0) {
		pthread_mutex_unlock(&c->mu);
		bc_chunk_unref(other);
		return;
	}
	fill_unlink(o, f);
	fill_charge(c, f, 0);
	if (status == 0) {
		/* the file the chunk was read from goes to the waiters (for
		 * sendfile), not into memory with the chunk */
		for (bc_waiter_t *w = f->waiters; w != NULL; w = w->next) {
			w->tier_hit = true;
			if (ch->fd >= 0 && atomic_load(&ch->refs) == 1) {
				w->fd = fcntl(ch->fd, F_DUPFD_CLOEXEC, 0);
				w->fd_off = ch->fd_off;
			}
		}
		if (ch->fd >= 0 && atomic_load(&ch->refs) == 1) {
			close(ch->fd);
			ch->fd = -1;
		}
		if (o->listed) {
			bc_policy_ctx_t ctx = bc_cache_policy_ctx(o,
			    f->prefetch);

			bc_tier_chain_promote(c->tiers, ch, &ctx, from);
		}
		if (f->prefetch && f->waiters == NULL)
			bc_chunk_mark_prefetched(ch, f->job);
		bc_waiters_end(&f->waiters, BC_WAIT_CHUNK, ch, 0, 0, NULL, 0);
	} else {
		BC_WARN("%s/%s chunk %u: cannot start its fetch", o->bucket,
		    o->key, f->index);
		fill_fail(o, f, BC_WAIT_FAILED, BC_EIO, 0, NULL, 0);
	}
	BC_STATS_SET(cache_bytes_held, bc_tier_usage(c->mem));
	bc_object_do_unref(c, o);
	fill_ended(c, f);
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(ch);
	bc_chunk_unref(other);
	free(f);
}

/* c->mu held: bc_fill_do_start, or (lower) bc_fill_do_start_lower. */
static int
fill_start(bc_cache_t *c, bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, bool anon, bc_origin_class_t cls, bool lower,
    bc_fill_t **out)
{
	bc_fill_t *f;
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
	if (o->meta_valid)
		memcpy(f->etag, o->meta.etag, sizeof(f->etag));
	if (lower)
		rv = fill_transit(c, o, f) ? 0 : BC_ENOSPC;
	else
		rv = fill_reserve(c, o, kind, index, cls, &f->charge);
	if (rv == BC_ENOSPC && !lower && cls == BC_ORIGIN_DEMAND &&
	    (kind == BC_FILL_CHUNK || kind == BC_FILL_FIRST) &&
	    fill_transit(c, o, f))
		rv = 0;
	if (rv < 0) {
		free(f);
		return rv;
	}
	f->cls = cls;
	f->prefetch = cls == BC_ORIGIN_PREFETCH;
	o->refs++;
	f->next = o->fills;
	o->fills = f;
	if (kind == BC_FILL_CHUNK && bc_tier_chain_count(c->tiers) > 1) {
		bc_chunk_key_t k = { o->bucket, o->key, f->etag, index };
		bc_policy_ctx_t ctx = bc_cache_policy_ctx(o,
		    cls == BC_ORIGIN_PREFETCH);

		f->probe.data = f;
		f->probe.len_hint = o->meta_valid ?
		    bc_chunk_len(index, o->meta.size, c->cs) : 0;
		f->probing = true;
		if (bc_tier_chain_probe(c->tiers, &f->probe, &k, &ctx,
		    fill_probed) == 0) {
			fill_started(c, f);
			*out = f;
			return 0;
		}
		f->probing = false;   /* a miss known at once */
	}
	rv = fill_fetch(c, f);
	if (rv < 0) {
		o->fills = f->next;
		o->refs--;
		fill_charge(c, f, 0);
		free(f);
		return rv;
	}
	fill_started(c, f);
	*out = f;
	return 0;
}

int
bc_fill_do_start(bc_cache_t *c, bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, bool anon, bc_origin_class_t cls, bc_fill_t **out)
{
	return fill_start(c, o, kind, index, anon, cls, false, out);
}

int
bc_fill_do_start_lower(bc_cache_t *c, bc_object_t *o, bc_fill_kind_t kind,
    uint32_t index, bc_fill_t **out)
{
	return fill_start(c, o, kind, index, false, BC_ORIGIN_PREFETCH, true,
	    out);
}

/*
 * Loop thread: the lower tiers answered f's metadata probe. A hit makes
 * the metadata o's (bc_object_do_restore); either way o's metadata
 * waiters look again: with it they are served (and its chunks come
 * through the chunk path, which asks the lower tiers too), without it
 * they start the origin's first fill. A prefetch's probe no client joined
 * goes on as the prefetch would have.
 */
static void
meta_probed(bc_tier_meta_probe_t *req, int status, const void *blob,
    size_t len, size_t from)
{
	bc_fill_t *f = req->data;
	bc_cache_t *c = f->c;
	bc_object_t *o = f->o;
	bool go_on;

	(void)from;
	pthread_mutex_lock(&c->mu);
	fill_unlink(o, f);
	if (status != 0)
		BC_STATS_INC(cache_meta_lower_misses);
	else if (o->listed && !o->meta_valid &&
	    bc_object_do_restore(c, o, blob, len) == 0)
		for (bc_waiter_t *w = o->meta_waiters; w != NULL; w = w->next)
			w->tier_hit = true;
	go_on = f->prefetch && o->listed && o->meta_waiters == NULL;
	bc_waiters_end(&o->meta_waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
	pthread_mutex_unlock(&c->mu);
	if (go_on)
		(void)bc_cache_prefetch_key(c, o->bucket, o->key, f->index, 1,
		    f->anon, f->job);
	bc_object_unref(c, o);
	free(f);
}

int
bc_fill_do_probe_meta(bc_cache_t *c, bc_object_t *o, uint32_t hint,
    bool anon, bc_origin_class_t cls, bc_stats_job_id_t job)
{
	bc_fill_t *f;
	int rv;

	o->meta_probed = true;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return BC_ENOMEM;
	f->c = c;
	f->o = o;
	f->kind = BC_FILL_META_PROBE;
	f->anon = anon;
	f->index = hint;
	f->cls = cls;
	f->prefetch = cls == BC_ORIGIN_PREFETCH;
	f->job = job;
	f->mprobe.data = f;
	rv = bc_tier_chain_meta_probe(c->tiers, &f->mprobe, o->bucket, o->key,
	    meta_probed);
	if (rv < 0) {
		free(f);
		return rv;
	}
	o->refs++;
	f->next = o->fills;
	o->fills = f;
	o->meta_fill = f;
	return 0;
}

/* c->mu held: unlinks f from its object. */
static void
fill_unlink(bc_object_t *o, bc_fill_t *f)
{
	for (bc_fill_t **pp = &o->fills; *pp != NULL; pp = &(*pp)->next) {
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
	uint64_t f = 0;
	ssize_t k;

	if (slash == NULL || strncmp(v, "bytes ", 6) != 0)
		return UINT64_MAX;
	k = bc_u64_prefix(v + 6, (size_t)(slash - v - 6), &f);
	if (k <= 0 || f != first || v[6 + k] != '-')
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
	bc_object_do_recharge(c, o);
	bc_object_do_persist(c, o, true);
	return 0;
}

/* c->mu held: f failed or found the object changed; ends its waiters
 * (and, unless f was a chunk fill or an unsigned check, the metadata
 * waiters: every other kind is, or was, the object's metadata fill). An
 * upstream error goes to the waiters signed as f was (the others look
 * again); one answered to an unsigned fill also drops the object's
 * unsigned-fetch mark. */
static void
fill_fail(bc_object_t *o, bc_fill_t *f, bc_wait_result_t res, int err,
    int up_status, const uint8_t *body, size_t len)
{
	bool meta = f->kind != BC_FILL_CHUNK && f->kind != BC_FILL_PUBLIC;

	BC_STATS_INC(cache_fill_failures);
	if (res == BC_WAIT_UPSTREAM) {
		if (f->anon)
			o->public_at_ns = 0;
		bc_waiters_end_upstream(&f->waiters, f->anon, up_status, body,
		    len);
		if (meta)
			bc_waiters_end_upstream(&o->meta_waiters, f->anon,
			    up_status, body, len);
		return;
	}
	bc_waiters_end(&f->waiters, res, NULL, err, up_status, body, len);
	if (meta)
		bc_waiters_end(&o->meta_waiters, res, NULL, err, up_status,
		    body, len);
}

/* c->mu held: the object changed under us; drop it and its chunks. */
static void
obj_changed(bc_cache_t *c, bc_object_t *o)
{
	if (o->listed)
		bc_tier_chain_del_object(c->tiers, o->bucket, o->key, NULL);
	bc_object_do_unlist(c, o);
}

/*
 * c->mu held: whether a 200/206 answer to the chunk or first fill f is the
 * chunk asked for. Yes: returns 0 with *size the object's size, and (first
 * fill) the object's metadata set. No: -1; fill_done() then says why.
 */
static int
fill_accept(bc_cache_t *c, bc_fill_t *f, int status, const bc_kvlist_t *h,
    uint64_t *size)
{
	bc_object_t *o = f->o;
	const char *etag = bc_kv_get(h, "ETag");

	if (status != 200 && status != 206)
		return -1;
	if (f->kind == BC_FILL_CHUNK && (etag == NULL ||
	    strcmp(etag, f->etag) != 0))
		return -1;   /* another version: never stitched */
	*size = status == 206 ? content_range_total(bc_kv_get(h,
	    "Content-Range"), bc_chunk_start(f->index, c->cs)) :
	    parse_u64(bc_kv_get(h, "Content-Length"));
	if (*size == UINT64_MAX || (status == 200 && *size > c->cs) ||
	    *size / c->cs >= UINT32_MAX)
		return -1;   /* unsized, whole and too big, or uncountable */
	if (f->kind == BC_FILL_CHUNK) {
		if (!o->meta_valid || *size != o->meta.size)
			return -1;
		/* an If-Match GET answered with the same ETag and size:
		 * the metadata is as fresh as a revalidation would make it */
		o->meta_at_ns = bc_mono_ns();
		if (f->anon)
			o->public_at_ns = o->meta_at_ns;
		bc_object_do_persist(c, o, false);
		return 0;
	}
	if (meta_from_headers(c, o, h, *size) < 0)
		return -1;
	if (f->anon)
		o->public_at_ns = o->meta_at_ns;
	memcpy(f->etag, o->meta.etag, sizeof(f->etag));
	bc_waiters_end(&o->meta_waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
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
	bc_fill_t *f = arg;
	bc_cache_t *c = f->c;
	bc_object_t *o = f->o;
	uint64_t size, want;
	bool woke = false;

	if (f->kind != BC_FILL_FIRST && f->kind != BC_FILL_CHUNK)
		return;
	if (f->sent_ns != 0) {
		atomic_fetch_add(&c->org_ttfb_ns, bc_mono_ns() - f->sent_ns);
		atomic_fetch_add(&c->org_ttfb_n, 1);
	}
	pthread_mutex_lock(&c->mu);
	if (fill_accept(c, f, status, h, &size) < 0)
		goto out;
	f->accepted = true;
	origin_begin(c, f);
	want = bc_chunk_len(f->index, size, c->cs);
	if (f->kind == BC_FILL_FIRST)
		first_guess_learn(c, want);
	if (want > 0 && fill_true_up(c, f, bc_chunk_charge_for((size_t)want,
	    strlen(o->bucket) + strlen(o->key) + 3 + strlen(f->etag))) < 0) {
		/* no room for the chunk: keep nothing (the body, not sunk,
		 * ends the exchange); the waiters look again, metadata
		 * known now, and read around the cache */
		BC_STATS_INC(cache_fill_no_room);
		f->no_room = true;
		f->accepted = false;
		goto out;
	}
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
		fill_charge(c, f, bc_chunk_charge(f->chunk));
		if (!f->recheck && f->waiters != NULL) {
			bc_waiters_give_partial(&f->waiters, f->chunk);
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
	bc_fill_t *f = arg;

	if (f->chunk == NULL)
		return;
	if (total > f->counted) {
		atomic_fetch_add(&f->c->org_bytes, total - f->counted);
		f->counted = total;
	}
	bc_chunk_fill(f->chunk, total);
	if (total - f->woke_at < PROGRESS_WAKE && total != f->chunk->len)
		return;
	f->woke_at = total;
	pthread_mutex_lock(&f->c->mu);
	bc_waiters_end(&f->chunk->fill_waiters, BC_WAIT_RECHECK, NULL, 0, 0,
	    NULL, 0);
	pthread_mutex_unlock(&f->c->mu);
}

/* c->mu held: ends an accepted fill: its chunk is complete (stored and
 * handed out) or failed (readers are cut off). */
static void
fill_finish_accepted(bc_cache_t *c, bc_object_t *o, bc_fill_t *f, int rv)
{
	bc_chunk_t *ch = f->chunk;

	if (rv < 0 || (ch != NULL && bc_chunk_avail(ch) != ch->len)) {
		if (ch != NULL) {
			bc_chunk_end(ch, BC_CHUNK_FAILED);
			bc_waiters_end(&ch->fill_waiters, BC_WAIT_RECHECK, NULL,
			    0, 0, NULL, 0);
		}
		BC_WARN("%s/%s chunk %u: %s", o->bucket, o->key, f->index,
		    rv < 0 ? bc_strerror(rv) : "short body");
		fill_fail(o, f, BC_WAIT_FAILED, rv < 0 ? rv : BC_EPROTO, 0,
		    NULL, 0);
		return;
	}
	if (ch == NULL) {   /* an empty object: nothing to store */
		bc_waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
		return;
	}
	bc_chunk_end(ch, BC_CHUNK_COMPLETE);
	ch->fetch_us = bc_exchange_elapsed_us(f->x);
	atomic_store(&c->fetch_us, atomic_load(&c->fetch_us) == 0 ?
	    ch->fetch_us : (atomic_load(&c->fetch_us) * 7 + ch->fetch_us) / 8);
	if (f->prefetch)   /* no client waited on it */
		bc_chunk_mark_prefetched(ch, f->job);
	bc_waiters_end(&ch->fill_waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL, 0);
	if (o->listed && f->transit) {
		bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, false);

		bc_tier_chain_put_lower(c->tiers, ch, &ctx);
	} else if (o->listed) {
		bc_policy_ctx_t ctx = bc_cache_policy_ctx(o, f->prefetch);

		/* may not admit: a prefetch it refuses is dropped unread */
		if (bc_tier_chain_put(c->tiers, ch, &ctx) != 0 && f->prefetch)
			BC_STATS_INC(prefetch_rejected);
	}
	bc_waiters_end(&f->waiters,
	    f->recheck ? BC_WAIT_RECHECK : BC_WAIT_CHUNK,
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
public_done(bc_cache_t *c, bc_object_t *o, bc_fill_t *f, int hrv, int status,
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
			bc_object_do_persist(c, o, false);
		}
		bc_waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
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
	bc_fill_t *f = arg;
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
	origin_end(c, f);
	fill_unlink(o, f);
	/* from here the tier counts the chunk, or nobody keeps it; a
	 * transit chunk counts itself until freed */
	if (f->transit && f->chunk != NULL &&
	    f->charge == bc_chunk_charge(f->chunk)) {
		f->chunk->tier_data = c;
		f->chunk->on_free = transit_on_free;
		f->charge = 0;
	} else {
		fill_charge(c, f, 0);
	}
	if (f->accepted) {
		fill_finish_accepted(c, o, f, rv);
		goto out;
	}
	if (f->no_room) {
		bc_waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0, NULL,
		    0);
		goto out;
	}
	if (f->kind == BC_FILL_PUBLIC) {
		public_done(c, o, f, hrv, status, h, body, len);
		goto out;
	}
	if (rv < 0) {
		fill_fail(o, f, BC_WAIT_FAILED, rv, 0, NULL, 0);
		goto out;
	}
	etag = bc_kv_get(h, "ETag");
	switch (f->kind) {
	case BC_FILL_REVALIDATE:
	case BC_FILL_HEAD:
		if (status == 304 && f->kind == BC_FILL_REVALIDATE) {
			o->meta_at_ns = bc_mono_ns();
			bc_object_do_persist(c, o, false);
		} else if (status == 200 && f->kind == BC_FILL_REVALIDATE &&
		    etag != NULL && strcmp(etag, f->etag) == 0) {
			/* an upstream that ignored If-None-Match */
			o->meta_at_ns = bc_mono_ns();
			bc_object_do_persist(c, o, false);
		} else if (status == 200 && f->kind == BC_FILL_HEAD) {
			uint64_t size = parse_u64(bc_kv_get(h,
			    "Content-Length"));

			if (size == UINT64_MAX ||
			    meta_from_headers(c, o, h, size) < 0) {
				fill_fail(o, f, BC_WAIT_FAILED, BC_EPROTO, 0,
				    NULL, 0);
				goto out;
			}
		} else if (f->kind == BC_FILL_REVALIDATE && (status == 200 ||
		    status == 412 || (status == 404 && !f->anon))) {
			/* a new version or gone (an unsigned 404 may only
			 * hide the object: passed on below, kept) */
			obj_changed(c, o);
			bc_waiters_end(&f->waiters, BC_WAIT_RESTART, NULL, 0, 0,
			    NULL, 0);
			goto out;
		} else {
			fill_fail(o, f, BC_WAIT_UPSTREAM, 0, status, body,
			    len);
			goto out;
		}
		if (f->anon)   /* an unsigned request was answered */
			o->public_at_ns = o->meta_at_ns;
		bc_waiters_end(&o->meta_waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
		bc_waiters_end(&f->waiters, BC_WAIT_RECHECK, NULL, 0, 0,
		    NULL, 0);
		goto out;
	case BC_FILL_FIRST:
		if (status == 416) {
			/* an empty object (or a range past its end): learn
			 * its metadata with a HEAD */
			bc_fill_t *hf;

			if (bc_fill_do_start(c, o, BC_FILL_HEAD, 0, f->anon,
			    BC_ORIGIN_DEMAND, &hf) < 0) {
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
	case BC_FILL_CHUNK:
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
	case BC_FILL_PUBLIC:   /* public_done() above */
	case BC_FILL_META_PROBE:   /* no exchange */
		break;
	}
	if (status == 200 || status == 206)   /* not the chunk asked for */
		fill_fail(o, f, BC_WAIT_FAILED, BC_EPROTO, 0, NULL, 0);
	else
		fill_fail(o, f, BC_WAIT_UPSTREAM, 0, status, body, len);
out:
	BC_STATS_SET(cache_bytes_held, bc_tier_usage(c->mem));
	BC_STATS_SET(cache_evictions, bc_tier_evictions(c->mem));
	bc_object_do_unref(c, o);
	fill_ended(c, f);
	pthread_mutex_unlock(&c->mu);
	bc_chunk_unref(f->chunk);
	free(body);
	bc_exchange_release(x);
	free(f);
}
