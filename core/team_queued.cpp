// Queued calls: collectives launched without the host agreement of a
// blocking call (MPI_I<coll>, persistent starts). What keeps them sound
// (docs/nonblocking.md has the long form):
// - Every rank takes the same path without asking the others: the plan is
//   decided from the team's GPU state, which only agreed (blocking) calls
//   change, and from the arguments MPI makes equal on every rank. A rank
//   whose buffers the kernels cannot use copies them through device memory
//   of the team's GPU rather than staying out.
// - Kernels never run ahead of a peer's reads: a rank may queue calls while
//   a peer has not launched the first. The scratch algorithms begin each
//   step with a barrier of every rank, so a rank writes a scratch half only
//   after every peer has read it for the step two before; an LL kernel
//   ends only once every rank has started its call (make_plan's `queued`,
//   kernels/ll_lines.cuh), which lets the one-way LL kernels (bcast,
//   reduce) serve queued calls too.
// - A blocking call drains this rank's queue before it posts (team.cpp),
//   so the agreement's own rule holds across the two kinds of call.
// - A persistent plan runs zero-copy once every rank has mapped every
//   other's buffers, which they learn through the team's shared memory
//   without waiting (zero_copy_from_now below says how all switch at the
//   same launch).
// - Ranks whose arguments differ would launch kernels that do not match:
//   each launch publishes the call's key, and tests, waits and drains
//   compare the peers' as they arrive (core/queued_keys.hpp), stopping the
//   kernels at a mismatch.
// - A kernel that gave up leaves the barrier epochs out of step: the team
//   then fails every later queued call with an error rather than staging
//   it, since ranks that have not seen the failure yet would launch kernels
//   while this one waited in a host collective for them. The next blocking
//   call, which every rank reaches having seen the failure, retires the GPU
//   path on all of them; queued calls stage from then on
//   (retire_after_queued_failure, team_state.hpp).
#include <cstdio>
#include <memory>
#include <new>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "no_throw.hpp"
#include "queued_plan.hpp"
#include "team_state.hpp"
#include "windows.hpp"

using namespace gpucoll;

namespace {

// What the kernels read and write on this rank, in bytes of each buffer.
struct Extents {
    size_t src = 0;    // sbuf (0: none, or in place)
    size_t rbuf = 0;   // rbuf, as far as the call reads or writes it
    size_t out = 0;    // of which the call writes the first `out` bytes (0: none)
    bool rbuf_in = false; // the call reads rbuf (in place, bcast's root)
};

Extents extents_of(const gpucoll_coll_args_t &a, int rank, int nranks)
{
    const size_t bytes = a.count * gpucoll_dtype_size(a.dtype), all = bytes * (size_t)nranks;
    const bool in_place = a.sbuf == nullptr;
    Extents e;
    switch (a.kind) {
    case GPUCOLL_COLL_ALLREDUCE: e = {bytes, bytes, bytes, in_place}; break;
    case GPUCOLL_COLL_REDUCE:
        if (rank == a.root) e = {bytes, bytes, bytes, in_place};
        else e = {bytes, 0, 0, false};
        break;
    case GPUCOLL_COLL_BCAST:
        e = {0, bytes, rank == a.root ? 0 : bytes, rank == a.root};
        break;
    case GPUCOLL_COLL_ALLGATHER: e = {bytes, all, all, in_place}; break;
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK: e = {all, in_place ? all : bytes, bytes, in_place}; break;
    case GPUCOLL_COLL_ALLTOALL: e = {all, all, all, in_place}; break;
    default: break;
    }
    if (!in_place && a.kind != GPUCOLL_COLL_BCAST) return e;
    e.src = 0;
    return e;
}

bool on_team_gpu(const gpucoll_team *t, const void *p)
{
    gpu_port_ptr_info_t info{};
    gpu_port_query_kind(p, &info);
    return info.kind == GPU_PORT_MEM_DEVICE && info.device == t->device;
}

StandInAllocator device_allocator(gpucoll_team *t)
{
    StandInAllocator a{};
    // The device, not the team: a pool outlives its team where it is parked.
    a.ctx = reinterpret_cast<void *>(static_cast<intptr_t>(t->device));
    a.device_alloc = [](size_t bytes, void *ctx) -> void * {
        DeviceGuard g(static_cast<int>(reinterpret_cast<intptr_t>(ctx)));
        void *p = nullptr;
        if (gpuMalloc(&p, bytes) == gpuSuccess) return p;
        (void)gpuGetLastError(); // ours, handled: not for the next call to find
        return nullptr;
    };
    a.mapped_host_alloc = [](size_t bytes, void *ctx) -> void * {
        DeviceGuard g(static_cast<int>(reinterpret_cast<intptr_t>(ctx)));
        void *p = nullptr;
        if (gpuHostAlloc(&p, bytes, gpuHostAllocMapped | gpuHostAllocPortable) == gpuSuccess) return p;
        (void)gpuGetLastError();
        return nullptr;
    };
    a.release = [](void *p, bool host, void *ctx) {
        DeviceGuard g(static_cast<int>(reinterpret_cast<intptr_t>(ctx)));
        (void)(host ? gpuFreeHost(p) : gpuFree(p));
    };
    return a;
}

StandInPool::Block *take_temp(gpucoll_team *t, size_t bytes)
{
    {
        std::lock_guard<std::mutex> lock(t->temps_mu);
        // Idle stand-ins are kept up to the staging cache's budget.
        if (!t->stand_ins) t->stand_ins = unpark_stand_ins(t->device);
        if (!t->stand_ins) t->stand_ins = new StandInPool(device_allocator(t), config().staging_cache_bytes);
    }
    StandInPool::Block *b = t->stand_ins->take(bytes);
    if (!b)
        gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "no device or page-locked memory for a copy of a %zu-byte buffer", bytes);
    return b;
}

