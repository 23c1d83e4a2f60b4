/*
 * http_object.c — bc_handler_object: GET and HEAD Object served through
 * the cache (cache.h), as a state machine.
 *
 * A request is in one state (objreq_t.state), named in one enum from one
 * table (http_object_steps.h; varnish's REQ_STEPS in cache_req_fsm.c is
 * the model). Each state but the END ones has a step function that does
 * its work and returns the next state; drive() runs steps until a
 * request suspends (a WAIT state: the step that entered it called
 * bc_http_wait) or ends (END). The access handler's finish runs drive(),
 * and so does a resume: MHD calls finish again, and the WAIT state's step
 * takes the wake's outcome. The transitions:
 *
 *   META        metadata known and fresh → COND; a fetch under way →
 *               WAIT_META; the object changed → RESTART; failed → ERROR
 *   WAIT_META   woken → META (RESTART, SENT: the upstream's refusal
 *               passed on as it came, ERROR: the fill failed)
 *   RESTART     the object is looked up afresh (a request that has sent
 *               nothing restarts at most MAX_RESTARTS times) → META, or
 *               ERROR (503)
 *   COND        conditionals → SENT (304) or ERROR (412); Range past the
 *               end → SENT (416); an empty object or a HEAD → DELIVER
 *               (hit when the metadata was cached); else LOOKUP
 *   LOOKUP      one call asks the cache how the range goes out
 *               (bc_cache_read, cache_read.h): every chunk in memory →
 *               DELIVER a zero-copy buffer or iovec holding chunk
 *               references (hit); a disk tier's file → DELIVER it by
 *               sendfile, MHD's fd response (hit); a wait for that file
 *               or for the one chunk memory lacks (its fill asks the
 *               lower tiers before the origin) → WAIT_LOOKUP; else
 *               STREAM (hit, partial or miss by the chunks it had)
 *   WAIT_LOOKUP woken → LOOKUP (RESTART, SENT, ERROR as WAIT_META)
 *   STREAM      a streaming response whose reader takes the chunks in
 *               order, a filling chunk as its bytes arrive → DELIVER
 *   DELIVER     object headers, Content-Range, x-bucketcache, the hit
 *               counters; the answer queued → DELIVERED
 *   DELIVERED   END: the reader (obj_reader) runs here. It waits on
 *               single-flight fills for missing chunks and on a filling
 *               chunk's bytes (READ_WAIT: a resume comes back through
 *               drive() → DELIVERED, or CUT), reads `readahead` chunks
 *               ahead, and holds one chunk at a time: memory per slow
 *               client stays bounded. Memory full of chunks that
 *               responses hold → PASS: the rest from the upstream,
 *               uncached. An object that changed after bytes went out is
 *               cut off (CUT), never stitched.
 *   SENT, ERROR END: answered without the object, or not answered (the
 *               server sends q->err).
 *
 * A request that reached DELIVERED (or READ_WAIT, PASS, CUT) is told, at
 * its end, as one read event (read_event_t) to the job's stats, scale
 * and the prefetcher (read_event_emit).
 * An unsigned request (the upstream decides, http_server.c) is served
 * only an object the upstream let an unsigned fetch read; the cache
 * checks that first and passes a refusal on as it came (cache.h).
 * Threads: one MHD worker at a time runs a request's steps and reader;
 * a waiter's wake (bc_http_resume_cb) only resumes the connection.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/cache_math.h"
#include "cache/cache_read.h"
#include "cache/cache_window.h"
#include "http/http_object.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch_jobs.h"
#include "s3/s3_cond.h"
#include "s3/s3_hints.h"
#include "s3/s3_range.h"
#include "scale/scale.h"
#include "stats/stats.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"


/* The error for a fill that failed to start or to finish: the origin's
 * credentials having expired (no request was sent) says so; anything
 * else is the gateway failing to reach the upstream. */
static bc_s3err_t
fill_failed(bc_http_req_t *r)
{
	return bc_origin_ready(r->srv->origin) == BC_EKEYEXPIRED ?
	    BC_S3E_UpstreamCredentialsExpired : BC_S3E_BadGateway;
}

#define MAX_RESTARTS   3
#define MAX_IOV_CHUNKS 1024   /* a zero-copy answer's, at most */
/* MHD's buffer for a streamed (callback) response: allocated per
 * response, so it stays under malloc's mmap threshold (64 KiB, main.c);
 * a 256 KiB block cost an mmap, page faults and a munmap per cold GET. */
#define READER_BLOCK   (48 * 1024)
/* Keys of a plan handed to the prefetcher per GET, at most (copied out
 * of the plan on the heap, at most once a prefetch tick per job): the
 * keys due behind the cursor of a loader with many workers and the window
 * ahead. */

typedef enum hit_e { HIT, MISS, PARTIAL } hit_t;

static const char *const hit_names[] = { "hit", "miss", "partial" };

/* Where the metadata came from, when a wait was needed (a fact for
 * x-bucketcache, not a state): a wait for it went to the origin unless a
 * lower tier answered one. */
typedef enum meta_from_e { META_CACHE, META_ORIGIN, META_TIER } meta_from_t;

