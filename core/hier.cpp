// The hierarchical path across nodes: the object, its groups, the local
// verdict and the dispatch to one file per collective (hier_*.cpp).
//
// Protocol with the glue (mca_coll_gpu/coll_gpu_hier.c), for every call of
// the five kinds on a communicator with a hier object:
//   1. local verdict: gpucoll_hier_local_ok (reserves device temporaries, so
//      nothing can fail for lack of memory after step 2);
//   2. agreement of every rank of the communicator (an allreduce(MIN) through
//      the displaced module, on host memory): all run it or nobody does, so a
//      node with host buffers can never leave the others waiting;
//   3. on the first agreed call, gpucoll_hier_prepare (the team's GPU set-up)
//      and a second agreement on its outcome;
//   4. gpucoll_hier_run. An error marks the object broken: this rank votes 0
//      from then on, so the whole communicator falls back to staging.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "core_state.hpp"
#include "gpucoll_topo.h"
#include "hier.hpp"
#include "no_throw.hpp"

using namespace gpucoll;
using namespace gpucoll::hier;

namespace {

gpucoll_status_t gpu_error(const char *what, gpuError_t e)
{
    return gpucoll_fail(GPUCOLL_ERR_GPU, "hier: %s: %s", what, gpuGetErrorString(e));
}

#if GPUCOLL_HAVE_UCX
bool reduces(gpucoll_coll_kind_t k)
{
    return k == GPUCOLL_COLL_ALLREDUCE || k == GPUCOLL_COLL_REDUCE || k == GPUCOLL_COLL_REDUCE_SCATTER_BLOCK;
}

// UCX_NET_DEVICES of the RDMA NIC nearest this process's current GPU, ""
// where there is none or the machine cannot be read. The machine is read
// once (hwloc takes tens of milliseconds), when the first cross-node group
// is built: the process's UCP context is created then, once.
std::string nic_near_current_gpu()
{
    int device = -1;
    char bus[32];
    if (!gpu_port_driver_present() || gpuGetDevice(&device) != gpuSuccess ||
        gpuDeviceGetPCIBusId(bus, sizeof bus, device) != gpuSuccess)
        return "";
    static std::mutex lock;
    static bool read = false;
    static topo::Topology machine;
    std::lock_guard<std::mutex> guard(lock);
    if (!read && topo::load_live_topology(&machine) != GPUCOLL_SUCCESS) machine = topo::Topology{};
    read = true;
    return topo::ucx_net_devices_near_gpu(machine, topo::find_gpu_by_bus_id(machine, bus));
}

// coll_gpu_ucx_net_devices for the UCX group: "auto" resolved, "all" or
// nothing left to UCX.
std::string ucx_net_devices(const gpucoll_config_t &cfg)
{
    const char *want = cfg.ucx_net_devices;
    if (!want || !*want || std::strcmp(want, "all") == 0) return "";
    return std::strcmp(want, "auto") == 0 ? nic_near_current_gpu() : want;
}
#endif

} // namespace

/* ---- helpers shared by hier_*.cpp ----------------------------------------- */

bool DevBuf::reserve(size_t want, int dev)
{
    if (want == 0) return true;
    if (ptr && device == dev && bytes >= want) return true;
    release();
    size_t b = 64 * 1024;
    while (b < want) b *= 2; // few regrowths when sizes vary
    if (gpuMalloc((void **)&ptr, b) != gpuSuccess) {
        (void)gpuGetLastError();
        ptr = nullptr;
        gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "hier: device temporary of %zu bytes", b);
        return false;
    }
    bytes = b;
    device = dev;
    return true;
}

void DevBuf::release()
{
    if (ptr) {
        DeviceGuard g(device);
        gpuFree(ptr);
    }
    ptr = nullptr;
    bytes = 0;
    device = -1;
}

