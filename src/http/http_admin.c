/*
 * http_admin.c — bc_handler_admin: the /_bucketcache/ endpoints.
 *
 *   GET /_bucketcache/health   200 "ok" (liveness: the process serves)
 *   GET /_bucketcache/ready    200 "ok", or 503 "draining" once a stop
 *                              signal came (readiness: send no more)
 *   GET /_bucketcache/stats    JSON counters (stats.h)
 *   GET /_bucketcache/metrics  Prometheus text exposition
 *   DELETE /_bucketcache/v1/cache?bucket=B[&prefix=P | &key=K]
 *                              drops cached objects; {"invalidated": n}
 *   PUT /_bucketcache/v1/jobs/ID/plan?bucket=B[&epoch=N]
 *                              body: one key per line, or gzip of it
 *                              (prefetch_plan.h); {"keys": n, "epoch": e}
 *   GET /_bucketcache/v1/jobs  {"jobs": [...]} (prefetch_jobs.h)
 *   GET /_bucketcache/v1/jobs/ID      one job
 *   DELETE /_bucketcache/v1/jobs/ID   ends it; 204
 *   GET /_bucketcache/v1/scale the memory target, the estimates behind
 *                              it and the last decisions (scale.h); as
 *                              open as stats
 *   POST|GET|DELETE /_bucketcache/v1/warm?bucket=B[&prefix=P&tier=T]
 *                              warm-ups (http_warm.c)
 *
 * Bucket names cannot start with '_', so these paths never shadow S3.
 * /health and /ready need no credentials. Everything else needs a local client (on
 * loopback, and not relayed by a proxy: see http_server.c) or the admin
 * token (--admin-token) as "x-bucketcache-admin-token: TOKEN" or
 * "Authorization: Bearer TOKEN" (what Prometheus sends); stats and
 * metrics, which name buckets, are open to all with --public-stats.
 *
 * The jobs API is also open to a signed client (SigV4 or V2, header or
 * presigned), whose signature is verified here (the front end does not
 * authenticate admin paths), within its key's grant and its own jobs
 * (prefetch_jobs.h "Owners"):
 *   - a plan PUT needs a key with some part of the bucket, every key of
 *     the plan within the key's grant (else 403 naming the first one
 *     outside), and a job that is new or the key's own; the job becomes
 *     the key's; a job may not be named after another client key;
 *   - GET and DELETE of /v1/jobs/ID need the job to be the key's (403;
 *     404 when there is no such job); GET /v1/jobs lists the key's own;
 *   - a SigV4 body hash (x-amz-content-sha256) is checked against the
 *     plan body (400 BadDigest); UNSIGNED-PAYLOAD is taken, aws-chunked
 *     bodies are not (501).
 * Listing every job needs what stats need. Otherwise 403 AccessDenied.
 * Bounds: a plan body BC_PLAN_MAX_BYTES and BC_PLAN_MAX_KEYS keys
 * (prefetch_plan.h); the bodies being received all told, and the plans
 * held, the registry's bytes (503 SlowDown beyond); jobs, the registry's
 * count and each key's share (prefetch_jobs.h).
 * While the server drains, only health, ready, stats and metrics get
 * here (bc_admin_while_draining); the front end refuses the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <time.h>

#include "cache/cache.h"
#include "http/http_req.h"
#include "http/http_server.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch_jobs.h"
#include "prefetch/prefetch_plan.h"
#include "s3/s3_hints.h"
#include "s3/s3_verdicts.h"
#include "scale/scale.h"
#include "stats/stats.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define JOBS_PATH "v1/jobs"

/* PUT .../plan in progress (r->hdata) */
typedef struct plan_put_s {
	bc_plan_builder_t *b;
	size_t             charged;      /* b's bytes, bc_jobs_build_charge */
	bc_sha256_t       *sha;          /* SigV4 body hash to check */
	char               want_sha[65];
	char               id[BC_S3_HINT_JOB_MAX + 1];
	char               bucket[BC_S3_MAX_BUCKET + 1];
	bool               has_epoch;
	uint32_t           epoch;
	int                rv;
	char               err[160];
} plan_put_t;

