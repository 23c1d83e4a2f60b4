/*
 * test_creds.c — creds/creds: snapshots (what they accept, refcounts),
 * the refresh schedule (bc_creds_refresh_at, bc_creds_retry_delay), and
 * the provider over a scripted fetcher with lifetimes of a fraction of a
 * second: refreshed before expiry by its thread, never handing out an
 * expired pair, keeping the old pair through failed refreshes until it
 * expires, then refusing (BC_EKEYEXPIRED, counted) until a refresh
 * succeeds; signers on several threads always see a consistent pair.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "creds/creds.h"
#include "stats/stats.h"
#include "util/util_buf.h"
#include "util/util_error.h"
#include "util/util_log.h"

/* the refresher's info lines would flood the output */
static void quiet(void) { bc_log_level = BC_LOG_WARN; }
TestSuite(provider, .init = quiet);

/* ---- snapshots ------------------------------------------------------------ */

LTest(snap, accepts_and_refuses)
{
	bc_creds_snap_t *s = NULL;
	char err[200], big[BC_CREDS_MAX_SESSION + 2];

	cr_assert_eq(bc_creds_snap_new("S3RVER", "S3RVER", NULL, 0, &s, err,
	    sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(s->access_key, "S3RVER");
	cr_expect_null(s->session_token);
	cr_expect_eq(s->expiration_ms, 0);
	bc_creds_snap_ref(s);
	bc_creds_snap_unref(s);
	bc_creds_snap_unref(s);
	cr_assert_eq(bc_creds_snap_new("AK", "SK", "", 5, &s, err,
	    sizeof(err)), 0, "%s", err);
	cr_expect_null(s->session_token, "an empty token is none");
	bc_creds_snap_unref(s);
	bc_creds_snap_unref(NULL);
	s = (bc_creds_snap_t *)1;
	cr_expect_eq(bc_creds_snap_new("", "SK", NULL, 0, &s, err,
	    sizeof(err)), BC_EINVAL);
	cr_expect_null(s);
	cr_expect_eq(bc_creds_snap_new("A/K", "SK", NULL, 0, &s, err,
	    sizeof(err)), BC_EINVAL);
	cr_expect_eq(bc_creds_snap_new("AK", "S K", NULL, 0, &s, err,
	    sizeof(err)), BC_EINVAL);
	cr_expect_null(strstr(err, "S K"), "no secret in %s", err);
	cr_expect_eq(bc_creds_snap_new("AK", "SK", "t\n", 0, &s, err,
	    sizeof(err)), BC_EINVAL);
	memset(big, 't', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_expect_eq(bc_creds_snap_new("AK", "SK", big, 0, &s, err,
	    sizeof(err)), BC_EINVAL);
}

/* ---- the schedule --------------------------------------------------------- */

LTest(schedule, refresh_at)
{
	/* an hour: 5 minutes before */
	cr_expect_eq(bc_creds_refresh_at(1000, 1000 + 3600000),
	    1000 + 3300000);
	/* six hours: 5 minutes before */
	cr_expect_eq(bc_creds_refresh_at(0, 21600000), 21300000);
	/* 20 seconds: a quarter of it before, 15 s in */
	cr_expect_eq(bc_creds_refresh_at(0, 20000), 15000);
	/* fetched with 10 minutes left (IMDS near rotation) */
	cr_expect_eq(bc_creds_refresh_at(0, 600000), 450000);
	/* never expires: never */
	cr_expect_eq(bc_creds_refresh_at(5, 0), INT64_MAX);
	/* already expired when fetched: at once */
	cr_expect_eq(bc_creds_refresh_at(1000, 500), 500);
}

LTest(schedule, retry_delay)
{
	int64_t now = 1000000;

	/* doubling from 1 s, capped at a minute, without an expiry */
	cr_expect_eq(bc_creds_retry_delay(1, now, 0), 1000);
	cr_expect_eq(bc_creds_retry_delay(2, now, 0), 2000);
	cr_expect_eq(bc_creds_retry_delay(3, now, 0), 4000);
	cr_expect_eq(bc_creds_retry_delay(6, now, 0), 32000);
	cr_expect_eq(bc_creds_retry_delay(7, now, 0), 60000);
	cr_expect_eq(bc_creds_retry_delay(1000, now, 0), 60000);
	/* never later than half the time left, at least 1 s */
	cr_expect_eq(bc_creds_retry_delay(6, now, now + 20000), 10000);
	cr_expect_eq(bc_creds_retry_delay(2, now, now + 20000), 2000);
	cr_expect_eq(bc_creds_retry_delay(6, now, now + 600), 1000);
	/* expired: every 5 s at most */
	cr_expect_eq(bc_creds_retry_delay(1, now, now), 1000);
	cr_expect_eq(bc_creds_retry_delay(3, now, now - 1), 4000);
	cr_expect_eq(bc_creds_retry_delay(9, now, now - 1), 5000);
}

/* ---- the provider --------------------------------------------------------- */

/* Pairs AKIDTEST0000000N / secretN / tokenN, expiring life_ms after
 * they are made; fail makes a fetch fail; expired_first hands out one
 * already expired. */
typedef struct script_s {
	atomic_int  n;
	int64_t     life_ms;
	atomic_bool fail;
	bool        expired_first;
	atomic_int  calls;
} script_t;

static int
script_fetch(void *arg, bc_creds_snap_t **out, char *err, size_t errlen)
{
	script_t *sc = arg;
	char ak[32], sk[32], tok[32];
	int n;

	atomic_fetch_add(&sc->calls, 1);
	if (atomic_load(&sc->fail)) {
		snprintf(err, errlen, "scripted failure");
		return BC_EIO;
	}
	n = atomic_fetch_add(&sc->n, 1) + 1;
	snprintf(ak, sizeof(ak), "AKIDTEST%08d", n);
	snprintf(sk, sizeof(sk), "secret%d", n);
	snprintf(tok, sizeof(tok), "token%d", n);
	return bc_creds_snap_new(ak, sk, tok, bc_creds_now_ms() +
	    (sc->expired_first && n == 1 ? -1000 : sc->life_ms), out, err,
	    errlen);
}

static int
key_no(const bc_creds_snap_t *s)
{
	return atoi(s->access_key + 8);
}

LTest(provider, static_pair_never_expires)
{
	bc_creds_t *c = bc_creds_new_static("AK", "SK", "TOK");
	bc_creds_snap_t *s;
	bc_buf_t b = BC_BUF_INIT;
	int why = 1;

	cr_assert_not_null(c);
	cr_assert_eq(bc_creds_start(c), 0, "a no-op for static pairs");
	s = bc_creds_get(c, &why);
	cr_assert_not_null(s);
	cr_expect_eq(why, 0);
	cr_expect_str_eq(s->session_token, "TOK");
	cr_expect_eq(bc_creds_ready(c), 0);
	bc_creds_snap_unref(s);
	cr_expect_eq(bc_creds_stats_json(c, &b), 0);
	cr_expect_not_null(strstr(bc_buf_str(&b), "\"source\": \"env\", "
	    "\"access_key\": \"AK\", \"expiration\": null, "
	    "\"expires_in_seconds\": null, \"expired\": false"), "%s",
	    bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_expect_eq(bc_creds_stats_prom(c, &b), 0);
	cr_expect_not_null(strstr(bc_buf_str(&b),
	    "bucketcache_credentials_info{source=\"env\"} 1\n"));
	cr_expect_null(strstr(bc_buf_str(&b), "expiry_seconds"));
	bc_buf_fini(&b);
	bc_creds_free(c);
	bc_creds_free(NULL);
	cr_expect_null(bc_creds_new_static("", "SK", NULL));
}

LTest(provider, first_fetch_must_succeed)
{
	script_t sc = { .life_ms = 60000 };
	bc_creds_t *c = (bc_creds_t *)1;
	char err[300];

	atomic_store(&sc.fail, true);
	cr_expect_eq(bc_creds_new_fetcher(BC_CREDS_ECS, script_fetch, &sc, &c,
	    err, sizeof(err)), -1);
	cr_expect_null(c);
	cr_expect_str_eq(err, "scripted failure");
	atomic_store(&sc.fail, false);
	sc.expired_first = true;
	cr_expect_eq(bc_creds_new_fetcher(BC_CREDS_ECS, script_fetch, &sc, &c,
	    err, sizeof(err)), -1);
	cr_expect_not_null(strstr(err, "the credentials had expired when they "
	    "came"), "%s", err);
}

/* A lifetime of 1.2 s is refreshed at 0.9 s (a quarter before), by the
 * thread: a reader polling all along never finds it expired and sees
 * the pairs change. */
LTest(provider, refreshed_before_expiry)
{
	script_t sc = { .life_ms = 1200 };
	bc_creds_t *c;
	bc_buf_t b = BC_BUF_INIT;
	char err[300];
	int last = 1, seen = 1;
	uint64_t r0 = bc_stats_get(BC_STAT_creds_refreshes);
	uint64_t x0 = bc_stats_get(BC_STAT_creds_expired_requests);

	cr_assert_eq(bc_creds_new_fetcher(BC_CREDS_IMDS, script_fetch, &sc, &c,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bc_creds_start(c), 0);
	for (int i = 0; i < 300; i++) {   /* 3 s */
		int why;
		bc_creds_snap_t *s = bc_creds_get(c, &why);

		cr_assert_not_null(s, "expired at %d ms (%d)", i * 10, why);
		cr_assert(s->expiration_ms > bc_creds_now_ms());
		if (key_no(s) != last) {
			cr_assert_eq(key_no(s), last + 1);
			last = key_no(s);
			seen++;
		}
		bc_creds_snap_unref(s);
		usleep(10 * 1000);
	}
	cr_expect_geq(seen, 3, "pairs seen: %d", seen);
	cr_expect_leq(atomic_load(&sc.calls), 6, "fetches: %d",
	    atomic_load(&sc.calls));
	cr_expect_geq(bc_stats_get(BC_STAT_creds_refreshes) - r0, 2);
	cr_expect_eq(bc_stats_get(BC_STAT_creds_expired_requests), x0);
	cr_expect_eq(bc_creds_stats_json(c, &b), 0);
	cr_expect_not_null(strstr(bc_buf_str(&b), "\"source\": \"imds\", "
	    "\"access_key\": \"AKID...000"), "%s", bc_buf_str(&b));
	cr_expect_not_null(strstr(bc_buf_str(&b), "\"expired\": false"),
	    "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
	bc_creds_free(c);
}

/* Refreshes fail: the pair in hand stays in use until it expires; then
 * nothing is handed out (BC_EKEYEXPIRED, counted, ready says so) until a
 * retry succeeds. */
LTest(provider, failed_refresh_keeps_pair_until_expiry)
{
	script_t sc = { .life_ms = 1200 };
	bc_creds_t *c;
	bc_creds_snap_t *s;
	bc_buf_t b = BC_BUF_INIT;
	char err[300];
	int64_t exp, t0;
	int why = 0;
	uint64_t f0 = bc_stats_get(BC_STAT_creds_refresh_failures);
	uint64_t x0 = bc_stats_get(BC_STAT_creds_expired_requests);

	cr_assert_eq(bc_creds_new_fetcher(BC_CREDS_WEB_IDENTITY, script_fetch,
	    &sc, &c, err, sizeof(err)), 0, "%s", err);
	atomic_store(&sc.fail, true);
	cr_assert_eq(bc_creds_start(c), 0);
	s = bc_creds_get(c, NULL);
	exp = s->expiration_ms;
	bc_creds_snap_unref(s);
	/* until expiry: pair 1, while refreshes fail */
	while (bc_creds_now_ms() < exp - 50) {
		s = bc_creds_get(c, &why);
		cr_assert_not_null(s);
		cr_assert_eq(key_no(s), 1);
		bc_creds_snap_unref(s);
		usleep(20 * 1000);
	}
	cr_expect_geq(bc_stats_get(BC_STAT_creds_refresh_failures) - f0, 1,
	    "the refresh at 0.9 s failed");
	usleep(100 * 1000);
	/* expired: refused and counted */
	s = bc_creds_get(c, &why);
	cr_expect_null(s);
	cr_expect_eq(why, BC_EKEYEXPIRED);
	cr_expect_eq(bc_creds_ready(c), BC_EKEYEXPIRED);
	cr_expect_eq(bc_stats_get(BC_STAT_creds_expired_requests) - x0, 1);
	cr_expect_eq(bc_creds_stats_json(c, &b), 0);
	cr_expect_not_null(strstr(bc_buf_str(&b), "\"expired\": true"), "%s",
	    bc_buf_str(&b));
	cr_expect_not_null(strstr(bc_buf_str(&b), "\"last_error\": "
	    "\"scripted failure\""), "%s", bc_buf_str(&b));
	bc_buf_fini(&b);
	/* the service is back: a retry (at most 5 s apart once expired)
	 * puts a new pair in use */
	atomic_store(&sc.fail, false);
	t0 = bc_creds_now_ms();
	while ((s = bc_creds_get(c, &why)) == NULL &&
	    bc_creds_now_ms() - t0 < 6000)
		usleep(20 * 1000);
	cr_assert_not_null(s, "no refresh within 6 s");
	cr_expect_eq(key_no(s), 2);
	bc_creds_snap_unref(s);
	cr_expect_eq(bc_creds_ready(c), 0);
	bc_creds_free(c);
}

/* Several signers and quick rotations: every snapshot is one pair
 * (key, secret and token of the same number), alive while held. */
typedef struct reader_s {
	bc_creds_t  *c;
	atomic_bool *stop;
	long         reads;
	long         bad;       /* pairs mixed up */
	long         missing;   /* expired before the refresh came */
} reader_t;

static void *
reader(void *arg)
{
	reader_t *r = arg;

	while (!atomic_load(r->stop)) {
		bc_creds_snap_t *s = bc_creds_get(r->c, NULL);
		char sk[32], tok[32];

		if (s == NULL) {
			r->missing++;
			continue;
		}
		snprintf(sk, sizeof(sk), "secret%d", key_no(s));
		snprintf(tok, sizeof(tok), "token%d", key_no(s));
		if (strcmp(s->secret_key, sk) != 0 ||
		    strcmp(s->session_token, tok) != 0)
			r->bad++;
		bc_creds_snap_unref(s);
		r->reads++;
		if (r->reads % 64 == 0)
			usleep(100);   /* let the refresher run on 2 cores */
	}
	return NULL;
}

LTest(provider, signers_see_consistent_pairs)
{
	script_t sc = { .life_ms = 200 };   /* refreshed every 150 ms */
	bc_creds_t *c;
	pthread_t t[4];
	reader_t r[4];
	atomic_bool stop = false;
	char err[300];

	cr_assert_eq(bc_creds_new_fetcher(BC_CREDS_ECS, script_fetch, &sc, &c,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bc_creds_start(c), 0);
	for (int i = 0; i < 4; i++) {
		r[i] = (reader_t){ c, &stop, 0, 0, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, reader, &r[i]), 0);
	}
	usleep(1000 * 1000);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(r[i].bad, 0, "reader %d: %ld bad of %ld", i,
		    r[i].bad, r[i].reads);
		cr_expect_eq(r[i].missing, 0, "reader %d: %ld missing", i,
		    r[i].missing);
		cr_expect_gt(r[i].reads, 100);
	}
	cr_expect_geq(atomic_load(&sc.n), 5, "rotations: %d",
	    atomic_load(&sc.n));
	bc_creds_free(c);
}
