/*
 * tq — the integration scripts' small readers and makers (tests/lib),
 * in C because each was a python3 start (40-50 ms of CPU on the suite's
 * 2-core VM; ~3,500 of them a run) for a few microseconds of work:
 *
 *   tq json [--keys] FILE EXPR...   a value from a JSON file (- : stdin);
 *        EXPR is a dotted path ("ContentLength", "Contents.0.Key"): a list
 *        takes an index, an object a key; a missing step prints "".
 *        Objects and lists print as Python's json.dumps prints them,
 *        other values as Python's print does (True, 1.5, text unquoted).
 *        One line per EXPR; with --keys each is "EXPR=value".
 *   tq stat [--or-0] FILE NAME      a value of /_bucketcache/stats' JSON:
 *        NAME without a dot is counters.NAME (missing: an error naming the
 *        counters there are, or 0 with --or-0); a dotted NAME walks objects
 *        from the top, a missing or non-object step reading as 0.
 *   tq get FILE PATH                the dotted PATH from the top, as stat's
 *        dotted NAME (the fixture's /__fixture/stats).
 *   tq sum FILE PATH [KEY...]       the sum of the integers in the object at
 *        the dotted PATH, but for the members named KEY.
 *   tq s3code FILE                  the <Code> of an S3 XML <Error> body;
 *        nothing when the file is not well-formed XML with an Error root
 *        (as xml.etree's root.find('Code') answers).
 *   tq mkfile PATH BYTES            deterministic pseudo-random content:
 *        64 KiB blocks, block i the SHA-256 of (SHA-256(PATH) || i as 8
 *        big-endian bytes) repeated 2048 times.
 *   tq port                         a loopback TCP port free a moment ago.
 *   tq http [-X METHOD] [-m SECS] [-w] URL
 *        one HTTP/1.1 request with no body to an http://IPv4-or-localhost
 *        URL (the harness's stats reads, fixture controls and health
 *        polls; curl's start is ~45 ms of CPU on the suite's VM, tq's 4):
 *        prints the body and exits as `curl -sf` does (0; 22 for a status
 *        of 400 or more, the body unprinted; 7 no connection, 28 the time
 *        (default 10 s) ran out, 8 an answer that is not HTTP or has a
 *        Content-Length that is not a number up to 256 MiB, 18 one cut
 *        short). With -w it prints only the status, as `curl -s -o
 *        /dev/null -w '%{http_code}'` does: 000 when nothing answered.
 * A FILE of json, stat, get and sum may be such a URL: it is read with a
 * GET (10 s), and anything but a 2xx answer is exit 1.
 *
 * Exit status: 0; 1 for a file it cannot read or parse, or stat's missing
 * counter; 2 for a usage error. Inputs are the tests' own (the gateway's
 * and the clients' answers): parsers are bounded by the input's length
 * and a nesting depth of 64, and fail on anything else.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 64
#define MAX_INPUT (256u << 20)

static _Noreturn void die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tq: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

static char *http_read(const char *url, size_t *len);

/* grow: buf (full, *cap bytes) at twice the size; exits 1 past
 * MAX_INPUT (what names the input) or out of memory. */
static char *grow(char *buf, size_t *cap, const char *what)
{
	if (*cap >= MAX_INPUT)
		die(1, "%s: larger than %u bytes", what, MAX_INPUT);
	*cap *= 2;
	buf = realloc(buf, *cap);
	if (!buf)
		die(1, "out of memory");
	return buf;
}

/* read_all: the whole file ("-": stdin; an http:// URL: a GET's body),
 * NUL-terminated; *len its size. */
static char *read_all(const char *path, size_t *len)
{
	if (strncmp(path, "http://", 7) == 0)
		return http_read(path, len);
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 1 << 16, n = 0, got;
	char *buf;

	if (!f)
		die(1, "%s: %s", path, strerror(errno));
	buf = malloc(cap);
	if (!buf)
		die(1, "out of memory");
	while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap)
			buf = grow(buf, &cap, path);
	}
	if (ferror(f))
		die(1, "%s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* ---- JSON ------------------------------------------------------------- */

/* A cursor over one JSON text; `end` bounds every read. */
typedef struct {
	const char *p, *end;
	const char *name;   /* the file's name, for messages */
} jcur_t;

static _Noreturn void jfail(const jcur_t *c, const char *what)
{
	die(1, "%s: not JSON (%s)", c->name, what);
}

static void jws(jcur_t *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool jlit(jcur_t *c, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(c->end - c->p) >= n && memcmp(c->p, lit, n) == 0) {
		c->p += n;
		return true;
	}
	return false;
}

/* jvalue: skips space to the next value; its first character (fails at
 * the end of the text). */
static char jvalue(jcur_t *c)
{
	jws(c);
	if (c->p >= c->end)
		jfail(c, "a value expected");
	return *c->p;
}

enum jlitval { J_NULL, J_FALSE, J_TRUE };

/* jliteral: reads true, false or null (fails on anything else). */
static enum jlitval jliteral(jcur_t *c)
{
	if (jlit(c, "true"))
		return J_TRUE;
	if (jlit(c, "false"))
		return J_FALSE;
	if (!jlit(c, "null"))
		jfail(c, "bad literal");
	return J_NULL;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static unsigned jhex4(jcur_t *c)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int h = c->p < c->end ? hexval(*c->p) : -1;
		if (h < 0)
			jfail(c, "bad \\u escape");
		v = v << 4 | (unsigned)h;
		c->p++;
	}
	return v;
}