// The most LL flags queued calls take: the count must not wrap under them,
// since only a blocking call can clear the LL area (core/team.cpp).
constexpr uint32_t kQueuedLLFlagLimit = UINT32_MAX - 1;

// Whether queued calls may take the LL kernels now. Alike on every rank:
// the flag and the clearing both follow calls every rank makes.
bool ll_allowed(const gpucoll_team *t) { return !t->ll_cleared_since_agree && t->ll_flag < kQueuedLLFlagLimit; }

gpucoll_status_t stand_in(gpucoll_team *t, char *user, size_t bytes, size_t in_bytes, size_t out_bytes, Stand *s)
{
    if (!user || bytes == 0 || on_team_gpu(t, user)) return GPUCOLL_SUCCESS;
    s->user = user;
    s->in_bytes = in_bytes;
    s->out_bytes = out_bytes;
    s->temp = take_temp(t, bytes);
    return s->temp ? GPUCOLL_SUCCESS : GPUCOLL_ERR_NO_MEMORY;
}

void give_back(gpucoll_team *t, Stand &s)
{
    if (s.temp) t->stand_ins->give_back(s.temp);
    s.temp = nullptr;
}

gpucoll_status_t plan_create_body(gpucoll_team *t, const gpucoll_coll_args_t &args, bool persistent,
                                  gpucoll_plan **out)
{
    *out = nullptr;
    const gpucoll_config_t &cfg = config();
    if (!queueable(args)) return GPUCOLL_ERR_UNSUPPORTED;
    if (t->retired) return GPUCOLL_ERR_UNSUPPORTED; // every rank retired at the same blocking call
    if (t->broken)
        return gpucoll_fail(GPUCOLL_ERR_PEER, "an earlier peer kernel of this communicator failed; its GPU path is out "
                                              "of step until a blocking collective on device buffers");
    // Nothing agreed has set the GPU side up yet (or it failed on every rank).
    if (t->gpu != gpucoll_team::GpuReady) return GPUCOLL_ERR_UNSUPPORTED;
    UnagreedCall c;
    gpucoll_status_t st = prepare_unagreed(t, args, cfg, &c);
    if (st != GPUCOLL_SUCCESS) return st;
    const gpucoll_coll_args_t &a = c.a;

    auto p = new (std::nothrow) gpucoll_plan;
    if (!p) return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "no memory for a plan");
    struct Cleanup {
        gpucoll_plan *&p;
        ~Cleanup()
        {
            if (p) gpucoll_plan_free(p);
        }
    } cleanup{p};
    p->team = t;
    p->a = a;
    p->plan = c.plan;
    p->blocks = c.blocks;
    if (p->plan.forced_refused) note_forced_refused(t, a.kind, p->plan);
    const size_t elt = c.elt;

    // Counted before anything that can fail on one rank alone, so that the
    // numbers stay alike on every rank.
    if (persistent) p->number = t->persistent_plans++;
    p->persistent = persistent;

    // From here on every rank takes the peer path: failures are errors.
    const Extents e = extents_of(a, t->rank, t->size);
    st = stand_in(t, const_cast<char *>(static_cast<const char *>(a.sbuf)), e.src, e.src, 0, &p->sbuf);
    if (st == GPUCOLL_SUCCESS)
        st = stand_in(t, static_cast<char *>(a.rbuf), e.rbuf, e.rbuf_in ? e.rbuf : 0, e.out, &p->rbuf);
    // No device memory nor page-locked host memory left (the pool tries
    // both): the peers will launch this call, so their kernels must be told.
    if (st != GPUCOLL_SUCCESS) return abandon_call(t, st);
    char *rbuf = p->rbuf.temp ? p->rbuf.temp->ptr : static_cast<char *>(a.rbuf);
    p->dst = rbuf;
    const size_t bytes = a.count * elt;
    p->src = a.sbuf ? (p->sbuf.temp ? p->sbuf.temp->ptr : static_cast<const char *>(a.sbuf))
             : a.kind == GPUCOLL_COLL_ALLGATHER ? rbuf + (size_t)t->rank * bytes
                                                : rbuf;
    if (persistent) publish_buffers(p);
    *out = p;
    p = nullptr; // handed over
    return GPUCOLL_SUCCESS;
}

