/*
 * upstream_file_mpu.c — multipart uploads of the file origin. An upload
 * is a hidden directory ".bucketcache-mpu/ID" of its bucket holding an
 * "upload" file (the key, hex-encoded, and the headers the object will
 * keep) and one file per part, named by its number, with the part's MD5
 * in its metadata. Completing concatenates the listed parts into a temp
 * file, commits it over the key with the ETag md5(part MD5s)-N, and
 * removes the upload.
 *
 * Threads: runs on its caller's thread; parts are renamed into place
 * whole.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_xml.h"
#include "upstream/upstream_file.h"
#include "upstream/upstream_file_int.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_error.h"

#define UPLOAD_INFO      "upload"
#define UPLOAD_ID_LEN    32
#define MAX_COMPLETE     (5ULL << 40)    /* S3's largest object */

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
int
bc_file_open_upload(const bc_file_req_t *r, bc_file_ctx_t *c,
    bc_kvlist_t *hdrs, bc_s3err_t *e)
{
	const char *id = bc_kv_get_exact(&r->s3->query, "uploadId");
	char *buf = NULL, *hexkey = NULL;
	int mfd = -1, ufd = -1, ifd = -1;
	size_t klen = strlen(r->s3->key);
	ssize_t n;

	*e = BC_S3E_NoSuchUpload;
	if (id == NULL || !upload_id_ok(id))
		return -1;
	mfd = bc_file_open_dir_at(c->bfd, BC_FILE_MPU_DIR);
	if (mfd < 0)
		return -1;
	ufd = bc_file_open_dir_at(mfd, id);
	close(mfd);
	if (ufd < 0)
		return -1;
	ifd = openat(ufd, UPLOAD_INFO, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	buf = malloc(BC_FILE_META_MAX + 1);
	hexkey = malloc(2 * klen + 1);
	if (ifd < 0 || buf == NULL || hexkey == NULL)
		goto bad;
	n = read(ifd, buf, BC_FILE_META_MAX);
	if (n <= 0)
		goto bad;
	buf[n] = '\0';
	bc_hex((const uint8_t *)r->s3->key, klen, hexkey);
	{
		const char *p = buf;
		const char *hdr = "bucketcache-upload 1\nkey ";
		size_t hl = strlen(hdr);

		if (strncmp(p, hdr, hl) != 0 ||
		    strncmp(p + hl, hexkey, 2 * klen) != 0 ||
		    p[hl + 2 * klen] != '\n')
			goto bad;
		p += hl + 2 * klen + 1;
		if (hdrs != NULL && bc_file_parse_hdr_lines(p,
		    (size_t)(buf + n - p),		    hdrs) < 0) {
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

bc_s3err_t
bc_file_op_create_mpu(bc_file_req_t *r, bc_file_ctx_t *c)
{
	char id[UPLOAD_ID_LEN + 1];
	bc_buf_t info = BC_BUF_INIT, b = BC_BUF_INIT;
	char *hexkey = malloc(2 * strlen(r->s3->key) + 1);
	int mfd = -1, ufd = -1, ifd = -1, rv;
	bc_s3err_t e = BC_S3E_InternalError;

	if (hexkey == NULL)
		return BC_S3E_InternalError;
	mfd = bc_file_open_hidden_dir(c->bfd, BC_FILE_MPU_DIR);
	if (mfd < 0) {
		e = bc_file_errno_s3(mfd, BC_S3E_InternalError);
		goto out;
	}
	if (bc_file_rand_hex(id, UPLOAD_ID_LEN / 2) < 0 ||
	    mkdirat(mfd, id, 0700) < 0)
		goto out;
	ufd = bc_file_open_dir_at(mfd, id);
	if (ufd < 0)
		goto out;
	bc_hex((const uint8_t *)r->s3->key, strlen(r->s3->key), hexkey);
	rv = bc_buf_printf(&info, "bucketcache-upload 1\nkey %s\n", hexkey);
	for (size_t i = 0; i < c->hdrs.n && rv == 0; i++)
		rv = bc_buf_printf(&info, "h %s: %s\n", c->hdrs.v[i].name,
		    c->hdrs.v[i].value);
	if (rv < 0 || info.len > BC_FILE_META_MAX)
		goto out;
	ifd = openat(ufd, UPLOAD_INFO, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (ifd < 0 || bc_file_write_all(ifd, info.data, info.len) < 0)
		goto out;
	bc_buf_puts(&b, BC_FILE_XML_PROLOG
	    "<InitiateMultipartUploadResult xmlns=\"" BC_FILE_S3_XMLNS "\">");
	bc_file_xml_elem(&b, "Bucket", r->s3->bucket, false);
	bc_file_xml_elem(&b, "Key", r->s3->key, false);
	bc_file_xml_elem(&b, "UploadId", id, false);
	if (bc_buf_puts(&b, "</InitiateMultipartUploadResult>") == 0)
		e = bc_file_answer_xml(r, &b);
out:
	if (e != BC_S3E_NONE && ufd >= 0)
		bc_file_rm_tree(mfd, id, 1);
	bc_file_close(&ifd);
	bc_file_close(&ufd);
	bc_file_close(&mfd);
	free(hexkey);
	bc_buf_fini(&info);
	bc_buf_fini(&b);
	return e;
}

bc_s3err_t
bc_file_op_upload_part(bc_file_req_t *r, bc_file_ctx_t *c)
{
	char etag[BC_FILE_ETAG_LEN], name[16];
	bc_kvlist_t none = BC_KVLIST_INIT;

	bc_hex(c->body_md5, sizeof(c->body_md5), etag);
	bc_file_meta_write(c->fd, etag, &none);
	snprintf(name, sizeof(name), "%u", c->part);
	if (renameat(c->tmpdirfd, c->tmpname, c->updfd, name) < 0) {
		if (errno == ENOENT)
			return BC_S3E_NoSuchUpload;
		return bc_file_errno_s3(errno, BC_S3E_InternalError);
	}
	c->tmp_live = false;
	return bc_file_answer_upload(r, c, etag);
}

/* The MD5 of part file fd (from its metadata, else computed). */
static int
part_md5(int fd, const struct stat *st, uint8_t out[BC_MD5_LEN])
{
	bc_file_meta_t m;
	bc_md5ctx_t *h;
	char *buf;
	int rv = 0;

	bc_file_meta_read(fd, st, &m);
	if (m.stored && strlen(m.etag) == 2 * BC_MD5_LEN) {
		for (int i = 0; i < BC_MD5_LEN; i++)
			out[i] = (uint8_t)(bc_hexval(m.etag[2 * i]) * 16 +
			    bc_hexval(m.etag[2 * i + 1]));
		bc_file_meta_fini(&m);
		return 0;
	}
	bc_file_meta_fini(&m);
	h = bc_md5_new();
	buf = malloc(BC_FILE_COPY_BLOCK);
	if (h == NULL || buf == NULL) {
		free(buf);
		bc_md5_free(h);
		return -ENOMEM;
	}
	for (off_t off = 0;;) {
		ssize_t n = pread(fd, buf, BC_FILE_COPY_BLOCK, off);

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
	bc_md5_free(h);
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
			return bc_file_copy_hashed(src, dst, len, NULL);
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		len -= (uint64_t)n;
	}
	return 0;
}

bc_s3err_t
bc_file_op_complete_mpu(bc_file_req_t *r, bc_file_ctx_t *c)
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

	e = bc_s3_xml_parse_complete(bc_buf_str(&c->xml), c->xml.len, &parts,
	    &nparts);
	if (e != BC_S3E_NONE)
		return e;
	ufd = bc_file_open_upload(r, c, &hdrs, &e);
	if (ufd < 0)
		goto out;
	e = bc_file_tmp_open_bucket(c, "complete");
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
		pfd = bc_file_open_reg_at(ufd, name, &st);
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
			    bc_file_errno_s3(rv, BC_S3E_InternalError);
			goto out;
		}
		bc_md5_update(all, pm, sizeof(pm));
	}
	bc_md5_final(all, md5);
	bc_hex(md5, sizeof(md5), etag);
	snprintf(etag + 2 * BC_MD5_LEN, sizeof(etag) - 2 * BC_MD5_LEN, "-%zu",
	    nparts);
	e = bc_file_commit(r, c, r->s3->key, etag, &hdrs, &msg);
	if (e != BC_S3E_NONE) {
		if (msg != NULL)
			e = bc_file_fail(r, e, msg);
		goto out;
	}
	{
		int mfd = bc_file_open_dir_at(c->bfd, BC_FILE_MPU_DIR);

		if (mfd >= 0) {
			bc_file_rm_tree(mfd, bc_kv_get_exact(&r->s3->query,
			    "uploadId"),			    1);
			close(mfd);
		}
	}
	bc_buf_puts(&b, BC_FILE_XML_PROLOG
	    "<CompleteMultipartUploadResult xmlns=\"" BC_FILE_S3_XMLNS
	    "\"><Location>/");
	bc_buf_put_xml(&b, r->s3->bucket);
	bc_buf_putc(&b, '/');
	bc_buf_put_xml(&b, r->s3->key);
	bc_buf_puts(&b, "</Location>");
	bc_file_xml_elem(&b, "Bucket", r->s3->bucket, false);
	bc_file_xml_elem(&b, "Key", r->s3->key, false);
	bc_buf_printf(&b, "<ETag>&quot;%s&quot;</ETag>", etag);
	if (bc_buf_puts(&b, "</CompleteMultipartUploadResult>") < 0)
		e = BC_S3E_InternalError;
	else
		e = bc_file_answer_xml(r, &b);
out:
	bc_md5_free(all);
	bc_file_close(&ufd);
	bc_kv_fini(&hdrs);
	bc_buf_fini(&b);
	free(parts);
	return e;
}

bc_s3err_t
bc_file_op_abort_mpu(bc_file_req_t *r, bc_file_ctx_t *c)
{
	bc_s3err_t e;
	int ufd = bc_file_open_upload(r, c, NULL, &e);
	int mfd;

	if (ufd < 0)
		return e;
	close(ufd);
	mfd = bc_file_open_dir_at(c->bfd, BC_FILE_MPU_DIR);
	if (mfd < 0 || bc_file_rm_tree(mfd, bc_kv_get_exact(&r->s3->query,
	    "uploadId"), 1) < 0) {
		if (mfd >= 0)
			close(mfd);
		return BC_S3E_InternalError;
	}
	close(mfd);
	return bc_file_answer_empty(r, 204, NULL, NULL);
}

