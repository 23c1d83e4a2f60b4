/*
 * upstream_file_store.c — the file origin's store: key and bucket names,
 * safe path walking, object metadata (the xattr), temp files and their
 * commit, and the bucket and object operations (see upstream_file.h for
 * the layout, metadata and security rules, upstream_file_int.h for how
 * an operation answers).
 *
 * Threads: every function runs on its caller's thread and shares nothing
 * with other requests but the file system; uploads are renamed into
 * place whole, so a reader sees the old or the new object.
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

#include "s3/s3_checksum.h"
#include "s3/s3_cond.h"
#include "s3/s3_date.h"
#include "s3/s3_range.h"
#include "s3/s3_request.h"
#include "s3/s3_sigv4.h"
#include "s3/s3_xml.h"
#include "stats/stats.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_file_int.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define META_XATTR       "user.bucketcache.meta"
#define USER_META_MAX    2048            /* x-amz-meta-* names + values */
#define HEADER_VALUE_MAX 2048            /* one stored header value */

/* ---- small helpers ----------------------------------------------------- */

bool
bc_file_is_hidden(const char *name)
{
	return strncmp(name, BC_FILE_HIDDEN_PREFIX,
	    sizeof(BC_FILE_HIDDEN_PREFIX) - 1) == 0;
}

bool
bc_file_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

void
bc_file_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int
bc_file_rand_hex(char *out, size_t nbytes)
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

int
bc_file_write_all(int fd, const char *p, size_t n)
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
bc_s3err_t
bc_file_errno_s3(int e, bc_s3err_t absent)
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
		if (n >= sizeof(BC_FILE_HIDDEN_PREFIX) - 1 &&
		    bc_file_is_hidden(seg))
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
	if (bc_file_starts_with(name, "xn--") ||
	    bc_file_starts_with(name, "sthree-") ||
	    bc_file_starts_with(name, "amzn-s3-demo-") ||
	    ends_with(name, "-s3alias") ||
	    ends_with(name, "--ol-s3") || ends_with(name, ".mrap") ||
	    ends_with(name, "--x-s3"))
		return false;
	return true;
}

/* ---- safe path walking ------------------------------------------------- */

int
bc_file_open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* A new open file description of directory fd (not dup(): readdir
 * positions must not be shared between walks or threads). */
int
bc_file_reopen_dir(int fd)
{
	return openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Opens the directory path[0..len) ("a/b", segments already checked)
 * below bfd, one O_NOFOLLOW component at a time; with create, makes the
 * missing ones. Returns a new fd or -errno.
 */
int
bc_file_walk_dirs(int bfd, const char *path, size_t len, bool create)
{
	char seg[NAME_MAX + 1];
	size_t i = 0;
	int fd = bc_file_reopen_dir(bfd);

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
		next = bc_file_open_dir_at(fd, seg);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, seg, 0755) < 0 && errno != EEXIST) {
				int e = errno;

				close(fd);
				return -e;
			}
			next = bc_file_open_dir_at(fd, seg);
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
int
bc_file_open_parent(int bfd, const char *key, bool create, const char **leaf)
{
	const char *slash = strrchr(key, '/');

	*leaf = slash != NULL ? slash + 1 : key;
	return bc_file_walk_dirs(bfd, key, slash != NULL ?
	    (size_t)(slash - key) : 0,	    create);
}

/* Opens the regular file name in dfd, never through a symlink, never a
 * device or FIFO. Returns fd or -errno (-ENOENT: not an object). */
int
bc_file_open_reg_at(int dfd, const char *name, struct stat *st)
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
int
bc_file_open_object(int bfd, const char *key, struct stat *st)
{
	const char *leaf;
	int pfd = bc_file_open_parent(bfd, key, false, &leaf);
	int fd;

	if (pfd < 0)
		return pfd;
	fd = bc_file_open_reg_at(pfd, leaf, st);
	close(pfd);
	return fd;
}

