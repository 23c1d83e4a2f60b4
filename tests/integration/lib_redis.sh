# lib_redis.sh — real Redis servers for the integration tests (sourced
# after lib.sh, bash only).
#
# Each redis-server runs in the foreground as a child of the test, on a
# free loopback port, in its own directory under BC_TMP, without
# persistence (--save '' --appendonly no), logging to BC_TMP/redis-N.log.
# Its pid is in lib.sh's BC_PIDS, so lib.sh's EXIT cleanup stops it (TERM,
# then KILL) and reaps it, whatever the test's exit status; its log is
# shown when the test fails.
#
# Servers are numbered from 0 in the order they start (N below):
#   bc_start_redis [ARGS...]      a standalone server (ARGS go to
#                                 redis-server); sets BC_REDIS_N,
#                                 BC_REDIS_PORT, BC_REDIS_URL
#   bc_start_redis_cluster        three masters (--cluster-enabled yes)
#                                 joined by `redis-cli --cluster create`,
#                                 all 16384 slots assigned, cluster_state:ok
#                                 on each; sets BC_REDIS_CLUSTER_NODES (an
#                                 array of N), BC_REDIS_CLUSTER_PORTS and
#                                 BC_REDIS_CLUSTER_URLS ("redis://... ..."
#                                 in one string, one URL per seed)
#   bc_redis_cli N ARGS...        redis-cli against server N (ARGS may
#                                 start with -c for cluster mode)
#   bc_redis_kill N [SIGNAL]      kills server N (default KILL: a crash)
#                                 and waits until it is gone
#   bc_redis_restart N            starts server N again: same port,
#                                 directory and options (a cluster node
#                                 keeps its nodes.conf, hence its slots;
#                                 the data is gone)
#   bc_redis_cluster_wait_ok      waits until every node of the cluster
#                                 says cluster_state:ok
# Each fails the test (bc_fail) when a server does not come up. A test
# using them calls bc_skip_unless_tool redis-server redis-cli first.

BC_REDIS_PORTS=()
BC_REDIS_BUSPORTS=()
BC_REDIS_PIDS=()
BC_REDIS_ARGS=()
BC_REDIS_CLUSTER_NODES=()
BC_REDIS_CLUSTER_PORTS=()

# bc__alive PID: the process runs (a zombie does not count).
bc__alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null || true)
	[ -n "$st" ] || return 1
	st=${st##*) }
	[ "${st:0:1}" != Z ]
}

# bc__redis_launch N [SOFT]: starts server N from its recorded port,
# directory and options; waits (10 s) for PING to answer. With SOFT, a
# server that found its port taken returns 2 instead of failing the test.
bc__redis_launch() {
	local n=$1 soft=${2:-} dir=$BC_TMP/redis-$1 log=$BC_TMP/redis-$1.log
	local pid i
	local -a extra
	read -r -a extra <<<"${BC_REDIS_ARGS[$n]}"
	mkdir -p "$dir"
	redis-server --port "${BC_REDIS_PORTS[$n]}" --bind 127.0.0.1 \
		--dir "$dir" --save '' --appendonly no --daemonize no \
		--logfile '' "${extra[@]}" >>"$log" 2>&1 &
	pid=$!
	BC_PIDS+=("$pid")
	BC_REDIS_PIDS[$n]=$pid
	for i in $(seq 100); do
		if ! bc__alive "$pid"; then
			wait "$pid" 2>/dev/null || true
			if [ -n "$soft" ] && grep -q 'Address already in use' "$log"; then
				return 2
			fi
			cat "$log" >&2
			bc_fail "redis-server $n died at start"
		fi
		if [ "$(bc_redis_cli "$n" PING 2>/dev/null || true)" = PONG ]; then
			return 0
		fi
		sleep 0.1
	done
	cat "$log" >&2
	bc_fail "redis-server $n does not answer PING on port ${BC_REDIS_PORTS[$n]}"
}

