#!/bin/bash
# test_authz.sh — what a client key limited to a bucket prefix may do
# (issue 8, finding 1). With --client-key LIM:limsecret:bkt/allowed/ and
# SCR:scrsecret:scratch/only/, every key a request reads or writes must be
# inside the key's prefixes: the object key, the copy source of CopyObject
# and UploadPartCopy, each key of a DeleteObjects body (refused keys come
# back as per-key AccessDenied errors, the others are deleted), a listing's
# prefix; bucket configuration and bucket-level writes need the whole
# bucket; HeadBucket and GetBucketLocation need any part of it; ListBuckets
# needs an unlimited key. Refusals are S3's 403 AccessDenied and reach no
# upstream (the verifying fixture's counters, and FULL reading afterwards,
# show nothing happened). A DeleteObjects body is checked against its
# Content-MD5 and payload hash before it is cut, and bodies that an XML
# parser upstream reads otherwise than the gateway (a tag with blanks, a
# comment, a namespace prefix) or keys with ".." segments must not delete
# a key outside the prefix. The same DeleteObjects and CopyObject rules
# hold on a file:// upstream. test_rgw_authz.sh runs it against Ceph RGW
# (BC_UPSTREAM=rgw), which checks the Content-MD5 and signature of the
# DeleteObjects bodies the gateway cuts and re-signs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN" openssl base64
bc_start_upstream
KEYS=(--client-key LIM:limsecret:bkt/allowed/ --client-key FULL:fullsecret
	--client-key SCR:scrsecret:scratch/only/)
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug "${KEYS[@]}"
GW=$BC_GW_URL

S3REQ=("$BC_PY" "$BC_IT_DIR/fixture/s3req.py")

# s3r_expect NAME STATUS CODE MSG ARGS...: one s3req.py request (answer in
# $BC_TMP/NAME.body and .hdr), its status and (CODE not "-") S3 error code.
s3r_expect() {
	local name=$1 status=$2 code=$3 msg=$4 st
	shift 4
	st=$("${S3REQ[@]}" --out "$BC_TMP/$name.body" --hdr "$BC_TMP/$name.hdr" "$@")
	if [ "$st" != "$status" ]; then
		cat "$BC_TMP/$name.body" >&2 2>/dev/null || true
		bc_fail "$msg: expected HTTP $status, got $st"
	fi
	bc_pass "$msg: HTTP $st"
	[ "$code" = - ] || bc_assert_s3_error "$name" "$status" "$code" "$msg"
}

# Helpers shared by the Python blocks below.
cat >"$BC_TMP/authzlib.py" <<'PYEOF'
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from itlib import ok

SECRETS = {"LIM": "limsecret", "FULL": "fullsecret", "SCR": "scrsecret"}


def client(url, ak):
    return boto3.client(
        "s3", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id=ak, aws_secret_access_key=SECRETS[ak],
        config=Config(s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1}, connect_timeout=5,
                      read_timeout=30))


def call(fn, **kw):
    """(HTTP status, S3 error code or None, response)"""
    try:
        r = fn(**kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], None, r
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"],
                e.response.get("Error", {}).get("Code"), e.response)


def denied(fn, what, code="AccessDenied", status=403, **kw):
    """Two checks: fn(**kw) fails with status and S3 error code."""
    st, c, r = call(fn, **kw)
    ok(st == status, "%s: HTTP %d" % (what, status), "got %s %s" % (st, c))
    ok(c == code, "%s: %s" % (what, code), "got %s" % c)


def allowed(fn, what, **kw):
    """One check: fn(**kw) succeeds; returns its response."""
    st, c, r = call(fn, **kw)
    ok(st in (200, 204), "%s: succeeds" % what, "got %s %s" % (st, c))
    return r


def exists(cl, bucket, key):
    st, c, r = call(cl.head_object, Bucket=bucket, Key=key)
    if st not in (200, 404):
        raise SystemExit("HEAD %s/%s: %s %s" % (bucket, key, st, c))
    return st == 200


def delete_result(r):
    """(sorted deleted keys, sorted (key, code) errors)"""
    return (sorted(d["Key"] for d in r.get("Deleted", [])),
            sorted((e["Key"], e["Code"]) for e in r.get("Errors", [])))
PYEOF

