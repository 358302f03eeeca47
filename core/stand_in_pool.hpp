// Device memory that stands in for user buffers the kernels cannot use
// where they are (host memory, another GPU) in queued calls: taken per call,
// given back at its end, kept for reuse up to a byte budget.
//
// Promises: any number of blocks may be taken at once (one per buffer of
// every outstanding request); idle blocks above `idle_budget` bytes are
// freed when given back, so memory taken for one call is returned (the
// largest first) unless it stays under the budget; sizes are rounded (powers
// of two below 1 MiB, whole MiB above) so that a slightly larger call reuses
// a block without doubling what a large call holds. Where device memory is
// exhausted, idle blocks are freed and the allocation tried again, then
// page-locked host memory mapped into the device is used (slower, but the
// call runs and its peers' kernels are not left waiting). Thread-safe.
// The allocator is a parameter so that the bookkeeping is tested without a GPU.
#pragma once

#include <stddef.h>

#include <list>
#include <mutex>

namespace gpucoll {

struct StandInAllocator {
    void *(*device_alloc)(size_t bytes, void *ctx); // nullptr on failure
    void *(*mapped_host_alloc)(size_t bytes, void *ctx);
    void (*release)(void *p, bool host, void *ctx);
    void *ctx;
};

class StandInPool {
public:
    struct Block {
        char *ptr;
        size_t bytes;
        bool host; // mapped host memory: device memory was exhausted
        bool busy;
    };
    StandInPool(StandInAllocator a, size_t idle_budget) : alloc_(a), idle_budget_(idle_budget) {}
    ~StandInPool() { release_all(); }
    StandInPool(const StandInPool &) = delete;
    StandInPool &operator=(const StandInPool &) = delete;

    // A block of at least `bytes`, or nullptr when no memory of either kind is left.
    Block *take(size_t bytes);
    void give_back(Block *b);
    // Frees every block (none may be busy: the team's calls are over).
    void release_all();

    static size_t rounded(size_t bytes);
    size_t idle_bytes() const;
    size_t held_bytes() const;
    size_t blocks() const;

private:
    Block *allocate_locked(size_t bytes);
    void free_idle_locked(size_t keep);
    StandInAllocator alloc_;
    size_t idle_budget_;
    std::list<Block> blocks_; // stable addresses: requests hold Block pointers
    mutable std::mutex mu_;
};

} // namespace gpucoll
