// Notices of freed allocations, from the rank that exported them to the
// peers that map them.
//
// The driver keeps a freed allocation's memory alive while another process
// maps it, and nothing tells that process the owner freed it: left to the
// IPC cache's bounds, a loop of allocate / zero-copy call / free would hold
// up to the byte budget of dead buffers on the owner's GPU. So the owner,
// when it finds that allocations it exported are gone (ExportBook in
// ipc_cache.hpp), posts their buffer ids into a ring in its slot of each of
// its teams' shared memory (ShmRank::freed); a peer compares one counter per
// rank after each collective and closes what was posted. Pure (atomics in
// whatever memory holds the ring), so that it can be unit-tested.
#pragma once

#include <stdint.h>

#include <atomic>
#include <vector>

namespace gpucoll {

// More notices than this between two collectives of a peer make it close
// every mapping of the owner's (still correct; live ones are mapped again).
constexpr int kFreedRing = 64;

// Zeroed memory is an empty ring. Its own cache lines: written only when
// allocations are found freed, read after every collective.
struct alignas(128) FreedRing {
    std::atomic<uint64_t> count;   // notices posted (complete)
    std::atomic<uint64_t> started; // notices begun: one past count while an id is written
    std::atomic<uint64_t> ids[kFreedRing]; // notice n's buffer id at n % kFreedRing
};

// One writer per ring: the process's IPC cache posts under its lock.
inline void post_freed(FreedRing &r, uint64_t id)
{
    const uint64_t n = r.count.load(std::memory_order_relaxed);
    r.started.store(n + 1, std::memory_order_relaxed);
    // A reader that sees the new id sees `started` too, and so knows the
    // slot may hold a later notice than the one it meant to read.
    std::atomic_thread_fence(std::memory_order_release);
    r.ids[n % kFreedRing].store(id, std::memory_order_relaxed);
    r.count.store(n + 1, std::memory_order_release);
}

// Appends the ids of the notices after *seen to *ids and moves *seen past
// them. False (nothing appended) if some were overwritten before they could
// be read: the caller must then assume any of the owner's allocations may
// be gone.
inline bool read_freed(const FreedRing &r, uint64_t *seen, std::vector<uint64_t> *ids)
{
    const uint64_t n = r.count.load(std::memory_order_acquire);
    if (n == *seen) return true;
    const size_t had = ids->size();
    bool whole = n - *seen <= (uint64_t)kFreedRing;
    for (uint64_t i = *seen; whole && i < n; i++) ids->push_back(r.ids[i % kFreedRing].load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    // A writer that has begun notice seen + kFreedRing may have overwritten
    // notice seen's slot before the loop read it.
    if (r.started.load(std::memory_order_relaxed) - *seen > (uint64_t)kFreedRing) whole = false;
    if (!whole) ids->resize(had);
    *seen = n;
    return whole;
}

} // namespace gpucoll
