/* test_upstream_file.c — the file origin (upstream_file.h).
 *
 * Its pure parts: key and bucket validation, continuation tokens, and
 * listing order/pagination over a real directory tree, checked against a
 * brute-force model of S3's listing rules. (The XML bodies it reads are
 * s3_xml.h's: tests/unit/s3/test_s3_xml.c.)
 *
 * Then the origin interface with no HTTP server: relayed requests built
 * as the HTTP side hands them over (parsed, SigV4-verified), their bodies
 * streamed in small pieces, answers read with read() or body_fd():
 * checksums (headers and aws-chunked trailers verified and kept in the
 * metadata xattr, S3's default CRC64NVME, GET/HEAD with
 * x-amz-checksum-mode, ranges, copies, multipart parts), buckets, PUT
 * with Content-MD5 and x-amz-content-sha256, GET/HEAD with ranges and
 * conditions, deletes, listings, multipart uploads. And fetches, pull
 * and push on a running loop: sinks, collection, errors, release and
 * cancel races, and the upstream_file_reads counter. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "config/config.h"
#include "s3/s3_auth.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "stats/stats.h"
#include "upstream/upstream.h"
#include "upstream/upstream_file.h"
#include "loop/loop.h"
#include "upstream/upstream_xfer.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_kv.h"
#include "util/util_log.h"

/* ---- keys and buckets ------------------------------------------------- */

typedef struct {
	const char *key;
	bc_s3err_t  want;
} key_case_t;

LTest(upstream_file, key_check)
{
	static const key_case_t kc[] = {
		{ "a", BC_S3E_NONE },
		{ "a/b/c.txt", BC_S3E_NONE },
		{ "a b/c+d/%41", BC_S3E_NONE },
		{ "...", BC_S3E_NONE },
		{ "a/..b/c..", BC_S3E_NONE },
		{ ".hidden", BC_S3E_NONE },
		{ ".bucketcache", BC_S3E_NONE },
		{ "x/.bucketcachex", BC_S3E_NONE },
		{ "\xc3\xa9/\x01", BC_S3E_NONE },
		{ "", BC_S3E_InvalidArgument },
		{ "/a", BC_S3E_InvalidArgument },
		{ "/", BC_S3E_InvalidArgument },
		{ "a//b", BC_S3E_InvalidArgument },
		{ "a/", BC_S3E_InvalidArgument },
		{ "..", BC_S3E_InvalidArgument },
		{ "../a", BC_S3E_InvalidArgument },
		{ "a/..", BC_S3E_InvalidArgument },
		{ "a/../b", BC_S3E_InvalidArgument },
		{ ".", BC_S3E_InvalidArgument },
		{ "./a", BC_S3E_InvalidArgument },
		{ "a/./b", BC_S3E_InvalidArgument },
		{ "a/.", BC_S3E_InvalidArgument },
		{ ".bucketcache-tmp", BC_S3E_InvalidArgument },
		{ ".bucketcache-tmp/x", BC_S3E_InvalidArgument },
		{ "a/.bucketcache-mpu/x", BC_S3E_InvalidArgument },
		{ ".bucketcache-", BC_S3E_InvalidArgument },
	};
	char seg[NAME_MAX + 8];
	char key[BC_S3_MAX_KEY + 8];

	for (size_t i = 0; i < sizeof(kc) / sizeof(kc[0]); i++)
		cr_expect_eq(bc_file_key_check(kc[i].key), kc[i].want,
		    "'%s': %s", kc[i].key,
		    bc_s3err_code(bc_file_key_check(kc[i].key)));

	/* one segment may be NAME_MAX bytes, not more */
	memset(seg, 'a', NAME_MAX);
	seg[NAME_MAX] = '\0';
	cr_expect_eq(bc_file_key_check(seg), BC_S3E_NONE);
	seg[NAME_MAX] = 'a';
	seg[NAME_MAX + 1] = '\0';
	cr_expect_eq(bc_file_key_check(seg), BC_S3E_KeyTooLongError);

	/* the whole key may be BC_S3_MAX_KEY bytes */
	for (int i = 0; i < BC_S3_MAX_KEY; i++)
		key[i] = i % 100 == 99 ? '/' : 'k';
	key[BC_S3_MAX_KEY] = '\0';
	cr_expect_eq(bc_file_key_check(key), BC_S3E_NONE);
	key[BC_S3_MAX_KEY] = 'k';
	key[BC_S3_MAX_KEY + 1] = '\0';
	cr_expect_eq(bc_file_key_check(key), BC_S3E_KeyTooLongError);
}

typedef struct {
	const char *name;
	bool        strict, legacy;
} bucket_case_t;

LTest(upstream_file, bucket_names)
{
	static const bucket_case_t bc[] = {
		{ "abc", true, true },
		{ "my-bucket.data-01", true, true },
		{ "a.b.c", true, true },
		{ "123", true, true },
		{ "ab", false, true },
		{ "a", false, true },
		{ "MyBucket", false, true },
		{ "my_bucket", false, true },
		{ "-abc", false, true },
		{ "abc-", false, true },
		{ "a..b", false, true },
		{ "a.-b", false, true },
		{ "a-.b", false, true },
		{ "192.168.1.1", false, true },
		{ "xn--abc", false, true },
		{ "sthree-abc", false, true },
		{ "abc-s3alias", false, true },
		{ "abc--ol-s3", false, true },
		{ "", false, false },
		{ ".", false, false },
		{ "..", false, false },
		{ ".abc", false, false },
		{ ".bucketcache-tmp", false, false },
		{ "_abc", false, false },
		{ "a/b", false, false },
		{ "a b", false, false },
		{ "a\\b", false, false },
		{ "a:b", false, false },
		{ "\xc3\xa9t\xc3\xa9", false, false },
	};
	char name[300];

	for (size_t i = 0; i < sizeof(bc) / sizeof(bc[0]); i++) {
		cr_expect_eq(bc_file_bucket_ok(bc[i].name, true), bc[i].strict,
		    "strict '%s'", bc[i].name);
		cr_expect_eq(bc_file_bucket_ok(bc[i].name, false),
		    bc[i].legacy, "legacy '%s'", bc[i].name);
	}
	memset(name, 'a', 64);
	name[63] = '\0';
	cr_expect(bc_file_bucket_ok(name, true));
	name[63] = 'a';
	name[64] = '\0';
	cr_expect(!bc_file_bucket_ok(name, true));
	cr_expect(bc_file_bucket_ok(name, false));
	memset(name, 'a', 256);
	name[255] = '\0';
	cr_expect(bc_file_bucket_ok(name, false));
	name[255] = 'a';
	name[256] = '\0';
	cr_expect(!bc_file_bucket_ok(name, false));
}

/* ---- tokens ------------------------------------------------------------ */

LTest(upstream_file, tokens)
{
	char out[64];
	char *back;

	bc_file_token_encode("a/b c", out);
	cr_expect_str_eq(out, "612f622063");
	back = bc_file_token_decode(out);
	cr_assert_not_null(back);
	cr_expect_str_eq(back, "a/b c");
	free(back);
	back = bc_file_token_decode("612F");   /* either case */
	cr_assert_not_null(back);
	cr_expect_str_eq(back, "a/");
	free(back);
	cr_expect_null(bc_file_token_decode(""));
	cr_expect_null(bc_file_token_decode("6"));
	cr_expect_null(bc_file_token_decode("6g"));
	cr_expect_null(bc_file_token_decode("6100"));   /* NUL byte */
	cr_expect_null(bc_file_token_decode("zz"));
}

/* ---- listing ----------------------------------------------------------- */

static char tree[256];

/* Every object of the test tree; a file's content is its key. */
static const char *const objects[] = {
	"0", "9/9", "A", "a-c", "a.b", "a0", "a/b-c", "a/b/c", "a/b/c2/d",
	"a/b/c3", "a/bc", "ab", "b-/y", "b.z", "b/x", "c", "d/e-",
	"d/e/f/g/h", "d/e/f/g/i", "z~", "\x7f", "\xc3\xa9t\xc3\xa9",
	"\xc3\xa9/x", "sp ace/+plus", "x/y/z/.dot", "x/y/z/..dot",
	"deep/1/2/3/4/5/6/7/8/9/10/11/12/leaf",
};

