/*
 * prefetch_plan.c — plans: parsing a body of keys (plain or gzip) into a
 * compact, immutable, refcounted key order (prefetch_plan.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "policy/policy.h"
#include "prefetch/prefetch_plan.h"
#include "s3/s3_hints.h"
#include "s3/s3_request.h"
#include "util/util_assert.h"
#include "util/util_error.h"
#include "util/util_hash.h"

#define GZ_OUT (64u << 10)
#define LINE_MAX_BYTES (BC_S3_MAX_KEY + 1)   /* a key and a CR */

struct bc_plan_s {
	atomic_uint refs;
	uint32_t    n;
	uint32_t    mask;       /* table size - 1 */
	char       *arena;      /* keys, each NUL-terminated */
	size_t      arena_len;
	uint32_t   *off;        /* n + 1: key i is arena[off[i]..off[i+1]-1) */
	uint32_t   *next;       /* n: next position of the same key */
	uint32_t   *table;      /* mask + 1: first positions, NONE empty */
	/* bc_plan_index_hashes: first positions by first-chunk name */
	char       *bucket;
	uint32_t   *htable;     /* mask + 1, NONE empty */
};

typedef enum { MODE_UNKNOWN, MODE_PLAIN, MODE_GZIP } mode_t_;

struct bc_plan_builder_s {
	mode_t_        mode;
	unsigned char  head[2];
	size_t         nhead;
	bool           failed;
	bool           gz_end;      /* the last gzip member ended */
	z_stream       z;
	bool           z_live;
	unsigned char *gzout;
	uint64_t       in_bytes;    /* as received */
	uint64_t       body_bytes;  /* after gunzip */
	uint64_t       line_no;
	char           line[LINE_MAX_BYTES];
	size_t         nline;
	char          *arena;
	size_t         arena_len, arena_cap;
	uint32_t      *off;
	uint32_t       n, off_cap;
};

bc_plan_builder_t *
bc_plan_builder_new(void)
{
	return calloc(1, sizeof(bc_plan_builder_t));
}

void
bc_plan_builder_free(bc_plan_builder_t *b)
{
	if (b == NULL)
		return;
	if (b->z_live)
		inflateEnd(&b->z);
	free(b->gzout);
	free(b->arena);
	free(b->off);
	free(b);
}

static int
fail(bc_plan_builder_t *b, int rv, char *err, size_t errlen,
    const char *what)
{
	b->failed = true;
	if (b->line_no > 0 && rv == BC_EINVAL)
		bc_errf(err, errlen, "line %llu: %s",
		    (unsigned long long)b->line_no, what);
	else
		bc_errf(err, errlen, "%s", what);
	return rv;
}

static int
add_key(bc_plan_builder_t *b, const char *k, size_t n, char *err,
    size_t errlen)
{
	b->line_no++;
	if (n > 0 && k[n - 1] == '\r')
		n--;
	if (n == 0)
		return 0;
	if (!bc_s3_hint_key_ok(k, n))
		return fail(b, BC_EINVAL, err, errlen, n > BC_S3_MAX_KEY ?
		    "key longer than 1024 bytes" :
		    "key holds NUL or a \".\" or \"..\" segment");
	if (b->n == BC_PLAN_MAX_KEYS)
		return fail(b, BC_E2BIG, err, errlen,
		    "plan has more than 4194304 keys");
	if (b->arena_len + n + 1 > b->arena_cap) {
		size_t cap = b->arena_cap < 65536 ? 65536 : b->arena_cap * 2;
		char *a = realloc(b->arena, cap);

		if (a == NULL)
			return fail(b, BC_ENOMEM, err, errlen, "out of memory");
		b->arena = a;
		b->arena_cap = cap;
	}
	if (b->n + 2 > b->off_cap) {
		uint32_t cap = b->off_cap < 4096 ? 4096 : b->off_cap * 2;
		uint32_t *o = realloc(b->off, (size_t)cap * sizeof(*o));

		if (o == NULL)
			return fail(b, BC_ENOMEM, err, errlen, "out of memory");
		b->off = o;
		b->off_cap = cap;
	}
	b->off[b->n++] = (uint32_t)b->arena_len;
	memcpy(b->arena + b->arena_len, k, n);
	b->arena[b->arena_len + n] = '\0';
	b->arena_len += n + 1;
	return 0;
}

