// Zero-copy Allgather by stores: every rank writes its input into its block
// of every peer's mapped output. Same traffic as the pull version
// (allgather_direct.cuh); writes are posted, so a thread does not wait a
// link's round trip per load.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

__device__ inline void allgather_push(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    char *dsts[kMaxPeers];
    int nd = 0;
    for (int i = 0; i < a.nranks; i++) {
        int p = (a.rank + i) % a.nranks; // stagger so ranks do not all write one peer at once
        char *d = a.peer_dst[p] + a.rank * a.count;
        if (d != a.src) dsts[nd++] = d; // in place, our own block is already there
    }
    copy_elems_multi(dsts, nd, a.src, a.count, a.vector_ok);
    peer_barrier(a, 1, a.epoch0); // every peer's stores into our output are done
}

} // namespace gpucoll