# ---- setup: FULL creates the buckets and objects ---------------------------
bc_py "$GW" "$BC_TMP" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done
from authzlib import client, allowed

full = client(sys.argv[1], "FULL")
for b in ("bkt", "other", "scratch"):
    allowed(full.create_bucket, "FULL creates bucket %s" % b, Bucket=b)
for b, k in (("bkt", "secret/top.txt"), ("bkt", "allowed/a.txt"),
             ("bkt", "allowed/b.txt"), ("other", "x.txt")):
    allowed(full.put_object, "FULL puts %s/%s" % (b, k), Bucket=b, Key=k,
            Body=("content of %s/%s\n" % (b, k)).encode())
done()
PYEOF

# ---- LIM: CopyObject and UploadPartCopy ------------------------------------
bc_py "$GW" "$BC_TMP" "$BC_FIXTURE_URL" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done, fx_stats
from authzlib import client, call, denied, allowed, exists

gw, fx = sys.argv[1], sys.argv[3]
lim, full = client(gw, "LIM"), client(gw, "FULL")
copies0 = fx_stats(fx)["by_op"].get("CopyObject", 0)

denied(lim.copy_object, "LIM copies bkt/secret/top.txt into allowed/",
       Bucket="bkt", Key="allowed/stolen1.txt",
       CopySource={"Bucket": "bkt", "Key": "secret/top.txt"})
ok(not exists(full, "bkt", "allowed/stolen1.txt"),
   "the copy from secret/ does not exist")
denied(lim.copy_object, "LIM copies other/x.txt (another bucket) into allowed/",
       Bucket="bkt", Key="allowed/stolen2.txt",
       CopySource={"Bucket": "other", "Key": "x.txt"})
ok(not exists(full, "bkt", "allowed/stolen2.txt"),
   "the copy from the other bucket does not exist")
# spellings of the same source
for src in ("/bkt/secret/top.txt", "bkt/secret%2Ftop.txt",
            "bkt/secret/top.txt?versionId=null", "bkt/%73ecret/top.txt"):
    denied(lim.copy_object, "LIM copies from [%s]" % src, Bucket="bkt",
           Key="allowed/stolen3.txt", CopySource=src)
ok(not exists(full, "bkt", "allowed/stolen3.txt"),
   "no spelling of the secret source made a copy")
ok(fx_stats(fx)["by_op"].get("CopyObject", 0) == copies0,
   "no refused CopyObject reached the upstream")

denied(lim.copy_object, "LIM copies from bkt/allowed/../secret/top.txt",
       code="InvalidArgument", status=400, Bucket="bkt",
       Key="allowed/stolen4.txt", CopySource="bkt/allowed/../secret/top.txt")
denied(lim.copy_object, "LIM copies from a bad bucket name",
       code="InvalidArgument", status=400, Bucket="bkt",
       Key="allowed/stolen4.txt", CopySource="bkt%2Fallowed/a.txt")
ok(not exists(full, "bkt", "allowed/stolen4.txt"),
   "the copy with a dot segment does not exist")

allowed(lim.copy_object, "LIM copies bkt/allowed/a.txt to allowed/copy.txt",
        Bucket="bkt", Key="allowed/copy.txt",
        CopySource={"Bucket": "bkt", "Key": "allowed/a.txt"})
st, c, r = call(lim.get_object, Bucket="bkt", Key="allowed/copy.txt")
ok(st == 200 and r["Body"].read() == b"content of bkt/allowed/a.txt\n",
   "LIM reads its copy back", "got %s %s" % (st, c))

# UploadPartCopy
up = lim.create_multipart_upload(Bucket="bkt", Key="allowed/mp.bin")
uid = up["UploadId"]
ok(bool(uid), "LIM starts a multipart upload under allowed/")
upc0 = fx_stats(fx)["by_op"].get("UploadPartCopy", 0)
denied(lim.upload_part_copy, "LIM UploadPartCopy from bkt/secret/top.txt",
       Bucket="bkt", Key="allowed/mp.bin", UploadId=uid, PartNumber=1,
       CopySource={"Bucket": "bkt", "Key": "secret/top.txt"})
denied(lim.upload_part_copy, "LIM UploadPartCopy from other/x.txt",
       Bucket="bkt", Key="allowed/mp.bin", UploadId=uid, PartNumber=1,
       CopySource={"Bucket": "other", "Key": "x.txt"})
