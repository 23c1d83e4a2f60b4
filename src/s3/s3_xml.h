/*
 * s3_xml.h — the XML request bodies of S3 calls that have one we read:
 * DeleteObjects (<Delete>) and CompleteMultipartUpload
 * (<CompleteMultipartUpload>), the listings an origin answers
 * (<ListBucketResult>, read by warm-ups), and XML character data with
 * entities.
 *
 * A scanner, not an XML parser. The root must appear, found by its
 * start-tag prefix ("<Delete", so it may carry xmlns); its end tag is not
 * required. The other elements are found anywhere in the body by their
 * exact start tag ("<Object>", "<Key>", ...: one written with attributes
 * is not found); inside an <Object> or <Part>, the first <Key>,
 * <PartNumber> or <ETag> wins; everything else (the prolog, <VersionId>,
 * checksums, unknown elements) is ignored. CDATA
 * sections and comments are not recognised (a '<' in character data is
 * malformed). Element text is decoded by bc_s3_xml_text(). Every input is
 * bounded: at most BC_S3_DELETE_MAX_KEYS keys and BC_S3_MAX_PARTS parts;
 * a decoded text is never longer than its source. The caller caps the
 * body's length.
 *
 * Bad input yields the S3 error a real S3 sends (MalformedXML,
 * InvalidArgument, InvalidPart, InvalidPartOrder), never a crash.
 *
 * Pure and thread-safe. What a parser returns is the caller's (malloc'd);
 * on an error nothing is returned and nothing needs freeing.
 */
#ifndef BC_S3_XML_H
#define BC_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_error.h"
#include "util/util_buf.h"

#define BC_S3_DELETE_MAX_KEYS 1000    /* <Object>s in one DeleteObjects */
#define BC_S3_MAX_PARTS       10000   /* part numbers are 1..this */
#define BC_S3_ETAG_LEN        48      /* unquoted ETag + NUL */

/*
 * XML character data: the n bytes at s (need not be NUL-terminated) with
 * the five named entities (&amp; &lt; &gt; &quot; &apos;) and numeric
 * references (&#65; &#x41;, a code point in 1..0x10FFFF that is not a
 * surrogate, written in at most 12 bytes with the '&' and ';') decoded to
 * UTF-8. Returns a new NUL-terminated string (free it), or NULL when the
 * text is malformed (a raw '<' or NUL, an unknown or unterminated entity,
 * a bad reference) or out of memory.
 */
char *bc_s3_xml_text(const char *s, size_t n);

/*
 * A <Delete> body of len bytes: the decoded <Key> of every <Object>, in
 * order, and <Quiet> (true when its trimmed text is "true", any case).
 * On success *keys is an array of *nkeys new strings (free each, then the
 * array); a key may be "" (the caller reports it per key). Returns
 * BC_S3E_NONE; MalformedXML when there is no <Delete, no <Object>, an
 * <Object> without a <Key>, an <Object> or <Key> without its end tag, bad
 * key text, or more than BC_S3_DELETE_MAX_KEYS objects (a <Quiet> without
 * its end tag is ignored). InternalError when out of memory. On an error
 * *keys is NULL and *nkeys 0.
 */
bc_s3err_t bc_s3_xml_parse_delete(const char *xml, size_t len, char ***keys,
    size_t *nkeys, bool *quiet);

/*
 * A <Delete> body of len bytes rewritten into out without the <Object>
 * elements whose decoded <Key> keep(arg, key) refuses; everything else
 * (the prolog, <Quiet>, <VersionId>s, white space) is copied as it was.
 * The refused keys come back in order in *refused (*nrefused new strings;
 * free each, then the array); *nkept counts the others. Returns
 * BC_S3E_NONE, or what bc_s3_xml_parse_delete() would return for the
 * same body (out then holds a part, to be discarded); also MalformedXML
 * for a body whose markup is not just the prolog, the root's start tag
 * and the exact tags of S3's <Delete> (Object, Key, VersionId, Quiet,
 * ETag, LastModifiedTime, Size) properly nested, one <Key> per <Object>:
 * comments, CDATA, tags with blanks or prefixes, repeated or stray
 * elements could hide a key from this scanner that S3's parser reads.
 */
