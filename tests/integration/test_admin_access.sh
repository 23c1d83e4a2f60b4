#!/bin/bash
# test_admin_access.sh — who may use the admin endpoints (issue 8, finding 2,
# and the stats decision): a client is local when it is on loopback and its
# request names no other client (Forwarded, X-Forwarded-For, X-Real-IP: a
# reverse proxy on the same host relays remote clients). The gateway is in
# front of s3rver with its cache on, so an invalidation is visible (a
# cached object becomes a miss, cache_invalidations counts it):
#   1. local (127.0.0.1, no forwarding header): DELETE
#      /_bucketcache/v1/cache?bucket=B invalidates (200), /stats and
#      /metrics 200;
#   2. relayed (each of the three headers, from 127.0.0.1): the DELETE is
#      403 AccessDenied and invalidates nothing; /stats and /metrics are
#      403; /health is 200;
#   3. --admin-token: a relayed request with x-bucketcache-admin-token or
#      Authorization: Bearer and the token passes (DELETE, stats, metrics);
#      a wrong token is 403;
#   4. --public-stats: relayed /stats and /metrics are 200, the DELETE is
#      still 403;
#   5. a non-loopback client (the gateway on 0.0.0.0, reached through this
#      host's first non-loopback IPv4 address): as relayed; with the token
#      it passes. Skipped (only this part) when the host has no such
#      address;
#   6. the invalidation endpoint refuses a bucket name that is not valid
#      (bucket=%EB%FF, bucket=_x) with 400 InvalidArgument, and no stats
#      entry appears for it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver
S3=$BC_S3RVER_URL
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
B=adm
TOKEN=adm-tok-5c1e
printf 'cached object\n' >"$BC_TMP/obj.txt"
bc_expect mkbucket 200 - "create bucket $B at the upstream" "${SIG[@]}" "${UNS[@]}" -X PUT "$S3/$B"
bc_expect putobj 200 - "put $B/obj.txt at the upstream" "${SIG[@]}" "${UNS[@]}" -X PUT \
	--data-binary "@$BC_TMP/obj.txt" "$S3/$B/obj.txt"

# cached NAME URL STATE: GET URL/adm/obj.txt (anonymous) says x-bucketcache: STATE.
cached() {
	local v
	bc_expect "$1" 200 - "GET $B/obj.txt" "$2/$B/obj.txt"
	v=$(bc_hdr "$1" x-bucketcache)
	bc_assert_eq "$3" "$v" "$B/obj.txt is a $3"
}

# warm NAME URL: caches the object (a second GET is a hit). 2 checks.
warm() {
	bc_req "$1-1" "$2/$B/obj.txt" >/dev/null
	cached "$1" "$2" hit
}

# invalidated NAME: the DELETE bc_req NAME answered {"invalidated": n}, n >= 1.
invalidated() {
	local v
	v=$(bc_json "$BC_TMP/$1.body" invalidated)
	bc_assert_match '^[1-9][0-9]*$' "$v" "$1: it invalidated the object"
}

RELAYED=("X-Forwarded-For: 203.0.113.9" "Forwarded: for=203.0.113.9" "X-Real-IP: 203.0.113.9")

# ---- 1, 2. no token: local versus relayed ----------------------------------
bc_start_gateway --upstream "$S3" --anonymous --log-level debug
GW=$BC_GW_URL
bc_expect stats-local 200 - "local: /stats" "$GW/_bucketcache/stats"
bc_expect metrics-local 200 - "local: /metrics" "$GW/_bucketcache/metrics"
warm w1 "$GW"
bc_stats_save "$BC_TMP/s-relayed.json"
i=0
for h in "${RELAYED[@]}"; do
	i=$((i + 1))
	bc_expect "del-relayed-$i" 403 AccessDenied "relayed ($h): DELETE /_bucketcache/v1/cache" \
		-H "$h" -X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
	bc_expect "stats-relayed-$i" 403 AccessDenied "relayed ($h): /stats" -H "$h" "$GW/_bucketcache/stats"
	bc_expect "metrics-relayed-$i" 403 AccessDenied "relayed ($h): /metrics" -H "$h" "$GW/_bucketcache/metrics"
	bc_expect "health-relayed-$i" 200 - "relayed ($h): /health" -H "$h" "$GW/_bucketcache/health"
done
v=$(bc_stats_delta "$BC_TMP/s-relayed.json" cache_invalidations)
bc_assert_eq 0 "$v" "the relayed DELETEs invalidated nothing (cache_invalidations)"
cached c1 "$GW" hit
bc_expect del-local 200 - "local: DELETE /_bucketcache/v1/cache?bucket=$B" \
	-X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
invalidated del-local
cached c2 "$GW" miss

# ---- 6. invalid bucket names --------------------------------------------------
bc_expect del-bad1 400 InvalidArgument "DELETE ...?bucket=%EB%FF (not UTF-8)" \
	-X DELETE "$GW/_bucketcache/v1/cache?bucket=%EB%FF"
