/* test_upstream_file.c — the file:// backend's pure parts (upstream_file.h):
 * key and bucket validation, continuation tokens, and listing
 * order/pagination over a real directory tree, checked against a
 * brute-force model of S3's listing rules. (The XML bodies it reads are
 * s3_xml.h's: tests/unit/s3/test_s3_xml.c.) And its checksums, through
 * the handler (a gateway started here, spoken to with libcurl): headers
 * and aws-chunked trailers verified (BadDigest) and kept in the metadata
 * xattr, S3's default CRC64NVME, GET/HEAD with x-amz-checksum-mode, ranges,
 * copies, multipart parts. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "../bc_test.h"

#include "config/config.h"
#include "http/http_server.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "upstream/upstream_file.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
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

/* ---- checksums, through the handler ----------------------------------- */

/* A gateway on the file:// backend (a fresh tree, bucket "ck"), spoken
 * to with libcurl; requests signed with the gateway's own SigV4 signer
 * (key TK). What it stores is read back from the xattr, and over GET. */

typedef struct fsrv_s {
	bc_config_t cfg;
	bc_server_t srv;
	char        url[64];
	char        host[64];
} fsrv_t;

static fsrv_t F;

typedef struct resp_s {
	long        status;
	bc_buf_t    body;
	bc_kvlist_t hdrs;
} resp_t;

static uint16_t
free_port(void)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port;

	cr_assert_geq(s, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &al), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static void
fsrv_start(void)
{
	char listen_on[64], upstream[PATH_MAX + 16], err[256] = "";
	char *env[] = { NULL };
	int tries;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	bc_log_level = BC_LOG_ERROR;
	snprintf(tree, sizeof(tree), "/tmp/bc-test-file-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
	mkpath("ck/", false, NULL);
	snprintf(upstream, sizeof(upstream), "file://%s", tree);
	for (tries = 0; tries < 3; tries++) {
		uint16_t port = free_port();
		char a0[] = "bucketcache", a1[] = "--listen", a3[] = "--upstream";
		char a5[] = "--client-key", a6[] = "TK:tsecret";
		char *argv[] = { a0, a1, listen_on, a3, upstream, a5, a6, NULL };

		snprintf(listen_on, sizeof(listen_on), "127.0.0.1:%u",
		    (unsigned)port);
		snprintf(F.url, sizeof(F.url), "http://127.0.0.1:%u",
		    (unsigned)port);
		snprintf(F.host, sizeof(F.host), "%s", listen_on);
		cr_assert_eq(bc_config_init(&F.cfg), 0);
		cr_assert_eq(bc_config_load(&F.cfg, 7, argv, env, err,
		    sizeof(err)), 0, "%s", err);
		cr_assert_eq(bc_config_finish(&F.cfg, env, err, sizeof(err)),
		    0, "%s", err);
		if (bc_server_start(&F.srv, &F.cfg, NULL, NULL, NULL, err,
		    sizeof(err)) == 0)
			return;
		bc_config_fini(&F.cfg);   /* the port was taken: again */
	}
	cr_assert_fail("cannot start the gateway: %s", err);
}

static void
fsrv_stop(void)
{
	bc_server_stop(&F.srv);
	bc_upstream_file_fini();
	bc_config_fini(&F.cfg);
	rm_tree_sh();
	curl_global_cleanup();
}

static size_t
on_body(char *p, size_t sz, size_t n, void *arg)
{
	cr_assert_eq(bc_buf_append(arg, p, sz * n), 0);
	return sz * n;
}

static size_t
on_header(char *p, size_t sz, size_t n, void *arg)
{
	size_t len = sz * n;
	const char *colon = memchr(p, ':', len);

	if (colon != NULL) {
		const char *v = colon + 1;
		size_t vl;

		while (v < p + len && *v == ' ')
			v++;
		vl = (size_t)(p + len - v);
		while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		bc_kv_addn(arg, p, (size_t)(colon - p), v, vl);
	}
	return len;
}

/* Signs method path?query with headers hv (name, value, ..., NULL) and
 * payload hash ph; *ctx gets the signature's context. */
static struct curl_slist *
sign(const char *method, const char *path, const char *query,
    const char *const *hv, const char *ph, bc_sigv4_ctx_t *ctx)
{
	const bc_sigv4_creds_t creds = { "TK", "tsecret", NULL, "us-east-1",
	    "s3" };
	bc_kvlist_t h = BC_KVLIST_INIT, q = BC_KVLIST_INIT;
	struct curl_slist *sl = NULL;
	char line[4096];

	if (query != NULL) {
		char *dup = strdup(query), *save = NULL;

		for (char *t = strtok_r(dup, "&", &save); t != NULL;
		    t = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(t, '=');

			if (eq != NULL)
				*eq = '\0';
			bc_kv_add(&q, t, eq != NULL ? eq + 1 : "");
		}
		free(dup);
	}
	bc_kv_add(&h, "Host", F.host);
	for (size_t i = 0; hv != NULL && hv[i] != NULL; i += 2)
		bc_kv_add(&h, hv[i], hv[i + 1]);
	cr_assert_eq(bc_sigv4_sign(&h, method, path, &q, ph, &creds,
	    time(NULL), ctx), 0);
	for (size_t i = 0; i < h.n; i++) {
		snprintf(line, sizeof(line), "%s: %s", h.v[i].name,
		    h.v[i].value);
		sl = curl_slist_append(sl, line);
	}
	sl = curl_slist_append(sl, "Expect:");
	sl = curl_slist_append(sl, "Content-Type:");
	bc_kv_fini(&h);
	bc_kv_fini(&q);
	return sl;
}

static void
send_req(const char *method, const char *path, const char *query,
    struct curl_slist *sl, const void *body, size_t len, resp_t *r)
{
	CURL *c = curl_easy_init();
	char url[512];

	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "%s%s%s%s", F.url, path,
	    query != NULL ? "?" : "", query != NULL ? query : "");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, sl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->hdrs);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		if (body != NULL) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)len);
		}
	}
	cr_assert_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(sl);
}

/* One signed request; body hashed into the signature (ph NULL) or not. */
static void
req(const char *method, const char *path, const char *query,
    const char *const *hv, const char *ph, const void *body, size_t len,
    resp_t *r)
{
	bc_sigv4_ctx_t ctx;
	char hash[65];

	if (ph == NULL) {
		bc_sha256_hex(body != NULL ? body : "", len, hash);
		ph = hash;
	}
	send_req(method, path, query, sign(method, path, query, hv, ph, &ctx),
	    body, len, r);
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
LTest(file_checksum, header, .init = fsrv_start, .fini = fsrv_stop)
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
LTest(file_checksum, default_crc64nvme, .init = fsrv_start,
    .fini = fsrv_stop)
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
LTest(file_checksum, checksum_mode, .init = fsrv_start, .fini = fsrv_stop)
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
LTest(file_checksum, trailer, .init = fsrv_start, .fini = fsrv_stop)
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
		struct curl_slist *sl = sign("PUT", good ? "/ck/s" : "/ck/s-bad",
		    NULL, hv, BC_SIGV4_STREAMING_TRAILER, &ctx);
		char value[BC_CKSUM_B64_MAX];

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
		send_req("PUT", good ? "/ck/s" : "/ck/s-bad", NULL, sl, body,
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
LTest(file_checksum, multipart, .init = fsrv_start, .fini = fsrv_stop)
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