typedef struct objreq_s {
	bc_objreq_state_t state;     /* http_object_steps.h */
	bc_s3err_t       err;        /* what finish returns: ERROR's, or
				      InternalError when queuing failed */
	bc_cache_t      *c;
	bc_object_t     *o;
	bc_waiter_t      w;
	bool             head;
	bool             has_range;
	bc_range_spec_t  spec;
	uint32_t         hint;
	int              restarts;
	bool             meta_cached;  /* no upstream request was needed */
	meta_from_t      meta_from;
	bc_objmeta_t     meta;       /* zeroed until META fills it */
	bc_range_t       range;      /* resolved; empty object: unused */
	bc_read_t        rd;         /* the cache's read of range */
	/* the answer DELIVER queues (a step that sets resp goes there) */
	struct MHD_Response *resp;
	unsigned         status;     /* 200 or 206 */
	uint64_t         len;        /* bytes of the answer */
	bc_chunk_t      *cur;        /* streaming: the chunk being sent */
	bc_read_window_t win;        /* streaming: chunks to fetch ahead */
	bool             cur_waited; /* the chunk entered next was waited for */
	bc_read_from_t   cur_from;   /* where cur came from */
	bc_exchange_t   *pass;       /* PASS: the rest, uncached */
	bool             pass_ok;    /* its answer is the bytes asked for */
	/* the job it is for (hint, access key or "anonymous") and what it
	 * cost: per-job stats (the prefetcher's rate too), at done */
	char             job[BC_S3_HINT_JOB_MAX + 1];
	bc_stats_job_id_t job_id;    /* its stats, once read-ahead needs it */
	bc_scale_t      *scale;      /* told its waits and its read; NULL */
	hit_t            hit;
	uint64_t         wait_t0;    /* monotonic: a wait began; 0: none */
	uint64_t         wait_ns;    /* waited for fills, in all */
} objreq_t;

typedef bc_objreq_state_t (*step_fn)(bc_http_req_t *r, objreq_t *q);

static void drive(bc_http_req_t *r, objreq_t *q);


/* The version r reads: its versionId, or NULL for the current version
 * (bc_object_cacheable let only one in). */
static const char *
read_version(const bc_http_req_t *r)
{
	return bc_kv_get_exact(&r->s3.query, "versionId");
}

/*
 * Whether r's versionId, if any, names a version the cache may keep as an
 * entry of its own (cache.h "Versions"): an immutable one. That is one
 * versionId, not empty, not "null" (the null version is what an
 * unversioned or suspended bucket overwrites in place), from an S3
 * origin (the file origin has no versions: it ignores a versionId and
 * answers the current file).
 */
static bool
version_cacheable(const bc_http_req_t *r)
{
	const char *v = NULL;
	int n = 0;

	for (size_t i = 0; i < r->s3.query.n; i++)
		if (strcmp(r->s3.query.v[i].name, "versionId") == 0) {
			v = r->s3.query.v[i].value;
			n++;
		}
	return n == 0 || (n == 1 && v[0] != '\0' && strcmp(v, "null") != 0 &&
	    !r->srv->cfg->upstream_is_file);
}

bool
bc_object_cacheable(const bc_http_req_t *r)
{
	static const char *const bypass_headers[] = {
		"x-amz-server-side-encryption-customer-algorithm",
		"x-amz-checksum-mode", "x-amz-request-payer",
		"x-amz-expected-bucket-owner", NULL
	};

	if (r->srv->cache == NULL || (r->s3.op != BC_S3OP_GetObject &&
	    r->s3.op != BC_S3OP_HeadObject) || !version_cacheable(r))
		return false;
	for (size_t i = 0; i < r->s3.query.n; i++) {
		const char *n = r->s3.query.v[i].name;

		if (strcmp(n, "partNumber") == 0 ||
		    strncmp(n, "response-", 9) == 0)
			return false;
	}
	for (int i = 0; bypass_headers[i] != NULL; i++)
		if (bc_kv_get(&r->s3.headers, bypass_headers[i]) != NULL)
			return false;
	return true;
}

static void
wait_begin(objreq_t *q)
{
	if (q->wait_t0 == 0) {
		q->wait_t0 = bc_mono_ns();
		bc_scale_wait(q->scale, q->job, true);
	}
}

static void
wait_end(objreq_t *q)
{
	if (q->wait_t0 != 0) {
		q->wait_ns += bc_mono_ns() - q->wait_t0;
		bc_scale_wait(q->scale, q->job, false);
	}
	q->wait_t0 = 0;
}

/* Whether r's client key may read bucket/key (all for an unsigned
 * client: the gateway's or the origin's rules apply to it). A client
 * never makes the gateway fetch what it could not read itself. */
static bool
in_grant(void *arg, const char *bucket, const char *key)
{
	const bc_http_req_t *r = arg;

	return r->client_key == NULL ||
	    bc_config_key_allows(r->client_key, bucket, key);
}

