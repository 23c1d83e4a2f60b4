#!/bin/bash
# test_rgw_public_bucket.sh — test_public_bucket.sh with Ceph RGW as the
# upstream (lib_rgw.sh; BC_UPSTREAM=rgw): unsigned clients read what RGW's
# ACLs make public (a public-read bucket and objects) and get RGW's
# refusals for the private ones.
BC_UPSTREAM=rgw
BC_TEST_TIMEOUT=${BC_TEST_TIMEOUT:-800}   # RGW: its start, and slower than s3rver under ASan
. "$(dirname "$0")/test_public_bucket.sh"
