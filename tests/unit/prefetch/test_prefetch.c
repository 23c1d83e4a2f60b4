/*
 * test_prefetch.c — the prefetcher (prefetch.h) over a real cache and the
 * in-process fake origin (tests/unit/cache/fake_origin.h): a job's wanted
 * keys are fetched in order, class prefetch, within the concurrency
 * budget and the window; read keys leave the list and open the window
 * further; the window follows the job's per-job stats (rate, mean object
 * size, on a clock the test drives); the byte budget stops it; the timer
 * runs it on the loop.
 * Ticks are run by hand (no timer) except in the timer test; the fake
 * origin's gate holds fills so "running" is a state the test controls.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"
#include "../cache/fake_origin.h"

#include "cache/cache.h"
#include "config/config.h"
#include "loop/loop.h"
#include "prefetch/prefetch.h"
#include "stats/stats.h"
#include "util/util_time.h"

#define NKEYS 12
#define OBJ   1000

static bc_config_t    cfg;
static bc_loop_t     *loop;
static fake_origin_t *fo;
static bc_cache_t    *cache;
static char           names[NKEYS][16];
static const char    *keys[NKEYS];

static void
start(void)
{
	static uint8_t data[OBJ];
	bc_cache_opts_t co;

	memset(data, 'x', sizeof(data));
	cr_assert_eq(bc_config_init(&cfg), 0);
	cfg.chunk_size = 4096;
	cfg.mem_size = 16 * 1024 * 1024;
	loop = bc_loop_new(NULL);
	cr_assert_not_null(loop);
	cr_assert_eq(bc_loop_start(loop), 0);
	fo = fake_origin_new(loop);
	cr_assert_not_null(fo);
	memset(&co, 0, sizeof(co));
	co.cfg = &cfg;
	co.origin = fake_origin_base(fo);
	co.loop = loop;
	cr_assert_eq(bc_cache_new(&co, &cache), 0);
	for (int i = 0; i < NKEYS; i++) {
		char etag[32];

		snprintf(names[i], sizeof(names[i]), "k%02d", i);
		snprintf(etag, sizeof(etag), "\"e%02d\"", i);
		keys[i] = names[i];
		fake_origin_put(fo, "ds", names[i], data, sizeof(data), etag,
		    "Wed, 21 Oct 2015 07:28:00 GMT", NULL);
	}
}

static void
stop(bc_prefetch_t *p)
{
	fake_origin_gate(fo, false);
	bc_prefetch_free(p);
	bc_loop_stop(loop, fake_origin_stop_fn, fo);
	bc_cache_free(cache);
	bc_origin_free(fake_origin_base(fo));
	bc_loop_free(loop);
	bc_config_fini(&cfg);
}

static bc_prefetch_t *
prefetcher(unsigned concurrency, uint64_t budget, bool timer)
{
	bc_prefetch_opts_t o = { cache, timer ? loop : NULL, budget,
	    concurrency, 20000 };
	bc_prefetch_t *p = bc_prefetch_new(&o);

	cr_assert_not_null(p);
	return p;
}

/* the key of the i-th logged GET */
static const char *
logged_key(unsigned i, fake_req_t *r)
{
	cr_assert(fake_origin_log(fo, i, r));
	return r->key;
}

/* counter k of job's per-job stats */
static uint64_t
job_stat(const char *job, bc_jstat_t k)
{
	uint64_t v[BC_JSTAT__COUNT];
	double rate;

	cr_assert(bc_stats_job_get(job, v, &rate), "%s has stats", job);
	return v[k];
}

TestSuite(prefetch, .timeout = 60);

