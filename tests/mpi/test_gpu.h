/* The GPU of an MPI test rank, shared by the test programs of this folder. */
#ifndef COLL_GPU_TEST_GPU_H
#define COLL_GPU_TEST_GPU_H

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
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

/* Test buffers on a GPU (on_device; `device` -1: the current one) or in host
 * memory, at least 16 bytes; abort on failure. put/get copy to and from them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static inline void *test_mem_alloc(int on_device, int device, size_t bytes)
{
    void *p = NULL;
    if (bytes < 16) bytes = 16;
    if (on_device) {
        int cur = 0;
        cudaGetDevice(&cur);
        if (device >= 0) cudaSetDevice(device);
        if (cudaMalloc(&p, bytes) != cudaSuccess) p = NULL;
        cudaSetDevice(cur);
    } else {
        p = malloc(bytes);
    }
    if (p == NULL) {
        fprintf(stderr, "allocating %zu bytes for a test buffer failed\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}
static inline void test_mem_free(int on_device, void *p)
{
    if (on_device) cudaFree(p);
    else free(p);
}
/* Whether the ranks run under coll_gpu_order none (mpirun --mca sets the
 * variable): the caller then promises buffers complete on the device before
 * each call, which a cudaMemcpy from pageable memory is not when it returns
 * (the DMA from its staging buffer may still be on the way). */
static inline int test_order_none(void)
{
    const char *o = getenv("OMPI_MCA_coll_gpu_order");
    return o && !strcmp(o, "none");
}
static inline void test_mem_put(int on_device, void *dst, const void *src, size_t bytes)
{
    if (on_device) {
        cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
        if (test_order_none()) cudaStreamSynchronize(0);
    } else {
        memcpy(dst, src, bytes);
    }
}
static inline void test_mem_get(int on_device, void *dst, const void *src, size_t bytes)
{
    if (on_device) cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    else memcpy(dst, src, bytes);
}

#endif
