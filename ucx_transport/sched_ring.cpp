/* The two ring phases that allreduce, allgather and reduce_scatter share,
 * and the argument checks of all schedules. */
#include "schedule_util.h"

namespace gpucoll_ucx {

gpucoll_status_t ring_reduce_scatter(Collective &c, char *work, const BufferKind &work_kind, const Blocks &blocks,
                                     int shift, char *slots)
{
    const int n = c.size(), r = c.rank();
    const int left = mod(r - 1, n), right = mod(r + 1, n);
    const int depth = c.g.depth();
    const size_t chunk = c.g.chunk_bytes();
    for (int s = 0; s < n - 1; ++s) {
        const int send_block = mod(r - s + shift, n), recv_block = mod(r - s - 1 + shift, n);
        TransferScope scope(c.g);
        Transfer *t = nullptr;
        gpucoll_status_t st = GPUCOLL_SUCCESS;
        /* Both sides skip empty blocks: they compute the same sizes. */
        char *send_ptr = work + blocks.offset(send_block) * c.esize;
        if (blocks.size(send_block) > 0)
            st = scope.hold(c.send(right, send_ptr, blocks.size(send_block), uint32_t(s), &t), &t);
        if (st != GPUCOLL_SUCCESS) return st;
        char *target = work + blocks.offset(recv_block) * c.esize;
        /* Segment j is reduced while segments j+1.. are still arriving. */
        st = receive_segments(
            c, scope, left, uint32_t(s), blocks.size(recv_block), depth, depth,
            [&](size_t j) { return slots + (j % size_t(depth)) * chunk; },
            [&](size_t, size_t offset, size_t len, char *data, Transfer **) {
                return c.reduce(work_kind, target + offset * c.esize, data, len);
            });
        if (st == GPUCOLL_SUCCESS) st = scope.wait_all();
        if (st != GPUCOLL_SUCCESS) return st;
    }
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t ring_allgather(Collective &c, char *work, const Blocks &blocks, int own, uint32_t first_step)
{
    const int n = c.size(), r = c.rank();
    const int left = mod(r - 1, n), right = mod(r + 1, n);
    for (int s = 0; s < n - 1; ++s) {
        const int send_block = mod(r + own - s, n), recv_block = mod(r + own - s - 1, n);
        TransferScope scope(c.g);
        const uint32_t step = first_step + uint32_t(s);
        char *send_ptr = work + blocks.offset(send_block) * c.esize;
        char *recv_ptr = work + blocks.offset(recv_block) * c.esize;
        Transfer *ts = nullptr, *tr = nullptr;
        gpucoll_status_t st = GPUCOLL_SUCCESS;
        if (blocks.size(recv_block) > 0)
            st = scope.hold(c.recv(left, recv_ptr, blocks.size(recv_block), step, &tr), &tr);
        if (st == GPUCOLL_SUCCESS && blocks.size(send_block) > 0)
            st = scope.hold(c.send(right, send_ptr, blocks.size(send_block), step, &ts), &ts);
        if (st == GPUCOLL_SUCCESS) st = scope.wait_all();
        if (st != GPUCOLL_SUCCESS) return st;
    }
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t check_dtype(gpucoll_dtype_t dtype, const char *who)
{
    if (gpucoll_dtype_size(dtype) == 0)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx %s: unknown dtype %d", who, int(dtype));
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t check_reduction(gpucoll_dtype_t dtype, gpucoll_op_t op, const char *who)
{
    gpucoll_status_t st = check_dtype(dtype, who);
    if (st != GPUCOLL_SUCCESS) return st;
    if (!gpucoll_op_valid(op, dtype))
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx %s: %s is not defined on %s", who, gpucoll_op_name(op),
                            gpucoll_dtype_name(dtype));
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t check_root(const Group &g, int root, const char *who)
{
    if (root < 0 || root >= g.size())
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "ucx %s: root %d out of range (group of %d)", who, root, g.size());
    return GPUCOLL_SUCCESS;
}

} // namespace gpucoll_ucx
