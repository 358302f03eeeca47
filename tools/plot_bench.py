#!/usr/bin/env python3
"""Charts from gpucoll-bench CSV files: latency and bus bandwidth against
message size, one PNG per (collective, datatype, op, placement, ranks),
each path (mpi = coll/gpu, staged, nccl, nccl-nosync) and mode (blocking,
nonblocking, persistent, enqueue, graph) as one line: a colour per mode,
a line style and marker per path.

    python3 tools/plot_bench.py results/*.csv -o results/

Needs matplotlib (exits 77 without it).
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

STYLE = {  # path -> (label, line style, marker)
    "mpi": ("coll/gpu", "-", "o"),
    "staged": ("MPI staged", ":", "s"),
    "nccl": ("NCCL synced", "--", "^"),
    "nccl-nosync": ("NCCL no sync", "--", "v"),
    "nccl-enqueue": ("NCCL", "--", "v"),
    "nccl-graph": ("NCCL", "--", "D"),
}
MODE_COLOR = {"blocking": "tab:blue", "nonblocking": "tab:cyan", "persistent": "tab:purple",
              "enqueue": "tab:orange", "graph": "tab:red"}


def human(nbytes):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:g} {unit}"
        nbytes /= 1024


def load(files):
    """Rows grouped by series: {(coll, dtype, op, inplace, mem, nranks): {(path, mode): [(size, lat, busbw, valid)]}}"""
    series = defaultdict(lambda: defaultdict(list))
    for name in files:
        with open(name, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["coll"], row["dtype"], row["op"], row["inplace"], row["mem"], int(row["nranks"]))
                series[key][(row["path"], row.get("mode") or "blocking")].append(
                    (int(row["size_bytes"]), float(row["avg_us"]), float(row["busbw_gbs"]), row["valid"]))
    return series


def plot(key, paths, outdir, plt):
    coll, dtype, op, inplace, mem, nranks = key
    title = f"{coll} {dtype}{'' if op == 'none' else ' ' + op}, {'in-place' if inplace == '1' else 'out-of-place'}, " \
            f"{nranks} ranks, {mem} buffers"
    fig, (ax_lat, ax_bw) = plt.subplots(1, 2, figsize=(13, 4.8))
    order = lambda kv: (list(STYLE).index(kv[0][0]) if kv[0][0] in STYLE else 99,
                        list(MODE_COLOR).index(kv[0][1]) if kv[0][1] in MODE_COLOR else 99)
    for (path, mode), points in sorted(paths.items(), key=order):
        points.sort()
        name, style, marker = STYLE.get(path, (path, "-", "x"))
        label, color = f"{name} {mode}", MODE_COLOR.get(mode)
        sizes = [p[0] for p in points]
        ax_lat.plot(sizes, [p[1] for p in points], marker=marker, ls=style, color=color, label=label, ms=4)
        ax_bw.plot(sizes, [p[2] for p in points], marker=marker, ls=style, color=color, label=label, ms=4)
        bad = [p for p in points if p[3] == "FAIL"]
        if bad:  # wrong results must not hide in a nice curve
            ax_lat.scatter([p[0] for p in bad], [p[1] for p in bad], s=90, facecolors="none",
                           edgecolors="red", label=f"{label}: WRONG RESULT")
    ax_lat.set(xscale="log", yscale="log", xlabel="message size (bytes)", ylabel="latency (us, lower is better)")
    ax_bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s, higher is better)")
    for ax in (ax_lat, ax_bw):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        ticks = [s for s in sorted({p[0] for pts in paths.values() for p in pts})]
        step = max(1, len(ticks) // 8)
        ax.set_xticks(ticks[::step])
        ax.set_xticklabels([human(t) for t in ticks[::step]], rotation=30, ha="right")
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    name = f"{coll}_{dtype}_{op}_{'inplace' if inplace == '1' else 'outofplace'}_{mem}_np{nranks}.png"
    out = os.path.join(outdir, name)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", help="CSV files written by gpucoll-bench --csv")
    ap.add_argument("-o", "--outdir", default=".", help="folder for the PNG files")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: matplotlib is not installed; no charts made", file=sys.stderr)
        return 77
    os.makedirs(args.outdir, exist_ok=True)
    series = load(args.csv)
    if not series:
        print("plot_bench: no rows in " + " ".join(args.csv), file=sys.stderr)
        return 1
    for key in sorted(series):
        print(plot(key, series[key], args.outdir, plt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
