"""Registered windows (coll_gpu_register in include/coll_gpu_ext.h): buffers
every rank maps every other rank's once, so that nonblocking and persistent
collectives on them run zero-copy from their first call."""
import ctypes

from ._buffers import _describe
from ._library import StreamError, _fn, _handle
from ._types import mpi_datatype


def register_window(comm, buf):
    """Registers ``buf`` (a CuPy array or CUDA tensor, C-contiguous, on this
    rank's GPU, 16-byte aligned) as a window of ``comm``; returns the window,
    an int, the same on every rank. Collective: every rank of ``comm`` calls
    it with its own buffer, in the same order as its other collectives.
    Keep ``buf`` alive and call ``deregister_window`` (collective) before
    freeing it. StreamError (MPI.ERR_ARG: some rank's buffer cannot be a
    window; ERR_NO_MEM: 64 registered; ERR_UNSUPPORTED_OPERATION: ``comm`` has
    no GPU path); NotLoadedError where coll/gpu is not loaded."""
    b = _describe(buf, "buf", writable=True)
    nbytes = b.count * mpi_datatype(b.dtype).Get_size()
    window = ctypes.c_int(-1)
    rc = _fn("register")(ctypes.c_void_p(_handle(comm)), ctypes.c_void_p(b.ptr), ctypes.c_size_t(nbytes),
                         ctypes.byref(window))
    if rc != 0:
        raise StreamError(rc, "coll_gpu_impl_register")
    return window.value


def deregister_window(comm, window):
    """Deregisters ``window`` of ``comm`` (collective): waits until no
    collective may still use it on any rank; the buffer may then be freed."""
    rc = _fn("deregister")(ctypes.c_void_p(_handle(comm)), ctypes.c_int(window))
    if rc != 0:
        raise StreamError(rc, "coll_gpu_impl_deregister")
