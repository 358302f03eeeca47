/* How the group's waits poll: shared by the files of Group. */
#ifndef GPUCOLL_UCX_WAIT_POLICY_H
#define GPUCOLL_UCX_WAIT_POLICY_H

#include <chrono>
#include <mutex>

namespace gpucoll_ucx {

using Clock = std::chrono::steady_clock;
using WorkerLock = std::lock_guard<std::recursive_mutex>;

/* Idle polls before a wait gives its core away: waits must not starve the
 * peers they wait for when ranks share cores, yet stay low-latency. */
constexpr unsigned kIdlePollsBeforeYield = 64;
/* After a cancel or a forced close, UCX completes requests within a few
 * progress calls; this only bounds the pathological case. */
constexpr int kAbortGraceMs = 2000;
/* How long destroy lets endpoint flushes drain: a best-effort safety net
 * for callers that destroy a group while a peer still finishes the last
 * collective. Data drains into the kernel at once; a flush that takes
 * longer waits for a peer to answer a connection handshake, which a peer
 * that is done with the group may never do (see Group::destroy). */
constexpr int kCloseDrainMs = 100;

// ms <= 0: no deadline (timeout_ms is a debugging bound, off by default:
// a late peer is not an error; a gone one fails its endpoint).
inline Clock::time_point after_ms(int ms)
{
    return ms > 0 ? Clock::now() + std::chrono::milliseconds(ms) : Clock::time_point::max();
}
// The shorter of timeout_ms (0: none) and a fixed grace.
inline int capped_ms(int timeout_ms, int cap_ms) { return timeout_ms > 0 && timeout_ms < cap_ms ? timeout_ms : cap_ms; }

} // namespace gpucoll_ucx
#endif
