/*
 * upstream_file_int.h — private to the file origin (upstream_file*.c):
 * the request an operation works on and the answer it gives, the state
 * of a request body, and the helpers the four files share.
 *
 *   upstream_file.c        the origin, its exchanges (relay, fetch in
 *                          push and pull mode), request bodies, answers
 *   upstream_file_store.c  names, paths, metadata, buckets and objects
 *   upstream_file_list.c   listing (objects, buckets) and its tokens
 *   upstream_file_mpu.c    multipart uploads
 *
 * Operations (bc_file_op_*) run on the caller's thread with local file
 * I/O only. Each answers through bc_file_answer_*() and returns
 * BC_S3E_NONE, or returns an S3 error the caller answers with the table's
 * message. Paths are always walked from a directory fd with O_NOFOLLOW
 * (upstream_file.h, "Security").
 */
#ifndef BC_UPSTREAM_FILE_INT_H
#define BC_UPSTREAM_FILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config/config.h"
#include "s3/s3_auth.h"
#include "s3/s3_awschunked.h"
#include "s3/s3_checksum.h"
#include "s3/s3_error.h"
#include "s3/s3_request.h"
#include "upstream/upstream_file.h"
#include "util/util_buf.h"
#include "util/util_crypto.h"
#include "util/util_kv.h"

#define BC_FILE_HIDDEN_PREFIX ".bucketcache-"
#define BC_FILE_TMP_DIR       ".bucketcache-tmp"
#define BC_FILE_MPU_DIR       ".bucketcache-mpu"
#define BC_FILE_META_MAX      8192           /* metadata blob */
#define BC_FILE_COPY_BLOCK    (256 * 1024)
#define BC_FILE_DEFAULT_CTYPE "binary/octet-stream"
#define BC_FILE_S3_XMLNS      "http://s3.amazonaws.com/doc/2006-03-01/"
#define BC_FILE_XML_PROLOG    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* ---- requests and answers ---------------------------------------------- */

/* An answer: status, headers in the order they go out, and a body held in
 * memory or (fd >= 0) as bytes off..off+len of an open file. */
typedef struct bc_file_ans_s {
	int         status;    /* 0: none yet */
	bc_kvlist_t h;
	bc_buf_t    body;
	int         fd;
	uint64_t    off, len;
	bool        oom;       /* a header could not be added */
} bc_file_ans_t;

/* One request as an operation sees it (borrowed from the exchange), and
 * the answer the operation gives. */
typedef struct bc_file_req_s {
	const bc_s3_req_t     *s3;
	const bc_s3_auth_t    *auth;
	const bc_client_key_t *client_key;   /* NULL: unsigned */
	uint64_t               content_length;   /* UINT64_MAX: none */
	const char            *region;
	int                    root_fd;
	bc_file_ans_t          ans;
} bc_file_req_t;

/* Answers status with an empty body and, when hname is not NULL, one
 * header. Returns BC_S3E_NONE, or InternalError (out of memory). */
bc_s3err_t bc_file_answer_empty(bc_file_req_t *r, int status,
    const char *hname, const char *hval);
/* Answers 200 with body (taken over) as application/xml. */
bc_s3err_t bc_file_answer_xml(bc_file_req_t *r, bc_buf_t *body);
/* Answers S3's <Error> document for e with msg (NULL: the table's) and,
 * when hname is not NULL, one extra header; NotModified is a bare 304.
 * Returns BC_S3E_NONE, or e when out of memory. */
bc_s3err_t bc_file_fail(bc_file_req_t *r, bc_s3err_t e, const char *msg);
bc_s3err_t bc_file_fail_hdr(bc_file_req_t *r, bc_s3err_t e,
    const char *hname, const char *hval);
/* Adds a header to the answer, as libmicrohttpd would have sent it: a
 * value holding CR or LF is dropped; an empty one is kept as "". */
void bc_file_answer_header(bc_file_req_t *r, const char *name,
    const char *value);
