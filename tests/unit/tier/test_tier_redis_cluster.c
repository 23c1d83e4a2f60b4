/*
 * test_tier_redis_cluster.c — the cluster client (tier/tier_redis_cluster.c):
 * CRC16 and key slots against the spec's vectors and against the
 * server's own CLUSTER KEYSLOT; against a real 3-master cluster
 * (redis_fixture.h): the map found from one seed, keys spread over the
 * three masters all SET/GET right with no redirection; a slot migrated by
 * hand (SETSLOT MIGRATING/IMPORTING + MIGRATE: ASK for a moved key and a
 * new one, TRYAGAIN for a multi-key command split between the nodes,
 * then SETSLOT NODE: MOVED and a refreshed map); one slot's commands kept
 * in order across a map change (a SET redirected after a later DEL would
 * otherwise overtake it); a master killed (health
 * down) and restarted (up again); a standalone server through the same
 * API, found past a dead seed.
 *
 * Everything touching the client runs on the loop thread
 * (redis_fixture_on_loop); the test thread waits on callbacks.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "redis_fixture.h"
#include "tier/tier_redis_cluster.h"
#include "util/util_error.h"

#define CSTAT(cl, f) atomic_load(&bc_tier_redis_cluster_stats(cl)->f)

typedef struct fix_s {
	bc_loop_t                   *loop;
	redis_node_t                *node[3];
	bc_tier_redis_cluster_t     *cl;
	bc_tier_redis_cluster_opts_t opts;
	const char                  *seeds[3];
	char                         seedbuf[3][32];
	int                          ups, downs;   /* under the fixture lock */
} fix_t;

