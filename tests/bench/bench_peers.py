#!/usr/bin/python3
"""bench_peers.py — the Python half of tests/bench/bench_peers.sh.

Subcommands (bench_peers.sh is the only caller):

  mkobjs DIR COUNT SIZE
      DIR/k-00000 .. k-<COUNT-1>, SIZE bytes each: a unique 32-byte header
      (name, index) then bytes of one random block read from a per-object
      offset, so that every object differs without reading COUNT * SIZE
      bytes from /dev/urandom.

  sample PID URL INTERVAL OUT STOPFILE MAXSECONDS
      every INTERVAL s, one line to OUT: time, the process's VmRSS and the
      gateway's /_bucketcache/stats counters; until STOPFILE exists (one last
      sample), the process is gone, or MAXSECONDS passed.

  presign ENDPOINT REGION AK SK EXPIRES BUCKET KEYPREFIX COUNT OUT
      OUT gets COUNT presigned GET URLs, one a line, for the keys
      KEYPREFIX00000 .. KEYPREFIX<COUNT-1> (mkobjs' names) of BUCKET, made
      by botocore's presigner as a user's boto3 makes them: an S3 client for
      ENDPOINT (path-style addressing, SigV4, REGION, key pair AK/SK, no
      config or credential file read), generate_presigned_url('get_object',
      ExpiresIn=EXPIRES).

  report DATA RESULTS
      reads what bench_peers.sh wrote to DATA (meta.tsv, hot_runs.tsv,
      disk_runs.tsv, disk_cold.tsv, cold_runs.tsv, cold_xfers.tsv,
      cold_peers.tsv, soak.tsv, stats/*.json, windows.tsv,
      origin_access.log, anomalies.txt, warnings.txt, conf/, commands.txt,
      report.txt), checks the measured phases (no upstream fetch by any
      cache during a measured run, each bucketcache's counters, the signed
      rows' requests all authenticated, bucketcache-disk's GETs sent from
      its disk tier), computes
      medians, ratios and the target verdicts, prints them, and unless
      RESULTS is "none" regenerates RESULTS/: benchmarks.md, PNG plots,
      CSV and summary.json. Exit status: 0 all targets passed, 3 a target
      was missed, 1 an anomaly (a measured phase was not what it claims).
"""

import csv
import json
import math
import os
import statistics
import sys
import time
import urllib.request

MiB = 1048576.0


# ---- mkobjs ---------------------------------------------------------------


def mkobjs(directory, count, size):
    count, size = int(count), int(size)
    span = 1 << 20
    block = os.urandom(min(size, 64 << 20) + span)
    os.makedirs(directory, exist_ok=True)
    for i in range(count):
        name = 'k-%05d' % i
        head = ('%s %d/%d %d\n' % (name, i, count, size)).encode().ljust(32, b'.')
        off = (i * 4099) % span
        with open(os.path.join(directory, name), 'wb') as f:
            left = size
            first = head[:left]
            f.write(first)
            left -= len(first)
            pos = off
            while left > 0:
                piece = block[pos:pos + left]
                f.write(piece)
                left -= len(piece)
                pos = 0
    return 0


# ---- presign --------------------------------------------------------------


def presign(endpoint, region, ak, sk, expires, bucket, keyprefix, count, out):
    # nothing from the caller's AWS configuration: the URLs depend on the
    # arguments alone
    for v in [v for v in os.environ if v.startswith('AWS_')]:
        del os.environ[v]
    os.environ['AWS_CONFIG_FILE'] = os.devnull
    os.environ['AWS_SHARED_CREDENTIALS_FILE'] = os.devnull
    import boto3
    from botocore.config import Config
    s3 = boto3.session.Session().client(
        's3', endpoint_url=endpoint, region_name=region, aws_access_key_id=ak,
        aws_secret_access_key=sk,
        config=Config(signature_version='s3v4', s3={'addressing_style': 'path'}))
    base = '%s/%s/' % (endpoint.rstrip('/'), bucket)
    with open(out + '.tmp', 'w') as f:
        for i in range(int(count)):
            url = s3.generate_presigned_url(
                'get_object', Params={'Bucket': bucket, 'Key': '%s%05d' % (keyprefix, i)},
                ExpiresIn=int(expires))
            if not url.startswith(base) or 'X-Amz-Signature=' not in url:
                print('presign: unexpected URL %s' % url, file=sys.stderr)
                return 1
            f.write(url + '\n')
    os.rename(out + '.tmp', out)
    return 0


# ---- sample -----------------------------------------------------------------

SAMPLE_FIELDS = ['t', 'rss_kib', 'cache_bytes_held', 'cache_bytes_limit',
                 'cache_evictions', 'cache_objects', 'requests', 'cache_hits',
                 'cache_misses', 'cache_fills', 'upstream_errors', 'get_5xx',
                 'connections']


def sample(pid, url, interval, out, stopfile, maxseconds):
    interval, maxseconds = float(interval), float(maxseconds)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    t_end = time.time() + maxseconds
    with open(out, 'w') as f:
        f.write('\t'.join(SAMPLE_FIELDS) + '\n')
        tick = time.time()
        while True:
            last = os.path.exists(stopfile)
            try:
                with open('/proc/%s/status' % pid) as st:
                    rss = next(int(line.split()[1]) for line in st
                               if line.startswith('VmRSS:'))
            except (OSError, StopIteration):
                print('sampler: process %s is gone' % pid, file=sys.stderr)
                return 1
            try:
                with opener.open(url + '/_bucketcache/stats', timeout=10) as r:
                    d = json.load(r)
            except Exception as e:  # a sample is skipped, not the soak
                print('sampler: stats: %s' % e, file=sys.stderr)
                d = None
            if d is not None:
                c = d.get('counters', {})
                g5 = d.get('requests_by_op', {}).get('GetObject', {}).get('5xx', 0)
                row = [('%.3f' % time.time()), rss] + \
                    [c.get(n, 0) for n in SAMPLE_FIELDS[2:11]] + [g5, c.get('connections', 0)]
                f.write('\t'.join(str(x) for x in row) + '\n')
                f.flush()
            if last or time.time() > t_end:
                return 0
            tick += interval
            while time.time() < tick:
                if os.path.exists(stopfile):
                    break
                time.sleep(min(0.2, max(0.0, tick - time.time())))


# ---- report: reading --------------------------------------------------------


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter='\t'))


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.rstrip('\n').partition('\t')
            meta[k] = v
    return meta


def read_lines(path):
    if not os.path.exists(path):
        return []
    return [x.rstrip('\n') for x in open(path) if x.strip()]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def size_key(label):
    n = label.rstrip('KMG')
    mult = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}.get(label[-1:], 1)
    try:
        return int(n) * mult
    except ValueError:
        return 0


def fmt(x, spec='%.2f', none='—'):
    return none if x is None else spec % x


# ---- report: the hot section --------------------------------------------------


def hot_cells(runs):
    """(size, conns, target) -> list of per-round dicts."""
    cells = {}
    for r in runs:
        dur = int(r['duration_us']) / 1e6
        if dur <= 0:
            continue
        e = sum(int(r[k]) for k in ('err_connect', 'err_read', 'err_write',
                                    'err_status', 'err_timeout'))
        cells.setdefault((r['size'], int(r['conns']), r['target']), []).append(dict(
            round=int(r['round']), rps=int(r['requests']) / dur,
            gbps=int(r['bytes']) / dur / 1e9, p50=int(r['p50_us']) / 1000.0,
            p99=int(r['p99_us']) / 1000.0, requests=int(r['requests']),
            errors=e, load=float(r['load1'] or 0)))
    return cells


def cell_median(cells, size, conns, target, key):
    xs = cells.get((size, conns, target))
    return med([x[key] for x in xs]) if xs else None


def round_ratios(cells, size, conns, a, b, key):
    xa = {x['round']: x[key] for x in cells.get((size, conns, a), [])}
    xb = {x['round']: x[key] for x in cells.get((size, conns, b), [])}
    return [xa[r] / xb[r] for r in sorted(xa) if r in xb and xb[r]]


def parse_origin_log(path, meta):
    port_to = {}
    for t in ('nginx', 'varnish', 'bucketcache', 'bucketcache-anon', 'direct', 'nginx-disk',
              'bucketcache-disk'):
        p = meta.get('origin_port_' + t)
        if p:
            port_to[p] = t
    entries = []
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) < 6:
                continue
            try:
                entries.append((float(f[0]), port_to.get(f[1], f[1]), f[2], f[3], int(f[4])))
            except ValueError:
                continue
    entries.sort()
    return entries


def upstream_in(entries, target, t0, t1):
    """Origin requests by TARGET logged within [t0, t1]: (gets, heads, bytes)."""
    import bisect
    lo = bisect.bisect_left(entries, (t0,))
    hi = bisect.bisect_right(entries, (t1, '\uffff'))
    gets = heads = byts = 0
    for e in entries[lo:hi]:
        if e[1] != target:
            continue
        if e[2] == 'HEAD':
            heads += 1
        else:
            gets += 1
        byts += e[4]
    return gets, heads, byts


# The hot section's bucketcache rows: the signed one (the targets' row) and
# the --anonymous one (informational).
GATEWAYS = ('bucketcache', 'bucketcache-anon')
LABELS = {'bucketcache': 'bucketcache (signed)', 'bucketcache-anon': 'bucketcache-anon'}


def check_hot(data, meta, runs, entries, anomalies, checks):
    # every measured run: no origin GET by its cache
    bad = {}
    heads = {}
    for r in runs:
        tg = r['target']
        if tg == 'direct':
            continue
        g, h, b = upstream_in(entries, tg, float(r['t0']), float(r['t1']) + 0.5)
        if tg in GATEWAYS:
            heads[tg] = heads.get(tg, 0) + h
        n = g + (h if tg not in GATEWAYS else 0)
        if n:
            bad.setdefault(tg, []).append('%s c=%s r%s: %d upstream requests, %d bytes'
                                          % (r['size'], r['conns'], r['round'], n, b))
    measured = {r['target'] for r in runs}
    for tg in ('nginx', 'varnish') + GATEWAYS:
        if tg not in measured:
            continue
        if bad.get(tg):
            anomalies.append('hot: %s fetched from the origin during %d measured runs (first: %s)'
                             % (tg, len(bad[tg]), bad[tg][0]))
        else:
            checks.append('hot: origin log: no request from %s during any measured run%s'
                          % (tg, ' (%d background HEAD revalidations, --meta-ttl)' % heads.get(tg, 0)
                             if tg in GATEWAYS else ''))
    # wrk errors, any target
    for r in runs:
        e = sum(int(r[k]) for k in ('err_connect', 'err_read', 'err_write',
                                    'err_status', 'err_timeout'))
        if e:
            anomalies.append('hot: wrk saw %d errors against %s (%s, %s conns, round %s: '
                             'connect %s read %s write %s status %s timeout %s)'
                             % (e, r['target'], r['size'], r['conns'], r['round'], r['err_connect'],
                                r['err_read'], r['err_write'], r['err_status'], r['err_timeout']))
    for tg in GATEWAYS:
        if tg in measured:
            check_gateway(data, runs, tg, anomalies, checks)
    if 'bucketcache' in measured:
        if meta.get('auth_probe'):
            checks.append('hot: after the measured phase, bucketcache (signed) refused the first presigned '
                          'URL with its signature altered: %s' % meta['auth_probe'])
        elif not any(a.startswith('hot:') and 'wrong signature' in a for a in anomalies):
            anomalies.append('hot: the probe of bucketcache (signed) with a wrong signature did not run')


