#!/bin/bash
# test_warm.sh — warm-ups (issue 27, item 1): POST/GET/DELETE
# /_bucketcache/v1/warm and `bucketcache warm`, with the gateway in front
# of the verifying fixture and s3rver (origin requests counted AT THE
# ORIGIN: the fixture's by_op), and a disk tier:
#   1. `bucketcache warm s3://warm/ds/train/ --tier disk` (a local client:
#      the operator) lists the prefix and fills the disk tier: 40 objects,
#      4 of them bigger than a chunk, one empty; the progress says done,
#      every object warmed, the cached fraction 1; nothing of other/ came;
#   2. then every object of the prefix is read through the gateway with
#      the right bytes and 0 origin requests (fixture GetObject,
#      HeadObject and all: 0; gateway upstream_requests: 0) — chunks from
#      the disk tier, memory holding none of them before;
#   3. warming it again fetches nothing: every object counted cached, one
#      ListObjectsV2 at the origin and no GET;
#   4. 1,050 objects under many/ warmed into memory: the listing is read
#      in two pages, and their reads then cost the origin nothing;
#   5. access: a relayed request (X-Forwarded-For) without the token is
#      403, with it 202; a client key limited to ds/train/sub/ (SigV4)
#      warms ds/train/sub/ (only its own keys come), is 403 for ds/ and
#      for the operator's warm-up, lists only its own, cancels its own;
#   6. bounds and errors: a second POST of a running prefix is 409
#      OperationAborted, a fifth warm-up 503 SlowDown, DELETE cancels
#      (state canceled); a missing bucket ends failed with the origin's
#      404 NoSuchBucket; bad tier, bucket or method: 400/405; an unknown
#      warm-up 404;
#   7. within its bound: into an 8 MiB memory tier, ds/train/ (14 MiB)
#      warms what fits and counts the rest no_room, memory under its
#      bound;
#   8. the CLI: --detach returns at once, a bad target exits 2, an
#      unreachable gateway exits 1; the gateways stop cleanly;
#   9. --tier redis: gateway A warms ds/train/ into a Redis it shares
#      with gateway B (A's memory keeps none of it); B, fresh, then reads
#      the prefix with 0 origin requests (metadata and chunks from Redis).
#  10. over a file:// origin (the quick start's): the CLI warms a bucket
#      into memory, and its objects are then read without opening a file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli
bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL
S3=$BC_S3RVER_URL
B=warm
TOKEN=warm-token-0123456789
LIM=LIMKEY01
LIMSK=limsecret0123
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
LSIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$LIM:$LIMSK")
RH="X-Forwarded-For: 203.0.113.9"
MiB=$((1024 * 1024))

# ---- the dataset, stored straight into s3rver ------------------------------
bc_py "$S3" "$B" "$BC_TMP" <<'EOF'
import os, sys, json
from concurrent.futures import ThreadPoolExecutor
from itlib import ok, done, client
s3url, b, tmp = sys.argv[1:4]
MiB = 1024 * 1024
c = client(s3url)
c.create_bucket(Bucket=b)
objs = {}
for i in range(35):
    objs["ds/train/s%02d.bin" % i] = os.urandom(1000 + i * 9973)
