/*
 * test_scale.c — the scale/ module (scale.h) over a real cache (fake
 * origin): its tick puts the target in force as the bound, grows at
 * once, holds a lower target until an epoch ends, releases an idle
 * dataset's memory down to mem-min, and says why in its decisions and
 * its JSON. Time and the origin's totals are the test's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../bc_test.h"
#include "../cache/fake_origin.h"

#include "cache/cache.h"
#include "config/config.h"
#include "scale/scale.h"
#include "util/util_buf.h"
#include "util/util_log.h"

#define MiB ((uint64_t)1 << 20)
#define SEC 1000000000ull
#define B_ORIGIN (6 * MiB)     /* bytes/s the origin's fills move */

static uint64_t clock_ns = 1000 * SEC;
static uint64_t busy_ns;       /* the origin busy, in all */

static uint64_t
test_now(void)
{
	return clock_ns;
}

static void
test_origin(uint64_t *bytes, uint64_t *busy, uint64_t *ttfb, uint64_t *n)
{
	*busy = busy_ns;
	*bytes = busy_ns / 1000 * B_ORIGIN / 1000000;
	*n = *bytes / MiB;          /* fills of a chunk, */
	*ttfb = *n * 1000000;       /* each 1 ms to its headers */
}

static struct {
	bc_config_t    cfg;
	bc_loop_t     *loop;
	fake_origin_t *fo;
	bc_cache_t    *c;
	bc_scale_t    *s;
} E;

static void
env_start(void)
{
	bc_cache_opts_t co;
	bc_scale_opts_t so;

	memset(&E, 0, sizeof(E));
	bc_log_level = BC_LOG_WARN;   /* the decisions are checked, not logged */
	cr_assert_eq(bc_config_init(&E.cfg), 0);
	E.cfg.chunk_size = MiB;
	E.cfg.mem_auto = true;
	E.cfg.mem_min = E.cfg.mem_size = 8 * MiB;
	E.cfg.mem_max = 512 * MiB;
	E.cfg.idle_release = 4000;
	E.cfg.dataset_depth = 1;
	E.loop = bc_loop_new(NULL);
	cr_assert_not_null(E.loop);
	cr_assert_eq(bc_loop_start(E.loop), 0);
	E.fo = fake_origin_new(E.loop);
	cr_assert_not_null(E.fo);
	memset(&co, 0, sizeof(co));
	co.cfg = &E.cfg;
	co.origin = fake_origin_base(E.fo);
	co.loop = E.loop;
	cr_assert_eq(bc_cache_new(&co, &E.c), 0);
	memset(&so, 0, sizeof(so));
	so.cfg = &E.cfg;
	so.cache = E.c;
	so.now_ns = test_now;
	so.origin_totals = test_origin;
	E.s = bc_scale_new(&so);
	cr_assert_not_null(E.s);
}

static void
env_stop(void)
{
	bc_scale_free(E.s);
	bc_loop_stop(E.loop, fake_origin_stop_fn, E.fo);
	bc_cache_free(E.c);
	bc_origin_free(fake_origin_base(E.fo));
	bc_loop_free(E.loop);
	bc_config_fini(&E.cfg);
}

/* One epoch of n objects of 1 MiB in a shuffled order, read at rate
 * (bytes/s) on one connection, every read a hit; the origin busy while
 * the epoch is cold; a tick every half second. */
static void
epoch(unsigned n, double rate, unsigned seed, bool cold)
{
	unsigned order[256];
	uint64_t span = (uint64_t)((double)MiB / rate * 1e9);
	uint64_t next_tick = clock_ns + SEC / 2;
	char key[32];

	cr_assert_leq(n, 256);
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	srand(seed);
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned k = (unsigned)rand() % (i + 1), x = order[i];

		order[i] = order[k];
		order[k] = x;
	}
	for (unsigned i = 0; i < n; i++) {
		clock_ns += span;
		if (cold)
			busy_ns += span;
		snprintf(key, sizeof(key), "dsA/k%03u", order[i]);
		bc_scale_read(E.s, "job", 1, 0, "bkt", key, MiB, 0, MiB - 1,
		    MiB);
		while (clock_ns >= next_tick) {
			bc_scale_tick(E.s);
			next_tick += SEC / 2;
		}
	}
}

static bool
json_has(const char *needle)
{
	bc_buf_t b = BC_BUF_INIT;
	bool yes;

	cr_assert_eq(bc_scale_json(E.s, &b), 0);
	yes = memmem(b.data, b.len, needle, strlen(needle)) != NULL;
	bc_buf_fini(&b);
	return yes;
}

LTest(scale, the_bound_follows_the_target_and_shrinks_at_epoch_ends)
{
	uint64_t lim;

	env_start();
	cr_assert_eq(bc_cache_bytes_limit(E.c), 8 * MiB);
	/* epoch 1, cold: D grows as it is read, the bound with it */
	epoch(48, 12.0 * MiB, 1, true);
	lim = bc_cache_bytes_limit(E.c);
	cr_assert_gt(lim, 16 * MiB, "grown during epoch 1: %llu",
	    (unsigned long long)lim);
	/* epoch 2 (hits at 12 MiB/s): D = 48 MiB, B = 6, R = 12: 24 MiB */
	epoch(48, 12.0 * MiB, 2, false);
	bc_scale_tick(E.s);
	cr_assert(bc_scale_target(E.s) >= 23 * MiB &&
	    bc_scale_target(E.s) <= 25 * MiB, "target %llu",
	    (unsigned long long)bc_scale_target(E.s));
	lim = bc_cache_bytes_limit(E.c);
	cr_assert(lim >= bc_scale_target(E.s) && lim <= 27 * MiB,
	    "the bound in force: %llu", (unsigned long long)lim);
	cr_assert_eq(bc_scale_limit(E.s), lim);
	/* the job slows to 8 MiB/s: the target falls (towards 48*(1-6/8)
	 * = 12 MiB as R follows), but the bound waits for an epoch end */
	epoch(48, 8.0 * MiB, 3, false);
	bc_scale_tick(E.s);
	cr_assert_lt(bc_scale_target(E.s) + 4 * MiB, lim, "target %llu",
	    (unsigned long long)bc_scale_target(E.s));
	cr_assert_eq(bc_cache_bytes_limit(E.c), lim, "held until an epoch "
	    "ends");
	cr_assert(json_has("\"pending\": \"the target is lower"));
	epoch(10, 8.0 * MiB, 4, false);   /* the next epoch begins */
	bc_scale_tick(E.s);
	cr_assert_lt(bc_cache_bytes_limit(E.c) + 4 * MiB, lim, "shrunk: %llu",
	    (unsigned long long)bc_cache_bytes_limit(E.c));
	cr_assert_leq(bc_cache_bytes_limit(E.c),
	    bc_scale_target(E.s) + bc_scale_target(E.s) / 16 + MiB);
	cr_assert(json_has("shrink at the end of an epoch of bkt/dsA/"));
	/* idle for --idle-release: down to mem-min */
	clock_ns += 5 * SEC;
	bc_scale_tick(E.s);
	cr_assert_eq(bc_cache_bytes_limit(E.c), 8 * MiB);
	cr_assert(json_has("idle for 4 s"));
	cr_assert(json_has("\"mode\": \"auto\""));
	env_stop();
}
