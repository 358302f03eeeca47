// The switch of a persistent plan to zero-copy (core/persist_switch.hpp),
// simulated on the host: ranks launch the plan in random orders of the kind
// MPI allows (a rank starts launch n only once every rank has started launch
// n-1: its launch n-1 had to end, and that kernel waited for every peer's),
// publish at their first launch or never, and may fail to map. Every rank
// must take the same decision at every launch, switch at most once, and
// never switch where a rank did not publish or could not map.
#include <cstdio>
#include <random>
#include <vector>

#include "../common/check.h"
#include "persist_switch.hpp"

using namespace gpucoll::persist;

namespace {

struct Rank {
    bool publishes = true, maps = true;
    uint64_t launches = 0;
    bool announced = false, zero_copy = false;
    std::vector<bool> decided; // per launch: zero-copy or not
};

// One plan launched `nlaunches` times by `ranks`; the launch from which all
// ran zero-copy (0: never). What team_queued.cpp does, on plain words.
uint64_t simulate(std::vector<Rank> ranks, uint64_t nlaunches, std::mt19937 &rng)
{
    const int n = (int)ranks.size();
    const uint64_t tag = tag_of(41);
    std::vector<uint64_t> words(n, 0);
    auto word_of = [&](int r) { return words[r]; };
    for (;;) {
        std::vector<int> ready;
        for (int r = 0; r < n; r++) {
            if (ranks[r].launches == nlaunches) continue;
            bool allowed = true;
            for (int q = 0; q < n; q++) allowed &= ranks[q].launches >= ranks[r].launches;
            if (allowed) ready.push_back(r);
        }
        if (ready.empty()) break;
        const int r = ready[rng() % ready.size()];
        Rank &k = ranks[r];
        if (k.launches == 0 && k.publishes) words[r] = tag; // created (and published) at the first start
        const uint64_t launch = ++k.launches;
        if (words[r] != 0 && !k.zero_copy) { // p->slot >= 0
            if (!k.announced) {
                if (all_published(word_of, n, tag)) {
                    if (k.maps) {
                        words[r] = announced_at(tag, launch);
                        k.announced = true;
                    } else {
                        words[r] = 0; // unpublished: never announces
                    }
                }
            } else if (switch_at(word_of, n, tag, launch)) {
                k.zero_copy = true;
            }
        }
        k.decided.push_back(k.zero_copy);
    }
    uint64_t from = 0;
    for (uint64_t l = 0; l < nlaunches; l++) {
        for (int r = 0; r < n; r++) {
            CHECK(ranks[r].decided.size() == nlaunches, "rank %d made %zu launches", r, ranks[r].decided.size());
            if (ranks[r].decided.size() != nlaunches) return 0;
            CHECK(ranks[r].decided[l] == ranks[0].decided[l], "launch %llu: rank %d decided %d, rank 0 %d",
                  (unsigned long long)l + 1, r, (int)ranks[r].decided[l], (int)ranks[0].decided[l]);
        }
        if (l > 0) CHECK(ranks[0].decided[l] || !ranks[0].decided[l - 1], "launch %llu switched back",
                         (unsigned long long)l + 1);
        if (ranks[0].decided[l] && !from) from = l + 1;
    }
    return from;
}

} // namespace

int main()
{
    std::mt19937 rng(12345);
    // The words: a free slot is never a plan's, numbers stay apart.
    CHECK(!published(0, tag_of(0)) && tag_of(0) != 0, "plan 0's tag");
    CHECK(tag_of(0xfffffffeu) != 0 && published(announced_at(tag_of(5), 3), tag_of(5)) &&
              !published(announced_at(tag_of(5), 3), tag_of(6)),
          "tags");
    CHECK(!switch_at([](int) { return announced_at(tag_of(1), 2); }, 2, tag_of(1), 2) &&
              switch_at([](int) { return announced_at(tag_of(1), 2); }, 2, tag_of(1), 3),
          "an announcement at launch n serves from launch n+1");
    int runs = 0, switched = 0;
    for (int n = 1; n <= 8; n++)
        for (int trial = 0; trial < 400; trial++) {
            std::vector<Rank> ranks(n);
            const int kind = trial % 4; // 0, 1: all can; 2: one never publishes; 3: one cannot map
            const int odd = (int)(rng() % n);
            if (kind == 2) ranks[odd].publishes = false;
            if (kind == 3) ranks[odd].maps = false;
            const uint64_t from = simulate(ranks, 6, rng);
            runs++;
            if (kind < 2) {
                // Everyone has published by launch 2, so everyone announces by 2 and switches by 3.
                CHECK(from >= 2 && from <= 3, "%d ranks: switched at launch %llu", n, (unsigned long long)from);
                switched += from != 0;
            } else {
                CHECK(from == 0, "%d ranks, rank %d %s: switched at launch %llu", n, odd,
                      kind == 2 ? "never published" : "could not map", (unsigned long long)from);
            }
        }
    std::printf("persist_switch: %d simulated plans, %d switched alike, %d failures\n", runs, switched, failures);
    return failures ? 1 : 0;
}
