// Bookkeeping of the IPC cache (core/ipc_cache.hpp) without a GPU: the LRU
// that decides which peer mappings stay open (by count and by bytes), the
// notices through which an owner tells its peers which of its allocations
// it freed (core/ipc_notices.hpp), and the zero-copy rows of the algorithm
// table.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "algo_select.hpp"
#include "ipc_cache.hpp"
#include "algo_forcing.h"

using namespace gpucoll;

#include "../common/check.h"

namespace {

using Key = std::pair<int, unsigned long long>;
constexpr uint64_t kNoBudget = ~0ull;

// Recently used entries survive, the least recently used one goes first.
void test_lru()
{
    Lru<Key, int> lru(3);
    std::pair<Key, int> gone;
    CHECK(!lru.insert({0, 1}, 10, &gone));
    CHECK(!lru.insert({0, 2}, 20, &gone));
    CHECK(!lru.insert({1, 1}, 30, &gone)); // same buffer id, other peer: another entry
    CHECK(lru.find({0, 1}) && *lru.find({0, 1}) == 10);
    CHECK(lru.insert({0, 3}, 40, &gone));
    CHECK(gone.first == Key(0, 2) && gone.second == 20);
    CHECK(!lru.find({0, 2}));
    CHECK(lru.size() == 3);

    // 100,000 alloc/free cycles: every buffer id is new (the driver never
    // reuses one), so every cycle maps and, once full, unmaps exactly one:
    // the number held never exceeds the bound, and nothing is unmapped twice.
    Lru<Key, int> cycle(64);
    std::set<Key> open;
    long unmapped = 0;
    for (unsigned long long id = 1; id <= 100000; id++) {
        for (int peer = 0; peer < 3; peer++) {
            if (cycle.find({peer, id})) continue;
            open.insert({peer, id});
            if (cycle.insert({peer, id}, 0, &gone)) {
                CHECK(open.erase(gone.first) == 1);
                unmapped++;
            }
            CHECK(cycle.size() <= 64);
        }
    }
    CHECK(open.size() == 64 && cycle.size() == 64);
    CHECK(unmapped == 3 * 100000 - 64);
}

// Pins: a mapping some call still uses is never handed back for closing
// while pinned; the bound then holds again at the unpin that allows it, and
// a pin taken meanwhile finds the mapping instead of mapping it twice.
void test_pins()
{
    PinnedLru<Key, int> pc(2, kNoBudget);
    std::vector<int> closed;
    pc.insert_pinned({0, 1}, 10, 1, &closed); // call A maps buffer 1 and 2
    pc.insert_pinned({0, 2}, 20, 1, &closed);
    pc.insert_pinned({0, 3}, 30, 1, &closed); // call B: over the count, but all pinned
    CHECK(closed.empty() && pc.size() == 3);
    CHECK(pc.pin({0, 1}) && *pc.pin({0, 1}) == 10); // two pins more, 1 the most recent
    pc.unpin({0, 1}, &closed);
    pc.unpin({0, 1}, &closed);
    CHECK(closed.empty() && pc.size() == 3);
    pc.unpin({0, 1}, &closed); // A's own pin was the last: the only unpinned one goes
    CHECK(closed == std::vector<int>{10} && pc.size() == 2 && !pc.pin({0, 1}));
    pc.unpin({0, 2}, &closed); // within the bound again: stays open
    CHECK(closed.size() == 1);
    // An unpin is no use: 2 stays the least recent, and the next insert closes it at once.
    pc.insert_pinned({0, 4}, 40, 1, &closed);
    CHECK(closed.size() == 2 && closed[1] == 20);
    pc.unpin({0, 3}, &closed);
    pc.unpin({0, 4}, &closed);
    // Same allocation twice in one call (in place): two pins, two unpins.
    CHECK(pc.pin({0, 4}) && pc.pin({0, 4}));
    pc.insert_pinned({0, 5}, 50, 1, &closed); // 3 was unpinned
    CHECK(closed.size() == 3 && closed[2] == 30);
    pc.insert_pinned({0, 6}, 60, 1, &closed); // 4 pinned twice, 5 once
    CHECK(closed.size() == 3 && pc.size() == 3);
    pc.unpin({0, 4}, &closed);
    CHECK(closed.size() == 3);
    pc.unpin({0, 4}, &closed);
    CHECK(closed.size() == 4 && closed[3] == 40);
    std::vector<int> drained;
    pc.drain([&drained](int v) { drained.push_back(v); });
    CHECK(drained.size() == 2 && pc.size() == 0 && pc.bytes() == 0);
}

// The byte budget: least recently used unpinned mappings go first, pinned
// ones never, one larger than the whole budget lives while pinned and no
// longer; the bytes counted are always those of the open mappings.
void test_byte_budget()
{
    PinnedLru<Key, int> pb(64, 100);
    std::vector<int> closed;
    pb.insert_pinned({0, 1}, 1, 40, &closed);
    pb.unpin({0, 1}, &closed);
    pb.insert_pinned({0, 2}, 2, 40, &closed);
    pb.unpin({0, 2}, &closed);
    CHECK(closed.empty() && pb.bytes() == 80);
    CHECK(pb.pin({0, 1})); // 1 the most recent: 2 goes first
    pb.unpin({0, 1}, &closed);
    pb.insert_pinned({0, 3}, 3, 40, &closed); // 120 bytes
    CHECK(closed == std::vector<int>{2} && pb.bytes() == 80 && pb.size() == 2, "bytes %llu",
          (unsigned long long)pb.bytes());
    pb.unpin({0, 3}, &closed);
    closed.clear();
    // A call holds 1 and 3 and maps 4: over the budget, nothing unpinned to close.
    CHECK(pb.pin({0, 1}) && pb.pin({0, 3}));
    pb.insert_pinned({0, 4}, 4, 50, &closed);
    CHECK(closed.empty() && pb.bytes() == 130 && pb.size() == 3);
    pb.unpin({0, 1}, &closed); // back under the budget by closing 1 alone
    CHECK(closed == std::vector<int>{1} && pb.bytes() == 90);
    pb.unpin({0, 3}, &closed);
    pb.unpin({0, 4}, &closed);
    CHECK(closed.size() == 1 && pb.bytes() == 90 && pb.size() == 2);
    // 250 bytes, more than the budget: mapped anyway (a call needs it); the
    // others stay, since closing them could not make room for it.
    closed.clear();
    pb.insert_pinned({0, 5}, 5, 250, &closed);
    CHECK(closed.empty() && pb.bytes() == 340 && pb.size() == 3);
    CHECK(pb.pin({0, 5})); // in place: pinned twice
    pb.unpin({0, 5}, &closed);
    CHECK(closed.empty() && pb.bytes() == 340);
    pb.insert_pinned({0, 6}, 6, 20, &closed); // another call's, while 5 is pinned: 3 goes
    pb.unpin({0, 6}, &closed);
    CHECK(closed == std::vector<int>{3} && pb.bytes() == 320, "bytes %llu", (unsigned long long)pb.bytes());
    pb.unpin({0, 5}, &closed); // its last pin: closed at once, the others stay
    CHECK(closed.size() == 2 && closed[1] == 5 && pb.bytes() == 70 && pb.size() == 2);
    CHECK(pb.pin({0, 6}) && pb.pin({0, 4}) && !pb.pin({0, 5}));
}

// Freed allocations: a notice closes an unpinned mapping at once, a pinned
// one at its last unpin (however far under the bounds), and nothing else.
void test_forget()
{
    PinnedLru<Key, int> pf(64, 1000);
    std::vector<int> closed;
    pf.insert_pinned({7, 1}, 71, 10, &closed);
    pf.unpin({7, 1}, &closed);
    pf.insert_pinned({7, 2}, 72, 10, &closed); // a call in flight reads through it
    pf.insert_pinned({8, 1}, 81, 10, &closed); // same id, another owner
    pf.unpin({8, 1}, &closed);
    pf.insert_pinned({7, 3}, 73, 10, &closed);
    pf.unpin({7, 3}, &closed);
    auto freed_12 = [](const Key &k) { return k.first == 7 && (k.second == 1 || k.second == 2); };
    pf.forget_if(freed_12, &closed);
    CHECK(closed == std::vector<int>{71} && pf.size() == 3 && pf.bytes() == 30);
    pf.forget_if(freed_12, &closed); // the same notice again (another team): nothing more
    CHECK(closed.size() == 1);
    pf.unpin({7, 2}, &closed);
    CHECK(closed == (std::vector<int>{71, 72}) && pf.size() == 2 && pf.bytes() == 20);
    CHECK(pf.pin({8, 1}) && pf.pin({7, 3}) && !pf.pin({7, 1}));
}

// What a random interleaving of many threads' calls must keep: every value
// closed exactly once, never while pinned, a freed one and one larger than
// the budget as soon as they are unpinned; and whenever the count or the
// bytes of the others are over their bound, no open mapping is left
// unpinned.
struct PinModel {
    std::map<Key, int> pins;             // what the calls in flight hold
    std::map<Key, uint64_t> open_bytes;  // mapped and not closed
    std::set<Key> freed;                 // noticed freed, open until unpinned
    long opened = 0, closed = 0;
    static int value(const Key &k) { return (int)(k.first * 100 + k.second); }
    static Key key(int v) { return Key{v / 100, (unsigned long long)(v % 100)}; }
    void saw_closed(const std::vector<int> &vs, size_t from)
    {
        for (size_t i = from; i < vs.size(); i++) {
            Key k = key(vs[i]);
            CHECK(open_bytes.erase(k) == 1 && pins[k] == 0, "closed %d while pinned or twice", vs[i]);
            freed.erase(k);
            closed++;
        }
    }
};

void test_random_pins()
{
    const size_t cap = 4;
    const uint64_t budget = 150;
    PinnedLru<Key, int> pc(cap, budget);
    PinModel m;
    unsigned long long state = 12345;
    auto rnd = [&state](unsigned n) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (unsigned)(state >> 33) % n;
    };
    std::vector<std::vector<Key>> calls(6);
    std::vector<int> closed;
    for (int step = 0; step < 200000; step++) {
        auto &c = calls[rnd(6)];
        size_t before = closed.size();
        if (rnd(50) == 0) { // an owner's notice: one of its buffers is freed
            Key k{(int)rnd(3), rnd(10)};
            pc.forget_if([&k](const Key &q) { return q == k; }, &closed);
            if (m.open_bytes.count(k)) m.freed.insert(k);
        } else if (c.empty() || (c.size() < 4 && rnd(2))) {
            Key k{(int)rnd(3), rnd(10)};
            if (!pc.pin(k)) {
                CHECK(!m.open_bytes.count(k));
                uint64_t bytes = rnd(20) ? 1 + rnd(100) : budget + 1 + rnd(100);
                m.open_bytes[k] = bytes;
                m.opened++;
                m.pins[k]++;
                pc.insert_pinned(k, PinModel::value(k), bytes, &closed);
            } else {
                m.pins[k]++;
            }
            c.push_back(k);
        } else { // the call is over: unpin all it took
            for (const Key &k : c) {
                m.pins[k]--;
                size_t at = closed.size();
                pc.unpin(k, &closed);
                if (m.pins[k] == 0 && m.freed.count(k))
                    CHECK(closed.size() > at && std::count(closed.begin() + at, closed.end(), PinModel::value(k)),
                          "freed %d not closed at its last unpin", PinModel::value(k));
            }
            c.clear();
        }
        m.saw_closed(closed, before);
        uint64_t bytes = 0, fitting = 0; // all, and those of mappings not larger than the budget
        bool any_unpinned = false, big_unpinned = false;
        for (auto &e : m.open_bytes) {
            const bool pinned = m.pins[e.first] > 0;
            bytes += e.second;
            fitting += e.second <= budget ? e.second : 0;
            any_unpinned |= !pinned;
            big_unpinned |= !pinned && e.second > budget;
        }
        CHECK(pc.bytes() == bytes && pc.size() == m.open_bytes.size(), "step %d: %llu bytes, model %llu", step,
              (unsigned long long)pc.bytes(), (unsigned long long)bytes);
        CHECK(!(m.open_bytes.size() > cap || fitting > budget) || !any_unpinned, "step %d: over with unpinned", step);
        CHECK(!big_unpinned, "step %d: a mapping over the budget stays open unpinned", step);
    }
    CHECK(m.opened - m.closed == (long)m.open_bytes.size());
}

