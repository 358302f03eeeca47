/* Requests outlive their communicator: MPI says the pending operations of a
 * freed communicator complete normally, and a request (nonblocking or
 * persistent) may be freed before or after it.
 *
 *   lifetime_check [--mem host|device] [--one-gpu] [--gpu-setup]
 *
 * For allreduce and bcast, small and large, on a dup of MPI_COMM_WORLD whose
 * GPU path a blocking call has set up first:
 *   nonblocking call, MPI_Comm_free, MPI_Wait (result checked);
 *   nonblocking call, MPI_Request_free, MPI_Comm_free (the next calls work);
 *   *_init, MPI_Comm_free, then two starts (results checked), then free;
 *   *_init, start, MPI_Comm_free, MPI_Wait (checked), free;
 *   *_init, start, wait, free after MPI_Comm_free.
 * Each rank's results are checked exactly; a crash fails the test. With
 * --gpu-setup a device allreduce sets each dup's GPU path up first, so that
 * host buffers take the device stand-ins of the GPU path. Exit 77 without a
 * GPU where one is asked for. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"
#include "test_watchdog.h"

static int rank, size, on_device, gpu_setup, failures, checks;

typedef struct {
    int bcast;   /* 0: allreduce (sum), 1: bcast from the last rank */
    size_t n;    /* floats */
    float *buf, *send, *host;
} call_t;

static float input(int r, int round, size_t i)
{
    return (float)((r + 1) * 3 + round * 5 + (int)(i % 97));
}

static float expected(const call_t *c, int round, size_t i)
{
    if (c->bcast) return input(size - 1, round, i);
    float s = 0;
    for (int r = 0; r < size; r++) s += input(r, round, i);
    return s;
}

/* Writes this rank's input of `round` where the call reads it. */
static void fill(call_t *c, int round)
{
    for (size_t i = 0; i < c->n; i++) c->host[i] = input(rank, round, i);
    test_mem_put(on_device, c->bcast ? c->buf : c->send, c->host, c->n * sizeof(float));
    if (c->bcast && rank != size - 1) {
        memset(c->host, 0, c->n * sizeof(float));
        test_mem_put(on_device, c->buf, c->host, c->n * sizeof(float));
    }
}

static void check(call_t *c, int round, const char *what)
{
    test_mem_get(on_device, c->host, c->buf, c->n * sizeof(float));
    size_t bad = 0;
    for (size_t i = 0; i < c->n; i++) bad += c->host[i] != expected(c, round, i);
    checks++;
    if (bad) {
        failures++;
        printf("FAIL rank %d: %s %s, %zu floats, round %d: %zu wrong\n", rank, c->bcast ? "bcast" : "allreduce",
               what, c->n, round, bad);
    }
}

static int blocking(call_t *c, MPI_Comm comm)
{
    if (c->bcast) return MPI_Bcast(c->buf, (int)c->n, MPI_FLOAT, size - 1, comm);
    return MPI_Allreduce(c->send, c->buf, (int)c->n, MPI_FLOAT, MPI_SUM, comm);
}

static int nonblocking(call_t *c, MPI_Comm comm, MPI_Request *r)
{
    if (c->bcast) return MPI_Ibcast(c->buf, (int)c->n, MPI_FLOAT, size - 1, comm, r);
    return MPI_Iallreduce(c->send, c->buf, (int)c->n, MPI_FLOAT, MPI_SUM, comm, r);
}

#ifdef P
static int persistent(call_t *c, MPI_Comm comm, MPI_Request *r)
{
    if (c->bcast) return P(Bcast)(c->buf, (int)c->n, MPI_FLOAT, size - 1, comm, MPI_INFO_NULL, r);
    return P(Allreduce)(c->send, c->buf, (int)c->n, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL, r);
}
#endif

/* A dup whose GPU path is set up (a blocking call with data on it). */
static MPI_Comm ready_comm(call_t *c)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (gpu_setup) {
        float *d = NULL;
        if (cudaMalloc((void **)&d, 64 * sizeof(float)) != cudaSuccess) {
            printf("FAIL rank %d: cudaMalloc of 256 bytes failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        cudaMemset(d, 0, 64 * sizeof(float));
        MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, comm);
        cudaFree(d);
    }
    fill(c, 0);
    blocking(c, comm);
    check(c, 0, "blocking, first call");
    return comm;
}

static void nonblocking_cases(call_t *c)
{
    MPI_Request r;
    begin_part("nonblocking, MPI_Comm_free, MPI_Wait");
    MPI_Comm comm = ready_comm(c);
    fill(c, 1);
    nonblocking(c, comm, &r);
    MPI_Comm_free(&comm);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(c, 1, "nonblocking, communicator freed before the wait");

    begin_part("nonblocking, MPI_Request_free, MPI_Comm_free, the next communicator");
    comm = ready_comm(c);
    fill(c, 2);
    nonblocking(c, comm, &r);
    MPI_Request_free(&r);
    MPI_Comm_free(&comm);
    /* Its completion is not observable; the next communicator must work. */
    MPI_Barrier(MPI_COMM_WORLD);
    comm = ready_comm(c);
    MPI_Comm_free(&comm);
    end_part();
}

#ifdef P
static void persistent_cases(call_t *c)
{
    MPI_Request r;
    begin_part("persistent, started after MPI_Comm_free");
    MPI_Comm comm = ready_comm(c);
    persistent(c, comm, &r);
    MPI_Comm_free(&comm);
    for (int round = 3; round < 5; round++) {
        fill(c, round);
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check(c, round, "persistent, started after the communicator was freed");
    }
    MPI_Request_free(&r);

    begin_part("persistent, MPI_Comm_free while it runs");
    comm = ready_comm(c);
    persistent(c, comm, &r);
    fill(c, 5);
    MPI_Start(&r);
    MPI_Comm_free(&comm);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(c, 5, "persistent, communicator freed while it ran");
    MPI_Request_free(&r);

    begin_part("persistent, freed after its communicator");
    comm = ready_comm(c);
    persistent(c, comm, &r);
    fill(c, 6);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(c, 6, "persistent, freed after its communicator");
    MPI_Comm_free(&comm);
    MPI_Request_free(&r);
    end_part();
}
#endif

int main(int argc, char **argv)
{
    int one_gpu = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) on_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--gpu-setup")) gpu_setup = 1;
    }
    if ((on_device || gpu_setup) && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("lifetime_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    /* A hang names its part and ends the rank (status 3) instead of
     * waiting for ctest's timeout. */
    watchdog_init("lifetime_check", rank, 120, 0);
    const size_t sizes[] = {64, (size_t)1 << 20};
    for (int b = 0; b < 2; b++) {
        for (int s = 0; s < 2; s++) {
            call_t c = {.bcast = b, .n = sizes[s]};
            c.buf = test_mem_alloc(on_device, -1, c.n * sizeof(float));
            c.send = test_mem_alloc(on_device, -1, c.n * sizeof(float));
            c.host = malloc(c.n * sizeof(float));
            nonblocking_cases(&c);
#ifdef P
            persistent_cases(&c);
#endif
            test_mem_free(on_device, c.buf);
            test_mem_free(on_device, c.send);
            free(c.host);
        }
    }
    int rc = test_tally(failures, checks, "lifetime_check (%s)", on_device ? "device" : "host");
    MPI_Finalize();
    return rc;
}
