// gpucoll-floor: the per-call cost that one GPU charges any collective which
// launches a kernel and waits for it, measured without MPI or peers. Each line
// is the mean over many back-to-back repetitions on the current device:
//
//   launch+sync          empty kernel, then cudaStreamSynchronize
//   launch+flag          empty kernel that sets a host-mapped flag; the host
//                        spins on the flag instead of synchronising the stream
//   graph+flag           launch+flag through a graph of one kernel node whose
//                        arguments are set before each launch (how coll/gpu
//                        launches: KernelGraph in kernels/peer_args.h)
//   order+graph+flag     the same after the ordering below
//   order+launch+flag    what a queued call (MPI_Start, MPI_I<coll>) pays at
//                        least: an event recorded on the legacy default stream
//                        and waited for by a non-blocking stream (the ordering
//                        after the caller's work), then launch+flag there
//   order (cpu)          that event record and stream wait alone
//   launch (cpu)         cudaLaunchKernel alone, with a 512-byte argument
//   pointer query        cuPointerGetAttribute(MEMORY_TYPE) on a device pointer
//   pointer attributes   cudaPointerGetAttributes on a device pointer
//   copy 8 B             cudaMemcpyAsync device to device + sync (what a
//                        one-rank collective costs at least)
//   copy 8 B <stream>    the same on the legacy default, per-thread default
//                        and a non-blocking stream
//   copy 16 MiB (GB/s)   the same at 16 MiB and 256 MiB, as bandwidth
//
// usage: gpucoll-floor [repetitions]      (exit 77 without a GPU)
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                                       \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                              \
        }                                                                                              \
    } while (0)

struct Big { // as large as the peer kernels' argument block
    char bytes[512];
};

__global__ void empty_kernel(Big) {}

__global__ void flag_kernel(Big, volatile unsigned *flag, unsigned value)
{
    if (threadIdx.x == 0) {
        __threadfence_system();
        *flag = value;
    }
}

using Clock = std::chrono::steady_clock;

template <class F> double mean_us(int reps, F f)
{
    for (int i = 0; i < reps / 10 + 1; i++) f(i); // warm-up
    auto t0 = Clock::now();
    for (int i = 0; i < reps; i++) f(i);
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
}

// An empty kernel with a stream sync, and one that sets a host-mapped flag
// the host spins on instead.
void kernel_floor(int reps, cudaStream_t s, unsigned *flag, unsigned &v, const Big &big)
{
    double sync = mean_us(reps, [&](int) {
        empty_kernel<<<1, 32, 0, s>>>(big);
        CHECK(cudaStreamSynchronize(s));
    });
    std::printf("launch+sync         %8.2f\n", sync);
    double fl = mean_us(reps, [&](int) {
        flag_kernel<<<1, 32, 0, s>>>(big, flag, ++v);
        while (*(volatile unsigned *)flag != v) {
        }
    });
    CHECK(cudaStreamSynchronize(s));
    std::printf("launch+flag         %8.2f\n", fl);
}

// The graph of one kernel node whose arguments change with every call, as a
// collective's do; then the same after the ordering on the legacy stream.
void graph_floor(int reps, cudaStream_t s, cudaStream_t queued, cudaEvent_t after_default, unsigned *flag,
                 unsigned &v, Big &big)
{
    cudaGraph_t graph;
    cudaGraphNode_t node;
    cudaGraphExec_t exec;
    volatile unsigned *flag_arg = flag;
    unsigned value = 0;
    void *args[] = {&big, (void *)&flag_arg, &value};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)flag_kernel;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(32);
    kp.kernelParams = args;
    CHECK(cudaGraphCreate(&graph, 0));
    CHECK(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &kp));
    CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    double gfl = mean_us(reps, [&](int) {
        value = ++v;
        CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &kp));
        CHECK(cudaGraphLaunch(exec, s));
        while (*(volatile unsigned *)flag != v) {
        }
    });
    CHECK(cudaStreamSynchronize(s));
    std::printf("graph+flag          %8.2f\n", gfl);
    double ogfl = mean_us(reps, [&](int) {
        value = ++v;
        CHECK(cudaEventRecord(after_default, cudaStreamLegacy));
        CHECK(cudaStreamWaitEvent(queued, after_default, 0));
        CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &kp));
        CHECK(cudaGraphLaunch(exec, queued));
        while (*(volatile unsigned *)flag != v) {
        }
    });
    CHECK(cudaStreamSynchronize(queued));
    std::printf("order+graph+flag    %8.2f\n", ogfl);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

