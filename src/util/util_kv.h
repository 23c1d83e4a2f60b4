/*
 * util_kv.h — an ordered list of name/value string pairs (HTTP headers,
 * query parameters).
 *
 * Ownership: the list owns copies of every name and value. Lookups return
 * pointers into the list, valid until it is changed or freed. Names compare
 * case-insensitively in bc_kv_get (HTTP header semantics); use
 * bc_kv_get_exact for query parameters. Not thread-safe.
 */
#ifndef BC_UTIL_KV_H
#define BC_UTIL_KV_H

#include <stddef.h>

typedef struct bc_kv_s {
	char *name;
	char *value;
} bc_kv_t;

typedef struct bc_kvlist_s {
	bc_kv_t *v;
	size_t   n;
	size_t   cap;
} bc_kvlist_t;

#define BC_KVLIST_INIT { NULL, 0, 0 }

/* Appends copies of name (nlen bytes) and value (vlen bytes). */
int  bc_kv_addn(bc_kvlist_t *l, const char *name, size_t nlen,
    const char *value, size_t vlen);
int  bc_kv_add(bc_kvlist_t *l, const char *name, const char *value);
/* Replaces the value of every pair named name (case-insensitive), or adds. */
int  bc_kv_set(bc_kvlist_t *l, const char *name, const char *value);
/* Removes every pair named name (case-insensitive). */
void bc_kv_del(bc_kvlist_t *l, const char *name);
const char *bc_kv_get(const bc_kvlist_t *l, const char *name);
const char *bc_kv_get_exact(const bc_kvlist_t *l, const char *name);
void bc_kv_fini(bc_kvlist_t *l);

#endif
