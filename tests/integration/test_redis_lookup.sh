#!/bin/bash
# test_redis_lookup.sh — a Redis tier named by a host name (a Kubernetes
# Service, a compose service) never stalls the gateway on DNS. The
# gateway runs in its own mount namespace whose /etc/resolv.conf points at
# fixture/slowdns.py, which answers one name after 3 s, another with
# NXDOMAIN, and never answers a third. Against each:
#   - GETs from the origin (file://, whose answers reach clients through
#     the loop thread the Redis client shares) stay fast while a lookup
#     runs: the lookup is on libuv's pool (before, on the loop thread,
#     every GET waited it out);
#   - slow: the connect deadline (300 ms; a read waits at most that for
#     a connection coming up) passes while the 3 s lookup runs
#     (err_connect_timeout), only one lookup is asked at a time, and its
#     late answer serves the next attempt: the tier comes UP and takes
#     the chunks read afterwards;
#   - NXDOMAIN: counted (err_lookup), logged, the tier stays down, GETs
#     are served from the origin;
#   - never answered: one lookup at a time, and the gateway still stops
#     within 10 s of SIGTERM (it waits for the running lookup, bounded by
#     the resolver's timeout, 4 s here).
# Root only (a mount namespace, a DNS server on port 53 of a loopback
# address).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli unshare mount
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: $BC_NAME: needs root (a mount namespace, port 53)" >&2
	exit 77
fi

DATA=$BC_TMP/data
mkdir -p "$DATA/ds"
NOBJ=40
for i in $(seq 1 $NOBJ); do
	bc_mkfile "$DATA/ds/o$i.bin" $(( 20000 + i * 1111 ))
done
bc_start_redis

# ---- the DNS server and the namespace -------------------------------------
DNS_LOG=$BC_TMP/dns.log
BC_LOGS+=("$DNS_LOG")
for try in 1 2 3; do
	DNS_ADDR=127.53.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
	: >"$DNS_LOG"
	"$BC_PY" "$BC_IT_DIR/fixture/slowdns.py" "$DNS_ADDR" 53 \
		slow.bc.test=127.0.0.1@3 nx.bc.test=nx dead.bc.test=drop \
		>>"$DNS_LOG" 2>&1 &
	DNS_PID=$!
	for i in $(seq 50); do
		grep -q '^ready' "$DNS_LOG" && break
		kill -0 "$DNS_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^ready' "$DNS_LOG" && break
	kill "$DNS_PID" 2>/dev/null || true
	wait "$DNS_PID" 2>/dev/null || true
done
grep -q '^ready' "$DNS_LOG" || bc_fail "the DNS fixture did not start"
BC_PIDS+=("$DNS_PID")
printf 'nameserver %s\noptions timeout:4 attempts:1\n' "$DNS_ADDR" \
	>"$BC_TMP/resolv.conf"
# The gateway binary, run in a mount namespace of its own that sees our
# resolv.conf (same pid: unshare and sh exec it).
WRAP=$BC_TMP/bucketcache-ns
cat >"$WRAP" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind "\$0" /etc/resolv.conf && exec "\$@"' \\
	"$BC_TMP/resolv.conf" "$BC_BIN" "\$@"
EOF
chmod +x "$WRAP"
REAL_BIN=$BC_BIN
BC_BIN=$WRAP

queries() {   # $1: name; the A queries the DNS server saw for it
	grep -c "^query $1 1 " "$DNS_LOG" || true
}

# min_gap NAME: the shortest time, in ms, between two A queries for NAME
# (99999 when there were fewer than two).
min_gap() {
	sed -n "s/^query $1 1 .*, at \([0-9.]*\) s\$/\1/p" "$DNS_LOG" |
		awk 'NR > 1 && (g == "" || $1 - p < g) { g = $1 - p } { p = $1 }
		    END { print g == "" ? 99999 : int(g * 1000) }'
}

