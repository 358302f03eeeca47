// How a wait on other ranks ends when it does not complete, and what the
// kernels' error word means: one decoding for every mode (blocking, queued,
// stream-ordered), so that each reports a gone peer, a debugging timeout or
// a peer's give-up alike.
#include "team_state.hpp"

namespace gpucoll {

gpucoll_status_t wait_end(gpucoll_team *t, const char *for_what, bool timed_out)
{
    if (timed_out)
        return gpucoll_fail(GPUCOLL_ERR_TIMEOUT, "waited longer than timeout_ms=%d for %s", config().timeout_ms,
                            for_what);
    return peer_gone_error(team_peer_gone(t, 0), for_what);
}

gpucoll_status_t kernel_error(gpucoll_team *t, const char *what)
{
    const int why = t->error ? __atomic_load_n(t->error, __ATOMIC_ACQUIRE) : 0;
    switch (why) {
    case 0: return GPUCOLL_SUCCESS;
    case kErrorPeerGone: {
        const int r = team_peer_gone(t, 0);
        if (r >= 0) return peer_gone_error(r, what);
        return gpucoll_fail(GPUCOLL_ERR_PEER, "%s stopped: this process is exiting", what);
    }
    case kErrorArgsDiffer:
        return gpucoll_fail(GPUCOLL_ERR_MISMATCH,
                            "%s stopped: a nonblocking, persistent or enqueued collective of this communicator had "
                            "arguments that differ between ranks",
                            what);
    case kErrorPeerGaveUp:
        return gpucoll_fail(GPUCOLL_ERR_TIMEOUT, "%s: another rank's kernel gave up waiting (its timeout_ms)", what);
    case kErrorFlagsExhausted:
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL,
                            "%s: this communicator ran %u small enqueued collectives, all its flags: call "
                            "coll_gpu_stream_init on every rank for fresh ones",
                            what, kStreamLLFlagLimit);
    default:
        return gpucoll_fail(GPUCOLL_ERR_TIMEOUT,
                            "%s: a peer's kernel did not reach the barrier within timeout_ms=%d (ranks must make the same "
                            "collectives in the same order)",
                            what, config().timeout_ms);
    }
}

} // namespace gpucoll
