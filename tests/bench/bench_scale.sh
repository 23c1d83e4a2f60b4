#!/bin/bash
# bench_scale.sh — the benchmark of self-sizing memory (issue 13): does
# `--mem-size auto` give a training job the epoch times of a cache that
# holds its whole dataset, with less memory?
#
#   sh tests/bench/bench_scale.sh          (bash inside; ~4 min by default)
#
# Not part of `make check`. It uses a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), and:
#
#   1. starts, on free loopback ports, an origin and in front of it
#      tests/bench/training/delay_proxy.py, +BENCH_DELAY_MS per request and
#      --rate BENCH_B (one token bucket on response bodies: the origin's
#      bandwidth B). The dataset is BENCH_NOBJ objects of BENCH_OBJ_SIZE
#      bytes, scale/ds/k00000.bin ... (tests/integration/fixture/
#      consumer.py's deterministic content); D = BENCH_NOBJ *
#      BENCH_OBJ_SIZE. BENCH_ORIGIN says which origin:
#        nginx   (the default) a static nginx serving the dataset, written
#                once into BENCH_DATA (consumer.py --gen) and reused;
#        s3rver  test_scale.sh's chain: s3rver (tests/integration/
#                node_modules; `npm ci --prefix tests/integration`) behind
#                the SigV4-verifying fixture (tests/integration/fixture/
#                verify_proxy.py), the dataset uploaded through it.
#      nginx is the default because the s3rver chain is slow for this
#      benchmark's B: on 2 cores, a cold epoch through the gateway with
#      no --rate went at 42 MiB/s with 4 readers (47 with 8), so with
#      B = 32 MiB/s its own latency and CPU, not the rate, would shape the
#      fills (a cold epoch at --rate 32M went at 23 MiB/s); with nginx,
#      125 MiB/s (173), so B is what the proxy's rate says;
#   2. for each run of BENCH_RUNS, one after the other, each with a fresh
#      gateway (cold):
#        PCT   bucketcache --mem-size (PCT% of D) (fixed)
#        auto  bucketcache --mem-size auto --mem-max BENCH_AUTO_MAX
#      both with --upstream (the delay proxy) --anonymous --chunk-size
#      BENCH_CHUNK and BENCH_BC_ARGS; one job reads the dataset for
#      BENCH_EPOCHS shuffled epochs (fixture/consumer.py --workers
#      BENCH_WORKERS --rate BENCH_R: each epoch at R while not waiting on
#      the origin, the same orders in every run), while a sampler reads the
#      gateway's VmRSS (/proc/PID/status) and its memory bound every 200 ms
#      (limit_bytes, held_bytes, target_bytes of /_bucketcache/v1/scale;
#      cache_bytes_limit and cache_bytes_held of /stats where the binary
#      has no /v1/scale);
#   3. prints, runs side by side, and writes to BENCH_RESULTS (Markdown)
#      with a CSV beside it (one row per run and epoch): the machine
#      (nproc, RAM, kernel), the command, git HEAD, the chain; per run
#      epoch seconds, the mean of epochs 2+, hit ratio of epochs 2+, peak
#      VmRSS, the mean and final limit_bytes (the bound in force while the
#      job ran; fixed runs: --mem-size), and the ratios to the reference run
#      BENCH_REF (default 110: 100% of D plus room for the per-entry
#      overhead; mean of epochs 2+ and peak VmRSS); then the goal: auto's
#      epochs 2+ within +-10% of the reference's, at less peak VmRSS (at
#      most 0.95x, beyond noise), PASS or MISS with the numbers.
#
# With every read a hit, an epoch takes D/R (1024 x 256 KiB at 64 MiB/s:
# 4 s); with a cache of C bytes kept across epochs (pin) the job can go no
# faster than B/(1 - C/D), so the smallest cache without stalls is
# D*(1 - B/R) = 128 MiB by default (plus a prefetch window): what auto
# should find, half the reference's memory.
#
# A run whose flags the binary refuses at start (`--mem-size auto` before
# issue 13) is "n/a" with the daemon's message, not an error.
#
# Everything it starts is stopped, and its temp dir removed, on exit
# (trap), whatever the exit status. Exit status: 0 done, the goal met; 3
# the goal missed (or auto n/a); 1 setup or a run failed (a read returned
# wrong bytes, the gateway died); 2 bad usage; 77 a tool is missing.
#
# Environment (defaults in brackets):
#   BC_BIN             daemon binary [<srcdir>/build/bucketcache]
#   BENCH_NOBJ         objects in the dataset [1024]
#   BENCH_OBJ_SIZE     bytes per object, K/M suffixes [256K]
#   BENCH_B            the origin's bandwidth, bytes/s (K/M/G) [32M]
#   BENCH_R            the job's consumption rate, bytes/s (K/M/G) [64M]
#   BENCH_DELAY_MS     delay per origin request, ms [1]
#   BENCH_ORIGIN       nginx or s3rver [nginx]
#   BENCH_DATA         where the nginx origin's dataset is kept
#                      [/tmp/bc-scale-data]
#   BENCH_EPOCHS       epochs per run [4]
#   BENCH_WORKERS      the job's reader threads [4]
#   BENCH_PLAN         1: the job posts each epoch's order as its plan
#                      (consumer.py --plan), so the gateway prefetches
#                      ahead of it [0]
#   BENCH_RUNS         runs, in this order: percentages of D (fixed
#                      --mem-size) and "auto" ["25 50 100 110 auto"]
#   BENCH_REF          the reference run (a percentage in BENCH_RUNS) [110]
#   BENCH_AUTO_MAX     auto's --mem-max [1G]
#   BENCH_AUTO_MIN     auto's --mem-min [not given: the daemon's, 64M]
#   BENCH_CHUNK        --chunk-size [1M]
#   BENCH_SEED         the job's shuffle seed [1]
#   BENCH_BC_ARGS      extra bucketcache flags, word-split [none]
#   BENCH_TIMEOUT      seconds one run's job may take [900]
#   BENCH_RESULTS      Markdown results file, or "none"
#                      [tests/bench/results/scale.md; the CSV beside it]
#   BENCH_KEEP_TMP     1: keep the temp dir (logs, samples, JSON) [0]

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
IT=$SRCDIR/tests/integration
PY=/usr/bin/python3
ME=bench_scale.sh

BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
NOBJ=${BENCH_NOBJ:-1024}
OBJ_SIZE_S=${BENCH_OBJ_SIZE:-256K}
B_S=${BENCH_B:-32M}
R_S=${BENCH_R:-64M}
DELAY_MS=${BENCH_DELAY_MS:-1}
ORIGIN=${BENCH_ORIGIN:-nginx}
DATA_ROOT=${BENCH_DATA:-/tmp/bc-scale-data}
EPOCHS=${BENCH_EPOCHS:-4}
WORKERS=${BENCH_WORKERS:-4}
PLAN=${BENCH_PLAN:-0}
RUNS=${BENCH_RUNS:-25 50 100 110 auto}
REF=${BENCH_REF:-110}
AUTO_MAX=${BENCH_AUTO_MAX:-1G}
AUTO_MIN=${BENCH_AUTO_MIN:-}
CHUNK=${BENCH_CHUNK:-1M}
SEED=${BENCH_SEED:-1}
BC_ARGS=${BENCH_BC_ARGS:-}
TIMEOUT=${BENCH_TIMEOUT:-900}
RESULTS=${BENCH_RESULTS:-$BENCH_DIR/results/scale.md}
BUCKET=scale
PREFIX=ds/

# The exact command line: the script plus every setting given in the
# environment, so that the run can be repeated as it was.
cmdline() {
	local v out=
	for v in BC_BIN BENCH_NOBJ BENCH_OBJ_SIZE BENCH_B BENCH_R BENCH_DELAY_MS \
	    BENCH_ORIGIN BENCH_DATA \
	    BENCH_EPOCHS BENCH_WORKERS BENCH_PLAN BENCH_RUNS BENCH_REF BENCH_AUTO_MAX BENCH_AUTO_MIN \
	    BENCH_CHUNK BENCH_SEED BENCH_BC_ARGS BENCH_TIMEOUT BENCH_RESULTS \
	    BENCH_KEEP_TMP; do
		if [ -n "${!v+set}" ]; then
			out+="$v=$(printf '%q' "${!v}") "
		fi
	done
	printf '%ssh %s' "$out" "tests/bench/$ME"
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
OBJ_SIZE=$(bytes "$OBJ_SIZE_S") && [ "$OBJ_SIZE" -ge 1 ] || die_usage "BENCH_OBJ_SIZE must be a size (256K, 1M, ...)"
B=$(bytes "$B_S") && [ "$B" -ge 1 ] || die_usage "BENCH_B must be a rate in bytes/s (32M, ...)"
R=$(bytes "$R_S") && [ "$R" -ge 1 ] || die_usage "BENCH_R must be a rate in bytes/s (64M, ...)"
bytes "$AUTO_MAX" >/dev/null || die_usage "BENCH_AUTO_MAX must be a size"
[ -z "$AUTO_MIN" ] || bytes "$AUTO_MIN" >/dev/null || die_usage "BENCH_AUTO_MIN must be a size"
bytes "$CHUNK" >/dev/null || die_usage "BENCH_CHUNK must be a size"
is_uint "$NOBJ" && [ "$NOBJ" -ge 1 ] && [ "$NOBJ" -le 100000 ] || die_usage "BENCH_NOBJ must be 1..100000"
is_uint "$DELAY_MS" && [ "$DELAY_MS" -le 60000 ] || die_usage "BENCH_DELAY_MS must be 0..60000"
is_uint "$EPOCHS" && [ "$EPOCHS" -ge 2 ] && [ "$EPOCHS" -le 100 ] || die_usage "BENCH_EPOCHS must be 2..100 (epochs 2+ are measured)"
is_uint "$WORKERS" && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 64 ] || die_usage "BENCH_WORKERS must be 1..64"
case $PLAN in 0) PLAN_ARG= ;; 1) PLAN_ARG=--plan ;; *) die_usage "BENCH_PLAN must be 0 or 1" ;; esac
is_uint "$SEED" || die_usage "BENCH_SEED must be a number"
is_uint "$TIMEOUT" && [ "$TIMEOUT" -ge 10 ] || die_usage "BENCH_TIMEOUT must be >= 10 (seconds)"
[ -n "${RUNS// /}" ] || die_usage "BENCH_RUNS is empty"
for r in $RUNS; do
	[[ $r =~ ^([0-9]+|auto)$ ]] && [ "$r" != 0 ] || die_usage "BENCH_RUNS: [$r] is neither a percentage nor auto"
