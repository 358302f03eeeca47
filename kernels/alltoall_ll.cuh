// Alltoall for small messages by flag-in-data lines (ll_lines.cuh): every
// rank stores block p of its input into rank p's LL area, then copies every
// peer's lines from its own memory into their blocks of the output. Not in
// place (make_plan): there a block of the output may be written before the
// thread that sends the same block of the input has read it.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

__device__ inline void alltoall_ll(const PeerArgs &a)
{
    const size_t bytes = a.count, lines = ll_lines(bytes); // a block, in bytes
    const uint32_t flag = (uint32_t)a.epoch0;
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        for (int k = 1; k < a.nranks; k++) {
            int to = (a.rank + k) % a.nranks;
            ll_send(ll_slot(a, to, a.rank) + i, ll_read(a.src + to * bytes, bytes, i), flag);
        }
        ll_write(a.dst + a.rank * bytes, bytes, i, ll_read(a.src + a.rank * bytes, bytes, i));
    }
    ll_receive_blocks(a, bytes);
}

} // namespace gpucoll
