// Zero-copy Reduce_scatter(_block): rank r reduces its block straight from
// every rank's mapped input into its output; the host points peer_src[j] at
// that block of rank j's input (blocks of any size: Reduce_scatter's counts).
// Not in place (the output would overwrite block 0 of an input that rank 0
// still reads).
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void reduce_scatter_direct(const PeerArgs &a)
{
    if (!peer_barrier(a, 0, a.epoch0)) return;
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = const_cast<T *>(reinterpret_cast<const T *>(a.peer_src[j]));
    reduce_elems<T, Op>(reinterpret_cast<T *>(a.dst), srcs, a.nranks, a.count, a.vector_ok);
    peer_barrier(a, 1, a.epoch0); // peers are done reading our input
}

} // namespace gpucoll
