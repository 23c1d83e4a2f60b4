#!/bin/bash
# test_scale.sh — self-sizing memory (issue 13, `--mem-size auto`) end to
# end. The origin is s3rver behind the verifying fixture behind
# tests/bench/training/delay_proxy.py (+1 ms per request, --rate B: one
# shared token bucket on response bodies, the origin's bandwidth); jobs are
# fixture/consumer.py (unsigned GETs, so the gateway runs with --anonymous;
# shuffled epochs at a rate R while not waiting; bodies checked). A dataset
# is the bucket plus the key's first part ("train/dsA/"). Phases:
#   0. the chain itself, with a fixed --mem-size 256M: epoch 1 of a 12 MiB
#      set is no faster than B allows, the proxy sends each object once,
#      epoch 2 is all hits at R (never faster; slower only by the time of
#      reads that stalled, which a loaded machine can make of a hit);
#      /v1/scale says "fixed";
#   a. one job, dsA (D = 48 MiB), B = 6 MiB/s, R = 12 MiB/s, 4 epochs,
#      --mem-size auto: by the end of epoch 3 target_bytes is within 10%
#      of D*(1-B/R) = 24 MiB (B as the proxy delivered it in epochs 2-3:
#      --rate, unless a loaded machine held it below), the dataset's
#      size within 5% of D, learnt
#      from an epoch ("epoch"); /stats and /metrics carry the target; the
#      B, R and latency the gateway estimated are printed;
#   b. idle release: once the job has stopped, within --idle-release (4 s)
#      and a few --scale-interval (500 ms), limit_bytes is back at
#      --mem-min (8 MiB), the gateway's VmRSS has dropped by at least half
#      of the bytes it freed (not under ASan), and a decision names idle;
#   c. two jobs at once, dsA at R = 12 MiB/s and dsB at R = 4 MiB/s, the
#      same D (16 MiB each), B = 2 MiB/s, --mem-max 16M: the needs
#      (16*(1-2/12) + 16*(1-2/4) = 21.3 MiB) exceed the max, so dsA (the
#      higher rate per byte) gets its whole need and dsB the rest.
# Objects are 1 MiB (one --chunk-size): through s3rver and the fixture a
# request's latency is ~10 ms, small against a fill's 170 ms at 6 MiB/s,
# and 4x fewer requests than 256 KiB objects keep the epochs short. The
# issue's numbers for c were D = 32 MiB and --mem-max 40M: D is halved to
# keep epoch 1 at 2 MiB/s short, and the max set so that the needs (21.3
# MiB) exceed it while dsA's (13.3) fits with room left for dsB. The whole
# test takes ~85 s (a: ~40 s, c: ~30 s).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
PROXY_PY=$BC_SRCDIR/tests/bench/training/delay_proxy.py
CONSUMER=$BC_IT_DIR/fixture/consumer.py
[ -f "$PROXY_PY" ] || bc_fail "$PROXY_PY missing"

MiB=$((1024 * 1024))
B=train       # the bucket: datasets are "train/dsA/", "train/dsB/"
OBJ=$MiB          # object size: one --chunk-size, so a fill is one object
NA=48             # dsA: 48 MiB (part a); its first 16 objects are part c's dsA
NB=16             # dsB: 16 MiB (part c)
NF=12             # dsF: 12 MiB (phase 0)
NC=16             # part c reads 16 objects of each
SCALE_FLAGS=(--mem-size auto --mem-min 8M --scale-interval 500ms
	--anonymous --chunk-size 1M)

bc_start_s3rver_fixture
FX=$BC_FIXTURE_URL

# ---- the data: three prefixes of one bucket, uploaded through the fixture --
bc_py "$FX" "$B" "$OBJ" "dsA/:$NA" "dsB/:$NB" "dsF/:$NF" <<'EOF'
import sys
from concurrent.futures import ThreadPoolExecutor
import itlib
from itlib import ok, done
import consumer

fx, bucket, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
sets = [(p, int(n)) for p, n in (a.rsplit(":", 1) for a in sys.argv[4:])]
c = itlib.client(fx, pool=16)
c.create_bucket(Bucket=bucket)
keys = [consumer.key_name(p, i) for p, n in sets for i in range(n)]

