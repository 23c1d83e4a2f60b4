#!/bin/bash
# test_file_backend.sh — the embedded file:// upstream: a directory whose
# top-level folders are buckets. aws-cli and curl, anonymous (--anonymous)
# and with a client key: mb, cp up/down (single PUT and multipart), ls,
# ranges (bytes=a-b, bytes=-N, bytes=0-0, bytes=N-) checked against dd,
# head, rm, ListObjectsV2 pagination; path traversal (encoded dots, "..",
# leading '/', ".", NUL, symbolic links, copy sources) must be refused with
# 400 and never read or write outside the directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool "$BC_AWS_BIN" find

JAIL=$BC_TMP/jail
DATA=$JAIL/data
OUTSIDE=$JAIL/outside
mkdir -p "$DATA/fb" "$DATA/pre" "$OUTSIDE"
echo "canary: bucketcache must never serve or change this" >"$OUTSIDE/canary.txt"
SMALL=$BC_TMP/small.bin
BIG=$BC_TMP/big.bin
bc_mkfile "$SMALL" 5000
bc_mkfile "$BIG" $((12 * 1024 * 1024 + 7))
bc_mkfile "$DATA/pre/hand-placed.bin" 4096     # a file put there by hand
ln -s ../../outside "$DATA/fb/link-dir"
ln -s "$OUTSIDE/canary.txt" "$DATA/fb/link-file"
ln -s /etc/passwd "$DATA/fb/passwd"

# snapshot of everything in the jail but the data dir: names, sizes, hashes
outside_state() {
	(cd "$JAIL" && find . -path ./data -prune -o -print0 | sort -z |
		xargs -0 -n1 sh -c 'if [ -f "$0" ]; then sha256sum "$0"; else echo "dir $0"; fi')
}
outside_state >"$BC_TMP/outside.before"

bc_start_gateway --upstream "file://$DATA" --anonymous --log-level debug
ANON=$BC_GW_URL
ANON_PID=$BC_GW_PID
ANON_LOG=$BC_GW_LOG
bc_stats_save "$BC_TMP/s0.json"

aws_anon() { bc_aws "$ANON" --no-sign-request "$@"; }

# ---- aws-cli, anonymous ----------------------------------------------------
aws_anon s3 mb s3://fresh-bucket >"$BC_TMP/mb.out" || bc_fail "aws s3 mb failed"
[ -d "$DATA/fresh-bucket" ] || bc_fail "mb did not create the bucket directory"
bc_pass "aws s3 mb creates a directory"
aws_anon s3 cp --no-progress "$SMALL" s3://fb/dir/small.bin >/dev/null || bc_fail "cp up small"
aws_anon s3 cp --no-progress "$BIG" s3://fb/big.bin >/dev/null || bc_fail "cp up 12 MiB (multipart)"
bc_assert_same_file "$SMALL" "$DATA/fb/dir/small.bin" "the uploaded object is a plain file in the bucket dir"
bc_assert_same_file "$BIG" "$DATA/fb/big.bin" "the multipart upload assembled the right file"
aws_anon s3 cp --no-progress s3://fb/dir/small.bin "$BC_TMP/small.down" >/dev/null || bc_fail "cp down small"
aws_anon s3 cp --no-progress s3://fb/big.bin "$BC_TMP/big.down" >/dev/null || bc_fail "cp down big"
bc_assert_same_file "$SMALL" "$BC_TMP/small.down" "cp down small"
bc_assert_same_file "$BIG" "$BC_TMP/big.down" "cp down 12 MiB"
aws_anon s3 cp --no-progress s3://pre/hand-placed.bin "$BC_TMP/hand.down" >/dev/null ||
	bc_fail "cp down a hand-placed file"
bc_assert_same_file "$DATA/pre/hand-placed.bin" "$BC_TMP/hand.down" "a file placed by hand is served"

