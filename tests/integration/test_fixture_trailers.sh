#!/bin/bash
# test_fixture_trailers.sh — aws-chunked bodies with trailing checksums,
# built by hand (fixture/awschunked.py; the trailer-signed ones as the Java
# SDK v2 sends them over http).
#   1. The verifying fixture on its own, whose verdicts the gateway's tests
#      rely on: it decodes all three streaming modes, checks chunk and
#      trailer signatures, the decoded length and the trailing checksum,
#      and answers as S3 when one is wrong (SignatureDoesNotMatch 403,
#      BadDigest, IncompleteBody, MalformedTrailerError, InvalidRequest
#      400) without storing anything; it answers x-amz-checksum-mode GETs
#      with the checksum it verified (forgotten on overwrite and delete,
#      copied by CopyObject, composite for multipart), and its checksums
#      match the catalogued check values.
#   2. The same requests through the gateway: the same answers, and the
#      good bodies forwarded in their own mode (re-signed, the checksum
#      trailer intact) verify at the fixture.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bc_require_basics
bc_start_s3rver_fixture

bc_py "$BC_FIXTURE_PORT" <<'EOF'
import hashlib, sys
import awschunked as ac
import itlib
from itlib import ok
from verify_proxy import checksum_of

port = sys.argv[1]
hp = "127.0.0.1:" + port
url = "http://" + hp
s3 = itlib.client(url)
s3.create_bucket(Bucket="trl")

# The checksum implementations against the catalogued check values of
# "123456789" (CRC-32/ISO-HDLC, CRC-32/ISCSI, CRC-64/NVME, SHA-1, SHA-256).
check = {"crc32": "cbf43926", "crc32c": "e3069283",
         "crc64nvme": "ae8b14860a799888",
         "sha1": "f7c3bc1d808e04732adf679965ccc34ca7ae3441",
         "sha256": "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"}
for alg, want in check.items():
    got = checksum_of(alg, b"123456789").hex()
    ok(got == want, "fixture %s(\"123456789\") = %s" % (alg, want), got)

