#!/usr/bin/python3
"""
loader.py -- the training-shaped client of bench_training.sh: a PyTorch
DataLoader reading a data set from an S3 endpoint with boto3, for a few
shuffled epochs, timing each epoch and the time the loop waits for data.

  * Dataset: a torch.utils.data.Dataset over the keys of the manifest
    (gen_data.py); __getitem__ does one boto3 get_object, reads the body,
    checks its size and crc32 against the manifest, and returns the length,
    a small "decoded" tensor (the first 768 bytes as a 3x16x16 float image),
    the GET latency, botocore's retry count and an error code;
  * one boto3 client per worker, made in worker_init_fn (never shared
    across fork) from a botocore session made and loaded (S3's service
    model) in the main process before the workers fork: a worker's client
    then takes ~15 ms, not the ~0.3 s CPU a fresh session takes to read the
    model, which with 8 workers on 2 cores was seconds of epoch 1's first
    batch; unsigned (botocore.UNSIGNED: no Authorization header;
    bucketcache runs with --anonymous), path-style, endpoint_url = the
    system under test;
  * DataLoader(num_workers=W, batch_size=B, sampler=EpochSampler,
    persistent_workers=True): epoch E's order is torch.randperm(N) drawn
    from a generator seeded SEED*1000+E, so every system sees the same
    order in the same epoch for the same --seed (the sha256 of the index
    order is recorded: compare it across systems), and the order of the
    next epoch is known in advance (next_epoch_order(), which contrib/
    python's HintedSampler uses to post the next epoch's plan);
  * --job ID: every GetObject carries x-bucketcache-job: ID (contrib/
    python's install_hints, no sampler: no -next/-epoch), so a gateway
    counts the job's reads apart ("jobs" in /_bucketcache/stats); a job
    header alone gives the gateway no plan and no lookahead;
  * --plans (with --job): the sampler is wrapped in contrib/python's
    HintedSampler, which PUTs each epoch's plan and the next epoch's
    (/_bucketcache/v1/jobs/ID/plan), and install_hints is given the
    sampler, so GETs also carry x-bucketcache-epoch and x-bucketcache-next
    (--hint-next keys; 0: none), as the helper's README shows;
  * per batch, a "compute" step (--compute sleep: time.sleep of
    --compute-ms; or --compute matmul: 256x256 float matmuls for about that
    long) that the workers' prefetching can overlap;
  * per epoch: wall time (from iter() to the last batch's compute, epoch 1
    includes starting the workers), data-wait time (the sum of the time the
    training loop spent blocked in next() on the loader, waiting for its
    next batch: compute is timed apart, as compute_s, and never counted),
    of which the wait for the first batch (first_batch_wait_s),
    items, bytes, errors, retries, GET latency p50/p90/p99;
  * --barrier DIR --barrier-n N: N loaders (jobs) run at once; each waits
    for all at the start and after each epoch, before and after taking its
    snapshot, so that the epochs of the jobs start together and every
    snapshot of epoch E falls between the jobs' epochs E and E+1 (the
    counters between two snapshots are the jobs' epoch E; time spent in the
    barrier is not in any epoch's time or wait);
  * snapshots before the first and after each epoch (after --settle s, not
    timed): the delay proxy's counters (--proxy-stats URL), bucketcache's
    /_bucketcache/stats (--bc-stats URL), the size of nginx's access log
    (--nginx-log FILE; report.py reads the lines between two offsets);
  * what the cache holds, sampled every --sample-interval s by a thread
    while the epochs run: bucketcache's cache_bytes_held (--bc-stats), or
    the bytes on disk under nginx's cache dir (--cache-dir, walked; what
    max_size bounds, as nginx counts disk blocks); peak, mean and last per
    epoch. nginx trims its cache to max_size only when its cache manager
    runs (every 10 s at most), so its peak can be well over the cap;
  * the index order of each epoch (report.py replays it through cache
    models).

Writes a JSON document to --out and prints one progress line per epoch on
stderr. Exit status: 0 (even with item errors: they are counted and
reported), 1 when the run could not be done.
"""
import argparse
import glob
import hashlib
import json
import os
import sys
import threading
import time
import urllib.request
import zlib

import boto3
import botocore
from botocore import UNSIGNED
from botocore.config import Config
import torch
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info

CONTRIB_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              '..', '..', '..', 'contrib', 'python')

IMG_BYTES = 3 * 16 * 16
ERR_OK, ERR_SIZE, ERR_CRC, ERR_EXC = 0, 1, 2, 3

_client = None          # this worker's boto3 client (worker_init_fn)
_errors_logged = 0
_hints = None           # (job, HintedSampler or None, n_next), set before fork


