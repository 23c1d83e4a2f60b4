/* test_prefetch_jobs.c — the jobs registry (prefetch_jobs.h): plans by
 * epoch, cursors, tolerance of out-of-order reads, next uses, windows,
 * eviction, and concurrent recording. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "prefetch/prefetch_jobs.h"
#include "stats/stats.h"
#include "util/util_buf.h"
#include "util/util_error.h"

/* a plan of keys prefix0..prefix(n-1), in order */
static bc_plan_t *
plan_seq(const char *prefix, unsigned n)
{
	bc_buf_t b = BC_BUF_INIT;
	bc_plan_t *p = NULL;
	char err[128];

	for (unsigned i = 0; i < n; i++)
		bc_buf_printf(&b, "%s%u\n", prefix, i);
	cr_assert_eq(bc_plan_parse(b.data, b.len, &p, err, sizeof(err)), 0);
	bc_buf_fini(&b);
	return p;
}

static bc_plan_t *
plan_of(const char *body)
{
	bc_plan_t *p = NULL;
	char err[128];

	cr_assert_eq(bc_plan_parse(body, strlen(body), &p, err, sizeof(err)),
	    0);
	return p;
}

static bc_job_info_t
info(bc_jobs_t *jobs, const char *id)
{
	bc_job_info_t in;

	cr_assert_eq(bc_jobs_info(jobs, id, &in), 0);
	return in;
}

LTest(jobs, put_epochs_default_and_explicit)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	uint32_t e, five = 5, three = 3, nine = 9;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL, plan_seq("k", 10),
	    &e), 0);
	cr_assert_eq(e, 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL, plan_seq("k", 10),
	    &e), 0);
	cr_assert_eq(e, 1);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", &five,
	    plan_seq("k", 10), &e), 0);
	cr_assert_eq(e, 5);
	cr_assert_eq(info(jobs, "j1").n_epochs, 3);
	/* a fourth later epoch does not fit; an older one is refused */
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", &nine,
	    plan_seq("k", 10), &e), BC_E2BIG);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", &three,
	    plan_seq("k", 10), &e), BC_E2BIG);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j2", NULL, "b", &five,
	    plan_seq("k", 10), &e), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j2", NULL, "b", &three,
	    plan_seq("k", 10), &e), BC_EINVAL);
	/* bad id or bucket */
	cr_assert_eq(bc_jobs_put_plan(jobs, "bad id", NULL, "b", NULL,
	    plan_seq("k", 1), &e), BC_EINVAL);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j3", NULL, "_b", NULL,
	    plan_seq("k", 1), &e), BC_EINVAL);
	cr_assert_eq(bc_jobs_count(jobs), 2);
	cr_assert_eq(bc_jobs_delete(jobs, "j2", NULL), 0);
	cr_assert_eq(bc_jobs_delete(jobs, "j2", NULL), BC_ENOENT);
	cr_assert_eq(bc_jobs_count(jobs), 1);
	bc_jobs_free(jobs);
}

LTest(jobs, cursor_in_order_and_tolerant)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_job_info_t in;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_seq("k", 10000), NULL), 0);
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k0", NULL));
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k1", NULL));
	cr_assert_eq(info(jobs, "j").cursor, 2);
	/* a worker ahead: the cursor jumps past it */
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k5", NULL));
	cr_assert_eq(info(jobs, "j").cursor, 6);
	cr_assert_eq(info(jobs, "j").low, 2);
	/* the ones it skipped arrive later (other workers): read, due */
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k3", NULL));
	in = info(jobs, "j");
	cr_assert_eq(in.cursor, 6);
	cr_assert_eq(in.low, 2);
	cr_assert_eq(in.out_of_order, 0);
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k2", NULL));
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k4", NULL));
	cr_assert_eq(info(jobs, "j").low, 6);
	/* read again (a retry): behind, tolerated */
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k3", NULL));
	cr_assert_eq(info(jobs, "j").out_of_order, 1);
	/* too far ahead: not followed */
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "k9000", NULL));
	cr_assert_eq(info(jobs, "j").cursor, 6);
	cr_assert_eq(info(jobs, "j").out_of_order, 2);
	/* not in the plan, another bucket */
	cr_assert(bc_jobs_record(jobs, "j", NULL, "b", "zzz", NULL));
	cr_assert(bc_jobs_record(jobs, "j", NULL, "other", "k6", NULL));
	in = info(jobs, "j");
	cr_assert_eq(in.cursor, 6);
	cr_assert_eq(in.out_of_plan, 2);
	cr_assert_eq(in.reads, 10);
	/* unknown job: nothing recorded */
	cr_assert(!bc_jobs_record(jobs, "nobody", NULL, "b", "k6", NULL));
	cr_assert_eq(bc_jobs_count(jobs), 1);
	bc_jobs_free(jobs);
}