LTest(prefetch, wanted_keys_come_in_order_within_the_budgets)
{
	bc_prefetch_t *p;
	fake_req_t r;

	start();
	p = prefetcher(2, 1 << 30, false);
	bc_prefetch_want(p, "job1", "ds", keys, NKEYS, 0, false);
	cr_assert_eq(bc_prefetch_window(p, "job1"), BC_PREFETCH_MIN_WINDOW,
	    "no rate known yet: the smallest window");
	fake_origin_gate(fo, true);
	cr_assert_eq(bc_prefetch_tick(p), 2, "the concurrency budget is 2");
	cr_assert(fake_origin_wait_held(fo, 2, 5000));
	cr_assert_eq(bc_prefetch_tick(p), 0, "both slots are busy");
	fake_origin_gate(fo, false);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(bc_prefetch_tick(p), 2);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(bc_prefetch_tick(p), 0, "the window (4 keys) is done");
	cr_assert_eq(fake_origin_nlog(fo), 4);
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_str_eq(logged_key(i, &r), keys[i]);
		cr_assert_eq(r.cls, BC_ORIGIN_PREFETCH);
	}
	cr_assert_eq(bc_stats_get(BC_STAT_prefetch_issued), 4);
	cr_assert_eq(bc_stats_get(BC_STAT_prefetch_unread_bytes), 4 * OBJ);
	cr_assert_eq(job_stat("job1", BC_JSTAT_prefetch_issued), 4,
	    "counted for the job that wanted them");
	cr_assert_eq(job_stat("job1", BC_JSTAT_prefetch_bytes), 4 * OBJ);

	/* the job reads two keys: the window moves on by two */
	bc_prefetch_read(p, "job1", "ds", keys[0]);
	bc_prefetch_read(p, "job1", "ds", keys[1]);
	cr_assert_eq(bc_prefetch_tick(p), 2);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(bc_prefetch_tick(p), 0);
	cr_assert_eq(fake_origin_nlog(fo), 6);
	cr_assert_str_eq(logged_key(4, &r), keys[4]);
	cr_assert_str_eq(logged_key(5, &r), keys[5]);
	stop(p);
}

/* What is prefetched and unread counts against the byte budget. The
 * first four are held at the origin until the tick has returned: a fill
 * that completed during the tick would count as unread and stop it
 * early (it did on a loaded machine: the budget is checked per issue). */
LTest(prefetch, the_byte_budget_stops_it)
{
	bc_prefetch_t *p;

	start();
	p = prefetcher(8, 2 * OBJ, false);
	bc_prefetch_want(p, "job1", "ds", keys, NKEYS, 0, false);
	fake_origin_gate(fo, true);
	cr_assert_eq(bc_prefetch_tick(p), 4, "nothing unread yet");
	cr_assert(fake_origin_wait_held(fo, 4, 5000));
	fake_origin_gate(fo, false);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	bc_prefetch_read(p, "job1", "ds", keys[0]);
	cr_assert_eq(bc_prefetch_tick(p), 0, "4 objects unread: over budget");
	cr_assert_eq(fake_origin_nlog(fo), 4);
	stop(p);
}

/* The per-job stats' clock (stats.h), driven by the tests. */
static _Atomic uint64_t fake_now = 1000000000ull;

static uint64_t
fake_clock(void)
{
	return atomic_load(&fake_now);
}

/* job reads n objects of size bytes, one every step_ns, accounted in its
 * per-job stats as the object handler does. */
static void
job_reads(const char *job, unsigned n, uint64_t size, uint64_t step_ns)
{
	uint64_t d[BC_JSTAT__COUNT] = { 0 };

	d[BC_JSTAT_requests] = 1;
	d[BC_JSTAT_bytes] = size;
	for (unsigned i = 0; i < n; i++) {
		atomic_fetch_add(&fake_now, step_ns);
		bc_stats_job_add(job, d);
	}
}

/* The window a job's stats give: rate x 20 ms (the latency assumed before
 * any fill) x 2, in objects of its mean size. */
static double
stats_window(const char *job)
{
	uint64_t v[BC_JSTAT__COUNT];
	double rate;

	cr_assert(bc_stats_job_get(job, v, &rate));
	return rate * 0.020 * 2 / ((double)v[BC_JSTAT_bytes] /
	    (double)v[BC_JSTAT_requests]);
}

/* The window comes from the job's per-job stats: its rate and its mean
 * object size (bytes / requests). 1 MB/s in 1,000-byte objects is 40
 * keys; the same rate in 4,000-byte objects is 10; a job gone idle 10 s
 * reads at a sixth of that and its window shrinks. A want replaces the
 * list. */
