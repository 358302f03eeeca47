// The data-movement kernel and the table that picks a kernel per (datatype, op).
#include "peer_kernels.cuh"

namespace gpucoll {

__device__ void run_scratch_move(const PeerArgs &a)
{
    switch (a.algo) {
    case PeerAlgo::AllgatherLL: allgather_ll(a); break;
    case PeerAlgo::BcastLL: bcast_ll(a); break;
    case PeerAlgo::AlltoallLL: alltoall_ll(a); break;
    case PeerAlgo::Allgather: run_steps<allgather_step>(a); break;
    case PeerAlgo::Bcast: run_steps<bcast_step>(a); break;
    case PeerAlgo::Alltoall: run_steps<alltoall_step>(a); break;
    default: break;
    }
}

__device__ void run_move(const PeerArgs &a)
{
    switch (a.algo) {
    case PeerAlgo::AllgatherDirect: allgather_direct(a); break;
    case PeerAlgo::BcastDirect: bcast_direct(a); break;
    case PeerAlgo::AllgatherPush: allgather_push(a); break;
    case PeerAlgo::BcastPush: bcast_push(a); break;
    case PeerAlgo::VectorPush: vector_push(a); break;
    default: run_scratch_move(a); break;
    }
}

__global__ void peer_move_kernel(PeerArgs a) { run_move(a); }
__global__ void resident_move_kernel(PeerArgs a) { serve<run_scratch_move>(a); }

namespace {

KernelPair reduce_kernel_for(gpucoll_dtype_t dtype, gpucoll_op_t op)
{
    switch (dtype) {
    case GPUCOLL_INT8: case GPUCOLL_UINT8: return reduce_kernel_int8(dtype, op);
    case GPUCOLL_INT16: case GPUCOLL_UINT16: return reduce_kernel_int16(dtype, op);
    case GPUCOLL_INT32: case GPUCOLL_UINT32: return reduce_kernel_int32(dtype, op);
    case GPUCOLL_INT64: case GPUCOLL_UINT64: return reduce_kernel_int64(dtype, op);
    case GPUCOLL_FLOAT16: case GPUCOLL_BFLOAT16: return reduce_kernel_half(dtype, op);
    case GPUCOLL_FLOAT32: case GPUCOLL_FLOAT64: return reduce_kernel_float(dtype, op);
    default: return {};
    }
}

} // namespace

bool load_peer_kernels(size_t *stack_bytes)
{
    *stack_bytes = 0;
    auto load = [&](KernelFn k) {
        gpuFuncAttributes attr;
        if (!k) return true;
        if (gpuFuncGetAttributes(&attr, (const void *)k) != gpuSuccess) return false;
        if (attr.localSizeBytes > *stack_bytes) *stack_bytes = attr.localSizeBytes;
        return true;
    };
    bool ok = load(peer_move_kernel) && load(resident_move_kernel);
    for (int d = 0; d < GPUCOLL_DTYPE_COUNT; d++)
        for (int o = 0; o < GPUCOLL_OP_COUNT; o++) {
            KernelPair p = reduce_kernel_for((gpucoll_dtype_t)d, (gpucoll_op_t)o);
            ok = ok && load(p.launch) && load(p.resident);
        }
    return ok;
}

bool launch_peer_kernel(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                        void *stream)
{
    KernelPair pair = moves_bytes(a.algo) ? KernelPair{peer_move_kernel, resident_move_kernel} : reduce_kernel_for(dtype, op);
    KernelFn k = a.resident.mailbox ? pair.resident : pair.launch;
    if (!k) return false;
    k<<<blocks, threads, 0, (gpuStream_t)stream>>>(a);
    return true;
}

} // namespace gpucoll