static void put_utf8(char **o, unsigned cp)
{
	unsigned char *u = (unsigned char *)*o;
	if (cp < 0x80) {
		*u++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*u++ = (unsigned char)(0xC0 | cp >> 6);
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*u++ = (unsigned char)(0xE0 | cp >> 12);
		*u++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else {
		*u++ = (unsigned char)(0xF0 | cp >> 18);
		*u++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
		*u++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	}
	*o = (char *)u;
}

/* jstring: at '"'; returns the decoded text (UTF-8, malloc'd; *n its
 * length, which may hold NULs). */
static char *jstring(jcur_t *c, size_t *n)
{
	char *out, *o;

	if (c->p >= c->end || *c->p != '"')
		jfail(c, "a string expected");
	c->p++;
	/* decoded is never longer than encoded */
	out = o = malloc((size_t)(c->end - c->p) + 1);
	if (!out)
		die(1, "out of memory");
	for (;;) {
		if (c->p >= c->end)
			jfail(c, "unterminated string");
		char ch = *c->p++;
		if (ch == '"')
			break;
		if ((unsigned char)ch < 0x20)
			jfail(c, "control character in a string");
		if (ch != '\\') {
			*o++ = ch;
			continue;
		}
		if (c->p >= c->end)
			jfail(c, "unterminated escape");
		ch = *c->p++;
		switch (ch) {
		case '"': case '\\': case '/': *o++ = ch; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp = jhex4(c);
			if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 &&
			    c->p[0] == '\\' && c->p[1] == 'u') {
				const char *save = c->p;
				c->p += 2;
				unsigned lo = jhex4(c);
				if (lo >= 0xDC00 && lo < 0xE000)
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				else
					c->p = save;
			}
			put_utf8(&o, cp);
			break;
		}
		default:
			jfail(c, "bad escape");
		}
	}
	*n = (size_t)(o - out);
	*o = '\0';
	return out;
}

static void jnumber(jcur_t *c)
{
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p >= c->end || *c->p < '0' || *c->p > '9')
		jfail(c, "bad number");
	while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' ||
				 *c->p == 'e' || *c->p == 'E' || *c->p == '+' ||
				 *c->p == '-'))
		c->p++;
}

static void jskip(jcur_t *c, int depth);

/* jmembers: at '{' or '['; calls each(key or NULL for a list, index) with
 * the cursor at the member's value. each answers what comes next: */
enum jnext {
	J_SKIP,      /* jmembers skips the value, goes on */
	J_READ,      /* each read the value itself (the cursor is past it) */
	J_STOP,      /* stop, the cursor left at the value */
};
typedef enum jnext (*jmember_fn)(jcur_t *c, const char *key, size_t keylen,
				 long index, void *arg);
/* Returns true when each stopped it. */
static bool jmembers(jcur_t *c, int depth, jmember_fn each, void *arg)
{
	char close = *c->p == '{' ? '}' : ']';
	long i = 0;

	if (depth > MAX_DEPTH)
		jfail(c, "nested too deep");
	c->p++;
	jws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return false;
	}
	for (;;) {
		char *key = NULL;
		size_t keylen = 0;
		jws(c);
		if (close == '}') {
			key = jstring(c, &keylen);
			jws(c);
			if (c->p >= c->end || *c->p != ':')
				jfail(c, "':' expected");
			c->p++;
			jws(c);
		}
		enum jnext next = each ? each(c, key, keylen, i, arg) : J_SKIP;
		free(key);
		if (next == J_STOP)
			return true;
		if (next == J_SKIP)
			jskip(c, depth + 1);
		jws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			i++;
			continue;
		}
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return false;
		}
		jfail(c, "',' or a close expected");
	}
}

static void jskip(jcur_t *c, int depth)
{
	size_t n;
	switch (jvalue(c)) {
	case '{': case '[': jmembers(c, depth, NULL, NULL); break;
	case '"': free(jstring(c, &n)); break;
	case 't': case 'f': case 'n': jliteral(c); break;
	default: jnumber(c);
	}
}

/* One step of a dotted path. */
struct step {
	const char *name;
	size_t len;
	bool found;
};

