/*
 * upstream_file.c — bc_handler_file: a local directory served as S3 (see
 * upstream_file.h for the layout, metadata, security and thread contract).
 *
 * Request life: start() checks the bucket and key, opens the bucket
 * directory and, for uploads, a temp file; body() streams the upload into
 * it (through the aws-chunked decoder when the client sent one, hashing as
 * it goes); finish() does the operation and queues the response; done()
 * closes what is open and removes a temp file that was not committed.
 * Every op runs on the calling MHD worker; nothing suspends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http/http_req.h"
#include "http/http_server.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_cond.h"
#include "s3/s3_range.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "s3/s3_xml.h"
#include "upstream/upstream_file.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_num.h"
#include "util/util_log.h"

#define HIDDEN_PREFIX   ".bucketcache-"
#define TMP_DIR         ".bucketcache-tmp"
#define MPU_DIR         ".bucketcache-mpu"
#define UPLOAD_INFO     "upload"
#define META_XATTR      "user.bucketcache.meta"
#define META_MAX        8192            /* metadata blob */
#define USER_META_MAX   2048            /* x-amz-meta-* names + values */
#define HEADER_VALUE_MAX 2048           /* one stored header value */
#define DELETE_XML_MAX  (1u << 20)
#define COMPLETE_XML_MAX (4u << 20)
#define DISCARD_MAX     (1u << 20)      /* bodies of ops that take none */
#define MAX_AWS_CHUNK   (16u << 20)
#define MAX_COMPLETE    (5ULL << 40)    /* S3's largest object */
#define DEFAULT_CTYPE   "binary/octet-stream"
#define S3_XMLNS        "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_PROLOG      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define COPY_BLOCK      (256 * 1024)
#define UPLOAD_ID_LEN   32

static int root_fd = -1;

/* ---- small helpers ----------------------------------------------------- */

static bool
is_hidden(const char *name)
{
	return strncmp(name, HIDDEN_PREFIX, sizeof(HIDDEN_PREFIX) - 1) == 0;
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Compares s with the n bytes at p as unsigned bytes (UTF-8 order). */
static int
cmp_n(const char *s, const char *p, size_t n)
{
	size_t sl = strlen(s);
	int c = memcmp(s, p, sl < n ? sl : n);

	if (c != 0)
		return c;
	return sl < n ? -1 : sl > n ? 1 : 0;
}

/* Narrows [*s, *s + *n) to its span without surrounding white space. */
static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int
rand_hex(char *out, size_t nbytes)
{
	uint8_t b[32];
	size_t got = 0;

	if (nbytes > sizeof(b))
		return BC_EINVAL;
	while (got < nbytes) {
		ssize_t n = getrandom(b + got, nbytes - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	bc_hex(b, nbytes, out);
	return 0;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The S3 error for a failed file system call (errno e, negated or not). */
static bc_s3err_t
errno_s3(int e, bc_s3err_t absent)
{
	if (e < 0)
		e = -e;
	switch (e) {
	case ENOENT:
	case ENOTDIR:
	case ELOOP:
		return absent;
	case EACCES:
	case EPERM:
	case EROFS:
		return BC_S3E_AccessDenied;
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return BC_S3E_SlowDown;
	default:
		return BC_S3E_InternalError;
	}
}

/* ---- names ------------------------------------------------------------- */

bc_s3err_t
bc_file_key_check(const char *key)
{
	const char *seg = key;
	size_t len = strlen(key);

	if (len == 0 || key[0] == '/')
		return BC_S3E_InvalidArgument;
	if (len > BC_S3_MAX_KEY)
		return BC_S3E_KeyTooLongError;
	for (;;) {
		const char *slash = strchr(seg, '/');
		size_t n = slash != NULL ? (size_t)(slash - seg) : strlen(seg);

		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return BC_S3E_InvalidArgument;
		if (n > NAME_MAX)
			return BC_S3E_KeyTooLongError;
		if (n >= sizeof(HIDDEN_PREFIX) - 1 && is_hidden(seg))
			return BC_S3E_InvalidArgument;
		if (slash == NULL)
			return BC_S3E_NONE;
		seg = slash + 1;
	}
}

static bool
is_ipv4(const char *s)
{
	int dots = 0, digits = 0;

	for (; *s != '\0'; s++) {
		if (*s == '.') {
			if (digits == 0)
				return false;
			dots++;
			digits = 0;
		} else if (*s >= '0' && *s <= '9') {
			if (++digits > 3)
				return false;
		} else {
			return false;
		}
	}
	return dots == 3 && digits > 0;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool
bc_file_bucket_ok(const char *name, bool strict)
{
	size_t n = strlen(name);

	if (!strict) {
		if (n == 0 || n > BC_S3_MAX_BUCKET || name[0] == '.' ||
		    name[0] == '_')
			return false;
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)name[i]) &&
			    strchr("._-", name[i]) == NULL)
				return false;
		return true;
	}
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '.' || ch == '-'))
			return false;
	}
	if (!isalnum((unsigned char)name[0]) ||
	    !isalnum((unsigned char)name[n - 1]))
		return false;
	if (strstr(name, "..") != NULL || strstr(name, ".-") != NULL ||
	    strstr(name, "-.") != NULL || is_ipv4(name))
		return false;
	if (starts_with(name, "xn--") || starts_with(name, "sthree-") ||
	    starts_with(name, "amzn-s3-demo-") || ends_with(name, "-s3alias") ||
	    ends_with(name, "--ol-s3") || ends_with(name, ".mrap") ||
	    ends_with(name, "--x-s3"))
		return false;
	return true;
}

/* ---- safe path walking ------------------------------------------------- */

static int
open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* A new open file description of directory fd (not dup(): readdir
 * positions must not be shared between walks or threads). */
static int
reopen_dir(int fd)
{
	return openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Opens the directory path[0..len) ("a/b", segments already checked)
 * below bfd, one O_NOFOLLOW component at a time; with create, makes the
 * missing ones. Returns a new fd or -errno.
 */
static int
walk_dirs(int bfd, const char *path, size_t len, bool create)
{
	char seg[NAME_MAX + 1];
	size_t i = 0;
	int fd = reopen_dir(bfd);

	if (fd < 0)
		return -errno;
	while (i < len) {
		const char *slash = memchr(path + i, '/', len - i);
		size_t n = slash != NULL ? (size_t)(slash - path - i) : len - i;
		int next;

		if (n == 0 || n > NAME_MAX) {
			close(fd);
			return -EINVAL;
		}
		memcpy(seg, path + i, n);
		seg[n] = '\0';
		next = open_dir_at(fd, seg);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, seg, 0755) < 0 && errno != EEXIST) {
				int e = errno;

				close(fd);
				return -e;
			}
			next = open_dir_at(fd, seg);
		}
		if (next < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		close(fd);
		fd = next;
		i += n + 1;
	}
	return fd;
}

/* Opens the directory holding key's last segment; *leaf points into key. */
static int
open_parent(int bfd, const char *key, bool create, const char **leaf)
{
	const char *slash = strrchr(key, '/');

	*leaf = slash != NULL ? slash + 1 : key;
	return walk_dirs(bfd, key, slash != NULL ? (size_t)(slash - key) : 0,
	    create);
}

/* Opens the regular file name in dfd, never through a symlink, never a
 * device or FIFO. Returns fd or -errno (-ENOENT: not an object). */
