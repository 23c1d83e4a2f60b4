#!/bin/bash
# test_public_bucket.sh — unsigned clients without --anonymous (issue 9,
# "Answer as S3 answers"): the gateway sends their requests upstream
# unsigned and the upstream decides, as S3 decides for a public dataset
# read with `--no-sign-request`. The verifying fixture plays S3 with a
# public-read bucket (--public-bucket pubds: unsigned GET/HEAD/list pass
# to s3rver, anything else unsigned is 403 AccessDenied):
#   1. aws --no-sign-request ls/cp and boto3 with UNSIGNED: list, GET,
#      ranged GET and HEAD of pubds succeed, went upstream unsigned, and are
#      cached: read again, they are x-bucketcache: hit with no upstream
#      request; the upstream saw no Authorization and no client key;
#   2. a private bucket: unsigned GET, HEAD, list are the upstream's 403
#      AccessDenied; a missing key of pubds is its 404 NoSuchKey, a missing
#      public bucket its 404 NoSuchBucket;
#   3. a signed client's cached copy of a private object is NOT served to an
#      unsigned client: still 403, and the fixture saw the unsigned attempt
#      (a one-byte If-Match GET); the signed client is still served a hit;
#   4. unsigned PUT/DELETE to pubds and unsigned ListBuckets: the upstream's
#      403, nothing stored, and a refused unsigned DELETE does not drop the
#      cached copy (an anonymous client cannot empty the cache);
#   5. with --anonymous nothing changed: unsigned clients use the gateway's
#      credentials (the private object is read, signed upstream).
# test_rgw_public_bucket.sh runs it against Ceph RGW (BC_UPSTREAM=rgw),
# whose ACLs decide instead of the fixture: pubds and its objects are
# public-read, privds and its object private. Where RGW answers otherwise
# than the fixture's S3 stand-in, RGW decides: it answers an unsigned
# ListBuckets 200 with an empty list (S3: 403 AccessDenied).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN"
bc_start_upstream --public-bucket pubds --public-bucket gone-bucket
FX=$BC_FIXTURE_URL
SIG=("${BC_UP_SIGV4[@]}" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
MiB=$((1024 * 1024))
PUB=()   # what makes a bucket or object public-read
LB_STATUS=403   # an unsigned ListBuckets
if [ "$BC_UPSTREAM" = rgw ]; then
	PUB=(-H "x-amz-acl: public-read")
	LB_STATUS=200
fi

# setup, signed, straight at the fixture
bc_expect "mk-pubds" 200 - "create bucket pubds" "${SIG[@]}" "${PUB[@]}" -X PUT "$FX/pubds"
bc_expect "mk-privds" 200 - "create bucket privds" "${SIG[@]}" -X PUT "$FX/privds"
BIG=$BC_TMP/big.bin
SMALL=$BC_TMP/small.txt
SECRET=$BC_TMP/secret.bin
bc_mkfile "$BIG" $((3 * MiB + 12345))
bc_mkfile "$SMALL" 1000
bc_mkfile "$SECRET" 70000
bc_expect put-big 200 - "put pubds/data/big.bin" "${SIG[@]}" "${PUB[@]}" -X PUT -T "$BIG" "$FX/pubds/data/big.bin"
bc_expect put-small 200 - "put pubds/small.txt" "${SIG[@]}" "${PUB[@]}" -X PUT -T "$SMALL" "$FX/pubds/small.txt"
bc_expect put-secret 200 - "put privds/secret.bin" "${SIG[@]}" -X PUT -T "$SECRET" "$FX/privds/secret.bin"

bc_start_gateway --upstream "$FX" --cache --chunk-size 1M --mem-size 64M --log-level debug
GW=$BC_GW_URL
bc_fixture_reset
bc_stats_save "$BC_TMP/s0.json"

# ---- 1. aws-cli --no-sign-request -------------------------------------------
NOSIGN=(env AWS_ACCESS_KEY_ID=nobody AWS_SECRET_ACCESS_KEY=nothing "$BC_AWS_BIN"
	--endpoint-url "$GW" --cli-read-timeout 30 --cli-connect-timeout 5 --no-sign-request)
"${NOSIGN[@]}" s3 ls --recursive s3://pubds/ >"$BC_TMP/ls.out" 2>"$BC_TMP/ls.err" ||
	{ cat "$BC_TMP/ls.err" >&2; bc_fail "aws --no-sign-request s3 ls s3://pubds/"; }
v=$(awk '{print $4}' "$BC_TMP/ls.out" | sort | tr '\n' ' ')
bc_assert_eq "data/big.bin small.txt " "$v" "aws --no-sign-request s3 ls lists the public bucket"
"${NOSIGN[@]}" s3 cp s3://pubds/data/big.bin "$BC_TMP/aws-big.bin" >/dev/null 2>"$BC_TMP/cp.err" ||
	{ cat "$BC_TMP/cp.err" >&2; bc_fail "aws --no-sign-request s3 cp"; }
bc_assert_same_file "$BIG" "$BC_TMP/aws-big.bin" "aws --no-sign-request s3 cp: bytes"
v=$(bc_fixture_stats by_auth.anonymous)
bc_assert_ge "$v" 2 "the listing and the fetches reached the upstream unsigned"
v=$(bc_fixture_stats by_auth.sigv4)
bc_assert_eq 0 "$v" "no unsigned client's request went upstream signed"
v=$(bc_fixture_stats requests)
fx1=$v
bc_expect big-again 200 - "unsigned curl GET of the object aws-cli fetched" "$GW/pubds/data/big.bin"
bc_assert_same_file "$BIG" "$BC_TMP/big-again.body" "unsigned curl GET: bytes"
v=$(bc_hdr big-again x-bucketcache)
bc_assert_eq hit "$v" "the second unsigned read is a cache hit"
v=$(bc_fixture_stats requests)
bc_assert_eq "$fx1" "$v" "the second unsigned read made no upstream request"

# ---- 1b. boto3 with UNSIGNED ---------------------------------------------------
bc_py "$GW" "$FX" "$BC_TMP" <<'EOF'
import os, sys
from botocore import UNSIGNED
from botocore.exceptions import ClientError
from itlib import ok, done, client, fx_stats, xbc
gw, fx, tmp = sys.argv[1:4]
rgw = os.environ["BC_UPSTREAM"] == "rgw"
small = open(tmp + "/small.txt", "rb").read()
big = open(tmp + "/big.bin", "rb").read()
s3 = client(gw, signature_version=UNSIGNED)
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="pubds")["Contents"]]
ok(keys == ["data/big.bin", "small.txt"], "boto3 UNSIGNED list_objects_v2", keys)
keys = [o["Key"] for o in s3.list_objects(Bucket="pubds", Prefix="data/")["Contents"]]
ok(keys == ["data/big.bin"], "boto3 UNSIGNED list_objects with a prefix", keys)
calls = [
    ("get", lambda: s3.get_object(Bucket="pubds", Key="small.txt"), small),
    ("ranged get", lambda: s3.get_object(Bucket="pubds", Key="data/big.bin",
                                         Range="bytes=1048570-1048600"),
     big[1048570:1048601]),
    ("head", lambda: s3.head_object(Bucket="pubds", Key="small.txt"), None),
]
for name, call, want in calls:
    first = call()
    n0 = fx_stats(fx)["requests"]
    again = call()
    n1 = fx_stats(fx)["requests"]
    if want is not None:
        ok(first["Body"].read() == want, "boto3 UNSIGNED %s: bytes" % name)
        ok(again["Body"].read() == want, "boto3 UNSIGNED %s again: bytes" % name)
    else:
        ok(first["ContentLength"] == len(small), "boto3 UNSIGNED head: length",
           first["ContentLength"])
        ok(again["ETag"] == first["ETag"], "boto3 UNSIGNED head again: ETag")
    ok(xbc(again) == "hit", "boto3 UNSIGNED %s again: x-bucketcache hit" % name,
       xbc(again))
    ok(n1 == n0, "boto3 UNSIGNED %s again: no upstream request" % name, (n0, n1))
