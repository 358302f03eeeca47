// Forcing an algorithm by its name in the unit tests, as the glue's
// coll_gpu_<kind>_algorithm parameters do: config.algorithm[kind] = the
// row's position among the kind's rows (gpucoll_algorithm_names) plus one.
#pragma once

#include <cstring>

#include "gpucoll_config.h"
#include "gpucoll_core.h"

// The value that forces `name` for `kind`; 0 (auto) if the kind has no such row.
inline int algorithm_value(gpucoll_coll_kind_t kind, const char *name)
{
    const char *names[16];
    const int n = gpucoll_algorithm_names(kind, names, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (std::strcmp(names[i], name) == 0) return i + 1;
    return 0;
}

inline void force_algorithm(gpucoll_config_t *cfg, gpucoll_coll_kind_t kind, const char *name)
{
    cfg->algorithm[kind] = algorithm_value(kind, name);
}
