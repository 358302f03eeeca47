// The per-call counters of stream-ordered calls (kernels/stream_calls.h),
// simulated on the host as kernels/resident.cuh drives them: every block of
// a call reads the counters at its start, blocks start and end in any order
// (a block may end before another starts, as when the grid does not fit the
// GPU at once), and the last block out moves the counters on. A sequence of
// calls, captured once, is replayed many times on every rank. Checked:
// - every block of a call, on every rank, runs with the same epoch0;
// - barrier calls never share an epoch (call i+1 starts past call i's last
//   step), so the flags of one call never satisfy a wait of the next;
// - consecutive LL calls alternate their flag's parity (their slots) and no
//   LL flag is 0 or repeats;
// - a closed team runs nothing, and an exhausted LL count stops with the
//   counters unchanged.
#include <cstdio>
#include <random>
#include <vector>

#include "../common/check.h"
#include "stream_calls.h"

using namespace gpucoll;

namespace {

struct Call {
    bool ll;
    uint64_t epochs; // barrier calls: steps (>= 1)
};

// One rank's kernel for `c`: `blocks` blocks whose starts and ends are
// interleaved at random. Returns the epoch0 every block ran with (and
// flags a block that saw another), updating the counters as the device does.
uint64_t run_kernel(StreamCalls &sc, const Call &c, int blocks, std::mt19937 &rng, int *verdict)
{
    std::vector<int> started(blocks, 0);
    std::vector<StreamStart> seen(blocks);
    int begun = 0, ended = 0;
    while (ended < blocks) {
        // Pick an event: start a block not yet started, or end one running.
        std::vector<int> can_start, can_end;
        for (int b = 0; b < blocks; b++) {
            if (started[b] == 0) can_start.push_back(b);
            else if (started[b] == 1) can_end.push_back(b);
        }
        bool start = can_end.empty() || (!can_start.empty() && rng() % 2);
        if (start) {
            int b = can_start[rng() % can_start.size()];
            seen[b] = stream_start(sc.epoch, sc.ll_flag, sc.closed, c.ll);
            started[b] = 1;
            begun++;
            if (seen[b].verdict == kStreamClosed) started[b] = 2, ended++; // leaves without counting
        } else {
            int b = can_end[rng() % can_end.size()];
            started[b] = 2;
            ended++;
            if (++sc.blocks_out == (uint32_t)blocks) {
                StreamNext n = stream_next(sc.epoch, sc.ll_flag, c.ll, seen[b], c.epochs);
                sc.epoch = n.epoch;
                sc.ll_flag = n.ll_flag;
                sc.calls++;
                sc.blocks_out = 0;
            }
        }
    }
    for (int b = 1; b < blocks; b++)
        CHECK(seen[b].epoch0 == seen[0].epoch0 && seen[b].verdict == seen[0].verdict,
              "block %d ran with epoch0 %llu, block 0 with %llu", b, (unsigned long long)seen[b].epoch0,
              (unsigned long long)seen[0].epoch0);
    *verdict = seen[0].verdict;
    return seen[0].epoch0;
}

StreamCalls fresh()
{
    StreamCalls sc{};
    sc.epoch = 1;
    return sc;
}

void replayed_graphs(std::mt19937 &rng)
{
    for (int trial = 0; trial < 200; trial++) {
        const int nranks = 2 + (int)(rng() % 7), blocks = 1 + (int)(rng() % 40), ncalls = 1 + (int)(rng() % 12);
        const int replays = 1 + (int)(rng() % 30);
        std::vector<Call> graph;
        for (int i = 0; i < ncalls; i++) graph.push_back(Call{rng() % 2 == 0, 1 + rng() % 5});
        std::vector<StreamCalls> ranks(nranks, fresh());
        uint64_t last_end = 0; // epoch past the latest barrier call
        int64_t last_flag = -1;
        uint32_t prev_flag = 0;
        for (int rep = 0; rep < replays; rep++)
            for (const Call &c : graph) {
                uint64_t first = 0;
                for (int r = 0; r < nranks; r++) {
                    int verdict;
                    uint64_t e0 = run_kernel(ranks[r], c, blocks, rng, &verdict);
                    CHECK(verdict == kStreamRun, "a call did not run");
                    if (r == 0) first = e0;
                    CHECK(e0 == first, "rank %d ran with %llu, rank 0 with %llu", r, (unsigned long long)e0,
                          (unsigned long long)first);
                }
                if (c.ll) {
                    CHECK(first != 0 && (int64_t)first > last_flag, "LL flag %llu after %lld", (unsigned long long)first,
                          (long long)last_flag);
                    if (last_flag >= 0) CHECK(((first ^ prev_flag) & 1) == 1, "two LL calls in a row share a parity");
                    last_flag = (int64_t)first;
                    prev_flag = (uint32_t)first;
                } else {
                    CHECK(first >= 1 && first >= last_end, "barrier call at epoch %llu, the previous one reached %llu",
                          (unsigned long long)first, (unsigned long long)last_end);
                    last_end = first + c.epochs;
                }
            }
        for (int r = 0; r < nranks; r++)
            CHECK(ranks[r].calls == (uint64_t)replays * ncalls, "rank %d counted %llu calls", r,
                  (unsigned long long)ranks[r].calls);
    }
}

void closed_and_exhausted(std::mt19937 &rng)
{
    StreamCalls sc = fresh();
    sc.closed = 1;
    int verdict;
    run_kernel(sc, Call{false, 3}, 8, rng, &verdict);
    CHECK(verdict == kStreamClosed && sc.epoch == 1 && sc.calls == 0, "a closed team ran a call");

    sc = fresh();
    sc.ll_flag = kStreamLLFlagLimit - 1;
    run_kernel(sc, Call{true, 0}, 8, rng, &verdict);
    CHECK(verdict == kStreamRun && sc.ll_flag == kStreamLLFlagLimit, "the last LL flag was refused");
    run_kernel(sc, Call{true, 0}, 8, rng, &verdict);
    CHECK(verdict == kStreamExhausted && sc.ll_flag == kStreamLLFlagLimit,
          "an LL call ran past the flag limit (flag %u)", sc.ll_flag);
    run_kernel(sc, Call{false, 2}, 8, rng, &verdict);
    CHECK(verdict == kStreamRun, "barrier calls stop with the LL flags");
}

} // namespace

int main()
{
    std::mt19937 rng(20261124);
    replayed_graphs(rng);
    closed_and_exhausted(rng);
    std::printf("core_stream_calls: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
