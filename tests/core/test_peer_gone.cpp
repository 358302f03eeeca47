// Waits with MPI's semantics, without a GPU (forked ranks):
//  - presence: a rank's lock is seen while its process lives and gone once
//    it is killed (SIGKILL: nothing of it runs to let go);
//  - late: a rank that arrives 1.5 s after the others is not an error (no
//    timeout by default);
//  - gone: a rank that leaves without ever reaching the call (its process
//    ends) ends the others' wait with GPUCOLL_ERR_PEER instead of a hang or
//    a timeout.
//  - the watcher's work for a team (watch_work) runs a few times a second,
//    and once unwatch_work has returned it is not running and never runs
//    again, even when it was running at the call.
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <string>
#include <new>
#include <vector>

#include "gpucoll_core.h"
#include "peer_watch.hpp"
#include "team.hpp"

#include "../common/check.h"
#include "forked_oob.h"

namespace {

struct Shared {
    ForkedOob oob;
    int status[8]; // of each rank's call: gpucoll_status_t, or -1 before
    int all_ok[8];
};

void presence()
{
    int fd = memfd_create("presence-test", 0);
    CHECK(fd >= 0);
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t child = fork();
    if (child == 0) {
        int mine = open(("/proc/" + std::to_string(getppid()) + "/fd/" + std::to_string(fd)).c_str(), O_RDWR);
        bool held = mine >= 0 && gpucoll::hold_presence(mine, 1);
        char c = held ? 1 : 0;
        (void)!write(ready[1], &c, 1);
        pause();
        _exit(0);
    }
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1 && c == 1, "the child could not take its presence lock");
    CHECK(gpucoll::hold_presence(fd, 0));
    CHECK(gpucoll::peer_present(fd, 1), "a live rank's lock is not seen");
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    CHECK(!gpucoll::peer_present(fd, 1), "a killed rank still looks present");
    close(fd);
    close(ready[0]);
    close(ready[1]);
}

// Every rank: a team, then one agreement (rank `late` after `late_us`,
// rank `quits` never: it ends its process instead).
[[noreturn]] void run_rank(Shared *sh, int rank, int size, int late, int late_us, int quits)
{
    gpucoll_config_t cfg{};
    gpucoll_config_fill_defaults(&cfg);
    gpucoll_core_configure(&cfg);
    ForkedRank me{&sh->oob, rank, size, 0};
    gpucoll_oob_t oob{rank, size, forked_allgather, &me, nullptr, 0};
    gpucoll_team_t *team = nullptr;
    if (gpucoll_team_create(&oob, &team) != GPUCOLL_SUCCESS) _exit(3);
    if (rank == quits) _exit(0); // as if killed: no destroy, no departure
    if (rank == late) usleep(late_us);
    bool all_ok = false;
    sh->status[rank] = gpucoll::team_agree(team, true, &all_ok);
    sh->all_ok[rank] = all_ok;
    if (sh->status[rank] != GPUCOLL_SUCCESS) fprintf(stderr, "rank %d: %s\n", rank, gpucoll_last_error());
    if (quits < 0) gpucoll_team_destroy(team);
    _exit(0);
}

Shared *run(int size, int late, int late_us, int quits)
{
    auto *sh = static_cast<Shared *>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    new (sh) Shared{};
    for (int &s : sh->status) s = -1;
    std::vector<pid_t> pids;
    for (int r = 0; r < size; r++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) run_rank(sh, r, size, late, late_us, quits);
        pids.push_back(pid);
    }
    for (pid_t p : pids) {
        int status = 0;
        waitpid(p, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return sh;
}

} // namespace

std::atomic<int> g_work_runs{0}, g_work_inside{0};

void slow_work(gpucoll_team *)
{
    g_work_inside.store(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    g_work_runs.fetch_add(1);
    g_work_inside.store(0);
}

void watcher_work()
{
    int fake = 0; // the watcher hands the team to the work only
    gpucoll_team *t = reinterpret_cast<gpucoll_team *>(&fake);
    gpucoll::watch_work(t, slow_work);
    gpucoll::watch_work(t, slow_work); // listed once
    for (int i = 0; i < 200 && g_work_runs.load() < 3; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(g_work_runs.load() >= 3, "watch_work: the work ran %d times in 2 s", g_work_runs.load());
    // Catch it inside a run (30 ms of every ~130), then take it off the list.
    for (int i = 0; i < 2000 && !g_work_inside.load(); i++) std::this_thread::sleep_for(std::chrono::microseconds(100));
    gpucoll::unwatch_work(t);
    CHECK(!g_work_inside.load(), "unwatch_work returned while the work was running");
    const int runs = g_work_runs.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    CHECK(g_work_runs.load() == runs, "the work ran %d times after unwatch_work", g_work_runs.load() - runs);
}

int main()
{
    presence();
    watcher_work();
    Shared *late = run(2, 1, 1500000, -1);
    for (int r = 0; r < 2; r++)
        CHECK(late->status[r] == GPUCOLL_SUCCESS && late->all_ok[r], "late: rank %d: status %d", r, late->status[r]);
    Shared *gone = run(3, -1, 0, 2);
    for (int r = 0; r < 2; r++)
        CHECK(gone->status[r] == GPUCOLL_ERR_PEER, "gone: rank %d: status %d, want GPUCOLL_ERR_PEER", r,
              gone->status[r]);
    printf("test_peer_gone: %s\n", failures ? "FAILED" : "late ranks waited for, gone ranks reported, the watcher's work ends with unwatch_work");
    return failures ? 1 : 0;
}
