"""What a call needs of its buffers and stream: address, element count and
type, MPI_IN_PLACE, and the cudaStream_t to queue on."""
import sys

from mpi4py import MPI

from ._types import _HALF, _MPI_TYPES, _dtype_name

IN_PLACE = MPI.IN_PLACE
_INT_MAX = 2**31 - 1


def _is_in_place(buf):
    return buf is IN_PLACE or isinstance(buf, type(IN_PLACE))


_IN_PLACE_PTR = int(IN_PLACE)  # MPI_IN_PLACE's value in C (1 in Open MPI)

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


# ---------------------------------------------------------------- counts

def _count(n, what):
    if n > _INT_MAX:
        raise OverflowError(f"coll_gpu_stream: {what}: {n} elements, more than an MPI count "
                            f"({_INT_MAX}): split the call")
    return n
