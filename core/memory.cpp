// Memory queries, copies and the pinned host cache behind the staged path.
#include <cstring>
#include <map>
#include <mutex>

#include "core_state.hpp"
#include "gpu_port.h"
#include "gpucoll_core.h"

namespace {

// Pinned host buffers are slow to allocate (page locking), so freed ones are
// kept per size, up to config.staging_cache_bytes in all.
struct HostCache {
    std::mutex mu;
    std::multimap<size_t, void *> free_by_size;
    size_t cached_bytes = 0;
};
HostCache &host_cache()
{
    static HostCache c;
    return c;
}

// Round up so that slightly different sizes share buffers.
size_t size_class(size_t bytes)
{
    size_t c = 4096;
    while (c < bytes) c <<= 1;
    return c;
}

} // namespace

extern "C" int gpucoll_driver_present(void) { return gpu_port_driver_present(); }

extern "C" int gpucoll_current_gpu_key(void)
{
    int device = -1;
    char bus[32];
    if (!gpu_port_driver_present() || gpuGetDevice(&device) != gpuSuccess ||
        gpuDeviceGetPCIBusId(bus, sizeof bus, device) != gpuSuccess)
        return -1;
    uint32_t h = 2166136261u; // FNV-1a of "dddd:bb:dd.f"
    for (const char *c = bus; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    return (int)(h & 0x7fffffff);
}

extern "C" gpucoll_mem_kind_t gpucoll_mem_kind(const void *ptr)
{
    gpu_port_ptr_info_t info;
    gpu_port_query_kind(ptr, &info);
    switch (info.kind) {
    case GPU_PORT_MEM_DEVICE: return GPUCOLL_MEM_DEVICE;
    case GPU_PORT_MEM_MANAGED: return GPUCOLL_MEM_MANAGED;
    default: return GPUCOLL_MEM_HOST;
    }
}

extern "C" gpucoll_status_t gpucoll_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return GPUCOLL_SUCCESS;
    if (!gpu_port_driver_present()) { // no driver, no device memory: every byte is the host's
        memcpy(dst, src, bytes);
        return GPUCOLL_SUCCESS;
    }
    gpuError_t e = gpuMemcpy(dst, src, bytes, gpuMemcpyDefault);
    if (e != gpuSuccess) {
        (void)gpuGetLastError(); // reported here: not for the next call's launch check (core/gpu_error.hpp)
        return gpucoll_fail(GPUCOLL_ERR_GPU, "copy of %zu bytes from %p to %p failed: %s", bytes, src, dst,
                            gpuGetErrorString(e));
    }
    return GPUCOLL_SUCCESS;
}

extern "C" gpucoll_status_t gpucoll_copy_landed(void *dst, const void *src, size_t bytes)
{
    // Into host memory the plain copy has landed when it returns; into the
    // device, the one-rank copy's stream (ordered after the legacy stream's
    // work, synchronised) waits for it.
    if (bytes == 0 || !gpu_port_driver_present() || gpucoll_mem_kind(dst) == GPUCOLL_MEM_HOST)
        return gpucoll_copy(dst, src, bytes);
    return gpucoll_local_copy(dst, src, bytes);
}

extern "C" void *gpucoll_host_alloc(size_t bytes)
{
    size_t cls = size_class(bytes);
    HostCache &c = host_cache();
    {
        std::lock_guard<std::mutex> lock(c.mu);
        auto it = c.free_by_size.find(cls);
        if (it != c.free_by_size.end()) {
            void *p = it->second;
            c.free_by_size.erase(it);
            c.cached_bytes -= cls;
            return p;
        }
    }
    void *p = nullptr;
    gpuError_t e = gpuHostAlloc(&p, cls, gpuHostAllocPortable);
    if (e != gpuSuccess) {
        gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "pinned host allocation of %zu bytes failed: %s", cls,
                     gpuGetErrorString(e));
        return nullptr;
    }
    return p;
}

extern "C" void gpucoll_host_free(void *ptr, size_t bytes)
{
    if (!ptr) return;
    size_t cls = size_class(bytes);
    HostCache &c = host_cache();
    {
        std::lock_guard<std::mutex> lock(c.mu);
        if (c.cached_bytes + cls <= gpucoll::config().staging_cache_bytes) {
            try { // a C entry point: no exception may leave it
                c.free_by_size.emplace(cls, ptr);
                c.cached_bytes += cls;
                return;
            } catch (...) {
            }
        }
    }
    gpuFreeHost(ptr);
}

void gpucoll::release_host_cache()
{
    HostCache &c = host_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto &kv : c.free_by_size) gpuFreeHost(kv.second);
    c.free_by_size.clear();
    c.cached_bytes = 0;
}
