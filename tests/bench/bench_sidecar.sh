#!/bin/bash
# bench_sidecar.sh — issue 25's targets in one table: bucketcache as a
# sidecar (a 32-256 MiB memory tier, 8 readers) in front of an S3-shaped
# origin, its first epoch apart from the later ones, side by side with the
# baseline (direct reads from the origin, no cache) and the peer (nginx
# proxy_cache with slice 8m, the same memory bound), measured in one run:
#
#   tests/bench/bench_sidecar.sh            # the table: ~8 min on 2 cores
#   tests/bench/bench_sidecar.sh --quick    # smoke run: ~5 min
#   BENCH_SECTIONS="epochs stream" tests/bench/bench_sidecar.sh --quick
#
# Not part of `make check`. It measures a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), started fresh
# (cold) for every run with --anonymous --mem-size SIZE and otherwise its
# defaults unless said below (BENCH_BC_ARGS adds flags to every run).
#
# The origin (started once, shared by every system; each system's client
# connections are its own, so the per-connection caps apply to each):
#   a static nginx serving BENCH_DATA/www as BUCKET/KEY (sendfile, Range,
#   ETag), behind tests/bench/training/delay_proxy.py BENCH_PROXY_ARGS
#   (default --s3: 20 ms before a request is forwarded, 20 ms before its
#   answer's head comes back, each client connection paced at 32 MiB/s by
#   the kernel, the aggregate growing with connections: S3's shape). The
#   proxy's counters are the ground truth of upstream requests and bytes.
# The systems:
#   direct       the client reads the delay proxy itself: the baseline
#   bucketcache  BC_BIN --anonymous --mem-size M --upstream PROXY [flags]
#   nginx        nginx proxy_cache, slice 8m, $slice_range in the key,
#                proxy_cache_lock, keepalive upstream, max_size M, cache
#                files on /dev/shm: the peer (it bounds its cache only when
#                its cache manager runs, about every 10 s, so it overshoots)
#
# Sections (BENCH_SECTIONS, default "epochs stream small training"):
#   epochs   (a) shuffled epochs over BENCH_SMALL objects (2000 x 64 KiB),
#            BENCH_READERS (8) reader threads, one kept-alive connection
#            each, no hints, the same orders for every system: hit ratio
#            per epoch (by each response's cache header; the gateway's
#            counters beside it) and epoch seconds, epoch 1 on its own row;
#            bucketcache --mem-size BENCH_MEM (64M, default flags) and nginx
#            max_size BENCH_MEM for BENCH_EPOCHS epochs, direct for 2 (1
#            quick; direct has no cache: its epochs differ by noise only).
#            Target: every epoch from 2 on >= 0.48 (the ceiling 64 MiB /
#            125 MiB = 0.512). Then the reservations matrix, bucketcache only
#            (issue 25 item 1: "test at 32, 64 and 256 MiB with 8 and 32
#            cold readers and prefetch concurrency 32"): each BENCH_MATRIX
#            cell MEM:READERS with BENCH_MATRIX_ARGS (--prefetch-concurrency
#            32) for BENCH_MATRIX_EPOCHS epochs, and direct at 32 readers;
#            no target of their own: hit ratio per epoch and the share of
#            the ceiling min(1, MEM / set) they reach.
#   stream   (b) one BENCH_STREAM_SIZE (256 MiB) object read by one stream
#            (one GET): seconds direct, through a cold bucketcache
#            (--mem-size BENCH_STREAM_MEM, 256M) and through a cold nginx
#            slice cache (max_size the same); BENCH_STREAM_ROUNDS rounds in
#            a rotated order, medians. Target: bucketcache >= 6x direct.
#            Beside it, once, what this origin gives on this machine to a
#            reader in parallel: direct, BENCH_STREAM_RANGES (8) ranged GETs
#            of the object's parts at once, one connection each (the
#            ceiling any gateway's read window can reach here).
#   small    (c) BENCH_MID objects (600 x 256 KiB) read once, cold, by 8
#            kept-alive readers, no hints: direct, a cold bucketcache
#            (--mem-size BENCH_MID_MEM, 64M), a cold nginx; BENCH_MID_ROUNDS
#            rounds, medians. Target: bucketcache >= 1.0x direct.
#   training (d) bench_training.sh BENCH_PROFILE=sidecar (its results beside
#            ours: RESULTS without .md + -training.md): a PyTorch DataLoader
#            (1 job, 8 workers) over shuffled epochs, the same S3-shaped
#            origin, --mem-size 64M; direct, nginx, bucketcache and
#            bucketcache-plans (the job posts each epoch's plan before the
#            epoch's first GET, epoch 1 included). Target: bucketcache-plans'
#            epoch-1 data wait >= 80% below direct's.
#   (e) memory, from every gateway run of every section: VmRSS and the
#       gateway's held bytes (cache_bytes_held and the memory tier's
#       usage_bytes, /_bucketcache/stats) sampled every 0.2 s while it ran.
#       Target: held <= --mem-size in every sample; the largest VmRSS is
#       reported.
#
# Output: progress lines on stderr (every run, every epoch, every 10 s of a
# long epoch); on stdout the header (date, command, machine: nproc, CPU,
# memory, load average at start; the binary and git HEAD; the origin, the
# baseline and the peer) and the table: one row per measure with direct,
# bucketcache, nginx, bucketcache's ratios to both, the target and PASS,
# MISS or n/a; then the load average at the end and the run's duration. The
# same goes to BENCH_RESULTS (Markdown, with every run's details) and a CSV
# beside it.
#
# Exit status: 0 every target met; 3 a target missed; 1 setup failed or a
# run failed (a body read wrong, a daemon died); 2 usage; 77 a package is
# missing and we are not root to install it.
#
# Environment (full defaults; --quick or BENCH_QUICK=1 in brackets):
#   BC_BIN               daemon binary [<srcdir>/build/bucketcache]
#   BENCH_SECTIONS       "epochs stream small training"
#   BENCH_MEM            (a) the main row's --mem-size and nginx max_size: 64M
#   BENCH_READERS        (a) readers: 8
#   BENCH_SMALL          (a) the set, COUNT:SIZE: 2000:64K
#   BENCH_EPOCHS         (a) epochs of the main row: 4 [3]
#   BENCH_MATRIX         (a) cells MEM:READERS: "32M:8 32M:32 64M:32 256M:8
#                        256M:32" (64M:8 too when the binary's default
#                        --prefetch-concurrency is not 32) ["32M:32 256M:32"]
#   BENCH_MATRIX_ARGS    (a) the cells' flags: "--prefetch-concurrency 32"
#   BENCH_MATRIX_EPOCHS  (a) 3 [2]
#   BENCH_STREAM_SIZE    (b) 256M
#   BENCH_STREAM_MEM     (b) 256M
#   BENCH_STREAM_ROUNDS  (b) 2 [1]
#   BENCH_STREAM_RANGES  (b) the parallel reads of the ceiling row: 8
#   BENCH_MID            (c) COUNT:SIZE: 600:256K
#   BENCH_MID_MEM        (c) 64M
#   BENCH_MID_ROUNDS     (c) 3 [1]
#   BENCH_TRAINING_ENV   (d) more VAR=VALUE words for bench_training.sh
#                        (e.g. "BENCH_NOBJ=1000"): none
#   BENCH_PROXY_ARGS     delay_proxy.py's flags: "--s3"
#   BENCH_BC_ARGS        more flags for every bucketcache run: none
#   BENCH_WAIT_LOAD      wait (at most BENCH_WAIT_MAX s, 600) until the
#                        1-minute load average is below this before starting
#                        (a shared machine): none
#   BENCH_DATA           where the objects are kept (made once, reused):
#                        /tmp/bc-sidecar-data
#   BENCH_TIMEOUT        the whole run is stopped after this many s: 2400 [1200]
#   BENCH_RESULTS        Markdown results file, or "none"
#                        [tests/bench/results/sidecar.md / sidecar-quick.md]
#   BENCH_KEEP_TMP       1: keep the temp dir (logs, JSON) [0]
#
# The machine is shared and noisy: every server and client shares its
# CPUs with other work, which shows in the load average (recorded at start
# and end). Read the ratios measured in the same run, not absolute numbers.

