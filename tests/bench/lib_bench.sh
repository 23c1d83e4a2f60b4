# lib_bench.sh — helpers shared by the benchmark scripts (sourced, bash).
# shellcheck shell=bash disable=SC2034 # sets variables its callers read

# What the integration tests' harness shares with the benchmarks: free
# ports, waiting for HTTP, stopping processes (tl_*).
# shellcheck source=tests/lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"

# bench_stop_pids PID...: TERM every process, give each 5 s to exit, then
# KILL it and reap it. Never fails (used from EXIT traps, and under set -e).
bench_stop_pids() { tl_stop_pids "$@"; }

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

# ---- shared by bench_training.sh and bench_sidecar.sh ------------------------
# The helpers below append every process they start to the caller's PIDS
# array (which its EXIT trap stops with bench_stop_pids), and name the caller
# in configs by BENCH_ME (default: the script's name).

BENCH_PY=${BENCH_PY:-/usr/bin/python3}
BENCH_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# bench_free_port: prints a loopback TCP port that was free a moment ago.
bench_free_port() { tl_free_port; }

# bench_wait_http URL PID SECONDS: until URL answers HTTP 200; non-zero when
# PID dies or SECONDS pass.
bench_wait_http() { tl_wait_http "$1" "$2" "$3" 200; }

# bench_stop_pid PID: TERM, up to 5 s, KILL, reaped; PID leaves PIDS (so
# that the exit trap never signals a recycled PID).
bench_stop_pid() {
	local p keep=()
	bench_stop_pids "$1"
	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# bench_start_nginx NAME DIR BODY_FUNC: an nginx in DIR/NAME (config, logs,
# temp dirs) with the http{} body that BODY_FUNC prints for a port ($1) and
# that dir ($2), on a free loopback port; a location /_ping in the body
# must answer 200 (BODY_FUNC's job). Sets BENCH_NG_PID, BENCH_NG_URL and
# BENCH_NG_CONF (the config file). Returns 1, its logs printed on stderr,
# when it does not start (three ports tried).
bench_start_nginx() {
	local name=$1 body=$3 d=$2/$1 pid port
	mkdir -p "$d/tmp"
	# run as root, nginx's workers drop to nobody: they must reach the dir
	chmod 755 "$2" "$d"
	for _ in 1 2 3; do
		port=$(bench_free_port)
		{
			echo "# ${BENCH_ME:-$(basename "$0")}: $name"
			echo "worker_processes auto;"
			echo "error_log $d/error.log warn;"
			echo "pid $d/nginx.pid;"
			echo "events { worker_connections 4096; }"
			echo "http {"
			echo "	default_type application/octet-stream;"
			echo "	client_body_temp_path $d/tmp/body;"
			echo "	proxy_temp_path $d/tmp/proxy;"
			echo "	fastcgi_temp_path $d/tmp/fastcgi;"
			echo "	uwsgi_temp_path $d/tmp/uwsgi;"
			echo "	scgi_temp_path $d/tmp/scgi;"
			"$body" "$port" "$d"
			echo "}"
		} >"$d/nginx.conf"
		nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >>"$d/stderr.log" 2>&1 &
		pid=$!
		if bench_wait_http "http://127.0.0.1:$port/_ping" "$pid" 10; then
			PIDS+=("$pid")
			BENCH_NG_PID=$pid
			BENCH_NG_URL=http://127.0.0.1:$port
			BENCH_NG_CONF=$d/nginx.conf
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$d/error.log" "$d/stderr.log" >&2 2>/dev/null || true
	return 1
}

# bench_static_conf PORT DIR: the http{} body of a static origin serving
# BENCH_STATIC_ROOT as BUCKET/KEY (anonymous; Range, ETag, Last-Modified
# are nginx's own), for bench_start_nginx.
bench_static_conf() {
	cat <<CONF
	access_log off;
	sendfile on;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:$1;
		root $BENCH_STATIC_ROOT;
		location = /_ping { return 200 "ok\n"; }
	}
CONF
}

# bench_start_delay_proxy UPSTREAM_URL DIR [FLAGS...]: training/delay_proxy.py
# in front of UPSTREAM_URL with FLAGS (--delay-ms 20; --s3: the S3-shaped
# origin), its port file and log in DIR. Sets BENCH_PROXY_PID,
# BENCH_PROXY_URL and BENCH_PROXY_LOG. Returns 1, its log printed, when it
# does not answer.
bench_start_delay_proxy() {
	local up=$1 d=$2 pid
	shift 2
	rm -f "$d/proxy.port"
	BENCH_PROXY_LOG=$d/delay_proxy.log
	"$BENCH_PY" "$BENCH_LIB_DIR/training/delay_proxy.py" --upstream "$up" \
	    --port-file "$d/proxy.port" "$@" >"$BENCH_PROXY_LOG" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 100); do
		[ -s "$d/proxy.port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$d/proxy.port" ] ||
	    ! bench_wait_http "http://127.0.0.1:$(cat "$d/proxy.port")/_delayproxy/stats" "$pid" 10; then
		cat "$BENCH_PROXY_LOG" >&2
		return 1
	fi
	BENCH_PROXY_PID=$pid
	BENCH_PROXY_URL=http://127.0.0.1:$(cat "$d/proxy.port")
}

# bench_cpu_model: the CPU's model name.
bench_cpu_model() {
	local m
	m=$(LC_ALL=C lscpu 2>/dev/null | awk -F: '/^Model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }')
	[ -n "$m" ] || m=$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' /proc/cpuinfo 2>/dev/null)
	printf '%s' "${m:-unknown}"
}

# bench_load: the load average (1, 5, 15 min).
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench_machine: one line: nproc, CPU, memory, kernel, load average now.
bench_machine() {
	printf 'nproc %s, %s, memory %s, %s; load average %s\n' "$(nproc)" "$(bench_cpu_model)" \
	    "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)" \
	    "$(uname -sr)" "$(bench_load)"
}

# bench_git_rev SRCDIR: the short HEAD, the last commit that changed src/
# (what a build of the tree runs), "+ uncommitted changes in src/" when src/
# differs from HEAD.
bench_git_rev() {
	local r s
	r=$(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo '?')
	s=$(git -C "$1" log -1 --format=%h -- src 2>/dev/null || true)
	[ -z "$s" ] || [ "$s" = "$r" ] || r="$r (src/ as of $s)"
	if [ -n "$(git -C "$1" status --porcelain --untracked-files=no -- src 2>/dev/null | head -n 1)" ]; then
		r="$r + uncommitted changes in src/"
	fi
	printf '%s' "$r"
}
