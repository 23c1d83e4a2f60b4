/*
 * tier_chain.c — the ordered tiers the cache walks (tier_chain.h).
 *
 * Probes: bc_tier_chain_probe() copies the key and context into the
 * caller's request and hands it to the loop (bc_loop_call); there step()
 * asks one lower tier after the other, each get's callback resuming it,
 * until a hit or the end. Every get is thus made on the loop thread.
 *
 * Metadata probes (bc_tier_chain_meta_probe) run the same way over the
 * lower tiers that have meta_get.
 *
 * Queue: lower-tier puts, deletes and metadata puts are jobs, one per tier, in a list
 * under ch->mu bounded by queue_max (an object's delete goes in past the
 * bound, and to a down tier too: tier_chain.h says why). The first job queued into an idle
 * list schedules one drain (bc_loop_call), which runs jobs on the loop
 * thread until the list is empty; `scheduled` stays true until then, so
 * flush (and free) wait on it. Jobs run without ch->mu held.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tier/tier_chain.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_time.h"

typedef enum job_kind_e {
	JOB_PUT,
	JOB_DEL,
	JOB_DEL_OBJECT,
	JOB_META_PUT,
} job_kind_t;

typedef struct job_s {
	struct job_s   *next;
	job_kind_t      kind;
	size_t          tier;
	bc_chunk_t     *c;        /* PUT: a reference */
	bc_policy_ctx_t ctx;      /* PUT */
	bc_chunk_key_t  key;      /* DEL */
	const char     *bucket, *okey, *prefix;   /* DEL_OBJECT, META_PUT */
	const void     *blob;     /* META_PUT */
	size_t          blob_len;
	char            strs[];   /* the strings and blob point here */
} job_t;

struct bc_tier_chain_s {
	bc_loop_t       *loop;
	bc_tier_t       *tiers[BC_TIER_CHAIN_MAX];
	size_t           n;
	pthread_mutex_t  mu;          /* guards the queue */
	pthread_cond_t   idle;        /* signalled when a drain ends */
	job_t           *head, *tail;
	size_t           queued, queue_max;
	bool             scheduled;   /* a drain is queued or running */
	_Atomic uint64_t drops;
};

/* ---- strings ---------------------------------------------------------- */

static size_t
slen(const char *s)
{
	return s == NULL ? 0 : strlen(s) + 1;
}

/* Copies s to *p (advancing it); NULL stays NULL. */
static const char *
scopy(char **p, const char *s)
{
	char *d = *p;
	size_t n = slen(s);

	if (s == NULL)
		return NULL;
	memcpy(d, s, n);
	*p += n;
	return d;
}

static uint64_t
clock_of(const bc_policy_ctx_t *ctx)
{
	uint64_t now = bc_mono_ns();

	return ctx->now_ns > now ? ctx->now_ns : now;
}

/* ---- life ------------------------------------------------------------- */

bc_tier_chain_t *
bc_tier_chain_new(bc_loop_t *loop)
{
	bc_tier_chain_t *ch = calloc(1, sizeof(*ch));

	if (ch == NULL)
		return NULL;
	ch->loop = loop;
	ch->queue_max = BC_TIER_CHAIN_QUEUE_MAX;
	atomic_init(&ch->drops, 0);
	pthread_mutex_init(&ch->mu, NULL);
	pthread_cond_init(&ch->idle, NULL);
	return ch;
}

void
bc_tier_chain_free(bc_tier_chain_t *ch)
{
	if (ch == NULL)
		return;
	bc_tier_chain_flush(ch);
	while (ch->n > 0) {
		bc_tier_t *t = ch->tiers[--ch->n];

		t->ops->close(t);
	}
	pthread_cond_destroy(&ch->idle);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
}

int
bc_tier_chain_add(bc_tier_chain_t *ch, bc_tier_t *t)
{
	const bc_tier_ops_t *ops = t->ops;

	if (ch->n == BC_TIER_CHAIN_MAX)
		return BC_E2BIG;
	if (ch->n == 0 && (!(ops->flags & BC_TIER_SYNC) || ops->lookup == NULL))
		return BC_EINVAL;
	if (ch->n > 0 && (ops->get == NULL || ch->loop == NULL))
		return BC_EINVAL;
	ch->tiers[ch->n++] = t;
	return 0;
}

int
bc_tier_chain_open(bc_tier_chain_t *ch, const bc_tier_ops_t *ops,
    const bc_tier_opts_t *o)
{
	bc_tier_t *t = NULL;
	int rv;

	rv = ops->open(o, &t);
	if (rv < 0)
		return rv;
	rv = bc_tier_chain_add(ch, t);
	if (rv < 0)
		ops->close(t);
	return rv;
}

