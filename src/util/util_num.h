/*
 * util_num.h — the one number parser: unsigned 64-bit values from the
 * digits of base 10 or 16 only (no sign, no blanks, no "0x" prefix),
 * bounded by a caller's maximum, overflow refused. Every number read
 * from a header, a URL, an option, a file name or a peer's reply goes
 * through bc_parse_u64 or bc_parse_u64_prefix; size and duration
 * suffixes are a layer on top of it in config/. Pure and thread-safe.
 */
#ifndef BC_UTIL_NUM_H
#define BC_UTIL_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The run of base-`base` digits (10, or 16 in either case) at the start
 * of s[0..n) into *out: returns its length (0: s does not start with a
 * digit, *out untouched), or BC_ERANGE when its value passes max (*out
 * untouched). */
ssize_t bc_parse_u64_prefix(const char *s, size_t n, int base, uint64_t max,
    uint64_t *out);
/* s[0..n) is one or more base-`base` digits and nothing else, and its
 * value is at most max: 0 and *out. Else BC_EINVAL (empty, or a byte
 * that is no digit: a sign, a blank, a prefix) or BC_ERANGE (past max),
 * *out untouched. */
int bc_parse_u64(const char *s, size_t n, int base, uint64_t max,
    uint64_t *out);
/* The same for a NUL-terminated s; NULL is BC_EINVAL. */
int bc_parse_u64_str(const char *s, int base, uint64_t max, uint64_t *out);

/* A TCP port, 1-65535, in decimal s[0..n): 0 and *out, or BC_EINVAL. */
int bc_parse_port(const char *s, size_t n, uint16_t *out);

/* Shorthands for decimal with no bound but UINT64_MAX. */
/* bc_parse_u64_prefix(s, n, 10, UINT64_MAX, out). */
ssize_t bc_u64_prefix(const char *s, size_t n, uint64_t *out);
/* bc_parse_u64(s, n, 10, UINT64_MAX, out) == 0. */
bool bc_u64_parse(const char *s, size_t n, uint64_t *out);
/* The same for a NUL-terminated s; NULL is false. */
bool bc_u64_parse_str(const char *s, uint64_t *out);

#endif
