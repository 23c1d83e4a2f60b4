#!/bin/bash
# bench_peers.sh — bucketcache against the caches people would use instead:
# nginx proxy_cache and Varnish, and the bucket itself (direct), all on this
# machine's loopback, in front of the same upstream. One command:
#
#   tests/bench/bench_peers.sh                  # full run, ~35-45 min on 2 cores
#   BENCH_QUICK=1 tests/bench/bench_peers.sh    # smoke run, ~5 min
#   BENCH_QUICK=1 BENCH_SECTIONS=disk tests/bench/bench_peers.sh  # disk tier, ~2 min
#   BENCH_PROFILE=sidecar tests/bench/bench_peers.sh  # issue 25's sidecar: ~5 min
#
# BENCH_PROFILE=sidecar (issue 25): a sidecar-sized gateway (--mem-size
# 32-256M, 8 readers) against nginx's slice cache and direct reads, from an
# S3-shaped origin (training/delay_proxy.py --s3: 20 ms each way, 32 MiB/s
# per connection), epoch 1 on its own row: this script then runs
# bench_sidecar.sh's peer sections (BENCH_SECTIONS "epochs stream small":
# shuffled epochs of 2,000 x 64 KiB at 64 MiB and the reservations matrix,
# one 256 MiB stream, 600 x 256 KiB cold) with its knobs (see its header),
# results in results/sidecar-peers.md (BENCH_QUICK=1:
# sidecar-peers-quick.md). bench_sidecar.sh adds the training row.
#
# Not part of `make check`. It measures a daemon binary, BC_BIN (default
# build/bucketcache, built with contrib/build when missing), with default
# settings except --mem-size (and --anonymous where said below; BENCH_BC_ARGS
# adds flags if you must).
#
# What it starts (every process on a free 127.0.0.1 port, configs and data
# in a temp dir, stopped and removed on exit whatever the exit status):
#   origin    nginx serving a directory laid out BUCKET/KEY, anonymously
#             (sendfile; Range, ETag, Last-Modified, If-Match and
#             If-None-Match are nginx's own). It listens on one port per
#             client of the hot section — direct (not logged), and one each
#             for the nginx cache, Varnish and each bucketcache (access-logged
#             with $server_port), so that every upstream request can be
#             attributed to its cache, the disk section's two included — and
#             on a "bulk" port (not logged) for the caches of the cold
#             section and the soak's gateway.
#   nginx     proxy_cache in front of origin: slice 8m (ranges), cache key
#             with $slice_range, proxy_cache_lock on, proxy_cache_valid
#             200 206 1h, keepalive upstream, cache files on /dev/shm,
#             X-Cache-Status: $upstream_cache_status.
#   varnish   varnishd -F -s malloc,BENCH_VARNISH_MEM, a VCL with origin as
#             backend, beresp.ttl 1h, do_stream, X-Cache: HIT/MISS.
#             (The cold section starts its own nginx and Varnish per round,
#             with the same configs apart from ports and paths.)
#   bucketcache  --upstream http://origin --mem-size BENCH_BC_MEM, WITHOUT
#             --anonymous: what users run, every client signature verified.
#             Its clients (curl and wrk) use presigned SigV4 URLs made by
#             boto3 (botocore's presigner, /usr/bin/python3 bench_peers.py
#             presign: path-style, region us-east-1, 7-day expiry, key pair
#             S3RVER/S3RVER, which is also the gateway's own default client
#             key), one URL per key, for that gateway's URL.
#   bucketcache-anon  the same daemon with --anonymous, read with plain
#             unsigned URLs (informational: the targets compare the signed
#             row). Both sign their upstream requests with
#             AWS_ACCESS_KEY_ID/SECRET S3RVER/S3RVER, which nginx ignores
#             and s3rver accepts. The cold section and the soak use
#             --anonymous gateways with plain URLs.
#   s3rver    (cold GETs only, if tests/integration/node_modules has it): the
#             slow reference S3 server, informational.
#   nginx-disk  (disk section) the nginx proxy_cache config above with its
#             cache files in a temp dir under BENCH_DISK_DIR (a real disk,
#             not tmpfs: checked) instead of /dev/shm; nginx sends them with
#             sendfile.
#   bucketcache-disk  (disk section) --mem-size BENCH_DISK_MEM (tiny
#             against the sets, so that its hits come from the disk tier:
#             sent from their files with sendfile, without memory; while
#             memory has room a hit is also promoted to it) --meta-ttl 1h
#             (nginx-disk's proxy_cache_valid: the warm-up takes minutes,
#             and a 60 s TTL would revalidate every object during the
#             measured runs) --disk-dir DIR --disk-size
#             SIZE, DIR a temp dir beside nginx-disk's, SIZE the disk set's
#             object sizes rounded up to 4 KiB plus 12 KiB per object
#             (header, metadata file), x 1.25, + 64 MiB; signed like the hot
#             section's targets' row (presigned URLs), or --anonymous with
#             BENCH_DISK_AUTH=anon.
#
# Sections (BENCH_SECTIONS, default "hot disk cold soak"):
#   hot   objects of each size in BENCH_SIZES, every cache warmed and checked
#         warm (a second pass must be a hit for every key in each cache's
#         own header, and each bucketcache's cache_hits must grow by the key
#         count; the signed one's GetObject 2xx too, its auth_failures must
#         stay 0), through the URLs wrk then reads (presigned ones for the
#         signed bucketcache); then per (size, conns) cell, BENCH_ROUNDS
#         rounds in which every target of BENCH_TARGETS is measured with
#         wrk (rotate.lua; BENCH_PATHS_FILE = the presigned URLs for the
#         signed bucketcache) for BENCH_DURATION s, in an order rotated every
#         round. Afterwards the origin log must show no request from any
#         cache during any measured run (bucketcache's HEAD revalidations,
#         one per object per --meta-ttl, are allowed and counted), each
#         bucketcache's stats no miss and no upstream byte, the signed one's
#         auth_failures still 0 and its GetObject 2xx grown by at least what
#         wrk completed; and one presigned URL with a wrong signature must
#         then be refused by it (403 SignatureDoesNotMatch, auth_failures
#         +1), so the row is known to have verified signatures.
#   disk  hot GETs from disk: objects of each size in BENCH_DISK_SIZES
#         (their own keys, bench/disk/SIZE/k-NNNNN), bucketcache-disk
#         against nginx-disk. Each is warmed: a fill pass (then, for
#         bucketcache-disk, until its disk tier has no write queued or
#         running and holds every chunk: write-behind; one more fill pass if
#         it does not), then a pass that must be a hit for every key in its
#         own header; for bucketcache-disk also cache_hits +keys,
#         cache_misses +0, and at least half the keys from the disk tier
#         (tiers.disk.hits, cache_disk_sendfile; the memory tier's hits and
#         misses printed); sha256 of the first and last object. Then the
#         files are synced (no writeback during the runs) and, page cache
#         warm, per (size, conns) cell BENCH_ROUNDS rounds of wrk
#         (rotate.lua) for BENCH_DURATION s on each, in an order rotated
#         every round, after BENCH_WARMUP s of unrecorded load each. The
#         origin log must show no GET from either during a measured run,
#         the gateway no miss or upstream byte, and at least half its GETs
#         sent from a disk file (cache_disk_sendfile / wrk's requests), or
#         the row did not measure the disk tier (ANOMALY); signed: the
#         auth checks of the hot section, and the wrong-signature probe.
#         Page cache cold (BENCH_DISK_COLD=auto): where `echo 1 >
#         /proc/sys/vm/drop_caches` is permitted, per size and round each
#         target reads every key once with BENCH_DISK_COLD_CLIENTS curl
#         transfers at a time right after the page cache was dropped (req/s
#         and MB/s = keys and bytes / wall time; every GET a hit in its own
#         header); where it is not (a container, not root), that is said in
#         the output and the results, and the cold rows are skipped.
#         Target (issue 12): bucketcache-disk / nginx-disk req/s >= 1.0x
#         at 128K and 4M, 64 connections, page cache warm; other
#         connection counts and the cold pass are informational.
#   cold  unique keys never read before: per round a fresh bucketcache and,
#         for the static upstream, a fresh nginx proxy_cache (its own
#         proxy_cache_path under /dev/shm) and a fresh Varnish (its own -n
#         work dir), all empty, in front of the origin's bulk port; one curl
#         reads each key once, BENCH_COLD_CLIENTS transfers at a time
#         (throughput), then reads other keys one by one (time to first
#         byte = time_starttransfer - time_pretransfer), directly from the
#         upstream and through each cache, the same keys for each (cold for
#         every cache, which starts empty), in an order rotated every round.
#         Every GET through a cache must be a miss in its own header; the
#         peers are stopped and their caches removed after the round. The
#         peers are informational: the cold targets compare bucketcache
#         with direct.
#   soak  a fresh bucketcache with --mem-size BENCH_SOAK_MEM, random GETs
#         (random.lua) over a data set BENCH_SOAK_FACTOR times that size for
#         BENCH_SOAK_SECONDS; VmRSS and cache_bytes_held sampled every
#         BENCH_SOAK_INTERVAL s.
#
# Output: a report on stdout, and BENCH_RESULTS_DIR (default
# tests/bench/results/) regenerated: benchmarks.md (machine, versions, exact
# commands and configs, tables, target verdicts), PNG plots, raw data as CSV
# and summary.json. bench_peers.py does the analysis. Each target is printed
# as PASS, MISS or n/a with its numbers.
#
# Exit status: 0 every target passed and nothing misbehaved; 3 the run was
# clean but a target was missed; 1 setup failed, or a cache misbehaved during
# a measured phase (errors, misses, upstream fetches: listed as ANOMALY,
# results still written); 2 bad usage; 77 skipped (a tool is missing and we
# are not root to install it: the apt-get line is printed).
#
# Environment (full-run defaults; BENCH_QUICK=1 defaults in brackets):
#   BC_BIN              daemon binary [<srcdir>/build/bucketcache]
#   BENCH_QUICK         1: the smoke-run defaults below [0]
#   BENCH_SECTIONS      "hot disk cold soak"
#   BENCH_SIZES         hot object sizes: "4K 128K 4M 64M"
#   BENCH_HOT_KEYS      objects per size: "4K:1024 128K:256 4M:64 64M:8"
#                       ["4K:256 128K:64 4M:16 64M:4"]
#   BENCH_CONNS         wrk connections: "1 16 64 256" ["64 256"]
#   BENCH_TARGETS       "direct nginx varnish bucketcache bucketcache-anon"
#                       (bucketcache: signed, required; bucketcache-anon may
#                       be dropped)
#   BENCH_ROUNDS        rounds per cell: 3 [1]
#   BENCH_DURATION      seconds per wrk run: 5 [2]
#   BENCH_WARMUP        unrecorded seconds per target and size: 1 [1]
#   BENCH_WRK_THREADS   most wrk threads (min(this, conns)): 2
#   BENCH_BC_MEM        hot/cold bucketcache --mem-size: 2G
#   BENCH_VARNISH_MEM   varnish malloc storage: 2G
#   BENCH_BC_ARGS       extra daemon flags, word-split: none
#   BENCH_DISK_SIZES    disk section object sizes: "128K 4M"
#   BENCH_DISK_KEYS     objects per size "SIZE:KEYS"; a size not listed:
#                       max(2 GiB [256 MiB], 4 x BENCH_DISK_MEM) of it,
#                       16..65536 objects (defaults: 128K:10240 4M:512
#                       [128K:10240 4M:320])
#   BENCH_DISK_CONNS    wrk connections: "64"
#   BENCH_DISK_MEM      bucketcache-disk --mem-size: 64M (an eighth for
#                       metadata, like nginx-disk's 64m keys zone)
#   BENCH_DISK_DIR      where the disk caches' temp dir is made (a real
#                       disk; tmpfs is refused): /var/tmp
#   BENCH_DISK_AUTH     bucketcache-disk: signed (presigned URLs) or anon
#                       (--anonymous, plain URLs): signed
#   BENCH_DISK_COLD     auto: the page-cache-cold pass where drop_caches is
#                       permitted (it drops the whole machine's page cache:
#                       use 0 on a machine shared with other work); 0:
#                       never: auto
#   BENCH_DISK_COLD_CLIENTS  transfers at once in the cold pass: 64
#   BENCH_COLD_SIZES    cold throughput sets "SIZE:KEYS": "128K:4096 4M:128"
#                       ["128K:1024 4M:64"]
#   BENCH_TTFB_KEYS     keys per size for time to first byte: 64 [32]
#   BENCH_COLD_CLIENTS  transfers at once for cold throughput: 16
#   BENCH_COLD_ROUNDS   3 [1]
#   BENCH_COLD_UPSTREAMS  "static s3rver" (s3rver skipped if not installed)
#   BENCH_SOAK_SECONDS  600 [30]
#   BENCH_SOAK_MEM      1G [256M]
#   BENCH_SOAK_FACTOR   data set / --mem-size: 2
#   BENCH_SOAK_SIZES    object sizes, bytes split evenly: "4M 128K"
#   BENCH_SOAK_CONNS    16
#   BENCH_SOAK_INTERVAL seconds between samples: 5 [2]
#   BENCH_TIMEOUT       the whole run is stopped after this many s: 5400 [900]
#   BENCH_RESULTS_DIR   results folder, or "none" [tests/bench/results]
#   BENCH_KEEP_TMP      1: keep the temp dir (logs, configs, raw output) [0]
#
# Machine noise: every server, wrk and curl share the machine's CPUs, and
# other work shows in the load average (recorded per run). Read the ratios
# and the per-round ratios, not the absolute numbers.