# shellcheck disable=SC2015,SC2317 # A && B || fail; cleanup runs from trap
set -euo pipefail
export LC_ALL=C
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY || true
PATH=$PATH:/usr/sbin:/sbin

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/lib_bench.sh
. "$BENCH_DIR/lib_bench.sh"
SRCDIR=$(cd "$BENCH_DIR/../.." && pwd)
PY=$BENCH_PY
HELPER=$BENCH_DIR/bench_sidecar.py
ME=bench_sidecar.sh
# shellcheck disable=SC2034 # read by lib_bench.sh
BENCH_ME=$ME
T_START=$(date +%s)

QUICK=${BENCH_QUICK:-0}
for arg in "$@"; do
	case $arg in
	--quick) QUICK=1 ;;
	-h | --help)
		sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	*)
		echo "$ME: unknown argument [$arg] (--quick, --help)" >&2
		exit 2
		;;
	esac
done
if [ "$QUICK" = 1 ]; then
	d_epochs=3 d_matrix="32M:32 256M:32" d_matrix_epochs=2 d_stream_rounds=1 d_mid_rounds=1
	d_timeout=1200 d_results=$BENCH_DIR/results/sidecar-quick.md d_direct_epochs=1
else
	d_epochs=4 d_matrix="32M:8 32M:32 64M:32 256M:8 256M:32" d_matrix_epochs=3
	d_stream_rounds=2 d_mid_rounds=3 d_timeout=2400 d_results=$BENCH_DIR/results/sidecar.md
	d_direct_epochs=2
