#include "ipc_cache.hpp"

#include <algorithm>
#include <atomic>

#include "core_state.hpp"
#include "device_guard.hpp"
#include "gpucoll_status.h"
#include "peer_args.h"

namespace gpucoll {

bool still_allocated(unsigned long long id, uintptr_t base)
{
    gpu_port_ptr_info_t now{};
    gpu_port_query_pointer((const void *)base, &now);
    return now.buffer_id == id && (uintptr_t)now.base == base;
}

bool IpcCache::describe(const void *ptr, const gpu_port_ptr_info_t &info, IpcDesc *out)
{
    if (info.kind != GPU_PORT_MEM_DEVICE || !info.ipc_capable || !info.base) return false;
    out->buffer_id = info.buffer_id;
    out->offset = (uint64_t)((const char *)ptr - (const char *)info.base);
    out->alloc_bytes = info.size;
    std::lock_guard<std::mutex> lock(mu_);
    if (const gpuIpcMemHandle_t *h = exports_.find(info.buffer_id)) { // the per-call case
        out->handle = *h;
        return true;
    }
    if (gpuIpcGetMemHandle(&out->handle, info.base) != gpuSuccess) {
        gpuGetLastError(); // not sticky, but would be reported by the next launch check
        return false;
    }
    std::vector<unsigned long long> freed;
    exports_.add(info.buffer_id, out->handle, (uintptr_t)info.base, still_allocated, &freed);
    for (unsigned long long id : freed)
        for (FreedRing *r : rings_) post_freed(*r, id);
    return true;
}

void IpcCache::add_ring(FreedRing *r)
{
    std::lock_guard<std::mutex> lock(mu_);
    rings_.push_back(r);
}

void IpcCache::remove_ring(FreedRing *r)
{
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < rings_.size(); i++) {
        if (rings_[i] != r) continue;
        rings_[i] = rings_.back();
        rings_.pop_back();
        return;
    }
}

namespace {
// Rare (an eviction, a last unpin): the current device may be anyone's.
void close_mapping(const IpcCache::Mapping &m)
{
    DeviceGuard g(m.device);
    gpuIpcCloseMemHandle(m.base);
}
} // namespace

// What the cache handed back since unused_ held `had`: to be unmapped.
void IpcCache::set_aside(size_t had)
{
    if (unused_.size() > had) any_unused_.store(true, std::memory_order_relaxed);
}

char *IpcCache::map(long peer, const IpcDesc &d, int device)
{
    Key key{{peer, d.buffer_id}, device};
    // Held across the open: two threads must not both map one allocation
    // (the driver maps a handle once per process and device).
    std::lock_guard<std::mutex> lock(mu_);
    if (Mapping *m = imports_.pin(key)) return m->base + d.offset;
    void *base = nullptr;
    gpuError_t e = gpuIpcOpenMemHandle(&base, d.handle, gpuIpcMemLazyEnablePeerAccess);
    if (e != gpuSuccess) {
        gpuGetLastError();
        gpucoll_fail(GPUCOLL_ERR_GPU, "mapping process %ld's buffer (cudaIpcOpenMemHandle): %s", peer,
                     gpuGetErrorString(e));
        return nullptr;
    }
    const size_t had = unused_.size();
    imports_.insert_pinned(key, Mapping{static_cast<char *>(base), device}, d.alloc_bytes, &unused_);
    set_aside(had);
    return static_cast<char *>(base) + d.offset;
}

void IpcCache::unpin(long peer, unsigned long long buffer_id, int device)
{
    Key key{{peer, buffer_id}, device};
    std::lock_guard<std::mutex> lock(mu_);
    const size_t had = unused_.size();
    imports_.unpin(key, &unused_);
    set_aside(had);
}

void IpcCache::forget(long peer, const std::vector<uint64_t> *ids)
{
    std::lock_guard<std::mutex> lock(mu_);
    const size_t had = unused_.size();
    imports_.forget_if(
        [peer, ids](const Key &k) {
            if (k.first.first != peer) return false;
            return !ids || std::find(ids->begin(), ids->end(), k.first.second) != ids->end();
        },
        &unused_);
    set_aside(had);
}

void IpcCache::close_unused()
{
    if (!any_unused_.load(std::memory_order_relaxed)) return; // the per-call case
    std::vector<Mapping> closing;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (unused_.empty() || kernels_in_flight() > 0) return;
        closing.swap(unused_);
        any_unused_.store(false, std::memory_order_relaxed);
    }
    // Outside the lock: no other thread's call waits for the unmap.
    for (const Mapping &m : closing) close_mapping(m);
}

void IpcCache::release()
{
    std::lock_guard<std::mutex> lock(mu_);
    imports_.drain([](const Mapping &m) { close_mapping(m); });
    for (const Mapping &m : unused_) close_mapping(m);
    unused_.clear();
    any_unused_.store(false, std::memory_order_relaxed);
    exports_.clear();
    rings_.clear();
}

namespace {
std::mutex g_cache_mu;
std::atomic<IpcCache *> g_cache{nullptr};
} // namespace

IpcCache &process_ipc_cache()
{
    // Every call asks: one acquire load once it exists.
    if (IpcCache *c = g_cache.load(std::memory_order_acquire)) return *c;
    std::lock_guard<std::mutex> lock(g_cache_mu);
    IpcCache *c = g_cache.load(std::memory_order_relaxed);
    if (!c) {
        // A call pins up to two buffers per peer; more than that in the LRU
        // keeps one call's mappings from pushing each other out.
        size_t entries = (size_t)config().ipc_cache_entries;
        c = new IpcCache(entries > 4 * kMaxPeers ? entries : 4 * kMaxPeers, config().ipc_cache_bytes);
        g_cache.store(c, std::memory_order_release);
    }
    return *c;
}

void remove_process_ipc_ring(FreedRing *r)
{
    std::lock_guard<std::mutex> lock(g_cache_mu);
    if (IpcCache *c = g_cache.load(std::memory_order_relaxed)) c->remove_ring(r);
}

void unpin_process_ipc(long owner_pid, unsigned long long buffer_id, int device)
{
    std::lock_guard<std::mutex> lock(g_cache_mu);
    if (IpcCache *c = g_cache.load(std::memory_order_relaxed)) c->unpin(owner_pid, buffer_id, device);
}

// At component close, when no call is in progress.
void release_process_ipc_cache()
{
    std::lock_guard<std::mutex> lock(g_cache_mu);
    delete g_cache.exchange(nullptr, std::memory_order_acq_rel);
}

} // namespace gpucoll
