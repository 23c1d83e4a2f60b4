#!/bin/bash
# test_creds_providers.sh — upstream credentials the way pods get them
# (issue 15): the gateway started with no static keys, its key pair from
# fixture/creds_server.py speaking each protocol — the EC2 instance
# metadata service (IMDSv2 token flow, found by the provider chain), ECS
# container credentials (a full URI and an authorization token file) and
# EKS web identity (STS AssumeRoleWithWebIdentity with a token file, found
# by the chain) — in front of the verifying fixture, which accepts exactly
# the pairs handed out, with their session tokens, until they expire.
#   1. the fixture's own token checks: right token 200, none or a wrong one
#      403 InvalidToken, an expired pair 400 ExpiredToken;
#   2. start-up errors, each one clear line: rotating keys without
#      --client-key/--anonymous (exit 2); an answer over 64 KiB, an IMDS
#      that answers too slowly (3 attempts of 1 s, not more), STS refusing
#      the role, ECS refusing the token, nothing listening (exit 1);
#   3. three gateways, each read signed upstream — IMDS's through the
#      cache (--meta-ttl 1ms: every read revalidates, a signed fill), the
#      others' through the proxy (--no-cache); pairs of 12 s: reads every
#      0.2 s on each for 14 s cross the first refresh with no failed
#      request; each refresh came a quarter of the lifetime (3 s) before
#      the old pair expired, and both pairs signed requests;
#   4. failures: ECS hands out garbage once (a failed refresh, retried 1 s
#      later, before expiry: no failed request), STS answers
#      IDPCommunicationError once (retried at once) and the web identity
#      token file rotates (read again); IMDS fails from now on: the gateway
#      keeps signing with the old pair until it expires — never after (the
#      fixture sees no ExpiredToken) — then answers 503
#      UpstreamCredentialsExpired, counted, until IMDS is back and a retry
#      (at most 5 s apart) puts a new pair in use.
# The whole test takes ~50 s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_skip_unless_tool timeout
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 ||
	{ echo "SKIP: curl has no --aws-sigv4" >&2; exit 77; }

LIFE=12
ROLE_ARN=arn:aws:iam::123456789012:role/ml-reader
WEB_TOKEN=$BC_TMP/web-identity.token
ECS_TOKEN=$BC_TMP/ecs-auth.token
ISSUED=$BC_TMP/issued.keys
printf 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnLTE\n' >"$WEB_TOKEN"
printf 'ecs-pod-identity-token-1' >"$ECS_TOKEN"

bc_start_s3rver

# the fake credential services
CS_PF=$BC_TMP/creds.port
"$BC_PY" "$BC_IT_DIR/fixture/creds_server.py" --port 0 --port-file "$CS_PF" \
	--keys-file "$ISSUED" --lifetime "$LIFE" --role-arn "$ROLE_ARN" \
	--web-token-file "$WEB_TOKEN" --ecs-token-file "$ECS_TOKEN" \
	>>"$BC_TMP/creds.log" 2>&1 &
BC_PIDS+=($!)
BC_LOGS+=("$BC_TMP/creds.log")
for i in $(seq 100); do
	[ -s "$CS_PF" ] && break
	sleep 0.1
done
[ -s "$CS_PF" ] || bc_fail "creds_server.py did not start"
CS=http://127.0.0.1:$(cat "$CS_PF")

bc_start_fixture --key S3RVER:S3RVER --keys-file "$ISSUED"
FX=$BC_FIXTURE_URL

ctl() { curl -sf --max-time 10 -X POST "$CS/__ctl/$1" >/dev/null || bc_fail "creds control $1"; }

# the data, through the fixture with S3RVER's key
OBJ=$BC_TMP/obj.bin
bc_mkfile "$OBJ" 100000
bc_aws "$FX" s3 mb s3://creds >/dev/null
bc_aws "$FX" s3 cp "$OBJ" s3://creds/data/obj.bin >/dev/null

# The daemon with none of lib.sh's static keys, profile or IMDS switch.
GWBIN=$BC_TMP/bucketcache-nokeys
mkdir -p "$BC_TMP/nohome"
cat >"$GWBIN" <<EOF
#!/bin/sh
exec env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
	-u AWS_EC2_METADATA_DISABLED -u AWS_SHARED_CREDENTIALS_FILE \
	-u AWS_PROFILE HOME="$BC_TMP/nohome" "$BC_BIN" "\$@"
EOF
chmod +x "$GWBIN"

