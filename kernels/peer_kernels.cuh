// The peer-to-peer kernel templates. peer_kernels_*.cu instantiate them
// per element type (split so that builds run in parallel); peer_kernels.cu
// holds the table that picks one per (datatype, op).
#pragma once

#include <type_traits>

#include "allgather.cuh"
#include "allgather_direct.cuh"
#include "allgather_ll.cuh"
#include "allgather_push.cuh"
#include "allreduce_direct.cuh"
#include "allreduce_ll.cuh"
#include "allreduce_oneshot.cuh"
#include "allreduce_push.cuh"
#include "allreduce_writes.cuh"
#include "allreduce_twoshot.cuh"
#include "alltoall.cuh"
#include "alltoall_ll.cuh"
#include "bcast.cuh"
#include "bcast_direct.cuh"
#include "bcast_forward.cuh"
#include "bcast_ll.cuh"
#include "bcast_push.cuh"
#include "bcast_spread.cuh"
#include "local_reduce.cuh"
#include "peer_args.h"
#include "reduce.cuh"
#include "reduce_ll.cuh"
#include "reduce_push.cuh"
#include "reduce_twoshot.cuh"
#include "reduce_scatter_block.cuh"
#include "reduce_scatter_block_ll.cuh"
#include "reduce_scatter_direct.cuh"
#include "reduce_stores.cuh"
#include "resident.cuh"
#include "vector_push.cuh"
#include "windows.cuh"

