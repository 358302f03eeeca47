// The GPU side of a team: this rank's scratch, stream and error flag, the
// mapping of every peer's scratch, and what the grids must fit.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "stand_in_pool.hpp"
#include "team_park.hpp"
#include "team_state.hpp"
#include "windows.hpp"

namespace gpucoll {

namespace {

static_assert(sizeof(gpuIpcMemHandle_t) == sizeof(ParkedMapping::handle), "an IPC handle is 64 bytes");

ParkStore &park_store()
{
    // Never destroyed: free_parked_gpu empties it while the GPU runtime is up.
    static ParkStore *store = new ParkStore(ParkReleaser{
        [](int d, void *p, void *) { DeviceGuard g(d); (void)gpuFree(p); },
        [](int d, void *p, void *) { DeviceGuard g(d); (void)gpuFreeHost(p); },
        [](int d, void *p, void *) { DeviceGuard g(d); (void)gpuIpcCloseMemHandle(p); },
        [](void *pool, void *) { delete static_cast<StandInPool *>(pool); }, nullptr});
    return *store;
}

// Ranks sharing a GPU (core/team_park.hpp).
bool parks_at_end(const gpucoll_team *t) { return t->share.ranks > 1; }

size_t scratch_total(const gpucoll_team *t, size_t ll_bytes) { return kDataOffset + 2 * t->half_bytes + ll_bytes; }

// The completion and give-up words in page-locked memory, an ended team's
// where one waits.
gpucoll_status_t take_words(gpucoll_team *t, int device)
{
    void *error = nullptr, *done = nullptr;
    if (park_store().take_words(device, &error, &done)) {
        t->error = static_cast<int *>(error);
        t->kernels_done = static_cast<uint64_t *>(done);
    } else {
        gpuError_t e;
        if ((e = gpuHostAlloc((void **)&t->error, sizeof(int), gpuHostAllocMapped | gpuHostAllocPortable)) != gpuSuccess)
            return gpu_error("allocating error flag", e);
        if ((e = gpuHostAlloc((void **)&t->kernels_done, sizeof(uint64_t), gpuHostAllocMapped | gpuHostAllocPortable)) !=
            gpuSuccess)
            return gpu_error("allocating the completion word of the kernels", e);
    }
    *t->error = 0;
    *t->kernels_done = 0;
    return GPUCOLL_SUCCESS;
}

// This rank's half of GPU setup: scratch, its IPC handle, a stream.
gpucoll_status_t setup_local(gpucoll_team *t, int device)
{
    DeviceGuard g(device);
    ShmRank &me = t->shm->ranks[t->rank];
    size_t bytes = config().scratch_bytes;
    if (bytes < kDataOffset + 2 * 65536) bytes = kDataOffset + 2 * 65536;
    t->half_bytes = (bytes - kDataOffset) / 2 / 4096 * 4096;
    // The LL area after the halves, zeroed: no line may carry a flag yet.
    size_t ll_max = config().ll_max_bytes;
    t->ll_slot_bytes = ll_max ? ll_slot_bytes_for(ll_max) : 0;
    size_t ll_bytes = ll_max ? ll_area_bytes(ll_max) : 0;
    gpucoll_status_t st = load_kernels_once(device);
    if (st != GPUCOLL_SUCCESS) return st;
    gpuError_t e = gpuSuccess;
    t->scratch[t->rank] = static_cast<char *>(park_store().take_scratch(device, scratch_total(t, ll_bytes)));
    if (!t->scratch[t->rank] && (e = gpuMalloc((void **)&t->scratch[t->rank], scratch_total(t, ll_bytes))) != gpuSuccess)
        return gpu_error("allocating peer scratch", e);
    // The flags and the give-up word (kernels/peer_args.h) start at 0.
    if ((e = gpuMemset(t->scratch[t->rank], 0, kDataOffset)) != gpuSuccess) return gpu_error("clearing flags", e);
    if (ll_bytes && (e = gpuMemset(ll_area(t), 0, ll_bytes)) != gpuSuccess)
        return gpu_error("clearing the LL area", e);
    if ((e = gpuIpcGetMemHandle(&me.handle, t->scratch[t->rank])) != gpuSuccess)
        return gpu_error("exporting scratch (cudaIpcGetMemHandle)", e);
    if ((e = gpuDeviceGetPCIBusId(me.bus_id, sizeof me.bus_id, device)) != gpuSuccess)
        return gpu_error("reading PCI bus id", e);
    if ((e = gpuDeviceGetAttribute(&me.sms, gpuDevAttrMultiProcessorCount, device)) != gpuSuccess)
        return gpu_error("reading the SM count", e);
    me.mps = gpu_port_mps_enabled(device);
    // A blocking stream follows the legacy default stream implicitly, and
    // the legacy stream waits for it: with several threads, one thread's
    // staged copy would then wait for another thread's kernel, which waits
    // for a peer rank whose own threads may be stuck the same way. With
    // order none nothing waits for the default stream at all.
    const bool threads = config().thread_multiple != 0;
    const bool ordered = config().order == GPUCOLL_ORDER_AFTER_DEFAULT_STREAM;
    const unsigned flags = threads || !ordered ? gpuStreamNonBlocking : gpuStreamDefault;
    if ((e = create_coll_stream(&t->stream, flags)) != gpuSuccess) return gpu_error("creating stream", e);
    if (threads && ordered && (e = gpuEventCreateWithFlags(&t->after_default, gpuEventDisableTiming)) != gpuSuccess)
        return gpu_error("creating an event", e);
    if ((e = create_coll_stream(&t->queued_stream, gpuStreamNonBlocking)) != gpuSuccess ||
        (e = gpuEventCreateWithFlags(&t->queued_after_default, gpuEventDisableTiming)) != gpuSuccess)
        return gpu_error("creating the stream of queued calls", e);
    if ((st = take_words(t, device)) != GPUCOLL_SUCCESS) return st;
    // Without it every call launches its own kernel, which is as correct.
    if (config().resident_us > 0) {
        if (t->resident.init() != GPUCOLL_SUCCESS && config().verbose >= 10)
            fprintf(stderr, "coll:gpu: rank %d: no resident kernels: %s\n", t->rank, gpucoll_last_error());
    }
    // The legacy stream, not the device: another thread's peer kernel may be
    // running, waiting for a rank that waits for this set-up.
    if ((e = gpuStreamSynchronize(nullptr)) != gpuSuccess) return gpu_error("setting up scratch", e);
    me.device = device;
    me.pid = (long)getpid();
    t->ipc = &process_ipc_cache();
    t->ipc->add_ring(&me.freed);
    return windows_setup(t);
}

// What every rank's grids must fit (algo_select.hpp): the fewest SMs any
// rank may use and the most ranks on one GPU, alike on every rank, since
// block b of one rank pairs with block b of the others.
GpuShare gpu_share_of(const gpucoll_team *t)
{
    GpuShare s{};
    s.sms = t->shm->ranks[0].sms;
    s.ranks = t->gpu_ranks > 1 ? t->gpu_ranks : 1;
    for (int r = 0; r < t->size; r++) {
        const ShmRank &a = t->shm->ranks[r];
        if (a.sms < s.sms) s.sms = a.sms;
        int on_gpu = 0;
        for (int q = 0; q < t->size; q++) on_gpu += same_gpu(a, t->shm->ranks[q]);
        if (on_gpu > s.ranks) s.ranks = on_gpu;
    }
    return s;
}

// Maps every peer's scratch. Fails if a peer is not reachable, or if two
// ranks share a GPU where config.shared_gpu does not let them (see
// gpucoll_shared_gpu_t): without MPS each wait on the other costs a time
// slice of the GPU's scheduler.
gpucoll_status_t setup_peers(gpucoll_team *t)
{
    DeviceGuard g(t->device);
    const ShmRank &me = t->shm->ranks[t->rank];
    const int mode = config().shared_gpu;
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        ShmRank &peer = t->shm->ranks[r];
        if (same_gpu(me, peer) && (mode == GPUCOLL_SHARED_GPU_OFF || (mode != GPUCOLL_SHARED_GPU_ON && !(me.mps && peer.mps))))
            return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "ranks %d and %d share GPU %s (%s)", t->rank, r,
                                peer.bus_id, mode == GPUCOLL_SHARED_GPU_OFF ? "shared_gpu is off"
                                                                           : "without MPS; shared_gpu=on would run "
                                                                             "them, a time slice per wait");
        t->scratch[r] = static_cast<char *>(
            park_store().take_mapping(t->device, reinterpret_cast<const unsigned char *>(&peer.handle)));
        if (t->scratch[r]) continue; // an ended team's mapping of the same allocation
        gpuError_t e = gpuIpcOpenMemHandle((void **)&t->scratch[r], peer.handle, gpuIpcMemLazyEnablePeerAccess);
        if (e != gpuSuccess) {
            t->scratch[r] = nullptr;
            return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "mapping rank %d's scratch: %s", r, gpuGetErrorString(e));
        }
    }
    return GPUCOLL_SUCCESS;
}