bc_expect del-bad2 400 InvalidArgument "DELETE ...?bucket=_x" \
	-X DELETE "$GW/_bucketcache/v1/cache?bucket=_x"
bc_expect stats-after 200 - "/stats after the refused names" "$GW/_bucketcache/stats"
v=$("$BC_PY" -c 'import json, sys; print(",".join(sorted(json.load(open(sys.argv[1], "rb")).get("buckets", {}))))' \
	"$BC_TMP/stats-after.body")
bc_assert_eq "$B" "$v" "/stats is valid JSON and names bucket $B only"
bc_stop_gateway

# ---- 3. --admin-token ---------------------------------------------------------
bc_start_gateway --upstream "$S3" --anonymous --admin-token "$TOKEN" --log-level debug
GW=$BC_GW_URL
RH=${RELAYED[0]}
warm w2 "$GW"
bc_expect del-tok 200 - "relayed + x-bucketcache-admin-token: DELETE" -H "$RH" \
	-H "x-bucketcache-admin-token: $TOKEN" -X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
invalidated del-tok
bc_expect stats-tok 200 - "relayed + x-bucketcache-admin-token: /stats" -H "$RH" \
	-H "x-bucketcache-admin-token: $TOKEN" "$GW/_bucketcache/stats"
warm w3 "$GW"
bc_expect del-bearer 200 - "relayed + Authorization: Bearer: DELETE" -H "$RH" \
	-H "Authorization: Bearer $TOKEN" -X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
invalidated del-bearer
bc_expect metrics-bearer 200 - "relayed + Authorization: Bearer: /metrics" -H "$RH" \
	-H "Authorization: Bearer $TOKEN" "$GW/_bucketcache/metrics"
warm w4 "$GW"
bc_stats_save "$BC_TMP/s-wrong.json"
bc_expect del-wrong 403 AccessDenied "relayed + a wrong x-bucketcache-admin-token: DELETE" -H "$RH" \
	-H "x-bucketcache-admin-token: ${TOKEN}x" -X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
bc_expect del-wrong-bearer 403 AccessDenied "relayed + a wrong Bearer token: DELETE" -H "$RH" \
	-H "Authorization: Bearer x$TOKEN" -X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
bc_expect stats-wrong 403 AccessDenied "relayed + a wrong token: /stats" -H "$RH" \
	-H "x-bucketcache-admin-token: ${TOKEN}x" "$GW/_bucketcache/stats"
v=$(bc_stats_delta "$BC_TMP/s-wrong.json" cache_invalidations)
bc_assert_eq 0 "$v" "wrong tokens invalidated nothing"
cached c3 "$GW" hit
bc_stop_gateway

# ---- 4. --public-stats ---------------------------------------------------------
bc_start_gateway --upstream "$S3" --anonymous --public-stats --log-level debug
GW=$BC_GW_URL
warm w5 "$GW"
bc_expect stats-pub 200 - "--public-stats: relayed /stats" -H "$RH" "$GW/_bucketcache/stats"
bc_expect metrics-pub 200 - "--public-stats: relayed /metrics" -H "$RH" "$GW/_bucketcache/metrics"
bc_expect del-pub 403 AccessDenied "--public-stats: a relayed DELETE is still refused" -H "$RH" \
	-X DELETE "$GW/_bucketcache/v1/cache?bucket=$B"
cached c4 "$GW" hit
bc_stop_gateway

# ---- 5. a non-loopback client ----------------------------------------------------
nonlo=0
ADDR=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -1 || true)
if [ -n "$ADDR" ]; then
	BC_GW_HOST=0.0.0.0 bc_start_gateway --upstream "$S3" --anonymous --admin-token "$TOKEN" --log-level debug
	EXT=http://$ADDR:$BC_GW_PORT
	warm w6 "$BC_GW_URL"
	bc_expect del-ext 403 AccessDenied "non-loopback ($ADDR): DELETE" \
		-X DELETE "$EXT/_bucketcache/v1/cache?bucket=$B"
	bc_expect stats-ext 403 AccessDenied "non-loopback: /stats" "$EXT/_bucketcache/stats"
	bc_expect metrics-ext 403 AccessDenied "non-loopback: /metrics" "$EXT/_bucketcache/metrics"
	bc_expect health-ext 200 - "non-loopback: /health" "$EXT/_bucketcache/health"
	cached c5 "$BC_GW_URL" hit
	bc_expect del-ext-tok 200 - "non-loopback + the token: DELETE" \
		-H "Authorization: Bearer $TOKEN" -X DELETE "$EXT/_bucketcache/v1/cache?bucket=$B"
	invalidated del-ext-tok
	bc_expect stats-ext-tok 200 - "non-loopback + the token: /stats" \
		-H "x-bucketcache-admin-token: $TOKEN" "$EXT/_bucketcache/stats"
	bc_expect stats-ext-local 200 - "the same gateway from 127.0.0.1: /stats" "$BC_GW_URL/_bucketcache/stats"
	bc_stop_gateway
	nonlo=17
else
	echo "# SKIP part 5: this host has no non-loopback IPv4 address (hostname -I)"
fi

bc_done $((75 + nonlo))
