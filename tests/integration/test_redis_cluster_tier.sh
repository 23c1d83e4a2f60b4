#!/bin/bash
# test_redis_cluster_tier.sh — the Redis tier on a real Redis Cluster of
# three masters, shared by two gateways (issue 14). Each gateway is given
# the three masters as seeds (--redis repeated) and a memory tier of 1 MiB,
# smaller than any chunk of the dataset, so every read of B goes to Redis.
#   (a) gateway A reads the dataset from the file:// origin and writes its
#       chunks to the cluster; the slices land on all three masters;
#   (b) gateway B reads it with zero reads of the directory, bytes
#       identical;
#   (c) `redis-cli --cluster reshard` moves slots holding our keys from
#       one master (P) to another (Q) while B reads the dataset in a loop
#       in the background: every answer is right, B never reads the
#       directory (MIGRATE keeps the keys and their TTLs), and the old
#       owner P answered MOVED. MOVED is certain: B loads its slot map at
#       start and again only after a MOVED (or a connection lost), so its
#       first read of a moved key after that key's slot moved goes to P,
#       which answers MOVED; the loop runs a full round after the
#       reshard ends. ASK during the reshard is counted but not asserted:
#       a slot is MIGRATING for a few milliseconds only, and whether a
#       read falls into one is chance;
#   (d) ASK made certain: a slot holding our keys is left half-migrated
#       from R (the third master) to P, as the reshard does it (SETSLOT
#       IMPORTING on P, MIGRATING on R, MIGRATE of its keys) but paused.
#       B reads the dataset: R answers ASK for those keys, B sends ASKING
#       to P and gets them; no read of the directory. The slot is then
#       given to P (SETSLOT NODE), as the reshard ends a slot;
#   (e) master Q killed while B reads in a loop: every answer is right,
#       some from the directory; the tier says down. Q restarted (its
#       nodes.conf keeps its slots; its data is gone) and the cluster ok
#       again: the tier comes up, and a round of reads is served from
#       Redis alone again (B refilled what Q lost);
#   (f) both gateways stop cleanly.
# MOVED and ASK are read from Redis's own counters (INFO errorstats:
# errorstat_MOVED, errorstat_ASK; INFO commandstats: cmdstat_asking) and
# from B's "redis" stats section (cluster.moved, cluster.ask), which must
# count as many. Only B sends keyed commands while they are counted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool redis-server redis-cli timeout

T0=$SECONDS
DATA=$BC_TMP/data
mkdir -p "$DATA/ds"
N=6
for i in $(seq 1 $N); do   # one chunk of 3 or 4 slices each
	bc_mkfile "$DATA/ds/s$i.bin" $(( 2 * 1024 * 1024 + i * 277777 ))
