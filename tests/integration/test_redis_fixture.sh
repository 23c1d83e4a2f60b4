#!/bin/bash
# test_redis_fixture.sh — the Redis fixture of the integration tests
# (lib_redis.sh), which the Redis tier's tests stand on:
#   (a) a standalone redis-server on a free loopback port, without
#       persistence, in the test's directory: SET then GET;
#   (b) killed (SIGKILL), it is gone and its port refuses; restarted, it
#       answers on the same port, empty;
#   (c) a cluster of 3 masters made by `redis-cli --cluster create`: each
#       node says cluster_state:ok, CLUSTER NODES shows 3 masters owning
#       all 16384 slots between them, each some; 200 keys written through
#       one node with `redis-cli -c` are read back through another and
#       land on every master; a master killed and restarted keeps its
#       slots (nodes.conf) and the cluster is ok again;
#   (d) cleanup: a script using the fixture leaves no redis-server and no
#       directory behind, whether it passes or fails.
# one build: it runs no gateway; the fixture is the same in every build
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_skip_unless_tool redis-server redis-cli "$BC_PY"

# ---- (a) standalone --------------------------------------------------------
bc_start_redis
S=$BC_REDIS_N
bc_assert_match '^redis://127\.0\.0\.1:[0-9]+$' "$BC_REDIS_URL" "BC_REDIS_URL is set"
v=$(bc_redis_cli "$S" SET greeting "hello redis")
bc_assert_eq OK "$v" "SET on the standalone server"
v=$(bc_redis_cli "$S" GET greeting)
bc_assert_eq "hello redis" "$v" "GET reads it back"
v=$(bc_redis_cli "$S" CONFIG GET save | sed -n 2p)
bc_assert_eq "" "$v" "no RDB snapshots (--save '')"
v=$(bc_redis_cli "$S" CONFIG GET appendonly | sed -n 2p)
bc_assert_eq no "$v" "no AOF"
v=$(bc_redis_cli "$S" CONFIG GET dir | sed -n 2p)
bc_assert_eq "$BC_TMP/redis-$S" "$v" "its directory is the test's"
v=$(bc_redis_cli "$S" CONFIG GET bind | sed -n 2p)
bc_assert_eq 127.0.0.1 "$v" "it listens on loopback only"

# ---- (b) kill and restart ---------------------------------------------------
pid=${BC_REDIS_PIDS[$S]}
bc_redis_kill "$S"
alive=yes
bc__alive "$pid" || alive=no
bc_assert_eq no "$alive" "SIGKILL: the server is gone"
v=$(bc_redis_cli "$S" PING 2>&1 || true)
bc_assert_match 'Could not connect|Connection refused' "$v" "its port refuses"
bc_redis_restart "$S"
bc_assert_ne "$pid" "${BC_REDIS_PIDS[$S]}" "restarted as a new process"
v=$(bc_redis_cli "$S" PING)
bc_assert_eq PONG "$v" "restarted on the same port $BC_REDIS_PORT"
v=$(bc_redis_cli "$S" DBSIZE)
bc_assert_eq 0 "$v" "restarted empty (no persistence)"
bc_redis_kill "$S" TERM
alive=yes
bc__alive "${BC_REDIS_PIDS[$S]}" || alive=no
bc_assert_eq no "$alive" "SIGTERM stops it too"

# ---- (c) cluster -------------------------------------------------------------
bc_start_redis_cluster
bc_assert_eq 3 "${#BC_REDIS_CLUSTER_NODES[@]}" "three nodes"
n=$(wc -w <<<"$BC_REDIS_CLUSTER_URLS")
bc_assert_eq 3 "$n" "BC_REDIS_CLUSTER_URLS names three seeds"
for c in "${BC_REDIS_CLUSTER_NODES[@]}"; do
	v=$(bc_redis_cli "$c" CLUSTER INFO | tr -d '\r' | sed -n 's/^cluster_state://p')
	bc_assert_eq ok "$v" "node $c: cluster_state:ok"
done

