/* Group: creation (address exchange), endpoints, destruction. */
#include "ucx_group.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "staging_copier.h"
#include "ucx_error.h"
#include "ucx_worker.h"
#include "wait_policy.h"

namespace gpucoll_ucx {

namespace {
constexpr uint32_t kHeaderMagic = 0x58554347; /* "GCUX" */
constexpr uint32_t kHeaderVersion = 1;

/* What every rank contributes to the first OOB allgather. */
struct CreateHeader {
    uint32_t magic;
    uint32_t version;
    int32_t status; /* GPUCOLL_SUCCESS, or why this rank cannot take part */
    uint32_t reserved;
    uint64_t chunk_bytes;
    uint32_t address_bytes;
    int32_t rank;
    uint8_t used_group_ids[kMaxGroups / 8];
};

void fill_defaults(gpucoll_ucx_config_t *c)
{
    if (c->timeout_ms < 0) c->timeout_ms = 0; /* none */
    if (c->pipeline_depth == 0) c->pipeline_depth = GPUCOLL_UCX_DEFAULT_PIPELINE_DEPTH;
    c->pipeline_depth = std::max(c->pipeline_depth, 2);
    if (c->rcache_max_entries == 0) c->rcache_max_entries = GPUCOLL_UCX_DEFAULT_RCACHE_ENTRIES;
}
} // namespace

/* ---- creation -------------------------------------------------------------- */

gpucoll_status_t Group::create(const gpucoll_ucx_config_t &cfg, const gpucoll_oob_t &oob, Group **group)
{
    *group = nullptr;
    if (oob.size < 1 || oob.size > kMaxRanks || oob.rank < 0 || oob.rank >= oob.size || !oob.allgather)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx group: bad oob (rank %d, size %d, max %d ranks)", oob.rank,
                            oob.size, kMaxRanks);
    if (cfg.device_path < GPUCOLL_UCX_DEVICE_PATH_AUTO || cfg.device_path > GPUCOLL_UCX_DEVICE_PATH_STAGED)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx group: bad device_path %d", int(cfg.device_path));
    Group *g = new Group();
    gpucoll_status_t st = g->init(cfg, oob);
    if (st != GPUCOLL_SUCCESS) {
        std::string reason = gpucoll_last_error();
        g->destroy();
        return gpucoll_fail(st, "%s", reason.c_str());
    }
    *group = g;
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t Group::init(const gpucoll_ucx_config_t &cfg, const gpucoll_oob_t &oob)
{
    cfg_ = cfg;
    fill_defaults(&cfg_);
    rank_ = oob.rank;
    /* A local failure still takes part in the OOB exchange, so that every
     * rank fails together instead of the others blocking in the allgather. */
    gpucoll_status_t local = Worker::acquire(cfg_, &worker_);
    if (local == GPUCOLL_SUCCESS) local = choose_device_path();
    if (cfg_.chunk_bytes == 0)
        cfg_.chunk_bytes = device_path_ == GPUCOLL_UCX_DEVICE_PATH_DIRECT ? GPUCOLL_UCX_DEFAULT_DIRECT_CHUNK_BYTES
                                                                          : GPUCOLL_UCX_DEFAULT_CHUNK_BYTES;
    /* A multiple of the largest element keeps reduction segments whole. */
    cfg_.chunk_bytes = std::max<size_t>(cfg_.chunk_bytes / 8 * 8, GPUCOLL_UCX_MIN_CHUNK_BYTES);
    const std::string reason = local == GPUCOLL_SUCCESS ? "" : gpucoll_last_error();
    return exchange_addresses(oob, local, reason);
}

gpucoll_status_t Group::choose_device_path()
{
    const ucs_memory_type_t device_type = Worker::device_memory_type();
    const bool ucx_has_gpu = worker_->supports_memory_type(device_type);
    switch (cfg_.device_path) {
    case GPUCOLL_UCX_DEVICE_PATH_DIRECT:
        if (!ucx_has_gpu)
            return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED,
                                "ucx: device_path=direct but this UCX (%s) has no %s memory support",
                                ucp_get_version_string(), ucs_memory_type_names[device_type]);
        device_path_ = GPUCOLL_UCX_DEVICE_PATH_DIRECT;
        device_path_reason_ = "requested";
        break;
    case GPUCOLL_UCX_DEVICE_PATH_STAGED:
        device_path_ = GPUCOLL_UCX_DEVICE_PATH_STAGED;
        device_path_reason_ = "requested";
        break;
    default:
        device_path_ = ucx_has_gpu ? GPUCOLL_UCX_DEVICE_PATH_DIRECT : GPUCOLL_UCX_DEVICE_PATH_STAGED;
        device_path_reason_ = ucx_has_gpu ? "UCX supports GPU memory" : "UCX lacks GPU memory support";
        break;
    }
    return GPUCOLL_SUCCESS;
}

