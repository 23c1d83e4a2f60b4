#!/bin/bash
# test_cache.sh — the object cache (bucketcache issue 3), with the gateway
# in front of the verifying fixture and s3rver. Upstream requests are
# counted AT THE UPSTREAM (the fixture's /__fixture/stats and request log),
# the gateway's own view in /_bucketcache/stats (cache_* counters):
#   1. 200 objects of 128 KiB read twice: the second pass sends nothing
#      upstream, every body is byte-identical (sha256);
#   2. 32 concurrent cold GETs of one 32 MiB object: at most one upstream
#      GET per 8 MiB chunk, coalesced waits counted, 32 identical bodies;
#   3. a 100-byte Range of a 256 MiB object fetches exactly one chunk;
#   4. x-bucketcache miss / hit / partial; HEAD of a cached object answered
#      locally with the right Content-Length and ETag;
#   5. writes through the gateway (PUT, DELETE, DeleteObjects, CopyObject,
#      multipart upload) invalidate: read-after-write, 404 after delete;
#   6. admin invalidation DELETE /_bucketcache/v1/cache?bucket=&prefix=|key=;
#   7. the first byte of a cold 256 MiB GET arrives long before the whole
#      object is fetched (fixture delay per request), and a stalled reader
#      does not make the gateway fetch the whole object;
#   8. a cache smaller than the data (--mem-size 4M --chunk-size 256K)
#      stays within its bound after every request, evicts, serves right bytes;
#   9. --meta-ttl 1s --meta-stale 0: a change made at the upstream
#      (bypassing the gateway) is seen after the TTL (revalidation), an
#      unchanged object is revalidated without its body; a failed fill is
#      counted and the next request succeeds;
#  9b. --meta-ttl 1s --meta-stale 1h: past the TTL the cached copy is served
#      at once and revalidated in the background: a change is served by the
#      requests after that revalidation; an unchanged object costs one HEAD;
#  10. admin invalidation and stats from a non-loopback client need the
#      admin token.
# test_rgw_cache.sh runs it against Ceph RGW (BC_UPSTREAM=rgw): the
# sections whose requests a real S3 answers differently from s3rver (1, 3
# to 6, 9, 9b: fills as ranged GETs, conditional revalidations with
# If-None-Match and If-Match, invalidation by writes through the gateway),
# with a big object of 96 MiB instead of 256 MiB; the others (2, 7, 8, 10:
# coalescing, time to the first byte, the memory bound, the admin token)
# test the gateway alone and run against s3rver only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool head
bc_start_upstream
FX=$BC_FIXTURE_URL
S3=$BC_UP_URL
SIG=("${BC_UP_SIGV4[@]}")
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
B=cachetest
MiB=$((1024 * 1024))

# put_direct FILE KEY: stores FILE as $B/KEY straight into the upstream (no
# gateway, no fixture: the gateway's cache and the fixture's counters
# never see it).
put_direct() {
	local st
	st=$(curl -sS --max-time 60 -o "$BC_TMP/put-direct.body" -w '%{http_code}' \
		"${SIG[@]}" "${UNS[@]}" -X PUT -T "$1" "$S3/$B/$2") || true
	[ "$st" = 200 ] || { cat "$BC_TMP/put-direct.body" >&2; bc_fail "direct PUT of $2: HTTP $st"; }
}

bc_expect mkbucket 200 - "create bucket $B at the upstream" "${SIG[@]}" "${UNS[@]}" -X PUT "$S3/$B"

O32=$BC_TMP/o32.bin
O256=$BC_TMP/o256.bin
BIG_MIB=256     # the big object (o256.bin): 12 chunks at least
SKIPPED=0       # checks of the sections left out against RGW
[ "$BC_UPSTREAM" = s3rver ] || BIG_MIB=96
O16=$BC_TMP/o16.bin
head -c $((32 * MiB)) /dev/urandom >"$O32"
head -c $((BIG_MIB * MiB)) /dev/urandom >"$O256"
head -c $((16 * MiB)) /dev/urandom >"$O16"
put_direct "$O32" big/o32.bin
put_direct "$O256" big/o256.bin
put_direct "$O16" big/o16.bin
bc_pass "32, $BIG_MIB and 16 MiB objects stored at the upstream"

GWOPTS=(--upstream "$FX" --cache --chunk-size 8M --mem-size 1G --readahead 1 --meta-ttl 60s)
bc_start_gateway "${GWOPTS[@]}" --log-level info
GW=$BC_GW_URL

