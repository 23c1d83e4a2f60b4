#!/bin/bash
# test_awschunked_length.sh — signed aws-chunked (STREAMING-AWS4-HMAC-SHA256-
# PAYLOAD) uploads whose signed x-amz-decoded-content-length is wrong (one
# byte more, one byte less, far less than the payload) must be refused by
# the gateway itself with 400 IncompleteBody, and nothing may be stored:
# the upstream must never receive a complete body. A missing declaration
# is 411 MissingContentLength, a malformed one 400 InvalidArgument; a
# correct one is stored. Three upstreams:
#   1. the verifying fixture in front of s3rver: it must reject nothing
#      (the gateway refused first) and s3rver must hold no object;
#   2. s3rver straight, which checks no length: a complete body the
#      gateway forwarded, it would store; it also keeps the part of an
#      aborted upload it got (S3 does not), so there the check is that no
#      complete upload arrived;
#   3. the file:// backend: no object (and no temp file) is left behind.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture

S3REQ=("$BC_PY" "$BC_IT_DIR/fixture/s3req.py")
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
OBJ=$BC_TMP/obj.bin
LEN=200000
bc_mkfile "$OBJ" $LEN

# s3r NAME ARGS...: s3req.py, answer stored like bc_req NAME.
s3r() {
	local name=$1 st
	shift
	st=$("${S3REQ[@]}" --out "$BC_TMP/$name.body" --hdr "$BC_TMP/$name.hdr" "$@")
	echo "$st" >"$BC_TMP/$name.status"
	echo "$st"
}

# wrong_lengths TAG URL [s3req args]: the 6 refused uploads; per case the
# status, the S3 error code, then HEAD_FN NAME KEY, which checks that
# nothing was stored at KEY.
wrong_lengths() {
	local tag=$1 url=$2 st i dl code want name
	shift 2
	local -a cases=("$((LEN + 1)):400:IncompleteBody:more"
		"$((LEN - 1)):400:IncompleteBody:less"
		"10:400:IncompleteBody:far-less"
		"none:411:MissingContentLength:missing"
		"12x:400:InvalidArgument:malformed"
		"-1:400:InvalidArgument:negative")
	for i in "${cases[@]}"; do
		IFS=: read -r dl want code name <<<"$i"
		st=$(s3r "$tag-$name" -X PUT --payload streaming --chunk-size 65536 \
			--decoded-length "$dl" --data-file "$OBJ" "$@" "$url/$name.bin")
		bc_assert_eq "$want" "$st" "$tag: x-amz-decoded-content-length $dl ($name): $want"
		bc_assert_s3_error "$tag-$name" "$want" "$code" "$tag: $name"
		"$HEAD_FN" "$tag-$name-head" "$name.bin"
	done
}

# ---- 1. gateway -> verifying fixture -> s3rver ------------------------------
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug
GW1=$BC_GW_URL
bc_expect mb 200 - "create the bucket" "${SIG[@]}" "${UNS[@]}" -X PUT "$GW1/acl"
bc_fixture_reset
# The gateway must refuse these itself: had it forwarded a complete body,
# the fixture would have refused it (rejected_by_code.IncompleteBody).
head_fx() {
	local v
	v=$(bc_fixture_stats rejected)
	bc_assert_eq 0 "$v" "fixture: the upload of $2 never reached it whole"
	bc_expect "$1" 404 - "fixture: nothing stored at $2 (HEAD through the gateway)" \
		"${SIG[@]}" "${UNS[@]}" -I "$GW1/acl/$2"
}
HEAD_FN=head_fx wrong_lengths fx "$GW1/acl"
for n in more less far-less; do
	bc_expect "fx-raw-$n" 404 - "s3rver holds no $n.bin" "$BC_S3RVER_URL/acl/$n.bin"
done
st=$(s3r fx-good -X PUT --payload streaming --chunk-size 65536 --data-file "$OBJ" "$GW1/acl/good.bin")
bc_assert_eq 200 "$st" "fixture: the right x-amz-decoded-content-length is stored"
bc_expect fx-good-get 200 - "GET the good upload" "${SIG[@]}" "${UNS[@]}" "$GW1/acl/good.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/fx-good-get.body" "the good upload holds the payload"
bc_assert_fixture_clean "wrong and right decoded lengths through the gateway"
bc_stop_gateway

# ---- 2. gateway -> s3rver (no length check upstream) -------------------------
# the aws-chunked body's length (the client's and the upstream's
# Content-Length): what s3rver stores of a complete upload
ENC=$("$BC_PY" -c '
import sys
n, cs = int(sys.argv[1]), 65536
sizes = [min(cs, n - i) for i in range(0, n, cs)] + [0]
print(sum(len("%x" % s) + 17 + 64 + 2 + s + 2 for s in sizes))' $LEN)
bc_start_gateway --upstream "$BC_S3RVER_URL" --log-level debug
GW2=$BC_GW_URL
bc_expect mb2 200 - "create a second bucket" "${SIG[@]}" "${UNS[@]}" -X PUT "$GW2/acl2"
head_raw2() {
	local st size
	st=$(bc_req "$1" "$BC_S3RVER_URL/acl2/$2")
	size=$(wc -c <"$BC_TMP/$1.body")
	if [ "$st" = 404 ]; then
		bc_pass "s3rver: nothing stored at acl2/$2"
	elif [ "$st" = 200 ] && [ "$size" -lt "$ENC" ]; then
		bc_pass "s3rver: only an aborted upload's $size of $ENC bytes at acl2/$2"
	else
		bc_fail "s3rver: acl2/$2 answers $st with $size bytes (a complete upload is $ENC)"
	fi
}
HEAD_FN=head_raw2 wrong_lengths raw "$GW2/acl2"
st=$(s3r raw-good -X PUT --payload streaming --chunk-size 65536 --data-file "$OBJ" "$GW2/acl2/good.bin")
bc_assert_eq 200 "$st" "s3rver: the right x-amz-decoded-content-length is stored"
bc_stop_gateway

# ---- 3. file:// backend ------------------------------------------------------
DATA=$BC_TMP/data
mkdir -p "$DATA/fbk"
bc_start_gateway --upstream "file://$DATA" --client-key FK:fsecret --log-level debug
GW3=$BC_GW_URL
head_file() {
	[ ! -e "$DATA/fbk/$2" ] || bc_fail "file: $2 was created"
	bc_pass "file: no file $2"
}
HEAD_FN=head_file wrong_lengths file "$GW3/fbk" --key FK --secret fsecret
v=$(find "$DATA" -type f | wc -l)
bc_assert_eq 0 "$v" "file: no file at all (temp files removed)"
st=$(s3r file-good -X PUT --payload streaming --chunk-size 65536 --data-file "$OBJ" \
	--key FK --secret fsecret "$GW3/fbk/good.bin")
bc_assert_eq 200 "$st" "file: the right x-amz-decoded-content-length is stored"
bc_assert_same_file "$OBJ" "$DATA/fbk/good.bin" "file: the good upload holds the payload"
bc_stop_gateway
bc_done 79