ok(fx_stats(fx)["by_op"].get("UploadPartCopy", 0) == upc0,
   "no refused UploadPartCopy reached the upstream")
call(lim.abort_multipart_upload, Bucket="bkt", Key="allowed/mp.bin",
     UploadId=uid)   # s3rver answers 405: not checked
done()
PYEOF

# ---- LIM: DeleteObjects, key by key ----------------------------------------
bc_py "$GW" "$BC_TMP" "$BC_FIXTURE_URL" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done, fx_stats
from authzlib import client, call, allowed, exists, delete_result

gw, fx = sys.argv[1], sys.argv[3]
lim, full = client(gw, "LIM"), client(gw, "FULL")


def objs(*keys):
    return [{"Key": k} for k in keys]


r = allowed(lim.delete_objects, "LIM deletes [allowed/a.txt, secret/top.txt]",
            Bucket="bkt", Delete={"Objects": objs("allowed/a.txt",
                                                  "secret/top.txt")})
d, e = delete_result(r)
ok(d == ["allowed/a.txt"], "Deleted lists allowed/a.txt only", repr(d))
ok(e == [("secret/top.txt", "AccessDenied")],
   "Errors lists secret/top.txt with AccessDenied", repr(e))
ok(all(x.get("Message") for x in r.get("Errors", [])),
   "the per-key error has a Message")
ok(exists(full, "bkt", "secret/top.txt"), "secret/top.txt still exists")
ok(not exists(full, "bkt", "allowed/a.txt"), "allowed/a.txt is gone")

allowed(full.put_object, "FULL puts allowed/a.txt back", Bucket="bkt",
        Key="allowed/a.txt", Body=b"again\n")
r = allowed(lim.delete_objects, "LIM deletes the same, Quiet",
            Bucket="bkt", Delete={"Quiet": True, "Objects": objs(
                "secret/top.txt", "allowed/a.txt")})
d, e = delete_result(r)
# s3rver ignores <Quiet> (the file:// upstream below does not)
ok(d in ([], ["allowed/a.txt"]), "Quiet: no refused key listed as Deleted",
   repr(d))
ok(e == [("secret/top.txt", "AccessDenied")],
   "Quiet: the refused key is still reported", repr(e))
ok(exists(full, "bkt", "secret/top.txt"), "Quiet: secret/top.txt still exists")
ok(not exists(full, "bkt", "allowed/a.txt"), "Quiet: allowed/a.txt is gone")

# only refused keys: answered by the gateway, nothing upstream
dels0 = fx_stats(fx)["by_op"].get("DeleteObjects", 0)
r = allowed(lim.delete_objects, "LIM deletes only keys outside its prefix",
            Bucket="bkt", Delete={"Objects": objs(
                "secret/top.txt", "secret/a&b<c>.txt", "allow")})
d, e = delete_result(r)
ok(d == [], "no key deleted", repr(d))
ok(e == sorted([("secret/top.txt", "AccessDenied"), ("allow", "AccessDenied"),
                ("secret/a&b<c>.txt", "AccessDenied")]),
   "an AccessDenied for each, keys with XML specials round-trip", repr(e))
ok(fx_stats(fx)["by_op"].get("DeleteObjects", 0) == dels0,
   "no DeleteObjects request reached the upstream")
ok(exists(full, "bkt", "secret/top.txt"), "secret/top.txt still exists")

# several allowed keys and VersionIds go through
allowed(full.put_object, "FULL puts allowed/c.txt", Bucket="bkt",
        Key="allowed/c.txt", Body=b"c\n")
r = allowed(lim.delete_objects, "LIM deletes allowed keys around a refused one",
            Bucket="bkt", Delete={"Objects": [
                {"Key": "allowed/c.txt"}, {"Key": "secret/top.txt"},
                {"Key": "allowed/none.txt", "VersionId": "null"}]})
d, e = delete_result(r)
ok(d == ["allowed/c.txt", "allowed/none.txt"], "both allowed keys Deleted",
   repr(d))
ok(e == [("secret/top.txt", "AccessDenied")], "one refused key", repr(e))
ok(fx_stats(fx)["by_op"].get("DeleteObjects", 0) == dels0 + 1,
   "one DeleteObjects went upstream")
