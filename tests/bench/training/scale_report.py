#!/usr/bin/python3
"""
scale_report.py -- bench_scale.sh's table: the runs side by side, the
ratios to the reference run, and the goal of issue 13.

  --run LABEL=CONSUMER_JSON,SAMPLES,FLAGS   a run (repeatable, in order):
        consumer.py's --out, the sampler's lines "t rss_kib limit held
        target" (-1: unknown), the daemon's memory flags
  --na LABEL=MESSAGE       a run the binary refused
  --scale LABEL=JSON       the run's /_bucketcache/v1/scale at its end
  --ref LABEL              the reference run (a fixed size that holds D)
  --d BYTES --b BYTES_PER_S --r BYTES_PER_S   the model's D, B, R
  --header FILE            lines printed before the table (machine, ...)
  --md FILE --csv FILE     outputs; the table also goes to stdout

Per run: epoch seconds, the mean of epochs 2+, the hit ratio of epochs 2+
(x-bucketcache: hit), stalls, peak VmRSS (every sample), the mean and
final limit_bytes and held_bytes over the job's run (samples between its
first epoch's start and its last epoch's end), and against the reference:
epoch time ratio (mean of epochs 2+) and memory ratio (peak VmRSS). The
goal: auto's epochs 2+ within +-10% of the reference's, at a lower peak
VmRSS (at most 0.95x: a peak within 5% of the reference's is not less
memory on a noisy machine).

Exit status: 0 the goal met; 3 missed, or no auto run, or no reference;
1 bad input.
"""
import argparse
import csv
import json
import sys

MiB = 1048576.0


def kv(s):
    k, sep, v = s.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError("want LABEL=VALUE: %r" % s)
    return k, v