// The plan without the LL kernels, for launches after the LL flag guard
// tripped; built on first need (alike on every rank, as the guard is).
bool no_ll_plan(gpucoll_plan *p)
{
    if (p->have_no_ll) return true;
    gpucoll_team *t = p->team;
    gpucoll_config_t plain = config();
    plain.ll_max_bytes = 0;
    const size_t elt = gpucoll_dtype_size(p->a.dtype);
    if (!make_plan(p->a, t->rank, t->size, plain, false, &p->no_ll, t->share, true) || !fit_chunk(t, &p->no_ll, elt))
        return false;
    p->no_ll_blocks = blocks_for(p->no_ll, elt, plain, t->size, t->share);
    p->have_no_ll = true;
    return true;
}

// The zero-copy plan of the call, where it has one (alike on every rank:
// from the call's kind, size, type and op alone).
bool window_plan(gpucoll_plan *p)
{
    if (p->win_checked) return p->win_ok;
    p->win_checked = true;
    p->win_ok = window_zero_copy_plan(p->team, p->a, &p->win_zc, &p->win_blocks);
    return p->win_ok;
}

// Windows (registered or made on first use): the kernel of a launch of
// `plan` with `blocks` switches to the zero-copy plan where every rank's
// buffers are in one (windows_args sets k up); the grid that serves both plans.
int with_windows(gpucoll_plan *p, const Plan &plan, int blocks, PeerArgs *k)
{
    gpucoll_team *t = p->team;
    if (p->zero_copy || is_ll(plan.algo) || !t->windows || !window_plan(p) || !windows_args(t, p->a, p->win_zc, k))
        return blocks;
    // Peers' exports found ended just now were let go of: unmapped here
    // unless a kernel of this process runs, so that the memory their owners
    // freed goes back to their GPUs (core/auto_windows.hpp).
    t->ipc->close_unused();
    return p->win_blocks > blocks ? p->win_blocks : blocks;
}

