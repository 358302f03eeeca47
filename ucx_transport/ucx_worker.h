/* The process's one UCP context and worker, shared by every group.
 *
 * Created by the first group, destroyed with the last (reference counted).
 * Besides the UCX handles it owns what must be process-wide: the memory
 * registration cache, the staging copiers with their bounce buffers, the
 * allocator of tag group ids, and the list of live transfers — progress
 * advances every live transfer of every group, so waiting on one request
 * never starves another request a peer is waiting for.
 *
 * Locking: mutex() guards all of it. Group entry points take it; code
 * below them assumes it is held. It is recursive because waits call
 * progress(), which takes it again. */
#ifndef GPUCOLL_UCX_WORKER_H
#define GPUCOLL_UCX_WORKER_H

#include <ucp/api/ucp.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <mutex>
#include <string>
#include <vector>

#include "gpucoll_ucx.h"
#include "registration_cache.h"
#include "staging_copier.h"
#include "tag.h"

namespace gpucoll_ucx {

class Transfer;

using GroupIdBitmap = std::vector<uint8_t>; /* kMaxGroups bits */

class Worker {
public:
    /* The process worker, created on first use with `cfg` (thread mode,
     * registration cache bound). Pair every success with release(). */
    static gpucoll_status_t acquire(const gpucoll_ucx_config_t &cfg, Worker **worker);
    static void release(Worker *worker);

    ucp_context_h context() const { return context_; }
    ucp_worker_h handle() const { return worker_; }
    const std::vector<uint8_t> &address() const { return address_; }
    std::recursive_mutex &mutex() { return mutex_; }

    /* UCX_NET_DEVICES as the context was created with, and whether it was
     * ours (gpucoll_ucx_config_t.net_devices) or UCX's own configuration. */
    const std::string &net_devices() const { return net_devices_; }
    bool net_devices_ours() const { return net_devices_ours_; }

    /* What ucp_context_query reported. */
    bool supports_memory_type(ucs_memory_type_t type) const { return (memory_types_ >> type) & 1; }
    /* UCS_MEMORY_TYPE_CUDA or _ROCM, matching the GPU platform we build for. */
    static ucs_memory_type_t device_memory_type();
    static ucs_memory_type_t managed_memory_type();

    /* One round of ucp_worker_progress plus an advance of every live
     * transfer; true if anything moved. */
    bool progress();
    void add_live(Transfer *t);
    void remove_live(Transfer *t);

    /* Wire order. UCX matches equal tags in posting order, so of several
     * transfers with the same (direction, peer, tag), only the oldest may
     * post chunks; the next one starts when it has posted its last chunk.
     * Otherwise the chunks of two messages could interleave, or a staged
     * chunk whose copy finished early could overtake an earlier message. */
    using WireKey = std::tuple<int, int, uint64_t>; /* direction, peer, tag */
    void wire_enqueue(const WireKey &key, Transfer *t) { wire_queues_[key].push_back(t); }
    bool wire_turn(const WireKey &key, const Transfer *t) const;
    void wire_leave(const WireKey &key, Transfer *t);

    RegistrationCache &rcache() { return *rcache_; }
    StagingCopier &host_copier() { return *host_copier_; }
    StagingCopier &gpu_copier() { return *gpu_copier_; }

    GroupIdBitmap used_group_ids() const { return group_ids_; }
    bool claim_group_id(int id);
    void release_group_id(int id);

private:
    Worker() = default;
    ~Worker();
    gpucoll_status_t init(const gpucoll_ucx_config_t &cfg);

    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    std::vector<uint8_t> address_;
    uint64_t memory_types_ = 0;
    bool thread_multi_ = false;
    std::string net_devices_;
    bool net_devices_ours_ = false;
    int refs_ = 0;
    std::recursive_mutex mutex_;
    std::unique_ptr<RegistrationCache> rcache_;
    std::unique_ptr<StagingCopier> host_copier_, gpu_copier_;
    std::vector<Transfer *> live_;
    std::map<WireKey, std::deque<Transfer *>> wire_queues_;
    GroupIdBitmap group_ids_ = GroupIdBitmap(kMaxGroups / 8, 0);
};

} // namespace gpucoll_ucx
#endif
