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

__global__ void peer_move_kernel(PeerArgs a)
{
    run_move(a);
    report_done(a);
}
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

namespace {

// Most threads per block of each kernel, as the GPU reports it at load (the
// fewest over the devices loaded; 0: not loaded yet). Written before
// load_kernels_once publishes the device as loaded, read after.
int g_reduce_threads[GPUCOLL_DTYPE_COUNT][GPUCOLL_OP_COUNT][2];
int g_move_threads[2];

int *threads_slot(gpucoll_dtype_t dtype, gpucoll_op_t op, bool moves, bool resident)
{
    if (moves) return &g_move_threads[resident];
    if ((int)dtype < 0 || dtype >= GPUCOLL_DTYPE_COUNT || (int)op < 0 || op >= GPUCOLL_OP_COUNT) return nullptr;
    return &g_reduce_threads[dtype][op][resident];
}

} // namespace

bool load_peer_kernels(size_t *stack_bytes, int *max_regs)
{
    *stack_bytes = 0;
    *max_regs = 0;
    auto load = [&](KernelFn k, int *slot) {
        gpuFuncAttributes attr;
        if (!k) return true;
        if (gpuFuncGetAttributes(&attr, (const void *)k) != gpuSuccess) return false;
        if (attr.localSizeBytes > *stack_bytes) *stack_bytes = attr.localSizeBytes;
        if (attr.numRegs > *max_regs) *max_regs = attr.numRegs;
        if (*slot == 0 || attr.maxThreadsPerBlock < *slot) *slot = attr.maxThreadsPerBlock;
        return true;
    };
    bool ok = load(peer_move_kernel, &g_move_threads[0]) && load(resident_move_kernel, &g_move_threads[1]);
    for (int d = 0; d < GPUCOLL_DTYPE_COUNT; d++)
        for (int o = 0; o < GPUCOLL_OP_COUNT; o++) {
            KernelPair p = reduce_kernel_for((gpucoll_dtype_t)d, (gpucoll_op_t)o);
            ok = ok && load(p.launch, &g_reduce_threads[d][o][0]) && load(p.resident, &g_reduce_threads[d][o][1]);
        }
    return ok;
}

bool launch_peer_kernel(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                        void *stream, int *threads_used)
{
    // Stream-ordered calls read their call from shared memory as resident
    // ones do (kernels/resident.cuh): the epoch is set there at the start.
    const bool moves = moves_bytes(a.algo), resident = a.resident.mailbox != nullptr || a.stream_calls != nullptr;
    KernelPair pair = moves ? KernelPair{peer_move_kernel, resident_move_kernel} : reduce_kernel_for(dtype, op);
    KernelFn k = resident ? pair.resident : pair.launch;
    if (!k) return false;
    const int *cap = threads_slot(dtype, op, moves, resident);
    if (cap && *cap >= 32 && threads > *cap) threads = *cap / 32 * 32;
    for (;;) {
        k<<<blocks, threads, 0, (gpuStream_t)stream>>>(a);
        if (threads <= 32 || gpuPeekAtLastError() != gpuErrorLaunchOutOfResources) break;
        (void)gpuGetLastError(); // not sticky: the context is fine
        threads = threads / 2 / 32 * 32;
    }
    if (threads_used) *threads_used = threads;
    return true;
}

} // namespace gpucoll
