/*
 * test_policy_sim.c — policy/: the trace-driven simulator. Synthetic
 * traces are replayed through the real memory tier (bc_tier_mem) holding
 * real chunks (chunk/chunk.h), ordered by each policy; no HTTP, no cache.
 * Every read is a lookup; a miss makes a chunk and puts it (a refused put
 * is a read served uncached). The table of hit ratios goes to stderr.
 *
 * Workloads over N items of one dataset, all deterministic (fixed seed):
 * shuffled epochs (each item once per epoch, a new order each epoch), two
 * jobs reading the dataset in independent shuffled orders (interleaved
 * one read each), Zipf 0.9 and uniform sampling with replacement. Hit
 * ratios count the reads after the first N per job (epochs 2-4).
 *
 * The oracle stands in for the jobs' plans: it knows the trace, all of it
 * or up to the end of the epoch after the current one. Time is the read's
 * position, TICK_NS per read, on the clock of bc_policy_ctx_t.now_ns.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "chunk/chunk.h"
#include "policy/policy.h"
#include "tier/tier.h"

#define N        2000
#define EPOCHS   4
#define TICK_NS  1000000ULL       /* a read every millisecond */
#define DATA_LEN 16

typedef enum { SHUFFLED, TWO_JOBS, ZIPF, REPLACE } workload_t;
typedef enum { PLANS_NONE, PLANS_ALL, PLANS_AHEAD } plans_t;

typedef struct trace_s {
	uint32_t *item;          /* the item each read asks for */
	size_t    len;
	size_t    measure_from;  /* reads before it only warm the cache */
	unsigned  jobs;          /* reads alternate between jobs */
} trace_t;

/* ---- deterministic randomness -------------------------------------- */

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static double
rnd01(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static void
shuffle(uint32_t *a, size_t n, uint64_t *s)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t   j = rnd(s) % (i + 1);
		uint32_t t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

static void
make_trace(trace_t *t, workload_t w, uint64_t seed)
{
	uint64_t  s = seed;
	uint32_t *perm = malloc(N * sizeof(*perm));

	cr_assert_not_null(perm);
	t->jobs = w == TWO_JOBS ? 2 : 1;
	t->len = (size_t)N * EPOCHS * t->jobs;
	t->measure_from = (size_t)N * t->jobs;
	t->item = malloc(t->len * sizeof(*t->item));
	cr_assert_not_null(t->item);
	if (w == SHUFFLED || w == TWO_JOBS) {
		for (unsigned j = 0; j < t->jobs; j++)
			for (size_t e = 0; e < EPOCHS; e++) {
				for (uint32_t i = 0; i < N; i++)
					perm[i] = i;
				shuffle(perm, N, &s);
				for (size_t i = 0; i < N; i++)
					t->item[(e * N + i) * t->jobs + j] =
					    perm[i];
			}
	} else if (w == ZIPF) {
		double *cdf = malloc(N * sizeof(*cdf)), sum = 0;

		cr_assert_not_null(cdf);
		for (uint32_t i = 0; i < N; i++) {
			perm[i] = i;
			sum += 1.0 / pow(i + 1, 0.9);
			cdf[i] = sum;
		}
		shuffle(perm, N, &s);    /* popularity rank -> item */
		for (size_t r = 0; r < t->len; r++) {
			double   u = rnd01(&s) * sum;
			size_t   lo = 0, hi = N - 1;

			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (cdf[mid] < u)
					lo = mid + 1;
				else
					hi = mid;
			}
			t->item[r] = perm[lo];
		}
		free(cdf);
	} else {
		for (size_t r = 0; r < t->len; r++)
			t->item[r] = (uint32_t)(rnd(&s) % N);
	}
	free(perm);
}

/* ---- the oracle: the trace's future, as plans would tell it --------- */

typedef struct oracle_s {
	const trace_t *t;
	plans_t        plans;
	uint64_t       hash[N];       /* bc_policy_key_hash of each item */
	uint32_t       by_hash[N];    /* items sorted by hash */
	size_t        *start;         /* item i's reads: pos[start[i]..] */
	size_t        *pos;
} oracle_t;

static oracle_t *sort_ctx;