def check_gateway(data, runs, tg, anomalies, checks):
    """A bucketcache row's own counters over the measured phase; for the signed
    row also that every request was authenticated."""
    b = load_json(os.path.join(data, 'stats', 'hot-before-%s.json' % tg))
    a = load_json(os.path.join(data, 'stats', 'hot-after-%s.json' % tg))
    if not a or not b:
        anomalies.append('hot: %s stats before/after the measured phase missing' % tg)
        return
    c = lambda d, n: d.get('counters', {}).get(n, 0)
    op = lambda d, s: d.get('requests_by_op', {}).get('GetObject', {}).get(s, 0)
    delta = {n: c(a, n) - c(b, n) for n in (
        'cache_hits', 'cache_misses', 'cache_partial_hits', 'upstream_requests',
        'cache_revalidations', 'upstream_bytes_in', 'cache_bytes_upstream',
        'cache_evictions', 'auth_failures')}
    g2 = op(a, '2xx') - op(b, '2xx')
    gbad = sum(op(a, s) - op(b, s) for s in ('3xx', '4xx', '5xx'))
    wrk_bc = sum(int(r['requests']) for r in runs if r['target'] == tg)
    checks.append('hot: %s counters over the measured phase: cache_hits +%d, '
                  'cache_misses +%d, partial +%d, upstream_requests +%d (revalidations +%d), '
                  'upstream_bytes_in +%d, evictions +%d; GetObject 2xx +%d, other +%d; '
                  'auth_failures +%d (%d in all); wrk completed %d requests in recorded runs'
                  % (tg, delta['cache_hits'], delta['cache_misses'], delta['cache_partial_hits'],
                     delta['upstream_requests'], delta['cache_revalidations'],
                     delta['upstream_bytes_in'], delta['cache_evictions'], g2, gbad,
                     delta['auth_failures'], c(a, 'auth_failures'), wrk_bc))
    if delta['cache_misses'] or delta['cache_partial_hits']:
        anomalies.append('hot: %s: %d misses and %d partial hits in the measured phase'
                         % (tg, delta['cache_misses'], delta['cache_partial_hits']))
    if gbad:
        anomalies.append('hot: %s answered %d GETs with a non-2xx status' % (tg, gbad))
    if delta['cache_hits'] < wrk_bc:
        anomalies.append('hot: %s cache_hits grew by %d, fewer than the %d requests wrk completed'
                         % (tg, delta['cache_hits'], wrk_bc))
    if delta['upstream_bytes_in'] or delta['cache_bytes_upstream']:
        anomalies.append('hot: %s fetched %d bytes from upstream during the measured phase'
                         % (tg, delta['upstream_bytes_in']))
    if delta['upstream_requests'] - delta['cache_revalidations']:
        anomalies.append('hot: %s made %d upstream requests beyond its %d revalidations'
                         % (tg, delta['upstream_requests'] - delta['cache_revalidations'],
                            delta['cache_revalidations']))
    if delta['cache_evictions']:
        anomalies.append('hot: %s evicted %d entries during the measured phase (--mem-size too small)'
                         % (tg, delta['cache_evictions']))
    if tg != 'bucketcache':
        return
    # the signed row: every GET verified and answered
    if c(a, 'auth_failures'):
        anomalies.append('hot: bucketcache (signed) counted %d auth_failures by the end of the measured '
                         'phase, not 0' % c(a, 'auth_failures'))
    if g2 < wrk_bc:
        anomalies.append('hot: bucketcache (signed) requests_by_op GetObject 2xx grew by %d, fewer than the '
                         '%d requests wrk completed' % (g2, wrk_bc))
    if not (g2 >= wrk_bc and not gbad and not c(a, 'auth_failures')):
        return
    checks.append('hot: bucketcache (signed): every GET of the measured phase authenticated '
                  '(presigned URLs; auth_failures 0, GetObject 2xx +%d >= %d completed by wrk)'
                  % (g2, wrk_bc))


# ---- report: cold ----------------------------------------------------------------


# target -> (cold_xfers.tsv column, header, what a miss says)
COLD_MISS_HEADER = {'bucketcache': ('xbc', 'x-bucketcache', 'miss'),
                    'nginx': ('xpeer', 'X-Cache-Status', 'MISS'),
                    'varnish': ('xpeer', 'X-Cache', 'MISS')}
COLD_TARGETS = ('direct', 'nginx', 'varnish', 'bucketcache')


def cold_summary(data, meta, anomalies, checks):
    runs = read_tsv(os.path.join(data, 'cold_runs.tsv'))
    xfers = read_tsv(os.path.join(data, 'cold_xfers.tsv'))
    out = {}
    for r in runs:
        wall = float(r['t1']) - float(r['t0'])
        key = (r['upstream'], r['size'], r['target'])
        out.setdefault(key, {'gbps': [], 'walls': [], 'ttfb': [], 'rounds': []})
        out[key]['gbps'].append(int(r['bytes']) / wall / 1e9 if wall > 0 else None)
        out[key]['walls'].append(wall)
        out[key]['rounds'].append(int(r['round']))
    tputs = {}
    seen, notmiss = {}, {}  # target -> [GETs, misses]; (up, round, target, kind, size) -> [n, first]
    for x in xfers:
        key = (x['upstream'], x['size'], x['target'])
        try:
            v = (float(x['starttransfer']) - float(x['pretransfer'])) * 1000.0
        except ValueError:
            continue
        if x['kind'] == 'ttfb':
            out.setdefault(key, {'gbps': [], 'walls': [], 'ttfb': [], 'rounds': []})['ttfb'].append(v)
        else:
            tputs.setdefault(key, []).append(v)
        # every GET through a cache must be a miss in its own header
        hdr = COLD_MISS_HEADER.get(x['target'])
        if hdr:
            n = seen.setdefault(x['target'], [0, 0])
            n[0] += 1
            if x.get(hdr[0]) == '[%s]' % hdr[2]:
                n[1] += 1
            else:
                bad = notmiss.setdefault((x['upstream'], x['round'], x['target'], x['kind'], x['size']),
                                         [0, x.get(hdr[0])])
                bad[0] += 1
    for (up, rnd, tg, kind, size), (n, first) in sorted(notmiss.items()):
        anomalies.append('cold: %s answered %d cold GETs (%s %s %s, round %s) without %s: %s (first: %s)'
                         % (tg, n, up, kind, size, rnd, COLD_MISS_HEADER[tg][1], COLD_MISS_HEADER[tg][2],
                            first))
    for tg in ('bucketcache', 'nginx', 'varnish'):
        if tg in seen:
            checks.append('cold: %d of %d GETs through %s answered with %s: %s'
                          % (seen[tg][1], seen[tg][0], tg, COLD_MISS_HEADER[tg][1], COLD_MISS_HEADER[tg][2]))
    for k, v in out.items():
        v['tput_ttfb'] = tputs.get(k, [])
    # bucketcache's counters, per round: every GET a miss, no hit
    per_round = int(meta.get('cold_requests_per_round', '0') or 0)
    for up in sorted({r['upstream'] for r in runs}):
        for rnd in sorted({int(r['round']) for r in runs if r['upstream'] == up}):
            b = load_json(os.path.join(data, 'stats', 'cold-%s-r%d-before.json' % (up, rnd)))
            a = load_json(os.path.join(data, 'stats', 'cold-%s-r%d-after.json' % (up, rnd)))
            if not a or not b:
                anomalies.append('cold: stats of round %d (%s) missing' % (rnd, up))
                continue
            c = lambda d, n: d.get('counters', {}).get(n, 0)
            hits = c(a, 'cache_hits') - c(b, 'cache_hits')
            miss = c(a, 'cache_misses') - c(b, 'cache_misses')
            part = c(a, 'cache_partial_hits') - c(b, 'cache_partial_hits')
            coal = c(a, 'cache_coalesced_waits') - c(b, 'cache_coalesced_waits')
            ev = c(a, 'cache_evictions') - c(b, 'cache_evictions')
            checks.append('cold %s round %d: bucketcache cache_misses +%d, cache_hits +%d, partial +%d, '
                          'coalesced waits +%d, evictions +%d (%d GETs made)'
                          % (up, rnd, miss, hits, part, coal, ev, per_round))
            if hits or part or miss != per_round:
                anomalies.append('cold %s round %d: bucketcache counted %d misses, %d hits, %d partial '
                                 'for %d cold GETs' % (up, rnd, miss, hits, part, per_round))
    cold_peers_check(data, meta, per_round, anomalies, checks)
    return out


