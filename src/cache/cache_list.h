/*
 * cache_list.h — the list cache: whole 200 answers of ListObjects and
 * ListObjectsV2, kept per request (bucket, version, prefix, delimiter,
 * marker / start-after, max-keys, continuation-token, encoding-type,
 * fetch-owner, and whether the request goes upstream unsigned) for
 * --list-ttl, or until dropped when the listing lies under an --immutable
 * prefix; bounded by --list-cache-size (least recently used dropped
 * first; one answer at most a quarter of it, and 8 MiB); dropped by
 * writes through the gateway and the admin invalidation
 * (bc_cache_invalidate calls bc_cache_list_invalidate).
 *
 * A write of key K drops every listing of K's bucket whose prefix K
 * starts with; an invalidation of prefix P those whose prefix starts
 * with P or that P starts with. An answer fetched while an invalidation
 * ran is not kept (bc_cache_list_gen): a listing that began before a
 * write and ended after its invalidation might not show it.
 *
 * The list cache knows no client: the front end authorizes a listing
 * (http_authz.c, its prefix against the client key's grant) before it
 * is looked up, and unsigned requests (which the upstream answers as it
 * decides) have entries of their own.
 *
 * Thread-safe (one lock). A hit holds its entry (a reference) until the
 * caller lets go, so a response can send it without copying.
 */
#ifndef BC_CACHE_LIST_H
#define BC_CACHE_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "s3/s3_request.h"
#include "util/util_buf.h"
#include "util/util_kv.h"

#define BC_CACHE_LIST_ENTRY_MAX (8u << 20)   /* bytes of one answer */

typedef struct bc_cache_list_s bc_cache_list_t;

/* A cached answer; read-only for whoever holds a reference. */
typedef struct bc_list_entry_s {
	const uint8_t *body;
	size_t         len;
	bc_kvlist_t    headers;   /* the origin's, framing left out */
} bc_list_entry_t;

/* The request's place in the cache (bc_cache_list_key). */
typedef struct bc_list_key_s {
	bc_buf_t    key;        /* canonical: what tells answers apart */
	char       *prefix;     /* the listing's prefix ("" when none) */
	uint64_t    ttl_ns;     /* UINT64_MAX: until dropped (immutable) */
} bc_list_key_t;

/* A list cache bound by cfg (list_cache_size, list_ttl, immutable), or
 * NULL when out of memory. */
bc_cache_list_t *bc_cache_list_new(const bc_config_t *cfg);
/* NULL is a no-op; entries still referenced go with their last holder. */
void bc_cache_list_free(bc_cache_list_t *l);

/*
 * Where request r (a ListObjects or ListObjectsV2, unsigned_ when it goes
 * upstream unsigned) belongs: 0 with *k filled (bc_cache_list_key_fini
 * frees it); BC_ENOENT when listings of its bucket and prefix are not
 * cached (no --list-ttl, not under --immutable); BC_ENOTSUP when it
 * cannot be (another operation, a query parameter or a repeated one the
 * key does not hold, a header that changes the answer: x-amz-request-
 * payer, x-amz-expected-bucket-owner, x-amz-optional-object-attributes).
 * Pure but for reading l's settings.
 */
int  bc_cache_list_key(const bc_cache_list_t *l, const bc_s3_req_t *r,
    bool unsigned_, bc_list_key_t *k);
void bc_cache_list_key_fini(bc_list_key_t *k);

/* The fresh answer kept for k, with a reference for the caller, or NULL
 * (an expired one is dropped). */
const bc_list_entry_t *bc_cache_list_get(bc_cache_list_t *l,
    const bc_list_key_t *k);
/* Lets go of a reference bc_cache_list_get gave. NULL is a no-op. */
void bc_cache_list_release(bc_cache_list_t *l, const bc_list_entry_t *e);

/* The invalidation count now: take it before asking the origin, hand it
 * to bc_cache_list_put. */
uint64_t bc_cache_list_gen(bc_cache_list_t *l);
/*
 * Keeps body (len bytes, copied) and the origin's headers (copied, but
 * for framing) as bucket's answer for k, unless an invalidation ran
 * since gen or it is too big (over a quarter of the bound, or
 * BC_CACHE_LIST_ENTRY_MAX). Returns 0 when kept, BC_EAGAIN (an
 * invalidation ran), BC_E2BIG, BC_ENOMEM.
 */
int  bc_cache_list_put(bc_cache_list_t *l, const bc_list_key_t *k,
    const char *bucket, uint64_t gen, const bc_kvlist_t *headers,
    const void *body, size_t len);
/* The largest answer a put keeps (a response's capture stops there). */
size_t bc_cache_list_max_entry(const bc_cache_list_t *l);

/* Drops what a write of (bucket, key) could change, or with key NULL
 * what touches prefix (see the top). Returns the entries dropped. NULL
 * l is a no-op. */
size_t bc_cache_list_invalidate(bc_cache_list_t *l, const char *bucket,
    const char *key, const char *prefix);

#endif
