/*
 * creds.c — the credentials provider (see creds.h): snapshots, the
 * refresh thread and its schedule, the stats section.
 *
 * Locking: c->mu guards cur, the schedule and the last error; it is held
 * only for copies and the swap, never across a fetch. The thread sleeps
 * on c->cv (CLOCK_MONOTONIC) in steps of at most a second, so a wall-clock
 * jump is noticed and bc_creds_free() is not kept waiting.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "creds/creds.h"
#include "creds/creds_fetch.h"
#include "s3/s3_date.h"
#include "stats/stats.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_time.h"

#define REFRESH_MARGIN_MS  (5 * 60 * 1000)   /* refresh this long before */
#define RETRY_MIN_MS       1000
#define RETRY_MAX_MS       (60 * 1000)
#define RETRY_EXPIRED_MS   5000              /* at most, once expired */
#define LOG_EVERY_MS       (10 * 1000)       /* expired-request log lines */
#define ERR_LEN            512

struct bc_creds_s {
	bc_creds_source_t  source;
	bc_creds_fetch_fn  fetch;      /* NULL: static */
	void             (*abort)(void *arg);
	void             (*arg_free)(void *arg);
	void              *arg;

	pthread_mutex_t    mu;
	pthread_cond_t     cv;
	bc_creds_snap_t   *cur;        /* a reference held; never NULL */
	int64_t            next_ms;    /* the next fetch (Unix ms) */
	unsigned           failures;   /* in a row */
	int64_t            last_ok_ms;
	char               last_error[ERR_LEN];
	int64_t            logged_ms;  /* last expired-request log line */
	bool               stopping;
	bool               started;
	pthread_t          thread;
};

static void do_describe(const bc_creds_t *c, int64_t now, char *buf,
    size_t n);

/* ---- snapshots ----------------------------------------------------------- */

int64_t
bc_creds_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool
printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			return false;
	return true;
}

int
bc_creds_snap_new(const char *ak, const char *sk, const char *tok,
    int64_t expiration_ms, bc_creds_snap_t **out, char *err, size_t errlen)
{
	size_t al = ak != NULL ? strnlen(ak, BC_CREDS_MAX_ACCESS_KEY + 1) : 0;
	size_t sl = sk != NULL ? strnlen(sk, BC_CREDS_MAX_SECRET + 1) : 0;
	size_t tl = tok != NULL ? strnlen(tok, BC_CREDS_MAX_SESSION + 1) : 0;
	bc_creds_snap_t *s;
	char *p;

	*out = NULL;
	if (al < 1 || al > BC_CREDS_MAX_ACCESS_KEY || !printable(ak, al) ||
	    memchr(ak, '/', al) != NULL) {
		bc_errf(err, errlen, "the access key id must be 1-%d printable "
		    "characters without blanks or '/'",
		    BC_CREDS_MAX_ACCESS_KEY);
		return BC_EINVAL;
	}
	if (sl < 1 || sl > BC_CREDS_MAX_SECRET || !printable(sk, sl)) {
		bc_errf(err, errlen, "the secret access key must be 1-%d "
		    "printable characters without blanks",
		    BC_CREDS_MAX_SECRET);
		return BC_EINVAL;
	}
	if (tl > BC_CREDS_MAX_SESSION || !printable(tok != NULL ? tok : "",
	    tl)) {
		bc_errf(err, errlen, "the session token must be at most %d "
		    "printable characters without blanks",
		    BC_CREDS_MAX_SESSION);
		return BC_EINVAL;
	}
	s = calloc(1, sizeof(*s) + al + sl + tl + 3);
	if (s == NULL) {
		bc_errf(err, errlen, "out of memory");
		return BC_ENOMEM;
	}
	atomic_init(&s->refs, 1);
	p = (char *)(s + 1);
	memcpy(p, ak, al);
	s->access_key = p;
	p += al + 1;
	memcpy(p, sk, sl);
	s->secret_key = p;
	p += sl + 1;
	if (tl > 0) {
		memcpy(p, tok, tl);
		s->session_token = p;
	}
	s->expiration_ms = expiration_ms;
	s->fetched_ms = bc_creds_now_ms();
	*out = s;
	return 0;
}

