# lib.sh — shared harness of the integration tests (sourced, bash only).
#
# Starts real servers on free loopback ports — s3rver (the upstream S3),
# fixture/verify_proxy.py (a SigV4-verifying front for s3rver) and the
# bucketcache daemon; or, for the scripts that take either upstream
# (bc_start_upstream, BC_UPSTREAM=rgw), Ceph's RGW (lib_rgw.sh) behind the
# fixture in --transparent mode — and kills every process it started
# (after its cleanup hooks, BC_CLEANUP_HOOKS) and removes its
# temporary directory on EXIT, whatever the exit status. Also: assertion
# helpers, an S3 request helper around curl, readers of the gateway's and
# the fixture's stats.
#
# Environment (make check exports these): BC_BIN (the daemon), BC_SRCDIR,
# BC_BUILDDIR. BC_KEEP_TMP=1 keeps the temp dir; BC_TEST_TIMEOUT (seconds,
# default 600) bounds a whole test.
#
# Exit codes: 0 pass, 1 fail, 77 skip (a tool is missing).
#
# Failing is not optional (the suite once passed a script whose last checks
# never ran):
#   * errexit reaches everywhere: set -eEuo pipefail, inherit_errexit (a
#     failing command inside $( ) fails the assignment, hence the script),
#     and an ERR trap that names the failed command and line;
#   * assertions (bc_pass/bc_fail and every bc_assert_*/bc_expect built on
#     them) run in the main shell only: one reached from a subshell or a
#     command substitution (whose count or exit would be lost) kills the
#     whole test; and the script is linted at start-up for assertions whose
#     arguments contain a command substitution (read values into a variable
#     first: `v=$(bc_stats_get x)` fails the script if the read fails,
#     `bc_assert_eq 0 "$(bc_stats_get x)"` would not);
#   * every script ends with `bc_done N`: exactly N checks ran. A script
#     that exits 0 without reaching bc_done, or with another count, fails;
#   * Python check blocks run through bc_py (fixture/itlib.py: ok(),
#     done()) and report how many checks they ran; their boto3 clients make
#     exactly one attempt (botocore's retries={"max_attempts": 1} is one
#     RETRY, which once hid a failed request).

set -eEuo pipefail
shopt -s inherit_errexit

BC_IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$BC_IT_DIR/../lib/common.sh"
BC_SRCDIR=${BC_SRCDIR:-$(cd "$BC_IT_DIR/../.." && pwd)}
BC_BUILDDIR=${BC_BUILDDIR:-$BC_SRCDIR/build}
BC_BIN=${BC_BIN:-$BC_BUILDDIR/bucketcache}
BC_PY=/usr/bin/python3
BC_PY_REAL=/usr/bin/python3
BC_AWS_BIN=/usr/bin/aws
BC_NAME=$(basename "$0" .sh)
BC_CHECKS=0
BC_DONE=0
BC_MAIN_PID=$$
BC_PIDS=()
BC_LOGS=()
# Functions cleanup runs first, before it kills BC_PIDS (a fixture whose
# processes must stop in an order: lib_rgw.sh).
BC_CLEANUP_HOOKS=()
# The S3 upstream of tests that take either (bc_start_upstream): s3rver
# (default) or rgw. A test_rgw_*.sh wrapper sets it and sources the test.
export BC_UPSTREAM=${BC_UPSTREAM:-s3rver}

BC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bc-$BC_NAME.XXXXXX")

