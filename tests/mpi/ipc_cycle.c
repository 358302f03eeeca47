/* Allocate, reduce, free, many times over: the zero-copy path maps every new
 * peer buffer through CUDA IPC, and its cache must neither serve a stale
 * mapping for a re-used address nor hold on to device memory without bound.
 *
 *   ipc_cycle [iterations=100000] [bytes=524288]
 *
 * Each iteration cudaMallocs a buffer (sizes vary so addresses move and
 * repeat), fills it with rank+1, runs an in-place MPI_Allreduce(SUM) on it
 * and frees it. Every result is checked (first and last element). At the end
 * the GPU's free memory must be within the cache's bound of where it was
 * after warm-up. Exits 77 without a GPU. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, ndev = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 524288;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) printf("ipc_cycle: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(rank % ndev);
    size_t n = bytes / sizeof(int);
    int expect = size * (size + 1) / 2, bad = 0;
    size_t free0 = 0, free1 = 0, total = 0;
    double t0 = 0;
    const long warmup = 200;
    for (long i = 0; i < iters + warmup; i++) {
        if (i == warmup) {
            cudaDeviceSynchronize();
            MPI_Barrier(MPI_COMM_WORLD);
            cudaMemGetInfo(&free0, &total);
            t0 = MPI_Wtime();
        }
        size_t cnt = n + (size_t)(i % 7) * 1024; /* moves the allocation between size classes */
        int *buf = NULL;
        if (cudaMalloc((void **)&buf, cnt * sizeof(int)) != cudaSuccess) {
            printf("rank %d: cudaMalloc failed at iteration %ld\n", rank, i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int *host = malloc(cnt * sizeof(int));
        for (size_t k = 0; k < cnt; k++) host[k] = rank + 1;
        cudaMemcpy(buf, host, cnt * sizeof(int), cudaMemcpyHostToDevice);
        int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int first = 0, last = 0;
        cudaMemcpy(&first, buf, sizeof(int), cudaMemcpyDeviceToHost);
        cudaMemcpy(&last, buf + cnt - 1, sizeof(int), cudaMemcpyDeviceToHost);
        if (rc != MPI_SUCCESS || first != expect || last != expect) {
            if (bad++ < 5)
                printf("rank %d: iteration %ld: rc %d, got %d..%d, want %d\n", rank, i, rc, first, last, expect);
        }
        free(host);
        cudaFree(buf);
    }
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    double secs = MPI_Wtime() - t0;
    cudaMemGetInfo(&free1, &total);
    /* Peers may keep up to the cache's worth of our freed buffers mapped (the
     * driver keeps mapped memory alive): 64 entries x 2 of the largest
     * buffer, plus slack for the allocator's own rounding. */
    size_t bound = 2 * 64 * (bytes + 7 * 1024 * sizeof(int)) + (64u << 20);
    long long drop = (long long)free0 - (long long)free1;
    int leak = drop > (long long)bound;
    int errs[2] = {bad, leak}, all[2];
    MPI_Allreduce(errs, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("ipc_cycle: rank %d: %ld cycles of %zu B in %.1f s (%.0f us each), free memory change %.1f MiB "
           "(bound %.0f MiB), %d wrong\n",
           rank, iters, bytes, secs, secs / (iters ? iters : 1) * 1e6, -drop / 1048576.0, bound / 1048576.0, bad);
    MPI_Finalize();
    if (rank == 0) printf("ipc_cycle: %s\n", all[0] || all[1] ? "FAILED" : "ok");
    return all[0] || all[1] ? 1 : 0;
}