static bool
admin_allowed(const bc_http_req_t *r)
{
	const char *token = r->srv->cfg->admin_token;
	const char *given = bc_kv_get(&r->s3.headers,
	    "x-bucketcache-admin-token");
	const char *auth = bc_kv_get(&r->s3.headers, "Authorization");

	if (r->is_local)
		return true;
	if (token[0] == '\0')
		return false;
	if (given == NULL && auth != NULL && strncasecmp(auth, "Bearer ",
	    7) == 0)
		given = auth + 7;
	return given != NULL && bc_streq_ct(token, given);
}

bool
bc_admin_allowed(const bc_http_req_t *r)
{
	return admin_allowed(r);
}

static bool
stats_allowed(const bc_http_req_t *r)
{
	return r->srv->cfg->public_stats || admin_allowed(r);
}

static bool
is_signed(const bc_http_req_t *r)
{
	return bc_kv_get(&r->s3.headers, "Authorization") != NULL ||
	    bc_kv_get_exact(&r->s3.query, "X-Amz-Credential") != NULL ||
	    bc_kv_get_exact(&r->s3.query, "AWSAccessKeyId") != NULL;
}

/* Verifies a signed request's signature (the front end does not
 * authenticate admin paths): BC_S3E_NONE with r->client_key set, or the
 * error to answer (403 AccessDenied when unsigned). */
static bc_s3err_t
verify_key(bc_http_req_t *r)
{
	const bc_config_t *cfg = r->srv->cfg;
	const bc_client_key_t *key;
	bc_s3err_t e;

	if (!is_signed(r))
		return BC_S3E_AccessDenied;
	e = bc_s3_verdicts_verify(r->srv->verdicts, &r->s3, time(NULL),
	    bc_config_secret, (void *)cfg, false, &r->auth, NULL);
	if (e != BC_S3E_NONE) {
		BC_STATS_INC(auth_failures);
		r->pending_msg = r->auth.message;
		return e;
	}
	key = bc_config_key(cfg, r->auth.access_key);
	if (key == NULL) {
		BC_STATS_INC(auth_failures);
		return BC_S3E_AccessDenied;
	}
	r->client_key = key;
	return BC_S3E_NONE;
}

bc_s3err_t
bc_admin_verify_key(bc_http_req_t *r)
{
	return verify_key(r);
}

/* Who may post job id's plan for bucket: the admin token or a local
 * client (r->client_key stays NULL: the operator), or a verified key with
 * some part of bucket, for a job not named after another client key. */
static bc_s3err_t
plan_access(bc_http_req_t *r, const char *id, const char *bucket)
{
	const bc_client_key_t *named;
	bc_s3err_t e;

	if (admin_allowed(r))
		return BC_S3E_NONE;
	e = verify_key(r);
	if (e != BC_S3E_NONE)
		return e;
	named = bc_config_key(r->srv->cfg, id);
	if (!bc_config_key_in_bucket(r->client_key, bucket) ||
	    (named != NULL && named != r->client_key)) {
		BC_STATS_INC(auth_failures);
		return BC_S3E_AccessDenied;
	}
	return BC_S3E_NONE;
}

static bool
is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (bc_hexval(s[i]) < 0)
			return false;
	return i == 64;
}

static bc_s3err_t
err_of(int rv)
{
	switch (rv) {
	case BC_EINVAL:
		return BC_S3E_InvalidArgument;
	case BC_E2BIG:
		return BC_S3E_EntityTooLarge;
	case BC_ENOSPC:
		return BC_S3E_SlowDown;
	case BC_EACCES:
		return BC_S3E_AccessDenied;
	default:
		return BC_S3E_InternalError;
	}
}

/* start of PUT /_bucketcache/v1/jobs/ID/plan: span[0..idlen) is the
 * decoded ID (not NUL-terminated: the path goes on) */
