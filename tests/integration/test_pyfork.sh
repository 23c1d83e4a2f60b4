#!/bin/bash
# test_pyfork.sh — the suite's Python client (tests/lib/pyfork.c and .py)
# gives a run what /usr/bin/python3 gives it: the program from stdin, -c
# or a script; argv, cwd, environment and PYTHONPATH; stdin, stdout and
# stderr; the exit status (sys.exit codes and messages, an exception's 1);
# boto3 imported already;
# a fresh random state; forwarded TERM; a run ended when its client is
# KILLed; the same answers without the server (python3 itself). And
# aws-cli v2's script runs in the aws-cli server (bc_aws).
# one build: it tests a harness tool that every build compiles alike (no sanitizers)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ "$BC_PY" != "$BC_PY_REAL" ] ||
	{ echo "SKIP: $BC_NAME: no tests/lib/pyfork in $BC_BUILDDIR" >&2; exit 77; }
bc_skip_unless_tool "$BC_AWS_BIN"
for i in $(seq 200); do
	[ -S "$BC_PYFORK_SOCK" ] && [ -S "$BC__AWS_SOCK" ] && break
	sleep 0.05
done
[ -S "$BC_PYFORK_SOCK" ] || bc_fail "the Python fork server never bound $BC_PYFORK_SOCK"
[ -S "$BC__AWS_SOCK" ] || bc_fail "the aws-cli fork server never came up"

# checks MODE: the contract's checks through "$BC_PY" (MODE: the name in
# the messages); the answers must be python3's.
checks() {
	local m=$1 out rc d=$BC_TMP/$1
	mkdir -p "$d/mod"
	echo 'VALUE = "from PYTHONPATH"' >"$d/mod/pfmod.py"
	printf 'import sys\nprint("script", sys.argv[1:], __name__)\n' >"$d/s.py"

	out=$(cd "$d" && PF_X=42 PYTHONPATH=$d/mod "$BC_PY" - a 'b c' <<'EOF'
import os, sys, pfmod
print(sys.argv, os.getcwd() == os.path.realpath("."), os.environ["PF_X"], pfmod.VALUE, sys.path[0] == "")
EOF
)
	bc_assert_eq "['-', 'a', 'b c'] True 42 from PYTHONPATH True" "$out" \
		"$m: stdin program: argv, cwd, environment, PYTHONPATH"
	out=$("$BC_PY" -c 'import sys; print(sys.argv)' x y)
	bc_assert_eq "['-c', 'x', 'y']" "$out" "$m: -c: argv"
	out=$("$BC_PY" "$d/s.py" p q)
	bc_assert_eq "script ['p', 'q'] __main__" "$out" "$m: a script runs as __main__"
	out=$(printf 'line1\nline2\n' | "$BC_PY" -c 'import sys; print(sys.stdin.read().upper(), end="")')
	bc_assert_eq "LINE1
LINE2" "$out" "$m: the client's stdin"
	rc=0; "$BC_PY" -c 'import sys; sys.exit(3)' || rc=$?
	bc_assert_eq 3 "$rc" "$m: sys.exit(3) is status 3"
	rc=0; out=$("$BC_PY" -c 'import sys; sys.exit("a message")' 2>&1) || rc=$?
	bc_assert_eq "1 a message" "$rc $out" "$m: sys.exit(str): status 1, the message on stderr"
	rc=0; out=$("$BC_PY" -c 'raise ValueError("boom")' 2>&1) || rc=$?
	[ "$rc" = 1 ] && grep -q 'ValueError: boom' <<<"$out" ||
		bc_fail "$m: an exception: got status $rc, [$out]"
	bc_pass "$m: an exception is status 1, its traceback on stderr"
	out=$("$BC_PY" -c 'import sys; print("out"); print("err", file=sys.stderr)' 2>&1 >/dev/null)
	bc_assert_eq err "$out" "$m: stderr apart from stdout"
	out=$("$BC_PY" -c '
import threading, time
def late(): time.sleep(0.2); print("thread done")
threading.Thread(target=late).start()
import atexit; atexit.register(lambda: print("atexit"))')
	bc_assert_eq "thread done
atexit" "$out" "$m: threads joined, then atexit, at exit"
	a=$("$BC_PY" -c 'import random; print(random.random())')
	b=$("$BC_PY" -c 'import random; print(random.random())')
	[ "$a" != "$b" ] || bc_fail "$m: two runs drew the same random number $a"
	bc_pass "$m: each run has its own random state"

	"$BC_PY" -c 'import time, pathlib, sys
pathlib.Path(sys.argv[1]).touch(); time.sleep(30)' "$d/t.up" &
	local pid=$!
	for i in $(seq 100); do [ -e "$d/t.up" ] && break; sleep 0.05; done
	kill -TERM "$pid"
	rc=0; wait "$pid" || rc=$?
	bc_assert_eq 143 "$rc" "$m: TERM ends the run (128 + 15)"
}

checks "fork server"
# the server has boto3 imported (a script that names boto3 gets a server)
out=$("$BC_PY" -c 'import sys; print("boto3" in sys.modules)')
bc_assert_eq True "$out" "a run finds boto3 imported already"
# a run's default session and credentials are its own environment's
out=$(AWS_ACCESS_KEY_ID=RUNKEY AWS_SECRET_ACCESS_KEY=RUNSECRET AWS_DEFAULT_REGION=eu-west-3 \
	"$BC_PY" -c 'import boto3
print(boto3.DEFAULT_SESSION is None, end=" ")
c = boto3.client("s3", endpoint_url="http://127.0.0.1:9")
print(c._request_signer._credentials.access_key, c.meta.region_name)')
bc_assert_eq "True RUNKEY eu-west-3" "$out" \
	"a run's boto3 client takes its own environment's key and region, no default session made before"
# the run ends when its client is KILLed (a client that cannot forward)
"$BC_PY" -c 'import os, time, sys
open(sys.argv[1], "w").write(str(os.getpid())); time.sleep(30)' "$BC_TMP/k.pid" &
pid=$!
for i in $(seq 100); do [ -s "$BC_TMP/k.pid" ] && break; sleep 0.05; done
run=$(cat "$BC_TMP/k.pid")
[ "$run" != "$pid" ] || bc_fail "the run is the client itself: no server took it"
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
for i in $(seq 100); do kill -0 "$run" 2>/dev/null || break; sleep 0.05; done
kill -0 "$run" 2>/dev/null && bc_fail "the run $run outlived its KILLed client"
bc_pass "a KILLed client's run ends"

BC_PYFORK_SOCK=$BC_TMP/none.sock checks "no server (python3 itself)"

out=$(bc_aws http://127.0.0.1:1 --version)
grep -q '^aws-cli/2\.' <<<"$out" || bc_fail "aws --version through the aws-cli server: [$out]"
bc_pass "aws-cli v2 runs in its fork server"
rc=0; bc_aws http://127.0.0.1:1 s3api no-such-command >/dev/null 2>&1 || rc=$?
bc_assert_eq 252 "$rc" "aws-cli's usage error keeps its status (252)"
bc_done 27
