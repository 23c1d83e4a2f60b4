/*
 * test_http_conns.c — client connection deadlines (http_conns.h) with
 * real sockets: each connection is one end of a socketpair, and "closed"
 * means the other end reads EOF. The sweeper thread is started and
 * stopped at once; the tests call bc_conns_sweep() with synthetic
 * CLOCK_MONOTONIC times placed around the real times the state calls
 * stored (read just before and after them), so nothing sleeps and no
 * outcome depends on scheduling.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../bc_test.h"

#include "http/http_conns.h"

#define MS 1000000ull
#define S  1000000000ull

typedef struct {
	bc_conn_t *c;
	int        fd;      /* the table's end */
	int        peer;    /* the client's end */
} tconn_t;

static uint64_t
mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

/* Waits (spinning, a few ns) until the clock has passed t, so that what
 * is stored next is strictly later than t. */
static void
after(uint64_t t)
{
	while (mono() <= t)
		;
}

static void
table_init(bc_conns_t *t, uint64_t idle, uint64_t head, uint64_t body,
    unsigned max, unsigned reserve)
{
	bc_conns_limits_t l = { idle, head, body, max, reserve };

	memset(t, 0, sizeof(*t));
	cr_assert_eq(bc_conns_start(t, &l), 0);
	bc_conns_stop(t);         /* the tests sweep themselves */
}

static void
table_fini(bc_conns_t *t, tconn_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bc_conns_close(t, v[i].c);
		close(v[i].fd);
		close(v[i].peer);
	}
	cr_expect_eq(t->n, 0);
	cr_expect_null(t->head);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
}

static void
conn_open(bc_conns_t *t, tconn_t *tc)
{
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tc->fd = sv[0];
	tc->peer = sv[1];
	tc->c = bc_conns_open(t, tc->fd);
	cr_assert_not_null(tc->c);
}

/* true when the client's end reads EOF (the table shut the socket). */
static bool
closed(const tconn_t *tc)
{
	char b;
	ssize_t n = recv(tc->peer, &b, 1, MSG_DONTWAIT);

	if (n == 0)
		return true;
	cr_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
	    "unexpected recv: %zd (%s)", n, strerror(errno));
	return false;
}

/* ---- deadlines ---------------------------------------------------------- */

LTest(http_conns, idle_deadline)
{
	bc_conns_t t;
	tconn_t c[1];
	uint64_t t0, t1;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	t0 = mono();
	conn_open(&t, &c[0]);
	t1 = mono();
	cr_expect_eq(t.n, 1);
	/* at its deadline (not past it): open */
	cr_expect_eq(bc_conns_sweep(&t, t0), 0);
	cr_expect_eq(bc_conns_sweep(&t, t0 + 5 * S), 0);
	cr_expect(!closed(&c[0]));
	/* a clock behind the state's start is age 0 */
	cr_expect_eq(bc_conns_sweep(&t, 0), 0);
	/* past it: shut down, counted once */
	cr_expect_eq(bc_conns_sweep(&t, t1 + 5 * S + 1), 1);
	cr_expect(closed(&c[0]));
	cr_expect_eq(t.closed_idle, 1);
	cr_expect_eq(bc_conns_sweep(&t, t1 + 60 * S), 0);
	cr_expect_eq(t.closed_idle, 1);
	cr_expect_eq(t.closed_head + t.closed_body + t.shed, 0);
	/* it stays listed until the server closes it */
	cr_expect_eq(t.n, 1);
	table_fini(&t, c, 1);
}

LTest(http_conns, head_deadline)
{
	bc_conns_t t;
	tconn_t c[2];
	uint64_t t0, t1;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	conn_open(&t, &c[0]);      /* stays idle */
	conn_open(&t, &c[1]);
	t0 = mono();
	bc_conn_request_line(&t, c[1].c);
	t1 = mono();
	cr_expect_eq(bc_conns_sweep(&t, t0 + 2 * S), 0);
	cr_expect(!closed(&c[1]));
	/* the head's deadline, shorter than idle, applies */
	cr_expect_eq(bc_conns_sweep(&t, t1 + 2 * S + 1), 1);
	cr_expect(closed(&c[1]));
	cr_expect(!closed(&c[0]));
	cr_expect_eq(t.closed_head, 1);
	cr_expect_eq(t.closed_idle, 0);
	table_fini(&t, c, 2);
}

