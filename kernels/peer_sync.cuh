// Moving data between ranks' scratch and the cross-rank barrier that every
// peer-to-peer algorithm is built from.
#pragma once

#include "peer_args.h"
#include "reduce_ops.cuh"
#include "resident_call.h"

namespace gpucoll {

// The part [begin, end) of n elements that this block handles, in units of
// `align` elements so that 16-byte accesses stay aligned. The partition is
// laid out over `span` >= n elements: with span fixed for a whole kernel
// (the chunk), block b owns the same addresses in every step, which lets the
// barrier pair block b only with block b of the other ranks.
struct Range {
    size_t begin, end;
};
__device__ inline Range block_range(size_t n, size_t align, size_t span)
{
    if (span < n) span = n;
    size_t units = (span + align - 1) / align;
    size_t per = (units + gridDim.x - 1) / gridDim.x * align;
    size_t b = blockIdx.x * per;
    size_t e = b + per;
    return Range{b < n ? b : n, e < n ? e : n};
}

__device__ inline uint64_t *flag_slot(char *scratch, int phase, int rank, int block)
{
    return reinterpret_cast<uint64_t *>(scratch) + ((size_t)phase * kMaxPeers + rank) * kMaxBlocks + block;
}

// Block b of this rank sets its flag of `phase` to `value` in every rank's
// scratch, after all its threads' writes (visible at system scope first).
__device__ inline void post_flags(const PeerArgs &a, int phase, uint64_t value)
{
    __syncthreads();
    if (threadIdx.x < a.nranks) {
        __threadfence_system();
        gpu_store_release_sys(flag_slot(a.scratch[threadIdx.x], phase, a.rank, blockIdx.x), value);
    }
}

__device__ inline uint64_t *give_up_word(char *scratch) { return reinterpret_cast<uint64_t *>(scratch + kGiveUpOffset); }

// Whether a wait that began at `start` must end. A peer may be late by any
// amount, so a wait ends only when: the host raised the error word
// (kErrorPeerGone: a peer's process is gone, or this one exits; read over
// the bus, so every 256th poll), another kernel of the team gave up (its
// give-up word), or the debugging bound a.timeout_ns is set and past (this
// kernel then gives up and tells every rank's kernels to, see kGiveUpOffset).
// The host fails the call and runs no more peer kernels of the team.
// A resident kernel's call also ends when the host takes it back (posted
// before the agreement, which then failed: ResidentMailbox::withdrawn);
// no error is raised then, and what the call wrote is the host's to undo.
__device__ inline bool must_give_up(const PeerArgs &a, uint64_t start, unsigned spin)
{
    if (a.timeout_ns && gpu_global_timer_ns() - start > a.timeout_ns) {
        // The error first: this kernel's other blocks see the word it sets
        // (ours too) and must not pass for the ones told by a peer.
        atomicExch(a.error, kErrorTimeout);
        for (int p = 0; p < a.nranks; p++) gpu_store_release_sys(give_up_word(a.scratch[p]), 1);
        return true;
    }
    if (gpu_load_acquire_sys(give_up_word(a.scratch[a.rank])) != 0) {
        atomicCAS(a.error, 0, kErrorPeerGaveUp);
        return true;
    }
    if ((spin & 255) != 255) return false;
    if (*reinterpret_cast<volatile int *>(a.error) != 0) return true;
    return a.resident.mailbox && call_withdrawn(a.resident.mailbox, a.resident.seq);
}

// Spins until *f >= value; false (error raised) where must_give_up says so.
// With ll_receive, the waits of the kernels on other ranks.
__device__ inline bool wait_flag(const PeerArgs &a, const uint64_t *f, uint64_t value)
{
    uint64_t start = a.timeout_ns ? gpu_global_timer_ns() : 0;
    for (unsigned spin = 0; gpu_load_acquire_sys(f) < value; spin++)
        if (must_give_up(a, start, spin)) return false;
    return true;
}

// Every rank reaches this point of step `epoch` before this block goes on.
// Block b waits only for block b of each rank: every kernel has block b read
// only what block b of the others wrote (same partition, see block_range),
// which makes this a wait of nranks flags, and lets a kernel progress with
// only some of its blocks on the GPU (co_resident_blocks counts on it).
// Returns false (and flags an error) where must_give_up says so.
__device__ inline bool peer_barrier(const PeerArgs &a, int phase, uint64_t epoch)
{
    post_flags(a, phase, epoch);
    int failed = 0;
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x)
        if (!wait_flag(a, flag_slot(a.scratch[a.rank], phase, r, blockIdx.x), epoch)) failed = 1;
    // A block-wide OR (gpu_port.h), not a __shared__ flag reset by thread 0
    // here: the next barrier's reset would race with late readers of this one.
    return !gpu_block_any(failed);
}

