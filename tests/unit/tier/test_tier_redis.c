/*
 * test_tier_redis.c — the Redis tier (tier_redis.h) beyond the
 * conformance suite, against a real redis-server (redis_fixture.h): two
 * gateways sharing one Redis (a chunk read without knowing its length,
 * over several slices), TTLs, damaged and missing slices, del in Redis,
 * object metadata, Redis answering errors or too slow, and Redis going
 * away and coming back (the client's counters and the tier's stats
 * section then).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "redis_fixture.h"
#include "tier/tier_redis.h"
#include "tier/tier_redis_key.h"
#include "util/util_error.h"

#define UNIT (8u << 20)
#define TTL_MS 600000u

typedef struct fix_s {
	bc_loop_t    *loop;
	redis_node_t *node;
	char          seed[32];
} fix_t;

static fix_t F;
static const bc_policy_ctx_t ctx = { 1000, "job", "bkt", false };

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

static void
setup(void)
{
	if (!redis_fixture_have())
		cr_skip_test("redis-server not installed");
	signal(SIGPIPE, SIG_IGN);
	F.loop = bc_loop_new(no_xfers);
	cr_assert_not_null(F.loop);
	cr_assert_eq(bc_loop_start(F.loop), 0);
	F.node = redis_fixture_start(NULL);
	snprintf(F.seed, sizeof(F.seed), "127.0.0.1:%d", F.node->port);
}

static void
teardown(void)
{
	bc_loop_stop(F.loop, NULL, NULL);
	bc_loop_free(F.loop);
	redis_fixture_cleanup();
}

TestSuite(tier_redis, .init = setup, .fini = teardown);

static bc_tier_t *
open_tier_timeout(uint64_t capacity, uint64_t timeout_ms)
{
	const char          *seeds[1] = { F.seed };
	bc_tier_opts_t       o = { .capacity = capacity, .loop = F.loop };
	bc_tier_redis_opts_t ro = { .seeds = seeds, .nseeds = 1,
	    .chunk_size = UNIT, .ttl_ms = TTL_MS, .timeout_ms = timeout_ms,
	    .connect_timeout_ms = 500 };
	bc_tier_t           *t = NULL;
	char                 err[256] = "";

	cr_assert_eq(bc_tier_redis_open(&o, &ro, &t, err, sizeof(err)), 0,
	    "%s", err);
	return t;
}

/* A command timeout no loaded machine reaches (an 8 MiB SET took over
 * 500 ms with the whole suite running beside it); the slowness test sets
 * its own. */
static bc_tier_t *
open_tier(uint64_t capacity)
{
	return open_tier_timeout(capacity, 10000);
}

static uint8_t
byte_at(uint32_t index, size_t i)
{
	return (uint8_t)(i * 31u + index * 7u + (i >> 13));
}

static bc_chunk_t *
make_chunk(const char *key, uint32_t index, size_t len)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", index };
	uint8_t       *d = malloc(len > 0 ? len : 1);

	cr_assert_not_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = byte_at(index, i);
	return bc_chunk_new(&k, d, len);
}