int
bc_file_open_bucket(int root_fd, const char *bucket)
{
	int fd;

	if (root_fd < 0)
		return -EBADF;
	fd = bc_file_open_dir_at(root_fd, bucket);
	return fd < 0 ? -errno : fd;
}

/* Opens (making it) the hidden directory name of the bucket. */
int
bc_file_open_hidden_dir(int bfd, const char *name)
{
	int fd = bc_file_open_dir_at(bfd, name);

	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(bfd, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = bc_file_open_dir_at(bfd, name);
	}
	return fd < 0 ? -errno : fd;
}

/* Removes dfd/name and everything below it (depth-limited; our own hidden
 * trees only). Returns 0 or -errno. */
int
bc_file_rm_tree(int dfd, const char *name, int depth)
{
	int fd, rv = 0;
	DIR *d;
	struct dirent *de;

	if (depth > 8)
		return -ELOOP;
	fd = bc_file_open_dir_at(dfd, name);
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
			r2 = bc_file_rm_tree(dirfd(d), de->d_name, depth + 1);
		if (r2 < 0 && r2 != -ENOENT)
			rv = r2;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rv = -errno;
	return rv;
}

/* ---- metadata ---------------------------------------------------------- */

static const char *const stored_headers[] = {
	"content-type", "content-encoding", "content-disposition",
	"content-language", "cache-control", "expires", NULL
};

static bool
is_stored_header(const char *lname)
{
	if (bc_file_starts_with(lname, "x-amz-meta-"))
		return lname[11] != '\0';
	if (bc_checksum_from_header(lname) != BC_CKSUM_NONE)
		return true;   /* kept once verified (bc_file_op_put_object) */
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
int
bc_file_parse_hdr_lines(const char *p, size_t n, bc_kvlist_t *hdrs)
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
meta_decode(const char *blob, size_t n, const struct stat *st,
    bc_file_meta_t *m)
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
		if (!bc_file_starts_with(head, want))
			return false;
		et = head + strlen(want);
		nl = strchr(et, '\n');
		if (nl == NULL || !etag_chars_ok(et, (size_t)(nl - et)))
			return false;
		memcpy(m->etag, et, (size_t)(nl - et));
		m->etag[nl - et] = '\0';
	}
	if (bc_file_parse_hdr_lines(e, (size_t)(end - e), &m->hdrs) < 0) {
		bc_kv_fini(&m->hdrs);
		return false;
	}
	m->stored = true;
	return true;
}

/* Reads fd's metadata (synthetic when absent or stale). */
void
bc_file_meta_read(int fd, const struct stat *st, bc_file_meta_t *m)
{
	char *blob = malloc(BC_FILE_META_MAX);
	ssize_t n = blob != NULL ? fgetxattr(fd, META_XATTR, blob,
	    BC_FILE_META_MAX) :	    -1;

	memset(m, 0, sizeof(*m));
	if (n <= 0 || !meta_decode(blob, (size_t)n, st, m)) {
		memset(m, 0, sizeof(*m));
		synthetic_etag(st, m->etag);
	}
	free(blob);
}

void
bc_file_meta_fini(bc_file_meta_t *m)
{
	bc_kv_fini(&m->hdrs);
}

/* Writes the metadata xattr on fd (its stat now). Failure is logged and
 * otherwise ignored: the object then has a synthetic ETag. */
