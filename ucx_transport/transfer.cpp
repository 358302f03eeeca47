#include "transfer.h"

#include <algorithm>
#include <cstdio>

#include "staging_copier.h"
#include "ucx_error.h"
#include "ucx_worker.h"

namespace gpucoll_ucx {

namespace {
/* UCX wants a valid address even for an empty message. */
char g_empty_message;
/* Rounds of the state machine per advance(): with the memcpy copier a copy
 * completes at once, so its chunk can be posted in the same call. */
constexpr int kAdvanceRounds = 4;
} // namespace

Transfer::Transfer(Worker &worker, TrafficCounters &counters, const Spec &spec)
    : worker_(worker), counters_(counters), spec_(spec)
{
    nchunks_ = spec_.bytes == 0 ? 1 : (spec_.bytes + spec_.chunk_bytes - 1) / spec_.chunk_bytes;
    if (spec_.bytes == 0) {
        /* Nothing to stage or register: a single empty message. */
        spec_.route = Route::Direct;
        spec_.buf = &g_empty_message;
        spec_.mem_type = UCS_MEMORY_TYPE_HOST;
        spec_.registration = {};
    }
}

Transfer::~Transfer()
{
    if (started_) worker_.remove_live(this);
    withdraw();
    RegistrationCache &rcache = worker_.rcache();
    for (Slot &s : slots_) {
        rcache.release(&s.bounce_registration);
        if (s.bounce) spec_.copier->put_bounce(spec_.chunk_bytes, s.bounce);
        if (s.lane >= 0) spec_.copier->release_lane(s.lane);
    }
    rcache.release(&registration_);
}

Worker::WireKey Transfer::wire_key() const
{
    return Worker::WireKey(int(spec_.dir), spec_.peer->rank, spec_.tag);
}

bool Transfer::my_wire_turn() { return in_wire_queue_ && worker_.wire_turn(wire_key(), this); }

void Transfer::posted_one()
{
    ++next_wire_;
    if (next_wire_ == nchunks_ && in_wire_queue_) {
        worker_.wire_leave(wire_key(), this);
        in_wire_queue_ = false;
    }
}

size_t Transfer::chunk_len(size_t chunk) const
{
    return std::min(spec_.chunk_bytes, spec_.bytes - chunk * spec_.chunk_bytes);
}

gpucoll_status_t Transfer::start()
{
    slots_.resize(std::min<size_t>(size_t(spec_.depth), nchunks_));
    RegistrationCache &rcache = worker_.rcache();
    if (spec_.route == Route::Staged) {
        for (Slot &s : slots_) {
            gpucoll_status_t st = spec_.copier->get_bounce(spec_.chunk_bytes, &s.bounce);
            if (st == GPUCOLL_SUCCESS) st = spec_.copier->acquire_lane(&s.lane);
            if (st != GPUCOLL_SUCCESS) return st;
            RegistrationKey key;
            key.base = reinterpret_cast<uintptr_t>(s.bounce);
            key.length = spec_.chunk_bytes;
            /* Registration only saves UCX work; without it UCX registers itself. */
            (void)rcache.acquire(key, &s.bounce_registration);
        }
    } else if (spec_.registration.length != 0) {
        (void)rcache.acquire(spec_.registration, &registration_);
    }
    started_ = true;
    worker_.add_live(this);
    worker_.wire_enqueue(wire_key(), this);
    in_wire_queue_ = true;
    advance();
    return GPUCOLL_SUCCESS;
}

bool Transfer::advance()
{
    if (state_ != State::Running) return false;
    bool moved = false;
    for (int round = 0; round < kAdvanceRounds && state_ == State::Running; ++round) {
        bool r = spec_.dir == Dir::Send ? advance_send() : advance_recv();
        if (!r) break;
        moved = true;
    }
    if (state_ == State::Running && completed_ == nchunks_) state_ = State::Done;
    /* A dead peer never completes what is still pending. Only give up when
     * this round found nothing: data the peer sent before it went away is
     * already in UCX's queues and still matches. */
    if (!moved && state_ == State::Running && spec_.peer->failed)
        fail(GPUCOLL_ERR_PEER, describe() + ": rank " + std::to_string(spec_.peer->rank) + " failed (" +
                                   spec_.peer->failure + ")");
    if (moved) ++moves_;
    return moved;
}

bool Transfer::advance_send()
{
    bool moved = false;
    for (Slot &s : slots_) {
        if (s.state != Slot::State::OnWire) continue;
        ucs_status_t st = ucp_request_check_status(s.request);
        if (st == UCS_INPROGRESS) continue;
        ucp_request_free(s.request);
        s.request = nullptr;
        s.state = Slot::State::Free;
        moved = true;
        if (st != UCS_OK) {
            fail_ucx(st, "send");
            return true;
        }
        chunk_done(s.chunk);
    }
    if (spec_.route == Route::Staged) {
        for (Slot &s : slots_) {
            if (s.state != Slot::State::Copying) continue;
            bool copied = false;
            gpucoll_status_t st = spec_.copier->poll(s.lane, &copied);
            if (st != GPUCOLL_SUCCESS) {
                fail(st, describe() + ": " + gpucoll_last_error());
                return true;
            }
            if (copied) {
                s.state = Slot::State::Copied;
                moved = true;
            }
        }
        /* Post in chunk order: the receiver matches chunks by order. */
        while (next_wire_ < next_copy_ && my_wire_turn()) {
            Slot &s = slot_of(next_wire_);
            if (s.state != Slot::State::Copied) break;
            if (!post_send(s, s.bounce, chunk_len(next_wire_), s.bounce_registration.memh(), UCS_MEMORY_TYPE_HOST))
                return true;
            posted_one();
            moved = true;
        }
        while (next_copy_ < nchunks_) {
            Slot &s = slot_of(next_copy_);
            if (s.state != Slot::State::Free) break;
            gpucoll_status_t st =
                spec_.copier->start_copy(s.lane, s.bounce, chunk_ptr(next_copy_), chunk_len(next_copy_));
            if (st != GPUCOLL_SUCCESS) {
                fail(st, describe() + ": " + gpucoll_last_error());
                return true;
            }
            s.state = Slot::State::Copying;
            s.chunk = next_copy_++;
            moved = true;
        }
    } else {
        while (next_wire_ < nchunks_ && my_wire_turn()) {
            Slot &s = slot_of(next_wire_);
            if (s.state != Slot::State::Free) break;
            s.chunk = next_wire_;
            if (!post_send(s, chunk_ptr(next_wire_), chunk_len(next_wire_), registration_.memh(), spec_.mem_type))
                return true;
            posted_one();
            moved = true;
        }
    }
    return moved;
}

bool Transfer::advance_recv()
{
    bool moved = false;
    const bool staged = spec_.route == Route::Staged;
    for (Slot &s : slots_) {
        if (s.state != Slot::State::OnWire) continue;
        ucp_tag_recv_info_t info = {};
        ucs_status_t st = ucp_tag_recv_request_test(s.request, &info);
        if (st == UCS_INPROGRESS) continue;
        ucp_request_free(s.request);
        s.request = nullptr;
        moved = true;
        if (!recv_landed(s, st, info.length)) return true;
    }
    if (staged) {
        for (Slot &s : slots_) {
            if (s.state != Slot::State::Copying) continue;
            bool copied = false;
            gpucoll_status_t st = spec_.copier->poll(s.lane, &copied);
            if (st != GPUCOLL_SUCCESS) {
                fail(st, describe() + ": " + gpucoll_last_error());
                return true;
            }
            if (copied) {
                s.state = Slot::State::Free;
                chunk_done(s.chunk);
                moved = true;
            }
        }
    }
    while (next_wire_ < nchunks_ && my_wire_turn()) {
        Slot &s = slot_of(next_wire_);
        if (s.state != Slot::State::Free) break;
        s.chunk = next_wire_;
        bool posted = staged ? post_recv(s, s.bounce, chunk_len(next_wire_), s.bounce_registration.memh(),
                                         UCS_MEMORY_TYPE_HOST)
                             : post_recv(s, chunk_ptr(next_wire_), chunk_len(next_wire_), registration_.memh(),
                                         spec_.mem_type);
        if (!posted) return true;
        posted_one();
        moved = true;
    }
    return moved;
}

bool Transfer::post_send(Slot &slot, void *ptr, size_t len, ucp_mem_h memh, ucs_memory_type_t type)
{
    PeerState &peer = *spec_.peer;
    if (peer.failed || peer.ep == nullptr) {
        fail(GPUCOLL_ERR_PEER, describe() + ": rank " + std::to_string(peer.rank) + " failed (" + peer.failure + ")");
        return false;
    }
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = type;
    if (memh) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param.memh = memh;
    }
    ucs_status_ptr_t req = ucp_tag_send_nbx(peer.ep, ptr, len, spec_.tag, &param);
    if (req == nullptr) { /* completed in place (small eager message) */
        slot.state = Slot::State::Free;
        chunk_done(slot.chunk);
        return true;
    }
    if (UCS_PTR_IS_ERR(req)) {
        fail_ucx(UCS_PTR_STATUS(req), "ucp_tag_send_nbx");
        return false;
    }
    slot.request = req;
    slot.state = Slot::State::OnWire;
    return true;
}

