/*
 * test_scale_est.c — scale_est.h against synthetic event streams of
 * known R, B and D: each estimate within 5 %. Time is the test's (every
 * call takes now).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "scale/scale_est.h"
#include "scale/scale_mem.h"

#define MiB ((uint64_t)1 << 20)
#define SEC 1000000000ull

static bc_scale_est_t *
est(uint64_t cs)
{
	bc_scale_est_opts_t o = { cs, 1, 0 };
	bc_scale_est_t *e = bc_scale_est_new(&o);

	cr_assert_not_null(e);
	return e;
}

static bc_scale_job_t
job(bc_scale_est_t *e, const char *id)
{
	bc_scale_job_t j[8];
	size_t n = bc_scale_est_jobs(e, j, 8);

	for (size_t i = 0; i < n; i++)
		if (strcmp(j[i].id, id) == 0)
			return j[i];
	cr_assert_fail("no job %s", id);
	return j[0];
}

static bc_scale_dataset_t
dataset(bc_scale_est_t *e, const char *name)
{
	bc_scale_dataset_t d[8];
	size_t n = bc_scale_est_datasets(e, d, 8);

	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return d[i];
	cr_assert_fail("no dataset %s", name);
	return d[0];
}

static void
within(double got, double want, double tol, const char *what)
{
	cr_assert(got >= want * (1 - tol) && got <= want * (1 + tol),
	    "%s: %.0f, want %.0f +- %.0f%%", what, got, want, tol * 100);
}

/*
 * One consumer: per object of 256 KiB it computes size/R, and every
 * other read waits 30 ms on a fill first. R = 12 MiB/s must come back,
 * though its throughput is lower.
 */
LTest(rate, a_consumer_that_stalls_still_shows_its_rate)
{
	bc_scale_est_t *e = est(MiB);
	const double R = 12.0 * MiB, size = 256 * 1024;
	uint64_t t = SEC, next_fold = t + SEC / 2;
	bc_scale_job_t j;
	char key[32];

	for (int i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "ds/k%d", i % 200);
		if (i % 2 == 1) {
			bc_scale_est_wait(e, "j", true, t);
			t += 30000000;
			bc_scale_est_wait(e, "j", false, t);
		}
		t += 200000;   /* the response itself */
		bc_scale_est_read(e, "j", 0, 0, "b", key, (uint64_t)size, 0,
		    (uint64_t)size - 1, (uint64_t)size, t);
		t += (uint64_t)(size / R * 1e9) - 200000;
		while (t >= next_fold) {
			bc_scale_est_fold(e, next_fold);
			next_fold += SEC / 2;
		}
	}
	bc_scale_est_fold(e, t);
	j = job(e, "j");
	within(j.rate, R, 0.05, "R");
	cr_assert_lt(j.throughput, 0.8 * R, "stalls show in throughput");
	within(j.wait_fraction, 0.015 / (0.015 + size / R), 0.10, "waits");
	bc_scale_est_free(e);
}

/*
 * Four loader workers, each on its own connection, each computing
 * 4 * size / R per object, half their reads waiting 40 ms on a fill:
 * their waits overlap one another's compute, and R = 64 MiB/s must come
 * back as the sum of the workers' rates.
 */