# shellcheck disable=SC2015,SC2317 # A && B || fail; cleanup runs from trap
set -euo pipefail
export LC_ALL=C
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY || true
PATH=$PATH:/usr/sbin:/sbin

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/lib_bench.sh
. "$BENCH_DIR/lib_bench.sh"
case ${BENCH_PROFILE:-default} in
default) ;;
sidecar)
	[ "${BENCH_QUICK:-0}" = 1 ] && sc_res=sidecar-peers-quick.md || sc_res=sidecar-peers.md
	BENCH_SECTIONS=${BENCH_SECTIONS:-epochs stream small} \
	    BENCH_RESULTS=${BENCH_RESULTS:-$BENCH_DIR/results/$sc_res} \
	    exec "$BENCH_DIR/bench_sidecar.sh" "$@"
	;;
*)
	echo "bench_peers.sh: BENCH_PROFILE must be default or sidecar" >&2
	exit 2
	;;
esac
SRCDIR=$(cd "$BENCH_DIR/../.." && pwd)
PY=/usr/bin/python3
HELPER=$BENCH_DIR/bench_peers.py
ROTATE_LUA=$BENCH_DIR/rotate.lua
RANDOM_LUA=$BENCH_DIR/random.lua
S3RVER_BIN=$SRCDIR/tests/integration/node_modules/.bin/s3rver
ME=bench_peers.sh

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	d_hot_keys="4K:256 128K:64 4M:16 64M:4"; d_conns="64 256"; d_rounds=1
	d_duration=2; d_warmup=1; d_cold_sizes="128K:1024 4M:64"; d_ttfb=32
	d_cold_rounds=1; d_soak_s=30; d_soak_mem=256M; d_soak_int=2; d_timeout=900
	d_disk_conns=64; d_disk_bytes=268435456
else
	d_hot_keys="4K:1024 128K:256 4M:64 64M:8"; d_conns="1 16 64 256"; d_rounds=3
	d_duration=5; d_warmup=1; d_cold_sizes="128K:4096 4M:128"; d_ttfb=64
	d_cold_rounds=3; d_soak_s=600; d_soak_mem=1G; d_soak_int=5; d_timeout=5400
	d_disk_conns=64; d_disk_bytes=2147483648
fi
BC_BIN_GIVEN=${BC_BIN:-}
BC_BIN=${BC_BIN:-$SRCDIR/build/bucketcache}
SECTIONS=${BENCH_SECTIONS:-hot disk cold soak}
SIZES=${BENCH_SIZES:-4K 128K 4M 64M}
HOT_KEYS=${BENCH_HOT_KEYS:-$d_hot_keys}
CONNS=${BENCH_CONNS:-$d_conns}
TARGETS=${BENCH_TARGETS:-direct nginx varnish bucketcache bucketcache-anon}
ROUNDS=${BENCH_ROUNDS:-$d_rounds}
DURATION=${BENCH_DURATION:-$d_duration}
WARMUP=${BENCH_WARMUP:-$d_warmup}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
BC_MEM=${BENCH_BC_MEM:-2G}
VARNISH_MEM=${BENCH_VARNISH_MEM:-2G}
BC_ARGS=${BENCH_BC_ARGS:-}
DISK_SIZES=${BENCH_DISK_SIZES:-128K 4M}
DISK_KEYS=${BENCH_DISK_KEYS:-}
DISK_CONNS=${BENCH_DISK_CONNS:-$d_disk_conns}
DISK_MEM=${BENCH_DISK_MEM:-}
DISK_DIR=${BENCH_DISK_DIR:-/var/tmp}
DISK_AUTH=${BENCH_DISK_AUTH:-signed}
DISK_COLD=${BENCH_DISK_COLD:-auto}
DISK_COLD_CLIENTS=${BENCH_DISK_COLD_CLIENTS:-64}
COLD_SIZES=${BENCH_COLD_SIZES:-$d_cold_sizes}
TTFB_KEYS=${BENCH_TTFB_KEYS:-$d_ttfb}
COLD_CLIENTS=${BENCH_COLD_CLIENTS:-16}
COLD_ROUNDS=${BENCH_COLD_ROUNDS:-$d_cold_rounds}
COLD_UPSTREAMS=${BENCH_COLD_UPSTREAMS:-static s3rver}
SOAK_SECONDS=${BENCH_SOAK_SECONDS:-$d_soak_s}
SOAK_MEM=${BENCH_SOAK_MEM:-$d_soak_mem}
SOAK_FACTOR=${BENCH_SOAK_FACTOR:-2}
SOAK_SIZES=${BENCH_SOAK_SIZES:-4M 128K}
SOAK_CONNS=${BENCH_SOAK_CONNS:-16}
SOAK_INTERVAL=${BENCH_SOAK_INTERVAL:-$d_soak_int}
TIMEOUT=${BENCH_TIMEOUT:-$d_timeout}
RESULTS_DIR=${BENCH_RESULTS_DIR:-$BENCH_DIR/results}
BUCKET=bench
KEY_DIGITS=5
# the presigned URLs of the signed bucketcache row: what a boto3 user makes
PRESIGN_REGION=us-east-1
PRESIGN_AK=S3RVER
PRESIGN_SK=S3RVER
PRESIGN_EXPIRES=604800

