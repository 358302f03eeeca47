#!/usr/bin/env python3
"""Where Horovod's time goes, from its timeline (HOROVOD_TIMELINE=file.json,
written by rank 0): per activity (MPI_ALLREDUCE, NCCL_ALLREDUCE,
MEMCPY_IN_FUSION_BUFFER, WAIT_FOR_DATA, QUEUE, ...) how many operations ran,
their total and mean time, and their share of the window; several files side
by side (e.g. the NCCL build's and the MPI build's of the same benchmark).

    horovod_timeline.py [--skip S] NAME=timeline.json [NAME=timeline.json ...]

Horovod writes one "process" per tensor and the same activity into every
tensor of a fused response, with the same start and end: an operation is
counted once per distinct (activity, start, end). --skip leaves out the first
S seconds (start-up and warm-up batches). Only the Python standard library.

    horovod_timeline.py --tail [--skip S] NAME=timeline.json [...]

says, per training step, how long the allreduces go on after the last
gradient is ready (the end of the last WAIT_FOR_DATA to the end of the last
ALLREDUCE): the part of a step that reduction adds when the rest overlaps the
backward pass. Steps are told apart by the first tensor Horovod negotiates
(the first gradient of each backward pass).
"""
import argparse
import json
import sys


def load_events(path):
    """The timeline's events. Horovod keeps the file a valid JSON array after
    every event; a run cut short may still leave a trailing comma or no ']'."""
    with open(path) as f:
        text = f.read().strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        text = text.rstrip(",")
        return json.loads(text if text.endswith("]") else text + "]")


def activity_spans(events, skip_us=0.0):
    """Distinct (name, start, end) spans of the activities, from the B/E pairs
    of each tensor (nested: an E closes the latest open B of its tensor), and
    the window they lie in. Spans starting within skip_us of the first event
    are left out."""
    stamps = [e["ts"] for e in events if "ts" in e]
    if not stamps:
        return set(), 0.0
    t0 = min(stamps) + skip_us
    open_by_tensor = {}
    spans = set()
    for e in events:
        ph = e.get("ph")
        if ph == "B":
            open_by_tensor.setdefault(e.get("pid"), []).append((e.get("name", "?"), e["ts"]))
        elif ph == "E":
            stack = open_by_tensor.get(e.get("pid"))
            if not stack:
                continue  # an end whose start fell before the file began
            name, start = stack.pop()
            if start >= t0:
                spans.add((name, start, e["ts"]))
    if not spans:
        return spans, 0.0
    window = max(end for _, _, end in spans) - min(start for _, start, _ in spans)
    return spans, window


def summarize(spans, window):
    """{activity: (operations, total us, mean us, share of the window)}."""
    table = {}
    for name, start, end in spans:
        count, total = table.get(name, (0, 0.0))
        table[name] = (count + 1, total + (end - start))
    return {name: (n, total, total / n, total / window if window > 0 else 0.0)
            for name, (n, total) in table.items()}


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else 0


def step_tails(events, skip_us=0.0):
    """[(tail us, step period us)] per training step whose start and end
    both lie in the window: the step begins where the first-negotiated
    tensor is negotiated again; its tail runs from its last gradient ready
    to its last allreduce done."""
    stamps = [e["ts"] for e in events if "ts" in e]
    if not stamps:
        return []
    t0 = min(stamps) + skip_us
    open_by_tensor, spans = {}, []
    for e in events:
        if e.get("ph") == "B":
            open_by_tensor.setdefault(e.get("pid"), []).append((e.get("name", "?"), e["ts"]))
        elif e.get("ph") == "E" and open_by_tensor.get(e.get("pid")):
            name, start = open_by_tensor[e.get("pid")].pop()
            if start >= t0:
                spans.append((name, start, e["ts"], e.get("pid")))
    negotiated = sorted((s, pid) for name, s, _, pid in spans if name == "NEGOTIATE_ALLREDUCE")
    if not negotiated:
        return []
    first = negotiated[0][1]
    starts = [s for s, pid in negotiated if pid == first]
    steps = []
    for begin, end in zip(starts, starts[1:]):
        inside = [(name, e) for name, s, e, _ in spans if begin <= s < end]
        ready = [e for name, e in inside if name == "WAIT_FOR_DATA"]
        done = [e for name, e in inside if name == "ALLREDUCE"]
        if ready and done:
            steps.append((max(done) - max(ready), end - begin))
    return steps


def print_tails(runs):
    """runs: [(label, [(tail, period)])]."""
    print("| run | steps | tail median us | tail mean us | step median us |")
    print("|---|---|---|---|---|")
    for label, steps in runs:
        tails = [t for t, _ in steps]
        mean = sum(tails) / len(tails) if tails else 0
        print(f"| {label} | {len(steps)} | {median(tails):.0f} | {mean:.0f} | {median([p for _, p in steps]):.0f} |")


def print_side_by_side(runs):
    """runs: [(label, summary, window_us)], one column group each."""
    names = sorted({name for _, summary, _ in runs for name in summary})
    head = "| activity |" + "".join(f" {label}: ops | total ms | mean us | share |" for label, _, _ in runs)
    print(head)
    print("|---|" + "---|---|---|---|" * len(runs))
    for name in names:
        row = f"| {name} |"
        for _, summary, _ in runs:
            if name in summary:
                n, total, mean, share = summary[name]
                row += f" {n} | {total / 1e3:.1f} | {mean:.0f} | {100 * share:.1f}% |"
            else:
                row += " - | - | - | - |"
        print(row)
    print("| window (ms) |" + "".join(f" | {w / 1e3:.1f} | | |" for _, _, w in runs))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip", type=float, default=0.0, help="seconds at the start to leave out")
    ap.add_argument("--tail", action="store_true", help="per step: allreduce time after the last gradient")
    ap.add_argument("runs", nargs="+", help="NAME=timeline.json (or a path: its name is the label)")
    args = ap.parse_args(argv)
    runs = []
    for spec in args.runs:
        label, _, path = spec.partition("=") if "=" in spec else (spec, "", spec)
        if args.tail:
            runs.append((label, step_tails(load_events(path), args.skip * 1e6)))
            continue
        spans, window = activity_spans(load_events(path), args.skip * 1e6)
        runs.append((label, summarize(spans, window), window))
    if args.tail:
        print_tails(runs)
    else:
        print_side_by_side(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