done
bc_mkfile "$DATA/ds/big.bin" $(( 17 * 1024 * 1024 + 3 ))   # three chunks
CHUNKS=$(( N + 3 ))
OBJS=()
for f in "$DATA"/ds/*.bin; do
	OBJS+=("${f#"$DATA/ds/"}")
done

bc_start_redis_cluster
CN=("${BC_REDIS_CLUSTER_NODES[@]}")
SEEDS=()
for u in $BC_REDIS_CLUSTER_URLS; do
	SEEDS+=(--redis "$u")
done

# ---- helpers ---------------------------------------------------------------

read_all() {   # $1: tag, $2: gateway URL; GETs every object, compares bytes
	local k
	for k in "${OBJS[@]}"; do
		curl -sf --max-time 20 -o "$BC_TMP/got" "$2/ds/$k" ||
			bc_fail "$1: GET ds/$k failed"
		cmp -s "$DATA/ds/$k" "$BC_TMP/got" || bc_fail "$1: ds/$k bytes differ"
	done
}

get_all() {   # as read_all, and a check
	read_all "$@"
	bc_pass "$1: every object's bytes match the directory"
}

# B reads the dataset in the background, round after round, until
# loop_stop: a failed GET or a byte difference goes to loop.err (asserted
# by loop_stop in the main shell), a finished round adds a line to
# loop.rounds.
loop_start() {
	rm -f "$BC_TMP/loop.stop" "$BC_TMP/loop.err"
	: >"$BC_TMP/loop.rounds"
	(
		n=0
		while [ ! -e "$BC_TMP/loop.stop" ]; do
			for k in "${OBJS[@]}"; do
				n=$((n + 1))
				if ! curl -sf --max-time 20 -o "$BC_TMP/loop.got" "$B_URL/ds/$k"; then
					echo "GET $n (ds/$k) failed" >>"$BC_TMP/loop.err"
				elif ! cmp -s "$DATA/ds/$k" "$BC_TMP/loop.got"; then
					echo "GET $n (ds/$k): bytes differ" >>"$BC_TMP/loop.err"
				fi
			done
			echo "$n" >>"$BC_TMP/loop.rounds"
		done
	) &
	LOOP_PID=$!
	BC_PIDS+=("$LOOP_PID")
}

loop_rounds() { wc -l <"$BC_TMP/loop.rounds"; }

# loop_wait_rounds N SECONDS: waits until the loop finished N rounds.
loop_wait_rounds() {
	local deadline=$((SECONDS + $2))
	while [ "$(loop_rounds)" -lt "$1" ]; do
		[ "$SECONDS" -lt "$deadline" ] ||
			bc_fail "the read loop did not finish $1 rounds in $2 s"
		sleep 0.1
	done
}

# loop_stop TAG: ends the loop after its current round; asserts that
# every GET it made was answered with the right bytes.
loop_stop() {
	local deadline=$((SECONDS + 30)) rounds gets
	touch "$BC_TMP/loop.stop"
	while kill -0 "$LOOP_PID" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || bc_fail "the read loop did not stop"
		sleep 0.1
	done
	wait "$LOOP_PID" || bc_fail "the read loop exited with an error"
	if [ -s "$BC_TMP/loop.err" ]; then
		head -20 "$BC_TMP/loop.err" >&2
		bc_fail "$1: some GETs failed or returned wrong bytes (above)"
	fi
	rounds=$(loop_rounds)
	gets=$(tail -1 "$BC_TMP/loop.rounds")
	bc_pass "$1: $gets GETs in $rounds rounds, every one answered with the directory's bytes"
}

# wait_stat NAME VALUE SECONDS: polls B's stats until NAME reads VALUE;
# prints the last value read.
wait_stat() {
	local deadline=$((SECONDS + $3)) v
	while :; do
		v=$(bc_stats_get "$1" "$B_URL")
		[ "$v" = "$2" ] && break
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.1
	done
	echo "$v"
}

# Redis's own counters on node N: errors of a kind sent (MOVED, ASK) and
# calls of a command (asking); 0 when none since CONFIG RESETSTAT.
redis_errorstat() {
	bc_redis_cli "$1" INFO errorstats | tr -d '\r' |
		sed -n "s/^errorstat_$2:count=\([0-9]*\).*/\1/p" | grep . || echo 0
}
redis_calls() {
	bc_redis_cli "$1" INFO commandstats | tr -d '\r' |
		sed -n "s/^cmdstat_$2:calls=\([0-9]*\).*/\1/p" | grep . || echo 0
}
resetstat_all() {
	local n v
	for n in "${CN[@]}"; do
		v=$(bc_redis_cli "$n" CONFIG RESETSTAT)
		[ "$v" = OK ] || bc_fail "CONFIG RESETSTAT on node $n: $v"
	done
}

# The slots of node N's chunk slices ("bc:c:" keys), one a line, sorted.
key_slots() {
	local k
	for k in $(bc_redis_cli "$1" --scan --pattern 'bc:c:*'); do
		bc_redis_cli "$1" CLUSTER KEYSLOT "$k"
	done | sort -n
}

total_keys() {
	local n t=0 v
	for n in "${CN[@]}"; do
		v=$(bc_redis_cli "$n" DBSIZE)
		t=$((t + v))
	done
	echo "$t"
}

