// Bcast for small messages by flag-in-data lines (ll_lines.cuh): the root
// stores its buffer into every peer's LL area and is done; the others copy
// the lines from their own memory into their buffer. Without the host
// agreement each rank also waits until the peers it did not hear from have
// started the call (ll_wait_started).
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

__device__ inline void bcast_ll(const PeerArgs &a)
{
    const size_t bytes = a.count, lines = ll_lines(bytes);
    const uint32_t flag = (uint32_t)a.epoch0;
    if (a.rank == a.root) {
        const size_t items = (size_t)(a.nranks - 1) * lines;
        for (size_t t = ll_first(); t < items; t += ll_stride()) {
            int to = (a.root + 1 + (int)(t / lines)) % a.nranks;
            size_t i = t % lines;
            ll_send(ll_slot(a, to, a.root) + i, ll_read(a.src, bytes, i), flag);
        }
        ll_wait_started(a, ll_peers(a)); // it heard from nobody
        return;
    }
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v;
        if (!ll_receive(a, ll_slot(a, a.rank, a.root) + i, &v)) return;
        ll_write(a.dst, bytes, i, v);
    }
    ll_wait_started(a, ll_peers(a) & ~(1u << a.root)); // it heard from the root only
}

} // namespace gpucoll
