"""HintedSampler against a recording HTTP server: plan PUTs (path, query,
body, gzip), the next epoch's plan when the sampler is seeded (and that it
is the order the next epoch really has), untouched RNG, auth headers,
failure tolerance, next_keys() in the main process and in DataLoader
workers."""

import hashlib
import logging
import socket
import time
import unittest

from deps import HAVE_BOTO3, HAVE_TORCH

if not (HAVE_BOTO3 and HAVE_TORCH):
    raise unittest.SkipTest("HintedSampler's tests need torch and boto3 "
                            "(python3-torch, python3-boto3)")

import boto3  # noqa: E402
import torch  # noqa: E402
from botocore.credentials import Credentials
from torch.utils.data import (DataLoader, Dataset, DistributedSampler, RandomSampler,
                              SequentialSampler)

import sigv4
from bucketcache import HintedSampler
from recorder import Recorder

KEYS = ["train/img%04d.bin" % i for i in range(50)]


def seeded(seed, n=len(KEYS)):
    g = torch.Generator()
    g.manual_seed(seed)
    return RandomSampler(range(n), generator=g)


def plans(rec):
    return [(int(r.query["epoch"]), r) for r in rec.of("PUT")]


class Base(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder().start()

    def tearDown(self):
        self.rec.stop()

    def hinted(self, sampler, keys=KEYS, **kw):
        kw.setdefault("put_wait", 5)
        return HintedSampler(sampler, keys, self.rec.url, "ds", "job/1", **kw)


class TestPlans(Base):
    def test_unseeded_posts_each_epoch_only(self):
        hs = self.hinted(RandomSampler(range(len(KEYS))))
        orders = []
        for e in range(3):
            orders.append(list(hs))
            self.assertTrue(hs.flush(10))
        got = plans(self.rec)
        self.assertEqual([0, 1, 2], [e for e, _ in got])
        for (e, r), order in zip(got, orders):
            self.assertEqual("/_bucketcache/v1/jobs/job%2F1/plan", r.path)
            self.assertEqual({"bucket": "ds", "epoch": str(e)}, r.query)
            self.assertEqual([KEYS[i] for i in order], r.lines())
            self.assertNotIn("content-encoding", r.headers)
            self.assertNotIn("authorization", r.headers)
            self.assertNotIn("x-bucketcache-admin-token", r.headers)
        self.assertEqual(sorted(orders[0]), list(range(len(KEYS))))
        self.assertEqual(3, hs.plan_stats["plans_put"])

    def test_seeded_posts_next_epoch_without_touching_rng(self):
        hs = self.hinted(seeded(7))
        ref = seeded(7)
        orders = []
        for e in range(3):
            o = list(hs)
            self.assertEqual(list(ref), o, "epoch %d: the wrapped order changed" % e)
            orders.append(o)
        self.assertTrue(hs.flush(10))
        got = plans(self.rec)
        self.assertEqual([0, 1, 1, 2, 2, 3], [e for e, _ in got])
        for e in range(3):
            self.assertEqual([KEYS[i] for i in orders[e]], got[2 * e][1].lines())
        for e in range(2):
            self.assertEqual([KEYS[i] for i in orders[e + 1]], got[2 * e + 1][1].lines(),
                             "the next-epoch plan posted in epoch %d is wrong" % e)
        self.assertNotEqual(orders[0], orders[1])

    def test_distributed_sampler_set_epoch(self):
        ds = range(len(KEYS))
        for direct in (False, True):
            self.rec.requests.clear()
            inner = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=3)
            hs = self.hinted(inner)
            orders = []
            for e in range(3):
                (inner if direct else hs).set_epoch(e)
                orders.append(list(hs))
            self.assertTrue(hs.flush(10))
            got = plans(self.rec)
            self.assertEqual([0, 1, 1, 2, 2, 3], [e for e, _ in got])
            for e in range(2):
                self.assertEqual([KEYS[i] for i in orders[e + 1]], got[2 * e + 1][1].lines())
            self.assertEqual(len(KEYS) // 2, len(orders[0]))

    def test_sequential_is_known_ahead(self):
        hs = self.hinted(SequentialSampler(range(5)), keys=KEYS[:5])
        self.assertEqual([0, 1, 2, 3, 4], list(hs))
        self.assertTrue(hs.flush(10))
        self.assertEqual([0, 1], [e for e, _ in plans(self.rec)])
        self.assertEqual(KEYS[:5], plans(self.rec)[1][1].lines())

    def test_large_plan_is_gzipped(self):
        keys = ["dataset/shard-%05d/sample-%08d.jpeg" % (i % 97, i) for i in range(5000)]
        hs = self.hinted(RandomSampler(range(len(keys))), keys=keys)
        order = list(hs)
        self.assertTrue(hs.flush(10))
        (_, r), = plans(self.rec)
        self.assertEqual("gzip", r.headers.get("content-encoding"))
        self.assertLess(len(r.raw), len(r.body) // 2)
        self.assertEqual(str(len(r.raw)), r.headers["content-length"])
        self.assertEqual([keys[i] for i in order], r.lines())

    def test_admin_token(self):
        hs = self.hinted(SequentialSampler(range(3)), keys=KEYS[:3], admin_token="s3cret")
        list(hs)
        self.assertTrue(hs.flush(10))
        for _, r in plans(self.rec):
            self.assertEqual("s3cret", r.headers.get("x-bucketcache-admin-token"))
            self.assertNotIn("authorization", r.headers)

    def test_sigv4_signed_with_session_credentials(self):
        sess = boto3.Session(aws_access_key_id="JOBKEY1", aws_secret_access_key="secret1",
                             region_name="eu-west-1")
        keys = ["k%06d" % i for i in range(20000)]  # gzip: the signed payload is the gzip
        hs = self.hinted(SequentialSampler(range(len(keys))), keys=keys, session=sess)
        list(hs)
        self.assertTrue(hs.flush(10))
        creds = Credentials("JOBKEY1", "secret1")
        for _, r in plans(self.rec):
            signed = sigv4.verify(self.rec.url, r, creds, "eu-west-1")
            self.assertIn("host", signed)
            self.assertIn("content-encoding", signed)
            self.assertEqual(hashlib.sha256(r.raw).hexdigest(),
                             r.headers["x-amz-content-sha256"])
            self.assertIn("/eu-west-1/s3/aws4_request", r.headers["authorization"])
        with self.assertRaises(AssertionError):
            sigv4.verify(self.rec.url, r, Credentials("JOBKEY1", "wrong"), "eu-west-1")


class TestFailures(Base):
    def run_epochs(self, hs, n=3):
        ref = seeded(11)
        for e in range(n):
            self.assertEqual(list(ref), list(hs))

    def test_404_is_logged_once(self):
        self.rec.status = 404
        hs = self.hinted(seeded(11))
        with self.assertLogs("bucketcache", logging.WARNING) as cm:
            self.run_epochs(hs)
            self.assertTrue(hs.flush(10))
        self.assertEqual(1, len(cm.records), cm.output)
        self.assertIn("404", cm.output[0])
        self.assertEqual(6, hs.plan_stats["plans_failed"])
        self.assertEqual(0, hs.plan_stats["plans_put"])
        self.assertEqual(6, len(plans(self.rec)))

    def test_gateway_down(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        hs = HintedSampler(seeded(11), KEYS, "http://127.0.0.1:%d" % port, "ds", "j")
        with self.assertLogs("bucketcache", logging.WARNING) as cm:
            self.run_epochs(hs)
            self.assertTrue(hs.flush(10))
        self.assertEqual(1, len(cm.records), cm.output)
        self.assertEqual(6, hs.plan_stats["plans_failed"])

    def test_gateway_hangs(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # never accepts, never answers
        try:
            hs = HintedSampler(seeded(11), KEYS, "http://127.0.0.1:%d" % s.getsockname()[1],
                               "ds", "j", put_wait=0.2, timeout=1.0)
            t0 = time.monotonic()
            with self.assertLogs("bucketcache", logging.WARNING):
                self.assertEqual(list(seeded(11)), list(hs))
                took = time.monotonic() - t0
                self.assertLess(took, 0.9, "the epoch waited on the hung gateway")
                self.assertTrue(hs.flush(10))
            self.assertEqual(2, hs.plan_stats["plans_failed"])
        finally:
            s.close()


class TestNextKeys(Base):
    def test_position_key_and_wrap(self):
        hs = self.hinted(seeded(5))
        it = iter(hs)
        first = [next(it) for _ in range(3)]
        order = first + list(it)
        self.assertEqual([KEYS[i] for i in order[10:14]], hs.next_keys(4, after=KEYS[order[9]]))
        self.assertEqual([], hs.next_keys(0))
        tail = hs.next_keys(5, after=KEYS[order[-2]])
        self.assertEqual(KEYS[order[-1]], tail[0])
        following = list(hs)  # the next epoch's real order
        self.assertEqual([KEYS[i] for i in following[:4]], tail[1:])
        # after the position: the sampler yielded everything of this epoch
        self.assertEqual(1, hs.epoch)
        self.assertEqual(len(KEYS), hs.position)
        self.assertEqual(4, len(hs.next_keys(4)))

    def test_position_mid_epoch(self):
        hs = self.hinted(SequentialSampler(range(10)), keys=KEYS[:10], lookahead=3)
        it = iter(hs)
        next(it), next(it)
        self.assertEqual(KEYS[2:5], hs.next_keys())
        self.assertEqual(KEYS[8:10] + KEYS[0:2], hs.next_keys(4, after=KEYS[7]))

    def test_unseeded_does_not_wrap(self):
        hs = self.hinted(RandomSampler(range(10)), keys=KEYS[:10])
        order = list(hs)
        self.assertEqual([KEYS[order[-1]]], hs.next_keys(5, after=KEYS[order[-2]]))
        self.assertEqual([], hs.next_keys(5))


class Items(Dataset):
    def __init__(self, keys):
        self.keys = keys
        self.hints = None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        return i, ",".join(self.hints.next_keys(3, after=self.keys[i]))


class TestWorkers(Base):
    def test_workers_see_each_epoch_order(self):
        ds = Items(KEYS)
        hs = self.hinted(seeded(9), lookahead=3)
        ds.hints = hs
        for persistent in (False, True):
            dl = DataLoader(ds, batch_size=4, sampler=hs, num_workers=2,
                            persistent_workers=persistent)
            for e in range(2):
                seen = []
                for idx, nk in dl:
                    seen.extend(zip(idx.tolist(), nk))
                order = [i for i, _ in seen]
                self.assertEqual(sorted(order), list(range(len(KEYS))))
                for p, (i, nk) in enumerate(seen[:-3]):
                    self.assertEqual(",".join(KEYS[j] for j in order[p + 1:p + 4]), nk,
                                     "persistent=%s epoch %d pos %d" % (persistent, e, p))


if __name__ == "__main__":
    unittest.main()
