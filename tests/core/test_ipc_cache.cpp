// Bookkeeping of the IPC cache (core/ipc_cache.hpp) without a GPU: the LRU
// that decides which peer mappings stay open, and the zero-copy rows of the
// algorithm table.
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "algo_select.hpp"
#include "ipc_cache.hpp"
#include "algo_forcing.h"

using namespace gpucoll;

#include "../common/check.h"

int main()
{
    using Key = std::pair<int, unsigned long long>;
    // Recently used entries survive, the least recently used one goes first.
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

    // Pins: a mapping some call still uses is never handed back for closing
    // while pinned; pushed out of the LRU it waits for its last unpin, and a
    // pin taken meanwhile finds it there instead of mapping it twice.
    {
        PinnedLru<Key, int> pc(2);
        int closable = -1;
        CHECK(!pc.insert_pinned({0, 1}, 10, &closable)); // call A maps buffer 1 and 2
        CHECK(!pc.insert_pinned({0, 2}, 20, &closable));
        CHECK(!pc.insert_pinned({0, 3}, 30, &closable)); // call B: 1 goes out of the LRU, pinned
        CHECK(pc.size() == 2 && pc.waiting() == 1);
        CHECK(pc.pin({0, 1}) && *pc.pin({0, 1}) == 10); // found while waiting (two pins more)
        CHECK(!pc.unpin({0, 1}, &closable) && !pc.unpin({0, 1}, &closable));
        CHECK(pc.waiting() == 1);
        CHECK(pc.unpin({0, 1}, &closable) && closable == 10); // A's own pin was the last
        CHECK(pc.waiting() == 0 && !pc.pin({0, 1}));
        CHECK(!pc.unpin({0, 2}, &closable)); // still in the LRU: stays open
        // An unpin is no use: 2 stays the least recent, and the next insert closes it at once.
        closable = -1;
        CHECK(pc.insert_pinned({0, 4}, 40, &closable) && closable == 20);
        CHECK(!pc.unpin({0, 3}, &closable) && !pc.unpin({0, 4}, &closable));
        // Same allocation twice in one call (in place): two pins, two unpins.
        CHECK(pc.pin({0, 4}) && pc.pin({0, 4}));
        CHECK(pc.insert_pinned({0, 5}, 50, &closable) && closable == 30); // 3 was unpinned
        CHECK(!pc.insert_pinned({0, 6}, 60, &closable) && pc.waiting() == 1); // 4 still pinned twice
        CHECK(!pc.unpin({0, 4}, &closable) && pc.unpin({0, 4}, &closable) && closable == 40);
        std::vector<int> drained;
        pc.drain([&drained](int v) { drained.push_back(v); });
        CHECK(drained.size() == 2 && pc.size() == 0 && pc.waiting() == 0);
    }
    // Random interleaving of many "threads'" calls over a small cache: every
    // value is closed exactly once, never while pinned, and what stays open
    // is bounded by the capacity plus what is pinned.
    {
        PinnedLru<Key, int> pc(4);
        std::map<Key, int> pins;   // what the calls in flight hold
        std::set<Key> open_now;    // mapped and not closed
        unsigned long long state = 12345;
        auto rnd = [&state](unsigned n) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            return (unsigned)(state >> 33) % n;
        };
        std::vector<std::vector<Key>> calls(6);
        long closed = 0, opened = 0;
        for (int step = 0; step < 200000; step++) {
            auto &c = calls[rnd(6)];
            if (c.empty() || (c.size() < 4 && rnd(2))) {
                Key k{(int)rnd(3), rnd(10)};
                int closable = -1;
                if (!pc.pin(k)) {
                    CHECK(!open_now.count(k));
                    open_now.insert(k);
                    opened++;
                    if (pc.insert_pinned(k, (int)(k.first * 100 + k.second), &closable)) {
                        Key gk{closable / 100, (unsigned long long)(closable % 100)};
                        CHECK(open_now.erase(gk) == 1 && pins[gk] == 0, "closed %d while pinned", closable);
                        closed++;
                    }
                }
                pins[k]++;
                c.push_back(k);
            } else { // the call is over: unpin all it took
                for (const Key &k : c) {
                    int closable = -1;
                    pins[k]--;
                    if (pc.unpin(k, &closable)) {
                        CHECK(closable == (int)(k.first * 100 + k.second));
                        CHECK(pins[k] == 0 && open_now.erase(k) == 1);
                        closed++;
                    }
                }
                c.clear();
            }
            size_t pinned = 0;
            for (auto &e : pins) pinned += e.second > 0;
            CHECK(open_now.size() <= 4 + pinned);
        }
        CHECK(opened - closed == (long)open_now.size());
        CHECK(pc.size() + pc.waiting() == open_now.size());
    }

    // The zero-copy rows serve only when the caller says buffers are mapped.
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
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

    std::printf("test_ipc_cache: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