static bc_s3err_t
plan_start(bc_http_req_t *r, const char *span, size_t idlen)
{
	const char *bucket = bc_kv_get_exact(&r->s3.query, "bucket");
	const char *epoch = bc_kv_get_exact(&r->s3.query, "epoch");
	char id[BC_S3_HINT_JOB_MAX + 1];
	plan_put_t *pp;
	uint64_t e = 0;
	bc_s3err_t se;

	if (r->srv->jobs == NULL)
		return BC_S3E_NotImplemented;
	if (!bc_s3_hint_job_ok(span, idlen) || bucket == NULL ||
	    bucket[0] == '\0' || !bc_s3_bucket_name_ok(bucket) ||
	    (epoch != NULL && (!bc_u64_parse_str(epoch, &e) ||
	    e > UINT32_MAX)))
		return BC_S3E_InvalidArgument;
	memcpy(id, span, idlen);   /* idlen <= BC_S3_HINT_JOB_MAX: job_ok */
	id[idlen] = '\0';
	se = plan_access(r, id, bucket);
	if (se != BC_S3E_NONE)
		return se;
	if (r->content_length != UINT64_MAX &&
	    r->content_length > BC_PLAN_MAX_BYTES)
		return BC_S3E_EntityTooLarge;
	if (r->client_key != NULL && r->auth.streaming)
		return BC_S3E_NotImplemented;
	pp = calloc(1, sizeof(*pp));
	if (pp == NULL)
		return BC_S3E_InternalError;
	r->hdata = pp;
	strcpy(pp->id, id);
	strcpy(pp->bucket, bucket);
	pp->has_epoch = epoch != NULL;
	pp->epoch = (uint32_t)e;
	pp->b = bc_plan_builder_new();
	if (pp->b == NULL)
		return BC_S3E_InternalError;
	if (r->client_key != NULL && is_hex64(r->auth.payload_hash)) {
		memcpy(pp->want_sha, r->auth.payload_hash, 65);
		pp->sha = bc_sha256_new();
		if (pp->sha == NULL)
			return BC_S3E_InternalError;
	}
	return BC_S3E_NONE;
}

/* The first key of plan outside r's key's grant in bucket, or NULL (an
 * operator's plan, or a key with all of it). */
static const char *
plan_outside_grant(const bc_http_req_t *r, const bc_plan_t *plan,
    const char *bucket)
{
	const bc_client_key_t *key = r->client_key;

	if (key == NULL || bc_config_key_has_bucket(key, bucket))
		return NULL;
	for (uint32_t i = 0; i < bc_plan_len(plan); i++) {
		const char *k = bc_plan_key(plan, i, NULL);

		if (!bc_config_key_allows(key, bucket, k))
			return k;
	}
	return NULL;
}

/* A plan that is its job's current one, nothing of it read yet (posted
 * before the job reads: its first epoch, say): the prefetcher starts on
 * its first keys now, so the loader's first batches find them
 * (BC_PREFETCH_PLAN_START; later reads size the window by the job's
 * rate). The keys are the owner's to read (plan_outside_grant). They are
 * fetched signed: whether the job's readers will sign is not known yet,
 * and a signed fill serves both (an unsigned reader's is checked with a
 * one-byte unsigned GET, cache.h), where an unsigned one of a private
 * object serves nobody. */
static void
plan_prefetch_start(bc_http_req_t *r, const char *id, uint32_t epoch)
{
	bc_job_info_t info;

	if (r->srv->prefetch == NULL ||
	    bc_jobs_info(r->srv->jobs, id, &info) < 0 ||
	    info.epoch != epoch || info.cursor != 0)
		return;
	(void)bc_prefetch_feed_plan(r->srv->prefetch, r->srv->jobs, id, NULL,
	    BC_PREFETCH_PLAN_START, NULL, NULL, false);
}

