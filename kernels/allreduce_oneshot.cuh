// One-shot allreduce, the latency path: every rank copies its input into its
// scratch, one barrier, then every rank reads all ranks' copies and reduces
// the whole vector itself. One barrier per step; (n-1) x size over the links.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

// With only_root, ranks other than a.root copy in and leave (that is Reduce).
template <class T, class Op, bool only_root = false>
__device__ bool allreduce_oneshot_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    T *mine = reinterpret_cast<T *>(step_area(a, a.rank, epoch));
    copy_elems(mine, reinterpret_cast<const T *>(a.src) + off, n, a.vector_ok, a.chunk);
    if (!peer_barrier(a, 0, epoch)) return false;
    if (only_root && a.rank != a.root) return true;
    T *srcs[kMaxPeers];
    for (int j = 0; j < a.nranks; j++) srcs[j] = reinterpret_cast<T *>(step_area(a, j, epoch));
    reduce_elems<T, Op>(reinterpret_cast<T *>(a.dst) + off, srcs, a.nranks, n, a.vector_ok, nullptr, a.chunk);
    return true;
}

} // namespace gpucoll
