// A blocking call on the peer path, as the steps it composes:
//   verdict  - this rank's local answer (buffers, kernel, zero-copy descriptors)
//   agree    - every rank's answer and arguments (core/team.cpp), the GPU set up once
//   map      - zero-copy only: every peer's buffers mapped, and agreed that all could
//   plan     - the agreed plan's final form (zero-copy plan, chunk, grid)
//   start    - kernel arguments and the launch (core/call_steps.cpp), or the resident kernel
//   complete - the kernel's end and error word, then what the call leaves behind (LL wrap)
// A small call that a resident kernel serves may start before the agreement
// (post_early), which then runs while the GPU works; where it fails, the
// call is taken back (take_back) and ends as it would have without.
// Queued and stream-ordered calls share the plan and start steps and the
// error decoding (core/team_queued.cpp, core/team_stream.cpp).
#include <cstdio>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "no_throw.hpp"
#include "team.hpp"
#include "team_state.hpp"

using namespace gpucoll;

namespace {

bool is_vector_kind(gpucoll_coll_kind_t k)
{
    return k == GPUCOLL_COLL_ALLGATHERV || k == GPUCOLL_COLL_REDUCE_SCATTER || k == GPUCOLL_COLL_ALLTOALLV;
}

// This rank's verdict on `a`, before any agreement and with no side
// effect: device buffers on the team's GPU (*device: theirs), the team's
// GPU not failed, a kernel for the kind, type and op (*plan: the scratch
// plan, or the vector kinds' zero-copy one).
bool local_verdict(const gpucoll_team *t, const gpucoll_coll_args_t &a, int *device, Plan *plan)
{
    *device = -1;
    if (!a.local_ok || t->gpu == gpucoll_team::GpuFailed) return false;
    const bool vector = is_vector_kind(a.kind);
    // Reduce_scatter and alltoallv in place would overwrite what peers still read.
    if (vector && !a.sbuf && a.kind != GPUCOLL_COLL_ALLGATHERV) return false;
    gpu_port_ptr_info_t ri{}, si{};
    gpu_port_query_kind(a.rbuf, &ri);
    gpu_port_query_kind(input_of(t, a), &si);
    const bool rbuf_needed = !(a.kind == GPUCOLL_COLL_REDUCE && a.root != t->rank);
    *device = si.device;
    if (si.kind != GPU_PORT_MEM_DEVICE || (rbuf_needed && (ri.kind != GPU_PORT_MEM_DEVICE || ri.device != si.device)))
        return false;
    if (t->gpu == gpucoll_team::GpuReady && si.device != t->device) return false;
    return make_plan(a, t->rank, t->size, config(), vector, plan, t->share);
}

// The size the grid of a vector kind is cut for, equal on every rank (the
// barriers pair block b with block b): alltoallv takes the largest of what
// the ranks published, the others their common total.
size_t vector_grid_elems(const gpucoll_team *t, const gpucoll_coll_args_t &a)
{
    if (a.kind != GPUCOLL_COLL_ALLTOALLV) return a.count;
    uint64_t most = 0;
    for (int r = 0; r < t->size; r++) most = std::max(most, t->shm->ranks[r].vtotal_bytes);
    return most / gpucoll_dtype_size(a.dtype);
}

// One blocking call as it goes through the steps.
struct Blocking {
    gpucoll_coll_args_t a{};
    uint64_t seq = 0;
    size_t elt = 0;
    bool vector = false;
    bool empty = false;        // count 0 (not a vector kind): agreed on, nothing runs
    const char *src = nullptr; // this rank's input (input_of)
    int device = -1;
    Plan plan{};
    int blocks = 0;
    bool ok = false, direct = false; // this rank's verdict
    bool all_direct = false;         // every rank's buffers mapped: zero-copy
    bool any_busy = false;           // some rank's legacy default stream still at work (agreed)
    bool timed = true;               // not the call that set the team's GPU up (milliseconds)
    bool early = false;              // posted to the resident kernel before the agreement
    ResidentKernel::Call posted{};   // ... and what was posted
    uint64_t epoch_before = 0;       // the team's counters before kernel_args took this call's
    uint32_t ll_flag_before = 0;
    const char *peer_src[kMaxPeers] = {}, *peer_dst[kMaxPeers] = {};
    Clock::time_point t_start, t_verdict, t_entered, t_agreed, t_launched;
};

// Descriptors of this rank's buffers for the peers to map; false if either
// cannot be exported.
bool describe_buffers(const gpucoll_team *t, IpcCache &ipc, const Blocking &c, ShmRank &me)
{
    const char *out = exported_output(t, c.a, c.src, static_cast<const char *>(c.a.rbuf));
    gpu_port_ptr_info_t si{}, ri{};
    gpu_port_query_pointer(c.src, &si); // base and buffer id too
    gpu_port_query_pointer(out, &ri);
    return ipc.describe(c.src, si, &me.src_desc) && ipc.describe(out, ri, &me.dst_desc);
}

// Whether the plan with every buffer mapped is a zero-copy one: some are
// not (bcast, allgather, alltoall and reduce_scatter at 2 ranks from 4 MiB
// run through scratch even so, algo_select.cpp), and mapping for them only
// costs the call.
bool zero_copy_planned(const gpucoll_team *t, const gpucoll_coll_args_t &a)
{
    Plan zc{};
    return make_plan(a, t->rank, t->size, config(), true, &zc, t->share) && is_direct(zc.algo);
}

void step_verdict(gpucoll_team *t, Blocking &c)
{
    // An empty call on a team whose GPU is set up is agreed on like a device
    // call (its key says count 0): a peer given a count meets a mismatch, not
    // this rank's next call. Elsewhere it waits for nobody, as host calls do.
    if (c.empty) {
        c.ok = c.a.local_ok && t->gpu == gpucoll_team::GpuReady;
        return;
    }
    c.ok = local_verdict(t, c.a, &c.device, &c.plan);
    ShmRank &me = t->shm->ranks[t->rank];
    if (c.ok && c.vector) {
        // No scratch kernel serves the vector kinds: mapped buffers (the
        // team's GPU is set up after the agreement if need be), or staged.
        c.ok = c.direct = describe_buffers(t, process_ipc_cache(), c, me);
        if (c.ok && c.a.kind == GPUCOLL_COLL_ALLTOALLV) {
            for (int p = 0; p < t->size; p++) me.vrdispl[p] = c.a.rdispls[p];
            me.vtotal_bytes = c.a.count * c.elt;
        }
        return;
    }
    // Zero-copy needs the scratch (for its flags) to exist already: the
    // first call of a team always goes through scratch.
    if (c.ok && t->gpu == gpucoll_team::GpuReady && zero_copy_candidate(c.a, config(), t->size) &&
        zero_copy_planned(t, c.a) && (uintptr_t)c.src % 16 == 0 &&
        (uintptr_t)exported_output(t, c.a, c.src, static_cast<const char *>(c.a.rbuf)) % 16 == 0)
        c.direct = describe_buffers(t, *t->ipc, c, me);
}

// Whether the caller's computation still runs on the legacy default stream
// (a framework's backward pass beside its gradient reduction): then a grid
// of busy_max_blocks leaves it more SMs. Asked only where that is set.
bool legacy_stream_busy()
{
    return config().busy_max_blocks > 0 && gpuStreamQuery(0) == gpuErrorNotReady;
}

gpucoll_status_t step_agree(gpucoll_team *t, Blocking &c)
{
    bool all_ok;
    const bool busy = c.ok && !c.empty && legacy_stream_busy();
    gpucoll_status_t st = agree(t, c.seq, c.ok, c.direct, c.a, &all_ok, &c.all_direct, busy, &c.any_busy);
    if (st != GPUCOLL_SUCCESS) return st;
    if (!all_ok) return GPUCOLL_ERR_UNSUPPORTED;
    t->ll_cleared_since_agree = false; // every rank has left the call that cleared it (see step_complete)
    if (t->gpu == gpucoll_team::GpuNone) {
        if ((st = setup_gpu(t, c.device)) != GPUCOLL_SUCCESS) return st;
        c.timed = false;
    }
    return t->gpu == gpucoll_team::GpuReady ? GPUCOLL_SUCCESS : GPUCOLL_ERR_UNSUPPORTED; // alike everywhere
}

// This rank maps every peer's buffers; false (with the reason) if one cannot be.
bool map_peer_buffers(gpucoll_team *t, Blocking &c, IpcPins &pins)
{
    DeviceGuard g(t->device);
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        const ShmRank &peer = t->shm->ranks[r];
        if (!(c.peer_src[r] = pins.map(peer.pid, peer.src_desc)) || !(c.peer_dst[r] = pins.map(peer.pid, peer.dst_desc)))
            return false;
        if (!peer_ranges_fit(t, c.a, r, c.elt, peer.src_desc, peer.dst_desc))
            return gpucoll_fail(GPUCOLL_ERR_INVALID, "rank %d's buffer is smaller than this call reaches into", r),
                   false;
    }
    return true;
}

