#!/bin/bash
# test_trailer_checksums.sh — uploads with trailing checksums, as the AWS
# SDKs of 2025 and later send them (aws-chunked in the modes
# STREAMING-UNSIGNED-PAYLOAD-TRAILER and STREAMING-AWS4-HMAC-SHA256-
# PAYLOAD-TRAILER, x-amz-trailer naming an x-amz-checksum-*), and plain
# uploads with an x-amz-checksum-* header. The bodies are built here, in
# Python, with checksums and signatures computed apart from the gateway's
# code (CRC32C and CRC64NVME from their own tables).
#   1. the file:// backend: every checksum in both modes is verified and
#      stored (GET and HEAD with x-amz-checksum-mode: ENABLED return it,
#      a range does not); a wrong checksum is 400 BadDigest, a wrong
#      trailer signature 403 SignatureDoesNotMatch, a trailer naming
#      another checksum or one x-amz-trailer did not announce 400
#      MalformedTrailerError (as S3) — and then nothing is stored; the body may come in
#      HTTP chunked transfer coding (as @aws-sdk/client-s3 sends it); a
#      PUT without a checksum gets S3's default CRC64NVME.
#   2. the proxy, in front of a second gateway on the file:// backend
#      (which verifies what the proxy sends with the proxy's upstream
#      key): the same uploads arrive re-signed in the same mode, the
#      checksum trailer intact, and are stored with their checksum; the
#      bad ones are refused by the proxy itself and never stored.
# DeleteObjects bodies in both trailer modes, and with a checksum header,
# are checked the same way (file backend; the proxy's handler for a key
# limited to a prefix, which decodes and rewrites the body).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
DATA=$BC_TMP/data
mkdir -p "$DATA/tk"

# the file:// gateway: the client's key, and the proxy's upstream key
bc_start_gateway --upstream "file://$DATA" --client-key TK:tsecret \
	--client-key S3RVER:S3RVER --log-level debug
GWF=$BC_GW_URL GWF_PID=$BC_GW_PID GWF_LOG=$BC_GW_LOG
# the proxy in front of it, signing upstream as S3RVER
bc_start_gateway --upstream "$GWF" --client-key TK:tsecret \
	--client-key LK:lsecret:tk/del/ --log-level debug
GWP=$BC_GW_URL

bc_py "$GWF" "$GWP" "$DATA" <<'EOF'
import base64, datetime, hashlib, hmac, http.client, os, sys, time, urllib.parse, zlib

import botocore.auth, botocore.credentials
from botocore.awsrequest import AWSRequest
from itlib import ok, done

GWF, GWP, DATA = sys.argv[1:4]
KEY, SECRET, REGION = "TK", "tsecret", "us-east-1"
EMPTY = hashlib.sha256(b"").hexdigest()


def crc_table(poly, bits):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


T32C = crc_table(0x82F63B78, 32)
T64 = crc_table(0x9A6C9329AC4BC9B5, 64)


def crc(table, mask, data):
    c = mask
    for b in data:
        c = (c >> 8) ^ table[(c ^ b) & 0xFF]
    return c ^ mask


def checksum(alg, data):
    if alg == "crc32":
        raw = zlib.crc32(data).to_bytes(4, "big")
    elif alg == "crc32c":
        raw = crc(T32C, 0xFFFFFFFF, data).to_bytes(4, "big")
    elif alg == "crc64nvme":
        raw = crc(T64, 0xFFFFFFFFFFFFFFFF, data).to_bytes(8, "big")
    else:
        raw = hashlib.new(alg, data).digest()
    return base64.b64encode(raw).decode()


# the catalogue's check values, so the checks below check something
ok(checksum("crc32c", b"123456789") == base64.b64encode(
    (0xE3069283).to_bytes(4, "big")).decode(), "CRC32C check value")
ok(checksum("crc64nvme", b"123456789") == base64.b64encode(
    (0xAE8B14860A799888).to_bytes(8, "big")).decode(), "CRC64NVME check value")


class Signer(botocore.auth.S3SigV4Auth):
    def __init__(self, payload):
        super().__init__(botocore.credentials.Credentials(KEY, SECRET), "s3",
                         REGION)
        self._ph = payload

    def payload(self, request):
        return self._ph


def signing_key(date8):
    k = ("AWS4" + SECRET).encode()
    for p in (date8, REGION, "s3", "aws4_request"):
        k = hmac.new(k, p.encode(), hashlib.sha256).digest()
    return k


def hm(key, s):
    return hmac.new(key, s.encode(), hashlib.sha256).hexdigest()