aws_anon s3 ls s3://fb/ >"$BC_TMP/ls.out" || bc_fail "aws s3 ls"
v=$(awk '/PRE/ { print $1, $2; next } { print $4 }' "$BC_TMP/ls.out" | paste -sd'|')
bc_assert_eq "PRE dir/|big.bin" "$v" \
	"aws s3 ls shows dir/ and big.bin only (no symlinks, no hidden upload dirs)"
aws_anon s3 ls --recursive s3://fb/ >"$BC_TMP/lsr.out" || bc_fail "aws s3 ls --recursive"
v=$(awk '{ print $4 }' "$BC_TMP/lsr.out" | paste -sd'|')
bc_assert_eq "big.bin|dir/small.bin" "$v" "recursive listing"
v=$(awk '$4 == "big.bin" { print $3 }' "$BC_TMP/lsr.out")
bc_assert_eq "$((12 * 1024 * 1024 + 7))" "$v" "listed size"
aws_anon s3 ls >"$BC_TMP/lsb.out" || bc_fail "aws s3 ls (buckets)"
v=$(awk '{ print $3 }' "$BC_TMP/lsb.out" | sort | paste -sd'|')
bc_assert_eq "fb|fresh-bucket|pre" "$v" "ListBuckets shows the top-level folders"

aws_anon s3api head-object --bucket fb --key big.bin >"$BC_TMP/head.json" || bc_fail "head-object"
v=$(bc_json "$BC_TMP/head.json" ContentLength)
bc_assert_eq "$((12 * 1024 * 1024 + 7))" "$v" "head ContentLength"
ETAG_BIG=$(bc_json "$BC_TMP/head.json" ETag)
bc_assert_match '^"[0-9a-f]{32}(-[0-9]+)?"$' "$ETAG_BIG" "head ETag looks like an S3 ETag"
aws_anon s3api get-object --bucket fb --key big.bin --range bytes=100-199 "$BC_TMP/r1" >"$BC_TMP/r1.json" ||
	bc_fail "get-object --range"
bc_slice "$BIG" 100 199 >"$BC_TMP/r1.want"
bc_assert_same_file "$BC_TMP/r1.want" "$BC_TMP/r1" "get-object --range bytes=100-199"
v=$(bc_json "$BC_TMP/r1.json" ContentRange)
bc_assert_eq "bytes 100-199/$((12 * 1024 * 1024 + 7))" "$v" "ContentRange"
v=$(bc_json "$BC_TMP/r1.json" ETag)
bc_assert_eq "$ETAG_BIG" "$v" "a range carries the object's ETag"

# ---- ranges with curl, checked against dd ----------------------------------
SZ=5000
rng() {  # rng NAME RANGE FIRST LAST
	local v
	bc_expect "$1" 206 - "Range $2" -H "Range: $2" "$ANON/fb/dir/small.bin"
	bc_slice "$SMALL" "$3" "$4" >"$BC_TMP/$1.want"
	bc_assert_same_file "$BC_TMP/$1.want" "$BC_TMP/$1.body" "Range $2 bytes"
	v=$(bc_hdr "$1" Content-Range)
	bc_assert_eq "bytes $3-$4/$SZ" "$v" "Range $2 Content-Range"
	v=$(bc_hdr "$1" Content-Length)
	bc_assert_eq "$(( $4 - $3 + 1 ))" "$v" "Range $2 Content-Length"
}
rng ra "bytes=0-0" 0 0
rng rb "bytes=-300" $((SZ - 300)) $((SZ - 1))
rng rc "bytes=4990-" 4990 $((SZ - 1))
rng rd "bytes=1234-2345" 1234 2345
rng re "bytes=-9999" 0 $((SZ - 1))
rng rf "bytes=4999-99999" 4999 4999
bc_expect r416 416 InvalidRange "Range past the end" -H "Range: bytes=5000-5001" "$ANON/fb/dir/small.bin"
v=$(bc_hdr r416 Content-Range)
bc_assert_eq "bytes */$SZ" "$v" "416 Content-Range"
bc_expect head-range 206 - "HEAD with a Range" -I -H "Range: bytes=10-19" "$ANON/fb/dir/small.bin"
bc_expect full 200 - "GET whole object" "$ANON/fb/dir/small.bin"
bc_assert_same_file "$SMALL" "$BC_TMP/full.body" "GET bytes"
v=$(bc_hdr full Accept-Ranges)
bc_assert_eq bytes "$v" "Accept-Ranges: bytes"