done()
PYEOF

# Raw DeleteObjects bodies: Content-MD5 and the signed payload hash are
# checked before the body is cut and re-signed.
BODY='<Delete><Object><Key>allowed/b.txt</Key></Object><Object><Key>secret/top.txt</Key></Object></Delete>'
LIMK=(--key LIM --secret limsecret)
fx0=$(bc_fixture_stats by_op.DeleteObjects)
s3r_expect baddigest 400 BadDigest "DeleteObjects whose body does not match its Content-MD5" \
	"${LIMK[@]}" -X POST --data "$BODY" -H "Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==" "$GW/bkt?delete"
s3r_expect badhash 400 XAmzContentSHA256Mismatch "DeleteObjects whose body does not match its payload hash" \
	"${LIMK[@]}" -X POST --data "$BODY" --payload badhash \
	-H "Content-MD5: $(printf %s "$BODY" | openssl md5 -binary | base64)" "$GW/bkt?delete"
s3r_expect badxml 400 MalformedXML "DeleteObjects with a body that is no <Delete>" \
	"${LIMK[@]}" -X POST --data '<Delete><Object></Object></Delete>' \
	-H "Content-MD5: $(printf %s '<Delete><Object></Object></Delete>' | openssl md5 -binary | base64)" \
	"$GW/bkt?delete"
v=$(bc_fixture_stats by_op.DeleteObjects)
bc_assert_eq "$fx0" "$v" "the bad DeleteObjects bodies never reached the upstream"
s3r_expect chunked 200 - "aws-chunked DeleteObjects with a refused key" \
	"${LIMK[@]}" -X POST --data "$BODY" --payload streaming --chunk-size 40 \
	-H "Content-MD5: $(printf %s "$BODY" | openssl md5 -binary | base64)" "$GW/bkt?delete"
v=$(tr -d '\n' <"$BC_TMP/chunked.body")
bc_assert_match '<Deleted><Key>allowed/b.txt</Key>' "$v" "aws-chunked: allowed/b.txt deleted"
bc_assert_match '<Error><Key>secret/top.txt</Key><Code>AccessDenied</Code>' "$v" \
	"aws-chunked: secret/top.txt refused"

# Bodies an XML parser upstream reads otherwise than the gateway's scanner
# (s3_xml.h: exact start tags only, no comments), and keys an upstream that
# normalises paths resolves outside the prefix. Whatever the gateway
# answers (MalformedXML, a per-key error), the secret key must survive.
FULLK=(--key FULL --secret fullsecret)
hostile=(
	'h1|<Delete><Object ><Key>secret/h1.txt</Key></Object ><Object><Key>allowed/a.txt</Key></Object></Delete>'
	'h2|<Delete><Object><!--<Key>allowed/a.txt</Key>--><Key>secret/h2.txt</Key></Object></Delete>'
	'h3|<Delete><Object><Key>allowed/../secret/h3.txt</Key></Object></Delete>'
	'h4|<Delete><Object><Key>allowed/&#46;&#46;/secret/h4.txt</Key></Object></Delete>'
	'h5|<Delete><Object
><Key>secret/h5.txt</Key></Object
><Object><Key>allowed/a.txt</Key></Object></Delete>'
	'h6|<Delete><Object><Key >secret/h6.txt</Key ><Key>allowed/a.txt</Key></Object></Delete>'
	'h7|<Delete><Object><Key><![CDATA[secret/h7.txt]]></Key></Object></Delete>'
	'h8|<Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Object><s3:Key>secret/h8.txt</s3:Key></s3:Object><Object><Key>allowed/a.txt</Key></Object></Delete>'
)
for h in "${hostile[@]}"; do
	"${S3REQ[@]}" "${FULLK[@]}" -X PUT --data x "$GW/bkt/secret/${h%%|*}.txt" >/dev/null
