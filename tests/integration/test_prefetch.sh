#!/bin/bash
# test_prefetch.sh — the prefetcher through a real gateway (file:// origin,
# curl): a job that posted its plan before reading finds its first keys
# prefetched at once (its first read a hit), reads it in order and finds
# the next keys already in memory (x-bucketcache: hit) without having
# asked for them; a job that sends x-bucketcache-next gets those
# keys prefetched; nothing prefetched is wasted; per-job stats count the
# reads and each job's prefetches (issued, bytes, used, wasted, late, in
# /stats, /v1/jobs and /metrics) and /stats shows its cursor, and
# --prefetch-concurrency 0 turns prefetching off.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics

DATA=$BC_TMP/data
mkdir -p "$DATA/ds/img"
N=30
for i in $(seq -w 0 $((N - 1))); do
	bc_mkfile "$DATA/ds/img/k$i.bin" $(( 20000 + 10#$i * 37 ))
done
for i in $(seq -w 0 $((N - 1))); do echo "img/k$i.bin"; done >"$BC_TMP/plan"

bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB
ADMIN=$BC_GW_URL/_bucketcache/v1

# wait_for STAT MIN: until counter STAT reaches MIN (5 s at most)
wait_for() {
	local i v
	for i in $(seq 50); do
		v=$(bc_stats_get "$1")
		[ "$v" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# get_as JOB KEYINDEX [HEADER...]: GETs the key as JOB, compares bytes,
# prints the x-bucketcache header
get_as() {
	local job=$1 i=$2
	shift 2
	curl -sf --max-time 20 -H "x-bucketcache-job: $job" "$@" \
		-D "$BC_TMP/h" -o "$BC_TMP/got" "$BC_GW_URL/ds/img/k$i.bin" ||
		return 1
	cmp -s "$DATA/ds/img/k$i.bin" "$BC_TMP/got" || return 1
	tr -d '\r' <"$BC_TMP/h" | awk -F': ' 'tolower($1) == "x-bucketcache" { print $2 }'
}

# ---- a plan: the reads after the first are prefetched --------------------
bc_expect put 200 - "PUT the job's plan" -X PUT --data-binary @"$BC_TMP/plan" \
	"$ADMIN/jobs/train/plan?bucket=ds"
bc_stats_save "$BC_TMP/s0.json"
wait_for prefetch_issued 4 || bc_fail "no prefetch started when the plan came"
bc_pass "a plan posted before its job reads starts prefetches at once (issue 25)"
wait_for prefetch_bytes 80000 ||   # the plan's first 4 keys, stored
	bc_fail "the plan's first keys were not prefetched whole"
first=$(get_as train 00) || bc_fail "first read"
bc_assert_eq hit "$first" "so the job's first read is a hit"
hits=1 misses=0
for i in $(seq -w 1 $((N - 1))); do
	h=$(get_as train "$i") || bc_fail "read k$i"
	if [ "$h" = hit ]; then hits=$((hits + 1)); else misses=$((misses + 1)); fi
	sleep 0.02   # a training step: the prefetcher's tick keeps ahead
done
echo "# plan: $hits hits, $misses misses of $N reads" >&2
bc_assert_ge "$hits" $(( N * 9 / 10 )) "at least 90% of the planned reads are hits"
used=$(bc_stats_delta "$BC_TMP/s0.json" prefetch_used)
bc_assert_ge "$used" $(( (N - 1) * 9 / 10 )) "the prefetched chunks were used"
wasted=$(bc_stats_get prefetch_wasted)
bc_assert_eq 0 "$wasted" "nothing prefetched was wasted"
bc_expect st 200 - "stats" "$BC_GW_URL/_bucketcache/stats"
jreq=$(bc_json "$BC_TMP/st.body" jobs.train.requests)
jhits=$(bc_json "$BC_TMP/st.body" jobs.train.cache_hits)
bc_assert_eq "$N" "$jreq" "per-job stats count the job's reads"
bc_assert_eq "$hits" "$jhits" "and its hits"
# one job prefetched so far: its prefetch counters are the totals
for c in prefetch_issued prefetch_bytes prefetch_used prefetch_wasted prefetch_late; do
	total=$(bc_json "$BC_TMP/st.body" "counters.$c")
	mine=$(bc_json "$BC_TMP/st.body" "jobs.train.$c")
	bc_assert_eq "$total" "$mine" "the job's $c is the total's"
done
jused=$(bc_json "$BC_TMP/st.body" jobs.train.prefetch_used)
jbytes=$(bc_json "$BC_TMP/st.body" jobs.train.prefetch_bytes)
bc_assert_ge "$jused" $(( (N - 1) * 9 / 10 )) "the job's prefetch_used counts its plan's reads"
bc_assert_ge "$jbytes" $(( jused * 20000 )) "and its prefetch_bytes their bytes"
v="$(bc_json "$BC_TMP/st.body" jobs.train.epoch) $(bc_json "$BC_TMP/st.body" jobs.train.cursor)"
v="$v $(bc_json "$BC_TMP/st.body" jobs.train.plan_keys)"
bc_assert_eq "0 $N $N" "$v" "/stats shows the job's epoch, cursor (its plan read through) and plan length"
bc_expect job 200 - "the job in the jobs API" "$ADMIN/jobs/train"
v=$(bc_json "$BC_TMP/job.body" cursor)
bc_assert_eq "$N" "$v" "the same cursor as /v1/jobs"
v=$(bc_json "$BC_TMP/job.body" prefetch_used)
bc_assert_eq "$jused" "$v" "/v1/jobs/train shows its prefetch_used"
v=$(bc_json "$BC_TMP/job.body" prefetch_wasted)
bc_assert_eq 0 "$v" "and its prefetch_wasted"
bc_expect metrics 200 - "metrics" "$BC_GW_URL/_bucketcache/metrics"
m=$(awk '$1 == "bucketcache_job_prefetch_used_total{bc_job=\"train\"}" { print $2 }' "$BC_TMP/metrics.body")
bc_assert_eq "$jused" "$m" "Prometheus has it with the job label"

# ---- hints: x-bucketcache-next names the keys to bring ---------------------
bc_stats_save "$BC_TMP/s1.json"
bc_expect del 204 - "the plan's job ends" -X DELETE "$ADMIN/jobs/train"
bc_expect inval 200 - "the cache forgets the bucket" -X DELETE \
	"$BC_GW_URL/_bucketcache/v1/cache?bucket=ds"
h=$(get_as hinted 00 -H "x-bucketcache-next: img/k01.bin,img/k02.bin,img/k03.bin") ||
	bc_fail "hinted read"
bc_assert_eq miss "$h" "the hinted read itself is a miss"
for t in $(seq 50); do   # the hinted read and its three next keys
	r=$(bc_stats_delta "$BC_TMP/s1.json" upstream_file_reads)
	[ "$r" -ge 4 ] && break
	sleep 0.1
done
sleep 0.2
h1=$(get_as hinted 01) h2=$(get_as hinted 02) h3=$(get_as hinted 03)
bc_assert_eq "hit hit hit" "$h1 $h2 $h3" "the hinted next keys were prefetched"
bc_expect st2 200 - "stats" "$BC_GW_URL/_bucketcache/stats"
v="$(bc_json "$BC_TMP/st2.body" jobs.hinted.prefetch_issued)"
v="$v $(bc_json "$BC_TMP/st2.body" jobs.hinted.prefetch_used)"
v="$v $(bc_json "$BC_TMP/st2.body" jobs.hinted.prefetch_wasted)"
bc_assert_eq "3 3 0" "$v" "the hinted job's prefetches: 3 issued, 3 used, none wasted"
v=$(bc_json "$BC_TMP/st2.body" jobs.train.prefetch_used)
bc_assert_eq "$jused" "$v" "and none counted for the other job"
v=$(bc_json "$BC_TMP/st2.body" jobs.train.plan_keys)
bc_assert_eq 0 "$v" "an ended job shows no plan in /stats"
bc_stop_gateway

# ---- --prefetch-concurrency 0: no prefetching -----------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --prefetch-concurrency 0
ADMIN=$BC_GW_URL/_bucketcache/v1
bc_expect put2 200 - "PUT the plan again" -X PUT --data-binary @"$BC_TMP/plan" \
	"$ADMIN/jobs/train/plan?bucket=ds"
get_as train 00 >/dev/null || bc_fail "read"
sleep 0.5
issued=$(bc_stats_get prefetch_issued)
bc_assert_eq 0 "$issued" "--prefetch-concurrency 0 prefetches nothing"
h=$(get_as train 01) || bc_fail "read"
bc_assert_eq miss "$h" "so the next read is a miss"
bc_stop_gateway
bc_done 38
