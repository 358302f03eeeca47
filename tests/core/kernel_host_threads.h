// Kernels on the host with every GPU thread a std::thread: __syncthreads a
// barrier of the thread's block, gpu_block_any through the block, fences
// and acquire loads as C++ atomics, and run_calls_in_order, which runs a
// sequence of calls on every rank in stream order. For the kernel tests
// whose code under test synchronises its blocks (kernel_host_shim.h's
// loop launch cannot). Definitions, not declarations: include in one file
// per test program, after kernel_host_shim.h and the kernels' headers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait()
    {
        std::unique_lock<std::mutex> lock(mu_);
        const uint64_t gen = gen_;
        if (++count_ == n_) {
            count_ = 0;
            gen_++;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen_ != gen; });
        }
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_, count_ = 0;
    uint64_t gen_ = 0;
};

// A rank's buffer or scratch: 64-byte aligned, as cudaMalloc's are at least.
struct HostBytes {
    char *p;
    size_t n;
    explicit HostBytes(size_t bytes) : p(static_cast<char *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))), n(bytes)
    {
    }
    ~HostBytes() { std::free(p); }
    HostBytes(const HostBytes &) = delete;
    HostBytes &operator=(const HostBytes &) = delete;
};

struct BlockSync {
    Barrier bar;
    std::atomic<int> any{0};
    explicit BlockSync(int threads) : bar(threads) {}
};
thread_local BlockSync *t_block;

} // namespace

void __syncthreads() { t_block->bar.wait(); }
int gpu_block_any(int predicate)
{
    if (predicate) t_block->any.store(1);
    __syncthreads();
    int r = t_block->any.load();
    __syncthreads();
    if (threadIdx.x == 0) t_block->any.store(0);
    __syncthreads();
    return r;
}
void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
uint64_t gpu_load_acquire_sys(const uint64_t *p)
{
    std::this_thread::yield(); // the waits spin; the threads that end them share two cores
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

namespace {

// Every GPU thread of `nranks` ranks (grid x block each) as a std::thread,
// running calls 0..ncalls-1 through `call(r, c)` (a kernel's code set up
// for rank r's call c), each rank's threads all done with call c before
// any starts c + 1 (stream order).
template <class Fn> void run_calls_in_order(int nranks, int ncalls, unsigned grid, unsigned block, Fn call)
{
    std::vector<std::unique_ptr<Barrier>> stream;
    std::vector<std::unique_ptr<BlockSync>> blocks;
    for (int r = 0; r < nranks; r++) stream.emplace_back(new Barrier((int)(grid * block)));
    for (int i = 0; i < nranks * (int)grid; i++) blocks.emplace_back(new BlockSync((int)block));
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; r++)
        for (unsigned b = 0; b < grid; b++)
            for (unsigned t = 0; t < block; t++)
                threads.emplace_back([&, r, b, t] {
                    gridDim.x = grid;
                    blockDim.x = block;
                    blockIdx.x = b;
                    threadIdx.x = t;
                    t_block = blocks[r * grid + b].get();
                    for (int c = 0; c < ncalls; c++) {
                        call(r, c);
                        stream[r]->wait();
                    }
                });
    for (auto &t : threads) t.join();
}

} // namespace
