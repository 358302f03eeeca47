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

bool ResidentKernel::all_done(const Call &c) const
{
    for (int b = 0; b < c.blocks; b++)
        if (__atomic_load_n(&mb_->done[b], __ATOMIC_ACQUIRE) < c.seq()) return false;
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
    if ((e = gpuEventCreateWithFlags(&user_work_, gpuEventDisableTiming)) != gpuSuccess ||
        (e = gpuEventCreateWithFlags(&served_, gpuEventDisableTiming)) != gpuSuccess)
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
    if (served_) gpuEventDestroy(served_);
    if (mb_) gpuFreeHost(mb_);
    stream_ = nullptr;
    user_work_ = nullptr;
    served_ = nullptr;
    mb_ = nullptr;
}

gpucoll_status_t ResidentKernel::launch(Call &c, bool after_user_work)
{
    // A new generation: the mailbox now tells any earlier kernel to leave
    // (it runs before this one on the stream) and holds what this one
    // starts from.
    gen_++;
    c.k.resident.gen = gen_;
    mark_generation();
    gpuError_t e = gpuSuccess;
    if (after_user_work) {
        if ((e = gpuEventRecord(user_work_, 0)) == gpuSuccess) e = gpuStreamWaitEvent(stream_, user_work_, 0);
        if (e != gpuSuccess) return gpu_error("ordering after the default stream", e);
    }
    if (!launch_peer_kernel(c.k, c.dtype, c.op, c.blocks, c.threads, stream_))
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "no kernel for this datatype and op");
    // (A "not ready" left by the stream queries is no launch error.)
    if ((e = gpuGetLastError()) != gpuSuccess && e != gpuErrorNotReady)
        return gpu_error("launching a resident kernel", e);
    live_ = true;
    key_ = c.key;
    base_ = c.k;
    (c.queued ? queued_launched : launched)++;
    return GPUCOLL_SUCCESS;
}

// The kernel's stream is idle with the call not done. A kernel that left
// just before the call was posted never serves it: launched anew. A kernel
// launched for this very call that ended without it is an error.
gpucoll_status_t ResidentKernel::relaunch(Call &c)
{
    live_ = false;
    if (!c.resident) return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "a launched kernel ended without its call done");
    c.resident = false;
    (c.queued ? queued_reused : reused)--;
    return launch(c, false);
}

gpucoll_status_t ResidentKernel::run(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                                     int idle_us, int timeout_ms, bool ordered, bool timed)
{
    Call c;
    gpucoll_status_t st = start(k, dtype, op, blocks, threads, idle_us, timeout_ms, ordered, timed, &c);
    return st == GPUCOLL_SUCCESS ? finish(c) : st;
}

