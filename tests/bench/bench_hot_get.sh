#!/bin/bash
# bench_hot_get.sh — hot-GET throughput benchmark: 128 KiB objects served by
# bucketcache from a warm cache, against the same objects served directly by
# the upstream it fronts.
#
# Not part of `make check`. It uses a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), and:
#
#   1. starts its own upstream on a free loopback port: s3rver (the required
#      one; tests/integration/node_modules/.bin/s3rver, installed by
#      `npm ci --prefix tests/integration`) and/or nginx serving a temp
#      directory laid out as BUCKET/KEY, anonymously (if nginx is installed);
#   2. uploads BENCH_NKEYS objects of BENCH_OBJ_SIZE bytes (default 256 x
#      128 KiB = 32 MiB, far below the daemon's default 1G memory tier);
#   3. starts bucketcache --anonymous in front of it (it signs upstream
#      requests itself with AWS_ACCESS_KEY_ID=S3RVER/AWS_SECRET_ACCESS_KEY=
#      S3RVER, the only pair s3rver knows), with default settings: the
#      daemon is measured, not tuned (BENCH_GW_ARGS adds flags if you must);
#   4. warms the cache with one curl pass over every key, checks that a second
#      pass answers `x-bucketcache: hit` for every key and that cache_hits
#      grew by exactly that many, and that sha256 of a few objects is the
#      same via the gateway, directly, and in the source file;
#   5. runs wrk (rotate.lua: plain unsigned GETs rotating over all keys) for
#      each client concurrency in BENCH_CONNS, DIRECT and BUCKETCACHE runs
#      alternating (odd rounds direct first, even rounds bucketcache first),
#      BENCH_ROUNDS rounds of BENCH_DURATION seconds each;
#   6. checks, from /_bucketcache/stats before and after the measured phase,
#      that every measured GET was a cache hit and that no upstream GET was
#      made (upstream_requests before/after; the only upstream traffic allowed
#      is the HEAD If-None-Match revalidation the daemon does once an
#      object's metadata is older than --meta-ttl, default 60s);
#   7. prints machine, versions, the command line, per-run numbers and a
#      table of medians (req/s, MB/s, p50/p99 latency, ratio bucketcache/
#      direct), and appends the same as a block to tests/bench/RESULTS.md.
#
# Everything it starts is stopped, and its temp dir removed, on exit (trap),
# whatever the exit status. Exit status: 0 done and clean; 1 setup failed or
# the daemon misbehaved during the measured phase (errors, non-hit answers,
# upstream GETs — the results are still printed and recorded, marked); 2 bad
# usage.
#
# Environment (defaults in brackets):
#   BC_BIN             daemon binary [<srcdir>/build/bucketcache]
#   BENCH_UPSTREAM     "s3rver", "nginx" or "s3rver nginx" [s3rver]
#   BENCH_ROUNDS       rounds [3]
#   BENCH_DURATION     seconds per wrk run [5]
#   BENCH_CONNS        client connections, blank-separated [1 16 64]
#   BENCH_WRK_THREADS  most wrk threads (a run uses min(this, conns)) [2]
#   BENCH_WARMUP       seconds of unrecorded wrk load on each target before
#                      round 1 (0: none) [1]
#   BENCH_NKEYS        objects [256]
#   BENCH_OBJ_SIZE     bytes per object [131072]
#   BENCH_GW_ARGS      extra daemon flags, word-split [none]
#   BENCH_RESULTS      results file, or "none" [tests/bench/RESULTS.md]
#   BENCH_KEEP_TMP     1: keep the temp dir (logs, raw wrk output) [0]
#
# Machine noise: the daemon, the upstream and wrk share the machine's CPUs;
# read the ratios and the per-round ratio range, not single numbers.

# shellcheck disable=SC2015,SC2317 # A && B || fail; cleanup runs from trap
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/lib_bench.sh
. "$BENCH_DIR/lib_bench.sh"
SRCDIR=$(cd "$BENCH_DIR/../.." && pwd)
PY=/usr/bin/python3
S3RVER_BIN=$SRCDIR/tests/integration/node_modules/.bin/s3rver
LUA=$BENCH_DIR/rotate.lua

BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
UPSTREAMS=${BENCH_UPSTREAM:-s3rver}
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-5}
CONNS=${BENCH_CONNS:-1 16 64}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
WARMUP=${BENCH_WARMUP:-1}
NKEYS=${BENCH_NKEYS:-256}
OBJ_SIZE=${BENCH_OBJ_SIZE:-131072}
GW_ARGS=${BENCH_GW_ARGS:-}
RESULTS=${BENCH_RESULTS:-$BENCH_DIR/RESULTS.md}
BUCKET=bench
KEY_PREFIX=obj-
KEY_DIGITS=${#NKEYS}

# The exact command line: the script plus every setting given in the
# environment, so that the run can be repeated as it was.
cmdline() {
	local v out=
	for v in BC_BIN BENCH_UPSTREAM BENCH_ROUNDS BENCH_DURATION BENCH_CONNS \
	    BENCH_WRK_THREADS BENCH_WARMUP BENCH_NKEYS BENCH_OBJ_SIZE \
	    BENCH_GW_ARGS BENCH_RESULTS BENCH_KEEP_TMP; do
		if [ -n "${!v+set}" ]; then
			out+="$v=$(printf '%q' "${!v}") "
		fi
	done
	printf '%s%q' "$out" "$0"
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
	echo "bench_hot_get.sh: $*" >&2
	exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint "$ROUNDS" && [ "$ROUNDS" -ge 1 ] || die_usage "BENCH_ROUNDS must be >= 1"
is_uint "$DURATION" && [ "$DURATION" -ge 1 ] || die_usage "BENCH_DURATION must be >= 1 (seconds)"
is_uint "$WRK_THREADS" && [ "$WRK_THREADS" -ge 1 ] || die_usage "BENCH_WRK_THREADS must be >= 1"
is_uint "$WARMUP" || die_usage "BENCH_WARMUP must be a number of seconds"
is_uint "$NKEYS" && [ "$NKEYS" -ge 1 ] && [ "$NKEYS" -le 100000 ] ||
	die_usage "BENCH_NKEYS must be 1..100000"
is_uint "$OBJ_SIZE" && [ "$OBJ_SIZE" -ge 1 ] || die_usage "BENCH_OBJ_SIZE must be >= 1"
for c in $CONNS; do
	is_uint "$c" && [ "$c" -ge 1 ] || die_usage "BENCH_CONNS: bad value [$c]"
done
[ -n "${CONNS// /}" ] || die_usage "BENCH_CONNS is empty"
for u in $UPSTREAMS; do
	case $u in
	s3rver | nginx) ;;
	*) die_usage "BENCH_UPSTREAM: unknown upstream [$u] (s3rver, nginx)" ;;
	esac
done

# ---- processes and cleanup --------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-bench.XXXXXX")
REPORT=$TMP/report.txt
RUNS=$TMP/runs.tsv
ANOMALIES=$TMP/anomalies.txt
: >"$REPORT"
: >"$RUNS"
: >"$ANOMALIES"

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

# say TEXT...: a line of the report (stdout and the results block).
say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
# note TEXT...: progress on stderr only.
note() { printf '# %s\n' "$*" >&2; }
fail() {
	echo "bench_hot_get.sh: FAILED: $*" >&2
	exit 1
}
# anomaly TEXT: the daemon misbehaved; recorded, reported, exit status 1.
anomaly() {
	printf '%s\n' "$*" >>"$ANOMALIES"
	say "ANOMALY: $*"
}

need() {
	command -v "$1" >/dev/null 2>&1 || fail "$1 not found${2:+ ($2)}"
}

need curl
need wrk "apt-get install -y wrk"
need sha256sum
need awk
[ -x "$PY" ] || fail "$PY not found"
bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" || fail "building build/bucketcache failed"
[ -x "$BC_BIN" ] || fail "BC_BIN=$BC_BIN is not an executable"
[ -f "$LUA" ] || fail "$LUA missing"
for u in $UPSTREAMS; do
	if [ "$u" = s3rver ]; then
		[ -x "$S3RVER_BIN" ] || fail "s3rver not installed; run \`npm ci --prefix tests/integration\`"
		need node
	else
		need nginx "apt-get install -y nginx"
	fi
done
# %header{} in -w needs curl 7.84
curl -s -o /dev/null -w '%header{x}' "file:///dev/null" 2>/dev/null | grep -q header &&
	fail "curl too old: -w %header{...} is not supported (need 7.84+)"

