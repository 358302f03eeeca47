#!/usr/bin/env python3
"""Summarises coll/gpu's per-call trace (coll_gpu_verbose 30): for each kind
of blocking peer-path call (bytes, algorithm, grid, zero-copy, busy) the
number of calls and the median of each step, in microseconds, so that a
framework's calls (e.g. Horovod's, in horovod_bench.sh's logs with
VERBOSE=30) can be told apart from the team's means. The trace's second line
per call ("in the team ... after it") gives the time around the steps.

    coll_gpu_trace.py [--rank R] LOG [LOG ...]

Lines of other ranks are left out with --rank (default: every rank). Only
the Python standard library.
"""
import argparse
import re
import sys

CALL = re.compile(
    r"coll:gpu: rank (?P<rank>\d+): call (?P<call>\d+) kind (?P<kind>\d+) (?P<bytes>\d+) bytes "
    r"(?P<algo>[^\s:,]+)(?P<zc> \(zero-copy\))?(?:, (?P<blocks>\d+) blocks(?P<busy> \(busy\))?)?: "
    r"verdict (?P<verdict>[\d.]+), agreement (?P<agreement>[\d.]+), map\+plan (?P<map>[\d.]+), "
    r"launch (?P<launch>[\d.]+), kernel\+wait (?P<kernel>[\d.]+) us")
AROUND = re.compile(r"coll:gpu: rank (?P<rank>\d+): call (?P<call>\d+) in the team (?P<team>[\d.]+) us, "
                    r"after it \(mappings\) (?P<after>[\d.]+) us")
STEPS = ("verdict", "agreement", "map", "launch", "kernel")


def median(values):
    v = sorted(values)
    if not v:
        return float("nan")
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def read_calls(lines, rank=None):
    """{(rank, call): record} with the steps of each call and, where its
    second line came, the time in the team and after it."""
    calls = {}
    for line in lines:
        m = CALL.search(line) or AROUND.search(line)
        if not m or (rank is not None and int(m["rank"]) != rank):
            continue
        rec = calls.setdefault((int(m["rank"]), int(m["call"])), {})
        for k, v in m.groupdict().items():
            if k in ("rank", "call"):
                continue
            if k in ("zc", "busy"):
                rec[k] = v is not None
            elif v is not None:
                rec[k] = v if k == "algo" else float(v)
    return calls


def summarize(calls):
    """[(group key, count, {step: median})], groups in order of total time."""
    groups = {}
    for rec in calls.values():
        if "algo" not in rec:
            continue  # its first line was cut off
        # (traces of 6826c72 do not give the grid)
        key = (int(rec["bytes"]), rec["algo"], int(rec.get("blocks", -1)), rec.get("zc", False), rec.get("busy", False))
        groups.setdefault(key, []).append(rec)
    rows = []
    for key, recs in groups.items():
        med = {s: median([r[s] for r in recs]) for s in STEPS}
        med["team"] = median([r["team"] for r in recs if "team" in r])
        med["after"] = median([r["after"] for r in recs if "after" in r])
        rows.append((key, len(recs), med))
    rows.sort(key=lambda row: -row[1] * sum(row[2][s] for s in STEPS))
    return rows


def print_rows(rows):
    print("| bytes | algorithm | blocks | calls | verdict | agreement | map+plan | launch | kernel+wait | in team | after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (nbytes, algo, blocks, zc, busy), n, med in rows:
        name = algo + (" zero-copy" if zc else "")
        grid = ("?" if blocks < 0 else str(blocks)) + (" busy" if busy else "")
        cells = " | ".join("-" if med[s] != med[s] else f"{med[s]:.1f}" for s in STEPS + ("team", "after"))
        print(f"| {nbytes} | {name} | {grid} | {n} | {cells} |")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank", type=int, default=None, help="only this rank's lines")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args(argv)
    lines = []
    for path in args.logs:
        with open(path, errors="replace") as f:
            lines += f.readlines()
    print_rows(summarize(read_calls(lines, args.rank)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