def request(base, method, path, headers, body=b"", chunked=False, sign=None):
    """Signs (payload hash sign, or none) and sends; returns (status,
    headers, body, the request's seed signature and x-amz-date)."""
    url = base + path
    h = dict(headers)
    req = AWSRequest(method=method, url=url, headers=h)
    if not chunked and method in ("PUT", "POST"):
        req.headers["Content-Length"] = str(len(body))
    Signer(sign or EMPTY).add_auth(req)
    seed = req.headers["Authorization"].split("Signature=")[1]
    date = req.headers["X-Amz-Date"]
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest(method, path, skip_accept_encoding=True)
    for k, v in req.headers.items():
        c.putheader(k, v)
    if chunked:
        c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    if chunked:
        # each aws-chunked piece as its own HTTP chunk, as
        # @aws-sdk/client-s3 sends a stream ("10000\r\n", the data,
        # "\r\n", ..., "0\r\n", the trailer line, "\r\n"); a plain body
        # in pieces of 1000
        for piece in (chunked if isinstance(chunked, list) else
                      [body[i:i + 1000] for i in range(0, len(body), 1000)]):
            c.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
        c.send(b"0\r\n\r\n")
    elif body:
        c.send(body)
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data, seed, date


def unsigned_body(data, chunk, lines):
    b = b""
    for i in range(0, len(data), chunk):
        b += b"%x\r\n" % len(data[i:i + chunk]) + data[i:i + chunk] + b"\r\n"
    return b + b"0\r\n" + b"".join(l.encode() + b"\r\n" for l in lines) + \
        b"\r\n"


def signed_body(data, chunk, seed, date, lines, sig_lines=None, tsig=None):
    key = signing_key(date[:8])
    scope = "%s/%s/s3/aws4_request" % (date[:8], REGION)
    prev, b = seed, b""
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    for p in pieces:
        prev = hm(key, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s" % (
            date, scope, prev, EMPTY, hashlib.sha256(p).hexdigest()))
        b += b"%x;chunk-signature=%s\r\n" % (len(p), prev.encode())
        if p:
            b += p + b"\r\n"
    canon = "".join(l + "\n" for l in (sig_lines or lines))
    t = tsig or hm(key, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s" % (
        date, scope, prev, hashlib.sha256(canon.encode()).hexdigest()))
    return b + b"".join(l.encode() + b"\r\n" for l in lines) + \
        b"x-amz-trailer-signature:" + t.encode() + b"\r\n\r\n"


def put_trailer(base, path, data, alg, mode, chunk=65536, lines=None,
                trailer=None, chunked=False, method="PUT", key=None, **kw):
    """A PUT (or method) in a trailer mode: the body built after signing
    the head (the signed mode's chain starts at the head's signature)."""
    global KEY, SECRET
    saved = KEY, SECRET
    if key:
        KEY, SECRET = key
    try:
        return _put_trailer(base, path, data, alg, mode, chunk, lines,
                            trailer, chunked, method, **kw)
    finally:
        KEY, SECRET = saved


