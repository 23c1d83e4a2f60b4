#!/bin/bash
# bench_training.sh — a training-shaped benchmark: a PyTorch DataLoader
# (Debian's python3-torch, 4 workers, one boto3 client per worker) reads an
# ImageNet-like synthetic data set for a few shuffled epochs from an S3-like
# upstream 20 ms away, directly, through nginx proxy_cache, and through
# bucketcache, the caches holding 50% of the data set. Per system and epoch:
# epoch time, time the training loop waited for data, hit ratio, upstream
# bytes and requests, prefetch used/wasted; and the targets of issue 11
# ("How it is measured"), PASS or MISS with the numbers.
#
# Not part of `make check`. It uses a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), and:
#
#   1. generates the data set once into BENCH_DATA (tests/bench/training/
#      gen_data.py: BENCH_NOBJ objects, log-normal sizes, median 110 KiB,
#      sigma 0.6, seeded; reused by later runs), checks every object against
#      its manifest (size, crc32; this also loads it into the page cache);
#   2. starts, on free loopback ports: a static nginx serving BENCH_DATA as
#      BUCKET/KEY (anonymous, Range, ETag, Last-Modified; the "S3"), and in
#      front of it training/delay_proxy.py, which waits BENCH_DELAY_MS before
#      forwarding each request (keep-alive, streamed bodies) and counts what
#      it forwards (the ground truth of upstream traffic for every system);
#   3. for each system in BENCH_SYSTEMS, one after the other, each starting
#      cold:
#        direct       DataLoader -> delay proxy -> static nginx
#        nginx        DataLoader -> nginx proxy_cache (max_size = the cap,
#                     keepalive upstream) -> delay proxy -> static nginx
#        bucketcache-POLICY
#                     DataLoader -> bucketcache --anonymous --mem-size CAP
#                     --upstream http://DELAY-PROXY --policy POLICY -> static
#                     nginx (lru, pin, auto, or any policy the binary knows)
#        bucketcache  the same with no --policy: the binary's default
#        nginx-disk   the nginx system with max_size = DISK_CAP and its cache
#                     dir in a temp dir under BENCH_DISK_DIR (a real disk)
#        bucketcache-disk
#                     bucketcache --mem-size MEM_CAP --disk-dir DIR
#                     --disk-size DISK_CAP --meta-ttl 168h (the default
#                     policy; the TTL is nginx-disk's proxy_cache_valid, so
#                     that neither asks the origin after its first epoch:
#                     with the default 60 s, bucketcache-disk revalidated
#                     every object each epoch, 17,000 HEADs), DIR a fresh
#                     temp dir beside nginx-disk's
#        bucketcache-rgw
#                     the bucketcache system (its default policy) in front of
#                     a real S3 instead of the static nginx: a throw-away Ceph
#                     RADOS Gateway (tests/integration/lib_rgw.sh: one
#                     monitor, one OSD on memstore, so it holds the data set
#                     in RAM), loaded with the data set, behind a second
#                     delay proxy of the same delay; bucketcache signs its
#                     requests with the RGW user's key pair. Not in the
#                     default BENCH_SYSTEMS: loading the data set takes a
#                     few minutes and its size in RAM; it needs radosgw,
#                     ceph-mon and ceph-osd (installed as the others are):
#                       BENCH_SYSTEMS="bucketcache bucketcache-rgw" tests/bench/bench_training.sh
#        bucketcache-plans
#                     bucketcache --policy BENCH_PLANS_POLICY (auto), and each
#                     job wraps its sampler in contrib/python's HintedSampler
#                     (posts its plans for the current and the next epoch)
#                     with the helper's boto3 hook (x-bucketcache-epoch and
#                     the next 8 keys in x-bucketcache-next)
#      where CAP = BENCH_CACHE_PCT % of the data set's bytes, MEM_CAP =
#      BENCH_DISK_MEM_PCT % of them and DISK_CAP = BENCH_DISK_PCT % of them
#      plus 12 KiB per object (4 KiB rounding of every file, the chunk
#      file's header, the object's metadata file) plus 16 MiB: with the
#      default 100 % the whole data set fits on disk, for both. The disk
#      systems are not in the default BENCH_SYSTEMS (together they add a
#      third to the run, and write the data set to disk twice); run them
#      with
#        BENCH_SYSTEMS="direct nginx-disk bucketcache-disk" tests/bench/bench_training.sh
#      (any BENCH_SYSTEMS with a -disk system writes results/training-disk.*,
#      not training.*); their targets (issue 12): epochs 2-3 hit ratio >= 0.98
#      for bucketcache-disk, and its epochs 2+ time <= nginx-disk's; the
#      report adds per epoch the disk and memory tiers' hits, misses, writes
#      and drops and cache_disk_sendfile. A policy the binary does not accept makes its system "n/a" (with the daemon's
#      message) in the report, not an error. Per system, BENCH_JOBS copies of
#      training/loader.py run at once against it (jobs j1, j2, ...: the same
#      data set, seeds BENCH_SEED, BENCH_SEED+1, ...; BENCH_EPOCHS epochs,
#      BENCH_WORKERS workers, batches of BENCH_BATCH, the order of epoch E
#      drawn from seed*1000+E: the same orders for every system; a
#      BENCH_COMPUTE_MS sleep per batch as the "training step"); the jobs
#      wait for each other between epochs (not timed), so each counter
#      snapshot splits epochs. Every job's GETs carry x-bucketcache-job:
#      SYSTEM-jN (the job's reads counted apart; without a plan it changes
#      nothing else), for every system;
#   4. writes the table (training/report.py) to stdout and to BENCH_RESULTS
#      (Markdown), with a CSV and a PNG plot (python3-matplotlib) beside it:
#      machine, versions, the exact command, the cache configurations.
#
# BENCH_QUICK=1: a smoke run of ~5 minutes with the six default systems
# (2,000 objects, 3 epochs: the targets need epochs 2-3), written to
# results/training-quick.* instead of results/training.*.
#
# BENCH_PROFILE=sidecar (issue 25): a sidecar-sized cache in front of an
# S3-shaped origin, epoch 1 apart. Its defaults: 1 job of 8 DataLoader
# workers (BENCH_JOBS=1 BENCH_WORKERS=8), BENCH_CACHE_BYTES=64M (the caches'
# bound in bytes, not a share of the data set), the origin's delay proxy
# run with BENCH_PROXY_ARGS=--s3 (20 ms each way, each connection paced at
# 32 MiB/s, the aggregate growing with connections), BENCH_SYSTEMS="direct
# nginx bucketcache bucketcache-plans" (bucketcache-plans: the job posts
# each epoch's plan before the epoch's first GET, epoch 1 included; the
# HintedSampler waits up to 1 s for the PUT), 2,000 objects and 3 epochs
# (BENCH_QUICK=1: 1,000 and 2), written to results/training-sidecar.*
# (training-sidecar-quick.*). Its report adds a table of epoch 1 (cold) and
# epochs 2+ per system, with ratios to direct (the baseline) and nginx (the
# peer), and the issue's target: bucketcache-plans' epoch-1 data wait >= 80%
# below direct's. bench_sidecar.sh runs it for its row (d).
#
# For every bucketcache system, tests/bench/bench_sidecar.py samples the
# gateway's VmRSS and held bytes (cache_bytes_held, the memory tier's
# usage_bytes) every 0.2 s while it runs: the report prints the peaks
# against --mem-size.
#
# Requires python3-torch and python3-boto3 (python3-matplotlib for the plot)
# for /usr/bin/python3, nginx and curl: installed with apt-get when run as
# root; otherwise the apt-get line is printed and the script exits 77.
#
# Everything it starts is stopped, and its temp dir removed, on exit (trap),
# whatever the exit status. Exit status: 0 done, every check passed; 1 setup
# failed or a check failed (an item read wrong or not at all, orders that
# differ, counters that disagree; the results are still written); 2 bad
# usage; 77 missing packages and not root.
#
# Environment (defaults in brackets; [quick/full] where they differ):
#   BC_BIN            daemon binary [<srcdir>/build/bucketcache]
#   BENCH_QUICK       1: the smoke run [0]
#   BENCH_PROFILE     default or sidecar (above) [default]
#   BENCH_NOBJ        objects in the data set [2000/20000]
#   BENCH_EPOCHS      epochs [3]
#   BENCH_SYSTEMS     systems, in this order ["direct nginx bucketcache-lru
#                     bucketcache-pin bucketcache-auto bucketcache-plans"]
#   BENCH_JOBS        concurrent training jobs per system [2]
#   BENCH_PLANS_POLICY  the --policy of bucketcache-plans [auto]
#   BENCH_DELAY_MS    delay per upstream request, ms [20]
#   BENCH_PROXY_ARGS  the delay proxy's flags, word-split, instead of
#                     --delay-ms BENCH_DELAY_MS [sidecar: --s3]
#   BENCH_CACHE_PCT   cache size, % of the data set's bytes [50]
#   BENCH_CACHE_BYTES cache size in bytes (K, M, G suffixes), instead of
#                     BENCH_CACHE_PCT [sidecar: 64M]
#   BENCH_DISK_MEM_PCT  bucketcache-disk's --mem-size, % of the data set [25]
#   BENCH_DISK_PCT    the disk systems' disk bound, % of the data set, plus
#                     12 KiB per object and 16 MiB [100]
#   BENCH_DISK_DIR    where the disk systems' temp dir is made (a real
#                     disk; tmpfs is refused) [/var/tmp]
#   BENCH_WORKERS     DataLoader workers [4]
#   BENCH_BATCH       batch size [64]
#   BENCH_COMPUTE_MS  the per-batch "training step" (a sleep), ms [200]:
#                     a job then wants 64/0.2 = 320 objects/s, which 4
#                     workers reading 20 ms away cannot feed (data wait with
#                     direct) and a prefetcher with 8 fills in flight can
#                     for the misses of two jobs (issue 11: the wait target
#                     holds "whenever the origin's bandwidth can feed the
#                     job's rate")
#   BENCH_SEED        data set and shuffle seed [1]
#   BENCH_DATA        where data sets are kept [/tmp/bc-train-data]
#   BENCH_BC_ARGS     extra bucketcache flags, word-split [none]
#   BENCH_TIMEOUT     seconds one system's loader run may take [900/5400]
#   BENCH_RESULTS     Markdown results file, or "none"
#                     [tests/bench/results/training-quick.md / training.md;
#                     with a -disk system: training-disk-quick.md /
#                     training-disk.md]
#   BENCH_KEEP_TMP    1: keep the temp dir (logs, JSON, configs) [0]
#   BENCH_SUMMARY     also write the per-system summary (JSON: epoch 1 and
#                     epochs 2+ per system, the samplers' peaks) here [none]