/* The first round's headers, alike on every rank, so that either all ranks
 * go on to the second round or none does: their checks, the longest worker
 * address, and the lowest group id free on every member (*id). */
static gpucoll_status_t check_headers(const std::vector<CreateHeader> &headers, gpucoll_status_t local,
                                      const std::string &local_reason, size_t chunk_bytes, int rank,
                                      size_t *max_address, int *id)
{
    const int n = int(headers.size());
    int failed_rank = -1;
    uint8_t used[kMaxGroups / 8] = {};
    for (int i = 0; i < n; ++i) {
        const CreateHeader &h = headers[i];
        if (h.magic != kHeaderMagic || h.version != kHeaderVersion || h.rank != i)
            return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                "ucx group: rank %d sent a malformed header (oob allgather broken?)", i);
        if (h.status != GPUCOLL_SUCCESS && failed_rank < 0) failed_rank = i;
        *max_address = std::max<size_t>(*max_address, h.address_bytes);
        for (size_t b = 0; b < sizeof used; ++b) used[b] |= h.used_group_ids[b];
    }
    if (local != GPUCOLL_SUCCESS) return gpucoll_fail(local, "%s", local_reason.c_str());
    if (failed_rank >= 0)
        return gpucoll_fail(GPUCOLL_ERR_PEER, "ucx group: rank %d could not set up UCX (%s)", failed_rank,
                            gpucoll_status_name(gpucoll_status_t(headers[failed_rank].status)));
    for (int i = 0; i < n; ++i)
        if (headers[i].chunk_bytes != chunk_bytes)
            return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                "ucx group: chunk_bytes differ (rank %d: %llu, rank %d: %zu); "
                                "it must be equal everywhere",
                                i, (unsigned long long)headers[i].chunk_bytes, rank, chunk_bytes);
    for (int i = 0; i < kMaxGroups && *id < 0; ++i)
        if (!(used[i / 8] & (1u << (i % 8)))) *id = i;
    if (*id < 0)
        return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "ucx group: all %d group ids are in use on some rank", kMaxGroups);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t Group::exchange_addresses(const gpucoll_oob_t &oob, gpucoll_status_t local,
                                           const std::string &local_reason)
{
    const int n = oob.size;
    std::vector<CreateHeader> headers(n);
    CreateHeader mine = {};
    mine.magic = kHeaderMagic;
    mine.version = kHeaderVersion;
    mine.status = int32_t(local);
    mine.chunk_bytes = cfg_.chunk_bytes;
    mine.rank = rank_;
    if (worker_) {
        mine.address_bytes = uint32_t(worker_->address().size());
        WorkerLock lock(worker_->mutex());
        GroupIdBitmap used = worker_->used_group_ids();
        memcpy(mine.used_group_ids, used.data(), sizeof mine.used_group_ids);
    }
    if (oob.allgather(&mine, headers.data(), sizeof mine, oob.ctx) != 0)
        return gpucoll_fail(GPUCOLL_ERR_TRANSPORT, "ucx group: oob allgather of headers failed");

    size_t max_address = 0;
    int id = -1;
    gpucoll_status_t st = check_headers(headers, local, local_reason, cfg_.chunk_bytes, rank_, &max_address, &id);
    if (st != GPUCOLL_SUCCESS) return st;
    bool claimed;
    {
        WorkerLock lock(worker_->mutex());
        claimed = worker_->claim_group_id(id);
    }
    if (claimed) group_id_ = id;

    /* Second round: [claimed?][worker address, zero-padded to the longest]. */
    const size_t entry = 1 + max_address;
    std::vector<uint8_t> padded(entry, 0), all(entry * size_t(n));
    padded[0] = claimed ? 1 : 0;
    std::copy(worker_->address().begin(), worker_->address().end(), padded.begin() + 1);
    if (oob.allgather(padded.data(), all.data(), entry, oob.ctx) != 0)
        return gpucoll_fail(GPUCOLL_ERR_TRANSPORT, "ucx group: oob allgather of worker addresses failed");
    for (int i = 0; i < n; ++i)
        if (all[size_t(i) * entry] == 0)
            return gpucoll_fail(i == rank_ ? GPUCOLL_ERR_INTERNAL : GPUCOLL_ERR_PEER,
                                "ucx group: group id %d was taken concurrently on rank %d (create groups from one "
                                "thread at a time)",
                                id, i);
    peers_.resize(n);
    for (int i = 0; i < n; ++i) {
        peers_[i].rank = i;
        const uint8_t *a = all.data() + size_t(i) * entry + 1;
        peers_[i].address.assign(a, a + headers[i].address_bytes);
    }
    return GPUCOLL_SUCCESS;
}

