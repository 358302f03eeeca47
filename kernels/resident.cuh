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

#include "peer_sync.cuh"
#include "stream_calls.h"
#include "windows.cuh"

namespace gpucoll {

// Block b tells the host that it is done with call `seq`: after every
// thread's writes, which the fence makes visible at system scope first.
__device__ inline void report_done(const Residency &r, uint64_t seq)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        gpu_store_release_sys(&r.mailbox->done[blockIdx.x], seq);
    }
}

// The doorbell word of call `seq` of this kernel's generation (the device's
// doorbell_word of peer_args.h, which is host-only constexpr).
__device__ inline uint64_t doorbell_of(const Residency &r, uint64_t seq) { return (uint64_t)r.gen << 32 | (uint32_t)seq; }

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

// Thread 0 of each block: whether the block serves another call (its
// doorbell word is then in *word). Only block 0 polls the host's doorbell,
// until it moves or idle_ns pass; the others follow its decision, so that
// either every block serves a call or none does. Block 0 passes on a call
// with publish_call, once it has copied it to device memory.
__device__ inline bool next_call(const PeerArgs &first, uint64_t *word)
{
    const Residency &r = first.resident;
    uint64_t *decision = decision_of(first);
    uint64_t start = gpu_global_timer_ns();
    if (blockIdx.x == 0) {
        do {
            uint64_t d = gpu_load_acquire_sys(&r.mailbox->doorbell);
            if (d != *word) {
                *word = d;
                if ((uint32_t)(d >> 32) == r.gen) return true;
                break;
            }
        } while (gpu_global_timer_ns() - start <= r.idle_ns);
        gpu_store_release_sys(decision, decision_word(r.gen, true, *word));
        return false;
    }
    uint64_t stale = decision_word(r.gen, false, *word);
    for (;;) {
        uint64_t d = gpu_load_acquire_sys(decision);
        if (d >> 33 == (r.gen & 0x7fffffffu) && d != stale) {
            *word = doorbell_of(r, (uint32_t)d);
            return !((d >> 32) & 1);
        }
        // Block 0 decides within idle_ns; past that plus the timeout (or, with
        // none set, a second) it is gone.
        if (gpu_global_timer_ns() - start > r.idle_ns + (first.timeout_ns ? first.timeout_ns : 1000000000ull)) {
            atomicExch(first.error, 1);
            return false;
        }
    }
}

// cmd = *from in 4-byte volatile loads (the source may have changed since
// this SM last cached it), by the whole block.
__device__ inline void copy_call(PeerArgs *cmd, const PeerArgs *from)
{
    const volatile uint32_t *src = reinterpret_cast<const volatile uint32_t *>(from);
    uint32_t *dst = reinterpret_cast<uint32_t *>(cmd);
    for (int i = threadIdx.x; i < (int)(sizeof(PeerArgs) / 4); i += blockDim.x) dst[i] = src[i];
}

// Runs Body on the launch's call and, with a mailbox, on every call posted
// after it while the kernel stays resident. The call is read from shared
// memory, the launch's too, so that Body is compiled once. Only block 0
// reads the call from host memory (32 blocks reading it over PCIe took
// ~27 us against ~1 us for one, H200); the others read block 0's copy.
// Thread 0 of each block, at a stream-ordered call's start: counts the
// block in, then reads the counters its predecessor left and sets
// cmd->epoch0. The count comes before the read of `closed`, so that the
// host, which sets `closed` and then waits for no block to be running,
// never misses one that read it open.
__device__ inline StreamStart begin_stream_call(PeerArgs *cmd, StreamCalls *sc)
{
    atomicAdd(&sc->active, 1);
    __threadfence();
    const volatile StreamCalls *v = sc;
    StreamStart s = stream_start(v->epoch, v->ll_flag, v->closed, (cmd->stream_epochs & ~kStreamEager) == 0);
    if (s.verdict == kStreamClosed) {
        atomicSub(&sc->active, 1);
    } else if (s.verdict == kStreamExhausted) {
        atomicCAS(cmd->error, 0, kErrorFlagsExhausted);
    } else {
        cmd->epoch0 = s.epoch0;
    }
    return s;
}

// ... and at its end, after all the block's threads: the last block out
// moves the counters on for the next call of the stream, which starts only
// after this kernel has ended.
__device__ inline void end_stream_call(const PeerArgs &cmd, StreamCalls *sc, const StreamStart &s)
{
    __syncthreads();
    if (threadIdx.x != 0) return;
    __threadfence();
    if (atomicAdd(&sc->blocks_out, 1u) == gridDim.x - 1) {
        const uint64_t epochs = cmd.stream_epochs & ~kStreamEager;
        StreamNext n = stream_next(sc->epoch, sc->ll_flag, epochs == 0, s, epochs);
        sc->epoch = n.epoch;
        sc->ll_flag = n.ll_flag;
        sc->calls++;
        if (cmd.stream_epochs & kStreamEager) sc->eager_done++;
        sc->blocks_out = 0;
        __threadfence();
    }
    atomicSub(&sc->active, 1);
}

// A stream-ordered call on a team with registered windows (cmd.windows) may
// switch to its zero-copy plan (take_windows, kernels/windows.cuh): every
// rank reads the same posts and switches alike. It still moves the stream's
// counters on by the planned call's epochs, alike on every rank.
// ZeroCopy nullptr: the kernel has no zero-copy body, and the host sets no
// windows for its calls (core/windows.cpp, stream_windows).
template <void (*Body)(const PeerArgs &), void (*ZeroCopy)(const PeerArgs &)>
__device__ void run_stream_call(const PeerArgs &cmd)
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

template <void (*Body)(const PeerArgs &), void (*ZeroCopy)(const PeerArgs &)> __device__ void serve(const PeerArgs &first)
{
    __shared__ PeerArgs cmd;
    __shared__ int more;
    __shared__ StreamStart stream;
    copy_call(&cmd, &first);
    if (first.stream_calls) { // one call, its epoch0 from device memory
        __syncthreads();
        if (threadIdx.x == 0) stream = begin_stream_call(&cmd, first.stream_calls);
        __syncthreads();
        if (stream.verdict == kStreamClosed) return; // nothing of the team may be touched
    }
    const Residency &r = first.resident;
    PeerArgs *posted = reinterpret_cast<PeerArgs *>(first.scratch[first.rank] + kResidentCallOffset);
    uint64_t word = doorbell_of(r, r.seq);
    for (;;) {
        __syncthreads();
        if (!first.stream_calls) Body(cmd);
        else if (stream.verdict == kStreamRun) run_stream_call<Body, ZeroCopy>(cmd);
        if (first.stream_calls) {
            end_stream_call(cmd, first.stream_calls, stream);
            return;
        }
        if (!r.mailbox) return;
        // Its barrier also keeps thread 0 from writing `more` and the
        // threads from writing `cmd` while others still read them.
        report_done(r, cmd.resident.seq);
        if (threadIdx.x == 0) more = next_call(first, &word);
        __syncthreads();
        if (!more) return;
        if (blockIdx.x == 0) {
            copy_call(&cmd, &r.mailbox->cmd);
            __syncthreads();
            copy_call(posted, &cmd);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();
                gpu_store_release_sys(decision_of(first), decision_word(r.gen, false, word));
            }
        } else {
            copy_call(&cmd, posted);
        }
    }
}

} // namespace gpucoll
