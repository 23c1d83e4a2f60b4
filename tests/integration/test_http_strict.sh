#!/bin/bash
# test_http_strict.sh — the request head is checked before anything reads
# it (issue 8, findings 7, 8 and 3), over raw sockets (fixture/rawhttp.py):
#   7. malformed heads — two Content-Length headers (different or equal),
#      "Host : x", bare LF line ends, a folded header line, two Host
#      headers, a raw NUL in the request target, Transfer-Encoding with
#      Content-Length, a control byte in a header value, a space in a
#      header name — each get 400 with S3 XML <Code>BadRequest</Code>, the
#      connection closed, and nothing stored; on a gateway that requires
#      signatures too (400 before authentication, not 403). Well-formed
#      requests still pass: a plain GET (kept alive), two pipelined GETs,
#      ~60 headers of 300 bytes sent in 7-byte pieces, a chunked upload
#      (UploadPart, and PutObject: the file backend stores a chunked
#      PutObject, issue 9; through the proxy its upstream decides),
#      a key in percent-encoded UTF-8.
#   8. PUT with Transfer-Encoding: gzip (or "gzip, chunked") is 501
#      NotImplemented at once (under 1.5 s: before the fix, never) and
#      stores nothing; with a Content-Length as well (never answered
#      before the fix) it is 400.
#   3. /_bucketcache/health (and an object) with 470, 600, 2000 and 4000
#      query parameters are answered 400 at once; after 1000 such requests
#      the in-flight gauge ("connections") is back to 1, RSS grew by less
#      than 4 MB over the last 600 (one malloc arena: see the gateway's
#      start; not measured under ASan, whose quarantine keeps freed
#      memory), and the gateway stops without a
#      sanitizer report (LeakSanitizer saw the leak before the fix).
#      128 requests that become ready together on one HTTP worker are
#      answered within 5 s (libmicrohttpd's epoll loop held such a batch
#      until its next event: the late answer of issue 28).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics

DATA=$BC_TMP/buckets
mkdir -p "$DATA/bkt"
printf 'hello\n' >"$DATA/bkt/a.txt"

# One malloc arena for this gateway (section 3 reads its RSS as a leak
# check): glibc gives each HTTP worker thread an arena of its own and keeps
# freed memory in it up to M_TRIM_THRESHOLD (8 MiB, main.c), so VmRSS is the
# sum of every arena's high-water mark. A burst of 200 connections (each a
# 32 KiB libmicrohttpd pool, malloc'd and zeroed by the worker that
# accepted it) splits between the workers as the scheduler has it; beside
# a CPU hog one worker took more of a burst than it ever had, its arena's
# mark rose, and the last 600 requests "grew" RSS by 5 MiB (the flake)
# with nothing leaked. With one arena the mark is the burst's whole, which
# the warm-up reaches (+32..56 KiB over the 600 then, beside the same hog);
# memory that is never freed still adds to it.
GLIBC_TUNABLES=glibc.malloc.arena_max=1 \
	bc_start_gateway --upstream "file://$DATA" --anonymous --log-level debug
ANON_PORT=$BC_GW_PORT
ANON_URL=$BC_GW_URL
ANON_PID=$BC_GW_PID
ANON_LOG=$BC_GW_LOG
bc_start_gateway --upstream "file://$DATA" --client-key STRICT:strictsecret --log-level debug
AUTH_PORT=$BC_GW_PORT