static bc_s3err_t
plan_finish(bc_http_req_t *r)
{
	plan_put_t *pp = r->hdata;
	bc_plan_t *plan = NULL;
	bc_buf_t body = BC_BUF_INIT;
	const char *outside;
	uint32_t keys, epoch = 0;
	int rv;

	if (pp->sha != NULL) {
		uint8_t md[BC_SHA256_LEN];
		char hex[65];

		bc_sha256_final(pp->sha, md);
		bc_hex(md, sizeof(md), hex);
		if (strcasecmp(hex, pp->want_sha) != 0)
			return BC_S3E_BadDigest;
	}
	rv = bc_plan_builder_finish(pp->b, &plan, pp->err, sizeof(pp->err));
	if (rv < 0)
		return bc_http_respond_error(r, err_of(rv), pp->err) < 0 ?
		    BC_S3E_InternalError : BC_S3E_NONE;
	outside = plan_outside_grant(r, plan, pp->bucket);
	if (outside != NULL) {
		BC_STATS_INC(auth_failures);
		snprintf(pp->err, sizeof(pp->err), "The plan names a key "
		    "outside this access key's grant: %.100s", outside);
		bc_plan_unref(plan);
		return bc_http_respond_error(r, BC_S3E_AccessDenied,
		    pp->err) < 0 ? BC_S3E_InternalError : BC_S3E_NONE;
	}
	keys = bc_plan_len(plan);
	bc_plan_ref(plan);   /* scale reads its first key after the put */
	rv = bc_jobs_put_plan(r->srv->jobs, pp->id, r->client_key != NULL ?
	    r->auth.access_key : NULL, pp->bucket,
	    pp->has_epoch ? &pp->epoch : NULL, plan, &epoch);
	if (rv == 0) {
		bc_scale_plan(r->srv->scale, pp->id, pp->bucket,
		    bc_plan_key(plan, 0, NULL), keys);
		plan_prefetch_start(r, pp->id, epoch);
	}
	bc_plan_unref(plan);
	if (rv < 0) {
		const char *msg = rv == BC_EINVAL ?
		    "The epoch is below the job's current epoch." :
		    rv == BC_E2BIG ? "The job already holds plans for 3 "
		    "epochs; post this one when the current epoch ends." :
		    rv == BC_ENOSPC ? "Plans are at their memory bound (the "
		    "gateway's, or this access key's share of it)." :
		    rv == BC_EACCES ? "The job belongs to another client." :
		    NULL;

		if (rv == BC_EACCES)
			BC_STATS_INC(auth_failures);
		return bc_http_respond_error(r, err_of(rv), msg) < 0 ?
		    BC_S3E_InternalError : BC_S3E_NONE;
	}
	bc_buf_printf(&body, "{\"keys\": %u, \"epoch\": %u}\n", keys, epoch);
	return bc_http_respond_buf(r, 200, "application/json", &body) < 0 ?
	    BC_S3E_InternalError : BC_S3E_NONE;
}

/* GET|DELETE /_bucketcache/v1/jobs[/ID]: the operator's (the admin token
 * or a local client) for any job, listing all with what stats need; a
 * verified key's for its own jobs. */
static bc_s3err_t
jobs_call(bc_http_req_t *r, const char *rest)
{
	bc_jobs_t *jobs = r->srv->jobs;
	bool get = strcmp(r->s3.method, "GET") == 0 ||
	    strcmp(r->s3.method, "HEAD") == 0;
	bool del = strcmp(r->s3.method, "DELETE") == 0;
	const char *owner = NULL;   /* NULL: the operator's call */
	bc_buf_t body = BC_BUF_INIT;
	bc_s3err_t e;
	int rv;

	if (jobs == NULL)
		return BC_S3E_NotImplemented;
	if (rest[0] == '\0' ? !get : (!get && !del))
		return BC_S3E_MethodNotAllowed;
	if (!(rest[0] == '\0' ? stats_allowed(r) : admin_allowed(r))) {
		e = verify_key(r);
		if (e != BC_S3E_NONE)
			return e;
		owner = r->auth.access_key;
	}
	if (rest[0] == '\0') {
		rv = bc_jobs_json(jobs, NULL, owner, &body);
		goto answer;
	}
	if (!bc_s3_hint_job_ok(rest, strlen(rest)))
		return BC_S3E_NoSuchKey;
	if (del) {
		rv = bc_jobs_delete(jobs, rest, owner);
		if (rv == BC_EACCES)
			BC_STATS_INC(auth_failures);
		if (rv < 0)
			return rv == BC_EACCES ? BC_S3E_AccessDenied :
			    BC_S3E_NoSuchKey;
		bc_scale_forget(r->srv->scale, rest);
		return bc_http_respond_buf(r, 204, "application/json", &body) <
		    0 ? BC_S3E_InternalError : BC_S3E_NONE;
	}
	if (owner != NULL) {
		bc_job_info_t info;

		if (bc_jobs_info(jobs, rest, &info) < 0)
			return BC_S3E_NoSuchKey;
		if (strcmp(info.owner, owner) != 0) {
			BC_STATS_INC(auth_failures);
			return BC_S3E_AccessDenied;
		}
	}
	rv = bc_jobs_json(jobs, rest, NULL, &body);
	if (rv == BC_ENOENT) {
		bc_buf_fini(&body);
		return BC_S3E_NoSuchKey;
	}
answer:
	if (rv < 0) {
		bc_buf_fini(&body);
		return BC_S3E_InternalError;
	}
	return bc_http_respond_buf(r, 200, "application/json", &body) < 0 ?
	    BC_S3E_InternalError : BC_S3E_NONE;
}

