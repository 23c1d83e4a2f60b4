/*
 * config_redis.c — the --redis URL parser (config_redis.h).
 *
 * Order of the checks: length, blanks and control characters, scheme,
 * then user:pass (everything before the last '@'), host, port, database.
 * Each failure names the URL as show() redacts it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_redis.h"
#include "util/util_crypto.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define SHOW_MAX 64   /* bytes of the URL an error shows */

/* url as errors show it: what precedes its last '@' (after "scheme://",
 * when there is one) as "***", bytes that are not printable ASCII as '?',
 * cut at SHOW_MAX bytes. */
static void
show(const char *url, char *out, size_t outlen)
{
	const char *at = strrchr(url, '@'), *sep = strstr(url, "://");
	const char *hide = NULL;
	size_t o = 0;

	if (at != NULL)
		hide = sep != NULL && sep < at ? sep + 3 : url;
	for (const char *p = url; *p != '\0' && o + 1 < outlen &&
	    o < SHOW_MAX; p++) {
		unsigned char ch = (unsigned char)*p;

		if (p == hide) {
			o += (size_t)snprintf(out + o, outlen - o, "***@");
			p = at;
			continue;
		}
		out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

static bool
host_char_ok(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' ||
	    ch == '_';
}

/* The n bytes at s percent-decoded into a new string in *out. Returns 0,
 * BC_EINVAL (a '%' without two hex digits, or a decoded NUL) or
 * BC_ENOMEM. */
static int
pct_decode(const char *s, size_t n, char **out)
{
	char *d = malloc(n + 1);
	size_t o = 0;

	*out = NULL;
	if (d == NULL)
		return BC_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] != '%') {
			d[o++] = s[i];
			continue;
		}
		hi = i + 2 < n ? bc_hexval(s[i + 1]) : -1;
		lo = i + 2 < n ? bc_hexval(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(d);
			return BC_EINVAL;
		}
		d[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	d[o] = '\0';
	*out = d;
	return 0;
}

/* Parses "user:pass" (n bytes) into a. Writes why on error. */
static int
parse_userinfo(const char *s, size_t n, bc_redis_addr_t *a, const char **why)
{
	const char *colon = memchr(s, ':', n);
	size_t ulen;
	int rv;

	if (n == 0) {
		*why = "nothing before '@' (want redis://[[user]:pass@]host)";
		return BC_EINVAL;
	}
	if (colon == NULL) {
		*why = "a user needs a password (redis://user:pass@host)";
		return BC_EINVAL;
	}
	ulen = (size_t)(colon - s);
	if (colon + 1 == s + n) {
		*why = "empty password";
		return BC_EINVAL;
	}
	*why = "bad percent-encoding in the user or password";
	if (ulen > 0) {
		rv = pct_decode(s, ulen, &a->user);
		if (rv < 0)
			return rv;
	}
	return pct_decode(colon + 1, n - ulen - 1, &a->pass);
}

/* Parses "host[:port]" (n bytes) into a. Writes why on error. */
static int
parse_hostport(const char *s, size_t n, bc_redis_addr_t *a, const char **why)
{
	const char *host = s, *p;
	size_t hlen, plen;

	if (n > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		char addr[INET6_ADDRSTRLEN + 1];
		struct in6_addr a6;

		if (rb == NULL || (size_t)(rb - s - 1) >= sizeof(addr)) {
			*why = "bad IPv6 address";
			return BC_EINVAL;
		}
		memcpy(addr, s + 1, (size_t)(rb - s - 1));
		addr[rb - s - 1] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) != 1) {
			*why = "bad IPv6 address";
			return BC_EINVAL;
		}
		host = s + 1;
		hlen = (size_t)(rb - s - 1);
		p = rb + 1;
		if (p < s + n && *p != ':') {
			*why = "junk after ']'";
			return BC_EINVAL;
		}
	} else {
		p = memchr(s, ':', n);
		hlen = p != NULL ? (size_t)(p - s) : n;
		if (p == NULL)
			p = s + n;
		if (hlen == 0) {
			*why = "no host";
			return BC_EINVAL;
		}
		for (size_t i = 0; i < hlen; i++) {
			if (!host_char_ok(s[i])) {
				*why = "bad character in host (IPv6 addresses "
				    "go in [brackets])";
				return BC_EINVAL;
			}
		}
		if (hlen > BC_REDIS_HOST_MAX) {
			*why = "host name longer than 255 bytes";
			return BC_EINVAL;
		}
	}
	a->port = BC_REDIS_DEFAULT_PORT;
	if (p < s + n) {
		p++;
		plen = (size_t)(s + n - p);
		if (bc_parse_port(p, plen, &a->port) < 0) {
			*why = "port must be 1-65535";
			return BC_EINVAL;
		}
	}
	a->host = strndup(host, hlen);
	return a->host != NULL ? 0 : BC_ENOMEM;
}