static int
open_reg_at(int dfd, const char *name, struct stat *st)
{
	int fd;

	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -ENOENT;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* Opens object key (checked) of the bucket open as bfd. */
static int
open_object(int bfd, const char *key, struct stat *st)
{
	const char *leaf;
	int pfd = open_parent(bfd, key, false, &leaf);
	int fd;

	if (pfd < 0)
		return pfd;
	fd = open_reg_at(pfd, leaf, st);
	close(pfd);
	return fd;
}

static int
open_bucket(const char *bucket)
{
	int fd;

	if (root_fd < 0)
		return -EBADF;
	fd = open_dir_at(root_fd, bucket);
	return fd < 0 ? -errno : fd;
}

/* Opens (making it) the hidden directory name of the bucket. */
static int
open_hidden_dir(int bfd, const char *name)
{
	int fd = open_dir_at(bfd, name);

	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(bfd, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = open_dir_at(bfd, name);
	}
	return fd < 0 ? -errno : fd;
}

/* Removes dfd/name and everything below it (depth-limited; our own hidden
 * trees only). Returns 0 or -errno. */
static int
rm_tree(int dfd, const char *name, int depth)
{
	int fd, rv = 0;
	DIR *d;
	struct dirent *de;

	if (depth > 8)
		return -ELOOP;
	fd = open_dir_at(dfd, name);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ?
		    (unlinkat(dfd, name, 0) < 0 ? -errno : 0) : -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		rv = -errno;
		close(fd);
		return rv;
	}
	while ((de = readdir(d)) != NULL) {
		int r2;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		r2 = unlinkat(dirfd(d), de->d_name, 0) < 0 ? -errno : 0;
		if (r2 == -EISDIR || r2 == -EPERM)
			r2 = rm_tree(dirfd(d), de->d_name, depth + 1);
		if (r2 < 0 && r2 != -ENOENT)
			rv = r2;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rv = -errno;
	return rv;
}

/* ---- metadata ---------------------------------------------------------- */

typedef struct meta_s {
	char        etag[BC_FILE_ETAG_LEN];   /* unquoted */
	bool        stored;                   /* from the xattr */
	bc_kvlist_t hdrs;                     /* stored headers, lower case */
} meta_t;

static const char *const stored_headers[] = {
	"content-type", "content-encoding", "content-disposition",
	"content-language", "cache-control", "expires", NULL
};

static bool
is_stored_header(const char *lname)
{
	if (starts_with(lname, "x-amz-meta-"))
		return lname[11] != '\0';
	if (bc_checksum_from_header(lname) != BC_CKSUM_NONE)
		return true;   /* kept once verified (op_put_object) */
	for (int i = 0; stored_headers[i] != NULL; i++)
		if (strcmp(lname, stored_headers[i]) == 0)
			return true;
	return false;
}

static void
synthetic_etag(const struct stat *st, char out[BC_FILE_ETAG_LEN])
{
	char buf[128];
	uint8_t d[BC_MD5_LEN];
	int n;

	n = snprintf(buf, sizeof(buf), "bucketcache:%ju:%jd:%jd%09ld",
	    (uintmax_t)st->st_ino, (intmax_t)st->st_size,
	    (intmax_t)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
	bc_md5(buf, (size_t)n, d);
	bc_hex(d, sizeof(d), out);
	strcat(out, "-1");
}

static bool
etag_chars_ok(const char *s, size_t n)
{
	if (n == 0 || n >= BC_FILE_ETAG_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* Appends the metadata blob for a file of stat st. */
static int
meta_encode(bc_buf_t *b, const char *etag, const struct stat *st,
    const bc_kvlist_t *hdrs)
{
	int rv = bc_buf_printf(b, "bucketcache-meta 1\nsize %jd\n"
	    "mtime %jd.%09ld\netag %s\n", (intmax_t)st->st_size,
	    (intmax_t)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec, etag);

	for (size_t i = 0; i < hdrs->n && rv == 0; i++)
		rv = bc_buf_printf(b, "h %s: %s\n", hdrs->v[i].name,
		    hdrs->v[i].value);
	return rv;
}

/* Parses "h name: value" lines from p (n bytes) into hdrs. */
static int
parse_hdr_lines(const char *p, size_t n, bc_kvlist_t *hdrs)
{
	const char *end = p + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl != NULL ? nl : end;
		const char *colon;

		if (line_end - p > 2 && p[0] == 'h' && p[1] == ' ') {
			colon = memchr(p + 2, ':', (size_t)(line_end - p - 2));
			if (colon != NULL && colon + 1 < line_end &&
			    colon[1] == ' ') {
				char name[128];
				size_t nl2 = (size_t)(colon - p - 2);

				if (nl2 > 0 && nl2 < sizeof(name)) {
					memcpy(name, p + 2, nl2);
					name[nl2] = '\0';
					if (is_stored_header(name) &&
					    memchr(colon + 2, '\0', (size_t)(
					    line_end - colon - 2)) == NULL &&
					    bc_kv_addn(hdrs, name, nl2,
					    colon + 2, (size_t)(line_end -
					    colon - 2)) < 0)
						return BC_ENOMEM;
				}
			}
		}
		p = line_end + (nl != NULL ? 1 : 0);
	}
	return 0;
}

/* Fills m from blob when it describes st; false when it does not. */
static bool
meta_decode(const char *blob, size_t n, const struct stat *st, meta_t *m)
{
	char head[160];
	const char *p = blob, *end = blob + n, *e;
	size_t hl;
	char *nl;
	int k;

	/* the fixed head: four lines */
	for (k = 0, e = p; k < 4; k++) {
		const char *q = memchr(e, '\n', (size_t)(end - e));

		if (q == NULL)
			return false;
		e = q + 1;
	}
	hl = (size_t)(e - p);
	if (hl >= sizeof(head))
		return false;
	memcpy(head, p, hl);
	head[hl] = '\0';
	{
		char want[128];
		const char *et;

		snprintf(want, sizeof(want), "bucketcache-meta 1\nsize %jd\n"
		    "mtime %jd.%09ld\netag ", (intmax_t)st->st_size,
		    (intmax_t)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
		if (!starts_with(head, want))
			return false;
		et = head + strlen(want);
		nl = strchr(et, '\n');
		if (nl == NULL || !etag_chars_ok(et, (size_t)(nl - et)))
			return false;
		memcpy(m->etag, et, (size_t)(nl - et));
		m->etag[nl - et] = '\0';
	}
	if (parse_hdr_lines(e, (size_t)(end - e), &m->hdrs) < 0) {
		bc_kv_fini(&m->hdrs);
		return false;
	}
	m->stored = true;
	return true;
}

/* Reads fd's metadata (synthetic when absent or stale). */
static void
meta_read(int fd, const struct stat *st, meta_t *m)
{
	char *blob = malloc(META_MAX);
	ssize_t n = blob != NULL ? fgetxattr(fd, META_XATTR, blob, META_MAX) :
	    -1;

	memset(m, 0, sizeof(*m));
	if (n <= 0 || !meta_decode(blob, (size_t)n, st, m)) {
		memset(m, 0, sizeof(*m));
		synthetic_etag(st, m->etag);
	}
	free(blob);
}

static void
meta_fini(meta_t *m)
{
	bc_kv_fini(&m->hdrs);
}

/* Writes the metadata xattr on fd (its stat now). Failure is logged and
 * otherwise ignored: the object then has a synthetic ETag. */
static void
meta_write(int fd, const char *etag, const bc_kvlist_t *hdrs)
{
	bc_buf_t b = BC_BUF_INIT;
	struct stat st;

	if (fstat(fd, &st) < 0 || meta_encode(&b, etag, &st, hdrs) < 0 ||
	    b.len > META_MAX || fsetxattr(fd, META_XATTR, b.data, b.len,
	    0) < 0)
		BC_DEBUG("file backend: cannot store metadata xattr: %s",
		    strerror(errno));
	bc_buf_fini(&b);
}

/* Lower-cases name into out (len bytes); false when it does not fit. */
static bool
lower_name(const char *name, char *out, size_t len)
{
	size_t n = strlen(name);

	if (n >= len)
		return false;
	for (size_t i = 0; i <= n; i++)
		out[i] = (char)tolower((unsigned char)name[i]);
	return true;
}

/* Removes the "aws-chunked" coding (transport framing, never stored)
 * from a Content-Encoding list in place; true when nothing is left. */
static bool
drop_aws_chunked(char *val)
{
	char out[HEADER_VALUE_MAX + 1];
	size_t o = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(val, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		size_t n;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		n = strlen(tok);
		while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
			n--;
		if (n == 0 || (n == 11 && strncasecmp(tok, "aws-chunked",
		    11) == 0))
			continue;
		if (o > 0)
			out[o++] = ',';
		memcpy(out + o, tok, n);
		o += n;
	}
	out[o] = '\0';
	memcpy(val, out, o + 1);
	return o == 0;
}

/* The headers of r that an object keeps. Returns BC_S3E_NONE, or
 * InvalidArgument (metadata too large). */
static bc_s3err_t
collect_headers(const bc_http_req_t *r, bc_kvlist_t *out)
{
	size_t user = 0;

	for (size_t i = 0; i < r->s3.headers.n; i++) {
		const bc_kv_t *h = &r->s3.headers.v[i];
		char name[128];
		char val[HEADER_VALUE_MAX + 1];

		if (!lower_name(h->name, name, sizeof(name)) ||
		    !is_stored_header(name) ||
		    bc_checksum_from_header(name) != BC_CKSUM_NONE)
			continue;   /* a checksum is kept once verified */
		if (strlen(h->value) > HEADER_VALUE_MAX ||
		    strchr(h->value, '\n') != NULL ||
		    strchr(h->value, '\r') != NULL)
			return BC_S3E_InvalidArgument;
		snprintf(val, sizeof(val), "%s", h->value);
		if (strcmp(name, "content-encoding") == 0 &&
		    drop_aws_chunked(val))
			continue;
		if (starts_with(name, "x-amz-meta-")) {
			user += strlen(name) - 11 + strlen(val);
			if (user > USER_META_MAX)
				return BC_S3E_InvalidArgument;
		}
		if (bc_kv_set(out, name, val) < 0)
			return BC_S3E_InternalError;
	}
	return BC_S3E_NONE;
}

/* ---- continuation tokens ----------------------------------------------- */

void
bc_file_token_encode(const char *s, char *out)
{
	bc_hex((const uint8_t *)s, strlen(s), out);
}

char *
bc_file_token_decode(const char *tok)
{
	size_t n = strlen(tok);
	char *out;

	if (n == 0 || n % 2 != 0 || n > 2 * (BC_S3_MAX_KEY + 8))
		return NULL;
	out = malloc(n / 2 + 1);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 2) {
		int hi = isxdigit((unsigned char)tok[i]) ?
		    (isdigit((unsigned char)tok[i]) ? tok[i] - '0' :
		    tolower((unsigned char)tok[i]) - 'a' + 10) : -1;
		int lo = isxdigit((unsigned char)tok[i + 1]) ?
		    (isdigit((unsigned char)tok[i + 1]) ? tok[i + 1] - '0' :
		    tolower((unsigned char)tok[i + 1]) - 'a' + 10) : -1;

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		out[i / 2] = (char)(hi * 16 + lo);
	}
	out[n / 2] = '\0';
	return out;
}

/* ---- listing ----------------------------------------------------------- */

/*
 * The walk visits directories depth-first. Inside one directory, entries
 * are ordered by name, a directory's name taken with a trailing '/':
 * every key below directory "d" starts with "d/", so this order, applied
 * at each level, is the global byte order of keys. A directory with a
 * huge number of entries is never sorted whole: each pass keeps only the
 * smallest entries still needed (a bounded max-heap) above the last one
 * handled, and passes repeat until the directory is exhausted or the
 * listing is full. At most two descriptors are open at a time per walk.
 */

typedef struct lent_s {
	char *sk;     /* name, plus '/' for a directory */
	bool  dir;
} lent_t;

typedef struct lwalk_s {
	int                        bfd;
	const char                *prefix;
	size_t                     plen;
	const char                *delim;
	size_t                     dlen;
	const char                *after;
	size_t                     want;     /* max + 1 */
	bc_file_list_t            *out;
	int                        err;
} lwalk_t;

static bool
lw_full(const lwalk_t *w)
{
	return w->out->n >= w->want || w->err < 0;
}

/* The common prefix length that full (flen bytes, a key or "dir/") rolls
 * up to, 0 when none can be told from full alone. */
static size_t
rollup_len(const lwalk_t *w, const char *full, size_t flen)
{
	const char *hit;

	if (w->dlen == 0 || flen < w->plen ||
	    memcmp(full, w->prefix, w->plen) != 0)
		return 0;
	hit = memmem(full + w->plen, flen - w->plen, w->delim, w->dlen);
	if (hit == NULL)
		return 0;
	return (size_t)(hit - full) + w->dlen;
}

static const char *
last_prefix(const lwalk_t *w)
{
	const bc_file_list_t *o = w->out;

	return o->n > 0 && o->v[o->n - 1].is_prefix ? o->v[o->n - 1].name :
	    NULL;
}

/* true when the entry full (flen bytes) can yield an item. */
static bool
lw_keep(const lwalk_t *w, const char *full, size_t flen, bool dir)
{
	size_t cl;
	const char *lp;

	if (dir) {
		/* below it, keys are longer than full */
		if (flen >= BC_S3_MAX_KEY)
			return false;
		if (!(flen >= w->plen ? memcmp(full, w->prefix, w->plen) ==
		    0 : memcmp(w->prefix, full, flen) == 0))
			return false;
	} else if (flen > BC_S3_MAX_KEY || flen < w->plen ||
	    memcmp(full, w->prefix, w->plen) != 0) {
		return false;
	}
	cl = rollup_len(w, full, flen);
	if (cl > 0) {
		lp = last_prefix(w);
		if (lp != NULL && cmp_n(lp, full, cl) == 0)
			return false;
		return cmp_n(w->after, full, cl) < 0;
	}
	if (!dir)
		return cmp_n(w->after, full, flen) < 0;
	/* a directory: keep unless every key below is <= after */
	return cmp_n(w->after, full, flen) <= 0 ||
	    strncmp(w->after, full, flen) == 0;
}

static int
lent_cmp(const lent_t *a, const lent_t *b)
{
	return strcmp(a->sk, b->sk);
}

/* Bounded max-heap: keeps the k smallest entries offered. */
typedef struct lheap_s {
	lent_t *v;
	size_t  n;
	size_t  k;
} lheap_t;

static void
heap_sift_down(lheap_t *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		lent_t t;

		if (l < h->n && lent_cmp(&h->v[l], &h->v[m]) > 0)
			m = l;
		if (r < h->n && lent_cmp(&h->v[r], &h->v[m]) > 0)
			m = r;
		if (m == i)
			return;
		t = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = t;
		i = m;
	}
}

/* Offers e (takes e.sk). Returns 0 or BC_ENOMEM. */
static int
heap_offer(lheap_t *h, lent_t e)
{
	if (h->n < h->k) {
		size_t i = h->n++;

		h->v[i] = e;
		while (i > 0) {
			size_t p = (i - 1) / 2;
			lent_t t;

			if (lent_cmp(&h->v[p], &h->v[i]) >= 0)
				break;
			t = h->v[p];
			h->v[p] = h->v[i];
			h->v[i] = t;
			i = p;
		}
		return 0;
	}
	if (lent_cmp(&e, &h->v[0]) >= 0) {
		free(e.sk);
		return 0;
	}
	free(h->v[0].sk);
	h->v[0] = e;
	heap_sift_down(h, 0);
	return 0;
}

static int
lent_qcmp(const void *a, const void *b)
{
	return lent_cmp(a, b);
}

/* Entry type without following links: 1 dir, 0 regular, -1 other. */
static int
entry_kind(DIR *d, const struct dirent *de)
{
	struct stat st;

	switch (de->d_type) {
	case DT_DIR:
		return 1;
	case DT_REG:
		return 0;
	case DT_UNKNOWN:
		if (fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		return S_ISDIR(st.st_mode) ? 1 : S_ISREG(st.st_mode) ? 0 : -1;
	default:
		return -1;
	}
}

static int
list_push(bc_file_list_t *o, const char *name, size_t n, bool is_prefix)
{
	bc_file_item_t *it;

	if (o->n % 64 == 0) {
		bc_file_item_t *v = realloc(o->v, (o->n + 64) * sizeof(*v));

		if (v == NULL)
			return BC_ENOMEM;
		o->v = v;
	}
	it = &o->v[o->n];
	memset(it, 0, sizeof(*it));
	it->name = strndup(name, n);
	if (it->name == NULL)
		return BC_ENOMEM;
	it->is_prefix = is_prefix;
	o->n++;
	return 0;
}

static bool subtree_has_object(int bfd, const char *dir, size_t dlen,
    int depth);

/* One pass over dir (path, plen bytes, "" or ending in '/'): the k
 * smallest kept entries above bound into h. */
static int
scan_dir(lwalk_t *w, const char *path, size_t plen, const char *bound,
    lheap_t *h)
{
	char full[BC_S3_MAX_KEY + NAME_MAX + 4];
	int fd = walk_dirs(w->bfd, path, plen > 0 ? plen - 1 : 0, false);
	struct dirent *de;
	DIR *d;
	int rv = 0;

	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 1 : fd;
	d = fdopendir(fd);
	if (d == NULL) {
		rv = -errno;
		close(fd);
		return rv;
	}
	memcpy(full, path, plen);
	while (rv == 0 && (de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name), fl;
		int kind;
		lent_t e;

		if (de->d_name[0] == '.' && (nl == 1 || (nl == 2 &&
		    de->d_name[1] == '.')))
			continue;
		if (is_hidden(de->d_name) || plen + nl + 1 > BC_S3_MAX_KEY)
			continue;
		kind = entry_kind(d, de);
		if (kind < 0)
			continue;
		memcpy(full + plen, de->d_name, nl);
		fl = plen + nl;
		if (kind == 1)
			full[fl++] = '/';
		full[fl] = '\0';
		if (bound != NULL && strcmp(full + plen, bound) <= 0)
			continue;
		if (!lw_keep(w, full, fl, kind == 1))
			continue;
		e.sk = strdup(full + plen);
		e.dir = kind == 1;
		if (e.sk == NULL)
			rv = BC_ENOMEM;
		else
			rv = heap_offer(h, e);
	}
	closedir(d);
	return rv;
}

/* Fills the stats of a key item from the file name in dir fd dfd. */
static bool
stat_item(int dfd, const char *name, bc_file_item_t *it)
{
	struct stat st;
	meta_t m;
	int fd = open_reg_at(dfd, name, &st);

	if (fd < 0)
		return false;
	meta_read(fd, &st, &m);
	it->size = (uint64_t)st.st_size;
	it->mtime = st.st_mtim.tv_sec;
	snprintf(it->etag, sizeof(it->etag), "%s", m.etag);
	meta_fini(&m);
	close(fd);
	return true;
}

static void
walk_dir(lwalk_t *w, const char *path, size_t plen, int depth)
{
	char *bound = NULL, *full;
	lheap_t h = { NULL, 0, 0 };
	int dfd = -1;

	if (depth > BC_S3_MAX_KEY / 2)
		return;
	full = malloc(BC_S3_MAX_KEY + NAME_MAX + 4);   /* off the stack: */
	if (full == NULL) {                            /* this recurses */
		w->err = BC_ENOMEM;
		return;
	}
	while (!lw_full(w)) {
		size_t need = w->want - w->out->n, i;
		int rv;

		h.k = need < 64 ? 64 : need;
		h.n = 0;
		free(h.v);
		h.v = malloc(h.k * sizeof(*h.v));
		if (h.v == NULL) {
			w->err = BC_ENOMEM;
			break;
		}
		rv = scan_dir(w, path, plen, bound, &h);
		if (rv != 0) {
			if (rv < 0)
				w->err = rv;
			break;
		}
		qsort(h.v, h.n, sizeof(*h.v), lent_qcmp);
		for (i = 0; i < h.n && !lw_full(w); i++) {
			lent_t *e = &h.v[i];
			size_t fl = plen + strlen(e->sk), cl;

			memcpy(full, path, plen);
			strcpy(full + plen, e->sk);
			/* the pass was filtered before this pass emitted */
			if (!lw_keep(w, full, fl, e->dir))
				continue;
			cl = rollup_len(w, full, fl);
			if (cl > 0) {
				if (e->dir && !subtree_has_object(w->bfd, full,
				    fl, depth + 1))
					continue;
				if (list_push(w->out, full, cl, true) < 0)
					w->err = BC_ENOMEM;
			} else if (e->dir) {
				close_fd(&dfd);
				walk_dir(w, full, fl, depth + 1);
			} else {
				if (dfd < 0)
					dfd = walk_dirs(w->bfd, path,
					    plen > 0 ? plen - 1 : 0, false);
				if (dfd < 0)
					continue;
				if (list_push(w->out, full, fl, false) < 0) {
					w->err = BC_ENOMEM;
					break;
				}
				if (!stat_item(dfd, e->sk,
				    &w->out->v[w->out->n - 1])) {
					free(w->out->v[--w->out->n].name);
				}
			}
		}
		free(bound);
		bound = i > 0 ? strdup(h.v[i - 1].sk) : NULL;
		if (i > 0 && bound == NULL)
			w->err = BC_ENOMEM;
		for (size_t j = 0; j < h.n; j++)
			free(h.v[j].sk);
		if (h.n < h.k || bound == NULL)
			break;   /* the directory is exhausted */
	}
	close_fd(&dfd);
	free(bound);
	free(h.v);
	free(full);
}

/* true when a regular, listable file lies below dir ("d/", dlen bytes). */
static bool
subtree_has_object(int bfd, const char *dir, size_t dlen, int depth)
{
	int fd = walk_dirs(bfd, dir, dlen - 1, false);
	char **subs = NULL;
	size_t nsubs = 0, cap = 0;
	bool found = false;
	struct dirent *de;
	DIR *d;

	if (fd < 0 || depth > BC_S3_MAX_KEY / 2) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return false;
	}
	while (!found && (de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name);
		int kind;

		if (de->d_name[0] == '.' && (nl == 1 || (nl == 2 &&
		    de->d_name[1] == '.')))
			continue;
		if (is_hidden(de->d_name) || dlen + nl > BC_S3_MAX_KEY)
			continue;
		kind = entry_kind(d, de);
		if (kind == 0) {
			found = true;
		} else if (kind == 1 && dlen + nl + 1 < BC_S3_MAX_KEY) {
			if (nsubs == cap) {
				char **v = realloc(subs, (cap + 16) *
				    sizeof(*v));

				if (v == NULL)
					break;
				subs = v;
				cap += 16;
			}
			subs[nsubs] = strdup(de->d_name);
			if (subs[nsubs] != NULL)
				nsubs++;
		}
	}
	closedir(d);
	for (size_t i = 0; i < nsubs; i++) {
		if (!found) {
			char sub[BC_S3_MAX_KEY + 2];
			int n = snprintf(sub, sizeof(sub), "%.*s%s/", (int)dlen,
			    dir, subs[i]);

			if (n > 0 && (size_t)n < sizeof(sub))
				found = subtree_has_object(bfd, sub, (size_t)n,
				    depth + 1);
		}
		free(subs[i]);
	}
	free(subs);
	return found;
}

int
bc_file_list(int bucket_fd, const bc_file_list_opts_t *o,
    bc_file_list_t *out)
{
	lwalk_t w;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	w.bfd = bucket_fd;
	w.prefix = o->prefix != NULL ? o->prefix : "";
	w.plen = strlen(w.prefix);
	w.delim = o->delimiter != NULL ? o->delimiter : "";
	w.dlen = strlen(w.delim);
	w.after = o->after != NULL ? o->after : "";
	w.want = (o->max > BC_FILE_MAX_LIST ? BC_FILE_MAX_LIST : o->max) + 1;
	w.out = out;
	if (o->max == 0)
		return 0;
	/* Every key under prefix "a/b/c" lies below directory "a/b/": start
	 * there. Its segments come from the client, so they are checked
	 * like a key's (no "..", ".", "" or hidden segment); when they fail,
	 * no key can match. */
	{
		const char *slash = strrchr(w.prefix, '/');
		size_t slen = slash != NULL ? (size_t)(slash - w.prefix) : 0;
		char start[BC_S3_MAX_KEY + 2];
		int depth = 0;

		if (slen > 0) {
			if (slen > BC_S3_MAX_KEY)
				return 0;
			memcpy(start, w.prefix, slen);
			start[slen] = '\0';
			if (bc_file_key_check(start) != BC_S3E_NONE)
				return 0;
			for (size_t i = 0; i < slen; i++)
				depth += start[i] == '/';
			start[slen] = '/';
			start[slen + 1] = '\0';
			walk_dir(&w, start, slen + 1, depth + 1);
		} else if (slash == NULL) {
			walk_dir(&w, "", 0, 0);
		}
		/* a prefix starting with '/' matches no key */
	}
	if (w.err < 0) {
		bc_file_list_fini(out);
		return w.err;
	}
	if (out->n == w.want) {
		out->truncated = true;
		free(out->v[--out->n].name);
	}
	return 0;
}

void
bc_file_list_fini(bc_file_list_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- the aws-chunked decoder ------------------------------------------- */

typedef enum dc_state_e {
	DC_SIZE = 0, DC_EXT, DC_SIZE_LF, DC_DATA, DC_DATA_CR, DC_DATA_LF,
	DC_TRAILER, DC_TRAILER_LF, DC_DONE
} dc_state_t;

typedef struct dechunk_s {
	dc_state_t st;
	uint64_t   size;      /* chunk size being read / bytes left */
	unsigned   digits;
	size_t     line;      /* bytes of the current ext/trailer line */
	size_t     trailer;   /* trailer bytes so far */
	bool       empty;     /* current trailer line is empty so far */
} dechunk_t;

/* ---- per-request state ------------------------------------------------- */

typedef enum sink_e {
	SINK_DISCARD = 0,
	SINK_FILE,
	SINK_XML,
} sink_t;

typedef struct fctx_s {
	int              bfd;         /* bucket directory */
	int              fd;          /* temp file being written */
	int              tmpdirfd;    /* directory holding it */
	char             tmpname[64];
	bool             tmp_live;    /* tmpname exists, not committed */
	sink_t           sink;
	uint64_t         limit;       /* decoded body bytes allowed */
	bc_s3err_t       too_large;
	uint64_t         n;           /* decoded body bytes taken */
	uint64_t         expect;      /* announced decoded length */
	bc_md5ctx_t     *md5;         /* of the decoded body */
	bc_sha256_t     *sha;         /* of the raw body (V4 hex hash) */
	bool             chunked;
	dechunk_t        dc;
	bc_awschunked_t *verify;      /* aws-chunked, verified */
	bc_checksum_t    ck;          /* of the decoded body */
	const char      *ck_want;     /* its value sent in a header, or NULL */
	char             ck_value[BC_CKSUM_B64_MAX];   /* verified value */
	bc_checksum_alg_t ck_alg;     /* of ck_value, NONE: none */
	bc_checksum_alg_t trailer_alg;   /* the aws-chunked trailer's */
	bc_buf_t         xml;
	bc_kvlist_t      hdrs;        /* headers the new object keeps */
	int              updfd;       /* multipart upload directory */
	unsigned         part;
	bool             noop;        /* answer without doing anything */
} fctx_t;

static bc_s3err_t
sink_data(fctx_t *c, const char *p, size_t n)
{
	int rv;

	if (n > c->limit - c->n)
		return c->too_large;
	c->n += n;
	if (c->md5 != NULL)
		bc_md5_update(c->md5, p, n);
	if (c->ck.alg != BC_CKSUM_NONE)
		bc_checksum_update(&c->ck, p, n);
	switch (c->sink) {
	case SINK_FILE:
		rv = write_all(c->fd, p, n);
		if (rv < 0) {
			BC_WARN("file backend: write: %s", strerror(-rv));
			return errno_s3(rv, BC_S3E_InternalError);
		}
		return BC_S3E_NONE;
	case SINK_XML:
		return bc_buf_append(&c->xml, p, n) < 0 ?
		    BC_S3E_InternalError : BC_S3E_NONE;
	default:
		return BC_S3E_NONE;
	}
}

static int
hexdig(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Decodes aws-chunked framing ("hex[;ext]\r\n" data "\r\n" ... "0\r\n"
 * [trailers] "\r\n"), passing data to sink_data(). */
static bc_s3err_t
dechunk_feed(fctx_t *c, const char *p, size_t n)
{
	dechunk_t *d = &c->dc;
	const bc_s3err_t bad = BC_S3E_IncompleteBody;
	size_t i = 0;

	while (i < n) {
		char ch = p[i];
		int v;

		switch (d->st) {
		case DC_SIZE:
			v = hexdig(ch);
			if (v >= 0 && d->digits < 16) {
				d->size = d->size * 16 + (uint64_t)v;
				d->digits++;
			} else if ((ch == ';' || ch == '\r') && d->digits > 0) {
				d->st = ch == ';' ? DC_EXT : DC_SIZE_LF;
				d->line = 0;
			} else {
				return bad;
			}
			i++;
			break;
		case DC_EXT:
			if (ch == '\r')
				d->st = DC_SIZE_LF;
			else if (ch == '\n' || ++d->line > 1024)
				return bad;
			i++;
			break;
		case DC_SIZE_LF:
			if (ch != '\n')
				return bad;
			if (d->size == 0) {
				d->st = DC_TRAILER;
				d->empty = true;
			} else {
				d->st = DC_DATA;
			}
			i++;
			break;
		case DC_DATA: {
			size_t k = n - i;
			bc_s3err_t e;

			if (k > d->size)
				k = (size_t)d->size;
			e = sink_data(c, p + i, k);
			if (e != BC_S3E_NONE)
				return e;
			d->size -= k;
			i += k;
			if (d->size == 0)
				d->st = DC_DATA_CR;
			break;
		}
		case DC_DATA_CR:
			if (ch != '\r')
				return bad;
			d->st = DC_DATA_LF;
			i++;
			break;
		case DC_DATA_LF:
			if (ch != '\n')
				return bad;
			d->st = DC_SIZE;
			d->size = 0;
			d->digits = 0;
			i++;
			break;
		case DC_TRAILER:
			if (ch == '\r') {
				d->st = DC_TRAILER_LF;
			} else {
				d->empty = false;
				if (ch == '\n' || ++d->trailer > 16384)
					return bad;
			}
			i++;
			break;
		case DC_TRAILER_LF:
			if (ch != '\n')
				return bad;
			d->st = d->empty ? DC_DONE : DC_TRAILER;
			d->empty = true;
			i++;
			break;
		case DC_DONE:
		default:
			return bad;
		}
	}
	return BC_S3E_NONE;
}

/* ---- responses --------------------------------------------------------- */

static struct MHD_Response *
empty_response(void)
{
	return MHD_create_response_from_buffer(0, (void *)"",
	    MHD_RESPMEM_PERSISTENT);
}

/* Queues an error with msg (NULL: the table's); returns BC_S3E_NONE when
 * queued, else e so the front end answers. */
static bc_s3err_t
fail(bc_http_req_t *r, bc_s3err_t e, const char *msg)
{
	if (bc_http_respond_error(r, e, msg) == 0)
		return BC_S3E_NONE;
	return e;
}

/* An error document with one extra header. */
static bc_s3err_t
fail_hdr(bc_http_req_t *r, bc_s3err_t e, const char *hname,
    const char *hval)
{
	bc_buf_t body = BC_BUF_INIT;
	struct MHD_Response *resp;
	size_t len;
	char *p;

	if (bc_s3err_xml(&body, e, NULL, r->s3.path, r->s3.request_id) < 0) {
		bc_buf_fini(&body);
		return e;
	}
	len = body.len;
	p = bc_buf_steal(&body);
	if (p == NULL)
		return e;
	resp = MHD_create_response_from_buffer(len, p, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(p);
		return e;
	}
	MHD_add_response_header(resp, "Content-Type", "application/xml");
	MHD_add_response_header(resp, hname, hval);
	r->bytes_out = len;
	return bc_http_respond(r, (unsigned)bc_s3err_status(e), resp) == 0 ?
	    BC_S3E_NONE : e;
}

static bc_s3err_t
respond_xml(bc_http_req_t *r, bc_buf_t *body)
{
	return bc_http_respond_buf(r, 200, "application/xml", body) == 0 ?
	    BC_S3E_NONE : BC_S3E_InternalError;
}

static bc_s3err_t
respond_empty(bc_http_req_t *r, unsigned status, const char *hname,
    const char *hval)
{
	struct MHD_Response *resp = empty_response();

	if (resp == NULL)
		return BC_S3E_InternalError;
	if (hname != NULL)
		MHD_add_response_header(resp, hname, hval);
	return bc_http_respond(r, status, resp) == 0 ? BC_S3E_NONE :
	    BC_S3E_InternalError;
}

static void
add_etag(struct MHD_Response *resp, const char *etag)
{
	char q[BC_FILE_ETAG_LEN + 2];

	snprintf(q, sizeof(q), "\"%s\"", etag);
	MHD_add_response_header(resp, "ETag", q);
}

/* ETag, Last-Modified, Content-Type, stored headers, with response-*
 * overrides from the query. */
static void
add_object_headers(struct MHD_Response *resp, const bc_http_req_t *r,
    const meta_t *m, const struct stat *st)
{
	static const struct {
		const char *stored;
		const char *header;
		const char *param;
	} map[] = {
		{ "content-type", "Content-Type", "response-content-type" },
		{ "content-encoding", "Content-Encoding",
		    "response-content-encoding" },
		{ "content-disposition", "Content-Disposition",
		    "response-content-disposition" },
		{ "content-language", "Content-Language",
		    "response-content-language" },
		{ "cache-control", "Cache-Control", "response-cache-control" },
		{ "expires", "Expires", "response-expires" },
	};
	char date[BC_HTTP_DATE_LEN];

	add_etag(resp, m->etag);
	bc_http_date(st->st_mtim.tv_sec, date);
	MHD_add_response_header(resp, "Last-Modified", date);
	MHD_add_response_header(resp, "Accept-Ranges", "bytes");
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		const char *v = bc_kv_get_exact(&r->s3.query, map[i].param);

		if (v == NULL)
			v = bc_kv_get(&m->hdrs, map[i].stored);
		if (v == NULL && i == 0)
			v = DEFAULT_CTYPE;
		if (v != NULL && strpbrk(v, "\r\n") == NULL)
			MHD_add_response_header(resp, map[i].header, v);
	}
	for (size_t i = 0; i < m->hdrs.n; i++)
		if (starts_with(m->hdrs.v[i].name, "x-amz-meta-"))
			bc_http_add_header(resp, m->hdrs.v[i].name,
			    m->hdrs.v[i].value);
}

/* With "x-amz-checksum-mode: ENABLED", the whole object's checksum kept
 * with its metadata (single-part objects; a multipart one has none), as
 * S3 sends it; a range gets none. */
static void
add_checksum_headers(struct MHD_Response *resp, const bc_http_req_t *r,
    const meta_t *m)
{
	const char *mode = bc_kv_get(&r->s3.headers, "x-amz-checksum-mode");

	if (mode == NULL || strcasecmp(mode, "ENABLED") != 0)
		return;
	for (size_t i = 0; i < m->hdrs.n; i++)
		if (bc_checksum_from_header(m->hdrs.v[i].name) !=
		    BC_CKSUM_NONE) {
			MHD_add_response_header(resp, m->hdrs.v[i].name,
			    m->hdrs.v[i].value);
			MHD_add_response_header(resp, "x-amz-checksum-type",
			    "FULL_OBJECT");
			return;
		}
}

static void
xml_elem_out(bc_buf_t *b, const char *name, const char *value, bool url)
{
	bc_buf_printf(b, "<%s>", name);
	if (url)
		bc_sigv4_uri_encode(b, value, true);
	else
		bc_buf_put_xml(b, value);
	bc_buf_printf(b, "</%s>", name);
}

/* ---- temp files and commit --------------------------------------------- */

/* Creates a temp file in dirfd (taken over by c). */
static bc_s3err_t
tmp_open(fctx_t *c, int dirfd, const char *tag)
{
	char rnd[17];
	int rv;

	c->tmpdirfd = dirfd;
	rv = rand_hex(rnd, 8);
	if (rv < 0)
		return BC_S3E_InternalError;
	snprintf(c->tmpname, sizeof(c->tmpname), "%s.%s", tag, rnd);
	c->fd = openat(dirfd, c->tmpname, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0644);
	if (c->fd < 0) {
		BC_WARN("file backend: cannot create a temp file: %s",
		    strerror(errno));
		return errno_s3(errno, BC_S3E_InternalError);
	}
	c->tmp_live = true;
	return BC_S3E_NONE;
}

/* A temp file in the bucket's upload area. */
static bc_s3err_t
tmp_open_bucket(fctx_t *c, const char *tag)
{
	int dfd = open_hidden_dir(c->bfd, TMP_DIR);

	if (dfd < 0)
		return errno_s3(dfd, BC_S3E_InternalError);
	return tmp_open(c, dfd, tag);
}

static const char *const conflict_msg =
    "The key conflicts with an existing object or prefix in the file "
    "backend (a key cannot be both an object and a prefix, or cross a "
    "symbolic link).";

/*
 * Stores metadata on the temp file and renames it over key. The write
 * conditions If-Match / If-None-Match hold against the current object;
 * "If-None-Match: *" is atomic (link, which fails when the key exists).
 * Returns BC_S3E_NONE or the error (*msg: a message, or NULL).
 */
static bc_s3err_t
commit_object(bc_http_req_t *r, fctx_t *c, const char *key,
    const char *etag, const bc_kvlist_t *hdrs, const char **msg)
{
	bc_cond_t cond = { NULL, NULL, NULL, NULL };
	bool create_only = false;
	const char *leaf;
	int pfd = -1, tries;
	bc_s3err_t e = BC_S3E_NONE;

	*msg = NULL;
	meta_write(c->fd, etag, hdrs);
	cond.if_match = bc_kv_get(&r->s3.headers, "If-Match");
	cond.if_none_match = bc_kv_get(&r->s3.headers, "If-None-Match");
	if (cond.if_none_match != NULL && cond.if_match == NULL) {
		const char *s = cond.if_none_match;
		size_t n = strlen(s);

		bc_span_trim(&s, &n);
		create_only = n == 1 && s[0] == '*';
	}
	if (!create_only && (cond.if_match != NULL ||
	    cond.if_none_match != NULL)) {
		struct stat st;
		int fd = open_object(c->bfd, key, &st);

		if (fd >= 0) {
			meta_t m;

			meta_read(fd, &st, &m);
			close(fd);
			e = bc_cond_eval(&cond, BC_COND_WRITE, m.etag,
			    st.st_mtim.tv_sec);
			meta_fini(&m);
			if (e != BC_S3E_NONE)
				return e;
		} else if (cond.if_match != NULL) {
			return BC_S3E_NoSuchKey;
		}
	}
	for (tries = 0; tries < 3; tries++) {
		int rv;

		pfd = open_parent(c->bfd, key, true, &leaf);
		if (pfd < 0) {
			if (pfd == -ENOTDIR || pfd == -EEXIST ||
			    pfd == -ELOOP) {
				*msg = conflict_msg;
				return BC_S3E_InvalidRequest;
			}
			return errno_s3(pfd, BC_S3E_InternalError);
		}
		if (create_only) {
			struct stat st;

			rv = linkat(c->tmpdirfd, c->tmpname, pfd, leaf, 0);
			if (rv == 0) {
				unlinkat(c->tmpdirfd, c->tmpname, 0);
				break;
			}
			if (errno == EPERM || errno == EOPNOTSUPP) {
				/* no hard links here: check, then rename */
				if (fstatat(pfd, leaf, &st,
				    AT_SYMLINK_NOFOLLOW) == 0) {
					close_fd(&pfd);
					return BC_S3E_PreconditionFailed;
				}
				rv = renameat(c->tmpdirfd, c->tmpname, pfd,
				    leaf);
				if (rv == 0)
					break;
			}
		} else {
			rv = renameat(c->tmpdirfd, c->tmpname, pfd, leaf);
			if (rv < 0 && (errno == EISDIR || errno == ENOTEMPTY ||
			    errno == EEXIST) &&
			    unlinkat(pfd, leaf, AT_REMOVEDIR) == 0)
				rv = renameat(c->tmpdirfd, c->tmpname, pfd,
				    leaf);
			if (rv == 0)
				break;
		}
		rv = errno;
		close_fd(&pfd);
		if (rv == ENOENT)
			continue;   /* a delete pruned the directory: again */
		if (rv == EEXIST && create_only)
			return BC_S3E_PreconditionFailed;
		if (rv == EISDIR || rv == ENOTEMPTY || rv == EEXIST ||
		    rv == ENOTDIR) {
			*msg = conflict_msg;
			return BC_S3E_InvalidRequest;
		}
		BC_WARN("file backend: rename: %s", strerror(rv));
		return errno_s3(rv, BC_S3E_InternalError);
	}
	close_fd(&pfd);
	if (tries == 3)
		return BC_S3E_InternalError;
	c->tmp_live = false;
	return BC_S3E_NONE;
}

/* ---- bucket operations ------------------------------------------------- */

typedef struct bent_s {
	char  *name;
	time_t ctime;
} bent_t;

static int
bent_cmp(const void *a, const void *b)
{
	return strcmp(((const bent_t *)a)->name, ((const bent_t *)b)->name);
}

static bc_s3err_t
op_list_buckets(bc_http_req_t *r)
{
	bc_buf_t b = BC_BUF_INIT;
	bent_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	bc_s3err_t e = BC_S3E_InternalError;
	int fd = reopen_dir(root_fd);
	DIR *d;

	if (fd < 0)
		return BC_S3E_InternalError;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return BC_S3E_InternalError;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (!bc_file_bucket_ok(de->d_name, false) ||
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			bent_t *nv = realloc(v, (cap + 32) * sizeof(*v));

			if (nv == NULL)
				goto out;
			v = nv;
			cap += 32;
		}
		v[n].name = strdup(de->d_name);
		if (v[n].name == NULL)
			goto out;
		v[n].ctime = st.st_mtim.tv_sec;
		n++;
	}
	qsort(v, n, sizeof(*v), bent_cmp);
	bc_buf_puts(&b, XML_PROLOG "<ListAllMyBucketsResult xmlns=\"" S3_XMLNS
	    "\"><Owner><ID>bucketcache</ID><DisplayName>bucketcache"
	    "</DisplayName></Owner><Buckets>");
	for (size_t i = 0; i < n; i++) {
		char iso[25];

		bc_iso8601_date(v[i].ctime, iso);
		bc_buf_puts(&b, "<Bucket>");
		xml_elem_out(&b, "Name", v[i].name, false);
		xml_elem_out(&b, "CreationDate", iso, false);
		bc_buf_puts(&b, "</Bucket>");
	}
	if (bc_buf_puts(&b, "</Buckets></ListAllMyBucketsResult>") == 0)
		e = respond_xml(r, &b);
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	bc_buf_fini(&b);
	return e;
}

static bc_s3err_t
op_create_bucket(bc_http_req_t *r)
{
	char loc[BC_S3_MAX_BUCKET + 2];

	if (mkdirat(root_fd, r->s3.bucket, 0755) < 0) {
		if (errno == EEXIST)
			return BC_S3E_BucketAlreadyOwnedByYou;
		BC_WARN("file backend: mkdir %s: %s", r->s3.bucket,
		    strerror(errno));
		return errno_s3(errno, BC_S3E_InternalError);
	}
	snprintf(loc, sizeof(loc), "/%s", r->s3.bucket);
	return respond_empty(r, 200, "Location", loc);
}

/* true when the tree below fd holds nothing but directories (and, at the
 * top, our hidden ones). */
static bool
tree_is_empty(int fd, int depth)
{
	bool empty = true;
	struct dirent *de;
	DIR *d;
	int dup_fd;

	if (depth > 64)
		return false;
	dup_fd = reopen_dir(fd);
	if (dup_fd < 0)
		return false;
	d = fdopendir(dup_fd);
	if (d == NULL) {
		close(dup_fd);
		return false;
	}
	while (empty && (de = readdir(d)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    (depth == 0 && is_hidden(de->d_name)))
			continue;
		sub = open_dir_at(dirfd(d), de->d_name);
		if (sub < 0) {
			empty = false;
			break;
		}
		empty = tree_is_empty(sub, depth + 1);
		close(sub);
	}
	closedir(d);
	return empty;
}

/* Removes the empty directories below fd (never a file). */
static int
rm_empty_dirs(int fd, int depth)
{
	struct dirent *de;
	DIR *d;
	int dup_fd, rv = 0;

	if (depth > 64)
		return -ENOTEMPTY;
	dup_fd = reopen_dir(fd);
	if (dup_fd < 0)
		return -errno;
	d = fdopendir(dup_fd);
	if (d == NULL) {
		close(dup_fd);
		return -ENOMEM;
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (depth == 0 && is_hidden(de->d_name)) {
			rv = rm_tree(dirfd(d), de->d_name, 1);
			continue;
		}
		sub = open_dir_at(dirfd(d), de->d_name);
		if (sub < 0) {
			rv = -ENOTEMPTY;
			break;
		}
		rv = rm_empty_dirs(sub, depth + 1);
		close(sub);
		if (rv == 0 && unlinkat(dirfd(d), de->d_name,
		    AT_REMOVEDIR) < 0)
			rv = -errno;
	}
	closedir(d);
	return rv;
}

static bc_s3err_t
op_delete_bucket(bc_http_req_t *r, fctx_t *c)
{
	int rv;

	if (!tree_is_empty(c->bfd, 0))
		return BC_S3E_BucketNotEmpty;
	rv = rm_empty_dirs(c->bfd, 0);
	if (rv == 0 && unlinkat(root_fd, r->s3.bucket, AT_REMOVEDIR) < 0)
		rv = -errno;
	if (rv == -ENOTEMPTY || rv == -EEXIST)
		return BC_S3E_BucketNotEmpty;
	if (rv < 0)
		return errno_s3(rv, BC_S3E_NoSuchBucket);
	return respond_empty(r, 204, NULL, NULL);
}

static bc_s3err_t
op_head_bucket(bc_http_req_t *r)
{
	const char *region = r->srv != NULL && r->srv->cfg != NULL ?
	    r->srv->cfg->region : "us-east-1";

	return respond_empty(r, 200, "x-amz-bucket-region", region);
}

static bc_s3err_t
op_bucket_location(bc_http_req_t *r)
{
	const char *region = r->srv != NULL && r->srv->cfg != NULL ?
	    r->srv->cfg->region : "us-east-1";
	bc_buf_t b = BC_BUF_INIT;

	bc_buf_puts(&b, XML_PROLOG "<LocationConstraint xmlns=\"" S3_XMLNS
	    "\">");
	if (strcmp(region, "us-east-1") != 0)
		bc_buf_put_xml(&b, region);
	if (bc_buf_puts(&b, "</LocationConstraint>") < 0) {
		bc_buf_fini(&b);
		return BC_S3E_InternalError;
	}
	return respond_xml(r, &b);
}

static bc_s3err_t
op_list_objects(bc_http_req_t *r, fctx_t *c, bool v2)
{
	const bc_kvlist_t *q = &r->s3.query;
	const char *prefix = bc_kv_get_exact(q, "prefix");
	const char *delim = bc_kv_get_exact(q, "delimiter");
	const char *enc = bc_kv_get_exact(q, "encoding-type");
	const char *mk = bc_kv_get_exact(q, "max-keys");
	const char *token = v2 ? bc_kv_get_exact(q, "continuation-token") :
	    NULL;
	const char *start = bc_kv_get_exact(q, v2 ? "start-after" : "marker");
	char *after = NULL;
	bc_file_list_opts_t o;
	bc_file_list_t l = { NULL, 0, false };
	bc_buf_t b = BC_BUF_INIT;
	bool url = false;
	uint64_t max = BC_FILE_MAX_LIST;
	bc_s3err_t e;
	int rv;

	if (enc != NULL) {
		if (strcmp(enc, "url") != 0)
			return fail(r, BC_S3E_InvalidArgument,
			    "Invalid Encoding Method specified in Request");
		url = true;
	}
	if (mk != NULL && !bc_u64_parse_str(mk, &max))
		return fail(r, BC_S3E_InvalidArgument,
		    "Provided max-keys not an integer or within integer range");
	if (prefix != NULL && strlen(prefix) > BC_S3_MAX_KEY)
		return BC_S3E_KeyTooLongError;
	if (token != NULL) {
		after = bc_file_token_decode(token);
		if (after == NULL)
			return fail(r, BC_S3E_InvalidArgument,
			    "The continuation token provided is incorrect");
	}
	memset(&o, 0, sizeof(o));
	o.prefix = prefix;
	o.delimiter = delim;
	o.after = after != NULL ? after : start;
	if (max > BC_FILE_MAX_LIST)
		max = BC_FILE_MAX_LIST;
	o.max = (size_t)max;
	rv = bc_file_list(c->bfd, &o, &l);
	if (rv < 0) {
		free(after);
		BC_WARN("file backend: list %s: %s", r->s3.bucket,
		    bc_strerror(rv));
		return errno_s3(rv, BC_S3E_InternalError);
	}
	bc_buf_puts(&b, XML_PROLOG "<ListBucketResult xmlns=\"" S3_XMLNS
	    "\">");
	xml_elem_out(&b, "Name", r->s3.bucket, false);
	xml_elem_out(&b, "Prefix", prefix != NULL ? prefix : "", url);
	if (!v2)
		xml_elem_out(&b, "Marker", start != NULL ? start : "", url);
	if (v2)
		bc_buf_printf(&b, "<KeyCount>%zu</KeyCount>", l.n);
	bc_buf_printf(&b, "<MaxKeys>%" PRIu64 "</MaxKeys>", max);
	if (delim != NULL && delim[0] != '\0')
		xml_elem_out(&b, "Delimiter", delim, url);
	bc_buf_printf(&b, "<IsTruncated>%s</IsTruncated>",
	    l.truncated ? "true" : "false");
	if (v2 && token != NULL)
		xml_elem_out(&b, "ContinuationToken", token, false);
	if (v2 && l.truncated && l.n > 0) {
		char *tok = malloc(2 * strlen(l.v[l.n - 1].name) + 1);

		if (tok != NULL) {
			bc_file_token_encode(l.v[l.n - 1].name, tok);
			xml_elem_out(&b, "NextContinuationToken", tok, false);
			free(tok);
		}
	}
	if (v2 && start != NULL)
		xml_elem_out(&b, "StartAfter", start, url);
	if (!v2 && l.truncated && l.n > 0 && delim != NULL &&
	    delim[0] != '\0')
		xml_elem_out(&b, "NextMarker", l.v[l.n - 1].name, url);
	if (url)
		bc_buf_puts(&b, "<EncodingType>url</EncodingType>");
	for (size_t i = 0; i < l.n; i++) {
		char iso[25];

		if (l.v[i].is_prefix)
			continue;
		bc_iso8601_date(l.v[i].mtime, iso);
		bc_buf_puts(&b, "<Contents>");
		xml_elem_out(&b, "Key", l.v[i].name, url);
		xml_elem_out(&b, "LastModified", iso, false);
		bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", l.v[i].etag);
		bc_buf_printf(&b, "<Size>%" PRIu64 "</Size>", l.v[i].size);
		bc_buf_puts(&b, "<StorageClass>STANDARD</StorageClass>"
		    "</Contents>");
	}
	for (size_t i = 0; i < l.n; i++) {
		if (!l.v[i].is_prefix)
			continue;
		bc_buf_puts(&b, "<CommonPrefixes>");
		xml_elem_out(&b, "Prefix", l.v[i].name, url);
		bc_buf_puts(&b, "</CommonPrefixes>");
	}
	rv = bc_buf_puts(&b, "</ListBucketResult>");
	free(after);
	bc_file_list_fini(&l);
	if (rv < 0) {
		bc_buf_fini(&b);
		return BC_S3E_InternalError;
	}
	e = respond_xml(r, &b);
	return e;
}

/* ---- object operations ------------------------------------------------- */

static bc_s3err_t
op_get_object(bc_http_req_t *r, fctx_t *c)
{
	struct MHD_Response *resp;
	struct stat st;
	meta_t m;
	bc_cond_t cond;
	bc_range_t rg = { 0, 0 };
	bc_range_result_t rr;
	const char *pn = bc_kv_get_exact(&r->s3.query, "partNumber");
	char cr[BC_RANGE_CR_LEN];
	uint64_t size, off = 0, len;
	unsigned status = 200;
	bc_s3err_t e;
	int fd;

	fd = open_object(c->bfd, r->s3.key, &st);
	if (fd < 0)
		return errno_s3(fd, BC_S3E_NoSuchKey);
	meta_read(fd, &st, &m);
	size = (uint64_t)st.st_size;
	bc_cond_from_headers(&cond, &r->s3.headers);
	e = bc_cond_eval(&cond, BC_COND_READ, m.etag, st.st_mtim.tv_sec);
	if (e == BC_S3E_NotModified) {
		char date[BC_HTTP_DATE_LEN];

		close(fd);
		resp = empty_response();
		if (resp == NULL) {
			meta_fini(&m);
			return BC_S3E_InternalError;
		}
		add_etag(resp, m.etag);
		bc_http_date(st.st_mtim.tv_sec, date);
		MHD_add_response_header(resp, "Last-Modified", date);
		meta_fini(&m);
		return bc_http_respond(r, 304, resp) == 0 ? BC_S3E_NONE :
		    BC_S3E_InternalError;
	}
	if (e != BC_S3E_NONE) {
		close(fd);
		meta_fini(&m);
		return e;
	}
	if (pn != NULL && strcmp(pn, "1") != 0) {
		close(fd);
		meta_fini(&m);
		return fail(r, BC_S3E_InvalidRange,
		    "The requested partnumber is not satisfiable");
	}
	rr = bc_range_parse(bc_kv_get(&r->s3.headers, "Range"), size, &rg);
	if (rr == BC_RANGE_UNSATISFIABLE) {
		close(fd);
		meta_fini(&m);
		bc_range_content_range(cr, sizeof(cr), NULL, size);
		return fail_hdr(r, BC_S3E_InvalidRange, "Content-Range", cr);
	}
	len = size;
	if (rr == BC_RANGE_OK) {
		off = rg.first;
		len = bc_range_length(&rg);
		status = 206;
	}
	if (len > 0) {
		resp = MHD_create_response_from_fd_at_offset64(len, fd,
		    (int64_t)off);
		if (resp == NULL)
			close(fd);
	} else {
		close(fd);
		resp = empty_response();
	}
	if (resp == NULL) {
		meta_fini(&m);
		return BC_S3E_InternalError;
	}
	add_object_headers(resp, r, &m, &st);
	if (rr == BC_RANGE_OK) {
		bc_range_content_range(cr, sizeof(cr), &rg, size);
		MHD_add_response_header(resp, "Content-Range", cr);
	} else {
		add_checksum_headers(resp, r, &m);
	}
	meta_fini(&m);
	r->bytes_out = r->s3.op == BC_S3OP_HeadObject ? 0 : len;
	return bc_http_respond(r, status, resp) == 0 ? BC_S3E_NONE :
	    BC_S3E_InternalError;
}

/* Removes the directories of key that became empty, deepest first. */
static void
prune_dirs(int bfd, const char *key)
{
	const char *end = strrchr(key, '/');

	while (end != NULL && end > key) {
		char name[NAME_MAX + 1];
		const char *start = end - 1;
		size_t n;
		int pfd;

		while (start > key && start[-1] != '/')
			start--;
		n = (size_t)(end - start);
		if (n > NAME_MAX)
			return;
		memcpy(name, start, n);
		name[n] = '\0';
		pfd = walk_dirs(bfd, key, start > key ?
		    (size_t)(start - key - 1) : 0, false);
		if (pfd < 0)
			return;
		if (unlinkat(pfd, name, AT_REMOVEDIR) < 0) {
			close(pfd);
			return;
		}
		close(pfd);
		end = start > key ? start - 1 : NULL;
	}
}

/* Deletes object key; absent is success, as in S3. */
static bc_s3err_t
delete_key(int bfd, const char *key)
{
	const char *leaf;
	struct stat st;
	bc_s3err_t e = bc_file_key_check(key);
	int pfd;

	if (e != BC_S3E_NONE) {
		size_t n = strlen(key);

		/* "dir/" names no object here */
		return n > 0 && key[n - 1] == '/' &&
		    e == BC_S3E_InvalidArgument ? BC_S3E_NONE : e;
	}
	pfd = open_parent(bfd, key, false, &leaf);
	if (pfd < 0)
		return errno_s3(pfd, BC_S3E_NONE);
	if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode)) {
		close(pfd);
		return BC_S3E_NONE;
	}
	if (unlinkat(pfd, leaf, 0) < 0 && errno != ENOENT) {
		int err = errno;

		close(pfd);
		return errno_s3(err, BC_S3E_NONE);
	}
	close(pfd);
	prune_dirs(bfd, key);
	return BC_S3E_NONE;
}