// Pipelined kernels cut each rank's slice into rounds, so that one phase of
// round k overlaps another phase of round k-1. Pieces of at least ~32 KiB
// per block, at most kMaxRounds; every rank computes the same from the
// slice and the grid.
__device__ inline int pipeline_rounds(size_t slice_bytes)
{
    size_t r = slice_bytes / ((size_t)gridDim.x * 32 * 1024);
    return r < 1 ? 1 : r > (size_t)kMaxRounds ? kMaxRounds : (int)r;
}

// Piece k of `rounds` of slice s (in elements of T), 16-byte aligned.
template <class T> __device__ inline Range round_piece(Range s, int k, int rounds)
{
    constexpr size_t V = 16 / sizeof(T);
    size_t len = s.end - s.begin;
    size_t per = ((len + rounds - 1) / rounds + V - 1) / V * V;
    size_t b = s.begin + k * per, e = b + per;
    return Range{b < s.end ? b : s.end, e < s.end ? e : s.end};
}

// The value of the flags of round k (0-based) of the call whose first
// barrier epoch is `epoch`: above every earlier call's.
__device__ inline uint64_t round_flag(uint64_t epoch, uint64_t k) { return (epoch << kRoundBits) + k + 1; }

// Pipelined kernels: block b tells every rank that its part of round k is
// written (phase kRoundPhase) or that it is done with a slot (kFreePhase) ...
__device__ inline void peer_signal(const PeerArgs &a, uint64_t k, int phase = kRoundPhase)
{
    post_flags(a, phase, round_flag(a.epoch0, k));
}

// ... and waits until block b of rank `from` has signalled round k (or
// later). Block b pairs with block b: the same partition of the same piece.
// Returns false (and flags an error) on timeout.
__device__ inline bool peer_wait(const PeerArgs &a, int from, uint64_t k)
{
    int failed = threadIdx.x == 0 &&
                 !wait_flag(a, flag_slot(a.scratch[a.rank], kRoundPhase, from, blockIdx.x), round_flag(a.epoch0, k));
    return !gpu_block_any(failed);
}

// The same for every rank but this one at once (one thread per peer).
__device__ inline bool peers_wait(const PeerArgs &a, uint64_t k, int phase)
{
    int t = threadIdx.x;
    int failed = t < a.nranks && t != a.rank &&
                 !wait_flag(a, flag_slot(a.scratch[a.rank], phase, t, blockIdx.x), round_flag(a.epoch0, k));
    return !gpu_block_any(failed);
}

// The 16-byte vectors i, i + stride, ... of copy_elems below vend, U loads
// in flight per thread before their stores: with one, a copy by half the
// SMs (each rank's share where ranks share a GPU) ran at about half the
// device-to-device copy rate (H100: 4 loads, 0.81 of it on 66 blocks of 512
// threads; 2 loads 0.70). Returns where it stopped.
template <class T, int U>
__device__ inline size_t copy_vectors(T *dst, const T *src, size_t i, size_t vend, size_t stride)
{
    for (; i + (U - 1) * stride < vend; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = *reinterpret_cast<const uint4 *>(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) *reinterpret_cast<uint4 *>(dst + i + u * stride) = v[u];
    }
    return i;
}

