/*
 * test_prefetch_warm.c — warm-ups (prefetch_warm.h) over a real cache
 * and the in-process fake origin (tests/unit/cache/fake_origin.h), whose
 * relays the test answers with listing pages it writes, hostile ones
 * included: keys outside the prefix or with a ".." segment are skipped,
 * a key outside the owner's grant too; a truncated page without a new
 * token, a malformed page, an error answer and a page over its bound end
 * the warm-up failed with the reason; pages follow their continuation
 * tokens; memory is filled within its budget without evicting; a lower
 * tier is filled without keeping chunks in memory; the registry's bounds
 * (one per prefix, four running), owners, cancel and the JSON.
 * Ticks run on the loop (the registry's timer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"
#include "../cache/fake_origin.h"
#include "../tier/tier_async.h"

#include "cache/cache.h"
#include "config/config.h"
#include "prefetch/prefetch_warm.h"
#include "s3/s3_xml.h"
#include "stats/stats.h"
#include "tier/tier_chain.h"
#include "loop/loop.h"
#include "util/util_error.h"

#define CS     4096

static bc_config_t    cfg;
static bc_loop_t     *loop;
static fake_origin_t *fo;
static bc_cache_t    *cache;
static bc_warm_t     *warm;

/* The listing the relays answer: pages of "key size" lines, the next
 * token after each page ("" for the last); or a whole canned answer. */
typedef struct listing_s {
	const char *pages[4][8];
	const char *tokens[4];
	int         status;        /* 0: 200 with the pages */
	const char *canned;        /* with status: this body */
	size_t      big;           /* >0: a body of this many bytes */
	char        asked[4][256]; /* each relay's continuation-token */
	unsigned    n;
} listing_t;

static listing_t L;

static void
answer(void *arg, const bc_relay_t *r, int *status, bc_buf_t *body)
{
	listing_t *l = arg;
	const char *tok = bc_kv_get_exact(&r->s3->query, "continuation-token");
	unsigned page = 0;

	cr_assert_eq(r->s3->op, BC_S3OP_ListObjectsV2);
	snprintf(l->asked[l->n % 4], sizeof(l->asked[0]), "%s",
	    tok != NULL ? tok : "");
	l->n++;
	if (l->big > 0) {
		*status = 200;
		bc_buf_puts(body, "<ListBucketResult>");
		while (body->len < l->big)
			bc_buf_puts(body, "<Contents><Key>x</Key><Size>1"
			    "</Size></Contents>");
		return;
	}
	if (l->status != 0) {
		*status = l->status;
		bc_buf_puts(body, l->canned);
		return;
	}
	for (unsigned i = 1; tok != NULL && page == 0 && i < 4; i++) {
		/* the tokens are written as XML text: compare them decoded */
		char *t = l->tokens[i - 1] != NULL ? bc_s3_xml_text(
		    l->tokens[i - 1], strlen(l->tokens[i - 1])) : NULL;

		if (t != NULL && strcmp(t, tok) == 0)
			page = i;
		free(t);
	}
	*status = 200;
	bc_buf_puts(body, "<?xml version=\"1.0\"?><ListBucketResult xmlns="
	    "\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>ds</Name>");
	for (int i = 0; l->pages[page][i] != NULL; i++) {
		const char *prefix = bc_kv_get_exact(&r->s3->query, "prefix");
		char key[128];
		unsigned long size;

		cr_assert_eq(sscanf(l->pages[page][i], "%127s %lu", key,
		    &size), 2);
		/* "*name": name under the prefix asked for */
		bc_buf_printf(body, "<Contents><Key>%s%s</Key><ETag>&quot;e"
		    "&quot;</ETag><Size>%lu</Size></Contents>", key[0] == '*' ?
		    prefix : "", key[0] == '*' ? key + 1 : key, size);
	}
	if (l->tokens[page] != NULL && l->tokens[page][0] != '\0')
		bc_buf_printf(body, "<IsTruncated>true</IsTruncated>"
		    "<NextContinuationToken>%s</NextContinuationToken>",
		    l->tokens[page]);
	else
		bc_buf_puts(body, "<IsTruncated>false</IsTruncated>");
	bc_buf_puts(body, "</ListBucketResult>");
}

