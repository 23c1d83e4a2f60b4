/*
 * upstream_file.h — the file origin (--upstream file:///DIR): a local
 * directory served as S3 behind the origin interface (upstream.h).
 *
 * Exchanges: relay() takes any S3 operation the store does (buckets,
 * objects with Range and conditions, copies, deletes, DeleteObjects
 * honouring the client key's allowed prefixes, listings v1 and v2,
 * multipart uploads); other operations are NotImplemented. It runs in
 * the caller's thread: relay() checks the request (NULL with *e: answer
 * that), write() takes every byte (a negative code with *e when the body
 * failed verification), write_end() does the operation (0, or BC_EPROTO
 * with *e when the body failed its final checks: length, payload hash,
 * Content-MD5, checksum, aws-chunked end; never BC_EAGAIN). Then headers()
 * holds the answer: status and headers as S3 sends them (Content-Length
 * of the body, or for HEAD of the body a GET would carry; none with 204
 * and 304); errors are S3 XML documents (application/xml). The body is
 * read() from memory or the file, or taken as a file range with
 * body_fd() (a GetObject with bytes). wake is never called.
 * fetch() answers as a relayed GetObject / HeadObject with the fetch's
 * Range and condition would. Without on_done (pull) it is answered when
 * fetch() returns; with on_done (push) the work runs on the loop thread
 * (bc_loop_call): on_headers, the body into the sink or collected (more
 * than the sink's cap or collect_max: BC_E2BIG), on_data after each
 * block of it, on_done. release() from another thread while a callback
 * runs waits for it to return: do not hold a lock the callbacks take
 * when releasing a push exchange off the loop thread. cancel_all() ends
 * the push fetches not yet run (on_done, error() BC_ECANCELED).
 * Every object file a GetObject / HeadObject opens counts in
 * upstream_file_reads.
 *
 * Layout: every top-level directory of the root is a bucket; an object
 * "a/b/c" is the regular file a/b/c inside it. A key that names a
 * directory is not an object (404). Hidden entries whose names start with
 * ".bucketcache-" (the per-bucket ".bucketcache-tmp" upload area and
 * ".bucketcache-mpu" multipart uploads) are never listed or served.
 *
 * Metadata: a PUT (or copy, or completed multipart upload) stores the
 * object's ETag, Content-Type, the other representation headers S3 keeps
 * (Content-Encoding, Content-Disposition, Content-Language, Cache-Control,
 * Expires) and x-amz-meta-* in the xattr "user.bucketcache.meta" (a small
 * text blob), together with the size and mtime it describes. When the
 * xattr is absent (a file placed by hand, a file system without user
 * xattrs) or stale (the file changed since), the ETag is synthetic and
 * stable: md5("bucketcache:" inode ":" size ":" mtime-ns) in hex followed
 * by "-1", so clients never mistake it for the content's MD5; the
 * Content-Type is then binary/octet-stream.
 *
 * Checksums: an upload's x-amz-checksum-* header, or its aws-chunked
 * checksum trailer, is verified over the decoded body (400 BadDigest on a
 * mismatch, nothing stored), as is a DeleteObjects body's header. A PUT
 * keeps the checksum (else S3's default, a CRC64NVME it computes) in the
 * metadata; a copy keeps its source's. GET and HEAD with
 * "x-amz-checksum-mode: ENABLED" return it (x-amz-checksum-ALG and
 * x-amz-checksum-type: FULL_OBJECT) for the whole object, not a range;
 * an upload's answer carries it too. A multipart upload's parts are
 * verified but the completed object keeps no checksum (S3's composite
 * "-N" values are not made here).
 *
 * Security: keys never leave the root. A key with an empty, "." or ".."
 * segment, a leading '/', a segment over NAME_MAX, or a segment starting
 * with ".bucketcache-" is refused (400 InvalidArgument, 400
 * KeyTooLongError for a long segment); every path is walked from the
 * root's directory fd with openat(O_NOFOLLOW) per component, so a
 * symbolic link anywhere in a path is never followed (such keys read as
 * absent). Bucket names must be valid S3 names (strict DNS-style rules to
 * create a bucket; the legacy [A-Za-z0-9._-] form to use an existing
 * directory).
 *
 * Threads: relays and pull fetches run on their caller's thread (an MHD
 * worker) and do local file I/O only; push fetches run on the loop
 * thread. Exchanges share nothing but the root's fd and the origin's
 * queue of push fetches (its lock). Uploads stream to a temp file and are
 * renamed over the key when complete, so readers see the old or the new
 * object, never a partial one.
 */
