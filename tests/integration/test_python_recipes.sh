#!/bin/bash
# test_python_recipes.sh — the recipes of contrib/python/README that use a
# library Debian 12 has (issue 27, item 4), run exactly as the README
# shows them (its "# recipe: NAME" blocks; only ENDPOINT is pointed at
# this test's gateway), against a real gateway on a file:// origin with
# --anonymous and two client keys:
#   boto3           hints and a plan per epoch without torch: every read
#                   counts toward job resnet-boto3, its plan is accepted
#                   (the cursor moves), no hint is malformed or refused;
#   dataloader      torch DataLoader (2 workers) with HintedSampler: plans
#                   for 2 epochs and the next, job resnet-torch's reads;
#   fsspec          fsspec's HTTP filesystem (python3-fsspec) with
#                   hint_headers, unsigned: job resnet-fsspec;
#   access-key-job  boto3 without hints, signed with client key TRAINJOB7:
#                   the reads count toward job TRAINJOB7 and move the
#                   cursor of the plan that key posted.
# The recipes import bucketcache from contrib/python (PYTHONPATH).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
for m in torch fsspec aiohttp; do
	"$BC_PY" -c "import $m" 2>/dev/null ||
		{ echo "SKIP: $BC_NAME: /usr/bin/python3 lacks $m (contrib/install-deps --test)" >&2; exit 77; }
done
PYDIR=$BC_SRCDIR/contrib/python

