/*
 * tier_redis.c — the Redis tier (tier_redis.h): an index of the chunks
 * this gateway wrote (a hash table and an age list under one mutex, each
 * entry with its policy node), and the Redis commands, sent from the loop
 * thread through the cluster client.
 *
 * Concurrency: ops take the lock only to change the index; anything sent
 * to Redis goes through bc_loop_call as a job the loop thread owns and
 * frees. Entries leaving the index for Redis's sake (deleted, evicted)
 * travel in a job to be deleted there; entries that expired or whose
 * chunk Redis no longer has are freed at once. A put's job names its entry
 * by serial, so a late failure drops only that entry, never a newer one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tier/tier_redis.h"
#include "tier/tier_redis_cluster.h"
#include "tier/tier_redis_key.h"
#include "util/util_assert.h"
#include "util/util_buf.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"
#include "util/util_num.h"
#include "util/util_hash.h"
#include "util/util_htab.h"
#include "util/util_list.h"

#define LEN_UNKNOWN UINT32_MAX   /* an entry made to delete slice 0 only */

typedef struct entry_s {
	bc_hnode_t       hnode;          /* in r->table */
	struct entry_s  *link;           /* a job's list, a drop list */
	struct entry_s  *older, *newer;  /* age list */
	bc_policy_node_t pol;
	uint64_t         expires_ns;
	uint64_t         serial;
	uint32_t         index, len;
	size_t           id_len;
	char             id[];           /* "bucket\0key\0etag\0" */
} entry_t;

typedef struct redis_s {
	bc_tier_t                base;
	bc_loop_t               *loop;
	pthread_t                loop_thread;
	bc_tier_redis_cluster_t *cl;       /* NULL once stopped */
	/* The client's health as on_state last said (health() reads these,
	 * never the client, which stop may be freeing). */
	atomic_bool              ever_up, client_up, stopped;
	_Atomic int              mode;     /* the client's, as on_state saw */
	bool                     size_auto;   /* capacity from maxmemory */
	_Atomic int              size_source; /* bc_tier_redis_size_t */
	_Atomic uint64_t         maxmemory;   /* the server's, as last read */
	/* The client's counters, here so that they outlive it. */
	bc_tier_redis_conn_stats_t    conn_stats;
	bc_tier_redis_cluster_stats_t cluster_stats;
	uint64_t                 unit, ttl_ms;
	char                     px[24];
	char                     set_tail[64];   /* "PX <ttl>" of a SET */
	size_t                   set_tail_len;
	pthread_mutex_t          lock;
	uint64_t                 capacity, usage, serial;   /* lock */
	/* Value bytes of puts sent or being sent to Redis (their commands
	 * hold copies), and the bound past which puts are refused. */
	uint64_t                 put_pending, put_pending_max;  /* lock */
	const bc_policy_ops_t   *pol_ops;
	bc_policy_t             *pol;                      /* lock */
	bc_htab_t                table;    /* lock; entry_t.hnode */
	size_t                   n;                        /* lock */
	entry_t                 *oldest, *newest;          /* lock */
} redis_t;

static redis_t *
redis_of(bc_tier_t *bt)
{
	BC_CHECK(bt->ops == &bc_tier_redis);
	return bt->priv;
}

static void
key_of_id(const char *id, uint32_t index, bc_chunk_key_t *k)
{
	k->bucket = id;
	k->key = k->bucket + strlen(k->bucket) + 1;
	k->etag = k->key + strlen(k->key) + 1;
	k->index = index;
}

static uint64_t
hash_of(const char *id, size_t id_len, uint32_t index)
{
	return bc_hash(bc_hash(BC_HASH_INIT, id, id_len), &index,
	    sizeof(index));
}

static bool
fail_marks_down(int status)
{
	return status < 0 && status != BC_ECANCELED;
}

/* ---- the index (lock held) ---------------------------------------------- */

/* The entry of (id, index), or NULL. */
static entry_t *
find(redis_t *r, const char *id, size_t id_len, uint32_t index)
{
	for (bc_hnode_t *n = bc_htab_first(&r->table,
	    hash_of(id, id_len, index)); n != NULL; n = bc_htab_next(n)) {
		entry_t *e = BC_CONTAINER_OF(n, entry_t, hnode);

		if (e->index == index && e->id_len == id_len &&
		    memcmp(e->id, id, id_len) == 0)
			return e;
	}
	return NULL;
}

/* k's id into id (cap bytes) and its entry (NULL: none) into *out:
 * 0, or -1 when the id does not fit. */
static int
find_key(redis_t *r, const bc_chunk_key_t *k, char *id, size_t cap,
    size_t *id_len, entry_t **out)
{
	int n = snprintf(id, cap, "%s%c%s%c%s%c", k->bucket, 0, k->key, 0,
	    k->etag, 0);

	*out = NULL;
	if (n < 0 || (size_t)n >= cap)
		return -1;
	*id_len = (size_t)n;
	*out = find(r, id, *id_len, k->index);
	return 0;
}

static void
link_entry(redis_t *r, entry_t *e)
{
	bc_htab_insert(&r->table, &e->hnode,
	    hash_of(e->id, e->id_len, e->index));
	e->older = r->newest;
	e->newer = NULL;
	if (r->newest != NULL)
		r->newest->newer = e;
	else
		r->oldest = e;
	r->newest = e;
	r->n++;
	r->usage += e->pol.size;
}

/* Unlinks e from the table and the age list and tells the policy; e is
 * the caller's. */
static void
unlink_entry(redis_t *r, entry_t *e)
{
	BC_CHECK(r->n > 0 && r->usage >= e->pol.size);
	bc_htab_remove(&r->table, &e->hnode);
	e->link = NULL;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		r->oldest = e->newer;
	if (e->newer != NULL)
		e->newer->older = e->older;
	else
		r->newest = e->older;
	r->pol_ops->on_remove(r->pol, &e->pol);
	r->usage -= e->pol.size;
	r->n--;
}

