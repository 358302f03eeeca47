#include "resident.hpp"

#include <atomic>
#include <cstring>

#include "core_state.hpp"
#include "gpu_error.hpp"

namespace gpucoll {

namespace {

// Which compiled kernel and grid serve a call: a resident kernel takes only
// calls of its own.
uint64_t kernel_key(const PeerArgs &k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads)
{
    uint64_t kernel = moves_bytes(k.algo) ? 0xffff : ((uint64_t)dtype << 8 | (uint64_t)op);
    return kernel | (uint64_t)blocks << 16 | (uint64_t)threads << 32;
}

} // namespace

bool ResidentKernel::all_done(int blocks) const
{
    for (int b = 0; b < blocks; b++)
        if (__atomic_load_n(&mb_->done[b], __ATOMIC_ACQUIRE) < seq_) return false;
    return true;
}

gpucoll_status_t ResidentKernel::init()
{
    gpuError_t e = gpuHostAlloc((void **)&mb_, sizeof(ResidentMailbox), gpuHostAllocMapped | gpuHostAllocPortable);
    if (e != gpuSuccess) return gpu_error("allocating the resident kernels' mailbox", e);
    memset(mb_, 0, sizeof *mb_);
    // Non-blocking: a kernel that stays resident must not hold back the
    // application's work on the legacy default stream.
    if ((e = create_coll_stream(&stream_, gpuStreamNonBlocking)) != gpuSuccess)
        return gpu_error("creating the resident kernels' stream", e);
    if ((e = gpuEventCreateWithFlags(&user_work_, gpuEventDisableTiming)) != gpuSuccess)
        return gpu_error("creating an event", e);
    return GPUCOLL_SUCCESS;
}

void ResidentKernel::post_words(const uint64_t *w)
{
    // Any order would do (every word carries the tag); word 0 last keeps a
    // kernel from seeing most of the call one trip before the rest.
    for (int i = kResidentCallWords - 1; i >= 0; i--) __atomic_store_n(&mb_->call[i], w[i], __ATOMIC_RELEASE);
}

// Tells any kernel of an earlier generation to leave. Every word is
// rewritten with tag seq_, so that none can match a later call early.
void ResidentKernel::mark_generation()
{
    uint64_t w[kResidentCallWords];
    w[0] = resident_word((uint64_t)gen_ << 16, seq_);
    for (int i = 1; i < kResidentCallWords; i++) w[i] = resident_word(0, seq_);
    post_words(w);
}

void ResidentKernel::retire()
{
    if (!live_) return;
    live_ = false;
    gen_++;
    mark_generation();
}

// The stamps of the last call the kernel took from the mailbox, once per
// call: written after its done word, so often those of the call before.
void ResidentKernel::add_stamps()
{
    const volatile uint64_t *s = mb_->stamps;
    const uint64_t seq = __atomic_load_n(&mb_->stamps[3], __ATOMIC_ACQUIRE);
    if (seq <= stamped_) return;
    stamped_ = seq;
    const uint64_t seen = s[0], ended = s[1], fenced = s[2];
    if (!(seen <= ended && ended <= fenced)) return;
    timed_calls++;
    gpu_work_s += (double)(ended - seen) * 1e-9;
    gpu_fence_s += (double)(fenced - ended) * 1e-9;
}

void ResidentKernel::release()
{
    if (stream_) {
        retire();
        // It leaves at its next poll, or when a call in progress times out.
        gpuStreamSynchronize(stream_);
        gpuStreamDestroy(stream_);
    }
    if (user_work_) gpuEventDestroy(user_work_);
    if (mb_) gpuFreeHost(mb_);
    stream_ = nullptr;
    user_work_ = nullptr;
    mb_ = nullptr;
}

gpucoll_status_t ResidentKernel::launch(PeerArgs &k, uint64_t key, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                        int blocks, int threads, bool after_user_work)
{
    // A new generation: the mailbox now tells any earlier kernel to leave
    // (it runs before this one on the stream) and holds what this one
    // starts from.
    gen_++;
    k.resident.gen = gen_;
    mark_generation();
    gpuError_t e = gpuSuccess;
    if (after_user_work) {
        if ((e = gpuEventRecord(user_work_, 0)) == gpuSuccess) e = gpuStreamWaitEvent(stream_, user_work_, 0);
        if (e != gpuSuccess) return gpu_error("ordering after the default stream", e);
    }
    if (!launch_peer_kernel(k, dtype, op, blocks, threads, stream_))
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "no kernel for this datatype and op");
    // (A "not ready" left by the stream queries is no launch error.)
    if ((e = gpuGetLastError()) != gpuSuccess && e != gpuErrorNotReady)
        return gpu_error("launching a resident kernel", e);
    live_ = true;
    key_ = key;
    base_ = k;
    launched++;
    return GPUCOLL_SUCCESS;
}