// Loads a thread keeps in flight where a copy or reduction is not 16-byte
// aligned (blocks of an odd count, as reduce_scatter, allgather and alltoall
// have at 3 ranks): one at a time left those paths latency-bound (one H200
// under MPS, 3 ranks, 64 MiB: alltoall 3989 us byte by byte, 858 in words
// with eight in flight; reduce_scatter 1848 and 539).
constexpr int kUnalignedInFlight = 8;

// dsts[d][i] = src[i] for d < ndst and i = i, i + stride, ... below end,
// kUnalignedInFlight loads before their stores.
template <class W>
__device__ inline void copy_words(W *const *dsts, int ndst, const W *src, size_t i, size_t end, size_t stride)
{
    constexpr int U = kUnalignedInFlight;
    for (; i + (U - 1) * stride < end; i += U * stride) {
        W v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = src[i + u * stride];
        for (int d = 0; d < ndst; d++)
#pragma unroll
            for (int u = 0; u < U; u++) dsts[d][i + u * stride] = v[u];
    }
    for (; i < end; i += stride) {
        const W v = src[i];
        for (int d = 0; d < ndst; d++) dsts[d][i] = v;
    }
}

template <class W>
__device__ inline void copy_bytes_as(char *const *dsts, int ndst, const char *src, size_t begin, size_t end)
{
    const size_t words = (end - begin) / sizeof(W);
    W *wd[kMaxPeers];
    for (int d = 0; d < ndst; d++) wd[d] = reinterpret_cast<W *>(dsts[d] + begin);
    copy_words<W>(wd, ndst, reinterpret_cast<const W *>(src + begin), threadIdx.x, words, blockDim.x);
    for (size_t j = begin + words * sizeof(W) + threadIdx.x; j < end; j += blockDim.x) {
        const char v = src[j];
        for (int d = 0; d < ndst; d++) dsts[d][j] = v;
    }
}

// Bytes [begin, end) of src to every dsts[d] by this block's threads, in
// the widest words (8, 4, 2 or 1 bytes) that every address allows. Not
// inlined and not a template: one body per compilation unit serves every
// kernel and type (inlined, the unrolled loops doubled the kernels' build).
static __device__ __noinline__ void copy_unaligned_bytes(char *const *dsts, int ndst, const char *src, size_t begin,
                                                         size_t end)
{
    uintptr_t mis = reinterpret_cast<uintptr_t>(src + begin);
    for (int d = 0; d < ndst; d++) mis |= reinterpret_cast<uintptr_t>(dsts[d] + begin);
    if (mis % 8 == 0) copy_bytes_as<uint64_t>(dsts, ndst, src, begin, end);
    else if (mis % 4 == 0) copy_bytes_as<uint32_t>(dsts, ndst, src, begin, end);
    else if (mis % 2 == 0) copy_bytes_as<uint16_t>(dsts, ndst, src, begin, end);
    else copy_bytes_as<uint8_t>(dsts, ndst, src, begin, end);
}

// dst[i] = src[i] for this block's share of n elements of T.
template <class T>
__device__ inline void copy_elems(T *dst, const T *src, size_t n, bool vector_ok, size_t span = 0)
{
    constexpr size_t V = 16 / sizeof(T);
    Range r = block_range(n, V, span);
    if (vector_ok) {
        size_t vend = r.begin + (r.end - r.begin) / V * V;
        const size_t stride = blockDim.x * V;
        size_t i = copy_vectors<T, 4>(dst, src, r.begin + threadIdx.x * V, vend, stride);
        for (; i < vend; i += stride) *reinterpret_cast<uint4 *>(dst + i) = *reinterpret_cast<const uint4 *>(src + i);
        for (size_t j = vend + threadIdx.x; j < r.end; j += blockDim.x) dst[j] = src[j];
    } else {
        char *d = reinterpret_cast<char *>(dst);
        copy_unaligned_bytes(&d, 1, reinterpret_cast<const char *>(src), r.begin * sizeof(T), r.end * sizeof(T));
    }
}

