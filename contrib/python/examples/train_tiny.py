#!/usr/bin/python3
"""train_tiny.py — train a tiny model from a bucket, through bucketcache.

Lists BUCKET/PREFIX with boto3, reads each object through the gateway in
DataLoader workers, and trains a linear layer on the objects' first
--size bytes for --epochs epochs. A HintedSampler (seeded RandomSampler)
posts each epoch's order and the next epoch's as the job's plan, and every
worker's boto3 client carries x-bucketcache-job/-epoch/-next hints.

  /usr/bin/python3 contrib/python/examples/train_tiny.py \\
      --endpoint http://127.0.0.1:8080 --bucket demo --prefix images/

Unsigned by default (the quickstart's gateway runs --anonymous); --signed
uses boto3's usual credentials (environment, ~/.aws) for the reads and to
sign the plan PUTs. --report FILE writes a JSON summary.
"""

import argparse
import json
import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import boto3  # noqa: E402
import torch  # noqa: E402
from botocore import UNSIGNED  # noqa: E402
from botocore.config import Config  # noqa: E402
from torch.utils.data import DataLoader, Dataset, RandomSampler  # noqa: E402

from bucketcache import HintedSampler, install_hints  # noqa: E402


def s3_client(args):
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                 connect_timeout=5, read_timeout=30)
    if not args.signed:
        cfg = cfg.merge(Config(signature_version=UNSIGNED))
    return boto3.client("s3", endpoint_url=args.endpoint, region_name=args.region, config=cfg)


class ObjectBytes(Dataset):
    """Item i: the first `size` bytes of object keys[i] as floats in [0,1]
    (zero-padded), and a label (the parity of the object's byte sum). Each
    process makes its own boto3 client, with the hint hook installed."""

    def __init__(self, args, keys, hints):
        self.args = args
        self.keys = keys
        self.hints = hints
        self._client = None
        self._pid = None

    def __len__(self):
        return len(self.keys)

    def client(self):
        if self._client is None or self._pid != os.getpid():
            self._client = s3_client(self.args)
            self._pid = os.getpid()
            install_hints(self._client, self.args.job, sampler=self.hints,
                          n_next=self.args.lookahead)
        return self._client

    def __getitem__(self, i):
        body = self.client().get_object(Bucket=self.args.bucket, Key=self.keys[i])["Body"].read()
        size = self.args.size
        x = torch.zeros(size)
        head = torch.frombuffer(bytearray(body[:size]), dtype=torch.uint8) if body else None
        if head is not None:
            x[:head.numel()] = head.float() / 255.0
        y = sum(body) % 2
        return x, y, len(body)


def list_keys(args):
    c = s3_client(args)
    keys = []
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=args.bucket,
                                                            Prefix=args.prefix):
        keys.extend(o["Key"] for o in page.get("Contents", []) if not o["Key"].endswith("/"))
    c.close()
    return sorted(keys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", default="http://127.0.0.1:8080")
    ap.add_argument("--bucket", default="demo")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--job", default="train-tiny-%d" % os.getpid())
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--size", type=int, default=1024, help="bytes of each object fed to the model")
    ap.add_argument("--lookahead", type=int, default=8, help="keys in x-bucketcache-next")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    ap.add_argument("--signed", action="store_true", help="sign reads and plans (SigV4)")
    ap.add_argument("--admin-token", default=os.environ.get("BUCKETCACHE_ADMIN_TOKEN"))
    ap.add_argument("--report", help="write a JSON summary here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    keys = list_keys(args)
    if not keys:
        sys.exit("no objects under s3://%s/%s" % (args.bucket, args.prefix))
    g = torch.Generator()
    g.manual_seed(args.seed)
    session = boto3.Session(region_name=args.region) if args.signed else None
    sampler = HintedSampler(RandomSampler(range(len(keys)), generator=g), keys, args.endpoint,
                            args.bucket, args.job, lookahead=args.lookahead,
                            session=session, admin_token=args.admin_token)
    ds = ObjectBytes(args, keys, sampler)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers)
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(args.size, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = torch.nn.CrossEntropyLoss()
    report = {"job": args.job, "objects": len(keys), "epochs": []}
    for epoch in range(args.epochs):
        t0 = time.monotonic()
        items = nbytes = 0
        total = 0.0
        for x, y, n in loader:
            opt.zero_grad()
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            items += len(y)
            nbytes += int(n.sum())
            total += float(loss) * len(y)
        dt = time.monotonic() - t0
        print("epoch %d: %d objects, %d bytes, loss %.4f, %.2f s"
              % (epoch, items, nbytes, total / max(items, 1), dt), flush=True)
        report["epochs"].append({"epoch": epoch, "items": items, "bytes": nbytes,
                                 "loss": total / max(items, 1), "seconds": dt})
    sampler.flush(10)
    report["plans"] = sampler.plan_stats
    print("plans: %(plans_put)d put, %(plans_failed)d failed" % report["plans"], flush=True)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
