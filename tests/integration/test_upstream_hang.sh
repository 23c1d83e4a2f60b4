#!/bin/bash
# test_upstream_hang.sh — a hung upstream (the verifying fixture stopped
# with SIGSTOP: connections are accepted by the kernel, nothing is ever
# answered) must not hold clients: with --upstream-ttfb-timeout 1s
# --upstream-deadline 3s --retries 3, a cold GET (a cache fill) and a
# proxied ListObjectsV2 answer 504 GatewayTimeout (S3 XML) at the 3 s
# deadline, a PUT 504 one TTFB limit after its body (never retried), and an
# object already in the cache is still served from it (x-bucketcache: hit)
# meanwhile. Once the upstream continues, requests work again. Also: the
# two options are in --help with their defaults (10s, 30s).
# Before these limits the cold GET took --upstream-timeout x (1 + retries).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
# the fixture is stopped with SIGSTOP below: a python3 of its own, not a
# fork server's run (the signal would stop the client only)
BC_FIXTURE_PY=$BC_PY_REAL bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL
FX_PID=${BC_PIDS[-1]}   # bc_start_fixture's process
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
DEADLINE_MS=3000

# Nothing may be left stopped, whatever ends the script: continue the
# fixture, then lib.sh's cleanup (which reads the exit status first, so
# it is handed on).
hang_exit() {
	local rc=$?
	kill -CONT "$FX_PID" 2>/dev/null || true
	return "$rc"
}
trap 'hang_exit || bc__cleanup; bc__cleanup' EXIT

# opt_default NAME: the "(default: X)" of --NAME in --help.
opt_default() {
	"$BC_BIN" --help | awk -v o="  --$1 " '
		index($0, o) == 1 { on = 1; print; next }
		/^  --/ { on = 0 }
		on' | tr '\n' ' ' | sed -n 's/.*(default: \([^)]*\)).*/\1/p'
}

# ---- --help ---------------------------------------------------------------
v=$(opt_default upstream-ttfb-timeout)
bc_assert_eq 10s "$v" "--help: --upstream-ttfb-timeout defaults to 10s"
v=$(opt_default upstream-deadline)
bc_assert_eq 30s "$v" "--help: --upstream-deadline defaults to 30s"

# ---- objects, a gateway, one object warm -------------------------------------
WARM=$BC_TMP/warm.bin
COLD=$BC_TMP/cold.bin
SMALL=$BC_TMP/small.bin   # small enough for the socket buffers of a stopped peer
bc_mkfile "$WARM" 200000
bc_mkfile "$COLD" 150000
bc_mkfile "$SMALL" 10000
bc_expect mb 200 - "create the bucket upstream" "${SIG[@]}" "${UNS[@]}" -X PUT "$FX/hangb"
bc_expect put-warm 200 - "put warm.bin upstream" "${SIG[@]}" "${UNS[@]}" -X PUT \
	--data-binary "@$WARM" "$FX/hangb/warm.bin"
bc_expect put-cold 200 - "put cold.bin upstream" "${SIG[@]}" "${UNS[@]}" -X PUT \
	--data-binary "@$COLD" "$FX/hangb/cold.bin"

bc_start_gateway --upstream "$FX" --upstream-ttfb-timeout 1s --upstream-deadline 3s \
	--retries 3 --connect-timeout 2s --log-level debug
bc_expect warm-1 200 - "GET warm.bin through the gateway (fills the cache)" "${SIG[@]}" "${UNS[@]}" \
	"$BC_GW_URL/hangb/warm.bin"
bc_assert_same_file "$WARM" "$BC_TMP/warm-1.body" "warm.bin bytes"
bc_expect warm-2 200 - "GET warm.bin again" "${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/hangb/warm.bin"
v=$(bc_hdr warm-2 x-bucketcache)
bc_assert_eq hit "$v" "warm.bin is served from the cache"
to0=$(bc_stats_get upstream_timeouts)

# ---- the upstream hangs ---------------------------------------------------
kill -STOP "$FX_PID"

bc_expect cold-get 504 GatewayTimeout "hung upstream: cold GET (cache fill)" --max-time 20 \
	"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/hangb/cold.bin"
e=$(bc_req_ms cold-get)   # curl's own time, not the checks' after it
bc_log "cold GET answered after $e ms"
bc_assert_ge "$e" $((DEADLINE_MS - 500)) "cold GET: not before the deadline ($e ms)"
bc_assert_ge $((DEADLINE_MS + 2000)) "$e" "cold GET: within the deadline + 2 s ($e ms)"

bc_expect list 504 GatewayTimeout "hung upstream: ListObjectsV2 (proxied)" --max-time 20 \
	"${SIG[@]}" "${UNS[@]}" "$BC_GW_URL/hangb?list-type=2"
e=$(bc_req_ms list)   # curl's own time, not the checks' after it
bc_log "ListObjectsV2 answered after $e ms"
bc_assert_ge "$e" $((DEADLINE_MS - 500)) "ListObjectsV2: not before the deadline ($e ms)"
bc_assert_ge $((DEADLINE_MS + 2000)) "$e" "ListObjectsV2: within the deadline + 2 s ($e ms)"

# a request with a body is not retried: one TTFB limit after its body
bc_expect put 504 GatewayTimeout "hung upstream: PUT (proxied, with a body)" --max-time 20 \
	"${SIG[@]}" "${UNS[@]}" -X PUT --data-binary "@$SMALL" "$BC_GW_URL/hangb/new.bin"
e=$(bc_req_ms put)   # curl's own time, not the checks' after it
bc_log "PUT answered after $e ms"
bc_assert_ge "$e" 900 "PUT: not before the TTFB limit ($e ms)"
bc_assert_ge 2500 "$e" "PUT: within the TTFB limit + 1.5 s ($e ms)"

bc_expect warm-3 200 - "hung upstream: GET warm.bin" --max-time 20 "${SIG[@]}" "${UNS[@]}" \
	"$BC_GW_URL/hangb/warm.bin"
e=$(bc_req_ms warm-3)   # curl's own time, not the checks' after it
bc_assert_same_file "$WARM" "$BC_TMP/warm-3.body" "hung upstream: warm.bin bytes"
v=$(bc_hdr warm-3 x-bucketcache)
bc_assert_eq hit "$v" "hung upstream: warm.bin still served from the cache"
bc_assert_ge 1000 "$e" "hung upstream: the cached read did not wait ($e ms)"

to1=$(bc_stats_get upstream_timeouts)
bc_assert_ge $((to1 - to0)) 3 "stats: upstream_timeouts counted the 3 timed-out requests"
v=$(grep -c 'no answer within upstream-deadline' "$BC_GW_LOG" || true)
bc_assert_ge "$v" 2 "the gateway log names the deadline"

# ---- the upstream continues -------------------------------------------------
kill -CONT "$FX_PID"
bc_expect cold-after 200 - "after SIGCONT: cold GET works again" --max-time 20 "${SIG[@]}" "${UNS[@]}" \
	"$BC_GW_URL/hangb/cold.bin"
bc_assert_same_file "$COLD" "$BC_TMP/cold-after.body" "after SIGCONT: cold.bin bytes"
bc_stop_gateway
bc_done 31
