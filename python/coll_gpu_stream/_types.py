"""Element types and the MPI datatypes and ops coll/gpu reduces them with:
fp16/bf16 from coll_gpu_ext.h, and ops declared equal to a predefined one."""
import ctypes
import sys
from types import SimpleNamespace

from mpi4py import MPI

from ._library import NotLoadedError, StreamError, _fn, _from_handle, _handle, _libmpi, _symbol

# ---------------------------------------------------------------- datatypes

# element type name (NumPy's / PyTorch's) -> predefined MPI datatype
_MPI_TYPES = {
    "float32": "FLOAT", "float64": "DOUBLE",
    "int8": "INT8_T", "int16": "INT16_T", "int32": "INT32_T", "int64": "INT64_T",
    "uint8": "UINT8_T", "uint16": "UINT16_T", "uint32": "UINT32_T", "uint64": "UINT64_T",
    "bool": "C_BOOL", "complex64": "C_FLOAT_COMPLEX", "complex128": "C_DOUBLE_COMPLEX",
}
_HALF = ("float16", "bfloat16")
# __cuda_array_interface__ / __array_interface__ typestr (without byte order) -> name
_TYPESTR = {"f2": "float16", "f4": "float32", "f8": "float64",
            "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
            "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
            "b1": "bool", "c8": "complex64", "c16": "complex128"}
_TORCH_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                  "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}


def _dtype_name(dtype):
    """'float32', 'bfloat16', ... for a NumPy/CuPy dtype, a torch.dtype, a
    typestr ('<f4') or a name."""
    name = None
    if type(dtype).__module__.startswith("torch"):
        name = str(dtype)             # 'torch.float32'
    elif "numpy" in sys.modules and not (isinstance(dtype, str) and dtype.startswith("torch.")):
        try:                          # dtypes, scalar types (np.float32), typestrs, names
            name = sys.modules["numpy"].dtype(dtype).name
        except (TypeError, ValueError):
            pass
    if name is None:
        name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
        if not isinstance(name, str):
            name = getattr(dtype, "__name__", None) or str(dtype)
    name = name.replace("torch.", "")
    if name[:1] in "<>|=" and name[1:] in _TYPESTR:
        name = _TYPESTR[name[1:]]
    return _TORCH_ALIASES.get(name, name)


class _HalfTypes:
    """coll_gpu_ext.h's datatypes (MPI_Type_contiguous(2, MPI_BYTE), named so
    that coll/gpu knows them) and ops (MPI_Op_create on coll/gpu's exported
    functions, which it knows by address). Made once per process, on first
    use, and never freed (like MPI's predefined objects)."""

    def __init__(self):
        self.types, self.ops = {}, {}

    def datatype(self, kind):
        dt = self.types.get(kind)
        if dt is None:
            dt = MPI.BYTE.Create_contiguous(2)
            dt.Set_name("COLL_GPU_FLOAT16" if kind == "float16" else "COLL_GPU_BFLOAT16")
            dt.Commit()
            self.types[kind] = dt
        return dt

    def op(self, kind, name):
        key = (kind, name)
        op = self.ops.get(key)
        if op is None:
            symbol = f"coll_gpu_ext_{kind}_{name}"
            fn = _symbol(symbol)
            if fn is None:  # the header falls back to its own host functions; we have none
                raise NotLoadedError(symbol)
            create = _libmpi().MPI_Op_create
            create.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
            create.restype = ctypes.c_int
            handle = ctypes.c_void_p()
            rc = create(ctypes.cast(fn, ctypes.c_void_p), 1, ctypes.byref(handle))
            if rc != MPI.SUCCESS:
                raise StreamError(rc, "MPI_Op_create")
            op = _from_handle(MPI.Op, handle.value)
            self.ops[key] = op
        return op


_half = _HalfTypes()
_HALF_OPS = ("sum", "prod", "min", "max")


def half_types():
    """coll_gpu_ext.h's fp16/bf16 datatypes and ops as mpi4py objects, for
    ordinary mpi4py calls too::

        h = half_types()
        comm.Allreduce(MPI.IN_PLACE, [x, h.float16], op=h.float16_sum)

    Attributes: float16, bfloat16, float16_sum/prod/min/max,
    bfloat16_sum/prod/min/max. The ops need coll/gpu in the process
    (NotLoadedError otherwise)."""
    ns = SimpleNamespace()
    for kind in _HALF:
        setattr(ns, kind, _half.datatype(kind))
        for name in _HALF_OPS:
            setattr(ns, f"{kind}_{name}", _half.op(kind, name))
    return ns


def mpi_datatype(dtype):
    """The MPI datatype of an element type: a NumPy/CuPy dtype, a torch.dtype,
    or a name ('float32', 'bfloat16'). TypeError for one without an MPI
    datatype here."""
    name = _dtype_name(dtype)
    if name in _HALF:
        return _half.datatype(name)
    attr = _MPI_TYPES.get(name)
    dt = getattr(MPI, attr, None) if attr else None
    if dt is None or dt == MPI.DATATYPE_NULL:
        raise TypeError(f"coll_gpu_stream: no MPI datatype for element type {dtype!r} "
                        f"(supported: {', '.join(sorted(list(_MPI_TYPES) + list(_HALF)))})")
    return dt


def _reduction_op(name, op):
    """The op to pass for element type `name`: fp16/bf16 take coll_gpu_ext.h's
    ops for MPI.SUM/PROD/MIN/MAX (or those ops themselves)."""
    if name not in _HALF:
        return op
    for opname, predefined in zip(_HALF_OPS, (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX)):
        if op == predefined:
            return _half.op(name, opname)
    if any(op == o for o in _half.ops.values()):
        return op
    raise TypeError(f"coll_gpu_stream: {name} reductions take MPI.SUM, MPI.PROD, MPI.MIN or MPI.MAX")


def declare_op(user_op, user_type, as_type, as_op):
    """coll_gpu_op_declare (include/coll_gpu_ext.h, "user ops declared equal
    to a built-in one"): ``user_op`` applied to ``user_type`` computes what
    ``as_op`` computes on ``as_type``, so that coll/gpu reduces it on the GPU
    instead of calling the op's host function on host copies::

        half = MPI.BYTE.Create_contiguous(2).Commit()
        op = ...  # an MPI.Op made by MPI_Op_create from a C function
        declare_op(op, half, "float16", MPI.SUM)

    ``as_type``: an MPI datatype, or an element type as ``mpi_datatype`` takes
    it ('float16' and 'bfloat16' give coll_gpu_ext.h's types); ``as_op``: a
    predefined op (MPI.SUM, PROD, MIN, MAX, and the logical and bitwise ones
    on integers). Declare on every rank, before the op's first collective.

    The declaration is about the op's C function (every op made from it), so
    never declare an op made by ``MPI.Op.Create(python_function)``: mpi4py
    serves Python functions through C functions it reuses for the next Python
    function once an op is freed. StreamError with the MPI error class
    (ERR_OP, ERR_TYPE, ERR_ARG for another meaning than an earlier
    declaration's) on refusal; NotLoadedError where coll/gpu is not loaded."""
    if not isinstance(as_type, MPI.Datatype):
        as_type = mpi_datatype(as_type)
    rc = _fn("op_declare")(ctypes.c_void_p(_handle(user_op)), ctypes.c_void_p(_handle(user_type)),
                           ctypes.c_void_p(_handle(as_type)), ctypes.c_void_p(_handle(as_op)))
    if rc != MPI.SUCCESS:
        raise StreamError(rc, "coll_gpu_impl_op_declare")
