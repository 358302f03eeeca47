"""coll/gpu's stream-ordered collectives from Python (python/coll_gpu_stream)
on CuPy arrays, on a non-default stream, checked against NumPy:

1. eager: allreduce (sum, max, in place), reduce, bcast, allgather (and in
   place), reduce_scatter_block (and in place), alltoall (and in place), over
   several sizes and element types (float16 through coll_gpu_ext.h's type and
   ops); inputs written by kernels on the stream and results read by kernels
   on the stream, with no host wait in between (stream order only);
2. one CUDA graph (CuPy's Stream.begin_capture / end_capture) holding every
   collective between kernels that write their inputs and read their
   outputs, launched 100 times back to back with new inputs each time (a
   kernel before each launch), every launch's outputs copied aside on the
   stream and checked at the end.

    mpirun -n 2 --mca coll_gpu_shared_gpu 1 python3 test_stream_cupy.py

Exits 77 (skipped) without mpi4py, NumPy, CuPy or a GPU on every rank; the
graph part is left out (said so) where CuPy has no stream capture.
"""
import os
import sys

SKIPPED = 77


def skip(why):
    print(f"test_stream_cupy: skipped: {why}", flush=True)
    sys.exit(SKIPPED)


try:
    import numpy as np
    from mpi4py import MPI  # MPI_Init (and coll/gpu loaded) before CUDA is touched
except ImportError as e:
    skip(f"no mpi4py or numpy ({e})")
try:
    import cupy as cp
except ImportError as e:
    skip(f"no cupy ({e})")
try:
    import coll_gpu_stream  # noqa: F401  (installed, or PYTHONPATH=python/)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from coll_gpu_stream import IN_PLACE, StreamComm  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
try:
    ngpus = cp.cuda.runtime.getDeviceCount()
except Exception:  # no driver / no device
    ngpus = 0
if not comm.allreduce(ngpus > 0, op=MPI.LAND):
    skip("no GPU on some rank")
local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank).Get_rank()
cp.cuda.Device(local_rank % ngpus).use()

failures = checks = 0


def check(name, got, want):
    """got: a CuPy or NumPy array; want: NumPy."""
    global failures, checks
    checks += 1
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)
    if got.shape != want.shape or not np.array_equal(got.astype(np.float64), want.astype(np.float64)):
        failures += 1
        print(f"rank {rank}: FAIL {name}: got {got.ravel()[:8]} want {want.ravel()[:8]}", flush=True)


sc = StreamComm(comm)
sc.init()  # collective, before any capture
stream = cp.cuda.Stream(non_blocking=True)
S = size * (size + 1) // 2  # sum over ranks of (rank + 1)


# ---------------------------------------------------------------- 1. eager
def eager(m, dt):
    """One of each collective; m elements per block, n = size * m in all."""
    t = np.dtype(dt).name
    n = size * m
    base = (np.arange(n) % 7 + 1).astype(dt)
    root = size - 1
    with stream:  # kernels and the calls' default stream (None): `stream`
        d_base = cp.asarray(base)
        x = d_base * dt(rank + 1)          # written by a kernel on the stream
        y = cp.empty_like(x)
        sc.allreduce(x, y)                 # stream=None: the current stream, `stream`
        y2 = y + dt(1)                     # read by a kernel on the stream
        z = x.copy()
        sc.allreduce(IN_PLACE, z, op=MPI.MAX, stream=stream)
        r = cp.zeros_like(x)
        sc.reduce(x, r, op=MPI.SUM, root=root, stream=stream.ptr)  # an int handle
        b = x.copy() if rank == root else cp.zeros_like(x)
        sc.bcast(b, root=root, stream=stream)
        g = cp.empty(n, dt)
        sc.allgather(x[:m], g, stream=stream)
        gi = cp.zeros(n, dt)
        gi[rank * m:(rank + 1) * m] = x[:m]
        sc.allgather(IN_PLACE, gi, stream=stream)
        rs = cp.empty(m, dt)
        sc.reduce_scatter_block(x, rs, stream=stream)
        rsi = x.copy()
        sc.reduce_scatter_block(IN_PLACE, rsi, op=MPI.SUM, stream=stream)
        a = cp.empty_like(x)
        sc.alltoall(x, a, stream=stream)
        ai = x.copy()
        sc.alltoall(IN_PLACE, ai, stream=stream)
    stream.synchronize()

    check(f"allreduce {t} {n}", y, base * S)
    check(f"allreduce then kernel {t} {n}", y2, base * S + 1)
    check(f"allreduce in place max {t} {n}", z, base * size)
    if rank == root:
        check(f"reduce {t} {n}", r, base * S)
    check(f"bcast {t} {n}", b, base * (root + 1))
    gathered = np.concatenate([base[:m] * (j + 1) for j in range(size)]).astype(dt)
    check(f"allgather {t} {m}", g, gathered)
    check(f"allgather in place {t} {m}", gi, gathered)
    mine = base[rank * m:(rank + 1) * m]
    check(f"reduce_scatter_block {t} {m}", rs, mine * S)
    check(f"reduce_scatter_block in place {t} {m}", rsi[:m], mine * S)
    a2a = np.concatenate([mine * (j + 1) for j in range(size)]).astype(dt)
    check(f"alltoall {t} {m}", a, a2a)
    check(f"alltoall in place {t} {m}", ai, a2a)


