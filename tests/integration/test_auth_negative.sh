#!/bin/bash
# test_auth_negative.sh — requests the gateway must refuse, each with the
# S3 XML error a real S3 sends, counted in auth_failures, and never
# forwarded upstream (the fixture must not see them): wrong secret, unknown
# key, skewed clock, malformed Authorization, expired/tampered presigned
# URLs (not unsigned requests: without --anonymous they go upstream
# unsigned and the upstream refuses them; with it they use the gateway's
# key), a client key
# restricted to a bucket or prefix, keys with "." or ".." segments (400
# InvalidArgument, by decision), and unsatisfiable Ranges (file backend,
# since s3rver answers ranges wrongly).
# By decision, a client may sign with any region in its credential scope
# (S3 itself is stricter): such requests pass, and the gateway still signs
# upstream with its own region, which the fixture checks.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug
GW=$BC_GW_URL

S3REQ=("$BC_PY" "$BC_IT_DIR/fixture/s3req.py")
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
OBJ=$BC_TMP/obj.txt
bc_mkfile "$OBJ" 1000

# s3r NAME ARGS...: s3req.py with its answer stored like bc_req NAME.
s3r() {
	local name=$1 st
	shift
	st=$("${S3REQ[@]}" --out "$BC_TMP/$name.body" --hdr "$BC_TMP/$name.hdr" "$@")
	echo "$st" >"$BC_TMP/$name.status"
	echo "$st"
}

# s3r_expect NAME STATUS CODE MSG ARGS...
s3r_expect() {
	local name=$1 status=$2 code=$3 msg=$4 st
	shift 4
	st=$(s3r "$name" "$@")
	if [ "$st" != "$status" ]; then
		cat "$BC_TMP/$name.body" >&2 2>/dev/null || true
		bc_fail "$msg: expected HTTP $status, got $st"
	fi
	bc_pass "$msg: HTTP $st"
	[ "$code" = - ] || bc_assert_s3_error "$name" "$status" "$code" "$msg"
}

# ---- setup through the gateway ------------------------------------------
for b in neg-a neg-a2 neg-b; do
	bc_expect "mk-$b" 200 - "create bucket $b" "${SIG[@]}" "${UNS[@]}" -X PUT "$GW/$b"
	bc_expect "put-$b" 200 - "put $b/obj.txt" "${SIG[@]}" "${UNS[@]}" -X PUT \
		--data-binary "@$OBJ" "$GW/$b/obj.txt"
done
bc_expect put-allowed 200 - "put neg-b/allowed/x.txt" "${SIG[@]}" "${UNS[@]}" -X PUT \
	--data-binary "@$OBJ" "$GW/neg-b/allowed/x.txt"
bc_expect put-allowed2 200 - "put neg-b/allowed-not/x.txt" "${SIG[@]}" "${UNS[@]}" -X PUT \
	--data-binary "@$OBJ" "$GW/neg-b/allowed-not/x.txt"
bc_expect good 200 - "a good signed GET" "${SIG[@]}" "${UNS[@]}" "$GW/neg-a/obj.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/good.body" "good GET bytes"
bc_assert_fixture_clean "setup"

# ---- refused by the gateway itself ---------------------------------------
bc_stats_save "$BC_TMP/s0.json"
fx0=$(bc_fixture_stats requests)
nneg=0
neg() { nneg=$((nneg + 1)); bc_expect "$@"; }

neg wrongsecret 403 SignatureDoesNotMatch "wrong secret" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong "${UNS[@]}" "$GW/neg-a/obj.txt"
neg wrongsecret-put 403 SignatureDoesNotMatch "wrong secret on a PUT" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong "${UNS[@]}" -X PUT \
	--data-binary "@$OBJ" "$GW/neg-a/evil.txt"
neg unknownkey 403 InvalidAccessKeyId "unknown access key" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user NOBODY:whatever "${UNS[@]}" "$GW/neg-a/obj.txt"
neg wrongsecret-region 403 SignatureDoesNotMatch "wrong secret, signed for another region" \
	--aws-sigv4 "aws:amz:eu-west-1:s3" --user S3RVER:wrong "${UNS[@]}" "$GW/neg-a/obj.txt"