LTest(jobs, epochs_roll_over)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_job_info_t in;

	/* epoch 0: a b c d; epoch 1: d c b a (every key in both) */
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_of("a\nb\nc\nd\n"), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_of("d\nc\nb\na\n"), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "a", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "b", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "c", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "d", NULL);
	in = info(jobs, "j");
	cr_assert_eq(in.epoch, 1);
	cr_assert_eq(in.cursor, 0);
	cr_assert_eq(in.n_epochs, 1);
	bc_jobs_record(jobs, "j", NULL, "b", "d", NULL);
	cr_assert_eq(info(jobs, "j").cursor, 1);
	bc_jobs_free(jobs);
}

LTest(jobs, next_epoch_started_early)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_job_info_t in;

	/* drop_last: the last key of epoch 0 is never read */
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_of("a\nb\nc\nd\ne\n"), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_of("b\ne\na\nd\nc\n"), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "a", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "b", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "d", NULL);
	in = info(jobs, "j");
	cr_assert_eq(in.epoch, 0);
	cr_assert_eq(in.cursor, 4);
	cr_assert_eq(in.low, 2);
	/* "c" straggles (another worker): read, due */
	bc_jobs_record(jobs, "j", NULL, "b", "c", NULL);
	in = info(jobs, "j");
	cr_assert_eq(in.epoch, 0);
	cr_assert_eq(in.cursor, 4);
	cr_assert_eq(in.low, 4);
	cr_assert_eq(in.out_of_order, 0);
	/* "a" read again: 4 behind, against 1 + 2 into the next epoch:
	 * the next epoch starts */
	bc_jobs_record(jobs, "j", NULL, "b", "a", NULL);
	in = info(jobs, "j");
	cr_assert_eq(in.epoch, 1);
	cr_assert_eq(in.cursor, 3);
	cr_assert_eq(in.low, 0);
	cr_assert_eq(in.out_of_order, 0);
	bc_jobs_free(jobs);
}

/* Several workers read stretches of the plan at once: the positions
 * between low and the cursor not read are due; the window hands them
 * over first, and next uses count from low. */
