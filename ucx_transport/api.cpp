/* The C entry points: argument checks and an exception barrier (nothing
 * thrown inside may cross into C callers), then the C++ implementation. */
#include <cstring>
#include <new>

#include "gpucoll_ucx.h"
#include "schedule_util.h"
#include "ucx_group.h"
#include "ucx_worker.h"

using gpucoll_ucx::Group;
using gpucoll_ucx::TagClass;
using gpucoll_ucx::Transfer;

struct gpucoll_ucx_group {}; /* never defined for real: handles are Group* */
struct gpucoll_ucx_request {}; /* handles are Transfer* */

namespace {

Group *as_group(gpucoll_ucx_group_t *g) { return reinterpret_cast<Group *>(g); }
const Group *as_group(const gpucoll_ucx_group_t *g) { return reinterpret_cast<const Group *>(g); }
Transfer *as_transfer(gpucoll_ucx_request_t *r) { return reinterpret_cast<Transfer *>(r); }

template <class F> gpucoll_status_t guarded(const char *what, F &&f)
{
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "ucx %s: out of host memory", what);
    } catch (...) {
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "ucx %s: unexpected C++ exception", what);
    }
}

gpucoll_status_t need_group(const gpucoll_ucx_group_t *g, const char *what)
{
    return g ? GPUCOLL_SUCCESS : gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx %s: NULL group", what);
}

} // namespace

extern "C" {

void gpucoll_ucx_config_init(gpucoll_ucx_config_t *cfg, const gpucoll_config_t *common)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->timeout_ms = common && common->timeout_ms > 0 ? common->timeout_ms : 0; /* none */
    cfg->chunk_bytes = 0; /* by the device path (gpucoll_ucx_config_t) */
    cfg->pipeline_depth = GPUCOLL_UCX_DEFAULT_PIPELINE_DEPTH;
    cfg->device_path = GPUCOLL_UCX_DEVICE_PATH_AUTO;
    cfg->rcache_max_entries = GPUCOLL_UCX_DEFAULT_RCACHE_ENTRIES;
}

gpucoll_status_t gpucoll_ucx_group_create(const gpucoll_ucx_config_t *cfg, const gpucoll_oob_t *oob,
                                          gpucoll_ucx_group_t **group)
{
    if (!group || !oob) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx group_create: NULL argument");
    *group = nullptr;
    return guarded("group_create", [&] {
        gpucoll_ucx_config_t defaults;
        if (!cfg) {
            gpucoll_ucx_config_init(&defaults, nullptr);
            cfg = &defaults;
        }
        Group *g = nullptr;
        gpucoll_status_t st = Group::create(*cfg, *oob, &g);
        *group = reinterpret_cast<gpucoll_ucx_group_t *>(g);
        return st;
    });
}

gpucoll_status_t gpucoll_ucx_group_destroy(gpucoll_ucx_group_t *group)
{
    if (!group) return GPUCOLL_SUCCESS;
    return guarded("group_destroy", [&] { return as_group(group)->destroy(); });
}

int gpucoll_ucx_group_rank(const gpucoll_ucx_group_t *group) { return group ? as_group(group)->rank() : -1; }
int gpucoll_ucx_group_size(const gpucoll_ucx_group_t *group) { return group ? as_group(group)->size() : 0; }

gpucoll_ucx_device_path_t gpucoll_ucx_device_path(const gpucoll_ucx_group_t *group)
{
    return group ? as_group(group)->device_path() : GPUCOLL_UCX_DEVICE_PATH_STAGED;
}

size_t gpucoll_ucx_transports(const gpucoll_ucx_group_t *group, char *buf, size_t len)
{
    if (!group || !len) return 0;
    buf[0] = 0;
    return as_group(group)->transports(buf, len);
}

size_t gpucoll_ucx_chunk_bytes(const gpucoll_ucx_group_t *group)
{
    return group ? as_group(group)->chunk_bytes() : 0;
}

