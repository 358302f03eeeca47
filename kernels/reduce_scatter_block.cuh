// Reduce_scatter_block: every rank copies the blocks of this step in (block q
// at q x chunk), one barrier, then reduces block `rank` from every rank.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

template <class T, class Op>
__device__ bool reduce_scatter_block_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    const T *src = reinterpret_cast<const T *>(a.src);
    for (int q = 0; q < a.nranks; q++) copy_elems(mine + q * a.chunk, src + q * a.count + off, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch)) + a.rank * a.chunk;
    reduce_elems<T, Op>(reinterpret_cast<T *>(a.dst) + off, srcs, a.nranks, n, a.vector_ok, nullptr, a.chunk);
    return true;
}

} // namespace gpucoll
