#!/bin/bash
# test_rgw_curl_sigv4.sh — test_curl_sigv4.sh with Ceph RGW as the
# upstream (lib_rgw.sh; BC_UPSTREAM=rgw): curl --aws-sigv4 and hand-signed
# aws-chunked uploads whose chunk signatures, re-signed by the gateway,
# RGW verifies itself.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_curl_sigv4.sh"
