/* example_util.h: the few helpers cg_poisson.cu and horovod_style.c share.
 * Copy it along with them. Works from C and from CUDA C++.
 *
 *   - CUDA_CHECK / MPI_CHECK: stop the whole job with a clear message.
 *   - example_pick_gpu(): one GPU per process, or host memory without one.
 *   - ex_alloc / ex_free / ex_to_buf / ex_from_buf: the same code runs on
 *     device or host buffers. */
#ifndef EXAMPLE_UTIL_H
#define EXAMPLE_UTIL_H

#include <mpi.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t e_ = (call);                                                \
        if (e_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,       \
                    #call, cudaGetErrorString(e_));                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

/* MPI's default handler already aborts on errors; this names the call. */
#define MPI_CHECK(call)                                                         \
    do {                                                                        \
        int e_ = (call);                                                        \
        if (e_ != MPI_SUCCESS) {                                                \
            char s_[MPI_MAX_ERROR_STRING];                                      \
            int l_ = 0;                                                         \
            MPI_Error_string(e_, s_, &l_);                                      \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,       \
                    #call, s_);                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

/* Call after MPI_Init. Picks GPU (local rank % GPUs on the node) and returns
 * 1, or returns 0 for host buffers: when asked (force_host) or when some
 * rank has no GPU (all ranks must agree, the collectives have to match). */
static inline int example_pick_gpu(int force_host)
{
    int rank, local_rank, ngpus = 0;
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    MPI_CHECK(MPI_Comm_free(&node));
    if (force_host || cudaGetDeviceCount(&ngpus) != cudaSuccess) ngpus = 0;
    int use_gpu = ngpus > 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &use_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (use_gpu) CUDA_CHECK(cudaSetDevice(local_rank % ngpus));
    return use_gpu;
}

static inline void *ex_alloc(int gpu, size_t bytes)
{
    void *p = NULL;
    if (gpu) {
        CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    } else if (!(p = malloc(bytes ? bytes : 1))) {
        fprintf(stderr, "out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static inline void ex_free(int gpu, void *p)
{
    if (gpu) CUDA_CHECK(cudaFree(p));
    else free(p);
}

/* Host array -> buffer. Synchronizes: MPI may read the buffer right after. */
static inline void ex_to_buf(int gpu, void *dst, const void *host, size_t bytes)
{
    if (!gpu) {
        memcpy(dst, host, bytes);
        return;
    }
    CUDA_CHECK(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
}

static inline void ex_from_buf(int gpu, void *host, const void *src, size_t bytes)
{
    if (gpu) CUDA_CHECK(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
    else memcpy(host, src, bytes);
}

#endif
