#!/bin/bash
# test_disk_tier.sh — the disk tier end to end (issue 12), over a file://
# origin whose read counter (upstream_file_reads) shows every origin GET
# and HEAD, with real clients (curl, aws-cli):
#   (a) a dataset of 40 objects (some bigger than a chunk) read once
#       through a gateway with a 16 MiB memory tier and a 1 GiB disk tier;
#       the gateway is killed (SIGKILL) and restarted on the same
#       directory; the second pass reads nothing from the origin, the
#       bytes match, single-chunk hits go out with sendfile;
#   (b) chunk files damaged while it is down (a flipped body byte, a
#       truncated file) and a damaged metadata file: the client gets the
#       right bytes, the tier's corrupt counter rises, the objects are
#       fetched again;
#   (c) the disk directory on an 8 MiB tmpfs (mounted here, as root): the
#       tier caps itself at what the filesystem holds and evicts, staying
#       up; with the filesystem then filled by another file, the writes
#       fail with ENOSPC, the tier goes down, the gateway keeps serving
#       the right bytes, and the stats say so;
#   (d) a missing, non-directory or read-only --disk-dir, or --disk-dir
#       without --disk-size: exit 2 with a message;
#   (f) a 4 MiB memory tier read by 16 clients at once: fills memory has
#       no room for run as transit fills, so every chunk lands on disk;
#       later passes read nothing from the origin and send single-chunk
#       hits from their files, memory within its bound;
#   (e) objects overwritten through the gateway, or invalidated by the
#       admin call and changed behind it, are not served stale from disk
#       after a restart.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN" truncate

# tmpfs mounts of the test, lazily unmounted before lib.sh's cleanup
# (which kills the gateways and removes BC_TMP).
MOUNTS=()
trap 'rc=$?; for m in "${MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done; (exit $rc); bc__cleanup' EXIT

DATA=$BC_TMP/data
DISK=$BC_TMP/disk
CS=$((1024 * 1024))
mkdir -p "$DATA/ds/train" "$DISK"