LTest(jobs, workers_in_parallel)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_job_key_t w[64];
	size_t k, behind = 99;
	bc_job_t *job;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_seq("k", 100), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "k0", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "k10", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "k20", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "k1", NULL);
	cr_assert_eq(info(jobs, "j").cursor, 21);
	cr_assert_eq(info(jobs, "j").low, 2);
	job = bc_jobs_get(jobs, "j");
	k = bc_jobs_window(job, 2, 64, w, NULL, &behind);
	cr_assert_eq(behind, 17, "2..9 and 11..19");
	cr_assert_eq(k, 17 + 20,
	    "ahead: at least the span's recent peak, 21 - 1 (before k1)");
	/* soonest first: each stretch's next key (2, 11, 21), then the
	 * ones after them; the longest runs last */
	cr_assert_str_eq(w[0].key, "k2");
	cr_assert_str_eq(w[1].key, "k11");
	cr_assert_str_eq(w[2].key, "k21");
	cr_assert_str_eq(w[3].key, "k3");
	cr_assert_str_eq(w[36].key, "k40");
	cr_assert_eq(behind, 17);
	bc_jobs_window_release(w, k);
	k = bc_jobs_window(job, 30, 64, w, NULL, &behind);
	cr_assert_eq(k, 17 + 30, "ahead: more when asked");
	bc_jobs_window_release(w, k);
	/* max keeps the soonest: k2 k11 k21 k3 k12 */
	k = bc_jobs_window(job, 2, 5, w, NULL, &behind);
	cr_assert_eq(k, 5);
	cr_assert_eq(behind, 4);
	cr_assert_str_eq(w[4].key, "k12");
	bc_jobs_window_release(w, k);
	bc_job_unref(job);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "k5"), 3, "in 2..9");
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "k15"), 4, "in 11..19");
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "k25"), 4, "past 21");
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "k10"), BC_JOBS_NEVER);
	bc_jobs_free(jobs);
}

LTest(jobs, hinted_epoch)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	uint32_t two = 2, seven = 7;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_seq("k", 100), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", &two,
	    plan_seq("k", 100), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "k0", &seven);   /* not held */
	cr_assert_eq(info(jobs, "j").epoch, 0);
	bc_jobs_record(jobs, "j", NULL, "b", "k50", &two);
	cr_assert_eq(info(jobs, "j").epoch, 2);
	cr_assert_eq(info(jobs, "j").cursor, 51);
	bc_jobs_free(jobs);
}

LTest(jobs, next_use_over_jobs_and_epochs)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);

	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL,
	    plan_of("a\nb\nc\nd\n"), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL,
	    plan_of("e\nd\n"), NULL), 0);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "a"), 0);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "d"), 3);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "e"), 4);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "x"), BC_JOBS_NEVER);
	cr_assert_eq(bc_jobs_next_use(jobs, "other", "a"), BC_JOBS_NEVER);
	bc_jobs_record(jobs, "j1", NULL, "b", "a", NULL);
	bc_jobs_record(jobs, "j1", NULL, "b", "b", NULL);
	/* a is behind: next read in epoch 1? no: not planned there */
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "a"), BC_JOBS_NEVER);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "d"), 1);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "e"), 2);
	/* a second job reading e first */
	cr_assert_eq(bc_jobs_put_plan(jobs, "j2", NULL, "b", NULL,
	    plan_of("e\na\n"), NULL), 0);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "e"), 0);
	cr_assert_eq(bc_jobs_next_use(jobs, "b", "a"), 1);
	bc_jobs_free(jobs);
}

/* The planned policy's oracle: chunks named by bc_policy_key_hash
 * (first chunks only), next use BC_JOBS_KEY_NS per position ahead of the
 * nearest cursor, unknown for other chunks, other buckets, unplanned keys;
 * known once a plan exists. */
LTest(jobs, oracle_names_first_chunks_by_hash)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	const bc_policy_oracle_t *o = bc_jobs_oracle(jobs);
	uint64_t now = 1000000000ull;

	cr_assert_not(o->known(o->arg));
	cr_assert_eq(o->next_use(o->arg, bc_policy_key_hash("b", "a", 0), now),
	    UINT64_MAX);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL,
	    plan_of("a\nb\nc\nd\nb\n"), NULL), 0);
	cr_assert(o->known(o->arg));
	cr_assert_eq(o->next_use(o->arg, bc_policy_key_hash("b", "c", 0), now),
	    now + 2 * BC_JOBS_KEY_NS);
	cr_assert_eq(o->next_use(o->arg, bc_policy_key_hash("b", "c", 1), now),
	    UINT64_MAX, "only first chunks are named by a plan");
	cr_assert_eq(o->next_use(o->arg, bc_policy_key_hash("x", "c", 0), now),
	    UINT64_MAX, "another bucket");
	cr_assert_eq(o->next_use(o->arg, bc_policy_key_hash("b", "z", 0), now),
	    UINT64_MAX, "not planned");
	bc_jobs_record(jobs, "j1", NULL, "b", "a", NULL);
	bc_jobs_record(jobs, "j1", NULL, "b", "b", NULL);
	bc_jobs_record(jobs, "j1", NULL, "b", "c", NULL);
	cr_assert_eq(bc_jobs_next_use_hash(jobs, bc_policy_key_hash("b", "b",
	    0)), 1, "b's next occurrence, after the cursor");
	cr_assert_eq(bc_jobs_next_use_hash(jobs, bc_policy_key_hash("b", "a",
	    0)), BC_JOBS_NEVER);
	bc_jobs_free(jobs);
}

