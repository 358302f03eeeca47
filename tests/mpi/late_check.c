/* A late rank is not an error: MPI lets ranks arrive at a collective any
 * time apart, and coll/gpu has no timeout by default.
 *
 *   late_check [--late-ms N] [--one-gpu]
 *
 * On device buffers, rank 0 arrives N ms (default 3000) after the others at
 * a blocking MPI_Bcast and MPI_Allreduce, an MPI_Iallreduce, a persistent
 * allreduce start and an enqueued allreduce (coll_gpu_ext.h); each is
 * checked, then three more correct calls of the same mode on the same
 * communicator. With coll_gpu_timeout_ms below N (a debugging bound) the
 * late calls fail by design; the test is run without it. Exit 77 without a
 * GPU. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_gpu_ext.h"
#include "test_forms.h"
#include "test_gpu.h"

enum { kN = 1 << 16 };
static int rank, size, late_ms = 3000, failures, checks;
static float *dbuf, *dsend, *host;
static cudaStream_t stream;

typedef enum { M_BLOCKING_BCAST, M_BLOCKING, M_NONBLOCKING, M_PERSISTENT, M_ENQUEUED, M_COUNT } mode_t_;
static const char *mode_names[M_COUNT] = {"blocking bcast", "blocking allreduce", "nonblocking allreduce",
                                          "persistent allreduce", "enqueued allreduce"};

static float input(int r, int round, int i) { return (float)(r * 11 + round * 3 + i % 29); }

static float expected(mode_t_ m, int round, int i)
{
    if (m == M_BLOCKING_BCAST) return input(0, round, i);
    float s = 0;
    for (int r = 0; r < size; r++) s += input(r, round, i);
    return s;
}

static void fill(mode_t_ m, int round)
{
    for (int i = 0; i < kN; i++) host[i] = input(rank, round, i);
    cudaMemcpy(m == M_BLOCKING_BCAST ? dbuf : dsend, host, kN * sizeof(float), cudaMemcpyHostToDevice);
    if (m == M_BLOCKING_BCAST && rank != 0) cudaMemset(dbuf, 0, kN * sizeof(float));
    /* A copy from pageable memory may still be in flight when cudaMemcpy
     * returns, and the enqueued call's stream does not wait for the legacy
     * stream (the caller orders its streams: docs/stream.md). */
    cudaDeviceSynchronize();
}

/* One call of mode m (rank 0 late by `delay_ms` first); its MPI result. */
static int call(mode_t_ m, MPI_Comm comm, MPI_Request *preq, int delay_ms)
{
    if (rank == 0 && delay_ms) usleep((useconds_t)delay_ms * 1000);
    MPI_Request r;
    int rc;
    switch (m) {
    case M_BLOCKING_BCAST: return MPI_Bcast(dbuf, kN, MPI_FLOAT, 0, comm);
    case M_BLOCKING: return MPI_Allreduce(dsend, dbuf, kN, MPI_FLOAT, MPI_SUM, comm);
    case M_NONBLOCKING:
        if ((rc = MPI_Iallreduce(dsend, dbuf, kN, MPI_FLOAT, MPI_SUM, comm, &r)) != MPI_SUCCESS) return rc;
        return MPI_Wait(&r, MPI_STATUS_IGNORE);
    case M_PERSISTENT:
        if ((rc = MPI_Start(preq)) != MPI_SUCCESS) return rc;
        return MPI_Wait(preq, MPI_STATUS_IGNORE);
    case M_ENQUEUED:
        if ((rc = coll_gpu_allreduce_enqueue(dsend, dbuf, kN, MPI_FLOAT, MPI_SUM, comm, stream)) != MPI_SUCCESS)
            return rc;
        cudaStreamSynchronize(stream);
        return coll_gpu_stream_status(comm);
    default: return MPI_ERR_ARG;
    }
}

static void check(mode_t_ m, int round, int rc, const char *what)
{
    cudaMemcpy(host, dbuf, kN * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < kN; i++) bad += host[i] != expected(m, round, i);
    checks++;
    if (rc != MPI_SUCCESS || bad) {
        failures++;
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
        printf("FAIL rank %d: %s, %s: rc %d (%s), %d wrong\n", rank, mode_names[m], what, rc, msg, bad);
    }
}

static void run_mode(mode_t_ m)
{
    MPI_Comm comm;
    MPI_Request preq = MPI_REQUEST_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (m == M_ENQUEUED && coll_gpu_stream_init(comm) != MPI_SUCCESS) {
        if (rank == 0) printf("late_check: %s: no stream-ordered calls here: skipped\n", mode_names[m]);
        MPI_Comm_free(&comm);
        return;
    }
#ifdef P
    if (m == M_PERSISTENT) P(Allreduce)(dsend, dbuf, kN, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL, &preq);
#else
    if (m == M_PERSISTENT) {
        MPI_Comm_free(&comm);
        return;
    }
#endif
    fill(m, 0); /* sets the GPU path up, all ranks on time */
    check(m, 0, call(m, comm, &preq, 0), "on time");
    fill(m, 1);
    check(m, 1, call(m, comm, &preq, late_ms), "rank 0 late");
    for (int round = 2; round < 5; round++) {
        fill(m, round);
        check(m, round, call(m, comm, &preq, 0), "after the late call");
    }
    if (preq != MPI_REQUEST_NULL) MPI_Request_free(&preq);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    int one_gpu = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--late-ms") && i + 1 < argc) late_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    if (test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("late_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    cudaMalloc((void **)&dbuf, kN * sizeof(float));
    cudaMalloc((void **)&dsend, kN * sizeof(float));
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    host = malloc(kN * sizeof(float));
    for (int m = 0; m < M_COUNT; m++) run_mode((mode_t_)m);
    int rc = test_tally(failures, checks, "late_check (rank 0 late by %d ms)", late_ms);
    cudaFree(dbuf);
    cudaFree(dsend);
    free(host);
    MPI_Finalize();
    return rc;
}
