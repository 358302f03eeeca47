// The one source of gpucoll_hip_link (cmake/CollGpuHip.cmake), the library
// that the HIP compile-and-link check links: the whole core, kernels and
// common archives go in with --no-undefined, so every reference they make is
// resolved. This table adds the other direction: the entry points that
// mca_coll_gpu/ calls must be defined in a HIP build too, not only declared.
#include "gpucoll_core.h"

extern "C" __attribute__((visibility("default"))) void *const gpucoll_hip_link_entry_points[] = {
    (void *)&gpucoll_core_configure, (void *)&gpucoll_core_config,   (void *)&gpucoll_core_release_caches,
    (void *)&gpucoll_driver_present, (void *)&gpucoll_mem_kind,      (void *)&gpucoll_copy,
    (void *)&gpucoll_host_alloc,     (void *)&gpucoll_host_free,     (void *)&gpucoll_team_create,
    (void *)&gpucoll_team_destroy,   (void *)&gpucoll_team_run,
};
