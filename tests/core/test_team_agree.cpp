// The team's agreement between forked ranks, without a GPU: every rank must
// reach the same verdict for every call, whatever the timing.
//  - race: a rank that took the peer path and waits for nobody (an LL
//    bcast's root) goes on to its next call while a peer that posted the
//    same call has not read the posts yet (held by team_test_after_post);
//  - overwrite: the same, the next call one the fast rank cannot take
//    (it leaves at once) and then one it can: its post of the held call
//    must survive until the peer has read it;
//  - no false timeout: calls nobody can take never wait, however late a
//    peer is (timeout_ms shorter than the peer's delay);
//  - mismatch: ranks whose arguments differ (here the count) all fail that
//    call, the one given less with TRUNCATE, and agree on the next;
//  - busy: one rank's "legacy stream busy" bit reaches every rank of a call
//    all can take (coll_gpu_busy_max_blocks: their grids must stay alike),
//    and none where some rank cannot take it.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "gpucoll_core.h"
#include "team.hpp"

#include "../common/check.h"
#include "forked_oob.h"

namespace {

constexpr int kMaxCalls = 16;

// Shared by the forked ranks: the oob allgather (generation-counted, double
// buffered) and what each rank saw.
struct Shared {
    ForkedOob oob;
    int verdict[8][kMaxCalls]; // 1 all ok, 0 not, -1 error
    int any_busy[8][kMaxCalls];
    int status[8][kMaxCalls];
};

int g_hold_rank = -1;
uint64_t g_hold_seq = 0;
int g_hold_us = 0;
void hold(int rank, uint64_t seq)
{
    if (rank == g_hold_rank && seq == g_hold_seq) usleep(g_hold_us);
}

struct Scenario {
    const char *name;
    int size;
    int timeout_ms;
    int hold_rank, hold_seq, hold_us; // held right after posting that call
    int late_rank, late_us;           // starts its calls this late
    int calls;
    bool ok[8][kMaxCalls];            // what each rank can do per call
    int want[kMaxCalls];              // the verdict every rank must reach
    bool busy[8][kMaxCalls];          // what each rank posts as busy (none where not given)
    int want_busy[kMaxCalls];         // *any_busy every rank must see
    size_t count[8][kMaxCalls];       // each rank's allreduce count (0: 1)
    int want_status[8][kMaxCalls];    // each rank's gpucoll_status_t (0: success)
};

[[noreturn]] void run_rank(Shared *sh, const Scenario &s, int rank)
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    cfg.timeout_ms = s.timeout_ms;
    gpucoll_core_configure(&cfg);
    g_hold_rank = s.hold_rank;
    g_hold_seq = (uint64_t)s.hold_seq;
    g_hold_us = s.hold_us;
    gpucoll::team_test_after_post = hold;
    ForkedRank me{&sh->oob, rank, s.size, 0};
    gpucoll_oob_t oob{rank, s.size, forked_allgather, &me, nullptr};
    gpucoll_team_t *team = nullptr;
    if (gpucoll_team_create(&oob, &team) != GPUCOLL_SUCCESS) _exit(3);
    if (rank == s.late_rank) usleep(s.late_us);
    for (int c = 0; c < s.calls; c++) {
        bool all_ok = false, any_busy = true;
        const size_t count = s.count[rank][c] ? s.count[rank][c] : 1;
        gpucoll_status_t st = gpucoll::team_agree(team, s.ok[rank][c], &all_ok, s.busy[rank][c], &any_busy, count);
        sh->status[rank][c] = (int)st;
        sh->verdict[rank][c] = st != GPUCOLL_SUCCESS ? -1 : all_ok ? 1 : 0;
        sh->any_busy[rank][c] = any_busy ? 1 : 0;
        if (st != GPUCOLL_SUCCESS) fprintf(stderr, "rank %d call %d: %s\n", rank, c + 1, gpucoll_last_error());
    }
    gpucoll_team_destroy(team);
    _exit(0);
}

