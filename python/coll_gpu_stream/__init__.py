"""coll_gpu_stream: coll/gpu's stream-ordered MPI collectives from Python.

Queues MPI collectives on a CUDA stream, like NCCL's calls: the call returns
at once, the collective runs in stream order, and inside a CUDA graph capture
(``torch.cuda.graph``, CuPy's ``Stream.begin_capture``) it is captured and
replayed with the graph. This is a thin ctypes layer over the C API at the end
of include/coll_gpu_ext.h ("stream-ordered collectives"); docs/stream.md,
section "Python", has the long form::

    from mpi4py import MPI
    import cupy as cp
    from coll_gpu_stream import StreamComm, IN_PLACE

    sc = StreamComm(MPI.COMM_WORLD)
    sc.init()                                   # once, collective, before any capture
    x = cp.ones(1 << 20, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    sc.allreduce(IN_PLACE, x, op=MPI.SUM, stream=s)   # returns at once
    s.synchronize()

Buffers: CuPy arrays (anything with ``__cuda_array_interface__``), PyTorch
tensors, C-contiguous, on the GPU of this rank; page-locked or managed host
memory also works (a pinned CPU tensor, a NumPy array from
``cupyx.empty_pinned``). Element types map to MPI datatypes (``mpi_datatype``);
float16 and bfloat16 use the datatypes and ops of coll_gpu_ext.h
(``half_types``), and their reductions take MPI.SUM, PROD, MIN or MAX.

Streams: a CuPy stream, a torch.cuda.Stream, anything with ``__cuda_stream__``,
an int (a cudaStream_t), or None: the current stream of the buffer's library
(``cupy.cuda.get_current_stream()``, ``torch.cuda.current_stream()``).

``declare_op`` tells coll/gpu that a user op computes what a predefined one
does (coll_gpu_op_declare), so that it reduces it on the GPU.

Needs mpi4py on Open MPI with coll/gpu loaded: its functions are found by name
(``coll_gpu_impl_*``) in the process, where Open MPI puts its components once
MPI is initialised. Errors raise ``StreamError`` (an ``MPI.Exception``),
``NotLoadedError`` where coll/gpu is not in the process.
"""
import ctypes
import ctypes.util
import sys
from types import SimpleNamespace

from mpi4py import MPI

__all__ = ["StreamComm", "StreamError", "NotLoadedError", "IN_PLACE", "available",
           "mpi_datatype", "half_types", "stream_handle", "declare_op"]
__version__ = "0.1.0"

IN_PLACE = MPI.IN_PLACE
_INT_MAX = 2**31 - 1

# ---------------------------------------------------------------- errors

_NOT_LOADED = ("coll/gpu is not loaded: run with --mca coll gpu,... or check ompi_info "
               "(`ompi_info | grep 'coll: gpu'`, and the component path: "
               "`ompi_info --param mca base --level 9 | grep component_path`); "
               "MPI must be initialised first")


def _error_string(code):
    try:
        return MPI.Get_error_string(code)
    except Exception:  # not a code MPI knows
        return "unknown error"


try:
    class StreamError(MPI.Exception):
        """A stream-ordered call failed: ``error_code`` is the MPI error code
        (``Get_error_code()`` too), ``call`` the C function that returned it."""

        def __init__(self, code, call, message=None):
            MPI.Exception.__init__(self, code)  # error_code, Get_error_code() from there
            self.call = call
            self.message = message or _error_string(code)

        def __str__(self):
            return f"{self.call}: {self.message} (MPI error {self.error_code})"
except TypeError:  # an mpi4py whose Exception cannot be subclassed
    class StreamError(RuntimeError):
        """A stream-ordered call failed (see above)."""

        def __init__(self, code, call, message=None):
            RuntimeError.__init__(self, code)
            self.error_code, self.call = code, call
            self.message = message or _error_string(code)

        def Get_error_code(self):
            return self.error_code

        def __str__(self):
            return f"{self.call}: {self.message} (MPI error {self.error_code})"


class NotLoadedError(StreamError):
    """coll/gpu's functions are not in this process (the C API returns
    MPI_ERR_UNSUPPORTED_OPERATION then)."""

    def __init__(self, symbol):
        StreamError.__init__(self, MPI.ERR_UNSUPPORTED_OPERATION, symbol, _NOT_LOADED)


