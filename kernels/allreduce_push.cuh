// Zero-copy two-shot allreduce with pushed results: rank r reduces slice r
// straight from every rank's mapped input and stores the result into every
// rank's mapped output in the same pass. The same 2(n-1)/n x size crosses
// the links as in the pull version (allreduce_direct.cuh), but as one read
// phase and one write phase overlapped in each thread's loop, with no waits
// between them: nobody has to wait for a slice's owner to finish before
// fetching its result.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

template <class T, class Op> __device__ void allreduce_push(const PeerArgs &a)
{
    // Entry: a peer's kernel running means the work it queued before the
    // call (which wrote its input and may still read its output) is done.
    if (!peer_barrier(a, 0, a.epoch0)) return;
    Range s = twoshot_slice<T>(a.count, a.rank, a.nranks);
    T *srcs[kMaxPeers], *dsts[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) {
        // Start with the next rank so that ranks do not all hit one peer first.
        int p = (a.rank + 1 + j) % a.nranks;
        srcs[j] = const_cast<T *>(reinterpret_cast<const T *>(a.peer_src[p])) + s.begin;
        dsts[j] = reinterpret_cast<T *>(a.peer_dst[p]) + s.begin;
    }
    // In place, a peer's output slice r is its input slice r, which only this
    // rank reads, and each element is read before it is written.
    reduce_elems_multi<T, Op>(dsts, a.nranks, srcs, a.nranks, s.end - s.begin, a.vector_ok);
    // Exit: every rank's writes into our output are done (each posts after
    // its stores, at system scope) and nobody reads our input any more.
    peer_barrier(a, 2, a.epoch0);
}

} // namespace gpucoll
