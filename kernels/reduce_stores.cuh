// Reduce to a root through scratch by stores: the other ranks store their
// chunk into their area of the root's scratch, one barrier, the root reduces
// those areas with its own input. The links carry stores, and the root reads
// only its own memory, where the one-shot reduce's root (kernels/reduce.cuh)
// waits a link's round trip per load from a peer's scratch.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

// The root's half for `epoch` holds an area for each other rank, in order
// after the root (Areas::PerOtherRank): at 2 ranks the other rank's steps
// fill the whole half, half as many steps as with an area for the root too.
__device__ inline size_t stores_area(const PeerArgs &a, int r)
{
    return (size_t)((r - a.root - 1 + a.nranks) % a.nranks);
}

// A rank stores step k only after the barrier of step k - 1, which the root
// reaches after it has read step k - 2, the last to use this half.
template <class T, class Op>
__device__ bool reduce_stores_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *areas = reinterpret_cast<T *>(step_area(a, a.root, epoch));
    const T *src = reinterpret_cast<const T *>(a.src) + off;
    if (a.rank != a.root) copy_elems(areas + stores_area(a, a.rank) * a.chunk, src, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    if (a.rank != a.root) return true;
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++)
        srcs[j] = j == a.root ? const_cast<T *>(src) : areas + stores_area(a, j) * a.chunk;
    // In place, the root's output is its input: each element is read before it is written.
    reduce_elems<T, Op>(reinterpret_cast<T *>(a.dst) + off, srcs, a.nranks, n, a.vector_ok, nullptr, a.chunk);
    return true;
}

} // namespace gpucoll
