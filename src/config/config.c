/*
 * config.c — the option table (config_table.h) expanded into defaults, one
 * parser per TYPE, the config file, BUCKETCACHE_* environment variables,
 * command-line flags and --help; then validation and derived fields
 * (upstream form, credentials, client keys, Redis URLs). See config.h.
 *
 * Runs on the main thread before anything else starts; afterwards the
 * bc_config_t is read-only and may be read from any thread (the lookups
 * bc_config_secret/_key/_key_allows only read). The struct owns every
 * string it points to; bc_config_fini() frees them all.
 *
 * Conventions: a STR option is never NULL ("" when unset). A LIST option
 * accumulates within one source; a higher-precedence source (file < env <
 * flags) that sets it replaces what lower sources gave. In the environment
 * a LIST value holds several entries separated by blanks. Errors are one
 * line "<where>: <what>", where <where> is "--name", "BUCKETCACHE_NAME" or
 * "FILE:LINE: name"; client secrets never appear in them.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/config_creds.h"
#include "policy/policy.h"
#include "util/util_error.h"
#include "util/util_log.h"
#include "util/util_num.h"

#define MAX_LINE    4096    /* config file line */
#define MAX_SECRET  1024
#define MAX_ACCESS  128
#define WHY_LEN     256
#define SHOW        "%.64s" /* values echoed in errors are cut here */

enum opt_type {
	OPT_STR, OPT_BOOL, OPT_UINT, OPT_SIZE, OPT_MEMSIZE, OPT_MS, OPT_LEVEL,
	OPT_LIST
};

/* Sources, in precedence order. */
enum opt_src { SRC_DEFAULT = 0, SRC_FILE, SRC_ENV, SRC_FLAG };

struct opt {
	const char    *name;
	enum opt_type  type;
	size_t         off;   /* of the field in bc_config_t */
	const char    *def;
	const char    *help;
};

static const struct opt opts[] = {
#define BC_OPT(field, name, type, def, help) \
	{ name, OPT_##type, offsetof(bc_config_t, field), def, help },
#include "config/config_table.h"
#undef BC_OPT
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

/* Parses v into the field at dst; on error writes why (no prefix). */
typedef int (*parse_fn)(void *dst, const char *v, char *why, size_t whylen);

static int parse_str(void *, const char *, char *, size_t);
static int parse_bool(void *, const char *, char *, size_t);
static int parse_uint(void *, const char *, char *, size_t);
static int parse_size(void *, const char *, char *, size_t);
static int parse_memsize(void *, const char *, char *, size_t);
static int parse_ms(void *, const char *, char *, size_t);
static int parse_level(void *, const char *, char *, size_t);
static int parse_list(void *, const char *, char *, size_t);

static const struct {
	const char *hint;     /* --help: the value's shape */
	parse_fn    parse;
} types[] = {
	[OPT_STR]   = { "TEXT",  parse_str },
	[OPT_BOOL]  = { NULL,    parse_bool },
	[OPT_UINT]  = { "N",     parse_uint },
	[OPT_SIZE]  = { "SIZE",  parse_size },
	[OPT_MEMSIZE] = { "SIZE|auto", parse_memsize },
	[OPT_MS]    = { "TIME",  parse_ms },
	[OPT_LEVEL] = { "LEVEL", parse_level },
	[OPT_LIST]  = { "VALUE", parse_list },
};

static void *
field(bc_config_t *c, const struct opt *o)
{
	return (char *)c + o->off;
}

static const struct opt *
opt_find(const char *name, size_t n)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (strlen(opts[i].name) == n &&
		    memcmp(opts[i].name, name, n) == 0)
			return &opts[i];
	return NULL;
}

/* BUCKETCACHE_<NAME>: name upper-cased, '-' as '_'. */
static void
env_name(const struct opt *o, char *out, size_t outlen)
{
	size_t n = (size_t)snprintf(out, outlen, "BUCKETCACHE_%s", o->name);

	for (size_t i = 0; i < n && i < outlen; i++)
		out[i] = out[i] == '-' ? '_' :
		    (char)toupper((unsigned char)out[i]);
}

static const char *
env_get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static bool
nonempty(const char *s)
{
	return s != NULL && *s != '\0';
}

static char *
trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* ---- one parser per TYPE ---------------------------------------------- */

static int
parse_str(void *dst, const char *v, char *why, size_t whylen)
{
	char **slot = dst, *p = strdup(v);

	if (p == NULL) {
		bc_errf(why, whylen, "out of memory");
		return BC_ENOMEM;
	}
	free(*slot);
	*slot = p;
	return 0;
}

static int
parse_bool(void *dst, const char *v, char *why, size_t whylen)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	bool *b = dst;

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*b = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*b = false;
			return 0;
		}
	}
	bc_errf(why, whylen, "'" SHOW "' is not yes or no", v);
	return BC_EINVAL;
}

/* Leading decimal digits of s into *out; *end after them. BC_EINVAL when
 * there is no digit, BC_ERANGE past UINT64_MAX. */
static int
parse_u64(const char *s, uint64_t *out, const char **end)
{
	ssize_t n = bc_u64_prefix(s, strlen(s), out);

	*end = s;
	if (n < 0)
		return (int)n;
	if (n == 0)
		return BC_EINVAL;
	*end = s + n;
	return 0;
}

static int
parse_uint(void *dst, const char *v, char *why, size_t whylen)
{
	const char *end;
	uint64_t n;
	int rv;

	rv = parse_u64(v, &n, &end);
	if (rv == 0 && *end != '\0')
		rv = BC_EINVAL;
	if (rv == 0 && (n > UINT32_MAX || n > UINT_MAX))
		rv = BC_ERANGE;
	if (rv == BC_ERANGE)
		bc_errf(why, whylen, "'" SHOW "' is too large (max %u)", v,
		    (unsigned)UINT32_MAX);
	else if (rv < 0)
		bc_errf(why, whylen, "'" SHOW "' is not a number", v);
	else
		*(unsigned *)dst = (unsigned)n;
	return rv;
}

/* n * mult into *out, BC_ERANGE on overflow. */
static int
mul_u64(uint64_t n, uint64_t mult, uint64_t *out)
{
	if (mult != 0 && n > UINT64_MAX / mult)
		return BC_ERANGE;
	*out = n * mult;
	return 0;
}

static int
parse_size(void *dst, const char *v, char *why, size_t whylen)
{
	static const char units[] = "KMGT";
	uint64_t n, mult = 1;
	const char *end, *u;
	int rv;

	rv = parse_u64(v, &n, &end);
	if (rv == 0 && *end != '\0') {
		u = strchr(units, toupper((unsigned char)*end));
		if (u != NULL) {
			mult = (uint64_t)1 << (10 * (u - units + 1));
			end++;
			if (*end == 'i' || *end == 'I') {
				end++;
				if (*end != 'B' && *end != 'b')
					rv = BC_EINVAL;
			}
		}
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end != '\0')
			rv = BC_EINVAL;
	}
	if (rv == 0)
		rv = mul_u64(n, mult, dst);
	if (rv == BC_ERANGE)
		bc_errf(why, whylen, "'" SHOW "' is too large", v);
	else if (rv < 0)
		bc_errf(why, whylen, "'" SHOW "' is not a size (like 512, "
		    "64K, 8M, 2G, 1T)", v);
	return rv;
}

