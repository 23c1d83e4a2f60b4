#!/bin/bash
# test_metrics_prom.sh — /_bucketcache/metrics as Prometheus expects it
# (issue 27, item 5), on a live gateway in front of s3rver with a disk and
# a Redis tier, after writes, reads (a hinted job and a plan) and a fold
# of the scale estimates:
#   - `promtool check metrics` (Debian's prometheus) finds nothing;
#   - no series has a "job" label (Prometheus's own: ours is bc_job), no
#     smoothed rate gauge Prometheus computes itself, no _us/_ms unit;
#   - the process_* families are there and sane;
#   - contrib/monitoring/alerts.yml passes `promtool check rules` and its
#     unit tests (`promtool test rules alerts_test.yml`), and
#     every bucketcache_* and process_* metric named by the rules or by a
#     panel of contrib/monitoring/grafana-dashboard.json is on /metrics.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_redis.sh"

bc_require_basics
bc_skip_unless_tool promtool redis-server redis-cli
MON=$BC_SRCDIR/contrib/monitoring

bc_start_s3rver --configure-bucket demo
bc_start_redis
mkdir -p "$BC_TMP/disk"
bc_start_gateway --upstream "$BC_S3RVER_URL" --mem-size 64MiB \
	--disk-dir "$BC_TMP/disk" --disk-size 64MiB \
	--redis "$BC_REDIS_URL" --redis-size 32MiB --chunk-size 64KiB

