#!/bin/bash
# test_plans.sh — training plans and hints through a real gateway (issue 11,
# items 3 and 4), over a file:// dataset:
#   1. PUT /_bucketcache/v1/jobs/ID/plan (plain, then gzip with an epoch)
#      answers {"keys": n, "epoch": e}; GET /v1/jobs and /v1/jobs/ID show
#      the job, its bucket, epoch, cursor and plan length;
#   2. GETs hinted x-bucketcache-job: ID move its cursor, in order and
#      past a skipped key; a key out of the plan is counted; the bytes are
#      the directory's (hints never change what is answered);
#   3. malformed hints are counted (hints_malformed) and the GET still
#      succeeds; a malformed plan is 400 InvalidArgument;
#   4. a plan of 1,000,000 keys is accepted (timed, bounded);
#   5. a relayed (non-local) client without the admin token is refused
#      (403 AccessDenied) for PUT, GET and DELETE; with the token it passes;
#   6. DELETE ends the job (then 404 NoSuchKey);
#   7. hints never reach the origin: a gateway in front of a recording
#      HTTP origin (a minimal S3 GET/HEAD responder that logs every request
#      header name) forwards none of x-bucketcache-*;
#   8. a job with a plan is prefetched from its plan, and its reads'
#      x-bucketcache-next hints do not replace it, until the plan is read
#      to its end (the same origin's log).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool gzip