void
bc_tier_chain_set_queue_max(bc_tier_chain_t *ch, size_t n)
{
	pthread_mutex_lock(&ch->mu);
	ch->queue_max = n > 0 ? n : 1;
	pthread_mutex_unlock(&ch->mu);
}

size_t
bc_tier_chain_count(const bc_tier_chain_t *ch)
{
	return ch->n;
}

bc_tier_t *
bc_tier_chain_at(const bc_tier_chain_t *ch, size_t i)
{
	BC_CHECK(i < ch->n);
	return ch->tiers[i];
}

bc_tier_t *
bc_tier_chain_top(const bc_tier_chain_t *ch)
{
	return ch->n > 0 ? ch->tiers[0] : NULL;
}

int
bc_tier_chain_find(const bc_tier_chain_t *ch, const char *name)
{
	for (size_t i = 0; i < ch->n; i++)
		if (strcmp(ch->tiers[i]->name, name) == 0)
			return (int)i;
	return BC_ENOENT;
}

/* ---- the queue -------------------------------------------------------- */

static void
job_free(job_t *j)
{
	if (j->c != NULL)
		bc_chunk_unref(j->c);
	free(j);
}

static void
job_drop(bc_tier_chain_t *ch, job_t *j)
{
	atomic_fetch_add(&ch->drops, 1);
	BC_TIER_COUNT(ch->tiers[j->tier], queue_drops, 1);
	job_free(j);
}

static void
job_run(bc_tier_chain_t *ch, job_t *j)
{
	bc_tier_t *t = ch->tiers[j->tier];
	int rv = 0;

	if (j->kind != JOB_DEL_OBJECT && bc_tier_health(t) == BC_TIER_DOWN) {
		BC_TIER_COUNT(t, skips, 1);
		return;
	}
	switch (j->kind) {
	case JOB_PUT:
		rv = t->ops->put(t, j->c, &j->ctx);
		if (rv == BC_E2BIG || rv == BC_EEXIST)
			rv = 0;
		break;
	case JOB_DEL:
		rv = t->ops->del(t, &j->key);
		if (rv == BC_ENOENT)
			rv = 0;
		break;
	case JOB_DEL_OBJECT:
		t->ops->del_object(t, j->bucket, j->okey, j->prefix);
		break;
	case JOB_META_PUT:
		rv = t->ops->meta_put(t, j->bucket, j->okey, j->blob,
		    j->blob_len);
		if (rv == BC_E2BIG)
			rv = 0;
		break;
	}
	if (rv < 0)
		bc_tier_mark_down(t, rv, bc_mono_ns());
}

static void
drain(bc_loop_t *l, void *arg)
{
	bc_tier_chain_t *ch = arg;
	job_t *j;

	(void)l;
	for (;;) {
		pthread_mutex_lock(&ch->mu);
		j = ch->head;
		if (j == NULL) {
			ch->scheduled = false;
			pthread_cond_broadcast(&ch->idle);
			pthread_mutex_unlock(&ch->mu);
			return;
		}
		ch->head = j->next;
		if (ch->head == NULL)
			ch->tail = NULL;
		ch->queued--;
		pthread_mutex_unlock(&ch->mu);
		job_run(ch, j);
		job_free(j);
	}
}

/* Queues j (or drops it, counted, when the queue is full or the loop
 * refuses work). */
static void
enqueue(bc_tier_chain_t *ch, job_t *j)
{
	bool   call = false;
	job_t *lost, *next;

	j->next = NULL;
	pthread_mutex_lock(&ch->mu);
	if (ch->queued >= ch->queue_max && j->kind != JOB_DEL_OBJECT) {
		pthread_mutex_unlock(&ch->mu);
		job_drop(ch, j);
		return;
	}
	if (ch->tail != NULL)
		ch->tail->next = j;
	else
		ch->head = j;
	ch->tail = j;
	ch->queued++;
	if (!ch->scheduled) {
		ch->scheduled = true;
		call = true;
	}
	pthread_mutex_unlock(&ch->mu);
	if (!call || bc_loop_call(ch->loop, drain, ch) == 0)
		return;
	pthread_mutex_lock(&ch->mu);
	lost = ch->head;
	ch->head = ch->tail = NULL;
	ch->queued = 0;
	ch->scheduled = false;
	pthread_cond_broadcast(&ch->idle);
	pthread_mutex_unlock(&ch->mu);
	for (; lost != NULL; lost = next) {
		next = lost->next;
		job_drop(ch, lost);
	}
}