static bool
intact(const bc_chunk_t *c, uint32_t index, size_t len)
{
	if (c->len != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (c->data[i] != byte_at(index, i))
			return false;
	return true;
}

static void
put(bc_tier_t *t, const char *key, uint32_t index, size_t len)
{
	bc_chunk_t *c = make_chunk(key, index, len);

	cr_assert_eq(bc_tier_redis.put(t, c, &ctx), 0);
	bc_chunk_unref(c);
}

typedef struct got_s {
	bc_tier_get_t req;
	bool          done;
	int           status;
	bc_chunk_t   *c;
} got_t;

static void
on_got(bc_tier_get_t *req, int status, bc_chunk_t *c)
{
	got_t *g = req->data;

	redis_fixture_lock();
	g->status = status;
	g->c = c;
	g->done = true;
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

/* get() from the test thread; returns the callback's status, *c set on a
 * hit (the caller's reference). */
static int
get(bc_tier_t *t, const char *key, uint32_t index, bc_chunk_t **c)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", index };
	got_t          g = { .req = { .data = &g } };
	int            rv;

	rv = bc_tier_redis.get(t, &g.req, &k, &ctx, on_got);
	if (rv < 0)
		return rv;
	RF_WAIT_FOR(g.done);
	*c = g.c;
	return g.status;
}

static void
slice_name(const char *key, uint32_t index, size_t len, uint32_t i,
    char name[BC_REDIS_KEY_NAME_MAX], uint32_t *nslices)
{
	bc_chunk_key_t        k = { "bkt", key, "\"e\"", index };
	bc_tier_redis_chunk_t rc;

	cr_assert_eq(bc_tier_redis_key_chunk_init(&rc, &k, UNIT, len), 0);
	bc_tier_redis_key_slice(&rc, i, name);
	if (nslices != NULL)
		*nslices = rc.nslices;
}

static long long
cmd_int(const char *fmt, const char *arg)
{
	redisReply *r = redis_fixture_cmd(F.node, fmt, arg);
	long long   v;

	cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s", r->type ==
	    REDIS_REPLY_ERROR ? r->str : "not an integer");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

#define STAT(t, f) atomic_load(&(t)->stats.f)
#define BIG (3u * 1024 * 1024 + 12345)
#define SMALL 100000u

Test(tier_redis, another_gateway_reads_what_one_wrote)
{
	bc_tier_t  *a = open_tier(64u << 20), *b = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	char        name[BC_REDIS_KEY_NAME_MAX];
	uint32_t    n;
	long long   pttl;

	put(a, "obj", 0, BIG);
	put(a, "obj", 1, SMALL);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	cr_assert(intact(c, 0, BIG));
	bc_chunk_unref(c);
	cr_assert_eq(get(b, "obj", 0, &c), 0, "b reads a's chunk");
	cr_assert(intact(c, 0, BIG));
	bc_chunk_unref(c);
	cr_assert_eq(get(b, "obj", 1, &c), 0);
	cr_assert(intact(c, 1, SMALL));
	bc_chunk_unref(c);
	cr_assert_eq(get(b, "obj", 2, &c), BC_ENOENT);
	cr_assert_eq(STAT(b, hits), 2);
	cr_assert_eq(STAT(b, misses), 1);
	cr_assert_eq(STAT(b, bytes_read), BIG + SMALL);
	cr_assert_eq(bc_tier_redis.usage(b), 0, "b wrote nothing");
	cr_assert_gt(bc_tier_redis.usage(a), BIG + SMALL);
	cr_assert_eq(STAT(a, writes), 2);

	slice_name("obj", 0, BIG, 0, name, &n);
	cr_assert_gt(n, 3, "several slices");
	for (uint32_t i = 0; i < n; i++) {
		slice_name("obj", 0, BIG, i, name, NULL);
		pttl = cmd_int("PTTL %s", name);
		cr_assert(pttl > 0 && pttl <= TTL_MS, "slice %u: %lld", i,
		    pttl);
	}
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}

/* get() with the chunk's length given (the cache knows the object's
 * size): another gateway's chunk costs one GET per slice it has, not the
 * unit's; a wrong length is a miss. */
static int
get_hinted(bc_tier_t *t, const char *key, uint32_t index, uint64_t len,
    bc_chunk_t **c)
{
	bc_chunk_key_t k = { "bkt", key, "\"e\"", index };
	got_t          g = { .req = { .data = &g, .len_hint = len } };
	int            rv;

	rv = bc_tier_redis.get(t, &g.req, &k, &ctx, on_got);
	if (rv < 0)
		return rv;
	RF_WAIT_FOR(g.done);
	*c = g.c;
	return g.status;
}

static uint64_t
requests_of(bc_tier_t *t)
{
	bc_tier_redis_counters_t k;

	bc_tier_redis_counters(t, &k);
	return atomic_load(&k.cluster->requests);
}

Test(tier_redis, a_known_length_asks_only_for_its_slices)
{
	bc_tier_t  *a = open_tier(64u << 20), *b = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	char        name[BC_REDIS_KEY_NAME_MAX];
	uint32_t    nunit, nbig, nsmall;
	uint64_t    before;

	slice_name("unit", 0, UNIT, 0, name, &nunit);
	slice_name("obj", 1, BIG, 0, name, &nbig);
	slice_name("obj", 0, SMALL, 0, name, &nsmall);
	put(a, "obj", 0, SMALL);
	put(a, "obj", 1, BIG);
	cr_assert_eq(get(a, "obj", 0, &c), 0);   /* a's SETs have run */
	bc_chunk_unref(c);
	before = requests_of(b);
	cr_assert_eq(get_hinted(b, "obj", 0, SMALL, &c), 0);
	cr_assert(intact(c, 0, SMALL));
	bc_chunk_unref(c);
	cr_assert_eq(requests_of(b) - before, nsmall, "one GET a slice");
	before = requests_of(b);
	cr_assert_eq(get_hinted(b, "obj", 1, BIG, &c), 0);
	cr_assert(intact(c, 1, BIG));
	bc_chunk_unref(c);
	cr_assert_eq(requests_of(b) - before, nbig);
	before = requests_of(b);
	cr_assert_eq(get(b, "obj", 0, &c), 0, "no hint: the unit's slices");
	bc_chunk_unref(c);
	cr_assert_eq(requests_of(b) - before, nunit);
	cr_assert_gt(nunit, nsmall);
	cr_assert_eq(get_hinted(b, "obj", 0, SMALL + 1, &c), BC_ENOENT,
	    "a wrong length is a miss");
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}

/* A chunk whose own layout has more slices than the unit's: a reader that
 * does not know its length asks for the rest in a second round. */
Test(tier_redis, a_chunk_with_more_slices_than_the_unit)
{
	bc_tier_t  *a = open_tier(64u << 20), *b = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	char        name[BC_REDIS_KEY_NAME_MAX];
	uint32_t    n, nunit;
	size_t      len = 0;

	slice_name("unit", 0, UNIT, 0, name, &nunit);
	for (size_t l = UNIT - 1; l > UNIT / 2 && len == 0; l -= 4093) {
		slice_name("odd", 0, l, 0, name, &n);
		if (n > nunit)
			len = l;
	}
	cr_assert_gt(len, 0, "some length has more slices than the unit");
	put(a, "odd", 0, len);
	cr_assert_eq(get(a, "odd", 0, &c), 0);
	bc_chunk_unref(c);
	cr_assert_eq(get(b, "odd", 0, &c), 0);
	cr_assert(intact(c, 0, len));
	bc_chunk_unref(c);
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}

Test(tier_redis, damaged_slice_is_corrupt_and_a_miss)
{
	bc_tier_t  *a = open_tier(64u << 20), *b = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	char        name[BC_REDIS_KEY_NAME_MAX];
	redisReply *r;

	put(a, "obj", 0, BIG);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	slice_name("obj", 0, BIG, 1, name, NULL);
	r = redis_fixture_cmd(F.node, "SETRANGE %s 5000 XYZ", name);
	freeReplyObject(r);
	cr_assert_eq(get(b, "obj", 0, &c), BC_ENOENT);
	cr_assert_eq(STAT(b, corrupt), 1);
	cr_assert_eq(get(a, "obj", 0, &c), BC_ENOENT);
	cr_assert_eq(STAT(a, corrupt), 1);
	cr_assert_eq(STAT(a, misses), 1);
	cr_assert_eq(bc_tier_redis.usage(a), 0, "a miss drops the entry");
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}

Test(tier_redis, missing_slice_is_a_miss)
{
	bc_tier_t  *a = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	char        name[BC_REDIS_KEY_NAME_MAX];

	put(a, "obj", 0, BIG);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	slice_name("obj", 0, BIG, 2, name, NULL);
	cr_assert_eq(cmd_int("DEL %s", name), 1);
	cr_assert_eq(get(a, "obj", 0, &c), BC_ENOENT);
	cr_assert_eq(STAT(a, corrupt), 0);
	bc_tier_redis.close(a);
}

Test(tier_redis, del_and_eviction_delete_in_redis)
{
	bc_tier_t     *a = open_tier(64u << 20);
	bc_chunk_t    *c = NULL;
	char           name[BC_REDIS_KEY_NAME_MAX];
	uint32_t       n;
	bc_chunk_key_t k = { "bkt", "obj", "\"e\"", 0 };

	put(a, "obj", 0, BIG);
	cr_assert_eq(bc_tier_redis.del(a, &k), 0);
	cr_assert_eq(get(a, "obj", 0, &c), BC_ENOENT);
	slice_name("obj", 0, BIG, 0, name, &n);
	for (uint32_t i = 0; i < n; i++) {
		slice_name("obj", 0, BIG, i, name, NULL);
		cr_assert_eq(cmd_int("EXISTS %s", name), 0, "slice %u", i);
	}
	cr_assert_eq(bc_tier_redis.usage(a), 0);

	put(a, "obj", 1, SMALL);
	cr_assert_eq(bc_tier_redis.set_capacity(a, 1000), 0);
	cr_assert_eq(STAT(a, evictions), 1);
	cr_assert_eq(get(a, "obj", 1, &c), BC_ENOENT, "evicted in Redis");
	bc_tier_redis.close(a);
}

typedef struct meta_got_s {
	bc_tier_meta_get_t req;
	bool               done;
	int                status;
	char               blob[64];
	size_t             len;
} meta_got_t;

static void
on_meta(bc_tier_meta_get_t *req, int status, const void *blob, size_t len)
{
	meta_got_t *g = req->data;

	redis_fixture_lock();
	g->status = status;
	if (status == 0 && len <= sizeof(g->blob)) {
		memcpy(g->blob, blob, len);
		g->len = len;
	}
	g->done = true;
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

static int
meta_get(bc_tier_t *t, const char *key, meta_got_t *g)
{
	int rv;

	memset(g, 0, sizeof(*g));
	g->req.data = g;
	rv = bc_tier_redis.meta_get(t, &g->req, "bkt", key, on_meta);
	if (rv < 0)
		return rv;
	RF_WAIT_FOR(g->done);
	return g->status;
}

Test(tier_redis, metadata_round_trip_and_del_object)
{
	bc_tier_t  *a = open_tier(64u << 20), *b = open_tier(64u << 20);
	meta_got_t  g;
	bc_chunk_t *c = NULL;

	cr_assert_eq(bc_tier_redis.meta_put(a, "bkt", "obj", "hello", 5), 0);
	put(a, "obj", 0, SMALL);
	/* a's writes are queued: its own read, sent after them on its
	 * connection, is answered after they ran (b's might come first) */
	cr_assert_eq(meta_get(a, "obj", &g), 0);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	c = NULL;
	cr_assert_eq(meta_get(b, "obj", &g), 0);
	cr_assert_eq(g.len, 5);
	cr_assert(memcmp(g.blob, "hello", 5) == 0);
	cr_assert_eq(meta_get(b, "other", &g), BC_ENOENT);
	cr_assert_eq(bc_tier_redis.del_object(a, "bkt", "obj", NULL), 1);
	cr_assert_eq(meta_get(a, "obj", &g), BC_ENOENT, "after a's DEL");
	cr_assert_eq(meta_get(b, "obj", &g), BC_ENOENT);
	cr_assert_eq(get(b, "obj", 0, &c), BC_ENOENT);
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}

/* Health changes broadcast nothing: polls, for at most 20 s. */
static void
wait_health(bc_tier_t *t, bc_tier_state_t want)
{
	for (int i = 0; i < 2000 && bc_tier_health(t) != want; i++)
		usleep(10000);
	cr_assert_eq(bc_tier_health(t), want);
}

/* The client's counters after down_and_up_again, in the tier's own
 * stats section too: the lost link counted by kind, reconnects, round
 * trips. */
static void
check_counters(bc_tier_t *t)
{
	bc_tier_redis_counters_t k;
	bc_buf_t                 b = BC_BUF_INIT;
	uint64_t                 lost;

	bc_tier_redis_counters(t, &k);
	cr_assert_eq(k.mode, BC_TIER_REDIS_CLUSTER_STANDALONE);
	cr_assert_eq(k.chunks, 1);
	lost = atomic_load(&k.conn->err_reset) +
	    atomic_load(&k.conn->err_refused) +
	    atomic_load(&k.conn->err_poll);
	cr_assert_geq(lost, 1, "the kill is counted by kind");
	cr_assert_geq(atomic_load(&k.conn->connects), 2);
	cr_assert_geq(atomic_load(&k.conn->reconnects), 1);
	cr_assert_geq(atomic_load(&k.conn->rtt_count), 4);
	cr_assert_gt(atomic_load(&k.conn->rtt_recent_ns), 0);
	cr_assert_gt(atomic_load(&k.cluster->requests), 0);
	cr_assert_eq(bc_tier_redis_stats_json(t, &b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"mode\": \"standalone\""),
	    "%s", bc_buf_str(&b));
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"cluster\": {\"requests\""),
	    "%s", bc_buf_str(&b));
	bc_buf_reset(&b);
	cr_assert_eq(bc_tier_redis_stats_prom(t, &b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "bucketcache_redis_mode 1\n"), "%s", bc_buf_str(&b));
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "# TYPE bucketcache_redis_rtt_seconds summary\n"));
	cr_assert_null(strstr(bc_buf_str(&b), "bucketcache_redis_err_"),
	    "link failures are one labelled family");
	cr_assert_not_null(strstr(bc_buf_str(&b),
	    "bucketcache_redis_link_failures_total{kind=\"reset\"} "));
	bc_buf_fini(&b);
}