namespace gpucoll {

template <bool (*Step)(const PeerArgs &, size_t, size_t, uint64_t)>
__device__ void run_steps(const PeerArgs &a)
{
    for (size_t off = 0, k = 0; off < a.count; off += a.chunk, k++) {
        size_t n = a.count - off < a.chunk ? a.count - off : a.chunk;
        if (!Step(a, off, n, a.epoch0 + k)) return;
    }
}

// What a resident kernel serves: the algorithms through scratch.
template <class T, class Op> __device__ void run_scratch_reduce(const PeerArgs &a)
{
    ll_acknowledge(a);
    switch (a.algo) {
    case PeerAlgo::AllreduceLL: allreduce_ll<T, Op>(a); break;
    case PeerAlgo::ReduceScatterBlockLL: reduce_scatter_block_ll<T, Op>(a); break;
    case PeerAlgo::ReduceLL: reduce_ll<T, Op>(a); break;
    case PeerAlgo::AllreduceOneShot: run_steps<allreduce_oneshot_step<T, Op>>(a); break;
    case PeerAlgo::AllreduceTwoShot: run_steps<allreduce_twoshot_step<T, Op>>(a); break;
    case PeerAlgo::Reduce: run_steps<reduce_step<T, Op>>(a); break;
    case PeerAlgo::ReduceTwoShot: run_steps<reduce_twoshot_step<T, Op>>(a); break;
    case PeerAlgo::ReduceStores: run_steps<reduce_stores_step<T, Op>>(a); break;
    case PeerAlgo::ReduceScatterBlock: run_steps<reduce_scatter_block_step<T, Op>>(a); break;
    default: break;
    }
}

// The zero-copy reductions. They read the call from shared memory
// (zero_copy_args, kernels/windows.cuh): one copy of each body, whether the
// call was planned zero-copy or switched to it by registered windows.
template <class T, class Op> __device__ void run_zero_copy_reduce(const PeerArgs &s)
{
    switch (s.algo) {
    case PeerAlgo::AllreduceDirect: allreduce_direct<T, Op>(s); break;
    case PeerAlgo::AllreducePush: allreduce_push<T, Op>(s); break;
    case PeerAlgo::AllreduceWrites: allreduce_writes<T, Op>(s); break;
    case PeerAlgo::ReducePush: reduce_push<T, Op>(s); break;
    case PeerAlgo::ReduceScatterDirect: reduce_scatter_direct<T, Op>(s); break;
    default: break;
    }
}

// Two kernels per (type, op): one for a call, reading it from the kernel
// parameters; one that stays resident (kernels/resident.cuh), reading its
// calls from shared memory. One kernel for both would keep the call's fields
// in registers, and the largest reduce kernels would need more than 512
// threads x 128 registers (measured: launches refused on H200).
template <class T, class Op> __global__ void peer_reduce_kernel(PeerArgs a)
{
    if (is_direct(a.algo) || a.windows) {
        __shared__ PeerArgs s;
        const int z = zero_copy_args(a, &s);
        if (z == kRunZeroCopy) run_zero_copy_reduce<T, Op>(s);
        if (z != kRunPlanned) {
            report_done(a);
            return;
        }
    }
    if (a.algo == PeerAlgo::LocalReduce) local_reduce<T, Op>(a);
    else run_scratch_reduce<T, Op>(a);
    report_done(a);
}
// Stream-ordered sums in registered windows switch to zero-copy; other ops
// keep their scratch plan (the host sets no windows for them), so that the
// zero-copy bodies are compiled a second time only for the op frameworks use
// (the kernels' build is the project's long pole).
template <class T, class Op> __global__ void resident_reduce_kernel(const GPU_GRID_CONSTANT PeerArgs a)
{
    if constexpr (std::is_same<Op, OpSum>::value) serve<run_scratch_reduce<T, Op>, run_zero_copy_reduce<T, Op>>(a);
    else serve<run_scratch_reduce<T, Op>, nullptr>(a);
}

__global__ void peer_move_kernel(PeerArgs a);
__global__ void resident_move_kernel(const GPU_GRID_CONSTANT PeerArgs a);

using KernelFn = void (*)(PeerArgs);
struct KernelPair {
    KernelFn launch, resident;
};
template <class T, class Op> KernelPair kernels_of() { return {peer_reduce_kernel<T, Op>, resident_reduce_kernel<T, Op>}; }

template <class T> KernelPair int_kernel(gpucoll_op_t op)
{
    switch (op) {
    case GPUCOLL_OP_SUM: return kernels_of<T, OpSum>();
    case GPUCOLL_OP_PROD: return kernels_of<T, OpProd>();
    case GPUCOLL_OP_LAND: return kernels_of<T, OpLand>();
    case GPUCOLL_OP_LOR: return kernels_of<T, OpLor>();
    case GPUCOLL_OP_LXOR: return kernels_of<T, OpLxor>();
    case GPUCOLL_OP_BAND: return kernels_of<T, OpBand>();
    case GPUCOLL_OP_BOR: return kernels_of<T, OpBor>();
    case GPUCOLL_OP_BXOR: return kernels_of<T, OpBxor>();
    default: return {};
    }
}

template <class T> KernelPair minmax_kernel(gpucoll_op_t op)
{
    if (op == GPUCOLL_OP_MAX) return kernels_of<T, OpMax>();
    if (op == GPUCOLL_OP_MIN) return kernels_of<T, OpMin>();
    return {};
}

template <class T> KernelPair float_kernel(gpucoll_op_t op)
{
    if (op == GPUCOLL_OP_SUM) return kernels_of<T, OpSum>();
    if (op == GPUCOLL_OP_PROD) return kernels_of<T, OpProd>();
    return minmax_kernel<T>(op);
}

// Signed integers share the unsigned kernels for every op but MAX/MIN.
template <class S, class U> KernelPair integer_kernel(gpucoll_op_t op)
{
    KernelPair k = minmax_kernel<S>(op);
    return k.launch ? k : int_kernel<U>(op);
}

// One integer width: the signed type's kernels or the unsigned one's.
template <class S, class U> KernelPair width_kernel(bool is_signed, gpucoll_op_t op)
{
    return is_signed ? integer_kernel<S, U>(op) : integer_kernel<U, U>(op);
}

// One per peer_kernels_*.cu: the kernels for (dtype, op), or {}.
KernelPair reduce_kernel_int8(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelPair reduce_kernel_int16(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelPair reduce_kernel_int32(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelPair reduce_kernel_int64(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelPair reduce_kernel_half(gpucoll_dtype_t dtype, gpucoll_op_t op);
KernelPair reduce_kernel_float(gpucoll_dtype_t dtype, gpucoll_op_t op);

} // namespace gpucoll
