/* An endpoint group: the ranks of one communicator, reachable over UCX.
 *
 * Created collectively (worker addresses travel through the caller's OOB
 * allgather), it hands out transfers to peers, waits on them with a bound,
 * and owns what its collectives need: the collective sequence counter,
 * reduction scratch and traffic counters. Endpoints are created on the
 * first send to a peer, with UCP_ERR_HANDLING_MODE_PEER so that a dead peer
 * surfaces as an error instead of a hang. */
#ifndef GPUCOLL_UCX_GROUP_H
#define GPUCOLL_UCX_GROUP_H

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "buffer_kind.h"
#include "gpucoll_ucx.h"
#include "tag.h"
#include "transfer.h"

namespace gpucoll_ucx {

class StagingCopier;
class Worker;

class Group {
public:
    static gpucoll_status_t create(const gpucoll_ucx_config_t &cfg, const gpucoll_oob_t &oob, Group **group);
    /* Aborts what is still pending, gives the endpoints a short flush, force-
     * closes them and deletes this (see gpucoll_ucx_group_destroy). */
    gpucoll_status_t destroy();

    int rank() const { return rank_; }
    int size() const { return int(peers_.size()); }
    const gpucoll_ucx_config_t &config() const { return cfg_; }
    gpucoll_ucx_device_path_t device_path() const { return device_path_; }
    size_t chunk_bytes() const { return cfg_.chunk_bytes; }
    int depth() const { return cfg_.pipeline_depth; }
    Worker &worker() { return *worker_; }
    const TrafficCounters &counters() const { return counters_; }
    size_t describe(char *buf, size_t len) const;
    /* The UCX transports/devices of the endpoints opened so far. */
    size_t transports(char *buf, size_t len) const;

    /* ---- transfers ---- */
    gpucoll_status_t start_send(int peer, const void *buf, size_t bytes, TagClass cls, uint32_t seq, uint32_t step,
                                Transfer **transfer);
    gpucoll_status_t start_recv(int peer, void *buf, size_t bytes, TagClass cls, uint32_t seq, uint32_t step,
                                Transfer **transfer);
    /* Until every non-null transfer is done; fails with GPUCOLL_ERR_TIMEOUT
     * (naming the peer) when none of them moves for timeout_ms, or with the
     * first failure. Never frees anything. */
    gpucoll_status_t wait(Transfer *const *transfers, size_t n);
    /* Frees a transfer; one not done is aborted first, so that nothing
     * references its buffer any more when this returns. */
    void release(Transfer *transfer);
    bool progress();

    /* ---- for the schedules ---- */
    uint32_t next_collective_seq() { return collective_seq_++; }
    BufferKind classify(const void *ptr) const { return classify_buffer(ptr, cfg_.stage_host_buffers != 0); }
    /* Copy within this process between any kinds of memory; waits for it. */
    gpucoll_status_t local_copy(void *dst, const void *src, size_t bytes);
    /* Scratch of at least `bytes` in the same kind of memory as a buffer of
     * kind `like`; valid until the next scratch() call of that kind. */
    gpucoll_status_t scratch(const BufferKind &like, size_t bytes, char **out);
    /* inout (op)= in, on memory of kind `kind` (see gpucoll_ucx_reducer_t). */
    gpucoll_status_t reduce(const BufferKind &kind, const gpucoll_ucx_reducer_t *reducer, void *inout,
                            const void *in, size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op);

private:
    Group() = default;
    ~Group();
    gpucoll_status_t init(const gpucoll_ucx_config_t &cfg, const gpucoll_oob_t &oob);
    gpucoll_status_t choose_device_path();
    gpucoll_status_t exchange_addresses(const gpucoll_oob_t &oob, gpucoll_status_t local,
                                        const std::string &local_reason);
    gpucoll_status_t endpoint(int peer);
    gpucoll_status_t start(Transfer::Dir dir, int peer, void *buf, size_t bytes, TagClass cls, uint32_t seq,
                           uint32_t step, Transfer **transfer);
    void abort(Transfer *t);
    /* Starts a forced close of the endpoint; the peer counts as failed
     * (`why`) from now on. Returns UCX's request, status pointer or NULL. */
    void *start_close(PeerState &peer, const char *why);
    void force_close(PeerState &peer, const char *why);
    /* Progresses until every request (UCX status pointers, NULL allowed)
     * completes or the time runs out; frees them either way. */
    void wait_ucx_requests(std::vector<void *> &requests, int timeout_ms);
    static void on_endpoint_error(void *arg, ucp_ep_h ep, ucs_status_t status);

    gpucoll_ucx_config_t cfg_ = {};
    gpucoll_ucx_device_path_t device_path_ = GPUCOLL_UCX_DEVICE_PATH_STAGED;
    const char *device_path_reason_ = "";
    Worker *worker_ = nullptr;
    int rank_ = 0;
    int group_id_ = -1;
    uint32_t collective_seq_ = 0;
    std::vector<PeerState> peers_; /* never resized after init: endpoints point into it */
    std::unordered_set<Transfer *> transfers_; /* started, not yet released */
    std::vector<Transfer *> orphans_;          /* aborted, UCX still holds requests */
    TrafficCounters counters_;
    struct Scratch {
        void *ptr = nullptr;
        size_t bytes = 0;
        StagingCopier *owner = nullptr;
    } host_scratch_, gpu_scratch_;
};

} // namespace gpucoll_ucx
#endif
