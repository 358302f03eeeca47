// Two-shot allreduce, the bandwidth path: a reduce-scatter (each rank reduces
// its 1/n slice from every rank's scratch) and an all-gather (each rank reads
// the other slices' results). Two barriers per step; 2(n-1)/n x size over
// the links, which is what bus bandwidth counts.
//
// Block b copies in, reduces and reads back only its own share of each
// slice, the same share on every rank and in every step of the call (the
// slices and shares are cut from the full step, a.chunk, and clipped to a
// shorter last step). So block b waits only for block b of each rank: the
// kernel makes progress with only some of its blocks resident, as when
// another communicator's kernel holds most of the SMs, instead of needing
// every block of every rank on the GPU at once.
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

// Rank r's slice of a step of n elements as cut from a full step of `full`
// (clipped to n), and that full slice's length: the span that keeps every
// block's share in place when the last step is shorter.
template <class T> __device__ inline Range twoshot_step_slice(size_t n, size_t full, int r, int nranks, size_t *span)
{
    Range s = twoshot_slice<T>(full, r, nranks);
    *span = s.end - s.begin;
    return Range{s.begin < n ? s.begin : n, s.end < n ? s.end : n};
}

template <class T, class Op>
__device__ bool allreduce_twoshot_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    T *dst = reinterpret_cast<T *>(a.dst) + off;
    const T *src = reinterpret_cast<const T *>(a.src) + off;
    size_t span;
    for (int r = 0; r < a.nranks; r++) { // this block's share of every slice
        Range rs = twoshot_step_slice<T>(n, a.chunk, r, a.nranks, &span);
        copy_elems(mine + rs.begin, src + rs.begin, rs.end - rs.begin, a.vector_ok, span);
    }
    if (!peer_barrier(a, 0, epoch)) return false;

    Range s = twoshot_step_slice<T>(n, a.chunk, a.rank, a.nranks, &span);
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch)) + s.begin;
    // The reduced slice goes to our output and to the result area the others read.
    T *result = mine + a.chunk;
    reduce_elems<T, Op>(result + s.begin, srcs, a.nranks, s.end - s.begin, a.vector_ok, dst + s.begin, span);
    if (!peer_barrier(a, 1, epoch)) return false;

    for (int p = 1; p < a.nranks; p++) {
        int peer = (a.rank + p) % a.nranks; // stagger so ranks do not all read one peer at once
        Range ps = twoshot_step_slice<T>(n, a.chunk, peer, a.nranks, &span);
        const T *theirs = reinterpret_cast<const T *>(step_area(a, peer, epoch)) + a.chunk;
        copy_elems(dst + ps.begin, theirs + ps.begin, ps.end - ps.begin, a.vector_ok, span);
    }
    return true;
}

} // namespace gpucoll