/* The keys the prefetcher should bring for q's job, which just read
 * r's key: planned (the read counted toward a job of the registry), the
 * job's plan window (bc_prefetch_feed_plan), else (no plan, or its window
 * holds none of r's bucket's keys) the -next hint's; only those within
 * r's grant. The plan wins over a hint: a job has one list, and its
 * window orders every worker's stretch by when each key is due, where a
 * hint names one worker's next keys and, read by read, would swap the
 * list between the workers (docs/decisions.md). */
static void
feed_prefetcher(bc_http_req_t *r, objreq_t *q, bc_s3_hints_t *h,
    bool planned)
{
	bc_prefetch_t *pf = r->srv->prefetch;
	size_t k = 0;

	if (pf == NULL)
		return;
	if (planned) {
		if (!bc_prefetch_want_due(pf, q->job))
			return;   /* fed within this tick */
		if (bc_prefetch_feed_plan(pf, r->srv->jobs, q->job,
		    r->s3.bucket, 0, in_grant, r, r->upstream_unsigned) > 0)
			return;
	}
	if (h->n_next > 0) {
		for (size_t i = 0; i < h->n_next; i++)
			if (in_grant(r, r->s3.bucket, h->next[i]))
				h->next[k++] = h->next[i];
			else
				free(h->next[i]);
		h->n_next = k;
		if (k > 0)
			bc_prefetch_want(pf, q->job, r->s3.bucket,
			    (const char *const *)h->next, k, 0,
			    r->upstream_unsigned);
	}
}

/* Names q's job (the hinted job, else the access key, else
 * "anonymous"); a GET moves its cursor (prefetch_jobs.h) and feeds the
 * prefetcher. Malformed hints are counted; a hinted job that is another
 * key's (prefetch_jobs.h "Owners") is not used, and counted. */
static void
job_hints(bc_http_req_t *r, objreq_t *q)
{
	const char *who = r->client_key != NULL ? r->auth.access_key : NULL;
	bc_s3_hints_t h;

	bc_s3_hints_init(&h);
	(void)bc_s3_hints_parse(&h, &r->s3.headers);
	if (h.job[0] != '\0' && r->srv->jobs != NULL &&
	    !bc_jobs_may_use(r->srv->jobs, h.job, who)) {
		BC_STATS_INC(hints_refused);
		h.job[0] = '\0';
	}
	snprintf(q->job, sizeof(q->job), "%s", h.job[0] != '\0' ? h.job :
	    r->auth.kind != BC_S3AUTH_NONE ? r->auth.access_key :
	    "anonymous");
	if (strcmp(r->s3.method, "GET") == 0) {
		bool planned = r->srv->jobs != NULL &&
		    bc_jobs_record(r->srv->jobs, q->job, who, r->s3.bucket,
		    r->s3.key, h.has_epoch ? &h.epoch : NULL);

		feed_prefetcher(r, q, &h, planned);
	}
	if (h.malformed > 0)
		BC_STATS_ADD(hints_malformed, h.malformed);
	bc_s3_hints_fini(&h);
}

static bc_s3err_t
obj_start(bc_http_req_t *r)
{
	objreq_t *q = calloc(1, sizeof(*q));
	const char *range = bc_kv_get(&r->s3.headers, "Range");
	uint64_t cs = r->srv->cfg->chunk_size;

	if (q == NULL)
		return BC_S3E_InternalError;
	r->hdata = q;
	q->state = BC_OBJREQ_META;
	bc_cache_read_init(&q->rd, r->srv->cache, NULL, &q->w,
	    MAX_IOV_CHUNKS);
	job_hints(r, q);
	q->c = r->srv->cache;
	q->scale = r->srv->scale;
	bc_waiter_init(&q->w, bc_http_resume_cb, r);
	q->w.partial_ok = true;   /* stream chunks as they arrive */
	bc_read_window_init(&q->win, r->srv->cfg->readahead,
	    r->srv->cfg->readahead_max);
	/* unsigned: served only what the upstream lets unsigned requests
	 * read (cache.h) */
	q->w.anon = r->upstream_unsigned;
	q->head = strcmp(r->s3.method, "HEAD") == 0;
	q->has_range = range != NULL && bc_range_parse_spec(range, &q->spec);
	q->hint = q->head ? BC_CACHE_META_ONLY :
	    bc_chunk_first_guess(&q->spec, q->has_range, cs);
	q->o = bc_cache_object_version(q->c, r->s3.bucket, r->s3.key,
	    read_version(r));
	if (q->o == NULL)
		return BC_S3E_InternalError;
	q->rd.o = q->o;
	return BC_S3E_NONE;
}

/*
 * The outcome of the wait q->state names, once woken: the state to go to,
 * `on` when the wait brought what it waited for (a chunk, a file, or a
 * "look again"). Still pending: suspends again and stays. RESTART when
 * the object changed; SENT after passing the upstream's error on as it
 * came; ERROR (q->err) when the fill failed.
 */
