#!/bin/bash
# test_awscli.sh — aws-cli v2 through the gateway, compared with the same
# commands sent straight to the verifying fixture (s3rver behind it):
# mb, cp up/down (small, and 40 MiB = multipart), ls, get-object --range,
# head-object, rm, rb. Bytes are compared with cmp; the gateway's upstream
# requests must all pass the fixture's SigV4 check; stats must move.
# test_rgw_awscli.sh runs it against Ceph RGW (BC_UPSTREAM=rgw), which
# checks the signatures itself.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN"
bc_start_upstream
bc_start_gateway --upstream "$BC_FIXTURE_URL" --log-level debug

SMALL=$BC_TMP/small.bin
BIG=$BC_TMP/big.bin
BIG_SIZE=$((40 * 1024 * 1024))
bc_mkfile "$SMALL" 3000
bc_mkfile "$BIG" "$BIG_SIZE"

# run_aws OUTFILE EP ARGS...: aws-cli must succeed; stdout to OUTFILE.
run_aws() {
	local out=$1
	shift
	if ! bc_aws "$@" >"$out" 2>"$out.err"; then
		cat "$out" "$out.err" >&2
		bc_fail "aws ${*:2} failed (endpoint $1)"
	fi
}

# flow EP TAG BUCKET: the whole client flow; normalized results in $BC_TMP/TAG/.
flow() {
	local ep=$1 tag=$2 b=$3 o=$BC_TMP/$2 rc v want
	mkdir -p "$o"
	run_aws "$o/mb.raw" "$ep" s3 mb "s3://$b"
	run_aws "$o/cp-small.raw" "$ep" s3 cp --no-progress "$SMALL" "s3://$b/dir/small.bin"
	run_aws "$o/cp-big.raw" "$ep" s3 cp --no-progress "$BIG" "s3://$b/big.bin"
	run_aws "$o/ls-root.raw" "$ep" s3 ls "s3://$b/"
	run_aws "$o/ls-rec.raw" "$ep" s3 ls --recursive "s3://$b/"
	run_aws "$o/down-small.raw" "$ep" s3 cp --no-progress "s3://$b/dir/small.bin" "$o/small.down"
	run_aws "$o/down-big.raw" "$ep" s3 cp --no-progress "s3://$b/big.bin" "$o/big.down"
	bc_assert_same_file "$SMALL" "$o/small.down" "$tag: small object round trip"
	bc_assert_same_file "$BIG" "$o/big.down" "$tag: 40 MiB multipart object round trip"

	run_aws "$o/range.json" "$ep" s3api get-object --bucket "$b" --key big.bin \
		--range bytes=100-199 "$o/range.down"
	bc_slice "$BIG" 100 199 >"$o/range.want"
	bc_assert_same_file "$o/range.want" "$o/range.down" "$tag: get-object --range bytes=100-199"
	v=$(bc_json "$o/range.json" ContentRange)
	bc_assert_eq "bytes 100-199/$BIG_SIZE" "$v" "$tag: ContentRange"
	v=$(bc_json "$o/range.json" ContentLength)
	bc_assert_eq 100 "$v" "$tag: range ContentLength"

	run_aws "$o/range2.json" "$ep" s3api get-object --bucket "$b" --key big.bin \
		--range "bytes=$((BIG_SIZE - 1000))-$((BIG_SIZE + 5000))" "$o/range2.down"
	bc_slice "$BIG" $((BIG_SIZE - 1000)) $((BIG_SIZE - 1)) >"$o/range2.want"
	bc_assert_same_file "$o/range2.want" "$o/range2.down" "$tag: range past the end is clipped"

	run_aws "$o/head-small.json" "$ep" s3api head-object --bucket "$b" --key dir/small.bin
	run_aws "$o/head-big.json" "$ep" s3api head-object --bucket "$b" --key big.bin
	v=$(bc_json "$o/head-small.json" ContentLength)
	bc_assert_eq 3000 "$v" "$tag: head small ContentLength"
	v=$(bc_json "$o/head-small.json" ETag)
	want=$(bc_md5_etag "$SMALL")
	bc_assert_eq "$want" "$v" "$tag: head small ETag is the MD5"
	v=$(bc_json "$o/head-big.json" ContentLength)
	bc_assert_eq "$BIG_SIZE" "$v" "$tag: head big ContentLength"

	run_aws "$o/rm.raw" "$ep" s3 rm "s3://$b/dir/small.bin"
	rc=0
	bc_aws "$ep" s3api head-object --bucket "$b" --key dir/small.bin >"$o/head-gone.raw" 2>&1 || rc=$?
	bc_assert_ne 0 "$rc" "$tag: head-object after rm fails"
	v=$(cat "$o/head-gone.raw")
	bc_assert_match '404|Not Found' "$v" "$tag: head-object after rm is 404"
	rc=0
	bc_aws "$ep" s3 cp "s3://$b/dir/small.bin" "$o/gone.down" >"$o/get-gone.raw" 2>&1 || rc=$?
	bc_assert_ne 0 "$rc" "$tag: cp of a removed object fails"
	run_aws "$o/ls-after.raw" "$ep" s3 ls --recursive "s3://$b/"

	# normalized, comparable results
	{
		echo "== mb"; cat "$o/mb.raw"
		echo "== cp"; cat "$o/cp-small.raw" "$o/cp-big.raw"
		echo "== ls"; awk '{ print $(NF-1), $NF }' "$o/ls-root.raw"
		echo "== ls -r"; awk '{ print $3, $4 }' "$o/ls-rec.raw"
		# aws prints the local path relative to the cwd when it can
		echo "== down"; sed -E "s#( to ).*/#\1#" "$o/down-small.raw" "$o/down-big.raw"
		for f in range range2 head-small head-big; do
			echo "== $f"
			bc_json_keys "$o/$f.json" ContentLength ContentRange ETag AcceptRanges ContentType
		done
		echo "== rm"; cat "$o/rm.raw"
		echo "== ls after rm"; awk '{ print $3, $4 }' "$o/ls-after.raw"
	} | sed "s/$b/BUCKET/g" >"$o/result.txt"
}

