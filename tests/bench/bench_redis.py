#!/usr/bin/python3
"""bench_redis.py — the data set, the reader and the report of bench_redis.sh.

  gen     writes the data set once: objects of log-uniform sizes between
          --min and --max bytes until --total bytes are reached, laid out
          BUCKET/ds/oNNNNN.bin under DIR/www (what a static nginx serves as
          an anonymous S3-like origin), pseudo-random content derived from
          (--seed, index) (the same bytes on every run), DIR/manifest.tsv
          ("key<TAB>size<TAB>crc32"), DIR/DONE last (an interrupted
          generation is redone, a complete one reused). --verify re-reads
          every object against the manifest (which also loads the set into
          the page cache). Prints "dir=.. objects=N bytes=.. min=.. ..".
  read    one epoch: every object of the manifest GET once from --endpoint
          (path-style, unsigned), --workers threads each on its own
          keep-alive connection (http.client), in one shuffled order
          (--seed: the same order for every run); each body read into a
          reused buffer, its size checked, and its crc32 against the manifest
          (--verify all; --verify size checks sizes only). Times the epoch
          (first request to last byte), and per GET the time to its response
          head and to its last byte. A progress line on stderr every 2 s.
          Writes JSON to --out; exits 1 when a GET failed or read wrong bytes.
  snap    a snapshot around an epoch: the gateway's /_bucketcache/stats,
          its minor page faults and per-thread CPU time, Redis's INFO, the
          delay proxy's stats, the CPU time of each --proc NAME=PID (with
          its children) and the machine's busy time (/proc/stat), as JSON.
  settle  waits until the gateway's lower-tier queue is empty
          (tiers.redis.queued 0) and Redis has received no SET for --quiet
          seconds (the tier's "writes" counts SETs accepted, not answered);
          writes what Redis then holds (keys, used_memory) as JSON.
  redis   one Redis command, its reply printed (PING, INFO, DBSIZE,
          FLUSHALL; RESP over a socket: no redis-cli needed).
  report  from the runs' read JSON, their snapshots and the fills: the runs
          side by side (medians over rounds, latency percentiles over every
          GET, counters and CPU per round), a table per round, the ratio
          A/B and what the counters say about where the time went; the
          table on stdout, Markdown to --md, one CSV row per round and run
          to --csv. Exits 1 when a check failed (B asked the origin, A's
          Redis writes failed or were dropped, an epoch read short).

Only the standard library: /usr/bin/python3 as Debian ships it.
"""
import argparse
import http.client
import json
import math
import os
import random
import resource
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request
import zlib

BUF = 1 << 20


# ---- gen ------------------------------------------------------------------

def key_of(i):
    return 'ds/o%05d.bin' % i


def sizes_of(total, lo, hi, seed):
    """Log-uniform sizes in [lo, hi] until their sum reaches total."""
    rng = random.Random('%d:sizes' % seed)
    out, s = [], 0
    while s < total:
        n = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        n = max(lo, min(hi, n))
        out.append(n)
        s += n
    return out


def content(seed, i, size):
    """Object i's bytes: pseudo-random (incompressible), 1 MiB at a time."""
    rng = random.Random('%d:%d' % (seed, i))
    parts, left = [], size
    while left > 0:
        n = min(left, BUF)
        parts.append(rng.randbytes(n))
        left -= n
    return b''.join(parts)


def load_manifest(path):
    rows = []
    with open(path) as f:
        for line in f:
            k, s, c = line.rstrip('\n').split('\t')
            rows.append((k, int(s), int(c)))
    return rows


