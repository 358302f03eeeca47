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
//   resident doorbell    a one-warp kernel that stays on the GPU, polling a
//                        doorbell in mapped host memory: ring, then spin on the
//                        done word it writes (the round trip issue 34 builds on)
//   resident +cmd        the same, the kernel reading a 64-byte call after the
//                        doorbell moved (a second trip over PCIe)
//   resident +query      the same after cudaStreamQuery(legacy stream), the
//                        ordering rule of a call served by a running kernel
//   resident +writevalue the same with the ordering as cuStreamWriteValue32 on
//                        the legacy stream, which the kernel waits for
//   query legacy (cpu)   cudaStreamQuery on the idle legacy stream alone
//   record+query (cpu)   cudaEventRecord on the legacy stream, then cudaEventQuery
//                        of that event: the same answer by another route
//   writevalue (cpu)     cuStreamWriteValue32 on the legacy stream alone
//   nvlink one-way       with two GPUs: two resident warps ping-pong a word
//                        through each other's memory (peer access), per trip
//   resident 4 warps     resident doorbell with four warps polling at once
//                        (a sample every quarter trip instead of every trip)
//   resident 1 poller    a 512-thread kernel serving calls as the resident
//                        kernels do (kernels/resident.cuh, poll_call): its
//                        first warp reads a 64-byte call, two barriers of the
//                        block decide, then 1.5 us of work (about a small LL
//                        call's) and the done word
//   resident 2 pollers   the same with the last two warps polling, each in a
//                        loop of its own, the second starting 700 ns after
//                        the first; the one that decides meets the others at
//                        a barrier the other poller is not part of (faster
//                        here, not in the resident kernels: docs/small_calls.md)
//   resident 2 together  the same with both pollers starting at once
//   fence sys/gpu/none   with two GPUs: a store into the peer's memory, then
//                        __threadfence_system / __threadfence / nothing
//                        before a store into host memory: the fence's time
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

struct Mailbox {
    unsigned long long doorbell; // call number; ~0: leave
    unsigned long long pad[7];
    unsigned long long cmd[8];
    unsigned long long done;  // the call number the kernel finished
    unsigned long long order; // written by the legacy stream (writevalue)
};

// mode 0: doorbell only; 1: then read the call; 2: then wait for `order`.
__global__ void resident_kernel(Mailbox *mb, int mode, unsigned long long *sink)
{
    volatile Mailbox *v = mb;
    unsigned long long seen = 0, acc = 0;
    for (;;) {
        unsigned long long d = 0;
        if (threadIdx.x == 0)
            do d = v->doorbell;
            while (d == seen);
        d = __shfl_sync(0xffffffffu, d, 0);
        if (d == ~0ull) break;
        seen = d;
        if (mode == 1 && threadIdx.x < 8) acc += v->cmd[threadIdx.x];
        if (mode == 2 && threadIdx.x == 0)
            while ((unsigned)v->order < (unsigned)d) {
            }
        __syncwarp();
        if (threadIdx.x == 0) {
            __threadfence_system();
            v->done = d;
        }
    }
    if (acc == 42) *sink = acc; // keeps the reads
}

// resident_kernel's doorbell rows with every warp of the block polling; the
// first to see the doorbell move answers.
__global__ void resident_warps_kernel(Mailbox *mb)
{
    volatile Mailbox *v = mb;
    __shared__ unsigned long long claimed;
    if (threadIdx.x == 0) claimed = 0;
    __syncthreads();
    if (threadIdx.x % 32) return;
    unsigned long long seen = 0;
    for (;;) {
        unsigned long long d;
        do d = v->doorbell;
        while (d == seen);
        if (d == ~0ull) return;
        if (atomicCAS(&claimed, seen, d) == seen) {
            __threadfence_system();
            v->done = d;
        }
        seen = d;
    }
}

// 1.5 us of work by one thread of a non-polling warp: about a small LL
// call's (the GPU's share of an 8-byte allreduce, docs/small_calls.md).
__device__ void call_work()
{
    if (threadIdx.x != 64) return;
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < 1500);
}

// The resident kernels' poll of a 64-byte call (every word = the call's
// number) by a 512-thread block: warp 0 reads, two block barriers decide.
__global__ void one_poller_kernel(Mailbox *mb)
{
    volatile unsigned long long *words = mb->cmd;
    __shared__ unsigned long long w[8];
    __shared__ int take;
    unsigned long long seen = 0;
    for (;;) {
        do {
            if (threadIdx.x < 8) w[threadIdx.x] = words[threadIdx.x];
            __syncthreads();
            if (threadIdx.x == 0) {
                int all = w[0] != seen;
                for (int i = 1; i < 8; i++) all &= w[i] == w[0];
                take = all;
            }
            __syncthreads();
        } while (!take);
        const unsigned long long d = w[0];
        __syncthreads();
        if (d == ~0ull) return;
        seen = d;
        call_work();
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            *(volatile unsigned long long *)&mb->done = d;
        }
    }
}

