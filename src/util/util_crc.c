/*
 * util_crc.c — the raw CRCs (see util_crc.h).
 *
 * The three CRCs are reflected, so one slicing-by-8 loop serves each:
 * eight 256-entry tables per CRC, built once (pthread_once), fold eight
 * input bytes per step. CRC32C uses the SSE4.2 crc32 instruction instead
 * when the CPU has it (6.5 GB/s against the table's 1.6 on this project's
 * 2-core box; CRC32 1.5, CRC64NVME 1.2 GB/s: tests/bench/bench_checksum.c).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/util_crc.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

#define POLY_CRC32     0xEDB88320u            /* 0x04C11DB7 reflected */
#define POLY_CRC32C    0x82F63B78u            /* 0x1EDC6F41 reflected */
#define POLY_CRC64NVME 0x9A6C9329AC4BC9B5ull  /* 0xAD93D23594C93659 refl. */

static uint32_t t_crc32[8][256];
static uint32_t t_crc32c[8][256];
static uint64_t t_crc64[8][256];
static bool     have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
tables32(uint32_t t[8][256], uint32_t poly)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? poly : 0);
		t[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
}

static void
tables64(uint64_t t[8][256], uint64_t poly)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? poly : 0);
		t[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
}

static void
setup(void)
{
	tables32(t_crc32, POLY_CRC32);
	tables32(t_crc32c, POLY_CRC32C);
	tables64(t_crc64, POLY_CRC64NVME);
#ifdef HAVE_SSE42_PATH
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static inline void
ready(void)
{
	pthread_once(&once, setup);
}

/* Little-endian loads (one instruction on x86 and arm64). */
static inline uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* One slicing-by-8 CRC-32 (no inversion: the callers do it). */
static uint32_t
slice32(const uint32_t t[8][256], uint32_t c, const uint8_t *p, size_t n)
{
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint32_t a = le32(p) ^ c, b = le32(p + 4);

		c = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^
		    t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^
		    t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^
		    t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
	return c;
}

uint32_t
bc_crc32(uint32_t crc, const void *p, size_t n)
{
	ready();
	return ~slice32((const uint32_t (*)[256])t_crc32, ~crc, p, n);
}

uint32_t
bc_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	ready();
	return ~slice32((const uint32_t (*)[256])t_crc32c, ~crc, p, n);
}

#ifdef HAVE_SSE42_PATH
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = ~crc;

	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

uint32_t
bc_crc32c(uint32_t crc, const void *p, size_t n)
{
	ready();
#ifdef HAVE_SSE42_PATH
	if (have_sse42)
		return crc32c_hw(crc, p, n);
#endif
	return bc_crc32c_sw(crc, p, n);
}

uint64_t
bc_crc64nvme(uint64_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t c = ~crc;

	ready();
	while (n > 0 && ((uintptr_t)b & 7) != 0) {
		c = (c >> 8) ^ t_crc64[0][(c ^ *b++) & 0xff];
		n--;
	}
	while (n >= 8) {
		c ^= le64(b);
		c = t_crc64[7][c & 0xff] ^ t_crc64[6][(c >> 8) & 0xff] ^
		    t_crc64[5][(c >> 16) & 0xff] ^
		    t_crc64[4][(c >> 24) & 0xff] ^
		    t_crc64[3][(c >> 32) & 0xff] ^
		    t_crc64[2][(c >> 40) & 0xff] ^
		    t_crc64[1][(c >> 48) & 0xff] ^ t_crc64[0][c >> 56];
		b += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = (c >> 8) ^ t_crc64[0][(c ^ *b++) & 0xff];
	return ~c;
}
