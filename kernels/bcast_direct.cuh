// Zero-copy Bcast, pipelined in two phases so that neither the root's links
// nor the sequence of phases is the bottleneck. The message is cut into one
// slice per receiver (the n-1 ranks other than the root), so the root sends
// every byte once; receiver j reads slice j from the root and the other
// slices from the receivers that hold them. Each slice is cut into rounds:
// in round k a block reads piece k of its own slice from the root and piece
// k-1 of every other slice from its receiver, so the root's links and the
// receivers' links carry data at the same time.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

// Receiver index of rank r (0..n-2); the root has none.
__device__ inline int bcast_receiver(const PeerArgs &a, int r)
{
    return (r - a.root - 1 + a.nranks) % a.nranks;
}

__device__ inline void bcast_direct(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    const int receivers = a.nranks - 1;
    const int me = bcast_receiver(a, a.rank);
    const int rounds = pipeline_rounds(twoshot_slice<char>(a.count, 0, receivers).end);
    if (a.rank != a.root) {
        Range mine = twoshot_slice<char>(a.count, me, receivers);
        for (int k = 0; k <= rounds; k++) {
            if (k < rounds) {
                Range p = round_piece<char>(mine, k, rounds);
                copy_elems(a.dst + p.begin, a.peer_src[a.root] + p.begin, p.end - p.begin, a.vector_ok);
                peer_signal(a, k);
            }
            if (k == 0) continue;
            for (int i = 1; i < receivers; i++) {
                int j = (me + i) % receivers; // stagger so receivers do not all read one peer at once
                int owner = (j + a.root + 1) % a.nranks;
                if (!peer_wait(a, owner, k - 1)) return;
                Range p = round_piece<char>(twoshot_slice<char>(a.count, j, receivers), k - 1, rounds);
                copy_elems(a.dst + p.begin, a.peer_dst[owner] + p.begin, p.end - p.begin, a.vector_ok);
            }
        }
    }
    peer_barrier(a, 2, a.epoch0); // nobody reuses its buffer while a peer still reads it
}

} // namespace gpucoll