// The same with the last two warps polling in loops of their own: the one
// that claims the call meets the other warps at barrier 1; the other
// poller goes on once it sees the call claimed, without waiting for the
// load it still has on its way.
__global__ void two_pollers_kernel(Mailbox *mb, unsigned stagger_ns)
{
    volatile unsigned long long *words = mb->cmd;
    __shared__ unsigned long long claim, taken, call;
    const int w = (int)threadIdx.x / 32 - ((int)blockDim.x / 32 - 2), lane = threadIdx.x % 32;
    if (threadIdx.x == 0) claim = taken = 0;
    __syncthreads();
    for (unsigned long long expect = 1;; expect++) {
        bool decided = false;
        if (w == 1 && stagger_ns) __nanosleep(stagger_ns);
        while (w >= 0) {
            unsigned long long x = lane < 8 ? words[lane] : 0;
            const unsigned long long x0 = __shfl_sync(0xffffffffu, x, 0);
            const bool whole = __all_sync(0xffffffffu, lane >= 8 || x == x0) && (x0 == expect || x0 == ~0ull);
            int won = 0;
            if (whole && lane == 0 && atomicCAS(&claim, expect - 1, expect) == expect - 1) {
                call = x0;
                __threadfence_block();
                *(volatile unsigned long long *)&taken = expect;
                won = 1;
            }
            if (__shfl_sync(0xffffffffu, won, 0)) {
                decided = true;
                break;
            }
            if (*(volatile unsigned long long *)&taken >= expect) break;
        }
        if (w < 0 || decided) asm volatile("bar.sync 1, %0;" ::"r"((int)blockDim.x - 32) : "memory");
        __threadfence_block();
        const unsigned long long d = *(volatile unsigned long long *)&call;
        if (d == ~0ull) return;
        call_work();
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            *(volatile unsigned long long *)&mb->done = d;
        }
    }
}

// Mean ns of a fence after a 16-byte store into the peer's memory.
__global__ void fence_kernel(uint4 *peer, unsigned long long *host, int kind, int reps, unsigned long long *ns)
{
    unsigned long long total = 0;
    for (int i = 0; i < reps; i++) {
        peer[threadIdx.x] = make_uint4(i, i, i, i);
        __syncthreads();
        unsigned long long t0 = 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        if (threadIdx.x == 0) {
            if (kind == 0) __threadfence_system();
            else if (kind == 1) __threadfence();
            *(volatile unsigned long long *)host = i;
        }
        unsigned long long t1 = 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        total += t1 - t0;
        __syncthreads();
    }
    if (threadIdx.x == 0) *ns = total / reps;
}

// One trip each way between two GPUs' resident warps: `mine` is in this
// GPU's memory, `theirs` in the peer's.
__global__ void pingpong_kernel(volatile unsigned *mine, volatile unsigned *theirs, int rounds, int first)
{
    if (threadIdx.x != 0) return;
    for (int i = 1; i <= rounds; i++) {
        if (first) {
            *theirs = i;
            while (*mine != (unsigned)i) {
            }
        } else {
            while (*mine != (unsigned)i) {
            }
            *theirs = i;
        }
    }
}

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

double resident_round(int reps, Mailbox *mb, int mode, unsigned long long &seq, bool query, CUdeviceptr order)
{
    return mean_us(reps, [&](int) {
        ++seq;
        if (query && cudaStreamQuery(cudaStreamLegacy) != cudaSuccess) std::exit(2);
        if (order && cuStreamWriteValue32(CU_STREAM_LEGACY, order, (cuuint32_t)seq, 0) != CUDA_SUCCESS) std::exit(3);
        __atomic_store_n(&mb->doorbell, seq, __ATOMIC_RELEASE);
        while (__atomic_load_n(&mb->done, __ATOMIC_ACQUIRE) != seq) {
        }
    });
}

