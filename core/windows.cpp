#include "windows.hpp"

#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>
#include <memory>
#include <new>

#include "call_check.hpp"
#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "no_throw.hpp"
#include "peer_watch.hpp"
#include "team_state.hpp"

namespace gpucoll {

int WindowBook::free_slot() const
{
    for (int w = 0; w < kMaxWindows; w++)
        if (!used_[w]) return w;
    return -1;
}

uint32_t WindowBook::add(int w, const char *base, size_t bytes)
{
    base_[w] = base;
    bytes_[w] = bytes;
    gen_[w] = next_gen_++;
    if (!used_[w]) count_++;
    used_[w] = true;
    return gen_[w];
}

void WindowBook::remove(int w)
{
    if (!used(w)) return;
    used_[w] = false;
    count_--;
}

uint64_t WindowBook::describe(const void *p, size_t bytes) const
{
    const char *c = static_cast<const char *>(p);
    if (!c || (uintptr_t)c % 16) return 0;
    for (int w = 0; w < kMaxWindows; w++) {
        if (!used_[w] || c < base_[w] || (size_t)(c - base_[w]) > bytes_[w]) continue;
        const size_t off = (size_t)(c - base_[w]);
        if (bytes <= bytes_[w] - off) return window_desc(w, gen_[w], off);
    }
    return 0;
}

namespace {

// One round of the windows' shared-memory protocol: posts (round << 1 | ok)
// in this rank's word `which` and waits until every rank has posted this
// round there. Every registration and deregistration posts `posted`, then
// `mapped`, so no rank posts the next round's `posted` before every rank
// has posted this round's `mapped`, which each does after reading the
// `posted` words; likewise for `mapped`. Returns whether every rank said
// ok, in *all_ok.
gpucoll_status_t window_round(gpucoll_team *t, std::atomic<uint64_t> ShmWindow::*which, uint64_t round, bool ok,
                              bool *all_ok)
{
    (t->shm->ranks[t->rank].window.*which).store(round << 1 | (ok ? 1 : 0), std::memory_order_release);
    gpucoll_status_t st = wait_until(t, t->progress, "every rank at the window registration", [&] {
        for (int r = 0; r < t->size; r++)
            if ((t->shm->ranks[r].window.*which).load(std::memory_order_acquire) >> 1 < round) return false;
        return true;
    });
    *all_ok = true;
    for (int r = 0; r < t->size; r++)
        *all_ok = *all_ok && ((t->shm->ranks[r].window.*which).load(std::memory_order_acquire) & 1);
    return st;
}

// What this rank posts of its buffer: its descriptor, if it can be a window.
bool describe_own(gpucoll_team *t, void *buf, size_t bytes, IpcDesc *d)
{
    gpu_port_ptr_info_t info{};
    if (!buf || bytes == 0 || (uintptr_t)buf % 16 || gpu_port_query_pointer(buf, &info) != 0) return false;
    if (info.kind != GPU_PORT_MEM_DEVICE || info.device != t->device) return false;
    if (!t->ipc->describe(buf, info, d)) return false;
    return d->offset <= d->alloc_bytes && bytes <= d->alloc_bytes - d->offset;
}

// Maps every peer's posted buffer of this round into row w of the mirror.
bool map_window(gpucoll_team *t, TeamWindows *ws, int w, void *buf, size_t bytes)
{
    ws->pins[w].reset(new (std::nothrow) IpcPins(t->ipc, t->device));
    if (!ws->pins[w]) return false;
    for (int r = 0; r < t->size; r++) {
        const ShmRank &peer = t->shm->ranks[r];
        char *p = r == t->rank ? static_cast<char *>(buf) : ws->pins[w]->map(peer.pid, peer.window.desc);
        if (!p) return false;
        ws->host.base[w][r] = p;
        ws->host.bytes[w][r] = r == t->rank ? bytes : peer.window.bytes;
    }
    return true;
}

gpucoll_status_t upload_row(TeamWindows *ws, int w)
{
    gpuError_t e = gpuMemcpy(&ws->device->base[w], &ws->host.base[w], sizeof ws->host.base[w], gpuMemcpyHostToDevice);
    if (e == gpuSuccess)
        e = gpuMemcpy(&ws->device->bytes[w], &ws->host.bytes[w], sizeof ws->host.bytes[w], gpuMemcpyHostToDevice);
    if (e == gpuSuccess)
        e = gpuMemcpy(&ws->device->gen[w], &ws->host.gen[w], sizeof ws->host.gen[w], gpuMemcpyHostToDevice);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("writing the window table", e);
}

// Tables outlive their teams, kept per GPU for the next team: freeing
// device memory waits for the whole device, which at a communicator's free
// may run kernels of other communicators that wait for peers (the scratch
// is parked for the same reason, core/team_park.hpp).
std::mutex g_tables_mu;
std::vector<std::pair<int, WindowTable *>> g_tables;

WindowTable *take_table(int device)
{
    std::lock_guard<std::mutex> lock(g_tables_mu);
    for (size_t i = 0; i < g_tables.size(); i++) {
        if (g_tables[i].first != device) continue;
        WindowTable *w = g_tables[i].second;
        g_tables[i] = g_tables.back();
        g_tables.pop_back();
        return w;
    }
    WindowTable *w = nullptr;
    return gpuMalloc(reinterpret_cast<void **>(&w), sizeof(WindowTable)) == gpuSuccess ? w : nullptr;
}

void give_table(int device, WindowTable *w)
{
    std::lock_guard<std::mutex> lock(g_tables_mu);
    try {
        g_tables.emplace_back(device, w);
    } catch (...) {
        // Out of host memory: the table stays allocated, unused.
    }
}

// Made at the GPU set-up (auto_windows) or the first registration; the
// table is zeroed on a stream of its own, which waits for nobody's work.
TeamWindows *windows_of(gpucoll_team *t)
{
    if (t->windows) return t->windows;
    auto ws = new (std::nothrow) TeamWindows;
    if (!ws) return nullptr;
    if (!(ws->device = take_table(t->device)) ||
        gpuStreamCreateWithFlags(&ws->autow.upload, gpuStreamNonBlocking) != gpuSuccess ||
        gpuMemsetAsync(ws->device, 0, sizeof(WindowTable), ws->autow.upload) != gpuSuccess ||
        gpuStreamSynchronize(ws->autow.upload) != gpuSuccess) {
        (void)gpuGetLastError();
        if (ws->autow.upload) gpuStreamDestroy(ws->autow.upload);
        if (ws->device) give_table(t->device, ws->device);
        delete ws;
        return nullptr;
    }
    return t->windows = ws;
}

} // namespace

gpucoll_status_t windows_setup(gpucoll_team *t)
{
    if (!config().auto_windows) return GPUCOLL_SUCCESS;
    if (!windows_of(t)) return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "making the window table");
    watch_work(t, [](gpucoll_team *u) { auto_windows_catch_up(u, u->windows); });
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t windows_register(gpucoll_team *t, void *buf, size_t bytes, int *id)
{
    *id = -1;
    if (t->gpu != gpucoll_team::GpuReady || t->retired) return GPUCOLL_ERR_UNSUPPORTED; // alike on every rank
    DeviceGuard g(t->device);
    TeamWindows *ws = windows_of(t); // made alike: a failure here is this rank's "not ok" below
    ShmWindow &mine = t->shm->ranks[t->rank].window;
    const int w = ws ? ws->book.free_slot() : -1;
    const bool own_ok = ws && w >= 0 && describe_own(t, buf, bytes, &mine.desc);
    mine.bytes = bytes;
    const uint64_t round = ++t->window_rounds;
    bool all_posted = false, all_mapped = false;
    gpucoll_status_t st = window_round(t, &ShmWindow::posted, round, own_ok, &all_posted);
    if (st != GPUCOLL_SUCCESS) return st;
    const bool mapped = all_posted && map_window(t, ws, w, buf, bytes);
    if ((st = window_round(t, &ShmWindow::mapped, round, mapped, &all_mapped)) != GPUCOLL_SUCCESS) return st;
    if (!all_mapped) {
        if (ws && w >= 0) ws->pins[w].reset();
        if (ws && w < 0) return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "all %d windows of the communicator are taken", kMaxWindows);
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "a rank's buffer cannot be a window (device memory of the "
                                                 "communicator's GPU, 16-byte aligned, exportable) or could not be mapped");
    }
    ws->host.gen[w] = ws->book.add(w, static_cast<char *>(buf), bytes);
    if ((st = upload_row(ws, w)) != GPUCOLL_SUCCESS) return st;
    *id = w;
    if (config().verbose >= 20)
        fprintf(stderr, "coll:gpu: rank %d: window %d registered: %zu bytes at %p\n", t->rank, w, bytes, buf);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t windows_deregister(gpucoll_team *t, int id)
{
    if (t->gpu != gpucoll_team::GpuReady) return gpucoll_fail(GPUCOLL_ERR_INVALID, "no window is registered"); // alike
    TeamWindows *ws = t->windows;
    const bool mine = ws && ws->book.used(id);
    DeviceGuard g(t->device);
    // No kernel may still read a window when its owner frees it: each rank
    // drains its queue before the round, so past it every rank's has.
    gpucoll_status_t st = mine ? drain_queued(t) : GPUCOLL_SUCCESS;
    // Two rounds, as a registration: a rank's word of the first round is
    // read by every rank before any rank can post the next round's.
    bool all = false, unused = false;
    const uint64_t round = ++t->window_rounds;
    if (st == GPUCOLL_SUCCESS) st = window_round(t, &ShmWindow::posted, round, mine, &all);
    if (st == GPUCOLL_SUCCESS) st = window_round(t, &ShmWindow::mapped, round, true, &unused);
    if (st != GPUCOLL_SUCCESS) return st;
    if (!all) return gpucoll_fail(GPUCOLL_ERR_INVALID, "window %d is not registered on every rank", id);
    ws->book.remove(id);
    for (int r = 0; r < kMaxPeers; r++) {
        ws->host.base[id][r] = nullptr;
        ws->host.bytes[id][r] = 0;
    }
    st = upload_row(ws, id);
    ws->pins[id].reset();
    unsigned long long calls = 0;
    if (config().verbose >= 20 &&
        gpuMemcpy(&calls, &ws->device->zero_copy_calls, sizeof calls, gpuMemcpyDeviceToHost) == gpuSuccess)
        fprintf(stderr, "coll:gpu: rank %d: window %d deregistered; %llu calls ran zero-copy in windows so far\n",
                t->rank, id, calls);
    return st;
}