def cold_peers_check(data, meta, per_round, anomalies, checks):
    """The fresh nginx and Varnish of each round: what they stored, and Varnish's own counters."""
    # nginx stores one file per 8 MiB slice of each object read
    files = 0
    for kv in meta.get('cold_sizes', '').split():
        size, _, n = kv.partition(':')
        slices = max(1, -(-size_key(size) // (8 << 20)))
        files += (int(n) + int(meta.get('ttfb_keys', '0') or 0)) * slices
    num = lambda v: int(v) if v.isdigit() else None
    for p in read_tsv(os.path.join(data, 'cold_peers.tsv')):
        what = 'cold %s round %s: %s' % (p['upstream'], p['round'], p['target'])
        objs, byts = num(p['objects']), num(p['bytes'])
        if p['target'] == 'nginx':
            checks.append('%s cached %s files, %.0f MiB in its proxy_cache_path (%d expected: one per '
                          '8 MiB slice of each of the %d GETs made)'
                          % (what, p['objects'], (byts or 0) / MiB, files, per_round))
            if objs != files:
                anomalies.append('%s: %s files in its cache after the round, not %d' % (what, p['objects'], files))
            continue
        # Varnish also caches the answer to the readiness probe (GET /) as a miss
        hits, miss = num(p['hits']), num(p['misses'])
        checks.append('%s: MAIN.cache_miss %s, MAIN.cache_hit %s, %s objects, %.0f MiB in malloc storage '
                      '(%d GETs made, and the readiness probe GET /)'
                      % (what, p['misses'], p['hits'], p['objects'], (byts or 0) / MiB, per_round))
        if hits != 0 or miss is None or not per_round <= miss <= per_round + 1:
            anomalies.append('%s counted %s misses and %s hits for %d cold GETs'
                             % (what, p['misses'], p['hits'], per_round))


# ---- report: the disk section ------------------------------------------------


DISK_TARGETS = ('bucketcache-disk', 'nginx-disk')


def disk_cold_summary(data):
    """(size, target) -> rounds of the page-cache-cold pass: req/s, MB/s."""
    out = {}
    for r in read_tsv(os.path.join(data, 'disk_cold.tsv')):
        t = float(r['t1']) - float(r['t0'])
        if t <= 0:
            continue
        x = out.setdefault((r['size'], r['target']), dict(rps=[], mbps=[], rounds=[], bad=0))
        x['rps'].append(int(r['ok']) / t)
        x['mbps'].append(float(r['bytes']) / t / 1e6)
        x['rounds'].append(int(r['round']))
        x['bad'] += int(r['bad']) + int(r['nothit'])
    return out


def check_disk(data, meta, runs, entries, anomalies, checks):
    """The disk section's measured runs: no origin GET by either row, no wrk
    error, and bucketcache-disk's counters per size: no miss, no upstream
    byte, its GETs sent from disk files. Returns size -> the gateway's
    deltas over that size's measured runs."""
    bad = {}
    heads = 0
    for r in runs:
        tg = r['target']
        g, h, b = upstream_in(entries, tg, float(r['t0']), float(r['t1']) + 0.5)
        if tg == 'bucketcache-disk':
            heads += h
            h = 0
        if g + h:
            bad.setdefault(tg, []).append('%s c=%s r%s: %d upstream requests, %d bytes'
                                          % (r['size'], r['conns'], r['round'], g + h, b))
        e = sum(int(r[k]) for k in ('err_connect', 'err_read', 'err_write', 'err_status', 'err_timeout'))
        if e:
            anomalies.append('disk: wrk saw %d errors against %s (%s, %s conns, round %s: '
                             'connect %s read %s write %s status %s timeout %s)'
                             % (e, tg, r['size'], r['conns'], r['round'], r['err_connect'],
                                r['err_read'], r['err_write'], r['err_status'], r['err_timeout']))
    for tg in DISK_TARGETS:
        if bad.get(tg):
            anomalies.append('disk: %s fetched from the origin during %d measured runs (first: %s)'
                             % (tg, len(bad[tg]), bad[tg][0]))
        else:
            checks.append('disk: origin log: no request from %s during any measured run%s'
                          % (tg, ' (%d background HEAD revalidations, --meta-ttl)' % heads
                             if tg == 'bucketcache-disk' else ''))
    signed = meta.get('disk_auth') == 'signed'
    info = {}
    c = lambda d, n: d.get('counters', {}).get(n, 0)
    t = lambda d, tr, n: d.get('tiers', {}).get(tr, {}).get(n, 0)
    op = lambda d, s: d.get('requests_by_op', {}).get('GetObject', {}).get(s, 0)
    for s in meta.get('disk_sizes', '').split():
        b = load_json(os.path.join(data, 'stats', 'disk-%s-before.json' % s))
        a = load_json(os.path.join(data, 'stats', 'disk-%s-after.json' % s))
        if not a or not b:
            anomalies.append('disk: bucketcache-disk stats before/after the measured runs of %s missing' % s)
            continue
        d = {n: c(a, n) - c(b, n) for n in (
            'cache_hits', 'cache_misses', 'cache_partial_hits', 'upstream_bytes_in',
            'cache_bytes_upstream', 'cache_disk_sendfile', 'cache_bytes_disk', 'auth_failures')}
        for tr in ('disk', 'memory'):
            for n in ('hits', 'misses'):
                d['%s_%s' % (tr, n)] = t(a, tr, n) - t(b, tr, n)
        d['get_2xx'] = op(a, '2xx') - op(b, '2xx')
        d['get_bad'] = sum(op(a, x) - op(b, x) for x in ('3xx', '4xx', '5xx'))
        d['wrk'] = sum(int(r['requests']) for r in runs
                       if r['target'] == 'bucketcache-disk' and r['size'] == s)
        # of the GETs it answered (wrk's count leaves out those in flight
        # when a run stopped)
        d['sendfile_share'] = d['cache_disk_sendfile'] / d['get_2xx'] if d['get_2xx'] else None
        info[s] = d
        if d['cache_misses'] or d['cache_partial_hits'] or d['upstream_bytes_in'] or d['cache_bytes_upstream']:
            anomalies.append('disk %s: bucketcache-disk missed during the measured runs: cache_misses +%d, '
                             'partial +%d, upstream_bytes_in +%d, cache_bytes_upstream +%d'
                             % (s, d['cache_misses'], d['cache_partial_hits'], d['upstream_bytes_in'],
                                d['cache_bytes_upstream']))
        if d['sendfile_share'] is None or d['sendfile_share'] < 0.5:
            anomalies.append('disk %s: only %s of bucketcache-disk\'s GETs were sent from its disk tier '
                             '(cache_disk_sendfile +%d for GetObject 2xx +%d; memory tier hits +%d): '
                             'the row did not measure the disk tier'
                             % (s, fmt(100 * d['sendfile_share'] if d['sendfile_share'] is not None else None,
                                       '%.0f%%'), d['cache_disk_sendfile'], d['get_2xx'], d['memory_hits']))
        if d['get_bad']:
            # wrk counts every non-2xx/3xx response it reads (err_status,
            # an anomaly above); these are GETs wrk cut when it stopped
            checks.append('disk %s: bucketcache-disk counted %d GETs outside 2xx over the measured runs, '
                          'none of them a response wrk read (its err_status is 0): requests in flight '
                          'when a run stopped' % (s, d['get_bad']))
        if signed and (d['auth_failures'] or d['get_2xx'] < d['wrk']):
            anomalies.append('disk %s: bucketcache-disk (signed): auth_failures +%d, GetObject 2xx +%d for '
                             '%d GETs wrk completed' % (s, d['auth_failures'], d['get_2xx'], d['wrk']))
        checks.append('disk %s: bucketcache-disk over the measured runs: %d GETs by wrk, GetObject 2xx +%d%s, '
                      'cache_hits +%d, cache_misses +%d; cache_disk_sendfile +%d (%s of the GETs sent '
                      'from a disk file), disk tier hits +%d, memory tier hits +%d, misses +%d; '
                      'cache_bytes_disk +%.0f MiB, upstream bytes +%d'
                      % (s, d['wrk'], d['get_2xx'], ', auth_failures +%d' % d['auth_failures'] if signed else '',
                         d['cache_hits'], d['cache_misses'], d['cache_disk_sendfile'],
                         fmt(100 * d['sendfile_share'] if d['sendfile_share'] is not None else None, '%.0f%%'),
                         d['disk_hits'], d['memory_hits'], d['memory_misses'], d['cache_bytes_disk'] / MiB,
                         d['upstream_bytes_in']))
    if signed:
        if meta.get('disk_auth_probe'):
            checks.append('disk: after the measured runs, bucketcache-disk (signed) refused the first presigned '
                          'URL with its signature altered: %s' % meta['disk_auth_probe'])
        elif not any(a.startswith('disk:') and 'wrong signature' in a for a in anomalies):
            anomalies.append('disk: the probe of bucketcache-disk (signed) with a wrong signature did not run')
    return info


def disk_targets(V, dcells, dinfo, dcold, meta):
    """Issue 12's target: hot GETs from the disk tier >= 1.0x nginx proxy_cache on the same disk,
    at 128 KiB and 4 MiB, 64 connections, page cache warm."""
    for s in ('128K', '4M'):
        what = 'disk tier %s, 64 conns, page cache warm: bucketcache-disk / nginx-disk, req/s' % s
        bc = cell_median(dcells, s, 64, 'bucketcache-disk', 'rps')
        ng = cell_median(dcells, s, 64, 'nginx-disk', 'rps')
        if bc is None or ng is None or not ng:
            V.add('disk', what, 'not measured', '>= 1.0x', None,
                  'cell not in this run (BENCH_SECTIONS needs disk; BENCH_DISK_SIZES %s and '
                  'BENCH_DISK_CONNS 64)' % s)
            continue
        ratio = bc / ng
        per = round_ratios(dcells, s, 64, 'bucketcache-disk', 'nginx-disk', 'rps')
        share = (dinfo.get(s) or {}).get('sendfile_share')
        cold = ''
        xb, xn = dcold.get((s, 'bucketcache-disk')), dcold.get((s, 'nginx-disk'))
        if xb and xn and med(xn['rps']):
            cold = '; page cache cold (informational): %.2fx (%.0f vs %.0f req/s)' % (
                med(xb['rps']) / med(xn['rps']), med(xb['rps']), med(xn['rps']))
        V.add('disk', what, '%.2fx' % ratio, '>= 1.0x', ratio >= 1.0,
              'bucketcache-disk %.0f req/s, %.0f MB/s vs nginx-disk %.0f req/s, %.0f MB/s; per round %s; '
              '%s of bucketcache-disk\'s GETs sent from disk files (cache_disk_sendfile)%s'
              % (bc, 1000 * cell_median(dcells, s, 64, 'bucketcache-disk', 'gbps'), ng,
                 1000 * cell_median(dcells, s, 64, 'nginx-disk', 'gbps'),
                 ' '.join('%.2fx' % x for x in per),
                 fmt(100 * share if share is not None else None, '%.0f%%'), cold))


def disk_text_lines(dcells, dcold, meta):
    sizes = meta.get('disk_sizes', '').split()
    conns = [int(c) for c in meta.get('disk_conns', '').split()]
    out = ['(bucketcache-disk: --mem-size %s, --disk-size %s bytes, %s; nginx-disk: proxy_cache on the same '
           'disk; page cache warm; medians over rounds; MB = 10^6 bytes)'
           % (meta.get('disk_mem', '?'), meta.get('disk_bc_size', '?'),
              'signed' if meta.get('disk_auth') == 'signed' else '--anonymous')]
    for s in sizes:
        out.append('%s objects (%s keys): req/s | MB/s | p50 ms | p99 ms   (bucketcache-disk / nginx-disk)'
                   % (s, meta.get('disk_keys_' + s, '?')))
        for c in conns:
            parts = []
            for t in DISK_TARGETS:
                r = cell_median(dcells, s, c, t, 'rps')
                if r is None:
                    continue
                parts.append('%s %.0f|%.1f|%.2f|%.1f' % (
                    t, r, 1000 * cell_median(dcells, s, c, t, 'gbps'), cell_median(dcells, s, c, t, 'p50'),
                    cell_median(dcells, s, c, t, 'p99')))
            a = cell_median(dcells, s, c, 'bucketcache-disk', 'rps')
            b = cell_median(dcells, s, c, 'nginx-disk', 'rps')
            per = round_ratios(dcells, s, c, 'bucketcache-disk', 'nginx-disk', 'rps')
            out.append('  c=%-3d %s   (%s; per round %s)' % (
                c, '  '.join(parts), '%.2fx' % (a / b) if a is not None and b else '—',
                ' '.join('%.2f' % x for x in per)))
    if dcold:
        for s in sizes:
            xb, xn = dcold.get((s, 'bucketcache-disk')), dcold.get((s, 'nginx-disk'))
            parts = ['%s %.0f req/s, %.1f MB/s' % (t, med(x['rps']), med(x['mbps']))
                     for t, x in (('bucketcache-disk', xb), ('nginx-disk', xn)) if x]
            ratio = ('%.2fx' % (med(xb['rps']) / med(xn['rps']))) if xb and xn and med(xn['rps']) else '—'
            out.append('%s, page cache cold (every key once, %s transfers at a time, after drop_caches): %s (%s)'
                       % (s, meta.get('disk_cold_clients', '?'), '; '.join(parts), ratio))
    else:
        out.append('page cache cold: %s' % meta.get('disk_cold', 'not measured'))
    return out


# ---- report: soak ------------------------------------------------------------------


def soak_summary(data, meta, anomalies, checks):
    rows = read_tsv(os.path.join(data, 'soak.tsv'))
    wins = {w[0]: (float(w[1]), float(w[2])) for w in
            (line.split('\t') for line in read_lines(os.path.join(data, 'windows.tsv')))}
    if not rows or 'soak-load' not in wins:
        return None
    t0, t1 = wins['soak-load']
    pts = [dict(t=float(r['t']) - t0, rss=int(r['rss_kib']) * 1024.0,
                held=int(r['cache_bytes_held']), limit=int(r['cache_bytes_limit']),
                ev=int(r['cache_evictions']), g5=int(r['get_5xx']),
                uerr=int(r['upstream_errors']), req=int(r['requests'])) for r in rows]
    dur = t1 - t0
    idle = [p for p in pts if p['t'] < 0]
    load = [p for p in pts if 0 <= p['t'] <= dur + 0.5]
    after = [p for p in pts if p['t'] > dur + 0.5]
    if not idle or not load:
        anomalies.append('soak: too few samples (idle %d, under load %d)' % (len(idle), len(load)))
        return None
    base = med([p['rss'] for p in idle])
    limit = load[-1]['limit']
    full = next((p for p in load if p['held'] >= 0.9 * limit), None)
    half = [p for p in load if p['t'] >= dur / 2.0]
    if len(half) < 2:
        half = load[-2:]
    # least-squares slope of RSS over the last half of the load
    xs = [p['t'] for p in half]
    ys = [p['rss'] for p in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    drift = slope * (xs[-1] - xs[0])
    over = [((p['rss'] - base) / p['held'] - 1.0) for p in half if p['held'] > 0]
    s = dict(
        base_rss=base, limit=limit, duration=dur,
        full_t=full['t'] if full else None, rss_full=full['rss'] if full else None,
        held_full=full['held'] if full else None,
        rss_half_median=med(ys), held_half_median=med([p['held'] for p in half]),
        rss_half_min=min(ys), rss_half_max=max(ys), rss_max=max(p['rss'] for p in pts),
        rss_end=load[-1]['rss'], held_end=load[-1]['held'],
        drift=drift, slope_mib_per_min=slope * 60 / MiB,
        overhead=med(over), evictions=load[-1]['ev'] - idle[-1]['ev'],
        get_5xx=pts[-1]['g5'] - idle[-1]['g5'], upstream_errors=pts[-1]['uerr'] - idle[-1]['uerr'],
        samples=len(pts), half_samples=len(half),
        rss_after=after[-1]['rss'] if after else None,
        flat_bound=max(0.01 * limit, 4 * MiB), points=pts, factor=meta.get('soak_factor', '?'))
    line = read_lines(os.path.join(data, 'soak_wrk.txt'))
    if line:
        v = dict(kv.split('=') for kv in line[-1].split()[1:])
        d = int(v['duration_us']) / 1e6
        s['wrk'] = dict(requests=int(v['requests']), rps=int(v['requests']) / d,
                        gbps=int(v['bytes']) / d / 1e9, p99=int(v['p99_us']) / 1000.0,
                        errors=sum(int(v[k]) for k in ('err_connect', 'err_read', 'err_write',
                                                       'err_status', 'err_timeout')))
        if s['wrk']['errors']:
            anomalies.append('soak: wrk saw %d errors' % s['wrk']['errors'])
    if full is None:
        anomalies.append('soak: the cache never filled (held at most %.0f MiB of %.0f MiB): '
                         'soak too short or data set too small'
                         % (max(p['held'] for p in load) / MiB, limit / MiB))
    elif full['t'] > dur / 2.0:
        anomalies.append('soak: the cache filled only at %.0f s of %.0f s: the flatness window '
                         '(last half) includes the filling' % (full['t'], dur))
    if s['evictions'] <= 0:
        anomalies.append('soak: no eviction happened: the load did not exercise a full cache')
    if s['get_5xx']:
        anomalies.append('soak: bucketcache answered %d GETs with 5xx' % s['get_5xx'])
    checks.append('soak: %d samples (%d idle, %d under load), evictions +%d, upstream errors +%d, GetObject 5xx +%d'
                  % (len(pts), len(idle), len(load), s['evictions'], s['upstream_errors'], s['get_5xx']))
    return s


# ---- report: targets ----------------------------------------------------------------


class Verdicts:
    def __init__(self):
        self.rows = []

    def add(self, section, what, value, bound, ok, detail):
        verdict = 'n/a' if ok is None else ('PASS' if ok else 'MISS')
        self.rows.append(dict(section=section, target=what, value=value, bound=bound,
                              verdict=verdict, detail=detail))


def best_peer(cells, size, conns, key):
    """The better of nginx and Varnish in a cell: (name, median), or None unless both were measured."""
    xs = [(cell_median(cells, size, conns, p, key), p) for p in ('nginx', 'varnish')]
    if any(v is None for v, _ in xs):
        return None
    v, p = max(xs)
    return p, v


def best_round_ratios(cells, size, conns, target, key):
    """TARGET over the better of nginx and Varnish, round by round."""
    xt = {x['round']: x[key] for x in cells.get((size, conns, target), [])}
    xn = {x['round']: x[key] for x in cells.get((size, conns, 'nginx'), [])}
    xv = {x['round']: x[key] for x in cells.get((size, conns, 'varnish'), [])}
    return [xt[r] / max(xn[r], xv[r]) for r in sorted(xt) if r in xn and r in xv and max(xn[r], xv[r])]


def hot_targets(V, cells, sizes, conns, targets):
    """Issue 9's targets, for the signed bucketcache row; the --anonymous row
    is quoted in the details (informational)."""
    for s, key, unit in (('4K', 'rps', 'req/s'), ('128K', 'rps', 'req/s'),
                         ('4M', 'gbps', 'GB/s'), ('64M', 'gbps', 'GB/s')):
        what = 'hot %s, 64 conns, %s: bucketcache (signed) / better of nginx, Varnish' % (s, unit)
        bc = cell_median(cells, s, 64, 'bucketcache', key)
        best = best_peer(cells, s, 64, key)
        if bc is None or best is None or not best[1]:
            V.add('hot', what, 'not measured', '>= 1.0x', None,
                  'cell not in this run (BENCH_SIZES/BENCH_CONNS/BENCH_TARGETS: it needs bucketcache, '
                  'nginx and varnish)')
            continue
        ratio = bc / best[1]
        per = best_round_ratios(cells, s, 64, 'bucketcache', key)
        f = '%.0f' if key == 'rps' else '%.2f'
        anon = cell_median(cells, s, 64, 'bucketcache-anon', key)
        V.add('hot', what, '%.2fx' % ratio, '>= 1.0x', ratio >= 1.0,
              ('bucketcache ' + f + ' vs nginx ' + f + ', varnish ' + f + ' %s (better: %s); per round %s%s')
              % (bc, cell_median(cells, s, 64, 'nginx', key), cell_median(cells, s, 64, 'varnish', key),
                 unit, best[0], ' '.join('%.2fx' % x for x in per),
                 ('; bucketcache-anon ' + f + ', %.2fx') % (anon, anon / best[1]) if anon is not None else ''))
    for s in sizes:
        what = 'hot %s, 256 conns, p99: bucketcache (signed) vs nginx' % s
        bc = cell_median(cells, s, 256, 'bucketcache', 'p99')
        ng = cell_median(cells, s, 256, 'nginx', 'p99')
        if bc is None or ng is None:
            V.add('hot', what, 'not measured', '<= nginx', None, 'cell not in this run')
            continue
        nb = cell_median(cells, s, 256, 'bucketcache', 'requests')
        nn = cell_median(cells, s, 256, 'nginx', 'requests')
        if min(nb, nn) < 2 * 256:
            V.add('hot', what, 'n/a', '<= nginx', None,
                  'too few completed responses per run for a p99 (bucketcache %d, nginx %d; '
                  'need 2 per connection): the run is shorter than a response at this size'
                  % (nb, nn))
            continue
        anon = cell_median(cells, s, 256, 'bucketcache-anon', 'p99')
        V.add('hot', what, '%.1f ms vs %.1f ms' % (bc, ng), '<= nginx', bc <= ng,
              'ratio %.2fx; per round bucketcache %s ms, nginx %s ms%s' % (
                  bc / ng if ng else float('inf'),
                  ' '.join('%.1f' % x['p99'] for x in sorted(cells[(s, 256, 'bucketcache')], key=lambda x: x['round'])),
                  ' '.join('%.1f' % x['p99'] for x in sorted(cells[(s, 256, 'nginx')], key=lambda x: x['round'])),
                  '; bucketcache-anon %.1f ms' % anon if anon is not None else ''))


def cold_targets(V, cold):
    sizes = sorted({k[1] for k in cold if k[0] == 'static'}, key=size_key)
    if not sizes:
        V.add('cold', 'cold throughput: bucketcache/direct', 'not measured', '>= 0.9x', None,
              'cold section not run')
        V.add('cold', 'cold added time to first byte', 'not measured', '< 1 ms', None,
              'cold section not run')
    for s in sizes:
        bc, d = cold.get(('static', s, 'bucketcache')), cold.get(('static', s, 'direct'))
        if not bc or not d or not bc['gbps'] or not d['gbps']:
            continue
        rb, rd = med(bc['gbps']), med(d['gbps'])
        ratio = rb / rd if rd else 0.0
        peers = ['%s %.2fx direct' % (p, cold_ratio(cold, 'static', s, p, 'direct')) for p in ('nginx', 'varnish')
                 if cold_ratio(cold, 'static', s, p, 'direct') is not None]
        V.add('cold', 'cold %s throughput: bucketcache/direct' % s, '%.2fx' % ratio, '>= 0.9x',
              ratio >= 0.9, 'bucketcache %.3f vs direct %.3f GB/s (medians of %d rounds; per round %s)%s'
              % (rb, rd, len(bc['gbps']),
                 ' '.join('%.2fx' % x for x in cold_round_ratios(cold, 'static', s, 'bucketcache', 'direct')),
                 '; on the same keys, fresh too: ' + ', '.join(peers) if peers else ''))
    for s in sizes:
        bc, d = cold.get(('static', s, 'bucketcache')), cold.get(('static', s, 'direct'))
        if not bc or not d or not bc['ttfb'] or not d['ttfb']:
            continue
        tb, td = med(bc['ttfb']), med(d['ttfb'])
        peers = ['%s %+.3f ms' % (p, med(cold[('static', s, p)]['ttfb']) - td) for p in ('nginx', 'varnish')
                 if cold.get(('static', s, p), {}).get('ttfb')]
        V.add('cold', 'cold %s added time to first byte' % s, '%.3f ms' % (tb - td), '< 1 ms',
              tb - td < 1.0, 'median TTFB bucketcache %.3f ms vs direct %.3f ms over %d GETs each; '
              'p90 %.3f vs %.3f ms%s' % (tb, td, len(bc['ttfb']), pct(bc['ttfb'], 90), pct(d['ttfb'], 90),
                                         '; added by the peers: ' + ', '.join(peers) if peers else ''))


def cold_ratio(cold, up, s, a, b):
    """Median GB/s of target A over that of target B, cold (UP, SIZE); None if not measured."""
    ga = med(cold.get((up, s, a), {}).get('gbps', []))
    gb = med(cold.get((up, s, b), {}).get('gbps', []))
    return ga / gb if ga is not None and gb else None


def cold_round_ratios(cold, up, s, a, b):
    """GB/s of A over B, round by round (pairs measured in the same round)."""
    xa, xb = cold.get((up, s, a), {}), cold.get((up, s, b), {})
    ra = dict(zip(xa.get('rounds', []), xa.get('gbps', [])))
    rb = dict(zip(xb.get('rounds', []), xb.get('gbps', [])))
    return [ra[r] / rb[r] for r in sorted(ra) if r in rb and ra[r] is not None and rb[r]]


def cold_peer_lines(cold):
    """Informational (no target): nginx and Varnish on the same cold keys as bucketcache and
    direct, so that a gap to direct can be told to be bucketcache's or any cache's."""
    out = []
    if not any(k[0] == 'static' and k[2] in ('nginx', 'varnish') for k in cold):
        return out
    for s in sorted({k[1] for k in cold if k[0] == 'static'}, key=size_key):
        parts = []
        for a, b in (('nginx', 'direct'), ('varnish', 'direct'), ('bucketcache', 'direct'),
                     ('bucketcache', 'nginx'), ('bucketcache', 'varnish')):
            r = cold_ratio(cold, 'static', s, a, b)
            if r is None:
                continue
            per = cold_round_ratios(cold, 'static', s, a, b)
            parts.append('%s/%s %.2f%s' % (a, b, r, ' (per round %s)' % ' '.join('%.2f' % x for x in per)
                                           if len(per) > 1 else ''))
        if parts:
            out.append('cold %s throughput: %s' % (s, ', '.join(parts)))
        td = med(cold.get(('static', s, 'direct'), {}).get('ttfb', []))
        parts = ['%s %+.3f ms' % (t, med(cold[('static', s, t)]['ttfb']) - td)
                 for t in ('nginx', 'varnish', 'bucketcache') if cold.get(('static', s, t), {}).get('ttfb')]
        if td is not None and parts:
            out.append('cold %s added time to first byte (median, over direct\'s %.3f ms): %s'
                       % (s, td, ', '.join(parts)))
    return out


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float('nan')
    k = min(len(xs) - 1, max(0, int(math.ceil(p / 100.0 * len(xs))) - 1))
    return xs[k]


def soak_targets(V, s):
    if s is None:
        for what, bound in (('memory: fixed base RSS', '< 64 MiB'),
                            ('memory: overhead per cached byte', '< 3%'),
                            ('memory: RSS flat once full', 'flat')):
            V.add('memory', what, 'not measured', bound, None, 'soak section not run or failed')
        return
    V.add('memory', 'memory: fixed base RSS (idle, before load)', '%.1f MiB' % (s['base_rss'] / MiB),
          '< 64 MiB', s['base_rss'] < 64 * MiB, 'median VmRSS of the idle samples')
    if s['overhead'] is None:
        V.add('memory', 'memory: overhead per cached byte', 'n/a', '< 3%', None, 'no bytes held')
    else:
        V.add('memory', 'memory: overhead per cached byte', '%.2f%%' % (100 * s['overhead']), '< 3%',
              s['overhead'] < 0.03,
              '(RSS - base) / cache_bytes_held - 1, median over the last half of the soak: '
              'RSS %.0f MiB, held %.0f MiB, base %.1f MiB'
              % (s['rss_half_median'] / MiB, s['held_half_median'] / MiB, s['base_rss'] / MiB))
    V.add('memory', 'memory: RSS flat once the cache is full', '%+.1f MiB' % (s['drift'] / MiB),
          '|drift| <= %.1f MiB' % (s['flat_bound'] / MiB), abs(s['drift']) <= s['flat_bound'],
          'least-squares drift of VmRSS over the last half (%.0f s): %+.2f MiB/min; range %.0f..%.0f MiB'
          % (s['duration'] / 2, s['slope_mib_per_min'], s['rss_half_min'] / MiB, s['rss_half_max'] / MiB))


# ---- report: plots --------------------------------------------------------------------

COLORS = {'direct': '#7f7f7f', 'nginx': '#2ca02c', 'varnish': '#1f77b4', 'bucketcache': '#d62728',
          'bucketcache-anon': '#ff7f0e'}


def plots(results, cells, sizes, conns, targets, cold, soak):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    made = []
    if cells:
        for key, ylabel, fname, logy in (('rps', 'requests/s', 'hot_reqs.png', True),
                                         ('gbps', 'GB/s (10^9 bytes)', 'hot_gbps.png', False),
                                         ('p99', 'p99 latency, ms', 'hot_p99.png', True)):
            fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.8), squeeze=False)
            for ax, s in zip(axes[0], sizes):
                for t in targets:
                    xs, ys, lo, hi = [], [], [], []
                    for c in conns:
                        v = cells.get((s, c, t))
                        if not v:
                            continue
                        vals = [x[key] for x in v]
                        m = statistics.median(vals)
                        if key == 'p99' and m <= 0:
                            continue
                        xs.append(c)
                        ys.append(m)
                        lo.append(m - min(vals))
                        hi.append(max(vals) - m)
                    if xs:
                        ax.errorbar(xs, ys, yerr=[lo, hi], marker='o', capsize=3, label=LABELS.get(t, t),
                                    color=COLORS.get(t), ls='--' if t == 'bucketcache-anon' else '-')
                ax.set_xscale('log', base=2)
                ax.set_xticks(conns)
                ax.set_xticklabels([str(c) for c in conns])
                if logy:
                    ax.set_yscale('log')
                ax.set_title('%s objects' % s)
                ax.set_xlabel('wrk connections')
                ax.grid(True, alpha=0.3, which='both')
            axes[0][0].set_ylabel(ylabel)
            axes[0][-1].legend(fontsize=8)
            fig.suptitle('hot GETs: %s (median of rounds, bars: min..max)' % ylabel)
            fig.tight_layout()
            fig.savefig(os.path.join(results, fname), dpi=90)
            plt.close(fig)
            made.append(fname)
        # ratios
        fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False)
        for ax, s in zip(axes[0], sizes):
            key = 'rps' if size_key(s) < (1 << 20) else 'gbps'
            series = [(g, p) for g in GATEWAYS if g in targets for p in ('nginx', 'varnish')]
            w = 0.8 / max(1, len(series))
            for i, (g, p) in enumerate(series):
                xs, ys = [], []
                for j, c in enumerate(conns):
                    a = cell_median(cells, s, c, g, key)
                    b = cell_median(cells, s, c, p, key)
                    if a is not None and b:
                        xs.append(j + (i - (len(series) - 1) / 2.0) * w)
                        ys.append(a / b)
                signed = g == 'bucketcache'
                ax.plot(xs, ys, ls='none', marker='os'[i % 2], markersize=8 if signed else 6,
                        label='%s / %s' % (LABELS[g], p), color=COLORS[p],
                        markerfacecolor=COLORS[p] if signed else 'none')
                if signed:
                    for x, y in zip(xs, ys):
                        ax.annotate('%.2f' % y, (x, y), textcoords='offset points', xytext=(0, 7),
                                    ha='center', fontsize=7)
            ax.set_yscale('log', base=2)
            allv = [y for ln in ax.get_lines() for y in ln.get_ydata()] or [1.0]
            lo, hi = min(0.5, min(allv) / 1.3), max(2.0, max(allv) * 1.4)
            ax.set_ylim(lo, hi)
            ticks = [t for t in (1 / 64, 1 / 16, 1 / 8, 0.25, 0.5, 0.75, 1, 1.5, 2, 4, 8, 16, 32, 64)
                     if lo <= t <= hi]
            ax.set_yticks(ticks)
            ax.set_yticklabels(['%g' % t for t in ticks])
            ax.minorticks_off()
            ax.set_xlim(-0.6, len(conns) - 0.4)
            ax.axhline(1.0, color='k', lw=0.8)
            ax.set_xticks(range(len(conns)))
            ax.set_xticklabels([str(c) for c in conns])
            ax.set_xlabel('wrk connections')
            ax.set_title('%s (%s)' % (s, 'req/s' if key == 'rps' else 'GB/s'))
            ax.grid(True, axis='y', alpha=0.3, which='both')
        axes[0][0].set_ylabel('ratio, log scale (>1: bucketcache faster)')
        axes[0][-1].legend(fontsize=7)
        fig.suptitle('hot GETs: bucketcache relative to its peers (medians; filled, labelled: signed, '
                     'the targets\' row; hollow: --anonymous)')
        fig.tight_layout()
        fig.savefig(os.path.join(results, 'hot_ratios.png'), dpi=90)
        plt.close(fig)
        made.append('hot_ratios.png')
    if cold:
        keys = sorted({(k[0], k[1]) for k in cold}, key=lambda k: (k[0] != 'static', size_key(k[1])))
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
        tgs = [t for t in COLD_TARGETS if any(k[2] == t for k in cold)]
        w = 0.8 / len(tgs)
        for i, t in enumerate(tgs):
            xs = [j + (i - (len(tgs) - 1) / 2.0) * w for j in range(len(keys))]
            a1.bar(xs, [med(cold.get((u, s, t), {}).get('gbps', [])) or 0 for u, s in keys],
                   width=w, label=t, color=COLORS[t])
            a2.bar(xs, [med(cold.get((u, s, t), {}).get('ttfb', [])) or 0 for u, s in keys],
                   width=w, label=t, color=COLORS[t])
        for ax, title in ((a1, 'cold throughput, GB/s'), (a2, 'cold time to first byte, ms (median)')):
            ax.set_xticks(range(len(keys)))
            ax.set_xticklabels(['%s\n%s' % (s, u) for u, s in keys])
            ax.set_title(title)
            ax.grid(True, axis='y', alpha=0.3)
            ax.legend(fontsize=8)
        a2.set_yscale('log')
        fig.tight_layout()
        fig.savefig(os.path.join(results, 'cold.png'), dpi=90)
        plt.close(fig)
        made.append('cold.png')
    if soak:
        pts = soak['points']
        fig, ax = plt.subplots(figsize=(9, 4.2))
        ts = [p['t'] for p in pts]
        ax.plot(ts, [p['rss'] / MiB for p in pts], label='VmRSS', color=COLORS['bucketcache'])
        ax.plot(ts, [p['held'] / MiB for p in pts], label='cache_bytes_held', color=COLORS['varnish'])
        ax.plot(ts, [(soak['base_rss'] + 1.03 * p['held']) / MiB for p in pts],
                label='target bound: base + 1.03 x held', color='k', ls=':', lw=1)
        ax.axhline(soak['limit'] / MiB, color='#999999', ls='--', lw=0.8, label='mem-size limit')
        ax.axvline(0, color='#bbbbbb', lw=0.8)
        ax.axvline(soak['duration'], color='#bbbbbb', lw=0.8)
        ax.axvspan(soak['duration'] / 2, soak['duration'], color='#eeeeee', label='last half (flatness)')
        ax.set_xlabel('seconds since the load started')
        ax.set_ylabel('MiB')
        ax.set_title('bucketcache memory under a bounded soak (random GETs over %s x --mem-size %.0f MiB)'
                     % (soak['factor'], soak['limit'] / MiB), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc='lower right')
        fig.tight_layout()
        fig.savefig(os.path.join(results, 'soak_rss.png'), dpi=90)
        plt.close(fig)
        made.append('soak_rss.png')
    return made