# CLUSTER NODES as seen by node N: "masters slots-covered masters-with-slots"
cluster_summary() {
	bc_redis_cli "$1" CLUSTER NODES | awk '
		$3 ~ /master/ {
			m++; own = 0
			for (i = 9; i <= NF; i++) {
				if ($i ~ /^\[/) continue
				n = split($i, r, "-")
				own += (n == 2 ? r[2] - r[1] + 1 : 1)
			}
			slots += own; if (own > 0) withslots++
		}
		END { print m + 0, slots + 0, withslots + 0 }'
}
v=$(cluster_summary "${BC_REDIS_CLUSTER_NODES[0]}")
bc_assert_eq "3 16384 3" "$v" "3 masters own all 16384 slots, each some"
v=$(redis-cli --cluster check "127.0.0.1:${BC_REDIS_CLUSTER_PORTS[1]}" | tr -d '\r')
bc_assert_match 'All 16384 slots covered' "$v" "redis-cli --cluster check agrees"

c0=${BC_REDIS_CLUSTER_NODES[0]}
c2=${BC_REDIS_CLUSTER_NODES[2]}
for i in $(seq 200); do
	r=$(bc_redis_cli "$c0" -c SET "key:$i" "value:$i")
	[ "$r" = OK ] || bc_fail "SET key:$i through node $c0: [$r]"
done
bc_pass "200 keys written through node $c0 with redis-cli -c"
bad=0
for i in $(seq 200); do
	r=$(bc_redis_cli "$c2" -c GET "key:$i")
	[ "$r" = "value:$i" ] || bad=$((bad + 1))
done
bc_assert_eq 0 "$bad" "all 200 read back through node $c2"
for c in "${BC_REDIS_CLUSTER_NODES[@]}"; do
	v=$(bc_redis_cli "$c" DBSIZE)
	bc_assert_ge "$v" 20 "node $c holds its share of the keys ($v)"
done

c1=${BC_REDIS_CLUSTER_NODES[1]}
before=$(bc_redis_cli "$c1" CLUSTER MYID)
bc_redis_kill "$c1"
v=$(bc_redis_cli "$c1" PING 2>&1 || true)
bc_assert_match 'Could not connect|Connection refused' "$v" "cluster node $c1 killed"
bc_redis_restart "$c1"
bc_redis_cluster_wait_ok 30
v=$(bc_redis_cli "$c1" CLUSTER MYID)
bc_assert_eq "$before" "$v" "node $c1 restarted as the same node (nodes.conf)"
v=$(cluster_summary "$c1")
bc_assert_eq "3 16384 3" "$v" "after the restart: 3 masters, all slots"
r=$(bc_redis_cli "$c0" -c SET after-restart yes)
v=$(bc_redis_cli "$c1" -c GET after-restart)
bc_assert_eq yes "$v" "the cluster serves again"

# ---- (d) cleanup -------------------------------------------------------------
# A script using the fixture records its servers and temp dir, then ends;
# PASS or FAIL, none of them may be left.
nested_run() {   # WHAT(pass|fail) -> BC_TMP/nested-WHAT.{pids,tmp,out}
	local what=$1 script=$BC_TMP/nested_$1.sh
	cat >"$script" <<EOF
#!/bin/bash
set -euo pipefail
. "$BC_IT_DIR/lib.sh"
. "$BC_IT_DIR/lib_redis.sh"
bc_start_redis
bc_start_redis_cluster
printf '%s\n' "\${BC_REDIS_PIDS[@]}" >"$BC_TMP/nested-$what.pids"
printf '%s\n' "\${BC_REDIS_PORTS[@]}" >"$BC_TMP/nested-$what.ports"
echo "\$BC_TMP" >"$BC_TMP/nested-$what.tmp"
[ "$what" = pass ] || bc_fail "failing on purpose"
bc_done 0
EOF
	rc=0
	BC_TEST_TIMEOUT=60 bash "$script" >"$BC_TMP/nested-$what.out" 2>&1 || rc=$?
}
for what in pass fail; do
	nested_run "$what"
	if [ "$what" = pass ]; then
		bc_assert_eq 0 "$rc" "the nested script that passes exits 0"
	else
		bc_assert_eq 1 "$rc" "the nested script that fails exits 1"
	fi
	n=$(wc -l <"$BC_TMP/nested-$what.pids")
	bc_assert_eq 4 "$n" "it started 4 servers ($what)"
	left=0
	while read -r p; do
		if bc__alive "$p"; then
			left=$((left + 1))
		fi
	done <"$BC_TMP/nested-$what.pids"
	bc_assert_eq 0 "$left" "no redis-server of it is left ($what)"
	open=0
	while read -r port; do
		r=$(redis-cli -h 127.0.0.1 -p "$port" PING 2>/dev/null || true)
		if [ "$r" = PONG ]; then
			open=$((open + 1))
		fi
	done <"$BC_TMP/nested-$what.ports"
	bc_assert_eq 0 "$open" "none of its ports answers ($what)"
	d=$(cat "$BC_TMP/nested-$what.tmp")
	gone=yes
	if [ -e "$d" ]; then
		gone=no
	fi
	bc_assert_eq yes "$gone" "its temp dir is removed ($what)"
done

bc_done 39