static enum jnext step_match(jcur_t *c, const char *key, size_t keylen,
			     long index, void *arg)
{
	struct step *s = arg;
	(void)c;
	if (key) {
		s->found = keylen == s->len && memcmp(key, s->name, keylen) == 0;
	} else {
		/* Python: p.isdigit() and int(p) < len(d) */
		char buf[32];
		if (s->len == 0 || s->len >= sizeof buf ||
		    strspn(s->name, "0123456789") < s->len)
			return J_SKIP;
		memcpy(buf, s->name, s->len);
		buf[s->len] = '\0';
		s->found = strtol(buf, NULL, 10) == index;
	}
	return s->found ? J_STOP : J_SKIP;
}

/* jwalk: the cursor at the value the dotted PATH names from the top;
 * false when a step is missing (lists take an index only when
 * `lists`, else a list reads as missing). */
static bool jwalk(jcur_t *c, const char *path, bool lists)
{
	const char *s = path;
	for (;;) {
		const char *dot = strchr(s, '.');
		struct step st = { s, dot ? (size_t)(dot - s) : strlen(s), false };
		jws(c);
		if (c->p >= c->end)
			return false;
		if (*c->p != '{' && !(lists && *c->p == '['))
			return false;
		if (!jmembers(c, 1, step_match, &st))
			return false;
		if (!dot)
			return true;
		s = dot + 1;
	}
}

