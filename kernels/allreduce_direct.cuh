// Zero-copy two-shot allreduce, the bandwidth path: every rank's input and
// output are mapped into every peer (CUDA IPC), so there is no copy into
// scratch and no chunking. Rank r reduces slice r straight from all inputs
// into its output, and every rank reads the other slices from their owners'
// outputs; 2(n-1)/n x size crosses the links. Pipelined in rounds: in round k
// a block reduces piece k of its slice and gathers piece k-1 of every other
// slice, as soon as that piece's owner (same block) has signalled it.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void allreduce_direct(const PeerArgs &a)
{
    // Entry: a peer's kernel running means the work it queued before the
    // call (which wrote its input) is done.
    if (!peer_barrier(a, 0, a.epoch0)) return;
    T *dst = reinterpret_cast<T *>(a.dst);
    Range mine = twoshot_slice<T>(a.count, a.rank, a.nranks);
    const int rounds = pipeline_rounds(twoshot_slice<T>(a.count, 0, a.nranks).end * sizeof(T));
    for (int k = 0; k <= rounds; k++) {
        if (k < rounds) {
            Range p = round_piece<T>(mine, k, rounds);
            T *srcs[kMaxPeers];
            for (int j = 0; j < a.nranks; j++)
                srcs[j] = const_cast<T *>(reinterpret_cast<const T *>(a.peer_src[j])) + p.begin;
            // In place, srcs[rank] is our own output: each element is read
            // before it is written, and only this slice's owner reads it.
            reduce_elems<T, Op>(dst + p.begin, srcs, a.nranks, p.end - p.begin, a.vector_ok);
            peer_signal(a, k);
        }
        if (k == 0) continue;
        for (int i = 1; i < a.nranks; i++) {
            int peer = (a.rank + i) % a.nranks; // stagger so ranks do not all read one peer at once
            // Once the owner signals piece k-1 it has also read that part of
            // our input, so in place we may overwrite it now.
            if (!peer_wait(a, peer, k - 1)) return;
            Range p = round_piece<T>(twoshot_slice<T>(a.count, peer, a.nranks), k - 1, rounds);
            copy_elems(dst + p.begin, reinterpret_cast<const T *>(a.peer_dst[peer]) + p.begin, p.end - p.begin,
                       a.vector_ok);
        }
    }
    // Exit: nobody returns (and lets its caller reuse the buffers) while a
    // peer still reads them.
    peer_barrier(a, 2, a.epoch0);
}

} // namespace gpucoll