def put(k):
    c.put_object(Bucket=bucket, Key=k, Body=consumer.content(k, size))
    return k

with ThreadPoolExecutor(8) as ex:
    got = list(ex.map(put, keys))
n = sum(1 for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for o in page.get("Contents", []) if o["Size"] == size)
ok(n == len(keys), "%d objects of %d bytes uploaded (%s)" % (
    len(keys), size, ", ".join("%s x%d" % s for s in sets)), "listed %d" % n)
done()
EOF

# start_proxy RATE: a delay proxy (+1 ms, --rate RATE) in front of the
# fixture; sets PROXY_URL, PROXY_PID.
PROXY_N=0
start_proxy() {
	local pf log
	PROXY_N=$((PROXY_N + 1))
	pf=$BC_TMP/proxy.$PROXY_N.port
	log=$BC_TMP/proxy.$PROXY_N.log
	"$BC_PY" "$PROXY_PY" --upstream "$FX" --delay-ms 1 --rate "$1" \
		--port-file "$pf" >>"$log" 2>&1 &
	PROXY_PID=$!
	BC_PIDS+=("$PROXY_PID")
	BC_LOGS+=("$log")
	for _ in $(seq 100); do
		[ -s "$pf" ] && break
		kill -0 "$PROXY_PID" 2>/dev/null || bc_fail "delay proxy died"
		sleep 0.1
	done
	[ -s "$pf" ] || bc_fail "delay proxy did not start"
	PROXY_URL=http://127.0.0.1:$(cat "$pf")
}

# start_consumer NAME ARGS...: consumer.py against the gateway in the
# background (its --out is $BC_TMP/NAME.json, its stderr NAME.log); sets
# CONS_PID.
start_consumer() {
	local name=$1
	shift
	"$BC_PY" "$CONSUMER" --endpoint "$BC_GW_URL" --bucket "$B" --size "$OBJ" \
		--out "$BC_TMP/$name.json" "$@" 2>"$BC_TMP/$name.log" &
	CONS_PID=$!
	BC_PIDS+=("$CONS_PID")
	BC_LOGS+=("$BC_TMP/$name.log")
}

# wait_consumer PID NAME: its exit status must be 0.
wait_consumer() {
	local rc=0
	wait "$1" || rc=$?
	cat "$BC_TMP/$2.log" >&2
	bc_assert_eq 0 "$rc" "consumer $2 read every object right and exited 0"
}

# ---- 0. the chain, with a fixed size ---------------------------------------
start_proxy 6M
bc_start_gateway --upstream "$PROXY_URL" --mem-size 256M --anonymous --chunk-size 1M
start_consumer f --prefix dsF/ --objects "$NF" --rate 12M --epochs 2 --job jF --seed 7
wait_consumer "$CONS_PID" f
bc_py "$BC_GW_URL" "$PROXY_URL" "$BC_TMP/f.json" "$NF" "$OBJ" <<'EOF'
import json, sys
from itlib import ok, done
import scalelib as sl

gw, proxy, out, n, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
D, Bw, R = n * size, 6 * sl.MiB, 12 * sl.MiB
e = sl.consumer_out(out)["epochs"]
print("# phase 0: epoch 1 %.2f s (%d misses, D/B = %.2f s), epoch 2 %.2f s (%d hits, %d stalls; D/R = %.2f s)"
      % (e[0]["seconds"], e[0]["misses"], D / Bw, e[1]["seconds"], e[1]["hits"], e[1]["stalls"], D / R),
      file=sys.stderr)
ok(e[0]["misses"] == n and e[0]["seconds"] >= 0.97 * D / Bw,
   "epoch 1: every read a miss, and no faster than the origin's B allows",
   "(%d misses, %.2f s)" % (e[0]["misses"], e[0]["seconds"]))
ps = sl.proxy_stats(proxy)
ok(D <= ps["resp_body_bytes"] <= D * 1.02, "the proxy sent each object once",
   "(%d body bytes, D = %d)" % (ps["resp_body_bytes"], D))
