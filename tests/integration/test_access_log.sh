#!/bin/bash
# test_access_log.sh — --access-log json (issue 27, item 6): a gateway on a
# file:// origin (--anonymous, client key JOBKEY) writes one JSON line per
# request to --access-log-file: a hinted miss then a hit (cache, job), a
# signed read without a hint (the job is the access key), a HEAD, a 404
# whose key holds a quote, a backslash, a control character and a byte
# that is not UTF-8 (escaped: the line stays JSON), an upload, an admin
# call (no cache outcome, no job), a client that leaves mid-response
# (aborted), 40 concurrent reads (40 whole lines, none mixed); the counts
# match access_log_lines. Without --access-log nothing is logged; with it
# and no file the lines go to stderr; bad values exit 2.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
DATA=$BC_TMP/data
mkdir -p "$DATA/demo/ds"
bc_mkfile "$DATA/demo/ds/a.bin" 5000
bc_mkfile "$DATA/demo/ds/big.bin" $(( 24 * 1024 * 1024 ))   # more than socket buffers hold
for i in $(seq 1 40); do bc_mkfile "$DATA/demo/ds/p$i.bin" 1000; done
LOG=$BC_TMP/access.log
SIGN=(--aws-sigv4 aws:amz:us-east-1:s3 --user JOBKEY:jobsecret -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')

# ---- bad values ------------------------------------------------------------------------
rc=0
"$BC_BIN" --access-log xml --upstream "file://$DATA" >"$BC_TMP/bad1.out" 2>&1 || rc=$?
v=$(cat "$BC_TMP/bad1.out")
bc_assert_eq 2 "$rc" "--access-log xml exits 2"
bc_assert_match "access-log: 'xml' is not off or json" "$v" "and says why"
rc=0
"$BC_BIN" --access-log-file "$LOG" --upstream "file://$DATA" >"$BC_TMP/bad2.out" 2>&1 || rc=$?
bc_assert_eq 2 "$rc" "--access-log-file without --access-log json exits 2"
rc=0
"$BC_BIN" --access-log json --access-log-file "$BC_TMP/no/such/dir/a.log" --listen 127.0.0.1:1 \
	--upstream "file://$DATA" >"$BC_TMP/bad3.out" 2>&1 || rc=$?
v=$(cat "$BC_TMP/bad3.out")
bc_assert_ne 0 "$rc" "an access log file that cannot be opened stops the start"
bc_assert_match 'access-log-file .*No such file or directory' "$v" "and names the file and the reason"

# ---- a log file ---------------------------------------------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --client-key JOBKEY:jobsecret:demo \
	--client-key OTHER:othersecret:demo --mem-size 64MiB --access-log json --access-log-file "$LOG"
G=$BC_GW_URL
bc_expect r1 200 - "a hinted read (miss)" -H 'x-bucketcache-job: train-1' "$G/demo/ds/a.bin"
bc_expect r2 200 - "the same read again (hit)" -H 'x-bucketcache-job: train-1' "$G/demo/ds/a.bin"
bc_expect r3 200 - "a signed read without a hint" "${SIGN[@]}" "$G/demo/ds/a.bin"
bc_expect r4 200 - "a HEAD" -I "$G/demo/ds/a.bin"
bc_expect r5 404 - "a 404 on a hostile key" "$G/demo/ds/q%22b%5Cc%01%FF"
bc_expect r6 200 - "an upload" -X PUT --data-binary "@$DATA/demo/ds/a.bin" "${SIGN[@]}" "$G/demo/ds/up.bin"
bc_expect r7 200 - "an admin call" "$G/_bucketcache/stats"
printf 'ds/a.bin\n' >"$BC_TMP/plan"
bc_expect r8 200 - "key OTHER posts a plan (relayed: not the operator): job other-job is OTHER's" \
	-X PUT --data-binary "@$BC_TMP/plan" --aws-sigv4 aws:amz:us-east-1:s3 --user OTHER:othersecret \
	-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -H 'X-Forwarded-For: 10.1.2.3' \
	"$G/_bucketcache/v1/jobs/other-job/plan?bucket=demo&epoch=0"
bc_expect r9 200 - "JOBKEY reads hinting OTHER's job" -H 'x-bucketcache-job: other-job' \
	"${SIGN[@]}" "$G/demo/ds/a.bin"
"$BC_PY" - "$BC_GW_PORT" <<'PY'    # reads the head of big.bin, then leaves
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /demo/ds/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
s.recv(65536)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
s.close()                          # with unread bytes: a reset
PY
pids=()
for i in $(seq 1 40); do
	curl -s -o /dev/null -H "x-bucketcache-job: par" "$G/demo/ds/p$i.bin" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || bc_fail "a concurrent read failed"
done
n=0
for i in $(seq 50); do   # the aborted response ends when the gateway notices
	n=$(grep -vc '"key":"health"' "$LOG" || true)   # bc_start_gateway's probes
	[ "$n" -ge 50 ] && break
	sleep 0.1
done
bc_assert_eq 50 "$n" "one line per request (10 + 40)"
bc_py "$LOG" <<'PY'
import json, sys
import itlib

raw = open(sys.argv[1], "rb").read()
lines = raw.split(b"\n")
itlib.ok(lines[-1] == b"", "the log ends with a newline")
recs = []
for l in lines[:-1]:
    recs.append(json.loads(l.decode("utf-8")))          # raises on a bad line
health = [r for r in recs if r["key"] == "health"]
recs = [r for r in recs if r["key"] != "health"]
itlib.ok(len(recs) == 50, "every line is one JSON object (%d)" % len(recs))
itlib.ok(len(health) >= 1 and all(r["op"] == "Admin" and r["bucket"] == "_bucketcache"
                                  for r in health), "the start-up's health probes are logged too")
keys = {"time", "remote", "method", "op", "bucket", "key", "status", "bytes",
        "bytes_in", "duration", "cache", "job", "request_id"}
itlib.ok(all(keys <= set(r) for r in recs), "every line has every field")
itlib.ok(all(r["remote"] == "127.0.0.1" for r in recs), "remote is the client's address")
itlib.ok(all(r["time"].endswith("Z") and len(r["time"]) == 24 for r in recs),
         "time is RFC 3339 UTC with milliseconds", recs[0]["time"])
itlib.ok(len({r["request_id"] for r in recs}) == 50, "request ids are distinct")
r1, r2, r3, r4, r5, r6, r7, r8, r9 = recs[:9]
itlib.ok((r1["method"], r1["op"], r1["bucket"], r1["key"], r1["status"], r1["bytes"],
          r1["cache"], r1["job"]) == ("GET", "GetObject", "demo", "ds/a.bin", 200, 5000,
                                      "miss", "train-1"), "the hinted miss", r1)
itlib.ok((r2["cache"], r2["job"], r2["bytes"]) == ("hit", "train-1", 5000), "the hit", r2)
itlib.ok((r3["job"], r3["cache"]) == ("JOBKEY", "hit"), "a signed read's job is its access key", r3)
itlib.ok((r4["method"], r4["op"], r4["bytes"], r4["job"]) == ("HEAD", "HeadObject", 0, "anonymous"),
         "the HEAD (unsigned: anonymous)", r4)
itlib.ok((r5["status"], r5["key"], r5["cache"]) == (404, 'ds/q"b\\c\x01\ufffd', None),
         "the 404's key, escaped and decoded back", r5)
itlib.ok((r6["method"], r6["op"], r6["bytes_in"], r6["job"], r6["cache"]) ==
         ("PUT", "PutObject", 5000, None, None), "the upload: bytes_in, no job", r6)
itlib.ok((r7["op"], r7["job"], r7["cache"], r7["status"]) == ("Admin", None, None, 200), "the admin call", r7)
itlib.ok((r8["op"], r8["job"]) == ("Admin", None), "the plan PUT (admin: no job)", r8)
itlib.ok(r9["job"] == "JOBKEY", "a hint naming another key's job is not used: the access key's job", r9)
ab = [r for r in recs if r["key"] == "ds/big.bin"]
itlib.ok(len(ab) == 1 and ab[0].get("aborted") is True and ab[0]["bytes"] == 0,
         "the client that left: aborted", ab)
par = [r for r in recs if r["job"] == "par"]
itlib.ok(len(par) == 40 and {r["key"] for r in par} == {"ds/p%d.bin" % i for i in range(1, 41)},
         "40 concurrent reads: 40 whole lines")
itlib.ok(all(0 <= r["duration"] < 30 for r in recs), "durations in seconds")
itlib.done()
PY
v=$(bc_stats_get access_log_lines)
bc_assert_ge "$v" 51 "access_log_lines counts them (and the probes)"
v=$(bc_stats_get hints_refused)
bc_assert_eq 1 "$v" "the gateway refused that hint too (hints_refused)"
v=$(bc_stats_get jobs.JOBKEY.requests)
bc_assert_eq 2 "$v" "and counted the read toward JOBKEY, as the log says"
v=$(bc_stats_get access_log_dropped)
bc_assert_eq 0 "$v" "no line dropped"
bc_stop_gateway

# ---- off by default; stderr without a file -------------------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB
G=$BC_GW_URL
bc_expect o2 200 - "a read, no access log" "$G/demo/ds/a.bin"
v=$(grep -c '^{"time"' "$BC_GW_LOG" || true)
bc_assert_eq 0 "$v" "without --access-log nothing is logged"
v=$(bc_stats_get access_log_lines)
bc_assert_eq 0 "$v" "access_log_lines stays 0"
bc_stop_gateway
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB --access-log json
G=$BC_GW_URL
bc_expect e1 200 - "a read, access log to stderr" -H 'x-bucketcache-job: err-1' "$G/demo/ds/a.bin"
sleep 0.2
v=$(grep -c '^{"time".*"key":"ds/a.bin".*"job":"err-1"' "$BC_GW_LOG" || true)
bc_assert_eq 1 "$v" "--access-log json without a file: the line is on stderr"
bc_stop_gateway

bc_done 49
