// Reduce_scatter_block for small messages by flag-in-data lines
// (ll_lines.cuh): every rank stores block p of its input into rank p's LL
// area, then reduces its own block's lines from its own memory.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void reduce_scatter_block_ll(const PeerArgs &a)
{
    const size_t bytes = a.count * sizeof(T), lines = ll_lines(bytes);
    const uint32_t flag = (uint32_t)a.epoch0;
    // In place, our output is block 0 of the input: the thread that writes
    // line i of it has read line i of every block first (ll_lines.cuh).
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        for (int k = 1; k < a.nranks; k++) {
            int p = (a.rank + k) % a.nranks;
            ll_send(ll_slot(a, p, a.rank) + i, ll_read(a.src + p * bytes, bytes, i), flag);
        }
    }
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v;
        if (!ll_reduce_line<T, Op>(a, a.src + a.rank * bytes, bytes, i, &v)) return;
        ll_write(a.dst, bytes, i, v);
    }
}

} // namespace gpucoll