static void
no_xfers(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

static void
on_state(bc_tier_redis_cluster_t *cl, bool up, void *arg)
{
	fix_t *f = arg;

	(void)cl;
	redis_fixture_lock();
	if (up)
		f->ups++;
	else
		f->downs++;
	redis_fixture_broadcast();
	redis_fixture_unlock();
}

static void
leftovers(void)
{
	redis_fixture_cleanup();
}

TestSuite(redis_cluster, .fini = leftovers);

static void
setup(fix_t *f)
{
	if (!redis_fixture_have())
		cr_skip_test("redis-server not installed");
	signal(SIGPIPE, SIG_IGN);
	memset(f, 0, sizeof(*f));
	f->loop = bc_loop_new(no_xfers);
	cr_assert_not_null(f->loop);
	cr_assert_eq(bc_loop_start(f->loop), 0);
	f->opts.seeds = f->seeds;
	f->opts.refresh_min_ms = 100;
	f->opts.on_state = on_state;
	f->opts.state_arg = f;
}

static void
seed(fix_t *f, int port)
{
	size_t i = f->opts.nseeds++;

	snprintf(f->seedbuf[i], sizeof(f->seedbuf[i]), "127.0.0.1:%d", port);
	f->seeds[i] = f->seedbuf[i];
}

static void
do_new(void *arg)
{
	fix_t *f = arg;
	char   err[128] = "";

	cr_assert_eq(bc_tier_redis_cluster_new(f->loop, &f->opts, &f->cl, err,
	    sizeof(err)), 0, "%s", err);
}

static void
do_free(void *arg)
{
	fix_t *f = arg;

	bc_tier_redis_cluster_free(f->cl);
	f->cl = NULL;
}

static void
open_up(fix_t *f)
{
	redis_fixture_on_loop(f->loop, do_new, f);
	RF_WAIT_FOR(f->ups >= 1);
}

static void
teardown(fix_t *f)
{
	if (f->cl != NULL)
		redis_fixture_on_loop(f->loop, do_free, f);
	bc_loop_stop(f->loop, NULL, NULL);
	bc_loop_free(f->loop);
	redis_fixture_cleanup();
}

/* ---- commands ------------------------------------------------------------- */

#define MAXARG 8

typedef struct sub_s {
	fix_t       *f;
	const char  *key;
	int          argc;
	const char  *argv[MAXARG];
	size_t       lens[MAXARG];
	redis_res_t *res;
	int          rv;
} sub_t;

static void
do_submit(void *arg)
{
	sub_t *s = arg;

	s->rv = bc_tier_redis_cluster_submit(s->f->cl, s->key,
	    s->key ? strlen(s->key) : 0, s->argc, s->argv, s->lens,
	    redis_res_cb, s->res);
}

/* Submits the NULL-terminated strings with key (NULL: none) and waits
 * for the answer. */
static void
run(fix_t *f, redis_res_t *res, const char *key, const char *a0, ...)
{
	sub_t       s = { .f = f, .key = key, .res = res };
	const char *a;
	va_list     ap;

	redis_res_clear(res);
	va_start(ap, a0);
	for (a = a0; a != NULL; a = va_arg(ap, const char *)) {
		cr_assert_lt(s.argc, MAXARG);
		s.argv[s.argc] = a;
		s.lens[s.argc++] = strlen(a);
	}
	va_end(ap);
	redis_fixture_on_loop(f->loop, do_submit, &s);
	cr_assert_eq(s.rv, 0, "submit: %s", bc_strerror(s.rv));
	redis_res_wait(res);
}

typedef struct nodes_s {
	fix_t                       *f;
	bc_tier_redis_cluster_node_t n[8];
	size_t                       count;
} nodes_t;

static void
do_nodes(void *arg)
{
	nodes_t *ns = arg;

	ns->count = bc_tier_redis_cluster_nodes(ns->f->cl, ns->n, 8);
}

/* The slots the client's map gives to the server on port. */
static uint32_t
slots_of(fix_t *f, int port)
{
	nodes_t ns = { .f = f };

	redis_fixture_on_loop(f->loop, do_nodes, &ns);
	for (size_t i = 0; i < ns.count && i < 8; i++) {
		if (ns.n[i].port == port)
			return ns.n[i].slots;
	}
	return 0;
}

static long long
int_cmd(redis_node_t *n, const char *cmd)
{
	redisReply *r = redis_fixture_cmd(n, cmd);
	long long   v;

	cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s: %s", cmd,
	    r->str ? r->str : "");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

static void
ok_cmd(redis_node_t *n, const char *fmt, ...)
{
	redisReply *r;
	va_list     ap;

	va_start(ap, fmt);
	r = redis_fixture_vcmd(n, fmt, ap);
	va_end(ap);
	cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s: %s", fmt, r->str);
	freeReplyObject(r);
}

/* ---- slots ------------------------------------------------------------------ */

static uint16_t
slot_of(const char *k)
{
	return bc_tier_redis_cluster_slot(k, strlen(k));
}

LTest(redis_cluster, crc16_and_hash_tags)
{
	cr_assert_eq(bc_tier_redis_cluster_crc16("123456789", 9), 0x31C3);
	cr_assert_eq(bc_tier_redis_cluster_crc16("", 0), 0);
	/* CLUSTER KEYSLOT of a Redis 7 cluster */
	cr_assert_eq(slot_of("foo"), 12182);
	cr_assert_eq(slot_of("bar"), 5061);
	cr_assert_eq(slot_of("hello"), 866);
	/* the spec's hash tag examples */
	cr_assert_eq(slot_of("{user1000}.following"), slot_of("user1000"));
	cr_assert_eq(slot_of("{user1000}.followers"), slot_of("user1000"));
	cr_assert_eq(slot_of("foo{}{bar}"),
	    bc_tier_redis_cluster_crc16("foo{}{bar}", 10) & 16383);
	cr_assert_eq(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	cr_assert_eq(slot_of("foo{bar}{zap}"), slot_of("bar"));
	cr_assert_eq(slot_of("{}"), bc_tier_redis_cluster_crc16("{}", 2) &
	    16383);
	cr_assert_eq(slot_of("a{b"), bc_tier_redis_cluster_crc16("a{b", 3) &
	    16383);
	cr_assert_eq(bc_tier_redis_cluster_slot("x{\0y}z", 6),
	    bc_tier_redis_cluster_slot("\0y", 2));
}

/* ---- a cluster ---------------------------------------------------------------- */

LTest(redis_cluster, keys_spread_over_three_masters)
{
	fix_t       f;
	redis_res_t r = { 0 };
	char        key[64], val[64], raw[16];
	long long   n0, n1, n2;
	redisReply *rep;
	const char *argv[3];
	size_t      lens[3];
	unsigned    seedv = 14;

	setup(&f);
	redis_fixture_cluster(3, f.node);
	seed(&f, f.node[1]->port);                 /* one seed: the rest found */
	open_up(&f);
	cr_assert_eq(bc_tier_redis_cluster_mode(f.cl),
	    BC_TIER_REDIS_CLUSTER_CLUSTER);
	cr_assert(bc_tier_redis_cluster_up(f.cl));
	cr_assert_eq(slots_of(&f, f.node[0]->port) + slots_of(&f,
	    f.node[1]->port) + slots_of(&f, f.node[2]->port), 16384);
	cr_assert_gt(slots_of(&f, f.node[0]->port), 5000);
	cr_assert_gt(slots_of(&f, f.node[2]->port), 5000);

	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		snprintf(val, sizeof(val), "val:%d", i * 31);
		run(&f, &r, key, "SET", key, val, NULL);
		cr_assert_eq(r.status, 0);
		cr_assert_eq(r.type, REDIS_REPLY_STATUS, "%s: %s", key, r.str);
	}
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		snprintf(val, sizeof(val), "val:%d", i * 31);
		run(&f, &r, key, "GET", key, NULL);
		cr_assert_eq(r.type, REDIS_REPLY_STRING, "%s", key);
		cr_assert_str_eq(r.str, val);
	}
	n0 = int_cmd(f.node[0], "DBSIZE");
	n1 = int_cmd(f.node[1], "DBSIZE");
	n2 = int_cmd(f.node[2], "DBSIZE");
	cr_assert(n0 > 50 && n1 > 50 && n2 > 50, "%lld %lld %lld", n0, n1, n2);
	cr_assert_eq(n0 + n1 + n2, 300);
	cr_assert_eq(CSTAT(f.cl, moved), 0);
	cr_assert_eq(CSTAT(f.cl, ask), 0);
	cr_assert_eq(CSTAT(f.cl, refreshes), 1);
	cr_assert_eq(CSTAT(f.cl, answers), 600);

	run(&f, &r, NULL, "PING", NULL);          /* no key: any node */
	cr_assert_str_eq(r.str, "PONG");

	/* our slots are the server's, binary keys and braces included */
	for (int i = 0; i < 200; i++) {
		size_t len = 1 + (size_t)(rand_r(&seedv) % sizeof(raw));

		for (size_t j = 0; j < len; j++) {
			int c = rand_r(&seedv) % 6;

			raw[j] = c == 0 ? '{' : c == 1 ? '}' :
			    (char)rand_r(&seedv);
		}
		argv[0] = "CLUSTER";
		argv[1] = "KEYSLOT";
		argv[2] = raw;
		lens[0] = 7;
		lens[1] = 7;
		lens[2] = len;
		rep = redis_fixture_cmdv(f.node[0], 3, argv, lens);
		cr_assert_eq(rep->type, REDIS_REPLY_INTEGER);
		cr_assert_eq(rep->integer, bc_tier_redis_cluster_slot(raw, len),
		    "key %d", i);
		freeReplyObject(rep);
	}
	redis_res_clear(&r);
	teardown(&f);
}

