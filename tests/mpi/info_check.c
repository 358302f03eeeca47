/* Info coll_gpu_path=staged on some ranks only (MPI lets each process pass
 * its own info values): the communicator's collectives must neither hang
 * nor go wrong, in any mode.
 *
 *   info_check [--one-gpu]
 *
 * Odd ranks dup MPI_COMM_WORLD with the info, even ranks without; then on
 * device buffers: MPI_Barrier (where the GPU path is set up ahead), a
 * blocking, a nonblocking and a persistent MPI_Allreduce, an enqueued one
 * (coll_gpu_ext.h), each twice, results checked. Exit 77 without a GPU. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu_ext.h"
#include "test_forms.h"
#include "test_gpu.h"

enum { kN = 1 << 15 };
static int rank, size, failures, checks;
static float *d_in, *d_out, *h;

static void fill(int round)
{
    for (int i = 0; i < kN; i++) h[i] = (float)(rank + round + i % 5);
    cudaMemcpy(d_in, h, kN * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0, kN * sizeof(float));
}

static void check(int round, int rc, const char *what)
{
    cudaMemcpy(h, d_out, kN * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < kN; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)(r + round + i % 5);
        bad += h[i] != want;
    }
    checks++;
    if (bad || rc != MPI_SUCCESS) {
        failures++;
        printf("FAIL rank %d: %s round %d: rc %d, %d wrong\n", rank, what, round, rc, bad);
    }
}

int main(int argc, char **argv)
{
    int one_gpu = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    if (test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("info_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    cudaMalloc((void **)&d_in, kN * sizeof(float));
    cudaMalloc((void **)&d_out, kN * sizeof(float));
    h = malloc(kN * sizeof(float));
    MPI_Info info;
    MPI_Info_create(&info);
    if (rank % 2) MPI_Info_set(info, "coll_gpu_path", "staged");
    MPI_Comm comm;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    MPI_Barrier(comm);
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    int have_stream = coll_gpu_stream_init(comm) == MPI_SUCCESS;
    for (int round = 0; round < 2; round++) {
        fill(round);
        check(round, MPI_Allreduce(d_in, d_out, kN, MPI_FLOAT, MPI_SUM, comm), "blocking");
        MPI_Request r;
        fill(round);
        int rc = MPI_Iallreduce(d_in, d_out, kN, MPI_FLOAT, MPI_SUM, comm, &r);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        check(round, rc, "nonblocking");
#ifdef P
        fill(round);
        P(Allreduce)(d_in, d_out, kN, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL, &r);
        rc = MPI_Start(&r);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
        check(round, rc, "persistent");
#endif
        if (have_stream) {
            fill(round);
            rc = coll_gpu_allreduce_enqueue(d_in, d_out, kN, MPI_FLOAT, MPI_SUM, comm, stream);
            cudaStreamSynchronize(stream);
            check(round, rc, "enqueued");
        }
    }
    MPI_Comm_free(&comm);
    int ret = test_tally(failures, checks, "info_check (coll_gpu_path=staged on odd ranks)");
    MPI_Finalize();
    return ret;
}
