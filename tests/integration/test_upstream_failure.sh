#!/bin/bash
# test_upstream_failure.sh — the verifying fixture's self-test (it must be
# able to refuse, or every "the upstream accepted it" check elsewhere means
# nothing), then the gateway against a dead upstream (bounded 5xx S3 XML,
# no hang), injected 503/500/dropped connections (retried, counted in
# upstream_retries), more failures than --retries (the client sees 503),
# and a stalled upstream (--upstream-timeout). Sections 3 and 4 run twice:
# with --no-cache (GETs go through the proxy path) and with the cache on
# (GETs are cache fills: one ranged GET per chunk), each on cold objects.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_skip_unless_tool "$BC_PY" curl
bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL
S3REQ=("$BC_PY" "$BC_IT_DIR/fixture/s3req.py")
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
OBJ=$BC_TMP/obj.bin
bc_mkfile "$OBJ" 300000

now() { date +%s.%N; }
elapsed() { "$BC_PY" -c 'import sys; print(int(float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(now)"; }

# s3r NAME ARGS...: s3req.py, answer stored like bc_req NAME.
s3r() {
	local name=$1 st
	shift
	st=$("${S3REQ[@]}" --out "$BC_TMP/$name.body" --hdr "$BC_TMP/$name.hdr" "$@")
	echo "$st" >"$BC_TMP/$name.status"
	echo "$st"
}

# ---- 1. fixture self-test: it accepts good signatures and refuses bad ones -----
bc_expect fx-mb 200 - "fixture: curl --aws-sigv4 PUT bucket" "${SIG[@]}" "${UNS[@]}" -X PUT "$FX/fxb"
bc_expect fx-put 200 - "fixture: curl --aws-sigv4 PUT object" "${SIG[@]}" \
	-H "x-amz-content-sha256: $(sha256sum <"$OBJ" | cut -d' ' -f1)" --data-binary "@$OBJ" -X PUT "$FX/fxb/obj.bin"
bc_expect fx-get 200 - "fixture: curl --aws-sigv4 GET" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/fx-get.body" "fixture: GET bytes"
v=$(bc_fixture_stats rejected)
bc_assert_eq 0 "$v" "fixture: nothing rejected so far"

bc_expect fx-wrong 403 SignatureDoesNotMatch "fixture refuses a wrong secret (curl)" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong "${UNS[@]}" "$FX/fxb/obj.bin"
v=$(bc_fixture_stats rejected_by_code.SignatureDoesNotMatch)
bc_assert_eq 1 "$v" "fixture counted the rejection"
bc_expect fx-unknown 403 InvalidAccessKeyId "fixture refuses an unknown key" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user WHO:wrong "${UNS[@]}" "$FX/fxb/obj.bin"
bc_expect fx-region 400 AuthorizationHeaderMalformed "fixture refuses another region" \
	--aws-sigv4 "aws:amz:eu-west-1:s3" --user S3RVER:S3RVER "${UNS[@]}" "$FX/fxb/obj.bin"
bc_expect fx-anon 403 AccessDenied "fixture refuses an unsigned request" "$FX/fxb/obj.bin"
bc_expect fx-nohash 400 InvalidRequest "fixture wants x-amz-content-sha256 (as S3)" "${SIG[@]}" "$FX/fxb/obj.bin"
st=$(s3r fx-skew --date-offset 1000 "$FX/fxb/obj.bin")
bc_assert_eq 403 "$st" "fixture refuses a clock 16 min off"
bc_assert_s3_error fx-skew 403 RequestTimeTooSkewed "fixture skew"
st=$(s3r fx-badhash -X PUT --payload badhash --data-file "$OBJ" "$FX/fxb/bad.bin")
bc_assert_eq 400 "$st" "fixture refuses a body that does not match x-amz-content-sha256"
bc_assert_s3_error fx-badhash 400 XAmzContentSHA256Mismatch "fixture body hash"
st=$(s3r fx-unsignedhdr -U "x-amz-meta-sneaky: 1" "$FX/fxb/obj.bin")
bc_assert_eq 403 "$st" "fixture refuses an x-amz-* header outside SignedHeaders"
st=$(s3r fx-stream -X PUT --payload streaming --chunk-size 8192 --data-file "$OBJ" "$FX/fxb/stream.bin")
bc_assert_eq 200 "$st" "fixture accepts a good signed aws-chunked upload"
bc_expect fx-stream-raw 200 - "s3rver holds the decoded body" "$BC_S3RVER_URL/fxb/stream.bin"
bc_assert_same_file "$OBJ" "$BC_TMP/fx-stream-raw.body" "aws-chunked upload decoded before s3rver"
st=$(s3r fx-stream-bad -X PUT --payload streaming --chunk-size 8192 --corrupt-chunk 7 \
	--data-file "$OBJ" "$FX/fxb/stream-bad.bin")
bc_assert_eq 403 "$st" "fixture refuses a corrupted chunk signature"
bc_expect fx-stream-bad-raw 404 NoSuchKey "the refused upload never reached s3rver" "$BC_S3RVER_URL/fxb/stream-bad.bin"
url=$("${S3REQ[@]}" --presign 60 --print-url "$FX/fxb/obj.bin")
bc_expect fx-presign 200 - "fixture accepts a presigned URL" "$url"
bc_expect fx-presign-bad 403 SignatureDoesNotMatch "fixture refuses a tampered presigned URL" \
	"${url/X-Amz-Expires=60/X-Amz-Expires=61}"
bc_fixture_fail 503 2
bc_expect fx-f1 503 SlowDown "fixture injects failure 1/2" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
bc_expect fx-f2 503 SlowDown "fixture injects failure 2/2" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
bc_expect fx-f3 200 - "fixture stops failing after count" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
v=$(bc_fixture_stats injected)
bc_assert_eq 2 "$v" "fixture counted injected failures"
bc_fixture_fail 0 1
bc_expect fx-drop 000 - "fixture drops a connection on request" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
curl -sf -X POST "$FX/__fixture/delay?ms=1500&count=1" >/dev/null
t0=$(now)
bc_expect fx-delay 200 - "fixture delays a request on request" "${SIG[@]}" "${UNS[@]}" "$FX/fxb/obj.bin"
e=$(elapsed "$t0")
bc_assert_eq 1 "$(( e >= 1 ))" "the delay happened"
bc_expect fx-chunked 411 MissingContentLength "fixture wants a length on PUT (as S3)" "${SIG[@]}" "${UNS[@]}" \
	-H "Transfer-Encoding: chunked" -T "$OBJ" "$FX/fxb/chunked.bin"
bc_fixture_reset
v=$(bc_fixture_stats requests)
bc_assert_eq 0 "$v" "fixture reset clears counters"

bc_require_basics     # the daemon from here on

# ---- 2. nothing listens upstream -------------------------------------------
DEAD=$(bc_free_port)
bc_start_gateway --upstream "http://127.0.0.1:$DEAD" --connect-timeout 2s --upstream-timeout 5s \
	--retries 1 --log-level debug
bc_stats_save "$BC_TMP/d0.json"
t0=$(now)
bc_expect dead-get '50[234]' '[A-Za-z]+' "GET with a dead upstream" --max-time 20 "${SIG[@]}" "${UNS[@]}" \
	"$BC_GW_URL/fxb/obj.bin"
e=$(elapsed "$t0")
bc_assert_eq 1 "$(( e < 15 ))" "dead upstream answered within 15 s"
bc_expect dead-head '50[234]' - "HEAD with a dead upstream" --max-time 20 "${SIG[@]}" "${UNS[@]}" -I \
	"$BC_GW_URL/fxb/obj.bin"
bc_expect dead-put '50[234]' '[A-Za-z]+' "PUT with a dead upstream" --max-time 20 "${SIG[@]}" "${UNS[@]}" \
	-X PUT --data-binary "@$OBJ" "$BC_GW_URL/fxb/new.bin"
bc_expect dead-list '50[234]' '[A-Za-z]+' "LIST with a dead upstream" --max-time 20 "${SIG[@]}" "${UNS[@]}" \
	"$BC_GW_URL/fxb?list-type=2"
v=$(bc_stats_delta "$BC_TMP/d0.json" upstream_errors)
bc_assert_ge "$v" 4 "stats: upstream_errors counted"
bc_expect dead-health 200 - "health still answers" --max-time 5 "$BC_GW_URL/_bucketcache/health"
bc_stop_gateway

# ---- 3. transient upstream failures are retried ----------------------------
# retry_suite MODE GATEWAY-OPTIONS...: sections 3 and 4 against a fresh
# gateway; MODE names the objects and the checks.
retry_suite() {
	local m=$1 k v e inj
	shift
	bc_start_gateway --upstream "$FX" --retries 3 --connect-timeout 2s --upstream-timeout 2s \
		--log-level debug "$@"
	# objects put straight to the fixture and read once through this
	# gateway, so no cache can answer instead of the upstream
	for k in r503 r500 rclose rstall over stall2; do
		bc_expect "seed-$m-$k" 200 - "$m: seed $k" "${SIG[@]}" "${UNS[@]}" -X PUT \
			--data-binary "@$OBJ" "$FX/fxb/$m-$k.bin"
	done
	bc_fixture_reset

	bc_stats_save "$BC_TMP/r0.json"
	bc_fixture_fail 503 2
	bc_expect "$m-r503" 200 - "$m: GET succeeds after two upstream 503s" "${SIG[@]}" "${UNS[@]}" \
		"$BC_GW_URL/fxb/$m-r503.bin"
	bc_assert_same_file "$OBJ" "$BC_TMP/$m-r503.body" "$m: retried GET bytes"
	v=$(bc_fixture_stats injected)
	bc_assert_eq 2 "$v" "$m: the fixture answered 503 twice"
	v=$(bc_fixture_stats pending_failures)
	bc_assert_eq 0 "$v" "$m: no injected failure left"
	v=$(bc_fixture_stats by_method.GET)
	bc_assert_eq 3 "$v" "$m: the upstream saw exactly 3 GETs (2 failed, 1 served)"
	v=$(bc_stats_delta "$BC_TMP/r0.json" upstream_retries)
	bc_assert_eq 2 "$v" "$m: stats: upstream_retries +2"

	bc_stats_save "$BC_TMP/r1.json"
	bc_fixture_fail 500 1
	bc_expect "$m-r500" 200 - "$m: GET succeeds after an upstream 500" "${SIG[@]}" "${UNS[@]}" \
		"$BC_GW_URL/fxb/$m-r500.bin"
	bc_assert_same_file "$OBJ" "$BC_TMP/$m-r500.body" "$m: retried GET bytes (500)"
	v=$(bc_stats_delta "$BC_TMP/r1.json" upstream_retries)
	bc_assert_eq 1 "$v" "$m: stats: upstream_retries +1 (500)"

	bc_stats_save "$BC_TMP/r2.json"
	# libcurl itself silently retries a request whose reused keep-alive
	# connection dies before any answer; the second drop (on a fresh
	# connection) is the gateway's to retry.
	bc_fixture_fail 0 2
	bc_expect "$m-rclose" 200 - "$m: GET succeeds after the upstream dropped the connection twice" \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/fxb/$m-rclose.bin"
	bc_assert_same_file "$OBJ" "$BC_TMP/$m-rclose.body" "$m: retried GET bytes (dropped connection)"
	v=$(bc_stats_delta "$BC_TMP/r2.json" upstream_retries)
	bc_assert_ge "$v" 1 "$m: stats: upstream_retries +1 (drop)"

	bc_stats_save "$BC_TMP/r3.json"
	curl -sf -X POST "$FX/__fixture/delay?ms=6000&count=1" >/dev/null
	t0=$(now)
	bc_expect "$m-rstall" 200 - "$m: GET succeeds after a stalled upstream attempt" --max-time 30 \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/fxb/$m-rstall.bin"
	e=$(elapsed "$t0")
	bc_assert_eq 1 "$(( e < 6 ))" "$m: the stalled attempt was cut by --upstream-timeout 2s"
	bc_assert_same_file "$OBJ" "$BC_TMP/$m-rstall.body" "$m: retried GET bytes (stall)"
	v=$(bc_stats_delta "$BC_TMP/r3.json" upstream_retries)
	bc_assert_ge "$v" 1 "$m: stats: upstream_retries +1 (stall)"
	bc_fixture_reset

	# ---- 4. more failures than --retries: the client sees the 503 -------
	bc_stats_save "$BC_TMP/o0.json"
	bc_fixture_fail 503 50
	t0=$(now)
	bc_expect "$m-over" 503 '[A-Za-z]+' "$m: GET after more 503s than --retries" --max-time 30 \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/fxb/$m-over.bin"
	e=$(elapsed "$t0")
	bc_assert_eq 1 "$(( e < 25 ))" "$m: gave up within 25 s"
	inj=$(bc_fixture_stats injected)
	bc_assert_eq 4 "$inj" "$m: exactly 1 + --retries (3) upstream attempts"
	v=$(bc_stats_delta "$BC_TMP/o0.json" upstream_retries)
	bc_assert_eq 3 "$v" "$m: stats: upstream_retries +3"
	bc_fixture_reset
	bc_expect "$m-over-after" 200 - "$m: the same GET works once the upstream recovers" \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/fxb/$m-over.bin"
	bc_assert_same_file "$OBJ" "$BC_TMP/$m-over-after.body" "$m: GET bytes after recovery"

	curl -sf -X POST "$FX/__fixture/delay?ms=4000&count=10" >/dev/null
	t0=$(now)
	bc_expect "$m-stall2" '50[34]' '[A-Za-z]+' "$m: GET with an upstream that always stalls" --max-time 40 \
		"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/fxb/$m-stall2.bin"
	e=$(elapsed "$t0")
	bc_assert_eq 1 "$(( e < 30 ))" "$m: stalled upstream answered within 30 s"
	bc_assert_fixture_clean "$m: retried requests"
	bc_stop_gateway
	# the fixture may still sleep on the stalled attempts: let them pass
	curl -sf -X POST "$FX/__fixture/delay?ms=0&count=0" >/dev/null
	bc_fixture_reset
}

retry_suite nocache --no-cache
retry_suite cache --cache
bc_done 124