fi
BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
SECTIONS=${BENCH_SECTIONS:-epochs stream small training}
MEM=${BENCH_MEM:-64M}
READERS=${BENCH_READERS:-8}
SMALL=${BENCH_SMALL:-2000:64K}
EPOCHS=${BENCH_EPOCHS:-$d_epochs}
MATRIX=${BENCH_MATRIX-$d_matrix}
MATRIX_ARGS=${BENCH_MATRIX_ARGS---prefetch-concurrency 32}
MATRIX_EPOCHS=${BENCH_MATRIX_EPOCHS:-$d_matrix_epochs}
STREAM_SIZE=${BENCH_STREAM_SIZE:-256M}
STREAM_MEM=${BENCH_STREAM_MEM:-256M}
STREAM_ROUNDS=${BENCH_STREAM_ROUNDS:-$d_stream_rounds}
STREAM_RANGES=${BENCH_STREAM_RANGES:-8}
MID=${BENCH_MID:-600:256K}
MID_MEM=${BENCH_MID_MEM:-64M}
MID_ROUNDS=${BENCH_MID_ROUNDS:-$d_mid_rounds}
TRAINING_ENV=${BENCH_TRAINING_ENV:-}
PROXY_ARGS=${BENCH_PROXY_ARGS:---s3}
BC_ARGS=${BENCH_BC_ARGS:-}
WAIT_LOAD=${BENCH_WAIT_LOAD:-}
WAIT_MAX=${BENCH_WAIT_MAX:-600}
DATA_ROOT=${BENCH_DATA:-/tmp/bc-sidecar-data}
TIMEOUT=${BENCH_TIMEOUT:-$d_timeout}
RESULTS=${BENCH_RESULTS:-$d_results}
DIRECT_EPOCHS=$d_direct_epochs
BUCKET=sidecar

# The exact command line: every setting given in the environment, then the
# script and its arguments.
cmdline() {
	local v out=
	for v in $(compgen -e | grep -E '^(BENCH_[A-Z_]+|BC_BIN)$' | sort); do
		out+="$v=$(printf '%q' "${!v}") "
	done
	printf '%s%s%s' "$out" "tests/bench/$ME" "${*:+ $*}"
}
CMDLINE=$(cmdline "$@")

die_usage() {
	echo "$ME: $*" >&2
	exit 2
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
# to_bytes SIZE: 4096, 64K, 8M, 1G (binary units) -> bytes; 1 if bad.
to_bytes() {
	local n=${1%[KkMmGg]} u=${1##*[0-9]}
	is_uint "$n" || return 1
	case $u in
	'') echo "$n" ;;
	K | k) echo $((n * 1024)) ;;
	M | m) echo $((n * 1048576)) ;;
	G | g) echo $((n * 1073741824)) ;;
	*) return 1 ;;
	esac
}
in_list() {
	local w
	for w in $2; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}
case $QUICK in 0 | 1) ;; *) die_usage "BENCH_QUICK must be 0 or 1" ;; esac
for s in $SECTIONS; do
	in_list "$s" "epochs stream small training" || die_usage "BENCH_SECTIONS: unknown section [$s] (epochs stream small training)"
done
for v in READERS EPOCHS MATRIX_EPOCHS STREAM_ROUNDS STREAM_RANGES MID_ROUNDS TIMEOUT WAIT_MAX; do
	is_uint "${!v}" && [ "${!v}" -ge 1 ] || die_usage "BENCH_$v must be a whole number >= 1"
done
[ "$READERS" -le 256 ] || die_usage "BENCH_READERS must be 1..256"
for m in MEM STREAM_SIZE STREAM_MEM MID_MEM; do
	to_bytes "${!m}" >/dev/null || die_usage "BENCH_$m: bad size [${!m}]"
done
for kv in "$SMALL" "$MID"; do
	[[ $kv =~ ^[0-9]+:[0-9]+[KkMmGg]?$ ]] && [ "${kv%%:*}" -ge 1 ] ||
		die_usage "BENCH_SMALL / BENCH_MID: bad COUNT:SIZE [$kv]"
done
for c in $MATRIX; do
	[[ $c =~ ^[0-9]+[KkMmGg]?:[0-9]+$ ]] && [ "${c#*:}" -ge 1 ] && [ "${c#*:}" -le 256 ] ||
		die_usage "BENCH_MATRIX: bad cell [$c] (MEM:READERS)"
