/* util_kv.c — ordered name/value list (see util_kv.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util_error.h"
#include "util/util_kv.h"

int
bc_kv_addn(bc_kvlist_t *l, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
	bc_kv_t *v;

	if (l->n == l->cap) {
		size_t cap = l->cap == 0 ? 16 : l->cap * 2;

		v = realloc(l->v, cap * sizeof(*v));
		if (v == NULL)
			return BC_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	v = &l->v[l->n];
	v->name = strndup(name, nlen);
	v->value = strndup(value, vlen);
	if (v->name == NULL || v->value == NULL) {
		free(v->name);
		free(v->value);
		return BC_ENOMEM;
	}
	l->n++;
	return 0;
}

int
bc_kv_add(bc_kvlist_t *l, const char *name, const char *value)
{
	return bc_kv_addn(l, name, strlen(name), value, strlen(value));
}

int
bc_kv_set(bc_kvlist_t *l, const char *name, const char *value)
{
	bc_kv_del(l, name);
	return bc_kv_add(l, name, value);
}

void
bc_kv_del(bc_kvlist_t *l, const char *name)
{
	size_t i = 0;

	while (i < l->n) {
		if (strcasecmp(l->v[i].name, name) == 0) {
			free(l->v[i].name);
			free(l->v[i].value);
			memmove(&l->v[i], &l->v[i + 1],
			    (l->n - i - 1) * sizeof(l->v[0]));
			l->n--;
		} else {
			i++;
		}
	}
}

const char *
bc_kv_get(const bc_kvlist_t *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->v[i].name, name) == 0)
			return l->v[i].value;
	return NULL;
}

const char *
bc_kv_get_exact(const bc_kvlist_t *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return l->v[i].value;
	return NULL;
}

void
bc_kv_fini(bc_kvlist_t *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
	l->cap = 0;
}