# ---- ListObjectsV2 pagination: 5 keys, pages of 2 ----------------------------
for i in 1 2 3 4 5; do
	printf 'page %s' "$i" >"$BC_TMP/p$i"
	aws_anon s3 cp --no-progress "$BC_TMP/p$i" "s3://fb/pg/k$i" >/dev/null || bc_fail "cp pg/k$i"
done
bc_stats_save "$BC_TMP/s-pg.json"
aws_anon s3api list-objects-v2 --bucket fb --prefix pg/ --page-size 2 >"$BC_TMP/pg.json" ||
	bc_fail "list-objects-v2 --page-size 2"
v=$("$BC_PY" -c 'import json,sys; print(json.dumps([o["Key"] for o in json.load(open(sys.argv[1]))["Contents"]]))' "$BC_TMP/pg.json")
bc_assert_eq '["pg/k1", "pg/k2", "pg/k3", "pg/k4", "pg/k5"]' "$v" \
	"paginated listing returns the 5 keys in order"
v=$(bc_stats_delta "$BC_TMP/s-pg.json" requests_by_op.ListObjectsV2.2xx)
bc_assert_ge "$v" 3 "stats: 3 ListObjectsV2 pages"
# the same by hand with curl: IsTruncated / NextContinuationToken
"$BC_PY" - "$ANON" <<'EOF' || bc_fail "manual ListObjectsV2 pagination"
import subprocess, sys, urllib.parse, xml.etree.ElementTree as ET
base = sys.argv[1]
ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
keys, token, pages = [], None, 0
while True:
    q = {"list-type": "2", "prefix": "pg/", "max-keys": "2"}
    if token:
        q["continuation-token"] = token
    url = base + "/fb?" + urllib.parse.urlencode(q)
    out = subprocess.run(["curl", "-sf", "--max-time", "10", url],
                         capture_output=True, check=True).stdout
    root = ET.fromstring(out)
    t = lambda n: (root.find(ns + n) if root.find(ns + n) is not None
                   else root.find(n))
    page = [c.find(ns + "Key").text if c.find(ns + "Key") is not None
            else c.find("Key").text
            for c in list(root.iter(ns + "Contents")) + list(root.iter("Contents"))]
    pages += 1
    assert len(page) <= 2, page
    keys += page
    trunc = t("IsTruncated").text
    if trunc != "true":
        break
    token = t("NextContinuationToken").text
    assert token and pages < 10
assert keys == ["pg/k%d" % i for i in range(1, 6)], keys
assert pages == 3, pages
print("ok - manual pagination: 3 pages, 5 keys")
EOF
bc_pass "manual ListObjectsV2 pagination"

# ---- rm ----------------------------------------------------------------------
aws_anon s3 rm s3://fb/dir/small.bin >/dev/null || bc_fail "aws s3 rm"
[ ! -e "$DATA/fb/dir/small.bin" ] || bc_fail "rm left the file"
bc_pass "aws s3 rm removes the file"
bc_expect gone 404 NoSuchKey "GET after rm" "$ANON/fb/dir/small.bin"
bc_expect nobucket 404 NoSuchBucket "GET in a missing bucket" "$ANON/no-such-bucket/x"
bc_expect dirkey 404 NoSuchKey "a key naming a directory is not an object" "$ANON/fb/pg"