/* DELETE /_bucketcache/v1/cache */
static bc_s3err_t
invalidate(bc_http_req_t *r)
{
	const char *bucket = bc_kv_get_exact(&r->s3.query, "bucket");
	const char *prefix = bc_kv_get_exact(&r->s3.query, "prefix");
	const char *key = bc_kv_get_exact(&r->s3.query, "key");
	bc_buf_t body = BC_BUF_INIT;
	size_t n = 0;

	if (!admin_allowed(r))
		return BC_S3E_AccessDenied;
	if (bucket == NULL || bucket[0] == '\0' ||
	    !bc_s3_bucket_name_ok(bucket) || (prefix != NULL && key != NULL))
		return BC_S3E_InvalidArgument;
	if (r->srv->cache != NULL)
		n = bc_cache_invalidate(r->srv->cache, bucket, key,
		    key != NULL ? NULL : prefix != NULL ? prefix : "");
	bc_buf_printf(&body, "{\"invalidated\": %zu}\n", n);
	return bc_http_respond_buf(r, 200, "application/json", &body) < 0 ?
	    BC_S3E_InternalError : BC_S3E_NONE;
}

/* "v1/jobs/ID/plan": ID's span, or NULL */
static const char *
plan_path(const char *path, size_t *idlen)
{
	const char *id, *end;

	if (strncmp(path, JOBS_PATH "/", sizeof(JOBS_PATH)) != 0)
		return NULL;
	id = path + sizeof(JOBS_PATH);
	end = strchr(id, '/');
	if (end == NULL || strcmp(end, "/plan") != 0)
		return NULL;
	*idlen = (size_t)(end - id);
	return id;
}

static bool
is_get(const bc_http_req_t *r)
{
	return strcmp(r->s3.method, "GET") == 0 ||
	    strcmp(r->s3.method, "HEAD") == 0;
}

bool
bc_admin_while_draining(const bc_http_req_t *r)
{
	static const char *const open_paths[] = { "health", "ready", "stats",
	    "metrics", NULL };
	const char *path = r->s3.path + strlen(BC_S3_ADMIN_PREFIX);

	if (!is_get(r))
		return false;
	for (int i = 0; open_paths[i] != NULL; i++)
		if (strcmp(path, open_paths[i]) == 0)
			return true;
	return false;
}

static bc_s3err_t
admin_start(bc_http_req_t *r)
{
	const char *path = r->s3.path + strlen(BC_S3_ADMIN_PREFIX);
	const char *id;
	size_t idlen;

	id = plan_path(path, &idlen);
	if (id == NULL)
		return BC_S3E_NONE;
	if (strcmp(r->s3.method, "PUT") != 0)
		return BC_S3E_MethodNotAllowed;
	return plan_start(r, id, idlen);
}

/* Charges what pp's builder holds now to the registry's bound on plans
 * being received: 0 or BC_ENOSPC. */
static int
charge(bc_http_req_t *r, plan_put_t *pp)
{
	size_t now = bc_plan_builder_memory(pp->b);

	if (now <= pp->charged)
		return 0;
	if (bc_jobs_build_charge(r->srv->jobs, (int64_t)(now -
	    pp->charged)) < 0) {
		snprintf(pp->err, sizeof(pp->err), "plans being received "
		    "are at their memory bound");
		return BC_ENOSPC;
	}
	pp->charged = now;
	return 0;
}

