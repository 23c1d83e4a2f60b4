/* test_upstream_file.c — the file:// backend's pure parts (upstream_file.h):
 * key and bucket validation, continuation tokens, and listing
 * order/pagination over a real directory tree, checked against a
 * brute-force model of S3's listing rules. (The XML bodies it reads are
 * s3_xml.h's: tests/unit/s3/test_s3_xml.c.) */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "s3/s3_request.h"
#include "upstream/upstream_file.h"

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
