#include "stand_in_pool.hpp"

#include <algorithm>

namespace gpucoll {

size_t StandInPool::rounded(size_t bytes)
{
    constexpr size_t kMiB = 1024 * 1024;
    if (bytes >= kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
    size_t want = 4096;
    while (want < bytes) want *= 2;
    return want;
}

StandInPool::Block *StandInPool::take(size_t bytes)
{
    std::lock_guard<std::mutex> lock(mu_);
    Block *fit = nullptr;
    for (Block &b : blocks_)
        if (!b.busy && b.bytes >= bytes && (!fit || b.bytes < fit->bytes)) fit = &b;
    // A block much larger than the call would hold memory a later, larger
    // call needs; a fresh one is cheaper than that.
    if (fit && fit->bytes <= 2 * rounded(bytes)) {
        fit->busy = true;
        return fit;
    }
    return allocate_locked(bytes);
}

StandInPool::Block *StandInPool::allocate_locked(size_t bytes)
{
    const size_t want = rounded(bytes);
    void *p = alloc_.device_alloc(want, alloc_.ctx);
    if (!p) { // the GPU is full: what we keep idle first
        free_idle_locked(0);
        p = alloc_.device_alloc(want, alloc_.ctx);
    }
    bool host = false;
    if (!p && (p = alloc_.mapped_host_alloc(want, alloc_.ctx))) host = true;
    if (!p) return nullptr;
    blocks_.push_back(Block{static_cast<char *>(p), want, host, true});
    return &blocks_.back();
}

void StandInPool::give_back(Block *b)
{
    if (!b) return;
    std::lock_guard<std::mutex> lock(mu_);
    b->busy = false;
    // Host stand-ins are a last resort: never kept.
    if (b->host) {
        alloc_.release(b->ptr, true, alloc_.ctx);
        blocks_.remove_if([b](const Block &x) { return &x == b; });
    }
    free_idle_locked(idle_budget_);
}

// Frees idle blocks, the largest first, until at most `keep` bytes stay idle.
void StandInPool::free_idle_locked(size_t keep)
{
    for (;;) {
        size_t idle = 0;
        auto largest = blocks_.end();
        for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
            if (it->busy) continue;
            idle += it->bytes;
            if (largest == blocks_.end() || it->bytes > largest->bytes) largest = it;
        }
        if (idle <= keep || largest == blocks_.end()) return;
        alloc_.release(largest->ptr, largest->host, alloc_.ctx);
        blocks_.erase(largest);
    }
}

void StandInPool::release_all()
{
    std::lock_guard<std::mutex> lock(mu_);
    for (Block &b : blocks_) alloc_.release(b.ptr, b.host, alloc_.ctx);
    blocks_.clear();
}

size_t StandInPool::idle_bytes() const
{
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Block &b : blocks_) n += b.busy ? 0 : b.bytes;
    return n;
}

size_t StandInPool::held_bytes() const
{
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Block &b : blocks_) n += b.bytes;
    return n;
}

size_t StandInPool::blocks() const
{
    std::lock_guard<std::mutex> lock(mu_);
    return blocks_.size();
}

} // namespace gpucoll