# Python runs fork from a server that has json, boto3 and botocore
# imported (tests/lib/pyfork.py: what a run sees is what python3 gives
# it). A run that makes a boto3 client costs 0.2 s of CPU so, against
# 0.6 s in a fresh python3; a trivial one costs the same either way, and
# the server's start 0.5 s. tests/run starts one boto3 server and one
# aws-cli server for the whole run and names their directory in
# BC_PYFORK_DIR (boto3.sock, aws.sock). A script run alone starts its
# own, where it pays: the boto3 one for scripts that use boto3 (by name,
# or through bc_py's itlib or fixture/s3req.py; an RGW wrapper is read
# with the script it sources), the aws-cli one in bc_skip_unless_tool
# "$BC_AWS_BIN". "$BC_PY" is the client, which runs python3 itself until
# the server is up, or when there is none. The verifying fixture runs on
# it too (its botocore imports are a second of CPU in a fresh python3);
# a test that stops it with SIGSTOP sets BC_FIXTURE_PY=$BC_PY_REAL (the
# signal would stop the client, not the run). BC_NO_PYFORK=1: no server.
BC_PYFORK=$BC_BUILDDIR/tests/lib/pyfork
# tests/lib/tq: the small readers (stats and JSON values, an S3 error's
# Code), mkfile's content and free ports, in C: each was a python3 start
# (40-50 ms of CPU here, ~3,500 a run) for microseconds of work.
BC_TQ=$BC_BUILDDIR/tests/lib/tq
TL_TQ=$BC_TQ     # tl_wait_http polls with it (tests/lib/common.sh)
BC__AWS_SOCK=
# bc__pyfork_start --boto3|--aws SOCKET: starts a fork server in the
# background (it binds SOCKET once its imports are done).
bc__pyfork_start() {
	"$BC_PY_REAL" "$BC_IT_DIR/../lib/pyfork.py" "$1" "$2" </dev/null \
		>>"$BC_TMP/pyfork.log" 2>&1 &
	BC_PIDS+=($!)
}
bc__uses_boto3() {
	local f=$0 inc
	inc=$(sed -n 's|^\. "\$(dirname "\$0")/\(test_[A-Za-z0-9_]*\.sh\)"$|\1|p' "$f")
	grep -qE 'boto3|bc_py |itlib|s3req\.py' "$f" ${inc:+"$BC_IT_DIR/$inc"}
}
if [ -x "$BC_PYFORK" ] && [ "${BC_NO_PYFORK:-0}" != 1 ]; then
	export BC_PYFORK_PYTHON=$BC_PY_REAL
	BC_PY=$BC_PYFORK
	if [ -n "${BC_PYFORK_DIR:-}" ]; then
		export BC_PYFORK_SOCK=$BC_PYFORK_DIR/boto3.sock
		BC__AWS_SOCK=$BC_PYFORK_DIR/aws.sock
	else
		export BC_PYFORK_SOCK=$BC_TMP/pyfork.sock
		if bc__uses_boto3; then
			bc__pyfork_start --boto3 "$BC_PYFORK_SOCK"
		fi
	fi
fi

# Clients sign with the upstream pair unless a test says otherwise; s3rver
# knows only S3RVER/S3RVER.
export AWS_ACCESS_KEY_ID=S3RVER
export AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_DEFAULT_PROFILE || true
export AWS_DEFAULT_REGION=us-east-1
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
export AWS_PAGER=""
export AWS_MAX_ATTEMPTS=1          # a client retry must not hide a gateway error
export AWS_RETRY_MODE=standard
export AWS_CONFIG_FILE=$BC_TMP/aws-config
export AWS_SHARED_CREDENTIALS_FILE=$BC_TMP/aws-credentials
cat >"$AWS_CONFIG_FILE" <<'EOF'
[default]
region = us-east-1
output = json
s3 =
    addressing_style = path
EOF
: >"$AWS_SHARED_CREDENTIALS_FILE"

bc_log() { printf '# %s\n' "$*" >&2; }