namespace {

// The team whose windows a call of t uses: a stream-ordered team's owner
// while that has registered windows (registration is collective, so this is
// alike on every rank), else its own (made at the GPU set-up where
// auto_windows is on), whose shared memory then carries its exports.
gpucoll_team *windows_home(gpucoll_team *t)
{
    gpucoll_team *o = t->window_owner;
    if (o && o->gpu == gpucoll_team::GpuReady && o->windows && o->windows->book.count() > 0) return o;
    return t;
}

TeamWindows *windows_used_by(gpucoll_team *t)
{
    gpucoll_team *home = windows_home(t);
    return home->gpu == gpucoll_team::GpuReady ? home->windows : nullptr;
}

// Where [p, p + bytes) lies: a registered window, else (coll_gpu_auto_windows)
// an export of this rank's.
uint64_t describe_buffer(gpucoll_team *t, TeamWindows *ws, const void *p, size_t bytes)
{
    const uint64_t d = ws->book.describe(p, bytes);
    if (d || !config().auto_windows) return d;
    gpucoll_team *home = windows_home(t);
    DeviceGuard g(home->device);
    return auto_window_desc(home, ws, p, bytes);
}

} // namespace

bool window_zero_copy_plan(const gpucoll_team *t, const gpucoll_coll_args_t &a, Plan *zc, int *blocks)
{
    const gpucoll_config_t &cfg = config();
    if (!zero_copy_candidate(a, cfg, t->size) || !make_plan(a, t->rank, t->size, cfg, true, zc, t->share, true) ||
        !is_direct(zc->algo))
        return false;
    *blocks = blocks_for(*zc, gpucoll_dtype_size(a.dtype), cfg, t->size, t->share);
    return true;
}