void gpucoll::hier::temp_bytes(const gpucoll_hier &h, const gpucoll_coll_args_t &a, size_t out[2])
{
    const size_t elt = gpucoll_dtype_size(a.dtype), N = (size_t)h.layout.nnodes, L = (size_t)h.layout.local_size;
    out[0] = out[1] = 0;
    if (L == 1 && a.kind != GPUCOLL_COLL_REDUCE) return; // UCX works on the user's buffers directly
    switch (a.kind) {
    case GPUCOLL_COLL_ALLREDUCE: out[0] = a.count / L * elt; break;
    case GPUCOLL_COLL_ALLGATHER:
    case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK:
        out[0] = N * a.count * elt;     // this local index's block of every node
        out[1] = N * L * a.count * elt; // every block, ordered by (local index, node)
        break;
    case GPUCOLL_COLL_REDUCE: {
        // The node's partial result, at the local root of a node without the root.
        int me = h.rank_of[(size_t)h.layout.node * L + (size_t)h.layout.local_rank];
        if (L > 1 && h.local_of[(size_t)a.root] == h.layout.local_rank && me != a.root) out[0] = a.count * elt;
        break;
    }
    default: break;
    }
}

gpucoll_status_t gpucoll::hier::team_step(gpucoll_hier &h, gpucoll_coll_kind_t kind, const void *sbuf, void *rbuf,
                                          size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op, int root)
{
    if (!h.team || count == 0) return GPUCOLL_SUCCESS;
    gpucoll_coll_args_t t = {kind, sbuf, rbuf, count, dtype, op, root, 1, nullptr, nullptr, nullptr, nullptr};
    gpucoll_status_t st = gpucoll_team_run(h.team, &t);
    if (st == GPUCOLL_ERR_UNSUPPORTED)
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hier: the node-local team refused collective %d (%zu x %s) "
                                                  "after every rank had agreed", (int)kind, count,
                            gpucoll_dtype_name(dtype));
    return st;
}

gpucoll_status_t gpucoll::hier::order_after_default_stream(gpucoll_hier &h)
{
    // An event recorded on a blocking stream completes after everything queued
    // before it on the legacy default stream. Order none: the caller's
    // buffers are ready, and the stream does not block.
    if (config().order == GPUCOLL_ORDER_NONE) return GPUCOLL_SUCCESS;
    gpuError_t e = gpuEventRecord(h.event, h.stream);
    if (e == gpuSuccess) e = gpuEventSynchronize(h.event);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("waiting for the default stream", e);
}

gpucoll_status_t gpucoll::hier::copy_async(gpucoll_hier &h, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src) return GPUCOLL_SUCCESS;
    gpuError_t e = gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, h.stream);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("device copy", e);
}

gpucoll_status_t gpucoll::hier::sync_copies(gpucoll_hier &h)
{
    gpuError_t e = gpuStreamSynchronize(h.stream);
    return e == gpuSuccess ? GPUCOLL_SUCCESS : gpu_error("device copies", e);
}

#if GPUCOLL_HAVE_UCX
namespace {
gpucoll_status_t ucx_gpu_reduce(void *inout, const void *in, size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                void *)
{
    // All ops of the table are commutative: in op inout == inout op in.
    return gpucoll_local_reduce(inout, in, count, dtype, op);
}
const gpucoll_ucx_reducer_t g_reducer = {ucx_gpu_reduce, nullptr};
} // namespace
const gpucoll_ucx_reducer_t *gpucoll::hier::gpu_reducer() { return &g_reducer; }
#endif

/* ---- life ------------------------------------------------------------------ */

static gpucoll_status_t gpucoll_hier_create_body(const gpucoll_hier_layout_t *layout, const int *rank_of,
                                               gpucoll_hier_t **out)
{
    *out = nullptr;
    const int N = layout->nnodes, L = layout->local_size;
    if (N < 1 || L < 1 || layout->node < 0 || layout->node >= N || layout->local_rank < 0 || layout->local_rank >= L)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier: bad layout %d x %d (node %d, local %d)", N, L, layout->node,
                            layout->local_rank);
    gpucoll_hier *h = new (std::nothrow) gpucoll_hier;
    if (!h) return gpucoll_fail(GPUCOLL_ERR_NO_MEMORY, "hier object");
    h->layout = *layout;
    const size_t size = (size_t)N * (size_t)L;
    h->rank_of.assign(rank_of, rank_of + size);
    h->node_of.assign(size, -1);
    h->local_of.assign(size, -1);
    for (size_t k = 0; k < size; k++) {
        int r = rank_of[k];
        if (r < 0 || (size_t)r >= size || h->node_of[(size_t)r] >= 0) {
            delete h;
            return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier: rank_of is not a permutation (rank %d)", r);
        }
        h->node_of[(size_t)r] = (int)(k / (size_t)L);
        h->local_of[(size_t)r] = (int)(k % (size_t)L);
    }
    *out = h;
    return GPUCOLL_SUCCESS;
}

