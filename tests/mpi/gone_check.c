/* A rank killed mid-collective: the survivors get an error in bounded time
 * instead of waiting for ever, and leave no kernel spinning on the GPU.
 *
 *   gone_check --mode nonblocking|blocking|enqueued [--one-gpu]
 *
 * Run under `mpirun --enable-recovery` (Open MPI 4.1: the job is not torn
 * down when a rank dies). Every rank sets the GPU path of a dup up with a
 * correct blocking device allreduce and one correct call of the mode; then
 * the last rank SIGKILLs itself while the
 * others are in a collective on the dup: an MPI_Iallreduce whose kernel
 * waits on the GPU (nonblocking), a blocking MPI_Allreduce (the host's
 * agreement waits), or an enqueued allreduce (the kernel waits on the
 * caller's stream). Each survivor then checks that the call failed, that its
 * GPU still works (a kernel and a synchronisation), prints "survivor ok",
 * and leaves with _exit(0): MPI_Finalize cannot complete with a rank gone.
 * The test's pass pattern counts the survivors. Exit 77 without a GPU. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_gpu_ext.h"
#include "test_gpu.h"

enum { kN = 1 << 18 };

static int collective(const char *mode, float *d, MPI_Comm comm, cudaStream_t stream)
{
    if (!strcmp(mode, "blocking")) return MPI_Allreduce(MPI_IN_PLACE, d, kN, MPI_FLOAT, MPI_SUM, comm);
    if (!strcmp(mode, "enqueued")) {
        int rc = coll_gpu_allreduce_enqueue(MPI_IN_PLACE, d, kN, MPI_FLOAT, MPI_SUM, comm, stream);
        if (rc != MPI_SUCCESS) return rc;
        cudaError_t e = cudaStreamSynchronize(stream);
        return e != cudaSuccess ? MPI_ERR_OTHER : coll_gpu_stream_status(comm);
    }
    MPI_Request r;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, d, kN, MPI_FLOAT, MPI_SUM, comm, &r);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    const char *mode = "nonblocking";
    int one_gpu = 0, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
    }
    if (test_select_gpu(one_gpu, NULL, NULL) < 0 || size < 2) {
        if (rank == 0) printf("gone_check: needs a GPU and 2 ranks: skipped\n");
        MPI_Finalize();
        return 77;
    }
    float *d;
    cudaStream_t stream;
    cudaMalloc((void **)&d, kN * sizeof(float));
    cudaMemset(d, 0, kN * sizeof(float));
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* Open MPI 4.1 reports a failed collective request's error on MPI_COMM_WORLD. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!strcmp(mode, "enqueued") && coll_gpu_stream_init(comm) != MPI_SUCCESS) {
        if (rank == 0) printf("gone_check: no stream-ordered calls here: skipped\n");
        MPI_Finalize();
        return 77;
    }
    /* A blocking call sets the communicator's GPU path up (nonblocking calls
     * take the GPU only after one), then one correct call of the mode. */
    int rc = MPI_Allreduce(MPI_IN_PLACE, d, kN, MPI_FLOAT, MPI_SUM, comm);
    if (rc == MPI_SUCCESS) rc = collective(mode, d, comm, stream);
    if (rc != MPI_SUCCESS) printf("FAIL rank %d: the first, correct calls failed (%d)\n", rank, rc);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        usleep(500 * 1000); /* the others are inside the collective by now */
        kill(getpid(), SIGKILL);
    }
    rc = collective(mode, d, comm, stream);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    printf("rank %d: %s collective with a rank gone: rc %d (%s)\n", rank, mode, rc, msg);
    /* A context that still runs kernels and synchronises: nothing of ours spins. */
    cudaError_t e = cudaMemset(d, 0, kN * sizeof(float));
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (rc != MPI_SUCCESS && e == cudaSuccess) printf("survivor ok: rank %d\n", rank);
    else printf("FAIL rank %d: rc %d, GPU %s\n", rank, rc, cudaGetErrorString(e));
    fflush(stdout);
    _exit(0);
}
