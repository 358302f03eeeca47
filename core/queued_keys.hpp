// The arguments of queued calls (nonblocking, persistent starts), compared
// across the team without a host round trip.
//
// A blocking call compares every rank's arguments in its agreement before
// any kernel runs. Queued calls have no agreement: each rank launches on its
// own, so ranks whose arguments differ would run kernels that do not match
// (a hang where the counts differ, a silent wrong result where only the op
// or root does). Instead each rank publishes the key of every queued call in
// a ring in the team's shared memory before it launches the call's kernel,
// and reads its peers' keys of that call while it tests or waits for the
// call, or drains its queue: reads only, never a wait. Every rank reads the
// same n keys, so all reach the same verdict (compare_keys); on a mismatch
// each rank stops its own kernel through the team's error word and fails the
// call, and the team takes no further queued call until a blocking call
// retires its GPU path (team_queued.cpp says why).
//
// A peer more than kQueuedKeys calls ahead has overwritten the key a slower
// rank has not read yet: that call goes unchecked (counted, said at verbose
// 10). A peer that has not launched the call yet is read again later.
// Pure logic (no GPU), unit-tested in tests/core/test_queued_keys.cpp.
#pragma once

#include <stdint.h>

#include <atomic>

#include "call_check.hpp"

namespace gpucoll {

constexpr int kQueuedKeys = 64;

// Set by the host in the team's error word (PeerArgs::error) when a queued
// call's keys differ: every kernel of the team stops (kernels/peer_args.h
// lists the codes the kernels set).
constexpr int kErrorArgsDiffer = 5;
static_assert(kErrorArgsDiffer != kErrorTimeout && kErrorArgsDiffer != kErrorPeerGaveUp &&
                  kErrorArgsDiffer != kErrorFlagsExhausted && kErrorArgsDiffer != kErrorPeerGone,
              "a code of its own");

// One rank's ring, in its ShmRank. seq[i] is the queued call whose key is in
// key[i] (numbered from 1), or 0 while it is being rewritten.
struct QueuedKeyRing {
    std::atomic<uint64_t> seq[kQueuedKeys];
    CallKey key[kQueuedKeys];
};

// Publishes the key of this rank's queued call `qseq` (the writer is the
// ring's owner alone).
void post_queued_key(QueuedKeyRing &ring, uint64_t qseq, const CallKey &key);

enum class PeerKey {
    NotYet, // the peer has not posted call `qseq` yet (or is rewriting its slot)
    Read,   // *out holds it
    Gone    // overwritten by a later call: not checkable
};
PeerKey read_queued_key(const QueuedKeyRing &ring, uint64_t qseq, CallKey *out);

// What a rank knows of its queued calls' keys so far.
struct QueuedCheck {
    uint64_t checked = 0;  // every call up to this one is settled (matched, unchecked or mismatched)
    uint64_t mismatch = 0; // the first call whose keys differ (0: none)
    KeyVerdict verdict = KeyVerdict::Match; // of `mismatch`, for this rank
    uint64_t unchecked = 0; // calls whose keys a peer overwrote first
};

// Settles this rank's posted calls (up to `posted`) in order, as far as the
// peers' keys are there: rings[r] is rank r's ring. Returns true when it
// found the first mismatch in this pass (the caller stops its kernels).
bool check_queued_keys(const QueuedKeyRing *const *rings, int nranks, int me, uint64_t posted, QueuedCheck *c);

} // namespace gpucoll