// The kernel's arguments for a launch of `plan` now: the next barrier
// epoch or LL flag of the team (taken), the mapped buffers of a zero-copy
// plan, the number its end is reported under.
PeerArgs launch_args(gpucoll_plan *p, const Plan &plan)
{
    gpucoll_team *t = p->team;
    PeerArgs k = kernel_args(t, plan, p->a, p->src, p->dst);
    if (p->zero_copy) {
        for (int r = 0; r < t->size; r++) {
            k.peer_src[r] = r == t->rank ? k.src : p->peer_src[r];
            k.peer_dst[r] = r == t->rank ? k.dst : p->peer_dst[r];
        }
        if (plan.algo == PeerAlgo::ReduceScatterDirect || plan.algo == PeerAlgo::VectorPush)
            place_pieces(t, p->a, gpucoll_dtype_size(p->a.dtype), &k);
    }
    k.done_word = t->kernels_done;
    k.done_value = t->kernels_launched + 1;
    return k;
}

// Whether a launch of `plan` goes to the team's resident kernel instead of
// the queue's stream: a small LL call, with nothing else of this rank's
// queue in flight (the kernel serves one queued call at a time, and no
// queued kernel of the team may run beside it) and no copy into a stand-in
// to wait for. Each rank decides alone: whichever kernel serves a call, it
// runs the same steps with the same flag.
bool resident_takes(const gpucoll_plan *p, const Plan &plan, bool copied_in)
{
    const gpucoll_team *t = p->team;
    return !copied_in && t->resident.ready() && !t->resident.queued_out() && is_ll(plan.algo) &&
           resident_serves(plan, gpucoll_dtype_size(p->a.dtype), t->size, config()) &&
           __atomic_load_n(t->kernels_done, __ATOMIC_ACQUIRE) >= t->kernels_launched;
}

