/*
 * s3_date.h — the one date parser, and the date formats S3 speaks.
 *
 * Pure and thread-safe; no allocation.
 */
#ifndef BC_S3_DATE_H
#define BC_S3_DATE_H

#include <time.h>

#define BC_HTTP_DATE_LEN 30   /* "Sun, 06 Nov 1994 08:49:37 GMT" + NUL */

/*
 * Parses a date as HTTP and S3 clients send them: IMF-fixdate (RFC 1123,
 * "Sun, 06 Nov 1994 08:49:37 GMT", the weekday optional, a one-digit day
 * allowed, the zone GMT, UTC, +0000 or -0000), RFC 850 ("Sunday,
 * 06-Nov-94 08:49:37 GMT"; two-digit years below 70 are 20xx), asctime
 * ("Sun Nov  6 08:49:37 1994") and SigV4's "19941106T084937Z". Blanks
 * around are ignored; at most 63 bytes. Returns 0 and sets *t, or
 * BC_EINVAL. Used for conditional headers, Last-Modified and the Date
 * and x-amz-date a signature covers.
 */
int bc_http_date_parse(const char *s, time_t *t);
/* Only SigV4's "YYYYMMDDTHHMMSSZ" (exactly 16 bytes): 0 and *t, or
 * BC_EINVAL. */
int bc_amz_date_parse(const char *s, time_t *t);

/*
 * Parses an ISO 8601 / RFC 3339 date-time as AWS's credential services
 * write expirations: "YYYY-MM-DDTHH:MM:SS", optional fractional seconds
 * (".000", at most 9 digits, dropped), then "Z" or an offset "+HH:MM" /
 * "-HH:MM" ("+HHMM" too); 'T' and 'Z' in either case. Nothing else, no
 * blanks; at most 63 bytes. Returns 0 and sets *t (UTC), or BC_EINVAL.
 */
int bc_iso8601_parse(const char *s, time_t *t);

/* Formats t (UTC) as an IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT";
 * times outside years 0..9999 are clamped. */
void bc_http_date(time_t t, char out[BC_HTTP_DATE_LEN]);
/* Formats t (UTC) as S3's ISO 8601 "2009-10-12T17:50:30.000Z" into
 * out[25]. */
void bc_iso8601_date(time_t t, char out[25]);

#endif