for dt in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.float16):
    for m in (1, 7, 1003):
        eager(m, dt)
eager((1 << 18) + 3, np.float32)


# ---------------------------------------------------------------- 2. graph
def graph_part(m=1000, replays=100):
    n = size * m
    root = 0
    base = (np.arange(n) % 7 + 1).astype(np.float32)
    d_base = cp.asarray(base * (rank + 1))
    # every buffer exists before the capture: nothing is allocated inside it
    src, y, y1, z, r, b = (cp.zeros(n, cp.float32) for _ in range(6))
    g, a = cp.zeros(n, cp.float32), cp.zeros(n, cp.float32)
    rs = cp.zeros(m, cp.float32)
    outs = {"allreduce": y, "then kernel": y1, "allreduce in place max": z, "reduce": r, "bcast": b,
            "allgather": g, "reduce_scatter_block": rs, "alltoall": a}
    history = {k: cp.zeros((replays,) + v.shape, cp.float32) for k, v in outs.items()}

    def body():
        """What the graph holds: kernels that write the inputs (from src,
        which changes between launches), the collectives, a kernel after."""
        sc.allreduce(src, y, stream=stream)
        cp.add(y, 1.0, out=y1)
        cp.copyto(z, src)
        sc.allreduce(IN_PLACE, z, op=MPI.MAX, stream=stream)
        sc.reduce(src, r, root=root, stream=stream)
        if rank == root:
            cp.copyto(b, src)
        else:
            b.fill(0)
        sc.bcast(b, root=root, stream=stream)
        sc.allgather(src[:m], g, stream=stream)
        sc.reduce_scatter_block(src, rs, stream=stream)
        sc.alltoall(src, a, stream=stream)

    with stream:
        cp.add(d_base, 0.0, out=src)
        body()  # once before the capture: CuPy compiles its kernels here
        stream.synchronize()
        stream.begin_capture()
        try:
            body()
        finally:
            graph = stream.end_capture()
        for i in range(replays):
            cp.add(d_base, float(i), out=src)  # new inputs, on the stream, outside the graph
            graph.launch(stream)
            for k, v in outs.items():
                history[k][i][...] = v          # kept aside on the stream
    stream.synchronize()

    mine = base[rank * m:(rank + 1) * m]
    for i in range(replays):
        want = {"allreduce": base * S + size * i, "then kernel": base * S + size * i + 1,
                "allreduce in place max": base * size + i, "bcast": base * (root + 1) + i,
                "allgather": np.concatenate([base[:m] * (j + 1) + i for j in range(size)]),
                "reduce_scatter_block": mine * S + size * i,
                "alltoall": np.concatenate([mine * (j + 1) + i for j in range(size)])}
        if rank == root:
            want["reduce"] = base * S + size * i
        for k, w in want.items():
            check(f"graph replay {i}: {k}", history[k][i], w.astype(np.float32))
    return replays


if hasattr(stream, "begin_capture"):
    replays = graph_part()
    graph_note = f"one graph replayed {replays} times"
else:
    graph_note = f"graph part left out (CuPy {cp.__version__} has no Stream.begin_capture)"

sc.check()  # no enqueued kernel met an error
total = comm.allreduce(failures)
n = comm.allreduce(checks)
if rank == 0:
    print(f"test_stream_cupy: {size} ranks, CuPy {cp.__version__}, {graph_note}: {n} checks, {total} failed",
          flush=True)
    if total == 0:
        print("test_stream_cupy: OK", flush=True)
sys.exit(1 if total else 0)