LTest(jobs, window_runs_into_next_epoch)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_job_key_t w[8];
	char bucket[256];
	bc_job_t *job;
	size_t k;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "bk", NULL,
	    plan_of("a\nb\nc\n"), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "bk", NULL,
	    plan_of("x\ny\n"), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "bk", "a", NULL);
	cr_assert_null(bc_jobs_get(jobs, "nobody"));
	job = bc_jobs_get(jobs, "j");
	cr_assert_not_null(job);
	k = bc_jobs_window(job, 3, 8, w, bucket, NULL);
	cr_assert_eq(k, 3);
	cr_assert_str_eq(bucket, "bk");
	cr_assert_str_eq(w[0].key, "b");
	cr_assert_eq(w[0].pos, 1);
	cr_assert_str_eq(w[2].key, "x");
	cr_assert_eq(w[2].epoch, 1);
	cr_assert_eq(w[2].len, 1);
	/* the plan outlives its job's deletion while the window holds it */
	cr_assert_eq(bc_jobs_delete(jobs, "j", NULL), 0);
	cr_assert(!bc_job_live(job));
	cr_assert_str_eq(w[1].key, "c");
	bc_jobs_window_release(w, k);
	cr_assert_eq(bc_jobs_window(job, 8, 8, w, NULL, NULL), 0);
	bc_job_unref(job);
	bc_jobs_free(jobs);
}

LTest(jobs, replace_resets_cursor)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	uint32_t zero = 0;

	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_seq("k", 10), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "k3", NULL);
	cr_assert_eq(info(jobs, "j").cursor, 4);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", &zero,
	    plan_seq("n", 20), NULL), 0);
	cr_assert_eq(info(jobs, "j").cursor, 0);
	cr_assert_eq(info(jobs, "j").plan_len, 20);
	/* another bucket replaces every plan */
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "c", NULL,
	    plan_seq("m", 5), NULL), 0);
	cr_assert_str_eq(info(jobs, "j").bucket, "c");
	cr_assert_eq(info(jobs, "j").n_epochs, 1);
	cr_assert_eq(info(jobs, "j").plan_len, 5);
	bc_jobs_free(jobs);
}

