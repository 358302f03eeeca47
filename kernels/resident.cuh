// Resident kernels: a kernel launched for one call stays on the GPU for a
// while after it and serves the next calls the host posts to a mailbox in
// page-locked host memory, so that a run of small calls pays one launch
// instead of one each (a launch plus its completion costs ~9.6 us on an
// H200, more than a small collective's own work: docs/performance.md).
//
// It leaves when it has had no call for idle_ns, or when the host moves the
// mailbox to another generation (another kernel, a large call on the launch
// path, the team's end). The host never relies on it still being there: a
// call posted to a kernel that has just left is found unserved once its
// stream is idle, and launched anew (core/resident.cpp).
#pragma once

#include <type_traits>

#include "peer_sync.cuh"
#include "resident_call.h"
#include "stream_calls.h"
#include "windows.cuh"

namespace gpucoll {

// Block b tells the host that it is done with call `seq`, after every
// thread's writes. A fence at GPU scope is enough: the output is this GPU's
// memory (blocking calls take the peer path only then: local_verdict), and
// whatever reads it after the host returns (a kernel, a copy, a peer over
// NVLink) reads it through this GPU's L2. The system-scope fence also waited
// for the lines stored into the peers' memory: 1.47 us against 0.36 us
// (gpucoll-floor, "fence sys/gpu", 2 x H200).
// A timed kernel's block 0 then writes when it took the call, when the
// work ended and when the fence did (ResidentMailbox::stamps), after the
// done word, so that the timing does not lengthen the call.
__device__ inline void report_done(const Residency &call)
{
    __syncthreads();
    if (threadIdx.x != 0) return;
    volatile ResidentMailbox *mb = call.mailbox;
    const bool timed = call.timed && call.seen_ns && blockIdx.x == 0;
    const uint64_t worked = timed ? gpu_global_timer_ns() : 0;
    __threadfence();
    const uint64_t fenced = timed ? gpu_global_timer_ns() : 0;
    mb->done[blockIdx.x] = call.seq;
    if (!timed) return;
    mb->stamps[0] = call.seen_ns;
    mb->stamps[1] = worked;
    mb->stamps[2] = fenced;
    __threadfence_system();
    mb->stamps[3] = call.seq;
}

// What block 0 tells the others: serve call `seq` of generation `gen`, or
// leave. Words of other generations (earlier kernels') are stale.
__device__ inline uint64_t decision_word(uint32_t gen, bool leave, uint64_t seq)
{
    return (uint64_t)(gen & 0x7fffffffu) << 33 | (uint64_t)leave << 32 | (uint32_t)seq;
}

__device__ inline uint64_t *decision_of(const PeerArgs &first)
{
    return reinterpret_cast<uint64_t *>(first.scratch[first.rank] + kResidentOffset);
}

__device__ inline PeerArgs *posted_call(const PeerArgs &first)
{
    return reinterpret_cast<PeerArgs *>(first.scratch[first.rank] + kResidentCallOffset);
}

// cmd = *from in 4-byte loads, by the whole block. Volatile for a call that
// block 0 posted in device memory (it may have changed since this SM last
// cached it); plain for the launch's own call, a kernel parameter
// (GPU_GRID_CONSTANT): a volatile load of a parameter's address reads it as
// global memory (an illegal address, H200).
template <bool Volatile> __device__ inline void copy_call(PeerArgs *cmd, const PeerArgs *from)
{
    using Word = typename std::conditional<Volatile, const volatile uint32_t, const uint32_t>::type;
    Word *src = reinterpret_cast<Word *>(from);
    uint32_t *dst = reinterpret_cast<uint32_t *>(cmd);
    for (int i = threadIdx.x; i < (int)(sizeof(PeerArgs) / 4); i += blockDim.x) dst[i] = src[i];
}

// Block 0, every thread: waits until the mailbox holds call `seq` (thread i
// reads word i, all in one trip) and puts it into *cmd; false when the
// kernel is to leave instead: the host moved to another generation, or no
// call came for idle_ns.
__device__ inline bool poll_call(const Residency &r, uint64_t seq, PeerArgs *cmd)
{
    const volatile uint64_t *words = r.mailbox->call;
    __shared__ uint64_t w[kResidentCallWords];
    __shared__ int verdict;
    const uint64_t start = gpu_global_timer_ns();
    for (;;) {
        if (threadIdx.x < kResidentCallWords) w[threadIdx.x] = words[threadIdx.x];
        __syncthreads();
        if (threadIdx.x == 0) {
            ResidentVerdict v = resident_verdict(w, r.gen, seq);
            if (v == kResidentWait && gpu_global_timer_ns() - start > r.idle_ns) v = kResidentLeave;
            if (v == kResidentTake) {
                apply_resident_call(w, seq, cmd);
                cmd->resident.seen_ns = r.timed ? gpu_global_timer_ns() : 0;
                reinterpret_cast<volatile ResidentMailbox *>(r.mailbox)->taken = seq;
            }
            verdict = v;
        }
        __syncthreads();
        if (verdict != kResidentWait) return verdict == kResidentTake;
    }
}

// The other blocks, thread 0: block 0's decision about call `seq`.
__device__ inline bool follow_call(const PeerArgs &first, uint64_t seq)
{
    const Residency &r = first.resident;
    const uint64_t *decision = decision_of(first);
    const uint64_t stale = decision_word(r.gen, false, seq - 1), start = gpu_global_timer_ns();
    for (;;) {
        uint64_t d = gpu_load_acquire_sys(decision);
        if (d >> 33 == (r.gen & 0x7fffffffu) && d != stale) return !((d >> 32) & 1);
        // Block 0 decides within idle_ns; past that plus the timeout (or, with
        // none set, a second) it is gone.
        if (gpu_global_timer_ns() - start > r.idle_ns + (first.timeout_ns ? first.timeout_ns : 1000000000ull)) {
            atomicExch(first.error, 1);
            return false;
        }
    }
}

// Every block: whether it serves another call, which is then in *cmd. Only
// block 0 reads the host's mailbox (32 blocks reading a call over PCIe took
// ~27 us against ~1 us for one, H200); with more blocks it passes the call
// on through device memory, so that either every block serves it or none.
__device__ inline bool next_call(const PeerArgs &first, PeerArgs *cmd)
{
    __shared__ int more;
    const uint64_t seq = cmd->resident.seq + 1;
    if (blockIdx.x == 0) {
        const bool serve = poll_call(first.resident, seq, cmd);
        if (gridDim.x == 1) return serve;
        if (serve) copy_call<false>(posted_call(first), cmd);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            gpu_store_release_sys(decision_of(first), decision_word(first.resident.gen, !serve, seq));
        }
        return serve;
    }
    if (threadIdx.x == 0) more = follow_call(first, seq);
    __syncthreads();
    if (more) copy_call<true>(cmd, posted_call(first));
    return more;
}