/* The index of the node serving key now (the one not answering MOVED). */
static int
owner(fix_t *f, const char *key)
{
	for (int i = 0; i < 3; i++) {
		redisReply *r = redis_fixture_cmd(f->node[i], "GET %s", key);
		bool        moved = r->type == REDIS_REPLY_ERROR &&
		    strncmp(r->str, "MOVED", 5) == 0;

		freeReplyObject(r);
		if (!moved)
			return i;
	}
	cr_assert_fail("no node serves %s", key);
	return -1;
}

static void
nap_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

LTest(redis_cluster, migration_ask_tryagain_moved)
{
	fix_t         f;
	redis_res_t   r = { 0 };
	redis_node_t *src, *dst, *other;
	int           s, d;
	int           slot = slot_of("mig");
	uint32_t      src_slots, dst_slots;

	setup(&f);
	redis_fixture_cluster(3, f.node);
	for (int i = 0; i < 3; i++)
		seed(&f, f.node[i]->port);
	f.opts.max_retries = 3;
	open_up(&f);
	run(&f, &r, "{mig}a", "SET", "{mig}a", "va", NULL);
	run(&f, &r, "{mig}b", "SET", "{mig}b", "vb", NULL);
	s = owner(&f, "{mig}a");
	d = (s + 1) % 3;
	src = f.node[s];
	dst = f.node[d];
	other = f.node[(s + 2) % 3];
	src_slots = slots_of(&f, src->port);
	dst_slots = slots_of(&f, dst->port);

	/* {mig}a moves to dst while the slot is migrating */
	ok_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, src->id);
	ok_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, dst->id);
	ok_cmd(src, "MIGRATE 127.0.0.1 %d %s 0 5000 KEYS {mig}a",
	    dst->port, "");

	run(&f, &r, "{mig}a", "GET", "{mig}a", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_STRING, "%s", r.str);
	cr_assert_str_eq(r.str, "va");
	cr_assert_eq(CSTAT(f.cl, ask), 1);
	run(&f, &r, "{mig}b", "GET", "{mig}b", NULL);  /* still on src */
	cr_assert_str_eq(r.str, "vb");
	cr_assert_eq(CSTAT(f.cl, ask), 1);
	run(&f, &r, "{mig}c", "SET", "{mig}c", "vc", NULL);  /* new: ASK */
	cr_assert_eq(r.type, REDIS_REPLY_STATUS, "%s", r.str);
	cr_assert_eq(CSTAT(f.cl, ask), 2);
	cr_assert_eq(CSTAT(f.cl, moved), 0);
	cr_assert_eq(slots_of(&f, src->port), src_slots);  /* map unchanged */

	/* a and b on different nodes: TRYAGAIN, retried, then the answer */
	run(&f, &r, "{mig}a", "MGET", "{mig}a", "{mig}b", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.type, REDIS_REPLY_ERROR);
	cr_assert(strncmp(r.str, "TRYAGAIN", 8) == 0, "%s", r.str);
	cr_assert_eq(CSTAT(f.cl, tryagain), 3);
	cr_assert_eq(CSTAT(f.cl, redirect_limit), 1);

	/* the rest moves and the slot is given to dst: MOVED */
	ok_cmd(src, "MIGRATE 127.0.0.1 %d %s 0 5000 KEYS {mig}b",
	    dst->port, "");
	ok_cmd(dst, "CLUSTER SETSLOT %d NODE %s", slot, dst->id);
	ok_cmd(src, "CLUSTER SETSLOT %d NODE %s", slot, dst->id);
	ok_cmd(other, "CLUSTER SETSLOT %d NODE %s", slot, dst->id);
	run(&f, &r, "{mig}b", "GET", "{mig}b", NULL);
	cr_assert_str_eq(r.str, "vb");
	cr_assert_eq(CSTAT(f.cl, moved), 1);
	run(&f, &r, "{mig}a", "MGET", "{mig}a", "{mig}b", "{mig}c", NULL);
	cr_assert_eq(r.type, REDIS_REPLY_ARRAY);
	cr_assert_eq(r.elements, 3);
	cr_assert_eq(CSTAT(f.cl, moved), 1);   /* the slot went to dst at once */
	/* The refresh MOVED asked for has no callback: poll its effect. */
	for (int i = 0; i < 2000 && slots_of(&f, dst->port) != dst_slots + 1;
	    i++)
		nap_ms(5);
	cr_assert_eq(slots_of(&f, dst->port), dst_slots + 1);
	cr_assert_eq(slots_of(&f, src->port), src_slots - 1);
	cr_assert_geq(CSTAT(f.cl, refreshes), 2);
	redis_res_clear(&r);
	teardown(&f);
}

