#!/bin/bash
# test_admin_remote.sh — the admin and job endpoints the way remote clients
# reach them (issue 24): the README's DaemonSet recipe on loopback. One
# gateway per node with a client key per job (--client-key FULL: all of
# bucket data; LIM: only data/train/) and an admin token, in front of the
# verifying fixture (real SigV4 checks) and s3rver; jobs reach it through
# fixture/relay.py, which adds X-Forwarded-For as a node's proxy does, so
# no request is local.
#   1. contrib/python's PlanClient (a boto3 session with FULL's key, SigV4
#      with the body's real hash) posts plans for epochs 0 and 1 (plain,
#      then gzip): answered 200 — the gateway lives (this PUT double-freed
#      a digest context before the fix: the gateway died);
#   2. boto3 with the helper's install_hints reads epoch 0 then epoch 1 in
#      plan order through the relay: the job's cursor moved, its prefetches
#      were issued and used (per-job stats), and the data is right;
#   3. the other ways a remote client signs: UNSIGNED-PAYLOAD, presigned,
#      a lying body hash (400), a wrong secret (403), an unknown key (403),
#      aws-chunked (501), no signature (403), a body over the plan bound
#      (400 EntityTooLarge, at once);
#   4. a prefix-limited key (LIM) plans only keys it may read (a plan naming
#      secret/ is 403 and makes no job; a gzip plan of 200,000 keys is
#      checked whole), may not plan, read or end FULL's
#      job, nor name a job after another key, lists only its own jobs; its
#      x-bucketcache-next hints prefetch only within its grant, and a hint
#      naming FULL's job is refused (hints_refused) and moves nothing; it
#      may not read /v1/scale, stats or metrics, nor invalidate;
#   5. 600 jobs from LIM stay within its share of the registry (1024 jobs /
#      2 keys): LIM holds 512, FULL's job is still there;
#   6. the admin token through the relay: list every job, /v1/scale, stats,
#      metrics, end a key's job; without it, 403;
#   7. the gateway exits 0 on SIGTERM with no sanitizer report.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture
S3=$BC_S3RVER_URL
TOKEN=tok-9f3e1
B=data

# the dataset, at the upstream: train/t00..t39 (a key's grant) and secret/
"$BC_PY" - "$S3" "$B" <<'EOF'
import sys
import boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                  config=Config(s3={"addressing_style": "path"}))
b = sys.argv[2]
s3.create_bucket(Bucket=b)
for i in range(40):
    s3.put_object(Bucket=b, Key="train/t%02d" % i,
                  Body=bytes([i]) * (20000 + 97 * i))
for i in range(4):
    s3.put_object(Bucket=b, Key="secret/s%d" % i, Body=b"secret %d" % i)
EOF

bc_start_gateway --upstream "$BC_FIXTURE_URL" --mem-size 64MiB \
	--client-key FULL:fullsecret:$B --client-key LIM:limsecret:$B/train/ \
	--admin-token "$TOKEN" --log-level debug

# the node's proxy in front of the gateway
pf=$BC_TMP/relay.port
"$BC_PY" "$BC_IT_DIR/fixture/relay.py" --upstream "127.0.0.1:$BC_GW_PORT" \
	--forwarded-for 10.1.2.3 --port-file "$pf" >>"$BC_TMP/relay.log" 2>&1 &
BC_PIDS+=($!)
BC_LOGS+=("$BC_TMP/relay.log")
for i in $(seq 100); do [ -s "$pf" ] && break; sleep 0.1; done
[ -s "$pf" ] || bc_fail "the relay did not start"
RELAY=http://127.0.0.1:$(cat "$pf")
bc_expect relayed-stats 403 AccessDenied "through the relay a client is not local (stats refused)" \
	"$RELAY/_bucketcache/stats"

bc_py "$RELAY" "$BC_GW_URL" "$TOKEN" "$B" "$BC_SRCDIR/contrib/python" <<'EOF'
import gzip, json, sys, time, urllib.request
sys.path.insert(0, sys.argv[5])   # contrib/python: the project's helper

import boto3
from botocore.config import Config

from itlib import ok, done
from s3sign import Client
from bucketcache.plan import PlanClient, PlanError
from bucketcache.hooks import install_hints

relay, gw, token, B = sys.argv[1:5]
ADMIN = {"x-bucketcache-admin-token": token}
TRAIN = ["train/t%02d" % i for i in range(40)]