static void
put(const char *key, size_t size)
{
	uint8_t *data = malloc(size > 0 ? size : 1);
	char etag[64];

	cr_assert_not_null(data);
	memset(data, key[strlen(key) - 1], size);
	snprintf(etag, sizeof(etag), "\"%zx-%c\"", size, key[0]);
	fake_origin_put(fo, "ds", key, data, size, etag, NULL, NULL);
	free(data);
}

static void
start(uint64_t mem, bool lower)
{
	bc_cache_opts_t co;
	bc_warm_opts_t wo;

	memset(&L, 0, sizeof(L));
	cr_assert_eq(bc_config_init(&cfg), 0);
	cfg.chunk_size = CS;
	cfg.mem_size = mem;
	loop = bc_loop_new(NULL);
	cr_assert_not_null(loop);
	cr_assert_eq(bc_loop_start(loop), 0);
	fo = fake_origin_new(loop);
	cr_assert_not_null(fo);
	fake_origin_on_relay(fo, answer, &L);
	memset(&co, 0, sizeof(co));
	co.cfg = &cfg;
	co.origin = fake_origin_base(fo);
	co.loop = loop;
	cr_assert_eq(bc_cache_new(&co, &cache), 0);
	if (lower) {
		bc_tier_opts_t to = { .capacity = 64 << 20, .loop = loop,
		    .name = "disk" };
		bc_tier_t *t;

		cr_assert_eq(bc_tier_async.open(&to, &t), 0);
		cr_assert_eq(bc_tier_chain_add(bc_cache_tiers(cache), t), 0);
	}
	memset(&wo, 0, sizeof(wo));
	wo.cache = cache;
	wo.origin = fake_origin_base(fo);
	wo.loop = loop;
	wo.region = "us-east-1";
	wo.chunk_size = CS;
	wo.concurrency = 3;
	warm = bc_warm_new(&wo);
	cr_assert_not_null(warm);
}

static void
stop(void)
{
	fake_origin_gate(fo, false);
	bc_loop_stop(loop, fake_origin_stop_fn, fo);
	bc_warm_free(warm);
	bc_cache_free(cache);
	bc_origin_free(fake_origin_base(fo));
	bc_loop_free(loop);
	bc_config_fini(&cfg);
}

/* A field of prefix's progress as text (its JSON value). */
static void
field(const char *prefix, const char *name, char *out, size_t n)
{
	bc_buf_t b = BC_BUF_INIT;
	char pat[64];
	const char *p;
	size_t i = 0;

	cr_assert_eq(bc_warm_get(warm, "ds", prefix, NULL, &b), 0);
	snprintf(pat, sizeof(pat), "\"%s\": ", name);
	p = strstr(bc_buf_str(&b), pat);
	cr_assert_not_null(p, "%s in %s", name, bc_buf_str(&b));
	p += strlen(pat);
	if (*p == '"')
		p++;
	while (p[i] != '\0' && p[i] != '"' && p[i] != ',' && p[i] != '}' &&
	    i + 1 < n) {
		out[i] = p[i];
		i++;
	}
	out[i] = '\0';
	bc_buf_fini(&b);
}

static long
num(const char *prefix, const char *name)
{
	char v[64];

	field(prefix, name, v, sizeof(v));
	return strtol(v, NULL, 10);
}

/* Waits (5 s at most) until prefix's warm-up is no longer running;
 * returns its state. */
static const char *
wait_end(const char *prefix)
{
	static char st[32];

	for (int i = 0; i < 500; i++) {
		field(prefix, "state", st, sizeof(st));
		if (strcmp(st, "running") != 0)
			return st;
		usleep(10000);
	}
	return st;
}