static bc_s3err_t
op_delete_object(bc_http_req_t *r, fctx_t *c)
{
	bc_s3err_t e = delete_key(c->bfd, r->s3.key);

	if (e != BC_S3E_NONE)
		return e;
	return respond_empty(r, 204, NULL, NULL);
}

static bc_s3err_t
op_delete_objects(bc_http_req_t *r, fctx_t *c)
{
	char **keys = NULL;
	size_t n = 0;
	bool quiet = false;
	bc_buf_t b = BC_BUF_INIT;
	bc_s3err_t e;

	e = bc_s3_xml_parse_delete(bc_buf_str(&c->xml), c->xml.len, &keys, &n,
	    &quiet);
	if (e != BC_S3E_NONE)
		return e;
	bc_buf_puts(&b, XML_PROLOG "<DeleteResult xmlns=\"" S3_XMLNS "\">");
	for (size_t i = 0; i < n; i++) {
		/* a key limited to prefixes deletes only under them */
		bc_s3err_t ke = r->client_key != NULL &&
		    !bc_config_key_allows(r->client_key, r->s3.bucket,
		    keys[i]) ? BC_S3E_AccessDenied :
		    delete_key(c->bfd, keys[i]);

		if (ke == BC_S3E_NONE && !quiet) {
			bc_buf_puts(&b, "<Deleted>");
			xml_elem_out(&b, "Key", keys[i], false);
			bc_buf_puts(&b, "</Deleted>");
		} else if (ke != BC_S3E_NONE) {
			bc_s3_xml_key_error(&b, keys[i], ke);
		}
		free(keys[i]);
	}
	free(keys);
	if (bc_buf_puts(&b, "</DeleteResult>") < 0) {
		bc_buf_fini(&b);
		return BC_S3E_InternalError;
	}
	return respond_xml(r, &b);
}

