#!/bin/bash
# test_rgw_js_sdk.sh — test_js_sdk.sh with Ceph RGW as the upstream
# (lib_rgw.sh; BC_UPSTREAM=rgw): the AWS SDK for JavaScript v3 set for a
# store without flexible checksums (RGW 16), direct and through the gateway.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_js_sdk.sh"