/* A key "<prefix><n>" whose slot node i serves. */
static void
key_on(fix_t *f, int i, const char *prefix, char *out, size_t len)
{
	for (int n = 0; n < 10000; n++) {
		snprintf(out, len, "%s%d", prefix, n);
		if (owner(f, out) == i)
			return;
	}
	cr_assert_fail("no key for node %d", i);
}

typedef struct two_s {
	sub_t a, b;
} two_t;

static void
do_submit_two(void *arg)
{
	two_t *t = arg;

	do_submit(&t->a);
	do_submit(&t->b);
}

/*
 * The map changes while a SET is on the wire to the slot's old master
 * (paused): a DEL of the same key submitted after the change must not
 * reach the new master before the SET, which comes there by MOVED once
 * the old master wakes. Without the order rule the DEL goes straight to
 * the new master, runs first, and the key survives.
 */
LTest(redis_cluster, slot_order_kept_across_a_map_change)
{
	fix_t         f;
	redis_res_t   r = { 0 }, rset = { 0 }, rdel = { 0 }, rk2 = { 0 };
	char          k[32], k2[32];
	int           a = 0, b = 1, c = 2;   /* old master, new, the seed */
	uint32_t      b_slots;
	two_t         two;
	sub_t         del;

	setup(&f);
	redis_fixture_cluster(3, f.node);
	seed(&f, f.node[c]->port);        /* the map is asked of c */
	f.opts.conn.command_timeout_ms = 10000;
	open_up(&f);
	key_on(&f, a, "ord:a:", k, sizeof(k));
	key_on(&f, c, "ord:c:", k2, sizeof(k2));
	run(&f, &r, k, "GET", k, NULL);   /* a's connection is up */
	cr_assert_eq(r.type, REDIS_REPLY_NIL);
	b_slots = slots_of(&f, f.node[b]->port);
	/* both slots (empty) go to b; the client's map does not know */
	for (int i = 0; i < 3; i++) {
		ok_cmd(f.node[i], "CLUSTER SETSLOT %d NODE %s", slot_of(k),
		    f.node[b]->id);
		ok_cmd(f.node[i], "CLUSTER SETSLOT %d NODE %s", slot_of(k2),
		    f.node[b]->id);
	}
	nap_ms(150);                      /* past refresh_min_ms */
	redis_fixture_pause(f.node[a]);
	/* SET k waits on paused a; GET k2 is told MOVED by c, which asks c
	 * for the map: k's slot is b's in it */
	two.a = (sub_t){ .f = &f, .key = k, .argc = 3,
	    .argv = { "SET", k, "v" }, .lens = { 3, strlen(k), 1 },
	    .res = &rset };
	two.b = (sub_t){ .f = &f, .key = k2, .argc = 2,
	    .argv = { "GET", k2 }, .lens = { 3, strlen(k2) }, .res = &rk2 };
	redis_fixture_on_loop(f.loop, do_submit_two, &two);
	cr_assert_eq(two.a.rv, 0);
	cr_assert_eq(two.b.rv, 0);
	redis_res_wait(&rk2);
	cr_assert_eq(rk2.type, REDIS_REPLY_NIL, "%d %s", rk2.type, rk2.str);
	for (int i = 0; i < 2000 && slots_of(&f, f.node[b]->port) !=
	    b_slots + 2; i++)
		nap_ms(5);
	cr_assert_eq(slots_of(&f, f.node[b]->port), b_slots + 2,
	    "the map moved both slots to b");
	del = (sub_t){ .f = &f, .key = k, .argc = 2, .argv = { "DEL", k },
	    .lens = { 3, strlen(k) }, .res = &rdel };
	redis_fixture_on_loop(f.loop, do_submit, &del);
	cr_assert_eq(del.rv, 0);
	nap_ms(100);                      /* a wrong DEL would run now */
	cr_assert_geq(CSTAT(f.cl, held), 1, "the DEL waits for the SET");
	redis_fixture_resume(f.node[a]);
	redis_res_wait(&rset);
	redis_res_wait(&rdel);
	cr_assert_eq(rset.type, REDIS_REPLY_STATUS, "%d %s", rset.type,
	    rset.str);
	cr_assert_eq(rdel.type, REDIS_REPLY_INTEGER);
	cr_assert_eq(rdel.integer, 1, "the DEL ran after the SET");
	run(&f, &r, k, "GET", k, NULL);
	cr_assert_eq(r.type, REDIS_REPLY_NIL, "the key was deleted");
	cr_assert_geq(CSTAT(f.cl, moved), 2);
	redis_res_clear(&r);
	redis_res_clear(&rset);
	redis_res_clear(&rdel);
	redis_res_clear(&rk2);
	teardown(&f);
}