LTest(jobs, eviction_by_count_and_bytes)
{
	bc_jobs_t *jobs = bc_jobs_new(3, 0, 1);
	bc_jobs_t *small;
	bc_plan_t *p;
	size_t pb;

	bc_jobs_put_plan(jobs, "a", NULL, "b", NULL, plan_seq("k", 4), NULL);
	bc_jobs_put_plan(jobs, "b", NULL, "b", NULL, plan_seq("k", 4), NULL);
	bc_jobs_put_plan(jobs, "c", NULL, "b", NULL, plan_seq("k", 4), NULL);
	/* a is touched: b is now idle the longest */
	cr_assert(bc_jobs_record(jobs, "a", NULL, "b", "k0", NULL));
	cr_assert_eq(bc_jobs_put_plan(jobs, "d", NULL, "b", NULL, plan_seq("k", 4),
	    NULL), 0);
	cr_assert_eq(bc_jobs_count(jobs), 3);
	cr_assert_eq(bc_jobs_info(jobs, "b", &(bc_job_info_t){ 0 }),
	    BC_ENOENT);
	cr_assert_eq(bc_jobs_info(jobs, "a", &(bc_job_info_t){ 0 }), 0);
	bc_jobs_free(jobs);

	p = plan_seq("k", 1000);
	cr_assert_eq(bc_plan_index_hashes(p, "b"), 0);   /* as put_plan does */
	pb = bc_plan_memory(p);
	small = bc_jobs_new(0, pb * 2 + pb / 2, 1);
	cr_assert_eq(bc_jobs_put_plan(small, "a", NULL, "b", NULL, p, NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(small, "b", NULL, "b", NULL,
	    plan_seq("k", 1000), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(small, "c", NULL, "b", NULL,
	    plan_seq("k", 1000), NULL), 0);
	cr_assert_eq(bc_jobs_count(small), 2);
	cr_assert_eq(bc_jobs_info(small, "a", &(bc_job_info_t){ 0 }),
	    BC_ENOENT);
	/* a plan bigger than the whole bound */
	cr_assert_eq(bc_jobs_put_plan(small, "d", NULL, "b", NULL,
	    plan_seq("k", 3000), NULL), BC_ENOSPC);
	bc_jobs_free(small);
}

/* gauge k of job's per-job stats */
static uint64_t
gauge(const char *job, bc_jstat_t k)
{
	uint64_t v[BC_JSTAT__COUNT];
	double rate;

	cr_assert(bc_stats_job_get(job, v, &rate), "%s has stats", job);
	return v[k];
}

/* A job's epoch, cursor and plan length follow it into its per-job
 * stats: on a plan, on each read, on an epoch's end, and at 0 once the
 * job ended. */
LTest(jobs, position_mirrored_in_stats)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	uint32_t e = 5;

	bc_stats_reset();
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", &e,
	    plan_of("a\nb\nc\n"), NULL), 0);
	cr_assert_eq(gauge("j", BC_JSTAT_epoch), 5);
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 0);
	cr_assert_eq(gauge("j", BC_JSTAT_plan_keys), 3);
	cr_assert_eq(bc_jobs_put_plan(jobs, "j", NULL, "b", NULL,
	    plan_of("c\nb\na\nd\n"), NULL), 0);
	bc_jobs_record(jobs, "j", NULL, "b", "a", NULL);
	bc_jobs_record(jobs, "j", NULL, "b", "b", NULL);
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 2);
	bc_jobs_record(jobs, "j", NULL, "b", "a", NULL);   /* behind: no move */
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 2);
	bc_jobs_record(jobs, "j", NULL, "b", "c", NULL);   /* epoch 5 read through */
	cr_assert_eq(gauge("j", BC_JSTAT_epoch), 6);
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 0);
	cr_assert_eq(gauge("j", BC_JSTAT_plan_keys), 4);
	bc_jobs_record(jobs, "j", NULL, "b", "c", NULL);
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 1);
	cr_assert_eq(gauge("j", BC_JSTAT_requests), 0,
	    "the registry sets gauges only");
	cr_assert_eq(bc_jobs_delete(jobs, "j", NULL), 0);
	cr_assert_eq(gauge("j", BC_JSTAT_cursor), 0);
	cr_assert_eq(gauge("j", BC_JSTAT_plan_keys), 0, "the job ended");
	bc_jobs_free(jobs);
}

