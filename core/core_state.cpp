#include "core_state.hpp"

#include <atomic>

#include "ipc_cache.hpp"

#include "gpucoll_core.h"

namespace {
gpucoll_config_t g_config = [] {
    gpucoll_config_t c{};
    gpucoll_config_fill_defaults(&c);
    return c;
}();
} // namespace

const gpucoll_config_t &gpucoll::config() { return g_config; }

namespace {
std::atomic<int> g_in_flight{0};
} // namespace

int gpucoll::kernels_in_flight() { return g_in_flight.load(std::memory_order_acquire); }
gpucoll::KernelInFlight::KernelInFlight() { g_in_flight.fetch_add(1, std::memory_order_acq_rel); }
gpucoll::KernelInFlight::~KernelInFlight() { g_in_flight.fetch_sub(1, std::memory_order_acq_rel); }

extern "C" void gpucoll_core_configure(const gpucoll_config_t *cfg)
{
    g_config = *cfg;
    gpucoll_config_fill_defaults(&g_config);
}

extern "C" const gpucoll_config_t *gpucoll_core_config(void) { return &g_config; }

extern "C" void gpucoll_core_release_caches(void)
{
    gpucoll::release_host_cache();
    gpucoll::release_process_ipc_cache();
}