static int
parse_memsize(void *dst, const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "auto") == 0) {
		*(uint64_t *)dst = BC_MEM_AUTO;
		return 0;
	}
	return parse_size(dst, v, why, whylen);
}

static int
parse_ms(void *dst, const char *v, char *why, size_t whylen)
{
	uint64_t n, mult;
	const char *end;
	int rv;

	rv = parse_u64(v, &n, &end);
	if (rv == 0) {
		if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
			mult = 1000;
		else if (strcmp(end, "ms") == 0)
			mult = 1;
		else if (strcmp(end, "m") == 0)
			mult = 60000;
		else if (strcmp(end, "h") == 0)
			mult = 3600000;
		else
			rv = BC_EINVAL;
	}
	if (rv == 0)
		rv = mul_u64(n, mult, dst);
	if (rv == BC_ERANGE)
		bc_errf(why, whylen, "'" SHOW "' is too large", v);
	else if (rv < 0)
		bc_errf(why, whylen, "'" SHOW "' is not a duration (like "
		    "250ms, 5s, 2m, 1h; a bare number is seconds)", v);
	return rv;
}

static int
parse_level(void *dst, const char *v, char *why, size_t whylen)
{
	int l = bc_log_level_parse(v);

	if (l < 0) {
		bc_errf(why, whylen, "'" SHOW "' is not error, warn, info or "
		    "debug", v);
		return BC_EINVAL;
	}
	*(int *)dst = l;
	return 0;
}

static void
list_clear(bc_strlist_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int
parse_list(void *dst, const char *v, char *why, size_t whylen)
{
	bc_strlist_t *l = dst;
	char **nv, *p;

	p = strdup(v);
	nv = p == NULL ? NULL : realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (nv == NULL) {
		free(p);
		bc_errf(why, whylen, "out of memory");
		return BC_ENOMEM;
	}
	l->v = nv;
	l->v[l->n++] = p;
	return 0;
}

/*
 * Sets option o from source src; srcs[] remembers, per option, the
 * highest source that set it (a LIST is cleared when a higher source
 * first sets it). where prefixes the error ("--threads").
 */
static int
opt_set(bc_config_t *c, const struct opt *o, const char *v, enum opt_src src,
    unsigned char *srcs, const char *where, char *err, size_t errlen)
{
	char why[WHY_LEN];
	size_t i = (size_t)(o - opts);
	int rv;

	if (o->type == OPT_LIST && srcs != NULL && srcs[i] < src)
		list_clear(field(c, o));
	if (srcs != NULL)
		srcs[i] = (unsigned char)src;
	why[0] = '\0';
	rv = types[o->type].parse(field(c, o), v, why, sizeof(why));
	if (rv < 0)
		bc_errf(err, errlen, "%s: %s", where, why);
	return rv;
}

/* ---- init / fini ------------------------------------------------------- */

static void
derived_fini(bc_config_t *c)
{
	for (size_t i = 0; i < c->nkeys; i++) {
		free(c->keys[i].access_key);
		free(c->keys[i].secret_key);
		for (size_t j = 0; j < c->keys[i].nallow; j++)
			free(c->keys[i].allow[j]);
		free(c->keys[i].allow);
	}
	free(c->keys);
	c->keys = NULL;
	c->nkeys = 0;
	bc_config_creds_fini(&c->creds);
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	free(c->upstream_dir);
	for (size_t i = 0; i < c->nredis_addrs; i++)
		bc_config_redis_fini(&c->redis_addrs[i]);
	free(c->redis_addrs);
	c->redis_addrs = NULL;
	c->nredis_addrs = 0;
	c->access_key = c->secret_key = c->session_token = NULL;
	c->upstream_dir = NULL;
	c->upstream_is_file = false;
}

int
bc_config_init(bc_config_t *c)
{
	int rv = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];

		if (o->type == OPT_LIST && o->def[0] == '\0')
			continue;
		/* a default that does not parse is caught by the tests;
		 * here only memory can run out */
		rv = opt_set(c, o, o->def, SRC_DEFAULT, NULL, o->name, NULL,
		    0);
		if (rv < 0)
			goto fail;
	}
fail:
	if (rv < 0)
		bc_config_fini(c);
	return rv;
}

void
bc_config_fini(bc_config_t *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];

		if (o->type == OPT_STR)
			free(*(char **)field(c, o));
		else if (o->type == OPT_LIST)
			list_clear(field(c, o));
	}
	derived_fini(c);
	memset(c, 0, sizeof(*c));
}

/* ---- sources ----------------------------------------------------------- */

/* The lines of a config file open as fp; path names it in errors. */
static int
load_stream(bc_config_t *c, FILE *fp, const char *path, unsigned char *srcs,
    char *err, size_t errlen)
{
	char line[MAX_LINE + 2], at[MAX_LINE + 64];
	unsigned lineno = 0;
	int rv = 0;

	while (fgets(line, sizeof(line), fp) != NULL) {
		size_t len = strlen(line), nlen;
		const struct opt *o;
		const char *val;
		char *s, *v;
		bool quoted = false;

		lineno++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s:%u: line longer than %d bytes",
			    path, lineno, MAX_LINE);
			goto fail;
		}
		s = trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		nlen = strcspn(s, " \t=");
		v = s + nlen;
		v += strspn(v, " \t");
		if (*v == '=')
			v++;
		v = trim(v);
		o = opt_find(s, nlen);
		if (o == NULL) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s:%u: unknown option '%.*s'",
			    path, lineno, (int)(nlen > 64 ? 64 : nlen), s);
			goto fail;
		}
		if (strcmp(o->name, "config") == 0) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s:%u: 'config' cannot be set in "
			    "a config file", path, lineno);
			goto fail;
		}
		if (*v == '"') {
			size_t vlen = strlen(v);

			if (vlen < 2 || v[vlen - 1] != '"') {
				rv = BC_EINVAL;
				bc_errf(err, errlen, "%s:%u: %s: unterminated "
				    "quote", path, lineno, o->name);
				goto fail;
			}
			v[vlen - 1] = '\0';
			v++;
			quoted = true;
		}
		val = v;
		if (*v == '\0' && !quoted) {
			if (o->type != OPT_BOOL) {
				rv = BC_EINVAL;
				bc_errf(err, errlen, "%s:%u: %s: missing value",
				    path, lineno, o->name);
				goto fail;
			}
			val = "yes";
		}
		snprintf(at, sizeof(at), "%s:%u: %s", path, lineno, o->name);
		rv = opt_set(c, o, val, SRC_FILE, srcs, at, err, errlen);
		if (rv < 0)
			goto fail;
	}
	if (ferror(fp)) {
		rv = BC_EIO;
		bc_errf(err, errlen, "%s: read error", path);
	}
