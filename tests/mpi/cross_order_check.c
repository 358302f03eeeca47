/* Nonblocking and persistent collectives on two communicators, started in
 * one order on even ranks and in the other on odd ranks: valid MPI (the
 * order rule holds per communicator), so every call must complete.
 *
 *   cross_order_check [--one-gpu] [--mib N]
 *
 * Each rank has two peer kernels on the GPU at once, one per communicator,
 * with the largest grids (N MiB, default 64, of floats per call). Where a
 * rank's first kernel and its peer's first kernel are different calls, each
 * waits for a kernel that must find SMs beside the ones already spinning.
 * With ranks sharing a GPU (--one-gpu, under MPS) the grids of every rank's
 * kernels share its SMs. A call that cannot complete is reported by the
 * watchdog (exit 3) instead of hanging until ctest's timeout. Exit 77
 * without a GPU. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"
#include "test_watchdog.h"

static int rank, size, failures, checks;

static float val(int r, int call, size_t i) { return (float)(r + 1) * (float)(call + 1) + (float)(i % 7); }

typedef struct {
    float *send, *recv;
    size_t n;
    int call;
} buf_t;

static void fill(buf_t *b)
{
    float *h = malloc(b->n * sizeof(float));
    for (size_t i = 0; i < b->n; i++) h[i] = val(rank, b->call, i);
    cudaMemcpy(b->send, h, b->n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(b->recv, 0, b->n * sizeof(float));
    free(h);
}

static void check(const buf_t *b, const char *what)
{
    float *h = malloc(b->n * sizeof(float));
    cudaMemcpy(h, b->recv, b->n * sizeof(float), cudaMemcpyDeviceToHost);
    size_t wrong = 0;
    for (size_t i = 0; i < b->n; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += val(r, b->call, i);
        wrong += h[i] != want;
    }
    checks++;
    if (wrong) {
        printf("FAIL rank %d: %s, call %d: %zu of %zu wrong\n", rank, what, b->call, wrong, b->n);
        failures++;
    }
    free(h);
}

/* One call on each communicator; with `cross`, odd ranks start them in the
 * other order. */
static void nonblocking_round(MPI_Comm c[2], buf_t b[2], int cross, const char *what)
{
    begin_part(what);
    MPI_Request r[2];
    for (int k = 0; k < 2; k++) fill(&b[k]);
    for (int k = 0; k < 2; k++) {
        const int j = cross && rank % 2 ? 1 - k : k;
        MPI_Iallreduce(b[j].send, b[j].recv, (int)b[j].n, MPI_FLOAT, MPI_SUM, c[j], &r[j]);
    }
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    end_part();
    for (int k = 0; k < 2; k++) check(&b[k], what);
}

#ifdef P
static void persistent_rounds(MPI_Comm c[2], buf_t b[2])
{
    MPI_Request r[2];
    for (int j = 0; j < 2; j++)
        P(Allreduce)(b[j].send, b[j].recv, (int)b[j].n, MPI_FLOAT, MPI_SUM, c[j], MPI_INFO_NULL, &r[j]);
    for (int round = 0; round < 3; round++) {
        begin_part("persistent, started in the other order on odd ranks");
        for (int k = 0; k < 2; k++) fill(&b[k]);
        for (int k = 0; k < 2; k++) MPI_Start(&r[rank % 2 ? 1 - k : k]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        end_part();
        for (int k = 0; k < 2; k++) check(&b[k], "persistent, other order on odd ranks");
    }
    for (int j = 0; j < 2; j++) MPI_Request_free(&r[j]);
}
#endif

int main(int argc, char **argv)
{
    int one_gpu = 0;
    size_t mib = 64;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = (size_t)atol(argv[++i]);
    }
    if (test_select_gpu(one_gpu, NULL, NULL) < 0 || size < 2) {
        if (rank == 0) printf("cross_order_check: needs 2 ranks and a GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    watchdog_init("cross_order_check", rank, 60, 1);
    MPI_Comm c[2];
    buf_t b[2];
    for (int j = 0; j < 2; j++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[j]);
        b[j].n = (mib << 20) / sizeof(float);
        b[j].call = j;
        b[j].send = test_mem_alloc(1, -1, b[j].n * sizeof(float));
        b[j].recv = test_mem_alloc(1, -1, b[j].n * sizeof(float));
        /* A blocking call first: the communicator's GPU path is set up. */
        fill(&b[j]);
        MPI_Allreduce(b[j].send, b[j].recv, (int)b[j].n, MPI_FLOAT, MPI_SUM, c[j]);
        check(&b[j], "blocking set-up call");
    }
    nonblocking_round(c, b, 0, "nonblocking, same order");
    nonblocking_round(c, b, 1, "nonblocking, other order on odd ranks");
    nonblocking_round(c, b, 1, "nonblocking, other order on odd ranks again");
#ifdef P
    persistent_rounds(c, b);
#endif
    for (int j = 0; j < 2; j++) {
        MPI_Comm_free(&c[j]);
        test_mem_free(1, b[j].send);
        test_mem_free(1, b[j].recv);
    }
    int rc = test_tally(failures, checks, "cross_order_check (%zu MiB a call)", mib);
    MPI_Finalize();
    return rc;
}
