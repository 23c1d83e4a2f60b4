/*
 * chunk.c — the refcounted cache unit (see chunk.h).
 *
 * One malloc block holds the struct followed by its id
 * "bucket\0key\0etag\0" (c->id points into it); data is the caller's
 * malloc block, owned from bc_chunk_new() on, or (bc_chunk_new_filling)
 * a malloc block or an anonymous mapping of the chunk's own (recycled:
 * chunk_pages.h); fd, when a
 * tier set one, is closed with it. The key hash is FNV-1a over the id
 * bytes and the index (4 bytes, little-endian), finished with MurmurHash3's
 * 64-bit mixer so the low bits a power-of-two table uses are well spread.
 *
 * refs (and, while filling, filled/state) are the only fields that change
 * after bc_chunk_new() besides the owning holder's on_free/tier_data (its
 * lock held). ref/unref are
 * atomic; the thread that drops the last reference runs on_free and frees.
 * Touching a chunk whose count is already zero aborts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunk/chunk.h"
#include "chunk/chunk_pages.h"
#include "stats/stats.h"
#include "util/util_assert.h"
#include "util/util_hash.h"

/* Hashes s including its NUL, as it appears in an id. */
static uint64_t
hash_str(uint64_t h, const char *s)
{
	return bc_hash(h, s, strlen(s) + 1);
}