static void
mkpath(const char *rel, bool file, const char *content)
{
	char p[PATH_MAX];
	char *s;

	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	for (s = p + strlen(tree) + 1; *s != '\0'; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	if (file) {
		FILE *f = fopen(p, "w");

		cr_assert_not_null(f, "%s", p);
		fputs(content, f);
		fclose(f);
	} else {
		mkdir(p, 0755);
	}
}

static void
make_tree(void)
{
	char p[PATH_MAX + 32];

	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		mkpath(objects[i], true, objects[i]);
	/* not objects: empty directories, our hidden area, links, a fifo */
	mkpath("empty/", false, NULL);
	mkpath("empty2/sub/", false, NULL);
	mkpath("d/e/empty/", false, NULL);
	mkpath(".bucketcache-tmp/put.1234", true, "junk");
	mkpath(".bucketcache-mpu/0123/upload", true, "junk");
	mkpath("a/.bucketcache-tmp/x", true, "junk");
	snprintf(p, sizeof(p), "%s/link", tree);
	cr_assert_eq(symlink("a", p), 0);
	snprintf(p, sizeof(p), "%s/a/lnk", tree);
	cr_assert_eq(symlink("/etc/passwd", p), 0);
	snprintf(p, sizeof(p), "%s/emptylinkdir", tree);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/emptylinkdir/l", tree);
	cr_assert_eq(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/fifo", tree);
	cr_assert_eq(mkfifo(p, 0644), 0);
}

static void
rm_tree_sh(void)
{
	char cmd[PATH_MAX + 16];

	if (tree[0] == '\0')
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	cr_expect_eq(system(cmd), 0);
	tree[0] = '\0';
}

static int
strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct {
	char  *v[256];
	bool   pfx[256];
	size_t n;
} model_t;

static void
model_fini(model_t *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	m->n = 0;
}

/* S3's rules by brute force over the sorted key list. */
static void
model_list(const char *prefix, const char *delim, const char *after,
    model_t *m)
{
	size_t nobj = sizeof(objects) / sizeof(objects[0]);
	const char *sorted[sizeof(objects) / sizeof(objects[0])];
	size_t plen = strlen(prefix), dlen = strlen(delim);

	memcpy(sorted, objects, sizeof(sorted));
	qsort(sorted, nobj, sizeof(sorted[0]), strcmp_p);
	m->n = 0;
	for (size_t i = 0; i < nobj; i++) {
		const char *k = sorted[i];
		const char *hit;
		char *item;
		bool pfx = false;

		if (strncmp(k, prefix, plen) != 0)
			continue;
		hit = dlen > 0 ? strstr(k + plen, delim) : NULL;
		if (hit != NULL) {
			item = strndup(k, (size_t)(hit - k) + dlen);
			pfx = true;
		} else {
			item = strdup(k);
		}
		cr_assert_not_null(item);
		if (strcmp(item, after) <= 0 || (m->n > 0 &&
		    strcmp(m->v[m->n - 1], item) == 0)) {
			free(item);
			continue;
		}
		m->pfx[m->n] = pfx;
		m->v[m->n++] = item;
	}
}

static int
open_tree(void)
{
	int fd = open(tree, O_RDONLY | O_DIRECTORY);

	cr_assert_geq(fd, 0);
	return fd;
}

/* Pages through the listing max items at a time and compares every page
 * with the model. */
static void
check_listing(int fd, const char *prefix, const char *delim,
    const char *start, size_t max)
{
	model_t m;
	char *after = strdup(start);
	size_t at = 0, pages = 0;

	model_list(prefix, delim, start, &m);
	for (;;) {
		bc_file_list_opts_t o = { prefix, delim, after, max };
		bc_file_list_t l;

		cr_assert_eq(bc_file_list(fd, &o, &l), 0);
		cr_assert_leq(l.n, max);
		for (size_t i = 0; i < l.n; i++) {
			cr_assert_lt(at + i, m.n, "prefix '%s' delim '%s' "
			    "max %zu: extra item '%s'", prefix, delim, max,
			    l.v[i].name);
			cr_assert_str_eq(l.v[i].name, m.v[at + i],
			    "prefix '%s' delim '%s' start '%s' max %zu "
			    "item %zu", prefix, delim, start, max, at + i);
			cr_assert_eq(l.v[i].is_prefix, m.pfx[at + i]);
			if (!l.v[i].is_prefix) {
				/* each file holds its own key */
				cr_assert_eq(l.v[i].size,
				    strlen(l.v[i].name));
				cr_assert_eq(strlen(l.v[i].etag), 34);
			}
		}
		at += l.n;
		pages++;
		cr_assert_eq(l.truncated, at < m.n, "prefix '%s' delim '%s' "
		    "max %zu at %zu of %zu", prefix, delim, max, at, m.n);
		if (!l.truncated) {
			bc_file_list_fini(&l);
			break;
		}
		cr_assert_gt(l.n, 0);
		free(after);
		after = strdup(l.v[l.n - 1].name);
		bc_file_list_fini(&l);
		cr_assert_lt(pages, 1000);
	}
	cr_expect_eq(at, m.n);
	free(after);
	model_fini(&m);
}

LTest(upstream_file, list_matches_model, .fini = rm_tree_sh)
{
	static const char *const prefixes[] = { "", "a", "a/", "a/b",
	    "a/b/", "b", "d/e/", "d/e/f/g/", "zz", "\xc3\xa9", "deep/1/2/",
	    "x/y/z/.", "sp" };
	static const char *const delims[] = { "", "/", "-", "b", "/c", "e/f",
	    "\xa9", "z/." };
	static const char *const starts[] = { "", "a", "a/", "a/b", "b",
	    "d/e/f/g/h", "~", "\xff" };
	static const size_t maxes[] = { 1, 2, 3, 7, 1000 };
	int fd;

	make_tree();
	fd = open_tree();
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++)
		for (size_t d = 0; d < sizeof(delims) / sizeof(delims[0]); d++)
			for (size_t x = 0; x < sizeof(maxes) /
			    sizeof(maxes[0]); x++)
				check_listing(fd, prefixes[p], delims[d], "",
				    maxes[x]);
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
		for (size_t d = 0; d < sizeof(delims) / sizeof(delims[0]); d++)
			for (size_t x = 0; x < sizeof(maxes) /
			    sizeof(maxes[0]); x++)
				check_listing(fd, "", delims[d], starts[s],
				    maxes[x]);
	close(fd);
}

LTest(upstream_file, list_basics, .fini = rm_tree_sh)
{
	bc_file_list_opts_t o = { NULL, NULL, NULL, 1000 };
	bc_file_list_t l;
	int fd;

	make_tree();
	fd = open_tree();
	/* everything, no hidden entries, links, fifos or empty dirs */
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_eq(l.n, sizeof(objects) / sizeof(objects[0]));
	cr_expect(!l.truncated);
	for (size_t i = 0; i < l.n; i++) {
		cr_expect(strstr(l.v[i].name, ".bucketcache-") == NULL);
		cr_expect(strncmp(l.v[i].name, "link", 4) != 0);
		cr_expect(strcmp(l.v[i].name, "fifo") != 0);
		cr_expect(strcmp(l.v[i].name, "a/lnk") != 0);
		if (i > 0)
			cr_expect_lt(strcmp(l.v[i - 1].name, l.v[i].name), 0);
	}
	bc_file_list_fini(&l);

	/* byte order, not directory order: "a-c" < "a.b" < "a/..." < "a0" */
	o.max = 4;
	o.after = "9/9";
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_assert_eq(l.n, 4);
	cr_expect_str_eq(l.v[0].name, "A");
	cr_expect_str_eq(l.v[1].name, "a-c");
	cr_expect_str_eq(l.v[2].name, "a.b");
	cr_expect_str_eq(l.v[3].name, "a/b-c");
	cr_expect(l.truncated);
	bc_file_list_fini(&l);

	/* "/" delimiter at the top: empty dirs and link-only dirs are not
	 * prefixes */
	o.max = 1000;
	o.after = NULL;
	o.delimiter = "/";
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	for (size_t i = 0; i < l.n; i++) {
		cr_expect(strcmp(l.v[i].name, "empty/") != 0);
		cr_expect(strcmp(l.v[i].name, "empty2/") != 0);
		cr_expect(strcmp(l.v[i].name, "emptylinkdir/") != 0);
	}
	bc_file_list_fini(&l);

	/* max 0: nothing, not truncated */
	o.max = 0;
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_eq(l.n, 0);
	cr_expect(!l.truncated);
	bc_file_list_fini(&l);
	close(fd);
}

/* A directory far larger than one page is read in bounded passes. */
LTest(upstream_file, list_big_directory, .fini = rm_tree_sh)
{
	const int nfiles = 2500;
	bc_file_list_opts_t o = { "f/", NULL, NULL, 7 };
	char *after = NULL;
	int fd, seen = 0;

	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	for (int i = 0; i < nfiles; i++) {
		char k[32];

		/* names whose byte order differs from creation order */
		snprintf(k, sizeof(k), "f/%d", (i * 7919) % nfiles);
		mkpath(k, true, "x");
	}
	mkpath("f/empty-dir/", false, NULL);
	fd = open_tree();
	for (;;) {
		bc_file_list_t l;

		o.after = after;
		cr_assert_eq(bc_file_list(fd, &o, &l), 0);
		for (size_t i = 0; i < l.n; i++) {
			if (after != NULL)
				cr_assert_lt(strcmp(after, l.v[i].name), 0);
			free(after);
			after = strdup(l.v[i].name);
			seen++;
		}
		if (!l.truncated) {
			bc_file_list_fini(&l);
			break;
		}
		cr_assert_eq(l.n, 7);
		bc_file_list_fini(&l);
	}
	cr_expect_eq(seen, nfiles);
	free(after);
	close(fd);
}

/* Stored metadata is used only while it describes the file. */
LTest(upstream_file, list_etag_from_xattr, .fini = rm_tree_sh)
{
	bc_file_list_opts_t o = { "k", NULL, NULL, 10 };
	bc_file_list_t l;
	char path[PATH_MAX + 8], blob[256], synth[BC_FILE_ETAG_LEN];
	struct stat st;
	int fd, n;

	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	mkpath("k", true, "hello");
	fd = open_tree();
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_assert_eq(l.n, 1);
	/* synthetic: 32 hex digits and "-1", stable */
	cr_expect_eq(strlen(l.v[0].etag), 34);
	cr_expect_str_eq(l.v[0].etag + 32, "-1");
	snprintf(synth, sizeof(synth), "%s", l.v[0].etag);
	bc_file_list_fini(&l);
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_str_eq(l.v[0].etag, synth);
	bc_file_list_fini(&l);

	snprintf(path, sizeof(path), "%s/k", tree);
	cr_assert_eq(stat(path, &st), 0);
	n = snprintf(blob, sizeof(blob), "bucketcache-meta 1\nsize %jd\n"
	    "mtime %jd.%09ld\netag 5d41402abc4b2a76b9719d911017c592\n"
	    "h content-type: text/plain\n", (intmax_t)st.st_size,
	    (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
	if (setxattr(path, "user.bucketcache.meta", blob, (size_t)n, 0) < 0) {
		close(fd);
		cr_skip_test("no user xattrs on %s", tree);
	}
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_str_eq(l.v[0].etag, "5d41402abc4b2a76b9719d911017c592");
	bc_file_list_fini(&l);

	/* the file changes behind our back: the stored ETag is stale */
	{
		FILE *f = fopen(path, "a");

		cr_assert_not_null(f);
		fputs("!", f);
		fclose(f);
	}
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_neq(strcmp(l.v[0].etag,
	    "5d41402abc4b2a76b9719d911017c592"), 0);
	cr_expect_str_neq(l.v[0].etag, synth);
	cr_expect_str_eq(l.v[0].etag + 32, "-1");
	bc_file_list_fini(&l);

	/* a garbled blob is ignored */
	cr_assert_eq(setxattr(path, "user.bucketcache.meta", "garbage", 7, 0),
	    0);
	cr_assert_eq(bc_file_list(fd, &o, &l), 0);
	cr_expect_str_eq(l.v[0].etag + 32, "-1");
	bc_file_list_fini(&l);
	close(fd);
}

/* A prefix naming a directory is walked from there, but never above the
 * bucket, into hidden areas or through links. */
LTest(upstream_file, list_prefix_stays_inside, .fini = rm_tree_sh)
{
	static const char *const bad[] = { "../", "../secret", "../bkt/",
	    "./", "a/../", "a/./", "a//", "/", "/a", ".bucketcache-tmp/",
	    "a/.bucketcache-tmp/", "lnk/", "lnk/x", "a/f/" };
	char p[PATH_MAX];
	int fd;

	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	mkpath("secret", true, "s");
	mkpath("bkt/a/f", true, "f");
	mkpath("bkt/a/.bucketcache-tmp/t", true, "t");
	mkpath("bkt/.bucketcache-tmp/t", true, "t");
	snprintf(p, sizeof(p), "%s/bkt/lnk", tree);
	cr_assert_eq(symlink("..", p), 0);
	snprintf(p, sizeof(p), "%s/bkt", tree);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bc_file_list_opts_t o = { bad[i], NULL, NULL, 1000 };
		bc_file_list_t l;

		cr_assert_eq(bc_file_list(fd, &o, &l), 0);
		cr_expect_eq(l.n, 0, "prefix '%s' listed '%s'", bad[i],
		    l.n > 0 ? l.v[0].name : "");
		bc_file_list_fini(&l);
	}
	{
		bc_file_list_opts_t o = { "a/", NULL, NULL, 1000 };
		bc_file_list_t l;

		cr_assert_eq(bc_file_list(fd, &o, &l), 0);
		cr_assert_eq(l.n, 1);
		cr_expect_str_eq(l.v[0].name, "a/f");
		bc_file_list_fini(&l);
	}
	close(fd);
}

/* ---- the origin, spoken to directly ----------------------------------- */

/* A file origin over a fresh tree (bucket "ck"), with a running loop for
 * push fetches. Requests are built as the HTTP side hands them over:
 * parsed (bc_s3_req_parse) and authenticated (bc_s3_auth_verify), signed
 * with the gateway's own SigV4 signer (key TK). What a relay stores is
 * read back from the xattr, and with GET. */

static bc_origin_t *O;
static bc_loop_t   *L;

static char tk_access[] = "TK", tk_secret[] = "tsecret";
static bc_client_key_t K = { tk_access, tk_secret, NULL, 0 };
/* the key relayed requests come from (tests change it) */
static const bc_client_key_t *client_key = &K;
/* take GET bodies with body_fd() (else read()) */
static bool use_fd;
static const char *region;

typedef enum stage_e {
	ST_RELAY = 1,    /* relay() refused it */
	ST_WRITE,        /* write() refused the body */
	ST_END,          /* write_end() refused it */
	ST_ANSWER,       /* the origin answered */
} stage_t;

typedef struct resp_s {
	long        status;
	bc_buf_t    body;
	bc_kvlist_t hdrs;
	stage_t     stage;
	bool        used_fd;
} resp_t;

static const char *
secret_of(void *ctx, const char *access_key)
{
	(void)ctx;
	return strcmp(access_key, "TK") == 0 ? "tsecret" : NULL;
}

static void
origin_start(void)
{
	char err[256] = "";

	bc_log_level = BC_LOG_ERROR;
	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	mkpath("ck/", false, NULL);
	L = bc_xfer_loop_new();
	cr_assert_not_null(L);
	cr_assert_eq(bc_loop_start(L), 0);
	cr_assert_eq(bc_file_origin_new(tree, L, &O, err, sizeof(err)), 0,
	    "%s", err);
	client_key = &K;
	use_fd = false;
	region = NULL;
}

static void
stop_fn(bc_loop_t *loop, void *arg)
{
	bc_origin_t *o = arg;

	(void)loop;
	o->ops->cancel_all(o);
}

static void
origin_stop(void)
{
	bc_loop_stop(L, stop_fn, O);
	bc_loop_free(L);
	bc_origin_free(O);
	L = NULL;
	O = NULL;
	rm_tree_sh();
}

/* Signs method path?query with headers hv (name, value, ..., NULL) and
 * payload hash ph into *h (Host first); *ctx gets the signature's
 * context. */
static void
sign(const char *method, const char *path, const char *query,
    const char *const *hv, const char *ph, bc_sigv4_ctx_t *ctx,
    bc_kvlist_t *h)
{
	const bc_sigv4_creds_t creds = { "TK", "tsecret", NULL, "us-east-1",
	    "s3" };
	bc_kvlist_t q = BC_KVLIST_INIT;

	memset(h, 0, sizeof(*h));
	if (query != NULL) {
		char *dup = strdup(query), *save = NULL;

		for (char *t = strtok_r(dup, "&", &save); t != NULL;
		    t = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(t, '=');
			char *name, *value;

			if (eq != NULL)
				*eq = '\0';
			name = bc_s3_pct_decode(t, strlen(t));
			value = eq != NULL ? bc_s3_pct_decode(eq + 1,
			    strlen(eq + 1)) : strdup("");
			bc_kv_add(&q, name, value);
			free(name);
			free(value);
		}
		free(dup);
	}
	bc_kv_add(h, "Host", "127.0.0.1:8080");
	for (size_t i = 0; hv != NULL && hv[i] != NULL; i += 2)
		bc_kv_add(h, hv[i], hv[i + 1]);
	cr_assert_eq(bc_sigv4_sign(h, method, path, &q, ph, &creds,
	    time(NULL), ctx), 0);
	bc_kv_fini(&q);
}

/* The answer for an S3 error the HTTP side answers itself. */
static void
error_resp(resp_t *r, bc_s3err_t e, const bc_s3_req_t *s3, stage_t st)
{
	r->stage = st;
	r->status = bc_s3err_status(e);
	cr_assert_eq(bc_s3err_xml(&r->body, e, NULL, s3->path,
	    s3->request_id), 0);
}

/* Relays method path?query with headers h (taken) and body as the HTTP
 * side would: relay, write (in small pieces), write_end, headers, then
 * the body through read() or body_fd(). */
static void
send_req(const char *method, const char *path, const char *query,
    bc_kvlist_t *h, const void *body, size_t len, resp_t *r)
{
	bc_s3_req_t s3;
	bc_s3_auth_t auth;
	bc_relay_t rl;
	bc_exchange_t *x;
	const bc_kvlist_t *ah;
	bc_s3err_t e;
	char uri[1024], num[24];
	size_t piece = len < 256 ? 3 : 64 * 1024;
	int status, rv;

	memset(r, 0, sizeof(*r));
	snprintf(uri, sizeof(uri), "%s%s%s", path, query != NULL ? "?" : "",
	    query != NULL ? query : "");
	bc_s3_req_init(&s3);
	s3.headers = *h;
	memset(h, 0, sizeof(*h));
	if (body != NULL) {
		snprintf(num, sizeof(num), "%zu", len);
		bc_kv_add(&s3.headers, "Content-Length", num);
	}
	cr_assert_eq(bc_s3_req_parse(&s3, method, uri, NULL), BC_S3E_NONE,
	    "%s", uri);
	e = bc_s3_auth_verify(&s3, time(NULL), secret_of, NULL, false,
	    &auth);
	if (e != BC_S3E_NONE) {
		error_resp(r, e, &s3, ST_RELAY);
		bc_s3_req_fini(&s3);
		return;
	}
	memset(&rl, 0, sizeof(rl));
	rl.s3 = &s3;
	rl.auth = &auth;
	rl.client_key = client_key;
	rl.content_length = body != NULL ? len : UINT64_MAX;
	rl.region = region;
	x = bc_origin_relay(O, &rl, &e);
	if (x == NULL) {
		cr_assert_neq(e, BC_S3E_NONE);
		error_resp(r, e, &s3, ST_RELAY);
		bc_s3_req_fini(&s3);
		return;
	}
	for (size_t at = 0; at < len; at += piece) {
		size_t k = len - at < piece ? len - at : piece;
		ssize_t n = bc_exchange_write(x, (const char *)body + at, k,
		    &e);

		if (n < 0) {
			cr_assert_eq(n, BC_EPROTO);
			error_resp(r, e, &s3, ST_WRITE);
			goto out;
		}
		cr_assert_eq((size_t)n, k, "write took %zd of %zu", n, k);
	}
	rv = bc_exchange_write_end(x, &e);
	if (rv < 0) {
		cr_assert_eq(rv, BC_EPROTO, "%s", bc_strerror(rv));
		error_resp(r, e, &s3, ST_END);
		goto out;
	}
	cr_assert_eq(bc_exchange_headers(x, &status, &ah), 0);
	r->stage = ST_ANSWER;
	r->status = status;
	for (size_t i = 0; i < ah->n; i++)
		bc_kv_add(&r->hdrs, ah->v[i].name, ah->v[i].value);
	if (use_fd) {
		int fd;
		uint64_t off, flen;

		if (bc_exchange_body_fd(x, &fd, &off, &flen) == 0) {
			char *buf = malloc(flen + 1);

			cr_assert_not_null(buf);
			cr_assert_eq(pread(fd, buf, flen, (off_t)off),
			    (ssize_t)flen);
			bc_buf_append(&r->body, buf, flen);
			free(buf);
			close(fd);
			r->used_fd = true;
		}
	}
	for (;;) {
		char buf[1000];
		ssize_t n = bc_exchange_read(x, buf, sizeof(buf));

		cr_assert_geq(n, 0, "read: %s", bc_strerror((int)n));
		if (n == 0)
			break;
		cr_assert_not(r->used_fd, "read() after body_fd()");
		bc_buf_append(&r->body, buf, (size_t)n);
	}
	cr_expect_eq(bc_exchange_error(x), 0);
	/* the body a GET carries is the announced one */
	if (strcmp(method, "HEAD") != 0 && status != 204 && status != 304) {
		snprintf(num, sizeof(num), "%zu", r->body.len);
		cr_expect_str_eq(bc_kv_get(&r->hdrs, "Content-Length"), num,
		    "%s %s", method, uri);
	}
out:
	bc_exchange_release(x);
	bc_s3_req_fini(&s3);
}

/* One signed request; body hashed into the signature (ph NULL) or not. */
static void
req(const char *method, const char *path, const char *query,
    const char *const *hv, const char *ph, const void *body, size_t len,
    resp_t *r)
{
	bc_sigv4_ctx_t ctx;
	bc_kvlist_t h;
	char hash[65];

	if (ph == NULL) {
		bc_sha256_hex(body != NULL ? body : "", len, hash);
		ph = hash;
	}
	sign(method, path, query, hv, ph, &ctx, &h);
	send_req(method, path, query, &h, body, len, r);
}

static void
resp_fini(resp_t *r)
{
	bc_buf_fini(&r->body);
	bc_kv_fini(&r->hdrs);
}

static const char *
resp_code(resp_t *r)
{
	static char code[64];
	const char *s = bc_buf_str(&r->body), *a = strstr(s, "<Code>");

	code[0] = '\0';
	if (a != NULL)
		sscanf(a + 6, "%63[^<]", code);
	return code;
}

/* The object's stored metadata blob (NUL-terminated, static). */
static const char *
stored_meta(const char *key)
{
	static char blob[8192];
	char path[PATH_MAX + 64];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/ck/%s", tree, key);
	n = getxattr(path, "user.bucketcache.meta", blob, sizeof(blob) - 1);
	blob[n > 0 ? n : 0] = '\0';
	return blob;
}

static bool
exists(const char *key)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/ck/%s", tree, key);
	return access(path, F_OK) == 0;
}

static void
get_mode(const char *key, const char *range, resp_t *r)
{
	const char *hv[] = { "x-amz-checksum-mode", "ENABLED", "Range", range,
	    NULL };
	char path[256];

	snprintf(path, sizeof(path), "/ck/%s", key);
	if (range == NULL)
		hv[2] = NULL;
	req("GET", path, NULL, hv, BC_SIGV4_EMPTY_SHA256, NULL, 0, r);
}

static const char hello[] = "Hello world";

/* A PUT with a checksum header: verified, kept, answered, returned. */
LTest(file_checksum, header, .init = origin_start, .fini = origin_stop)
{
	static const struct {
		const char *key, *name, *value;
		long        status;
		const char *code;
	} t[] = {
		{ "crc32", "x-amz-checksum-crc32", "i9aeUg==", 200, "" },
		{ "crc32c", "X-Amz-Checksum-CRC32C", "crUfeA==", 200, "" },
		{ "crc64", "x-amz-checksum-crc64nvme", "OOJZ0D8xKts=", 200, "" },
		{ "sha1", "x-amz-checksum-sha1", "e1AsOh9IyGCa4hLN+2Od7jlnP14=",
		    200, "" },
		{ "sha256", "x-amz-checksum-sha256",
		    "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw=", 200, "" },
		/* wrong, malformed */
		{ "bad1", "x-amz-checksum-crc32", "AAAAAA==", 400,
		    "BadDigest" },
		{ "bad2", "x-amz-checksum-sha256",
		    "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", 400,
		    "BadDigest" },
		{ "bad3", "x-amz-checksum-crc32", "i9aeUg=", 400,
		    "InvalidRequest" },
		{ "bad4", "x-amz-checksum-crc32", "OOJZ0D8xKts=", 400,
		    "InvalidRequest" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		const char *hv[] = { t[i].name, t[i].value, NULL };
		char path[64], want[128];
		resp_t r;

		snprintf(path, sizeof(path), "/ck/%s", t[i].key);
		req("PUT", path, NULL, hv, NULL, hello, 11, &r);
		cr_expect_eq(r.status, t[i].status, "%s: %ld %s", t[i].key,
		    r.status, bc_buf_str(&r.body));
		cr_expect_str_eq(resp_code(&r), t[i].code);
		if (t[i].status == 200) {
			cr_expect_str_eq(bc_kv_get(&r.hdrs, t[i].name),
			    t[i].value);
			cr_expect_str_eq(bc_kv_get(&r.hdrs,
			    "x-amz-checksum-type"), "FULL_OBJECT");
			snprintf(want, sizeof(want), "\nh %s: %s\n",
			    bc_checksum_header(bc_checksum_from_header(
			    t[i].name)), t[i].value);
			cr_expect_not_null(strstr(stored_meta(t[i].key), want),
			    "%s", stored_meta(t[i].key));
		} else {
			cr_expect_not(exists(t[i].key), "%s", t[i].key);
		}
		resp_fini(&r);
	}
	/* two checksum headers */
	{
		const char *hv[] = { "x-amz-checksum-crc32", "i9aeUg==",
		    "x-amz-checksum-crc32c", "crUfeA==", NULL };
		resp_t r;

		req("PUT", "/ck/two", NULL, hv, NULL, hello, 11, &r);
		cr_expect_eq(r.status, 400);
		cr_expect_str_eq(resp_code(&r), "InvalidRequest");
		resp_fini(&r);
	}
}

/* A PUT without one keeps S3's default, a CRC64NVME. */
LTest(file_checksum, default_crc64nvme, .init = origin_start,
    .fini = origin_stop)
{
	resp_t r;

	req("PUT", "/ck/plain", NULL, NULL, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-crc64nvme"),
	    "OOJZ0D8xKts=");
	resp_fini(&r);
	cr_expect_not_null(strstr(stored_meta("plain"),
	    "\nh x-amz-checksum-crc64nvme: OOJZ0D8xKts=\n"));
	/* UNSIGNED-PAYLOAD: the same */
	req("PUT", "/ck/plain2", NULL, NULL, BC_SIGV4_UNSIGNED, hello, 11, &r);
	cr_expect_eq(r.status, 200);
	resp_fini(&r);
	cr_expect_not_null(strstr(stored_meta("plain2"),
	    "\nh x-amz-checksum-crc64nvme: OOJZ0D8xKts=\n"));
}

/* GET and HEAD return it with x-amz-checksum-mode: ENABLED, for the whole
 * object only; never without. */
LTest(file_checksum, checksum_mode, .init = origin_start, .fini = origin_stop)
{
	const char *hv[] = { "x-amz-checksum-sha1",
	    "e1AsOh9IyGCa4hLN+2Od7jlnP14=", NULL };
	const char *mode[] = { "x-amz-checksum-mode", "ENABLED", NULL };
	resp_t r;

	req("PUT", "/ck/k", NULL, hv, NULL, hello, 11, &r);
	cr_assert_eq(r.status, 200);
	resp_fini(&r);
	get_mode("k", NULL, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.body.len, 11);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"),
	    "e1AsOh9IyGCa4hLN+2Od7jlnP14=");
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-type"),
	    "FULL_OBJECT");
	resp_fini(&r);
	req("HEAD", "/ck/k", NULL, mode, BC_SIGV4_EMPTY_SHA256, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"),
	    "e1AsOh9IyGCa4hLN+2Od7jlnP14=");
	resp_fini(&r);
	req("GET", "/ck/k", NULL, NULL, BC_SIGV4_EMPTY_SHA256, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"));
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-type"));
	resp_fini(&r);
	get_mode("k", "bytes=0-4", &r);
	cr_expect_eq(r.status, 206);
	cr_expect_eq(r.body.len, 5);
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"));
	resp_fini(&r);
	/* a copy keeps it (same bytes), with either directive */
	{
		const char *cp[] = { "x-amz-copy-source", "/ck/k", NULL };
		const char *rp[] = { "x-amz-copy-source", "/ck/k",
		    "x-amz-metadata-directive", "REPLACE", NULL };

		req("PUT", "/ck/copy", NULL, cp, NULL, NULL, 0, &r);
		cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
		resp_fini(&r);
		req("PUT", "/ck/copy2", NULL, rp, NULL, NULL, 0, &r);
		cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
		resp_fini(&r);
		get_mode("copy", NULL, &r);
		cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"),
		    "e1AsOh9IyGCa4hLN+2Od7jlnP14=");
		resp_fini(&r);
		get_mode("copy2", NULL, &r);
		cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-sha1"),
		    "e1AsOh9IyGCa4hLN+2Od7jlnP14=");
		resp_fini(&r);
	}
	/* a file placed by hand has none; stored metadata names it */
	mkpath("ck/byhand", true, "Hello world");
	get_mode("byhand", NULL, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-crc64nvme"));
	resp_fini(&r);
	{
		char path[PATH_MAX + 16], blob[512];
		struct stat st;
		int n;

		snprintf(path, sizeof(path), "%s/ck/byhand", tree);
		cr_assert_eq(stat(path, &st), 0);
		n = snprintf(blob, sizeof(blob), "bucketcache-meta 1\nsize %jd\n"
		    "mtime %jd.%09ld\netag 3e25960a79dbc69b674cd4ec67a72c62\n"
		    "h x-amz-checksum-md5: nope\n"
		    "h x-amz-checksum-crc32c: crUfeA==\n",
		    (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
		    (long)st.st_mtim.tv_nsec);
		cr_assert_eq(setxattr(path, "user.bucketcache.meta", blob,
		    (size_t)n, 0), 0);
	}
	get_mode("byhand", NULL, &r);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-crc32c"),
	    "crUfeA==");
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-md5"));
	resp_fini(&r);
}

