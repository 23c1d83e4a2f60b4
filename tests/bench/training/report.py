#!/usr/bin/python3
"""
report.py -- turns bench_training.sh's per-system loader results into the
table of the training benchmark: a Markdown report, a CSV and (when
matplotlib is there) a PNG plot of the epoch times.

Inputs: one --run LABEL=FILE per system (loader.py's JSON: epochs and
counter snapshots taken between epochs), --nginx-log LABEL=FILE for each
nginx system (its access log, in bench_training.sh's log_format "train";
a bare FILE is the "nginx" system's), --cap-for LABEL=BYTES where a
system's cache is not --cap bytes (the disk systems: the cache-held column
is read against it), and --header FILE (preformatted text: machine,
versions, command, cache configs) that goes at the top of the report.

Per system and epoch:
  epoch s, data wait s      from the loader;
  hit ratio                 the system's own view: bucketcache's
                            /_bucketcache/stats deltas, hits / (hits +
                            misses + partial hits); nginx's access log,
                            $upstream_cache_status HIT / all requests;
                            direct 0;
  upstream MB (system)      bucketcache upstream_bytes_in delta (bodies);
                            nginx $upstream_bytes_received (heads too);
                            direct: the bytes the loader read;
  upstream MB / reqs (proxy) the delay proxy's counters: response body
                            bytes and requests (GET / HEAD) it forwarded,
                            the ground truth, the same for every system.
  cache held peak / mean   what the cache held while the epoch ran
                            (loader.py's sampler): bucketcache
                            cache_bytes_held, nginx bytes on disk under its
                            cache dir; in MB and % of the cap;
Cache models (--manifest, --cap): the recorded index order of each epoch
replayed through an LRU of --cap bytes (object sizes, no overhead) and
through "fill once, never evict" (admit until full, then keep): what LRU
should give at this cap, and what a policy that keeps a fixed part of the
data set would.
Epoch 1 and epochs 2+ (issue 25): per system, epoch 1 (cold; with plans
posted before it for bucketcache-plans) on its own row and epochs 2+
together: epoch s, data wait s, hit ratio, and the ratios to direct (the
baseline: its time / the system's; how much less data wait) and to nginx
(the peer).
Targets: issue 11's (bucketcache-auto, bucketcache-plans, prefetch),
issue 12's (bucketcache-disk: hit ratio epochs 2-3 >= 0.98, epochs 2+
time <= nginx-disk's) and issue 25's (bucketcache-plans' epoch-1 data
wait >= 80% below direct's), PASS, MISS or n/a (a system not run).
--sample LABEL=FILE: bench_sidecar.py's sampler of a gateway (VmRSS, held
bytes against the bound), printed per system. --summary FILE: the epoch-1
and epochs-2+ numbers per system and the samplers' results as JSON (for
bench_sidecar.sh).
Checks (printed, and "CHECK FAILED" lines in the report; exit status 1):
every epoch read every object once with no error, the epoch's index order
is the same for every system, the system's upstream bytes agree with the
proxy's within 5% (nginx: heads included).

MB = 10^6 bytes.
"""
import argparse
import csv
import json
import sys
from collections import OrderedDict

CSV_FIELDS = [
    'system', 'job', 'epoch', 'epoch_s', 'data_wait_s', 'compute_s', 'wait_pct', 'items',
    'items_per_s', 'read_mb', 'read_mb_per_s', 'hit_ratio', 'hits', 'misses',
    'upstream_mb_system', 'upstream_mb_proxy', 'proxy_requests', 'proxy_gets',
    'proxy_heads', 'prefetch_issued', 'prefetch_used', 'prefetch_wasted', 'prefetch_late',
    'prefetch_mb', 'revalidations', 'evictions', 'held_peak_mb', 'held_mean_mb',
    'get_p50_ms', 'get_p90_ms', 'get_p99_ms', 'errors', 'retries', 'order_sha256',
]


def counters(snap):
    return snap.get('bc', {}).get('counters', {})


def nginx_lines(path, start, end):
    """Parses the access log lines between two byte offsets."""
    out = []
    with open(path, 'rb') as f:
        f.seek(start)
        data = f.read(max(0, end - start))
    for raw in data.decode('latin-1').splitlines():
        p = raw.split(' ')
        if len(p) < 5:
            continue
        # $msec $status $upstream_cache_status $upstream_bytes_received
        # $body_bytes_sent $request_time $http_x_bucketcache_job ...
        ub = 0
        for x in p[3].split(','):
            x = x.strip()
            if x.isdigit():
                ub += int(x)
        out.append({'status': p[1], 'cache': p[2], 'up_bytes': ub,
                    'job': p[6] if len(p) > 6 else '-'})
    return out


def delta(c0, c1, k):
    return c1.get(k, 0) - c0.get(k, 0)


