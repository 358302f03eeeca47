// Scoped changes of this thread's GPU state, restored after: the
// application owns them, we only borrow them.
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

// Lets this thread make calls that a stream capture in global mode forbids
// (IPC mappings, synchronous copies on the library's own streams) for a
// scope: while any thread of the process captures in that mode, such a call
// would otherwise fail and invalidate that capture. The calls must not touch
// a stream being captured.
struct CaptureRelaxed {
    gpuStreamCaptureMode saved = gpuStreamCaptureModeRelaxed;
    bool ok;
    CaptureRelaxed() { ok = gpuThreadExchangeStreamCaptureMode(&saved) == gpuSuccess; }
    ~CaptureRelaxed()
    {
        if (ok) gpuThreadExchangeStreamCaptureMode(&saved);
    }
    CaptureRelaxed(const CaptureRelaxed &) = delete;
    CaptureRelaxed &operator=(const CaptureRelaxed &) = delete;
};

} // namespace gpucoll
