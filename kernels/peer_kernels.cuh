// The peer-to-peer kernel templates. peer_kernels_*.cu instantiate them
// per element type (split so that builds run in parallel); peer_kernels.cu
// holds the table that picks one per (datatype, op).
#pragma once

#include "allgather.cuh"
#include "allgather_direct.cuh"
#include "allgather_push.cuh"
#include "allreduce_direct.cuh"
#include "allreduce_oneshot.cuh"
#include "allreduce_push.cuh"
#include "allreduce_writes.cuh"
#include "allreduce_twoshot.cuh"
#include "alltoall.cuh"
#include "bcast.cuh"
#include "bcast_direct.cuh"
#include "bcast_push.cuh"
#include "local_reduce.cuh"
#include "peer_args.h"
#include "reduce.cuh"
#include "reduce_scatter_block.cuh"
#include "reduce_scatter_block_direct.cuh"

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
    case PeerAlgo::LocalReduce: local_reduce<T, Op>(a); break;
    case PeerAlgo::AllreduceDirect: allreduce_direct<T, Op>(a); break;
    case PeerAlgo::AllreducePush: allreduce_push<T, Op>(a); break;
    case PeerAlgo::AllreduceWrites: allreduce_writes<T, Op>(a); break;
    case PeerAlgo::ReduceScatterBlockDirect: reduce_scatter_block_direct<T, Op>(a); break;
    default: break;
    }
}

__global__ void peer_move_kernel(PeerArgs a);

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

// Signed integers share the unsigned kernels for every op but MAX/MIN.
template <class S, class U> KernelFn integer_kernel(gpucoll_op_t op)
{
    KernelFn k = minmax_kernel<S>(op);
    return k ? k : int_kernel<U>(op);
}

// One per peer_kernels_*.cu: the kernel for (dtype, op), or nullptr.
KernelFn reduce_kernel_small_int(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelFn reduce_kernel_large_int(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelFn reduce_kernel_half(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelFn reduce_kernel_float(gpucoll_dtype_t dtype, gpucoll_op_t op);

} // namespace gpucoll
