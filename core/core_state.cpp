#include "core_state.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "gpu_port.h"
#include "peer_args.h"

#include "ipc_cache.hpp"
#include "team_state.hpp"

#include "gpucoll_core.h"

namespace {
gpucoll_config_t g_config = [] {
    gpucoll_config_t c{};
    gpucoll_config_fill_defaults(&c);
    return c;
}();
} // namespace

const gpucoll_config_t &gpucoll::config() { return g_config; }

gpuError_t gpucoll::create_coll_stream(gpuStream_t *stream, unsigned flags)
{
    int least = 0, greatest = 0;
    if (g_config.stream_priority != GPUCOLL_STREAM_PRIORITY_HIGH ||
        gpuDeviceGetStreamPriorityRange(&least, &greatest) != gpuSuccess) {
        (void)gpuGetLastError();
        return gpuStreamCreateWithFlags(stream, flags);
    }
    return gpuStreamCreateWithPriority(stream, flags, greatest);
}

namespace {
std::atomic<int> g_in_flight{0};
} // namespace

int gpucoll::kernels_in_flight() { return g_in_flight.load(std::memory_order_acquire); }
void gpucoll::kernels_queued(int delta) { g_in_flight.fetch_add(delta, std::memory_order_acq_rel); }
gpucoll::KernelInFlight::KernelInFlight() { g_in_flight.fetch_add(1, std::memory_order_acq_rel); }
gpucoll::KernelInFlight::~KernelInFlight() { g_in_flight.fetch_sub(1, std::memory_order_acq_rel); }

namespace {
constexpr int kMaxDevices = 64;
std::mutex g_load_mu;
std::atomic<bool> g_loaded[kMaxDevices]; // read without the lock: the local reduce checks on every call
} // namespace

gpucoll_status_t gpucoll::load_kernels_once(int device)
{
    if (device < 0 || device >= kMaxDevices) return GPUCOLL_SUCCESS; // loaded lazily, as CUDA would
    if (g_loaded[device].load(std::memory_order_acquire)) return GPUCOLL_SUCCESS;
    std::lock_guard<std::mutex> lock(g_load_mu);
    if (g_loaded[device].load(std::memory_order_relaxed)) return GPUCOLL_SUCCESS;
    size_t need = 0;
    int regs = 0;
    if (!load_peer_kernels(&need, &regs))
        return gpucoll_fail(GPUCOLL_ERR_GPU, "loading the peer kernels on GPU %d", device);
    if (config().verbose >= 20)
        fprintf(stderr, "coll:gpu: peer kernels loaded on GPU %d: up to %d registers and %zu bytes of stack a thread\n",
                device, regs, need);
    // Raising the limit waits for the device; here no peer kernel of this
    // process runs yet (every launch path comes through this function first).
    gpuError_t e = gpu_port_reserve_stack(need);
    if (e != gpuSuccess)
        return gpucoll_fail(GPUCOLL_ERR_GPU, "setting GPU %d's stack to %zu bytes: %s", device, need, gpuGetErrorString(e));
    g_loaded[device].store(true, std::memory_order_release);
    return GPUCOLL_SUCCESS;
}

extern "C" void gpucoll_core_configure(const gpucoll_config_t *cfg)
{
    g_config = *cfg;
    gpucoll_config_fill_defaults(&g_config);
}

extern "C" const gpucoll_config_t *gpucoll_core_config(void) { return &g_config; }

extern "C" void gpucoll_core_release_caches(void)
{
    gpucoll::free_parked_gpu();
    gpucoll::release_host_cache();
    gpucoll::release_process_ipc_cache();
    gpucoll::release_copy_streams();
}