def cmd_gen(a):
    www = os.path.join(a.dir, 'www', a.bucket)
    if not os.path.exists(os.path.join(a.dir, 'DONE')):
        sizes = sizes_of(a.total, a.min, a.max, a.seed)
        print('# generating %d objects, %d bytes, in %s' % (
            len(sizes), sum(sizes), a.dir), file=sys.stderr)
        os.makedirs(os.path.join(www, 'ds'), exist_ok=True)
        for p in (a.dir, os.path.join(a.dir, 'www'), www,
                  os.path.join(www, 'ds')):
            os.chmod(p, 0o755)
        tmpm = os.path.join(a.dir, 'manifest.tsv.tmp')
        with open(tmpm, 'w') as m:
            for i, size in enumerate(sizes):
                data = content(a.seed, i, size)
                path = os.path.join(www, key_of(i))
                with open(path + '.tmp', 'wb') as f:
                    f.write(data)
                os.chmod(path + '.tmp', 0o644)
                os.replace(path + '.tmp', path)
                m.write('%s\t%d\t%d\n' % (key_of(i), size, zlib.crc32(data)))
        os.replace(tmpm, os.path.join(a.dir, 'manifest.tsv'))
        with open(os.path.join(a.dir, 'DONE'), 'w') as f:
            f.write('total=%d min=%d max=%d seed=%d\n' % (
                a.total, a.min, a.max, a.seed))
    rows = load_manifest(os.path.join(a.dir, 'manifest.tsv'))
    if a.verify:
        bad = 0
        for k, s, c in rows:
            with open(os.path.join(www, k), 'rb') as f:
                data = f.read()
            if len(data) != s or zlib.crc32(data) != c:
                print('bench_redis.py: %s differs from the manifest' % k,
                      file=sys.stderr)
                bad += 1
        if bad:
            sys.exit('bench_redis.py: %d objects differ (remove %s)' % (
                bad, a.dir))
    sizes = sorted(s for _, s, _ in rows)
    print('dir=%s objects=%d bytes=%d min=%d median=%d mean=%d max=%d' % (
        a.dir, len(rows), sum(sizes), sizes[0], sizes[len(sizes) // 2],
        sum(sizes) // len(sizes), sizes[-1]))


# ---- read -----------------------------------------------------------------

class Epoch:
    def __init__(self, rows, order):
        self.rows = rows
        self.order = order
        self.next = 0
        self.lock = threading.Lock()
        self.done = 0
        self.bytes = 0
        self.errors = []
        self.recs = []          # (key, size, ttfb_s, total_s)

    def take(self):
        with self.lock:
            if self.next >= len(self.order) or self.errors:
                return None
            i = self.order[self.next]
            self.next += 1
            return i

    def record(self, rec):
        with self.lock:
            self.done += 1
            self.bytes += rec[1]
            self.recs.append(rec)

    def error(self, msg):
        with self.lock:
            self.errors.append(msg)


def worker(ep, host, port, bucket, verify, timeout):
    conn = None
    buf = bytearray(BUF)
    mv = memoryview(buf)
    while True:
        i = ep.take()
        if i is None:
            break
        key, size, crc = ep.rows[i]
        path = '/%s/%s' % (bucket, urllib.parse.quote(key))
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            t0 = time.monotonic()
            conn.request('GET', path)
            r = conn.getresponse()
            t1 = time.monotonic()
            got, c = 0, 0
            while True:
                n = r.readinto(mv)
                if not n:
                    break
                if verify:
                    c = zlib.crc32(mv[:n], c)
                got += n
            t2 = time.monotonic()
            if r.status != 200:
                ep.error('%s: HTTP %d' % (key, r.status))
            elif got != size:
                ep.error('%s: %d bytes, not %d' % (key, got, size))
            elif verify and c != crc:
                ep.error('%s: crc32 %08x, not %08x' % (key, c, crc))
            else:
                ep.record((key, size, t1 - t0, t2 - t0))
            if r.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            ep.error('%s: %s: %s' % (key, type(e).__name__, e))
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()


def pct(xs, p):
    """The p-th percentile (nearest rank) of sorted xs."""
    if not xs:
        return float('nan')
    k = max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))
    return xs[k]


def cmd_read(a):
    rows = load_manifest(a.manifest)
    order = list(range(len(rows)))
    random.Random('%d:order' % a.seed).shuffle(order)
    u = urllib.parse.urlsplit(a.endpoint)
    ep = Epoch(rows, order)
    total_bytes = sum(s for _, s, _ in rows)
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    threads = [threading.Thread(target=worker, args=(
        ep, u.hostname, u.port or 80, a.bucket, a.verify == 'all',
        a.timeout), daemon=True) for _ in range(a.workers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    last = t0
    while any(t.is_alive() for t in threads):
        threads[0].join(0.1) if threads[0].is_alive() else time.sleep(0.1)
        now = time.monotonic()
        if now - last >= 2.0:
            last = now
            print('# %s: %d/%d objects, %.0f/%.0f MiB, %.1f s' % (
                a.label, ep.done, len(rows), ep.bytes / 1048576.0,
                total_bytes / 1048576.0, now - t0), file=sys.stderr)
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    ttfb = sorted(r[2] for r in ep.recs)
    tot = sorted(r[3] for r in ep.recs)
    out = {
        'label': a.label,
        'endpoint': a.endpoint,
        'workers': a.workers,
        'verify': a.verify,
        'objects': len(rows),
        'objects_read': ep.done,
        'bytes': ep.bytes,
        'dataset_bytes': total_bytes,
        'wall_s': wall,
        'client_cpu_s': (ru1.ru_utime - ru0.ru_utime) +
        (ru1.ru_stime - ru0.ru_stime),
        'errors': ep.errors[:20],
        'nerrors': len(ep.errors),
        'ttfb_ms': {p: pct(ttfb, p) * 1000 for p in (50, 90, 99, 100)},
        'total_ms': {p: pct(tot, p) * 1000 for p in (50, 90, 99, 100)},
        'requests': [{'key': r[0], 'size': r[1], 'ttfb_ms': r[2] * 1000,
                      'total_ms': r[3] * 1000} for r in ep.recs],
    }
    tmp = a.out + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(out, f)
    os.replace(tmp, a.out)
    print('# %s: %d objects, %.1f MiB in %.2f s (%.1f MiB/s), %d errors' % (
        a.label, ep.done, ep.bytes / 1048576.0, wall,
        ep.bytes / 1048576.0 / wall if wall > 0 else 0, len(ep.errors)),
        file=sys.stderr)
    for e in ep.errors[:5]:
        print('bench_redis.py: %s: %s' % (a.label, e), file=sys.stderr)
    if ep.errors or ep.done != len(rows):
        sys.exit(1)


# ---- Redis (a few commands over RESP; no client library needed) ------------

def resp_read(f):
    line = f.readline()
    if not line.endswith(b'\r\n'):
        raise OSError('redis: connection closed')
    t, rest = line[:1], line[1:-2]
    if t == b'+':
        return rest.decode()
    if t == b'-':
        raise OSError('redis: ' + rest.decode())
    if t == b':':
        return int(rest)
    if t == b'$':
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode('latin-1')
    if t == b'*':
        return [resp_read(f) for _ in range(int(rest))]
    raise OSError('redis: bad reply %r' % line)


def redis_cmd(port, *args):
    with socket.create_connection(('127.0.0.1', port), timeout=30) as s:
        out = b'*%d\r\n' % len(args)
        for x in args:
            x = x.encode() if isinstance(x, str) else x
            out += b'$%d\r\n%s\r\n' % (len(x), x)
        s.sendall(out)
        with s.makefile('rb') as f:
            return resp_read(f)


def redis_info(port):
    """INFO everything as a dict; commandstats lines as 'cmdstat_X' dicts."""
    d = {}
    for line in redis_cmd(port, 'INFO', 'everything').splitlines():
        if not line or line.startswith('#') or ':' not in line:
            continue
        k, v = line.split(':', 1)
        if k.startswith('cmdstat_') or k.startswith('db'):
            d[k] = dict(kv.split('=', 1) for kv in v.split(','))
        else:
            d[k] = v
    return d


def cmdstat(info, cmd, field):
    return float(info.get('cmdstat_' + cmd, {}).get(field, 0))


# ---- snapshots: counters and CPU of everything a run involves --------------

TCK = os.sysconf('SC_CLK_TCK')


def proc_stat(pid):
    """(utime+stime seconds, minflt) of pid, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            f = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    # after the comm: state(0) ppid(1) ... minflt(7) ... utime(11) stime(12)
    return (int(f[11]) + int(f[12])) / TCK, int(f[7]), int(f[1])


def tree_cpu(pid):
    """CPU seconds of pid and its children (nginx's workers)."""
    kids = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            st = proc_stat(int(d))
            if st is not None:
                kids.setdefault(st[2], []).append(int(d))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        st = proc_stat(p)
        if st is not None:
            total += st[0]
        todo += kids.get(p, [])
    return total


def threads_cpu(pid):
    out = {}
    try:
        for t in os.listdir('/proc/%d/task' % pid):
            st = proc_stat_path('/proc/%d/task/%s/stat' % (pid, t))
            if st is not None:
                out[t] = st
    except OSError:
        pass
    return out


def proc_stat_path(path):
    try:
        with open(path) as f:
            f = f.read().rsplit(')', 1)[1].split()
        return (int(f[11]) + int(f[12])) / TCK
    except OSError:
        return None


def machine_busy():
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    # user nice system idle iowait irq softirq steal
    return (sum(v) - v[3] - v[4]) / TCK


def http_json(url):
    with urllib.request.urlopen(url, timeout=10) as f:
        return json.load(f)


def cmd_snap(a):
    procs = {}
    for spec in a.proc:
        name, _, pid = spec.partition('=')
        procs[name] = tree_cpu(int(pid))
    out = {
        'time': time.time(),
        'loadavg': open('/proc/loadavg').read().split()[:3],
        'machine_busy_s': machine_busy(),
        'procs_cpu_s': procs,
        'proxy': http_json(a.proxy + '/_delayproxy/stats'),
        'redis': redis_info(a.redis_port),
    }
    if a.gw:
        gst = proc_stat(a.gw_pid)
        out['gw'] = http_json(a.gw + '/_bucketcache/stats')
        out['gw_minflt'] = gst[1] if gst else 0
        out['gw_threads_cpu_s'] = threads_cpu(a.gw_pid)
    with open(a.out, 'w') as f:
        json.dump(out, f)


def cmd_settle(a):
    """Waits until the gateway's lower-tier queue is empty and Redis has
    seen no SET for --quiet seconds; prints what it waited for."""
    t0 = time.monotonic()
    last_sets, since = None, time.monotonic()
    while True:
        st = http_json(a.gw + '/_bucketcache/stats')
        rt = st.get('tiers', {}).get('redis', {})
        info = redis_info(a.redis_port)
        sets = cmdstat(info, 'set', 'calls')
        now = time.monotonic()
        if sets != last_sets or rt.get('queued', 0) != 0:
            last_sets, since = sets, now
        elif now - since >= a.quiet:
            break
        if now - t0 > a.timeout:
            sys.exit('bench_redis.py: the Redis writes did not settle in %g s '
                     '(queued %s, SETs %d)' % (a.timeout, rt.get('queued'), sets))
        time.sleep(0.1)
    out = {
        'settle_s': now - t0 - a.quiet,
        'queued': rt.get('queued', 0),
        'writes': rt.get('writes', 0),
        'write_failures': rt.get('write_failures', 0),
        'queue_drops': rt.get('queue_drops', 0),
        'rejects': rt.get('rejects', 0),
        'usage_bytes': rt.get('usage_bytes', 0),
        'sets': int(sets),
        'dbsize': redis_cmd(a.redis_port, 'DBSIZE'),
        'used_memory': int(info['used_memory']),
        'used_memory_dataset': int(info.get('used_memory_dataset', 0)),
        'used_memory_rss': int(info.get('used_memory_rss', 0)),
    }
    with open(a.out, 'w') as f:
        json.dump(out, f)
    print(' '.join('%s=%s' % (k, ('%.2f' % v) if isinstance(v, float) else v)
                   for k, v in out.items()))


def cmd_redis(a):
    r = redis_cmd(a.port, *a.args)
    print(r if not isinstance(r, list) else '\n'.join(map(str, r)))


# ---- report ---------------------------------------------------------------

def mib(b):
    return b / 1048576.0


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return float('nan')
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0


WHAT = {
    'A': 'fresh gateway, Redis empty: every chunk from the origin, '
         'written behind to Redis',
    'B': 'fresh gateway, the Redis A filled: every chunk from Redis',
    'C': 'fresh gateway without a Redis tier: every chunk from the origin '
         '(baseline)',
}


def run_facts(rd, before, after):
    """The numbers of one run: the reader's JSON rd, snapshots around it."""
    g0, g1 = before.get('gw', {}), after.get('gw', {})

    def c(k):
        return g1['counters'][k] - g0['counters'][k]

    def t(tier, k):
        t1 = g1.get('tiers', {}).get(tier)
        if t1 is None:
            return None
        return t1[k] - g0['tiers'][tier][k]

    def rcs(cmd, f):
        return cmdstat(after['redis'], cmd, f) - cmdstat(before['redis'], cmd, f)

    p0, p1 = before['procs_cpu_s'], after['procs_cpu_s']
    cpu = {k: p1[k] - p0.get(k, 0.0) for k in p1}
    th0, th1 = before.get('gw_threads_cpu_s', {}), after.get('gw_threads_cpu_s', {})
    busiest = max([th1[k] - th0.get(k, 0.0) for k in th1] or [0.0])
    ours = sum(cpu.values()) + rd['client_cpu_s']
    busy = after['machine_busy_s'] - before['machine_busy_s']
    return {
        'epoch_s': rd['wall_s'],
        'bytes': rd['bytes'],
        'objects': rd['objects_read'],
        'mib_s': mib(rd['bytes']) / rd['wall_s'],
        'origin_requests': after['proxy']['requests'] - before['proxy']['requests'],
        'origin_bytes': after['proxy']['resp_body_bytes'] - before['proxy']['resp_body_bytes'],
        'upstream_requests': c('upstream_requests'),
        'cache_misses': c('cache_misses'),
        'meta_lower_hits': c('cache_meta_lower_hits'),
        'mem_hits': t('memory', 'hits'),
        'redis_hits': t('redis', 'hits'),
        'redis_misses': t('redis', 'misses'),
        'redis_bytes_read': t('redis', 'bytes_read'),
        'redis_writes': t('redis', 'writes'),
        'redis_write_failures': t('redis', 'write_failures'),
        'redis_queue_drops': t('redis', 'queue_drops'),
        'redis_errors': t('redis', 'errors'),
        'redis_downs': t('redis', 'downs'),
        'redis_get_calls': rcs('get', 'calls'),
        'redis_get_busy_s': rcs('get', 'usec') / 1e6,
        'redis_set_calls': rcs('set', 'calls'),
        'redis_set_busy_s': rcs('set', 'usec') / 1e6,
        'gw_cpu_s': cpu.get('gateway', 0.0),
        'gw_busiest_thread_s': busiest,
        'gw_page_faults': after.get('gw_minflt', 0) - before.get('gw_minflt', 0),
        'redis_cpu_s': cpu.get('redis', 0.0),
        'proxy_cpu_s': cpu.get('proxy', 0.0),
        'origin_cpu_s': cpu.get('origin', 0.0),
        'client_cpu_s': rd['client_cpu_s'],
        'others_cpu_s': max(0.0, busy - ours),
        'machine_busy_s': busy,
        'load1': float(before['loadavg'][0]),
        'requests': rd['requests'],
    }


def cmd_report(a):
    """--run ROUND:NAME=READ.json,BEFORE.json,AFTER.json; --round
    ROUND=SETTLE.txt (the settle line and used_memory around the fill)."""
    runs = {}           # name -> [facts per round]
    per_round = {}      # round -> {name: facts}
    empty = {}          # round -> Redis's used_memory before A
    for spec in a.run:
        rn, _, files = spec.partition('=')
        rnd, _, name = rn.partition(':')
        rd, b, af = files.split(',')
        before = json.load(open(b))
        f = run_facts(json.load(open(rd)), before, json.load(open(af)))
        if name == 'A':
            empty[int(rnd)] = int(before['redis']['used_memory'])
        runs.setdefault(name, []).append(f)
        per_round.setdefault(int(rnd), {})[name] = f
    fills = {}
    for spec in a.fill or []:
        rnd, _, path = spec.partition('=')
        fills[int(rnd)] = json.load(open(path))
        if int(rnd) in empty:
            fills[int(rnd)]['used_memory_empty'] = empty[int(rnd)]
    ds_bytes = a.dataset_bytes
    names = [n for n in ('A', 'B', 'C') if n in runs]

    def agg(name, key, how=median):
        xs = [f[key] for f in runs[name] if f.get(key) is not None]
        return how(xs) if xs else None

    def lat(name, field, p, lo=0, hi=1 << 62):
        xs = sorted(r[field] for f in runs[name] for r in f['requests']
                    if lo <= r['size'] < hi)
        return pct(xs, p) if xs else None

    def mean(xs):
        return sum(xs) / len(xs)

    rows = []

    def row(title, fn, fmt):
        cells = []
        for n in names:
            try:
                v = fn(n)
                cells.append('n/a' if v is None else fmt % v)
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append('n/a')
        rows.append([title] + cells)

    row('epoch s (median)', lambda n: agg(n, 'epoch_s'), '%.2f')
    row('MiB/s (median)', lambda n: agg(n, 'mib_s'), '%.1f')
    row('objects/s (median)', lambda n: median(
        [f['objects'] / f['epoch_s'] for f in runs[n]]), '%.1f')
    row('epoch s per round', lambda n: ' '.join(
        '%.2f' % f['epoch_s'] for f in runs[n]), '%s')
    for field, label in (('ttfb_ms', 'GET head'), ('total_ms', 'GET whole')):
        for p in (50, 90, 99):
            row('%s p%d ms' % (label, p),
                lambda n, f=field, p=p: lat(n, f, p), '%.1f')
    small = 1 << 20
    row('GET whole p50 ms, < 1 MiB',
        lambda n: lat(n, 'total_ms', 50, 0, small), '%.1f')
    row('GET whole p50 ms, >= 8 MiB',
        lambda n: lat(n, 'total_ms', 50, 8 << 20), '%.1f')
    row('GET whole max ms', lambda n: lat(n, 'total_ms', 100), '%.1f')
    # counters: the mean per round (they differ little between rounds)
    for key, title, fmt in (
            ('origin_requests', 'origin requests (proxy)', '%.0f'),
            ('origin_bytes', 'origin MiB (proxy)', None),
            ('upstream_requests', 'gateway upstream_requests', '%.0f'),
            ('meta_lower_hits', 'metadata from Redis', '%.0f'),
            ('mem_hits', 'memory tier hits', '%.0f'),
            ('redis_hits', 'redis tier hits', '%.0f'),
            ('redis_misses', 'redis tier misses', '%.0f'),
            ('redis_bytes_read', 'redis tier MiB read', None),
            ('redis_writes', 'redis tier writes', '%.0f'),
            ('redis_write_failures', 'redis write_failures', '%.0f'),
            ('redis_queue_drops', 'redis queue_drops', '%.0f'),
            ('redis_errors', 'redis errors', '%.0f'),
            ('redis_downs', 'redis downs', '%.0f'),
            ('redis_get_calls', 'Redis GET calls', '%.0f'),
            ('redis_get_busy_s', 'Redis busy in GET s', '%.2f'),
            ('redis_set_calls', 'Redis SET calls (epoch)', '%.0f'),
            ('redis_set_busy_s', 'Redis busy in SET s (epoch)', '%.2f'),
            ('gw_cpu_s', 'gateway CPU s', '%.2f'),
            ('gw_busiest_thread_s', 'gateway busiest thread CPU s', '%.2f'),
            ('gw_page_faults', 'gateway page faults (minor)', '%.0f'),
            ('redis_cpu_s', 'redis-server CPU s', '%.2f'),
            ('proxy_cpu_s', 'delay proxy CPU s', '%.2f'),
            ('origin_cpu_s', 'origin nginx CPU s', '%.2f'),
            ('client_cpu_s', 'reader CPU s', '%.2f'),
            ('others_cpu_s', 'other processes CPU s', '%.2f'),
            ('load1', 'load avg (1 min) at start', '%.2f')):
        if fmt is None:
            row(title, lambda n, k=key: mib(agg(n, k, mean)), '%.1f')
        else:
            row(title, lambda n, k=key: agg(n, k, mean), fmt)
    head = [''] + ['%s: %s' % (n, {'A': 'origin', 'B': 'Redis',
                                   'C': 'origin, no Redis'}[n]) for n in names]

    # per round
    rrows = []
    for rnd in sorted(per_round):
        fr = per_round[rnd]
        A, B, C = fr.get('A'), fr.get('B'), fr.get('C')
        fl = fills.get(rnd, {})
        cells = [str(rnd),
                 '%.2f' % A['epoch_s'] if A else 'n/a',
                 '%.2f' % B['epoch_s'] if B else 'n/a',
                 '%.2f' % C['epoch_s'] if C else 'n/a',
                 '%.2fx' % (A['epoch_s'] / B['epoch_s']) if A and B else 'n/a',
                 '%.2fx' % (C['epoch_s'] / B['epoch_s']) if C and B else 'n/a',
                 '%d' % B['origin_requests'] if B else 'n/a',
                 '%.2f' % fl['settle_s'] if 'settle_s' in fl else 'n/a',
                 '%d' % fl['dbsize'] if 'dbsize' in fl else 'n/a',
                 '%.4fx' % ((fl['used_memory'] - fl['used_memory_empty']) / ds_bytes)
                 if 'used_memory' in fl else 'n/a',
                 '%.4fx' % (fl['used_memory'] / ds_bytes) if 'used_memory' in fl else 'n/a']
        rrows.append(cells)
    rhead = ['round', 'A s', 'B s', 'C s', 'A/B', 'C/B', 'B origin req',
             'settle s', 'Redis keys', 'used_memory growth / data',
             'used_memory / data']

    ratios = [per_round[r]['A']['epoch_s'] / per_round[r]['B']['epoch_s']
              for r in sorted(per_round) if 'A' in per_round[r] and 'B' in per_round[r]]
    verdict = []
    checks = []
    if ratios:
        Am, Bm = agg('A', 'epoch_s'), agg('B', 'epoch_s')
        verdict.append(
            '**B\'s cold epoch over Redis vs A\'s cold epoch over the origin '
            '(+%s ms per request): %.2f s vs %.2f s (medians over %d rounds): '
            'A/B = %.2fx (median of the per-round ratios %s); throughput %.1f '
            'vs %.1f MiB/s; B made %d origin requests in all**' % (
                a.delay_ms, Bm, Am, len(ratios), median(ratios),
                ' '.join('%.2fx' % x for x in ratios), agg('B', 'mib_s'),
                agg('A', 'mib_s'),
                sum(f['origin_requests'] for f in runs['B'])))
        nb = sum(f['origin_requests'] for f in runs['B'])
        if nb != 0:
            checks.append('B made %d origin requests (want 0): it did not '
                          'read everything from Redis' % nb)
        for f in runs['A']:
            if f['redis_write_failures'] or f['redis_queue_drops']:
                checks.append('A: %d Redis write failures, %d queue drops' % (
                    f['redis_write_failures'], f['redis_queue_drops']))
    if 'C' in runs and 'A' in runs:
        verdict.append('A (origin, writing behind to Redis) vs C (origin, no '
                       'Redis tier): %.2f s vs %.2f s (%.2fx); C/B = %.2fx' % (
                           agg('A', 'epoch_s'), agg('C', 'epoch_s'),
                           agg('A', 'epoch_s') / agg('C', 'epoch_s'),
                           agg('C', 'epoch_s') / agg('B', 'epoch_s')))
    # where the time went, from the counters (medians/means over rounds)
    notes = []
    if 'B' in runs:
        Bs = agg('B', 'epoch_s')
        pages = ds_bytes / 4096.0
        notes.append(
            'Redis itself: busy %.2f s serving B\'s %.0f GETs (INFO '
            'commandstats), redis-server %.2f s CPU, over B\'s %.2f s '
            'epoch: its single thread was %.0f%% busy.' % (
                agg('B', 'redis_get_busy_s', mean),
                agg('B', 'redis_get_calls', mean),
                agg('B', 'redis_cpu_s', mean), Bs,
                100 * agg('B', 'redis_cpu_s', mean) / Bs))
        for n in names:
            notes.append(
                '%s\'s gateway: %.2f s CPU, its busiest thread %.2f s (%.0f%% '
                'of the epoch), %.0f minor page faults (%.2f per 4 KiB page '
                'of data).' % (
                    n, agg(n, 'gw_cpu_s', mean),
                    agg(n, 'gw_busiest_thread_s', mean),
                    100 * agg(n, 'gw_busiest_thread_s', mean) /
                    agg(n, 'epoch_s'), agg(n, 'gw_page_faults', mean),
                    agg(n, 'gw_page_faults', mean) / pages))
        notes.append(
            'The machine (%d CPUs): other processes than ours used %s s '
            'CPU during the epochs (%s).' % (
                os.cpu_count(), ' / '.join(
                    '%.1f' % agg(n, 'others_cpu_s', mean) for n in names),
                ' / '.join(names)))
    for n in names:
        bad = [f for f in runs[n] if f['objects'] != a.objects or
               f['bytes'] != ds_bytes]
        if bad:
            checks.append('%s: an epoch read %d objects / %d bytes, not %d / %d'
                          % (n, bad[0]['objects'], bad[0]['bytes'], a.objects,
                             ds_bytes))

    def table(head, rows, md):
        w = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        out = []
        if md:
            out.append('| ' + ' | '.join(h.ljust(x) for h, x in zip(head, w)) + ' |')
            out.append('|' + '|'.join([':' + '-' * (w[0] + 1)] +
                                      ['-' * (x + 1) + ':' for x in w[1:]]) + '|')
            for r in rows:
                out.append('| ' + ' | '.join([r[0].ljust(w[0])] + [
                    c.rjust(x) for c, x in zip(r[1:], w[1:])]) + ' |')
        else:
            out.append('  '.join([head[0].ljust(w[0])] + [
                h.rjust(x) for h, x in zip(head[1:], w[1:])]))
            out.append('  '.join('-' * x for x in w))
            for r in rows:
                out.append('  '.join([r[0].ljust(w[0])] + [
                    c.rjust(x) for c, x in zip(r[1:], w[1:])]))
        return '\n'.join(out)

    print(table(head, rows, False))
    print()
    print(table(rhead, rrows, False))
    print()
    for v in verdict:
        print(v.replace('**', ''))
    for v in notes:
        print(v)
    for c in checks:
        print('CHECK FAILED: ' + c)
    if a.md:
        with open(a.md, 'w') as f:
            for v in verdict:
                f.write(v + '\n\n')
            for c in checks:
                f.write('**CHECK FAILED: %s**\n\n' % c)
            if notes:
                f.write('Where the time went (from the counters; means per '
                        'round):\n\n')
                for v in notes:
                    f.write('- ' + v + '\n')
                f.write('\n')
            f.write('Per round (Redis flushed before each; used_memory after '
                    'the fill, A\'s writes landed, against the data set\'s '
                    '%d bytes):\n\n' % ds_bytes)
            f.write(table(rhead, rrows, True) + '\n\n')
            f.write('The runs side by side (epoch: median over rounds; '
                    'latencies: every GET of every round; counters and CPU: '
                    'mean per round):\n\n')
            f.write(table(head, rows, True) + '\n')
    if a.csv:
        cols = ['round', 'run', 'epoch_s', 'mib_s', 'objects', 'bytes',
                'ttfb_p50_ms', 'ttfb_p90_ms', 'ttfb_p99_ms', 'total_p50_ms',
                'total_p90_ms', 'total_p99_ms', 'total_max_ms',
                'origin_requests', 'origin_bytes', 'upstream_requests',
                'meta_lower_hits', 'mem_hits', 'redis_hits', 'redis_misses',
                'redis_bytes_read', 'redis_writes', 'redis_write_failures',
                'redis_queue_drops', 'redis_errors', 'redis_downs',
                'redis_get_calls', 'redis_get_busy_s', 'redis_set_calls',
                'redis_set_busy_s', 'gw_cpu_s', 'gw_busiest_thread_s',
                'gw_page_faults', 'redis_cpu_s', 'proxy_cpu_s',
                'origin_cpu_s', 'client_cpu_s', 'others_cpu_s', 'load1',
                'settle_s', 'redis_dbsize', 'redis_used_memory_empty',
                'redis_used_memory_filled']
        with open(a.csv, 'w') as f:
            f.write(','.join(cols) + '\n')
            for rnd in sorted(per_round):
                fl = fills.get(rnd, {})
                for n in names:
                    r = per_round[rnd].get(n)
                    if r is None:
                        continue
                    tt = sorted(x['ttfb_ms'] for x in r['requests'])
                    tw = sorted(x['total_ms'] for x in r['requests'])
                    v = [rnd, n, r['epoch_s'], r['mib_s'], r['objects'],
                         r['bytes'], pct(tt, 50), pct(tt, 90), pct(tt, 99),
                         pct(tw, 50), pct(tw, 90), pct(tw, 99), pct(tw, 100)]
                    v += [r[k] for k in cols[13:39]]
                    v += [fl.get('settle_s', ''), fl.get('dbsize', ''),
                          fl.get('used_memory_empty', ''),
                          fl.get('used_memory', '')] if n == 'A' else [''] * 4
                    f.write(','.join(
                        ('%.3f' % x) if isinstance(x, float) else
                        ('' if x is None else str(x)) for x in v) + '\n')
    if checks:
        sys.exit(1)


def size_arg(s):
    m = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
    s = s.strip().upper()
    u = s[-1] if s and s[-1] in 'KMG' else ''
    return int(float(s[:-1] if u else s) * m[u])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    g = sub.add_parser('gen')
    g.add_argument('--dir', required=True)
    g.add_argument('--bucket', required=True)
    g.add_argument('--total', type=size_arg, required=True)
    g.add_argument('--min', type=size_arg, required=True)
    g.add_argument('--max', type=size_arg, required=True)
    g.add_argument('--seed', type=int, default=1)
    g.add_argument('--verify', action='store_true')
    r = sub.add_parser('read')
    r.add_argument('--endpoint', required=True)
    r.add_argument('--bucket', required=True)
    r.add_argument('--manifest', required=True)
    r.add_argument('--label', required=True)
    r.add_argument('--out', required=True)
    r.add_argument('--workers', type=int, default=8)
    r.add_argument('--seed', type=int, default=1)
    r.add_argument('--verify', choices=('all', 'size'), default='all')
    r.add_argument('--timeout', type=float, default=120.0)
    n = sub.add_parser('snap')
    n.add_argument('--out', required=True)
    n.add_argument('--proxy', required=True)
    n.add_argument('--redis-port', type=int, required=True)
    n.add_argument('--proc', action='append', default=[])
    n.add_argument('--gw')
    n.add_argument('--gw-pid', type=int)
    t = sub.add_parser('settle')
    t.add_argument('--gw', required=True)
    t.add_argument('--redis-port', type=int, required=True)
    t.add_argument('--out', required=True)
    t.add_argument('--quiet', type=float, default=1.0)
    t.add_argument('--timeout', type=float, default=120.0)
    c = sub.add_parser('redis')
    c.add_argument('--port', type=int, required=True)
    c.add_argument('args', nargs='+')
    p = sub.add_parser('report')
    p.add_argument('--run', action='append', required=True)
    p.add_argument('--fill', action='append')
    p.add_argument('--dataset-bytes', type=int, required=True)
    p.add_argument('--objects', type=int, required=True)
    p.add_argument('--delay-ms', required=True)
    p.add_argument('--md')
    p.add_argument('--csv')
    a = ap.parse_args()
    if a.cmd == 'gen':
        if not (1 <= a.min <= a.max) or a.total < 1:
            sys.exit('bench_redis.py: need 1 <= --min <= --max, --total >= 1')
        cmd_gen(a)
    else:
        {'read': cmd_read, 'snap': cmd_snap, 'settle': cmd_settle,
         'redis': cmd_redis, 'report': cmd_report}[a.cmd](a)


if __name__ == '__main__':
    main()