# ---- traffic ---------------------------------------------------------------------------
SIGN=(--aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
bc_mkfile "$BC_TMP/obj" 300000
bc_expect put 200 - "PUT an object through the gateway" -X PUT --data-binary "@$BC_TMP/obj" \
	"${SIGN[@]}" "$BC_GW_URL/demo/ds/obj1"
printf 'ds/obj1\n' >"$BC_TMP/plan"
bc_expect plan 200 - "a plan for job train:1" -X PUT --data-binary "@$BC_TMP/plan" \
	"$BC_GW_URL/_bucketcache/v1/jobs/train:1/plan?bucket=demo&epoch=0"
for i in 1 2; do
	bc_expect "get$i" 200 - "GET $i, hinted job train:1" -H 'x-bucketcache-job: train:1' \
		"${SIGN[@]}" "$BC_GW_URL/demo/ds/obj1"
done
bc_expect get3 200 - "GET, no hint (the access key's job)" \
	"${SIGN[@]}" "$BC_GW_URL/demo/ds/obj1"
sleep 1.5   # a fold of the scale estimates (--scale-interval 1s)
bc_expect metrics 200 - "/metrics" "$BC_GW_URL/_bucketcache/metrics"
M=$BC_TMP/metrics.body

# ---- promtool check metrics --------------------------------------------------------------
rc=0
promtool check metrics <"$M" >"$BC_TMP/promtool.out" 2>&1 || rc=$?
v=$(cat "$BC_TMP/promtool.out")
bc_assert_eq "0" "$rc" "promtool check metrics exits 0 [$v]"
bc_assert_eq "" "$v" "promtool check metrics has no complaint"
v=$(grep -Ec '^bucketcache_job_requests_total\{bc_job="train:1"\} 2$' "$M" || true)
bc_assert_eq 1 "$v" "the hinted job's reads, labelled bc_job"
v=$(grep -Ec '^bucketcache_job_requests_total\{bc_job="S3RVER"\} 1$' "$M" || true)
bc_assert_eq 1 "$v" "the unhinted read counts toward the access key's job"
v=$(grep -Ec '[{,]job=' "$M" || true)
bc_assert_eq 0 "$v" "no series carries a job label"
v=$(grep -Ec '^bucketcache_job_rate_bytes_per_second' "$M" || true)
bc_assert_eq 0 "$v" "no smoothed job rate gauge (rate() of bucketcache_job_bytes_total)"
v=$(grep -E '^# TYPE ' "$M" | awk '{print $3}' | grep -E '_(us|ms)(_total)?$' || true)
bc_assert_eq "" "$v" "no family in microseconds or milliseconds"
v=$(grep -Ec '^bucketcache_job_wait_seconds_total\{bc_job="train:1"\} [0-9]+\.[0-9]+$' "$M" || true)
bc_assert_eq 1 "$v" "the job's waits in seconds"
v=$(grep -Ec '^bucketcache_tier_scan_seconds\{tier="disk"\} ' "$M" || true)
bc_assert_eq 1 "$v" "the disk scan's duration in seconds"

# ---- process_* ---------------------------------------------------------------------------
for f in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
	process_open_fds process_max_fds process_start_time_seconds; do
	v=$(awk -v f="$f" '$1 == f { print $2 }' "$M")
	bc_assert_match '^[0-9]+(\.[0-9]+)?$' "$v" "$f is there"
done
rss=$(awk '$1 == "process_resident_memory_bytes" { print $2 }' "$M")
pss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$BC_GW_PID/status")
v=$(( rss > pss / 2 && rss < pss * 2 ? 1 : 0 ))
bc_assert_eq 1 "$v" "process_resident_memory_bytes ($rss) is the process's VmRSS ($pss) within 2x"
fds=$(awk '$1 == "process_open_fds" { print $2 }' "$M")
real=$(ls "/proc/$BC_GW_PID/fd" | wc -l)
v=$(( fds >= real - 5 && fds <= real + 5 ? 1 : 0 ))
bc_assert_eq 1 "$v" "process_open_fds ($fds) is what /proc shows ($real) within 5"
st=$(awk '$1 == "process_start_time_seconds" { printf "%d", $2 }' "$M")
now=$(date +%s)
v=$(( st <= now && st > now - 120 ? 1 : 0 ))
bc_assert_eq 1 "$v" "process_start_time_seconds ($st) is within the test's last 2 minutes ($now)"

# ---- contrib/monitoring -----------------------------------------------------------------
rc=0
promtool check rules "$MON/alerts.yml" >"$BC_TMP/rules.out" 2>&1 || rc=$?
v=$(grep -c 'SUCCESS' "$BC_TMP/rules.out" || true)
bc_assert_eq "0 1" "$rc $v" "promtool check rules contrib/monitoring/alerts.yml"
rc=0
(cd "$MON" && promtool test rules alerts_test.yml) >"$BC_TMP/rules-test.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || cat "$BC_TMP/rules-test.out" >&2
bc_assert_eq 0 "$rc" "promtool test rules: the alerts fire as alerts_test.yml expects"
bc_py "$M" "$MON/grafana-dashboard.json" "$MON/alerts.yml" <<'PY'
import json, re, sys
import itlib

metrics, dash, rules = sys.argv[1:]
have = set()
for line in open(metrics, encoding="utf-8"):
    if line.startswith("# TYPE "):
        have.add(line.split()[2])
    elif line.strip() and not line.startswith("#"):
        have.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
NAME = re.compile(r"\b((?:bucketcache|process)_[a-zA-Z0-9_]+)\b")

d = json.load(open(dash, encoding="utf-8"))
exprs = []
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "expr" and isinstance(v, str):
                exprs.append(v)
            else:
                walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(d)
itlib.ok(len(exprs) >= 30, "the dashboard's panels have queries (%d)" % len(exprs))
named = set()
for e in exprs:
    named |= set(NAME.findall(e))
missing = sorted(n for n in named if n not in have)
itlib.ok(not missing, "every metric a panel names (%d) is on /metrics" % len(named), missing)
itlib.ok(not any(re.search(r"[{,(]\s*job\s*[=!~]", e) for e in exprs) and
         not any(re.search(r"by \(([^)]*\b)?job\b", e) for e in exprs),
         "no panel selects or groups by the job label (bc_job is ours)")
text = open(rules, encoding="utf-8").read()
exprs = re.findall(r"expr: (\|\n(?:\s{10,}.*\n)+|.*)", text)
itlib.ok(len(exprs) >= 10, "the rules have expressions (%d)" % len(exprs))
named = set(NAME.findall(text))
missing = sorted(n for n in named if n not in have)
itlib.ok(not missing, "every metric a rule names (%d) is on /metrics" % len(named), missing)
itlib.done()
PY
bc_stop_gateway

bc_done 33