# Waits (bounded) until `redis-cli --cluster check` finds every node
# agreeing on the slots, all covered, none open (migrating/importing).
wait_cluster_settled() {
	local deadline=$((SECONDS + 20)) out
	while :; do
		out=$(redis-cli --cluster check "127.0.0.1:${BC_REDIS_PORTS[${CN[0]}]}" 2>&1 || true)
		if grep -q 'All nodes agree about slots configuration' <<<"$out" &&
			grep -q 'All 16384 slots covered' <<<"$out" &&
			! grep -Eq '\[(WARNING|ERR)\]' <<<"$out"; then
			return 0
		fi
		[ "$SECONDS" -lt "$deadline" ] || { echo "$out" >&2; bc_fail "the cluster did not settle in 20 s"; }
		sleep 0.2
	done
}

# ---- (a) A fills the cluster -----------------------------------------------
# (--meta-ttl 1h: a loaded machine took past the default 60 s, and each
# revalidation is a read of the directory, which the checks count;
# --redis-timeout 10s: with the default 2 s a loaded ASan build timed
# commands out, and a tier down reads the directory)
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 1MiB \
	"${SEEDS[@]}" --redis-size 256MiB --redis-timeout 10s --meta-ttl 1h
A_PID=$BC_GW_PID A_LOG=$BC_GW_LOG A_URL=$BC_GW_URL
get_all "A, first pass" "$A_URL"
w=0
for i in $(seq 100); do   # Redis writes are queued: wait for every chunk
	w=$(bc_stats_get tiers.redis.writes "$A_URL")
	[ "$w" -ge "$CHUNKS" ] && break
	sleep 0.1
done
bc_assert_eq "$CHUNKS" "$w" "A wrote every chunk to Redis"
fails=$(bc_stats_get tiers.redis.write_failures "$A_URL")
bc_assert_eq 0 "$fails" "no Redis write failed"

# ---- (b) B reads it all from the cluster -----------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 1MiB \
	"${SEEDS[@]}" --redis-size 256MiB --redis-timeout 10s --meta-ttl 1h
B_PID=$BC_GW_PID B_LOG=$BC_GW_LOG B_URL=$BC_GW_URL
bc_stats_save "$BC_TMP/b0.json"
get_all "B, from Redis" "$B_URL"
reads=$(bc_stats_delta "$BC_TMP/b0.json" upstream_file_reads)
bc_assert_eq 0 "$reads" "B never reads the directory"
hits=$(bc_stats_delta "$BC_TMP/b0.json" tiers.redis.hits)
bc_assert_ge "$hits" "$CHUNKS" "every chunk B served came from Redis ($hits hits)"
up=$(bc_stats_get tiers.redis.up)
bc_assert_eq 1 "$up" "the Redis tier is up"
mc=$(bc_stats_get tiers.memory.chunks)
bc_assert_eq 0 "$mc" "B's memory tier holds no chunk: every read goes to Redis"
# every slice B read is there: the keys now are all there will be
dbs=()
for n in "${CN[@]}"; do
	v=$(bc_redis_cli "$n" DBSIZE)
	dbs+=("$v")
done
least=$(printf '%s\n' "${dbs[@]}" | sort -n | head -1)
bc_assert_ge "$least" 1 "the slices are spread over all three masters (keys: ${dbs[*]})"

# ---- (c) slots resharded while B reads --------------------------------------
# P: the master holding most chunk slices; Q: the next one; R: the third.
# redis-cli moves a source's slots lowest first: move as many as it takes
# to carry P's three lowest-slot slices.
P=0
for i in 1 2; do
	if [ "${dbs[$i]}" -gt "${dbs[$P]}" ]; then
		P=$i
	fi