for i in range(4):
    objs["ds/train/big%d.bin" % i] = os.urandom(MiB + MiB // 2 + i * (MiB // 2) + i)
# (no empty object: s3rver answers a ranged GET of one 206 with a
# Content-Length of 1 and no body, and the fill waits for its timeout)
for i in range(3):
    objs["ds/train/sub/k%d.bin" % i] = os.urandom(4096 + i)
objs["other/x.bin"] = os.urandom(5000)
many = {"many/m%04d" % i: os.urandom(100 + i % 50) for i in range(1050)}
def put(kv):
    c.put_object(Bucket=b, Key=kv[0], Body=kv[1])
with ThreadPoolExecutor(16) as ex:
    list(ex.map(put, list(objs.items()) + list(many.items())))
for k, v in objs.items():
    p = os.path.join(tmp, "obj", k)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(v)
train = {k: len(v) for k, v in objs.items() if k.startswith("ds/train/")}
json.dump({"train": train, "many": {k: len(v) for k, v in many.items()}},
          open(os.path.join(tmp, "dataset.json"), "w"))
ok(len(train) == 42, "42 objects under ds/train/ (4 over a chunk)")
done()
EOF
TRAIN_N=42
TRAIN_BYTES=$("$BC_PY" -c 'import json,sys; print(sum(json.load(open(sys.argv[1]))["train"].values()))' "$BC_TMP/dataset.json")

DISK=$BC_TMP/disk
mkdir -p "$DISK"
GWOPTS=(--upstream "$FX" --chunk-size 1M --mem-size 64M --disk-dir "$DISK"
	--disk-size 256M --meta-ttl 10m --admin-token "$TOKEN"
	--client-key S3RVER:S3RVER --client-key "$LIM:$LIMSK:$B/ds/train/sub/"
	--warm-concurrency 8 --log-level info)
bc_start_gateway "${GWOPTS[@]}"
GW=$BC_GW_URL
GW1_PID=$BC_GW_PID
GW1_LOG=$BC_GW_LOG

# wstat NAME [PREFIX] [GATEWAY]: a field of a warm-up's progress.
wstat() {
	local p
	p=$("$BC_PY" -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "${2:-ds/train/}")
	curl -sf --max-time 10 "${3:-$GW}/_bucketcache/v1/warm?bucket=$B&prefix=$p" |
		"$BC_PY" -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print("null" if v is None else v)' "$1"
}

# disk_quiet: waits until nothing is queued for the disk tier or being
# written.
disk_quiet() {
	local i q p
	for i in $(seq 200); do
		q=$(bc_stats_get tiers.disk.queued)
		p=$(bc_stats_get tiers.disk.writing)
		[ "$q" = 0 ] && [ "$p" = 0 ] && return 0
		sleep 0.05
	done
	bc_fail "the disk tier did not settle"
}

# ---- 1. the CLI warms ds/train/ into the disk tier --------------------------
bc_fixture_reset
rc=0
"$BC_BIN" warm "s3://$B/ds/train/" --endpoint "$GW" --tier disk --interval 0.2 \
	>"$BC_TMP/cli1.out" 2>"$BC_TMP/cli1.err" || rc=$?
cat "$BC_TMP/cli1.out" "$BC_TMP/cli1.err" >&2
bc_assert_eq 0 "$rc" "bucketcache warm s3://$B/ds/train/ --tier disk exits 0"
out=$(cat "$BC_TMP/cli1.out")
bc_assert_match "done: $TRAIN_N objects" "$out" "the CLI's summary says done, $TRAIN_N objects"
v=$(wstat state); bc_assert_eq done "$v" "the warm-up's state is done"
v=$(wstat objects_done); bc_assert_eq "$TRAIN_N" "$v" "objects_done is every object of the prefix"
v=$(wstat bytes_done); bc_assert_eq "$TRAIN_BYTES" "$v" "bytes_done is the prefix's bytes"
v=$(wstat objects_warmed); bc_assert_eq "$TRAIN_N" "$v" "every object was warmed"
v=$(wstat cached_fraction); bc_assert_eq 1.0 "$v" "cached_fraction 1"
v=$(wstat tier); bc_assert_eq disk "$v" "into the disk tier"
v=$(wstat objects_failed); bc_assert_eq 0 "$v" "no object failed"
v=$(wstat in_flight); bc_assert_eq 0 "$v" "nothing in flight once done"
v=$(bc_fixture_stats by_op.ListObjectsV2); bc_assert_eq 1 "$v" "one ListObjectsV2 page at the origin"
v=$(bc_fixture_stats by_op.GetObject); bc_assert_ge "$v" "$TRAIN_N" "the warm-up's GETs reached the origin"
disk_quiet
v=$(bc_stats_get tiers.disk.chunks); bc_assert_ge "$v" 50 "the disk tier holds the prefix's 50 chunks"
v=$(bc_stats_get tiers.memory.chunks); bc_assert_eq 0 "$v" "memory holds none of them (a lower tier's warm-up does not fill memory)"
bc_assert_fixture_clean "warm-up"

# ---- 2. read with 0 origin requests ----------------------------------------
bc_fixture_reset
bc_stats_save "$BC_TMP/s2.json"
bc_py "$GW" "$B" "$BC_TMP" <<'EOF'
import os, sys, json
from itlib import ok, done, client, sha
gw, b, tmp = sys.argv[1:4]
c = client(gw)
train = json.load(open(os.path.join(tmp, "dataset.json")))["train"]
bad = []
for k in sorted(train):
    got = c.get_object(Bucket=b, Key=k)["Body"].read()
    if sha(got) != sha(open(os.path.join(tmp, "obj", k), "rb").read()):
        bad.append(k)
ok(not bad, "every warmed object reads back with its bytes", str(bad[:3]))
done()
EOF
v=$(bc_fixture_stats by_op.GetObject); bc_assert_eq 0 "$v" "after the warm-up: 0 origin GETs for $TRAIN_N objects"
v=$(bc_fixture_stats by_op.HeadObject); bc_assert_eq 0 "$v" "and 0 origin HEADs"
v=$(bc_fixture_stats requests); bc_assert_eq 0 "$v" "and no origin request at all"
v=$(bc_stats_delta "$BC_TMP/s2.json" upstream_requests); bc_assert_eq 0 "$v" "the gateway counts 0 upstream requests"
v=$(bc_stats_delta "$BC_TMP/s2.json" tiers.disk.hits); bc_assert_ge "$v" 50 "the chunks came from the disk tier"

# ---- 3. warming again fetches nothing ---------------------------------------
bc_fixture_reset
bc_expect rewarm 202 - "POST again (the finished warm-up is replaced)" \
	-X POST "$GW/_bucketcache/v1/warm?bucket=$B&prefix=ds%2Ftrain%2F&tier=disk"
for i in $(seq 200); do
	v=$(wstat state); [ "$v" = running ] || break; sleep 0.05
done
bc_assert_eq done "$v" "the second warm-up is done"
v=$(wstat objects_cached); bc_assert_eq "$TRAIN_N" "$v" "every object counted cached (the tier had it)"
v=$(wstat objects_warmed); bc_assert_eq 0 "$v" "none warmed again"
v=$(bc_fixture_stats by_op.GetObject); bc_assert_eq 0 "$v" "no origin GET"
v=$(bc_fixture_stats by_op.ListObjectsV2); bc_assert_eq 1 "$v" "one ListObjectsV2"

# ---- 4. 1,050 objects into memory: two pages ---------------------------------
bc_fixture_reset
bc_expect many 202 - "POST many/ into memory" -X POST \
	"$GW/_bucketcache/v1/warm?bucket=$B&prefix=many%2F&tier=memory"
for i in $(seq 600); do
	v=$(wstat state many/); [ "$v" = running ] || break; sleep 0.1
done
bc_assert_eq done "$v" "many/ is done"
v=$(wstat objects_done many/); bc_assert_eq 1050 "$v" "1050 objects done"
v=$(wstat pages many/); bc_assert_eq 2 "$v" "the listing came in two pages"
v=$(bc_fixture_stats by_op.ListObjectsV2); bc_assert_eq 2 "$v" "two ListObjectsV2 at the origin"
bc_fixture_reset
bc_py "$GW" "$B" <<'EOF'
import sys
from itlib import ok, done, client, xbc
gw, b = sys.argv[1:3]
c = client(gw)
hits = sum(xbc(c.get_object(Bucket=b, Key="many/m%04d" % i)) == "hit"
           for i in range(0, 1050, 7))
ok(hits == 150, "150 of many/ read back as memory hits", str(hits))
done()
EOF
v=$(bc_fixture_stats requests); bc_assert_eq 0 "$v" "reading many/ after its warm-up: 0 origin requests"

# ---- 5. access ---------------------------------------------------------------
WU="$GW/_bucketcache/v1/warm"
bc_expect acc-none 403 AccessDenied "relayed, no token: POST refused" -H "$RH" -X POST "$WU?bucket=$B&prefix=other%2F"
bc_expect acc-tok 202 - "relayed with the admin token: POST accepted" -H "$RH" \
	-H "x-bucketcache-admin-token: $TOKEN" -X POST "$WU?bucket=$B&prefix=other%2F"
bc_expect acc-lim-out 403 AccessDenied "a limited key: a prefix outside its grant" -H "$RH" "${LSIG[@]}" \
	-X POST "$WU?bucket=$B&prefix=ds%2F"
bc_expect acc-lim-in 202 - "a limited key: its own prefix" -H "$RH" "${LSIG[@]}" \
	-X POST "$WU?bucket=$B&prefix=ds%2Ftrain%2Fsub%2F&tier=disk"
owner=$(bc_json "$BC_TMP/acc-lim-in.body" owner); bc_assert_eq "$LIM" "$owner" "the warm-up is the key's"
for i in $(seq 200); do
	v=$(wstat state ds/train/sub/); [ "$v" = running ] || break; sleep 0.05
done
bc_expect acc-lim-get 200 - "the key reads its own warm-up" -H "$RH" "${LSIG[@]}" \
	"$WU?bucket=$B&prefix=ds%2Ftrain%2Fsub%2F"
v=$(bc_json "$BC_TMP/acc-lim-get.body" objects_done); bc_assert_eq 3 "$v" "its 3 objects are done"
bc_expect acc-lim-other 403 AccessDenied "the key may not read the operator's warm-up" -H "$RH" "${LSIG[@]}" \
	"$WU?bucket=$B&prefix=ds%2Ftrain%2F"
bc_expect acc-lim-list 200 - "the key lists warm-ups" -H "$RH" "${LSIG[@]}" "$WU"
n=$("$BC_PY" -c 'import json,sys; w=json.load(open(sys.argv[1]))["warmups"]; print(len(w), w[0]["owner"])' "$BC_TMP/acc-lim-list.body")
bc_assert_eq "1 $LIM" "$n" "it sees only its own"
bc_expect acc-lim-del-other 403 AccessDenied "the key may not cancel the operator's" -H "$RH" "${LSIG[@]}" \
	-X DELETE "$WU?bucket=$B&prefix=ds%2Ftrain%2F"
bc_expect acc-lim-del 200 - "the key ends its own" -H "$RH" "${LSIG[@]}" \
	-X DELETE "$WU?bucket=$B&prefix=ds%2Ftrain%2Fsub%2F"
bc_expect acc-op-list 200 - "the operator lists every warm-up" "$WU"
n=$("$BC_PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["warmups"]))' "$BC_TMP/acc-op-list.body")
bc_assert_eq 4 "$n" "four warm-ups kept"

# ---- 6. bounds and errors ------------------------------------------------------
# the warm-ups above end first: their requests would take the held slots
# below (a slow machine was still warming other/ here)
for i in $(seq 600); do
	v=$(bc_stats_get warm_running); [ "$v" = 0 ] && break; sleep 0.1
done
bc_assert_eq 0 "$v" "the warm-ups so far have ended"
bc_fixture_reset
# the listings are held until the checks below are done (released, not
# timed: a loaded machine took longer than a fixed 4 s)
curl -sf -X POST "$FX/__fixture/delay?ms=120000&count=4" >/dev/null
for p in p1 p2 p3 p4; do
	bc_expect "lim-$p" 202 - "warm-up $p starts (its listing held)" -X POST "$WU?bucket=$B&prefix=$p%2F"
done
bc_expect lim-again 409 OperationAborted "a second POST of a running prefix" -X POST "$WU?bucket=$B&prefix=p1%2F"
bc_expect lim-fifth 503 SlowDown "a fifth warm-up at once" -X POST "$WU?bucket=$B&prefix=p5%2F"
v=$(bc_stats_get warm_running); bc_assert_eq 4 "$v" "warm_running 4"
bc_expect lim-cancel 200 - "DELETE cancels p1" -X DELETE "$WU?bucket=$B&prefix=p1%2F"
v=$(bc_json "$BC_TMP/lim-cancel.body" state); bc_assert_eq canceled "$v" "it shows canceled"
curl -sf -X POST "$FX/__fixture/release" >/dev/null
for i in $(seq 300); do
	v=$(bc_stats_get warm_running); [ "$v" = 0 ] && break; sleep 0.1
done
bc_assert_eq 0 "$v" "every warm-up ended (three found empty prefixes)"
v=$(wstat state p1/); bc_assert_eq canceled "$v" "p1 stays canceled"
bc_expect err-bucket 202 - "a warm-up of a bucket the origin lacks starts" -X POST "$WU?bucket=nosuchbucket1&prefix="
for i in $(seq 100); do
	v=$(curl -sf "$WU?bucket=nosuchbucket1" | "$BC_PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
	[ "$v" = running ] || break; sleep 0.05
done
bc_assert_eq failed "$v" "it ends failed"
curl -sf "$WU?bucket=nosuchbucket1" >"$BC_TMP/err-bucket.json"
v=$(bc_json "$BC_TMP/err-bucket.json" error); bc_assert_match "404 NoSuchBucket" "$v" "with the origin's 404 NoSuchBucket"
bc_expect err-tier 400 InvalidArgument "an unknown tier" -X POST "$WU?bucket=$B&prefix=x&tier=tape"
bc_expect err-nob 400 InvalidArgument "no bucket" -X POST "$WU?prefix=x"
bc_expect err-badb 400 InvalidArgument "a bad bucket name" -X POST "$WU?bucket=_x"
bc_expect err-put 405 MethodNotAllowed "PUT" -X PUT "$WU?bucket=$B"
bc_expect err-none 404 NoSuchKey "no warm-up of that prefix" "$WU?bucket=$B&prefix=nothing%2F"
bc_assert_fixture_clean "warm-ups" 

# ---- 7. within its bound: an 8 MiB memory tier -----------------------------------
bc_start_gateway --upstream "$FX" --chunk-size 1M --mem-size 8M --meta-ttl 10m --log-level info
GW2=$BC_GW_URL
bc_expect small 202 - "warm ds/train/ (about 14 MiB) into an 8 MiB memory tier" -X POST \
	"$GW2/_bucketcache/v1/warm?bucket=$B&prefix=ds%2Ftrain%2F"
for i in $(seq 200); do
	v=$(wstat state ds/train/ "$GW2"); [ "$v" = running ] || break; sleep 0.05
done
bc_assert_eq done "$v" "it ends done"
nr=$(wstat objects_no_room ds/train/ "$GW2"); bc_assert_ge "$nr" 1 "objects past the bound are counted no_room ($nr)"
dn=$(wstat objects_done ds/train/ "$GW2"); bc_assert_ge "$dn" 10 "what fits was warmed ($dn objects)"
bd=$(wstat bytes_done ds/train/ "$GW2"); bc_assert_ge $((8 * MiB)) "$bd" "bytes warmed within the bound ($bd)"
u=$(bc_stats_get tiers.memory.usage_bytes "$GW2")
bc_assert_ge $((8 * MiB)) "$u" "memory within its bound ($u bytes)"
v=$(bc_stats_get tiers.memory.evictions "$GW2"); bc_assert_eq 0 "$v" "the warm-up evicted nothing"
bc_stop_gateway

# ---- 8. the CLI's edges ----------------------------------------------------------
BC_GW_URL=$GW
BC_GW_PID=$GW1_PID
BC_GW_LOG=$GW1_LOG
rc=0
"$BC_BIN" warm "s3://$B/other/" --endpoint "$GW" --detach >"$BC_TMP/cli-d.out" 2>&1 || rc=$?
bc_assert_eq 0 "$rc" "--detach exits 0 once started"
out=$(cat "$BC_TMP/cli-d.out")
bc_assert_match "started" "$out" "--detach says it started"
for i in $(seq 100); do
	v=$(bc_stats_get warm_running); [ "$v" = 0 ] && break; sleep 0.05
done
rc=0
"$BC_BIN" warm "bucket/x" --endpoint "$GW" >/dev/null 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "a target that is not s3://BUCKET/PREFIX exits 2"
port=$(bc_free_port)
rc=0
"$BC_BIN" warm "s3://$B/x" --endpoint "http://127.0.0.1:$port" >/dev/null 2>"$BC_TMP/cli-u.err" || rc=$?
bc_assert_eq 1 "$rc" "an unreachable gateway exits 1"
rc=0
BUCKETCACHE_ADMIN_TOKEN=wrong "$BC_BIN" warm "s3://$B/other/" --endpoint "$GW" >/dev/null 2>"$BC_TMP/cli-t.err" || rc=$?
bc_assert_eq 0 "$rc" "a local CLI is the operator whatever token it carries"
bc_stop_gateway

# ---- 9. --tier redis: a warm-up another gateway reads ---------------------------
bc_start_redis
ROPTS=(--upstream "$FX" --chunk-size 1M --mem-size 64M --meta-ttl 10m
	--redis "$BC_REDIS_URL" --redis-size 256M --log-level info)
bc_start_gateway "${ROPTS[@]}"
GWA=$BC_GW_URL
rc=0
"$BC_BIN" warm "s3://$B/ds/train/" --endpoint "$GWA" --tier redis --interval 0.2 \
	>"$BC_TMP/cli-r.out" 2>"$BC_TMP/cli-r.err" || rc=$?
bc_assert_eq 0 "$rc" "gateway A: bucketcache warm --tier redis exits 0"
v=$(wstat objects_warmed ds/train/ "$GWA"); bc_assert_eq "$TRAIN_N" "$v" "every object warmed into Redis"
for i in $(seq 200); do
	v=$(bc_stats_get tiers.redis.queued); [ "$v" = 0 ] && break; sleep 0.05
done
v=$(bc_stats_get tiers.redis.writes); bc_assert_ge "$v" 50 "Redis took the prefix's 50 chunks"
v=$(bc_stats_get tiers.memory.chunks); bc_assert_eq 0 "$v" "A's memory keeps none of them"
GWA_PID=$BC_GW_PID
GWA_LOG=$BC_GW_LOG
bc_start_gateway "${ROPTS[@]}"
GWB=$BC_GW_URL
bc_fixture_reset
bc_py "$GWB" "$B" "$BC_TMP" <<'EOF'
import os, sys, json
from itlib import ok, done, client, sha
gw, b, tmp = sys.argv[1:4]
c = client(gw)
train = json.load(open(os.path.join(tmp, "dataset.json")))["train"]
bad = [k for k in sorted(train) if sha(c.get_object(Bucket=b, Key=k)["Body"].read())
       != sha(open(os.path.join(tmp, "obj", k), "rb").read())]
ok(not bad, "gateway B reads every object A warmed, right bytes", str(bad[:3]))
done()
EOF
v=$(bc_fixture_stats requests); bc_assert_eq 0 "$v" "gateway B: 0 origin requests for the prefix A warmed into Redis"
v=$(bc_stats_get tiers.redis.hits); bc_assert_ge "$v" 50 "its chunks came from Redis"
bc_stop_gateway
BC_GW_PID=$GWA_PID
BC_GW_LOG=$GWA_LOG
bc_stop_gateway

# ---- 10. over a file:// origin ------------------------------------------------
FDIR=$BC_TMP/files
mkdir -p "$FDIR/demo/images"
for i in 1 2 3; do bc_mkfile "$FDIR/demo/images/$i.jpg" $((100000 + i)); done
bc_start_gateway --upstream "file://$FDIR" --anonymous --log-level info
rc=0
"$BC_BIN" warm s3://demo/ --endpoint "$BC_GW_URL" >"$BC_TMP/cli-f.out" 2>&1 || rc=$?
bc_assert_eq 0 "$rc" "file:// origin: bucketcache warm s3://demo/ exits 0"
out=$(cat "$BC_TMP/cli-f.out")
bc_assert_match "done: 3 objects .* in the memory tier" "$out" "3 objects into memory"
bc_stats_save "$BC_TMP/sf.json"
for i in 1 2 3; do
	bc_expect "file-$i" 200 - "GET images/$i.jpg" "$BC_GW_URL/demo/images/$i.jpg"
	bc_assert_same_file "$FDIR/demo/images/$i.jpg" "$BC_TMP/file-$i.body" "images/$i.jpg: its bytes"
done
v=$(bc_stats_delta "$BC_TMP/sf.json" upstream_file_reads); bc_assert_eq 0 "$v" "no file opened to serve them"
bc_stop_gateway

bc_done 119
