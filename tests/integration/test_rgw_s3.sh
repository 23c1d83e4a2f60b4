#!/bin/bash
# test_rgw_s3.sh — what S3 answers, with Ceph RGW (lib_rgw.sh) as the
# judge: every request is sent straight to RGW and through gateways, and
# the gateways must answer as RGW does. (s3rver answers several of these
# wrongly: bytes=-N, bytes=0-0, any range of an empty object; it has no
# versioning.)
#   1. ranges: objects of 0, 1, 10 bytes and 1 MiB + 17 (two 1 MiB chunks)
#      × 12 well-formed ranges (first-last, first-, suffixes -N shorter and
#      longer than the object, past the end, across the chunk boundary),
#      through a caching gateway cold (the key invalidated first) and warm,
#      and through --no-cache: status, bytes, Content-Range and
#      Content-Length of a 2xx, the S3 error code of a 4xx;
#   2. conditionals: If-Match, If-None-Match, If-Modified-Since,
#      If-Unmodified-Since (matching, not, equal dates), S3's pairs, with a
#      Range, for GET and HEAD, cached and --no-cache: status, ETag, bytes;
#   3. versioned buckets (the cache's version entries, cache.h
#      "Versions"): GET and HEAD ?versionId= hit the cache on the second
#      read and make no upstream request; after an overwrite through the
#      gateway the plain GET is the new current version and each version
#      still its own bytes; a version is never revalidated past --meta-ttl
#      (the current one is); a ranged read of a version; DELETE of the
#      current version and a delete marker through the gateway;
#      versionId=null goes around the cache.
# Not compared, where RGW 16 departs from RFC 7232/7233 (and, as far as
# AWS documents, S3) and the gateway follows the RFCs: a 416 without
# Content-Range and a 304 without ETag (RGW leaves them out); malformed
# Range headers (bytes=3-1, bytes=abc, bytes=-1-2: RGW 416 or a guess,
# the gateway ignores them and answers 200), several ranges (RGW serves
# the first), bytes=-0 (RGW: the whole object, 206), If-Match: * (RGW
# 412) and If-None-Match: * (RGW 200), a weak W/ ETag, an unparsable date
# (RGW 400 InvalidArgument). docs/decisions.md, "RGW as the judge".
set -euo pipefail
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower under ASan
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_upstream
export BC_UP_KEY BC_UP_SECRET BC_FIXTURE_URL
FX=$BC_FIXTURE_URL

# gateway NAME ARGS...: a gateway in front of the fixture (then RGW); its
# URL, PID and log in NAME_URL, NAME_PID, NAME_LOG.
gateway() {
	local name=$1
	shift
	bc_start_gateway --upstream "$FX" --log-level info "$@"
	printf -v "${name}_URL" %s "$BC_GW_URL"
	printf -v "${name}_PID" %s "$BC_GW_PID"
	printf -v "${name}_LOG" %s "$BC_GW_LOG"
}
# stop NAME: bc_stop_gateway for that gateway (2 checks).
stop() {
	local u=${1}_PID l=${1}_LOG
	BC_GW_PID=${!u}
	BC_GW_LOG=${!l}
	bc_stop_gateway
}

gateway NC --no-cache
gateway GC --cache --chunk-size 1M --mem-size 64M --meta-ttl 60s
export NC_URL GC_URL

# ---- 1. and 2. ranges and conditionals ----------------------------------------
bc_py <<'EOF'
import hashlib, os, re, urllib.request
from itlib import ok, done, fx_stats
from s3sign import Client

E = os.environ
B = "ranges"
direct = Client(E["BC_FIXTURE_URL"], E["BC_UP_KEY"], E["BC_UP_SECRET"])
cached = Client(E["GC_URL"], E["BC_UP_KEY"], E["BC_UP_SECRET"])
nocache = Client(E["NC_URL"], E["BC_UP_KEY"], E["BC_UP_SECRET"])
MiB = 1 << 20
st, body, _ = direct.send("PUT", "/" + B)
ok(st == 200, "create bucket %s at RGW" % B, "%s %r" % (st, body[:200]))
objs = {"empty": b"", "one": os.urandom(1), "ten": os.urandom(10),
        "big": os.urandom(MiB + 17)}
