/*
 * test_cache_list.c — the list cache (cache_list.h): which listings it
 * takes and how it keys them (every parameter that changes an answer,
 * unsigned apart, V1 apart from V2; another parameter, a repeated one or
 * an answer-changing header is refused; off without --list-ttl unless
 * under --immutable), hits and expiry, what a write or an invalidation
 * drops (and what it leaves), an answer fetched across an invalidation
 * is not kept, the byte bound (least recently used first, an answer over
 * a quarter of it refused), entries held by a hit outlive their drop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "cache/cache_list.h"
#include "config/config.h"
#include "s3/s3_request.h"
#include "util/util_error.h"

static bc_config_t cfg;

/* A config with list-ttl ms, size bytes and the immutable entries
 * (NULL-ended). */
static void
config(uint64_t ttl_ms, uint64_t size, const char *const *imm)
{
	cr_assert_eq(bc_config_init(&cfg), 0);
	cfg.list_ttl = ttl_ms;
	cfg.list_cache_size = size;
	for (; imm != NULL && *imm != NULL; imm++) {
		char **v = realloc(cfg.immutable.v, (cfg.immutable.n + 1) *
		    sizeof(*v));

		cr_assert_not_null(v);
		cfg.immutable.v = v;
		v[cfg.immutable.n] = strdup(*imm);
		cr_assert_not_null(v[cfg.immutable.n]);
		cfg.immutable.n++;
	}
}

/* Parses a request target (and optional header) into r. */
static void
req(bc_s3_req_t *r, const char *method, const char *target,
    const char *hname, const char *hval)
{
	bc_s3_req_init(r);
	if (hname != NULL)
		cr_assert_eq(bc_kv_add(&r->headers, hname, hval), 0);
	cr_assert_eq(bc_s3_req_parse(r, method, target, NULL), BC_S3E_NONE,
	    "%s", target);
}

/* bc_cache_list_key of target; 0 fills k (the caller finis it). */
static int
key_of(bc_cache_list_t *l, const char *target, bool anon, bc_list_key_t *k)
{
	bc_s3_req_t r;
	int rv;

	req(&r, "GET", target, NULL, NULL);
	rv = bc_cache_list_key(l, &r, anon, k);
	bc_s3_req_fini(&r);
	return rv;
}

static void
put_body(bc_cache_list_t *l, const char *target, const char *body)
{
	bc_list_key_t k;
	bc_kvlist_t h = BC_KVLIST_INIT;

	cr_assert_eq(key_of(l, target, false, &k), 0, "%s", target);
	cr_assert_eq(bc_kv_add(&h, "Content-Type", "application/xml"), 0);
	cr_assert_eq(bc_kv_add(&h, "x-amz-request-id", "R1"), 0);
	cr_assert_eq(bc_cache_list_put(l, &k, "b", bc_cache_list_gen(l), &h,
	    body, strlen(body)), 0);
	bc_kv_fini(&h);
	bc_cache_list_key_fini(&k);
}

/* Whether target (signed) is cached. */
static bool
cached(bc_cache_list_t *l, const char *target)
{
	bc_list_key_t k;
	const bc_list_entry_t *e;

	cr_assert_eq(key_of(l, target, false, &k), 0, "%s", target);
	e = bc_cache_list_get(l, &k);
	bc_cache_list_release(l, e);
	bc_cache_list_key_fini(&k);
	return e != NULL;
}

TestSuite(list_cache, .timeout = 30);

