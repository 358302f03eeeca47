// gpucoll-fifo: how fast one GPU can stream data into another's memory
// through a FIFO of a few slots with flags, the shape of the 2-rank scratch
// plans (reduce_stores, bcast_forward). Needs two GPUs with peer access; no
// MPI. A producer kernel on GPU 0 stores each step into a slot of the FIFO
// in GPU 1's memory over NVLink and posts a flag per block; a consumer
// kernel on GPU 1 waits for it, copies (or adds) the slot into a local
// buffer and posts that the slot is free. Variants:
//   0  plain remote copy of the whole message, no FIFO (the ceiling)
//   1  a block fences and posts after each step, waits for the slot's
//      previous use to be consumed before it
//   2  as 1, but warp 0 fences and posts while the other warps copy on
//      (depth 2 only: it keeps the copy warps at most one step ahead)
//   3  as 1, the producer waiting for the consumer's previous step after
//      each of its own (peer_barrier's order) and the consumer fencing
//   4  as 1, the consumer adding the slot to a local input (a reduce)
//   5  3 and 4 together (reduce_stores' shape)
// Each figure is the mean of the timed repetitions, launches and host
// synchronisation included (~10-15 us), in us.
//   gpucoll-fifo [BLOCKS [THREADS [VARIANT:STEP_MIB:DEPTH ...]]]
// docs/performance.md quotes it (2 x H200, session 40).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>
#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