# bc__redis_new ARGS...: records and starts a new server on fresh ports
# (its port, and one for a cluster bus); sets BC_REDIS_N. ARGS may name
# the bus port as @BUSPORT@.
bc__redis_new() {
	local n=${#BC_REDIS_PORTS[@]} try rc p q
	BC_LOGS+=("$BC_TMP/redis-$n.log")
	for try in 1 2 3; do
		p=$(bc_free_port)
		q=$(bc_free_port)
		[ "$p" != "$q" ] || q=$(bc_free_port)
		BC_REDIS_PORTS[$n]=$p
		BC_REDIS_BUSPORTS[$n]=$q
		BC_REDIS_ARGS[$n]=$(printf '%s ' "$@" | sed "s/@BUSPORT@/$q/g")
		rc=0
		bc__redis_launch "$n" soft || rc=$?
		if [ "$rc" = 0 ]; then
			BC_REDIS_N=$n
			return 0
		fi
		echo "# redis-server $n: port $p or $q taken, trying others" >>"$BC_TMP/redis-$n.log"
	done
	cat "$BC_TMP/redis-$n.log" >&2
	bc_fail "redis-server $n found no free port"
}

bc_redis_cli() {
	local n=$1
	shift
	redis-cli -h 127.0.0.1 -p "${BC_REDIS_PORTS[$n]}" "$@"
}

bc_start_redis() {
	bc__redis_new "$@"
	BC_REDIS_PORT=${BC_REDIS_PORTS[$BC_REDIS_N]}
	BC_REDIS_URL=redis://127.0.0.1:$BC_REDIS_PORT
}

bc_redis_kill() {
	local n=$1 sig=${2:-KILL} pid=${BC_REDIS_PIDS[$1]} i
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		bc__alive "$pid" || break
		sleep 0.1
	done
	if bc__alive "$pid"; then
		bc_fail "redis-server $n (pid $pid) survived SIG$sig"
	fi
	wait "$pid" 2>/dev/null || true
}

bc_redis_restart() {
	bc__redis_launch "$1"
}

# bc_redis_cluster_wait_ok [SECONDS]: every node says cluster_state:ok and
# knows all 16384 slots assigned.
bc_redis_cluster_wait_ok() {
	local secs=${1:-20} i n ok info
	for i in $(seq $((secs * 10))); do
		ok=1
		for n in "${BC_REDIS_CLUSTER_NODES[@]}"; do
			info=$(bc_redis_cli "$n" CLUSTER INFO 2>/dev/null | tr -d '\r' || true)
			if ! grep -qx 'cluster_state:ok' <<<"$info" ||
				! grep -qx 'cluster_slots_assigned:16384' <<<"$info"; then
				ok=0
				break
			fi
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	for n in "${BC_REDIS_CLUSTER_NODES[@]}"; do
		bc_redis_cli "$n" CLUSTER INFO >&2 || true
	done
	bc_fail "the Redis cluster did not reach cluster_state:ok in $secs s"
}

bc_start_redis_cluster() {
	local i log=$BC_TMP/redis-cluster-create.log
	local -a addrs=()
	BC_REDIS_CLUSTER_NODES=()
	BC_REDIS_CLUSTER_PORTS=()
	BC_REDIS_CLUSTER_URLS=
	for i in 1 2 3; do
		bc__redis_new --cluster-enabled yes --cluster-config-file nodes.conf \
			--cluster-port @BUSPORT@ --cluster-node-timeout 2000
		BC_REDIS_CLUSTER_NODES+=("$BC_REDIS_N")
		BC_REDIS_CLUSTER_PORTS+=("${BC_REDIS_PORTS[$BC_REDIS_N]}")
		addrs+=("127.0.0.1:${BC_REDIS_PORTS[$BC_REDIS_N]}")
		BC_REDIS_CLUSTER_URLS="${BC_REDIS_CLUSTER_URLS:+$BC_REDIS_CLUSTER_URLS }redis://127.0.0.1:${BC_REDIS_PORTS[$BC_REDIS_N]}"
	done
	BC_LOGS+=("$log")
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 \
		--cluster-yes >>"$log" 2>&1 ||
		{ cat "$log" >&2; bc_fail "redis-cli --cluster create failed"; }
	bc_redis_cluster_wait_ok 20
}
