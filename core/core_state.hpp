// Process-wide state of the core, shared by its translation units.
#pragma once

#include "gpu_port.h"
#include "gpucoll_config.h"
#include "gpucoll_status.h"

namespace gpucoll {

// The configuration the glue handed over (defaults filled in).
const gpucoll_config_t &config();
void release_host_cache();
void release_copy_streams(); // core/local_reduce.cpp

// A stream of the current device for the component's own kernels, at the
// priority config().stream_priority asks for; flags as cudaStreamCreateWithFlags.
gpuError_t create_coll_stream(gpuStream_t *stream, unsigned flags);

// Once per process and device, before any peer kernel runs there: loads
// every peer kernel and raises the context's per-thread stack to what the
// largest needs (kernels/peer_args.h, load_peer_kernels, says why). The
// caller has made `device` current. Later calls return at once.
gpucoll_status_t load_kernels_once(int device);

// Peer kernels of this process that are running (launched, not yet waited
// for). A CUDA call that waits for the whole device (freeing or unmapping
// memory) must not run while one is: with several threads, that kernel may
// wait for a peer rank whose own thread waits for us (tests/mpi/thread_check.c).
int kernels_in_flight();
// Queued kernels (core/team_queued.cpp) count from launch to the test that
// sees them done.
void kernels_queued(int delta);
class KernelInFlight {
public:
    KernelInFlight();
    ~KernelInFlight();
    KernelInFlight(const KernelInFlight &) = delete;
    KernelInFlight &operator=(const KernelInFlight &) = delete;
};

} // namespace gpucoll