fail:
	return rv;
}

static int
load_file(bc_config_t *c, const char *path, const char *where,
    unsigned char *srcs, char *err, size_t errlen)
{
	FILE *fp;
	int rv;

	fp = fopen(path, "r");
	if (fp == NULL) {
		rv = -errno;
		bc_errf(err, errlen, "%s: %s: %s", where, path,
		    bc_strerror(rv));
		goto fail;
	}
	rv = load_stream(c, fp, path, srcs, err, errlen);
	fclose(fp);
fail:
	return rv;
}

int
bc_config_load_text(bc_config_t *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen)
{
	unsigned char srcs[NOPTS];
	FILE *fp = NULL;
	int rv = 0;

	memset(srcs, SRC_DEFAULT, sizeof(srcs));
	if (len == 0)
		goto fail;
	/* "r": the stream never writes to text */
	fp = fmemopen((void *)(uintptr_t)text, len, "r");
	if (fp == NULL) {
		rv = BC_ENOMEM;
		bc_errf(err, errlen, "%s: out of memory", name);
		goto fail;
	}
	rv = load_stream(c, fp, name, srcs, err, errlen);
fail:
	if (fp != NULL)
		fclose(fp);
	return rv < 0 ? -1 : 0;
}

static int
load_env(bc_config_t *c, char **env, unsigned char *srcs, char *err,
    size_t errlen)
{
	char name[128];
	int rv = 0;

	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		const char *v;

		env_name(o, name, sizeof(name));
		v = env_get(env, name);
		if (v == NULL)
			continue;
		if (o->type != OPT_LIST) {
			rv = opt_set(c, o, v, SRC_ENV, srcs, name, err, errlen);
			if (rv < 0)
				goto fail;
			continue;
		}
		/* A LIST from the environment: blank-separated entries. */
		list_clear(field(c, o));
		srcs[i] = SRC_ENV;
		while (*v != '\0') {
			size_t n;
			char *one;

			v += strspn(v, " \t\r\n");
			n = strcspn(v, " \t\r\n");
			if (n == 0)
				break;
			one = strndup(v, n);
			if (one == NULL) {
				rv = BC_ENOMEM;
				bc_errf(err, errlen, "%s: out of memory", name);
				goto fail;
			}
			rv = opt_set(c, o, one, SRC_ENV, srcs, name, err,
			    errlen);
			free(one);
			if (rv < 0)
				goto fail;
			v += n;
		}
	}
fail:
	return rv;
}

/*
 * Walks argv. With apply false it only finds --config, --help,
 * --version and --probe[=NAME] (so the file can be read first and --help
 * wins over everything); with apply true it sets every flag (and refuses
 * a --probe NAME that is not lower-case letters).
 */
static int
walk_flags(bc_config_t *c, int argc, char **argv, bool apply,
    const char **config_path, unsigned char *srcs, char *err, size_t errlen)
{
	char where[160];
	int rv = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *v;
		const struct opt *o;
		bool negate = false;
		size_t n;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			c->help = true;
			continue;
		}
		if (strcmp(a, "--version") == 0) {
			c->version = true;
			continue;
		}
		if (strcmp(a, "--probe") == 0 ||
		    strncmp(a, "--probe=", 8) == 0) {
			const char *pn = a[7] == '=' ? a + 8 : "health";
			size_t pl = strlen(pn);

			if (pl == 0 || pl >= sizeof(c->probe) ||
			    strspn(pn, "abcdefghijklmnopqrstuvwxyz") != pl) {
				if (!apply)
					continue;
				rv = BC_EINVAL;
				bc_errf(err, errlen, "--probe: '" SHOW "' is "
				    "not a name like health or ready", pn);
				goto fail;
			}
			memcpy(c->probe, pn, pl + 1);
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			if (!apply)
				continue;
			rv = BC_EINVAL;
			if (a[0] == '-' && a[1] != '\0' && a[1] != '-')
				bc_errf(err, errlen, "unknown option '" SHOW
				    "'", a);
			else
				bc_errf(err, errlen, "unexpected argument '"
				    SHOW "'", a);
			goto fail;
		}
		name = a + 2;
		eq = strchr(name, '=');
		n = eq != NULL ? (size_t)(eq - name) : strlen(name);
		o = opt_find(name, n);
		if (o == NULL && n > 3 && strncmp(name, "no-", 3) == 0) {
			o = opt_find(name + 3, n - 3);
			if (o != NULL && o->type == OPT_BOOL && eq == NULL)
				negate = true;
			else
				o = NULL;
		}
		if (o == NULL) {
			if (!apply)
				continue;
			rv = BC_EINVAL;
			bc_errf(err, errlen, "unknown option '--%.*s'",
			    (int)(n > 64 ? 64 : n), name);
			goto fail;
		}
		snprintf(where, sizeof(where), "--%s", o->name);
		if (negate)
			v = "no";
		else if (eq != NULL)
			v = eq + 1;
		else if (o->type == OPT_BOOL)
			v = "yes";
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			if (!apply)
				continue;
			rv = BC_EINVAL;
			bc_errf(err, errlen, "%s: missing value", where);
			goto fail;
		}
		if (!apply) {
			if (strcmp(o->name, "config") == 0)
				*config_path = v;
			continue;
		}
		rv = opt_set(c, o, v, SRC_FLAG, srcs, where, err, errlen);
		if (rv < 0)
			goto fail;
	}
fail:
	return rv;
}

int
bc_config_load(bc_config_t *c, int argc, char **argv, char **env,
    char *err, size_t errlen)
{
	unsigned char srcs[NOPTS];
	const char *path = NULL, *where = "--config";
	char *copy = NULL;
	int rv;

	memset(srcs, SRC_DEFAULT, sizeof(srcs));
	rv = walk_flags(c, argc, argv, false, &path, srcs, err, errlen);
	if (rv < 0 || c->help || c->version)
		goto fail;
	if (path == NULL) {
		path = env_get(env, "BUCKETCACHE_CONFIG");
		where = "BUCKETCACHE_CONFIG";
	}
	if (path == NULL) {
		path = c->config_file;
		where = "--config";
	}
	if (nonempty(path)) {
		/* path may be c->config_file, which the file cannot change
		 * but the later sources may free: work on a copy. */
		copy = strdup(path);
		if (copy == NULL) {
			rv = BC_ENOMEM;
			bc_errf(err, errlen, "out of memory");
			goto fail;
		}
		rv = load_file(c, copy, where, srcs, err, errlen);
		if (rv < 0)
			goto fail;
	}
	rv = load_env(c, env, srcs, err, errlen);
	if (rv < 0)
		goto fail;
	rv = walk_flags(c, argc, argv, true, NULL, srcs, err, errlen);
fail:
	free(copy);
	return rv < 0 ? -1 : 0;
}

/* ---- validation -------------------------------------------------------- */

static bool
host_char_ok(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' ||
	    ch == '_';
}

/*
 * Checks "host[:port]" (n bytes; IPv6 as "[addr]:port"). need_port: the
 * port is required. Writes why on error.
 */