done
for h in "${hostile[@]}"; do
	name=${h%%|*} body=${h#*|}
	st=$("${S3REQ[@]}" "${LIMK[@]}" -X POST --data "$body" --out "$BC_TMP/$name.body" \
		-H "Content-MD5: $(printf %s "$body" | openssl md5 -binary | base64)" "$GW/bkt?delete")
	v=$(tr -d '\n' <"$BC_TMP/$name.body")
	if grep -q "<Deleted><Key>[^<]*secret" <<<"$v"; then
		bc_fail "hostile DeleteObjects $name (HTTP $st) reports a secret key Deleted: $v"
	fi
	bc_pass "hostile DeleteObjects $name (HTTP $st): no secret key reported Deleted"
	st=$("${S3REQ[@]}" "${FULLK[@]}" -X HEAD "$GW/bkt/secret/$name.txt")
	bc_assert_eq 200 "$st" "hostile DeleteObjects $name: secret/$name.txt still exists"
done

# ---- LIM: listings, bucket configuration, bucket-level reads ---------------
bc_py "$GW" "$BC_TMP" "$BC_FIXTURE_URL" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done, fx_stats
from authzlib import client, call, denied, allowed

gw, fx = sys.argv[1], sys.argv[3]
lim, full = client(gw, "LIM"), client(gw, "FULL")
full.put_object(Bucket="bkt", Key="allowed/a.txt", Body=b"a\n")
before = fx_stats(fx)["requests"]

for name, fn in (("ListObjectsV2", lim.list_objects_v2),
                 ("ListObjects", lim.list_objects)):
    denied(fn, "LIM %s without a prefix" % name, Bucket="bkt")
    denied(fn, "LIM %s with prefix secret/" % name, Bucket="bkt",
           Prefix="secret/")
    denied(fn, "LIM %s with prefix allow (shorter than allowed/)" % name,
           Bucket="bkt", Prefix="allow")
    denied(fn, "LIM %s of another bucket" % name, Bucket="other",
           Prefix="allowed/")
denied(lim.list_multipart_uploads, "LIM ListMultipartUploads without a prefix",
       Bucket="bkt")
denied(lim.put_bucket_cors, "LIM PutBucketCors", Bucket="bkt",
       CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"],
                                         "AllowedOrigins": ["*"]}]})
denied(lim.get_bucket_cors, "LIM GetBucketCors", Bucket="bkt")
denied(lim.delete_bucket_cors, "LIM DeleteBucketCors", Bucket="bkt")
denied(lim.get_bucket_acl, "LIM GetBucketAcl", Bucket="bkt")
denied(lim.delete_bucket, "LIM DeleteBucket of its bucket", Bucket="bkt")
denied(lim.create_bucket, "LIM CreateBucket of its bucket", Bucket="bkt")
denied(lim.put_object, "LIM PutObject outside its prefix", Bucket="bkt",
       Key="secret/evil.txt", Body=b"x")
denied(lim.delete_object, "LIM DeleteObject outside its prefix", Bucket="bkt",
       Key="secret/top.txt")
ok(fx_stats(fx)["requests"] == before, "no refused request reached the upstream")

for name, fn in (("ListObjectsV2", lim.list_objects_v2),
                 ("ListObjects", lim.list_objects)):
    r = allowed(fn, "LIM %s with prefix allowed/" % name, Bucket="bkt",
                Prefix="allowed/")
    keys = [o["Key"] for o in r.get("Contents", [])]
    ok(keys and all(k.startswith("allowed/") for k in keys) and
       "allowed/a.txt" in keys, "%s lists allowed/ keys only" % name,
       repr(keys))
r = allowed(lim.list_objects_v2, "LIM ListObjectsV2 allowed/ with a delimiter",
            Bucket="bkt", Prefix="allowed/", Delimiter="/")
st, c, r = call(lim.list_multipart_uploads, Bucket="bkt", Prefix="allowed/")
ok(st != 403, "LIM ListMultipartUploads with prefix allowed/ is not refused "
   "(s3rver answers 501)", "got %s %s" % (st, c))
r = allowed(lim.get_bucket_location, "LIM GetBucketLocation", Bucket="bkt")
allowed(lim.head_bucket, "LIM HeadBucket", Bucket="bkt")
denied(lim.head_bucket, "LIM HeadBucket of another bucket", code="403",
       Bucket="other")
denied(lim.get_bucket_location, "LIM GetBucketLocation of another bucket",
       Bucket="other")
st, c, r = call(full.get_bucket_cors, Bucket="bkt")
ok(st == 404 and c == "NoSuchCORSConfiguration",
   "LIM's PutBucketCors set nothing", "got %s %s" % (st, c))
