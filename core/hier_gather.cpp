// Hierarchical bcast and allgather on device buffers (bytes: the glue passes
// data movement as GPUCOLL_UINT8).
#include "hier.hpp"

using namespace gpucoll::hier;

// Bcast from root R = (node nr, local index ir):
//   1. UCX bcast among the ranks with local index ir, from node nr (binomial
//      tree up to one chunk, pipelined chain above);
//   2. node-local bcast from local index ir.
// One NIC per node carries the message; splitting it into L slices, one per
// local index, then a node-local allgather would use all of them (not done).
gpucoll_status_t gpucoll::hier::run_bcast(gpucoll_hier &h, const gpucoll_coll_args_t &a)
{
    const int nr = h.node_of[(size_t)a.root], ir = h.local_of[(size_t)a.root];
    gpucoll_status_t st = GPUCOLL_SUCCESS;
    if (h.layout.local_rank == ir) st = gpucoll_ucx_bcast(h.group, a.rbuf, a.count, a.dtype, nr);
    if (st == GPUCOLL_SUCCESS) st = team_step(h, GPUCOLL_COLL_BCAST, nullptr, a.rbuf, a.count, a.dtype, a.op, ir);
    return st;
}

// Allgather (recvbuf: block r of rank r, `count` elements each):
//   1. UCX ring allgather of this rank's block among the ranks with local
//      index i: tmp[0] holds block (n, i) of every node n, in node order;
//   2. node-local allgather of those N blocks: tmp[1] holds block (n, j) at
//      (j*N + n)*count;
//   3. copy every block to its place in recvbuf, rank_of[n*L + j]*count.
// Each NIC carries (N-1) blocks; NVLink carries the rest.
gpucoll_status_t gpucoll::hier::run_allgather(gpucoll_hier &h, const gpucoll_coll_args_t &a)
{
    const int L = h.layout.local_size, N = h.layout.nnodes;
    const size_t elt = gpucoll_dtype_size(a.dtype), block = a.count * elt;
    if (L == 1) // node n is rank n
        return gpucoll_ucx_allgather(h.group, a.sbuf ? a.sbuf : GPUCOLL_UCX_IN_PLACE, a.rbuf, a.count, a.dtype);
    char *out = static_cast<char *>(a.rbuf), *mine = h.tmp[0].ptr, *all = h.tmp[1].ptr;
    const int me = h.rank_of[(size_t)h.layout.node * L + h.layout.local_rank];
    const void *own = a.sbuf ? a.sbuf : out + (size_t)me * block;
    gpucoll_status_t st = gpucoll_ucx_allgather(h.group, own, mine, a.count, a.dtype);
    if (st == GPUCOLL_SUCCESS)
        st = team_step(h, GPUCOLL_COLL_ALLGATHER, mine, all, (size_t)N * a.count, a.dtype, a.op, 0);
    for (int j = 0; j < L && st == GPUCOLL_SUCCESS; j++)
        for (int n = 0; n < N && st == GPUCOLL_SUCCESS; n++)
            st = copy_async(h, out + (size_t)h.rank_of[(size_t)n * L + j] * block, all + ((size_t)j * N + n) * block,
                            block);
    if (st == GPUCOLL_SUCCESS) st = sync_copies(h);
    return st;
}