def load_samples(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 5:
                    out.append((float(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[4])))
    except OSError:
        pass
    return out


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def run_row(label, spec, scale):
    cjson, samples_path, flags = spec.split(",", 2)
    with open(cjson) as f:
        c = json.load(f)
    ep = c["epochs"]
    smp = load_samples(samples_path)
    t0, t1 = ep[0]["start"], ep[-1]["end"]
    during = [s for s in smp if t0 <= s[0] <= t1 + 0.25]
    lims = [s[2] for s in during if s[2] >= 0]
    held = [s[3] for s in during if s[3] >= 0]
    later = ep[1:]
    reads2 = sum(e["reads"] for e in later)
    r = {
        "label": label, "flags": flags, "epochs": ep,
        "mean2": mean(e["seconds"] for e in later),
        "hit2": (sum(e["hits"] for e in later) / reads2) if reads2 else None,
        "stalls2": sum(e["stalls"] for e in later),
        "peak_rss": max((s[1] for s in smp), default=None),
        "mean_limit": mean(lims), "final_limit": lims[-1] if lims else None,
        "mean_held": mean(held), "peak_held": max(held, default=None),
        "samples": len(smp), "scale": scale,
    }
    return r


def fmt_mib(x):
    return "-" if x is None else "%.1f" % (x / MiB)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=kv, action="append", default=[])
    ap.add_argument("--na", type=kv, action="append", default=[])
    ap.add_argument("--scale", type=kv, action="append", default=[])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--b", type=int, required=True)
    ap.add_argument("--r", type=int, required=True)
    ap.add_argument("--header")
    ap.add_argument("--md", required=True)
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()

    scales = {}
    for label, path in a.scale:
        try:
            with open(path) as f:
                scales[label] = json.load(f)
        except (OSError, ValueError):
            pass
    rows = [run_row(label, spec, scales.get(label)) for label, spec in a.run]
    na = dict(a.na)
    byl = {r["label"]: r for r in rows}
    ref = byl.get(a.ref)
    nep = max((len(r["epochs"]) for r in rows), default=0)

    cols = [r["label"] for r in rows] + [l for l in na if l not in byl]
    table = []   # (row name, [cell per column])

    def add(name, f):
        table.append((name, [f(byl[c]) if c in byl else "n/a" for c in cols]))

    add("--mem-size", lambda r: r["flags"].replace("--mem-size ", "").replace(
        " --mem-max ", ", max ").replace(" --mem-min ", ", min "))
    for i in range(nep):
        add("epoch %d s" % (i + 1), lambda r, i=i: "%.2f" % r["epochs"][i]["seconds"]
            if i < len(r["epochs"]) else "-")
    add("epochs 2+ mean s", lambda r: "%.2f" % r["mean2"])
    add("hit ratio 2+", lambda r: "-" if r["hit2"] is None else "%.3f" % r["hit2"])
    add("stalled reads 2+", lambda r: "%d" % r["stalls2"])
    add("peak VmRSS MiB", lambda r: fmt_mib(None if r["peak_rss"] is None else r["peak_rss"] * 1024))
    add("mean limit MiB", lambda r: fmt_mib(r["mean_limit"]))
    add("final limit MiB", lambda r: fmt_mib(r["final_limit"]))
    add("mean held MiB", lambda r: fmt_mib(r["mean_held"]))
    add("peak held MiB", lambda r: fmt_mib(r["peak_held"]))
    if ref is not None:
        add("epoch time ratio", lambda r: "%.2fx" % (r["mean2"] / ref["mean2"]))
        add("memory ratio (RSS)", lambda r: "-" if not (r["peak_rss"] and ref["peak_rss"])
            else "%.2fx" % (r["peak_rss"] / ref["peak_rss"]))
        add("limit ratio (mean)", lambda r: "-" if not (r["mean_limit"] and ref["mean_limit"])
            else "%.2fx" % (r["mean_limit"] / ref["mean_limit"]))

    w0 = max(len(n) for n, _ in table) if table else 10
    ws = [max([len(c)] + [len(cells[i]) for _, cells in table]) for i, c in enumerate(cols)]
    lines = ["| %s | %s |" % ("".ljust(w0), " | ".join(c.rjust(w) for c, w in zip(cols, ws))),
             "|-%s-|%s|" % ("-" * w0, "|".join("-" * (w + 1) + ":" for w in ws))]
    for name, cells in table:
        lines.append("| %s | %s |" % (name.ljust(w0), " | ".join(x.rjust(w) for x, w in zip(cells, ws))))

    # the goal
    auto = byl.get("auto")
    rc = 0
    if ref is None:
        verdict = "MISS: no reference run %s" % a.ref
        rc = 3
    elif auto is None:
        verdict = "MISS: no auto run%s" % (": " + na["auto"] if "auto" in na else "")
        rc = 3
    else:
        tr = auto["mean2"] / ref["mean2"]
        mr = (auto["peak_rss"] / ref["peak_rss"]) if auto["peak_rss"] and ref["peak_rss"] else None
        good = abs(tr - 1) <= 0.10 and mr is not None and mr <= 0.95
        verdict = "%s: auto's epochs 2+ %.2f s vs %s's %.2f s (%.2fx, goal within 0.90-1.10x), peak VmRSS %s vs %s MiB (%s, goal <= 0.95x)" % (
            "PASS" if good else "MISS", auto["mean2"], a.ref, ref["mean2"], tr,
            fmt_mib(auto["peak_rss"] * 1024 if auto["peak_rss"] else None),
            fmt_mib(ref["peak_rss"] * 1024 if ref["peak_rss"] else None),
            "-" if mr is None else "%.2fx" % mr)
        rc = 0 if good else 3
    want = max(0.0, a.d * (1 - a.b / a.r))
    notes = []
    if auto is not None and auto.get("scale"):
        s = auto["scale"]
        o = s.get("origin", {})
        ds = s.get("datasets") or [{}]
        jb = s.get("jobs") or [{}]
        notes.append("auto at the end (/v1/scale): target %s MiB (model D*(1-B/R) = %s MiB), "
                     "limit %s, held %s MiB; origin B %.1f MiB/s (set %.1f), latency %.1f ms; "
                     "dataset %s: size %s MiB (%s), need %s, share %s MiB; job R %.1f MiB/s (set %.1f)" % (
                         fmt_mib(s.get("target_bytes")), fmt_mib(want), fmt_mib(s.get("limit_bytes")),
                         fmt_mib(s.get("held_bytes")),
                         (o.get("bandwidth_bytes_per_second") or 0) / MiB, a.b / MiB,
                         1000 * (o.get("latency_seconds") or 0), ds[0].get("name"),
                         fmt_mib(ds[0].get("size_bytes")), ds[0].get("size_source"),
                         fmt_mib(ds[0].get("need_bytes")), fmt_mib(ds[0].get("share_bytes")),
                         (jb[0].get("rate_bytes_per_second") or 0) / MiB, a.r / MiB))
        dec = s.get("decisions") or []
        if dec:
            notes.append("auto's decisions (last %d of %d): %s" % (
                min(8, len(dec)), len(dec), "; ".join(
                    "%s -> %s MiB (%s)" % (fmt_mib(d.get("from_bytes")), fmt_mib(d.get("to_bytes")),
                                            d.get("reason")) for d in dec[-8:])))
    for label, msg in na.items():
        notes.append("%s: n/a: %s" % (label, msg))

    header = ""
    if a.header:
        with open(a.header) as f:
            header = f.read()
    title = "# bucketcache self-sizing memory benchmark (issue 13)\n"
    intro = (
        "Written by `tests/bench/bench_scale.sh` (its header comment says what it does);\n"
        "each run replaces this file. One job (fixture/consumer.py) reads a dataset of D\n"
        "bytes for shuffled epochs at a rate R while not waiting, through bucketcache, from\n"
        "an origin of bandwidth B; each run is a fresh gateway: fixed --mem-size at a\n"
        "percentage of D, or --mem-size auto. Goal: auto's epochs 2+ within +-10%% of the\n"
        "reference run's (%s, which holds the whole dataset), at less memory (peak VmRSS).\n"
        "Epoch 1 is cold in every run. limit = the memory bound in force (limit_bytes of\n"
        "/v1/scale, else cache_bytes_limit), held = bytes held by the memory tier, both\n"
        "sampled every 200 ms while the job ran; MiB = 2^20 bytes.\n" % a.ref)
    body = "\n".join(lines)
    out_md = "%s\n%s\n```\n%s```\n\n%s\n\n%s\n\n%s\n" % (
        title, intro, header, body, "**Goal: %s**" % verdict,
        "\n".join("- " + n for n in notes) if notes else "")
    with open(a.md, "w") as f:
        f.write(out_md)
    print()   # the header went to stdout as bench_scale.sh wrote it
    print(body)
    print()
    print("goal: " + verdict)
    for n in notes:
        print("note: " + n)

    with open(a.csv, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["run", "flags", "epoch", "seconds", "bytes", "mib_per_s", "reads",
                     "hits", "stalls", "stall_seconds", "epochs2_mean_s", "peak_rss_kib",
                     "mean_limit_bytes", "final_limit_bytes", "mean_held_bytes",
                     "epoch_time_ratio", "memory_ratio"])
        for r in rows:
            tr = "%.4f" % (r["mean2"] / ref["mean2"]) if ref else ""
            mr = "%.4f" % (r["peak_rss"] / ref["peak_rss"]) if ref and r["peak_rss"] and ref["peak_rss"] else ""
            for e in r["epochs"]:
                wr.writerow([r["label"], r["flags"], e["epoch"], "%.3f" % e["seconds"], e["bytes"],
                             "%.2f" % (e["bytes"] / e["seconds"] / MiB) if e["seconds"] else "",
                             e["reads"], e["hits"], e["stalls"], "%.3f" % e["stall_seconds"],
                             "%.3f" % r["mean2"], r["peak_rss"] if r["peak_rss"] is not None else "",
                             "%.0f" % r["mean_limit"] if r["mean_limit"] is not None else "",
                             r["final_limit"] if r["final_limit"] is not None else "",
                             "%.0f" % r["mean_held"] if r["mean_held"] is not None else "",
                             tr, mr])
    return rc


if __name__ == "__main__":
    sys.exit(main())