static void
unlink_free(redis_t *r, entry_t *e)
{
	unlink_entry(r, e);
	free(e);
}

/* Drops entries whose values Redis has let expire. */
static void
expire(redis_t *r, uint64_t now)
{
	while (r->oldest != NULL && r->oldest->expires_ns <= now)
		unlink_free(r, r->oldest);
}

/* Evicts in the policy's order, onto *drops, until usage + add fits.
 * Returns false when it cannot. */
static bool
evict_to_fit(redis_t *r, uint64_t add, entry_t **drops)
{
	bc_policy_node_t *v;
	entry_t          *e;

	expire(r, bc_mono_ns());
	while (r->usage + add > r->capacity) {
		v = r->pol_ops->choose_victim(r->pol, NULL, NULL);
		if (v == NULL)
			return false;
		e = BC_POLICY_ENTRY(v, entry_t, pol);
		unlink_entry(r, e);
		e->link = *drops;
		*drops = e;
		BC_TIER_COUNT(&r->base, evictions, 1);
	}
	return true;
}

static entry_t *
entry_new(const char *id, size_t id_len, uint32_t index, uint32_t len)
{
	entry_t *e = calloc(1, sizeof(*e) + id_len);

	if (e == NULL)
		return NULL;
	memcpy(e->id, id, id_len);
	e->id_len = id_len;
	e->index = index;
	e->len = len;
	return e;
}

/* ---- sending (loop thread) ---------------------------------------------- */

static void
on_answer(redis_t *r, int status)
{
	if (fail_marks_down(status))
		bc_tier_mark_down(&r->base, status, bc_mono_ns());
	else if (status == 0)
		bc_tier_mark_up(&r->base, bc_mono_ns());
}

/* The cluster's submit, refused (BC_ECANCELED) once stopped. */
static int
submit(redis_t *r, const char *key, size_t keylen, int argc,
    const char **argv, const size_t *argvlen, bc_tier_redis_cluster_cb cb,
    void *arg)
{
	if (r->cl == NULL)
		return BC_ECANCELED;
	return bc_tier_redis_cluster_submit(r->cl, key, keylen, argc, argv,
	    argvlen, cb, arg);
}

static void
del_done(void *arg, int status, const redisReply *reply)
{
	(void)reply;
	on_answer(arg, status);
}

static void
send_del(redis_t *r, const char *name, size_t len)
{
	const char *argv[2] = { "DEL", name };
	size_t      argvlen[2] = { 3, len };
	int         rv;

	rv = submit(r, name, len, 2, argv, argvlen,
	    del_done, r);
	if (rv < 0)
		on_answer(r, rv);
}

typedef struct dels_job_s {
	redis_t *r;
	entry_t *list;
} dels_job_t;

static void
dels_run(bc_loop_t *l, void *arg)
{
	dels_job_t *j = arg;
	redis_t    *r = j->r;

	(void)l;
	while (j->list != NULL) {
		entry_t              *e = j->list;
		bc_chunk_key_t        k;
		bc_tier_redis_chunk_t rc;
		char                  name[BC_REDIS_KEY_NAME_MAX];
		uint32_t              n;

		j->list = e->link;
		key_of_id(e->id, e->index, &k);
		if (e->len > 0 && bc_tier_redis_key_chunk_init(&rc, &k, r->unit,
		    e->len == LEN_UNKNOWN ? r->unit : e->len) == 0) {
			n = e->len == LEN_UNKNOWN ? 1 : rc.nslices;
			for (uint32_t i = 0; i < n; i++)
				send_del(r, name,
				    bc_tier_redis_key_slice(&rc, i, name));
		}
		free(e);
	}
	free(j);
}

static void
free_list(entry_t *e)
{
	while (e != NULL) {
		entry_t *next = e->link;

		free(e);
		e = next;
	}
}

/* Deletes the slices of list's entries from Redis and frees them. */
static void
send_dels(redis_t *r, entry_t *list)
{
	dels_job_t *j;

	if (list == NULL)
		return;
	j = malloc(sizeof(*j));
	if (j == NULL) {
		free_list(list);
		return;
	}
	j->r = r;
	j->list = list;
	if (bc_loop_call(r->loop, dels_run, j) < 0) {
		free_list(list);
		free(j);
	}
}

/* ---- put ---------------------------------------------------------------- */

typedef struct put_job_s {
	redis_t              *r;
	bc_chunk_t           *c;
	bc_tier_redis_chunk_t rc;
	uint64_t              serial, charge;
	char                 *heads;   /* the SETs' first parts (put_run) */
	uint32_t              pending;
	int                   failed;
} put_job_t;

/* Drops the entry made by put serial for (id, index), if still there. */
static void
drop_serial(redis_t *r, const char *id, size_t id_len, uint32_t index,
    uint64_t serial)
{
	entry_t *e;

	pthread_mutex_lock(&r->lock);
	e = find(r, id, id_len, index);
	if (e != NULL && e->serial == serial) {
		unlink_entry(r, e);
		free(e);
	}
	pthread_mutex_unlock(&r->lock);
}

static void
put_finish(put_job_t *j)
{
	redis_t *r = j->r;

	pthread_mutex_lock(&r->lock);
	r->put_pending -= j->charge;
	pthread_mutex_unlock(&r->lock);
	if (j->failed < 0) {
		if (j->failed != BC_ECANCELED)
			BC_TIER_COUNT(&r->base, write_failures, 1);
		drop_serial(r, j->c->id, j->c->id_len, j->c->index, j->serial);
	}
	bc_chunk_unref(j->c);
	free(j->heads);
	free(j);
}

static void
set_done(void *arg, int status, const redisReply *reply)
{
	put_job_t *j = arg;

	if (status == 0 && reply->type == REDIS_REPLY_ERROR)
		status = BC_EIO;
	on_answer(j->r, status);
	if (status < 0 && j->failed == 0)
		j->failed = status;
	if (--j->pending == 0)
		put_finish(j);
}

