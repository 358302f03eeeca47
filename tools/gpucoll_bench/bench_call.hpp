// gpucoll-bench's paths and how one row issues its collective: a Call in a
// mode (blocking, nonblocking, persistent, enqueued) or a captured Graph of
// calls, with the buffers and state every row shares (Context).
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <memory>
#include <set>
#include <string>

#include "check.hpp"
#include "collectives.hpp"
#include "memory.hpp"
#include "mpi_types.hpp"
#include "nccl_path.hpp"
#include "options.hpp"

enum class Kind { Mpi, Nccl, NcclNoSync };

struct Path {
    std::string name;
    Kind kind;
    MPI_Comm comm;   // for Kind::Mpi
    bool streams;    // takes the enqueue and graph modes (mpi once coll_gpu_stream_init worked, nccl)
};

struct Host {        // host staging, each as large as the largest size
    std::unique_ptr<char[]> send, recv, out, ref;
    explicit Host(size_t n) : send(new char[n]), recv(new char[n]), out(new char[n]), ref(new char[n]) {}
};

// Rows of the stream-ordered modes that were not made because an enqueued
// call was refused: rank 0 says so once per message (not per size).
struct Skips {
    std::set<std::string> said;
    unsigned long long rows = 0;
};

struct Context {
    const Options &opt;
    int rank, nranks;
    Buffers &buf;
    Host &host;
    NcclPath *nccl;
    double copy_rate;      // device copy bytes/s for the HBM bound; 0 = no bound
    cudaStream_t stream;   // the mpi path's enqueue and graph calls; null when off
    Skips *skips;
};

// How one row issues its collective: the path and, on the MPI paths, the
// mode. A persistent request is made with the Call (once per size, so every
// start reuses it) and freed with it. NCCL rows in the enqueue and graph
// modes are named nccl-enqueue and nccl-graph.
class Call {
public:
    Call(const Context &x, const Path &p, Mode m, const Case &c)
        : path(p), mode(m),
          name(p.kind == Kind::Nccl && mode_on_stream(m) ? p.name + "-" + mode_name(m) : p.name), x_(x), c_(c)
    {
        if (p.kind == Kind::Mpi && m == Mode::Persistent)
            mpi_persistent_init(p.comm, c, x.buf.send(), x.buf.recv(), &req_);
    }
    ~Call()
    {
        if (req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
    }
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    // Issues the call. On a stream (NCCL; the mpi path's enqueue and graph
    // modes) it is only queued there. Returns coll_gpu_<coll>_enqueue's MPI
    // error code unchecked; the other calls check their own.
    int start()
    {
        if (path.kind != Kind::Mpi) {
            nccl_enqueue(x_.nccl, c_, x_.buf.send(), x_.buf.recv());
            return MPI_SUCCESS;
        }
        switch (mode) {
        case Mode::Blocking: mpi_run(path.comm, c_, x_.buf.send(), x_.buf.recv()); break;
        case Mode::Nonblocking: mpi_istart(path.comm, c_, x_.buf.send(), x_.buf.recv(), &req_); break;
        case Mode::Persistent: MPI_CHECK(MPI_Start(&req_)); break;
        case Mode::Enqueue:
        case Mode::Graph: return mpi_enqueue(path.comm, c_, x_.buf.send(), x_.buf.recv(), x_.stream);
        }
        return MPI_SUCCESS;
    }
    // start(), any error fatal
    void issue()
    {
        const int rc = start();
        if (rc != MPI_SUCCESS) fail(rc);
    }
    // For NCCL the stream sync is part of the call, so the comparison with
    // the MPI calls, which return with the result in place, is fair.
    void wait()
    {
        if (path.kind != Kind::Mpi) nccl_sync(x_.nccl);
        else if (mode_on_stream(mode)) CUDA_CHECK(cudaStreamSynchronize(x_.stream));
        else if (mode != Mode::Blocking) MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
    }
    void once()
    {
        issue();
        wait();
    }
    // Calls queued back to back, one sync at the end (nccl-tests style)
    bool back_to_back() const { return path.kind == Kind::NcclNoSync || mode == Mode::Enqueue; }
    cudaStream_t stream() const { return path.kind == Kind::Mpi ? x_.stream : nccl_stream(x_.nccl); }
    [[noreturn]] void fail(int rc) const
    {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        bench_fatal(__FILE__, __LINE__, mpi_enqueue_name(c_.coll).c_str(), s);
    }

    const Path &path;
    const Mode mode;
    const std::string name;   // of the row

private:
    const Context &x_;
    const Case &c_;
    MPI_Request req_ = MPI_REQUEST_NULL;
};

// A CUDA graph of calls captured on the call's stream, instantiated and
// uploaded once; launched any number of times.
class Graph {
public:
    Graph() = default;
    ~Graph()
    {
        if (exec_) cudaGraphExecDestroy(exec_);
    }
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;

    // Captures `n` calls. Returns the first refused enqueue's MPI error code
    // (and makes no graph); a capture that CUDA rejects ends the run.
    int capture(Call &call, int n)
    {
        const cudaStream_t s = call.stream();
        cudaGraph_t g = nullptr;
        // Thread-local: a library thread's CUDA call elsewhere does not spoil
        // the capture (this thread makes no other CUDA call meanwhile).
        CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        int rc = MPI_SUCCESS;
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) rc = call.start();
        const cudaError_t e = cudaStreamEndCapture(s, &g);
        if (rc != MPI_SUCCESS) {
            if (e == cudaSuccess && g) cudaGraphDestroy(g);
            (void)cudaGetLastError();
            return rc;
        }
        if (e != cudaSuccess) bench_fatal(__FILE__, __LINE__, "cudaStreamEndCapture", cudaGetErrorString(e));
        CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec_, g, 0));
        CUDA_CHECK(cudaGraphDestroy(g));
        CUDA_CHECK(cudaGraphUpload(exec_, s));
        calls = n;
        return MPI_SUCCESS;
    }
    void launch(cudaStream_t s) { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

    int calls = 0;

private:
    cudaGraphExec_t exec_ = nullptr;
};