DATA=$BC_TMP/data
mkdir -p "$DATA/ds/img"
N=40
for i in $(seq -w 0 $((N - 1))); do
	bc_mkfile "$DATA/ds/img/k$i.bin" $(( 1000 + 10#$i * 37 ))
done
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--admin-token s3cret
ADMIN=$BC_GW_URL/_bucketcache/v1

# ---- 1. plans in, jobs out ---------------------------------------------------
for i in $(seq -w 0 $((N - 1))); do echo "img/k$i.bin"; done >"$BC_TMP/plan0"
bc_expect put0 200 - "PUT a plan of $N keys" -X PUT \
	--data-binary @"$BC_TMP/plan0" "$ADMIN/jobs/job-1/plan?bucket=ds"
keys=$(bc_json "$BC_TMP/put0.body" keys)
ep=$(bc_json "$BC_TMP/put0.body" epoch)
bc_assert_eq "$N" "$keys" "the answer counts the keys"
bc_assert_eq 0 "$ep" "a new job's first plan is epoch 0"
tac "$BC_TMP/plan0" | gzip -c >"$BC_TMP/plan1.gz"
bc_expect put1 200 - "PUT a gzip plan for epoch 1" -X PUT \
	--data-binary @"$BC_TMP/plan1.gz" "$ADMIN/jobs/job-1/plan?bucket=ds&epoch=1"
ep=$(bc_json "$BC_TMP/put1.body" epoch)
bc_assert_eq 1 "$ep" "the gzip plan is epoch 1"
bc_expect jobs 200 - "GET /v1/jobs" "$ADMIN/jobs"
id=$(bc_json "$BC_TMP/jobs.body" jobs.0.id)
bk=$(bc_json "$BC_TMP/jobs.body" jobs.0.bucket)
pk=$(bc_json "$BC_TMP/jobs.body" jobs.0.plan_keys)
eps=$(bc_json "$BC_TMP/jobs.body" jobs.0.epochs)
bc_assert_eq job-1 "$id" "the job is listed"
bc_assert_eq ds "$bk" "with its bucket"
bc_assert_eq "$N" "$pk" "and its current plan's length"
bc_assert_eq "[0, 1]" "$eps" "and both epochs"

# ---- 2. hinted GETs move the cursor --------------------------------------------
get_as() {   # $1: job, $2: key index; compares the bytes
	curl -sf --max-time 20 -H "x-bucketcache-job: $1" -o "$BC_TMP/got" \
		"$BC_GW_URL/ds/img/k$2.bin" || return 1
	cmp -s "$DATA/ds/img/k$2.bin" "$BC_TMP/got"
}
ok=1
for i in 00 01 02 03 04 06 05 07; do get_as job-1 "$i" || ok=0; done
bc_assert_eq 1 "$ok" "hinted GETs answer the directory's bytes"
bc_expect job1 200 - "GET /v1/jobs/job-1" "$ADMIN/jobs/job-1"
cur=$(bc_json "$BC_TMP/job1.body" cursor)
ooo=$(bc_json "$BC_TMP/job1.body" out_of_order)
reads=$(bc_json "$BC_TMP/job1.body" reads)
bc_assert_eq 8 "$cur" "the cursor follows the job, past a swapped pair"
bc_assert_eq 0 "$ooo" "the late key of the pair is read in order (a worker behind)"
bc_assert_eq 8 "$reads" "every GET of the job is recorded"
curl -sf --max-time 20 -H "x-bucketcache-job: job-1" -o /dev/null \
	"$BC_GW_URL/ds/img/k00.bin"
echo data >"$DATA/ds/other.bin"
curl -sf --max-time 20 -H "x-bucketcache-job: job-1" -o /dev/null \
	"$BC_GW_URL/ds/other.bin"
bc_expect job1b 200 - "GET /v1/jobs/job-1 again" "$ADMIN/jobs/job-1"
oop=$(bc_json "$BC_TMP/job1b.body" out_of_plan)
cur=$(bc_json "$BC_TMP/job1b.body" cursor)
bc_assert_eq 1 "$oop" "a key out of the plan is counted"
bc_assert_eq 8 "$cur" "and moves nothing"
# an unhinted, unsigned GET is job "anonymous": no such job, nothing moves
curl -sf --max-time 20 -o /dev/null "$BC_GW_URL/ds/img/k08.bin"
bc_expect job1c 200 - "GET /v1/jobs/job-1 after an unhinted GET" "$ADMIN/jobs/job-1"
cur=$(bc_json "$BC_TMP/job1c.body" cursor)
bc_assert_eq 8 "$cur" "another job's GET does not move this cursor"

# ---- 3. malformed hints and plans ----------------------------------------------
bc_stats_save "$BC_TMP/s0.json"
bc_expect badhint 200 - "a GET with malformed hints is answered" \
	-H "x-bucketcache-epoch: minus-one" -H "x-bucketcache-next: a,,b" \
	-H "x-bucketcache-pattern: sequential" "$BC_GW_URL/ds/img/k09.bin"
cmp -s "$DATA/ds/img/k09.bin" "$BC_TMP/badhint.body" || bc_fail "k09 bytes differ"
mal=$(bc_stats_delta "$BC_TMP/s0.json" hints_malformed)
bc_assert_eq 2 "$mal" "two malformed hints counted, the good one not"
printf 'ok/key\na/../b\n' >"$BC_TMP/badplan"
bc_expect badplan 400 InvalidArgument "a plan with a dot segment" -X PUT \
	--data-binary @"$BC_TMP/badplan" "$ADMIN/jobs/job-2/plan?bucket=ds"
bc_expect nobucket 400 InvalidArgument "a plan without a bucket" -X PUT \
	--data-binary @"$BC_TMP/plan0" "$ADMIN/jobs/job-2/plan"
bc_expect badid 400 InvalidArgument "a job id with a space" -X PUT \
	--data-binary @"$BC_TMP/plan0" "$ADMIN/jobs/job%202/plan?bucket=ds"
bc_expect ep5 200 - "a first plan at epoch 5" -X PUT \
	--data-binary @"$BC_TMP/plan0" "$ADMIN/jobs/job-4/plan?bucket=ds&epoch=5"
bc_expect oldepoch 400 InvalidArgument "an epoch below the current one" \
	-X PUT --data-binary @"$BC_TMP/plan0" \
	"$ADMIN/jobs/job-4/plan?bucket=ds&epoch=4"

# ---- 4. a million keys -------------------------------------------------------
"$BC_PY" -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1000000):
        f.write("train/shard-%04d/img-%07d.jpg\n" % (i % 1024, (i * 104729) % 1000000))
' "$BC_TMP/plan1m"
# gw_cpu_ms: the gateway's CPU time so far (user + system), in ms
gw_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' \
	    "/proc/$BC_GW_PID/stat"
}
t0=$(date +%s%N)
c0=$(gw_cpu_ms)
bc_expect big 200 - "PUT a plan of 1,000,000 keys" -X PUT \
	--max-time 300 --data-binary @"$BC_TMP/plan1m" "$ADMIN/jobs/big/plan?bucket=ds"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
