// Bcast: the root copies in, one barrier, the others read the root's copy.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline bool bcast_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    if (a.rank == a.root) copy_elems(step_area(a, a.rank, epoch), a.src + off, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    if (a.rank != a.root) copy_elems(a.dst + off, (const char *)step_area(a, a.root, epoch), n, a.vector_ok, a.chunk);
    return true;
}

} // namespace gpucoll