/* float_repr: what Python's repr(float(text)) prints. */
static void float_repr(const char *text, size_t len, FILE *out)
{
	char lit[64], buf[64], digits[32];
	double v;
	int prec, exp10, nd = 0;

	if (len >= sizeof lit)
		len = sizeof lit - 1;
	memcpy(lit, text, len);
	lit[len] = '\0';
	v = strtod(lit, NULL);
	if (isinf(v)) {
		fputs(v > 0 ? "inf" : "-inf", out);
		return;
	}
	/* the shortest digits that read back as v */
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* buf: [-]d[.ddd]e[+-]XX */
	const char *b = buf;
	if (*b == '-') {
		fputc('-', out);
		b++;
	}
	for (; *b && *b != 'e'; b++)
		if (*b != '.')
			digits[nd++] = *b;
	digits[nd] = '\0';
	exp10 = atoi(b + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';
	if (exp10 < -4 || exp10 >= 16) {
		fputc(digits[0], out);
		if (nd > 1)
			fprintf(out, ".%s", digits + 1);
		fprintf(out, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (exp10 < 0) {
		fputs("0.", out);
		for (int i = -1; i > exp10; i--)
			fputc('0', out);
		fputs(digits, out);
	} else {
		for (int i = 0; i <= exp10; i++)
			fputc(i < nd ? digits[i] : '0', out);
		fputc('.', out);
		fputs(nd > exp10 + 1 ? digits + exp10 + 1 : "0", out);
	}
}

/* print_number: an int literal as Python prints an int, others as a
 * float's repr. */
static void print_number(jcur_t *c, FILE *out)
{
	const char *s = c->p;
	jnumber(c);
	size_t len = (size_t)(c->p - s);
	if (memchr(s, '.', len) || memchr(s, 'e', len) || memchr(s, 'E', len)) {
		float_repr(s, len, out);
		return;
	}
	if (len == 2 && s[0] == '-' && s[1] == '0')
		s++, len--;   /* -0 is 0 */
	fwrite(s, 1, len, out);
}

/* dump_string: as json.dumps (ensure_ascii) writes a string. */
static void dump_string(const char *s, size_t n, FILE *out)
{
	const unsigned char *u = (const unsigned char *)s, *e = u + n;
	fputc('"', out);
	while (u < e) {
		unsigned cp = *u++;
		int more = cp >= 0xF0 ? 3 : cp >= 0xE0 ? 2 : cp >= 0xC0 ? 1 : 0;
		if (more) {
			cp &= 0x3F >> more;
			for (int i = 0; i < more && u < e; i++)
				cp = cp << 6 | (*u++ & 0x3F);
		}
		switch (cp) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		default:
			if (cp < 0x20 || (cp >= 0x80 && cp < 0x10000))
				fprintf(out, "\\u%04x", cp);
			else if (cp >= 0x10000)
				fprintf(out, "\\u%04x\\u%04x",
					0xD800 + ((cp - 0x10000) >> 10),
					0xDC00 + ((cp - 0x10000) & 0x3FF));
			else
				fputc((int)cp, out);
		}
	}
	fputc('"', out);
}

static void dump_value(jcur_t *c, int depth, FILE *out);

struct dump_arg {
	FILE *out;
	int depth;
};

static enum jnext dump_member(jcur_t *c, const char *key, size_t keylen,
			      long index, void *arg)
{
	struct dump_arg *d = arg;
	if (index > 0)
		fputs(", ", d->out);
	if (key) {
		dump_string(key, keylen, d->out);
		fputs(": ", d->out);
	}
	dump_value(c, d->depth + 1, d->out);
	return J_READ;
}

/* dump_value: as json.dumps (", " and ": " separators) writes it. */
static void dump_value(jcur_t *c, int depth, FILE *out)
{
	static const char *const lits[] = { "null", "false", "true" };
	size_t n;
	char *s;
	switch (jvalue(c)) {
	case '{': case '[': {
		struct dump_arg d = { out, depth };
		char open = *c->p;
		fputc(open, out);
		jmembers(c, depth, dump_member, &d);
		fputc(open == '{' ? '}' : ']', out);
		break;
	}
	case '"':
		s = jstring(c, &n);
		dump_string(s, n, out);
		free(s);
		break;
	case 't': case 'f': case 'n':
		fputs(lits[jliteral(c)], out);
		break;
	default:
		print_number(c, out);
	}
}

/* print_top: a value as jsonpath.py printed it: "" for null, True/False,
 * text unquoted, containers as json.dumps. */
static void print_top(jcur_t *c, FILE *out)
{
	static const char *const lits[] = { "", "False", "True" };
	size_t n;
	char *s;
	switch (jvalue(c)) {
	case '"':
		s = jstring(c, &n);
		fwrite(s, 1, n, out);
		free(s);
		break;
	case 't': case 'f': case 'n':
		fputs(lits[jliteral(c)], out);
		break;
	default:
		dump_value(c, 0, out);
	}
}

/* load: the document, checked whole (a file that is not JSON fails,
 * whatever is asked of it). */
static jcur_t load(const char *path, char **buf)
{
	size_t len;
	*buf = read_all(path, &len);
	jcur_t c = { *buf, *buf + len, path };
	jskip(&c, 0);
	jws(&c);
	if (c.p != c.end)
		jfail(&c, "extra data after the value");
	c.p = *buf;
	return c;
}

/* take_flag: true, and the flag dropped, when the first argument is FLAG. */
static bool take_flag(int *argc, char ***argv, const char *flag)
{
	if (*argc > 0 && strcmp((*argv)[0], flag) == 0) {
		(*argc)--, (*argv)++;
		return true;
	}
	return false;
}

/* print_or_0: the value the cursor is at, or 0 when nothing was found. */
static void print_or_0(jcur_t *c, bool found)
{
	if (found)
		print_top(c, stdout);
	else
		putchar('0');
	putchar('\n');
}

static int cmd_json(int argc, char **argv)
{
	bool keys = take_flag(&argc, &argv, "--keys");
	char *buf;
	if (argc < 1)
		die(2, "usage: tq json [--keys] FILE EXPR...");
	jcur_t top = load(argv[0], &buf);
	for (int i = 1; i < argc; i++) {
		jcur_t c = top;
		if (keys)
			printf("%s=", argv[i]);
		if (jwalk(&c, argv[i], true))
			print_top(&c, stdout);
		putchar('\n');
	}
	free(buf);
	return 0;
}

/* counters' names, for stat's message */
static enum jnext list_key(jcur_t *c, const char *key, size_t keylen,
			  long index, void *arg)
{
	(void)c;
	fprintf(arg, "%s%.*s", index ? ", " : "", (int)keylen, key);
	return J_SKIP;
}

static int cmd_stat(int argc, char **argv)
{
	bool or0 = take_flag(&argc, &argv, "--or-0");
	char *buf;
	if (argc != 2)
		die(2, "usage: tq stat [--or-0] FILE NAME");
	const char *name = argv[1];
	jcur_t c = load(argv[0], &buf);
	bool found;
	if (!strchr(name, '.')) {
		jcur_t k = c;
		found = jwalk(&c, "counters", false) && jwalk(&c, name, false);
		if (!found && !or0) {
			fprintf(stderr, "stats has no counter '%s' (have: ", name);
			if (jwalk(&k, "counters", false) && *k.p == '{')
				jmembers(&k, 1, list_key, stderr);
			fputs(")\n", stderr);
			free(buf);
			return 1;
		}
	} else {
		found = jwalk(&c, name, false);
	}
	print_or_0(&c, found);
	free(buf);
	return 0;
}

static int cmd_get(int argc, char **argv)
{
	char *buf;
	if (argc != 2)
		die(2, "usage: tq get FILE PATH");
	jcur_t c = load(argv[0], &buf);
	print_or_0(&c, jwalk(&c, argv[1], false));
	free(buf);
	return 0;
}

struct sum_arg {
	char **except;
	int n;
	long long total;
};

static enum jnext sum_member(jcur_t *c, const char *key, size_t keylen,
			    long index, void *arg)
{
	struct sum_arg *s = arg;
	(void)index;
	for (int i = 0; i < s->n; i++)
		if (strlen(s->except[i]) == keylen && memcmp(s->except[i], key, keylen) == 0)
			return J_SKIP;
	jws(c);
	char *e;
	long long v = strtoll(c->p, &e, 10);
	if (e == c->p || e > c->end)
		jfail(c, "an integer expected");
	s->total += v;
	return J_SKIP;
}

static int cmd_sum(int argc, char **argv)
{
	char *buf;
	if (argc < 2)
		die(2, "usage: tq sum FILE PATH [KEY...]");
	jcur_t c = load(argv[0], &buf);
	struct sum_arg s = { argv + 2, argc - 2, 0 };
	if (!jwalk(&c, argv[1], false) || *c.p != '{')
		die(1, "%s: no object at %s", argv[0], argv[1]);
	jmembers(&c, 1, sum_member, &s);
	printf("%lld\n", s.total);
	free(buf);
	return 0;
}

/* ---- S3 XML error code ------------------------------------------------- */

/* A minimal well-formedness scan: tags balance, one root, nothing but
 * space, comments and processing instructions around it. Reports the
 * root's local name, whether it declares a default namespace, and the
 * text of its first child element named exactly Code. */
struct xml_scan {
	char root[64];
	bool root_ns;
	char code[256];
	bool have_code;
};

static bool name_char(char ch)
{
	return ch && !strchr(" \t\r\n/>=\"'<", ch);
}

static bool xml_scan(const char *p, const char *end, struct xml_scan *x)
{
	const char *stack[MAX_DEPTH];
	size_t stack_len[MAX_DEPTH];
	int depth = 0, roots = 0;
	const char *code_start = NULL;

	memset(x, 0, sizeof *x);
	while (p < end) {
		if (*p != '<') {
			if (depth == 0 && !strchr(" \t\r\n", *p))
				return false;   /* text outside the root */
			p++;
			continue;
		}
		if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
			const char *e = memmem(p + 4, (size_t)(end - p - 4), "-->", 3);
			if (!e)
				return false;
			p = e + 3;
			continue;
		}
		if (end - p >= 2 && p[1] == '?') {
			const char *e = memmem(p + 2, (size_t)(end - p - 2), "?>", 2);
			if (!e)
				return false;
			p = e + 2;
			continue;
		}
		if (end - p >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
			const char *e = memmem(p + 9, (size_t)(end - p - 9), "]]>", 3);
			if (!e || depth == 0)
				return false;
			p = e + 3;
			continue;
		}
		bool closing = end - p >= 2 && p[1] == '/';
		const char *n = p + (closing ? 2 : 1), *ne = n;
		while (ne < end && name_char(*ne))
			ne++;
		if (ne == n)
			return false;
		/* the tag's end, past quoted attribute values */
		const char *q = ne;
		char quote = 0;
		while (q < end && (quote || *q != '>')) {
			if (quote && *q == quote)
				quote = 0;
			else if (!quote && (*q == '"' || *q == '\''))
				quote = *q;
			q++;
		}
		if (q >= end)
			return false;
		bool empty = !closing && q[-1] == '/';
		size_t nlen = (size_t)(ne - n);
		if (closing) {
			if (depth == 0 || stack_len[depth - 1] != nlen ||
			    memcmp(stack[depth - 1], n, nlen) != 0)
				return false;
			depth--;
			if (depth == 1 && code_start) {
				size_t tl = (size_t)(p - code_start);
				if (tl >= sizeof x->code)
					tl = sizeof x->code - 1;
				memcpy(x->code, code_start, tl);
				x->code[tl] = '\0';
				x->have_code = true;
				code_start = NULL;
			}
		} else {
			if (depth == 0) {
				if (roots++)
					return false;
				size_t l = nlen < sizeof x->root ? nlen : sizeof x->root - 1;
				const char *colon = memchr(n, ':', nlen);
				if (colon) {   /* a prefix: the local name */
					l = (size_t)(ne - colon - 1);
					if (l >= sizeof x->root)
						l = sizeof x->root - 1;
					memcpy(x->root, colon + 1, l);
				} else {
					memcpy(x->root, n, l);
				}
				x->root[l] = '\0';
				x->root_ns = memmem(ne, (size_t)(q - ne), "xmlns=", 6) != NULL;
			} else if (depth == 1 && !x->have_code && !code_start &&
				   nlen == 4 && memcmp(n, "Code", 4) == 0) {
				if (empty)
					x->have_code = true;   /* <Code/>: no text */
				else
					code_start = q + 1;
			}
			if (!empty) {
				if (depth == MAX_DEPTH)
					return false;
				stack[depth] = n;
				stack_len[depth++] = nlen;
			}
		}
		p = q + 1;
	}
	return depth == 0 && roots == 1;
}

/* Code text as ElementTree gives it: the five entities decoded; a child
 * element inside <Code> ends the text there. */
static void print_xml_text(const char *s)
{
	static const struct { const char *ent; char ch; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
		{ "&quot;", '"' }, { "&apos;", '\'' },
	};
	for (; *s && *s != '<'; s++) {
		size_t i;
		for (i = 0; i < sizeof ents / sizeof ents[0]; i++)
			if (strncmp(s, ents[i].ent, strlen(ents[i].ent)) == 0)
				break;
		if (i < sizeof ents / sizeof ents[0]) {
			putchar(ents[i].ch);
			s += strlen(ents[i].ent) - 1;
		} else {
			putchar(*s);
		}
	}
}

static int cmd_s3code(int argc, char **argv)
{
	struct xml_scan x;
	size_t len;
	char *buf;
	if (argc != 1)
		die(2, "usage: tq s3code FILE");
	FILE *f = fopen(argv[0], "rb");
	if (!f)
		return 0;   /* no body: not S3 XML */
	fclose(f);
	buf = read_all(argv[0], &len);
	if (xml_scan(buf, buf + len, &x) && strcmp(x.root, "Error") == 0 &&
	    !x.root_ns && x.have_code && x.code[0] && x.code[0] != '<') {
		print_xml_text(x.code);
		putchar('\n');
	}
	free(buf);
	return 0;
}

/* ---- files and ports ------------------------------------------------- */

/* SHA-256 (FIPS 180-4) of one short message (< 2^32 bytes), here and not
 * from libcrypto: loading libcrypto is 7 ms of each tq start, and only
 * mkfile hashes. Checked against Python's hashlib by test_tq.sh. */
#define SHA256_LEN 32
static void sha256(const unsigned char *msg, size_t len, unsigned char out[SHA256_LEN])
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
		0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
		0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
		0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
		0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
		0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
		0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
		0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
		0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
		0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
		0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
	};
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	size_t padded = (len + 9 + 63) / 64 * 64;
	unsigned char *m = calloc(1, padded);
	if (!m)
		die(1, "out of memory");
	memcpy(m, msg, len);
	m[len] = 0x80;
	for (int i = 0; i < 8; i++)
		m[padded - 1 - i] = (unsigned char)((uint64_t)len * 8 >> (8 * i));
