/*
 * prefetch_warm.c — warm-ups (see prefetch_warm.h for the contract).
 *
 * A run is one warm-up. Its work state (the listing exchange and the
 * page it read, the objects opened, the fill slots) is touched only by
 * ticks, under the registry's lock; HTTP calls take the lock to read its
 * counters or to flag it cancelled. Each fill slot embeds a cache waiter
 * whose wake (called under the cache's lock) only sets the slot's flag;
 * the next tick reads the outcome. A run that ends (done, failed,
 * cancelled) gives up its work state at once and keeps its counters.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_math.h"
#include "prefetch/prefetch_warm.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "s3/s3_xml.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define META_SLOT   UINT32_MAX   /* a slot waiting on metadata */
#define READ_BLOCK  (64 * 1024)
#define ERROR_BODY  (64 * 1024)  /* an error answer's body, kept */
#define RESTARTS    2            /* an object changing while warmed */
#define BLOCK       4096         /* the cost estimate's per-file block */

typedef enum state_e {
	ST_RUNNING = 0, ST_DONE, ST_FAILED, ST_CANCELED
} state_t;

static const char *const state_names[] = {
	"running", "done", "failed", "canceled"
};

/* One listed object being warmed. */
typedef struct item_s {
	struct item_s *next;          /* the run's active list */
	char          *key;
	uint64_t       size;          /* as listed */
	uint64_t       cost;          /* charged to the run's budget */
	bc_object_t   *o;             /* a reference */
	char           etag[132];     /* the version warmed */
	uint32_t       nchunks, next_chunk;
	unsigned       pending;       /* slots busy for it */
	unsigned       restarts;
	bool           meta_known, meta_pending, chunk0_done;
	bool           fetched;       /* it brought a chunk into the tier */
	bool           not_kept;      /* memory's policy did not keep one */
	bool           redo;          /* the object changed: start over */
	bool           failed;
} item_t;

struct run_s;

typedef struct slot_s {
	bc_waiter_t    w;
	struct run_s  *run;
	item_t        *it;            /* NULL: free */
	uint32_t       chunk;         /* META_SLOT: the metadata */
	unsigned       tries;
	atomic_bool    woken;
} slot_t;

typedef struct counts_s {
	uint64_t listed, listed_bytes, done, done_bytes, cached, cached_bytes;
	uint64_t warmed, warmed_bytes, fetched_bytes, failed, failed_bytes;
	uint64_t skipped, skipped_bytes, no_room, no_room_bytes;
} counts_t;

typedef struct run_s {
	struct run_s  *next;
	bc_warm_t     *reg;
	char          *bucket, *prefix, *owner;   /* owner NULL: operator */
	const bc_client_key_t *key;
	char           tier_name[32];
	size_t         tier;
	uint64_t       budget;        /* the tier's capacity at the start */
	uint64_t       spent;         /* cost of the objects it keeps there */
	state_t        state;
	bool           cancel;
	uint64_t       start_ns, end_ns;
	char           error[256];
	counts_t       n;
	/* the listing */
	bc_exchange_t *x;
	bc_s3_req_t    lreq;          /* the page's request, while x runs */
	bc_s3_auth_t   lauth;
	bool           lreq_live;
	bc_buf_t       body;
	bool           sent;          /* the request's (empty) body ended */
	bool           listing_done;
	char          *token;         /* the next page's; NULL: none yet */
	bc_s3_list_t   page;
	size_t         page_next;
	uint64_t       pages;
	/* the work */
	item_t        *active;
	bool           full;          /* no more room in the tier */
	slot_t        *slots;
	unsigned       nslots, busy;
} run_t;

struct bc_warm_s {
	bc_warm_opts_t   o;
	pthread_mutex_t  mu;
	run_t           *runs;        /* newest first */
	unsigned         nruns, running;
	bc_loop_timer_t *timer;       /* while a run runs */
};

/* ---- objects --------------------------------------------------------- */

static void
item_free(bc_warm_t *w, item_t *it)
{
	if (it == NULL)
		return;
	if (it->o != NULL)
		bc_object_unref(w->o.cache, it->o);
	free(it->key);
	free(it);
}

/* What an object of size bytes costs the tier, about: its bytes, a block
 * per chunk (a disk file's header and rounding; memory's overhead is
 * less) and one for its metadata. */
static uint64_t
cost_of(const bc_warm_t *w, uint64_t size)
{
	return size + (uint64_t)bc_chunk_count(size, w->o.chunk_size) * BLOCK +
	    BLOCK;
}

static bc_tier_chain_t *
chain_of(const bc_warm_t *w)
{
	return bc_cache_tiers(w->o.cache);
}

/* ---- slots ------------------------------------------------------------ */

