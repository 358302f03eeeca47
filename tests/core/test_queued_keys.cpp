// The keys of queued calls (core/queued_keys.cpp): ranks that settle the
// same calls from the same rings reach the same verdicts, a peer that has
// not posted yet is read again, a slot a fast peer overwrote goes unchecked
// rather than compared, and a reader never takes a torn key (a writer
// rewriting the slot under 4 readers).
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "queued_keys.hpp"

using namespace gpucoll;

#include "../common/check.h"

namespace {

CallKey key_of(size_t count, int root = 0, gpucoll_op_t op = GPUCOLL_OP_SUM)
{
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.count = count;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = op;
    a.root = root;
    a.local_ok = 1;
    return call_key(a, 4);
}

struct Team {
    int n;
    std::vector<std::unique_ptr<QueuedKeyRing>> rings;
    std::vector<const QueuedKeyRing *> view;
    explicit Team(int ranks) : n(ranks)
    {
        for (int r = 0; r < n; r++) {
            rings.emplace_back(new QueuedKeyRing{});
            view.push_back(rings.back().get());
        }
    }
};

void settles_alike()
{
    Team t(4);
    // Calls 1-3 alike; call 4: rank 2 has another count; the others post 5 too.
    for (uint64_t q = 1; q <= 5; q++)
        for (int r = 0; r < t.n; r++) post_queued_key(*t.rings[r], q, key_of(q == 4 && r == 2 ? 999 : 1000));
    for (int me = 0; me < t.n; me++) {
        QueuedCheck c;
        CHECK(check_queued_keys(t.view.data(), t.n, me, 5, &c), "rank %d found no mismatch", me);
        CHECK(c.mismatch == 4 && c.checked == 4, "rank %d: mismatch %llu checked %llu", me,
              (unsigned long long)c.mismatch, (unsigned long long)c.checked);
        CHECK(c.verdict != KeyVerdict::Match);
        // Found once: the next pass stays on it.
        CHECK(!check_queued_keys(t.view.data(), t.n, me, 5, &c) && c.mismatch == 4);
    }
    // An op or a root alone differing is a mismatch too (a silent wrong result otherwise).
    Team u(2);
    post_queued_key(*u.rings[0], 1, key_of(64, 0, GPUCOLL_OP_SUM));
    post_queued_key(*u.rings[1], 1, key_of(64, 0, GPUCOLL_OP_MAX));
    QueuedCheck c;
    CHECK(check_queued_keys(u.view.data(), 2, 0, 1, &c) && c.mismatch == 1);
    post_queued_key(*u.rings[0], 2, key_of(64, 0));
    post_queued_key(*u.rings[1], 2, key_of(64, 1));
    QueuedCheck d;
    d.checked = 1;
    CHECK(check_queued_keys(u.view.data(), 2, 1, 2, &d) && d.mismatch == 2);
}

void waits_for_late_peers_and_skips_overwritten()
{
    Team t(3);
    QueuedCheck c;
    for (int r = 0; r < 2; r++) post_queued_key(*t.rings[r], 1, key_of(10));
    CHECK(!check_queued_keys(t.view.data(), 3, 0, 1, &c) && c.checked == 0, "settled before rank 2 posted");
    post_queued_key(*t.rings[2], 1, key_of(10));
    CHECK(!check_queued_keys(t.view.data(), 3, 0, 1, &c) && c.checked == 1 && c.mismatch == 0);
    // Rank 1 runs kQueuedKeys + 1 calls ahead: its key of call 2 is gone.
    for (uint64_t q = 2; q <= 2 + kQueuedKeys; q++) post_queued_key(*t.rings[1], q, key_of(q == 2 ? 11 : 10));
    for (int r : {0, 2}) post_queued_key(*t.rings[r], 2, key_of(10));
    CHECK(!check_queued_keys(t.view.data(), 3, 0, 2, &c) && c.checked == 2 && c.unchecked == 1 && c.mismatch == 0);
    CallKey k;
    CHECK(read_queued_key(*t.rings[1], 2, &k) == PeerKey::Gone);
    CHECK(read_queued_key(*t.rings[1], 2 + kQueuedKeys, &k) == PeerKey::Read);
    CHECK(read_queued_key(*t.rings[1], 3 + kQueuedKeys, &k) == PeerKey::NotYet);
}

void no_torn_reads()
{
    QueuedKeyRing ring{};
    std::atomic<bool> stop{false};
    std::atomic<long> reads{0}, torn{0};
    // Every key the writer posts has count == root * 7 + 3, so a mix of two
    // keys shows.
    auto key_for = [](uint64_t q) {
        CallKey k = key_of((size_t)(q % 1000) * 7 + 3, (int)(q % 1000));
        for (int i = 0; i < kMaxPeers; i++) k.counts[i] = q;
        return k;
    };
    std::thread writer([&] {
        for (uint64_t q = 1; q <= 200000; q++) post_queued_key(ring, q, key_for(q));
        stop = true;
    });
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; t++)
        readers.emplace_back([&] {
            while (!stop) {
                for (uint64_t q = 1; q <= kQueuedKeys; q++) {
                    uint64_t s = ring.seq[q % kQueuedKeys].load(std::memory_order_acquire);
                    if (!s) continue;
                    CallKey k;
                    if (read_queued_key(ring, s, &k) != PeerKey::Read) continue;
                    reads++;
                    bool ok = k.count == (uint64_t)k.root * 7 + 3 && k.root == (int)(s % 1000);
                    for (int i = 0; i < kMaxPeers; i++) ok &= k.counts[i] == s;
                    if (!ok) torn++;
                }
            }
        });
    writer.join();
    for (auto &r : readers) r.join();
    CHECK(torn == 0, "%ld torn keys in %ld reads", torn.load(), reads.load());
    CHECK(reads > 0);
}

} // namespace

int main()
{
    settles_alike();
    waits_for_late_peers_and_skips_overwritten();
    no_torn_reads();
    std::printf("queued_keys: %d failed\n", failures);
    return failures ? 1 : 0;
}