# ---------------------------------------------------------------- symbols

_P, _I = ctypes.c_void_p, ctypes.c_int
# The typedefs coll_gpu_*_fn of coll_gpu_ext.h. Open MPI's handles
# (MPI_Comm, MPI_Datatype, MPI_Op) are pointers.
_SIGNATURES = {
    "stream_init": [_P],
    "stream_status": [_P],
    "allreduce_enqueue": [_P, _P, _I, _P, _P, _P, _P],
    "reduce_enqueue": [_P, _P, _I, _P, _P, _I, _P, _P],
    "bcast_enqueue": [_P, _I, _P, _I, _P, _P],
    "allgather_enqueue": [_P, _I, _P, _P, _I, _P, _P, _P],
    "reduce_scatter_block_enqueue": [_P, _P, _I, _P, _P, _P, _P],
    "alltoall_enqueue": [_P, _I, _P, _P, _I, _P, _P, _P],
    "op_declare": [_P, _P, _P, _P],
}
# What StreamComm needs; op_declare came later and is checked by declare_op.
_STREAM_CALLS = tuple(name for name in _SIGNATURES if name != "op_declare")
_impl = {}


def _process():
    # dlopen(NULL): the program, then every library loaded RTLD_GLOBAL
    # (Open MPI loads its components so). A new CDLL each time: it caches
    # the symbols it found, and one looked up too early must not stick.
    return ctypes.CDLL(None)


def _symbol(name):
    """The process's function `name` (a ctypes function), or None."""
    try:
        return getattr(_process(), name)
    except AttributeError:
        return None


def _fn(name):
    """coll_gpu_impl_<name>, with its signature; NotLoadedError if missing."""
    fn = _impl.get(name)
    if fn is None:
        fn = _symbol("coll_gpu_impl_" + name)
        if fn is None:
            raise NotLoadedError("coll_gpu_impl_" + name)
        fn.argtypes, fn.restype = _SIGNATURES[name], ctypes.c_int
        _impl[name] = fn
    return fn


def available():
    """True where every stream-ordered coll_gpu_impl_* function is in the
    process (call it after MPI is initialised, which importing mpi4py.MPI does
    by default)."""
    try:
        for name in _STREAM_CALLS:
            _fn(name)
        return True
    except NotLoadedError:
        return False


def _libmpi():
    """The MPI library, for the C calls mpi4py cannot make for us."""
    if _symbol("MPI_Op_create") is not None:  # mpi4py loads libmpi RTLD_GLOBAL for Open MPI
        return _process()
    try:  # the libmpi this process has mapped
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "/libmpi.so" in path:
                    return ctypes.CDLL(path)
    except OSError:
        pass
    found = ctypes.util.find_library("mpi")
    if found:
        return ctypes.CDLL(found)
    raise RuntimeError("coll_gpu_stream: cannot find the MPI library (libmpi.so) in this process")


# ---------------------------------------------------------------- handles

def _handle(obj):
    """The C handle of an mpi4py object (Comm, Datatype, Op), as an int."""
    h = getattr(obj, "handle", None)  # mpi4py >= 4
    if h is None:
        h = MPI._handleof(obj)        # mpi4py 3
    return int(h)


def _from_handle(cls, handle):
    """An mpi4py object of class cls around an existing C handle (not owned)."""
    if hasattr(cls, "fromhandle"):    # mpi4py >= 4
        return cls.fromhandle(handle)
    obj = cls()                       # mpi4py 3: write the handle into a null object
    ctypes.c_void_p.from_address(MPI._addressof(obj)).value = handle
    return obj


def _is_in_place(buf):
    return buf is IN_PLACE or isinstance(buf, type(IN_PLACE))


_IN_PLACE_PTR = int(IN_PLACE)  # MPI_IN_PLACE's value in C (1 in Open MPI)

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


# ---------------------------------------------------------------- buffers

class _Buf:
    """What a call needs of a buffer: address, element count and type, the
    library it came from (for the default stream)."""
    __slots__ = ("obj", "ptr", "count", "dtype", "lib", "device")

    def __init__(self, obj, ptr, count, dtype, lib, device=None):
        self.obj, self.ptr, self.count, self.dtype, self.lib, self.device = obj, ptr, count, dtype, lib, device


