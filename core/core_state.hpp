// Process-wide state of the core, shared by its translation units.
#pragma once

#include "gpucoll_config.h"

namespace gpucoll {

// The configuration the glue handed over (defaults filled in).
const gpucoll_config_t &config();
void release_host_cache();

} // namespace gpucoll