__device__ inline void st_rel(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ inline uint64_t ld_acq(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ inline void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }

__device__ void copy_share(char *dst, const char *src, size_t n, int tid, int nt)
{
    uint4 *d = (uint4 *)dst;
    const uint4 *s = (const uint4 *)src;
    size_t nv = n / 16, i = tid;
    for (; i + 3 * nt < nv; i += 4 * nt) {
        uint4 v0 = s[i], v1 = s[i + nt], v2 = s[i + 2 * nt], v3 = s[i + 3 * nt];
        d[i] = v0;
        d[i + nt] = v1;
        d[i + 2 * nt] = v2;
        d[i + 3 * nt] = v3;
    }
    for (; i < nv; i += nt)
        d[i] = s[i];
}
__device__ void add_share(float *dst, const float *a, const float *b, size_t n, int tid, int nt)
{
    float4 *d = (float4 *)dst;
    const float4 *x = (const float4 *)a, *y = (const float4 *)b;
    size_t nv = n / 16, i = tid;
    for (; i + nt < nv; i += 2 * nt) {
        float4 a0 = x[i], a1 = x[i + nt], b0 = y[i], b1 = y[i + nt];
        d[i] = make_float4(a0.x + b0.x, a0.y + b0.y, a0.z + b0.z, a0.w + b0.w);
        d[i + nt] = make_float4(a1.x + b1.x, a1.y + b1.y, a1.z + b1.z, a1.w + b1.w);
    }
    for (; i < nv; i += nt) {
        float4 a0 = x[i], b0 = y[i];
        d[i] = make_float4(a0.x + b0.x, a0.y + b0.y, a0.z + b0.z, a0.w + b0.w);
    }
}
struct P {
    char *src, *fifo, *dst, *own;
    uint64_t *ready, *freed;
    int *gave_up0, *gave_up1; // the producer's (device 0) and the consumer's (device 1)
    size_t S, A;
    int D, variant;
};

__device__ inline uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Spins until *f >= v. After 10 s it gives up and makes every later wait of
// its kernel return at once, so that a broken run ends (the host reports it).
__device__ void wait_ge(const uint64_t *f, uint64_t v, int *gave_up)
{
    const uint64_t t0 = now_ns();
    while (ld_acq(f) < v) {
        if (*(volatile int *)gave_up)
            return;
        if (now_ns() - t0 > 10000000000ull) {
            atomicExch(gave_up, 1);
            return;
        }
    }
}
// this block's part of step k: [off, off+len) relative to the step's start
__device__ void share(const P &p, size_t k, size_t *off, size_t *len, size_t *n)
{
    *n = p.S - k * p.A < p.A ? p.S - k * p.A : p.A;
    size_t per = (p.A / gridDim.x + 15) / 16 * 16, b = blockIdx.x * per, e = b + per;
    *off = b < *n ? b : *n;
    *len = (e < *n ? e : *n) - *off;
}
__global__ void producer(P p)
{
    size_t steps = (p.S + p.A - 1) / p.A;
    if (p.variant == 0) {
        size_t per = p.S / gridDim.x;
        copy_share(p.fifo + blockIdx.x * per, p.src + blockIdx.x * per, per, threadIdx.x, blockDim.x);
        return;
    }
    if (p.variant != 2) {
        const bool sym = p.variant == 3 || p.variant == 5;
        for (size_t k = 0; k < steps; k++) {
            size_t off, len, n;
            share(p, k, &off, &len, &n);
            if (!sym && threadIdx.x == 0 && k >= (size_t)p.D)
                wait_ge(&p.freed[blockIdx.x], k - p.D + 1, p.gave_up0);
            __syncthreads();
            copy_share(p.fifo + (k % p.D) * p.A + off, p.src + k * p.A + off, len, threadIdx.x, blockDim.x);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence_system();
                st_rel(&p.ready[blockIdx.x], k + 1);
            }
            if (sym && threadIdx.x == 0)
                wait_ge(&p.freed[blockIdx.x], k, p.gave_up0);
        }
        return;
    }
    // variant 2: warp 0 posts, warps 1.. copy; barrier ids 1 (copiers), 2/3 (copiers -> poster, alternating)
    const int nc = blockDim.x - 32;
    if (threadIdx.x < 32) {
        for (size_t k = 0; k < steps; k++) {
            bar_sync(2 + (k & 1), blockDim.x);
            if (threadIdx.x == 0) {
                __threadfence_system();
                st_rel(&p.ready[blockIdx.x], k + 1);
            }
        }
        return;
    }
    const int tid = threadIdx.x - 32;
    for (size_t k = 0; k < steps; k++) {
        size_t off, len, n;
        share(p, k, &off, &len, &n);
        if (k >= (size_t)p.D) {
            if (tid == 0)
                wait_ge(&p.freed[blockIdx.x], k - p.D + 1, p.gave_up0);
            bar_sync(1, nc);
        }
        copy_share(p.fifo + (k % p.D) * p.A + off, p.src + k * p.A + off, len, tid, nc);
        bar_arrive(2 + (k & 1), blockDim.x);
    }
}
__global__ void consumer(P p)
{
    if (p.variant == 0)
        return;
    size_t steps = (p.S + p.A - 1) / p.A;
    for (size_t k = 0; k < steps; k++) {
        size_t off, len, n;
        share(p, k, &off, &len, &n);
        if (threadIdx.x == 0)
            wait_ge(&p.ready[blockIdx.x], k + 1, p.gave_up1);
        __syncthreads();
        if (p.variant >= 4)
            add_share((float *)(p.dst + k * p.A + off), (const float *)(p.own + k * p.A + off),
                      (const float *)(p.fifo + (k % p.D) * p.A + off), len, threadIdx.x, blockDim.x);
        else
            copy_share(p.dst + k * p.A + off, p.fifo + (k % p.D) * p.A + off, len, threadIdx.x, blockDim.x);
        __syncthreads();
        if (threadIdx.x == 0) {
            if (p.variant >= 3)
                __threadfence_system();
            st_rel(&p.freed[blockIdx.x], k + 1);
        }
    }
}
struct Cfg {
    int v;    // variant
    size_t A; // step bytes (0: the whole message)
    int D;    // FIFO slots
};

// The specs on the command line, or every configuration docs/performance.md quotes.
bool parse_cfgs(int argc, char **argv, std::vector<Cfg> *cfgs)
{
    for (int i = 3; i < argc; i++) {
        int v = 0, mib = 0, d = 2;
        if (sscanf(argv[i], "%d:%d:%d", &v, &mib, &d) < 2 || v < 0 || v > 5 || mib < 0 || d < 1 || (v == 2 && d != 2)) {
            printf("bad spec %s (VARIANT:STEP_MIB:DEPTH; variant 2 takes depth 2 only)\n", argv[i]);
            return false;
        }
        cfgs->push_back({v, (size_t)mib << 20, d});
    }
    if (cfgs->empty())
        *cfgs = {{0, 0, 2},        {1, 16 << 20, 2}, {1, 32 << 20, 2}, {1, 4 << 20, 2},  {1, 1 << 20, 2},
                 {2, 16 << 20, 2}, {2, 4 << 20, 2},  {2, 1 << 20, 2},  {3, 16 << 20, 2}, {3, 32 << 20, 2},
                 {4, 16 << 20, 2}, {4, 32 << 20, 2}, {5, 16 << 20, 2}, {5, 32 << 20, 2}};
    return true;
}

