#!/bin/bash
# test_rgw_boto3.sh — test_boto3.sh with Ceph RGW as the upstream
# (lib_rgw.sh; BC_UPSTREAM=rgw): the same calls, direct and through the
# gateway, presigned URLs included, against a real S3.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_boto3.sh"