LTest(jobs, json)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	bc_buf_t b = BC_BUF_INIT;

	cr_assert_eq(bc_jobs_json(jobs, NULL, NULL, &b), 0);
	cr_assert_str_eq(b.data, "{\"jobs\": []}\n");
	bc_buf_reset(&b);
	bc_jobs_put_plan(jobs, "j1", NULL, "bk", NULL, plan_seq("k", 4), NULL);
	bc_jobs_record(jobs, "j1", NULL, "bk", "k1", NULL);
	bc_stats_job_id_add(bc_stats_job_id("j1"), BC_JSTAT_prefetch_used, 3);
	cr_assert_eq(bc_jobs_json(jobs, "j1", NULL, &b), 0);
	cr_assert_not_null(strstr(b.data, "\"id\": \"j1\", \"bucket\": \"bk\", "
	    "\"owner\": null, \"epoch\": 0, \"cursor\": 2, \"plan_keys\": 4, \"epochs\": [0], "
	    "\"reads\": 1, \"out_of_order\": 0, \"out_of_plan\": 0"), "%s",
	    b.data);
	/* then its per-job stats */
	cr_assert_not_null(strstr(b.data, "\"prefetch_used\": 3, "), "%s",
	    b.data);
	cr_assert_not_null(strstr(b.data, "\"prefetch_wasted\": 0, "), "%s",
	    b.data);
	cr_assert_not_null(strstr(b.data, "\"rate_bytes_per_second\": 0}\n"),
	    "%s", b.data);
	cr_assert_eq(bc_jobs_json(jobs, "nope", NULL, &b), BC_ENOENT);
	bc_buf_reset(&b);
	cr_assert_eq(bc_jobs_json(jobs, NULL, NULL, &b), 0);
	cr_assert_eq(strncmp(b.data, "{\"jobs\": [{\"id\": \"j1\"", 21), 0,
	    "%s", b.data);
	bc_buf_fini(&b);
	bc_jobs_free(jobs);
}

/* Owners (prefetch_jobs.h): a key plans, reads, lists and ends only its
 * own jobs and the operator's it may read; the operator plans and ends
 * any. */
LTest(jobs, owners)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 2);
	bc_buf_t b = BC_BUF_INIT;
	uint32_t e = 9;

	cr_assert_eq(bc_jobs_put_plan(jobs, "a1", "AK", "bk", NULL,
	    plan_seq("k", 4), &e), 0);
	cr_assert_str_eq(info(jobs, "a1").owner, "AK");
	/* another key may not plan it, nor end it; the operator may */
	cr_assert_eq(bc_jobs_put_plan(jobs, "a1", "BK", "bk", NULL,
	    plan_seq("x", 2), NULL), BC_EACCES);
	cr_assert_eq(bc_jobs_delete(jobs, "a1", "BK"), BC_EACCES);
	cr_assert_eq(bc_jobs_put_plan(jobs, "a1", NULL, "bk", NULL,
	    plan_seq("k", 4), &e), 0);
	cr_assert_eq(e, 1);
	cr_assert_str_eq(info(jobs, "a1").owner, "AK", "still AK's");
	/* an operator's job takes plans from the operator only */
	cr_assert_eq(bc_jobs_put_plan(jobs, "op", NULL, "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "op", "AK", "bk", NULL,
	    plan_seq("k", 4), NULL), BC_EACCES);
	/* reads: the owner's count, another's do not; anyone's count for
	 * the operator's job */
	cr_assert(bc_jobs_may_use(jobs, "a1", "AK"));
	cr_assert_not(bc_jobs_may_use(jobs, "a1", "BK"));
	cr_assert_not(bc_jobs_may_use(jobs, "a1", NULL));
	cr_assert(bc_jobs_may_use(jobs, "op", NULL));
	cr_assert(bc_jobs_may_use(jobs, "none", "BK"));
	cr_assert_not(bc_jobs_record(jobs, "a1", "BK", "bk", "k0", NULL));
	cr_assert_not(bc_jobs_record(jobs, "a1", NULL, "bk", "k0", NULL));
	cr_assert_eq(info(jobs, "a1").reads, 0);
	cr_assert(bc_jobs_record(jobs, "a1", "AK", "bk", "k0", NULL));
	cr_assert(bc_jobs_record(jobs, "op", "BK", "bk", "k0", NULL));
	cr_assert_eq(info(jobs, "a1").reads, 1);
	/* listing by owner */
	cr_assert_eq(bc_jobs_json(jobs, NULL, "BK", &b), 0);
	cr_assert_str_eq(b.data, "{\"jobs\": []}\n");
	bc_buf_reset(&b);
	cr_assert_eq(bc_jobs_json(jobs, NULL, "AK", &b), 0);
	cr_assert_not_null(strstr(b.data, "\"id\": \"a1\""), "%s", b.data);
	cr_assert_null(strstr(b.data, "\"id\": \"op\""), "%s", b.data);
	cr_assert_not_null(strstr(b.data, "\"owner\": \"AK\""), "%s", b.data);
	bc_buf_reset(&b);
	cr_assert_eq(bc_jobs_json(jobs, NULL, "", &b), 0);
	cr_assert_not_null(strstr(b.data, "\"id\": \"op\""), "%s", b.data);
	cr_assert_null(strstr(b.data, "\"id\": \"a1\""), "%s", b.data);
	/* the owner ends its job */
	cr_assert_eq(bc_jobs_delete(jobs, "a1", "AK"), 0);
	cr_assert_eq(bc_jobs_delete(jobs, "a1", "AK"), BC_ENOENT);
	cr_assert_eq(bc_jobs_delete(jobs, "op", NULL), 0);
	bc_buf_fini(&b);
	bc_jobs_free(jobs);
}