# ---- report: the document -------------------------------------------------------------


def disk_md(meta, dcells, dinfo, dcold):
    """The benchmarks.md section of the disk tier."""
    L = ['## Disk tier: hot GETs from disk (issue 12)', '']
    sizes = meta.get('disk_sizes', '').split()
    conns = [int(c) for c in meta.get('disk_conns', '').split()]
    signed = meta.get('disk_auth') == 'signed'
    L.append('**bucketcache-disk**: a gateway with a memory tier small against the sets but holding a chunk '
             'per connection (`--mem-size %s`: a disk hit is read into a memory chunk before it is sent, and '
             'a GET that finds memory full of chunks in use goes to the origin uncached) and a disk tier '
             '(`--disk-dir` a temp dir, `--disk-size %s`: every object of the sets in 4 KiB blocks plus 12 KiB '
             'each, x 1.25, + 64 MiB), %s, so that its hits come from the disk tier, sent with sendfile; '
             '**nginx-disk**: the hot section\'s nginx proxy_cache config with its cache files in a temp dir '
             'beside it ([nginx-proxy-cache-disk.conf](nginx-proxy-cache-disk.conf)), which nginx sends with '
             'sendfile. Both on %s (%s). Objects: %s (their own keys), read in rotation by wrk (rotate.lua) '
             'as in the hot section: %s rounds of %s s per (size, connections) cell, the order rotated every '
             'round, %s s of unrecorded load each first. Before measuring, each was filled and checked warm (a '
             'pass that was a hit for every key in its own header; for bucketcache-disk, after its disk '
             'writes had settled, cache_hits +keys and at least half the keys from the disk tier, '
             'tiers.disk.hits and cache_disk_sendfile), and the files synced. Page cache warm: the files were '
             'just written and read, and the machine has the memory to keep them. MB = 10^6 bytes.'
             % (meta.get('disk_mem', '?'), meta.get('disk_bc_size', '?'),
                'signed (presigned URLs made by boto3, as in the hot section)' if signed else
                '`--anonymous` (plain URLs)',
                meta.get('disk_fs', '?'), meta.get('disk_dir', '?'),
                ', '.join('%s x %s' % (meta.get('disk_keys_' + s, '?'), s) for s in sizes),
                meta.get('rounds'), meta.get('duration'), meta.get('warmup')))
    L.append('')
    rows = []
    for s in sizes:
        for c in conns:
            a = cell_median(dcells, s, c, 'bucketcache-disk', 'rps')
            b = cell_median(dcells, s, c, 'nginx-disk', 'rps')
            for t in DISK_TARGETS:
                if (s, c, t) not in dcells:
                    continue
                ratio = '—'
                if t == 'bucketcache-disk' and a is not None and b:
                    per = round_ratios(dcells, s, c, 'bucketcache-disk', 'nginx-disk', 'rps')
                    ratio = '%s%.2fx%s (%s)' % ('**' if a < b else '', a / b, '**' if a < b else '',
                                                ' '.join('%.2f' % x for x in per))
                rows.append([s, c, t, fmt(cell_median(dcells, s, c, t, 'rps'), '%.0f'),
                             fmt(1000 * cell_median(dcells, s, c, t, 'gbps'), '%.1f'),
                             fmt(cell_median(dcells, s, c, t, 'p50'), '%.2f'),
                             fmt(cell_median(dcells, s, c, t, 'p99'), '%.2f'), ratio])
    L += md_table(['size', 'conns', 'target', 'req/s', 'MB/s', 'p50 ms', 'p99 ms',
                   'bucketcache-disk / nginx-disk (per round)'], rows,
                  [':---', '---:', ':---', '---:', '---:', '---:', '---:', ':---'])
    L.append('')
    for s in sizes:
        d = dinfo.get(s)
        if d:
            L.append('- %s: bucketcache-disk over its measured runs: %d GETs (wrk), cache_disk_sendfile +%d (%s), '
                     'disk tier hits +%d, memory tier hits +%d / misses +%d, cache_misses +%d.'
                     % (s, d['wrk'], d['cache_disk_sendfile'],
                        fmt(100 * d['sendfile_share'] if d['sendfile_share'] is not None else None, '%.0f%%'),
                        d['disk_hits'], d['memory_hits'], d['memory_misses'], d['cache_misses']))
    L.append('')
    if dcold:
        L.append('Page cache cold: per size and round, each target read every key once, %s transfers at a '
                 'time (one curl), right after `sync; echo 1 > /proc/sys/vm/drop_caches`; req/s and MB/s = '
                 'keys and bytes / wall time (informational, no target).' % meta.get('disk_cold_clients', '?'))
        L.append('')
        rows = []
        for s in sizes:
            xb, xn = dcold.get((s, 'bucketcache-disk')), dcold.get((s, 'nginx-disk'))
            for t, x in (('bucketcache-disk', xb), ('nginx-disk', xn)):
                if not x:
                    continue
                rows.append([s, t, '%.0f' % med(x['rps']), '%.1f' % med(x['mbps']), len(x['rps']),
                             '%.2fx' % (med(xb['rps']) / med(xn['rps']))
                             if t == 'bucketcache-disk' and xb and xn and med(xn['rps']) else '—'])
        L += md_table(['size', 'target', 'req/s', 'MB/s', 'rounds', 'bucketcache-disk / nginx-disk'], rows,
                      [':---', ':---', '---:', '---:', '---:', '---:'])
    else:
        L.append('Page cache cold: %s.' % meta.get('disk_cold', 'not measured'))
    L.append('')
    return L


