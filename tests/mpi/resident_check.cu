/* Resident kernels (kernels/resident.cuh) against what can go wrong with a
 * kernel that outlives its call:
 *  - the input is still being written by a kernel on the legacy default
 *    stream when the call starts (no synchronisation by the caller);
 *  - gaps between calls shorter than, about equal to and longer than
 *    coll_gpu_resident_us, so that some calls meet a kernel that is just
 *    leaving;
 *  - datatype, op, collective and size change from call to call (another
 *    kernel, or a call above resident_max_bytes on the launch path);
 *  - in place, where running a call twice would reduce twice;
 *  - now and then one rank's buffers in host memory while its peers' are on
 *    the GPU (a valid call that the peers may have posted to their kernels
 *    before the ranks agreed: coll_gpu_resident_early), and the calls after.
 * Every result is checked on the host. Exits 77 without a GPU.
 *
 *   resident_check [ROUNDS [RESIDENT_US [shared]]]
 * shared: ranks may share a GPU (run them as MPS clients). */
#include <mpi.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

namespace {

// What rank r holds at element i in round `round` (small integers: sums of
// them are exact in float and double).
__host__ __device__ int value_of(int r, int round, size_t i) { return (int)((r * 7 + round * 13 + i * 3) % 64) - 20; }

// Spins for `ns` before writing, so that the collective is called while
// this is still running on the legacy default stream.
template <class T> __global__ void slow_fill(T *buf, size_t n, int rank, int round, uint64_t ns)
{
    if (threadIdx.x == 0) {
        uint64_t start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        while (now - start < ns);
    }
    __syncthreads();
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = (T)value_of(rank, round, i);
}

void spin_us(int us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

enum Kind { AllreduceFloatSum, AllreduceIntMax, AllreduceDoubleSum, BcastInt, KindCount };

template <class T> T expect_of(Kind kind, int nranks, int round, size_t i, int root)
{
    if (kind == BcastInt) return (T)value_of(root, round, i);
    T acc = (T)value_of(0, round, i);
    for (int r = 1; r < nranks; r++) {
        T v = (T)value_of(r, round, i);
        acc = kind == AllreduceIntMax ? (v > acc ? v : acc) : acc + v;
    }
    return acc;
}

template <class T> long check_out(Kind kind, size_t n, bool in_place, bool pending, int round, int rank, int nranks,
                                  const T *host)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        T want = expect_of<T>(kind, nranks, round, i, round % nranks);
        if (host[i] != want) {
            if (wrong < 3)
                fprintf(stderr, "rank %d round %d kind %d n %zu in_place %d pending %d: [%zu] = %g, want %g\n", rank,
                        round, (int)kind, n, (int)in_place, (int)pending, i, (double)host[i], (double)want);
            wrong++;
        }
    }
    return wrong;
}

void call(Kind kind, MPI_Datatype type, MPI_Op op, size_t n, bool in_place, int root, void *in, void *out)
{
    if (kind == BcastInt) MPI_Bcast(out, (int)n, type, root, MPI_COMM_WORLD);
    else MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int)n, type, op, MPI_COMM_WORLD);
}

// The call with this rank's buffers in host memory (hin, hout).
template <class T>
long host_call(Kind kind, MPI_Datatype type, MPI_Op op, size_t n, bool in_place, int round, int rank, int nranks,
               T *hin, T *hout)
{
    int root = round % nranks;
    T *target = (in_place || kind == BcastInt) ? hout : hin;
    for (size_t i = 0; i < n; i++) {
        hout[i] = 0;
        if (kind != BcastInt || rank == root) target[i] = (T)value_of(rank, round, i);
    }
    call(kind, type, op, n, in_place, root, hin, hout);
    return check_out<T>(kind, n, in_place, false, round, rank, nranks, hout);
}

// One call: fill (slowly, or at once and synchronised), call, check.
template <class T>
long one_call(Kind kind, MPI_Datatype type, MPI_Op op, size_t n, bool in_place, bool pending, int round, int rank,
              int nranks, T *in, T *out, T *host)
{
    int root = round % nranks;
    T *target = (in_place || kind == BcastInt) ? out : in;
    int threads = 256, blocks = (int)((n + threads - 1) / threads < 1024 ? (n + threads - 1) / threads : 1024);
    if (blocks < 1) blocks = 1;
    // The root's bcast buffer and every rank's reduction input.
    if (kind != BcastInt || rank == root) {
        slow_fill<T><<<blocks, threads, 0, 0>>>(target, n, rank, round, pending ? 200000 : 0);
        // Not cudaDeviceSynchronize: it would also wait for a resident kernel to leave.
        if (!pending) cudaStreamSynchronize(0);
    } else {
        cudaMemset(out, 0, n * sizeof(T));
    }
    call(kind, type, op, n, in_place, root, in, out);
    cudaMemcpy(host, out, n * sizeof(T), cudaMemcpyDeviceToHost);
    return check_out<T>(kind, n, in_place, pending, round, rank, nranks, host);
}