bool window_worth(const gpucoll_coll_args_t &a, const gpucoll_config_t &cfg, int nranks)
{
    const size_t bytes = a.count * gpucoll_dtype_size(a.dtype);
    switch (a.kind) {
    case GPUCOLL_COLL_ALLREDUCE: return true;
    // Two ranks: the zero-copy bcast is slower than the scratch one up to
    // 64 MiB, level at 256 MiB, faster at 1 GiB (2 x H200, 2026-11-28).
    case GPUCOLL_COLL_BCAST: return bytes >= cfg.window_move_min_bytes * (nranks == 2 ? 8 : 1);
    case GPUCOLL_COLL_ALLGATHER: return bytes * (size_t)nranks >= cfg.window_move_min_bytes;
    // Their zero-copy candidates start at direct_min_bytes (of all blocks), as
    // allreduce's; reduce's from 3 ranks (reduce_push). Two ranks: the
    // switched alltoall and reduce_scatter lost 4-9 us at 4 MiB against
    // their scratch plans and won from 16 MiB (one H200 under MPS, 2026-11-29).
    case GPUCOLL_COLL_REDUCE: return true;
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK:
    case GPUCOLL_COLL_ALLTOALL: return nranks > 2 || bytes * (size_t)nranks >= 4 * cfg.direct_min_bytes;
    default: return false;
    }
}