static bc_objreq_state_t
woken(bc_http_req_t *r, objreq_t *q, bc_objreq_state_t on)
{
	bc_wait_result_t res = bc_waiter_result(q->c, &q->w);

	if (res == BC_WAIT_PENDING) {
		bc_http_wait(r);
		return q->state;
	}
	wait_end(q);
	switch (res) {
	case BC_WAIT_CHUNK:
	case BC_WAIT_FILE:   /* LOOKUP sends a file a file ask brought */
		bc_cache_read_take(&q->rd, res);
		break;
	case BC_WAIT_UPSTREAM: {
		/* pass the upstream's error on as it came */
		bc_buf_t body = q->w.up_body;
		unsigned status = (unsigned)q->w.up_status;

		bc_buf_init(&q->w.up_body, 0);
		if (bc_http_respond_buf(r, status, body.len > 0 ?
		    "application/xml" : NULL, &body) < 0)
			q->err = BC_S3E_InternalError;
		bc_buf_fini(&body);
		return BC_OBJREQ_SENT;
	}
	case BC_WAIT_FAILED:
		q->err = q->w.err == BC_ETIMEDOUT ? BC_S3E_GatewayTimeout :
		    fill_failed(r);
		return BC_OBJREQ_ERROR;
	case BC_WAIT_RECHECK:
		/* a lower tier may have answered the metadata's wait */
		if (q->state == BC_OBJREQ_WAIT_META && q->w.tier_hit)
			q->meta_from = META_TIER;
		break;
	case BC_WAIT_RESTART:
		on = BC_OBJREQ_RESTART;
		break;
	case BC_WAIT_PENDING:
		break;
	}
	bc_waiter_reset(&q->w);
	return on;
}

/* Suspends q on its waiter, in the WAIT state wait. */
static bc_objreq_state_t
suspend(bc_http_req_t *r, objreq_t *q, bc_objreq_state_t wait)
{
	wait_begin(q);
	bc_http_wait(r);
	return wait;
}