# ---- 1. 200 objects of 128 KiB, read twice ----------------------------------
bc_py "$S3" "$FX" "$GW" "$B" <<'EOF'
import os, sys
from concurrent.futures import ThreadPoolExecutor
from itlib import ok, done, client, gw_stats, fx_stats, fx_reset, sha, xbc
s3url, fx, gw, b = sys.argv[1:5]
N, SIZE = 200, 128 * 1024
keys = ["small/%03d.bin" % i for i in range(N)]
data = {k: os.urandom(SIZE) for k in keys}
direct = client(s3url)
with ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda k: direct.put_object(Bucket=b, Key=k, Body=data[k]), keys))
c = client(gw)

def get(k):
    r = c.get_object(Bucket=b, Key=k)
    return k, sha(r["Body"].read()), xbc(r)

def rnd(tag):
    fx_reset(fx)
    s0 = gw_stats(gw)
    with ThreadPoolExecutor(16) as ex:
        res = list(ex.map(get, keys))
    bad = [k for k, h, _ in res if h != sha(data[k])]
    ok(not bad, "%s: all %d bodies byte-identical (sha256)" % (tag, N), str(bad[:5]))
    return res, s0, gw_stats(gw), fx_stats(fx)

res, s0, s1, f = rnd("pass 1")
hdr = sorted(set(x for _, _, x in res))
ok(hdr == ["miss"], "pass 1: every response says x-bucketcache: miss", str(hdr))
ok(f["by_op"].get("GetObject", 0) == N, "pass 1: one upstream GET per object",
   str(f["by_op"]))
ok(f["requests"] == N, "pass 1: no other upstream request (no HEAD before the GET)",
   str(f["by_op"]))
ok(f["rejected"] == 0, "pass 1: every upstream request passed the SigV4 check")
ok(s1["cache_misses"] - s0["cache_misses"] == N, "pass 1: cache_misses +%d" % N,
   str(s1["cache_misses"] - s0["cache_misses"]))
ok(s1["cache_bytes_upstream"] - s0["cache_bytes_upstream"] == N * SIZE,
   "pass 1: cache_bytes_upstream +%d" % (N * SIZE))

res, s0, s1, f = rnd("pass 2")
hdr = sorted(set(x for _, _, x in res))
ok(hdr == ["hit"], "pass 2: every response says x-bucketcache: hit", str(hdr))
ok(f["requests"] == 0, "pass 2: zero upstream requests", str(f["by_op"]))
ok(s1["cache_hits"] - s0["cache_hits"] == N, "pass 2: cache_hits +%d" % N,
   str(s1["cache_hits"] - s0["cache_hits"]))
ok(s1["cache_misses"] == s0["cache_misses"], "pass 2: no cache_misses")
ok(s1["cache_bytes_memory"] - s0["cache_bytes_memory"] == N * SIZE,
   "pass 2: cache_bytes_memory +%d" % (N * SIZE))
ok(s1["cache_objects"] >= N, "cache_objects counts the cached objects", str(s1["cache_objects"]))
ok(N * SIZE <= s1["cache_bytes_held"] <= s1["cache_bytes_limit"],
   "cache_bytes_held holds the data and stays within cache_bytes_limit",
   "%d / %d" % (s1["cache_bytes_held"], s1["cache_bytes_limit"]))
ok(s1["cache_bytes_limit"] == 1 << 30, "cache_bytes_limit is --mem-size 1G",
   str(s1["cache_bytes_limit"]))
done()
EOF

# ---- 2. 32 concurrent cold GETs of one 32 MiB object ------------------------
if [ "$BC_UPSTREAM" = s3rver ]; then
bc_py "$FX" "$GW" "$B" "$O32" <<'EOF'
import sys, threading
from itlib import ok, done, client, gw_stats, fx_stats, fx_reset, sha
fx, gw, b, path = sys.argv[1:5]
want = sha(open(path, "rb").read())
c = client(gw)
fx_reset(fx)
s0 = gw_stats(gw)
N = 32
barrier = threading.Barrier(N)
out = [None] * N

def run(i):
    try:
        barrier.wait(timeout=30)
        r = c.get_object(Bucket=b, Key="big/o32.bin")
        out[i] = sha(r["Body"].read())
    except Exception as e:       # reported below
        out[i] = repr(e)