# straight to the fixture: the reference
flow "$BC_FIXTURE_URL" direct cli-direct
bc_assert_fixture_clean "aws-cli direct"

bc_fixture_reset
bc_stats_save "$BC_TMP/stats0.json"
flow "$BC_GW_URL" gateway cli-gw
bc_assert_fixture_clean "aws-cli through the gateway"

if ! diff -u "$BC_TMP/direct/result.txt" "$BC_TMP/gateway/result.txt"; then
	bc_fail "aws-cli results through the gateway differ from direct ones"
fi
bc_pass "aws-cli results through the gateway equal the direct ones"

# the multipart upload reached the upstream as a multipart upload
v=$(bc_fixture_stats by_op.UploadPart)
bc_assert_ge "$v" 5 "upstream saw >= 5 UploadPart"
v=$(bc_fixture_stats by_op.CreateMultipartUpload)
bc_assert_ge "$v" 1 "upstream saw CreateMultipartUpload"
v=$(bc_fixture_stats by_op.CompleteMultipartUpload)
bc_assert_ge "$v" 1 "upstream saw CompleteMultipartUpload"
v=$(bc_fixture_stats by_op.DeleteObject)
bc_assert_ge "$v" 1 "upstream saw the DeleteObject"

# gateway counters (varnishtest-style expectations)
v=$(bc_stats_delta "$BC_TMP/stats0.json" requests)
bc_assert_ge "$v" 15 "stats: requests counted"
v=$(bc_stats_delta "$BC_TMP/stats0.json" bytes_in)
bc_assert_ge "$v" "$BIG_SIZE" "stats: bytes_in >= upload"
v=$(bc_stats_delta "$BC_TMP/stats0.json" bytes_out)
bc_assert_ge "$v" "$BIG_SIZE" "stats: bytes_out >= download"
v=$(bc_stats_delta "$BC_TMP/stats0.json" auth_failures)
bc_assert_eq 0 "$v" "stats: no auth failures"
v=$(bc_stats_delta "$BC_TMP/stats0.json" upstream_requests)
bc_assert_ge "$v" 10 "stats: upstream requests"
v=$(bc_stats_get requests_by_op.GetObject.2xx)
bc_assert_ge "$v" 3 "stats: GetObject 2xx"
v=$(bc_stats_get requests_by_op.UploadPart.2xx)
bc_assert_ge "$v" 5 "stats: UploadPart 2xx"
v=$(bc_stats_get requests_by_op.HeadObject.4xx)
bc_assert_ge "$v" 1 "stats: HeadObject 4xx after rm"

bc_stop_gateway
bc_done 41
