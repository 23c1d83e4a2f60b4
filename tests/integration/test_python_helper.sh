#!/bin/bash
# test_python_helper.sh — contrib/python (issue 11, item 7) against a real
# gateway on a file:// origin: the helper's unit tests pass; the example
# (contrib/python/examples/train_tiny.py: a DataLoader with 2 workers,
# HintedSampler over a seeded RandomSampler, install_hints on each worker's
# boto3 client) trains over every object, reading through the gateway
# (each object read from the directory once: the first epoch misses or
# finds the plan's prefetches, the second is all hits); plan PUTs are
# accepted for each epoch and the next (4 for 2 epochs), the job's GETs
# move its cursor and show in its per-job stats; with --client-key and
# --signed, the hint headers are SigV4-signed, the gateway accepts the
# signatures and the key allowed on the bucket posts its plans (a wrong
# secret fails the run).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
"$BC_PY" -c 'import torch' 2>/dev/null ||
	{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks torch (python3-torch)" >&2; exit 77; }
PYDIR=$BC_SRCDIR/contrib/python
EXAMPLE=$PYDIR/examples/train_tiny.py

# ---- the unit tests -----------------------------------------------------------
"$PYDIR/run-tests" >"$BC_TMP/unit.log" 2>&1 || { cat "$BC_TMP/unit.log" >&2; bc_fail "contrib/python/run-tests"; }
bc_pass "contrib/python unit tests pass"

# ---- the dataset ----------------------------------------------------------------
DATA=$BC_TMP/data
mkdir -p "$DATA/ds/images" "$DATA/ds/other"
N=12
total=0
for i in $(seq -w 1 $N); do
	sz=$(( 2000 + 10#$i * 3011 ))
	bc_mkfile "$DATA/ds/images/img $i,x.bin" "$sz"   # a space and a comma: hints URL-encode
	total=$(( total + sz ))
done
bc_mkfile "$DATA/ds/other/skip.bin" 100

run_example() {   # name, args...: runs the example, report in $BC_TMP/name.json
	local name=$1
	shift
	"$BC_PY" "$EXAMPLE" --endpoint "$BC_GW_URL" --bucket ds --prefix images/ \
		--workers 2 --batch-size 3 --epochs 2 --job "job-$name" \
		--report "$BC_TMP/$name.json" "$@" >"$BC_TMP/$name.log" 2>&1
}

# ---- unsigned, as the quickstart runs it ---------------------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB
bc_stats_save "$BC_TMP/s0.json"
run_example anon || { cat "$BC_TMP/anon.log" >&2; bc_fail "the example failed (unsigned)"; }
bc_pass "the example trains 2 epochs through the gateway (unsigned)"
for e in 0 1; do
	v=$(bc_json "$BC_TMP/anon.json" "epochs.$e.items")
	bc_assert_eq "$N" "$v" "epoch $e reads every object under the prefix"
	v=$(bc_json "$BC_TMP/anon.json" "epochs.$e.bytes")
	bc_assert_eq "$total" "$v" "epoch $e reads every byte"
done
gets=$(bc_stats_delta "$BC_TMP/s0.json" requests_by_op.GetObject.2xx)
miss=$(bc_stats_delta "$BC_TMP/s0.json" cache_misses)
hits=$(bc_stats_delta "$BC_TMP/s0.json" cache_hits)
reads=$(bc_stats_delta "$BC_TMP/s0.json" upstream_file_reads)
bc_assert_eq $(( 2 * N )) "$gets" "every read went through the gateway"
bc_assert_eq $(( 2 * N )) $(( miss + hits )) "every read is a hit or a miss"
bc_assert_ge "$hits" "$N" "the second epoch is all hits (the first some, from prefetches of the plan)"
bc_assert_eq "$N" "$reads" "each object is read from the directory once, prefetched or not"
put=$(bc_json "$BC_TMP/anon.json" plans.plans_put)
failed=$(bc_json "$BC_TMP/anon.json" plans.plans_failed)
bc_assert_eq "4 0" "$put $failed" "plans for each epoch and the next were accepted (2 + 2)"
bc_expect jobs 200 - "the gateway lists the job" "$BC_GW_URL/_bucketcache/v1/jobs/job-anon"
v=$(bc_json "$BC_TMP/jobs.body" reads)
bc_assert_eq $(( 2 * N )) "$v" "its GETs moved its cursor (every read recorded)"
bc_expect st 200 - "stats" "$BC_GW_URL/_bucketcache/stats"
v=$(bc_json "$BC_TMP/st.body" jobs.job-anon.requests)
bc_assert_eq $(( 2 * N )) "$v" "per-job stats count the job's reads"
v=$(bc_json "$BC_TMP/st.body" counters.hints_malformed)
bc_assert_eq 0 "$v" "the hook's hints are well formed"
bc_stop_gateway

# ---- signed: the hint headers are under the signature ---------------------------
bc_start_gateway --upstream "file://$DATA" --mem-size 64MiB --client-key JOBKEY1:secret1:ds
bc_stats_save "$BC_TMP/s1.json"
AWS_ACCESS_KEY_ID=JOBKEY1 AWS_SECRET_ACCESS_KEY=secret1 run_example signed --signed ||
	{ cat "$BC_TMP/signed.log" >&2; bc_fail "the example failed (signed)"; }
bc_pass "the example trains 2 epochs through the gateway (SigV4, hints signed)"
v=$(bc_json "$BC_TMP/signed.json" "epochs.1.items")
bc_assert_eq "$N" "$v" "signed: the second epoch reads every object"
gets=$(bc_stats_delta "$BC_TMP/s1.json" requests_by_op.GetObject.2xx)
bc_assert_eq $(( 2 * N )) "$gets" "signed: every read went through the gateway"
af=$(bc_stats_delta "$BC_TMP/s1.json" auth_failures)
bc_assert_eq 0 "$af" "signed: no signature failed"
put=$(bc_json "$BC_TMP/signed.json" plans.plans_put)
failed=$(bc_json "$BC_TMP/signed.json" plans.plans_failed)
bc_assert_eq "4 0" "$put $failed" "signed: the key allowed on the bucket posts its plans"
rc=0
AWS_ACCESS_KEY_ID=JOBKEY1 AWS_SECRET_ACCESS_KEY=wrong run_example bad --signed --epochs 1 || rc=$?
bc_assert_ne 0 "$rc" "a wrong secret fails the run"
v=$(grep -Eo 'SignatureDoesNotMatch|InvalidAccessKeyId|AccessDenied|403' "$BC_TMP/bad.log" | head -1 || true)
bc_assert_match '.' "$v" "it fails on the gateway's signature check"
bc_stop_gateway

bc_done 27