/* ---- endpoints ------------------------------------------------------------- */

void Group::on_endpoint_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    PeerState *peer = static_cast<PeerState *>(arg);
    peer->failed = true;
    peer->failure = std::string("endpoint error: ") + ucs_status_string(status);
}

gpucoll_status_t Group::endpoint(int peer)
{
    PeerState &p = peers_[peer];
    if (p.ep) return GPUCOLL_SUCCESS;
    if (p.failed) return gpucoll_fail(GPUCOLL_ERR_PEER, "ucx: rank %d failed earlier (%s)", peer, p.failure.c_str());
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t *>(p.address.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = on_endpoint_error;
    params.err_handler.arg = &p;
    ucs_status_t st = ucp_ep_create(worker_->handle(), &params, &p.ep);
    if (st != UCS_OK) {
        p.ep = nullptr;
        return ucx_fail(st, "ucp_ep_create to rank %d", peer);
    }
    return GPUCOLL_SUCCESS;
}

void Group::wait_ucx_requests(std::vector<void *> &requests, int timeout_ms)
{
    const auto deadline = after_ms(timeout_ms);
    for (unsigned polls = 1;; ++polls) {
        bool pending = false;
        for (void *&r : requests) {
            if (r == nullptr || UCS_PTR_IS_ERR(r)) {
                r = nullptr;
                continue;
            }
            if (ucp_request_check_status(r) == UCS_INPROGRESS) {
                pending = true;
                continue;
            }
            ucp_request_free(r);
            r = nullptr;
        }
        if (!pending) return;
        if (Clock::now() >= deadline) break;
        worker_->progress();
        if (polls % kIdlePollsBeforeYield == 0) sched_yield();
    }
    /* Out of time: hand them back; UCX frees each when it completes. */
    for (void *&r : requests)
        if (r) ucp_request_free(r);
    requests.clear();
}

void *Group::start_close(PeerState &peer, const char *why)
{
    /* Forced: a flushing close needs the peer to take part, which a dead or
     * departed peer never does. Every endpoint uses
     * UCP_ERR_HANDLING_MODE_PEER, as a forced close requires. */
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void *request = ucp_ep_close_nbx(peer.ep, &param);
    peer.ep = nullptr;
    if (!peer.failed) {
        peer.failed = true;
        peer.failure = why;
    }
    return request;
}

void Group::force_close(PeerState &peer, const char *why)
{
    if (!peer.ep) return;
    std::vector<void *> request{start_close(peer, why)};
    wait_ucx_requests(request, capped_ms(cfg_.timeout_ms, kAbortGraceMs));
}

/* ---- destruction ----------------------------------------------------------- */

gpucoll_status_t Group::destroy()
{
    Worker *worker = worker_;
    if (worker) {
        WorkerLock lock(worker->mutex());
        std::vector<Transfer *> pending(transfers_.begin(), transfers_.end());
        for (Transfer *t : pending) abort(t);
        /* Peers are done with the group (the caller's contract), so the
         * endpoints are force-closed: that needs nothing from the peers.
         * Before that, a short best-effort flush drains what UCX may still
         * hold for a peer (a completed eager send can sit in a transport
         * buffer) in case a caller destroys while a peer still finishes the
         * last collective. It is bounded short because a flush also waits
         * for connection handshakes that idle or departed peers never
         * answer. */
        std::vector<void *> requests;
        ucp_request_param_t flush = {};
        for (PeerState &p : peers_)
            if (p.ep && !p.failed) requests.push_back(ucp_ep_flush_nbx(p.ep, &flush));
        wait_ucx_requests(requests, capped_ms(cfg_.timeout_ms, kCloseDrainMs));
        for (PeerState &p : peers_)
            if (p.ep) requests.push_back(start_close(p, "group destroyed"));
        wait_ucx_requests(requests, capped_ms(cfg_.timeout_ms, kAbortGraceMs));
        for (Transfer *t : orphans_) {
            if (t->reap()) {
                delete t;
            } else {
                /* Still held by UCX after a forced close: leak it rather
                 * than free memory UCX may write. */
                worker->remove_live(t);
            }
        }
        orphans_.clear();
        for (Scratch *s : {&host_scratch_, &gpu_scratch_})
            if (s->ptr) s->owner->free_scratch(s->ptr);
        if (group_id_ >= 0) worker->release_group_id(group_id_);
    }
    delete this;
    if (worker) Worker::release(worker);
    return GPUCOLL_SUCCESS;
}

Group::~Group() = default;

size_t Group::transports(char *buf, size_t len) const
{
    // UCX prints an endpoint's lanes as "lane[i]: <rsc>:<transport>/<device> md[..] ...";
    // anything else it prints (or a format this parser does not know) is left out.
    std::set<std::string> names;
    for (const PeerState &p : peers_) {
        if (!p.ep) continue;
        char *text = nullptr;
        size_t bytes = 0;
        FILE *f = open_memstream(&text, &bytes);
        if (!f) continue;
        {
            WorkerLock lock(worker_->mutex());
            ucp_ep_print_info(p.ep, f);
        }
        fclose(f);
        std::istringstream in(std::string(text ? text : "", bytes));
        free(text);
        for (std::string line; std::getline(in, line);) {
            size_t at = line.find("lane[");
            if (at == std::string::npos || (at = line.find("]:", at)) == std::string::npos) continue;
            std::istringstream fields(line.substr(at + 2));
            std::string rsc;
            fields >> rsc; // "<index>:<transport>/<device>"
            size_t colon = rsc.find(':');
            if (colon == std::string::npos || rsc.find('/', colon) == std::string::npos) continue;
            names.insert(rsc.substr(colon + 1));
        }
    }
    std::string all;
    for (const std::string &n : names) all += (all.empty() ? "" : ",") + n;
    int n = snprintf(buf, len, "%s", all.c_str());
    return n < 0 ? 0 : size_t(n);
}

size_t Group::describe(char *buf, size_t len) const
{
    std::string types;
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t) {
        if (!worker_->supports_memory_type(ucs_memory_type_t(t))) continue;
        if (!types.empty()) types += ",";
        types += ucs_memory_type_names[t];
    }
    const bool direct = device_path_ == GPUCOLL_UCX_DEVICE_PATH_DIRECT;
    const std::string devices = worker_->net_devices().empty() ? "unknown" : worker_->net_devices();
    int n = snprintf(buf, len,
                     "UCX %s (memory types %s; network devices %s, %s); device buffers %s (%s); host buffers %s; "
                     "chunk %zu B, %d in flight; timeout %d ms",
                     ucp_get_version_string(), types.c_str(), devices.c_str(),
                     worker_->net_devices_ours() ? "the NIC nearest the GPU" : "UCX's configuration",
                     direct ? "go direct (GPUDirect)" : "staged through pinned host bounce buffers",
                     device_path_reason_,
                     cfg_.stage_host_buffers ? "staged with memcpy (test hook)" : "go direct", cfg_.chunk_bytes,
                     cfg_.pipeline_depth, cfg_.timeout_ms);
    return n < 0 ? 0 : size_t(n);
}

} // namespace gpucoll_ucx