# paced_gets FIRST LAST SECONDS: GETs objects FIRST..LAST spread over
# SECONDS, checks each one's bytes and that the slowest took under 1 s.
paced_gets() {
	bc_py "$BC_GW_PORT" "$DATA/ds" "$1" "$2" "$3" <<'EOF'
import sys, time, urllib.request
from itlib import ok, done
port, ds, first, last, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), float(sys.argv[5])
n = last - first + 1
worst, bad, at = 0.0, [], 0
t0 = time.monotonic()
for i in range(first, last + 1):
    t = time.monotonic()
    with urllib.request.urlopen("http://127.0.0.1:%s/ds/o%d.bin" % (port, i),
                                timeout=20) as f:
        body = f.read()
    took = time.monotonic() - t
    if took > worst:
        worst, at = took, i - first + 1
    if body != open("%s/o%d.bin" % (ds, i), "rb").read():
        bad.append(i)
    time.sleep(max(0, t0 + secs * (i - first + 1) / n - time.monotonic()))
ok(not bad, "%d GETs from the origin: bytes right" % n, str(bad))
ok(worst < 1.0, "while the lookup runs, the slowest of %d GETs (the %d.) took %.3f s (< 1 s)"
   % (n, at, worst))
done()
EOF
}

wait_stat() {   # $1 stat, $2 minimum, $3 seconds: the value once >= $2
	local i v
	for i in $(seq $(( $3 * 10 ))); do
		v=$(bc_stats_get "$1")
		[ "$v" -ge "$2" ] && break
		sleep 0.1
	done
	echo "$v"
}

# ---- a lookup slower than the connect deadline ----------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--redis "redis://slow.bc.test:$BC_REDIS_PORT" --redis-size 256MiB --redis-connect-timeout 300ms
t0=$(date +%s%N)
paced_gets 1 15 2.5
up=$(wait_stat tiers.redis.up 1 15)
t_up=$(( ($(date +%s%N) - t0) / 1000000 ))
bc_assert_eq 1 "$up" "the tier comes up once the 3 s lookup answered"
bc_log "tier up $t_up ms after the gateway was healthy"
q=$(queries slow.bc.test)
bc_assert_eq 1 "$q" "one lookup asked until then, not one per attempt"
v=$(bc_stats_get redis.connections.err_connect_timeout)
bc_assert_ge "$v" 1 "the connect deadline passed while the lookup ran"
v=$(bc_stats_get redis.connections.err_lookup)
bc_assert_eq 0 "$v" "no lookup failed"
for i in $(seq 16 25); do
	curl -sf --max-time 20 -o /dev/null "$BC_GW_URL/ds/o$i.bin" ||
		bc_fail "GET ds/o$i.bin failed"
done
w=$(wait_stat tiers.redis.writes 10 10)
bc_assert_ge "$w" 10 "the chunks read once it was up went to Redis"
keys=$(bc_redis_cli 0 DBSIZE)
bc_assert_ge "$keys" 10 "Redis holds them"
bc_stop_gateway

# ---- NXDOMAIN --------------------------------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--redis "redis://nx.bc.test:$BC_REDIS_PORT" --redis-size 256MiB
paced_gets 26 30 0.5
v=$(wait_stat redis.connections.err_lookup 1 10)
bc_assert_ge "$v" 1 "NXDOMAIN: counted as a lookup failure"
up=$(bc_stats_get tiers.redis.up)
bc_assert_eq 0 "$up" "NXDOMAIN: the tier is down"
grep -q "nx.bc.test:$BC_REDIS_PORT: cannot look the name up" "$BC_GW_LOG" ||
	bc_fail "NXDOMAIN: no log line says the name did not resolve"
bc_pass "NXDOMAIN: the log says the name did not resolve"
bc_stop_gateway

# ---- never answered --------------------------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--redis "redis://dead.bc.test:$BC_REDIS_PORT" --redis-size 256MiB --redis-connect-timeout 300ms
paced_gets 31 $NOBJ 2.5
q=$(queries dead.bc.test)
g=$(min_gap dead.bc.test)
bc_log "never answered: $q lookups, the closest $g ms apart"
bc_assert_ge "$g" 3900 "never answered: one lookup at a time (each ends at the 4 s resolver timeout)"
v=$(bc_stats_get redis.connections.err_connect_timeout)
bc_assert_ge "$v" 2 "never answered: each attempt's deadline passed"
up=$(bc_stats_get tiers.redis.up)
bc_assert_eq 0 "$up" "never answered: the tier is down"
t0=$(date +%s%N)
bc_stop_gateway
bc_log "stopped in $(( ($(date +%s%N) - t0) / 1000000 )) ms with a lookup running"
BC_BIN=$REAL_BIN

bc_done 24