static int
submit_set(redis_t *r, const char *name, size_t nlen, const void *v,
    size_t vlen, bc_tier_redis_cluster_cb cb, void *arg)
{
	const char *argv[5] = { "SET", name, v, "PX", r->px };
	size_t      argvlen[5] = { 3, nlen, vlen, 2, strlen(r->px) };

	return submit(r, name, nlen, 5, argv,
	    argvlen, cb, arg);
}

/* The first part of slice i's "SET <name> <header and bytes> PX <ttl>"
 * in the protocol, into out: up to the value's bytes (the slice's, at
 * bytes), its header included. Returns its length. */
#define SET_HEAD_MAX (64 + BC_REDIS_KEY_NAME_MAX + 32 + BC_REDIS_KEY_HDR_MAX)

static size_t
set_head(const put_job_t *j, uint32_t i, const char *name, size_t nlen,
    const uint8_t *bytes, char *out)
{
	size_t vlen = bc_tier_redis_key_value_len(&j->rc, i);
	int    n;

	n = snprintf(out, SET_HEAD_MAX, "*5\r\n$3\r\nSET\r\n$%zu\r\n", nlen);
	memcpy(out + n, name, nlen);
	n += (int)nlen;
	n += snprintf(out + n, SET_HEAD_MAX - (size_t)n, "\r\n$%zu\r\n", vlen);
	bc_tier_redis_key_slice_hdr(&j->rc, i, bytes, (uint8_t *)out + n);
	return (size_t)n + j->rc.hdr_len;
}

/* Sends every slice's SET as three parts (tier_redis_conn.h): its head,
 * the chunk's bytes (borrowed: the job holds the chunk until the last
 * answer), the tail; so a slice is copied once, into hiredis's output
 * buffer, when its turn to be written comes. */
static void
put_run(bc_loop_t *l, void *arg)
{
	put_job_t *j = arg;
	redis_t   *r = j->r;
	int        rv = 0;

	(void)l;
	j->pending = 1;
	j->heads = malloc((size_t)j->rc.nslices * SET_HEAD_MAX);
	if (j->heads == NULL)
		rv = BC_ENOMEM;
	for (uint32_t i = 0; i < j->rc.nslices && rv == 0; i++) {
		char        *head = j->heads + (size_t)i * SET_HEAD_MAX;
		char         name[BC_REDIS_KEY_NAME_MAX];
		size_t       nlen = bc_tier_redis_key_slice(&j->rc, i, name);
		uint32_t     off, len;
		struct iovec iov[3];

		bc_tier_redis_key_span(&j->rc, i, &off, &len);
		iov[0] = (struct iovec){ head, set_head(j, i, name, nlen,
		    j->c->data + off, head) };
		iov[1] = (struct iovec){ j->c->data + off, len };
		iov[2] = (struct iovec){ r->set_tail, r->set_tail_len };
		rv = r->cl == NULL ? BC_ECANCELED :
		    bc_tier_redis_cluster_submit_iov(r->cl, name, nlen, iov, 3,
		    set_done, j);
		if (rv == 0)
			j->pending++;
	}
	if (rv < 0) {
		on_answer(r, rv);
		if (j->failed == 0)
			j->failed = rv;
	}
	if (--j->pending == 0)
		put_finish(j);
}

static int
redis_put(bc_tier_t *bt, bc_chunk_t *c, const bc_policy_ctx_t *ctx)
{
	redis_t              *r = redis_of(bt);
	bc_chunk_key_t        k;
	bc_tier_redis_chunk_t rc;
	entry_t              *e, *old, *drops = NULL;
	put_job_t            *j = NULL;
	uint64_t              charge = BC_TIER_REDIS_KEY_COST, serial;

	key_of_id(c->id, c->index, &k);
	if (c->len > r->unit || (c->len > 0 &&
	    bc_tier_redis_key_chunk_init(&rc, &k, r->unit, c->len) < 0)) {
		BC_TIER_COUNT(bt, rejects, 1);
		return BC_E2BIG;
	}
	if (c->len > 0) {
		charge = 0;
		for (uint32_t i = 0; i < rc.nslices; i++)
			charge += bc_tier_redis_key_value_len(&rc, i) +
			    BC_TIER_REDIS_KEY_COST;
	}
	e = entry_new(c->id, c->id_len, c->index, (uint32_t)c->len);
	if (e != NULL && c->len > 0)
		j = calloc(1, sizeof(*j));
	if (e == NULL || (c->len > 0 && j == NULL)) {
		free(e);
		BC_TIER_COUNT(bt, write_failures, 1);
		return BC_ENOMEM;
	}
	e->pol.size = charge;
	e->pol.fetch_us = c->fetch_us;
	e->pol.key = bc_policy_key_hash(k.bucket, k.key, k.index);
	e->expires_ns = bc_mono_ns() + r->ttl_ms * 1000000u;
	pthread_mutex_lock(&r->lock);
	if (charge > r->capacity || (j != NULL &&
	    r->put_pending + charge > r->put_pending_max) ||
	    !r->pol_ops->admit(r->pol, &e->pol, ctx))
		goto reject;
	old = find(r, e->id, e->id_len, e->index);
	if (old != NULL) {
		unlink_entry(r, old);
		free(old);
		BC_TIER_COUNT(bt, deletes, 1);
	}
	if (!evict_to_fit(r, charge, &drops))
		goto reject;
	e->serial = serial = ++r->serial;
	link_entry(r, e);
	r->pol_ops->on_insert(r->pol, &e->pol, ctx);
	BC_TIER_COUNT(bt, writes, 1);
	BC_TIER_COUNT(bt, bytes_written, charge);
	if (j != NULL)
		r->put_pending += charge;
	pthread_mutex_unlock(&r->lock);
	send_dels(r, drops);
	if (j == NULL)
		return 0;
	bc_chunk_ref(c);
	j->charge = charge;
	j->r = r;
	j->c = c;
	j->rc = rc;
	j->serial = serial;
	if (bc_loop_call(r->loop, put_run, j) < 0) {
		j->failed = BC_ECANCELED;
		BC_TIER_COUNT(bt, write_failures, 1);
		put_finish(j);
	}
	return 0;

reject:
	pthread_mutex_unlock(&r->lock);
	send_dels(r, drops);
	BC_TIER_COUNT(bt, rejects, 1);
	free(e);
	free(j);
	return BC_E2BIG;
}