void bc_file_answer_etag(bc_file_req_t *r, const char *etag);

/* ---- a request body ---------------------------------------------------- */

typedef enum bc_file_sink_e {
	BC_FILE_SINK_DISCARD = 0,
	BC_FILE_SINK_FILE,
	BC_FILE_SINK_XML,
} bc_file_sink_t;

/* What a request holds open and has taken of its body. */
typedef struct bc_file_ctx_s {
	int              bfd;         /* bucket directory */
	int              fd;          /* temp file being written */
	int              tmpdirfd;    /* directory holding it */
	char             tmpname[64];
	bool             tmp_live;    /* tmpname exists, not committed */
	bc_file_sink_t   sink;
	uint64_t         limit;       /* decoded body bytes allowed */
	bc_s3err_t       too_large;
	uint64_t         n;           /* decoded body bytes taken */
	uint64_t         expect;      /* announced decoded length */
	bc_md5ctx_t     *md5;         /* of the decoded body */
	uint8_t          body_md5[BC_MD5_LEN];   /* once checked */
	bc_sha256_t     *sha;         /* of the raw body (V4 hex hash) */
	bc_awschunked_t *verify;      /* aws-chunked: verified, or framing
					 only (anonymous) */
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
} bc_file_ctx_t;

/* ---- small helpers (upstream_file_store.c) ----------------------------- */

bool bc_file_is_hidden(const char *name);
bool bc_file_starts_with(const char *s, const char *prefix);
void bc_file_close(int *fd);
/* nbytes random bytes as 2 * nbytes hex digits (and a NUL) into out */
int  bc_file_rand_hex(char *out, size_t nbytes);
int  bc_file_write_all(int fd, const char *p, size_t n);
/* The S3 error for a failed file system call (errno e, negated or not);
 * absent for ENOENT, ENOTDIR, ELOOP. */
bc_s3err_t bc_file_errno_s3(int e, bc_s3err_t absent);
/* Appends <name>value</name>, the value escaped (url: URL-encoded). */
void bc_file_xml_elem(bc_buf_t *b, const char *name, const char *value,
    bool url);
/* Copies len bytes of src (from its offset) to dst, hashing into h when
 * not NULL. Returns 0 or -errno (-EIO: src shrank). */
int  bc_file_copy_hashed(int src, int dst, uint64_t len, bc_md5ctx_t *h);

/* ---- paths (upstream_file_store.c); fds or -errno ---------------------- */

int  bc_file_open_dir_at(int dfd, const char *name);   /* -1, errno */
int  bc_file_reopen_dir(int fd);                        /* -1, errno */
/* The directory path[0..len) ("a/b", checked segments) below bfd, one
 * O_NOFOLLOW component at a time; create makes missing ones. */
int  bc_file_walk_dirs(int bfd, const char *path, size_t len, bool create);
/* The directory holding key's last segment; *leaf points into key. */
int  bc_file_open_parent(int bfd, const char *key, bool create,
    const char **leaf);
/* A regular file of dfd, never through a link (-ENOENT: not an object). */
int  bc_file_open_reg_at(int dfd, const char *name, struct stat *st);
int  bc_file_open_object(int bfd, const char *key, struct stat *st);
int  bc_file_open_bucket(int root_fd, const char *bucket);
/* The bucket's hidden directory name, made when missing. */
int  bc_file_open_hidden_dir(int bfd, const char *name);
/* Removes dfd/name and everything below it (our hidden trees only). */
int  bc_file_rm_tree(int dfd, const char *name, int depth);

/* ---- metadata (upstream_file_store.c) ---------------------------------- */

typedef struct bc_file_meta_s {
	char        etag[BC_FILE_ETAG_LEN];   /* unquoted */
	bool        stored;                   /* from the xattr */
	bc_kvlist_t hdrs;                     /* stored headers, lower case */
} bc_file_meta_t;