Test(tier_redis, down_and_up_again)
{
	bc_tier_t  *a = open_tier(64u << 20);
	bc_chunk_t *c = NULL;
	int         rv;

	put(a, "obj", 0, SMALL);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	cr_assert_eq(bc_tier_health(a), BC_TIER_UP);
	redis_fixture_kill(F.node);
	wait_health(a, BC_TIER_DOWN);
	rv = get(a, "obj", 0, &c);
	cr_assert(rv < 0 && rv != BC_ENOENT, "a failure, not a miss: %d", rv);
	cr_assert_geq(STAT(a, errors), 1);
	cr_assert_geq(STAT(a, downs), 1);
	redis_fixture_restart(F.node);
	wait_health(a, BC_TIER_UP);
	cr_assert_eq(get(a, "obj", 0, &c), BC_ENOENT, "a new empty server");
	put(a, "obj", 0, SMALL);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	cr_assert(intact(c, 0, SMALL));
	bc_chunk_unref(c);
	check_counters(a);
	bc_tier_redis.close(a);
}

/* A Redis that does not answer (paused): puts past the bound of values
 * on their way are refused (counted), not held; once it answers them,
 * puts are taken again. */
Test(tier_redis, puts_waiting_on_redis_are_bounded)
{
	bc_tier_t  *a = open_tier_timeout(1024u << 20, 20000);  /* no
	                                                         * timeouts */
	bc_chunk_t *c = NULL, *slow[24];
	int         taken = 0, refused = 0;

	put(a, "warm", 0, SMALL);
	cr_assert_eq(get(a, "warm", 0, &c), 0);   /* connected */
	bc_chunk_unref(c);
	for (uint32_t i = 0; i < 24; i++)   /* made first: puts go at once */
		slow[i] = make_chunk("slow", i, UNIT);
	redis_fixture_pause(F.node);
	for (uint32_t i = 0; i < 24; i++) {
		int rv = bc_tier_redis.put(a, slow[i], &ctx);

		bc_chunk_unref(slow[i]);
		cr_assert(rv == 0 || rv == BC_E2BIG, "%d", rv);
		taken += rv == 0;
		refused += rv == BC_E2BIG;
	}
	cr_assert_eq(taken, BC_TIER_REDIS_PUT_PENDING_MIN / UNIT - 1,
	    "128 MiB of 8 MiB chunks with their headers: 15 fit");
	cr_assert_eq(refused, 24 - taken);
	cr_assert_eq(STAT(a, rejects), (uint64_t)refused);
	redis_fixture_resume(F.node);
	for (int i = 0; i < 2000; i++) {
		bc_chunk_t *ch = make_chunk("after", 0, UNIT);
		int         rv = bc_tier_redis.put(a, ch, &ctx);

		bc_chunk_unref(ch);
		if (rv == 0)
			break;
		cr_assert_lt(i, 1999, "puts are never taken again");
		usleep(10000);
	}
	cr_assert_eq(get(a, "after", 0, &c), 0);
	cr_assert(intact(c, 0, UNIT));
	bc_chunk_unref(c);
	bc_tier_redis.close(a);
}

