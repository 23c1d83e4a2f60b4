/*
 * creds.h — the gateway's upstream credentials, as the S3 origin signs
 * with them: a provider holds the current key pair (access key, secret,
 * session token, expiration) as an immutable, refcounted snapshot, and
 * for the sources whose keys are fetched (web identity, ECS, IMDS: see
 * config_creds.h and creds_fetch.h) replaces it before it expires, on a
 * thread of its own — never on a request's path.
 *
 * Concurrency: bc_creds_get() may be called from any thread; it takes
 * the provider's mutex for a pointer copy and a reference, so a signer
 * always has a consistent pair (never one key of the old snapshot and
 * the secret of the new one) and the snapshot stays alive until it
 * unrefs it. The refresh thread fetches with no lock held and swaps the
 * pointer under the mutex. A refresh that fails keeps the old snapshot
 * in use until it expires and is retried with backoff; once it has
 * expired, bc_creds_get() returns NULL (BC_EKEYEXPIRED) and counts it
 * (creds_expired_requests), so no request goes out with a key pair the
 * upstream would refuse.
 *
 * Schedule (bc_creds_refresh_at, bc_creds_retry_delay, pure): a fetched
 * snapshot is refreshed when 5 minutes, or a quarter of its lifetime if
 * that is less, remain; a failed attempt is retried after 1, 2, 4 ...
 * 60 s, never later than half the time left before expiry (at least
 * 1 s), and every 5 s at most once expired.
 *
 * Stats: counters creds_refreshes, creds_refresh_failures,
 * creds_expired_requests (stats_table.h); the "credentials" section
 * (bc_creds_stats_json/_prom): source, access key id, expiry and seconds
 * left, the last error.
 */
#ifndef BC_CREDS_CREDS_H
#define BC_CREDS_CREDS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/util_buf.h"
#include "util/util_error.h"

/* Bounds of a key pair (what snapshots accept). */
#define BC_CREDS_MAX_ACCESS_KEY 128
#define BC_CREDS_MAX_SECRET     1024
#define BC_CREDS_MAX_SESSION    16384

/* One key pair, immutable once made; its strings live in the same
 * allocation. */
typedef struct bc_creds_snap_s {
	atomic_uint  refs;
	const char  *access_key;
	const char  *secret_key;
	const char  *session_token;   /* NULL when none */
	int64_t      expiration_ms;   /* wall clock (Unix ms); 0: never */
	int64_t      fetched_ms;      /* wall clock when it was made */
} bc_creds_snap_t;

/*
 * A snapshot of copies of ak, sk and tok (NULL or "": none), expiring at
 * expiration_ms (0: never), with one reference. Checks what goes into
 * request headers: the access key 1-128 (without '/'), the secret
 * 1-1024 and the token up to 16 KiB of printable ASCII without blanks
 * (creds_parse.h is stricter with what services send).
 * Returns 0 and *out, BC_EINVAL with err naming the bad field (never its
 * value), or BC_ENOMEM.
 */
int  bc_creds_snap_new(const char *ak, const char *sk, const char *tok,
    int64_t expiration_ms, bc_creds_snap_t **out, char *err,
    size_t errlen);
void bc_creds_snap_ref(bc_creds_snap_t *s);
/* Drops a reference; the last one wipes the secrets and frees. NULL is
 * a no-op. */
void bc_creds_snap_unref(bc_creds_snap_t *s);

/* Fetches a new snapshot (blocking; on the refresh thread, or the
 * caller's at start). Returns 0 and *out (one reference), or a negative
 * code with err set (one line, no secrets). */
typedef int (*bc_creds_fetch_fn)(void *arg, bc_creds_snap_t **out,
    char *err, size_t errlen);

typedef struct bc_creds_s bc_creds_t;

/*
 * The provider for cfg's source (cfg->creds.source; cfg must outlive
 * it): static sources (env, profile) wrap cfg's key pair, which never
 * expires; fetched sources fetch their first snapshot now, blocking
 * (IMDS: 3 attempts of 1 s by default). Returns 0 and *out (NULL for
 * source none: requests then go unsigned), or -1 with err saying what
 * was tried and why it failed.
 */
int  bc_creds_new(const bc_config_t *cfg, bc_creds_t **out, char *err,
    size_t errlen);
/* A provider over fetch(arg) named source (tests; the first fetch is
 * made now, as bc_creds_new does). Returns 0 and *out, or -1 with err. */
int  bc_creds_new_fetcher(bc_creds_source_t source, bc_creds_fetch_fn fetch,
    void *arg, bc_creds_t **out, char *err, size_t errlen);
/* A provider holding ak/sk/tok for good. NULL when out of memory or
 * the pair is malformed. */
bc_creds_t *bc_creds_new_static(const char *ak, const char *sk,
    const char *tok);
/* Starts the refresh thread (fetched sources; for static ones a no-op).
 * The thread blocks every signal. Returns 0 or a negative code. */
int  bc_creds_start(bc_creds_t *c);
/* Stops the thread (an HTTP call in progress is aborted) and frees.
 * Snapshots signers still hold stay valid until unref'd. NULL: no-op. */
void bc_creds_free(bc_creds_t *c);

/*
 * The key pair to sign with now: a snapshot with a reference the caller
 * drops with bc_creds_snap_unref(), or NULL with *why (may be NULL) set
 * to BC_EKEYEXPIRED when the current one has expired and no refresh has
 * succeeded (counted in creds_expired_requests and logged, at most every
 * 10 s). Any thread; never blocks on a fetch.
 */
bc_creds_snap_t *bc_creds_get(bc_creds_t *c, int *why);
/* 0 when bc_creds_get() would return a snapshot, else BC_EKEYEXPIRED
 * (not counted). */
int  bc_creds_ready(bc_creds_t *c);
bc_creds_source_t bc_creds_source(const bc_creds_t *c);

/* The "credentials" stats section (bc_stats_set_section's shapes; arg is
 * the provider). */
int  bc_creds_stats_json(void *c, bc_buf_t *out);
int  bc_creds_stats_prom(void *c, bc_buf_t *out);

/* When to refresh a snapshot made at fetched_ms that expires at
 * expiration_ms (0: never: INT64_MAX): expiration minus the lesser of 5
 * minutes and a quarter of its lifetime. */
int64_t bc_creds_refresh_at(int64_t fetched_ms, int64_t expiration_ms);
/* The wait in ms before attempt failures + 1 after failures failed ones
 * (failures >= 1), at now_ms, for credentials expiring at expiration_ms
 * (0: never). */
int64_t bc_creds_retry_delay(unsigned failures, int64_t now_ms,
    int64_t expiration_ms);

/* The wall clock in Unix ms (what expirations are compared with). */
int64_t bc_creds_now_ms(void);

#endif