// Notices through a rank's ring: read once each, in order; a reader that
// fell more than a ring behind learns that it lost some.
void test_freed_ring()
{
    FreedRing ring{};
    uint64_t seen = 0;
    std::vector<uint64_t> ids;
    CHECK(read_freed(ring, &seen, &ids) && ids.empty() && seen == 0);
    post_freed(ring, 11);
    post_freed(ring, 12);
    CHECK(read_freed(ring, &seen, &ids) && ids == (std::vector<uint64_t>{11, 12}) && seen == 2);
    ids.clear();
    CHECK(read_freed(ring, &seen, &ids) && ids.empty());
    for (int i = 0; i < kFreedRing; i++) post_freed(ring, 100 + i); // exactly a ring: nothing lost
    CHECK(read_freed(ring, &seen, &ids) && ids.size() == (size_t)kFreedRing && ids.front() == 100 &&
          ids.back() == 100 + kFreedRing - 1 && seen == 2 + kFreedRing);
    ids.clear();
    for (int i = 0; i <= kFreedRing; i++) post_freed(ring, 500 + i); // one too many
    CHECK(!read_freed(ring, &seen, &ids) && ids.empty() && seen == 3 + 2 * (uint64_t)kFreedRing);
    post_freed(ring, 7); // and it goes on from there
    CHECK(read_freed(ring, &seen, &ids) && ids == std::vector<uint64_t>{7});

    // A writer caught between its stores, with notice kFreedRing begun: it
    // may have overwritten the slot of notice 0, which the reader has not
    // read yet, so the reader cannot trust what it finds there.
    FreedRing r3{};
    uint64_t s3 = 0;
    for (int i = 0; i < kFreedRing; i++) post_freed(r3, 1 + i);
    r3.started.store(kFreedRing + 1);
    r3.ids[0].store(999);
    ids.clear();
    CHECK(!read_freed(r3, &s3, &ids) && ids.empty() && s3 == (uint64_t)kFreedRing);

    // A writer racing a reader: every batch the reader calls whole is exactly
    // the next ids in order; a batch it calls lost only skips ahead.
    FreedRing r2{};
    const uint64_t n = 300000;
    std::thread writer([&r2, n] {
        for (uint64_t id = 1; id <= n; id++) post_freed(r2, id);
    });
    uint64_t s = 0, next = 1, lost = 0;
    bool in_order = true;
    while (s < n) {
        std::vector<uint64_t> got;
        if (!read_freed(r2, &s, &got)) {
            lost++;
            next = s + 1;
            continue;
        }
        for (uint64_t id : got) in_order &= id == next++;
    }
    writer.join();
    CHECK(in_order && next == n + 1, "lost batches %llu", (unsigned long long)lost);
}