template <class T>
long any_call(Kind kind, MPI_Datatype type, MPI_Op op, size_t n, bool in_place, bool pending, bool on_host,
              int round, int rank, int nranks, void *in, void *out, void *host, void *hin)
{
    if (on_host) return host_call<T>(kind, type, op, n, in_place, round, rank, nranks, (T *)hin, (T *)host);
    return one_call<T>(kind, type, op, n, in_place, pending, round, rank, nranks, (T *)in, (T *)out, (T *)host);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks, ndev = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) printf("no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm node;
    int local, local_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    // A running kernel serves a call only if the next one comes within
    // resident_us; ranks that share a GPU take turns on it for milliseconds
    // each, so the kernel would always have left: the test needs a GPU per rank.
    const bool shared = argc > 3 && !strcmp(argv[3], "shared");
    if (local_size > ndev && !shared) {
        if (rank == 0) printf("%d GPUs for %d ranks: skipped\n", ndev, local_size);
        MPI_Comm_free(&node);
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(local % ndev);
    int rounds = argc > 1 ? atoi(argv[1]) : 600;
    // The coll_gpu_resident_us the run uses: the gaps between calls are set around it.
    int idle_us = argc > 2 ? atoi(argv[2]) : 50;

    // Up to 2^20 + 5 doubles: above resident_max_bytes (1 MiB) for the larger ones.
    const size_t max_n = (1u << 20) + 5;
    const size_t sizes[] = {1, 7, 1000, 4099, 65537, 262144, (1u << 20) + 5};
    const double gaps[] = {0, 0, 0, 0.1, 0.4, 0.8, 1.0, 1.2, 2, 6}; // x idle_us
    void *in, *out, *host = malloc(max_n * sizeof(double)), *hin = malloc(max_n * sizeof(double));
    cudaMalloc(&in, max_n * sizeof(double));
    cudaMalloc(&out, max_n * sizeof(double));

    // Every rank draws the same sequence, so that they make the same calls.
    srand(12345);
    long wrong = 0, calls = 0;
    Kind kind = AllreduceFloatSum;
    for (int round = 0; round < rounds; round++) {
        // Half the calls need the kernel of the call before (a resident one may serve them).
        if (rand() % 2) kind = (Kind)(rand() % KindCount);
        size_t n = sizes[rand() % (sizeof sizes / sizeof *sizes)];
        bool in_place = kind != BcastInt && rand() % 2;
        bool pending = rand() % 4 == 0;
        int gap = (int)(gaps[rand() % (sizeof gaps / sizeof *gaps)] * idle_us);
        // One call in eight: one rank's buffers in host memory.
        const int host_rank = rand() % 8 == 0 ? rand() % nranks : -1;
        const bool on_host = rank == host_rank;
        // Ranks differ in when they get here by up to `gap`.
        spin_us(rank % 2 ? gap : gap / 2);
        switch (kind) {
        case AllreduceFloatSum:
            wrong += any_call<float>(kind, MPI_FLOAT, MPI_SUM, n, in_place, pending, on_host, round, rank, nranks, in,
                                     out, host, hin);
            break;
        case AllreduceIntMax:
            wrong += any_call<int>(kind, MPI_INT, MPI_MAX, n, in_place, pending, on_host, round, rank, nranks, in, out,
                                   host, hin);
            break;
        case AllreduceDoubleSum:
            wrong += any_call<double>(kind, MPI_DOUBLE, MPI_SUM, n, in_place, pending, on_host, round, rank, nranks,
                                      in, out, host, hin);
            break;
        default:
            wrong += any_call<int>(kind, MPI_INT, MPI_OP_NULL, n, false, pending, on_host, round, rank, nranks, in,
                                   out, host, hin);
            break;
        }
        calls++;
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "rank %d: CUDA error %s\n", rank, cudaGetErrorString(e));
        wrong++;
    }
    long total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("resident_check: %d ranks, %ld calls each, %ld wrong elements: %s\n", nranks, calls, total,
               total ? "FAIL" : "ok");
    cudaFree(in);
    cudaFree(out);
    free(host);
    free(hin);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return total ? 1 : 0;
}