// Mean us of one configuration (producer on device 0, consumer on device 1),
// the first two repetitions not counted.
double time_cfg(const P &p, int G, int T, cudaStream_t s0, cudaStream_t s1)
{
    double sum = 0;
    const int reps = p.S >= (256u << 20) ? 6 : 20;
    for (int r = 0; r < reps; r++) {
        CK(cudaSetDevice(1));
        CK(cudaMemsetAsync(p.ready, 0, 8 * 1024, s1));
        CK(cudaMemsetAsync(p.gave_up1, 0, sizeof(int), s1));
        CK(cudaStreamSynchronize(s1));
        CK(cudaSetDevice(0));
        CK(cudaMemsetAsync(p.freed, 0, 8 * 1024, s0));
        CK(cudaMemsetAsync(p.gave_up0, 0, sizeof(int), s0));
        CK(cudaStreamSynchronize(s0));
        auto t0 = std::chrono::steady_clock::now();
        CK(cudaSetDevice(1));
        consumer<<<G, T, 0, s1>>>(p);
        CK(cudaSetDevice(0));
        producer<<<G, T, 0, s0>>>(p);
        CK(cudaStreamSynchronize(s0));
        CK(cudaSetDevice(1));
        CK(cudaStreamSynchronize(s1));
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        int g0 = 0, g1 = 0;
        CK(cudaMemcpy(&g1, p.gave_up1, sizeof g1, cudaMemcpyDeviceToHost));
        CK(cudaSetDevice(0));
        CK(cudaMemcpy(&g0, p.gave_up0, sizeof g0, cudaMemcpyDeviceToHost));
        if (g0 || g1) {
            printf("\ngpucoll-fifo: a wait gave up after 10 s (variant %d, step %zu, depth %d)\n", p.variant, p.A, p.D);
            exit(1);
        }
        if (r >= 2)
            sum += us;
    }
    return sum / (reps - 2);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("gpucoll-fifo: needs two GPUs\n");
        return 77;
    }
    const int G = argc > 1 ? atoi(argv[1]) : 128, T = argc > 2 ? atoi(argv[2]) : 512;
    std::vector<Cfg> cfgs;
    if (G < 1 || T < 64 || T % 32 || !parse_cfgs(argc, argv, &cfgs))
        return 2;
    // Producer block b waits for consumer block b and back: every block must be on the GPU at once.
    int sms = 0, per_sm_p = 0, per_sm_c = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_p, producer, T, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_c, consumer, T, 0));
    if (G > sms * (per_sm_p < per_sm_c ? per_sm_p : per_sm_c)) {
        printf("gpucoll-fifo: %d blocks of %d threads do not fit on the GPU at once\n", G, T);
        return 2;
    }
    const size_t maxS = 1ull << 30;
    char *src, *dst, *fifo, *own;
    uint64_t *ready, *freed;
    int *gave_up0, *gave_up1;
    CK(cudaSetDevice(1));
    CK(cudaDeviceEnablePeerAccess(0, 0));
    CK(cudaMalloc(&fifo, maxS));
    CK(cudaMalloc(&dst, maxS));
    CK(cudaMalloc(&own, maxS));
    CK(cudaMemset(own, 0, maxS));
    CK(cudaMalloc(&ready, 8 * 1024));
    CK(cudaMalloc(&gave_up1, sizeof(int)));
    CK(cudaSetDevice(0));
    CK(cudaDeviceEnablePeerAccess(1, 0));
    CK(cudaMalloc(&src, maxS));
    CK(cudaMalloc(&freed, 8 * 1024));
    CK(cudaMalloc(&gave_up0, sizeof(int)));
    CK(cudaMemset(src, 1, maxS));
    cudaStream_t s0, s1;
    CK(cudaStreamCreate(&s0));
    CK(cudaSetDevice(1));
    CK(cudaStreamCreate(&s1));
    printf("G %d T %d\nvariant stepMiB depth   S=16M   64M   256M    1G (us)\n", G, T);
    for (const Cfg &c : cfgs) {
        printf("%7d %7zu %5d", c.v, c.A >> 20, c.D);
        for (size_t S : {16ull << 20, 64ull << 20, 256ull << 20, 1ull << 30})
            printf(" %7.1f",
                   time_cfg(P{src, fifo, dst, own, ready, freed, gave_up0, gave_up1, S, c.A ? c.A : S, c.D, c.v}, G, T,
                            s0, s1));
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