extern "C" gpucoll_status_t gpucoll_hier_create(const gpucoll_hier_layout_t *layout, const int *rank_of,
                                               gpucoll_hier_t **out)
{
    return no_throw([&] { return gpucoll_hier_create_body(layout, rank_of, out); });
}

static gpucoll_status_t gpucoll_hier_connect_local_body(gpucoll_hier_t *h, const gpucoll_oob_t *oob)
{
    if (h->layout.local_size == 1) return GPUCOLL_SUCCESS;
    if (oob->size != h->layout.local_size || oob->rank != h->layout.local_rank)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier: local oob is rank %d of %d, expected %d of %d", oob->rank,
                            oob->size, h->layout.local_rank, h->layout.local_size);
    return gpucoll_team_create(oob, &h->team);
}

extern "C" gpucoll_status_t gpucoll_hier_connect_local(gpucoll_hier_t *h, const gpucoll_oob_t *oob)
{
    return no_throw([&] { return gpucoll_hier_connect_local_body(h, oob); });
}

static gpucoll_status_t gpucoll_hier_connect_cross_body(gpucoll_hier_t *h, const gpucoll_oob_t *oob)
{
    if (oob->size != h->layout.nnodes || oob->rank != h->layout.node)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hier: cross-node oob is rank %d of %d, expected %d of %d", oob->rank,
                            oob->size, h->layout.node, h->layout.nnodes);
#if GPUCOLL_HAVE_UCX
    const gpucoll_config_t &cfg = config();
    gpucoll_ucx_config_t uc;
    gpucoll_ucx_config_init(&uc, &cfg);
    if (cfg.ucx_chunk_bytes) uc.chunk_bytes = cfg.ucx_chunk_bytes;
    if (cfg.ucx_pipeline_depth > 0) uc.pipeline_depth = cfg.ucx_pipeline_depth;
    uc.device_path = (gpucoll_ucx_device_path_t)cfg.ucx_device_path;
    const std::string net_devices = ucx_net_devices(cfg);
    uc.net_devices = net_devices.c_str();
    return gpucoll_ucx_group_create(&uc, oob, &h->group);
#else
    (void)h;
    return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "coll/gpu was built without UCX: no inter-node transport");
#endif
}

extern "C" gpucoll_status_t gpucoll_hier_connect_cross(gpucoll_hier_t *h, const gpucoll_oob_t *oob)
{
    return no_throw([&] { return gpucoll_hier_connect_cross_body(h, oob); });
}

extern "C" size_t gpucoll_hier_describe(const gpucoll_hier_t *h, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%d nodes x %d ranks (node %d, local rank %d), node-local %s; ", h->layout.nnodes,
                     h->layout.local_size, h->layout.node, h->layout.local_rank,
                     h->team ? "peer-to-peer team" : "rank alone");
    if (n < 0) return 0;
    size_t used = (size_t)n;
#if GPUCOLL_HAVE_UCX
    if (h->group) {
        const char *path = gpucoll_ucx_device_path(h->group) == GPUCOLL_UCX_DEVICE_PATH_DIRECT
                               ? "GPUDirect (device buffers straight to UCX)"
                               : "staged (device buffers through pinned host memory)";
        int m = snprintf(used < len ? buf + used : nullptr, used < len ? len - used : 0, "UCX device path %s: ", path);
        if (m > 0) used += (size_t)m;
        used += gpucoll_ucx_describe(h->group, used < len ? buf + used : nullptr, used < len ? len - used : 0);
        return used;
    }
#endif
    int m = snprintf(used < len ? buf + used : nullptr, used < len ? len - used : 0, "no UCX group");
    return used + (m > 0 ? (size_t)m : 0);
}

