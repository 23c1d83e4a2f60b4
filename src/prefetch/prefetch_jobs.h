/*
 * prefetch_jobs.h — the jobs registry: training jobs by id, each with the
 * plans of its current and coming epochs (prefetch_plan.h) and a cursor
 * in the current one (docs/design.md "Plans").
 *
 * A job exists from its first plan (bc_jobs_put_plan) until it is
 * deleted or evicted: at most max_jobs, and plans of at most max_bytes
 * all told. GETs of jobs without a plan are not recorded (a flood of
 * made-up job ids cannot evict planned jobs).
 *
 * Owners: a job belongs to the client key that posted its first plan, or
 * to the operator (owner NULL or "": the admin token or a local client).
 * A keyed owner holds at most its share, max_jobs / owners jobs (at least
 * one) and max_bytes / owners bytes of plans, where owners is the number
 * of client keys (bc_jobs_new); making room for it evicts its own jobs,
 * idle the longest first, and never another's — so the keys' shares
 * together never exceed the bounds, and no key can evict what another
 * planned. The operator's plans make room by evicting the job idle the
 * longest, whoever's. Only the operator or the owner may post a plan to
 * an owned job; an operator's job takes plans from the operator only.
 * Reads count toward an owned job only when its owner makes them
 * (bc_jobs_may_use), toward an operator's job whoever makes them.
 *
 * Plans being received are bounded apart: bc_jobs_build_charge keeps the
 * bytes all builders hold at once within max_bytes.
 *
 * A job holds up to BC_JOBS_EPOCHS plans, by epoch; the lowest is the
 * current one. Progress in it is the positions read (a bit each), the
 * cursor (one past the furthest read) and low (the first not read): a
 * loader with several workers reads several stretches of the plan at
 * once, so the positions in [low, cursor) not read are due now. A GET of
 * key k reads the first position p >= low holding k that was not read,
 * when p < cursor + BC_JOBS_LOOKAHEAD (further ahead, or read already,
 * it counts out_of_order; positions more than BC_JOBS_LOOKAHEAD behind
 * the cursor are given up). A key early in the next epoch's plan starts
 * that epoch when it is nearer that way ((plan length - low) + its
 * position there < BC_JOBS_LOOKAHEAD) than as a re-read behind the
 * cursor (cursor - its position here), so the last keys of an epoch may
 * go unread (drop_last); a key in no plan counts out_of_plan. When every
 * position of the current plan was read, the next plan held becomes
 * current. A hinted epoch (x-bucketcache-epoch) above the current one
 * starts it when it is held.
 *
 * Threads: every call takes the registry's one mutex for a short
 * critical section (no allocation but in put_plan and json, no I/O, no
 * callback; a job's epoch, cursor and plan length are mirrored into its
 * per-job stats as they change, stats.h); MHD workers record GETs, the
 * loop reads windows, the policy asks next uses. Plans are immutable and refcounted, so keys a window
 * returns stay valid without the lock.
 */
#ifndef BC_PREFETCH_JOBS_H
#define BC_PREFETCH_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "prefetch/prefetch_plan.h"
#include "util/util_buf.h"

#define BC_JOBS_EPOCHS     3          /* plans a job holds */
#define BC_JOBS_LOOKAHEAD  4096       /* positions a read may skip */
#define BC_JOBS_NEVER      UINT64_MAX /* bc_jobs_next_use: no known use */
#define BC_JOBS_DEFAULT_MAX_JOBS  1024
#define BC_JOBS_DEFAULT_MAX_BYTES ((size_t)1 << 30)

typedef struct bc_jobs_s bc_jobs_t;
typedef struct bc_job_s bc_job_t;

/* One key of a window: key is NUL-terminated and lives while plan does;
 * plan is a reference (bc_jobs_window_release drops them). */
typedef struct bc_job_key_s {
	bc_plan_t  *plan;
	const char *key;
	size_t      len;
	uint32_t    epoch;
	uint32_t    pos;
} bc_job_key_t;

/* A snapshot of one job, for the admin API and stats. */
#define BC_JOBS_OWNER_MAX 128    /* bytes of an owner (an access key) */

typedef struct bc_job_info_s {
	char     id[129];
	char     bucket[256];
	char     owner[BC_JOBS_OWNER_MAX + 1];   /* "": the operator's */
	uint32_t epoch;          /* current */
	uint32_t cursor;         /* one past the furthest position read */
	uint32_t low;            /* the first position not read */
	uint32_t plan_len;       /* keys in the current plan */
	uint32_t epochs[BC_JOBS_EPOCHS];   /* held, ascending */
	unsigned n_epochs;
	uint64_t reads;          /* GETs recorded */
	uint64_t out_of_order;
	uint64_t out_of_plan;
	size_t   plan_bytes;     /* bc_plan_memory of all its plans */
} bc_job_info_t;

/* max_jobs 0 or max_bytes 0: the defaults above; owners: the client keys
 * that share them (0 counts as 1). NULL: no memory. */
bc_jobs_t *bc_jobs_new(size_t max_jobs, size_t max_bytes, size_t owners);
/* Frees every job and plan. Every bc_jobs_get reference must have been
 * dropped. NULL: no-op. */
void bc_jobs_free(bc_jobs_t *jobs);

