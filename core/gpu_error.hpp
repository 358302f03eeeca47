// A GPU runtime error as the core's status, saying what was being done.
#pragma once

#include "gpu_port.h"
#include "gpucoll_status.h"

namespace gpucoll {

// Also takes the error off the thread's last-error slot: a failure the
// component caused and reports must not be found again by the launch check
// of the next call (which would fail a correct call, and, with its kernel
// already running, leave the launch and done counters out of step: a later
// call then returned before its kernel had finished). Sticky errors (a
// faulted context) stay whatever is done.
inline gpucoll_status_t gpu_error(const char *what, gpuError_t e)
{
    (void)gpuGetLastError();
    return gpucoll_fail(GPUCOLL_ERR_GPU, "%s: %s", what, gpuGetErrorString(e));
}

} // namespace gpucoll