// Zero-copy: map, then agree once more, since a rank that cannot map a
// buffer (e.g. the allocation is already mapped in that process by other
// means) must be able to send everyone back to the scratch path rather
// than fail the call.
gpucoll_status_t step_map(gpucoll_team *t, Blocking &c, IpcPins &pins)
{
    if (!c.all_direct) return GPUCOLL_SUCCESS;
    const bool mapped = map_peer_buffers(t, c, pins);
    if (!mapped && config().verbose >= 10)
        fprintf(stderr, "coll:gpu: rank %d: zero-copy not possible, scratch path instead: %s\n", t->rank,
                gpucoll_last_error());
    t->shm->ranks[t->rank].mapped.store(c.seq << 1 | (mapped ? 1 : 0), std::memory_order_release);
    for (int r = 0; r < t->size; r++) {
        uint64_t m = 0;
        auto &slot = t->shm->ranks[r].mapped;
        gpucoll_status_t st = wait_until(t, t->progress, "the peers to map this call's buffers",
                                         [&] { return ((m = slot.load(std::memory_order_acquire)) >> 1) >= c.seq; });
        if (st != GPUCOLL_SUCCESS) return st;
        c.all_direct &= (m & 1) != 0;
    }
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t step_plan(gpucoll_team *t, Blocking &c)
{
    const gpucoll_config_t &cfg = config();
    if (c.vector && !c.all_direct) return GPUCOLL_ERR_UNSUPPORTED; // every rank saw it: all stage
    if (c.all_direct && !make_plan(c.a, t->rank, t->size, cfg, true, &c.plan, t->share))
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "no zero-copy plan for collective %d", (int)c.a.kind);
    if (c.plan.forced_refused) note_forced_refused(t, c.a.kind, c.plan);
    if (!fit_chunk(t, &c.plan, c.elt)) return GPUCOLL_ERR_UNSUPPORTED; // alike everywhere
    return GPUCOLL_SUCCESS;
}