cpu=$(( $(gw_cpu_ms) - c0 ))
bc_log "a 1,000,000-key plan (33 MB) accepted in $ms ms, upload included; the gateway's CPU: $cpu ms"
keys=$(bc_json "$BC_TMP/big.body" keys)
bc_assert_eq 1000000 "$keys" "all of its keys"
# The gateway's CPU, not wall time: beside a loaded suite the upload alone
# took 10.7 s wall; the plan's parse is what this bounds.
bc_assert_ge 5000 "$cpu" "parsed and kept in 5 s of the gateway's CPU (sanitizer builds too)"

# ---- 5. access ---------------------------------------------------------------
RELAY=(-H "X-Forwarded-For: 203.0.113.9")
bc_expect r_put 403 AccessDenied "a relayed PUT without the token" -X PUT \
	"${RELAY[@]}" --data-binary @"$BC_TMP/plan0" "$ADMIN/jobs/job-3/plan?bucket=ds"
bc_expect r_get 403 AccessDenied "a relayed GET /v1/jobs without the token" \
	"${RELAY[@]}" "$ADMIN/jobs"
bc_expect r_del 403 AccessDenied "a relayed DELETE without the token" \
	-X DELETE "${RELAY[@]}" "$ADMIN/jobs/job-1"
bc_expect t_put 200 - "a relayed PUT with the token" -X PUT "${RELAY[@]}" \
	-H "x-bucketcache-admin-token: s3cret" --data-binary @"$BC_TMP/plan0" \
	"$ADMIN/jobs/job-3/plan?bucket=ds"

# ---- 6. DELETE ends a job ----------------------------------------------------
bc_expect del 204 - "DELETE /v1/jobs/job-1" -X DELETE "$ADMIN/jobs/job-1"
bc_expect gone 404 NoSuchKey "the job is gone" "$ADMIN/jobs/job-1"
bc_expect gone2 404 NoSuchKey "a second DELETE" -X DELETE "$ADMIN/jobs/job-1"
bc_stop_gateway

# ---- 7. hints are not forwarded ---------------------------------------------
HLOG=$BC_TMP/origin-headers
PF=$BC_TMP/origin.port
"$BC_PY" - "$HLOG" "$PF" <<'PYEOF' >"$BC_TMP/origin.log" 2>&1 &
import http.server, sys
log, pf = sys.argv[1], sys.argv[2]
BODY = b"0123456789" * 100
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, body):
        with open(log, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path,
                    " ".join(k.lower() for k in self.headers.keys())))
        if not self.path.startswith("/b/obj"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        first, last, status = 0, len(BODY) - 1, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, b = rng[6:].split("-")
            first = int(a)
            last = min(int(b), last) if b else last
            status = 206
        self.send_response(status)
        self.send_header("ETag", '"0123abcd0123abcd0123abcd0123abcd"')
        self.send_header("Last-Modified", "Wed, 01 Jan 2025 00:00:00 GMT")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(last - first + 1))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(BODY)))
        self.end_headers()
        if body:
            self.wfile.write(BODY[first:last + 1])
    def do_GET(self):
        self.answer(True)
    def do_HEAD(self):
        self.answer(False)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(pf, "w").write(str(srv.server_address[1]))
