// The state of a node-local team that its parts share: the control block in
// shared memory (core/team.cpp: agreement, creation), the GPU side
// (core/team_gpu.cpp) and the queued calls (core/team_queued.cpp). Internal
// to the core.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstring>

#include "algo_select.hpp"
#include "call_check.hpp"
#include "core_state.hpp"
#include "gpu_port.h"
#include "gpucoll_core.h"
#include "auto_windows.hpp"
#include "ipc_cache.hpp"
#include "peer_args.h"
#include "peer_watch.hpp"
#include "queued_keys.hpp"
#include "resident.hpp"
#include "stand_in_pool.hpp"
#include "stream_calls.h"

namespace gpucoll {

// Persistent plans that may run zero-copy (core/team_queued.cpp) publish
// their buffers here, one slot per plan, by the plan's number modulo
// kPersistSlots. `word` is (number + 1) << 32 | the launch at which this
// rank had mapped every peer's buffers (0: not yet), or 0 for a free slot;
// the descriptors are written before the word that publishes them.
constexpr int kPersistSlots = 8;
struct PersistSlot {
    std::atomic<uint64_t> word;
    IpcDesc src, dst;
};

// One rank's slot in the shared control block. A post packs the sequence
// number of one of the rank's collectives, whether it can take the peer path
// and whether its buffers can be mapped by the peers (zero-copy): one atomic
// word, so a reader never sees half an update. Posts and keys alternate
// between two slots by the parity of the call: a rank that took the peer
// path for call n may finish it and post n+1 before a slower peer has read
// its post of n (the root of an LL bcast, the senders of an LL reduce wait
// for nobody). Before it posts n+2 over its post of n it waits until every
// peer has `consumed` n, which they are about to do: they all posted n. A
// post of n that did not lead to the peer path may be overwritten unread:
// a reader that finds a later call there concludes "cannot", as it would
// have from the post itself (the rank could not, or staged with the rest).
// The key is written before the post that publishes it (release/acquire).
// The buffer descriptors are read only by zero-copy calls, whose kernels
// need every peer, so one copy serves.
// A rank's part in registering a window (core/windows.cpp): its buffer's
// descriptor and size, published by `posted` = round << 1 | usable, then
// `mapped` = round << 1 | whether it mapped every rank's buffer.
struct ShmWindow {
    std::atomic<uint64_t> posted, mapped;
    IpcDesc desc;
    uint64_t bytes;
};

struct TeamWindows; // core/windows.cpp

struct alignas(128) ShmRank {
    std::atomic<uint64_t> post[2]; // by seq & 1
    std::atomic<uint64_t> mapped;  // seq << 1 | whether this rank mapped every peer's buffers
    std::atomic<uint64_t> settled; // seq of the latest call this rank finished reading the keys of
    std::atomic<uint64_t> consumed; // seq of the latest call this rank is done with in agree()
    CallKey key[2];                // by seq & 1
    long pid;
    IpcDesc src_desc, dst_desc;
    std::atomic<uint32_t> gpu_state; // 0 not yet, 1 ready, 2 failed
    uint64_t plan_config;            // plan_config_fingerprint, written before gpu_state
    int device;
    int mps;     // its contexts go through an MPS server
    int sms;     // the SMs this rank's kernels may use (MPS may limit them)
    char bus_id[32];
    gpuIpcMemHandle_t handle;
    std::atomic<uint32_t> departed;   // at team destruction
    // Alltoallv, published with the post: where rank p's piece lands in this
    // rank's output (its rdispls, elements), and how many bytes this rank
    // sends and receives (the grid).
    uint64_t vrdispl[kMaxPeers];
    uint64_t vtotal_bytes;
    PersistSlot persist[kPersistSlots];
    // Allocations this rank exported and has found freed since (its
    // process's IpcCache posts them): the peers unmap them (ipc_after_call).
    FreedRing freed;
    QueuedKeyRing qkeys; // the keys of this rank's queued calls (queued_keys.hpp)
    // Stream-ordered teams (core/team_stream_keys.cpp): this rank captured
    // one of the team's calls into a graph (every rank stops comparing), and
    // this rank found the keys of an enqueued call to differ (every rank's
    // kernels stop, also those of a rank that could not read them).
    std::atomic<uint32_t> stream_captured;
    std::atomic<uint32_t> stream_args_differ;
    ShmWindow window;
    ShmExports exports; // this rank's windows made on first use (core/auto_windows.hpp)
};
static_assert(GPUCOLL_TEAM_MAX_RANKS == kMaxPeers, "the glue sizes its arrays by GPUCOLL_TEAM_MAX_RANKS");

struct ShmBlock {
    ShmRank ranks[kMaxPeers];
};

inline bool same_gpu(const ShmRank &a, const ShmRank &b) { return strncmp(a.bus_id, b.bus_id, sizeof a.bus_id) == 0; }

using Clock = std::chrono::steady_clock;

// Spins until `ready()`, driving MPI's progress now and then (`progress`,
// if any: gpucoll_oob_t says why) and yielding, since ranks and threads may
// share cores. A peer may be late by any amount (MPI's rule): the wait ends
// otherwise only when a peer of `t` is gone, or past timeout_ms where that
// debugging bound is set; the status then says which, and what the wait was
// `for_what`. In core/team_wait.cpp.
gpucoll_status_t wait_end(gpucoll_team *t, const char *for_what, bool timed_out);
// What the kernels' error word says (GPUCOLL_SUCCESS: nothing went wrong),
// for a call described as `what`. In core/team_wait.cpp.
gpucoll_status_t kernel_error(gpucoll_team *t, const char *what);
template <class F> gpucoll_status_t wait_until(gpucoll_team *t, void (*progress)(void), const char *for_what, F ready)
{
    const int timeout_ms = config().timeout_ms;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (unsigned spin = 0;; spin++) {
        if (ready()) return GPUCOLL_SUCCESS;
        if ((spin & 1023) != 1023) continue;
        if (timeout_ms > 0 && Clock::now() > deadline) return wait_end(t, for_what, true);
        if (team_peer_gone(t) >= 0) return wait_end(t, for_what, false);
        if (progress) progress();
        sched_yield();
    }
}

} // namespace gpucoll

