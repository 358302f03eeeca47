// Registered windows of a team (coll_gpu_register; kernels/windows.h says
// how the kernels use them): buffers every rank has mapped every other
// rank's, collectively, so that queued calls on them run zero-copy from
// their first launch, with no host wait at the call. Internal to the core.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>

#include "auto_windows.hpp"
#include "gpucoll_core.h"
#include "ipc_cache.hpp"
#include "peer_args.h"

struct gpucoll_team;

namespace gpucoll {

struct Plan;

// This rank's windows: where each lies, the generation it was registered
// under. Pure bookkeeping, alike on every rank where every registration
// and deregistration is (collective, and each succeeded or failed on every
// rank alike); unit-tested without a GPU.
class WindowBook {
public:
    // The slot the next registration takes (the lowest free), or -1.
    int free_slot() const;
    // Records slot w as [base, base + bytes) and returns its generation.
    uint32_t add(int w, const char *base, size_t bytes);
    void remove(int w);
    bool used(int w) const { return w >= 0 && w < kMaxWindows && used_[w]; }
    int count() const { return count_; }
    // The descriptor of [p, p + bytes) if it lies in one window, 16-byte
    // aligned; 0 otherwise.
    uint64_t describe(const void *p, size_t bytes) const;

private:
    const char *base_[kMaxWindows] = {};
    size_t bytes_[kMaxWindows] = {};
    uint32_t gen_[kMaxWindows] = {};
    bool used_[kMaxWindows] = {};
    int count_ = 0;
    uint32_t next_gen_ = 1;
};

// The team's windows: the book, the table in device memory with its host
// mirror, each window's mappings of the peers' buffers, the exports.
struct TeamWindows {
    WindowBook book;
    WindowTable host{};
    WindowTable *device = nullptr;
    std::unique_ptr<IpcPins> pins[kMaxWindows];
    AutoWindows autow;
};

// At the GPU set-up (whose outcome the ranks agree on): where auto_windows
// is on, the table that the exports are mapped into.
gpucoll_status_t windows_setup(gpucoll_team *t);
// Collective over the team (every rank, in the same order as its other
// registrations and deregistrations; not concurrently with this rank's
// other calls on the team). Registers [buf, buf + bytes) of this rank:
// *id is the window, alike on every rank. Fails alike on every rank
// (GPUCOLL_ERR_INVALID, naming a rank whose buffer is not device memory of
// the team's GPU, not 16-byte aligned or not exportable, or could not be
// mapped; GPUCOLL_ERR_NO_MEMORY: all slots taken), with no window made.
// GPUCOLL_ERR_UNSUPPORTED where the team's GPU side is not set up.
gpucoll_status_t windows_register(gpucoll_team *t, void *buf, size_t bytes, int *id);
// Collective likewise: waits for this rank's queued kernels, then for
// every rank to get as far, and unmaps window `id`. From its return the
// buffer may be freed; queued calls on it run through scratch.
gpucoll_status_t windows_deregister(gpucoll_team *t, int id);
// The zero-copy plan a call without a host agreement may switch to in
// windows, and its grid; false where it has none. Alike on every rank: from
// the call's kind, size, type and op alone.
bool window_zero_copy_plan(const gpucoll_team *t, const gpucoll_coll_args_t &a, Plan *zc, int *blocks);
// Whether a call without a host agreement whose buffers lie in windows
// should switch to its zero-copy plan (alike on every rank: from the call's
// kind and size and the configuration): allreduce always (its candidates
// start at direct_min_bytes), bcast and allgather from
// window_move_min_bytes of output (bcast between 2 ranks from 8 times
// that), reduce always (its candidate starts at direct_min_bytes, from 3
// ranks), reduce_scatter_block and alltoall likewise from direct_min_bytes
// of all ranks' blocks (between 2 ranks from 4 times that), nothing else.
bool window_worth(const gpucoll_coll_args_t &a, const gpucoll_config_t &cfg, int nranks);
// For the launch of a queued call planned as `plan` (not zero-copy): where
// the team has windows and the call could run zero-copy (`zc`, planned
// with mapped buffers), sets k's window fields so that the kernel takes
// `zc` when every rank's buffers are in windows. Returns whether it did
// (the grid must then be the larger of the two plans').
// With coll_gpu_auto_windows, buffers in no window are exported and the
// peers' new exports mapped (core/auto_windows.hpp), also at a capture.
bool windows_args(gpucoll_team *t, const gpucoll_coll_args_t &a, const Plan &zc, PeerArgs *k);
// For a stream-ordered call planned as `plan` with `blocks`: sets k's
// window fields as windows_args does, where the windows the team uses
// (its own or its owner's) could serve the call; returns the grid that
// serves both plans. From the call alone, alike on every rank.
int stream_windows(gpucoll_team *t, const gpucoll_coll_args_t &a, const Plan &plan, int blocks, PeerArgs *k);
// At the team's end, its queue drained: the table and the mappings go.
void windows_release(gpucoll_team *t);

} // namespace gpucoll