// The kernel's stream is idle with the call not done. A kernel that left
// just before the call was posted never serves it: launched anew. A kernel
// launched for this very call that ended without it is an error.
gpucoll_status_t ResidentKernel::relaunch(PeerArgs &k, uint64_t key, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                          int blocks, int threads, bool *resident)
{
    live_ = false;
    if (!*resident) return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "a launched kernel ended without its call done");
    *resident = false;
    reused--;
    return launch(k, key, dtype, op, blocks, threads, false);
}

gpucoll_status_t ResidentKernel::run(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                                     int idle_us, int timeout_ms, bool ordered, bool timed)
{
    const auto start = Clock::now();
    // The stream a blocking launch would have waited for: only if it is
    // idle may a kernel that is already running read this call's input.
    const bool user_idle = !ordered || gpuStreamQuery(0) == gpuSuccess;
    const auto queried = Clock::now();
    query_s += std::chrono::duration<double>(queried - start).count();
    uint64_t key = kernel_key(k, dtype, op, blocks, threads);
    seq_++;
    k.resident.mailbox = mb_;
    k.resident.seq = seq_;
    k.resident.idle_ns = (uint64_t)idle_us * 1000u;
    k.resident.timed = timed ? 1 : 0;
    k.resident.gen = gen_;
    uint64_t words[kResidentCallWords];
    bool resident = live_ && key == key_ && user_idle && start < until_ && same_resident_base(base_, k) &&
                    encode_resident_call(k, gen_, seq_, words);
    gpucoll_status_t st = GPUCOLL_SUCCESS;
    if (resident) {
        post_words(words);
        reused++;
    } else {
        retire();
        if ((st = launch(k, key, dtype, op, blocks, threads, ordered && !user_idle)) != GPUCOLL_SUCCESS) return st;
    }
    // The kernel polls for idle_us after its last call; counted from the
    // post, which is before that, this host-side window ends before it.
    // The margin covers the call's trip to the GPU.
    int64_t margin_us = idle_us / 2 < 20 ? idle_us / 2 : 20;
    until_ = start + std::chrono::microseconds(idle_us - margin_us);
    return wait_done(k, key, dtype, op, blocks, threads, timeout_ms, resident, queried);
}

gpucoll_status_t ResidentKernel::wait_done(PeerArgs &k, uint64_t key, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                           int blocks, int threads, int timeout_ms, bool resident,
                                           Clock::time_point queried)
{
    const auto deadline = queried + std::chrono::milliseconds(timeout_ms);
    gpucoll_status_t st;
    for (unsigned spin = 1;; spin++) {
        if (all_done(blocks)) {
            (resident ? reused_s : launched_s) += std::chrono::duration<double>(Clock::now() - queried).count();
            if (k.resident.timed) add_stamps();
            return GPUCOLL_SUCCESS;
        }
        if (spin % 1024) continue;
        gpuError_t e = gpuStreamQuery(stream_);
        if (e == gpuSuccess) {
            if (all_done(blocks)) return GPUCOLL_SUCCESS;
            if ((st = relaunch(k, key, dtype, op, blocks, threads, &resident)) != GPUCOLL_SUCCESS) return st;
        } else if (e != gpuErrorNotReady) {
            live_ = false;
            return gpu_error("resident kernel", e);
        }
        if (timeout_ms > 0 && Clock::now() > deadline) {
            retire();
            return gpucoll_fail(GPUCOLL_ERR_TIMEOUT, "a resident kernel did not finish its call within %d ms",
                                timeout_ms);
        }
    }
}

} // namespace gpucoll