// What a queued call pays at least: the event recorded on the legacy stream
// and waited for by a non-blocking one, with and without the launch.
void order_floor(int reps, cudaStream_t queued, cudaEvent_t after_default, unsigned *flag, unsigned &v,
                 const Big &big)
{
    double ofl = mean_us(reps, [&](int) {
        CHECK(cudaEventRecord(after_default, cudaStreamLegacy));
        CHECK(cudaStreamWaitEvent(queued, after_default, 0));
        flag_kernel<<<1, 32, 0, queued>>>(big, flag, ++v);
        while (*(volatile unsigned *)flag != v) {
        }
    });
    CHECK(cudaStreamSynchronize(queued));
    std::printf("order+launch+flag   %8.2f\n", ofl);
    double order = mean_us(reps, [&](int) {
        CHECK(cudaEventRecord(after_default, cudaStreamLegacy));
        CHECK(cudaStreamWaitEvent(queued, after_default, 0));
    });
    CHECK(cudaStreamSynchronize(queued));
    std::printf("order (cpu)         %8.2f\n", order);
}

// Host-side costs alone: a launch, the two pointer queries.
void host_floor(int reps, cudaStream_t s, void *dev, const Big &big)
{
    double launch = mean_us(reps, [&](int i) {
        empty_kernel<<<1, 32, 0, s>>>(big);
        if (i % 256 == 255) CHECK(cudaStreamSynchronize(s)); // keep the queue short
    });
    CHECK(cudaStreamSynchronize(s));
    std::printf("launch (cpu)        %8.2f\n", launch);
    CUmemorytype mt;
    double q = mean_us(reps, [&](int) {
        cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)dev);
    });
    std::printf("pointer query       %8.2f\n", q);
    cudaPointerAttributes attr;
    double pa = mean_us(reps, [&](int) { CHECK(cudaPointerGetAttributes(&attr, dev)); });
    std::printf("pointer attributes  %8.2f\n", pa);
}

// Device-to-device copies: 8 B on each kind of stream, then bandwidth.
void copy_floor(int reps, cudaStream_t s)
{
    const size_t big_bytes = 256u << 20;
    char *a, *b;
    CHECK(cudaMalloc((void **)&a, big_bytes));
    CHECK(cudaMalloc((void **)&b, big_bytes));
    double c8 = mean_us(reps, [&](int) {
        CHECK(cudaMemcpyAsync(b, a, 8, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaStreamSynchronize(s));
    });
    std::printf("copy 8 B            %8.2f\n", c8);
    // The streams a one-rank collective could copy on: the legacy default
    // stream (today's), the per-thread default stream (also ordered after
    // legacy work), and a non-blocking stream (NCCL's kind).
    cudaStream_t nb;
    CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    const struct {
        const char *name;
        cudaStream_t stream;
    } kinds[] = {{"legacy", cudaStreamLegacy}, {"per-thread", cudaStreamPerThread}, {"non-blocking", nb}};
    for (const auto &k : kinds) {
        double us = mean_us(reps, [&](int) {
            CHECK(cudaMemcpyAsync(b, a, 8, cudaMemcpyDeviceToDevice, k.stream));
            CHECK(cudaStreamSynchronize(k.stream));
        });
        std::printf("copy 8 B %-12s %7.2f\n", k.name, us);
    }
    CHECK(cudaStreamDestroy(nb));
    for (size_t bytes : {(size_t)16 << 20, big_bytes}) {
        double us = mean_us(reps / 100 + 10, [&](int) {
            CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
            CHECK(cudaStreamSynchronize(s));
        });
        std::printf("copy %3zu MiB (GB/s) %8.2f   (%.2f us)\n", bytes >> 20, bytes / us / 1e3, us);
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? std::atoi(argv[1]) : 20000;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("no GPU\n");
        return 77;
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t s, queued;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamCreateWithFlags(&queued, cudaStreamNonBlocking));
    cudaEvent_t after_default;
    CHECK(cudaEventCreateWithFlags(&after_default, cudaEventDisableTiming));
    unsigned *flag;
    CHECK(cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocMapped));
    *flag = 0;
    void *dev;
    CHECK(cudaMalloc(&dev, 1 << 20));
    Big big{};
    unsigned v = 0;

    std::printf("# gpucoll-floor on %s, %d repetitions, us per call\n", prop.name, reps);
    kernel_floor(reps, s, flag, v, big);
    graph_floor(reps, s, queued, after_default, flag, v, big);
    order_floor(reps, queued, after_default, flag, v, big);
    CHECK(cudaEventDestroy(after_default));
    CHECK(cudaStreamDestroy(queued));
    host_floor(reps, s, dev, big);
    copy_floor(reps, s);
    return 0;
}
