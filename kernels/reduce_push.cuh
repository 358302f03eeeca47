// Zero-copy reduce by stores into the root's output: the ranks other than
// the root split the message; each reduces its slice straight from every
// rank's mapped input and stores the result into the root's mapped output.
// Every link then carries about the message once each way (the root sends
// its input out and takes the results in), where the one-shot reduce through
// scratch brings (n-1) x size into the root: 4 x H200, 64 MiB, 622 us against
// NCCL's 202-264 (docs/performance.md).
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void reduce_push(const PeerArgs &a)
{
    // Entry: a peer's kernel running means the work it queued before the
    // call (which wrote its input, and at the root may still read its output)
    // is done.
    if (!peer_barrier(a, 0, a.epoch0)) return;
    const int workers = a.nranks > 1 ? a.nranks - 1 : 1;
    if (a.nranks == 1 || a.rank != a.root) {
        const int w = a.nranks > 1 ? (a.rank - a.root - 1 + a.nranks) % a.nranks : 0;
        Range s = twoshot_slice<T>(a.count, w, workers);
        T *srcs[kMaxPeers];
        for (int j = 0; j < a.nranks; j++) // rank order: the sum rounds alike at every size and layout
            srcs[j] = const_cast<T *>(reinterpret_cast<const T *>(a.peer_src[j])) + s.begin;
        // In place at the root, its output slice is its input slice, which
        // only this rank reads, and each element is read before it is written.
        reduce_elems<T, Op>(reinterpret_cast<T *>(a.peer_dst[a.root]) + s.begin, srcs, a.nranks, s.end - s.begin,
                            a.vector_ok);
    }
    // Exit: every store into the root's output is done (each rank posts after
    // its stores, at system scope) and nobody reads our input any more.
    peer_barrier(a, 2, a.epoch0);
}

} // namespace gpucoll
