// One GPU, no peers: MPI_Reduce_local on device memory and the GPU reducer
// of the inter-node schedules (one kernel of the peer family with no peers),
// and the copy that a collective on a one-rank communicator amounts to.
#include <stdint.h>

#include <atomic>
#include <mutex>

#include "core_state.hpp"
#include "device_guard.hpp"
#include "gpu_port.h"
#include "gpucoll_core.h"
#include "peer_args.h"

using namespace gpucoll;

extern "C" gpucoll_status_t gpucoll_local_reduce(void *inout, const void *in, size_t count, gpucoll_dtype_t dtype,
                                                 gpucoll_op_t op)
{
    if (count == 0) return GPUCOLL_SUCCESS;
    if (!gpucoll_op_valid(op, dtype))
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "no GPU reduction for %s/%s", gpucoll_dtype_name(dtype),
                            gpucoll_op_name(op));
    gpu_port_ptr_info_t io, src;
    gpu_port_query_kind(inout, &io);
    gpu_port_query_kind(in, &src);
    // The kernel runs on inout's GPU, which need not reach another GPU's
    // memory (peer access is off, or impossible): a read there would fault
    // the context. The caller stages such a call, as it does managed memory.
    if (io.kind != GPU_PORT_MEM_DEVICE || src.kind != GPU_PORT_MEM_DEVICE)
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "local reduce on the GPU needs device buffers");
    if (io.device != src.device)
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "local reduce of a buffer of GPU %d into one of GPU %d",
                            src.device, io.device);

    PeerArgs k{};
    k.algo = PeerAlgo::LocalReduce;
    k.nranks = 1;
    k.src = static_cast<const char *>(in);
    k.dst = static_cast<char *>(inout);
    k.count = count;
    k.vector_ok = (uintptr_t)in % 16 == 0 && (uintptr_t)inout % 16 == 0;
    // One block per 64 KiB keeps every SM busy on large buffers; a reduction
    // needs no co-residency, so more blocks than SMs is fine.
    size_t bytes = count * gpucoll_dtype_size(dtype);
    size_t blocks = bytes / 65536 + 1;
    if (blocks > 1024) blocks = 1024;

    DeviceGuard g(io.device);
    gpucoll_status_t st = load_kernels_once(io.device);
    if (st != GPUCOLL_SUCCESS) return st;
    if (!launch_peer_kernel(k, dtype, op, (int)blocks, config().threads_per_block, nullptr))
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "no GPU reduction for %s/%s", gpucoll_dtype_name(dtype),
                            gpucoll_op_name(op));
    gpuError_t e = gpuGetLastError();
    if (e == gpuSuccess) e = gpuStreamSynchronize(nullptr);
    if (e != gpuSuccess) return gpucoll_fail(GPUCOLL_ERR_GPU, "local reduce kernel: %s", gpuGetErrorString(e));
    return GPUCOLL_SUCCESS;
}

namespace {

constexpr int kMaxDevices = 64;
std::mutex g_copy_mu;
std::atomic<gpuStream_t> g_copy_stream[kMaxDevices]; // read without the lock on every one-rank call

// A blocking stream of the current device for one-rank copies: like the
// legacy default stream it follows the work queued there (the stream rule),
// and copying on it and synchronising it costs about 0.5 us less per call
// (gpucoll-floor: "copy 8 B" against "copy 8 B legacy"). nullptr (the
// legacy stream) where it cannot be had.
gpuStream_t copy_stream()
{
    int device = -1;
    if (gpuGetDevice(&device) != gpuSuccess || device < 0 || device >= kMaxDevices) return nullptr;
    if (gpuStream_t s = g_copy_stream[device].load(std::memory_order_acquire)) return s;
    std::lock_guard<std::mutex> lock(g_copy_mu);
    gpuStream_t s = g_copy_stream[device].load(std::memory_order_relaxed);
    if (!s && gpuStreamCreateWithFlags(&s, gpuStreamDefault) != gpuSuccess) {
        (void)gpuGetLastError();
        return nullptr;
    }
    g_copy_stream[device].store(s, std::memory_order_release);
    return s;
}

} // namespace

void gpucoll::release_copy_streams()
{
    std::lock_guard<std::mutex> lock(g_copy_mu);
    for (auto &slot : g_copy_stream)
        if (gpuStream_t s = slot.exchange(nullptr)) gpuStreamDestroy(s);
}

extern "C" gpucoll_status_t gpucoll_local_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src) return GPUCOLL_SUCCESS;
    // cudaMemcpy returns before a device-to-device copy is done; the MPI call
    // must not (the caller may read the result from any stream).
    gpuStream_t s = copy_stream();
    gpuError_t e = gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, s);
    if (e == gpuSuccess) e = gpuStreamSynchronize(s);
    if (e != gpuSuccess)
        return gpucoll_fail(GPUCOLL_ERR_GPU, "copy of %zu bytes from %p to %p failed: %s", bytes, src, dst,
                            gpuGetErrorString(e));
    return GPUCOLL_SUCCESS;
}
