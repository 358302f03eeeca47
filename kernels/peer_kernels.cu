// The peer-to-peer kernels and the table that picks one per (datatype, op).
//
// One reduction kernel is instantiated per valid (type, op) pair; it runs
// whichever reduction algorithm PeerArgs names. Signed integers share the
// unsigned kernels for every op but MAX/MIN (same bits either way), which
// keeps the instantiation count, and CI's build time, down.
#include "allgather.cuh"
#include "allreduce_oneshot.cuh"
#include "allreduce_twoshot.cuh"
#include "alltoall.cuh"
#include "bcast.cuh"
#include "peer_args.h"
#include "reduce.cuh"
#include "reduce_scatter_block.cuh"

namespace gpucoll {

template <bool (*Step)(const PeerArgs &, size_t, size_t, uint64_t)>
__device__ void run_steps(const PeerArgs &a)
{
    for (size_t off = 0, k = 0; off < a.count; off += a.chunk, k++) {
        size_t n = a.count - off < a.chunk ? a.count - off : a.chunk;
        if (!Step(a, off, n, a.epoch0 + k)) return;
    }
}

template <class T, class Op> __global__ void peer_reduce_kernel(PeerArgs a)
{
    switch (a.algo) {
    case PeerAlgo::AllreduceOneShot: run_steps<allreduce_oneshot_step<T, Op>>(a); break;
    case PeerAlgo::AllreduceTwoShot: run_steps<allreduce_twoshot_step<T, Op>>(a); break;
    case PeerAlgo::Reduce: run_steps<reduce_step<T, Op>>(a); break;
    case PeerAlgo::ReduceScatterBlock: run_steps<reduce_scatter_block_step<T, Op>>(a); break;
    default: break;
    }
}

__global__ void peer_move_kernel(PeerArgs a)
{
    switch (a.algo) {
    case PeerAlgo::Allgather: run_steps<allgather_step>(a); break;
    case PeerAlgo::Bcast: run_steps<bcast_step>(a); break;
    case PeerAlgo::Alltoall: run_steps<alltoall_step>(a); break;
    default: break;
    }
}

namespace {

using KernelFn = void (*)(PeerArgs);

template <class T> KernelFn int_kernel(gpucoll_op_t op)
{
    switch (op) {
    case GPUCOLL_OP_SUM: return peer_reduce_kernel<T, OpSum>;
    case GPUCOLL_OP_PROD: return peer_reduce_kernel<T, OpProd>;
    case GPUCOLL_OP_LAND: return peer_reduce_kernel<T, OpLand>;
    case GPUCOLL_OP_LOR: return peer_reduce_kernel<T, OpLor>;
    case GPUCOLL_OP_LXOR: return peer_reduce_kernel<T, OpLxor>;
    case GPUCOLL_OP_BAND: return peer_reduce_kernel<T, OpBand>;
    case GPUCOLL_OP_BOR: return peer_reduce_kernel<T, OpBor>;
    case GPUCOLL_OP_BXOR: return peer_reduce_kernel<T, OpBxor>;
    default: return nullptr;
    }
}

template <class T> KernelFn minmax_kernel(gpucoll_op_t op)
{
    if (op == GPUCOLL_OP_MAX) return peer_reduce_kernel<T, OpMax>;
    if (op == GPUCOLL_OP_MIN) return peer_reduce_kernel<T, OpMin>;
    return nullptr;
}

template <class T> KernelFn float_kernel(gpucoll_op_t op)
{
    if (op == GPUCOLL_OP_SUM) return peer_reduce_kernel<T, OpSum>;
    if (op == GPUCOLL_OP_PROD) return peer_reduce_kernel<T, OpProd>;
    return minmax_kernel<T>(op);
}

template <class S, class U> KernelFn integer_kernel(gpucoll_op_t op)
{
    KernelFn k = minmax_kernel<S>(op);
    return k ? k : int_kernel<U>(op);
}

KernelFn reduce_kernel_for(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT8: return integer_kernel<int8_t, uint8_t>(op);
    case GPUCOLL_UINT8: return integer_kernel<uint8_t, uint8_t>(op);
    case GPUCOLL_INT16: return integer_kernel<int16_t, uint16_t>(op);
    case GPUCOLL_UINT16: return integer_kernel<uint16_t, uint16_t>(op);
    case GPUCOLL_INT32: return integer_kernel<int32_t, uint32_t>(op);
    case GPUCOLL_UINT32: return integer_kernel<uint32_t, uint32_t>(op);
    case GPUCOLL_INT64: return integer_kernel<int64_t, uint64_t>(op);
    case GPUCOLL_UINT64: return integer_kernel<uint64_t, uint64_t>(op);
    case GPUCOLL_FLOAT16: return float_kernel<half_t>(op);
    case GPUCOLL_BFLOAT16: return float_kernel<bf16_t>(op);
    case GPUCOLL_FLOAT32: return float_kernel<float>(op);
    case GPUCOLL_FLOAT64: return float_kernel<double>(op);
    default: return nullptr;
    }
}

} // namespace

bool launch_peer_kernel(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                        void *stream)
{
    bool moves = a.algo == PeerAlgo::Allgather || a.algo == PeerAlgo::Bcast || a.algo == PeerAlgo::Alltoall;
    KernelFn k = moves ? peer_move_kernel : reduce_kernel_for(dtype, op);
    if (!k) return false;
    k<<<blocks, threads, 0, (gpuStream_t)stream>>>(a);
    return true;
}

} // namespace gpucoll