// Collective (every rank reaches it at the same call): all set up or none.
} // namespace

gpucoll_status_t setup_gpu(gpucoll_team *t, int device)
{
    ShmRank &me = t->shm->ranks[t->rank];
    t->device = device;
    gpucoll_status_t st = setup_local(t, device);
    me.plan_config = plan_config_fingerprint(config());
    me.gpu_state.store(st == GPUCOLL_SUCCESS ? 1 : 2, std::memory_order_release);
    bool all_ready = true;
    for (int r = 0; r < t->size; r++) {
        ShmRank &peer = t->shm->ranks[r];
        gpucoll_status_t w = wait_until(t, t->progress, "the peers to set up their GPUs",
                                        [&] { return peer.gpu_state.load(std::memory_order_acquire) != 0; });
        if (w != GPUCOLL_SUCCESS) return w;
        // A fast peer may already be in the second round: 3 means it was
        // ready; 4 that the set-up fails anyway (every rank then sees a 4).
        uint32_t s = peer.gpu_state.load(std::memory_order_acquire);
        if (s != 1 && s != 3 && st == GPUCOLL_SUCCESS && all_ready)
            gpucoll_fail(GPUCOLL_ERR_PEER, "rank %d could not set up its GPU side", r);
        // Unless every rank's are equal, each rank sees one that differs
        // from its own, so that all stage alike.
        if (peer.plan_config != me.plan_config && st == GPUCOLL_SUCCESS && all_ready)
            gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED,
                         "rank %d's coll_gpu parameters that choose kernels and grids differ from this rank's "
                         "(scratch_bytes, max_blocks, block_bytes, threads_per_block, thread_calls or the thread "
                         "level, the *_algorithm, size thresholds, resident, LL or auto_windows settings): they must be equal "
                         "on every rank",
                         r);
        all_ready &= (s == 1 || s == 3) && peer.plan_config == me.plan_config;
    }
    if (st == GPUCOLL_SUCCESS && all_ready) st = setup_peers(t);
    // A second round: a rank that could not map a peer must stop everyone.
    me.gpu_state.store(st == GPUCOLL_SUCCESS && all_ready ? 3 : 4, std::memory_order_release);
    bool all_mapped = true;
    for (int r = 0; r < t->size; r++) {
        ShmRank &peer = t->shm->ranks[r];
        gpucoll_status_t w = wait_until(t, t->progress, "the peers to map each other's scratch",
                                        [&] { return peer.gpu_state.load(std::memory_order_acquire) >= 3; });
        if (w != GPUCOLL_SUCCESS) return w;
        if (peer.gpu_state.load(std::memory_order_acquire) != 3 && all_mapped && st == GPUCOLL_SUCCESS && all_ready)
            gpucoll_fail(GPUCOLL_ERR_PEER, "rank %d could not map its peers' scratch", r);
        all_mapped &= peer.gpu_state.load(std::memory_order_acquire) == 3;
    }
    t->gpu = all_mapped ? gpucoll_team::GpuReady : gpucoll_team::GpuFailed;
    if (all_mapped) watch_team(t); // its kernels end if a peer goes away
    if (all_mapped) t->share = gpu_share_of(t);
    if (config().verbose >= 10) {
        char shared[160] = "";
        if (all_mapped && t->share.ranks > 1)
            snprintf(shared, sizeof shared, " (up to %d ranks on one GPU, %s; grids of at most %d blocks)",
                     t->share.ranks, me.mps ? "under MPS" : "no MPS: the GPU takes turns",
                     co_resident_blocks(t->share, calls_at_once(config())));
        fprintf(stderr, "coll:gpu: rank %d: peer-to-peer team on GPU %s %s%s%s%s\n", t->rank, me.bus_id,
                all_mapped ? "ready" : "unavailable, device buffers will be staged", all_mapped ? "" : ": ",
                all_mapped ? "" : gpucoll_last_error(), shared);
    }
    return GPUCOLL_SUCCESS;
}