static bc_s3err_t
admin_body(bc_http_req_t *r, const char *data, size_t *len)
{
	plan_put_t *pp = r->hdata;
	int rv;

	if (pp == NULL) {
		*len = 0;   /* no other admin call takes a body */
		return BC_S3E_NONE;
	}
	if (pp->sha != NULL)
		bc_sha256_update(pp->sha, data, *len);
	rv = bc_plan_builder_feed(pp->b, data, *len, pp->err,
	    sizeof(pp->err));
	*len = 0;
	if (rv == 0)
		rv = charge(r, pp);
	if (rv < 0) {
		BC_DEBUG("plan %s: %s", pp->id, pp->err);
		r->pending_msg = pp->err;   /* the answer says why */
		return err_of(rv);
	}
	return BC_S3E_NONE;
}

static void
admin_done(bc_http_req_t *r, bool ok)
{
	plan_put_t *pp = r->hdata;

	(void)ok;
	if (pp == NULL)
		return;
	bc_plan_builder_free(pp->b);
	(void)bc_jobs_build_charge(r->srv->jobs, -(int64_t)pp->charged);
	bc_sha256_free(pp->sha);
	free(pp);
	r->hdata = NULL;
}

static bc_s3err_t
admin_finish(bc_http_req_t *r)
{
	const char *path = r->s3.path + strlen(BC_S3_ADMIN_PREFIX);
	bool get = is_get(r);
	bc_buf_t body = BC_BUF_INIT;
	int rv;

	if (r->hdata != NULL)
		return plan_finish(r);
	if (strcmp(path, JOBS_PATH) == 0 ||
	    strncmp(path, JOBS_PATH "/", sizeof(JOBS_PATH)) == 0)
		return jobs_call(r, path[sizeof(JOBS_PATH) - 1] == '\0' ? "" :
		    path + sizeof(JOBS_PATH));
	if (strcmp(path, "v1/warm") == 0)
		return bc_http_warm(r);   /* http_warm.c */
	if (strcmp(path, "health") == 0 && get) {
		bc_buf_puts(&body, "ok\n");
		rv = bc_http_respond_buf(r, 200, "text/plain", &body);
	} else if (strcmp(path, "ready") == 0 && get) {
		bool draining = bc_server_draining(r->srv);

		bc_buf_puts(&body, draining ? "draining\n" : "ok\n");
		rv = bc_http_respond_buf(r, draining ? 503 : 200, "text/plain",
		    &body);
	} else if ((strcmp(path, "stats") == 0 ||
	    strcmp(path, "metrics") == 0) && get && !stats_allowed(r)) {
		return BC_S3E_AccessDenied;
	} else if (strcmp(path, "stats") == 0 && get) {
		bc_stats_json(&body);
		rv = bc_http_respond_buf(r, 200, "application/json", &body);
	} else if (strcmp(path, "metrics") == 0 && get) {
		bc_stats_prometheus(&body);
		rv = bc_http_respond_buf(r, 200,
		    "text/plain; version=0.0.4", &body);
	} else if (strcmp(path, "v1/scale") == 0 && get) {
		if (!stats_allowed(r))
			return BC_S3E_AccessDenied;
		if (r->srv->scale == NULL)
			return BC_S3E_NotImplemented;
		rv = bc_scale_json(r->srv->scale, &body);
		if (rv == 0)
			rv = bc_http_respond_buf(r, 200, "application/json",
			    &body);
		else
			bc_buf_fini(&body);
	} else if (strcmp(path, "v1/cache") == 0 &&
	    strcmp(r->s3.method, "DELETE") == 0) {
		return invalidate(r);
	} else if (strcmp(path, "v1/cache") == 0 ||
	    strcmp(path, "v1/scale") == 0 ||
	    strcmp(path, "health") == 0 || strcmp(path, "ready") == 0 ||
	    strcmp(path, "stats") == 0 || strcmp(path, "metrics") == 0) {
		return BC_S3E_MethodNotAllowed;
	} else {
		return BC_S3E_NoSuchKey;
	}
	return rv < 0 ? BC_S3E_InternalError : BC_S3E_NONE;
}

const bc_handler_t bc_handler_admin = {
	.name = "admin",
	.start = admin_start,
	.body = admin_body,
	.finish = admin_finish,
	.done = admin_done,
};