# Prints a loopback TCP port that was free a moment ago.
free_port() { tl_free_port; }

# wait_http URL PID SECONDS: until URL answers HTTP 200; fails if PID dies.
wait_http() { tl_wait_http "$1" "$2" "$3" 200; }

# wait_port PORT PID SECONDS: until PORT answers any HTTP status.
wait_port() { tl_wait_http "http://127.0.0.1:$1/" "$2" "$3" any; }

# ---- machine and versions ---------------------------------------------------

cpu_model() { bench_cpu_model; }

first_line() { head -n 1 | tr -d '\r'; }

say "date:        $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "command:     $CMDLINE"
say "machine:     $(hostname 2>/dev/null || echo '?'), nproc $(nproc), $(cpu_model)"
say "kernel:      $(uname -srm)"
say "memory:      $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
say "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) (at start; other work on the machine shows here)"
say "bucketcache: $("$BC_BIN" --version 2>&1 | first_line) ($BC_BIN)"
say "wrk:         $(wrk -v 2>&1 | first_line | sed 's/ Copyright.*//')"
say "curl:        $(curl --version | first_line | cut -d' ' -f1-2)"
for u in $UPSTREAMS; do
	if [ "$u" = s3rver ]; then
		say "s3rver:      $("$S3RVER_BIN" --version 2>&1 | first_line) (node $(node --version))"
	else
		say "nginx:       $(nginx -v 2>&1 | first_line | sed 's/^nginx version: //')"
	fi
done
say "workload:    $NKEYS objects x $OBJ_SIZE bytes ($(( NKEYS * OBJ_SIZE / 1048576 )) MiB), plain GET, keys in rotation"
say "plan:        conns [$CONNS] x $ROUNDS rounds x $DURATION s, direct/bucketcache alternating, wrk threads min(conns, $WRK_THREADS), ${WARMUP} s unrecorded warm-up per target"

# ---- objects ------------------------------------------------------------------

OBJDIR=$TMP/objects
mkdir -p "$OBJDIR"
keyname() { printf '%s%0*d' "$KEY_PREFIX" "$KEY_DIGITS" "$1"; }

note "creating $NKEYS objects of $OBJ_SIZE bytes"
head -c $(( NKEYS * OBJ_SIZE )) /dev/urandom >"$TMP/all.bin"
(cd "$OBJDIR" && split -b "$OBJ_SIZE" -d -a "$KEY_DIGITS" "$TMP/all.bin" "$KEY_PREFIX")
rm -f "$TMP/all.bin"
n=$(find "$OBJDIR" -type f | wc -l)
[ "$n" = "$NKEYS" ] || fail "split made $n objects, not $NKEYS"

# curl_all KIND BASE OUT: one request per key against BASE (KIND put: upload
# from OBJDIR; get: download to /dev/null), 8 in parallel; writes "status
# x-bucketcache url" lines to OUT.
curl_all() {
	local kind=$1 base=$2 out=$3 cfg=$TMP/curl-$1.cfg i k
	: >"$cfg"
	for ((i = 0; i < NKEYS; i++)); do
		k=$(keyname "$i")
		if [ "$kind" = put ]; then
			printf 'upload-file = "%s"\n' "$OBJDIR/$k" >>"$cfg"
		fi
		printf 'url = "%s/%s/%s"\noutput = "/dev/null"\n' "$base" "$BUCKET" "$k" >>"$cfg"
	done
	curl -sS --no-progress-meter --parallel --parallel-max 8 --max-time 60 \
	    -w '%{http_code} %header{x-bucketcache} %{url}\n' -K "$cfg" >"$out" 2>"$out.err" || true
}

# ---- upstreams ---------------------------------------------------------------

