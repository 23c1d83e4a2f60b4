# lib_bench.sh — helpers shared by the benchmark scripts (sourced, bash).

# bench_stop_pids PID...: TERM every process, give each 5 s to exit, then
# KILL it and reap it. Never fails (used from EXIT traps).
bench_stop_pids() {
	local pid _
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	return 0
}

# bench_default_bin SRCDIR GIVEN: when GIVEN is empty (the caller's BC_BIN
# was not set) and SRCDIR/build/bucketcache does not exist yet (a fresh
# clone), builds it with contrib/build, so that every benchmark runs from a
# clone with one command. Returns non-zero when that build fails. A BC_BIN
# given by the caller is never built.
bench_default_bin() {
	[ -n "$2" ] && return 0
	[ -x "$1/build/bucketcache" ] && return 0
	echo "# building $1/build/bucketcache (contrib/build)" >&2
	"$1/contrib/build" >&2
}
