/* Persistent collectives (MPI-4 *_init; MPIX_*_init in Open MPI 4.1) on host
 * or device buffers, every result checked exactly.
 *
 *   persistent_check [--mem host|device] [--one-gpu] [--starts N]
 *
 * Each of allreduce, reduce, bcast, allgather, alltoall, reduce_scatter_block,
 * gather, scatter, allgatherv and alltoallv is initialised once and started
 * N times (default 200), the send buffers rewritten before every start and
 * other collectives now and then between two starts;
 * then all of them at once with MPI_Startall, completed in reverse order
 * with MPI_Test loops; a request freed before its first start; one freed
 * while active (MPI allows it: the operation still completes). Exit 77
 * without the persistent collectives, or without a GPU in device mode. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_forms.h"
#include "test_gpu.h"

#ifndef P
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    printf("persistent_check: no persistent collectives in this MPI: skipped\n");
    MPI_Finalize();
    return 77;
}
#else

enum { kCount = 3000, kKinds = 10 };
static int rank, size, on_device, failures, checks;
static const char *names[kKinds] = {"allreduce", "reduce",  "bcast",  "allgather",  "alltoall",
                                    "reduce_scatter_block", "gather", "scatter", "allgatherv", "alltoallv"};

typedef struct {
    int *send, *recv;      /* the buffers the request is bound to (host or device) */
    int *hsend, *hrecv;    /* host staging in device mode */
    int counts[64], displs[64];   /* what rank r contributes (and where it lands) */
    int scounts[64], sdispls[64]; /* alltoallv: this rank sends counts[rank] to everyone */
    size_t send_n, recv_n; /* ints */
} bufs_t;

static int val(int r, int start, size_t i) { return (r + 1) * 7 + start * 13 + (int)(i % 1009); }

static void init_request(int kind, bufs_t *b, MPI_Request *req)
{
    const int blk = kCount / size;
    for (int r = 0; r < size; r++) {
        b->counts[r] = blk - (r % 3); /* uneven for the v-kinds */
        b->displs[r] = r * blk;
    }
    for (int r = 0; r < size; r++) {
        b->scounts[r] = b->counts[rank];
        b->sdispls[r] = r * blk;
    }
    b->send_n = b->recv_n = (size_t)kCount;
    b->send = test_mem_alloc(on_device, -1, kCount * sizeof(int));
    b->recv = test_mem_alloc(on_device, -1, kCount * sizeof(int));
    b->hsend = malloc(kCount * sizeof(int));
    b->hrecv = malloc(kCount * sizeof(int));
    int root = size - 1;
    MPI_Comm c = MPI_COMM_WORLD;
    switch (kind) {
    case 0: P(Allreduce)(b->send, b->recv, kCount, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, req); break;
    case 1: P(Reduce)(b->send, b->recv, kCount, MPI_INT, MPI_MAX, root, c, MPI_INFO_NULL, req); break;
    case 2: P(Bcast)(b->recv, kCount, MPI_INT, root, c, MPI_INFO_NULL, req); break;
    case 3: P(Allgather)(b->send, blk, MPI_INT, b->recv, blk, MPI_INT, c, MPI_INFO_NULL, req); break;
    case 4: P(Alltoall)(b->send, blk, MPI_INT, b->recv, blk, MPI_INT, c, MPI_INFO_NULL, req); break;
    case 5: P(Reduce_scatter_block)(b->send, b->recv, blk, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, req); break;
    case 6: P(Gather)(b->send, blk, MPI_INT, b->recv, blk, MPI_INT, root, c, MPI_INFO_NULL, req); break;
    case 7: P(Scatter)(b->send, blk, MPI_INT, b->recv, blk, MPI_INT, root, c, MPI_INFO_NULL, req); break;
    case 8:
        P(Allgatherv)(b->send, b->counts[rank], MPI_INT, b->recv, b->counts, b->displs, MPI_INT, c, MPI_INFO_NULL, req);
        break;
    case 9:
        P(Alltoallv)(b->send, b->scounts, b->sdispls, MPI_INT, b->recv, b->counts, b->displs, MPI_INT, c, MPI_INFO_NULL,
                     req);
        break;
    }
}

/* Writes this start's inputs (and a sentinel over the output). */
static void prepare(int kind, bufs_t *b, int start)
{
    for (int i = 0; i < kCount; i++) b->hsend[i] = val(rank, start, (size_t)i);
    test_mem_put(on_device, b->send, b->hsend, kCount * sizeof(int));
    for (int i = 0; i < kCount; i++) b->hrecv[i] = kind == 2 && rank == size - 1 ? val(rank, start, (size_t)i) : -1;
    test_mem_put(on_device, b->recv, b->hrecv, kCount * sizeof(int));
}

