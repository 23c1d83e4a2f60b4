/*
 * creds_parse.h — the answers of the credential services, read into key
 * pairs: the JSON document the ECS container endpoint and the EC2
 * instance metadata service send (AccessKeyId, SecretAccessKey, Token,
 * Expiration; IMDS adds Code, which must be "Success"), the XML of STS
 * AssumeRoleWithWebIdentity (Credentials/AccessKeyId, SecretAccessKey,
 * SessionToken, Expiration) or its ErrorResponse, and IMDS's role list.
 *
 * Hostile input is expected: every parser is bounded (an answer is at
 * most BC_CREDS_MAX_ANSWER bytes, JSON nests at most 32 deep, a string
 * at most BC_CREDS_MAX_SESSION bytes), rejects what it does not
 * understand with one line in err (never a secret), and never reads past
 * len. The JSON reader is a full RFC 8259 syntax check (escapes and
 * surrogate pairs decoded, \u0000 refused, members other than the ones
 * wanted skipped whatever their type); a wanted member given twice is an
 * error. The XML reader is a scanner over exact start and end tags (as
 * s3_xml.h's: no CDATA, entities decoded by bc_s3_xml_text).
 *
 * Pure and thread-safe.
 */
#ifndef BC_CREDS_PARSE_H
#define BC_CREDS_PARSE_H

#include <stddef.h>

#include "creds/creds.h"

#define BC_CREDS_MAX_ANSWER (64 * 1024)
#define BC_CREDS_MAX_ROLE   128

/*
 * An ECS or IMDS JSON answer of len bytes (need not be NUL-terminated).
 * Returns 0 and *out (one reference), or: BC_EACCES when the service
 * said no (IMDS Code other than "Success"; an ECS error document with
 * "code"/"message"), with its words in err; BC_EPROTO for a body that is
 * not such a document (malformed JSON, a missing or non-string
 * AccessKeyId, SecretAccessKey or Expiration, a bad Expiration); BC_EINVAL
 * for a field snapshots refuse (bc_creds_snap_new); BC_ENOMEM.
 * Token is optional (a session token is expected but not required).
 */
int bc_creds_parse_json(const char *body, size_t len, bc_creds_snap_t **out,
    char *err, size_t errlen);

/*
 * An STS AssumeRoleWithWebIdentity answer of len bytes. Returns 0 and
 * *out; BC_EACCES for an <ErrorResponse> (err: "Code: Message"),
 * BC_EPROTO for anything else that is not an
 * <AssumeRoleWithWebIdentityResponse> with the four <Credentials>
 * members, BC_EINVAL, BC_ENOMEM as above.
 */
int bc_creds_parse_sts(const char *body, size_t len, bc_creds_snap_t **out,
    char *err, size_t errlen);

/*
 * IMDS's answer to GET .../iam/security-credentials/: the first line,
 * blanks trimmed, into out (at least BC_CREDS_MAX_ROLE + 1 bytes): a role
 * name of 1-128 of [A-Za-z0-9_+=,.@-]. Returns 0, or BC_ENOENT for an
 * empty answer (no role attached), BC_EPROTO for anything else.
 */
int bc_creds_parse_role(const char *body, size_t len, char *out,
    size_t outlen, char *err, size_t errlen);

#endif
