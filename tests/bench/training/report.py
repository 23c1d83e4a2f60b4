#!/usr/bin/python3
"""
report.py -- turns bench_training.sh's per-system loader results into the
table of the training benchmark: a Markdown report, a CSV and (when
matplotlib is there) a PNG plot of the epoch times.

Inputs: one --run LABEL=FILE per system (loader.py's JSON: epochs and
counter snapshots taken between epochs), --nginx-log FILE for the nginx
system (its access log, in bench_training.sh's log_format "train"), and
--header FILE (preformatted text: machine, versions, command, cache
configs) that goes at the top of the report.

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
    'system', 'epoch', 'epoch_s', 'data_wait_s', 'wait_pct', 'items',
    'items_per_s', 'read_mb', 'read_mb_per_s', 'hit_ratio', 'hits', 'misses',
    'upstream_mb_system', 'upstream_mb_proxy', 'proxy_requests', 'proxy_gets',
    'proxy_heads', 'revalidations', 'evictions', 'held_peak_mb', 'held_mean_mb',
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
        # $body_bytes_sent ...
        ub = 0
        for x in p[3].split(','):
            x = x.strip()
            if x.isdigit():
                ub += int(x)
        out.append({'status': p[1], 'cache': p[2], 'up_bytes': ub})
    return out


def rows_for(label, run, nginx_log):
    rows = []
    snaps = run['snapshots']
    for i, ep in enumerate(run['epochs']):
        s0, s1 = snaps[i], snaps[i + 1]
        p0, p1 = s0.get('proxy', {}), s1.get('proxy', {})
        pm0, pm1 = p0.get('by_method', {}), p1.get('by_method', {})
        r = {
            'system': label,
            'epoch': ep['epoch'],
            'epoch_s': ep['time_s'],
            'data_wait_s': ep['wait_s'],
            'wait_pct': 100.0 * ep['wait_s'] / ep['time_s'] if ep['time_s'] else 0,
            'items': ep['items'],
            'items_per_s': ep['items'] / ep['time_s'] if ep['time_s'] else 0,
            'read_mb': ep['bytes'] / 1e6,
            'read_mb_per_s': ep['bytes'] / 1e6 / ep['time_s'] if ep['time_s'] else 0,
            'upstream_mb_proxy': (p1.get('resp_body_bytes', 0) -
                                  p0.get('resp_body_bytes', 0)) / 1e6,
            'proxy_requests': p1.get('requests', 0) - p0.get('requests', 0),
            'proxy_gets': pm1.get('GET', 0) - pm0.get('GET', 0),
            'proxy_heads': pm1.get('HEAD', 0) - pm0.get('HEAD', 0),
            'revalidations': '',
            'evictions': '',
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
            r['_bc_held'] = c1.get('cache_bytes_held', 0)
            r['_bc_limit'] = c1.get('cache_bytes_limit', 0)
            r['_bc_partial'] = d['cache_partial_hits']
            r['_bc_up_requests'] = d['upstream_requests']
            r['_bc_up_errors'] = d['upstream_errors']
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
            r['misses'] = ep['items']
            r['hit_ratio'] = 0.0
            r['upstream_mb_system'] = ep['bytes'] / 1e6
        rows.append(r)
    return rows


def fmt_held(r, cap):
    if r['held_peak_mb'] == '':
        return '-'
    if not cap:
        return '%.0f / %.0f' % (r['held_peak_mb'], r['held_mean_mb'])
    return '%.0f / %.0f (%.0f%% / %.0f%%)' % (
        r['held_peak_mb'], r['held_mean_mb'],
        100.0 * r['held_peak_mb'] * 1e6 / cap, 100.0 * r['held_mean_mb'] * 1e6 / cap)


def fmt_row(r, cap):
    return ('| %s | %d | %.1f | %.1f | %.0f%% | %.0f | %.2f | %.1f | %.1f | %d (%d GET, %d HEAD) '
            '| %s | %s | %.1f / %.1f | %d |' % (
                r['system'], r['epoch'], r['epoch_s'], r['data_wait_s'], r['wait_pct'],
                r['items_per_s'], r['hit_ratio'], r['upstream_mb_system'],
                r['upstream_mb_proxy'], r['proxy_requests'], r['proxy_gets'],
                r['proxy_heads'],
                r['revalidations'] if r['revalidations'] != '' else '-',
                fmt_held(r, cap),
                r['get_p50_ms'], r['get_p99_ms'], r['errors']))


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


COLORS = {'direct': 'tab:blue', 'nginx': 'tab:orange', 'bucketcache': 'tab:green'}


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
        up = [rs[e]['upstream_mb_proxy'] if e in rs else 0 for e in epochs]
        b = ax1.bar(xs, t, w, label=s, color=COLORS.get(s))
        ax1.bar(xs, wt, w * 0.35, color='black', alpha=0.35,
                label='data wait' if j == 0 else None)
        for x, v in zip(xs, t):
            ax1.text(x, v, '%.0f' % v, ha='center', va='bottom', fontsize=8)
        ax2.bar(xs, up, w, label=s, color=b.patches[0].get_facecolor())
    top = max([r['epoch_s'] for r in rows] + [1.0])
    ax1.set_ylim(0, top * 1.3)
    topu = max([r['upstream_mb_proxy'] for r in rows] + [1.0])
    ax2.set_ylim(0, topu * 1.3)
    ax1.set_xticks(epochs)
    ax1.set_xlabel('epoch')
    ax1.set_ylabel('epoch time (s); dark: time waiting for data')
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


def main():
    ap = argparse.ArgumentParser(description='training benchmark report')
    ap.add_argument('--run', action='append', default=[], help='LABEL=FILE')
    ap.add_argument('--nginx-log')
    ap.add_argument('--header', required=True)
    ap.add_argument('--md', required=True)
    ap.add_argument('--csv', required=True)
    ap.add_argument('--png')
    ap.add_argument('--title', default='bucketcache training benchmark')
    ap.add_argument('--manifest')
    ap.add_argument('--cap', type=int, default=0)
    a = ap.parse_args()

    systems, rows, runs = [], [], {}
    for spec in a.run:
        label, _, path = spec.partition('=')
        with open(path) as f:
            runs[label] = json.load(f)
        systems.append(label)
        rows += rows_for(label, runs[label], a.nginx_log if label == 'nginx' else None)

    # checks
    problems = []
    by_epoch = {}
    for r in rows:
        run = runs[r['system']]
        n = run['objects']
        if r['items'] != n:
            problems.append('%s epoch %d: read %d items, not %d' % (
                r['system'], r['epoch'], r['items'], n))
        if abs(r['read_mb'] * 1e6 - run['dataset_bytes']) > 0.5:
            problems.append('%s epoch %d: read %.0f bytes, the data set has %d' % (
                r['system'], r['epoch'], r['read_mb'] * 1e6, run['dataset_bytes']))
        if r['errors']:
            problems.append('%s epoch %d: %d items failed (size/crc/exception)' % (
                r['system'], r['epoch'], r['errors']))
        by_epoch.setdefault(r['epoch'], set()).add(r['order_sha256'])
        up_s, up_p = r['upstream_mb_system'], r['upstream_mb_proxy']
        if max(up_s, up_p) > 1 and abs(up_s - up_p) > 0.05 * max(up_s, up_p):
            problems.append('%s epoch %d: the system counts %.1f MB from upstream, '
                            'the delay proxy %.1f MB' % (r['system'], r['epoch'], up_s, up_p))
        if r.get('_bc_up_errors'):
            problems.append('%s epoch %d: %d upstream errors' % (
                r['system'], r['epoch'], r['_bc_up_errors']))
    same_order = all(len(v) == 1 for v in by_epoch.values())
    if not same_order:
        problems.append('the index order differs between systems in some epoch')

    out = []
    with open(a.header) as f:
        out.append('```text')
        out.append(f.read().rstrip('\n'))
        out.append('```')
    out.append('')
    header_lines = len(out)
    out.append('| system | epoch | epoch s | data wait s | wait % | items/s | hit ratio '
               '| upstream MB (system) | upstream MB (proxy) | upstream requests (proxy) '
               '| revalidations | cache held peak / mean MB (% of cap) | GET p50 / p99 ms | errors |')
    out.append('|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for r in rows:
        out.append(fmt_row(r, a.cap))
    out.append('')
    # cache models over the recorded orders (the same for every system)
    if a.manifest and a.cap and runs:
        sizes = []
        with open(a.manifest) as f:
            for line in f:
                sizes.append(int(line.split('\t')[1]))
        first = runs[systems[0]]
        if first.get('orders') and len(sizes) >= first['objects']:
            m = models(first['orders'], sizes, a.cap)
            out.append('| epoch | LRU model hit ratio (cap %.1f MB) | fill-once model hit ratio | %s |' % (
                a.cap / 1e6, ' | '.join('%s hit ratio' % s for s in systems)))
            out.append('|---:|---:|---:|%s' % ('---:|' * len(systems)))
            for e, (lh, fh) in enumerate(m, 1):
                hr = []
                for s in systems:
                    x = [r['hit_ratio'] for r in rows if r['system'] == s and r['epoch'] == e]
                    hr.append('%.2f' % x[0] if x else '-')
                out.append('| %d | %.2f | %.2f | %s |' % (e, lh, fh, ' | '.join(hr)))
            out.append('')
    # per system totals and the ratio to direct, epochs 2.. (the warm ones)
    out.append('| system | total s | epochs 2+ s | vs direct (epochs 2+) | total upstream MB (proxy) '
               '| hit ratio epochs 2+ |')
    out.append('|:---|---:|---:|---:|---:|---:|')
    direct_warm = None
    for s in systems:
        rs = [r for r in rows if r['system'] == s]
        warm = [r for r in rs if r['epoch'] >= 2]
        tw = sum(r['epoch_s'] for r in warm)
        if s == 'direct':
            direct_warm = tw
    for s in systems:
        rs = [r for r in rows if r['system'] == s]
        warm = [r for r in rs if r['epoch'] >= 2]
        tw = sum(r['epoch_s'] for r in warm)
        hw = sum(r['hits'] for r in warm)
        lw = sum(r['hits'] + r['misses'] for r in warm)
        out.append('| %s | %.1f | %.1f | %s | %.1f | %s |' % (
            s, sum(r['epoch_s'] for r in rs), tw,
            '%.2fx' % (tw / direct_warm) if direct_warm and warm else '-',
            sum(r['upstream_mb_proxy'] for r in rs),
            '%.2f' % (hw / lw) if lw else '-'))
    out.append('')
    out.append('```text')
    out.append('epoch index order identical across systems: %s (%s)' % (
        'yes' if same_order else 'NO',
        ', '.join('epoch %d %s' % (e, '/'.join(sorted(x[:12] for x in v)))
                  for e, v in sorted(by_epoch.items()))))
    for r in rows:
        if '_bc_limit' in r:
            out.append('%s epoch %d: cache_bytes_held %d of cache_bytes_limit %d (%.1f%%), '
                       'evictions %d, partial hits %d, upstream requests %d, retries %d' % (
                           r['system'], r['epoch'], r['_bc_held'], r['_bc_limit'],
                           100.0 * r['_bc_held'] / r['_bc_limit'] if r['_bc_limit'] else 0,
                           r['evictions'], r['_bc_partial'], r['_bc_up_requests'],
                           r['retries']))
        if '_nginx_status' in r:
            out.append('%s epoch %d: %d log lines: %s; retries %d' % (
                r['system'], r['epoch'], r['_nginx_lines'],
                ', '.join('%s x%d' % kv for kv in sorted(r['_nginx_status'].items())),
                r['retries']))
    for r in rows:
        if a.cap and r['held_peak_mb'] != '' and r['held_peak_mb'] * 1e6 > 1.02 * a.cap:
            out.append('NOTE: %s epoch %d: the cache held up to %.1f MB, %.0f%% of the %.1f MB cap' % (
                r['system'], r['epoch'], r['held_peak_mb'], 100.0 * r['held_peak_mb'] * 1e6 / a.cap,
                a.cap / 1e6))
    out.append('mean GET ms per tenth of the epoch (batches in order; shows drift, '
               'e.g. once a cache is full and evicting):')
    for s_ in systems:
        for ep in runs[s_]['epochs']:
            prof = ep.get('batch_profile') or []
            if not prof:
                continue
            k = len(prof)
            tenths = []
            for j in range(10):
                part = prof[j * k // 10:(j + 1) * k // 10]
                tenths.append('%.0f' % (sum(x[1] for x in part) / len(part)) if part else '-')
            out.append('  %-12s epoch %d: %s' % (s_, ep['epoch'], ' '.join(tenths)))
    for p in problems:
        out.append('CHECK FAILED: %s' % p)
    if not problems:
        out.append('checks: every epoch of every system read all %d objects (sizes and '
                   'crc32 as generated), no errors; system and proxy upstream bytes agree '
                   'within 5%%' % next(iter(runs.values()))['objects'])
    if a.png:
        out.append(plot(rows, systems, a.png, a.title))
    out.append('```')
    text = '\n'.join(out) + '\n'
    with open(a.md, 'w') as f:
        f.write(text)
    with open(a.csv, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction='ignore')
        w.writeheader()
        for r in rows:
            rr = dict(r)
            for k in ('epoch_s', 'data_wait_s', 'wait_pct', 'items_per_s', 'read_mb',
                      'read_mb_per_s', 'upstream_mb_system', 'upstream_mb_proxy',
                      'held_peak_mb', 'held_mean_mb',
                      'get_p50_ms', 'get_p90_ms', 'get_p99_ms'):
                if rr[k] != '':
                    rr[k] = '%.3f' % rr[k]
            rr['hit_ratio'] = '%.4f' % rr['hit_ratio']
            w.writerow(rr)
    # stdout: the tables and checks (the caller printed the header)
    sys.stdout.write('\n'.join(out[header_lines:]) + '\n')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