start_s3rver() {
	local dir=$TMP/s3rver-data log=$TMP/s3rver.log nodeopt='' pid port
	mkdir -p "$dir"
	# s3rver encrypts ListObjects continuation tokens with DES, which
	# OpenSSL 3 (Node 17+) only has in its legacy provider (as lib.sh).
	if node --openssl-legacy-provider -e \
	    "require('crypto').createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8))" \
	    >/dev/null 2>&1; then
		nodeopt=--openssl-legacy-provider
	fi
	for _ in 1 2 3; do
		port=$(free_port)
		NODE_OPTIONS="${NODE_OPTIONS:-} $nodeopt" "$S3RVER_BIN" --directory "$dir" \
		    --address 127.0.0.1 --port "$port" --silent \
		    --configure-bucket "$BUCKET" >>"$log" 2>&1 &
		pid=$!
		if wait_port "$port" "$pid" 20; then
			PIDS+=("$pid")
			UP_PID=$pid
			UP_URL=http://127.0.0.1:$port
			UP_DESC="s3rver $UP_URL (NODE_OPTIONS=$nodeopt $S3RVER_BIN --directory DIR --address 127.0.0.1 --port $port --silent --configure-bucket $BUCKET)"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$log" >&2
	fail "s3rver did not start"
}

start_nginx() {
	local d=$TMP/nginx pid port
	mkdir -p "$d/www/$BUCKET" "$d/tmp"
	cp "$OBJDIR"/* "$d/www/$BUCKET/"
	# run as root, nginx's workers drop to nobody: they must read the tree
	chmod 755 "$TMP" "$d" "$d/www" "$d/www/$BUCKET"
	chmod 644 "$d/www/$BUCKET"/*
	for _ in 1 2 3; do
		port=$(free_port)
		cat >"$d/nginx.conf" <<EOF
# bench_hot_get.sh: anonymous static files, BUCKET/KEY under $d/www
worker_processes auto;
error_log $d/error.log warn;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
	access_log off;
	default_type application/octet-stream;
	sendfile on;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$port;
		root $d/www;
	}
}
EOF
		nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >>"$d/stderr.log" 2>&1 &
		pid=$!
		if wait_port "$port" "$pid" 10; then
			PIDS+=("$pid")
			UP_PID=$pid
			UP_URL=http://127.0.0.1:$port
			UP_DESC="nginx $UP_URL (nginx -p DIR -c DIR/nginx.conf -g 'daemon off;': worker_processes auto, sendfile on, access_log off, otherwise defaults)"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/error.log" "$d/stderr.log" >&2 2>/dev/null || true
	fail "nginx did not start"
}

GW_N=0
start_gateway() {
	local pid port log
	GW_N=$((GW_N + 1))
	log=$TMP/gateway.$GW_N.log
	for _ in 1 2 3; do
		port=$(free_port)
		# shellcheck disable=SC2086 # GW_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "$UP_URL" \
		    --anonymous $GW_ARGS >>"$log" 2>&1 &
		pid=$!
		if wait_http "http://127.0.0.1:$port/_bucketcache/health" "$pid" 15; then
			PIDS+=("$pid")
			GW_PID=$pid
			GW_LOG=$log
			GW_URL=http://127.0.0.1:$port
			GW_DESC="AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER $BC_BIN --listen 127.0.0.1:$port --upstream $UP_URL --anonymous${GW_ARGS:+ $GW_ARGS}"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "bucketcache did not become healthy"
}

stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# stats_save FILE: the gateway's /_bucketcache/stats JSON.
stats_save() {
	curl -sf --max-time 10 "$GW_URL/_bucketcache/stats" >"$1" ||
		fail "cannot read $GW_URL/_bucketcache/stats"
}

# stats_get FILE NAME: a counter, or a dotted path, from a saved stats file.
stats_get() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
name = sys.argv[2]
if '.' not in name:
    d = d.get('counters', {}).get(name)
    if d is None:
        sys.exit('stats has no counter %r' % name)
else:
    for p in name.split('.'):
        d = d.get(p, 0) if isinstance(d, dict) else 0
print(d)
EOF
}

# ---- one wrk run --------------------------------------------------------------

# run_wrk UPSTREAM TARGET CONNS ROUND URL SECONDS: one wrk run; appends a row
# to RUNS unless ROUND is "warmup".
run_wrk() {
	local up=$1 target=$2 c=$3 round=$4 url=$5 secs=$6 t out line
	t=$WRK_THREADS
	if [ "$c" -lt "$t" ]; then
		t=$c
	fi
	out=$TMP/wrk.$up.$target.c$c.r$round.out
	BENCH_NKEYS=$NKEYS BENCH_PREFIX="/$BUCKET/$KEY_PREFIX" BENCH_KEYDIGITS=$KEY_DIGITS \
	    wrk -t"$t" -c"$c" -d"${secs}s" --timeout 10s -s "$LUA" "$url/" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "wrk failed against $url ($target, $c conns)"; }
	line=$(grep '^BENCHRESULT ' "$out" | tail -n 1)
	[ -n "$line" ] || { cat "$out" >&2; fail "no BENCHRESULT line from wrk"; }
	if [ "$round" = warmup ]; then
		return 0
	fi
	# requests bytes duration_us p50 p99 errors(connect read write status timeout)
	printf '%s\t%s\t%s\t%s\t%s\n' "$up" "$target" "$c" "$round" \
	    "$(printf '%s' "$line" | sed 's/^BENCHRESULT //; s/[a-z_0-9]*=//g; s/ /\t/g')" >>"$RUNS"
	printf '%s' "$line" | awk -v tg="$target" -v c="$c" -v r="$round" '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		e = v["err_connect"] + v["err_read"] + v["err_write"] + v["err_status"] + v["err_timeout"]
		printf "  round %s  %-11s c=%-3s %9.1f req/s %8.1f MB/s  p50 %7.2f ms  p99 %7.2f ms  errors %d%s\n",
		    r, tg, c, v["requests"] / (v["duration_us"] / 1e6),
		    v["bytes"] / (v["duration_us"] / 1e6) / 1e6,
		    v["p50_us"] / 1000, v["p99_us"] / 1000, e,
		    e ? sprintf(" (connect %d read %d write %d status %d timeout %d)",
		        v["err_connect"], v["err_read"], v["err_write"], v["err_status"], v["err_timeout"]) : ""
	}' | tee -a "$REPORT"
}

# ---- one suite: an upstream, its gateway, the measured rounds ---------------

SUMMARIES=()

suite() {
	local up=$1 out bad i k hits0 hits1 r c first second
	say ""
	say "=== upstream: $up ==="
	if [ "$up" = s3rver ]; then
		start_s3rver
		note "uploading $NKEYS objects to s3rver"
		curl_all put "$UP_URL" "$TMP/put.out"
		bad=$(awk '$1 != 200' "$TMP/put.out" | wc -l)
		n=$(wc -l <"$TMP/put.out")
		[ "$bad" = 0 ] && [ "$n" = "$NKEYS" ] ||
			{ cat "$TMP/put.out.err" >&2; head "$TMP/put.out" >&2; fail "upload to s3rver: $n answers, $bad not 200"; }
	else
		start_nginx
	fi
	say "upstream:    $UP_DESC"
	start_gateway
	say "gateway:     $GW_DESC"

	# the direct target must take the same unsigned GETs as the gateway
	k=$(keyname 0)
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$UP_URL/$BUCKET/$k") || true
	[ "$code" = 200 ] || fail "direct unsigned GET $UP_URL/$BUCKET/$k answered $code, not 200"
	say "direct:      unsigned GET $UP_URL/$BUCKET/$k -> 200 (no Authorization header needed)"

	# warm: one pass over all keys, then every key must be a hit
	note "warming the cache (pass 1 over $NKEYS keys)"
	curl_all get "$GW_URL" "$TMP/warm1.$up.out"
	bad=$(awk '$1 != 200' "$TMP/warm1.$up.out" | wc -l)
	n=$(wc -l <"$TMP/warm1.$up.out")
	[ "$bad" = 0 ] && [ "$n" = "$NKEYS" ] ||
		{ awk '$1 != 200' "$TMP/warm1.$up.out" | head >&2; fail "warm pass: $n answers, $bad not 200"; }
	stats_save "$TMP/stats-w1.$up.json"
	note "checking pass 2: every key x-bucketcache: hit"
	curl_all get "$GW_URL" "$TMP/warm2.$up.out"
	stats_save "$TMP/stats-w2.$up.json"
	bad=$(awk '$1 != 200 || $2 != "hit"' "$TMP/warm2.$up.out" | wc -l)
	if [ "$bad" != 0 ]; then
		awk '$1 != 200 || $2 != "hit"' "$TMP/warm2.$up.out" | head >&2
		fail "second GET of $bad of $NKEYS keys was not '200 x-bucketcache: hit'"
	fi
	hits0=$(stats_get "$TMP/stats-w1.$up.json" cache_hits)
	hits1=$(stats_get "$TMP/stats-w2.$up.json" cache_hits)
	[ $((hits1 - hits0)) = "$NKEYS" ] ||
		fail "cache_hits grew by $((hits1 - hits0)) over the second pass, not $NKEYS"
	say "warm:        pass 1: $NKEYS x 200; pass 2: $NKEYS x 200 'x-bucketcache: hit', cache_hits $hits0 -> $hits1 (+$NKEYS)"

	# correctness: a few objects, via the gateway and directly
	local want got_gw got_up
	for i in 0 $((NKEYS / 2)) $((NKEYS - 1)) $((RANDOM % NKEYS)); do
		k=$(keyname "$i")
		want=$(sha256sum <"$OBJDIR/$k" | cut -d' ' -f1)
		got_gw=$(curl -sf --max-time 20 "$GW_URL/$BUCKET/$k" | sha256sum | cut -d' ' -f1)
		got_up=$(curl -sf --max-time 20 "$UP_URL/$BUCKET/$k" | sha256sum | cut -d' ' -f1)
		[ "$got_gw" = "$want" ] && [ "$got_up" = "$want" ] ||
			fail "sha256 of $k: file $want, gateway $got_gw, direct $got_up"
		say "sha256:      $BUCKET/$k gateway == direct == source: ${want:0:16}..."
	done

	# the measured phase
	stats_save "$TMP/stats-before.$up.json"
	local maxc=0
	for c in $CONNS; do
		if [ "$c" -gt "$maxc" ]; then
			maxc=$c
		fi
	done
	if [ "$WARMUP" -gt 0 ]; then
		note "warm-up: $WARMUP s of $maxc conns on each target (not recorded)"
		run_wrk "$up" direct "$maxc" warmup "$UP_URL" "$WARMUP"
		run_wrk "$up" bucketcache "$maxc" warmup "$GW_URL" "$WARMUP"
	fi
	say "runs:        wrk -t min(conns,$WRK_THREADS) -c CONNS -d ${DURATION}s --timeout 10s -s $LUA URL/  (MB = 10^6 bytes as counted by wrk)"
	for ((r = 1; r <= ROUNDS; r++)); do
		for c in $CONNS; do
			if [ $((r % 2)) = 1 ]; then
				first=direct; second=bucketcache
			else
				first=bucketcache; second=direct
			fi
			for tg in $first $second; do
				note "round $r/$ROUNDS, $c conns, $tg"
				if [ "$tg" = direct ]; then
					run_wrk "$up" direct "$c" "$r" "$UP_URL" "$DURATION"
				else
					run_wrk "$up" bucketcache "$c" "$r" "$GW_URL" "$DURATION"
				fi
			done
		done
	done
	stats_save "$TMP/stats-after.$up.json"
	kill -0 "$GW_PID" 2>/dev/null || anomaly "$up: the bucketcache process died during the measured phase"

	check_stats "$up"
	gateway_log_check "$up"

	table "$up"
	stop_pid "$GW_PID"
	stop_pid "$UP_PID"
}

# check_stats UPSTREAM: gateway counters over the measured phase.
check_stats() {
	local up=$1 wrk_req
	wrk_req=$(awk -F'\t' -v u="$up" '$1 == u && $2 == "bucketcache" { s += $5 } END { print s + 0 }' "$RUNS")
	"$PY" - "$TMP/stats-before.$up.json" "$TMP/stats-after.$up.json" "$wrk_req" "$up" \
	    >"$TMP/check.$up.txt" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))
a = json.load(open(sys.argv[2]))
wrk_req = int(sys.argv[3])
up = sys.argv[4]
def c(d, n):
    return d.get('counters', {}).get(n, 0)
def op(d, o, s):
    return d.get('requests_by_op', {}).get(o, {}).get(s, 0)
names = ['requests', 'cache_hits', 'cache_misses', 'cache_partial_hits',
         'cache_fills', 'cache_revalidations', 'cache_coalesced_waits',
         'upstream_requests', 'upstream_errors', 'upstream_retries',
         'upstream_bytes_in', 'cache_bytes_upstream', 'cache_evictions',
         'cache_invalidations']
delta = {n: c(a, n) - c(b, n) for n in names}
print('gateway counters over the measured phase (warm-up included), before -> after (delta):')
for n in names:
    print('  %-22s %12d -> %12d  (%+d)' % (n, c(b, n), c(a, n), delta[n]))
g = {s: op(a, 'GetObject', s) - op(b, 'GetObject', s) for s in ('2xx', '3xx', '4xx', '5xx')}
print('  GetObject answers       2xx %+d, 3xx %+d, 4xx %+d, 5xx %+d' % (g['2xx'], g['3xx'], g['4xx'], g['5xx']))
print('  wrk-completed bucketcache requests (recorded runs): %d' % wrk_req)
bad = []
if delta['cache_misses'] or delta['cache_partial_hits']:
    bad.append('%d cache misses and %d partial hits during the measured phase'
               % (delta['cache_misses'], delta['cache_partial_hits']))
if g['4xx'] or g['5xx'] or g['3xx']:
    bad.append('GetObject answered 3xx %d, 4xx %d, 5xx %d times' % (g['3xx'], g['4xx'], g['5xx']))
if delta['cache_hits'] != g['2xx']:
    bad.append('cache_hits grew by %d but GetObject 2xx by %d: not every answer was a hit'
               % (delta['cache_hits'], g['2xx']))
if delta['cache_hits'] < wrk_req:
    bad.append('cache_hits grew by %d, fewer than the %d requests wrk completed'
               % (delta['cache_hits'], wrk_req))
if delta['upstream_bytes_in'] or delta['cache_bytes_upstream']:
    bad.append('%d bytes came from upstream (object data fetched again)' % delta['upstream_bytes_in'])
gets = delta['upstream_requests'] - delta['cache_revalidations']
if gets:
    bad.append('%d upstream requests beyond the %d metadata revalidations (upstream GETs)'
               % (gets, delta['cache_revalidations']))
print('  upstream GETs: %d; metadata revalidations (HEAD If-None-Match, --meta-ttl): %d'
      % (gets, delta['cache_revalidations']))
for x in bad:
    print('ANOMALY: %s: %s' % (up, x))
if not bad:
    print('  => every measured GET was a cache hit; no object data was fetched upstream')
EOF
	local line
	while IFS= read -r line; do
		case $line in
		ANOMALY:*) anomaly "${line#ANOMALY: }" ;;
		*) say "$line" ;;
		esac
	done <"$TMP/check.$up.txt"
	# wrk-side errors of the bucketcache runs
	awk -F'\t' -v u="$up" '$1 == u && $2 == "bucketcache" && ($12 + $13 + $14 + $15 + $16) > 0 {
		printf "%s: wrk saw errors against bucketcache, round %s, %s conns: connect %d read %d write %d status %d timeout %d\n",
		    u, $4, $3, $12, $13, $14, $15, $16 }' "$RUNS" >"$TMP/wrkerr.$up.txt"
	while IFS= read -r line; do anomaly "$line"; done <"$TMP/wrkerr.$up.txt"
}

# gateway_log_check UPSTREAM: warnings and errors the daemon logged.
gateway_log_check() {
	local up=$1 n
	n=$(grep -Ec ' (error|warn):' "$GW_LOG" || true)
	if [ "$n" -gt 0 ]; then
		say "gateway log: $n warn/error lines, first 5:"
		grep -E ' (error|warn):' "$GW_LOG" | head -n 5 | sed 's/^/  /' | tee -a "$REPORT"
		grep -Eq ' error:' "$GW_LOG" && anomaly "$up: the daemon logged errors (see above)"
	else
		say "gateway log: no warn/error lines"
	fi
	return 0
}

# table UPSTREAM: medians per (target, conns), as a Markdown table.
table() {
	local up=$1 t
	t=$("$PY" - "$RUNS" "$up" "$NKEYS" "$OBJ_SIZE" "$ROUNDS" "$DURATION" <<'EOF'
import statistics, sys
runs, up = sys.argv[1], sys.argv[2]
nkeys, size, rounds, dur = (int(x) for x in sys.argv[3:7])
rows = {}
for line in open(runs):
    f = line.rstrip('\n').split('\t')
    if f[0] != up:
        continue
    target, conns, rnd = f[1], int(f[2]), f[3]
    req, byt, dus, p50, p99 = (int(x) for x in f[4:9])
    s = dus / 1e6
    rows.setdefault((target, conns), []).append(
        dict(round=rnd, rps=req / s, mbs=byt / s / 1e6, p50=p50 / 1000, p99=p99 / 1000))
med = lambda xs: statistics.median(xs)
conns = sorted({c for (_, c) in rows})
print('hot GET, %d x %d-byte objects, upstream %s: medians of %d rounds x %d s'
      % (nkeys, size, up, rounds, dur))
print()
print('| conns | direct req/s | direct MB/s | direct p50 ms | direct p99 ms '
      '| bucketcache req/s | bucketcache MB/s | bucketcache p50 ms | bucketcache p99 ms '
      '| ratio bc/direct (req/s) | per-round ratios |')
print('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|')
summary = None
for c in conns:
    d, b = rows.get(('direct', c), []), rows.get(('bucketcache', c), [])
    if not d or not b:
        continue
    m = {k: (med([x[k] for x in d]), med([x[k] for x in b])) for k in ('rps', 'mbs', 'p50', 'p99')}
    ratio = m['rps'][1] / m['rps'][0] if m['rps'][0] else float('inf')
    dr = {x['round']: x['rps'] for x in d}
    per = sorted(x['rps'] / dr[x['round']] for x in b if dr.get(x['round']))
    print('| %d | %.0f | %.1f | %.2f | %.2f | %.0f | %.1f | %.2f | %.2f | %.1fx | %s |' % (
        c, m['rps'][0], m['mbs'][0], m['p50'][0], m['p99'][0],
        m['rps'][1], m['mbs'][1], m['p50'][1], m['p99'][1], ratio,
        ' '.join('%.1fx' % x for x in per)))
    summary = ('hot GET %s, %d conns, %s upstream: bucketcache %.0f req/s vs direct %.0f req/s (%.1fx)'
               % ('%d KiB' % (size // 1024) if size % 1024 == 0 else '%d B' % size,
                  c, up, m['rps'][1], m['rps'][0], ratio))
print()
print('SUMMARY: %s' % (summary or 'no complete runs'))
EOF
)
	say ""
	printf '%s\n' "$t" | grep -v '^SUMMARY: ' | tee -a "$REPORT"
	SUMMARIES+=("$(printf '%s\n' "$t" | sed -n 's/^SUMMARY: //p')")
}

# ---- main ------------------------------------------------------------------

T0=$(date +%s)
for u in $UPSTREAMS; do
	suite "$u"
done
say ""
say "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) (at end); wall time $(( $(date +%s) - T0 )) s"
for s in "${SUMMARIES[@]}"; do
	say "$s"
done
NANOM=$(wc -l <"$ANOMALIES")
if [ "$NANOM" -gt 0 ]; then
	say "RESULT: the daemon misbehaved ($NANOM anomalies, listed above as ANOMALY:)"
fi

if [ "$RESULTS" != none ]; then
	if [ ! -s "$RESULTS" ]; then
		cat >"$RESULTS" <<'EOF'
# bucketcache benchmark results

Blocks appended by `tests/bench/bench_hot_get.sh` (hot GETs of small
objects, bucketcache with a warm cache vs the upstream it fronts, measured
with wrk). Newest last. Each block holds the machine, versions, exact command,
checks, every run and the table of medians.
EOF
	fi
	{
		echo ""
		echo "## $(date -u '+%Y-%m-%d %H:%M UTC') — bench_hot_get.sh"
		echo ""
		for s in "${SUMMARIES[@]}"; do
			echo "**$s**"
			echo ""
		done
		if [ "$NANOM" -gt 0 ]; then
			echo "**The daemon misbehaved: $NANOM anomalies, see the ANOMALY lines.**"
			echo ""
		fi
		# the tables as Markdown, everything else as preformatted text
		awk '
			/^\|/ { if (pre) { print "```"; print ""; pre = 0 } blanks = 0; print; aftertable = 1; next }
			!NF { blanks++; next }
			!pre { if (aftertable) print ""; print "```text"; pre = 1; aftertable = 0; blanks = 0 }
			{ for (; blanks > 0; blanks--) print ""; print }
			END { if (pre) print "```" }
		' "$REPORT"
	} >>"$RESULTS"
	note "appended the results to $RESULTS"
fi
[ "$NANOM" = 0 ] || exit 1
exit 0
