/*
 * config_creds.c — one profile out of an AWS shared credentials file (see
 * config_creds.h). Follows botocore's reading of the INI form: '=' or ':'
 * between key and value, keys case-insensitive, a line indented deeper
 * than the key before it continues that key (ignored here: nested
 * settings are not credentials). Pure; no shared state.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_creds.h"
#include "util/util_error.h"
#include "util/util_num.h"

/* Trims blanks at both ends in place; returns the new start. */
static char *
trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Replaces *slot with a copy of v ("" stores NULL). */
static int
set_dup(char **slot, const char *v)
{
	char *p = NULL;

	if (*v != '\0') {
		p = strdup(v);
		if (p == NULL)
			return BC_ENOMEM;
	}
	free(*slot);
	*slot = p;
	return 0;
}

void
bc_config_keypair_fini(bc_config_keypair_t *c)
{
	if (c == NULL)
		return;
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	c->access_key = c->secret_key = c->session_token = NULL;
}

int
bc_config_creds_load_file(const char *path, const char *profile,
    bc_config_keypair_t *out,
    char *err, size_t errlen)
{
	char line[BC_CREDS_MAX_LINE + 2];
	bc_config_keypair_t got = { NULL, NULL, NULL };
	bool in_profile = false, found = false;
	long key_indent = -1;   /* indentation of the last key; -1: none */
	unsigned lineno = 0;
	FILE *fp;
	int rv = 0;

	fp = fopen(path, "r");
	if (fp == NULL) {
		rv = errno == ENOENT ? BC_ENOENT : -errno;
		bc_errf(err, errlen, "%s: %s", path, bc_strerror(rv));
		goto fail;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		size_t len = strlen(line), indent;
		char *s, *delim, *name, *value;

		lineno++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s:%u: line longer than %d bytes",
			    path, lineno, BC_CREDS_MAX_LINE);
			goto fail;
		}
		indent = strspn(line, " \t");
		s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (key_indent >= 0 && (long)indent > key_indent)
			continue;       /* continuation of the key above */
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (end == NULL || trim(end + 1)[0] != '\0') {
				rv = BC_EINVAL;
				bc_errf(err, errlen, "%s:%u: malformed section "
				    "header", path, lineno);
				goto fail;
			}
			*end = '\0';
			in_profile = strcmp(trim(s + 1), profile) == 0;
			if (in_profile)
				found = true;
			key_indent = -1;
			continue;
		}
		delim = strpbrk(s, "=:");
		if (delim == NULL) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s:%u: expected 'name = value'",
			    path, lineno);
			goto fail;
		}
		*delim = '\0';
		name = trim(s);
		value = trim(delim + 1);
		key_indent = (long)indent;
		if (!in_profile)
			continue;
		if (strcasecmp(name, "aws_access_key_id") == 0)
			rv = set_dup(&got.access_key, value);
		else if (strcasecmp(name, "aws_secret_access_key") == 0)
			rv = set_dup(&got.secret_key, value);
		else if (strcasecmp(name, "aws_session_token") == 0)
			rv = set_dup(&got.session_token, value);
		if (rv < 0) {
			bc_errf(err, errlen, "%s: out of memory", path);
			goto fail;
		}
	}
	if (ferror(fp)) {
		rv = BC_EIO;
		bc_errf(err, errlen, "%s: read error", path);
		goto fail;
	}
	if (!found) {
		rv = BC_ENOENT;
		bc_errf(err, errlen, "%s: no profile '%s'", path, profile);
		goto fail;
	}
	if (got.access_key == NULL || got.secret_key == NULL) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "%s: profile '%s' has no %s", path, profile,
		    got.access_key == NULL ? "aws_access_key_id" :
		    "aws_secret_access_key");
		goto fail;
	}
	bc_config_keypair_fini(out);
	*out = got;
	got.access_key = got.secret_key = got.session_token = NULL;
fail:
	if (fp != NULL)
		fclose(fp);
	bc_config_keypair_fini(&got);
	return rv;
}

/* ---- the sources --------------------------------------------------------- */

static const char *const source_names[] = {
	[BC_CREDS_NONE] = "none",
	[BC_CREDS_ENV] = "env",
	[BC_CREDS_WEB_IDENTITY] = "web-identity",
	[BC_CREDS_PROFILE] = "profile",
	[BC_CREDS_ECS] = "ecs",
	[BC_CREDS_IMDS] = "imds",
	[BC_CREDS_AUTO] = "auto",
};