# ---- 7. malformed heads: 400 BadRequest, closed, before authentication -----
bc_py "$ANON_PORT" "$AUTH_PORT" "$DATA" <<'EOF'
import os, sys, rawhttp
from itlib import ok, done
anon, auth, data = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
H = b"Host: 127.0.0.1\r\n"
G = b"GET /bkt/a.txt HTTP/1.1\r\n"
cases = [
    ("two different Content-Length", "cl2.txt", b"PUT /bkt/cl2.txt HTTP/1.1\r\n" + H +
     b"Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"),
    ("two equal Content-Length", "cl2eq.txt", b"PUT /bkt/cl2eq.txt HTTP/1.1\r\n" + H +
     b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"),
    ("'Host : x'", None, G + b"Host : x\r\n\r\n"),
    ("bare LF line ends", None, b"GET /bkt/a.txt HTTP/1.1\nHost: 127.0.0.1\n\n"),
    ("one bare LF among CR LF", None, G + H + b"X-A: b\nX-B: c\r\n\r\n"),
    ("a folded header line", None, G + H + b"X-A: b\r\n c\r\n\r\n"),
    ("two Host headers", None, G + H + b"Host: other\r\n\r\n"),
    ("a raw NUL in the request target", None, b"GET /bkt/a.txt\0junk HTTP/1.1\r\n" + H + b"\r\n"),
    ("Transfer-Encoding with Content-Length", "tecl.txt", b"PUT /bkt/tecl.txt HTTP/1.1\r\n" + H +
     b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    ("a control byte in a header value", None, G + H + b"X-A: a\x01b\r\n\r\n"),
    ("a space in a header name", None, G + H + b"X A: b\r\n\r\n"),
]
for port, who in ((anon, "anonymous"), (auth, "signatures required")):
    for name, stored, req in cases:
        r, closed, took = rawhttp.exchange(port, req)
        ok(r is not None and r.status == 400, "%s (%s): 400" % (name, who), repr(r))
        ok(rawhttp.s3_code(r) == "BadRequest",
           "%s (%s): S3 XML <Code>BadRequest</Code>" % (name, who), repr(r))
        ok(closed, "%s (%s): the gateway closes the connection" % (name, who))
        if stored:
            p = os.path.join(data, "bkt", stored)
            ok(not os.path.exists(p), "%s (%s): nothing stored" % (name, who))
# the control: the same gateway refuses a well-formed unsigned request (403)
r, closed, took = rawhttp.exchange(auth, G + H + b"\r\n")
ok(r is not None and r.status == 403 and rawhttp.s3_code(r) == "AccessDenied",
   "signatures required: a well-formed unsigned GET is 403 AccessDenied", repr(r))
done()
EOF

# ---- 7. well-formed requests still pass ------------------------------------
bc_py "$ANON_PORT" <<'EOF'
import sys, rawhttp
from itlib import ok, done
port = int(sys.argv[1])
H = b"Host: 127.0.0.1\r\n"
G = b"GET /bkt/a.txt HTTP/1.1\r\n" + H + b"\r\n"
r, closed, took = rawhttp.exchange(port, G, close_wait=0.5)
ok(r is not None and r.status == 200 and r.body == b"hello\n", "a plain GET: 200 hello", repr(r))
ok(not closed, "a plain GET: the connection stays open (keep-alive)")

s = rawhttp.connect(port)
s.sendall(G + b"GET /_bucketcache/health HTTP/1.1\r\n" + H + b"\r\n")
r1 = rawhttp.read_response(s)
r2 = rawhttp.read_response(s)
ok(r1 is not None and r1.status == 200 and r1.body == b"hello\n",
   "pipelined: the first GET is 200 with its body", repr(r1))
ok(r2 is not None and r2.status == 200 and r2.body == b"ok\n",
   "pipelined: the second GET on the same connection is 200", repr(r2))
s.close()

big = b"".join(b"X-Pad-%02d: %s\r\n" % (i, (b"%02d" % i) * 143) for i in range(60))
req = b"GET /bkt/a.txt HTTP/1.1\r\n" + H + big + b"\r\n"
r, closed, took = rawhttp.exchange(port, req, piece=7, timeout=20, close_wait=0.5)
ok(len(big) > 60 * 290, "the 60 padded headers hold %d bytes" % len(big))
ok(r is not None and r.status == 200 and r.body == b"hello\n",
   "60 headers of ~300 bytes in 7-byte pieces: 200 (no false 400)", repr(r))
ok(not closed, "60 headers in 7-byte pieces: kept alive")
done()
EOF

# A chunked upload (UploadPart: S3 takes a part without Content-Length) and a
# chunked PutObject, which the file backend stores (issue 9: the gateway
# streams chunked bodies to its upstream, here the file store, which
# decides; S3 itself answers 411, see test_s3_answers.sh).
PART=$BC_TMP/part.bin
bc_mkfile "$PART" 300000
bc_expect mpu 200 - "CreateMultipartUpload" -X POST "$ANON_URL/bkt/chunked.bin?uploads"
UPLOAD_ID=$(sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p' "$BC_TMP/mpu.body")
bc_assert_match '^[0-9a-zA-Z._-]+$' "$UPLOAD_ID" "an upload id"
bc_py "$ANON_PORT" "$UPLOAD_ID" "$PART" "$BC_TMP/part.etag" "$DATA" <<'EOF'
import sys, rawhttp
from itlib import ok, done
port, upid, path, etag_out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
data_dir = sys.argv[5]
data = open(path, "rb").read()
body, i, n = b"", 0, 1
while i < len(data):          # chunks of 1, 10, 100, ... bytes, with an extension
    k = min(n, len(data) - i)
    body += b"%x;ext=1\r\n" % k + data[i:i + k] + b"\r\n"
    i += k
    n = n * 10 if n < 100000 else 7777
body += b"0\r\n\r\n"
req = (b"PUT /bkt/chunked.bin?partNumber=1&uploadId=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       b"Transfer-Encoding: chunked\r\n\r\n" % upid.encode()) + body
r, closed, took = rawhttp.exchange(port, req, piece=4096, timeout=20, close_wait=0.3)
ok(r is not None and r.status == 200 and r.header("etag"),
   "UploadPart with Transfer-Encoding: chunked: 200 with an ETag", repr(r))
open(etag_out, "w").write((r.header("etag") if r else None) or "none")
req = (b"PUT /bkt/chunked-put.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
r, closed, took = rawhttp.exchange(port, req)
ok(r is not None and r.status == 200,
   "PutObject with Transfer-Encoding: chunked: stored (200), not 400/411/501", repr(r))
ok(open(data_dir + "/bkt/chunked-put.bin", "rb").read() == b"hello",
   "PutObject with Transfer-Encoding: chunked: its bytes")
done()
EOF
ETAG=$(cat "$BC_TMP/part.etag")
printf '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>' \
	"$ETAG" >"$BC_TMP/complete.xml"
bc_expect complete 200 - "CompleteMultipartUpload of the chunked part" -X POST \
	--data-binary "@$BC_TMP/complete.xml" "$ANON_URL/bkt/chunked.bin?uploadId=$UPLOAD_ID"
bc_expect get-chunked 200 - "GET the object uploaded chunked" "$ANON_URL/bkt/chunked.bin"
bc_assert_same_file "$PART" "$BC_TMP/get-chunked.body" "the chunked upload stored the right bytes"

# A key in percent-encoded UTF-8 ("café ✓.txt").
printf 'utf8 key\n' >"$BC_TMP/utf8.txt"
bc_expect put-utf8 200 - "PUT a key in percent-encoded UTF-8" -X PUT \
	--data-binary "@$BC_TMP/utf8.txt" "$ANON_URL/bkt/caf%C3%A9%20%E2%9C%93.txt"
bc_assert_same_file "$BC_TMP/utf8.txt" "$DATA/bkt/café ✓.txt" "stored under its decoded UTF-8 name"
bc_expect get-utf8 200 - "GET the UTF-8 key" "$ANON_URL/bkt/caf%C3%A9%20%E2%9C%93.txt"
bc_assert_same_file "$BC_TMP/utf8.txt" "$BC_TMP/get-utf8.body" "GET the UTF-8 key: its bytes"

# ---- 8. Transfer-Encoding other than chunked: 501 at once, nothing stored --
# (with a Content-Length too it is 400, as any Transfer-Encoding with one:
# before the fix that PUT was never answered)
bc_py "$ANON_PORT" "$DATA" <<'EOF'
import os, sys, rawhttp
from itlib import ok, done
port, data = int(sys.argv[1]), sys.argv[2]
body = b"\x1f\x8b\x08\x00" + b"z" * 5000
for what, key, extra, status, code in (
        ("gzip", "gz.bin", b"", 501, "NotImplemented"),
        ("gzip, chunked", "gzc.bin", b"", 501, "NotImplemented"),
        ("gzip with Content-Length", "gzcl.bin", b"Content-Length: %d\r\n" % len(body),
         400, "BadRequest")):
    coding = what.split(" with ")[0]
    req = (b"PUT /bkt/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: %s\r\n%s\r\n"
           % (key.encode(), coding.encode(), extra)) + body
    r, closed, took = rawhttp.exchange(port, req, timeout=5)
    ok(r is not None and r.status == status, "Transfer-Encoding: %s: %d" % (what, status), repr(r))
    ok(rawhttp.s3_code(r) == code, "Transfer-Encoding: %s: S3 XML %s" % (what, code), repr(r))
    ok(took < 1.5, "Transfer-Encoding: %s: answered at once (%.3f s)" % (what, took))
    ok(closed, "Transfer-Encoding: %s: the connection is closed" % what)
    ok(not os.path.exists(os.path.join(data, "bkt", key)),
       "Transfer-Encoding: %s: no file in the bucket directory" % what)
    r, closed, took = rawhttp.exchange(port, b"GET /bkt/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                       % key.encode())
    ok(r is not None and r.status == 404 and rawhttp.s3_code(r) == "NoSuchKey",
       "Transfer-Encoding: %s: a GET of the key is 404 NoSuchKey" % what, repr(r))
done()
EOF

# ---- 3. many query parameters: 400 at once, no leak ------------------------
# Four sizes one by one, then 5 x 200 requests of 4000 parameters sent on
# 200 connections at once (a leaked request would keep the gauge up).
BC_GW_PID=$ANON_PID BC_GW_LOG=$ANON_LOG BC_GW_URL=$ANON_URL
ASAN=0
grep -q libasan "/proc/$ANON_PID/maps" && ASAN=1
bc_py "$ANON_PORT" "$ANON_PID" "$ASAN" <<'EOF'
import json, sys, time, urllib.request, rawhttp
from itlib import ok, done
port, pid, asan = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"

def req(path, n):
    return ("GET %s?%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % (path, "&".join(["a"] * n))).encode()

def rss_kb():
    for ln in open("/proc/%d/status" % pid):
        if ln.startswith("VmRSS:"):
            return int(ln.split()[1])

def gauge():
    with urllib.request.urlopen("http://127.0.0.1:%d/_bucketcache/stats" % port, timeout=5) as f:
        return json.load(f)["counters"]["connections"]

for path in ("/_bucketcache/health", "/bkt/a.txt"):
    for n in (470, 600, 2000, 4000):
        r, closed, took = rawhttp.exchange(port, req(path, n), timeout=3, close_wait=0.2)
        ok(r is not None and r.status == 400 and rawhttp.s3_code(r) == "InvalidArgument",
           "%s with %d parameters: 400 InvalidArgument" % (path, n), repr(r))
        ok(took < 1.5, "%s with %d parameters: answered at once (%.3f s)" % (path, n, took))

def batch(n, params):
    socks = [rawhttp.connect(port) for i in range(n)]
    data = req("/_bucketcache/health", params)
    for s in socks:
        s.sendall(data)
    deadline = time.monotonic() + 5
    got = 0
    for s in socks:
        r = rawhttp.read_response(s, max(0.01, deadline - time.monotonic()))
        got += r is not None and r.status == 400
        s.close()
    return got

# Two batches warm the allocator up (glibc keeps up to M_TRIM_THRESHOLD,
# 8 MiB, of freed heap, and a second burst may fragment past the first's
# peak); the three measured after them hold 600 requests, so a leak of even
# 7 KiB a request shows, while retention, which does not grow, does not.
got = batch(200, 4000)
ok(got == 200, "200 requests of 4000 parameters at once: all answered 400 within 5 s", str(got))
got = batch(200, 4000)
ok(got == 200, "200 more: all answered 400 within 5 s", str(got))
rss0 = rss_kb()
got = sum(batch(200, 4000) for i in range(3))
ok(got == 600, "600 more, 200 at a time: all answered 400 within 5 s", str(got))
for i in range(40):            # answered requests end at once; allow 2 s
    g = gauge()
    if g <= 1:
        break
    time.sleep(0.05)
ok(g <= 1, "after 1000 such requests the connections gauge is back to <= 1", str(g))
grew = rss_kb() - rss0
if asan:
    print("# RSS not checked under ASan (its quarantine keeps freed memory): +%d KiB" % grew)
else:
    ok(grew < 4096, "RSS grew by less than 4 MiB over the last 600 (%+d KiB)" % grew)
done()
EOF

# ---- 128 requests that arrive together on one worker -----------------------
# libmicrohttpd under epoll handles a batch of exactly 128 ready sockets
# only after its next wait, whose timeout is the client timeout: the
# requests waited for another event (in the batches above, the client
# giving up on one of them after 5 s). The sweeper wakes the workers
# (http_conns.h, "stalled"). One worker (--threads 1); the gateway is
# stopped while the 128 requests are sent, so they are ready together.
bc_start_gateway --upstream "file://$DATA" --anonymous --threads 1
bc_py "$BC_GW_PORT" "$BC_GW_PID" <<'EOF'
import os, signal, sys, time, rawhttp
from itlib import ok, done
port, pid = int(sys.argv[1]), int(sys.argv[2])
G = b"GET /bkt/a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
late = []
for rnd in range(3):
    socks = [rawhttp.connect(port) for i in range(128)]
    for s in socks:       # all accepted, answered and idle (kept alive)
        s.sendall(G)
    for s in socks:
        rawhttp.read_response(s, 10)
    time.sleep(0.3)
    os.kill(pid, signal.SIGSTOP)
    try:
        for s in socks:
            s.sendall(G)
        time.sleep(0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
    t0 = time.monotonic()
    deadline = t0 + 5
    got = 0
    for s in socks:
        r = rawhttp.read_response(s, max(0.01, deadline - time.monotonic()))
        got += r is not None and r.status == 200 and r.body == b"hello\n"
        s.close()
    late.append((got, round(time.monotonic() - t0, 3)))
ok(all(g == 128 for g, t in late),
   "128 requests ready together on one worker, three times: all answered within 5 s",
   str(late))
done()
EOF
bc_stop_gateway

BC_GW_PID=$ANON_PID BC_GW_LOG=$ANON_LOG BC_GW_URL=$ANON_URL
bc_stop_gateway

bc_done $((136 - ASAN))
