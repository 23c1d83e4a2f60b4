#!/bin/bash
# bench_redis.sh — the benchmark of the Redis tier (issue 14): two gateways,
# "nodes" A and B, share one Redis. A reads a data set cold, every chunk
# from an origin 20 ms away, and writes what the origin brings behind to
# Redis; then B, a fresh gateway with its own small memory, reads the same
# data set cold for B: every chunk from Redis, no origin request. The
# result is B's cold epoch over Redis against A's cold epoch over the
# origin, as a ratio (A's epoch time / B's), with throughput, per-GET
# latency percentiles, and where the CPU went.
#
#   tests/bench/bench_redis.sh        (~3 min with the defaults on 2 cores)
#   BENCH_DATA_SIZE=256M BENCH_ROUNDS=1 tests/bench/bench_redis.sh   # smoke
#
# Not part of `make check`. It uses a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), and:
#
#   1. writes the data set once into BENCH_DATA (bench_redis.py gen):
#      objects of log-uniform sizes between BENCH_OBJ_MIN and BENCH_OBJ_MAX
#      until BENCH_DATA_SIZE bytes are reached (the last object passes it),
#      pseudo-random content from BENCH_SEED, s3://rbench/ds/oNNNNN.bin;
#      reused by later runs, checked against its manifest (size, crc32;
#      this also loads it into the page cache);
#   2. starts, on free loopback ports: a static nginx serving it as
#      BUCKET/KEY (the S3 stand-in, as in bench_training.sh), in front of it
#      training/delay_proxy.py --delay-ms BENCH_DELAY_MS (every origin
#      request waits that long; its /_delayproxy/stats counts what it
#      forwards: the ground truth of origin traffic), and a standalone
#      redis-server (--save '' --appendonly no, maxmemory
#      BENCH_REDIS_MAXMEMORY with noeviction, so that a Redis too small
#      shows as write failures rather than as silent evictions);
#   3. for each of BENCH_ROUNDS rounds (FLUSHALL first, so every round
#      starts from an empty Redis):
#        A  a fresh gateway: --upstream the delay proxy, --anonymous,
#           --mem-size BENCH_MEM (small against the data set, so that the
#           memory tier cannot hold it), --redis redis://127.0.0.1:PORT
#           --redis-size BENCH_REDIS_SIZE, no --disk-dir; one epoch (every
#           object read once, bench_redis.py read: BENCH_WORKERS threads,
#           each a keep-alive connection, one shuffled order, every body's
#           size and crc32 checked); then it waits until A's writes have
#           landed (A's tiers.redis.queued 0 and no SET reaching Redis for
#           1 s: "writes" counts SETs accepted, not answered), records
#           Redis's used_memory and key count, and stops A;
#        B  a fresh gateway with the same flags: one epoch, the same order;
#           it must make no origin request (delay proxy's count unchanged);
#        C  (BENCH_BASELINE=1) a fresh gateway without --redis: one epoch
#           from the origin, the baseline of what writing behind to Redis
#           costs A (C/B: B against a gateway without the tier);
#      around every epoch a snapshot of the gateway's /_bucketcache/stats,
#      Redis's INFO, the proxy's stats and the CPU time of every process
#      (the gateway and its busiest thread, its minor page faults,
#      redis-server, the proxy, nginx and its workers, the reader, and the
#      rest of the machine from /proc/stat: the machine is shared);
#   4. prints the runs side by side and per round, the ratio A/B, and
#      writes BENCH_RESULTS (Markdown: machine, redis-server --version,
#      git HEAD, the exact command, knobs, the tables) with a CSV beside it
#      (one row per round and run).
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (trap), whatever the exit status. Exit status: 0 done, every check
# passed; 1 setup failed or a check failed (a GET failed or read wrong
# bytes, B asked the origin, A's Redis writes failed or were dropped, a
# gateway died; the results are still written when the runs finished);
# 2 bad usage; 77 a package is missing and not root (as root, nginx,
# redis-server, curl are installed with apt-get when missing).
#
# Environment (defaults in brackets):
#   BC_BIN                daemon binary [<srcdir>/build/bucketcache]
#   BENCH_DATA_SIZE       bytes of the data set, K/M/G [1G]
#   BENCH_OBJ_MIN         smallest object, K/M/G [100K]
#   BENCH_OBJ_MAX         largest object, K/M/G [20M]
#   BENCH_SEED            data set and read order seed [1]
#   BENCH_DATA            where data sets are kept [/tmp/bc-redis-data]
#   BENCH_ROUNDS          rounds of A, B (and C) [5]
#   BENCH_WORKERS         reader threads (connections) [8]
#   BENCH_DELAY_MS        delay per origin request, ms [20]
#   BENCH_MEM             each gateway's --mem-size [64M]
#   BENCH_CHUNK           --chunk-size [not given: the daemon's, 8M]
#   BENCH_REDIS_SIZE      --redis-size [the data set x 1.25 + 64 MiB]
#   BENCH_REDIS_MAXMEMORY redis-server's maxmemory, bytes
#                         [the data set x 2 + 256 MiB]
#   BENCH_BASELINE        1: run C (no Redis tier) too [1]
#   BENCH_VERIFY          all: crc32 of every body; size: sizes only [all]
#   BENCH_BC_ARGS         extra bucketcache flags, word-split [none]
#   BENCH_TIMEOUT         seconds one epoch may take [600]
#   BENCH_RESULTS         Markdown results file, or "none"
#                         [tests/bench/results/redis.md; the CSV beside it]
#   BENCH_KEEP_TMP        1: keep the temp dir (logs, JSON) [0]

