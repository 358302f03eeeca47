// Zero-copy allreduce in which every byte crosses the links as a store
// (NVLink carries stores with less overhead than loads, whose requests
// share the links with the data). Reduce-scatter by writes: each rank
// stores its piece of every other rank's slice into that owner's scratch;
// the owner reduces its own input and those pieces from local memory and
// stores the result into every rank's output (the all-gather, by writes).
// Pipelined in rounds through two scratch slots per writer: in round k a
// block writes piece k and reduces piece k-1, so the writes of one round
// overlap the reduction of the previous one.
#pragma once
#include "allreduce_twoshot.cuh"

namespace gpucoll {

constexpr int kWriteSlots = 2; // slots per writer in an owner's scratch: rounds in flight

// Bytes of one slot: the whole data area of the scratch (both halves; the
// entry barrier has ended every earlier kernel that used them) over the
// slots of every writer.
__device__ inline size_t write_slot_bytes(const PeerArgs &a)
{
    return 2 * a.half_bytes / (kWriteSlots * (size_t)a.nranks) / 16 * 16;
}

// Where `writer` puts round k's piece in rank `owner`'s scratch.
template <class T> __device__ inline T *write_slot(const PeerArgs &a, int owner, int writer, int k)
{
    size_t slot = (size_t)(k % kWriteSlots) * a.nranks + writer;
    return reinterpret_cast<T *>(a.scratch[owner] + kDataOffset + slot * write_slot_bytes(a));
}

// Rounds of a call: pieces no larger than a slot, and at least the pull
// kernels' pipelining. Every rank computes the same (slice 0 is the largest).
template <class T> __device__ inline int write_rounds(const PeerArgs &a)
{
    size_t slice = twoshot_slice<T>(a.count, 0, a.nranks).end;
    size_t cap = write_slot_bytes(a) / sizeof(T);
    size_t r = (slice + cap - 1) / cap;
    int p = pipeline_rounds(slice * sizeof(T));
    return r > (size_t)p ? (int)r : p;
}

template <class T, class Op> __device__ void allreduce_writes(const PeerArgs &a)
{
    // Entry: a peer's kernel running means the work it queued before the
    // call is done (its input is written, its output no longer read) and
    // so is its previous kernel, the last one to use its scratch.
    if (!peer_barrier(a, 0, a.epoch0)) return;
    const T *src = reinterpret_cast<const T *>(a.src);
    Range mine = twoshot_slice<T>(a.count, a.rank, a.nranks);
    const int rounds = write_rounds<T>(a);
    for (int k = 0; k <= rounds; k++) {
        if (k < rounds) {
            // Slot k % kWriteSlots of each owner is free once the owner has
            // reduced round k - kWriteSlots from it.
            if (k >= kWriteSlots && !peers_wait(a, k - kWriteSlots, kFreePhase)) return;
            for (int i = 1; i < a.nranks; i++) {
                int owner = (a.rank + i) % a.nranks; // stagger so ranks do not all write one peer at once
                Range p = round_piece<T>(twoshot_slice<T>(a.count, owner, a.nranks), k, rounds);
                copy_elems(write_slot<T>(a, owner, a.rank, k), src + p.begin, p.end - p.begin, a.vector_ok);
            }
            peer_signal(a, k);
        }
        if (k == 0) continue;
        const int kk = k - 1;
        if (!peers_wait(a, kk, kRoundPhase)) return;
        Range p = round_piece<T>(mine, kk, rounds);
        T *srcs[kMaxPeers], *dsts[kMaxPeers];
        for (int j = 0; j < a.nranks; j++) {
            int r = (a.rank + j) % a.nranks; // ourselves first
            srcs[j] = j == 0 ? const_cast<T *>(src) + p.begin : write_slot<T>(a, a.rank, r, kk);
            dsts[j] = reinterpret_cast<T *>(a.peer_dst[r]) + p.begin;
        }
        // In place, a peer's output piece is its input piece, which it wrote
        // into our scratch before signalling round kk.
        reduce_elems_multi<T, Op>(dsts, a.nranks, srcs, a.nranks, p.end - p.begin, a.vector_ok);
        peer_signal(a, kk, kFreePhase);
    }
    // Exit: every rank's stores into our output are done.
    peer_barrier(a, 2, a.epoch0);
}

} // namespace gpucoll
