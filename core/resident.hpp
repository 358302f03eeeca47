// The host side of resident kernels (kernels/resident.cuh): a team's small
// calls go to a kernel that is still on the GPU from an earlier call, through
// a mailbox in page-locked host memory, instead of a launch each.
#pragma once

#include <chrono>
#include <stdint.h>

#include "gpu_port.h"
#include "gpucoll_status.h"
#include "resident_call.h"

namespace gpucoll {

class ResidentKernel {
  public:
    using Clock = std::chrono::steady_clock;

    // A call handed to the kernel (start) and not yet waited for (finish)
    // or taken back (withdraw).
    struct Call {
        PeerArgs k{};
        uint64_t key = 0;
        gpucoll_dtype_t dtype{};
        gpucoll_op_t op{};
        int blocks = 0, threads = 0, timeout_ms = 0;
        bool resident = false; // posted to a running kernel, not launched
        Clock::time_point queried{};
    };

    // Mailbox, stream and event on the current device.
    gpucoll_status_t init();
    // Tells a resident kernel to leave, waits until it has, frees everything.
    void release();
    // Whether init() succeeded (until release()).
    bool ready() const { return mb_ && stream_ && user_work_; }

    // Runs call `k` (complete but for k.resident) with `blocks` x `threads`
    // and returns when every block is done with it (or with an error). The
    // call goes to the resident kernel if one of the same kernel, grid and
    // arguments (but those kernels/resident_call.h carries) is still
    // polling and, when `ordered`, nothing queued on the legacy default
    // stream is pending; else to a new launch (ordered after that stream's
    // work when `ordered`) that then stays resident for idle_us. Waits at
    // most timeout_ms. `timed`: the kernel stamps its phases (gpu_* below).
    gpucoll_status_t run(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                         int idle_us, int timeout_ms, bool ordered, bool timed);
    // run() in two halves, so that the host can do other work while the GPU
    // serves the call (a blocking call's agreement: core/team_blocking.cpp).
    // After a successful start, exactly one of finish or withdraw follows.
    gpucoll_status_t start(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads, int idle_us,
                           int timeout_ms, bool ordered, bool timed, Call *c);
    gpucoll_status_t finish(Call &c);
    // Takes the call back: its blocks stop waiting for peers and report it
    // done (ResidentMailbox::withdrawn), or the kernel left before taking
    // it. Returns once no block works on it; what it stored into the peers'
    // memory is the caller's to clear. Never launches.
    gpucoll_status_t withdraw(Call &c);

    // Tells a resident kernel to leave without waiting for it (before a
    // launch on another stream that wants the SMs it holds).
    void retire();

    // Calls served each way, and seconds spent in them (verbose timing):
    // the legacy stream's query, then post or launch until done; of the
    // calls served by a running kernel, the GPU's own time from seeing the
    // call to the end of its work, and the fence after it (timed only).
    uint64_t reused = 0, launched = 0, timed_calls = 0;
    double query_s = 0, reused_s = 0, launched_s = 0, gpu_work_s = 0, gpu_fence_s = 0;

  private:
    gpucoll_status_t launch(Call &c, bool after_user_work);
    gpucoll_status_t relaunch(Call &c);
    void post_words(const uint64_t *w); // the call's words, word 0 last
    void mark_generation();             // word 0 of gen_, every word tagged seq_
    bool all_done(int blocks) const;    // every block has reported call seq_
    void add_stamps();

    ResidentMailbox *mb_ = nullptr;
    gpuStream_t stream_ = nullptr;
    gpuEvent_t user_work_ = nullptr;
    uint32_t gen_ = 0;
    uint64_t seq_ = 0;
    bool live_ = false;         // a kernel of generation gen_ may still be polling
    uint64_t key_ = 0;          // its kernel and grid
    PeerArgs base_{};           // its launch's arguments
    uint64_t stamped_ = 0;      // the last call whose stamps were counted
    Clock::time_point until_{}; // until when it surely still polls
};

} // namespace gpucoll