// The launch on the resident kernel: it reports its end in the mailbox,
// not in the team's done word (whose value changes at every launch, which
// would keep any running kernel from taking the call).
gpucoll_status_t launch_resident(gpucoll_plan *p, PeerArgs k, const Plan &plan)
{
    gpucoll_team *t = p->team;
    const gpucoll_config_t &cfg = config();
    k.done_word = nullptr;
    k.done_value = 0;
    p->qseq = post_queued_call(t, p->a);
    gpucoll_status_t st = t->resident.start_queued(k, p->a.dtype, p->a.op, p->blocks, cfg.threads_per_block,
                                                   cfg.resident_us, cfg.timeout_ms,
                                                   cfg.order == GPUCOLL_ORDER_AFTER_DEFAULT_STREAM);
    if (st != GPUCOLL_SUCCESS) return abandon_call(t, st);
    kernels_queued(+1);
    p->running = p->launched = p->on_resident = true;
    p->ran = plan.algo;
    t->queued_undrained++;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t plan_launch_body(gpucoll_plan *p)
{
    gpucoll_team *t = p->team;
    const gpucoll_config_t &cfg = config();
    if (p->running) return gpucoll_fail(GPUCOLL_ERR_INVALID, "a collective was started again while it ran");
    if (t->broken)
        return gpucoll_fail(GPUCOLL_ERR_PEER,
                            "an earlier peer kernel of this communicator failed; its GPU path is out of step");
    DeviceGuard g(t->device);
    // Copies on the legacy default stream: ordered after the caller's work
    // there, and never behind our queue (its stream does not wait for that
    // one); the kernel is ordered after them below.
    gpucoll_status_t st;
    bool copied_in = false;
    for (const Stand *s : {&p->sbuf, &p->rbuf}) {
        if (!s->temp || !s->in_bytes) continue;
        if ((st = gpucoll_copy(s->temp->ptr, s->user, s->in_bytes)) != GPUCOLL_SUCCESS) return abandon_call(t, st);
        copied_in = true;
    }
    p->launches++;
    if (p->slot >= 0 && !p->zero_copy) zero_copy_from_now(p);
    const Plan *plan = &p->plan;
    int blocks = p->blocks;
    if (p->zero_copy) {
        plan = &p->zc;
        blocks = p->zc_blocks;
    } else if (is_ll(p->plan.algo) && !ll_allowed(t)) {
        if (!no_ll_plan(p))
            return abandon_call(t, gpucoll_fail(GPUCOLL_ERR_INTERNAL, "no plan without the LL kernels"));
        plan = &p->no_ll;
        blocks = p->no_ll_blocks;
    }
    PeerArgs k = launch_args(p, *plan);
    p->polls = 0;
    p->on_resident = false;
    if (resident_takes(p, *plan, copied_in)) return launch_resident(p, k, *plan);
    p->done_value = k.done_value;
    blocks = with_windows(p, *plan, blocks, &k);
    // The resident kernel would hold SMs this kernel may need; a queued
    // call it serves must be over on this GPU before this kernel starts.
    if ((st = t->resident.order_before(t->queued_stream)) != GPUCOLL_SUCCESS) return abandon_call(t, st);
    gpuError_t e;
    // A copy into a stand-in may still be landing when the copy call returns
    // (device to device; the DMA of pageable host memory): with order none
    // too the kernel must start after it.
    if ((cfg.order == GPUCOLL_ORDER_AFTER_DEFAULT_STREAM || copied_in) &&
        ((e = gpuEventRecord(t->queued_after_default, nullptr)) != gpuSuccess ||
         (e = gpuStreamWaitEvent(t->queued_stream, t->queued_after_default, 0)) != gpuSuccess))
        return abandon_call(t, gpu_error("ordering after the default stream", e));
    KernelGraph *graph = graph_for(p->persistent ? p->graph : t->queued_graph);
    p->qseq = post_queued_call(t, p->a); // before the kernel that peers may wait on
    st = launch_step(t, Launch{&k, p->a.dtype, p->a.op, blocks, t->queued_stream, graph,
                                                "a nonblocking or persistent collective", false},
                                      nullptr);
    if (st != GPUCOLL_SUCCESS) return st;
    kernels_queued(+1);
    p->running = p->launched = true;
    p->ran = plan->algo;
    t->kernels_launched++;
    t->queued_undrained++;
    prepare_same_call(t, graph, k, p->a.dtype, p->a.op, blocks);
    return GPUCOLL_SUCCESS;
}

// After a queued kernel ended: whether it (or one before it) gave up.
gpucoll_status_t queued_kernel_result(gpucoll_team *t)
{
    gpucoll_status_t st = kernel_error(t, "a nonblocking or persistent collective");
    if (st != GPUCOLL_SUCCESS) t->broken = true;
    return st;
}

bool reported_done(const gpucoll_plan *p)
{
    return __atomic_load_n(p->team->kernels_done, __ATOMIC_ACQUIRE) >= p->done_value;
}

// Whether the latest launch is over: from the word its kernel writes last
// (no driver call), and now and then from the stream too, since a kernel
// that faulted writes nothing. *failed: with a driver error (in the log).
bool launch_over(gpucoll_plan *p, unsigned poll, gpucoll_status_t *failed)
{
    *failed = GPUCOLL_SUCCESS;
    if (p->on_resident) return p->team->resident.queued_over(poll + 1, failed);
    if (reported_done(p)) return true;
    if (poll % 64 != 63) return false;
    gpuError_t e = gpuStreamQuery(p->team->queued_stream);
    if (e == gpuErrorNotReady) return false;
    if (reported_done(p)) return true;
    // A failed context, or an idle stream whose kernel never reported.
    *failed = e != gpuSuccess ? gpu_error("a queued peer kernel", e)
                              : gpucoll_fail(GPUCOLL_ERR_INTERNAL, "a queued peer kernel ended without reporting");
    return true;
}

int plan_test_body(gpucoll_plan *p, gpucoll_status_t *status)
{
    if (!p->running) {
        *status = p->status;
        return 1;
    }
    gpucoll_team *t = p->team;
    gpucoll_status_t failed;
    settle_queued_keys(t); // a mismatch stops the kernel, which may otherwise never end
    if (!launch_over(p, p->polls++, &failed)) return 0;
    DeviceGuard g(t->device);
    p->running = false;
    kernels_queued(-1);
    gpucoll_status_t st = failed != GPUCOLL_SUCCESS ? failed : queued_kernel_result(t);
    if (failed != GPUCOLL_SUCCESS) t->broken = true;
    // Every peer launched the call by now (each waits for all), so its key is there.
    settle_queued_keys(t);
    const gpucoll_status_t args = queued_call_status(t, p->qseq);
    if (args != GPUCOLL_SUCCESS) st = args;
    if (st == GPUCOLL_SUCCESS && p->rbuf.temp && p->rbuf.out_bytes)
        st = gpucoll_copy_landed(p->rbuf.user, p->rbuf.temp->ptr, p->rbuf.out_bytes);
    p->status = *status = st;
    return 1;
}

} // namespace