# 2. the upstream's errors, as it gave them
for name, call, status, code in [
    ("GET of a private object",
     lambda: s3.get_object(Bucket="privds", Key="secret.bin"), 403, "AccessDenied"),
    ("list of a private bucket",
     lambda: s3.list_objects_v2(Bucket="privds"), 403, "AccessDenied"),
    ("GET of a missing key of the public bucket",
     lambda: s3.get_object(Bucket="pubds", Key="nope.txt"), 404, "NoSuchKey"),
    ("GET in a missing public bucket",
     lambda: s3.get_object(Bucket="gone-bucket", Key="x"), 404, "NoSuchBucket"),
    ("list of a missing public bucket",
     lambda: s3.list_objects_v2(Bucket="gone-bucket"), 404, "NoSuchBucket"),
] + ([] if rgw else [
    ("ListBuckets", lambda: s3.list_buckets(), 403, "AccessDenied"),
]):
    try:
        call()
        ok(False, "boto3 UNSIGNED %s fails" % name)
    except ClientError as e:
        got = (e.response["ResponseMetadata"]["HTTPStatusCode"],
               e.response["Error"]["Code"])
        ok(got == (status, code), "boto3 UNSIGNED %s: %d %s" % (name, status, code), got)
if rgw:   # RGW lists no bucket to an anonymous client (S3 refuses)
    got = s3.list_buckets().get("Buckets")
    ok(got == [], "boto3 UNSIGNED ListBuckets: RGW's empty list", got)
try:
    s3.head_object(Bucket="privds", Key="secret.bin")
    ok(False, "boto3 UNSIGNED HEAD of a private object fails")