// copy_elems of two copies at once, each this block's share of its n
// elements over the same span: a thread has loads of both in flight, so that
// a copy from a peer and one within this GPU overlap (the two-shot
// allreduce's gather of one step and copy-in of the next) instead of the
// links idling while the local one runs.
template <class T>
__device__ inline void copy_elems_pair(T *d1, const T *s1, size_t n1, T *d2, const T *s2, size_t n2, bool vector_ok,
                                       size_t span)
{
    if (!vector_ok || n1 == 0 || n2 == 0) {
        copy_elems(d1, s1, n1, vector_ok, span);
        copy_elems(d2, s2, n2, vector_ok, span);
        return;
    }
    constexpr size_t V = 16 / sizeof(T);
    const Range r1 = block_range(n1, V, span), r2 = block_range(n2, V, span);
    d1 += r1.begin, s1 += r1.begin, d2 += r2.begin, s2 += r2.begin;
    const size_t l1 = (r1.end - r1.begin) / V * V, l2 = (r2.end - r2.begin) / V * V;
    const size_t both = l1 < l2 ? l1 : l2, stride = blockDim.x * V;
    size_t i = threadIdx.x * V;
    for (; i + stride < both; i += 2 * stride) {
        uint4 v[4];
        v[0] = *reinterpret_cast<const uint4 *>(s1 + i);
        v[1] = *reinterpret_cast<const uint4 *>(s1 + i + stride);
        v[2] = *reinterpret_cast<const uint4 *>(s2 + i);
        v[3] = *reinterpret_cast<const uint4 *>(s2 + i + stride);
        *reinterpret_cast<uint4 *>(d1 + i) = v[0];
        *reinterpret_cast<uint4 *>(d1 + i + stride) = v[1];
        *reinterpret_cast<uint4 *>(d2 + i) = v[2];
        *reinterpret_cast<uint4 *>(d2 + i + stride) = v[3];
    }
    // What is left of each: its vectors from where the pairs stopped, then
    // the elements past its last whole vector.
    size_t j = copy_vectors<T, 4>(d1, s1, i, l1, stride);
    for (; j < l1; j += stride) *reinterpret_cast<uint4 *>(d1 + j) = *reinterpret_cast<const uint4 *>(s1 + j);
    j = copy_vectors<T, 4>(d2, s2, i, l2, stride);
    for (; j < l2; j += stride) *reinterpret_cast<uint4 *>(d2 + j) = *reinterpret_cast<const uint4 *>(s2 + j);
    for (j = l1 + threadIdx.x; j < r1.end - r1.begin; j += blockDim.x) d1[j] = s1[j];
    for (j = l2 + threadIdx.x; j < r2.end - r2.begin; j += blockDim.x) d2[j] = s2[j];
}

// dsts[d][i] = src[i] for every d < ndst, this block's share of n
// elements (laid out over `span`, see block_range): one read, ndst writes
// (the push kernels' forward step). Four 16-byte loads go out before their
// stores, since src may be a peer's memory.
template <class T>
__device__ inline void copy_elems_multi(T *const *dsts, int ndst, const T *src, size_t n, bool vector_ok,
                                        size_t span = 0)
{
    constexpr size_t V = 16 / sizeof(T);
    constexpr int U = 4;
    Range r = block_range(n, V, span);
    size_t vend = vector_ok ? r.begin + (r.end - r.begin) / V * V : r.begin;
    const size_t stride = blockDim.x * V;
    size_t i = r.begin + threadIdx.x * V;
    for (; i + (U - 1) * stride < vend; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = *reinterpret_cast<const uint4 *>(src + i + u * stride);
#pragma unroll
        for (int d = 0; d < kMaxPeers; d++)
            if (d < ndst)
#pragma unroll
                for (int u = 0; u < U; u++) *reinterpret_cast<uint4 *>(dsts[d] + i + u * stride) = v[u];
    }
    for (; i < vend; i += stride) {
        uint4 v = *reinterpret_cast<const uint4 *>(src + i);
        for (int d = 0; d < ndst; d++) *reinterpret_cast<uint4 *>(dsts[d] + i) = v;
    }
    if (!vector_ok) {
        char *bd[kMaxPeers];
        for (int d = 0; d < ndst; d++) bd[d] = reinterpret_cast<char *>(dsts[d]);
        copy_unaligned_bytes(bd, ndst, reinterpret_cast<const char *>(src), r.begin * sizeof(T), r.end * sizeof(T));
        return;
    }
    for (size_t j = vend + threadIdx.x; j < r.end; j += blockDim.x) {
        T v = src[j];
        for (int d = 0; d < ndst; d++) dsts[d][j] = v;
    }
}