const char *
bc_creds_source_name(bc_creds_source_t s)
{
	if ((unsigned)s >= sizeof(source_names) / sizeof(*source_names))
		return "?";
	return source_names[s];
}

int
bc_creds_source_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(source_names) / sizeof(*source_names);
	    i++)
		if (strcmp(s, source_names[i]) == 0)
			return (int)i;
	return -1;
}

bool
bc_creds_source_fetched(bc_creds_source_t s)
{
	return s == BC_CREDS_WEB_IDENTITY || s == BC_CREDS_ECS ||
	    s == BC_CREDS_IMDS;
}

void
bc_config_creds_fini(bc_config_creds_t *cc)
{
	if (cc == NULL)
		return;
	free(cc->role_arn);
	free(cc->token_file);
	free(cc->session_name);
	free(cc->sts_url);
	free(cc->ecs_url);
	free(cc->ecs_token);
	free(cc->ecs_token_file);
	free(cc->imds_url);
	memset(cc, 0, sizeof(*cc));
}

/* env's value of name, NULL when unset or empty. */
static const char *
env_val(char **env, const char *name)
{
	size_t n = strlen(name);

	for (; env != NULL && *env != NULL; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return (*env)[n + 1] != '\0' ? *env + n + 1 : NULL;
	return NULL;
}

/* Printable ASCII, no blanks, at most max bytes. */
static bool
plain(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			return false;
	return true;
}

/* What url_check() lets a URL have after its host[:port]. */
enum url_path { URL_NO_PATH, URL_PATH, URL_PATH_TRIMMED };

/* Checks an "http(s)://host[:port][/path]" URL (no user info, query or
 * fragment; with URL_NO_PATH at most a "/") and returns a copy (with
 * URL_NO_PATH and URL_PATH_TRIMMED without trailing '/'s), or NULL (*rv:
 * BC_EINVAL or BC_ENOMEM). *https and the host (without brackets or
 * port, into host[hostlen]) are reported. */
static char *
url_check(const char *u, enum url_path path, bool *https, char *host,
    size_t hostlen, int *rv)
{
	const char *h, *end, *hend;
	size_t n;
	char *out;

	*rv = BC_EINVAL;
	if (!plain(u, BC_CREDS_MAX_URL) || strpbrk(u, "?#@") != NULL)
		return NULL;
	if (strncasecmp(u, "http://", 7) == 0) {
		h = u + 7;
		*https = false;
	} else if (strncasecmp(u, "https://", 8) == 0) {
		h = u + 8;
		*https = true;
	} else {
		return NULL;
	}
	end = h + strcspn(h, "/");
	if (end == h || (path == URL_NO_PATH && *end != '\0' &&
	    strspn(end, "/") != strlen(end)))
		return NULL;
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (hend == NULL || hend == h + 1)
			return NULL;
		n = (size_t)(hend - h - 1);
		h++;
		hend++;
	} else {
		hend = memchr(h, ':', (size_t)(end - h));
		if (hend == NULL)
			hend = end;
		n = (size_t)(hend - h);
	}
	if (n == 0 || n >= hostlen)
		return NULL;
	if (hend < end) {
		/* a port: 1-65535 */
		uint16_t port;

		if (*hend != ':' || bc_parse_port(hend + 1,
		    (size_t)(end - hend - 1), &port) < 0)
			return NULL;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	n = strlen(u);
	if (path != URL_PATH)
		while (n > (size_t)(end - u) && u[n - 1] == '/')
			n--;
	out = strndup(u, n);
	*rv = out != NULL ? 0 : BC_ENOMEM;
	return out;
}

static int
dup_to(char **slot, const char *v)
{
	free(*slot);
	*slot = strdup(v);
	return *slot != NULL ? 0 : BC_ENOMEM;
}

static bool
region_ok(const char *r)
{
	size_t n = strlen(r);

	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)r[i]) && !isdigit((unsigned char)r[i])
		    && r[i] != '-')
			return false;
	return true;
}

