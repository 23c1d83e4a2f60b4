/*
 * http_object.c — bc_handler_object: GET and HEAD Object served through
 * the cache (cache.h).
 *
 * finish() first makes sure the object's metadata is known and fresh
 * (waiting, suspended, on the fetch that learns it), then answers
 * conditionals and Range locally and picks a response:
 *   - every chunk of the range in memory: zero-copy, a buffer or iovec
 *     response holding chunk references (x-bucketcache: hit);
 *   - with lower tiers (disk), a range within one chunk that memory lacks
 *     is asked for first (suspended on its fill, which asks the lower
 *     tiers before the origin): a chunk a disk tier just read goes out
 *     from its file with sendfile (MHD's fd response, on a dup of the
 *     chunk's descriptor; hit), one the origin is bringing streams as
 *     below (miss);
 *   - otherwise a streaming response whose reader takes the chunks in
 *     order, waiting on single-flight fills for missing ones and reading
 *     `readahead` chunks ahead (x-bucketcache: miss or partial). A chunk
 *     being fetched is sent as its bytes arrive (the waiter takes filling
 *     chunks), so the first byte does not wait for a whole chunk. It
 *     holds one chunk at a time: memory per slow client stays bounded.
 * When the object changes between fetches, a request that has sent
 * nothing restarts (at most MAX_RESTARTS times); one that has sent bytes
 * is cut off, never stitched.
 * An unsigned request (the upstream decides, http_server.c) is served
 * only an object the upstream let an unsigned fetch read; the cache
 * checks that first and passes a refusal on as it came (cache.h).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/cache_math.h"
#include "cache/cache_window.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch_jobs.h"
#include "s3/s3_cond.h"
#include "s3/s3_hints.h"
#include "s3/s3_range.h"
#include "scale/scale.h"
#include "stats/stats.h"
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
#define MAX_IOV_CHUNKS 1024
/* MHD's buffer for a streamed (callback) response: allocated per
 * response, so it stays under malloc's mmap threshold (64 KiB, main.c);
 * a 256 KiB block cost an mmap, page faults and a munmap per cold GET. */
#define READER_BLOCK   (48 * 1024)
/* Keys of a plan handed to the prefetcher per GET, at most (copied out
 * of the plan on the heap, at most once a prefetch tick per job): the
 * keys due behind the cursor of a loader with many workers and the window
 * ahead. */
/* Waits for the one chunk of a range before answering, at most (a fill
 * that ends in RECHECK is asked again; past this the answer streams). */
#define MAX_CHUNK_WAITS 3

typedef enum hit_e { HIT, MISS, PARTIAL } hit_t;

static const char *const hit_names[] = { "hit", "miss", "partial" };

typedef struct objreq_s {
	bc_cache_t      *c;
	bc_object_t     *o;
	bc_waiter_t      w;
	bool             waiting;
	bool             head;
	bool             has_range;
	bc_range_spec_t  spec;
	uint32_t         hint;
	int              restarts;
	bool             have_meta;
	bool             meta_cached;  /* no upstream request was needed */
	bool             meta_waited;
	bool             meta_tier;    /* a lower tier answered that wait */
	bc_objmeta_t     meta;
	bc_range_t       range;      /* resolved; empty object: unused */
	uint32_t         c0, c1;
	bc_chunk_t      *first;      /* chunk delivered with the metadata, or
				      waited for (chunk_waits) */
	bool             first_tier; /* first came from a lower tier */
	int              first_fd;   /* the file first was read from (a
				      disk tier; owned), or -1 */
	uint64_t         first_fd_off;   /* where first starts in it */
	uint64_t         first_fd_len;   /* a file hit: the chunk's bytes */
	/* the chunk asked for as a disk file (bc_cache_chunk_file): not
	 * yet, waiting, or done (file_hit: first_fd is that file) */
	enum { FILE_UNTRIED, FILE_PENDING, FILE_DONE } file_state;
	bool             file_hit;
	bool             first_mem;  /* first was in memory (or filling for
				      another request) */
	unsigned         chunk_waits;
	bc_chunk_t      *cur;        /* streaming: the chunk being sent */
	bc_read_window_t win;        /* streaming: chunks to fetch ahead */
	bool             cur_waited; /* the chunk entered next was waited for */
	bool             cur_fetched;
	bool             cur_tier;   /* cur came from a lower tier */
	bc_exchange_t   *pass;       /* the rest, uncached (memory full) */
	bool             pass_ok;    /* its answer is the bytes asked for */
	/* the job it is for (hint, access key or "anonymous") and what it
	 * cost: per-job stats (the prefetcher's rate too), at done */
	char             job[BC_S3_HINT_JOB_MAX + 1];
	bc_stats_job_id_t job_id;    /* its stats, once read-ahead needs it */
	bc_scale_t      *scale;      /* told its waits and its read; NULL */
	hit_t            hit;
	bool             answered;
	uint64_t         wait_t0;    /* monotonic: a wait began; 0: none */
	uint64_t         wait_ns;    /* waited for fills, in all */
} objreq_t;