# ---- traversal: 400, nothing read or written outside -------------------------
trav() {  # trav NAME STATUS-REGEX MSG CURL-ARGS...
	bc_expect "$@"
	if grep -q -e 'canary:' -e 'root:x:0:0' "$BC_TMP/$1.body" 2>/dev/null; then
		bc_fail "$3: the response leaked a file from outside the data dir"
	fi
}
trav t1 400 - "GET %2e%2e/%2e%2e/etc/passwd" --path-as-is "$ANON/fb/%2e%2e/%2e%2e/etc/passwd"
trav t2 400 - "GET %2e%2e/%2e%2e/outside/canary.txt" --path-as-is "$ANON/fb/%2e%2e/%2e%2e/outside/canary.txt"
trav t3 400 - "GET a/../../outside/canary.txt" --path-as-is "$ANON/fb/a/../../outside/canary.txt"
trav t4 400 - "GET ../outside (literal dots)" --path-as-is "$ANON/fb/../outside/canary.txt"
trav t5 400 - "GET key /abs (leading slash)" --path-as-is "$ANON/fb//abs"
trav t6 400 - "GET key with a '.' segment" --path-as-is "$ANON/fb/a/%2e/b"
trav t7 400 - "GET key with an empty segment" --path-as-is "$ANON/fb/a//b"
trav t8 400 - "GET key with NUL" --path-as-is "$ANON/fb/a%00b"
trav t9 400 - "GET ..%2f (encoded slash)" --path-as-is "$ANON/fb/..%2f..%2foutside%2fcanary.txt"
trav t10 '4[0-9][0-9]' - "GET bucket '..'" --path-as-is "$ANON/%2e%2e/outside/canary.txt"
trav t11 '4[0-9][0-9]' - "GET bucket '..' literal" --path-as-is "$ANON/../jail/outside/canary.txt"
trav t12 400 - "GET key with .bucketcache- segment" --path-as-is "$ANON/fb/.bucketcache-tmp/x"
trav t13 '404|403' - "GET through a symlinked directory" "$ANON/fb/link-dir/canary.txt"
trav t14 '404|403' - "GET a symlink to a file outside" "$ANON/fb/link-file"
trav t15 '404|403' - "GET a symlink to /etc/passwd" "$ANON/fb/passwd"
trav t16 400 - "PUT %2e%2e/%2e%2e/outside/evil.txt" --path-as-is -X PUT --data-binary "@$SMALL" \
	"$ANON/fb/%2e%2e/%2e%2e/outside/evil.txt"
trav t17 400 - "PUT a/../../outside/evil.txt" --path-as-is -X PUT --data-binary "@$SMALL" \
	"$ANON/fb/a/../../outside/evil.txt"
trav t18 '4[0-9][0-9]' - "PUT into bucket '..'" --path-as-is -X PUT --data-binary "@$SMALL" \
	"$ANON/%2e%2e/outside/evil.txt"
trav t19 '4[0-9][0-9]' - "PUT bucket '..' (mb)" --path-as-is -X PUT "$ANON/%2e%2e"
trav t20 400 - "DELETE %2e%2e/%2e%2e/outside/canary.txt" --path-as-is -X DELETE \
	"$ANON/fb/%2e%2e/%2e%2e/outside/canary.txt"
trav t21 '40[0-4]' - "copy from ../../outside" -X PUT -H "x-amz-copy-source: fb/%2e%2e/%2e%2e/outside/canary.txt" \
	"$ANON/fb/copied.txt"
trav t22 '40[0-4]' - "copy through a symlink" -X PUT -H "x-amz-copy-source: fb/link-file" \
	"$ANON/fb/copied2.txt"
trav t23 '4[0-9][0-9]' - "PUT through a symlinked directory" -X PUT --data-binary "@$SMALL" \
	"$ANON/fb/link-dir/evil.txt"
