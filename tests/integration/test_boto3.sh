#!/bin/bash
# test_boto3.sh — boto3 through the gateway, compared with the same calls
# sent straight to the verifying fixture: put/get (+Range)/head/list
# (prefix, delimiter, pagination)/copy/delete, presigned GET URLs (boto3's
# default form and explicit s3v4) fetched with curl, and keys with spaces,
# unicode, '+', '%', '=' and '&'. test_rgw_boto3.sh runs it against Ceph
# RGW (BC_UPSTREAM=rgw).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_upstream
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug

bc_stats_save "$BC_TMP/stats0.json"

"$BC_PY" - "$BC_FIXTURE_URL" "$BC_GW_URL" "$BC_TMP" <<'EOF' || bc_fail "boto3 flow failed"
import hashlib, json, os, subprocess, sys
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

direct_url, gw_url, tmp = sys.argv[1:4]
n = 0

def ok(cond, msg, detail=""):
    global n
    n += 1
    if not cond:
        print("not ok %d - %s %s" % (n, msg, detail), flush=True)
        sys.exit(1)
    print("ok %d - %s" % (n, msg), flush=True)

def client(url, **cfg):
    return boto3.client(
        "s3", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        config=Config(s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1}, connect_timeout=5,
                      read_timeout=30, **cfg))

def curl(url, out):
    r = subprocess.run(["curl", "-sS", "--max-time", "20", "-o", out,
                        "-w", "%{http_code}", url],
                       capture_output=True, text=True)
    return r.stdout

ODD_KEYS = [
    "dir with space/file name.txt",
    "ünïcødé/ключ/日本語.bin",
    "plus+sign/a+b.txt",
    "percent%25/100%.txt",
    "eq=and&amp/x=1&y=2.txt",
    "mixed/ a+b%20c=d&e ü.txt",
]

