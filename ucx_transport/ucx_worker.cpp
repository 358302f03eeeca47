#include "ucx_worker.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gpu_port.h"
#include "transfer.h"
#include "ucx_error.h"

namespace gpucoll_ucx {

namespace {
std::mutex g_instance_mutex;
Worker *g_instance = nullptr;

/* gpu_port.h is the one file that tests the platform macros; its platform
 * name tells us which UCX memory type "device memory" is. */
constexpr bool kHip = std::string_view(GPU_PLATFORM_NAME) == "HIP";

/* UCX_NET_DEVICES as `config` has it ("all" unless the user set it): UCX
 * has no getter for one field, so this reads what ucx_info -c prints. */
std::string configured_net_devices(const ucp_config_t *config)
{
    char *text = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return "";
    ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    std::string value;
    const char *key = "UCX_NET_DEVICES=";
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, key, strlen(key)) == 0) {
            value.assign(line + strlen(key), end ? end : line + strlen(line));
            break;
        }
        line = end ? end + 1 : nullptr;
    }
    free(text);
    return value;
}
} // namespace

ucs_memory_type_t Worker::device_memory_type() { return kHip ? UCS_MEMORY_TYPE_ROCM : UCS_MEMORY_TYPE_CUDA; }

ucs_memory_type_t Worker::managed_memory_type()
{
    return kHip ? UCS_MEMORY_TYPE_ROCM_MANAGED : UCS_MEMORY_TYPE_CUDA_MANAGED;
}

gpucoll_status_t Worker::acquire(const gpucoll_ucx_config_t &cfg, Worker **worker)
{
    std::lock_guard<std::mutex> guard(g_instance_mutex);
    if (g_instance) {
        if (cfg.thread_multi && !g_instance->thread_multi_)
            return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                "UCX worker already created single-threaded; "
                                "thread_multi must be set by the first group");
        ++g_instance->refs_;
        *worker = g_instance;
        return GPUCOLL_SUCCESS;
    }
    Worker *w = new Worker();
    gpucoll_status_t st = w->init(cfg);
    if (st != GPUCOLL_SUCCESS) {
        delete w;
        return st;
    }
    w->refs_ = 1;
    g_instance = w;
    *worker = w;
    return GPUCOLL_SUCCESS;
}

void Worker::release(Worker *worker)
{
    std::lock_guard<std::mutex> guard(g_instance_mutex);
    if (--worker->refs_ > 0) return;
    g_instance = nullptr;
    delete worker;
}

gpucoll_status_t Worker::init(const gpucoll_ucx_config_t &cfg)
{
    ucp_config_t *config = nullptr;
    /* Reads UCX_* from the environment (UCX_TLS, UCX_NET_DEVICES, ...). */
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) return ucx_fail(st, "ucp_config_read");
    net_devices_ = configured_net_devices(config);
    if (cfg.net_devices && *cfg.net_devices && net_devices_ == "all") {
        st = ucp_config_modify(config, "NET_DEVICES", cfg.net_devices);
        if (st != UCS_OK) {
            ucp_config_release(config);
            return ucx_fail(st, "ucp_config_modify(NET_DEVICES=%s)", cfg.net_devices);
        }
        net_devices_ = cfg.net_devices;
        net_devices_ours_ = true;
    }

    thread_multi_ = cfg.thread_multi != 0;
    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_TAG;
    params.mt_workers_shared = thread_multi_ ? 1 : 0;
    params.name = "coll_gpu";
    st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) return ucx_fail(st, "ucp_init");

    ucp_context_attr_t attr = {};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    st = ucp_context_query(context_, &attr);
    if (st != UCS_OK) return ucx_fail(st, "ucp_context_query");
    memory_types_ = attr.memory_types;

    ucp_worker_params_t wparams = {};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = thread_multi_ ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context_, &wparams, &worker_);
    if (st != UCS_OK) return ucx_fail(st, "ucp_worker_create");

    ucp_address_t *addr = nullptr;
    size_t addr_len = 0;
    st = ucp_worker_get_address(worker_, &addr, &addr_len);
    if (st != UCS_OK) return ucx_fail(st, "ucp_worker_get_address");
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(addr);
    address_.assign(bytes, bytes + addr_len);
    ucp_worker_release_address(worker_, addr);

    size_t entries = cfg.rcache_max_entries ? cfg.rcache_max_entries : GPUCOLL_UCX_DEFAULT_RCACHE_ENTRIES;
    rcache_ = std::make_unique<RegistrationCache>(context_, entries);
    host_copier_ = std::make_unique<HostStagingCopier>(rcache_.get());
    gpu_copier_ = std::make_unique<GpuStagingCopier>(rcache_.get());
    return GPUCOLL_SUCCESS;
}

Worker::~Worker()
{
    /* Bounce buffers and registrations go before the context they belong to. */
    host_copier_.reset();
    gpu_copier_.reset();
    rcache_.reset();
    if (worker_) ucp_worker_destroy(worker_);
    if (context_) ucp_cleanup(context_);
}

bool Worker::progress()
{
    std::lock_guard<std::recursive_mutex> guard(mutex_);
    bool moved = ucp_worker_progress(worker_) != 0;
    /* Index loop: advance() never adds or removes live transfers. */
    for (size_t i = 0; i < live_.size(); ++i) moved |= live_[i]->advance();
    return moved;
}

void Worker::add_live(Transfer *t) { live_.push_back(t); }

void Worker::remove_live(Transfer *t)
{
    auto it = std::find(live_.begin(), live_.end(), t);
    if (it != live_.end()) {
        *it = live_.back();
        live_.pop_back();
    }
}

bool Worker::wire_turn(const WireKey &key, const Transfer *t) const
{
    auto it = wire_queues_.find(key);
    return it != wire_queues_.end() && !it->second.empty() && it->second.front() == t;
}

void Worker::wire_leave(const WireKey &key, Transfer *t)
{
    auto it = wire_queues_.find(key);
    if (it == wire_queues_.end()) return;
    auto &queue = it->second;
    auto pos = std::find(queue.begin(), queue.end(), t);
    if (pos != queue.end()) queue.erase(pos);
    if (queue.empty()) wire_queues_.erase(it);
}

bool Worker::claim_group_id(int id)
{
    uint8_t &byte = group_ids_[id / 8];
    uint8_t bit = uint8_t(1u << (id % 8));
    if (byte & bit) return false;
    byte |= bit;
    return true;
}

void Worker::release_group_id(int id) { group_ids_[id / 8] &= uint8_t(~(1u << (id % 8))); }

} // namespace gpucoll_ucx