/* aws-chunked with a trailing checksum, both modes: decoded, verified,
 * kept; a wrong one stores nothing. */
LTest(file_checksum, trailer, .init = origin_start, .fini = origin_stop)
{
	/* what @aws-sdk/client-s3 sent for "Hello ", "world", "!" */
	static const char js[] = "6\r\nHello \r\n5\r\nworld\r\n1\r\n!\r\n0\r\n"
	    "x-amz-checksum-crc32:G4UZlQ==\r\n\r\n";
	const char *hv[] = { "Content-Encoding", "aws-chunked",
	    "x-amz-decoded-content-length", "12",
	    "x-amz-trailer", "x-amz-checksum-crc32",
	    "x-amz-sdk-checksum-algorithm", "CRC32", NULL };
	char bad[sizeof(js)], sig1[65], sig0[65], tsig[65], hash[65];
	char sts[512], body[512];
	bc_sigv4_ctx_t ctx;
	uint8_t mac[32];
	resp_t r;
	int n;

	req("PUT", "/ck/u", NULL, hv, BC_SIGV4_STREAMING_UNSIGNED_TRAILER, js,
	    sizeof(js) - 1, &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-crc32"),
	    "G4UZlQ==");
	resp_fini(&r);
	get_mode("u", NULL, &r);
	cr_expect_eq(r.body.len, 12);
	cr_expect_eq(memcmp(r.body.data, "Hello world!", 12), 0);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-crc32"),
	    "G4UZlQ==");
	resp_fini(&r);
	memcpy(bad, js, sizeof(js));
	memcpy(strstr(bad, "G4UZ"), "G4UY", 4);
	req("PUT", "/ck/u-bad", NULL, hv, BC_SIGV4_STREAMING_UNSIGNED_TRAILER,
	    bad, sizeof(js) - 1, &r);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(resp_code(&r), "BadDigest");
	resp_fini(&r);
	cr_expect_not(exists("u-bad"));

	/* the signed mode: the chain starts at the head's signature */
	hv[5] = "x-amz-checksum-sha256";
	hv[7] = "SHA256";
	for (int good = 1; good >= 0; good--) {
		bc_kvlist_t sl;
		char value[BC_CKSUM_B64_MAX];

		sign("PUT", good ? "/ck/s" : "/ck/s-bad", NULL, hv,
		    BC_SIGV4_STREAMING_TRAILER, &ctx, &sl);

		bc_checksum_b64(BC_CKSUM_SHA256, "Hello world!", 12, value);
		bc_sigv4_chunk_signature(&ctx, ctx.signature, "Hello world!",
		    12, sig1);
		bc_sigv4_chunk_signature(&ctx, sig1, "", 0, sig0);
		n = snprintf(sts, sizeof(sts), "x-amz-checksum-sha256:%s\n",
		    value);
		bc_sha256_hex(sts, (size_t)n, hash);
		snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n"
		    "%s\n%s", ctx.amz_date, ctx.scope, sig0, hash);
		bc_hmac_sha256(ctx.key, 32, sts, strlen(sts), mac);
		bc_hex(mac, 32, tsig);
		if (!good)
			tsig[0] = tsig[0] == '0' ? '1' : '0';
		n = snprintf(body, sizeof(body), "c;chunk-signature=%s\r\n"
		    "Hello world!\r\n0;chunk-signature=%s\r\n"
		    "x-amz-checksum-sha256:%s\r\n"
		    "x-amz-trailer-signature:%s\r\n\r\n", sig1, sig0, value,
		    tsig);
		send_req("PUT", good ? "/ck/s" : "/ck/s-bad", NULL, &sl, body,
		    (size_t)n, &r);
		cr_expect_eq(r.status, good ? 200 : 403, "%s",
		    bc_buf_str(&r.body));
		resp_fini(&r);
	}
	get_mode("s", NULL, &r);
	cr_expect_eq(r.body.len, 12);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-sha256"),
	    "wFNeS+K3n/2TKRMFQ2v4iTFOSj+uwF7P/Lt98xrZ5Ro=");
	resp_fini(&r);
	cr_expect_not(exists("s-bad"));
}