#define ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))
	for (size_t blk = 0; blk < padded; blk += 64) {
		uint32_t w[64], a[8];
		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)m[blk + 4 * i] << 24 | (uint32_t)m[blk + 4 * i + 1] << 16 |
			       (uint32_t)m[blk + 4 * i + 2] << 8 | m[blk + 4 * i + 3];
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ w[i - 15] >> 3;
			uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ w[i - 2] >> 10;
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		memcpy(a, h, sizeof a);
		for (int i = 0; i < 64; i++) {
			uint32_t s1 = ROR(a[4], 6) ^ ROR(a[4], 11) ^ ROR(a[4], 25);
			uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
			uint32_t t1 = a[7] + s1 + ch + k[i] + w[i];
			uint32_t s0 = ROR(a[0], 2) ^ ROR(a[0], 13) ^ ROR(a[0], 22);
			uint32_t maj = (a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]);
			memmove(a + 1, a, 7 * sizeof a[0]);
			a[4] += t1;
			a[0] = t1 + s0 + maj;
		}
		for (int i = 0; i < 8; i++)
			h[i] += a[i];
	}
#undef ROR
	for (int i = 0; i < 8; i++)
		for (int b = 0; b < 4; b++)
			out[4 * i + b] = (unsigned char)(h[i] >> (24 - 8 * b));
	free(m);
}