except ClientError as e:
    ok(e.response["ResponseMetadata"]["HTTPStatusCode"] == 403,
       "boto3 UNSIGNED HEAD of a private object: 403", e.response)
done()
EOF

# ---- 3. a signed client's cached copy is not an unsigned client's ----------------
bc_expect sec-signed 200 - "signed GET of the private object" "${SIG[@]}" "$GW/privds/secret.bin"
bc_assert_same_file "$SECRET" "$BC_TMP/sec-signed.body" "signed GET: bytes"
bc_expect sec-signed2 200 - "signed GET again" "${SIG[@]}" "$GW/privds/secret.bin"
v=$(bc_hdr sec-signed2 x-bucketcache)
bc_assert_eq hit "$v" "the private object is cached"
for round in 1 2; do
	bc_fixture_reset
	bc_expect "sec-unsigned$round" 403 AccessDenied "unsigned GET of the cached private object (round $round)" \
		"$GW/privds/secret.bin"
	v=$(bc_hdr "sec-unsigned$round" x-bucketcache)
	bc_assert_eq "" "$v" "the refusal is not a cached answer (round $round)"
	v=$(bc_fixture_stats last)
	bc_assert_match '"GET /privds/secret\.bin \[Range: bytes=0-0\] \[If-Match: [^]]+\] -> 403"' "$v" \
		"the upstream saw the unsigned attempt (round $round)"
	v=$(bc_fixture_stats rejected_by_code.AccessDenied)
	bc_assert_eq 1 "$v" "the upstream refused it, once (round $round)"
done
bc_expect sec-head 403 - "unsigned HEAD of the cached private object" -I "$GW/privds/secret.bin"
bc_expect sec-range 403 AccessDenied "unsigned ranged GET of the cached private object" \
	-H "Range: bytes=10-20" "$GW/privds/secret.bin"
bc_expect sec-signed3 200 - "the signed client is still served" "${SIG[@]}" "$GW/privds/secret.bin"
v=$(bc_hdr sec-signed3 x-bucketcache)
bc_assert_eq hit "$v" "the signed client's read is still a hit"

# ---- 4. unsigned writes, ListBuckets: the upstream's answer --------------------
bc_expect small-cached 200 - "unsigned GET of pubds/small.txt" "$GW/pubds/small.txt"
bc_fixture_reset
bc_expect uput 403 AccessDenied "unsigned PUT to the public bucket" -X PUT -T "$SMALL" \
	"$GW/pubds/new.txt"
bc_expect udel 403 AccessDenied "unsigned DELETE in the public bucket" -X DELETE \
	"$GW/pubds/small.txt"
if [ "$LB_STATUS" = 403 ]; then
	bc_expect ulb 403 AccessDenied "unsigned ListBuckets" "$GW/"
else
	bc_expect ulb "$LB_STATUS" - "unsigned ListBuckets (the upstream's answer)" "$GW/"
	v=$(cat "$BC_TMP/ulb.body")
	bc_assert_match '<Buckets></Buckets>|<Buckets/>' "$v" "unsigned ListBuckets: no bucket listed"
fi
v=$(bc_fixture_stats rejected_by_code.AccessDenied)
bc_assert_eq $((LB_STATUS == 403 ? 3 : 2)) "$v" "the upstream refused all it should (PUT, DELETE, ListBuckets on S3)"
v=$(bc_fixture_stats last)
bc_assert_match '"PUT /pubds/new\.txt -> 403"' "$v" "the unsigned PUT reached the upstream"
bc_expect small-still 200 - "unsigned GET after the refused DELETE" "$GW/pubds/small.txt"
v=$(bc_hdr small-still x-bucketcache)
bc_assert_eq hit "$v" "a refused unsigned DELETE did not drop the cached copy"
bc_expect new-absent 404 NoSuchKey "the unsigned PUT stored nothing" "${SIG[@]}" "$FX/pubds/new.txt"
v=$(bc_stats_delta "$BC_TMP/s0.json" auth_failures)
bc_assert_eq 0 "$v" "stats: the gateway refused no unsigned request itself"
bc_stop_gateway

# ---- 5. --anonymous: unsigned clients use the gateway's credentials -------------
bc_start_gateway --upstream "$FX" --anonymous --log-level debug
bc_fixture_reset
bc_expect anon-secret 200 - "--anonymous: unsigned GET of the private object" "$BC_GW_URL/privds/secret.bin"
bc_assert_same_file "$SECRET" "$BC_TMP/anon-secret.body" "--anonymous: bytes"
v=$(bc_fixture_stats by_auth.anonymous)
bc_assert_eq 0 "$v" "--anonymous: nothing went upstream unsigned"
bc_assert_fixture_clean "--anonymous: re-signed upstream"
bc_stop_gateway
bc_done 75