void run(const Scenario &s)
{
    auto *sh = static_cast<Shared *>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    CHECK(sh != MAP_FAILED);
    new (sh) Shared{};
    std::vector<pid_t> pids;
    for (int r = 0; r < s.size; r++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) run_rank(sh, s, r);
        pids.push_back(pid);
    }
    for (pid_t p : pids) {
        int status = 0;
        waitpid(p, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (int c = 0; c < s.calls; c++)
        for (int r = 0; r < s.size; r++) {
            if (sh->verdict[r][c] != s.want[c])
                fprintf(stderr, "%s: call %d: rank %d saw %d, want %d\n", s.name, c + 1, r, sh->verdict[r][c],
                        s.want[c]);
            CHECK(sh->verdict[r][c] == s.want[c]);
            if (sh->any_busy[r][c] != s.want_busy[c])
                fprintf(stderr, "%s: call %d: rank %d saw busy %d, want %d\n", s.name, c + 1, r, sh->any_busy[r][c],
                        s.want_busy[c]);
            CHECK(sh->any_busy[r][c] == s.want_busy[c]);
            if (sh->status[r][c] != s.want_status[r][c])
                fprintf(stderr, "%s: call %d: rank %d's status %d, want %d\n", s.name, c + 1, r, sh->status[r][c],
                        s.want_status[r][c]);
            CHECK(sh->status[r][c] == s.want_status[r][c]);
        }
    munmap(sh, sizeof(Shared));
}

} // namespace

int main()
{
    // Rank 1 passes call 1 as soon as it sees rank 0's post and posts call
    // 2 while rank 0, held, has yet to read rank 1's post of call 1.
    Scenario race{"race", 2, 5000, 0, 1, 200000, -1, 0, 2, {{true, true}, {true, true}}, {1, 1}};
    run(race);
    // The same, then a call nobody takes (it does not wait) and one all
    // take: rank 1's post of call 3 goes into call 1's slot.
    Scenario overwrite{"overwrite", 2, 5000, 0, 1, 200000, -1, 0, 3,
                       {{true, false, true}, {true, false, true}}, {1, 0, 1}};
    run(overwrite);
    Scenario overwrite3{"overwrite, 3 ranks", 3, 5000, 2, 1, 200000, -1, 0, 4,
                        {{true, false, true, true}, {true, false, true, true}, {true, true, true, true}},
                        {1, 0, 1, 1}};
    run(overwrite3);
    // Rank 0 can take none of these and must not wait for rank 1, which
    // starts its calls long after the 300 ms timeout.
    Scenario late{"late", 2, 300, -1, 0, 0, 1, 1000000, 6, {{false, false, false, false, false, false},
                  {true, false, true, false, true, false}}, {0, 0, 0, 0, 0, 0}};
    run(late);
    // Rank 2 is held after posting call 2, so ranks 0 and 1 read its bit
    // late; call 5 is one rank 1 cannot take: nobody sees busy.
    Scenario busy{"busy", 3, 5000, 2, 2, 100000, -1, 0, 5,
                  {{true, true, true, true, true}, {true, true, true, true, false}, {true, true, true, true, true}},
                  {1, 1, 1, 1, 0},
                  {{false, false, true, true, true}, {false, false, true, false, false}, {false, true, true, false, false}},
                  {0, 1, 1, 1, 0}};
    run(busy);
    // Rank 1 gives call 2 a count of 2: both fail it, rank 0 (room for one
    // element) with TRUNCATE, rank 1 with MISMATCH; call 3 is agreed again.
    Scenario mismatch{"mismatch", 2, 5000, -1, 0, 0, -1, 0, 3, {{true, true, true}, {true, true, true}}, {1, -1, 1},
                      {}, {}, {{1, 1, 1}, {1, 2, 1}},
                      {{0, GPUCOLL_ERR_TRUNCATE, 0}, {0, GPUCOLL_ERR_MISMATCH, 0}}};
    run(mismatch);
    printf("test_team_agree: %s\n", failures ? "FAILED" : "every rank reached the same verdicts");
    return failures ? 1 : 0;
}
