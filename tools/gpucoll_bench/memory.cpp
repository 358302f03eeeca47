#include "memory.hpp"

#include <cstdlib>
#include <cstring>

#include "check.hpp"
#include "coll_gpu_ext.h"

static void *host_alloc(size_t bytes)
{
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p) bench_fatal(__FILE__, __LINE__, "malloc", "out of host memory");
    return p;
}

Buffers::Buffers(bool device, size_t bytes) : device_(device), bytes_(bytes)
{
    if (device_) {
        CUDA_CHECK(cudaMalloc(&send_, bytes ? bytes : 1));
        CUDA_CHECK(cudaMalloc(&recv_, bytes ? bytes : 1));
    } else {
        send_ = host_alloc(bytes);
        recv_ = host_alloc(bytes);
    }
}

Buffers::~Buffers()
{
    if (device_) {
        cudaFree(send_);
        cudaFree(recv_);
    } else {
        std::free(send_);
        std::free(recv_);
    }
}

Windows::Windows(bool on, const Buffers &b, MPI_Comm comm) : comm_(comm)
{
    if (!on || !b.device()) return;
    status_ = coll_gpu_register(comm, b.send(), b.bytes(), &send_);
    if (status_ == MPI_SUCCESS) status_ = coll_gpu_register(comm, b.recv(), b.bytes(), &recv_);
}

Windows::~Windows()
{
    if (recv_ >= 0) coll_gpu_deregister(comm_, recv_);
    if (send_ >= 0) coll_gpu_deregister(comm_, send_);
}

void Buffers::upload(void *dst, const void *host_src, size_t bytes) const
{
    if (device_) {
        CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
        // A pageable H2D cudaMemcpy may return before the DMA lands; the
        // collective that reads it may run on another stream.
        CUDA_CHECK(cudaDeviceSynchronize());
    } else {
        std::memcpy(dst, host_src, bytes);
    }
}

void Buffers::download(void *host_dst, const void *src, size_t bytes) const
{
    if (device_) CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
    else std::memcpy(host_dst, src, bytes);
}

void Buffers::fill_bytes(void *dst, int byte, size_t bytes) const
{
    if (device_) {
        CUDA_CHECK(cudaMemset(dst, byte, bytes));
        CUDA_CHECK(cudaDeviceSynchronize());   // cudaMemset is asynchronous
    } else {
        std::memset(dst, byte, bytes);
    }
}

double device_copy_rate(size_t bytes)
{
    void *src = nullptr, *dst = nullptr;
    if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
        cudaFree(src);
        cudaFree(dst);
        cudaGetLastError();   // the bound is optional: no sticky error for later calls
        return 0;
    }
    const int warmup = 3, timed = 10;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, s));   // pages are backed before the timing
    for (int i = 0; i < warmup; i++) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CUDA_CHECK(cudaEventRecord(t0, s));
    for (int i = 0; i < timed; i++) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CUDA_CHECK(cudaEventRecord(t1, s));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(dst));
    return ms > 0 ? timed * (double)bytes / (ms * 1e-3) : 0;
}
