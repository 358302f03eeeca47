// Stream-ordered calls: collectives queued on the caller's stream, with no
// host step per call, so that they can be captured into CUDA graphs and
// replayed. What keeps them sound (docs/stream.md has the long form):
// - The team is the communicator's own second team (the glue builds it
//   apart from the one that serves ordinary calls): its scratch, flags and
//   counters are used by nothing else, so enqueued and ordinary calls need
//   no order between them.
// - The per-call state (barrier epoch, LL flag) is on the device
//   (kernels/stream_calls.h): a call reads what the call before it on the
//   stream left, and every rank makes the same calls in the same order.
// - Calls are planned as nonblocking ones are (make_plan's `queued`): the
//   scratch steps begin with a barrier of every rank, and an LL kernel
//   ends only once every rank has started its call, so the scratch halves
//   and the LL parities stay in step without the host.
// - The plan is decided from what every rank knows alike (the team's GPU
//   state, set once, and the call's kind, count, type, op and root).
// - The counters outlive the team: a graph launched after its
//   communicator was freed finds its counters closed and does nothing.
// - Registered windows are the ordinary team's (gpucoll_stream_use_windows):
//   a call in them may switch to zero-copy in its kernel (stream_windows,
//   core/windows.cpp); that team outlives this one.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "device_guard.hpp"
#include "gpu_error.hpp"
#include "no_throw.hpp"
#include "team_state.hpp"
#include "windows.hpp"

using namespace gpucoll;

namespace {

// Every stream-ordered team's counters, in one device allocation per GPU
// that is never freed (a captured graph may outlive its team), handed out
// once each.
constexpr int kStreamSlots = 4096;
constexpr int kMaxDevices = 64;
std::mutex g_slots_mu;
StreamCalls *g_slots[kMaxDevices];
int g_slots_used[kMaxDevices];

StreamCalls *take_slot(int device)
{
    if (device < 0 || device >= kMaxDevices)
        return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "GPU %d: stream-ordered calls serve GPUs 0-%d", device,
                            kMaxDevices - 1),
               nullptr;
    std::lock_guard<std::mutex> lock(g_slots_mu);
    DeviceGuard g(device);
    gpuError_t e;
    if (!g_slots[device]) {
        if ((e = gpuMalloc((void **)&g_slots[device], kStreamSlots * sizeof(StreamCalls))) != gpuSuccess)
            return g_slots[device] = nullptr, gpu_error("allocating the counters of stream-ordered calls", e), nullptr;
    }
    if (g_slots_used[device] == kStreamSlots)
        return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY,
                            "more than %d communicators of this process have used stream-ordered calls",
                            kStreamSlots),
               nullptr;
    StreamCalls *slot = g_slots[device] + g_slots_used[device];
    StreamCalls fresh{};
    fresh.epoch = 1;
    if ((e = gpuMemcpy(slot, &fresh, sizeof fresh, gpuMemcpyHostToDevice)) != gpuSuccess)
        return gpu_error("setting up the counters of stream-ordered calls", e), nullptr;
    g_slots_used[device]++;
    return slot;
}

gpucoll_status_t stream_setup_body(gpucoll_team *t, bool can)
{
    if (t->gpu != gpucoll_team::GpuNone) // alike on every rank
        return t->gpu == gpucoll_team::GpuReady && t->stream_calls ? GPUCOLL_SUCCESS : GPUCOLL_ERR_UNSUPPORTED;
    const int device = gpu_port_context_device();
    StreamCalls *slot = device >= 0 && can ? take_slot(device) : nullptr;
    gpucoll_status_t st = prepare_gpu(t, device, slot != nullptr);
    if (t->gpu == gpucoll_team::GpuNone) t->gpu = gpucoll_team::GpuFailed; // not retried: alike everywhere
    if (t->gpu != gpucoll_team::GpuReady) return st != GPUCOLL_SUCCESS ? st : GPUCOLL_ERR_UNSUPPORTED;
    t->stream_calls = slot;
    t->stream_keys_on.store(true, std::memory_order_release);
    return GPUCOLL_SUCCESS;
}

// What the team's earlier calls left: the keys compared as far as the
// peers' are there (a mismatch raises the error word), then the word, then a
// launch of this rank that failed (it told the peers' kernels through their
// give-up words but may have left this rank's word alone).
gpucoll_status_t settled_status(gpucoll_team *t)
{
    settle_stream_keys(t);
    gpucoll_status_t st = kernel_error(t, "an enqueued collective");
    if (st == GPUCOLL_SUCCESS && t->broken)
        st = gpucoll_fail(GPUCOLL_ERR_INTERNAL, "an earlier enqueued collective could not be launched");
    return st;
}

// Whether this rank's kernel can address `p` (device memory of the team's
// GPU, or managed memory).
bool addressable(const gpucoll_team *t, const void *p)
{
    gpu_port_ptr_info_t info{};
    gpu_port_query_kind(p, &info);
    return (info.kind == GPU_PORT_MEM_DEVICE && info.device == t->device) || info.kind == GPU_PORT_MEM_MANAGED;
}

