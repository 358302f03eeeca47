// Bcast for small messages by flag-in-data lines (ll_lines.cuh): the root
// stores its buffer into every peer's LL area and is done (without the host
// agreement, once each peer has acknowledged the LL call two before); the
// others copy the lines from their own memory into their buffer.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

__device__ inline void bcast_ll(const PeerArgs &a)
{
    const size_t bytes = a.count, lines = ll_lines(bytes);
    const uint32_t flag = (uint32_t)a.epoch0;
    if (a.rank == a.root) {
        const size_t items = (size_t)(a.nranks - 1) * lines;
        int acked = -1; // the peer this thread last found acknowledged: each is met in one run
        for (size_t t = ll_first(); t < items; t += ll_stride()) {
            int to = (a.root + 1 + (int)(t / lines)) % a.nranks;
            size_t i = t % lines;
            const uint64_t v = ll_read(a.src, bytes, i);
            if (to != acked && !ll_wait_acks(a, 1u << to)) return;
            acked = to;
            ll_send(ll_slot(a, to, a.root) + i, v, flag);
        }
        return;
    }
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v;
        if (!ll_receive(a, ll_slot(a, a.rank, a.root) + i, &v)) return;
        ll_write(a.dst, bytes, i, v);
    }
}

} // namespace gpucoll