typedef struct held_s {          /* zero-copy response's references */
	size_t       n;
	bc_chunk_t  *v[];
} held_t;

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
	q->waiting = true;
	if (q->wait_t0 == 0) {
		q->wait_t0 = bc_mono_ns();
		bc_scale_wait(q->scale, q->job, true);
	}
}

static void
wait_end(objreq_t *q)
{
	q->waiting = false;
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
 * r's key: the -next hint's, else (planned: the read counted toward a
 * job of the registry) the job's plan window (bc_prefetch_feed_plan);
 * only those within r's grant. */
static void
feed_prefetcher(bc_http_req_t *r, objreq_t *q, bc_s3_hints_t *h,
    bool planned)
{
	bc_prefetch_t *pf = r->srv->prefetch;
	size_t k = 0;

	if (pf == NULL)
		return;
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
		return;
	}
	if (planned && bc_prefetch_want_due(pf, q->job))
		(void)bc_prefetch_feed_plan(pf, r->srv->jobs, q->job,
		    r->s3.bucket, 0, in_grant, r, r->upstream_unsigned);
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
	q->first_fd = -1;
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
	return BC_S3E_NONE;
}

/* Takes the waiter's outcome after a wake. Returns 1 to go on, 0 to keep
 * waiting, or -1 with *e set. */
static int
take_wake(bc_http_req_t *r, objreq_t *q, bc_s3err_t *e)
{
	bc_wait_result_t res = bc_waiter_result(q->c, &q->w);

	if (res == BC_WAIT_PENDING) {
		bc_http_wait(r);
		return 0;
	}
	wait_end(q);
	switch (res) {
	case BC_WAIT_CHUNK:
		bc_chunk_unref(q->first);
		q->first = q->w.chunk;
		q->first_tier = q->w.tier_hit;
		q->first_mem = false;
		q->w.chunk = NULL;
		if (q->first_fd >= 0)
			close(q->first_fd);
		q->first_fd = q->w.fd;   /* taken: reset would close it */
		q->first_fd_off = q->w.fd_off;
		q->w.fd = -1;
		break;
	case BC_WAIT_UPSTREAM: {
		/* pass the upstream's error on as it came */
		bc_buf_t body = q->w.up_body;
		unsigned status = (unsigned)q->w.up_status;

		bc_buf_init(&q->w.up_body, 0);
		if (bc_http_respond_buf(r, status, body.len > 0 ?
		    "application/xml" : NULL, &body) < 0)
			*e = BC_S3E_InternalError;
		bc_buf_fini(&body);
		return -1;
	}
	case BC_WAIT_FAILED:
		*e = q->w.err == BC_ETIMEDOUT ? BC_S3E_GatewayTimeout :
		    fill_failed(r);
		return -1;
	case BC_WAIT_FILE:
		if (q->first_fd >= 0)
			close(q->first_fd);
		q->first_fd = q->w.fd;   /* taken: reset would close it */
		q->first_fd_off = q->w.fd_off;
		q->first_fd_len = q->w.fd_len;
		q->w.fd = -1;
		q->file_hit = true;
		q->file_state = FILE_DONE;
		break;
	case BC_WAIT_RECHECK:
		if (q->file_state == FILE_PENDING)
			q->file_state = FILE_DONE;   /* no file: fill it */
		else if (q->w.tier_hit)
			q->meta_tier = true;
		break;
	case BC_WAIT_RESTART:
	case BC_WAIT_PENDING:
		break;
	}
	bc_waiter_reset(&q->w);
	return res == BC_WAIT_RESTART ? 2 : 1;
}