/* Multipart: each part's checksum is verified and answered; the
 * completed object keeps none (no composite "-N" values here). */
LTest(file_checksum, multipart, .init = origin_start, .fini = origin_stop)
{
	const char *alg[] = { "x-amz-checksum-algorithm", "CRC32", NULL };
	const char *good[] = { "x-amz-checksum-crc32", "i9aeUg==", NULL };
	const char *bad[] = { "x-amz-checksum-crc32", "AAAAAA==", NULL };
	char id[64] = "", q[128], xml[512], etag[64] = "";
	const char *e;
	resp_t r;

	req("POST", "/ck/mp", "uploads", alg, NULL, NULL, 0, &r);
	cr_assert_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	e = strstr(bc_buf_str(&r.body), "<UploadId>");
	cr_assert_not_null(e);
	sscanf(e + 10, "%63[^<]", id);
	resp_fini(&r);
	snprintf(q, sizeof(q), "partNumber=1&uploadId=%s", id);
	req("PUT", "/ck/mp", q, bad, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(resp_code(&r), "BadDigest");
	resp_fini(&r);
	req("PUT", "/ck/mp", q, good, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-checksum-crc32"),
	    "i9aeUg==");
	sscanf(bc_kv_get(&r.hdrs, "ETag"), "\"%63[^\"]", etag);
	resp_fini(&r);
	snprintf(q, sizeof(q), "uploadId=%s", id);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload><Part><ETag>"
	    "\"%s\"</ETag><PartNumber>1</PartNumber><ChecksumCRC32>i9aeUg=="
	    "</ChecksumCRC32></Part></CompleteMultipartUpload>", etag);
	req("POST", "/ck/mp", q, NULL, NULL, xml, strlen(xml), &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	resp_fini(&r);
	get_mode("mp", NULL, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.body.len, 11);
	cr_expect_null(bc_kv_get(&r.hdrs, "x-amz-checksum-crc32"));
	resp_fini(&r);
}

/* ---- relayed requests ------------------------------------------------- */

static uint64_t
file_reads(void)
{
	return atomic_load(&bc_stats_counters[BC_STAT_upstream_file_reads]);
}

static void
put_hello(const char *path, const char *const *hv)
{
	resp_t r;

	req("PUT", path, NULL, hv, NULL, hello, 11, &r);
	cr_assert_eq(r.status, 200, "%s: %s", path, bc_buf_str(&r.body));
	resp_fini(&r);
}

/* The files left in the bucket's upload area. */
static int
tmp_files(void)
{
	char cmd[PATH_MAX + 64];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s/ck/.bucketcache-tmp' 2>/dev/null",
	    tree);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(cmd, sizeof(cmd), f) != NULL)
		n++;
	pclose(f);
	return n;
}