/* Takes what the aws-chunked decoder has ready into the sink. */
static bc_s3err_t
drain_verified(fctx_t *c)
{
	const char *p;
	size_t n;
	bc_s3err_t e;

	while ((n = bc_awschunked_output(c->verify, &p)) > 0) {
		e = sink_data(c, p, n);
		if (e != BC_S3E_NONE)
			return e;
		bc_awschunked_consume(c->verify, n);
	}
	return BC_S3E_NONE;
}

/* The checksum of the body: the one an x-amz-checksum-* header sent must
 * match (BadDigest); the trailer's was checked by the decoder. Leaves
 * the value to keep in ck_alg / ck_value. */
static bc_s3err_t
check_checksum(fctx_t *c)
{
	const char *tv = c->verify != NULL ?
	    bc_awschunked_checksum(c->verify) : NULL;

	if (c->ck.alg != BC_CKSUM_NONE) {
		c->ck_alg = c->ck.alg;
		bc_checksum_final(&c->ck, c->ck_value);
		bc_checksum_fini(&c->ck);
		if (c->ck_want != NULL && strcmp(c->ck_value, c->ck_want) != 0)
			return BC_S3E_BadDigest;
	}
	if (tv != NULL) {
		c->ck_alg = c->trailer_alg;
		snprintf(c->ck_value, sizeof(c->ck_value), "%s", tv);
	}
	return BC_S3E_NONE;
}

