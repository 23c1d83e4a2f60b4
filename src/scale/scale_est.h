/*
 * scale_est.h — the estimators behind --mem-size auto (docs/design.md,
 * "Scale"), fed from the gateway's own traffic:
 *
 *   per job      R, the consumption rate: bytes sent to it per second of
 *                the time it did not wait on fills. Each connection of
 *                the job is a lane (a loader worker reads one object
 *                after another on its own connection): a read's time is
 *                the span since the lane's previous read, its wait the
 *                read's own; a span longer, waits aside, than 4 mean
 *                spans (2 s at least) is an idle gap and counts for
 *                nothing (a worker that stopped is idle, not slow). R is
 *                the sum of the rates of the lanes read within their gap
 *                of the job's last read; without any, the job as one
 *                lane, its waits the union of its reads' waits. Its
 *                throughput and wait fraction over its reading time;
 *   per origin   B, the bandwidth: bytes of fills per second of the time
 *                any fill's body was coming; the latency: mean time to
 *                an answer's headers;
 *   per dataset  D, its size: the distinct chunk bytes read (a chunk
 *                counts whole however little of it was read), or, from a
 *                job's plan, its keys times the mean bytes read per object,
 *                until the first epoch end; and its epoch ends.
 *
 * A dataset is the bucket plus the first depth '/'-separated parts of the
 * key ("b/dsA/" for key "dsA/img/k1.bin" at depth 1; "b/" for a key with
 * no '/'; bc_policy_dataset_name). An epoch end is a read of a chunk read
 * already in the current epoch, last touched at least K reads of the
 * dataset ago (K = an eighth of its chunks, 16 at least, half of them at
 * most: reads of one chunk in ranges, or several workers meeting on it,
 * are not repeats), once at least half as many reads as it has chunks
 * were made since the previous end.
 *
 * Bounds: at most BC_SCALE_MAX_JOBS jobs and BC_SCALE_MAX_DATASETS
 * datasets (the least recently active one makes room); each dataset
 * tracks at most BC_SCALE_SET_MAX chunks: past half of that it keeps only
 * the chunks whose hash falls in a half as large a sample (and counts
 * each as twice as many bytes), so D stays an estimate within about 1%.
 *
 * Rates are exponentially weighted over tau (folds at bc_scale_est_fold,
 * on the scale timer). Threads: every call takes the estimator's one
 * mutex for a short critical section (no I/O, no callback); events come
 * from MHD workers, folds and snapshots from the loop. Times are
 * monotonic nanoseconds, passed in (tests drive time).
 */
#ifndef BC_SCALE_EST_H
#define BC_SCALE_EST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_SCALE_MAX_JOBS      256
#define BC_SCALE_MAX_DATASETS  64
#define BC_SCALE_SET_MAX       32768u
#define BC_SCALE_NAME_MAX      128     /* bytes of a name, NUL included */
#define BC_SCALE_LANES         32      /* connections per job */

typedef struct bc_scale_est_s bc_scale_est_t;

typedef struct bc_scale_est_opts_s {
	uint64_t chunk_size;     /* the cache's chunk size (bytes) */
	unsigned depth;          /* key parts naming a dataset */
	uint64_t tau_ns;         /* smoothing; 0: 10 s */
} bc_scale_est_opts_t;

/* One job, as of the last fold. */
typedef struct bc_scale_job_s {
	char     id[BC_SCALE_NAME_MAX];
	char     dataset[BC_SCALE_NAME_MAX];   /* of its latest read */
	double   rate;         /* R, bytes/s while not waiting; 0: unknown */
	double   throughput;   /* bytes/s over all its reading time */
	double   wait_fraction;
	uint64_t last_read_ns; /* monotonic */
	uint64_t bytes;        /* sent to it, in all */
	uint64_t reads;
	double   epochs;       /* chunk reads of its dataset / its chunks */
} bc_scale_job_t;

/* One dataset, as of the last fold. */
typedef struct bc_scale_dataset_s {
	char     name[BC_SCALE_NAME_MAX];
	uint64_t size;          /* D, bytes; 0: not known yet */
	enum { BC_SCALE_D_READING, BC_SCALE_D_PLAN, BC_SCALE_D_EPOCH } source;
	uint64_t distinct;      /* distinct chunk bytes read (estimate) */
	uint64_t chunks;        /* distinct chunks read (estimate) */
	uint64_t plan_keys;     /* the longest plan a job posted for it */
	uint32_t epochs;        /* epoch ends seen */
	uint64_t last_epoch_ns; /* monotonic, of the latest; 0: none */
	uint64_t last_read_ns;
} bc_scale_dataset_t;

/* The origin, as of the last fold. */
typedef struct bc_scale_origin_s {
	double   bandwidth;     /* B, bytes/s while fills run; 0: unknown */
	double   latency_s;     /* mean time to headers; 0: unknown */
	uint64_t fill_bytes;    /* in all */
} bc_scale_origin_t;

/* NULL: out of memory. o->chunk_size must be > 0. */
bc_scale_est_t *bc_scale_est_new(const bc_scale_est_opts_t *o);
void bc_scale_est_free(bc_scale_est_t *e);   /* NULL: no-op */

/* job (NULL: "anonymous") has one read more waiting on a fill (begin) or
 * one fewer (!begin); each begin is matched by one end. */
void bc_scale_est_wait(bc_scale_est_t *e, const char *job, bool begin,
    uint64_t now);
/*
 * job read bytes [first, last] of bucket/key (an object of size bytes;
 * size 0: an empty object) on connection lane (0: unknown) and was sent
 * sent bytes, after its read waited waited ns on fills. first > last: no
 * body (HEAD, error): counts for neither R nor D.
 */
void bc_scale_est_read(bc_scale_est_t *e, const char *job, uint64_t lane,
    uint64_t waited, const char *bucket, const char *key, uint64_t size,
    uint64_t first, uint64_t last, uint64_t sent, uint64_t now);
/* job posted a plan of nkeys keys of bucket, the first first_key (the
 * dataset is first_key's). */
void bc_scale_est_plan(bc_scale_est_t *e, const char *job,
    const char *bucket, const char *first_key, uint64_t nkeys,
    uint64_t now);
/* job ended (deleted): forgotten. */
void bc_scale_est_forget(bc_scale_est_t *e, const char *job);

/* The origin's running totals (cumulative, from the cache): bytes of
 * fills, ns during which at least one fill was in flight, and the sum
 * and count of times to headers (ns). Differences since the previous
 * call are folded at the next bc_scale_est_fold. */
void bc_scale_est_origin_totals(bc_scale_est_t *e, uint64_t bytes,
    uint64_t busy_ns, uint64_t ttfb_ns, uint64_t ttfb_count);

/* Folds what happened since the previous fold into the rates. */
void bc_scale_est_fold(bc_scale_est_t *e, uint64_t now);

/* Copies of at most max jobs / datasets (most recently active first)
 * into out; return how many. */
size_t bc_scale_est_jobs(bc_scale_est_t *e, bc_scale_job_t *out,
    size_t max);
size_t bc_scale_est_datasets(bc_scale_est_t *e, bc_scale_dataset_t *out,
    size_t max);
void bc_scale_est_origin(bc_scale_est_t *e, bc_scale_origin_t *out);

#endif
