#include "staging_copier.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gpu_port.h"
#include "registration_cache.h"

namespace gpucoll_ucx {

namespace {
/* Page alignment suits every NIC's registration granularity. */
constexpr size_t kHostAlign = 4096;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

gpucoll_status_t gpu_fail(gpuError_t err, const char *what)
{
    return gpucoll_fail(GPUCOLL_ERR_GPU, "%s: %s", what, gpuGetErrorString(err));
}
} // namespace

/* ---- shared ---------------------------------------------------------------- */

gpucoll_status_t StagingCopier::copy_now(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src) return GPUCOLL_SUCCESS;
    int lane = -1;
    gpucoll_status_t st = acquire_lane(&lane);
    if (st != GPUCOLL_SUCCESS) return st;
    st = start_copy(lane, dst, src, bytes);
    gpucoll_status_t drained = drain(lane);
    release_lane(lane);
    return st != GPUCOLL_SUCCESS ? st : drained;
}

gpucoll_status_t StagingCopier::get_bounce(size_t bytes, void **buf)
{
    auto &list = free_bounce_[bytes];
    if (!list.empty()) {
        *buf = list.back();
        list.pop_back();
        return GPUCOLL_SUCCESS;
    }
    return alloc_bounce(bytes, buf);
}

void StagingCopier::put_bounce(size_t bytes, void *buf) { free_bounce_[bytes].push_back(buf); }

void StagingCopier::free_bounce_buffers()
{
    for (auto &[bytes, list] : free_bounce_) {
        for (void *p : list) {
            /* The registration must go before the memory it describes. */
            if (rcache_) rcache_->invalidate(reinterpret_cast<uintptr_t>(p));
            free_bounce(p);
        }
        list.clear();
    }
}

/* ---- host (test hook) ------------------------------------------------------ */

gpucoll_status_t HostStagingCopier::acquire_lane(int *lane)
{
    *lane = 0;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t HostStagingCopier::start_copy(int, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t HostStagingCopier::poll(int, bool *done)
{
    *done = true;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t HostStagingCopier::alloc_bounce(size_t bytes, void **p)
{
    *p = aligned_alloc(kHostAlign, round_up(bytes ? bytes : 1, kHostAlign));
    return *p ? GPUCOLL_SUCCESS : gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "bounce buffer of %zu bytes", bytes);
}

void HostStagingCopier::free_bounce(void *p) { free(p); }

gpucoll_status_t HostStagingCopier::alloc_scratch(size_t bytes, void **p) { return alloc_bounce(bytes, p); }

void HostStagingCopier::free_scratch(void *p) { free(p); }

/* ---- GPU ------------------------------------------------------------------- */

GpuStagingCopier::~GpuStagingCopier()
{
    free_bounce_buffers();
    for (void *s : streams_) (void)gpuStreamDestroy(static_cast<gpuStream_t>(s));
}

gpucoll_status_t GpuStagingCopier::acquire_lane(int *lane)
{
    if (free_lanes_.empty()) {
        gpuStream_t s;
        /* A blocking stream on purpose: it orders after work the application
         * queued on the legacy default stream, the usual way device buffers
         * get filled before an MPI call. */
        gpuError_t err = gpuStreamCreateWithFlags(&s, gpuStreamDefault);
        if (err != gpuSuccess) return gpu_fail(err, "creating a staging stream");
        streams_.push_back(s);
        free_lanes_.push_back(int(streams_.size()) - 1);
    }
    *lane = free_lanes_.back();
    free_lanes_.pop_back();
    return GPUCOLL_SUCCESS;
}

void GpuStagingCopier::release_lane(int lane) { free_lanes_.push_back(lane); }

gpucoll_status_t GpuStagingCopier::start_copy(int lane, void *dst, const void *src, size_t bytes)
{
    gpuError_t err = gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, static_cast<gpuStream_t>(streams_[lane]));
    return err == gpuSuccess ? GPUCOLL_SUCCESS : gpu_fail(err, "staging gpuMemcpyAsync");
}

gpucoll_status_t GpuStagingCopier::poll(int lane, bool *done)
{
    gpuError_t err = gpuStreamQuery(static_cast<gpuStream_t>(streams_[lane]));
    *done = err == gpuSuccess;
    if (err == gpuSuccess || err == gpuErrorNotReady) return GPUCOLL_SUCCESS;
    return gpu_fail(err, "staging copy");
}

gpucoll_status_t GpuStagingCopier::drain(int lane)
{
    gpuError_t err = gpuStreamSynchronize(static_cast<gpuStream_t>(streams_[lane]));
    return err == gpuSuccess ? GPUCOLL_SUCCESS : gpu_fail(err, "staging gpuStreamSynchronize");
}

gpucoll_status_t GpuStagingCopier::alloc_bounce(size_t bytes, void **p)
{
    gpuError_t err = gpuHostAlloc(p, bytes ? bytes : 1, gpuHostAllocPortable);
    return err == gpuSuccess ? GPUCOLL_SUCCESS : gpu_fail(err, "gpuHostAlloc of a bounce buffer");
}

void GpuStagingCopier::free_bounce(void *p) { (void)gpuFreeHost(p); }

gpucoll_status_t GpuStagingCopier::alloc_scratch(size_t bytes, void **p)
{
    gpuError_t err = gpuMalloc(p, bytes ? bytes : 1);
    return err == gpuSuccess ? GPUCOLL_SUCCESS : gpu_fail(err, "gpuMalloc of reduction scratch");
}

void GpuStagingCopier::free_scratch(void *p) { (void)gpuFree(p); }

} // namespace gpucoll_ucx