bc__cleanup() {
	local rc=$? pid i
	# A late signal must not cut the cleanup short (a subshell's failed
	# assertion TERMs the main shell; with the default action it died
	# here, leaving its servers running).
	trap - EXIT ERR
	trap '' INT TERM HUP PIPE
	set +e
	if [ -s "$BC_TMP/.failed" ]; then
		cat "$BC_TMP/.failed" >&2
		[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || rc=1
	fi
	if [ "$rc" -eq 0 ] && [ "$BC_DONE" != 1 ]; then
		echo "FAIL: $BC_NAME: the script ended before bc_done (after $BC_CHECKS checks)" >&2
		rc=1
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for i in "${BC_LOGS[@]}"; do
			[ -s "$i" ] || continue
			printf '\n===== %s (last 60 lines) =====\n' "$i" >&2
			tail -n 60 "$i" >&2
		done
	fi
	for i in "${BC_CLEANUP_HOOKS[@]}"; do
		"$i"
	done
	tl_stop_pids "${BC_PIDS[@]}"
	# Anything left that names this test's temp dir (a gateway started
	# where its pid was not recorded; test_disk_tier's outlived a timed-out
	# run) goes too.
	if pkill -TERM -f -- "$BC_TMP/" 2>/dev/null; then
		# up to 1 s for them to go, then KILL (a poll, not a fixed wait)
		for i in $(seq 20); do
			pgrep -f -- "$BC_TMP/" >/dev/null 2>&1 || break
			sleep 0.05
		done
		pkill -KILL -f -- "$BC_TMP/" 2>/dev/null
	fi
	if [ "${BC_KEEP_TMP:-0}" = 1 ]; then
		echo "# kept $BC_TMP" >&2
	else
		rm -rf "$BC_TMP"
	fi
	if [ "$rc" -eq 0 ]; then
		echo "PASS: $BC_NAME ($BC_CHECKS checks)"
	elif [ "$rc" -eq 77 ]; then
		echo "SKIP: $BC_NAME"
	else
		echo "FAIL: $BC_NAME (exit $rc after $BC_CHECKS checks)"
	fi
	exit "$rc"
}
trap bc__cleanup EXIT
trap 'bc_log "interrupted (or an assertion failed in a subshell)"; exit 1' INT TERM HUP PIPE

# A command that fails where errexit applies: name it, then exit 1 (from a
# command substitution, the assignment then fails the script in turn).
bc__on_err() {
	local rc=$1 line=$2 cmd=$3
	echo "FAIL: $BC_NAME: command exited $rc at $line: $cmd" >&2
	exit 1
}
trap 'bc__on_err $? "${BASH_SOURCE[0]##*/}:$LINENO" "$BASH_COMMAND"' ERR

# The whole test is bounded: a hung daemon must not hang make check. The
# watchdog kills its own sleep when it is stopped, so nothing outlives us.
# 600 s by default: a script that takes 60 s alone took 180 s beside the
# whole suite (tests/run runs both builds' tests at once); tests/run's own
# limit is 900 s.
(
	trap 'kill "$sp" 2>/dev/null; exit 0' TERM
	sleep "${BC_TEST_TIMEOUT:-600}" &
	sp=$!
	wait "$sp"
	echo "# $BC_NAME: timed out after ${BC_TEST_TIMEOUT:-600} s" >&2
	kill -TERM $$
) 2>&1 &
BC_PIDS+=($!)

# ---- assertions ------------------------------------------------------------

# Outside the main shell (a subshell, a command substitution, a pipeline
# stage) an exit or a count would be lost: record why, stop the main shell
# (its TERM trap exits 1) and exit.
bc__abort() {
	if [ "$BASHPID" != "$BC_MAIN_PID" ]; then
		printf 'FAIL: %s: %s\n' "$BC_NAME" "$*" >>"$BC_TMP/.failed"
		kill -TERM "$BC_MAIN_PID" 2>/dev/null || true
	fi
	exit 1
}

bc_fail() {
	echo "FAIL: $BC_NAME: $*" >&2
	bc__abort "$*"
}

bc_pass() {
	if [ "$BASHPID" != "$BC_MAIN_PID" ]; then
		echo "FAIL: $BC_NAME: check [$*] ran in a subshell (its count would be lost)" >&2
		bc__abort "check [$*] ran in a subshell"
	fi
	BC_CHECKS=$((BC_CHECKS + 1))
	echo "ok $BC_CHECKS - $*"
}

# bc_add_checks N: N checks that a helper program (a Python block printing
# "ok N - ...") ran and passed.
bc_add_checks() {
	[[ $1 =~ ^[0-9]+$ ]] || bc_fail "bc_add_checks: not a count: [$1]"
	[ "$BASHPID" = "$BC_MAIN_PID" ] || bc_fail "bc_add_checks in a subshell"
	BC_CHECKS=$((BC_CHECKS + $1))
}

# bc_py ARGS... <<'EOF' ... EOF: runs a Python check block (stdin) with
# fixture/ on its path (import itlib: ok(), done()). It must exit 0 and
# end with itlib.done(); its checks are added to BC_CHECKS.
bc_py() {
	local cf=$BC_TMP/py.checks n
	rm -f "$cf"
	BC_PY_CHECKS=$cf PYTHONPATH=$BC_IT_DIR/fixture "$BC_PY" - "$@" ||
		bc_fail "Python check block failed"
	[ -s "$cf" ] || bc_fail "Python check block ended without itlib.done()"
	n=$(cat "$cf")
	bc_add_checks "$n"
}

# bc_done N: the last line of every test. Exactly N checks must have run;
# cleanup fails a script that exits 0 without getting here.
bc_done() {
	[ "$BASHPID" = "$BC_MAIN_PID" ] || bc_fail "bc_done in a subshell"
	if [ "$BC_CHECKS" != "$1" ]; then
		bc_fail "$BC_CHECKS checks ran, the script plans $1"
	fi
	BC_DONE=1
	echo "# all $1 checks ran"
}

# Lint of the test script: an assertion whose arguments hold a command
# substitution hides the substitution's failure (bc_assert_eq 0 "$(x)"
# passes when x dies printing nothing). Continuation lines are joined.
bc__lint() {
	local bad
	bad=$(awk '
		{ line = (cont ? line " " : "") $0; if (!cont) start = NR }
		/\\$/ { cont = 1; sub(/\\$/, "", line); next }
		{ cont = 0 }
		line ~ /^[ \t]*#/ { next }
		line ~ /(^|[ \t;&|({])bc_(assert_[a-z_]+|pass)[ \t][^#]*\$\([^(]/ { print FILENAME ":" start ": " line }
		line ~ /\$\([ \t]*bc_(assert_[a-z_]+|pass|fail|expect|done|add_checks)([ \t]|\))/ { print FILENAME ":" start ": " line }
	' "$0")
	if [ -n "$bad" ]; then
		printf '%s\n' "$bad" >&2
		echo "FAIL: $BC_NAME: assertions must not take or sit in command substitutions (see above)" >&2
		exit 1
	fi
}
bc__lint

# bc_assert_eq EXPECTED ACTUAL MSG
bc_assert_eq() {
	if [ "$1" != "$2" ]; then
		bc_fail "$3: expected [$1], got [$2]"
	fi
	bc_pass "$3"
}

# bc_assert_ne UNEXPECTED ACTUAL MSG
bc_assert_ne() {
	if [ "$1" = "$2" ]; then
		bc_fail "$3: got [$2], which it must not be"
	fi
	bc_pass "$3"
}

# bc_assert_ge A B MSG: integer A >= B
bc_assert_ge() {
	if ! [ "$1" -ge "$2" ] 2>/dev/null; then
		bc_fail "$3: expected $1 >= $2"
	fi
	bc_pass "$3"
}

# bc_assert_match REGEX STRING MSG (grep -E)
bc_assert_match() {
	if ! grep -Eq -- "$1" <<<"$2"; then
		bc_fail "$3: [$2] does not match /$1/"
	fi
	bc_pass "$3"
}

# bc_assert_same_file A B MSG: byte-identical
bc_assert_same_file() {
	if ! cmp -s "$1" "$2"; then
		bc_fail "$3: $1 and $2 differ ($(wc -c <"$1") vs $(wc -c <"$2") bytes)"
	fi
	bc_pass "$3"
}

# bc_skip_unless_tool TOOL...: exit 77 unless every TOOL is runnable.
# A test that needs "$BC_AWS_BIN" gets the aws-cli fork server (bc_aws).
bc_skip_unless_tool() {
	local t
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "SKIP: $BC_NAME: $t not found" >&2
			exit 77
		fi
		if [ "$t" = "$BC_AWS_BIN" ] && [ -n "${BC_PYFORK_SOCK:-}" ] &&
		    [ -z "$BC__AWS_SOCK" ] && [ "$BASHPID" = "$BC_MAIN_PID" ]; then
			BC__AWS_SOCK=$BC_TMP/pyfork-aws.sock
			bc__pyfork_start --aws "$BC__AWS_SOCK"
		fi
	done
}

bc_require_basics() {
	bc_skip_unless_tool "$BC_PY" curl cmp sha256sum dd
	# found, not imported: an import of boto3 is half a second of CPU,
	# in each of ~120 scripts of a run (the scripts that use it import it)
	"$BC_PY" -c 'import importlib.util as u, sys
sys.exit(not (u.find_spec("botocore") and u.find_spec("boto3")))' 2>/dev/null ||
		{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks boto3/botocore" >&2; exit 77; }
	[ -x "$BC_BIN" ] || bc_fail "daemon binary BC_BIN=$BC_BIN missing (build it first)"
	[ -x "$BC_TQ" ] ||
		bc_fail "$BC_TQ missing (the tests' tools: make check TESTS= in $BC_BUILDDIR)"
}

# ---- ports and processes -------------------------------------------------

# Prints a loopback TCP port that was free a moment ago (tq; tests/lib's
# python3 one where tq is not built).
bc_free_port() {
	if [ -x "$BC_TQ" ]; then "$BC_TQ" port; else tl_free_port; fi
}

# bc__wait_http URL PID SECONDS: waits until URL answers any HTTP status
# (or exactly 200 when BC_WANT_200=1). Fails if PID dies (tests/lib).
bc__wait_http() {
	tl_wait_http "$1" "$2" "$3" "$([ "${BC_WANT_200:-0}" = 1 ] && echo 200 || echo any)"
}

# bc_start_s3rver [--configure-bucket NAME]...: starts s3rver on a free port
# with an empty data dir. Sets BC_S3RVER_PORT, BC_S3RVER_URL, BC_S3RVER_DIR.
bc_start_s3rver() {
	bc__start_s3rver_and 0 "$@"
}

# bc_start_s3rver_fixture [verify_proxy.py args]: bc_start_s3rver, then
# bc_start_fixture with the args, but both started at once (the fixture
# only needs s3rver's port; each takes seconds of start-up on a loaded
# machine). The same variables; the fixture's PID is BC_PIDS's last.
bc_start_s3rver_fixture() {
	bc__start_s3rver_and 1 "$@"
}

# bc__s3rver_from_farm [--configure-bucket NAME]...: an s3rver of the
# run's farm (tests/run starts fixture/s3rver_farm.js and names its port
# in BC_S3RVER_FARM) on BC_S3RVER_DIR; sets BC_S3RVER_PORT. False when
# there is no farm (then the script starts s3rver itself) or for args
# the farm does not take. It stops the s3rver when BC_S3RVER_DIR is gone.
bc__s3rver_from_farm() {
	local q="dir=$BC_S3RVER_DIR" port
	[ -n "${BC_S3RVER_FARM:-}" ] || return 1
	while [ $# -gt 0 ]; do
		[ "$1" = --configure-bucket ] && [ $# -ge 2 ] || return 1
		q="$q&bucket=$2"
		shift 2
	done
	port=$("$BC_TQ" http -m 20 -X POST "http://127.0.0.1:$BC_S3RVER_FARM/new?$q") ||
		bc_fail "the run's s3rver farm (port $BC_S3RVER_FARM) gave no s3rver"
	BC_S3RVER_PORT=$port
	BC_CLEANUP_HOOKS+=(bc__s3rver_farm_close)
}
bc__s3rver_farm_close() {
	"$BC_TQ" http -m 5 -X POST \
		"http://127.0.0.1:$BC_S3RVER_FARM/close?port=$BC_S3RVER_PORT" >/dev/null || true
}

# bc__start_s3rver_and WITH-FIXTURE ARGS...: bc_start_s3rver (ARGS are
# s3rver's) or bc_start_s3rver_fixture (ARGS are the fixture's).
bc__start_s3rver_and() {
	local with_fx=$1 bin=$BC_IT_DIR/node_modules/.bin/s3rver try pid log
	local nodeopt fxpid= fxport=
	shift
	local s3args=() fxargs=()
	if [ "$with_fx" = 1 ]; then fxargs=("$@"); else s3args=("$@"); fi
	if [ ! -x "$bin" ]; then
		echo "SKIP: $BC_NAME: s3rver not installed; run \`npm ci --prefix tests/integration\`" >&2
		exit 77
	fi
	bc_skip_unless_tool node
	BC_S3RVER_DIR=$BC_TMP/s3rver-data
	mkdir -p "$BC_S3RVER_DIR"
	if bc__s3rver_from_farm "${s3args[@]}"; then
		BC_S3RVER_URL=http://127.0.0.1:$BC_S3RVER_PORT
		[ "$with_fx" = 1 ] || return 0
		bc_start_fixture "${fxargs[@]}"
		return 0
	fi
	log=$BC_TMP/s3rver.log
	nodeopt=$(tl_node_legacy)
	for try in 1 2 3; do
		BC_S3RVER_PORT=$(bc_free_port)
		NODE_OPTIONS="${NODE_OPTIONS:-} $nodeopt" "$bin" --directory "$BC_S3RVER_DIR" --address 127.0.0.1 \
			--port "$BC_S3RVER_PORT" --silent "${s3args[@]}" >>"$log" 2>&1 &
		pid=$!
		if [ "$with_fx" = 1 ] && [ -z "$fxpid" ]; then
			bc__fixture_spawn "${fxargs[@]}"
			fxpid=$BC__FX_PID fxport=$BC_S3RVER_PORT
		fi
		if bc__wait_http "http://127.0.0.1:$BC_S3RVER_PORT/" "$pid" 20; then
			BC_PIDS+=("$pid")
			BC_LOGS+=("$log")
			BC_S3RVER_URL=http://127.0.0.1:$BC_S3RVER_PORT
			[ "$with_fx" = 1 ] || return 0
			# a fixture started for a port s3rver could not take: anew
			if [ "$fxport" != "$BC_S3RVER_PORT" ]; then
				kill -KILL "$fxpid" 2>/dev/null || true
				wait "$fxpid" 2>/dev/null || true
				bc__fixture_spawn "${fxargs[@]}"
			fi
			bc__fixture_wait
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	cat "$log" >&2
	bc_fail "s3rver did not start"
}

# bc_start_fixture [verify_proxy.py args]: starts the verifying proxy in
# front of s3rver (start s3rver first). Sets BC_FIXTURE_PORT, BC_FIXTURE_URL.
bc_start_fixture() {
	bc__fixture_spawn "$@"
	bc__fixture_wait
}

# bc__fixture_spawn ARGS: starts the fixture (sets BC__FX_PID); then
# bc__fixture_wait.
bc__fixture_spawn() {
	rm -f "$BC_TMP/fixture.port"
	"${BC_FIXTURE_PY:-$BC_PY}" "$BC_IT_DIR/fixture/verify_proxy.py" \
		--upstream "127.0.0.1:$BC_S3RVER_PORT" --port 0 --port-file "$BC_TMP/fixture.port" \
		"$@" >>"$BC_TMP/fixture.log" 2>&1 &
	BC__FX_PID=$!
}

bc__fixture_wait() {
	local pf=$BC_TMP/fixture.port log=$BC_TMP/fixture.log pid=$BC__FX_PID i
	BC_PIDS+=("$pid")
	BC_LOGS+=("$log")
	for i in $(seq 100); do
		[ -s "$pf" ] && break
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; bc_fail "fixture died"; }
		sleep 0.1
	done
	[ -s "$pf" ] || bc_fail "fixture did not start"
	BC_FIXTURE_PORT=$(cat "$pf")
	BC_FIXTURE_URL=http://127.0.0.1:$BC_FIXTURE_PORT
	BC_WANT_200=1 bc__wait_http "$BC_FIXTURE_URL/__fixture/stats" "$pid" 10 ||
		bc_fail "fixture does not answer"
}

# bc_start_upstream [verify_proxy.py args]: the S3 upstream BC_UPSTREAM
# names, behind the fixture (tests that run against either):
#   s3rver  s3rver behind the verifying fixture (the fixture checks every
#           signature and stands in for what s3rver lacks: see the top of
#           fixture/verify_proxy.py); the args go to the fixture;
#   rgw     a throw-away Ceph RGW (lib_rgw.sh) behind the fixture in
#           --transparent mode: RGW checks signatures, checksums and ACLs
#           itself, the fixture only counts (the args are ignored).
# Sets BC_FIXTURE_URL (the gateway's --upstream, and the direct endpoint
# for comparisons), BC_UP_URL (the server itself, bypassing the fixture),
# BC_UP_KEY/BC_UP_SECRET (the upstream's key pair; also exported as
# AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, which the gateway signs with
# and fixture/itlib.py's clients use) and BC_UP_SIGV4 (curl's
# --aws-sigv4 and --user arguments for that pair).
bc_start_upstream() {
	case $BC_UPSTREAM in
	s3rver)
		bc_start_s3rver_fixture "$@"
		BC_UP_URL=$BC_S3RVER_URL
		BC_UP_KEY=S3RVER
		BC_UP_SECRET=S3RVER
		;;
	rgw)
		. "$BC_IT_DIR/lib_rgw.sh"
		bc_rgw_start
		BC_S3RVER_PORT=$BC_RGW_PORT   # what bc_start_fixture forwards to
		bc_start_fixture --transparent
		BC_UP_URL=$BC_RGW_URL
		BC_UP_KEY=$BC_RGW_KEY
		BC_UP_SECRET=$BC_RGW_SECRET
		;;
	*) bc_fail "BC_UPSTREAM=$BC_UPSTREAM: s3rver or rgw" ;;
	esac
	export AWS_ACCESS_KEY_ID=$BC_UP_KEY AWS_SECRET_ACCESS_KEY=$BC_UP_SECRET
	BC_UP_SIGV4=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$BC_UP_KEY:$BC_UP_SECRET")
}

# bc_start_gateway ARGS...: starts the daemon on a free port with ARGS
# (--upstream etc.; --listen is added: on BC_GW_HOST, default 127.0.0.1,
# 0.0.0.0 for tests that need a non-loopback client), waits for
# /_bucketcache/health = 200 on 127.0.0.1.
# Upstream credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.
# Sets BC_GW_PORT, BC_GW_URL, BC_GW_PID, BC_GW_LOG. On failure prints the log.
bc_start_gateway() {
	local try pid log
	BC_GW_N=$(( ${BC_GW_N:-0} + 1 ))
	log=$BC_TMP/gateway.$BC_GW_N.log
	for try in 1 2 3; do
		BC_GW_PORT=$(bc_free_port)
		"$BC_BIN" --listen "${BC_GW_HOST:-127.0.0.1}:$BC_GW_PORT" "$@" >>"$log" 2>&1 &
		pid=$!
		if BC_WANT_200=1 bc__wait_http "http://127.0.0.1:$BC_GW_PORT/_bucketcache/health" "$pid" 15; then
			BC_PIDS+=("$pid")
			BC_LOGS+=("$log")
			BC_GW_PID=$pid
			BC_GW_LOG=$log
			BC_GW_URL=http://127.0.0.1:$BC_GW_PORT
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		echo "# gateway start attempt $try failed" >>"$log"
		# a port race shows in the log; anything else will not get better
		grep -qi 'in use' "$log" || break
	done
	echo "===== gateway log ($BC_BIN $*) =====" >&2
	cat "$log" >&2
	bc_fail "gateway did not become healthy"
}

# bc_stop_gateway: SIGTERM the current gateway; asserts exit status 0 within
# 10 s and no sanitizer report in its log.
bc_stop_gateway() {
	local pid=$BC_GW_PID rc i
	kill -TERM "$pid"
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		bc_fail "gateway did not exit within 10 s of SIGTERM"
	fi
	rc=0
	wait "$pid" || rc=$?
	bc_assert_eq 0 "$rc" "gateway exits 0 on SIGTERM"
	if grep -Eq 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$BC_GW_LOG"; then
		bc_fail "sanitizer report in $BC_GW_LOG"
	fi
	bc_pass "no sanitizer report in the gateway log"
}

# ---- stats -----------------------------------------------------------------

# bc_stats_get NAME [URL]: prints a value from /_bucketcache/stats. NAME is a
# counter ("requests") or a dotted path ("requests_by_op.GetObject.2xx";
# missing components of a dotted path read as 0). A missing counter fails.
bc_stats_get() {
	local name=$1 url=${2:-$BC_GW_URL}
	"$BC_TQ" stat "$url/_bucketcache/stats" "$name" ||
		bc_fail "cannot read gateway stats $name"
}

# bc_fixture_stats [PATH]: the fixture's stats JSON, or one value by dotted
# path ("rejected", "by_op.GetObject"; missing reads as 0).
bc_fixture_stats() {
	local path=${1:-}
	if [ -z "$path" ]; then
		"$BC_TQ" http "$BC_FIXTURE_URL/__fixture/stats"
		return
	fi
	"$BC_TQ" get "$BC_FIXTURE_URL/__fixture/stats" "$path" ||
		bc_fail "cannot read fixture stats"
}

bc_fixture_reset() {
	"$BC_TQ" http -X POST "$BC_FIXTURE_URL/__fixture/reset" >/dev/null ||
		bc_fail "fixture reset failed"
}

# bc_fixture_fail STATUS COUNT [DELAY_MS]: the next COUNT requests get STATUS
# (0: connection closed without an answer).
bc_fixture_fail() {
	"$BC_TQ" http -X POST \
		"$BC_FIXTURE_URL/__fixture/fail?status=$1&count=$2&delay=${3:-0}" >/dev/null ||
		bc_fail "fixture fail setup failed"
}

# bc_assert_fixture_clean MSG [ALLOWED_CODE...]: the fixture rejected no
# upstream request (except with one of the ALLOWED_CODEs) and saw no SigV2.
bc_assert_fixture_clean() {
	local msg=${1:-fixture} n
	shift || true
	n=$("$BC_TQ" sum "$BC_FIXTURE_URL/__fixture/stats" rejected_by_code "$@") ||
		bc_fail "cannot read fixture stats"
	if [ "$n" != 0 ]; then
		bc_fixture_stats rejections >&2
		bc_fail "$msg: the verifying fixture rejected $n upstream request(s)"
	fi
	n=$(bc_fixture_stats by_auth.sigv2)
	[ "$n" = 0 ] || bc_fail "$msg: $n upstream request(s) signed with SigV2"
	bc_pass "$msg: every upstream request had a valid SigV4 signature"
}

# ---- clients ---------------------------------------------------------------

# bc_aws ENDPOINT ARGS...: aws-cli v2 against ENDPOINT, bounded in time.
# /usr/bin/aws runs in a fork of a server with aws-cli imported (its own:
# Debian's aws-cli v2 brings a botocore of its own, which cannot share an
# interpreter with boto3's): tests/run's, or the one bc_skip_unless_tool
# "$BC_AWS_BIN" started, once it is up; before, /usr/bin/aws itself (its
# start is 1.2 s of CPU here).
bc_aws() {
	local ep=$1 run=("$BC_AWS_BIN")
	shift
	[ -z "$BC__AWS_SOCK" ] || [ ! -S "$BC__AWS_SOCK" ] ||
		run=("$BC_PYFORK" "$BC_AWS_BIN")
	BC_PYFORK_SOCK=$BC__AWS_SOCK "${run[@]}" --endpoint-url "$ep" \
		--cli-read-timeout 30 --cli-connect-timeout 5 "$@"
}

# bc_req NAME CURL-ARGS...: one HTTP request; body in $BC_TMP/NAME.body,
# headers in $BC_TMP/NAME.hdr, curl's seconds in $BC_TMP/NAME.time; prints the
# status code (000: no answer).
bc_req() {
	local name=$1 out code
	shift
	out=$(curl -sS --max-time 20 -o "$BC_TMP/$name.body" \
		-D "$BC_TMP/$name.hdr" -w '%{http_code} %{time_total}' "$@" 2>"$BC_TMP/$name.err") || true
	code=${out%% *}
	[ -n "$code" ] || code=000
	printf '%s\n' "${out#* }" >"$BC_TMP/$name.time"
	printf '%s' "$code"
}

# bc_req_ms NAME: how long bc_req NAME's curl took, in ms (curl's own
# time_total: the answer's time, not the checks' after it).
bc_req_ms() { awk '{ printf "%d\n", $1 * 1000 }' "$BC_TMP/$1.time"; }

# bc_hdr NAME HEADER: a response header's value from bc_req NAME (last one).
bc_hdr() {
	tr -d '\r' <"$BC_TMP/$1.hdr" | awk -v h="$2" '
		BEGIN { h = tolower(h) }
		{ i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == h) { v = substr($0, i + 1); sub(/^[ \t]+/, "", v); last = v } }
		END { print last }'
}

# bc_s3_code FILE: the <Code> of an S3 XML error body ("" if not S3 XML).
bc_s3_code() { "$BC_TQ" s3code "$1" 2>/dev/null || true; }

# bc_assert_s3_error NAME STATUS CODE MSG: bc_req NAME answered STATUS with an
# S3 XML <Error> whose <Code> is CODE (CODE may be a regex; HEAD has no body).
bc_assert_s3_error() {
	local name=$1 code=$3 msg=$4 got
	got=$(bc_s3_code "$BC_TMP/$name.body")
	if ! [[ $got =~ ^($code)$ ]]; then   # (not grep: a start per check)
		echo "--- response headers:" >&2; cat "$BC_TMP/$name.hdr" >&2 || true
		echo "--- response body:" >&2
		head -c 2000 "$BC_TMP/$name.body" 2>/dev/null | LC_ALL=C tr -c '[:print:]\n' '.' >&2 || true
		echo >&2
		bc_fail "$msg: expected S3 error <Code>$code</Code>, got [$got]"
	fi
	bc_pass "$msg: S3 XML error $code"
}

# bc_expect NAME STATUS [CODE] MSG CURL-ARGS...: runs bc_req NAME and asserts
# the status (regex) and, when CODE is not "-", the S3 XML error code.
bc_expect() {
	local name=$1 status=$2 code=$3 msg=$4 got
	shift 4
	got=$(bc_req "$name" "$@")
	echo "$got" >"$BC_TMP/$name.status"
	if ! [[ $got =~ ^($status)$ ]]; then
		echo "--- curl $*" >&2
		echo "--- response headers:" >&2; cat "$BC_TMP/$name.hdr" >&2 2>/dev/null || true
		echo "--- response body:" >&2
		head -c 2000 "$BC_TMP/$name.body" 2>/dev/null | LC_ALL=C tr -c '[:print:]\n' '.' >&2 || true
		echo >&2; cat "$BC_TMP/$name.err" >&2 2>/dev/null || true
		bc_fail "$msg: expected HTTP $status, got $got"
	fi
	bc_pass "$msg: HTTP $got"
	if [ "$code" != - ]; then
		bc_assert_s3_error "$name" "$status" "$code" "$msg"
	fi
}

# bc_mkfile PATH BYTES: deterministic pseudo-random content.
bc_mkfile() { "$BC_TQ" mkfile "$1" "$2"; }

# bc_slice FILE FIRST LAST: bytes FIRST..LAST (inclusive) of FILE to stdout.
bc_slice() {
	dd if="$1" bs=64K iflag=skip_bytes,count_bytes skip="$2" \
		count=$(( $3 - $2 + 1 )) status=none
}

# bc_json FILE EXPR: a value from a JSON file; EXPR is a dotted path
# ("ContentLength", "Contents.0.Key"); prints "" when absent; values as
# Python prints them (tq json).
bc_json() { "$BC_TQ" json "$1" "$2"; }

# bc_json_keys FILE EXPR...: "EXPR=value" per EXPR, each as bc_json FILE
# EXPR prints it (one read for them all).
bc_json_keys() { "$BC_TQ" json --keys "$@"; }

# bc_stats_save FILE: saves the gateway's counters for bc_stats_delta.
bc_stats_save() {
	"$BC_TQ" http "$BC_GW_URL/_bucketcache/stats" >"$1" ||
		bc_fail "cannot read gateway stats"
}

# bc_stats_delta FILE NAME: NAME now minus NAME in the saved FILE.
bc_stats_delta() {
	local before now
	before=$("$BC_TQ" stat --or-0 "$1" "$2")
	now=$(bc_stats_get "$2")
	echo $(( now - before ))
}

# bc_md5_etag FILE: the quoted MD5 ETag S3 gives a single-part object.
bc_md5_etag() { printf '"%s"' "$(md5sum <"$1" | cut -d' ' -f1)"; }