# The exact command line: the script plus every setting given in the
# environment, so that the run can be repeated as it was.
cmdline() {
	local v out=
	for v in $(compgen -e | grep -E '^(BENCH_[A-Z_]+|BC_BIN)$' | sort); do
		out+="$v=$(printf '%q' "${!v}") "
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
# to_bytes SIZE: 4096, 4K, 128K, 4M, 1G (binary units) -> bytes; 1 if bad.
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
# in_list WORD LIST: whether WORD is one of LIST's blank-separated words.
in_list() {
	local w
	for w in $2; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}

for s in $SECTIONS; do
	in_list "$s" "hot disk cold soak" || die_usage "BENCH_SECTIONS: unknown section [$s] (hot disk cold soak)"
done
for v in ROUNDS DURATION WRK_THREADS COLD_CLIENTS COLD_ROUNDS TTFB_KEYS SOAK_SECONDS \
    SOAK_FACTOR SOAK_CONNS SOAK_INTERVAL TIMEOUT DISK_COLD_CLIENTS; do
	is_uint "${!v}" && [ "${!v}" -ge 1 ] || die_usage "BENCH_$v must be a whole number >= 1"
done
is_uint "$WARMUP" || die_usage "BENCH_WARMUP must be a number of seconds"
for c in $CONNS; do
	is_uint "$c" && [ "$c" -ge 1 ] && [ "$c" -le 10000 ] || die_usage "BENCH_CONNS: bad value [$c]"
done
[ -n "${CONNS// /}" ] || die_usage "BENCH_CONNS is empty"
for t in $TARGETS; do
	in_list "$t" "direct nginx varnish bucketcache bucketcache-anon" ||
		die_usage "BENCH_TARGETS: unknown target [$t]"
done
in_list bucketcache "$TARGETS" || die_usage "BENCH_TARGETS must include bucketcache"
for c in $DISK_CONNS; do
	is_uint "$c" && [ "$c" -ge 1 ] && [ "$c" -le 10000 ] || die_usage "BENCH_DISK_CONNS: bad value [$c]"
done
[ -n "${DISK_CONNS// /}" ] || die_usage "BENCH_DISK_CONNS is empty"
in_list "$DISK_AUTH" "signed anon" || die_usage "BENCH_DISK_AUTH must be signed or anon"
in_list "$DISK_COLD" "auto 0" || die_usage "BENCH_DISK_COLD must be auto or 0"
case $DISK_DIR in
/*) ;;
*) die_usage "BENCH_DISK_DIR must be an absolute path" ;;
esac
# bucketcache-disk's memory tier: tiny against the sets (a disk hit is sent
# from its file and needs no memory; fills that find memory full run as
# transit fills to the disk), but with room for the objects' metadata (an
# eighth of it, as nginx-disk's 64 MiB keys zone holds its keys): a GET of
# an object whose metadata memory dropped reads it from disk first
[ -n "$DISK_MEM" ] || DISK_MEM=64M
for m in BC_MEM VARNISH_MEM SOAK_MEM DISK_MEM; do
	to_bytes "${!m}" >/dev/null || die_usage "BENCH_$m: bad size [${!m}]"
done
for u in $COLD_UPSTREAMS; do
	in_list "$u" "static s3rver" || die_usage "BENCH_COLD_UPSTREAMS: unknown upstream [$u]"
done

declare -A HOT_N=()
for kv in $HOT_KEYS; do
	to_bytes "${kv%%:*}" >/dev/null && is_uint "${kv#*:}" && [ "${kv#*:}" -ge 1 ] &&
		[ "${kv#*:}" -lt 100000 ] || die_usage "BENCH_HOT_KEYS: bad entry [$kv] (SIZE:KEYS)"
	HOT_N[${kv%%:*}]=${kv#*:}
done
for s in $SIZES; do
	to_bytes "$s" >/dev/null || die_usage "BENCH_SIZES: bad size [$s]"
	if [ -z "${HOT_N[$s]:-}" ]; then
		# not listed: about 256 MiB per size, 4..1024 objects
		n=$((268435456 / $(to_bytes "$s")))
		[ "$n" -ge 4 ] || n=4
		[ "$n" -le 1024 ] || n=1024
		HOT_N[$s]=$n
	fi
done
declare -A DISK_N=()
for kv in $DISK_KEYS; do
	to_bytes "${kv%%:*}" >/dev/null && is_uint "${kv#*:}" && [ "${kv#*:}" -ge 1 ] &&
		[ "${kv#*:}" -lt 100000 ] || die_usage "BENCH_DISK_KEYS: bad entry [$kv] (SIZE:KEYS)"
	DISK_N[${kv%%:*}]=${kv#*:}
done
[ -n "${DISK_SIZES// /}" ] || die_usage "BENCH_DISK_SIZES is empty"
for s in $DISK_SIZES; do
	to_bytes "$s" >/dev/null || die_usage "BENCH_DISK_SIZES: bad size [$s]"
	if [ -z "${DISK_N[$s]:-}" ]; then
		# at least 4 x the memory tier, so that the rotation over the
		# keys finds next to nothing in memory
		b=$d_disk_bytes
		[ "$b" -ge $((4 * $(to_bytes "$DISK_MEM"))) ] || b=$((4 * $(to_bytes "$DISK_MEM")))
		n=$((b / $(to_bytes "$s")))
		[ "$n" -ge 16 ] || n=16
		[ "$n" -le 65536 ] || n=65536
		DISK_N[$s]=$n
	fi
done
# bucketcache-disk's --disk-size: every object in 4 KiB blocks, 12 KiB more
# each (the file's header, the object's metadata file), a quarter more,
# 64 MiB more: the whole disk set fits, with room
DISK_BC_SIZE=0
for s in $DISK_SIZES; do
	b=$(to_bytes "$s")
	DISK_BC_SIZE=$((DISK_BC_SIZE + DISK_N[$s] * ((b + 4095) / 4096 * 4096 + 12288)))
done
DISK_SET_BYTES=0
for s in $DISK_SIZES; do
	DISK_SET_BYTES=$((DISK_SET_BYTES + DISK_N[$s] * $(to_bytes "$s")))
done
DISK_BC_SIZE=$((DISK_BC_SIZE * 5 / 4 + 67108864))
COLD_LIST=()
for kv in $COLD_SIZES; do
	to_bytes "${kv%%:*}" >/dev/null && is_uint "${kv#*:}" && [ "${kv#*:}" -ge 1 ] &&
		[ "${kv#*:}" -lt 100000 ] || die_usage "BENCH_COLD_SIZES: bad entry [$kv] (SIZE:KEYS)"
	COLD_LIST+=("$kv")
done
for s in $SOAK_SIZES; do
	to_bytes "$s" >/dev/null || die_usage "BENCH_SOAK_SIZES: bad size [$s]"
done

# ---- tools: install what is missing when root, else skip (77) -----------------

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v nginx >/dev/null 2>&1 || missing+=(nginx)
command -v varnishd >/dev/null 2>&1 || missing+=(varnish)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[ -x "$PY" ] || missing+=(python3)
if [ -x "$PY" ] && ! "$PY" -c 'import matplotlib' >/dev/null 2>&1; then
	missing+=(python3-matplotlib)
fi
# the signed row's presigned URLs
if { in_list hot "$SECTIONS" || { in_list disk "$SECTIONS" && [ "$DISK_AUTH" = signed ]; }; } &&
    [ -x "$PY" ] && ! "$PY" -c 'import boto3' >/dev/null 2>&1; then
	missing+=(python3-boto3)
fi
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "# $ME: installing ${missing[*]} (apt-get)" >&2
		# another apt-get may hold the lock: wait for it (bounded)
		apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >&2 ||
			{ apt-get -o DPkg::Lock::Timeout=600 update >&2 &&
			  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >&2; } ||
			{ echo "$ME: apt-get install ${missing[*]} failed" >&2; exit 1; }
	else
		echo "$ME: SKIPPED: missing ${missing[*]}; as root run: apt-get install -y ${missing[*]}" >&2
		exit 77
	fi
fi
bench_default_bin "$SRCDIR" "$BC_BIN_GIVEN" ||
	{ echo "$(basename "$0"): building build/bucketcache failed" >&2; exit 1; }
[ -x "$BC_BIN" ] || { echo "$ME: BC_BIN=$BC_BIN is not an executable" >&2; exit 1; }
for f in "$HELPER" "$ROTATE_LUA" "$RANDOM_LUA"; do
	[ -f "$f" ] || { echo "$ME: $f missing" >&2; exit 1; }
done
# %header{} in -w needs curl 7.84
if curl -s -o /dev/null -w '%header{x}' "file:///dev/null" 2>/dev/null | grep -q header; then
	echo "$ME: curl too old: -w %header{...} is not supported (need 7.84+)" >&2
	exit 1
fi
HAVE_S3RVER=0
if in_list cold "$SECTIONS" && in_list s3rver "$COLD_UPSTREAMS"; then
	if [ -x "$S3RVER_BIN" ] && command -v node >/dev/null 2>&1; then
		HAVE_S3RVER=1
	fi
fi

# ---- processes and cleanup ------------------------------------------------------

PIDS=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-peers.XXXXXX")
# nginx's cache files on tmpfs when there is one (as a production
# proxy_cache on a RAM disk would be); else in the temp dir.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	SHM=$(mktemp -d /dev/shm/bc-peers.XXXXXX)
else
	SHM=$TMP/shm
	mkdir -p "$SHM"
fi
# the disk section's caches: a temp dir on a real disk (checked below)
DISKTMP=
if in_list disk "$SECTIONS"; then
	[ -d "$DISK_DIR" ] && [ -w "$DISK_DIR" ] || { echo "$ME: BENCH_DISK_DIR=$DISK_DIR is not a writable directory" >&2; rm -rf "$TMP" "$SHM"; exit 1; }
	DISKTMP=$(mktemp -d "$DISK_DIR/bc-peers-disk.XXXXXX")
	chmod 755 "$DISKTMP"
fi
# run as root, nginx's workers drop to nobody and varnish's to vcache
chmod 755 "$TMP" "$SHM"
DATA=$TMP/data
WWW=$TMP/www
mkdir -p "$DATA/stats" "$DATA/conf" "$DATA/wrk" "$DATA/cold" "$DATA/urls" "$WWW/$BUCKET"
chmod 755 "$WWW" "$WWW/$BUCKET"
REPORT=$DATA/report.txt
: >"$REPORT"
: >"$DATA/anomalies.txt"
: >"$DATA/warnings.txt"
: >"$DATA/meta.tsv"
: >"$DATA/windows.tsv"
: >"$DATA/commands.txt"

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	bench_stop_pids "${PIDS[@]}"
	if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then
		echo "# kept $TMP and $SHM${DISKTMP:+ and $DISKTMP}" >&2
	else
		rm -rf "$TMP" "$SHM" ${DISKTMP:+"$DISKTMP"}
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

say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
note() { printf '# %s\n' "$*" >&2; }
fail() {
	echo "$ME: FAILED: $*" >&2
	exit 1
}
meta() { printf '%s\t%s\n' "$1" "$2" >>"$DATA/meta.tsv"; }
# command_note TEXT: an exact command, for the results document.
command_note() { printf '%s\n' "$*" >>"$DATA/commands.txt"; }
now() { date +%s.%N | cut -c1-17; }
window() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$DATA/windows.tsv"; }

free_port() {
	"$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# wait_port PORT PID SECONDS: until PORT answers any HTTP status; fails if
# PID dies.
wait_port() {
	local port=$1 pid=$2 secs=$3 i code
	for i in $(seq $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || return 1
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
		    "http://127.0.0.1:$port/" 2>/dev/null) || true
		[ -n "$code" ] && [ "$code" != 000 ] && return 0
		sleep 0.1
	done
	return 1
}

# stop_pid PID: TERM, up to 10 s, KILL; reaped and forgotten (so that the
# exit trap never signals a recycled PID).
stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	forget_pid "$pid"
}
# forget_pid PID: a reaped process leaves PIDS.
forget_pid() {
	local p keep=()
	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# ---- machine and versions ---------------------------------------------------------

cpu_model() { bench_cpu_model; }
first_line() { head -n 1 | tr -d '\r'; }
pkgver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo '?'; }

BC_VERSION="$("$BC_BIN" --version 2>&1 | first_line)"
GIT_REV=$(git -C "$SRCDIR" rev-parse --short HEAD 2>/dev/null || echo '?')
if [ -n "$(git -C "$SRCDIR" status --porcelain --untracked-files=no -- src 2>/dev/null | head -n 1)" ]; then
	GIT_REV="$GIT_REV + uncommitted changes in src/"
fi
meta date_start "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta command "$CMDLINE"
meta quick "$QUICK"
meta host "$(hostname 2>/dev/null || echo '?')"
meta nproc "$(nproc)"
meta cpu "$(cpu_model)"
meta kernel "$(uname -srm)"
meta memory "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
# shellcheck disable=SC1091
meta os "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta bucketcache "$BC_VERSION, $BC_BIN (mtime $(date -u -r "$BC_BIN" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$BC_BIN" | cut -c1-12)), tree $GIT_REV"
meta nginx "$(nginx -v 2>&1 | first_line | sed 's/^nginx version: //') (Debian $(pkgver nginx))"
meta varnish "$(varnishd -V 2>&1 | first_line | sed 's/^varnishd (//; s/)$//') (Debian $(pkgver varnish))"
meta wrk "$(wrk -v 2>&1 | first_line | sed 's/ Copyright.*//')"
meta curl "$(curl --version | first_line | cut -d' ' -f1-2)"
meta python "$("$PY" --version 2>&1), matplotlib $("$PY" -c 'import matplotlib; print(matplotlib.__version__)')"
if in_list hot "$SECTIONS"; then
	meta boto3 "$("$PY" -c 'import boto3, botocore; print("boto3 %s, botocore %s" % (boto3.__version__, botocore.__version__))')"
fi
if [ "$HAVE_S3RVER" = 1 ]; then
	meta s3rver "$("$S3RVER_BIN" --version 2>&1 | first_line) (node $(node --version))"
fi
meta sizes "$SIZES"
meta conns "$CONNS"
meta targets "$TARGETS"
meta rounds "$ROUNDS"
meta duration "$DURATION"
meta warmup "$WARMUP"
meta wrk_threads "$WRK_THREADS"
meta sections "$SECTIONS"
meta bc_mem "$BC_MEM"
meta varnish_mem "$VARNISH_MEM"
meta bc_args "$BC_ARGS"
if in_list disk "$SECTIONS"; then
	meta disk_sizes "$DISK_SIZES"
	meta disk_conns "$DISK_CONNS"
	meta disk_mem "$DISK_MEM"
	meta disk_bc_size "$DISK_BC_SIZE"
	meta disk_set_bytes "$DISK_SET_BYTES"
	meta disk_auth "$DISK_AUTH"
	meta disk_dir "$DISKTMP"
	meta disk_cold_clients "$DISK_COLD_CLIENTS"
fi

say "$ME: $CMDLINE"
say "machine: $(nproc) CPUs, $(cpu_model), $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr); load avg $(cut -d' ' -f1-3 /proc/loadavg)"
say "bucketcache: $BC_VERSION ($BC_BIN, tree $GIT_REV)"

# ---- objects -----------------------------------------------------------------------

# mkset NAME SIZE COUNT: COUNT objects of SIZE under www/bench/NAME/SIZE/k-NNNNN.
mkset() {
	local dir=$WWW/$BUCKET/$1/$2
	mkdir -p "$dir"
	"$PY" "$HELPER" mkobjs "$dir" "$3" "$(to_bytes "$2")" ||
		fail "cannot create $3 objects of $2 in $dir"
	chmod -R a+rX "$WWW"
}
keyname() { printf 'k-%0*d' "$KEY_DIGITS" "$1"; }

if in_list hot "$SECTIONS"; then
	for s in $SIZES; do
		note "creating ${HOT_N[$s]} objects of $s (hot)"
		mkset hot "$s" "${HOT_N[$s]}"
		meta "hot_keys_$s" "${HOT_N[$s]}"
	done
fi
if in_list disk "$SECTIONS"; then
	for s in $DISK_SIZES; do
		note "creating ${DISK_N[$s]} objects of $s (disk)"
		mkset disk "$s" "${DISK_N[$s]}"
		meta "disk_keys_$s" "${DISK_N[$s]}"
	done
fi
if in_list cold "$SECTIONS"; then
	for kv in "${COLD_LIST[@]}"; do
		note "creating ${kv#*:} objects of ${kv%%:*} (cold throughput) and $TTFB_KEYS (ttfb)"
		mkset cold "${kv%%:*}" "${kv#*:}"
		mkset ttfb "${kv%%:*}" "$TTFB_KEYS"
	done
fi
SOAK_PATHS=$DATA/soak-paths.txt
if in_list soak "$SECTIONS"; then
	: >"$SOAK_PATHS"
	soak_total=$(( $(to_bytes "$SOAK_MEM") * SOAK_FACTOR ))
	nsizes=$(echo "$SOAK_SIZES" | wc -w)
	for s in $SOAK_SIZES; do
		n=$(( soak_total / nsizes / $(to_bytes "$s") ))
		[ "$n" -ge 1 ] || n=1
		note "creating $n objects of $s (soak)"
		mkset soak "$s" "$n"
		for ((i = 0; i < n; i++)); do
			printf '/%s/soak/%s/%s\n' "$BUCKET" "$s" "$(keyname "$i")"
		done >>"$SOAK_PATHS"
		meta "soak_keys_$s" "$n"
	done
fi

# ---- servers -----------------------------------------------------------------------

NGINX_TEMPS() {
	local d=$1
	printf '\tclient_body_temp_path %s/tmp/body;\n\tproxy_temp_path %s/tmp/proxy;\n' "$d" "$d"
	printf '\tfastcgi_temp_path %s/tmp/fastcgi;\n\tuwsgi_temp_path %s/tmp/uwsgi;\n\tscgi_temp_path %s/tmp/scgi;\n' "$d" "$d" "$d"
}

# The origin: one nginx, a port per client (see the header).
declare -A ORIGIN_PORT=()
start_origin() {
	local d=$TMP/origin pid
	mkdir -p "$d/tmp"
	chmod 755 "$d"
	for _ in 1 2 3; do
		ORIGIN_PORT[direct]=$(free_port)
		ORIGIN_PORT[nginx]=$(free_port)
		ORIGIN_PORT[varnish]=$(free_port)
		ORIGIN_PORT[bucketcache]=$(free_port)
		ORIGIN_PORT[bucketcache-anon]=$(free_port)
		ORIGIN_PORT[nginx-disk]=$(free_port)
		ORIGIN_PORT[bucketcache-disk]=$(free_port)
		ORIGIN_PORT[bulk]=$(free_port)
		cat >"$d/nginx.conf" <<EOF
# bench_peers.sh origin: anonymous static files, BUCKET/KEY under $WWW
worker_processes auto;
error_log $d/error.log warn;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
	access_log off;
	default_type application/octet-stream;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
$(NGINX_TEMPS "$d")
	log_format origin '\$msec \$server_port \$request_method \$status \$body_bytes_sent \$uri "\$http_range"';
	# direct: what wrk and curl read the bucket through; bulk: the
	# upstream of the cold and soak gateways (neither logged)
	server {
		listen 127.0.0.1:${ORIGIN_PORT[direct]};
		listen 127.0.0.1:${ORIGIN_PORT[bulk]};
		root $WWW;
	}
	# the caches' upstream: one port each, every request logged
	server {
		listen 127.0.0.1:${ORIGIN_PORT[nginx]};
		listen 127.0.0.1:${ORIGIN_PORT[varnish]};
		listen 127.0.0.1:${ORIGIN_PORT[bucketcache]};
		listen 127.0.0.1:${ORIGIN_PORT[bucketcache-anon]};
		listen 127.0.0.1:${ORIGIN_PORT[nginx-disk]};
		listen 127.0.0.1:${ORIGIN_PORT[bucketcache-disk]};
		root $WWW;
		access_log $d/access.log origin buffer=64k flush=1s;
	}
}
EOF
		nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >>"$d/stderr.log" 2>&1 &
		pid=$!
		if wait_port "${ORIGIN_PORT[direct]}" "$pid" 10 && wait_port "${ORIGIN_PORT[bucketcache]}" "$pid" 5; then
			PIDS+=("$pid")
			ORIGIN_PID=$pid
			ORIGIN_LOG=$d/access.log
			cp "$d/nginx.conf" "$DATA/conf/origin-nginx.conf"
			command_note "origin: nginx -p $d -c $d/nginx.conf -g 'daemon off;'   (config: origin-nginx.conf)"
			meta origin_pid "$pid"
			for t in direct nginx varnish bucketcache bucketcache-anon nginx-disk bucketcache-disk bulk; do
				meta "origin_port_$t" "${ORIGIN_PORT[$t]}"
			done
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/error.log" "$d/stderr.log" >&2 2>/dev/null || true
	fail "origin nginx did not start"
}