def md_table(header, rows, align=None):
    out = ['| ' + ' | '.join(header) + ' |',
           '|' + '|'.join(align or ['---:'] * len(header)) + '|']
    for r in rows:
        out.append('| ' + ' | '.join(str(x) for x in r) + ' |')
    return out


def report(data, results):
    meta = read_meta(os.path.join(data, 'meta.tsv'))
    anomalies = read_lines(os.path.join(data, 'anomalies.txt'))
    warnings = read_lines(os.path.join(data, 'warnings.txt'))
    checks = []
    sizes = meta.get('sizes', '').split()
    conns = [int(c) for c in meta.get('conns', '').split()]
    targets = meta.get('targets', '').split()
    sections = meta.get('sections', '').split()
    entries = parse_origin_log(os.path.join(data, 'origin_access.log'), meta)
    wins = [w.split('\t') for w in read_lines(os.path.join(data, 'windows.tsv'))]

    runs = read_tsv(os.path.join(data, 'hot_runs.tsv'))
    cells = hot_cells(runs)
    if runs:
        for w in wins:
            if w[0].startswith('warm-') and w[0][5:] in ('nginx', 'varnish') + GATEWAYS + DISK_TARGETS:
                g, h, b = upstream_in(entries, w[0][5:], float(w[1]), float(w[2]) + 1.0)
                checks.append('warm-up of %s: %d origin GETs, %d HEADs, %.0f MiB from the origin'
                              % (w[0][5:], g, h, b / MiB))
        check_hot(data, meta, runs, entries, anomalies, checks)
        loads = [float(r['load1'] or 0) for r in runs]
        ncpu = int(meta.get('nproc', '1') or 1)
        if med(loads) > ncpu:
            warnings.append('the machine was busy: median load average %.1f (max %.1f) at the start of '
                            'the measured runs, on %d CPUs; other work competed with every target'
                            % (med(loads), max(loads), ncpu))
    druns = read_tsv(os.path.join(data, 'disk_runs.tsv'))
    dcells = hot_cells(druns)
    dcold = disk_cold_summary(data) if 'disk' in sections else {}
    dinfo = {}
    if druns:
        if not runs:
            for w in wins:
                if w[0].startswith('warm-') and w[0][5:] in DISK_TARGETS:
                    g, h, b = upstream_in(entries, w[0][5:], float(w[1]), float(w[2]) + 1.0)
                    checks.append('warm-up of %s: %d origin GETs, %d HEADs, %.0f MiB from the origin'
                                  % (w[0][5:], g, h, b / MiB))
        dinfo = check_disk(data, meta, druns, entries, anomalies, checks)
        loads = [float(r['load1'] or 0) for r in druns]
        ncpu = int(meta.get('nproc', '1') or 1)
        if med(loads) > ncpu:
            warnings.append('the machine was busy during the disk section: median load average %.1f (max %.1f) '
                            'at the start of its measured runs, on %d CPUs' % (med(loads), max(loads), ncpu))
    cold = cold_summary(data, meta, anomalies, checks) if 'cold' in sections else {}
    soak = soak_summary(data, meta, anomalies, checks) if 'soak' in sections else None

    V = Verdicts()
    if 'hot' in sections:
        hot_targets(V, cells, sizes, conns, targets)
    if 'disk' in sections:
        disk_targets(V, dcells, dinfo, dcold, meta)
    if 'cold' in sections:
        cold_targets(V, cold)
    if 'soak' in sections:
        soak_targets(V, soak)

    # ---- stdout
    print('')
    print('=== checks ===')
    for c in checks:
        print(c)
    for w in warnings:
        print('WARNING: ' + w)
    for a in anomalies:
        print('ANOMALY: ' + a)
    if runs:
        print('')
        print('=== hot GETs: medians ===')
        for line in hot_text_tables(cells, sizes, conns, targets):
            print(line)
    if 'disk' in sections:
        print('')
        print('=== disk tier: hot GETs from disk (bucketcache-disk vs nginx-disk) ===')
        for line in disk_text_lines(dcells, dcold, meta):
            print(line)
    print('')
    print('=== targets ===')
    for r in V.rows:
        print('%-4s  %-58s %-18s (%s)  %s' % (r['verdict'], r['target'], r['value'], r['bound'], r['detail']))
    npass = sum(r['verdict'] == 'PASS' for r in V.rows)
    nmiss = sum(r['verdict'] == 'MISS' for r in V.rows)
    nna = sum(r['verdict'] == 'n/a' for r in V.rows)
    verdict_line = 'targets: %d PASS, %d MISS, %d n/a%s' % (
        npass, nmiss, nna, '; %d ANOMALIES (see above)' % len(anomalies) if anomalies else '')
    print(verdict_line)
    peer_lines = cold_peer_lines(cold)
    if peer_lines:
        print('')
        print('=== cold GETs: the peers on the same keys (informational, no target) ===')
        for line in peer_lines:
            print(line)

    if results != 'none':
        write_results(results, data, meta, runs, cells, sizes, conns, targets, cold, soak,
                      V, checks, anomalies, warnings, verdict_line, dcells, dinfo, dcold)
        print('results: %s/benchmarks.md' % results)
    if anomalies:
        return 1
    return 3 if nmiss else 0


