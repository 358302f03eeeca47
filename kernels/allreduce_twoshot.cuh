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

// Block b's share of the slices the other ranks reduce, from this rank's
// input of a step of n elements into its scratch area. Its own slice it
// reduces straight from its input: nobody else reads it.
template <class T> __device__ inline void twoshot_copy_in(const PeerArgs &a, T *area, const T *src, size_t n)
{
    size_t span;
    for (int i = 1; i < a.nranks; i++) {
        Range rs = twoshot_step_slice<T>(n, a.chunk, (a.rank + i) % a.nranks, a.nranks, &span);
        copy_elems(area + rs.begin, src + rs.begin, rs.end - rs.begin, a.vector_ok, span);
    }
}

// The reduce-scatter of a step: after every rank's copy-in, this rank
// reduces its slice into its output and into its result area (which the
// others read), then waits until every rank has.
template <class T, class Op>
__device__ bool twoshot_reduce(const PeerArgs &a, const T *src, T *dst, size_t n, uint64_t epoch)
{
    if (!peer_barrier(a, 0, epoch)) return false;
    size_t span;
    Range s = twoshot_step_slice<T>(n, a.chunk, a.rank, a.nranks, &span);
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++)
        srcs[j] = j == a.rank ? const_cast<T *>(src) + s.begin : reinterpret_cast<T *>(step_area(a, j, epoch)) + s.begin;
    T *result = reinterpret_cast<T *>(step_area(a, a.rank, epoch)) + a.chunk;
    // In place src is dst: reduce_elems reads every source of an element before writing it.
    reduce_elems<T, Op>(result + s.begin, srcs, a.nranks, s.end - s.begin, a.vector_ok, dst + s.begin, span);
    return peer_barrier(a, 1, epoch);
}

// Step `epoch` of the call (off, n of a.count, steps of a.chunk; run_steps),
// two barriers. The gather of this step (reading the peers' result areas)
// goes with the copy-in of the next step into the other half: past this
// step's second barrier every rank is done with that half (it read it in
// the step before, ahead of its own second barrier of this one), and the two
// copies touch different parts of the user's buffers even in place. So the
// local copy no longer takes a phase of its own while the links idle; only
// the first step's copy-in does.
template <class T, class Op>
__device__ bool allreduce_twoshot_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    const T *src = reinterpret_cast<const T *>(a.src);
    T *dst = reinterpret_cast<T *>(a.dst);
    if (off == 0) twoshot_copy_in(a, reinterpret_cast<T *>(step_area(a, a.rank, epoch)), src, n);
    if (!twoshot_reduce<T, Op>(a, src + off, dst + off, n, epoch)) return false;
    const size_t next = off + n, nn = a.count - next < a.chunk ? a.count - next : a.chunk;
    T *next_area = reinterpret_cast<T *>(step_area(a, a.rank, epoch + 1));
    for (int i = 1; i < a.nranks; i++) {
        const int peer = (a.rank + i) % a.nranks; // staggered: ranks do not all read one peer at once
        size_t span, next_span;
        Range ps = twoshot_step_slice<T>(n, a.chunk, peer, a.nranks, &span);
        Range ns = twoshot_step_slice<T>(nn, a.chunk, peer, a.nranks, &next_span);
        const T *theirs = reinterpret_cast<const T *>(step_area(a, peer, epoch)) + a.chunk;
        copy_elems_pair(dst + off + ps.begin, theirs + ps.begin, ps.end - ps.begin, next_area + ns.begin,
                        src + next + ns.begin, ns.end - ns.begin, a.vector_ok, span);
    }
    return true;
}

} // namespace gpucoll
