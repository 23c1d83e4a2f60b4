/*
 * s3_cond.h — conditional requests (If-Match, If-None-Match,
 * If-Modified-Since, If-Unmodified-Since) evaluated the way S3 does.
 *
 * Order (RFC 7232 section 6, which is also what S3 documents):
 *   1. If-Match present: no match -> 412 PreconditionFailed. When it
 *      matches, If-Unmodified-Since is not looked at (S3: "If-Match true
 *      and If-Unmodified-Since false -> 200").
 *   2. else If-Unmodified-Since (a valid date): modified after it -> 412.
 *   3. If-None-Match present: a match -> 304 NotModified for reads, 412
 *      for writes. When present, If-Modified-Since is not looked at (S3:
 *      "If-None-Match false and If-Modified-Since true -> 304").
 *   4. else If-Modified-Since (a valid date; reads only): not modified
 *      since -> 304.
 * The x-amz-copy-source-if-* family (mode BC_COND_COPY) uses the same
 * order but answers 412 for every failed condition, and checks
 * If-Modified-Since too, as S3's CopyObject does.
 *
 * ETag lists: comma-separated entity tags, quoted or (leniently, as S3
 * accepts) bare, or "*". If-Match compares strongly (a W/ tag never
 * matches); If-None-Match weakly (W/"x" matches "x"). A malformed date
 * makes its header ignored. Dates compare at one-second resolution.
 *
 * Pure and thread-safe; no allocation.
 */
#ifndef BC_S3_COND_H
#define BC_S3_COND_H

#include <stdbool.h>
#include <time.h>

#include "s3/s3_date.h"   /* dates, parsed and formatted */
#include "s3/s3_error.h"
#include "util/util_kv.h"


/* The four condition header values; NULL when absent. Pointers are
 * borrowed from the caller. */
typedef struct bc_cond_s {
	const char *if_match;
	const char *if_none_match;
	const char *if_modified_since;
	const char *if_unmodified_since;
} bc_cond_t;

typedef enum bc_cond_mode_e {
	BC_COND_READ = 0,   /* GET, HEAD: 304 for If-None-Match/-Modified */
	BC_COND_WRITE,      /* PUT and friends: 412; If-Modified-Since unused */
	BC_COND_COPY,       /* x-amz-copy-source-if-*: 412 for all */
} bc_cond_mode_t;

/* Fills c from headers (If-Match, ...); pointers into headers. */
void bc_cond_from_headers(bc_cond_t *c, const bc_kvlist_t *headers);
/* Fills c from x-amz-copy-source-if-match, ... */
void bc_cond_from_copy_headers(bc_cond_t *c, const bc_kvlist_t *headers);

/* true when at least one condition is present */
bool bc_cond_any(const bc_cond_t *c);

/*
 * Evaluates c against an existing object with the given etag (quoted or
 * not) and last_modified. Returns BC_S3E_NONE (go on),
 * BC_S3E_PreconditionFailed or BC_S3E_NotModified.
 */
bc_s3err_t bc_cond_eval(const bc_cond_t *c, bc_cond_mode_t mode,
    const char *etag, time_t last_modified);

/* true when the ETag list (If-Match / If-None-Match value) holds "*" or
 * a tag equal to etag (quoted or not); weak allows W/ tags to match.
 * A malformed list matches nothing. */
bool bc_cond_etag_match(const char *list, const char *etag, bool weak);

#endif