static int cmd_mkfile(int argc, char **argv)
{
	unsigned char seed[SHA256_LEN], in[SHA256_LEN + 8], digest[SHA256_LEN];
	static unsigned char block[65536];
	char *e;
	if (argc != 2)
		die(2, "usage: tq mkfile PATH BYTES");
	errno = 0;
	unsigned long long n = strtoull(argv[1], &e, 10);
	if (errno || *e || e == argv[1])
		die(2, "mkfile: BYTES: a number, not [%s]", argv[1]);
	FILE *f = fopen(argv[0], "wb");
	if (!f)
		die(1, "%s: %s", argv[0], strerror(errno));
	sha256((const unsigned char *)argv[0], strlen(argv[0]), seed);
	memcpy(in, seed, sizeof seed);
	for (uint64_t i = 0; n > 0; i++) {
		for (int b = 0; b < 8; b++)
			in[sizeof seed + b] = (unsigned char)(i >> (56 - 8 * b));
		sha256(in, sizeof in, digest);
		for (size_t off = 0; off < sizeof block; off += sizeof digest)
			memcpy(block + off, digest, sizeof digest);
		size_t w = n < sizeof block ? (size_t)n : sizeof block;
		if (fwrite(block, 1, w, f) != w)
			die(1, "%s: %s", argv[0], strerror(errno));
		n -= w;
	}
	if (fclose(f) != 0)
		die(1, "%s: %s", argv[0], strerror(errno));
	return 0;
}

/* ---- HTTP ------------------------------------------------------------ */

/* curl's exit codes, for the callers that used curl */
enum { HTTP_ENOCONN = 7, HTTP_EWEIRD = 8, HTTP_ESTATUS = 22,
       HTTP_ETIME = 28, HTTP_ESHORT = 18 };