LTest(redis_cluster, master_down_and_back)
{
	fix_t       f;
	redis_res_t r = { 0 };
	sub_t       s;
	int         o;

	setup(&f);
	redis_fixture_cluster(3, f.node);
	seed(&f, f.node[0]->port);
	f.opts.conn.backoff_max_ms = 200;
	open_up(&f);
	run(&f, &r, "k", "SET", "k", "v", NULL);
	o = owner(&f, "k");
	redis_fixture_kill(f.node[o]);
	RF_WAIT_FOR(f.downs >= 1);
	cr_assert(!bc_tier_redis_cluster_up(f.cl));
	redis_res_clear(&r);
	s = (sub_t){ .f = &f, .key = "k", .argc = 2, .argv = { "GET", "k" },
	    .lens = { 3, 1 }, .res = &r };
	redis_fixture_on_loop(f.loop, do_submit, &s);
	if (s.rv == 0) {
		redis_res_wait(&r);
		cr_assert_lt(r.status, 0);
	} else {
		cr_assert_eq(s.rv, BC_ENOTCONN);
	}
	redis_fixture_restart(f.node[o]);
	redis_fixture_cluster_wait_ok(f.node, 3);
	RF_WAIT_FOR(f.ups >= 2);
	cr_assert(bc_tier_redis_cluster_up(f.cl));
	run(&f, &r, "k", "GET", "k", NULL);       /* no persistence: gone */
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.type, REDIS_REPLY_NIL, "%d %s", r.type, r.str);
	redis_res_clear(&r);
	teardown(&f);
}