def data_of(n, seed):
    return b"".join(hashlib.sha256(b"%s/%d" % (seed.encode(), i)).digest()
                    for i in range(n // 32 + 1))[:n]

def put(key, data, **kw):
    te = kw.pop("te_chunked", False)
    return ac.send(hp, ac.signed_put(hp, "/trl/" + key, data, **kw),
                   te_chunked=te)

def get(key, mode=True, rng=None):
    h = {}
    if mode:
        h["x-amz-checksum-mode"] = "ENABLED"
    if rng:
        h["range"] = rng
    return ac.send(hp, ac.signed_request(hp, "GET", "/trl/" + key,
                                         headers=h))

def stats():
    return itlib.fx_stats(url)

# Valid bodies: every mode, every algorithm; read back with checksum mode.
s0 = stats()
cases = [("signed-trailer", "crc32c", 20000, 8192, False),
         ("signed-trailer", "crc32", 8192 * 3, 8192, True),
         ("signed-trailer", "sha256", 0, 8192, False),
         ("unsigned-trailer", "crc32", 70000, 65536, False),
         ("unsigned-trailer", "crc64nvme", 9000, 4000, True),
         ("unsigned-trailer", "sha1", 1, 8192, False),
         ("unsigned-trailer", "sha256", 100000, 30000, False)]
for mode, alg, size, chunk, te in cases:
    key = "ok/%s-%s-%d" % (mode, alg, size)
    data = data_of(size, key)
    st, hd, body = put(key, data, mode=mode, alg=alg, chunk=chunk,
                       te_chunked=te)
    want = ac.base64.b64encode(checksum_of(alg, data)).decode()
    what = "%s %s %d B%s" % (mode, alg, size, " (TE chunked)" if te else "")
    ok(st == 200 and hd.get("x-amz-checksum-" + alg) == want,
       "PUT %s: 200 with x-amz-checksum-%s" % (what, alg),
       "%d %r %r" % (st, hd.get("x-amz-checksum-" + alg), body[:300]))
    st, hd, body = get(key)
    ok(st == 200 and body == data and
       hd.get("x-amz-checksum-" + alg) == want and
       hd.get("x-amz-checksum-type") == "FULL_OBJECT",
       "GET %s with checksum mode: the bytes and the checksum" % what,
       "%d %d %r" % (st, len(body), hd))
s1 = stats()
sig_trailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
uns_trailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
ok(s1["by_payload"].get(sig_trailer, 0) - s0["by_payload"].get(sig_trailer, 0) == 3
   and s1["by_payload"].get(uns_trailer, 0) - s0["by_payload"].get(uns_trailer, 0) == 4,
   "stats count the bodies by payload mode", str(s1["by_payload"]))
ok(s1["checksums"].get("trailer.crc32", 0) == 2 and
   s1["checksums"].get("trailer.crc32c", 0) == 1 and
   s1["checksums"].get("trailer.sha256", 0) == 2,
   "stats count the verified checksums by place and algorithm",
   str(s1["checksums"]))

# No trailer at all (x-amz-trailer absent): S3 takes it. The signed
# streaming mode without trailers still works.
data = data_of(5000, "nt")
st, hd, body = put("ok/no-trailer", data, mode="unsigned-trailer", alg=None)
ok(st == 200, "unsigned-trailer body without x-amz-trailer nor a trailer: 200",
   "%d %r" % (st, body[:300]))
st, hd, body = put("ok/signed", data, mode="signed", alg=None)
ok(st == 200, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD body: 200",
   "%d %r" % (st, body[:300]))
st, hd, body = get("ok/signed")
ok(st == 200 and body == data and not any(
       k.startswith("x-amz-checksum-") for k in hd),
   "GET of an object stored without a checksum: no checksum header", str(hd))

# Broken bodies: S3's error, and nothing stored.
bad = [("signed-trailer", "chunk-sig", 403, "SignatureDoesNotMatch"),
       ("signed-trailer", "trailer-sig", 403, "SignatureDoesNotMatch"),
       ("signed-trailer", "checksum", 400, "BadDigest"),
       ("unsigned-trailer", "checksum", 400, "BadDigest"),
       ("signed-trailer", "length", 400, "IncompleteBody"),
       ("unsigned-trailer", "length", 400, "IncompleteBody"),
       ("unsigned-trailer", "trailer-name", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "no-trailer", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "no-trailer-header", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "final-crlf", 400, "IncompleteBody"),
       ("signed", "chunk-sig", 403, "SignatureDoesNotMatch")]
for mode, how, status, code in bad:
    key = "bad/%s-%s" % (mode, how)
    data = data_of(20000, key)
    for te in (False, True):
        st, hd, body = put(key, data, mode=mode, alg="crc32", chunk=8192,
                           bad=how, te_chunked=te)
        ok(st == status and (b"<Code>%s</Code>" % code.encode()) in body,
           "%s with a broken %s%s: %d %s" % (mode, how,
                                             " (TE chunked)" if te else "",
                                             status, code),
           "%d %r" % (st, body[:300]))
    st, _, _ = get(key, mode=False)
    ok(st == 404, "%s with a broken %s: nothing stored" % (mode, how), str(st))

# Hand-made bodies for what the builder cannot break.
def raw_put(key, body, headers, ph="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
            query=()):
    h = {"content-encoding": "aws-chunked"}
    h.update(headers)
    sh, _, _, _, _ = ac.sign("PUT", hp, "/trl/" + key, list(query), h, ph)
    sh["content-length"] = str(len(body))
    target = "/trl/" + key
    if query:
        target += "?" + "&".join("%s=%s" % kv for kv in query)
    return ac.send(hp, ac.Request("PUT", target, list(sh.items()), body))

dl = {"x-amz-decoded-content-length": "3", "x-amz-trailer": "x-amz-checksum-crc32"}
crc_abc = ac.base64.b64encode(checksum_of("crc32", b"abc")).decode()
handmade = [
    ("a chunk size that is not hex", b"zz\r\nabc\r\n0\r\n\r\n",
     dl, 400, "IncompleteBody"),
    ("a chunk of 2 GiB declared", b"80000000\r\nabc",
     dl, 400, "InvalidRequest"),
    ("data after the final CRLF",
     b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\nxyz" % crc_abc.encode(),
     dl, 400, "IncompleteBody"),
    ("a trailer of 9 lines",
     b"3\r\nabc\r\n0\r\n" + b"".join(b"x-amz-meta-%d:v\r\n" % i for i in range(9)) + b"\r\n",
     dl, 400, "MalformedTrailerError"),
    ("a trailer line without a colon",
     b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32 %s\r\n\r\n" % crc_abc.encode(),
     dl, 400, "MalformedTrailerError"),
    ("a checksum value that is not base64 of 4 bytes",
     b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n",
     dl, 400, "InvalidRequest"),
    ("x-amz-trailer naming no checksum", b"3\r\nabc\r\n0\r\n\r\n",
     {"x-amz-decoded-content-length": "3", "x-amz-trailer": "x-amz-meta-foo"},
     400, "InvalidRequest"),
    ("an x-amz-checksum header and a trailer",
     b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % crc_abc.encode(),
     dict(dl, **{"x-amz-checksum-sha1": ac.base64.b64encode(checksum_of("sha1", b"abc")).decode()}),
     400, "InvalidRequest"),
    ("a trailer in STREAMING-AWS4-HMAC-SHA256-PAYLOAD", None, None, 400,
     "MalformedTrailerError"),
]
for what, body, headers, status, code in handmade:
    if body is None:
        # signed streaming without trailers, then a trailer line appended
        r = ac.signed_put(hp, "/trl/raw-signed", b"abc", mode="signed", alg=None)
        r.body = r.body[:-2] + b"x-amz-checksum-crc32:%s\r\n\r\n" % crc_abc.encode()
        r.headers = [(k, str(len(r.body)) if k == "content-length" else v)
                     for k, v in r.headers]
        st, hd, rb = ac.send(hp, r)
    else:
        st, hd, rb = raw_put("raw", body, headers)
    ok(st == status and (b"<Code>%s</Code>" % code.encode()) in rb,
       "a body with %s: %d %s" % (what, status, code), "%d %r" % (st, rb[:300]))

# A trailer mode on anything but PutObject/UploadPart (S3: InvalidRequest).
r = ac.signed_put(hp, "/trl/", b"<Delete/>", mode="unsigned-trailer",
                  alg="crc32", query=[("delete", "")], method="POST")
st, hd, rb = ac.send(hp, r)
ok(st == 400 and b"<Code>InvalidRequest</Code>" in rb,
   "STREAMING-UNSIGNED-PAYLOAD-TRAILER on DeleteObjects: 400 InvalidRequest",
   "%d %r" % (st, rb[:300]))

# The remembered checksum: a Range GET gets none; CopyObject copies it;
# an overwrite without a checksum and a DELETE forget it; a GET without
# checksum mode gets none.
key = "ok/unsigned-trailer-sha256-100000"
data = data_of(100000, key)
want = ac.base64.b64encode(checksum_of("sha256", data)).decode()
st, hd, body = get(key, rng="bytes=0-99")
ok(st == 206 and body == data[:100] and "x-amz-checksum-sha256" not in hd,
   "a Range GET gets no whole-object checksum", "%d %r" % (st, hd))
st, hd, body = get(key, mode=False)
ok(st == 200 and "x-amz-checksum-sha256" not in hd,
   "a GET without x-amz-checksum-mode gets no checksum", str(hd))
st, hd, body = ac.send(hp, ac.signed_request(hp, "HEAD", "/trl/" + key,
                       headers={"x-amz-checksum-mode": "ENABLED"}))
ok(st == 200 and hd.get("x-amz-checksum-sha256") == want,
   "HEAD with checksum mode: the checksum", str(hd))
s3.copy_object(Bucket="trl", Key="copy", CopySource={"Bucket": "trl", "Key": key})
st, hd, body = get("copy")
ok(st == 200 and body == data and hd.get("x-amz-checksum-sha256") == want,
   "CopyObject copies the checksum", str(hd))
s3.put_object(Bucket="trl", Key="copy", Body=b"plain")
st, hd, body = get("copy")
ok(st == 200 and body == b"plain" and "x-amz-checksum-sha256" not in hd,
   "an overwrite without a checksum forgets it", str(hd))
s3.delete_object(Bucket="trl", Key=key)
st, hd, body = put(key, data, mode="unsigned-trailer", alg=None)
st, hd, body = get(key)
ok(st == 200 and body == data and "x-amz-checksum-sha256" not in hd,
   "DeleteObject forgets it (the same bytes put again without one: none)",
   str(hd))

# Multipart: parts with checksums, Complete listing them: the composite;
# a Complete naming a wrong part checksum: InvalidPart.
mpu = s3.create_multipart_upload(Bucket="trl", Key="mpu", ChecksumAlgorithm="CRC32")
uid = mpu["UploadId"]
parts = [data_of(5 * 1024 * 1024, "p1"), data_of(1000, "p2")]
listed = []
for i, p in enumerate(parts, 1):
    st, hd, body = ac.send(hp, ac.signed_put(
        hp, "/trl/mpu", p, mode="unsigned-trailer", alg="crc32", chunk=65536,
        query=[("partNumber", str(i)), ("uploadId", uid)]))
    want = ac.base64.b64encode(checksum_of("crc32", p)).decode()
    ok(st == 200 and hd.get("x-amz-checksum-crc32") == want,
       "UploadPart %d (trailer): answered with its CRC32" % i, "%d %r" % (st, hd))
    listed.append({"PartNumber": i, "ETag": hd["etag"], "ChecksumCRC32": want})
wrong = [dict(listed[0]), dict(listed[1], ChecksumCRC32="AAAAAA==")]
try:
    s3.complete_multipart_upload(Bucket="trl", Key="mpu", UploadId=uid,
                                 MultipartUpload={"Parts": wrong})
    err = None
except s3.exceptions.ClientError as e:
    err = e.response["Error"]["Code"]
ok(err == "InvalidPart", "CompleteMultipartUpload naming a wrong part checksum: InvalidPart",
   str(err))
s3.complete_multipart_upload(Bucket="trl", Key="mpu", UploadId=uid,
                             MultipartUpload={"Parts": listed})
raws = b"".join(checksum_of("crc32", p) for p in parts)
composite = ac.base64.b64encode(checksum_of("crc32", raws)).decode() + "-2"
st, hd, body = get("mpu")
ok(st == 200 and body == b"".join(parts) and
   hd.get("x-amz-checksum-crc32") == composite and
   hd.get("x-amz-checksum-type") == "COMPOSITE",
   "GET of the multipart object: its bytes and the composite CRC32",
   "%d %r" % (st, hd))

s2 = stats()
want = len(bad) * 2 + len(handmade) + 2   # + DeleteObjects, InvalidPart
ok(s2["rejected"] - s1["rejected"] == want and s1["rejected"] == 0,
   "the fixture counted the %d broken requests as rejected, no other" % want,
   "%d: %s" % (s2["rejected"] - s1["rejected"], s2["rejected_by_code"]))
itlib.done()
EOF

# Phase 2: the same requests through the gateway, which must answer as the
# fixture (S3) did, and forward the good ones re-signed in their own mode
# with the checksum trailer intact: the fixture verifies their chunk and
# trailer signatures and the checksum.
bc_start_gateway --upstream "$BC_FIXTURE_URL"
bc_py "$BC_GW_PORT" "$BC_FIXTURE_PORT" <<'EOF'
import hashlib, sys
import awschunked as ac
import itlib
from itlib import ok
from verify_proxy import checksum_of

gw = "127.0.0.1:" + sys.argv[1]
fx = "http://127.0.0.1:" + sys.argv[2]
itlib.client("http://" + gw).create_bucket(Bucket="trg")

def data_of(n, seed):
    return b"".join(hashlib.sha256(b"%s/%d" % (seed.encode(), i)).digest()
                    for i in range(n // 32 + 1))[:n]

def delta(a, b, group, name):
    return b[group].get(name, 0) - a[group].get(name, 0)

s0 = itlib.fx_stats(fx)
cases = [("signed-trailer", "crc32c", 20000, 8192, False),
         ("signed-trailer", "crc32", 8192 * 3, 8192, True),
         ("signed-trailer", "sha256", 0, 8192, False),
         ("unsigned-trailer", "crc32", 70000, 65536, False),
         ("unsigned-trailer", "crc64nvme", 9000, 4000, True),
         ("unsigned-trailer", "sha1", 1, 8192, False),
         ("unsigned-trailer", "sha256", 100000, 30000, False)]
for mode, alg, size, chunk, te in cases:
    key = "ok/%s-%s-%d" % (mode, alg, size)
    data = data_of(size, key)
    want = ac.base64.b64encode(checksum_of(alg, data)).decode()
    what = "%s %s %d B%s" % (mode, alg, size, " (TE chunked)" if te else "")
    st, hd, body = ac.send(gw, ac.signed_put(gw, "/trg/" + key, data, mode=mode,
                           alg=alg, chunk=chunk), te_chunked=te)
    ok(st == 200 and hd.get("x-amz-checksum-" + alg) == want,
       "gateway: PUT %s: 200 with x-amz-checksum-%s" % (what, alg),
       "%d %r %r" % (st, hd, body[:300]))
    st, hd, body = ac.send(gw, ac.signed_request(
        gw, "GET", "/trg/" + key, headers={"x-amz-checksum-mode": "ENABLED"}))
    ok(st == 200 and body == data and hd.get("x-amz-checksum-" + alg) == want,
       "gateway: GET %s with checksum mode: the bytes and the checksum" % what,
       "%d %d %r" % (st, len(body), hd))
s1 = itlib.fx_stats(fx)
sig_trailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
uns_trailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
ok(delta(s0, s1, "by_payload", sig_trailer) == 3 and
   delta(s0, s1, "by_payload", uns_trailer) == 4,
   "the gateway forwarded each body in its own trailer mode",
   str(s1["by_payload"]))
want = {"trailer.crc32": 2, "trailer.crc32c": 1, "trailer.crc64nvme": 1,
        "trailer.sha1": 1, "trailer.sha256": 2}
got = {k: delta(s0, s1, "checksums", k) for k in want}
ok(got == want, "the fixture verified every forwarded trailer checksum "
   "(and the trailer signatures)", "%r %r" % (got, s1["checksums"]))
ok(s1["rejected"] == s0["rejected"], "the fixture rejected none of them",
   str(s1["rejections"][-3:]))

bad = [("signed-trailer", "chunk-sig", 403, "SignatureDoesNotMatch"),
       ("signed-trailer", "trailer-sig", 403, "SignatureDoesNotMatch"),
       ("signed-trailer", "checksum", 400, "BadDigest"),
       ("unsigned-trailer", "checksum", 400, "BadDigest"),
       ("signed-trailer", "length", 400, "IncompleteBody"),
       ("unsigned-trailer", "length", 400, "IncompleteBody"),
       ("unsigned-trailer", "trailer-name", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "no-trailer", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "no-trailer-header", 400, "MalformedTrailerError"),
       ("unsigned-trailer", "final-crlf", 400, "IncompleteBody"),
       ("signed", "chunk-sig", 403, "SignatureDoesNotMatch")]
for mode, how, status, code in bad:
    key = "bad/%s-%s" % (mode, how)
    data = data_of(20000, key)
    for te in (False, True):
        st, hd, body = ac.send(gw, ac.signed_put(
            gw, "/trg/" + key, data, mode=mode, alg="crc32", chunk=8192,
            bad=how), te_chunked=te)
        ok(st == status and (b"<Code>%s</Code>" % code.encode()) in body,
           "gateway: %s with a broken %s%s: %d %s as S3" % (
               mode, how, " (TE chunked)" if te else "", status, code),
           "%d %r" % (st, body[:300]))
    st, _, _ = ac.send(gw, ac.signed_request(gw, "GET", "/trg/" + key))
    ok(st == 404, "gateway: %s with a broken %s: nothing stored" % (mode, how),
       str(st))

# No x-amz-trailer and no checksum in the trailer: S3 takes it, so does
# the gateway, in both trailer modes (the signed one signs an empty trailer).
for mode in ("unsigned-trailer", "signed-trailer"):
    for te in (False, True):
        key = "ok/no-trailer-%s-%d" % (mode, te)
        data = data_of(5000, key)
        st, hd, body = ac.send(gw, ac.signed_put(gw, "/trg/" + key, data,
                               mode=mode, alg=None), te_chunked=te)
        ok(st == 200, "gateway: %s without x-amz-trailer nor a trailer%s: 200"
           % (mode, " (TE chunked)" if te else ""), "%d %r" % (st, body[:300]))
    st, hd, body = ac.send(gw, ac.signed_request(gw, "GET", "/trg/" + key))
    ok(st == 200 and body == data and not any(
           k.startswith("x-amz-checksum-") for k in hd),
       "gateway: %s without a trailer: the bytes, no checksum header" % mode,
       "%d %d %r" % (st, len(body), hd))
itlib.done()
EOF
bc_stop_gateway

bc_done 136