done
[ -z "$WAIT_LOAD" ] || [[ $WAIT_LOAD =~ ^[0-9]+(\.[0-9]+)?$ ]] || die_usage "BENCH_WAIT_LOAD must be a number"
case $DATA_ROOT in
/*) ;;
*) die_usage "BENCH_DATA must be an absolute path" ;;
esac

# ---- packages ---------------------------------------------------------------------

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v nginx >/dev/null 2>&1 || missing+=(nginx)
[ -x "$PY" ] || missing+=(python3)
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "# $ME: installing ${missing[*]} (apt-get)" >&2
		apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >&2 ||
			{ apt-get -o DPkg::Lock::Timeout=600 update >&2 &&
			  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >&2; } ||
			{ echo "$ME: apt-get install ${missing[*]} failed" >&2; exit 1; }
	else
		echo "$ME: SKIPPED: missing ${missing[*]}; as root run: apt-get install -y ${missing[*]}" >&2
		exit 77
	fi
fi
nginx -V 2>&1 | grep -q -- --with-http_slice_module ||
	{ echo "$ME: this nginx has no slice module (Debian's nginx has it)" >&2; exit 1; }
bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" ||
	{ echo "$ME: building build/bucketcache failed" >&2; exit 1; }
[ -x "$BC_BIN" ] || { echo "$ME: BC_BIN=$BC_BIN is not an executable" >&2; exit 1; }
for f in "$HELPER" "$BENCH_DIR/training/delay_proxy.py" "$BENCH_DIR/bench_training.sh"; do
	[ -f "$f" ] || { echo "$ME: $f missing" >&2; exit 1; }
done

# ---- processes and cleanup ----------------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-sidecar.XXXXXX")
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	SHM=$(mktemp -d /dev/shm/bc-sidecar.XXXXXX)
else
	SHM=$TMP/shm
	mkdir -p "$SHM"
fi
chmod 755 "$TMP" "$SHM"
RES=$TMP/results
mkdir -p "$RES"
HEADER=$TMP/header.md
FOOTER=$TMP/footer.md
: >"$HEADER"
: >"$FOOTER"

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	bench_stop_pids "${PIDS[@]}"
	if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then
		echo "# kept $TMP and $SHM" >&2
	else
		rm -rf "$TMP" "$SHM"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "# interrupted" >&2; exit 1' INT TERM HUP

# The whole run is bounded: the watchdog stops us (and with us everything we
# started) after BENCH_TIMEOUT s; it kills its own sleep when stopped.
(
	trap 'kill "$sp" 2>/dev/null; exit 0' TERM
	sleep "$TIMEOUT" &
	sp=$!
	wait "$sp"
	echo "# $ME: timed out after $TIMEOUT s (BENCH_TIMEOUT)" >&2
	kill -TERM $$
) &
PIDS+=($!)

# say TEXT: a header line (stdout and the results file).
say() { printf '%s\n' "$*" | tee -a "$HEADER"; }
# note TEXT: a progress line on stderr, with the time since the start.
note() {
	local t=$(($(date +%s) - T_START))
	printf '# [%02d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*" >&2
}
fail() {
	echo "$ME: FAILED: $*" >&2
	exit 1
}

# ---- load -----------------------------------------------------------------------------

if [ -n "$WAIT_LOAD" ]; then
	waited=0
	while awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$WAIT_LOAD" 'BEGIN { exit !(l >= m) }'; do
		[ "$waited" -ge "$WAIT_MAX" ] && break
		[ $((waited % 60)) = 0 ] && note "load average $(bench_load): waiting for < $WAIT_LOAD (at most $((WAIT_MAX - waited)) s more)"
		sleep 10
		waited=$((waited + 10))
	done
	T_START=$(date +%s)
	WAITED_NOTE="waited $waited s for the 1-minute load average to fall below $WAIT_LOAD (BENCH_WAIT_LOAD; at most $WAIT_MAX s)"
fi

# ---- header -------------------------------------------------------------------------

BC_VERSION=$("$BC_BIN" --version 2>&1 | head -n 1)
DEF_PC=$("$BC_BIN" --help 2>&1 | awk '/--prefetch-concurrency/ { f = 1 } f && !done && /default:/ { sub(/.*default: /, ""); sub(/\).*/, ""); print; done = 1 }')  # reads all: an early exit would end --help with SIGPIPE, and pipefail the script
say "# bucketcache as a sidecar: issue 25's targets$([ "$QUICK" = 1 ] && echo ' (--quick)')"
say ""
say "Written by \`tests/bench/bench_sidecar.sh\` (its header comment says what it does);"
say "each run replaces this file."
say ""
say '```text'
say "date:        $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "command:     $CMDLINE"
say "machine:     $(hostname 2>/dev/null || echo '?'): $(bench_machine)"
say "load avg:    $(bench_load) at start${WAITED_NOTE:+ ($WAITED_NOTE)}"
say "bucketcache: $BC_VERSION, $BC_BIN (sha256 $(sha256sum "$BC_BIN" | cut -c1-12)), tree $(bench_git_rev "$SRCDIR")"
say "nginx:       $(nginx -v 2>&1 | head -n 1 | sed 's/^nginx version: //')"
say "python:      $("$PY" --version 2>&1) ($PY)"
say "baseline:    direct: the same clients reading the S3-shaped origin itself (no cache)"
say "peer:        nginx proxy_cache, slice 8m, max_size = the gateway's --mem-size, cache files on $SHM (tmpfs)"
say "bucketcache: a fresh (cold) gateway per run: --anonymous --mem-size SIZE${BC_ARGS:+ $BC_ARGS} [the run's flags]; default --prefetch-concurrency ${DEF_PC:-?}"