/* A key's jobs and plan bytes stay within its share (max / owners):
 * 10,000 jobs from one key evict its own, never another key's or the
 * operator's; the operator's make room from anyone's. */
LTest(jobs, owner_shares)
{
	bc_jobs_t *jobs = bc_jobs_new(8, 0, 2);   /* 4 jobs a key */
	char id[32];

	cr_assert_eq(bc_jobs_put_plan(jobs, "b-job", "BK", "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "op-job", NULL, "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	for (unsigned i = 0; i < 10000; i++) {
		snprintf(id, sizeof(id), "a-%u", i);
		cr_assert_eq(bc_jobs_put_plan(jobs, id, "AK", "bk", NULL,
		    plan_seq("k", 2), NULL), 0, "%s", id);
	}
	cr_assert_eq(bc_jobs_count(jobs), 6, "BK's, the operator's, AK's 4");
	cr_assert_str_eq(info(jobs, "b-job").owner, "BK");
	cr_assert_str_eq(info(jobs, "op-job").owner, "");
	cr_assert_str_eq(info(jobs, "a-9999").owner, "AK");
	cr_assert_str_eq(info(jobs, "a-9996").owner, "AK");
	/* the operator fills the rest, then evicts the idle longest */
	cr_assert_eq(bc_jobs_put_plan(jobs, "op2", NULL, "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "op3", NULL, "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "op4", NULL, "bk", NULL,
	    plan_seq("k", 4), NULL), 0);
	cr_assert_eq(bc_jobs_count(jobs), 8);
	{
		bc_job_info_t in;

		cr_assert_eq(bc_jobs_info(jobs, "b-job", &in), BC_ENOENT,
		    "the operator evicted the job idle the longest");
	}
	/* AK, with the registry full, evicts only its own */
	cr_assert_eq(bc_jobs_put_plan(jobs, "a-x", "AK", "bk", NULL,
	    plan_seq("k", 2), NULL), 0);
	cr_assert_eq(bc_jobs_count(jobs), 8);
	cr_assert_str_eq(info(jobs, "op-job").owner, "");
	cr_assert_str_eq(info(jobs, "op4").owner, "");
	bc_jobs_free(jobs);
}

/* Bytes: a key's plans stay within its share of max_bytes; one plan over
 * the share is refused (BC_ENOSPC) and evicts nothing. */
LTest(jobs, owner_byte_share)
{
	bc_plan_t *p = plan_seq("key-", 64);
	size_t one;
	bc_jobs_t *jobs;

	cr_assert_eq(bc_plan_index_hashes(p, "bk"), 0);   /* as put does */
	one = bc_plan_memory(p);
	jobs = bc_jobs_new(0, 4 * one, 2);   /* 2 plans a key */
	bc_plan_unref(p);
	cr_assert_eq(bc_jobs_put_plan(jobs, "b", "BK", "bk", NULL,
	    plan_seq("key-", 64), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "a1", "AK", "bk", NULL,
	    plan_seq("key-", 64), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "a2", "AK", "bk", NULL,
	    plan_seq("key-", 64), NULL), 0);
	cr_assert_eq(bc_jobs_put_plan(jobs, "a3", "AK", "bk", NULL,
	    plan_seq("key-", 64), NULL), 0);
	cr_assert_eq(bc_jobs_count(jobs), 3, "AK's third evicted its first");
	cr_assert_eq(info(jobs, "b").owner[0], 'B');
	cr_assert_eq(bc_jobs_put_plan(jobs, "big", "AK", "bk", NULL,
	    plan_seq("key-", 256), NULL), BC_ENOSPC);
	cr_assert_eq(bc_jobs_count(jobs), 3, "a refused plan evicts nothing");
	bc_jobs_free(jobs);
}

/* Plans being received are charged apart, within max_bytes. */
LTest(jobs, build_charge)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 1000, 1);

	cr_assert_eq(bc_jobs_build_charge(jobs, 600), 0);
	cr_assert_eq(bc_jobs_build_charge(jobs, 600), BC_ENOSPC);
	cr_assert_eq(bc_jobs_build_charge(jobs, 400), 0);
	cr_assert_eq(bc_jobs_build_charge(jobs, -1000), 0);
	cr_assert_eq(bc_jobs_build_charge(jobs, 1000), 0);
	cr_assert_eq(bc_jobs_build_charge(jobs, -1000), 0);
	bc_jobs_free(jobs);
}