# Epoch 2 reads at R, not at the origin's B = R/2: the upper bound sits
# half way (a loaded machine slows the consumer's own Python by 30%; a
# read from the origin would take 2 D/R).
ok(e[1]["hits"] == n and 0.98 * D / R <= e[1]["seconds"] <= 1.5 * D / R + e[1]["stall_seconds"],
   "epoch 2: every read a hit, read at R, not at the origin's R/2 (under 1.5 D/R, plus any stalled reads' time)",
   "(%d hits, %.3f s, %.3f s stalled, D/R = %.3f s)" % (
       e[1]["hits"], e[1]["seconds"], e[1]["stall_seconds"], D / R))
s = sl.scale(gw)
ok(s.get("mode") == "fixed" and s.get("limit_bytes") == 256 * sl.MiB
   and s.get("max_source") == "fixed",
   "/v1/scale: mode fixed, limit_bytes = --mem-size, max_source fixed",
   json.dumps({k: s.get(k) for k in ("mode", "limit_bytes", "max_source")}))
done()
EOF
bc_stop_gateway
kill "$PROXY_PID"

# ---- a. one job: the target converges to D*(1-B/R) -------------------------
start_proxy 6M
bc_start_gateway --upstream "$PROXY_URL" "${SCALE_FLAGS[@]}" --mem-max 512M \
	--idle-release 4s
start_consumer a --prefix dsA/ --objects "$NA" --rate 12M --epochs 4 --job jA --seed 1
A_PID=$CONS_PID
bc_py "$BC_GW_URL" "$BC_TMP/a.json" "$A_PID" "$NA" "$OBJ" "$B/dsA/" "$PROXY_URL" <<'EOF'
import json, sys
from itlib import ok, done
import scalelib as sl

gw, out, pid, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
DS, proxy = sys.argv[6], sys.argv[7]
D, Bw, R = n * size, 6 * sl.MiB, 12 * sl.MiB
s = sl.scale(gw)
ok(s.get("mode") == "auto" and s.get("min_bytes") == 8 * sl.MiB
   and s.get("max_bytes") == 512 * sl.MiB and s.get("max_source") == "flag"
   and s.get("idle_release_seconds") == 4,
   "/v1/scale: mode auto, min 8 MiB, max 512 MiB from the flag, idle release 4 s",
   json.dumps({k: s.get(k) for k in ("mode", "min_bytes", "max_bytes", "max_source",
                                      "idle_release_seconds")}))

def epochs():
    o = sl.consumer_out(out)
    return len(o["epochs"]) if o else 0

# B in the formula is the bandwidth the origin delivered while the
# gateway's estimate was made (epochs 2 and 3; its tau is 10 s of fills),
# as the proxy counts it: bytes of bodies per second any body was being
# sent. It is --rate on a quiet machine; a loaded one held the Python
# proxy and s3rver 11 % below it once, and the gateway measured that.
sl.wait_for(lambda k: k >= 1 or not sl.alive(pid), 90, epochs)
p1 = sl.proxy_stats(proxy)
# the end of epoch 3 (the consumer must not die first)
got, _ = sl.wait_for(lambda k: k >= 3 or not sl.alive(pid), 90, epochs)
ok(epochs() >= 3, "the job read 3 epochs", "(%d)" % epochs())
p2 = sl.proxy_stats(proxy)
busy = p2["body_busy_seconds"] - p1["body_busy_seconds"]
Bd = (p2["resp_body_bytes"] - p1["resp_body_bytes"]) / busy if busy > 0 else Bw
want = D * (1 - min(Bd, Bw) / R)
print("# a: the origin delivered %s/s in epochs 2 and 3 (--rate %s/s)" % (
    sl.mib(Bd), sl.mib(Bw)), file=sys.stderr)

def good(s):
    d = sl.dataset(s, DS)
    return (abs(s["target_bytes"] - want) <= 0.10 * want and d is not None
            and abs(d["size_bytes"] - D) <= 0.05 * D and d["size_source"] == "epoch")

# estimates are folded every 500 ms: a few intervals' grace
held, s = sl.wait_for(good, 3, lambda: sl.scale(gw))
if isinstance(s, Exception):
    ok(False, "/v1/scale readable", repr(s))