def base_row(label, job, ep):
    return {
        'system': label,
        'job': job,
        'epoch': ep['epoch'],
        'epoch_s': ep['time_s'],
        'data_wait_s': ep['wait_s'],
        'first_wait_s': ep.get('first_batch_wait_s', 0.0),
        'compute_s': ep.get('compute_s', 0.0),
        'wait_pct': 100.0 * ep['wait_s'] / ep['time_s'] if ep['time_s'] else 0,
        'items': ep['items'],
        'items_per_s': ep['items'] / ep['time_s'] if ep['time_s'] else 0,
        'read_mb': ep['bytes'] / 1e6,
        'read_mb_per_s': ep['bytes'] / 1e6 / ep['time_s'] if ep['time_s'] else 0,
        'upstream_mb_proxy': '',
        'proxy_requests': '',
        'proxy_gets': '',
        'proxy_heads': '',
        'upstream_mb_system': '',
        'revalidations': '',
        'evictions': '',
        'prefetch_issued': '',
        'prefetch_used': '',
        'prefetch_wasted': '',
        'prefetch_late': '',
        'prefetch_mb': '',
        'get_p50_ms': ep['lat_p50_ms'],
        'get_p90_ms': ep['lat_p90_ms'],
        'get_p99_ms': ep['lat_p99_ms'],
        'errors': ep['errors'],
        'retries': ep['retries'],
        'order_sha256': ep['order_sha256'],
        'held_peak_mb': (ep['occupancy_peak'] / 1e6
                         if ep.get('occupancy_peak') is not None else ''),
        'held_mean_mb': (ep['occupancy_mean'] / 1e6
                         if ep.get('occupancy_mean') is not None else ''),
    }


def add_system_counters(r, s0, s1, nginx_log, label, items, read_bytes):
    """The whole system's counters between snapshots s0 and s1: the delay
    proxy's, bucketcache's totals or nginx's log lines; hit ratio too."""
    p0, p1 = s0.get('proxy', {}), s1.get('proxy', {})
    pm0, pm1 = p0.get('by_method', {}), p1.get('by_method', {})
    r['upstream_mb_proxy'] = delta(p0, p1, 'resp_body_bytes') / 1e6
    r['proxy_requests'] = delta(p0, p1, 'requests')
    r['proxy_gets'] = delta(pm0, pm1, 'GET')
    r['proxy_heads'] = delta(pm0, pm1, 'HEAD')
    if 'bc' in s1:
        c0, c1 = counters(s0), counters(s1)
        d = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
        looked = d['cache_hits'] + d['cache_misses'] + d['cache_partial_hits']
        r['hits'] = d['cache_hits']
        r['misses'] = d['cache_misses'] + d['cache_partial_hits']
        r['hit_ratio'] = d['cache_hits'] / looked if looked else 0.0
        r['upstream_mb_system'] = d['upstream_bytes_in'] / 1e6
        r['revalidations'] = d['cache_revalidations']
        r['evictions'] = d['cache_evictions']
        for k in ('issued', 'used', 'wasted', 'late'):
            r['prefetch_' + k] = d.get('prefetch_' + k, 0)
        r['prefetch_mb'] = d.get('prefetch_bytes', 0) / 1e6
        r['_bc_held'] = c1.get('cache_bytes_held', 0)
        r['_bc_limit'] = c1.get('cache_bytes_limit', 0)
        r['_bc_partial'] = d['cache_partial_hits']
        r['_bc_up_requests'] = d['upstream_requests']
        r['_bc_up_errors'] = d['upstream_errors']
        t0, t1 = s0['bc'].get('tiers', {}), s1['bc'].get('tiers', {})
        if 'disk' in t1:
            td = {'%s_%s' % (tr, k): t1.get(tr, {}).get(k, 0) - t0.get(tr, {}).get(k, 0)
                  for tr in ('memory', 'disk') for k in ('hits', 'misses', 'writes', 'queue_drops',
                                                         'write_failures', 'corrupt')}
            td['sendfile'] = d.get('cache_disk_sendfile', 0)
            td['bytes_disk'] = d.get('cache_bytes_disk', 0)
            td['disk_chunks'] = t1['disk'].get('chunks', 0)
            td['disk_usage'] = t1['disk'].get('usage_bytes', 0)
            td['disk_capacity'] = t1['disk'].get('capacity_bytes', 0)
            r['_tiers'] = td
    elif 'nginx_log_size' in s1 and nginx_log:
        ls = nginx_lines(nginx_log, s0['nginx_log_size'], s1['nginx_log_size'])
        hits = sum(1 for x in ls if x['cache'] == 'HIT')
        r['hits'] = hits
        r['misses'] = len(ls) - hits
        r['hit_ratio'] = hits / len(ls) if ls else 0.0
        r['upstream_mb_system'] = sum(x['up_bytes'] for x in ls) / 1e6
        r['_nginx_lines'] = len(ls)
        r['_nginx_status'] = {}
        for x in ls:
            k = '%s %s' % (x['status'], x['cache'])
            r['_nginx_status'][k] = r['_nginx_status'].get(k, 0) + 1
    else:
        r['hits'] = 0
        r['misses'] = items
        r['hit_ratio'] = 0.0
        r['upstream_mb_system'] = read_bytes / 1e6


