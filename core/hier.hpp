// Internals of the hierarchical path (core/hier*.cpp): the object behind
// gpucoll_hier_t and the helpers the per-collective files share.
#pragma once

#include <cstddef>
#include <vector>

#include "device_guard.hpp"
#include "gpu_port.h"
#include "gpucoll_core.h"
#if GPUCOLL_HAVE_UCX
#include "gpucoll_ucx.h"
#endif

namespace gpucoll {
namespace hier {

using gpucoll::DeviceGuard;

// A grow-only device temporary, cached for the life of the object.
struct DevBuf {
    char *ptr = nullptr;
    size_t bytes = 0;
    int device = -1;
    bool reserve(size_t want, int dev); // allocates on `dev` (current); false on failure
    void release();
};

} // namespace hier
} // namespace gpucoll

struct gpucoll_hier {
    gpucoll_hier_layout_t layout{};
    std::vector<int> rank_of;        // [node * L + local] -> communicator rank
    std::vector<int> node_of, local_of; // communicator rank -> node, local index
    gpucoll_team_t *team = nullptr;  // node-local, NULL when L == 1
#if GPUCOLL_HAVE_UCX
    gpucoll_ucx_group_t *group = nullptr; // the ranks with my local index, ordered by node
#endif
    bool prepared = false, disabled = false, broken = false;
    int device = -1;                 // GPU of the buffers, fixed at prepare
    gpuStream_t stream = nullptr;    // blocking stream: copies, and ordering after the default stream
    gpuEvent_t event = nullptr;
    gpucoll::hier::DevBuf tmp[2];    // [0]: shards / per-node blocks; [1]: permuted blocks
    gpucoll::hier::DevBuf probe;     // one element for the team's set-up call
    unsigned long long runs = 0;
};

namespace gpucoll {
namespace hier {

// Device bytes a collective needs in tmp[0] and tmp[1] on this rank.
void temp_bytes(const gpucoll_hier &h, const gpucoll_coll_args_t &a, size_t out[2]);

// One node-local team collective (skipped when L == 1 or count == 0). The
// ranks agreed beforehand, so UNSUPPORTED here is an internal error.
gpucoll_status_t team_step(gpucoll_hier &h, gpucoll_coll_kind_t kind, const void *sbuf, void *rbuf, size_t count,
                           gpucoll_dtype_t dtype, gpucoll_op_t op, int root);
// Waits for work queued before the call on the legacy default stream and on
// blocking streams (the stream rule of README.md), before UCX reads buffers.
gpucoll_status_t order_after_default_stream(gpucoll_hier &h);
// Asynchronous device copies on h.stream; sync_copies waits for them.
gpucoll_status_t copy_async(gpucoll_hier &h, void *dst, const void *src, size_t bytes);
gpucoll_status_t sync_copies(gpucoll_hier &h);

#if GPUCOLL_HAVE_UCX
// Reduces on the GPU (gpucoll_local_reduce) for the UCX schedules.
const gpucoll_ucx_reducer_t *gpu_reducer();
gpucoll_status_t run_allreduce(gpucoll_hier &h, const gpucoll_coll_args_t &a);
gpucoll_status_t run_bcast(gpucoll_hier &h, const gpucoll_coll_args_t &a);
gpucoll_status_t run_allgather(gpucoll_hier &h, const gpucoll_coll_args_t &a);
gpucoll_status_t run_reduce_scatter_block(gpucoll_hier &h, const gpucoll_coll_args_t &a);
gpucoll_status_t run_reduce(gpucoll_hier &h, const gpucoll_coll_args_t &a);
#endif

} // namespace hier
} // namespace gpucoll