for k, data in objs.items():
    st, body, _ = direct.send("PUT", "/%s/%s" % (B, k), body=data)
    if st != 200:
        raise SystemExit("PUT %s: %s %r" % (k, st, body[:300]))


def code(b):
    m = re.search(rb"<Code>([^<]*)</Code>", b)
    return m.group(1).decode() if m else ""


def answer(c, method, key, headers, etag=True):
    """What a client acts on: status; a 2xx's bytes (hash), Content-Range,
    Content-Length; a 4xx's S3 code; the ETag (not of a 304: RGW sends
    none there, S3 and the gateway do)."""
    st, b, h = c.send(method, "/%s/%s" % (B, key), payload="unsigned",
                      headers=headers)
    a = {"status": st}
    if 200 <= st < 300:
        a["sha"] = hashlib.sha256(b).hexdigest()
        a["length"] = h.get("content-length")
        if st == 206:
            a["range"] = h.get("content-range")
    elif st >= 400:
        a["code"] = code(b)
    if etag and st != 304:
        a["etag"] = h.get("etag")
    return a


def invalidate(key):
    req = urllib.request.Request("%s/_bucketcache/v1/cache?bucket=%s&key=%s"
                                 % (E["GC_URL"], B, key), method="DELETE")
    with urllib.request.urlopen(req, timeout=10) as f:
        f.read()


RANGES = ["bytes=0-0", "bytes=0-", "bytes=5-", "bytes=9-", "bytes=10-",
          "bytes=2-5", "bytes=10-20", "bytes=-1", "bytes=-5",
          "bytes=-100000000", "bytes=1048570-1048600",
          "bytes=1048575-1048576"]
for k in objs:
    for r in RANGES:
        h = {"Range": r}
        want = answer(direct, "GET", k, h)
        invalidate(k)
        got = {"cold": answer(cached, "GET", k, h),
               "warm": answer(cached, "GET", k, h),
               "no-cache": answer(nocache, "GET", k, h)}
        for how, a in got.items():
            ok(a == want, "%s %s, %s: as RGW answers (%s)" % (k, r, how,
                                                              want["status"]),
               "\n  RGW:     %r\n  gateway: %r" % (want, a))

# 2. conditionals
st, _, h = direct.send("HEAD", "/%s/ten" % B, payload="unsigned")
ETAG, LM = h["etag"], h["last-modified"]
PAST = "Sat, 01 Jan 2000 00:00:00 GMT"
FUTURE = "Fri, 01 Jan 2100 00:00:00 GMT"
OTHER = '"0123456789abcdef0123456789abcdef"'
CONDS = [
    {"If-Match": ETAG}, {"If-Match": OTHER}, {"If-Match": ETAG.strip('"')},
    {"If-None-Match": ETAG}, {"If-None-Match": OTHER},
    {"If-Modified-Since": PAST}, {"If-Modified-Since": FUTURE},
    {"If-Modified-Since": LM},
    {"If-Unmodified-Since": PAST}, {"If-Unmodified-Since": FUTURE},
    {"If-Unmodified-Since": LM},
    {"If-Match": ETAG, "If-Unmodified-Since": PAST},
    {"If-None-Match": OTHER, "If-Modified-Since": FUTURE},
    {"If-None-Match": ETAG, "If-Modified-Since": PAST},
    {"If-Match": OTHER, "Range": "bytes=0-1"},
    {"If-Match": ETAG, "Range": "bytes=2-3"},
    {"If-None-Match": ETAG, "Range": "bytes=0-1"},
]
for method in ("GET", "HEAD"):
    answer(cached, method, "ten", {})     # cached before the conditionals
    for cond in CONDS:
        want = answer(direct, method, "ten", cond)
        for how, c in (("cached", cached), ("no-cache", nocache)):
            a = answer(c, method, "ten", cond)
            ok(a == want, "%s %s, %s: as RGW answers (%s)" % (
                method, cond, how, want["status"]),
               "\n  RGW:     %r\n  gateway: %r" % (want, a))