#ifndef BC_UPSTREAM_FILE_H
#define BC_UPSTREAM_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "s3/s3_error.h"
#include "s3/s3_xml.h"
#include "upstream/upstream.h"
#include "loop/loop.h"

#define BC_FILE_MAX_OBJECT  (5ULL << 30)   /* single PUT, copy, part */
#define BC_FILE_MAX_LIST    1000
#define BC_FILE_ETAG_LEN    BC_S3_ETAG_LEN /* unquoted ETag + NUL */

/*
 * Creates the origin serving the directory root (an absolute path; the
 * root itself may be a symbolic link), which stays open until
 * bc_origin_free(). loop runs push fetches (NULL: fetch() with on_done
 * returns NULL). Returns 0 and *out, or -1 with a message in err (the
 * directory cannot be opened, out of memory).
 */
int bc_file_origin_new(const char *root, bc_loop_t *loop, bc_origin_t **out,
    char *err, size_t errlen);

/* ---- helpers, exposed for unit tests -------------------------------- */

/* Checks key against the rules above. Returns BC_S3E_NONE,
 * BC_S3E_InvalidArgument or BC_S3E_KeyTooLongError. */
bc_s3err_t bc_file_key_check(const char *key);

/* true when name is a bucket name: strict (CreateBucket: 3-63 of a-z 0-9
 * . -, starting and ending with a letter or digit, no "..", ".-" or
 * "-.", not an IPv4 address, not "xn--" / "sthree-" prefixed or
 * "-s3alias" / "--ol-s3" suffixed) or legacy (1-255 of A-Z a-z 0-9 . _ -,
 * not starting with '.' or '_'). */
bool bc_file_bucket_ok(const char *name, bool strict);

/* One listing item: a key, or a common prefix (is_prefix, no stats). */
typedef struct bc_file_item_s {
	char    *name;
	bool     is_prefix;
	uint64_t size;
	time_t   mtime;
	char     etag[BC_FILE_ETAG_LEN];   /* unquoted */
} bc_file_item_t;

typedef struct bc_file_list_s {
	bc_file_item_t *v;
	size_t          n;
	bool            truncated;   /* more items follow v[n-1] */
} bc_file_list_t;

typedef struct bc_file_list_opts_s {
	const char *prefix;      /* NULL or "": all keys */
	const char *delimiter;   /* NULL or "": no roll-up */
	const char *after;       /* NULL or "": from the start; else only
				    items (keys or prefixes) > after */
	size_t      max;         /* items wanted, at most BC_FILE_MAX_LIST */
} bc_file_list_opts_t;

/*
 * Lists the bucket whose directory is open as bucket_fd, in UTF-8 binary
 * key order, as S3 does: keys under prefix; with a delimiter, keys whose
 * rest (after prefix) holds it roll up into one common prefix (counted as
 * one item, listed only when it holds an object). Fills *out (free with
 * bc_file_list_fini). Returns 0 or a negative BC_E* code.
 */
int  bc_file_list(int bucket_fd, const bc_file_list_opts_t *o,
    bc_file_list_t *out);
void bc_file_list_fini(bc_file_list_t *l);

/* Continuation tokens: hex of the last item listed. encode writes
 * 2*strlen(s)+1 bytes; decode returns a new string or NULL (malformed). */
void  bc_file_token_encode(const char *s, char *out);
char *bc_file_token_decode(const char *tok);

#endif
