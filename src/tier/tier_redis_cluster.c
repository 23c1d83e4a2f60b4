/*
 * tier_redis_cluster.c — slot routing and redirections over
 * tier_redis_conn.c (contract in tier_redis_cluster.h).
 *
 * State, all on the loop thread: the nodes (a list; a node is never
 * removed before free, so requests and the slot table may point at
 * nodes), the slot table (slot → master, NULL: unknown, go to
 * cl->fallback), one map request at a time (cl->refreshing), and the
 * requests waiting out a TRYAGAIN (cl->retries, ordered by due time, one
 * timer), and the requests held back to keep a slot's order (cl->held).
 * A request holds its command, formatted once (malloc'd, or parts the
 * caller lends) and lent to each
 * connection it is sent to until that connection calls back; so a
 * request is always either with exactly one connection, on the retry
 * list, or on the held list.
 *
 * Order per slot: a keyed request is "in flight" on its slot from its
 * first send to its answer, and "detoured" once an answer sent it
 * elsewhere or later (MOVED, ASK, TRYAGAIN). A new request goes out at
 * once only when nothing is held for its slot and the slot's requests in
 * flight, if any, all went straight to the node it would go to; else it
 * is held until the slot has nothing in flight. Without this, a SET told
 * MOVED after the map changed would land after a DEL sent later straight
 * to the new master, and the DEL would be lost.
 *
 * The cluster's memory goes when both its timers are closed (free).
 */
#include <stdlib.h>
#include <string.h>

#include <sys/uio.h>
#include <uv.h>

#include "tier/tier_redis_cluster.h"
#include "util/util_error.h"
#include "util/util_list.h"
#include "util/util_log.h"
#include "util/util_num.h"

typedef struct node_s {
	bc_list_t                link;      /* cl->nodes */
	bc_tier_redis_cluster_t *cl;
	char                    *host;
	int                      port;
	bc_tier_redis_conn_t    *conn;      /* NULL until needed */
	uint32_t                 slots;     /* in the current map */
	uint64_t                 errors;
} node_t;

typedef struct req_s {
	bc_list_t                link;      /* cl->retries while waiting */
	bc_tier_redis_cluster_t *cl;
	bc_tier_redis_cluster_cb cb;
	void                    *arg;
	/* The command in the protocol's bytes: parts, borrowed or own. */
	struct iovec             iov[BC_TIER_REDIS_CONN_IOV_MAX];
	int                      niov;
	char                    *own;
	bool                     keyed;
	uint16_t                 slot;
	uint32_t                 redirects, retries;
	bool                     in_flight, detoured;   /* on its slot */
	node_t                  *node;      /* where it was sent last */
	uint64_t                 due_ms;    /* loop time of its retry */
} req_t;

/* A slot's requests in flight and held (the order rule above). */
typedef struct slot_order_s {
	node_t  *node;       /* where its straight requests went */
	uint32_t in_flight, detoured, held;
} slot_order_t;

#define HELD_MAX 65536   /* held requests, all slots; then BC_EAGAIN */

struct bc_tier_redis_cluster_s {
	bc_loop_t                     *loop;
	bc_tier_redis_conn_opts_t      conn_opts;   /* strings ours */
	uint32_t                       max_redirects, max_retries;
	uint64_t                       retry_delay_ms, refresh_min_ms;
	bc_tier_redis_cluster_state_cb on_state;
	void                          *state_arg;

	bc_list_t                      nodes;
	node_t                       **seeds;
	size_t                         nseeds, next_seed;
	node_t                        *fallback;   /* unmapped slots */
	node_t                        *slots[BC_TIER_REDIS_CLUSTER_SLOTS];
	slot_order_t                   order[BC_TIER_REDIS_CLUSTER_SLOTS];
	bc_list_t                      held;
	uint32_t                       nheld;

	bool                           refreshing, refresh_again;
	bool                           refresh_slots; /* SLOTS, not SHARDS */
	node_t                        *refresh_node;
	uint64_t                       last_refresh_ms;
	bool                           refreshed_once;
	uv_timer_t                     refresh_timer, retry_timer;
	bc_list_t                      retries;
	int                            handles;
	bool                           closing;

	_Atomic int                    mode;
	_Atomic bool                   up;
	bc_tier_redis_cluster_stats_t  stats_own, *stats;   /* o->stats */
};

#define COUNT(cl, f, n) \
	atomic_fetch_add_explicit(&(cl)->stats->f, (n), memory_order_relaxed)