/* Parses the path after host[:port]: "", "/" or "/DB". */
static int
parse_db(const char *s, bc_redis_addr_t *a, const char **why)
{
	uint64_t db = 0;

	if (*s == '\0' || strcmp(s, "/") == 0)
		return 0;
	s++;
	if (bc_parse_u64_str(s, 10, BC_REDIS_DB_MAX, &db) < 0) {
		*why = "the database (after the '/') must be a number from 0 "
		    "to 2147483647";
		return BC_EINVAL;
	}
	a->db = (unsigned)db;
	return 0;
}

int
bc_config_redis_parse(const char *url, bc_redis_addr_t *a, char *err,
    size_t errlen)
{
	const char *rest, *at, *hp, *path, *why = NULL;
	char shown[SHOW_MAX + 8];
	size_t n = strnlen(url, BC_REDIS_URL_MAX + 1);
	int rv = 0;

	memset(a, 0, sizeof(*a));
	show(url, shown, sizeof(shown));
	if (n > BC_REDIS_URL_MAX) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "'%s': longer than %d bytes", shown,
		    BC_REDIS_URL_MAX);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if (isspace((unsigned char)url[i]) ||
		    iscntrl((unsigned char)url[i])) {
			rv = BC_EINVAL;
			why = "contains a blank or control character";
			goto fail;
		}
	}
	if (strncasecmp(url, "rediss://", 9) == 0) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "rediss://: TLS needs hiredis >= 1.0; "
		    "Debian 12's 0.14 has none");
		goto fail;
	}
	if (strncasecmp(url, "redis://", 8) != 0) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "'%s' must start with redis:// "
		    "(redis://[[user]:pass@]host[:port][/db])", shown);
		goto fail;
	}
	rest = url + 8;
	at = strrchr(rest, '@');
	hp = rest;
	if (at != NULL) {
		rv = parse_userinfo(rest, (size_t)(at - rest), a, &why);
		if (rv < 0)
			goto fail;
		hp = at + 1;
	}
	if (strpbrk(hp, "?#") != NULL) {
		rv = BC_EINVAL;
		why = "no query or fragment allowed";
		goto fail;
	}
	path = hp + strcspn(hp, "/");
	rv = parse_hostport(hp, (size_t)(path - hp), a, &why);
	if (rv == 0)
		rv = parse_db(path, a, &why);
fail:
	if (rv == BC_ENOMEM)
		bc_errf(err, errlen, "out of memory");
	else if (rv < 0 && why != NULL)
		bc_errf(err, errlen, "'%s': %s", shown, why);
	if (rv < 0)
		bc_config_redis_fini(a);
	return rv;
}

void
bc_config_redis_fini(bc_redis_addr_t *a)
{
	if (a == NULL)
		return;
	free(a->host);
	free(a->user);
	free(a->pass);
	memset(a, 0, sizeof(*a));
}
