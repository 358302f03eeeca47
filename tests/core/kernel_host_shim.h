// Lets kernels/*.cuh compile as plain host C++, so that the index math and
// the element conversions the kernels really use can run in cpu tests:
// __device__ is dropped, gridDim/blockIdx/blockDim/threadIdx are host
// variables a test sets, and loops over blocks and threads stand in for the
// launch (valid wherever the code under test has no __syncthreads()).
//
// Include this before any kernels/ header. It keeps common/gpu_port.h out
// (its include guard), hence the CUDA/HIP headers. The device-only helpers
// that gpu_port.h would give (barrier flags, timer, fp16 intrinsics) are
// declared and never defined: the headers compile, but a test that reached
// one would fail to link instead of quietly testing a host stand-in.
#pragma once

#if defined(GPUCOLL_GPU_PORT_H)
#error "kernel_host_shim.h must come before gpu_port.h and kernels/ headers"
#endif
#define GPUCOLL_GPU_PORT_H 1

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define __device__
#define __host__
#define __global__
#define __shared__
#define __forceinline__ inline
// Empty: libstdc++ spells __attribute__((__noinline__)) itself, which an
// attribute here would break (inlining or not changes nothing on the host).
#define __noinline__
#define GPU_GRID_CONSTANT

struct kernel_host_dim3 {
    unsigned x = 1, y = 1, z = 1;
};
// Per host thread, so that a test may run several "GPUs" at once.
inline thread_local kernel_host_dim3 gridDim, blockIdx, blockDim, threadIdx;

struct uint4 {
    unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

void __syncthreads();
int gpu_block_any(int predicate);
void __threadfence_system();
void __threadfence();
int atomicExch(int *address, int value);
int atomicCAS(int *address, int compare, int value);
unsigned atomicAdd(unsigned *address, unsigned value);
unsigned long long atomicAdd(unsigned long long *address, unsigned long long value);
int atomicAdd(int *address, int value);
int atomicSub(int *address, int value);
uint64_t gpu_global_timer_ns();
void gpu_store_release_sys(uint64_t *p, uint64_t v);
uint64_t gpu_load_acquire_sys(const uint64_t *p);
void gpu_store_relaxed_sys(uint64_t *p, uint64_t v);
uint64_t gpu_load_relaxed_sys(const uint64_t *p);
void gpu_store_line(uint4 *p, uint4 v);
uint4 gpu_load_line(const uint4 *p);
float gpu_half_bits_to_float(uint16_t bits);
uint16_t gpu_float_to_half_bits(float f);

// Runs `body` once per (block, thread) of a grid x block launch, in order.
template <class F> void kernel_host_launch(unsigned grid, unsigned block, F &&body)
{
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        for (unsigned t = 0; t < block; t++) {
            threadIdx.x = t;
            body();
        }
    }
    blockIdx.x = threadIdx.x = 0;
}
