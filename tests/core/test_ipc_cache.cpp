// Bookkeeping of the IPC cache (core/ipc_cache.hpp) without a GPU: the LRU
// that decides which peer mappings stay open, and the zero-copy rows of the
// algorithm table.
#include <cstdio>
#include <set>
#include <utility>

#include "algo_select.hpp"
#include "ipc_cache.hpp"

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
    cfg.allreduce_algorithm = GPUCOLL_ALLREDUCE_DIRECT;
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    CHECK(make_plan(a, 0, 2, cfg, true, &p) && p.algo == PeerAlgo::AllreducePush);
    CHECK(make_plan(a, 0, 2, cfg, false, &p) && p.algo == PeerAlgo::AllreduceTwoShot);

    std::printf("test_ipc_cache: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
