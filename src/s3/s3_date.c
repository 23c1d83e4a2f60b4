/*
 * s3_date.c — the one date parser and the date formats (see s3_date.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_date.h"
#include "util/util_error.h"
#include "util/util_num.h"

static const char *const wkdays[7] = {
	"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"
};
static const char *const wkdays_long[7] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
	"Saturday"
};
static const char *const months[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec"
};

static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}


/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
days_in_month(int y, int m)
{
	static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };

	return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

static int make_time(int y, int mon, int d, int h, int mi, int s,
    time_t *t);

typedef struct cur_s {
	const char *p;
	const char *end;
} cur_t;

/* Points c at s, a date string: false when s is NULL or 64 bytes or
 * longer (no date is). */
static bool
cur_init(cur_t *c, const char *s)
{
	size_t len;

	if (s == NULL)
		return false;
	len = strnlen(s, 64);
	if (len >= 64)
		return false;
	c->p = s;
	c->end = s + len;
	return true;
}

/* Matches one of n names (case-insensitive, whole word); returns its
 * index or -1. */
static int
cur_name(cur_t *c, const char *const *names, int n)
{
	for (int i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		if ((size_t)(c->end - c->p) >= l &&
		    strncasecmp(c->p, names[i], l) == 0 &&
		    (c->p + l == c->end || !((c->p[l] | 0x20) >= 'a' &&
		    (c->p[l] | 0x20) <= 'z'))) {
			c->p += l;
			return i;
		}
	}
	return -1;
}

