#!/usr/bin/env python3
"""Where a training step's time goes on the GPU, from the CSVs that
scripts/gpu_profile_rank0.py writes (horovod_bench.sh PROFILE=1), builds side
by side:

    scripts/gpu_profile_steps.py [--last N] [--step-end REGEX] nccl=prof_nccl.csv.gz mpi=prof_mpi.csv.gz

A step ends where the optimizer's kernels end (--step-end, by default
PyTorch's fused optimizer kernel, multi_tensor_apply); the compute stream is
the one with the most kernel time. Per build, the median over the last N
steps of:
  step              optimizer end to optimizer end
  compute busy      kernel time on the compute stream
  compute idle      the rest of the step: the compute stream waits
  tail              last backward kernel's end to the optimizer's start
  comm after        last backward kernel's end to the last other-stream op's end
  other busy        kernel and copy time on every other stream
  compute waits beside other work
                    time the compute stream waited, not before the optimizer,
                    while another stream's work ran (it held the SMs)
and the compute stream's largest waits, by the kernel that waited (summed per
step): a wait before the optimizer is the tail; others are work of another
stream holding the SMs (in Horovod's MPI path, its scale kernel over a fused
buffer) or the host not launching.
"""
import argparse
import csv
import gzip
import re
import statistics
import sys
from collections import defaultdict

GPU_KINDS = ("kernel", "memcpy", "memset")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    ops = []
    with opener(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] in GPU_KINDS:
                ops.append((float(r["start_us"]), float(r["dur_us"]), r["stream"], r["name"]))
    ops.sort()
    return ops


def compute_stream(ops):
    busy = defaultdict(float)
    for _, dur, stream, name in ops:
        if not name.startswith("Memcpy") and not name.startswith("Memset"):
            busy[stream] += dur
    return max(busy, key=busy.get) if busy else None


def step_ends(ops, comp, step_end):
    """End of each step's optimizer: its kernels come as a group, far apart
    from the next step's (5 ms)."""
    groups = []
    for op in ops:
        if op[2] == comp and step_end.search(op[3]):
            if groups and op[0] - groups[-1][-1][0] < 5000:
                groups[-1].append(op)
            else:
                groups.append([op])
    return [(g[0][0], g[-1][0] + g[-1][1]) for g in groups]


def one_step(ops, comp, begin, end, opt_start, step_end):
    mine = [o for o in ops if begin <= o[0] < end]
    comp_ops = [o for o in mine if o[2] == comp]
    other = [o for o in mine if o[2] != comp]
    backward = [o[0] + o[1] for o in comp_ops if o[0] < opt_start and not step_end.search(o[3])]
    last = max(backward) if backward else begin
    comm = [o[0] + o[1] for o in other if o[0] < opt_start]
    waits, held = defaultdict(float), defaultdict(float)
    t = begin
    for o in comp_ops:
        if o[0] - t > 30:
            waits[o[3]] += o[0] - t
            if not step_end.search(o[3]):  # not the tail: who held the GPU meanwhile
                for x in other:
                    overlap = min(o[0], x[0] + x[1]) - max(t, x[0])
                    if overlap > 0:
                        held[x[3]] += overlap
        t = max(t, o[0] + o[1])
    busy = sum(o[1] for o in comp_ops)
    return {
        "step": end - begin,
        "compute busy": busy,
        "compute idle": end - begin - busy,
        "tail": opt_start - last,
        "comm after": (max(comm) - last) if comm else 0.0,
        "other busy": sum(o[1] for o in other),
        "compute waits beside other work": sum(held.values()),
    }, (waits, held)


def summarise(path, last, step_end):
    ops = load(path)
    comp = compute_stream(ops)
    ends = step_ends(ops, comp, step_end)
    if len(ends) < 3:
        raise ValueError(f"{path}: {len(ends)} optimizer steps found (--step-end {step_end.pattern!r})")
    steps, waits, held = [], defaultdict(float), defaultdict(float)
    pairs = list(zip(ends[:-1], ends[1:]))[-last:]
    for (_, begin), (opt_start, end) in pairs:
        s, (w, h) = one_step(ops, comp, begin, end, opt_start, step_end)
        steps.append(s)
        for name, us in w.items():
            waits[name] += us / len(pairs)
        for name, us in h.items():
            held[name] += us / len(pairs)
    med = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
    return med, (waits, held), len(pairs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="LABEL=CSV (a gpu_profile_rank0.py file)")
    ap.add_argument("--last", type=int, default=25, help="steps counted, the last ones (default 25)")
    ap.add_argument("--step-end", default="multi_tensor_apply", help="regex of the optimizer's kernels")
    ap.add_argument("--waits", type=int, default=4, help="largest compute-stream waits listed per build")
    a = ap.parse_args(argv)
    step_end = re.compile(a.step_end)
    results = []
    for run in a.runs:
        label, _, path = run.partition("=")
        if not path:
            label, path = run, run
        try:
            results.append((label,) + summarise(path, a.last, step_end))
        except (OSError, ValueError, KeyError) as e:
            print(f"gpu_profile_steps: {e}", file=sys.stderr)
            return 1
    keys = list(results[0][1])
    print("| median us per step | " + " | ".join(f"{r[0]} ({r[3]} steps)" for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for k in keys:
        print(f"| {k} | " + " | ".join(f"{r[1][k]:.1f}" for r in results) + " |")
    for label, _, (waits, held), _ in results:
        print(f"\n{label}: the compute stream's largest waits, us per step, by the kernel that waited")
        for name, us in sorted(waits.items(), key=lambda x: -x[1])[:a.waits]:
            print(f"  {us:9.1f}  {name[:90]}")
        if held:
            print(f"{label}: other streams' work during the waits before the optimizer, us per step")
            for name, us in sorted(held.items(), key=lambda x: -x[1])[:a.waits]:
                print(f"  {us:9.1f}  {name[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