/* Checks what body() hashed against Content-MD5, the V4 payload hash and
 * a checksum (check_checksum); writes the MD5 into md5 (when kept). */
static bc_s3err_t
check_body(bc_http_req_t *r, fctx_t *c, uint8_t md5[BC_MD5_LEN])
{
	const char *cmd5 = bc_kv_get(&r->s3.headers, "Content-MD5");
	bc_s3err_t e;

	if (c->verify != NULL) {
		e = drain_verified(c);
		if (e == BC_S3E_NONE)
			e = bc_awschunked_finish(c->verify);
		if (e != BC_S3E_NONE)
			return e;
	}
	if (c->chunked && c->dc.st != DC_DONE)
		return BC_S3E_IncompleteBody;
	if (!c->chunked && c->verify == NULL &&
	    r->content_length != UINT64_MAX && c->n != r->content_length)
		return BC_S3E_IncompleteBody;
	if (c->expect != UINT64_MAX && c->n != c->expect)
		return BC_S3E_IncompleteBody;
	if (c->sha != NULL) {
		uint8_t d[BC_SHA256_LEN];
		char hex[65];

		bc_sha256_final(c->sha, d);
		c->sha = NULL;
		bc_hex(d, sizeof(d), hex);
		if (strcasecmp(hex, r->auth.payload_hash) != 0)
			return BC_S3E_XAmzContentSHA256Mismatch;
	}
	if (c->md5 != NULL) {
		bc_md5_final(c->md5, md5);
		c->md5 = NULL;
		if (cmd5 != NULL) {
			char b64[32];

			if (bc_base64(md5, BC_MD5_LEN, b64, sizeof(b64)) < 0 ||
			    strcmp(b64, cmd5) != 0)
				return BC_S3E_BadDigest;
		}
	}
	return check_checksum(c);
}

