// A nonblocking or persistent call's plan (core/team_queued.cpp), and the
// switch of persistent plans to zero-copy (core/team_persist.cpp).
#pragma once

#include <memory>

#include "stand_in_pool.hpp"
#include "team_state.hpp"

namespace gpucoll {

// A user buffer the kernels cannot use where it is, and its stand-in on the
// team's GPU: copied in at each launch (`in`), out at completion (`out`).
struct Stand {
    char *user = nullptr;
    StandInPool::Block *temp = nullptr;
    size_t in_bytes = 0, out_bytes = 0; // from the start of the buffer; 0: no copy that way
};

} // namespace gpucoll

struct gpucoll_plan {
    gpucoll_team *team = nullptr;
    gpucoll_coll_args_t a{};
    gpucoll::Plan plan{}, no_ll{}; // no_ll: the same call without the LL kernels (the flag guard), built when needed
    bool have_no_ll = false;
    int blocks = 0, no_ll_blocks = 0;
    gpucoll::Stand sbuf, rbuf;
    const char *src = nullptr; // what the kernel reads and writes (stand-ins where there are)
    char *dst = nullptr;
    uint64_t done_value = 0; // *team->kernels_done reaches it when the latest launch is over
    uint64_t qseq = 0;       // the latest launch's number among the team's queued calls (post_queued_call)
    unsigned polls = 0;      // tests of the latest launch (launch_over)
    bool running = false, launched = false;
    bool on_resident = false; // the latest launch went to the team's resident kernel
    gpucoll_status_t status = GPUCOLL_SUCCESS; // of the latest launch that ended
    gpucoll::PeerAlgo ran{};
    // Persistent plans whose buffers the peers may map (slot >= 0): the
    // plan's number, its slot in every rank's PersistSlot array, and what
    // the switch to zero-copy needs and holds until the plan is freed.
    int slot = -1;
    uint32_t number = 0;
    uint64_t launches = 0;
    bool announced = false, zero_copy = false;
    gpucoll::Plan zc{};
    int zc_blocks = 0;
    std::unique_ptr<gpucoll::IpcPins> pins;
    const char *peer_src[gpucoll::kMaxPeers] = {};
    char *peer_dst[gpucoll::kMaxPeers] = {};
    // A persistent plan's own graph (kernel_launch=graph), set up for its
    // next start while its kernel runs (prepare_same_call); its own, so
    // that the launches of other calls leave its node alone.
    bool persistent = false;
    gpucoll::KernelGraph graph;
    // The zero-copy plan the kernel takes where every rank's buffers are in
    // registered windows (window_plan; found once, from the call alone).
    bool win_checked = false, win_ok = false;
    gpucoll::Plan win_zc{};
    int win_blocks = 0;
};

namespace gpucoll {

// A persistent plan's buffers, published in its slot for the peers to map
// (at creation), and taken out of it (when the plan is freed).
void publish_buffers(gpucoll_plan *p);
void unpublish_buffers(gpucoll_plan *p);
// Whether the plan runs zero-copy from this launch (p->launches) on, decided
// alike on every rank without waiting: sets p->zero_copy.
void zero_copy_from_now(gpucoll_plan *p);

} // namespace gpucoll
