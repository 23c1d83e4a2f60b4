"""verify(req, creds, region): recomputes a recorded request's SigV4
signature with botocore over exactly the headers it signed and the payload
hash it declared; returns the list of signed header names. Raises
AssertionError when the signature does not match."""

import botocore.auth
from botocore.awsrequest import AWSRequest, HTTPHeaders


def verify(base_url, req, creds, region):
    auth = req.headers.get("authorization", "")
    assert auth.startswith("AWS4-HMAC-SHA256 "), "not SigV4: %r" % auth
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    signed = parts["SignedHeaders"].split(";")
    headers = {n: req.headers[n] for n in signed}

    class Exact(botocore.auth.S3SigV4Auth):
        def headers_to_sign(self, request):
            h = HTTPHeaders()
            for k, v in headers.items():
                h[k] = v
            return h

        def payload(self, request):
            return headers["x-amz-content-sha256"]

    r = AWSRequest(method=req.method, url=base_url + req.raw_path, data=req.raw,
                   headers=headers)
    r.context["timestamp"] = headers["x-amz-date"]
    a = Exact(creds, "s3", region)
    cr = a.canonical_request(r)
    sig = a.signature(a.string_to_sign(r, cr), r)
    assert sig == parts["Signature"], "signature mismatch; canonical request:\n" + cr
    return signed