ts = [threading.Thread(target=run, args=(i,)) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join(120)
s1 = gw_stats(gw)
f = fx_stats(fx)
ok(all(h == want for h in out), "all %d concurrent bodies equal the object" % N,
   str([h for h in out if h != want][:3]))
gets = f["by_op"].get("GetObject", 0)
ok(1 <= gets <= 4, "at most one upstream GET per 8 MiB chunk (4 chunks)",
   "%d GETs: %s" % (gets, [l for l in f["last"]]))
ok(f["requests"] == gets, "no other upstream request", str(f["by_op"]))
ok(s1["cache_coalesced_waits"] - s0["cache_coalesced_waits"] > 0,
   "cache_coalesced_waits went up",
   str(s1["cache_coalesced_waits"] - s0["cache_coalesced_waits"]))
ok(s1["cache_fills"] - s0["cache_fills"] <= 4, "cache_fills: at most 4",
   str(s1["cache_fills"] - s0["cache_fills"]))
print("# upstream GETs: %d, coalesced waits: %d" % (
    gets, s1["cache_coalesced_waits"] - s0["cache_coalesced_waits"]))
done()
EOF
else
	SKIPPED=$((SKIPPED + 5))
fi

# ---- 3. a 100-byte Range of the big object --------------------------------
bc_fixture_reset
FIRST=100000000
bc_expect rng100 206 - "100-byte Range of the cold $BIG_MIB MiB object" "${SIG[@]}" "${UNS[@]}" \
	-H "Range: bytes=$FIRST-$((FIRST + 99))" "$GW/$B/big/o256.bin"
bc_slice "$O256" "$FIRST" $((FIRST + 99)) >"$BC_TMP/rng100.want"
bc_assert_same_file "$BC_TMP/rng100.want" "$BC_TMP/rng100.body" "the 100 bytes are right"
v=$(bc_hdr rng100 Content-Range)
bc_assert_eq "bytes $FIRST-$((FIRST + 99))/$((BIG_MIB * MiB))" "$v" "Content-Range"
v=$(bc_hdr rng100 x-bucketcache)
bc_assert_eq miss "$v" "x-bucketcache: miss for the cold range"
v=$(bc_fixture_stats requests)
bc_assert_eq 1 "$v" "exactly one upstream request for the range"
# chunk 11 of 8 MiB chunks holds byte 100000000
C0=$((11 * 8 * MiB))
v=$(bc_fixture_stats last)
bc_assert_eq "[\"GET /$B/big/o256.bin [Range: bytes=$C0-$((C0 + 8 * MiB - 1))] -> 206\"]" "$v" \
	"the fixture's log shows one ranged GET of exactly that chunk"
v=$(bc_fixture_stats bytes_out)
bc_assert_eq $((8 * MiB)) "$v" "the upstream sent one chunk (8 MiB), not the object"
bc_fixture_reset
bc_expect rng100b 206 - "the same range again" "${SIG[@]}" "${UNS[@]}" \
	-H "Range: bytes=$FIRST-$((FIRST + 99))" "$GW/$B/big/o256.bin"
bc_assert_same_file "$BC_TMP/rng100.want" "$BC_TMP/rng100b.body" "the 100 bytes again"
v=$(bc_hdr rng100b x-bucketcache)
bc_assert_eq hit "$v" "x-bucketcache: hit for the cached range"
v=$(bc_fixture_stats requests)
bc_assert_eq 0 "$v" "no upstream request for the cached range"

# ---- 4. x-bucketcache values; HEAD answered locally -------------------------
# o16 = 2 chunks. Range in chunk 1 first (nothing ahead of it to read),
# then a range across chunks 0 and 1: partial.
bc_fixture_reset
bc_expect h-c1 206 - "range in chunk 1 (cold)" "${SIG[@]}" "${UNS[@]}" \
	-H "Range: bytes=9000000-9000099" "$GW/$B/big/o16.bin"
v=$(bc_hdr h-c1 x-bucketcache)
bc_assert_eq miss "$v" "x-bucketcache: miss (cold range)"
bc_expect h-c1b 206 - "range in chunk 1 again" "${SIG[@]}" "${UNS[@]}" \
	-H "Range: bytes=9000000-9000099" "$GW/$B/big/o16.bin"
v=$(bc_hdr h-c1b x-bucketcache)
bc_assert_eq hit "$v" "x-bucketcache: hit (cached range)"
bc_stats_save "$BC_TMP/sp0.json"
bc_expect h-span 206 - "range across chunk 0 (cold) and chunk 1 (cached)" "${SIG[@]}" "${UNS[@]}" \
	-H "Range: bytes=8388000-8389999" "$GW/$B/big/o16.bin"
bc_slice "$O16" 8388000 8389999 >"$BC_TMP/h-span.want"
bc_assert_same_file "$BC_TMP/h-span.want" "$BC_TMP/h-span.body" "spanning range bytes"
v=$(bc_hdr h-span x-bucketcache)
bc_assert_eq partial "$v" "x-bucketcache: partial (one chunk cached, one not)"
v=$(bc_stats_delta "$BC_TMP/sp0.json" cache_partial_hits)
bc_assert_eq 1 "$v" "stats: cache_partial_hits +1"
bc_expect h-full 200 - "whole object, both chunks cached now" "${SIG[@]}" "${UNS[@]}" "$GW/$B/big/o16.bin"
bc_assert_same_file "$O16" "$BC_TMP/h-full.body" "whole object bytes"
v=$(bc_hdr h-full x-bucketcache)
bc_assert_eq hit "$v" "x-bucketcache: hit (whole object cached)"

printf 'small object for HEAD\n' >"$BC_TMP/hd.txt"
put_direct "$BC_TMP/hd.txt" hd/obj.txt
bc_expect hd-get1 200 - "GET a small object (cold)" "${SIG[@]}" "${UNS[@]}" "$GW/$B/hd/obj.txt"
v=$(bc_hdr hd-get1 x-bucketcache)
bc_assert_eq miss "$v" "x-bucketcache: miss on the first GET"
bc_expect hd-get2 200 - "GET it again" "${SIG[@]}" "${UNS[@]}" "$GW/$B/hd/obj.txt"
v=$(bc_hdr hd-get2 x-bucketcache)
bc_assert_eq hit "$v" "x-bucketcache: hit on the second GET"
bc_assert_same_file "$BC_TMP/hd.txt" "$BC_TMP/hd-get2.body" "hit bytes"
bc_fixture_reset
bc_expect hd-head 200 - "HEAD of the cached object" "${SIG[@]}" "${UNS[@]}" -I "$GW/$B/hd/obj.txt"
v=$(bc_hdr hd-head Content-Length)
bc_assert_eq 22 "$v" "HEAD Content-Length"
v=$(bc_hdr hd-head ETag)
want=$(bc_md5_etag "$BC_TMP/hd.txt")
bc_assert_eq "$want" "$v" "HEAD ETag is the object's MD5 ETag"
v=$(bc_fixture_stats requests)
bc_assert_eq 0 "$v" "HEAD of a cached object sends nothing upstream"
bc_expect hd-head16 200 - "HEAD of the cached 16 MiB object" "${SIG[@]}" "${UNS[@]}" -I "$GW/$B/big/o16.bin"
v=$(bc_hdr hd-head16 Content-Length)
bc_assert_eq $((16 * MiB)) "$v" "HEAD Content-Length (16 MiB)"
v=$(bc_fixture_stats requests)
bc_assert_eq 0 "$v" "still nothing upstream"

# ---- 5. writes through the gateway invalidate -------------------------------
bc_stats_save "$BC_TMP/w0.json"
bc_py "$FX" "$GW" "$B" <<'EOF'
import os, sys
from botocore.exceptions import ClientError
from boto3.s3.transfer import TransferConfig
from itlib import ok, done, client, gw_stats, sha, xbc
fx, gw, b = sys.argv[1:4]
c = client(gw)

def get(k):
    r = c.get_object(Bucket=b, Key=k)
    return r["Body"].read(), xbc(r)

def cache(k, body):
    c.put_object(Bucket=b, Key=k, Body=body)
    get(k)
    got, h = get(k)
    ok(got == body and h == "hit", "%s is cached (hit)" % k, str(h))

def gone(k, what):
    try:
        get(k)
        ok(False, "GET %s after %s fails" % (k, what))
    except ClientError as e:
        st = e.response["ResponseMetadata"]["HTTPStatusCode"]
        code = e.response["Error"]["Code"]
        ok(st == 404 and code == "NoSuchKey", "GET %s after %s: 404 NoSuchKey" % (k, what),
           "%s %s" % (st, code))
    try:
        c.head_object(Bucket=b, Key=k)
        ok(False, "HEAD %s after %s fails" % (k, what))
    except ClientError as e:
        st = e.response["ResponseMetadata"]["HTTPStatusCode"]
        ok(st == 404, "HEAD %s after %s: 404" % (k, what), str(st))

v1, v2 = os.urandom(3000), os.urandom(5000)
cache("w/raw", v1)
s0 = gw_stats(gw)
c.put_object(Bucket=b, Key="w/raw", Body=v2)
s1 = gw_stats(gw)
ok(s1["cache_invalidations"] > s0["cache_invalidations"],
   "PUT over a cached key: cache_invalidations went up",
   "%d -> %d" % (s0["cache_invalidations"], s1["cache_invalidations"]))
got, h = get("w/raw")
ok(got == v2, "read-after-write: GET returns the new bytes", "len %d" % len(got))
ok(h == "miss", "the new version is a miss", str(h))
r = c.head_object(Bucket=b, Key="w/raw")
ok(r["ContentLength"] == len(v2), "HEAD after the overwrite: new length",
   str(r["ContentLength"]))

s0 = gw_stats(gw)
c.delete_object(Bucket=b, Key="w/raw")
s1 = gw_stats(gw)
ok(s1["cache_invalidations"] > s0["cache_invalidations"],
   "DELETE of a cached key: cache_invalidations went up")
gone("w/raw", "DELETE")

bodies = {k: os.urandom(1000 + i) for i, k in enumerate(["w/d1", "w/d2", "w/d3"])}
for k, v in bodies.items():
    cache(k, v)
r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "w/d1"}, {"Key": "w/d2"}]})
ok(sorted(d["Key"] for d in r.get("Deleted", [])) == ["w/d1", "w/d2"],
   "DeleteObjects deleted both", str(r.get("Deleted")))