trav t24 400 - "multipart upload to ../" --path-as-is -X POST "$ANON/fb/%2e%2e/%2e%2e/outside/mpu.bin?uploads"
trav t25 '200|400' - "list with prefix ../" "$ANON/fb?list-type=2&prefix=..%2F"
! grep -q canary "$BC_TMP/t25.body" || bc_fail "listing with prefix ../ shows the outside"
trav t26 '200' - "list with prefix link-dir/" "$ANON/fb?list-type=2&prefix=link-dir%2F"
v=$(grep -o '<Key>[^<]*</Key>' "$BC_TMP/t26.body" || true)
bc_assert_eq "" "$v" "a symlinked directory lists nothing"

outside_state >"$BC_TMP/outside.after"
diff -u "$BC_TMP/outside.before" "$BC_TMP/outside.after" ||
	bc_fail "something outside the data dir changed"
bc_pass "nothing outside the data dir was created, changed or removed"
[ ! -e "$DATA/fb/copied.txt" ] && [ ! -e "$DATA/fb/copied2.txt" ] ||
	bc_fail "a refused copy created a file"
bc_pass "refused copies created nothing"
[ -z "$(find "$DATA" -maxdepth 1 -mindepth 1 ! -name fb ! -name pre ! -name fresh-bucket)" ] ||
	bc_fail "new top-level entries in the data dir: $(ls "$DATA")"
bc_pass "no new buckets appeared"

v=$(bc_stats_delta "$BC_TMP/s0.json" requests)
bc_assert_ge "$v" 40 "stats: requests counted"
v=$(bc_stats_delta "$BC_TMP/s0.json" auth_failures)
bc_assert_eq 0 "$v" "stats: anonymous mode has no auth failures"

# ---- the same backend with a client key --------------------------------------
bc_start_gateway --upstream "file://$DATA" --client-key FK:fsecret --log-level debug
KEYED=$BC_GW_URL
bc_stats_save "$BC_TMP/s1.json"
aws_key() { AWS_ACCESS_KEY_ID=FK AWS_SECRET_ACCESS_KEY=fsecret bc_aws "$KEYED" "$@"; }
aws_key s3 cp --no-progress "$SMALL" s3://fb/keyed/small.bin >/dev/null || bc_fail "keyed cp up"
aws_key s3 cp --no-progress s3://fb/keyed/small.bin "$BC_TMP/keyed.down" >/dev/null || bc_fail "keyed cp down"
bc_assert_same_file "$SMALL" "$BC_TMP/keyed.down" "keyed round trip"
aws_key s3 ls s3://fb/keyed/ >"$BC_TMP/kls.out" || bc_fail "keyed ls"
v=$(awk '{ print $4 }' "$BC_TMP/kls.out")
bc_assert_eq small.bin "$v" "keyed ls"
aws_key s3api get-object --bucket fb --key big.bin --range bytes=-10 "$BC_TMP/k-suffix" >/dev/null ||
	bc_fail "keyed suffix range"
bc_slice "$BIG" $((12 * 1024 * 1024 + 7 - 10)) $((12 * 1024 * 1024 + 6)) >"$BC_TMP/k-suffix.want"
bc_assert_same_file "$BC_TMP/k-suffix.want" "$BC_TMP/k-suffix" "keyed get-object --range bytes=-10"
KSIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user FK:fsecret -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
bc_expect k-head 200 - "keyed curl HEAD" "${KSIG[@]}" -I "$KEYED/fb/keyed/small.bin"
bc_expect k-rm 204 - "keyed curl DELETE" "${KSIG[@]}" -X DELETE "$KEYED/fb/keyed/small.bin"
[ ! -e "$DATA/fb/keyed/small.bin" ] || bc_fail "keyed DELETE left the file"
bc_expect k-unsigned 403 AccessDenied "unsigned request without --anonymous" "$KEYED/fb/big.bin"
bc_expect k-wrong 403 SignatureDoesNotMatch "wrong secret" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user FK:nope -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	"$KEYED/fb/big.bin"
bc_expect k-wrong-put 403 SignatureDoesNotMatch "wrong secret on PUT" \
	--aws-sigv4 "aws:amz:us-east-1:s3" --user FK:nope -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	-X PUT --data-binary "@$SMALL" "$KEYED/fb/evil.bin"