const char *gpucoll_ucx_device_path_name(gpucoll_ucx_device_path_t path)
{
    switch (path) {
    case GPUCOLL_UCX_DEVICE_PATH_AUTO: return "auto";
    case GPUCOLL_UCX_DEVICE_PATH_DIRECT: return "direct";
    case GPUCOLL_UCX_DEVICE_PATH_STAGED: return "staged";
    }
    return "unknown";
}

size_t gpucoll_ucx_describe(const gpucoll_ucx_group_t *group, char *buf, size_t len)
{
    if (!group) return 0;
    return as_group(group)->describe(buf, len);
}

void gpucoll_ucx_get_stats(const gpucoll_ucx_group_t *group, gpucoll_ucx_stats_t *stats)
{
    memset(stats, 0, sizeof *stats);
    if (!group) return;
    Group *g = const_cast<Group *>(as_group(group));
    const gpucoll_ucx::TrafficCounters &c = g->counters();
    stats->bytes_sent = c.bytes_sent;
    stats->bytes_received = c.bytes_received;
    stats->direct_chunks_sent = c.direct_sent;
    stats->direct_chunks_received = c.direct_received;
    stats->staged_chunks_sent = c.staged_sent;
    stats->staged_chunks_received = c.staged_received;
    std::lock_guard<std::recursive_mutex> lock(g->worker().mutex());
    gpucoll_ucx::RegistrationCacheStats rc = g->worker().rcache().stats();
    stats->rcache_hits = rc.hits;
    stats->rcache_misses = rc.misses;
    stats->rcache_evictions = rc.evictions;
}

/* ---- point-to-point ---------------------------------------------------------- */

gpucoll_status_t gpucoll_ucx_isend(gpucoll_ucx_group_t *group, int peer, const void *buf, size_t bytes, uint32_t seq,
                                   uint32_t step, gpucoll_ucx_request_t **req)
{
    gpucoll_status_t st = need_group(group, "isend");
    if (st != GPUCOLL_SUCCESS) return st;
    if (!req) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx isend: NULL request");
    *req = nullptr;
    return guarded("isend", [&] {
        Transfer *t = nullptr;
        gpucoll_status_t s = as_group(group)->start_send(peer, buf, bytes, TagClass::User, seq, step, &t);
        *req = reinterpret_cast<gpucoll_ucx_request_t *>(t);
        return s;
    });
}

gpucoll_status_t gpucoll_ucx_irecv(gpucoll_ucx_group_t *group, int peer, void *buf, size_t bytes, uint32_t seq,
                                   uint32_t step, gpucoll_ucx_request_t **req)
{
    gpucoll_status_t st = need_group(group, "irecv");
    if (st != GPUCOLL_SUCCESS) return st;
    if (!req) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx irecv: NULL request");
    *req = nullptr;
    return guarded("irecv", [&] {
        Transfer *t = nullptr;
        gpucoll_status_t s = as_group(group)->start_recv(peer, buf, bytes, TagClass::User, seq, step, &t);
        *req = reinterpret_cast<gpucoll_ucx_request_t *>(t);
        return s;
    });
}

int gpucoll_ucx_progress(gpucoll_ucx_group_t *group) { return group && as_group(group)->progress() ? 1 : 0; }

gpucoll_status_t gpucoll_ucx_test(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **req, int *done)
{
    *done = 0;
    gpucoll_status_t st = need_group(group, "test");
    if (st != GPUCOLL_SUCCESS) return st;
    if (!req || !*req) {
        *done = 1;
        return GPUCOLL_SUCCESS;
    }
    return guarded("test", [&] {
        Group *g = as_group(group);
        Transfer *t = as_transfer(*req);
        g->progress();
        if (!t->finished()) return GPUCOLL_SUCCESS;
        *done = 1;
        *req = nullptr;
        if (t->done()) {
            g->release(t);
            return GPUCOLL_SUCCESS;
        }
        std::string reason = t->error();
        gpucoll_status_t failed = t->status();
        g->release(t);
        return gpucoll_fail(failed, "ucx: %s", reason.c_str());
    });
}

