#include "ipc_cache.hpp"

#include "core_state.hpp"
#include "gpucoll_status.h"
#include "peer_args.h"

namespace gpucoll {

bool IpcCache::describe(const void *ptr, const gpu_port_ptr_info_t &info, IpcDesc *out)
{
    if (info.kind != GPU_PORT_MEM_DEVICE || !info.ipc_capable || !info.base) return false;
    out->buffer_id = info.buffer_id;
    out->offset = (uint64_t)((const char *)ptr - (const char *)info.base);
    if (gpuIpcMemHandle_t *h = exports_.find(info.buffer_id)) {
        out->handle = *h;
        return true;
    }
    if (gpuIpcGetMemHandle(&out->handle, info.base) != gpuSuccess) {
        gpuGetLastError(); // not sticky, but would be reported by the next launch check
        return false;
    }
    std::pair<unsigned long long, gpuIpcMemHandle_t> gone;
    exports_.insert(info.buffer_id, out->handle, &gone); // a handle holds nothing: dropping it is free
    return true;
}

char *IpcCache::map(long peer, const IpcDesc &d)
{
    auto key = std::make_pair(peer, d.buffer_id);
    if (char **base = imports_.find(key)) return *base + d.offset;
    void *base = nullptr;
    gpuError_t e = gpuIpcOpenMemHandle(&base, d.handle, gpuIpcMemLazyEnablePeerAccess);
    if (e != gpuSuccess) {
        gpuGetLastError();
        gpucoll_fail(GPUCOLL_ERR_GPU, "mapping process %ld's buffer (cudaIpcOpenMemHandle): %s", peer,
                     gpuGetErrorString(e));
        return nullptr;
    }
    std::pair<std::pair<long, unsigned long long>, char *> gone;
    if (imports_.insert(key, static_cast<char *>(base), &gone)) gpuIpcCloseMemHandle(gone.second);
    return static_cast<char *>(base) + d.offset;
}

void IpcCache::release()
{
    imports_.for_each([](const std::pair<long, unsigned long long> &, char *base) { gpuIpcCloseMemHandle(base); });
    imports_.clear();
    exports_.clear();
}

namespace {
IpcCache *g_cache;
}

IpcCache &process_ipc_cache()
{
    if (!g_cache) {
        // A call maps up to two buffers per peer: never evict within one call.
        size_t entries = (size_t)config().ipc_cache_entries;
        g_cache = new IpcCache(entries > 4 * kMaxPeers ? entries : 4 * kMaxPeers);
    }
    return *g_cache;
}

void release_process_ipc_cache()
{
    delete g_cache;
    g_cache = nullptr;
}

} // namespace gpucoll