def add_job_counters(r, s0, s1, nginx_log, job, label):
    """One job's own view, when several jobs share the system: bucketcache's
    per-job counters, nginx's log lines of the job's header; direct reads
    everything from upstream."""
    if 'bc' in s1:
        j0 = s0.get('bc', {}).get('jobs', {}).get(job, {})
        j1 = s1['bc'].get('jobs', {}).get(job)
        if j1 is None:
            r['hits'] = r['misses'] = 0
            r['hit_ratio'] = ''
            r['_note'] = 'job %s not in /_bucketcache/stats "jobs"' % job
            return
        h = delta(j0, j1, 'cache_hits')
        m = delta(j0, j1, 'cache_misses') + delta(j0, j1, 'cache_partial_hits')
        r['hits'], r['misses'] = h, m
        r['hit_ratio'] = h / (h + m) if h + m else 0.0
        r['job_wait_s'] = delta(j0, j1, 'wait_us') / 1e6
        for k in ('used', 'wasted'):     # per-job prefetch counters, if any
            if 'prefetch_' + k in j1:
                r['prefetch_' + k] = delta(j0, j1, 'prefetch_' + k)
    elif 'nginx_log_size' in s1 and nginx_log:
        ls = [x for x in nginx_lines(nginx_log, s0['nginx_log_size'], s1['nginx_log_size'])
              if x['job'] == job]
        hits = sum(1 for x in ls if x['cache'] == 'HIT')
        r['hits'], r['misses'] = hits, len(ls) - hits
        r['hit_ratio'] = hits / len(ls) if ls else 0.0
    else:
        r['hits'], r['misses'], r['hit_ratio'] = 0, r['items'], 0.0
        r['upstream_mb_system'] = r['read_mb']


def rows_for(label, jobs, nginx_log):
    """Rows of one system: per job and epoch, and with several jobs an
    "all" row per epoch (the jobs' epochs are aligned by the loaders'
    barrier, so the first job's snapshots bracket every job's epoch)."""
    rows = []
    multi = len(jobs) > 1
    for jn, run in enumerate(jobs, 1):
        snaps = run['snapshots']
        for i, ep in enumerate(run['epochs']):
            r = base_row(label, 'j%d' % jn, ep)
            if multi:
                add_job_counters(r, snaps[i], snaps[i + 1], nginx_log,
                                 run.get('job') or '', label)
            else:
                add_system_counters(r, snaps[i], snaps[i + 1], nginx_log, label,
                                    ep['items'], ep['bytes'])
            rows.append(r)
    if multi:
        first = jobs[0]
        for i in range(len(first['epochs'])):
            per = [r for r in rows if r['epoch'] == i + 1]
            eps = [run['epochs'][i] for run in jobs if i < len(run['epochs'])]
            t = max(e['time_s'] for e in eps)
            items = sum(e['items'] for e in eps)
            nbytes = sum(e['bytes'] for e in eps)
            a = base_row(label, 'all', dict(first['epochs'][i], time_s=t))
            a.update({
                'data_wait_s': sum(e['wait_s'] for e in eps),
                'compute_s': sum(e.get('compute_s', 0.0) for e in eps),
                'items': items,
                'items_per_s': items / t if t else 0,
                'read_mb': nbytes / 1e6,
                'read_mb_per_s': nbytes / 1e6 / t if t else 0,
                'errors': sum(e['errors'] for e in eps),
                'retries': sum(e['retries'] for e in eps),
                'order_sha256': '',
            })
            a['wait_pct'] = 100.0 * a['data_wait_s'] / (t * len(eps)) if t else 0
            add_system_counters(a, first['snapshots'][i], first['snapshots'][i + 1],
                                nginx_log, label, items, nbytes)
            if all(r['hit_ratio'] != '' for r in per):
                h = sum(r['hits'] for r in per)
                m = sum(r['misses'] for r in per)
                a['hits'], a['misses'] = h, m
                a['hit_ratio'] = h / (h + m) if h + m else 0.0
            rows.append(a)
    return rows


def fmt_held(r, cap):
    if r['held_peak_mb'] == '':
        return '-'
    if not cap:
        return '%.0f / %.0f' % (r['held_peak_mb'], r['held_mean_mb'])
    return '%.0f / %.0f (%.0f%% / %.0f%%)' % (
        r['held_peak_mb'], r['held_mean_mb'],
        100.0 * r['held_peak_mb'] * 1e6 / cap, 100.0 * r['held_mean_mb'] * 1e6 / cap)


def num(v, f):
    return '-' if v == '' or v is None else f % v


def fmt_row(r, cap):
    if r['proxy_requests'] == '':
        reqs = '-'
    else:
        reqs = '%d (%d GET, %d HEAD)' % (r['proxy_requests'], r['proxy_gets'],
                                        r['proxy_heads'])
    if r['prefetch_used'] == '' and r['prefetch_wasted'] == '':
        pf = '-'
    else:
        pf = '%s / %s' % (num(r['prefetch_used'], '%d'), num(r['prefetch_wasted'], '%d'))
    return ('| %s | %s | %d | %.1f | %.1f | %.0f%% | %.0f | %s | %s | %s | %s | %s '
            '| %s | %s | %.1f / %.1f | %d |' % (
                r['system'], r['job'], r['epoch'], r['epoch_s'], r['data_wait_s'],
                r['wait_pct'], r['items_per_s'], num(r['hit_ratio'], '%.2f'),
                num(r['upstream_mb_system'], '%.1f'), num(r['upstream_mb_proxy'], '%.1f'),
                reqs, pf, num(r['revalidations'], '%d'), fmt_held(r, cap),
                r['get_p50_ms'], r['get_p99_ms'], r['errors']))


def interleave(orders_per_job):
    """Per epoch, the jobs' orders merged one read of each job in turn."""
    out = []
    for e in range(min(len(o) for o in orders_per_job)):
        seqs = [o[e] for o in orders_per_job]
        m = []
        for k in range(max(len(x) for x in seqs)):
            for x in seqs:
                if k < len(x):
                    m.append(x[k])
        out.append(m)
    return out