for a in "AWS4-HMAC-SHA256" \
	"AWS4-HMAC-SHA256 garbage" \
	"AWS4-HMAC-SHA256 Credential=S3RVER/20200101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=zz" \
	"AWS4-HMAC-SHA256 Credential=S3RVER, SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000" \
	"AWS4-HMAC-SHA256 Credential=S3RVER/20200101/us-east-1/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000" \
	"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=00" \
	"Bearer abcdef" \
	"AWS S3RVER" \
	"AWS4-HMAC-SHA256 Credential=$(head -c 3000 /dev/zero | tr '\0' 'A')/x/y/s3/aws4_request, SignedHeaders=host, Signature=00"; do
	bc_expect malformed 4[0-9][0-9] '[A-Za-z]+' "malformed Authorization [${a:0:60}]" \
		-H "Authorization: $a" -H "x-amz-date: $(date -u +%Y%m%dT%H%M%SZ)" "${UNS[@]}" \
		"$GW/neg-a/obj.txt"
	v=$(cat "$BC_TMP/malformed.status")
	bc_assert_match '^4' "$v" "malformed Authorization is a 4xx"
done
neg v2bad 403 SignatureDoesNotMatch "SigV2 header with a wrong signature" \
	-H "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')" \
	-H "Authorization: AWS S3RVER:c3lnbmF0dXJlLWlzLXdyb25n" "$GW/neg-a/obj.txt"

nneg=$((nneg + 2))
s3r_expect skew-fwd 403 RequestTimeTooSkewed "clock 20 min ahead" --date-offset 1200 "$GW/neg-a/obj.txt"
s3r_expect skew-back 403 RequestTimeTooSkewed "clock 20 min behind" --date-offset -1200 "$GW/neg-a/obj.txt"

# presigned URLs
nneg=$((nneg + 4))
url=$("${S3REQ[@]}" --presign 60 --date-offset -3600 --print-url "$GW/neg-a/obj.txt")
bc_expect expired 403 AccessDenied "presigned URL that expired" "$url"
url=$("${S3REQ[@]}" --presign 60 --print-url "$GW/neg-a/obj.txt")
bc_expect tampered 403 SignatureDoesNotMatch "presigned URL with another key's path" \
	"${url/obj.txt/evil.txt}"
bc_expect tampered2 403 SignatureDoesNotMatch "presigned URL with a changed expiry" \
	"${url/X-Amz-Expires=60/X-Amz-Expires=600}"
url=$("${S3REQ[@]}" --presign 700000 --print-url "$GW/neg-a/obj.txt")
bc_expect toolong 400 AuthorizationQueryParametersError "presigned URL valid for more than 7 days" "$url"

# what must never have happened
v=$(bc_fixture_stats requests)
bc_assert_eq "$fx0" "$v" "none of the refused requests reached the upstream"
v=$(bc_stats_delta "$BC_TMP/s0.json" auth_failures)
bc_assert_ge "$v" "$nneg" "stats: auth_failures counted every refused signature/key/clock/presign ($nneg)"
bc_expect evil-absent 404 NoSuchKey "the refused PUTs stored nothing" "${SIG[@]}" "${UNS[@]}" \
	"$GW/neg-a/evil.txt"

# ---- unsigned without --anonymous: the upstream decides ----------------------
# (sent on unsigned; the fixture refuses unsigned requests as S3 refuses an
# anonymous client a private bucket; test_public_bucket.sh has the rest)
fx0=$(bc_fixture_stats requests)
bc_expect unsigned 403 AccessDenied "unsigned GET without --anonymous: the upstream's answer" \
	"$GW/neg-a/obj.txt"
bc_expect unsigned-put 403 AccessDenied "unsigned PUT without --anonymous: the upstream's answer" \
	-X PUT --data-binary "@$OBJ" "$GW/neg-a/evil.txt"
