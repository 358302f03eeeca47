// Allgather: every rank copies its block in, one barrier, every rank reads
// every block. Moves bytes.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline bool allgather_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    char *mine = step_area(a, a.rank, epoch);
    copy_elems(mine, a.src + off, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    for (int p = 0; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks;
        copy_elems(a.dst + peer * a.count + off, (const char *)step_area(a, peer, epoch), n, a.vector_ok, a.chunk);
    }
    return true;
}

} // namespace gpucoll
