#!/bin/bash
# test_file_cache.sh — the cache fronts the file:// origin: a dataset read
# twice through the gateway (aws-cli, boto3 and curl) is served from the
# directory once, and the second pass is all hits with zero reads of the
# directory (the origin's upstream_file_reads counter); writes through the
# gateway (overwrite, delete, DeleteObjects, multipart) invalidate before
# the client hears back, so the next read sees the new bytes; --no-cache
# serves the directory directly (every GET a read, no cache counters move).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN"

DATA=$BC_TMP/data
mkdir -p "$DATA/ds/train"
N=24
for i in $(seq -w 1 $N); do
	bc_mkfile "$DATA/ds/train/s$i.bin" $(( 3000 + 10#$i * 4099 ))
done
bc_mkfile "$DATA/ds/big.bin" $(( 9 * 1024 * 1024 + 5 ))   # two chunks

bc_start_gateway --upstream "file://$DATA" --anonymous --mem-size 64MiB \
	--log-level debug

get_all() {   # $1: tag; GETs every object with curl, compares bytes
	local f k
	for f in "$DATA"/ds/train/*.bin "$DATA/ds/big.bin"; do
		k=${f#"$DATA/ds/"}
		curl -sf --max-time 20 -o "$BC_TMP/got" "$BC_GW_URL/ds/$k" ||
			bc_fail "$1: GET ds/$k failed"
		cmp -s "$f" "$BC_TMP/got" || bc_fail "$1: ds/$k bytes differ"
	done
	bc_pass "$1: every object's bytes match the directory"
}

# ---- first pass: misses, read from the directory ---------------------------
bc_stats_save "$BC_TMP/s0.json"
get_all "first pass"
reads1=$(bc_stats_delta "$BC_TMP/s0.json" upstream_file_reads)
miss1=$(bc_stats_delta "$BC_TMP/s0.json" cache_misses)
bc_assert_ge "$reads1" $(( N + 1 )) "the first pass reads the directory"
bc_assert_eq $(( N + 1 )) "$miss1" "the first pass misses once per object"

# ---- second pass: every GET a hit, no directory read -----------------------
bc_stats_save "$BC_TMP/s1.json"
get_all "second pass"
reads2=$(bc_stats_delta "$BC_TMP/s1.json" upstream_file_reads)
hits2=$(bc_stats_delta "$BC_TMP/s1.json" cache_hits)
miss2=$(bc_stats_delta "$BC_TMP/s1.json" cache_misses)
bc_assert_eq 0 "$reads2" "the second pass reads nothing from the directory"
bc_assert_eq $(( N + 1 )) "$hits2" "the second pass is all hits"
bc_assert_eq 0 "$miss2" "the second pass has no misses"
code=$(bc_req hit --range 100-199 "$BC_GW_URL/ds/big.bin")
bc_assert_eq 206 "$code" "a ranged GET of a cached object"
xbc=$(bc_hdr hit x-bucketcache)
bc_assert_eq hit "$xbc" "it says x-bucketcache: hit"
bc_slice "$DATA/ds/big.bin" 100 199 >"$BC_TMP/want.range"
bc_assert_same_file "$BC_TMP/want.range" "$BC_TMP/hit.body" "the ranged bytes"
bc_stats_save "$BC_TMP/s1b.json"
/usr/bin/python3 - "$BC_GW_URL" <<'EOF' || bc_fail "boto3 reads"
import sys, boto3
from botocore import UNSIGNED
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  config=Config(signature_version=UNSIGNED))
for o in s3.list_objects_v2(Bucket="ds", Prefix="train/")["Contents"]:
    s3.get_object(Bucket="ds", Key=o["Key"])["Body"].read()
EOF
miss3=$(bc_stats_delta "$BC_TMP/s1b.json" cache_misses)
bc_assert_eq 0 "$miss3" "boto3's reads are hits too"

# ---- writes through the gateway invalidate ----------------------------------
aws_anon() { bc_aws "$BC_GW_URL" --no-sign-request "$@"; }
bc_mkfile "$BC_TMP/new.bin" 7777
aws_anon s3 cp --no-progress "$BC_TMP/new.bin" s3://ds/train/s01.bin >/dev/null ||
	bc_fail "overwrite s01"
curl -sf -o "$BC_TMP/got" "$BC_GW_URL/ds/train/s01.bin" || bc_fail "GET s01 after PUT"
bc_assert_same_file "$BC_TMP/new.bin" "$BC_TMP/got" "a GET after an overwrite sees the new bytes"
bc_mkfile "$BC_TMP/big2.bin" $(( 12 * 1024 * 1024 ))
aws_anon s3 cp --no-progress "$BC_TMP/big2.bin" s3://ds/big.bin >/dev/null ||
	bc_fail "multipart overwrite of big.bin"
curl -sf -o "$BC_TMP/got" "$BC_GW_URL/ds/big.bin" || bc_fail "GET big after multipart"
bc_assert_same_file "$BC_TMP/big2.bin" "$BC_TMP/got" "a GET after a multipart overwrite sees the new bytes"
aws_anon s3 rm s3://ds/train/s02.bin >/dev/null || bc_fail "rm s02"
bc_expect gone 404 NoSuchKey "a GET after a delete" "$BC_GW_URL/ds/train/s02.bin"
aws_anon s3api delete-objects --bucket ds \
	--delete 'Objects=[{Key=train/s03.bin},{Key=train/s04.bin}]' >/dev/null ||
	bc_fail "DeleteObjects"
bc_expect gone3 404 NoSuchKey "a GET after DeleteObjects" "$BC_GW_URL/ds/train/s03.bin"
bc_expect gone4 404 NoSuchKey "the other key of DeleteObjects" "$BC_GW_URL/ds/train/s04.bin"
bc_stop_gateway

# ---- --no-cache: the directory serves every GET ---------------------------
bc_start_gateway --upstream "file://$DATA" --anonymous --no-cache
bc_stats_save "$BC_TMP/s2.json"
get_all "uncached pass 1"
get_all "uncached pass 2"
left=$(find "$DATA/ds" -name '*.bin' | wc -l)
reads4=$(bc_stats_delta "$BC_TMP/s2.json" upstream_file_reads)
hits4=$(bc_stats_get cache_hits)
bc_assert_eq $(( 2 * left )) "$reads4" "--no-cache: every GET reads the directory"
bc_assert_eq 0 "$hits4" "--no-cache: no hits"
bc_stop_gateway
bc_done 27
