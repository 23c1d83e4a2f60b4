#!/bin/bash
# test_redis_maxmemory.sh — --redis-size defaults from the Redis server's
# maxmemory (issue 27, item 6), against real redis-servers:
#   1. --maxmemory 64mb, no --redis-size: the tier asks CONFIG GET
#      maxmemory when it connects and takes 15/16 of it (capacity_bytes
#      60 MiB, "size_source": "maxmemory", bucketcache_redis_maxmemory_bytes),
#      logs it, and writes the chunks it reads to Redis;
#   2. --redis-size given: it is used and CONFIG is never sent (INFO
#      commandstats);
#   3. CONFIG renamed away (as managed Redis services do): the refusal is
#      logged once, the capacity stays 0 ("unknown"): nothing is written,
#      reads are served;
#   4. no maxmemory (0, unbounded): the same, with that reason.
# --redis-size without --redis still exits 2.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli
DATA=$BC_TMP/data
mkdir -p "$DATA/ds"
for i in 1 2 3; do bc_mkfile "$DATA/ds/o$i.bin" $(( 100000 + i * 1000 )); done
MIB=$(( 1024 * 1024 ))

read_all() {   # TAG: GETs every object, compares bytes
	local i
	for i in 1 2 3; do
		curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/o$i.bin" ||
			bc_fail "$1: GET ds/o$i.bin failed"
		cmp -s "$DATA/ds/o$i.bin" "$BC_TMP/got" || bc_fail "$1: ds/o$i.bin differs"
	done
	bc_pass "$1: every object is served"
}

wait_source() {   # WANT: polls the redis section's size_source for 10 s
	local i v
	for i in $(seq 100); do
		v=$(bc_stats_get redis.size_source)
		[ "$v" = "$1" ] && break
		sleep 0.1
	done
	echo "$v"
}

wait_writes() {   # N: polls tiers.redis.writes until >= N (10 s)
	local i v
	for i in $(seq 100); do
		v=$(bc_stats_get tiers.redis.writes)
		[ "$v" -ge "$1" ] && break
		sleep 0.1
	done
	echo "$v"
}

rc=0
"$BC_BIN" --upstream "file://$DATA" --redis-size 1G >"$BC_TMP/bad.out" 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "--redis-size without --redis exits 2"

# ---- 1. from maxmemory ---------------------------------------------------------------------
bc_start_redis --maxmemory 64mb --maxmemory-policy allkeys-lru
R1=$BC_REDIS_N R1_URL=$BC_REDIS_URL
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--chunk-size 64KiB --redis "$R1_URL"
v=$(wait_source maxmemory)
bc_assert_eq maxmemory "$v" "no --redis-size: the size comes from the server's maxmemory"
v=$(bc_stats_get tiers.redis.capacity_bytes)
bc_assert_eq $(( 64 * MIB - 4 * MIB )) "$v" "capacity is 15/16 of maxmemory 64 MiB"
v=$(bc_stats_get redis.maxmemory)
bc_assert_eq $(( 64 * MIB )) "$v" "/stats shows the server's maxmemory"
curl -sf "$BC_GW_URL/_bucketcache/metrics" -o "$BC_TMP/m1"
v=$(awk '$1 == "bucketcache_redis_maxmemory_bytes" { print $2 }' "$BC_TMP/m1")
bc_assert_eq $(( 64 * MIB )) "$v" "and /metrics, bucketcache_redis_maxmemory_bytes"
v=$(grep -c "redis-size from the server's maxmemory (64 MiB): 60 MiB" "$BC_GW_LOG" || true)
bc_assert_eq 1 "$v" "the log says where the size came from"
read_all "maxmemory"
v=$(wait_writes 3)
bc_assert_ge "$v" 3 "chunks are written to Redis ($v)"
v=$(bc_redis_cli "$R1" DBSIZE)
bc_assert_ge "$v" 3 "Redis holds them"
bc_stop_gateway

# ---- 2. --redis-size given: CONFIG is not asked --------------------------------------------
bc_redis_cli "$R1" CONFIG RESETSTAT >/dev/null
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--chunk-size 64KiB --redis "$R1_URL" --redis-size 8MiB
read_all "redis-size"
v=$(bc_stats_get redis.size_source)
bc_assert_eq redis-size "$v" "--redis-size given: it is the size"
v=$(bc_stats_get tiers.redis.capacity_bytes)
bc_assert_eq $(( 8 * MIB )) "$v" "capacity is --redis-size"
v=$(bc_redis_cli "$R1" INFO commandstats | tr -d '\r' | grep -c '^cmdstat_config:' || true)
bc_assert_eq 0 "$v" "CONFIG was not sent"
bc_stop_gateway

# ---- 3. CONFIG refused ------------------------------------------------------------------------
bc_start_redis --maxmemory 64mb --rename-command CONFIG '""'
R3_URL=$BC_REDIS_URL
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--chunk-size 64KiB --redis "$R3_URL"
v=$(wait_source unknown)
bc_assert_eq unknown "$v" "CONFIG refused: the size is unknown"
v=$(grep -c "no --redis-size and the server refuses CONFIG GET maxmemory (ERR unknown command" "$BC_GW_LOG" || true)
bc_assert_eq 1 "$v" "the refusal is logged, once, with what to do"
v=$(grep -c 'set --redis-size' "$BC_GW_LOG" || true)
bc_assert_eq 1 "$v" "the log says to set --redis-size"
v=$(bc_stats_get tiers.redis.capacity_bytes)
bc_assert_eq 0 "$v" "capacity 0"
read_all "refused"
read_all "refused, again"
v=$(bc_stats_get tiers.redis.writes)
bc_assert_eq 0 "$v" "nothing is written to Redis"
v=$(bc_stats_get tiers.redis.up)
bc_assert_eq 1 "$v" "the tier is up (reads still ask Redis)"
bc_stop_gateway

# ---- 4. no maxmemory -------------------------------------------------------------------------
bc_start_redis --maxmemory 0
R4_URL=$BC_REDIS_URL
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--chunk-size 64KiB --redis "$R4_URL"
v=$(wait_source unknown)
bc_assert_eq unknown "$v" "no maxmemory: the size is unknown"
v=$(grep -c "no --redis-size and the server has no maxmemory" "$BC_GW_LOG" || true)
bc_assert_eq 1 "$v" "and the log says so"
read_all "no maxmemory"
v=$(bc_stats_get tiers.redis.writes)
bc_assert_eq 0 "$v" "nothing is written to an unbounded Redis"
bc_stop_gateway

bc_done 33
