// The host side of resident kernels (kernels/resident.cuh): a team's small
// calls go to a kernel that is still on the GPU from an earlier call, through
// a mailbox in page-locked host memory, instead of a launch each.
#pragma once

#include <chrono>
#include <stdint.h>

#include "gpu_port.h"
#include "gpucoll_status.h"
#include "peer_args.h"

namespace gpucoll {

class ResidentKernel {
  public:
    // Mailbox, stream and event on the current device.
    gpucoll_status_t init();
    // Tells a resident kernel to leave, waits until it has, frees everything.
    void release();
    // Whether init() succeeded (until release()).
    bool ready() const { return mb_ && stream_ && user_work_; }

    // Runs call `k` (complete but for k.resident) with `blocks` x `threads`
    // and returns when every block is done with it (or with an error). The
    // call goes to the resident kernel if one of the same kernel and grid is
    // still polling and nothing queued on the legacy default stream is
    // pending, else to a new launch that is ordered after that stream's work
    // and then stays resident for idle_us. Waits at most timeout_ms.
    gpucoll_status_t run(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                         int idle_us, int timeout_ms);

    // Tells a resident kernel to leave without waiting for it (before a
    // launch on another stream that wants the SMs it holds).
    void retire();

    // Calls served each way, and seconds spent in them (verbose timing):
    // the legacy stream's query, then post or launch until done.
    uint64_t reused = 0, launched = 0;
    double query_s = 0, reused_s = 0, launched_s = 0;

  private:
    using Clock = std::chrono::steady_clock;
    gpucoll_status_t launch(PeerArgs &k, uint64_t key, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks,
                            int threads, bool after_user_work);
    gpucoll_status_t relaunch(PeerArgs &k, uint64_t key, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks,
                              int threads, bool *resident);
    void post_doorbell();
    bool all_done(int blocks) const; // every block has reported call seq_

    ResidentMailbox *mb_ = nullptr;
    gpuStream_t stream_ = nullptr;
    gpuEvent_t user_work_ = nullptr;
    uint32_t gen_ = 0;
    uint64_t seq_ = 0;
    bool live_ = false;         // a kernel of generation gen_ may still be polling
    uint64_t key_ = 0;          // its kernel and grid
    Clock::time_point until_{}; // until when it surely still polls
};

} // namespace gpucoll