done()
EOF

# ---- 3. versioned buckets ------------------------------------------------------
stop GC
gateway GV --cache --chunk-size 1M --mem-size 64M --meta-ttl 1s --meta-stale 0
export GV_URL
bc_py <<'EOF'
import hashlib, os, re, time
from itlib import ok, done, fx_stats
from s3sign import Client

E = os.environ
B = "versioned"
fx = E["BC_FIXTURE_URL"]
direct = Client(fx, E["BC_UP_KEY"], E["BC_UP_SECRET"])
gw = Client(E["GV_URL"], E["BC_UP_KEY"], E["BC_UP_SECRET"])
MiB = 1 << 20


def get(c, key, version=None, method="GET", headers=None):
    path = "/%s/%s" % (B, key) + ("?versionId=" + version if version else "")
    return c.send(method, path, payload="unsigned", headers=headers or {})


def upstream_requests():
    return fx_stats(fx)["requests"]


st, _, _ = gw.send("PUT", "/" + B)
ok(st == 200, "create bucket %s through the gateway" % B, str(st))
conf = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/'
        b'2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>')
st, body, _ = gw.send("PUT", "/%s?versioning" % B, body=conf)
ok(st == 200, "PutBucketVersioning Enabled through the gateway",
   "%s %r" % (st, body[:300]))

A, Bv, C = os.urandom(MiB + 17), os.urandom(5000), os.urandom(777)
vid = {}
for name, data in (("A", A), ("B", Bv)):
    st, body, h = gw.send("PUT", "/%s/obj" % B, body=data)
    vid[name] = h.get("x-amz-version-id")
    ok(st == 200 and vid[name], "PUT version %s through the gateway: a "
       "version id" % name, "%s %r" % (st, h))

# GET and HEAD ?versionId=: a miss, then hits that make no upstream request
st, body, h = get(gw, "obj", vid["A"])
ok(st == 200 and body == A, "GET ?versionId=A: A's bytes (two chunks)",
   "%s, %d bytes" % (st, len(body)))
ok(h.get("x-bucketcache") == "miss", "GET ?versionId=A: a miss first",
   h.get("x-bucketcache"))
ok(h.get("x-amz-version-id") == vid["A"], "GET ?versionId=A: its version id",
   h.get("x-amz-version-id"))
n0 = upstream_requests()
st, body, h = get(gw, "obj", vid["A"])
ok(st == 200 and body == A and h.get("x-bucketcache") == "hit",
   "GET ?versionId=A again: A's bytes, a hit", "%s %s" % (st, h.get("x-bucketcache")))
st, body, h = get(gw, "obj", vid["A"], "HEAD")
ok(st == 200 and h.get("content-length") == str(len(A)) and
   h.get("x-amz-version-id") == vid["A"] and h.get("x-bucketcache") == "hit",
   "HEAD ?versionId=A: A's length and version id, a hit", repr(h))
st, body, h = get(gw, "obj", vid["A"], headers={"Range": "bytes=-5"})
ok(st == 206 and body == A[-5:] and h.get("x-bucketcache") == "hit",
   "GET ?versionId=A bytes=-5: A's last 5 bytes, a hit",
   "%s %r %s" % (st, body, h.get("x-bucketcache")))
ok(upstream_requests() == n0, "the version's second reads made no upstream "
   "request", str(fx_stats(fx)["last"][-5:]))

# the current version, then an overwrite through the gateway
st, body, h = get(gw, "obj")
ok(st == 200 and body == Bv and h.get("x-amz-version-id") == vid["B"],
   "plain GET: the current version, B", "%s %d" % (st, len(body)))
st, body, h = get(gw, "obj")
ok(h.get("x-bucketcache") == "hit", "plain GET again: a hit", h.get("x-bucketcache"))
st, body, h = gw.send("PUT", "/%s/obj" % B, body=C)
vid["C"] = h.get("x-amz-version-id")
ok(st == 200 and vid["C"], "overwrite (version C) through the gateway", str(st))
st, body, h = get(gw, "obj")
ok(st == 200 and body == C and h.get("x-amz-version-id") == vid["C"],
   "plain GET after the overwrite: the new current version, C",
   "%s %d %s" % (st, len(body), h.get("x-amz-version-id")))