LTest(prefetch, the_window_follows_the_jobs_stats)
{
	bc_prefetch_t *p;
	fake_req_t r;
	size_t w1, w2, w3;

	start();
	bc_stats_set_clock(fake_clock);
	p = prefetcher(8, 1 << 30, false);
	bc_prefetch_want(p, "job1", "ds", keys, 2, 0, false);
	bc_prefetch_want(p, "job2", "ds", keys, 2, 0, false);
	cr_assert_eq(bc_prefetch_window(p, "job1"), BC_PREFETCH_MIN_WINDOW,
	    "no stats yet: the smallest window");
	/* 2 s of reads: 1,000 bytes a millisecond */
	job_reads("job1", 2000, 1000, 1000000);
	w1 = bc_prefetch_window(p, "job1");
	cr_assert(w1 >= 38 && w1 <= 42, "1 MB/s of 1 KB objects: %zu", w1);
	cr_assert(w1 + 1 >= (size_t)stats_window("job1") &&
	    w1 <= (size_t)stats_window("job1") + 1, "%zu vs the stats' %f",
	    w1, stats_window("job1"));
	/* idle for 10 s: the stats' rate decays, the window with it */
	atomic_fetch_add(&fake_now, 10000000000ull);
	w3 = bc_prefetch_window(p, "job1");
	cr_assert(w3 >= 5 && w3 <= 8, "idle 10 s: %zu", w3);
	/* 2 s of 4,000 bytes every 4 ms: the same rate, a quarter the keys */
	job_reads("job2", 500, 4000, 4000000);
	w2 = bc_prefetch_window(p, "job2");
	cr_assert(w2 >= 9 && w2 <= 11, "1 MB/s of 4 KB objects: %zu", w2);
	cr_assert_eq(bc_prefetch_window(p, "nobody"), 0);
	/* a want replaces the list */
	bc_prefetch_want(p, "job1", "ds", keys + 6, 2, 0, false);
	cr_assert_eq(bc_prefetch_tick(p), 2 + 2, "job1's 2 keys, job2's 2");
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(fake_origin_nlog(fo), 4);
	cr_assert_str_eq(logged_key(0, &r), keys[6]);
	cr_assert_str_eq(logged_key(1, &r), keys[7]);
	bc_stats_set_clock(NULL);
	stop(p);
}

/* With a loop, the timer does the ticks. */
LTest(prefetch, the_timer_runs_it)
{
	bc_prefetch_t *p;

	start();
	p = prefetcher(8, 1 << 30, true);
	bc_prefetch_want(p, "job1", "ds", keys, 3, 0, false);
	for (int i = 0; i < 500 && fake_origin_nlog(fo) < 3; i++)
		usleep(10000);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(fake_origin_nlog(fo), 3);
	stop(p);
}

/* Keys due now (behind a plan's cursor) are issued before the window
 * ahead counts; a new list does not issue again what the old list's
 * issued head had (a held fill would be joined and counted again); a new
 * list is due once a tick. */
LTest(prefetch, due_keys_and_new_lists)
{
	bc_prefetch_t *p;
	bool           judged;

	start();
	p = prefetcher(16, 1 << 30, false);
	cr_assert(bc_prefetch_want_due(p, "job1"), "no list yet");
	/* within a tick of a list, no new one is due; judged only when the two
	 * calls were less than a tick apart (a loaded machine can stop this
	 * thread for longer; the same list again changes nothing) */
	judged = false;
	for (int a = 0; a < 50 && !judged; a++) {
		uint64_t t0 = bc_mono_ns();
		bool     due;

		bc_prefetch_want(p, "job1", "ds", keys, NKEYS, 3, false);
		due = bc_prefetch_want_due(p, "job1");
		if (bc_mono_ns() - t0 < BC_PREFETCH_TICK_MS * 1000000ull) {
			cr_assert_not(due, "within a tick");
			judged = true;
		}
	}
	cr_assert(judged, "two calls within a tick of each other");
	fake_origin_gate(fo, true);
	cr_assert_eq(bc_prefetch_tick(p), 3 + BC_PREFETCH_MIN_WINDOW);
	cr_assert(fake_origin_wait_held(fo, 3 + BC_PREFETCH_MIN_WINDOW, 5000));
	/* the same keys again, one less due: nothing is issued twice */
	bc_prefetch_want(p, "job1", "ds", keys, NKEYS, 2, false);
	cr_assert_eq(bc_prefetch_tick(p), 0);
	/* a list that moved on by two, with the same due: two more */
	bc_prefetch_want(p, "job1", "ds", keys + 2, NKEYS - 2, 3, false);
	cr_assert_eq(bc_prefetch_tick(p), 2);
	fake_origin_gate(fo, false);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	cr_assert_eq(fake_origin_nlog(fo), 3 + BC_PREFETCH_MIN_WINDOW + 2);
	usleep(BC_PREFETCH_TICK_MS * 1000 + 1000);
	cr_assert(bc_prefetch_want_due(p, "job1"), "a tick later");
	stop(p);
}