/* WAIT_META, WAIT_LOOKUP: the wake's outcome, on to `on`. */
#define WAIT_STEP(l, on)                                                \
	static bc_objreq_state_t                                        \
	step_##l(bc_http_req_t *r, objreq_t *q)                         \
	{                                                               \
		return woken(r, q, BC_OBJREQ_##on);                     \
	}
WAIT_STEP(wait_meta, META)
WAIT_STEP(wait_lookup, LOOKUP)
#undef WAIT_STEP

/* RESTART: looks the object up afresh (it changed or was invalidated). */
static bc_objreq_state_t
step_restart(bc_http_req_t *r, objreq_t *q)
{
	if (++q->restarts > MAX_RESTARTS) {
		q->err = BC_S3E_ServiceUnavailable;
		return BC_OBJREQ_ERROR;
	}
	bc_objmeta_fini(&q->meta);
	bc_object_unref(q->c, q->o);
	q->o = bc_cache_object_version(q->c, r->s3.bucket, r->s3.key,
	    read_version(r));
	bc_cache_read_restart(&q->rd, q->o);
	if (q->o == NULL) {
		q->err = BC_S3E_InternalError;
		return BC_OBJREQ_ERROR;
	}
	return BC_OBJREQ_META;
}

static void
add_meta_headers(struct MHD_Response *resp, const objreq_t *q)
{
	const bc_kvlist_t *h = &q->meta.headers;

	for (size_t i = 0; i < h->n; i++)
		bc_http_add_header(resp, h->v[i].name, h->v[i].value);
	MHD_add_response_header(resp, "Accept-Ranges", "bytes");
}

static void
free_held(void *cls)
{
	bc_cache_read_held_free(cls);
}

static void
free_chunk(void *cls)
{
	bc_chunk_unref(cls);
}

/* The rest of the response (from off) straight from the upstream: every
 * chunk it needs would go past the memory bound, which chunks still held
 * by responses fill (see cache.h, BC_ENOSPC). */
static ssize_t
pass_read(bc_http_req_t *r, objreq_t *q, uint64_t off, char *buf,
    size_t max)
{
	const bc_kvlist_t *h;
	const char *etag;
	ssize_t n;
	int status, rv;

	if (q->pass == NULL) {
		q->pass = bc_cache_passthrough(q->c, q->o, q->meta.etag, off,
		    q->range.last, q->w.anon, bc_http_resume_cb, r);
		if (q->pass == NULL)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (!q->pass_ok) {
		rv = bc_exchange_headers(q->pass, &status, &h);
		if (rv == BC_EAGAIN) {
			bc_http_wait(r);
			return 0;
		}
		etag = rv == 0 ? bc_kv_get(h, "ETag") : NULL;
		if (rv < 0 || !(status == 206 || (status == 200 && off == 0 &&
		    q->range.last + 1 == q->meta.size)) || etag == NULL ||
		    strcmp(etag, q->meta.etag) != 0) {
			BC_WARN("%s/%s: uncached read from byte %" PRIu64
			    " failed (%s, status %d); cutting the response "
			    "off", r->s3.bucket, r->s3.key, off,
			    rv < 0 ? bc_strerror(rv) : "answered", rv < 0 ?
			    0 : status);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		q->pass_ok = true;
	}
	n = bc_exchange_read(q->pass, buf, max);
	if (n == BC_EAGAIN) {
		bc_http_wait(r);
		return 0;
	}
	if (n <= 0)   /* MHD stops asking at the response's length */
		return MHD_CONTENT_READER_END_WITH_ERROR;
	BC_STATS_ADD(cache_bytes_upstream, n);
	bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_bytes_upstream,
	    (uint64_t)n);
	return n;
}

static ssize_t
obj_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	bc_http_req_t *r = cls;
	objreq_t *q = r->hdata;
	uint64_t cs = r->srv->cfg->chunk_size;
	uint64_t off = q->range.first + pos, in_chunk;
	uint32_t i = bc_chunk_of(off, cs);
	size_t n;
	int rv;

	if (q->state == BC_OBJREQ_PASS)
		return pass_read(r, q, off, buf, max);
	if (q->state == BC_OBJREQ_READ_WAIT) {   /* resumed */
		drive(r, q);
		if (q->state == BC_OBJREQ_READ_WAIT)
			return 0;
		if (q->state != BC_OBJREQ_DELIVERED)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (q->cur == NULL || q->cur->index != i) {
		bc_chunk_unref(q->cur);
		q->cur = NULL;
		rv = bc_cache_read_chunk(&q->rd, i, &q->cur, &q->cur_from);
		if (rv == BC_EAGAIN) {
			q->cur_waited = true;
			q->state = suspend(r, q, BC_OBJREQ_READ_WAIT);
			return 0;
		}
		if (rv == BC_ENOSPC) {
			q->state = BC_OBJREQ_PASS;
			return pass_read(r, q, off, buf, max);
		}
		if (rv < 0) {
			BC_WARN("%s/%s: chunk %u: %s; cutting the response "
			    "off", r->s3.bucket, r->s3.key, i,
			    bc_strerror(rv));
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (i < q->rd.c1 && q->job_id == BC_STATS_JOB_NONE)
			q->job_id = bc_stats_job_id(q->job);
		bc_cache_read_ahead(q->c, q->o, q->meta.etag, i, q->rd.c1,
		    bc_read_window_step(&q->win, i, q->cur_waited ||
		    bc_chunk_state(q->cur) != BC_CHUNK_COMPLETE), q->w.anon,
		    q->job_id);
		q->cur_waited = false;
	}
	in_chunk = off - bc_chunk_start(i, cs);
	n = bc_chunk_avail(q->cur);
	if (n <= in_chunk) {   /* a chunk still filling: wait for more */
		ssize_t got = bc_cache_chunk_wait(q->c, q->cur, in_chunk,
		    &q->w);

		if (got == 0) {
			unsigned more = bc_read_window_stall(&q->win, i,
			    in_chunk);

			if (more > 0)
				bc_cache_read_ahead(q->c, q->o, q->meta.etag,
				    i, q->rd.c1, more, q->w.anon, q->job_id);
			q->state = suspend(r, q, BC_OBJREQ_READ_WAIT);
			return 0;
		}
		if (got < 0 || (size_t)got <= in_chunk) {
			BC_WARN("%s/%s: chunk %u failed while streaming; "
			    "cutting the response off", r->s3.bucket,
			    r->s3.key, i);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		n = (size_t)got;
	}
	n -= in_chunk;
	if (n > max)
		n = max;
	if (n > q->range.last - off + 1)
		n = (size_t)(q->range.last - off + 1);
	memcpy(buf, q->cur->data + in_chunk, n);
	if (q->cur_from == BC_FROM_TIER) {
		BC_STATS_ADD(cache_bytes_disk, n);
	} else if (q->cur_from == BC_FROM_UPSTREAM) {
		BC_STATS_ADD(cache_bytes_upstream, n);
		bc_stats_bucket_add(r->s3.bucket,
		    BC_BSTAT_cache_bytes_upstream, n);
	} else {
		BC_STATS_ADD(cache_bytes_memory, n);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_bytes_memory,
		    n);
	}
	return (ssize_t)n;
}

/* The zero-copy response of h (every chunk of the range, in memory; it
 * takes h), or NULL (h freed). */
static struct MHD_Response *
mem_response(bc_http_req_t *r, objreq_t *q, bc_read_held_t *h)
{
	uint64_t cs = r->srv->cfg->chunk_size;
	uint32_t c0 = q->rd.c0;
	struct MHD_Response *resp = NULL;
	struct MHD_IoVec *iov;

	if (h->n == 1) {
		bc_chunk_t *ch = h->v[0];

		resp = MHD_create_response_from_buffer_with_free_callback_cls(
		    (size_t)bc_range_length(&q->range),
		    ch->data + (q->range.first - bc_chunk_start(c0, cs)),
		    free_chunk, ch);
		if (resp != NULL) {
			free(h);   /* the response owns the reference now */
			return resp;
		}
		bc_cache_read_held_free(h);
		return NULL;
	}
	iov = calloc(h->n, sizeof(*iov));
	if (iov == NULL) {
		bc_cache_read_held_free(h);
		return NULL;
	}
	for (size_t k = 0; k < h->n; k++) {
		bc_chunk_t *ch = h->v[k];
		uint64_t start = bc_chunk_start(c0 + (uint32_t)k, cs);
		uint64_t from = q->range.first > start ?
		    q->range.first - start : 0;
		uint64_t to = q->range.last < start + ch->len - 1 ?
		    q->range.last - start : ch->len - 1;

		iov[k].iov_base = ch->data + from;
		iov[k].iov_len = (size_t)(to - from + 1);
	}
	resp = MHD_create_response_from_iovec(iov, (unsigned int)h->n,
	    free_held, h);
	free(iov);
	if (resp == NULL)
		bc_cache_read_held_free(h);
	return resp;
}

/* S3's answer to a Range that starts past the end: 416 with its XML error
 * (InvalidRange) and Content-Range: bytes * /SIZE. The body's length is
 * read before the buffer is taken from it: one call doing both (argument
 * order is unspecified) once sent the 416 without a body. */
static bc_s3err_t
respond_416(bc_http_req_t *r, const objreq_t *q)
{
	bc_buf_t body = BC_BUF_INIT;
	struct MHD_Response *resp;
	char cr[96];
	size_t len;
	char *p;

	if (bc_s3err_xml(&body, BC_S3E_InvalidRange, NULL, r->s3.path,
	    r->s3.request_id) < 0) {
		bc_buf_fini(&body);
		return BC_S3E_InternalError;
	}
	len = body.len;
	p = bc_buf_steal(&body);
	if (p == NULL)
		return BC_S3E_InternalError;
	resp = MHD_create_response_from_buffer(len, p, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(p);
		return BC_S3E_InternalError;
	}
	bc_range_content_range(cr, sizeof(cr), NULL, q->meta.size);
	MHD_add_response_header(resp, "Content-Range", cr);
	MHD_add_response_header(resp, "Content-Type", "application/xml");
	r->bytes_out = q->head ? 0 : len;
	return bc_http_respond(r, 416, resp) < 0 ? BC_S3E_InternalError :
	    BC_S3E_NONE;
}

/* An fd response of q's range from the disk tier's file the read holds,
 * at `from` past the chunk's start in it (MHD takes the descriptor), or
 * NULL. The file is never written in place (the disk tier renames new
 * files over old ones), so its bytes are the ones the tier checked. */
static struct MHD_Response *
fd_range(objreq_t *q, uint64_t from)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_fd_at_offset64(
	    bc_range_length(&q->range), q->rd.fd, q->rd.fd_off + from);
	if (resp != NULL)
		q->rd.fd = -1;
	return resp;
}

/* META: makes sure the metadata is known and fresh (bc_cache_meta). */
static bc_objreq_state_t
step_meta(bc_http_req_t *r, objreq_t *q)
{
	int rv = bc_cache_meta(q->c, q->o, q->hint, &q->w, &q->meta,
	    &q->meta_cached);

	if (rv == 0) {
		if (q->meta_from == META_ORIGIN)
			q->meta_cached = false;
		return BC_OBJREQ_COND;
	}
	if (rv == BC_EAGAIN) {
		if (q->meta_from == META_CACHE)
			q->meta_from = META_ORIGIN;
		return suspend(r, q, BC_OBJREQ_WAIT_META);
	}
	if (rv == BC_ECANCELED)
		return BC_OBJREQ_RESTART;
	q->err = fill_failed(r);
	return BC_OBJREQ_ERROR;
}

/* COND: conditionals and Range, then the answers that need no chunk. */
static bc_objreq_state_t
step_cond(bc_http_req_t *r, objreq_t *q)
{
	struct MHD_Response *resp;
	bc_cond_t cond;
	bc_s3err_t e;

	bc_cond_from_headers(&cond, &r->s3.headers);
	e = bc_cond_eval(&cond, BC_COND_READ, q->meta.etag,
	    q->meta.last_modified);
	if (e == BC_S3E_NotModified) {
		resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
		if (resp == NULL) {
			q->err = BC_S3E_InternalError;
			return BC_OBJREQ_ERROR;
		}
		MHD_add_response_header(resp, "ETag", q->meta.etag);
		if (bc_kv_get(&q->meta.headers, "Last-Modified") != NULL)
			MHD_add_response_header(resp, "Last-Modified",
			    bc_kv_get(&q->meta.headers, "Last-Modified"));
		if (bc_http_respond(r, 304, resp) < 0)
			q->err = BC_S3E_InternalError;
		return BC_OBJREQ_SENT;
	}
	if (e != BC_S3E_NONE) {
		q->err = e;
		return BC_OBJREQ_ERROR;
	}

	q->status = 200;
	q->len = q->meta.size;
	q->range.first = 0;
	q->range.last = q->meta.size > 0 ? q->meta.size - 1 : 0;
	if (q->has_range) {
		bc_range_result_t rr = bc_range_resolve(&q->spec, q->meta.size,
		    &q->range);

		if (rr == BC_RANGE_UNSATISFIABLE) {
			q->err = respond_416(r, q);
			return BC_OBJREQ_SENT;
		}
		if (rr == BC_RANGE_OK) {
			q->status = 206;
			q->len = bc_range_length(&q->range);
		}
	}

	if (q->meta.size == 0) {
		q->hit = q->meta_cached ? HIT : MISS;
		q->resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
		return BC_OBJREQ_DELIVER;
	}
	/* before any answer that has obj_reader: it reads through rd */
	bc_cache_read_span(&q->rd, q->meta.etag, q->meta.size, &q->range);
	if (q->head) {
		q->hit = q->meta_cached ? HIT : MISS;
		/* MHD sends a HEAD response's size and never reads it */
		q->resp = MHD_create_response_from_callback(q->len,
		    READER_BLOCK, obj_reader, r, NULL);
		return BC_OBJREQ_DELIVER;
	}
	return BC_OBJREQ_LOOKUP;
}

/*
 * LOOKUP: asks the cache how the range goes out (bc_cache_read): every
 * chunk in memory, a zero-copy answer (a hit); a disk tier's file, sent
 * with sendfile (a hit); a wait for the file or for the one chunk's fill
 * (WAIT_LOOKUP, then asked again); or a stream, a hit, partial or miss by
 * the chunks the cache had.
 */
static bc_objreq_state_t
step_lookup(bc_http_req_t *r, objreq_t *q)
{
	bc_read_t *rd = &q->rd;
	uint32_t n = rd->c1 - rd->c0 + 1;

	switch (bc_cache_read(rd)) {
	case BC_READ_MEM:
		q->resp = mem_response(r, q, rd->held);
		rd->held = NULL;
		if (q->resp == NULL)
			break;
		q->hit = HIT;
		BC_STATS_ADD(cache_bytes_memory, q->len);
		bc_stats_bucket_add(r->s3.bucket,
		    BC_BSTAT_cache_bytes_memory, q->len);
		return BC_OBJREQ_DELIVER;
	case BC_READ_FILE:
		q->resp = fd_range(q, rd->from);
		if (q->resp == NULL)
			break;
		q->hit = HIT;
		BC_STATS_INC(cache_disk_sendfile);
		BC_STATS_ADD(cache_bytes_disk, q->len);
		return BC_OBJREQ_DELIVER;
	case BC_READ_WAIT:
		return suspend(r, q, BC_OBJREQ_WAIT_LOOKUP);
	case BC_READ_STREAM:
		break;
	}
	q->hit = rd->present == n ? HIT : rd->present > 0 ? PARTIAL : MISS;
	return BC_OBJREQ_STREAM;
}

/* STREAM: the reader takes the chunks in order (obj_reader). */
static bc_objreq_state_t
step_stream(bc_http_req_t *r, objreq_t *q)
{
	q->resp = MHD_create_response_from_callback(q->len, READER_BLOCK,
	    obj_reader, r, NULL);
	return BC_OBJREQ_DELIVER;
}

/* DELIVER: queues q->resp with the object's headers, and counts the hit.
 * A failure to queue it still counts as answered (its read is told). */
static bc_objreq_state_t
step_deliver(bc_http_req_t *r, objreq_t *q)
{
	struct MHD_Response *resp = q->resp;
	char cr[96];

	if (resp == NULL) {
		q->err = BC_S3E_InternalError;
		return BC_OBJREQ_ERROR;
	}
	q->resp = NULL;
	add_meta_headers(resp, q);
	if (q->status == 206) {
		bc_range_content_range(cr, sizeof(cr), &q->range,
		    q->meta.size);
		MHD_add_response_header(resp, "Content-Range", cr);
	}
	MHD_add_response_header(resp, "x-bucketcache", hit_names[q->hit]);
	if (q->hit == HIT) {
		BC_STATS_INC(cache_hits);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_hits, 1);
	} else if (q->hit == MISS) {
		BC_STATS_INC(cache_misses);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_misses, 1);
	} else {
		BC_STATS_INC(cache_partial_hits);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_partial_hits,
		    1);
	}
	r->bytes_out = q->head ? 0 : q->len;
	if (bc_http_respond(r, q->status, resp) < 0)
		q->err = BC_S3E_InternalError;
	return BC_OBJREQ_DELIVERED;
}