/* ---- standalone ---------------------------------------------------------------- */

LTest(redis_cluster, standalone_same_api)
{
	fix_t         f;
	redis_res_t   r = { 0 };
	redis_node_t *n;
	char          key[32];
	nodes_t       ns;

	setup(&f);
	n = redis_fixture_start(NULL);
	seed(&f, 1);                               /* nothing listens there */
	seed(&f, n->port);
	f.opts.refresh_min_ms = 50;
	open_up(&f);
	cr_assert_eq(bc_tier_redis_cluster_mode(f.cl),
	    BC_TIER_REDIS_CLUSTER_STANDALONE);
	cr_assert_geq(CSTAT(f.cl, refresh_errors), 1);
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "s:%d", i);
		run(&f, &r, key, "SET", key, key, NULL);
		cr_assert_eq(r.type, REDIS_REPLY_STATUS);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "s:%d", i);
		run(&f, &r, key, "GET", key, NULL);
		cr_assert_str_eq(r.str, key);
	}
	run(&f, &r, NULL, "DBSIZE", NULL);
	cr_assert_eq(r.integer, 50);
	cr_assert_eq(int_cmd(n, "DBSIZE"), 50);
	ns = (nodes_t){ .f = &f };
	redis_fixture_on_loop(f.loop, do_nodes, &ns);
	cr_assert_eq(ns.count, 2);
	redis_res_clear(&r);
	teardown(&f);
}