void
bc_file_meta_write(int fd, const char *etag, const bc_kvlist_t *hdrs)
{
	bc_buf_t b = BC_BUF_INIT;
	struct stat st;

	if (fstat(fd, &st) < 0 || meta_encode(&b, etag, &st, hdrs) < 0 ||
	    b.len > BC_FILE_META_MAX || fsetxattr(fd, META_XATTR, b.data, b.len,
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
bc_s3err_t
bc_file_collect_headers(const bc_file_req_t *r, bc_kvlist_t *out)
{
	size_t user = 0;

	for (size_t i = 0; i < r->s3->headers.n; i++) {
		const bc_kv_t *h = &r->s3->headers.v[i];
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
		if (bc_file_starts_with(name, "x-amz-meta-")) {
			user += strlen(name) - 11 + strlen(val);
			if (user > USER_META_MAX)
				return BC_S3E_InvalidArgument;
		}
		if (bc_kv_set(out, name, val) < 0)
			return BC_S3E_InternalError;
	}
	return BC_S3E_NONE;
}

/* ETag, Last-Modified, Content-Type, stored headers, with response-*
 * overrides from the query. */
static void
add_object_headers(bc_file_req_t *r, const bc_file_meta_t *m,
    const struct stat *st)
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

	bc_file_answer_etag(r, m->etag);
	bc_http_date(st->st_mtim.tv_sec, date);
	bc_file_answer_header(r, "Last-Modified", date);
	bc_file_answer_header(r, "Accept-Ranges", "bytes");
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		const char *v = bc_kv_get_exact(&r->s3->query, map[i].param);

		if (v == NULL)
			v = bc_kv_get(&m->hdrs, map[i].stored);
		if (v == NULL && i == 0)
			v = BC_FILE_DEFAULT_CTYPE;
		if (v != NULL)
			bc_file_answer_header(r, map[i].header, v);
	}
	for (size_t i = 0; i < m->hdrs.n; i++)
		if (bc_file_starts_with(m->hdrs.v[i].name, "x-amz-meta-"))
			bc_file_answer_header(r, m->hdrs.v[i].name,
			    m->hdrs.v[i].value);
}

/* With "x-amz-checksum-mode: ENABLED", the whole object's checksum kept
 * with its metadata (single-part objects; a multipart one has none), as
 * S3 sends it; a range gets none. */
static void
add_checksum_headers(bc_file_req_t *r, const bc_file_meta_t *m)
{
	const char *mode = bc_kv_get(&r->s3->headers, "x-amz-checksum-mode");

	if (mode == NULL || strcasecmp(mode, "ENABLED") != 0)
		return;
	for (size_t i = 0; i < m->hdrs.n; i++)
		if (bc_checksum_from_header(m->hdrs.v[i].name) !=
		    BC_CKSUM_NONE) {
			bc_file_answer_header(r, m->hdrs.v[i].name,
			    m->hdrs.v[i].value);
			bc_file_answer_header(r, "x-amz-checksum-type",
			    "FULL_OBJECT");
			return;
		}
}

void
bc_file_xml_elem(bc_buf_t *b, const char *name, const char *value, bool url)
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
bc_s3err_t
bc_file_tmp_open(bc_file_ctx_t *c, int dirfd, const char *tag)
{
	char rnd[17];
	int rv;

	c->tmpdirfd = dirfd;
	rv = bc_file_rand_hex(rnd, 8);
	if (rv < 0)
		return BC_S3E_InternalError;
	snprintf(c->tmpname, sizeof(c->tmpname), "%s.%s", tag, rnd);
	c->fd = openat(dirfd, c->tmpname, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0644);
	if (c->fd < 0) {
		BC_WARN("file backend: cannot create a temp file: %s",
		    strerror(errno));
		return bc_file_errno_s3(errno, BC_S3E_InternalError);
	}
	c->tmp_live = true;
	return BC_S3E_NONE;
}

/* A temp file in the bucket's upload area. */
bc_s3err_t
bc_file_tmp_open_bucket(bc_file_ctx_t *c, const char *tag)
{
	int dfd = bc_file_open_hidden_dir(c->bfd, BC_FILE_TMP_DIR);

	if (dfd < 0)
		return bc_file_errno_s3(dfd, BC_S3E_InternalError);
	return bc_file_tmp_open(c, dfd, tag);
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
bc_s3err_t
bc_file_commit(const bc_file_req_t *r, bc_file_ctx_t *c, const char *key,
    const char *etag, const bc_kvlist_t *hdrs, const char **msg)
{
	bc_cond_t cond = { NULL, NULL, NULL, NULL };
	bool create_only = false;
	const char *leaf;
	int pfd = -1, tries;
	bc_s3err_t e = BC_S3E_NONE;

	*msg = NULL;
	bc_file_meta_write(c->fd, etag, hdrs);
	cond.if_match = bc_kv_get(&r->s3->headers, "If-Match");
	cond.if_none_match = bc_kv_get(&r->s3->headers, "If-None-Match");
	if (cond.if_none_match != NULL && cond.if_match == NULL) {
		const char *s = cond.if_none_match;
		size_t n = strlen(s);

		bc_span_trim(&s, &n);
		create_only = n == 1 && s[0] == '*';
	}
	if (!create_only && (cond.if_match != NULL ||
	    cond.if_none_match != NULL)) {
		struct stat st;
		int fd = bc_file_open_object(c->bfd, key, &st);

		if (fd >= 0) {
			bc_file_meta_t m;

			bc_file_meta_read(fd, &st, &m);
			close(fd);
			e = bc_cond_eval(&cond, BC_COND_WRITE, m.etag,
			    st.st_mtim.tv_sec);
			bc_file_meta_fini(&m);
			if (e != BC_S3E_NONE)
				return e;
		} else if (cond.if_match != NULL) {
			return BC_S3E_NoSuchKey;
		}
	}
	for (tries = 0; tries < 3; tries++) {
		int rv;

		pfd = bc_file_open_parent(c->bfd, key, true, &leaf);
		if (pfd < 0) {
			if (pfd == -ENOTDIR || pfd == -EEXIST ||
			    pfd == -ELOOP) {
				*msg = conflict_msg;
				return BC_S3E_InvalidRequest;
			}
			return bc_file_errno_s3(pfd, BC_S3E_InternalError);
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
					bc_file_close(&pfd);
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
		bc_file_close(&pfd);
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
		return bc_file_errno_s3(rv, BC_S3E_InternalError);
	}
	bc_file_close(&pfd);
	if (tries == 3)
		return BC_S3E_InternalError;
	c->tmp_live = false;
	return BC_S3E_NONE;
}

bc_s3err_t
bc_file_op_create_bucket(bc_file_req_t *r)
{
	char loc[BC_S3_MAX_BUCKET + 2];

	if (mkdirat(r->root_fd, r->s3->bucket, 0755) < 0) {
		if (errno == EEXIST)
			return BC_S3E_BucketAlreadyOwnedByYou;
		BC_WARN("file backend: mkdir %s: %s", r->s3->bucket,
		    strerror(errno));
		return bc_file_errno_s3(errno, BC_S3E_InternalError);
	}
	snprintf(loc, sizeof(loc), "/%s", r->s3->bucket);
	return bc_file_answer_empty(r, 200, "Location", loc);
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
	dup_fd = bc_file_reopen_dir(fd);
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
		    (depth == 0 && bc_file_is_hidden(de->d_name)))
			continue;
		sub = bc_file_open_dir_at(dirfd(d), de->d_name);
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
	dup_fd = bc_file_reopen_dir(fd);
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
		if (depth == 0 && bc_file_is_hidden(de->d_name)) {
			rv = bc_file_rm_tree(dirfd(d), de->d_name, 1);
			continue;
		}
		sub = bc_file_open_dir_at(dirfd(d), de->d_name);
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

bc_s3err_t
bc_file_op_delete_bucket(bc_file_req_t *r, bc_file_ctx_t *c)
{
	int rv;

	if (!tree_is_empty(c->bfd, 0))
		return BC_S3E_BucketNotEmpty;
	rv = rm_empty_dirs(c->bfd, 0);
	if (rv == 0 && unlinkat(r->root_fd, r->s3->bucket, AT_REMOVEDIR) < 0)
		rv = -errno;
	if (rv == -ENOTEMPTY || rv == -EEXIST)
		return BC_S3E_BucketNotEmpty;
	if (rv < 0)
		return bc_file_errno_s3(rv, BC_S3E_NoSuchBucket);
	return bc_file_answer_empty(r, 204, NULL, NULL);
}

bc_s3err_t
bc_file_op_head_bucket(bc_file_req_t *r)
{
	const char *region = r->region;

	return bc_file_answer_empty(r, 200, "x-amz-bucket-region", region);
}

bc_s3err_t
bc_file_op_bucket_location(bc_file_req_t *r)
{
	const char *region = r->region;
	bc_buf_t b = BC_BUF_INIT;

	bc_buf_puts(&b, BC_FILE_XML_PROLOG "<LocationConstraint xmlns=\""
	    BC_FILE_S3_XMLNS "\">");
	if (strcmp(region, "us-east-1") != 0)
		bc_buf_put_xml(&b, region);
	if (bc_buf_puts(&b, "</LocationConstraint>") < 0) {
		bc_buf_fini(&b);
		return BC_S3E_InternalError;
	}
	return bc_file_answer_xml(r, &b);
}

/* ---- object operations ------------------------------------------------- */

bc_s3err_t
bc_file_op_get_object(bc_file_req_t *r, bc_file_ctx_t *c)
{
	struct stat st;
	bc_file_meta_t m;
	bc_cond_t cond;
	bc_range_t rg = { 0, 0 };
	bc_range_result_t rr;
	const char *pn = bc_kv_get_exact(&r->s3->query, "partNumber");
	char cr[BC_RANGE_CR_LEN];
	uint64_t size, off = 0, len;
	int status = 200;
	bc_s3err_t e;
	int fd;

	fd = bc_file_open_object(c->bfd, r->s3->key, &st);
	if (fd < 0)
		return bc_file_errno_s3(fd, BC_S3E_NoSuchKey);
	BC_STATS_INC(upstream_file_reads);
	bc_file_meta_read(fd, &st, &m);
	size = (uint64_t)st.st_size;
	bc_cond_from_headers(&cond, &r->s3->headers);
	e = bc_cond_eval(&cond, BC_COND_READ, m.etag, st.st_mtim.tv_sec);
	if (e == BC_S3E_NotModified) {
		char date[BC_HTTP_DATE_LEN];

		close(fd);
		e = bc_file_answer_empty(r, 304, NULL, NULL);
		bc_file_answer_etag(r, m.etag);
		bc_http_date(st.st_mtim.tv_sec, date);
		bc_file_answer_header(r, "Last-Modified", date);
		bc_file_meta_fini(&m);
		return e;
	}
	if (e != BC_S3E_NONE) {
		close(fd);
		bc_file_meta_fini(&m);
		return e;
	}
	if (pn != NULL && strcmp(pn, "1") != 0) {
		close(fd);
		bc_file_meta_fini(&m);
		return bc_file_fail(r, BC_S3E_InvalidRange,
		    "The requested partnumber is not satisfiable");
	}
	rr = bc_range_parse(bc_kv_get(&r->s3->headers, "Range"), size, &rg);
	if (rr == BC_RANGE_UNSATISFIABLE) {
		close(fd);
		bc_file_meta_fini(&m);
		bc_range_content_range(cr, sizeof(cr), NULL, size);
		return bc_file_fail_hdr(r, BC_S3E_InvalidRange,
		    "Content-Range", cr);
	}
	len = size;
	if (rr == BC_RANGE_OK) {
		off = rg.first;
		len = bc_range_length(&rg);
		status = 206;
	}
	e = bc_file_answer_empty(r, status, NULL, NULL);
	if (e == BC_S3E_NONE && len > 0) {
		r->ans.fd = fd;
		r->ans.off = off;
		r->ans.len = len;
	} else {
		close(fd);
	}
	add_object_headers(r, &m, &st);
	if (rr == BC_RANGE_OK) {
		bc_range_content_range(cr, sizeof(cr), &rg, size);
		bc_file_answer_header(r, "Content-Range", cr);
	} else {
		add_checksum_headers(r, &m);
	}
	bc_file_meta_fini(&m);
	return e;
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
		pfd = bc_file_walk_dirs(bfd, key, start > key ?
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
	pfd = bc_file_open_parent(bfd, key, false, &leaf);
	if (pfd < 0)
		return bc_file_errno_s3(pfd, BC_S3E_NONE);
	if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode)) {
		close(pfd);
		return BC_S3E_NONE;
	}
	if (unlinkat(pfd, leaf, 0) < 0 && errno != ENOENT) {
		int err = errno;

		close(pfd);
		return bc_file_errno_s3(err, BC_S3E_NONE);
	}
	close(pfd);
	prune_dirs(bfd, key);
	return BC_S3E_NONE;
}

bc_s3err_t
bc_file_op_delete_object(bc_file_req_t *r, bc_file_ctx_t *c)
{
	bc_s3err_t e = delete_key(c->bfd, r->s3->key);

	if (e != BC_S3E_NONE)
		return e;
	return bc_file_answer_empty(r, 204, NULL, NULL);
}

bc_s3err_t
bc_file_op_delete_objects(bc_file_req_t *r, bc_file_ctx_t *c)
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
	bc_buf_puts(&b, BC_FILE_XML_PROLOG "<DeleteResult xmlns=\""
	    BC_FILE_S3_XMLNS "\">");
	for (size_t i = 0; i < n; i++) {
		/* a key limited to prefixes deletes only under them */
		bc_s3err_t ke = r->client_key != NULL &&
		    !bc_config_key_allows(r->client_key, r->s3->bucket,
		    keys[i]) ? BC_S3E_AccessDenied :
		    delete_key(c->bfd, keys[i]);

		if (ke == BC_S3E_NONE && !quiet) {
			bc_buf_puts(&b, "<Deleted>");
			bc_file_xml_elem(&b, "Key", keys[i], false);
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
	return bc_file_answer_xml(r, &b);
}

bc_s3err_t
bc_file_answer_upload(bc_file_req_t *r, const bc_file_ctx_t *c,
    const char *etag)
{
	bc_s3err_t e = bc_file_answer_empty(r, 200, NULL, NULL);

	bc_file_answer_etag(r, etag);
	if (c->ck_alg != BC_CKSUM_NONE) {
		bc_file_answer_header(r, bc_checksum_header(c->ck_alg),
		    c->ck_value);
		bc_file_answer_header(r, "x-amz-checksum-type",
		    "FULL_OBJECT");
	}
	return e;
}

bc_s3err_t
bc_file_op_put_object(bc_file_req_t *r, bc_file_ctx_t *c)
{
	char etag[BC_FILE_ETAG_LEN];
	const char *msg;
	bc_s3err_t e;

	bc_hex(c->body_md5, sizeof(c->body_md5), etag);
	/* the checksum is kept with the metadata (GET's checksum mode) */
	if (c->ck_alg != BC_CKSUM_NONE && bc_kv_set(&c->hdrs,
	    bc_checksum_header(c->ck_alg), c->ck_value) < 0)
		return BC_S3E_InternalError;
	e = bc_file_commit(r, c, r->s3->key, etag, &c->hdrs, &msg);
	if (e != BC_S3E_NONE)
		return msg != NULL ? bc_file_fail(r, e, msg) : e;
	return bc_file_answer_upload(r, c, etag);
}

int
bc_file_copy_hashed(int src, int dst, uint64_t len, bc_md5ctx_t *h)
{
	char *buf = malloc(BC_FILE_COPY_BLOCK);
	int rv = 0;

	if (buf == NULL)
		return -ENOMEM;
	while (len > 0) {
		size_t want = len < BC_FILE_COPY_BLOCK ? (size_t)len :
		    BC_FILE_COPY_BLOCK;
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
		rv = bc_file_write_all(dst, buf, (size_t)n);
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

bc_s3err_t
bc_file_op_copy_object(bc_file_req_t *r, bc_file_ctx_t *c)
{
	const char *src = bc_kv_get(&r->s3->headers, "x-amz-copy-source");
	const char *dir = bc_kv_get(&r->s3->headers,
	    "x-amz-metadata-directive");
	char *dec = NULL, *skey;
	const char *q, *msg;
	int sbfd = -1, sfd = -1;
	bool replace = false;
	struct stat st;
	bc_file_meta_t m;
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
			return bc_file_fail(r, BC_S3E_InvalidArgument,
			    "Unknown metadata directive.");
	}
	if (src[0] == '/')
		src++;
	q = strchr(src, '?');
	dec = bc_s3_pct_decode(src, q != NULL ? (size_t)(q - src) :
	    strlen(src));
	if (dec == NULL)
		return bc_file_fail(r, BC_S3E_InvalidArgument,
		    "Invalid copy source encoding.");
	skey = strchr(dec, '/');
	if (skey != NULL)
		*skey = '\0';
	if (skey == NULL || !bc_file_bucket_ok(dec, false) ||
	    bc_file_key_check(skey + 1) != BC_S3E_NONE) {
		free(dec);
		return bc_file_fail(r, BC_S3E_InvalidArgument,
		    "Copy Source must mention the source bucket and key: "
		    "sourcebucket/sourcekey.");
	}
	skey++;
	if (!replace && strcmp(dec, r->s3->bucket) == 0 &&
	    strcmp(skey, r->s3->key) == 0) {
		free(dec);
		return bc_file_fail(r, BC_S3E_InvalidRequest, copy_self_msg);
	}
	sbfd = bc_file_open_bucket(r->root_fd, dec);
	if (sbfd < 0) {
		e = bc_file_errno_s3(sbfd, BC_S3E_NoSuchBucket);
		goto out;
	}
	sfd = bc_file_open_object(sbfd, skey, &st);
	if (sfd < 0) {
		e = bc_file_errno_s3(sfd, BC_S3E_NoSuchKey);
		goto out;
	}
	bc_file_meta_read(sfd, &st, &m);
	have_meta = true;
	bc_cond_from_copy_headers(&cond, &r->s3->headers);
	e = bc_cond_eval(&cond, BC_COND_COPY, m.etag, st.st_mtim.tv_sec);
	if (e != BC_S3E_NONE)
		goto out;
	if ((uint64_t)st.st_size > BC_FILE_MAX_OBJECT) {
		e = bc_file_fail(r, BC_S3E_InvalidRequest,
		    "The specified copy source is larger than the maximum "
		    "allowable size for a copy source: 5368709120");
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
	e = bc_file_tmp_open_bucket(c, "copy");
	if (e != BC_S3E_NONE)
		goto out;
	h = bc_md5_new();
	if (h == NULL) {
		e = BC_S3E_InternalError;
		goto out;
	}
	rv = bc_file_copy_hashed(sfd, c->fd, (uint64_t)st.st_size, h);
	bc_md5_final(h, md5);
	bc_md5_free(h);
	if (rv < 0) {
		BC_WARN("file backend: copy: %s", strerror(-rv));
		e = bc_file_errno_s3(rv, BC_S3E_InternalError);
		goto out;
	}
	bc_hex(md5, sizeof(md5), etag);
	e = bc_file_commit(r, c, r->s3->key, etag, &c->hdrs, &msg);
	if (e != BC_S3E_NONE) {
		if (msg != NULL)
			e = bc_file_fail(r, e, msg);
		goto out;
	}
	{
		struct stat nst;

		bc_iso8601_date(fstat(c->fd, &nst) == 0 ? nst.st_mtim.tv_sec :
		    time(NULL), iso);
	}
	bc_buf_puts(&b, BC_FILE_XML_PROLOG "<CopyObjectResult xmlns=\""
	    BC_FILE_S3_XMLNS "\">");
	bc_file_xml_elem(&b, "LastModified", iso, false);
	bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", etag);
	if (bc_buf_puts(&b, "</CopyObjectResult>") < 0)
		e = BC_S3E_InternalError;
	else
		e = bc_file_answer_xml(r, &b);
out:
	if (have_meta)
		bc_file_meta_fini(&m);
	bc_buf_fini(&b);
	bc_file_close(&sfd);
	bc_file_close(&sbfd);
	free(dec);
	return e;
}