// The word that holds a team's `active` (low half) and `closed` (high half).
__device__ inline unsigned long long *stream_gate(StreamCalls *sc)
{
    return reinterpret_cast<unsigned long long *>(&sc->active);
}

// Thread 0 of each block, at a stream-ordered call's start: counts the block
// in and, in the same atomic, reads `closed`; then reads the counters its
// predecessor left and sets cmd->epoch0. The host sets `closed` and then
// waits for no block to be running: an atomic that read the word open came
// before the host's write in that word's order, so the host sees its count.
// No fence: the counters were written by the kernel before this one on the
// stream, which ended before this one started. (A fence after the count
// cost every enqueued or graph-replayed call a dependent trip to memory.)
__device__ inline StreamStart begin_stream_call(PeerArgs *cmd, StreamCalls *sc)
{
    const unsigned long long gate = atomicAdd(stream_gate(sc), 1ull);
    const volatile StreamCalls *v = sc;
    StreamStart s = stream_start(v->epoch, v->ll_flag, (uint32_t)(gate >> 32),
                                 (cmd->stream_epochs & ~kStreamEager) == 0);
    if (s.verdict == kStreamClosed) {
        atomicAdd(stream_gate(sc), ~0ull); // out again: minus one in the low half
    } else if (s.verdict == kStreamExhausted) {
        atomicCAS(cmd->error, 0, kErrorFlagsExhausted);
    } else {
        cmd->epoch0 = s.epoch0;
    }
    return s;
}