// The kernel's arguments: scratch, or the mapped peer buffers of zero-copy.
PeerArgs blocking_args(gpucoll_team *t, Blocking &c)
{
    PeerArgs k = kernel_args(t, c.plan, c.a, c.src, static_cast<char *>(c.a.rbuf));
    if (is_direct(c.plan.algo)) {
        for (int r = 0; r < t->size; r++) {
            k.peer_src[r] = r == t->rank ? k.src : c.peer_src[r];
            k.peer_dst[r] = r == t->rank ? k.dst : const_cast<char *>(c.peer_dst[r]);
        }
        if (c.plan.algo == PeerAlgo::ReduceScatterDirect || c.plan.algo == PeerAlgo::VectorPush) {
            place_pieces(t, c.a, c.elt, &k);
            if (c.vector) c.plan.chunk = vector_grid_elems(t, c.a);
        }
    }
    gpucoll_config_t cfg = config();
    if (c.any_busy) cfg.max_blocks = cfg.busy_max_blocks; // agreed: alike on every rank
    c.blocks = blocks_for(c.plan, c.elt, cfg, t->size, t->share);
    return k;
}

void note_threads(gpucoll_team *t, const Blocking &c, const PeerArgs &k, int threads)
{
    if (t->told_threads || config().verbose < 10) return;
    const int asked = launch_threads(k, c.a.dtype, c.blocks);
    if (threads >= asked) return;
    t->told_threads = true;
    fprintf(stderr, "coll:gpu: rank %d: %s on %s/%s takes %d threads per block, not the %d asked for\n", t->rank,
            algo_name(c.plan.algo), gpucoll_dtype_name(c.a.dtype), gpucoll_op_name(c.a.op), threads, asked);
}