# start_nginx_cache NAME ORIGIN_PORT CONF LABEL [ROOT]: an nginx
# proxy_cache in $TMP/NAME, its cache files in ROOT/NAME (ROOT: $SHM), in
# front of the origin's ORIGIN_PORT; its config copied to conf/CONF, its
# command noted as LABEL. Sets PEER_PID and PEER_URL. The caller stops it
# and removes ROOT/NAME.
start_nginx_cache() {
	local name=$1 oport=$2 conf=$3 label=$4 root=${5:-$SHM} d=$TMP/$1 pid port
	mkdir -p "$d/tmp"
	chmod 755 "$d"
	for _ in 1 2 3; do
		port=$(free_port)
		cat >"$d/nginx.conf" <<EOF
# bench_peers.sh: nginx proxy_cache in front of the origin
worker_processes auto;
error_log $d/error.log warn;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
$(NGINX_TEMPS "$d")
	proxy_cache_path $root/$name levels=1:2 keys_zone=bench:64m max_size=8g inactive=1d use_temp_path=off;
	upstream origin {
		server 127.0.0.1:$oport;
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$port;
		location / {
			slice 8m;
			proxy_cache bench;
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
}
EOF
		nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >>"$d/stderr.log" 2>&1 &
		pid=$!
		if wait_port "$port" "$pid" 10; then
			PIDS+=("$pid")
			PEER_PID=$pid
			PEER_URL=http://127.0.0.1:$port
			cp "$d/nginx.conf" "$DATA/conf/$conf"
			command_note "$label: nginx -p $d -c $d/nginx.conf -g 'daemon off;'   (config: $conf)"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/error.log" "$d/stderr.log" >&2 2>/dev/null || true
	fail "nginx proxy_cache ($name) did not start"
}

# start_varnish NAME ORIGIN_PORT CONF LABEL: a varnishd in $TMP/NAME (-n
# work dir $TMP/NAME/work, its own malloc storage) in front of the origin's
# ORIGIN_PORT; its VCL copied to conf/CONF, its command noted as LABEL. Sets
# PEER_PID and PEER_URL.
start_varnish() {
	local name=$1 oport=$2 conf=$3 label=$4 d=$TMP/$1 pid port
	mkdir -p "$d/work"
	chmod 755 "$d" "$d/work"
	cat >"$d/bench.vcl" <<EOF
# bench_peers.sh: Varnish in front of the origin
vcl 4.1;

backend origin {
	.host = "127.0.0.1";
	.port = "$oport";
}

sub vcl_recv {
	if (req.method != "GET" && req.method != "HEAD") {
		return (pass);
	}
	unset req.http.Cookie;
	return (hash);
}

sub vcl_backend_response {
	set beresp.ttl = 1h;
	set beresp.do_stream = true;
}

sub vcl_deliver {
	if (obj.hits > 0) {
		set resp.http.X-Cache = "HIT";
	} else {
		set resp.http.X-Cache = "MISS";
	}
}
EOF
	chmod 644 "$d/bench.vcl"
	for _ in 1 2 3; do
		port=$(free_port)
		varnishd -F -a "127.0.0.1:$port" -f "$d/bench.vcl" -s "malloc,$VARNISH_MEM" \
		    -n "$d/work" -T 127.0.0.1:0 >>"$d/varnishd.log" 2>&1 &
		pid=$!
		if wait_port "$port" "$pid" 30; then
			PIDS+=("$pid")
			PEER_PID=$pid
			PEER_URL=http://127.0.0.1:$port
			cp "$d/bench.vcl" "$DATA/conf/$conf"
			command_note "$label: varnishd -F -a 127.0.0.1:$port -f $d/bench.vcl -s malloc,$VARNISH_MEM -n $d/work -T 127.0.0.1:0   (VCL: $conf; every parameter at its default)"
			return 0
		fi
		kill -TERM "$pid" 2>/dev/null || true
		sleep 1
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/varnishd.log" >&2 2>/dev/null || true
	fail "varnishd ($name) did not start"
}

# start_gateway NAME UPSTREAM_URL MEM AK SK AUTH [FLAGS...]: a bucketcache;
# AUTH "signed" (client signatures verified against its default client key,
# its own AK/SK) or "anon" (--anonymous); FLAGS after the others. Sets
# GW_PID, GW_URL, GW_LOG.
GW_N=0
start_gateway() {
	local name=$1 up=$2 mem=$3 ak=$4 sk=$5 auth=$6 pid port log anon=() extra
	shift 6
	extra=("$@")
	GW_N=$((GW_N + 1))
	log=$TMP/gateway.$GW_N.${name//[^A-Za-z0-9_.-]/_}.log
	case $auth in
	signed) ;;
	anon) anon=(--anonymous) ;;
	*) fail "start_gateway: bad AUTH [$auth]" ;;
	esac
	for _ in 1 2 3; do
		port=$(free_port)
		# shellcheck disable=SC2086 # BC_ARGS is word-split on purpose
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		    AWS_ACCESS_KEY_ID="$ak" AWS_SECRET_ACCESS_KEY="$sk" \
		    "$BC_BIN" --listen "127.0.0.1:$port" --upstream "$up" \
		    "${anon[@]}" --mem-size "$mem" $BC_ARGS "${extra[@]}" >>"$log" 2>&1 &
		pid=$!
		if wait_port "$port" "$pid" 15 &&
		    curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$port/_bucketcache/health"; then
			PIDS+=("$pid")
			GW_PID=$pid
			GW_URL=http://127.0.0.1:$port
			GW_LOG=$log
			command_note "bucketcache ($name): AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk $BC_BIN --listen 127.0.0.1:$port --upstream $up${anon[*]:+ ${anon[*]}} --mem-size $mem${BC_ARGS:+ $BC_ARGS}${extra[*]:+ ${extra[*]}}"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		grep -qi 'in use' "$log" || break
	done
	cat "$log" >&2
	fail "bucketcache ($name) did not become healthy"
}

# stats_save URL FILE
stats_save() {
	curl -sf --max-time 10 "$1/_bucketcache/stats" >"$2" ||
		fail "cannot read $1/_bucketcache/stats"
}
# stats_get FILE COUNTER
stats_get() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"][sys.argv[2]])' "$1" "$2"
}

# gateway_log_check NAME LOG: warn/error lines the daemon logged.
gateway_log_check() {
	local name=$1 log=$2 n
	n=$(grep -Ec ' (error|warn):' "$log" || true)
	if [ "$n" -gt 0 ]; then
		say "bucketcache ($name) log: $n warn/error lines, first 5:"
		grep -E ' (error|warn):' "$log" | head -n 5 | sed 's/^/  /' | tee -a "$REPORT"
		if grep -Eq ' error:' "$log"; then
			echo "bucketcache ($name) logged errors" >>"$DATA/anomalies.txt"
		fi
	else
		say "bucketcache ($name) log: no warn/error lines"
	fi
	return 0
}

# ---- curl helpers ----------------------------------------------------------------------

# curl_keys URLS OUT [PARALLEL]: GET every URL of the file URLS (one a line)
# once, 8 (or PARALLEL) transfers at a time; OUT gets "code bytes url [cache
# header]", a line per URL.
curl_keys() {
	local urls=$1 out=$2 par=${3:-8} cfg u
	cfg=$out.cfg
	while IFS= read -r u; do
		printf 'url = "%s"\noutput = "/dev/null"\n' "$u"
	done <"$urls" >"$cfg"
	curl -sS --no-progress-meter --globoff --parallel --parallel-max "$par" --max-time 120 \
	    -w '%{http_code} %{size_download} %{url} [%header{x-cache-status}%header{x-cache}%header{x-bucketcache}]\n' \
	    -K "$cfg" >"$out" 2>"$out.err" || true
}

# hit_word TARGET: what the target's cache header says on a hit.
hit_word() {
	case $1 in
	nginx | varnish | nginx-disk) echo HIT ;;
	bucketcache | bucketcache-anon | bucketcache-disk) echo hit ;;
	*) echo '' ;;
	esac
}
is_gateway() { [ "$1" = bucketcache ] || [ "$1" = bucketcache-anon ]; }

# URLS["TARGET SIZE"]: the file of the URLs through which TARGET's clients
# (curl and wrk) read the hot keys of SIZE, one a line, in key order.
declare -A URLS=()
# make_urls TARGET SIZE: writes URLS["TARGET SIZE"]: for the signed
# bucketcache, presigned URLs made by boto3 for its URL (see the header);
# for every other target, plain URLs.
make_urls() {
	local tg=$1 s=$2 n=${HOT_N[$2]} f=$DATA/urls/$1.$2.urls i k
	if [ "$tg" = bucketcache ]; then
		"$PY" "$HELPER" presign "${URL[$tg]}" "$PRESIGN_REGION" "$PRESIGN_AK" "$PRESIGN_SK" \
		    "$PRESIGN_EXPIRES" "$BUCKET" "hot/$s/k-" "$n" "$f" ||
			fail "presigning the URLs of hot/$s (bench_peers.py presign) failed"
	else
		for ((i = 0; i < n; i++)); do
			printf -v k 'k-%0*d' "$KEY_DIGITS" "$i"
			printf '%s/%s/hot/%s/%s\n' "${URL[$tg]}" "$BUCKET" "$s" "$k"
		done >"$f"
	fi
	[ "$(wc -l <"$f")" = "$n" ] || fail "$f: not $n URLs"
	URLS["$tg $s"]=$f
}

# stats_op FILE OP CLASS: requests_by_op[OP][CLASS] (0 when absent).
stats_op() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("requests_by_op", {}).get(sys.argv[2], {}).get(sys.argv[3], 0))' "$1" "$2" "$3"
}

# warm_target TARGET: two passes over every hot key, through the URLs of
# URLS; the second must be all hits.
warm_target() {
	local tg=$1 url=${URL[$1]} s n bytes bad out h0 h1 g0 g1 a1 t0 st
	t0=$(now)
	for s in $SIZES; do
		n=${HOT_N[$s]}
		bytes=$(to_bytes "$s")
		out=$DATA/warm.$tg.$s
		st=$DATA/stats/warm-$tg-$s
		curl_keys "${URLS["$tg $s"]}" "$out.1"
		bad=$(awk -v b="$bytes" '$1 != 200 || $2 != b' "$out.1" | wc -l)
		[ "$bad" = 0 ] && [ "$(wc -l <"$out.1")" = "$n" ] ||
			{ head -n 5 "$out.1" "$out.1.err" >&2; fail "$tg: warm pass over $s: $bad of $n not '200, $bytes bytes'"; }
		if is_gateway "$tg"; then
			stats_save "$url" "$st-1.json"
		fi
		curl_keys "${URLS["$tg $s"]}" "$out.2"
		bad=$(awk -v b="$bytes" -v w="[$(hit_word "$tg")]" '$1 != 200 || $2 != b || $4 != w' "$out.2" | wc -l)
		[ "$bad" = 0 ] && [ "$(wc -l <"$out.2")" = "$n" ] ||
			{ awk -v w="[$(hit_word "$tg")]" '$4 != w' "$out.2" | head -n 5 >&2 || true; fail "$tg: second pass over $s: $bad of $n keys not '200 $(hit_word "$tg")'"; }
		if is_gateway "$tg"; then
			stats_save "$url" "$st-2.json"
			h0=$(stats_get "$st-1.json" cache_hits)
			h1=$(stats_get "$st-2.json" cache_hits)
			[ $((h1 - h0)) = "$n" ] || fail "$tg: cache_hits grew by $((h1 - h0)) over the second pass over $s, not $n"
			if [ "$tg" = bucketcache ]; then
				# the signed row: every GET authenticated
				g0=$(stats_op "$st-1.json" GetObject 2xx)
				g1=$(stats_op "$st-2.json" GetObject 2xx)
				a1=$(stats_get "$st-2.json" auth_failures)
				[ $((g1 - g0)) = "$n" ] ||
					fail "bucketcache (signed): requests_by_op GetObject 2xx grew by $((g1 - g0)) over the second pass over $s, not $n"
				[ "$a1" = 0 ] || fail "bucketcache (signed): auth_failures is $a1 after warming $s, not 0"
				say "warm: bucketcache $s: $n presigned URLs, pass 2 all '200 x-bucketcache: hit', cache_hits +$n, GetObject 2xx +$n, auth_failures 0"
			else
				say "warm: $tg $s: $n keys, pass 2 all '200 x-bucketcache: hit', cache_hits +$n"
			fi
		elif [ "$tg" = direct ]; then
			say "warm: direct $s: $n keys, 2 passes all '200, $bytes bytes' (page cache)"
		else
			say "warm: $tg $s: $n keys, pass 2 all '200 $( [ "$tg" = nginx ] && echo X-Cache-Status || echo X-Cache): HIT'"
		fi
	done
	window "warm-$tg" "$t0" "$(now)"
}

# sha_check TARGET: the first and last object of each size via the
# target's URLs == source.
sha_check() {
	local tg=$1 s n i k want got u
	for s in $SIZES; do
		n=${HOT_N[$s]}
		for i in 0 $((n - 1)); do
			k=$(keyname "$i")
			u=$(sed -n "$((i + 1))p" "${URLS["$tg $s"]}")
			want=$(sha256sum <"$WWW/$BUCKET/hot/$s/$k" | cut -c1-64)
			got=$(curl -sf --globoff --max-time 60 "$u" | sha256sum | cut -c1-64)
			[ "$got" = "$want" ] || fail "$tg: sha256 of hot/$s/$k is $got, the file's is $want"
		done
	done
	say "sha256: $tg == source for the first and last object of each size"
}