LTest(file_relay, buckets, .init = origin_start, .fini = origin_stop)
{
	char path[PATH_MAX + 16];
	struct stat st;
	resp_t r;

	req("PUT", "/newb", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "Location"), "/newb");
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Length"), "0");
	resp_fini(&r);
	snprintf(path, sizeof(path), "%s/newb", tree);
	cr_expect(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	/* again: S3's answer for a bucket one owns, as an XML document */
	req("PUT", "/newb", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_ANSWER);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(resp_code(&r), "BucketAlreadyOwnedByYou");
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Type"),
	    "application/xml");
	cr_expect_not_null(strstr(bc_buf_str(&r.body),
	    "<Resource>/newb</Resource>"));
	resp_fini(&r);
	/* a name S3 would not create: refused before any body */
	req("PUT", "/Bad_Name", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_str_eq(resp_code(&r), "InvalidBucketName");
	resp_fini(&r);
	req("HEAD", "/newb", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "x-amz-bucket-region"),
	    "us-east-1");
	resp_fini(&r);
	region = "eu-west-1";
	req("GET", "/newb", "location", NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_not_null(strstr(bc_buf_str(&r.body), ">eu-west-1<"));
	resp_fini(&r);
	req("HEAD", "/nob", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_eq(r.status, 404);
	resp_fini(&r);
	req("DELETE", "/newb", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 204);
	cr_expect_null(bc_kv_get(&r.hdrs, "Content-Length"));
	resp_fini(&r);
	cr_expect_neq(stat(path, &st), 0);
	/* the root's buckets */
	req("GET", "/", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_not_null(strstr(bc_buf_str(&r.body),
	    "<Bucket><Name>ck</Name>"));
	resp_fini(&r);
}

/* Content-MD5 and x-amz-content-sha256 are checked over the whole body
 * when it ends; a mismatch stores nothing and leaves no temp file. */
LTest(file_relay, put_digests, .init = origin_start, .fini = origin_stop)
{
	/* base64(md5("Hello world")) and of another text */
	const char *good[] = { "Content-MD5", "PiWWCnnbxptnTNTsZ6csYg==",
	    NULL };
	const char *bad[] = { "Content-MD5", "XrY7u+Ae7tCTyyK7j1rNww==", NULL };
	const char *malformed[] = { "Content-MD5", "nope", NULL };
	char other[65];
	resp_t r;

	req("PUT", "/ck/good", NULL, good, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "ETag"),
	    "\"3e25960a79dbc69b674cd4ec67a72c62\"");
	resp_fini(&r);
	cr_expect(exists("good"));
	req("PUT", "/ck/bad", NULL, bad, NULL, hello, 11, &r);
	cr_expect_eq(r.stage, ST_END);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(resp_code(&r), "BadDigest");
	resp_fini(&r);
	cr_expect_not(exists("bad"));
	req("PUT", "/ck/malformed", NULL, malformed, NULL, hello, 11, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_str_eq(resp_code(&r), "InvalidDigest");
	resp_fini(&r);
	/* signed with the hash of another body */
	bc_sha256_hex("Hello world!", 12, other);
	req("PUT", "/ck/sha", NULL, NULL, other, hello, 11, &r);
	cr_expect_eq(r.stage, ST_END);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(resp_code(&r), "XAmzContentSHA256Mismatch");
	resp_fini(&r);
	cr_expect_not(exists("sha"));
	req("PUT", "/ck/sha", NULL, NULL, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 200);
	resp_fini(&r);
	cr_expect(exists("sha"));
	cr_expect_eq(tmp_files(), 0);
}

/* GET through read() and through body_fd(): the same bytes and headers;
 * x-amz-meta-* with an empty value survive, a hint (x-bucketcache-*) is
 * not stored. HEAD: the object's length, no body. */
LTest(file_relay, get_and_head, .init = origin_start, .fini = origin_stop)
{
	const char *hv[] = { "Content-Type", "text/plain", "x-amz-meta-color",
	    "blue", "x-amz-meta-empty", "", "x-bucketcache-job", "j1", NULL };
	const char *const heads[] = { "ETag", "Last-Modified", "Content-Type",
	    "Accept-Ranges", "x-amz-meta-color", "x-amz-meta-empty" };
	uint64_t reads = file_reads();
	resp_t a, b;

	put_hello("/ck/dir/obj", hv);
	req("GET", "/ck/dir/obj", NULL, NULL, NULL, NULL, 0, &a);
	cr_assert_eq(a.status, 200, "%s", bc_buf_str(&a.body));
	cr_expect_not(a.used_fd);
	cr_expect_eq(a.body.len, 11);
	cr_expect_eq(memcmp(a.body.data, hello, 11), 0);
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "ETag"),
	    "\"3e25960a79dbc69b674cd4ec67a72c62\"");
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "Content-Type"), "text/plain");
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "Accept-Ranges"), "bytes");
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "x-amz-meta-color"), "blue");
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "x-amz-meta-empty"), "");
	cr_expect_null(bc_kv_get(&a.hdrs, "x-bucketcache-job"));
	cr_expect_not_null(bc_kv_get(&a.hdrs, "Last-Modified"));
	use_fd = true;
	req("GET", "/ck/dir/obj", NULL, NULL, NULL, NULL, 0, &b);
	cr_expect(b.used_fd);
	cr_expect_eq(b.status, 200);
	cr_expect_eq(b.body.len, 11);
	cr_expect_eq(memcmp(b.body.data, hello, 11), 0);
	for (size_t i = 0; i < sizeof(heads) / sizeof(*heads); i++)
		cr_expect_str_eq(bc_kv_get(&b.hdrs, heads[i]),
		    bc_kv_get(&a.hdrs, heads[i]), "%s", heads[i]);
	resp_fini(&a);
	resp_fini(&b);
	/* HEAD: Content-Length of the object, no body, no fd */
	req("HEAD", "/ck/dir/obj", NULL, NULL, NULL, NULL, 0, &a);
	cr_expect_eq(a.status, 200);
	cr_expect_not(a.used_fd);
	cr_expect_eq(a.body.len, 0);
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "Content-Length"), "11");
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "x-amz-meta-empty"), "");
	resp_fini(&a);
	/* an empty object: no fd to hand over, an empty body */
	req("PUT", "/ck/empty", NULL, NULL, NULL, "", 0, &a);
	cr_expect_eq(a.status, 200);
	resp_fini(&a);
	req("GET", "/ck/empty", NULL, NULL, NULL, NULL, 0, &a);
	cr_expect_eq(a.status, 200);
	cr_expect_not(a.used_fd);
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "Content-Length"), "0");
	resp_fini(&a);
	/* every GET and HEAD above opened the object once */
	cr_expect_eq(file_reads() - reads, 4);
	/* response-* overrides from the query */
	use_fd = false;
	req("GET", "/ck/dir/obj", "response-content-type=x%2Fy", NULL, NULL,
	    NULL, 0, &a);
	cr_expect_str_eq(bc_kv_get(&a.hdrs, "Content-Type"), "x/y");
	resp_fini(&a);
}

LTest(file_relay, ranges, .init = origin_start, .fini = origin_stop)
{
	const char *rg[] = { "Range", "bytes=2-5", NULL };
	const char *past[] = { "Range", "bytes=20-30", NULL };
	resp_t r;

	put_hello("/ck/k", NULL);
	for (int fd = 0; fd <= 1; fd++) {
		use_fd = fd == 1;
		req("GET", "/ck/k", NULL, rg, NULL, NULL, 0, &r);
		cr_expect_eq(r.status, 206);
		cr_expect_eq(r.used_fd, use_fd);
		cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Range"),
		    "bytes 2-5/11");
		cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Length"), "4");
		cr_expect_eq(r.body.len, 4);
		cr_expect_eq(memcmp(r.body.data, "llo ", 4), 0);
		resp_fini(&r);
	}
	req("GET", "/ck/k", NULL, past, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 416);
	cr_expect_str_eq(resp_code(&r), "InvalidRange");
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Range"), "bytes */11");
	resp_fini(&r);
	req("GET", "/ck/k", "partNumber=2", NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 416);
	cr_expect_not_null(strstr(bc_buf_str(&r.body),
	    "The requested partnumber is not satisfiable"));
	resp_fini(&r);
}

