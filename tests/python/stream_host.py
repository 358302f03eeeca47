"""The Python module of the stream-ordered collectives (python/coll_gpu_stream)
on host NumPy arrays, against a stand-in for coll/gpu (stream_stub.c: the same
coll_gpu_impl_* symbols, each running the blocking MPI collective), so that
it runs without a GPU:

    mpirun -n 2 --mca coll ^gpu python3 stream_host.py path/to/libcoll_gpu_stream_stub.so

Checks the ctypes plumbing end to end: symbols found in the process once the
library is loaded RTLD_GLOBAL (NotLoadedError before), handles of mpi4py
objects passed as C pointers, MPI_IN_PLACE, counts of every collective, the
element types' MPI datatypes, fp16/bf16 through coll_gpu_ext.h's datatypes
and ops (MPI_Op_create through ctypes on the stub's exported functions),
stream arguments, error codes raised as StreamError, argument checks.
Exits 77 without mpi4py or NumPy.
"""
import ctypes
import os
import sys
from types import SimpleNamespace

try:
    import numpy as np
    from mpi4py import MPI
except ImportError as e:
    print(f"stream_host: skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import coll_gpu_stream as cgs  # noqa: E402
from coll_gpu_stream import IN_PLACE, StreamComm  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = failures = 0


def check(name, ok, detail=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print(f"rank {rank}: FAIL {name} {detail}", flush=True)


def same(name, got, want):
    check(name, np.array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)),
          f"got {np.asarray(got)[:8]} want {np.asarray(want)[:8]}")


def raises(name, exc, fn):
    try:
        fn()
    except exc as e:
        return e
    except Exception as e:  # noqa: BLE001
        check(name, False, f"raised {type(e).__name__}: {e}, not {exc.__name__}")
        return None
    check(name, False, f"did not raise {exc.__name__}")
    return None


# 1. Without coll/gpu in the process: a clear error.
if len(sys.argv) < 2:
    print("usage: stream_host.py LIBSTUB.so")
    sys.exit(2)
if cgs.available():
    print(f"rank {rank}: coll/gpu's symbols are already in the process (run with --mca coll ^gpu): "
          "the not-loaded check is left out", flush=True)
else:
    e = raises("not loaded", cgs.NotLoadedError, lambda: StreamComm(comm))
    check("not loaded: message", e is not None and "coll/gpu is not loaded" in str(e), str(e))
    check("not loaded: an MPI.Exception", isinstance(e, MPI.Exception))
    check("not loaded: code", e is not None and e.Get_error_code() == MPI.ERR_UNSUPPORTED_OPERATION)

stub = ctypes.CDLL(os.path.abspath(sys.argv[1]), mode=ctypes.RTLD_GLOBAL)
knob = {name: ctypes.c_int.in_dll(stub, "coll_gpu_stub_" + name) for name in
        ("fail_next", "status", "init_calls", "last_count")}
last_stream = ctypes.c_void_p.in_dll(stub, "coll_gpu_stub_last_stream")
check("available", cgs.available())

# 2. Datatypes.
check("float32", cgs.mpi_datatype(np.float32) == MPI.FLOAT)
check("float64 by typestr", cgs.mpi_datatype("<f8") == MPI.DOUBLE)
check("int64", cgs.mpi_datatype(np.dtype("int64")) == MPI.INT64_T)
check("uint8", cgs.mpi_datatype("uint8") == MPI.UINT8_T)
check("torch name", cgs.mpi_datatype("torch.int32") == MPI.INT32_T)
check("float16 name", cgs.mpi_datatype(np.float16).Get_name() == "COLL_GPU_FLOAT16")
check("bfloat16 name", cgs.mpi_datatype("torch.bfloat16").Get_name() == "COLL_GPU_BFLOAT16")
check("float16 size", cgs.mpi_datatype("float16").Get_size() == 2)
check("float16 once", cgs.mpi_datatype("float16") == cgs.mpi_datatype(np.float16))
raises("no datatype", TypeError, lambda: cgs.mpi_datatype(np.dtype("U3")))

# 3. init: collective, once.
sc = StreamComm(comm)
sc.init()
sc.init()
check("init once", knob["init_calls"].value == 1, f"{knob['init_calls'].value} calls")
check("status", sc.status() == MPI.SUCCESS)

