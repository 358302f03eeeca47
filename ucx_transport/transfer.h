/* One message to or from one peer, moved as a pipeline of chunks.
 *
 * Wire format: a message of B bytes is max(1, ceil(B / chunk)) UCX tagged
 * messages of `chunk` bytes (the last one shorter), all with the same tag.
 * UCX matches equal tags from one sender in order, so the receiver's chunk i
 * is the sender's chunk i. The format does not depend on where the buffer
 * lives, so a staged sender and a direct receiver (or the reverse) agree, and
 * a B-byte message can be received as a sequence of chunk-aligned smaller
 * messages (the schedules receive blocks segment by segment this way).
 *
 * Routes:
 *  - Direct: chunks go straight from/to the buffer (host memory, or device
 *    memory when UCX supports it: GPUDirect), up to `depth` in flight.
 *  - Staged: each of `depth` slots owns a bounce buffer and a copy lane.
 *    Send: copy chunk i to its bounce buffer, then post it; the copy of
 *    chunk i+1 runs while chunk i is on the wire. Receive: post chunk i into
 *    a bounce buffer; when it lands, copy it to the buffer while chunk i+1
 *    is being received. Chunks are always posted in order.
 *
 * Transfers with the same (direction, peer, tag) post their chunks one
 * transfer after the other, oldest first (Worker::wire_turn), so that their
 * chunks never interleave on the wire.
 *
 * advance() never blocks; the worker calls it for every live transfer. */
#ifndef GPUCOLL_UCX_TRANSFER_H
#define GPUCOLL_UCX_TRANSFER_H

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpucoll_status.h"
#include "registration_cache.h"
#include "ucx_worker.h"

namespace gpucoll_ucx {

class StagingCopier;
class Worker;

/* What a group knows about one peer; transfers read it to notice failures. */
struct PeerState {
    int rank = -1;
    std::vector<uint8_t> address;
    ucp_ep_h ep = nullptr; /* created on first send */
    bool failed = false;
    std::string failure; /* why, for error messages */
};

/* Per-group traffic counters (see gpucoll_ucx_stats_t). */
struct TrafficCounters {
    uint64_t bytes_sent = 0, bytes_received = 0;
    uint64_t direct_sent = 0, direct_received = 0;
    uint64_t staged_sent = 0, staged_received = 0;
};

class Transfer {
public:
    enum class Dir : uint8_t { Send, Recv };
    enum class Route : uint8_t { Direct, Staged };

    struct Spec {
        Dir dir = Dir::Send;
        Route route = Route::Direct;
        PeerState *peer = nullptr;
        ucp_tag_t tag = 0;
        uint32_t seq = 0, step = 0; /* for messages only */
        char *buf = nullptr;
        size_t bytes = 0;
        size_t chunk_bytes = 0;
        int depth = 2;
        /* Direct route: memory type of buf, and the allocation to register
         * through the cache (length 0: let UCX register by itself). */
        ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST;
        RegistrationKey registration;
        /* Staged route: who copies and provides bounce buffers. */
        StagingCopier *copier = nullptr;
    };

    Transfer(Worker &worker, TrafficCounters &counters, const Spec &spec);
    /* Requires that nothing is on the wire or being copied (see reap()). */
    ~Transfer();
    Transfer(const Transfer &) = delete;
    Transfer &operator=(const Transfer &) = delete;

    /* Takes slots, bounce buffers and registrations, joins the worker's
     * live list and posts what it can. */
    gpucoll_status_t start();
    /* Nonblocking step of the state machine; true if anything moved. */
    bool advance();

    bool done() const { return state_ == State::Done; }
    bool failed() const { return state_ == State::Failed; }
    bool finished() const { return state_ != State::Running; }
    gpucoll_status_t status() const { return status_; }
    const std::string &error() const { return error_; }
    /* Grows whenever advance() moves: waits use it to tell a slow transfer
     * from a stuck one. */
    uint64_t moves() const { return moves_; }
    Dir dir() const { return spec_.dir; }
    PeerState &peer() const { return *spec_.peer; }
    /* "recv of 4096 bytes from rank 3 (seq 7, step 2; 1 of 4 chunks done)" */
    std::string describe() const;

    void fail(gpucoll_status_t status, std::string reason);

    /* ---- abort support (group.cpp) ---- */
    /* Gives up its place in the wire order (see Worker::wire_turn). */
    void withdraw();
    void cancel_receives();
    bool has_sends_on_wire() const;
    /* Frees UCX requests that have completed (any status); true when none
     * is left on the wire. */
    bool reap();
    /* Waits for copies in flight (they always finish). */
    void drain_copies();

private:
    enum class State : uint8_t { Running, Done, Failed };
    struct Slot {
        enum class State : uint8_t { Free, Copying, Copied, OnWire } state = State::Free;
        size_t chunk = 0;
        void *request = nullptr;
        void *bounce = nullptr;
        RegistrationCache::Ref bounce_registration;
        int lane = -1;
    };

    bool advance_send();
    bool advance_recv();
    bool post_send(Slot &slot, void *ptr, size_t len, ucp_mem_h memh, ucs_memory_type_t type);
    bool post_recv(Slot &slot, void *ptr, size_t len, ucp_mem_h memh, ucs_memory_type_t type);
    /* A receive finished (status from UCX): check the size, then either the
     * chunk is done or (staged) its copy out of the bounce buffer starts.
     * False if the transfer failed. */
    bool recv_landed(Slot &slot, ucs_status_t status, size_t length);
    void chunk_done(size_t chunk);
    void fail_ucx(ucs_status_t status, const char *what);
    Slot &slot_of(size_t chunk) { return slots_[chunk % slots_.size()]; }
    /* May this transfer post its next chunk (see Worker::wire_turn)? */
    bool my_wire_turn();
    /* Called after each post: leaves the wire queue after the last chunk. */
    void posted_one();
    size_t chunk_len(size_t chunk) const;
    Worker::WireKey wire_key() const;
    char *chunk_ptr(size_t chunk) const { return spec_.buf + chunk * spec_.chunk_bytes; }

    Worker &worker_;
    TrafficCounters &counters_;
    Spec spec_;
    State state_ = State::Running;
    gpucoll_status_t status_ = GPUCOLL_SUCCESS;
    std::string error_;
    bool started_ = false;
    bool in_wire_queue_ = false;
    size_t nchunks_ = 1;
    size_t next_copy_ = 0;  /* staged send: next chunk to copy out */
    size_t next_wire_ = 0;  /* next chunk to post to UCX */
    size_t completed_ = 0;
    uint64_t moves_ = 0;
    std::vector<Slot> slots_;
    RegistrationCache::Ref registration_; /* direct route */
};

} // namespace gpucoll_ucx
#endif