// The exports: a new export finds which earlier ones were freed, the way
// the driver tells (the buffer id at the allocation's base is no longer
// theirs), and forgets them.
void test_export_book()
{
    ExportBook<int> book(4);
    std::map<uintptr_t, unsigned long long> at; // what the driver says lives at a base
    auto alive = [&at](unsigned long long id, uintptr_t base) {
        auto it = at.find(base);
        return it != at.end() && it->second == id;
    };
    std::vector<unsigned long long> freed;
    at[0x1000] = 1;
    book.add(1, 10, 0x1000, alive, &freed);
    at[0x2000] = 2;
    book.add(2, 20, 0x2000, alive, &freed);
    CHECK(freed.empty() && book.find(1) && *book.find(1) == 10 && book.size() == 2);
    // The reported loop: both freed, the next two allocated at the same addresses.
    at[0x1000] = 3;
    at[0x2000] = 4;
    book.add(3, 30, 0x1000, alive, &freed);
    std::sort(freed.begin(), freed.end());
    CHECK(freed == (std::vector<unsigned long long>{1, 2}) && !book.find(1) && !book.find(2));
    freed.clear();
    book.add(4, 40, 0x2000, alive, &freed);
    CHECK(freed.empty() && book.size() == 2);
    at.erase(0x2000); // freed, the address not reused
    at[0x5000] = 5;
    book.add(5, 50, 0x5000, alive, &freed);
    CHECK(freed == std::vector<unsigned long long>{4} && book.find(3) && book.find(5) && book.size() == 2);
}

