#include "nccl_path.hpp"

#include <cstdio>

#include "check.hpp"

#ifdef GPUCOLL_BENCH_HAVE_NCCL
#include <nccl.h>

struct NcclPath {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
};

#define NCCL_CHECK(p, call)                                                    \
    do {                                                                       \
        ncclResult_t r_ = (call);                                              \
        if (r_ != ncclSuccess) {                                               \
            char m_[512];                                                      \
            std::snprintf(m_, sizeof m_, "%s (%s)", ncclGetErrorString(r_),    \
                          (p) && (p)->comm ? ncclGetLastError((p)->comm) : ""); \
            bench_fatal(__FILE__, __LINE__, #call, m_);                        \
        }                                                                      \
    } while (0)

bool nccl_compiled() { return true; }

std::string nccl_version()
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
    char s[32];
    // codes are 2.9+: 20900 style; older ones 2708 style
    if (v >= 10000) std::snprintf(s, sizeof s, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else std::snprintf(s, sizeof s, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
    return s;
}

bool nccl_supports(const Case &c)
{
    // alltoall is a group of send/recv pairs: it cannot overwrite its input
    return !(c.coll == Coll::Alltoall && c.inplace);
}

NcclPath *nccl_create(MPI_Comm comm)
{
    int rank, size;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    NcclPath *p = new NcclPath;
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(p, ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    NCCL_CHECK(p, ncclCommInitRank(&p->comm, size, id, rank));
    CUDA_CHECK(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
    return p;
}

void nccl_destroy(NcclPath *p)
{
    if (!p) return;
    ncclCommDestroy(p->comm);
    cudaStreamDestroy(p->stream);
    delete p;
}

static ncclDataType_t nccl_type(DType t)
{
    switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::I32: return ncclInt32;
    }
    return ncclFloat32;
}

static ncclRedOp_t nccl_op(Op op)
{
    return op == Op::Sum ? ncclSum : op == Op::Max ? ncclMax : ncclMin;
}

void nccl_enqueue(NcclPath *p, const Case &c, void *send, void *recv)
{
    const ncclDataType_t t = nccl_type(c.dtype);
    const ncclRedOp_t op = nccl_op(c.op);
    const size_t n = c.chunk, es = dtype_size(c.dtype);
    char *rb = static_cast<char *>(recv);
    // NCCL's in-place convention: the send pointer is where this rank's input
    // sits inside the receive buffer.
    switch (c.coll) {
    case Coll::Allreduce:
        NCCL_CHECK(p, ncclAllReduce(c.inplace ? recv : send, recv, n, t, op, p->comm, p->stream));
        break;
    case Coll::ReduceScatter:
        NCCL_CHECK(p, ncclReduceScatter(c.inplace ? recv : send,
                                        c.inplace ? rb + (size_t)c.rank * n * es : recv,
                                        n, t, op, p->comm, p->stream));
        break;
    case Coll::Allgather:
        NCCL_CHECK(p, ncclAllGather(c.inplace ? rb + (size_t)c.rank * n * es : send, recv, n, t,
                                    p->comm, p->stream));
        break;
    case Coll::Bcast:
        NCCL_CHECK(p, ncclBroadcast(recv, recv, n, t, c.root, p->comm, p->stream));
        break;
    case Coll::Reduce:
        NCCL_CHECK(p, ncclReduce(c.inplace ? recv : send, recv, n, t, op, c.root, p->comm, p->stream));
        break;
    case Coll::Alltoall: {
        // ncclSend/ncclRecv exist since NCCL 2.7; ncclAlltoAll only in recent
        // releases, and the runtime library may be older than the header.
        const char *sb = static_cast<const char *>(send);
        NCCL_CHECK(p, ncclGroupStart());
        for (int r = 0; r < c.nranks; r++) {
            NCCL_CHECK(p, ncclSend(sb + (size_t)r * n * es, n, t, r, p->comm, p->stream));
            NCCL_CHECK(p, ncclRecv(rb + (size_t)r * n * es, n, t, r, p->comm, p->stream));
        }
        NCCL_CHECK(p, ncclGroupEnd());
        break;
    }
    }
}

void nccl_sync(NcclPath *p) { CUDA_CHECK(cudaStreamSynchronize(p->stream)); }
cudaStream_t nccl_stream(NcclPath *p) { return p->stream; }

#else  // no NCCL at build time

struct NcclPath {};
bool nccl_compiled() { return false; }
std::string nccl_version() { return "not built"; }
bool nccl_supports(const Case &) { return false; }
NcclPath *nccl_create(MPI_Comm) { return nullptr; }
void nccl_destroy(NcclPath *) {}
void nccl_enqueue(NcclPath *, const Case &, void *, void *) {}
void nccl_sync(NcclPath *) {}
cudaStream_t nccl_stream(NcclPath *) { return nullptr; }

#endif