// Start and wait: the resident kernel (launched if need be, waited for
// inside), or a launch on the team's stream whose end the host reads from
// the word the kernel writes.
gpucoll_status_t step_start_wait(gpucoll_team *t, Blocking &c, PeerArgs &k)
{
    const gpucoll_config_t &cfg = config();
    if (t->resident.ready() && resident_serves(c.plan, c.elt, t->size, cfg)) {
        gpucoll_status_t st =
            t->resident.run(k, c.a.dtype, c.a.op, c.blocks, cfg.threads_per_block, cfg.resident_us, cfg.timeout_ms,
                            cfg.order == GPUCOLL_ORDER_AFTER_DEFAULT_STREAM, c.timed && cfg.verbose >= 20);
        c.t_launched = Clock::now();
        if (st != GPUCOLL_SUCCESS) t->gpu = gpucoll_team::GpuFailed, t->broken = true;
        return st;
    }
    t->resident.retire(); // it would hold SMs this kernel may need
    gpuError_t e;
    if (t->after_default && // the stream rule (README) without a blocking stream
        ((e = gpuEventRecord(t->after_default, nullptr)) != gpuSuccess ||
         (e = gpuStreamWaitEvent(t->stream, t->after_default, 0)) != gpuSuccess)) {
        t->gpu = gpucoll_team::GpuFailed;
        return abandon_call(t, gpu_error("ordering after the default stream", e));
    }
    KernelInFlight in_flight;
    k.done_word = t->kernels_done;
    k.done_value = t->kernels_launched + 1;
    KernelGraph *graph = graph_for(t->stream_graph);
    int threads = 0;
    gpucoll_status_t st = launch_step(
        t, Launch{&k, c.a.dtype, c.a.op, c.blocks, t->stream, graph, "a peer-to-peer collective", true}, &threads);
    c.t_launched = Clock::now();
    if (st != GPUCOLL_SUCCESS) return st;
    note_threads(t, c, k, threads);
    prepare_same_call(t, graph, k, c.a.dtype, c.a.op, c.blocks); // the host waits anyway
    // Its end from the word it writes rather than a stream
    // synchronisation: 1.2-1.7 us sooner on an H100 (gpucoll-floor:
    // launch+flag against launch+sync).
    return wait_kernel_done(t, ++t->kernels_launched, t->stream);
}

double micros(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::micro>(b - a).count();
}

// At verbose >= 30, one line per call: where a framework's calls lose
// time (waiting for the last rank to arrive, mapping, or the kernel) shows
// only call by call, since calls of every size share the team's means.
void trace_call(const gpucoll_team *t, const Blocking &c, Clock::time_point now)
{
    fprintf(stderr,
            "coll:gpu: rank %d: call %llu kind %d %zu bytes %s%s, %d blocks%s: verdict %.1f, agreement %.1f, "
            "map+plan %.1f, launch %.1f, kernel+wait %.1f us\n",
            t->rank, (unsigned long long)c.seq, (int)c.a.kind, c.a.count * c.elt, algo_name(c.plan.algo),
            c.all_direct ? " (zero-copy)" : "", c.blocks, c.any_busy ? " (busy)" : "",
            micros(c.t_start, c.t_verdict), micros(c.t_verdict, c.t_entered), micros(c.t_entered, c.t_agreed),
            micros(c.t_agreed, c.t_launched), micros(c.t_launched, now));
}

void record_timing(gpucoll_team *t, const Blocking &c)
{
    if (!c.timed) return;
    auto &tm = t->timing;
    auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
    const Clock::time_point now = Clock::now();
    tm.calls++;
    tm.verdict += secs(c.t_start, c.t_verdict);
    tm.agree += secs(c.t_verdict, c.t_agreed);
    tm.launch += secs(c.t_agreed, c.t_launched);
    tm.wait += secs(c.t_launched, now);
    if (config().verbose >= 30) trace_call(t, c, now);
}