static void refresh(bc_tier_redis_cluster_t *cl);
static void refresh_soon(bc_tier_redis_cluster_t *cl);

/* ---- slots --------------------------------------------------------------- */

uint16_t
bc_tier_redis_cluster_crc16(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint16_t             crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
			    : (uint16_t)(crc << 1);
	}
	return crc;
}

uint16_t
bc_tier_redis_cluster_slot(const void *key, size_t len)
{
	const char *k = key;
	size_t      s, e;

	for (s = 0; s < len && k[s] != '{'; s++)
		;
	if (s < len) {
		for (e = s + 1; e < len && k[e] != '}'; e++)
			;
		if (e < len && e > s + 1)
			return bc_tier_redis_cluster_crc16(k + s + 1, e - s - 1) &
			    (BC_TIER_REDIS_CLUSTER_SLOTS - 1);
	}
	return bc_tier_redis_cluster_crc16(k, len) &
	    (BC_TIER_REDIS_CLUSTER_SLOTS - 1);
}

/* ---- nodes and health ------------------------------------------------------ */

static bool
conn_down(const node_t *n)
{
	return n->conn != NULL &&
	    bc_tier_redis_conn_state(n->conn) == BC_TIER_REDIS_CONN_DOWN;
}

static void
health_update(bc_tier_redis_cluster_t *cl)
{
	bool       up;
	bc_list_t *it;
	node_t    *n;

	switch (atomic_load(&cl->mode)) {
	case BC_TIER_REDIS_CLUSTER_STANDALONE:
		up = !conn_down(cl->fallback);
		break;
	case BC_TIER_REDIS_CLUSTER_CLUSTER:
		up = true;
		BC_LIST_FOREACH(it, &cl->nodes) {
			n = BC_CONTAINER_OF(it, node_t, link);
			if (n->slots > 0 && conn_down(n))
				up = false;
		}
		break;
	default:
		up = false;
		break;
	}
	if (up == atomic_load(&cl->up))
		return;
	atomic_store(&cl->up, up);
	if (cl->on_state != NULL)
		cl->on_state(cl, up, cl->state_arg);
}

static void
node_state(bc_tier_redis_conn_t *c, bc_tier_redis_conn_state_t s, void *arg)
{
	node_t                  *n = arg;
	bc_tier_redis_cluster_t *cl = n->cl;

	(void)c;
	if (cl->closing)
		return;
	if (s == BC_TIER_REDIS_CONN_DOWN && n->slots > 0)
		refresh_soon(cl);
	health_update(cl);
}