def _c_contiguous(shape, strides, itemsize):
    if strides is None:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _describe(obj, what, writable=False):
    """_Buf of a torch tensor, an object with __cuda_array_interface__ (CuPy,
    Numba) or __array_interface__ (NumPy on pinned host memory)."""
    mod = type(obj).__module__ or ""
    if mod.startswith("torch") and hasattr(obj, "data_ptr"):
        if not obj.is_contiguous():
            raise ValueError(f"coll_gpu_stream: {what} is not contiguous (use .contiguous())")
        if not obj.is_cuda and not obj.is_pinned():
            raise ValueError(f"coll_gpu_stream: {what} is a CPU tensor that is not pinned "
                             "(use a CUDA tensor, or .pin_memory())")
        return _Buf(obj, obj.data_ptr(), obj.numel(), _dtype_name(obj.dtype), "torch",
                    obj.device if obj.is_cuda else None)
    if mod.startswith("cupy") and hasattr(getattr(obj, "data", None), "ptr"):  # cupy.ndarray
        if not obj.flags.c_contiguous:
            raise ValueError(f"coll_gpu_stream: {what} is not C-contiguous (use cupy.ascontiguousarray)")
        return _Buf(obj, obj.data.ptr, obj.size, _dtype_name(obj.dtype), "cupy")
    lib = "cupy" if mod.startswith("cupy") else "cuda"
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is None:
        iface = getattr(obj, "__array_interface__", None)
        lib = "host"
    if iface is None:
        raise TypeError(f"coll_gpu_stream: {what} must be a CuPy array, a PyTorch tensor or another "
                        f"object with __cuda_array_interface__, not {type(obj).__name__}")
    if iface.get("mask") is not None:
        raise ValueError(f"coll_gpu_stream: {what} is a masked array")
    ptr, readonly = iface["data"]
    if writable and readonly:
        raise ValueError(f"coll_gpu_stream: {what} is read-only")
    typestr = iface["typestr"]
    try:
        itemsize = int(typestr[2:])
    except ValueError:
        raise TypeError(f"coll_gpu_stream: {what}: no MPI datatype for element type {typestr!r}") from None
    shape = tuple(iface["shape"])
    if not _c_contiguous(shape, iface.get("strides"), itemsize):
        raise ValueError(f"coll_gpu_stream: {what} is not C-contiguous (use .copy() or ascontiguousarray)")
    count = 1
    for n in shape:
        count *= n
    # the library's own dtype knows names a typestr cannot say (bfloat16 is 'V2')
    dtype = getattr(obj, "dtype", None)
    name = _dtype_name(dtype) if dtype is not None else _dtype_name(typestr)
    if name not in _MPI_TYPES and name not in _HALF:
        name = _dtype_name(typestr)
    return _Buf(obj, ptr or 0, count, name, lib)


# ---------------------------------------------------------------- streams

def _library_stream(lib, device=None):
    """The current stream of an array library, as an int."""
    if lib == "torch":
        torch = sys.modules["torch"]
        return int(torch.cuda.current_stream(device).cuda_stream)
    if lib in ("cuda", "host"):  # not from a library we know: the one loaded
        if "cupy" in sys.modules:
            lib = "cupy"
        elif "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized():
            return _library_stream("torch")
        else:
            return 0  # CUDA's default stream
    cupy = sys.modules["cupy"]
    return int(cupy.cuda.get_current_stream().ptr)


def stream_handle(stream, buf=None):
    """The cudaStream_t (an int) of `stream`: an int, a CuPy stream (.ptr), a
    torch.cuda.Stream (.cuda_stream), an object with __cuda_stream__, or None
    for the current stream of buf's library (CuPy's or PyTorch's; 0, CUDA's
    default stream, where neither is loaded)."""
    if stream is None:
        if buf is None:
            return _library_stream("cuda")
        return _library_stream(buf.lib, buf.device)
    if isinstance(stream, bool):
        raise TypeError("coll_gpu_stream: a stream, not a bool")
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):  # the CUDA stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        h = getattr(stream, attr, None)
        if h is not None:
            return int(h)
    raise TypeError(f"coll_gpu_stream: not a stream: {type(stream).__name__} "
                    "(a CuPy or PyTorch stream, an int cudaStream_t, or None)")


# ---------------------------------------------------------------- the communicator