gpucoll_status_t gpucoll_ucx_waitall(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **reqs, size_t n)
{
    gpucoll_status_t st = need_group(group, "wait");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("wait", [&] {
        Group *g = as_group(group);
        Transfer **ts = reinterpret_cast<Transfer **>(reqs);
        gpucoll_status_t s = g->wait(ts, n);
        std::string reason = s == GPUCOLL_SUCCESS ? std::string() : std::string(gpucoll_last_error());
        for (size_t i = 0; i < n; ++i) {
            g->release(ts[i]); /* aborts unfinished ones after a failure */
            reqs[i] = nullptr;
        }
        return s == GPUCOLL_SUCCESS ? s : gpucoll_fail(s, "%s", reason.c_str());
    });
}

gpucoll_status_t gpucoll_ucx_wait(gpucoll_ucx_group_t *group, gpucoll_ucx_request_t **req)
{
    return req ? gpucoll_ucx_waitall(group, req, 1) : GPUCOLL_SUCCESS;
}

gpucoll_status_t gpucoll_ucx_send(gpucoll_ucx_group_t *group, int peer, const void *buf, size_t bytes, uint32_t seq,
                                  uint32_t step)
{
    gpucoll_ucx_request_t *req = nullptr;
    gpucoll_status_t st = gpucoll_ucx_isend(group, peer, buf, bytes, seq, step, &req);
    return st == GPUCOLL_SUCCESS ? gpucoll_ucx_wait(group, &req) : st;
}

gpucoll_status_t gpucoll_ucx_recv(gpucoll_ucx_group_t *group, int peer, void *buf, size_t bytes, uint32_t seq,
                                  uint32_t step)
{
    gpucoll_ucx_request_t *req = nullptr;
    gpucoll_status_t st = gpucoll_ucx_irecv(group, peer, buf, bytes, seq, step, &req);
    return st == GPUCOLL_SUCCESS ? gpucoll_ucx_wait(group, &req) : st;
}

/* ---- collectives --------------------------------------------------------------- */

gpucoll_status_t gpucoll_ucx_allreduce(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf, size_t count,
                                       gpucoll_dtype_t dtype, gpucoll_op_t op, const gpucoll_ucx_reducer_t *reducer)
{
    gpucoll_status_t st = need_group(group, "allreduce");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("allreduce", [&] {
        return gpucoll_ucx::schedule_allreduce(*as_group(group), sendbuf, recvbuf, count, dtype, op, reducer);
    });
}

gpucoll_status_t gpucoll_ucx_allgather(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf, size_t count,
                                       gpucoll_dtype_t dtype)
{
    gpucoll_status_t st = need_group(group, "allgather");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("allgather",
                   [&] { return gpucoll_ucx::schedule_allgather(*as_group(group), sendbuf, recvbuf, count, dtype); });
}

gpucoll_status_t gpucoll_ucx_bcast(gpucoll_ucx_group_t *group, void *buf, size_t count, gpucoll_dtype_t dtype, int root)
{
    gpucoll_status_t st = need_group(group, "bcast");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("bcast", [&] { return gpucoll_ucx::schedule_bcast(*as_group(group), buf, count, dtype, root); });
}

gpucoll_status_t gpucoll_ucx_reduce_scatter(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf,
                                            size_t recvcount, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                            const gpucoll_ucx_reducer_t *reducer)
{
    gpucoll_status_t st = need_group(group, "reduce_scatter");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("reduce_scatter", [&] {
        return gpucoll_ucx::schedule_reduce_scatter(*as_group(group), sendbuf, recvbuf, recvcount, dtype, op, reducer);
    });
}

gpucoll_status_t gpucoll_ucx_reduce(gpucoll_ucx_group_t *group, const void *sendbuf, void *recvbuf, size_t count,
                                    gpucoll_dtype_t dtype, gpucoll_op_t op, int root,
                                    const gpucoll_ucx_reducer_t *reducer)
{
    gpucoll_status_t st = need_group(group, "reduce");
    if (st != GPUCOLL_SUCCESS) return st;
    return guarded("reduce", [&] {
        return gpucoll_ucx::schedule_reduce(*as_group(group), sendbuf, recvbuf, count, dtype, op, root, reducer);
    });
}

} /* extern "C" */