done
# shellcheck disable=SC2086 # one run a line
[ "$(printf '%s\n' $RUNS | sort | uniq -d)" = "" ] || die_usage "BENCH_RUNS names a run twice"
case " $RUNS " in
*" $REF "*) [ "$REF" != auto ] || die_usage "BENCH_REF must be a fixed run" ;;
*) die_usage "BENCH_REF=$REF is not in BENCH_RUNS" ;;
esac
case $ORIGIN in nginx | s3rver) ;; *) die_usage "BENCH_ORIGIN must be nginx or s3rver" ;; esac
case $DATA_ROOT in /*) ;; *) die_usage "BENCH_DATA must be an absolute path" ;; esac
D=$((NOBJ * OBJ_SIZE))

# ---- tools ------------------------------------------------------------------

for t in curl timeout $([ "$ORIGIN" = nginx ] && echo nginx || echo node); do
	command -v "$t" >/dev/null 2>&1 || { echo "$ME: $t not found" >&2; exit 77; }
done
[ -x "$PY" ] || { echo "$ME: $PY not found" >&2; exit 77; }
S3RVER=$IT/node_modules/.bin/s3rver
if [ "$ORIGIN" = s3rver ]; then
	"$PY" -c 'import boto3, botocore' 2>/dev/null ||
		{ echo "$ME: $PY lacks boto3 (apt-get install python3-boto3)" >&2; exit 77; }
	[ -x "$S3RVER" ] ||
		{ echo "$ME: s3rver is not installed; run: npm ci --prefix tests/integration" >&2; exit 77; }
fi
for f in "$IT/fixture/verify_proxy.py" "$IT/fixture/consumer.py" \
    "$BENCH_DIR/training/delay_proxy.py" "$BENCH_DIR/training/scale_report.py"; do
	[ -f "$f" ] || { echo "$ME: $f missing" >&2; exit 1; }
done

# ---- processes and cleanup --------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-scale.XXXXXX")
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

say() { printf '%s\n' "$*" | tee -a "$HEADER"; }
note() { printf '# %s\n' "$*" >&2; }
fail() {
	echo "$ME: FAILED: $*" >&2
	exit 1
}

bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" || fail "building build/bucketcache failed"
[ -x "$BC_BIN" ] || fail "BC_BIN=$BC_BIN is not an executable"

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
say "python:      $("$PY" -c 'import sys; print("python %s" % sys.version.split()[0])') ($PY)"

# ---- the origin and the delay proxy ---------------------------------------------

# start_nginx_origin: a static nginx serving DATA (as BUCKET/KEY); sets UP,
# UP_DESC.
start_nginx_origin() {
	local d=$TMP/nginx pid port
	mkdir -p "$d/tmp"
	chmod 755 "$TMP" "$d"   # run as root, nginx's workers are nobody
	for _ in 1 2 3; do
		port=$(free_port)
		cat >"$d/nginx.conf" <<EOF
# bench_scale.sh: the origin
worker_processes auto;
error_log $d/error.log warn;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
	default_type application/octet-stream;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	access_log off;
	sendfile on;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:$port;
		root $DATA;
		location = /_ping { return 200 "ok\n"; }
	}
}
EOF
		nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >>"$d/stderr.log" 2>&1 &
		pid=$!
		if wait_http "http://127.0.0.1:$port/_ping" "$pid" 10; then
			PIDS+=("$pid")
			UP=http://127.0.0.1:$port
			UP_DESC="nginx $(nginx -v 2>&1 | sed 's/^nginx version: //') ($UP, static files of $DATA: sendfile, keep-alive, ETag and Range)"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/error.log" "$d/stderr.log" >&2 2>/dev/null || true
	fail "nginx did not start"
}

# start_s3rver_origin: s3rver behind the verifying fixture, the dataset
# uploaded through it; sets UP, UP_DESC.
start_s3rver_origin() {
	local nodeopt='' s3port fx t0
	mkdir -p "$TMP/s3rver"
	if node --openssl-legacy-provider -e "require('crypto')" >/dev/null 2>&1; then
		nodeopt=--openssl-legacy-provider
	fi
	s3port=$(free_port)
	NODE_OPTIONS="${NODE_OPTIONS:-} $nodeopt" "$S3RVER" --directory "$TMP/s3rver" \
	    --address 127.0.0.1 --port "$s3port" --silent >"$TMP/s3rver.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 200); do
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$s3port/" && break
		kill -0 "${PIDS[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$s3port/" ||
		{ cat "$TMP/s3rver.log" >&2; fail "s3rver did not start"; }
	"$PY" "$IT/fixture/verify_proxy.py" --upstream "127.0.0.1:$s3port" --port 0 \
	    --port-file "$TMP/fixture.port" >"$TMP/fixture.log" 2>&1 &
	PIDS+=($!)
	wait_port_file "$TMP/fixture.port" "${PIDS[-1]}" || { cat "$TMP/fixture.log" >&2; fail "the fixture did not start"; }
	fx=http://127.0.0.1:$(cat "$TMP/fixture.port")
	note "uploading $NOBJ objects of $OBJ_SIZE bytes ($(mib "$D")) through the fixture"
	t0=$(date +%s)
	AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
	"$PY" - "$IT/fixture" "$fx" "$BUCKET" "$PREFIX" "$NOBJ" "$OBJ_SIZE" <<'EOF' || fail "the upload failed"
import sys
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, sys.argv[1])
import boto3
from botocore.config import Config
import consumer
fx, bucket, prefix, n, size = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
c = boto3.client("s3", endpoint_url=fx, region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"},
                               retries={"total_max_attempts": 1},
                               max_pool_connections=16))
c.create_bucket(Bucket=bucket)
def put(i):
    k = consumer.key_name(prefix, i)
    c.put_object(Bucket=bucket, Key=k, Body=consumer.content(k, size))
with ThreadPoolExecutor(8) as ex:
    list(ex.map(put, range(n)))
got = sum(1 for p in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
          for o in p.get("Contents", []) if o["Size"] == size)
if got != n:
    sys.exit("listed %d objects of %d bytes, want %d" % (got, size, n))
EOF
	note "uploaded in $(($(date +%s) - t0)) s"
	UP=$fx
	UP_DESC="s3rver $(node -e 'console.log(require(process.argv[1]).version)' "$IT/node_modules/s3rver/package.json" 2>/dev/null || echo '?') (127.0.0.1:$s3port) -> verify_proxy.py ($fx, SigV4 checked)"
}

if [ "$ORIGIN" = nginx ]; then
	DATA=$DATA_ROOT/n$NOBJ-s$OBJ_SIZE
	mkdir -p "$DATA"
	chmod 755 "$DATA_ROOT" "$DATA"
	note "the dataset in $DATA (written once, then reused; checking it)"
	"$PY" "$IT/fixture/consumer.py" --gen "$DATA" --bucket "$BUCKET" --prefix "$PREFIX" \
	    --objects "$NOBJ" --size "$OBJ_SIZE" || fail "consumer.py --gen $DATA failed"
	chmod -R a+rX "$DATA"
	start_nginx_origin
else
	start_s3rver_origin
fi

"$PY" "$BENCH_DIR/training/delay_proxy.py" --upstream "$UP" --delay-ms "$DELAY_MS" \
    --rate "$B" --port-file "$TMP/proxy.port" >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
wait_port_file "$TMP/proxy.port" "$PROXY_PID" || { cat "$TMP/proxy.log" >&2; fail "delay_proxy.py did not start"; }
PROXY=http://127.0.0.1:$(cat "$TMP/proxy.port")
wait_http "$PROXY/_delayproxy/stats" "$PROXY_PID" 10 || fail "delay_proxy.py does not answer"

say "origin:      $UP_DESC -> delay_proxy.py ($PROXY: +$DELAY_MS ms per request, --rate $B_S = $B bytes/s over all connections, burst 8 KiB)"
say "dataset:     s3://$BUCKET/${PREFIX}k00000.bin .. k$(printf '%05d' $((NOBJ - 1))).bin: $NOBJ x $OBJ_SIZE bytes, D = $D bytes ($(mib "$D")); the gateway's dataset \"$BUCKET/$PREFIX\""
say "job:         tests/integration/fixture/consumer.py --workers $WORKERS --rate $R_S ($R bytes/s while not waiting; a read over 10 ms stalled) --epochs $EPOCHS --seed $SEED${PLAN_ARG:+ $PLAN_ARG (each epoch's order posted as the job's plan)}, x-bucketcache-job: bench; every body checked"
say "model:       all hits: an epoch is D/R = $(awk -v d="$D" -v r="$R" 'BEGIN { printf "%.2f", d / r }') s; no stall needs D*(1-B/R) = $(awk -v d="$D" -v r="$R" -v b="$B" 'BEGIN { x = d * (1 - b / r); if (x < 0) x = 0; printf "%d bytes (%.1f MiB)", x, x / 1048576 }') (+ a prefetch window); epoch 1 is no faster than D/B = $(awk -v d="$D" -v b="$B" 'BEGIN { printf "%.2f", d / b }') s"

# ---- the runs -------------------------------------------------------------------

cat >"$TMP/sampler.py" <<'EOF'
# sampler.py GW PID OUT: every 200 ms, "t rss_kib limit held target" (-1:
# unknown) appended to OUT, until SIGTERM.
import json, signal, sys, time, urllib.error, urllib.request
gw, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
def get(path):
    with urllib.request.urlopen(gw + path, timeout=1) as f:
        return json.load(f)
scale = True
with open(out, "a", buffering=1) as f:
    nxt = time.monotonic()
    while not stop:
        try:
            with open("/proc/%d/status" % pid) as st:
                rss = next(int(l.split()[1]) for l in st if l.startswith("VmRSS:"))
        except (OSError, StopIteration):
            break
        lim = held = tgt = -1
        try:
            if scale:
                try:
                    s = get("/_bucketcache/v1/scale")
                    lim, held, tgt = s["limit_bytes"], s["held_bytes"], s.get("target_bytes", -1)
                except urllib.error.HTTPError as e:
                    if e.code != 404:
                        raise
                    scale = False
            if not scale:
                c = get("/_bucketcache/stats")["counters"]
                lim, held = c["cache_bytes_limit"], c["cache_bytes_held"]
        except Exception:
            pass
        f.write("%.3f %d %d %d %d\n" % (time.time(), rss, lim, held, tgt))
        nxt += 0.2
        time.sleep(max(0.0, nxt - time.monotonic()))
EOF

# start_gw LABEL FLAGS...: sets GW_PID, GW_URL, GW_DESC; returns 3 with
# GW_REFUSED when the daemon exits at once naming the first flag.
start_gw() {
	local label=$1 port pid log
	shift
	log=$TMP/$label.gateway.log
	GW_REFUSED=
	for _ in 1 2 3; do
		port=$(free_port)
		# shellcheck disable=SC2086 # BC_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "$PROXY" \
		    --anonymous --chunk-size "$CHUNK" "$@" $BC_ARGS >>"$log" 2>&1 &
		pid=$!
		if wait_http "http://127.0.0.1:$port/_bucketcache/health" "$pid" 15; then
			PIDS+=("$pid")
			GW_PID=$pid
			GW_URL=http://127.0.0.1:$port
			GW_DESC="$BC_BIN --listen 127.0.0.1:$port --upstream $PROXY --anonymous --chunk-size $CHUNK $*${BC_ARGS:+ $BC_ARGS}"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		if grep -q -- "$1" "$log"; then
			GW_REFUSED=$(grep -- "$1" "$log" | head -n 1)
			return 3
		fi
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "$label: bucketcache did not become healthy"
}

stop_pid() { tl_stop_pids "$1"; }

REPORT_ARGS=()
T0=$(date +%s)
for run in $RUNS; do
	if [ "$run" = auto ]; then
		label=auto
		flags=(--mem-size auto --mem-max "$AUTO_MAX" ${AUTO_MIN:+--mem-min "$AUTO_MIN"})
		memdesc="auto (--mem-max $AUTO_MAX${AUTO_MIN:+, --mem-min $AUTO_MIN})"
	else
		label=$run%
		mem=$((D * run / 100))
		flags=(--mem-size "$mem")
		memdesc="$mem ($run% of D)"
	fi
	note "run $label: --mem-size $memdesc"
	src=0
	start_gw "run$run" "${flags[@]}" || src=$?
	if [ "$src" = 3 ]; then
		say "run $label: n/a: ${flags[*]}: $GW_REFUSED"
		REPORT_ARGS+=(--na "$label=${flags[*]}: $GW_REFUSED")
		continue
	fi
	say "run $label: $GW_DESC"
	"$PY" "$TMP/sampler.py" "$GW_URL" "$GW_PID" "$TMP/run$run.samples" &
	SPID=$!
	PIDS+=("$SPID")
	rc=0
	timeout -k 10 "$TIMEOUT" "$PY" "$IT/fixture/consumer.py" --endpoint "$GW_URL" \
	    --bucket "$BUCKET" --prefix "$PREFIX" --objects "$NOBJ" --size "$OBJ_SIZE" \
	    --rate "$R" --epochs "$EPOCHS" --workers "$WORKERS" --job bench \
	    --seed "$SEED" --out "$TMP/run$run.json" ${PLAN_ARG:+"$PLAN_ARG"} 2>&1 | sed -u "s/^/# [$label] /" >&2 ||
		rc=$?   # pipefail: the job's status (sed does not fail)
	sleep 0.5   # a last sample or two after the job's end
	stop_pid "$SPID"
	curl -sf --max-time 10 "$GW_URL/_bucketcache/v1/scale" >"$TMP/run$run.scale.json" 2>/dev/null ||
		rm -f "$TMP/run$run.scale.json"
	curl -sf --max-time 10 "$GW_URL/_bucketcache/stats" >"$TMP/run$run.stats.json" || true
	kill -0 "$GW_PID" 2>/dev/null || fail "run $label: bucketcache died during the run (log: $TMP/run$run.gateway.log)"
	stop_pid "$GW_PID"
	[ "$rc" = 0 ] || fail "run $label: the job failed (exit $rc; 124: over BENCH_TIMEOUT=$TIMEOUT s)"
	n=$(grep -Ec ' (error|warn):' "$TMP/run$run.gateway.log" || true)
	say "run $label: gateway log: $(wc -l <"$TMP/run$run.gateway.log") lines, $n warn/error"
	REPORT_ARGS+=(--run "$label=$TMP/run$run.json,$TMP/run$run.samples,${flags[*]}")
	if [ -f "$TMP/run$run.scale.json" ]; then
		REPORT_ARGS+=(--scale "$label=$TMP/run$run.scale.json")
	fi
done
say "proxy:       $(curl -sf "$PROXY/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%d requests, %.1f MiB of bodies, %d errors, at most %d client connections at once, %.0f s waited for tokens in all" % (
    d["requests"], d["resp_body_bytes"] / 1048576, d["errors"], d["conns_max"], d["throttle_wait_seconds"]))')"
say "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) (at end); the runs took $(($(date +%s) - T0)) s"

# ---- the report -------------------------------------------------------------------

if [ "$RESULTS" = none ]; then
	MD=$TMP/scale.md
else
	mkdir -p "$(dirname "$RESULTS")"
	MD=$RESULTS
fi
rc=0
"$PY" "$BENCH_DIR/training/scale_report.py" "${REPORT_ARGS[@]}" --ref "$REF%" \
    --d "$D" --b "$B" --r "$R" --header "$HEADER" --md "$MD.tmp" \
    --csv "${MD%.md}.csv" || rc=$?
[ -s "$MD.tmp" ] || fail "scale_report.py wrote no report"
mv "$MD.tmp" "$MD"
if [ "$RESULTS" != none ]; then
	note "wrote $MD and ${MD%.md}.csv"
fi
exit "$rc"