// Misuse found before anything is launched: an error on this rank, its team
// untouched (a rank that alone misuses the call leaves its peers' kernels of
// that call waiting for it, as an erroneous MPI program may).
gpucoll_status_t local_misuse(const gpucoll_team *t, const gpucoll_coll_args_t &a, void *stream, bool eager)
{
    const bool rbuf_used = !(a.kind == GPUCOLL_COLL_REDUCE && a.root != t->rank);
    if ((a.sbuf && !addressable(t, a.sbuf)) || (rbuf_used && !addressable(t, a.rbuf)))
        return gpucoll_fail(GPUCOLL_ERR_INVALID,
                            "an enqueued collective's buffers must be device memory of this rank's GPU (%d) or "
                            "managed memory",
                            t->device);
    // Launched into another GPU's stream, the kernel would run on that GPU
    // against this one's memory and fault the context. A stream the runtime
    // cannot place is let through, as before the check.
    const int stream_device = eager ? gpu_port_stream_device(static_cast<gpuStream_t>(stream)) : GPU_PORT_DEVICE_UNKNOWN;
    if (stream_device >= 0 && stream_device != t->device)
        return gpucoll_fail(GPUCOLL_ERR_INVALID,
                            "an enqueued collective's stream belongs to GPU %d; this communicator's enqueued "
                            "collectives run on GPU %d, the one current at coll_gpu_stream_init",
                            stream_device, t->device);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t enqueue_body(gpucoll_team *t, const gpucoll_coll_args_t &args, void *stream)
{
    const gpucoll_config_t &cfg = config();
    if (!t->stream_calls || t->gpu != gpucoll_team::GpuReady) return GPUCOLL_ERR_UNSUPPORTED;
    gpucoll_status_t st = settled_status(t);
    if (st != GPUCOLL_SUCCESS) return st;
    // A call being captured ends the comparison of keys (team_stream_keys.cpp
    // says why); the stream's GPU is asked only outside a capture, where a
    // query may be refused or end the capture.
    const bool eager = gpucoll_stream_capturing(stream) == 0;
    if (args.count == 0 && queueable(args)) { // nothing runs anywhere
        post_stream_key(t, args, eager);
        return GPUCOLL_SUCCESS;
    }
    UnagreedCall c;
    if ((st = prepare_unagreed(t, args, cfg, &c)) != GPUCOLL_SUCCESS) {
        // Alike on every rank that makes the same call (it falls back): its
        // key shows a peer that made another one.
        if (st == GPUCOLL_ERR_UNSUPPORTED) post_stream_key(t, args, eager);
        return st;
    }
    const gpucoll_coll_args_t &a = c.a;
    const Plan &plan = c.plan;

    if ((st = local_misuse(t, a, stream, eager)) != GPUCOLL_SUCCESS) return st;
    // After the misuse that fails this rank alone: its next call's key then
    // takes this one's place, and differs from the peers' in most cases.
    post_stream_key(t, args, eager);
    DeviceGuard g(t->device);
    PeerArgs k = kernel_args(t, plan, a, input_of(t, a), static_cast<char *>(a.rbuf));
    k.stream_calls = t->stream_calls;
    k.stream_epochs = is_ll(plan.algo) ? 0 : (a.count + plan.chunk - 1) / plan.chunk;
    if (eager) k.stream_epochs |= kStreamEager;
    const int blocks = stream_windows(t, a, plan, c.blocks, &k);
    st = launch_step(t, Launch{&k, a.dtype, a.op, blocks, static_cast<gpuStream_t>(stream), nullptr,
                               "an enqueued collective", false},
                     nullptr);
    if (st != GPUCOLL_SUCCESS) return st;
    if (eager) t->stream_eager++;
    t->last_algo = plan.algo;
    t->ran_any = true;
    return GPUCOLL_SUCCESS;
}

} // namespace

namespace {

// Reads a field of this rank's counters on the team's own non-blocking
// stream (the caller's streams may hold work that waits for anything).
template <class T> gpuError_t read_counter(const gpucoll_team *t, const T *field, T *out)
{
    gpuError_t e = gpuMemcpyAsync(out, field, sizeof *out, gpuMemcpyDeviceToHost, t->queued_stream);
    return e == gpuSuccess ? gpuStreamSynchronize(t->queued_stream) : e;
}

} // namespace

namespace {

// How long close_stream_calls waits for calls that stopped finishing: only
// where the debugging timeout is set.
std::chrono::milliseconds patience()
{
    return std::chrono::milliseconds(2 * (int64_t)config().timeout_ms + 1000);
}

bool still_waiting(gpucoll_team *t, Clock::time_point deadline)
{
    if (team_peer_gone(t) >= 0) return false;
    return config().timeout_ms <= 0 || Clock::now() < deadline;
}

} // namespace

