#!/bin/bash
# test_curl_sigv4.sh — curl --aws-sigv4 (curl's own SigV4 signer) through the
# gateway for PUT/GET/HEAD/Range/DELETE, compared with the same requests
# straight to the verifying fixture; plus hand-signed requests (s3req.py):
# a hex payload hash that lies, and signed aws-chunked streaming uploads
# (valid, and with one corrupted chunk signature).
#
# curl 7.88 does not send x-amz-content-sha256 by itself: most requests add
# "x-amz-content-sha256: UNSIGNED-PAYLOAD" (or the real hex hash), one GET
# and one PUT go without it.
#
# test_rgw_curl_sigv4.sh runs it against Ceph RGW (BC_UPSTREAM=rgw), which
# verifies the chunk signatures the gateway re-signs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 ||
	{ echo "SKIP: curl has no --aws-sigv4" >&2; exit 77; }
bc_start_upstream
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug

S3REQ=("$BC_PY" "$BC_IT_DIR/fixture/s3req.py" --key "$BC_UP_KEY" --secret "$BC_UP_SECRET")
SIG=("${BC_UP_SIGV4[@]}")
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
SMALL=$BC_TMP/small.bin
MED=$BC_TMP/med.bin
bc_mkfile "$SMALL" 2500
bc_mkfile "$MED" $((5 * 1024 * 1024 + 123))
SMALL_SHA=$(sha256sum <"$SMALL" | cut -d' ' -f1)

# flow EP TAG BUCKET: writes "op status [etag/len]" lines to $BC_TMP/TAG.res
flow() {
	local ep=$1 tag=$2 b=$3 res=$BC_TMP/$2.res v want
	: >"$res"
	bc_expect "$tag-mb" 200 - "$tag: PUT bucket" "${SIG[@]}" "${UNS[@]}" -X PUT "$ep/$b"
	echo "mb 200" >>"$res"

	bc_expect "$tag-put1" 200 - "$tag: PUT object, UNSIGNED-PAYLOAD" "${SIG[@]}" "${UNS[@]}" \
		-X PUT --data-binary "@$SMALL" "$ep/$b/small.bin"
	want=$(bc_md5_etag "$SMALL")
	v=$(bc_hdr "$tag-put1" ETag)
	bc_assert_eq "$want" "$v" "$tag: PUT ETag is the MD5"

	bc_expect "$tag-put2" 200 - "$tag: PUT object, hex payload hash" "${SIG[@]}" \
		-H "x-amz-content-sha256: $SMALL_SHA" -H "x-amz-meta-color: blue" \
		-H "Content-Type: text/x-test" \
		-X PUT --data-binary "@$SMALL" "$ep/$b/hashed.bin"

	bc_expect "$tag-put3" 200 - "$tag: PUT 5 MiB object" "${SIG[@]}" "${UNS[@]}" \
		-X PUT --data-binary "@$MED" "$ep/$b/dir/med.bin"

	bc_expect "$tag-get1" 200 - "$tag: GET" "${SIG[@]}" "${UNS[@]}" "$ep/$b/small.bin"
	bc_assert_same_file "$SMALL" "$BC_TMP/$tag-get1.body" "$tag: GET bytes"
	bc_expect "$tag-get2" 200 - "$tag: GET with metadata" "${SIG[@]}" "${UNS[@]}" "$ep/$b/hashed.bin"
	bc_assert_same_file "$SMALL" "$BC_TMP/$tag-get2.body" "$tag: GET bytes (hashed put)"
	v=$(bc_hdr "$tag-get2" x-amz-meta-color)
	bc_assert_eq blue "$v" "$tag: x-amz-meta-color round trip"
	v=$(bc_hdr "$tag-get2" Content-Type)
	bc_assert_eq text/x-test "$v" "$tag: Content-Type round trip"
	bc_expect "$tag-get3" 200 - "$tag: GET 5 MiB" "${SIG[@]}" "${UNS[@]}" "$ep/$b/dir/med.bin"
	bc_assert_same_file "$MED" "$BC_TMP/$tag-get3.body" "$tag: GET 5 MiB bytes"

	bc_expect "$tag-head" 200 - "$tag: HEAD" "${SIG[@]}" "${UNS[@]}" -I "$ep/$b/dir/med.bin"
	v=$(bc_hdr "$tag-head" Content-Length)
	bc_assert_eq $((5 * 1024 * 1024 + 123)) "$v" "$tag: HEAD Content-Length"
	want=$(bc_md5_etag "$MED")
	v=$(bc_hdr "$tag-head" ETag)
	bc_assert_eq "$want" "$v" "$tag: HEAD ETag"

	bc_expect "$tag-range" 206 - "$tag: GET Range" "${SIG[@]}" "${UNS[@]}" \
		-H "Range: bytes=1048570-1048609" "$ep/$b/dir/med.bin"
	bc_slice "$MED" 1048570 1048609 >"$BC_TMP/$tag-range.want"
	bc_assert_same_file "$BC_TMP/$tag-range.want" "$BC_TMP/$tag-range.body" "$tag: Range bytes"
	v=$(bc_hdr "$tag-range" Content-Range)
	bc_assert_eq "bytes 1048570-1048609/$((5 * 1024 * 1024 + 123))" "$v" "$tag: Content-Range"

	bc_expect "$tag-list" 200 - "$tag: ListObjectsV2" "${SIG[@]}" "${UNS[@]}" \
		"$ep/$b?list-type=2&prefix=dir%2F"
	grep -q '<Key>dir/med.bin</Key>' "$BC_TMP/$tag-list.body" ||
		bc_fail "$tag: listing lacks dir/med.bin"
	bc_pass "$tag: listing has dir/med.bin"

	bc_expect "$tag-missing" 404 NoSuchKey "$tag: GET missing key" "${SIG[@]}" "${UNS[@]}" \
		"$ep/$b/nope"
	bc_expect "$tag-del" 204 - "$tag: DELETE" "${SIG[@]}" "${UNS[@]}" -X DELETE "$ep/$b/small.bin"
	bc_expect "$tag-gone" 404 NoSuchKey "$tag: GET after DELETE" "${SIG[@]}" "${UNS[@]}" \
		"$ep/$b/small.bin"
	# (an error's length is left out: RGW's error bodies name the bucket)
	for f in put1 put2 put3 get1 get2 get3 head range missing del gone; do
		v=$(cat "$BC_TMP/$tag-$f.status")
		case $v in
		2*) echo "$f $v $(bc_hdr "$tag-$f" ETag) $(bc_hdr "$tag-$f" Content-Length)" ;;
		*) echo "$f $v $(bc_hdr "$tag-$f" ETag)" ;;
		esac >>"$res"
	done
}

