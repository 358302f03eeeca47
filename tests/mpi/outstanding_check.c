/* Any number of outstanding requests, in any mix of host and device
 * buffers, once a communicator's GPU path is set up (where host buffers go
 * through device stand-ins).
 *
 *   outstanding_check [--one-gpu]
 *
 * 40 MPI_Iallreduce on host buffers outstanding at once; 20 persistent
 * host-buffer allreduces started together (MPI_Startall), three rounds;
 * 24 outstanding calls where even ranks pass host buffers and odd ranks
 * device buffers; then a 600 MiB host-buffer MPI_Iallreduce, after which
 * the GPU's free memory must come back within the stand-in budget
 * (coll_gpu_staging_cache_bytes, 256 MiB by default); then the same with
 * the GPU nearly full (gpu_full). Every result checked exactly. Exit 77
 * without a GPU. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"

enum { kN = 4099, kMany = 40, kPersist = 20, kMixed = 24 };
static int rank, size, failures, checks;

static int val(int r, int i, int k) { return r * 100 + i * 7 + k % 13; }

static void check_sum(const int *got, int i, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        int want = 0;
        for (int r = 0; r < size; r++) want += val(r, i, (int)k);
        bad += got[k] != want;
    }
    checks++;
    if (bad) {
        failures++;
        printf("FAIL rank %d: %s #%d: %zu wrong\n", rank, what, i, bad);
    }
}

static void fill(int *p, int i, size_t n)
{
    for (size_t k = 0; k < n; k++) p[k] = val(rank, i, (int)k);
}

static void many_host(MPI_Comm comm)
{
    int *s = malloc(sizeof(int) * kN * kMany), *r = malloc(sizeof(int) * kN * kMany);
    MPI_Request req[kMany];
    for (int i = 0; i < kMany; i++) fill(s + i * kN, i, kN);
    for (int i = 0; i < kMany; i++)
        if (MPI_Iallreduce(s + i * kN, r + i * kN, kN, MPI_INT, MPI_SUM, comm, &req[i]) != MPI_SUCCESS)
            printf("FAIL rank %d: MPI_Iallreduce #%d refused\n", rank, i), failures++;
    MPI_Waitall(kMany, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < kMany; i++) check_sum(r + i * kN, i, kN, "outstanding host-buffer MPI_Iallreduce");
    free(s);
    free(r);
}

static void persistent_host(MPI_Comm comm)
{
#ifdef P
    int *s = malloc(sizeof(int) * kN * kPersist), *r = malloc(sizeof(int) * kN * kPersist);
    MPI_Request req[kPersist];
    for (int i = 0; i < kPersist; i++)
        P(Allreduce)(s + i * kN, r + i * kN, kN, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req[i]);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < kPersist; i++) fill(s + i * kN, i, kN);
        if (MPI_Startall(kPersist, req) != MPI_SUCCESS) printf("FAIL rank %d: MPI_Startall\n", rank), failures++;
        MPI_Waitall(kPersist, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < kPersist; i++) check_sum(r + i * kN, i, kN, "persistent host-buffer allreduce");
    }
    for (int i = 0; i < kPersist; i++) MPI_Request_free(&req[i]);
    free(s);
    free(r);
#else
    (void)comm;
#endif
}

/* Even ranks host buffers, odd ranks device buffers. */
static void mixed(MPI_Comm comm)
{
    const size_t bytes = sizeof(int) * kN * kMixed;
    const int dev = rank % 2;
    int *hs = malloc(bytes), *hr = malloc(bytes), *s = hs, *r = hr;
    if (dev) {
        cudaMalloc((void **)&s, bytes);
        cudaMalloc((void **)&r, bytes);
    }
    for (int i = 0; i < kMixed; i++) fill(hs + i * kN, i, kN);
    if (dev) cudaMemcpy(s, hs, bytes, cudaMemcpyHostToDevice);
    MPI_Request req[kMixed];
    for (int i = 0; i < kMixed; i++) MPI_Iallreduce(s + i * kN, r + i * kN, kN, MPI_INT, MPI_SUM, comm, &req[i]);
    MPI_Waitall(kMixed, req, MPI_STATUSES_IGNORE);
    if (dev) cudaMemcpy(hr, r, bytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < kMixed; i++) check_sum(hr + i * kN, i, kN, "mixed host/device MPI_Iallreduce");
    if (dev) {
        cudaFree(s);
        cudaFree(r);
    }
    free(hs);
    free(hr);
}

