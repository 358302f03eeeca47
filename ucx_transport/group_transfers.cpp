/* Group: starting transfers, bounded waits, and aborting what is left
 * behind by a failure. */
#include "ucx_group.h"

#include <sched.h>

#include <algorithm>
#include <string>

#include "ucx_worker.h"
#include "wait_policy.h"

namespace gpucoll_ucx {

gpucoll_status_t Group::start_send(int peer, const void *buf, size_t bytes, TagClass cls, uint32_t seq, uint32_t step,
                                   Transfer **transfer)
{
    return start(Transfer::Dir::Send, peer, const_cast<void *>(buf), bytes, cls, seq, step, transfer);
}

gpucoll_status_t Group::start_recv(int peer, void *buf, size_t bytes, TagClass cls, uint32_t seq, uint32_t step,
                                   Transfer **transfer)
{
    return start(Transfer::Dir::Recv, peer, buf, bytes, cls, seq, step, transfer);
}

gpucoll_status_t Group::start(Transfer::Dir dir, int peer, void *buf, size_t bytes, TagClass cls, uint32_t seq,
                              uint32_t step, Transfer **transfer)
{
    *transfer = nullptr;
    if (peer < 0 || peer >= size())
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx: peer %d out of range (group of %d)", peer, size());
    if (bytes > 0 && buf == nullptr) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx: NULL buffer of %zu bytes", bytes);

    WorkerLock lock(worker_->mutex());
    const bool send = dir == Transfer::Dir::Send;
    if (send) {
        gpucoll_status_t st = endpoint(peer);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    Transfer::Spec spec;
    spec.dir = dir;
    spec.peer = &peers_[peer];
    spec.tag = make_tag(uint32_t(group_id_), uint32_t(send ? rank_ : peer), cls, seq, step);
    spec.seq = seq;
    spec.step = step;
    spec.buf = static_cast<char *>(buf);
    spec.bytes = bytes;
    spec.chunk_bytes = cfg_.chunk_bytes;
    spec.depth = cfg_.pipeline_depth;
    if (bytes > 0) {
        const BufferKind kind = classify(buf);
        const bool direct_ok = device_path_ == GPUCOLL_UCX_DEVICE_PATH_DIRECT &&
                               (!kind.managed || worker_->supports_memory_type(Worker::managed_memory_type()));
        if (!kind.device_like) {
            spec.route = Transfer::Route::Direct; /* host memory; UCX caches its registration */
        } else if (!kind.gpu) {
            spec.route = Transfer::Route::Staged; /* the stage_host_buffers test hook */
            spec.copier = &worker_->host_copier();
        } else if (direct_ok) {
            spec.route = Transfer::Route::Direct; /* GPUDirect */
            spec.mem_type = kind.managed ? Worker::managed_memory_type() : Worker::device_memory_type();
            if (kind.info.base && kind.info.size) {
                spec.registration.base = reinterpret_cast<uintptr_t>(kind.info.base);
                spec.registration.length = kind.info.size;
                spec.registration.buffer_id = kind.info.buffer_id;
                spec.registration.mem_type = spec.mem_type;
            }
        } else {
            spec.route = Transfer::Route::Staged;
            spec.copier = &worker_->gpu_copier();
        }
    }
    Transfer *t = new Transfer(*worker_, counters_, spec);
    gpucoll_status_t st = t->start();
    if (st != GPUCOLL_SUCCESS) {
        delete t; /* start() fails only before anything is posted */
        return st;
    }
    transfers_.insert(t);
    *transfer = t;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t Group::wait(Transfer *const *transfers, size_t n)
{
    auto moves = [&] {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; ++i)
            if (transfers[i]) sum += transfers[i]->moves();
        return sum;
    };
    uint64_t last_moves = moves();
    auto deadline = after_ms(cfg_.timeout_ms);
    for (unsigned idle = 0;;) {
        worker_->progress();
        WorkerLock lock(worker_->mutex());
        bool all_done = true;
        for (size_t i = 0; i < n; ++i) {
            Transfer *t = transfers[i];
            if (!t) continue;
            if (t->failed()) return gpucoll_fail(t->status(), "ucx: %s", t->error().c_str());
            all_done &= t->done();
        }
        if (all_done) return GPUCOLL_SUCCESS;
        const uint64_t now_moves = moves();
        if (now_moves != last_moves) { /* slow is fine, stuck is not */
            last_moves = now_moves;
            deadline = after_ms(cfg_.timeout_ms);
            idle = 0;
            continue;
        }
        if (Clock::now() >= deadline) {
            std::string what;
            size_t pending = 0;
            for (size_t i = 0; i < n; ++i) {
                if (!transfers[i] || transfers[i]->done()) continue;
                if (pending++ == 0) what = transfers[i]->describe();
            }
            return gpucoll_fail(GPUCOLL_ERR_TIMEOUT, "ucx: timed out after %d ms without progress: %s%s",
                                cfg_.timeout_ms, what.c_str(), pending > 1 ? " (and more)" : "");
        }
        if (++idle >= kIdlePollsBeforeYield) {
            idle = 0;
            sched_yield();
        }
    }
}

void Group::release(Transfer *t)
{
    if (!t) return;
    WorkerLock lock(worker_->mutex());
    transfers_.erase(t);
    if (t->done()) {
        delete t;
        return;
    }
    abort(t);
}

void Group::abort(Transfer *t)
{
    transfers_.erase(t);
    if (!t->finished()) t->fail(GPUCOLL_ERR_INTERNAL, "aborted");
    t->withdraw();
    t->cancel_receives();
    /* A posted send cannot be cancelled; closing its endpoint completes it
     * (with UCS_ERR_CANCELED), so the user buffer is free when we return.
     * The peer is useless to this group from now on anyway. */
    if (t->has_sends_on_wire()) force_close(t->peer(), "endpoint closed to abort a pending send");
    const auto deadline = after_ms(capped_ms(cfg_.timeout_ms, kAbortGraceMs));
    for (unsigned polls = 1; !t->reap() && Clock::now() < deadline; ++polls) {
        ucp_worker_progress(worker_->handle());
        if (polls % kIdlePollsBeforeYield == 0) sched_yield();
    }
    t->drain_copies();
    if (t->reap()) delete t;
    else orphans_.push_back(t); /* UCX still owns a request: free it later */
}

bool Group::progress() { return worker_->progress(); }

} // namespace gpucoll_ucx