/* The node host:port, made when new; NULL when out of memory. */
static node_t *
node_get(bc_tier_redis_cluster_t *cl, const char *host, size_t hostlen,
    int port)
{
	bc_list_t *it;
	node_t    *n;

	BC_LIST_FOREACH(it, &cl->nodes) {
		n = BC_CONTAINER_OF(it, node_t, link);
		if (n->port == port && strlen(n->host) == hostlen &&
		    memcmp(n->host, host, hostlen) == 0)
			return n;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return NULL;
	n->host = strndup(host, hostlen);
	if (n->host == NULL) {
		free(n);
		return NULL;
	}
	n->cl = cl;
	n->port = port;
	bc_list_insert_tail(&cl->nodes, &n->link);
	return n;
}

/* n's connection, made when needed; NULL when it cannot be made. */
static bc_tier_redis_conn_t *
node_conn(bc_tier_redis_cluster_t *cl, node_t *n)
{
	bc_tier_redis_conn_opts_t o = cl->conn_opts;

	if (n->conn != NULL)
		return n->conn;
	o.host = n->host;
	o.port = n->port;
	o.on_state = node_state;
	o.state_arg = n;
	if (bc_tier_redis_conn_new(cl->loop, &o, &n->conn) < 0)
		n->conn = NULL;
	return n->conn;
}

/* Splits "host:port" or "[v6]:port" (len bytes). Returns the port, or
 * -1; the host part (may be empty) goes to host and hostlen. */
static int
split_addr(const char *s, size_t len, const char **host, size_t *hostlen)
{
	size_t   i;
	uint16_t port;

	for (i = len; i > 0 && s[i - 1] != ':'; i--)
		;
	if (i == 0 || bc_parse_port(s + i, len - i, &port) < 0)
		return -1;
	*host = s;
	*hostlen = i - 1;
	if (*hostlen >= 2 && s[0] == '[' && s[*hostlen - 1] == ']') {
		*host = s + 1;
		*hostlen -= 2;
	}
	return (int)port;
}

/* ---- requests ---------------------------------------------------------------- */

static void release_held(bc_tier_redis_cluster_t *cl, uint16_t slot);

static void
finish(req_t *r, int status, const redisReply *reply)
{
	bc_tier_redis_cluster_t *cl = r->cl;
	slot_order_t            *o = &cl->order[r->slot];
	bool                     release = false;

	if (r->in_flight) {
		o->in_flight--;
		o->detoured -= r->detoured;
		release = o->in_flight == 0 && o->held > 0;
	}
	if (status < 0)
		COUNT(cl, failures, 1);
	else
		COUNT(cl, answers, 1);
	r->cb(r->arg, status, reply);
	if (release)
		release_held(cl, r->slot);
	free(r->own);
	free(r);
}

/* r was sent elsewhere or put off by an answer: the slot's later
 * requests wait for it. */
static void
detour(req_t *r)
{
	if (r->in_flight && !r->detoured) {
		r->detoured = true;
		r->cl->order[r->slot].detoured++;
	}
}

static void on_reply(void *arg, int status, const redisReply *reply);

/* Sends r to n (flags: BC_TIER_REDIS_CONN_ASKING). Returns submit's
 * code: 0, and on_reply(r) fires later, or a negative code. */
static int
send_to(bc_tier_redis_cluster_t *cl, req_t *r, node_t *n, unsigned flags)
{
	bc_tier_redis_conn_t *c = node_conn(cl, n);

	if (c == NULL)
		return BC_ENOMEM;
	r->node = n;
	return bc_tier_redis_conn_submit_iov(c, r->iov, r->niov, flags,
	    on_reply, r);
}

static node_t *
route(const bc_tier_redis_cluster_t *cl, const req_t *r)
{
	node_t *n = r->keyed ? cl->slots[r->slot] : NULL;

	return n != NULL ? n : cl->fallback;
}

static bool
is_error(const redisReply *reply, const char *prefix)
{
	size_t n = strlen(prefix);

	return reply->type == REDIS_REPLY_ERROR && reply->len >= n &&
	    memcmp(reply->str, prefix, n) == 0;
}

/* A MOVED or ASK answer: "MOVED <slot> <host>:<port>". Returns the node
 * it names (made when new), or NULL (unparsable, out of memory); *slot
 * its slot. An empty host means the node that answered. */
static node_t *
redirect_target(bc_tier_redis_cluster_t *cl, const req_t *r,
    const redisReply *reply, uint16_t *slot)
{
	const char *p = memchr(reply->str, ' ', reply->len), *addr, *host;
	const char *end = reply->str + reply->len;
	size_t      hostlen;
	uint64_t    s = 0;
	ssize_t     k;
	int         port;

	if (p == NULL)
		return NULL;
	p++;
	k = bc_parse_u64_prefix(p, (size_t)(end - p), 10,
	    BC_TIER_REDIS_CLUSTER_SLOTS - 1, &s);
	if (k <= 0)
		return NULL;
	p += k;
	if (p >= end || *p != ' ')
		return NULL;
	addr = p + 1;
	port = split_addr(addr, (size_t)(end - addr), &host, &hostlen);
	if (port < 0)
		return NULL;
	*slot = (uint16_t)s;
	if (hostlen == 0)
		return node_get(cl, r->node->host, strlen(r->node->host), port);
	return node_get(cl, host, hostlen, port);
}

static void on_retry_timer(uv_timer_t *t);

/* Arms the retry timer for the first waiting request, if any. */
static void
retry_arm(bc_tier_redis_cluster_t *cl)
{
	bc_list_t *first = bc_list_first(&cl->retries);
	uint64_t   now = uv_now(bc_loop_uv(cl->loop)), due;

	if (first == NULL)
		return;
	due = BC_CONTAINER_OF(first, req_t, link)->due_ms;
	uv_timer_start(&cl->retry_timer, on_retry_timer,
	    due > now ? due - now : 0, 0);
}

static void
on_retry_timer(uv_timer_t *t)
{
	bc_tier_redis_cluster_t *cl = t->data;
	uint64_t                 now = uv_now(bc_loop_uv(cl->loop));
	bc_list_t               *first;
	req_t                   *r;
	int                      rv;

	while ((first = bc_list_first(&cl->retries)) != NULL) {
		r = BC_CONTAINER_OF(first, req_t, link);
		if (r->due_ms > now)
			break;
		bc_list_remove(first);
		rv = send_to(cl, r, route(cl, r), 0);
		if (rv < 0)
			finish(r, rv, NULL);
	}
	retry_arm(cl);
}

/* Handles r's answer from r->node: follows MOVED and ASK, retries
 * TRYAGAIN and CLUSTERDOWN; anything else is r's answer. */
static void
on_reply(void *arg, int status, const redisReply *reply)
{
	req_t                   *r = arg;
	bc_tier_redis_cluster_t *cl = r->cl;
	bool                     moved, ask;
	node_t                  *n;
	uint16_t                 slot;
	int                      rv;

	if (status < 0) {
		if (status != BC_ECANCELED)
			r->node->errors++;
		finish(r, status, NULL);
		return;
	}
	moved = is_error(reply, "MOVED ");
	ask = is_error(reply, "ASK ");
	if (moved || ask) {
		n = redirect_target(cl, r, reply, &slot);
		if (n == NULL || ++r->redirects > cl->max_redirects) {
			COUNT(cl, redirect_limit, 1);
			finish(r, 0, reply);
			return;
		}
		detour(r);
		if (moved) {
			COUNT(cl, moved, 1);
			cl->slots[slot] = n;
			refresh_soon(cl);
		} else {
			COUNT(cl, ask, 1);
		}
		rv = send_to(cl, r, n, ask ? BC_TIER_REDIS_CONN_ASKING : 0);
		if (rv < 0)
			finish(r, rv, NULL);
		return;
	}
	if (is_error(reply, "TRYAGAIN") || is_error(reply, "CLUSTERDOWN")) {
		if (++r->retries > cl->max_retries) {
			COUNT(cl, redirect_limit, 1);
			finish(r, 0, reply);
			return;
		}
		COUNT(cl, tryagain, 1);
		detour(r);
		r->due_ms = uv_now(bc_loop_uv(cl->loop)) + cl->retry_delay_ms;
		bc_list_insert_tail(&cl->retries, &r->link);
		if (bc_list_first(&cl->retries) == &r->link)
			retry_arm(cl);
		return;
	}
	finish(r, 0, reply);
}

/* Whether keyed r may be sent now (the order rule at the top). */
static bool
may_go_now(const bc_tier_redis_cluster_t *cl, const req_t *r)
{
	const slot_order_t *o = &cl->order[r->slot];

	return o->held == 0 && (o->in_flight == 0 ||
	    (o->detoured == 0 && o->node == route(cl, r)));
}

/* r's first send; a keyed r is then in flight on its slot. */
static int
send_first(bc_tier_redis_cluster_t *cl, req_t *r)
{
	node_t *n = route(cl, r);
	int     rv = send_to(cl, r, n, 0);

	if (rv == 0 && r->keyed) {
		slot_order_t *o = &cl->order[r->slot];

		r->in_flight = true;
		o->in_flight++;
		o->node = n;
	}
	return rv;
}

static int
hold(bc_tier_redis_cluster_t *cl, req_t *r)
{
	if (cl->nheld >= HELD_MAX)
		return BC_EAGAIN;
	bc_list_insert_tail(&cl->held, &r->link);
	cl->order[r->slot].held++;
	cl->nheld++;
	COUNT(cl, held, 1);
	return 0;
}

/* Sends slot's held requests, oldest first, while the rule lets them. */
static void
release_held(bc_tier_redis_cluster_t *cl, uint16_t slot)
{
	slot_order_t *o = &cl->order[slot];
	bc_list_t    *it, *next;
	req_t        *r;
	int           rv;

	BC_LIST_FOREACH_SAFE(it, next, &cl->held) {
		r = BC_CONTAINER_OF(it, req_t, link);
		if (o->held == 0 || cl->closing)
			return;
		if (r->slot != slot)
			continue;
		if (o->in_flight > 0 && (o->detoured > 0 ||
		    o->node != route(cl, r)))
			return;
		bc_list_remove(it);
		o->held--;
		cl->nheld--;
		rv = send_first(cl, r);
		if (rv < 0)
			finish(r, rv, NULL);
	}
}

static int submit_req(bc_tier_redis_cluster_t *cl, const void *key,
    size_t keylen, const struct iovec *iov, int niov, char *own,
    bc_tier_redis_cluster_cb cb, void *arg);

int
bc_tier_redis_cluster_submit(bc_tier_redis_cluster_t *cl, const void *key,
    size_t keylen, int argc, const char **argv, const size_t *argvlen,
    bc_tier_redis_cluster_cb cb, void *arg)
{
	char *cmd = NULL;
	int   n;

	if (argc <= 0 || argv == NULL || argvlen == NULL || cb == NULL)
		return BC_EINVAL;
	n = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	if (n < 0)
		return BC_ENOMEM;
	return submit_req(cl, key, keylen, &(struct iovec){ cmd, (size_t)n },
	    1, cmd, cb, arg);
}

int
bc_tier_redis_cluster_submit_iov(bc_tier_redis_cluster_t *cl,
    const void *key, size_t keylen, const struct iovec *iov, int niov,
    bc_tier_redis_cluster_cb cb, void *arg)
{
	return submit_req(cl, key, keylen, iov, niov, NULL, cb, arg);
}

/* A request for iov's command (own: a block it frees, even on failure). */
static int
submit_req(bc_tier_redis_cluster_t *cl, const void *key, size_t keylen,
    const struct iovec *iov, int niov, char *own,
    bc_tier_redis_cluster_cb cb, void *arg)
{
	req_t *r;
	int    rv;

	if (iov == NULL || niov < 1 || niov > BC_TIER_REDIS_CONN_IOV_MAX ||
	    iov[0].iov_base == NULL || iov[0].iov_len == 0 || cb == NULL) {
		free(own);
		return BC_EINVAL;
	}
	if (cl->closing) {
		free(own);
		return BC_ECANCELED;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		free(own);
		return BC_ENOMEM;
	}
	memcpy(r->iov, iov, (size_t)niov * sizeof(*iov));
	r->niov = niov;
	r->own = own;
	r->cl = cl;
	r->cb = cb;
	r->arg = arg;
	bc_list_init(&r->link);
	r->keyed = key != NULL;
	if (r->keyed)
		r->slot = bc_tier_redis_cluster_slot(key, keylen);
	if (r->keyed && !may_go_now(cl, r))
		rv = hold(cl, r);
	else
		rv = send_first(cl, r);
	if (rv < 0) {
		COUNT(cl, rejects, 1);
		free(r->own);
		free(r);
		return rv;
	}
	COUNT(cl, requests, 1);
	return 0;
}

/* ---- the slot map ------------------------------------------------------------ */

static const redisReply *
field(const redisReply *map, const char *name)
{
	if (map->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < map->elements; i += 2) {
		const redisReply *k = map->element[i];

		if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0)
			return map->element[i + 1];
	}
	return NULL;
}