/* READ_WAIT: the reader's wait, resumed: it reads on (DELIVERED) or cuts
 * the answer off (CUT). */
static bc_objreq_state_t
step_read_wait(bc_http_req_t *r, objreq_t *q)
{
	bc_objreq_state_t next = woken(r, q, BC_OBJREQ_DELIVERED);

	return next == BC_OBJREQ_DELIVERED || next == BC_OBJREQ_READ_WAIT ?
	    next : BC_OBJREQ_CUT;
}

/* ---- the states: one table (http_object_steps.h) --------------------- */

#define STEP_FN_RUN(l)  step_##l
#define STEP_FN_WAIT(l) step_##l
#define STEP_FN_END(l)  NULL

static const step_fn steps[BC_OBJREQ__COUNT] = {
#define BC_OBJREQ_STEP(U, l, kind, doc) [BC_OBJREQ_##U] = STEP_FN_##kind(l),
#include "http/http_object_steps.h"
#undef BC_OBJREQ_STEP
};

static const struct {
	const char       *name;
	bc_objreq_kind_t  kind;
} states[BC_OBJREQ__COUNT] = {
#define BC_OBJREQ_STEP(U, l, kind, doc) \
	[BC_OBJREQ_##U] = { #l, BC_OBJREQ_##kind },
#include "http/http_object_steps.h"
#undef BC_OBJREQ_STEP
};

const char *
bc_objreq_state_name(bc_objreq_state_t s)
{
	return (unsigned)s < BC_OBJREQ__COUNT ? states[s].name : "?";
}

bc_objreq_kind_t
bc_objreq_state_kind(bc_objreq_state_t s)
{
	return (unsigned)s < BC_OBJREQ__COUNT ? states[s].kind :
	    BC_OBJREQ_END;
}

bool
bc_objreq_state_answered(bc_objreq_state_t s)
{
	return s == BC_OBJREQ_DELIVERED || s == BC_OBJREQ_READ_WAIT ||
	    s == BC_OBJREQ_PASS || s == BC_OBJREQ_CUT;
}

/* Runs q's steps from its state until it suspends (WAIT) or ends (END).
 * A step that returns a WAIT state has called bc_http_wait. */
static void
drive(bc_http_req_t *r, objreq_t *q)
{
	while (bc_objreq_state_kind(q->state) != BC_OBJREQ_END) {
		BC_AN(steps[q->state]);   /* a RUN or WAIT state has a step */
		q->state = steps[q->state](r, q);
		if (bc_objreq_state_kind(q->state) == BC_OBJREQ_WAIT)
			break;
	}
}

static bc_s3err_t
obj_finish(bc_http_req_t *r)
{
	objreq_t *q = r->hdata;

	drive(r, q);
	return q->err;
}

static bc_s3err_t
obj_body(bc_http_req_t *r, const char *data, size_t *len)
{
	*len = 0;   /* GET/HEAD bodies are ignored, as S3 does */
	return BC_S3E_NONE;
}

/* One object read, told once when the request ends (obj_done), to the
 * three that learn from reads. */
typedef struct read_event_s {
	const char *job;         /* the job it counts toward */
	const char *bucket, *key;
	uint64_t    conn;        /* the client connection: one reader */
	hit_t       hit;
	bool        ok;          /* the whole answer went out */
	bool        body;        /* a GET's bytes went out (not a HEAD) */
	uint64_t    bytes;       /* answer bytes sent (0 unless ok) */
	uint64_t    wait_ns;     /* waited for fills, in all */
	uint64_t    size;        /* the object's */
	uint64_t    first, last; /* the range read; first > last: none */
} read_event_t;

/* ev to the job's stats (its rate and mean object size size the job's
 * prefetch window), to scale (rates, dataset sizes; a read whose bytes
 * went out) and to the prefetcher (the key leaves its list). */
static void
read_event_emit(bc_server_t *srv, bc_scale_t *scale, const read_event_t *ev)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 };

	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = ev->bytes;
	d[ev->hit == HIT ? BC_JSTAT_cache_hits : ev->hit == MISS ?
	    BC_JSTAT_cache_misses : BC_JSTAT_cache_partial_hits] = 1;
	d[BC_JSTAT_wait_us] = ev->wait_ns / 1000;
	bc_stats_job_add(ev->job, d);
	if (ev->body && ev->ok)
		bc_scale_read(scale, ev->job, ev->conn, ev->wait_ns,
		    ev->bucket, ev->key, ev->size, ev->first, ev->last,
		    ev->bytes);
	if (srv->prefetch != NULL)
		bc_prefetch_read(srv->prefetch, ev->job, ev->bucket, ev->key);
}