def _put_trailer(base, path, data, alg, mode, chunk, lines, trailer,
                 chunked, method, **kw):
    ph = ("STREAMING-UNSIGNED-PAYLOAD-TRAILER" if mode == "unsigned" else
          "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
    lines = lines or ["x-amz-checksum-%s:%s" % (alg, checksum(alg, data))]
    h = {"Content-Encoding": "aws-chunked",
         "x-amz-decoded-content-length": str(len(data)),
         "x-amz-sdk-checksum-algorithm": alg.upper()}
    if trailer != "":
        h["x-amz-trailer"] = trailer or "x-amz-checksum-" + alg
    # the body's length is needed before signing (Content-Length is
    # signed): build it once with a dummy seed, then again for real
    date = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    if mode == "unsigned":
        body = unsigned_body(data, chunk, lines)
        if chunked == "pieces":
            chunked = []
            for i in range(0, len(data), chunk):
                chunked += [b"%x\r\n" % len(data[i:i + chunk]),
                            data[i:i + chunk], b"\r\n"]
            chunked += [b"0\r\n"] + [l.encode() + b"\r\n" for l in lines] + \
                [b"\r\n"]
        return request(base, method, path, h, body, chunked, ph)
    probe = signed_body(data, chunk, "0" * 64, date, lines, **kw)
    h["Content-Length"] = str(len(probe))
    req = AWSRequest(method=method, url=base + path, headers=dict(h))
    Signer(ph).add_auth(req)
    seed = req.headers["Authorization"].split("Signature=")[1]
    date = req.headers["X-Amz-Date"]
    body = signed_body(data, chunk, seed, date, lines, **kw)
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest(method, path, skip_accept_encoding=True)
    for k, v in req.headers.items():
        c.putheader(k, v)
    c.endheaders()
    c.send(body)
    r = c.getresponse()
    out = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, out, seed, date


def code(body):
    s = body.decode(errors="replace")
    return s.split("<Code>")[1].split("</Code>")[0] if "<Code>" in s else s


def get(path, mode=True, rng=None):
    h = {}
    if mode:
        h["x-amz-checksum-mode"] = "ENABLED"
    if rng:
        h["Range"] = rng
    st, hd, body, _, _ = request(GWF, "GET", path, h)
    return st, hd, body


ALGS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"]
data = bytes((i * 7 + 3) & 255 for i in range(150000))

for tag, base in (("file", GWF), ("proxy", GWP)):
    for mode in ("unsigned", "signed"):
        for alg in ALGS:
            key = "/tk/%s-%s-%s" % (tag, mode, alg)
            st, hd, body, _, _ = put_trailer(base, key, data, alg, mode)
            ok(st == 200, "%s: %s trailer %s: 200" % (tag, mode, alg),
               "%d %s" % (st, body[:300]))
            st, hd, body = get(key)
            ok(st == 200 and body == data and
               hd.get("x-amz-checksum-" + alg) == checksum(alg, data) and
               hd.get("x-amz-checksum-type") == "FULL_OBJECT",
               "%s: %s %s: stored, its checksum returned" % (tag, mode, alg),
               "%d %s" % (st, hd))
    # as @aws-sdk/client-s3 sends it: HTTP chunked, no Content-Length
    key = "/tk/%s-te-chunked" % tag
    st, hd, body, _, _ = put_trailer(base, key, data, "crc32", "unsigned",
                                     chunked=True)
    ok(st == 200, "%s: unsigned trailer in chunked transfer coding" % tag,
       "%d %s" % (st, body[:300]))
    st, hd, body = get(key)
    ok(st == 200 and body == data and hd.get("x-amz-checksum-crc32") ==
       checksum("crc32", data), "%s: ... stored with its CRC32" % tag)
    # bigger than the upstream exchange's buffer, one HTTP chunk per
    # piece: the proxy once suspended with all its input taken and hung
    big = bytes((i * 13 + 1) & 255 for i in range(3 << 20))
    for n in range(3):
        key = "/tk/%s-pieces-%d" % (tag, n)
        st, hd, body, _, _ = put_trailer(base, key, big, "crc32c", "unsigned",
                                         chunked="pieces")
        ok(st == 200, "%s: 3 MiB, an HTTP chunk per aws-chunked piece (%d)" % (
            tag, n), "%d %s" % (st, body[:300]))
    st, hd, body = get(key)
    ok(st == 200 and body == big and hd.get("x-amz-checksum-crc32c") ==
       checksum("crc32c", big), "%s: ... stored with its CRC32C" % tag)

    # refusals: nothing stored
    bad = [
        ("wrong-crc", dict(alg="crc32", mode="unsigned",
                           lines=["x-amz-checksum-crc32:AAAAAA=="]),
         400, "BadDigest"),
        ("wrong-sha256-signed", dict(
            alg="sha256", mode="signed",
            lines=["x-amz-checksum-sha256:" + checksum("sha256", b"x")]),
         400, "BadDigest"),
        ("wrong-trailer-sig", dict(alg="crc32c", mode="signed",
                                   tsig="0" * 64),
         403, "SignatureDoesNotMatch"),
        ("trailer-sig-over-other", dict(
            alg="crc32c", mode="signed",
            sig_lines=["x-amz-checksum-crc32c:" + checksum("crc32c", b"")]),
         403, "SignatureDoesNotMatch"),
        ("other-algorithm", dict(
            alg="crc32", mode="unsigned",
            lines=["x-amz-checksum-crc32c:" + checksum("crc32c", data)]),
         400, "MalformedTrailerError"),
        ("no-x-amz-trailer", dict(alg="crc32", mode="unsigned", trailer=""),
         400, "MalformedTrailerError"),
        ("unknown-trailer", dict(alg="crc32", mode="unsigned",
                                 trailer="x-amz-checksum-md5"),
         400, "InvalidRequest"),
    ]
    for name, kw, want, want_code in bad:
        key = "/tk/%s-bad-%s" % (tag, name)
        st, hd, body, _, _ = put_trailer(base, key, data, **kw)
        ok(st == want and code(body) == want_code,
           "%s: %s: %d %s" % (tag, name, want, want_code),
           "%d %s" % (st, body[:300]))
        st, _, _ = get(key)
        ok(st == 404, "%s: %s: nothing stored" % (tag, name), str(st))

    # plain uploads with a checksum header
    key = "/tk/%s-header-crc32c" % tag
    st, hd, body, _, _ = request(
        base, "PUT", key, {"x-amz-checksum-crc32c": checksum("crc32c", data)},
        data, sign=hashlib.sha256(data).hexdigest())
    ok(st == 200, "%s: PUT with a right x-amz-checksum-crc32c" % tag,
       "%d %s" % (st, body[:300]))
    st, hd, body = get(key)
    ok(st == 200 and hd.get("x-amz-checksum-crc32c") ==
       checksum("crc32c", data), "%s: ... kept and returned" % tag, str(hd))
    key = "/tk/%s-header-bad" % tag
    st, hd, body, _, _ = request(
        base, "PUT", key, {"x-amz-checksum-sha1": checksum("sha1", b"x")},
        data, sign=hashlib.sha256(data).hexdigest())
    ok(st == 400 and code(body) == "BadDigest",
       "%s: PUT with a wrong x-amz-checksum-sha1: 400 BadDigest" % tag,
       "%d %s" % (st, body[:300]))
    st, _, _ = get(key)
    ok(st == 404, "%s: ... nothing stored" % tag, str(st))

# the file backend's own answers
st, hd, body, _, _ = put_trailer(GWF, "/tk/answer", data, "sha1", "unsigned")
ok(hd.get("x-amz-checksum-sha1") == checksum("sha1", data),
   "the upload's answer carries its checksum", str(hd))
st, hd, body = get("/tk/file-unsigned-crc32", mode=False)
ok(st == 200 and not any(k.startswith("x-amz-checksum-") for k in hd),
   "without x-amz-checksum-mode: no checksum", str(hd))
st, hd, body = get("/tk/file-unsigned-crc32", rng="bytes=0-99")
ok(st == 206 and len(body) == 100 and
   not any(k.startswith("x-amz-checksum-") for k in hd),
   "a range: no checksum", str(hd))
st, hd, body, _, _ = request(GWF, "HEAD", "/tk/file-signed-sha256",
                             {"x-amz-checksum-mode": "ENABLED"})
ok(st == 200 and hd.get("x-amz-checksum-sha256") == checksum("sha256", data),
   "HEAD with x-amz-checksum-mode returns it", str(hd))
st, hd, body, _, _ = request(GWF, "PUT", "/tk/default", {}, data,
                             sign=hashlib.sha256(data).hexdigest())
st, hd, body = get("/tk/default")
ok(hd.get("x-amz-checksum-crc64nvme") == checksum("crc64nvme", data),
   "no checksum sent: S3's default CRC64NVME is kept", str(hd))
# DeleteObjects: its body's checksum (trailer or header) is checked too,
# by the file backend, and by the proxy's own handler for a key limited
# to a prefix (http_delete.c: it reads and rewrites the body)
def delete_xml(*keys):
    return ("<Delete>" + "".join("<Object><Key>%s</Key></Object>" % k
                                 for k in keys) + "</Delete>").encode()


for tag, base, key in (("file", GWF, None),
                       ("proxy, limited key", GWP, ("LK", "lsecret"))):
    x = delete_xml("del/a")
    for alg, mode in (("crc32", "unsigned"), ("sha256", "signed")):
        st, hd, body, _, _ = put_trailer(
            base, "/tk?delete", x, alg, mode, method="POST", key=key,
            lines=["x-amz-checksum-%s:%s" % (alg, checksum(alg, b"x"))])
        ok(st == 400 and code(body) == "BadDigest",
           "%s: DeleteObjects, %s trailer %s wrong: 400 BadDigest" % (
               tag, mode, alg), "%d %s" % (st, body[:300]))
    saved = KEY, SECRET
    if key:
        KEY, SECRET = key
    st, hd, body, _, _ = request(
        base, "POST", "/tk?delete", {"x-amz-checksum-crc32": "AAAAAA=="},
        x, sign=hashlib.sha256(x).hexdigest())
    KEY, SECRET = saved
    ok(st == 400 and code(body) == "BadDigest",
       "%s: DeleteObjects, x-amz-checksum-crc32 header wrong: 400 "
       "BadDigest" % tag, "%d %s" % (st, body[:300]))
    st, hd, body, _, _ = request(GWF, "PUT", "/tk/del/a", {}, b"a",
                                 sign=hashlib.sha256(b"a").hexdigest())
    st, hd, body, _, _ = put_trailer(base, "/tk?delete", x, "crc32c",
                                     "signed", method="POST", key=key)
    ok(st == 200 and b"<Deleted>" in body,
       "%s: DeleteObjects, signed trailer crc32c: deleted" % tag,
       "%d %s" % (st, body[:300]))
    st, _, _ = get("/tk/del/a")
    ok(st == 404, "%s: ... gone" % tag, str(st))

# an upload the proxy cut off ends upstream when its connection closes:
# its temp file goes then (give it a moment)
for _ in range(50):
    left = os.listdir(os.path.join(DATA, "tk", ".bucketcache-tmp"))
    if not left:
        break
    time.sleep(0.1)
ok(left == [], "no temp file left behind", str(left))
done()
EOF

bc_stop_gateway
BC_GW_PID=$GWF_PID BC_GW_LOG=$GWF_LOG
bc_stop_gateway
bc_done 110
