// The data-movement kernel and the table that picks a kernel per (datatype, op).
#include <string.h>

#include "peer_kernels.cuh"

namespace gpucoll {

__device__ void run_scratch_move(const PeerArgs &a)
{
    ll_acknowledge(a);
    switch (a.algo) {
    case PeerAlgo::AllgatherLL: allgather_ll(a); break;
    case PeerAlgo::BcastLL: bcast_ll(a); break;
    case PeerAlgo::AlltoallLL: alltoall_ll(a); break;
    case PeerAlgo::Allgather: run_steps<allgather_step>(a); break;
    case PeerAlgo::Bcast: run_steps<bcast_step>(a); break;
    case PeerAlgo::BcastForward: run_steps<bcast_forward_step>(a); break;
    case PeerAlgo::Alltoall: run_steps<alltoall_step>(a); break;
    default: break;
    }
}

// The zero-copy moves, from shared memory (see run_zero_copy_reduce).
__device__ void run_zero_copy_move(const PeerArgs &s)
{
    switch (s.algo) {
    case PeerAlgo::AllgatherDirect: allgather_direct(s); break;
    case PeerAlgo::BcastDirect: bcast_direct(s); break;
    case PeerAlgo::AllgatherPush: allgather_push(s); break;
    case PeerAlgo::BcastPush: bcast_push(s); break;
    case PeerAlgo::BcastSpread: bcast_spread(s); break;
    case PeerAlgo::VectorPush: vector_push(s); break;
    default: break;
    }
}

__global__ void peer_move_kernel(PeerArgs a)
{
    if (is_direct(a.algo) || a.windows) {
        __shared__ PeerArgs s;
        const int z = zero_copy_args(a, &s);
        if (z == kRunZeroCopy) run_zero_copy_move(s);
        if (z != kRunPlanned) {
            report_done(a);
            return;
        }
    }
    run_scratch_move(a);
    report_done(a);
}
__global__ void resident_move_kernel(const GPU_GRID_CONSTANT PeerArgs a)
{
    serve<run_scratch_move, run_zero_copy_move>(a);
}

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
// fewest over the devices loaded; 0: not loaded yet), lowered where a launch
// was refused for resources (MPS refuses some that the attributes allow).
// Written at load before load_kernels_once publishes the device as loaded,
// and atomically by launch_peer_kernel.
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

namespace {

// The kernel of `a` and the threads to launch it with (*cap: the kernel's
// cap, lowered when a launch is refused). Null for a pair the kernels do
// not implement.
KernelFn kernel_of(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int *threads, int **cap)
{
    // Stream-ordered calls read their call from shared memory as resident
    // ones do (kernels/resident.cuh): the epoch is set there at the start.
    const bool moves = moves_bytes(a.algo), resident = a.resident.mailbox != nullptr || a.stream_calls != nullptr;
    KernelPair pair = moves ? KernelPair{peer_move_kernel, resident_move_kernel} : reduce_kernel_for(dtype, op);
    *cap = threads_slot(dtype, op, moves, resident);
    const int known = *cap ? __atomic_load_n(*cap, __ATOMIC_RELAXED) : 0;
    if (known >= 32 && *threads > known) *threads = known / 32 * 32;
    return resident ? pair.resident : pair.launch;
}

// Makes g's node launch k with `a` (creating g at its first use), unless it
// is set so already.
gpuError_t set_node(KernelGraph *g, KernelFn k, const PeerArgs &a, int blocks, int threads)
{
    if (g->exec && g->func == (void *)k && g->blocks == blocks && g->threads == threads &&
        memcmp(&g->args, &a, sizeof a) == 0)
        return gpuSuccess;
    void *args[] = {const_cast<PeerArgs *>(&a)};
    gpuKernelNodeParams p = {};
    p.func = (void *)k;
    p.gridDim = dim3(blocks);
    p.blockDim = dim3(threads);
    p.kernelParams = args;
    gpuError_t e;
    if (!g->exec) {
        gpuGraph_t graph = nullptr;
        gpuGraphNode_t node = nullptr;
        gpuGraphExec_t exec = nullptr;
        if ((e = gpuGraphCreate(&graph, 0)) != gpuSuccess) return e;
        if ((e = gpuGraphAddKernelNode(&node, graph, nullptr, 0, &p)) != gpuSuccess ||
            (e = gpuGraphInstantiateWithFlags(&exec, graph, 0)) != gpuSuccess) {
            gpuGraphDestroy(graph);
            return e;
        }
        g->graph = graph;
        g->node = node;
        g->exec = exec;
    } else if ((e = gpuGraphExecKernelNodeSetParams((gpuGraphExec_t)g->exec, (gpuGraphNode_t)g->node, &p)) !=
               gpuSuccess) {
        g->func = nullptr; // what the node holds now is unknown
        return e;
    }
    g->func = (void *)k;
    g->blocks = blocks;
    g->threads = threads;
    g->args = a;
    return gpuSuccess;
}

} // namespace

void destroy_kernel_graph(KernelGraph *g)
{
    if (g->exec) gpuGraphExecDestroy((gpuGraphExec_t)g->exec);
    if (g->graph) gpuGraphDestroy((gpuGraph_t)g->graph);
    *g = KernelGraph{};
}

bool launch_peer_kernel(const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                        void *stream, int *threads_used, KernelGraph *graph)
{
    int *cap = nullptr;
    KernelFn k = kernel_of(a, dtype, op, &threads, &cap);
    if (!k) return false;
    const gpuStream_t s = (gpuStream_t)stream;
    for (;;) {
        gpuError_t e = gpuErrorLaunchOutOfResources;
        if (graph && !graph->off) {
            e = set_node(graph, k, a, blocks, threads);
            if (e == gpuSuccess) e = gpuGraphLaunch((gpuGraphExec_t)graph->exec, s);
            if (e != gpuSuccess && e != gpuErrorLaunchOutOfResources) {
                (void)gpuGetLastError(); // the plain launch below says what is wrong, if anything is
                destroy_kernel_graph(graph);
                graph->off = true;
            }
        }
        if (!graph || graph->off) {
            k<<<blocks, threads, 0, s>>>(a);
            e = gpuPeekAtLastError();
        }
        if (threads <= 32 || e != gpuErrorLaunchOutOfResources) break;
        (void)gpuGetLastError(); // not sticky: the context is fine
        threads = threads / 2 / 32 * 32;
        // Refused for the kernel's resources, not the call's: the next
        // launches of this kernel start here instead of being refused first.
        if (cap) __atomic_store_n(cap, threads, __ATOMIC_RELAXED);
    }
    if (threads_used) *threads_used = threads;
    return true;
}

void prepare_peer_kernel(KernelGraph *graph, const PeerArgs &a, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks,
                         int threads)
{
    int *cap = nullptr;
    KernelFn k = kernel_of(a, dtype, op, &threads, &cap);
    if (!k || !graph || graph->off || !graph->exec) return;
    if (set_node(graph, k, a, blocks, threads) != gpuSuccess) (void)gpuGetLastError(); // the launch sets it again
}

} // namespace gpucoll