/* Under the cache's lock: only a flag. */
static void
slot_wake(void *arg)
{
	slot_t *s = arg;

	atomic_store(&s->woken, true);
}

static slot_t *
slot_free_one(run_t *r)
{
	for (unsigned i = 0; i < r->nslots; i++)
		if (r->slots[i].it == NULL)
			return &r->slots[i];
	return NULL;
}

static void
slot_take(run_t *r, slot_t *s, item_t *it, uint32_t chunk)
{
	s->it = it;
	s->chunk = chunk;
	s->tries = 0;
	it->pending++;
	r->busy++;
}

static void
slot_release(run_t *r, slot_t *s)
{
	bc_chunk_unref(s->w.chunk);
	s->w.chunk = NULL;
	bc_waiter_reset(&s->w);
	atomic_store(&s->woken, false);
	if (s->it != NULL) {
		s->it->pending--;
		r->busy--;
	}
	s->it = NULL;
}

/* ---- the run's end ----------------------------------------------------- */

/* Gives up the work state (fills running go on for the cache). */
static void
run_teardown(run_t *r)
{
	bc_warm_t *w = r->reg;
	item_t *it, *next;

	for (unsigned i = 0; r->slots != NULL && i < r->nslots; i++) {
		bc_waiter_fini(w->o.cache, &r->slots[i].w);
		r->slots[i].it = NULL;
	}
	free(r->slots);
	r->slots = NULL;
	r->nslots = r->busy = 0;
	for (it = r->active; it != NULL; it = next) {
		next = it->next;
		item_free(w, it);
	}
	r->active = NULL;
	bc_exchange_release(r->x);
	r->x = NULL;
	if (r->lreq_live)
		bc_s3_req_fini(&r->lreq);
	r->lreq_live = false;
	bc_buf_fini(&r->body);
	bc_s3_xml_list_fini(&r->page);
	free(r->token);
	r->token = NULL;
}

static void
run_end(run_t *r, state_t st)
{
	if (r->state != ST_RUNNING)
		return;
	run_teardown(r);
	r->state = st;
	r->end_ns = bc_mono_ns();
	r->reg->running--;
	BC_STATS_DEC(warm_running);
	BC_INFO("warm-up s3://%s/%s into %s: %s, %" PRIu64 " objects done "
	    "(%" PRIu64 " warmed, %" PRIu64 " cached), %" PRIu64 " failed, "
	    "%" PRIu64 " no room%s%s", r->bucket, r->prefix, r->tier_name,
	    state_names[st], r->n.done, r->n.warmed, r->n.cached, r->n.failed,
	    r->n.no_room, r->error[0] != '\0' ? ": " : "", r->error);
}