bool Transfer::post_recv(Slot &slot, void *ptr, size_t len, ucp_mem_h memh, ucs_memory_type_t type)
{
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = type;
    if (memh) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param.memh = memh;
    }
    /* Always get a request back: a message already waiting in the
     * unexpected queue would otherwise complete on the spot (NULL return),
     * and UCX 1.13 does not report its length through recv_info then, which
     * the size check below needs. */
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t req = ucp_tag_recv_nbx(worker_.handle(), ptr, len, spec_.tag, kTagMaskAll, &param);
    if (UCS_PTR_IS_ERR(req)) {
        fail_ucx(UCS_PTR_STATUS(req), "ucp_tag_recv_nbx");
        return false;
    }
    if (req == nullptr) {
        fail(GPUCOLL_ERR_INTERNAL, describe() + ": ucp_tag_recv_nbx completed in place despite NO_IMM_CMPL");
        return false;
    }
    slot.request = req;
    slot.state = Slot::State::OnWire;
    return true;
}

bool Transfer::recv_landed(Slot &s, ucs_status_t status, size_t length)
{
    s.state = Slot::State::Free;
    if (status != UCS_OK) {
        fail_ucx(status, "receive");
        return false;
    }
    if (length != chunk_len(s.chunk)) {
        char what[160];
        snprintf(what, sizeof what, ": message size mismatch, chunk %zu has %zu bytes instead of %zu", s.chunk,
                 length, chunk_len(s.chunk));
        fail(GPUCOLL_ERR_INVALID, describe() + what);
        return false;
    }
    if (spec_.route == Route::Direct) {
        chunk_done(s.chunk);
        return true;
    }
    /* Staged: the chunk is in the bounce buffer; copy it to its place while
     * the next chunks keep arriving. */
    gpucoll_status_t st = spec_.copier->start_copy(s.lane, chunk_ptr(s.chunk), s.bounce, chunk_len(s.chunk));
    if (st != GPUCOLL_SUCCESS) {
        fail(st, describe() + ": " + gpucoll_last_error());
        return false;
    }
    s.state = Slot::State::Copying;
    return true;
}