static int
by_hash_cmp(const void *a, const void *b)
{
	uint64_t x = sort_ctx->hash[*(const uint32_t *)a];
	uint64_t y = sort_ctx->hash[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

static char names[N][16];

static void
oracle_init(oracle_t *o, const trace_t *t, plans_t plans)
{
	size_t *fill;

	o->t = t;
	o->plans = plans;
	for (uint32_t i = 0; i < N; i++) {
		o->hash[i] = bc_policy_key_hash("ds", names[i], 0);
		o->by_hash[i] = i;
	}
	sort_ctx = o;
	qsort(o->by_hash, N, sizeof(o->by_hash[0]), by_hash_cmp);
	o->start = calloc(N + 1, sizeof(*o->start));
	o->pos = malloc(t->len * sizeof(*o->pos));
	fill = calloc(N, sizeof(*fill));
	cr_assert(o->start != NULL && o->pos != NULL && fill != NULL);
	for (size_t r = 0; r < t->len; r++)
		o->start[t->item[r] + 1]++;
	for (uint32_t i = 0; i < N; i++)
		o->start[i + 1] += o->start[i];
	for (size_t r = 0; r < t->len; r++) {
		uint32_t i = t->item[r];

		o->pos[o->start[i] + fill[i]++] = r;
	}
	free(fill);
}

static void
oracle_fini(oracle_t *o)
{
	free(o->start);
	free(o->pos);
}

static uint64_t
oracle_next_use(void *arg, uint64_t key, uint64_t now)
{
	oracle_t *o = arg;
	size_t    lo = 0, hi = N, r = now / TICK_NS, epoch_len;
	uint32_t  i;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (o->hash[o->by_hash[mid]] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == N || o->hash[o->by_hash[lo]] != key)
		return UINT64_MAX;
	i = o->by_hash[lo];
	lo = o->start[i];
	hi = o->start[i + 1];
	while (lo < hi) {            /* the first read after now */
		size_t mid = (lo + hi) / 2;

		if (o->pos[mid] <= r)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == o->start[i + 1])
		return UINT64_MAX;
	epoch_len = (size_t)N * o->t->jobs;
	if (o->plans == PLANS_AHEAD && o->pos[lo] / epoch_len >
	    r / epoch_len + 1)
		return UINT64_MAX;
	return o->pos[lo] * TICK_NS;
}

static bool
oracle_known(void *arg)
{
	(void)arg;
	return true;
}

/* ---- replay through the memory tier -------------------------------- */

static size_t
charge_of_one(void)
{
	bc_chunk_key_t k = { "ds", names[0], "\"e\"", 0 };
	bc_chunk_t    *c = bc_chunk_new(&k, calloc(1, DATA_LEN), DATA_LEN);
	size_t         ch;

	cr_assert_not_null(c);
	ch = bc_chunk_charge(c);
	bc_chunk_unref(c);
	return ch;
}

/* Fetch cost of an item, in microseconds: a few items are slow. */
static uint64_t
cost_of(uint32_t item)
{
	return item % 10 == 0 ? 20000 : 2000;
}

static double
replay(const trace_t *t, double c, const bc_policy_ops_t *pol,
    const bc_policy_oracle_t *orc)
{
	static const char *const jobs[] = { "job-a", "job-b" };
	bc_tier_opts_t o = { .capacity = (uint64_t)(c * N) * charge_of_one(),
	    .policy = pol, .oracle = orc };
	bc_tier_t     *tier = NULL;
	size_t         hits = 0;

	cr_assert_eq(bc_tier_mem.open(&o, &tier), 0);
	for (size_t r = 0; r < t->len; r++) {
		bc_chunk_key_t  k = { "ds", names[t->item[r]], "\"e\"", 0 };
		bc_policy_ctx_t ctx = { r * TICK_NS, jobs[r % t->jobs], "ds",
		    false };
		bc_chunk_t     *ch = bc_tier_mem.lookup(tier, &k, &ctx);

		if (ch != NULL) {
			hits += r >= t->measure_from;
		} else {
			ch = bc_chunk_new(&k, calloc(1, DATA_LEN), DATA_LEN);
			cr_assert_not_null(ch);
			ch->fetch_us = cost_of(t->item[r]);
			(void)bc_tier_mem.put(tier, ch, &ctx);
		}
		bc_chunk_unref(ch);
	}
	bc_tier_mem.close(tier);
	return (double)hits / (double)(t->len - t->measure_from);
}

/* ---- the table ----------------------------------------------------- */

static const bc_policy_ops_t *const pols[] = {
	&bc_policy_lru, &bc_policy_pin, &bc_policy_cost, &bc_policy_planned,
	&bc_policy_auto,
};
#define NPOLS (sizeof(pols) / sizeof(pols[0]))

typedef struct row_s {
	const char *name;
	workload_t  w;
	double      c;
	plans_t     plans;
	double      hit[NPOLS];
} row_t;

static row_t rows[] = {
	{ "shuffled",            SHUFFLED, 0.25, PLANS_NONE,  { 0 } },
	{ "shuffled",            SHUFFLED, 0.50, PLANS_NONE,  { 0 } },
	{ "shuffled",            SHUFFLED, 0.75, PLANS_NONE,  { 0 } },
	{ "shuffled, plans",     SHUFFLED, 0.50, PLANS_ALL,   { 0 } },
	{ "two jobs",            TWO_JOBS, 0.50, PLANS_NONE,  { 0 } },
	{ "two jobs, plans",     TWO_JOBS, 0.50, PLANS_ALL,   { 0 } },
	{ "two jobs, 1 ahead",   TWO_JOBS, 0.50, PLANS_AHEAD, { 0 } },
	{ "zipf 0.9",            ZIPF,     0.10, PLANS_NONE,  { 0 } },
	{ "zipf 0.9",            ZIPF,     0.25, PLANS_NONE,  { 0 } },
	{ "zipf 0.9",            ZIPF,     0.50, PLANS_NONE,  { 0 } },
	{ "with replacement",    REPLACE,  0.50, PLANS_NONE,  { 0 } },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static void
run_table(void)
{
	for (uint32_t i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "k%05u", i);
	for (size_t r = 0; r < NROWS; r++) {
		trace_t            t;
		oracle_t          *orc = calloc(1, sizeof(*orc));
		bc_policy_oracle_t po = { oracle_next_use, oracle_known, orc };

		cr_assert_not_null(orc);
		make_trace(&t, rows[r].w, 0x5eed0000 + rows[r].w);
		oracle_init(orc, &t, rows[r].plans);
		for (size_t p = 0; p < NPOLS; p++)
			rows[r].hit[p] = replay(&t, rows[r].c, pols[p],
			    rows[r].plans == PLANS_NONE ? NULL : &po);
		oracle_fini(orc);
		free(orc);
		free(t.item);
	}
	fprintf(stderr, "\n%-20s %5s", "hit ratio (N=2000)", "c");
	for (size_t p = 0; p < NPOLS; p++)
		fprintf(stderr, " %8s", pols[p]->name);
	fprintf(stderr, " %8s\n", "lru-thry");
	for (size_t r = 0; r < NROWS; r++) {
		double c = rows[r].c;

		fprintf(stderr, "%-20s %5.2f", rows[r].name, c);
		for (size_t p = 0; p < NPOLS; p++)
			fprintf(stderr, " %8.3f", rows[r].hit[p]);
		if (rows[r].w == SHUFFLED)
			fprintf(stderr, " %8.3f", c + (1 - c) * log(1 - c));
		fprintf(stderr, "\n");
	}
}

static double
hit(size_t r, const bc_policy_ops_t *pol)
{
	for (size_t p = 0; p < NPOLS; p++)
		if (pols[p] == pol)
			return rows[r].hit[p];
	cr_assert_fail("no policy %s", pol->name);
	return 0;
}

LTest(sim, table)
{
	run_table();
	for (size_t r = 0; r < NROWS; r++) {
		double c = rows[r].c;

		if (rows[r].w == SHUFFLED && rows[r].plans == PLANS_NONE) {
			cr_expect(fabs(hit(r, &bc_policy_pin) - c) <= 0.01,
			    "pin at c=%.2f: %.3f", c, hit(r, &bc_policy_pin));
			cr_expect(fabs(hit(r, &bc_policy_lru) -
			    (c + (1 - c) * log(1 - c))) <= 0.01,
			    "lru at c=%.2f: %.3f", c, hit(r, &bc_policy_lru));
			cr_expect_geq(hit(r, &bc_policy_auto), 0.95 * c,
			    "auto at c=%.2f: %.3f", c, hit(r, &bc_policy_auto));
		}
		if (rows[r].w == TWO_JOBS && rows[r].plans != PLANS_NONE) {
			double want = rows[r].plans == PLANS_ALL ? 0.70 : 0.64;

			cr_expect_geq(hit(r, &bc_policy_planned), want,
			    "planned, %s: %.3f", rows[r].name,
			    hit(r, &bc_policy_planned));
			cr_expect_geq(hit(r, &bc_policy_auto), want,
			    "auto, %s: %.3f", rows[r].name,
			    hit(r, &bc_policy_auto));
		}
		if (rows[r].w == ZIPF)
			cr_expect_geq(hit(r, &bc_policy_auto),
			    hit(r, &bc_policy_lru) - 0.02,
			    "auto on zipf at c=%.2f: %.3f (lru %.3f)", c,
			    hit(r, &bc_policy_auto), hit(r, &bc_policy_lru));
	}
}