flow "$BC_FIXTURE_URL" direct curl-direct
bc_assert_fixture_clean "curl direct"
bc_fixture_reset
bc_stats_save "$BC_TMP/stats0.json"
flow "$BC_GW_URL" gateway curl-gw
bc_assert_fixture_clean "curl through the gateway"
diff -u "$BC_TMP/direct.res" "$BC_TMP/gateway.res" ||
	bc_fail "curl results through the gateway differ from direct ones"
bc_pass "curl results through the gateway equal the direct ones"
v=$(bc_stats_delta "$BC_TMP/stats0.json" requests)
bc_assert_ge "$v" 13 "stats: the 13 S3 requests counted"
v=$(bc_stats_delta "$BC_TMP/stats0.json" auth_failures)
bc_assert_eq 0 "$v" "stats: no auth failures"
v=$(bc_stats_delta "$BC_TMP/stats0.json" upstream_requests)
bc_assert_ge "$v" 8 "stats: upstream requests"

# ---- without x-amz-content-sha256 (curl 7.88's default) --------------------
# A GET has no body: the gateway may take the empty-body hash curl signed
# (200) or insist on the header like S3 (400 InvalidRequest). A PUT with a
# body and no header must be refused with InvalidRequest (it would be
# unverifiable), never stored.
got=$(bc_req nohdr-get "${SIG[@]}" "$BC_GW_URL/curl-gw/hashed.bin")
echo "$got" >"$BC_TMP/nohdr-get.status"
case $got in
200) bc_assert_same_file "$SMALL" "$BC_TMP/nohdr-get.body" "GET without x-amz-content-sha256: 200, right bytes" ;;
400) bc_assert_s3_error nohdr-get 400 InvalidRequest "GET without x-amz-content-sha256" ;;
*) cat "$BC_TMP/nohdr-get.body" >&2; bc_fail "GET without x-amz-content-sha256: HTTP $got" ;;
esac
bc_expect nohdr-put 400 InvalidRequest "PUT without x-amz-content-sha256" \
	"${SIG[@]}" -X PUT --data-binary "@$SMALL" "$BC_GW_URL/curl-gw/nohdr.bin"
bc_expect nohdr-put-gone 404 NoSuchKey "the refused PUT stored nothing" \
	"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/curl-gw/nohdr.bin"

# ---- hand-signed: a payload hash that lies ---------------------------------
bc_assert_fixture_clean "curl without x-amz-content-sha256"
bc_stats_save "$BC_TMP/stats1.json"
st=$("${S3REQ[@]}" -X PUT --payload badhash --data-file "$SMALL" \
	--out "$BC_TMP/badhash.body" "$BC_GW_URL/curl-gw/badhash.bin")