# shellcheck disable=SC2015,SC2317 # A && B || fail; cleanup runs from trap
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/lib_bench.sh
. "$BENCH_DIR/lib_bench.sh"
SRCDIR=$(cd "$BENCH_DIR/../.." && pwd)
TDIR=$BENCH_DIR/training
PY=/usr/bin/python3

QUICK=${BENCH_QUICK:-0}
PROFILE=${BENCH_PROFILE:-default}
d_systems="direct nginx bucketcache-lru bucketcache-pin bucketcache-auto bucketcache-plans"
d_jobs=2 d_workers=4 d_cache_bytes='' d_proxy_args=''
if [ "$QUICK" = 1 ]; then
	d_nobj=2000 d_epochs=3 d_timeout=900 d_results=$BENCH_DIR/results/training-quick.md
else
	d_nobj=20000 d_epochs=3 d_timeout=5400 d_results=$BENCH_DIR/results/training.md
fi
case $PROFILE in
default) ;;
sidecar)
	d_systems="direct nginx bucketcache bucketcache-plans"
	d_jobs=1 d_workers=8 d_cache_bytes=64M d_proxy_args=--s3
	if [ "$QUICK" = 1 ]; then
		d_nobj=1000 d_epochs=2 d_timeout=900 d_results=$BENCH_DIR/results/training-sidecar-quick.md
	else
		d_nobj=2000 d_epochs=3 d_timeout=1800 d_results=$BENCH_DIR/results/training-sidecar.md
	fi
	;;
*)
	echo "bench_training.sh: BENCH_PROFILE must be default or sidecar" >&2
	exit 2
	;;
esac
BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
NOBJ=${BENCH_NOBJ:-$d_nobj}
EPOCHS=${BENCH_EPOCHS:-$d_epochs}
SYSTEMS=${BENCH_SYSTEMS:-$d_systems}
case " $SYSTEMS " in
*-disk\ *)
	if [ "$QUICK" = 1 ]; then
		d_results=$BENCH_DIR/results/training-disk-quick.md
	else
		d_results=$BENCH_DIR/results/training-disk.md
	fi
	;;
esac
JOBS=${BENCH_JOBS:-$d_jobs}
PLANS_POLICY=${BENCH_PLANS_POLICY:-auto}
DELAY_MS=${BENCH_DELAY_MS:-20}
PROXY_ARGS=${BENCH_PROXY_ARGS:-$d_proxy_args}
CACHE_PCT=${BENCH_CACHE_PCT:-50}
CACHE_BYTES=${BENCH_CACHE_BYTES:-$d_cache_bytes}
SUMMARY=${BENCH_SUMMARY:-}
DISK_MEM_PCT=${BENCH_DISK_MEM_PCT:-25}
DISK_PCT=${BENCH_DISK_PCT:-100}
DISK_DIR=${BENCH_DISK_DIR:-/var/tmp}
WORKERS=${BENCH_WORKERS:-$d_workers}
BATCH=${BENCH_BATCH:-64}
COMPUTE_MS=${BENCH_COMPUTE_MS:-200}
SEED=${BENCH_SEED:-1}
DATA_ROOT=${BENCH_DATA:-/tmp/bc-train-data}
BC_ARGS=${BENCH_BC_ARGS:-}
TIMEOUT=${BENCH_TIMEOUT:-$d_timeout}
RESULTS=${BENCH_RESULTS:-$d_results}
BUCKET=imagenet-synth
MEDIAN_KIB=110
SIGMA=0.6