/* q's read as an event (a wait still open ends here). */
static void
read_event(bc_http_req_t *r, objreq_t *q, bool ok)
{
	read_event_t ev;

	if (q->wait_t0 != 0)
		wait_end(q);
	ev = (read_event_t){
		.job = q->job, .bucket = r->s3.bucket, .key = r->s3.key,
		.conn = (uint64_t)(uintptr_t)r->conn, .hit = q->hit,
		.ok = ok, .body = !q->head, .bytes = ok ? r->bytes_out : 0,
		.wait_ns = q->wait_ns, .size = q->meta.size,
		.first = q->meta.size > 0 ? q->range.first : 1,
		.last = q->meta.size > 0 ? q->range.last : 0,
	};
	read_event_emit(r->srv, q->scale, &ev);
}

static void
obj_done(bc_http_req_t *r, bool ok)
{
	objreq_t *q = r->hdata;

	if (q == NULL)
		return;
	if (bc_objreq_state_answered(q->state))
		read_event(r, q, ok);
	bc_waiter_fini(q->c, &q->w);
	bc_exchange_release(q->pass);
	bc_cache_read_fini(&q->rd);
	bc_chunk_unref(q->cur);
	if (q->resp != NULL)
		MHD_destroy_response(q->resp);
	bc_objmeta_fini(&q->meta);
	bc_object_unref(q->c, q->o);
	free(q);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_object = {
	.name = "object",
	.start = obj_start,
	.body = obj_body,
	.finish = obj_finish,
	.done = obj_done,
};