LTest(http_conns, head_done_in_time)
{
	bc_conns_t t;
	tconn_t c[1];
	uint64_t t1;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	conn_open(&t, &c[0]);
	bc_conn_request_line(&t, c[0].c);
	bc_conn_request_head(&t, c[0].c, false);   /* being answered */
	t1 = mono();
	/* no deadline while answered, however long */
	cr_expect_eq(bc_conns_sweep(&t, t1 + 3600 * S), 0);
	cr_expect(!closed(&c[0]));
	/* idle again: the idle deadline counts from now */
	after(t1);
	bc_conn_request_done(&t, c[0].c);
	cr_expect_eq(bc_conns_sweep(&t, t1 + 5 * S), 0);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 5 * S + 1), 1);
	cr_expect(closed(&c[0]));
	cr_expect_eq(t.closed_idle, 1);
	table_fini(&t, c, 1);
}

LTest(http_conns, body_deadline)
{
	bc_conns_t t;
	tconn_t c[3];
	uint64_t t0, t1, slow_t1, fast_t0;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	for (int i = 0; i < 3; i++)
		conn_open(&t, &c[i]);
	t0 = mono();
	for (int i = 0; i < 3; i++) {
		bc_conn_request_line(&t, c[i].c);
		bc_conn_request_head(&t, c[i].c, true);
	}
	t1 = mono();
	/* c0: one byte short of a period's minimum, in pieces */
	bc_conn_body_bytes(&t, c[0].c, 1000);
	bc_conn_body_bytes(&t, c[0].c, BC_CONNS_BODY_MIN - 1001);
	slow_t1 = mono();
	/* c1: the minimum, in pieces: its period starts again now */
	after(slow_t1);
	fast_t0 = mono();
	bc_conn_body_bytes(&t, c[1].c, 20000);
	bc_conn_body_bytes(&t, c[1].c, 20000);
	bc_conn_body_bytes(&t, c[1].c, BC_CONNS_BODY_MIN - 40000);
	/* c2: the body ends: answered, no deadline */
	bc_conn_body_bytes(&t, c[2].c, 10);
	bc_conn_body_end(&t, c[2].c);

	cr_expect_eq(bc_conns_sweep(&t, t0 + 3 * S), 0);
	/* past the first period: c0 goes, c1's new period still runs */
	cr_expect_eq(bc_conns_sweep(&t, fast_t0 + 3 * S), 1);
	cr_expect(closed(&c[0]));
	cr_expect(!closed(&c[1]));
	cr_expect(!closed(&c[2]));
	cr_expect_eq(t.closed_body, 1);
	/* c1 past its second period */
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3 * S + 1), 1);
	cr_expect(closed(&c[1]));
	cr_expect_eq(t.closed_body, 2);
	/* the ended body is never closed here */
	cr_expect_eq(bc_conns_sweep(&t, t1 + 3600 * S), 0);
	cr_expect(!closed(&c[2]));
	cr_expect_eq(t.closed_idle + t.closed_head + t.shed, 0);
	table_fini(&t, c, 3);
}

LTest(http_conns, body_end_only_from_body)
{
	bc_conns_t t;
	tconn_t c[1];

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	conn_open(&t, &c[0]);
	/* body_end on an idle connection leaves it idle (its deadline) */
	bc_conn_body_end(&t, c[0].c);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 5 * S + 1), 1);
	cr_expect_eq(t.closed_idle, 1);
	table_fini(&t, c, 1);
}