v=$(bc_fixture_stats requests)
bc_assert_eq $((fx0 + 2)) "$v" "both unsigned requests went upstream"
bc_expect evil-absent2 404 NoSuchKey "the unsigned PUT stored nothing" "${SIG[@]}" "${UNS[@]}" \
	"$GW/neg-a/evil.txt"
bc_fixture_reset   # the two refusals above were the upstream's, as meant

# ---- near misses that must pass -------------------------------------------
s3r_expect skew-ok 200 - "clock 10 min ahead is within 15 min" --date-offset 600 "$GW/neg-a/obj.txt"
url=$("${S3REQ[@]}" --presign 3600 --date-offset -1800 --print-url "$GW/neg-a/obj.txt")
bc_expect presign-ok 200 - "presigned URL signed 30 min ago, valid 1 h" "$url"
bc_assert_same_file "$OBJ" "$BC_TMP/presign-ok.body" "presigned GET bytes"
# the same URL again: accepted from the verdict cache; a changed path,
# signature, query or Host beside it is still verified (and refused)
bc_stats_save "$BC_TMP/s0v.json"
bc_expect presign-again 200 - "the same presigned URL again" "$url"
bc_assert_same_file "$OBJ" "$BC_TMP/presign-again.body" "presigned GET bytes, again"
bc_expect presign-again2 200 - "the same presigned URL a third time" "$url"
v=$(bc_stats_delta "$BC_TMP/s0v.json" auth_cached)
bc_assert_eq 2 "$v" "stats: auth_cached counted the two repeats"
sig=${url##*X-Amz-Signature=}
bc_expect cached-path 403 SignatureDoesNotMatch "a verified presigned URL with another key's path" \
	"${url/obj.txt/evil.txt}"
bc_expect cached-sig 403 SignatureDoesNotMatch "a verified presigned URL with another signature" \
	"${url%"$sig"}$(printf %s "$sig" | tr 0-9a-f 1-9a-f0)"
bc_expect cached-query 403 SignatureDoesNotMatch "a verified presigned URL with a parameter added" \
	"$url&x-id=GetObject"
bc_expect cached-host 403 SignatureDoesNotMatch "a verified presigned URL with another Host" \
	-H "Host: other.example" "$url"

# ---- any region in the client's credential scope (decision) ----------------
bc_stats_save "$BC_TMP/s0r.json"
fx0=$(bc_fixture_stats requests)
EU=(--aws-sigv4 "aws:amz:eu-west-1:s3" --user S3RVER:S3RVER "${UNS[@]}")
bc_expect region-put 200 - "PUT signed for another region (eu-west-1)" "${EU[@]}" -X PUT \
	--data-binary "@$OBJ" "$GW/neg-a/region.txt"
bc_expect region-get 200 - "GET signed for another region" "${EU[@]}" "$GW/neg-a/region.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/region-get.body" "bytes of the other-region round trip"
bc_expect region-get2 200 - "GET of an uncached object signed for ap-southeast-2" \
	--aws-sigv4 "aws:amz:ap-southeast-2:s3" --user S3RVER:S3RVER "${UNS[@]}" "$GW/neg-a2/obj.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/region-get2.body" "bytes (ap-southeast-2)"
url=$("${S3REQ[@]}" --presign 300 --region eu-central-1 --print-url "$GW/neg-b/obj.txt")
bc_expect region-presign 200 - "presigned URL for another region (eu-central-1)" "$url"
bc_assert_same_file "$OBJ" "$BC_TMP/region-presign.body" "presigned other-region GET bytes"
s3r_expect region-s3req 200 - "hand-signed GET for another region (us-west-2)" --region us-west-2 \
	"$GW/neg-b/allowed/x.txt"
v=$(bc_stats_delta "$BC_TMP/s0r.json" auth_failures)
bc_assert_eq 0 "$v" "stats: other regions are no auth failures"
v=$(bc_fixture_stats requests)
bc_assert_ge "$v" $((fx0 + 3)) "the other-region requests went upstream (PUT and the cold GETs)"
bc_assert_fixture_clean "the gateway signs upstream with its own region, whatever the client's"

# ---- "." and ".." key segments: 400 InvalidArgument (decision) ---------------
fx0=$(bc_fixture_stats requests)
bc_expect dots1 400 InvalidArgument "GET a/../obj.txt" "${SIG[@]}" "${UNS[@]}" --path-as-is \
	"$GW/neg-a/a/../obj.txt"
bc_expect dots2 400 InvalidArgument "GET ./obj.txt" "${SIG[@]}" "${UNS[@]}" --path-as-is \
	"$GW/neg-a/./obj.txt"
bc_expect dots3 400 InvalidArgument "GET %2e%2e/obj.txt (encoded)" "${SIG[@]}" "${UNS[@]}" --path-as-is \
	"$GW/neg-a/x/%2e%2e/obj.txt"
bc_expect dots4 400 InvalidArgument "PUT a/./b" "${SIG[@]}" "${UNS[@]}" --path-as-is -X PUT \
	--data-binary "@$OBJ" "$GW/neg-a/a/./b"
bc_expect dots5 400 InvalidArgument "GET a key that ends in /.." "${SIG[@]}" "${UNS[@]}" --path-as-is \
	"$GW/neg-a/a/.."
v=$(bc_fixture_stats requests)
bc_assert_eq "$fx0" "$v" "keys with dot segments never reached the upstream"
bc_expect dots-ok 404 NoSuchKey "dots inside a segment are fine (a..b/.c)" "${SIG[@]}" "${UNS[@]}" \
	"$GW/neg-a/a..b/.c"
bc_stop_gateway

# ---- --anonymous ----------------------------------------------------------
bc_start_gateway --upstream "$BC_FIXTURE_URL" --anonymous --log-level debug
bc_stats_save "$BC_TMP/s1.json"
bc_expect anon-get 200 - "unsigned GET with --anonymous" "$BC_GW_URL/neg-a/obj.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/anon-get.body" "anonymous GET bytes"
bc_expect anon-head 200 - "unsigned HEAD with --anonymous" -I "$BC_GW_URL/neg-a/obj.txt"
bc_expect anon-wrong 403 SignatureDoesNotMatch "--anonymous still refuses a wrong signature" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong "${UNS[@]}" "$BC_GW_URL/neg-a/obj.txt"
v=$(bc_stats_delta "$BC_TMP/s1.json" auth_failures)
bc_assert_eq 1 "$v" "stats: one auth failure under --anonymous"
bc_assert_fixture_clean "anonymous clients are re-signed upstream"
bc_stop_gateway

# ---- client keys restricted to a bucket / a prefix ------------------------
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug \
	--client-key RO:rosecret:neg-a --client-key PFX:pfxsecret:neg-b/allowed/
RO=(--aws-sigv4 "aws:amz:us-east-1:s3" --user RO:rosecret "${UNS[@]}")
PFX=(--aws-sigv4 "aws:amz:us-east-1:s3" --user PFX:pfxsecret "${UNS[@]}")
bc_stats_save "$BC_TMP/s2.json"
fx0=$(bc_fixture_stats requests)
bc_expect ro-ok 200 - "RO key reads its bucket" "${RO[@]}" "$BC_GW_URL/neg-a/obj.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/ro-ok.body" "RO key GET bytes"
bc_expect ro-list 200 - "RO key lists its bucket" "${RO[@]}" "$BC_GW_URL/neg-a?list-type=2"
bc_expect pfx-ok 200 - "PFX key reads under its prefix" "${PFX[@]}" "$BC_GW_URL/neg-b/allowed/x.txt"
fx1=$(bc_fixture_stats requests)
bc_expect ro-other 403 AccessDenied "RO key on another bucket" "${RO[@]}" "$BC_GW_URL/neg-b/obj.txt"
bc_expect ro-similar 403 AccessDenied "RO key on a bucket whose name extends its own" \
	"${RO[@]}" "$BC_GW_URL/neg-a2/obj.txt"
bc_expect ro-other-head 403 - "RO key HEAD on another bucket" "${RO[@]}" -I "$BC_GW_URL/neg-b/obj.txt"
bc_expect ro-other-list 403 AccessDenied "RO key lists another bucket" "${RO[@]}" "$BC_GW_URL/neg-b?list-type=2"
bc_expect ro-other-put 403 AccessDenied "RO key writes another bucket" "${RO[@]}" -X PUT \
	--data-binary "@$OBJ" "$BC_GW_URL/neg-b/evil.txt"
bc_expect ro-other-del 403 AccessDenied "RO key deletes in another bucket" "${RO[@]}" -X DELETE \
	"$BC_GW_URL/neg-b/obj.txt"
bc_expect pfx-out 403 AccessDenied "PFX key outside its prefix" "${PFX[@]}" "$BC_GW_URL/neg-b/obj.txt"
bc_expect pfx-near 403 AccessDenied "PFX key on a sibling of its prefix" "${PFX[@]}" \
	"$BC_GW_URL/neg-b/allowed-not/x.txt"
bc_expect pfx-dots 400 InvalidArgument "PFX key escaping its prefix with .." "${PFX[@]}" \
	--path-as-is "$BC_GW_URL/neg-b/allowed/../obj.txt"
bc_expect pfx-dots2 400 InvalidArgument "PFX key escaping its prefix with %2e%2e" "${PFX[@]}" \
	--path-as-is "$BC_GW_URL/neg-b/allowed/%2e%2e/obj.txt"
bc_expect pfx-bucket 403 AccessDenied "PFX key on another bucket" "${PFX[@]}" "$BC_GW_URL/neg-a/obj.txt"
bc_expect upstream-pair 403 InvalidAccessKeyId "the upstream key is not a client key when --client-key is set" \
	"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/neg-a/obj.txt"
v=$(bc_fixture_stats requests)
bc_assert_eq "$fx1" "$v" "refused restricted requests never reached the upstream"
bc_assert_ge "$v" $((fx0 + 1)) "allowed restricted requests did reach it"
bc_stop_gateway
bc_expect b-intact 200 - "the object RO tried to delete is still there" "${SIG[@]}" "${UNS[@]}" \
	"$BC_FIXTURE_URL/neg-b/obj.txt"
bc_expect b-noevil 404 NoSuchKey "RO's PUT stored nothing" "${SIG[@]}" "${UNS[@]}" \
	"$BC_FIXTURE_URL/neg-b/evil.txt"

# ---- unsatisfiable ranges (file backend) ----------------------------------
mkdir -p "$BC_TMP/data/rng"
cp "$OBJ" "$BC_TMP/data/rng/obj.txt"
bc_start_gateway --upstream "file://$BC_TMP/data" --anonymous --log-level debug
bc_expect r416a 416 InvalidRange "Range starting past the end" -H "Range: bytes=5000-6000" \
	"$BC_GW_URL/rng/obj.txt"
v=$(bc_hdr r416a Content-Range)
bc_assert_eq "bytes */1000" "$v" "416 Content-Range bytes */size"
bc_expect r416b 416 InvalidRange "Range starting at the size" -H "Range: bytes=1000-" \
	"$BC_GW_URL/rng/obj.txt"
v=$(bc_hdr r416b Content-Range)
bc_assert_eq "bytes */1000" "$v" "416 Content-Range (start = size)"
bc_expect rsuffix0 416 InvalidRange "suffix Range of 0 bytes" -H "Range: bytes=-0" \
	"$BC_GW_URL/rng/obj.txt"
bc_expect rbad 200 - "syntactically invalid Range is ignored" -H "Range: bytes=abc" \
	"$BC_GW_URL/rng/obj.txt"
bc_assert_same_file "$OBJ" "$BC_TMP/rbad.body" "invalid Range: whole object"
bc_expect rok 206 - "Range inside the object still works" -H "Range: bytes=990-2000" \
	"$BC_GW_URL/rng/obj.txt"
v=$(bc_hdr rok Content-Range)
bc_assert_eq "bytes 990-999/1000" "$v" "clipped Content-Range"
bc_stop_gateway
bc_done 169
