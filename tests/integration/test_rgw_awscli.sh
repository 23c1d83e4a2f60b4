#!/bin/bash
# test_rgw_awscli.sh — test_awscli.sh with Ceph RGW as the upstream
# (lib_rgw.sh; BC_UPSTREAM=rgw): the same flows, direct and through the
# gateway, against a real S3 that verifies every signature itself.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_awscli.sh"