/* fd's metadata (synthetic when absent or stale); bc_file_meta_fini it */
void bc_file_meta_read(int fd, const struct stat *st, bc_file_meta_t *m);
void bc_file_meta_fini(bc_file_meta_t *m);
/* Stores the metadata xattr on fd (failures only logged). */
void bc_file_meta_write(int fd, const char *etag, const bc_kvlist_t *hdrs);
/* Parses "h name: value" lines (stored headers only) into hdrs. */
int  bc_file_parse_hdr_lines(const char *p, size_t n, bc_kvlist_t *hdrs);
/* The headers of r that an object keeps: BC_S3E_NONE, InvalidArgument
 * (metadata too large) or InternalError. */
bc_s3err_t bc_file_collect_headers(const bc_file_req_t *r,
    bc_kvlist_t *out);

/* ---- temp files and commit (upstream_file_store.c) --------------------- */

/* A temp file in dirfd (taken over by c). */
bc_s3err_t bc_file_tmp_open(bc_file_ctx_t *c, int dirfd, const char *tag);
/* A temp file in the bucket's upload area. */
bc_s3err_t bc_file_tmp_open_bucket(bc_file_ctx_t *c, const char *tag);
/* Stores metadata on the temp file and renames it over key, honouring
 * the write conditions If-Match / If-None-Match. BC_S3E_NONE or the
 * error (*msg: a message for it, or NULL). */
bc_s3err_t bc_file_commit(const bc_file_req_t *r, bc_file_ctx_t *c,
    const char *key, const char *etag, const bc_kvlist_t *hdrs,
    const char **msg);

/* ---- operations -------------------------------------------------------- */

/* upstream_file_store.c */
bc_s3err_t bc_file_op_create_bucket(bc_file_req_t *r);
bc_s3err_t bc_file_op_delete_bucket(bc_file_req_t *r, bc_file_ctx_t *c);
bc_s3err_t bc_file_op_head_bucket(bc_file_req_t *r);
bc_s3err_t bc_file_op_bucket_location(bc_file_req_t *r);
/* GetObject and HeadObject; counts upstream_file_reads per file opened */
bc_s3err_t bc_file_op_get_object(bc_file_req_t *r, bc_file_ctx_t *c);
/* the body was checked (c->body_md5) */
bc_s3err_t bc_file_op_put_object(bc_file_req_t *r, bc_file_ctx_t *c);
bc_s3err_t bc_file_op_copy_object(bc_file_req_t *r, bc_file_ctx_t *c);
bc_s3err_t bc_file_op_delete_object(bc_file_req_t *r, bc_file_ctx_t *c);
/* the body was checked */
bc_s3err_t bc_file_op_delete_objects(bc_file_req_t *r, bc_file_ctx_t *c);
/* Answers an upload with its ETag and the checksum it verified. */
bc_s3err_t bc_file_answer_upload(bc_file_req_t *r, const bc_file_ctx_t *c,
    const char *etag);

/* upstream_file_list.c */
bc_s3err_t bc_file_op_list_buckets(bc_file_req_t *r);
bc_s3err_t bc_file_op_list_objects(bc_file_req_t *r, bc_file_ctx_t *c,
    bool v2);

/* upstream_file_mpu.c */
/* The upload directory of r's uploadId, checked to belong to r's key;
 * fills hdrs (when not NULL) with what the object will keep. Returns the
 * fd, or -1 with *e set. */
int bc_file_open_upload(const bc_file_req_t *r, bc_file_ctx_t *c,
    bc_kvlist_t *hdrs, bc_s3err_t *e);
bc_s3err_t bc_file_op_create_mpu(bc_file_req_t *r, bc_file_ctx_t *c);
/* the body was checked */
bc_s3err_t bc_file_op_upload_part(bc_file_req_t *r, bc_file_ctx_t *c);
bc_s3err_t bc_file_op_complete_mpu(bc_file_req_t *r, bc_file_ctx_t *c);
bc_s3err_t bc_file_op_abort_mpu(bc_file_req_t *r, bc_file_ctx_t *c);

#endif