LTest(file_relay, conditions, .init = origin_start, .fini = origin_stop)
{
	const char *et = "\"3e25960a79dbc69b674cd4ec67a72c62\"";
	const char *m_ok[] = { "If-Match", et, NULL };
	const char *m_bad[] = { "If-Match", "\"0123\"", NULL };
	const char *n_hit[] = { "If-None-Match", et, NULL };
	const char *n_miss[] = { "If-None-Match", "\"0123\"", NULL };
	resp_t r;

	put_hello("/ck/k", NULL);
	req("GET", "/ck/k", NULL, m_ok, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	resp_fini(&r);
	req("GET", "/ck/k", NULL, m_bad, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 412);
	cr_expect_str_eq(resp_code(&r), "PreconditionFailed");
	resp_fini(&r);
	req("GET", "/ck/k", NULL, n_hit, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 304);
	cr_expect_eq(r.body.len, 0);
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "ETag"), et);
	cr_expect_not_null(bc_kv_get(&r.hdrs, "Last-Modified"));
	cr_expect_null(bc_kv_get(&r.hdrs, "Content-Length"));
	resp_fini(&r);
	req("HEAD", "/ck/k", NULL, n_miss, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	resp_fini(&r);
	/* a conditional write */
	req("PUT", "/ck/k", NULL, m_bad, NULL, hello, 11, &r);
	cr_expect_eq(r.status, 412);
	resp_fini(&r);
	cr_expect_eq(tmp_files(), 0);
}

LTest(file_relay, delete, .init = origin_start, .fini = origin_stop)
{
	uint64_t reads;
	resp_t r;

	put_hello("/ck/a/b/c", NULL);
	req("DELETE", "/ck/a/b/c", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 204);
	cr_expect_null(bc_kv_get(&r.hdrs, "Content-Length"));
	resp_fini(&r);
	cr_expect_not(exists("a"));   /* emptied directories go too */
	reads = file_reads();
	req("GET", "/ck/a/b/c", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_ANSWER);
	cr_expect_eq(r.status, 404);
	cr_expect_str_eq(resp_code(&r), "NoSuchKey");
	cr_expect_str_eq(bc_kv_get(&r.hdrs, "Content-Type"),
	    "application/xml");
	resp_fini(&r);
	cr_expect_eq(file_reads(), reads);   /* nothing opened */
	req("DELETE", "/ck/a/b/c", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 204);
	resp_fini(&r);
	/* "dir/" is no object */
	req("GET", "/ck/a/", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_str_eq(resp_code(&r), "NoSuchKey");
	resp_fini(&r);
	req("GET", "/ck/.bucketcache-tmp/x", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_str_eq(resp_code(&r), "InvalidArgument");
	resp_fini(&r);
}

/* DeleteObjects deletes only under the prefixes the client key may use. */
LTest(file_relay, delete_objects_prefixes, .init = origin_start,
    .fini = origin_stop)
{
	static char allow0[] = "ck/pub/";
	static char *allow[] = { allow0 };
	static bc_client_key_t limited = { tk_access, tk_secret, allow, 1 };
	const char xml[] = "<Delete><Object><Key>pub/x</Key></Object>"
	    "<Object><Key>priv/y</Key></Object></Delete>";
	const char *s;
	resp_t r;

	put_hello("/ck/pub/x", NULL);
	put_hello("/ck/priv/y", NULL);
	client_key = &limited;
	req("POST", "/ck", "delete", NULL, NULL, xml, sizeof(xml) - 1, &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	s = bc_buf_str(&r.body);
	cr_expect_not_null(strstr(s, "<Deleted><Key>pub/x</Key></Deleted>"),
	    "%s", s);
	cr_expect_not_null(strstr(s, "<Key>priv/y</Key><Code>AccessDenied"),
	    "%s", s);
	resp_fini(&r);
	cr_expect_not(exists("pub/x"));
	cr_expect(exists("priv/y"));
}

LTest(file_relay, list_v2, .init = origin_start, .fini = origin_stop)
{
	char q[256], tok[128] = "";
	uint64_t reads;
	const char *s, *t;
	resp_t r;

	put_hello("/ck/a/1", NULL);
	put_hello("/ck/a/2", NULL);
	put_hello("/ck/b", NULL);
	reads = file_reads();
	req("GET", "/ck", "list-type=2&prefix=a%2F", NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	s = bc_buf_str(&r.body);
	cr_expect_not_null(strstr(s, "<Key>a/1</Key>"));
	cr_expect_not_null(strstr(s, "<Key>a/2</Key>"));
	cr_expect_null(strstr(s, "<Key>b</Key>"));
	cr_expect_not_null(strstr(s, "<KeyCount>2</KeyCount>"));
	cr_expect_not_null(strstr(s,
	    "<ETag>&quot;3e25960a79dbc69b674cd4ec67a72c62&quot;</ETag>"));
	resp_fini(&r);
	req("GET", "/ck", "delimiter=%2F&list-type=2", NULL, NULL, NULL, 0, &r);
	s = bc_buf_str(&r.body);
	cr_expect_not_null(strstr(s,
	    "<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"), "%s", s);
	cr_expect_not_null(strstr(s, "<Key>b</Key>"));
	resp_fini(&r);
	/* one key a page, following the tokens */
	req("GET", "/ck", "list-type=2&max-keys=1", NULL, NULL, NULL, 0, &r);
	s = bc_buf_str(&r.body);
	cr_expect_not_null(strstr(s, "<IsTruncated>true</IsTruncated>"));
	t = strstr(s, "<NextContinuationToken>");
	cr_assert_not_null(t);
	sscanf(t + 23, "%127[^<]", tok);
	resp_fini(&r);
	snprintf(q, sizeof(q), "continuation-token=%s&list-type=2&max-keys=1",
	    tok);
	req("GET", "/ck", q, NULL, NULL, NULL, 0, &r);
	cr_expect_not_null(strstr(bc_buf_str(&r.body), "<Key>a/2</Key>"));
	resp_fini(&r);
	req("GET", "/ck", "list-type=2&encoding-type=nope", NULL, NULL, NULL,
	    0, &r);
	cr_expect_eq(r.status, 400);
	resp_fini(&r);
	cr_expect_eq(file_reads(), reads);   /* listings open no object */
}

LTest(file_relay, multipart, .init = origin_start, .fini = origin_stop)
{
	char id[64] = "", id2[64] = "", q[128], xml[512];
	char etag[2][64] = { "", "" };
	const char *e;
	resp_t r;

	req("POST", "/ck/mp", "uploads", NULL, NULL, NULL, 0, &r);
	cr_assert_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	e = strstr(bc_buf_str(&r.body), "<UploadId>");
	cr_assert_not_null(e);
	sscanf(e + 10, "%63[^<]", id);
	resp_fini(&r);
	for (int p = 1; p <= 2; p++) {
		snprintf(q, sizeof(q), "partNumber=%d&uploadId=%s", p, id);
		req("PUT", "/ck/mp", q, NULL, NULL, p == 1 ? "Hello " :
		    "world", p == 1 ? 6 : 5, &r);
		cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
		sscanf(bc_kv_get(&r.hdrs, "ETag"), "\"%63[^\"]",
		    etag[p - 1]);
		resp_fini(&r);
	}
	snprintf(q, sizeof(q), "uploadId=%s", id);
	snprintf(xml, sizeof(xml), "<CompleteMultipartUpload>"
	    "<Part><ETag>\"%s\"</ETag><PartNumber>1</PartNumber></Part>"
	    "<Part><ETag>\"%s\"</ETag><PartNumber>2</PartNumber></Part>"
	    "</CompleteMultipartUpload>", etag[0], etag[1]);
	req("POST", "/ck/mp", q, NULL, NULL, xml, strlen(xml), &r);
	cr_expect_eq(r.status, 200, "%s", bc_buf_str(&r.body));
	cr_expect_not_null(strstr(bc_buf_str(&r.body), "-2&quot;</ETag>"));
	resp_fini(&r);
	req("GET", "/ck/mp", NULL, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.body.len, 11);
	cr_expect_eq(memcmp(r.body.data, hello, 11), 0);
	e = bc_kv_get(&r.hdrs, "ETag");
	cr_expect(e != NULL && strlen(e) == 36 && strcmp(e + 33, "-2\"") == 0,
	    "%s", e);
	resp_fini(&r);
	/* the upload is gone */
	snprintf(q, sizeof(q), "partNumber=1&uploadId=%s", id);
	req("PUT", "/ck/mp", q, NULL, NULL, hello, 11, &r);
	cr_expect_eq(r.stage, ST_RELAY);
	cr_expect_str_eq(resp_code(&r), "NoSuchUpload");
	resp_fini(&r);
	/* another, aborted */
	req("POST", "/ck/mp2", "uploads", NULL, NULL, NULL, 0, &r);
	e = strstr(bc_buf_str(&r.body), "<UploadId>");
	cr_assert_not_null(e);
	sscanf(e + 10, "%63[^<]", id2);
	resp_fini(&r);
	snprintf(q, sizeof(q), "uploadId=%s", id2);
	req("DELETE", "/ck/mp2", q, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 204);
	resp_fini(&r);
	req("DELETE", "/ck/mp2", q, NULL, NULL, NULL, 0, &r);
	cr_expect_eq(r.status, 404);
	cr_expect_str_eq(resp_code(&r), "NoSuchUpload");
	resp_fini(&r);
}

/* The exchange's protocol: no answer before write_end; a body that
 * failed stays failed; a released upload leaves nothing behind. */
LTest(file_relay, protocol, .init = origin_start, .fini = origin_stop)
{
	bc_s3_req_t s3;
	bc_s3_auth_t auth;
	bc_relay_t rl;
	bc_exchange_t *x;
	const bc_kvlist_t *h;
	bc_kvlist_t hv = BC_KVLIST_INIT;
	bc_sigv4_ctx_t ctx;
	bc_s3err_t e;
	char buf[16];
	int status;

	for (int round = 0; round < 2; round++) {
		sign("PUT", "/ck/p", NULL, NULL, BC_SIGV4_UNSIGNED, &ctx, &hv);
		bc_s3_req_init(&s3);
		s3.headers = hv;
		cr_assert_eq(bc_s3_req_parse(&s3, "PUT", "/ck/p", NULL),
		    BC_S3E_NONE);
		cr_assert_eq(bc_s3_auth_verify(&s3, time(NULL), secret_of,
		    NULL, false, &auth), BC_S3E_NONE);
		memset(&rl, 0, sizeof(rl));
		rl.s3 = &s3;
		rl.auth = &auth;
		rl.client_key = &K;
		rl.content_length = 11;
		x = bc_origin_relay(O, &rl, &e);
		cr_assert_not_null(x);
		cr_expect_eq(bc_exchange_write(x, hello, 5, &e), 5);
		cr_expect_eq(bc_exchange_headers(x, &status, &h), BC_EAGAIN);
		cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), BC_EAGAIN);
		cr_expect_eq(tmp_files(), 1);
		if (round == 0) {
			/* released mid-body */
			bc_exchange_release(x);
			bc_s3_req_fini(&s3);
			cr_expect_eq(tmp_files(), 0);
			cr_expect_not(exists("p"));
			continue;
		}
		cr_expect_eq(bc_exchange_write(x, hello + 5, 6, &e), 6);
		cr_expect_eq(bc_exchange_write_end(x, &e), 0);
		cr_expect_eq(bc_exchange_write_end(x, &e), 0);
		cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
		cr_expect_eq(status, 200);
		cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), 0);
		{
			int fd;
			uint64_t off, len;

			cr_expect_eq(bc_exchange_body_fd(x, &fd, &off, &len),
			    BC_ENOTSUP);
		}
		cr_expect_geq(bc_exchange_elapsed_us(x), 0);
		bc_exchange_release(x);
		bc_s3_req_fini(&s3);
		cr_expect(exists("p"));
	}
	/* a body that fails as it streams stays failed */
	{
		const char *hc[] = { "Content-Encoding", "aws-chunked",
		    "x-amz-decoded-content-length", "11", NULL };

		sign("PUT", "/ck/q", NULL, hc,
		    BC_SIGV4_STREAMING_UNSIGNED_TRAILER, &ctx, &hv);
		bc_s3_req_init(&s3);
		s3.headers = hv;
		cr_assert_eq(bc_s3_req_parse(&s3, "PUT", "/ck/q", NULL),
		    BC_S3E_NONE);
		cr_assert_eq(bc_s3_auth_verify(&s3, time(NULL), secret_of,
		    NULL, false, &auth), BC_S3E_NONE);
		cr_assert(auth.streaming);
		rl.s3 = &s3;
		rl.auth = &auth;
		rl.content_length = 64;
		x = bc_origin_relay(O, &rl, &e);
		cr_assert_not_null(x);
		e = BC_S3E_NONE;
		cr_expect_eq(bc_exchange_write(x, "zz\r\n", 4, &e), BC_EPROTO);
		cr_expect_eq(e, BC_S3E_InvalidArgument, "%s",
		    bc_s3err_code(e));
		e = BC_S3E_NONE;
		cr_expect_eq(bc_exchange_write(x, "b\r\n", 3, &e), BC_EPROTO);
		cr_expect_eq(e, BC_S3E_InvalidArgument);
		e = BC_S3E_NONE;
		cr_expect_eq(bc_exchange_write_end(x, &e), BC_EPROTO);
		cr_expect_eq(e, BC_S3E_InvalidArgument);
		cr_expect_eq(bc_exchange_headers(x, &status, &h),
		    BC_ECANCELED);
		bc_exchange_release(x);
		bc_s3_req_fini(&s3);
		cr_expect_not(exists("q"));
	}
	cr_expect_eq(tmp_files(), 0);
}