# auth_probe [TARGET URLFILE SECTION]: a signed bucketcache (TARGET,
# default the hot section's) refuses the first presigned URL of URLFILE
# (default its first size's) with its signature's last digit changed (403,
# auth_failures +1): the signed row did verify signatures. Run after the
# measured phase (its auth_failures stays 0 until then); a failure is an
# anomaly. meta SECTION_auth_probe (hot: auth_probe) says how it went.
auth_probe() {
	local tg=${1:-bucketcache} f=${2:-} sect=${3:-hot} s1 u last bad code a0 a1 errcode mkey
	local pre=$DATA/stats/auth-probe-$sect
	mkey=auth_probe
	[ "$sect" = hot ] || mkey=${sect}_auth_probe
	if [ -z "$f" ]; then
		read -r s1 _ <<<"$SIZES"
		f=${URLS["bucketcache $s1"]}
	fi
	u=$(head -n 1 "$f")
	last=${u: -1}
	if [ "$last" = 0 ]; then bad=${u%?}1; else bad=${u%?}0; fi
	stats_save "${URL[$tg]}" "$pre-before.json"
	code=$(curl -s --globoff --max-time 10 -o "$pre.body" -w '%{http_code}' "$bad") || true
	stats_save "${URL[$tg]}" "$pre-after.json"
	a0=$(stats_get "$pre-before.json" auth_failures)
	a1=$(stats_get "$pre-after.json" auth_failures)
	errcode=$(sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p' "$pre.body" | head -n 1)
	if [ "$code" = 403 ] && [ $((a1 - a0)) = 1 ]; then
		say "auth: $tg (signed) refused a presigned URL with a wrong signature: $code ${errcode:-?}, auth_failures +1"
		meta "$mkey" "$code ${errcode:-?}, auth_failures $a0 -> $a1"
	else
		say "auth: $tg (signed) answered a presigned URL with a wrong signature: ${code:-?} ${errcode:-}, auth_failures $a0 -> $a1"
		echo "$sect: $tg (signed) did not refuse a presigned URL with a wrong signature (HTTP ${code:-?} ${errcode:-}, auth_failures $a0 -> $a1, not 403 and +1): did the signed row verify signatures?" >>"$DATA/anomalies.txt"
	fi
}

# ---- hot GETs ------------------------------------------------------------------------------

declare -A URL=()
# the hot section's caches (stopped at its end)
NGINX_CACHE_PID=
VARNISH_PID=
# the hot section's gateways, by target (bucketcache, bucketcache-anon)
declare -A HOT_GW_PID=() HOT_GW_LOG=() HOT_GW_NAME=()
HOT_GWS=()

# run_wrk OUT CONNS SECS URL LUA [PATHS_FILE]: one wrk run (the key names
# from the caller's environment, or the lines of PATHS_FILE); sets WRK_LINE,
# WRK_T0, WRK_T1, WRK_LOAD.
run_wrk() {
	local out=$1 c=$2 secs=$3 url=$4 lua=$5 paths=${6:-} t=$WRK_THREADS
	[ "$c" -ge "$t" ] || t=$c
	WRK_LOAD=$(cut -d' ' -f1 /proc/loadavg)
	WRK_T0=$(now)
	BENCH_PATHS_FILE=$paths wrk -t"$t" -c"$c" -d"${secs}s" --timeout 10s -s "$lua" "$url/" >"$out" 2>&1 ||
		{ cat "$out" >&2; fail "wrk failed against $url ($c conns)"; }
	WRK_T1=$(now)
	WRK_LINE=$(grep '^BENCHRESULT ' "$out" | tail -n 1)
	[ -n "$WRK_LINE" ] || { cat "$out" >&2; fail "no BENCHRESULT line from wrk ($out)"; }
}

# paths_for TARGET SIZE: the paths file wrk reads for TARGET (the presigned
# URLs for the signed bucketcache), or "" (BENCH_PREFIX names).
paths_for() {
	if [ "$1" = bucketcache ]; then
		printf '%s' "${URLS["bucketcache $2"]}"
	fi
}

hot_section() {
	local tg s n c r i shift_ order_list cell=0 bytes line pid
	say ""
	say "=== hot GETs ==="
	for tg in $TARGETS; do
		case $tg in
		direct) URL[direct]=http://127.0.0.1:${ORIGIN_PORT[direct]} ;;
		nginx)
			start_nginx_cache nginx-cache "${ORIGIN_PORT[nginx]}" nginx-proxy-cache.conf nginx
			NGINX_CACHE_PID=$PEER_PID
			URL[nginx]=$PEER_URL
			;;
		varnish)
			start_varnish varnish "${ORIGIN_PORT[varnish]}" varnish.vcl varnish
			VARNISH_PID=$PEER_PID
			URL[varnish]=$PEER_URL
			;;
		bucketcache | bucketcache-anon)
			if [ "$tg" = bucketcache ]; then
				HOT_GW_NAME[$tg]="hot, signed"
				start_gateway "${HOT_GW_NAME[$tg]}" "http://127.0.0.1:${ORIGIN_PORT[$tg]}" "$BC_MEM" S3RVER S3RVER signed
			else
				HOT_GW_NAME[$tg]="hot-anon, --anonymous"
				start_gateway "${HOT_GW_NAME[$tg]}" "http://127.0.0.1:${ORIGIN_PORT[$tg]}" "$BC_MEM" S3RVER S3RVER anon
			fi
			HOT_GWS+=("$tg")
			HOT_GW_PID[$tg]=$GW_PID
			HOT_GW_LOG[$tg]=$GW_LOG
			URL[$tg]=$GW_URL
			;;
		esac
	done
	meta presign "$PRESIGN_REGION $PRESIGN_AK $PRESIGN_EXPIRES"
	command_note "presign (bucketcache, signed; per size): $PY tests/bench/bench_peers.py presign ${URL[bucketcache]} $PRESIGN_REGION $PRESIGN_AK $PRESIGN_SK $PRESIGN_EXPIRES $BUCKET hot/SIZE/k- N FILE   (boto3: Session().client('s3', endpoint_url='${URL[bucketcache]}', region_name='$PRESIGN_REGION', aws_access_key_id='$PRESIGN_AK', aws_secret_access_key='$PRESIGN_SK', config=Config(signature_version='s3v4', s3={'addressing_style': 'path'})).generate_presigned_url('get_object', Params={'Bucket': '$BUCKET', 'Key': 'hot/SIZE/k-NNNNN'}, ExpiresIn=$PRESIGN_EXPIRES), one URL a line; no AWS config or credential file read)"
	for tg in $TARGETS; do
		for s in $SIZES; do
			make_urls "$tg" "$s"
		done
	done
	read -r s _ <<<"$SIZES"
	meta presign_example "$(head -n 1 "${URLS["bucketcache $s"]}")"
	for tg in $TARGETS; do
		note "warming $tg (${URL[$tg]})"
		warm_target "$tg"
		sha_check "$tg"
	done
	for tg in "${HOT_GWS[@]}"; do
		meta "hot_rss_kib_warm_$tg" "$(awk '/^VmRSS/ { print $2 }' "/proc/${HOT_GW_PID[$tg]}/status")"
		stats_save "${URL[$tg]}" "$DATA/stats/hot-warm-$tg.json"
		meta "hot_bytes_held_warm_$tg" "$(stats_get "$DATA/stats/hot-warm-$tg.json" cache_bytes_held)"
	done

	local ntg
	ntg=$(echo "$TARGETS" | wc -w)
	read -r -a tgs <<<"$TARGETS"
	printf 'size\tsize_bytes\tnkeys\tconns\tround\torder\ttarget\tt0\tt1\tload1\trequests\tbytes\tduration_us\tp50_us\tp99_us\tmean_us\tmax_us\terr_connect\terr_read\terr_write\terr_status\terr_timeout\n' >"$DATA/hot_runs.tsv"
	command_note "wrk (hot): BENCH_NKEYS=N BENCH_PREFIX=/$BUCKET/hot/SIZE/k- BENCH_KEYDIGITS=$KEY_DIGITS wrk -t min(CONNS,$WRK_THREADS) -c CONNS -d ${DURATION}s --timeout 10s -s $ROTATE_LUA URL/"
	command_note "wrk (hot, bucketcache, signed): BENCH_PATHS_FILE=FILE wrk -t min(CONNS,$WRK_THREADS) -c CONNS -d ${DURATION}s --timeout 10s -s $ROTATE_LUA ${URL[bucketcache]}/   (FILE: the size's presigned URLs, as made above; rotate.lua requests each URL's path and query in turn)"
	for tg in "${HOT_GWS[@]}"; do
		stats_save "${URL[$tg]}" "$DATA/stats/hot-before-$tg.json"
	done
	window hot-measured-start "$(now)" "$(now)"
	for s in $SIZES; do
		n=${HOT_N[$s]}
		bytes=$(to_bytes "$s")
		export BENCH_NKEYS=$n BENCH_PREFIX="/$BUCKET/hot/$s/k-" BENCH_KEYDIGITS=$KEY_DIGITS
		if [ "$WARMUP" -gt 0 ]; then
			local maxc=0
			for c in $CONNS; do
				[ "$c" -le "$maxc" ] || maxc=$c
			done
			for tg in $TARGETS; do
				note "$s: ${WARMUP}s unrecorded warm-up of $tg at $maxc conns"
				run_wrk "$DATA/wrk/warmup.$s.$tg.out" "$maxc" "$WARMUP" "${URL[$tg]}" "$ROTATE_LUA" "$(paths_for "$tg" "$s")"
				window "wrk-warmup-$s-$tg" "$WRK_T0" "$WRK_T1"
			done
		fi
		for c in $CONNS; do
			cell=$((cell + 1))
			for ((r = 1; r <= ROUNDS; r++)); do
				shift_=$(( (r - 1 + cell) % ntg ))
				order_list=("${tgs[@]:$shift_}" "${tgs[@]:0:$shift_}")
				i=0
				for tg in "${order_list[@]}"; do
					i=$((i + 1))
					note "hot $s, $c conns, round $r/$ROUNDS: $tg"
					run_wrk "$DATA/wrk/hot.$s.c$c.r$r.$tg.out" "$c" "$DURATION" "${URL[$tg]}" "$ROTATE_LUA" "$(paths_for "$tg" "$s")"
					line=$(printf '%s' "$WRK_LINE" | sed 's/^BENCHRESULT //; s/[a-z_0-9]*=//g; s/ /\t/g')
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$bytes" "$n" "$c" "$r" "$i" "$tg" \
					    "$WRK_T0" "$WRK_T1" "$WRK_LOAD" "$line" >>"$DATA/hot_runs.tsv"
					printf '%s' "$WRK_LINE" | awk -v tg="$tg" -v c="$c" -v r="$r" -v s="$s" '{
						for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
						e = v["err_connect"] + v["err_read"] + v["err_write"] + v["err_status"] + v["err_timeout"]
						d = v["duration_us"] / 1e6
						printf "  %-4s c=%-3s r%s %-16s %9.0f req/s %6.2f GB/s p50 %8.2f ms p99 %8.2f ms%s\n",
						    s, c, r, tg, v["requests"] / d, v["bytes"] / d / 1e9,
						    v["p50_us"] / 1000, v["p99_us"] / 1000, e ? "  errors " e : ""
					}' | tee -a "$REPORT"
				done
			done
		done
	done
	unset BENCH_NKEYS BENCH_PREFIX BENCH_KEYDIGITS
	for tg in "${HOT_GWS[@]}"; do
		stats_save "${URL[$tg]}" "$DATA/stats/hot-after-$tg.json"
		kill -0 "${HOT_GW_PID[$tg]}" 2>/dev/null || echo "hot: the $tg process died during the measured phase" >>"$DATA/anomalies.txt"
		meta "hot_rss_kib_end_$tg" "$(awk '/^VmRSS/ { print $2 }' "/proc/${HOT_GW_PID[$tg]}/status" 2>/dev/null || echo 0)"
		meta "hot_bytes_held_end_$tg" "$(stats_get "$DATA/stats/hot-after-$tg.json" cache_bytes_held)"
	done
	auth_probe
	for tg in "${HOT_GWS[@]}"; do
		gateway_log_check "${HOT_GW_NAME[$tg]}" "${HOT_GW_LOG[$tg]}"
	done
	# stop the caches: memory for the next sections
	for pid in $NGINX_CACHE_PID $VARNISH_PID "${HOT_GW_PID[@]}"; do
		stop_pid "$pid"
	done
	rm -rf "$SHM/nginx-cache"
}

# ---- disk tier: hot GETs from disk ----------------------------------------------------

# The disk section's rows (see the header): bucketcache-disk, whose memory
# tier is tiny so that its hits come from its disk tier, and nginx-disk, the
# hot section's proxy_cache config with its cache files on the same disk.
DISK_TARGETS="bucketcache-disk nginx-disk"
DISK_PEER_PID=
DISK_GW_PID=
DISK_GW_LOG=
# DURLS["TARGET SIZE"]: the file of the URLs through which TARGET's clients
# read the disk set of SIZE, one a line, in key order.
declare -A DURLS=()

# disk_urls TARGET SIZE: writes DURLS["TARGET SIZE"] (presigned URLs for a
# signed bucketcache-disk, plain ones otherwise).
disk_urls() {
	local tg=$1 s=$2 n=${DISK_N[$2]} f=$DATA/urls/$1.$2.urls i k
	if [ "$tg" = bucketcache-disk ] && [ "$DISK_AUTH" = signed ]; then
		"$PY" "$HELPER" presign "${URL[$tg]}" "$PRESIGN_REGION" "$PRESIGN_AK" "$PRESIGN_SK" \
		    "$PRESIGN_EXPIRES" "$BUCKET" "disk/$s/k-" "$n" "$f" ||
			fail "presigning the URLs of disk/$s (bench_peers.py presign) failed"
	else
		for ((i = 0; i < n; i++)); do
			printf -v k 'k-%0*d' "$KEY_DIGITS" "$i"
			printf '%s/%s/disk/%s/%s\n' "${URL[$tg]}" "$BUCKET" "$s" "$k"
		done >"$f"
	fi
	[ "$(wc -l <"$f")" = "$n" ] || fail "$f: not $n URLs"
	DURLS["$tg $s"]=$f
}

# disk_tier_line URL: "queued writing chunks queue_drops write_failures
# rejects up capacity_bytes usage_bytes" of the gateway's disk tier.
disk_tier_line() {
	curl -sf --max-time 10 "$1/_bucketcache/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin).get("tiers", {}).get("disk")
if d is None:
    print("none")
else:
    print(" ".join(str(d.get(k, 0)) for k in ("queued", "writing", "chunks", "queue_drops",
          "write_failures", "rejects", "up", "capacity_bytes", "usage_bytes")))'
}

# disk_settle URL CHUNKS: waits (120 s at most) until the gateway's disk
# tier has no write queued or running (write-behind: a chunk reaches the
# disk after its response) and holds CHUNKS chunks; returns 1 if it is idle
# (for 2 s) or the time is up and it holds fewer. DISK_SETTLE: the last
# disk_tier_line.
disk_settle() {
	local url=$1 want=$2 idle=0 q w ch
	for _ in $(seq 600); do
		DISK_SETTLE=$(disk_tier_line "$url") || fail "cannot read $url/_bucketcache/stats"
		read -r q w ch _ <<<"$DISK_SETTLE"
		if [ "$q" = 0 ] && [ "$w" = 0 ]; then
			[ "$ch" -ge "$want" ] && return 0
			idle=$((idle + 1))
			[ "$idle" -lt 10 ] || return 1
		else
			idle=0
		fi
		sleep 0.2
	done
	return 1
}

# disk_deltas BEFORE AFTER: the gateway's counters from one stats file to
# the other: "cache_hits cache_misses cache_partial_hits upstream_requests
# upstream_bytes_in disk.hits disk.misses memory.hits memory.misses
# cache_disk_sendfile cache_bytes_disk auth_failures GetObject_2xx".
disk_deltas() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
c = lambda d, k: d.get('counters', {}).get(k, 0)
t = lambda d, tier, k: d.get('tiers', {}).get(tier, {}).get(k, 0)
g = lambda d: d.get('requests_by_op', {}).get('GetObject', {}).get('2xx', 0)
v = [c(b, k) - c(a, k) for k in ('cache_hits', 'cache_misses', 'cache_partial_hits',
                                 'upstream_requests', 'upstream_bytes_in')]
