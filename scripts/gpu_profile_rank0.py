#!/usr/bin/env python3
"""Runs a Python program of an mpirun with rank 0 under PyTorch's profiler
(CUPTI: every kernel, copy and CUDA runtime call of the process, whichever
thread or library made it, Horovod's and coll/gpu's included) and writes them
as one gzipped CSV; the other ranks run it plain. Nsight Systems is not on
every GPU machine; torch is wherever Horovod is.

    mpirun -n 4 python3 scripts/gpu_profile_rank0.py /tmp/out/prof.csv.gz train.py ARGS...

CSV columns: kind (kernel, memcpy, memset, runtime, other), name, start_us,
dur_us, stream (GPU activity) or thread (runtime calls), correlation.
scripts/gpu_profile_steps.py summarises it per training step.
"""
import csv
import gzip
import json
import os
import runpy
import sys
import tempfile


def rank():
    for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"):
        if k in os.environ:
            return int(os.environ[k])
    return 0


KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "cuda_runtime": "runtime",
         "cuda_driver": "runtime"}


def write_csv(trace_json, out):
    with open(trace_json) as f:
        events = json.load(f).get("traceEvents", [])
    rows = []
    for e in events:
        if e.get("ph") != "X":
            continue
        kind = KINDS.get(e.get("cat", ""), None)
        if kind is None:
            continue
        args = e.get("args", {})
        where = args.get("stream", e.get("tid", "")) if kind != "runtime" else e.get("tid", "")
        rows.append((kind, e.get("name", ""), float(e.get("ts", 0)), float(e.get("dur", 0)), where,
                     args.get("correlation", "")))
    rows.sort(key=lambda r: r[2])
    with gzip.open(out, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(("kind", "name", "start_us", "dur_us", "stream", "correlation"))
        w.writerows(rows)
    return len(rows)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, script, args = sys.argv[1], sys.argv[2], sys.argv[2:]
    sys.argv = args
    if rank() != 0:
        runpy.run_path(script, run_name="__main__")
        return
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        path = t.name
    prof.export_chrome_trace(path)
    n = write_csv(path, out)
    os.unlink(path)
    print(f"gpu_profile_rank0: {n} events into {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