/* plain body bytes: split into lines */
static int
feed_lines(bc_plan_builder_t *b, const char *p, size_t n, char *err,
    size_t errlen)
{
	const char *end = p + n;
	int rv;

	b->body_bytes += n;
	if (b->body_bytes > BC_PLAN_MAX_BYTES)
		return fail(b, BC_E2BIG, err, errlen,
		    "plan body over 268435456 bytes");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t take = (size_t)((nl != NULL ? nl : end) - p);

		if (b->nline + take > LINE_MAX_BYTES) {
			b->line_no++;
			return fail(b, BC_EINVAL, err, errlen,
			    "key longer than 1024 bytes");
		}
		if (nl == NULL) {
			memcpy(b->line + b->nline, p, take);
			b->nline += take;
			return 0;
		}
		if (b->nline > 0) {
			memcpy(b->line + b->nline, p, take);
			rv = add_key(b, b->line, b->nline + take, err, errlen);
			b->nline = 0;
		} else {
			rv = add_key(b, p, take, err, errlen);
		}
		if (rv < 0)
			return rv;
		p = nl + 1;
	}
	return 0;
}

static int
feed_gzip(bc_plan_builder_t *b, const unsigned char *p, size_t n,
    char *err, size_t errlen)
{
	int rv;

	if (!b->z_live) {
		b->gzout = malloc(GZ_OUT);
		if (b->gzout == NULL || inflateInit2(&b->z, 16 + MAX_WBITS) !=
		    Z_OK)
			return fail(b, BC_ENOMEM, err, errlen, "out of memory");
		b->z_live = true;
	}
	b->z.next_in = (unsigned char *)p;
	b->z.avail_in = (uInt)n;
	for (;;) {
		size_t made;
		int zr;

		if (b->gz_end) {
			if (b->z.avail_in == 0)
				break;
			/* another gzip member follows (concatenated files) */
			if (inflateReset(&b->z) != Z_OK)
				return fail(b, BC_EINVAL, err, errlen,
				    "corrupt gzip stream");
			b->gz_end = false;
		}
		b->z.next_out = b->gzout;
		b->z.avail_out = GZ_OUT;
		zr = inflate(&b->z, Z_NO_FLUSH);
		if (zr == Z_MEM_ERROR)
			return fail(b, BC_ENOMEM, err, errlen, "out of memory");
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return fail(b, BC_EINVAL, err, errlen,
			    "corrupt gzip stream");
		made = GZ_OUT - b->z.avail_out;
		rv = feed_lines(b, (const char *)b->gzout, made, err, errlen);
		if (rv < 0)
			return rv;
		if (zr == Z_STREAM_END)
			b->gz_end = true;
		else if (made == 0 || (b->z.avail_in == 0 &&
		    b->z.avail_out > 0))
			break;
	}
	return 0;
}

static int
feed_mode(bc_plan_builder_t *b, const void *data, size_t n, char *err,
    size_t errlen)
{
	if (n == 0)
		return 0;
	return b->mode == MODE_GZIP ? feed_gzip(b, data, n, err, errlen) :
	    feed_lines(b, data, n, err, errlen);
}

int
bc_plan_builder_feed(bc_plan_builder_t *b, const void *data, size_t n,
    char *err, size_t errlen)
{
	const unsigned char *p = data;
	int rv;

	if (b->failed)
		return BC_EINVAL;
	b->in_bytes += n;
	if (b->in_bytes > BC_PLAN_MAX_BYTES)
		return fail(b, BC_E2BIG, err, errlen,
		    "plan body over 268435456 bytes");
	if (b->mode == MODE_UNKNOWN) {
		while (n > 0 && b->nhead < 2) {
			b->head[b->nhead++] = *p++;
			n--;
		}
		if (b->nhead < 2)
			return 0;
		b->mode = b->head[0] == 0x1f && b->head[1] == 0x8b ?
		    MODE_GZIP : MODE_PLAIN;
		rv = feed_mode(b, b->head, 2, err, errlen);
		if (rv < 0)
			return rv;
	}
	return feed_mode(b, p, n, err, errlen);
}