/* A job for tier i with room for extra bytes of strings, or NULL (the
 * drop counted) when out of memory; NULL too when tier i is down (the
 * skip counted), but for an object's delete. */
static job_t *
job_new(bc_tier_chain_t *ch, size_t i, job_kind_t kind, size_t extra)
{
	bc_tier_t *t = ch->tiers[i];
	job_t *j;

	if (kind != JOB_DEL_OBJECT && bc_tier_health(t) == BC_TIER_DOWN) {
		BC_TIER_COUNT(t, skips, 1);
		return NULL;
	}
	j = calloc(1, sizeof(*j) + extra);
	if (j == NULL) {
		atomic_fetch_add(&ch->drops, 1);
		BC_TIER_COUNT(t, queue_drops, 1);
		return NULL;
	}
	j->kind = kind;
	j->tier = i;
	return j;
}

/* ---- reads ------------------------------------------------------------ */

bc_chunk_t *
bc_tier_chain_lookup(bc_tier_chain_t *ch, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx)
{
	bc_tier_t *top = ch->tiers[0];

	return top->ops->lookup(top, k, ctx);
}

static void
probe_finish(bc_tier_probe_t *req, int status, bc_chunk_t *c, size_t from)
{
	free(req->strs);
	req->strs = NULL;
	req->cb(req, status, c, from);
}

static void on_get(bc_tier_get_t *g, int status, bc_chunk_t *c);

/* t answered a get with rv (not a hit): a miss is an answer (up), an
 * error marks it down. */
static void
tier_answered(bc_tier_t *t, int rv, uint64_t now)
{
	if (rv == BC_ENOENT)
		bc_tier_mark_up(t, now);
	else
		bc_tier_mark_down(t, rv, now);
}

/* Loop thread: asks the next usable tier, or ends the probe. */
static void
probe_step(bc_tier_probe_t *req)
{
	bc_tier_chain_t *ch = req->chain;
	bc_tier_t *t;
	uint64_t now;
	int rv;

	while (req->next < ch->n) {
		t = ch->tiers[req->next++];
		now = clock_of(&req->ctx);
		if (!bc_tier_usable(t, now)) {
			BC_TIER_COUNT(t, skips, 1);
			continue;
		}
		req->asked = req->next - 1;
		req->get.data = req;
		req->get.len_hint = req->len_hint;
		rv = t->ops->get(t, &req->get, &req->key, &req->ctx, on_get);
		if (rv == 0)
			return;
		tier_answered(t, rv, now);
	}
	probe_finish(req, BC_ENOENT, NULL, 0);
}

static void
on_get(bc_tier_get_t *g, int status, bc_chunk_t *c)
{
	bc_tier_probe_t *req = g->data;
	bc_tier_t *t = req->chain->tiers[req->asked];
	uint64_t now = clock_of(&req->ctx);

	if (status == 0) {
		BC_CHECK(c != NULL);
		bc_tier_mark_up(t, now);
		probe_finish(req, 0, c, req->asked);
		return;
	}
	bc_chunk_unref(c);
	tier_answered(t, status, now);
	probe_step(req);
}

static void
probe_start(bc_loop_t *l, void *arg)
{
	(void)l;
	probe_step(arg);
}

/* Whether some lower tier may be asked at now (without claiming a
 * retry); counts a skip for each that may not when none may. */
static bool
any_usable(bc_tier_chain_t *ch, uint64_t now)
{
	for (size_t i = 1; i < ch->n; i++) {
		bc_tier_t *t = ch->tiers[i];

		if (t->ops->health != NULL && t->ops->health(t) == BC_TIER_DOWN)
			continue;
		if (atomic_load(&t->health.state) == BC_TIER_UP ||
		    now >= atomic_load(&t->health.retry_at_ns))
			return true;
	}
	for (size_t i = 1; i < ch->n; i++)
		BC_TIER_COUNT(ch->tiers[i], skips, 1);
	return false;
}

int
bc_tier_chain_probe(bc_tier_chain_t *ch, bc_tier_probe_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_probe_cb cb)
{
	char *p;
	int rv;

	if (ch->n < 2 || !any_usable(ch, clock_of(ctx)))
		return BC_ENOENT;
	req->chain = ch;
	req->cb = cb;
	req->next = 1;
	req->asked = 0;
	req->strs = malloc(slen(k->bucket) + slen(k->key) + slen(k->etag) +
	    slen(ctx->job) + slen(ctx->dataset));
	if (req->strs == NULL)
		return BC_ENOMEM;
	p = req->strs;
	req->key.bucket = scopy(&p, k->bucket);
	req->key.key = scopy(&p, k->key);
	req->key.etag = scopy(&p, k->etag);
	req->key.index = k->index;
	req->ctx = *ctx;
	req->ctx.now_ns = clock_of(ctx);
	req->ctx.job = scopy(&p, ctx->job);
	req->ctx.dataset = scopy(&p, ctx->dataset);
	memset(&req->get, 0, sizeof(req->get));
	rv = bc_loop_call(ch->loop, probe_start, req);
	if (rv < 0) {
		free(req->strs);
		req->strs = NULL;
	}
	return rv;
}

