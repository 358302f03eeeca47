/* Allreduce: ring reduce-scatter then ring allgather, on recvbuf in place.
 * Bandwidth-optimal (each rank sends 2(n-1)/n of the vector), and the
 * reduce-scatter reduces segment j while segment j+1 is on the wire. */
#include "schedule_util.h"

namespace gpucoll_ucx {

gpucoll_status_t schedule_allreduce(Group &g, const void *sendbuf, void *recvbuf, size_t count, gpucoll_dtype_t dtype,
                                    gpucoll_op_t op, const gpucoll_ucx_reducer_t *reducer)
{
    /* Every rank takes a sequence number for every call, even an empty one,
     * so the counters never drift apart. */
    const uint32_t seq = g.next_collective_seq();
    gpucoll_status_t st = check_reduction(dtype, op, "allreduce");
    if (st != GPUCOLL_SUCCESS || count == 0) return st;
    if (!recvbuf) return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx allreduce: NULL recvbuf");
    Collective c{g, seq, dtype, gpucoll_dtype_size(dtype), op, reducer};
    char *work = static_cast<char *>(recvbuf);
    if (!is_in_place(sendbuf, recvbuf)) {
        st = g.local_copy(work, sendbuf, count * c.esize);
        if (st != GPUCOLL_SUCCESS) return st;
    }
    if (g.size() == 1) return GPUCOLL_SUCCESS;

    const BufferKind kind = g.classify(work);
    char *slots = nullptr;
    st = g.scratch(kind, size_t(g.depth()) * g.chunk_bytes(), &slots);
    if (st != GPUCOLL_SUCCESS) return st;
    const Blocks blocks{count, g.size()};
    st = ring_reduce_scatter(c, work, kind, blocks, 0, slots);
    if (st != GPUCOLL_SUCCESS) return st;
    /* Rank r now holds reduced block r + 1. */
    return ring_allgather(c, work, blocks, 1, uint32_t(g.size() - 1));
}

} // namespace gpucoll_ucx
