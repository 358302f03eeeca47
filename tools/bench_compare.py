#!/usr/bin/env python3
"""Before/after from gpucoll-bench CSVs: new / old time per call.

    tools/bench_compare.py --old base*.csv --new new*.csv [--path mpi]

Each build may have several runs (scripts/device_bench_compare.sh REPEAT=n):
per row (kind, type, op, place, memory, ranks, size, mode) the median of its
runs is taken, then new / old; the table gives the geometric mean of those
ratios per mode and size class, and the median difference in microseconds
for the small sizes (up to 32 KiB), where a host-side cost shows. Rows must
be valid in both builds; a row missing from either is left out.
"""
import argparse
import csv
import math
import statistics
import sys

MODES = ["blocking", "persistent", "nonblocking", "enqueue", "graph"]
CLASSES = [("8 B-2 KiB", 0, 2048), ("32-512 KiB", 2049, 512 << 10), ("8 MiB", (512 << 10) + 1, 8 << 20),
           ("128 MiB", (8 << 20) + 1, 128 << 20), ("256 MiB+", (128 << 20) + 1, 1 << 62)]


def load(paths, path):
    runs = {}
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                if r["path"] != path or r.get("valid", "ok") != "ok":
                    continue
                key = (r["coll"], r["dtype"], r["op"], r["inplace"], r["mem"], r["nranks"], int(r["size_bytes"]),
                       r["mode"])
                runs.setdefault(key, []).append(float(r["avg_us"]))
    return {k: statistics.median(v) for k, v in runs.items()}


def size_class(size):
    for name, lo, hi in CLASSES:
        if lo <= size <= hi:
            return name
    return None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def compare(old, new):
    ratios, diffs = {}, {}
    for k in sorted(old.keys() & new.keys()):
        if old[k] <= 0 or new[k] <= 0:
            continue
        mode, size = k[7], k[6]
        ratios.setdefault((size_class(size), mode), []).append(new[k] / old[k])
        if size <= 32 << 10:
            diffs.setdefault(mode, []).append(new[k] - old[k])
    return ratios, diffs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", nargs="+", required=True)
    ap.add_argument("--new", nargs="+", required=True)
    ap.add_argument("--path", default="mpi")
    a = ap.parse_args(argv)
    ratios, diffs = compare(load(a.old, a.path), load(a.new, a.path))
    if not ratios:
        print("no row in both builds", file=sys.stderr)
        return 1
    modes = [m for m in MODES if any(k[1] == m for k in ratios)]
    print("| size | " + " | ".join(modes) + " |")
    print("|---|" + "---|" * len(modes))
    for name, _, _ in CLASSES:
        if not any(k[0] == name for k in ratios):
            continue
        cells = ["%.2f" % geomean(ratios[(name, m)]) if (name, m) in ratios else "-" for m in modes]
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("median new - old up to 32 KiB, us: " +
          ", ".join("%s %+.2f" % (m, statistics.median(diffs[m])) for m in modes if m in diffs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