gone("w/d1", "DeleteObjects")
gone("w/d2", "DeleteObjects")
got, h = get("w/d3")
ok(got == bodies["w/d3"], "a key DeleteObjects did not name is intact")

src, old = os.urandom(4000), os.urandom(2000)
c.put_object(Bucket=b, Key="w/src", Body=src)
cache("w/dst", old)
c.copy_object(Bucket=b, Key="w/dst", CopySource={"Bucket": b, "Key": "w/src"})
got, h = get("w/dst")
ok(got == src, "CopyObject onto a cached key: GET returns the copied bytes",
   "len %d" % len(got))

mp = os.urandom(6 * 1024 * 1024 + 17)
cache("w/mpu", old)
import io
c.upload_fileobj(io.BytesIO(mp), b, "w/mpu",
                 Config=TransferConfig(multipart_threshold=5 * 1024 * 1024,
                                       multipart_chunksize=5 * 1024 * 1024,
                                       use_threads=False))
got, h = get("w/mpu")
ok(got == mp, "multipart upload onto a cached key: GET returns the new bytes",
   "len %d" % len(got))
done()
EOF

# ---- 6. admin invalidation ---------------------------------------------------
bc_py "$GW" "$B" <<'EOF'
import json, os, sys, urllib.error, urllib.request
from itlib import ok, done, client, gw_stats, xbc
gw, b = sys.argv[1:3]
c = client(gw)
keys = ["adm/p1/a", "adm/p1/b", "adm/p1x", "adm/p2/c"]
data = {k: os.urandom(777) for k in keys}

