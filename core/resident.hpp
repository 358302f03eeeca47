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
        bool queued = false;   // by start_queued (counted apart)
        Clock::time_point queried{};
        uint64_t seq() const { return k.resident.seq; }
    };

    // Mailbox, stream and event on the current device.
    gpucoll_status_t init();
    // Tells a resident kernel to leave, waits until it has, frees everything.
    void release();
    // Whether init() succeeded (until release()).
    bool ready() const { return mb_ && stream_ && user_work_ && served_; }

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
    // One look at call c, as finish() waits: true once every block is done
    // with it or it failed (*st says which). `spin` counts the looks; the
    // stream is asked every 1024th (a kernel that left without serving a
    // posted call is launched anew for it then).
    bool poll(Call &c, unsigned spin, gpucoll_status_t *st);
    // Takes the call back: its blocks stop waiting for peers and report it
    // done (ResidentMailbox::withdrawn), or the kernel left before taking
    // it. Returns once no block works on it; what it stored into the peers'
    // memory is the caller's to clear. Never launches.
    gpucoll_status_t withdraw(Call &c);

    // Tells a resident kernel to leave without waiting for it (before a
    // launch on another stream that wants the SMs it holds).
    void retire();

    // Queued calls (MPI_I<coll>, persistent starts), at most one at a time:
    // start() of a call no other rank waits on the host for. Its end is
    // seen by queued_over(); a failure is kept, and every later look
    // reports it (the team's GPU path is out of step then).
    bool queued_out() const { return queued_out_; }
    gpucoll_status_t start_queued(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                                  int idle_us, int timeout_ms, bool ordered);
    bool queued_over(unsigned spin, gpucoll_status_t *st);
    // Tells the kernel to leave, and has work queued on `s` from now on
    // start only once the queued call (if one is out) is done on this GPU:
    // the kernel that serves it ends on its stream after it, whatever the
    // peers do, so this never waits for a peer. (A posted call is first
    // seen taken by the kernel, or launched anew if the kernel had left.)
    gpucoll_status_t order_before(gpuStream_t s);

    // Calls served each way, and seconds spent in them (verbose timing):
    // the legacy stream's query, then post or launch until done; of the
    // calls served by a running kernel, the GPU's own time from seeing the
    // call to the end of its work, and the fence after it (timed only).
    uint64_t reused = 0, launched = 0, timed_calls = 0;
    uint64_t queued_reused = 0, queued_launched = 0; // the same for start_queued's calls
    double query_s = 0, reused_s = 0, launched_s = 0, gpu_work_s = 0, gpu_fence_s = 0;

  private:
    gpucoll_status_t launch(Call &c, bool after_user_work);
    gpucoll_status_t relaunch(Call &c);
    void post_words(const uint64_t *w); // the call's words, word 0 last
    void mark_generation();             // word 0 of gen_, every word tagged seq_
    bool all_done(const Call &c) const; // every block has reported call c
    void add_stamps();

    ResidentMailbox *mb_ = nullptr;
    gpuStream_t stream_ = nullptr;
    gpuEvent_t user_work_ = nullptr;
    gpuEvent_t served_ = nullptr; // order_before's
    Call queued_{};
    bool queued_out_ = false;
    gpucoll_status_t queued_failed_ = GPUCOLL_SUCCESS;
    uint32_t gen_ = 0;
    uint64_t seq_ = 0;
    bool live_ = false;         // a kernel of generation gen_ may still be polling
    uint64_t key_ = 0;          // its kernel and grid
    PeerArgs base_{};           // its launch's arguments
    uint64_t stamped_ = 0;      // the last call whose stamps were counted
    Clock::time_point until_{}; // until when it surely still polls
};

} // namespace gpucoll
