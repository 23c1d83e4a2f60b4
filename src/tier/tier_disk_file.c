/*
 * tier_disk_file.c — the disk tier's files (tier_disk_int.h): names,
 * header, writing to a temp name, reading back with every check.
 *
 * Layout under DIR: chunks in c/, object metadata in o/, each file at
 * <c|o>/<h[0:2]>/<h[2]>/<h>, h the 16 hex digits of the name hash: a
 * chunk's is bc_chunk_key_hash(bucket, key, ETag, index), an object's
 * hashes (bucket, key). S3 keys never become paths. Two levels of 256 and
 * 16 directories: 4096 leaves hold ~250 files each at a million files (and
 * hashed directories of ext4 or XFS take 10 times that in their stride),
 * while listing 65536 leaves of 256 x 256 would cost the start-up scan a
 * second per million files for the directories alone.
 *
 * A file is a header and a body (the chunk's bytes, or the metadata blob).
 * Header, integers little-endian:
 *    0  4  magic "BCDC" (chunk) or "BCDM" (metadata)
 *    4  2  version (1)
 *    6  2  header length H (to the body; at most 4096)
 *    8  8  body length L
 *   16  4  body crc32c
 *   20  4  chunk index (0 for metadata)
 *   24  2  bucket length, 26 2 key length, 28 2 ETag length (0: metadata)
 *   30  2  zero
 *   32     bucket, key, ETag bytes (no NULs)
 *  H-4  4  crc32c of header bytes [0, H-4)
 *    H  L  body
 * A file is sound when its magic, version and header crc hold, its size
 * is H + L, its strings hash to its name, and its body has its crc.
 *
 * Checksum: CRC32C, bc_crc32c() of util/util_crc.c (already ours: the
 * SSE4.2 crc32 instruction where the CPU has it, 6.5 GB/s on this box,
 * a slicing-by-8 table otherwise), so no new dependency; xxhash would be
 * a library to add for no gain at disk speeds, and CRC32C catches every
 * burst of up to 32 bits, which torn writes and bit rot are.
 *
 * Writes go to "<path>.<token>-<seq>.tmp" (token: the tier instance) and
 * are renamed into place by the caller. No fsync: this is a cache, and a
 * flush per chunk would cost more than a lost file after a crash. A crash
 * may leave a file short, zeroed or missing (renames can reach the disk
 * before the data); the checks above catch every such file on read (and
 * the scan catches a wrong size or header), so it is dropped and
 * refetched, never served.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* O_NOATIME */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tier/tier_disk_int.h"
#include "util/util_crc.h"
#include "util/util_error.h"
#include "util/util_hash.h"
#include "util/util_num.h"

static const char magic[2][4] = { { 'B', 'C', 'D', 'C' },
    { 'B', 'C', 'D', 'M' } };
static const char top[2] = { 'c', 'o' };

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t
bc_disk_hdr_len(const char *bucket, const char *key, const char *etag)
{
	return BC_DISK_HDR_FIXED + strlen(bucket) + strlen(key) +
	    strlen(etag) + 4;
}

uint64_t
bc_disk_blocks(uint64_t size)
{
	return (size + BC_DISK_BLOCK - 1) / BC_DISK_BLOCK * BC_DISK_BLOCK;
}

uint64_t
bc_disk_obj_hash(const char *bucket, const char *key)
{
	uint64_t h = bc_hash(BC_HASH_INIT, bucket, strlen(bucket) + 1);

	h = bc_hash(h, key, strlen(key) + 1);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

void
bc_disk_path(char *buf, uint8_t kind, uint64_t hash, const char *token,
    uint64_t seq)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%016" PRIx64, hash);
	if (token == NULL)
		snprintf(buf, BC_DISK_PATH_MAX, "%c/%.2s/%.1s/%s", top[kind],
		    hex, hex + 2, hex);
	else
		snprintf(buf, BC_DISK_PATH_MAX, "%c/%.2s/%.1s/%s.%s-%" PRIx64
		    ".tmp", top[kind], hex, hex + 2, hex, token, seq);
}