int
bc_tier_chain_open_file(bc_tier_chain_t *ch, bc_tier_file_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_file_cb cb)
{
	for (size_t i = 1; i < ch->n; i++) {
		bc_tier_t *t = ch->tiers[i];

		if (t->ops->open_file == NULL)
			continue;
		if (atomic_load(&t->health.state) != BC_TIER_UP ||
		    (t->ops->health != NULL &&
		    t->ops->health(t) == BC_TIER_DOWN))
			return BC_ENOTSUP;
		return t->ops->open_file(t, req, k, ctx, cb);
	}
	return BC_ENOTSUP;
}

/* ---- metadata probes ---------------------------------------------------- */

static void
meta_finish(bc_tier_meta_probe_t *req, int status, const void *blob,
    size_t len, size_t from)
{
	free(req->strs);
	req->strs = NULL;
	req->cb(req, status, blob, len, from);
}

static void on_meta(bc_tier_meta_get_t *g, int status, const void *blob,
    size_t len);

/* Loop thread: asks the next usable tier that keeps metadata, or ends
 * the probe. */
static void
meta_step(bc_tier_meta_probe_t *req)
{
	bc_tier_chain_t *ch = req->chain;
	bc_tier_t *t;
	uint64_t now;
	int rv;

	while (req->next < ch->n) {
		t = ch->tiers[req->next++];
		if (t->ops->meta_get == NULL)
			continue;
		now = bc_mono_ns();
		if (!bc_tier_usable(t, now)) {
			BC_TIER_COUNT(t, skips, 1);
			continue;
		}
		req->asked = req->next - 1;
		req->get.data = req;
		rv = t->ops->meta_get(t, &req->get, req->bucket, req->key,
		    on_meta);
		if (rv == 0)
			return;
		tier_answered(t, rv, now);
	}
	meta_finish(req, BC_ENOENT, NULL, 0, 0);
}

static void
on_meta(bc_tier_meta_get_t *g, int status, const void *blob, size_t len)
{
	bc_tier_meta_probe_t *req = g->data;
	bc_tier_t *t = req->chain->tiers[req->asked];
	uint64_t now = bc_mono_ns();

	if (status == 0) {
		bc_tier_mark_up(t, now);
		meta_finish(req, 0, blob, len, req->asked);
		return;
	}
	tier_answered(t, status, now);
	meta_step(req);
}

static void
meta_start(bc_loop_t *l, void *arg)
{
	(void)l;
	meta_step(arg);
}

int
bc_tier_chain_meta_probe(bc_tier_chain_t *ch, bc_tier_meta_probe_t *req,
    const char *bucket, const char *key, bc_tier_meta_probe_cb cb)
{
	uint64_t now = bc_mono_ns();
	bool     any = false;
	char    *p;
	int      rv;

	for (size_t i = 1; i < ch->n && !any; i++) {
		bc_tier_t *t = ch->tiers[i];

		if (t->ops->meta_get == NULL || (t->ops->health != NULL &&
		    t->ops->health(t) == BC_TIER_DOWN))
			continue;
		any = atomic_load(&t->health.state) == BC_TIER_UP ||
		    now >= atomic_load(&t->health.retry_at_ns);
	}
	if (!any) {
		for (size_t i = 1; i < ch->n; i++)
			if (ch->tiers[i]->ops->meta_get != NULL)
				BC_TIER_COUNT(ch->tiers[i], skips, 1);
		return BC_ENOENT;
	}
	req->chain = ch;
	req->cb = cb;
	req->next = 1;
	req->asked = 0;
	req->strs = malloc(slen(bucket) + slen(key));
	if (req->strs == NULL)
		return BC_ENOMEM;
	p = req->strs;
	req->bucket = scopy(&p, bucket);
	req->key = scopy(&p, key);
	memset(&req->get, 0, sizeof(req->get));
	rv = bc_loop_call(ch->loop, meta_start, req);
	if (rv < 0) {
		free(req->strs);
		req->strs = NULL;
	}
	return rv;
}

/* ---- writes ----------------------------------------------------------- */