def hot_text_tables(cells, sizes, conns, targets):
    gws = [g for g in GATEWAYS if g in targets]
    short = {'bucketcache': 'bc', 'bucketcache-anon': 'anon'}
    out = ['(bucketcache: signed, presigned URLs%s)'
           % ('; bucketcache-anon: --anonymous, plain URLs' if 'bucketcache-anon' in gws else '')]
    for s in sizes:
        out.append('%s objects: req/s | GB/s | p50 ms | p99 ms   (%s)' % (
            s, '; '.join('%s/nginx, %s/varnish' % (short[g], short[g]) for g in gws)))
        for c in conns:
            parts = []
            for t in targets:
                r = cell_median(cells, s, c, t, 'rps')
                if r is None:
                    continue
                parts.append('%s %.0f|%.2f|%.2f|%.1f' % (
                    t, r, cell_median(cells, s, c, t, 'gbps'), cell_median(cells, s, c, t, 'p50'),
                    cell_median(cells, s, c, t, 'p99')))
            key = 'rps' if size_key(s) < (1 << 20) else 'gbps'
            groups = []
            for g in gws:
                ratios = []
                for p in ('nginx', 'varnish'):
                    a, b = cell_median(cells, s, c, g, key), cell_median(cells, s, c, p, key)
                    ratios.append('%.2fx' % (a / b) if a is not None and b else '—')
                groups.append(', '.join(ratios))
            out.append('  c=%-3d %s   (%s)' % (c, '  '.join(parts), '; '.join(groups)))
    return out


