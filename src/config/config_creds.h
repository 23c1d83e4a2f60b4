/*
 * config_creds.h — reads one profile from an AWS shared credentials file
 * (~/.aws/credentials): INI sections "[name]", "key = value" lines,
 * comments starting with ';' or '#'.
 *
 * Pure and bounded: lines longer than BC_CREDS_MAX_LINE bytes are an
 * error, the file is read once and closed. Thread-safe (no shared state).
 */
#ifndef BC_CONFIG_CREDS_H
#define BC_CONFIG_CREDS_H

#include <stddef.h>

#define BC_CREDS_MAX_LINE 4096

/* One key pair; every member owned by the struct, NULL when absent. */
typedef struct bc_creds_s {
	char *access_key;
	char *secret_key;
	char *session_token;
} bc_creds_t;

/*
 * Reads profile from the credentials file at path into *out (zeroed, or
 * holding earlier credentials, which are replaced on success and left
 * untouched on failure). Keys are matched
 * case-insensitively (aws_access_key_id, aws_secret_access_key,
 * aws_session_token); section names exactly, surrounding blanks ignored.
 * A key repeated in the profile takes its last value.
 * Returns 0; BC_ENOENT when the file or the profile does not exist;
 * BC_EINVAL for a malformed line (too long, no '=', unterminated
 * section) or a profile without both keys; BC_EIO / -errno when the file
 * cannot be read; BC_ENOMEM. err (may be NULL) gets one line naming the
 * file, and the line number for malformed lines. Secrets never appear in
 * err.
 */
int  bc_creds_load_file(const char *path, const char *profile,
    bc_creds_t *out, char *err, size_t errlen);

/* Frees the members and zeroes *c. */
void bc_creds_fini(bc_creds_t *c);

#endif