// ... and at its end, after all the block's threads: the last block out
// moves the counters on for the next call of the stream. No fence: the next
// call starts only after this kernel has ended, which makes every block's
// writes visible to it, and the host only counts (eager_done, `active`) and
// polls until the counts are reached. (The fences this replaced were at GPU
// scope: they never ordered the lines stored into peers' memory before the
// counts either.)
__device__ inline void end_stream_call(const PeerArgs &cmd, StreamCalls *sc, const StreamStart &s)
{
    __syncthreads();
    if (threadIdx.x != 0) return;
    if (gridDim.x == 1 || atomicAdd(&sc->blocks_out, 1u) == gridDim.x - 1) {
        const uint64_t epochs = cmd.stream_epochs & ~kStreamEager;
        StreamNext n = stream_next(sc->epoch, sc->ll_flag, epochs == 0, s, epochs);
        sc->epoch = n.epoch;
        sc->ll_flag = n.ll_flag;
        sc->calls++;
        if (cmd.stream_epochs & kStreamEager) sc->eager_done++;
        sc->blocks_out = 0;
    }
    atomicAdd(stream_gate(sc), ~0ull);
}

// A stream-ordered call on a team with registered windows (cmd.windows) may
// switch to its zero-copy plan (take_windows, kernels/windows.cuh): every
// rank reads the same posts and switches alike. It still moves the stream's
// counters on by the planned call's epochs, alike on every rank.
// ZeroCopy nullptr: the kernel has no zero-copy body, and the host sets no
// windows for its calls (core/windows.cpp, stream_windows).
// Inlined by force: compiled as a call of its own (which ptxas chose once the
// resident kernel of fp32 sums held one copy loop more, or the two-shot
// reduce), it spilled 5-7 KB a thread, 4.8 KB of stack each (session 33).
template <void (*Body)(const PeerArgs &), void (*ZeroCopy)(const PeerArgs &)>
__device__ __forceinline__ void run_stream_call(const PeerArgs &cmd)
{
    if constexpr (ZeroCopy == nullptr) {
        return Body(cmd);
    } else {
        if (!cmd.windows) return Body(cmd);
        __shared__ PeerArgs zc;
        const int z = take_windows(cmd, &zc);
        if (z == kRunZeroCopy) ZeroCopy(zc);
        else if (z == kRunPlanned) Body(cmd);
    }
}

// Runs Body on the launch's call and, with a mailbox, on every call posted
// after it while the kernel stays resident. The call is read from shared
// memory, the launch's too, so that Body is compiled once. Only block 0
// reads the call from host memory (32 blocks reading it over PCIe took
// ~27 us against ~1 us for one, H200); the others read block 0's copy.
template <void (*Body)(const PeerArgs &), void (*ZeroCopy)(const PeerArgs &)> __device__ void serve(const PeerArgs &first)
{
    __shared__ PeerArgs cmd;
    __shared__ StreamStart stream;
    copy_call<false>(&cmd, &first);
    if (first.stream_calls) { // one call, its epoch0 from device memory
        __syncthreads();
        if (threadIdx.x == 0) stream = begin_stream_call(&cmd, first.stream_calls);
        __syncthreads();
        if (stream.verdict == kStreamClosed) return; // nothing of the team may be touched
    }
    const Residency &r = first.resident;
    for (;;) {
        __syncthreads();
        if (!first.stream_calls) Body(cmd);
        else if (stream.verdict == kStreamRun) run_stream_call<Body, ZeroCopy>(cmd);
        if (first.stream_calls) {
            end_stream_call(cmd, first.stream_calls, stream);
            return;
        }
        if (!r.mailbox) return;
        // Its barrier also keeps the call from being overwritten while
        // threads still read it.
        report_done(cmd.resident);
        if (!next_call(first, &cmd)) return;
    }
}

} // namespace gpucoll