LTest(rate, four_workers_on_their_connections_sum_to_the_rate)
{
	bc_scale_est_t *e = est(MiB);
	const double R = 64.0 * MiB, size = 256 * 1024;
	const uint64_t compute = (uint64_t)(4 * size / R * 1e9);
	uint64_t next[4], start = SEC, next_fold = SEC + SEC / 2, t = 0;
	int reads[4] = { 0 }, waiting[4] = { 0 };
	char key[32];

	for (int w = 0; w < 4; w++)
		next[w] = start + (uint64_t)w * 1000000;
	for (int done = 0; done < 2400; ) {
		int w = 0;

		for (int k = 1; k < 4; k++)
			if (next[k] < next[w])
				w = k;
		t = next[w];
		while (t >= next_fold) {
			bc_scale_est_fold(e, next_fold);
			next_fold += SEC / 2;
		}
		if (reads[w] % 2 == 1 && !waiting[w]) {
			/* this read misses: it waits 40 ms first */
			waiting[w] = 1;
			bc_scale_est_wait(e, "j", true, t);
			next[w] = t + 40000000;
			continue;
		}
		if (waiting[w])
			bc_scale_est_wait(e, "j", false, t);
		snprintf(key, sizeof(key), "ds/k%d", done % 500);
		bc_scale_est_read(e, "j", (uint64_t)w + 1,
		    waiting[w] ? 40000000 : 0, "b", key, (uint64_t)size, 0,
		    (uint64_t)size - 1, (uint64_t)size, t);
		waiting[w] = 0;
		reads[w]++;
		done++;
		next[w] = t + compute;
	}
	bc_scale_est_fold(e, t);
	within(job(e, "j").rate, R, 0.05, "R of 4 workers");
	bc_scale_est_free(e);
}

/* Two workers of one job waiting at once count the time once. */
LTest(rate, overlapping_waits_count_once)
{
	bc_scale_est_t *e = est(MiB);
	uint64_t t = SEC;
	bc_scale_job_t j;

	bc_scale_est_read(e, "j", 0, 0, "b", "ds/k", MiB, 0, MiB - 1, MiB, t);
	bc_scale_est_fold(e, t);
	bc_scale_est_wait(e, "j", true, t);
	bc_scale_est_wait(e, "j", true, t + SEC / 10);
	bc_scale_est_wait(e, "j", false, t + SEC / 2);
	bc_scale_est_wait(e, "j", false, t + SEC);
	/* 1 s waiting, then 1 s reading 2 MiB */
	bc_scale_est_read(e, "j", 0, 0, "b", "ds/k2", MiB, 0, MiB - 1, MiB,
	    t + SEC + SEC / 2);
	bc_scale_est_read(e, "j", 0, 0, "b", "ds/k3", MiB, 0, MiB - 1, MiB,
	    t + 2 * SEC);
	bc_scale_est_fold(e, t + 2 * SEC);
	j = job(e, "j");
	within(j.rate, 2.0 * MiB, 0.05, "R");
	within(j.wait_fraction, 0.5, 0.05, "wait fraction");
	bc_scale_est_free(e);
}

/* A job that stops reading is idle, not slow: R stays. */
LTest(rate, an_idle_gap_does_not_lower_the_rate)
{
	bc_scale_est_t *e = est(MiB);
	uint64_t t = SEC;

	for (int i = 0; i < 100; i++, t += SEC / 10) {
		bc_scale_est_read(e, "j", 0, 0, "b", "ds/k", MiB, 0, MiB - 1, MiB,
		    t);
		bc_scale_est_fold(e, t);
	}
	within(job(e, "j").rate, 10.0 * MiB, 0.05, "R before");
	t += 120 * SEC;
	bc_scale_est_fold(e, t);
	within(job(e, "j").rate, 10.0 * MiB, 0.05, "R after 2 idle minutes");
	bc_scale_est_free(e);
}

/* The origin moves B bytes/s while busy, busy 60 % of the time. */
LTest(origin, bandwidth_is_bytes_per_busy_second)
{
	bc_scale_est_t *e = est(MiB);
	const double B = 6.0 * MiB;
	uint64_t bytes = 0, busy = 0, tt = 0, tn = 0;
	bc_scale_origin_t o;

	for (int s = 0; s < 60; s++) {
		busy += 6 * SEC / 10;
		bytes += (uint64_t)(B * 0.6);
		tt += 20 * 3000000ull;   /* 20 fills of 3 ms */
		tn += 20;
		bc_scale_est_origin_totals(e, bytes, busy, tt, tn);
		bc_scale_est_fold(e, (uint64_t)(s + 1) * SEC);
	}
	bc_scale_est_origin(e, &o);
	within(o.bandwidth, B, 0.05, "B");
	within(o.latency_s, 0.003, 0.05, "latency");
	cr_assert_eq(o.fill_bytes, bytes);
	bc_scale_est_free(e);
}