/* Queues c's put for the lower tiers above from. */
static void
queue_puts(bc_tier_chain_t *ch, bc_chunk_t *c, const bc_policy_ctx_t *ctx,
    size_t from)
{
	size_t extra = slen(ctx->job) + slen(ctx->dataset);

	for (size_t i = 1; i < from && i < ch->n; i++) {
		job_t *j = job_new(ch, i, JOB_PUT, extra);
		char  *p;

		if (j == NULL)
			continue;
		p = j->strs;
		bc_chunk_ref(c);
		j->c = c;
		j->ctx = *ctx;
		j->ctx.job = scopy(&p, ctx->job);
		j->ctx.dataset = scopy(&p, ctx->dataset);
		enqueue(ch, j);
	}
}

int
bc_tier_chain_promote(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx, size_t from)
{
	bc_tier_t *top = ch->tiers[0];
	int rv;

	rv = top->ops->put(top, c, ctx);
	queue_puts(ch, c, ctx, from);
	return rv;
}

int
bc_tier_chain_put(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx)
{
	return bc_tier_chain_promote(ch, c, ctx, ch->n);
}

void
bc_tier_chain_put_lower(bc_tier_chain_t *ch, bc_chunk_t *c,
    const bc_policy_ctx_t *ctx)
{
	queue_puts(ch, c, ctx, ch->n);
}

int
bc_tier_chain_del(bc_tier_chain_t *ch, const bc_chunk_key_t *k)
{
	bc_tier_t *top = ch->tiers[0];
	size_t extra = slen(k->bucket) + slen(k->key) + slen(k->etag);
	int rv;

	rv = top->ops->del(top, k);
	for (size_t i = 1; i < ch->n; i++) {
		job_t *j = job_new(ch, i, JOB_DEL, extra);
		char  *p;

		if (j == NULL)
			continue;
		p = j->strs;
		j->key.bucket = scopy(&p, k->bucket);
		j->key.key = scopy(&p, k->key);
		j->key.etag = scopy(&p, k->etag);
		j->key.index = k->index;
		enqueue(ch, j);
	}
	return rv;
}

size_t
bc_tier_chain_del_object(bc_tier_chain_t *ch, const char *bucket,
    const char *key, const char *prefix)
{
	bc_tier_t *top = ch->tiers[0];
	size_t extra = slen(bucket) + slen(key) + slen(prefix);
	size_t n;

	n = top->ops->del_object(top, bucket, key, prefix);
	for (size_t i = 1; i < ch->n; i++) {
		job_t *j = job_new(ch, i, JOB_DEL_OBJECT, extra);
		char  *p;

		if (j == NULL)
			continue;
		p = j->strs;
		j->bucket = scopy(&p, bucket);
		j->okey = scopy(&p, key);
		j->prefix = scopy(&p, prefix);
		enqueue(ch, j);
	}
	return n;
}

void
bc_tier_chain_meta_put(bc_tier_chain_t *ch, const char *bucket,
    const char *key, const void *blob, size_t len)
{
	size_t extra = slen(bucket) + slen(key) + len;

	for (size_t i = 1; i < ch->n; i++) {
		job_t *j;
		char  *p;

		if (ch->tiers[i]->ops->meta_put == NULL)
			continue;
		j = job_new(ch, i, JOB_META_PUT, extra);
		if (j == NULL)
			continue;
		p = j->strs;
		j->bucket = scopy(&p, bucket);
		j->okey = scopy(&p, key);
		if (len > 0)
			memcpy(p, blob, len);
		j->blob = p;
		j->blob_len = len;
		enqueue(ch, j);
	}
}

int
bc_tier_chain_set_capacity(bc_tier_chain_t *ch, size_t i, uint64_t bytes)
{
	bc_tier_t *t;

	if (i >= ch->n)
		return BC_EINVAL;
	t = ch->tiers[i];
	if (t->ops->set_capacity == NULL)
		return BC_EINVAL;
	return t->ops->set_capacity(t, bytes);
}

/* ---- waiting and counting --------------------------------------------- */

void
bc_tier_chain_flush(bc_tier_chain_t *ch)
{
	pthread_mutex_lock(&ch->mu);
	while (ch->scheduled)
		pthread_cond_wait(&ch->idle, &ch->mu);
	pthread_mutex_unlock(&ch->mu);
}

size_t
bc_tier_chain_queued(bc_tier_chain_t *ch)
{
	size_t n;

	pthread_mutex_lock(&ch->mu);
	n = ch->queued;
	pthread_mutex_unlock(&ch->mu);
	return n;
}

uint64_t
bc_tier_chain_drops(bc_tier_chain_t *ch)
{
	return atomic_load(&ch->drops);
}