def get(k):
    r = c.get_object(Bucket=b, Key=k)
    got = r["Body"].read()
    ok(got == data[k], "%s bytes" % k)
    return xbc(r)

for k in keys:
    c.put_object(Bucket=b, Key=k, Body=data[k])
    get(k)
    ok(get(k) == "hit", "%s cached" % k)

def admin(query):
    req = urllib.request.Request(gw + "/_bucketcache/v1/cache?" + query, method="DELETE")
    try:
        with urllib.request.urlopen(req, timeout=10) as f:
            return f.status, f.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

s0 = gw_stats(gw)
st, body = admin("bucket=%s&prefix=adm/p1/" % b)
ok(st == 200, "DELETE /_bucketcache/v1/cache?bucket=&prefix= from loopback: 200",
   "%s %s" % (st, body))
try:
    n = json.loads(body)["invalidated"]
except (ValueError, KeyError, TypeError):
    n = None
ok(n == 2, "the answer counts the 2 objects under the prefix", body)
s1 = gw_stats(gw)
ok(s1["cache_invalidations"] - s0["cache_invalidations"] == 2,
   "cache_invalidations +2", str(s1["cache_invalidations"] - s0["cache_invalidations"]))
ok(get("adm/p1/a") == "miss", "a key under the prefix is a miss afterwards")
ok(get("adm/p1/b") == "miss", "the other key under the prefix is a miss afterwards")
ok(get("adm/p1x") == "hit", "a key that only shares the prefix's text (adm/p1x) stays a hit")
ok(get("adm/p2/c") == "hit", "a key outside the prefix stays a hit")

st, body = admin("bucket=%s&key=adm/p2/c" % b)
try:
    n = json.loads(body)["invalidated"]
except (ValueError, KeyError, TypeError):
    n = None
ok(st == 200 and n == 1, "DELETE ...?bucket=&key= drops one object", "%s %s" % (st, body))
ok(get("adm/p2/c") == "miss", "the key is a miss afterwards")
st, body = admin("prefix=adm/")
ok(400 <= st < 500, "an invalidation without bucket= is refused (4xx)", "%s %s" % (st, body))
done()
EOF

# ---- the main gateway's bound and shutdown -----------------------------------
v=$(bc_stats_get cache_bytes_held)
lim=$(bc_stats_get cache_bytes_limit)
bc_assert_ge "$lim" "$v" "main gateway: cache_bytes_held <= cache_bytes_limit"
v=$(bc_stats_get auth_failures)
bc_assert_eq 0 "$v" "main gateway: no auth failures"
bc_assert_fixture_clean "every upstream request of the main gateway"
bc_stop_gateway