def models(orders, sizes, cap):
    """Per epoch: (LRU hit ratio, fill-once hit ratio) for the orders."""
    lru = OrderedDict()
    held = 0
    kept = set()
    kept_bytes = 0
    out = []
    for order in orders:
        lh = fh = 0
        for i in order:
            if i in lru:
                lh += 1
                lru.move_to_end(i)
            else:
                lru[i] = sizes[i]
                held += sizes[i]
                while held > cap and lru:
                    _, v = lru.popitem(last=False)
                    held -= v
            if i in kept:
                fh += 1
            elif kept_bytes + sizes[i] <= cap:
                kept.add(i)
                kept_bytes += sizes[i]
        n = max(1, len(order))
        out.append((lh / n, fh / n))
    return out


COLORS = {'direct': 'tab:blue', 'nginx': 'tab:orange', 'bucketcache': 'tab:green',
          'bucketcache-lru': 'tab:green', 'bucketcache-pin': 'tab:olive',
          'bucketcache-auto': 'tab:purple', 'bucketcache-plans': 'tab:red',
          'nginx-disk': 'tab:brown', 'bucketcache-disk': 'tab:cyan'}


def plot(rows, systems, path, title):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return 'matplotlib not available: no plot'
    epochs = sorted({r['epoch'] for r in rows})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    w = 0.8 / max(1, len(systems))
    for j, s in enumerate(systems):
        rs = {r['epoch']: r for r in rows if r['system'] == s}
        xs = [e - 0.4 + w * (j + 0.5) for e in epochs]
        t = [rs[e]['epoch_s'] if e in rs else 0 for e in epochs]
        wt = [rs[e]['data_wait_s'] if e in rs else 0 for e in epochs]
        up = [rs[e]['upstream_mb_proxy'] or 0 if e in rs else 0 for e in epochs]
        b = ax1.bar(xs, t, w, label=s, color=COLORS.get(s))
        ax1.bar(xs, wt, w * 0.35, color='black', alpha=0.35,
                label='data wait' if j == 0 else None)
        for x, v in zip(xs, t):
            ax1.text(x, v, '%.0f' % v, ha='center', va='bottom', fontsize=8)
        ax2.bar(xs, up, w, label=s, color=b.patches[0].get_facecolor())
    top = max([r['epoch_s'] for r in rows] + [1.0])
    ax1.set_ylim(0, top * 1.3)
    topu = max([r['upstream_mb_proxy'] or 0 for r in rows] + [1.0])
    ax2.set_ylim(0, topu * 1.3)
    ax1.set_xticks(epochs)
    ax1.set_xlabel('epoch')
    ax1.set_ylabel('epoch time (s); dark: data wait (sum over jobs)')
    ax1.set_title('epoch time')
    ax1.legend(fontsize=8, ncol=2, loc='upper right')
    ax2.set_xticks(epochs)
    ax2.set_xlabel('epoch')
    ax2.set_ylabel('MB fetched through the delay proxy')
    ax2.set_title('upstream bytes per epoch')
    ax2.legend(fontsize=8, ncol=3, loc='upper right')
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return 'plot: %s' % path


def combined(rows, s):
    """The rows that stand for the whole system: "all", or the one job."""
    rs = [r for r in rows if r['system'] == s]
    alls = [r for r in rs if r['job'] == 'all']
    return alls if alls else rs