extern "C" void gpucoll_hier_destroy(gpucoll_hier_t *h)
{
    if (!h) return;
#if GPUCOLL_HAVE_UCX
    gpucoll_ucx_group_destroy(h->group); // local, bounded (100 ms flush)
#endif
    if (h->team) gpucoll_team_destroy(h->team);
    for (DevBuf &b : h->tmp) b.release();
    h->probe.release();
    if (h->device >= 0) {
        DeviceGuard g(h->device);
        if (h->event) gpuEventDestroy(h->event);
        if (h->stream) gpuStreamDestroy(h->stream);
    }
    delete h;
}

/* ---- per call ---------------------------------------------------------------- */

extern "C" int gpucoll_hier_local_ok(gpucoll_hier_t *h, const gpucoll_coll_args_t *a)
{
#if !GPUCOLL_HAVE_UCX
    (void)h, (void)a;
    return 0;
#else
    if (h->disabled || h->broken || !h->group || a->count == 0 || !a->local_ok) return 0;
    if (a->root < 0 || (size_t)a->root >= h->rank_of.size()) return 0;
    if (reduces(a->kind)) {
        if (!gpucoll_op_valid(a->op, a->dtype)) return 0;
    } else if (a->kind == GPUCOLL_COLL_BCAST || a->kind == GPUCOLL_COLL_ALLGATHER) {
        if (a->op != GPUCOLL_OP_NONE || gpucoll_dtype_size(a->dtype) == 0) return 0;
    } else {
        return 0;
    }
    // Significant buffers: device memory, all on one GPU (the one of earlier calls).
    const int me = h->rank_of[(size_t)h->layout.node * (size_t)h->layout.local_size + (size_t)h->layout.local_rank];
    const void *bufs[2] = {a->sbuf, a->rbuf};
    if (a->kind == GPUCOLL_COLL_REDUCE && me != a->root) bufs[1] = nullptr;
    if (a->kind == GPUCOLL_COLL_BCAST) bufs[0] = nullptr;
    int device = -1;
    for (const void *p : bufs) {
        if (!p) continue;
        gpu_port_ptr_info_t info;
        gpu_port_query_kind(p, &info);
        if (info.kind != GPU_PORT_MEM_DEVICE || (device >= 0 && info.device != device)) return 0;
        device = info.device;
    }
    if (device < 0 || (h->device >= 0 && device != h->device)) return 0;
    // The node-local team's own verdict on the kind, type and op its steps
    // take, asked now: after the agreement a refusal could only be an error.
    if (h->team) {
        gpucoll_coll_args_t t = *a;
        t.root = 0;
        t.local_ok = 1;
        if (a->kind == GPUCOLL_COLL_REDUCE && !t.rbuf) t.rbuf = const_cast<void *>(a->sbuf); // a temporary there
        if (!gpucoll_team_can_run(h->team, &t)) {
            if (config().verbose >= 10)
                fprintf(stderr, "coll:gpu: hier: the node-local team cannot run collective %d (%zu x %s); this call "
                                "will be staged\n", (int)a->kind, a->count, gpucoll_dtype_name(a->dtype));
            return 0;
        }
    }
    // Reserve temporaries now: after the agreement nothing may fail for lack of memory.
    size_t need[2];
    temp_bytes(*h, *a, need);
    if (need[0] || need[1]) {
        DeviceGuard g(device);
        for (int k = 0; k < 2; k++)
            if (!h->tmp[k].reserve(need[k], device)) {
                if (config().verbose >= 10)
                    fprintf(stderr, "coll:gpu: hier: %s; this call will be staged\n", gpucoll_last_error());
                return 0;
            }
    }
    return 1;
#endif
}

extern "C" int gpucoll_hier_prepared(const gpucoll_hier_t *h) { return h->prepared; }

extern "C" void gpucoll_hier_disable(gpucoll_hier_t *h) { h->disabled = true; }