bc_s3err_t bc_s3_xml_filter_delete(const char *xml, size_t len,
    bool (*keep)(void *arg, const char *key), void *arg,
    bc_buf_t *out, char ***refused, size_t *nrefused, size_t *nkept);

/* Appends S3's per-key error of a DeleteResult:
 * <Error><Key>key</Key><Code>..</Code><Message>..</Message></Error>.
 * Returns 0 or BC_ENOMEM. */
int bc_s3_xml_key_error(bc_buf_t *b, const char *key, bc_s3err_t e);

/* A <DeleteResult> of len bytes copied into out with an <Error> of code e
 * for each of the n keys added before its last end tag (a body without
 * one, an S3 <Error> document, is copied unchanged). Returns 0 or
 * BC_ENOMEM. */
int bc_s3_xml_delete_result_errors(const char *xml, size_t len,
    char *const *keys, size_t n, bc_s3err_t e, bc_buf_t *out);

/* One <Part> of a CompleteMultipartUpload. */
typedef struct bc_s3_part_s {
	unsigned number;                   /* 1..BC_S3_MAX_PARTS */
	char     etag[BC_S3_ETAG_LEN];     /* unquoted, as the client sent */
} bc_s3_part_t;

/*
 * A <CompleteMultipartUpload> body of len bytes: its parts in order. The
 * <ETag> text is decoded, trimmed and stripped of one pair of surrounding
 * quotes. On success *parts is a new array of *nparts (free it). Returns
 * BC_S3E_NONE, or the error of the first bad part in document order:
 * InvalidArgument for a <PartNumber> that is not 1..7 decimal digits
 * (surrounding white space allowed) worth 1..BC_S3_MAX_PARTS; InvalidPart
 * for an ETag of BC_S3_ETAG_LEN bytes or more; InvalidPartOrder when the
 * numbers are not strictly ascending; MalformedXML when there is no
 * <CompleteMultipartUpload, no <Part>, a <Part> without <PartNumber> or
 * <ETag>, a <Part>, <PartNumber> or <ETag> without its end tag, bad ETag
 * text, or more than BC_S3_MAX_PARTS parts. InternalError when out of
 * memory. On an error *parts is NULL and *nparts 0.
 */
bc_s3err_t bc_s3_xml_parse_complete(const char *xml, size_t len,
    bc_s3_part_t **parts, size_t *nparts);

/* ---- listings (an origin's answer, read by warm-ups) ---- */

#define BC_S3_LIST_MAX_KEYS  1000   /* <Contents> of one page, at most */
#define BC_S3_LIST_TOKEN_MAX 4096   /* bytes of a decoded continuation */

typedef struct bc_s3_list_entry_s {
	char     *key;    /* decoded, non-empty */
	uint64_t  size;
} bc_s3_list_entry_t;

/* One page of a ListObjects(V2) answer. */
typedef struct bc_s3_list_s {
	bc_s3_list_entry_t *v;       /* n entries, in document order */
	size_t              n;
	bool                truncated;   /* <IsTruncated>true */
	/* <NextContinuationToken> (V2), else <NextMarker> (V1), decoded;
	 * NULL when there is none */
	char               *next;
} bc_s3_list_t;

/*
 * A <ListBucketResult> of len bytes (ListObjectsV2 or ListObjects): the
 * <Key> and <Size> of each <Contents>, <IsTruncated> and the token of the
 * next page. Returns BC_S3E_NONE with *out filled (bc_s3_xml_list_fini
 * frees it); MalformedXML when there is no <ListBucketResult, a
 * <Contents> lacks its end tag, a <Key> (empty, or bad text) or a <Size>
 * (1-20 decimal digits that fit 64 bits, white space around allowed),
 * there are more than BC_S3_LIST_MAX_KEYS, or the token is bad text or
 * longer than BC_S3_LIST_TOKEN_MAX; InternalError when out of memory. On
 * an error *out is empty.
 */
bc_s3err_t bc_s3_xml_parse_list(const char *xml, size_t len,
    bc_s3_list_t *out);
/* Frees what a parse left in l and empties it. NULL is a no-op. */
void       bc_s3_xml_list_fini(bc_s3_list_t *l);

#endif
