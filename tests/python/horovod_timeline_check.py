#!/usr/bin/env python3
"""scripts/horovod_timeline.py on timelines made here: fused tensors counted
once per operation, nested activities, the skipped start, a file cut short."""
import io
import json
import os
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import horovod_timeline as ht  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("horovod_timeline_check: FAIL:", what)


def ev(ph, pid, ts, name=None):
    e = {"ph": ph, "pid": pid, "ts": ts}
    if name:
        e["name"] = name
    return e


# Tensors 1 and 2 fused: their ALLREDUCE holds WAIT_FOR_DATA, then one
# MPI_ALLREDUCE recorded in both with the same span. Tensor 3 alone, later.
# Tensor 4's response starts before t=100 (skipped with --skip 0.0001).
events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {}}]
events += [ev("B", 4, 0, "ALLREDUCE"), ev("B", 4, 10, "MPI_ALLREDUCE"), ev("E", 4, 60), ev("E", 4, 70)]
for pid in (1, 2):
    events += [ev("B", pid, 1000, "ALLREDUCE"), ev("B", pid, 1000, "WAIT_FOR_DATA"), ev("E", pid, 1100)]
for pid in (1, 2):
    events += [ev("B", pid, 1100, "MPI_ALLREDUCE")]
for pid in (1, 2):
    events += [ev("E", pid, 1400), ev("E", pid, 1500)]
events += [ev("B", 3, 2000, "ALLREDUCE"), ev("B", 3, 2000, "MPI_ALLREDUCE"), ev("E", 3, 2100), ev("E", 3, 2200)]
events += [ev("E", 9, 2300)]  # an end without a start: passed over

spans, window = ht.activity_spans(events)
s = ht.summarize(spans, window)
check(s["MPI_ALLREDUCE"][0] == 3, "MPI_ALLREDUCE operations: %r (want 3: fused tensors once)" % (s["MPI_ALLREDUCE"],))
check(s["MPI_ALLREDUCE"][1] == 50 + 300 + 100, "MPI_ALLREDUCE total: %r" % (s["MPI_ALLREDUCE"],))
check(s["WAIT_FOR_DATA"][:2] == (1, 100), "WAIT_FOR_DATA: %r" % (s["WAIT_FOR_DATA"],))
check(s["ALLREDUCE"][:2] == (3, 70 + 500 + 200), "ALLREDUCE: %r" % (s["ALLREDUCE"],))
check(window == 2200, "window %r (want 2200 us)" % window)

spans, window = ht.activity_spans(events, skip_us=100)
s = ht.summarize(spans, window)
check(s["MPI_ALLREDUCE"][0] == 2 and s["ALLREDUCE"][0] == 2, "skip: %r" % (s,))
check(window == 1200 and abs(s["MPI_ALLREDUCE"][3] - 400 / 1200) < 1e-9, "skip window/share: %r %r" % (window, s))

# A file as Horovod leaves it mid-write (no closing bracket), and the CLI.
with tempfile.TemporaryDirectory() as d:
    cut = os.path.join(d, "cut.json")
    with open(cut, "w") as f:
        f.write(json.dumps(events)[:-1] + ",\n")
    check(len(ht.load_events(cut)) == len(events), "a file cut short")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = ht.main(["a=" + cut, "b=" + cut])
    lines = out.getvalue().splitlines()
    row = [l for l in lines if l.startswith("| MPI_ALLREDUCE |")]
    check(rc == 0 and len(row) == 1 and row[0].count("| 3 | 0.5 | 150 |") == 2, "CLI table: %r" % (lines,))

# --tail: three steps of 10 ms, each begun by tensor 5's negotiation (the
# first gradient), its last gradient ready at +8000 and its last allreduce
# done at +8500 (+8700 in the second step); the fourth negotiation only
# closes the third step.
steps = []
for i, tail in enumerate((500, 700, 500)):
    b = i * 10000
    steps += [ev("B", 5, b, "NEGOTIATE_ALLREDUCE"), ev("E", 5, b + 100)]
    steps += [ev("B", 6, b + 200, "NEGOTIATE_ALLREDUCE"), ev("E", 6, b + 300)]
    steps += [ev("B", 6, b + 7000, "ALLREDUCE"), ev("B", 6, b + 7000, "WAIT_FOR_DATA"), ev("E", 6, b + 8000),
              ev("E", 6, b + 8000 + tail)]
    steps += [ev("B", 5, b + 400, "ALLREDUCE"), ev("B", 5, b + 400, "WAIT_FOR_DATA"), ev("E", 5, b + 1000),
              ev("E", 5, b + 2000)]
steps += [ev("B", 5, 30000, "NEGOTIATE_ALLREDUCE"), ev("E", 5, 30100)]
got = ht.step_tails(steps)
check(got == [(500, 10000), (700, 10000), (500, 10000)], "step tails: %r" % (got,))
check(ht.step_tails(steps, skip_us=5000) == [(700, 10000), (500, 10000)], "step tails after --skip")
out = io.StringIO()
with redirect_stdout(out):
    ht.print_tails([("x", got)])
check("| x | 3 | 500 | 567 | 10000 |" in out.getvalue(), "tail table: %r" % out.getvalue())

print("horovod_timeline_check: %d failed" % failures)
sys.exit(1 if failures else 0)