d = sl.dataset(s, DS) or {}
j = sl.job(s, "jA") or {}
o = s.get("origin", {})
e = sl.consumer_out(out)["epochs"]
print("# a: epochs %s s; target %s (want %s = D*(1-B/R)), limit %s, held %s; "
      "dataset size %s (%s, D = %s), need %s, share %s; gateway's B %s/s, "
      "latency %.1f ms, job R %s/s (throughput %s/s, waiting %.2f)" % (
          ", ".join("%.2f" % x["seconds"] for x in e), sl.mib(s.get("target_bytes")),
          sl.mib(want), sl.mib(s.get("limit_bytes")), sl.mib(s.get("held_bytes")),
          sl.mib(d.get("size_bytes")), d.get("size_source"), sl.mib(D),
          sl.mib(d.get("need_bytes")), sl.mib(d.get("share_bytes")),
          sl.mib(o.get("bandwidth_bytes_per_second")),
          1000 * (o.get("latency_seconds") or 0),
          sl.mib(j.get("rate_bytes_per_second")),
          sl.mib(j.get("throughput_bytes_per_second")), j.get("wait_fraction") or 0),
      file=sys.stderr)
ok(abs(s["target_bytes"] - want) <= 0.10 * want,
   "by the end of epoch 3 target_bytes is within 10%% of D*(1-B/R) = %s" % sl.mib(want),
   "(%s)" % sl.mib(s["target_bytes"]))
ok(abs(d.get("size_bytes", 0) - D) <= 0.05 * D and d.get("size_source") == "epoch",
   "dataset %s: size within 5%% of D = %s, learnt from an epoch" % (DS, sl.mib(D)),
   "(%s, %s)" % (sl.mib(d.get("size_bytes")), d.get("size_source")))
ok(d.get("jobs") == 1 and d.get("active") is True and j.get("dataset") == DS
   and j.get("active") is True,
   "one active job jA on dataset %s" % DS, json.dumps({"dataset": d, "job": j}))
st = sl.stats(gw)["counters"]
ok(abs(st.get("scale_target_bytes", -1) - want) <= 0.10 * want
   and st.get("cache_bytes_limit", 0) >= 8 * sl.MiB,
   "/stats: scale_target_bytes near the target, cache_bytes_limit the bound",
   json.dumps({k: st.get(k) for k in ("scale_target_bytes", "cache_bytes_limit")}))
m = sl.metrics(gw)
mt = sl.metric(m, "bucketcache_scale_target_bytes")
md = sl.metric(m, "bucketcache_scale_dataset_size_bytes", {"dataset": DS})
ok(mt is not None and abs(mt - want) <= 0.10 * want
   and md is not None and abs(md - D) <= 0.05 * D,
   "/metrics: bucketcache_scale_target_bytes and the dataset's size",
   "(%r, %r)" % (mt, md))
# the last whole epoch as the gateway saw it (from one epoch end to the
# next) against the same epoch of the consumer's, and its shortfall: this
# one reader waits on every miss, so at D*(1-B/R) it runs well below R.
# Its number is the count of epoch ends the gateway saw ("epochs": the
# k-th end is the first read of epoch k+1). A loaded machine made epochs
# 2 and 3 14.24 and 7.33 s once: their mean matched neither.
# The shortfall is set at each epoch end only, and the job reads on (into
# epoch 4): /v1/scale is read again after /metrics and the pair is taken
# when no epoch ended between them (once /metrics had epoch 3's, 0.4631,
# and /v1/scale epoch 2's, 0.5442); then the two are the same number.
for _ in range(5):
    s1 = sl.scale(gw)
    m = sl.metrics(gw)
    d2 = sl.dataset(sl.scale(gw), DS) or {}
    d = sl.dataset(s1, DS) or {}
    if d.get("epochs") == d2.get("epochs"):
        break
j = sl.job(s1, "jA") or {}
le = d.get("last_epoch_seconds") or 0
k = d.get("epochs") or 0
# (no whole epoch seen, k < 2: nan, and the check below fails)
ce = e[k - 1]["seconds"] if 2 <= k <= len(e) else float("nan")
sf = d.get("shortfall")
msf = sl.metric(m, "bucketcache_scale_dataset_shortfall", {"dataset": DS})
print("# a: the gateway's last epoch, %d, %.2f s (the consumer's: %.2f s), "
      "%s/s, shortfall %s" % (k, le, ce, sl.mib(d.get("last_epoch_bytes_per_second")), sf),
      file=sys.stderr)
