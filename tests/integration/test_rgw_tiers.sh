#!/bin/bash
# test_rgw_tiers.sh — the disk and Redis tiers stay consistent with a real
# S3 (Ceph RGW, lib_rgw.sh, behind the counting fixture): their keys carry
# the ETag, writes through a gateway drop what they replaced in every tier
# it has, and metadata is revalidated at RGW after --meta-ttl. Gateway A
# has a disk tier and Redis, B only Redis (its memory too small to
# matter); both --meta-ttl 1s --meta-stale 0, chunks of 1 MiB, in a
# versioned bucket:
#   1. A reads the dataset (7 objects, 10 chunks) from RGW; its chunks
#      reach the disk tier and Redis;
#   2. A is killed (SIGKILL) and started again on its disk directory: it
#      reads the dataset with no GET at RGW (metadata past its TTL is
#      revalidated: HEADs only), the bytes right;
#   3. B reads the dataset from Redis: no GET at RGW, the bytes right;
#   4. an overwrite through A: A and, past its TTL, B serve the new bytes
#      (never the old chunks Redis or the disk held); an overwrite behind
#      both (straight to RGW): both serve it past their TTL;
#   5. a DELETE through B: A answers 404 past its TTL though its disk held
#      the chunks;
#   6. a version of the three-chunk object read through B by versionId
#      (cache.h "Versions"): one GET at RGW (its first chunk, which brings
#      the version's metadata), the other chunks from Redis (named by
#      ETag, A brought them reading the current version); again: a hit.
set -euo pipefail
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower under ASan
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli
bc_start_upstream
bc_start_redis
export BC_UP_KEY BC_UP_SECRET BC_FIXTURE_URL BC_TMP
DISK=$BC_TMP/disk
mkdir -p "$DISK"
COMMON=(--upstream "$BC_FIXTURE_URL" --chunk-size 1M --meta-ttl 1s --meta-stale 0
	--redis "$BC_REDIS_URL" --redis-size 256MiB --log-level info)
A_ARGS=("${COMMON[@]}" --mem-size 64MiB --disk-dir "$DISK" --disk-size 256MiB)
B_ARGS=("${COMMON[@]}" --mem-size 1MiB)

# tier GW NAME FIELD: a value of gateway GW's tier stats row.
tier() { bc_stats_get "tiers.$2.$3" "$1"; }

# settle GW TIER N: waits until TIER of gateway GW accepted N chunk writes
# and has nothing queued (a restart, or another gateway, finds them).
settle() {
	local i w q=0
	for i in $(seq 300); do
		w=$(tier "$1" "$2" writes)
		[ "$2" = disk ] && q=$(tier "$1" disk queued)
		if [ "$w" -ge "$3" ] && [ "$q" = 0 ]; then
			return 0
		fi
		sleep 0.05
	done
	bc_fail "the $2 tier did not settle: writes $w (want $3), queued $q"
}

bc_py <<'EOF'
import os
from itlib import ok, done
from s3sign import Client
E = os.environ
c = Client(E["BC_FIXTURE_URL"], E["BC_UP_KEY"], E["BC_UP_SECRET"])
st, b, _ = c.send("PUT", "/tiers")
ok(st == 200, "create bucket tiers at RGW", "%s %r" % (st, b[:200]))
conf = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/'
        b'2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>')
st, b, _ = c.send("PUT", "/tiers?versioning", body=conf)
ok(st == 200, "versioning enabled", "%s %r" % (st, b[:200]))
MiB = 1 << 20
os.makedirs(E["BC_TMP"] + "/ds", exist_ok=True)
sizes = {"s%d" % i: 50000 + i * 77777 for i in range(1, 6)}
sizes.update({"big": 2 * MiB + 12345, "mid": MiB + 1})
for k, n in sizes.items():
    data = os.urandom(n)
    open(E["BC_TMP"] + "/ds/" + k, "wb").write(data)
    st, b, _ = c.send("PUT", "/tiers/ds/" + k, body=data)
    if st != 200:
        raise SystemExit("PUT %s: %s" % (k, st))
ok(True, "7 objects (10 chunks of 1 MiB) stored at RGW")
done()
EOF
CHUNKS=10

# pass GW TAG: reads every object through GW (signed), compares the bytes;
# one check. Prints nothing.
pass() {
	local f k
	for f in "$BC_TMP"/ds/*; do
		k=${f##*/}
		curl -sf --max-time 30 -o "$BC_TMP/got" "${BC_UP_SIGV4[@]}" \
			-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$1/tiers/ds/$k" ||
			bc_fail "$2: GET ds/$k failed"
		cmp -s "$f" "$BC_TMP/got" || bc_fail "$2: ds/$k bytes differ"
	done
	bc_pass "$2: every object's bytes are RGW's"
}

# ---- 1. A reads the dataset ---------------------------------------------------
bc_start_gateway "${A_ARGS[@]}"
A=$BC_GW_URL
bc_fixture_reset
pass "$A" "A, first pass"
v=$(bc_fixture_stats by_op.GetObject)
bc_assert_eq "$CHUNKS" "$v" "A's first pass: one GET at RGW per chunk"
settle "$A" disk "$CHUNKS"
settle "$A" redis "$CHUNKS"
bc_pass "A's chunks reached the disk tier and Redis"

