// Zero-copy Allgather: every rank reads every peer's mapped input into its
// output. In place, the input is our own output block, which nobody writes.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline void allgather_direct(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    for (int p = 0; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks;
        if (a.peer_src[peer] != a.dst + peer * a.count)
            copy_elems(a.dst + peer * a.count, a.peer_src[peer], a.count, a.vector_ok);
    }
    peer_barrier(a, 1, a.epoch0);
}

} // namespace gpucoll