PeerArgs same_call_again(const gpucoll_team *t, const PeerArgs &k)
{
    PeerArgs next = k;
    next.epoch0 = is_ll(k.algo) ? (uint64_t)t->ll_flag + 1 : t->epoch;
    next.done_value = k.done_value + 1;
    return next;
}

void prepare_same_call(const gpucoll_team *t, KernelGraph *g, const PeerArgs &k, gpucoll_dtype_t dtype,
                       gpucoll_op_t op, int blocks)
{
    if (g) prepare_peer_kernel(g, same_call_again(t, k), dtype, op, blocks, launch_threads(k, dtype, blocks));
}

gpucoll_status_t wait_kernel_done(gpucoll_team *t, uint64_t n, gpuStream_t stream)
{
    for (unsigned spin = 0;; spin++) {
        if (__atomic_load_n(t->kernels_done, __ATOMIC_ACQUIRE) >= n) return GPUCOLL_SUCCESS;
        if ((spin & 1023) != 1023) continue;
        gpuError_t e = gpuStreamQuery(stream);
        if (e == gpuErrorNotReady) {
            sched_yield(); // ranks and threads may share cores
            continue;
        }
        if (__atomic_load_n(t->kernels_done, __ATOMIC_ACQUIRE) >= n) return GPUCOLL_SUCCESS;
        return e != gpuSuccess ? gpu_error("peer-to-peer kernel", e)
                               : gpucoll_fail(GPUCOLL_ERR_INTERNAL, "a peer kernel ended without reporting");
    }
}

