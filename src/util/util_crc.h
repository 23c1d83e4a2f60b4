/*
 * util_crc.h — the raw CRCs: CRC32 (CRC-32/ISO-HDLC, zlib's), CRC32C
 * (Castagnoli) and CRC64NVME (reflected, polynomial 0xAD93D23594C93659,
 * init and xorout all ones). s3/s3_checksum.h builds S3's checksums on
 * them; the disk and Redis tiers check their headers and bodies with
 * CRC32C.
 *
 * Thread-safe: the tables are built once per process, on first use.
 */
#ifndef BC_UTIL_CRC_H
#define BC_UTIL_CRC_H

#include <stddef.h>
#include <stdint.h>

/* The raw CRCs, zlib style: pass 0 to start, the previous result to go
 * on (the pre- and post-inversion are inside). Exposed for the tests and
 * the benchmark. */
uint32_t bc_crc32(uint32_t crc, const void *p, size_t n);
uint32_t bc_crc32c(uint32_t crc, const void *p, size_t n);
uint64_t bc_crc64nvme(uint64_t crc, const void *p, size_t n);
/* The table-driven CRC32C, even where the CPU has SSE4.2 (for tests). */
uint32_t bc_crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif
