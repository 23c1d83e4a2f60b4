/*
 * test_loop.c — the loop's timers and work pool
 * (loop/loop.h): a timer's period and thread, and that no run follows
 * bc_loop_timer_free, whether it is called from another thread during a
 * run (it waits the run out) or while the timer is due and the loop
 * thread busy, from inside the timer's own callback, from another
 * callback, or before the timer ever started; timers left at
 * bc_loop_stop are closed by the loop and freed by their owner after it;
 * bad arguments. A work runs off the loop thread and its after() on it;
 * many submissions from several threads all complete, each once; a stop
 * with work queued behind busy pool threads still runs every work and
 * after() (which see calls refused) before it returns; a loop freed
 * without having run does the same on the freeing thread. Leaks are
 * checked by LTest under ASan.
 *
 * Waits are on a condition variable with a guard (GUARD_MS) that only a
 * hang reaches. Absence of ticks is observed over another timer's ticks.
 * Time bounds are generous (sanitized builds, a shared machine).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "loop/loop.h"
#include "util/util_error.h"
#include "util/util_time.h"

#define GUARD_MS 20000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  cv;

static void
suite_init(void)
{
	pthread_condattr_t a;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &a);
	pthread_condattr_destroy(&a);
}

static void
suite_fini(void)
{
	curl_global_cleanup();
}

TestSuite(loop, .init = suite_init, .fini = suite_fini, .timeout = 60);

static uint64_t
now_ms(void)
{
	return bc_mono_ns() / 1000000;
}

/* Waits, mu held, until expr holds; fails the test at GUARD_MS. */
#define WAIT_UNTIL(expr)                                                 \
	do {                                                             \
		struct timespec dl_;                                     \
		clock_gettime(CLOCK_MONOTONIC, &dl_);                    \
		dl_.tv_sec += GUARD_MS / 1000;                           \
		while (!(expr))                                          \
			cr_assert_eq(pthread_cond_timedwait(&cv, &mu,    \
			    &dl_), 0, "waited too long for " #expr);     \
	} while (0)

static void
no_done(CURL *easy, CURLcode result)
{
	(void)easy;
	(void)result;
}

/* ---- the loop thread ------------------------------------------------- */

static pthread_t loop_tid;
static bool      have_tid;

static void
get_tid(bc_loop_t *l, void *arg)
{
	(void)l;
	(void)arg;
	pthread_mutex_lock(&mu);
	loop_tid = pthread_self();
	have_tid = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static bc_loop_t *
loop_up(void)
{
	bc_loop_t *l = bc_loop_new(no_done);

	cr_assert_not_null(l);
	cr_assert_eq(bc_loop_start(l), 0);
	cr_assert_eq(bc_loop_call(l, get_tid, NULL), 0);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(have_tid);
	pthread_mutex_unlock(&mu);
	cr_assert_not(pthread_equal(loop_tid, pthread_self()));
	return l;
}

static void
loop_down(bc_loop_t *l)
{
	bc_loop_stop(l, NULL, NULL);
	bc_loop_free(l);
}

/* ---- timers ---------------------------------------------------------- */

#define MAX_TICKS 64

typedef struct tick_s {
	bc_loop_timer_t *t;
	int              n;               /* mu */
	uint64_t         at[MAX_TICKS];   /* ms */
	bool             off_thread;      /* a run not on the loop thread */
	int              free_at;         /* frees t itself on this tick */
	struct tick_s   *victim;          /* frees victim->t on tick 1 */
} tick_t;

static void
on_tick(bc_loop_t *l, void *arg)
{
	tick_t *k = arg;

	(void)l;
	pthread_mutex_lock(&mu);
	if (k->n < MAX_TICKS)
		k->at[k->n] = now_ms();
	k->n++;
	if (!pthread_equal(pthread_self(), loop_tid))
		k->off_thread = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (k->free_at != 0 && k->n == k->free_at) {
		bc_loop_timer_free(k->t);
		k->t = NULL;
	}
	if (k->victim != NULL && k->n == 1) {
		bc_loop_timer_free(k->victim->t);
		k->victim->t = NULL;
	}
}

static int
ticks(tick_t *k)
{
	int n;

	pthread_mutex_lock(&mu);
	n = k->n;
	pthread_mutex_unlock(&mu);
	return n;
}

/* Lets n ticks of a fresh 10 ms timer go by: time for any other timer
 * that should be quiet to show it is not. */
static void
let_ticks_pass(bc_loop_t *l, int n)
{
	tick_t clock = { 0 };

	clock.t = bc_loop_timer_new(l, 10, on_tick, &clock);
	cr_assert_not_null(clock.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(clock.n >= n);
	pthread_mutex_unlock(&mu);
	bc_loop_timer_free(clock.t);
}

LTest(loop, timer_ticks_every_period_on_the_loop_thread)
{
	bc_loop_t *l = loop_up();
	tick_t     k = { 0 };
	uint64_t   t0 = now_ms();
	int        n;

	k.t = bc_loop_timer_new(l, 20, on_tick, &k);
	cr_assert_not_null(k.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(k.n >= 10);
	pthread_mutex_unlock(&mu);
	bc_loop_timer_free(k.t);
	n = ticks(&k);
	cr_assert_not(k.off_thread, "fn ran off the loop thread");
	/* tick i is due (i + 1) periods after the start at the earliest
	 * (libuv re-arms from when a tick ran, so lateness adds up and is
	 * never made up for); allow 2 ms of clock rounding; and not
	 * absurdly late */
	for (int i = 0; i < 10; i++)
		cr_assert_geq(k.at[i] - t0, 20 * (uint64_t)(i + 1) - 2,
		    "tick %d after %llu ms", i,
		    (unsigned long long)(k.at[i] - t0));
	cr_assert_lt(k.at[9] - t0, 5000, "10 ticks of 20 ms took %llu ms",
	    (unsigned long long)(k.at[9] - t0));
	let_ticks_pass(l, 8);
	cr_assert_eq(ticks(&k), n, "ticked after bc_loop_timer_free");
	loop_down(l);
}

/* A long period: nothing before it. */
LTest(loop, timer_first_tick_waits_a_period)
{
	bc_loop_t *l = loop_up();
	tick_t     k = { 0 };
	uint64_t   t0 = now_ms();
	int        n;

	k.t = bc_loop_timer_new(l, 300, on_tick, &k);
	cr_assert_not_null(k.t);
	let_ticks_pass(l, 5);
	n = ticks(&k);
	if (now_ms() - t0 < 290)
		cr_assert_eq(n, 0, "ticked before its period");
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(k.n >= 1);
	pthread_mutex_unlock(&mu);
	cr_assert_geq(k.at[0] - t0, 298);
	bc_loop_timer_free(k.t);
	loop_down(l);
}

LTest(loop, timer_bad_arguments)
{
	bc_loop_t *l = loop_up();
	tick_t     k = { 0 };

	cr_assert_null(bc_loop_timer_new(l, 0, on_tick, &k));
	cr_assert_null(bc_loop_timer_new(l, 10, NULL, &k));
	bc_loop_timer_free(NULL);
	loop_down(l);
}

/* The run in progress when another thread frees the timer. */
typedef struct blocker_s {
	bc_loop_timer_t *t;
	int              runs;            /* mu */
	bool             entered, gate, done;
	bool             freed;           /* the freer returned */
	bool             done_when_freed; /* done, as the freer returned */
	int              runs_when_freed;
} blocker_t;

static void
on_block(bc_loop_t *l, void *arg)
{
	blocker_t *b = arg;

	(void)l;
	pthread_mutex_lock(&mu);
	b->runs++;
	b->entered = true;
	pthread_cond_broadcast(&cv);
	WAIT_UNTIL(b->gate);
	pthread_mutex_unlock(&mu);
	usleep(20000);            /* still running after the gate opens */
	pthread_mutex_lock(&mu);
	b->done = true;
	pthread_mutex_unlock(&mu);
}

static void *
freer(void *arg)
{
	blocker_t *b = arg;

	bc_loop_timer_free(b->t);
	pthread_mutex_lock(&mu);
	b->freed = true;
	b->done_when_freed = b->done;
	b->runs_when_freed = b->runs;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

LTest(loop, timer_free_from_another_thread_waits_for_the_run)
{
	bc_loop_t *l = loop_up();
	blocker_t  b = { 0 };
	pthread_t  th;

	b.t = bc_loop_timer_new(l, 5, on_block, &b);
	cr_assert_not_null(b.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(b.entered);
	pthread_mutex_unlock(&mu);
	cr_assert_eq(pthread_create(&th, NULL, freer, &b), 0);
	/* Give the freer time to reach the wait; if it has not, the test
	 * only proves less, it cannot fail wrongly. */
	usleep(50000);
	pthread_mutex_lock(&mu);
	cr_assert_not(b.freed, "bc_loop_timer_free returned during a run");
	b.gate = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	cr_assert(b.done_when_freed, "returned before the run ended");
	cr_assert_eq(b.runs_when_freed, 1);
	let_ticks_pass(l, 5);
	pthread_mutex_lock(&mu);
	cr_assert_eq(b.runs, 1, "ran again after bc_loop_timer_free");
	pthread_mutex_unlock(&mu);
	loop_down(l);
}

/* Free from inside its own callback (third tick), and one timer's
 * callback freeing another that is not running. */
LTest(loop, timer_free_from_callbacks)
{
	bc_loop_t *l = loop_up();
	tick_t     self = { 0 }, killer = { 0 }, victim = { 0 };

	self.free_at = 3;
	self.t = bc_loop_timer_new(l, 5, on_tick, &self);
	victim.t = bc_loop_timer_new(l, 5, on_tick, &victim);
	killer.victim = &victim;
	killer.t = bc_loop_timer_new(l, 30, on_tick, &killer);
	cr_assert_not_null(self.t);
	cr_assert_not_null(victim.t);
	cr_assert_not_null(killer.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(self.n >= 3 && killer.n >= 1);
	pthread_mutex_unlock(&mu);
	let_ticks_pass(l, 10);
	cr_assert_eq(ticks(&self), 3, "ran after freeing itself");
	int nv = ticks(&victim);
	cr_assert_geq(nv, 1);
	let_ticks_pass(l, 5);
	cr_assert_eq(ticks(&victim), nv, "ran after being freed");
	cr_assert_null(self.t);
	cr_assert_null(victim.t);
	bc_loop_timer_free(killer.t);
	loop_down(l);
}

static void
block_call(bc_loop_t *l, void *arg)
{
	blocker_t *b = arg;

	(void)l;
	pthread_mutex_lock(&mu);
	b->entered = true;
	pthread_cond_broadcast(&cv);
	WAIT_UNTIL(b->gate);
	pthread_mutex_unlock(&mu);
}

/* Freed from another thread while the loop thread is busy and the timer
 * is due: once the loop thread gets back to it, it must not run (the
 * handle is closed later, by a queued call). */
LTest(loop, timer_free_while_due_never_runs_again)
{
	bc_loop_t *l = loop_up();
	tick_t     k = { 0 };
	blocker_t  b = { 0 };
	int        n;

	k.t = bc_loop_timer_new(l, 1, on_tick, &k);
	cr_assert_not_null(k.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(k.n >= 1);
	pthread_mutex_unlock(&mu);
	cr_assert_eq(bc_loop_call(l, block_call, &b), 0);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(b.entered);
	pthread_mutex_unlock(&mu);
	bc_loop_timer_free(k.t);
	n = ticks(&k);
	usleep(5000);             /* the timer is due when the loop resumes */
	pthread_mutex_lock(&mu);
	b.gate = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	let_ticks_pass(l, 5);
	cr_assert_eq(ticks(&k), n, "ran after bc_loop_timer_free returned");
	loop_down(l);
}

static void
free_timer_call(bc_loop_t *l, void *arg)
{
	(void)l;
	bc_loop_timer_free(arg);
}

/* Freed before the loop thread started it: from this thread, and from
 * a call on the loop thread queued right behind the start. */
LTest(loop, timer_free_before_it_starts)
{
	bc_loop_t *l = loop_up();
	tick_t     a = { 0 }, b = { 0 };

	a.t = bc_loop_timer_new(l, 1, on_tick, &a);
	cr_assert_not_null(a.t);
	bc_loop_timer_free(a.t);
	b.t = bc_loop_timer_new(l, 1, on_tick, &b);
	cr_assert_not_null(b.t);
	cr_assert_eq(bc_loop_call(l, free_timer_call, b.t), 0);
	let_ticks_pass(l, 5);
	cr_assert_eq(ticks(&a), 0);
	cr_assert_lt(ticks(&b), 2);   /* a tick may precede the free call */
	loop_down(l);
}

/* Timers left at stop: closed by the loop (no run after), freed by
 * their owner after the stop; no new timer once stopping. */
LTest(loop, timers_pending_at_stop)
{
	bc_loop_t *l = loop_up();
	tick_t     fast = { 0 }, slow = { 0 };
	int        n;

	fast.t = bc_loop_timer_new(l, 5, on_tick, &fast);
	slow.t = bc_loop_timer_new(l, 3600 * 1000, on_tick, &slow);
	cr_assert_not_null(fast.t);
	cr_assert_not_null(slow.t);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(fast.n >= 2);
	pthread_mutex_unlock(&mu);
	bc_loop_stop(l, NULL, NULL);
	n = ticks(&fast);
	cr_assert_null(bc_loop_timer_new(l, 5, on_tick, &fast));
	usleep(30000);           /* a stopped loop cannot tick: nothing to wait for */
	cr_assert_eq(ticks(&fast), n);
	cr_assert_eq(ticks(&slow), 0);
	bc_loop_timer_free(fast.t);
	bc_loop_timer_free(slow.t);
	bc_loop_free(l);
}

/* ---- work pool -------------------------------------------------------- */

typedef struct job_s {
	int        id;
	pthread_t  work_tid, after_tid;
	bool       worked;           /* set by work, read by after */
	int        afters;
	bool       gated;            /* work waits for *gate */
	bool      *gate;             /* mu */
	int        refused;          /* calls refused inside after */
} job_t;

static atomic_int works_run;
static int        afters_run;    /* mu */
static int        refused_in_after;
static bool       seen[4096];
/* What went wrong off the test thread, where an assertion cannot stop
 * the test: checked by the test thread. */
static atomic_int bad;
static atomic_int calls_run;

static void
do_work(void *arg)
{
	job_t *j = arg;

	if (j->gated) {
		pthread_mutex_lock(&mu);
		WAIT_UNTIL(*j->gate);
		pthread_mutex_unlock(&mu);
	}
	j->work_tid = pthread_self();
	j->worked = true;
	atomic_fetch_add(&works_run, 1);
}

static void
nop_call(bc_loop_t *l, void *arg)
{
	(void)l;
	(void)arg;
	atomic_fetch_add(&bad, 1);      /* a refused call ran */
}

static void
nop_work(void *arg)
{
	(void)arg;
	atomic_fetch_add(&bad, 1);      /* a refused work ran */
}

/* Records and keeps the job (the test checks it). */
static void
after_keep(bc_loop_t *l, void *arg)
{
	job_t *j = arg;

	(void)l;
	j->after_tid = pthread_self();
	j->afters++;
	if (!j->worked)
		atomic_fetch_add(&bad, 1);
	pthread_mutex_lock(&mu);
	afters_run++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void
count_call(bc_loop_t *l, void *arg)
{
	(void)l;
	(void)arg;
	atomic_fetch_add(&calls_run, 1);
}

/* Checks (into bad), records and frees the job. */
static void
after_free(bc_loop_t *l, void *arg)
{
	job_t *j = arg;

	/* gated jobs complete during the stop: calls must be refused */
	if (j->gated && bc_loop_call(l, nop_call, NULL) == BC_ECANCELED &&
	    bc_loop_work(l, nop_work, NULL, NULL) == BC_ECANCELED)
		j->refused = 1;
	/* others, while the loop runs: accepted */
	if (!j->gated && bc_loop_call(l, count_call, NULL) != 0)
		atomic_fetch_add(&bad, 1);
	if (!j->worked ||                                /* after first */
	    !pthread_equal(pthread_self(), loop_tid) ||  /* after off it */
	    pthread_equal(j->work_tid, loop_tid))        /* work on it */
		atomic_fetch_add(&bad, 1);
	pthread_mutex_lock(&mu);
	if (seen[j->id])
		atomic_fetch_add(&bad, 1);
	seen[j->id] = true;
	refused_in_after += j->refused;
	afters_run++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	free(j);
}

LTest(loop, work_off_the_loop_after_on_it)
{
	bc_loop_t *l = loop_up();
	job_t      j = { 0 };

	cr_assert_eq(bc_loop_work(l, do_work, after_keep, &j), 0);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(afters_run == 1);
	pthread_mutex_unlock(&mu);
	cr_assert(j.worked);
	cr_assert_eq(j.afters, 1);
	cr_assert_not(pthread_equal(j.work_tid, loop_tid),
	    "work ran on the loop thread");
	cr_assert_not(pthread_equal(j.work_tid, pthread_self()));
	cr_assert(pthread_equal(j.after_tid, loop_tid),
	    "after ran off the loop thread");
	/* after may be NULL */
	job_t j2 = { 0 };
	cr_assert_eq(bc_loop_work(l, do_work, NULL, &j2), 0);
	cr_assert_eq(bc_loop_work(l, NULL, after_keep, &j2), BC_EINVAL);
	loop_down(l);             /* waits for j2's work */
	cr_assert(j2.worked);
	cr_assert_eq(atomic_load(&works_run), 2);
	cr_assert_eq(atomic_load(&bad), 0);
}

#define SUBMITTERS 4
#define PER_THREAD 300

typedef struct submitter_s {
	bc_loop_t *l;
	int        first;
} submitter_t;

static void *
submit(void *arg)
{
	submitter_t *s = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		job_t *j = calloc(1, sizeof(*j));

		if (j == NULL)
			abort();
		j->id = s->first + i;
		if (bc_loop_work(s->l, do_work, after_free, j) != 0) {
			atomic_fetch_add(&bad, 1);
			free(j);
		}
	}
	return NULL;
}

/* A work submitted from the loop thread (inside a call) as well. */
static void
submit_call(bc_loop_t *l, void *arg)
{
	if (bc_loop_work(l, do_work, after_free, arg) != 0) {
		atomic_fetch_add(&bad, 1);
		free(arg);
	}
}

LTest(loop, work_from_many_threads_all_completes_once)
{
	bc_loop_t  *l = loop_up();
	submitter_t s[SUBMITTERS];
	pthread_t   th[SUBMITTERS];
	job_t      *last = calloc(1, sizeof(*last));
	int         total = SUBMITTERS * PER_THREAD + 1;

	cr_assert_not_null(last);
	last->id = total - 1;
	for (int i = 0; i < SUBMITTERS; i++) {
		s[i].l = l;
		s[i].first = i * PER_THREAD;
		cr_assert_eq(pthread_create(&th[i], NULL, submit, &s[i]), 0);
	}
	cr_assert_eq(bc_loop_call(l, submit_call, last), 0);
	for (int i = 0; i < SUBMITTERS; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(afters_run == total);
	for (int i = 0; i < total; i++)
		cr_assert(seen[i], "job %d never completed", i);
	cr_assert_eq(refused_in_after, 0, "calls refused while running");
	pthread_mutex_unlock(&mu);
	cr_assert_eq(atomic_load(&works_run), total);
	loop_down(l);
	cr_assert_eq(afters_run, total, "an after() ran twice");
	cr_assert_eq(atomic_load(&calls_run), total);
	cr_assert_eq(atomic_load(&bad), 0);
}

#define PENDING 32        /* well over the pool's 4 threads */

static void
open_gate(bc_loop_t *l, void *arg)
{
	(void)l;
	pthread_mutex_lock(&mu);
	*(bool *)arg = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Every work waits until the stop has begun (stop_fn opens the gate), so
 * most have not started when it does: all still run, every after()
 * runs (on the loop thread, with calls refused) and frees its job
 * before bc_loop_stop returns. */
LTest(loop, stop_with_work_pending_runs_all_and_leaks_nothing)
{
	bc_loop_t *l = loop_up();
	bool       gate = false;

	for (int i = 0; i < PENDING; i++) {
		job_t *j = calloc(1, sizeof(*j));

		cr_assert_not_null(j);
		j->id = i;
		j->gated = true;
		j->gate = &gate;
		cr_assert_eq(bc_loop_work(l, do_work, after_free, j), 0);
	}
	bc_loop_stop(l, open_gate, &gate);
	cr_assert_eq(atomic_load(&works_run), PENDING);
	pthread_mutex_lock(&mu);
	cr_assert_eq(afters_run, PENDING);
	cr_assert_eq(refused_in_after, PENDING,
	    "after() at stop: calls refused in %d of %d", refused_in_after,
	    PENDING);
	pthread_mutex_unlock(&mu);
	cr_assert_eq(bc_loop_work(l, nop_work, NULL, NULL), BC_ECANCELED);
	cr_assert_eq(bc_loop_call(l, nop_call, NULL), BC_ECANCELED);
	bc_loop_free(l);
	cr_assert_eq(atomic_load(&bad), 0);
}

/* A loop that never ran: bc_loop_free runs what was accepted on the
 * freeing thread, and leaks nothing. */
LTest(loop, free_without_start_runs_accepted_work)
{
	bc_loop_t *l = bc_loop_new(no_done);
	tick_t     k = { 0 };
	job_t      j[3];

	cr_assert_not_null(l);
	memset(j, 0, sizeof(j));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(bc_loop_work(l, do_work, after_keep, &j[i]), 0);
	k.t = bc_loop_timer_new(l, 1, on_tick, &k);
	cr_assert_not_null(k.t);
	bc_loop_timer_free(k.t);
	bc_loop_free(l);
	cr_assert_eq(atomic_load(&works_run), 3);
	cr_assert_eq(afters_run, 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(j[i].afters, 1);
		cr_assert(pthread_equal(j[i].after_tid, pthread_self()));
		cr_assert_not(pthread_equal(j[i].work_tid, pthread_self()));
	}
	cr_assert_eq(k.n, 0);
	cr_assert_eq(atomic_load(&bad), 0);
}