gpucoll_status_t gpucoll::drain_queued(gpucoll_team *t)
{
    if (!t->queued_undrained || !t->queued_stream) return GPUCOLL_SUCCESS;
    DeviceGuard g(t->device);
    gpucoll_status_t resident = GPUCOLL_SUCCESS;
    unsigned spin = 0;
    gpucoll_status_t st = wait_until(t, t->progress, "this rank's queued collectives to end", [&] {
        settle_queued_keys(t); // a mismatch stops the kernels
        return t->resident.queued_over(++spin, &resident) &&
               (__atomic_load_n(t->kernels_done, __ATOMIC_ACQUIRE) >= t->kernels_launched ||
                gpuStreamQuery(t->queued_stream) != gpuErrorNotReady);
    });
    if (st == GPUCOLL_SUCCESS) st = resident;
    if (st == GPUCOLL_SUCCESS) t->queued_undrained = 0;
    return st;
}

void gpucoll::release_queued(gpucoll_team *t)
{
    if (t->queued_stream) {
        gpuStreamSynchronize(t->queued_stream); // drained, or its kernels end on a gone peer
        destroy_kernel_graph(&t->queued_graph);
        gpuStreamDestroy(t->queued_stream);
        t->queued_stream = nullptr;
    }
    if (t->queued_after_default) gpuEventDestroy(t->queued_after_default);
    t->queued_after_default = nullptr;
    delete t->stand_ins;
    t->stand_ins = nullptr;
    windows_release(t); // queued kernels read the table
}

extern "C" gpucoll_status_t gpucoll_plan_create(gpucoll_team_t *t, const gpucoll_coll_args_t *a, int persistent,
                                               gpucoll_plan_t **plan)
{
    *plan = nullptr;
    if (!t || !a) return GPUCOLL_ERR_UNSUPPORTED;
    return no_throw([&] { return plan_create_body(t, *a, persistent != 0, plan); });
}

extern "C" gpucoll_status_t gpucoll_plan_launch(gpucoll_plan_t *p)
{
    return no_throw([&] { return plan_launch_body(p); });
}

extern "C" int gpucoll_plan_test(gpucoll_plan_t *p, gpucoll_status_t *status)
{
    int done = 1;
    gpucoll_status_t st = no_throw([&] {
        done = plan_test_body(p, status);
        return GPUCOLL_SUCCESS;
    });
    if (st != GPUCOLL_SUCCESS) *status = st;
    return done;
}

extern "C" void gpucoll_plan_free(gpucoll_plan_t *p)
{
    if (!p) return;
    gpucoll_status_t st;
    while (!plan_test_body(p, &st)) sched_yield(); // its kernel completes, or ends on a gone peer
    give_back(p->team, p->sbuf);
    give_back(p->team, p->rbuf);
    unpublish_buffers(p);
    {
        DeviceGuard g(p->team->device);
        p->pins.reset(); // unpins; the cache unmaps later
        destroy_kernel_graph(&p->graph); // freed once its last launch has ended, if it has not
    }
    delete p;
}

extern "C" int gpucoll_plan_retired(const gpucoll_plan_t *p) { return p && p->team->retired; }

extern "C" const char *gpucoll_plan_algorithm(const gpucoll_plan_t *p)
{
    return p ? algo_name(p->launched ? p->ran : p->plan.algo) : "none";
}
