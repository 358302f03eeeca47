// Windows made on first use (coll_gpu_auto_windows): zero-copy for
// nonblocking, persistent and stream-ordered calls on buffers nobody
// registered, with no host wait at any call.
//
// A rank exports the allocation of a buffer the first time such a call
// could run zero-copy on it: it takes one of its export slots in its
// shared memory (the IPC handle, then the export's number, seqlock-style)
// and goes on; a call being captured into a graph does so too. Each rank
// maps its peers' new exports at its own next such call, or its watcher
// thread does within about 100 ms (a program that only replays graphs
// makes no such call), and writes them into its window table
// (kernels/windows.h), the row before the number. A call's kernel posts its buffers as (slot, number,
// offset); the ranks' tables may then differ, so the kernels vote
// (kernels/windows.cuh): zero-copy where every rank resolved every post,
// the call's scratch plan otherwise, alike everywhere.
//
// An export ends when its owner finds its allocation freed (at its next
// export, or one slot checked per call): the slot is emptied and its peers
// unmap the allocation at their next such call or look. Freeing synchronises the
// owner's GPU, so no kernel that named the export is still running; and no
// later post names it. Internal to the core.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <mutex>

#include "gpu_port.h"
#include "ipc_cache.hpp"
#include "windows.h"

struct gpucoll_team;

namespace gpucoll {

// One rank's exports on one team, in the team's shared memory: written by
// that rank only. seq is 0 while a slot is empty or being written.
struct ShmExport {
    std::atomic<uint64_t> seq;
    IpcDesc desc; // of the whole allocation (offset 0)
};
struct ShmExports {
    std::atomic<uint64_t> changes; // bumped after every change of a slot
    ShmExport slot[kMaxExports];
};

// This rank's exports on a team: pure bookkeeping, unit-tested.
class ExportSlots {
public:
    // The live slot of allocation `id`, or -1.
    int find(unsigned long long id) const;
    int free_slot() const;
    // Takes slot s for allocation `id` at `base`; returns the export's
    // number: never 0, never one this book handed out before.
    uint64_t add(int s, unsigned long long id, uintptr_t base, uint64_t bytes);
    void retire(int s);
    bool live(int s) const { return s >= 0 && s < kMaxExports && seq_[s] != 0; }
    uint64_t seq(int s) const { return seq_[s]; }
    unsigned long long id(int s) const { return id_[s]; }
    uintptr_t base(int s) const { return base_[s]; }
    uint64_t bytes(int s) const { return bytes_[s]; }
    // The live slots in turn, one per call (-1: none live).
    int next_to_check();
    // Allocations that could not be exported (pool memory): the last few,
    // so that calls on them do not try again at every call.
    void refuse(unsigned long long id);
    bool refused(unsigned long long id) const;

private:
    static constexpr int kRefused = 16;
    unsigned long long refused_[kRefused] = {};
    int next_refused_ = 0;
    uint64_t seq_[kMaxExports] = {};
    unsigned long long id_[kMaxExports] = {};
    uintptr_t base_[kMaxExports] = {};
    uint64_t bytes_[kMaxExports] = {};
    uint64_t next_seq_ = 1;
    int check_ = 0;
};

// Publishing and reading a slot (atomics in whatever memory holds it).
void publish_export(ShmExports &x, int s, uint64_t seq, const IpcDesc &d);
void retire_export(ShmExports &x, int s);
// Slot s as it is now: false if it is being written (read again later).
// *seq 0: empty.
bool read_export(const ShmExports &x, int s, uint64_t *seq, IpcDesc *d);

// A team's side of it (in TeamWindows, core/windows.hpp).
struct AutoWindows {
    std::mutex mu; // calls on the stream-ordered team and on its owner share it
    ExportSlots mine;
    uint64_t changes_seen[kWindowPeers] = {};
    struct Import {
        uint64_t seq; // the peer's export mapped in this row (0: none)
        unsigned long long buffer_id;
        long pid; // its owner's process
        bool pinned;
    };
    Import imports[kWindowPeers][kMaxExports] = {};
    gpuStream_t upload = nullptr; // non-blocking: writing the table waits for nobody's work
};

struct TeamWindows;

// The descriptor of [p, p + bytes) of this rank's for a call's kernel (an
// export descriptor, kernels/windows.h), exporting its allocation if it is
// new; first maps the peers' new exports. Also while a stream is being
// captured (the calls it makes are let through the capture's rules). 0
// where it cannot be one (not device memory of the team's GPU, not 16-byte
// aligned, not exportable, all slots taken). `home` is the team whose
// shared memory and windows hold the exports (a stream-ordered team's owner).
uint64_t auto_window_desc(gpucoll_team *home, TeamWindows *ws, const void *p, size_t bytes);
// Maps the peers' new exports, from the watcher thread (core/peer_watch.hpp)
// a few times a second: a program that only replays graphs makes no call
// that would map them, and its graphs' kernels vote for scratch until every
// rank has. Does nothing while a call of the team is mapping them.
void auto_windows_catch_up(gpucoll_team *t, TeamWindows *ws);
// At the team's end (its kernels done): the peers' exports it maps are let go.
void auto_windows_release(gpucoll_team *home, TeamWindows *ws);

} // namespace gpucoll