bool
bc_disk_name_hash(const char *name, uint64_t *hash)
{
	/* the names written are 16 lower-case hex digits, nothing else */
	if (strnlen(name, 17) != 16 || strpbrk(name, "ABCDEF") != NULL)
		return false;
	return bc_parse_u64(name, 16, 16, UINT64_MAX, hash) == 0;
}

bool
bc_disk_tmp_name(const char *name, char *token)
{
	size_t n = strlen(name);

	if (n < 16 + 1 + BC_DISK_TOKEN_LEN + 1 + 4 || name[16] != '.' ||
	    strcmp(name + n - 4, ".tmp") != 0 ||
	    name[17 + BC_DISK_TOKEN_LEN] != '-')
		return false;
	memcpy(token, name + 17, BC_DISK_TOKEN_LEN);
	token[BC_DISK_TOKEN_LEN] = '\0';
	return true;
}

/* Encodes h into buf (h->hdr_len bytes), header crc included. */
static void
encode(uint8_t *buf, const bc_disk_hdr_t *h)
{
	size_t bl = strlen(h->bucket), kl = strlen(h->key);
	size_t el = strlen(h->etag);
	uint8_t *p = buf + BC_DISK_HDR_FIXED;

	memcpy(buf, magic[h->kind], 4);
	put16(buf + 4, BC_DISK_VERSION);
	put16(buf + 6, h->hdr_len);
	put64(buf + 8, h->body_len);
	put32(buf + 16, h->body_crc);
	put32(buf + 20, h->index);
	put16(buf + 24, (uint16_t)bl);
	put16(buf + 26, (uint16_t)kl);
	put16(buf + 28, (uint16_t)el);
	put16(buf + 30, 0);
	memcpy(p, h->bucket, bl);
	memcpy(p + bl, h->key, kl);
	memcpy(p + bl + kl, h->etag, el);
	put32(buf + h->hdr_len - 4, bc_crc32c(0, buf, h->hdr_len - 4u));
}

/* Decodes the n bytes of buf read from the file's start into h, the
 * strings copied to strs. Returns 0 or BC_EPROTO. */
static int
decode(const uint8_t *buf, size_t n, uint8_t kind, bc_disk_hdr_t *h,
    char *strs)
{
	size_t bl, kl, el, hl;

	if (n < BC_DISK_HDR_FIXED + 4 || memcmp(buf, magic[kind], 4) != 0 ||
	    get16(buf + 4) != BC_DISK_VERSION)
		return BC_EPROTO;
	hl = get16(buf + 6);
	bl = get16(buf + 24);
	kl = get16(buf + 26);
	el = get16(buf + 28);
	if (hl > n || hl != BC_DISK_HDR_FIXED + bl + kl + el + 4 ||
	    get32(buf + hl - 4) != bc_crc32c(0, buf, hl - 4))
		return BC_EPROTO;
	h->kind = kind;
	h->hdr_len = (uint16_t)hl;
	h->body_len = get64(buf + 8);
	h->body_crc = get32(buf + 16);
	h->index = get32(buf + 20);
	buf += BC_DISK_HDR_FIXED;
	memcpy(strs, buf, bl);
	strs[bl] = '\0';
	memcpy(strs + bl + 1, buf + bl, kl);
	strs[bl + 1 + kl] = '\0';
	memcpy(strs + bl + kl + 2, buf + bl + kl, el);
	strs[bl + kl + 2 + el] = '\0';
	h->bucket = strs;
	h->key = strs + bl + 1;
	h->etag = strs + bl + kl + 2;
	return 0;
}

static uint64_t
name_of(const bc_disk_hdr_t *h)
{
	if (h->kind == BC_DISK_META)
		return bc_disk_obj_hash(h->bucket, h->key);
	return bc_chunk_key_hash(&(bc_chunk_key_t){ h->bucket, h->key,
	    h->etag, h->index });
}