done()
PYEOF

# aws-cli as LIM: a real client's view of the same rules
export AWS_ACCESS_KEY_ID=LIM AWS_SECRET_ACCESS_KEY=limsecret
if bc_aws "$GW" s3 ls s3://bkt/ >"$BC_TMP/cli-ls.out" 2>"$BC_TMP/cli-ls.err"; then
	bc_fail "aws s3 ls s3://bkt/ as LIM succeeded"
fi
v=$(cat "$BC_TMP/cli-ls.err")
bc_assert_match 'AccessDenied' "$v" "aws s3 ls s3://bkt/ as LIM: AccessDenied"
bc_aws "$GW" s3 ls s3://bkt/allowed/ >"$BC_TMP/cli-ls2.out" || bc_fail "aws s3 ls s3://bkt/allowed/ as LIM"
v=$(awk '{ print $4 }' "$BC_TMP/cli-ls2.out" | sort | paste -sd'|')
bc_assert_eq "a.txt|copy.txt" "$v" "aws s3 ls s3://bkt/allowed/ as LIM lists its keys"
if bc_aws "$GW" s3 cp s3://bkt/secret/top.txt s3://bkt/allowed/cli.txt \
	>"$BC_TMP/cli-cp.out" 2>"$BC_TMP/cli-cp.err"; then
	bc_fail "aws s3 cp from secret/ as LIM succeeded"
fi
v=$(cat "$BC_TMP/cli-cp.err")
bc_assert_match 'AccessDenied|Forbidden|403' "$v" "aws s3 cp from secret/ to allowed/ as LIM: refused"
export AWS_ACCESS_KEY_ID=$BC_UP_KEY AWS_SECRET_ACCESS_KEY=$BC_UP_SECRET

# ---- SCR (scratch/only/) and FULL ------------------------------------------
bc_py "$GW" "$BC_TMP" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done
from authzlib import client, call, denied, allowed, exists, delete_result

gw = sys.argv[1]
scr, full = client(gw, "SCR"), client(gw, "FULL")
denied(scr.delete_bucket, "SCR deletes the bucket scratch", Bucket="scratch")
st, c, r = call(full.head_bucket, Bucket="scratch")
ok(st == 200, "the bucket scratch still exists", "got %s %s" % (st, c))
denied(scr.create_bucket, "SCR creates the bucket scratch2", Bucket="scratch2")
st, c, r = call(full.head_bucket, Bucket="scratch2")
ok(st == 404, "the bucket scratch2 does not exist", "got %s %s" % (st, c))
denied(scr.list_buckets, "SCR ListBuckets")
allowed(scr.put_object, "SCR writes inside scratch/only/", Bucket="scratch",
        Key="only/s.txt", Body=b"s\n")
allowed(scr.delete_object, "SCR deletes inside scratch/only/",
        Bucket="scratch", Key="only/s.txt")

# FULL may do all of it
r = allowed(full.list_buckets, "FULL ListBuckets")
names = sorted(b["Name"] for b in r["Buckets"])
ok({"bkt", "other", "scratch"} <= set(names), "FULL sees every bucket",
   repr(names))
r = allowed(full.list_objects_v2, "FULL lists bkt without a prefix",
            Bucket="bkt")
keys = [o["Key"] for o in r.get("Contents", [])]
ok("secret/top.txt" in keys, "FULL's listing has secret/top.txt", repr(keys))
allowed(full.copy_object, "FULL copies other/x.txt to bkt/secret/copy.txt",
        Bucket="bkt", Key="secret/copy.txt",
        CopySource={"Bucket": "other", "Key": "x.txt"})
r = allowed(full.delete_objects, "FULL DeleteObjects across prefixes",
            Bucket="bkt", Delete={"Objects": [{"Key": "secret/copy.txt"},
                                              {"Key": "allowed/copy.txt"}]})
d, e = delete_result(r)
ok(d == ["allowed/copy.txt", "secret/copy.txt"] and e == [],
   "FULL deleted both", repr((d, e)))
allowed(full.put_bucket_cors, "FULL PutBucketCors", Bucket="bkt",
        CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"],
                                          "AllowedOrigins": ["*"]}]})