// The zero-copy rows serve only when the caller says buffers are mapped.
void test_zero_copy_rows()
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    CHECK(cfg.ipc_cache_bytes == GPUCOLL_DEFAULT_IPC_CACHE_BYTES);
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.count = (cfg.oneshot_max_bytes / 4) * 4;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    Plan p{};
    CHECK(make_plan(a, 0, 4, cfg, true, &p) && p.algo == PeerAlgo::AllreducePush);
    CHECK(make_plan(a, 0, 4, cfg, false, &p) && p.algo == PeerAlgo::AllreduceTwoShot);
    a.count = 16;
    CHECK(make_plan(a, 0, 4, cfg, true, &p) && p.algo == PeerAlgo::AllreduceOneShot);
    for (auto kind : {GPUCOLL_COLL_ALLGATHER, GPUCOLL_COLL_BCAST, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK}) {
        a.kind = kind;
        a.dtype = kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK ? GPUCOLL_FLOAT32 : GPUCOLL_UINT8;
        a.op = kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE;
        CHECK(make_plan(a, 0, 4, cfg, true, &p) && is_direct(p.algo));
        CHECK(make_plan(a, 0, 4, cfg, false, &p) && !is_direct(p.algo));
    }
    force_algorithm(&cfg, GPUCOLL_COLL_ALLREDUCE, "allreduce_push");
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    // A forced zero-copy row serves a mapped call of any size; unmapped, the
    // automatic choice serves (one-shot for these 16 elements).
    CHECK(make_plan(a, 0, 2, cfg, true, &p) && p.algo == PeerAlgo::AllreducePush);
    CHECK(make_plan(a, 0, 2, cfg, false, &p) && p.algo == PeerAlgo::AllreduceOneShot && p.forced_refused);
}

} // namespace

int main()
{
    test_lru();
    test_pins();
    test_byte_budget();
    test_forget();
    test_random_pins();
    test_freed_ring();
    test_export_book();
    test_zero_copy_rows();
    std::printf("test_ipc_cache: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