/*
 * Installs plan (the caller's reference is taken over, also on error)
 * as job id's plan for epoch of bucket, creating the job, owned by owner
 * (NULL or "": the operator; at most BC_JOBS_OWNER_MAX bytes). epoch
 * NULL: one after the highest held, 0 for a new job. A plan for another
 * bucket than the job's replaces all its plans. The same epoch replaces
 * that plan (and resets the cursor when current). Returns 0 and
 * *epoch_out, or BC_EACCES (the job is another's: see Owners above),
 * BC_EINVAL (an epoch below the current one, or a bad id, bucket or
 * owner), BC_E2BIG (the job already holds BC_JOBS_EPOCHS later epochs),
 * BC_ENOSPC (the plan does not fit: max_bytes, or the owner's share,
 * even with the owner's other jobs evicted), BC_ENOMEM.
 */
int bc_jobs_put_plan(bc_jobs_t *jobs, const char *id, const char *owner,
    const char *bucket, const uint32_t *epoch, bc_plan_t *plan,
    uint32_t *epoch_out);
/* true when who (a client's access key; NULL: an unsigned client) may
 * name job id in its reads: no such job, the operator's job, or who's. */
bool bc_jobs_may_use(bc_jobs_t *jobs, const char *id, const char *who);
/*
 * Plan bodies being received: adds delta (negative: gives back) to the
 * bytes builders hold. Returns 0, or BC_ENOSPC when a positive delta
 * would take them over max_bytes (nothing is added then). Any thread.
 */
int bc_jobs_build_charge(bc_jobs_t *jobs, int64_t delta);
/* Ends job id when owner is NULL (the operator may end any) or its
 * owner ("": the operator's jobs). Returns 0, BC_ENOENT or BC_EACCES. */
int bc_jobs_delete(bc_jobs_t *jobs, const char *id, const char *owner);

/*
 * Records a GET of bucket/key by job id made by who (as for
 * bc_jobs_may_use; hinted epoch: NULL when none). Returns true when id
 * is a job who may use (its cursor may have moved), false otherwise
 * (nothing recorded).
 */
bool bc_jobs_record(bc_jobs_t *jobs, const char *id, const char *who,
    const char *bucket, const char *key, const uint32_t *epoch);

/*
 * The soonest any job reads bucket/key next, in reads: in its current
 * plan, a position not read is as far as it lies into its stretch (the
 * positions not read after the last read one before it: 0 = the next key
 * some worker reads; at or past the cursor, its distance from the
 * cursor); in a following plan, its position there past the rest of the
 * plans before (from the cursor). BC_JOBS_NEVER when no job plans to
 * read it.
 */
uint64_t bc_jobs_next_use(bc_jobs_t *jobs, const char *bucket,
    const char *key);
/* The same for the chunk the policy names h (bc_policy_key_hash(bucket,
 * key, 0): a plan names objects, so only first chunks are known). */
uint64_t bc_jobs_next_use_hash(bc_jobs_t *jobs, uint64_t h);
/* The planned policy's oracle over this registry (policy.h): a chunk's
 * next use is BC_JOBS_KEY_NS past now per plan position it lies ahead of
 * the nearest cursor; known once any job posted a plan. Lives as long as
 * jobs; takes the registry's lock (after the tier's). */
#define BC_JOBS_KEY_NS 1000000ull
const bc_policy_oracle_t *bc_jobs_oracle(bc_jobs_t *jobs);

/* Job id with a reference held, or NULL; bc_job_unref when done. A job
 * deleted or evicted meanwhile stays valid and reads as ended. */
bc_job_t *bc_jobs_get(bc_jobs_t *jobs, const char *id);
void bc_job_unref(bc_job_t *job);
/* false once the job was deleted or evicted */
bool bc_job_live(bc_job_t *job);

/*
 * The keys the job reads next, soonest first (by the distance of
 * bc_jobs_next_use; ties in plan order): those of the current plan
 * due now (not read, between low and the cursor; their count goes to
 * *behind when not NULL), then up to ahead keys after the cursor (at
 * least the recent peak of cursor - low: workers reading stretches at
 * once move the cursor by about that much when one starts its next
 * stretch, and start the next epoch as far apart), running on into the
 * following plans; max keys in all. Writes out[0..k) and
 * returns k (0 for an ended job). bucket (when not NULL, at least 256
 * bytes) receives the job's bucket. Each out[i].plan is a reference:
 * bc_jobs_window_release(out, k).
 */
size_t bc_jobs_window(bc_job_t *job, size_t ahead, size_t max,
    bc_job_key_t *out, char *bucket, size_t *behind);
void bc_jobs_window_release(bc_job_key_t *keys, size_t n);

/* A snapshot of job id into *info: 0 or BC_ENOENT. */
int bc_jobs_info(bc_jobs_t *jobs, const char *id, bc_job_info_t *info);
/* Number of jobs. */
size_t bc_jobs_count(bc_jobs_t *jobs);

/*
 * Appends JSON: with id NULL {"jobs": [JOB, ...]} (only owner's jobs
 * when owner is not NULL; "" names the operator's), else one JOB object
 * (owner ignored), where JOB is {"id", "bucket", "owner" (null for the
 * operator's), "epoch", "cursor", "plan_keys",
 * "epochs": [...], "reads", "out_of_order", "out_of_plan",
 * "plan_bytes", then the job's per-job stats (stats.h,
 * bc_stats_job_json: "requests", ..., "prefetch_issued", "prefetch_used",
 * "prefetch_wasted", ..., "rate_bytes_per_second")}. Returns 0,
 * BC_ENOENT (no job id), BC_ENOMEM.
 */
int bc_jobs_json(bc_jobs_t *jobs, const char *id, const char *owner,
    bc_buf_t *out);

#endif