# shellcheck disable=SC2015,SC2317 # A && B || fail; cleanup runs from trap

# Run by sh: the rest is bash.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/lib_bench.sh
. "$BENCH_DIR/lib_bench.sh"
SRCDIR=$(cd "$BENCH_DIR/../.." && pwd)
PY=/usr/bin/python3
HELPER=$BENCH_DIR/bench_redis.py
ME=bench_redis.sh

BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
DATA_SIZE_S=${BENCH_DATA_SIZE:-1G}
OBJ_MIN_S=${BENCH_OBJ_MIN:-100K}
OBJ_MAX_S=${BENCH_OBJ_MAX:-20M}
SEED=${BENCH_SEED:-1}
DATA_ROOT=${BENCH_DATA:-/tmp/bc-redis-data}
ROUNDS=${BENCH_ROUNDS:-5}
WORKERS=${BENCH_WORKERS:-8}
DELAY_MS=${BENCH_DELAY_MS:-20}
MEM_S=${BENCH_MEM:-64M}
CHUNK_S=${BENCH_CHUNK:-}
REDIS_SIZE_S=${BENCH_REDIS_SIZE:-}
MAXMEM_S=${BENCH_REDIS_MAXMEMORY:-}
BASELINE=${BENCH_BASELINE:-1}
VERIFY=${BENCH_VERIFY:-all}
BC_ARGS=${BENCH_BC_ARGS:-}
TIMEOUT=${BENCH_TIMEOUT:-600}
RESULTS=${BENCH_RESULTS:-$BENCH_DIR/results/redis.md}
BUCKET=rbench

# The exact command line: the script plus every setting given in the
# environment, so that the run can be repeated as it was.
cmdline() {
	local v out=
	for v in BC_BIN BENCH_DATA_SIZE BENCH_OBJ_MIN BENCH_OBJ_MAX BENCH_SEED \
	    BENCH_DATA BENCH_ROUNDS BENCH_WORKERS BENCH_DELAY_MS BENCH_MEM \
	    BENCH_CHUNK BENCH_REDIS_SIZE BENCH_REDIS_MAXMEMORY BENCH_BASELINE \
	    BENCH_VERIFY BENCH_BC_ARGS BENCH_TIMEOUT BENCH_RESULTS \
	    BENCH_KEEP_TMP; do
		if [ -n "${!v+set}" ]; then
			out+="$v=$(printf '%q' "${!v}") "
		fi
	done
	printf '%s%s' "$out" "tests/bench/$ME"
}
CMDLINE=$(cmdline)

