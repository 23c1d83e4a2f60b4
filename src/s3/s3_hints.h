/*
 * s3_hints.h — the training hints a client may send with any request
 * (docs/design.md "Hints"), parsed from its headers:
 *
 *   x-bucketcache-job: ID          1-128 bytes of [A-Za-z0-9._~:@+=-]
 *   x-bucketcache-next: k1,k2,...  keys of the request's bucket the job
 *                                  reads next, each percent-encoded; at
 *                                  most 1,000 keys and 64 KiB; blanks
 *                                  around a key are ignored; each decoded
 *                                  key must pass bc_s3_hint_key_ok
 *   x-bucketcache-pattern: sequential|shuffle|random|once  (any case)
 *   x-bucketcache-epoch: N         decimal, 0..4294967295
 *
 * Hints never change what is answered. A malformed hint header is
 * ignored as a whole, the others still count, and h->malformed says how
 * many were ignored (the caller counts them: hints_malformed). A hint
 * header sent more than once is used once: the first copy; each later
 * copy counts as malformed. Pure and thread-safe; a bc_s3_hints_t is
 * owned by one caller.
 */
#ifndef BC_S3_HINTS_H
#define BC_S3_HINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util_kv.h"

#define BC_S3_HINT_JOB_MAX      128
#define BC_S3_HINT_NEXT_MAX     1000       /* keys in one -next header */
#define BC_S3_HINT_HEADER_MAX   65536      /* bytes of one -next header */

#define BC_S3_HINT_JOB      "x-bucketcache-job"
#define BC_S3_HINT_NEXT     "x-bucketcache-next"
#define BC_S3_HINT_PATTERN  "x-bucketcache-pattern"
#define BC_S3_HINT_EPOCH    "x-bucketcache-epoch"

typedef enum bc_s3_pattern_e {
	BC_S3_PATTERN_NONE = 0,      /* not hinted */
	BC_S3_PATTERN_SEQUENTIAL,
	BC_S3_PATTERN_SHUFFLE,
	BC_S3_PATTERN_RANDOM,
	BC_S3_PATTERN_ONCE
} bc_s3_pattern_t;

typedef struct bc_s3_hints_s {
	char            job[BC_S3_HINT_JOB_MAX + 1];  /* "" when not hinted */
	char          **next;        /* n_next decoded keys, owned; NULL when 0 */
	size_t          n_next;
	bc_s3_pattern_t pattern;
	bool            has_epoch;
	uint32_t        epoch;
	unsigned        malformed;   /* hint headers ignored */
} bc_s3_hints_t;

void bc_s3_hints_init(bc_s3_hints_t *h);
/* Frees the keys; h is empty again (init state). */
void bc_s3_hints_fini(bc_s3_hints_t *h);

/*
 * Reads every x-bucketcache-* hint of headers into h (initialised by the
 * caller, empty). Returns 0 (malformed hints only raise h->malformed), or
 * BC_ENOMEM, after which h holds what was parsed before and must still be
 * finied.
 */
int bc_s3_hints_parse(bc_s3_hints_t *h, const bc_kvlist_t *headers);

/* true when s[0..n) is a valid job id (see above). */
bool bc_s3_hint_job_ok(const char *s, size_t n);
/* true when a decoded key is one a request could name: 1..BC_S3_MAX_KEY
 * bytes, no "." or ".." segment (s3_request.h). */
bool bc_s3_hint_key_ok(const char *key, size_t n);
/* "sequential", ..., "" for NONE. */
const char *bc_s3_pattern_name(bc_s3_pattern_t p);
/* true when name is one of the x-bucketcache-* hint headers (any case);
 * they are never forwarded to an origin. */
bool bc_s3_hint_header(const char *name);

#endif