static uint64_t
finish(uint64_t h, uint32_t index)
{
	unsigned char ib[4] = {
		(unsigned char)index, (unsigned char)(index >> 8),
		(unsigned char)(index >> 16), (unsigned char)(index >> 24)
	};

	h = bc_hash(h, ib, sizeof(ib));
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

uint64_t
bc_chunk_key_hash(const bc_chunk_key_t *k)
{
	uint64_t h = BC_HASH_INIT;

	h = hash_str(h, k->bucket);
	h = hash_str(h, k->key);
	h = hash_str(h, k->etag);
	return finish(h, k->index);
}

bc_chunk_t *
bc_chunk_new(const bc_chunk_key_t *k, uint8_t *data, size_t len)
{
	size_t      bl = strlen(k->bucket), kl = strlen(k->key);
	size_t      el = strlen(k->etag), idl;
	bc_chunk_t *c = NULL;

	/* Parsers bound all three; this only guards the sum. */
	if (bl > SIZE_MAX / 4 || kl > SIZE_MAX / 4 || el > SIZE_MAX / 4)
		goto fail;
	idl = bl + kl + el + 3;
	c = malloc(sizeof(*c) + idl);
	if (c == NULL)
		goto fail;
	memset(c, 0, sizeof(*c));
	c->id = (char *)(c + 1);
	memcpy(c->id, k->bucket, bl + 1);
	memcpy(c->id + bl + 1, k->key, kl + 1);
	memcpy(c->id + bl + 1 + kl + 1, k->etag, el + 1);
	c->id_len = idl;
	c->index = k->index;
	c->hash = finish(bc_hash(BC_HASH_INIT, c->id, idl), k->index);
	c->data = data;
	c->len = len;
	c->fd = -1;
	atomic_init(&c->refs, 1);
	atomic_init(&c->filled, len);
	atomic_init(&c->state, BC_CHUNK_COMPLETE);
	c->fill_waiters = NULL;
	return c;
fail:
	free(data);
	return NULL;
}

void
bc_chunk_ref(bc_chunk_t *c)
{
	BC_CHECK(atomic_fetch_add(&c->refs, 1) > 0);
}

void
bc_chunk_mark_prefetched(bc_chunk_t *c, bc_stats_job_id_t job)
{
	if (atomic_load(&c->prefetched))
		return;
	atomic_store(&c->prefetch_job, job);
	if (atomic_exchange(&c->prefetched, 1) == 0) {
		BC_STATS_ADD(prefetch_bytes, c->len);
		BC_STATS_ADD(prefetch_unread_bytes, c->len);
		bc_stats_job_id_add(job, BC_JSTAT_prefetch_bytes, c->len);
	}
}

bool
bc_chunk_take_prefetched(bc_chunk_t *c)
{
	if (atomic_exchange(&c->prefetched, 0) == 0)
		return false;
	BC_STATS_INC(prefetch_used);
	BC_STATS_SUB(prefetch_unread_bytes, c->len);
	bc_stats_job_id_add(atomic_load(&c->prefetch_job),
	    BC_JSTAT_prefetch_used, 1);
	return true;
}

void
bc_chunk_unref(bc_chunk_t *c)
{
	int old;

	if (c == NULL)
		return;
	old = atomic_fetch_sub(&c->refs, 1);
	BC_CHECK(old > 0);
	if (old > 1)
		return;
	if (atomic_load(&c->prefetched)) {
		BC_STATS_INC(prefetch_wasted);
		BC_STATS_SUB(prefetch_unread_bytes, c->len);
		bc_stats_job_id_add(atomic_load(&c->prefetch_job),
		    BC_JSTAT_prefetch_wasted, 1);
	}
	if (c->on_free != NULL)
		c->on_free(c);
	if (c->fd >= 0)
		close(c->fd);
	if (c->map_len > 0)
		bc_chunk_pages_put(c->data, c->map_len);
	else
		free(c->data);
	free(c);
}

/* The mapping bc_chunk_new_filling() makes for len bytes; 0: malloc. */
static size_t
map_len_for(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (len < BC_CHUNK_MAP_MIN || len > SIZE_MAX - page)
		return 0;
	return (len + page - 1) / page * page;
}

size_t
bc_chunk_charge_for(size_t len, size_t id_len)
{
	size_t map_len = map_len_for(len);

	return (map_len > 0 ? map_len : len) + sizeof(bc_chunk_t) + id_len +
	    BC_CHUNK_ALLOC_OVERHEAD + BC_CHUNK_HOLDER_BYTES;
}

size_t
bc_chunk_charge(const bc_chunk_t *c)
{
	return (c->map_len > 0 ? c->map_len : c->len) + sizeof(*c) +
	    c->id_len + BC_CHUNK_ALLOC_OVERHEAD + BC_CHUNK_HOLDER_BYTES;
}

int
bc_chunk_matches(const bc_chunk_t *c, const bc_chunk_key_t *k)
{
	const char *p = c->id;

	if (c->index != k->index || strcmp(p, k->bucket) != 0)
		return 0;
	p += strlen(p) + 1;
	if (strcmp(p, k->key) != 0)
		return 0;
	p += strlen(p) + 1;
	return strcmp(p, k->etag) == 0;
}

static uint8_t *
data_alloc(size_t len, size_t *map_len, bool populate)
{
	*map_len = map_len_for(len);
	if (*map_len == 0)
		return malloc(len > 0 ? len : 1);
	return bc_chunk_pages_get(*map_len, populate);
}

uint8_t *
bc_chunk_data_alloc(size_t len, size_t *map_len)
{
	return data_alloc(len, map_len, true);
}

void
bc_chunk_data_free(uint8_t *data, size_t map_len)
{
	if (data == NULL)
		return;
	if (map_len > 0)
		bc_chunk_pages_put(data, map_len);
	else
		free(data);
}

bc_chunk_t *
bc_chunk_new_data(const bc_chunk_key_t *k, uint8_t *data, size_t len,
    size_t map_len)
{
	bc_chunk_t *c;

	if (map_len == 0)
		return bc_chunk_new(k, data, len);
	c = bc_chunk_new(k, NULL, len);
	if (c == NULL) {
		bc_chunk_pages_put(data, map_len);
		return NULL;
	}
	c->data = data;
	c->map_len = map_len;
	return c;
}

bc_chunk_t *
bc_chunk_new_filling(const bc_chunk_key_t *k, size_t len)
{
	size_t map_len;
	uint8_t *data = data_alloc(len, &map_len,
	    len <= BC_CHUNK_POPULATE_MAX);
	bc_chunk_t *c;

	if (data == NULL)
		return NULL;
	c = bc_chunk_new_data(k, data, len, map_len);
	if (c == NULL)
		return NULL;
	atomic_store_explicit(&c->filled, 0, memory_order_relaxed);
	atomic_store_explicit(&c->state, BC_CHUNK_FILLING,
	    memory_order_relaxed);
	return c;
}

void
bc_chunk_fill(bc_chunk_t *c, size_t n)
{
	atomic_store_explicit(&c->filled, n, memory_order_release);
}

void
bc_chunk_end(bc_chunk_t *c, bc_chunk_state_t state)
{
	atomic_store_explicit(&c->state, state, memory_order_release);
}

size_t
bc_chunk_avail(const bc_chunk_t *c)
{
	return atomic_load_explicit(&c->filled, memory_order_acquire);
}

bc_chunk_state_t
bc_chunk_state(const bc_chunk_t *c)
{
	return (bc_chunk_state_t)atomic_load_explicit(&c->state,
	    memory_order_acquire);
}