/* ---- get ---------------------------------------------------------------- */

typedef struct get_job_s get_job_t;

typedef struct slot_s {
	get_job_t *j;
	uint32_t   i;
} slot_t;

struct get_job_s {
	redis_t              *r;
	bc_tier_get_t        *req;
	bc_tier_redis_chunk_t rc;
	bool                  known;   /* rc.len from the index */
	/* Length unknown: the values of the unit's layout, copied as they
	 * come (NULL: none), until slice 0 tells the layout. */
	uint8_t             **vals;
	size_t               *vlens;
	uint32_t              nvals;
	uint8_t              *data;       /* bc_chunk_data_alloc's */
	size_t                data_map;
	slot_t               *slots;
	uint32_t              pending;
	int                   err;     /* a failure without a usable answer */
	bool                  miss, corrupt;
};

static void
get_answer(get_job_t *j)
{
	redis_t       *r = j->r;
	bc_tier_get_t *req = j->req;
	bc_chunk_t    *c = NULL;
	int            status = 0;
	entry_t       *e;
	char           id[BC_REDIS_KEY_HDR_MAX];
	size_t         id_len;

	if (j->err < 0) {
		status = j->err;
		BC_TIER_COUNT(&r->base, errors, 1);
	} else if (j->miss || j->corrupt) {
		status = BC_ENOENT;
		if (j->corrupt)
			BC_TIER_COUNT(&r->base, corrupt, 1);
		BC_TIER_COUNT(&r->base, misses, 1);
	} else {
		c = bc_chunk_new_data(req->key, j->data, j->rc.len,
		    j->data_map);
		j->data = NULL;
		status = c != NULL ? 0 : BC_ENOMEM;
	}
	if (status == 0 || status == BC_ENOENT) {
		pthread_mutex_lock(&r->lock);
		(void)find_key(r, req->key, id, sizeof(id), &id_len, &e);
		if (e != NULL) {
			if (status == 0)
				r->pol_ops->on_hit(r->pol, &e->pol, req->ctx);
			else
				unlink_free(r, e);
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (status == 0) {
		BC_TIER_COUNT(&r->base, hits, 1);
		BC_TIER_COUNT(&r->base, bytes_read, c->len);
	}
	for (uint32_t i = 0; i < j->nvals; i++)
		free(j->vals[i]);
	free(j->vals);
	free(j->vlens);
	bc_chunk_data_free(j->data, j->data_map);
	free(j->slots);
	free(j);
	req->cb(req, status, c);
}

static void get_slice_done(void *arg, int status, const redisReply *reply);

/* Sends GETs of slices [from, rc.nslices). */
static void
get_send(get_job_t *j, uint32_t from)
{
	char name[BC_REDIS_KEY_NAME_MAX];
	int  rv;

	if (j->slots == NULL) {
		j->slots = calloc(j->rc.nslices, sizeof(*j->slots));
		if (j->slots == NULL) {
			j->err = BC_ENOMEM;
			return;
		}
	}
	for (uint32_t i = from; i < j->rc.nslices; i++) {
		size_t      n = bc_tier_redis_key_slice(&j->rc, i, name);
		const char *argv[2] = { "GET", name };
		size_t      argvlen[2] = { 3, n };

		j->slots[i].j = j;
		j->slots[i].i = i;
		rv = submit(j->r, name, n, 2, argv,
		    argvlen, get_slice_done, &j->slots[i]);
		if (rv < 0) {
			on_answer(j->r, rv);
			j->err = rv;
			return;
		}
		j->pending++;
	}
}

/* Takes value v (slice i's, n bytes) into the chunk: 0, or BC_ENOENT,
 * BC_EPROTO as bc_tier_redis_key_slice_check. */
static int
take(get_job_t *j, uint32_t i, const void *v, size_t n)
{
	const uint8_t *payload;
	uint32_t       off, len;
	int            rv;

	rv = bc_tier_redis_key_slice_check(&j->rc, i, v, n, &payload);
	if (rv == 0) {
		bc_tier_redis_key_span(&j->rc, i, &off, &len);
		memcpy(j->data + off, payload, len);
	}
	return rv;
}

static void
note(get_job_t *j, int rv)
{
	if (rv == BC_ENOENT)
		j->miss = true;
	else if (rv == BC_EPROTO)
		j->corrupt = true;
	else if (rv < 0)
		j->err = rv;
}

/*
 * Every value of the unit's layout came (a chunk whose length the index
 * did not know): slice 0's header tells the chunk's length, whose full
 * slices are the same keys at the same offsets; takes what came and
 * asks for the slices the unit's layout did not name.
 */
static void
resolve(get_job_t *j)
{
	bc_tier_redis_slice_t s;
	uint32_t              fetched = j->nvals;
	int                   rv;

	if (j->err < 0 || j->miss || j->corrupt)
		return;
	if (j->vals[0] == NULL) {
		j->miss = true;
		return;
	}
	rv = bc_tier_redis_key_slice_parse(j->vals[0], j->vlens[0], &s);
	if (rv == BC_ENOTSUP || (rv == 0 && (s.len == 0 ||
	    s.len > j->r->unit || s.unit != j->r->unit ||
	    bc_tier_redis_key_chunk_init(&j->rc, j->req->key, j->r->unit,
	    s.len) < 0)))
		rv = BC_ENOENT;
	if (rv == 0) {
		j->data = bc_chunk_data_alloc(j->rc.len, &j->data_map);
		rv = j->data != NULL ? 0 : BC_ENOMEM;
	}
	j->known = true;
	for (uint32_t i = 0; rv == 0 && i < j->rc.nslices && i < fetched; i++)
		rv = j->vals[i] != NULL ? take(j, i, j->vals[i], j->vlens[i]) :
		    BC_ENOENT;
	note(j, rv);
	if (rv < 0 || j->rc.nslices <= fetched)
		return;
	free(j->slots);
	j->slots = NULL;
	get_send(j, fetched);
}

static void
get_slice_done(void *arg, int status, const redisReply *reply)
{
	slot_t    *s = arg;
	get_job_t *j = s->j;
	uint32_t   i = s->i;

	on_answer(j->r, status);
	if (status < 0) {
		j->err = status;
	} else if (reply->type == REDIS_REPLY_NIL) {
		if (j->known || i == 0)
			j->miss = true;
	} else if (reply->type != REDIS_REPLY_STRING) {
		j->err = BC_EIO;
	} else if (j->miss || j->corrupt || j->err < 0) {
		(void)0;   /* the answer is known: no more bytes kept */
	} else if (j->known) {
		note(j, take(j, i, reply->str, reply->len));
	} else {
		j->vals[i] = malloc(reply->len > 0 ? reply->len : 1);
		if (j->vals[i] == NULL) {
			j->err = BC_ENOMEM;
		} else {
			memcpy(j->vals[i], reply->str, reply->len);
			j->vlens[i] = reply->len;
		}
	}
	if (j->pending == 1 && !j->known) {
		j->pending++;
		resolve(j);
		j->pending--;
	}
	if (--j->pending == 0)
		get_answer(j);
}

static void
get_run(bc_loop_t *l, void *arg)
{
	get_job_t            *j = arg;
	redis_t              *r = j->r;
	const bc_chunk_key_t *k = j->req->key;
	entry_t              *e;
	char                  id[BC_REDIS_KEY_HDR_MAX];
	size_t                id_len;
	int64_t               len = -1;

	(void)l;
	pthread_mutex_lock(&r->lock);
	(void)find_key(r, k, id, sizeof(id), &id_len, &e);
	if (e != NULL)
		len = e->len;
	pthread_mutex_unlock(&r->lock);
	if (len < 0 && j->req->len_hint > 0 && j->req->len_hint <= r->unit)
		len = (int64_t)j->req->len_hint;   /* another gateway's chunk */
	if (len == 0) {
		j->data = malloc(1);
		j->known = true;
		if (j->data == NULL)
			j->err = BC_ENOMEM;
		get_answer(j);
		return;
	}
	if (bc_tier_redis_key_chunk_init(&j->rc, k, r->unit,
	    len > 0 ? (uint64_t)len : r->unit) < 0) {
		j->miss = true;
		get_answer(j);
		return;
	}
	j->known = len > 0;
	j->pending = 1;
	if (j->known) {
		j->data = bc_chunk_data_alloc(j->rc.len, &j->data_map);
		if (j->data == NULL)
			j->err = BC_ENOMEM;
		else
			get_send(j, 0);
	} else {
		j->nvals = j->rc.nslices;
		j->vals = calloc(j->nvals, sizeof(*j->vals));
		j->vlens = calloc(j->nvals, sizeof(*j->vlens));
		if (j->vals == NULL || j->vlens == NULL)
			j->err = BC_ENOMEM;
		else
			get_send(j, 0);
	}
	if (--j->pending == 0)
		get_answer(j);
}

static int
redis_get(bc_tier_t *bt, bc_tier_get_t *req, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx, bc_tier_get_cb cb)
{
	redis_t   *r = redis_of(bt);
	get_job_t *j = calloc(1, sizeof(*j));
	int        rv;

	if (j == NULL) {
		BC_TIER_COUNT(bt, errors, 1);
		return BC_ENOMEM;
	}
	req->tier = bt;
	req->key = k;
	req->ctx = ctx;
	req->cb = cb;
	req->priv = j;
	j->r = r;
	j->req = req;
	rv = bc_loop_call(r->loop, get_run, j);
	if (rv < 0) {
		free(j);
		BC_TIER_COUNT(bt, errors, 1);
	}
	return rv;
}

/* This gateway wrote k and its values have not expired (Redis may still
 * have dropped them: maxmemory). */
static bool
redis_has(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	redis_t  *r = redis_of(bt);
	entry_t  *e;
	char      id[BC_REDIS_KEY_HDR_MAX];
	size_t    id_len = 0;
	bool      found;

	pthread_mutex_lock(&r->lock);
	(void)find_key(r, k, id, sizeof(id), &id_len, &e);
	found = e != NULL && e->len != LEN_UNKNOWN &&
	    e->expires_ns > bc_mono_ns();
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* ---- del, del_object ---------------------------------------------------- */

static int
redis_del(bc_tier_t *bt, const bc_chunk_key_t *k)
{
	redis_t  *r = redis_of(bt);
	entry_t  *e = NULL;
	char      id[BC_REDIS_KEY_HDR_MAX];
	size_t    id_len = 0;
	int       rv = BC_ENOENT, fits;

	pthread_mutex_lock(&r->lock);
	fits = find_key(r, k, id, sizeof(id), &id_len, &e);
	if (e != NULL) {
		unlink_entry(r, e);
		BC_TIER_COUNT(bt, deletes, 1);
		rv = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (e == NULL && fits == 0) {
		e = entry_new(id, id_len, k->index, LEN_UNKNOWN);
	}
	send_dels(r, e);
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

typedef struct key_job_s {
	redis_t *r;
	bool     set;
	size_t   nlen, vlen;
	char     name[BC_REDIS_KEY_NAME_MAX];
	uint8_t  value[];
} key_job_t;

static void
meta_set_done(void *arg, int status, const redisReply *reply)
{
	redis_t *r = arg;

	if (status == 0 && reply->type == REDIS_REPLY_ERROR)
		status = BC_EIO;
	on_answer(r, status);
	if (status < 0 && status != BC_ECANCELED)
		BC_TIER_COUNT(&r->base, write_failures, 1);
}

static void
key_run(bc_loop_t *l, void *arg)
{
	key_job_t *j = arg;
	int        rv;

	(void)l;
	if (j->set) {
		rv = submit_set(j->r, j->name, j->nlen, j->value, j->vlen,
		    meta_set_done, j->r);
		if (rv < 0)
			meta_set_done(j->r, rv, NULL);
	} else {
		send_del(j->r, j->name, j->nlen);
	}
	free(j);
}

static size_t
redis_del_object(bc_tier_t *bt, const char *bucket, const char *key,
    const char *prefix)
{
	redis_t   *r = redis_of(bt);
	entry_t   *drops = NULL;
	key_job_t *j;
	size_t     n = 0;
	int        len;

	if (prefix == NULL)
		prefix = "";
	pthread_mutex_lock(&r->lock);
	for (entry_t *e = r->oldest, *next; e != NULL; e = next) {
		next = e->newer;
		if (!object_matches(e, bucket, key, prefix))
			continue;
		unlink_entry(r, find(r, e->id, e->id_len, e->index));
		e->link = drops;
		drops = e;
		n++;
	}
	BC_TIER_COUNT(bt, deletes, n);
	pthread_mutex_unlock(&r->lock);
	send_dels(r, drops);
	if (key == NULL)
		return n;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return n;
	len = bc_tier_redis_key_meta(bucket, key, j->name);
	if (len < 0) {
		free(j);
		return n;
	}
	j->r = r;
	j->nlen = (size_t)len;
	if (bc_loop_call(r->loop, key_run, j) < 0)
		free(j);
	return n;
}

/* ---- metadata ----------------------------------------------------------- */

static int
redis_meta_put(bc_tier_t *bt, const char *bucket, const char *key,
    const void *blob, size_t len)
{
	redis_t   *r = redis_of(bt);
	bc_buf_t   b;
	key_job_t *j = NULL;
	int        rv, n;

	bc_buf_init(&b, 0);
	rv = bc_tier_redis_key_meta_encode(&b, bucket, key, blob, len);
	if (rv == 0) {
		j = calloc(1, sizeof(*j) + b.len);
		rv = j != NULL ? 0 : BC_ENOMEM;
	}
	if (rv == 0) {
		n = bc_tier_redis_key_meta(bucket, key, j->name);
		rv = n < 0 ? n : 0;
	}
	if (rv == 0) {
		j->r = r;
		j->set = true;
		j->nlen = (size_t)n;
		j->vlen = b.len;
		memcpy(j->value, b.data, b.len);
		rv = bc_loop_call(r->loop, key_run, j);
	}
	bc_buf_fini(&b);
	if (rv < 0) {
		free(j);
		if (rv == BC_E2BIG || rv == BC_EINVAL) {
			BC_TIER_COUNT(bt, rejects, 1);
			return BC_E2BIG;
		}
		BC_TIER_COUNT(bt, write_failures, 1);
	}
	return rv;
}

typedef struct meta_job_s {
	redis_t            *r;
	bc_tier_meta_get_t *req;
	size_t              nlen;
	char                name[BC_REDIS_KEY_NAME_MAX];
} meta_job_t;

static void
meta_got(void *arg, int status, const redisReply *reply)
{
	meta_job_t         *j = arg;
	bc_tier_meta_get_t *req = j->req;
	const uint8_t      *blob = NULL;
	size_t              len = 0;

	on_answer(j->r, status);
	if (status == 0) {
		if (reply->type == REDIS_REPLY_NIL)
			status = BC_ENOENT;
		else if (reply->type != REDIS_REPLY_STRING)
			status = BC_EIO;
		else
			status = bc_tier_redis_key_meta_check(req->bucket,
			    req->key, reply->str, reply->len, &blob, &len);
		if (status == BC_EPROTO) {
			BC_TIER_COUNT(&j->r->base, corrupt, 1);
			status = BC_ENOENT;
		}
	}
	if (status < 0 && status != BC_ENOENT)
		BC_TIER_COUNT(&j->r->base, errors, 1);
	free(j);
	req->cb(req, status, status == 0 ? blob : NULL, status == 0 ? len : 0);
}

static void
meta_run(bc_loop_t *l, void *arg)
{
	meta_job_t *j = arg;
	const char *argv[2] = { "GET", j->name };
	size_t      argvlen[2] = { 3, j->nlen };
	int         rv;

	(void)l;
	rv = submit(j->r, j->name, j->nlen, 2, argv,
	    argvlen, meta_got, j);
	if (rv < 0)
		meta_got(j, rv, NULL);
}

static int
redis_meta_get(bc_tier_t *bt, bc_tier_meta_get_t *req, const char *bucket,
    const char *key, bc_tier_meta_cb cb)
{
	redis_t    *r = redis_of(bt);
	meta_job_t *j = calloc(1, sizeof(*j));
	int         n, rv;

	if (j == NULL)
		return BC_ENOMEM;
	n = bc_tier_redis_key_meta(bucket, key, j->name);
	if (n < 0) {
		free(j);
		return BC_ENOENT;
	}
	req->tier = bt;
	req->bucket = bucket;
	req->key = key;
	req->cb = cb;
	req->priv = j;
	j->r = r;
	j->req = req;
	j->nlen = (size_t)n;
	rv = bc_loop_call(r->loop, meta_run, j);
	if (rv < 0)
		free(j);
	return rv;
}

/* ---- capacity, health --------------------------------------------------- */

static uint64_t
redis_capacity(bc_tier_t *bt)
{
	redis_t *r = redis_of(bt);
	uint64_t v;

	pthread_mutex_lock(&r->lock);
	v = r->capacity;
	pthread_mutex_unlock(&r->lock);
	return v;
}

static int
redis_set_capacity(bc_tier_t *bt, uint64_t bytes)
{
	redis_t *r = redis_of(bt);
	entry_t *drops = NULL;

	pthread_mutex_lock(&r->lock);
	r->capacity = bytes;
	if (r->pol_ops->set_capacity != NULL)
		r->pol_ops->set_capacity(r->pol, bytes);
	evict_to_fit(r, 0, &drops);
	pthread_mutex_unlock(&r->lock);
	send_dels(r, drops);
	return 0;
}

static uint64_t
redis_usage(bc_tier_t *bt)
{
	redis_t *r = redis_of(bt);
	uint64_t v;

	pthread_mutex_lock(&r->lock);
	expire(r, bc_mono_ns());
	v = r->usage;
	pthread_mutex_unlock(&r->lock);
	return v;
}

static uint64_t
redis_evictions(bc_tier_t *bt)
{
	return atomic_load(&bt->stats.evictions);
}

static bc_tier_state_t
redis_health(bc_tier_t *bt)
{
	redis_t *r = redis_of(bt);

	if (atomic_load(&r->stopped))
		return BC_TIER_DOWN;
	if (atomic_load(&r->ever_up) && !atomic_load(&r->client_up))
		return BC_TIER_DOWN;
	return BC_TIER_UP;
}

/* ---- capacity from the server's maxmemory -------------------------------- */

/* Loop thread: the masters of a cluster (1 for a standalone server). */
static uint64_t
masters(redis_t *r)
{
	bc_tier_redis_cluster_node_t nodes[64];
	size_t n, m = 0;

	if (r->cl == NULL || bc_tier_redis_cluster_mode(r->cl) !=
	    BC_TIER_REDIS_CLUSTER_CLUSTER)
		return 1;
	n = bc_tier_redis_cluster_nodes(r->cl, nodes, 64);
	for (size_t i = 0; i < n && i < 64; i++)
		m += nodes[i].slots > 0;
	return m > 0 ? m : 1;
}

/* The capacity stays 0: says why, once per reason. */
static void
size_unknown(redis_t *r, const char *why)
{
	int was = atomic_exchange(&r->size_source, BC_TIER_REDIS_SIZE_UNKNOWN);

	if (was != BC_TIER_REDIS_SIZE_UNKNOWN)
		BC_WARN("tier %s: no --redis-size and %s: nothing is written to "
		    "Redis (reads go on); set --redis-size", r->base.name, why);
}

static void
maxmemory_done(void *arg, int status, const redisReply *reply)
{
	redis_t *r = arg;
	uint64_t mm;
	uint64_t cap, prev;

	if (status < 0 || reply == NULL)
		return;   /* asked again when the client is up again */
	if (reply->type == REDIS_REPLY_ERROR) {
		char why[160];

		snprintf(why, sizeof(why), "the server refuses CONFIG GET "
		    "maxmemory (%.100s)", reply->str != NULL ? reply->str : "");
		size_unknown(r, why);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[1]->type != REDIS_REPLY_STRING) {
		size_unknown(r, "CONFIG GET maxmemory gave no value");
		return;
	}
	if (bc_parse_u64(reply->element[1]->str, reply->element[1]->len,
	    10, UINT64_MAX, &mm) < 0) {
		size_unknown(r, "CONFIG GET maxmemory gave no number");
		return;
	}
	prev = atomic_exchange(&r->maxmemory, (uint64_t)mm);
	if (mm == 0) {
		size_unknown(r, "the server has no maxmemory (unbounded)");
		return;
	}
	cap = ((uint64_t)mm - (uint64_t)mm / 16) * masters(r);
	if (cap < r->unit) {
		size_unknown(r, "the server's maxmemory is less than a chunk");
		return;
	}
	if (atomic_exchange(&r->size_source, BC_TIER_REDIS_SIZE_MAXMEMORY) !=
	    BC_TIER_REDIS_SIZE_MAXMEMORY || prev != mm)
		BC_INFO("tier %s: --redis-size from the server's maxmemory "
		    "(%llu MiB%s): %llu MiB", r->base.name, (unsigned long long)(mm >> 20),
		    masters(r) > 1 ? " a master" : "",
		    (unsigned long long)(cap >> 20));
	redis_set_capacity(&r->base, cap);
}

/* Loop thread, the client just came up: asks its maxmemory. */
static void
ask_maxmemory(redis_t *r)
{
	static const char *const argv[] = { "CONFIG", "GET", "maxmemory" };
	static const size_t lens[] = { 6, 3, 9 };

	if (!r->size_auto || r->cl == NULL)
		return;
	if (bc_tier_redis_cluster_submit(r->cl, NULL, 0, 3, (const char **)argv,
	    lens, maxmemory_done, r) < 0)
		BC_DEBUG("tier %s: CONFIG GET maxmemory not sent; asked at the "
		    "next connect", r->base.name);
}

/* ---- open, close -------------------------------------------------------- */

static void
on_state(bc_tier_redis_cluster_t *cl, bool up, void *arg)
{
	redis_t *r = arg;

	atomic_store(&r->mode, (int)bc_tier_redis_cluster_mode(cl));
	atomic_store(&r->client_up, up);
	if (up) {
		ask_maxmemory(r);
		atomic_store(&r->ever_up, true);
		bc_tier_mark_up(&r->base, bc_mono_ns());
	} else {
		bc_tier_mark_down(&r->base, BC_ENOTCONN, bc_mono_ns());
	}
}

typedef struct sync_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            done;
	void          (*fn)(struct sync_s *s);
	redis_t        *r;
	const bc_tier_redis_opts_t *ro;
	char           *err;
	size_t          errlen;
	int             rv;
} sync_t;

static void
sync_fn(bc_loop_t *l, void *arg)
{
	sync_t *s = arg;

	(void)l;
	s->r->loop_thread = pthread_self();
	s->fn(s);
	pthread_mutex_lock(&s->mu);
	s->done = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Runs s->fn on the loop thread and waits for it. */
static int
on_loop(sync_t *s)
{
	int rv;

	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	rv = bc_loop_call(s->r->loop, sync_fn, s);
	if (rv == 0) {
		pthread_mutex_lock(&s->mu);
		while (!s->done)
			pthread_cond_wait(&s->cv, &s->mu);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	return rv;
}

static void
open_client(sync_t *s)
{
	const bc_tier_redis_opts_t  *ro = s->ro;
	bc_tier_redis_cluster_opts_t co = {
		.seeds = ro->seeds,
		.nseeds = ro->nseeds,
		.conn = {
			.user = ro->user,
			.pass = ro->pass,
			.db = ro->db,
			.connect_timeout_ms = ro->connect_timeout_ms > 0 ?
			    ro->connect_timeout_ms : 1000,
			.command_timeout_ms = ro->timeout_ms > 0 ?
			    ro->timeout_ms : 2000,
			.totals = &s->r->conn_stats,
		},
		.on_state = on_state,
		.state_arg = s->r,
		.stats = &s->r->cluster_stats,
	};

	s->rv = bc_tier_redis_cluster_new(s->r->loop, &co, &s->r->cl, s->err,
	    s->errlen);
}

static void
close_client(sync_t *s)
{
	if (s->r->cl == NULL)
		return;
	atomic_store(&s->r->stopped, true);
	bc_tier_redis_cluster_free(s->r->cl);
	s->r->cl = NULL;
}

/* Frees r's client on the loop thread. Returns 0, or BC_ECANCELED when
 * the loop no longer runs calls (the client is then left open). */
static int
stop_client(redis_t *r)
{
	sync_t s = { .fn = close_client, .r = r };

	if (r->cl == NULL)
		return 0;
	if (pthread_equal(pthread_self(), r->loop_thread)) {
		close_client(&s);
		return 0;
	}
	return on_loop(&s);
}

void
bc_tier_redis_stop(bc_tier_t *bt)
{
	if (stop_client(redis_of(bt)) < 0)
		BC_WARN("tier %s: loop stopped before the Redis client was "
		    "closed: it is left open", bt->name);
}

static void
redis_free(redis_t *r)
{
	while (r->oldest != NULL)
		unlink_free(r, r->oldest);
	if (r->pol != NULL)
		r->pol_ops->free(r->pol);
	bc_htab_fini(&r->table);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int
bc_tier_redis_open(const bc_tier_opts_t *o, const bc_tier_redis_opts_t *ro,
    bc_tier_t **out, char *err, size_t errlen)
{
	redis_t *r;
	sync_t   s = { .fn = open_client, .ro = ro, .err = err,
	    .errlen = errlen };
	int      rv;

	if (o == NULL || ro == NULL || out == NULL || o->loop == NULL ||
	    ro->nseeds == 0 || ro->chunk_size == 0 ||
	    ro->chunk_size > BC_REDIS_KEY_UNIT_MAX) {
		bc_errf(err, errlen, "redis tier: %s", o == NULL ||
		    o->loop == NULL ? "no loop" : ro == NULL ||
		    ro->nseeds == 0 ? "no Redis address" :
		    "chunk size out of range");
		return BC_EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return BC_ENOMEM;
	bc_tier_init(&r->base, &bc_tier_redis, o->name, r);
	pthread_mutex_init(&r->lock, NULL);
	r->loop = o->loop;
	r->unit = ro->chunk_size;
	r->ttl_ms = ro->ttl_ms > 0 ? ro->ttl_ms : 24ull * 3600 * 1000;
	snprintf(r->px, sizeof(r->px), "%" PRIu64, r->ttl_ms);
	r->set_tail_len = (size_t)snprintf(r->set_tail, sizeof(r->set_tail),
	    "\r\n$2\r\nPX\r\n$%zu\r\n%s\r\n", strlen(r->px), r->px);
	r->capacity = o->capacity;
	r->size_auto = ro->size_from_server;
	atomic_store(&r->size_source, ro->size_from_server ?
	    BC_TIER_REDIS_SIZE_ASKING : BC_TIER_REDIS_SIZE_GIVEN);
	r->put_pending_max = BC_TIER_REDIS_PUT_PENDING_MIN > 8 * r->unit ?
	    BC_TIER_REDIS_PUT_PENDING_MIN : 8 * r->unit;
	rv = bc_htab_init(&r->table, 1024, false);
	r->pol_ops = o->policy != NULL ? o->policy : &bc_policy_lru;
	r->pol = r->pol_ops->new(&(bc_policy_opts_t){ .capacity =
	    o->capacity, .oracle = o->oracle });
	if (rv < 0 || r->pol == NULL) {
		redis_free(r);
		return BC_ENOMEM;
	}
	s.r = r;
	rv = on_loop(&s);
	if (rv == 0)
		rv = s.rv;
	if (rv < 0) {
		redis_free(r);
		return rv;
	}
	*out = &r->base;
	return 0;
}

void
bc_tier_redis_counters(bc_tier_t *bt, bc_tier_redis_counters_t *out)
{
	redis_t *r = redis_of(bt);

	pthread_mutex_lock(&r->lock);
	out->chunks = r->n;
	pthread_mutex_unlock(&r->lock);
	out->mode = atomic_load(&r->mode);
	out->size_source = atomic_load(&r->size_source);
	out->maxmemory = atomic_load(&r->maxmemory);
	out->conn = &r->conn_stats;
	out->cluster = &r->cluster_stats;
}

static int
redis_open_plain(const bc_tier_opts_t *o, bc_tier_t **out)
{
	(void)o;
	(void)out;
	return BC_EINVAL;
}

static void
redis_close(bc_tier_t *bt)
{
	if (bt == NULL)
		return;
	bc_tier_redis_stop(bt);
	redis_free(redis_of(bt));
}

const bc_tier_ops_t bc_tier_redis = {
	.name = "redis",
	.flags = 0,
	.open = redis_open_plain,
	.get = redis_get,
	.put = redis_put,
	.del = redis_del,
	.del_object = redis_del_object,
	.capacity = redis_capacity,
	.set_capacity = redis_set_capacity,
	.usage = redis_usage,
	.evictions = redis_evictions,
	.health = redis_health,
	.meta_put = redis_meta_put,
	.meta_get = redis_meta_get,
	.close = redis_close,
	.has = redis_has,
};