ok(abs(le - ce) <= 0.15 * ce and sf is not None
   and abs(sf - (1 - D / ce / j.get("rate_bytes_per_second", 1))) <= 0.15
   and msf is not None and abs(msf - sf) <= 0.0001,
   "the dataset's last epoch: its seconds within 15% of the job's, its "
   "shortfall 1 - (D/epoch)/R (the same in /metrics)", "(%r, %r, %r)" % (le, sf, msf))
done()
EOF
wait_consumer "$A_PID" a

# ---- b. idle release --------------------------------------------------------
bc_py "$BC_GW_URL" "$BC_GW_PID" "$BC_TMP/a.json" "$B/dsA/" <<'EOF'
import sys, time
from itlib import ok, done
import scalelib as sl

gw, pid, out, DS = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s0 = sl.scale(gw)
rss0 = sl.rss_kib(pid)
lim0, held0, mn = s0["limit_bytes"], s0["held_bytes"], s0["min_bytes"]
last = sl.consumer_out(out)["epochs"][-1]["end"]
# --idle-release 4 s after the last read, plus 8 intervals of 500 ms
deadline = 4 + 8 * 0.5 - (time.time() - last)
t0 = time.time()
got, s = sl.wait_for(lambda s: s["limit_bytes"] <= s["min_bytes"],
                     max(deadline, 0.5), lambda: sl.scale(gw))
if isinstance(s, Exception):
    ok(False, "/v1/scale readable", repr(s))
t_rel = time.time() - last
# the memory itself follows the limit
_, s = sl.wait_for(lambda s: s["held_bytes"] <= s["limit_bytes"], 2, lambda: sl.scale(gw))
time.sleep(0.3)
rss1 = sl.rss_kib(pid)
freed = held0 - s["held_bytes"]
print("# b: at the job's end limit %s, held %s, RSS %.1f MiB; %.1f s after its last "
      "read limit %s (min %s), held %s, RSS %.1f MiB: freed %s, RSS -%.1f MiB" % (
          sl.mib(lim0), sl.mib(held0), rss0 / 1024, t_rel, sl.mib(s["limit_bytes"]),
          sl.mib(mn), sl.mib(s["held_bytes"]), rss1 / 1024, sl.mib(freed),
          (rss0 - rss1) / 1024), file=sys.stderr)
ok(lim0 > mn and s["limit_bytes"] == mn,
   "within --idle-release + 8 intervals of the job's last read, limit_bytes falls to --mem-min",
   "(from %s to %s, min %s, after %.1f s)" % (sl.mib(lim0), sl.mib(s["limit_bytes"]), sl.mib(mn), t_rel))
ok(s["held_bytes"] <= mn, "held_bytes follows it", "(%s)" % sl.mib(s["held_bytes"]))
if sl.asan(pid):
    ok(True, "RSS check skipped: ASan build (quarantine)")
else:
    ok(freed > 0 and (rss0 - rss1) * 1024 >= freed / 2,
       "VmRSS drops by at least half of the bytes freed",
       "(freed %s, RSS -%.1f MiB)" % (sl.mib(freed), (rss0 - rss1) / 1024))
dec = [x for x in s.get("decisions", []) if "idle" in str(x.get("reason", "")).lower()
       and x.get("to_bytes", 1 << 62) < x.get("from_bytes", 0)]
ok(len(dec) >= 1, "a shrinking decision's reason mentions idle",
   repr(s.get("decisions", [])[-5:]))
d = sl.dataset(s, DS) or {}
ok(d.get("active") is False, "the dataset is no longer active", repr(d))
done()
EOF
bc_stop_gateway
kill "$PROXY_PID"

# ---- c. two datasets, memory short: shares by rate per byte ----------------
start_proxy 2M
bc_start_gateway --upstream "$PROXY_URL" "${SCALE_FLAGS[@]}" --mem-max 16M \
	--idle-release 30s