LTest(http_conns, held_never_closed)
{
	bc_conns_t t;
	tconn_t c[4];
	uint64_t th0;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	for (int i = 0; i < 4; i++)
		conn_open(&t, &c[i]);
	bc_conn_request_line(&t, c[1].c);
	bc_conn_request_line(&t, c[2].c);
	bc_conn_request_head(&t, c[2].c, true);
	bc_conn_request_line(&t, c[3].c);
	bc_conn_request_head(&t, c[3].c, true);
	for (int i = 0; i < 4; i++)
		bc_conn_held(&t, c[i].c, true);
	/* idle, head and body connections the gateway holds: kept */
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3600 * S), 0);
	for (int i = 0; i < 4; i++)
		cr_expect(!closed(&c[i]), "conn %d", i);
	/* let go: a body's period starts again at that moment */
	th0 = mono();
	bc_conn_held(&t, c[2].c, false);
	cr_expect_eq(bc_conns_sweep(&t, th0 + 3 * S), 0);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3 * S + 1), 1);
	cr_expect(closed(&c[2]));
	cr_expect(!closed(&c[3]));
	/* request_done lets go too */
	bc_conn_request_done(&t, c[3].c);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 5 * S + 1), 1);
	cr_expect(closed(&c[3]));
	cr_expect(!closed(&c[0]));
	cr_expect(!closed(&c[1]));
	cr_expect_eq(t.closed_body, 1);
	cr_expect_eq(t.closed_idle, 1);
	table_fini(&t, c, 4);
}

LTest(http_conns, zero_disables)
{
	bc_conns_t t;
	tconn_t c[3];

	table_init(&t, 0, 0, 0, 100, 0);
	for (int i = 0; i < 3; i++)
		conn_open(&t, &c[i]);
	bc_conn_request_line(&t, c[1].c);
	bc_conn_request_line(&t, c[2].c);
	bc_conn_request_head(&t, c[2].c, true);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3600 * S), 0);
	for (int i = 0; i < 3; i++)
		cr_expect(!closed(&c[i]));
	table_fini(&t, c, 3);
}

/* ---- headroom ----------------------------------------------------------- */

/* Under pressure, idle connections go first, oldest first, and only
 * once idle for over a second: the newest idle one is most likely a
 * client that just connected (a health probe) and has not sent its
 * request line yet. */
LTest(http_conns, shed_idle_oldest_first)
{
	bc_conns_t t;
	tconn_t c[4];
	uint64_t now;

	/* deadlines off: only headroom closes */
	table_init(&t, 0, 0, 0, 4, 1);
	for (int i = 0; i < 4; i++)
		conn_open(&t, &c[i]);
	now = mono();
	/* just accepted: never shed, whatever the pressure */
	cr_expect_eq(bc_conns_sweep(&t, now), 0);
	cr_expect_eq(bc_conns_sweep(&t, now + S / 2), 0);
	for (int i = 0; i < 4; i++)
		cr_expect(!closed(&c[i]), "conn %d kept in its grace", i);
	/* 4 open, 1 kept free of 4: one must go */
	cr_expect_eq(bc_conns_sweep(&t, now + 2 * S), 1);
	cr_expect_eq(t.shed, 1);
	cr_expect(closed(&c[0]), "the oldest idle connection is shed");
	for (int i = 1; i < 4; i++)
		cr_expect(!closed(&c[i]), "conn %d kept", i);
	table_fini(&t, c, 4);
}

LTest(http_conns, shed_counts)
{
	bc_conns_t t;
	tconn_t c[6];
	unsigned n;

	/* 6 idle, max 5, reserve 2: three go, three stay */
	table_init(&t, 0, 0, 0, 5, 2);
	for (int i = 0; i < 6; i++)
		conn_open(&t, &c[i]);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 2 * S), 3);
	n = 0;
	for (int i = 0; i < 6; i++)
		n += closed(&c[i]);
	cr_expect_eq(n, 3);
	cr_expect_eq(t.shed, 3);
	table_fini(&t, c, 6);

	/* no pressure: n + reserve <= max, nothing is shed */
	table_init(&t, 0, 0, 0, 5, 2);
	for (int i = 0; i < 3; i++)
		conn_open(&t, &c[i]);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3600 * S), 0);
	for (int i = 0; i < 3; i++)
		cr_expect(!closed(&c[i]));
	cr_expect_eq(t.shed, 0);
	table_fini(&t, c, 3);
}

