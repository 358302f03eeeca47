// Reduce to a root for small messages by flag-in-data lines (ll_lines.cuh):
// every other rank stores its input into the root's LL area and is done
// (without the host agreement, once every peer has started the call:
// ll_wait_started); the root reduces all ranks' lines from its own memory.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void reduce_ll(const PeerArgs &a)
{
    const size_t bytes = a.count * sizeof(T), lines = ll_lines(bytes);
    if (a.rank != a.root) {
        const uint32_t flag = (uint32_t)a.epoch0;
        for (size_t i = ll_first(); i < lines; i += ll_stride())
            ll_send(ll_slot(a, a.root, a.rank) + i, ll_read(a.src, bytes, i), flag);
        ll_wait_started(a, ll_peers(a)); // it heard from nobody
        return;
    }
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v;
        if (!ll_reduce_line<T, Op>(a, a.src, bytes, i, &v)) return;
        ll_write(a.dst, bytes, i, v);
    }
}

} // namespace gpucoll
