// Presence locks and the watcher thread (peer_watch.hpp says why).
#include "peer_watch.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "team_state.hpp"

namespace gpucoll {

namespace {

struct flock presence_range(short type, int rank)
{
    struct flock fl{};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = rank;
    fl.l_len = 1;
    return fl;
}

struct Work {
    gpucoll_team *t;
    void (*work)(gpucoll_team *);
};

struct Leaving {
    gpucoll_team *t;
    bool (*ready)(gpucoll_team *);
    void (*finish)(gpucoll_team *);
};

// Never destroyed: the thread may look at it while the process exits.
struct Watch {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    std::vector<gpucoll_team *> teams;
    std::vector<Work> work; // run under mu, so that unwatch_work can wait for it
    std::vector<Leaving> leaving; // teams destroyed by their owner, waiting for their peers to leave
    bool started = false, stopping = false;
    pthread_t thread;
};
Watch &watch()
{
    static Watch *w = new Watch;
    return *w;
}

// A peer that will not come: every kernel of the team reads this and ends.
void raise_gone(gpucoll_team *t)
{
    if (t->error) __atomic_store_n(t->error, kErrorPeerGone, __ATOMIC_RELEASE);
}

// The leaving teams whose peers have all left now, taken off the list.
std::vector<Leaving> ready_to_finish(Watch &w)
{
    std::vector<Leaving> ready;
    for (size_t i = 0; i < w.leaving.size();) {
        if (w.leaving[i].ready(w.leaving[i].t)) {
            ready.push_back(w.leaving[i]);
            w.leaving.erase(w.leaving.begin() + (long)i);
        } else {
            i++;
        }
    }
    return ready;
}

void *watcher(void *)
{
    const struct timespec period = {0, 100 * 1000 * 1000};
    for (;;) {
        nanosleep(&period, nullptr);
        Watch &w = watch();
        pthread_mutex_lock(&w.mu);
        if (w.stopping) {
            pthread_mutex_unlock(&w.mu);
            return nullptr;
        }
        for (gpucoll_team *t : w.teams) {
            if (team_peer_gone(t, 0) >= 0) raise_gone(t);
            else settle_stream_keys(t); // an enqueued kernel whose peers' arguments differ ends
        }
        for (const Work &k : w.work) k.work(k.t);
        std::vector<Leaving> ready = ready_to_finish(w);
        pthread_mutex_unlock(&w.mu);
        for (const Leaving &l : ready) l.finish(l.t); // outside mu: finishing unwatches the team
    }
    return nullptr;
}

// Ends the watcher before this library goes (MPI_Finalize unloads the
// component; a thread left running its code would then fault) or the
// process exits: no kernel of ours keeps waiting on a peer (a program that
// ends with a request running, or a communicator never freed), and the
// teams still waiting for their peers to leave are finished first (at
// MPI_Finalize every rank has freed its communicators, so they leave).
// A function-local static: made after the GPU runtime, so destroyed
// before it, at the library's unloading or at exit, whichever comes first.
struct WatcherStop {
    ~WatcherStop()
    {
        Watch &w = watch();
        pthread_mutex_lock(&w.mu);
        for (gpucoll_team *t : w.teams) raise_gone(t);
        w.stopping = true;
        pthread_mutex_unlock(&w.mu);
        if (w.started) pthread_join(w.thread, nullptr);
        for (int waited_ms = 0;; waited_ms += 10) {
            pthread_mutex_lock(&w.mu);
            std::vector<Leaving> ready = ready_to_finish(w);
            const bool more = !w.leaving.empty();
            pthread_mutex_unlock(&w.mu);
            for (const Leaving &l : ready) l.finish(l.t);
            if (!more || waited_ms >= 10000) break; // a bound only against a peer hung elsewhere
            const struct timespec ten_ms = {0, 10 * 1000 * 1000};
            nanosleep(&ten_ms, nullptr);
        }
    }
};

// Starts the watcher once (under w.mu).
void start_watcher(Watch &w)
{
    if (w.started) return;
    w.started = pthread_create(&w.thread, nullptr, watcher, nullptr) == 0;
    static WatcherStop stop; // see WatcherStop
    (void)stop;
}

} // namespace

bool hold_presence(int fd, int rank)
{
    struct flock fl = presence_range(F_WRLCK, rank);
    return fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

bool peer_present(int fd, int r)
{
    struct flock fl = presence_range(F_WRLCK, r);
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0) return true;
    return fl.l_type != F_UNLCK;
}

int team_peer_gone(gpucoll_team *t, int period_ms)
{
    int gone = __atomic_load_n(&t->gone_rank, __ATOMIC_ACQUIRE);
    if (gone >= 0 || t->presence_fd < 0) return gone;
    if (period_ms > 0) {
        const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
        if (now - t->presence_checked_ms.load(std::memory_order_relaxed) < period_ms) return -1;
        t->presence_checked_ms.store(now, std::memory_order_relaxed);
    }
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank || peer_present(t->presence_fd, r)) continue;
        int none = -1;
        __atomic_compare_exchange_n(&t->gone_rank, &none, r, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        return __atomic_load_n(&t->gone_rank, __ATOMIC_ACQUIRE);
    }
    return -1;
}

void watch_team(gpucoll_team *t)
{
    Watch &w = watch();
    pthread_mutex_lock(&w.mu);
    start_watcher(w);
    w.teams.push_back(t);
    pthread_mutex_unlock(&w.mu);
}

void unwatch_team(gpucoll_team *t)
{
    Watch &w = watch();
    pthread_mutex_lock(&w.mu);
    w.teams.erase(std::remove(w.teams.begin(), w.teams.end(), t), w.teams.end());
    pthread_mutex_unlock(&w.mu);
}

void watch_work(gpucoll_team *t, void (*work)(gpucoll_team *))
{
    Watch &w = watch();
    pthread_mutex_lock(&w.mu);
    start_watcher(w);
    const bool listed = std::any_of(w.work.begin(), w.work.end(), [t](const Work &k) { return k.t == t; });
    try {
        if (!listed) w.work.push_back(Work{t, work});
    } catch (...) {
        // Out of host memory: only the watcher's part of the work is not done.
    }
    pthread_mutex_unlock(&w.mu);
}

void unwatch_work(gpucoll_team *t)
{
    Watch &w = watch();
    pthread_mutex_lock(&w.mu);
    w.work.erase(std::remove_if(w.work.begin(), w.work.end(), [t](const Work &k) { return k.t == t; }), w.work.end());
    pthread_mutex_unlock(&w.mu);
}

bool leave_later(gpucoll_team *t, bool (*ready)(gpucoll_team *), void (*finish)(gpucoll_team *))
{
    Watch &w = watch();
    pthread_mutex_lock(&w.mu);
    start_watcher(w);
    if (w.started) w.leaving.push_back(Leaving{t, ready, finish});
    const bool taken = w.started;
    pthread_mutex_unlock(&w.mu);
    return taken;
}

gpucoll_status_t peer_gone_error(int r, const char *waiting_for)
{
    return gpucoll_fail(GPUCOLL_ERR_PEER, "rank %d of the node's team is gone (its process ended) while this rank "
                        "waited for %s", r, waiting_for);
}

} // namespace gpucoll