struct http_answer {
	int status;          /* the answer's status code */
	char *buf;           /* everything read; the body starts at body */
	char *body;
	size_t len;          /* the body's length */
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* wait_fd: 0 once fd is ready for events, HTTP_ETIME at the deadline. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		double left = deadline - mono_now();
		struct pollfd pfd = { fd, events, 0 };
		if (left <= 0)
			return HTTP_ETIME;
		int n = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			die(1, "poll: %s", strerror(errno));
	}
}

/* parse_url: the IPv4 address, port and path of an http:// URL (the
 * path points into url); exits 2 for any other URL. */
static const char *parse_url(const char *url, struct sockaddr_in *a)
{
	char host[64];
	const char *hp = url + 7, *path = strchr(hp, '/');
	size_t hl = path ? (size_t)(path - hp) : strlen(hp);
	const char *colon = memchr(hp, ':', hl);
	size_t namel = colon ? (size_t)(colon - hp) : hl;
	unsigned long port = 80;

	if (strncmp(url, "http://", 7) != 0 || namel == 0 || namel >= sizeof host)
		die(2, "http: not an http://HOST[:PORT][/PATH] URL: %s", url);
	memcpy(host, hp, namel);
	host[namel] = '\0';
	if (colon) {
		char *e;
		port = strtoul(colon + 1, &e, 10);
		if (e != hp + hl || e == colon + 1 || port == 0 || port > 65535)
			die(2, "http: bad port in %s", url);
	}
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (strcmp(host, "localhost") == 0)
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		die(2, "http: the host must be IPv4 or localhost: %s", url);
	return path ? path : "/";
}

/* header_value: the value of header name in the head [p, end) (the
 * status line first), or NULL; *vl its length. */
static const char *header_value(const char *p, const char *end,
				const char *name, size_t *vl)
{
	size_t nl = strlen(name);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > nl && p[nl] == ':' &&
		    strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			*vl = (size_t)(ve - v);
			return v;
		}
		p = eol + 1;
	}
	return NULL;
}

/* dechunk: decodes a chunked body [b, b + n) in place; its length, or
 * -1 when it is malformed or not all there. */
static long dechunk(char *b, size_t n)
{
	char *r = b, *end = b + n, *w = b;
	for (;;) {
		char *e;
		char *eol = memchr(r, '\n', (size_t)(end - r));
		if (!eol)
			return -1;
		errno = 0;
		unsigned long sz = strtoul(r, &e, 16);
		if (e == r || errno || sz > (size_t)(end - eol - 1))
			return -1;
		r = eol + 1;
		if (sz == 0)
			return (long)(w - b);
		memmove(w, r, sz);
		w += sz;
		r += sz;
		if (end - r < 2 || r[0] != '\r' || r[1] != '\n')
			return -1;
		r += 2;
	}
}

/* http_do: one request of method to url, answered within max_time
 * seconds; 0 with *a filled (the caller frees a->buf), or an HTTP_E*. */
static int http_do(const char *method, const char *url, double max_time,
		   struct http_answer *a)
{
	struct sockaddr_in sa;
	const char *path = parse_url(url, &sa);
	double deadline = mono_now() + max_time;
	char req[8192];
	bool head = strcmp(method, "HEAD") == 0;
	/* no body, so no Content-Length: what `curl -X POST URL` sends */
	int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: %.*s\r\n"
			 "User-Agent: tq\r\nAccept: */*\r\nConnection: close\r\n\r\n",
			 method, path, (int)(strcspn(url + 7, "/")), url + 7);
	if (n < 0 || (size_t)n >= sizeof req)
		die(2, "http: the URL is too long");

	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(1, "socket: %s", strerror(errno));
	int rv = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int err = 0;
		socklen_t el = sizeof err;
		if (errno != EINPROGRESS)
			rv = HTTP_ENOCONN;
		else if ((rv = wait_fd(fd, POLLOUT, deadline)) == 0 &&
			 (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err))
			rv = HTTP_ENOCONN;
	}
	for (size_t off = 0; rv == 0 && off < (size_t)n;) {
		ssize_t w = send(fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
		if (w > 0)
			off += (size_t)w;
		else if (w < 0 && errno == EAGAIN)
			rv = wait_fd(fd, POLLOUT, deadline);
		else if (w < 0 && errno != EINTR)
			rv = HTTP_ENOCONN;
	}

	size_t cap = 1 << 16, got = 0, need = SIZE_MAX;
	size_t hlen = 0;        /* the head's length, once it is all read */
	bool chunked = false;
	char *buf = malloc(cap);
	if (!buf)
		die(1, "out of memory");
	while (rv == 0 && got < need) {
		if (got + 1 == cap)
			buf = grow(buf, &cap, url);
		ssize_t r = recv(fd, buf + got, cap - got - 1, 0);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EAGAIN)
				rv = wait_fd(fd, POLLIN, deadline);
			else if (errno != EINTR)
				rv = got ? HTTP_ESHORT : HTTP_ENOCONN;
			continue;
		}
		got += (size_t)r;
		buf[got] = '\0';
		const char *hend;
		if (hlen == 0 && (hend = strstr(buf, "\r\n\r\n")) != NULL) {
			size_t vl;
			const char *v;
			hlen = (size_t)(hend - buf) + 4;
			if (head)
				need = hlen;
			else if ((v = header_value(buf, buf + hlen, "Transfer-Encoding", &vl)) &&
				 vl == 7 && strncasecmp(v, "chunked", 7) == 0)
				chunked = true;
			else if ((v = header_value(buf, buf + hlen, "Content-Length", &vl))) {
				char *e;
				unsigned long long cl = strtoull(v, &e, 10);
				if (e == v || e != v + vl || *v == '-' || cl > MAX_INPUT)
					rv = HTTP_EWEIRD;   /* a length not to trust */
				else
					need = hlen + (size_t)cl;
			}
		}
	}
	close(fd);
	buf[got] = '\0';
	if (rv == 0 && (hlen == 0 || strncmp(buf, "HTTP/1.", 7) != 0 ||
			sscanf(buf + 8, " %3d", &a->status) != 1))
		rv = got ? HTTP_EWEIRD : HTTP_ESHORT;
	if (rv == 0 && need != SIZE_MAX && got < need)
		rv = HTTP_ESHORT;
	if (rv == 0 && a->status == 204)
		need = hlen;
	if (rv == 0) {
		a->buf = buf;
		a->body = buf + hlen;
		a->len = (need != SIZE_MAX ? need : got) - hlen;
		if (chunked) {
			long dl = dechunk(a->body, got - hlen);
			if (dl < 0)
				rv = HTTP_ESHORT;
			else
				a->len = (size_t)dl;
		}
		a->body[a->len] = '\0';
	}
	if (rv != 0)
		free(buf);
	return rv;
}