size_t
bc_plan_builder_memory(const bc_plan_builder_t *b)
{
	/* zlib's inflate state and window: about 7 KiB + 32 KiB */
	return sizeof(*b) + b->arena_cap + (size_t)b->off_cap *
	    sizeof(*b->off) + (b->gzout != NULL ? GZ_OUT + (40u << 10) : 0);
}

static int
build_index(bc_plan_t *p)
{
	size_t size = 2;

	while (size < (size_t)p->n * 2)
		size *= 2;
	p->mask = (uint32_t)(size - 1);
	p->table = malloc(size * sizeof(*p->table));
	p->next = malloc((size_t)p->n * sizeof(*p->next));
	if (p->table == NULL || p->next == NULL)
		return BC_ENOMEM;
	memset(p->table, 0xff, size * sizeof(*p->table));
	for (uint32_t i = p->n; i-- > 0;) {
		const char *k = p->arena + p->off[i];
		size_t len = p->off[i + 1] - p->off[i] - 1;
		uint32_t h = (uint32_t)bc_hash(BC_HASH_INIT, k, len) & p->mask;

		p->next[i] = BC_PLAN_NONE;
		for (;; h = (h + 1) & p->mask) {
			uint32_t f = p->table[h];

			if (f == BC_PLAN_NONE)
				break;
			if (p->off[f + 1] - p->off[f] - 1 == len &&
			    memcmp(p->arena + p->off[f], k, len) == 0) {
				p->next[i] = f;
				break;
			}
		}
		p->table[h] = i;
	}
	return 0;
}

int
bc_plan_builder_finish(bc_plan_builder_t *b, bc_plan_t **out, char *err,
    size_t errlen)
{
	bc_plan_t *p = NULL;
	int rv;

	*out = NULL;
	if (b->failed)
		return BC_EINVAL;
	if (b->mode == MODE_UNKNOWN && b->nhead > 0) {
		b->mode = MODE_PLAIN;
		rv = feed_mode(b, b->head, b->nhead, err, errlen);
		if (rv < 0)
			return rv;
	}
	if (b->mode == MODE_GZIP && !b->gz_end)
		return fail(b, BC_EINVAL, err, errlen,
		    "truncated gzip stream");
	if (b->nline > 0) {
		rv = add_key(b, b->line, b->nline, err, errlen);
		b->nline = 0;
		if (rv < 0)
			return rv;
	}
	if (b->n == 0)
		return fail(b, BC_EINVAL, err, errlen, "plan has no keys");
	b->failed = true;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto nomem;
	atomic_init(&p->refs, 1);
	p->n = b->n;
	b->off[b->n] = (uint32_t)b->arena_len;
	p->arena = realloc(b->arena, b->arena_len);
	if (p->arena == NULL)
		goto nomem;
	b->arena = NULL;
	p->arena_len = b->arena_len;
	p->off = realloc(b->off, ((size_t)b->n + 1) * sizeof(*p->off));
	if (p->off == NULL)
		goto nomem;
	b->off = NULL;
	if (build_index(p) < 0)
		goto nomem;
	*out = p;
	return 0;
nomem:
	bc_plan_unref(p);
	bc_errf(err, errlen, "out of memory");
	return BC_ENOMEM;
}

int
bc_plan_parse(const void *body, size_t n, bc_plan_t **out, char *err,
    size_t errlen)
{
	bc_plan_builder_t *b = bc_plan_builder_new();
	int rv;

	*out = NULL;
	if (b == NULL)
		return BC_ENOMEM;
	rv = bc_plan_builder_feed(b, body, n, err, errlen);
	if (rv == 0)
		rv = bc_plan_builder_finish(b, out, err, errlen);
	bc_plan_builder_free(b);
	return rv;
}

