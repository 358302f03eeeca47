// A kernel that gives up on a peer takes the peers' kernels down with it
// (kernels/peer_args.h: the give-up word), so that no rank is left with a
// kernel spinning for a peer that has gone: under MPS a process killed with
// a kernel still running takes the GPU down for every client.
//
// Two forked ranks on GPU 0 (shared_gpu=on), a two-shot allreduce (two
// barriers). After a first call that sets the team up, rank 1 is held
// between the agreement and its launch for longer than rank 0's timeout
// (now 300 ms), so rank 0's kernel gives up at the first barrier. Rank 1's kernel then passes that barrier (rank 0 posted it) and
// waits at the second for a rank that has left: it must end at once with
// the peer's verdict, not after its own timeout of 60 s (ctest's 40 s
// timeout catches that). The next call must be staged by both ranks alike.
// Exits 77 without a GPU.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>

#include "gpu_port.h"
#include "gpucoll_core.h"
#include "team.hpp"

#include "../common/check.h"
#include "algo_forcing.h"
#include "forked_oob.h"

namespace {

constexpr int kRanks = 2;
constexpr size_t kCount = 1 << 20; // floats: above the LL sizes
constexpr int kNoGpu = 77;

struct Shared {
    ForkedOob oob;
    gpucoll_status_t setup[kRanks], first[kRanks], second[kRanks];
    char why[kRanks][256];
};

void hold_rank1(int rank, uint64_t seq)
{
    if (rank == 1 && seq == 2) usleep(1500 * 1000);
}

[[noreturn]] void run_rank(Shared *sh, int rank)
{
    int ndev = 0;
    if (gpuGetDeviceCount(&ndev) != gpuSuccess || ndev < 1) _exit(kNoGpu);
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    cfg.shared_gpu = GPUCOLL_SHARED_GPU_ON;
    force_algorithm(&cfg, GPUCOLL_COLL_ALLREDUCE, "allreduce_twoshot");
    cfg.timeout_ms = 60000;
    gpucoll_core_configure(&cfg);
    gpucoll::team_test_before_launch = hold_rank1;
    if (gpuSetDevice(0) != gpuSuccess) _exit(3);
    ForkedRank me{&sh->oob, rank, kRanks, 0};
    gpucoll_oob_t oob{rank, kRanks, forked_allgather, &me, nullptr};
    gpucoll_team_t *team = nullptr;
    if (gpucoll_team_create(&oob, &team) != GPUCOLL_SUCCESS) _exit(4);
    float *buf = nullptr;
    if (gpuMalloc((void **)&buf, kCount * sizeof(float)) != gpuSuccess) _exit(5);
    gpuMemset(buf, 0, kCount * sizeof(float));
    gpuDeviceSynchronize();
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.rbuf = buf; // in place
    a.count = kCount;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    a.local_ok = 1;
    sh->setup[rank] = gpucoll_team_run(team, &a); // maps the scratch: no short timeout yet
    if (rank == 0) {
        cfg.timeout_ms = 300;
        gpucoll_core_configure(&cfg);
    }
    sh->first[rank] = gpucoll_team_run(team, &a);
    snprintf(sh->why[rank], sizeof sh->why[rank], "%s", gpucoll_last_error());
    sh->second[rank] = gpucoll_team_run(team, &a);
    gpuFree(buf);
    gpucoll_team_destroy(team);
    _exit(0);
}

} // namespace

int main()
{
    auto *sh = static_cast<Shared *>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    CHECK(sh != MAP_FAILED);
    new (sh) Shared{};
    pid_t pids[kRanks];
    for (int r = 0; r < kRanks; r++) {
        fflush(stdout);
        pids[r] = fork();
        if (pids[r] == 0) run_rank(sh, r); // CUDA is first touched in the children
    }
    int no_gpu = 0;
    for (int r = 0; r < kRanks; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == kNoGpu) {
            no_gpu++;
            continue;
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d ended with status %d", r, status);
    }
    if (no_gpu) {
        printf("peer_give_up: no GPU: skipped\n");
        return kNoGpu;
    }
    for (int r = 0; r < kRanks; r++)
        printf("rank %d: set-up call %d, held call %d (%s), next call %d\n", r, (int)sh->setup[r],
               (int)sh->first[r], sh->why[r], (int)sh->second[r]);
    CHECK(sh->setup[0] == GPUCOLL_SUCCESS && sh->setup[1] == GPUCOLL_SUCCESS, "the first call should run");
    CHECK(sh->first[0] == GPUCOLL_ERR_TIMEOUT && strstr(sh->why[0], "did not reach the barrier"),
          "rank 0 should have timed out at the barrier");
    // Rank 0 may have finished and left before rank 1's kernel runs: its
    // verdict then reaches rank 1 as its departure, as good an answer.
    CHECK((sh->first[1] == GPUCOLL_ERR_TIMEOUT && strstr(sh->why[1], "gave up")) ||
              (sh->first[1] == GPUCOLL_ERR_PEER && strstr(sh->why[1], "is gone")),
          "rank 1 should have ended with rank 0's verdict");
    CHECK(sh->second[0] == GPUCOLL_ERR_UNSUPPORTED && sh->second[1] == GPUCOLL_ERR_UNSUPPORTED,
          "after a timeout every rank stages");
    printf("peer_give_up: %s\n", failures ? "FAILED" : "the peer's kernel ended with the one that gave up");
    return failures ? 1 : 0;
}