gpucoll_status_t step_complete(gpucoll_team *t, Blocking &c)
{
    record_timing(t, c);
    gpucoll_status_t st = kernel_error(t, "a peer-to-peer collective");
    if (st != GPUCOLL_SUCCESS) {
        t->resident.retire();
        t->gpu = gpucoll_team::GpuFailed; // flags are out of step now
        t->broken = true;
        return st;
    }
    t->last_algo = c.plan.algo;
    t->ran_any = true;
    if (!is_ll(c.plan.algo) || t->ll_flag != UINT32_MAX) return GPUCOLL_SUCCESS;
    // A stale line from 2^32 calls ago would carry a current flag. Every
    // line written into this rank's area this call has been read by its
    // kernel, and no peer writes again before the next agreement, so the
    // area can be cleared here; every rank wraps at the same call. (An
    // idle resident kernel does not touch the area between calls.)
    gpuError_t e;
    // The acknowledgement words too (kernels/ll_lines.cuh): a word left from
    // before the wrap could read as a later call's.
    if ((e = gpuMemsetAsync(ll_area(t), 0, ll_area_bytes(config().ll_max_bytes), t->stream)) != gpuSuccess ||
        (e = gpuMemsetAsync(t->scratch[t->rank] + kLLAckOffset, 0, kMaxPeers * sizeof(uint64_t), t->stream)) !=
            gpuSuccess ||
        (e = gpuStreamSynchronize(t->stream)) != gpuSuccess)
        return gpu_error("clearing the LL area", e);
    t->ll_flag = 0;
    // A peer that has left this call may queue an LL call at once, into
    // an area this rank may still be clearing: queued calls keep off LL
    // until the next agreement (core/team_queued.cpp).
    t->ll_cleared_since_agree = true;
    return GPUCOLL_SUCCESS;
}

// Whether the call may go to the resident kernel before the agreement: an
// LL call (its lines carry their own flag, and one slot per sender is all
// it stores into peers), whose plan and grid no agreed fact can change, on
// a team whose previous call this rank saw agreed by every rank. That
// agreement means every rank had finished the call before it, so this
// call's lines go only to slots nobody reads any more (ll_lines.cuh), and
// that every rank is past any clearing of its LL area. Not an alltoall in
// place: taken back, its kernel may have stored the blocks of the peers it
// heard from over the input that the call's other way still needs (the
// other kinds store nothing before every rank's lines are in, or only where
// no input lies).
bool early_ok(const gpucoll_team *t, Blocking &c)
{
    const gpucoll_config_t &cfg = config();
    if (c.a.kind == GPUCOLL_COLL_ALLTOALL && !c.a.sbuf) return false;
    if (!cfg.resident_early || !c.ok || c.empty || c.vector || c.direct || t->gpu != gpucoll_team::GpuReady ||
        !t->resident.ready() || t->ll_cleared_since_agree || c.seq < 2 ||
        t->peer_path_seq[(c.seq - 1) & 1] != c.seq - 1)
        return false;
    if (!is_ll(c.plan.algo) || !resident_serves(c.plan, c.elt, t->size, cfg) || !fit_chunk(t, &c.plan, c.elt))
        return false;
    gpucoll_config_t busy = cfg;
    busy.max_blocks = cfg.busy_max_blocks;
    return cfg.busy_max_blocks <= 0 || blocks_for(c.plan, c.elt, busy, t->size, t->share) ==
                                           blocks_for(c.plan, c.elt, cfg, t->size, t->share);
}

// Posts the call before the agreement where early_ok allows; a call that
// cannot be started then simply goes the agreed way.
void post_early(gpucoll_team *t, Blocking &c)
{
    if (!early_ok(t, c)) return;
    const gpucoll_config_t &cfg = config();
    c.epoch_before = t->epoch;
    c.ll_flag_before = t->ll_flag;
    PeerArgs k = blocking_args(t, c);
    DeviceGuard g(t->device);
    c.early = t->resident.start(k, c.a.dtype, c.a.op, c.blocks, cfg.threads_per_block, cfg.resident_us,
                                cfg.timeout_ms, cfg.order == GPUCOLL_ORDER_AFTER_DEFAULT_STREAM,
                                c.timed && cfg.verbose >= 20, &c.posted) == GPUCOLL_SUCCESS;
    if (!c.early) t->epoch = c.epoch_before, t->ll_flag = c.ll_flag_before;
}

