// The guess a launch makes of the next call on its stream (same_call_again,
// core/team_gpu.cpp) against what kernel_args gives that call when it comes.
// For every kind, at sizes of each protocol (LL, through scratch in one or in
// several steps, zero-copy), the two must be the same bytes: otherwise every
// launch of a loop or of a persistent request sets its graph node again
// (kernels/peer_args.h, KernelGraph). And where another call came between,
// they must differ, so that the guess is set again before it is launched.
#include <cstdio>
#include <cstring>

#include "../common/check.h"
#include "team_state.hpp"

using namespace gpucoll;

namespace {

alignas(16) char input[64], output[64]; // never touched: kernel_args only takes the addresses

// A launch as team.cpp and team_queued.cpp make it: the team's next epoch or
// LL flag, then the launch number.
PeerArgs launch(gpucoll_team *t, const Plan &plan, const gpucoll_coll_args_t &a, uint64_t *launched)
{
    PeerArgs k = kernel_args(t, plan, a, input, output);
    k.done_value = ++*launched;
    return k;
}

bool same(const PeerArgs &x, const PeerArgs &y) { return memcmp(&x, &y, sizeof x) == 0; }

} // namespace

int main()
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    cfg.ll_max_bytes = 64 * 1024;
    gpucoll_core_configure(&cfg);
    const gpucoll_config_t &c = config();
    int cases = 0;
    const gpucoll_coll_kind_t kinds[] = {GPUCOLL_COLL_ALLREDUCE, GPUCOLL_COLL_REDUCE, GPUCOLL_COLL_BCAST,
                                         GPUCOLL_COLL_ALLGATHER, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK,
                                         GPUCOLL_COLL_ALLTOALL};
    for (int nranks : {2, 4})
        for (gpucoll_coll_kind_t kind : kinds)
            for (size_t count : {(size_t)2, (size_t)1000, (size_t)1 << 18, (size_t)1 << 22})
                for (bool direct : {false, true}) {
                    gpucoll_team t;
                    t.rank = 1;
                    t.size = nranks;
                    t.half_bytes = 4u << 20; // the larger counts take several steps
                    t.epoch = 1000;
                    t.ll_flag = 7;
                    int error = 0;
                    t.error = &error;
                    const bool reduces = kind == GPUCOLL_COLL_ALLREDUCE || kind == GPUCOLL_COLL_REDUCE ||
                                         kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
                    gpucoll_coll_args_t a{};
                    a.kind = kind;
                    a.count = count;
                    a.dtype = GPUCOLL_FLOAT32;
                    a.op = reduces ? GPUCOLL_OP_SUM : GPUCOLL_OP_NONE;
                    a.sbuf = kind == GPUCOLL_COLL_BCAST ? nullptr : input;
                    a.rbuf = output;
                    a.local_ok = 1;
                    Plan plan{};
                    if (!make_plan(a, t.rank, t.size, c, direct, &plan, GpuShare{}, false)) continue;
                    if (!is_ll(plan.algo))
                        plan.chunk = std::min(plan.chunk, max_chunk_elems(plan, t.half_bytes, sizeof(float)));
                    const char *what = plan.name;
                    cases++;
                    uint64_t launched = 0;
                    // The same call twice in a row: the guess is the second launch.
                    PeerArgs first = launch(&t, plan, a, &launched);
                    PeerArgs guess = same_call_again(&t, first);
                    PeerArgs second = launch(&t, plan, a, &launched);
                    CHECK(same(guess, second), "%s, %d ranks, count %zu: the guess is not the next launch", what,
                          nranks, count);
                    CHECK(guess.epoch0 != first.epoch0, "%s: the guess reuses the epoch or flag", what);
                    // Another call between: the guess must not pass for the launch.
                    guess = same_call_again(&t, second);
                    gpucoll_coll_args_t other = a;
                    other.count = 3;
                    Plan other_plan{};
                    if (make_plan(other, t.rank, t.size, c, false, &other_plan, GpuShare{}, false))
                        (void)launch(&t, other_plan, other, &launched);
                    else
                        launched++;
                    PeerArgs third = launch(&t, plan, a, &launched);
                    CHECK(!same(guess, third), "%s, %d ranks, count %zu: a stale guess passes for the launch",
                          what, nranks, count);
                }
    std::printf("test_same_call: %d cases, %d failed checks\n", cases, failures);
    return failures ? 1 : 0;
}
