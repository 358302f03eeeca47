// The keys of a team's queued calls: published at each launch, compared as
// the peers' arrive (core/queued_keys.hpp says why and how); and the team's
// retirement after a queued call failed (team_state.hpp).
#include <cstdio>

#include "team_state.hpp"

namespace gpucoll {

uint64_t post_queued_call(gpucoll_team *t, const gpucoll_coll_args_t &a)
{
    const uint64_t qseq = t->queued_posted.load(std::memory_order_relaxed) + 1; // launches on a team are ordered
    post_queued_key(t->shm->ranks[t->rank].qkeys, qseq, call_key(a, t->size));
    t->queued_posted.store(qseq, std::memory_order_release);
    return qseq;
}

bool compare_posted_keys(gpucoll_team *t, const char *calls)
{
    QueuedCheck &c = t->queued_check;
    const uint64_t posted = t->queued_posted.load(std::memory_order_acquire);
    if (c.mismatch || c.checked >= posted) return false;
    const QueuedKeyRing *rings[kMaxPeers];
    for (int r = 0; r < t->size; r++) rings[r] = &t->shm->ranks[r].qkeys;
    const uint64_t unchecked = c.unchecked;
    const bool found = check_queued_keys(rings, t->size, t->rank, posted, &c);
    if (found && config().verbose >= 10)
        fprintf(stderr, "coll:gpu: rank %d: %s: call #%llu: the ranks' arguments differ; the team's kernels stop\n",
                t->rank, calls, (unsigned long long)c.mismatch);
    if (c.unchecked != unchecked && config().verbose >= 10)
        fprintf(stderr, "coll:gpu: rank %d: %llu %s not compared (a peer ran more than %d calls ahead)\n", t->rank,
                (unsigned long long)c.unchecked, calls, kQueuedKeys);
    return found;
}

void settle_queued_keys(gpucoll_team *t)
{
    std::lock_guard<std::mutex> g(t->queued_keys_mu);
    if (!compare_posted_keys(t, "nonblocking or persistent collectives")) return;
    // Every rank that reads the keys finds this and stops its own kernels;
    // the give-up words reach a peer that could not read them (a slot
    // overwritten), whose kernel would otherwise wait for ours.
    if (t->error) __atomic_store_n(t->error, kErrorArgsDiffer, __ATOMIC_RELEASE);
    give_up_peers(t);
    t->broken = true;
}

gpucoll_status_t queued_call_status(gpucoll_team *t, uint64_t qseq)
{
    std::lock_guard<std::mutex> g(t->queued_keys_mu);
    const QueuedCheck c = t->queued_check;
    if (!c.mismatch || qseq < c.mismatch) return GPUCOLL_SUCCESS;
    if (qseq > c.mismatch)
        return gpucoll_fail(GPUCOLL_ERR_MISMATCH,
                            "nonblocking or persistent collective #%llu of this communicator had arguments that differ "
                            "between ranks; the later ones stop",
                            (unsigned long long)c.mismatch);
    if (c.verdict == KeyVerdict::Truncate)
        return gpucoll_fail(GPUCOLL_ERR_TRUNCATE,
                            "nonblocking or persistent collective #%llu: a peer sends more than this rank's arguments "
                            "make room for",
                            (unsigned long long)qseq);
    return gpucoll_fail(GPUCOLL_ERR_MISMATCH,
                        "nonblocking or persistent collective #%llu: the ranks' arguments differ (kind, count, type, "
                        "op, root or counts)",
                        (unsigned long long)qseq);
}

void retire_after_queued_failure(gpucoll_team *t)
{
    if (t->gpu != gpucoll_team::GpuReady) return;
    const int why = t->error ? __atomic_load_n(t->error, __ATOMIC_ACQUIRE) : 0;
    if (!t->broken && why == 0) return;
    if (why == kErrorPeerGone || team_peer_gone(t, 0) >= 0) return;
    // Under the debugging timeout a rank may finish the call an instant
    // before a peer's kernel gives up, see no failure and not retire; the
    // communicator is not usable afterwards there (docs/using.md).
    if (config().timeout_ms > 0) return;
    t->gpu = gpucoll_team::GpuFailed;
    t->broken = t->retired = true;
    t->resident.retire();
    if (config().verbose >= 10)
        fprintf(stderr, "coll:gpu: rank %d: an earlier nonblocking, persistent or enqueued collective of this "
                        "communicator failed; its collectives take the staged route from here on\n",
                t->rank);
}

} // namespace gpucoll