int
bc_config_creds_web_identity(bc_config_creds_t *cc, char **env,
    const char *region, char *err, size_t errlen)
{
	const char *file = env_val(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *arn = env_val(env, "AWS_ROLE_ARN");
	const char *name = env_val(env, "AWS_ROLE_SESSION_NAME");
	const char *sts = env_val(env, "AWS_ENDPOINT_URL_STS");
	const char *reg = env_val(env, "AWS_REGION");
	bool https;
	char host[256], url[128];
	int rv;

	if (file == NULL && arn == NULL)
		return BC_ENOENT;
	if (file == NULL || arn == NULL) {
		bc_errf(err, errlen, "%s is set but %s is not (web identity "
		    "needs both)", file != NULL ?
		    "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN",
		    file != NULL ? "AWS_ROLE_ARN" :
		    "AWS_WEB_IDENTITY_TOKEN_FILE");
		return BC_EINVAL;
	}
	if (!plain(arn, BC_CREDS_MAX_ARN) || strncmp(arn, "arn:", 4) != 0) {
		bc_errf(err, errlen, "AWS_ROLE_ARN: '%.64s' is not a role ARN "
		    "(arn:PARTITION:iam::ACCOUNT:role/NAME)", arn);
		return BC_EINVAL;
	}
	if (strlen(file) >= 4096) {
		bc_errf(err, errlen, "AWS_WEB_IDENTITY_TOKEN_FILE: path too "
		    "long");
		return BC_EINVAL;
	}
	if (name != NULL) {
		size_t n = strlen(name);
		bool ok = n >= 2 && n <= 64;

		for (size_t i = 0; ok && i < n; i++)
			ok = isalnum((unsigned char)name[i]) ||
			    strchr("_+=,.@-", name[i]) != NULL;
		if (!ok) {
			bc_errf(err, errlen, "AWS_ROLE_SESSION_NAME: '%.64s' "
			    "must be 2-64 of A-Z a-z 0-9 _+=,.@-", name);
			return BC_EINVAL;
		}
	}
	if (reg == NULL)
		reg = env_val(env, "AWS_DEFAULT_REGION");
	if (reg == NULL)
		reg = region;
	if (sts == NULL && (reg == NULL || !region_ok(reg))) {
		bc_errf(err, errlen, "web identity: region '%.64s' (AWS_REGION, "
		    "AWS_DEFAULT_REGION or --region) cannot name an STS "
		    "endpoint", reg != NULL ? reg : "");
		return BC_EINVAL;
	}
	if (sts == NULL) {
		snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com%s",
		    reg, strncmp(reg, "cn-", 3) == 0 ? ".cn" : "");
		sts = url;
	}
	free(cc->sts_url);
	cc->sts_url = url_check(sts, URL_PATH_TRIMMED, &https, host,
	    sizeof(host), &rv);
	if (rv == BC_EINVAL)
		bc_errf(err, errlen, "AWS_ENDPOINT_URL_STS: '%.64s' is not an "
		    "http(s)://host[:port][/path] URL", sts);
	if (rv == 0)
		rv = dup_to(&cc->role_arn, arn);
	if (rv == 0)
		rv = dup_to(&cc->token_file, file);
	if (rv == 0 && name != NULL)
		rv = dup_to(&cc->session_name, name);
	if (rv == 0)
		cc->source = BC_CREDS_WEB_IDENTITY;
	if (rv == BC_ENOMEM)
		bc_errf(err, errlen, "out of memory");
	return rv;
}

/* A host the SDKs let container credentials come from over plain http. */
static bool
ecs_http_host_ok(const char *h)
{
	if (strcasecmp(h, "localhost") == 0 || strcmp(h, "::1") == 0 ||
	    strcmp(h, "169.254.170.2") == 0 ||
	    strcmp(h, "169.254.170.23") == 0 ||
	    strcasecmp(h, "fd00:ec2::23") == 0)
		return true;
	/* 127.0.0.0/8, written as a dotted quad */
	if (strncmp(h, "127.", 4) == 0) {
		struct in_addr a;

		return inet_pton(AF_INET, h, &a) == 1;
	}
	return false;
}

