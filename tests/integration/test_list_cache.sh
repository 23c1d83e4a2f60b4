#!/bin/bash
# test_list_cache.sh — the LIST cache and immutable datasets (issue 27,
# items 2 and 3), with the gateway in front of the verifying fixture and
# s3rver; origin requests are counted AT THE ORIGIN (the fixture's by_op):
#   1. ListObjectsV2 of data/ twice: a miss then a hit (x-bucketcache),
#      one origin list, the same answer; other parameters (max-keys,
#      delimiter, start-after, each continuation page) are entries of
#      their own, a second pass of them costs the origin nothing;
#      ListObjects (V1) is apart from V2; aws-cli's `s3 ls` too;
#   2. writes through the gateway drop the listings they change: PUT,
#      DELETE, DeleteObjects, CopyObject (destination), a multipart
#      upload's completion, the admin invalidation; a write elsewhere
#      (other/) does not;
#   3. --list-ttl 2s: data/'s listing is asked again after it; under
#      --immutable lcache/frozen/ the listing stays cached past it;
#   4. a listing is authorized before the cache is looked at: a key
#      limited to frozen/ gets 403 for data/ (cached) and for the whole
#      bucket, and frozen/'s cached answer; unsigned listings (which go
#      upstream unsigned: the fixture refuses them) are never served a
#      signed one's answer and their refusals are not kept; a listing
#      with a header the cache does not key on goes upstream (bypass);
#   5. --immutable with --meta-ttl 1s --meta-stale 0: after the TTL a
#      re-read of frozen/ (30 objects) makes no origin request at all,
#      while the same re-read of data/ revalidates every object (30
#      HEADs); a change behind the gateway's back is not seen under
#      frozen/ until the admin invalidation; a write through the gateway
#      is seen at once;
#   6. --list-cache-size 64K holds at most that (least recently used
#      dropped), and a listing over a quarter of it is not kept.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN"
bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL
S3=$BC_S3RVER_URL
B=lcache
TOKEN=lc-token-0123456789
LIM=LIMKEY02
LIMSK=limsecret4567
LSIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$LIM:$LIMSK")
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)

bc_py "$S3" "$B" <<'EOF'
import os, sys
from concurrent.futures import ThreadPoolExecutor
from itlib import ok, done, client
s3url, b = sys.argv[1:3]
c = client(s3url)
c.create_bucket(Bucket=b)
objs = {}
for i in range(30):
    objs["data/d%02d" % i] = os.urandom(2000 + i)
    objs["frozen/f%02d" % i] = os.urandom(3000 + i)
objs["frozen/big"] = os.urandom(2 * 1024 * 1024 + 5)
for i in range(300):
    objs["wide/k%03d-%s" % (i, "x" * 40)] = b"w"
def put(kv):
    c.put_object(Bucket=b, Key=kv[0], Body=kv[1])
with ThreadPoolExecutor(16) as ex:
    list(ex.map(put, objs.items()))
ok(True, "61 objects under data/ and frozen/, 300 under wide/")
done()
EOF

bc_start_gateway --upstream "$FX" --chunk-size 1M --mem-size 64M \
	--meta-ttl 1s --meta-stale 0 --list-ttl 2s --immutable "$B/frozen/" \
	--client-key S3RVER:S3RVER --client-key "$LIM:$LIMSK:$B/frozen/" \
	--admin-token "$TOKEN" --log-level info
GW=$BC_GW_URL
GW1_PID=$BC_GW_PID
GW1_LOG=$BC_GW_LOG

# ---- 1, 2, 3: hits, entries, invalidation, TTL -------------------------------
bc_fixture_reset
bc_py "$GW" "$FX" "$B" "$TOKEN" <<'EOF'
import sys, time, json, urllib.request
from itlib import ok, done, client, xbc, fx_stats, fx_reset, gw_stats
gw, fx, b, token = sys.argv[1:5]
c = client(gw)

def lists():
    return fx_stats(fx)["by_op"].get("ListObjectsV2", 0)

def v1lists():
    return fx_stats(fx)["by_op"].get("ListObjects", 0)

def keys(r):
    return [o["Key"] for o in r.get("Contents", [])]

