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
``register_window`` / ``deregister_window`` (coll_gpu_register) map a buffer
of every rank into every other once, so that mpi4py's nonblocking calls on it
(``comm.Iallreduce`` on CuPy arrays) and this package's stream-ordered calls
(captured ones too) run zero-copy.

Needs mpi4py on Open MPI with coll/gpu loaded: its functions are found by name
(``coll_gpu_impl_*``) in the process, where Open MPI puts its components once
MPI is initialised. Errors raise ``StreamError`` (an ``MPI.Exception``),
``NotLoadedError`` where coll/gpu is not in the process.
"""
import ctypes

from mpi4py import MPI

from ._library import NotLoadedError, StreamError, _fn, _handle, available
from ._types import _reduction_op, declare_op, half_types, mpi_datatype
from ._buffers import IN_PLACE, _IN_PLACE_PTR, _count, _describe, _is_in_place, stream_handle
from ._windows import deregister_window, register_window

# tests/python/op_declare_host.py takes these from the package.
from ._library import _from_handle, _libmpi, _symbol  # noqa: F401

__all__ = ["StreamComm", "StreamError", "NotLoadedError", "IN_PLACE", "available",
           "mpi_datatype", "half_types", "stream_handle", "declare_op", "register_window", "deregister_window"]
__version__ = "0.1.0"

# Tracebacks, reprs and help() name the public objects coll_gpu_stream's, as
# they did when they were defined in this file.
for _public in (StreamError, NotLoadedError, available, half_types, mpi_datatype, declare_op,
                stream_handle, register_window, deregister_window):
    _public.__module__ = __name__
del _public

# ---------------------------------------------------------------- the communicator

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