/* Answers an upload with its ETag and, as S3 does, the checksum it
 * verified or computed. */
static bc_s3err_t
respond_etag(bc_http_req_t *r, fctx_t *c, const char *etag)
{
	struct MHD_Response *resp = empty_response();

	if (resp == NULL)
		return BC_S3E_InternalError;
	add_etag(resp, etag);
	if (c->ck_alg != BC_CKSUM_NONE) {
		MHD_add_response_header(resp, bc_checksum_header(c->ck_alg),
		    c->ck_value);
		MHD_add_response_header(resp, "x-amz-checksum-type",
		    "FULL_OBJECT");
	}
	return bc_http_respond(r, 200, resp) == 0 ? BC_S3E_NONE :
	    BC_S3E_InternalError;
}

static bc_s3err_t
op_put_object(bc_http_req_t *r, fctx_t *c)
{
	uint8_t md5[BC_MD5_LEN];
	char etag[BC_FILE_ETAG_LEN];
	const char *msg;
	bc_s3err_t e;

	e = check_body(r, c, md5);
	if (e != BC_S3E_NONE)
		return e;
	bc_hex(md5, sizeof(md5), etag);
	/* the checksum is kept with the metadata (GET's checksum mode) */
	if (c->ck_alg != BC_CKSUM_NONE && bc_kv_set(&c->hdrs,
	    bc_checksum_header(c->ck_alg), c->ck_value) < 0)
		return BC_S3E_InternalError;
	e = commit_object(r, c, r->s3.key, etag, &c->hdrs, &msg);
	if (e != BC_S3E_NONE)
		return msg != NULL ? fail(r, e, msg) : e;
	return respond_etag(r, c, etag);
}

/* Copies src (from its start) into c->fd, hashing; returns 0 or -errno. */
static int
copy_hashed(int src, int dst, uint64_t len, bc_md5ctx_t *h)
{
	char *buf = malloc(COPY_BLOCK);
	int rv = 0;

	if (buf == NULL)
		return -ENOMEM;
	while (len > 0) {
		size_t want = len < COPY_BLOCK ? (size_t)len : COPY_BLOCK;
		ssize_t n = read(src, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rv = -errno;
			break;
		}
		if (n == 0) {
			rv = -EIO;   /* the source shrank */
			break;
		}
		if (h != NULL)
			bc_md5_update(h, buf, (size_t)n);
		rv = write_all(dst, buf, (size_t)n);
		if (rv < 0)
			break;
		len -= (uint64_t)n;
	}
	free(buf);
	return rv;
}

static const char *const copy_self_msg =
    "This copy request is illegal because it is trying to copy an object "
    "to itself without changing the object's metadata, storage class, "
    "website redirect location or encryption attributes.";

static bc_s3err_t
op_copy_object(bc_http_req_t *r, fctx_t *c)
{
	const char *src = bc_kv_get(&r->s3.headers, "x-amz-copy-source");
	const char *dir = bc_kv_get(&r->s3.headers,
	    "x-amz-metadata-directive");
	char *dec = NULL, *skey;
	const char *q, *msg;
	int sbfd = -1, sfd = -1;
	bool replace = false;
	struct stat st;
	meta_t m;
	bool have_meta = false;
	bc_cond_t cond;
	bc_md5ctx_t *h = NULL;
	uint8_t md5[BC_MD5_LEN];
	char etag[BC_FILE_ETAG_LEN], iso[25];
	bc_buf_t b = BC_BUF_INIT;
	bc_s3err_t e;
	int rv;

	if (dir != NULL) {
		if (strcmp(dir, "REPLACE") == 0)
			replace = true;
		else if (strcmp(dir, "COPY") != 0)
			return fail(r, BC_S3E_InvalidArgument,
			    "Unknown metadata directive.");
	}
	if (src[0] == '/')
		src++;
	q = strchr(src, '?');
	dec = bc_s3_pct_decode(src, q != NULL ? (size_t)(q - src) :
	    strlen(src));
	if (dec == NULL)
		return fail(r, BC_S3E_InvalidArgument,
		    "Invalid copy source encoding.");
	skey = strchr(dec, '/');
	if (skey != NULL)
		*skey = '\0';
	if (skey == NULL || !bc_file_bucket_ok(dec, false) ||
	    bc_file_key_check(skey + 1) != BC_S3E_NONE) {
		free(dec);
		return fail(r, BC_S3E_InvalidArgument,
		    "Copy Source must mention the source bucket and key: "
		    "sourcebucket/sourcekey.");
	}
	skey++;
	if (!replace && strcmp(dec, r->s3.bucket) == 0 &&
	    strcmp(skey, r->s3.key) == 0) {
		free(dec);
		return fail(r, BC_S3E_InvalidRequest, copy_self_msg);
	}
	sbfd = open_bucket(dec);
	if (sbfd < 0) {
		e = errno_s3(sbfd, BC_S3E_NoSuchBucket);
		goto out;
	}
	sfd = open_object(sbfd, skey, &st);
	if (sfd < 0) {
		e = errno_s3(sfd, BC_S3E_NoSuchKey);
		goto out;
	}
	meta_read(sfd, &st, &m);
	have_meta = true;
	bc_cond_from_copy_headers(&cond, &r->s3.headers);
	e = bc_cond_eval(&cond, BC_COND_COPY, m.etag, st.st_mtim.tv_sec);
	if (e != BC_S3E_NONE)
		goto out;
	if ((uint64_t)st.st_size > BC_FILE_MAX_OBJECT) {
		e = fail(r, BC_S3E_InvalidRequest, "The specified copy source "
		    "is larger than the maximum allowable size for a copy "
		    "source: 5368709120");
		goto out;
	}
	if (!replace)
		bc_kv_fini(&c->hdrs);
	/* all of the source's metadata, or (REPLACE) its checksum alone:
	 * the bytes are the same */
	for (size_t i = 0; i < m.hdrs.n; i++)
		if ((!replace || bc_checksum_from_header(m.hdrs.v[i].name) !=
		    BC_CKSUM_NONE) && bc_kv_add(&c->hdrs, m.hdrs.v[i].name,
		    m.hdrs.v[i].value) < 0) {
			e = BC_S3E_InternalError;
			goto out;
		}
	e = tmp_open_bucket(c, "copy");
	if (e != BC_S3E_NONE)
		goto out;
	h = bc_md5_new();
	if (h == NULL) {
		e = BC_S3E_InternalError;
		goto out;
	}
	rv = copy_hashed(sfd, c->fd, (uint64_t)st.st_size, h);
	bc_md5_final(h, md5);
	if (rv < 0) {
		BC_WARN("file backend: copy: %s", strerror(-rv));
		e = errno_s3(rv, BC_S3E_InternalError);
		goto out;
	}
	bc_hex(md5, sizeof(md5), etag);
	e = commit_object(r, c, r->s3.key, etag, &c->hdrs, &msg);
	if (e != BC_S3E_NONE) {
		if (msg != NULL)
			e = fail(r, e, msg);
		goto out;
	}
	{
		struct stat nst;

		bc_iso8601_date(fstat(c->fd, &nst) == 0 ? nst.st_mtim.tv_sec :
		    time(NULL), iso);
	}
	bc_buf_puts(&b, XML_PROLOG "<CopyObjectResult xmlns=\"" S3_XMLNS
	    "\">");
	xml_elem_out(&b, "LastModified", iso, false);
	bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", etag);
	if (bc_buf_puts(&b, "</CopyObjectResult>") < 0)
		e = BC_S3E_InternalError;
	else
		e = respond_xml(r, &b);
out:
	if (have_meta)
		meta_fini(&m);
	bc_buf_fini(&b);
	close_fd(&sfd);
	close_fd(&sbfd);
	free(dec);
	return e;
}

