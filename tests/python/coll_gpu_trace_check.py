#!/usr/bin/env python3
"""scripts/coll_gpu_trace.py on trace lines made here: calls grouped by size,
algorithm, grid, zero-copy and busy; medians per step; the second line per
call joined to its first; --rank; the older format without the grid."""
import io
import os
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import coll_gpu_trace as ct  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("coll_gpu_trace_check: FAIL:", what)


def call(rank, n, nbytes, algo, blocks, kernel, zc=True, busy=False, agreement=1.0):
    grid = "" if blocks is None else f", {blocks} blocks{' (busy)' if busy else ''}"
    return (f"[vm:1] coll:gpu: rank {rank}: call {n} kind 0 {nbytes} bytes {algo}{' (zero-copy)' if zc else ''}{grid}: "
            f"verdict 1.0, agreement {agreement}, map+plan 2.0, launch 5.0, kernel+wait {kernel} us\n")


def around(rank, n, team, after):
    return f"coll:gpu: rank {rank}: call {n} in the team {team} us, after it (mappings) {after} us\n"


lines = [
    call(0, 1, 1024, "allreduce_ll", 1, 10.0, zc=False), around(0, 1, 20.0, 0.5),
    call(0, 2, 64 << 20, "allreduce_writes", 128, 300.0), around(0, 2, 310.0, 1.0),
    call(0, 3, 64 << 20, "allreduce_writes", 128, 320.0, agreement=9.0), around(0, 3, 340.0, 3.0),
    call(0, 4, 64 << 20, "allreduce_writes", 128, 500.0), around(0, 4, 520.0, 2.0),
    call(0, 5, 64 << 20, "allreduce_writes", 32, 440.0, busy=True),  # its second line is missing
    call(1, 2, 64 << 20, "allreduce_writes", 128, 999.0),
    "coll:gpu: rank 0: peer-to-peer team on GPU 0000:00:06.0 ready\n",
    call(0, 6, 4000, "allreduce_oneshot", None, 18.5, zc=False),
]
calls = ct.read_calls(lines, rank=0)
check(len(calls) == 6, "calls of rank 0: %d (want 6)" % len(calls))
check(calls[(0, 2)]["team"] == 310.0 and calls[(0, 2)]["after"] == 1.0, "second line joined: %r" % calls[(0, 2)])
check(calls[(0, 5)]["busy"] and calls[(0, 5)]["blocks"] == 32 and "team" not in calls[(0, 5)], "busy call: %r" % calls[(0, 5)])
check("blocks" not in calls[(0, 6)] and calls[(0, 6)]["algo"] == "allreduce_oneshot", "older format: %r" % calls[(0, 6)])
rows = ct.summarize(calls)
keys = [r[0] for r in rows]
check(keys[0] == (64 << 20, "allreduce_writes", 128, True, False), "most time first: %r" % keys)
check(len(rows) == 4, "groups: %r (want 4: busy and idle grids apart)" % keys)
med = rows[0][2]
check(rows[0][1] == 3 and med["kernel"] == 320.0 and med["agreement"] == 1.0 and med["team"] == 340.0,
      "medians: %r" % (rows[0],))
check(ct.median([1.0, 2.0]) == 1.5, "median of an even count")
with tempfile.TemporaryDirectory() as d:
    log = os.path.join(d, "run.log")
    with open(log, "w") as f:
        f.writelines(lines)
    out = io.StringIO()
    with redirect_stdout(out):
        rc = ct.main(["--rank", "0", log])
    text = out.getvalue()
    check(rc == 0 and "| 67108864 | allreduce_writes zero-copy | 128 | 3 | 1.0 | 1.0 | 2.0 | 5.0 | 320.0 | 340.0 | 2.0 |" in text,
          "CLI table: %r" % text)
    check("| 67108864 | allreduce_writes zero-copy | 32 busy | 1 |" in text and "| 4000 | allreduce_oneshot | ? | 1 |" in text,
          "CLI busy and older rows: %r" % text)
    out = io.StringIO()
    with redirect_stdout(out):
        ct.main([log])
    check("| 67108864 | allreduce_writes zero-copy | 128 | 4 |" in out.getvalue(), "every rank without --rank")

print("coll_gpu_trace_check: %d failed" % failures)
sys.exit(1 if failures else 0)
