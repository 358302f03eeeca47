// The collectives the benchmark runs: buffer layout, nccl-tests size and
// bandwidth conventions, deterministic inputs and the expected results.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "dtypes.hpp"

enum class Coll { Allreduce, ReduceScatter, Allgather, Bcast, Reduce, Alltoall };
// How the MPI paths issue a call: MPI_<Coll>, MPI_I<coll> + MPI_Wait, or a
// request made once per size by MPI(X)_<Coll>_init, then MPI_Start + MPI_Wait.
// The stream-ordered modes (the mpi path and NCCL only) queue the calls on a
// CUDA stream: Enqueue back to back (coll_gpu_<coll>_enqueue, one stream sync
// at the end), Graph as replays of a CUDA graph that captured them.
enum class Mode { Blocking, Nonblocking, Persistent, Enqueue, Graph };

const char *coll_name(Coll c);
bool parse_coll(const std::string &s, Coll *out);
bool coll_is_reduction(Coll c);
bool coll_has_root(Coll c);
// nccl-tests' busbw = algbw * factor
double busbw_factor(Coll c, int nranks);

const char *mode_name(Mode m);
bool parse_mode(const std::string &s, Mode *out);
// Enqueue and Graph: calls queued on a stream, no host wait.
bool mode_on_stream(Mode m);
// False when this MPI library has neither MPI-4's MPI_<Coll>_init nor Open
// MPI's MPIX_<Coll>_init (compile-time choice).
bool mpi_persistent_supported();

// One measurement point. `chunk` is the element count of one rank's block:
// the whole vector for allreduce/bcast/reduce, one rank's share for
// reduce_scatter/allgather/alltoall.
struct Case {
    Coll coll;
    DType dtype;
    Op op;
    bool inplace;
    int root;
    int nranks;
    int rank;
    size_t chunk;

    // nccl-tests convention: total size for allgather/reduce_scatter/alltoall
    size_t size_bytes() const;
    size_t count() const { return size_bytes() / dtype_size(dtype); }
    size_t send_elems() const;   // 0 when the send buffer is unused
    size_t recv_elems() const;
    // The part of the receive buffer that holds this rank's result (elements);
    // `nccl_layout` matters only for in-place reduce_scatter, where NCCL keeps
    // the result at rank*chunk and MPI at 0.
    size_t out_offset(bool nccl_layout) const;
    size_t out_elems() const;    // 0: nothing to check on this rank
};

// Builds the case for a requested size; false when it holds no element.
bool make_case(Coll c, DType t, Op op, bool inplace, int root, int nranks, int rank,
               size_t size_bytes, Case *out);

// The value rank r contributes at element i of its send vector: small
// integers in [-8, 8], so sums of many ranks stay exact in every type.
double input_value(int r, size_t i);

// Writes this rank's input into host buffers laid out like the device ones:
// `send` (send_elems) or, in place, `recv` (recv_elems; parts that are not
// input keep whatever the caller put there).
void fill_input(const Case &c, void *send_host, void *recv_host);

// Writes the expected out_elems() result elements into `ref`.
void fill_reference(const Case &c, void *ref);

// Compares out_elems() elements; returns the number of wrong ones and
// describes the first in `first_error`.
size_t compare_output(const Case &c, const void *out, const void *ref, std::string *first_error);

// Least HBM bytes (read + written, over all ranks) one call moves when every
// rank's buffers are in the same GPU memory; see the table in collectives.cpp.
double hbm_traffic_bytes(const Case &c);

// Runs the collective through MPI on `comm` (blocking).
void mpi_run(MPI_Comm comm, const Case &c, void *send, void *recv);
// The same as MPI_I<coll>: completes with MPI_Wait(req).
void mpi_istart(MPI_Comm comm, const Case &c, void *send, void *recv, MPI_Request *req);
// A persistent request for the same call (MPI_Start it; MPI_Request_free it).
// Only when mpi_persistent_supported().
void mpi_persistent_init(MPI_Comm comm, const Case &c, void *send, void *recv, MPI_Request *req);
// The same call queued on the CUDA stream `stream` (coll_gpu_<coll>_enqueue of
// include/coll_gpu_ext.h; capturable). Returns its MPI error code unchecked:
// MPI_ERR_UNSUPPORTED_OPERATION where coll/gpu is not loaded, or while
// capturing a call it cannot take on the GPU.
int mpi_enqueue(MPI_Comm comm, const Case &c, void *send, void *recv, void *stream);
// coll_gpu_stream_init(comm): once, collective, before the first enqueued call.
int mpi_stream_init(MPI_Comm comm);
// "coll_gpu_allreduce_enqueue", ... (for messages)
std::string mpi_enqueue_name(Coll c);