LTest(http_conns, shed_idle_before_heads)
{
	bc_conns_t t;
	tconn_t c[3];
	uint64_t now;

	table_init(&t, 0, 0, 0, 3, 1);
	for (int i = 0; i < 3; i++)
		conn_open(&t, &c[i]);
	bc_conn_request_line(&t, c[0].c);       /* an old head */
	bc_conn_request_line(&t, c[1].c);
	bc_conn_request_head(&t, c[1].c, false);   /* answered */
	/* c2 idle */
	now = mono() + 10 * S;
	cr_expect_eq(bc_conns_sweep(&t, now), 1);
	cr_expect(closed(&c[2]), "the idle connection goes first");
	cr_expect(!closed(&c[0]), "the head stays: headroom is back");
	cr_expect(!closed(&c[1]));
	table_fini(&t, c, 3);
}

LTest(http_conns, shed_old_heads_only)
{
	bc_conns_t t;
	tconn_t c[4];
	uint64_t old_t1, young_t0;

	table_init(&t, 0, 0, 0, 3, 2);
	for (int i = 0; i < 4; i++)
		conn_open(&t, &c[i]);
	bc_conn_request_line(&t, c[0].c);          /* head, older */
	old_t1 = mono();
	after(old_t1);
	young_t0 = mono();
	bc_conn_request_line(&t, c[1].c);          /* head, younger */
	bc_conn_request_line(&t, c[2].c);          /* answered */
	bc_conn_request_head(&t, c[2].c, false);
	bc_conn_request_line(&t, c[3].c);          /* body, held */
	bc_conn_request_head(&t, c[3].c, true);
	bc_conn_held(&t, c[3].c, true);
	/* 4 open, 2 kept free of 3: three should go, but no idle one; of
	 * the heads, only one older than a second */
	cr_expect_eq(bc_conns_sweep(&t, young_t0 + S), 1);
	cr_expect(closed(&c[0]), "the head older than 1 s is shed");
	cr_expect(!closed(&c[1]), "a head of exactly 1 s is not");
	cr_expect(!closed(&c[2]), "answered connections are never shed");
	cr_expect(!closed(&c[3]), "held connections are never shed");
	/* later, the younger head too; the others never */
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3600 * S), 1);
	cr_expect(closed(&c[1]));
	cr_expect(!closed(&c[2]));
	cr_expect(!closed(&c[3]));
	cr_expect_eq(t.shed, 2);
	cr_expect_eq(t.closed_head, 0);
	table_fini(&t, c, 4);
}

/* Connections shut down by an earlier sweep, which the server has not
 * closed yet, are gone for headroom: a second sweep does not shed more
 * to make room they already made. */
LTest(http_conns, shed_counts_closing_as_gone)
{
	bc_conns_t t;
	tconn_t c[4];
	unsigned n = 0;

	table_init(&t, 0, 0, 0, 4, 1);
	for (int i = 0; i < 4; i++)
		conn_open(&t, &c[i]);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 2 * S), 1);
	/* the server has not called bc_conns_close yet */
	cr_expect_eq(bc_conns_sweep(&t, mono() + 2 * S), 0,
	    "a second sweep sheds again though the first made room");
	for (int i = 0; i < 4; i++)
		n += closed(&c[i]);
	cr_expect_eq(n, 1);
	table_fini(&t, c, 4);
}

/* ---- the list ----------------------------------------------------------- */

LTest(http_conns, close_unlists)
{
	bc_conns_t t;
	tconn_t c[3];
	uint64_t t1;

	table_init(&t, 5 * S, 2 * S, 3 * S, 100, 0);
	for (int i = 0; i < 3; i++)
		conn_open(&t, &c[i]);
	t1 = mono();
	cr_expect_eq(t.n, 3);
	cr_expect_eq(bc_conns_count(&t), 3);
	/* the middle one leaves: the others are still swept */
	bc_conns_close(&t, c[1].c);
	c[1].c = NULL;
	cr_expect_eq(t.n, 2);
	cr_expect_eq(bc_conns_count(&t), 2);
	cr_expect_eq(bc_conns_sweep(&t, t1 + 5 * S + 1), 2);
	cr_expect(closed(&c[0]));
	cr_expect(!closed(&c[1]), "an unlisted connection is not touched");
	cr_expect(closed(&c[2]));
	/* the head and the tail leave */
	bc_conns_close(&t, c[2].c);
	c[2].c = NULL;
	bc_conns_close(&t, c[0].c);
	c[0].c = NULL;
	cr_expect_eq(t.n, 0);
	cr_expect_eq(bc_conns_count(&t), 0);
	cr_expect_null(t.head);
	/* NULL is a no-op everywhere */
	bc_conns_close(&t, NULL);
	bc_conn_request_line(&t, NULL);
	bc_conn_request_head(&t, NULL, true);
	bc_conn_body_bytes(&t, NULL, 1);
	bc_conn_body_end(&t, NULL);
	bc_conn_held(&t, NULL, true);
	bc_conn_request_done(&t, NULL);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 3600 * S), 0);
	table_fini(&t, c, 3);
}

