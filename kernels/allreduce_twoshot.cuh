// Two-shot allreduce, the bandwidth path: a reduce-scatter (each rank reduces
// its 1/n slice from every rank's scratch) and an all-gather (each rank reads
// the other slices' results). Two barriers per step; 2(n-1)/n x size over
// the links, which is what bus bandwidth counts.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

// Slice of rank r in a step of n elements, in 16-byte units.
template <class T> __device__ inline Range twoshot_slice(size_t n, int r, int nranks)
{
    constexpr size_t V = 16 / sizeof(T);
    size_t per = ((n + nranks - 1) / nranks + V - 1) / V * V;
    size_t b = r * per, e = b + per;
    return Range{b < n ? b : n, e < n ? e : n};
}

template <class T, class Op>
__device__ bool allreduce_twoshot_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    T *dst = reinterpret_cast<T *>(a.dst) + off;
    copy_elems(mine, reinterpret_cast<const T *>(a.src) + off, n, a.vector_ok);
    if (!peer_barrier(a, 0, epoch, true)) return false; // slices cross block partitions

    Range s = twoshot_slice<T>(n, a.rank, a.nranks);
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch)) + s.begin;
    // The reduced slice goes to our output and to the result area the others read.
    T *result = mine + a.chunk;
    reduce_elems<T, Op>(result + s.begin, srcs, a.nranks, s.end - s.begin, a.vector_ok, dst + s.begin);
    if (!peer_barrier(a, 1, epoch, true)) return false;

    for (int p = 1; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks; // stagger so ranks do not all read one peer at once
        Range ps = twoshot_slice<T>(n, peer, a.nranks);
        const T *theirs = reinterpret_cast<const T *>(step_area(a, peer, epoch)) + a.chunk;
        copy_elems(dst + ps.begin, theirs + ps.begin, ps.end - ps.begin, a.vector_ok);
    }
    return true;
}

} // namespace gpucoll