/* ---- fetches ---------------------------------------------------------- */

/* What the callbacks of one push fetch saw. */
typedef struct fw_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	pthread_t       test_thread;
	bool            done;
	int             ndone, nheaders, ndata;
	bool            on_test_thread;
	int             status;
	bc_kvlist_t     hdrs;
	size_t          last_total;
	bool            totals_grow;
	/* set_sink from on_headers when sink != NULL */
	uint8_t        *sink;
	size_t          sink_cap;
	/* release from a callback: 1 on_headers, 2 on_done */
	int             release_in;
	int             err;
	uint8_t        *body;
	size_t          body_len;
	uint64_t        elapsed_us;
} fw_t;

static void
fw_init(fw_t *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->test_thread = pthread_self();
	w->totals_grow = true;
}

static void
fw_fini(fw_t *w)
{
	bc_kv_fini(&w->hdrs);
	free(w->body);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}

static void
fw_headers(bc_exchange_t *x, void *arg, int status, const bc_kvlist_t *h)
{
	fw_t *w = arg;

	pthread_mutex_lock(&w->mu);
	w->nheaders++;
	w->status = status;
	if (pthread_equal(pthread_self(), w->test_thread))
		w->on_test_thread = true;
	for (size_t i = 0; i < h->n; i++)
		bc_kv_add(&w->hdrs, h->v[i].name, h->v[i].value);
	pthread_mutex_unlock(&w->mu);
	if (w->sink != NULL)
		bc_exchange_set_sink(x, w->sink, w->sink_cap);
	if (w->release_in == 1) {
		bc_exchange_release(x);
		pthread_mutex_lock(&w->mu);
		w->done = true;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
	}
}

static void
fw_data(void *arg, size_t total)
{
	fw_t *w = arg;

	pthread_mutex_lock(&w->mu);
	if (total <= w->last_total)
		w->totals_grow = false;
	w->last_total = total;
	w->ndata++;
	pthread_mutex_unlock(&w->mu);
}

static void
fw_done(bc_exchange_t *x, void *arg)
{
	fw_t *w = arg;

	pthread_mutex_lock(&w->mu);
	w->ndone++;
	if (pthread_equal(pthread_self(), w->test_thread))
		w->on_test_thread = true;
	w->err = bc_exchange_error(x);
	w->body = bc_exchange_take_body(x, &w->body_len);
	w->elapsed_us = bc_exchange_elapsed_us(x);
	w->done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->release_in == 2)
		bc_exchange_release(x);
}

static void
fw_wait(fw_t *w)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		cr_assert_eq(pthread_cond_timedwait(&w->cv, &w->mu, &dl), 0,
		    "no on_done within 10 s");
	pthread_mutex_unlock(&w->mu);
}

/* A fetch of bucket/key in push mode; 0 bytes collected unless said. */
static bc_exchange_t *
push(fw_t *w, const char *bucket, const char *key, bool head,
    uint64_t first, uint64_t last, const char *cond, const char *etag,
    size_t collect_max)
{
	bc_fetch_t f;

	memset(&f, 0, sizeof(f));
	f.bucket = bucket;
	f.key = key;
	f.head = head;
	f.first = first;
	f.last = last;
	f.cond = cond;
	f.etag = etag;
	f.collect_max = collect_max;
	f.on_headers = fw_headers;
	f.on_data = fw_data;
	f.on_done = fw_done;
	f.arg = w;
	return bc_origin_fetch(O, &f);
}

/* Runs on the loop thread: waits until the test says go, then maybe
 * cancels every queued push fetch. */
typedef struct gate_s {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	bool            go, passed, cancel;
} gate_t;

static void
gate_fn(bc_loop_t *loop, void *arg)
{
	gate_t *g = arg;

	(void)loop;
	pthread_mutex_lock(&g->mu);
	while (!g->go)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	if (g->cancel)
		O->ops->cancel_all(O);
}

static void
mark_fn(bc_loop_t *loop, void *arg)
{
	gate_t *g = arg;

	(void)loop;
	pthread_mutex_lock(&g->mu);
	g->passed = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void
gate_init(gate_t *g, bool cancel)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->cancel = cancel;
	cr_assert_eq(bc_loop_call(L, gate_fn, g), 0);
}

static void
gate_open(gate_t *g)
{
	pthread_mutex_lock(&g->mu);
	g->go = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Waits until the loop ran everything queued before this call. */
static void
gate_drain(gate_t *g)
{
	struct timespec dl;

	cr_assert_eq(bc_loop_call(L, mark_fn, g), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&g->mu);
	while (!g->passed)
		cr_assert_eq(pthread_cond_timedwait(&g->cv, &g->mu, &dl), 0);
	pthread_mutex_unlock(&g->mu);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

#define BIG_SIZE (3u * 1024 * 1024 + 5)

static uint8_t
big_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

static void
make_big(void)
{
	char p[PATH_MAX + 16];
	uint8_t *b = malloc(BIG_SIZE);
	FILE *f;

	cr_assert_not_null(b);
	for (size_t i = 0; i < BIG_SIZE; i++)
		b[i] = big_byte(i);
	snprintf(p, sizeof(p), "%s/ck/big", tree);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(b, 1, BIG_SIZE, f), BIG_SIZE);
	fclose(f);
	free(b);
}

/* A range into the caller's buffer, in blocks, on the loop thread. */
LTest(file_fetch, range_into_sink, .init = origin_start, .fini = origin_stop)
{
	const uint64_t first = 100, last = BIG_SIZE - 101;
	size_t len = (size_t)(last - first + 1);
	uint64_t reads;
	bc_exchange_t *x;
	char cr[80];
	fw_t w;

	make_big();
	fw_init(&w);
	w.sink_cap = len;
	w.sink = malloc(len);
	cr_assert_not_null(w.sink);
	reads = file_reads();
	x = push(&w, "ck", "big", false, first, last, NULL, NULL, 0);
	cr_assert_not_null(x);
	fw_wait(&w);
	cr_expect_not(w.on_test_thread);
	cr_expect_eq(w.nheaders, 1);
	cr_expect_eq(w.ndone, 1);
	cr_expect_eq(w.status, 206);
	snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%u", first,
	    last, BIG_SIZE);
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "Content-Range"), cr);
	snprintf(cr, sizeof(cr), "%zu", len);
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "Content-Length"), cr);
	cr_expect_eq(bc_kv_get(&w.hdrs, "ETag")[0], '"');
	cr_expect_eq(w.err, 0);
	cr_expect_null(w.body);   /* it went into the sink */
	cr_expect_geq(w.ndata, 3);
	cr_expect(w.totals_grow);
	cr_expect_eq(w.last_total, len);
	for (size_t i = 0; i < len; i++)
		if (w.sink[i] != big_byte(first + i))
			cr_assert_fail("byte %zu differs", i);
	cr_expect_gt(w.elapsed_us, 0);
	cr_expect_eq(file_reads() - reads, 1);
	{
		int status;
		const bc_kvlist_t *h;
		char buf[8];

		cr_expect_eq(bc_exchange_headers(x, &status, &h), 0);
		cr_expect_eq(status, 206);
		cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), 0);
	}
	bc_exchange_release(x);
	free(w.sink);
	fw_fini(&w);
}

