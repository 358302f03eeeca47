"""mpi4py with CuPy and PyTorch device arrays through coll/gpu.

Calls Allreduce, Bcast, Allgather, Alltoall and Reduce_scatter_block on GPU
arrays (and in place where MPI allows it), and checks each against numpy.
Exits 77 when mpi4py, a GPU, or both array libraries are missing.
"""
import sys

try:
    from mpi4py import MPI
    import numpy as np
except ImportError:
    print("mpi4py or numpy missing: skipped")
    sys.exit(77)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = 0


def check(name, got, want):
    global failures
    if not np.array_equal(got, want):
        failures += 1
        print(f"rank {rank}: FAIL {name}: got {got[:8]} want {want[:8]}", flush=True)


def run(lib, xp, to_host, device_array):
    """xp: the array module; device_array(np.ndarray) -> device array."""
    for n in (1, 7, 1003, (1 << 20) + 3):
        for dt in (np.float32, np.float64, np.int32):
            base = (np.arange(n) % 5 + 1).astype(dt)
            x = device_array(base * (rank + 1))
            y = device_array(np.zeros(n, dt))
            comm.Allreduce(x, y, op=MPI.SUM)
            check(f"{lib} Allreduce {dt.__name__} {n}", to_host(y), base * (size * (size + 1) // 2))
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.MAX)
            check(f"{lib} Allreduce in place MAX {n}", to_host(x), base * size)
        b = device_array(np.arange(n, dtype=np.float32) if rank == 0 else np.zeros(n, np.float32))
        comm.Bcast(b, root=0)
        check(f"{lib} Bcast {n}", to_host(b), np.arange(n, dtype=np.float32))
        mine = device_array(np.full(n, rank, np.float32))
        allv = device_array(np.zeros(n * size, np.float32))
        comm.Allgather(mine, allv)
        check(f"{lib} Allgather {n}", to_host(allv), np.repeat(np.arange(size, dtype=np.float32), n))
        send = device_array((np.arange(size * n) // n * 100 + rank).astype(np.float32))
        recv = device_array(np.zeros(size * n, np.float32))
        comm.Alltoall(send, recv)
        check(f"{lib} Alltoall {n}", to_host(recv), (np.arange(size * n) // n + rank * 100).astype(np.float32))
        rs_in = device_array(np.tile(np.arange(n, dtype=np.float32), size) + rank)
        rs_out = device_array(np.zeros(n, np.float32))
        comm.Reduce_scatter_block(rs_in, rs_out, op=MPI.SUM)
        check(f"{lib} Reduce_scatter_block {n}", to_host(rs_out),
              np.arange(n, dtype=np.float32) * size + size * (size - 1) / 2)


ran = 0
try:
    import cupy as cp
    if cp.cuda.runtime.getDeviceCount() > 0:
        cp.cuda.Device(rank % cp.cuda.runtime.getDeviceCount()).use()
        run("cupy", cp, cp.asnumpy, cp.asarray)
        cp.cuda.runtime.deviceSynchronize()
        ran += 1
except ImportError:
    pass
try:
    import torch
    if torch.cuda.is_available():
        dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
        run("torch", torch, lambda t: t.cpu().numpy(), lambda a: torch.from_numpy(a).to(dev))
        torch.cuda.synchronize()
        ran += 1
except ImportError:
    pass

if ran == 0:
    if rank == 0:
        print("no GPU array library with a GPU: skipped")
    sys.exit(77)
total = comm.allreduce(failures)
if rank == 0:
    print(f"mpi4py device test ({size} ranks, {ran} array libraries): {total} failures")
sys.exit(1 if total else 0)
