#!/bin/bash
# test_redis_tier.sh — the Redis tier shared by two gateways (issue 14):
# gateway A reads a dataset from the file:// origin and writes its chunks
# to Redis; gateway B, started afterwards with a memory tier too small to
# matter, reads the same dataset without one read of the directory: every
# chunk comes from Redis (tier="redis" hits). Redis stopped (SIGSTOP:
# too slow, past --redis-timeout), answering errors (OOM under
# noeviction), and killed: B still serves every object (from the
# origin), the tier says down and counts it by kind; Redis back: the
# tier comes up again and serves a round without the origin. Both
# gateways stop cleanly.
# Memory: after caching the dataset's N bytes (44 MiB), Redis's INFO
# memory used_memory has grown by at most 1.05 N (the tier cuts chunks
# into slices that fit jemalloc's size classes; a value of exactly 8 MiB
# would cost Redis 10 MiB).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli

DATA=$BC_TMP/data
mkdir -p "$DATA/ds"
N=6
for i in $(seq 1 $N); do
	bc_mkfile "$DATA/ds/s$i.bin" $(( 50000 + i * 77777 ))
done
bc_mkfile "$DATA/ds/big.bin" $(( 17 * 1024 * 1024 + 3 ))   # three chunks
bc_mkfile "$DATA/ds/big2.bin" $(( 24 * 1024 * 1024 + 123457 ))   # four
CHUNKS=$(( N + 7 ))
NBYTES=$(cat "$DATA"/ds/*.bin | wc -c)

bc_start_redis

get_all() {   # $1: tag [$2: quiet]; GETs every object with curl, compares bytes
	local f k
	for f in "$DATA"/ds/*.bin; do
		k=${f#"$DATA/ds/"}
		curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/$k" ||
			bc_fail "$1: GET ds/$k failed"
		cmp -s "$f" "$BC_TMP/got" || bc_fail "$1: ds/$k bytes differ"
	done
	[ -n "${2:-}" ] || bc_pass "$1: every object's bytes match the directory"
}

wait_redis_up() {   # $1: 0 or 1; polls B's tier state for 15 s
	local i v
	for i in $(seq 150); do
		v=$(bc_stats_get tiers.redis.up)
		[ "$v" = "$1" ] && break
		sleep 0.1
	done
	echo "$v"
}

# ---- A fills Redis ---------------------------------------------------------
# (--redis-timeout 10s for A and B: with 500 ms an ASan build beside the
# whole suite timed commands out, and a tier down reads the directory; the
# stopped Redis below then waits 10 s for its first timeout; --meta-ttl 1h:
# a revalidation past the default 60 s is a read of the directory too)
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--redis "$BC_REDIS_URL" --redis-size 256MiB --redis-timeout 10s --meta-ttl 1h
A_PID=$BC_GW_PID A_LOG=$BC_GW_LOG A_URL=$BC_GW_URL
used_memory() {
	bc_redis_cli 0 INFO memory | tr -d '\r' | sed -n 's/^used_memory://p'
}
mem0=$(used_memory)
get_all "A, first pass"
w=0
for i in $(seq 50); do   # Redis writes are queued: wait for all 13 chunks
	w=$(bc_stats_get tiers.redis.writes)
	[ "$w" -ge "$CHUNKS" ] && break
	sleep 0.1
done
bc_assert_eq "$CHUNKS" "$w" "A wrote every chunk to Redis"
fails=$(bc_stats_get tiers.redis.write_failures)
bc_assert_eq 0 "$fails" "no Redis write failed"
keys=$(bc_redis_cli 0 DBSIZE)
bc_assert_ge "$keys" "$CHUNKS" "Redis holds the slices"

# ---- B reads it all from Redis --------------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 1MiB \
	--redis "$BC_REDIS_URL" --redis-size 256MiB --redis-timeout 10s --meta-ttl 1h
B_PID=$BC_GW_PID B_LOG=$BC_GW_LOG B_URL=$BC_GW_URL
bc_stats_save "$BC_TMP/b0.json"
get_all "B, from Redis"
reads=$(bc_stats_delta "$BC_TMP/b0.json" upstream_file_reads)
bc_assert_eq 0 "$reads" "B never reads the directory"
hits=$(bc_stats_get tiers.redis.hits)
bc_assert_ge "$hits" "$CHUNKS" "every chunk B served came from Redis"
up=$(bc_stats_get tiers.redis.up)
bc_assert_eq 1 "$up" "the Redis tier is up"

# ---- what the dataset costs Redis -----------------------------------------
# tiers.redis.writes counts puts accepted, before their SETs are answered;
# B's read without a read of the directory shows every slice is in Redis.
mem1=$(used_memory)
grow=$(( mem1 - mem0 ))
ratio=$(awk -v g="$grow" -v n="$NBYTES" 'BEGIN { printf "%.4f", g / n }')
bc_log "used_memory $mem0 -> $mem1: +$grow bytes for $NBYTES bytes cached ($ratio)"
bc_assert_ge $(( NBYTES * 105 / 100 )) "$grow" \
	"used_memory grew by $grow bytes for $NBYTES bytes cached: $ratio times, at most 1.05"

# ---- Redis too slow: stopped (SIGSTOP) while B reads -----------------------
kill -STOP "${BC_REDIS_PIDS[0]}"
bc_stats_save "$BC_TMP/s0.json"
get_all "B, Redis stopped"
up=$(wait_redis_up 0)
bc_assert_eq 0 "$up" "the Redis tier says down while Redis does not answer"
v=$(bc_stats_delta "$BC_TMP/s0.json" redis.connections.err_timeout)
bc_assert_ge "$v" 1 "the lost link is counted as a timeout"
kill -CONT "${BC_REDIS_PIDS[0]}"
up=$(wait_redis_up 1)
bc_assert_eq 1 "$up" "the Redis tier is up once Redis answers again"

# ---- Redis answering errors: OOM under noeviction ---------------------------
bc_redis_cli 0 CONFIG SET maxmemory-policy noeviction >/dev/null
bc_redis_cli 0 CONFIG SET maxmemory 1 >/dev/null
bc_mkfile "$DATA/ds/new.bin" 300000
bc_stats_save "$BC_TMP/o0.json"
get_all "B, Redis refusing writes"
for i in $(seq 100); do   # the SET's error comes back after the answer
	v=$(bc_stats_delta "$BC_TMP/o0.json" tiers.redis.write_failures)
	[ "$v" -ge 1 ] && break
	sleep 0.1
done
bc_assert_ge "$v" 1 "the refused SET is counted"
v=$(bc_stats_delta "$BC_TMP/o0.json" redis.connections.error_replies)
bc_assert_ge "$v" 1 "Redis's error reply is counted"
v=$(bc_stats_delta "$BC_TMP/o0.json" tiers.redis.downs)
bc_assert_ge "$v" 1 "an error reply marks the tier down"
bc_redis_cli 0 CONFIG SET maxmemory 0 >/dev/null
for i in $(seq 50); do   # an answer marks it up: the retry needs a read
	get_all "B, Redis taking writes again" quiet
	up=$(bc_stats_get tiers.redis.up)
	[ "$up" = 1 ] && break
	sleep 0.2
done
bc_assert_eq 1 "$up" "the Redis tier is up once Redis takes writes again"

# ---- Redis goes away, then comes back -------------------------------------
bc_redis_kill 0
get_all "B, Redis down"
up=$(wait_redis_up 0)
bc_assert_eq 0 "$up" "the Redis tier says down"
bc_redis_restart 0
up=$(wait_redis_up 1)
bc_assert_eq 1 "$up" "the Redis tier is up again"
get_all "B, Redis back"   # an empty Redis: B fetches and writes behind
used=0
for i in $(seq 20); do   # write-behind is queued: read until it shows
	bc_stats_save "$BC_TMP/r0.json"
	get_all "B, Redis back, round $i" quiet
	reads=$(bc_stats_delta "$BC_TMP/r0.json" upstream_file_reads)
	hits=$(bc_stats_delta "$BC_TMP/r0.json" tiers.redis.hits)
	if [ "$reads" = 0 ] && [ "$hits" -ge 1 ]; then used=1; break; fi
	sleep 0.2
done
bc_assert_eq 1 "$used" "the tier is used again: a round with $hits Redis hits and no read of the directory"

# ---- both stop cleanly -----------------------------------------------------
bc_stop_gateway
BC_GW_PID=$A_PID BC_GW_LOG=$A_LOG BC_GW_URL=$A_URL
bc_stop_gateway
bc_done 27
