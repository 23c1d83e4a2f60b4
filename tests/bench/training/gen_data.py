#!/usr/bin/python3
"""gen_data.py — the synthetic ImageNet-like data set of bench_training.sh.

Writes N objects, laid out BUCKET/KEY under DIR/www (what a static nginx
serves as an anonymous S3-like upstream), with log-normal sizes (median
--median-kib, shape --sigma, clamped to 4 KiB..4 MiB) and pseudo-random
content. Everything is derived from (--seed, object index): the same
arguments give the same bytes on every run and machine (Python's
random.Random with a str seed), and object i is the same in every data set
of the same seed whatever N is.

DIR/manifest.tsv lists "key<TAB>size<TAB>crc32" (the loader checks every
object it reads against it); DIR/DONE is written last, so an interrupted
generation is redone, and a complete one is reused as it is.

--verify re-reads every object and checks size and crc32 against the
manifest (which also loads the set into the page cache, so that the first
system measured does not pay for cold disk reads).

Prints one line: "dir=DIR objects=N bytes=TOTAL min=.. median=.. max=..".
Exit status 0, or 1 with a message.
"""
import argparse
import math
import os
import random
import sys
import zlib

MIN_SIZE = 4 * 1024
MAX_SIZE = 4 * 1024 * 1024
CLASSES = 1000


def key_of(i):
    """The object key of index i: train/nCLASS/nCLASS_INDEX.JPEG."""
    c = i % CLASSES
    return 'train/n%05d/n%05d_%07d.JPEG' % (c, c, i)


def size_of(rng, median, sigma):
    s = int(round(median * math.exp(rng.gauss(0.0, sigma))))
    return max(MIN_SIZE, min(MAX_SIZE, s))


def generate(d, bucket, n, seed, median, sigma):
    www = os.path.join(d, 'www', bucket)
    os.makedirs(www, exist_ok=True)
    for p in (d, os.path.join(d, 'www'), www):
        os.chmod(p, 0o755)
    tmp_manifest = os.path.join(d, 'manifest.tsv.tmp')
    with open(tmp_manifest, 'w') as m:
        for i in range(n):
            rng = random.Random('%d:%d' % (seed, i))
            size = size_of(rng, median, sigma)
            # a JPEG-looking start, then noise (incompressible)
            data = b'\xff\xd8\xff\xe0' + rng.randbytes(size - 4)
            key = key_of(i)
            path = os.path.join(www, key)
            pd = os.path.dirname(path)
            if not os.path.isdir(pd):
                os.makedirs(pd, exist_ok=True)
                os.chmod(pd, 0o755)
            with open(path + '.tmp', 'wb') as f:
                f.write(data)
            os.chmod(path + '.tmp', 0o644)
            os.replace(path + '.tmp', path)
            m.write('%s\t%d\t%d\n' % (key, size, zlib.crc32(data)))
            if (i + 1) % 2000 == 0:
                print('# generated %d/%d objects' % (i + 1, n), file=sys.stderr)
    os.replace(tmp_manifest, os.path.join(d, 'manifest.tsv'))
    with open(os.path.join(d, 'DONE'), 'w') as f:
        f.write('n=%d seed=%d median=%d sigma=%g\n' % (n, seed, median, sigma))


def load_manifest(d):
    rows = []
    with open(os.path.join(d, 'manifest.tsv')) as f:
        for line in f:
            k, s, c = line.rstrip('\n').split('\t')
            rows.append((k, int(s), int(c)))
    return rows


def verify(d, bucket, rows):
    www = os.path.join(d, 'www', bucket)
    bad = 0
    for k, s, c in rows:
        try:
            with open(os.path.join(www, k), 'rb') as f:
                data = f.read()
        except OSError as e:
            print('gen_data.py: %s: %s' % (k, e), file=sys.stderr)
            bad += 1
            continue
        if len(data) != s or zlib.crc32(data) != c:
            print('gen_data.py: %s: size/crc32 differ from the manifest' % k,
                file=sys.stderr)
            bad += 1
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dir', required=True)
    ap.add_argument('--bucket', required=True)
    ap.add_argument('--n', type=int, required=True)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--median-kib', type=float, default=110.0)
    ap.add_argument('--sigma', type=float, default=0.6)
    ap.add_argument('--verify', action='store_true')
    a = ap.parse_args()
    if a.n < 1 or a.n > 10000000:
        sys.exit('gen_data.py: --n must be 1..10000000')
    median = int(a.median_kib * 1024)
    if not os.path.exists(os.path.join(a.dir, 'DONE')):
        print('# generating %d objects in %s' % (a.n, a.dir), file=sys.stderr)
        generate(a.dir, a.bucket, a.n, a.seed, median, a.sigma)
    rows = load_manifest(a.dir)
    if len(rows) != a.n:
        sys.exit('gen_data.py: %s has %d objects, not %d (remove it)'
            % (a.dir, len(rows), a.n))
    if a.verify:
        bad = verify(a.dir, a.bucket, rows)
        if bad:
            sys.exit('gen_data.py: %d objects do not match the manifest '
                '(remove %s to regenerate)' % (bad, a.dir))
    sizes = sorted(s for _, s, _ in rows)
    print('dir=%s objects=%d bytes=%d min=%d median=%d mean=%d max=%d' % (
        a.dir, len(rows), sum(sizes), sizes[0], sizes[len(sizes) // 2],
        sum(sizes) // len(sizes), sizes[-1]))


if __name__ == '__main__':
    main()
