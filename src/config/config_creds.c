/*
 * config_creds.c — one profile out of an AWS shared credentials file (see
 * config_creds.h). Follows botocore's reading of the INI form: '=' or ':'
 * between key and value, keys case-insensitive, a line indented deeper
 * than the key before it continues that key (ignored here: nested
 * settings are not credentials). Pure; no shared state.
 */
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
bc_creds_fini(bc_creds_t *c)
{
	if (c == NULL)
		return;
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	c->access_key = c->secret_key = c->session_token = NULL;
}

int
bc_creds_load_file(const char *path, const char *profile, bc_creds_t *out,
    char *err, size_t errlen)
{
	char line[BC_CREDS_MAX_LINE + 2];
	bc_creds_t got = { NULL, NULL, NULL };
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
	bc_creds_fini(out);
	*out = got;
	got.access_key = got.secret_key = got.session_token = NULL;
fail:
	if (fp != NULL)
		fclose(fp);
	bc_creds_fini(&got);
	return rv;
}
