/* Allgather: ring; every block travels n-1 hops, each rank sends (n-1)/n of
 * the result. */
#include "schedule_util.h"

namespace gpucoll_ucx {

gpucoll_status_t schedule_allgather(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype)
{
    const uint32_t seq = g.next_collective_seq();
    gpucoll_status_t st = check_dtype(dtype, "allgather");
    if (st != GPUCOLL_SUCCESS || count == 0) return st;
    if (!recvbuf) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx allgather: NULL recvbuf");
    Collective c{g, seq, dtype, gpucoll_dtype_size(dtype), GPUCOLL_OP_NONE, nullptr};
    char *work = static_cast<char *>(recvbuf);
    const size_t block_bytes = count * c.esize;
    char *own = work + size_t(g.rank()) * block_bytes;
    if (sendbuf != GPUCOLL_UCX_IN_PLACE && sendbuf != own) {
        st = g.local_copy(own, sendbuf, block_bytes);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    if (g.size() == 1) return GPUCOLL_SUCCESS;
    return ring_allgather(c, work, Blocks{count * size_t(g.size()), g.size()}, 0, 0);
}

} // namespace gpucoll_ucx