void resident_floor(int reps)
{
    Mailbox *mb;
    unsigned long long *sink;
    CHECK(cudaHostAlloc((void **)&mb, sizeof *mb, cudaHostAllocMapped));
    CHECK(cudaMalloc((void **)&sink, 8));
    CUdeviceptr order = 0;
    CHECK(cudaHostGetDevicePointer((void **)&order, &mb->order, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const char *names[] = {"resident doorbell   ", "resident +cmd       ", "resident +query     ",
                           "resident +writevalue"};
    for (int row = 0; row < 4; row++) {
        *mb = Mailbox{};
        unsigned long long seq = 0;
        resident_kernel<<<1, 32, 0, s>>>(mb, row == 3 ? 2 : row == 1 ? 1 : 0, sink);
        double us = resident_round(reps, mb, row == 1 ? 1 : 0, seq, row == 2, row == 3 ? order : 0);
        __atomic_store_n(&mb->doorbell, ~0ull, __ATOMIC_RELEASE);
        CHECK(cudaStreamSynchronize(s));
        std::printf("%s %7.2f\n", names[row], us);
    }
    *mb = Mailbox{};
    unsigned long long seq = 0;
    resident_warps_kernel<<<1, 128, 0, s>>>(mb);
    double warps = resident_round(reps, mb, 0, seq, false, 0);
    __atomic_store_n(&mb->doorbell, ~0ull, __ATOMIC_RELEASE);
    CHECK(cudaStreamSynchronize(s));
    std::printf("resident 4 warps     %7.2f\n", warps);
    for (int pollers = 1; pollers <= 3; pollers++) {
        *mb = Mailbox{};
        seq = 0;
        if (pollers == 1) one_poller_kernel<<<1, 512, 0, s>>>(mb);
        else two_pollers_kernel<<<1, 512, 0, s>>>(mb, pollers == 2 ? 700 : 0);
        double us = mean_us(reps, [&](int) {
            ++seq;
            for (int i = 7; i >= 0; i--) __atomic_store_n(&mb->cmd[i], seq, __ATOMIC_RELEASE);
            while (__atomic_load_n(&mb->done, __ATOMIC_ACQUIRE) != seq) {
            }
        });
        for (int i = 0; i < 8; i++) __atomic_store_n(&mb->cmd[i], ~0ull, __ATOMIC_RELEASE);
        CHECK(cudaStreamSynchronize(s));
        const char *rows[] = {"resident 1 poller    ", "resident 2 pollers   ", "resident 2 together  "};
        std::printf("%s %7.2f\n", rows[pollers - 1], us);
    }
    double q = mean_us(reps, [&](int) { CHECK(cudaStreamQuery(cudaStreamLegacy)); });
    std::printf("query legacy (cpu)  %8.2f\n", q);
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    double rq = mean_us(reps, [&](int) {
        CHECK(cudaEventRecord(ev, cudaStreamLegacy));
        CHECK(cudaEventQuery(ev));
    });
    std::printf("record+query (cpu)  %8.2f\n", rq);
    CHECK(cudaEventDestroy(ev));
    unsigned v = 0;
    double wv = mean_us(reps, [&](int) {
        if (cuStreamWriteValue32(CU_STREAM_LEGACY, order, ++v, 0) != CUDA_SUCCESS) std::exit(3);
    });
    CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    std::printf("writevalue (cpu)    %8.2f\n", wv);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(sink));
    CHECK(cudaFreeHost(mb));
}

// Two GPUs with peer access: the NVLink (or PCIe) trip a flag takes.
void nvlink_floor(int reps)
{
    int n = 0, can = 0;
    CHECK(cudaGetDeviceCount(&n));
    if (n < 2 || cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) return;
    unsigned *word[2];
    cudaStream_t st[2];
    for (int d = 0; d < 2; d++) {
        CHECK(cudaSetDevice(d));
        cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
        cudaGetLastError();
        CHECK(cudaMalloc((void **)&word[d], 4));
        CHECK(cudaMemset(word[d], 0, 4));
        CHECK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    }
    auto t0 = Clock::now();
    for (int d = 0; d < 2; d++) {
        CHECK(cudaSetDevice(d));
        pingpong_kernel<<<1, 32, 0, st[d]>>>(word[d], word[1 - d], reps, d == 0);
    }
    for (int d = 0; d < 2; d++) CHECK(cudaStreamSynchronize(st[d]));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (2.0 * reps);
    std::printf("nvlink one-way      %8.2f\n", us);
    CHECK(cudaSetDevice(0));
    uint4 *peer;
    unsigned long long *host, *ns;
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc((void **)&peer, 64 * sizeof(uint4)));
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc((void **)&host, 8, cudaHostAllocMapped));
    CHECK(cudaMallocManaged((void **)&ns, 8));
    const char *kinds[] = {"fence sys           ", "fence gpu           ", "fence none          "};
    for (int kind = 0; kind < 3; kind++) {
        fence_kernel<<<1, 64, 0, st[0]>>>(peer, host, kind, 10000, ns);
        CHECK(cudaStreamSynchronize(st[0]));
        std::printf("%s %7.2f\n", kinds[kind], *ns / 1e3);
    }
    CHECK(cudaFree(ns));
    CHECK(cudaFreeHost(host));
    CHECK(cudaSetDevice(1));
    CHECK(cudaFree(peer));
    for (int d = 0; d < 2; d++) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaFree(word[d]));
        CHECK(cudaStreamDestroy(st[d]));
    }
    CHECK(cudaSetDevice(0));
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
    resident_floor(reps);
    nvlink_floor(reps * 10);
    return 0;
}