/* An integer in an integer or string reply; -1 otherwise. */
static long long
int_of(const redisReply *r)
{
	uint64_t v;

	if (r == NULL)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		return r->integer;
	if (r->type == REDIS_REPLY_STRING &&
	    bc_parse_u64(r->str, r->len, 10, INT32_MAX, &v) == 0)
		return (long long)v;
	return -1;
}

/* The node an address reply names ("" or "?": the node we asked). */
static node_t *
map_node(bc_tier_redis_cluster_t *cl, const redisReply *host, long long port)
{
	const char *h;
	size_t      len;

	if (port <= 0 || port > 65535)
		return NULL;
	if (host == NULL || host->type != REDIS_REPLY_STRING ||
	    host->len == 0 || strcmp(host->str, "?") == 0) {
		h = cl->refresh_node->host;
		len = strlen(h);
	} else {
		h = host->str;
		len = host->len;
	}
	return node_get(cl, h, len, (int)port);
}

static bool
set_range(node_t **map, long long from, long long to, node_t *n)
{
	if (from < 0 || to < from || to >= BC_TIER_REDIS_CLUSTER_SLOTS)
		return false;
	for (long long s = from; s <= to; s++)
		map[s] = n;
	return true;
}

/* CLUSTER SHARDS: [ ["slots", [from, to, ...], "nodes", [ [field,
 * value, ...], ... ] ], ... ]; a shard's master is its "role" "master"
 * node, reached at "endpoint" (or "ip" when that is "?"). */