LTest(list_cache, keys_tell_apart_what_changes_an_answer)
{
	static const char *const distinct[] = {
		"/b?list-type=2&prefix=a/",
		"/b?list-type=2&prefix=a/&delimiter=/",
		"/b?list-type=2&prefix=a/&max-keys=5",
		"/b?list-type=2&prefix=a/&start-after=a/x",
		"/b?list-type=2&prefix=a/&continuation-token=t",
		"/b?list-type=2&prefix=a/&encoding-type=url",
		"/b?list-type=2&prefix=a/&fetch-owner=true",
		"/b?prefix=a/",                        /* V1 */
		"/b?prefix=a/&marker=a/x",
		"/b?list-type=2&prefix=a/&delimiter=",  /* empty, not absent */
		"/c?list-type=2&prefix=a/",
		"/b?list-type=2",
		NULL
	};
	bc_list_key_t k[16], ka, kb;
	bc_cache_list_t *l;
	size_t n = 0;

	config(1000, 1 << 20, NULL);
	l = bc_cache_list_new(&cfg);
	cr_assert_not_null(l);
	for (; distinct[n] != NULL; n++)
		cr_assert_eq(key_of(l, distinct[n], false, &k[n]), 0, "%s",
		    distinct[n]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			cr_assert(k[i].key.len != k[j].key.len ||
			    memcmp(k[i].key.data, k[j].key.data,
			    k[i].key.len) != 0, "%s == %s", distinct[i],
			    distinct[j]);
	for (size_t i = 0; i < n; i++)
		bc_cache_list_key_fini(&k[i]);
	/* order of parameters and authentication-only ones do not count */
	cr_assert_eq(key_of(l, "/b?prefix=a/&list-type=2&max-keys=5", false,
	    &ka), 0);
	cr_assert_eq(key_of(l, "/b?max-keys=5&list-type=2&x-id=ListObjectsV2"
	    "&prefix=a/", false, &kb), 0);
	cr_assert_str_eq(bc_buf_str(&ka.key), bc_buf_str(&kb.key));
	cr_assert_str_eq(ka.prefix, "a/");
	cr_assert_eq(ka.ttl_ns, 1000000000ull);
	bc_cache_list_key_fini(&kb);
	/* unsigned requests are apart */
	cr_assert_eq(key_of(l, "/b?prefix=a/&list-type=2&max-keys=5", true,
	    &kb), 0);
	cr_assert_str_neq(bc_buf_str(&ka.key), bc_buf_str(&kb.key));
	bc_cache_list_key_fini(&ka);
	bc_cache_list_key_fini(&kb);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}

LTest(list_cache, what_it_does_not_take)
{
	static const char *const imm[] = { "frozen/ds/", "whole", NULL };
	bc_cache_list_t *l;
	bc_list_key_t k;
	bc_s3_req_t r;

	config(0, 1 << 20, imm);
	l = bc_cache_list_new(&cfg);
	/* no --list-ttl: off, but under --immutable (no expiry) */
	cr_assert_eq(key_of(l, "/b?list-type=2&prefix=a/", false, &k),
	    BC_ENOENT);
	cr_assert_eq(key_of(l, "/frozen?list-type=2&prefix=ds/", false, &k),
	    0);
	cr_assert_eq(k.ttl_ns, UINT64_MAX);
	bc_cache_list_key_fini(&k);
	cr_assert_eq(key_of(l, "/frozen?list-type=2&prefix=ds/x/", false,
	    &k), 0);
	cr_assert_eq(k.ttl_ns, UINT64_MAX);
	bc_cache_list_key_fini(&k);
	cr_assert_eq(key_of(l, "/other?list-type=2&prefix=ds/", false, &k),
	    BC_ENOENT, "another bucket");
	cr_assert_eq(key_of(l, "/frozen?list-type=2&prefix=d", false, &k),
	    BC_ENOENT, "a listing wider than the immutable prefix");
	cr_assert_eq(key_of(l, "/whole?list-type=2", false, &k), 0);
	bc_cache_list_key_fini(&k);
	/* refused whatever the settings */
	cr_assert_eq(key_of(l, "/whole?list-type=2&foo=1", false, &k),
	    BC_ENOTSUP);
	cr_assert_eq(key_of(l, "/whole?list-type=2&prefix=a&prefix=b", false,
	    &k), BC_ENOTSUP);
	cr_assert_eq(key_of(l, "/whole?versions&prefix=a", false, &k),
	    BC_ENOTSUP);
	cr_assert_eq(key_of(l, "/whole/key", false, &k), BC_ENOTSUP);
	req(&r, "GET", "/whole?list-type=2", "x-amz-request-payer",
	    "requester");
	cr_assert_eq(bc_cache_list_key(l, &r, false, &k), BC_ENOTSUP);
	bc_s3_req_fini(&r);
	req(&r, "GET", "/whole?list-type=2", "X-Amz-Expected-Bucket-Owner",
	    "1");
	cr_assert_eq(bc_cache_list_key(l, &r, false, &k), BC_ENOTSUP);
	bc_s3_req_fini(&r);
	req(&r, "HEAD", "/whole?list-type=2", NULL, NULL);
	cr_assert_eq(bc_cache_list_key(l, &r, false, &k), BC_ENOTSUP);
	bc_s3_req_fini(&r);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}

LTest(list_cache, hits_headers_and_expiry)
{
	bc_cache_list_t *l;
	const bc_list_entry_t *e;
	bc_list_key_t k;

	config(100, 1 << 20, NULL);
	l = bc_cache_list_new(&cfg);
	cr_assert(!cached(l, "/b?list-type=2&prefix=a/"));
	put_body(l, "/b?list-type=2&prefix=a/", "<ListBucketResult/>");
	cr_assert_eq(key_of(l, "/b?list-type=2&prefix=a/", false, &k), 0);
	e = bc_cache_list_get(l, &k);
	cr_assert_not_null(e);
	cr_assert_eq(e->len, strlen("<ListBucketResult/>"));
	cr_assert_eq(memcmp(e->body, "<ListBucketResult/>", e->len), 0);
	cr_assert_str_eq(bc_kv_get(&e->headers, "Content-Type"),
	    "application/xml");
	cr_assert_null(bc_kv_get(&e->headers, "x-amz-request-id"),
	    "per-request headers are not kept");
	bc_cache_list_release(l, e);
	usleep(150 * 1000);
	cr_assert_null(bc_cache_list_get(l, &k), "expired after list-ttl");
	bc_cache_list_key_fini(&k);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}

LTest(list_cache, writes_drop_the_listings_they_touch)
{
	static const char *const t[] = {
		"/b?list-type=2&prefix=data/",
		"/b?list-type=2&prefix=data/sub/",
		"/b?list-type=2&prefix=other/",
		"/b?list-type=2",
		"/c?list-type=2&prefix=data/",
	};
	bc_cache_list_t *l;

	config(60000, 1 << 20, NULL);
	l = bc_cache_list_new(&cfg);
	for (int i = 0; i < 5; i++)
		put_body(l, t[i], "x");
	/* c's listing is put under bucket b by put_body: put it right */
	{
		bc_list_key_t k;

		cr_assert_eq(key_of(l, t[4], false, &k), 0);
		cr_assert_eq(bc_cache_list_put(l, &k, "c",
		    bc_cache_list_gen(l), NULL, "x", 1), 0);
		bc_cache_list_key_fini(&k);
	}
	/* a write of b/data/x: data/ and the whole bucket, not data/sub/,
	 * other/ or bucket c */
	cr_assert_eq(bc_cache_list_invalidate(l, "b", "data/x", NULL), 2);
	cr_assert(!cached(l, t[0]) && !cached(l, t[3]));
	cr_assert(cached(l, t[1]) && cached(l, t[2]) && cached(l, t[4]));
	/* a write of b/data/sub/y: data/sub/ */
	cr_assert_eq(bc_cache_list_invalidate(l, "b", "data/sub/y", NULL), 1);
	cr_assert(!cached(l, t[1]));
	for (int i = 0; i < 4; i++)
		put_body(l, t[i], "x");
	/* an invalidation of prefix data/s: what lies under it (data/sub/)
	 * and what holds it (data/, the whole bucket) */
	cr_assert_eq(bc_cache_list_invalidate(l, "b", NULL, "data/s"), 3);
	cr_assert(cached(l, t[2]));
	/* of the whole bucket: everything of b */
	cr_assert_eq(bc_cache_list_invalidate(l, "b", NULL, ""), 1);
	cr_assert(!cached(l, t[2]) && cached(l, t[4]));
	cr_assert_eq(bc_cache_list_invalidate(NULL, "b", NULL, ""), 0);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}

LTest(list_cache, an_answer_across_an_invalidation_is_not_kept)
{
	bc_cache_list_t *l;
	bc_list_key_t k;
	uint64_t gen;

	config(60000, 1 << 20, NULL);
	l = bc_cache_list_new(&cfg);
	cr_assert_eq(key_of(l, "/b?list-type=2&prefix=a/", false, &k), 0);
	gen = bc_cache_list_gen(l);
	/* a write anywhere while the listing was being fetched */
	(void)bc_cache_list_invalidate(l, "b", "zzz", NULL);
	cr_assert_eq(bc_cache_list_put(l, &k, "b", gen, NULL, "x", 1),
	    BC_EAGAIN);
	cr_assert_null(bc_cache_list_get(l, &k));
	cr_assert_eq(bc_cache_list_put(l, &k, "b", bc_cache_list_gen(l),
	    NULL, "x", 1), 0);
	bc_cache_list_key_fini(&k);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}

LTest(list_cache, the_bound_and_held_entries)
{
	char target[64], body[2000];
	bc_cache_list_t *l;
	const bc_list_entry_t *held;
	bc_list_key_t k;
	int kept = 0;

	config(60000, 64 * 1024, NULL);
	l = bc_cache_list_new(&cfg);
	cr_assert_eq(bc_cache_list_max_entry(l), 16 * 1024);
	memset(body, 'x', sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	put_body(l, "/b?list-type=2&prefix=p0", body);
	cr_assert_eq(key_of(l, "/b?list-type=2&prefix=p0", false, &k), 0);
	held = bc_cache_list_get(l, &k);
	cr_assert_not_null(held);
	for (int i = 1; i < 100; i++) {
		snprintf(target, sizeof(target), "/b?list-type=2&prefix=p%d",
		    i);
		put_body(l, target, body);
	}
	for (int i = 0; i < 100; i++) {
		snprintf(target, sizeof(target), "/b?list-type=2&prefix=p%d",
		    i);
		kept += cached(l, target);
	}
	cr_assert_gt(kept, 10);
	cr_assert_lt(kept, 40, "64K holds about 30 of 2 KB");
	cr_assert(cached(l, "/b?list-type=2&prefix=p99"), "the newest stays");
	cr_assert(!cached(l, "/b?list-type=2&prefix=p0"), "the oldest went");
	/* the dropped entry a hit holds is still whole */
	cr_assert_eq(held->len, sizeof(body) - 1);
	cr_assert_eq(held->body[0], 'x');
	bc_cache_list_release(l, held);
	/* over a quarter of the bound */
	{
		size_t n = 16 * 1024 + 1;
		char *big = malloc(n);

		cr_assert_not_null(big);
		memset(big, 'y', n);
		cr_assert_eq(bc_cache_list_put(l, &k, "b",
		    bc_cache_list_gen(l), NULL, big, n), BC_E2BIG);
		free(big);
	}
	bc_cache_list_key_fini(&k);
	bc_cache_list_free(l);
	bc_config_fini(&cfg);
}