# ---- 1. the fixture checks session tokens as S3 does ----------------------
bc_py "$FX" "$CS" "$ECS_TOKEN" <<'EOF'
import json, sys, time, urllib.request
import botocore.auth, botocore.credentials
from botocore.awsrequest import AWSRequest
import itlib

fx, cs, tokfile = sys.argv[1:4]
auth = open(tokfile).read()

def pair():
    req = urllib.request.Request(cs + "/ecs/creds",
                                 headers={"Authorization": auth})
    with urllib.request.urlopen(req, timeout=10) as f:
        return json.load(f)

def get(akid, secret, token):
    creds = botocore.credentials.Credentials(akid, secret, token)
    r = AWSRequest(method="GET", url=fx + "/creds/data/obj.bin")
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(r)
    req = urllib.request.Request(r.url, headers=dict(r.headers.items()))
    try:
        with urllib.request.urlopen(req, timeout=10) as f:
            return f.status, ""
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        code = body.split("<Code>")[1].split("</Code>")[0] \
            if "<Code>" in body else ""
        return e.code, code

p = pair()
st = get(p["AccessKeyId"], p["SecretAccessKey"], p["Token"])
itlib.ok(st == (200, ""), "fixture: a handed-out pair with its token reads",
         st)
st = get(p["AccessKeyId"], p["SecretAccessKey"], None)
itlib.ok(st == (403, "InvalidToken"), "fixture: without its token: "
         "403 InvalidToken", st)
st = get(p["AccessKeyId"], p["SecretAccessKey"], p["Token"][:-4] + "AAAA")
itlib.ok(st == (403, "InvalidToken"), "fixture: another token: "
         "403 InvalidToken", st)
st = get("S3RVER", "S3RVER", p["Token"])
itlib.ok(st == (403, "InvalidToken"), "fixture: a token with a permanent "
         "key: 403 InvalidToken", st)
urllib.request.urlopen(urllib.request.Request(cs + "/__ctl/lifetime?s=1",
                                              method="POST"), timeout=10)
p = pair()
time.sleep(2.2)
st = get(p["AccessKeyId"], p["SecretAccessKey"], p["Token"])
itlib.ok(st == (400, "ExpiredToken"), "fixture: an expired pair: "
         "400 ExpiredToken", st)
itlib.done()
EOF
ctl "lifetime?s=$LIFE"
bc_fixture_reset

# ---- 2. start-up errors ---------------------------------------------------
# run_gw NAME ENV... -- ARGS...: the daemon for at most 30 s; its stderr in
# $BC_TMP/NAME.err, the exit status in RC, the seconds it ran in SECS.
run_gw() {
	local name=$1 t0
	shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	t0=$(date +%s%N)
	RC=0
	env "${envs[@]}" timeout 30 "$GWBIN" --listen "127.0.0.1:$(bc_free_port)" \
		--upstream "$FX" --no-cache "$@" >"$BC_TMP/$name.err" 2>&1 || RC=$?
	SECS=$(( ($(date +%s%N) - t0) / 1000000000 ))
	ERR=$(cat "$BC_TMP/$name.err")
}

run_gw nokey AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" -- --credentials imds
bc_assert_eq 2 "$RC" "imds without --client-key or --anonymous: exit 2"
bc_assert_match "the imds source's keys rotate, so clients cannot sign with the gateway's key pair: give --client-key" \
	"$ERR" "... saying why"

ctl "fail?kind=imds&count=-1&mode=big"
run_gw big AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" -- --anonymous
bc_assert_eq 1 "$RC" "IMDS answering 100 KiB: exit 1"
bc_assert_match "upstream credentials \(imds, the last of the chain\): instance metadata service http://127.0.0.1:[0-9]+: credentials: answer over 65536 bytes" \
	"$ERR" "... the answer's bound named"
ctl "fail?kind=imds&count=-1&mode=garbage"
run_gw garbage AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" -- --anonymous
bc_assert_eq 1 "$RC" "IMDS answering HTML: exit 1"
bc_assert_match "role bucketcache-node: the answer is not a JSON object" "$ERR" "... said so"
ctl "fail?kind=imds&count=-1&mode=slow"
run_gw slow AWS_EC2_METADATA_SERVICE_ENDPOINT="$CS" -- --anonymous
bc_assert_eq 1 "$RC" "IMDS too slow: exit 1"
bc_assert_match "credentials: .*(timed out|Timeout)" "$ERR" "... a timeout"
if [ "$SECS" -gt 8 ]; then
	bc_fail "3 attempts of 1 s took $SECS s"