/* mkdir of tmp's two parent directories ("c/ab", "c/ab/c"). */
static int
make_parents(int dirfd, const char *tmp)
{
	char d[BC_DISK_PATH_MAX];

	memcpy(d, tmp, 4);
	d[4] = '\0';
	if (mkdirat(dirfd, d, 0755) < 0 && errno != EEXIST)
		return -errno;
	memcpy(d, tmp, 6);
	d[6] = '\0';
	if (mkdirat(dirfd, d, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int
write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return BC_EIO;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int
bc_disk_write_tmp(int dirfd, const char *tmp, bc_disk_hdr_t *h,
    const void *body, size_t len)
{
	uint8_t      buf[BC_DISK_HDR_MAX];
	struct iovec iov[2];
	size_t       hl = bc_disk_hdr_len(h->bucket, h->key, h->etag);
	int          fd, rv;

	if (hl > BC_DISK_HDR_MAX)
		return BC_E2BIG;
	h->hdr_len = (uint16_t)hl;
	h->body_len = len;
	h->body_crc = bc_crc32c(0, body, len);
	encode(buf, h);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT) {
		rv = make_parents(dirfd, tmp);
		if (rv < 0)
			return rv;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0644);
	}
	if (fd < 0)
		return -errno;
	iov[0].iov_base = buf;
	iov[0].iov_len = hl;
	iov[1].iov_base = (void *)(uintptr_t)body;
	iov[1].iov_len = len;
	rv = write_all(fd, iov, len > 0 ? 2 : 1);
	if (close(fd) < 0 && rv == 0)
		rv = -errno;
	if (rv < 0)
		unlinkat(dirfd, tmp, 0);
	return rv;
}

static int
read_at(int fd, uint8_t *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return BC_EPROTO;   /* shrank under us: torn */
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int
bc_disk_open_read(int dirfd, const char *path)
{
	int fd;

	/* O_NOATIME: a first read after the write would dirty the inode;
	 * O_NONBLOCK: something else than a file (a FIFO) must not block */
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? BC_ENOENT : -errno;
	return fd;
}

int
bc_disk_read(int dirfd, const char *path, uint8_t kind, uint64_t hash,
    bool body, bool keep_fd, bc_disk_file_t *f)
{
	struct stat st;
	size_t      n, have;
	int         rv;

	f->body = NULL;
	f->body_map = 0;
	f->fd = bc_disk_open_read(dirfd, path);
	if (f->fd < 0)
		return f->fd;
	if (fstat(f->fd, &st) < 0) {
		rv = -errno;
		goto fail;
	}
	f->fsize = (uint64_t)st.st_size;
	n = f->fsize < BC_DISK_HDR_MAX ? (size_t)f->fsize : BC_DISK_HDR_MAX;
	rv = read_at(f->fd, f->buf, n, 0);
	if (rv < 0)
		goto fail;
	rv = decode(f->buf, n, kind, &f->h, f->strs);
	if (rv == 0 && (f->fsize != f->h.hdr_len + f->h.body_len ||
	    name_of(&f->h) != hash))
		rv = BC_EPROTO;
	if (rv < 0 || !body)
		goto out;
	f->body_map = 0;
	if (kind == BC_DISK_CHUNK)
		f->body = bc_chunk_data_alloc(f->h.body_len, &f->body_map);
	else
		f->body = malloc(f->h.body_len > 0 ? f->h.body_len : 1);
	if (f->body == NULL) {
		rv = BC_ENOMEM;
		goto fail;
	}
	have = n - f->h.hdr_len;
	memcpy(f->body, f->buf + f->h.hdr_len, have);
	rv = read_at(f->fd, f->body + have, f->h.body_len - have, n);
	if (rv == 0 && bc_crc32c(0, f->body, f->h.body_len) != f->h.body_crc)
		rv = BC_EPROTO;
out:
	if (rv == 0 && keep_fd)
		return 0;
fail:
	if (rv < 0) {
		bc_chunk_data_free(f->body, f->body_map);
		f->body = NULL;
	}
	close(f->fd);
	f->fd = -1;
	return rv;
}

void
bc_disk_file_fini(bc_disk_file_t *f)
{
	bc_chunk_data_free(f->body, f->body_map);
	f->body = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}
