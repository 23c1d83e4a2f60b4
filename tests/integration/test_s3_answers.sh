#!/bin/bash
# test_s3_answers.sh — answers S3 gives that the gateway got wrong (issue 9,
# "Answer as S3 answers"), through the proxy (cache on and off, in front of
# the verifying fixture or s3rver itself) and the file:// backend:
#   1. x-amz-meta-* with an empty value (boto3 Metadata={"empty": ""})
#      comes back, empty, from GET and HEAD: cold, cached, uncached, file;
#   2. a Range past the end of a cached object (bytes=SIZE-) is 416 with
#      S3's XML body (<Code>InvalidRange</Code>), Content-Range: bytes
#      */SIZE and a Content-Length that is the body's; the file backend
#      answers the same; without the cache the upstream's 416 is passed on;
#   3. a PUT with Transfer-Encoding: chunked and no Content-Length
#      (curl -T -) is streamed to the upstream, which decides: the fixture
#      answers 411 MissingContentLength as S3 does (and saw the PUT);
#      s3rver, and the file backend, store it (bytes read back).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL
S3=$BC_S3RVER_URL
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
B=answers
OBJ=$BC_TMP/obj.bin
SIZE=300001
bc_mkfile "$OBJ" "$SIZE"
bc_expect mk 200 - "create bucket $B" "${SIG[@]}" -X PUT "$FX/$B"
bc_expect put 200 - "put $B/obj.bin" "${SIG[@]}" -X PUT -T "$OBJ" "$FX/$B/obj.bin"

# meta_check URL TAG: boto3 puts an object with an empty x-amz-meta-* through
# URL and reads it back (twice: the second read is a cache hit when the
# gateway caches), with GET and HEAD.
meta_check() {
	bc_py "$1" "$2" "$B" <<'EOF'
import sys
from itlib import ok, done, client, xbc
url, tag, b = sys.argv[1:4]
s3 = client(url)
want = {"empty": "", "full": "x"}
s3.put_object(Bucket=b, Key="meta-" + tag, Body=b"hello", Metadata=want)
for rnd in (1, 2):
    h = s3.head_object(Bucket=b, Key="meta-" + tag)
    ok(h["Metadata"] == want, "%s: HEAD %d keeps the empty x-amz-meta-empty"
       % (tag, rnd), h["Metadata"])
    g = s3.get_object(Bucket=b, Key="meta-" + tag)
    ok(g["Metadata"] == want and g["Body"].read() == b"hello",
       "%s: GET %d keeps the empty x-amz-meta-empty" % (tag, rnd), g["Metadata"])
    if tag == "cache" and rnd == 2:
        ok(xbc(g) == "hit", "%s: the second GET is a cache hit" % tag, xbc(g))
done()
EOF
}

# range416 NAME URL MSG: a Range past the end is S3's 416.
range416() {
	local n
	bc_expect "$1" 416 InvalidRange "$3" "${SIG[@]}" -H "Range: bytes=$SIZE-" "$2"
	v=$(bc_hdr "$1" Content-Range)
	bc_assert_eq "bytes */$SIZE" "$v" "$3: Content-Range bytes */size"
	n=$(wc -c <"$BC_TMP/$1.body")
	v=$(bc_hdr "$1" Content-Length)
	bc_assert_eq "$n" "$v" "$3: Content-Length is the body's ($n bytes)"
	bc_assert_ge "$n" 1 "$3: the 416 has a body"
}

