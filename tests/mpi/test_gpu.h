/* The GPU of an MPI test rank, shared by the test programs of this folder. */
#ifndef COLL_GPU_TEST_GPU_H
#define COLL_GPU_TEST_GPU_H

#include <cuda_runtime.h>
#include <mpi.h>

/* Collective over MPI_COMM_WORLD. Makes current, and returns, the GPU of this
 * rank: rank i of a node takes GPU i % count, or every rank GPU 0 with
 * one_gpu. -1 where no GPU can be used (every rank of a node agrees).
 * *local_rank and *ngpus (if not NULL) receive the node-local rank and the
 * number of GPUs. */
static inline int test_select_gpu(int one_gpu, int *local_rank, int *ngpus)
{
    int local = 0, ndev = 0;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    if (local_rank) *local_rank = local;
    if (ngpus) *ngpus = ndev;
    if (ndev == 0) return -1;
    int dev = one_gpu ? 0 : local % ndev;
    cudaSetDevice(dev);
    return dev;
}

#endif