/* Looks the object up afresh (it changed or was invalidated). */
static bc_s3err_t
restart(bc_http_req_t *r, objreq_t *q)
{
	if (++q->restarts > MAX_RESTARTS)
		return BC_S3E_ServiceUnavailable;
	bc_chunk_unref(q->first);
	q->first = NULL;
	q->first_tier = q->first_mem = false;
	q->chunk_waits = 0;
	if (q->have_meta) {
		bc_objmeta_fini(&q->meta);
		q->have_meta = false;
	}
	bc_object_unref(q->c, q->o);
	q->o = bc_cache_object_version(q->c, r->s3.bucket, r->s3.key,
	    read_version(r));
	return q->o != NULL ? BC_S3E_NONE : BC_S3E_InternalError;
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
	held_t *h = cls;

	for (size_t i = 0; i < h->n; i++)
		bc_chunk_unref(h->v[i]);
	free(h);
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
	bc_s3err_t e = BC_S3E_NONE;
	size_t n;
	int rv;

	if (q->pass != NULL)
		return pass_read(r, q, off, buf, max);
	if (q->waiting) {   /* for a chunk, or for a filling chunk's bytes */
		rv = take_wake(r, q, &e);
		if (rv == 0)
			return 0;
		if (rv != 1)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (q->cur == NULL || q->cur->index != i) {
		if (q->first != NULL && q->first->index == i) {
			bc_chunk_unref(q->cur);
			q->cur = q->first;
			q->first = NULL;
			q->cur_fetched = !q->first_mem;
			q->cur_tier = q->first_tier;
		} else {
			bc_chunk_unref(q->cur);
			q->cur = NULL;
			rv = bc_cache_chunk(q->c, q->o, q->meta.etag, i, true,
			    &q->w, &q->cur);
			if (rv == BC_EAGAIN) {
				q->cur_waited = true;
				wait_begin(q);
				bc_http_wait(r);
				return 0;
			}
			if (rv == BC_ENOSPC)
				return pass_read(r, q, off, buf, max);
			if (rv < 0) {
				BC_WARN("%s/%s: chunk %u: %s; cutting the "
				    "response off", r->s3.bucket, r->s3.key,
				    i, bc_strerror(rv));
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			q->cur_fetched = false;
		}
		if (i < q->c1 && q->job_id == BC_STATS_JOB_NONE)
			q->job_id = bc_stats_job_id(q->job);
		bc_cache_read_ahead(q->c, q->o, q->meta.etag, i, q->c1,
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
				    i, q->c1, more, q->w.anon, q->job_id);
			wait_begin(q);
			bc_http_wait(r);
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
	if (q->cur_fetched && q->cur_tier) {
		BC_STATS_ADD(cache_bytes_disk, n);
	} else if (q->cur_fetched) {
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

/* Tries the zero-copy response: every chunk of the span in memory.
 * Returns the response, or NULL (nothing held) with *present counting
 * the chunks in memory or being fetched by another request (no fetch
 * of this request's own: they make a hit, not a miss). */
static struct MHD_Response *
zero_copy(bc_http_req_t *r, objreq_t *q, uint32_t *present)
{
	uint64_t cs = r->srv->cfg->chunk_size;
	uint32_t n = q->c1 - q->c0 + 1;
	struct MHD_Response *resp = NULL;
	struct MHD_IoVec *iov = NULL;
	held_t *h;

	*present = 0;
	h = malloc(sizeof(*h) + (size_t)n * sizeof(h->v[0]));
	if (h == NULL)
		return NULL;
	h->n = 0;
	for (uint32_t i = q->c0; i <= q->c1; i++) {
		bc_chunk_t *ch = NULL;

		if (q->first != NULL && q->first->index == i) {
			ch = q->first;   /* fetched for this request: not a hit */
			bc_chunk_ref(ch);
			h->v[h->n++] = ch;
			continue;
		} else {
			int rv = bc_cache_chunk(q->c, q->o, q->meta.etag, i,
			    false, NULL, &ch);

			if (rv == BC_EINPROGRESS)
				(*present)++;   /* another request fetches it */
			if (rv < 0)
				continue;
		}
		h->v[h->n++] = ch;
		(*present)++;
	}
	if (h->n != n || q->first != NULL || n > MAX_IOV_CHUNKS)
		goto out;   /* fetched now, or not all there: stream */
	if (n == 1) {
		bc_chunk_t *ch = h->v[0];

		resp = MHD_create_response_from_buffer_with_free_callback_cls(
		    (size_t)bc_range_length(&q->range),
		    ch->data + (q->range.first - bc_chunk_start(q->c0, cs)),
		    free_chunk, ch);
		if (resp != NULL) {
			h->n = 0;   /* the response owns the reference now */
			goto out;
		}
		goto out;
	}
	iov = calloc(n, sizeof(*iov));
	if (iov == NULL)
		goto out;
	for (uint32_t k = 0; k < n; k++) {
		bc_chunk_t *ch = h->v[k];
		uint64_t start = bc_chunk_start(q->c0 + k, cs);
		uint64_t from = q->range.first > start ?
		    q->range.first - start : 0;
		uint64_t to = q->range.last < start + ch->len - 1 ?
		    q->range.last - start : ch->len - 1;

		iov[k].iov_base = ch->data + from;
		iov[k].iov_len = (size_t)(to - from + 1);
	}
	resp = MHD_create_response_from_iovec(iov, n, free_held, h);
	free(iov);
	if (resp != NULL)
		return resp;
out:
	if (resp == NULL || h->n > 0) {
		for (size_t i = 0; i < h->n; i++)
			bc_chunk_unref(h->v[i]);
	}
	free(h);
	return resp;
}

/*
 * The range lies in one chunk that memory lacks and lower tiers exist:
 * asks for the chunk before answering (its fill asks them first). Returns
 * 1 when q->first holds the chunk a wait brought (*hit: from a lower
 * tier, or the origin's, filling), 0 after suspending on its fill
 * (obj_finish answers on the wake), or -1 when the answer streams as it
 * would without lower tiers (a chunk in memory by now or being fetched by
 * another request, several chunks, no lower tier, or an error the reader
 * meets again and acts on).
 */
static int
chunk_first(bc_http_req_t *r, objreq_t *q, hit_t *hit)
{
	bc_chunk_t *ch = NULL;
	int rv;

	if (q->first != NULL) {
		if (q->chunk_waits == 0 || q->first->index != q->c0)
			return -1;   /* a first fill's chunk: streamed */
		*hit = q->first_tier ? HIT : MISS;
		return 1;
	}
	if (q->c0 != q->c1 || q->chunk_waits >= MAX_CHUNK_WAITS ||
	    bc_tier_chain_count(bc_cache_tiers(q->c)) < 2)
		return -1;
	rv = bc_cache_chunk(q->c, q->o, q->meta.etag, q->c0, true, &q->w, &ch);
	if (rv == 0) {   /* the reader takes it from memory */
		q->first = ch;
		q->first_mem = true;
		return -1;
	}
	if (rv != BC_EAGAIN)
		return -1;
	q->chunk_waits++;
	wait_begin(q);
	bc_http_wait(r);
	return 0;
}

/* q->first, a chunk a disk tier just read, as an fd response of the
 * range from the file it was read from (sendfile; MHD takes q->first_fd
 * and closes it), or NULL. The file is never written in place (the disk
 * tier renames new files over old ones), so its bytes are the ones the
 * tier checked. */
static struct MHD_Response *
disk_response(bc_http_req_t *r, objreq_t *q)
{
	bc_chunk_t *ch = q->first;
	uint64_t from = q->range.first - bc_chunk_start(q->c0,
	    r->srv->cfg->chunk_size);
	struct MHD_Response *resp;

	if (q->first_fd < 0 || bc_chunk_state(ch) != BC_CHUNK_COMPLETE ||
	    from + bc_range_length(&q->range) > ch->len)
		return NULL;
	resp = MHD_create_response_from_fd_at_offset64(
	    bc_range_length(&q->range), q->first_fd, q->first_fd_off + from);
	if (resp != NULL)
		q->first_fd = -1;
	return resp;
}

/*
 * The range lies in one chunk that memory lacks and no fill brings: asks
 * the disk tier for the chunk's file (bc_cache_chunk_file), to send it
 * with sendfile without reading it. Returns 1 with *resp, the range from
 * the file (MHD takes q->first_fd); 0 after suspending on the ask; -1
 * when there is no file to send (the chunk path goes on as before).
 */
static int
file_first(bc_http_req_t *r, objreq_t *q, struct MHD_Response **resp)
{
	uint64_t cs = r->srv->cfg->chunk_size;
	uint64_t from = q->range.first - bc_chunk_start(q->c0, cs);
	uint64_t len = bc_range_length(&q->range);
	int rv;

	if (q->file_hit) {
		q->file_hit = false;
		if (q->first_fd < 0 || from + len > q->first_fd_len ||
		    q->first_fd_len != bc_chunk_len(q->c0, q->meta.size, cs))
			return -1;
		*resp = MHD_create_response_from_fd_at_offset64(len,
		    q->first_fd, q->first_fd_off + from);
		if (*resp == NULL)
			return -1;
		q->first_fd = -1;
		return 1;
	}
	if (q->file_state != FILE_UNTRIED || q->c0 != q->c1 ||
	    q->first != NULL)
		return -1;
	q->file_state = FILE_PENDING;
	rv = bc_cache_chunk_file(q->c, q->o, q->meta.etag, q->c0, &q->w);
	if (rv == 0) {   /* opened at once */
		if (q->first_fd >= 0)
			close(q->first_fd);
		q->first_fd = q->w.fd;
		q->first_fd_off = q->w.fd_off;
		q->first_fd_len = q->w.fd_len;
		q->w.fd = -1;
		bc_waiter_reset(&q->w);
		q->file_state = FILE_DONE;
		q->file_hit = true;
		return file_first(r, q, resp);
	}
	if (rv != BC_EAGAIN) {
		q->file_state = FILE_DONE;
		return -1;
	}
	wait_begin(q);
	bc_http_wait(r);
	return 0;
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

static bc_s3err_t
respond(bc_http_req_t *r, objreq_t *q)
{
	struct MHD_Response *resp = NULL;
	bc_cond_t cond;
	char cr[96];
	unsigned status = 200;
	uint64_t len = q->meta.size;
	uint32_t present = 0;
	bool from_file = false;
	hit_t hit;
	bc_s3err_t e;

	bc_cond_from_headers(&cond, &r->s3.headers);
	e = bc_cond_eval(&cond, BC_COND_READ, q->meta.etag,
	    q->meta.last_modified);
	if (e == BC_S3E_NotModified) {
		resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
		if (resp == NULL)
			return BC_S3E_InternalError;
		MHD_add_response_header(resp, "ETag", q->meta.etag);
		if (bc_kv_get(&q->meta.headers, "Last-Modified") != NULL)
			MHD_add_response_header(resp, "Last-Modified",
			    bc_kv_get(&q->meta.headers, "Last-Modified"));
		return bc_http_respond(r, 304, resp) < 0 ?
		    BC_S3E_InternalError : BC_S3E_NONE;
	}
	if (e != BC_S3E_NONE)
		return e;

	q->range.first = 0;
	q->range.last = q->meta.size > 0 ? q->meta.size - 1 : 0;
	if (q->has_range) {
		bc_range_result_t rr = bc_range_resolve(&q->spec, q->meta.size,
		    &q->range);

		if (rr == BC_RANGE_UNSATISFIABLE)
			return respond_416(r, q);
		if (rr == BC_RANGE_OK) {
			status = 206;
			len = bc_range_length(&q->range);
		}
	}

	if (q->meta.size == 0) {
		hit = q->meta_cached ? HIT : MISS;
		resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
	} else if (q->head) {
		hit = q->meta_cached ? HIT : MISS;
		/* MHD sends a HEAD response's size and never reads it */
		resp = MHD_create_response_from_callback(len, READER_BLOCK,
		    obj_reader, r, NULL);
	} else {
		bc_chunk_span(&q->range, r->srv->cfg->chunk_size, &q->c0,
		    &q->c1);
		/* a file asked for is sent, even when the chunk's promotion
		 * got it into memory meanwhile */
		if (q->file_hit && file_first(r, q, &resp) == 1)
			from_file = true;
		else
			resp = zero_copy(r, q, &present);
		if (from_file) {
			hit = HIT;
		} else if (resp != NULL) {
			hit = HIT;
			BC_STATS_ADD(cache_bytes_memory, len);
			bc_stats_bucket_add(r->s3.bucket,
			    BC_BSTAT_cache_bytes_memory, len);
		} else {
			hit = present == q->c1 - q->c0 + 1 ? HIT :
			    present > 0 ? PARTIAL : MISS;
			switch (present == 0 ? file_first(r, q, &resp) : -1) {
			case 0:
				return BC_S3E_NONE;   /* suspended */
			case 1:
				hit = HIT;
				from_file = true;
				break;
			default:
				break;
			}
			switch (from_file ? -1 : chunk_first(r, q, &hit)) {
			case 0:
				return BC_S3E_NONE;   /* suspended */
			case 1:
				if (!q->first_tier)
					break;
				resp = disk_response(r, q);
				if (resp == NULL)
					break;
				BC_STATS_INC(cache_disk_sendfile);
				BC_STATS_ADD(cache_bytes_disk, len);
				bc_chunk_unref(q->first);
				q->first = NULL;
				break;
			default:
				break;
			}
			if (resp == NULL)
				resp = MHD_create_response_from_callback(len,
				    READER_BLOCK, obj_reader, r, NULL);
		}
		if (from_file) {   /* the chunk's disk file, by sendfile */
			BC_STATS_INC(cache_disk_sendfile);
			BC_STATS_ADD(cache_bytes_disk, len);
		}
	}
	if (resp == NULL)
		return BC_S3E_InternalError;
	add_meta_headers(resp, q);
	if (status == 206) {
		bc_range_content_range(cr, sizeof(cr), &q->range,
		    q->meta.size);
		MHD_add_response_header(resp, "Content-Range", cr);
	}
	MHD_add_response_header(resp, "x-bucketcache", hit_names[hit]);
	q->hit = hit;
	q->answered = true;
	if (hit == HIT) {
		BC_STATS_INC(cache_hits);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_hits, 1);
	} else if (hit == MISS) {
		BC_STATS_INC(cache_misses);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_misses, 1);
	} else {
		BC_STATS_INC(cache_partial_hits);
		bc_stats_bucket_add(r->s3.bucket, BC_BSTAT_cache_partial_hits,
		    1);
	}
	r->bytes_out = q->head ? 0 : len;
	return bc_http_respond(r, status, resp) < 0 ? BC_S3E_InternalError :
	    BC_S3E_NONE;
}

static bc_s3err_t
obj_finish(bc_http_req_t *r)
{
	objreq_t *q = r->hdata;
	bc_s3err_t e = BC_S3E_NONE;
	int rv;

	for (;;) {
		if (q->waiting) {
			rv = take_wake(r, q, &e);
			if (rv == 0)
				return BC_S3E_NONE;
			if (rv < 0)
				return e;
			if (rv == 2) {
				e = restart(r, q);
				if (e != BC_S3E_NONE)
					return e;
			}
		}
		if (q->have_meta)   /* it waited for its one chunk */
			return respond(r, q);
		rv = bc_cache_meta(q->c, q->o, q->hint, &q->w, &q->meta,
		    &q->meta_cached);
		if (rv == 0)
			break;
		if (rv == BC_EAGAIN) {
			wait_begin(q);
			q->meta_waited = true;
			bc_http_wait(r);
			return BC_S3E_NONE;
		}
		if (rv == BC_ECANCELED) {
			e = restart(r, q);
			if (e != BC_S3E_NONE)
				return e;
			continue;
		}
		return fill_failed(r);
	}
	q->have_meta = true;
	if (q->meta_waited && !q->meta_tier)
		q->meta_cached = false;
	return respond(r, q);
}

static bc_s3err_t
obj_body(bc_http_req_t *r, const char *data, size_t *len)
{
	*len = 0;   /* GET/HEAD bodies are ignored, as S3 does */
	return BC_S3E_NONE;
}

/* q's read in its job's stats (its rate and mean object size size the
 * job's prefetch window), and out of the prefetcher's list. */
static void
job_account(bc_http_req_t *r, objreq_t *q, bool ok)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 };

	if (q->wait_t0 != 0)
		wait_end(q);
	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = ok ? r->bytes_out : 0;
	d[q->hit == HIT ? BC_JSTAT_cache_hits : q->hit == MISS ?
	    BC_JSTAT_cache_misses : BC_JSTAT_cache_partial_hits] = 1;
	d[BC_JSTAT_wait_us] = q->wait_ns / 1000;
	bc_stats_job_add(q->job, d);
	if (q->have_meta && !q->head && ok)
		bc_scale_read(q->scale, q->job, (uint64_t)(uintptr_t)r->conn,
		    q->wait_ns, r->s3.bucket, r->s3.key,
		    q->meta.size, q->meta.size > 0 ? q->range.first : 1,
		    q->meta.size > 0 ? q->range.last : 0, r->bytes_out);
	if (r->srv->prefetch != NULL)
		bc_prefetch_read(r->srv->prefetch, q->job, r->s3.bucket,
		    r->s3.key);
}

static void
obj_done(bc_http_req_t *r, bool ok)
{
	objreq_t *q = r->hdata;

	if (q == NULL)
		return;
	if (q->answered)
		job_account(r, q, ok);
	bc_waiter_fini(q->c, &q->w);
	bc_exchange_release(q->pass);
	if (q->first_fd >= 0)
		close(q->first_fd);
	bc_chunk_unref(q->first);
	bc_chunk_unref(q->cur);
	if (q->have_meta)
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
