// Zero-copy two-shot allreduce, the bandwidth path: every rank's input and
// output are mapped into every peer (CUDA IPC), so there is no copy into
// scratch and no chunking. Rank r reduces slice r straight from all inputs
// into its output, then every rank reads the other slices from their owners'
// outputs. 2(n-1)/n x size crosses the links, with three barriers in all.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void allreduce_direct(const PeerArgs &a)
{
    // Entry: a peer's kernel running means the work it queued before the
    // call (which wrote its input) is done.
    if (!peer_barrier(a, 0, a.epoch0)) return;
    T *dst = reinterpret_cast<T *>(a.dst);
    Range s = twoshot_slice<T>(a.count, a.rank, a.nranks);
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++)
        srcs[j] = const_cast<T *>(reinterpret_cast<const T *>(a.peer_src[j])) + s.begin;
    // In place, srcs[rank] is our own output: each element is read before it
    // is written, and peers read only their own slice of it.
    reduce_elems<T, Op>(dst + s.begin, srcs, a.nranks, s.end - s.begin, a.vector_ok);
    if (!peer_barrier(a, 1, a.epoch0)) return;
    for (int p = 1; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks; // stagger so ranks do not all read one peer at once
        Range ps = twoshot_slice<T>(a.count, peer, a.nranks);
        copy_elems(dst + ps.begin, reinterpret_cast<const T *>(a.peer_dst[peer]) + ps.begin, ps.end - ps.begin,
                   a.vector_ok);
    }
    // Exit: nobody returns (and lets its caller reuse the buffers) while a
    // peer still reads them. Block b pairs with block b: it read what block b
    // of the owner wrote (the same partition of the slice).
    peer_barrier(a, 2, a.epoch0);
}

} // namespace gpucoll