def local(path):   # the gateway itself, on loopback: the operator's view
    with urllib.request.urlopen(gw + path, timeout=10) as f:
        return json.load(f)


def alive():
    with urllib.request.urlopen(gw + "/_bucketcache/health", timeout=5) as f:
        return f.status == 200


def job(jid):
    return local("/_bucketcache/v1/jobs/" + jid)


def counter(name):
    return local("/_bucketcache/stats")["counters"][name]


def code(body):
    s = body.decode("utf-8", "replace")
    i = s.find("<Code>")
    return s[i + 6:s.find("</Code>")] if i >= 0 else s[:80]


full_session = boto3.Session(aws_access_key_id="FULL",
                             aws_secret_access_key="fullsecret",
                             region_name="us-east-1")
full = Client(relay, "FULL", "fullsecret")
lim = Client(relay, "LIM", "limsecret")
anon = Client(relay)
plan0 = TRAIN[:]
plan1 = TRAIN[::-1]

# ---- 1. the project's helper, signed, from a non-local client ----------------
pc = PlanClient(relay, B, "train-a", session=full_session)
ok(pc.put(0, plan0) == 200, "PlanClient (FULL, SigV4, real body hash) posts epoch 0 through the relay")
ok(alive(), "the gateway lives after a signed, non-local plan PUT")
pcz = PlanClient(relay, B, "train-a", session=full_session, gzip_min=0)
ok(pcz.put(1, plan1) == 200, "PlanClient posts epoch 1 gzip-compressed")
j = job("train-a")
ok(j["epochs"] == [0, 1] and j["plan_keys"] == 40 and j["owner"] == "FULL",
   "the job holds both epochs, owned by FULL", str(j))

