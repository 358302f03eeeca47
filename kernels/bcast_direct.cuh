// Zero-copy Bcast: every rank but the root reads the root's mapped buffer.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline void bcast_direct(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    if (a.rank != a.root) copy_elems(a.dst, a.peer_src[a.root], a.count, a.vector_ok);
    peer_barrier(a, 1, a.epoch0); // the root returns once everyone has its data
}

} // namespace gpucoll