static void
config_set(const char *name, const char *value)
{
	redisReply *r = redis_fixture_cmd(F.node, "CONFIG SET %s %s", name,
	    value);

	cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s: %s", name, r->str);
	freeReplyObject(r);
}

/* Redis answering errors (OOM under noeviction) and Redis too slow (a
 * command past its timeout) each mark the tier down; each time it comes
 * back once Redis behaves, and serves again. */
Test(tier_redis, error_replies_and_slowness_mark_it_down)
{
	bc_tier_t  *a = open_tier_timeout(64u << 20, 2000);
	bc_chunk_t *c = NULL;
	uint64_t    downs;
	int         rv;

	put(a, "obj", 0, SMALL);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	/* errors: every SET is refused with -OOM */
	config_set("maxmemory-policy", "noeviction");
	config_set("maxmemory", "1");
	put(a, "oom", 0, SMALL);      /* accepted: the SET fails later */
	wait_health(a, BC_TIER_DOWN);
	cr_assert_geq(STAT(a, write_failures), 1);
	downs = STAT(a, downs);
	cr_assert_geq(downs, 1);
	config_set("maxmemory", "0");
	for (int i = 0; i < 2000; i++) {   /* a later answer marks it up */
		if (get(a, "obj", 0, &c) == 0)
			break;
		usleep(10000);
	}
	cr_assert(intact(c, 0, SMALL));
	bc_chunk_unref(c);
	cr_assert_eq(bc_tier_health(a), BC_TIER_UP);
	/* slowness: a GET waits past the 2 s timeout (Redis stopped) */
	redis_fixture_pause(F.node);
	rv = get(a, "obj", 0, &c);
	cr_assert(rv < 0 && rv != BC_ENOENT, "a failure, not a miss: %d", rv);
	cr_assert_eq(bc_tier_health(a), BC_TIER_DOWN);
	cr_assert_gt(STAT(a, downs), downs);
	redis_fixture_resume(F.node);
	wait_health(a, BC_TIER_UP);
	for (int i = 0; i < 2000; i++) {
		if (get(a, "obj", 0, &c) == 0)
			break;
		usleep(10000);
	}
	cr_assert(intact(c, 0, SMALL));
	bc_chunk_unref(c);
	bc_tier_redis.close(a);
}

