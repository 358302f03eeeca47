#include "core_state.hpp"
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
