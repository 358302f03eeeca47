/* A rank waiting inside a device-buffer collective must keep MPI's progress
 * going: a peer may first need a message of ours that only moves when this
 * process progresses (MPI's progress rule).
 *
 *   progress_check [--one-gpu]
 *
 * Rank 0 posts an MPI_Isend of 8 MiB of host memory to rank 1 and enters a
 * device-buffer collective; rank 1 first receives that message, then enters
 * the same collective. Under a rendezvous protocol whose data the sender
 * pushes (e.g. btl_vader_single_copy_mechanism=none), rank 1's receive
 * completes only if rank 0 progresses while it waits for rank 1 in the
 * collective. Allreduce, bcast and allgather, each checked exactly, each
 * then the other way round (rank 1 sends). Needs 2+ ranks and a GPU (77
 * otherwise); ranks past 1 just join the collectives. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_gpu.h"

enum { kMsgBytes = 8 << 20, kCount = 4096 };

static int rank, size, failures;

static void check(const char *what, const int *got, const int *want, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d FAIL %s at %d: got %d want %d\n", rank, what, i, got[i], want[i]);
            failures++;
            return;
        }
}

/* One collective on device buffers after the message from `from` to `to`. */
static void round_trip(int kind, int from, int to, char *msg, int *dsend, int *drecv, int *host, int *want)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == from) MPI_Isend(msg, kMsgBytes, MPI_BYTE, to, 7, MPI_COMM_WORLD, &req);
    if (rank == to) MPI_Recv(msg, kMsgBytes, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < kCount; i++) host[i] = rank * 1000 + i;
    cudaMemcpy(dsend, host, kCount * sizeof(int), cudaMemcpyHostToDevice);
    const char *what = kind == 0 ? "allreduce" : kind == 1 ? "bcast" : "allgather";
    int n = kCount;
    if (kind == 0) {
        MPI_Allreduce(dsend, drecv, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < kCount; i++) want[i] = 1000 * size * (size - 1) / 2 + size * i;
    } else if (kind == 1) {
        MPI_Bcast(dsend, kCount, MPI_INT, from, MPI_COMM_WORLD);
        cudaMemcpy(drecv, dsend, kCount * sizeof(int), cudaMemcpyDeviceToDevice);
        for (int i = 0; i < kCount; i++) want[i] = from * 1000 + i;
    } else {
        int blk = kCount / size;
        MPI_Allgather(dsend, blk, MPI_INT, drecv, blk, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < blk; i++) want[r * blk + i] = r * 1000 + i;
        n = blk * size;
    }
    cudaMemcpy(host, drecv, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost);
    check(what, host, want, n);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == to)
        for (int i = 0; i < kMsgBytes; i += 4099)
            if (msg[i] != (char)(from + i)) {
                fprintf(stderr, "rank %d FAIL message from %d at %d\n", rank, from, i);
                failures++;
                break;
            }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int one_gpu = argc > 1 && argv[1][0] == '-';
    if (size < 2 || test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("progress_check: needs 2 ranks and a GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    char *msg = malloc(kMsgBytes);
    int *host = malloc(kCount * sizeof(int)), *want = malloc(kCount * sizeof(int)), *dsend, *drecv;
    cudaMalloc((void **)&dsend, kCount * sizeof(int));
    cudaMalloc((void **)&drecv, kCount * sizeof(int));
    int calls = 0;
    for (int kind = 0; kind < 3; kind++)
        for (int way = 0; way < 2; way++) {
            int from = way, to = 1 - way;
            for (int i = 0; i < kMsgBytes; i++) msg[i] = rank == from ? (char)(from + i) : 0;
            round_trip(kind, from, to, msg, dsend, drecv, host, want);
            calls++;
        }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("progress_check: %d collectives after a pending message, %d failed\n", calls, total);
    cudaFree(dsend);
    cudaFree(drecv);
    free(msg);
    free(host);
    free(want);
    MPI_Finalize();
    return total ? 1 : 0;
}