namespace {

// Waits until the team's calls enqueued outside a capture have run, however
// long the work queued before them takes and however late a peer is,
// unless a peer is gone (their kernels then end too, core/peer_watch.hpp)
// or the debugging timeout_ms is set and they stop finishing. Graphs are
// the caller's to have finished. Sets *done to the count that ran.
gpuError_t wait_eager_calls(gpucoll_team *t, uint64_t *done)
{
    gpuError_t e = gpuSuccess;
    uint64_t seen = UINT64_MAX;
    *done = 0;
    auto deadline = Clock::now() + patience();
    while ((e = read_counter(t, &t->stream_calls->eager_done, done)) == gpuSuccess && *done < t->stream_eager &&
           still_waiting(t, deadline)) {
        if (*done != seen) deadline = Clock::now() + patience();
        seen = *done;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return e;
}

} // namespace

void gpucoll::close_stream_calls(gpucoll_team *t)
{
    if (!t->stream_calls) return;
    DeviceGuard g(t->device);
    StreamCalls *sc = t->stream_calls;
    // MPI_Comm_free lets pending work finish.
    uint64_t done = 0;
    gpuError_t e = wait_eager_calls(t, &done);
    // Then nothing more may start: kernels of graphs launched later, or of
    // calls still queued, find `closed` and touch nothing. Those that read
    // it open are counted in `active` until they end.
    const uint32_t closed = 1;
    if (e == gpuSuccess) e = gpuMemcpyAsync(&sc->closed, &closed, sizeof closed, gpuMemcpyHostToDevice, t->queued_stream);
    if (e == gpuSuccess) e = gpuStreamSynchronize(t->queued_stream);
    int32_t active = 1;
    auto deadline = Clock::now() + patience();
    while (e == gpuSuccess && (e = read_counter(t, &sc->active, &active)) == gpuSuccess && active > 0 &&
           still_waiting(t, deadline))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    if ((e != gpuSuccess || active > 0 || done < t->stream_eager) && config().verbose >= 1)
        fprintf(stderr, "coll:gpu: rank %d: enqueued collectives still queued or running at the communicator's end "
                        "(%s)\n",
                t->rank, e != gpuSuccess ? gpuGetErrorString(e) : "they stopped making progress");
    t->stream_calls = nullptr;
}

extern "C" gpucoll_status_t gpucoll_stream_setup(gpucoll_team_t *t, int can)
{
    if (!t) return GPUCOLL_ERR_UNSUPPORTED;
    return no_throw([&] { return stream_setup_body(t, can != 0); });
}

extern "C" gpucoll_status_t gpucoll_stream_enqueue(gpucoll_team_t *t, const gpucoll_coll_args_t *a, void *stream)
{
    if (!t || !a) return GPUCOLL_ERR_UNSUPPORTED;
    return no_throw([&] { return enqueue_body(t, *a, stream); });
}

extern "C" gpucoll_status_t gpucoll_stream_status(const gpucoll_team_t *t)
{
    if (!t || !t->error) return GPUCOLL_SUCCESS;
    // Compares the keys that have arrived and may note which peer is gone:
    // the team changes, the call does not wait.
    return settled_status(const_cast<gpucoll_team_t *>(t));
}

extern "C" void gpucoll_stream_use_windows(gpucoll_team_t *t, gpucoll_team_t *owner)
{
    if (t && t != owner) t->window_owner = owner;
}

extern "C" gpucoll_status_t gpucoll_stream_drain(gpucoll_team_t *t)
{
    if (!t || !t->stream_calls) return GPUCOLL_SUCCESS;
    return no_throw([&] {
        DeviceGuard g(t->device);
        uint64_t done = 0;
        gpuError_t e = wait_eager_calls(t, &done);
        if (e != gpuSuccess) return gpu_error("waiting for the enqueued collectives", e);
        return done < t->stream_eager ? gpucoll_fail(GPUCOLL_ERR_PEER, "enqueued collectives stopped finishing")
                                      : GPUCOLL_SUCCESS;
    });
}

extern "C" void gpucoll_stream_stop(gpucoll_team_t *t)
{
    if (t) raise_args_differ(t);
}

extern "C" int gpucoll_stream_capturing(void *stream)
{
    gpuStreamCaptureStatus s;
    if (gpuStreamIsCapturing((gpuStream_t)stream, &s) != gpuSuccess) {
        (void)gpuGetLastError();
        return -1;
    }
    return s != gpuStreamCaptureStatusNone;
}

extern "C" gpucoll_status_t gpucoll_stream_synchronize(void *stream)
{
    gpuError_t e = gpuStreamSynchronize((gpuStream_t)stream);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("synchronising the caller's stream", e);
}

extern "C" gpucoll_status_t gpucoll_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    if (bytes == 0 || dst == src) return GPUCOLL_SUCCESS;
    gpuError_t e = gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, (gpuStream_t)stream);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("copying on the caller's stream", e);
}