void
bc_plan_ref(bc_plan_t *p)
{
	unsigned old = atomic_fetch_add(&p->refs, 1);

	BC_CHECK(old > 0);
}

void
bc_plan_unref(bc_plan_t *p)
{
	unsigned old;

	if (p == NULL)
		return;
	old = atomic_fetch_sub(&p->refs, 1);
	BC_CHECK(old > 0);
	if (old > 1)
		return;
	free(p->arena);
	free(p->off);
	free(p->next);
	free(p->table);
	free(p->bucket);
	free(p->htable);
	free(p);
}

uint32_t
bc_plan_len(const bc_plan_t *p)
{
	return p->n;
}

const char *
bc_plan_key(const bc_plan_t *p, uint32_t i, size_t *len)
{
	if (len != NULL)
		*len = p->off[i + 1] - p->off[i] - 1;
	return p->arena + p->off[i];
}

uint32_t
bc_plan_find(const bc_plan_t *p, const char *key, size_t len, uint32_t from)
{
	uint32_t h = (uint32_t)bc_hash(BC_HASH_INIT, key, len) & p->mask;
	uint32_t f;

	for (;; h = (h + 1) & p->mask) {
		f = p->table[h];
		if (f == BC_PLAN_NONE)
			return BC_PLAN_NONE;
		if (p->off[f + 1] - p->off[f] - 1 == len &&
		    memcmp(p->arena + p->off[f], key, len) == 0)
			break;
	}
	while (f != BC_PLAN_NONE && f < from)
		f = p->next[f];
	return f;
}

size_t
bc_plan_memory(const bc_plan_t *p)
{
	return sizeof(*p) + p->arena_len + ((size_t)p->n + 1) *
	    sizeof(*p->off) + (size_t)p->n * sizeof(*p->next) +
	    ((size_t)p->mask + 1) * sizeof(*p->table) *
	    (p->htable != NULL ? 2 : 1);
}

/* The first-chunk name of the key at position i. */
static uint64_t
key_hash(const bc_plan_t *p, uint32_t i)
{
	return bc_policy_key_hash(p->bucket, p->arena + p->off[i], 0);
}

int
bc_plan_index_hashes(bc_plan_t *p, const char *bucket)
{
	size_t size = (size_t)p->mask + 1;

	if (p->htable != NULL)   /* indexed already */
		return 0;
	p->bucket = strdup(bucket);
	p->htable = malloc(size * sizeof(*p->htable));
	if (p->bucket == NULL || p->htable == NULL) {
		free(p->bucket);
		free(p->htable);
		p->bucket = NULL;
		p->htable = NULL;
		return BC_ENOMEM;
	}
	memset(p->htable, 0xff, size * sizeof(*p->htable));
	/* the first occurrence of each key (its later ones chain through
	 * next[]), in the slot of its name */
	for (uint32_t i = 0; i < p->n; i++) {
		const char *k = p->arena + p->off[i];
		size_t len = p->off[i + 1] - p->off[i] - 1;
		uint64_t h;
		uint32_t s;

		if (bc_plan_find(p, k, len, 0) != i)
			continue;
		h = key_hash(p, i);
		for (s = (uint32_t)h & p->mask; p->htable[s] != BC_PLAN_NONE;
		    s = (s + 1) & p->mask)
			;
		p->htable[s] = i;
	}
	return 0;
}

uint32_t
bc_plan_find_hash(const bc_plan_t *p, uint64_t h, uint32_t from)
{
	uint32_t s, f;

	if (p->htable == NULL)
		return BC_PLAN_NONE;
	for (s = (uint32_t)h & p->mask;; s = (s + 1) & p->mask) {
		f = p->htable[s];
		if (f == BC_PLAN_NONE)
			return BC_PLAN_NONE;
		if (key_hash(p, f) == h)
			break;
	}
	while (f != BC_PLAN_NONE && f < from)
		f = p->next[f];
	return f;
}