# The exact command line: the script plus every setting given in the
# environment, so that the run can be repeated as it was.
cmdline() {
	local v out=
	for v in BC_BIN BENCH_QUICK BENCH_PROFILE BENCH_NOBJ BENCH_EPOCHS BENCH_SYSTEMS \
	    BENCH_JOBS BENCH_PLANS_POLICY \
	    BENCH_DELAY_MS BENCH_PROXY_ARGS BENCH_CACHE_PCT BENCH_CACHE_BYTES \
	    BENCH_DISK_MEM_PCT BENCH_DISK_PCT \
	    BENCH_DISK_DIR BENCH_WORKERS BENCH_BATCH \
	    BENCH_COMPUTE_MS BENCH_SEED BENCH_DATA BENCH_BC_ARGS BENCH_TIMEOUT \
	    BENCH_RESULTS BENCH_KEEP_TMP BENCH_SUMMARY; do
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
	echo "bench_training.sh: $*" >&2
	exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
case $QUICK in 0 | 1) ;; *) die_usage "BENCH_QUICK must be 0 or 1" ;; esac
is_uint "$NOBJ" && [ "$NOBJ" -ge 1 ] && [ "$NOBJ" -le 1000000 ] || die_usage "BENCH_NOBJ must be 1..1000000"
is_uint "$EPOCHS" && [ "$EPOCHS" -ge 1 ] && [ "$EPOCHS" -le 100 ] || die_usage "BENCH_EPOCHS must be 1..100"
is_uint "$DELAY_MS" && [ "$DELAY_MS" -le 60000 ] || die_usage "BENCH_DELAY_MS must be 0..60000"
is_uint "$CACHE_PCT" && [ "$CACHE_PCT" -ge 1 ] && [ "$CACHE_PCT" -le 1000 ] || die_usage "BENCH_CACHE_PCT must be 1..1000"
if [ -n "$CACHE_BYTES" ]; then
	[[ $CACHE_BYTES =~ ^[0-9]+[KkMmGg]?$ ]] || die_usage "BENCH_CACHE_BYTES must be a size (64M)"
	n=${CACHE_BYTES%[KkMmGg]}
	case ${CACHE_BYTES: -1} in
	K | k) CACHE_BYTES=$((n * 1024)) ;;
	M | m) CACHE_BYTES=$((n * 1048576)) ;;
	G | g) CACHE_BYTES=$((n * 1073741824)) ;;
	esac
	[ "$CACHE_BYTES" -ge 1048576 ] || die_usage "BENCH_CACHE_BYTES must be at least 1M"