// The 16-byte vectors i, i + stride, ..., i + (U-1) stride of
// reduce_elems_multi for as long as they lie below vend, with up to S
// sources: all U x nsrc loads go out before the first reduction, so that a
// thread keeps U x nsrc loads in flight (HBM and links need several per
// thread to run near their bandwidth). Returns where it stopped.
template <class T, class Op, int S, int U>
__device__ inline size_t reduce_vectors(T *const *dsts, int ndst, T *const *srcs, int nsrc, size_t i, size_t vend,
                                        size_t stride)
{
    using A = Acc<T>;
    using AT = typename A::type;
    constexpr size_t V = 16 / sizeof(T);
    union Vec {
        uint4 v;
        T e[V];
    };
    for (; i + (U - 1) * stride < vend; i += U * stride) {
        Vec in[U][S];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < S; j++)
                if (j < nsrc) in[u][j].v = *reinterpret_cast<const uint4 *>(srcs[j] + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) {
            Vec out;
#pragma unroll
            for (size_t k = 0; k < V; k++) {
                AT acc = A::load(in[u][0].e[k]);
#pragma unroll
                for (int j = 1; j < S; j++)
                    if (j < nsrc) acc = Op::apply(acc, A::load(in[u][j].e[k]));
                out.e[k] = A::store(acc);
            }
#pragma unroll
            for (int d = 0; d < kMaxPeers; d++)
                if (d < ndst) *reinterpret_cast<uint4 *>(dsts[d] + i + u * stride) = out.v;
        }
    }
    return i;
}

// The elements i, i + stride, ... of reduce_elems_multi below end that are
// not in whole 16-byte vectors: U elements of each of up to S sources
// loaded before the first reduction (kUnalignedInFlight says why). Returns
// where it stopped.
template <class T, class Op, int S, int U>
__device__ inline size_t reduce_scalars(T *const *dsts, int ndst, T *const *srcs, int nsrc, size_t i, size_t end,
                                        size_t stride)
{
    using A = Acc<T>;
    using AT = typename A::type;
    for (; i + (U - 1) * stride < end; i += U * stride) {
        T in[U][S];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < S; j++)
                if (j < nsrc) in[u][j] = srcs[j][i + u * stride];
#pragma unroll
        for (int u = 0; u < U; u++) {
            AT acc = A::load(in[u][0]);
#pragma unroll
            for (int j = 1; j < S; j++)
                if (j < nsrc) acc = Op::apply(acc, A::load(in[u][j]));
            const T out = A::store(acc);
            for (int d = 0; d < ndst; d++) dsts[d][i + u * stride] = out;
        }
    }
    return i;
}

