/*
 * upstream_file_list.c — listings of the file origin: a bucket's keys in
 * S3's order and pages (bc_file_list, ListObjects v1 and v2, their
 * continuation tokens) and the root's buckets (ListBuckets).
 *
 * Threads: runs on its caller's thread; a walk holds at most two
 * directory descriptors of its own.
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
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_date.h"
#include "s3/s3_request.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_file_int.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

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
	int fd = bc_file_walk_dirs(w->bfd, path, plen > 0 ? plen - 1 : 0,
	    false);
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
		if (bc_file_is_hidden(de->d_name) ||
		    plen + nl + 1 > BC_S3_MAX_KEY)
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
	bc_file_meta_t m;
	int fd = bc_file_open_reg_at(dfd, name, &st);

	if (fd < 0)
		return false;
	bc_file_meta_read(fd, &st, &m);
	it->size = (uint64_t)st.st_size;
	it->mtime = st.st_mtim.tv_sec;
	snprintf(it->etag, sizeof(it->etag), "%s", m.etag);
	bc_file_meta_fini(&m);
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
				bc_file_close(&dfd);
				walk_dir(w, full, fl, depth + 1);
			} else {
				if (dfd < 0)
					dfd = bc_file_walk_dirs(w->bfd, path,
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
	bc_file_close(&dfd);
	free(bound);
	free(h.v);
	free(full);
}

/* true when a regular, listable file lies below dir ("d/", dlen bytes). */
static bool
subtree_has_object(int bfd, const char *dir, size_t dlen, int depth)
{
	int fd = bc_file_walk_dirs(bfd, dir, dlen - 1, false);
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
		if (bc_file_is_hidden(de->d_name) || dlen + nl > BC_S3_MAX_KEY)
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

bc_s3err_t
bc_file_op_list_buckets(bc_file_req_t *r)
{
	bc_buf_t b = BC_BUF_INIT;
	bent_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	bc_s3err_t e = BC_S3E_InternalError;
	int fd = bc_file_reopen_dir(r->root_fd);
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
	bc_buf_puts(&b, BC_FILE_XML_PROLOG "<ListAllMyBucketsResult xmlns=\""
	    BC_FILE_S3_XMLNS "\"><Owner><ID>bucketcache</ID>"
	    "<DisplayName>bucketcache"
	    "</DisplayName></Owner><Buckets>");
	for (size_t i = 0; i < n; i++) {
		char iso[25];

		bc_iso8601_date(v[i].ctime, iso);
		bc_buf_puts(&b, "<Bucket>");
		bc_file_xml_elem(&b, "Name", v[i].name, false);
		bc_file_xml_elem(&b, "CreationDate", iso, false);
		bc_buf_puts(&b, "</Bucket>");
	}
	if (bc_buf_puts(&b, "</Buckets></ListAllMyBucketsResult>") == 0)
		e = bc_file_answer_xml(r, &b);
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	bc_buf_fini(&b);
	return e;
}

bc_s3err_t
bc_file_op_list_objects(bc_file_req_t *r, bc_file_ctx_t *c, bool v2)
{
	const bc_kvlist_t *q = &r->s3->query;
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
			return bc_file_fail(r, BC_S3E_InvalidArgument,
			    "Invalid Encoding Method specified in Request");
		url = true;
	}
	if (mk != NULL && !bc_u64_parse_str(mk, &max))
		return bc_file_fail(r, BC_S3E_InvalidArgument,
		    "Provided max-keys not an integer or within integer range");
	if (prefix != NULL && strlen(prefix) > BC_S3_MAX_KEY)
		return BC_S3E_KeyTooLongError;
	if (token != NULL) {
		after = bc_file_token_decode(token);
		if (after == NULL)
			return bc_file_fail(r, BC_S3E_InvalidArgument,
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
		BC_WARN("file backend: list %s: %s", r->s3->bucket,
		    bc_strerror(rv));
		return bc_file_errno_s3(rv, BC_S3E_InternalError);
	}
	bc_buf_puts(&b, BC_FILE_XML_PROLOG "<ListBucketResult xmlns=\""
	    BC_FILE_S3_XMLNS "\">");
	bc_file_xml_elem(&b, "Name", r->s3->bucket, false);
	bc_file_xml_elem(&b, "Prefix", prefix != NULL ? prefix : "", url);
	if (!v2)
		bc_file_xml_elem(&b, "Marker", start != NULL ? start : "", url);
	if (v2)
		bc_buf_printf(&b, "<KeyCount>%zu</KeyCount>", l.n);
	bc_buf_printf(&b, "<MaxKeys>%" PRIu64 "</MaxKeys>", max);
	if (delim != NULL && delim[0] != '\0')
		bc_file_xml_elem(&b, "Delimiter", delim, url);
	bc_buf_printf(&b, "<IsTruncated>%s</IsTruncated>",
	    l.truncated ? "true" : "false");
	if (v2 && token != NULL)
		bc_file_xml_elem(&b, "ContinuationToken", token, false);
	if (v2 && l.truncated && l.n > 0) {
		char *tok = malloc(2 * strlen(l.v[l.n - 1].name) + 1);

		if (tok != NULL) {
			bc_file_token_encode(l.v[l.n - 1].name, tok);
			bc_file_xml_elem(&b, "NextContinuationToken", tok,
			    false);
			free(tok);
		}
	}
	if (v2 && start != NULL)
		bc_file_xml_elem(&b, "StartAfter", start, url);
	if (!v2 && l.truncated && l.n > 0 && delim != NULL &&
	    delim[0] != '\0')
		bc_file_xml_elem(&b, "NextMarker", l.v[l.n - 1].name, url);
	if (url)
		bc_buf_puts(&b, "<EncodingType>url</EncodingType>");
	for (size_t i = 0; i < l.n; i++) {
		char iso[25];

		if (l.v[i].is_prefix)
			continue;
		bc_iso8601_date(l.v[i].mtime, iso);
		bc_buf_puts(&b, "<Contents>");
		bc_file_xml_elem(&b, "Key", l.v[i].name, url);
		bc_file_xml_elem(&b, "LastModified", iso, false);
		bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", l.v[i].etag);
		bc_buf_printf(&b, "<Size>%" PRIu64 "</Size>", l.v[i].size);
		bc_buf_puts(&b, "<StorageClass>STANDARD</StorageClass>"
		    "</Contents>");
	}
	for (size_t i = 0; i < l.n; i++) {
		if (!l.v[i].is_prefix)
			continue;
		bc_buf_puts(&b, "<CommonPrefixes>");
		bc_file_xml_elem(&b, "Prefix", l.v[i].name, url);
		bc_buf_puts(&b, "</CommonPrefixes>");
	}
	rv = bc_buf_puts(&b, "</ListBucketResult>");
	free(after);
	bc_file_list_fini(&l);
	if (rv < 0) {
		bc_buf_fini(&b);
		return BC_S3E_InternalError;
	}
	e = bc_file_answer_xml(r, &b);
	return e;
}