void ipc_after_call(gpucoll_team *t) noexcept
{
    for (int r = 0; r < t->size && t->gpu == gpucoll_team::GpuReady; r++) {
        const ShmRank &peer = t->shm->ranks[r];
        if (r == t->rank || peer.freed.count.load(std::memory_order_acquire) == t->freed_seen[r]) continue;
        try {
            std::vector<uint64_t> ids;
            const bool whole = read_freed(peer.freed, &t->freed_seen[r], &ids);
            t->ipc->forget(peer.pid, whole ? &ids : nullptr);
        } catch (...) {
            // Out of host memory: those mappings stay until the byte budget
            // closes them; the call itself succeeded.
        }
    }
    t->ipc->close_unused();
}

namespace {

// Frees or parks (team_park.hpp) the scratch and its mappings.
void release_scratch(gpucoll_team *t, bool park)
{
    const size_t ll_bytes = config().ll_max_bytes ? ll_area_bytes(config().ll_max_bytes) : 0;
    for (int r = 0; r < t->size; r++) {
        if (!t->scratch[r]) continue;
        if (r == t->rank) {
            if (park) park_store().park_scratch(t->device, scratch_total(t, ll_bytes), t->scratch[r]);
            else gpuFree(t->scratch[r]);
        } else if (park) {
            ParkedMapping m{t->device, {}, t->scratch[r]};
            memcpy(m.handle, &t->shm->ranks[r].handle, sizeof m.handle);
            park_store().park_mapping(m);
        } else {
            gpuIpcCloseMemHandle(t->scratch[r]);
        }
        t->scratch[r] = nullptr;
    }
}

} // namespace

StandInPool *unpark_stand_ins(int device) { return static_cast<StandInPool *>(park_store().take_pool(device)); }

void free_parked_gpu() { park_store().free_all(); }

void release_gpu(gpucoll_team *t)
{
    if (t->device < 0) return;
    DeviceGuard g(t->device);
    const bool park = parks_at_end(t);
    t->resident.release(); // it reads the scratch
    if (park && t->stand_ins) park_store().park_pool(t->device, t->stand_ins);
    if (park) t->stand_ins = nullptr;
    release_queued(t); // queued kernels read the scratch too (drained, or ended on a gone peer)
    release_scratch(t, park);
    if (t->ipc) remove_process_ipc_ring(&t->shm->ranks[t->rank].freed); // before the shared memory goes
    t->ipc = nullptr; // the process's cache outlives teams
    if (t->stream) {
        gpuStreamSynchronize(t->stream); // a kernel may still end after reporting; its graph must outlive it
        destroy_kernel_graph(&t->stream_graph);
        gpuStreamDestroy(t->stream);
    }
    if (t->after_default) gpuEventDestroy(t->after_default);
    unwatch_team(t); // no kernel of the team is left to read the error word
    if (park && t->error && t->kernels_done) {
        park_store().park_words(t->device, t->error, t->kernels_done);
    } else {
        if (t->error) gpuFreeHost(t->error);
        if (t->kernels_done) gpuFreeHost(t->kernels_done);
    }
    t->error = nullptr;
    t->kernels_done = nullptr;
}

} // namespace gpucoll