v += [t(b, tr, k) - t(a, tr, k) for tr, k in (('disk', 'hits'), ('disk', 'misses'),
                                             ('memory', 'hits'), ('memory', 'misses'))]
v += [c(b, k) - c(a, k) for k in ('cache_disk_sendfile', 'cache_bytes_disk', 'auth_failures')]
v.append(g(b) - g(a))
print(' '.join(str(x) for x in v))
PYEOF
}

# disk_warm TARGET: fills TARGET with every key of the disk sets and checks
# that it answers them all as hits (bucketcache-disk: from its disk tier).
disk_warm() {
	local tg=$1 url=${URL[$1]} s n bytes out st bad pass want=0 t0 w
	local q wr ch drops wf rej
	local hits miss part upr dh dm mh mm sf af g2
	t0=$(now)
	w=$(hit_word "$tg")
	for s in $DISK_SIZES; do
		n=${DISK_N[$s]}
		bytes=$(to_bytes "$s")
		out=$DATA/warm.$tg.$s
		st=$DATA/stats/warm-$tg-$s
		want=$((want + n))
		# a fill whose object the memory tier dropped meanwhile is not
		# written to the disk (it is no longer listed): more passes, one
		# transfer at a time, until the disk holds every chunk
		for pass in 1 2 3 4; do
			curl_keys "${DURLS["$tg $s"]}" "$out.fill$pass" "$([ "$pass" = 1 ] && echo 8 || echo 1)"
			bad=$(awk -v b="$bytes" '$1 != 200 || $2 != b' "$out.fill$pass" | wc -l)
			[ "$bad" = 0 ] && [ "$(wc -l <"$out.fill$pass")" = "$n" ] ||
				{ head -n 5 "$out.fill$pass" "$out.fill$pass.err" >&2; fail "$tg: fill pass over disk/$s: $bad of $n not '200, $bytes bytes'"; }
			[ "$tg" = bucketcache-disk ] || break
			disk_settle "$url" "$want" && break
			read -r q wr ch drops wf rej _ <<<"$DISK_SETTLE"
			[ "$pass" != 4 ] ||
				fail "$tg: after $pass fill passes over disk/$s its disk tier holds $ch chunks, not $want (queued $q, writing $wr, queue_drops $drops, write_failures $wf, rejects $rej)"
			say "warm: $tg $s: its disk tier holds $ch chunks of $want (all sizes so far) after fill pass $pass (queued $q, writing $wr, queue_drops $drops, write_failures $wf, rejects $rej): one more fill pass, one transfer at a time"
			echo "disk: bucketcache-disk's disk tier held $ch of $want chunks after fill pass $pass over disk/$s (8 transfers at a time on pass 1), with no queue drop, write failure or reject: GETs that found --mem-size $DISK_MEM full of chunks in use and the transit budget spent went to the origin uncached (cache_passthrough)" >>"$DATA/warnings.txt"
		done
		[ "$tg" != bucketcache-disk ] || stats_save "$url" "$st-1.json"
		curl_keys "${DURLS["$tg $s"]}" "$out.hit"
		bad=$(awk -v b="$bytes" -v w="[$w]" '$1 != 200 || $2 != b || $4 != w' "$out.hit" | wc -l)
		[ "$bad" = 0 ] && [ "$(wc -l <"$out.hit")" = "$n" ] ||
			{ awk -v w="[$w]" '$4 != w' "$out.hit" | head -n 5 >&2 || true; fail "$tg: hit pass over disk/$s: $bad of $n keys not '200 $w'"; }
		if [ "$tg" != bucketcache-disk ]; then
			say "warm: $tg $s: $n keys, the pass after the fill all '200 X-Cache-Status: HIT'"
			continue
		fi
		stats_save "$url" "$st-2.json"
		read -r hits miss part upr _ dh dm mh mm sf _ af g2 <<<"$(disk_deltas "$st-1.json" "$st-2.json")"
		[ "$hits" = "$n" ] && [ "$miss" = 0 ] && [ "$part" = 0 ] ||
			fail "$tg: over the hit pass over disk/$s: cache_hits +$hits, cache_misses +$miss, cache_partial_hits +$part (want +$n, 0, 0)"
		[ $((2 * dh)) -ge "$n" ] && [ $((2 * sf)) -ge "$n" ] ||
			fail "$tg: over the hit pass over disk/$s ($n keys): tiers.disk.hits +$dh, cache_disk_sendfile +$sf: not half the keys from the disk tier (memory: hits +$mh, misses +$mm); is --mem-size $DISK_MEM tiny against the set?"
		if [ "$DISK_AUTH" = signed ]; then
			[ "$g2" = "$n" ] && [ "$af" = 0 ] ||
				fail "$tg (signed): over the hit pass over disk/$s: GetObject 2xx +$g2 (want +$n), auth_failures +$af (want 0)"
		fi
		say "warm: $tg $s: $n keys, the pass after the fill all '200 x-bucketcache: hit': cache_hits +$hits, misses +0; disk tier hits +$dh, misses +$dm; memory tier hits +$mh, misses +$mm; cache_disk_sendfile +$sf; upstream requests +$upr$([ "$DISK_AUTH" = signed ] && echo ", GetObject 2xx +$g2, auth_failures 0")"
	done
	window "warm-$tg" "$t0" "$(now)"
}

# disk_sha TARGET: the first and last object of each disk size via the
# target's URLs == source.
disk_sha() {
	local tg=$1 s n i k u want got
	for s in $DISK_SIZES; do
		n=${DISK_N[$s]}
		for i in 0 $((n - 1)); do
			k=$(keyname "$i")
			u=$(sed -n "$((i + 1))p" "${DURLS["$tg $s"]}")
			want=$(sha256sum <"$WWW/$BUCKET/disk/$s/$k" | cut -c1-64)
			got=$(curl -sf --globoff --max-time 60 "$u" | sha256sum | cut -c1-64)
			[ "$got" = "$want" ] || fail "$tg: sha256 of disk/$s/$k is $got, the file's is $want"
		done
	done
	say "sha256: $tg == source for the first and last object of each disk size"
}

# drop_caches: sync, then echo 1 > /proc/sys/vm/drop_caches; returns 1 with
# DROP_WHY when that is not permitted.
DROP_WHY=
drop_caches() {
	sync
	if ! { echo 1 >/proc/sys/vm/drop_caches; } 2>"$DATA/drop_caches.err"; then
		DROP_WHY=$(sed 's/^.*drop_caches: //' "$DATA/drop_caches.err" | head -n 1)
		DROP_WHY=${DROP_WHY:-refused}
		return 1
	fi
	return 0
}