r1 = c.list_objects_v2(Bucket=b, Prefix="data/")
r2 = c.list_objects_v2(Bucket=b, Prefix="data/")
ok(xbc(r1) == "miss" and xbc(r2) == "hit", "data/: a miss, then a hit",
   "%s %s" % (xbc(r1), xbc(r2)))
ok(keys(r1) == keys(r2) and len(keys(r1)) == 30, "the same 30 keys")
ok(lists() == 1, "one ListObjectsV2 at the origin", str(lists()))

variants = [dict(MaxKeys=5), dict(Delimiter="/"), dict(StartAfter="data/d10"),
            dict(MaxKeys=5, StartAfter="data/d20")]
first = [xbc(c.list_objects_v2(Bucket=b, Prefix="data/", **v)) for v in variants]
second = [xbc(c.list_objects_v2(Bucket=b, Prefix="data/", **v)) for v in variants]
ok(first == ["miss"] * 4 and second == ["hit"] * 4,
   "max-keys, delimiter, start-after: entries of their own", "%s %s" % (first, second))
ok(lists() == 5, "each asked the origin once", str(lists()))

def pages():
    got, tok, n = [], None, 0
    while True:
        kw = dict(Bucket=b, Prefix="data/", MaxKeys=10)
        if tok:
            kw["ContinuationToken"] = tok
        r = c.list_objects_v2(**kw)
        got.append(xbc(r))
        n += len(keys(r))
        if not r.get("IsTruncated"):
            return got, n
        tok = r["NextContinuationToken"]
p1, n1 = pages()
before = lists()
p2, n2 = pages()
ok(n1 == 30 and n2 == 30 and len(p1) == 3, "three pages of 10", "%s %d %d" % (p1, n1, n2))
ok(p1 == ["miss"] * 3 and p2 == ["hit"] * 3, "continuation pages: cached each",
   "%s %s" % (p1, p2))
ok(lists() == before, "the second paginated pass asked the origin nothing")

v1a = c.list_objects(Bucket=b, Prefix="data/")
v1b = c.list_objects(Bucket=b, Prefix="data/")
ok(xbc(v1a) == "miss" and xbc(v1b) == "hit" and len(keys(v1b)) == 30,
   "ListObjects (V1): its own entry, then a hit")
ok(v1lists() == 1, "one V1 list at the origin", str(v1lists()))

# writes through the gateway drop what they change
def miss_then(label, write, present, absent=None):
    write()
    r = c.list_objects_v2(Bucket=b, Prefix="data/")
    k = keys(r)
    ok(xbc(r) == "miss" and present(k), label, "%s %s" % (xbc(r), k[-3:]))
    c.list_objects_v2(Bucket=b, Prefix="data/")

miss_then("PUT data/new: the next listing is a miss and shows it",
          lambda: c.put_object(Bucket=b, Key="data/new", Body=b"n"),
          lambda k: "data/new" in k)
miss_then("DELETE data/new: a miss, gone",
          lambda: c.delete_object(Bucket=b, Key="data/new"),
          lambda k: "data/new" not in k)
miss_then("DeleteObjects of data/d00: a miss, gone",
          lambda: c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "data/d00"}]}),
          lambda k: "data/d00" not in k)
miss_then("CopyObject to data/copy: a miss, there",
          lambda: c.copy_object(Bucket=b, Key="data/copy",
                                CopySource={"Bucket": b, "Key": "data/d01"}),
          lambda k: "data/copy" in k)