// The agreement failed (`why`): a rank not on the peer path, arguments
// that differ, a peer gone. The posted call stops, its lines leave the
// peers' slots (a later call of the same flag must not read them), and the
// team's counters go back to where every rank has them.
gpucoll_status_t take_back(gpucoll_team *t, Blocking &c, gpucoll_status_t why)
{
    DeviceGuard g(t->device);
    t->timing.taken_back++;
    gpucoll_status_t st = t->resident.withdraw(c.posted);
    const uint32_t flag = (uint32_t)c.posted.k.epoch0;
    gpuError_t e = gpuSuccess;
    for (int r = 0; r < t->size && e == gpuSuccess; r++)
        if (r != t->rank) e = gpuMemsetAsync(ll_slot_of(t, r, t->rank, flag), 0, t->ll_slot_bytes, t->stream);
    if (e == gpuSuccess) e = gpuStreamSynchronize(t->stream);
    t->epoch = c.epoch_before;
    t->ll_flag = c.ll_flag_before;
    if (st == GPUCOLL_SUCCESS && e == gpuSuccess) return why;
    t->gpu = gpucoll_team::GpuFailed;
    t->broken = true;
    return st != GPUCOLL_SUCCESS ? st : gpu_error("clearing a withdrawn call's lines", e);
}

// The agreement held: the call posted early completes as any other.
gpucoll_status_t finish_early(gpucoll_team *t, Blocking &c)
{
    c.t_agreed = c.t_launched = c.t_entered;
    t->timing.early++;
    gpucoll_status_t st = t->resident.finish(c.posted);
    if (st != GPUCOLL_SUCCESS) {
        t->gpu = gpucoll_team::GpuFailed, t->broken = true;
        return st;
    }
    return step_complete(t, c);
}

gpucoll_status_t run_blocking(gpucoll_team_t *t, const gpucoll_coll_args_t *args)
{
    // Before this call's post: the agreement's rules assume that a rank
    // which posts call n has finished its kernels of the calls before.
    gpucoll_status_t st = drain_queued(t);
    if (st != GPUCOLL_SUCCESS) return st;
    retire_after_queued_failure(t);
    Blocking c;
    c.a = *args;
    c.seq = ++t->seq;
    c.t_start = Clock::now();
    c.elt = gpucoll_dtype_size(c.a.dtype);
    c.vector = is_vector_kind(c.a.kind);
    c.empty = c.a.count == 0 && !c.vector;
    c.src = input_of(t, c.a);
    step_verdict(t, c);
    c.t_verdict = Clock::now();
    post_early(t, c);
    if ((st = step_agree(t, c)) != GPUCOLL_SUCCESS) return c.early ? take_back(t, c, st) : st;
    c.t_entered = Clock::now();
    if (c.early) return finish_early(t, c);
    if (c.empty) return GPUCOLL_SUCCESS; // every rank's is: nothing to run
    // Outlives the kernel on every return path: another thread's call may
    // not close these mappings under it.
    IpcPins pins(t->ipc, t->device);
    if ((st = step_map(t, c, pins)) != GPUCOLL_SUCCESS || (st = step_plan(t, c)) != GPUCOLL_SUCCESS) return st;
    PeerArgs k = blocking_args(t, c);
    if (team_test_before_launch) team_test_before_launch(t->rank, c.seq);
    DeviceGuard g(t->device);
    c.t_agreed = Clock::now();
    if ((st = step_start_wait(t, c, k)) != GPUCOLL_SUCCESS) return st;
    return step_complete(t, c);
}

} // namespace

extern "C" gpucoll_status_t gpucoll_team_run(gpucoll_team_t *t, const gpucoll_coll_args_t *args)
{
    const bool traced = config().verbose >= 30; // beside trace_call's line: what the steps leave out
    Clock::time_point start, ran;
    if (traced) start = Clock::now();
    gpucoll_status_t st = no_throw([&] { return run_blocking(t, args); });
    if (traced) ran = Clock::now();
    // After the call's pins are gone and its kernel is done, outside the
    // window between agreement and launch in which peers wait for us.
    if (t->ipc) ipc_after_call(t);
    if (traced)
        fprintf(stderr, "coll:gpu: rank %d: call %llu in the team %.1f us, after it (mappings) %.1f us\n", t->rank,
                (unsigned long long)t->seq, micros(start, ran), micros(ran, Clock::now()));
    return st;
}

extern "C" int gpucoll_team_can_run(gpucoll_team_t *t, const gpucoll_coll_args_t *a)
{
    if (!t || !a) return 0;
    int ok = 0;
    no_throw([&] {
        int device;
        Plan plan{};
        ok = local_verdict(t, *a, &device, &plan) ? 1 : 0;
        return GPUCOLL_SUCCESS;
    });
    return ok;
}
