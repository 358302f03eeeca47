"""Finding coll/gpu's C functions in the process, the errors they raise, and
the C handles of mpi4py objects."""
import ctypes
import ctypes.util

from mpi4py import MPI

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
    "register": [_P, _P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)],
    "deregister": [_P, _I],
}
# What StreamComm needs; the others came later and are checked where used.
_STREAM_CALLS = tuple(name for name in _SIGNATURES if name not in ("op_declare", "register", "deregister"))
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