def flow(url, bucket, tag):
    s3 = client(url)
    r = {}
    s3.create_bucket(Bucket=bucket)
    body = hashlib.sha256(b"fixed").digest() * 200      # 6400 bytes, same everywhere
    put = s3.put_object(Bucket=bucket, Key="obj.bin", Body=body,
                        ContentType="application/x-test",
                        Metadata={"purpose": "bucketcache-test"})
    r["put_etag"] = put["ETag"]
    ok(put["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(),
       "%s: put_object ETag is the MD5" % tag, put["ETag"])

    g = s3.get_object(Bucket=bucket, Key="obj.bin")
    data = g["Body"].read()
    ok(data == body, "%s: get_object bytes" % tag)
    r["get"] = {k: g.get(k) for k in ("ContentLength", "ETag", "ContentType",
                                      "Metadata")}
    ok(g.get("Metadata") == {"purpose": "bucketcache-test"},
       "%s: user metadata round trip" % tag, str(g.get("Metadata")))

    g = s3.get_object(Bucket=bucket, Key="obj.bin", Range="bytes=1000-2999")
    part = g["Body"].read()
    ok(part == body[1000:3000], "%s: get_object Range bytes" % tag)
    ok(g["ContentRange"] == "bytes 1000-2999/%d" % len(body),
       "%s: Content-Range" % tag, g["ContentRange"])
    ok(g["ResponseMetadata"]["HTTPStatusCode"] == 206, "%s: 206" % tag)
    r["range"] = {k: g.get(k) for k in ("ContentLength", "ContentRange", "ETag")}

    h = s3.head_object(Bucket=bucket, Key="obj.bin")
    r["head"] = {k: h.get(k) for k in ("ContentLength", "ETag", "ContentType")}
    ok(h["ContentLength"] == len(body), "%s: head_object ContentLength" % tag)

    try:
        s3.head_object(Bucket=bucket, Key="no/such/key")
        ok(False, "%s: head of a missing key raises" % tag)
    except ClientError as e:
        code = e.response["ResponseMetadata"]["HTTPStatusCode"]
        ok(code == 404, "%s: head of a missing key is 404" % tag, str(code))
        r["head_missing"] = code
    try:
        s3.get_object(Bucket=bucket, Key="no/such/key")
        ok(False, "%s: get of a missing key raises" % tag)
    except ClientError as e:
        r["get_missing"] = e.response["Error"]["Code"]
        ok(r["get_missing"] == "NoSuchKey", "%s: NoSuchKey" % tag,
           r["get_missing"])

    # odd keys: put, get, head, list returns them verbatim
    for i, k in enumerate(ODD_KEYS):
        b = ("odd key %d: %s" % (i, k)).encode()
        s3.put_object(Bucket=bucket, Key=k, Body=b)
        got = s3.get_object(Bucket=bucket, Key=k)["Body"].read()
        ok(got == b, "%s: odd key round trip %r" % (tag, k))
        h = s3.head_object(Bucket=bucket, Key=k)
        ok(h["ContentLength"] == len(b), "%s: odd key head %r" % (tag, k))
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        listed += [o["Key"] for o in page.get("Contents", [])]
    ok(sorted(ODD_KEYS + ["obj.bin"]) == sorted(listed),
       "%s: list returns every odd key verbatim" % tag, str(listed))

    # list with prefix / delimiter / pagination
    for i in range(5):
        s3.put_object(Bucket=bucket, Key="tree/sub%d/leaf" % (i % 2), Body=b"x")
        s3.put_object(Bucket=bucket, Key="tree/file%d" % i, Body=b"y" * i)
    l = s3.list_objects_v2(Bucket=bucket, Prefix="tree/", Delimiter="/")
    r["list_delim"] = {
        "keys": [o["Key"] for o in l.get("Contents", [])],
        "sizes": [o["Size"] for o in l.get("Contents", [])],
        "prefixes": [p["Prefix"] for p in l.get("CommonPrefixes", [])],
        "count": l.get("KeyCount"),
    }
    ok(r["list_delim"]["prefixes"] == ["tree/sub0/", "tree/sub1/"],
       "%s: CommonPrefixes" % tag, str(r["list_delim"]))
    ok(r["list_delim"]["keys"] == ["tree/file%d" % i for i in range(5)],
       "%s: delimiter listing keys" % tag, str(r["list_delim"]))
    pages = []
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix="tree/file", PaginationConfig={"PageSize": 2}):
        pages.append([o["Key"] for o in page.get("Contents", [])])
    r["pages"] = pages
    ok(pages == [["tree/file0", "tree/file1"], ["tree/file2", "tree/file3"],
                 ["tree/file4"]], "%s: MaxKeys=2 pagination" % tag, str(pages))

    # copy then read (read-after-write through the same endpoint)
    s3.copy_object(Bucket=bucket, Key="copy.bin",
                   CopySource={"Bucket": bucket, "Key": "obj.bin"})
    ok(s3.get_object(Bucket=bucket, Key="copy.bin")["Body"].read() == body,
       "%s: copy_object then get" % tag)
    # overwrite then read: new bytes, never the old ones
    s3.put_object(Bucket=bucket, Key="obj.bin", Body=b"second version")
    ok(s3.get_object(Bucket=bucket, Key="obj.bin")["Body"].read() ==
       b"second version", "%s: overwrite is visible at once" % tag)
    s3.put_object(Bucket=bucket, Key="obj.bin", Body=body)

    # presigned GET: boto3's default form and explicit s3v4
    url = s3.generate_presigned_url("get_object",
                                    Params={"Bucket": bucket, "Key": "obj.bin"},
                                    ExpiresIn=300)
    r["presign_default_form"] = ("v4" if "X-Amz-Signature=" in url else
                                 "v2" if "Signature=" in url else "?")
    out = os.path.join(tmp, tag + ".presigned")
    code = curl(url, out)
    ok(code == "200" and open(out, "rb").read() == body,
       "%s: presigned (%s) GET with curl" % (tag, r["presign_default_form"]),
       code)
    s3v4 = client(url_base(url), signature_version="s3v4")
    for k in ("obj.bin", ODD_KEYS[1], ODD_KEYS[4]):
        url = s3v4.generate_presigned_url("get_object",
                                          Params={"Bucket": bucket, "Key": k},
                                          ExpiresIn=300)
        ok("X-Amz-Signature=" in url, "%s: s3v4 presign form" % tag)
        code = curl(url, out)
        ok(code == "200", "%s: presigned s3v4 GET %r with curl" % (tag, k), code)
    # a tampered presigned URL is refused
    bad = url[:-1] + ("0" if url[-1] != "0" else "1")
    code = curl(bad, out)
    ok(code == "403", "%s: tampered presigned URL is 403" % tag, code)

    # delete
    s3.delete_object(Bucket=bucket, Key="copy.bin")
    for k in ODD_KEYS:
        s3.delete_object(Bucket=bucket, Key=k)
    listed = [o["Key"] for o in
              s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    r["after_delete"] = listed
    ok(not any(k in listed for k in ODD_KEYS + ["copy.bin"]),
       "%s: deleted keys are gone from the listing" % tag, str(listed))
    try:
        s3.get_object(Bucket=bucket, Key=ODD_KEYS[0])
        ok(False, "%s: get after delete fails" % tag)
    except ClientError as e:
        ok(e.response["Error"]["Code"] == "NoSuchKey",
           "%s: get after delete is NoSuchKey" % tag)
    return r

def url_base(url):
    from urllib.parse import urlsplit
    u = urlsplit(url)
    return "%s://%s" % (u.scheme, u.netloc)

def fixture(path, method="GET"):
    import urllib.request
    req = urllib.request.Request(direct_url + "/__fixture/" + path,
                                 method=method)
    with urllib.request.urlopen(req, timeout=10) as f:
        return json.load(f)

direct = flow(direct_url, "boto-direct", "direct")
st = fixture("stats")
ok(st["rejected"] == 1 and st["rejected_by_code"] == {"SignatureDoesNotMatch": 1},
   "direct: the fixture rejected exactly the tampered URL", str(st["rejections"]))
fixture("reset", "POST")
gw = flow(gw_url, "boto-gw", "gateway")
for k in direct:
    ok(direct[k] == gw[k], "gateway result %s equals direct" % k,
       "\n  direct:  %r\n  gateway: %r" % (direct[k], gw[k]))
with open(os.path.join(tmp, "boto3.checks"), "w") as f:
    f.write(str(n))
EOF
n=$(cat "$BC_TMP/boto3.checks")
bc_add_checks "$n"

bc_assert_fixture_clean "boto3 through the gateway"
v=$(bc_stats_delta "$BC_TMP/stats0.json" requests)
bc_assert_ge "$v" 40 "stats: requests counted"
v=$(bc_stats_delta "$BC_TMP/stats0.json" auth_failures)
bc_assert_eq 1 "$v" "stats: only the tampered presigned URL failed auth"
v=$(bc_stats_get requests_by_op.PutObject.2xx)
bc_assert_ge "$v" 10 "stats: PutObject 2xx"
v=$(bc_stats_get requests_by_op.GetObject.2xx)
bc_assert_ge "$v" 10 "stats: GetObject 2xx"
v=$(bc_stats_get requests_by_op.ListObjectsV2.2xx)
bc_assert_ge "$v" 3 "stats: ListObjectsV2 2xx"
v=$(bc_stats_get requests_by_op.DeleteObject.2xx)
bc_assert_ge "$v" 6 "stats: DeleteObject 2xx"
bc_stop_gateway
bc_done 94
