"""declare_op of the Python module (python/coll_gpu_stream) against the real
coll/gpu (coll_gpu_impl_op_declare), without a GPU:

    mpirun -n 2 --mca coll_gpu_select_without_gpu 1 python3 op_declare_host.py

A user op made by MPI_Op_create (through ctypes) from a C function of the
process, on MPI_Type_contiguous(2, MPI_BYTE) as Horovod makes its fp16 type:
the declaration is accepted (again too), every misuse is refused with its MPI
error class through StreamError, and the op still reduces host buffers
correctly afterwards. Exits 77 without mpi4py or NumPy.
"""
import ctypes
import os
import sys

try:
    import numpy as np
    from mpi4py import MPI
except ImportError as e:
    print(f"op_declare_host: skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import coll_gpu_stream as cgs  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = failures = 0


def check(name, ok, detail=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print(f"rank {rank}: FAIL {name} {detail}", flush=True)


def refused(name, error_class, fn):
    try:
        fn()
    except cgs.StreamError as e:
        got = MPI.Get_error_class(e.Get_error_code())
        check(name, got == error_class and e.call == "coll_gpu_impl_op_declare",
              f"class {got}, wanted {error_class}: {e}")
        return
    except Exception as e:  # noqa: BLE001
        check(name, False, f"raised {type(e).__name__}: {e}")
        return
    check(name, False, "was accepted")


# A C function of the process to make user ops from: coll/gpu's exported fp16
# sum (coll_gpu_ext.h), which Open MPI put in the process with the component.
fn = cgs._symbol("coll_gpu_ext_float16_sum")
if fn is None:
    print(f"rank {rank}: FAIL coll/gpu is not loaded (run with --mca coll_gpu_select_without_gpu 1)", flush=True)
    sys.exit(1)
create = cgs._libmpi().MPI_Op_create
create.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
handle = ctypes.c_void_p()
check("MPI_Op_create", create(ctypes.cast(fn, ctypes.c_void_p), 1, ctypes.byref(handle)) == MPI.SUCCESS)
user_op = cgs._from_handle(MPI.Op, handle.value)
half = MPI.BYTE.Create_contiguous(2).Commit()
four = MPI.BYTE.Create_contiguous(4).Commit()

cgs.declare_op(user_op, half, "float16", MPI.SUM)
cgs.declare_op(user_op, half, cgs.mpi_datatype(np.float16), MPI.SUM)  # the same again
check("declared", True)
refused("another meaning", MPI.ERR_ARG, lambda: cgs.declare_op(user_op, half, "float16", MPI.MAX))
refused("predefined user_op", MPI.ERR_OP, lambda: cgs.declare_op(MPI.SUM, half, "float16", MPI.SUM))
refused("sizes differ", MPI.ERR_TYPE, lambda: cgs.declare_op(user_op, four, "float16", MPI.SUM))
refused("bitwise on float16", MPI.ERR_OP, lambda: cgs.declare_op(user_op, half, "float16", MPI.BAND))
refused("as_type without a kernel", MPI.ERR_TYPE, lambda: cgs.declare_op(user_op, half, half, MPI.SUM))

# The op still reduces (host buffers: its function, through Open MPI).
x = np.full(33, 0.5 * (rank + 1), np.float16)
y = np.zeros(33, np.float16)
comm.Allreduce([x.view(np.uint16), half], [y.view(np.uint16), half], op=user_op)
want = np.float16(0.5 * size * (size + 1) / 2)
check("allreduce with the declared op", bool(np.all(y == want)), f"{y[:4]} != {want}")

four.Free()
half.Free()
user_op.Free()
print(f"op_declare_host (rank {rank}): {checks} checks, {failures} failed", flush=True)
sys.exit(1 if failures else 0)