# ---- through the cache, in front of the fixture --------------------------------
bc_start_gateway --upstream "$FX" --cache --chunk-size 64K --log-level debug
GW=$BC_GW_URL
meta_check "$GW" cache
range416 r416-cold "$GW/$B/obj.bin" "cache, cold object: Range bytes=SIZE-"
bc_expect warm 200 - "GET the whole object (now cached)" "${SIG[@]}" "$GW/$B/obj.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/warm.body" "cached object: bytes"
fx0=$(bc_fixture_stats requests)
range416 r416-cached "$GW/$B/obj.bin" "cache, cached object: Range bytes=SIZE-"
v=$(bc_fixture_stats requests)
bc_assert_eq "$fx0" "$v" "the 416 of a cached object came from the cached metadata"
bc_expect r416-far 416 InvalidRange "cache, cached object: Range far past the end" "${SIG[@]}" \
	-H "Range: bytes=999999999-" "$GW/$B/obj.bin"

# chunked PUT: the fixture, like S3, wants a length
bc_fixture_reset
v=$(curl -sS --max-time 20 -o "$BC_TMP/te-fx.body" -D "$BC_TMP/te-fx.hdr" -w '%{http_code}' \
	"${SIG[@]}" -H "Transfer-Encoding: chunked" -T - "$GW/$B/chunked.bin" <"$OBJ")
bc_assert_eq 411 "$v" "chunked PUT through the gateway: the upstream's 411 (as S3)"
v=$(bc_s3_code "$BC_TMP/te-fx.body")
bc_assert_eq MissingContentLength "$v" "chunked PUT: the upstream's MissingContentLength"
v=$(bc_fixture_stats last)
bc_assert_match '"PUT /answers/chunked\.bin -> 411"' "$v" "the chunked PUT reached the upstream"
bc_stop_gateway

# ---- no cache: the proxy alone ----------------------------------------------------
bc_start_gateway --upstream "$FX" --no-cache --log-level debug
meta_check "$BC_GW_URL" proxy
bc_expect r416-proxy 416 InvalidRange "no cache: the upstream's 416 passed on" "${SIG[@]}" \
	-H "Range: bytes=$SIZE-" "$BC_GW_URL/$B/obj.bin"
bc_stop_gateway

# ---- straight at s3rver, which takes chunked bodies --------------------------------
bc_start_gateway --upstream "$S3" --cache --chunk-size 64K --log-level debug
v=$(curl -sS --max-time 20 -o "$BC_TMP/te-s3.body" -w '%{http_code}' \
	"${SIG[@]}" -H "Transfer-Encoding: chunked" -T - "$BC_GW_URL/$B/chunked.bin" <"$OBJ")
bc_assert_eq 200 "$v" "chunked PUT streamed to s3rver: 200"
bc_expect te-s3-get 200 - "GET the chunked upload" "${SIG[@]}" "$BC_GW_URL/$B/chunked.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/te-s3-get.body" "the chunked upload: bytes"
bc_stop_gateway

# ---- the file:// backend -------------------------------------------------------------
DATA=$BC_TMP/data
mkdir -p "$DATA/$B"
cp "$OBJ" "$DATA/$B/obj.bin"
bc_start_gateway --upstream "file://$DATA" --log-level debug
meta_check "$BC_GW_URL" file
range416 r416-file "$BC_GW_URL/$B/obj.bin" "file backend: Range bytes=SIZE-"
v=$(curl -sS --max-time 20 -o "$BC_TMP/te-file.body" -w '%{http_code}' \
	"${SIG[@]}" -H "Transfer-Encoding: chunked" -T - "$BC_GW_URL/$B/chunked.bin" <"$OBJ")
bc_assert_eq 200 "$v" "file backend: chunked PUT 200"
bc_assert_same_file "$OBJ" "$DATA/$B/chunked.bin" "file backend: the chunked upload's bytes"
bc_expect te-file-get 200 - "file backend: GET the chunked upload" "${SIG[@]}" \
	"$BC_GW_URL/$B/chunked.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/te-file-get.body" "file backend: GET bytes"
bc_expect nolen 411 MissingContentLength "file backend: PUT with neither length nor chunked" \
	"${SIG[@]}" -X PUT "$BC_GW_URL/$B/nolen.bin"
bc_stop_gateway
bc_done 57
