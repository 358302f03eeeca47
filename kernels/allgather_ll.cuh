// Allgather for small messages by flag-in-data lines (ll_lines.cuh): every
// rank stores its block into every peer's LL area, then copies every peer's
// lines from its own memory into their blocks of the output.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

__device__ inline void allgather_ll(const PeerArgs &a)
{
    const size_t bytes = a.count, lines = ll_lines(bytes); // a block, in bytes
    const uint32_t flag = (uint32_t)a.epoch0;
    char *own = a.dst + a.rank * bytes;
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v = ll_read(a.src, bytes, i);
        for (int k = 1; k < a.nranks; k++) ll_send(ll_slot(a, (a.rank + k) % a.nranks, a.rank) + i, v, flag);
        if (own != a.src) ll_write(own, bytes, i, v); // in place it is there already
    }
    ll_receive_blocks(a, bytes);
}

} // namespace gpucoll