static int
check_hostport(const char *s, size_t n, bool need_port, char *why,
    size_t whylen)
{
	const char *host = s, *port = NULL, *colon;
	size_t hlen, plen = 0;
	uint16_t pn;

	if (n > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		char addr[INET6_ADDRSTRLEN + 1];
		struct in6_addr a6;

		if (rb == NULL || (size_t)(rb - s - 1) >= sizeof(addr)) {
			bc_errf(why, whylen, "bad IPv6 address");
			return BC_EINVAL;
		}
		memcpy(addr, s + 1, (size_t)(rb - s - 1));
		addr[rb - s - 1] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) != 1) {
			bc_errf(why, whylen, "bad IPv6 address");
			return BC_EINVAL;
		}
		hlen = (size_t)(rb - s) + 1;
		if (hlen < n && s[hlen] != ':') {
			bc_errf(why, whylen, "junk after ']'");
			return BC_EINVAL;
		}
	} else {
		colon = memchr(s, ':', n);
		hlen = colon != NULL ? (size_t)(colon - s) : n;
		if (hlen == 0) {
			bc_errf(why, whylen, "no host");
			return BC_EINVAL;
		}
		for (size_t i = 0; i < hlen; i++) {
			if (!host_char_ok(host[i])) {
				bc_errf(why, whylen, "bad character in host "
				    "(IPv6 addresses go in [brackets])");
				return BC_EINVAL;
			}
		}
	}
	if (hlen < n) {
		port = s + hlen + 1;
		plen = n - hlen - 1;
	}
	if (port == NULL) {
		if (need_port) {
			bc_errf(why, whylen, "no port (want HOST:PORT)");
			return BC_EINVAL;
		}
		return 0;
	}
	if (bc_parse_port(port, plen, &pn) < 0) {
		bc_errf(why, whylen, "port must be 1-65535");
		return BC_EINVAL;
	}
	return 0;
}

int
bc_config_listen_parse(const char *s, bc_listen_addr_t *out, char *err,
    size_t errlen)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&out->ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->ss;
	const char *colon;
	char host[256];
	size_t hl;
	bool v6 = false;

	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':')
			goto bad;
		hl = (size_t)(rb - s - 1);
		colon = rb + 1;
		v6 = true;
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, hl);
	} else {
		colon = strrchr(s, ':');
		/* IPv6 needs its brackets */
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
			goto bad;
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			goto bad;
		memcpy(host, s, hl);
	}
	host[hl] = '\0';
	if (bc_parse_port(colon + 1, strlen(colon + 1), &out->port) < 0)
		goto bad;
	if (v6) {
		if (hl == 0)
			strcpy(host, "::");
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(out->port);
		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			strcpy(out->url_host, "[::1]");
		else
			snprintf(out->url_host, sizeof(out->url_host), "[%s]",
			    host);
		return 0;
	}
	if (hl == 0 || strcmp(host, "*") == 0)
		strcpy(host, "0.0.0.0");
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(out->port);
	}
	strcpy(out->url_host, strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" :
	    host);
	return 0;
bad:
	bc_errf(err, errlen, "--listen: '" SHOW "' is not ADDRESS:PORT", s);
	return BC_EINVAL;
}

static int
check_listen(bc_config_t *c, char *err, size_t errlen)
{
	char why[WHY_LEN];
	int rv;

	rv = check_hostport(c->listen, strlen(c->listen), true, why,
	    sizeof(why));
	if (rv < 0) {
		bc_errf(err, errlen, "--listen: '" SHOW "': %s", c->listen, why);
		return rv;
	}
	return bc_config_listen_parse(c->listen, &c->listen_addr, err,
	    errlen);
}

static int
check_upstream(bc_config_t *c, char *err, size_t errlen)
{
	char *u = c->upstream, why[WHY_LEN];
	const char *auth;
	size_t alen, n;
	struct stat st;
	int rv = 0;

	for (const char *p = u; *p != '\0'; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "--upstream: '" SHOW "': contains "
			    "a blank or control character", u);
			goto fail;
		}
	}
	if (strncasecmp(u, "file://", 7) == 0) {
		if (u[7] == '\0') {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "--upstream: '%s': no directory",
			    u);
			goto fail;
		}
		c->upstream_dir = realpath(u + 7, NULL);
		if (c->upstream_dir == NULL) {
			rv = -errno;
			bc_errf(err, errlen, "--upstream: %s: %s", u,
			    bc_strerror(rv));
			goto fail;
		}
		if (stat(c->upstream_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "--upstream: %s: %s", u,
			    bc_strerror(-ENOTDIR));
			goto fail;
		}
		c->upstream_is_file = true;
		goto fail;
	}
	if (strncasecmp(u, "http://", 7) == 0)
		auth = u + 7;
	else if (strncasecmp(u, "https://", 8) == 0)
		auth = u + 8;
	else {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--upstream: '" SHOW "' must start with "
		    "http://, https:// or file://", u);
		goto fail;
	}
	if (strpbrk(u, "?#") != NULL) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--upstream: '" SHOW "': no query or "
		    "fragment allowed", u);
		goto fail;
	}
	alen = strcspn(auth, "/");
	if (memchr(auth, '@', alen) != NULL) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--upstream: no user:password@ in the URL "
		    "(credentials come from the environment or a profile)");
		goto fail;
	}
	if (alen == 0) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--upstream: '" SHOW "' has no host", u);
		goto fail;
	}
	rv = check_hostport(auth, alen, false, why, sizeof(why));
	if (rv < 0) {
		bc_errf(err, errlen, "--upstream: '" SHOW "': %s", u, why);
		goto fail;
	}
	n = strlen(u);
	while (n > 0 && u[n - 1] == '/')
		u[--n] = '\0';
fail:
	return rv;
}

/* Chunk sizes the cache accepts, 4K to 1G: with 32-bit chunk indexes a
 * 4 KiB chunk still covers 16 TiB (S3's largest object is 5 TiB); above
 * 1 GiB one fill would hold too much memory. */
#define CHUNK_SIZE_MAX ((uint64_t)1 << 30)
/* What a disk tier needs besides one chunk's bytes: its file's header
 * (4 KiB at most, rounded to a block) and a metadata file. */
#define DISK_SLACK     (3u * 4096u)

/* The disk tier: both options or neither, and room for a chunk. Whether
 * the directory is usable is the tier's to say when it opens (main.c). */
static int
check_disk(const bc_config_t *c, char *err, size_t errlen)
{
	if (c->disk_dir[0] == '\0' && c->disk_size == 0)
		return 0;
	if (c->disk_dir[0] == '\0') {
		bc_errf(err, errlen, "--disk-size: needs --disk-dir (the "
		    "directory the disk tier keeps its files in)");
		return BC_EINVAL;
	}
	if (c->disk_size == 0) {
		bc_errf(err, errlen, "--disk-dir: needs --disk-size (the "
		    "disk tier's bound, e.g. 100G)");
		return BC_EINVAL;
	}
	if (c->disk_size < c->chunk_size + DISK_SLACK) {
		bc_errf(err, errlen, "--disk-size: %llu is too small for one "
		    "chunk (--chunk-size %llu, and %u bytes of file header "
		    "and metadata)", (unsigned long long)c->disk_size,
		    (unsigned long long)c->chunk_size, DISK_SLACK);
		return BC_EINVAL;
	}
	return 0;
}