static int
start_warm(const char *prefix, const char *tier, const bc_client_key_t *k,
    const char *owner)
{
	bc_warm_req_t q = { "ds", prefix, tier, k, owner };
	bc_buf_t b = BC_BUF_INIT;
	char err[160];
	int rv = bc_warm_start(warm, &q, &b, err, sizeof(err));

	bc_buf_fini(&b);
	return rv;
}

TestSuite(warm, .timeout = 60);

LTest(warm, pages_follow_tokens_and_hostile_keys_are_skipped)
{
	char v[256];

	start(16 << 20, false);
	put("ds/a", 100);
	put("ds/b", 3 * CS + 5);
	put("ds/c", 7);
	L.pages[0][0] = "ds/a 100";
	L.pages[0][1] = "ds/b 12293";
	L.pages[0][2] = "evil/x 10";       /* not under the prefix */
	L.pages[0][3] = "ds/../x 10";      /* a ".." segment */
	L.tokens[0] = "tok&amp;1";
	L.pages[1][0] = "ds/c 7";
	L.tokens[1] = "";
	cr_assert_eq(start_warm("ds/", "memory", NULL, NULL), 0);
	cr_assert_str_eq(wait_end("ds/"), "done");
	cr_assert_eq(num("ds/", "pages"), 2);
	cr_assert_eq(num("ds/", "objects_listed"), 5);
	cr_assert_eq(num("ds/", "objects_skipped"), 2);
	cr_assert_eq(num("ds/", "bytes_skipped"), 20);
	cr_assert_eq(num("ds/", "objects_warmed"), 3);
	cr_assert_eq(num("ds/", "objects_done"), 3);
	cr_assert_eq(num("ds/", "bytes_done"), 100 + 3 * CS + 5 + 7);
	cr_assert_eq(num("ds/", "objects_failed"), 0);
	field("ds/", "cached_fraction", v, sizeof(v));
	cr_assert_str_eq(v, "1.0000");
	cr_assert_eq(L.n, 2, "two relays");
	cr_assert_str_eq(L.asked[0], "");
	cr_assert_str_eq(L.asked[1], "tok&1", "the decoded token goes back");
	cr_assert_eq(fake_origin_count(fo, "GET", NULL), 3 + 3,
	    "a first fill per object and three more chunks of ds/b");
	cr_assert_eq(fake_origin_count(fo, "GET", NULL),
	    fake_origin_count(fo, NULL, NULL), "no HEAD");
	/* again: everything is cached, nothing fetched */
	cr_assert_eq(start_warm("ds/", "memory", NULL, NULL), 0);
	cr_assert_str_eq(wait_end("ds/"), "done");
	cr_assert_eq(num("ds/", "objects_cached"), 3);
	cr_assert_eq(num("ds/", "objects_warmed"), 0);
	cr_assert_eq(fake_origin_count(fo, "GET", NULL), 6);
	stop();
}

LTest(warm, a_keys_grant_skips_what_it_may_not_read)
{
	static char ak[] = "AK", sk[] = "SK", entry[] = "ds/ds/ok/";
	char *allow[] = { entry };
	bc_client_key_t k = { ak, sk, allow, 1 };

	start(16 << 20, false);
	put("ds/ok/1", 10);
	put("ds/no/1", 10);
	L.pages[0][0] = "ds/no/1 10";
	L.pages[0][1] = "ds/ok/1 10";
	cr_assert_eq(start_warm("ds/", "memory", &k, "AK"), 0);
	cr_assert_str_eq(wait_end("ds/"), "done");
	cr_assert_eq(num("ds/", "objects_skipped"), 1);
	cr_assert_eq(num("ds/", "objects_done"), 1);
	cr_assert_eq(fake_origin_count(fo, NULL, NULL), 1,
	    "only the granted key was fetched");
	stop();
}

