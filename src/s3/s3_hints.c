/*
 * s3_hints.c — x-bucketcache-* request hints (s3_hints.h). Pure.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_hints.h"
#include "s3/s3_request.h"
#include "util/util_error.h"
#include "util/util_num.h"

static const char *const pattern_names[] = {
	[BC_S3_PATTERN_NONE] = "",
	[BC_S3_PATTERN_SEQUENTIAL] = "sequential",
	[BC_S3_PATTERN_SHUFFLE] = "shuffle",
	[BC_S3_PATTERN_RANDOM] = "random",
	[BC_S3_PATTERN_ONCE] = "once",
};

void
bc_s3_hints_init(bc_s3_hints_t *h)
{
	memset(h, 0, sizeof(*h));
}

void
bc_s3_hints_fini(bc_s3_hints_t *h)
{
	for (size_t i = 0; i < h->n_next; i++)
		free(h->next[i]);
	free(h->next);
	bc_s3_hints_init(h);
}

bool
bc_s3_hint_job_ok(const char *s, size_t n)
{
	if (n == 0 || n > BC_S3_HINT_JOB_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("._~:@+=-", c) != NULL) ||
		    c == '\0')
			return false;
	}
	return true;
}

bool
bc_s3_hint_key_ok(const char *key, size_t n)
{
	size_t seg = 0;

	if (n == 0 || n > BC_S3_MAX_KEY || memchr(key, '\0', n) != NULL)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && key[i] != '/')
			continue;
		if ((i - seg == 1 && key[seg] == '.') ||
		    (i - seg == 2 && key[seg] == '.' && key[seg + 1] == '.'))
			return false;
		seg = i + 1;
	}
	return true;
}

const char *
bc_s3_pattern_name(bc_s3_pattern_t p)
{
	return (size_t)p < sizeof(pattern_names) / sizeof(*pattern_names) ?
	    pattern_names[p] : "";
}

bool
bc_s3_hint_header(const char *name)
{
	return strcasecmp(name, BC_S3_HINT_JOB) == 0 ||
	    strcasecmp(name, BC_S3_HINT_NEXT) == 0 ||
	    strcasecmp(name, BC_S3_HINT_PATTERN) == 0 ||
	    strcasecmp(name, BC_S3_HINT_EPOCH) == 0;
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* every '%' starts an escape of two hex digits other than %00, so that
 * bc_s3_pct_decode fails only for want of memory */
static bool
escapes_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%')
			continue;
		if (i + 2 >= n)
			return false;
		if (!is_hex(s[i + 1]) || !is_hex(s[i + 2]) ||
		    (s[i + 1] == '0' && s[i + 2] == '0'))
			return false;
		i += 2;
	}
	return true;
}

/* 1: parsed into h; 0: malformed; BC_ENOMEM */
static int
parse_next(bc_s3_hints_t *h, const char *v)
{
	size_t len = strlen(v), n = 0;
	char **keys = NULL;
	const char *p = v, *end = v + len;
	int rv = 0;

	if (len > BC_S3_HINT_HEADER_MAX)
		return 0;
	keys = calloc(BC_S3_HINT_NEXT_MAX, sizeof(*keys));
	if (keys == NULL)
		return BC_ENOMEM;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma != NULL ? comma : end;
		char *k;

		while (p < e && is_blank(*p))
			p++;
		while (e > p && is_blank(e[-1]))
			e--;
		if (p == e || n == BC_S3_HINT_NEXT_MAX)
			goto out;
		if (!escapes_ok(p, (size_t)(e - p)))
			goto out;
		k = bc_s3_pct_decode(p, (size_t)(e - p));
		if (k == NULL) {
			rv = BC_ENOMEM;
			goto out;
		}
		keys[n++] = k;
		if (!bc_s3_hint_key_ok(k, strlen(k)))
			goto out;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	h->next = keys;
	h->n_next = n;
	return 1;
out:
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return rv;
}

static bool
parse_pattern(bc_s3_hints_t *h, const char *v)
{
	for (size_t i = 1; i < sizeof(pattern_names) / sizeof(*pattern_names);
	    i++)
		if (strcasecmp(v, pattern_names[i]) == 0) {
			h->pattern = (bc_s3_pattern_t)i;
			return true;
		}
	return false;
}

int
bc_s3_hints_parse(bc_s3_hints_t *h, const bc_kvlist_t *headers)
{
	bool seen_job = false, seen_next = false, seen_pat = false,
	    seen_epoch = false;

	for (size_t i = 0; i < headers->n; i++) {
		const char *name = headers->v[i].name;
		const char *v = headers->v[i].value;
		size_t vn = strlen(v);
		bool ok = false;

		if (strncasecmp(name, "x-bucketcache-", 14) != 0 ||
		    !bc_s3_hint_header(name))
			continue;
		if (strcasecmp(name, BC_S3_HINT_JOB) == 0) {
			ok = !seen_job && bc_s3_hint_job_ok(v, vn);
			seen_job = true;
			if (ok)
				memcpy(h->job, v, vn + 1);
		} else if (strcasecmp(name, BC_S3_HINT_NEXT) == 0) {
			int r = 0;

			if (!seen_next) {
				r = parse_next(h, v);
				if (r < 0)
					return r;
			}
			seen_next = true;
			ok = r == 1;
		} else if (strcasecmp(name, BC_S3_HINT_PATTERN) == 0) {
			ok = !seen_pat && parse_pattern(h, v);
			seen_pat = true;
		} else {
			uint64_t e;

			ok = !seen_epoch && bc_u64_parse(v, vn, &e) &&
			    e <= UINT32_MAX;
			seen_epoch = true;
			if (ok) {
				h->has_epoch = true;
				h->epoch = (uint32_t)e;
			}
		}
		if (!ok)
			h->malformed++;
	}
	return 0;
}
