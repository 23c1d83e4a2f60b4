#!/bin/bash
# test_stats_hostile.sh — rejected requests must not reach the per-bucket
# stats, and /stats and /metrics stay valid whatever names clients send:
# GET /%EB%FF/x (400) once created a bucket entry whose name is not UTF-8,
# which broke /stats as JSON and /metrics as UTF-8; 70 unauthenticated
# requests with made-up bucket names filled all 64 per-bucket slots. Now a
# bucket is counted only for authorized requests (an unsigned one, which
# goes upstream unsigned, only when the upstream let it through), names
# are escaped, and
# a real bucket still gets its own entry afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug
GW=$BC_GW_URL
SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER)
BAD=(--aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong-secret)
WHO=(--aws-sigv4 "aws:amz:us-east-1:s3" --user NOBODY:wrong-secret)
UNS=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")

# check_docs TAG: /stats is JSON (strict UTF-8) whose per-bucket entries
# are exactly the buckets in $WANT (space-separated, "" for none), and
# /metrics is valid UTF-8 text format whose bucket labels are the same.
check_docs() {
	local tag=$1
	curl -sf --max-time 10 -o "$BC_TMP/$tag.json" "$GW/_bucketcache/stats" ||
		bc_fail "$tag: cannot read /stats"
	curl -sf --max-time 10 -o "$BC_TMP/$tag.prom" "$GW/_bucketcache/metrics" ||
		bc_fail "$tag: cannot read /metrics"
	bc_py "$BC_TMP/$tag.json" "$BC_TMP/$tag.prom" "$WANT" "$tag" <<'EOF'
import json, re, sys
from itlib import ok, done
jpath, ppath, want, tag = sys.argv[1:5]
want = set(want.split())
raw = open(jpath, "rb").read()
try:
    d = json.loads(raw.decode("utf-8"))
except ValueError as e:
    sys.exit("%s: /stats is not valid JSON (%s): %r" % (tag, e, raw[-600:]))
ok(True, "%s: /stats is valid JSON" % tag)
got = set(d.get("buckets", {}))
if got != want:
    sys.exit("%s: /stats buckets %r, expected %r" % (tag, sorted(got), sorted(want)))
ok(True, "%s: /stats names exactly the buckets %s" % (tag, sorted(want)))
raw = open(ppath, "rb").read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("%s: /metrics is not UTF-8: %s" % (tag, e))
label = r'"(?:[^"\\\n]|\\[\\"n])*"'
sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*=%s'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*=%s)*\})? \S+$' % (label, label))
buckets = set()
for line in text.splitlines():
    if line.startswith("#"):
        continue
    if not sample.match(line):
        sys.exit("%s: bad /metrics line %r" % (tag, line))
    m = re.match(r'^bucketcache_bucket_\w+\{bucket="([^"]*)"\}', line)
    if m:
        buckets.add(m.group(1))
ok(True, "%s: /metrics is valid UTF-8 text format" % tag)
if buckets != want:
    sys.exit("%s: /metrics bucket labels %r, expected %r" % (tag, sorted(buckets), sorted(want)))
ok(True, "%s: /metrics labels exactly the buckets %s" % (tag, sorted(want)))
done()
EOF
}

# ---- the finding's request ---------------------------------------------------
WANT=""
check_docs start
bc_stats_save "$BC_TMP/s0.json"
# (status only: the error's <Resource> echoes the raw bytes)
bc_expect bad-utf8 400 - "GET /%EB%FF/x" --path-as-is "$GW/%EB%FF/x"
bc_expect bad-utf8-signed 400 - "signed GET /%EB%FF/x" \
	"${SIG[@]}" "${UNS[@]}" --path-as-is "$GW/%EB%FF/x"
bc_expect bad-quote 400 InvalidBucketName 'GET /a%22b%0A/x' --path-as-is "$GW/a%22b%0A/x"
check_docs after-400

# ---- 70 made-up bucket names, none authenticated -----------------------------
# a wrong secret, an unknown key (refused by the gateway), no signature at
# all (no --anonymous: sent upstream unsigned, and refused there, issue 9)
fx0=$(bc_fixture_stats rejected_by_code.AccessDenied)
for i in $(seq -w 0 69); do
	case $((10#$i % 3)) in
	0) st=$(bc_req "junk-$i" "${BAD[@]}" "${UNS[@]}" "$GW/junk-$i/x") ;;
	1) st=$(bc_req "junk-$i" "${WHO[@]}" "${UNS[@]}" "$GW/junk-$i/x") ;;
	2) st=$(bc_req "junk-$i" "$GW/junk-$i/x") ;;
	esac
	[ "$st" = 403 ] || bc_fail "junk-$i: expected 403, got $st"
done
bc_pass "70 unauthenticated requests for made-up buckets: 403 each"
v=$(bc_stats_delta "$BC_TMP/s0.json" auth_failures)
bc_assert_ge "$v" 47 "stats: the 47 signature refusals are auth failures"
v=$(bc_fixture_stats rejected_by_code.AccessDenied)
bc_assert_eq $((fx0 + 23)) "$v" "the 23 unsigned ones were the upstream's to refuse"
v=$(bc_stats_delta "$BC_TMP/s0.json" requests)
bc_assert_ge "$v" 73 "stats: the refused requests are still counted as requests"
check_docs after-junk

# ---- a real bucket is still counted -------------------------------------------
bc_expect mb 200 - "create a real bucket" "${SIG[@]}" "${UNS[@]}" -X PUT "$GW/real-bucket"
bc_expect put 200 - "put an object" "${SIG[@]}" "${UNS[@]}" -X PUT --data-binary "x" \
	"$GW/real-bucket/x"
bc_expect get 200 - "get it" "${SIG[@]}" "${UNS[@]}" "$GW/real-bucket/x"
v=$(bc_stats_get buckets.real-bucket.requests)
bc_assert_eq 3 "$v" "stats: the real bucket's 3 requests"
WANT="real-bucket"
check_docs after-real
bc_stop_gateway
bc_done 30
