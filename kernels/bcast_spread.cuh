// Zero-copy Bcast where every rank of the team shares one GPU (MPS). There
// are no links to spare, only the one HBM, and each rank's kernel holds its
// share of the SMs (co_resident_blocks): bcast_push would leave the root's
// share idle. So the root copies too: the message is cut into one slice per
// rank, and rank r reads slice r from the root's buffer and stores it into
// every receiver's buffer. Every rank moves the same bytes.
#pragma once
#include "bcast_push.cuh"

namespace gpucoll {

__device__ inline void bcast_spread(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    bcast_store_slice(a, twoshot_slice<char>(a.count, a.rank, a.nranks));
    peer_barrier(a, 2, a.epoch0); // writes into every buffer are done; nobody reads the root's any more
}

} // namespace gpucoll
