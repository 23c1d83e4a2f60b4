/*
 * scale_rule.h — the sizing rule of --mem-size auto (docs/design.md "Scale"),
 * pure: estimates in, a target and per-dataset shares out.
 *
 * With the chunks a cache of C bytes keeps pinned, a job reading a
 * dataset of D bytes at R bytes/s from an origin of B bytes/s runs at
 * min(R, B / (1 - C/D)); the smallest cache with no stall is
 * C* = D * max(0, 1 - B/R). A dataset's need is C* computed with R the
 * sum of its active jobs' rates (the dataset is counted once however
 * many jobs read it), plus its prefetch window R * latency * k. Needs
 * that do not fit under max are served in decreasing rate per byte
 * (R / D, as SiloD weighs cache value): each dataset in turn gets its
 * whole need, or what is left.
 */
#ifndef BC_SCALE_RULE_H
#define BC_SCALE_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_SCALE_WINDOW_K 2.0

typedef struct bc_scale_need_s {
	/* in */
	uint64_t size;          /* D, bytes; 0: unknown (needs nothing) */
	double   rate;          /* sum of its active jobs' R; 0: unknown */
	bool     active;        /* a job read it within idle-release */
	/* out */
	double   rate_per_byte; /* rate / size */
	uint64_t window;        /* its prefetch window, bytes */
	uint64_t need;          /* C* + window (0 when inactive) */
	uint64_t share;         /* what it is given */
} bc_scale_need_t;

typedef struct bc_scale_rule_s {
	double   bandwidth;     /* B, bytes/s; 0: unknown (a need is D) */
	double   latency_s;     /* the origin's */
	uint64_t min, max;      /* bounds of the target */
	uint64_t floor;         /* bytes clients are reading: never less */
} bc_scale_rule_t;

/*
 * Computes every dataset's need and share in d[0..n) and returns the
 * target: the sum of shares within [min, max], and not below floor. An
 * active dataset with an unknown rate needs its whole size.
 */
uint64_t bc_scale_rule(const bc_scale_rule_t *r, bc_scale_need_t *d,
    size_t n);

/* Why the size in force moves (bc_scale_step). */
typedef enum bc_scale_why_e {
	BC_SCALE_HOLD = 0,      /* no change */
	BC_SCALE_GROW,          /* the target is above: grown at once */
	BC_SCALE_SHRINK_EPOCH,  /* below, and an epoch ended */
	BC_SCALE_SHRINK_IDLE,   /* below, and a dataset went idle */
	BC_SCALE_WAIT,          /* below: held until an epoch ends */
} bc_scale_why_t;

/*
 * The size to put in force, from cur towards target: up at once (by at
 * most step bytes; 0: no bound), down only when epoch_end or idle says
 * so; *why says which.
 */
uint64_t bc_scale_step(uint64_t cur, uint64_t target, uint64_t step,
    bool epoch_end, bool idle, bc_scale_why_t *why);

#endif
