// A launch of a peer kernel must not wait for kernels already running: with
// several threads, the running kernel may wait for a peer rank that waits
// for this launch (kernels/peer_args.h, load_peer_kernels). The test runs a
// kernel that spins until the host releases it, then launches peer
// kernels on another stream, plainly and through a KernelGraph (made and
// updated while the spinner runs), then releases the spinner. If the launch had
// waited for the spinner, the spinner would have given up on its own.
//
//   launch_while_running [--bare]
//
// --bare skips load_kernels_once: it shows what CUDA does without it (the
// launch waits: lazy loading, stack growth) and is not a test. Exit 77
// without a GPU.
#include <stdio.h>
#include <string.h>

#include "core_state.hpp"
#include "gpu_port.h"
#include "peer_args.h"

namespace {

__global__ void spin_until_released(const volatile int *release, int *gave_up, uint64_t limit_ns)
{
    uint64_t start = gpu_global_timer_ns();
    while (!*release)
        if (gpu_global_timer_ns() - start > limit_ns) {
            *gave_up = 1;
            return;
        }
}

#define CHECK_GPU(call)                                                                                            \
    do {                                                                                                           \
        gpuError_t e_ = (call);                                                                                    \
        if (e_ != gpuSuccess) {                                                                                    \
            fprintf(stderr, "launch_while_running: %s: %s\n", #call, gpuGetErrorString(e_));                       \
            return 1;                                                                                              \
        }                                                                                                          \
    } while (0)

} // namespace

int main(int argc, char **argv)
{
    bool bare = argc > 1 && !strcmp(argv[1], "--bare");
    int n = 0;
    if (gpuGetDeviceCount(&n) != gpuSuccess || n == 0) {
        printf("launch_while_running: no GPU: skipped\n");
        return 77;
    }
    CHECK_GPU(gpuSetDevice(0));
    if (!bare && gpucoll::load_kernels_once(0) != GPUCOLL_SUCCESS) {
        fprintf(stderr, "launch_while_running: load_kernels_once failed: %s\n", gpucoll_last_error());
        return 1;
    }
    int *flags; // [0] release, [1] gave up
    CHECK_GPU(gpuHostAlloc((void **)&flags, 2 * sizeof(int), gpuHostAllocMapped));
    flags[0] = flags[1] = 0;
    float *buf;
    CHECK_GPU(gpuMalloc((void **)&buf, 1024 * sizeof(float)));
    CHECK_GPU(gpuMemset(buf, 0, 1024 * sizeof(float)));
    gpuStream_t spin_stream, launch_stream;
    CHECK_GPU(gpuStreamCreateWithFlags(&spin_stream, gpuStreamNonBlocking));
    CHECK_GPU(gpuStreamCreateWithFlags(&launch_stream, gpuStreamNonBlocking));
    CHECK_GPU(gpuDeviceSynchronize());

    spin_until_released<<<1, 32, 0, spin_stream>>>(flags, flags + 1, 5000000000ull);
    CHECK_GPU(gpuGetLastError());
    // Every element type and op the component may launch first: a reduction
    // (the largest stack) and a data movement.
    gpucoll::PeerArgs k{};
    k.algo = gpucoll::PeerAlgo::LocalReduce;
    k.nranks = 1;
    k.src = reinterpret_cast<const char *>(buf);
    k.dst = reinterpret_cast<char *>(buf);
    k.count = 1024;
    k.vector_ok = 1;
    // Plain launches, then the same through a graph (kernel_launch=graph):
    // made at the first, its node switched between kernels at the others.
    int launched = 0;
    gpucoll::KernelGraph graph;
    for (gpucoll::KernelGraph *g : {(gpucoll::KernelGraph *)nullptr, &graph})
        for (int d = 0; d < GPUCOLL_DTYPE_COUNT; d++)
            for (int o = 0; o < GPUCOLL_OP_COUNT; o++)
                if (gpucoll_op_valid((gpucoll_op_t)o, (gpucoll_dtype_t)d))
                    launched += gpucoll::launch_peer_kernel(k, (gpucoll_dtype_t)d, (gpucoll_op_t)o, 1, 256,
                                                            launch_stream, nullptr, g);
    CHECK_GPU(gpuGetLastError());
    if (graph.off) {
        fprintf(stderr, "launch_while_running: the graph launches fell back to plain launches\n");
        return 1;
    }
    __atomic_store_n(&flags[0], 1, __ATOMIC_RELEASE);
    CHECK_GPU(gpuDeviceSynchronize());
    gpucoll::destroy_kernel_graph(&graph);
    bool waited = flags[1] != 0;
    printf("launch_while_running%s: %d kernels launched while another ran; %s\n", bare ? " (bare)" : "", launched,
           waited ? "a launch waited for the running kernel" : "no launch waited");
    return bare || !waited ? 0 : 1;
}