bool windows_args(gpucoll_team *t, const gpucoll_coll_args_t &a, const Plan &zc, PeerArgs *k)
{
    if (!is_direct(zc.algo) || !window_worth(a, config(), t->size)) return false;
    TeamWindows *ws = windows_used_by(t);
    if (!ws || (ws->book.count() == 0 && !config().auto_windows)) return false;
    // Every rank's blocks for the strided kinds (the kernel points at its own: take_windows).
    size_t bytes = 0, dst_bytes = 0;
    direct_extent(a, t->size, gpucoll_dtype_size(a.dtype), &bytes, &dst_bytes);
    k->windows = ws->device;
    k->window_algo = zc.algo;
    k->window_src_bytes = bytes;
    k->window_dst_bytes = dst_bytes;
    // The kernel reads src and writes dst (kernel_args resolved in place and
    // stand-ins): a stand-in is in no registered window, but (auto_windows) its
    // pool's allocation may be exported like any buffer the kernel reads.
    // A reduce's non-root posts its input as its output (MPI ignores its
    // receive buffer, which may be anything; no kernel writes it).
    const char *out = exported_output(t, a, k->src, k->dst);
    k->window_src = describe_buffer(t, ws, k->src, bytes);
    k->window_dst = out == k->src && dst_bytes == bytes ? k->window_src : describe_buffer(t, ws, out, dst_bytes);
    return true;
}

int stream_windows(gpucoll_team *t, const gpucoll_coll_args_t &a, const Plan &plan, int blocks, PeerArgs *k)
{
    if (is_ll(plan.algo) || is_direct(plan.algo)) return blocks;
    const TeamWindows *ws = windows_used_by(t);
    if (!config().auto_windows && (!ws || ws->book.count() == 0)) return blocks;
    // Only the resident kernels of sums have the zero-copy bodies (kernels/peer_kernels.cuh).
    const bool reduces = a.kind == GPUCOLL_COLL_ALLREDUCE || a.kind == GPUCOLL_COLL_REDUCE ||
                         a.kind == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
    if (reduces && a.op != GPUCOLL_OP_SUM) return blocks;
    Plan zc{};
    int zc_blocks = 0;
    if (!window_zero_copy_plan(t, a, &zc, &zc_blocks) || !windows_args(t, a, zc, k)) return blocks;
    return zc_blocks > blocks ? zc_blocks : blocks;
}

void windows_release(gpucoll_team *t)
{
    unwatch_work(t); // before anything the watcher's catch-up reads goes
    TeamWindows *ws = t->windows;
    if (!ws) return;
    unsigned long long calls = 0;
    if (config().verbose >= 20 && ws->device && ws->autow.upload &&
        gpuMemcpyAsync(&calls, &ws->device->zero_copy_calls, sizeof calls, gpuMemcpyDeviceToHost, ws->autow.upload) ==
            gpuSuccess &&
        gpuStreamSynchronize(ws->autow.upload) == gpuSuccess && calls)
        fprintf(stderr, "coll:gpu: rank %d: %llu calls without a host agreement ran zero-copy in windows\n", t->rank,
                calls);
    auto_windows_release(t, ws);
    if (ws->device) give_table(t->device, ws->device);
    delete ws; // its pins unpin the mappings
    t->windows = nullptr;
}

} // namespace gpucoll

extern "C" gpucoll_status_t gpucoll_team_window_register(gpucoll_team_t *t, void *buf, size_t bytes, int *id)
{
    if (!t || !id) return GPUCOLL_ERR_INVALID;
    return gpucoll::no_throw([&] { return gpucoll::windows_register(t, buf, bytes, id); });
}

extern "C" gpucoll_status_t gpucoll_team_window_deregister(gpucoll_team_t *t, int id)
{
    if (!t) return GPUCOLL_ERR_INVALID;
    return gpucoll::no_throw([&] { return gpucoll::windows_deregister(t, id); });
}
