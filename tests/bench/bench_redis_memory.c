/*
 * bench_redis_memory.c — what the Redis tier's value layout
 * (tier/tier_redis_key.h) costs in Redis memory: the growth of INFO
 * memory's used_memory per byte of chunk data, for chunks stored as
 * slices and, to compare, as one value each, with each value's TTL set
 * as the tier sets it. Two datasets: 16 chunks of 8 MiB, and 2000 small
 * objects (10-300 KB, one chunk each) with their metadata values.
 *
 * Needs an empty Redis it may write to (it refuses one holding keys, and
 * deletes what it wrote):
 *   redis-server --port 6390 --save '' --appendonly no &
 *   make tests/bench/bench_redis_memory
 *   tests/bench/bench_redis_memory -p 6390
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "tier/tier_redis_key.h"
#include "util/util_buf.h"

#define TTL_MS "86400000"
#define MIB    (1024u * 1024u)

static redisContext *rc;

static void
die(const char *what)
{
	fprintf(stderr, "bench_redis_memory: %s%s%s\n", what,
	    rc != NULL && rc->err ? ": " : "", rc != NULL && rc->err ?
	    rc->errstr : "");
	exit(1);
}

static redisReply *
cmd(const char *fmt, const char *arg)
{
	redisReply *r = redisCommand(rc, fmt, arg);

	if (r == NULL || r->type == REDIS_REPLY_ERROR)
		die(r != NULL ? r->str : "command failed");
	return r;
}

/* used_memory, once Redis has settled (client buffers trimmed). */
static long long
used_memory(void)
{
	redisReply *r;
	const char *p;
	long long v;

	usleep(300 * 1000);
	r = cmd("INFO %s", "memory");
	p = strstr(r->str, "used_memory:");
	if (p == NULL)
		die("no used_memory in INFO");
	v = atoll(p + 12);
	freeReplyObject(r);
	return v;
}

static size_t nset;

/* SET name value PX ttl, pipelined; flush() reads the replies. */
static void
set(const char *name, size_t nlen, const void *v, size_t vlen)
{
	const char *argv[5] = { "SET", name, v, "PX", TTL_MS };
	size_t lens[5] = { 3, nlen, vlen, 2, strlen(TTL_MS) };

	if (redisAppendCommandArgv(rc, 5, argv, lens) != REDIS_OK)
		die("append");
	nset++;
}

static void
flush(void)
{
	for (; nset > 0; nset--) {
		redisReply *r;

		if (redisGetReply(rc, (void **)&r) != REDIS_OK)
			die("reply");
		if (r->type == REDIS_REPLY_ERROR)
			die(r->str);
		freeReplyObject(r);
	}
}

/* Stores one chunk of len bytes as slices (whole: as one value under a
 * name of the same shape). Returns the keys written. */
static size_t
put_chunk(const bc_chunk_key_t *k, uint64_t unit, const uint8_t *data,
    size_t len, int whole)
{
	char name[BC_REDIS_KEY_NAME_MAX];
	bc_tier_redis_chunk_t c;
	bc_buf_t b = BC_BUF_INIT;
	size_t n;

	if (bc_tier_redis_key_chunk_init(&c, k, unit, len) < 0)
		die("chunk_init");
	if (whole) {
		n = bc_tier_redis_key_slice(&c, 0, name);
		name[3] = 'w';
		bc_buf_reserve(&b, len + c.hdr_len);
		bc_buf_append(&b, data, len);
		bc_buf_append(&b, data, c.hdr_len);
		set(name, n, b.data, b.len);
		flush();
		bc_buf_fini(&b);
		return 1;
	}
	for (uint32_t i = 0; i < c.nslices; i++) {
		bc_buf_reset(&b);
		if (bc_tier_redis_key_slice_encode(&b, &c, i, data) < 0)
			die("encode");
		n = bc_tier_redis_key_slice(&c, i, name);
		set(name, n, b.data, b.len);
		flush();
	}
	bc_buf_fini(&b);
	return c.nslices;
}

static void
run(const char *label, int small, int whole, const uint8_t *data)
{
	char bucket[32], key[64], etag[40], name[BC_REDIS_KEY_NAME_MAX];
	long long before = used_memory(), after;
	unsigned long long bytes = 0, keys = 0;
	unsigned seed = 12345;
	bc_buf_t b = BC_BUF_INIT;
	redisReply *r;

	snprintf(bucket, sizeof(bucket), "bench-%d", (int)getpid());
	for (int i = 0; i < (small ? 2000 : 16); i++) {
		size_t len = 8 * MIB;

		if (small) {
			seed = seed * 1103515245u + 12345u;
			len = 10000 + (seed >> 8) % 290001;
		}
		snprintf(key, sizeof(key), "train/%05d.bin", i);
		snprintf(etag, sizeof(etag), "\"%032x\"", (unsigned)i);
		keys += put_chunk(&(bc_chunk_key_t){ bucket, key, etag,
		    small ? 0u : (uint32_t)i }, 8 * MIB, data, len, whole);
		bytes += len;
		if (small) {
			int n = bc_tier_redis_key_meta(bucket, key, name);

			bc_buf_reset(&b);
			if (n < 0 || bc_tier_redis_key_meta_encode(&b, bucket,
			    key, data, 300) < 0)
				die("meta");
			if (whole)
				name[3] = 'w';
			set(name, (size_t)n, b.data, b.len);
			flush();
			keys++;
			bytes += b.len;
		}
	}
	after = used_memory();
	printf("%-28s %12llu %12lld %7.4fx %6llu\n", label, bytes,
	    after - before, (double)(after - before) / (double)bytes, keys);
	r = cmd("FLUSHDB %s", "SYNC");
	freeReplyObject(r);
	bc_buf_fini(&b);
}

int
main(int argc, char **argv)
{
	const char *host = "127.0.0.1";
	int port = 6379, opt;
	uint8_t *data;
	redisReply *r;
	char *p;

	while ((opt = getopt(argc, argv, "h:p:")) != -1) {
		if (opt == 'h')
			host = optarg;
		else if (opt == 'p')
			port = atoi(optarg);
		else
			die("usage: bench_redis_memory [-h HOST] [-p PORT]");
	}
	rc = redisConnect(host, port);
	if (rc == NULL || rc->err)
		die("connect");
	r = cmd("DBSIZE%s", "");
	if (r->integer != 0)
		die("this Redis holds keys: give it an empty one");
	freeReplyObject(r);
	r = cmd("INFO %s", "server");
	p = strstr(r->str, "redis_version:");
	printf("redis %.*s", p != NULL ? (int)strcspn(p + 14, "\r\n") : 1,
	    p != NULL ? p + 14 : "?");
	freeReplyObject(r);
	r = cmd("INFO %s", "memory");
	p = strstr(r->str, "mem_allocator:");
	printf(", %.*s\n", p != NULL ? (int)strcspn(p + 14, "\r\n") : 1,
	    p != NULL ? p + 14 : "?");
	freeReplyObject(r);
	data = malloc(8 * MIB);
	if (data == NULL)
		die("out of memory");
	for (size_t i = 0; i < 8 * MIB; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 11);
	printf("%-28s %12s %12s %8s %6s\n", "dataset, layout", "bytes",
	    "used_memory+", "ratio", "keys");
	run("8 MiB chunks, slices", 0, 0, data);
	run("8 MiB chunks, one value", 0, 1, data);
	run("small objects, slices", 1, 0, data);
	run("small objects, one value", 1, 1, data);
	free(data);
	redisFree(rc);
	return 0;
}