def mpu():
    u = c.create_multipart_upload(Bucket=b, Key="data/mpu")["UploadId"]
    e = c.upload_part(Bucket=b, Key="data/mpu", UploadId=u, PartNumber=1,
                      Body=b"m" * 100)["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="data/mpu", UploadId=u,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
miss_then("a multipart upload's completion: a miss, there", mpu,
          lambda k: "data/mpu" in k)
c.put_object(Bucket=b, Key="other/x", Body=b"o")
ok(xbc(c.list_objects_v2(Bucket=b, Prefix="data/")) == "hit",
   "a write under other/ leaves data/'s listing cached")
req = urllib.request.Request("%s/_bucketcache/v1/cache?bucket=%s&prefix=data/" % (gw, b),
                             method="DELETE")
urllib.request.urlopen(req, timeout=10).read()
ok(xbc(c.list_objects_v2(Bucket=b, Prefix="data/")) == "miss",
   "the admin invalidation of data/ drops it")
ok(gw_stats(gw)["list_cache_invalidations"] >= 6, "list_cache_invalidations counted")

# the TTL, and immutable listings
f1 = c.list_objects_v2(Bucket=b, Prefix="frozen/")
f2 = c.list_objects_v2(Bucket=b, Prefix="frozen/")
ok(xbc(f1) == "miss" and xbc(f2) == "hit" and len(keys(f2)) == 31,
   "frozen/: a miss then a hit, 31 keys")
ok(xbc(c.list_objects_v2(Bucket=b, Prefix="data/")) == "hit", "data/ cached")
time.sleep(2.5)
ok(xbc(c.list_objects_v2(Bucket=b, Prefix="data/")) == "miss",
   "past --list-ttl 2s data/'s listing is asked again")
ok(xbc(c.list_objects_v2(Bucket=b, Prefix="frozen/")) == "hit",
   "under --immutable frozen/'s stays cached past it")
s = gw_stats(gw)
ok(s["list_cache_hits"] >= 12 and s["list_cache_misses"] >= 15 and
   s["list_cache_stores"] >= 15 and s["list_cache_entries"] >= 2 and
   s["list_cache_bytes"] > 0, "list_cache_* counters",
   json.dumps({k: v for k, v in s.items() if k.startswith("list_cache")}))
done()
EOF
bc_assert_fixture_clean "listings"

# aws-cli
bc_fixture_reset
bc_aws "$GW" s3 ls "s3://$B/frozen/" >"$BC_TMP/ls1.out"
bc_aws "$GW" s3 ls "s3://$B/frozen/" >"$BC_TMP/ls2.out"
bc_assert_same_file "$BC_TMP/ls1.out" "$BC_TMP/ls2.out" "aws s3 ls twice: the same listing"
n=$(wc -l <"$BC_TMP/ls2.out"); bc_assert_eq 31 "$n" "31 lines"
v=$(bc_fixture_stats by_op.ListObjectsV2); bc_assert_ge 1 "$v" "aws s3 ls: at most one origin list"

# ---- 4. authorization, unsigned, bypass ---------------------------------------
LU="$GW/$B?list-type=2"
bc_expect auth-lim-data 403 AccessDenied "a key limited to frozen/: data/ (cached) refused" \
	"${LSIG[@]}" "$LU&prefix=data%2F"
bc_expect auth-lim-all 403 AccessDenied "and the whole bucket" "${LSIG[@]}" "$LU"
bc_expect auth-lim-frozen 200 - "and frozen/ allowed" "${LSIG[@]}" "$LU&prefix=frozen%2F&encoding-type=url"
v=$(bc_hdr auth-lim-frozen x-bucketcache); bc_assert_eq hit "$v" "served the answer boto3's listing left (signed answers are shared)"
bc_fixture_reset
bc_expect uns-1 403 AccessDenied "unsigned frozen/: not the signed answer; the origin refuses" "$LU&prefix=frozen%2F"
v=$(bc_hdr uns-1 x-bucketcache); bc_assert_eq miss "$v" "a miss (an entry of its own)"
bc_expect uns-2 403 AccessDenied "unsigned again: the refusal was not kept" "$LU&prefix=frozen%2F"
v=$(bc_hdr uns-2 x-bucketcache); bc_assert_eq miss "$v" "a miss again"
v=$(bc_fixture_stats rejected); bc_assert_eq 2 "$v" "both went to the origin"
bc_stats_save "$BC_TMP/by.json"
bc_expect bypass 200 - "a listing with x-amz-expected-bucket-owner" "${SIG[@]}" \
	-H "x-amz-expected-bucket-owner: 123456789012" "$LU&prefix=frozen%2F"
v=$(bc_hdr bypass x-bucketcache); bc_assert_eq "" "$v" "goes upstream as any call"
v=$(bc_stats_delta "$BC_TMP/by.json" list_cache_bypass); bc_assert_eq 1 "$v" "counted list_cache_bypass"

# ---- 5. immutable reads --------------------------------------------------------
bc_py "$GW" "$FX" "$S3" "$B" <<'EOF'
import os, sys, time, urllib.request
from itlib import ok, done, client, fx_stats, fx_reset, gw_stats, sha
gw, fx, s3url, b = sys.argv[1:5]
c = client(gw)
direct = client(s3url)
frozen = ["frozen/f%02d" % i for i in range(30)]
data = ["data/d%02d" % i for i in range(1, 30)] + ["data/copy"]
want = {}
for k in frozen + data:
    want[k] = sha(direct.get_object(Bucket=b, Key=k)["Body"].read())
bad = [k for k in frozen + data
       if sha(c.get_object(Bucket=b, Key=k)["Body"].read()) != want[k]]
ok(not bad, "frozen/ and data/ read once through the gateway", str(bad[:3]))
time.sleep(1.5)      # past --meta-ttl 1s (--meta-stale 0)
fx_reset(fx)
s0 = gw_stats(gw)
bad = [k for k in frozen if sha(c.get_object(Bucket=b, Key=k)["Body"].read()) != want[k]]
s1 = gw_stats(gw)
st = fx_stats(fx)
ok(not bad, "frozen/ re-read after the TTL: the right bytes", str(bad[:3]))
ok(st["requests"] == 0, "frozen/ re-read after --meta-ttl: 0 origin requests",
   str(st["by_op"]))
ok(s1["cache_revalidations"] - s0["cache_revalidations"] == 0 and
   s1["upstream_requests"] - s0["upstream_requests"] == 0,
   "no revalidation, no upstream request in the gateway's counters")
for k in data:
    c.get_object(Bucket=b, Key=k)["Body"].read()
st = fx_stats(fx)
heads = st["by_op"].get("HeadObject", 0)
ok(heads == 30, "the same re-read of data/ (not immutable) revalidated each object", str(st["by_op"]))

# a change behind the gateway's back: trusted under frozen/ until invalidated
new = os.urandom(4000)
direct.put_object(Bucket=b, Key="frozen/f00", Body=new)
time.sleep(1.2)
got = c.get_object(Bucket=b, Key="frozen/f00")["Body"].read()
ok(sha(got) == want["frozen/f00"], "frozen/f00 changed at the origin: the cached copy is still served")
req = urllib.request.Request("%s/_bucketcache/v1/cache?bucket=%s&key=frozen/f00" % (gw, b),
                             method="DELETE")
urllib.request.urlopen(req, timeout=10).read()
got = c.get_object(Bucket=b, Key="frozen/f00")["Body"].read()
ok(got == new, "after the admin invalidation: the new bytes")
new2 = os.urandom(5000)
c.put_object(Bucket=b, Key="frozen/f01", Body=new2)
ok(c.get_object(Bucket=b, Key="frozen/f01")["Body"].read() == new2,
   "a write through the gateway under frozen/ is read back at once")
done()
EOF
BC_GW_PID=$GW1_PID
BC_GW_LOG=$GW1_LOG
bc_stop_gateway

# ---- 6. the bound ---------------------------------------------------------------
bc_start_gateway --upstream "$FX" --list-ttl 60s --list-cache-size 64K --log-level info
GW2=$BC_GW_URL
bc_py "$GW2" "$B" <<'EOF'
import sys
from itlib import ok, done, client, xbc, gw_stats
gw, b = sys.argv[1:3]
c = client(gw)
for i in range(40):
    c.list_objects_v2(Bucket=b, Prefix="data/", StartAfter="data/d%02d" % (i % 30), MaxKeys=20 + i)
s = gw_stats(gw)
ok(s["list_cache_bytes"] <= 64 * 1024, "list_cache_bytes within 64K", str(s["list_cache_bytes"]))
ok(s["list_cache_evictions"] > 0 and s["list_cache_entries"] < 40,
   "least recently used listings dropped", "%d %d" % (s["list_cache_evictions"], s["list_cache_entries"]))
r1 = c.list_objects_v2(Bucket=b, Prefix="data/", StartAfter="data/d09", MaxKeys=59)
ok(xbc(r1) == "hit", "the most recent listing is still there")
stores = gw_stats(gw)["list_cache_stores"]
w1 = c.list_objects_v2(Bucket=b, Prefix="wide/")
w2 = c.list_objects_v2(Bucket=b, Prefix="wide/")
ok(len(w1["Contents"]) == 300 and xbc(w2) == "miss",
   "a listing over a quarter of the bound (300 keys) is not kept")
ok(gw_stats(gw)["list_cache_stores"] == stores, "nothing stored for it")
done()
EOF
bc_stop_gateway

bc_done 61