Test(tier_redis, cluster_spreads_slices_and_shares_them)
{
	redis_node_t        *nodes[3];
	char                 seed[3][32], err[256] = "";
	const char          *seeds[3] = { seed[0], seed[1], seed[2] };
	bc_tier_opts_t       o = { .capacity = 64u << 20, .loop = F.loop };
	bc_tier_redis_opts_t ro = { .seeds = seeds, .nseeds = 3,
	    .chunk_size = UNIT, .ttl_ms = TTL_MS };
	bc_tier_t           *a = NULL, *b = NULL;
	bc_chunk_t          *c = NULL;
	int                  used = 0;

	redis_fixture_cluster(3, nodes);
	for (int i = 0; i < 3; i++)
		snprintf(seed[i], sizeof(seed[i]), "127.0.0.1:%d",
		    nodes[i]->port);
	cr_assert_eq(bc_tier_redis_open(&o, &ro, &a, err, sizeof(err)), 0,
	    "%s", err);
	ro.seeds = seeds + 2;   /* b knows one seed only */
	ro.nseeds = 1;
	cr_assert_eq(bc_tier_redis_open(&o, &ro, &b, err, sizeof(err)), 0,
	    "%s", err);
	put(a, "obj", 0, UNIT);
	cr_assert_eq(get(a, "obj", 0, &c), 0);
	bc_chunk_unref(c);
	cr_assert_eq(get(b, "obj", 0, &c), 0);
	cr_assert(intact(c, 0, UNIT));
	bc_chunk_unref(c);
	for (int i = 0; i < 3; i++) {
		redisReply *r = redis_fixture_cmd(nodes[i], "DBSIZE");

		used += r->integer > 0;
		freeReplyObject(r);
	}
	cr_assert_geq(used, 2, "one chunk's slices on several masters");
	cr_assert_eq(STAT(a, write_failures), 0);
	bc_tier_redis.close(b);
	bc_tier_redis.close(a);
}
