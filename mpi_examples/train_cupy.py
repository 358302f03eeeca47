#!/usr/bin/env python3
"""Data-parallel logistic regression with mpi4py + CuPy, gradients summed by
MPI on GPU memory.

    mpirun -n 2 python3 train_cupy.py [--steps 100] [--numpy]

Each rank computes the gradient of its slice of a synthetic deterministic
data set by hand (no autograd), packs gradient and loss into one CuPy array
and sums it over ranks with comm.Allreduce(MPI.IN_PLACE, buf): mpi4py hands
MPI the device pointer from __cuda_array_interface__.

Checks (exit 1 when one fails): every rank ends with the same weights
(MPI_Allgather); loss curve and weights equal a single-process run on the
full batch (rank 0, float64 tolerance); the model classifies well.
Exits 77 (skipped) without cupy, mpi4py >= 3.1 or a GPU; --numpy runs the
same code on NumPy arrays in host memory.
"""
import argparse
import sys

SKIPPED = 77


def skip(why):
    print(f"train_cupy: skipped: {why}", flush=True)
    sys.exit(SKIPPED)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--samples", type=int, default=4000, help="global batch (rounded to a multiple of ranks)")
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--numpy", action="store_true", help="NumPy arrays on the host (no GPU needed)")
    return ap.parse_args()


args = parse_args()
try:
    import numpy as np
    if args.numpy:
        xp = np
    else:
        import cupy as xp
except ImportError as e:
    skip(f"no {'numpy' if args.numpy else 'cupy'} ({e})")
try:
    import mpi4py
    from mpi4py import MPI  # MPI_Init happens here, before CUDA is touched
except ImportError as e:
    skip(f"no mpi4py ({e})")


def ready():
    """MPI reads memory directly: wait for the kernels queued so far."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def make_data(n, d):
    """Deterministic data (NumPy's legacy generator), copied to the device."""
    rs = np.random.RandomState(1234)
    x = rs.standard_normal((n, d))
    w_true = rs.standard_normal(d)
    y = (x @ w_true + 0.5 * rs.standard_normal(n) > 0).astype(np.float64)
    return xp.asarray(x), xp.asarray(y)


def grad_and_loss(x, y, w, n_total):
    """[gradient (d weights + bias), loss] of this shard's part of the mean
    logistic loss over all n_total samples: summing shards gives the full one."""
    d = x.shape[1]
    z = x @ w[:d] + w[d]
    r = (1.0 / (1.0 + xp.exp(-z)) - y) / n_total
    out = xp.empty(d + 2)
    out[:d] = x.T @ r
    out[d] = r.sum()
    out[d + 1] = (xp.logaddexp(0.0, z) - y * z).sum() / n_total
    return out


def train(x, y, n_total, steps, lr, comm=None):
    w = xp.zeros(x.shape[1] + 1)
    losses = xp.empty(steps)
    for step in range(steps):
        buf = grad_and_loss(x, y, w, n_total)
        if comm is not None:
            ready()
            comm.Allreduce(MPI.IN_PLACE, buf)  # device buffer, summed over ranks
        w -= lr * buf[:-1]
        losses[step] = buf[-1]
    return w, losses


def main():
    comm = MPI.COMM_WORLD
    rank, nranks = comm.Get_rank(), comm.Get_size()
    if tuple(int(v) for v in mpi4py.__version__.split(".")[:2]) < (3, 1):
        skip(f"mpi4py {mpi4py.__version__} cannot pass GPU buffers (needs >= 3.1)")
    if xp is not np:
        local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank).Get_rank()
        try:
            ngpus = xp.cuda.runtime.getDeviceCount()
        except Exception:  # no driver / no device
            ngpus = 0
        if not comm.allreduce(ngpus > 0, op=MPI.LAND):
            skip("no GPU on some rank (use --numpy for host arrays)")
        xp.cuda.Device(local_rank % ngpus).use()

    n = args.samples // nranks * nranks
    x, y = make_data(n, args.features)
    per = n // nranks
    mine = slice(rank * per, (rank + 1) * per)
    w, losses = train(x[mine], y[mine], n, args.steps, args.lr, comm)

    # every rank's weights, gathered on every rank (MPI_Allgather on the device)
    everyone = xp.empty((nranks, w.size))
    ready()
    comm.Allgather(w, everyone)
    spread = float(xp.abs(everyone - w).max())

    ok = True
    if rank == 0:
        print(f"train_cupy: {nranks} ranks, {'NumPy host' if xp is np else 'CuPy device'} arrays, "
              f"{n} samples ({per} per rank), {args.features} features, {args.steps} steps")
        mpi_lib = MPI.Get_library_version().splitlines()[0].strip(" \x00")  # C string: trailing NUL
        print(f"train_cupy: mpi4py {mpi4py.__version__}, {mpi_lib}")
        w_ref, ref_losses = train(x, y, n, args.steps, args.lr)
        for step in range(0, args.steps, 25):
            print(f"  step {step:3d}  loss {float(losses[step]):.10f}  single-process {float(ref_losses[step]):.10f}")
        loss_diff = float(xp.max(xp.abs(losses - ref_losses) / xp.abs(ref_losses)))
        w_diff = float(xp.abs(w - w_ref).max())
        scale = max(1.0, float(xp.abs(w_ref).max()))
        accuracy = float((((x @ w[:-1] + w[-1]) > 0) == (y > 0.5)).mean())
        checks = [
            ("same weights on every rank", spread <= 1e-12 * scale, f"max difference {spread:.2e}"),
            ("loss curve = single-process run", loss_diff <= 1e-10, f"max relative difference {loss_diff:.2e}"),
            ("weights = single-process run", w_diff <= 1e-10 * scale, f"max difference {w_diff:.2e}"),
            ("model learned (accuracy >= 0.85)", accuracy >= 0.85, f"accuracy {accuracy:.3f}"),
        ]
        for what, passed, detail in checks:
            print(f"  {what:34s} {'ok' if passed else 'WRONG'}  ({detail})")
            ok = ok and passed
        print(f"train_cupy: {'ok' if ok else 'FAILED'}", flush=True)
    ok = comm.bcast(ok, root=0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
