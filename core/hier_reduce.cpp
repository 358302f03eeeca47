// Hierarchical reduce and reduce_scatter_block on device buffers.
#include "hier.hpp"

using namespace gpucoll::hier;

// Reduce to root R = (node nr, local index ir):
//   1. node-local reduce to local index ir (the root itself on its node, a
//      device temporary on the others);
//   2. UCX reduce of those partial results among the ranks with local index
//      ir, to node nr (binomial tree / pipelined chain).
// Only one rank per node uses the network; a reduce-scatter / per-shard
// reduce / gather scheme would use all L NICs for large vectors (not done).
gpucoll_status_t gpucoll::hier::run_reduce(gpucoll_hier &h, const gpucoll_coll_args_t &a)
{
    const int L = h.layout.local_size;
    const int nr = h.node_of[(size_t)a.root], ir = h.local_of[(size_t)a.root];
    const bool is_root = h.layout.node == nr && h.layout.local_rank == ir;
    if (L == 1)
        return gpucoll_ucx_reduce(h.group, a.sbuf ? a.sbuf : GPUCOLL_UCX_IN_PLACE, is_root ? a.rbuf : nullptr, a.count,
                                  a.dtype, a.op, nr, gpu_reducer());
    void *partial = is_root ? a.rbuf : (h.layout.local_rank == ir ? h.tmp[0].ptr : nullptr);
    gpucoll_status_t st = team_step(h, GPUCOLL_COLL_REDUCE, a.sbuf, partial, a.count, a.dtype, a.op, ir);
    if (st != GPUCOLL_SUCCESS || h.layout.local_rank != ir) return st;
    return gpucoll_ucx_reduce(h.group, is_root ? GPUCOLL_UCX_IN_PLACE : partial, is_root ? a.rbuf : nullptr, a.count,
                              a.dtype, a.op, nr, gpu_reducer());
}

// Reduce_scatter_block (rank r receives block r of `count` elements):
//   1. permute the input into (local index j, node n) order in tmp[1]: block
//      (n, j) -- the one for rank rank_of[n*L + j] -- at (j*N + n)*count;
//   2. node-local reduce-scatter of N*count elements per rank: local rank i
//      gets, reduced over its node, the blocks of local index i of every
//      node, in node order (tmp[0]);
//   3. UCX ring reduce-scatter among the ranks with local index i: node n
//      keeps block n, i.e. its own, reduced over all ranks, into recvbuf.
// Each NIC carries (N-1)/N of N*count elements, as a flat ring would per rank.
gpucoll_status_t gpucoll::hier::run_reduce_scatter_block(gpucoll_hier &h, const gpucoll_coll_args_t &a)
{
    const int L = h.layout.local_size, N = h.layout.nnodes;
    const size_t elt = gpucoll_dtype_size(a.dtype), block = a.count * elt;
    if (L == 1) // node n is rank n: the UCX group is the communicator
        return gpucoll_ucx_reduce_scatter(h.group, a.sbuf ? a.sbuf : GPUCOLL_UCX_IN_PLACE, a.rbuf, a.count, a.dtype,
                                          a.op, gpu_reducer());
    const char *in = static_cast<const char *>(a.sbuf ? a.sbuf : a.rbuf);
    char *perm = h.tmp[1].ptr, *mine = h.tmp[0].ptr;
    gpucoll_status_t st = GPUCOLL_SUCCESS;
    for (int j = 0; j < L && st == GPUCOLL_SUCCESS; j++)
        for (int n = 0; n < N && st == GPUCOLL_SUCCESS; n++)
            st = copy_async(h, perm + ((size_t)j * N + n) * block, in + (size_t)h.rank_of[(size_t)n * L + j] * block,
                            block);
    if (st == GPUCOLL_SUCCESS) st = sync_copies(h);
    if (st == GPUCOLL_SUCCESS)
        st = team_step(h, GPUCOLL_COLL_REDUCE_SCATTER_BLOCK, perm, mine, (size_t)N * a.count, a.dtype, a.op, 0);
    if (st == GPUCOLL_SUCCESS)
        st = gpucoll_ucx_reduce_scatter(h.group, mine, a.rbuf, a.count, a.dtype, a.op, gpu_reducer());
    return st;
}