def _count(n, what):
    if n > _INT_MAX:
        raise OverflowError(f"coll_gpu_stream: {what}: {n} elements, more than an MPI count "
                            f"({_INT_MAX}): split the call")
    return n


class StreamComm:
    """An mpi4py intracommunicator's stream-ordered collectives.

    Every rank makes the same calls in the same order, as for any collective;
    a communicator's calls must be ordered with each other (one stream, or
    streams the caller orders). Call ``init()`` once (collective) before the
    first call and before any graph capture. The arrays must stay alive
    until the stream has run the call (and, for a captured call, for as long
    as the graph is replayed). The communicator must outlive the graphs that
    captured its calls.
    """

    def __init__(self, comm):
        if comm == MPI.COMM_NULL:
            raise ValueError("coll_gpu_stream: MPI.COMM_NULL")
        if comm.Is_inter():
            raise ValueError("coll_gpu_stream: an intercommunicator (intracommunicators only)")
        _fn("stream_init")  # NotLoadedError now rather than at the first call
        self.comm = comm
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self._c = ctypes.c_void_p(_handle(comm))
        self.initialized = False

    # -- setup and state
    def init(self):
        """coll_gpu_stream_init: collective over the communicator; once,
        before the first enqueued call and before any capture. A second call
        does nothing."""
        if not self.initialized:
            self._check(_fn("stream_init")(self._c), "coll_gpu_impl_stream_init")
            self.initialized = True
        return self

    def reinit(self):
        """coll_gpu_stream_init again, collective over the communicator:
        after an enqueued call failed on some rank, every rank's enqueued
        kernels end and the enqueued calls start afresh (docs/stream.md)."""
        self._check(_fn("stream_init")(self._c), "coll_gpu_impl_stream_init")
        self.initialized = True
        return self

    def status(self):
        """MPI.SUCCESS, or the error an enqueued kernel of this communicator
        met (a peer that did not arrive within coll_gpu_timeout_ms; its later
        calls then fail: free it). Never waits. MPI.Get_error_string(code)
        says what it is."""
        return int(_fn("stream_status")(self._c))

    def check(self):
        """status(), raised as StreamError where it is not MPI.SUCCESS."""
        self._check(self.status(), "coll_gpu_impl_stream_status")

    # -- collectives
    def allreduce(self, sendbuf, recvbuf, op=MPI.SUM, stream=None):
        """recvbuf = op over ranks of sendbuf (or of recvbuf: sendbuf=IN_PLACE)."""
        r = _describe(recvbuf, "recvbuf", writable=True)
        send = self._send(sendbuf, r, r.count, "allreduce")
        dt = mpi_datatype(r.dtype)
        op = _reduction_op(r.dtype, op)
        self._call("allreduce_enqueue", send, r.ptr, _count(r.count, "allreduce"), self._h(dt), self._h(op),
                   self._c, self._stream(stream, r))

    def reduce(self, sendbuf, recvbuf, op=MPI.SUM, root=0, stream=None):
        """recvbuf at root = op over ranks of sendbuf (IN_PLACE at root: of
        recvbuf). recvbuf may be None on the other ranks."""
        self._root(root, "reduce")
        if self.rank == root or recvbuf is not None:
            r = _describe(recvbuf, "recvbuf", writable=True) if recvbuf is not None else None
        else:
            r = None
        if self.rank == root and r is None:
            raise ValueError("coll_gpu_stream: reduce: the root needs a recvbuf")
        if _is_in_place(sendbuf):
            if self.rank != root:
                raise ValueError("coll_gpu_stream: reduce: IN_PLACE only at the root")
            ref, send = r, ctypes.c_void_p(_IN_PLACE_PTR)
        else:
            ref = _describe(sendbuf, "sendbuf")
            send = ctypes.c_void_p(ref.ptr)
            if self.rank == root:
                self._same(ref, r, ref.count, "reduce")
        dt = mpi_datatype(ref.dtype)
        op = _reduction_op(ref.dtype, op)
        self._call("reduce_enqueue", send, r.ptr if r is not None else 0, _count(ref.count, "reduce"),
                   self._h(dt), self._h(op), root, self._c, self._stream(stream, ref))

    def bcast(self, buf, root=0, stream=None):
        """buf on every rank = buf at root."""
        self._root(root, "bcast")
        b = _describe(buf, "buf", writable=True)
        dt = mpi_datatype(b.dtype)
        self._call("bcast_enqueue", b.ptr, _count(b.count, "bcast"), self._h(dt), root, self._c,
                   self._stream(stream, b))

    def allgather(self, sendbuf, recvbuf, stream=None):
        """recvbuf (size * n elements) = every rank's sendbuf (n elements), in
        rank order. IN_PLACE: each rank's block of recvbuf is its input."""
        r = _describe(recvbuf, "recvbuf", writable=True)
        n = self._blocks(r, "allgather")
        send = self._send(sendbuf, r, n, "allgather")
        dt = self._h(mpi_datatype(r.dtype))
        n = _count(n, "allgather")
        self._call("allgather_enqueue", send, n, dt, r.ptr, n, dt, self._c, self._stream(stream, r))

    def reduce_scatter_block(self, sendbuf, recvbuf, op=MPI.SUM, stream=None):
        """recvbuf (n elements) = op over ranks of this rank's block of
        sendbuf (size * n elements). IN_PLACE: recvbuf holds the size * n
        input elements, and the result is its first n."""
        r = _describe(recvbuf, "recvbuf", writable=True)
        if _is_in_place(sendbuf):
            n = self._blocks(r, "reduce_scatter_block")
            send = ctypes.c_void_p(_IN_PLACE_PTR)
        else:
            n = r.count
            s = _describe(sendbuf, "sendbuf")
            self._same(s, r, n * self.size, "reduce_scatter_block", "sendbuf must hold size * len(recvbuf)")
            send = ctypes.c_void_p(s.ptr)
        dt = mpi_datatype(r.dtype)
        op = _reduction_op(r.dtype, op)
        self._call("reduce_scatter_block_enqueue", send, r.ptr, _count(n, "reduce_scatter_block"), self._h(dt),
                   self._h(op), self._c, self._stream(stream, r))

    def alltoall(self, sendbuf, recvbuf, stream=None):
        """Block j of rank i's sendbuf goes to block i of rank j's recvbuf
        (size blocks of n elements each). IN_PLACE: recvbuf is the input."""
        r = _describe(recvbuf, "recvbuf", writable=True)
        n = self._blocks(r, "alltoall")
        send = self._send(sendbuf, r, r.count, "alltoall")
        dt = self._h(mpi_datatype(r.dtype))
        n = _count(n, "alltoall")
        self._call("alltoall_enqueue", send, n, dt, r.ptr, n, dt, self._c, self._stream(stream, r))

    # -- helpers
    @staticmethod
    def _h(obj):
        return ctypes.c_void_p(_handle(obj))

    @staticmethod
    def _check(rc, call):
        if rc != MPI.SUCCESS:
            raise StreamError(rc, call)

    def _call(self, name, *args):
        self._check(_fn(name)(*args), "coll_gpu_impl_" + name)

    def _stream(self, stream, buf):
        return ctypes.c_void_p(stream_handle(stream, buf))

    def _root(self, root, call):
        if not 0 <= root < self.size:
            raise ValueError(f"coll_gpu_stream: {call}: root {root} is not a rank of a communicator "
                             f"of {self.size}")

    def _blocks(self, r, call):
        if r.count % self.size:
            raise ValueError(f"coll_gpu_stream: {call}: recvbuf has {r.count} elements, not a multiple of "
                             f"the communicator's {self.size} ranks")
        return r.count // self.size

    @staticmethod
    def _same(s, r, count, call, how=None):
        if s.dtype != r.dtype:
            raise TypeError(f"coll_gpu_stream: {call}: sendbuf is {s.dtype}, recvbuf {r.dtype}")
        if s.count != count:
            raise ValueError(f"coll_gpu_stream: {call}: sendbuf has {s.count} elements, {count} expected"
                             + (f" ({how})" if how else ""))

    def _send(self, sendbuf, r, count, call):
        """The C sendbuf: MPI_IN_PLACE, or sendbuf's address after checking
        it against recvbuf (same element type, `count` elements)."""
        if _is_in_place(sendbuf):
            return ctypes.c_void_p(_IN_PLACE_PTR)
        s = _describe(sendbuf, "sendbuf")
        self._same(s, r, count, call)
        return ctypes.c_void_p(s.ptr)

    def __repr__(self):
        return f"<StreamComm rank {self.rank} of {self.size}{'' if self.initialized else ', not initialised'}>"