# ---- data and the origin --------------------------------------------------------------

WWW=$DATA_ROOT/www
mkdir -p "$WWW/$BUCKET" "$DATA_ROOT/manifests"
chmod 755 "$DATA_ROOT" "$WWW" "$WWW/$BUCKET"
sets=()
in_list epochs "$SECTIONS" && sets+=(--set "small:${SMALL#*:}:${SMALL%%:*}")
in_list small "$SECTIONS" && sets+=(--set "mid:${MID#*:}:${MID%%:*}")
in_list stream "$SECTIONS" && sets+=(--set "big:$STREAM_SIZE:1")
if [ "${#sets[@]}" -gt 0 ]; then
	note "objects in $WWW (made once, then reused)"
	"$PY" "$HELPER" gen --dir "$WWW" --bucket "$BUCKET" --data-dir "$DATA_ROOT/manifests" "${sets[@]}" ||
		fail "could not make the objects"
	chmod -R a+rX "$WWW"
	# into the page cache: the origin serves from memory
	cat "$WWW/$BUCKET"/*/* >/dev/null
fi
MAN=$DATA_ROOT/manifests

# shellcheck disable=SC2034 # read by lib_bench.sh's bench_static_conf
BENCH_STATIC_ROOT=$WWW
bench_start_nginx static "$TMP" bench_static_conf || fail "the static origin (nginx) did not start"
UP_URL=$BENCH_NG_URL
# shellcheck disable=SC2086 # PROXY_ARGS is word-split on purpose
bench_start_delay_proxy "$UP_URL" "$TMP" $PROXY_ARGS || fail "delay_proxy.py did not start"
PROXY_URL=$BENCH_PROXY_URL
PROXY_STATS=$PROXY_URL/_delayproxy/stats
pshape=$(curl -sf "$PROXY_STATS" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%g ms before forwarding each request, %g ms before its answer comes back; per connection %s (%s); over all connections %s" % (
    d["delay_ms"], d["response_delay_ms"],
    "%.0f MiB/s" % (d["conn_rate_bytes_per_second"] / 1048576) if d["conn_rate_bytes_per_second"] else "unlimited",
    d["conn_rate_mode"],
    "%.0f MiB/s" % (d["rate_bytes_per_second"] / 1048576) if d["rate_bytes_per_second"] else "unlimited"))') ||
	fail "cannot read $PROXY_STATS"
say "origin:      static nginx $UP_URL (root $WWW) behind delay_proxy.py $PROXY_ARGS ($PROXY_URL): $pshape"
if in_list stream "$SECTIONS" || in_list small "$SECTIONS" || in_list epochs "$SECTIONS"; then
	k=$(head -n 1 "$MAN/$(in_list epochs "$SECTIONS" && echo small || { in_list small "$SECTIONS" && echo mid || echo big; }).tsv" | cut -f1)
	t=$(curl -sf -o /dev/null -w '%{time_starttransfer}' --max-time 60 "$PROXY_URL/$BUCKET/$k") ||
		fail "GET $PROXY_URL/$BUCKET/$k failed"
	say "origin:      first byte of $k after $t s (one GET, a new connection)"
fi

# ---- the systems ----------------------------------------------------------------------

# start_gateway LABEL MEM [FLAGS...]: a fresh bucketcache in front of the
# origin, and its sampler (RES/sample-LABEL.json). Sets GW_PID, GW_URL,
# GW_LOG, GW_DESC, SAMPLER_PID.
GW_N=0
start_gateway() {
	local label=$1 mem=$2 pid port log
	shift 2
	GW_N=$((GW_N + 1))
	log=$TMP/gateway.$GW_N.log
	for _ in 1 2 3; do
		port=$(bench_free_port)
		# shellcheck disable=SC2086 # BC_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "$PROXY_URL" \
		    --anonymous --mem-size "$mem" $BC_ARGS "$@" >>"$log" 2>&1 &
		pid=$!
		if bench_wait_http "http://127.0.0.1:$port/_bucketcache/health" "$pid" 15; then
			PIDS+=("$pid")
			GW_PID=$pid
			GW_URL=http://127.0.0.1:$port
			GW_LOG=$log
			"$PY" "$HELPER" sample --pid "$pid" --stats "$GW_URL/_bucketcache/stats" \
			    --label "$label" --out "$RES/sample-$label.json" \
			    --meta "{\"system\": \"bucketcache\", \"label\": \"$label\"}" &
			SAMPLER_PID=$!
			PIDS+=("$SAMPLER_PID")
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "bucketcache ($label) did not become healthy"
}

# stop_gateway LABEL: stops the sampler and the gateway; fails when the
# gateway died during the run; its warn/error lines go to the footer.
stop_gateway() {
	local n
	bench_stop_pid "$SAMPLER_PID"
	kill -0 "$GW_PID" 2>/dev/null || { tail -n 20 "$GW_LOG" >&2; fail "bucketcache ($1) died during its run"; }
	bench_stop_pid "$GW_PID"
	n=$(grep -Ec ' (error|warn):' "$GW_LOG" || true)
	if [ "$n" -gt 0 ]; then
		{
			echo "bucketcache ($1): $n warn/error log lines, the first 3:"
			grep -E ' (error|warn):' "$GW_LOG" | head -n 3 | sed 's/^/    /'
		} >>"$FOOTER.log"
	fi
}

# the peer: nginx slice cache, max_size PEER_MAX, files in SHM/PEER_NAME
PEER_N=0
peer_conf() {
	cat <<EOF
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	proxy_cache_path $SHM/$PEER_NAME levels=1:2 keys_zone=sidecar:16m max_size=$PEER_MAX inactive=1d use_temp_path=off;
	upstream origin {
		server 127.0.0.1:${PROXY_URL##*:};
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$1;
		location = /_ping { return 200 "ok\n"; }
		location / {
			slice 8m;
			proxy_cache sidecar;
			proxy_cache_key \$uri\$is_args\$args\$slice_range;
			proxy_set_header Range \$slice_range;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_cache_valid 200 206 1h;
			proxy_cache_lock on;
			proxy_pass http://origin;
			add_header X-Cache-Status \$upstream_cache_status always;
		}
	}
EOF
}
# start_peer MAX: a fresh, empty nginx slice cache; sets PEER_PID, PEER_URL.
start_peer() {
	PEER_N=$((PEER_N + 1))
	PEER_NAME=nginx$PEER_N
	PEER_MAX=$1
	bench_start_nginx "$PEER_NAME" "$TMP" peer_conf || fail "nginx (the peer) did not start"
	PEER_PID=$BENCH_NG_PID
	PEER_URL=$BENCH_NG_URL
	[ -f "$TMP/peer.conf" ] || cp "$BENCH_NG_CONF" "$TMP/peer.conf"
}
stop_peer() {
	bench_stop_pid "$PEER_PID"
	rm -rf "${SHM:?}/$PEER_NAME"
}

# meta SECTION SYSTEM CELL DESC [EXTRA_JSON]: the --meta of a run.
meta() {
	"$PY" -c 'import json, sys
d = {"section": sys.argv[1], "system": sys.argv[2], "cell": sys.argv[3], "desc": sys.argv[4]}
d.update(json.loads(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else {})
print(json.dumps(d))' "$@"
}

# read_run LABEL ENDPOINT SET READERS EPOCHS META [bucketcache stats URL]
read_run() {
	local label=$1 ep=$2 set=$3 readers=$4 epochs=$5 m=$6 stats=${7:-} rc=0
	note "$label: $epochs epoch(s) of $set by $readers readers via $ep"
	"$PY" "$HELPER" read --endpoint "$ep" --bucket "$BUCKET" --manifest "$MAN/$set.tsv" \
	    --readers "$readers" --epochs "$epochs" --seed 1 --label "$label" \
	    --out "$RES/read-$label.json" --proxy-stats "$PROXY_STATS" --meta "$m" \
	    ${stats:+--stats "$stats"} || rc=$?
	[ "$rc" = 0 ] || fail "$label: some objects were read wrong or not at all (see above)"
}

# ceiling MEM SETBYTES: min(1, MEM / SETBYTES)
ceiling() { awk -v m="$(to_bytes "$1")" -v s="$2" 'BEGIN { c = m / s; if (c > 1) c = 1; printf "%.4f", c }'; }

MAIN_CELL="$MEM-${READERS}r"
SMALL_BYTES=$(( ${SMALL%%:*} * $(to_bytes "${SMALL#*:}") ))
MAIN_CEIL=$(ceiling "$MEM" "$SMALL_BYTES")

# ---- (a) epochs ----------------------------------------------------------------------

if in_list epochs "$SECTIONS"; then
	say "(a) epochs:  ${SMALL%%:*} x ${SMALL#*:} objects ($SMALL_BYTES bytes), $READERS readers, shuffled, no hints; main row --mem-size $MEM (ceiling $MAIN_CEIL), $EPOCHS epochs; matrix cells $MATRIX with ${MATRIX_ARGS:-no flags}, $MATRIX_EPOCHS epochs"
	read_run "direct-${READERS}r" "$PROXY_URL" small "$READERS" "$DIRECT_EPOCHS" \
	    "$(meta epochs direct "direct-$READERS" "direct, $READERS readers")"
	start_gateway "epochs-$MAIN_CELL" "$MEM"
	read_run "bucketcache-$MAIN_CELL" "$GW_URL" small "$READERS" "$EPOCHS" \
	    "$(meta epochs bucketcache "$MAIN_CELL" "$MEM, $READERS readers" "{\"ceiling\": $MAIN_CEIL}")" \
	    "$GW_URL/_bucketcache/stats"
	stop_gateway "epochs-$MAIN_CELL"
	start_peer "$MEM"
	read_run "nginx-$MAIN_CELL" "$PEER_URL" small "$READERS" "$EPOCHS" \
	    "$(meta epochs nginx "$MAIN_CELL" "max_size $MEM, $READERS readers")"
	stop_peer
	cells=$MATRIX
	if [ "${DEF_PC:-}" != 32 ] && [ -z "${BENCH_MATRIX+set}" ] && [ "$QUICK" = 0 ]; then
		cells="$cells $MEM:$READERS"
	fi
	direct_done=" $READERS "
	for c in $cells; do
		cm=${c%%:*} cr=${c#*:}
		if [[ $direct_done != *" $cr "* ]]; then
			read_run "direct-${cr}r" "$PROXY_URL" small "$cr" "$DIRECT_EPOCHS" \
			    "$(meta epochs direct "direct-$cr" "direct, $cr readers")"
			direct_done+="$cr "
		fi
		ce=$(ceiling "$cm" "$SMALL_BYTES")
		# shellcheck disable=SC2086 # MATRIX_ARGS is word-split on purpose
		start_gateway "epochs-$cm-${cr}r" "$cm" $MATRIX_ARGS
		read_run "bucketcache-$cm-${cr}r" "$GW_URL" small "$cr" "$MATRIX_EPOCHS" \
		    "$(meta epochs bucketcache "$cm-${cr}r" "$cm, $cr readers${MATRIX_ARGS:+, $MATRIX_ARGS}" "{\"ceiling\": $ce}")" \
		    "$GW_URL/_bucketcache/stats"
		stop_gateway "epochs-$cm-${cr}r"
	done
fi

# ---- (b) one stream ------------------------------------------------------------------

if in_list stream "$SECTIONS"; then
	read -r bkey bsize bcrc <"$MAN/big.tsv"
	say "(b) stream:  one GET of $bkey ($bsize bytes) by one stream; bucketcache --mem-size $STREAM_MEM (default flags), nginx max_size $STREAM_MEM; $STREAM_ROUNDS round(s), the order rotated"
	order=(direct bucketcache nginx)
	for r in $(seq "$STREAM_ROUNDS"); do
		for i in 0 1 2; do
			sys=${order[$(((i + r - 1) % 3))]}
			m=$(meta stream "$sys" "$r" "$STREAM_SIZE object, --mem-size $STREAM_MEM" "{\"round\": $r}")
			note "(b) round $r/$STREAM_ROUNDS: $sys"
			case $sys in
			direct)
				"$PY" "$HELPER" stream --url "$PROXY_URL/$BUCKET/$bkey" --size "$bsize" --crc "$bcrc" \
				    --label "stream-direct-$r" --out "$RES/stream-direct-$r.json" \
				    --proxy-stats "$PROXY_STATS" --meta "$m" || fail "(b) direct: wrong body"
				;;
			bucketcache)
				start_gateway "stream-$r" "$STREAM_MEM"
				"$PY" "$HELPER" stream --url "$GW_URL/$BUCKET/$bkey" --size "$bsize" --crc "$bcrc" \
				    --label "stream-bucketcache-$r" --out "$RES/stream-bucketcache-$r.json" \
				    --proxy-stats "$PROXY_STATS" --meta "$m" || fail "(b) bucketcache: wrong body"
				stop_gateway "stream-$r"
				;;
			nginx)
				start_peer "$STREAM_MEM"
				"$PY" "$HELPER" stream --url "$PEER_URL/$BUCKET/$bkey" --size "$bsize" --crc "$bcrc" \
				    --label "stream-nginx-$r" --out "$RES/stream-nginx-$r.json" \
				    --proxy-stats "$PROXY_STATS" --meta "$m" || fail "(b) nginx: wrong body"
				stop_peer
				;;
			esac
		done
	done
	note "(b) the origin's ceiling here: direct, $STREAM_RANGES ranged GETs at once"
	"$PY" "$HELPER" stream --url "$PROXY_URL/$BUCKET/$bkey" --size "$bsize" --crc "$bcrc" \
	    --ranges "$STREAM_RANGES" --label "stream-direct-ranges" --out "$RES/stream-direct-ranges.json" \
	    --proxy-stats "$PROXY_STATS" \
	    --meta "$(meta stream direct-ranges 1 "$STREAM_RANGES ranged GETs at once" '{"round": 1}')" ||
		fail "(b) direct, ranged GETs: wrong body"
fi

# ---- (c) cold objects ------------------------------------------------------------------

if in_list small "$SECTIONS"; then
	say "(c) small:   ${MID%%:*} x ${MID#*:} objects read once, cold, by 8 kept-alive readers, no hints; bucketcache --mem-size $MID_MEM (default flags), nginx max_size $MID_MEM; $MID_ROUNDS round(s), the order rotated"
	order=(direct bucketcache nginx)
	for r in $(seq "$MID_ROUNDS"); do
		for i in 0 1 2; do
			sys=${order[$(((i + r - 1) % 3))]}
			m=$(meta small "$sys" "$r" "${MID%%:*} x ${MID#*:}, 8 readers, --mem-size $MID_MEM" "{\"round\": $r}")
			case $sys in
			direct)
				read_run "small-direct-$r" "$PROXY_URL" mid 8 1 "$m"
				;;
			bucketcache)
				start_gateway "small-$r" "$MID_MEM"
				read_run "small-bucketcache-$r" "$GW_URL" mid 8 1 "$m" "$GW_URL/_bucketcache/stats"
				stop_gateway "small-$r"
				;;
			nginx)
				start_peer "$MID_MEM"
				read_run "small-nginx-$r" "$PEER_URL" mid 8 1 "$m"
				stop_peer
				;;
			esac
		done
	done
fi

# ---- (d) training ------------------------------------------------------------------------

if in_list training "$SECTIONS"; then
	if [ "$RESULTS" = none ]; then
		tres=$TMP/training.md
	else
		tres=${RESULTS%.md}-training.md
	fi
	say "(d) training: bench_training.sh BENCH_PROFILE=sidecar (results: $(basename "$tres")): 1 job, 8 DataLoader workers, --mem-size 64M, the same origin flags; direct, nginx, bucketcache, bucketcache-plans (plans posted before epoch 1)"
	note "(d) bench_training.sh BENCH_PROFILE=sidecar$([ "$QUICK" = 1 ] && echo ' BENCH_QUICK=1') $TRAINING_ENV"
	# its stdout to training.out; its stderr to training.err, and its
	# progress lines to ours
	set +e
	# shellcheck disable=SC2086 # TRAINING_ENV is word-split on purpose
	env BENCH_PROFILE=sidecar BENCH_QUICK="$QUICK" BENCH_RESULTS="$tres" BC_BIN="$BC_BIN" \
	    BENCH_PROXY_ARGS="$PROXY_ARGS" BENCH_SUMMARY="$RES/training.json" \
	    BENCH_TIMEOUT=$((TIMEOUT / 2)) ${BC_ARGS:+BENCH_BC_ARGS="$BC_ARGS"} $TRAINING_ENV \
	    "$BENCH_DIR/bench_training.sh" 2>&1 >"$TMP/training.out" |
		tee "$TMP/training.err" |
		{ grep --line-buffered -E '^# ' | sed -u 's/^# /#   (d) /' >&2; true; }
	trc=${PIPESTATUS[0]}
	set -e
	if [ "$trc" != 0 ] || [ ! -s "$RES/training.json" ]; then
		tail -n 30 "$TMP/training.err" >&2
		fail "(d) bench_training.sh failed (exit $trc)"
	fi
fi

# ---- the table ---------------------------------------------------------------------------

T_END=$(date +%s)
say "load avg:    $(bench_load) at end; the run took $((T_END - T_START)) s${WAITED_NOTE:+ (after the wait)}"
say '```'
{
	echo "## How to read it"
	echo ""
	echo "- direct is the baseline: the same clients, no cache. \"bc vs direct\" is direct's"
	echo "  time / bucketcache's (> 1: bucketcache faster), \"bc vs peer\" nginx's / bucketcache's;"
	echo "  for (d), how much less data wait bucketcache had."
	echo "- Hit ratios are per GET, from each response's own cache header (x-bucketcache: hit;"
	echo "  nginx's X-Cache-Status: HIT). A 64 KiB object is one chunk, so the gateway's"
	echo "  counters say the same (printed beside them below)."
	echo "- The origin's shape is in the header; its counters (upstream GETs and MB) per"
	echo "  run and epoch are below. nginx trims its cache to max_size only when its cache"
	echo "  manager runs, so in short runs it holds more than the bound."
	echo "- The machine is shared: the load average at the start and the end is in the"
	echo "  header; ratios measured in the same run are what to compare."
	if [ -s "$FOOTER.log" ]; then
		echo ""
		echo '```text'
		cat "$FOOTER.log"
		echo '```'
	fi
	if [ "$RESULTS" != none ]; then
		echo ""
		echo "Raw data: $(basename "${RESULTS%.md}.csv")$(in_list training "$SECTIONS" && echo "; the training run: $(basename "${RESULTS%.md}-training.md")")."
	fi
} >"$FOOTER"
if [ "$RESULTS" = none ]; then
	MD=$TMP/sidecar.md
else
	mkdir -p "$(dirname "$RESULTS")"
	MD=$RESULTS
fi
echo ""
rc=0
"$PY" "$HELPER" report --dir "$RES" --header "$HEADER" --footer "$FOOTER" --md "$MD" \
    --csv "${MD%.md}.csv" --main-cell "$MAIN_CELL" --main-ceiling "$MAIN_CEIL" || rc=$?
if [ -s "$FOOTER.log" ]; then
	cat "$FOOTER.log"
fi
[ "$RESULTS" = none ] || note "wrote $MD and ${MD%.md}.csv"
case $rc in
0 | 3) exit "$rc" ;;
*) fail "the report failed" ;;
esac
