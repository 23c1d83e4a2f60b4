#!/bin/bash
# test_rgw_cache.sh — test_cache.sh with Ceph RGW as the upstream
# (lib_rgw.sh; BC_UPSTREAM=rgw): single-flight chunk fills as ranged GETs,
# revalidation by If-None-Match, If-Match chunk fetches, and invalidation
# by writes through the gateway (PUT, DELETE, DeleteObjects, CopyObject,
# multipart), against a real S3.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_cache.sh"
