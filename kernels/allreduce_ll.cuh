// Allreduce for small messages by flag-in-data lines (ll_lines.cuh): every
// rank stores its input into every peer's LL area, then reduces all ranks'
// lines from its own memory. One trip over the links; (n-1) x size stored.
#pragma once
#include "ll_lines.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void allreduce_ll(const PeerArgs &a)
{
    const size_t bytes = a.count * sizeof(T), lines = ll_lines(bytes);
    const uint32_t flag = (uint32_t)a.epoch0;
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v = ll_read(a.src, bytes, i);
        for (int k = 1; k < a.nranks; k++) ll_send(ll_slot(a, (a.rank + k) % a.nranks, a.rank) + i, v, flag);
    }
    for (size_t i = ll_first(); i < lines; i += ll_stride()) {
        uint64_t v;
        if (!ll_reduce_line<T, Op>(a, a.src, bytes, i, &v)) return;
        ll_write(a.dst, bytes, i, v);
    }
}

} // namespace gpucoll