/* Each bad answer ends the warm-up failed, with its reason. */
LTest(warm, bad_listings_fail_with_a_reason)
{
	static const struct {
		int         status;
		const char *body;
		size_t      big;
		const char *why;
	} cases[] = {
		{ 503, "<Error><Code>SlowDown</Code></Error>", 0,
		    "answered 503 SlowDown" },
		{ 200, "<html>not a listing</html>", 0,
		    "not a ListBucketResult" },
		{ 200, "<ListBucketResult><Contents><Key>ds/a</Key></Contents>"
		    "</ListBucketResult>", 0, "not a ListBucketResult" },
		{ 200, "<ListBucketResult><Contents><Key>ds/a</Key><Size>1"
		    "</Size></Contents><IsTruncated>true</IsTruncated>"
		    "</ListBucketResult>", 0, "without a new continuation" },
		{ 0, NULL, BC_WARM_PAGE_MAX + 1000, "over" },
	};
	char v[256];

	start(16 << 20, false);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		L.status = cases[i].status;
		L.canned = cases[i].body;
		L.big = cases[i].big;
		cr_assert_eq(start_warm("ds/", NULL, NULL, NULL), 0);
		cr_assert_str_eq(wait_end("ds/"), "failed", "case %zu", i);
		field("ds/", "error", v, sizeof(v));
		cr_assert_not_null(strstr(v, cases[i].why), "case %zu: %s", i,
		    v);
	}
	/* a page naming the token it was asked with, again */
	L.status = 0;
	L.canned = NULL;
	L.big = 0;
	L.pages[0][0] = "ds/a 1";
	L.tokens[0] = "same";
	L.pages[1][0] = "ds/b 1";
	L.tokens[1] = "same";
	put("ds/a", 1);
	put("ds/b", 1);
	cr_assert_eq(start_warm("ds/", NULL, NULL, NULL), 0);
	cr_assert_str_eq(wait_end("ds/"), "failed");
	field("ds/", "error", v, sizeof(v));
	cr_assert_not_null(strstr(v, "without a new continuation"), "%s", v);
	stop();
}

/* Into memory: what fits its budget (its room less an eighth), the rest
 * no_room, nothing evicted. */
LTest(warm, memory_is_filled_within_its_budget)
{
	static char keys[20][16], lines[20][32];
	bc_tier_mem_stats_t ms;
	long done, nr;

	start(256 * 1024, false);
	for (int i = 0; i < 20; i++) {
		snprintf(keys[i], sizeof(keys[i]), "ds/o%02d", i);
		snprintf(lines[i], sizeof(lines[i]), "ds/o%02d %d", i, 3 * CS);
		put(keys[i], 3 * CS);
	}
	for (int i = 0; i < 7; i++)
		L.pages[0][i] = lines[i];
	L.tokens[0] = "p2";
	for (int i = 0; i < 7; i++)
		L.pages[1][i] = lines[7 + i];
	L.tokens[1] = "p3";
	for (int i = 0; i < 6; i++)
		L.pages[2][i] = lines[14 + i];
	L.tokens[2] = "";
	cr_assert_eq(start_warm("ds/", "memory", NULL, NULL), 0);
	cr_assert_str_eq(wait_end("ds/"), "done");
	done = num("ds/", "objects_done");
	nr = num("ds/", "objects_no_room");
	cr_assert_eq(done + nr, 20, "%ld + %ld", done, nr);
	cr_assert_gt(nr, 0);
	cr_assert_gt(done, 5);
	cr_assert_leq(num("ds/", "bytes_done"), 256 * 1024 * 7 / 8);
	bc_tier_mem_stats(bc_tier_chain_top(bc_cache_tiers(cache)), &ms);
	cr_assert_eq(ms.evictions, 0, "a warm-up evicts nothing");
	cr_assert_leq(ms.usage, ms.capacity);
	stop();
}

