// The keys of stream-ordered calls: each rank publishes the key of every
// call it enqueues outside a capture in its ring of the team's shared memory
// (core/queued_keys.hpp), before the call's kernel, and compares its peers'
// as they arrive, from the enqueue calls, coll_gpu_stream_status and the
// watcher thread: reads only, no host round trip. Enqueued kernels whose
// arguments differ would otherwise wait for each other for good (counts) or
// end with a silent wrong result (op, root).
//
// Why the comparison stops at the first capture: a graph is captured once
// and replayed without host calls, so a rank that replays a graph while a
// peer enqueues the same calls eagerly makes fewer host calls than it, in a
// valid program. Each rank's keys are its eager calls up to its first
// capture; a capture sets its stream_captured flag, which every rank reads
// before comparing, and ends comparisons on the team for good.
#include "team_state.hpp"

namespace gpucoll {

namespace {

bool any_rank_set(const gpucoll_team *t, std::atomic<uint32_t> ShmRank::*flag)
{
    for (int r = 0; r < t->size; r++)
        if ((t->shm->ranks[r].*flag).load(std::memory_order_acquire)) return true;
    return false;
}

} // namespace

void raise_args_differ(gpucoll_team *t)
{
    if (!t->error) return;
    int none = 0;
    __atomic_compare_exchange_n(t->error, &none, kErrorArgsDiffer, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void post_stream_key(gpucoll_team *t, const gpucoll_coll_args_t &a, bool eager)
{
    if (!t->stream_keys_on.load(std::memory_order_acquire)) return;
    if (!eager) {
        // The flag is set before any later key of this rank could be
        // posted, and this rank posts none from here on.
        t->shm->ranks[t->rank].stream_captured.store(1, std::memory_order_release);
        t->stream_keys_on.store(false, std::memory_order_release);
        return;
    }
    (void)post_queued_call(t, a);
}

void settle_stream_keys(gpucoll_team *t)
{
    if (!t->error || !t->shm) return;
    // A rank that found a mismatch tells the others through its flag: one
    // whose ring a fast peer overwrote could not find it itself, and its
    // kernel would wait for a peer kernel that has stopped.
    if (any_rank_set(t, &ShmRank::stream_args_differ)) return raise_args_differ(t);
    if (!t->stream_keys_on.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> g(t->queued_keys_mu);
    if (any_rank_set(t, &ShmRank::stream_captured)) return t->stream_keys_on.store(false, std::memory_order_release);
    if (!compare_posted_keys(t, "enqueued collectives")) return;
    // The communicator's later enqueued calls fail (settled_status).
    t->shm->ranks[t->rank].stream_args_differ.store(1, std::memory_order_release);
    raise_args_differ(t);
}

} // namespace gpucoll
