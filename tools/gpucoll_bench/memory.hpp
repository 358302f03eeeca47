// The benchmark's two buffers (send, recv): device memory, or host memory
// with --host. Host staging copies go through upload()/download().
#pragma once

#include <cstddef>

#include <mpi.h>

class Buffers {
public:
    Buffers(bool device, size_t bytes);   // both buffers get `bytes`
    ~Buffers();
    Buffers(const Buffers &) = delete;
    Buffers &operator=(const Buffers &) = delete;

    bool device() const { return device_; }
    void *send() const { return send_; }
    void *recv() const { return recv_; }
    size_t bytes() const { return bytes_; }

    void upload(void *dst, const void *host_src, size_t bytes) const;
    void download(void *host_dst, const void *src, size_t bytes) const;
    void fill_bytes(void *dst, int byte, size_t bytes) const;

private:
    bool device_;
    size_t bytes_;
    void *send_ = nullptr;
    void *recv_ = nullptr;
};

// --register: both buffers registered as coll/gpu windows of comm
// (coll_gpu_register, collective) for as long as this lives; declared after
// the Buffers so that it deregisters (collective) before they are freed.
// status(): MPI_SUCCESS, or the error of the registration (nothing held).
class Windows {
public:
    Windows(bool on, const Buffers &b, MPI_Comm comm);
    ~Windows();
    Windows(const Windows &) = delete;
    Windows &operator=(const Windows &) = delete;
    int status() const { return status_; }

private:
    MPI_Comm comm_;
    int send_ = -1, recv_ = -1, status_ = MPI_SUCCESS;
};

// Device-to-device copy rate of the current GPU in bytes/s (a copy of N bytes
// reads N and writes N in N / rate seconds), from cudaMemcpyAsync of `bytes`
// timed with events; 0 when the two buffers cannot be allocated.
double device_copy_rate(size_t bytes);