int
bc_config_creds_ecs(bc_config_creds_t *cc, char **env, char *err,
    size_t errlen)
{
	const char *rel = env_val(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = env_val(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *tok = env_val(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
	const char *tfile = env_val(env,
	    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	char host[256], *url = NULL;
	bool https = false;
	int rv = 0;

	if (rel == NULL && full == NULL)
		return BC_ENOENT;
	if (rel != NULL) {
		size_t n = strlen(rel);

		if (rel[0] != '/' || !plain(rel, BC_CREDS_MAX_URL - 32) ||
		    strpbrk(rel, "#") != NULL) {
			bc_errf(err, errlen, "AWS_CONTAINER_CREDENTIALS_RELATIVE_"
			    "URI: '%.64s' must be a path starting with '/'",
			    rel);
			return BC_EINVAL;
		}
		url = malloc(n + 32);
		if (url == NULL)
			goto nomem;
		snprintf(url, n + 32, "http://169.254.170.2%s", rel);
	} else {
		url = url_check(full, URL_PATH, &https, host, sizeof(host),
		    &rv);
		if (rv == BC_ENOMEM)
			goto nomem;
		if (rv == 0 && !https && !ecs_http_host_ok(host)) {
			free(url);
			url = NULL;
			rv = BC_EINVAL;
		}
		if (rv < 0) {
			bc_errf(err, errlen, "AWS_CONTAINER_CREDENTIALS_FULL_"
			    "URI: '%.64s' must be https://..., or http:// to a "
			    "loopback host, 169.254.170.2, 169.254.170.23 or "
			    "[fd00:ec2::23]", full);
			return rv;
		}
		/* the authorization token goes with the full URI only */
		if (tfile == NULL && tok != NULL &&
		    (strlen(tok) > BC_CREDS_MAX_TOKEN ||
		    strpbrk(tok, "\r\n") != NULL)) {
			free(url);
			bc_errf(err, errlen, "AWS_CONTAINER_AUTHORIZATION_TOKEN: "
			    "more than %d bytes, or a CR or LF",
			    BC_CREDS_MAX_TOKEN);
			return BC_EINVAL;
		}
		if ((tfile != NULL && dup_to(&cc->ecs_token_file, tfile) < 0) ||
		    (tfile == NULL && tok != NULL &&
		    dup_to(&cc->ecs_token, tok) < 0)) {
			free(url);
			goto nomem;
		}
	}
	free(cc->ecs_url);
	cc->ecs_url = url;
	cc->source = BC_CREDS_ECS;
	return 0;
nomem:
	bc_errf(err, errlen, "out of memory");
	return BC_ENOMEM;
}

/* A decimal in 1..max from env (default def when unset). */
static int
env_small(char **env, const char *name, unsigned max, unsigned def,
    unsigned *out, char *err, size_t errlen)
{
	const char *v = env_val(env, name);
	uint64_t n = 0;

	*out = def;
	if (v == NULL)
		return 0;
	if (bc_parse_u64_str(v, 10, max, &n) < 0 || n < 1) {
		bc_errf(err, errlen, "%s: '%.32s' must be 1-%u", name, v, max);
		return BC_EINVAL;
	}
	*out = (unsigned)n;
	return 0;
}

int
bc_config_creds_imds(bc_config_creds_t *cc, char **env, char *err,
    size_t errlen)
{
	const char *off = env_val(env, "AWS_EC2_METADATA_DISABLED");
	const char *ep = env_val(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
	const char *mode = env_val(env,
	    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
	unsigned secs, tries;
	char host[256], *url;
	bool https;
	int rv;

	if (off != NULL && strcasecmp(off, "true") == 0)
		return BC_ENOENT;
	if (mode != NULL && strcasecmp(mode, "IPv4") != 0 &&
	    strcasecmp(mode, "IPv6") != 0) {
		bc_errf(err, errlen, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: "
		    "'%.32s' must be IPv4 or IPv6", mode);
		return BC_EINVAL;
	}
	if (ep == NULL)
		ep = mode != NULL && strcasecmp(mode, "IPv6") == 0 ?
		    "http://[fd00:ec2::254]" : "http://169.254.169.254";
	rv = env_small(env, "AWS_METADATA_SERVICE_TIMEOUT", 60, 1, &secs,
	    err, errlen);
	if (rv == 0)
		rv = env_small(env, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", 10, 3,
		    &tries, err, errlen);
	if (rv < 0)
		return rv;
	url = url_check(ep, URL_NO_PATH, &https, host, sizeof(host), &rv);
	if (rv == BC_EINVAL) {
		bc_errf(err, errlen, "AWS_EC2_METADATA_SERVICE_ENDPOINT: "
		    "'%.64s' is not an http(s)://host[:port] URL", ep);
		return rv;
	}
	if (rv < 0) {
		bc_errf(err, errlen, "out of memory");
		return rv;
	}
	free(cc->imds_url);
	cc->imds_url = url;
	cc->imds_timeout_ms = secs * 1000;
	cc->imds_attempts = tries;
	cc->source = BC_CREDS_IMDS;
	return 0;
}
