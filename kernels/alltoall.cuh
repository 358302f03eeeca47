// Alltoall: every rank copies its outgoing blocks in (block q at q x chunk),
// one barrier, then reads block `rank` of every rank.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline bool alltoall_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    char *mine = step_area(a, a.rank, epoch);
    for (int q = 0; q < a.nranks; q++) copy_elems(mine + q * a.chunk, a.src + q * a.count + off, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    for (int p = 0; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks;
        copy_elems(a.dst + peer * a.count + off, (const char *)step_area(a, peer, epoch) + a.rank * a.chunk, n,
                   a.vector_ok, a.chunk);
    }
    return true;
}

} // namespace gpucoll