/* ---- multipart uploads ------------------------------------------------- */

static bool
upload_id_ok(const char *id)
{
	if (strlen(id) != UPLOAD_ID_LEN)
		return false;
	for (int i = 0; i < UPLOAD_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/*
 * Opens the upload directory for r's uploadId and checks that it belongs
 * to r's key; fills hdrs (when not NULL) with the headers the object will
 * keep. Returns the fd, or -1 with *e set.
 */
static int
open_upload(bc_http_req_t *r, fctx_t *c, bc_kvlist_t *hdrs, bc_s3err_t *e)
{
	const char *id = bc_kv_get_exact(&r->s3.query, "uploadId");
	char *buf = NULL, *hexkey = NULL;
	int mfd = -1, ufd = -1, ifd = -1;
	size_t klen = strlen(r->s3.key);
	ssize_t n;

	*e = BC_S3E_NoSuchUpload;
	if (id == NULL || !upload_id_ok(id))
		return -1;
	mfd = open_dir_at(c->bfd, MPU_DIR);
	if (mfd < 0)
		return -1;
	ufd = open_dir_at(mfd, id);
	close(mfd);
	if (ufd < 0)
		return -1;
	ifd = openat(ufd, UPLOAD_INFO, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	buf = malloc(META_MAX + 1);
	hexkey = malloc(2 * klen + 1);
	if (ifd < 0 || buf == NULL || hexkey == NULL)
		goto bad;
	n = read(ifd, buf, META_MAX);
	if (n <= 0)
		goto bad;
	buf[n] = '\0';
	bc_hex((const uint8_t *)r->s3.key, klen, hexkey);
	{
		const char *p = buf;
		const char *hdr = "bucketcache-upload 1\nkey ";
		size_t hl = strlen(hdr);

		if (strncmp(p, hdr, hl) != 0 ||
		    strncmp(p + hl, hexkey, 2 * klen) != 0 ||
		    p[hl + 2 * klen] != '\n')
			goto bad;
		p += hl + 2 * klen + 1;
		if (hdrs != NULL && parse_hdr_lines(p, (size_t)(buf + n - p),
		    hdrs) < 0) {
			*e = BC_S3E_InternalError;
			goto bad;
		}
	}
	close(ifd);
	free(buf);
	free(hexkey);
	*e = BC_S3E_NONE;
	return ufd;
bad:
	if (ifd >= 0)
		close(ifd);
	close(ufd);
	free(buf);
	free(hexkey);
	return -1;
}

static bc_s3err_t
op_create_mpu(bc_http_req_t *r, fctx_t *c)
{
	char id[UPLOAD_ID_LEN + 1];
	bc_buf_t info = BC_BUF_INIT, b = BC_BUF_INIT;
	char *hexkey = malloc(2 * strlen(r->s3.key) + 1);
	int mfd = -1, ufd = -1, ifd = -1, rv;
	bc_s3err_t e = BC_S3E_InternalError;

	if (hexkey == NULL)
		return BC_S3E_InternalError;
	mfd = open_hidden_dir(c->bfd, MPU_DIR);
	if (mfd < 0) {
		e = errno_s3(mfd, BC_S3E_InternalError);
		goto out;
	}
	if (rand_hex(id, UPLOAD_ID_LEN / 2) < 0 ||
	    mkdirat(mfd, id, 0700) < 0)
		goto out;
	ufd = open_dir_at(mfd, id);
	if (ufd < 0)
		goto out;
	bc_hex((const uint8_t *)r->s3.key, strlen(r->s3.key), hexkey);
	rv = bc_buf_printf(&info, "bucketcache-upload 1\nkey %s\n", hexkey);
	for (size_t i = 0; i < c->hdrs.n && rv == 0; i++)
		rv = bc_buf_printf(&info, "h %s: %s\n", c->hdrs.v[i].name,
		    c->hdrs.v[i].value);
	if (rv < 0 || info.len > META_MAX)
		goto out;
	ifd = openat(ufd, UPLOAD_INFO, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (ifd < 0 || write_all(ifd, info.data, info.len) < 0)
		goto out;
	bc_buf_puts(&b, XML_PROLOG "<InitiateMultipartUploadResult xmlns=\""
	    S3_XMLNS "\">");
	xml_elem_out(&b, "Bucket", r->s3.bucket, false);
	xml_elem_out(&b, "Key", r->s3.key, false);
	xml_elem_out(&b, "UploadId", id, false);
	if (bc_buf_puts(&b, "</InitiateMultipartUploadResult>") == 0)
		e = respond_xml(r, &b);
out:
	if (e != BC_S3E_NONE && ufd >= 0)
		rm_tree(mfd, id, 1);
	close_fd(&ifd);
	close_fd(&ufd);
	close_fd(&mfd);
	free(hexkey);
	bc_buf_fini(&info);
	bc_buf_fini(&b);
	return e;
}

static bc_s3err_t
op_upload_part(bc_http_req_t *r, fctx_t *c)
{
	uint8_t md5[BC_MD5_LEN];
	char etag[BC_FILE_ETAG_LEN], name[16];
	bc_kvlist_t none = BC_KVLIST_INIT;
	bc_s3err_t e;

	e = check_body(r, c, md5);
	if (e != BC_S3E_NONE)
		return e;
	bc_hex(md5, sizeof(md5), etag);
	meta_write(c->fd, etag, &none);
	snprintf(name, sizeof(name), "%u", c->part);
	if (renameat(c->tmpdirfd, c->tmpname, c->updfd, name) < 0) {
		if (errno == ENOENT)
			return BC_S3E_NoSuchUpload;
		return errno_s3(errno, BC_S3E_InternalError);
	}
	c->tmp_live = false;
	return respond_etag(r, c, etag);
}

/* The MD5 of part file fd (from its metadata, else computed). */
static int
part_md5(int fd, const struct stat *st, uint8_t out[BC_MD5_LEN])
{
	meta_t m;
	bc_md5ctx_t *h;
	char *buf;
	int rv = 0;

	meta_read(fd, st, &m);
	if (m.stored && strlen(m.etag) == 2 * BC_MD5_LEN) {
		for (int i = 0; i < BC_MD5_LEN; i++)
			out[i] = (uint8_t)(hexdig(m.etag[2 * i]) * 16 +
			    hexdig(m.etag[2 * i + 1]));
		meta_fini(&m);
		return 0;
	}
	meta_fini(&m);
	h = bc_md5_new();
	buf = malloc(COPY_BLOCK);
	if (h == NULL || buf == NULL) {
		free(buf);
		if (h != NULL)
			bc_md5_final(h, out);
		return -ENOMEM;
	}
	for (off_t off = 0;;) {
		ssize_t n = pread(fd, buf, COPY_BLOCK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rv = -errno;
			break;
		}
		if (n == 0)
			break;
		bc_md5_update(h, buf, (size_t)n);
		off += n;
	}
	bc_md5_final(h, out);
	free(buf);
	return rv;
}

/* Appends len bytes of src at offset 0 to dst. */
static int
append_file(int src, int dst, uint64_t len)
{
	off_t in = 0;

	while (len > 0) {
		ssize_t n = copy_file_range(src, &in, dst, NULL,
		    len > (1u << 30) ? (1u << 30) : (size_t)len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == ENOSYS ||
		    errno == EINVAL || errno == EOPNOTSUPP)) {
			if (lseek(src, in, SEEK_SET) < 0)
				return -errno;
			return copy_hashed(src, dst, len, NULL);
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		len -= (uint64_t)n;
	}
	return 0;
}

static bc_s3err_t
op_complete_mpu(bc_http_req_t *r, fctx_t *c)
{
	bc_s3_part_t *parts = NULL;
	size_t nparts = 0;
	bc_kvlist_t hdrs = BC_KVLIST_INIT;
	bc_md5ctx_t *all = NULL;
	uint8_t md5[BC_MD5_LEN];
	char etag[BC_FILE_ETAG_LEN];
	uint64_t total = 0;
	const char *msg;
	bc_buf_t b = BC_BUF_INIT;
	bc_s3err_t e;
	int ufd = -1;

	e = check_body(r, c, md5);
	if (e != BC_S3E_NONE)
		return e;
	e = bc_s3_xml_parse_complete(bc_buf_str(&c->xml), c->xml.len, &parts,
	    &nparts);
	if (e != BC_S3E_NONE)
		return e;
	ufd = open_upload(r, c, &hdrs, &e);
	if (ufd < 0)
		goto out;
	e = tmp_open_bucket(c, "complete");
	if (e != BC_S3E_NONE)
		goto out;
	all = bc_md5_new();
	if (all == NULL) {
		e = BC_S3E_InternalError;
		goto out;
	}
	for (size_t i = 0; i < nparts; i++) {
		char name[16], hex[2 * BC_MD5_LEN + 1];
		uint8_t pm[BC_MD5_LEN];
		struct stat st;
		int pfd, rv;

		snprintf(name, sizeof(name), "%u", parts[i].number);
		pfd = open_reg_at(ufd, name, &st);
		if (pfd < 0) {
			e = BC_S3E_InvalidPart;
			goto out;
		}
		rv = part_md5(pfd, &st, pm);
		bc_hex(pm, sizeof(pm), hex);
		if (rv == 0 && strcasecmp(hex, parts[i].etag) != 0)
			rv = 1;
		total += (uint64_t)st.st_size;
		if (rv == 0 && total > MAX_COMPLETE) {
			close(pfd);
			e = BC_S3E_EntityTooLarge;
			goto out;
		}
		if (rv == 0)
			rv = append_file(pfd, c->fd, (uint64_t)st.st_size);
		close(pfd);
		if (rv != 0) {
			e = rv > 0 ? BC_S3E_InvalidPart :
			    errno_s3(rv, BC_S3E_InternalError);
			goto out;
		}
		bc_md5_update(all, pm, sizeof(pm));
	}
	bc_md5_final(all, md5);
	all = NULL;
	bc_hex(md5, sizeof(md5), etag);
	snprintf(etag + 2 * BC_MD5_LEN, sizeof(etag) - 2 * BC_MD5_LEN, "-%zu",
	    nparts);
	e = commit_object(r, c, r->s3.key, etag, &hdrs, &msg);
	if (e != BC_S3E_NONE) {
		if (msg != NULL)
			e = fail(r, e, msg);
		goto out;
	}
	{
		int mfd = open_dir_at(c->bfd, MPU_DIR);

		if (mfd >= 0) {
			rm_tree(mfd, bc_kv_get_exact(&r->s3.query, "uploadId"),
			    1);
			close(mfd);
		}
	}
	bc_buf_puts(&b, XML_PROLOG "<CompleteMultipartUploadResult xmlns=\""
	    S3_XMLNS "\"><Location>/");
	bc_buf_put_xml(&b, r->s3.bucket);
	bc_buf_putc(&b, '/');
	bc_buf_put_xml(&b, r->s3.key);
	bc_buf_puts(&b, "</Location>");
	xml_elem_out(&b, "Bucket", r->s3.bucket, false);
	xml_elem_out(&b, "Key", r->s3.key, false);
	bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", etag);
	if (bc_buf_puts(&b, "</CompleteMultipartUploadResult>") < 0)
		e = BC_S3E_InternalError;
	else
		e = respond_xml(r, &b);
out:
	if (all != NULL)
		bc_md5_free(all);
	close_fd(&ufd);
	bc_kv_fini(&hdrs);
	bc_buf_fini(&b);
	free(parts);
	return e;
}

static bc_s3err_t
op_abort_mpu(bc_http_req_t *r, fctx_t *c)
{
	bc_s3err_t e;
	int ufd = open_upload(r, c, NULL, &e);
	int mfd;

	if (ufd < 0)
		return e;
	close(ufd);
	mfd = open_dir_at(c->bfd, MPU_DIR);
	if (mfd < 0 || rm_tree(mfd, bc_kv_get_exact(&r->s3.query,
	    "uploadId"), 1) < 0) {
		if (mfd >= 0)
			close(mfd);
		return BC_S3E_InternalError;
	}
	close(mfd);
	return respond_empty(r, 204, NULL, NULL);
}

/* ---- handler ops ------------------------------------------------------- */

static bool
is_object_op(bc_s3op_t op)
{
	switch (op) {
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
	case BC_S3OP_PutObject:
	case BC_S3OP_CopyObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_CreateMultipartUpload:
	case BC_S3OP_UploadPart:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_AbortMultipartUpload:
		return true;
	default:
		return false;
	}
}

static bool
is_location_query(const bc_http_req_t *r)
{
	return r->s3.op == BC_S3OP_BucketSubresource &&
	    strcmp(r->s3.method, "GET") == 0 && r->s3.query.n == 1 &&
	    strcmp(r->s3.query.v[0].name, "location") == 0;
}

/*
 * The checksum body() computes: an x-amz-checksum-* header's on the
 * bodies it describes (PutObject, UploadPart, DeleteObjects; a
 * CompleteMultipartUpload's names the object, not its XML, and is not
 * checked here), to compare; else for a PutObject S3's default, CRC64NVME,
 * to keep. Not when the aws-chunked trailer brings one.
 */
static bc_s3err_t
setup_checksum(bc_http_req_t *r, fctx_t *c)
{
	bc_checksum_alg_t alg = BC_CKSUM_NONE;
	bc_s3op_t op = r->s3.op;
	bc_s3err_t e;

	if (op != BC_S3OP_PutObject && op != BC_S3OP_UploadPart &&
	    op != BC_S3OP_DeleteObjects)
		return BC_S3E_NONE;
	e = bc_checksum_from_headers(&r->s3.headers, &alg, &c->ck_want);
	if (e != BC_S3E_NONE)
		return e;
	if (alg == BC_CKSUM_NONE && op == BC_S3OP_PutObject &&
	    c->trailer_alg == BC_CKSUM_NONE)
		alg = BC_CKSUM_CRC64NVME;
	if (alg != BC_CKSUM_NONE && bc_checksum_init(&c->ck, alg) < 0)
		return BC_S3E_InternalError;
	return BC_S3E_NONE;
}

/* Sets up how body() reads the upload. */
static bc_s3err_t
setup_body(bc_http_req_t *r, fctx_t *c)
{
	const char *sha = bc_kv_get(&r->s3.headers, "x-amz-content-sha256");
	const char *dlen = bc_kv_get(&r->s3.headers,
	    "x-amz-decoded-content-length");
	const char *cmd5 = bc_kv_get(&r->s3.headers, "Content-MD5");
	bc_s3op_t op = r->s3.op;
	bc_s3err_t e;

	c->expect = UINT64_MAX;
	if (r->auth.streaming) {
		/* signed chunks, or the unsigned trailer mode: decoded and
		 * verified (chunk and trailer signatures, checksum trailer,
		 * the declared length, required) */
		e = bc_awschunked_from_headers(&r->s3.headers,
		    r->auth.stream_mode, &r->auth.v4, false, NULL,
		    MAX_AWS_CHUNK, &c->verify);
		if (e != BC_S3E_NONE)
			return e;
		if (bc_awschunked_parse_decoded_len(dlen, &c->expect) !=
		    BC_S3E_NONE)
			return BC_S3E_InternalError;   /* parsed just above */
		if (r->auth.stream_mode != BC_AWSCHUNKED_SIGNED &&
		    bc_kv_get(&r->s3.headers, "x-amz-trailer") != NULL)
			c->trailer_alg = bc_checksum_from_header(bc_kv_get(
			    &r->s3.headers, "x-amz-trailer"));
	} else if (r->auth.kind == BC_S3AUTH_NONE && sha != NULL &&
	    strncmp(sha, "STREAMING-", 10) == 0) {
		c->chunked = true;   /* anonymous: framing only */
	}
	if (c->chunked) {
		if (dlen != NULL && !bc_u64_parse_str(dlen, &c->expect))
			return BC_S3E_InvalidArgument;
	} else if (c->verify == NULL) {
		c->expect = r->content_length;
	}
	if (r->auth.kind == BC_S3AUTH_V4 &&
	    strlen(r->auth.payload_hash) == 64) {
		c->sha = bc_sha256_new();
		if (c->sha == NULL)
			return BC_S3E_InternalError;
	}
	if (cmd5 != NULL) {
		size_t n = strlen(cmd5);

		if (n != 24 || cmd5[22] != '=' || cmd5[23] != '=' ||
		    strspn(cmd5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
		    "rstuvwxyz0123456789+/") != 22)
			return BC_S3E_InvalidDigest;
	}
	switch (op) {
	case BC_S3OP_PutObject:
	case BC_S3OP_UploadPart:
		c->sink = SINK_FILE;
		c->limit = BC_FILE_MAX_OBJECT;
		c->too_large = BC_S3E_EntityTooLarge;
		break;
	case BC_S3OP_DeleteObjects:
		c->sink = SINK_XML;
		c->limit = DELETE_XML_MAX;
		c->too_large = BC_S3E_MalformedXML;
		break;
	case BC_S3OP_CompleteMultipartUpload:
		c->sink = SINK_XML;
		c->limit = COMPLETE_XML_MAX;
		c->too_large = BC_S3E_MalformedXML;
		break;
	default:
		c->sink = SINK_DISCARD;
		c->limit = DISCARD_MAX;
		c->too_large = BC_S3E_InvalidRequest;
		break;
	}
	if (c->expect != UINT64_MAX && c->expect > c->limit)
		return c->too_large;
	if (c->sink != SINK_DISCARD) {
		c->md5 = bc_md5_new();
		if (c->md5 == NULL)
			return BC_S3E_InternalError;
	}
	return setup_checksum(r, c);
}

static bc_s3err_t
file_start(bc_http_req_t *r)
{
	fctx_t *c = calloc(1, sizeof(*c));
	bc_s3op_t op = r->s3.op;
	bc_s3err_t e;

	if (c == NULL)
		return BC_S3E_InternalError;
	c->bfd = c->fd = c->tmpdirfd = c->updfd = -1;
	r->hdata = c;
	if (root_fd < 0)
		return BC_S3E_InternalError;
	switch (op) {
	case BC_S3OP_ListBuckets:
		break;
	case BC_S3OP_CreateBucket:
		if (!bc_file_bucket_ok(r->s3.bucket, true))
			return BC_S3E_InvalidBucketName;
		break;
	case BC_S3OP_DeleteBucket:
	case BC_S3OP_HeadBucket:
	case BC_S3OP_ListObjects:
	case BC_S3OP_ListObjectsV2:
	case BC_S3OP_DeleteObjects:
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
	case BC_S3OP_PutObject:
	case BC_S3OP_CopyObject:
	case BC_S3OP_DeleteObject:
	case BC_S3OP_CreateMultipartUpload:
	case BC_S3OP_UploadPart:
	case BC_S3OP_CompleteMultipartUpload:
	case BC_S3OP_AbortMultipartUpload:
		break;
	case BC_S3OP_BucketSubresource:
		if (is_location_query(r))
			break;
		return BC_S3E_NotImplemented;
	default:
		return BC_S3E_NotImplemented;
	}
	if (op != BC_S3OP_ListBuckets && op != BC_S3OP_CreateBucket) {
		if (!bc_file_bucket_ok(r->s3.bucket, false))
			return BC_S3E_InvalidBucketName;
		c->bfd = open_bucket(r->s3.bucket);
		if (c->bfd < 0)
			return errno_s3(c->bfd, BC_S3E_NoSuchBucket);
	}
	if (is_object_op(op)) {
		size_t kl = strlen(r->s3.key);

		e = bc_file_key_check(r->s3.key);
		if (e == BC_S3E_InvalidArgument && kl > 0 &&
		    r->s3.key[kl - 1] == '/') {
			/* "dir/" is never an object here */
			if (op == BC_S3OP_GetObject || op == BC_S3OP_HeadObject)
				return BC_S3E_NoSuchKey;
			if (op == BC_S3OP_DeleteObject) {
				c->noop = true;
				e = BC_S3E_NONE;
			}
		}
		if (e != BC_S3E_NONE)
			return e;
	}
	e = setup_body(r, c);
	if (e != BC_S3E_NONE)
		return e;
	if (op == BC_S3OP_PutObject || op == BC_S3OP_CopyObject ||
	    op == BC_S3OP_CreateMultipartUpload) {
		e = collect_headers(r, &c->hdrs);
		if (e != BC_S3E_NONE)
			return e;
	}
	if (op == BC_S3OP_PutObject)
		return tmp_open_bucket(c, "put");
	if (op == BC_S3OP_UploadPart) {
		const char *pn = bc_kv_get_exact(&r->s3.query, "partNumber");
		uint64_t v;
		int dfd;

		if (pn == NULL || !bc_u64_parse_str(pn, &v) || v < 1 ||
		    v > BC_S3_MAX_PARTS)
			return BC_S3E_InvalidArgument;
		c->part = (unsigned)v;
		c->updfd = open_upload(r, c, NULL, &e);
		if (c->updfd < 0)
			return e;
		dfd = fcntl(c->updfd, F_DUPFD_CLOEXEC, 0);
		if (dfd < 0)
			return BC_S3E_InternalError;
		return tmp_open(c, dfd, "part");
	}
	return BC_S3E_NONE;
}

static bc_s3err_t
file_body(bc_http_req_t *r, const char *data, size_t *len)
{
	fctx_t *c = r->hdata;
	size_t n = *len;

	*len = 0;
	if (c == NULL)
		return BC_S3E_InternalError;
	if (c->sha != NULL)
		bc_sha256_update(c->sha, data, n);
	if (c->verify != NULL) {
		while (n > 0) {
			bc_s3err_t e = BC_S3E_NONE;
			ssize_t took = bc_awschunked_feed(c->verify, data, n,
			    &e);
			const char *p;
			size_t k;
			bool moved = took > 0;

			if (took < 0)
				return e != BC_S3E_NONE ? e :
				    BC_S3E_IncompleteBody;
			data += took;
			n -= (size_t)took;
			while ((k = bc_awschunked_output(c->verify, &p)) > 0) {
				e = sink_data(c, p, k);
				if (e != BC_S3E_NONE)
					return e;
				bc_awschunked_consume(c->verify, k);
				moved = true;
			}
			if (!moved)
				return BC_S3E_InternalError;
		}
		return BC_S3E_NONE;
	}
	if (c->chunked)
		return dechunk_feed(c, data, n);
	return sink_data(c, data, n);
}

static bc_s3err_t
file_finish(bc_http_req_t *r)
{
	fctx_t *c = r->hdata;
	uint8_t md5[BC_MD5_LEN];
	bc_s3err_t e;

	if (c == NULL)
		return BC_S3E_InternalError;
	switch (r->s3.op) {
	case BC_S3OP_ListBuckets:
		return op_list_buckets(r);
	case BC_S3OP_CreateBucket:
		return op_create_bucket(r);
	case BC_S3OP_DeleteBucket:
		return op_delete_bucket(r, c);
	case BC_S3OP_HeadBucket:
		return op_head_bucket(r);
	case BC_S3OP_BucketSubresource:
		return op_bucket_location(r);
	case BC_S3OP_ListObjects:
		return op_list_objects(r, c, false);
	case BC_S3OP_ListObjectsV2:
		return op_list_objects(r, c, true);
	case BC_S3OP_GetObject:
	case BC_S3OP_HeadObject:
		return op_get_object(r, c);
	case BC_S3OP_PutObject:
		return op_put_object(r, c);
	case BC_S3OP_CopyObject:
		return op_copy_object(r, c);
	case BC_S3OP_DeleteObject:
		if (c->noop)
			return respond_empty(r, 204, NULL, NULL);
		return op_delete_object(r, c);
	case BC_S3OP_DeleteObjects:
		e = check_body(r, c, md5);
		if (e != BC_S3E_NONE)
			return e;
		return op_delete_objects(r, c);
	case BC_S3OP_CreateMultipartUpload:
		return op_create_mpu(r, c);
	case BC_S3OP_UploadPart:
		return op_upload_part(r, c);
	case BC_S3OP_CompleteMultipartUpload:
		return op_complete_mpu(r, c);
	case BC_S3OP_AbortMultipartUpload:
		return op_abort_mpu(r, c);
	default:
		return BC_S3E_NotImplemented;
	}
}

static void
file_done(bc_http_req_t *r, bool ok)
{
	fctx_t *c = r->hdata;

	if (c == NULL)
		return;
	if (c->tmp_live && c->tmpdirfd >= 0)
		unlinkat(c->tmpdirfd, c->tmpname, 0);
	close_fd(&c->fd);
	close_fd(&c->tmpdirfd);
	close_fd(&c->updfd);
	close_fd(&c->bfd);
	if (c->md5 != NULL)
		bc_md5_free(c->md5);
	if (c->sha != NULL)
		bc_sha256_free(c->sha);
	bc_checksum_fini(&c->ck);
	bc_awschunked_free(c->verify);
	bc_buf_fini(&c->xml);
	bc_kv_fini(&c->hdrs);
	free(c);
	r->hdata = NULL;
}

const bc_handler_t bc_handler_file = {
	.name = "file",
	.start = file_start,
	.body = file_body,
	.finish = file_finish,
	.done = file_done,
};

/* ---- set-up ------------------------------------------------------------ */

int
bc_upstream_file_init(const char *root, char *err, size_t errlen)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "--upstream: cannot open directory "
		    "'%s': %s", root, strerror(errno));
		return -1;
	}
	close_fd(&root_fd);
	root_fd = fd;
	return 0;
}

void
bc_upstream_file_fini(void)
{
	close_fd(&root_fd);
}

/* TEMPORARY (until branch h-file merges): no file origin yet. */
int
bc_file_origin_new(const char *root, bc_loop_t *loop, bc_origin_t **out,
    char *err, size_t errlen)
{
	(void)root;
	(void)loop;
	*out = NULL;
	snprintf(err, errlen, "file origin: not merged yet");
	return -1;
}