done
Q=$(( (P + 1) % 3 )) R=$(( (P + 2) % 3 ))
P=${CN[$P]} Q=${CN[$Q]} R=${CN[$R]}
P_ID=$(bc_redis_cli "$P" CLUSTER MYID)
Q_ID=$(bc_redis_cli "$Q" CLUSTER MYID)
R_ID=$(bc_redis_cli "$R" CLUSTER MYID)
p_first=$(bc_redis_cli "$P" CLUSTER NODES | awk '/myself/ { split($9, r, "-"); print r[1] }')
key_slots "$P" >"$BC_TMP/p.slots"
third=$(sed -n 3p "$BC_TMP/p.slots")
[ -n "$third" ] || third=$(tail -1 "$BC_TMP/p.slots")
[ -n "$third" ] || bc_fail "master $P holds no chunk slice"
move=$(( third - p_first + 1 ))
moved_keys=$(awk -v hi="$third" '$1 <= hi' "$BC_TMP/p.slots" | wc -l)
wait_cluster_settled   # redis-cli refuses to reshard a cluster whose nodes disagree
keys0=$(total_keys)
q_keys0=$(bc_redis_cli "$Q" DBSIZE)
resetstat_all
bc_stats_save "$BC_TMP/c0.json"
loop_start
loop_wait_rounds 1 20
t=$SECONDS
timeout 60 redis-cli --cluster reshard "127.0.0.1:${BC_REDIS_PORTS[$P]}" \
	--cluster-from "$P_ID" --cluster-to "$Q_ID" --cluster-slots "$move" \
	--cluster-yes >"$BC_TMP/reshard.log" 2>&1 ||
	{ tail -20 "$BC_TMP/reshard.log" >&2; bc_fail "redis-cli --cluster reshard failed"; }
reshard_s=$((SECONDS - t))
r0=$(loop_rounds)
loop_wait_rounds $((r0 + 2)) 30   # a whole round began after the reshard
loop_stop "B, during and after the reshard of $move slots ($reshard_s s)"
reads=$(bc_stats_delta "$BC_TMP/c0.json" upstream_file_reads)
bc_assert_eq 0 "$reads" "B never reads the directory across the reshard"
keys1=$(total_keys)
bc_assert_eq "$keys0" "$keys1" "the cluster holds as many keys after the reshard"
q_keys1=$(bc_redis_cli "$Q" DBSIZE)
bc_assert_ge "$((q_keys1 - q_keys0))" "$moved_keys" "the reshard moved $moved_keys chunk slices (or more) to master $Q"
moved=$(redis_errorstat "$P" MOVED)
bc_assert_ge "$moved" 1 "the old owner answered B with MOVED ($moved times)"
gmoved=$(bc_stats_delta "$BC_TMP/c0.json" redis.cluster.moved)
bc_assert_ge "$gmoved" "$moved" "B's stats count the MOVED answers it followed ($gmoved)"
ask=0 asking=0
for n in "${CN[@]}"; do
	v=$(redis_errorstat "$n" ASK)
	ask=$((ask + v))
	v=$(redis_calls "$n" asking)
	asking=$((asking + v))
done
bc_log "during the reshard: $ask ASK answers, $asking ASKING commands (chance, not asserted)"
wait_cluster_settled

# ---- (d) a slot half-migrated: ASK ------------------------------------------
key_slots "$R" >"$BC_TMP/r.slots"
s=$(head -1 "$BC_TMP/r.slots")
[ -n "$s" ] || bc_fail "master $R holds no chunk slice"
mapfile -t skeys < <(bc_redis_cli "$R" CLUSTER GETKEYSINSLOT "$s" 100)
v=$(bc_redis_cli "$P" CLUSTER SETSLOT "$s" IMPORTING "$R_ID")
[ "$v" = OK ] || bc_fail "SETSLOT $s IMPORTING on $P: $v"
v=$(bc_redis_cli "$R" CLUSTER SETSLOT "$s" MIGRATING "$P_ID")
[ "$v" = OK ] || bc_fail "SETSLOT $s MIGRATING on $R: $v"
v=$(bc_redis_cli "$R" MIGRATE 127.0.0.1 "${BC_REDIS_PORTS[$P]}" "" 0 5000 KEYS "${skeys[@]}")
[ "$v" = OK ] || bc_fail "MIGRATE of slot $s's ${#skeys[@]} keys: $v"
resetstat_all
bc_stats_save "$BC_TMP/d0.json"
get_all "B, slot $s half-migrated" "$B_URL"
reads=$(bc_stats_delta "$BC_TMP/d0.json" upstream_file_reads)
bc_assert_eq 0 "$reads" "B never reads the directory while slot $s migrates"
ask=$(redis_errorstat "$R" ASK)
bc_assert_ge "$ask" 1 "the migrating master answered B with ASK ($ask times)"
asking=$(redis_calls "$P" asking)
bc_assert_ge "$asking" 1 "B sent ASKING to the importing master ($asking times)"
gask=$(bc_stats_delta "$BC_TMP/d0.json" redis.cluster.ask)
bc_assert_eq "$ask" "$gask" "B's stats count the ASK answers it followed"
for n in "$P" "$R" "$Q"; do   # the end of a slot's migration, as the reshard does it
	v=$(bc_redis_cli "$n" CLUSTER SETSLOT "$s" NODE "$P_ID")
	[ "$v" = OK ] || bc_fail "SETSLOT $s NODE on $n: $v"
