// The out-of-band allgather of the core tests whose ranks are forked
// processes: generation-counted and double-buffered in memory the parent
// mapped shared (MAP_SHARED | MAP_ANONYMOUS) before forking, so that a fast
// rank's next round cannot overwrite what a slow one has yet to read.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

struct ForkedOob {
    static constexpr int kMaxRanks = 8;
    static constexpr size_t kMaxBytes = 512; // per rank and round
    std::atomic<int> gen[kMaxRanks];
    char data[2][kMaxRanks][kMaxBytes];
};

// One rank's view: pass it as the oob's ctx.
struct ForkedRank {
    ForkedOob *oob;
    int rank, size, round;
};

inline int forked_allgather(const void *in, void *out, size_t bytes, void *ctx)
{
    ForkedRank *r = static_cast<ForkedRank *>(ctx);
    if (bytes > ForkedOob::kMaxBytes || r->size > ForkedOob::kMaxRanks) return -1;
    int k = ++r->round;
    memcpy(r->oob->data[k & 1][r->rank], in, bytes);
    r->oob->gen[r->rank].store(k, std::memory_order_release);
    for (int p = 0; p < r->size; p++)
        while (r->oob->gen[p].load(std::memory_order_acquire) < k) usleep(100);
    for (int p = 0; p < r->size; p++) memcpy(static_cast<char *>(out) + p * bytes, r->oob->data[k & 1][p], bytes);
    return 0;
}
