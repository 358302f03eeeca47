// Zero-copy Bcast with forwarding by the receivers: the message is cut into
// one slice per receiver (the n-1 ranks other than the root), receiver j
// reads slice j from the root once and stores it into its own buffer and
// every other receiver's. The root sends every byte once, every receiver
// takes in the whole message once, and the root's links and the receivers'
// links are busy at the same time without rounds: each thread's loop
// overlaps its reads from the root with its stores to the receivers.
#pragma once
#include "bcast_direct.cuh"

namespace gpucoll {

// Stores slice s of the root's buffer into every receiver's buffer.
__device__ inline void bcast_store_slice(const PeerArgs &a, Range s)
{
    char *dsts[kMaxPeers];
    int nd = 0;
    for (int i = 0; i < a.nranks; i++) {
        int r = (a.rank + i) % a.nranks; // ourselves first, then the next ranks
        if (r != a.root) dsts[nd++] = a.peer_dst[r] + s.begin;
    }
    copy_elems_multi(dsts, nd, a.peer_src[a.root] + s.begin, s.end - s.begin, a.vector_ok);
}

__device__ inline void bcast_push(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    if (a.rank != a.root)
        bcast_store_slice(a, twoshot_slice<char>(a.count, bcast_receiver(a, a.rank), a.nranks - 1));
    peer_barrier(a, 2, a.epoch0); // writes into every buffer are done; nobody reads the root's any more
}

} // namespace gpucoll