static bool
cur_char(cur_t *c, char ch)
{
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* Reads between min and max digits. */
static bool
cur_digits(cur_t *c, int min, int max, int *out)
{
	size_t lim = (size_t)(c->end - c->p);
	uint64_t v = 0;
	ssize_t n;

	if (lim > (size_t)max)
		lim = (size_t)max;
	n = bc_u64_prefix(c->p, lim, &v);
	if (n < min)
		return false;
	c->p += n;
	if (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		return false;
	*out = (int)v;
	return true;
}

static bool
cur_time(cur_t *c, int *h, int *mi, int *s)
{
	return cur_digits(c, 2, 2, h) && cur_char(c, ':') &&
	    cur_digits(c, 2, 2, mi) && cur_char(c, ':') &&
	    cur_digits(c, 2, 2, s);
}

static bool
cur_gmt(cur_t *c)
{
	static const char *const zones[] = { "GMT", "UTC" };

	if (cur_name(c, zones, 2) >= 0)
		return true;
	/* +0000 / -0000: UTC written as an offset */
	if (c->end - c->p >= 5 && (c->p[0] == '+' || c->p[0] == '-') &&
	    memcmp(c->p + 1, "0000", 4) == 0) {
		c->p += 5;
		return true;
	}
	return false;
}

/* IMF-fixdate after its "Wkd, " (or without one): D[D] Mon YYYY
 * HH:MM:SS ZONE, to the end. */
static int
imf_rest(cur_t *c, time_t *t)
{
	int y, mon, d, h, mi, sec;

	if (!cur_digits(c, 1, 2, &d) || !cur_char(c, ' '))
		return BC_EINVAL;
	mon = cur_name(c, months, 12) + 1;
	if (mon == 0 || !cur_char(c, ' ') ||
	    !cur_digits(c, 4, 4, &y) || !cur_char(c, ' ') ||
	    !cur_time(c, &h, &mi, &sec) || !cur_char(c, ' ') ||
	    !cur_gmt(c) || c->p != c->end)
		return BC_EINVAL;
	return make_time(y, mon, d, h, mi, sec, t);
}

/* n digits at s, all of them: true and *out. */
static bool
field(const char *s, size_t n, int *out)
{
	uint64_t v;

	if (!bc_u64_parse(s, n, &v))
		return false;
	*out = (int)v;
	return true;
}

int
bc_amz_date_parse(const char *s, time_t *t)
{
	int y, mon, d, h, mi, sec;

	if (strnlen(s, 17) != 16 || s[8] != 'T' || s[15] != 'Z' ||
	    !field(s, 4, &y) || !field(s + 4, 2, &mon) ||
	    !field(s + 6, 2, &d) || !field(s + 9, 2, &h) ||
	    !field(s + 11, 2, &mi) || !field(s + 13, 2, &sec))
		return BC_EINVAL;
	return make_time(y, mon, d, h, mi, sec, t);
}

int
bc_iso8601_parse(const char *s, time_t *t)
{
	cur_t c;
	int y, mon, d, h, mi, sec, oh = 0, om = 0, frac, sign = 0, rv;

	if (!cur_init(&c, s))
		return BC_EINVAL;
	if (!cur_digits(&c, 4, 4, &y) || !cur_char(&c, '-') ||
	    !cur_digits(&c, 2, 2, &mon) || !cur_char(&c, '-') ||
	    !cur_digits(&c, 2, 2, &d) ||
	    !(cur_char(&c, 'T') || cur_char(&c, 't')) ||
	    !cur_time(&c, &h, &mi, &sec))
		return BC_EINVAL;
	if (cur_char(&c, '.') && !cur_digits(&c, 1, 9, &frac))
		return BC_EINVAL;
	if (cur_char(&c, 'Z') || cur_char(&c, 'z'))
		sign = 0;
	else if (cur_char(&c, '+'))
		sign = 1;
	else if (cur_char(&c, '-'))
		sign = -1;
	else
		return BC_EINVAL;
	if (sign != 0) {
		/* HH:MM, or HHMM read as one number */
		const char *at = c.p;

		if (c.end - at >= 5 && at[2] == ':') {
			if (!cur_digits(&c, 2, 2, &oh) || !cur_char(&c, ':') ||
			    !cur_digits(&c, 2, 2, &om))
				return BC_EINVAL;
		} else if (cur_digits(&c, 4, 4, &oh)) {
			om = oh % 100;
			oh /= 100;
		} else {
			return BC_EINVAL;
		}
		if (oh > 23 || om > 59)
			return BC_EINVAL;
	}
	if (c.p != c.end)
		return BC_EINVAL;
	rv = make_time(y, mon, d, h, mi, sec, t);
	if (rv == 0)
		*t -= (time_t)sign * (oh * 3600 + om * 60);
	return rv;
}

static int
make_time(int y, int mon, int d, int h, int mi, int s, time_t *t)
{
	if (y < 1 || y > 9999 || mon < 1 || mon > 12 || d < 1 ||
	    d > days_in_month(y, mon) || h > 23 || mi > 59 || s > 60)
		return BC_EINVAL;
	if (s == 60)
		s = 59;   /* a leap second: the moment just before */
	*t = (time_t)(days_from_civil(y, (unsigned)mon, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + s);
	return 0;
}

int
bc_http_date_parse(const char *s, time_t *t)
{
	cur_t c;
	int y, mon, d, h, mi, sec;

	if (!cur_init(&c, s))
		return BC_EINVAL;
	while (c.p < c.end && is_ows(*c.p))
		c.p++;
	while (c.end > c.p && is_ows(c.end[-1]))
		c.end--;
	if (c.end - c.p == 16 && c.p[8] == 'T') {
		char amz[17];

		memcpy(amz, c.p, 16);
		amz[16] = '\0';
		return bc_amz_date_parse(amz, t);
	}
	if (c.p < c.end && *c.p >= '0' && *c.p <= '9')
		return imf_rest(&c, t);   /* no weekday */

	if (cur_name(&c, wkdays_long, 7) >= 0) {
		/* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
		if (!cur_char(&c, ',') || !cur_char(&c, ' ') ||
		    !cur_digits(&c, 2, 2, &d) || !cur_char(&c, '-'))
			return BC_EINVAL;
		mon = cur_name(&c, months, 12) + 1;
		if (mon == 0 || !cur_char(&c, '-') ||
		    !cur_digits(&c, 2, 2, &y) || !cur_char(&c, ' ') ||
		    !cur_time(&c, &h, &mi, &sec) || !cur_char(&c, ' ') ||
		    !cur_gmt(&c) || c.p != c.end)
			return BC_EINVAL;
		y += y < 70 ? 2000 : 1900;
		return make_time(y, mon, d, h, mi, sec, t);
	}
	if (cur_name(&c, wkdays, 7) < 0)
		return BC_EINVAL;
	if (cur_char(&c, ',')) {
		/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
		if (!cur_char(&c, ' '))
			return BC_EINVAL;
		while (cur_char(&c, ' '))
			;
		return imf_rest(&c, t);
	}
	/* asctime: Sun Nov  6 08:49:37 1994 */
	if (!cur_char(&c, ' '))
		return BC_EINVAL;
	mon = cur_name(&c, months, 12) + 1;
	if (mon == 0 || !cur_char(&c, ' '))
		return BC_EINVAL;
	if (cur_char(&c, ' ')) {
		if (!cur_digits(&c, 1, 1, &d))
			return BC_EINVAL;
	} else if (!cur_digits(&c, 2, 2, &d)) {
		return BC_EINVAL;
	}
	if (!cur_char(&c, ' ') || !cur_time(&c, &h, &mi, &sec) ||
	    !cur_char(&c, ' ') || !cur_digits(&c, 4, 4, &y) || c.p != c.end)
		return BC_EINVAL;
	return make_time(y, mon, d, h, mi, sec, t);
}

/* Splits t (clamped to years 0..9999) into UTC fields. */
static void
split_time(time_t t, int *y, int *mon, int *d, int *h, int *mi, int *s,
    int *wday)
{
	const int64_t lo = -62167219200LL, hi = 253402300799LL;
	int64_t v = (int64_t)t, days, secs, z, era, yy;
	unsigned doe, yoe, doy, mp;

	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	days = v >= 0 ? v / 86400 : -((-v + 86399) / 86400);
	secs = v - days * 86400;
	*h = (int)(secs / 3600);
	*mi = (int)(secs % 3600 / 60);
	*s = (int)(secs % 60);
	*wday = (int)(((days % 7) + 11) % 7);   /* 1970-01-01: Thursday */
	/* civil_from_days (H. Hinnant) */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	yy = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yy + (*mon <= 2));
}

void
bc_http_date(time_t t, char out[BC_HTTP_DATE_LEN])
{
	int y, mon, d, h, mi, s, wd;

	split_time(t, &y, &mon, &d, &h, &mi, &s, &wd);
	snprintf(out, BC_HTTP_DATE_LEN, "%s, %02d %s %04d %02d:%02d:%02d GMT",
	    wkdays[wd], d, months[mon - 1], y, h, mi, s);
}

void
bc_iso8601_date(time_t t, char out[25])
{
	int y, mon, d, h, mi, s, wd;

	split_time(t, &y, &mon, &d, &h, &mi, &s, &wd);
	snprintf(out, 25, "%04d-%02d-%02dT%02d:%02d:%02d.000Z", y, mon, d, h,
	    mi, s);
}