/* The Redis tier: --redis URLs (one server, or a cluster's seeds, which
 * has database 0 only) into redis_addrs, and --redis-size with them;
 * whether Redis answers is the tier's to find out. On failure
 * redis_addrs holds what was parsed (freed by derived_fini). */
static int
check_redis(bc_config_t *c, char *err, size_t errlen)
{
	size_t n = c->redis.n;
	char why[WHY_LEN];
	int rv = 0;

	if (c->redis_ttl < 1000) {
		bc_errf(err, errlen, "--redis-ttl: must be at least 1s");
		return BC_EINVAL;
	}
	if (c->redis_timeout == 0 || c->redis_connect_timeout == 0) {
		bc_errf(err, errlen, "--redis-%stimeout: must be at least 1ms",
		    c->redis_timeout == 0 ? "" : "connect-");
		return BC_EINVAL;
	}
	if (n == 0) {
		if (c->redis_size == 0)
			return 0;
		bc_errf(err, errlen, "--redis-size: needs --redis (the Redis "
		    "server: redis://host[:port])");
		return BC_EINVAL;
	}
	c->redis_addrs = calloc(n, sizeof(*c->redis_addrs));
	if (c->redis_addrs == NULL) {
		bc_errf(err, errlen, "out of memory");
		return BC_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		c->nredis_addrs = i + 1;
		why[0] = '\0';
		rv = bc_config_redis_parse(c->redis.v[i], &c->redis_addrs[i],
		    why, sizeof(why));
		if (rv < 0) {
			bc_errf(err, errlen, "--redis: %s", why);
			return rv;
		}
		if (n > 1 && c->redis_addrs[i].db != 0) {
			bc_errf(err, errlen, "--redis: database %u with several "
			    "seeds: Redis Cluster has database 0 only",
			    c->redis_addrs[i].db);
			return BC_EINVAL;
		}
	}
	/* redis-size 0: the tier takes it from the server's maxmemory */
	if (c->redis_size > 0 && c->redis_size < c->chunk_size) {
		bc_errf(err, errlen, "--redis-size: %llu is less than one chunk "
		    "(--chunk-size %llu)", (unsigned long long)c->redis_size,
		    (unsigned long long)c->chunk_size);
		return BC_EINVAL;
	}
	return 0;
}

static bool printable(const char *s, size_t n);

/* --immutable entries: BUCKET or BUCKET/PREFIX, the bucket a valid
 * name, no blanks or control characters; then the disk checks. */
static int
check_immutable(const bc_config_t *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->immutable.n; i++) {
		const char *e = c->immutable.v[i];
		size_t n = strlen(e), blen = strcspn(e, "/");
		bool ok = blen > 0 && blen <= 255 && n <= 1024 + 256 &&
		    printable(e, n);

		for (size_t j = 0; ok && j < blen; j++)
			ok = host_char_ok(e[j]);
		if (!ok || e[0] == '_' || e[0] == '.') {
			bc_errf(err, errlen, "--immutable: '" SHOW "' is not "
			    "BUCKET or BUCKET/PREFIX", e);
			return BC_EINVAL;
		}
	}
	return check_disk(c, err, errlen);
}

static int
check_misc(const bc_config_t *c, char *err, size_t errlen)
{
	if (c->chunk_size < 4096 || c->chunk_size > CHUNK_SIZE_MAX) {
		bc_errf(err, errlen, "--chunk-size: %llu is not between 4K and "
		    "1G", (unsigned long long)c->chunk_size);
		return BC_EINVAL;
	}
	if (bc_policy_find(c->policy) == NULL) {
		bc_errf(err, errlen, "--policy: '" SHOW "' is not a policy (%s)",
		    c->policy, bc_policy_names());
		return BC_EINVAL;
	}
	if (strcmp(c->upstream_addressing, "path") != 0 &&
	    strcmp(c->upstream_addressing, "virtual") != 0) {
		bc_errf(err, errlen, "--upstream-addressing: '" SHOW "' is not "
		    "path or virtual", c->upstream_addressing);
		return BC_EINVAL;
	}
	if (c->region[0] == '\0' ||
	    strspn(c->region, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != strlen(c->region)) {
		bc_errf(err, errlen, "--region: '" SHOW "' is not a region name",
		    c->region);
		return BC_EINVAL;
	}
	for (const char *p = c->domain; *p != '\0'; p++) {
		if (!host_char_ok(*p)) {
			bc_errf(err, errlen, "--domain: '" SHOW "' is not a "
			    "host name", c->domain);
			return BC_EINVAL;
		}
	}
	if (c->max_connections == 0) {
		bc_errf(err, errlen, "--max-connections: must be at least 1");
		return BC_EINVAL;
	}
	if (c->scale_interval < 100 || c->scale_interval > 3600000) {
		bc_errf(err, errlen, "--scale-interval: must be between 100ms "
		    "and 1h");
		return BC_EINVAL;
	}
	if (strcmp(c->access_log, "off") != 0 &&
	    strcmp(c->access_log, "json") != 0) {
		bc_errf(err, errlen, "--access-log: '" SHOW "' is not off or "
		    "json", c->access_log);
		return BC_EINVAL;
	}
	if (c->access_log_file[0] != '\0' &&
	    strcmp(c->access_log, "off") == 0) {
		bc_errf(err, errlen, "--access-log-file: needs --access-log "
		    "json");
		return BC_EINVAL;
	}
	if (c->dataset_depth > 16) {
		bc_errf(err, errlen, "--dataset-depth: %u is more than 16",
		    c->dataset_depth);
		return BC_EINVAL;
	}
	if (c->warm_concurrency == 0 || c->warm_concurrency > 256) {
		bc_errf(err, errlen, "--warm-concurrency: %u is not between 1 "
		    "and 256", c->warm_concurrency);
		return BC_EINVAL;
	}
	if (c->list_cache_size < 64 * 1024) {
		bc_errf(err, errlen, "--list-cache-size: %llu is less than 64K",
		    (unsigned long long)c->list_cache_size);
		return BC_EINVAL;
	}
	return check_immutable(c, err, errlen);
}

/* --mem-size auto: starts at mem-min, which must hold a few chunks and
 * not exceed mem-max (when given). */
static int
check_mem(bc_config_t *c, char *err, size_t errlen)
{
	if (c->mem_size != BC_MEM_AUTO)
		return 0;   /* fixed, or auto already finished */
	c->mem_auto = true;
	if (c->mem_min < 4 * c->chunk_size) {
		bc_errf(err, errlen, "--mem-min: %llu is less than 4 chunks "
		    "(--chunk-size %llu)", (unsigned long long)c->mem_min,
		    (unsigned long long)c->chunk_size);
		return BC_EINVAL;
	}
	if (c->mem_max != 0 && c->mem_max < c->mem_min) {
		bc_errf(err, errlen, "--mem-max: %llu is less than --mem-min "
		    "%llu", (unsigned long long)c->mem_max,
		    (unsigned long long)c->mem_min);
		return BC_EINVAL;
	}
	c->mem_size = c->mem_min;
	return 0;
}

/* a then b in a new string, or NULL. */
static char *
cat2(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 1);

	if (p != NULL) {
		memcpy(p, a, la);
		memcpy(p + la, b, lb + 1);
	}
	return p;
}

