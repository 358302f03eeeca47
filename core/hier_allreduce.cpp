// Hierarchical allreduce on device buffers (N nodes x L ranks):
//   1. node-local reduce-scatter (peer kernels) of the first shard*L elements:
//      local rank i gets shard i, reduced over its node, in a device temporary;
//   2. UCX ring allreduce of shard i among the ranks with local index i, one
//      per node: every GPU of a node drives its own slice (its own NIC) at once;
//   3. node-local allgather of the shards into recvbuf.
// The last count % L elements (fewer than L) are too few to shard: a local
// allreduce and a UCX allreduce of just those.
// L == 1: one UCX allreduce on the user's buffers.
#include "hier.hpp"

using namespace gpucoll::hier;

gpucoll_status_t gpucoll::hier::run_allreduce(gpucoll_hier &h, const gpucoll_coll_args_t &a)
{
    const size_t elt = gpucoll_dtype_size(a.dtype);
    const int L = h.layout.local_size;
    if (L == 1)
        return gpucoll_ucx_allreduce(h.group, a.sbuf ? a.sbuf : GPUCOLL_UCX_IN_PLACE, a.rbuf, a.count, a.dtype, a.op,
                                     gpu_reducer());
    size_t shard, tail;
    gpucoll_hier_split(a.count, L, &shard, &tail);
    const char *in = static_cast<const char *>(a.sbuf ? a.sbuf : a.rbuf);
    char *out = static_cast<char *>(a.rbuf);
    gpucoll_status_t st = GPUCOLL_SUCCESS;
    if (shard > 0) {
        char *mine = h.tmp[0].ptr;
        st = team_step(h, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, in, mine, shard, a.dtype, a.op, 0);
        if (st == GPUCOLL_SUCCESS)
            st = gpucoll_ucx_allreduce(h.group, GPUCOLL_UCX_IN_PLACE, mine, shard, a.dtype, a.op, gpu_reducer());
        // Phase 1 consumed all of the input, so recvbuf may be overwritten even in place.
        if (st == GPUCOLL_SUCCESS)
            st = team_step(h, GPUCOLL_COLL_ALLGATHER, mine, out, shard * elt, GPUCOLL_UINT8, GPUCOLL_OP_NONE, 0);
    }
    if (st == GPUCOLL_SUCCESS && tail > 0) {
        const size_t off = shard * (size_t)L * elt;
        st = team_step(h, GPUCOLL_COLL_ALLREDUCE, a.sbuf ? in + off : nullptr, out + off, tail, a.dtype, a.op, 0);
        if (st == GPUCOLL_SUCCESS)
            st = gpucoll_ucx_allreduce(h.group, GPUCOLL_UCX_IN_PLACE, out + off, tail, a.dtype, a.op, gpu_reducer());
    }
    return st;
}