/* Checks this start's outputs. */
static void verify(int kind, bufs_t *b, int start)
{
    const int blk = kCount / size, root = size - 1;
    test_mem_get(on_device, b->hrecv, b->recv, kCount * sizeof(int));
    checks++;
    for (int i = 0; i < kCount; i++) {
        long want = -1;
        switch (kind) {
        case 0:
            want = 0;
            for (int r = 0; r < size; r++) want += val(r, start, (size_t)i);
            break;
        case 1: want = rank == root ? val(size - 1, start, (size_t)i) : -1; break;
        case 2: want = val(root, start, (size_t)i); break;
        case 3:
            if (i < blk * size) want = val(i / blk, start, (size_t)(i % blk));
            break;
        case 4:
            if (i < blk * size) want = val(i / blk, start, (size_t)(rank * blk + i % blk));
            break;
        case 5:
            if (i < blk) {
                want = 0;
                for (int r = 0; r < size; r++) want += val(r, start, (size_t)(rank * blk + i));
            }
            break;
        case 6:
            if (rank == root && i < blk * size) want = val(i / blk, start, (size_t)(i % blk));
            break;
        case 7:
            if (i < blk) want = val(root, start, (size_t)(rank * blk + i));
            break;
        case 8:
            for (int r = 0; r < size; r++)
                if (i >= b->displs[r] && i < b->displs[r] + b->counts[r]) want = val(r, start, (size_t)(i - b->displs[r]));
            break;
        case 9:
            for (int r = 0; r < size; r++)
                if (i >= b->displs[r] && i < b->displs[r] + b->counts[r])
                    want = val(r, start, (size_t)(rank * blk + i - b->displs[r]));
            break;
        }
        if (b->hrecv[i] != want) {
            if (failures++ < 10)
                fprintf(stderr, "FAIL rank %d %s start %d at %d: got %d want %ld\n", rank, names[kind], start, i,
                        b->hrecv[i], want);
            return;
        }
    }
}

static void free_bufs(bufs_t *b)
{
    test_mem_free(on_device, b->send);
    test_mem_free(on_device, b->recv);
    free(b->hsend);
    free(b->hrecv);
}

int main(int argc, char **argv)
{
    int starts = 200, one_gpu = 0;
    const char *mem = "host";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem = argv[++i];
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--starts") && i + 1 < argc) starts = atoi(argv[++i]);
    }
    on_device = !strcmp(mem, "device");
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    if (on_device && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("persistent_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    bufs_t b[kKinds];
    MPI_Request req[kKinds];
    for (int k = 0; k < kKinds; k++) init_request(k, &b[k], &req[k]);
    /* One at a time, started again and again; now and then another
     * collective of the communicator comes between two starts (a start is
     * set up ahead as if none did: the guess must be dropped). */
    for (int k = 0; k < kKinds; k++)
        for (int s = 0; s < starts; s++) {
            if (s % 5 == 1) {
                MPI_Allreduce(b[0].send, b[0].recv, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            } else if (s % 5 == 3) {
                MPI_Request r;
                MPI_Iallreduce(b[0].send, b[0].recv, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            prepare(k, &b[k], s);
            MPI_Start(&req[k]);
            MPI_Wait(&req[k], MPI_STATUS_IGNORE);
            verify(k, &b[k], s);
        }
    /* All at once, completed in reverse order by testing. */
    for (int round = 0; round < 3; round++) {
        int s = starts + round;
        for (int k = 0; k < kKinds; k++) prepare(k, &b[k], s);
        MPI_Startall(kKinds, req);
        for (int k = kKinds - 1; k >= 0; k--) {
            int done = 0;
            while (!done) MPI_Test(&req[k], &done, MPI_STATUS_IGNORE);
            verify(k, &b[k], s);
        }
    }
    /* A wait on an inactive persistent request returns at once. */
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int k = 1; k < kKinds; k++) MPI_Request_free(&req[k]);
    /* Freed while active: the operation still completes (the next
     * collective on the communicator needs it on every rank). Nothing says
     * when, so its buffers stay allocated until after MPI_Finalize. */
    prepare(0, &b[0], 7);
    MPI_Start(&req[0]);
    MPI_Request_free(&req[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Freed before any start. */
    MPI_Request unused;
    P(Allreduce)(b[0].send, b[0].recv, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &unused);
    MPI_Request_free(&unused);
    int total[2] = {0, 0}, mine[2] = {checks, failures};
    MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("persistent_check: %d checks, %d failed (%d ranks, %d starts each, %s buffers)\n", total[0], total[1],
               size, starts, on_device ? "device" : "host");
    MPI_Finalize();
    for (int k = 0; k < kKinds; k++) free_bufs(&b[k]);
    return total[1] ? 1 : 0;
}
#endif
