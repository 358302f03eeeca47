// The flag-in-data ("LL") protocol of the small-message algorithms. A rank
// stores what a peer needs straight into that peer's LL area, as 16-byte
// lines of {4 bytes of data, flag, 4 bytes of data, flag}; the peer spins on
// its own memory until a line carries this call's flag. Each 8-byte half is
// written and read whole (gpu_store_line), so a matching flag means its data
// is there: no barrier, no system-scope fence, one one-way trip over the
// link per call instead of a flag round plus a load round trip.
//
// Why the flags cannot be stale: a slot is written only by LL calls, each
// with its own flag (the team's LL call counter, never 0; the area starts
// zeroed and is cleared before the counter wraps), so a line from an earlier
// call never matches. Why a slot is never overwritten while its owner still
// reads it: consecutive LL calls use the two parities of the area in turn,
// so a call's lines go where the call two before had its, and no rank may
// start call n before every rank has finished call n - 2. A blocking call
// gets that from its agreement (core/team.cpp): no rank starts it before
// every rank has finished the call before. Calls without the agreement
// (nonblocking, persistent, stream-ordered, graph) keep a stronger rule: no
// rank's kernel of LL call n ends before every rank has started call n
// (hence finished n - 1). A rank that received from every peer in the call
// knows that already (allreduce, allgather, alltoall, reduce_scatter_block:
// no cost). The ranks of bcast and reduce that did not hear from some peer
// (the root of bcast, the others of reduce) wait for it at the end: every
// rank, at the start of every such call, tells every peer that it has
// finished the LL call before (ll_acknowledge), and they wait for those
// words (ll_wait_started). That is what lets senders that wait for nothing
// run in those modes.
//
// One thread handles line i of every buffer it touches, reading all of them
// before it writes its output line i: that keeps in-place calls correct
// without any barrier between the reads and the writes.
#pragma once
#include "peer_sync.cuh"