start_consumer cA --prefix dsA/ --objects "$NC" --rate 12M --epochs 2 --job cA --seed 2
CA_PID=$CONS_PID
start_consumer cB --prefix dsB/ --objects "$NC" --rate 4M --epochs 2 --job cB --seed 3
CB_PID=$CONS_PID
bc_py "$BC_GW_URL" "$CA_PID" "$CB_PID" "$NC" "$OBJ" "$B/dsA/" "$B/dsB/" <<'EOF'
import json, sys, time
from itlib import ok, done
import scalelib as sl

gw, pa, pb, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
DSA, DSB = sys.argv[6], sys.argv[7]
D = n * size

def parts(s):
    return sl.dataset(s, DSA), sl.dataset(s, DSB)

def good(s):
    a, b = parts(s)
    if a is None or b is None or a["size_source"] != "epoch" or b["size_source"] != "epoch":
        return False
    mx = s["max_bytes"]
    return (a["need_bytes"] + b["need_bytes"] > mx
            and a["rate_per_byte"] > b["rate_per_byte"]
            and a["share_bytes"] >= b["share_bytes"]
            and a["share_bytes"] >= 0.98 * a["need_bytes"]
            and b["share_bytes"] < b["need_bytes"]
            and abs(a["share_bytes"] + b["share_bytes"] - mx) <= 0.05 * mx)

# while the jobs run (2 epochs each), and 3 s after the last one ends
end = [None]
def gave_up():
    if end[0] is None and not sl.alive(pa) and not sl.alive(pb):
        end[0] = time.monotonic()
    return end[0] is not None and time.monotonic() > end[0] + 3
held, s = sl.wait_for(good, 120, lambda: sl.scale(gw), until=gave_up)
if isinstance(s, Exception):
    ok(False, "/v1/scale readable", repr(s))
a, b = parts(s)
a, b = a or {}, b or {}
print("# c: max %s; B %s/s; dsA: size %s (%s), R %s/s, rate/byte %.4f, need %s, share %s; "
      "dsB: size %s (%s), R %s/s, rate/byte %.4f, need %s, share %s" % (
          sl.mib(s.get("max_bytes")), sl.mib(s.get("origin", {}).get("bandwidth_bytes_per_second")),
          sl.mib(a.get("size_bytes")), a.get("size_source"), sl.mib(a.get("rate_bytes_per_second")),
          a.get("rate_per_byte") or 0, sl.mib(a.get("need_bytes")), sl.mib(a.get("share_bytes")),
          sl.mib(b.get("size_bytes")), b.get("size_source"), sl.mib(b.get("rate_bytes_per_second")),
          b.get("rate_per_byte") or 0, sl.mib(b.get("need_bytes")), sl.mib(b.get("share_bytes"))),
      file=sys.stderr)
mx = s.get("max_bytes", 0)
ok(a.get("size_source") == "epoch" and b.get("size_source") == "epoch"
   and abs(a.get("size_bytes", 0) - D) <= 0.05 * D and abs(b.get("size_bytes", 0) - D) <= 0.05 * D,
   "both datasets' sizes learnt from an epoch, within 5%% of %s" % sl.mib(D))
ok(a.get("need_bytes", 0) + b.get("need_bytes", 0) > mx, "the needs exceed --mem-max",
   "(%s + %s vs %s)" % (sl.mib(a.get("need_bytes")), sl.mib(b.get("need_bytes")), sl.mib(mx)))
ok((a.get("rate_per_byte") or 0) > (b.get("rate_per_byte") or 0),
   "rate_per_byte(dsA) > rate_per_byte(dsB)")
ok(a.get("share_bytes", 0) >= b.get("share_bytes", 0), "share_bytes(dsA) >= share_bytes(dsB)")
ok(a.get("share_bytes", 0) >= 0.98 * a.get("need_bytes", 1 << 62),
   "dsA gets its whole need")
ok(b.get("share_bytes", 1 << 62) < b.get("need_bytes", 0)
   and abs(a.get("share_bytes", 0) + b.get("share_bytes", 0) - mx) <= 0.05 * mx,
   "and dsB the rest of --mem-max")
done()
EOF
wait_consumer "$CA_PID" cA
wait_consumer "$CB_PID" cB
bc_stop_gateway
bc_done 34