allowed(full.create_bucket, "FULL creates scratch2", Bucket="scratch2")
allowed(full.delete_bucket, "FULL deletes scratch2", Bucket="scratch2")
done()
PYEOF
bc_assert_fixture_clean "every upstream request was validly signed"
bc_stop_gateway

# ---- the file:// upstream --------------------------------------------------
DATA=$BC_TMP/buckets
mkdir -p "$DATA/bkt/secret" "$DATA/bkt/allowed" "$DATA/other"
for f in bkt/secret/top.txt bkt/allowed/a.txt bkt/allowed/b.txt other/x.txt; do
	echo "content of $f" >"$DATA/$f"
done
bc_start_gateway --upstream "file://$DATA" --log-level debug "${KEYS[@]}"
bc_py "$BC_GW_URL" "$BC_TMP" "$DATA" <<'PYEOF'
import os
import sys
sys.path.insert(0, sys.argv[2])
from itlib import ok, done
from authzlib import client, call, denied, allowed, delete_result

gw, data = sys.argv[1], sys.argv[3]
lim = client(gw, "LIM")


def there(p):
    return os.path.exists(os.path.join(data, p))


r = allowed(lim.delete_objects, "file: LIM deletes [allowed/a.txt, secret/top.txt]",
            Bucket="bkt", Delete={"Objects": [{"Key": "allowed/a.txt"},
                                              {"Key": "secret/top.txt"}]})
d, e = delete_result(r)
ok(d == ["allowed/a.txt"], "file: Deleted lists allowed/a.txt only", repr(d))
ok(e == [("secret/top.txt", "AccessDenied")],
   "file: Errors lists secret/top.txt with AccessDenied", repr(e))
ok(there("bkt/secret/top.txt"), "file: secret/top.txt still exists")
ok(not there("bkt/allowed/a.txt"), "file: allowed/a.txt is gone")

r = allowed(lim.delete_objects, "file: LIM deletes, Quiet", Bucket="bkt",
            Delete={"Quiet": True, "Objects": [{"Key": "allowed/b.txt"},
                                               {"Key": "secret/top.txt"}]})
d, e = delete_result(r)
ok(d == [] and e == [("secret/top.txt", "AccessDenied")],
   "file: Quiet reports only the refused key", repr((d, e)))
ok(there("bkt/secret/top.txt") and not there("bkt/allowed/b.txt"),
   "file: Quiet deleted allowed/b.txt only")
r = allowed(lim.delete_objects, "file: LIM deletes only refused keys",
            Bucket="bkt", Delete={"Objects": [{"Key": "secret/top.txt"},
                                              {"Key": "../other/x.txt"}]})
d, e = delete_result(r)
ok(d == [] and [k for k, c in e if c == "AccessDenied"] ==
   ["../other/x.txt", "secret/top.txt"], "file: each refused", repr((d, e)))
ok(there("bkt/secret/top.txt") and there("other/x.txt"),
   "file: nothing deleted")

os.makedirs(os.path.join(data, "bkt/allowed"), exist_ok=True)   # pruned
with open(os.path.join(data, "bkt/allowed/a.txt"), "w") as f:
    f.write("content of bkt/allowed/a.txt\n")
denied(lim.copy_object, "file: LIM copies bkt/secret/top.txt into allowed/",
       Bucket="bkt", Key="allowed/stolen.txt",
       CopySource={"Bucket": "bkt", "Key": "secret/top.txt"})
denied(lim.copy_object, "file: LIM copies other/x.txt into allowed/",
       Bucket="bkt", Key="allowed/stolen.txt",
       CopySource={"Bucket": "other", "Key": "x.txt"})
ok(not there("bkt/allowed/stolen.txt"), "file: no copy was made")
allowed(lim.copy_object, "file: LIM copies allowed/a.txt to allowed/copy.txt",
        Bucket="bkt", Key="allowed/copy.txt",
        CopySource={"Bucket": "bkt", "Key": "allowed/a.txt"})
with open(os.path.join(data, "bkt/allowed/copy.txt")) as f:
    ok(f.read() == "content of bkt/allowed/a.txt\n", "file: the copy's bytes")
denied(lim.list_objects_v2, "file: LIM ListObjectsV2 without a prefix",
       Bucket="bkt")
denied(lim.list_buckets, "file: LIM ListBuckets")
done()
PYEOF
bc_stop_gateway
bc_done 182