[ ! -e "$DATA/fb/evil.bin" ] || bc_fail "a refused PUT wrote a file"
trav k-trav 400 - "signed traversal" "${KSIG[@]}" --path-as-is "$KEYED/fb/%2e%2e/%2e%2e/outside/canary.txt"
v=$(bc_stats_delta "$BC_TMP/s1.json" auth_failures)
bc_assert_ge "$v" 3 "stats: keyed auth failures"
bc_stop_gateway
BC_GW_PID=$ANON_PID BC_GW_LOG=$ANON_LOG bc_stop_gateway

# ---- README quick start (demo bucket) ----------------------------------------
# contrib/quickstart builds, creates ./buckets/demo and runs
# "bucketcache --upstream file://$PWD/buckets --anonymous" without AWS
# credentials in its environment, then prints the commands to try; the
# README's "Quick start" section lists some too. Same setup here in a temp
# dir (no apt-get, no build), then every curl/aws command line that the
# quickstart prints and the README's quick start shows is run as written
# (URL pointed at this gateway; aws is /usr/bin/aws, with no credentials,
# no config file and no region, as on a fresh machine) and must succeed.
# The quickstart's "aws --no-sign-request ... s3 ls s3://demo/ --recursive"
# must be among them and must list the demo bucket.
grep -q 'demo/hello.txt' "$BC_SRCDIR/contrib/quickstart" ||
	bc_fail "contrib/quickstart does not create the demo bucket any more (update this test)"
QS=$BC_TMP/qs/buckets
mkdir -p "$QS/demo/images"
echo "hello from bucketcache" >"$QS/demo/hello.txt"
for i in 1 2 3; do head -c 131072 /dev/urandom >"$QS/demo/images/img$i.bin"; done
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
bc_start_gateway --upstream "file://$QS" --anonymous
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
bc_expect qs-hello 200 - "quick start: curl demo/hello.txt" "$BC_GW_URL/demo/hello.txt"
v=$(cat "$BC_TMP/qs-hello.body")
bc_assert_eq "hello from bucketcache" "$v" "quick start: hello.txt content"
bc_expect qs-health 200 - "quick start: health" "$BC_GW_URL/_bucketcache/health"
v=$(cat "$BC_TMP/qs-health.body")
bc_assert_match '^ok' "$v" "quick start: health says ok"
bc_expect qs-stats 200 - "quick start: stats" "$BC_GW_URL/_bucketcache/stats"
"$BC_PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["counters"]["requests"] >= 1' \
	"$BC_TMP/qs-stats.body" || bc_fail "quick start: stats is not the JSON described"
bc_pass "quick start: stats JSON has counters.requests"
bc_expect qs-metrics 200 - "quick start: metrics" "$BC_GW_URL/_bucketcache/metrics"
grep -Eq '^[a-z_]+(\{[^}]*\})? [0-9]' "$BC_TMP/qs-metrics.body" ||
	bc_fail "quick start: metrics is not Prometheus text"
bc_pass "quick start: metrics is Prometheus text"
{
	# the lines the quickstart prints (its MSG block) ...
	sed -n "/<<'MSG'/,/^MSG/p" "$BC_SRCDIR/contrib/quickstart"
	# ... and the README's Quick start section
	if [ -f "$BC_SRCDIR/README" ]; then
		awk '/^Quick start/ { on = 1; next } on && /^[A-Z][a-z]+.*$/ && prev ~ /^$/ && !/^  / { on = 0 } { prev = $0 } on' \
			"$BC_SRCDIR/README"
	fi
} | { grep -E '^[[:space:]]+(curl|AWS_[A-Z_]+=[^ ]+ +)*(curl|aws|/usr/bin/aws) .*127\.0\.0\.1:8080' || true; } |
	sed -e 's/^[[:space:]]*//' | sort -u >"$BC_TMP/qs-lines"
