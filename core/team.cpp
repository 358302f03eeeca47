// Node-local teams: the control block in shared memory, the host-side
// agreement of a blocking call, and the kernel arguments every mode builds.
// A blocking call's steps are in core/team_blocking.cpp, the GPU side in
// core/team_gpu.cpp, calls queued without agreement (nonblocking,
// persistent) in core/team_queued.cpp, stream-ordered ones in
// core/team_stream.cpp.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "algo_select.hpp"
#include "call_check.hpp"
#include "core_state.hpp"
#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "gpu_port.h"
#include "gpucoll_core.h"
#include "ipc_cache.hpp"
#include "no_throw.hpp"
#include "peer_args.h"
#include "resident.hpp"
#include "team.hpp"
#include "team_state.hpp"

using namespace gpucoll;

namespace {

uint64_t pack_post(uint64_t seq, bool ok, bool direct, bool busy)
{
    return seq << 16 | (ok ? 1u << 15 : 0) | (direct ? 1u << 14 : 0) | (busy ? 1u << 13 : 0);
}
uint64_t post_seq(uint64_t p) { return p >> 16; }
bool post_ok(uint64_t p) { return (p >> 15) & 1; }
bool post_direct(uint64_t p) { return (p >> 14) & 1; }
bool post_busy(uint64_t p) { return (p >> 13) & 1; }

} // namespace

