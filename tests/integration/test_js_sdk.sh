#!/bin/bash
# test_js_sdk.sh — the newest AWS SDK for JavaScript v3 (@aws-sdk/client-s3,
# lib-storage, s3-request-presigner from tests/integration/package.json)
# with its defaults: streamed PutObject as aws-chunked with a trailing
# checksum (STREAMING-UNSIGNED-PAYLOAD-TRAILER, sizes 0, 1, 100 KiB, 9 MiB,
# and a file stream), lib-storage Uploads of Readables of unknown length
# and a 12 MiB multipart one, CRC32C/CRC64NVME/SHA1/SHA256 uploads,
# GetObject in checksum mode (validated by the SDK), a ranged GET, a
# presigned GET fetched with Node's fetch, DeleteObjects, and wrong
# checksums (trailer and header) answered 400 BadDigest with nothing
# stored. Bytes are compared each time; fixture/js_sdk_checks.mjs runs the
# checks and reads the fixture's stats to see what reached the bucket.
#
# It runs twice: straight to the verifying fixture (the control: the
# fixture takes what the SDK sends), then through the gateway, which must
# forward trailer bodies the fixture verifies (re-signed, checksum intact).
#
# test_rgw_js_sdk.sh runs it against Ceph RGW (BC_UPSTREAM=rgw). RGW 16 has
# no flexible checksums (lib_rgw.sh), so there the SDK is set as for any
# such store (BC_JS_FLEX=0: checksums WHEN_REQUIRED) and the checks that
# need them are left out (fixture/js_sdk_checks.mjs says which).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool node
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
	echo "SKIP: $BC_NAME: node $(node --version) is older than the SDK's minimum (20)" >&2
	exit 77
fi
for p in client-s3 lib-storage s3-request-presigner; do
	if [ ! -f "$BC_IT_DIR/node_modules/@aws-sdk/$p/package.json" ]; then
		echo "SKIP: $BC_NAME: @aws-sdk/$p not installed; run \`npm ci --prefix tests/integration\`" >&2
		exit 77
	fi
done

# bc_js ENDPOINT BUCKET: the JS checks against ENDPOINT; adds their count.
bc_js() {
	local cf=$BC_TMP/js.checks n
	rm -f "$cf"
	BC_JS_CHECKS=$cf NODE_NO_WARNINGS=1 node "$BC_IT_DIR/fixture/js_sdk_checks.mjs" \
		"$1" "$BC_FIXTURE_URL" "$2" "$BC_TMP" ||
		bc_fail "JS SDK checks against $1 failed"
	[ -s "$cf" ] || bc_fail "JS SDK checks ended without reporting their count"
	n=$(cat "$cf")
	bc_assert_eq "$JS_CHECKS" "$n" "JS SDK against $1: every check ran"
	bc_add_checks "$n"
}

bc_start_upstream
bc_start_gateway --upstream "$BC_FIXTURE_URL"
if [ "$BC_UPSTREAM" = rgw ]; then
	export BC_JS_FLEX=0
	JS_CHECKS=28
else
	JS_CHECKS=72
fi

bc_log "JS SDK -> fixture -> $BC_UPSTREAM (control)"
bc_js "$BC_FIXTURE_URL" js-direct

bc_log "JS SDK -> gateway -> fixture -> $BC_UPSTREAM"
bc_js "$BC_GW_URL" js-gateway

# The deliberate wrong checksums may reach the fixture as BadDigest; any
# other rejection is a gateway bug.
bc_assert_fixture_clean "JS SDK flows" BadDigest
bc_stop_gateway

bc_done $((2 * JS_CHECKS + 5))