usage() {
	sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
case "${1:-}" in
'') ;;
*) usage ;;
esac

die_usage() {
	echo "$ME: $*" >&2
	exit 2
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
# bytes SIZE: SIZE (a number with an optional K, M or G, powers of 1024)
# in bytes; fails on anything else.
bytes() {
	local n u
	[[ $1 =~ ^([0-9]+)([KkMmGg]?)$ ]] || return 1
	n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
	case $u in
	'') echo "$n" ;;
	K | k) echo $((n * 1024)) ;;
	M | m) echo $((n * 1048576)) ;;
	G | g) echo $((n * 1073741824)) ;;
	esac
}
DATA_SIZE=$(bytes "$DATA_SIZE_S") && [ "$DATA_SIZE" -ge 1 ] || die_usage "BENCH_DATA_SIZE must be a size (1G, 256M, ...)"
OBJ_MIN=$(bytes "$OBJ_MIN_S") && [ "$OBJ_MIN" -ge 1 ] || die_usage "BENCH_OBJ_MIN must be a size"
OBJ_MAX=$(bytes "$OBJ_MAX_S") && [ "$OBJ_MAX" -ge "$OBJ_MIN" ] || die_usage "BENCH_OBJ_MAX must be a size >= BENCH_OBJ_MIN"
MEM=$(bytes "$MEM_S") && [ "$MEM" -ge 1048576 ] || die_usage "BENCH_MEM must be a size >= 1M"
[ -z "$CHUNK_S" ] || bytes "$CHUNK_S" >/dev/null || die_usage "BENCH_CHUNK must be a size"
[ -z "$REDIS_SIZE_S" ] || bytes "$REDIS_SIZE_S" >/dev/null || die_usage "BENCH_REDIS_SIZE must be a size"
[ -z "$MAXMEM_S" ] || bytes "$MAXMEM_S" >/dev/null || die_usage "BENCH_REDIS_MAXMEMORY must be a size"
is_uint "$SEED" || die_usage "BENCH_SEED must be a number"
is_uint "$ROUNDS" && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 50 ] || die_usage "BENCH_ROUNDS must be 1..50"
is_uint "$WORKERS" && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 256 ] || die_usage "BENCH_WORKERS must be 1..256"
is_uint "$DELAY_MS" && [ "$DELAY_MS" -le 60000 ] || die_usage "BENCH_DELAY_MS must be 0..60000"
case $BASELINE in 0 | 1) ;; *) die_usage "BENCH_BASELINE must be 0 or 1" ;; esac
case $VERIFY in all | size) ;; *) die_usage "BENCH_VERIFY must be all or size" ;; esac
is_uint "$TIMEOUT" && [ "$TIMEOUT" -ge 10 ] || die_usage "BENCH_TIMEOUT must be >= 10 (seconds)"
case $DATA_ROOT in /*) ;; *) die_usage "BENCH_DATA must be an absolute path" ;; esac

# ---- tools ------------------------------------------------------------------

# missing_pkgs: the Debian packages that are not there.
missing_pkgs() {
	local m=()
	[ -x "$PY" ] || m+=(python3)
	command -v nginx >/dev/null 2>&1 || m+=(nginx)
	command -v redis-server >/dev/null 2>&1 || m+=(redis-server)
	command -v curl >/dev/null 2>&1 || m+=(curl)
	command -v timeout >/dev/null 2>&1 || m+=(coreutils)
	printf '%s\n' "${m[@]}"
}
MISSING=$(missing_pkgs | tr '\n' ' ')
if [ -n "${MISSING// /}" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "# installing: $MISSING" >&2
		# shellcheck disable=SC2086 # a list of package names
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $MISSING >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $MISSING >&2; } ||
			{ echo "$ME: apt-get install $MISSING failed" >&2; exit 1; }
	else
		echo "$ME: missing packages; as root, run:" >&2
		echo "  apt-get install -y $MISSING" >&2
		exit 77
	fi
fi
for f in "$HELPER" "$BENCH_DIR/training/delay_proxy.py"; do
	[ -f "$f" ] || { echo "$ME: $f missing" >&2; exit 1; }
done

# ---- processes and cleanup --------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-redis.XXXXXX")
HEADER=$TMP/header.txt
: >"$HEADER"
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	bench_stop_pids "${PIDS[@]}"
	if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then
		echo "# kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "# interrupted" >&2; exit 1' INT TERM HUP

# say TEXT...: a line of the report header (stdout and the results file).
say() { printf '%s\n' "$*" | tee -a "$HEADER"; }
# note TEXT...: progress on stderr only.
note() { printf '# %s\n' "$*" >&2; }
fail() {
	echo "$ME: FAILED: $*" >&2
	exit 1
}

bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" || fail "building build/bucketcache failed"
[ -x "$BC_BIN" ] || fail "BC_BIN=$BC_BIN is not an executable"
"$BC_BIN" --help 2>&1 | grep -q -- '--redis-size' ||
	fail "$BC_BIN has no Redis tier (--redis-size is not in its --help)"

# Prints a loopback TCP port that was free a moment ago.
free_port() { tl_free_port; }

# wait_http URL PID SECONDS: until URL answers HTTP 200; fails if PID dies.
wait_http() { tl_wait_http "$1" "$2" "$3" 200; }

# wait_port_file FILE PID: until the process wrote its port to FILE.
wait_port_file() {
	for _ in $(seq 150); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

stop_pid() { tl_stop_pids "$1"; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# ---- machine ------------------------------------------------------------------

cpu_model() { bench_cpu_model; }
git_head() {
	local h d=
	h=$(git -C "$SRCDIR" rev-parse --short=12 HEAD 2>/dev/null) || { echo "not a git checkout"; return; }
	git -C "$SRCDIR" diff --quiet HEAD -- src 2>/dev/null || d=" (src/ modified)"
	echo "$h $(git -C "$SRCDIR" log -1 --format=%s HEAD | cut -c1-72)$d"
}

say "date:        $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "command:     $CMDLINE"
say "git HEAD:    $(git_head)"
say "machine:     $(hostname 2>/dev/null || echo '?'), nproc $(nproc), $(cpu_model)"
say "memory:      $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM"
say "kernel:      $(uname -srm)"
say "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) (at start; other work on the machine shows here)"
say "bucketcache: $("$BC_BIN" --version 2>&1 | head -n 1) ($BC_BIN)"
say "redis:       $(redis-server --version 2>&1 | head -n 1)"
say "nginx:       $(nginx -v 2>&1 | head -n 1 | sed 's/^nginx version: //')"
say "python:      $("$PY" -c 'import sys; print("python %s" % sys.version.split()[0])') ($PY)"

# ---- the data set ---------------------------------------------------------------

DATA=$DATA_ROOT/t$DATA_SIZE-min$OBJ_MIN-max$OBJ_MAX-seed$SEED
mkdir -p "$DATA"
chmod 755 "$DATA_ROOT" "$DATA"
note "data set $DATA (generated once, then reused; verifying it)"
DS_LINE=$("$PY" "$HELPER" gen --dir "$DATA" --bucket "$BUCKET" --total "$DATA_SIZE" \
    --min "$OBJ_MIN" --max "$OBJ_MAX" --seed "$SEED" --verify) ||
	fail "the data set could not be made or verified"
ds_field() { printf '%s\n' "$DS_LINE" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
DS_BYTES=$(ds_field bytes)
NOBJ=$(ds_field objects)
is_uint "$DS_BYTES" && [ "$DS_BYTES" -gt 0 ] || fail "bench_redis.py gen said [$DS_LINE]"
REDIS_SIZE=${REDIS_SIZE_S:+$(bytes "$REDIS_SIZE_S")}
REDIS_SIZE=${REDIS_SIZE:-$((DS_BYTES + DS_BYTES / 4 + 67108864))}
MAXMEM=${MAXMEM_S:+$(bytes "$MAXMEM_S")}
MAXMEM=${MAXMEM:-$((2 * DS_BYTES + 268435456))}
say "knobs:       BENCH_DATA_SIZE=$DATA_SIZE_S BENCH_OBJ_MIN=$OBJ_MIN_S BENCH_OBJ_MAX=$OBJ_MAX_S BENCH_SEED=$SEED BENCH_ROUNDS=$ROUNDS BENCH_WORKERS=$WORKERS BENCH_DELAY_MS=$DELAY_MS BENCH_MEM=$MEM_S BENCH_CHUNK=${CHUNK_S:-(daemon default)} BENCH_REDIS_SIZE=$REDIS_SIZE BENCH_REDIS_MAXMEMORY=$MAXMEM BENCH_BASELINE=$BASELINE BENCH_VERIFY=$VERIFY BENCH_BC_ARGS=${BC_ARGS:-(none)}"
say "data set:    $NOBJ objects, s3://$BUCKET/ds/o00000.bin .., $DS_BYTES bytes ($(mib "$DS_BYTES")), log-uniform sizes $OBJ_MIN..$OBJ_MAX bytes (seed $SEED): min $(ds_field min), median $(ds_field median), mean $(ds_field mean), max $(ds_field max); $DATA"

# ---- the origin, the delay proxy and Redis ------------------------------------

ND=$TMP/nginx
mkdir -p "$ND/tmp"
chmod 755 "$TMP" "$ND"   # run as root, nginx's workers are nobody
for _ in 1 2 3; do
	port=$(free_port)
	cat >"$ND/nginx.conf" <<EOF
# bench_redis.sh: the origin
worker_processes auto;
error_log $ND/error.log warn;
pid $ND/nginx.pid;
events { worker_connections 4096; }
http {
	default_type application/octet-stream;
	client_body_temp_path $ND/tmp/body;
	proxy_temp_path $ND/tmp/proxy;
	fastcgi_temp_path $ND/tmp/fastcgi;
	uwsgi_temp_path $ND/tmp/uwsgi;
	scgi_temp_path $ND/tmp/scgi;
	access_log off;
	sendfile on;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:$port;
		root $DATA/www;
		location = /_ping { return 200 "ok\n"; }
	}
}
EOF
	nginx -p "$ND" -c "$ND/nginx.conf" -g 'daemon off;' >>"$ND/stderr.log" 2>&1 &
	NG_PID=$!
	if wait_http "http://127.0.0.1:$port/_ping" "$NG_PID" 10; then
		PIDS+=("$NG_PID")
		UP=http://127.0.0.1:$port
		break
	fi
	kill -KILL "$NG_PID" 2>/dev/null || true
	wait "$NG_PID" 2>/dev/null || true
	NG_PID=
done
[ -n "$NG_PID" ] || { cat "$ND/error.log" "$ND/stderr.log" >&2 2>/dev/null; fail "nginx did not start"; }

"$PY" "$BENCH_DIR/training/delay_proxy.py" --upstream "$UP" --delay-ms "$DELAY_MS" \
    --port-file "$TMP/proxy.port" >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
wait_port_file "$TMP/proxy.port" "$PROXY_PID" || { cat "$TMP/proxy.log" >&2; fail "delay_proxy.py did not start"; }
PROXY=http://127.0.0.1:$(cat "$TMP/proxy.port")
wait_http "$PROXY/_delayproxy/stats" "$PROXY_PID" 10 || fail "delay_proxy.py does not answer"

# sanity: the proxy forwards the first object whole, and takes the delay
read -r KEY0 SIZE0 _ <"$DATA/manifest.tsv"
read -r code size t <<<"$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' \
    --max-time 30 "$PROXY/$BUCKET/$KEY0")" || true
[ "$code" = 200 ] && [ "$size" = "$SIZE0" ] ||
	fail "GET $PROXY/$BUCKET/$KEY0 through the delay proxy: $code, $size bytes (want 200, $SIZE0)"
awk -v t="$t" -v d="$DELAY_MS" 'BEGIN { exit !(t * 1000 >= d) }' ||
	fail "a GET through the delay proxy took ${t}s, less than $DELAY_MS ms"
say "origin:      nginx $UP (static files of $DATA/www: sendfile, keep-alive, ETag and Range) -> delay_proxy.py $PROXY (+$DELAY_MS ms per request, no rate limit); one GET of $KEY0 through it: $code, $size bytes, ${t}s"

RD=$TMP/redis
mkdir -p "$RD"
for _ in 1 2 3; do
	RPORT=$(free_port)
	redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$RD" --save '' \
	    --appendonly no --maxmemory "$MAXMEM" --maxmemory-policy noeviction \
	    --daemonize no --logfile "$RD/redis.log" >>"$RD/stderr.log" 2>&1 &
	REDIS_PID=$!
	ok=0
	for _ in $(seq 50); do
		kill -0 "$REDIS_PID" 2>/dev/null || break
		if [ "$("$PY" "$HELPER" redis --port "$RPORT" PING 2>/dev/null)" = PONG ]; then
			ok=1
			break
		fi
		sleep 0.1
	done
	if [ "$ok" = 1 ]; then
		PIDS+=("$REDIS_PID")
		break
	fi
	kill -KILL "$REDIS_PID" 2>/dev/null || true
	wait "$REDIS_PID" 2>/dev/null || true
	REDIS_PID=
done
[ -n "$REDIS_PID" ] || { cat "$RD/redis.log" "$RD/stderr.log" >&2 2>/dev/null; fail "redis-server did not start"; }
redis_info() {
	"$PY" "$HELPER" redis --port "$RPORT" INFO "$1" | tr -d '\r' | sed -n "s/^$2://p"
}
say "redis:       redis-server 127.0.0.1:$RPORT --save '' --appendonly no --maxmemory $MAXMEM --maxmemory-policy noeviction (standalone; mem_allocator $(redis_info memory mem_allocator), io_threads_active $(redis_info everything io_threads_active))"

# ---- the runs -------------------------------------------------------------------

CHUNK_FLAG=()
[ -z "$CHUNK_S" ] || CHUNK_FLAG=(--chunk-size "$CHUNK_S")
REDIS_FLAGS=(--redis "redis://127.0.0.1:$RPORT" --redis-size "$REDIS_SIZE")

# start_gw LABEL FLAGS...: a fresh gateway; sets GW_PID, GW_URL, GW_DESC.
start_gw() {
	local label=$1 port pid log
	shift
	log=$TMP/$label.gateway.log
	for _ in 1 2 3; do
		port=$(free_port)
		# shellcheck disable=SC2086 # BC_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "$PROXY" \
		    --anonymous --mem-size "$MEM" ${CHUNK_FLAG[@]+"${CHUNK_FLAG[@]}"} \
		    "$@" $BC_ARGS >>"$log" 2>&1 &
		pid=$!
		if wait_http "http://127.0.0.1:$port/_bucketcache/health" "$pid" 15; then
			PIDS+=("$pid")
			GW_PID=$pid
			GW_URL=http://127.0.0.1:$port
			GW_DESC="AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench $BC_BIN --listen 127.0.0.1:$port --upstream $PROXY --anonymous --mem-size $MEM${CHUNK_FLAG[*]:+ ${CHUNK_FLAG[*]}}${*:+ $*}${BC_ARGS:+ $BC_ARGS}"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "$label: bucketcache did not become healthy"
}

# gw_json PY_EXPR: PY_EXPR of the gateway's stats (d).
gw_json() {
	curl -sf --max-time 10 "$GW_URL/_bucketcache/stats" |
		"$PY" -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# snap FILE [gateway]: the counters and CPU times around an epoch.
snap() {
	local out=$1 gw=()
	if [ "${2:-}" = gateway ]; then
		gw=(--gw "$GW_URL" --gw-pid "$GW_PID" --proc "gateway=$GW_PID")
	fi
	"$PY" "$HELPER" snap --out "$out" --proxy "$PROXY" --redis-port "$RPORT" \
	    --proc "redis=$REDIS_PID" --proc "proxy=$PROXY_PID" --proc "origin=$NG_PID" \
	    "${gw[@]}" || fail "snapshot $out failed"
}

# epoch ROUND RUN: one epoch of the reader against GW_URL, with snapshots.
REPORT_RUNS=()
epoch() {
	local r=$1 run=$2 p=$TMP/r$1.$2 rc=0
	snap "$p.before.json" gateway
	timeout -k 10 "$TIMEOUT" "$PY" "$HELPER" read --endpoint "$GW_URL" \
	    --bucket "$BUCKET" --manifest "$DATA/manifest.tsv" --label "round $r $run" \
	    --out "$p.read.json" --workers "$WORKERS" --seed "$SEED" \
	    --verify "$VERIFY" || rc=$?
	snap "$p.after.json" gateway
	[ "$rc" = 0 ] || fail "round $r, $run: the epoch failed (exit $rc; 124: over BENCH_TIMEOUT=$TIMEOUT s)"
	kill -0 "$GW_PID" 2>/dev/null || fail "round $r, $run: the gateway died (log: $TMP/r$r.$run.gateway.log)"
	REPORT_RUNS+=(--run "$r:$run=$p.read.json,$p.before.json,$p.after.json")
}

# end_gw ROUND RUN: checks the gateway's log and stops it.
end_gw() {
	local log=$TMP/r$1.$2.gateway.log n
	n=$(grep -Ec ' (error|warn):' "$log" || true)
	if [ "$1" = 1 ] || [ "$n" -gt 0 ]; then
		say "round $1, $2: gateway log: $(wc -l <"$log") lines, $n warn/error"
		[ "$n" = 0 ] || grep -E ' (error|warn):' "$log" | head -n 5 | sed 's/^/             /' | tee -a "$HEADER"
	fi
	stop_pid "$GW_PID"
}

REPORT_FILLS=()
T0=$(date +%s)
for r in $(seq "$ROUNDS"); do
	"$PY" "$HELPER" redis --port "$RPORT" FLUSHALL >/dev/null || fail "FLUSHALL failed"
	[ "$("$PY" "$HELPER" redis --port "$RPORT" DBSIZE)" = 0 ] || fail "Redis is not empty after FLUSHALL"

	# A: cold, from the origin, writing behind to Redis
	note "round $r/$ROUNDS: A (origin -> Redis)"
	start_gw "r$r.A" "${REDIS_FLAGS[@]}"
	[ "$r" != 1 ] || say "A:          $GW_DESC"
	[ "$(gw_json 'd["tiers"]["redis"]["up"]')" = 1 ] || fail "A: its Redis tier is not up"
	epoch "$r" A
	note "round $r: waiting for A's Redis writes to land"
	"$PY" "$HELPER" settle --gw "$GW_URL" --redis-port "$RPORT" --out "$TMP/r$r.fill.json" \
	    --timeout "$TIMEOUT" >"$TMP/r$r.fill.txt" || fail "round $r: A's Redis writes did not settle"
	say "round $r, A's fill: $(cat "$TMP/r$r.fill.txt")"
	REPORT_FILLS+=(--fill "$r=$TMP/r$r.fill.json")
	end_gw "$r" A

	# B: cold for B, every chunk from Redis
	note "round $r/$ROUNDS: B (Redis)"
	start_gw "r$r.B" "${REDIS_FLAGS[@]}"
	[ "$r" != 1 ] || say "B:          $GW_DESC"
	[ "$(gw_json 'd["tiers"]["redis"]["up"]')" = 1 ] || fail "B: its Redis tier is not up"
	epoch "$r" B
	end_gw "$r" B

	# C: the baseline, no Redis tier
	if [ "$BASELINE" = 1 ]; then
		note "round $r/$ROUNDS: C (origin, no Redis tier)"
		start_gw "r$r.C"
		[ "$r" != 1 ] || say "C:          $GW_DESC"
		epoch "$r" C
		end_gw "$r" C
	fi
done
say "proxy:       $(curl -sf "$PROXY/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%d requests, %.1f MiB of bodies, %d errors, %d reconnects, at most %d client connections at once" % (
    d["requests"], d["resp_body_bytes"] / 1048576, d["errors"], d["reconnects"], d["conns_max"]))')"
say "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) (at end); the rounds took $(($(date +%s) - T0)) s"

# ---- the report -------------------------------------------------------------------

if [ "$RESULTS" = none ]; then
	MD=$TMP/redis.md
else
	mkdir -p "$(dirname "$RESULTS")"
	MD=$RESULTS
fi
rc=0
"$PY" "$HELPER" report "${REPORT_RUNS[@]}" "${REPORT_FILLS[@]}" \
    --dataset-bytes "$DS_BYTES" --objects "$NOBJ" --delay-ms "$DELAY_MS" \
    --md "$TMP/body.md" --csv "${MD%.md}.csv" || rc=$?
[ -s "$TMP/body.md" ] || fail "bench_redis.py report wrote no report"
{
	echo "# bucketcache Redis tier benchmark (issue 14)"
	echo ""
	echo "Written by \`tests/bench/bench_redis.sh\` (its header comment says what it"
	echo "does); each run replaces this file and redis.csv beside it. Two gateways, A and"
	echo "B, share one Redis (--redis, --redis-size). A reads the data set once, cold:"
	echo "every chunk from the origin, a static nginx behind delay_proxy.py (+$DELAY_MS ms"
	echo "per request), written behind to Redis. Once A's writes have landed, B, a fresh"
	echo "gateway with its own small memory tier (--mem-size $MEM_S), reads the same data set"
	echo "once, cold for B: every chunk from Redis. C, a fresh gateway without a Redis"
	echo "tier, reads it from the origin (the baseline of what writing behind costs A)."
	echo "The ratio is A's epoch time / B's. Each round starts from an empty Redis"
	echo "(FLUSHALL). $WORKERS reader threads (one keep-alive connection each) read"
	echo "every object once in one shuffled order; every body's size$([ "$VERIFY" = all ] && echo " and crc32") checked."
	echo "GET head = request sent to response head received; GET whole = to its last byte."
	echo "MiB = 2^20 bytes. CPU seconds are over the epoch (from /proc), \"other"
	echo "processes\" is the machine's busy time (/proc/stat) less ours: the machine is"
	echo "shared. What the numbers say, with profiles: tests/bench/README.md,"
	echo "bench_redis.sh (written by hand; re-check it against a new run)."
	echo ""
	echo '```'
	cat "$HEADER"
	echo '```'
	echo ""
	cat "$TMP/body.md"
} >"$MD.tmp"
mv "$MD.tmp" "$MD"
if [ "$RESULTS" != none ]; then
	note "wrote $MD and ${MD%.md}.csv"
fi
exit "$rc"
