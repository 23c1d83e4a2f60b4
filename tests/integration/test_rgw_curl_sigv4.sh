#!/bin/bash
# test_rgw_curl_sigv4.sh — test_curl_sigv4.sh with Ceph RGW as the
# upstream (lib_rgw.sh; BC_UPSTREAM=rgw): curl --aws-sigv4 and hand-signed
# aws-chunked uploads whose chunk signatures, re-signed by the gateway,
# RGW verifies itself.
BC_UPSTREAM=rgw
. "$(dirname "$0")/test_curl_sigv4.sh"