# 4. Every collective, every type, with and without IN_PLACE.
base_n = 7
root = 1 % size
for dt in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
           np.uint8, np.uint16, np.uint32, np.uint64, np.float16):
    t = np.dtype(dt).name
    base = (np.arange(base_n) % 5 + 1).astype(dt)
    x = base * dt(rank + 1)
    y = np.zeros(base_n, dt)
    sc.allreduce(x, y)
    same(f"allreduce {t}", y, base * (size * (size + 1) // 2))
    check(f"allreduce {t} count", knob["last_count"].value == base_n)
    z = x.copy()
    sc.allreduce(IN_PLACE, z, op=MPI.MAX)
    same(f"allreduce in place max {t}", z, base * size)
    z = x.copy()
    sc.allreduce(MPI.IN_PLACE, z, op=MPI.MIN)
    same(f"allreduce in place min {t}", z, base)

    r = np.zeros(base_n, dt)
    sc.reduce(x, r if rank == root else None, op=MPI.SUM, root=root)
    if rank == root:
        same(f"reduce {t}", r, base * (size * (size + 1) // 2))
    z = x.copy()
    sc.reduce(IN_PLACE if rank == root else z, z, root=root)
    if rank == root:
        same(f"reduce in place {t}", z, base * (size * (size + 1) // 2))

    b = base.copy() if rank == root else np.zeros(base_n, dt)
    sc.bcast(b, root=root)
    same(f"bcast {t}", b, base)

    mine = np.full(base_n, rank + 1, dt)
    everyone = np.zeros(base_n * size, dt)
    sc.allgather(mine, everyone)
    want = np.repeat(np.arange(1, size + 1), base_n)
    same(f"allgather {t}", everyone, want)
    check(f"allgather {t} count", knob["last_count"].value == base_n)
    g = np.zeros(base_n * size, dt)
    g[rank * base_n:(rank + 1) * base_n] = rank + 1
    sc.allgather(IN_PLACE, g)
    same(f"allgather in place {t}", g, want)

    rs_in = (np.tile(np.arange(base_n) % 4, size) + rank).astype(dt)
    rs_out = np.zeros(base_n, dt)
    sc.reduce_scatter_block(rs_in, rs_out)
    rs_want = (np.arange(base_n) % 4) * size + size * (size - 1) // 2
    same(f"reduce_scatter_block {t}", rs_out, rs_want)
    z = rs_in.copy()
    sc.reduce_scatter_block(IN_PLACE, z, op=MPI.SUM)
    same(f"reduce_scatter_block in place {t}", z[:base_n], rs_want)

    send = (np.arange(size * base_n) // base_n * 10 + rank).astype(dt)
    recv = np.zeros(size * base_n, dt)
    sc.alltoall(send, recv)
    a2a_want = np.arange(size * base_n) // base_n + rank * 10
    same(f"alltoall {t}", recv, a2a_want)
    z = send.copy()
    sc.alltoall(IN_PLACE, z)
    same(f"alltoall in place {t}", z, a2a_want)
    # multi-dimensional arrays count all their elements
    m = np.ones((3, base_n), dt)
    sc.allreduce(IN_PLACE, m)
    same(f"allreduce 2-d {t}", m.ravel(), np.full(3 * base_n, size))


# 5. bfloat16: NumPy has none; an array of its bits that says it is one
class BF16:
    def __init__(self, values):
        bits = np.asarray(values, np.float32).view(np.uint32) >> 16  # exact for these small integers
        self.bits = bits.astype(np.uint16)
        self.dtype = SimpleNamespace(name="bfloat16")

    @property
    def __array_interface__(self):
        iface = dict(self.bits.__array_interface__)
        iface["typestr"] = "|V2"
        iface["descr"] = [("", "|V2")]
        return iface

    def values(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


x = BF16(np.arange(base_n) % 5 + rank + 1)
sc.allreduce(IN_PLACE, x)
same("allreduce bfloat16", x.values(), (np.arange(base_n) % 5) * size + size * (size + 1) // 2)
x = BF16(np.arange(base_n) + rank)
sc.allreduce(IN_PLACE, x, op=MPI.MAX)
same("allreduce bfloat16 max", x.values(), np.arange(base_n) + size - 1)
raises("bfloat16 band", TypeError, lambda: sc.allreduce(IN_PLACE, BF16([1.0]), op=MPI.BAND))
raises("float16 user op", TypeError, lambda: sc.allreduce(IN_PLACE, np.ones(2, np.float16), op=MPI.REPLACE))

# 6. half_types() as mpi4py objects, in ordinary mpi4py calls
h = cgs.half_types()
x = np.full(5, rank + 1, np.float16)
comm.Allreduce(MPI.IN_PLACE, [x, h.float16], op=h.float16_sum)
same("mpi4py Allreduce float16_sum", x, np.full(5, size * (size + 1) // 2))
x = np.full(5, rank + 1, np.float16)
comm.Allreduce(MPI.IN_PLACE, [x, h.float16], op=h.float16_prod)
same("mpi4py Allreduce float16_prod", x, np.full(5, float(np.prod(np.arange(1, size + 1)))))
x = BF16(np.full(5, rank + 2))
comm.Allreduce(MPI.IN_PLACE, [x.bits, h.bfloat16], op=h.bfloat16_min)
same("mpi4py Allreduce bfloat16_min", x.values(), np.full(5, 2))
x = np.full(3, rank + 1, np.float16)
sc.allreduce(IN_PLACE, x, op=h.float16_max)  # the ext op itself is accepted too
same("allreduce float16 ext op", x, np.full(3, size))

# 7. Streams
y = np.zeros(2, np.float32)
for name, stream, want in (("int", 1234, 1234), ("cupy-like .ptr", SimpleNamespace(ptr=77), 77),
                           ("torch-like .cuda_stream", SimpleNamespace(cuda_stream=88), 88),
                           ("__cuda_stream__", SimpleNamespace(__cuda_stream__=lambda: (0, 99)), 99),
                           ("None, no cupy or torch", None, 0)):
    if stream is None and ("cupy" in sys.modules or "torch" in sys.modules):
        continue
    sc.allreduce(IN_PLACE, y, stream=stream)
    check(f"stream {name}", (last_stream.value or 0) == want, f"got {last_stream.value}")
raises("stream str", TypeError, lambda: sc.allreduce(IN_PLACE, y, stream="s"))
raises("stream bool", TypeError, lambda: sc.allreduce(IN_PLACE, y, stream=True))

# 8. Error codes
knob["fail_next"].value = MPI.ERR_COUNT
e = raises("error raised", cgs.StreamError, lambda: sc.allreduce(IN_PLACE, y))
check("error: code", e is not None and e.error_code == MPI.ERR_COUNT and e.Get_error_code() == MPI.ERR_COUNT)
check("error: names the call", e is not None and "coll_gpu_impl_allreduce_enqueue" in str(e), str(e))
check("error: MPI's words", e is not None and MPI.Get_error_string(MPI.ERR_COUNT) in str(e), str(e))
check("error: an MPI.Exception", isinstance(e, MPI.Exception))
knob["status"].value = MPI.ERR_OTHER
check("status error", sc.status() == MPI.ERR_OTHER)
raises("check raises", cgs.StreamError, sc.check)
knob["status"].value = MPI.SUCCESS
sc.check()

# 9. Argument checks (local: no collective is entered)
f32 = np.zeros(8, np.float32)
raises("sizes differ", ValueError, lambda: sc.allreduce(np.zeros(7, np.float32), f32))
raises("types differ", TypeError, lambda: sc.allreduce(np.zeros(8, np.float64), f32))
raises("not contiguous", ValueError, lambda: sc.allreduce(IN_PLACE, np.zeros(16, np.float32)[::2]))
raises("read-only recvbuf", ValueError, lambda: sc.bcast(np.broadcast_to(np.float32(1), (4,))))
raises("not a buffer", TypeError, lambda: sc.bcast([1.0, 2.0]))
raises("bad root", ValueError, lambda: sc.bcast(f32, root=size))
if size > 1:
    raises("allgather block", ValueError, lambda: sc.allgather(IN_PLACE, np.zeros(size * 3 + 1, np.float32)))
    raises("reduce in place off root", ValueError,
           lambda: sc.reduce(IN_PLACE, f32, root=(rank + 1) % size))
    raises("reduce_scatter_block sizes", ValueError,
           lambda: sc.reduce_scatter_block(np.zeros(size * 8 + 1, np.float32), f32))


class Huge:  # 2**31 elements at address 0: never touched, the count is refused first
    __array_interface__ = {"data": (0, False), "shape": (2**31,), "typestr": "<f4", "version": 3}


raises("count over int", OverflowError, lambda: sc.allreduce(IN_PLACE, Huge()))
check("repr", "StreamComm rank" in repr(sc))

total = comm.allreduce(failures)
n = comm.allreduce(checks)
if rank == 0:
    print(f"stream_host: {size} ranks, mpi4py {sys.modules['mpi4py'].__version__}: "
          f"{n} checks, {total} failed", flush=True)
sys.exit(1 if total else 0)
