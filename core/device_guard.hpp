// Makes a GPU current for a scope and restores the caller's choice after:
// the application owns the current device, we only borrow it.
#pragma once

#include "gpu_port.h"

namespace gpucoll {

struct DeviceGuard {
    int saved = -1;
    explicit DeviceGuard(int device)
    {
        if (gpuGetDevice(&saved) != gpuSuccess) saved = -1;
        if (saved != device) gpuSetDevice(device);
    }
    ~DeviceGuard()
    {
        int now = -1;
        if (saved >= 0 && gpuGetDevice(&now) == gpuSuccess && now != saved) gpuSetDevice(saved);
    }
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;
};

} // namespace gpucoll