/* A large host-buffer call: its stand-ins go back once it is over. */
static void large_returned(MPI_Comm comm)
{
    const size_t n = (size_t)600 * 1024 * 1024 / sizeof(int);
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    fill(s, 1, n);
    size_t free0, free1, total;
    cudaDeviceSynchronize();
    /* Ranks may share the GPU: every rank measures while none holds the
     * call's stand-ins, and the next step (which may fill the GPU) waits for
     * every rank's second reading. */
    MPI_Barrier(comm);
    cudaMemGetInfo(&free0, &total);
    MPI_Request req;
    MPI_Iallreduce(s, r, (int)n, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_sum(r, 1, n, "600 MiB host-buffer MPI_Iallreduce");
    MPI_Barrier(comm);
    cudaMemGetInfo(&free1, &total);
    MPI_Barrier(comm);
    checks++;
    const size_t budget = (size_t)256 * 1024 * 1024;
    if (free1 + budget < free0) {
        failures++;
        printf("FAIL rank %d: %zu MiB of device memory kept after a 600 MiB call (budget 256)\n", rank,
               (free0 - free1) >> 20);
    }
    free(s);
    free(r);
}

/* The GPU nearly full (256 MiB left): a 512 MiB host-buffer MPI_Iallreduce
 * cannot get device stand-ins; it must still be right (or fail cleanly on
 * every rank), and the correct calls after it must be right and complete
 * before they return (a stale error once failed the next blocking call,
 * and the one after returned before its kernel had finished). */
static void gpu_full(MPI_Comm comm)
{
    enum { kHogs = 4096 };
    static void *hogs[kHogs];
    int nhogs = 0;
    size_t free_b, total;
    cudaMemGetInfo(&free_b, &total);
    const size_t piece = (size_t)256 * 1024 * 1024;
    while (nhogs < kHogs && free_b > 2 * piece && cudaMalloc(&hogs[nhogs], piece) == cudaSuccess) {
        nhogs++;
        cudaMemGetInfo(&free_b, &total);
    }
    (void)cudaGetLastError();
    const size_t n = (size_t)512 * 1024 * 1024 / sizeof(int);
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    fill(s, 2, n);
    MPI_Request req;
    int rc = MPI_Iallreduce(s, r, (int)n, MPI_INT, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) check_sum(r, 2, n, "512 MiB host-buffer MPI_Iallreduce on a full GPU");
    int *d, *hd = malloc(sizeof(int) * kN);
    cudaMalloc((void **)&d, sizeof(int) * kN);
    for (int i = 3; i < 6; i++) {
        fill(hd, i, kN);
        cudaMemcpy(d, hd, sizeof(int) * kN, cudaMemcpyHostToDevice);
        int brc = MPI_Allreduce(MPI_IN_PLACE, d, kN, MPI_INT, MPI_SUM, comm);
        cudaMemcpy(hd, d, sizeof(int) * kN, cudaMemcpyDeviceToHost);
        checks++;
        if (brc != MPI_SUCCESS) failures++, printf("FAIL rank %d: blocking call %d after a full GPU: rc %d\n", rank, i, brc);
        check_sum(hd, i, kN, "blocking MPI_Allreduce after a full GPU");
    }
    fill(hd, 7, kN);
    cudaMemcpy(d, hd, sizeof(int) * kN, cudaMemcpyHostToDevice);
    rc = MPI_Iallreduce(MPI_IN_PLACE, d, kN, MPI_INT, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    cudaMemcpy(hd, d, sizeof(int) * kN, cudaMemcpyDeviceToHost);
    checks++;
    if (rc != MPI_SUCCESS) failures++, printf("FAIL rank %d: nonblocking call after a full GPU: rc %d\n", rank, rc);
    check_sum(hd, 7, kN, "MPI_Iallreduce after a full GPU");
    for (int i = 0; i < nhogs; i++) cudaFree(hogs[i]);
    cudaFree(d);
    free(hd);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    int one_gpu = 0, local = 0, ngpus = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    if (test_select_gpu(one_gpu, &local, &ngpus) < 0) {
        if (rank == 0) printf("outstanding_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    float *d;
    cudaMalloc((void **)&d, 64 * sizeof(float));
    cudaMemset(d, 0, 64 * sizeof(float));
    MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, comm); /* the GPU path, set up */
    cudaFree(d);
    many_host(comm);
    persistent_host(comm);
    mixed(comm);
    large_returned(comm);
    /* Ranks sharing a GPU would fill it for each other. */
    int shared = one_gpu || local >= ngpus, any_shared = 0;
    MPI_Allreduce(&shared, &any_shared, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any_shared) gpu_full(comm);
    else if (rank == 0) printf("outstanding_check: ranks share a GPU: the full-GPU case skipped\n");
    MPI_Comm_free(&comm);
    int rc = test_tally(failures, checks, "outstanding_check");
    MPI_Finalize();
    return rc;
}