static void
run_fail(run_t *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
run_fail(run_t *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	run_end(r, ST_FAILED);
}

static void
run_free(run_t *r)
{
	if (r->state == ST_RUNNING)
		run_end(r, ST_CANCELED);
	free(r->bucket);
	free(r->prefix);
	free(r->owner);
	free(r);
}

/* ---- the listing ------------------------------------------------------- */

static void
relay_wake(void *arg)
{
	(void)arg;   /* the next tick polls */
}

/* Starts the request for the next page. 0 or a negative code. */
static int
list_start(run_t *r)
{
	bc_warm_t *w = r->reg;
	bc_buf_t uri = BC_BUF_INIT;
	bc_relay_t rl;
	bc_s3err_t e = BC_S3E_NONE;
	int rv = BC_ENOMEM;

	bc_s3_req_init(&r->lreq);
	r->lreq_live = true;
	memset(&r->lauth, 0, sizeof(r->lauth));
	if (bc_buf_puts(&uri, "/") < 0 ||
	    bc_sigv4_uri_encode(&uri, r->bucket, false) < 0 ||
	    bc_buf_printf(&uri, "?list-type=2&max-keys=%u&prefix=",
	    BC_WARM_PAGE_KEYS) < 0 ||
	    bc_sigv4_uri_encode(&uri, r->prefix, false) < 0 ||
	    (r->token != NULL && (bc_buf_puts(&uri, "&continuation-token=") <
	    0 || bc_sigv4_uri_encode(&uri, r->token, false) < 0)))
		goto out;
	if (bc_s3_req_parse(&r->lreq, "GET", bc_buf_str(&uri), NULL) !=
	    BC_S3E_NONE || r->lreq.op != BC_S3OP_ListObjectsV2) {
		rv = BC_EINVAL;
		goto out;
	}
	memset(&rl, 0, sizeof(rl));
	rl.s3 = &r->lreq;
	rl.auth = &r->lauth;
	rl.content_length = UINT64_MAX;
	rl.region = w->o.region;
	rl.wake = relay_wake;
	r->x = bc_origin_relay(w->o.origin, &rl, &e);
	rv = r->x != NULL ? 0 : BC_EIO;
	if (rv == 0)
		BC_STATS_INC(warm_list_pages);
out:
	bc_buf_fini(&uri);
	if (rv < 0) {
		bc_s3_req_fini(&r->lreq);
		r->lreq_live = false;
	}
	return rv;
}

static void
list_release(run_t *r)
{
	bc_exchange_release(r->x);
	r->x = NULL;
	if (r->lreq_live)
		bc_s3_req_fini(&r->lreq);
	r->lreq_live = false;
	bc_buf_fini(&r->body);
}

/* An S3 error body's <Code>, printable, into out (n bytes); "" when
 * there is none. */
static void
error_code(const bc_buf_t *b, char *out, size_t n)
{
	const char *s = strstr(bc_buf_str(b), "<Code>"), *e;
	size_t i = 0;

	out[0] = '\0';
	if (s == NULL)
		return;
	s += 6;
	e = strstr(s, "</Code>");
	if (e == NULL)
		return;
	for (; s < e && i + 1 < n; s++)
		if (*s >= 0x21 && *s <= 0x7e)
			out[i++] = *s;
	out[i] = '\0';
}

/* The page just read (r->body) becomes r->page. */
static void
list_parse(run_t *r)
{
	bc_s3err_t e;

	bc_s3_xml_list_fini(&r->page);
	r->page_next = 0;
	e = bc_s3_xml_parse_list(bc_buf_str(&r->body), r->body.len, &r->page);
	if (e != BC_S3E_NONE) {
		run_fail(r, "the listing's page %" PRIu64 " is not a "
		    "ListBucketResult the gateway reads (%s)", r->pages + 1,
		    bc_s3err_code(e));
		return;
	}
	r->pages++;
	for (size_t i = 0; i < r->page.n; i++) {
		r->n.listed++;
		r->n.listed_bytes += r->page.v[i].size;
	}
	if (!r->page.truncated) {
		r->listing_done = true;
		return;
	}
	/* a truncated page names the next one: a token it was not asked
	 * with (an origin repeating itself would list forever) */
	if (r->page.next == NULL || r->page.next[0] == '\0' ||
	    (r->token != NULL && strcmp(r->page.next, r->token) == 0)) {
		run_fail(r, "the listing's page %" PRIu64 " is truncated "
		    "without a new continuation token", r->pages);
		return;
	}
	free(r->token);
	r->token = r->page.next;
	r->page.next = NULL;
}

/* Moves the listing on: asks for the next page once every key of the
 * current one was taken, reads the answer as it comes. */
static void
list_step(run_t *r)
{
	const bc_kvlist_t *h;
	char buf[READ_BLOCK];
	int status = 0, rv;
	ssize_t n;

	if (r->listing_done || (r->x == NULL && r->page_next < r->page.n))
		return;
	if (r->x == NULL) {
		rv = list_start(r);
		if (rv < 0) {
			run_fail(r, "cannot start the listing: %s",
			    bc_strerror(rv));
			return;
		}
		bc_buf_init(&r->body, BC_WARM_PAGE_MAX);
		r->sent = false;
	}
	if (!r->sent) {
		bc_s3err_t e = BC_S3E_NONE;

		/* no body: the file origin answers at its end */
		rv = bc_exchange_write_end(r->x, &e);
		if (rv == BC_EAGAIN)
			return;
		if (rv < 0) {
			run_fail(r, "the listing failed: %s", e != BC_S3E_NONE ?
			    bc_s3err_code(e) : bc_strerror(rv));
			return;
		}
		r->sent = true;
	}
	rv = bc_exchange_headers(r->x, &status, &h);
	if (rv == BC_EAGAIN)
		return;
	if (rv < 0) {
		run_fail(r, "the listing failed: %s", bc_strerror(rv));
		return;
	}
	for (;;) {
		n = bc_exchange_read(r->x, buf, sizeof(buf));
		if (n == BC_EAGAIN)
			return;
		if (n < 0) {
			run_fail(r, "the listing failed mid-answer: %s",
			    bc_strerror((int)n));
			return;
		}
		if (n == 0)
			break;
		if (status != 200 && r->body.len + (size_t)n > ERROR_BODY)
			continue;   /* an error's head is enough */
		if (bc_buf_append(&r->body, buf, (size_t)n) < 0) {
			run_fail(r, "a page of the listing is over %u bytes",
			    BC_WARM_PAGE_MAX);
			return;
		}
	}
	if (status != 200) {
		char code[64];

		error_code(&r->body, code, sizeof(code));
		run_fail(r, "ListObjectsV2 of s3://%s/%s answered %d%s%s",
		    r->bucket, r->prefix, status, code[0] != '\0' ? " " : "",
		    code);
		return;
	}
	list_parse(r);
	if (r->state == ST_RUNNING)
		list_release(r);
}

/* ---- objects: opening, issuing, finishing ------------------------------ */

/* Takes the next key of the page: skipped, no room, or a new active
 * object. Returns false when the page has none left. */
static bool
open_next(run_t *r)
{
	bc_warm_t *w = r->reg;
	bc_s3_list_entry_t *e;
	item_t *it;
	uint64_t cost;

	if (r->page_next >= r->page.n)
		return false;
	e = &r->page.v[r->page_next++];
	if (strncmp(e->key, r->prefix, strlen(r->prefix)) != 0 ||
	    strlen(e->key) > BC_S3_MAX_KEY ||
	    bc_s3_key_has_dot_segment(e->key) ||
	    (r->key != NULL && !bc_config_key_allows(r->key, r->bucket,
	    e->key))) {
		r->n.skipped++;
		r->n.skipped_bytes += e->size;
		return true;
	}
	cost = cost_of(w, e->size);
	if (r->full || r->spent + cost > r->budget) {
		/* a smaller one after it may still fit the budget */
		r->n.no_room++;
		r->n.no_room_bytes += e->size;
		return true;
	}
	it = calloc(1, sizeof(*it));
	if (it != NULL)
		it->key = strdup(e->key);
	if (it != NULL && it->key != NULL)
		it->o = bc_cache_object(w->o.cache, r->bucket, it->key);
	if (it == NULL || it->o == NULL) {
		item_free(w, it);
		r->n.failed++;
		r->n.failed_bytes += e->size;
		return true;
	}
	it->size = e->size;
	it->cost = cost;
	r->spent += cost;
	it->next = r->active;
	r->active = it;
	return true;
}

/* The object changed (or was dropped) while warmed: it starts over with
 * a fresh object, at most RESTARTS times. */
static void
item_restart(run_t *r, item_t *it)
{
	bc_warm_t *w = r->reg;

	it->redo = false;
	if (++it->restarts > RESTARTS) {
		it->failed = true;
		return;
	}
	bc_object_unref(w->o.cache, it->o);
	it->o = bc_cache_object(w->o.cache, r->bucket, it->key);
	if (it->o == NULL) {
		it->failed = true;
		return;
	}
	it->meta_known = it->meta_pending = it->chunk0_done = false;
	it->nchunks = it->next_chunk = 0;
	it->etag[0] = '\0';
}

/* Accounts a finished object and frees it. */
static void
item_finish(run_t *r, item_t **pp)
{
	item_t *it = *pp;

	*pp = it->next;
	if (it->failed) {
		r->n.failed++;
		r->n.failed_bytes += it->size;
		BC_STATS_INC(warm_objects_failed);
		r->spent -= it->cost;
	} else if (it->not_kept) {
		r->n.no_room++;
		r->n.no_room_bytes += it->size;
		r->spent -= it->cost;
	} else if (it->fetched) {
		r->n.warmed++;
		r->n.warmed_bytes += it->size;
		r->n.done++;
		r->n.done_bytes += it->size;
		BC_STATS_INC(warm_objects);
	} else {
		r->n.cached++;
		r->n.cached_bytes += it->size;
		r->n.done++;
		r->n.done_bytes += it->size;
	}
	item_free(r->reg, it);
}

static bool
item_finished(const item_t *it)
{
	return it->pending == 0 && !it->redo && (it->failed ||
	    (it->meta_known && it->next_chunk >= it->nchunks));
}

static bool
item_wants(const item_t *it)
{
	return !it->failed && !it->redo && (it->meta_known ?
	    it->next_chunk < it->nchunks : !it->meta_pending);
}

typedef enum issue_e { ISSUED, PROGRESS, STALL } issue_t;

/* No room in the tier for it now: memory's policy declines with nothing
 * of this run in flight (it will not change by waiting), or a lower
 * tier's transit budget is full (it frees up as writes end). */
static issue_t
no_room(run_t *r, item_t *it)
{
	if (r->tier == 0 && r->busy == 0) {
		r->full = true;
		it->not_kept = true;
		it->failed = false;
		it->next_chunk = it->nchunks;
		it->meta_known = true;
		return PROGRESS;
	}
	return STALL;
}

/* The object's next step: its metadata, or its next chunk. */
static issue_t
item_issue(run_t *r, item_t *it)
{
	bc_warm_t *w = r->reg;
	bc_objmeta_t meta;
	slot_t *s = slot_free_one(r);
	uint32_t i;
	int rv;

	if (s == NULL)
		return STALL;
	if (!it->meta_known) {
		rv = bc_cache_warm_meta(w->o.cache, it->o, r->tier, &s->w,
		    &meta);
		if (rv == 0) {
			/* its bytes stay the listed ones in the counts */
			it->meta_known = true;
			snprintf(it->etag, sizeof(it->etag), "%s", meta.etag);
			it->nchunks = bc_chunk_count(meta.size,
			    w->o.chunk_size);
			bc_objmeta_fini(&meta);
			return PROGRESS;
		}
		if (rv == BC_EAGAIN) {
			it->meta_pending = true;
			slot_take(r, s, it, META_SLOT);
			return ISSUED;
		}
		if (rv == BC_ENOSPC)
			return no_room(r, it);
		if (rv == BC_ECANCELED)
			it->redo = true;
		else
			it->failed = true;
		return PROGRESS;
	}
	i = it->next_chunk++;
	if (i == 0 && it->chunk0_done)
		return PROGRESS;
	rv = bc_cache_warm_chunk(w->o.cache, it->o, it->etag, i, r->tier,
	    &s->w);
	if (rv == 1)
		return PROGRESS;      /* the tier has it */
	if (rv == 0) {
		it->fetched = true;   /* copied down from memory */
		return PROGRESS;
	}
	if (rv == BC_EAGAIN) {
		it->fetched = true;
		slot_take(r, s, it, i);
		return ISSUED;
	}
	if (rv == BC_ENOSPC) {
		it->next_chunk--;
		return no_room(r, it);
	}
	if (rv == BC_ECANCELED)
		it->redo = true;
	else
		it->failed = true;
	return PROGRESS;
}

/* A chunk a warm-up's fill brought into memory: whether memory's policy
 * kept it (its id is "bucket\0key\0etag\0"). */
static bool
kept_in_memory(bc_warm_t *w, const bc_chunk_t *ch)
{
	bc_chunk_key_t k;

	k.bucket = ch->id;
	k.key = k.bucket + strlen(k.bucket) + 1;
	k.etag = k.key + strlen(k.key) + 1;
	k.index = ch->index;
	return bc_cache_warm_has(w->o.cache, 0, &k) != 0;
}

/* A chunk a slot's fill brought. */
static void
chunk_brought(run_t *r, item_t *it, const bc_chunk_t *ch)
{
	r->n.fetched_bytes += ch->len;
	BC_STATS_ADD(warm_bytes, ch->len);
	if (r->tier == 0 && !kept_in_memory(r->reg, ch))
		it->not_kept = true;
}

/* A slot's fill ended: what it means for its object. */
static void
slot_done(run_t *r, slot_t *s, bc_wait_result_t res)
{
	item_t *it = s->it;
	bc_chunk_t *ch = s->w.chunk;

	if (s->chunk == META_SLOT) {
		it->meta_pending = false;
		if (res == BC_WAIT_CHUNK && ch != NULL) {
			/* the first fill brought chunk 0 with the metadata */
			it->chunk0_done = true;
			it->fetched = true;
			chunk_brought(r, it, ch);
		} else if (res == BC_WAIT_RESTART) {
			it->redo = true;
		} else if (res == BC_WAIT_FAILED || res == BC_WAIT_UPSTREAM) {
			it->failed = true;
		}
		return;   /* RECHECK: asked again */
	}
	switch (res) {
	case BC_WAIT_CHUNK:
		if (ch != NULL)
			chunk_brought(r, it, ch);
		break;
	case BC_WAIT_RESTART:
		it->redo = true;
		break;
	case BC_WAIT_RECHECK:
		/* the fill kept nothing for it: ask for the chunk again */
		if (it->next_chunk > s->chunk)
			it->next_chunk = s->chunk;
		if (++s->tries > 3)
			it->failed = true;
		break;
	default:
		it->failed = true;
		break;
	}
}

/* Reads the outcome of every slot whose fill ended. */
static void
collect(run_t *r)
{
	bc_warm_t *w = r->reg;

	for (unsigned i = 0; i < r->nslots; i++) {
		slot_t *s = &r->slots[i];
		bc_wait_result_t res;

		if (s->it == NULL || !atomic_load(&s->woken))
			continue;
		res = bc_waiter_result(w->o.cache, &s->w);
		if (res == BC_WAIT_PENDING)
			continue;
		slot_done(r, s, res);
		slot_release(r, s);
	}
}

/* Starts what the slots allow, then accounts the objects that ended. */
static void
issue(run_t *r)
{
	bc_warm_t *w = r->reg;
	bc_tier_chain_t *ch = chain_of(w);
	bool stalled = false;

	while (!stalled && r->busy < r->nslots) {
		item_t *it;

		/* the lower tiers' writes come first */
		if (r->tier > 0 && bc_tier_chain_queued(ch) >
		    BC_TIER_CHAIN_QUEUE_MAX / 2)
			break;
		for (it = r->active; it != NULL; it = it->next)
			if (item_wants(it))
				break;
		if (it == NULL) {
			if (!open_next(r))
				break;
			continue;
		}
		stalled = item_issue(r, it) == STALL;
	}
	for (item_t **pp = &r->active; *pp != NULL;) {
		item_t *it = *pp;

		if (it->redo && it->pending == 0)
			item_restart(r, it);
		if (item_finished(it))
			item_finish(r, pp);
		else
			pp = &it->next;
	}
}

static void
run_step(run_t *r)
{
	bc_tier_t *t = bc_tier_chain_at(chain_of(r->reg), r->tier);

	if (r->cancel) {
		run_end(r, ST_CANCELED);
		return;
	}
	/* a lower tier that is down would take nothing (its writes are
	 * skipped): the warm-up says so rather than count them warmed */
	if (r->tier > 0 && bc_tier_health(t) == BC_TIER_DOWN) {
		run_fail(r, "the %s tier is down", r->tier_name);
		return;
	}
	collect(r);
	list_step(r);
	if (r->state != ST_RUNNING)
		return;
	issue(r);
	if (r->listing_done && r->page_next >= r->page.n && r->active == NULL)
		run_end(r, ST_DONE);
}

/* ---- the registry ------------------------------------------------------ */

void
bc_warm_tick(bc_warm_t *w)
{
	pthread_mutex_lock(&w->mu);
	for (run_t *r = w->runs; r != NULL; r = r->next)
		if (r->state == ST_RUNNING)
			run_step(r);
	pthread_mutex_unlock(&w->mu);
}

static void
on_tick(bc_loop_t *l, void *arg)
{
	bc_warm_t *w = arg;

	(void)l;
	bc_warm_tick(w);
	pthread_mutex_lock(&w->mu);
	if (w->running == 0 && w->timer != NULL) {
		bc_loop_timer_free(w->timer);   /* its own fn: allowed */
		w->timer = NULL;
	}
	pthread_mutex_unlock(&w->mu);
}

bc_warm_t *
bc_warm_new(const bc_warm_opts_t *o)
{
	bc_warm_t *w;

	if (o->cache == NULL || o->origin == NULL || o->concurrency == 0 ||
	    o->chunk_size == 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->o = *o;
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

void
bc_warm_free(bc_warm_t *w)
{
	run_t *r, *next;

	if (w == NULL)
		return;
	bc_loop_timer_free(w->timer);
	for (r = w->runs; r != NULL; r = next) {
		next = r->next;
		run_free(r);
	}
	pthread_mutex_destroy(&w->mu);
	free(w);
}

unsigned
bc_warm_running(bc_warm_t *w)
{
	unsigned n;

	pthread_mutex_lock(&w->mu);
	n = w->running;
	pthread_mutex_unlock(&w->mu);
	return n;
}

/* w->mu held: the run of bucket/prefix, or NULL; *pp its link. */
static run_t **
run_find(bc_warm_t *w, const char *bucket, const char *prefix)
{
	run_t **pp;

	for (pp = &w->runs; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->bucket, bucket) == 0 &&
		    strcmp((*pp)->prefix, prefix) == 0)
			return pp;
	return NULL;
}

/* w->mu held: drops the oldest finished run while BC_WARM_MAX_KEPT are
 * kept (runs are newest first). */
static void
runs_trim(bc_warm_t *w)
{
	while (w->nruns >= BC_WARM_MAX_KEPT) {
		run_t **pp, **last = NULL, *r;

		for (pp = &w->runs; *pp != NULL; pp = &(*pp)->next)
			if ((*pp)->state != ST_RUNNING)
				last = pp;
		if (last == NULL)
			return;
		r = *last;
		*last = r->next;
		w->nruns--;
		run_free(r);
	}
}

static void
json_u64(bc_buf_t *b, const char *name, uint64_t v)
{
	bc_buf_printf(b, ", \"%s\": %" PRIu64, name, v);
}

/* w->mu held: r's progress as one JSON object. */
static void
run_json(const run_t *r, bc_buf_t *b)
{
	uint64_t now = r->state == ST_RUNNING ? bc_mono_ns() : r->end_ns;
	double secs = (double)(now - r->start_ns) / 1e9;
	double rate = secs > 0 ? (double)r->n.fetched_bytes / secs : 0;
	uint64_t eligible = r->n.listed_bytes - r->n.skipped_bytes;
	uint64_t settled = r->n.done_bytes + r->n.failed_bytes +
	    r->n.no_room_bytes;
	uint64_t objs = r->n.listed - r->n.skipped;
	double frac = eligible > 0 ? (double)r->n.done_bytes /
	    (double)eligible : objs > 0 ? (double)r->n.done / (double)objs :
	    0;
	unsigned in_flight = r->busy + (r->x != NULL ? 1 : 0);

	bc_buf_puts(b, "{\"bucket\": ");
	bc_stats_json_string(b, r->bucket);
	bc_buf_puts(b, ", \"prefix\": ");
	bc_stats_json_string(b, r->prefix);
	bc_buf_printf(b, ", \"tier\": \"%s\", \"owner\": ", r->tier_name);
	if (r->owner != NULL)
		bc_stats_json_string(b, r->owner);
	else
		bc_buf_puts(b, "null");
	bc_buf_printf(b, ", \"state\": \"%s\", \"listing_done\": %s",
	    state_names[r->cancel && r->state == ST_RUNNING ? ST_CANCELED :
	    r->state], r->listing_done ? "true" : "false");
	json_u64(b, "pages", r->pages);
	json_u64(b, "objects_listed", r->n.listed);
	json_u64(b, "bytes_listed", r->n.listed_bytes);
	json_u64(b, "objects_done", r->n.done);
	json_u64(b, "bytes_done", r->n.done_bytes);
	json_u64(b, "objects_cached", r->n.cached);
	json_u64(b, "bytes_cached", r->n.cached_bytes);
	json_u64(b, "objects_warmed", r->n.warmed);
	json_u64(b, "bytes_warmed", r->n.warmed_bytes);
	json_u64(b, "bytes_fetched", r->n.fetched_bytes);
	json_u64(b, "objects_failed", r->n.failed);
	json_u64(b, "bytes_failed", r->n.failed_bytes);
	json_u64(b, "objects_skipped", r->n.skipped);
	json_u64(b, "bytes_skipped", r->n.skipped_bytes);
	json_u64(b, "objects_no_room", r->n.no_room);
	json_u64(b, "bytes_no_room", r->n.no_room_bytes);
	json_u64(b, "in_flight", in_flight);
	json_u64(b, "budget_bytes", r->budget);
	bc_buf_printf(b, ", \"elapsed_seconds\": %.3f, "
	    "\"rate_bytes_per_second\": %.0f, \"eta_seconds\": ", secs, rate);
	if (r->state == ST_RUNNING && rate > 0 && eligible >= settled)
		bc_buf_printf(b, "%.1f", (double)(eligible - settled) / rate);
	else if (r->state != ST_RUNNING)
		bc_buf_puts(b, "0");
	else
		bc_buf_puts(b, "null");
	bc_buf_printf(b, ", \"cached_fraction\": %.4f, \"error\": ", frac);
	if (r->error[0] != '\0')
		bc_stats_json_string(b, r->error);
	else
		bc_buf_puts(b, "null");
	bc_buf_puts(b, "}");
}

/* What a warm-up may put into tier t (index tier): a lower tier's
 * capacity (it replaces older entries by the tier's policy, as any
 * fill's write does); memory's room now, less an eighth of it for the
 * objects' metadata and the entries' overhead, which its bound counts
 * too: a warm-up does not evict memory's working set. */
static uint64_t
warm_budget(bc_tier_t *t, size_t tier)
{
	uint64_t cap = bc_tier_capacity(t), used, reserve;

	if (tier > 0)
		return cap;
	used = bc_tier_usage(t);
	reserve = cap / 8;
	return cap > used + reserve ? cap - used - reserve : 0;
}

/* w->mu held: the tier a request names (NULL: the first lower tier,
 * else memory) into *tier and name. 0 or BC_EINVAL. */
static int
tier_pick(bc_warm_t *w, const char *want, size_t *tier, char *name,
    size_t namelen)
{
	bc_tier_chain_t *ch = chain_of(w);
	int i;

	if (want == NULL || want[0] == '\0') {
		i = bc_tier_chain_count(ch) > 1 ? 1 : 0;
	} else {
		i = bc_tier_chain_find(ch, want);
		if (i < 0)
			return BC_EINVAL;
	}
	*tier = (size_t)i;
	snprintf(name, namelen, "%s", bc_tier_chain_at(ch, *tier)->name);
	return 0;
}

int
bc_warm_start(bc_warm_t *w, const bc_warm_req_t *q, bc_buf_t *out,
    char *err, size_t errlen)
{
	run_t **pp, *r = NULL;
	int rv;

	pthread_mutex_lock(&w->mu);
	pp = run_find(w, q->bucket, q->prefix);
	if (pp != NULL && (*pp)->state == ST_RUNNING) {
		rv = BC_EEXIST;
		goto out;
	}
	if (w->running >= BC_WARM_MAX_RUNNING) {
		rv = BC_ENOSPC;
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		rv = BC_ENOMEM;
		goto out;
	}
	rv = tier_pick(w, q->tier, &r->tier, r->tier_name,
	    sizeof(r->tier_name));
	if (rv < 0) {
		bc_errf(err, errlen, "The gateway has no tier named '%.32s' "
		    "(memory, disk, redis: those configured).", q->tier);
		goto out;
	}
	r->reg = w;
	r->key = q->key;
	r->bucket = strdup(q->bucket);
	r->prefix = strdup(q->prefix);
	r->owner = q->owner != NULL ? strdup(q->owner) : NULL;
	r->nslots = w->o.concurrency;
	r->slots = calloc(r->nslots, sizeof(*r->slots));
	rv = BC_ENOMEM;
	if (r->bucket == NULL || r->prefix == NULL || r->slots == NULL ||
	    (q->owner != NULL && r->owner == NULL))
		goto out;
	for (unsigned i = 0; i < r->nslots; i++) {
		bc_waiter_init(&r->slots[i].w, slot_wake, &r->slots[i]);
		r->slots[i].run = r;
	}
	r->budget = warm_budget(bc_tier_chain_at(chain_of(w), r->tier),
	    r->tier);
	if (w->timer == NULL) {
		w->timer = bc_loop_timer_new(w->o.loop, BC_WARM_TICK_MS,
		    on_tick, w);
		if (w->timer == NULL) {
			rv = BC_ECANCELED;
			goto out;
		}
	}
	if (pp != NULL) {   /* a finished one of the same prefix goes */
		run_t *old = *pp;

		*pp = old->next;
		w->nruns--;
		run_free(old);
	}
	runs_trim(w);
	r->start_ns = bc_mono_ns();
	r->state = ST_RUNNING;
	r->next = w->runs;
	w->runs = r;
	w->nruns++;
	w->running++;
	BC_STATS_INC(warm_started);
	BC_STATS_INC(warm_running);
	BC_INFO("warm-up s3://%s/%s into %s (%" PRIu64 " bytes) for %s",
	    r->bucket, r->prefix, r->tier_name, r->budget,
	    r->owner != NULL ? r->owner : "the operator");
	run_json(r, out);
	r = NULL;
	rv = 0;
out:
	if (r != NULL) {
		for (unsigned i = 0; r->slots != NULL && i < r->nslots; i++)
			bc_waiter_fini(w->o.cache, &r->slots[i].w);
		free(r->slots);
		free(r->bucket);
		free(r->prefix);
		free(r->owner);
		free(r);
	}
	pthread_mutex_unlock(&w->mu);
	return rv;
}

/* w->mu held: bucket/prefix's run when owner may read it. */
static int
run_access(bc_warm_t *w, const char *bucket, const char *prefix,
    const char *owner, run_t **out)
{
	run_t **pp = run_find(w, bucket, prefix);

	if (pp == NULL)
		return BC_ENOENT;
	if (owner != NULL && ((*pp)->owner == NULL ||
	    strcmp((*pp)->owner, owner) != 0))
		return BC_EACCES;
	*out = *pp;
	return 0;
}

int
bc_warm_get(bc_warm_t *w, const char *bucket, const char *prefix,
    const char *owner, bc_buf_t *out)
{
	run_t *r;
	int rv;

	pthread_mutex_lock(&w->mu);
	rv = run_access(w, bucket, prefix, owner, &r);
	if (rv == 0)
		run_json(r, out);
	pthread_mutex_unlock(&w->mu);
	return rv;
}

int
bc_warm_cancel(bc_warm_t *w, const char *bucket, const char *prefix,
    const char *owner, bc_buf_t *out)
{
	run_t *r;
	int rv;

	pthread_mutex_lock(&w->mu);
	rv = run_access(w, bucket, prefix, owner, &r);
	if (rv == 0) {
		/* its work state goes at the next tick, on the loop thread:
		 * it is flagged and shown as it will end */
		if (r->state == ST_RUNNING)
			r->cancel = true;
		run_json(r, out);
	}
	pthread_mutex_unlock(&w->mu);
	return rv;
}

int
bc_warm_list(bc_warm_t *w, const char *owner, bc_buf_t *out)
{
	bool first = true;

	pthread_mutex_lock(&w->mu);
	bc_buf_puts(out, "{\"warmups\": [");
	for (run_t *r = w->runs; r != NULL; r = r->next) {
		if (owner != NULL && (r->owner == NULL ||
		    strcmp(r->owner, owner) != 0))
			continue;
		bc_buf_puts(out, first ? "\n  " : ",\n  ");
		run_json(r, out);
		first = false;
	}
	bc_buf_puts(out, first ? "]}\n" : "\n]}\n");
	pthread_mutex_unlock(&w->mu);
	return 0;
}