/* The static pair from env: 0, BC_ENOENT (neither key set), BC_EINVAL
 * (one without the other), BC_ENOMEM. */
static int
creds_env(bc_config_t *c, char **env, char *err, size_t errlen)
{
	const char *ak = env_get(env, "AWS_ACCESS_KEY_ID");
	const char *sk = env_get(env, "AWS_SECRET_ACCESS_KEY");
	const char *tok = env_get(env, "AWS_SESSION_TOKEN");

	if (!nonempty(ak) && !nonempty(sk))
		return BC_ENOENT;
	if (!nonempty(ak) || !nonempty(sk)) {
		bc_errf(err, errlen, "%s is set but %s is not",
		    nonempty(ak) ? "AWS_ACCESS_KEY_ID" :
		    "AWS_SECRET_ACCESS_KEY",
		    nonempty(ak) ? "AWS_SECRET_ACCESS_KEY" :
		    "AWS_ACCESS_KEY_ID");
		return BC_EINVAL;
	}
	c->access_key = strdup(ak);
	c->secret_key = strdup(sk);
	c->session_token = nonempty(tok) ? strdup(tok) : NULL;
	if (c->access_key == NULL || c->secret_key == NULL ||
	    (nonempty(tok) && c->session_token == NULL))
		return BC_ENOMEM;
	return 0;
}

/* The profile (--profile, else AWS_PROFILE, else "default"): 0,
 * BC_ENOENT when there is no file or no such profile and none was named
 * (need: or --credentials profile asked for it), another code with err
 * set. */
static int
creds_profile(bc_config_t *c, char **env, bool need, char *err,
    size_t errlen)
{
	const char *profile, *file, *home;
	bc_config_keypair_t cr = { NULL, NULL, NULL };
	char *path = NULL, msg[WHY_LEN + PATH_MAX];
	bool named;
	int rv = 0;

	named = true;
	profile = c->profile;
	if (profile[0] == '\0')
		profile = env_get(env, "AWS_PROFILE");
	if (!nonempty(profile)) {
		profile = "default";
		named = need;
	}
	file = env_get(env, "AWS_SHARED_CREDENTIALS_FILE");
	home = env_get(env, "HOME");
	if (nonempty(file) && strncmp(file, "~/", 2) == 0 && nonempty(home))
		path = cat2(home, file + 1);
	else if (nonempty(file))
		path = strdup(file);
	else if (nonempty(home))
		path = cat2(home, "/.aws/credentials");
	else
		path = NULL;
	if (path == NULL && (nonempty(file) || nonempty(home))) {
		rv = BC_ENOMEM;
		goto fail;
	}
	if (path == NULL) {
		rv = BC_ENOENT;
		if (named)
			bc_errf(err, errlen, "profile '" SHOW "': no "
			    "credentials file (HOME is not set)", profile);
		goto fail;
	}
	rv = bc_config_creds_load_file(path, profile, &cr, msg, sizeof(msg));
	if (rv == BC_ENOENT && !named)
		goto fail;
	if (rv < 0) {
		bc_errf(err, errlen, "upstream credentials: %s", msg);
		if (rv == BC_ENOENT)
			rv = BC_EINVAL;   /* named, so not "not configured" */
		goto fail;
	}
	c->access_key = cr.access_key;
	c->secret_key = cr.secret_key;
	c->session_token = cr.session_token;
	cr.access_key = cr.secret_key = cr.session_token = NULL;
fail:
	if (rv == BC_ENOMEM)
		bc_errf(err, errlen, "out of memory");
	bc_config_keypair_fini(&cr);
	free(path);
	return rv;
}

/*
 * Where upstream credentials come from (see config.h and the file header
 * of config_creds.h): --credentials names a source, or auto walks the
 * chain env, web identity, profile, ECS, IMDS and takes the first that is
 * configured; an explicit --profile makes auto the profile, as in aws-cli.
 * With file:// auto stops after the profile. Sets c->creds.source (NONE
 * when nothing was found: the caller decides whether that is an error).
 */
static int
load_creds(bc_config_t *c, char **env, char *err, size_t errlen)
{
	int want = bc_creds_source_parse(c->credentials);
	bool all;
	int rv = BC_ENOENT;

	if (want < 0) {
		bc_errf(err, errlen, "--credentials: '" SHOW "' is not auto, "
		    "env, web-identity, profile, ecs, imds or none",
		    c->credentials);
		return BC_EINVAL;
	}
	if (want == BC_CREDS_AUTO && c->profile[0] != '\0')
		want = BC_CREDS_PROFILE;
	if (c->upstream_is_file && bc_creds_source_fetched(want)) {
		bc_errf(err, errlen, "--credentials %s: the file:// upstream "
		    "signs nothing", c->credentials);
		return BC_EINVAL;
	}
	all = want == BC_CREDS_AUTO;
	c->creds.chained = all;
	if (want == BC_CREDS_NONE)
		return 0;
	if (all || want == BC_CREDS_ENV) {
		rv = creds_env(c, env, err, errlen);
		if (rv == 0)
			c->creds.source = BC_CREDS_ENV;
		if (rv == BC_ENOENT && !all)
			bc_errf(err, errlen, "--credentials env: "
			    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are "
			    "not set");
		if (rv != BC_ENOENT || !all)
			return rv == BC_ENOENT ? BC_EINVAL : rv;
	}
	if (all || want == BC_CREDS_WEB_IDENTITY) {
		rv = bc_config_creds_web_identity(&c->creds, env, c->region,
		    err, errlen);
		if (rv == BC_ENOENT && !all)
			bc_errf(err, errlen, "--credentials web-identity: "
			    "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are "
			    "not set");
		if (rv != BC_ENOENT || !all)
			return rv == BC_ENOENT ? BC_EINVAL : rv;
	}
	if (all || want == BC_CREDS_PROFILE) {
		rv = creds_profile(c, env, !all, err, errlen);
		if (rv == 0)
			c->creds.source = BC_CREDS_PROFILE;
		if (rv != BC_ENOENT || !all)
			return rv == BC_ENOENT ? BC_EINVAL : rv;
	}
	if (c->upstream_is_file)
		return 0;
	if (all || want == BC_CREDS_ECS) {
		rv = bc_config_creds_ecs(&c->creds, env, err, errlen);
		if (rv == BC_ENOENT && !all)
			bc_errf(err, errlen, "--credentials ecs: "
			    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and "
			    "AWS_CONTAINER_CREDENTIALS_FULL_URI are not set");
		if (rv != BC_ENOENT || !all)
			return rv == BC_ENOENT ? BC_EINVAL : rv;
	}
	rv = bc_config_creds_imds(&c->creds, env, err, errlen);
	if (rv == BC_ENOENT && !all)
		bc_errf(err, errlen, "--credentials imds: "
		    "AWS_EC2_METADATA_DISABLED is true");
	if (rv != BC_ENOENT || !all)
		return rv == BC_ENOENT ? BC_EINVAL : rv;
	return 0;
}

