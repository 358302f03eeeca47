// Reduce to a root through scratch, the bandwidth path for buffers that are
// not mapped: every rank copies its input into its scratch; after a barrier
// the ranks other than the root each reduce a slice from every rank's copy
// into the root's result area; after a second barrier the root copies the
// slices out. About the message crosses each link once each way, where the
// one-shot reduce (kernels/reduce.cuh) brings (n-1) x size into the root.
// Block b copies, reduces and copies out only its own share of each slice,
// as in the two-shot allreduce, so it waits only for block b of each rank.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

template <class T, class Op>
__device__ bool reduce_twoshot_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    // The ranks after the root reduce slice 0, 1, ...; with one rank, it does.
    const int workers = a.nranks > 1 ? a.nranks - 1 : 1;
    const bool works = a.nranks == 1 || a.rank != a.root;
    const int w = (a.rank - a.root - 1 + a.nranks) % a.nranks;
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    const T *src = reinterpret_cast<const T *>(a.src) + off;
    size_t span;
    for (int r = 0; r < workers; r++) { // this block's share of every slice
        Range rs = twoshot_step_slice<T>(n, a.chunk, r, workers, &span);
        copy_elems(mine + rs.begin, src + rs.begin, rs.end - rs.begin, a.vector_ok, span);
    }
    if (!peer_barrier(a, 0, epoch)) return false;

    // The root's result area follows its input area, as in the two-shot allreduce.
    T *result = reinterpret_cast<T *>(step_area(a, a.root, epoch)) + a.chunk;
    if (works) {
        Range s = twoshot_step_slice<T>(n, a.chunk, w, workers, &span);
        T *srcs[kMaxPeers];
        for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch)) + s.begin;
        reduce_elems<T, Op>(result + s.begin, srcs, a.nranks, s.end - s.begin, a.vector_ok, nullptr, span);
    }
    if (!peer_barrier(a, 1, epoch)) return false;
    if (a.rank != a.root) return true;
    T *dst = reinterpret_cast<T *>(a.dst) + off;
    for (int r = 0; r < workers; r++) {
        Range rs = twoshot_step_slice<T>(n, a.chunk, r, workers, &span);
        copy_elems(dst + rs.begin, result + rs.begin, rs.end - rs.begin, a.vector_ok, span);
    }
    return true;
}

} // namespace gpucoll
