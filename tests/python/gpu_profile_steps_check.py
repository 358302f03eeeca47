#!/usr/bin/env python3
"""scripts/gpu_profile_steps.py on profiles made here: steps cut at the
optimizer's kernels, the compute stream found by its kernel time, the tail,
the last communication after the backward pass, and a compute wait charged
to the other stream's kernel that ran during it."""
import csv
import gzip
import io
import os
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import gpu_profile_steps as gps  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("gpu_profile_steps_check: FAIL:", what)


def profile(path, steps, tail, comm_after, stall):
    """Steps of 10000 us on stream 7: backward kernels of 1000 us back to back,
    with one wait of `stall` us while stream 16 runs a scale kernel, then
    `tail` us to the optimizer (100 us); stream 16's last op ends comm_after
    us after the last backward kernel."""
    rows, t = [], 0.0
    for _ in range(steps):
        t0 = t
        rows.append(("kernel", "multi_tensor_apply_kernel<sgd>", t, 100.0, 7))
        t += 100.0
        for i in range(6):
            if i == 3 and stall:
                rows.append(("kernel", "scale_buffer_k<float>", t, float(stall), 16))
                t += stall
            rows.append(("kernel", f"conv_{i}", t, 1000.0, 7))
            t += 1000.0
        rows.append(("kernel", "peer_reduce_kernel", t - 50.0, 50.0 + comm_after, 16))
        rows.append(("runtime", "cudaLaunchKernel", t, 5.0, 1234))
        t += tail
        t = max(t, t0 + 100.0)
    rows.append(("kernel", "multi_tensor_apply_kernel<sgd>", t, 100.0, 7))
    with gzip.open(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(("kind", "name", "start_us", "dur_us", "stream", "correlation"))
        for r in sorted(rows, key=lambda r: r[2]):
            w.writerow(r + ("",))


with tempfile.TemporaryDirectory() as d:
    a, b = os.path.join(d, "a.csv.gz"), os.path.join(d, "b.csv.gz")
    profile(a, 12, tail=6000.0, comm_after=30.0, stall=0)
    profile(b, 12, tail=6500.0, comm_after=400.0, stall=250)
    med, (waits, held), n = gps.summarise(b, 5, gps.re.compile("multi_tensor_apply"))
    check(n == 5, f"5 steps counted, got {n}")
    check(abs(med["tail"] - 6500.0) < 1e-6, f"tail 6500, got {med['tail']}")
    check(abs(med["comm after"] - 400.0) < 1e-6, f"comm after 400, got {med['comm after']}")
    check(abs(med["compute busy"] - 6100.0) < 1e-6, f"compute busy 6100, got {med['compute busy']}")
    check(abs(med["step"] - (100 + 6000 + 250 + 6500)) < 1e-6, f"step 12850, got {med['step']}")
    check(abs(med["compute waits beside other work"] - 250.0) < 1e-6,
          f"a 250 us wait beside the scale kernel, got {med['compute waits beside other work']}")
    check(abs(held.get("scale_buffer_k<float>", 0) - 250.0) < 1e-6, f"charged to scale_buffer_k: {dict(held)}")
    check("scale_buffer_k<float>" not in waits, "waits are named by the kernel that waited")
    check(abs(waits.get("conv_3", 0) - 250.0) < 1e-6, f"conv_3 waited 250 us: {dict(waits)}")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = gps.main(["--last", "5", f"nccl={a}", f"mpi={b}"])
    text = out.getvalue()
    check(rc == 0, f"main returned {rc}")
    check("| tail | 6000.0 | 6500.0 |" in text, "the side-by-side tail row:\n" + text)
    check("| compute waits beside other work | 0.0 | 250.0 |" in text, "the waits row:\n" + text)
    # A profile without optimizer steps is an error, not a table of zeros.
    c = os.path.join(d, "c.csv.gz")
    with gzip.open(c, "wt") as f:
        f.write("kind,name,start_us,dur_us,stream,correlation\nkernel,conv,0,10,7,\n")
    err = io.StringIO()
    from contextlib import redirect_stderr
    with redirect_stderr(err):
        rc = gps.main([f"x={c}"])
    check(rc == 1 and "optimizer steps found" in err.getvalue(), f"no steps: rc {rc}, {err.getvalue()!r}")

print("gpu_profile_steps_check:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
