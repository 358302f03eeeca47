// Bcast through scratch with forwarding by the receivers: the scratch-path
// counterpart of bcast_push, for buffers that are not mapped (nonblocking,
// stream-ordered and graph calls). In `bcast` every receiver reads the whole
// step from the root's scratch, so the root's links carry each byte once per
// receiver; here each step is cut into one slice per receiver (the n-1 ranks
// other than the root):
//   1. the root stores slice j into receiver j's scratch (each byte leaves
//      the root once);
//   2. barrier; receiver j copies slice j into its output and into every
//      other receiver's scratch;
//   3. barrier; each receiver copies the other slices out of its own scratch.
// The root does not wait at the second barrier (it only posts it): its
// stores of the next step go to the other half, which every receiver left
// before the first barrier of this step, so they overlap steps 2 and 3.
//
// As in the two-shot allreduce, block b handles only its own share of each
// slice, cut from the full step (a.chunk) and clipped to a shorter last
// step: block b of every rank writes and reads only what block b of the
// others wrote, so the barriers pair block b with block b and the kernel
// progresses with only some of its blocks on the GPU.
#pragma once
#include "allreduce_twoshot.cuh"
#include "bcast_direct.cuh"

namespace gpucoll {

// Rank of receiver j (0..n-2), the inverse of bcast_receiver.
__device__ inline int bcast_receiver_rank(const PeerArgs &a, int j) { return (j + a.root + 1) % a.nranks; }

__device__ inline bool bcast_forward_step(const PeerArgs &a, size_t off, size_t n, uint64_t epoch)
{
    const int receivers = a.nranks - 1;
    size_t span;
    if (a.rank == a.root) {
        for (int i = 0; i < receivers; i++) {
            Range s = twoshot_step_slice<char>(n, a.chunk, i, receivers, &span);
            copy_elems(step_area(a, bcast_receiver_rank(a, i), epoch) + s.begin, a.src + off + s.begin,
                       s.end - s.begin, a.vector_ok, span);
        }
    }
    if (!peer_barrier(a, 0, epoch)) return false;
    if (a.rank == a.root) {
        post_flags(a, 1, epoch);
        return true;
    }
    const int me = bcast_receiver(a, a.rank);
    char *mine = step_area(a, a.rank, epoch);
    Range s = twoshot_step_slice<char>(n, a.chunk, me, receivers, &span);
    char *dsts[kMaxPeers];
    int nd = 0;
    dsts[nd++] = a.dst + off + s.begin;
    for (int i = 1; i < receivers; i++) // stagger so receivers do not all store into one peer at once
        dsts[nd++] = step_area(a, bcast_receiver_rank(a, (me + i) % receivers), epoch) + s.begin;
    copy_elems_multi(dsts, nd, mine + s.begin, s.end - s.begin, a.vector_ok, span);
    if (!peer_barrier(a, 1, epoch)) return false;
    for (int i = 1; i < receivers; i++) {
        Range o = twoshot_step_slice<char>(n, a.chunk, (me + i) % receivers, receivers, &span);
        copy_elems(a.dst + off + o.begin, mine + o.begin, o.end - o.begin, a.vector_ok, span);
    }
    return true;
}

} // namespace gpucoll