fi
is_uint "$DISK_MEM_PCT" && [ "$DISK_MEM_PCT" -ge 1 ] && [ "$DISK_MEM_PCT" -le 1000 ] || die_usage "BENCH_DISK_MEM_PCT must be 1..1000"
is_uint "$DISK_PCT" && [ "$DISK_PCT" -ge 1 ] && [ "$DISK_PCT" -le 1000 ] || die_usage "BENCH_DISK_PCT must be 1..1000"
case $DISK_DIR in
/*) ;;
*) die_usage "BENCH_DISK_DIR must be an absolute path" ;;
esac
is_uint "$WORKERS" && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 64 ] || die_usage "BENCH_WORKERS must be 1..64"
is_uint "$BATCH" && [ "$BATCH" -ge 1 ] || die_usage "BENCH_BATCH must be >= 1"
is_uint "$JOBS" && [ "$JOBS" -ge 1 ] && [ "$JOBS" -le 8 ] || die_usage "BENCH_JOBS must be 1..8"
[[ $PLANS_POLICY =~ ^[a-z]+$ ]] || die_usage "BENCH_PLANS_POLICY must be a policy name"
is_uint "$COMPUTE_MS" || die_usage "BENCH_COMPUTE_MS must be a number of ms"
is_uint "$SEED" || die_usage "BENCH_SEED must be a number"
is_uint "$TIMEOUT" && [ "$TIMEOUT" -ge 10 ] || die_usage "BENCH_TIMEOUT must be >= 10 (seconds)"
[ -n "${SYSTEMS// /}" ] || die_usage "BENCH_SYSTEMS is empty"
for s in $SYSTEMS; do
	case $s in
	direct | nginx | nginx-disk | bucketcache | bucketcache-[a-z]*)
		[[ $s =~ ^(direct|nginx|nginx-disk|bucketcache|bucketcache-[a-z]+)$ ]] ||
			die_usage "BENCH_SYSTEMS: bad system name [$s]"
		;;
	*) die_usage "BENCH_SYSTEMS: unknown system [$s] (direct, nginx, nginx-disk, bucketcache, bucketcache-POLICY, bucketcache-plans, bucketcache-disk, bucketcache-rgw)" ;;
	esac
done
# shellcheck disable=SC2086 # one system a line
[ "$(printf '%s\n' $SYSTEMS | sort | uniq -d)" = "" ] || die_usage "BENCH_SYSTEMS names a system twice"
HAVE_DISK=0
case " $SYSTEMS " in
*-disk\ *) HAVE_DISK=1 ;;
esac
HAVE_RGW=0
case " $SYSTEMS " in
*" bucketcache-rgw "*) HAVE_RGW=1 ;;
esac
case $DATA_ROOT in
/*) ;;
*) die_usage "BENCH_DATA must be an absolute path" ;;
esac

# ---- packages -----------------------------------------------------------------

# missing_pkgs: the Debian packages that are not there.
missing_pkgs() {
	local m=()
	[ -x "$PY" ] || m+=(python3)
	if [ -x "$PY" ]; then
		"$PY" -c 'import torch' 2>/dev/null || m+=(python3-torch)
		"$PY" -c 'import boto3, botocore' 2>/dev/null || m+=(python3-boto3)
		"$PY" -c 'import matplotlib' 2>/dev/null || m+=(python3-matplotlib)
	else
		m+=(python3-torch python3-boto3 python3-matplotlib)
	fi
	command -v nginx >/dev/null 2>&1 || m+=(nginx)
	command -v curl >/dev/null 2>&1 || m+=(curl)
	command -v timeout >/dev/null 2>&1 || m+=(coreutils)
	if [ "$HAVE_RGW" = 1 ]; then
		command -v radosgw >/dev/null 2>&1 || m+=(radosgw)
		command -v ceph-mon >/dev/null 2>&1 || m+=(ceph-mon)
		command -v ceph-osd >/dev/null 2>&1 || m+=(ceph-osd)
	fi
	printf '%s\n' "${m[@]}"
}

MISSING=$(missing_pkgs | tr '\n' ' ')
if [ -n "${MISSING// /}" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "# installing: $MISSING" >&2
		# shellcheck disable=SC2086 # a list of package names
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $MISSING >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $MISSING >&2; } ||
			{ echo "bench_training.sh: apt-get install $MISSING failed" >&2; exit 1; }
	else
		echo "bench_training.sh: missing packages; as root, run:" >&2
		echo "  apt-get install -y $MISSING" >&2
		exit 77
	fi
fi

# ---- processes and cleanup --------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-train.XXXXXX")
HEADER=$TMP/header.txt
: >"$HEADER"
# the disk systems' caches: a temp dir on a real disk (checked below)
DISKTMP=
if [ "$HAVE_DISK" = 1 ]; then
	[ -d "$DISK_DIR" ] && [ -w "$DISK_DIR" ] ||
		{ echo "bench_training.sh: BENCH_DISK_DIR=$DISK_DIR is not a writable directory" >&2; rm -rf "$TMP"; exit 1; }
	DISKTMP=$(mktemp -d "$DISK_DIR/bc-train-disk.XXXXXX")
	chmod 755 "$DISKTMP"
fi

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	[ "$HAVE_RGW" = 0 ] || bc__rgw_stop   # radosgw before its monitor
	bench_stop_pids "${PIDS[@]}"
	if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then
		echo "# kept $TMP${DISKTMP:+ and $DISKTMP}" >&2
	else
		rm -rf "$TMP" ${DISKTMP:+"$DISKTMP"}
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
	echo "bench_training.sh: FAILED: $*" >&2
	exit 1
}

bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" ||
	{ echo "$(basename "$0"): building build/bucketcache failed" >&2; exit 1; }
[ -x "$BC_BIN" ] || case " $SYSTEMS " in
*" bucketcache"*) fail "BC_BIN=$BC_BIN is not an executable" ;;
esac
[ -f "$SRCDIR/contrib/python/bucketcache/sampler.py" ] ||
	fail "contrib/python (the HintedSampler the loader uses) is missing"
for f in gen_data.py delay_proxy.py loader.py report.py; do
	[ -f "$TDIR/$f" ] || fail "$TDIR/$f missing"
done

free_port() { bench_free_port; }
wait_http() { bench_wait_http "$@"; }
stop_pid() { bench_stop_pid "$1"; }

# ---- machine and versions ---------------------------------------------------

first_line() { head -n 1 | tr -d '\r'; }

pyver() {
	"$PY" -c 'import sys, torch, boto3, botocore
try:
    import matplotlib
    mv = matplotlib.__version__
except ImportError:
    mv = "not installed"
print("torch %s, boto3 %s, botocore %s, python %s, matplotlib %s" % (
    torch.__version__, boto3.__version__, botocore.__version__,
    sys.version.split()[0], mv))' 2>/dev/null
}

say "date:        $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "command:     $CMDLINE"
say "machine:     $(hostname 2>/dev/null || echo '?'), nproc $(nproc), $(bench_cpu_model)"
say "kernel:      $(uname -srm)"
say "memory:      $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
say "load avg:    $(bench_load) (at start; other work on the machine shows here)"
say "git:         $(bench_git_rev "$SRCDIR")"
if [ -x "$BC_BIN" ]; then
	say "bucketcache: $("$BC_BIN" --version 2>&1 | first_line) ($BC_BIN)"
fi
say "python:      $(pyver) ($PY)"
say "nginx:       $(nginx -v 2>&1 | first_line | sed 's/^nginx version: //')"

# ---- the data set -------------------------------------------------------------

DATA=$DATA_ROOT/$BUCKET-n$NOBJ-seed$SEED-med${MEDIAN_KIB}k-sigma$SIGMA
mkdir -p "$DATA"
chmod 755 "$DATA_ROOT" "$DATA"
note "data set $DATA (generated once, then reused; verifying it)"
DS_LINE=$("$PY" "$TDIR/gen_data.py" --dir "$DATA" --bucket "$BUCKET" --n "$NOBJ" \
    --seed "$SEED" --median-kib "$MEDIAN_KIB" --sigma "$SIGMA" --verify) ||
	fail "the data set could not be made or verified"
ds_field() { printf '%s\n' "$DS_LINE" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
DS_BYTES=$(ds_field bytes)
is_uint "$DS_BYTES" && [ "$DS_BYTES" -gt 0 ] || fail "gen_data.py said [$DS_LINE]"
if [ -n "$CACHE_BYTES" ]; then
	CAP=$CACHE_BYTES
	CACHE_PCT=$((CAP * 100 / DS_BYTES))
	CAP_DESC="$CAP bytes (BENCH_CACHE_BYTES; $(awk -v c="$CAP" -v d="$DS_BYTES" 'BEGIN { printf "%.1f", 100 * c / d }')% of the data set)"
else
	CAP=$((DS_BYTES * CACHE_PCT / 100))
	CAP_DESC="$CACHE_PCT% of the data set = $CAP bytes"
fi
MEM_CAP=$((DS_BYTES * DISK_MEM_PCT / 100))
DISK_CAP=$((DS_BYTES * DISK_PCT / 100 + NOBJ * 12288 + 16777216))
say "data set:    $NOBJ objects in s3://$BUCKET/train/..., $DS_BYTES bytes ($(awk -v b="$DS_BYTES" 'BEGIN { printf "%.1f MB", b / 1e6 }')), log-normal sizes (median ${MEDIAN_KIB} KiB, sigma $SIGMA, seed $SEED): min $(ds_field min), median $(ds_field median), mean $(ds_field mean), max $(ds_field max) bytes; $DATA"
say "cache cap:   $CAP_DESC ($(awk -v b="$CAP" 'BEGIN { printf "%.1f MB", b / 1e6 }')) for nginx (max_size) and bucketcache (--mem-size)"
if [ "$HAVE_DISK" = 1 ]; then
	fstype=$(stat -f -c %T "$DISKTMP")
	case $fstype in
	tmpfs | ramfs) fail "BENCH_DISK_DIR=$DISK_DIR is on $fstype: the disk systems need a real disk (set BENCH_DISK_DIR)" ;;
	esac
	avail=$(df -P -B1 "$DISKTMP" | awk 'NR == 2 { print $4 }')
	[ "$avail" -ge $((2 * DISK_CAP + 1073741824)) ] ||
		fail "$DISKTMP: $avail bytes free; the disk systems need $((2 * DISK_CAP + 1073741824)) (two caches of $DISK_CAP and 1 GiB to spare)"
	say "disk caps:   bucketcache-disk --mem-size $DISK_MEM_PCT% = $MEM_CAP bytes ($(awk -v b="$MEM_CAP" 'BEGIN { printf "%.1f MB", b / 1e6 }')), --disk-size and nginx-disk max_size $DISK_PCT% + 12 KiB per object + 16 MiB = $DISK_CAP bytes ($(awk -v b="$DISK_CAP" 'BEGIN { printf "%.1f MB", b / 1e6 }')); both in $DISKTMP ($fstype, $(df -P -h "$DISKTMP" | awk 'NR == 2 { print $1 ", " $4 " free" }'))"
fi
say "workload:    $JOBS job(s) at once per system, $EPOCHS epochs each; DataLoader(num_workers=$WORKERS, batch_size=$BATCH, sampler=randperm seeded seed*1000+epoch, seed $SEED for job j1, +1 per further job, persistent_workers=True, prefetch_factor=2); one boto3 client per worker (UNSIGNED, path-style, x-bucketcache-job: SYSTEM-jN); a ${COMPUTE_MS} ms sleep per batch as the training step; the jobs wait for each other between epochs (not timed)"
say "upstream:    static nginx (the S3 stand-in) behind delay_proxy.py ${PROXY_ARGS:---delay-ms $DELAY_MS}"
say "baseline:    direct (the loader reads the delay proxy itself, no cache); peer: nginx proxy_cache"

# ---- the static upstream and the delay proxy ---------------------------------

# start_nginx NAME CONF_BODY_FUNC: runs nginx with the http{} body that
# CONF_BODY_FUNC prints for a port ($1) and dir ($2); sets NG_PID, NG_URL.
start_nginx() {
	bench_start_nginx "$1" "$TMP" "$2" || fail "nginx ($1) did not start"
	NG_PID=$BENCH_NG_PID
	NG_URL=$BENCH_NG_URL
}

BENCH_STATIC_ROOT=$DATA/www
start_nginx static bench_static_conf
UP_URL=$NG_URL
say "static:      nginx $UP_URL, root $DATA/www (worker_processes auto, sendfile on, access_log off, keepalive_requests 1000000)"

if [ -z "$PROXY_ARGS" ]; then
	PROXY_ARGS="--delay-ms $DELAY_MS"
fi
# shellcheck disable=SC2086 # PROXY_ARGS is word-split on purpose
bench_start_delay_proxy "$UP_URL" "$TMP" $PROXY_ARGS || fail "delay_proxy.py did not start"
PROXY_URL=$BENCH_PROXY_URL
PROXY_SHAPE=$(curl -sf "$PROXY_URL/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("+%g ms per request%s%s%s" % (d["delay_ms"],
    ", +%g ms before each answer" % d["response_delay_ms"] if d["response_delay_ms"] else "",
    ", each connection at most %.0f MiB/s (%s)" % (d["conn_rate_bytes_per_second"] / 1048576, d["conn_rate_mode"])
    if d["conn_rate_bytes_per_second"] else "",
    ", all connections at most %.0f MiB/s" % (d["rate_bytes_per_second"] / 1048576) if d["rate_bytes_per_second"] else ""))') ||
	fail "cannot read $PROXY_URL/_delayproxy/stats"
DELAY_TOTAL_MS=$(curl -sf "$PROXY_URL/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%d" % (d["delay_ms"] + d["response_delay_ms"]))')

# sanity: the proxy forwards, and takes at least the delay
KEY0=$(head -n 1 "$DATA/manifest.tsv" | cut -f1)
SIZE0=$(head -n 1 "$DATA/manifest.tsv" | cut -f2)
read -r code size t <<<"$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' \
    --max-time 10 "$PROXY_URL/$BUCKET/$KEY0")" || true
[ "$code" = 200 ] && [ "$size" = "$SIZE0" ] ||
	fail "GET $PROXY_URL/$BUCKET/$KEY0 through the delay proxy: $code, $size bytes (want 200, $SIZE0)"
awk -v t="$t" -v d="$DELAY_TOTAL_MS" 'BEGIN { exit !(t * 1000 >= d) }' ||
	fail "a GET through the delay proxy took ${t}s, less than $DELAY_TOTAL_MS ms"
say "delay proxy: $PROXY_URL -> $UP_URL, $PROXY_SHAPE (tests/bench/training/delay_proxy.py $PROXY_ARGS); one GET of $KEY0: 200, $size bytes, ${t}s"

# ---- bucketcache-rgw's upstream: Ceph RGW loaded with the data set ----------------

# start_delay_proxy UPSTREAM NAME: another delay proxy (PROXY_ARGS, the
# main one's shape) in front of UPSTREAM; sets DP_URL.
start_delay_proxy() {
	local log=$TMP/$2.log pid
	# shellcheck disable=SC2086 # PROXY_ARGS is word-split on purpose
	"$PY" "$TDIR/delay_proxy.py" --upstream "$1" $PROXY_ARGS \
	    --port-file "$TMP/$2.port" >"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 100); do
		[ -s "$TMP/$2.port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$TMP/$2.port" ] || { cat "$log" >&2; fail "delay_proxy.py ($2) did not start"; }
	DP_URL=http://127.0.0.1:$(cat "$TMP/$2.port")
	wait_http "$DP_URL/_delayproxy/stats" "$pid" 10 || fail "delay_proxy.py ($2) does not answer"
}

if [ "$HAVE_RGW" = 1 ]; then
	# lib_rgw.sh is the integration tests' (on lib.sh): what it uses of lib.sh
	BC_TMP=$TMP BC_PY=$PY BC_LOGS=() BC_CLEANUP_HOOKS=()
	bc_fail() { fail "$*"; }
	bc_log() { note "$*"; }
	bc_free_port() { free_port; }
	bc__wait_http() { wait_http "$@"; }
	bc_skip_unless_tool() {
		local t
		for t in "$@"; do command -v "$t" >/dev/null 2>&1 || fail "$t not found"; done
	}
	# shellcheck source=tests/integration/lib_rgw.sh
	. "$SRCDIR/tests/integration/lib_rgw.sh"
	BC_RGW_MEM_BYTES=$((2 * DS_BYTES + 1073741824))   # memstore: RAM as used
	t_rgw=$(date +%s)
	bc_rgw_start
	note "loading the data set into RGW"
	"$PY" - "$BC_RGW_URL" "$BC_RGW_KEY" "$BC_RGW_SECRET" "$BUCKET" "$DATA" <<'PYEOF' ||
import os, sys
from concurrent.futures import ThreadPoolExecutor
import boto3
from botocore.config import Config
url, ak, sk, bucket, data = sys.argv[1:6]
s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                  aws_access_key_id=ak, aws_secret_access_key=sk,
                  config=Config(s3={"addressing_style": "path"},
                                max_pool_connections=16))
s3.create_bucket(Bucket=bucket)
keys = [l.split("\t")[0] for l in open(os.path.join(data, "manifest.tsv"))
        if l.strip()]
def put(k):
    with open(os.path.join(data, "www", bucket, k), "rb") as f:
        s3.put_object(Bucket=bucket, Key=k, Body=f.read())
with ThreadPoolExecutor(16) as ex:
    list(ex.map(put, keys))
print(len(keys))
PYEOF
		fail "loading the data set into RGW failed"
	start_delay_proxy "$BC_RGW_URL" rgw-proxy
	RGW_PROXY_URL=$DP_URL
	say "rgw:         Ceph RGW $(radosgw --version 2>/dev/null | awk '{ print $3 }') at $BC_RGW_URL (tests/integration/lib_rgw.sh: one mon, one memstore OSD, beast), the data set loaded in $(($(date +%s) - t_rgw)) s (start included), s3://$BUCKET/KEY as on nginx; delay proxy $RGW_PROXY_URL -> it, $PROXY_SHAPE"
fi

# ---- the systems ----------------------------------------------------------------

# the nginx systems' cache: its max_size and directory (nginx: CAP, in its
# temp dir; nginx-disk: DISK_CAP, under DISKTMP)
NGX_MAX=$CAP
NGX_CACHE=
nginx_cache_conf() {
	cat <<EOF
	sendfile on;
	keepalive_requests 1000000;
	log_format train '\$msec \$status \$upstream_cache_status \$upstream_bytes_received \$body_bytes_sent \$request_time \$http_x_bucketcache_job "\$request"';
	access_log $2/access.log train;
	proxy_cache_path ${NGX_CACHE:-$2/cache} levels=2 keys_zone=train:32m max_size=$NGX_MAX inactive=7d use_temp_path=off;
	upstream delay_proxy {
		server 127.0.0.1:${PROXY_URL##*:};
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$1;
		location = /_ping { access_log off; return 200 "ok\n"; }
		location / {
			proxy_pass http://delay_proxy;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_cache train;
			proxy_cache_valid 200 206 7d;
			proxy_cache_lock on;
			proxy_cache_lock_timeout 60s;
			proxy_buffering on;
		}
	}
EOF
}

BC_N=0
# the --mem-size of the next start_bucketcache
BC_MEM=$CAP
# the upstream of the next start_bucketcache, and the key pair it signs with
# (the static nginx ignores signatures; bucketcache-rgw sets RGW's)
BC_UP=
BC_AK=bench BC_SK=bench
# start_bucketcache [FLAGS...]: runs the daemon with --mem-size BC_MEM and
# FLAGS after the usual ones; sets BC_PID, BC_LOG, BC_URL, BC_DESC. Returns
# 3 with BC_REFUSED (the daemon's message) when it exits at once naming the
# first of FLAGS (--policy, --disk-dir): a policy or tier this binary does
# not have. Any other failure ends the benchmark.
start_bucketcache() {
	local pid port log
	BC_N=$((BC_N + 1))
	log=$TMP/bucketcache.$BC_N.log
	BC_REFUSED=
	for _ in 1 2 3; do
		port=$(free_port)
		# shellcheck disable=SC2086 # BC_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID="$BC_AK" AWS_SECRET_ACCESS_KEY="$BC_SK" \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "${BC_UP:-$PROXY_URL}" \
		    --anonymous --mem-size "$BC_MEM" $BC_ARGS "$@" >>"$log" 2>&1 &
		pid=$!
		if wait_http "http://127.0.0.1:$port/_bucketcache/health" "$pid" 15; then
			PIDS+=("$pid")
			BC_PID=$pid
			BC_LOG=$log
			BC_URL=http://127.0.0.1:$port
			BC_DESC="AWS_ACCESS_KEY_ID=$BC_AK AWS_SECRET_ACCESS_KEY=... $BC_BIN --listen 127.0.0.1:$port --upstream ${BC_UP:-$PROXY_URL} --anonymous --mem-size $BC_MEM${BC_ARGS:+ $BC_ARGS}${*:+ $*}"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		if [ $# -gt 0 ] && grep -q -- "$1" "$log"; then
			BC_REFUSED=$(grep -- "$1" "$log" | head -n 1)
			return 3
		fi
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "bucketcache did not become healthy"
}

# bc_flags SYSTEM: the daemon flags of a bucketcache system, one a line.
bc_flags() {
	case $1 in
	bucketcache) ;;
	bucketcache-plans) printf '%s\n' --policy "$PLANS_POLICY" ;;
	bucketcache-disk) printf '%s\n' --disk-dir "$DISKTMP/bucketcache" --disk-size "$DISK_CAP" --meta-ttl 168h ;;
	bucketcache-rgw) ;;
	bucketcache-*) printf '%s\n' --policy "${1#bucketcache-}" ;;
	esac
}

# run_loader LABEL ENDPOINT [loader args...]: the measured run, BENCH_JOBS
# loaders at once (jobs LABEL-j1, ...), each job's JSON in RUNS.
run_loader() {
	local label=$1 ep=$2 j rc bad='' pids=()
	shift 2
	note "$label: $JOBS job(s) x $EPOCHS epochs over $NOBJ objects via $ep"
	rm -rf "$TMP/$label.barrier"
	mkdir -p "$TMP/$label.barrier"
	for j in $(seq "$JOBS"); do
		{
			timeout -k 10 "$TIMEOUT" "$PY" -W 'ignore:This DataLoader will create' \
			    "$TDIR/loader.py" --endpoint "$ep" --bucket "$BUCKET" \
			    --manifest "$DATA/manifest.tsv" --label "$label-j$j" \
			    --out "$TMP/$label.j$j.json" --job "$label-j$j" \
			    --epochs "$EPOCHS" --workers "$WORKERS" --batch "$BATCH" \
			    --seed $((SEED + j - 1)) --compute sleep --compute-ms "$COMPUTE_MS" \
			    --barrier "$TMP/$label.barrier" --barrier-n "$JOBS" \
			    --barrier-timeout "$TIMEOUT" \
			    --proxy-stats "${LOADER_PROXY:-$PROXY_URL}/_delayproxy/stats" "$@" 2>&1
			echo $? >"$TMP/$label.j$j.rc"
		} | tee "$TMP/$label.j$j.loader.log" >&2 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	for j in $(seq "$JOBS"); do
		rc=$(cat "$TMP/$label.j$j.rc" 2>/dev/null || echo '?')
		[ "$rc" = 0 ] && [ -s "$TMP/$label.j$j.json" ] || bad+=" j$j (exit $rc)"
		RUNS+=(--run "$label=$TMP/$label.j$j.json")
	done
	[ -z "$bad" ] ||
		fail "$label: the loader run failed:$bad (124: over BENCH_TIMEOUT=$TIMEOUT s)"
}

# preflight: a bucketcache command line that does not start fails now, not
# after the systems before it have run (a policy the binary lacks is n/a)
case " $SYSTEMS " in
*" bucketcache"*)
	start_bucketcache
	stop_pid "$BC_PID"
	;;
esac

RUNS=()
# per system: the nginx access logs (--nginx-log LABEL=FILE) and the caps
# the cache-held column is read against (--cap-for LABEL=BYTES)
REPORT_ARGS=()
T0=$(date +%s)
for s in $SYSTEMS; do
	case $s in
	direct)
		say "direct:      endpoint $PROXY_URL (the delay proxy itself; no cache)"
		run_loader direct "$PROXY_URL"
		;;
	nginx | nginx-disk)
		if [ "$s" = nginx ]; then
			NGX_MAX=$CAP NGX_CACHE=
			d=$TMP/nginx-cache
			cdir=$d/cache
			start_nginx nginx-cache nginx_cache_conf
		else
			NGX_MAX=$DISK_CAP NGX_CACHE=$DISKTMP/nginx-disk
			d=$TMP/nginx-disk
			cdir=$NGX_CACHE
			start_nginx nginx-disk nginx_cache_conf
		fi
		REPORT_ARGS+=(--nginx-log "$s=$d/access.log" --cap-for "$s=$NGX_MAX")
		say "$s:$([ "$s" = nginx ] && echo '      ' || echo ' ') endpoint $NG_URL, nginx proxy_cache -> delay proxy; config:"
		sed -n '/proxy_cache_path/,/^	}$/p; /^	server {/,$p' "$d/nginx.conf" |
			grep -Ev '^}$|_ping' | sed 's/^/               /' | tee -a "$HEADER"
		# walking the cache dir costs CPU: every 3 s, not every second
		run_loader "$s" "$NG_URL" --nginx-log "$d/access.log" \
		    --cache-dir "$cdir" --sample-interval 3
		sleep 1   # the cache manager trims to max_size now and then
		say "$s: cache dir after the run: $(du -sb "$cdir" | cut -f1) bytes apparent, $(du -sB1 "$cdir" | cut -f1) bytes on disk, $(find "$cdir" -type f | wc -l) files; max_size $NGX_MAX (nginx counts disk blocks)"
		stop_pid "$NG_PID"
		if [ "$s" = nginx-disk ]; then
			rm -rf "$cdir"
		fi
		;;
	bucketcache*)
		mapfile -t flags < <(bc_flags "$s")
		src=0
		BC_MEM=$CAP
		BC_UP= BC_AK=bench BC_SK=bench LOADER_PROXY=
		if [ "$s" = bucketcache-rgw ]; then
			BC_UP=$RGW_PROXY_URL BC_AK=$BC_RGW_KEY BC_SK=$BC_RGW_SECRET
			LOADER_PROXY=$RGW_PROXY_URL
		fi
		if [ "$s" = bucketcache-disk ]; then
			BC_MEM=$MEM_CAP
			rm -rf "$DISKTMP/bucketcache"
			mkdir -p "$DISKTMP/bucketcache"
		fi
		REPORT_ARGS+=(--cap-for "$s=$BC_MEM")
		start_bucketcache "${flags[@]}" || src=$?
		if [ "$src" = 3 ]; then
			say "$s: n/a: $BC_BIN ${flags[*]}: $BC_REFUSED"
			RUNS+=(--na "$s=${flags[*]}: $BC_REFUSED")
			continue
		fi
		lim=$(curl -sf "$BC_URL/_bucketcache/stats" |
			"$PY" -c 'import json, sys; print(json.load(sys.stdin)["counters"]["cache_bytes_limit"])') ||
			fail "cannot read $BC_URL/_bucketcache/stats"
		[ "$lim" = "$BC_MEM" ] || fail "bucketcache reports cache_bytes_limit $lim, not --mem-size $BC_MEM"
		if [ "$s" = bucketcache-disk ]; then
			dcap=$(curl -sf "$BC_URL/_bucketcache/stats" |
				"$PY" -c 'import json, sys; print(json.load(sys.stdin).get("tiers", {}).get("disk", {}).get("capacity_bytes", "none"))') ||
				fail "cannot read $BC_URL/_bucketcache/stats"
			[ "$dcap" = "$DISK_CAP" ] || fail "bucketcache-disk: its disk tier's capacity_bytes is $dcap, not --disk-size $DISK_CAP"
		fi
		say "$s: endpoint $BC_URL: $BC_DESC"
		"$PY" "$BENCH_DIR/bench_sidecar.py" sample --pid "$BC_PID" --stats "$BC_URL/_bucketcache/stats" \
		    --label "$s" --out "$TMP/$s.sample.json" &
		SAMPLER_PID=$!
		PIDS+=("$SAMPLER_PID")
		REPORT_ARGS+=(--sample "$s=$TMP/$s.sample.json")
		say "$s: cache_bytes_limit $lim (= --mem-size; counts chunks, per-entry overhead and metadata); default chunk size, readahead, meta-ttl, prefetch budgets (see --help) unless given above"
		plans=()
		if [ "$s" = bucketcache-plans ]; then
			plans=(--plans --hint-next 8)
			say "$s: each job: HintedSampler (contrib/python) posting the plans of the current and the next epoch, install_hints(client, job, sampler, n_next=8)"
		fi
		run_loader "$s" "$BC_URL" --bc-stats "$BC_URL/_bucketcache/stats" \
		    --bc-jobs "$BC_URL/_bucketcache/v1/jobs" "${plans[@]}"
		curl -sf "$BC_URL/_bucketcache/stats" >"$TMP/$s.stats.json" || true
		if [ "$s" = bucketcache-disk ]; then
			say "$s: at the end: $("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
c, t = d.get("counters", {}), d.get("tiers", {})
m, k = t.get("memory", {}), t.get("disk", {})
print("disk tier hits %d, misses %d, writes %d, chunks %d, usage %d of %d bytes, evictions %d, queue_drops %d, write_failures %d, rejects %d, corrupt %d, up %d; memory tier hits %d, misses %d; cache_disk_sendfile %d, cache_bytes_disk %d" % (
    k.get("hits", 0), k.get("misses", 0), k.get("writes", 0), k.get("chunks", 0), k.get("usage_bytes", 0),
    k.get("capacity_bytes", 0), k.get("evictions", 0), k.get("queue_drops", 0), k.get("write_failures", 0),
    k.get("rejects", 0), k.get("corrupt", 0), k.get("up", 0), m.get("hits", 0), m.get("misses", 0),
    c.get("cache_disk_sendfile", 0), c.get("cache_bytes_disk", 0)))' "$TMP/$s.stats.json" 2>/dev/null || echo 'stats unreadable')"
			say "$s: disk dir after the run: $(du -sB1 "$DISKTMP/bucketcache" | cut -f1) bytes on disk, $(find "$DISKTMP/bucketcache" -type f | wc -l) files"
		fi
		n=$(grep -Ec ' (error|warn):' "$BC_LOG" || true)
		say "$s: log: $(wc -l <"$BC_LOG") lines, $n warn/error"
		if [ "$n" -gt 0 ]; then
			grep -E ' (error|warn):' "$BC_LOG" | head -n 5 | sed 's/^/               /' | tee -a "$HEADER"
		fi
		stop_pid "$SAMPLER_PID"
		kill -0 "$BC_PID" 2>/dev/null || fail "$s: bucketcache died during the run"
		stop_pid "$BC_PID"
		if [ "$s" = bucketcache-disk ]; then
			rm -rf "$DISKTMP/bucketcache"
		fi
		;;
	esac
done
say "proxy:       $(curl -sf "$PROXY_URL/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%d requests, %d errors, %d reconnects, %d upstream connections, at most %d client connections at once" % (
    d["requests"], d["errors"], d["reconnects"], d["upstream_connects"], d["conns_max"]))')"
if [ "$HAVE_RGW" = 1 ]; then
	say "rgw proxy:   $(curl -sf "$RGW_PROXY_URL/_delayproxy/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print("%d requests, %d errors, %d upstream connections" % (d["requests"], d["errors"], d["upstream_connects"]))')"
fi
say "load avg:    $(bench_load) (at end); measured phase $(($(date +%s) - T0)) s"

# ---- the report -----------------------------------------------------------------

if [ "$RESULTS" = none ]; then
	MD=$TMP/training.md
else
	mkdir -p "$(dirname "$RESULTS")"
	MD=$RESULTS
fi
STEM=${MD%.md}
say ""
rc=0
"$PY" "$TDIR/report.py" "${RUNS[@]}" "${REPORT_ARGS[@]}" \
    --header "$HEADER" --md "$TMP/body.md" --csv "$STEM.csv" --png "$STEM.png" \
    --manifest "$DATA/manifest.tsv" --cap "$CAP" --jobs "$JOBS" ${SUMMARY:+--summary "$SUMMARY"} \
    --title "$JOBS job(s), $NOBJ objects ($(awk -v b="$DS_BYTES" 'BEGIN { printf "%.0f MB", b / 1e6 }')), cache $(awk -v c="$CAP" 'BEGIN { printf "%.0f MiB", c / 1048576 }') ($CACHE_PCT%)$([ "$HAVE_DISK" = 1 ] && echo " (disk systems: memory $DISK_MEM_PCT%, disk $DISK_PCT%+)"), upstream $PROXY_SHAPE, $WORKERS workers x batch $BATCH" ||
	rc=$?
{
	echo "# bucketcache training-shaped benchmark$([ "$QUICK" = 1 ] && echo ' (BENCH_QUICK=1 smoke run)')"
	echo ""
	echo "Written by \`tests/bench/bench_training.sh\` (its header comment says what it"
	echo "does); each run replaces this file. $JOBS training job(s) at once, each a"
	echo "PyTorch DataLoader ($WORKERS workers, boto3, a $COMPUTE_MS ms training step per batch of"
	echo "$BATCH), read $NOBJ objects for $EPOCHS shuffled epochs from an upstream ($PROXY_SHAPE),"
	echo "directly, through nginx proxy_cache and through bucketcache (per policy, and"
	echo "with the jobs posting plans), the caches holding $CACHE_PCT% of the data set."
	if [ "$PROFILE" = sidecar ]; then
		echo "Profile sidecar (issue 25): a sidecar-sized cache ($CAP bytes) in front of an"
		echo "S3-shaped origin; the first epoch (cold; bucketcache-plans posts its plan"
		echo "before the epoch's first GET) is reported apart from epochs 2+, with ratios to"
		echo "direct (the baseline) and nginx (the peer), in the table after the first."
	fi
	echo "Every epoch visits every object once in a new random order, so a cache of"
	echo "half the data set under LRU keeps mostly objects that the epoch has already"
	echo "read (hit ratio about 0.15 for one job, 0.33 for two); a policy that fills"
	echo "once and keeps reaches $CACHE_PCT%; knowing the jobs' plans, more (issue 11)."
	if [ "$HAVE_DISK" = 1 ]; then
		echo "The disk systems (issue 12) keep the whole data set on this machine's disk:"
		echo "nginx-disk, nginx proxy_cache with max_size $DISK_CAP bytes ($DISK_PCT% of the data"
		echo "set, plus 12 KiB per object and 16 MiB), and bucketcache-disk, a memory tier of"
		echo "$DISK_MEM_PCT% in front of a disk tier of the same $DISK_CAP bytes (--disk-size),"
		echo "both in a temp dir under $DISK_DIR; from epoch 2 on both should hit on every"
		echo "read (target: bucketcache-disk >= 0.98, and its epochs 2+ no slower than"
		echo "nginx-disk's). Their cache-held column is read against their memory tier"
		echo "(bucketcache-disk) and max_size (nginx-disk). bucketcache-disk runs with"
		echo "--meta-ttl 168h, nginx-disk's proxy_cache_valid 7d: neither revalidates."
	fi
	echo ""
	echo "Rows: one per system, job (j1, j2, ...) and epoch, and with several jobs an"
	echo "\"all\" row per epoch (epoch s: the slowest job; data wait s: the sum over the"
	echo "jobs; hit ratio: all the jobs' reads; upstream and prefetch: the whole"
	echo "system). Columns: epoch s = wall time of the epoch (epoch 1 includes starting"
	echo "the workers); data wait s = time the training loop was blocked in next() on"
	echo "the loader waiting for its next batch (the training step is timed apart);"
	echo "hit ratio = as the system counts them (bucketcache: the job's counters in"
	echo "/_bucketcache/stats \"jobs\", all jobs: the totals; nginx: \$upstream_cache_status"
	echo "per job header); upstream MB (system) = bucketcache upstream_bytes_in, nginx"
	echo "\$upstream_bytes_received (heads included); upstream MB / requests (proxy)"
	echo "= what the delay proxy forwarded (bodies; the ground truth; per job only for"
	echo "direct); prefetch used / wasted = bucketcache's prefetch_used and"
	echo "prefetch_wasted deltas (chunks; the whole system);"
	echo "revalidations = bucketcache's HEAD If-None-Match after --meta-ttl;"
	echo "cache held = sampled while the epoch ran (bucketcache cache_bytes_held"
	echo "every second; nginx: bytes on disk in its cache dir, what max_size"
	echo "bounds, every 3 s). nginx enforces max_size only when its cache manager runs, at"
	echo "most every 10 s, so its cache overshoots the cap by up to ~10 s of fills"
	echo "(most in short epochs). The model table replays the recorded orders (several"
	echo "jobs: interleaved one read each in turn) through an LRU of exactly the cap"
	echo "and through \"fill once, never evict\". MB = 10^6 bytes."
	echo "CSV: $(basename "$STEM.csv"); plot: $(basename "$STEM.png")."
	echo ""
	cat "$TMP/body.md"
} >"$MD.tmp"
mv "$MD.tmp" "$MD"
if [ "$RESULTS" != none ]; then
	note "wrote $MD, $STEM.csv$([ -f "$STEM.png" ] && echo ", $STEM.png")"
fi
[ "$rc" = 0 ] || echo "bench_training.sh: some checks failed (CHECK FAILED lines above)" >&2
exit "$rc"
