// Reduce to a root: every rank copies in, one barrier, the root reduces.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

template <class T, class Op>
__device__ bool reduce_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    copy_elems(mine, reinterpret_cast<const T *>(a.src) + off, n, a.vector_ok);
    if (!peer_barrier(a, 0, epoch)) return false;
    if (a.rank != a.root) return true;
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch));
    reduce_elems<T, Op>(reinterpret_cast<T *>(a.dst) + off, srcs, a.nranks, n, a.vector_ok);
    return true;
}

} // namespace gpucoll
