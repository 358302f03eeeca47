// A GPU runtime error as the core's status, saying what was being done.
#pragma once

#include "gpu_port.h"
#include "gpucoll_status.h"

namespace gpucoll {

inline gpucoll_status_t gpu_error(const char *what, gpuError_t e)
{
    return gpucoll_fail(GPUCOLL_ERR_GPU, "%s: %s", what, gpuGetErrorString(e));
}

} // namespace gpucoll
