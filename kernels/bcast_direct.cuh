// Zero-copy Bcast in two phases, so that the root's links are not the
// bottleneck: rank r first reads slice r of the root's buffer, then every
// rank reads the slices it lacks from the ranks that now hold them. The root
// sends about 1.25x the message (4 ranks) instead of (n-1)x.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

__device__ inline void bcast_direct(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    if (a.rank != a.root) {
        Range s = twoshot_slice<char>(a.count, a.rank, a.nranks);
        copy_elems(a.dst + s.begin, a.peer_src[a.root] + s.begin, s.end - s.begin, a.vector_ok);
    }
    // Block b pairs with block b: it reads what block b of the slice's owner wrote.
    if (!peer_barrier(a, 1, a.epoch0)) return;
    if (a.rank != a.root) {
        for (int p = 1; p < a.nranks; p++) {
            int owner = (a.rank + p) % a.nranks;
            Range s = twoshot_slice<char>(a.count, owner, a.nranks);
            const char *from = owner == a.root ? a.peer_src[a.root] : a.peer_dst[owner];
            copy_elems(a.dst + s.begin, from + s.begin, s.end - s.begin, a.vector_ok);
        }
    }
    peer_barrier(a, 2, a.epoch0); // nobody reuses its buffer while a peer still reads it
}

} // namespace gpucoll