# ---- 2. boto3 reads both epochs in plan order, hinted -------------------------
s3 = boto3.client("s3", endpoint_url=relay, region_name="us-east-1",
                  aws_access_key_id="FULL", aws_secret_access_key="fullsecret",
                  config=Config(s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
install_hints(s3, "train-a")
good = True
for epoch, keys in ((0, plan0), (1, plan1)):
    for k in keys:
        body = s3.get_object(Bucket=B, Key=k)["Body"].read()
        i = int(k[-2:])
        good = good and body == bytes([i]) * (20000 + 97 * i)
        time.sleep(0.01)   # a training step: the prefetcher runs ahead
ok(good, "boto3 read 80 objects through the relay, every byte right")
j = job("train-a")
ok(j["reads"] == 80, "the job's 80 GETs moved its cursor", str(j))
ok(j["epoch"] == 1, "the job is in epoch 1", str(j))
ok(j["prefetch_issued"] > 0 and j["prefetch_used"] > 0,
   "the plans took effect: prefetches issued and used (%d, %d)" %
   (j["prefetch_issued"], j["prefetch_used"]), str(j))
ok(alive(), "the gateway lives")

# ---- 3. the other ways to sign ---------------------------------------------
P = "/_bucketcache/v1/jobs/%s/plan?bucket=" + B
body = "\n".join(TRAIN[:10]).encode()
st, b, _ = full.send("PUT", P % "train-b", body, payload="unsigned")
ok(st == 200, "UNSIGNED-PAYLOAD plan PUT: 200", "%d %s" % (st, b[:200]))
st, b, _ = full.send("PUT", P % "train-c", body, presign=60)
ok(st == 200, "presigned plan PUT: 200", "%d %s" % (st, b[:200]))
st, b, _ = full.send("GET", "/_bucketcache/v1/jobs/train-c", presign=60)
ok(st == 200 and json.loads(b)["owner"] == "FULL", "presigned GET of its job: 200", "%d %s" % (st, b[:200]))
st, b, _ = full.send("PUT", P % "train-d", body, payload="badhash")
ok(st == 400 and code(b) == "BadDigest", "a body that does not match its signed hash: 400 BadDigest",
   "%d %s" % (st, b[:200]))
ok("train-d" not in [x["id"] for x in local("/_bucketcache/v1/jobs")["jobs"]], "and makes no job")
st, b, _ = Client(relay, "FULL", "wrong").send("PUT", P % "train-d", body)
ok(st == 403 and code(b) == "SignatureDoesNotMatch", "a wrong secret: 403 SignatureDoesNotMatch", "%d %s" % (st, b[:200]))
st, b, _ = Client(relay, "NOBODY", "x").send("PUT", P % "train-d", body)
ok(st == 403, "an unknown access key: 403", "%d %s" % (st, b[:200]))
st, b, _ = full.send("PUT", P % "train-d", body, sign=False)
ok(st == 403 and code(b) == "AccessDenied", "no signature, no token: 403 AccessDenied", "%d %s" % (st, b[:200]))
chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
st, b, _ = full.send("PUT", P % "train-d", chunked, headers={
    "Content-Encoding": "aws-chunked",
    "x-amz-decoded-content-length": str(len(body))},
    payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
ok(st == 501 and code(b) == "NotImplemented", "an aws-chunked plan is not taken: 501", "%d %s" % (st, b[:200]))
# a body over the plan bound: refused on its head, before the bytes
import socket
sk = socket.create_connection(("127.0.0.1", int(relay.rsplit(":", 1)[1])), timeout=10)
sk.sendall(("PUT " + P % "huge" + " HTTP/1.1\r\nHost: x\r\nx-bucketcache-admin-token: %s\r\n"
            "Content-Length: 300000000\r\n\r\n" % token).encode() + b"k\n" * 1000)
ans = sk.recv(4096).decode("latin-1")
sk.close()
ok(" 400 " in ans.split("\r\n")[0] and "EntityTooLarge" in ans, "a plan body over 256 MiB: 400 EntityTooLarge",
   ans[:200])
ok(alive(), "the gateway lives")

# ---- 4. a prefix-limited key ------------------------------------------------
st, b, _ = lim.send("PUT", P % "lim-1", "\n".join(TRAIN[20:30]).encode())
ok(st == 200, "LIM plans keys of its grant (train/)", "%d %s" % (st, b[:200]))
ok(job("lim-1")["owner"] == "LIM", "the job is LIM's")
st, b, _ = lim.send("PUT", P % "lim-2", b"train/t01\nsecret/s0\n")
ok(st == 403 and code(b) == "AccessDenied" and b"secret/s0" in b,
   "a plan naming a key outside LIM's grant: 403 naming it", "%d %s" % (st, b[:300]))
st, b, _ = lim.send("GET", "/_bucketcache/v1/jobs/lim-2")
ok(st == 404, "the refused plan made no job", "%d" % st)
big = "".join("train/x%06d\n" % i for i in range(200000)).encode()
t0 = time.time()
st, b, _ = lim.send("PUT", P % "lim-big", gzip.compress(big, 1))
ok(st == 200 and json.loads(b)["keys"] == 200000,
   "LIM posts a gzip plan of 200,000 keys of its grant (%.1f s)" % (time.time() - t0), "%d %s" % (st, b[:200]))
st, b, _ = lim.send("PUT", P % "lim-big2", gzip.compress(big + b"secret/s3\n", 1))
ok(st == 403 and b"secret/s3" in b, "the same plan with its last key outside the grant: 403")
st, b, _ = lim.send("PUT", P % "lim-long", b"train/" + b"x" * 1025 + b"\n")
ok(st == 400 and code(b) == "InvalidArgument" and b"<Message>Invalid Argument</Message>" not in b,
   "a plan with a key over 1,024 bytes: 400 InvalidArgument saying why", "%d %s" % (st, b[:300]))
st, b, _ = lim.send("PUT", P % "train-a", b"train/t01\n")
ok(st == 403 and code(b) == "AccessDenied", "LIM may not plan FULL's job", "%d %s" % (st, b[:200]))
ok(job("train-a")["epochs"] == [1], "FULL's job is untouched", str(job("train-a")))
st, b, _ = lim.send("GET", "/_bucketcache/v1/jobs/train-a")
ok(st == 403, "LIM may not read FULL's job", "%d %s" % (st, b[:200]))
st, b, _ = lim.send("DELETE", "/_bucketcache/v1/jobs/train-a")
ok(st == 403, "LIM may not end FULL's job", "%d %s" % (st, b[:200]))
ok(job("train-a")["owner"] == "FULL", "FULL's job is still there")
st, b, _ = lim.send("PUT", P % "FULL", b"train/t01\n")
ok(st == 403, "LIM may not name a job after another key (FULL)", "%d %s" % (st, b[:200]))
st, b, _ = lim.send("GET", "/_bucketcache/v1/jobs")
ids = [x["id"] for x in json.loads(b)["jobs"]] if st == 200 else None
ok(st == 200 and ids == ["lim-1", "lim-big"], "LIM lists its own jobs only", "%d %s" % (st, b[:300]))
st, b, _ = lim.send("GET", "/_bucketcache/v1/jobs/lim-1")
ok(st == 200 and json.loads(b)["id"] == "lim-1", "LIM reads its own job")
for path, method in (("/_bucketcache/v1/scale", "GET"), ("/_bucketcache/stats", "GET"),
                     ("/_bucketcache/metrics", "GET"),
                     ("/_bucketcache/v1/cache?bucket=" + B, "DELETE")):
    st, b, _ = lim.send(method, path)
    ok(st == 403, "LIM: %s %s is 403" % (method, path.split("?")[0]), "%d %s" % (st, b[:200]))

# hints: the prefetcher brings what LIM may read, and nothing else (the
# operator empties the cache first, on loopback)
urllib.request.urlopen(urllib.request.Request(
    gw + "/_bucketcache/v1/cache?bucket=" + B, method="DELETE"), timeout=10).read()
refused0 = counter("hints_refused")
reads0 = job("train-a")["reads"]
st, b, h = lim.send("GET", "/%s/train/t35" % B, headers={
    "x-bucketcache-job": "lim-hints",
    "x-bucketcache-next": "train/t36,train/t37,secret/s1,secret/s2"})
ok(st == 200 and h.get("x-bucketcache") == "miss", "LIM GETs train/t35 with -next hints naming secret/",
   "%d %s" % (st, h))
time.sleep(1.0)
st, b, h = full.send("HEAD", "/%s/train/t37" % B)
ok(h.get("x-bucketcache") == "hit", "the hinted key in LIM's grant was prefetched", str(h))
st, b, h = full.send("HEAD", "/%s/secret/s1" % B)
ok(h.get("x-bucketcache") == "miss", "the hinted keys outside it were not (secret/s1 is a miss)", str(h))
st, b, h = lim.send("GET", "/%s/train/t05" % B, headers={"x-bucketcache-job": "train-a"})
ok(st == 200, "LIM GETs with x-bucketcache-job naming FULL's job: served")
ok(counter("hints_refused") == refused0 + 1, "the hint is refused (hints_refused)")
ok(job("train-a")["reads"] == reads0, "and FULL's job did not move")

# ---- 5. many jobs from one key stay within its share --------------------------
for n in range(600):
    st, b, _ = lim.send("PUT", P % ("many-%d" % n), b"train/t01\n")
    if st != 200:
        break
ok(st == 200, "600 plan PUTs from LIM answered 200", "%d %s" % (st, b[:200]))
jobs = local("/_bucketcache/v1/jobs")["jobs"]
mine = [x for x in jobs if x["owner"] == "LIM"]
ok(len(mine) == 512, "LIM holds its share, 1024 / 2 = 512 jobs", str(len(mine)))
ok(any(x["id"] == "train-a" for x in jobs), "FULL's job was not evicted")
ok(alive(), "the gateway lives")

# ---- 6. the admin token through the relay ------------------------------------
st, b, _ = anon.send("GET", "/_bucketcache/v1/jobs", headers=ADMIN)
ok(st == 200 and len(json.loads(b)["jobs"]) == len(jobs), "token: GET /v1/jobs lists every job")
for path in ("/_bucketcache/v1/scale", "/_bucketcache/stats", "/_bucketcache/metrics"):
    st, b, _ = anon.send("GET", path, headers={"Authorization": "Bearer " + token})
    ok(st == 200, "token (Bearer): GET %s" % path, "%d" % st)
st, b, _ = anon.send("GET", "/_bucketcache/v1/scale")
ok(st == 403, "no token: /v1/scale is 403")
st, b, _ = anon.send("DELETE", "/_bucketcache/v1/jobs/many-599", headers=ADMIN)
ok(st == 204, "token: the operator ends LIM's job", "%d" % st)
st, b, _ = anon.send("PUT", P % "op-job", b"secret/s0\n", headers=ADMIN)
ok(st == 200 and job("op-job")["owner"] is None, "token: an operator's plan may name any key; no owner")
ok(alive(), "the gateway lives")
done()
EOF

bc_stop_gateway
bc_done 61