struct gpucoll_team {
    int rank = 0, size = 0;
    gpucoll::ShmBlock *shm = nullptr;
    void (*progress)(void) = nullptr; // gpucoll_oob_t.progress
    uint64_t seq = 0;        // collectives posted so far
    uint64_t peer_path_seq[2] = {}; // by seq & 1: the latest such call that agree() sent down the peer path
    gpucoll::PeerAlgo last_algo{};             // of the latest call that ran (ran_any: there was one)
    bool ran_any = false;
    uint64_t epoch = 1;      // next barrier epoch of the GPU flags
    uint32_t ll_flag = 0;    // flag of the latest LL call (kernels/ll_lines.cuh); never 0 in a call
    size_t ll_slot_bytes = 0;// 0: no LL area
    enum { GpuNone, GpuReady, GpuFailed } gpu = GpuNone;
    int device = -1;
    char *scratch[gpucoll::kMaxPeers] = {};
    size_t half_bytes = 0;
    gpuStream_t stream = nullptr;
    gpucoll::KernelGraph stream_graph; // launches on `stream` (graph_for)
    gpuEvent_t after_default = nullptr; // thread_multiple: orders `stream` after the legacy default stream
    int *error = nullptr; // host-mapped flag the kernels raise on timeout
    gpucoll::IpcCache *ipc = nullptr; // the process's map of peers' user buffers (zero-copy algorithms)
    uint64_t freed_seen[gpucoll::kMaxPeers] = {}; // by rank: the notices of its ShmRank::freed read so far
    gpucoll::ResidentKernel resident; // serves small calls without a launch each (if ready())
    gpucoll::GpuShare share;          // what the grids must fit (gpu_share_of), once the GPU is set up
    bool told_threads = false; // verbose: said once that a kernel took fewer threads than asked
    bool told_forced[GPUCOLL_COLL_KIND_COUNT] = {}; // verbose: said once that a forced algorithm could not serve
    int gpu_ranks = 0;         // gpucoll_oob_t.gpu_ranks
    // Queued calls (core/team_queued.cpp): their own stream, which never
    // waits for the legacy default stream implicitly (so that the caller's
    // work queued there after the call runs beside the collective) and is
    // ordered after it at each launch through `queued_after_default`.
    gpuStream_t queued_stream = nullptr;
    gpucoll::KernelGraph queued_graph; // launches on `queued_stream` (graph_for)
    gpuEvent_t queued_after_default = nullptr;
    // The kernels of blocking and queued calls, which never run at once (a
    // blocking call drains the queue first): how many were launched, and,
    // in page-locked memory written by the kernels, the number of the latest
    // one that is over (PeerArgs::done_word), in launch order. The host
    // learns of a kernel's end there, without a driver call.
    uint64_t kernels_launched = 0;
    uint64_t *kernels_done = nullptr;
    // Stream-ordered calls (core/team_stream.cpp): a team used only for
    // them has this rank's counters in device memory (kernels/stream_calls.h).
    gpucoll::StreamCalls *stream_calls = nullptr;
    uint64_t stream_eager = 0; // stream-ordered calls launched outside a capture
    uint32_t persistent_plans = 0; // created so far: a plan's number, alike on every rank
    // Registered windows (core/windows.cpp), made at the first registration,
    // and the collective rounds of registrations and deregistrations so far.
    gpucoll::TeamWindows *windows = nullptr;
    uint64_t window_rounds = 0;
    // A stream-ordered team's calls use the windows of the communicator's
    // ordinary team (gpucoll_stream_use_windows), which outlives it.
    gpucoll_team *window_owner = nullptr;
    bool persist_slot_busy[gpucoll::kPersistSlots] = {}; // under temps_mu
    uint64_t queued_undrained = 0; // launched since the queue was last seen empty
    // Queued calls whose keys this rank published (ShmRank::qkeys), and how
    // far the peers' keys of them were compared: progress (another thread's
    // test) and a blocking call's drain may settle at once, hence the lock.
    std::atomic<uint64_t> queued_posted{0};
    std::mutex queued_keys_mu;
    gpucoll::QueuedCheck queued_check; // under queued_keys_mu
    // A stream-ordered team compares its calls' keys in that ring too, from
    // its set-up until any rank captures one of its calls (team_stream_keys.cpp).
    std::atomic<bool> stream_keys_on{false};
    // Presence (core/peer_watch.hpp): this rank's lock is held through
    // presence_fd; gone_rank is the first peer found gone (-1: none).
    int presence_fd = -1;
    int gone_rank = -1; // atomically
    std::atomic<int64_t> presence_checked_ms{0};
    bool broken = false;           // a kernel gave up: the flags are out of step (team_queued.cpp says why it matters)
    bool retired = false;          // a failed queued or enqueued call retired the GPU path: every call stages
    bool ll_cleared_since_agree = false; // the LL area was cleared (flag wrap) after the latest agreement
    // Memory that stands in for the buffers of queued calls that the
    // kernels cannot use as they are (host memory, another GPU): made at the
    // first need (core/stand_in_pool.hpp), freed with the GPU side.
    gpucoll::StandInPool *stand_ins = nullptr;
    // persist_slot_busy and the making of stand_ins: a plan is freed from
    // progress, which may run in another thread than the one creating the
    // next plan (MPI_THREAD_MULTIPLE).
    std::mutex temps_mu;
    // Where the time of peer-path calls goes, printed at verbose >= 20 when
    // the team ends: a few clock reads per call, so always on.
    struct Timing {
        uint64_t calls = 0;
        uint64_t early = 0, taken_back = 0; // posted before the agreement (team_blocking.cpp); of them, withdrawn
        double verdict = 0, agree = 0, launch = 0, wait = 0; // seconds
    } timing;
};