class EpochSampler(Sampler):
    """Epoch E (set_epoch) yields torch.randperm(n) drawn from a generator
    seeded seed*1000+E; next_epoch_order() is epoch E+1's order."""

    def __init__(self, n, seed):
        super().__init__(None)
        self.n = n
        self.seed = seed
        self.epoch = 0

    def __len__(self):
        return self.n

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def order(self, epoch):
        g = torch.Generator()
        g.manual_seed(self.seed * 1000 + epoch)
        return torch.randperm(self.n, generator=g).tolist()

    def __iter__(self):
        return iter(self.order(self.epoch))

    def next_epoch_order(self):
        return self.order(self.epoch + 1)


class S3Dataset(Dataset):
    def __init__(self, endpoint, bucket, rows):
        self.endpoint = endpoint
        self.bucket = bucket
        self.keys = [r[0] for r in rows]
        self.sizes = [r[1] for r in rows]
        self.crcs = [r[2] for r in rows]

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        global _errors_logged
        err = ERR_OK
        retries = 0
        data = b''
        t0 = time.perf_counter()
        try:
            r = _client.get_object(Bucket=self.bucket, Key=self.keys[i])
            data = r['Body'].read()
            retries = r.get('ResponseMetadata', {}).get('RetryAttempts', 0)
            if len(data) != self.sizes[i]:
                err = ERR_SIZE
            elif zlib.crc32(data) != self.crcs[i]:
                err = ERR_CRC
        except Exception as e:      # counted and reported, not fatal
            err = ERR_EXC
            if _errors_logged < 5:
                _errors_logged += 1
                w = get_worker_info()
                print('loader: worker %s: %s: %s: %s' % (
                    w.id if w else '-', self.keys[i], type(e).__name__, e),
                    file=sys.stderr)
        lat = time.perf_counter() - t0
        if err == ERR_SIZE and _errors_logged < 5:
            _errors_logged += 1
            print('loader: %s: %d bytes, manifest says %d' % (
                self.keys[i], len(data), self.sizes[i]), file=sys.stderr)
        head = bytearray(data[:IMG_BYTES])
        head.extend(b'\0' * (IMG_BYTES - len(head)))
        img = torch.frombuffer(head, dtype=torch.uint8).reshape(3, 16, 16)
        return {
            'idx': i,
            'nbytes': len(data),
            'err': err,
            'retries': retries,
            'lat': lat,
            'img': img.float().div_(255.0),
        }


def preload_session():
    """A boto3 session whose loader has read S3's service model (by making
    one client, never used), for the workers to inherit across fork."""
    s = boto3.session.Session()
    s.client('s3', endpoint_url='http://127.0.0.1:1', region_name='us-east-1',
             aws_access_key_id='unused', aws_secret_access_key='unused',
             config=Config(signature_version=UNSIGNED))
    return s


def make_worker_init(endpoint, timeout, session):
    def init(worker_id):
        global _client
        torch.set_num_threads(1)
        cfg = Config(signature_version=UNSIGNED,
                     s3={'addressing_style': 'path'},
                     connect_timeout=timeout, read_timeout=timeout,
                     max_pool_connections=2,
                     retries={'mode': 'standard', 'total_max_attempts': 3})
        _client = session.client(
            's3', endpoint_url=endpoint, region_name='us-east-1',
            aws_access_key_id='unused', aws_secret_access_key='unused',
            config=cfg)
        if _hints is not None:
            from bucketcache import install_hints
            job, hinted, n_next = _hints
            install_hints(_client, job, sampler=hinted, n_next=n_next)
    return init


def barrier(a, name):
    """Waits until all --barrier-n loaders reached barrier `name`."""
    if not a.barrier:
        return
    open(os.path.join(a.barrier, '%s.%s' % (name, a.job or a.label)), 'w').close()
    deadline = time.monotonic() + a.barrier_timeout
    while len(glob.glob(os.path.join(a.barrier, name + '.*'))) < a.barrier_n:
        if time.monotonic() > deadline:
            sys.exit('loader.py: %s: barrier %s: the other jobs did not come in %.0f s' % (
                a.label, name, a.barrier_timeout))
        time.sleep(0.01)


def http_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def snapshot(a, label):
    s = {'label': label, 'time': time.time()}
    if a.proxy_stats:
        s['proxy'] = http_json(a.proxy_stats)
    if a.bc_stats:
        s['bc'] = http_json(a.bc_stats)
    if a.bc_jobs:
        s['bc_jobs'] = http_json(a.bc_jobs)
    if a.nginx_log:
        s['nginx_log_size'] = os.path.getsize(a.nginx_log)
    return s


