#!/bin/bash
# test_rgw_authz.sh — test_authz.sh with Ceph RGW as the upstream
# (lib_rgw.sh; BC_UPSTREAM=rgw): client keys limited to a prefix, whose
# allowed requests (copies, multipart, DeleteObjects bodies the gateway
# cuts and re-signs) a real S3 then checks.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_authz.sh"
