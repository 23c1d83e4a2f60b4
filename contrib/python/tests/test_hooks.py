"""install_hints: a boto3 client's GetObject, sent to a recording server,
carries x-bucketcache-job/-epoch/-next, signed when the client signs (the
signature recomputed over them), bounded, for the sampler's bucket only;
a failing hook never fails a read."""

import logging
import unittest
import urllib.parse

from deps import HAVE_BOTO3, HAVE_TORCH

if HAVE_BOTO3:
    import boto3
    from botocore import UNSIGNED
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials

    import sigv4
if HAVE_TORCH:
    from torch.utils.data import SequentialSampler

from bucketcache import install_hints, next_header_value, uninstall_hints
from bucketcache.hooks import MAX_HEADER_BYTES, MAX_NEXT_KEYS
from recorder import Recorder

KEYS = ["train/img %03d,x.bin" % i for i in range(30)] + ["train/é/ü.bin"]


def client(url, signed=True):
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"})
    if not signed:
        cfg = cfg.merge(Config(signature_version=UNSIGNED))
    c = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                     aws_access_key_id="AK", aws_secret_access_key="SK", config=cfg)
    _clients.append(c)
    return c


_clients = []


def decode_next(v):
    return [urllib.parse.unquote(k) for k in v.split(",")]


@unittest.skipUnless(HAVE_BOTO3 and HAVE_TORCH, "needs boto3 and torch "
                     "(python3-boto3, python3-torch)")
class TestHook(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder().start()
        from bucketcache import HintedSampler
        self.hs = HintedSampler(SequentialSampler(range(len(KEYS))), KEYS, self.rec.url,
                                "ds", "job-7", put_wait=5)
        it = iter(self.hs)
        next(it)  # epoch 0 has begun

    def tearDown(self):
        while _clients:
            _clients.pop().close()
        self.rec.stop()

    def get(self, c, key, bucket="ds"):
        n = len(self.rec.of("GET"))
        self.assertEqual(self.rec.get_body, c.get_object(Bucket=bucket, Key=key)["Body"].read())
        gets = self.rec.of("GET")
        self.assertEqual(n + 1, len(gets))
        return gets[-1]

    def test_signed_headers(self):
        c = client(self.rec.url)
        install_hints(c, "job-7", sampler=self.hs, n_next=4)
        r = self.get(c, KEYS[3])
        self.assertEqual("job-7", r.headers["x-bucketcache-job"])
        self.assertEqual("0", r.headers["x-bucketcache-epoch"])
        self.assertEqual(KEYS[4:8], decode_next(r.headers["x-bucketcache-next"]))
        self.assertNotIn(" ", r.headers["x-bucketcache-next"])
        self.assertEqual(3, r.headers["x-bucketcache-next"].count(","))
        signed = sigv4.verify(self.rec.url, r, Credentials("AK", "SK"), "us-east-1")
        for h in ("x-bucketcache-job", "x-bucketcache-epoch", "x-bucketcache-next"):
            self.assertIn(h, signed)
        # the tail of the epoch runs on into the next (a sequential order is known)
        r = self.get(c, KEYS[-2])
        self.assertEqual([KEYS[-1]] + KEYS[:3], decode_next(r.headers["x-bucketcache-next"]))

    def test_unsigned(self):
        c = client(self.rec.url, signed=False)
        install_hints(c, "job-7", sampler=self.hs, n_next=2)
        r = self.get(c, KEYS[0])
        self.assertNotIn("authorization", r.headers)
        self.assertEqual("job-7", r.headers["x-bucketcache-job"])
        self.assertEqual(KEYS[1:3], decode_next(r.headers["x-bucketcache-next"]))

    def test_job_only_and_other_bucket(self):
        c = client(self.rec.url)
        install_hints(c, "job-7")
        r = self.get(c, KEYS[0])
        self.assertEqual("job-7", r.headers["x-bucketcache-job"])
        self.assertNotIn("x-bucketcache-next", r.headers)
        self.assertNotIn("x-bucketcache-epoch", r.headers)
        install_hints(c, "job-8", sampler=self.hs)
        r = self.get(c, KEYS[0], bucket="other")
        self.assertEqual("job-8", r.headers["x-bucketcache-job"])
        self.assertNotIn("x-bucketcache-next", r.headers)
        uninstall_hints(c)
        r = self.get(c, KEYS[0])
        self.assertNotIn("x-bucketcache-job", r.headers)
        # other operations are left alone
        install_hints(c, "job-7", sampler=self.hs)
        c.head_object(Bucket="ds", Key=KEYS[0])
        self.assertNotIn("x-bucketcache-job", self.rec.of("HEAD")[-1].headers)

    def test_failing_sampler_never_fails_a_read(self):
        class Broken:
            bucket = "ds"
            epoch = 0

            def next_keys(self, n, after=None):
                raise RuntimeError("boom")

        c = client(self.rec.url)
        install_hints(c, "job-7", sampler=Broken())
        with self.assertLogs("bucketcache", logging.WARNING) as cm:
            r = self.get(c, KEYS[0])
            self.get(c, KEYS[1])
        self.assertEqual(1, len(cm.records))
        self.assertEqual("job-7", r.headers["x-bucketcache-job"])
        self.assertNotIn("x-bucketcache-next", r.headers)
        sigv4.verify(self.rec.url, r, Credentials("AK", "SK"), "us-east-1")

    def test_resign_replaces(self):
        h = install_hints(client(self.rec.url), "job-7", sampler=self.hs, n_next=2)
        req = AWSRequest(method="GET", url=self.rec.url + "/ds/x")
        h.on_params(params={"Bucket": "ds", "Key": KEYS[0]}, context=req.context)
        h.on_sign(request=req)
        h.on_sign(request=req)
        self.assertEqual(["job-7"], req.headers.get_all("x-bucketcache-job"))
        self.assertEqual(1, len(req.headers.get_all("x-bucketcache-next")))


class TestBounds(unittest.TestCase):
    def test_at_most_1000_keys(self):
        v = next_header_value(["k%d" % i for i in range(5000)])
        self.assertEqual(MAX_NEXT_KEYS, len(v.split(",")))
        self.assertEqual(["k%d" % i for i in range(1000)], v.split(","))

    def test_at_most_64k_whole_keys(self):
        keys = ["d/" + "x" * 997 + "%03d" % i for i in range(200)]
        v = next_header_value(keys)
        self.assertLessEqual(len(v.encode()), MAX_HEADER_BYTES)
        got = decode_next(v)
        self.assertEqual(keys[:len(got)], got)
        self.assertEqual(65, len(got))  # 65 keys of 1,002 bytes + commas fit, 66 do not

    def test_encoding_round_trips(self):
        keys = ["a,b", "c d", "é/ü", "pct%2C", "plus+"]
        v = next_header_value(keys)
        self.assertEqual(5, len(v.split(",")))
        self.assertTrue(v.isascii())
        self.assertEqual(keys, decode_next(v))


if __name__ == "__main__":
    unittest.main()
