// Whether a team's peers are still there, and what happens when one is not.
//
// MPI lets a rank arrive at a collective any time later than its peers: a
// wait on another rank ends only when it completes or when that rank is
// gone (its process ended, however: exit, crash, SIGKILL). Presence is an
// open-file-description lock that each rank holds on its own byte of the
// team's shared-memory object from before the team exists until it leaves:
// the kernel drops it with the process, in any PID namespace, and a peer
// tests it without disturbing anyone (F_OFD_GETLK).
//
// A kernel cannot test a lock, and its host may be away computing, so a
// process-wide watcher thread looks at the teams that have a GPU side a few
// times a second and, for a team with a peer gone, raises the team's
// host-mapped error word (kErrorPeerGone), which every wait of every kernel
// of the team reads now and then: the kernel ends instead of spinning for a
// peer that will never come (and the process can then end without leaving a
// kernel running, which under MPS would take the GPU down for every client).
#pragma once

#include "gpucoll_status.h"

struct gpucoll_team;

namespace gpucoll {

// Takes this rank's presence lock on `fd` (the team's shared object, an open
// file description of this process's own); false if the file system refuses.
bool hold_presence(int fd, int rank);
// Whether rank `r` holds its presence lock (true if the lock cannot be asked about).
bool peer_present(int fd, int r);
// The first rank of the team found gone (-1: none), testing at most every
// `period_ms` (the test is a system call per peer); remembered once found.
int team_peer_gone(gpucoll_team *t, int period_ms = 50);

// The watcher: teams with kernels that read t->error. watch_team after the
// GPU side is ready, unwatch_team before the error word is freed.
void watch_team(gpucoll_team *t);
void unwatch_team(gpucoll_team *t);

// Work the watcher does for a team at each look besides watching its
// peers (mapping their new exports: core/auto_windows.hpp). Once
// unwatch_work(t) has returned, work for t is not running and will not run.
void watch_work(gpucoll_team *t, void (*work)(gpucoll_team *));
void unwatch_work(gpucoll_team *t);

// A team its owner has destroyed while some peer may still read its GPU
// memory: the watcher calls finish(t) once ready(t) says every peer has
// left (or is gone), so that the owner does not wait, without MPI
// progress, for a peer that may need it to get there. False (nothing
// taken) if there is no watcher thread.
bool leave_later(gpucoll_team *t, bool (*ready)(gpucoll_team *), void (*finish)(gpucoll_team *));

// The status of a wait that ended because rank `r` is gone.
gpucoll_status_t peer_gone_error(int r, const char *waiting_for);

} // namespace gpucoll