namespace gpucoll {

// What launch_peer_kernel launches through on a team stream: its graph,
// unless the configuration asks for plain launches.
inline KernelGraph *graph_for(KernelGraph &g)
{
    return config().kernel_launch == GPUCOLL_LAUNCH_GRAPH ? &g : nullptr;
}

// The arguments of the same call as `k` (just launched) made again next on
// its stream, with no other call between: its barrier epoch or LL flag as
// kernel_args will take them from the team, and the next launch number.
PeerArgs same_call_again(const gpucoll_team *t, const PeerArgs &k);

// Sets `g` up, while the kernel just launched from it with `k` runs, for
// the call likeliest to come next on its stream: the same call again (a
// loop, a persistent request started again; same_call_again). The next
// launch of that call then finds the node set and only launches
// (prepare_peer_kernel). In core/team_gpu.cpp.
void prepare_same_call(const gpucoll_team *t, KernelGraph *g, const PeerArgs &k, gpucoll_dtype_t dtype,
                       gpucoll_op_t op, int blocks);

// After a blocking call: closes the mappings of peers' allocations that
// their owners have posted as freed since the last call (one counter read
// per peer when none were), then what the IPC cache set aside. In
// core/team_gpu.cpp.
void ipc_after_call(gpucoll_team *t) noexcept;

// Waits until the team's kernel number `n` (kernels_launched when it was
// launched on `stream`) has reported its end in kernels_done. A kernel that
// faulted reports nothing, so the stream is asked now and then. No deadline
// of its own: the kernel ends (and reports) once its peers arrive, or when
// one is gone (core/peer_watch.hpp). In core/team_gpu.cpp.
gpucoll_status_t wait_kernel_done(gpucoll_team *t, uint64_t n, gpuStream_t stream);

// The LL area of this rank's scratch, after the two halves (kernels/ll_lines.cuh).
inline char *ll_area(const gpucoll_team *t) { return t->scratch[t->rank] + kDataOffset + 2 * t->half_bytes; }

// Where rank `from` writes for rank `owner` in the LL call of `flag`: the
// host's copy of ll_slot (kernels/ll_lines.cuh).
inline char *ll_slot_of(const gpucoll_team *t, int owner, int from, uint32_t flag)
{
    return t->scratch[owner] + kDataOffset + 2 * t->half_bytes + ((flag & 1) * kMaxPeers + from) * t->ll_slot_bytes;
}

// The arguments of the kernel that runs `plan` for `a` (src: what it reads
// as this rank's input, dst: its output), from the next barrier epoch or LL
// flag, which it takes: every rank builds the same sequence of calls, so the
// counters stay equal on every rank. In core/team.cpp.
PeerArgs kernel_args(gpucoll_team *t, const Plan &plan, const gpucoll_coll_args_t &a, const char *src, char *dst);
// What the kernel reads as this rank's input (in-place allgather(v): our
// block of the output; bcast: rbuf). In core/team.cpp.
const char *input_of(const gpucoll_team *t, const gpucoll_coll_args_t &a);
// The output this rank exports to its peers for zero-copy, given its input
// and output: dst, except at a reduce's non-root, whose output MPI leaves
// undefined; that rank exports its input instead (no kernel writes it), so
// that every rank publishes a pair. In core/team.cpp.
const char *exported_output(const gpucoll_team *t, const gpucoll_coll_args_t &a, const char *src, const char *dst);
// Verbose 10: says, once per team and kind, that the forced algorithm of
// `kind` could not serve a call and which one did (plan.forced_refused).
void note_forced_refused(gpucoll_team *t, gpucoll_coll_kind_t kind, const Plan &plan);

// The agreement of a blocking call (core/team.cpp): posts this rank's
// answer for call `seq` (and, if it can take the peer path, the call's key)
// and gathers everyone's. *all_ok: all ranks can; *all_direct: and all can
// have their buffers mapped. When all can but the keys differ, the call
// fails on every rank (TRUNCATE where this rank would be sent more than it
// made room for, MISMATCH elsewhere), after a round that keeps every key in
// place until all ranks have compared them. *any_busy (where asked, set
// only when *all_ok): some rank posted `busy`, its legacy default stream
// still working (coll_gpu_busy_max_blocks), so every rank cuts the grid alike.
gpucoll_status_t agree(gpucoll_team *t, uint64_t seq, bool ok, bool direct, const gpucoll_coll_args_t &a, bool *all_ok,
                       bool *all_direct, bool busy = false, bool *any_busy = nullptr);

// Steps shared by the modes (core/call_steps.cpp).
// Fits a pipelined plan's chunk into half of the scratch (every rank
// computes the same); false if no chunk fits.
bool fit_chunk(const gpucoll_team *t, Plan *plan, size_t elt);
// A call that runs without a host agreement (queued, stream-ordered), as
// prepared: its arguments (bcast: sbuf cleared), plan and grid.
struct UnagreedCall {
    gpucoll_coll_args_t a{};
    size_t elt = 0;
    Plan plan{};
    int blocks = 0;
};
// Validates `args` and plans them from what every rank knows alike:
// GPUCOLL_ERR_UNSUPPORTED where no kernel serves (every rank stages),
// GPUCOLL_ERR_INVALID for a root outside the communicator.
gpucoll_status_t prepare_unagreed(const gpucoll_team *t, const gpucoll_coll_args_t &args, const gpucoll_config_t &cfg,
                                  UnagreedCall *c);
// One kernel launch of any mode.
struct Launch {
    const PeerArgs *k;
    gpucoll_dtype_t dtype;
    gpucoll_op_t op;
    int blocks;
    gpuStream_t stream;
    KernelGraph *graph; // launch through it (graph_for), or nullptr
    const char *what;   // the call, for errors
    bool blocking;      // an agreed call: a failed launch also takes the team off the peer path
};
// Threads per block of a launch of `k` on `blocks` (threads_for).
int launch_threads(const PeerArgs &k, gpucoll_dtype_t dtype, int blocks);
// Launches; on failure tells every peer's kernel of this call to give up
// (they wait for ours), marks the team broken and says why.
gpucoll_status_t launch_step(gpucoll_team *t, const Launch &l, int *threads);
// The peers' kernels of the current call stop waiting for this rank's.
void give_up_peers(gpucoll_team *t);
// A call every peer runs that this rank cannot start after all (a copy or
// an ordering step failed): the peers' kernels give up, the team is broken
// (its barrier epochs are out of step), and `st` is returned.
gpucoll_status_t abandon_call(gpucoll_team *t, gpucoll_status_t st);

// The GPU side (core/team_gpu.cpp). setup_gpu is collective: every rank
// calls it at the same call, and all end up ready or none (t->gpu).
gpucoll_status_t setup_gpu(gpucoll_team *t, int device);
// Frees the team's GPU side, or, where its ranks share a GPU, keeps it for
// the next team (core/team_park.hpp says why).
void release_gpu(gpucoll_team *t);
// A stand-in pool an ended team on `device` left (nullptr: none).
gpucoll::StandInPool *unpark_stand_ins(int device);
// Frees what ended teams left (the process leaves: no peer launches more).
void free_parked_gpu();

// The calls that may run without a host agreement (queued: nonblocking and
// persistent; stream-ordered): the six kinds with one count per rank,
// whose kernels wait for every rank (make_plan's `queued`).
inline bool queueable(const gpucoll_coll_args_t &a)
{
    switch (a.kind) {
    case GPUCOLL_COLL_ALLREDUCE:
    case GPUCOLL_COLL_REDUCE:
    case GPUCOLL_COLL_BCAST:
    case GPUCOLL_COLL_ALLGATHER:
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK:
    case GPUCOLL_COLL_ALLTOALL: return !a.counts && !a.displs && !a.rcounts && !a.rdispls;
    default: return false;
    }
}

// The first agreed step of a team's GPU side (gpucoll_team_prepare, and
// stream-ordered teams): every rank says whether it `can` (and has a GPU
// context: `device` >= 0); if all can, setup_gpu. Collective.
gpucoll_status_t prepare_gpu(gpucoll_team *t, int device, bool can);

// Stream-ordered calls (core/team_stream.cpp): at the team's end, stops
// its graphs' later kernels from touching it and waits for the ones
// running (until a peer is gone, or past the debugging timeout_ms).
void close_stream_calls(gpucoll_team *t);

// Queued calls (core/team_queued.cpp): waits (driving progress) until
// every call this rank queued on the team is done, so that a blocking
// call's agreement keeps its rule that a rank posts a call only when its
// earlier kernels have finished. Ends early only as wait_until does.
gpucoll_status_t drain_queued(gpucoll_team *t);
void release_queued(gpucoll_team *t);

// The keys of queued calls (core/team_queued_keys.cpp). post_queued_call
// publishes this rank's next queued call before its launch and returns its
// number; settle_queued_keys compares as far as the peers' keys are there
// (reads only) and, at the first mismatch, stops the team's kernels and
// breaks the team; queued_call_status is the error of call `qseq`, if any.
uint64_t post_queued_call(gpucoll_team *t, const gpucoll_coll_args_t &a);
void settle_queued_keys(gpucoll_team *t);
// The step both settle_queued_keys and settle_stream_keys take, under
// queued_keys_mu: compares the posted calls as far as the peers' keys are
// there and says (verbose 10) what it found about `calls`; true at the first
// mismatch.
bool compare_posted_keys(gpucoll_team *t, const char *calls);
gpucoll_status_t queued_call_status(gpucoll_team *t, uint64_t qseq);
// After a queued or enqueued call failed (arguments that differ, a kernel
// that gave up or could not start), the kernels' flags are out of step on
// every rank. A blocking call, once it has drained this rank's queued
// kernels, retires the team's GPU path: that call and every later one of
// the communicator take the staged route, which works. Every rank retires
// at the same blocking call, since each saw the failure by then (the keys,
// or its own kernel's give-up in the error word), so the queued calls after
// it stage alike. Not where a peer is gone: the staged route would wait for
// it for good, and those calls keep failing instead; nor under the
// debugging timeout_ms.
void retire_after_queued_failure(gpucoll_team *t);

// The keys of stream-ordered calls (core/team_stream_keys.cpp), compared in
// the same ring without a host round trip: post_stream_key publishes this
// rank's next enqueued call made outside a capture (a call being captured
// stops the comparisons for good, on every rank: a graph's replays are
// calls the host does not make, so from then on the ranks' host-side
// sequences may differ in a valid program). settle_stream_keys compares as
// far as the peers' keys are there and, at a mismatch, raises the team's
// error word, which stops its kernels and fails its later calls and
// coll_gpu_stream_status; it makes no CUDA call and takes no lock but the
// team's queued_keys_mu, so that the watcher thread calls it too (a kernel
// waiting on a peer whose arguments differ may never end otherwise).
void post_stream_key(gpucoll_team *t, const gpucoll_coll_args_t &a, bool eager);
void settle_stream_keys(gpucoll_team *t);
// Stops the team's kernels (they read the error word) and fails its later
// calls with "arguments differ"; a word already raised (a peer gone) keeps
// its reason.
void raise_args_differ(gpucoll_team *t);

// Zero-copy (core/team.cpp), shared by blocking calls and persistent plans.
// Whether what this rank's zero-copy kernel touches in peer r's buffers
// (described by s and d) lies inside them.
bool peer_ranges_fit(const gpucoll_team *t, const gpucoll_coll_args_t &a, int r, size_t elt, const IpcDesc &s,
                     const IpcDesc &d);
// Points the piece-moving zero-copy kernels (ReduceScatterDirect, VectorPush) at their pieces.
void place_pieces(const gpucoll_team *t, const gpucoll_coll_args_t &a, size_t elt, PeerArgs *k);

} // namespace gpucoll
