// Error checks used everywhere in gpucoll-bench: any failing CUDA, MPI or NCCL
// call ends the whole job with a message naming the call, since a benchmark
// that goes on after a failed collective would only print wrong numbers.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

[[noreturn]] void bench_fatal(const char *file, int line, const char *call, const char *msg);

#define CUDA_CHECK(call)                                                       \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess)                                                 \
            bench_fatal(__FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
    } while (0)

// Communicators use MPI_ERRORS_RETURN (set in main), so errors reach here.
#define MPI_CHECK(call)                                                        \
    do {                                                                       \
        int e_ = (call);                                                       \
        if (e_ != MPI_SUCCESS) {                                               \
            char s_[MPI_MAX_ERROR_STRING];                                     \
            int l_ = 0;                                                        \
            MPI_Error_string(e_, s_, &l_);                                     \
            bench_fatal(__FILE__, __LINE__, #call, s_);                        \
        }                                                                      \
    } while (0)