srv.serve_forever()
PYEOF
BC_PIDS+=("$!")
for i in $(seq 100); do [ -s "$PF" ] && break; sleep 0.1; done
[ -s "$PF" ] || bc_fail "the recording origin did not start"
OPORT=$(cat "$PF")
bc_start_gateway --upstream "http://127.0.0.1:$OPORT" --anonymous \
	--mem-size 64MiB
bc_expect hinted 200 - "a hinted GET through a recording origin" \
	-H "x-bucketcache-job: j9" -H "x-bucketcache-next: obj2,obj3" \
	-H "x-bucketcache-pattern: shuffle" -H "x-bucketcache-epoch: 2" \
	"$BC_GW_URL/b/obj1"
sz=$(stat -c %s "$BC_TMP/hinted.body")
bc_assert_eq 1000 "$sz" "the origin's bytes"
# versionId=null (the version an unversioned bucket overwrites in place)
# bypasses the cache: the client's headers are relayed
bc_expect relayed 200 - "a hinted GET relayed to the origin" \
	-H "x-bucketcache-job: j9" -H "x-bucketcache-next: obj2,obj3" \
	-H "x-bucketcache-pattern: shuffle" -H "x-bucketcache-epoch: 2" \
	-H "x-custom-probe: 1" "$BC_GW_URL/b/obj1?versionId=null"
nreq=$(grep -c 'x-custom-probe' "$HLOG" || true)
bc_assert_eq 1 "$nreq" "the relayed GET reached the origin with the client's headers"
leaked=$(grep -ci 'x-bucketcache' "$HLOG" || true)
bc_assert_eq 0 "$leaked" "no x-bucketcache-* header reached the origin"

# ---- 8. a planned job's prefetch follows its plan, not its -next hints --------
# origin_gets KEY: the GETs of b/KEY the origin logged, once there is one
# or 10 s have passed
origin_gets() {
	for _ in $(seq 100); do
		grep -q "^GET /b/$1 " "$HLOG" && break
		sleep 0.1
	done
	grep -c "^GET /b/$1 " "$HLOG" || true
}
printf 'obj10\nobj11\nobj12\n' >"$BC_TMP/plan8"
bc_expect put8 200 - "PUT job j8's plan" -X PUT \
	--data-binary @"$BC_TMP/plan8" "$BC_GW_URL/_bucketcache/v1/jobs/j8/plan?bucket=b"
n=$(origin_gets obj12)
bc_assert_eq 1 "$n" "the plan's keys were prefetched once it was posted"
bc_expect planned 200 - "a GET of j8 hinting keys that are not its plan's" \
	-H "x-bucketcache-job: j8" -H "x-bucketcache-next: obj90,obj91" \
	"$BC_GW_URL/b/obj10"
sleep 1   # the prefetcher's tick is 20 ms; a hint's keys go out within it
n=$(grep -c '^GET /b/obj9[01] ' "$HLOG" || true)
bc_assert_eq 0 "$n" "the hinted keys were not prefetched: the job's plan feeds its prefetch"
# read to the plan's end, its window is empty: the hint feeds the job
bc_expect planned2 200 - "j8 reads the plan's second key" \
	-H "x-bucketcache-job: j8" "$BC_GW_URL/b/obj11"
sleep 0.1   # past the prefetcher's tick: the next read feeds it afresh
bc_expect planned3 200 - "j8 reads the plan's last key, hinting obj93" \
	-H "x-bucketcache-job: j8" -H "x-bucketcache-next: obj93" \
	"$BC_GW_URL/b/obj12"
n=$(origin_gets obj93)
bc_assert_eq 1 "$n" "past the plan's end, the hinted key was prefetched"
bc_stop_gateway

bc_done 62
