/*
 * creds_fetch.h — fetching a key pair from the sources whose keys rotate,
 * over blocking libcurl easy calls (the refresh thread's, or main's at
 * start), speaking each service's documented protocol:
 *
 *   imds         PUT {imds}/latest/api/token with
 *                X-aws-ec2-metadata-token-ttl-seconds: 21600 (the token
 *                is kept and reused until a minute before its TTL, or
 *                until a 401), then with X-aws-ec2-metadata-token: GET
 *                /latest/meta-data/iam/security-credentials/ (the role)
 *                and .../ROLE (the JSON pair); every call bounded by
 *                imds_timeout_ms and made up to imds_attempts times
 *                (transport errors, 5xx); no HTTP proxy.
 *   ecs          GET the container URI (Authorization: the token file's
 *                contents, read at every call, else the token), 2 s and 3
 *                attempts; no HTTP proxy.
 *   web-identity POST {sts}/ Action=AssumeRoleWithWebIdentity&Version=
 *                2011-06-15&RoleArn&RoleSessionName&WebIdentityToken (the
 *                token file read at every call: EKS rotates it),
 *                unsigned; 10 s and 3 attempts (transport, 5xx,
 *                IDPCommunicationError).
 *
 * Answers are read into a buffer of at most BC_CREDS_MAX_ANSWER bytes
 * (more aborts the call) and parsed by creds_parse.h. No redirects are
 * followed; http and https only.
 *
 * A fetcher is used by one thread at a time; bc_creds_fetcher_abort()
 * may be called from any thread and ends the call in progress (and every
 * later one) at once.
 */
#ifndef BC_CREDS_FETCH_H
#define BC_CREDS_FETCH_H

#include <stddef.h>

#include "config/config_creds.h"
#include "creds/creds.h"

typedef struct bc_creds_fetcher_s bc_creds_fetcher_t;

/* A fetcher for cc's source (web-identity, ecs or imds; cc must outlive
 * it). NULL when out of memory. */
bc_creds_fetcher_t *bc_creds_fetcher_new(const bc_config_creds_t *cc);
void bc_creds_fetcher_free(bc_creds_fetcher_t *f);   /* NULL: no-op */
/* bc_creds_fetch_fn's shape (arg: the fetcher): 0 and *out, or a
 * negative code with err naming the service, the step and why. */
int  bc_creds_fetcher_fetch(void *f, bc_creds_snap_t **out, char *err,
    size_t errlen);
void bc_creds_fetcher_abort(void *f);

/* application/x-www-form-urlencoded value: RFC 3986 unreserved bytes as
 * they are, every other byte %XX. Returns 0 or BC_ENOMEM. */
int  bc_creds_form_escape(bc_buf_t *out, const char *s);

#endif