/* Errors come as S3 answers, their XML collected. */
LTest(file_fetch, errors, .init = origin_start, .fini = origin_stop)
{
	char etag[64] = "";
	uint64_t reads;
	bc_exchange_t *x;
	resp_t r;
	fw_t w;

	put_hello("/ck/k", NULL);
	req("PUT", "/ck/empty", NULL, NULL, NULL, "", 0, &r);
	resp_fini(&r);
	req("HEAD", "/ck/k", NULL, NULL, NULL, NULL, 0, &r);
	snprintf(etag, sizeof(etag), "%s", bc_kv_get(&r.hdrs, "ETag"));
	resp_fini(&r);

	/* a wrong If-Match: 412, the file opened once */
	reads = file_reads();
	fw_init(&w);
	x = push(&w, "ck", "k", false, 0, 4, "If-Match", "\"0123\"", 4096);
	cr_assert_not_null(x);
	fw_wait(&w);
	cr_expect_eq(w.status, 412);
	cr_expect_eq(w.err, 0);
	cr_assert_not_null(w.body);
	cr_expect_not_null(memmem(w.body, w.body_len,
	    "<Code>PreconditionFailed</Code>", 31));
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "Content-Type"),
	    "application/xml");
	cr_expect_eq(file_reads() - reads, 1);
	bc_exchange_release(x);
	fw_fini(&w);

	/* a matching If-None-Match: 304, no body */
	fw_init(&w);
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, "If-None-Match",
	    etag, 4096);
	fw_wait(&w);
	cr_expect_eq(w.status, 304);
	cr_expect_null(w.body);
	cr_expect_eq(w.ndata, 0);
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "ETag"), etag);
	bc_exchange_release(x);
	fw_fini(&w);

	/* no key, no bucket: 404s, nothing opened */
	reads = file_reads();
	fw_init(&w);
	x = push(&w, "ck", "nope", false, BC_FETCH_WHOLE, 0, NULL, NULL,
	    4096);
	fw_wait(&w);
	cr_expect_eq(w.status, 404);
	cr_assert_not_null(w.body);
	cr_expect_not_null(memmem(w.body, w.body_len, "<Code>NoSuchKey",
	    15));
	bc_exchange_release(x);
	fw_fini(&w);
	fw_init(&w);
	x = push(&w, "nob", "k", true, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	fw_wait(&w);
	cr_expect_eq(w.status, 404);
	cr_expect_null(w.body);   /* HEAD: no body */
	cr_expect_neq(bc_kv_get(&w.hdrs, "Content-Length"), NULL);
	bc_exchange_release(x);
	fw_fini(&w);
	fw_init(&w);
	x = push(&w, "nob", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	fw_wait(&w);
	cr_expect_not_null(w.body != NULL ? memmem(w.body, w.body_len,
	    "<Code>NoSuchBucket", 18) : NULL);
	bc_exchange_release(x);
	fw_fini(&w);
	cr_expect_eq(file_reads(), reads);

	/* any range of an empty object: 416 */
	fw_init(&w);
	x = push(&w, "ck", "empty", false, 0, 10, NULL, NULL, 4096);
	fw_wait(&w);
	cr_expect_eq(w.status, 416);
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "Content-Range"), "bytes */0");
	cr_expect_not_null(w.body != NULL ? memmem(w.body, w.body_len,
	    "<Code>InvalidRange", 18) : NULL);
	bc_exchange_release(x);
	fw_fini(&w);
}

/* Without a sink the body is collected, up to collect_max; a sink too
 * small or a body past collect_max fails the exchange. HEAD: headers. */
LTest(file_fetch, collect, .init = origin_start, .fini = origin_stop)
{
	uint8_t small[4];
	bc_exchange_t *x;
	fw_t w;

	put_hello("/ck/k", NULL);
	fw_init(&w);
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 11);
	fw_wait(&w);
	cr_expect_eq(w.status, 200);
	cr_expect_eq(w.err, 0);
	cr_assert_eq(w.body_len, 11);
	cr_expect_eq(memcmp(w.body, hello, 11), 0);
	cr_expect_geq(w.ndata, 1);
	cr_expect_eq(w.last_total, 11);
	bc_exchange_release(x);
	fw_fini(&w);

	fw_init(&w);
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 10);
	fw_wait(&w);
	cr_expect_eq(w.status, 200);
	cr_expect_eq(w.err, BC_E2BIG);
	cr_expect_null(w.body);
	bc_exchange_release(x);
	fw_fini(&w);

	fw_init(&w);
	w.sink = small;
	w.sink_cap = sizeof(small);
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	fw_wait(&w);
	cr_expect_eq(w.err, BC_E2BIG);
	bc_exchange_release(x);
	fw_fini(&w);

	fw_init(&w);
	x = push(&w, "ck", "k", true, BC_FETCH_WHOLE, 0, NULL, NULL, 0);
	fw_wait(&w);
	cr_expect_eq(w.status, 200);
	cr_expect_eq(w.err, 0);
	cr_expect_str_eq(bc_kv_get(&w.hdrs, "Content-Length"), "11");
	cr_expect_null(w.body);
	cr_expect_eq(w.ndata, 0);
	bc_exchange_release(x);
	fw_fini(&w);
}

/* Released before the loop got to it: no callback, ever. */
LTest(file_fetch, release_before_callback, .init = origin_start,
    .fini = origin_stop)
{
	uint64_t reads = file_reads();
	bc_exchange_t *x;
	gate_t g;
	fw_t w;

	put_hello("/ck/k", NULL);
	fw_init(&w);
	gate_init(&g, false);     /* the loop waits at the gate */
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	cr_assert_not_null(x);
	bc_exchange_release(x);
	gate_open(&g);
	gate_drain(&g);
	cr_expect_eq(w.nheaders, 0);
	cr_expect_eq(w.ndata, 0);
	cr_expect_eq(w.ndone, 0);
	cr_expect_eq(file_reads(), reads);   /* nor any work */
	fw_fini(&w);
}

/* Released from a callback: nothing follows on that exchange. */
LTest(file_fetch, release_in_callback, .init = origin_start,
    .fini = origin_stop)
{
	bc_exchange_t *x;
	gate_t g;
	fw_t w;

	put_hello("/ck/k", NULL);
	fw_init(&w);
	w.release_in = 1;
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	cr_assert_not_null(x);
	fw_wait(&w);
	gate_init(&g, false);
	gate_open(&g);
	gate_drain(&g);
	cr_expect_eq(w.nheaders, 1);
	cr_expect_eq(w.ndata, 0);
	cr_expect_eq(w.ndone, 0);
	fw_fini(&w);

	fw_init(&w);
	w.release_in = 2;
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	cr_assert_not_null(x);
	fw_wait(&w);
	gate_init(&g, false);
	gate_open(&g);
	gate_drain(&g);
	cr_expect_eq(w.ndone, 1);
	cr_expect_eq(w.body_len, 11);
	fw_fini(&w);
}

/* cancel_all ends the queued fetches with on_done and BC_ECANCELED. */
LTest(file_fetch, cancel, .init = origin_start, .fini = origin_stop)
{
	uint64_t reads = file_reads();
	bc_exchange_t *x, *y;
	const bc_kvlist_t *h;
	int status;
	gate_t g, d;
	fw_t w, v;

	put_hello("/ck/k", NULL);
	fw_init(&w);
	fw_init(&v);
	gate_init(&g, true);     /* cancels once opened */
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	y = push(&v, "ck", "k", true, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	cr_assert_not_null(x);
	cr_assert_not_null(y);
	bc_exchange_release(y);   /* released: cancel_all skips it */
	gate_open(&g);
	fw_wait(&w);
	gate_drain(&g);
	cr_expect_eq(w.ndone, 1);
	cr_expect_eq(w.nheaders, 0);
	cr_expect_eq(w.err, BC_ECANCELED);
	cr_expect_null(w.body);
	cr_expect_eq(bc_exchange_headers(x, &status, &h), BC_ECANCELED);
	cr_expect_eq(v.ndone, 0);
	cr_expect_eq(file_reads(), reads);
	bc_exchange_release(x);
	/* the origin still serves */
	fw_fini(&w);
	fw_init(&w);
	x = push(&w, "ck", "k", false, BC_FETCH_WHOLE, 0, NULL, NULL, 4096);
	fw_wait(&w);
	cr_expect_eq(w.status, 200);
	bc_exchange_release(x);
	gate_init(&d, false);
	gate_open(&d);
	gate_drain(&d);
	fw_fini(&w);
	fw_fini(&v);
}

/* Pull mode: answered when fetch() returns; read() or body_fd(). */
LTest(file_fetch, pull, .init = origin_start, .fini = origin_stop)
{
	const bc_kvlist_t *h;
	bc_exchange_t *x;
	bc_fetch_t f;
	uint64_t reads, off, len;
	char buf[32];
	int status, fd;

	put_hello("/ck/k", NULL);
	reads = file_reads();
	memset(&f, 0, sizeof(f));
	f.bucket = "ck";
	f.key = "k";
	f.first = 6;
	f.last = 100;
	x = bc_origin_fetch(O, &f);
	cr_assert_not_null(x);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_expect_eq(status, 206);
	cr_expect_str_eq(bc_kv_get(h, "Content-Range"), "bytes 6-10/11");
	cr_expect_eq(bc_exchange_error(x), BC_EAGAIN);   /* body unread */
	cr_expect_eq(bc_exchange_read(x, buf, 3), 3);
	cr_expect_eq(bc_exchange_read(x, buf + 3, sizeof(buf) - 3), 2);
	cr_expect_eq(memcmp(buf, "world", 5), 0);
	cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), 0);
	cr_expect_eq(bc_exchange_error(x), 0);
	bc_exchange_release(x);

	f.first = BC_FETCH_WHOLE;
	x = bc_origin_fetch(O, &f);
	cr_assert_not_null(x);
	cr_assert_eq(bc_exchange_body_fd(x, &fd, &off, &len), 0);
	cr_expect_eq(off, 0);
	cr_expect_eq(len, 11);
	cr_expect_eq(pread(fd, buf, 11, 0), 11);
	cr_expect_eq(memcmp(buf, hello, 11), 0);
	close(fd);
	cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), 0);
	cr_expect_eq(bc_exchange_body_fd(x, &fd, &off, &len), BC_ENOTSUP);
	bc_exchange_release(x);

	f.head = true;
	x = bc_origin_fetch(O, &f);
	cr_assert_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_expect_eq(status, 200);
	cr_expect_str_eq(bc_kv_get(h, "Content-Length"), "11");
	cr_expect_eq(bc_exchange_read(x, buf, sizeof(buf)), 0);
	cr_expect_eq(bc_exchange_body_fd(x, &fd, &off, &len), BC_ENOTSUP);
	bc_exchange_release(x);
	cr_expect_eq(file_reads() - reads, 3);
}

/* Without a loop, push fetches are refused; pull ones work. */
LTest(file_fetch, no_loop, .init = origin_start, .fini = origin_stop)
{
	bc_origin_t *o;
	bc_exchange_t *x;
	bc_fetch_t f;
	const bc_kvlist_t *h;
	char err[256];
	int status;
	fw_t w;

	cr_assert_eq(bc_file_origin_new("/nonexistent-bc-dir", NULL, &o, err,
	    sizeof(err)), -1);
	cr_expect_null(o);
	cr_expect_not_null(strstr(err, "--upstream: cannot open directory "
	    "'/nonexistent-bc-dir'"), "%s", err);
	cr_assert_eq(bc_file_origin_new(tree, NULL, &o, err, sizeof(err)), 0);
	cr_expect_str_eq(o->ops->name, "file");
	put_hello("/ck/k", NULL);
	fw_init(&w);
	memset(&f, 0, sizeof(f));
	f.bucket = "ck";
	f.key = "k";
	f.first = BC_FETCH_WHOLE;
	f.on_done = fw_done;
	f.arg = &w;
	cr_expect_null(bc_origin_fetch(o, &f));
	f.on_done = NULL;
	x = bc_origin_fetch(o, &f);
	cr_assert_not_null(x);
	cr_expect_eq(bc_exchange_headers(x, &status, &h), 0);
	cr_expect_eq(status, 200);
	bc_exchange_release(x);
	fw_fini(&w);
	o->ops->cancel_all(o);   /* nothing queued: a no-op */
	bc_origin_free(o);
}