def write_results(results, data, meta, runs, cells, sizes, conns, targets, cold, soak,
                  V, checks, anomalies, warnings, verdict_line, dcells=None, dinfo=None, dcold=None):
    dcells, dinfo, dcold = dcells or {}, dinfo or {}, dcold or {}
    os.makedirs(results, exist_ok=True)
    sections = meta.get('sections', '').split()
    ours = ('benchmarks.md', 'hot_runs.csv', 'hot_medians.csv', 'cold_runs.csv', 'cold_xfers.csv',
            'soak_samples.csv', 'summary.json', 'hot_reqs.png', 'hot_gbps.png', 'hot_p99.png',
            'hot_ratios.png', 'cold.png', 'soak_rss.png', 'origin-nginx.conf',
            'nginx-proxy-cache.conf', 'varnish.vcl', 'nginx-proxy-cache-cold.conf', 'varnish-cold.vcl',
            'cold_peers.csv', 'report.txt', 'disk_runs.csv', 'disk_cold.csv',
            'nginx-proxy-cache-disk.conf')
    for f in ours:
        p = os.path.join(results, f)
        if os.path.exists(p):
            os.remove(p)
    # raw data
    for src, dst in (('hot_runs.tsv', 'hot_runs.csv'), ('cold_runs.tsv', 'cold_runs.csv'),
                     ('cold_xfers.tsv', 'cold_xfers.csv'), ('cold_peers.tsv', 'cold_peers.csv'),
                     ('soak.tsv', 'soak_samples.csv'), ('disk_runs.tsv', 'disk_runs.csv'),
                     ('disk_cold.tsv', 'disk_cold.csv')):
        rows = read_tsv(os.path.join(data, src))
        if rows:
            with open(os.path.join(results, dst), 'w', newline='') as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
                w.writeheader()
                w.writerows(rows)
    med_rows = []
    if cells:
        with open(os.path.join(results, 'hot_medians.csv'), 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['size', 'conns', 'target', 'rounds', 'req_per_s', 'gb_per_s', 'p50_ms',
                        'p99_ms', 'completed_per_run', 'load1_median'])
            for s in sizes:
                for c in conns:
                    for t in targets:
                        v = cells.get((s, c, t))
                        if not v:
                            continue
                        row = [s, c, t, len(v)] + ['%.4f' % med([x[k] for x in v]) for k in
                                                    ('rps', 'gbps', 'p50', 'p99', 'requests', 'load')]
                        w.writerow(row)
                        med_rows.append(row)
    confs = [f for f in ('origin-nginx.conf', 'nginx-proxy-cache.conf', 'varnish.vcl',
                         'nginx-proxy-cache-disk.conf', 'nginx-proxy-cache-cold.conf', 'varnish-cold.vcl')
             if os.path.exists(os.path.join(data, 'conf', f))]
    for f in confs:
        p = os.path.join(data, 'conf', f)
        if os.path.exists(p):
            with open(p) as i, open(os.path.join(results, f), 'w') as o:
                o.write(i.read())
    with open(os.path.join(data, 'report.txt')) as i, open(os.path.join(results, 'report.txt'), 'w') as o:
        o.write(i.read())
    made = plots(results, cells, sizes, conns, targets, cold, soak)
    summary = dict(
        meta=meta, verdict=verdict_line, targets=V.rows, anomalies=anomalies, warnings=warnings,
        checks=checks,
        hot={'%s/%d/%s' % k: dict(rounds=len(v), rps=med([x['rps'] for x in v]),
                                  gbps=med([x['gbps'] for x in v]), p50_ms=med([x['p50'] for x in v]),
                                  p99_ms=med([x['p99'] for x in v]))
             for k, v in cells.items()},
        cold={'%s/%s/%s' % k: dict(gbps_median=med(v['gbps']), ttfb_ms_median=med(v['ttfb']),
                                   ttfb_ms_p90=pct(v['ttfb'], 90) if v['ttfb'] else None,
                                   rounds=len(v['gbps']))
              for k, v in cold.items()},
        cold_peers_informational=cold_peer_lines(cold),
        disk={'%s/%d/%s' % k: dict(rounds=len(v), rps=med([x['rps'] for x in v]),
                                   mb_per_s=1000 * med([x['gbps'] for x in v]),
                                   p50_ms=med([x['p50'] for x in v]), p99_ms=med([x['p99'] for x in v]))
              for k, v in dcells.items()},
        disk_gateway=dinfo or None,
        disk_cold={'%s/%s' % k: dict(rps_median=med(v['rps']), mb_per_s_median=med(v['mbps']),
                                     rounds=len(v['rps'])) for k, v in dcold.items()} or
        meta.get('disk_cold'),
        soak={k: v for k, v in (soak or {}).items() if k != 'points'} or None)
    with open(os.path.join(results, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    L = []
    L.append('# bucketcache against nginx proxy_cache, Varnish and direct')
    L.append('')
    L.append('Regenerated by `tests/bench/bench_peers.sh` (this file, the plots and the raw data '
             'beside it are overwritten by every run). %s run, %s to %s, %s s.'
             % ('A quick (BENCH_QUICK=1, smoke)' if meta.get('quick') == '1' else 'A full',
                meta.get('date_start', '?'), meta.get('date_end', '?'), meta.get('wall_seconds', '?')))
    L.append('')
    L.append('```sh')
    L.append(meta.get('command', '?'))
    L.append('```')
    L.append('')
    L.append('**%s**' % verdict_line)
    L.append('')
    for w in warnings:
        L.append('Warning: %s.' % w)
        L.append('')
    if anomalies:
        L.append('**Anomalies — a measured phase was not what it claims to be; read the numbers with care:**')
        L.append('')
        for a in anomalies:
            L.append('- %s' % a)
        L.append('')
    L.append('## Targets')
    L.append('')
    if 'hot' in sections:
        L.append('The hot targets are those of issue 9, for the **signed** bucketcache row: a gateway '
                 'without `--anonymous` whose clients read through presigned SigV4 URLs (every request\'s '
                 'signature verified), as users run it%s. See Setup.'
                 % ('; `bucketcache-anon` (the same daemon with `--anonymous`, plain URLs) is '
                    'informational and quoted in the details' if 'bucketcache-anon' in targets else ''))
        L.append('')
    L += md_table(['verdict', 'target', 'measured', 'bound', 'detail'],
                  [('**%s**' % r['verdict'] if r['verdict'] != 'PASS' else r['verdict'], r['target'],
                    r['value'], r['bound'], r['detail']) for r in V.rows],
                  [':---', ':---', '---:', ':---', ':---'])
    L.append('')
    L.append('Ratios are ratios of medians over rounds; the per-round ratios pair runs of the same '
             'round (measured back to back). The machine is shared and noisy: read ratios, not '
             'absolute numbers, and mistrust a verdict whose per-round ratios straddle the bound.')
    L.append('')
    if (any(r['verdict'] == 'MISS' for r in V.rows)
            and os.path.exists(os.path.join(results, 'misses.md'))):
        L.append('Why the misses, with profiles: [misses.md](misses.md) (written by hand after '
                 'profiling; this suite does not regenerate it: check that its numbers still hold).')
        L.append('')
    L.append('## Machine and versions')
    L.append('')
    for k, label in (('host', 'host'), ('nproc', 'CPUs (nproc)'), ('cpu', 'CPU'), ('memory', 'memory'),
                     ('kernel', 'kernel'), ('os', 'OS'), ('load_start', 'load average at start'),
                     ('load_end', 'load average at end'), ('bucketcache', 'bucketcache'),
                     ('nginx', 'nginx'), ('varnish', 'Varnish'), ('wrk', 'wrk'), ('curl', 'curl'),
                     ('python', 'Python'), ('boto3', 'presigned URLs made with'), ('s3rver', 's3rver')):
        if k in meta:
            L.append('- %s: %s' % (label, meta[k]))
    L.append('')
    L.append('Every server, wrk and curl run on the same %s CPUs, on 127.0.0.1, unpinned: the '
             'client takes CPU from the server it measures, as it does for every target alike.'
             % meta.get('nproc', '?'))
    L.append('')
    L.append('## Setup and exact commands')
    L.append('')
    L.append('- origin: one nginx serving a directory laid out `bench/KEY` (anonymous; sendfile; '
             'its own Range, ETag, Last-Modified, If-Match and If-None-Match). It listens on one '
             'port per client: "direct" (what the direct baseline is measured on; not logged), '
             'one for each cache of the hot section, access-logged with `$server_port`, so that '
             'every request a cache makes upstream is seen and attributed, and "bulk" (not logged) '
             'for the caches of the cold section and the soak\'s bucketcache.')
    L.append('- nginx: proxy_cache (slice 8m, key with `$slice_range`, proxy_cache_lock on, '
             'proxy_cache_valid 200 206 1h, keepalive 64 to the origin, cache files on /dev/shm), '
             '`worker_processes auto`; X-Cache-Status from `$upstream_cache_status`.')
    L.append('- Varnish: malloc storage (%s), every parameter at its default; VCL: TTL 1h, '
             'do_stream, X-Cache HIT/MISS from obj.hits.' % meta.get('varnish_mem', '?'))
    hot_run = 'hot' in sections
    anon_row = hot_run and 'bucketcache-anon' in targets
    L.append('- bucketcache: defaults (HTTP threads: one per CPU, chunk 8M, --meta-ttl 60s and '
             '--meta-stale 1h, so each object\'s metadata is revalidated upstream once a minute with '
             'a background HEAD If-None-Match while the cached copy is served; the peers keep theirs '
             'for 1h) with `--mem-size %s`%s; it signs its upstream requests (key pair S3RVER/S3RVER '
             'from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), which the origin ignores.%s'
             % (meta.get('bc_mem', '?'), (' and `%s`' % meta['bc_args']) if meta.get('bc_args') else '',
                '' if not hot_run else
                ' The hot section has two bucketcache rows: two daemons of the same binary, running side '
                'by side, each in front of its own origin port:' if anon_row else
                ' The hot section\'s bucketcache row, in front of its own origin port:'))
    if hot_run:
        ps = meta.get('presign', '').split() + ['?'] * 3
        L.append('  - **bucketcache** (the targets\' row, signed): without `--anonymous`, so every client '
                 'request must carry a valid signature, checked against the gateway\'s client keys (by '
                 'default its own key pair). Its clients, curl (warming, hit checks, sha256) and wrk alike, '
                 'read through presigned SigV4 URLs, one per key, made before the run by boto3 (botocore\'s '
                 'presigner, as a user\'s code makes them): `generate_presigned_url(\'get_object\', ...)` '
                 'on an S3 client for the gateway\'s URL, path-style, SigV4, region %s, key pair %s/%s, '
                 'expiry %s s (7 days); wrk (rotate.lua with BENCH_PATHS_FILE) requests each URL\'s path '
                 'and query string in turn, with the Host the URL was signed for. The run checks that its '
                 'requests were authenticated: auth_failures stays 0 and requests_by_op GetObject 2xx '
                 'grows by every GET (warming) and by at least what wrk completed (measured phase); and '
                 'after the measured phase a presigned URL with its signature altered must be refused '
                 '(403, auth_failures +1). An example URL: `%s`.'
                 % (ps[0], ps[1], ps[1], ps[2], meta.get('presign_example', '?')))
    if anon_row:
        L.append('  - **bucketcache-anon** (informational): the same daemon with `--anonymous`, read with '
                 'plain unsigned URLs like the peers: what verifying signatures costs, by difference.')
    if 'cold' in sections or 'soak' in sections:
        L.append('- The %s use%s `--anonymous` gateways read with plain URLs (what %s measure%s, %s, does '
                 'not depend on signatures).'
                 % (' and '.join(x for x, y in (('cold section', 'cold'), ('memory soak', 'soak'))
                                 if y in sections),
                    '' if 'cold' in sections and 'soak' in sections else 's',
                    'they' if 'cold' in sections and 'soak' in sections else 'it',
                    '' if 'cold' in sections and 'soak' in sections else 's',
                    ' and '.join(x for x, y in (('misses', 'cold'), ('memory', 'soak')) if y in sections)))
    if any(k[2] in ('nginx', 'varnish') for k in cold):
        L.append('- cold section (static upstream): in every round, a FRESH nginx proxy_cache and a FRESH '
                 'Varnish, started for that round only, beside a fresh bucketcache, all three in front of '
                 'the origin\'s bulk port: the same configs as above apart from ports and paths '
                 '(nginx: its own proxy_cache_path directory on /dev/shm; Varnish: its own `-n` work dir '
                 'and malloc storage), so that every cache starts empty and the same key sets are cold '
                 'for each; stopped, and the nginx cache directory removed, at the end of the round '
                 '([nginx-proxy-cache-cold.conf](nginx-proxy-cache-cold.conf), '
                 '[varnish-cold.vcl](varnish-cold.vcl)).')
    L.append('- keepalive_requests is raised to 1000000 on every nginx instance so that wrk\'s '
             'connections are never closed by nginx after 1000 requests (Varnish and bucketcache '
             'do not close them either).')
    L.append('')
    L.append('```text')
    for line in read_lines(os.path.join(data, 'commands.txt')):
        L.append(line)
    L.append('```')
    L.append('')
    L.append('Configs as used: %s (temp paths and ports as they were in the run%s).'
             % (', '.join('[%s](%s)' % (f, f) for f in confs),
                '; the cold ones are those of the last cold round' if 'varnish-cold.vcl' in confs else ''))
    L.append('')
    if runs:
        L.append('## Hot GETs (every cache warm)')
        L.append('')
        hk = ', '.join('%s x %s' % (meta.get('hot_keys_' + s, '?'), s) for s in sizes)
        L.append('Objects: %s, read in rotation (rotate.lua). Per (size, connections) cell: %s '
                 'rounds; in each, every target is measured for %s s by wrk (%s threads at most), '
                 'in an order rotated every round; %s s of unrecorded load per target and size '
                 'first. Before measuring, each cache was read twice over every key, through the URLs '
                 'its wrk runs read (presigned ones for the signed bucketcache), and the second '
                 'pass had to be a hit for every key in its own header (X-Cache-Status, X-Cache, '
                 'x-bucketcache), and each bucketcache\'s cache_hits had to grow by the key count '
                 '(the signed one\'s GetObject 2xx too, with auth_failures 0); '
                 'sha256 of the first and last object of each size via each target matched the '
                 'source. GB are 10^9 bytes as counted by wrk (bodies and headers); latencies are '
                 'wrk\'s, of completed responses. **bucketcache** is the signed row (presigned URLs)%s.'
                 % (hk, meta.get('rounds'), meta.get('duration'), meta.get('wrk_threads'),
                    meta.get('warmup'),
                    ', bucketcache-anon the `--anonymous` one' if 'bucketcache-anon' in targets else ''))
        L.append('')
        for s in sizes:
            key = 'rps' if size_key(s) < (1 << 20) else 'gbps'
            L.append('### %s objects' % s)
            L.append('')
            rows = []
            gws = [g for g in GATEWAYS if g in targets]
            for c in conns:
                for t in targets:
                    if (s, c, t) not in cells:
                        continue
                    ratios = []
                    for g in gws:
                        ratio = '—'
                        a, b = cell_median(cells, s, c, g, key), cell_median(cells, s, c, t, key)
                        if t != g and a is not None and b:
                            per = round_ratios(cells, s, c, g, t, key)
                            r = a / b
                            bold = r < 1 and g == 'bucketcache' and t != 'bucketcache-anon'
                            ratio = '%s%.2fx%s (%s)' % ('**' if bold else '', r, '**' if bold else '',
                                                        ' '.join('%.2f' % x for x in per))
                        ratios.append(ratio)
                    rows.append([c, '**bucketcache** (signed)' if t == 'bucketcache' else t,
                                 fmt(cell_median(cells, s, c, t, 'rps'), '%.0f'),
                                 fmt(cell_median(cells, s, c, t, 'gbps'), '%.3f'),
                                 fmt(cell_median(cells, s, c, t, 'p50'), '%.2f'),
                                 fmt(cell_median(cells, s, c, t, 'p99'), '%.2f'),
                                 fmt(cell_median(cells, s, c, t, 'requests'), '%.0f')] + ratios)
            unit = 'req/s' if key == 'rps' else 'GB/s'
            L += md_table(['conns', 'target', 'req/s', 'GB/s', 'p50 ms', 'p99 ms', 'responses/run'] +
                          ['%s / target, %s (per round)' % (LABELS[g], unit) for g in gws],
                          rows, ['---:', ':---', '---:', '---:', '---:', '---:', '---:'] + [':---'] * len(gws))
            L.append('')
        for f, cap in (('hot_reqs.png', 'requests/s'), ('hot_gbps.png', 'GB/s'), ('hot_p99.png', 'p99 latency'),
                       ('hot_ratios.png', 'bucketcache / peer')):
            if f in made:
                L.append('![%s](%s)' % (cap, f))
                L.append('')
        lo = [x['load'] for v in cells.values() for x in v]
        if lo:
            L.append('Load average (1 min) at the start of the measured runs: median %.2f, max %.2f.'
                     % (med(lo), max(lo)))
            L.append('')
        for g in GATEWAYS:
            if not meta.get('hot_rss_kib_warm_' + g):
                continue
            L.append('%s, hot instance, after warming: VmRSS %.0f MiB holding %.0f MiB '
                     '(cache_bytes_held); after the measured phase: VmRSS %.0f MiB holding %.0f MiB.'
                     % (LABELS[g], int(meta['hot_rss_kib_warm_' + g]) / 1024.0,
                        int(meta.get('hot_bytes_held_warm_' + g, 0) or 0) / MiB,
                        int(meta.get('hot_rss_kib_end_' + g, 0) or 0) / 1024.0,
                        int(meta.get('hot_bytes_held_end_' + g, 0) or 0) / MiB))
            L.append('')
    if 'disk' in sections:
        L += disk_md(meta, dcells, dinfo, dcold)
    if cold:
        L.append('## Cold GETs (nothing cached)')
        L.append('')
        peers = [t for t in ('nginx', 'varnish') if any(k[2] == t for k in cold)]
        L.append('Per round, a fresh bucketcache (empty cache; `--anonymous`, read with plain URLs)%s. Throughput: one curl process reads every '
                 'key of a set of unique keys once, %s transfers at a time (`--parallel`; sets: %s); '
                 'bytes / wall time of the whole set. Time to first byte: one curl reading '
                 '%s other unique keys per size one after the other; TTFB = time_starttransfer - '
                 'time_pretransfer (request sent to first response byte). The same keys are read '
                 'directly from the upstream for the baseline%s; every GET through a cache had to be a '
                 'miss in its own header (x-bucketcache%s). The order of the targets rotates every round '
                 '(round 1: %s). '
                 '"static" is the origin nginx above; "s3rver" the reference S3 server (slow: it is '
                 'the bottleneck there, shown for information, no target%s).'
                 % (' and, for the static upstream, a fresh nginx proxy_cache and a fresh Varnish, each '
                    'with an empty cache of its own (see Setup), all in front of the same origin port'
                    if peers else '',
                    meta.get('cold_clients'), meta.get('cold_sizes'), meta.get('ttfb_keys'),
                    ' and through each cache: the key sets are shared, and cold for every cache because '
                    'each starts empty (the origin\'s page cache is warm, for every target alike)'
                    if peers else '',
                    ', X-Cache-Status, X-Cache' if peers else '',
                    ', '.join(t for t in ('bucketcache', 'direct', 'nginx', 'varnish')
                              if t in ('bucketcache', 'direct') or t in peers),
                    '; no peers' if peers else ''))
        L.append('')
        rows = []
        keys = sorted({(k[0], k[1]) for k in cold}, key=lambda k: (k[0] != 'static', size_key(k[1])))
        for u, s in keys:
            d = cold.get((u, s, 'direct'), {})
            td = med(d.get('ttfb', []))
            for t in COLD_TARGETS:
                x = cold.get((u, s, t))
                if not x:
                    continue
                g, tt = med(x.get('gbps', [])), med(x.get('ttfb', []))
                vs_d = vs_t = '—'
                if t != 'direct' and cold_ratio(cold, u, s, t, 'direct') is not None:
                    r = cold_ratio(cold, u, s, t, 'direct')
                    vs_d = '%.2fx (%s)' % (r, ' '.join('%.2f' % y for y in cold_round_ratios(cold, u, s, t, 'direct')))
                if t != 'bucketcache' and cold_ratio(cold, u, s, 'bucketcache', t) is not None:
                    r = cold_ratio(cold, u, s, 'bucketcache', t)
                    vs_t = '%s%.2fx%s (%s)' % ('**' if r < 1 else '', r, '**' if r < 1 else '', ' '.join(
                        '%.2f' % y for y in cold_round_ratios(cold, u, s, 'bucketcache', t)))
                rows.append([u, s, t if t != 'bucketcache' else '**bucketcache**', fmt(g, '%.3f'), vs_d, vs_t,
                             fmt(tt, '%.3f'),
                             fmt(tt - td if t != 'direct' and tt is not None and td is not None else None,
                                 '%+.3f'),
                             fmt(pct(x['ttfb'], 90) if x.get('ttfb') else None, '%.3f'),
                             len(x.get('gbps', []))])
        L += md_table(['upstream', 'size', 'target', 'GB/s', 'target / direct, GB/s (per round)',
                       'bucketcache / target, GB/s (per round)', 'TTFB ms (median)', 'added vs direct ms',
                       'TTFB p90 ms', 'rounds'], rows,
                      [':---', ':---', ':---', '---:', ':---', ':---', '---:', '---:', '---:', '---:'])
        L.append('')
        lines = cold_peer_lines(cold)
        if lines:
            L.append('What the established caches achieve on the same cold workload (informational, no '
                     'target; ratios of medians): whether a gap to direct is bucketcache\'s or any '
                     'cache\'s.')
            L.append('')
            for line in lines:
                L.append('- %s' % line)
            L.append('')
        if 'cold.png' in made:
            L.append('![cold GETs](cold.png)')
            L.append('')
    if soak:
        s = soak
        L.append('## Memory (bounded soak)')
        L.append('')
        L.append('A fresh bucketcache with `--anonymous --mem-size %s` (plain URLs); after %s s idle (the base), wrk (random.lua, '
                 '%s connections) GETs keys drawn at random from %s objects of %s (about %s x the '
                 'memory tier) for %s s; VmRSS (/proc/PID/status) and cache_bytes_held '
                 '(/_bucketcache/stats) sampled every %s s.'
                 % (meta.get('soak_mem'), '%d' % (2 * int(meta.get('soak_interval', '0')) + 1),
                    meta.get('soak_conns'), meta.get('soak_nkeys'), ' and '.join(meta.get('soak_sizes', '').split()),
                    meta.get('soak_factor'), meta.get('soak_seconds'), meta.get('soak_interval')))
        L.append('')
        L += md_table(['measure', 'value'], [
            ['base RSS (idle)', '%.1f MiB' % (s['base_rss'] / MiB)],
            ['cache full (held >= 90%% of %.0f MiB) at' % (s['limit'] / MiB),
             fmt(s['full_t'], '%.0f s')],
            ['RSS when full', fmt(s['rss_full'] / MiB if s['rss_full'] else None, '%.0f MiB')],
            ['RSS, last half (median; min..max)', '%.0f MiB; %.0f..%.0f MiB' % (
                s['rss_half_median'] / MiB, s['rss_half_min'] / MiB, s['rss_half_max'] / MiB)],
            ['cache_bytes_held, last half (median)', '%.0f MiB' % (s['held_half_median'] / MiB)],
            ['RSS drift over the last half (least squares)', '%+.1f MiB (%+.2f MiB/min)' % (
                s['drift'] / MiB, s['slope_mib_per_min'])],
            ['overhead: (RSS - base) / held - 1', fmt(100 * s['overhead'] if s['overhead'] is not None else None, '%.2f %%')],
            ['max RSS', '%.0f MiB' % (s['rss_max'] / MiB)],
            ['RSS after the load stopped', fmt(s['rss_after'] / MiB if s['rss_after'] else None, '%.0f MiB')],
            ['evictions during the load', '%d' % s['evictions']],
            ['load', ('%d GETs, %.0f/s, %.2f GB/s, p99 %.1f ms, %d errors' % (
                s['wrk']['requests'], s['wrk']['rps'], s['wrk']['gbps'], s['wrk']['p99'], s['wrk']['errors']))
             if s.get('wrk') else '—'],
        ], [':---', '---:'])
        L.append('')
        L.append('"Flat" means the least-squares drift of VmRSS over the last half of the load is within '
                 'max(1%% of --mem-size, 4 MiB) = %.1f MiB. cache_bytes_held is the daemon\'s own '
                 'account of what it holds (chunk bytes plus per-entry overhead and metadata), so the '
                 'overhead above is what the process uses beyond its own account.' % (s['flat_bound'] / MiB))
        L.append('')
        if 'soak_rss.png' in made:
            L.append('![memory soak](soak_rss.png)')
            L.append('')
    L.append('## Checks')
    L.append('')
    L.append('What the run verified about itself (a failed check is listed as an anomaly at the top):')
    L.append('')
    for c in checks:
        L.append('- %s' % c)
    for w in warnings:
        L.append('- WARNING: %s' % w)
    L.append('')
    L.append('## Raw data')
    L.append('')
    L.append('- [hot_runs.csv](hot_runs.csv): every measured wrk run (timestamps, load, requests, bytes, '
             'latencies in µs, errors); [hot_medians.csv](hot_medians.csv): medians per cell')
    L.append('- [cold_runs.csv](cold_runs.csv): cold throughput runs; [cold_xfers.csv](cold_xfers.csv): '
             'every cold transfer with curl\'s timings (seconds) and cache headers; '
             '[cold_peers.csv](cold_peers.csv): what the cold nginx and Varnish held after each round')
    L.append('- [soak_samples.csv](soak_samples.csv): the soak\'s samples')
    if 'disk' in sections:
        L.append('- [disk_runs.csv](disk_runs.csv): the disk section\'s measured wrk runs (page cache warm)%s'
                 % ('; [disk_cold.csv](disk_cold.csv): its page-cache-cold passes' if dcold else ''))
    L.append('- [summary.json](summary.json): the verdicts and medians; [report.txt](report.txt): the run\'s log')
    L.append('')
    with open(os.path.join(results, 'benchmarks.md'), 'w') as f:
        f.write('\n'.join(L))


def main(argv):
    if len(argv) >= 2 and argv[1] == 'mkobjs' and len(argv) == 5:
        return mkobjs(argv[2], argv[3], argv[4])
    if len(argv) >= 2 and argv[1] == 'sample' and len(argv) == 8:
        return sample(*argv[2:8])
    if len(argv) >= 2 and argv[1] == 'presign' and len(argv) == 11:
        return presign(*argv[2:11])
    if len(argv) >= 2 and argv[1] == 'report' and len(argv) == 4:
        return report(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