// reduce_elems_multi's elements from j (this thread's first) to end. Not
// inlined: one body per type and op serves every kernel (copy_unaligned_bytes
// says why).
template <class T, class Op>
__device__ __noinline__ void reduce_unaligned(T *const *dsts, int ndst, T *const *srcs, int nsrc, size_t j,
                                              size_t end)
{
    using A = Acc<T>;
    using AT = typename A::type;
    constexpr int U = kUnalignedInFlight;
    if (nsrc <= 2) j = reduce_scalars<T, Op, 2, U / 2>(dsts, ndst, srcs, nsrc, j, end, blockDim.x);
    else if (nsrc <= 4) j = reduce_scalars<T, Op, 4, U / 4>(dsts, ndst, srcs, nsrc, j, end, blockDim.x);
    for (; j < end; j += blockDim.x) {
        AT acc = A::load(srcs[0][j]);
        for (int k = 1; k < nsrc; k++) acc = Op::apply(acc, A::load(srcs[k][j]));
        const T out = A::store(acc);
        for (int d = 0; d < ndst; d++) dsts[d][j] = out;
    }
}

// dsts[d][i] = op over j of srcs[j][i] for every d < ndst, this block's
// share of n elements. Accumulates in Acc<T>::type, in rank order, and
// rounds once. Each element is read from every source before it is written
// anywhere, so a destination may be one of the sources (in place). Few
// sources take several vectors per step (as many loads in flight per
// thread as with many sources, in the same registers).
template <class T, class Op>
__device__ inline void reduce_elems_multi(T *const *dsts, int ndst, T *const *srcs, int nsrc, size_t n,
                                          bool vector_ok, size_t span = 0)
{
    constexpr size_t V = 16 / sizeof(T);
    Range r = block_range(n, V, span);
    size_t vend = vector_ok ? r.begin + (r.end - r.begin) / V * V : r.begin;
    const size_t stride = blockDim.x * V;
    size_t i = r.begin + threadIdx.x * V;
    if (nsrc <= 2) i = reduce_vectors<T, Op, 2, 4>(dsts, ndst, srcs, nsrc, i, vend, stride);
    else if (nsrc <= 4) i = reduce_vectors<T, Op, 4, 2>(dsts, ndst, srcs, nsrc, i, vend, stride);
    reduce_vectors<T, Op, kMaxPeers, 1>(dsts, ndst, srcs, nsrc, i, vend, stride);
    if (vend + threadIdx.x < r.end) reduce_unaligned<T, Op>(dsts, ndst, srcs, nsrc, vend + threadIdx.x, r.end);
}

// dst[i] (and dst2[i], if given) = op over j of srcs[j][i].
template <class T, class Op>
__device__ inline void reduce_elems(T *dst, T *const *srcs, int nsrc, size_t n, bool vector_ok, T *dst2 = nullptr,
                                    size_t span = 0)
{
    T *dsts[2] = {dst, dst2};
    reduce_elems_multi<T, Op>(dsts, dst2 ? 2 : 1, srcs, nsrc, n, vector_ok, span);
}

// Scratch of rank `r` for step `epoch`: the two halves alternate.
__device__ inline char *step_area(const PeerArgs &a, int r, uint64_t epoch)
{
    return a.scratch[r] + kDataOffset + (epoch & 1) * a.half_bytes;
}

// A queued call's kernel tells the host it is over (a.done_word, see
// PeerArgs): every block counts itself out in this rank's scratch once all
// its threads are done, and the last one resets the count for the next
// kernel of the stream (which starts after this one ends) and publishes the
// call's number. Cheaper than an event record per launch and an event query
// per poll; a kernel that gave up ends here too, with the error already set.
__device__ inline void report_done(const PeerArgs &a)
{
    if (!a.done_word) return;
    __syncthreads();
    if (threadIdx.x != 0) return;
    // The block's writes before its count at GPU scope; the last block's
    // system fence then orders every block's writes it saw counted before
    // the word the host reads (fences are cumulative).
    __threadfence();
    unsigned *count = reinterpret_cast<unsigned *>(a.scratch[a.rank] + kDoneCountOffset);
    if (atomicAdd(count, 1u) != gridDim.x - 1) return;
    *count = 0;
    __threadfence_system();
    *reinterpret_cast<volatile uint64_t *>(a.done_word) = a.done_value;
}

} // namespace gpucoll