static gpucoll_status_t gpucoll_hier_prepare_body(gpucoll_hier_t *h, const gpucoll_coll_args_t *a)
{
    if (h->prepared) return GPUCOLL_SUCCESS;
    gpu_port_ptr_info_t info;
    gpu_port_query_kind(a->rbuf ? a->rbuf : a->sbuf, &info);
    if (info.kind != GPU_PORT_MEM_DEVICE) gpu_port_query_kind(a->sbuf, &info);
    if (info.kind != GPU_PORT_MEM_DEVICE)
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hier: prepare without a device buffer");
    const int device = info.device;
    DeviceGuard g(device);
    gpuError_t e = gpuSuccess;
    const unsigned flags = config().order == GPUCOLL_ORDER_NONE ? gpuStreamNonBlocking : gpuStreamDefault;
    if (!h->stream && (e = create_coll_stream(&h->stream, flags)) != gpuSuccess)
        return gpu_error("creating a stream", e);
    if (!h->event && (e = gpuEventCreateWithFlags(&h->event, gpuEventDisableTiming)) != gpuSuccess)
        return gpu_error("creating an event", e);
    h->device = device; // the stream and event live there; destroy needs it
    if (h->team) {
        // The team sets up its GPU side (IPC mappings of every peer's scratch)
        // in its first collective; run a one-element one now so that a node
        // whose team cannot work is known before any real data moves.
        if (!h->probe.reserve(sizeof(int), device)) return GPUCOLL_ERR_NO_MEMORY;
        if ((e = gpuMemset(h->probe.ptr, 0, sizeof(int))) != gpuSuccess) return gpu_error("clearing the probe", e);
        gpucoll_coll_args_t p = {GPUCOLL_COLL_ALLREDUCE, nullptr, h->probe.ptr, 1, GPUCOLL_INT32, GPUCOLL_OP_SUM, 0, 1,
                                 nullptr, nullptr, nullptr, nullptr};
        gpucoll_status_t st = gpucoll_team_run(h->team, &p);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    h->prepared = true;
    return GPUCOLL_SUCCESS;
}

extern "C" gpucoll_status_t gpucoll_hier_prepare(gpucoll_hier_t *h, const gpucoll_coll_args_t *a)
{
    return no_throw([&] { return gpucoll_hier_prepare_body(h, a); });
}

static gpucoll_status_t gpucoll_hier_run_body(gpucoll_hier_t *h, const gpucoll_coll_args_t *a)
{
#if !GPUCOLL_HAVE_UCX
    (void)a;
    h->broken = true;
    return gpucoll_fail(GPUCOLL_ERR_UNSUPPORTED, "coll/gpu was built without UCX");
#else
    if (!h->prepared) return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hier: run before prepare");
    DeviceGuard g(h->device);
    gpucoll_status_t st = order_after_default_stream(*h);
    if (st == GPUCOLL_SUCCESS) {
        switch (a->kind) {
        case GPUCOLL_COLL_ALLREDUCE: st = run_allreduce(*h, *a); break;
        case GPUCOLL_COLL_BCAST: st = run_bcast(*h, *a); break;
        case GPUCOLL_COLL_ALLGATHER: st = run_allgather(*h, *a); break;
        case GPUCOLL_COLL_REDUCE_SCATTER_BLOCK: st = run_reduce_scatter_block(*h, *a); break;
        case GPUCOLL_COLL_REDUCE: st = run_reduce(*h, *a); break;
        default: st = gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hier: collective %d", (int)a->kind); break;
        }
    }
    if (st != GPUCOLL_SUCCESS) {
        h->broken = true; // peers may be mid-collective: never use these groups again
        return st;
    }
    if (h->runs++ == 0 && config().verbose >= 10) {
        char tls[256] = "";
        if (h->group) gpucoll_ucx_transports(h->group, tls, sizeof tls);
        fprintf(stderr, "coll:gpu: hier: first hierarchical collective done on GPU %d (%d nodes x %d ranks); UCX "
                        "transports in use: %s\n",
                h->device, h->layout.nnodes, h->layout.local_size, tls[0] ? tls : "none reported");
    }
    return GPUCOLL_SUCCESS;
#endif
}

extern "C" gpucoll_status_t gpucoll_hier_run(gpucoll_hier_t *h, const gpucoll_coll_args_t *a)
{
    return no_throw([&] { return gpucoll_hier_run_body(h, a); });
}
