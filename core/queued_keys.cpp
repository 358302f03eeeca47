// The ring of queued calls' keys (queued_keys.hpp says why).
#include "queued_keys.hpp"

#include <string.h>

namespace gpucoll {

void post_queued_key(QueuedKeyRing &ring, uint64_t qseq, const CallKey &key)
{
    const int i = (int)(qseq % kQueuedKeys);
    // A reader that copies the key while this runs sees 0, or a seq that
    // changed under its copy, and reads again later.
    ring.seq[i].store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    memcpy(&ring.key[i], &key, sizeof key);
    ring.seq[i].store(qseq, std::memory_order_release);
}

PeerKey read_queued_key(const QueuedKeyRing &ring, uint64_t qseq, CallKey *out)
{
    const int i = (int)(qseq % kQueuedKeys);
    const uint64_t before = ring.seq[i].load(std::memory_order_acquire);
    if (before > qseq) return PeerKey::Gone;
    if (before != qseq) return PeerKey::NotYet; // earlier, or 0 while rewritten
    memcpy(out, &ring.key[i], sizeof *out);
    std::atomic_thread_fence(std::memory_order_acquire);
    // Anything else now is the rewrite for a later call, begun under the copy.
    return ring.seq[i].load(std::memory_order_relaxed) == qseq ? PeerKey::Read : PeerKey::Gone;
}

bool check_queued_keys(const QueuedKeyRing *const *rings, int nranks, int me, uint64_t posted, QueuedCheck *c)
{
    while (!c->mismatch && c->checked < posted) {
        const uint64_t q = c->checked + 1;
        CallKey keys[kMaxPeers];
        bool gone = false;
        for (int r = 0; r < nranks; r++) {
            PeerKey k = read_queued_key(*rings[r], q, &keys[r]);
            if (k == PeerKey::NotYet) return false; // later
            gone |= k == PeerKey::Gone;
        }
        c->checked = q;
        if (gone) {
            c->unchecked++;
            continue;
        }
        KeyVerdict v = compare_keys(keys, nranks, me);
        if (v != KeyVerdict::Match) {
            c->mismatch = q;
            c->verdict = v;
            return true;
        }
    }
    return false;
}

} // namespace gpucoll