static bool
parse_shards(bc_tier_redis_cluster_t *cl, const redisReply *reply,
    node_t **map)
{
	const redisReply *slots, *nodes, *nd, *role, *host;
	node_t           *n;

	if (reply->type != REDIS_REPLY_ARRAY)
		return false;
	for (size_t i = 0; i < reply->elements; i++) {
		slots = field(reply->element[i], "slots");
		nodes = field(reply->element[i], "nodes");
		if (slots == NULL || nodes == NULL ||
		    slots->type != REDIS_REPLY_ARRAY ||
		    nodes->type != REDIS_REPLY_ARRAY || slots->elements % 2)
			return false;
		n = NULL;
		for (size_t j = 0; j < nodes->elements && n == NULL; j++) {
			nd = nodes->element[j];
			role = field(nd, "role");
			if (role == NULL || role->type != REDIS_REPLY_STRING ||
			    strcmp(role->str, "master") != 0)
				continue;
			host = field(nd, "endpoint");
			if (host == NULL || host->type != REDIS_REPLY_STRING ||
			    strcmp(host->str, "?") == 0 || host->len == 0)
				host = field(nd, "ip");
			n = map_node(cl, host, int_of(field(nd, "port")));
			if (n == NULL)
				return false;
		}
		if (n == NULL)
			continue;           /* no master: its slots stay unknown */
		for (size_t j = 0; j < slots->elements; j += 2) {
			if (!set_range(map, int_of(slots->element[j]),
			    int_of(slots->element[j + 1]), n))
				return false;
		}
	}
	return true;
}

/* CLUSTER SLOTS: [ [from, to, [host, port, id, ...], replicas...], ... ]. */
static bool
parse_slots(bc_tier_redis_cluster_t *cl, const redisReply *reply,
    node_t **map)
{
	const redisReply *e, *m;
	node_t           *n;

	if (reply->type != REDIS_REPLY_ARRAY)
		return false;
	for (size_t i = 0; i < reply->elements; i++) {
		e = reply->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			return false;
		m = e->element[2];
		if (m->type != REDIS_REPLY_ARRAY || m->elements < 2)
			return false;
		n = map_node(cl, m->element[0], int_of(m->element[1]));
		if (n == NULL || !set_range(map, int_of(e->element[0]),
		    int_of(e->element[1]), n))
			return false;
	}
	return true;
}

/* Makes map the slot table and counts each node's slots. */
static void
map_apply(bc_tier_redis_cluster_t *cl, node_t **map)
{
	bc_list_t *it;

	BC_LIST_FOREACH(it, &cl->nodes)
		BC_CONTAINER_OF(it, node_t, link)->slots = 0;
	for (size_t s = 0; s < BC_TIER_REDIS_CLUSTER_SLOTS; s++) {
		cl->slots[s] = map[s];
		if (map[s] != NULL)
			map[s]->slots++;
	}
}

static void on_map(void *arg, int status, const redisReply *reply);

static int
ask_map(bc_tier_redis_cluster_t *cl, node_t *n, bool slots)
{
	const char           *argv[] = { "CLUSTER", slots ? "SLOTS" : "SHARDS" };
	size_t                lens[] = { 7, slots ? 5u : 6u };
	bc_tier_redis_conn_t *c;

	cl->refresh_node = n;
	cl->refresh_slots = slots;
	c = node_conn(cl, n);
	if (c == NULL)
		return BC_ENOMEM;
	return bc_tier_redis_conn_submit(c, 2, argv, lens, on_map, cl);
}

static void
map_failed(bc_tier_redis_cluster_t *cl, const char *why)
{
	COUNT(cl, refresh_errors, 1);
	cl->refresh_again = false;
	BC_WARN("redis %s:%d: no slot map: %s", cl->refresh_node->host,
	    cl->refresh_node->port, why);
	if (!uv_is_active((uv_handle_t *)&cl->refresh_timer))
		refresh_soon(cl);
}

static void
on_map(void *arg, int status, const redisReply *reply)
{
	bc_tier_redis_cluster_t *cl = arg;
	node_t                 **map;
	bool                     ok;

	cl->refreshing = false;
	if (cl->closing)
		return;
	if (status < 0) {
		map_failed(cl, bc_strerror(status));
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR &&
	    strstr(reply->str, "cluster support disabled") != NULL) {
		if (atomic_load(&cl->mode) != BC_TIER_REDIS_CLUSTER_STANDALONE)
			BC_INFO("redis %s:%d: standalone server",
			    cl->refresh_node->host, cl->refresh_node->port);
		cl->fallback = cl->refresh_node;
		atomic_store(&cl->mode, BC_TIER_REDIS_CLUSTER_STANDALONE);
		COUNT(cl, refreshes, 1);
		health_update(cl);
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR && !cl->refresh_slots) {
		/* Before 7.0: no SHARDS. */
		if (ask_map(cl, cl->refresh_node, true) == 0) {
			cl->refreshing = true;
			return;
		}
		map_failed(cl, reply->str);
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		map_failed(cl, reply->str);
		return;
	}
	map = calloc(BC_TIER_REDIS_CLUSTER_SLOTS, sizeof(*map));
	if (map == NULL) {
		map_failed(cl, "out of memory");
		return;
	}
	ok = cl->refresh_slots ? parse_slots(cl, reply, map) :
	    parse_shards(cl, reply, map);
	if (ok) {
		map_apply(cl, map);
		cl->fallback = cl->refresh_node;
		atomic_store(&cl->mode, BC_TIER_REDIS_CLUSTER_CLUSTER);
		COUNT(cl, refreshes, 1);
	}
	free(map);
	if (!ok) {
		map_failed(cl, "unexpected answer");
		return;
	}
	if (cl->refresh_again) {
		cl->refresh_again = false;
		refresh_soon(cl);
	}
	health_update(cl);
}

/* A node to ask for the map: one whose connection is UP, else the seeds
 * in turn. */
static node_t *
map_source(bc_tier_redis_cluster_t *cl)
{
	bc_list_t *it;
	node_t    *n;

	BC_LIST_FOREACH(it, &cl->nodes) {
		n = BC_CONTAINER_OF(it, node_t, link);
		if (n->conn != NULL && bc_tier_redis_conn_state(n->conn) ==
		    BC_TIER_REDIS_CONN_UP)
			return n;
	}
	return cl->seeds[cl->next_seed++ % cl->nseeds];
}

/* Asks for the map now (one request at a time). */
static void
refresh(bc_tier_redis_cluster_t *cl)
{
	int rv;

	if (cl->refreshing || cl->closing)
		return;
	cl->last_refresh_ms = uv_now(bc_loop_uv(cl->loop));
	cl->refreshed_once = true;
	rv = ask_map(cl, map_source(cl), false);
	if (rv < 0) {
		map_failed(cl, bc_strerror(rv));
		return;
	}
	cl->refreshing = true;
}

static void
on_refresh_timer(uv_timer_t *t)
{
	refresh(t->data);
}

/* Asks for the map now, or once refresh_min_ms passed since the last
 * request; after the one in flight when there is one. */
static void
refresh_soon(bc_tier_redis_cluster_t *cl)
{
	uint64_t now = uv_now(bc_loop_uv(cl->loop));
	uint64_t next = cl->last_refresh_ms + cl->refresh_min_ms;

	if (cl->closing)
		return;
	if (cl->refreshing) {
		cl->refresh_again = true;
		return;
	}
	if (uv_is_active((uv_handle_t *)&cl->refresh_timer))
		return;
	if (!cl->refreshed_once || now >= next)
		refresh(cl);
	else
		uv_timer_start(&cl->refresh_timer, on_refresh_timer,
		    next - now, 0);
}

/* ---- life ---------------------------------------------------------------- */

static void
free_nodes(bc_tier_redis_cluster_t *cl)
{
	bc_list_t *it, *tmp;
	node_t    *n;

	BC_LIST_FOREACH_SAFE(it, tmp, &cl->nodes) {
		n = BC_CONTAINER_OF(it, node_t, link);
		bc_list_remove(it);
		free(n->host);
		free(n);
	}
}

static void
free_mem(bc_tier_redis_cluster_t *cl)
{
	free_nodes(cl);
	free(cl->seeds);
	free((char *)cl->conn_opts.user);
	free((char *)cl->conn_opts.pass);
	free(cl);
}

static void
on_timer_closed(uv_handle_t *h)
{
	bc_tier_redis_cluster_t *cl = h->data;

	if (--cl->handles == 0)
		free_mem(cl);
}

int
bc_tier_redis_cluster_new(bc_loop_t *loop,
    const bc_tier_redis_cluster_opts_t *o, bc_tier_redis_cluster_t **out,
    char *err, size_t errlen)
{
	bc_tier_redis_cluster_t *cl;
	const char              *host;
	size_t                   hostlen;
	int                      port, rv = 0;

	if (o->nseeds == 0 || o->seeds == NULL) {
		bc_errf(err, errlen, "no Redis address");
		return BC_EINVAL;
	}
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL)
		return BC_ENOMEM;
	cl->loop = loop;
	cl->stats = o->stats != NULL ? o->stats : &cl->stats_own;
	bc_list_init(&cl->nodes);
	bc_list_init(&cl->retries);
	bc_list_init(&cl->held);
	cl->conn_opts = o->conn;
	cl->conn_opts.user = o->conn.user ? strdup(o->conn.user) : NULL;
	cl->conn_opts.pass = o->conn.pass ? strdup(o->conn.pass) : NULL;
	cl->seeds = calloc(o->nseeds, sizeof(*cl->seeds));
	if ((o->conn.user != NULL && cl->conn_opts.user == NULL) ||
	    (o->conn.pass != NULL && cl->conn_opts.pass == NULL) ||
	    cl->seeds == NULL) {
		rv = BC_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < o->nseeds; i++) {
		port = split_addr(o->seeds[i], strlen(o->seeds[i]), &host,
		    &hostlen);
		if (port < 0 || hostlen == 0) {
			bc_errf(err, errlen, "%s: not host:port", o->seeds[i]);
			rv = BC_EINVAL;
			goto fail;
		}
		cl->seeds[i] = node_get(cl, host, hostlen, port);
		if (cl->seeds[i] == NULL) {
			rv = BC_ENOMEM;
			goto fail;
		}
	}
	cl->nseeds = o->nseeds;
	cl->fallback = cl->seeds[0];
	cl->max_redirects = o->max_redirects ? o->max_redirects : 5;
	cl->max_retries = o->max_retries ? o->max_retries : 3;
	cl->retry_delay_ms = o->retry_delay_ms ? o->retry_delay_ms : 50;
	cl->refresh_min_ms = o->refresh_min_ms ? o->refresh_min_ms : 1000;
	cl->on_state = o->on_state;
	cl->state_arg = o->state_arg;
	uv_timer_init(bc_loop_uv(loop), &cl->refresh_timer);
	uv_timer_init(bc_loop_uv(loop), &cl->retry_timer);
	cl->refresh_timer.data = cl;
	cl->retry_timer.data = cl;
	cl->handles = 2;
	refresh(cl);
	*out = cl;
	return 0;
fail:
	free_mem(cl);
	return rv;
}

void
bc_tier_redis_cluster_free(bc_tier_redis_cluster_t *cl)
{
	bc_list_t *it, *first;
	node_t    *n;

	if (cl == NULL)
		return;
	cl->closing = true;
	BC_LIST_FOREACH(it, &cl->nodes) {
		n = BC_CONTAINER_OF(it, node_t, link);
		bc_tier_redis_conn_close(n->conn);
		n->conn = NULL;
	}
	while ((first = bc_list_first(&cl->retries)) != NULL) {
		bc_list_remove(first);
		finish(BC_CONTAINER_OF(first, req_t, link), BC_ECANCELED, NULL);
	}
	while ((first = bc_list_first(&cl->held)) != NULL) {
		bc_list_remove(first);
		finish(BC_CONTAINER_OF(first, req_t, link), BC_ECANCELED, NULL);
	}
	uv_close((uv_handle_t *)&cl->refresh_timer, on_timer_closed);
	uv_close((uv_handle_t *)&cl->retry_timer, on_timer_closed);
}

bool
bc_tier_redis_cluster_up(const bc_tier_redis_cluster_t *cl)
{
	return atomic_load(&cl->up);
}

bc_tier_redis_cluster_mode_t
bc_tier_redis_cluster_mode(const bc_tier_redis_cluster_t *cl)
{
	return atomic_load(&cl->mode);
}

const bc_tier_redis_cluster_stats_t *
bc_tier_redis_cluster_stats(const bc_tier_redis_cluster_t *cl)
{
	return cl->stats;
}

size_t
bc_tier_redis_cluster_nodes(const bc_tier_redis_cluster_t *cl,
    bc_tier_redis_cluster_node_t *out, size_t max)
{
	const bc_list_t *it;
	const node_t    *n;
	size_t           i = 0;

	BC_LIST_FOREACH(it, &cl->nodes) {
		n = BC_CONTAINER_OF(it, node_t, link);
		if (i < max) {
			out[i].host = n->host;
			out[i].port = n->port;
			out[i].slots = n->slots;
			out[i].errors = n->errors;
			out[i].conn = n->conn;
		}
		i++;
	}
	return i;
}
