/*
 * s3_verdicts.c — presigned-URL verdict cache (see s3_verdicts.h).
 *
 * A direct-mapped table: a key's slot is its FNV-1a hash masked; a store
 * replaces whatever the slot held. Slots are locked in stripes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_sigv4.h"
#include "s3/s3_verdicts.h"
#include "util/util_hash.h"
#include "util/util_num.h"

#define STRIPES     64
#define MAX_EXPIRES 604800   /* a week, as the verifier allows */

typedef struct slot_s {
	char         *key;      /* NULL: empty */
	size_t        klen;
	time_t        from, until;
	bc_s3_auth_t  auth;
} slot_t;

struct bc_s3_verdicts_s {
	slot_t          *slots;
	size_t           mask;
	pthread_mutex_t  mu[STRIPES];
	_Atomic uint64_t hits, stores;
};

bc_s3_verdicts_t *
bc_s3_verdicts_new(size_t entries)
{
	bc_s3_verdicts_t *v = calloc(1, sizeof(*v));
	size_t n = STRIPES;

	if (v == NULL)
		return NULL;
	while (n < entries)
		n *= 2;
	v->slots = calloc(n, sizeof(*v->slots));
	if (v->slots == NULL) {
		free(v);
		return NULL;
	}
	v->mask = n - 1;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&v->mu[i], NULL);
	return v;
}

void
bc_s3_verdicts_clear(bc_s3_verdicts_t *v)
{
	for (size_t i = 0; i <= v->mask; i++) {
		pthread_mutex_lock(&v->mu[i % STRIPES]);
		free(v->slots[i].key);
		v->slots[i].key = NULL;
		pthread_mutex_unlock(&v->mu[i % STRIPES]);
	}
}

void
bc_s3_verdicts_free(bc_s3_verdicts_t *v)
{
	if (v == NULL)
		return;
	bc_s3_verdicts_clear(v);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&v->mu[i]);
	free(v->slots);
	free(v);
}

void
bc_s3_verdicts_counts(bc_s3_verdicts_t *v, uint64_t *hits, uint64_t *stores)
{
	*hits = atomic_load(&v->hits);
	*stores = atomic_load(&v->stores);
}

/* Appends n bytes at p to buf (cap bytes, *len used); false when full. */
static bool
put(char *buf, size_t cap, size_t *len, const char *p, size_t n)
{
	if (n > cap - *len)
		return false;
	memcpy(buf + *len, p, n);
	*len += n;
	return true;
}

/*
 * The cache key of a presigned SigV4 request: method, path and query as
 * received, and each header X-Amz-SignedHeaders names with every value it
 * has, in order, '\n'-separated (values hold no LF: the front end refuses
 * control characters). Sets the validity window. Returns the key's length,
 * or 0 when r is not presigned SigV4, its window cannot be read, or the
 * key does not fit in buf.
 */
static size_t
verdict_key(const bc_s3_req_t *r, char *buf, size_t cap, time_t *from,
    time_t *until)
{
	const char *sh = bc_kv_get_exact(&r->query, "X-Amz-SignedHeaders");
	const char *date = bc_kv_get_exact(&r->query, "X-Amz-Date");
	const char *exp = bc_kv_get_exact(&r->query, "X-Amz-Expires");
	size_t len = 0;
	time_t t;
	uint64_t e;

	if (sh == NULL || date == NULL ||
	    bc_kv_get_exact(&r->query, "X-Amz-Signature") == NULL ||
	    bc_sigv4_parse_amz_date(date, &t) < 0 ||
	    bc_parse_u64_str(exp, 10, MAX_EXPIRES, &e) < 0)
		return 0;
	*from = t - BC_S3_MAX_SKEW;
	*until = t + (time_t)e;
	if (!put(buf, cap, &len, r->method, strlen(r->method)) ||
	    !put(buf, cap, &len, "\n", 1) ||
	    !put(buf, cap, &len, r->raw_path, strlen(r->raw_path)) ||
	    !put(buf, cap, &len, "?", 1) ||
	    !put(buf, cap, &len, r->raw_query, strlen(r->raw_query)))
		return 0;
	while (*sh != '\0') {
		size_t n = strcspn(sh, ";");

		for (size_t i = 0; i < r->headers.n; i++) {
			const bc_kv_t *h = &r->headers.v[i];

			if (strlen(h->name) != n ||
			    strncasecmp(h->name, sh, n) != 0)
				continue;
			if (!put(buf, cap, &len, "\n", 1) ||
			    !put(buf, cap, &len, h->name, n) ||
			    !put(buf, cap, &len, ":", 1) ||
			    !put(buf, cap, &len, h->value, strlen(h->value)))
				return 0;
		}
		sh += n;
		if (*sh == ';')
			sh++;
	}
	return len;
}

bc_s3err_t
bc_s3_verdicts_verify(bc_s3_verdicts_t *v, const bc_s3_req_t *r,
    time_t now, bc_s3_secret_fn secret, void *ctx, bool allow_anonymous,
    bc_s3_auth_t *out, bool *cached)
{
	char key[BC_S3_VERDICT_MAX_KEY];
	size_t klen = 0, i = 0;
	time_t from = 0, until = 0;
	pthread_mutex_t *mu = NULL;
	slot_t *s;
	bc_s3err_t e;
	bool hit = false;

	if (cached != NULL)
		*cached = false;
	if (v != NULL)
		klen = verdict_key(r, key, sizeof(key), &from, &until);
	if (klen > 0 && now >= from && now <= until) {
		i = (size_t)bc_hash(BC_HASH_INIT, key, klen) & v->mask;
		mu = &v->mu[i % STRIPES];
		s = &v->slots[i];
		pthread_mutex_lock(mu);
		if (s->key != NULL && s->klen == klen &&
		    memcmp(s->key, key, klen) == 0 && now >= s->from &&
		    now <= s->until) {
			*out = s->auth;
			hit = true;
		}
		pthread_mutex_unlock(mu);
		if (hit) {
			atomic_fetch_add_explicit(&v->hits, 1,
			    memory_order_relaxed);
			if (cached != NULL)
				*cached = true;
			return BC_S3E_NONE;
		}
	}
	e = bc_s3_auth_verify(r, now, secret, ctx, allow_anonymous, out);
	if (e != BC_S3E_NONE || mu == NULL || out->kind != BC_S3AUTH_V4_QUERY)
		return e;
	s = &v->slots[i];
	pthread_mutex_lock(mu);
	if (s->key == NULL || s->klen < klen) {
		char *k = realloc(s->key, klen);

		if (k == NULL) {
			free(s->key);
			s->key = NULL;
			pthread_mutex_unlock(mu);
			return e;   /* not remembered: no harm */
		}
		s->key = k;
	}
	memcpy(s->key, key, klen);
	s->klen = klen;
	s->from = from;
	s->until = until;
	s->auth = *out;
	pthread_mutex_unlock(mu);
	atomic_fetch_add_explicit(&v->stores, 1, memory_order_relaxed);
	return e;
}