# ---- the dataset: bucket demo, prefix images/ ----------------------------------
DATA=$BC_TMP/data
mkdir -p "$DATA/demo/images" "$DATA/demo/other"
N=10
total=0
: >"$BC_TMP/keys.txt"
for i in $(seq -w 1 $N); do
	sz=$(( 1500 + 10#$i * 2477 ))
	bc_mkfile "$DATA/demo/images/img $i.bin" "$sz"
	echo "images/img $i.bin" >>"$BC_TMP/keys.txt"
	total=$(( total + sz ))
done
bc_mkfile "$DATA/demo/other/skip.bin" 100

# recipe NAME: the README's block, ENDPOINT pointed at the gateway, in
# $BC_TMP/recipe-NAME.py
recipe() {
	"$BC_PY" - "$PYDIR/README" "$1" "$BC_GW_URL" >"$BC_TMP/recipe-$1.py" <<'PY'
import re, sys
readme, name, url = sys.argv[1:]
lines = open(readme, encoding="utf-8").read().split("\n")
start = [i for i, l in enumerate(lines) if l.strip() == "# recipe: " + name]
if len(start) != 1:
    sys.exit("README has %d '# recipe: %s' blocks" % (len(start), name))
out = []
for l in lines[start[0] + 1:]:
    if l.strip() and not l.startswith("    "):
        break
    out.append(l[4:])
src = "\n".join(out).rstrip() + "\n"
src, n = re.subn(r'(?m)^ENDPOINT = "[^"]*"$', 'ENDPOINT = %r' % url, src)
if n != 1:
    sys.exit("recipe %s: %d ENDPOINT lines" % (name, n))
sys.stdout.write(src)
PY
}

run_recipe() {   # NAME [env...]: runs it; output in $BC_TMP/recipe-NAME.log
	local name=$1 rc=0
	shift
	recipe "$name"
	(cd "$BC_TMP" && env "$@" PYTHONPATH="$PYDIR" "$BC_PY" "recipe-$name.py") \
		>"$BC_TMP/recipe-$name.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		cat "$BC_TMP/recipe-$name.py" "$BC_TMP/recipe-$name.log" >&2
		bc_fail "recipe $name exited $rc"
	fi
	bc_pass "recipe $name runs as the README shows it"
}

job_stat() {   # JOB FIELD: the job's per-job stats value
	bc_stats_get "jobs.$1.$2"
}

bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--client-key JOBKEY:jobsecret:demo --client-key TRAINJOB7:secret7:demo
cp "$BC_TMP/keys.txt" "$DATA/demo/images/keys.txt"
KEYS_LEN=$(wc -c <"$BC_TMP/keys.txt")
SIGNED=(AWS_ACCESS_KEY_ID=JOBKEY AWS_SECRET_ACCESS_KEY=jobsecret)

# ---- boto3 ------------------------------------------------------------------------
run_recipe boto3 "${SIGNED[@]}"
v=$(grep -c '^epoch [01] read 11 objects$' "$BC_TMP/recipe-boto3.log" || true)
bc_assert_eq 2 "$v" "boto3: two epochs of every object under the prefix (the manifest too)"
v=$(job_stat resnet-boto3 requests)
bc_assert_eq 22 "$v" "boto3: every GetObject counts toward job resnet-boto3 (its hint)"
v=$(job_stat resnet-boto3 bytes)
bc_assert_eq $(( 2 * (total + KEYS_LEN) )) "$v" "boto3: the job's bytes are every byte read"
bc_expect jb 200 - "boto3: the job has a plan" "$BC_GW_URL/_bucketcache/v1/jobs/resnet-boto3"
v=$(bc_json "$BC_TMP/jb.body" reads)
bc_assert_eq 22 "$v" "boto3: its reads followed its plans (cursor moved for each)"

# ---- torch DataLoader with HintedSampler -----------------------------------------------
run_recipe dataloader "${SIGNED[@]}"
v=$(grep -c "^epoch [01] read $(( total + KEYS_LEN )) bytes$" "$BC_TMP/recipe-dataloader.log" || true)
bc_assert_eq 2 "$v" "dataloader: two epochs, every byte"
v=$(grep -Eo "'plans_put': [0-9]+, 'plans_failed': [0-9]+" "$BC_TMP/recipe-dataloader.log" || true)
bc_assert_eq "'plans_put': 4, 'plans_failed': 0" "$v" "dataloader: plans for each epoch and the next were accepted"
v=$(job_stat resnet-torch requests)
bc_assert_eq 22 "$v" "dataloader: every read counts toward job resnet-torch (hints from the workers)"
bc_expect jt 200 - "dataloader: the job has a plan" "$BC_GW_URL/_bucketcache/v1/jobs/resnet-torch"
v=$(bc_json "$BC_TMP/jt.body" reads)
bc_assert_eq 22 "$v" "dataloader: every read moved the job's cursor"

# ---- fsspec, unsigned, with hint_headers -------------------------------------------------
run_recipe fsspec
v=$(grep -c "^epoch [01] read $total bytes$" "$BC_TMP/recipe-fsspec.log" || true)
bc_assert_eq 2 "$v" "fsspec: two epochs, every byte of the manifest's keys"
v=$(job_stat resnet-fsspec requests)
bc_assert_ge "$v" 21 "fsspec: its reads count toward job resnet-fsspec (hint_headers)"
v=$(job_stat resnet-fsspec bytes)
bc_assert_eq $(( 2 * total + KEYS_LEN )) "$v" "fsspec: the job's bytes are what it read"

# ---- the job named by the access key ---------------------------------------------------
run_recipe access-key-job
v=$(grep -c '^job TRAINJOB7 read 11 objects$' "$BC_TMP/recipe-access-key-job.log" || true)
bc_assert_eq 1 "$v" "access-key-job: access_key_job() names the job TRAINJOB7"
v=$(job_stat TRAINJOB7 requests)
bc_assert_eq 11 "$v" "access-key-job: reads without a hint count toward the access key's job"
bc_expect j7 200 - "access-key-job: the key's job, as the key sees it" \
	--aws-sigv4 aws:amz:us-east-1:s3 --user TRAINJOB7:secret7 \
	"$BC_GW_URL/_bucketcache/v1/jobs/TRAINJOB7"
v=$(bc_json "$BC_TMP/j7.body" reads)
bc_assert_eq 11 "$v" "access-key-job: the reads moved the cursor of the plan the key posted"

v=$(bc_stats_get hints_malformed)
bc_assert_eq 0 "$v" "no hint was malformed"
v=$(bc_stats_get hints_refused)
bc_assert_eq 0 "$v" "no hint named another key's job"
bc_stop_gateway

bc_done 25