def dir_bytes(d):
    """(bytes on disk, apparent bytes, files) of the regular files under d."""
    disk = app = n = 0
    stack = [d]
    while stack:
        p = stack.pop()
        try:
            it = os.scandir(p)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)
                        disk += st.st_blocks * 512
                        app += st.st_size
                        n += 1
                except OSError:
                    pass    # removed by the cache manager meanwhile
    return disk, app, n


class Sampler(threading.Thread):
    """Samples fn() every interval seconds into self.samples [(t, v)]."""

    def __init__(self, fn, interval):
        super().__init__(daemon=True)
        self.fn = fn
        self.interval = interval
        self.samples = []
        self.stop = threading.Event()
        self.failures = 0

    def run(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.time(), self.fn()))
            except Exception:
                self.failures += 1
            self.stop.wait(self.interval)

    def between(self, t0, t1):
        return [v for t, v in self.samples if t0 <= t <= t1]


def percentile(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def compute_step(a, mats):
    if a.compute == 'sleep':
        time.sleep(a.compute_ms / 1000.0)
        return
    t_end = time.perf_counter() + a.compute_ms / 1000.0
    x, y = mats
    while time.perf_counter() < t_end:
        x = torch.mm(x, y).clamp_(-1, 1)


def main():
    ap = argparse.ArgumentParser(description='PyTorch DataLoader over S3')
    ap.add_argument('--endpoint', required=True)
    ap.add_argument('--bucket', required=True)
    ap.add_argument('--manifest', required=True)
    ap.add_argument('--label', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--workers', type=int, default=4)
    ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--prefetch', type=int, default=2)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--compute', choices=('sleep', 'matmul'), default='sleep')
    ap.add_argument('--compute-ms', type=float, default=5.0)
    ap.add_argument('--timeout', type=float, default=60.0)
    ap.add_argument('--settle', type=float, default=0.5)
    ap.add_argument('--limit', type=int, default=0,
                    help='use only the first N objects of the manifest')
    ap.add_argument('--proxy-stats')
    ap.add_argument('--bc-stats')
    ap.add_argument('--bc-jobs')
    ap.add_argument('--job', help='x-bucketcache-job of every GetObject')
    ap.add_argument('--plans', action='store_true',
                    help='HintedSampler: post plans (current and next epoch)')
    ap.add_argument('--hint-next', type=int, default=8,
                    help='with --plans: keys in x-bucketcache-next')
    ap.add_argument('--barrier', help='a directory shared by --barrier-n loaders')
    ap.add_argument('--barrier-n', type=int, default=1)
    ap.add_argument('--barrier-timeout', type=float, default=1800.0)
    ap.add_argument('--nginx-log')
    ap.add_argument('--cache-dir')
    ap.add_argument('--sample-interval', type=float, default=1.0)
    a = ap.parse_args()
    if a.epochs < 1 or a.workers < 1 or a.batch < 1:
        sys.exit('loader.py: --epochs, --workers and --batch must be >= 1')
    if a.plans and not a.job:
        sys.exit('loader.py: --plans needs --job')

    torch.set_num_threads(1)
    rows = []
    with open(a.manifest) as f:
        for line in f:
            k, s, c = line.rstrip('\n').split('\t')
            rows.append((k, int(s), int(c)))
    if a.limit:
        rows = rows[:a.limit]
    ds = S3Dataset(a.endpoint, a.bucket, rows)
    global _hints
    sampler_ = EpochSampler(len(rows), a.seed)
    hinted = None
    if a.job:
        sys.path.insert(0, os.path.abspath(CONTRIB_PYTHON))
        import bucketcache
        if a.plans:
            hinted = bucketcache.HintedSampler(
                sampler_, [r[0] for r in rows], a.endpoint, a.bucket, a.job,
                lookahead=max(1, a.hint_next))
            sampler_ = hinted
        _hints = (a.job, hinted, a.hint_next)
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler_,
                        num_workers=a.workers, prefetch_factor=a.prefetch,
                        persistent_workers=True, drop_last=False,
                        worker_init_fn=make_worker_init(a.endpoint, a.timeout,
                                                        preload_session()),
                        multiprocessing_context='fork')
    mats = (torch.rand(256, 256), torch.rand(256, 256))
    total_bytes = sum(r[1] for r in rows)

    result = {
        'label': a.label,
        'endpoint': a.endpoint,
        'objects': len(rows),
        'dataset_bytes': total_bytes,
        'config': {k: v for k, v in vars(a).items()},
        'versions': {'torch': torch.__version__, 'boto3': boto3.__version__,
                     'botocore': botocore.__version__,
                     'python': sys.version.split()[0]},
        'epochs': [],
        'orders': [],
        'job': a.job,
        'plans': a.plans,
        'snapshots': [],
    }
    sampler = None
    if a.cache_dir:
        sampler = Sampler(lambda: dir_bytes(a.cache_dir)[0], a.sample_interval)
        result['occupancy_source'] = 'bytes on disk under %s' % a.cache_dir
    elif a.bc_stats:
        sampler = Sampler(lambda: http_json(a.bc_stats)['counters']['cache_bytes_held'],
                          a.sample_interval)
        result['occupancy_source'] = 'cache_bytes_held of %s' % a.bc_stats
    if sampler:
        sampler.start()
    barrier(a, 'ready')
    result['snapshots'].append(snapshot(a, 'start'))
    barrier(a, 'go')
    for epoch in range(a.epochs):
        sampler_.set_epoch(epoch)
        order = hashlib.sha256()
        indices = []
        lats = []
        profile = []
        items = nbytes = errors = retries = batches = 0
        err_kinds = [0, 0, 0, 0]
        wait = compute = 0.0
        first_wait = None
        wall0 = time.time()
        t0 = time.perf_counter()
        it = iter(loader)
        while True:
            tw = time.perf_counter()
            try:
                b = next(it)
            except StopIteration:
                wait += time.perf_counter() - tw
                break
            bw = time.perf_counter() - tw
            wait += bw
            if first_wait is None:
                first_wait = bw
            batches += 1
            idx = b['idx'].tolist()
            order.update(','.join(map(str, idx)).encode() + b';')
            indices.extend(idx)
            items += len(idx)
            nbytes += int(b['nbytes'].sum())
            e = b['err'].tolist()
            for x in e:
                err_kinds[x] += 1
            errors += sum(1 for x in e if x)
            retries += int(b['retries'].sum())
            bl = b['lat'].tolist()
            lats.extend(bl)
            profile.append((round(time.perf_counter() - t0, 3),
                            round(1000.0 * sum(bl) / max(1, len(bl)), 2),
                            round(1000.0 * max(bl + [0.0]), 2),
                            round(1000.0 * bw, 1)))
            tc = time.perf_counter()
            compute_step(a, mats)
            compute += time.perf_counter() - tc
        t = time.perf_counter() - t0
        ep = {
            'epoch': epoch + 1,
            'time_s': t,
            'wait_s': wait,
            # the wait for the epoch's first batch (epoch 1: the workers
            # start, fork and make their boto3 clients meanwhile)
            'first_batch_wait_s': first_wait or 0.0,
            'compute_s': compute,
            'batches': batches,
            'items': items,
            'bytes': nbytes,
            'errors': errors,
            'errors_by_kind': {'size': err_kinds[ERR_SIZE],
                               'crc': err_kinds[ERR_CRC],
                               'exception': err_kinds[ERR_EXC]},
            'retries': retries,
            'order_sha256': order.hexdigest(),
            'lat_mean_ms': 1000.0 * sum(lats) / max(1, len(lats)),
            'lat_p50_ms': 1000.0 * percentile(lats, 50),
            'lat_p90_ms': 1000.0 * percentile(lats, 90),
            'lat_p99_ms': 1000.0 * percentile(lats, 99),
            # per batch: (seconds into the epoch, mean and max GET ms, the
            # loop's wait for it, ms)
            'batch_profile': profile,
        }
        if sampler:
            occ = sampler.between(wall0, time.time())
            ep['occupancy_samples'] = len(occ)
            ep['occupancy_peak'] = max(occ) if occ else None
            ep['occupancy_mean'] = sum(occ) / len(occ) if occ else None
            ep['occupancy_last'] = occ[-1] if occ else None
        result['epochs'].append(ep)
        result['orders'].append(indices)
        print('# %s epoch %d: %.1f s, data wait %.1f s, %d items, %.1f MB, '
              '%d errors, %d retries, GET p50 %.1f ms p99 %.1f ms%s' % (
                  a.label, epoch + 1, t, wait, items, nbytes / 1e6, errors,
                  retries, ep['lat_p50_ms'], ep['lat_p99_ms'],
                  ', cache held peak %.1f MB' % (ep['occupancy_peak'] / 1e6)
                  if ep.get('occupancy_peak') else ''),
              file=sys.stderr)
        time.sleep(a.settle)
        barrier(a, 'e%d-done' % (epoch + 1))
        result['snapshots'].append(snapshot(a, 'after epoch %d' % (epoch + 1)))
        barrier(a, 'e%d-snap' % (epoch + 1))
    if sampler:
        sampler.stop.set()
        sampler.join(10)
        result['occupancy_failures'] = sampler.failures
        result['occupancy_interval'] = a.sample_interval
    if hinted is not None:
        hinted.flush(10)
        result['plan_stats'] = hinted.plan_stats
    tmp = a.out + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    os.replace(tmp, a.out)
    del it
    del loader


if __name__ == '__main__':
    main()