/* After load_creds: an http(s) upstream needs a source (unless
 * --credentials none), and keys that rotate cannot be the clients'. */
static int
check_creds(const bc_config_t *c, char *err, size_t errlen)
{
	const bc_config_creds_t *cc = &c->creds;

	if (c->upstream_is_file || strcmp(c->credentials, "none") == 0)
		return 0;
	if (cc->source == BC_CREDS_NONE) {
		bc_errf(err, errlen, "--upstream: %s needs credentials: set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile "
		    "in ~/.aws/credentials (--profile), or web identity or "
		    "container credentials (AWS_EC2_METADATA_DISABLED rules "
		    "out the instance metadata service)", c->upstream);
		return BC_EINVAL;
	}
	if (!bc_creds_source_fetched(cc->source) || c->client_keys.n > 0 ||
	    c->anonymous)
		return 0;
	if (cc->chained && cc->source == BC_CREDS_IMDS)
		bc_errf(err, errlen, "--upstream: %s needs credentials: set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile "
		    "in ~/.aws/credentials (--profile); or, to use the instance "
		    "metadata service's (--credentials imds), whose keys "
		    "rotate, give --client-key or --anonymous: clients cannot "
		    "sign with them", c->upstream);
	else
		bc_errf(err, errlen, "--credentials: the %s source's keys "
		    "rotate, so clients cannot sign with the gateway's key "
		    "pair: give --client-key (keys clients sign with) or "
		    "--anonymous (unsigned clients use the gateway's "
		    "credentials)", bc_creds_source_name(cc->source));
	return BC_EINVAL;
}

static bool
access_key_ok(const char *s, size_t n)
{
	if (n < 1 || n > MAX_ACCESS)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-')
			return false;
	return true;
}

static bool
printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (isspace((unsigned char)s[i]) || iscntrl((unsigned char)s[i]))
			return false;
	return true;
}

/* Parses one "ACCESS:SECRET[:BUCKET[/PREFIX],...]" into *k (zeroed; on
 * failure it may hold a partial entry, freed by derived_fini). */
static int
parse_key(const char *s, bc_client_key_t *k, char *err, size_t errlen)
{
	const char *c1, *c2, *p;
	size_t alen, slen;
	int rv = 0;

	c1 = strchr(s, ':');
	alen = c1 != NULL ? (size_t)(c1 - s) : strlen(s);
	if (!access_key_ok(s, alen)) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--client-key: access key '%.*s' must be "
		    "1-%d of A-Z a-z 0-9 _ -", (int)(alen > 64 ? 64 : alen), s,
		    MAX_ACCESS);
		goto fail;
	}
	if (c1 == NULL) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--client-key: key '%.*s': want "
		    "ACCESS:SECRET[:BUCKET[/PREFIX],...]", (int)alen, s);
		goto fail;
	}
	c2 = strchr(c1 + 1, ':');
	slen = c2 != NULL ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
	if (slen == 0 || slen > MAX_SECRET || !printable(c1 + 1, slen)) {
		rv = BC_EINVAL;
		bc_errf(err, errlen, "--client-key: key '%.*s': the secret must "
		    "be 1-%d bytes without blanks or control characters",
		    (int)alen, s, MAX_SECRET);
		goto fail;
	}
	k->access_key = strndup(s, alen);
	k->secret_key = strndup(c1 + 1, slen);
	if (k->access_key == NULL || k->secret_key == NULL) {
		rv = BC_ENOMEM;
		goto fail;
	}
	/* the allow list: BUCKET[/PREFIX] entries, comma-separated */
	for (p = c2 != NULL ? c2 + 1 : NULL; p != NULL; p++) {
		size_t n = strcspn(p, ","), blen = strcspn(p, ",/");
		bool ok = n > 0 && blen > 0 && printable(p, n);
		char **na;

		for (size_t i = 0; ok && i < blen; i++)
			ok = host_char_ok(p[i]);
		if (!ok) {
			rv = BC_EINVAL;
			bc_errf(err, errlen, "--client-key: key '%.*s': allow "
			    "list entries are BUCKET or BUCKET/PREFIX, "
			    "comma-separated, without blanks", (int)alen, s);
			goto fail;
		}
		na = realloc(k->allow, (k->nallow + 1) * sizeof(*na));
		if (na == NULL) {
			rv = BC_ENOMEM;
			goto fail;
		}
		k->allow = na;
		k->allow[k->nallow] = strndup(p, n);
		if (k->allow[k->nallow] == NULL) {
			rv = BC_ENOMEM;
			goto fail;
		}
		k->nallow++;
		p += n;
		if (*p == '\0')
			break;
	}
fail:
	if (rv == BC_ENOMEM)
		bc_errf(err, errlen, "out of memory");
	return rv;
}

/* c->keys from the client-key list, else the upstream pair (all buckets),
 * else none. On failure c->keys holds what was parsed (freed by fini). */
static int
load_keys(bc_config_t *c, char *err, size_t errlen)
{
	size_t n = c->client_keys.n;
	int rv = 0;

	if (n == 0 && c->access_key == NULL)
		goto fail;
	c->keys = calloc(n > 0 ? n : 1, sizeof(*c->keys));
	if (c->keys == NULL) {
		rv = BC_ENOMEM;
		bc_errf(err, errlen, "out of memory");
		goto fail;
	}
	if (n == 0) {
		c->nkeys = 1;
		c->keys[0].access_key = strdup(c->access_key);
		c->keys[0].secret_key = strdup(c->secret_key);
		if (c->keys[0].access_key == NULL ||
		    c->keys[0].secret_key == NULL) {
			rv = BC_ENOMEM;
			bc_errf(err, errlen, "out of memory");
		}
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		bc_client_key_t *k = &c->keys[i];

		c->nkeys = i + 1;   /* so fini frees a partial entry */
		rv = parse_key(c->client_keys.v[i], k, err, errlen);
		if (rv < 0)
			goto fail;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(c->keys[j].access_key, k->access_key) ==
			    0) {
				rv = BC_EINVAL;
				bc_errf(err, errlen, "--client-key: key '%s' "
				    "given twice", k->access_key);
				goto fail;
			}
		}
	}
fail:
	return rv;
}

