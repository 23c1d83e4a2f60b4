/*
 * util_num.h — the one decimal number parser: unsigned 64-bit values from
 * digits only (no sign, no blanks, no base prefix), overflow refused.
 * Pure and thread-safe.
 */
#ifndef BC_UTIL_NUM_H
#define BC_UTIL_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The run of decimal digits at the start of s[0..n) into *out: returns
 * its length (0: s does not start with a digit, *out untouched), or
 * BC_ERANGE when its value passes UINT64_MAX. */
ssize_t bc_u64_prefix(const char *s, size_t n, uint64_t *out);
/* s[0..n) is one or more decimal digits and nothing else, and its value
 * fits: true and *out; else false, *out untouched. */
bool bc_u64_parse(const char *s, size_t n, uint64_t *out);
/* The same for a NUL-terminated s; NULL is false. */
bool bc_u64_parse_str(const char *s, uint64_t *out);

#endif
