// Reduce to a root: the one-shot allreduce step in which only the root
// reduces (every rank copies in, one barrier, the root reads everyone).
#pragma once
#include "allreduce_oneshot.cuh"

namespace gpucoll {

template <class T, class Op>
__device__ bool reduce_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    return allreduce_oneshot_step<T, Op, true>(a, off, n, epoch);
}

} // namespace gpucoll