namespace {

// What the ranks exchange to share the control block: in round 1 rank 0 says
// where it is (all zero if it could not make one: nothing a peer could open
// by mistake), in round 2 every rank whether it has it mapped.
struct ShmExchange {
    int ok;
    int fd;    // memfd: rank 0's descriptor, which the peers open through /proc
    long pid;
    unsigned long long dev, ino; // what a peer must find at that path or name
    char name[64];               // named: the shm_open name
};

// memfd leaves no name anywhere, so nothing stays behind whoever dies; a
// named object (where /proc/<pid>/fd of another process cannot be opened, e.g.
// separate PID namespaces) can stay behind only if rank 0 dies before round 1.
enum class ShmWay { Memfd, Named };

// Rank 0: a new object of the control block's size, its descriptor; -1 (and
// *mine left all zero) if none.
int shm_make(ShmWay way, ShmExchange *mine)
{
    int fd = -1;
    if (way == ShmWay::Memfd) {
        fd = memfd_create("gpucoll-team", MFD_CLOEXEC);
    } else {
        // Unguessable, so that no other user can create it first (O_EXCL
        // would fail us) or open it.
        unsigned char rnd[16];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return -1;
        int n = snprintf(mine->name, sizeof mine->name, "/gpucoll-%u-", (unsigned)geteuid());
        for (unsigned char b : rnd) n += snprintf(mine->name + n, sizeof mine->name - n, "%02x", b);
        fd = shm_open(mine->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    struct stat st;
    if (fd >= 0 && (ftruncate(fd, sizeof(ShmBlock)) != 0 || fstat(fd, &st) != 0)) {
        close(fd);
        fd = -1;
        if (way == ShmWay::Named) shm_unlink(mine->name);
    }
    if (fd < 0) {
        *mine = ShmExchange{};
        return -1;
    }
    mine->ok = 1;
    mine->fd = fd;
    mine->pid = (long)getpid();
    mine->dev = st.st_dev;
    mine->ino = st.st_ino;
    return fd;
}

// A peer: rank 0's object, checked to be that very object (a pid of another
// namespace could name some other process's descriptor); -1 if not.
int shm_attach(ShmWay way, const ShmExchange &r0)
{
    if (!r0.ok || !memchr(r0.name, 0, sizeof r0.name)) return -1;
    int fd;
    if (way == ShmWay::Memfd) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/fd/%d", r0.pid, r0.fd);
        fd = open(path, O_RDWR | O_CLOEXEC);
    } else {
        fd = shm_open(r0.name, O_RDWR, 0600);
    }
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != r0.dev || st.st_ino != r0.ino ||
                    st.st_uid != geteuid() || (size_t)st.st_size < sizeof(ShmBlock))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

// Presence (core/peer_watch.hpp): this rank's lock on the object mapped
// through `mfd`, taken before any peer can look (round 2 follows).
void take_presence(gpucoll_team *t, int mfd, int rank)
{
    if (t->presence_fd >= 0) return;
    t->presence_fd = dup(mfd);
    if (t->presence_fd >= 0 && !hold_presence(t->presence_fd, rank)) {
        close(t->presence_fd);
        t->presence_fd = -1;
    }
}

} // namespace

static gpucoll_status_t team_create_body(const gpucoll_oob_t *oob, gpucoll_team_t **out, TeamShm shm)
{
    *out = nullptr;
    if (oob->size > kMaxPeers || oob->size > config().max_peers)
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "%d ranks exceed the peer path's limit", oob->size);
    ShmExchange all[kMaxPeers];
    // Every rank calls the allgather as often as the others, whatever fails
    // here: a rank without its team object only says so in round 2.
    gpucoll_team *t = new (std::nothrow) gpucoll_team;
    const bool named_only = shm == TeamShm::NamedOnly;
    void *map = MAP_FAILED;
    int rc = 0;
    bool all_ok = false;
    // Round 1: where rank 0's object is; round 2: whether everyone mapped it.
    // memfd first; the named way (2 more rounds) only if some rank could not
    // map it, which every rank learns from the same round 2.
    for (ShmWay way : {ShmWay::Memfd, ShmWay::Named}) {
        if (way == ShmWay::Memfd && named_only) continue;
        ShmExchange mine{};
        int fd = oob->rank == 0 && t ? shm_make(way, &mine) : -1;
        rc = oob->allgather(&mine, all, sizeof mine, oob->ctx);
        char name[sizeof mine.name] = "";
        if (rc == 0 && way == ShmWay::Named && all[0].ok) memcpy(name, all[0].name, sizeof name);
        int mfd = oob->rank == 0 ? fd : rc == 0 && t ? shm_attach(way, all[0]) : -1;
        if (mfd >= 0) map = mmap(nullptr, sizeof(ShmBlock), PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        if (map != MAP_FAILED && t) take_presence(t, mfd, oob->rank);
        if (mfd >= 0 && mfd != fd) close(mfd);
        ShmExchange done{};
        done.ok = map != MAP_FAILED && t && t->presence_fd >= 0;
        if (rc == 0) rc = oob->allgather(&done, all, sizeof done, oob->ctx);
        if (fd >= 0) close(fd); // the peers open rank 0's memfd through it until here
        // Everyone has it mapped or gave up: no name need stay. Every rank
        // that knows it removes it, so that it goes even if rank 0 died.
        if (oob->rank == 0 && mine.name[0]) shm_unlink(mine.name);
        else if (name[0] && name[sizeof name - 1] == 0) shm_unlink(name);
        all_ok = rc == 0 && t;
        for (int r = 0; all_ok && r < oob->size; r++) all_ok = all[r].ok;
        if (all_ok || rc != 0) break;
        if (map != MAP_FAILED) munmap(map, sizeof(ShmBlock));
        map = MAP_FAILED;
        if (t && t->presence_fd >= 0) close(t->presence_fd);
        if (t) t->presence_fd = -1;
    }
    if (!all_ok) {
        if (map != MAP_FAILED) munmap(map, sizeof(ShmBlock));
        if (t && t->presence_fd >= 0) close(t->presence_fd);
        delete t;
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "shared memory for the team could not be set up");
    }
    t->rank = oob->rank;
    t->size = oob->size;
    t->progress = oob->progress;
    t->gpu_ranks = oob->gpu_ranks;
    t->shm = static_cast<ShmBlock *>(map);
    *out = t;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t gpucoll::team_create(const gpucoll_oob_t *oob, gpucoll_team_t **out, TeamShm shm)
{
    return no_throw([&] { return team_create_body(oob, out, shm); });
}

extern "C" gpucoll_status_t gpucoll_team_create(const gpucoll_oob_t *oob, gpucoll_team_t **out)
{
    return team_create(oob, out, TeamShm::MemfdFirst);
}

namespace {

void print_timing(const gpucoll_team *t)
{
    const ResidentKernel &r = t->resident;
    if (config().verbose < 20 || !(t->timing.calls || r.queued_reused + r.queued_launched)) return;
    const auto &tm = t->timing;
    double n = (double)tm.calls / 1e6; // seconds per call -> us
    if (tm.calls)
        fprintf(stderr,
                "coll:gpu: rank %d: %llu peer-path calls, mean us: verdict %.2f, agreement %.2f, launch %.2f, "
                "kernel+wait %.2f\n",
                t->rank, (unsigned long long)tm.calls, tm.verdict / n, tm.agree / n, tm.launch / n, tm.wait / n);
    if (tm.early + tm.taken_back)
        fprintf(stderr,
                "coll:gpu: rank %d: %llu calls posted to a resident kernel before the agreement, %llu of them "
                "taken back\n",
                t->rank, (unsigned long long)(tm.early + tm.taken_back), (unsigned long long)tm.taken_back);
    if (r.reused + r.launched)
        fprintf(stderr,
                "coll:gpu: rank %d: resident kernels: %llu calls served by a running kernel (mean %.2f us), "
                "%llu launched (mean %.2f us), default-stream query mean %.2f us\n",
                t->rank, (unsigned long long)r.reused, r.reused ? r.reused_s * 1e6 / r.reused : 0.0,
                (unsigned long long)r.launched, r.launched ? r.launched_s * 1e6 / r.launched : 0.0,
                r.query_s * 1e6 / (double)(r.reused + r.launched));
    if (r.queued_reused + r.queued_launched)
        fprintf(stderr,
                "coll:gpu: rank %d: resident kernels: %llu nonblocking or persistent calls served by a running "
                "kernel, %llu launched\n",
                t->rank, (unsigned long long)r.queued_reused, (unsigned long long)r.queued_launched);
    if (r.timed_calls)
        fprintf(stderr,
                "coll:gpu: rank %d: resident kernels, GPU side of the calls served (mean us): call seen to work "
                "done %.2f, fence %.2f; the trips to and from the GPU take the rest\n",
                t->rank, r.gpu_work_s * 1e6 / (double)r.timed_calls, r.gpu_fence_s * 1e6 / (double)r.timed_calls);
}

// Every peer has left the team, or is gone (its memory is then the
// driver's to keep until we close our mappings).
bool peers_left(gpucoll_team *t)
{
    for (int r = 0; r < t->size; r++)
        if (r != t->rank && !t->shm->ranks[r].departed.load(std::memory_order_acquire) &&
            peer_present(t->presence_fd, r))
            return false;
    return true;
}

void finish_team(gpucoll_team *t)
{
    release_gpu(t);
    munmap(t->shm, sizeof(ShmBlock));
    if (t->presence_fd >= 0) close(t->presence_fd); // the peers see this rank gone from here on
    delete t;
}

} // namespace

extern "C" void gpucoll_team_destroy(gpucoll_team_t *t)
{
    if (!t) return;
    print_timing(t);
    // Queued kernels read the peers' scratch too: each rank's end before it
    // departs. (Requests hold their communicator, so none is pending here.)
    if (t->gpu == gpucoll_team::GpuReady) (void)drain_queued(t);
    // A retired team (team_state.hpp) may still have enqueued kernels in
    // flight, ending on the give-up word, and graphs holding its kernels.
    if (t->gpu == gpucoll_team::GpuReady || t->retired) close_stream_calls(t);
    if (t->gpu != gpucoll_team::GpuReady) return finish_team(t);
    // Peers may still read our scratch in the tail of their last kernel: it
    // goes once every rank has left (or is gone). Waiting for that here,
    // without MPI progress (the team may be destroyed while MPI shuts down),
    // could hold a rank whose peer needs it to reach its own MPI_Comm_free
    // (a send to it in between): the watcher finishes the team instead.
    t->shm->ranks[t->rank].departed.store(1, std::memory_order_release);
    if (peers_left(t) || !leave_later(t, peers_left, finish_team)) finish_team(t);
}

namespace {

// Call `seq`'s keys differ: every rank fails it, after a round that keeps
// every key in place until all ranks have compared them.
gpucoll_status_t keys_differ(gpucoll_team *t, uint64_t seq, KeyVerdict v)
{
    t->shm->ranks[t->rank].settled.store(seq, std::memory_order_release);
    for (int r = 0; r < t->size; r++) {
        auto &slot = t->shm->ranks[r].settled;
        if (wait_until(t, t->progress, "the peers to compare arguments",
                       [&] { return slot.load(std::memory_order_acquire) >= seq; }) != GPUCOLL_SUCCESS)
            break; // failing anyway
    }
    if (v == KeyVerdict::Truncate)
        return gpucoll_fail(GPUCOLL_ERR_TRUNCATE,
                            "collective #%llu: a peer sends more than this rank's arguments make room for",
                            (unsigned long long)seq);
    return gpucoll_fail(GPUCOLL_ERR_MISMATCH,
                        "collective #%llu: the ranks' arguments differ (kind, count, type, op, root or counts)",
                        (unsigned long long)seq);
}

} // namespace

gpucoll_status_t gpucoll::agree(gpucoll_team *t, uint64_t seq, bool ok, bool direct, const gpucoll_coll_args_t &a,
                                bool *all_ok, bool *all_direct, bool busy, bool *any_busy)
{
    ShmRank &me = t->shm->ranks[t->rank];
    const int slot_of_call = (int)(seq & 1);
    // Our slot holds call seq - 2. If that call took the peer path, every
    // peer posted it and is about to be done with it (see ShmRank).
    for (int r = 0; seq > 2 && t->peer_path_seq[slot_of_call] == seq - 2 && r < t->size; r++) {
        auto &done = t->shm->ranks[r].consumed;
        gpucoll_status_t st = wait_until(t, t->progress, "a peer to finish the collective before last",
                                         [&] { return done.load(std::memory_order_acquire) >= seq - 2; });
        if (st != GPUCOLL_SUCCESS) return st;
    }
    if (ok) me.key[slot_of_call] = call_key(a, t->size); // a rank that cannot never has its key read
    me.post[slot_of_call].store(pack_post(seq, ok, direct, busy), std::memory_order_release);
    if (team_test_after_post) team_test_after_post(t->rank, seq);
    *all_ok = *all_direct = false;
    if (any_busy) *any_busy = false;
    // Whatever follows, this rank reads nothing of this call after it.
    struct Consumed {
        ShmRank &me;
        uint64_t seq;
        ~Consumed() { me.consumed.store(seq, std::memory_order_release); }
    } consumed{me, seq};
    if (!ok) return GPUCOLL_SUCCESS;
    bool result = true, dir = direct, some_busy = false;
    for (int r = 0; r < t->size; r++) {
        uint64_t p = 0;
        auto &slot = t->shm->ranks[r].post[slot_of_call];
        gpucoll_status_t st = wait_until(t, t->progress, "the peers to reach the collective",
                                         [&] { return post_seq(p = slot.load(std::memory_order_acquire)) >= seq; });
        if (st != GPUCOLL_SUCCESS) return st;
        // Never past `seq` (see ShmRank); kept as a guard.
        result &= post_seq(p) == seq && post_ok(p);
        dir &= post_direct(p);
        some_busy |= post_busy(p);
    }
    if (!result) return GPUCOLL_SUCCESS;
    CallKey keys[kMaxPeers];
    for (int r = 0; r < t->size; r++) keys[r] = t->shm->ranks[r].key[slot_of_call];
    KeyVerdict v = compare_keys(keys, t->size, t->rank);
    if (v != KeyVerdict::Match) return keys_differ(t, seq, v);
    *all_ok = true;
    *all_direct = dir;
    if (any_busy) *any_busy = some_busy;
    t->peer_path_seq[slot_of_call] = seq;
    return GPUCOLL_SUCCESS;
}

// Reduce_scatter(_block) at this rank's block of every input, Allgatherv,
// Alltoall and Alltoallv at each peer's piece of our input and its place in
// the peer's output.
void gpucoll::place_pieces(const gpucoll_team *t, const gpucoll_coll_args_t &a, size_t elt, PeerArgs *k)
{
    const int me = t->rank;
    if (k->algo == PeerAlgo::ReduceScatterDirect) {
        size_t off;
        reduce_scatter_block_of(a, me, &off, &k->count);
        bool aligned = (uintptr_t)k->dst % 16 == 0;
        for (int r = 0; r < t->size; r++) {
            k->peer_src[r] += off * elt;
            aligned &= (uintptr_t)k->peer_src[r] % 16 == 0; // a mapping keeps the owner's alignment
        }
        k->vector_ok = aligned;
        return;
    }
    for (int p = 0; p < t->size; p++) {
        size_t rdispl = a.kind == GPUCOLL_COLL_ALLTOALLV ? t->shm->ranks[p].vrdispl[me] : 0;
        Piece piece = vector_piece(a, me, p, elt, rdispl);
        k->peer_src[p] = k->src + piece.src_off;
        k->peer_dst[p] += piece.dst_off;
        k->vbytes[p] = piece.bytes;
    }
}

// Offsets and displacements come from another process, and a wrong one
// would be a store into someone else's data.
bool gpucoll::peer_ranges_fit(const gpucoll_team *t, const gpucoll_coll_args_t &a, int r, size_t elt,
                              const IpcDesc &s, const IpcDesc &d)
{
    const ShmRank &peer = t->shm->ranks[r];
    switch (a.kind) {
    case GPUCOLL_COLL_ALLGATHERV:
    case GPUCOLL_COLL_ALLTOALL:
    case GPUCOLL_COLL_ALLTOALLV: { // we store our piece into r's output
        size_t rdispl = a.kind == GPUCOLL_COLL_ALLTOALLV ? peer.vrdispl[t->rank] : 0;
        Piece piece = vector_piece(a, t->rank, r, elt, rdispl);
        return range_fits(d.offset, piece.dst_off, d.alloc_bytes) &&
               range_fits(d.offset + piece.dst_off, piece.bytes, d.alloc_bytes);
    }
    case GPUCOLL_COLL_REDUCE_SCATTER: { // we read our block of r's input
        size_t off, count;
        reduce_scatter_block_of(a, t->rank, &off, &count);
        return range_fits(s.offset, off * elt, s.alloc_bytes) && range_fits(s.offset + off * elt, count * elt, s.alloc_bytes);
    }
    default: {
        size_t src_bytes, dst_bytes;
        direct_extent(a, t->size, elt, &src_bytes, &dst_bytes);
        return range_fits(s.offset, src_bytes, s.alloc_bytes) && range_fits(d.offset, dst_bytes, d.alloc_bytes);
    }
    }
}

void gpucoll::note_forced_refused(gpucoll_team *t, gpucoll_coll_kind_t kind, const Plan &plan)
{
    if (config().verbose < 10 || t->told_forced[kind]) return;
    t->told_forced[kind] = true;
    fprintf(stderr, "coll:gpu: rank %d: forced algorithm %s cannot serve this call (%s); %s instead (said once per "
            "communicator and collective)\n",
            t->rank, forced_algorithm(kind, config()), plan.forced_refused, plan.name);
}

PeerArgs gpucoll::kernel_args(gpucoll_team *t, const Plan &plan, const gpucoll_coll_args_t &a, const char *src,
                              char *dst)
{
    const size_t elt = gpucoll_dtype_size(a.dtype);
    PeerArgs k{};
    k.algo = plan.algo;
    k.rank = t->rank;
    k.nranks = t->size;
    k.root = a.root;
    k.dst = dst;
    k.src = src;
    k.count = a.count;
    k.chunk = plan.chunk;
    k.half_bytes = t->half_bytes;
    k.epoch0 = t->epoch;
    k.ll_slot_bytes = t->ll_slot_bytes;
    if (is_ll(plan.algo)) {
        // Every rank counts the same LL calls; 0 is what a fresh area holds,
        // and the area is zeroed again before the count wraps (gpucoll_team_run).
        k.epoch0 = ++t->ll_flag;
        k.ll_wait_acks = plan.wait_acks ? 1 : 0;
    }
    for (int r = 0; r < t->size; r++) k.scratch[r] = t->scratch[r];
    k.timeout_ns = (uint64_t)config().timeout_ms * 1000000ull;
    k.error = t->error;
    // A reduce_push non-root stores only into the root's output, whose
    // alignment the root checked before it agreed to zero-copy.
    const char *written = plan.algo == PeerAlgo::ReducePush ? exported_output(t, a, k.src, k.dst) : k.dst;
    k.vector_ok = ((uintptr_t)k.src % 16 == 0) && ((uintptr_t)written % 16 == 0) &&
                  (!plan.strided || (a.count * elt) % 16 == 0);
    const size_t steps = is_direct(plan.algo) || is_ll(plan.algo) ? 1 : (a.count + plan.chunk - 1) / plan.chunk;
    t->epoch += steps;
    return k;
}

const char *gpucoll::input_of(const gpucoll_team *t, const gpucoll_coll_args_t &a)
{
    const size_t elt = gpucoll_dtype_size(a.dtype);
    char *const rbuf = static_cast<char *>(a.rbuf);
    return a.sbuf                                 ? static_cast<const char *>(a.sbuf)
           : a.kind == GPUCOLL_COLL_ALLGATHER  ? rbuf + t->rank * a.count * elt
           : a.kind == GPUCOLL_COLL_ALLGATHERV ? rbuf + a.displs[t->rank] * elt
                                               : rbuf;
}

const char *gpucoll::exported_output(const gpucoll_team *t, const gpucoll_coll_args_t &a, const char *src,
                                     const char *dst)
{
    return a.kind == GPUCOLL_COLL_REDUCE && a.root != t->rank ? src : dst;
}

void (*gpucoll::team_test_after_post)(int rank, uint64_t seq) = nullptr;
void (*gpucoll::team_test_before_launch)(int rank, uint64_t seq) = nullptr;

extern "C" const char *gpucoll_team_last_algorithm(const gpucoll_team_t *t)
{
    return t && t->ran_any ? algo_name(t->last_algo) : "none";
}

gpucoll_status_t gpucoll::team_agree(gpucoll_team_t *t, bool ok, bool *all_ok, bool busy, bool *any_busy,
                                     size_t count)
{
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE;
    a.count = count;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    bool all_direct;
    return no_throw([&] { return agree(t, ++t->seq, ok, false, a, all_ok, &all_direct, busy, any_busy); });
}

gpucoll_status_t gpucoll::prepare_gpu(gpucoll_team *t, int device, bool can)
{
    gpucoll_coll_args_t a{};
    a.kind = GPUCOLL_COLL_ALLREDUCE; // any key: every rank posts the same
    a.count = 1;
    a.dtype = GPUCOLL_FLOAT32;
    a.op = GPUCOLL_OP_SUM;
    bool all_ok, all_direct;
    gpucoll_status_t st = agree(t, ++t->seq, can && device >= 0, false, a, &all_ok, &all_direct);
    if (st != GPUCOLL_SUCCESS || !all_ok) return st;
    return setup_gpu(t, device);
}

static gpucoll_status_t team_prepare_body(gpucoll_team_t *t, bool can)
{
    if (t->gpu != gpucoll_team::GpuNone) return GPUCOLL_SUCCESS; // alike on every rank
    return prepare_gpu(t, gpu_port_context_device(), can);
}

extern "C" gpucoll_status_t gpucoll_team_prepare(gpucoll_team_t *t, int can)
{
    if (!t) return GPUCOLL_SUCCESS;
    return no_throw([&] { return team_prepare_body(t, can != 0); });
}