# disk_cold: per size and round, each target reads every key once,
# DISK_COLD_CLIENTS transfers at a time, right after the page cache was
# dropped; one row in disk_cold.tsv each. Skipped (and said) where
# drop_caches is not permitted.
disk_cold() {
	local s n r tg order_list shift_ i cfg out t0 t1 bytes ok bad nothit w
	local -a tgs
	read -r -a tgs <<<"$DISK_TARGETS"
	if [ "$DISK_COLD" = 0 ]; then
		say "disk, page cache cold: not measured (BENCH_DISK_COLD=0)"
		meta disk_cold "not measured: BENCH_DISK_COLD=0"
		return 0
	fi
	if ! drop_caches; then
		say "disk, page cache cold: not measured: echo 1 > /proc/sys/vm/drop_caches is not permitted here ($DROP_WHY; uid $(id -u)); only the page-cache-warm rows were measured"
		meta disk_cold "not measured: echo 1 > /proc/sys/vm/drop_caches is not permitted on this machine ($DROP_WHY, uid $(id -u))"
		echo "disk: the page-cache-cold rows were not measured: echo 1 > /proc/sys/vm/drop_caches is not permitted on this machine ($DROP_WHY)" >>"$DATA/warnings.txt"
		return 0
	fi
	meta disk_cold "measured: echo 1 > /proc/sys/vm/drop_caches (after sync) before every pass"
	printf 'size\tsize_bytes\tnkeys\tclients\tround\ttarget\tt0\tt1\tbytes\tok\tbad\tnothit\n' >"$DATA/disk_cold.tsv"
	command_note "curl (disk, page cache cold): sync; echo 1 > /proc/sys/vm/drop_caches; curl -sS --parallel --parallel-max $DISK_COLD_CLIENTS --max-time 120 -w ... -K CFG   (CFG: a url/output pair per key of the size; req/s and MB/s = keys and bytes / wall time of the command)"
	for s in $DISK_SIZES; do
		n=${DISK_N[$s]}
		for tg in $DISK_TARGETS; do
			cfg=$DATA/cold-disk.$tg.$s.cfg
			while IFS= read -r i; do
				printf 'url = "%s"\noutput = "/dev/null"\n' "$i"
			done <"${DURLS["$tg $s"]}" >"$cfg"
		done
		for ((r = 1; r <= ROUNDS; r++)); do
			shift_=$(( (r - 1) % ${#tgs[@]} ))
			order_list=("${tgs[@]:$shift_}" "${tgs[@]:0:$shift_}")
			for tg in "${order_list[@]}"; do
				cfg=$DATA/cold-disk.$tg.$s.cfg
				out=$DATA/cold-disk.$tg.$s.r$r
				w=$(hit_word "$tg")
				drop_caches || fail "drop_caches worked once, then failed ($DROP_WHY)"
				t0=$(now)
				curl -sS --no-progress-meter --globoff --parallel --parallel-max "$DISK_COLD_CLIENTS" --max-time 120 \
				    -w '%{http_code} %{size_download} %{url} [%header{x-cache-status}%header{x-bucketcache}]\n' \
				    -K "$cfg" >"$out" 2>"$out.err" || true
				t1=$(now)
				bytes=$(awk '{ s += $2 } END { print s + 0 }' "$out")
				ok=$(awk -v b="$(to_bytes "$s")" '$1 == 200 && $2 == b' "$out" | wc -l)
				nothit=$(awk -v w="[$w]" '$1 == 200 && $4 != w' "$out" | wc -l)
				bad=$((n - ok))
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$(to_bytes "$s")" "$n" \
				    "$DISK_COLD_CLIENTS" "$r" "$tg" "$t0" "$t1" "$bytes" "$ok" "$bad" "$nothit" >>"$DATA/disk_cold.tsv"
				awk -v t0="$t0" -v t1="$t1" -v b="$bytes" -v ok="$ok" -v tg="$tg" -v s="$s" -v r="$r" -v n="$n" \
				    -v bad="$bad" -v nh="$nothit" 'BEGIN {
					printf "  cold %-4s r%s %-16s %6d keys %7.3f s %9.0f req/s %8.1f MB/s%s%s\n", s, r, tg, n,
					    t1 - t0, ok / (t1 - t0), b / (t1 - t0) / 1e6, bad ? "  NOT OK: " bad : "",
					    nh ? "  NOT HITS: " nh : "" }' | tee -a "$REPORT"
				[ "$bad" = 0 ] && [ "$nothit" = 0 ] ||
					echo "disk cold $s round $r $tg: $bad of $n GETs not '200, full size', $nothit not a hit" >>"$DATA/anomalies.txt"
			done
		done
	done
}

disk_section() {
	local tg s n bytes c r i shift_ order_list cell=0 line maxc=0 fstype avail need pid u
	local miss upr upb dh mh mm sf af g2
	local -a tgs
	read -r -a tgs <<<"$DISK_TARGETS"
	say ""
	say "=== disk tier: hot GETs from disk ==="
	fstype=$(stat -f -c %T "$DISKTMP")
	case $fstype in
	tmpfs | ramfs) fail "BENCH_DISK_DIR=$DISK_DIR is on $fstype: the disk section needs a real disk (set BENCH_DISK_DIR)" ;;
	esac
	avail=$(df -P -B1 "$DISKTMP" | awk 'NR == 2 { print $4 }')
	# bucketcache-disk's bound, nginx-disk's copy (a header and a block
	# more per object) and 1 GiB to spare
	need=$((DISK_BC_SIZE + DISK_SET_BYTES + DISK_BC_SIZE / 4 + 1073741824))
	[ "$avail" -ge "$need" ] ||
		fail "$DISKTMP: $avail bytes free, the disk section needs $need (BENCH_DISK_KEYS smaller, or BENCH_DISK_DIR elsewhere)"
	meta disk_fs "$fstype on $(df -P "$DISKTMP" | awk 'NR == 2 { print $1 }') ($(findmnt -n -o SOURCE,FSTYPE,OPTIONS --target "$DISKTMP" 2>/dev/null | head -n 1 || echo '?'))"
	say "disk: caches in $DISKTMP ($fstype, $(df -P -h "$DISKTMP" | awk 'NR == 2 { print $1 ", " $4 " free" }')); sets: $(for s in $DISK_SIZES; do printf '%s x %s, ' "${DISK_N[$s]}" "$s"; done)$((DISK_SET_BYTES / 1048576)) MiB in all"
	mkdir -p "$DISKTMP/bucketcache"
	start_nginx_cache nginx-disk "${ORIGIN_PORT[nginx-disk]}" nginx-proxy-cache-disk.conf nginx-disk "$DISKTMP"
	DISK_PEER_PID=$PEER_PID
	URL[nginx-disk]=$PEER_URL
	start_gateway "disk, $DISK_AUTH" "http://127.0.0.1:${ORIGIN_PORT[bucketcache-disk]}" "$DISK_MEM" S3RVER S3RVER \
	    "$DISK_AUTH" --disk-dir "$DISKTMP/bucketcache" --disk-size "$DISK_BC_SIZE" \
	    --meta-ttl 1h
	DISK_GW_PID=$GW_PID
	DISK_GW_LOG=$GW_LOG
	URL[bucketcache-disk]=$GW_URL
	line=$(disk_tier_line "$GW_URL") || fail "cannot read $GW_URL/_bucketcache/stats"
	[ "$line" != none ] || fail "bucketcache-disk: no disk tier in /_bucketcache/stats \"tiers\" (does $BC_BIN have one?)"
	read -r _ _ _ _ _ _ u c _ <<<"$line"
	[ "$u" = 1 ] && [ "$c" = "$DISK_BC_SIZE" ] ||
		fail "bucketcache-disk: its disk tier is up=$u with capacity_bytes $c, not up with --disk-size $DISK_BC_SIZE"
	say "bucketcache-disk: --mem-size $DISK_MEM --disk-dir $DISKTMP/bucketcache --disk-size $DISK_BC_SIZE ($((DISK_BC_SIZE / 1048576)) MiB) --meta-ttl 1h, $([ "$DISK_AUTH" = signed ] && echo 'signed (presigned URLs)' || echo '--anonymous (plain URLs)'); nginx-disk: proxy_cache_path $DISKTMP/nginx-disk (the hot section's config otherwise)"
	for tg in $DISK_TARGETS; do
		for s in $DISK_SIZES; do
			disk_urls "$tg" "$s"
		done
	done
	for tg in $DISK_TARGETS; do
		note "warming $tg (${URL[$tg]})"
		disk_warm "$tg"
		disk_sha "$tg"
	done
	# what both wrote is on the disk: no writeback during the measured runs
	sync -f "$DISKTMP"
	say "disk: sizes on disk after warming: nginx-disk $(du -sB1 "$DISKTMP/nginx-disk" | cut -f1) bytes in $(find "$DISKTMP/nginx-disk" -type f | wc -l) files; bucketcache-disk $(du -sB1 "$DISKTMP/bucketcache" | cut -f1) bytes in $(find "$DISKTMP/bucketcache" -type f | wc -l) files"

	printf 'size\tsize_bytes\tnkeys\tconns\tround\torder\ttarget\tt0\tt1\tload1\trequests\tbytes\tduration_us\tp50_us\tp99_us\tmean_us\tmax_us\terr_connect\terr_read\terr_write\terr_status\terr_timeout\n' >"$DATA/disk_runs.tsv"
	command_note "wrk (disk, page cache warm): BENCH_NKEYS=N BENCH_PREFIX=/$BUCKET/disk/SIZE/k- BENCH_KEYDIGITS=$KEY_DIGITS wrk -t min(CONNS,$WRK_THREADS) -c CONNS -d ${DURATION}s --timeout 10s -s $ROTATE_LUA URL/$([ "$DISK_AUTH" = signed ] && echo "   (bucketcache-disk: BENCH_PATHS_FILE=its presigned URLs of the size)")"
	for c in $DISK_CONNS; do
		[ "$c" -le "$maxc" ] || maxc=$c
	done
	window disk-measured-start "$(now)" "$(now)"
	for s in $DISK_SIZES; do
		n=${DISK_N[$s]}
		bytes=$(to_bytes "$s")
		export BENCH_NKEYS=$n BENCH_PREFIX="/$BUCKET/disk/$s/k-" BENCH_KEYDIGITS=$KEY_DIGITS
		if [ "$WARMUP" -gt 0 ]; then
			for tg in $DISK_TARGETS; do
				note "disk $s: ${WARMUP}s unrecorded warm-up of $tg at $maxc conns"
				run_wrk "$DATA/wrk/disk-warmup.$s.$tg.out" "$maxc" "$WARMUP" "${URL[$tg]}" "$ROTATE_LUA" "$(disk_paths_for "$tg" "$s")"
				window "wrk-disk-warmup-$s-$tg" "$WRK_T0" "$WRK_T1"
			done
		fi
		stats_save "${URL[bucketcache-disk]}" "$DATA/stats/disk-$s-before.json"
		for c in $DISK_CONNS; do
			cell=$((cell + 1))
			for ((r = 1; r <= ROUNDS; r++)); do
				shift_=$(( (r - 1 + cell) % ${#tgs[@]} ))
				order_list=("${tgs[@]:$shift_}" "${tgs[@]:0:$shift_}")
				i=0
				for tg in "${order_list[@]}"; do
					i=$((i + 1))
					note "disk $s, $c conns, round $r/$ROUNDS: $tg"
					run_wrk "$DATA/wrk/disk.$s.c$c.r$r.$tg.out" "$c" "$DURATION" "${URL[$tg]}" "$ROTATE_LUA" "$(disk_paths_for "$tg" "$s")"
					line=$(printf '%s' "$WRK_LINE" | sed 's/^BENCHRESULT //; s/[a-z_0-9]*=//g; s/ /\t/g')
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$bytes" "$n" "$c" "$r" "$i" "$tg" \
					    "$WRK_T0" "$WRK_T1" "$WRK_LOAD" "$line" >>"$DATA/disk_runs.tsv"
					printf '%s' "$WRK_LINE" | awk -v tg="$tg" -v c="$c" -v r="$r" -v s="$s" '{
						for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
						e = v["err_connect"] + v["err_read"] + v["err_write"] + v["err_status"] + v["err_timeout"]
						d = v["duration_us"] / 1e6
						printf "  %-4s c=%-3s r%s %-16s %9.0f req/s %8.1f MB/s p50 %8.2f ms p99 %8.2f ms%s\n",
						    s, c, r, tg, v["requests"] / d, v["bytes"] / d / 1e6,
						    v["p50_us"] / 1000, v["p99_us"] / 1000, e ? "  errors " e : ""
					}' | tee -a "$REPORT"
				done
			done
		done
		stats_save "${URL[bucketcache-disk]}" "$DATA/stats/disk-$s-after.json"
		read -r _ miss _ upr upb dh _ mh mm sf _ af g2 <<<"$(disk_deltas "$DATA/stats/disk-$s-before.json" "$DATA/stats/disk-$s-after.json")"
		say "disk $s: bucketcache-disk over the measured runs: GetObject 2xx +$g2, cache_disk_sendfile +$sf, disk tier hits +$dh, memory tier hits +$mh misses +$mm, cache_misses +$miss, upstream requests +$upr ($upb bytes), auth_failures +$af"
	done
	unset BENCH_NKEYS BENCH_PREFIX BENCH_KEYDIGITS
	window disk-measured-end "$(now)" "$(now)"
	disk_cold
	kill -0 "$DISK_GW_PID" 2>/dev/null || echo "disk: the bucketcache-disk process died" >>"$DATA/anomalies.txt"
	kill -0 "$DISK_PEER_PID" 2>/dev/null || echo "disk: the nginx-disk process died" >>"$DATA/anomalies.txt"
	stats_save "${URL[bucketcache-disk]}" "$DATA/stats/disk-end.json"
	if [ "$DISK_AUTH" = signed ]; then
		read -r s _ <<<"$DISK_SIZES"
		auth_probe bucketcache-disk "${DURLS["bucketcache-disk $s"]}" disk
	fi
	gateway_log_check "disk, $DISK_AUTH" "$DISK_GW_LOG"
	n=$(grep -Ec '\[(error|crit|alert|emerg)\]' "$TMP/nginx-disk/error.log" 2>/dev/null || true)
	say "nginx-disk: error log: ${n:-0} error lines"
	if [ "${n:-0}" != 0 ]; then
		grep -E '\[(error|crit|alert|emerg)\]' "$TMP/nginx-disk/error.log" | head -n 3 | sed 's/^/  /' | tee -a "$REPORT"
		echo "nginx-disk logged $n errors" >>"$DATA/anomalies.txt"
	fi
	for pid in $DISK_PEER_PID $DISK_GW_PID; do
		stop_pid "$pid"
	done
	rm -rf "${DISKTMP:?}/nginx-disk" "${DISKTMP:?}/bucketcache"
}

# disk_paths_for TARGET SIZE: the paths file wrk reads for TARGET (the
# presigned URLs for a signed bucketcache-disk), or "" (BENCH_PREFIX names).
disk_paths_for() {
	if [ "$1" = bucketcache-disk ] && [ "$DISK_AUTH" = signed ]; then
		printf '%s' "${DURLS["bucketcache-disk $2"]}"
	fi
}

# ---- cold GETs -------------------------------------------------------------------------

S3RVER_URL=
start_s3rver() {
	local dir=$TMP/s3rver-data log=$TMP/s3rver.log nodeopt='' pid port
	mkdir -p "$dir"
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
			S3RVER_PID=$pid
			S3RVER_URL=http://127.0.0.1:$port
			command_note "s3rver: NODE_OPTIONS=$nodeopt $S3RVER_BIN --directory DIR --address 127.0.0.1 --port $port --silent --configure-bucket $BUCKET"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$log" >&2
	fail "s3rver did not start"
}

# s3rver_upload NAME SIZE N: PUT a set's files to s3rver.
s3rver_upload() {
	local name=$1 size=$2 n=$3 cfg=$DATA/cold/put.cfg out=$DATA/cold/put.out i k bad
	: >"$cfg"
	for ((i = 0; i < n; i++)); do
		k=$(keyname "$i")
		printf 'upload-file = "%s"\nurl = "%s/%s/%s/%s/%s"\noutput = "/dev/null"\n' \
		    "$WWW/$BUCKET/$name/$size/$k" "$S3RVER_URL" "$BUCKET" "$name" "$size" "$k" >>"$cfg"
	done
	curl -sS --no-progress-meter --parallel --parallel-max 8 --max-time 120 \
	    -w '%{http_code}\n' -K "$cfg" >"$out" 2>"$out.err" || true
	bad=$(grep -vc '^200$' "$out" || true)
	[ "$bad" = 0 ] && [ "$(wc -l <"$out")" = "$n" ] ||
		{ head -n 5 "$out.err" >&2; fail "upload of $name/$size to s3rver: $bad of $n not 200"; }
}

# curl's -w for every cold transfer: status, bytes, timings, and the cache
# headers (bucketcache's; nginx's X-Cache-Status or Varnish's X-Cache).
COLD_W='%{http_code} %{size_download} %{time_pretransfer} %{time_starttransfer} %{time_total} [%header{x-bucketcache}] [%header{x-cache-status}%header{x-cache}]\n'

# cold_tput UP ROUND TARGET BASE SIZE N: one curl reads the N keys of
# cold/SIZE once each, COLD_CLIENTS transfers at a time (--parallel: one
# process, so that no process start-up is measured); one row in
# cold_runs.tsv.
cold_tput() {
	local up=$1 r=$2 tg=$3 base=$4 s=$5 n=$6 i t0 t1 pre
	pre=$DATA/cold/$up.r$r.$tg.$s
	: >"$pre.cfg"
	for ((i = 0; i < n; i++)); do
		printf 'url = "%s/%s/cold/%s/%s"\noutput = "/dev/null"\n' "$base" "$BUCKET" "$s" "$(keyname "$i")" >>"$pre.cfg"
	done
	t0=$(now)
	curl -sS --no-progress-meter --parallel --parallel-max "$COLD_CLIENTS" --max-time 120 \
	    -w "$COLD_W" -K "$pre.cfg" >"$pre.all" 2>"$pre.err" || true
	t1=$(now)
	local bytes ok bad
	bytes=$(awk '{ s += $2 } END { print s + 0 }' "$pre.all")
	ok=$(awk -v b="$(to_bytes "$s")" '$1 == 200 && $2 == b' "$pre.all" | wc -l)
	bad=$((n - ok))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$up" "$r" "$tg" "$s" "$(to_bytes "$s")" "$n" \
	    "$COLD_CLIENTS" "$t0" "$t1" "$bytes" "$ok" "$bad" >>"$DATA/cold_runs.tsv"
	awk -v up="$up" -v r="$r" -v tg="$tg" -v s="$s" '{ printf "%s\t%s\t%s\ttput\t%s\t%s\n", up, r, tg, s, $0 }' \
	    "$pre.all" | tr ' ' '\t' >>"$DATA/cold_xfers.tsv"
	awk -v t0="$t0" -v t1="$t1" -v b="$bytes" -v up="$up" -v r="$r" -v tg="$tg" -v s="$s" -v n="$n" -v bad="$bad" \
	    'BEGIN { printf "  cold %-6s r%s %-11s %-4s x %-5s %7.3f s %6.3f GB/s%s\n", up, r, tg, s, n, t1 - t0, b / (t1 - t0) / 1e9, bad ? "  NOT OK: " bad : "" }' |
		tee -a "$REPORT"
	[ "$bad" = 0 ] || echo "cold $up round $r $tg $s: $bad of $n GETs not '200, full size'" >>"$DATA/anomalies.txt"
}

# cold_ttfb UP ROUND TARGET BASE SIZE: one client reads the TTFB_KEYS keys of
# ttfb/SIZE one after the other (one keep-alive connection).
cold_ttfb() {
	local up=$1 r=$2 tg=$3 base=$4 s=$5 i pre bad
	pre=$DATA/cold/$up.r$r.$tg.ttfb.$s
	: >"$pre.cfg"
	for ((i = 0; i < TTFB_KEYS; i++)); do
		printf 'url = "%s/%s/ttfb/%s/%s"\noutput = "/dev/null"\n' "$base" "$BUCKET" "$s" "$(keyname "$i")" >>"$pre.cfg"
	done
	curl -sS --no-progress-meter --max-time 120 -w "$COLD_W" -K "$pre.cfg" >"$pre.out" 2>"$pre.err" || true
	awk -v up="$up" -v r="$r" -v tg="$tg" -v s="$s" '{ printf "%s\t%s\t%s\tttfb\t%s\t%s\n", up, r, tg, s, $0 }' \
	    "$pre.out" | tr ' ' '\t' >>"$DATA/cold_xfers.tsv"
	bad=$(awk -v b="$(to_bytes "$s")" '$1 != 200 || $2 != b' "$pre.out" | wc -l)
	bad=$((bad + TTFB_KEYS - $(wc -l <"$pre.out")))
	# the median as bench_peers.py computes it (of time_starttransfer - time_pretransfer)
	awk '{ printf "%.6f\n", ($4 - $3) * 1000 }' "$pre.out" | sort -n |
		awk -v up="$up" -v r="$r" -v tg="$tg" -v s="$s" '
		{ t[NR] = $1 }
		END { if (NR) printf "  ttfb %-6s r%s %-11s %-4s median %.3f ms (of %d)\n", up, r, tg, s,
		    (t[int((NR + 1) / 2)] + t[int(NR / 2) + 1]) / 2, NR }' |
		tee -a "$REPORT"
	[ "$bad" = 0 ] || echo "ttfb $up round $r $tg $s: $bad of $TTFB_KEYS GETs not '200, full size'" >>"$DATA/anomalies.txt"
}

# cold_peer_end UP ROUND TARGET PID NAME: after a round, a cold peer's account
# of what it did (one row in cold_peers.tsv: objects and bytes it stored;
# Varnish's own hit and miss counters, "-" for nginx, which has none), then
# it is stopped and its cache removed.
cold_peer_end() {
	local up=$1 r=$2 tg=$3 pid=$4 name=$5 d=$TMP/$5 objs bytes hits=- miss=- n
	kill -0 "$pid" 2>/dev/null || echo "cold: the $tg process died (round $r, $up)" >>"$DATA/anomalies.txt"
	if [ "$tg" = nginx ]; then
		objs=$(find "$SHM/$name" -type f | wc -l) || true
		bytes=$(du -sb "$SHM/$name" | cut -f1) || true
	else
		varnishstat -n "$d/work" -1 -f MAIN.n_object -f SMA.s0.g_bytes -f MAIN.cache_hit \
		    -f MAIN.cache_miss >"$DATA/stats/cold-$up-r$r-varnish.txt" 2>&1 || true
		read -r objs bytes hits miss < <(awk '{ v[$1] = $2 }
			END { n = split("MAIN.n_object SMA.s0.g_bytes MAIN.cache_hit MAIN.cache_miss", f, " ")
			      for (i = 1; i <= n; i++) printf "%s%s", (f[i] in v) ? v[f[i]] : "-", i < n ? " " : "\n" }' \
			"$DATA/stats/cold-$up-r$r-varnish.txt")
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$up" "$r" "$tg" "${objs:--}" "${bytes:--}" "${hits:--}" "${miss:--}" \
	    >>"$DATA/cold_peers.tsv"
	stop_pid "$pid"
	if [ "$tg" = nginx ]; then
		n=$(grep -Ec '\[(error|crit|alert|emerg)\]' "$d/error.log" 2>/dev/null || true)
		say "nginx (cold-$up-r$r): cached $objs files, $bytes bytes; error log: ${n:-0} error lines"
		if [ "${n:-0}" != 0 ]; then
			grep -E '\[(error|crit|alert|emerg)\]' "$d/error.log" | head -n 3 | sed 's/^/  /' | tee -a "$REPORT"
			echo "nginx (cold-$up-r$r) logged $n errors" >>"$DATA/anomalies.txt"
		fi
		rm -rf "${SHM:?}/$name"
	else
		say "varnish (cold-$up-r$r): $objs objects, $bytes bytes in malloc storage; cache_miss $miss, cache_hit $hits"
		rm -rf "$d/work"
	fi
}

cold_section() {
	local up base_direct base_up ak sk r kv tg tgs shift_ stats0 stats1 nreq t0
	local -A base=() peer_pid=()
	say ""
	say "=== cold GETs ==="
	printf 'upstream\tround\ttarget\tsize\tsize_bytes\tnkeys\tclients\tt0\tt1\tbytes\tok\tbad\n' >"$DATA/cold_runs.tsv"
	printf 'upstream\tround\ttarget\tkind\tsize\tcode\tbytes\tpretransfer\tstarttransfer\ttotal\txbc\txpeer\n' >"$DATA/cold_xfers.tsv"
	printf 'upstream\tround\ttarget\tobjects\tbytes\thits\tmisses\n' >"$DATA/cold_peers.tsv"
	command_note "curl (cold throughput): curl -sS --parallel --parallel-max $COLD_CLIENTS --max-time 120 -w '$COLD_W' -K CFG  (CFG: a url/output pair per key of the set; throughput = bytes / wall time of the command)"
	command_note "curl (time to first byte): curl -sS --max-time 120 -w (the same) -K CFG  (CFG: the $TTFB_KEYS keys of a set, one after the other on one keep-alive connection); TTFB = time_starttransfer - time_pretransfer"
	for up in $COLD_UPSTREAMS; do
		case $up in
		static)
			base_direct=http://127.0.0.1:${ORIGIN_PORT[direct]}
			base_up=http://127.0.0.1:${ORIGIN_PORT[bulk]}
			ak=S3RVER sk=S3RVER
			# the peers too, each fresh per round in front of the same port
			tgs=(bucketcache direct nginx varnish)
			;;
		s3rver)
			if [ "$HAVE_S3RVER" != 1 ]; then
				say "cold: s3rver not installed (npm ci --prefix tests/integration): skipped"
				echo "cold GETs against s3rver skipped: s3rver is not installed (npm ci --prefix tests/integration)" >>"$DATA/warnings.txt"
				continue
			fi
			start_s3rver
			note "uploading the cold sets to s3rver"
			for kv in "${COLD_LIST[@]}"; do
				s3rver_upload cold "${kv%%:*}" "${kv#*:}"
				s3rver_upload ttfb "${kv%%:*}" "$TTFB_KEYS"
			done
			base_direct=$S3RVER_URL
			base_up=$S3RVER_URL
			ak=S3RVER sk=S3RVER
			tgs=(bucketcache direct)
			;;
		esac
		for ((r = 1; r <= COLD_ROUNDS; r++)); do
			# every cache fresh (empty): the same key sets are cold for each
			start_gateway "cold-$up-r$r" "$base_up" "$BC_MEM" "$ak" "$sk" anon
			base=([direct]=$base_direct [bucketcache]=$GW_URL)
			peer_pid=()
			if in_list nginx "${tgs[*]}"; then
				start_nginx_cache "nginx-cold-$up-r$r" "${ORIGIN_PORT[bulk]}" nginx-proxy-cache-cold.conf "nginx (cold-$up-r$r)"
				peer_pid[nginx]=$PEER_PID
				base[nginx]=$PEER_URL
			fi
			if in_list varnish "${tgs[*]}"; then
				start_varnish "varnish-cold-$up-r$r" "${ORIGIN_PORT[bulk]}" varnish-cold.vcl "varnish (cold-$up-r$r)"
				peer_pid[varnish]=$PEER_PID
				base[varnish]=$PEER_URL
			fi
			stats0=$DATA/stats/cold-$up-r$r-before.json
			stats1=$DATA/stats/cold-$up-r$r-after.json
			stats_save "$GW_URL" "$stats0"
			# the order rotates every round
			shift_=$(( (r - 1) % ${#tgs[@]} ))
			t0=$(now)
			for tg in "${tgs[@]:$shift_}" "${tgs[@]:0:$shift_}"; do
				for kv in "${COLD_LIST[@]}"; do
					cold_tput "$up" "$r" "$tg" "${base[$tg]}" "${kv%%:*}" "${kv#*:}"
				done
				for kv in "${COLD_LIST[@]}"; do
					cold_ttfb "$up" "$r" "$tg" "${base[$tg]}" "${kv%%:*}"
				done
			done
			window "cold-$up-r$r" "$t0" "$(now)"
			stats_save "$GW_URL" "$stats1"
			kill -0 "$GW_PID" 2>/dev/null || echo "cold: the bucketcache process died (round $r, $up)" >>"$DATA/anomalies.txt"
			gateway_log_check "cold-$up-r$r" "$GW_LOG"
			stop_pid "$GW_PID"
			for tg in nginx varnish; do
				[ -z "${peer_pid[$tg]:-}" ] ||
					cold_peer_end "$up" "$r" "$tg" "${peer_pid[$tg]}" "$tg-cold-$up-r$r"
			done
		done
		if [ "$up" = s3rver ]; then
			stop_pid "$S3RVER_PID"
		fi
	done
	nreq=0
	for kv in "${COLD_LIST[@]}"; do
		nreq=$((nreq + ${kv#*:} + TTFB_KEYS))
	done
	meta cold_requests_per_round "$nreq"
	meta cold_clients "$COLD_CLIENTS"
	meta cold_rounds "$COLD_ROUNDS"
	meta cold_sizes "$COLD_SIZES"
	meta ttfb_keys "$TTFB_KEYS"
}

# ---- memory soak ---------------------------------------------------------------------------

soak_section() {
	local idle t0 t1 wpid spid out
	say ""
	say "=== memory soak ==="
	start_gateway soak "http://127.0.0.1:${ORIGIN_PORT[bulk]}" "$SOAK_MEM" S3RVER S3RVER anon
	SOAK_GW_PID=$GW_PID
	meta soak_mem "$SOAK_MEM"
	meta soak_seconds "$SOAK_SECONDS"
	meta soak_conns "$SOAK_CONNS"
	meta soak_interval "$SOAK_INTERVAL"
	meta soak_factor "$SOAK_FACTOR"
	meta soak_sizes "$SOAK_SIZES"
	meta soak_nkeys "$(wc -l <"$SOAK_PATHS")"
	"$PY" "$HELPER" sample "$GW_PID" "$GW_URL" "$SOAK_INTERVAL" "$DATA/soak.tsv" "$DATA/soak.stop" \
	    "$((SOAK_SECONDS + 120))" 2>"$DATA/sampler.err" &
	spid=$!
	PIDS+=("$spid")
	idle=$((2 * SOAK_INTERVAL + 1))
	note "soak: ${idle}s idle (base RSS), then ${SOAK_SECONDS}s of random GETs, $SOAK_CONNS conns, over $(wc -l <"$SOAK_PATHS") keys"
	sleep "$idle"
	out=$DATA/wrk/soak.out
	command_note "wrk (soak): BENCH_PATHS_FILE=PATHS wrk -t$WRK_THREADS -c$SOAK_CONNS -d${SOAK_SECONDS}s --timeout 30s -s $RANDOM_LUA URL/  (PATHS: the $(wc -l <"$SOAK_PATHS") soak keys)"
	t0=$(now)
	BENCH_PATHS_FILE=$SOAK_PATHS wrk -t"$WRK_THREADS" -c"$SOAK_CONNS" -d"${SOAK_SECONDS}s" --timeout 30s \
	    -s "$RANDOM_LUA" "$GW_URL/" >"$out" 2>&1 &
	wpid=$!
	PIDS+=("$wpid")
	wait "$wpid" || { cat "$out" >&2; fail "wrk (soak) failed"; }
	forget_pid "$wpid"
	t1=$(now)
	window soak-load "$t0" "$t1"
	sleep $((2 * SOAK_INTERVAL + 1))
	touch "$DATA/soak.stop"
	wait "$spid" || { cat "$DATA/sampler.err" >&2; fail "the soak sampler failed"; }
	forget_pid "$spid"
	grep '^BENCHRESULT ' "$out" | tail -n 1 >"$DATA/soak_wrk.txt" || true
	[ -s "$DATA/soak_wrk.txt" ] || { cat "$out" >&2; fail "no BENCHRESULT line from the soak's wrk"; }
	stats_save "$GW_URL" "$DATA/stats/soak-end.json"
	kill -0 "$SOAK_GW_PID" 2>/dev/null || echo "soak: the bucketcache process died" >>"$DATA/anomalies.txt"
	gateway_log_check soak "$GW_LOG"
	awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		d = v["duration_us"] / 1e6
		printf "soak: %d GETs in %.0f s (%.0f/s, %.2f GB/s), p99 %.1f ms, errors %d\n", v["requests"], d,
		    v["requests"] / d, v["bytes"] / d / 1e9, v["p99_us"] / 1000,
		    v["err_connect"] + v["err_read"] + v["err_write"] + v["err_status"] + v["err_timeout"] }' \
		"$DATA/soak_wrk.txt" | tee -a "$REPORT"
	stop_pid "$SOAK_GW_PID"
}

# ---- main ---------------------------------------------------------------------------------------

T0=$(date +%s)
start_origin
say "origin: nginx static on 127.0.0.1, ports direct ${ORIGIN_PORT[direct]}, bulk ${ORIGIN_PORT[bulk]} (cold, soak), for nginx ${ORIGIN_PORT[nginx]}, varnish ${ORIGIN_PORT[varnish]}, bucketcache ${ORIGIN_PORT[bucketcache]}, bucketcache-anon ${ORIGIN_PORT[bucketcache-anon]}, nginx-disk ${ORIGIN_PORT[nginx-disk]}, bucketcache-disk ${ORIGIN_PORT[bucketcache-disk]}"
if in_list hot "$SECTIONS"; then
	hot_section
fi
if in_list disk "$SECTIONS"; then
	disk_section
fi
if in_list cold "$SECTIONS"; then
	cold_section
fi
if in_list soak "$SECTIONS"; then
	soak_section
fi
# the origin's access log is buffered for up to 1 s
sleep 1.5
stop_pid "$ORIGIN_PID"
cp "$ORIGIN_LOG" "$DATA/origin_access.log" 2>/dev/null || : >"$DATA/origin_access.log"
meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
meta date_end "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta wall_seconds "$(( $(date +%s) - T0 ))"
say ""
say "load avg at end: $(cut -d' ' -f1-3 /proc/loadavg); wall time $(( $(date +%s) - T0 )) s"

rc=0
"$PY" "$HELPER" report "$DATA" "$RESULTS_DIR" || rc=$?
case $rc in
0 | 1 | 3) exit "$rc" ;;
*) fail "the report (bench_peers.py report) failed with status $rc" ;;
esac