def targets(rows, systems, na, njobs, epochs):
    """Issue 11's targets: lines 'PASS|MISS|n/a: ...'."""
    out = []
    warm = [e for e in range(2, 4) if e <= epochs]
    span = ('epochs %d-%d' % (warm[0], warm[-1]) if len(warm) > 1 else
            'epoch %d only' % warm[0]) if warm else None

    def hit(s):
        rs = [r for r in combined(rows, s) if r['epoch'] in warm]
        h = sum(r['hits'] for r in rs)
        n = sum(r['hits'] + r['misses'] for r in rs)
        return h / n if n else None

    def absent(s):
        if s in na:
            return 'n/a: %s not run (%s)' % (s, na[s])
        if s not in systems:
            return 'n/a: %s not in BENCH_SYSTEMS' % s
        if not warm:
            return 'n/a: needs 2 epochs or more'
        return None

    name = 'hit ratio %s, bucketcache-auto (no hints, %d job(s)) >= 0.48' % (span, njobs)
    why = absent('bucketcache-auto')
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        h = hit('bucketcache-auto')
        out.append('TARGET %s: %s (%.3f)' % (name, 'PASS' if h >= 0.48 else 'MISS', h))
    name = 'hit ratio %s, bucketcache-plans (two jobs posting plans) >= 0.62' % span
    why = absent('bucketcache-plans')
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        h = hit('bucketcache-plans')
        extra = '' if njobs >= 2 else '; with %d job only, not the two the target names' % njobs
        out.append('TARGET %s: %s (%.3f%s)' % (name, 'PASS' if h >= 0.62 else 'MISS', h, extra))
    name = 'data wait %s, bucketcache-plans >= 90%% below direct' % span
    why = absent('bucketcache-plans') or absent('direct')
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        wp = sum(r['data_wait_s'] for r in combined(rows, 'bucketcache-plans') if r['epoch'] in warm)
        wd = sum(r['data_wait_s'] for r in combined(rows, 'direct') if r['epoch'] in warm)
        wp_all = sum(r['data_wait_s'] for r in combined(rows, 'bucketcache-plans'))
        wd_all = sum(r['data_wait_s'] for r in combined(rows, 'direct'))
        cut = 1 - wp / wd if wd else 0.0
        out.append('TARGET %s: %s (%.1f s vs %.1f s: %.1f%% below; all epochs %.1f s vs %.1f s: '
                   '%.1f%% below)' % (name, 'PASS' if wd and cut >= 0.90 else 'MISS', wp, wd,
                                      100 * cut, wp_all, wd_all,
                                      100 * (1 - wp_all / wd_all) if wd_all else 0))
    disk_hint = ' (run: BENCH_SYSTEMS="direct nginx-disk bucketcache-disk")'
    name = 'hit ratio %s, bucketcache-disk (memory and disk tiers) >= 0.98' % span
    why = absent('bucketcache-disk')
    if why and 'not in BENCH_SYSTEMS' in why:
        why += disk_hint
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        h = hit('bucketcache-disk')
        out.append('TARGET %s: %s (%.3f)' % (name, 'PASS' if h >= 0.98 else 'MISS', h))
    name = 'epochs 2+ time, bucketcache-disk <= nginx-disk (the same disk bound)'
    why = absent('bucketcache-disk') or absent('nginx-disk')
    if why and 'not in BENCH_SYSTEMS' in why:
        why += disk_hint
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        tb = sum(r['epoch_s'] for r in combined(rows, 'bucketcache-disk') if r['epoch'] >= 2)
        tn = sum(r['epoch_s'] for r in combined(rows, 'nginx-disk') if r['epoch'] >= 2)
        wb = sum(r['data_wait_s'] for r in combined(rows, 'bucketcache-disk') if r['epoch'] >= 2)
        wn = sum(r['data_wait_s'] for r in combined(rows, 'nginx-disk') if r['epoch'] >= 2)
        out.append('TARGET %s: %s (%.1f s vs %.1f s, %.2fx; data wait %.1f s vs %.1f s; nginx-disk hit '
                   'ratio %s %s)' % (name, 'PASS' if tn and tb <= tn else 'MISS', tb, tn,
                                     tb / tn if tn else float('inf'), wb, wn, span,
                                     num(hit('nginx-disk'), '%.3f')))
    name = 'epoch-1 data wait, bucketcache-plans (plans posted before epoch 1) >= 80% below direct'
    why = absent('bucketcache-plans') or absent('direct')
    if why and 'needs 2 epochs' in why:
        why = None
    if why:
        out.append('TARGET %s: %s' % (name, why))
    else:
        e1p = [r for r in combined(rows, 'bucketcache-plans') if r['epoch'] == 1]
        e1d = [r for r in combined(rows, 'direct') if r['epoch'] == 1]
        wp = sum(r['data_wait_s'] for r in e1p)
        wd = sum(r['data_wait_s'] for r in e1d)
        cut = 1 - wp / wd if wd else 0.0
        out.append('TARGET %s: %s (%.1f s vs %.1f s: %.1f%% below; of which the first batch, '
                   'while the workers start: %.1f s vs %.1f s)' % (
                       name, 'PASS' if wd and cut >= 0.80 else 'MISS', wp, wd, 100 * cut,
                       sum(r.get('first_wait_s', 0.0) for r in e1p),
                       sum(r.get('first_wait_s', 0.0) for r in e1d)))
    name = 'prefetch wasted <= 5% of prefetched'
    any_pf = False
    for s in systems:
        rs = combined(rows, s)
        if not rs or rs[0]['prefetch_issued'] == '':
            continue
        issued = sum(r['prefetch_issued'] for r in rs)
        wasted = sum(r['prefetch_wasted'] for r in rs)
        used = sum(r['prefetch_used'] for r in rs)
        mb = sum(r['prefetch_mb'] for r in rs)
        if not issued:
            continue
        any_pf = True
        out.append('TARGET %s, %s: %s (%d of %d prefetched chunks wasted, %.1f%%; %d used; '
                   '%.1f MB prefetched; chunks: objects are smaller than a chunk, so the '
                   'ratio is the bytes ratio up to object sizes)' % (
                       name, s, 'PASS' if wasted <= 0.05 * issued else 'MISS', wasted, issued,
                       100.0 * wasted / issued, used, mb))
    if not any_pf:
        why = absent('bucketcache-plans')
        out.append('TARGET %s: %s' % (name, why or 'n/a: no system prefetched'))
    return out