fi
bc_pass "IMDS: 3 attempts of 1 s ($SECS s)"
ctl ok
run_gw sts-role AWS_WEB_IDENTITY_TOKEN_FILE="$WEB_TOKEN" \
	AWS_ROLE_ARN=arn:aws:iam::123456789012:role/other \
	AWS_ENDPOINT_URL_STS="$CS/sts" -- --anonymous
bc_assert_eq 1 "$RC" "STS refusing the role: exit 1"
bc_assert_match "upstream credentials \(web-identity, found by the chain\): STS $CS/sts \(role arn:aws:iam::123456789012:role/other\): HTTP 403: STS answered AccessDenied" \
	"$ERR" "... STS's code in the message"
run_gw ecs-token AWS_CONTAINER_CREDENTIALS_FULL_URI="$CS/ecs/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong -- --credentials ecs --anonymous
bc_assert_eq 1 "$RC" "ECS refusing the token: exit 1"
bc_assert_match "container credentials $CS/ecs/creds: HTTP 401: the service answered an error: InvalidToken" \
	"$ERR" "... the endpoint's error in the message"
run_gw refused AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$(bc_free_port)" -- --anonymous
bc_assert_eq 1 "$RC" "nothing at the IMDS endpoint: exit 1"
bc_assert_match "the last of the chain\): instance metadata service http://127.0.0.1:[0-9]+: token: .*(refused|connect)" \
	"$ERR" "... what was tried"