# ---- 2. A killed and started again on its disk -----------------------------------
kill -KILL "$BC_GW_PID"
wait "$BC_GW_PID" 2>/dev/null || true
sleep 1.1   # past the metadata's TTL: the restarted A revalidates it
bc_start_gateway "${A_ARGS[@]}"
A=$BC_GW_URL A_PID=$BC_GW_PID A_LOG=$BC_GW_LOG
bc_fixture_reset
pass "$A" "A after SIGKILL and a restart"
v=$(bc_fixture_stats by_op.GetObject)
bc_assert_eq 0 "$v" "the restarted A made no GET at RGW"
v=$(bc_fixture_stats by_op.HeadObject)
bc_assert_ge "$v" 1 "its metadata, past the TTL, was revalidated (HEAD)"
v=$(tier "$A" disk hits)
bc_assert_ge "$v" "$CHUNKS" "the chunks came from the disk tier"

# ---- 3. B reads the dataset from Redis ---------------------------------------------
bc_start_gateway "${B_ARGS[@]}"
B=$BC_GW_URL B_PID=$BC_GW_PID B_LOG=$BC_GW_LOG
bc_fixture_reset
pass "$B" "B, first pass"
v=$(bc_fixture_stats by_op.GetObject)
bc_assert_eq 0 "$v" "B made no GET at RGW"
v=$(tier "$B" redis hits)
bc_assert_ge "$v" "$CHUNKS" "B's chunks came from Redis"

# ---- 4.-6. writes through A, through B, behind both; a version through B -----------
export A B
bc_py <<'EOF'
import os, time
from itlib import ok, done, fx_stats, fx_reset
from s3sign import Client
E = os.environ
fx = E["BC_FIXTURE_URL"]
key, secret = E["BC_UP_KEY"], E["BC_UP_SECRET"]
direct, a, b = (Client(u, key, secret) for u in (fx, E["A"], E["B"]))
old_big = open(E["BC_TMP"] + "/ds/big", "rb").read()


def get(c, k, version=None):
    return c.send("GET", "/tiers/ds/" + k + ("?versionId=" + version if version
                                              else ""), payload="unsigned")


new1 = os.urandom(300001)
st, _, h = a.send("PUT", "/tiers/ds/s1", body=new1)
ok(st == 200, "overwrite ds/s1 through A", str(st))
st, body, _ = get(a, "s1")
ok(st == 200 and body == new1, "A serves the new s1 at once (invalidated in "
   "memory, on disk and in Redis)", "%s %d" % (st, len(body)))
time.sleep(1.1)
st, body, _ = get(b, "s1")
ok(st == 200 and body == new1, "B serves the new s1 past its TTL (never "
   "the old chunks Redis held)", "%s %d" % (st, len(body)))

new2 = os.urandom(123457)
st, _, _ = direct.send("PUT", "/tiers/ds/s2", body=new2)
ok(st == 200, "overwrite ds/s2 straight at RGW, behind both gateways", str(st))
time.sleep(1.1)
for name, c in (("A", a), ("B", b)):
    st, body, _ = get(c, "s2")
    ok(st == 200 and body == new2, "%s serves RGW's new s2 past its TTL" % name,
       "%s %d" % (st, len(body)))

st, _, _ = b.send("DELETE", "/tiers/ds/s3")
ok(st == 204, "DELETE ds/s3 through B", str(st))
st, _, _ = get(b, "s3")
ok(st == 404, "B: 404 at once", str(st))
time.sleep(1.1)
st, body, _ = get(a, "s3")
ok(st == 404 and b"NoSuchKey" in body, "A: 404 NoSuchKey past its TTL, "
   "though its disk held s3's chunks", "%s %r" % (st, body[:200]))

# 6. a version through B: its first chunk at RGW, the others from Redis
st, _, h = direct.send("HEAD", "/tiers/ds/big", payload="unsigned")
vid = h.get("x-amz-version-id")
ok(st == 200 and vid, "the three-chunk object's current version id", repr(h))
fx_reset(fx)
st, body, h = get(b, "big", vid)
f = fx_stats(fx)
ok(st == 200 and body == old_big, "B: GET ?versionId= of it: its bytes",
   "%s %d" % (st, len(body)))
ok(f["by_op"].get("GetObject", 0) == 1,
   "B: one GET at RGW (the version's first chunk and metadata), the other "
   "chunks from the tiers, named by ETag", str(f["last"]))
st, body, h = get(b, "big", vid)
f = fx_stats(fx)
ok(st == 200 and body == old_big and f["requests"] == 1,
   "B: the version again: its bytes, nothing more at RGW", str(f["last"]))
done()
EOF

bc_assert_fixture_clean "every request RGW received"
BC_GW_PID=$A_PID BC_GW_LOG=$A_LOG
bc_stop_gateway
BC_GW_PID=$B_PID BC_GW_LOG=$B_LOG
bc_stop_gateway
bc_done 31