namespace gpucoll {

// Where rank `from` writes for rank `owner` in this call.
__device__ inline uint4 *ll_slot(const PeerArgs &a, int owner, int from)
{
    return reinterpret_cast<uint4 *>(a.scratch[owner] + kDataOffset + 2 * a.half_bytes +
                                     ((a.epoch0 & 1) * kMaxPeers + from) * a.ll_slot_bytes);
}

// Where rank `from` tells rank `owner` the flag of the last LL call it has
// finished (kLLAckOffset).
__device__ inline uint64_t *ll_ack_word(const PeerArgs &a, int owner, int from)
{
    return reinterpret_cast<uint64_t *>(a.scratch[owner] + kLLAckOffset) + from;
}

// Every rank but this one, a bit each.
__device__ inline unsigned ll_peers(const PeerArgs &a) { return ((1u << a.nranks) - 1) & ~(1u << a.rank); }

// Whether every rank in `peers` (a bit each) has started this call, i.e.
// acknowledged the LL call before it (ll_acknowledge). The loads go out
// together, then the comparisons (in serial arithmetic; the words are
// cleared with the area when the blocking path restarts the count at 0).
__device__ inline bool ll_started(const PeerArgs &a, unsigned peers)
{
    const uint32_t want = (uint32_t)a.epoch0 - 1;
    uint32_t got[kMaxPeers];
#pragma unroll
    for (int p = 0; p < kMaxPeers; p++)
        got[p] = (peers >> p & 1) ? (uint32_t)gpu_load_relaxed_sys(ll_ack_word(a, a.rank, p)) : want;
    bool ok = true;
#pragma unroll
    for (int p = 0; p < kMaxPeers; p++) ok &= (int32_t)(got[p] - want) >= 0;
    return ok;
}

// At the end of a one-way LL call that runs without the host agreement
// (a.ll_wait_acks), by every thread of every block: thread 0 waits until the
// peers this rank did not hear from in the call (`peers`) have started it,
// so that no kernel of this rank ends before every rank has started the
// call. A rank that did hear from a peer knows that already, which is why
// the calls in which every rank receives from every other never wait. Ends
// early (error raised) where must_give_up says so.
__device__ inline void ll_wait_started(const PeerArgs &a, unsigned peers)
{
    if (!a.ll_wait_acks || threadIdx.x != 0 || !peers || ll_started(a, peers)) return;
    const uint64_t start = a.timeout_ns ? gpu_global_timer_ns() : 0;
    for (unsigned spin = 0; !ll_started(a, peers); spin++)
        if (must_give_up(a, start, spin)) return;
}

// At the start of an LL call without the host agreement (the dispatchers
// call it before the body), block 0: tells every peer that this rank has
// finished the LL call before, which is over on every block by now (a launch
// starts after the previous kernel on its stream has ended). A waiting rank
// wants the words its peers write at the start of the same call, so calls
// with the agreement, which never wait, write none (a store into each peer
// cost blocking calls served by a resident kernel 0.3-0.5 us, 2 x H200). At
// the start rather than the end: the stores then travel with the call's own
// lines, and no fence at the kernel's end waits for them.
__device__ inline void ll_acknowledge(const PeerArgs &a)
{
    const int p = (int)threadIdx.x;
    if (a.ll_wait_acks && is_ll(a.algo) && blockIdx.x == 0 && p < a.nranks && p != a.rank)
        gpu_store_relaxed_sys(ll_ack_word(a, p, a.rank), (uint32_t)a.epoch0 - 1);
}

__device__ inline size_t ll_lines(size_t bytes) { return (bytes + 7) / 8; }
__device__ inline size_t ll_first() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline size_t ll_stride() { return (size_t)gridDim.x * blockDim.x; }

// Bytes [8i, 8i+8) of a buffer of `bytes`, zero past its end. Buffers are
// aligned only to their element (or not at all, for byte moves).
__device__ inline uint64_t ll_read(const char *buf, size_t bytes, size_t i)
{
    const char *p = buf + 8 * i;
    size_t avail = bytes - 8 * i;
    uintptr_t at = (uintptr_t)p;
    if (avail >= 8 && at % 8 == 0) return *reinterpret_cast<const uint64_t *>(p);
    if (avail >= 8 && at % 4 == 0) {
        const uint32_t *q = reinterpret_cast<const uint32_t *>(p);
        return (uint64_t)q[1] << 32 | q[0];
    }
    uint64_t v = 0;
    for (size_t k = 0; k < 8 && k < avail; k++) v |= (uint64_t)(uint8_t)p[k] << (8 * k);
    return v;
}

// The inverse: writes only the bytes that lie inside the buffer.
__device__ inline void ll_write(char *buf, size_t bytes, size_t i, uint64_t v)
{
    char *p = buf + 8 * i;
    size_t avail = bytes - 8 * i;
    uintptr_t at = (uintptr_t)p;
    if (avail >= 8 && at % 8 == 0) {
        *reinterpret_cast<uint64_t *>(p) = v;
    } else if (avail >= 8 && at % 4 == 0) {
        uint32_t *q = reinterpret_cast<uint32_t *>(p);
        q[0] = (uint32_t)v;
        q[1] = (uint32_t)(v >> 32);
    } else {
        for (size_t k = 0; k < 8 && k < avail; k++) p[k] = (char)(v >> (8 * k));
    }
}

__device__ inline void ll_send(uint4 *line, uint64_t data, uint32_t flag)
{
    gpu_store_line(line, make_uint4((uint32_t)data, flag, (uint32_t)(data >> 32), flag));
}

// Spins until `line` carries this call's flag, then gives its data. False
// (and the error flag raised) where must_give_up says so.
__device__ inline bool ll_receive(const PeerArgs &a, const uint4 *line, uint64_t *data)
{
    const uint32_t flag = (uint32_t)a.epoch0;
    uint4 v = gpu_load_line(line);
    if (v.y != flag || v.w != flag) {
        uint64_t start = a.timeout_ns ? gpu_global_timer_ns() : 0;
        unsigned spin = 0;
        do {
            if (must_give_up(a, start, spin++)) return false;
            v = gpu_load_line(line);
        } while (v.y != flag || v.w != flag);
    }
    *data = (uint64_t)v.z << 32 | v.x;
    return true;
}

// Copies every peer's lines from this rank's LL area into that peer's block
// (of `bytes`) of the output, one (peer, line) item per thread: the end of
// allgather and alltoall. Returns early (error raised) on a timeout.
__device__ inline void ll_receive_blocks(const PeerArgs &a, size_t bytes)
{
    const size_t lines = ll_lines(bytes), items = (size_t)(a.nranks - 1) * lines;
    for (size_t t = ll_first(); t < items; t += ll_stride()) {
        int from = (a.rank + 1 + (int)(t / lines)) % a.nranks;
        size_t i = t % lines;
        uint64_t v;
        if (!ll_receive(a, ll_slot(a, a.rank, from) + i, &v)) return;
        ll_write(a.dst + from * bytes, bytes, i, v);
    }
}

// op over ranks 0..n-1 (in rank order, so every rank rounds alike) of the
// 8 / sizeof(T) elements packed in in[r]. Lanes past the buffer's end are
// zeros and are never written out.
template <class T, class Op> __device__ inline uint64_t ll_reduce(const uint64_t *in, int n)
{
    using A = Acc<T>;
    using AT = typename A::type;
    constexpr int L = 8 / sizeof(T);
    union Lanes {
        uint64_t u;
        T e[L];
    };
    Lanes x;
    x.u = in[0];
    AT acc[L];
#pragma unroll
    for (int k = 0; k < L; k++) acc[k] = A::load(x.e[k]);
#pragma unroll
    for (int j = 1; j < kMaxPeers; j++) {
        if (j >= n) break;
        x.u = in[j];
#pragma unroll
        for (int k = 0; k < L; k++) acc[k] = Op::apply(acc[k], A::load(x.e[k]));
    }
#pragma unroll
    for (int k = 0; k < L; k++) x.e[k] = A::store(acc[k]);
    return x.u;
}

// The reduction of line i over all ranks: ours from `own`, the others' from
// our LL area. False on a timeout.
template <class T, class Op>
__device__ inline bool ll_reduce_line(const PeerArgs &a, const char *own, size_t bytes, size_t i, uint64_t *out)
{
    uint64_t in[kMaxPeers];
#pragma unroll
    for (int j = 0; j < kMaxPeers; j++) {
        if (j >= a.nranks) break;
        if (j == a.rank) in[j] = ll_read(own, bytes, i);
        else if (!ll_receive(a, ll_slot(a, a.rank, j) + i, &in[j])) return false;
    }
    *out = ll_reduce<T, Op>(in, a.nranks);
    return true;
}

} // namespace gpucoll