void Transfer::chunk_done(size_t chunk)
{
    ++completed_;
    const uint64_t len = chunk_len(chunk);
    const bool staged = spec_.route == Route::Staged;
    if (spec_.dir == Dir::Send) {
        counters_.bytes_sent += len;
        ++(staged ? counters_.staged_sent : counters_.direct_sent);
    } else {
        counters_.bytes_received += len;
        ++(staged ? counters_.staged_received : counters_.direct_received);
    }
}

std::string Transfer::describe() const
{
    char text[200];
    bool send = spec_.dir == Dir::Send;
    snprintf(text, sizeof text, "%s of %zu bytes %s rank %d (seq %u, step %u; %zu of %zu chunks done)",
             send ? "send" : "recv", spec_.bytes, send ? "to" : "from", spec_.peer->rank, spec_.seq, spec_.step,
             completed_, nchunks_);
    return text;
}

void Transfer::fail(gpucoll_status_t status, std::string reason)
{
    if (state_ == State::Failed) return;
    state_ = State::Failed;
    status_ = status;
    error_ = std::move(reason);
}

void Transfer::fail_ucx(ucs_status_t status, const char *what)
{
    fail(status_from_ucs(status), describe() + ": " + what + " failed: " + ucs_status_string(status));
}

void Transfer::withdraw()
{
    if (!in_wire_queue_) return;
    worker_.wire_leave(wire_key(), this);
    in_wire_queue_ = false;
}

void Transfer::cancel_receives()
{
    if (spec_.dir != Dir::Recv) return;
    for (Slot &s : slots_)
        if (s.state == Slot::State::OnWire) ucp_request_cancel(worker_.handle(), s.request);
}

bool Transfer::has_sends_on_wire() const
{
    if (spec_.dir != Dir::Send) return false;
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot &s) { return s.state == Slot::State::OnWire; });
}

bool Transfer::reap()
{
    bool clear = true;
    for (Slot &s : slots_) {
        if (s.state != Slot::State::OnWire) continue;
        if (ucp_request_check_status(s.request) == UCS_INPROGRESS) {
            clear = false;
            continue;
        }
        ucp_request_free(s.request);
        s.request = nullptr;
        s.state = Slot::State::Free;
    }
    return clear;
}

void Transfer::drain_copies()
{
    for (Slot &s : slots_) {
        if (s.state != Slot::State::Copying && s.state != Slot::State::Copied) continue;
        (void)spec_.copier->drain(s.lane);
        s.state = Slot::State::Free;
    }
}

} // namespace gpucoll_ucx