/* Objects of mixed sizes, one and several chunks, read in a shuffled
 * order epoch after epoch: D is their chunk bytes, known at the first
 * repeat. */
static void
shuffle(unsigned *v, unsigned n, unsigned seed)
{
	srand(seed);
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned k = (unsigned)rand() % (i + 1), x = v[i];

		v[i] = v[k];
		v[k] = x;
	}
}

static void
read_epochs(bc_scale_est_t *e, unsigned n, const uint64_t *size,
    int epochs, uint64_t *t)
{
	unsigned *order = malloc(n * sizeof(*order));
	char key[32];

	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	for (int ep = 0; ep < epochs; ep++) {
		shuffle(order, n, (unsigned)ep + 1);
		for (unsigned i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "ds/o%u", order[i]);
			bc_scale_est_read(e, "j", 0, 0, "b", key, size[order[i]], 0,
			    size[order[i]] - 1, size[order[i]], (*t)++);
		}
	}
	free(order);
}

LTest(size, distinct_chunk_bytes_until_the_first_repeat)
{
	const uint64_t cs = MiB;
	bc_scale_est_t *e = est(cs);
	unsigned n = 3000;
	uint64_t *size = malloc(n * sizeof(*size)), d = 0, t = SEC;
	bc_scale_dataset_t ds;

	srand(7);
	for (unsigned i = 0; i < n; i++) {
		size[i] = i % 100 == 0 ? 3 * cs + 1000 :
		    10000 + (uint64_t)(rand() % 300000);
		d += size[i];
	}
	read_epochs(e, n, size, 1, &t);
	ds = dataset(e, "b/ds/");
	cr_assert_eq(ds.source, BC_SCALE_D_READING);
	cr_assert_eq(ds.epochs, 0);
	read_epochs(e, n, size, 1, &t);
	ds = dataset(e, "b/ds/");
	cr_assert_eq(ds.source, BC_SCALE_D_EPOCH);
	cr_assert_eq(ds.epochs, 1, "one end: %u", ds.epochs);
	within((double)ds.size, (double)d, 0.001, "D");
	read_epochs(e, n, size, 2, &t);
	cr_assert_eq(dataset(e, "b/ds/").epochs, 3);
	free(size);
	bc_scale_est_free(e);
}

/* A dataset of more chunks than the set keeps: a sample, within 5 %. */
LTest(size, a_large_dataset_is_sampled)
{
	bc_scale_est_t *e = est(MiB);
	unsigned n = 200000;
	uint64_t *size = malloc(n * sizeof(*size)), d = 0, t = SEC;
	bc_scale_dataset_t ds;

	srand(11);
	for (unsigned i = 0; i < n; i++) {
		size[i] = 50000 + (uint64_t)(rand() % 200000);
		d += size[i];
	}
	read_epochs(e, n, size, 2, &t);
	ds = dataset(e, "b/ds/");
	within((double)ds.size, (double)d, 0.05, "D sampled");
	within((double)ds.chunks, (double)n, 0.05, "chunks sampled");
	cr_assert_eq(ds.epochs, 1);
	free(size);
	bc_scale_est_free(e);
}

/* Reading one object in ranges is no repeat; nor is a second job. */
LTest(size, ranges_of_one_chunk_are_no_epoch_end)
{
	bc_scale_est_t *e = est(8 * MiB);
	uint64_t t = SEC;
	char key[32];

	for (unsigned i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "ds/shard%u", i);
		for (uint64_t off = 0; off < 32 * MiB; off += MiB)
			bc_scale_est_read(e, "j", 0, 0, "b", key, 32 * MiB, off,
			    off + MiB - 1, MiB, t++);
	}
	cr_assert_eq(dataset(e, "b/ds/").epochs, 0);
	cr_assert_eq(dataset(e, "b/ds/").size, 3200 * MiB);
	bc_scale_est_free(e);
}

/* A plan gives D before the first epoch ends: its keys times the mean
 * bytes per object read so far. */
