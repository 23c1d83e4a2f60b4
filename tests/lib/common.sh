# tests/lib/common.sh — what the integration tests' harness
# shellcheck shell=bash
# (tests/integration/lib.sh) and the benchmarks' (tests/bench/lib_bench.sh)
# share: free loopback ports, waiting for a server's HTTP answer, stopping
# processes. Sourced (bash); defines functions only (tl_ prefix), sets no
# shell options, and returns status codes: the callers decide what a
# failure means (a test fails, a benchmark dies).

# tl_free_port: prints a loopback TCP port that was free a moment ago (the
# kernel's pick; the caller retries when another process takes it first).
tl_free_port() {
	/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# tl_wait_http URL PID SECONDS [any|200]: until URL answers, with any HTTP
# status (any, the default) or with 200; non-zero when PID dies first or
# SECONDS pass. Polls every 0.1 s, each try at most 2 s; while an
# http://HOST:PORT URL's port is closed, by a connect from bash, not a
# curl (a curl start is 24 ms of CPU here, a subshell's connect 2); the
# request itself by TL_TQ (tests/lib/tq http) when set, else by curl.
tl_wait_http() {
	local url=$1 pid=$2 secs=$3 want=${4:-any} code hp
	hp=${url#http://}
	hp=${hp%%/*}
	[ "$hp" != "${url%%/*}" ] && [[ $hp == *:* ]] || hp=
	for _ in $(seq $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || return 1
		if [ -n "$hp" ] && ! (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null; then
			sleep 0.1
			continue
		fi
		if [ -x "${TL_TQ:-}" ]; then
			code=$("$TL_TQ" http -m 2 -w "$url" 2>/dev/null) || true
		else
			code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null) || true
		fi
		if [ "$want" = 200 ]; then
			[ "$code" = 200 ] && return 0
		elif [ -n "$code" ] && [ "$code" != 000 ]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# tl_stop_pids PID...: TERM each, up to 5 s each to exit, then KILL, and
# reap it (when it is this shell's child). Never fails (EXIT traps and
# set -e callers use it).
tl_stop_pids() {
	local pid _
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "$@"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	return 0
}

# tl_node_legacy: prints --openssl-legacy-provider when node needs it for
# DES (s3rver encrypts ListObjectsV2 continuation tokens with DES, which
# OpenSSL 3 only has in its legacy provider). The probe (a node start:
# 1.6 s on a loaded machine) is remembered per node binary.
tl_node_legacy() {
	local node id cache=${TMPDIR:-/tmp}/bc-node-legacy.$(id -u) line
	node=$(command -v node)
	id=$(stat -L -c '%n %s %Y %i' "$node")
	if [ -f "$cache" ] && IFS= read -r line <"$cache" && [ "${line% *}" = "$id" ]; then
		[ "${line##* }" = yes ] && echo --openssl-legacy-provider
		return 0
	fi
	if node --openssl-legacy-provider -e \
		"require('crypto').createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8))" \
		>/dev/null 2>&1; then
		line=yes
		echo --openssl-legacy-provider
	else
		line=no
	fi
	printf '%s %s\n' "$id" "$line" >"$cache.$$" && mv -f "$cache.$$" "$cache" || true
}