/* Workers record GETs of two jobs while a reader takes windows and next
 * uses: every read in order moves its job's cursor exactly once. */
typedef struct {
	bc_jobs_t  *jobs;
	const char *id;
	unsigned    n;
} worker_t;

static void *
worker(void *arg)
{
	worker_t *w = arg;
	char key[32];

	for (unsigned i = 0; i < w->n; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		bc_jobs_record(w->jobs, w->id, NULL, "b", key, NULL);
	}
	return NULL;
}

static void *
reader(void *arg)
{
	worker_t *w = arg;
	bc_job_key_t win[16];

	for (unsigned i = 0; i < w->n / 4; i++) {
		bc_job_t *job = bc_jobs_get(w->jobs, "j1");
		size_t k = bc_jobs_window(job, 16, 16, win, NULL, NULL);

		for (size_t j = 1; j < k; j++)
			cr_assert_eq(win[j].pos, win[j - 1].pos + 1);
		bc_jobs_window_release(win, k);
		bc_job_unref(job);
		(void)bc_jobs_next_use(w->jobs, "b", "k7");
	}
	return NULL;
}

LTest(jobs, concurrent)
{
	bc_jobs_t *jobs = bc_jobs_new(0, 0, 1);
	worker_t w1 = { jobs, "j1", 20000 }, w2 = { jobs, "j2", 20000 };
	pthread_t t[3];

	bc_jobs_put_plan(jobs, "j1", NULL, "b", NULL, plan_seq("k", 20000), NULL);
	bc_jobs_put_plan(jobs, "j2", NULL, "b", NULL, plan_seq("k", 20000), NULL);
	pthread_create(&t[0], NULL, worker, &w1);
	pthread_create(&t[1], NULL, worker, &w2);
	pthread_create(&t[2], NULL, reader, &w1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(info(jobs, "j1").cursor, 20000);
	cr_assert_eq(info(jobs, "j2").cursor, 20000);
	cr_assert_eq(info(jobs, "j2").reads, 20000);
	cr_assert_eq(info(jobs, "j2").out_of_order, 0);
	bc_jobs_free(jobs);
}