/* http_read: read_all() of a URL: a GET's body; exit 1 without a 2xx. */
static char *http_read(const char *url, size_t *len)
{
	struct http_answer a;
	int rv = http_do("GET", url, 10, &a);
	if (rv != 0)
		die(1, "%s: no answer (curl's exit code would be %d)", url, rv);
	if (a.status / 100 != 2)
		die(1, "%s: HTTP %d", url, a.status);
	memmove(a.buf, a.body, a.len + 1);
	*len = a.len;
	return a.buf;
}

static int cmd_http(int argc, char **argv)
{
	const char *method = "GET";
	double max_time = 10;
	bool code_only = false;
	for (;;) {
		if (argc >= 2 && strcmp(argv[0], "-X") == 0) {
			method = argv[1];
			argc -= 2, argv += 2;
		} else if (argc >= 2 && strcmp(argv[0], "-m") == 0) {
			char *e;
			max_time = strtod(argv[1], &e);
			if (*e || !(max_time > 0 && max_time <= 3600))
				die(2, "http: -m takes seconds, not %s", argv[1]);
			argc -= 2, argv += 2;
		} else if (take_flag(&argc, &argv, "-w")) {
			code_only = true;
		} else {
			break;
		}
	}
	if (argc != 1 || !*method || strcspn(method, " \r\n") != strlen(method))
		die(2, "usage: tq http [-X METHOD] [-m SECS] [-w] URL");
	struct http_answer a;
	int rv = http_do(method, argv[0], max_time, &a);
	if (code_only) {
		printf("%03d\n", rv == 0 ? a.status : 0);
	} else if (rv == 0 && a.status < 400) {
		if (fwrite(a.body, 1, a.len, stdout) != a.len)
			die(1, "stdout: %s", strerror(errno));
	} else if (rv == 0) {
		rv = HTTP_ESTATUS;
	}
	if (rv == 0 || rv == HTTP_ESTATUS)
		free(a.buf);
	return rv;
}

static int cmd_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		die(1, "port: %s", strerror(errno));
	printf("%u\n", ntohs(a.sin_port));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die(2, "usage: tq json|stat|get|sum|s3code|mkfile|port|http ARGS (see tests/lib/tq.c)");
	const char *cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "json") == 0)
		return cmd_json(argc, argv);
	if (strcmp(cmd, "stat") == 0)
		return cmd_stat(argc, argv);
	if (strcmp(cmd, "get") == 0)
		return cmd_get(argc, argv);
	if (strcmp(cmd, "sum") == 0)
		return cmd_sum(argc, argv);
	if (strcmp(cmd, "s3code") == 0)
		return cmd_s3code(argc, argv);
	if (strcmp(cmd, "mkfile") == 0)
		return cmd_mkfile(argc, argv);
	if (strcmp(cmd, "port") == 0 && argc == 0)
		return cmd_port();
	if (strcmp(cmd, "http") == 0)
		return cmd_http(argc, argv);
	die(2, "unknown command [%s]", cmd);
}