# ---- 7. first byte before the whole object ----------------------------------
if [ "$BC_UPSTREAM" = s3rver ]; then
bc_start_gateway "${GWOPTS[@]}" --log-level info
bc_py "$FX" "$BC_GW_URL" "$B" "$O256" <<'EOF'
import sys, time
from itlib import ok, done, client, fx_stats, fx_reset, fx_delay, sha
fx, gw, b, path = sys.argv[1:5]
want = sha(open(path, "rb").read())
CHUNKS = 32
c = client(gw, read_timeout=120)
fx_reset(fx)
fx_delay(fx, 150, 100)      # every upstream request waits 150 ms
t0 = time.monotonic()
r = c.get_object(Bucket=b, Key="big/o256.bin")
body = r["Body"]
first = body.read(1)
t_first = time.monotonic() - t0
n_first = fx_stats(fx)["by_op"].get("GetObject", 0)
time.sleep(1.5)             # a stalled reader
n_stall = fx_stats(fx)["by_op"].get("GetObject", 0)
import hashlib
h = hashlib.sha256(first)
while True:
    blk = body.read(1 << 20)
    if not blk:
        break
    h.update(blk)
t_total = time.monotonic() - t0
f = fx_stats(fx)
print("# first byte after %.3f s (%d upstream GETs by then, %d after a 1.5 s stall), "
      "whole object after %.3f s, %d GETs in all" % (t_first, n_first, n_stall, t_total,
                                                      f["by_op"].get("GetObject", 0)))
ok(h.hexdigest() == want, "the 256 MiB body is right")
ok(n_first < CHUNKS, "at the first byte the upstream has not seen all %d chunk GETs" % CHUNKS,
   str(n_first))
ok(t_first < (t_total - 1.5) / 4, "time to first byte is much smaller than the transfer time",
   "%.3f vs %.3f" % (t_first, t_total - 1.5))
# The socket buffers take a few MiB before the reader's stall shows, and a
# reader that waited through 3 MiB of chunk 0 has its whole window (docs/
# cache.md, "Read window"): at most the chunk and --readahead-max (16) ahead.
ok(n_stall <= 17, "a stalled reader does not make the gateway fetch the object "
   "(<= 17 of 32 chunks: the one read and the window's most)", str(n_stall))
ok(f["by_op"].get("GetObject", 0) == CHUNKS and f["requests"] == CHUNKS,
   "the whole object took one upstream GET per chunk", str(f["by_op"]))
done()
EOF
bc_stop_gateway
else
	SKIPPED=$((SKIPPED + 7))
fi

# ---- 8. a cache smaller than the data ----------------------------------------
if [ "$BC_UPSTREAM" = s3rver ]; then
bc_start_gateway --upstream "$FX" --cache --chunk-size 256K --mem-size 4M --readahead 1 --log-level info
bc_py "$S3" "$FX" "$BC_GW_URL" "$B" <<'EOF'
import os, sys
from itlib import ok, done, client, gw_stats, fx_stats, fx_reset, sha
s3url, fx, gw, b = sys.argv[1:5]
N, SIZE, LIMIT = 40, 512 * 1024, 4 * 1024 * 1024
keys = ["ev/%02d.bin" % i for i in range(N)]
data = {k: os.urandom(SIZE) for k in keys}
direct = client(s3url)
for k in keys:
    direct.put_object(Bucket=b, Key=k, Body=data[k])
c = client(gw)
fx_reset(fx)
worst, bad, over = 0, [], []
for p in (1, 2):
    for k in keys:
        got = c.get_object(Bucket=b, Key=k)["Body"].read()
        if got != data[k]:
            bad.append((p, k))
        s = gw_stats(gw)
        worst = max(worst, s["cache_bytes_held"])
        if s["cache_bytes_held"] > s["cache_bytes_limit"] or s["cache_bytes_limit"] != LIMIT:
            over.append((p, k, s["cache_bytes_held"], s["cache_bytes_limit"]))
s = gw_stats(gw)
f = fx_stats(fx)
print("# largest cache_bytes_held seen: %d of %d; evictions %d; upstream GETs %d" % (
    worst, LIMIT, s["cache_evictions"], f["by_op"].get("GetObject", 0)))