LTest(size, a_plan_gives_the_size_early)
{
	bc_scale_est_t *e = est(MiB);
	uint64_t t = SEC;
	char key[32];

	bc_scale_est_plan(e, "j", "b", "ds/o0", 1000, t);
	for (unsigned i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "ds/o%u", i);
		bc_scale_est_read(e, "j", 0, 0, "b", key, 100000, 0, 99999, 100000,
		    t++);
	}
	cr_assert_eq(dataset(e, "b/ds/").source, BC_SCALE_D_PLAN);
	within((double)dataset(e, "b/ds/").size, 1000 * 100000.0, 0.01,
	    "D from the plan");
	bc_scale_est_free(e);
}

/* Bounded: more jobs than slots push the least recently active out. */
LTest(bounds, jobs_and_datasets_are_bounded)
{
	bc_scale_est_t *e = est(MiB);
	char id[32], key[32];

	for (unsigned i = 0; i < 2 * BC_SCALE_MAX_JOBS; i++) {
		snprintf(id, sizeof(id), "job%u", i);
		snprintf(key, sizeof(key), "ds%u/k", i);
		bc_scale_est_read(e, id, 0, 0, "b", key, 1000, 0, 999, 1000, SEC + i);
	}
	{
		bc_scale_job_t *j = calloc(2 * BC_SCALE_MAX_JOBS, sizeof(*j));
		bc_scale_dataset_t d[2 * BC_SCALE_MAX_DATASETS];

		cr_assert_eq(bc_scale_est_jobs(e, j, 2 * BC_SCALE_MAX_JOBS),
		    BC_SCALE_MAX_JOBS);
		cr_assert_eq(bc_scale_est_datasets(e, d,
		    2 * BC_SCALE_MAX_DATASETS), BC_SCALE_MAX_DATASETS);
		cr_assert_str_eq(j[0].id, "job511", "newest first");
		free(j);
	}
	bc_scale_est_free(e);
}

/* ---- the default mem-max ------------------------------------------- */

static void
put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	cr_assert_not_null(fp, "%s", path);
	fputs(text, fp);
	fclose(fp);
}

LTest(mem, cgroup_limits_along_the_path)
{
	char dir[] = "/tmp/bc_scale_cgXXXXXX", p[512];
	const char *src;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "mkdir -p %s/pod/job %s/memory/x", dir, dir);
	cr_assert_eq(system(p), 0);
	snprintf(p, sizeof(p), "%s/pod/memory.max", dir);
	put_file(p, "3221225472\n");
	snprintf(p, sizeof(p), "%s/pod/job/memory.max", dir);
	put_file(p, "max\n");
	snprintf(p, sizeof(p), "%s/cg", dir);
	put_file(p, "0::/pod/job\n");
	cr_assert_eq(bc_scale_cgroup_limit(dir, p), 3221225472ull);
	/* v1 */
	snprintf(p, sizeof(p), "%s/memory/x/memory.limit_in_bytes", dir);
	put_file(p, "1073741824\n");
	snprintf(p, sizeof(p), "%s/cg", dir);
	put_file(p, "4:memory:/x\n1:cpu:/\n");
	cr_assert_eq(bc_scale_cgroup_limit(dir, p), 1073741824ull);
	put_file(p, "4:memory:/none\n");
	cr_assert_eq(bc_scale_cgroup_limit(dir, p), 0);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_assert_eq(system(p), 0);
	/* 3 GiB less a third; 512 MiB less 256; no cgroup: a quarter */
	cr_assert_eq(bc_scale_default_max(3221225472ull, 0, &src),
	    2147483648ull);
	cr_assert_str_eq(src, "cgroup");
	cr_assert_eq(bc_scale_default_max(512 * MiB, 0, &src), 256 * MiB);
	cr_assert_eq(bc_scale_default_max(0, 24576 * MiB, &src), 6144 * MiB);
	cr_assert_str_eq(src, "ram");
	cr_assert_gt(bc_scale_ram("/proc/meminfo"), 0);
}
