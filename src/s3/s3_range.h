/*
 * s3_range.h — the HTTP Range header of a GET, parsed the way S3 does.
 *
 * S3 honours one byte range: "bytes=a-b", "bytes=a-" or "bytes=-n"
 * (the last n bytes). A header that is not exactly one such range
 * (garbage, another unit, several ranges, b < a) is ignored: the whole
 * object is served with 200. A well-formed range that selects no byte of
 * the object (a >= size, "-0", any range of an empty object) is
 * unsatisfiable: 416 InvalidRange with "Content-Range: bytes *\/SIZE".
 * Numbers of any length are accepted; values past UINT64_MAX saturate,
 * which keeps the answer right (a huge start is past the end, a huge end
 * is clamped, a huge suffix is the whole object).
 *
 * Pure and thread-safe; no allocation.
 */
#ifndef BC_S3_RANGE_H
#define BC_S3_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest header parsed; longer ones are ignored like garbage. */
#define BC_RANGE_MAX_HEADER 256
/* Room for "bytes 18446744073709551615-18446744073709551615/18446744073709551615". */
#define BC_RANGE_CR_LEN 80

/* A resolved range: bytes first..last inclusive, last < size. */
typedef struct bc_range_s {
	uint64_t first;
	uint64_t last;
} bc_range_t;

typedef enum bc_range_result_e {
	BC_RANGE_NONE = 0,      /* no (usable) Range header: serve it all, 200 */
	BC_RANGE_OK,            /* serve *out with 206 and Content-Range */
	BC_RANGE_UNSATISFIABLE, /* 416 InvalidRange, Content-Range bytes *\/size */
} bc_range_result_t;

/* A range as written, before the object's size is known. */
typedef struct bc_range_spec_s {
	bool     suffix;   /* "bytes=-n": the last `last` bytes */
	uint64_t first;    /* not suffix: first byte (saturated) */
	uint64_t last;     /* not suffix: last byte, UINT64_MAX for "a-";
			      suffix: n */
} bc_range_spec_t;

/*
 * Parses hdr (may be NULL) without knowing the size. Returns true and
 * fills *out for exactly one syntactically valid byte range; false when
 * the header must be ignored (absent, garbage, multi-range, b < a).
 */
bool bc_range_parse_spec(const char *hdr, bc_range_spec_t *out);

/* Resolves spec against an object of size bytes (never BC_RANGE_NONE). */
bc_range_result_t bc_range_resolve(const bc_range_spec_t *spec,
    uint64_t size, bc_range_t *out);

/* bc_range_parse_spec() then bc_range_resolve(); *out is set only for
 * BC_RANGE_OK. */
bc_range_result_t bc_range_parse(const char *hdr, uint64_t size,
    bc_range_t *out);

/* Bytes a resolved range holds (last - first + 1). */
uint64_t bc_range_length(const bc_range_t *r);

/* Writes the Content-Range value "bytes a-b/size" (r not NULL) or
 * "bytes *\/size" (r NULL) into out (BC_RANGE_CR_LEN bytes suffice).
 * Returns 0, or BC_E2BIG when len is too small (out then holds ""). */
int bc_range_content_range(char *out, size_t len, const bc_range_t *r,
    uint64_t size);

#endif