ok(not bad, "every one of the %d reads returned the right bytes" % (2 * N), str(bad[:5]))
ok(not over, "cache_bytes_held <= cache_bytes_limit (4 MiB) after every request", str(over[:5]))
ok(worst > LIMIT // 2, "the cache was actually used (held more than half its bound)", str(worst))
ok(s["cache_evictions"] > 0, "cache_evictions > 0", str(s["cache_evictions"]))
ok(f["by_op"].get("GetObject", 0) > N, "the second pass went upstream again (20 MiB > 4 MiB)",
   str(f["by_op"]))
ok(f["rejected"] == 0, "every upstream request passed the SigV4 check")
done()
EOF
bc_stop_gateway
else
	SKIPPED=$((SKIPPED + 8))
fi

# ---- 9. metadata revalidation; a failed fill ---------------------------------
bc_start_gateway --upstream "$FX" --cache --chunk-size 8M --meta-ttl 1s --meta-stale 0 --retries 1 --log-level info
bc_py "$FX" "$BC_GW_URL" "$B" <<'EOF'
import os, sys, time
from botocore.exceptions import ClientError
from itlib import ok, done, client, gw_stats, fx_stats, fx_reset, sha, xbc
fx, gw, b = sys.argv[1:4]
up = client(fx)        # straight to the upstream, bypassing the gateway
c = client(gw)
v1, v2 = os.urandom(1 << 20), os.urandom((1 << 20) + 4321)
up.put_object(Bucket=b, Key="rv/k", Body=v1)

def get(k):
    r = c.get_object(Bucket=b, Key=k)
    return r["Body"].read(), xbc(r)

got, h = get("rv/k")
ok(got == v1 and h == "miss", "first GET: v1, miss", str(h))
got, h = get("rv/k")
ok(got == v1 and h == "hit", "second GET within the TTL: v1, hit", str(h))

time.sleep(1.3)
fx_reset(fx)
s0 = gw_stats(gw)
got, h = get("rv/k")
s1 = gw_stats(gw)
f = fx_stats(fx)
ok(got == v1, "after the TTL, unchanged: still v1")
ok(s1["cache_revalidations"] > s0["cache_revalidations"],
   "after the TTL: cache_revalidations went up", str(f["last"]))
ok(f["bytes_out"] < len(v1), "revalidating an unchanged object does not download it again",
   "%d bytes: %s" % (f["bytes_out"], f["last"]))

up.put_object(Bucket=b, Key="rv/k", Body=v2)     # behind the gateway's back
time.sleep(1.3)
s0 = gw_stats(gw)
got, h = get("rv/k")
s1 = gw_stats(gw)
ok(got == v2, "after the TTL the gateway serves the upstream's new bytes", "len %d" % len(got))
ok(s1["cache_revalidations"] > s0["cache_revalidations"], "cache_revalidations went up again")
r = c.head_object(Bucket=b, Key="rv/k")
ok(r["ContentLength"] == len(v2), "HEAD shows the new length", str(r["ContentLength"]))

# a fill that fails: 503 on both attempts (--retries 1)
up.put_object(Bucket=b, Key="rv/f", Body=v1)
import urllib.request
fx_reset(fx)
urllib.request.urlopen(urllib.request.Request(fx + "/__fixture/fail?status=503&count=2",
                                              method="POST"), timeout=10).read()
s0 = gw_stats(gw)
try:
    get("rv/f")
    ok(False, "GET while the upstream answers 503 fails",
       "(the upstream saw: %s)" % fx_stats(fx)["last"])
except ClientError as e:
    st = e.response["ResponseMetadata"]["HTTPStatusCode"]
    ok(st == 503, "GET while the upstream answers 503: 503", str(st))
s1 = gw_stats(gw)
f = fx_stats(fx)
ok(f["injected"] == 2 and f["requests"] == 2, "the fill tried 1 + --retries (1) times",
   str(f["last"]))
ok(s1["cache_fill_failures"] > s0["cache_fill_failures"], "cache_fill_failures went up")
got, h = get("rv/f")
ok(got == v1, "the next GET fetches and serves the object")
got, h = get("rv/f")
ok(got == v1 and h == "hit", "and then it is cached", str(h))
ok(fx_stats(fx)["rejected"] == 0, "every upstream request passed the SigV4 check")
done()
EOF
bc_stop_gateway

# ---- 9b. stale-while-revalidate (--meta-stale) -------------------------------
bc_start_gateway --upstream "$FX" --cache --chunk-size 8M --meta-ttl 1s --meta-stale 1h --log-level info
bc_py "$FX" "$BC_GW_URL" "$B" <<'EOF'
import os, sys, time
from itlib import ok, done, client, gw_stats, fx_stats, fx_reset, xbc
fx, gw, b = sys.argv[1:4]
up = client(fx)        # straight to the upstream, bypassing the gateway
c = client(gw)
v1, v2 = os.urandom(300000), os.urandom(300000 + 77)

def get(k):
    r = c.get_object(Bucket=b, Key=k)
    return r["Body"].read(), xbc(r)

up.put_object(Bucket=b, Key="sw/k", Body=v1)
got, h = get("sw/k")
ok(got == v1 and h == "miss", "first GET: v1, miss", str(h))
up.put_object(Bucket=b, Key="sw/k", Body=v2)     # behind the gateway's back
time.sleep(1.3)
s0 = gw_stats(gw)
got, h = get("sw/k")
s1 = gw_stats(gw)
ok(got == v1 and h == "hit", "past the TTL, within --meta-stale: the cached copy at once (a hit)",
   "len %d, %s" % (len(got), h))
ok(s1["cache_stale_served"] == s0["cache_stale_served"] + 1, "cache_stale_served counted it",
   "%d -> %d" % (s0["cache_stale_served"], s1["cache_stale_served"]))
deadline = time.time() + 10
while time.time() < deadline:
    got, h = get("sw/k")
    if got != v1:
        break
    time.sleep(0.05)
ok(got == v2, "the background revalidation saw the change; later GETs serve v2", "len %d" % len(got))
ok(gw_stats(gw)["cache_revalidations"] > s0["cache_revalidations"], "cache_revalidations went up")

got, h = get("sw/k")               # v2 cached, fresh
time.sleep(1.3)
fx_reset(fx)
got, h = get("sw/k")
ok(got == v2 and h == "hit", "unchanged past the TTL: served from the cache", str(h))
deadline = time.time() + 10
while time.time() < deadline and fx_stats(fx)["requests"] < 1:
    time.sleep(0.05)
time.sleep(0.2)
f = fx_stats(fx)
ok(f["by_op"] == {"HeadObject": 1}, "its revalidation was one HEAD, no download", str(f["by_op"]))
ok(f["rejected"] == 0, "every upstream request passed the SigV4 check")
done()
EOF
bc_stop_gateway

# ---- 10. admin invalidation from a non-loopback client ------------------------
# needs the admin token (x-bucketcache-admin-token); the gateway listens on
# 0.0.0.0 and is reached through this host's first non-loopback IPv4 address.
nonlo=0
ADDR=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -1 || true)
if [ -n "$ADDR" ] && [ "$BC_UPSTREAM" = s3rver ]; then
	BC_GW_HOST=0.0.0.0 bc_start_gateway --upstream "$FX" --cache --admin-token 'tok-3f9a' --log-level info
	EXT=http://$ADDR:$BC_GW_PORT
	bc_expect adm-c1 200 - "non-loopback: cache hd/obj.txt" "${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/$B/hd/obj.txt"
	bc_expect adm-c2 200 - "non-loopback: it is cached" "${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/$B/hd/obj.txt"
	v=$(bc_hdr adm-c2 x-bucketcache)
	bc_assert_eq hit "$v" "non-loopback: x-bucketcache: hit before"
	bc_expect adm-ext-stats 403 AccessDenied "non-loopback client reads no stats without a token" "$EXT/_bucketcache/stats"
	bc_expect adm-ext-stats2 200 - "non-loopback client reads stats with the token" \
		-H 'Authorization: Bearer tok-3f9a' "$EXT/_bucketcache/stats"
	bc_expect adm-notok 403 AccessDenied "non-loopback DELETE /_bucketcache/v1/cache without the token" \
		-X DELETE "$EXT/_bucketcache/v1/cache?bucket=$B&prefix=hd/"
	bc_expect adm-badtok 403 AccessDenied "non-loopback DELETE with a wrong token" \
		-H 'x-bucketcache-admin-token: tok-3f9b' -X DELETE "$EXT/_bucketcache/v1/cache?bucket=$B&prefix=hd/"
	bc_expect adm-c3 200 - "refused invalidations dropped nothing" "${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/$B/hd/obj.txt"
	v=$(bc_hdr adm-c3 x-bucketcache)
	bc_assert_eq hit "$v" "non-loopback: still a hit"
	bc_expect adm-tok 200 - "non-loopback DELETE with the admin token" \
		-H 'x-bucketcache-admin-token: tok-3f9a' -X DELETE "$EXT/_bucketcache/v1/cache?bucket=$B&prefix=hd/"
	v=$(cat "$BC_TMP/adm-tok.body")
	bc_assert_match '"invalidated": *1[^0-9]' "$v" "the token's invalidation dropped the object"
	bc_expect adm-c4 200 - "GET after the token's invalidation" "${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/$B/hd/obj.txt"
	v=$(bc_hdr adm-c4 x-bucketcache)
	bc_assert_eq miss "$v" "non-loopback: a miss after the invalidation"
	bc_stop_gateway
	nonlo=18
else
	bc_log "admin token checks skipped (no non-loopback IPv4 address, or against RGW)"
fi

bc_done $((151 - SKIPPED + nonlo))