gpucoll_status_t ResidentKernel::start(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks, int threads,
                                       int idle_us, int timeout_ms, bool ordered, bool timed, Call *c)
{
    const auto begun = Clock::now();
    // The stream a blocking launch would have waited for: only if it is
    // idle may a kernel that is already running read this call's input.
    const bool user_idle = !ordered || gpuStreamQuery(0) == gpuSuccess;
    c->queried = Clock::now();
    if (!c->queued) query_s += std::chrono::duration<double>(c->queried - begun).count();
    c->key = kernel_key(k, dtype, op, blocks, threads);
    c->dtype = dtype;
    c->op = op;
    c->blocks = blocks;
    c->threads = threads;
    c->timeout_ms = timeout_ms;
    seq_++;
    k.resident.mailbox = mb_;
    k.resident.seq = seq_;
    k.resident.idle_ns = (uint64_t)idle_us * 1000u;
    k.resident.timed = timed ? 1 : 0;
    k.resident.gen = gen_;
    c->k = k;
    uint64_t words[kResidentCallWords];
    c->resident = live_ && c->key == key_ && user_idle && begun < until_ && same_resident_base(base_, k) &&
                  encode_resident_call(k, gen_, seq_, words);
    if (c->resident) {
        post_words(words);
        (c->queued ? queued_reused : reused)++;
    } else {
        retire();
        gpucoll_status_t st = launch(*c, ordered && !user_idle);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    // The kernel polls for idle_us after its last call; counted from the
    // post, which is before that, this host-side window ends before it.
    // The margin covers the call's trip to the GPU.
    int64_t margin_us = idle_us / 2 < 20 ? idle_us / 2 : 20;
    until_ = begun + std::chrono::microseconds(idle_us - margin_us);
    return GPUCOLL_SUCCESS;
}

bool ResidentKernel::poll(Call &c, unsigned spin, gpucoll_status_t *st)
{
    *st = GPUCOLL_SUCCESS;
    if (all_done(c)) {
        // (A queued call's end is seen when the caller tests: no time of the call.)
        if (!c.queued)
            (c.resident ? reused_s : launched_s) += std::chrono::duration<double>(Clock::now() - c.queried).count();
        if (c.k.resident.timed) add_stamps();
        return true;
    }
    if (spin % 1024) return false;
    gpuError_t e = gpuStreamQuery(stream_);
    if (e == gpuSuccess) {
        if (all_done(c)) return true;
        return (*st = relaunch(c)) != GPUCOLL_SUCCESS;
    }
    if (e != gpuErrorNotReady) {
        live_ = false;
        *st = gpu_error("resident kernel", e);
        return true;
    }
    if (c.timeout_ms > 0 && Clock::now() > c.queried + std::chrono::milliseconds(c.timeout_ms)) {
        retire();
        *st = gpucoll_fail(GPUCOLL_ERR_TIMEOUT, "a resident kernel did not finish its call within %d ms",
                           c.timeout_ms);
        return true;
    }
    return false;
}

gpucoll_status_t ResidentKernel::finish(Call &c)
{
    gpucoll_status_t st;
    for (unsigned spin = 1;; spin++)
        if (poll(c, spin, &st)) return st;
}

gpucoll_status_t ResidentKernel::start_queued(PeerArgs k, gpucoll_dtype_t dtype, gpucoll_op_t op, int blocks,
                                              int threads, int idle_us, int timeout_ms, bool ordered)
{
    if (queued_out_) return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "a resident kernel serves one queued call at a time");
    queued_.queued = true;
    gpucoll_status_t st = start(k, dtype, op, blocks, threads, idle_us, timeout_ms, ordered, false, &queued_);
    queued_out_ = st == GPUCOLL_SUCCESS;
    return st;
}

bool ResidentKernel::queued_over(unsigned spin, gpucoll_status_t *st)
{
    if (queued_out_) {
        if (!poll(queued_, spin, st)) return false;
        queued_out_ = false;
        if (*st != GPUCOLL_SUCCESS) queued_failed_ = *st;
    }
    *st = queued_failed_;
    return true;
}

gpucoll_status_t ResidentKernel::order_before(gpuStream_t s)
{
    // A posted call that the kernel has not taken may never be: it may have
    // left just before. Wait for one or the other (no peer involved).
    for (unsigned spin = 1; queued_out_ && queued_.resident; spin++) {
        if (all_done(queued_) || __atomic_load_n(&mb_->taken, __ATOMIC_ACQUIRE) >= queued_.seq()) break;
        if (spin % 64) continue;
        gpuError_t e = gpuStreamQuery(stream_);
        if (e == gpuErrorNotReady) continue;
        if (all_done(queued_) || __atomic_load_n(&mb_->taken, __ATOMIC_ACQUIRE) >= queued_.seq()) break;
        gpucoll_status_t st = e == gpuSuccess ? relaunch(queued_) : gpu_error("resident kernel", e);
        if (st != GPUCOLL_SUCCESS) return queued_out_ = false, queued_failed_ = st;
        break;
    }
    retire();
    if (!queued_out_ || all_done(queued_)) return GPUCOLL_SUCCESS;
    gpuError_t e;
    if ((e = gpuEventRecord(served_, stream_)) != gpuSuccess || (e = gpuStreamWaitEvent(s, served_, 0)) != gpuSuccess)
        return gpu_error("ordering after a resident kernel's call", e);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t ResidentKernel::withdraw(Call &c)
{
    __atomic_store_n(&mb_->withdrawn, seq_, __ATOMIC_RELEASE);
    // A block that waits for a peer sees the word within 256 polls (tens of
    // us); a kernel that has not taken the call takes it and stops the same
    // way. One that has neither after a while is told to leave.
    const auto since = Clock::now();
    for (unsigned spin = 1;; spin++) {
        if (all_done(c)) return GPUCOLL_SUCCESS;
        if (spin % 1024) continue;
        gpuError_t e = gpuStreamQuery(stream_);
        if (e == gpuSuccess) { // it had left before the call came: nothing ran
            live_ = false;
            return GPUCOLL_SUCCESS;
        }
        if (e != gpuErrorNotReady) {
            live_ = false;
            return gpu_error("resident kernel", e);
        }
        if (Clock::now() - since > std::chrono::milliseconds(10)) retire();
    }
}

} // namespace gpucoll