def first_epoch_table(rows, systems, summary):
    """Epoch 1 on its own row, epochs 2+ together, per system, with the
    ratios to direct and nginx; fills summary['systems']."""
    def agg(s, first):
        rs = [r for r in combined(rows, s) if (r['epoch'] == 1) == first]
        if not rs:
            return None
        h = sum(r['hits'] for r in rs if r['hit_ratio'] != '')
        n = sum(r['hits'] + r['misses'] for r in rs if r['hit_ratio'] != '')
        return {'epochs': len(rs), 'time_s': sum(r['epoch_s'] for r in rs),
                'wait_s': sum(r['data_wait_s'] for r in rs),
                'first_wait_s': sum(r.get('first_wait_s', 0.0) for r in rs),
                'hit_ratio': h / n if n else None}
    ref = {k: (agg(k, True), agg(k, False)) for k in ('direct', 'nginx') if k in systems}

    def x(a, b):
        return '%.2fx' % (a / b) if a is not None and b else '-'

    def below(a, b):
        return '%.0f%%' % (100 * (1 - b / a)) if a else '-'
    out = ['| system | epochs | epoch s | data wait s | of which first batch s | hit ratio '
           '| time vs direct | time vs nginx | data wait below direct | data wait below nginx |',
           '|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for s in systems:
        e1, e2 = agg(s, True), agg(s, False)
        summary['systems'][s] = {
            'epoch1_s': e1['time_s'] if e1 else None,
            'epoch1_wait_s': e1['wait_s'] if e1 else None,
            'epoch1_first_batch_wait_s': e1['first_wait_s'] if e1 else None,
            'epoch1_hit_ratio': e1['hit_ratio'] if e1 else None,
            'warm_epochs': e2['epochs'] if e2 else 0,
            'warm_s': e2['time_s'] if e2 else None,
            'warm_wait_s': e2['wait_s'] if e2 else None,
            'warm_hit_ratio': e2['hit_ratio'] if e2 else None,
        }
        for i, (e, name) in enumerate(((e1, '1 (cold)'), (e2, '2+'))):
            if e is None:
                continue
            d = ref.get('direct', (None, None))[i]
            n = ref.get('nginx', (None, None))[i]
            out.append('| %s | %s | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s |' % (
                s, name if i == 0 else ('2' if e['epochs'] == 1 else '2-%d' % (e['epochs'] + 1)),
                e['time_s'], e['wait_s'],
                e['first_wait_s'], num(e['hit_ratio'], '%.2f'),
                x(d['time_s'], e['time_s']) if d else '-',
                x(n['time_s'], e['time_s']) if n else '-',
                below(d['wait_s'], e['wait_s']) if d else '-',
                below(n['wait_s'], e['wait_s']) if n else '-'))
    return out


def sample_lines(samples):
    out = []
    for label, sm in samples:
        if not sm:
            out.append('%s: memory not sampled' % label)
            continue
        lim = sm.get('limit') or 0
        held = max(sm.get('held_max', 0), sm.get('usage_max', 0))
        out.append('%s: VmRSS max %.1f MiB (mean %.1f); held max %d B of the %d B bound '
                   '(%s); %d of %d samples over it%s' % (
                       label, sm.get('rss_max_kib', 0) / 1024.0, sm.get('rss_mean_kib', 0) / 1024.0,
                       held, lim, 'within' if lim and held <= lim and not sm.get('over') else 'OVER',
                       sm.get('over', 0), sm.get('stats_samples', 0),
                       ' (by up to %d B, first %s s into the run)' % (
                           sm.get('over_max_bytes', 0), sm.get('over_first_s'))
                       if sm.get('over') else ''))
    return out


def main():
    ap = argparse.ArgumentParser(description='training benchmark report')
    ap.add_argument('--run', action='append', default=[],
                    help='LABEL=FILE, once per job (same LABEL for a system\'s jobs)')
    ap.add_argument('--na', action='append', default=[],
                    help='LABEL=REASON: a system that could not run')
    ap.add_argument('--nginx-log', action='append', default=[],
                    help='LABEL=FILE, once per nginx system (a bare FILE: "nginx")')
    ap.add_argument('--cap-for', action='append', default=[],
                    help='LABEL=BYTES: the cache size of a system whose cache is not --cap')
    ap.add_argument('--header', required=True)
    ap.add_argument('--md', required=True)
    ap.add_argument('--csv', required=True)
    ap.add_argument('--png')
    ap.add_argument('--title', default='bucketcache training benchmark')
    ap.add_argument('--manifest')
    ap.add_argument('--cap', type=int, default=0)
    ap.add_argument('--jobs', type=int, default=1)
    ap.add_argument('--sample', action='append', default=[],
                    help='LABEL=FILE: bench_sidecar.py sample\'s JSON of a gateway')
    ap.add_argument('--summary', help='write epoch 1 / epochs 2+ per system as JSON here')
    a = ap.parse_args()

    systems, rows, runs, na = [], [], OrderedDict(), OrderedDict()
    for spec in a.run:
        label, _, path = spec.partition('=')
        with open(path) as f:
            runs.setdefault(label, []).append(json.load(f))
        if label not in systems:
            systems.append(label)
    for spec in a.na:
        label, _, why = spec.partition('=')
        na[label] = why
    nginx_logs, caps = {}, {}
    for spec in a.nginx_log:
        label, eq, path = spec.partition('=')
        if eq and label and '/' not in label:
            nginx_logs[label] = path
        else:
            nginx_logs['nginx'] = spec
    for spec in a.cap_for:
        label, _, v = spec.partition('=')
        caps[label] = int(v)
    cap_of = lambda s: caps.get(s, a.cap)
    for label in systems:
        rows += rows_for(label, runs[label], nginx_logs.get(label))

    # checks
    problems = []
    by_epoch = {}
    for r in rows:
        if r['job'] == 'all':
            continue
        run = runs[r['system']][int(r['job'][1:]) - 1]
        n = run['objects']
        if r['items'] != n:
            problems.append('%s %s epoch %d: read %d items, not %d' % (
                r['system'], r['job'], r['epoch'], r['items'], n))
        if abs(r['read_mb'] * 1e6 - run['dataset_bytes']) > 0.5:
            problems.append('%s %s epoch %d: read %.0f bytes, the data set has %d' % (
                r['system'], r['job'], r['epoch'], r['read_mb'] * 1e6, run['dataset_bytes']))
        if r['errors']:
            problems.append('%s %s epoch %d: %d items failed (size/crc/exception)' % (
                r['system'], r['job'], r['epoch'], r['errors']))
        by_epoch.setdefault((r['job'], r['epoch']), set()).add(r['order_sha256'])
        if r.get('_note'):
            problems.append('%s %s epoch %d: %s' % (r['system'], r['job'], r['epoch'], r['_note']))
    for s in systems:
        for r in combined(rows, s):
            up_s, up_p = r['upstream_mb_system'], r['upstream_mb_proxy']
            if up_s == '' or up_p == '':
                continue
            if max(up_s, up_p) > 1 and abs(up_s - up_p) > 0.05 * max(up_s, up_p):
                problems.append('%s epoch %d: the system counts %.1f MB from upstream, '
                                'the delay proxy %.1f MB' % (r['system'], r['epoch'], up_s, up_p))
            if r.get('_bc_up_errors'):
                problems.append('%s epoch %d: %d upstream errors' % (
                    r['system'], r['epoch'], r['_bc_up_errors']))
    same_order = all(len(v) == 1 for v in by_epoch.values())
    if not same_order:
        problems.append('the index order of a job differs between systems in some epoch')
    epochs = max([r['epoch'] for r in rows] + [0])

    out = []
    with open(a.header) as f:
        out.append('```text')
        out.append(f.read().rstrip('\n'))
        out.append('```')
    out.append('')
    header_lines = len(out)
    out.append('| system | job | epoch | epoch s | data wait s | wait % | items/s | hit ratio '
               '| upstream MB (system) | upstream MB (proxy) | upstream requests (proxy) '
               '| prefetch used / wasted | revalidations | cache held peak / mean MB (% of cap) '
               '| GET p50 / p99 ms | errors |')
    out.append('|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for s in systems:
        for r in sorted((r for r in rows if r['system'] == s),
                        key=lambda r: (r['epoch'], r['job'] == 'all', r['job'])):
            out.append(fmt_row(r, cap_of(s)))
    for s, why in na.items():
        out.append('| %s | - | - | n/a: %s |||||||||||||' % (s, why.replace('|', '/')))
    out.append('')
    # cache models over the recorded orders (the same for every system)
    if a.manifest and a.cap and runs:
        sizes = []
        with open(a.manifest) as f:
            for line in f:
                sizes.append(int(line.split('\t')[1]))
        jobs = runs[systems[0]]
        if all(j.get('orders') for j in jobs) and len(sizes) >= jobs[0]['objects']:
            m = models(interleave([j['orders'] for j in jobs]), sizes, a.cap)
            out.append('| epoch | LRU model hit ratio (cap %.1f MB%s) | fill-once model hit ratio '
                       '| %s |' % (a.cap / 1e6, ', %d jobs interleaved' % len(jobs)
                                   if len(jobs) > 1 else '',
                                   ' | '.join('%s hit ratio' % s for s in systems)))
            out.append('|---:|---:|---:|%s' % ('---:|' * len(systems)))
            for e, (lh, fh) in enumerate(m, 1):
                hr = []
                for s in systems:
                    x = [r['hit_ratio'] for r in combined(rows, s) if r['epoch'] == e]
                    hr.append(num(x[0], '%.2f') if x else '-')
                out.append('| %d | %.2f | %.2f | %s |' % (e, lh, fh, ' | '.join(hr)))
            out.append('')
    # per system totals and the ratio to direct, epochs 2.. (the warm ones)
    out.append('| system | total s | epochs 2+ s | vs direct (epochs 2+) | data wait s '
               '(all jobs, epochs 2+) | total upstream MB (proxy) | hit ratio epochs 2+ '
               '| prefetch used / wasted (total) |')
    out.append('|:---|---:|---:|---:|---:|---:|---:|---:|')
    direct_warm = None
    if 'direct' in systems:
        direct_warm = sum(r['epoch_s'] for r in combined(rows, 'direct') if r['epoch'] >= 2)
    for s in systems:
        rs = combined(rows, s)
        warm = [r for r in rs if r['epoch'] >= 2]
        tw = sum(r['epoch_s'] for r in warm)
        hw = sum(r['hits'] for r in warm)
        lw = sum(r['hits'] + r['misses'] for r in warm)
        pf = '-'
        if rs and rs[0]['prefetch_used'] != '':
            pf = '%d / %d' % (sum(r['prefetch_used'] for r in rs),
                              sum(r['prefetch_wasted'] for r in rs))
        out.append('| %s | %.1f | %.1f | %s | %.1f | %.1f | %s | %s |' % (
            s, sum(r['epoch_s'] for r in rs), tw,
            '%.2fx' % (tw / direct_warm) if direct_warm and warm else '-',
            sum(r['data_wait_s'] for r in warm),
            sum(r['upstream_mb_proxy'] or 0 for r in rs),
            '%.2f' % (hw / lw) if lw else '-', pf))
    for s, why in na.items():
        out.append('| %s | n/a: %s |||||||' % (s, why.replace('|', '/')))
    out.append('')
    summary = {'kind': 'training', 'systems': OrderedDict(), 'samples': []}
    out += first_epoch_table(rows, systems, summary)
    out.append('')
    out.append('```text')
    out.extend(targets(rows, systems, na, a.jobs, epochs))
    out.append('epoch index order identical across systems (per job): %s (%s)' % (
        'yes' if same_order else 'NO',
        ', '.join('%s epoch %d %s' % (j, e, '/'.join(sorted(x[:12] for x in v)))
                  for (j, e), v in sorted(by_epoch.items()))))
    for r in rows:
        if '_bc_limit' in r:
            out.append('%s %s epoch %d: cache_bytes_held %d of cache_bytes_limit %d (%.1f%%), '
                       'evictions %d, partial hits %d, upstream requests %d, retries %d, '
                       'prefetch issued %d late %d' % (
                           r['system'], r['job'], r['epoch'], r['_bc_held'], r['_bc_limit'],
                           100.0 * r['_bc_held'] / r['_bc_limit'] if r['_bc_limit'] else 0,
                           r['evictions'], r['_bc_partial'], r['_bc_up_requests'],
                           r['retries'], r['prefetch_issued'], r['prefetch_late']))
        if '_tiers' in r:
            t = r['_tiers']
            out.append('%s %s epoch %d: disk tier hits %d, misses %d, writes %d, queue_drops %d, '
                       'write_failures %d, corrupt %d, holds %d chunks, %d of %d bytes; memory tier '
                       'hits %d, misses %d; cache_disk_sendfile %d, cache_bytes_disk %.1f MB' % (
                           r['system'], r['job'], r['epoch'], t['disk_hits'], t['disk_misses'],
                           t['disk_writes'], t['disk_queue_drops'], t['disk_write_failures'],
                           t['disk_corrupt'], t['disk_chunks'], t['disk_usage'], t['disk_capacity'],
                           t['memory_hits'], t['memory_misses'], t['sendfile'], t['bytes_disk'] / 1e6))
        if '_nginx_status' in r:
            out.append('%s %s epoch %d: %d log lines: %s; retries %d' % (
                r['system'], r['job'], r['epoch'], r['_nginx_lines'],
                ', '.join('%s x%d' % kv for kv in sorted(r['_nginx_status'].items())),
                r['retries']))
        if r.get('job_wait_s') is not None:
            out.append('%s %s epoch %d: the gateway counts %.1f s of fill waits for the job '
                       '(wait_us; summed over its concurrent reads)' % (
                           r['system'], r['job'], r['epoch'], r['job_wait_s']))
    for s in systems:
        for jn, run in enumerate(runs[s], 1):
            if run.get('plan_stats'):
                out.append('%s j%d: plans %s' % (s, jn, json.dumps(run['plan_stats'],
                                                                  sort_keys=True)))
            last = run['snapshots'][-1].get('bc_jobs')
            if last and jn == 1:
                out.append('%s: /_bucketcache/v1/jobs at the end: %s' % (
                    s, json.dumps(last, sort_keys=True)[:1000]))
    for r in rows:
        cap = cap_of(r['system'])
        if cap and r['held_peak_mb'] != '' and r['held_peak_mb'] * 1e6 > 1.02 * cap:
            out.append('NOTE: %s %s epoch %d: the cache held up to %.1f MB, %.0f%% of the '
                       '%.1f MB cap' % (r['system'], r['job'], r['epoch'], r['held_peak_mb'],
                                        100.0 * r['held_peak_mb'] * 1e6 / cap, cap / 1e6))
    out.append('mean GET ms per tenth of the epoch (batches in order; shows drift, '
               'e.g. once a cache is full and evicting):')
    for s_ in systems:
        for jn, run in enumerate(runs[s_], 1):
            for ep in run['epochs']:
                prof = ep.get('batch_profile') or []
                if not prof:
                    continue
                k = len(prof)
                tenths = []
                for j in range(10):
                    part = prof[j * k // 10:(j + 1) * k // 10]
                    tenths.append('%.0f' % (sum(x[1] for x in part) / len(part))
                                  if part else '-')
                out.append('  %-20s j%d epoch %d: %s' % (s_, jn, ep['epoch'], ' '.join(tenths)))
    samples = []
    for spec in a.sample:
        label, _, path = spec.partition('=')
        try:
            with open(path) as f:
                sm = json.load(f)
        except (OSError, ValueError):
            sm = None
        samples.append((label, sm))
        if sm:
            sm['label'] = label
            summary['samples'].append(sm)
    out.extend(sample_lines(samples))
    for p in problems:
        out.append('CHECK FAILED: %s' % p)
    if not problems and runs:
        out.append('checks: every epoch of every job of every system read all %d objects '
                   '(sizes and crc32 as generated), no errors; system and proxy upstream bytes '
                   'agree within 5%%' % next(iter(runs.values()))[0]['objects'])
    if a.png and rows:
        out.append(plot([r for s in systems for r in combined(rows, s)], systems, a.png,
                        a.title))
    out.append('```')
    text = '\n'.join(out) + '\n'
    with open(a.md, 'w') as f:
        f.write(text)
    with open(a.csv, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction='ignore')
        w.writeheader()
        for r in rows:
            rr = dict(r)
            for k in ('epoch_s', 'data_wait_s', 'compute_s', 'wait_pct', 'items_per_s',
                      'read_mb', 'read_mb_per_s', 'upstream_mb_system', 'upstream_mb_proxy',
                      'prefetch_mb', 'held_peak_mb', 'held_mean_mb',
                      'get_p50_ms', 'get_p90_ms', 'get_p99_ms', 'hit_ratio'):
                if rr.get(k, '') != '':
                    rr[k] = '%.4f' % rr[k] if k == 'hit_ratio' else '%.3f' % rr[k]
            w.writerow(rr)
    if a.summary:
        summary['problems'] = problems
        with open(a.summary, 'w') as f:
            json.dump(summary, f, indent=1)
    # stdout: the tables and checks (the caller printed the header)
    sys.stdout.write('\n'.join(out[header_lines:]) + '\n')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