[ -s "$BC_TMP/qs-lines" ] || bc_fail "quick start: found no command lines to run"
grep -q '^aws --no-sign-request --endpoint-url http://127\.0\.0\.1:8080 s3 ls s3://demo/ --recursive$' \
	"$BC_TMP/qs-lines" || bc_fail "quick start: the quickstart's aws s3 ls line is missing: $(cat "$BC_TMP/qs-lines")"
bc_pass "quick start: the quickstart prints the aws s3 ls line"
mkdir -p "$BC_TMP/qs-home"
n=0 qs_checks=0 aws_runs=0 ls_runs=0
while IFS= read -r line; do
	n=$((n + 1))
	cmd=${line//http:\/\/127.0.0.1:8080/$BC_GW_URL}
	cmd=$(printf '%s' "$cmd" | sed -E -e 's#(^|[ ;])curl #\1curl -sSf --max-time 10 #' \
		-e 's#(^|[ ;=])aws #\1/usr/bin/aws --cli-read-timeout 20 #')
	case $cmd in
	*/usr/bin/aws\ *) aws_runs=$((aws_runs + 1)) ;;
	esac
	if ! (cd "$BC_TMP" && env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
		-u AWS_DEFAULT_REGION -u AWS_REGION HOME="$BC_TMP/qs-home" \
		AWS_CONFIG_FILE="$BC_TMP/qs-home/no-config" \
		AWS_SHARED_CREDENTIALS_FILE="$BC_TMP/qs-home/no-credentials" \
		bash -c "set -eo pipefail; $cmd" >"$BC_TMP/qs-$n.out" 2>&1); then
		cat "$BC_TMP/qs-$n.out" >&2
		bc_fail "quick start: the documented command [$line] fails (ran: $cmd)"
	fi
	bc_pass "quick start: [$line] works"
	qs_checks=$((qs_checks + 1))
	case $line in
	*x-bucketcache*)
		# hello.txt was read above: the cache answers it now
		grep -Eiq '^x-bucketcache: hit' "$BC_TMP/qs-$n.out" ||
			bc_fail "quick start: [$line] does not show a cache hit: $(cat "$BC_TMP/qs-$n.out")"
		bc_pass "quick start: [$line] shows x-bucketcache: hit"
		qs_checks=$((qs_checks + 1)) ;;
	*demo/hello.txt*)
		v=$(cat "$BC_TMP/qs-$n.out")
		bc_assert_eq "hello from bucketcache" "$v" "quick start: [$line] prints hello.txt"
		qs_checks=$((qs_checks + 1)) ;;
	*"s3 ls"*demo*)
		grep -q 'images/img3.bin' "$BC_TMP/qs-$n.out" ||
			bc_fail "quick start: [$line] does not list the demo bucket"
		bc_pass "quick start: [$line] lists the demo bucket"
		ls_runs=$((ls_runs + 1))
		qs_checks=$((qs_checks + 1)) ;;
	esac
done <"$BC_TMP/qs-lines"
bc_assert_ge "$aws_runs" 1 "quick start: the aws lines ran with /usr/bin/aws"
bc_assert_ge "$ls_runs" 1 "quick start: an aws s3 ls of the demo bucket ran and listed it"
bc_stop_gateway
outside_state >"$BC_TMP/outside.after2"
diff -u "$BC_TMP/outside.before" "$BC_TMP/outside.after2" ||
	bc_fail "something outside the data dir changed"
bc_pass "outside of the data dir untouched at the end"
bc_done $((119 + qs_checks))