# 30 small objects (one chunk), 10 of 1.5-5.5 chunks: ~32 MiB in all, twice
# the memory tier.
N=40
declare -A SIZE
CHUNKS=0
for i in $(seq -w 1 $N); do
	if [ $((10#$i)) -le 30 ]; then
		n=$(( 1000 + 10#$i * 9973 ))
	else
		n=$(( CS + CS / 2 + (10#$i - 31) * (CS / 2) + 10#$i ))
	fi
	SIZE[$i]=$n
	CHUNKS=$(( CHUNKS + (n + CS - 1) / CS ))
	bc_mkfile "$DATA/ds/train/s$i.bin" "$n"
done

GW_ARGS=(--upstream "file://$DATA" --anonymous --mem-size 16MiB
	--chunk-size 1M --meta-ttl 10m --log-level debug)

# tier NAME FIELD: a value of the tier's stats row.
tier() { bc_stats_get "tiers.$1.$2"; }

# disk_settle CHUNKS METAS: waits until the disk tier accepted at least
# CHUNKS chunk writes and holds METAS metadata entries, and nothing is
# queued for it or being written (a restart then finds every file).
disk_settle() {
	local i w m q p
	for i in $(seq 300); do
		w=$(tier disk writes)
		m=$(tier disk metas)
		q=$(tier disk queued)
		p=$(tier disk writing)
		if [ "$w" -ge "$1" ] && [ "$m" -ge "$2" ] && [ "$q" = 0 ] &&
		    [ "$p" = 0 ]; then
			return 0
		fi
		sleep 0.05
	done
	bc_fail "the disk tier did not settle: writes $w (want $1), metas $m (want $2), queued $q, writing $p"
}

kill9_gateway() {
	kill -KILL "$BC_GW_PID"
	wait "$BC_GW_PID" 2>/dev/null || true
}

# get_all TAG: GETs every object with curl and compares the bytes.
get_all() {
	local i
	for i in $(seq -w 1 $N); do
		curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/train/s$i.bin" ||
			bc_fail "$1: GET s$i failed"
		cmp -s "$DATA/ds/train/s$i.bin" "$BC_TMP/got" ||
			bc_fail "$1: s$i bytes differ"
	done
	bc_pass "$1: every object's bytes match the origin"
}

# disk_file c|o KEY [INDEX]: the disk tier's chunk (c; chunk INDEX, 0
# unless given) or metadata (o) file of ds/KEY, found by the bucket, key
# and index its header names (tier_disk_file.c has the layout).
disk_file() {
	"$BC_PY" - "$DISK" "$1" "$2" "${3:-0}" <<'EOF'
import os, struct, sys
top, kind, key, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for d, _, files in os.walk(os.path.join(top, kind)):
    for f in files:
        if f.endswith(".tmp"):
            continue
        p = os.path.join(d, f)
        with open(p, "rb") as fp:
            h = fp.read(4096)
        if len(h) < 32:
            continue
        index, bl, kl = struct.unpack_from("<IHH", h, 20)
        if (h[32:32 + bl] == b"ds" and
                h[32 + bl:32 + bl + kl] == key.encode() and
                (kind == "o" or index == want)):
            print(p)
            sys.exit(0)
sys.exit("no %s file of ds/%s" % (kind, key))
EOF
}

# ---- (a) a dataset read once, the gateway killed, read again -----------------
bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$DISK" --disk-size 1GiB
get_all "first pass"
reads1=$(bc_stats_get upstream_file_reads)
bc_assert_ge "$reads1" "$CHUNKS" "the first pass reads the origin"
disk_settle "$CHUNKS" "$N"
chunks=$(tier disk chunks)
metas=$(tier disk metas)
bc_assert_eq "$CHUNKS" "$chunks" "the disk tier holds every chunk"
bc_assert_eq "$N" "$metas" "the disk tier holds every object's metadata"
evict=$(tier memory evictions)
bc_assert_ge "$evict" 1 "the dataset did not fit in memory (evictions)"
kill9_gateway

bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$DISK" --disk-size 1GiB
mkdir -p "$BC_TMP/pass2"
bc_aws "$BC_GW_URL" --no-sign-request s3 cp --recursive --no-progress \
	--only-show-errors s3://ds/train/ "$BC_TMP/pass2/" ||
	bc_fail "aws s3 cp --recursive after the restart"
diff -r "$DATA/ds/train" "$BC_TMP/pass2" >/dev/null ||
	bc_fail "the second pass's bytes differ"
bc_pass "second pass (aws-cli, after SIGKILL and restart): the bytes match"
get_all "second pass (curl)"
bc_slice "$DATA/ds/train/s35.bin" $((CS + 100)) $((CS + 5000)) >"$BC_TMP/want.range"
code=$(bc_req rng --range $((CS + 100))-$((CS + 5000)) "$BC_GW_URL/ds/train/s35.bin")
bc_assert_eq 206 "$code" "a ranged GET inside chunk 1"
bc_assert_same_file "$BC_TMP/want.range" "$BC_TMP/rng.body" "its bytes"
code=$(bc_req head -I "$BC_GW_URL/ds/train/s07.bin")
bc_assert_eq 200 "$code" "a HEAD after the restart"
len=$(bc_hdr head Content-Length)
bc_assert_eq "${SIZE[07]}" "$len" "its Content-Length comes from disk"
reads2=$(bc_stats_get upstream_file_reads)
bc_assert_eq 0 "$reads2" "after the restart: zero origin GETs and HEADs"
mh=$(bc_stats_get cache_meta_lower_hits)
bc_assert_eq "$N" "$mh" "every object's metadata came from disk, once"
sf=$(bc_stats_get cache_disk_sendfile)
bc_assert_ge "$sf" 30 "single-chunk disk hits went out with sendfile"
dh=$(tier disk hits)
bc_assert_ge "$dh" "$CHUNKS" "the disk tier's hits"
db=$(bc_stats_get cache_bytes_disk)
bc_assert_ge "$db" 1 "bytes sent from disk are counted"
bc_req metrics "$BC_GW_URL/_bucketcache/metrics" >/dev/null
prom=$(grep -c '^bucketcache_tier_hits_total{tier="disk"} [1-9]' "$BC_TMP/metrics.body" || true)
bc_assert_eq 1 "$prom" "Prometheus has the disk tier's hits with the tier label"
kill9_gateway

# ---- (b) damaged files are dropped, counted, fetched again -------------------
f1=$(disk_file c train/s03.bin)
f2=$(disk_file c train/s04.bin)
f3=$(disk_file o train/s05.bin)
"$BC_PY" - "$f1" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-1, 2)
    b = f.read(1)
    f.seek(-1, 2)
    f.write(bytes([b[0] ^ 0x5a]))
EOF
truncate -s $(( $(stat -c %s "$f2") / 2 )) "$f2"
"$BC_PY" - "$f3" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-3, 2)
    b = f.read(1)
    f.seek(-3, 2)
    f.write(bytes([b[0] ^ 0xff]))
EOF
bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$DISK" --disk-size 1GiB
for k in 03 04 05; do
	curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/train/s$k.bin" ||
		bc_fail "GET s$k after damage"
	cmp -s "$DATA/ds/train/s$k.bin" "$BC_TMP/got" || bc_fail "s$k: wrong bytes"
done
bc_pass "damaged files: the client gets the right bytes"
bad=$(tier disk corrupt)
bc_assert_eq 3 "$bad" "three damaged files counted (tier corrupt)"
reads3=$(bc_stats_get upstream_file_reads)
bc_assert_eq 3 "$reads3" "the three objects were fetched again, nothing else"
mhits=$(bc_stats_get cache_meta_lower_hits)
bc_assert_eq 2 "$mhits" "the damaged metadata was not used"
disk_settle 3 "$N"
for k in 03 04 05; do
	curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/train/s$k.bin" ||
		bc_fail "GET s$k again"
	cmp -s "$DATA/ds/train/s$k.bin" "$BC_TMP/got" || bc_fail "s$k: wrong bytes"
done
reads4=$(bc_stats_get upstream_file_reads)
bc_assert_eq 3 "$reads4" "refetched objects are hits again"
bc_stop_gateway

# ---- (e) writes and invalidations reach the disk tier ------------------------
aws_anon() { bc_aws "$BC_GW_URL" --no-sign-request "$@"; }
bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$DISK" --disk-size 1GiB
for k in 10 11 12; do
	curl -sf --max-time 20 -o /dev/null "$BC_GW_URL/ds/train/s$k.bin" ||
		bc_fail "GET s$k"
done
bc_mkfile "$BC_TMP/new10.bin" 4321
bc_mkfile "$BC_TMP/new11.bin" $(( 2 * CS + 7 ))
bc_mkfile "$BC_TMP/new12.bin" 999
aws_anon s3 cp --no-progress "$BC_TMP/new10.bin" s3://ds/train/s10.bin >/dev/null ||
	bc_fail "overwrite s10 through the gateway"
aws_anon s3 cp --no-progress "$BC_TMP/new11.bin" s3://ds/train/s11.bin >/dev/null ||
	bc_fail "overwrite s11 through the gateway"
w0=$(tier disk writes)
curl -sf -o "$BC_TMP/got" "$BC_GW_URL/ds/train/s11.bin" || bc_fail "GET s11 after PUT"
bc_assert_same_file "$BC_TMP/new11.bin" "$BC_TMP/got" "a GET after an overwrite sees the new bytes"
code=$(bc_req inval -X DELETE "$BC_GW_URL/_bucketcache/v1/cache?bucket=ds&key=train/s12.bin")
bc_assert_eq 200 "$code" "the admin invalidate call"
cp "$BC_TMP/new12.bin" "$DATA/ds/train/s12.bin"   # behind the gateway's back
disk_settle $(( w0 + 3 )) "$(( N - 2 ))"
kill9_gateway
bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$DISK" --disk-size 1GiB
for k in 10 11 12; do
	curl -sf --max-time 20 -o "$BC_TMP/got.$k" "$BC_GW_URL/ds/train/s$k.bin" ||
		bc_fail "GET s$k after the restart"
done
bc_assert_same_file "$BC_TMP/new10.bin" "$BC_TMP/got.10" "an object overwritten through the gateway is not served stale after a restart"
bc_assert_same_file "$BC_TMP/new11.bin" "$BC_TMP/got.11" "the new version read before the restart comes back"
bc_assert_same_file "$BC_TMP/new12.bin" "$BC_TMP/got.12" "an invalidated object is not served stale after a restart"
reads5=$(bc_stats_get upstream_file_reads)
bc_assert_eq 2 "$reads5" "only the two objects not read since their change come from the origin"
bc_stop_gateway

# ---- (g) the same disk under another --chunk-size ---------------------------
# Its files keep the names of 1 MiB chunks: under 512 KiB chunks the same
# names mean other bytes. Those are refused by length and fetched again;
# single-chunk objects are the same bytes under both and are used.
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 16MiB \
	--chunk-size 512K --meta-ttl 10m --disk-dir "$DISK" --disk-size 1GiB
get_all "another chunk size"
mm=$(bc_stats_get cache_tier_mismatches)
bc_assert_ge "$mm" 10 "another chunk size: the disk's 1 MiB chunks are not used as 512 KiB ones (cache_tier_mismatches)"
bc_stop_gateway

# ---- (f) a memory tier too small for its readers ------------------------------
# 4 MiB of memory, 16 readers at once: fills memory has no room for run as
# transit fills (to the disk tier only), so the set lands on disk; later
# hits go out from the files (sendfile) without memory.
DISK2=$BC_TMP/disk2
mkdir -p "$DISK2" "$BC_TMP/par"
CHUNKS=0   # (e) changed some objects
for f in "$DATA"/ds/train/*.bin; do
	n=$(stat -c %s "$f")
	CHUNKS=$(( CHUNKS + (n + CS - 1) / CS ))
done
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 4MiB \
	--chunk-size 1M --meta-ttl 10m --disk-dir "$DISK2" --disk-size 1GiB
seq -w 1 $N | xargs -P 16 -I{} curl -sf --max-time 30 \
	-o "$BC_TMP/par/s{}.bin" "$BC_GW_URL/ds/train/s{}.bin" ||
	bc_fail "small memory: a parallel GET failed"
diff -r "$DATA/ds/train" "$BC_TMP/par" >/dev/null ||
	bc_fail "small memory: the parallel pass's bytes differ"
bc_pass "small memory: 16 readers at once get the right bytes"
tf=$(bc_stats_get cache_transit_fills)
bc_assert_ge "$tf" 1 "small memory: fills beyond memory ran as transit fills"
get_all "small memory, second pass"
disk_settle "$CHUNKS" "$N"
chunks=$(tier disk chunks)
bc_assert_eq "$CHUNKS" "$chunks" "small memory: the disk tier holds every chunk"
reads=$(bc_stats_get upstream_file_reads)
sf=$(bc_stats_get cache_disk_sendfile)
get_all "small memory, third pass"
reads3=$(bc_stats_get upstream_file_reads)
bc_assert_eq "$reads" "$reads3" "small memory: the third pass reads nothing from the origin"
sf3=$(bc_stats_get cache_disk_sendfile)
bc_assert_ge $((sf3 - sf)) 26 "small memory: single-chunk hits went out from their files"
usage=$(tier memory usage_bytes)
bc_assert_ge $((4 * 1024 * 1024)) "$usage" "small memory: memory stayed within --mem-size"
bc_stop_gateway

# ---- (d) an unusable --disk-dir: exit 2 with a message ----------------------
# start_fails NAME MESSAGE-REGEX ARGS...: the daemon exits 2 at once and
# says why on stderr.
start_fails() {
	local name=$1 re=$2 rc=0
	shift 2
	timeout 20 "$BC_BIN" --listen "127.0.0.1:$(bc_free_port)" \
		--upstream "file://$DATA" --anonymous "$@" \
		>"$BC_TMP/$name.out" 2>"$BC_TMP/$name.err" || rc=$?
	bc_assert_eq 2 "$rc" "$name: exit status"
	msg=$(cat "$BC_TMP/$name.err")
	bc_assert_match "$re" "$msg" "$name: the message"
}
start_fails missing-dir "disk dir .*/nope: no such directory" \
	--disk-dir "$BC_TMP/nope" --disk-size 1G
: >"$BC_TMP/plain-file"
start_fails not-a-dir "disk dir .*/plain-file is not a directory" \
	--disk-dir "$BC_TMP/plain-file" --disk-size 1G
start_fails no-size "--disk-dir: needs --disk-size" --disk-dir "$DISK"
MNT_RO=$BC_TMP/ro
mkdir -p "$MNT_RO"
if [ "$(id -u)" = 0 ]; then
	mount -t tmpfs -o ro,size=1m tmpfs "$MNT_RO" || bc_fail "mount a read-only tmpfs"
	MOUNTS+=("$MNT_RO")
else
	chmod 555 "$MNT_RO"
fi
start_fails read-only "disk dir .*/ro is not writable" \
	--disk-dir "$MNT_RO" --disk-size 1G

# ---- (c) a full disk: the disk tier on an 8 MiB tmpfs -------------------------
# First alone on it: the tier caps itself at what the filesystem holds
# (less --disk-size's 1 GiB), evicts and stays up. Then with the rest of
# the filesystem taken by another file once the gateway runs: its writes
# fail with ENOSPC and there is nothing of its own to evict, so it goes
# down, and the gateway keeps serving from memory and the origin.
SMALL=$BC_TMP/small
mkdir -p "$SMALL"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=8m tmpfs "$SMALL"; then
	MOUNTS+=("$SMALL")
	bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$SMALL" --disk-size 1GiB
	get_all "small disk pass 1"
	cap=$(tier disk capacity_bytes)
	conf=$(tier disk configured_bytes)
	bc_assert_eq $((1024 * 1024 * 1024)) "$conf" "small disk: --disk-size is the configured bound"
	bc_assert_ge $((8 * 1024 * 1024)) "$cap" "small disk: the bound in force is what the filesystem holds"
	ev=$(tier disk evictions)
	bc_assert_ge "$ev" 1 "small disk: the tier evicts to stay within it"
	get_all "small disk pass 2"
	# writes in flight and unlinks not yet run can still meet ENOSPC on
	# a filesystem this small (6 MiB of one object's chunks queued at
	# once): the tier may go down, and the next read that asks it after
	# its backoff (1 s, doubling) brings it back up
	for i in $(seq 150); do
		up=$(tier disk up)
		[ "$up" = 1 ] && break
		curl -sf -o /dev/null "$BC_GW_URL/ds/train/s$(printf %02d $(( i % N + 1 ))).bin" || true
		sleep 0.1
	done
	bc_assert_eq 1 "$up" "small disk: the tier is up"
	bc_stop_gateway
	umount -l "$SMALL"
	mount -t tmpfs -o size=8m tmpfs "$SMALL" || bc_fail "mount the tmpfs again"
	bc_start_gateway "${GW_ARGS[@]}" --disk-dir "$SMALL" --disk-size 1GiB
	dd if=/dev/zero of="$SMALL/filler" bs=64k 2>/dev/null || true
	# a poller watches the tier's up gauge from here on (every 20 ms, one
	# Python process): the down spell can end, by a read's probe, before a
	# check after the pass would see it on a loaded machine
	rm -f "$BC_TMP/down.seen" "$BC_TMP/down.stop"
	"$BC_PY" - "$BC_GW_URL" "$BC_TMP" <<'PYEOF' &
import json, os, sys, time, urllib.request
gw, d = sys.argv[1], sys.argv[2]
end = time.monotonic() + 600
while time.monotonic() < end and not os.path.exists(d + "/down.stop"):
    try:
        with urllib.request.urlopen(gw + "/_bucketcache/stats", timeout=10) as f:
            if json.load(f)["tiers"]["disk"]["up"] == 0:
                with open(d + "/down.seen.tmp", "w") as o:
                    o.write("0\n")
                os.rename(d + "/down.seen.tmp", d + "/down.seen")
                break
    except OSError:
        pass
    time.sleep(0.02)
PYEOF
	POLLER=$!
	BC_PIDS+=("$POLLER")
	get_all "ENOSPC pass 1"
	wf=$(tier disk write_failures)
	downs=$(tier disk downs)
	bc_assert_ge "$wf" 1 "ENOSPC: the tier counts its write failures"
	bc_assert_ge "$downs" 1 "ENOSPC: the tier went down (stats downs)"
	# down lasts until a read probes the tier after its backoff (1 s,
	# doubling) and finds it readable: pass 1 may have ended with such a
	# probe. A read of an object new to the origin makes one more write,
	# which the full filesystem refuses: down again, until the next probe
	# (the poller above records it).
	"$BC_PY" - "$BC_GW_URL" "$DATA/ds/train" "$BC_TMP/down.seen" <<'PYEOF'
import hashlib, os, sys, time, urllib.request
gw, d, seen = sys.argv[1:4]
for i in range(20):
    if os.path.exists(seen):
        break
    with open("%s/late%d.bin" % (d, i), "wb") as f:
        f.write(hashlib.sha256(b"late%d" % i).digest() * 9375)  # 300000 B
    with urllib.request.urlopen("%s/ds/train/late%d.bin" % (gw, i), timeout=30) as f:
        f.read()
    t = time.monotonic() + 5
    while time.monotonic() < t and not os.path.exists(seen):
        time.sleep(0.05)
PYEOF
	touch "$BC_TMP/down.stop"
	wait "$POLLER" || true
	up=$(cat "$BC_TMP/down.seen" 2>/dev/null || echo 1)
	bc_assert_eq 0 "$up" "ENOSPC: the stats say the disk tier is down"
	get_all "ENOSPC pass 2"
	ok=$(bc_stats_get "requests_by_op.GetObject.5xx")
	bc_assert_eq 0 "$ok" "ENOSPC: no request failed"
	bc_stop_gateway
	PLANNED_C=16
else
	bc_log "SKIPPED part (c): cannot mount a tmpfs (not root?)"
	PLANNED_C=0
fi

bc_done $(( 54 + PLANNED_C ))
