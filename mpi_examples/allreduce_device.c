/* allreduce_device.c: the smallest complete program that sums a vector of
 * floats across all ranks with MPI_Allreduce on GPU memory.
 *
 *   mpicc allreduce_device.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart
 *   mpirun -n 4 ./a.out
 *
 * With coll/gpu installed, the device pointers go straight to MPI_Allreduce.
 * On a machine without a GPU it runs the same code on host buffers and says
 * so. Options: --host (use host buffers anyway), --require-gpu (exit 77, the
 * "skipped" code of test drivers, when there is no GPU), -n COUNT.
 * Exit status 0 when every element is right, 1 otherwise. */
#include <mpi.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t e_ = (call);                                                \
        if (e_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(e_));                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    int count = 1 << 20, force_host = 0, require_gpu = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host")) force_host = 1;
        else if (!strcmp(argv[i], "--require-gpu")) require_gpu = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) count = atoi(argv[++i]);
    }

    /* 1. Start MPI before touching the GPU (coll/gpu sets itself up in MPI_Init). */
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 2. One GPU per process: the n-th process on a node takes GPU n. */
    MPI_Comm node;
    int local_rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    int ngpus = 0;
    if (force_host || cudaGetDeviceCount(&ngpus) != cudaSuccess) ngpus = 0;
    /* every rank must take the same branch: use the GPU only if all have one */
    int use_gpu = ngpus > 0;
    MPI_Allreduce(MPI_IN_PLACE, &use_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!use_gpu && require_gpu) {
        if (rank == 0) printf("allreduce_device: no GPU, skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (use_gpu) CUDA_CHECK(cudaSetDevice(local_rank % ngpus));

    /* 3. Input: rank r holds x[i] = r + i % 7, so the sum over ranks is
     *    size*(i % 7) + size*(size-1)/2: small integers, exact in float. */
    size_t bytes = (size_t)count * sizeof(float);
    float *host = malloc(bytes);
    if (!host) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < count; i++) host[i] = (float)(rank + i % 7);

    float *send = host, *recv = NULL;
    if (use_gpu) {
        CUDA_CHECK(cudaMalloc((void **)&send, bytes));
        CUDA_CHECK(cudaMalloc((void **)&recv, bytes));
        CUDA_CHECK(cudaMemcpy(send, host, bytes, cudaMemcpyHostToDevice));
        /* make sure the copy has landed before MPI reads the buffer */
        CUDA_CHECK(cudaDeviceSynchronize());
    } else {
        recv = malloc(bytes);
        if (!recv) MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* 4. The call itself: device pointers, exactly as with host memory. */
    int rc = MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_Allreduce failed (%d)\n", rank, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* 5. Check every element (on the host). */
    if (use_gpu) CUDA_CHECK(cudaMemcpy(host, recv, bytes, cudaMemcpyDeviceToHost));
    else memcpy(host, recv, bytes);
    long wrong = 0;
    for (int i = 0; i < count; i++) {
        float want = (float)size * (i % 7) + (float)size * (size - 1) / 2;
        if (host[i] != want && wrong++ == 0)
            fprintf(stderr, "rank %d: x[%d] = %g, expected %g\n", rank, i, host[i], want);
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    int gpus_total = 0;
    int mine = use_gpu ? 1 : 0;
    MPI_Reduce(&mine, &gpus_total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce_device: %d ranks, %s, MPI_Allreduce of %d floats (%.1f MiB) fp32 sum: %s\n",
               size, use_gpu ? "device buffers (one GPU per rank)" : "host buffers (no GPU)",
               count, bytes / 1048576.0, wrong ? "WRONG" : "ok");
    if (use_gpu && rank == 0)
        printf("allreduce_device: %d GPUs visible on rank 0's node, %d ranks on GPUs\n", ngpus, gpus_total);

    if (use_gpu) {
        CUDA_CHECK(cudaFree(send));
        CUDA_CHECK(cudaFree(recv));
    } else {
        free(recv);
    }
    free(host);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
