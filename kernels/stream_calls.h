// Stream-ordered calls (core/team_stream.cpp) take their barrier epoch and
// LL flag from device memory rather than from the kernel's arguments, so
// that a kernel captured once into a CUDA graph runs correctly at every
// replay: each call reads the counters its predecessor on the stream left,
// and the last of its blocks to finish moves them on. Every rank makes the
// same calls in the same order, so the counters stay alike on every rank
// without the host. The decisions are plain functions, shared by the
// kernels (kernels/resident.cuh) and a host simulation (tests/core).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpu_port.h"

namespace gpucoll {

// One per team and rank, in device memory that outlives the team
// (core/team_stream.cpp): a graph launched after its communicator was freed
// finds `closed` and does nothing.
struct alignas(64) StreamCalls {
    uint64_t epoch;      // barrier epoch of the next call (starts at 1: fresh flags hold 0)
    uint64_t calls;      // calls finished
    uint64_t eager_done; // of which launched outside a graph capture (the team's end waits for those)
    uint32_t ll_flag;    // flag of the latest LL call (0: none yet)
    uint32_t blocks_out; // blocks of the running call that have finished
    // One 8-byte word, `active` its low half (stream_gate): a block counts
    // itself in and reads `closed` in one atomic, so that the count and the
    // host's write of `closed` are ordered by the word itself, without a
    // fence between them.
    int32_t active;  // blocks running now: the host waits for 0 at the team's end
    uint32_t closed; // the team is gone: touch nothing of it
};
static_assert(offsetof(StreamCalls, active) % 8 == 0 &&
                  offsetof(StreamCalls, closed) == offsetof(StreamCalls, active) + 4,
              "active and closed make one 8-byte word, active its low half");

// LL flags are 32 bits and never 0; the area cannot be cleared without the
// host, so a team's LL calls stop (with an error) at the last flag rather
// than wrap to flags that old lines may still carry.
constexpr uint32_t kStreamLLFlagLimit = UINT32_MAX; // the last flag a call may take

// PeerArgs::stream_epochs of a call launched outside a capture carries this
// bit (counted in eager_done); the epochs are the other bits.
constexpr uint64_t kStreamEager = 1ull << 63;

enum StreamVerdict : int {
    kStreamRun = 0,       // run the call with epoch0 below
    kStreamClosed = 1,    // the team is gone: return at once
    kStreamExhausted = 2, // no LL flag left: raise kErrorFlagsExhausted, run nothing
};

struct StreamStart {
    int verdict;
    uint64_t epoch0; // PeerArgs::epoch0 of the call: the barrier epoch, or the LL flag
};

// What a call starting now runs with, from the counters its predecessor left.
__host__ __device__ inline StreamStart stream_start(uint64_t epoch, uint32_t ll_flag, uint32_t closed, bool ll)
{
    if (closed) return StreamStart{kStreamClosed, 0};
    if (!ll) return StreamStart{kStreamRun, epoch};
    if (ll_flag >= kStreamLLFlagLimit) return StreamStart{kStreamExhausted, 0};
    return StreamStart{kStreamRun, (uint64_t)ll_flag + 1};
}

struct StreamNext {
    uint64_t epoch;
    uint32_t ll_flag;
};

// The counters for the next call, once every block of this one (which ran
// with `epoch0` and takes `epochs` barrier epochs, or one LL flag) is done.
// An exhausted call leaves them as they were.
__host__ __device__ inline StreamNext stream_next(uint64_t epoch, uint32_t ll_flag, bool ll, const StreamStart &s,
                                                  uint64_t epochs)
{
    if (s.verdict != kStreamRun) return StreamNext{epoch, ll_flag};
    if (ll) return StreamNext{epoch, (uint32_t)s.epoch0};
    return StreamNext{s.epoch0 + epochs, ll_flag};
}

} // namespace gpucoll