/* Into a lower tier: written there, memory keeps none of the chunks. */
LTest(warm, a_lower_tier_is_filled_around_memory)
{
	bc_tier_chain_t *ch;
	bc_tier_mem_stats_t ms;
	bc_tier_async_ctl_t *ctl;

	start(16 << 20, true);
	put("ds/a", 2 * CS + 1);
	put("ds/b", 10);
	L.pages[0][0] = "ds/a 8193";
	L.pages[0][1] = "ds/b 10";
	cr_assert_eq(start_warm("ds/", NULL, NULL, NULL), 0);
	cr_assert_str_eq(wait_end("ds/"), "done");
	{
		char v[32];

		field("ds/", "tier", v, sizeof(v));
		cr_assert_str_eq(v, "disk", "the first lower tier by default");
	}
	cr_assert_eq(num("ds/", "objects_warmed"), 2);
	ch = bc_cache_tiers(cache);
	bc_tier_chain_flush(ch);
	ctl = bc_tier_async_ctl(bc_tier_chain_at(ch, 1));
	cr_assert_eq(ctl->puts, 4, "4 chunks written to the lower tier");
	bc_tier_mem_stats(bc_tier_chain_top(ch), &ms);
	cr_assert_eq(ms.chunks, 0, "memory holds none of them");
	cr_assert_eq(start_warm("ds/x/", "tape", NULL, NULL), BC_EINVAL);
	stop();
}

LTest(warm, registry_bounds_owners_and_cancel)
{
	static const char *const p[] = { "p1/", "p2/", "p3/", "p4/" };
	bc_buf_t b = BC_BUF_INIT;
	char v[32];

	start(16 << 20, false);
	L.pages[0][0] = "*a 10";
	fake_origin_gate(fo, true);   /* fills wait: runs keep running */
	for (int i = 0; i < 4; i++) {
		char key[16];

		snprintf(key, sizeof(key), "%sa", p[i]);
		put(key, 10);
		cr_assert_eq(start_warm(p[i], "memory", NULL,
		    i == 3 ? "AK" : NULL), 0);
	}
	cr_assert(fake_origin_wait_held(fo, 4, 5000), "each run's fill held");
	cr_assert_eq(start_warm("p1/", "memory", NULL, NULL), BC_EEXIST);
	cr_assert_eq(start_warm("p5/", "memory", NULL, NULL), BC_ENOSPC);
	cr_assert_eq(bc_warm_running(warm), 4);
	/* owners: the operator reads all, a key only its own */
	cr_assert_eq(bc_warm_get(warm, "ds", "p1/", "AK", &b), BC_EACCES);
	cr_assert_eq(bc_warm_get(warm, "ds", "p9/", NULL, &b), BC_ENOENT);
	cr_assert_eq(bc_warm_get(warm, "ds", "p4/", "AK", &b), 0);
	bc_buf_reset(&b);
	cr_assert_eq(bc_warm_list(warm, "AK", &b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"prefix\": \"p4/\""));
	cr_assert_null(strstr(bc_buf_str(&b), "\"prefix\": \"p1/\""));
	bc_buf_reset(&b);
	cr_assert_eq(bc_warm_cancel(warm, "ds", "p1/", "AK", &b), BC_EACCES);
	cr_assert_eq(bc_warm_cancel(warm, "ds", "p1/", NULL, &b), 0);
	cr_assert_not_null(strstr(bc_buf_str(&b), "\"state\": \"canceled\""));
	bc_buf_fini(&b);
	for (int i = 0; i < 500 && bc_warm_running(warm) > 3; i++)
		usleep(10000);
	cr_assert_eq(bc_warm_running(warm), 3, "p1 ended at the next tick");
	field("p1/", "state", v, sizeof(v));
	cr_assert_str_eq(v, "canceled");
	fake_origin_gate(fo, false);   /* the held fills end */
	cr_assert_str_eq(wait_end("p2/"), "done");
	cr_assert_str_eq(wait_end("p4/"), "done");
	cr_assert_eq(num("p4/", "objects_warmed"), 1);
	cr_assert_eq(bc_warm_running(warm), 0);
	cr_assert(fake_origin_wait_quiet(fo, 5000));
	stop();
}
