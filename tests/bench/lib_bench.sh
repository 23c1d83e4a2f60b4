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
