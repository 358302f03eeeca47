/* Freed device buffers are given back (issue 31): a loop that allocates two
 * buffers, runs a zero-copy MPI_Allreduce from one into the other and frees
 * both must not leave the peers holding the freed memory through their
 * CUDA IPC mappings (the driver keeps it allocated while mapped).
 *
 *   ipc_release [iterations=16] [bytes=1073741824] [nonblocking]
 *
 * Each rank's owner notices its previous pair freed when it exports the next
 * one, and the peers unmap it after that call: after any iteration, a GPU
 * may hold at most the last pair of every rank on it (not yet noticed). One
 * more call on a fresh small pair at the end lets the peers drop those too.
 * The GPU's free memory is compared with where it was after warm-up, after
 * every iteration and at the end; every result is checked (first and last
 * element). Run with coll_gpu_verbose=10 to see a fallback from zero-copy.
 *
 * `nonblocking`: MPI_Iallreduce + MPI_Wait instead, where each pair is a
 * window made on first use (coll_gpu_auto_windows): its owner exports it
 * at the call and the peers map it at their own next call, with no order
 * between the two, so a peer may still map either of an owner's last two
 * pairs (both freed), and the end takes two calls on small pairs: after
 * the first every owner has ended its export, at the second every peer
 * has seen it. Exits 77 without a GPU. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_gpu.h"

static int g_rank, g_size, g_nonblocking;

/* A zero-copy allreduce (SUM of ints) from a fresh buffer into another, both
 * freed after it; 1 if the result is wrong. cudaMemset puts rank+1 in every
 * byte, and the byte sums stay below 256, so every int of the result is the
 * sum of the ranks' bytes in each of its four bytes. */
static int cycle(size_t bytes)
{
    int *src = NULL, *dst = NULL;
    if (cudaMalloc((void **)&src, bytes) != cudaSuccess || cudaMalloc((void **)&dst, bytes) != cudaSuccess) {
        printf("rank %d: cudaMalloc of %zu bytes failed: freed memory held?\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cudaMemset(src, g_rank + 1, bytes);
    cudaMemset(dst, 0, bytes);
    size_t n = bytes / sizeof(int);
    int rc;
    if (g_nonblocking) {
        MPI_Request req;
        rc = MPI_Iallreduce(src, dst, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Allreduce(src, dst, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    unsigned b = (unsigned)(g_size * (g_size + 1) / 2);
    int expect = (int)(b * 0x01010101u), first = 0, last = 0;
    cudaMemcpy(&first, dst, sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(&last, dst + n - 1, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(src);
    cudaFree(dst);
    return rc != MPI_SUCCESS || first != expect || last != expect;
}

/* How far the GPU's free memory is below `free0`, once every rank is here. */
static long long drop_since(size_t free0)
{
    size_t now = 0, total = 0;
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    cudaMemGetInfo(&now, &total);
    return (long long)free0 - (long long)now;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    long iters = argc > 1 ? atol(argv[1]) : 16;
    size_t bytes = argc > 2 ? (size_t)atoll(argv[2]) : (size_t)1 << 30;
    g_nonblocking = argc > 3 && strcmp(argv[3], "nonblocking") == 0;
    int ngpus = 0, dev = test_select_gpu(0, NULL, &ngpus);
    if (dev < 0) {
        if (g_rank == 0) printf("ipc_release: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    /* The ranks of this node on this GPU: each may leave its last pair. */
    MPI_Comm gpu_comm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &gpu_comm);
    int local = 0, on_node = 1;
    MPI_Comm_rank(gpu_comm, &local);
    MPI_Comm_size(gpu_comm, &on_node);
    MPI_Comm_free(&gpu_comm);
    int on_gpu = (on_node + ngpus - 1 - local % ngpus) / ngpus;
    const size_t small = 8u << 20; /* zero-copy (above direct_min_bytes), negligible if held */
    const long long slack = 128ll << 20; /* the small pairs, the allocator's rounding */
    int bad = cycle(small) + cycle(small); /* the team through scratch, then zero-copy */
    size_t free0 = 0, total = 0;
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    cudaMemGetInfo(&free0, &total);
    const long long bound = (long long)on_gpu * (g_nonblocking ? 4 : 2) * (long long)bytes + slack;
    long long worst = 0;
    for (long i = 0; i < iters; i++) {
        bad += cycle(bytes);
        long long d = drop_since(free0);
        if (d > worst) worst = d;
    }
    bad += cycle(small); /* the owners notice the last pair, the peers unmap it */
    if (g_nonblocking) bad += cycle(small);
    long long end = drop_since(free0);
    int leak = worst > bound || end > slack;
    printf("ipc_release: rank %d: %ld %s cycles of 2 x %zu B, %d rank(s) on GPU %d: free memory fell by at most "
           "%.0f MiB (bound %.0f), %.0f MiB at the end (bound %.0f), %d wrong\n",
           g_rank, iters, g_nonblocking ? "nonblocking" : "blocking", bytes, on_gpu, dev, worst / 1048576.0, bound / 1048576.0, end / 1048576.0,
           slack / 1048576.0, bad);
    int errs[2] = {bad, leak}, all[2];
    MPI_Allreduce(errs, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (g_rank == 0) printf("ipc_release: %s\n", all[0] || all[1] ? "FAILED" : "ok");
    return all[0] || all[1] ? 1 : 0;
}