void
bc_creds_snap_ref(bc_creds_snap_t *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void
bc_creds_snap_unref(bc_creds_snap_t *s)
{
	unsigned was;

	if (s == NULL)
		return;
	was = atomic_fetch_sub(&s->refs, 1);
	BC_CHECK(was > 0);   /* a refcount below zero */
	if (was > 1)
		return;
	OPENSSL_cleanse(s + 1, strlen(s->access_key) +
	    strlen(s->secret_key) + (s->session_token != NULL ?
	    strlen(s->session_token) : 0) + 3);
	free(s);
}

/* ---- the schedule -------------------------------------------------------- */

int64_t
bc_creds_refresh_at(int64_t fetched_ms, int64_t expiration_ms)
{
	int64_t life, margin;

	if (expiration_ms == 0)
		return INT64_MAX;
	life = expiration_ms - fetched_ms;
	margin = life / 4 < REFRESH_MARGIN_MS ? life / 4 : REFRESH_MARGIN_MS;
	if (margin < 0)
		margin = 0;
	return expiration_ms - margin;
}

int64_t
bc_creds_retry_delay(unsigned failures, int64_t now_ms, int64_t expiration_ms)
{
	int64_t d = RETRY_MIN_MS;

	for (unsigned i = 1; i < failures && d < RETRY_MAX_MS; i++)
		d *= 2;
	if (d > RETRY_MAX_MS)
		d = RETRY_MAX_MS;
	if (expiration_ms != 0 && expiration_ms > now_ms) {
		int64_t half = (expiration_ms - now_ms) / 2;

		if (d > half)
			d = half;
	} else if (expiration_ms != 0 && d > RETRY_EXPIRED_MS) {
		d = RETRY_EXPIRED_MS;
	}
	return d < RETRY_MIN_MS ? RETRY_MIN_MS : d;
}

/* ---- the provider -------------------------------------------------------- */

static bool
expired(const bc_creds_snap_t *s, int64_t now)
{
	return s->expiration_ms != 0 && now >= s->expiration_ms;
}

/* "ASIA...WXYZ": enough of an access key id to tell pairs apart. */
static void
short_key(const char *ak, char out[16])
{
	size_t n = strlen(ak);

	if (n <= 8)
		snprintf(out, 16, "%s", ak);
	else
		snprintf(out, 16, "%.4s...%s", ak, ak + n - 4);
}

static int
provider_new(bc_creds_source_t source, bc_creds_fetch_fn fetch,
    void (*abort_fn)(void *), void (*arg_free)(void *), void *arg,
    bc_creds_snap_t *first, bc_creds_t **out)
{
	bc_creds_t *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	*out = NULL;
	if (c == NULL)
		return BC_ENOMEM;
	c->source = source;
	c->fetch = fetch;
	c->abort = abort_fn;
	c->arg_free = arg_free;
	c->arg = arg;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->cur = first;
	c->last_ok_ms = first->fetched_ms;
	c->next_ms = bc_creds_refresh_at(first->fetched_ms,
	    first->expiration_ms);
	*out = c;
	return 0;
}

/* A fetch and its checks; returns 0 and *out, or a code with err. */
static int
fetch_checked(bc_creds_fetch_fn fetch, void *arg, bc_creds_snap_t **out,
    char *err, size_t errlen)
{
	int64_t now = bc_creds_now_ms();
	char at[25];
	int rv;

	*out = NULL;
	rv = fetch(arg, out, err, errlen);
	if (rv == 0 && *out == NULL)
		rv = BC_EIO;
	if (rv == 0 && expired(*out, now)) {
		bc_iso8601_date((time_t)((*out)->expiration_ms / 1000), at);
		bc_errf(err, errlen, "the credentials had expired when they "
		    "came (Expiration %s; is the clock right?)", at);
		bc_creds_snap_unref(*out);
		*out = NULL;
		rv = BC_EKEYEXPIRED;
	}
	return rv;
}

int
bc_creds_new_fetcher(bc_creds_source_t source, bc_creds_fetch_fn fetch,
    void *arg, bc_creds_t **out, char *err, size_t errlen)
{
	bc_creds_snap_t *s;
	int rv;

	*out = NULL;
	rv = fetch_checked(fetch, arg, &s, err, errlen);
	if (rv == 0) {
		rv = provider_new(source, fetch, NULL, NULL, arg, s, out);
		if (rv < 0) {
			bc_creds_snap_unref(s);
			bc_errf(err, errlen, "out of memory");
		}
	}
	return rv < 0 ? -1 : 0;
}

bc_creds_t *
bc_creds_new_static(const char *ak, const char *sk, const char *tok)
{
	bc_creds_snap_t *s;
	bc_creds_t *c;

	if (bc_creds_snap_new(ak, sk, tok, 0, &s, NULL, 0) < 0)
		return NULL;
	if (provider_new(BC_CREDS_ENV, NULL, NULL, NULL, NULL, s, &c) < 0) {
		bc_creds_snap_unref(s);
		return NULL;
	}
	return c;
}

int
bc_creds_new(const bc_config_t *cfg, bc_creds_t **out, char *err,
    size_t errlen)
{
	const bc_config_creds_t *cc = &cfg->creds;
	bc_creds_fetcher_t *f;
	bc_creds_snap_t *s = NULL;
	char why[ERR_LEN];
	int rv;

	*out = NULL;
	if (cc->source == BC_CREDS_NONE)
		return 0;
	if (!bc_creds_source_fetched(cc->source)) {
		/* static: the config's pair (env, profile) */
		rv = bc_creds_snap_new(cfg->access_key, cfg->secret_key,
		    cfg->session_token, 0, &s, why, sizeof(why));
		if (rv == 0)
			rv = provider_new(cc->source, NULL, NULL, NULL, NULL,
			    s, out);
		if (rv < 0) {
			bc_creds_snap_unref(s);
			bc_errf(err, errlen, "upstream credentials (%s): %s",
			    bc_creds_source_name(cc->source), rv == BC_ENOMEM ?
			    "out of memory" : why);
			return -1;
		}
		return 0;
	}
	f = bc_creds_fetcher_new(cc);
	if (f == NULL) {
		bc_errf(err, errlen, "out of memory");
		return -1;
	}
	rv = fetch_checked(bc_creds_fetcher_fetch, f, &s, why, sizeof(why));
	if (rv == 0) {
		rv = provider_new(cc->source, bc_creds_fetcher_fetch,
		    bc_creds_fetcher_abort,
		    (void (*)(void *))bc_creds_fetcher_free, f, s, out);
		if (rv < 0) {
			bc_creds_snap_unref(s);
			snprintf(why, sizeof(why), "out of memory");
		}
	}
	if (rv < 0) {
		bc_creds_fetcher_free(f);
		bc_errf(err, errlen, "upstream credentials (%s%s): %s",
		    bc_creds_source_name(cc->source), !cc->chained ? "" :
		    cc->source == BC_CREDS_IMDS ? ", the last of the chain" :
		    ", found by the chain", why);
		return -1;
	}
	pthread_mutex_lock(&(*out)->mu);
	do_describe(*out, bc_creds_now_ms(), why, sizeof(why));
	pthread_mutex_unlock(&(*out)->mu);
	BC_INFO("upstream credentials: %s%s, %s", bc_creds_source_name(
	    cc->source), cc->chained ? " (found by the chain)" : "", why);
	return 0;
}

/* c->mu held: what the stats and logs say of the current pair. */
static void
do_describe(const bc_creds_t *c, int64_t now, char *buf, size_t n)
{
	char ak[16];

	short_key(c->cur->access_key, ak);
	if (c->cur->expiration_ms == 0)
		snprintf(buf, n, "%s", ak);
	else
		snprintf(buf, n, "%s, expires in %" PRId64 " s", ak,
		    (c->cur->expiration_ms - now) / 1000);
}

/* One refresh attempt: c->mu held on entry and on return, released
 * during the fetch. */
static void
do_refresh(bc_creds_t *c)
{
	bc_creds_snap_t *s = NULL, *old = NULL;
	char err[ERR_LEN] = "", desc[96];
	int64_t now, due;
	int rv;

	pthread_mutex_unlock(&c->mu);
	rv = fetch_checked(c->fetch, c->arg, &s, err, sizeof(err));
	pthread_mutex_lock(&c->mu);
	now = bc_creds_now_ms();
	if (c->stopping) {
		bc_creds_snap_unref(s);
		return;
	}
	if (rv == 0) {
		old = c->cur;
		c->cur = s;
		c->failures = 0;
		c->last_ok_ms = now;
		c->last_error[0] = '\0';
		BC_STATS_INC(creds_refreshes);
		due = bc_creds_refresh_at(s->fetched_ms, s->expiration_ms);
		/* a pair already due (the service handed out the one it
		 * had, not yet rotated): ask again, as after a failure */
		if (due <= now)
			due = now + bc_creds_retry_delay(1, now,
			    s->expiration_ms);
		c->next_ms = due;
		do_describe(c, now, desc, sizeof(desc));
		if (strcmp(old->access_key, s->access_key) != 0 ||
		    old->expiration_ms != s->expiration_ms)
			BC_INFO("upstream credentials (%s) refreshed: %s",
			    bc_creds_source_name(c->source), desc);
		else
			BC_DEBUG("upstream credentials (%s): the same pair "
			    "again (%s)", bc_creds_source_name(c->source),
			    desc);
		pthread_mutex_unlock(&c->mu);
		bc_creds_snap_unref(old);   /* signers may hold it still */
		pthread_mutex_lock(&c->mu);
		return;
	}
	c->failures++;
	BC_STATS_INC(creds_refresh_failures);
	snprintf(c->last_error, sizeof(c->last_error), "%s", err);
	c->next_ms = now + bc_creds_retry_delay(c->failures, now,
	    c->cur->expiration_ms);
	if (expired(c->cur, now))
		BC_ERROR("upstream credentials (%s): refresh failed (%s); the "
		    "current pair expired %" PRId64 " s ago: upstream requests "
		    "fail until a refresh succeeds; retry in %" PRId64 " ms",
		    bc_creds_source_name(c->source), err,
		    (now - c->cur->expiration_ms) / 1000, c->next_ms - now);
	else
		BC_WARN("upstream credentials (%s): refresh failed (%s); "
		    "keeping the current pair, which expires in %" PRId64
		    " s; retry in %" PRId64 " ms",
		    bc_creds_source_name(c->source), err,
		    (c->cur->expiration_ms - now) / 1000, c->next_ms - now);
}

static void *
refresh_main(void *arg)
{
	bc_creds_t *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		int64_t now = bc_creds_now_ms(), wait;
		struct timespec ts;
		uint64_t until;

		if (now >= c->next_ms) {
			do_refresh(c);
			continue;
		}
		wait = c->next_ms - now;
		if (wait > 1000)
			wait = 1000;   /* the wall clock may jump */
		until = bc_mono_ns() + (uint64_t)wait * 1000000;
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		(void)pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int
bc_creds_start(bc_creds_t *c)
{
	sigset_t all, old;
	int rv;

	if (c == NULL || c->fetch == NULL || c->started)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rv = pthread_create(&c->thread, NULL, refresh_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rv != 0)
		return -rv;
	c->started = true;
	return 0;
}

void
bc_creds_free(bc_creds_t *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (c->abort != NULL)
		c->abort(c->arg);
	if (c->started)
		pthread_join(c->thread, NULL);
	if (c->arg_free != NULL)
		c->arg_free(c->arg);
	bc_creds_snap_unref(c->cur);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

bc_creds_snap_t *
bc_creds_get(bc_creds_t *c, int *why)
{
	bc_creds_snap_t *s;
	int64_t now = bc_creds_now_ms();
	bool log = false;
	char err[ERR_LEN];
	int64_t ago = 0;

	if (why != NULL)
		*why = 0;
	pthread_mutex_lock(&c->mu);
	s = c->cur;
	if (!expired(s, now)) {
		bc_creds_snap_ref(s);
		pthread_mutex_unlock(&c->mu);
		return s;
	}
	if (now - c->logged_ms >= LOG_EVERY_MS) {
		c->logged_ms = now;
		log = true;
		ago = (now - s->expiration_ms) / 1000;
		snprintf(err, sizeof(err), "%s", c->last_error[0] != '\0' ?
		    c->last_error : "no refresh attempted yet");
	}
	pthread_mutex_unlock(&c->mu);
	BC_STATS_INC(creds_expired_requests);
	if (log)
		BC_ERROR("upstream request not sent: the upstream credentials "
		    "(%s) expired %" PRId64 " s ago and no refresh has "
		    "succeeded (last error: %s)",
		    bc_creds_source_name(c->source), ago, err);
	if (why != NULL)
		*why = BC_EKEYEXPIRED;
	return NULL;
}

int
bc_creds_ready(bc_creds_t *c)
{
	int rv;

	pthread_mutex_lock(&c->mu);
	rv = expired(c->cur, bc_creds_now_ms()) ? BC_EKEYEXPIRED : 0;
	pthread_mutex_unlock(&c->mu);
	return rv;
}

bc_creds_source_t
bc_creds_source(const bc_creds_t *c)
{
	return c->source;
}

/* ---- stats --------------------------------------------------------------- */

/* What the section shows, copied under the lock. */
typedef struct view_s {
	char     source[16];
	char     ak[16];
	int64_t  expiration_ms, now, last_ok_ms, next_ms;
	unsigned failures;
	char     last_error[ERR_LEN];
} view_t;

static void
view(bc_creds_t *c, view_t *v)
{
	pthread_mutex_lock(&c->mu);
	snprintf(v->source, sizeof(v->source), "%s",
	    bc_creds_source_name(c->source));
	short_key(c->cur->access_key, v->ak);
	v->expiration_ms = c->cur->expiration_ms;
	v->now = bc_creds_now_ms();
	v->last_ok_ms = c->last_ok_ms;
	v->next_ms = c->fetch != NULL ? c->next_ms : 0;
	v->failures = c->failures;
	snprintf(v->last_error, sizeof(v->last_error), "%s", c->last_error);
	pthread_mutex_unlock(&c->mu);
}

int
bc_creds_stats_json(void *cv, bc_buf_t *out)
{
	view_t v;
	char at[25];
	int rv;

	view(cv, &v);
	rv = bc_buf_printf(out, "{\"source\": \"%s\", \"access_key\": \"%s\", ",
	    v.source, v.ak);
	if (rv == 0 && v.expiration_ms != 0) {
		bc_iso8601_date((time_t)(v.expiration_ms / 1000), at);
		rv = bc_buf_printf(out, "\"expiration\": \"%s\", "
		    "\"expires_in_seconds\": %" PRId64 ", \"expired\": %s, ",
		    at, (v.expiration_ms - v.now) / 1000,
		    v.now >= v.expiration_ms ? "true" : "false");
	} else if (rv == 0) {
		rv = bc_buf_puts(out, "\"expiration\": null, "
		    "\"expires_in_seconds\": null, \"expired\": false, ");
	}
	if (rv == 0)
		rv = bc_buf_printf(out, "\"refreshed_seconds_ago\": %" PRId64
		    ", ", (v.now - v.last_ok_ms) / 1000);
	if (rv == 0 && v.next_ms != 0 && v.next_ms != INT64_MAX)
		rv = bc_buf_printf(out, "\"next_refresh_in_seconds\": %" PRId64
		    ", ", (v.next_ms - v.now) / 1000);
	else if (rv == 0)
		rv = bc_buf_puts(out, "\"next_refresh_in_seconds\": null, ");
	if (rv == 0)
		rv = bc_buf_printf(out, "\"failures_in_a_row\": %u, "
		    "\"last_error\": ", v.failures);
	if (rv == 0)
		rv = bc_stats_json_string(out, v.last_error);
	if (rv == 0)
		rv = bc_buf_puts(out, "}");
	return rv;
}

int
bc_creds_stats_prom(void *cv, bc_buf_t *out)
{
	view_t v;
	int rv;

	view(cv, &v);
	rv = bc_buf_puts(out, "# HELP bucketcache_credentials_info Where the "
	    "upstream credentials come from (value 1).\n"
	    "# TYPE bucketcache_credentials_info gauge\n"
	    "bucketcache_credentials_info{source=");
	if (rv == 0)
		rv = bc_stats_prom_label(out, v.source);
	if (rv == 0)
		rv = bc_buf_puts(out, "} 1\n");
	if (rv == 0 && v.expiration_ms != 0)
		rv = bc_buf_printf(out, "# HELP bucketcache_credentials_expiry_"
		    "seconds Seconds until the upstream credentials expire "
		    "(negative: expired).\n"
		    "# TYPE bucketcache_credentials_expiry_seconds gauge\n"
		    "bucketcache_credentials_expiry_seconds %.3f\n",
		    (double)(v.expiration_ms - v.now) / 1000);
	return rv;
}