done
wait_cluster_settled

# ---- (e) a master killed while B reads, then restarted ----------------------
bc_stats_save "$BC_TMP/e0.json"
loop_start
loop_wait_rounds 1 20
t=$SECONDS
bc_redis_kill "$Q"
up=$(wait_stat tiers.redis.up 0 15)
bc_assert_eq 0 "$up" "the Redis tier says down with master $Q gone"
r0=$(loop_rounds)
loop_wait_rounds $((r0 + 2)) 30   # a whole round while the tier is down
bc_redis_restart "$Q"
bc_redis_cluster_wait_ok 30
up=$(wait_stat tiers.redis.up 1 20)
bc_assert_eq 1 "$up" "the Redis tier is up again"
bc_log "master $Q killed: the tier was up again $((SECONDS - t)) s later"
r0=$(loop_rounds)
loop_wait_rounds $((r0 + 1)) 30
loop_stop "B, master $Q killed and restarted"
reads=$(bc_stats_delta "$BC_TMP/e0.json" upstream_file_reads)
bc_assert_ge "$reads" 1 "the directory answered while the tier was down ($reads reads)"
downs=$(bc_stats_delta "$BC_TMP/e0.json" tiers.redis.downs)
bc_assert_ge "$downs" 1 "the tier counted going down"
lost=0
for k in err_refused err_reset err_poll err_timeout err_other; do
	v=$(bc_stats_delta "$BC_TMP/e0.json" "redis.connections.$k")
	lost=$((lost + v))
done
bc_assert_ge "$lost" 1 "B's stats count the lost link by kind ($lost)"
rtt=$(bc_stats_get redis.rtt_us_recent "$B_URL")
bc_assert_ge "$rtt" 1 "B's stats show a Redis round trip (${rtt} us recent)"
mode=$(bc_stats_get redis.mode "$B_URL")
bc_assert_eq cluster "$mode" "B's stats say it talks to a cluster"
wait_cluster_settled
# Q came back empty: B refills what it lost, then a round comes from
# Redis alone
used=0
for i in $(seq 10); do
	bc_stats_save "$BC_TMP/e1.json"
	read_all "B, round $i after the restart" "$B_URL"
	reads=$(bc_stats_delta "$BC_TMP/e1.json" upstream_file_reads)
	hits=$(bc_stats_delta "$BC_TMP/e1.json" tiers.redis.hits)
	if [ "$reads" = 0 ] && [ "$hits" -ge "$CHUNKS" ]; then
		used=$i
		break
	fi
	sleep 0.2
done
bc_assert_ne 0 "$used" "the tier is used again: round $i after the restart had $hits Redis hits and no read of the directory"

# ---- (f) both stop cleanly -------------------------------------------------
bc_stop_gateway
BC_GW_PID=$A_PID BC_GW_LOG=$A_LOG BC_GW_URL=$A_URL
bc_stop_gateway
bc_log "took $((SECONDS - T0)) s"
bc_done 33