int
bc_config_finish(bc_config_t *c, char **env, char *err, size_t errlen)
{
	int rv;

	derived_fini(c);
	rv = check_upstream(c, err, errlen);
	if (rv == 0)
		rv = check_misc(c, err, errlen);
	if (rv == 0)
		rv = check_listen(c, err, errlen);
	if (rv == 0)
		rv = check_mem(c, err, errlen);
	if (rv == 0)
		rv = check_redis(c, err, errlen);
	if (rv == 0)
		rv = load_creds(c, env, err, errlen);
	if (rv == 0)
		rv = check_creds(c, err, errlen);
	if (rv == 0)
		rv = load_keys(c, err, errlen);
	return rv < 0 ? -1 : 0;
}

/* ---- --help ------------------------------------------------------------ */

/* Prints text word-wrapped at width, every line indented by indent. */
static void
wrap(FILE *fp, const char *text, int indent, int width)
{
	const char *p = text;

	while (*p != '\0') {
		int col = indent, len;

		fprintf(fp, "%*s", indent, "");
		for (;;) {
			len = (int)strcspn(p, " ");
			if (col > indent && col + 1 + len > width)
				break;
			if (col > indent) {
				fputc(' ', fp);
				col++;
			}
			fprintf(fp, "%.*s", len, p);
			col += len;
			p += len;
			p += strspn(p, " ");
			if (*p == '\0')
				break;
		}
		fputc('\n', fp);
	}
}

void
bc_config_usage(void *fpv, const char *argv0)
{
	FILE *fp = fpv;
	char text[1024];

	fprintf(fp, "Usage: %s [OPTION]...\n"
	    "An S3-compatible caching gateway for machine-learning training "
	    "data.\n\nOptions:\n", argv0 != NULL ? argv0 : "bucketcache");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];

		if (o->type == OPT_BOOL)
			fprintf(fp, "  --%s, --no-%s\n", o->name, o->name);
		else
			fprintf(fp, "  --%s %s\n", o->name, types[o->type].hint);
		if (o->def[0] != '\0')
			snprintf(text, sizeof(text), "%s (default: %s)",
			    o->help, o->def);
		else
			snprintf(text, sizeof(text), "%s", o->help);
		wrap(fp, text, 6, 79);
	}
	fprintf(fp, "  -h, --help\n      show this help and exit\n"
	    "  --version\n      show the version and exit\n"
	    "  --probe[=health|ready]\n      ask the gateway these options "
	    "configure, on its --listen\n      address (a wildcard as "
	    "loopback), for /_bucketcache/health (or\n      /ready): exit 0 "
	    "when it answers 200, 1 otherwise (container health\n      "
	    "checks)\n\n");
	wrap(fp, "Values: N is a decimal number; SIZE is bytes with an "
	    "optional K, M, G or T suffix (powers of 1024), e.g. 64K, 8M; "
	    "TIME is a duration like 250ms, 5s, 2m or 24h (a bare number "
	    "is seconds); LEVEL is error, warn, info or debug. '--name=value' "
	    "works too.", 0, 79);
	fputc('\n', fp);
	wrap(fp, "Every option can also be set in the environment as "
	    "BUCKETCACHE_NAME (upper case, '-' as '_', e.g. "
	    "BUCKETCACHE_LOG_LEVEL=debug; repeatable options take "
	    "blank-separated values there) or as a 'name value' line in the "
	    "--config file ('#' starts a comment line). Precedence, low to "
	    "high: defaults, config file, environment, flags.", 0, 79);
	fputc('\n', fp);
	wrap(fp, "Upstream credentials (--credentials auto) come from the "
	    "first of: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
	    "AWS_SESSION_TOKEN; web identity (AWS_WEB_IDENTITY_TOKEN_FILE, "
	    "AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME: STS "
	    "AssumeRoleWithWebIdentity at AWS_ENDPOINT_URL_STS or the "
	    "region's endpoint); the profile (--profile, AWS_PROFILE or "
	    "'default') in AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials; "
	    "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI "
	    "or _FULL_URI, AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]); the "
	    "EC2 instance metadata service, IMDSv2 (unless "
	    "AWS_EC2_METADATA_DISABLED=true; AWS_EC2_METADATA_SERVICE_"
	    "ENDPOINT). An explicit --profile wins over the environment. "
	    "Fetched keys are refreshed in the background before they "
	    "expire; as they rotate, clients then sign with --client-key "
	    "keys or come unsigned with --anonymous.", 0, 79);
}

/* ---- lookups ----------------------------------------------------------- */

const bc_client_key_t *
bc_config_key(const bc_config_t *c, const char *access_key)
{
	if (access_key == NULL)
		return NULL;
	for (size_t i = 0; i < c->nkeys; i++)
		if (strcmp(c->keys[i].access_key, access_key) == 0)
			return &c->keys[i];
	return NULL;
}

const char *
bc_config_secret(void *cv, const char *access_key)
{
	const bc_client_key_t *k = bc_config_key(cv, access_key);

	return k != NULL ? k->secret_key : NULL;
}

/*
 * An unrestricted key (allow == NULL) may do anything. A restricted key:
 * service-level calls (bucket "" — ListBuckets) are refused; key ""
 * (bucket-level calls) is allowed when any entry names the bucket;
 * otherwise an entry "b" allows every key of b and "b/p" the keys that
 * start with p.
 */
/* What allow-list entry e grants in bucket: NULL (nothing), "" (the
 * whole bucket) or the key prefix it allows. */
static const char *
entry_prefix(const char *e, const char *bucket)
{
	const char *slash = strchr(e, '/');
	size_t elen = slash != NULL ? (size_t)(slash - e) : strlen(e);

	if (elen != strlen(bucket) || memcmp(e, bucket, elen) != 0)
		return NULL;
	return slash != NULL ? slash + 1 : "";
}

bool
bc_config_key_allows(const bc_client_key_t *k, const char *bucket,
    const char *key)
{
	if (k == NULL)
		return false;
	if (k->allow == NULL)
		return true;
	if (bucket == NULL || bucket[0] == '\0' || key == NULL)
		return false;
	for (size_t i = 0; i < k->nallow; i++) {
		const char *p = entry_prefix(k->allow[i], bucket);

		if (p != NULL && strncmp(key, p, strlen(p)) == 0)
			return true;
	}
	return false;
}

bool
bc_config_immutable(const bc_config_t *c, const char *bucket,
    const char *prefix)
{
	if (bucket == NULL || bucket[0] == '\0' || prefix == NULL)
		return false;
	for (size_t i = 0; i < c->immutable.n; i++) {
		const char *p = entry_prefix(c->immutable.v[i], bucket);

		if (p != NULL && strncmp(prefix, p, strlen(p)) == 0)
			return true;
	}
	return false;
}

bool
bc_config_key_has_bucket(const bc_client_key_t *k, const char *bucket)
{
	return bc_config_key_allows(k, bucket, "");
}

bool
bc_config_key_in_bucket(const bc_client_key_t *k, const char *bucket)
{
	if (k == NULL)
		return false;
	if (k->allow == NULL)
		return true;
	if (bucket == NULL || bucket[0] == '\0')
		return false;
	for (size_t i = 0; i < k->nallow; i++)
		if (entry_prefix(k->allow[i], bucket) != NULL)
			return true;
	return false;
}