/* The sweeper thread itself: started with a short deadline, it closes
 * an idle connection within a few of its periods. */
LTest(http_conns, sweeper_thread)
{
	bc_conns_limits_t l = { 50 * MS, 0, 0, 100, 0 };
	bc_conns_t t;
	tconn_t c[1];
	int i;

	memset(&t, 0, sizeof(t));
	cr_assert_eq(bc_conns_start(&t, &l), 0);
	conn_open(&t, &c[0]);
	for (i = 0; i < 400 && !closed(&c[0]); i++)
		usleep(5000);
	cr_expect_lt(i, 400, "the sweeper did not close the idle conn in 2 s");
	cr_expect_eq(t.closed_idle, 1);
	bc_conns_stop(&t);
	table_fini(&t, c, 1);
}

/* ---- stalls: bytes the server's event loop missed ----------------------- */

static void
count_wake(void *arg)
{
	(*(unsigned *)arg)++;
}

LTest(http_conns, stall_wakes_the_server)
{
	bc_conns_t t;
	tconn_t c[4];
	uint64_t t1;
	unsigned wakes = 0;

	table_init(&t, 60 * S, 60 * S, 60 * S, 100, 0);
	bc_conns_set_wake(&t, count_wake, &wakes);
	for (int i = 0; i < 4; i++)
		conn_open(&t, &c[i]);
	bc_conn_request_line(&t, c[1].c);        /* head coming */
	bc_conn_request_head(&t, c[2].c, false);  /* being answered */
	bc_conn_request_line(&t, c[3].c);
	t1 = mono();
	/* c[0] idle and c[1] in its head hold a request nobody read; c[2]'s
	 * bytes are the next request, for after its answer; c[3] none */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(send(c[i].peer, "GET / HTTP/1.1\r\n", 16, 0), 16);
	/* the first sweep that sees them waits for a second one */
	cr_expect_eq(bc_conns_sweep(&t, t1 + 300 * MS), 0);
	cr_expect_eq(wakes, 0);
	cr_expect_eq(bc_conns_sweep(&t, t1 + 550 * MS), 0);
	cr_expect_eq(wakes, 1);            /* once a sweep, not per connection */
	cr_expect_eq(t.woken, 1);
	/* read: no stall */
	for (int i = 0; i < 2; i++) {
		char b[16];

		cr_assert_eq(recv(c[i].fd, b, sizeof(b), 0), 16);
	}
	cr_expect_eq(bc_conns_sweep(&t, t1 + 800 * MS), 0);
	cr_expect_eq(wakes, 1);
	/* bytes seen again after a state change start the count again */
	cr_assert_eq(send(c[3].peer, "Host: x\r\n", 9, 0), 9);
	cr_expect_eq(bc_conns_sweep(&t, t1 + 1050 * MS), 0);
	bc_conn_request_done(&t, c[3].c);          /* since moves */
	cr_expect_eq(bc_conns_sweep(&t, mono() + 300 * MS), 0);
	cr_expect_eq(wakes, 1);
	/* no callback: counted only; nothing ever closed */
	bc_conns_set_wake(&t, NULL, NULL);
	cr_expect_eq(bc_conns_sweep(&t, mono() + 600 * MS), 0);
	cr_expect_eq(wakes, 1);
	cr_expect_eq(t.woken, 2);
	for (int i = 0; i < 4; i++)
		cr_expect(!closed(&c[i]));
	table_fini(&t, c, 4);
}