echo "$st" >"$BC_TMP/badhash.status"
bc_assert_eq 400 "$st" "PUT whose x-amz-content-sha256 lies: 400"
bc_assert_s3_error badhash 400 XAmzContentSHA256Mismatch "PUT whose x-amz-content-sha256 lies"
bc_expect badhash-gone 404 NoSuchKey "the lying PUT stored nothing" \
	"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/curl-gw/badhash.bin"

# ---- hand-signed: aws-chunked streaming uploads ---------------------------
# The object must come back without aws-chunked in its Content-Encoding,
# as S3 stores it (and the fixture forwards the decoded body). RGW 16
# keeps "Content-Encoding: aws-chunked" even for uploads sent to it
# straight (a Ceph bug, fixed in later releases): against RGW the gateway
# must answer what RGW answers for the same upload sent direct.
want_ce=
if [ "$BC_UPSTREAM" = rgw ]; then
	st=$("${S3REQ[@]}" -X PUT --payload streaming --chunk-size 8192 --data-file "$SMALL" \
		--out "$BC_TMP/stream-direct.body" "$BC_FIXTURE_URL/curl-direct/stream-direct.bin")
	[ "$st" = 200 ] || bc_fail "direct aws-chunked PUT to RGW: HTTP $st"
	st=$(bc_req stream-direct-get "${SIG[@]}" "${UNS[@]}" "$BC_FIXTURE_URL/curl-direct/stream-direct.bin")
	[ "$st" = 200 ] || bc_fail "direct GET of the aws-chunked upload from RGW: HTTP $st"
	want_ce=$(bc_hdr stream-direct-get Content-Encoding)
fi
bc_stats_save "$BC_TMP/stats1b.json"
for cs in 65536 8192; do
	st=$("${S3REQ[@]}" -X PUT --payload streaming --chunk-size $cs --data-file "$MED" \
		--out "$BC_TMP/stream.body" "$BC_GW_URL/curl-gw/stream-$cs.bin")
	[ "$st" = 200 ] || cat "$BC_TMP/stream.body" >&2
	bc_assert_eq 200 "$st" "signed aws-chunked PUT (chunks of $cs)"
	bc_expect "stream-get-$cs" 200 - "GET the streamed object" "${SIG[@]}" "${UNS[@]}" \
		"$BC_GW_URL/curl-gw/stream-$cs.bin"
	bc_assert_same_file "$MED" "$BC_TMP/stream-get-$cs.body" "streamed object is the decoded body ($cs)"
	v=$(bc_hdr "stream-get-$cs" Content-Encoding)
	bc_assert_eq "$want_ce" "$v" "Content-Encoding as the store keeps it (S3: no aws-chunked)"
done
st=$("${S3REQ[@]}" -X PUT --payload streaming --chunk-size 65536 --data-file "$SMALL" \
	--out "$BC_TMP/stream-small.body" "$BC_GW_URL/curl-gw/stream-small.bin")
bc_assert_eq 200 "$st" "signed aws-chunked PUT of one chunk"
v=$(bc_stats_delta "$BC_TMP/stats1b.json" auth_failures)
bc_assert_eq 0 "$v" "stats: good aws-chunked uploads are no auth failures"
bc_stats_save "$BC_TMP/stats2.json"
for bad in 0 3 80 81; do
	st=$("${S3REQ[@]}" -X PUT --payload streaming --chunk-size 65536 --corrupt-chunk $bad \
		--data-file "$MED" --out "$BC_TMP/stream-bad-$bad.body" \
		"$BC_GW_URL/curl-gw/stream-bad-$bad.bin")
	echo "$st" >"$BC_TMP/stream-bad-$bad.status"
	bc_assert_eq 403 "$st" "aws-chunked PUT with chunk $bad's signature corrupted: 403"
	bc_assert_s3_error "stream-bad-$bad" 403 SignatureDoesNotMatch "corrupted chunk $bad"
	bc_expect "stream-bad-gone-$bad" 404 NoSuchKey "corrupted upload $bad stored nothing" \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/curl-gw/stream-bad-$bad.bin"
done
# The gateway may pass the lying hash upstream and relay S3's answer.
bc_assert_fixture_clean "hand-signed uploads through the gateway" XAmzContentSHA256Mismatch
v=$(bc_stats_delta "$BC_TMP/stats2.json" auth_failures)
bc_assert_eq 4 "$v" "stats: each of the 4 corrupted chunk signatures counted once in auth_failures"
bc_stop_gateway
bc_done 98