st, body, h = get(gw, "obj", vid["A"])
ok(st == 200 and body == A, "GET ?versionId=A after the overwrite: A's bytes",
   "%s %d" % (st, len(body)))
st, body, h = get(gw, "obj", vid["B"])
ok(st == 200 and body == Bv, "GET ?versionId=B after the overwrite: B's bytes",
   "%s %d" % (st, len(body)))
n0 = upstream_requests()
st, body, h = get(gw, "obj", vid["B"])
ok(st == 200 and body == Bv and h.get("x-bucketcache") == "hit" and
   upstream_requests() == n0, "GET ?versionId=B again: a hit, nothing upstream",
   "%s %s" % (st, h.get("x-bucketcache")))

# past --meta-ttl (1 s): the current version is revalidated, a version not
time.sleep(1.3)
n0 = upstream_requests()
st, body, h = get(gw, "obj", vid["A"])
ok(st == 200 and body == A and upstream_requests() == n0,
   "past meta-ttl, GET ?versionId=A: no revalidation (a version never changes)",
   str(fx_stats(fx)["last"][-3:]))
st, body, h = get(gw, "obj")
ok(st == 200 and body == C and upstream_requests() == n0 + 1,
   "past meta-ttl, plain GET: one revalidation upstream",
   str(fx_stats(fx)["last"][-3:]))

# a version answered as RGW answers it, errors too
for what, version in (("A", vid["A"]), ("a made-up version",
                                        "3HL4kqtJvjVXFYwnonexistent.")):
    d = get(direct, "obj", version)
    g = get(gw, "obj", version)
    ok((d[0], hashlib.sha256(d[1]).hexdigest() if d[0] == 200 else
        re.findall(rb"<Code>([^<]*)</Code>", d[1])) ==
       (g[0], hashlib.sha256(g[1]).hexdigest() if g[0] == 200 else
        re.findall(rb"<Code>([^<]*)</Code>", g[1])),
       "GET ?versionId=%s: as RGW answers (%d)" % (what, d[0]),
       "%s %r / %s %r" % (d[0], d[1][:200], g[0], g[1][:200]))

# DELETE of the current version through the gateway: B is current again
st, body, h = gw.send("DELETE", "/%s/obj?versionId=%s" % (B, vid["C"]))
ok(st == 204, "DELETE ?versionId=C through the gateway", str(st))
st, body, h = get(gw, "obj")
ok(st == 200 and body == Bv and h.get("x-amz-version-id") == vid["B"],
   "plain GET after deleting version C: B is current again",
   "%s %d %s" % (st, len(body), h.get("x-amz-version-id")))
st, body, h = get(gw, "obj", vid["C"])
ok(st == 404, "GET ?versionId=C after its delete: 404", "%s %r" % (st, body[:200]))
# a delete marker
st, body, h = gw.send("DELETE", "/%s/obj" % B)
ok(st == 204 and h.get("x-amz-delete-marker") == "true",
   "plain DELETE through the gateway: a delete marker", "%s %r" % (st, h))
st, body, h = get(gw, "obj")
ok(st == 404, "plain GET after the delete marker: 404", str(st))
st, body, h = get(gw, "obj", vid["A"])
ok(st == 200 and body == A, "GET ?versionId=A after the delete marker: A",
   "%s %d" % (st, len(body)))
# versionId=null goes around the cache (the null version is overwritten in place)
st, body, h = gw.send("PUT", "/%s/nullv" % B, body=b"x")
d = get(direct, "nullv", "null")
g = get(gw, "nullv", "null")
ok(g[0] == d[0] and g[2].get("x-bucketcache") is None,
   "GET ?versionId=null: RGW's answer (%d), not through the cache" % d[0],
   "%s %r" % (g[0], g[2]))
done()
EOF
bc_assert_fixture_clean "every request RGW received"
stop NC
stop GV
bc_done 249