n=$(cat "$BC_TMP"/*.err | grep -c 'AddressSanitizer\|runtime error' || true)
bc_assert_eq 0 "$n" "no sanitizer report from the failed starts"

# ---- 3. three gateways, reads across the first refresh ------------------
SIGN=(--aws-sigv4 "aws:amz:us-east-1:s3" --user CK:cs-secret)
# reader NAME SECONDS URL [CURL-ARGS...]: a GET every 0.2 s, "TIME STATUS"
# lines into $BC_TMP/NAME.codes (run in the background; no assertions).
reader() {
	local name=$1 secs=$2 url=$3 end code
	shift 3
	end=$(( $(date +%s) + secs ))
	while [ "$(date +%s)" -lt "$end" ]; do
		code=$(curl -s -o "$BC_TMP/$name.last" -w '%{http_code}' --max-time 5 "$@" \
			"$url/creds/data/obj.bin" 2>/dev/null) || code=000
		if [ "$code" = 200 ] && ! cmp -s "$OBJ" "$BC_TMP/$name.last"; then
			code=200-bad-body
		fi
		echo "$(date +%s.%N) $code" >>"$BC_TMP/$name.codes"
		sleep 0.2
	done
}

# Each gateway's reader starts as soon as it is up: its first pair is
# refreshed 9 s after it was fetched, and a loaded machine took longer
# than that to start all three and check them before reading.
T0=$(date +%s.%N)
AWS_EC2_METADATA_SERVICE_ENDPOINT=$CS BC_BIN=$GWBIN \
	bc_start_gateway --upstream "$FX" --meta-ttl 1ms --meta-stale 0 --anonymous
GI_PID=$BC_GW_PID GI_LOG=$BC_GW_LOG GI=$BC_GW_URL
reader ri1 14 "$GI" & R1=$!
AWS_CONTAINER_CREDENTIALS_FULL_URI=$CS/ecs/creds \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$ECS_TOKEN BC_BIN=$GWBIN \
	bc_start_gateway --upstream "$FX" --no-cache --credentials ecs \
	--client-key CK:cs-secret
GE_PID=$BC_GW_PID GE_LOG=$BC_GW_LOG GE=$BC_GW_URL
reader re1 14 "$GE" "${SIGN[@]}" & R2=$!
AWS_WEB_IDENTITY_TOKEN_FILE=$WEB_TOKEN AWS_ROLE_ARN=$ROLE_ARN \
	AWS_ROLE_SESSION_NAME=bc-test AWS_ENDPOINT_URL_STS=$CS/sts BC_BIN=$GWBIN \
	bc_start_gateway --upstream "$FX" --no-cache --anonymous
GW_PID=$BC_GW_PID GW_LOG=$BC_GW_LOG GW=$BC_GW_URL

reader rw1 14 "$GW" & R3=$!

for g in "imds $GI" "ecs $GE" "web-identity $GW"; do
	set -- $g
	v=$(bc_stats_get credentials.source "$2")
	bc_assert_eq "$1" "$v" "$1 gateway: stats say where its keys come from"
done
log=$(cat "$GI_LOG")
bc_assert_match "upstream credentials: imds \(found by the chain\), ASIA\.\.\." "$log" \
	"imds gateway: the chain found IMDS (log)"
log=$(cat "$GW_LOG")
bc_assert_match "upstream credentials: web-identity \(found by the chain\)" "$log" \
	"web identity gateway: the chain found web identity (log)"

wait "$R1" "$R2" "$R3"

for g in "imds $GI ri1" "ecs $GE re1" "web-identity $GW rw1"; do
	set -- $g
	n=$(wc -l <"$BC_TMP/$3.codes")
	bad=$(grep -vc ' 200$' "$BC_TMP/$3.codes" || true)
	# a read every 0.2 s plus curl's own time: 50 on a quiet machine, 9
	# in an ASan build beside the whole suite at a load of 20; 5 still
	# span the refreshes checked below
	bc_assert_ge "$n" 5 "$1: $n reads in 14 s"
	bc_assert_eq 0 "$bad" "$1: every read across the refresh succeeded"
	v=$(bc_stats_get creds_refreshes "$2")
	bc_assert_ge "$v" 1 "$1: refreshed ($v)"
	v=$(bc_stats_get creds_refresh_failures "$2")
	bc_assert_eq 0 "$v" "$1: no refresh failed"
	v=$(bc_stats_get creds_expired_requests "$2")
	bc_assert_eq 0 "$v" "$1: no request found the pair expired"
done

# when the refreshes came, and that both pairs signed
bc_py "$CS" "$FX" "$T0" "$LIFE" <<'EOF'
import json, sys, urllib.request
import itlib

cs, fx, t0, life = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
log = json.load(urllib.request.urlopen(cs + "/__ctl/log", timeout=10))
by_key = itlib.fx_stats(fx)["by_key"]
for kind in ("imds-creds", "ecs", "sts"):
    got = [e for e in log if e["kind"] == kind and e["status"] == 200
           and e["key"] and e["t"] >= t0 and e["why"] is None]
    itlib.ok(len(got) >= 2, "%s: at least 2 pairs handed out (%d)" %
             (kind, len(got)))
    # each refresh a quarter of 12 s before expiry (3 s), give or take
    # scheduling; one check for all of them (a slow run sees more)
    befores = [prev["expires"] - cur["t"] for prev, cur in zip(got, got[1:])]
    itlib.ok(befores and all(2.0 <= b <= 4.5 for b in befores),
             "%s: each refresh came 3 s before the old pair expired (%s)"
             % (kind, ", ".join("%.1f s" % b for b in befores)))
    used = [by_key.get(e["key"], 0) for e in got[:2]]
    itlib.ok(all(u > 0 for u in used), "%s: requests were signed with both "
             "pairs (%s)" % (kind, used))
itlib.done()
EOF
bc_assert_fixture_clean "after the first refresh"

# ---- 4. failures ----------------------------------------------------------
# IMDS fails first and T1 is taken once the fixture has answered that: a
# refresh between T1 and the switch would be a pair handed out "since the
# failures" that came before them (CI saw one)
ctl "fail?kind=imds&count=-1&mode=status"
T1=$(date +%s.%N)
ctl "fail?kind=ecs&count=1&mode=garbage"
ctl "fail?kind=sts&count=1&mode=code"
printf 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnLTI\n' >"$WEB_TOKEN.new"
mv "$WEB_TOKEN.new" "$WEB_TOKEN"
# 16 s: the IMDS pair in force at T1 may have been fetched just before it,
# and lives LIFE (12 s) from then; its reads must outlast it
reader ri2 16 "$GI" & R1=$!
reader re2 16 "$GE" "${SIGN[@]}" & R2=$!
reader rw2 16 "$GW" & R3=$!
wait "$R1" "$R2" "$R3"

for g in "ecs $GE re2" "web-identity $GW rw2"; do
	set -- $g
	bad=$(grep -vc ' 200$' "$BC_TMP/$3.codes" || true)
	bc_assert_eq 0 "$bad" "$1: every read succeeded through the failure"
	v=$(bc_stats_get creds_expired_requests "$2")
	bc_assert_eq 0 "$v" "$1: no request found the pair expired"
done
v=$(bc_stats_get creds_refresh_failures "$GE")
bc_assert_eq 1 "$v" "ecs: the garbage answer was one failed refresh"
v=$(bc_stats_get creds_refresh_failures "$GW")
bc_assert_eq 0 "$v" "web identity: IDPCommunicationError retried within the refresh"
log=$(cat "$GE_LOG")
bc_assert_match "refresh failed \(container credentials .*the answer is not a JSON object\); keeping the current pair, which expires in [0-9]+ s; retry in 1000 ms" \
	"$log" "ecs: the failure logged, the pair kept"

# IMDS: the old pair until it expired, then 503 UpstreamCredentialsExpired
bc_py "$CS" "$T1" "$BC_TMP/ri2.codes" <<'EOF'
import json, sys, urllib.request
import itlib

cs, t1, codes = sys.argv[1], float(sys.argv[2]), sys.argv[3]
log = json.load(urllib.request.urlopen(cs + "/__ctl/log", timeout=10))
ok = [e for e in log if e["kind"] == "imds-creds" and e["status"] == 200
      and e["key"] and e["why"] is None]
failed = [e for e in log if e["kind"] == "imds-creds" and e["t"] >= t1
          and e["status"] == 500]
exp = ok[-1]["expires"]
itlib.ok(ok[-1]["t"] < t1, "imds: no pair handed out since the failures")
itlib.ok(len(failed) >= 2, "imds: the refresh was tried and retried "
         "(%d failed calls)" % len(failed))
rows = [l.split() for l in open(codes)]
first_bad = next((i for i, r in enumerate(rows) if r[1] != "200"), None)
itlib.ok(first_bad is not None, "imds: reads failed once the pair expired")
t_bad = float(rows[first_bad][0])
itlib.ok(t_bad >= exp - 0.5, "imds: reads succeeded until the pair expired "
         "(first failure %.1f s after expiry)" % (t_bad - exp))
# (how many reads fit before expiry is the machine's pace: at least one)
itlib.ok(all(r[1] == "200" for r in rows[:first_bad]) and first_bad >= 1,
         "imds: %d reads succeeded with the old pair" % first_bad)
itlib.ok(all(r[1] == "503" for r in rows[first_bad:]),
         "imds: then every read got 503",
         [r[1] for r in rows[first_bad:]])
itlib.done()
EOF
bc_expect expired 503 UpstreamCredentialsExpired "imds: an expired pair, said so" "$GI/creds/data/obj.bin"
v=$(bc_stats_get creds_expired_requests "$GI")
bc_assert_ge "$v" 2 "imds: requests refused for the expired pair are counted ($v)"
v=$(bc_stats_get creds_refresh_failures "$GI")
bc_assert_ge "$v" 2 "imds: failed refreshes counted ($v)"
v=$(bc_stats_get credentials.expired "$GI")
bc_assert_eq True "$v" "imds: stats say the pair expired"
log=$(cat "$GI_LOG")
bc_assert_match "upstream request not sent: the upstream credentials \(imds\) expired [0-9]+ s ago and no refresh has succeeded \(last error: instance metadata service .*HTTP 500" \
	"$log" "imds: logged with the last error"
# the gateway never signed with the expired pair
bc_assert_fixture_clean "through the failures"

ctl ok
ok=0
for i in $(seq 70); do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$GI/creds/data/obj.bin" || true)
	if [ "$code" = 200 ]; then ok=1; break; fi
	sleep 0.1
done
bc_assert_eq 1 "$ok" "imds: back within 7 s of IMDS recovering"
v=$(bc_stats_get credentials.expired "$GI")
bc_assert_eq False "$v" "imds: a fresh pair in use"

# /metrics carries the credentials' gauges
code=$(bc_req metrics "$GW/_bucketcache/metrics")
bc_assert_eq 200 "$code" "metrics"
m=$(cat "$BC_TMP/metrics.body")
bc_assert_match 'bucketcache_credentials_info\{source="web-identity"\} 1' \
	"$m" "metrics: the source"
bc_assert_match 'bucketcache_credentials_expiry_seconds [0-9]+\.[0-9]+' \
	"$m" "metrics: seconds until expiry"
bc_assert_match 'bucketcache_creds_refreshes_total [1-9]' \
	"$m" "metrics: refreshes"

for g in "$GI_PID $GI_LOG" "$GE_PID $GE_LOG" "$GW_PID $GW_LOG"; do
	set -- $g
	BC_GW_PID=$1 BC_GW_LOG=$2
	bc_stop_gateway
done
bc_done 83
